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
    // A full checkpoint of the same state holds every row; the lagged ones left out the
    // 1-PDP archive (50 rows rewritten every 50 steps, far less than a half ring of log).
    let per_lagged = st.checkpoint_bytes / st.checkpoints;
    let mut store = store;
    let full = store.checkpoint().unwrap();
    assert!(
        per_lagged * 10 < full * 9,
        "lagged {per_lagged} bytes vs full {full} bytes"
    );
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
