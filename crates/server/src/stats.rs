//! STATS's lines (`Key: value`): rrdcached's counters, then ringlet's own (write load,
//! records, memory), then those of the listeners beside rrdcached's. The rrdcached command
//! and the web page's Disk panel both show them.

use crate::daemon::Daemon;
use std::sync::atomic::Ordering;

/// STATS's lines, `Key: value` (the web page's Disk panel reads them too).
pub fn lines(d: &Daemon) -> Vec<String> {
    let inner = d.lock();
    let s = &d.stats;
    let nodes = inner.series_count() as u64;
    let depth = if nodes == 0 {
        0
    } else {
        64 - nodes.leading_zeros() as u64
    };
    let queue = d.pending_series(&inner).len();
    let lines = [
        format!("QueueLength: {queue}"),
        format!(
            "UpdatesReceived: {}",
            s.updates_received.load(Ordering::Relaxed)
        ),
        format!(
            "FlushesReceived: {}",
            s.flushes_received.load(Ordering::Relaxed)
        ),
        format!(
            "UpdatesWritten: {}",
            s.updates_written.load(Ordering::Relaxed)
        ),
        format!("DataSetsWritten: {}", inner.store_stats().samples_committed),
        format!("TreeNodesNumber: {nodes}"),
        format!("TreeDepth: {depth}"),
        format!(
            "JournalBytes: {}",
            inner.store_stats().log_bytes
                + inner.store_stats().checkpoint_bytes
                + inner.store_stats().spill_bytes
        ),
        format!("JournalRotate: {}", inner.store_stats().checkpoints),
    ];
    // ringlet's own, after rrdcached's (librrd ignores keys it does not know).
    let load = crate::iostats::WriteLoad {
        disk_bytes: crate::iostats::disk_bytes_written(),
        at_open: d.disk_bytes_at_open,
        fsyncs: d.syncs.load(Ordering::Relaxed),
        commits: inner.store_stats().commits,
        samples: inner.store_stats().samples_committed,
        uptime_secs: d.started.elapsed().as_secs(),
        apply_errors: s.apply_errors.load(Ordering::Relaxed),
    };
    let mut lines = lines.to_vec();
    lines.extend(load.lines());
    let (ring, since) = inner.log_fill();
    lines.push(format!("LogRingBytes: {ring}"));
    lines.push(format!("LogSinceCheckpoint: {since}"));
    lines.extend(record_lines(inner.store_stats()));
    let (heap, damaged) = inner.heap_and_damage();
    lines.push(format!("ArchiveHeapBytes: {heap}"));
    lines.push(format!(
        "ResidentBytes: {}",
        crate::iostats::resident_bytes()
    ));
    lines.push(format!("DamagedChunks: {damaged}"));
    // What the listeners beside rrdcached's (carbon) took, refused and dropped.
    lines.extend(d.more_stats());
    lines
}

/// Where the log records' bytes went, per sample committed (docs/PROTOCOL.md, STATS): the
/// series index of each commit's block, the samples' times and values, creates and removes,
/// record framing and the padding to whole pages; then checkpoints.
fn record_lines(st: &engine::StoreStats) -> Vec<String> {
    let c = &st.record_cost;
    let per = |bits: u64| {
        if st.samples_committed == 0 {
            "0.000".to_string()
        } else {
            format!("{:.3}", bits as f64 / 8.0 / st.samples_committed as f64)
        }
    };
    vec![
        format!("RecordBytes: {}", c.total() / 8),
        format!("RecordBytesPerSample: {}", per(c.total())),
        format!("RecordSeriesBytesPerSample: {}", per(c.series)),
        format!("RecordTimeBytesPerSample: {}", per(c.times)),
        format!("RecordValueBytesPerSample: {}", per(c.values)),
        format!("RecordEntryBytesPerSample: {}", per(c.entries)),
        format!("RecordFramingBytesPerSample: {}", per(c.framing)),
        format!("RecordPaddingBytesPerSample: {}", per(c.padding)),
        format!("CheckpointBytesPerSample: {}", per(st.checkpoint_bytes * 8)),
        format!("SpillBytesPerSample: {}", per(st.spill_bytes * 8)),
        format!("Spills: {}", st.spills),
    ]
}
