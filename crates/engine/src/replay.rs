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
use codec::sample::for_each_parsed_in_span;
use std::path::Path;

/// One valid record: its file offset (for error reports) and payload.
pub struct Record {
    pub file_offset: u64,
    pub seq: u64,
    /// Every codec restarts from its RRD before this record, though it may not say so: the
    /// first record after a newer checkpoint that was lost, written before the Reseed mark
    /// (recovery's `LostNewer`).
    pub reseed: bool,
    pub payload: Vec<u8>,
}

/// Samples applied and refused.
#[derive(Debug, Default, Clone, Copy)]
pub struct Counts {
    pub applied: u64,
    pub refused: u64,
    /// Pieces (a series' samples in one record) of every series in the records replayed,
    /// each record counting as [`crate::RECORD_PIECES`] more: what a reader of one series
    /// decodes its way past.
    pub pieces: u64,
}

fn corrupt(file: &Path, offset: u64, what: String) -> Error {
    Error::Corrupt {
        file: file.to_path_buf(),
        offset,
        what,
    }
}

/// A series' samples to decode: (record index, their bits, sample count); no bits for a
/// Smooth entry (the series' seasonal smoother ran there).
type Chunk<'a> = (usize, Option<BitSpan<'a>>, u64);

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

/// Samples the first run applies, before the replay knows what its samples seal: the archive
/// rows they seal stay on the heap until the spill after the run (recovery's `after_run`),
/// about 1.3 rows a sample for gmetad's archives, 8 bytes a noisy value at most: 8 million
/// keep that under 90 MB.
const FIRST_RUN_SAMPLES: u64 = 8 << 20;

/// Packed bytes of archive rows a later run may seal, from what the runs before it sealed a
/// sample: runs cost time (each one's collecting pass runs alone, each visits its series
/// again with their state out of the caches, and the open chunks a run leaves are packed
/// at its end and again, whole, when a later run seals them). 2,600 gmetad series replaying
/// 25.6 million samples of 5-minute commits took 2.6-2.8 s in 2 runs, 2.8-3.2 s in runs of
/// 8 million samples, 3.7-3.9 s in runs of 2 million (`engine-load open`); 26,000 gmetad
/// series replaying 38 million samples of a full default ring (46 MB sealed) took about
/// 3.3 s in runs of 8 million samples and 2.9 s in one.
const RUN_SEALED: u64 = 64 << 20;

/// Most samples a run applies whatever they seal.
const MAX_RUN_SAMPLES: u64 = 64 << 20;

/// Set each `last_ds` that `pending` holds the decimal of ([`rrd::Rrd::apply_parsed`]).
fn settle_last_ds(rrd: &mut rrd::Rrd, pending: &mut [Option<(i64, u8)>]) {
    for (p, d) in rrd.pdp.iter_mut().zip(pending) {
        if let Some((mantissa, scale)) = d.take() {
            let text = codec::decimal::Decimal { mantissa, scale }.format();
            p.last_ds.clear();
            p.last_ds.push_str(rrd::update::last_ds_prefix(&text));
        }
    }
}

/// Series a replay thread takes from the queue at a time: few enough that the threads end
/// together, enough that the queue's lock is rare.
const JOBS_TAKEN: usize = 16;

/// Apply `records` (in log order) to `reg`: all of a log's records, or its records a batch
/// at a time, batch after batch. Within them, records are taken a run at a time, each run
/// ending with the record that makes its pieces pass [`MAX_PIECES`] (or twice the series,
/// so that the walk over every series a run ends with stays a small part of its work) or its
/// samples pass the run's limit ([`FIRST_RUN_SAMPLES`], then what is expected to seal
/// [`RUN_SEALED`]): applying consecutive runs one after the other is what applying them at
/// once does.
///
/// `sealed` reads the packed bytes of archive rows sealed on the heap
/// ([`rrd::rows::ChunkSource::sealed`]); `after_run` is called after each run (recovery
/// spills what replay sealed there).
pub fn replay(
    reg: &mut Registry,
    records: &[Record],
    log: &Path,
    sealed: &dyn Fn() -> u64,
    after_run: &mut dyn FnMut(&mut Registry),
) -> Result<Counts, Error> {
    let limit = MAX_PIECES.max(2 * reg.len());
    let mut total = Counts::default();
    let mut start = 0;
    let mut max_samples = FIRST_RUN_SAMPLES;
    // Samples applied and bytes they sealed, over the runs so far.
    let (mut seen, mut made) = (0u64, 0u64);
    while start < records.len() {
        let before = sealed();
        let (used, c) = replay_run(reg, &records[start..], limit, max_samples, log)?;
        total.applied += c.applied;
        total.refused += c.refused;
        total.pieces += c.pieces;
        start += used;
        seen = seen.saturating_add(c.applied + c.refused);
        made = made.saturating_add(sealed().saturating_sub(before));
        max_samples = run_samples(seen, made);
        after_run(reg);
    }
    Ok(total)
}

/// Samples the next run may apply when `seen` samples sealed `made` bytes: as many as are
/// expected to seal [`RUN_SEALED`], within [`FIRST_RUN_SAMPLES`] and [`MAX_RUN_SAMPLES`].
fn run_samples(seen: u64, made: u64) -> u64 {
    let expected = (u128::from(RUN_SEALED) * u128::from(seen) / u128::from(made.max(1)))
        .min(u128::from(MAX_RUN_SAMPLES)) as u64;
    expected.max(FIRST_RUN_SAMPLES)
}

/// Apply the first records of `records`, up to the one that makes the pieces collected pass
/// `limit` or the samples `max_samples`; returns how many records that was, and the counts.
fn replay_run(
    reg: &mut Registry,
    records: &[Record],
    limit: usize,
    max_samples: u64,
    log: &Path,
) -> Result<(usize, Counts), Error> {
    let mut work: crate::ids::IdMap<Vec<Chunk<'_>>> = Default::default();
    let mut reseeds = Vec::new();
    let (mut pieces, mut samples) = (0usize, 0u64);
    // What a reader of one series decodes its way past: every series' pieces, and each
    // record as crate::RECORD_PIECES more, its bytes as one every crate::PIECE_BYTES, and
    // crate::SAMPLE_PIECES for each sample of its series with the most.
    let mut read_work = 0u64;
    let mut used = 0;
    for (i, rec) in records.iter().enumerate() {
        if pieces >= limit || samples >= max_samples {
            break;
        }
        used = i + 1;
        let at =
            |what: String| corrupt(log, rec.file_offset, format!("record {}: {what}", rec.seq));
        let entries = decode_record(&rec.payload).map_err(|e| at(e.to_string()))?;
        read_work += crate::record_pieces(rec.payload.len());
        // The most samples one series has in the record, every series counted.
        let mut most = 0u64;
        if rec.reseed {
            reseeds.push(i);
        }
        for e in entries {
            if let Entry::Samples { count, .. } = e {
                read_work += 1;
                most = most.max(count);
            }
            match e {
                Entry::Create { id, name, image } => {
                    // Every id made so far, also those of series not opened: a block's
                    // series past them are damage (below).
                    reg.next_id = reg.next_id.max(id.saturating_add(1));
                    // Only the images of the series opened are decoded: a record that made
                    // thousands (a migration, a first poll) costs a reader of one series the
                    // bytes, not the archives.
                    if reg.only.as_ref().is_none_or(|o| o.contains(&name)) {
                        let rrd = codec::rrdbin::decode_image(image)
                            .map_err(|e| at(format!("image of {name}: {e}")))?;
                        reg.insert(id, name, rrd);
                    }
                }
                // Opened for a few series: the others' entries are not theirs to check.
                Entry::Remove { id } | Entry::Samples { id, .. } | Entry::Smooth { id }
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
                        .push((i, Some(BitSpan::chunk(chunk)), count));
                    pieces += 1;
                    samples = samples.saturating_add(count);
                }
                Entry::Smooth { id } => {
                    if reg.by_id(id).is_none() {
                        return Err(at(format!("smoothing of unknown series {id}")));
                    }
                    work.entry(id).or_default().push((i, None, 0));
                }
                Entry::Block(b) => {
                    // Opened for a few series: past the last of them, the head alone (the
                    // others' counts and ids; their lengths are not decoded).
                    let last = reg
                        .only
                        .as_ref()
                        .map(|_| reg.iter().map(|(id, _)| id).max());
                    let mut it = b.series();
                    let mut past = false;
                    loop {
                        if past {
                            let rest = it
                                .rest_of_head(reg.next_id)
                                .map_err(|e| at(format!("sample block: {e}")))?;
                            read_work += rest.series;
                            most = most.max(rest.most);
                            if let Some(id) = rest.unknown {
                                return Err(at(format!("samples for unknown series {id}")));
                            }
                            break;
                        }
                        let Some(s) = it.next() else { break };
                        let s = s.map_err(|e| at(format!("sample block: {e}")))?;
                        read_work += 1;
                        most = most.max(s.count);
                        past = last.is_some_and(|l| l.is_none_or(|l| s.id >= l));
                        if reg.by_id(s.id).is_none() {
                            // Ids ascend: a block claiming series past every id ever made
                            // (its count is a varint, up to 2^64) would otherwise be walked
                            // to its end when opened for a few series.
                            if reg.only.is_some() && s.id < reg.next_id {
                                continue;
                            }
                            return Err(at(format!("samples for unknown series {}", s.id)));
                        }
                        work.entry(s.id)
                            .or_default()
                            .push((i, Some(s.span), s.count));
                        pieces += 1;
                        samples = samples.saturating_add(s.count);
                    }
                }
                Entry::Reseed if reseeds.last() != Some(&i) => reseeds.push(i),
                Entry::Reseed => {}
                Entry::BlobCreate { id, .. } => {
                    reg.next_id = reg.next_id.max(id.saturating_add(1));
                    let src = reg.src.clone();
                    reg.blobs
                        .replay(src.as_ref(), &e)
                        .map_err(|why| at(format!("blob: {why}")))?;
                }
                Entry::BlobWrite { .. }
                | Entry::BlobTruncate { .. }
                | Entry::BlobRename { .. }
                | Entry::BlobRemove { .. } => {
                    let src = reg.src.clone();
                    reg.blobs
                        .replay(src.as_ref(), &e)
                        .map_err(|why| at(format!("blob: {why}")))?;
                }
            }
        }
        read_work = read_work.saturating_add(most.saturating_mul(crate::SAMPLE_PIECES));
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
    let mut total = Counts {
        pieces: read_work,
        ..Counts::default()
    };
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
        // The decimals of GAUGE and ABSOLUTE DS are read as numbers and never spelled:
        // `last_ds` is set from the last one applied (`pending`) once the series is done.
        let lazy: Vec<bool> = (rrd.schema.ds.iter())
            .map(|d| rrd::update::text_unneeded(d.kind))
            .collect();
        let mut pending = vec![None; lazy.len()];
        // Checked once: applying keeps the shape (a damaged one refuses every sample).
        let shaped = rrd.check_shape().is_ok();
        // The series' rows are written with their packing deferred (most are sealed before
        // its chunks end), then its open chunks packed as writing packs them.
        let applied = rrd::rows::with_packing_deferred(|| {
            for (i, span, count) in chunks {
                let Some(span) = span else {
                    rrd.smooth();
                    continue;
                };
                if reseeds.get(next).is_some_and(|&r| r <= i) {
                    // The codec is seeded from `last_ds`: spelled first.
                    settle_last_ds(rrd, &mut pending);
                    *codec = codec::sample::SeriesCodec::from_rrd(rrd);
                    next = reseeds.partition_point(|&r| r <= i);
                }
                for_each_parsed_in_span(codec, &span, count, &lazy, |smp, nums| {
                    let applied = if shaped {
                        rrd.apply_parsed_shaped(smp, nums, Some(&mut pending), &mut |_| {})
                    } else {
                        rrd.apply_parsed(smp, nums, Some(&mut pending), &mut |_| {})
                    };
                    match applied {
                        Ok(()) | Err(rrd::ApplyError::Partial(_)) => counts.applied += 1,
                        Err(rrd::ApplyError::Rejected(_)) => counts.refused += 1,
                    }
                    Ok::<(), codec::DecodeError>(())
                })
                .map_err(|e| (i, id, e.to_string()))?;
            }
            Ok(())
        });
        for a in &mut rrd.rra {
            a.rows.pack_staged();
        }
        // A smoothing the replayed samples scheduled belonged to a call that ended before
        // this open: it ran where the log says (a Smooth entry), or not at all.
        if let Some(h) = rrd.hw.as_mut() {
            h.smooth_due = false;
        }
        settle_last_ds(rrd, &mut pending);
        applied?;
        // A reseed after the series' last chunk happened in the writer too: the codec that
        // encodes its next samples is the reseeded one.
        if next < reseeds.len() {
            *codec = codec::sample::SeriesCodec::from_rrd(rrd);
        }
    }
    Ok(counts)
}

#[cfg(test)]
mod tests {
    use super::*;
    use bitio::msb::BitReader;
    use codec::sample::{encode_chunk, for_each_parsed_in, SeriesCodec};
    use rrd::update::Sample;

    fn xorshift(x: u64) -> impl FnMut(u64) -> u64 {
        let mut rng = testkit::Rng::new(x);
        move |n| rng.next_u64() % n
    }

    #[test]
    fn runs_are_sized_by_what_the_samples_before_sealed() {
        // Nothing known yet: the first run's; samples that sealed nothing: the most.
        assert_eq!(run_samples(0, 0), FIRST_RUN_SAMPLES);
        assert_eq!(run_samples(8 << 20, 0), MAX_RUN_SAMPLES);
        // 1.2 bytes a sample (gmetad's archives of noisy decimals): RUN_SEALED's worth.
        let n = run_samples(10_000_000, 12_000_000);
        assert_eq!(n, (RUN_SEALED as f64 / 1.2) as u64);
        assert!(n * 12 / 10 <= RUN_SEALED);
        // 10 bytes a sample (noisy doubles in every row): never fewer than the first run's.
        assert_eq!(run_samples(1_000_000, 10_000_000), FIRST_RUN_SAMPLES);
        // Counts past u64 products do not overflow.
        assert_eq!(run_samples(u64::MAX / 2 + 1, u64::MAX), RUN_SEALED / 2);
        assert_eq!(run_samples(u64::MAX, 1), MAX_RUN_SAMPLES);
    }

    #[test]
    fn unspelled_decimals_end_as_applying_each_sample() {
        // What replay does (decimals of GAUGE and ABSOLUTE read as numbers, never spelled,
        // `last_ds` set from the last one applied, and before a reseed) leaves the RRD and
        // the codec as applying every sample's text one by one does: with unknowns, raw
        // text, decimals too long for a number, repeats, gaps past the heartbeat, samples
        // refused for their time, and COUNTER text that fails part of an update.
        let args: Vec<String> = [
            "x.rrd",
            "-s",
            "15",
            "DS:g:GAUGE:30:U:U",
            "DS:c:COUNTER:30:U:U",
            "DS:a:ABSOLUTE:30:0:1000",
            "RRA:AVERAGE:0.5:1:100",
            "RRA:MAX:0.5:4:50",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        let schema = rrd::create::parse_create(&args, 1_000_000_000)
            .unwrap()
            .schema;
        for seed in 1..40u64 {
            let mut rnd = xorshift(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1);
            let texts = ["U", "1e3", "abc", "123456789012345678", "-0.005", "7"];
            let mut t = 1_000_000_000i64;
            let mut counter = 1000u64;
            let mut samples: Vec<Sample> = Vec::new();
            for _ in 0..400 {
                t += [15, 15, 15, 15, 60, 0, -15, 16][rnd(8) as usize];
                let gauge = |r: u64| match r % 6 {
                    0 => texts[(r / 6 % texts.len() as u64) as usize].to_string(),
                    1 | 2 => format!("{}.{:02}", r % 500, r / 7 % 100),
                    _ => format!("{}", r % 1000),
                };
                counter += rnd(5000);
                let c = match rnd(12) {
                    0 => "U".to_string(),
                    1 => "abc".to_string(),
                    _ => counter.to_string(),
                };
                let values = match (samples.last(), rnd(6)) {
                    (Some(prev), 0) => prev.values.clone(),
                    _ => vec![gauge(rnd(1 << 40)), c, gauge(rnd(1 << 40))],
                };
                samples.push(Sample {
                    time: t,
                    usec: 0,
                    values,
                });
            }
            let mut a = rrd::Rrd::new(schema.clone(), 1_000_000_000);
            let mut b = a.clone();
            let mut enc = SeriesCodec::from_rrd(&a);
            let mut dec = enc.clone();
            let lazy = [true, false, true];
            let mut pending = vec![None; 3];
            for (k, chunk) in samples.chunks(7).enumerate() {
                if k == 5 {
                    // A reseed: the writer's codec from its RRD, replay's from its own.
                    enc = SeriesCodec::from_rrd(&a);
                    settle_last_ds(&mut b, &mut pending);
                    dec = SeriesCodec::from_rrd(&b);
                }
                let bytes = encode_chunk(&mut enc, chunk).unwrap();
                for s in chunk {
                    let _ = a.apply(s, &mut |_| {});
                }
                let mut r = BitReader::new(&bytes);
                for_each_parsed_in(&mut dec, &mut r, chunk.len() as u64, &lazy, |s, nums| {
                    let _ = b.apply_parsed(s, nums, Some(&mut pending), &mut |_| {});
                    Ok::<(), codec::DecodeError>(())
                })
                .unwrap();
                assert_eq!(dec, enc, "seed {seed}, chunk {k}: the codecs");
            }
            settle_last_ds(&mut b, &mut pending);
            // Bit for bit, as rrdtool's file (NaN is not equal to itself).
            let image = |r: &rrd::Rrd| rrd::rrdfile::write(r);
            assert!(image(&a) == image(&b), "seed {seed}: {a:?}\n{b:?}");
            let last = |r: &rrd::Rrd| {
                r.pdp
                    .iter()
                    .map(|p| p.last_ds.to_string())
                    .collect::<Vec<_>>()
            };
            assert_eq!(last(&a), last(&b), "seed {seed}");
        }
    }
}
