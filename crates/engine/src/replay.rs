//! Replaying log records onto the registry, in parallel across series.
//!
//! Entries of different series commute (ids are never reused), so replay runs in two passes.
//! Pass 1 walks the records in order and applies creates and removes, collecting each live
//! series' sample chunks in record order (the chunks of a series removed later are dropped:
//! nothing observable depends on them). Pass 2 decodes and applies every series' chunks with
//! `Rrd::apply`, series spread over the available cores, each series on one thread in order.
//! The result is the same as applying every entry in log order. A Reseed entry (the writer
//! reseeded every codec from its RRD before that record) is honoured per series: before the
//! first chunk at or after it, the series' codec is seeded from its RRD as replayed so far.

use crate::series::{Registry, Series};
use crate::Error;
use codec::block::BitSpan;
use codec::record::{decode_record, Entry};
use codec::sample::for_each_parsed_in;
use std::collections::HashMap;
use std::path::Path;

/// One valid record: its file offset (for error reports) and payload.
pub struct Record {
    pub file_offset: u64,
    pub seq: u64,
    pub payload: Vec<u8>,
}

/// Samples applied and refused.
#[derive(Debug, Default, Clone, Copy)]
pub struct Counts {
    pub applied: u64,
    pub refused: u64,
}

fn corrupt(file: &Path, offset: u64, what: String) -> Error {
    Error::Corrupt {
        file: file.to_path_buf(),
        offset,
        what,
    }
}

/// A series' samples to decode: (record index, their bits, sample count).
type Chunk<'a> = (usize, BitSpan<'a>, u64);

/// One series' replay work: its id, the series, its chunks in log order.
type Job<'a, 'b> = (u64, &'b mut Series, Vec<Chunk<'a>>);

/// Why a job failed: (record index, series id, what).
type JobError = (usize, u64, String);

/// Most (series, record) pieces of samples collected before they are applied: each takes
/// 56 bytes until then (about 70 with its list's room), so a run holds at most about 140 MB.
/// Records of a daemon whose clients FLUSH every second hold a second's worth of many series
/// each, and a ring of them is millions of pieces (found by the two-hour soak: 26,000
/// Ganglia series with a FLUSHALL every second peaked near 900 MB at an open that replayed
/// 80 minutes of such records). Smaller runs cost time: each visits every series it has
/// samples for again, with its state out of the caches, and ends with the threads waiting
/// for each other (3,000 series, 5.76 million pieces: 1.33-1.38 s whole, 1.50 s in runs of
/// 1M, 1.43-1.74 s in runs of 256K; the soak's 26,000 series, a visit each per run for about
/// 40 pieces in runs of 1M, opened in up to twice the time of one run).
const MAX_PIECES: usize = 2 << 20;

/// Most samples a run applies: the archive rows they seal stay on the heap until the spill
/// after the run (recovery's `after_run`), about 1.3 rows a sample for gmetad's archives, 8
/// bytes a noisy value at most: 8 million keep that under 90 MB. Runs cost time (each one's
/// collecting pass runs alone and allocates afresh): 2,600 gmetad series replaying 25.6
/// million samples of 5-minute commits took 2.6-2.8 s in 2 runs, 2.8-3.2 s in runs of 8
/// million samples, 3.7-3.9 s in runs of 2 million (`engine-load open`).
const MAX_RUN_SAMPLES: u64 = 8 << 20;

/// Series a replay thread takes from the queue at a time: few enough that the threads end
/// together, enough that the queue's lock is rare.
const JOBS_TAKEN: usize = 16;

/// Apply `records` (in log order) to `reg`: all of a log's records, or its records a batch
/// at a time, batch after batch. Within them, records are taken a run at a time, each run
/// ending with the record that makes its pieces pass [`MAX_PIECES`] (or twice the series,
/// so that the walk over every series a run ends with stays a small part of its work) or its
/// samples pass [`MAX_RUN_SAMPLES`]:
/// applying consecutive runs one after the other is what applying them at once does.
///
/// `after_run` is called after each run (recovery spills what replay sealed there).
pub fn replay(
    reg: &mut Registry,
    records: &[Record],
    log: &Path,
    after_run: &mut dyn FnMut(&mut Registry),
) -> Result<Counts, Error> {
    let limit = MAX_PIECES.max(2 * reg.len());
    let mut total = Counts::default();
    let mut start = 0;
    while start < records.len() {
        let (used, c) = replay_run(reg, &records[start..], limit, log)?;
        total.applied += c.applied;
        total.refused += c.refused;
        start += used;
        after_run(reg);
    }
    Ok(total)
}

/// Apply the first records of `records`, up to the one that makes the pieces collected pass
/// `limit`; returns how many records that was, and the counts.
fn replay_run(
    reg: &mut Registry,
    records: &[Record],
    limit: usize,
    log: &Path,
) -> Result<(usize, Counts), Error> {
    let mut work: HashMap<u64, Vec<Chunk<'_>>> = HashMap::new();
    let mut reseeds = Vec::new();
    let (mut pieces, mut samples) = (0usize, 0u64);
    let mut used = 0;
    for (i, rec) in records.iter().enumerate() {
        if pieces >= limit || samples >= MAX_RUN_SAMPLES {
            break;
        }
        used = i + 1;
        let at =
            |what: String| corrupt(log, rec.file_offset, format!("record {}: {what}", rec.seq));
        let entries = decode_record(&rec.payload).map_err(|e| at(e.to_string()))?;
        for e in entries {
            match e {
                Entry::Create { id, name, rrd } => {
                    if reg.only.as_ref().is_none_or(|o| o.contains(&name)) {
                        reg.insert(id, name, *rrd);
                    }
                }
                // Opened for a few series: the others' entries are not theirs to check.
                Entry::Remove { id } | Entry::Samples { id, .. }
                    if reg.only.is_some() && reg.by_id(id).is_none() => {}
                Entry::Remove { id } => {
                    if reg.remove(id).is_none() {
                        return Err(at(format!("removal of unknown series {id}")));
                    }
                    work.remove(&id);
                }
                Entry::Samples { id, count, chunk } => {
                    if reg.by_id(id).is_none() {
                        return Err(at(format!("samples for unknown series {id}")));
                    }
                    work.entry(id)
                        .or_default()
                        .push((i, BitSpan::chunk(chunk), count));
                    pieces += 1;
                    samples = samples.saturating_add(count);
                }
                Entry::Block(b) => {
                    for s in b.series() {
                        let s = s.map_err(|e| at(format!("sample block: {e}")))?;
                        if reg.by_id(s.id).is_none() {
                            if reg.only.is_some() {
                                continue;
                            }
                            return Err(at(format!("samples for unknown series {}", s.id)));
                        }
                        work.entry(s.id).or_default().push((i, s.span, s.count));
                        pieces += 1;
                        samples = samples.saturating_add(s.count);
                    }
                }
                Entry::Reseed => reseeds.push(i),
            }
        }
    }
    let reseeded = !reseeds.is_empty();
    let mut jobs: Vec<Job<'_, '_>> = reg
        .iter_mut()
        .filter_map(|(id, s)| match work.remove(&id) {
            Some(c) => Some((id, s, c)),
            None => {
                // Replayed a batch at a time (recovery): a series with no samples after a
                // reseed in this batch ends it reseeded, as the writer's did. (Had it no
                // samples since the checkpoint, its codec is already its RRD's.)
                if reseeded {
                    s.codec = codec::sample::SeriesCodec::from_rrd(&s.rrd);
                }
                None
            }
        })
        .collect();
    let threads = std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(1)
        .min(jobs.len().max(1));
    // Heaviest first, taken a few at a time by whichever thread is free: the samples of a
    // series are not all its cost (a chunk sealed, a counter's text), and buckets filled
    // by samples beforehand left one thread idle for up to a third of a run.
    jobs.sort_by_key(|(_, _, c)| {
        std::cmp::Reverse(c.iter().fold(0u64, |a, x| a.saturating_add(x.2)))
    });
    let results: Vec<Result<Counts, JobError>> = if threads <= 1 {
        // One core, or a few series: here, not on a thread of its own.
        vec![
            std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| apply_jobs(jobs, &reseeds)))
                .unwrap_or_else(|_| Err((0, 0, "replay panicked".into()))),
        ]
    } else {
        let queue = std::sync::Mutex::new(jobs.into_iter());
        let take = || -> Vec<Job<'_, '_>> {
            let mut q = queue.lock().unwrap_or_else(|p| p.into_inner());
            q.by_ref().take(JOBS_TAKEN).collect()
        };
        std::thread::scope(|scope| {
            let handles: Vec<_> = (0..threads)
                .map(|_| {
                    let (reseeds, take) = (&reseeds, &take);
                    scope.spawn(move || {
                        let mut counts = Counts::default();
                        loop {
                            let jobs = take();
                            if jobs.is_empty() {
                                return Ok(counts);
                            }
                            let c = apply_jobs(jobs, reseeds)?;
                            counts.applied += c.applied;
                            counts.refused += c.refused;
                        }
                    })
                })
                .collect();
            handles
                .into_iter()
                .map(|h| {
                    h.join()
                        .unwrap_or_else(|_| Err((0, 0, "replay thread panicked".into())))
                })
                .collect()
        })
    };
    let mut total = Counts::default();
    for r in results {
        match r {
            Ok(c) => {
                total.applied += c.applied;
                total.refused += c.refused;
            }
            Err((i, id, what)) => {
                let (off, seq) = records
                    .get(i)
                    .map(|r| (r.file_offset, r.seq))
                    .unwrap_or((0, 0));
                return Err(corrupt(
                    log,
                    off,
                    format!("record {seq}: series {id}: {what}"),
                ));
            }
        }
    }
    Ok((used, total))
}

/// Decode and apply the chunks of some series; an error names (record index, series, why).
/// `reseeds` are the indexes of records that start with a Reseed entry, ascending.
fn apply_jobs(
    jobs: Vec<(u64, &mut Series, Vec<Chunk<'_>>)>,
    reseeds: &[usize],
) -> Result<Counts, (usize, u64, String)> {
    let mut counts = Counts::default();
    for (id, s, chunks) in jobs {
        let Series { codec, rrd, .. } = s;
        // Index in `reseeds` of the first reseed this series has not passed yet.
        let mut next = 0;
        // The series' rows are written with their packing deferred (most are sealed before
        // its chunks end), then its open chunks packed as writing packs them.
        let applied = rrd::rows::with_packing_deferred(|| {
            for (i, span, count) in chunks {
                if reseeds.get(next).is_some_and(|&r| r <= i) {
                    *codec = codec::sample::SeriesCodec::from_rrd(rrd);
                    next = reseeds.partition_point(|&r| r <= i);
                }
                let mut r = span.reader();
                for_each_parsed_in(codec, &mut r, count, |smp, nums| {
                    match rrd.apply_parsed(smp, nums, &mut |_| {}) {
                        Ok(()) | Err(rrd::ApplyError::Partial(_)) => counts.applied += 1,
                        Err(rrd::ApplyError::Rejected(_)) => counts.refused += 1,
                    }
                    Ok::<(), codec::DecodeError>(())
                })
                .map_err(|e| (i, id, e.to_string()))?;
                if span.exact && !r.at_end() {
                    let what = "its samples end before its bits in the block".to_string();
                    return Err((i, id, what));
                }
            }
            Ok(())
        });
        for a in &mut rrd.rra {
            a.rows.pack_staged();
        }
        applied?;
        // A reseed after the series' last chunk happened in the writer too: the codec that
        // encodes its next samples is the reseeded one.
        if next < reseeds.len() {
            *codec = codec::sample::SeriesCodec::from_rrd(rrd);
        }
    }
    Ok(counts)
}
