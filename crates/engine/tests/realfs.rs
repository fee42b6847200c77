//! The store on the real file system: a workload survives close and reopen bit for bit, the
//! log is created at its full size and zero-filled (not sparse), and it grows only when the
//! series outgrow it, replaced whole by a larger ring.

mod common;

use common::*;
use engine::{files, Options, Store};
use std::os::unix::fs::MetadataExt;

#[test]
fn workload_roundtrips_through_a_real_directory() {
    let dir = TempDir::new("realfs");
    let ring = 64 << 10;
    let mut store = Store::open(&dir.0, small_opts(ring)).unwrap();
    assert!(store.recovery().created);
    let log = files::log(&dir.0);
    let meta = std::fs::metadata(&log).unwrap();
    assert_eq!(meta.len(), 4096 + ring);
    // Every block allocated: the zeros were written, not left as holes.
    assert!(meta.blocks() * 512 >= meta.len(), "log is sparse");
    let mut model = Model::default();
    for op in workload(21, 500) {
        model.apply(&op);
        run_op(&mut store, &op).unwrap();
    }
    let st = store.stats().clone();
    assert!(st.commits > 10 && st.checkpoints > 0, "{st:?}");
    assert!(
        st.log_bytes.is_multiple_of(4096) && st.log_bytes > 0,
        "{st:?}"
    );
    store.close().unwrap();
    assert_eq!(std::fs::metadata(&log).unwrap().len(), 4096 + ring);
    let store = Store::open(&dir.0, small_opts(ring)).unwrap();
    assert!(!store.recovery().created);
    assert!(
        store.recovery().checkpoint_generation > 1,
        "{:?}",
        store.recovery()
    );
    same(&store, &model).unwrap();
}

#[test]
fn an_existing_store_keeps_its_ring_size() {
    let dir = TempDir::new("ringsize");
    Store::open(&dir.0, small_opts(64 << 10))
        .unwrap()
        .close()
        .unwrap();
    let store = Store::open(&dir.0, small_opts(1 << 20)).unwrap();
    drop(store);
    let len = std::fs::metadata(files::log(&dir.0)).unwrap().len();
    assert_eq!(len, 4096 + (64 << 10));
}

#[test]
fn the_ring_grows_with_the_series_and_the_store_reopens_whole() {
    let dir = TempDir::new("ringgrow");
    let opts = Options {
        log_per_series: 16 << 10,
        ..small_opts(64 << 10)
    };
    let mut store = Store::open(&dir.0, opts.clone()).unwrap();
    let mut model = Model::default();
    let mut notices = Vec::new();
    for op in workload_growing(31, 600, 24) {
        model.apply(&op);
        run_op(&mut store, &op).unwrap();
        notices.extend(store.take_notices());
    }
    // 5 series need 80 KiB: 120 KiB -> 128; 9 need 144: 256; 17 need 272: 448 (24: 384).
    assert_eq!(store.log_capacity(), 448 << 10);
    assert_eq!(store.stats().rings_grown, 3, "{:?}", store.stats());
    assert_eq!(notices.len(), 3, "{notices:?}");
    assert!(
        notices[2].contains("grown from 262144 to 458752 bytes for 17 series"),
        "{notices:?}"
    );
    let log = files::log(&dir.0);
    assert_eq!(std::fs::metadata(&log).unwrap().len(), 4096 + (448 << 10));
    assert!(!files::tmp(&log).exists());
    // Killed (no clean close): the reopen replays the grown ring.
    drop(store);
    let store = Store::open(&dir.0, opts).unwrap();
    assert_eq!(store.log_capacity(), 448 << 10);
    assert!(
        store.recovery().records_replayed > 0,
        "{:?}",
        store.recovery()
    );
    same(&store, &model).unwrap();
    drop(store);
    // Without growth asked for, the grown ring keeps its size.
    let store = Store::open(&dir.0, small_opts(64 << 10)).unwrap();
    assert_eq!(store.log_capacity(), 448 << 10);
    same(&store, &model).unwrap();
}

#[test]
fn a_series_handle_updates_until_its_name_is_recreated() {
    let tmp = TempDir::new("handle");
    let mut store = Store::open(&tmp.0, small_opts(1 << 20)).unwrap();
    store.create("a.rrd", make_rrd(0), false).unwrap();
    let old = store.series_id("a.rrd").unwrap();
    let sample = |t: i64| rrd::Sample {
        time: t,
        usec: 0,
        values: vec!["1".to_string(); store_ds(&make_rrd(0))],
    };
    store
        .update_id(old, &sample(START + 10), &mut |_| {})
        .unwrap();
    assert_eq!(store.get("a.rrd").unwrap().last_up, START + 10);
    store.create("a.rrd", make_rrd(0), true).unwrap();
    let new = store.series_id("a.rrd").unwrap();
    assert_ne!(old, new);
    match store.update_id(old, &sample(START + 20), &mut |_| {}) {
        Err(engine::Error::NotFound(_)) => {}
        other => panic!("stale handle: {other:?}"),
    }
    store
        .update_id(new, &sample(START + 20), &mut |_| {})
        .unwrap();
    assert_eq!(store.get("a.rrd").unwrap().last_up, START + 20);
    assert!(store.series_id("b.rrd").is_none());
}

fn store_ds(r: &rrd::Rrd) -> usize {
    r.schema.ds.len()
}

/// Records of one Samples entry a series (stores written before the sample block),
/// records with a version 1 block (before rows) and with a version 2 block replay alike,
/// in one log, with removals and re-creates between.
#[test]
fn records_of_every_layout_replay_bit_for_bit() {
    let dir = TempDir::new("layouts");
    let ring = 8 << 20;
    let mut model = Model::default();
    let ops = workload(47, 800);
    let parts = ops.chunks(ops.len() / 4 + 1).collect::<Vec<_>>();
    for (k, part) in parts.iter().enumerate() {
        let opts = Options {
            sample_entries: k == 0,
            block_version: [0, 0, 1, 2][k.min(3)],
            ..small_opts(ring)
        };
        let mut store = Store::open(&dir.0, opts).unwrap();
        if k > 0 {
            // Everything since the store was made is replayed from the log: no checkpoint.
            assert_eq!(store.recovery().checkpoint_generation, 1);
            assert!(store.recovery().records_replayed > 0);
            same(&store, &model).unwrap();
        }
        for op in part.iter() {
            model.apply(op);
            run_op(&mut store, op).unwrap();
        }
        store.commit().unwrap();
        assert_eq!(store.stats().checkpoints, 0, "{:?}", store.stats());
        // Dropped, not closed: the next open replays every record.
        drop(store);
    }
    let store = Store::open(&dir.0, small_opts(ring)).unwrap();
    assert_eq!(store.recovery().samples_refused, 0);
    same(&store, &model).unwrap();
}
