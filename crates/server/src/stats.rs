//! STATS's lines (`Key: value`): rrdcached's counters, then ringlet's own (write load: the
//! process's disk bytes (`host::proc`), the store's fsyncs (`engine::CountingFs`),
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
    let load = WriteLoad {
        disk_bytes: host::proc::disk_bytes_written(),
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
    lines.push(format!("ResidentBytes: {}", host::proc::resident_bytes()));
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

/// What STATS reports about writing, after rrdcached's keys.
pub struct WriteLoad {
    pub disk_bytes: u64,
    /// `disk_bytes` when the store had been opened (creating a store zero-fills its log
    /// ring): left out of the projections.
    pub at_open: u64,
    pub fsyncs: u64,
    pub commits: u64,
    pub samples: u64,
    pub uptime_secs: u64,
    pub apply_errors: u64,
}

impl WriteLoad {
    /// `Key: value` lines, in this order (docs/PROTOCOL.md).
    pub fn lines(&self) -> Vec<String> {
        let serving = self.disk_bytes.saturating_sub(self.at_open);
        let per_sample = if self.samples == 0 {
            "0.00".to_string()
        } else {
            format!("{:.2}", serving as f64 / self.samples as f64)
        };
        // The rate since start, over a day; the first minute is too short to project from.
        let per_day = if self.uptime_secs < 60 {
            0
        } else {
            (serving as u128 * 86_400 / u128::from(self.uptime_secs)) as u64
        };
        vec![
            format!("DiskBytesWritten: {}", self.disk_bytes),
            format!("Fsyncs: {}", self.fsyncs),
            format!("Commits: {}", self.commits),
            format!("DiskBytesPerSample: {per_sample}"),
            format!("DiskBytesPerDay: {per_day}"),
            format!("UptimeSeconds: {}", self.uptime_secs),
            format!("ApplyErrors: {}", self.apply_errors),
            format!("DiskBytesAtOpen: {}", self.at_open),
        ]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn projections_from_the_counters() {
        let w = WriteLoad {
            disk_bytes: 3_690 + 65_536,
            at_open: 65_536,
            fsyncs: 4,
            commits: 3,
            samples: 1_000,
            uptime_secs: 3_600,
            apply_errors: 0,
        };
        assert_eq!(
            w.lines(),
            [
                "DiskBytesWritten: 69226",
                "Fsyncs: 4",
                "Commits: 3",
                "DiskBytesPerSample: 3.69",
                "DiskBytesPerDay: 88560",
                "UptimeSeconds: 3600",
                "ApplyErrors: 0",
                "DiskBytesAtOpen: 65536",
            ]
        );
        let young = WriteLoad {
            samples: 0,
            uptime_secs: 5,
            ..w
        };
        assert_eq!(young.lines()[3], "DiskBytesPerSample: 0.00");
        assert_eq!(young.lines()[4], "DiskBytesPerDay: 0");
    }
}
