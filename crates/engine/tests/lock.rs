//! One process at a time: a second open of the same directory fails with `Error::Locked`,
//! and the lock is released by close (and by drop).

mod common;

use common::*;
use engine::sim::SimFs;
use engine::{Error, Store};
use std::path::Path;
use std::sync::Arc;

#[test]
fn second_open_of_a_real_directory_is_locked() {
    let dir = TempDir::new("lock");
    let store = Store::open(&dir.0, small_opts(64 << 10)).unwrap();
    match Store::open(&dir.0, small_opts(64 << 10)) {
        Err(Error::Locked(p)) => assert_eq!(p, dir.0),
        Err(e) => panic!("expected Locked, got {e}"),
        Ok(_) => panic!("expected Locked, got a second store"),
    }
    store.close().unwrap();
    let again = Store::open(&dir.0, small_opts(64 << 10)).unwrap();
    drop(again);
    Store::open(&dir.0, small_opts(64 << 10)).unwrap();
}

#[test]
fn second_open_on_the_simulated_fs_is_locked() {
    let fs = Arc::new(SimFs::new());
    let s = Store::open_with(fs.clone(), Path::new("/d"), small_opts(64 << 10)).unwrap();
    assert!(matches!(
        Store::open_with(fs.clone(), Path::new("/d"), small_opts(64 << 10)),
        Err(Error::Locked(_))
    ));
    drop(s);
    assert!(Store::open_with(fs, Path::new("/d"), small_opts(64 << 10)).is_ok());
}
