//! Lagged checkpoints (crates/engine/src/snapshot.rs): replay starts at an older snapshot, so
//! the checkpoint leaves out the archive rows the log rewrites; recovery refuses a log that
//! ends before the checkpoint is whole instead of serving the rows it left out.

mod common;

use common::*;
use engine::{files, Error, Options, Store};
use rrd::{Cf, DsType, Rrd, Sample, Schema};
use std::path::Path;

const RING: u64 = 256 << 10;

fn opts() -> Options {
    small_opts(RING)
}

/// One GAUGE series: a 1-PDP archive of 50 rows (rewritten every 50 updates) and a
/// 10-PDP archive of 400 rows (kept long after the log has wrapped).
fn schema() -> Schema {
    Schema {
        step: 10,
        ds: vec![ds("v", DsType::Gauge)],
        rra: vec![rra(Cf::Average, 1, 50), rra(Cf::Max, 10, 400)],
    }
}

fn sample(t: i64, v: f64) -> Sample {
    Sample {
        time: t,
        usec: 0,
        values: vec![format!("{v:.2}")],
    }
}

/// Feed `series` series for `rounds` steps, committing every 5 steps; returns the store.
fn feed(dir: &Path, series: usize, rounds: i64) -> Store {
    let mut store = Store::open(dir, opts()).unwrap();
    for s in 0..series {
        store
            .create(&format!("s{s}.rrd"), Rrd::new(schema(), START - 10), false)
            .unwrap();
    }
    store.commit().unwrap();
    for r in 0..rounds {
        for s in 0..series {
            let v = 100.0 + ((r * 7 + s as i64 * 13) % 97) as f64 / 4.0;
            store
                .update(
                    &format!("s{s}.rrd"),
                    &sample(START + r * 10, v),
                    &mut |_| {},
                )
                .unwrap();
        }
        if r % 5 == 4 {
            store.commit().unwrap();
        }
    }
    store
}

fn state(store: &Store) -> Vec<(String, Vec<u8>)> {
    store
        .names()
        .into_iter()
        .map(|n| {
            let b = codec::rrdbin::rrd_bytes(store.get(&n).unwrap());
            (n, b)
        })
        .collect()
}

#[test]
fn lagged_checkpoints_leave_out_rewritten_rows_and_recover_exactly() {
    let tmp = TempDir::new("lagged");
    let store = feed(&tmp.0, 40, 3000);
    let st = store.stats().clone();
    assert!(st.checkpoints >= 3, "{st:?}");
    let want = state(&store);
    drop(store); // no close: the last commit is the state to come back
    let store = Store::open(&tmp.0, opts()).unwrap();
    let r = store.recovery().clone();
    assert!(r.checkpoint_complete_lsn > r.checkpoint_lsn, "{r:?}");
    assert!(r.cut.is_none(), "{r:?}");
    assert_eq!(state(&store), want);
    // The image of every row (what a checkpoint of version 2 wrote each time) against what
    // each checkpoint wrote: the 1-PDP archive (50 rows rewritten every 50 steps, far less
    // than a half ring of log) is left out, and the 10-PDP one's sealed chunk is stored once.
    let per_ckpt = st.checkpoint_bytes / st.checkpoints;
    let image: u64 = want.iter().map(|(_, b)| b.len() as u64).sum();
    assert!(
        per_ckpt * 10 < image * 9,
        "{per_ckpt} bytes a checkpoint vs {image} bytes of images"
    );
}

/// Archives of several chunks (rrd::rows::CHUNK_VALUES values each): 1 PDP x 900 rows
/// (rewritten every 900 updates, longer than the half ring a checkpoint comes after) and
/// 10 PDP x 3000 rows (not full after the run).
fn long_schema() -> Schema {
    Schema {
        step: 10,
        ds: vec![ds("v", DsType::Gauge)],
        rra: vec![rra(Cf::Average, 1, 900), rra(Cf::Max, 10, 3000)],
    }
}

#[test]
fn sealed_chunks_are_stored_once_in_segments() {
    let tmp = TempDir::new("segments");
    let opts = || small_opts(64 << 10);
    let mut store = Store::open(&tmp.0, opts()).unwrap();
    let series = 30;
    for s in 0..series {
        store
            .create(
                &format!("s{s}.rrd"),
                Rrd::new(long_schema(), START - 10),
                false,
            )
            .unwrap();
    }
    store.commit().unwrap();
    let mut last = 0;
    let mut per_ckpt = Vec::new();
    for r in 0..12_000i64 {
        for s in 0..series {
            let v = 100.0 + ((r * 7 + s as i64 * 13) % 97) as f64 / 4.0;
            let name = format!("s{s}.rrd");
            store
                .update(&name, &sample(START + r * 10, v), &mut |_| {})
                .unwrap();
        }
        if r % 5 == 4 {
            store.commit().unwrap();
            let st = store.stats();
            if st.checkpoint_bytes > last {
                per_ckpt.push(st.checkpoint_bytes - last);
                last = st.checkpoint_bytes;
            }
        }
    }
    let want = state(&store);
    let image: u64 = want.iter().map(|(_, b)| b.len() as u64).sum();
    assert!(per_ckpt.len() >= 6, "{per_ckpt:?}");
    // Every checkpoint stores the state, the open chunks and what was sealed since the last
    // one: well under the images of every row, which version 2 wrote each time.
    for (i, &n) in per_ckpt.iter().enumerate() {
        assert!(
            n * 2 < image,
            "checkpoint {i}: {n} bytes vs {image} bytes of images"
        );
    }
    // Each sealed chunk is stored once: the segments hold about the packed size of every
    // row written (the images' bytes per known value: about 2 here), not a multiple.
    let known = series as f64 * (900.0 + 1200.0);
    let per_value = image as f64 / known;
    let values = series as f64 * (12_000.0 + 1_200.0);
    let seg = store.stats().segment_bytes as f64;
    assert!(
        seg > 0.0 && seg < values * per_value * 1.3,
        "{seg} segment bytes for {values} values of {per_value:.2} bytes"
    );
    // Segments whose chunks have all been overwritten are removed: the 1-PDP archive's
    // chunks expire after 900 steps, so old segments of its class go.
    let segs = || {
        std::fs::read_dir(&tmp.0)
            .unwrap()
            .filter_map(|e| files::segment_id(&e.unwrap().file_name().to_string_lossy()))
            .count()
    };
    // About 47 segments of the 1-PDP class were written (a chunk seals every 256 steps);
    // live: at most 4 of them (900 rows is 4 chunks) and 5 of the 10-PDP class (1,200 rows);
    // besides them the window of pieces of open chunks, and the older checkpoint's oldest.
    let most = 10 + engine::segments::PIECE_EPOCH + 1;
    assert!((1..=most).contains(&segs()), "{} segments", segs());
    drop(store);
    let store = Store::open(&tmp.0, opts()).unwrap();
    assert!(store.recovery().checkpoint_lsn > 0);
    assert_eq!(state(&store), want);
    // A checkpoint right after open stores nothing new: every sealed chunk came from the
    // segments and is still stored there.
    let mut store = store;
    let n = store.checkpoint().unwrap();
    assert!(n * 3 < image, "{n} bytes vs {image}");
    drop(store);
    assert_eq!(state(&Store::open(&tmp.0, opts()).unwrap()), want);
}

#[test]
fn a_missing_segment_fails_open() {
    let tmp = TempDir::new("segments-missing");
    let mut store = Store::open(&tmp.0, opts()).unwrap();
    store
        .create("a.rrd", Rrd::new(long_schema(), START - 10), false)
        .unwrap();
    for r in 0..2000i64 {
        store
            .update("a.rrd", &sample(START + r * 10, r as f64), &mut |_| {})
            .unwrap();
    }
    store.checkpoint().unwrap();
    drop(store);
    let seg = std::fs::read_dir(&tmp.0)
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| files::segment_id(&p.file_name().unwrap().to_string_lossy()).is_some())
        .expect("a segment");
    std::fs::remove_file(&seg).unwrap();
    match Store::open(&tmp.0, opts()) {
        Err(Error::Corrupt { what, .. }) => assert!(what.contains("seg-"), "{what}"),
        Err(e) => panic!("unexpected error {e}"),
        Ok(_) => panic!("opened without a segment it needs"),
    }
    // A reader of one series opens no segment until it reads from it: the missing one's
    // rows read as unknown, counted, never as other values.
    let one = Options {
        only: Some(vec!["a.rrd".to_string()]),
        ..opts()
    };
    let st = Store::open(&tmp.0, one).unwrap();
    assert_eq!(st.damaged_chunks(), 0, "nothing read yet");
    let rrd = st.get("a.rrd").unwrap();
    let vals: Vec<f64> = rrd.rra.iter().flat_map(|r| r.rows.to_vec()).collect();
    assert!(st.damaged_chunks() > 0);
    assert!(vals
        .iter()
        .all(|v| v.is_nan() || (*v >= 0.0 && *v < 2000.0)));
}

#[test]
fn a_damaged_record_before_the_completion_point_fails_open() {
    let tmp = TempDir::new("lagged-damage");
    let store = feed(&tmp.0, 40, 3000);
    drop(store);
    let r = Store::open(&tmp.0, opts()).unwrap().recovery().clone();
    assert!(r.checkpoint_complete_lsn > r.checkpoint_lsn, "{r:?}");
    // Flip a byte inside the first record after the checkpoint (ring after a 4 KiB
    // superblock): it is durable data the checkpoint relies on.
    let log = files::log(&tmp.0);
    let mut bytes = std::fs::read(&log).unwrap();
    let at = (4096 + r.checkpoint_lsn % RING + 100) as usize;
    bytes[at] ^= 0x40;
    std::fs::write(&log, &bytes).unwrap();
    match Store::open(&tmp.0, opts()) {
        Err(Error::Corrupt { what, .. }) => {
            assert!(what.contains("checkpoint generation"), "{what}")
        }
        Err(e) => panic!("unexpected error {e}"),
        Ok(s) => panic!("opened with a damaged log: {:?}", s.recovery()),
    }
}

#[test]
fn samples_since_checkpoint_count_what_an_open_would_replay() {
    let tmp = TempDir::new("since");
    // 40 series x 3000 steps through a 256 KiB ring: lagged checkpoints come and go.
    let store = feed(&tmp.0, 40, 3000);
    assert!(store.stats().checkpoints >= 3, "{:?}", store.stats());
    let since = store.samples_since_checkpoint();
    // A lagged checkpoint starts at its snapshot: what was committed after it is counted.
    assert!(since > 0 && since < 40 * 3000, "{since}");
    drop(store); // as a crash: the next open replays the log since the checkpoint
    let mut store = Store::open(&tmp.0, opts()).unwrap();
    assert_eq!(store.recovery().samples_replayed, since);
    assert_eq!(store.samples_since_checkpoint(), since);
    store.checkpoint().unwrap();
    assert_eq!(store.samples_since_checkpoint(), 0);
    store
        .update("s0.rrd", &sample(START + 3000 * 10, 1.0), &mut |_| {})
        .unwrap();
    store.commit().unwrap();
    assert_eq!(store.samples_since_checkpoint(), 1);
}

#[test]
fn the_series_created_after_the_checkpoint_are_named_and_the_hook_runs_before_each() {
    use std::sync::atomic::{AtomicU64, Ordering};
    use std::sync::Arc;
    let tmp = TempDir::new("lagged-created");
    let calls = Arc::new(AtomicU64::new(0));
    let c = calls.clone();
    let with_hook = Options {
        before_checkpoint: Some(engine::Hook(Arc::new(move || {
            c.fetch_add(1, Ordering::SeqCst);
            Ok(())
        }))),
        ..opts()
    };
    let mut store = Store::open(&tmp.0, with_hook.clone()).unwrap();
    let mk = |store: &mut Store, name: &str| {
        store
            .create(name, Rrd::new(schema(), START - 10), false)
            .unwrap()
    };
    for i in 0..5 {
        mk(&mut store, &format!("old{i}.rrd"));
    }
    store.checkpoint().unwrap();
    mk(&mut store, "new-b.rrd");
    mk(&mut store, "new-a.rrd");
    store.remove("old1.rrd").unwrap();
    store.commit().unwrap();
    assert_eq!(
        calls.load(Ordering::SeqCst),
        store.stats().checkpoints,
        "once a checkpoint"
    );
    assert!(calls.load(Ordering::SeqCst) >= 1);
    drop(store);
    let store = Store::open(&tmp.0, opts()).unwrap();
    assert_eq!(store.created_since_checkpoint(), ["new-a.rrd", "new-b.rrd"]);
    drop(store);
    // Lagged checkpoints: a series created after the snapshot a checkpoint was taken from
    // is replayed, so it is named too.
    let tmp = TempDir::new("lagged-created2");
    let store = feed(&tmp.0, 3, 3000);
    drop(store);
    let mut store = Store::open(&tmp.0, opts()).unwrap();
    assert!(store.created_since_checkpoint().is_empty());
    mk(&mut store, "late.rrd");
    store.commit().unwrap();
    drop(store);
    let store = Store::open(&tmp.0, opts()).unwrap();
    assert_eq!(store.created_since_checkpoint(), ["late.rrd"]);
}
