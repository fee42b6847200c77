//! Blobs (the files of the emoncms view): random writes, cuts, renames and removals, beside
//! RRD series, committed and checkpointed (lagged checkpoints with a small ring); after a
//! clean reopen every blob is back byte for byte, and after a crash at every sync in turn
//! the committed state is, never another.

mod common;

use common::*;
use engine::sim::{Fault, SimFs};
use engine::{Error, Options, Store};
use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;

const DIR: &str = "/store";

#[derive(Debug, Clone)]
enum BOp {
    Create(String),
    Write(String, u64, Vec<u8>),
    SetLen(String, u64),
    Rename(String, String),
    Remove(String),
    Rrd(Op),
}

type Blobs = BTreeMap<String, Vec<u8>>;

#[derive(Clone, Default)]
struct State {
    blobs: Blobs,
    rrds: Model,
}

impl State {
    fn apply(&mut self, op: &BOp) {
        match op {
            BOp::Create(n) => {
                self.blobs.insert(n.clone(), Vec::new());
            }
            BOp::Write(n, off, data) => {
                let b = self.blobs.get_mut(n).expect("exists");
                let end = *off as usize + data.len();
                if b.len() < end {
                    b.resize(end, 0);
                }
                b[*off as usize..end].copy_from_slice(data);
            }
            BOp::SetLen(n, len) => self
                .blobs
                .get_mut(n)
                .expect("exists")
                .resize(*len as usize, 0),
            BOp::Rename(a, b) => {
                let v = self.blobs.remove(a).expect("exists");
                self.blobs.insert(b.clone(), v);
            }
            BOp::Remove(n) => {
                self.blobs.remove(n);
            }
            BOp::Rrd(op) => self.rrds.apply(op),
        }
    }
}

/// Emoncms-like: feeds' `.dat` blobs appended a float at a time with gaps of NaN padding,
/// points overwritten in the past, `.meta` blobs rewritten, feeds cleared (cut to 0) and
/// deleted, now and then a rename; with RRD series updated beside them.
fn workload(seed: u64, rounds: usize) -> Vec<BOp> {
    let mut rng = Rng::seeded(seed);
    let mut ops = Vec::new();
    let mut live: BTreeMap<String, u64> = BTreeMap::new();
    let rrd_ops = common::workload(seed, rounds / 2);
    let mut rrd_ops = rrd_ops.into_iter();
    for _ in 0..rounds {
        let r = rng.below(100);
        if live.len() < 3 || r < 4 {
            let n = format!("phpfina/{}.dat", rng.below(8));
            if live.contains_key(&n) {
                continue;
            }
            ops.push(BOp::Create(n.clone()));
            ops.push(BOp::Create(n.replace(".dat", ".meta")));
            let meta: Vec<u8> = [0u32, 0, 10, 1_700_000_000]
                .iter()
                .flat_map(|v| v.to_le_bytes())
                .collect();
            ops.push(BOp::Write(n.replace(".dat", ".meta"), 0, meta));
            live.insert(n, 0);
            continue;
        }
        let names: Vec<String> = live.keys().cloned().collect();
        let n = names[rng.below(names.len() as u64) as usize].clone();
        let len = live[&n];
        match r {
            4..=6 => {
                ops.push(BOp::Remove(n.clone()));
                ops.push(BOp::Remove(n.replace(".dat", ".meta")));
                live.remove(&n);
            }
            7..=8 => {
                ops.push(BOp::SetLen(n.clone(), 0));
                live.insert(n, 0);
            }
            9 => {
                let to = format!("phpfina/{}.dat", 10 + rng.below(8));
                if live.contains_key(&to) {
                    continue;
                }
                ops.push(BOp::Rename(n.clone(), to.clone()));
                ops.push(BOp::Rename(
                    n.replace(".dat", ".meta"),
                    to.replace(".dat", ".meta"),
                ));
                live.remove(&n);
                live.insert(to, len);
            }
            10..=14 if len >= 4 => {
                let pos = rng.below(len / 4) * 4;
                let v = (rng.below(1000) as f32 / 10.0).to_le_bytes().to_vec();
                ops.push(BOp::Write(n, pos, v));
            }
            15..=24 => {
                ops.push(BOp::Rrd(rrd_ops.next().unwrap_or(Op::Commit)));
            }
            25..=34 => ops.push(BOp::Rrd(Op::Commit)),
            35 => {
                // Committed first: a crash in the checkpoint then loses nothing the model
                // saw acknowledged.
                ops.push(BOp::Rrd(Op::Commit));
                ops.push(BOp::Rrd(Op::Checkpoint));
            }
            _ => {
                // Points appended: one, or a few after a gap of NaN.
                let gap = if rng.below(10) == 0 { rng.below(40) } else { 0 };
                let most = if rng.below(50) == 0 { 6000 } else { 3 };
                let k = 1 + rng.below(most);
                let mut data = Vec::new();
                for _ in 0..gap {
                    data.extend(f32::NAN.to_le_bytes());
                }
                for _ in 0..k {
                    data.extend((rng.below(5000) as f32 * 0.25).to_le_bytes());
                }
                let l = data.len() as u64;
                ops.push(BOp::Write(n.clone(), len, data));
                live.insert(n, len + l);
            }
        }
    }
    ops.push(BOp::Rrd(Op::Commit));
    ops
}

fn run(store: &mut Store, op: &BOp) -> Result<bool, Error> {
    match op {
        BOp::Create(n) => store.blob_create(n).map(|_| false),
        BOp::Write(n, off, d) => store.blob_write(n, *off, d).map(|_| false),
        BOp::SetLen(n, len) => store.blob_set_len(n, *len).map(|_| false),
        BOp::Rename(a, b) => store.blob_rename(a, b).map(|_| false),
        BOp::Remove(n) => store.blob_remove(n).map(|_| false),
        BOp::Rrd(op) => run_op(store, op),
    }
}

fn same_blobs(store: &Store, want: &Blobs) -> Result<(), String> {
    let names: Vec<(String, u64)> = store.blobs();
    let expect: Vec<(String, u64)> = want
        .iter()
        .map(|(n, v)| (n.clone(), v.len() as u64))
        .collect();
    if names != expect {
        return Err(format!("blobs {names:?} != {expect:?}"));
    }
    for (n, v) in want {
        let got = store.blob_read(n, 0, u64::MAX).map_err(|e| e.to_string())?;
        if &got != v {
            let at = got.iter().zip(v).position(|(a, b)| a != b);
            return Err(format!("{n}: bytes differ (first at {at:?})"));
        }
        // Reads at odd places, across chunks.
        for (off, len) in [(1, 5), (16_383, 3), (16_384, 16_385), (v.len() as u64, 9)] {
            let got = store.blob_read(n, off, len).map_err(|e| e.to_string())?;
            let lo = (off as usize).min(v.len());
            let hi = (off + len).min(v.len() as u64) as usize;
            if got != v[lo..hi] {
                return Err(format!("{n}: read of {len} at {off} differs"));
            }
        }
    }
    Ok(())
}

fn same_state(store: &Store, s: &State) -> Result<(), String> {
    same_blobs(store, &s.blobs)?;
    same(store, &s.rrds)
}

fn run_until_crash(fs: &SimFs, ops: &[BOp], opts: &Options) -> (State, State) {
    let mut committed = State::default();
    let Ok(mut store) = Store::open_with(Arc::new(fs.clone()), Path::new(DIR), opts.clone()) else {
        return (committed.clone(), committed);
    };
    let mut model = State::default();
    for op in ops {
        model.apply(op);
        match run(&mut store, op) {
            Ok(true) => committed = model.clone(),
            Ok(false) => {}
            Err(_) => return (committed, model),
        }
    }
    (committed, model)
}

#[test]
fn blobs_come_back_after_reopen_with_lagged_checkpoints() {
    for seed in 1..=4 {
        let dir = TempDir::new("blobs");
        let ops = workload(seed, 3000);
        let opts = small_opts(64 << 10);
        let mut store = Store::open(&dir.0, opts.clone()).unwrap();
        let mut model = State::default();
        for op in &ops {
            model.apply(op);
            run(&mut store, op).unwrap();
        }
        same_state(&store, &model).unwrap();
        let lagged = store.stats().checkpoints;
        store.close().unwrap();
        assert!(lagged > 2, "seed {seed}: {lagged} checkpoints");
        let store = Store::open(&dir.0, opts.clone()).unwrap();
        assert_eq!(store.recovery().invalid_checkpoints, Vec::<String>::new());
        same_state(&store, &model).unwrap_or_else(|e| panic!("seed {seed}: {e}"));
        // Out of the heap once checkpointed, read back from segments.
        drop(store);
        let mut store = Store::open(&dir.0, opts).unwrap();
        store.checkpoint().unwrap();
        assert_eq!(store.blob_heap_bytes(), 0);
        same_state(&store, &model).unwrap_or_else(|e| panic!("seed {seed}: {e}"));
    }
}

#[test]
fn blob_crash_at_every_sync_keeps_the_committed_state() {
    for (seed, torn) in [(7, false), (8, true), (9, false)] {
        crash_at_every_sync(seed, torn);
    }
}

/// Crash a workload at every sync in turn; `torn`: the writes in flight land in part.
fn crash_at_every_sync(seed: u64, torn: bool) {
    let ops = workload(seed, 700);
    let opts = small_opts(32 << 10);
    let clean = SimFs::new();
    let (all, _) = run_until_crash(&clean, &ops, &opts);
    let total = clean.syncs();
    assert!(total > 20, "{total} syncs");
    assert!(!all.blobs.is_empty());
    let mut from_lagged = 0;
    for n in 1..=total {
        let fs = SimFs::new();
        fs.set_fault(Fault::CrashAtSync(n));
        let (committed, in_flight) = run_until_crash(&fs, &ops, &opts);
        assert!(fs.crashed());
        let after = fs.restart(torn.then_some(seed ^ n));
        let store = Store::open_with(Arc::new(after), Path::new(DIR), opts.clone())
            .unwrap_or_else(|e| panic!("seed {seed}, crash at sync {n}: reopen: {e}"));
        let r = store.recovery();
        from_lagged += (r.checkpoint_complete_lsn > r.checkpoint_lsn) as u32;
        let ok = same_state(&store, &committed);
        match (ok, torn) {
            (Ok(()), _) => {}
            // A torn crash may or may not have landed the record in flight, never half.
            (Err(a), true) => {
                if let Err(b) = same_state(&store, &in_flight) {
                    panic!("seed {seed}, crash at sync {n}/{total}: {a}; {b}")
                }
            }
            (Err(a), false) => panic!("seed {seed}, crash at sync {n}/{total}: {a}"),
        }
    }
    assert!(
        from_lagged > 0,
        "seed {seed}: no crash recovered from a lagged checkpoint"
    );
}

#[test]
fn a_blob_past_its_longest_is_refused_and_nothing_changes() {
    let dir = TempDir::new("blobs-long");
    let mut store = Store::open(&dir.0, small_opts(1 << 20)).unwrap();
    store.blob_create("a").unwrap();
    store.blob_write("a", 0, &[1, 2, 3, 4]).unwrap();
    let max = engine::blob::MAX_BLOB_LEN;
    assert!(matches!(
        store.blob_write("a", max - 2, &[0; 4]),
        Err(Error::Invalid(_))
    ));
    assert!(matches!(
        store.blob_set_len("a", max + 1),
        Err(Error::Invalid(_))
    ));
    assert!(matches!(
        store.blob_write("nope", 0, &[1]),
        Err(Error::NotFound(_))
    ));
    assert_eq!(store.blob_read("a", 0, 100).unwrap(), vec![1, 2, 3, 4]);
    store.commit().unwrap();
    drop(store);
    let store = Store::open(&dir.0, small_opts(1 << 20)).unwrap();
    assert_eq!(store.blobs(), vec![("a".to_string(), 4)]);
}
