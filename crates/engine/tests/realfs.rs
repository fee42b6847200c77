//! The store on the real file system: a workload survives close and reopen bit for bit, the
//! log is created at its full size and zero-filled (not sparse), and it never grows.

mod common;

use common::*;
use engine::{files, Store};
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
