//! After a failed write or fsync (EIO) the store refuses every later write with `PreviousIo`
//! (it never retries an fsync), and a reopen recovers the last durable commit. A full disk
//! (ENOSPC) is different: failed checkpoints are tried again, commits fail only while the
//! ring is full, and the store goes on once there is room.

mod common;

use common::*;
use engine::sim::{Fault, SimFs};
use engine::{Error, Store};
use rrd::Sample;
use std::path::Path;
use std::sync::Arc;

const DIR: &str = "/store";

fn sample(t: i64) -> Sample {
    Sample {
        time: t,
        usec: 0,
        values: vec!["1.50".into()],
    }
}

fn assert_refuses_everything(store: &mut Store) {
    let t = store.get("a").map(|r| r.last_up).unwrap_or(START) + 15;
    assert!(matches!(
        store.update("a", &sample(t), &mut |_| {}),
        Err(Error::PreviousIo)
    ));
    assert!(matches!(store.commit(), Err(Error::PreviousIo)));
    assert!(matches!(
        store.create("b", make_rrd(0), false),
        Err(Error::PreviousIo)
    ));
    assert!(matches!(store.remove("a"), Err(Error::PreviousIo)));
    assert!(matches!(store.checkpoint(), Err(Error::PreviousIo)));
}

fn check_fault(fault_after_open: impl Fn(u64, u64) -> Fault) {
    let fs = SimFs::new();
    let mut store =
        Store::open_with(Arc::new(fs.clone()), Path::new(DIR), small_opts(1 << 20)).unwrap();
    store.create("a", make_rrd(0), false).unwrap();
    store.update("a", &sample(START + 15), &mut |_| {}).unwrap();
    store.commit().unwrap();
    let durable = store.get("a").cloned().unwrap();
    store.update("a", &sample(START + 30), &mut |_| {}).unwrap();
    // Arm the fault for the next sync/write (the commit's).
    fs.set_fault(fault_after_open(fs.syncs(), 0));
    let err = store.commit().unwrap_err();
    assert!(matches!(err, Error::Io(_)), "{err:?}");
    assert_refuses_everything(&mut store);
    assert!(matches!(store.close(), Err(Error::PreviousIo)));
    // Reopen: the failed commit is not served (its fsync failed) unless it reached the disk.
    let store = Store::open_with(
        Arc::new(fs.restart(None)),
        Path::new(DIR),
        small_opts(1 << 20),
    )
    .unwrap();
    let got = store.get("a").unwrap();
    assert_eq!(
        codec::rrdbin::rrd_bytes(got),
        codec::rrdbin::rrd_bytes(&durable)
    );
}

#[test]
fn failed_fsync_makes_every_later_write_fail_with_previous_io() {
    check_fault(|syncs, _| Fault::FailSync(syncs + 1));
}

#[test]
fn failed_write_makes_every_later_write_fail_with_previous_io() {
    // Fail the N-th write for growing N until the failure lands in a commit (the first few
    // writes create the store; open reports those itself).
    for n in 1..=40u64 {
        let fs = SimFs::new();
        fs.set_fault(Fault::FailWrite(n));
        let Ok(mut store) =
            Store::open_with(Arc::new(fs.clone()), Path::new(DIR), small_opts(64 << 10))
        else {
            continue;
        };
        store.create("a", make_rrd(0), false).unwrap();
        store.update("a", &sample(START + 15), &mut |_| {}).unwrap();
        if let Err(e) = store.commit() {
            assert!(matches!(e, Error::Io(_)), "{e:?}");
            assert_refuses_everything(&mut store);
            return;
        }
    }
    panic!("no write failure reached a commit");
}

#[test]
fn failed_checkpoint_sync_makes_the_store_refuse_writes() {
    let fs = SimFs::new();
    let mut store =
        Store::open_with(Arc::new(fs.clone()), Path::new(DIR), small_opts(1 << 20)).unwrap();
    store.create("a", make_rrd(0), false).unwrap();
    store.commit().unwrap();
    fs.set_fault(Fault::FailSync(fs.syncs() + 1));
    assert!(matches!(store.checkpoint(), Err(Error::Io(_))));
    assert_refuses_everything(&mut store);
}

#[test]
fn a_commit_that_panics_half_way_leaves_the_store_refusing_writes() {
    // Issue 18, defect 6: a panic inside Store::commit after it took the pending data
    // dropped that record and left the store writable.
    let fs = SimFs::new();
    let mut store =
        Store::open_with(Arc::new(fs.clone()), Path::new(DIR), small_opts(1 << 20)).unwrap();
    store.create("a", make_rrd(0), false).unwrap();
    store.update("a", &sample(START + 15), &mut |_| {}).unwrap();
    store.commit().unwrap();
    let durable = store.get("a").cloned().unwrap();
    store.update("a", &sample(START + 30), &mut |_| {}).unwrap();
    fs.set_fault(Fault::PanicAtWrite(fs.writes() + 1));
    let hook = std::panic::take_hook();
    std::panic::set_hook(Box::new(|_| {}));
    let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| store.commit()));
    std::panic::set_hook(hook);
    assert!(r.is_err(), "the commit panicked");
    fs.set_fault(Fault::None);
    assert_refuses_everything(&mut store);
    drop(store);
    let store = Store::open_with(
        Arc::new(fs.restart(None)),
        Path::new(DIR),
        small_opts(1 << 20),
    )
    .unwrap();
    assert_eq!(
        codec::rrdbin::rrd_bytes(store.get("a").unwrap()),
        codec::rrdbin::rrd_bytes(&durable)
    );
}

#[test]
fn updates_that_reach_the_size_limit_commit_on_their_own() {
    // The guard against a panic half way (the store's busy flag) must not stop the commit
    // that an update starts when the pending bytes reach their limit.
    let fs = SimFs::new();
    let mut o = small_opts(1 << 20);
    o.max_pending_bytes = 64;
    let mut store = Store::open_with(Arc::new(fs.clone()), Path::new(DIR), o).unwrap();
    store.create("a", make_rrd(0), false).unwrap();
    for k in 1..=200 {
        store
            .update("a", &sample(START + 15 * k), &mut |_| {})
            .unwrap_or_else(|e| panic!("update {k}: {e}"));
    }
    assert!(store.stats().commits >= 2, "{:?}", store.stats());
}

#[test]
fn a_full_disk_fails_checkpoints_then_commits_and_both_go_on_once_there_is_room() {
    // ENOSPC is not EIO: what failed to be written is known not to be there. Checkpoints fail
    // while the ring has room (commits go on); once it is full, commits fail (nothing
    // acknowledged), the store stays writable, and the first commit with room writes the
    // checkpoint: everything committed before and after is there after a crash.
    let fs = SimFs::new();
    let mut store =
        Store::open_with(Arc::new(fs.clone()), Path::new(DIR), small_opts(64 << 10)).unwrap();
    let names: Vec<String> = (0..20).map(|k| format!("s{k}")).collect();
    for n in &names {
        store.create(n, make_rrd(0), false).unwrap();
    }
    store.commit().unwrap();
    fs.set_fault(Fault::NoSpace);
    let mut t = START;
    let mut committed_while_full = 0;
    let mut failed = None;
    for _ in 0..20_000 {
        t += 15;
        for n in &names {
            store.update(n, &sample(t), &mut |_| {}).unwrap();
        }
        match store.commit() {
            Ok(_) => committed_while_full += 1,
            Err(e) => {
                failed = Some(e);
                break;
            }
        }
    }
    let Some(Error::Io(e)) = failed else {
        panic!("no commit failed on the full disk: {failed:?}");
    };
    assert_eq!(e.kind(), std::io::ErrorKind::StorageFull);
    assert!(
        committed_while_full > 0,
        "the ring had room: commits went on"
    );
    let notices = store.take_notices();
    assert!(
        notices
            .iter()
            .any(|n| n.contains("could not write a checkpoint")),
        "{notices:?}"
    );
    assert!(store.must_checkpoint().is_some());
    assert!(!store.refuses_writes());
    // Still full: more values are taken, but no commit succeeds, with or without new ones.
    t += 15;
    store.update("s0", &sample(t), &mut |_| {}).unwrap();
    assert!(store.commit().is_err());
    assert!(store.commit().is_err());
    // Room again: the next commit writes the checkpoint; commits go on.
    fs.set_fault(Fault::None);
    store.commit().unwrap();
    assert!(store.must_checkpoint().is_none());
    for _ in 0..5 {
        t += 15;
        for n in &names {
            store.update(n, &sample(t), &mut |_| {}).unwrap();
        }
        store.commit().unwrap();
    }
    let want: Vec<Vec<u8>> = names
        .iter()
        .map(|n| codec::rrdbin::rrd_bytes(store.get(n).unwrap()))
        .collect();
    drop(store);
    // A crash now: every committed value is there.
    let store = Store::open_with(
        Arc::new(fs.restart(None)),
        Path::new(DIR),
        small_opts(64 << 10),
    )
    .unwrap();
    for (n, w) in names.iter().zip(&want) {
        assert_eq!(&codec::rrdbin::rrd_bytes(store.get(n).unwrap()), w, "{n}");
    }
}
