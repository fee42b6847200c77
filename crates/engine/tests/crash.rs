//! Crash tests on the simulated file system: a seeded workload crashes at every sync in turn;
//! after the restart every committed sample is back, bit for bit, and nothing else is.

mod common;

use common::*;
use engine::sim::{Fault, SimFs};
use engine::{Options, Store, Vfs};
use std::path::Path;
use std::sync::Arc;

const DIR: &str = "/store";

/// Run `ops` on a store over `fs` until an I/O error. Returns (state after the last
/// successful commit, state when the failing call was made).
fn run_until_crash(fs: &SimFs, ops: &[Op], opts: &Options) -> (Model, Model) {
    let mut committed = Model::default();
    let Ok(mut store) = Store::open_with(Arc::new(fs.clone()), Path::new(DIR), opts.clone()) else {
        return (committed.clone(), committed);
    };
    let mut model = Model::default();
    for op in ops {
        model.apply(op);
        match run_op(&mut store, op) {
            Ok(true) => committed = model.clone(),
            Ok(false) => {}
            Err(_) => return (committed, model),
        }
    }
    (committed, model)
}

fn reopen(fs: &SimFs, opts: &Options) -> Store {
    let store = Store::open_with(Arc::new(fs.clone()), Path::new(DIR), opts.clone())
        .unwrap_or_else(|e| panic!("reopen failed: {e}"));
    // Replay is deterministic: every logged sample applies again.
    assert_eq!(
        store.recovery().samples_refused,
        0,
        "{:?}",
        store.recovery()
    );
    store
}

fn crash_at_every_sync(seed: u64, rounds: usize, log_bytes: u64, torn: bool) {
    crash_at_every_sync_on(seed, rounds, log_bytes, torn, 4096)
}

/// A simulated disk whose file system reports `block` as its block size.
fn sim(block: u64) -> SimFs {
    let fs = SimFs::new();
    fs.set_block_size(block);
    fs
}

fn crash_at_every_sync_on(seed: u64, rounds: usize, log_bytes: u64, torn: bool, block: u64) {
    crash_at_every_sync_of(&workload(seed, rounds), seed, log_bytes, torn, block)
}

/// Crash `ops` at every sync in turn (torn writes seeded from `seed`).
fn crash_at_every_sync_of(ops: &[Op], seed: u64, log_bytes: u64, torn: bool, block: u64) {
    let opts = small_opts(log_bytes);
    let clean = sim(block);
    let (all, _) = run_until_crash(&clean, ops, &opts);
    let total = clean.syncs();
    assert!(total > 10, "workload too small: {total} syncs");
    let (mut checked, mut replayed, mut from_later_ckpt, mut from_lagged) = (0, 0, 0, 0);
    let mut from_older = 0;
    for n in 1..=total {
        let fs = sim(block);
        fs.set_fault(Fault::CrashAtSync(n));
        let (committed, in_flight) = run_until_crash(&fs, ops, &opts);
        assert!(fs.crashed(), "sync {n} of {total} never happened");
        let after = fs.restart(torn.then_some(seed ^ n));
        // The disk as the crash left it, for the damaged-checkpoint check below.
        let spare = after.restart(None);
        let store = reopen(&after, &opts);
        let ok = same(&store, &committed);
        if torn {
            // A torn crash may or may not have landed the record in flight, never half of it.
            if let (Err(a), Err(b)) = (&ok, same(&store, &in_flight)) {
                panic!("crash at sync {n}: neither committed ({a}) nor in flight ({b})");
            }
        } else if let Err(e) = ok {
            panic!(
                "crash at sync {n}/{total}: {e}; report {:?}",
                store.recovery()
            );
        }
        replayed += (store.recovery().records_replayed > 0) as u32;
        from_later_ckpt += (store.recovery().checkpoint_generation > 1) as u32;
        let r = store.recovery();
        from_lagged += (r.checkpoint_complete_lsn > r.checkpoint_lsn) as u32;
        if r.checkpoint_generation >= 2 && r.records_replayed > 0 {
            // The same disk with the newest checkpoint damaged: replay from the older one
            // through every record after both gives the same state, or the open is refused
            // (its log was overwritten since); never another state.
            let newest = engine::files::checkpoint(Path::new(DIR), r.checkpoint_generation);
            let mut ck = spare.read_file(&newest).expect("newest checkpoint");
            let mid = ck.len() / 2;
            ck[mid] ^= 0x10;
            spare.write_file(&newest, ck);
            match Store::open_with(Arc::new(spare), Path::new(DIR), opts.clone()) {
                Ok(fallback) => {
                    assert_eq!(
                        fallback.recovery().checkpoint_generation,
                        r.checkpoint_generation - 1
                    );
                    let same_state = match (same(&fallback, &committed), torn) {
                        (Ok(()), _) => Ok(()),
                        (Err(a), true) => {
                            same(&fallback, &in_flight).map_err(|b| format!("{a}; {b}"))
                        }
                        (Err(a), false) => Err(a),
                    };
                    if let Err(e) = same_state {
                        panic!("crash at sync {n}, newest checkpoint damaged: {e}");
                    }
                    from_older += 1;
                }
                Err(engine::Error::Corrupt { .. }) => {}
                Err(e) => panic!("crash at sync {n}, newest checkpoint damaged: {e}"),
            }
        }
        drop(store);
        checked += 1;
    }
    assert_eq!(checked, total);
    // The crashes exercised both paths: log replay, and checkpoints past the first.
    assert!(replayed > 0, "no crash left records to replay");
    assert!(
        from_later_ckpt > 0 || log_bytes >= 1 << 20,
        "no crash happened after a checkpoint"
    );
    assert!(
        from_lagged > 0 || log_bytes >= 1 << 20,
        "no crash recovered from a lagged checkpoint"
    );
    assert!(
        from_older > 0 || log_bytes >= 1 << 20,
        "no crash replayed from an older checkpoint past a damaged newest one"
    );
    // Sanity: the workload really did commit something.
    assert!(!all.rrds.is_empty());
}

/// Full checkpoints (a stop with `-F`, a ring grown) among the ring's lagged ones, with
/// records after them: the crashes after them also check replay from the older checkpoint
/// past a damaged newest one (the review found it served values never written).
#[test]
fn crash_at_every_sync_with_full_checkpoints_loses_nothing_committed() {
    let ops = workload_with_checkpoints(5, 300, 70);
    crash_at_every_sync_of(&ops, 5, 32 << 10, false, 4096);
    crash_at_every_sync_of(&ops, 6, 32 << 10, true, 4096);
}

#[test]
fn crash_at_every_sync_loses_nothing_committed() {
    // 32 KiB ring: the workload wraps the ring and takes several checkpoints.
    crash_at_every_sync(1, 400, 32 << 10, false);
}

/// `ops` run to the end on a fresh simulated disk: the disk, the store and the model.
fn run_clean(ops: &[Op], opts: &Options) -> (SimFs, Store, Model) {
    let clean = SimFs::new();
    let mut store =
        Store::open_with(Arc::new(clean.clone()), Path::new(DIR), opts.clone()).unwrap();
    let mut model = Model::default();
    for op in ops {
        model.apply(op);
        run_op(&mut store, op).unwrap();
    }
    (clean, store, model)
}

/// `names.len()` series of `schema` fed `rounds` 10-second steps of `values`, a commit
/// every few steps; `between(r, ops)` may add operations after step `r`.
fn fed_workload(
    seed: u64,
    rounds: i64,
    schema: &rrd::Schema,
    names: &[String],
    mut values: impl FnMut(&mut Rng) -> Vec<String>,
    mut between: impl FnMut(i64, &mut Vec<Op>),
) -> Vec<Op> {
    let mut rng = Rng::seeded(seed);
    let mut ops: Vec<Op> = names
        .iter()
        .map(|n| Op::Create(n.clone(), rrd::Rrd::new(schema.clone(), START)))
        .collect();
    ops.push(Op::Commit);
    for r in 1..=rounds {
        for n in names {
            let sample = rrd::Sample {
                time: START + 10 * r,
                usec: 0,
                values: values(&mut rng),
            };
            ops.push(Op::Update(n.clone(), sample));
        }
        between(r, &mut ops);
        if rng.below(3) == 0 {
            ops.push(Op::Commit);
        }
    }
    ops.push(Op::Commit);
    ops
}

/// Three series of 32 DSs (a chunk is 8 rows: one is sealed every 8 or 24 steps) fed noisy
/// values for `rounds` steps, one of them removed and created again half way.
fn wide_workload(seed: u64, rounds: i64) -> Vec<Op> {
    let schema = rrd::Schema {
        step: 10,
        ds: (0..32)
            .map(|i| ds(&format!("v{i}"), rrd::DsType::Gauge))
            .collect(),
        rra: vec![rra(rrd::Cf::Average, 1, 48), rra(rrd::Cf::Max, 3, 40)],
    };
    let names: Vec<String> = (0..3).map(|s| format!("wide{s}.rrd")).collect();
    let values = |rng: &mut Rng| {
        (0..32)
            .map(|_| format!("{}.{:03}", rng.below(1000), rng.below(1000)))
            .collect()
    };
    let again = names[1].clone();
    let between = |r: i64, ops: &mut Vec<Op>| {
        if r == rounds / 2 {
            ops.push(Op::Remove(again.clone()));
            let rrd = rrd::Rrd::new(schema.clone(), START + 10 * r);
            ops.push(Op::Create(again.clone(), rrd));
        }
    };
    fed_workload(seed, rounds, &schema, &names, values, between)
}

/// Four series of one GAUGE whose archives' chunks take 2,560 and 10,240 seconds to fill,
/// fed `rounds` 10-second updates with a commit every few: with a small ring, a chunk is open
/// across many checkpoints, which store it as pieces over pieces, and epochs of pieces begin.
fn slow_chunk_workload(seed: u64, rounds: i64) -> Vec<Op> {
    let schema = rrd::Schema {
        step: 10,
        ds: vec![ds("v", rrd::DsType::Gauge)],
        rra: vec![rra(rrd::Cf::Average, 1, 600), rra(rrd::Cf::Max, 4, 300)],
    };
    let names: Vec<String> = (0..4).map(|s| format!("slow{s}.rrd")).collect();
    let values = |rng: &mut Rng| vec![format!("{}.{:02}", rng.below(500), rng.below(100))];
    fed_workload(seed, rounds, &schema, &names, values, |_, _| {})
}

#[test]
fn crash_at_every_sync_while_open_chunks_are_stored_as_pieces() {
    // Checkpoints store each chunk being written as a piece over the piece before, chains
    // up to an epoch long; a crash at any sync, torn or not, loses nothing committed and
    // never reads a chain that reaches a removed file.
    let ops = slow_chunk_workload(11, 420);
    let ring = 16 << 10;
    let opts = small_opts(ring);
    let (clean, store, model) = run_clean(&ops, &opts);
    let st = store.stats().clone();
    assert!(
        st.checkpoints > engine::segments::PIECE_EPOCH as u64 + 2,
        "an epoch of pieces began: {st:?}"
    );
    assert!(st.open_chunk_bytes > 0, "{st:?}");
    same(&store, &model).unwrap();
    drop(store);
    let store = reopen(&clean, &opts);
    same(&store, &model).unwrap();
    drop(store);
    crash_at_every_sync_of(&ops, 11, ring, false, 4096);
    crash_at_every_sync_of(&ops, 12, ring, true, 4096);
}

#[test]
fn crash_at_every_sync_while_sealed_chunks_spill() {
    // Sealed chunks go to segment files between checkpoints (small_opts spills past 300
    // bytes of them); a crash at any sync of a spill, of a checkpoint naming spilled
    // segments or of a commit after them loses nothing committed, and the open removes the
    // spilled files no checkpoint names.
    let ops = wide_workload(9, 150);
    let opts = small_opts(24 << 10);
    let (clean, store, model) = run_clean(&ops, &opts);
    let st = store.stats().clone();
    assert!(st.spills >= 10, "{st:?}");
    assert!(st.checkpoints >= 2, "{st:?}");
    same(&store, &model).unwrap();
    drop(store);
    let store = reopen(&clean, &opts);
    same(&store, &model).unwrap();
    drop(store);
    crash_at_every_sync_of(&ops, 9, 24 << 10, false, 4096);
    crash_at_every_sync_of(&ops, 10, 24 << 10, true, 4096);
}

#[test]
fn crash_at_every_sync_while_the_ring_grows() {
    // 17 series created one by one, 8 KiB of ring each: the 32 KiB ring is replaced by one of
    // 64 KiB at 5 series, 128 at 9, 256 at 17. A crash at any sync of a
    // growth (the new ring built, the checkpoint, the rename) loses nothing committed.
    let ops = workload_growing(8, 400, 17);
    let opts = Options {
        log_per_series: 8 << 10,
        ..small_opts(32 << 10)
    };
    let clean = SimFs::new();
    let (all, _) = run_until_crash(&clean, &ops, &opts);
    let store = reopen(&clean, &opts);
    assert_eq!(store.log_capacity(), 256 << 10);
    same(&store, &all).unwrap();
    drop(store);
    let total = clean.syncs();
    let mut caps = std::collections::BTreeSet::new();
    for n in 1..=total {
        let torn = n % 2 == 0;
        let fs = SimFs::new();
        fs.set_fault(Fault::CrashAtSync(n));
        let (committed, in_flight) = run_until_crash(&fs, &ops, &opts);
        assert!(fs.crashed(), "sync {n} of {total} never happened");
        let after = fs.restart(torn.then_some(n));
        let store = reopen(&after, &opts);
        caps.insert(store.log_capacity());
        if let Err(a) = same(&store, &committed) {
            if !torn || same(&store, &in_flight).is_err() {
                panic!(
                    "crash at sync {n}/{total}: {a}; report {:?}",
                    store.recovery()
                );
            }
        }
        let tmp = Path::new(DIR).join("log.tmp");
        assert!(
            !after.exists(&tmp).unwrap(),
            "crash at sync {n}: log.tmp left"
        );
        drop(store);
    }
    let want: std::collections::BTreeSet<u64> = [32 << 10, 64 << 10, 128 << 10, 256 << 10]
        .into_iter()
        .collect();
    assert_eq!(caps, want, "crashes before and after each growth");
}

#[test]
fn crash_at_every_sync_with_a_large_ring() {
    crash_at_every_sync(2, 300, 1 << 20, false);
}

#[test]
fn crash_at_every_sync_with_records_aligned_to_small_blocks() {
    // A 1 KiB-block file system (ext4 -b 1024): records are aligned to 1 KiB, so a commit
    // writes fewer bytes, and the torn variant tears 512-byte sectors inside them.
    // Records are smaller, so a smaller ring still wraps and checkpoints.
    crash_at_every_sync_on(5, 400, 12 << 10, false, 1024);
    crash_at_every_sync_on(6, 400, 12 << 10, true, 1024);
    crash_at_every_sync_on(7, 300, 8 << 10, true, 512);
}

#[test]
fn torn_unsynced_writes_serve_a_whole_commit_or_none() {
    crash_at_every_sync(3, 400, 32 << 10, true);
    crash_at_every_sync(4, 300, 48 << 10, true);
}

#[test]
fn workload_wraps_the_ring_and_checkpoints() {
    let ops = workload(1, 400);
    let fs = SimFs::new();
    let mut store =
        Store::open_with(Arc::new(fs.clone()), Path::new(DIR), small_opts(32 << 10)).unwrap();
    let mut model = Model::default();
    let (mut ok, mut refused) = (0, 0);
    for op in &ops {
        model.apply(op);
        if let Op::Update(n, s) = op {
            match store.update(n, s, &mut |_| {}) {
                Ok(()) => ok += 1,
                Err(engine::Error::Rrd(_)) => refused += 1,
                Err(e) => panic!("{e}"),
            }
        } else {
            run_op(&mut store, op).unwrap();
        }
    }
    // The workload exercises both accepted and refused updates, and fills archive rows.
    assert!(ok > 300 && refused > 10, "{ok} accepted, {refused} refused");
    let known: usize = model
        .rrds
        .values()
        .flat_map(|r| r.rra.iter().flat_map(|a| a.rows.iter()))
        .filter(|v| !v.is_nan())
        .count();
    assert!(known > 50, "only {known} known rows");
    store.close().unwrap();
    let store = reopen(&fs, &small_opts(32 << 10));
    same(&store, &model).unwrap();
    let r = store.recovery();
    assert!(r.checkpoint_generation > 2, "{r:?}");
    assert!(r.end_lsn > 2 * (32 << 10), "{r:?}");
    assert!(r.cut.is_none());
}

#[test]
fn recovery_then_more_writes_then_crash_again() {
    let ops = workload(9, 300);
    let (first, second) = ops.split_at(ops.len() / 2);
    let fs = SimFs::new();
    let (committed, _) = run_until_crash(&fs, first, &small_opts(32 << 10));
    // "Crash" without close: pending samples after the last commit are lost.
    let fs2 = fs.restart(None);
    let mut store = reopen(&fs2, &small_opts(32 << 10));
    same(&store, &committed).unwrap();
    let mut model = committed.clone();
    for op in second {
        model.apply(op);
        run_op(&mut store, op).unwrap();
    }
    drop(store);
    let fs3 = fs2.restart(None);
    let store = reopen(&fs3, &small_opts(32 << 10));
    same(&store, &model).unwrap();
}

/// Records of several pages in a ring of a few pages: records wrap at the ring's end.
fn wrapping_workload(seed: u64) -> Vec<Op> {
    let mut rng = Rng::seeded(seed);
    let mut ops = Vec::new();
    let mut last = START;
    for round in 0..40 {
        if round % 5 == 0 {
            // A restore-sized RRD: its create entry spans 2-4 pages.
            let mut r = make_rrd(0);
            let rows = 500 + rng.below(1000);
            std::sync::Arc::make_mut(&mut r.schema).rra[0].row_cnt = rows;
            let mut vals = vec![f64::NAN; rows as usize];
            for (i, v) in vals.iter_mut().enumerate().step_by(7) {
                *v = i as f64 * 0.5;
            }
            r.rra[0].rows = rrd::Rows::from_values(r.ds_cnt(), &vals);
            ops.push(Op::Create("big".into(), r));
            last = START;
        }
        for _ in 0..1 + rng.below(4) {
            last += 15;
            let values = vec![format!("{}.{:02}", rng.below(30), rng.below(100))];
            ops.push(Op::Update(
                "big".into(),
                rrd::Sample {
                    time: last,
                    usec: 0,
                    values,
                },
            ));
        }
        ops.push(Op::Commit);
    }
    ops
}

#[test]
fn records_that_wrap_at_the_ring_end_survive_crashes() {
    let ring = 7 * 4096;
    let mut cuts = 0;
    for seed in [5u64, 6] {
        let ops = wrapping_workload(seed);
        let clean = SimFs::new();
        let (all, _) = run_until_crash(&clean, &ops, &small_opts(ring));
        let store = reopen(&clean, &small_opts(ring));
        same(&store, &all).unwrap();
        drop(store);
        for n in 1..=clean.syncs() {
            for torn in [None, Some(n)] {
                let fs = SimFs::new();
                fs.set_fault(Fault::CrashAtSync(n));
                let (committed, in_flight) = run_until_crash(&fs, &ops, &small_opts(ring));
                let store = reopen(&fs.restart(torn), &small_opts(ring));
                cuts += store.recovery().cut.is_some() as u32;
                if same(&store, &committed).is_err() {
                    assert!(torn.is_some(), "crash at sync {n}: {:?}", store.recovery());
                    same(&store, &in_flight).unwrap_or_else(|e| panic!("sync {n} torn: {e}"));
                }
            }
        }
    }
    assert!(
        cuts > 0,
        "no torn record was ever cut: the torn crashes tested nothing"
    );
}

#[test]
fn a_crash_during_recovery_itself_loses_nothing_more() {
    // Records of several pages, so that torn writes really tear them.
    let ops = wrapping_workload(8);
    let ring = 7 * 4096;
    let clean = SimFs::new();
    run_until_crash(&clean, &ops, &small_opts(ring));
    let total = clean.syncs();
    let mut cut_seen = 0;
    for n in 1..=total {
        let fs = SimFs::new();
        fs.set_fault(Fault::CrashAtSync(n));
        let (committed, in_flight) = run_until_crash(&fs, &ops, &small_opts(ring));
        let torn = fs.restart(Some(n));
        // Recovery's own syncs (zeroing a cut tail, re-extending the log) crash in turn.
        for k in 1..=3 {
            let again = torn.restart(None);
            again.set_fault(Fault::CrashAtSync(k));
            let _ = Store::open_with(Arc::new(again.clone()), Path::new(DIR), small_opts(ring));
            let store = reopen(&again.restart(None), &small_opts(ring));
            cut_seen += store.recovery().cut.is_some() as u32;
            if same(&store, &committed).is_err() {
                same(&store, &in_flight)
                    .unwrap_or_else(|e| panic!("crash {n}, recovery crash {k}: {e}"));
            }
        }
    }
    assert!(cut_seen > 0, "no torn tail was ever recovered");
}

#[test]
fn records_are_aligned_to_the_file_systems_block_size() {
    for (block, want) in [(1024, 1024), (512, 512), (4096, 4096), (65536, 4096)] {
        let fs = sim(block);
        let mut store =
            Store::open_with(Arc::new(fs.clone()), Path::new(DIR), small_opts(64 << 10)).unwrap();
        store.create("a.rrd", make_rrd(0), false).unwrap();
        store.commit().unwrap();
        let before = store.stats().log_bytes;
        let s = rrd::Sample {
            time: START + 10,
            usec: 0,
            values: vec!["1".to_string(); make_rrd(0).schema.ds.len()],
        };
        store.update("a.rrd", &s, &mut |_| {}).unwrap();
        let st = store.commit().unwrap();
        assert_eq!(st.bytes, want, "block size {block}");
        assert_eq!(store.stats().log_bytes - before, want);
        drop(store);
        let again = reopen(&fs.restart(None), &small_opts(64 << 10));
        assert_eq!(again.get("a.rrd").unwrap().last_up, START + 10);
    }
}
