//! Shared by the engine's integration tests: seeded workloads, a reference model built by
//! applying the same samples in memory, and a bit-exact comparison of stores with it.
#![allow(dead_code)]

use codec::rrdbin::rrd_bytes;
use engine::{Error, Options, Store};
use rrd::{Cf, DsDef, DsType, RraDef, Rrd, Sample, Schema};
use std::collections::BTreeMap;

pub use testkit::Rng;

pub fn ds(name: &str, kind: DsType) -> DsDef {
    DsDef {
        name: name.into(),
        kind,
        heartbeat: 60,
        min: f64::NAN,
        max: f64::NAN,
        rpn: None,
    }
}

pub fn rra(cf: Cf, pdp_cnt: u64, row_cnt: u64) -> RraDef {
    RraDef::new(cf, 0.5, pdp_cnt, row_cnt)
}

pub const START: i64 = 1_700_000_000;

/// A few schemas of different shapes; `k` picks one.
pub fn make_rrd(k: u64) -> Rrd {
    let schema = match k % 4 {
        0 => Schema {
            step: 15,
            ds: vec![ds("temp", DsType::Gauge)],
            rra: vec![rra(Cf::Average, 1, 40), rra(Cf::Max, 4, 10)],
        },
        1 => Schema {
            step: 15,
            ds: vec![ds("octets", DsType::Counter), ds("load", DsType::Gauge)],
            rra: vec![
                rra(Cf::Average, 1, 30),
                rra(Cf::Last, 3, 12),
                rra(Cf::Min, 2, 8),
            ],
        },
        2 => Schema {
            step: 30,
            ds: vec![ds("d", DsType::Derive), ds("a", DsType::Absolute)],
            rra: vec![rra(Cf::Average, 2, 25)],
        },
        _ => Schema {
            step: 20,
            ds: vec![
                ds("dc", DsType::DCounter),
                ds("dd", DsType::DDerive),
                DsDef {
                    rpn: Some("dc,2,*".into()),
                    heartbeat: 0,
                    ..ds("c", DsType::Compute)
                },
            ],
            rra: vec![rra(Cf::Average, 1, 20), rra(Cf::Max, 5, 6)],
        },
    };
    Rrd::new(schema, START)
}

/// One operation of a workload.
#[derive(Clone, Debug)]
pub enum Op {
    Create(String, Rrd),
    Update(String, Sample),
    Remove(String),
    Commit,
    /// A commit, then a full checkpoint (what `ringlet serve -F` does at a stop).
    Checkpoint,
}

/// A seeded workload: creates, many updates over several series (some rejected, some
/// partial, some `U`), an occasional remove and re-create, and a commit every few updates.
pub fn workload(seed: u64, rounds: usize) -> Vec<Op> {
    workload_growing(seed, rounds, 4)
}

/// [`workload`] over `series` series: four at first, the others created one by one (each
/// committed) at even intervals of the rounds.
pub fn workload_growing(seed: u64, rounds: usize, series: usize) -> Vec<Op> {
    let mut rng = Rng::seeded(seed);
    let mut ops = Vec::new();
    let names: Vec<String> = (0..series).map(|i| format!("host{i}/if.rrd")).collect();
    let mut t: BTreeMap<String, i64> = BTreeMap::new();
    let mut kinds: BTreeMap<String, Vec<DsType>> = BTreeMap::new();
    let kinds_of = |r: &Rrd| r.schema.ds.iter().map(|d| d.kind).collect::<Vec<_>>();
    let mut ctr: BTreeMap<String, u64> = BTreeMap::new();
    let mut live = series.min(4);
    let every = rounds / (series - live + 1);
    for (i, n) in names[..live].iter().enumerate() {
        let r = make_rrd(i as u64);
        kinds.insert(n.clone(), kinds_of(&r));
        ops.push(Op::Create(n.clone(), r));
        t.insert(n.clone(), START);
    }
    ops.push(Op::Commit);
    for round in 0..rounds {
        if live < series && round % every == every - 1 {
            let n = &names[live];
            let r = make_rrd(live as u64);
            kinds.insert(n.clone(), kinds_of(&r));
            ops.push(Op::Create(n.clone(), r));
            ops.push(Op::Commit);
            t.insert(n.clone(), START);
            live += 1;
        }
        let n = &names[rng.below(live as u64) as usize];
        if rng.below(60) == 0 {
            let r = make_rrd(rng.below(4));
            kinds.insert(n.clone(), kinds_of(&r));
            ops.push(Op::Remove(n.clone()));
            ops.push(Op::Create(n.clone(), r));
            t.insert(n.clone(), START);
            continue;
        }
        let last = t.get(n).copied().unwrap_or(START);
        let time = match rng.below(40) {
            0 => last - 5, // refused: before the last update
            1 => last + 200,
            _ => last + 10 + rng.below(11) as i64,
        };
        let usec = if rng.below(5) == 0 {
            rng.below(1_000_000) as i64
        } else {
            0
        };
        let c = ctr.entry(n.clone()).or_insert(1000);
        *c += rng.below(5000);
        let mut values: Vec<String> = kinds
            .get(n)
            .map(|k| k.as_slice())
            .unwrap_or(&[])
            .iter()
            .map(|kind| match kind {
                DsType::Gauge => format!("{}.{:02}", rng.below(50), rng.below(100)),
                DsType::Counter | DsType::Derive => c.to_string(),
                DsType::Absolute => rng.below(100).to_string(),
                DsType::DCounter | DsType::DDerive => format!("{c}.{}", rng.below(10)),
                DsType::Compute => "U".to_string(),
            })
            .collect();
        match rng.below(30) {
            0 => values[0] = "U".into(),
            1 => {
                let l = values.len();
                values[l - 1] = "abc".into(); // refused or partial, per DS type
            }
            2 => values[0] = "1e3".into(),
            _ => {}
        }
        if time > last {
            t.insert(n.clone(), time);
        }
        ops.push(Op::Update(n.clone(), Sample { time, usec, values }));
        if rng.below(6) == 0 {
            ops.push(Op::Commit);
        }
    }
    ops.push(Op::Commit);
    ops
}

/// [`workload`] with a full checkpoint after every `every` operations.
pub fn workload_with_checkpoints(seed: u64, rounds: usize, every: usize) -> Vec<Op> {
    let mut ops = Vec::new();
    for (i, op) in workload(seed, rounds).into_iter().enumerate() {
        ops.push(op);
        if i % every == every - 1 {
            // Committed first: a crash in the checkpoint then loses nothing the model saw
            // acknowledged (its own commit would be acknowledged only with it).
            ops.push(Op::Commit);
            ops.push(Op::Checkpoint);
        }
    }
    ops
}

/// The reference: the same operations applied to plain in-memory RRDs.
#[derive(Clone, Default)]
pub struct Model {
    pub rrds: BTreeMap<String, Rrd>,
}

impl Model {
    pub fn apply(&mut self, op: &Op) {
        match op {
            Op::Create(n, r) => {
                self.rrds.insert(n.clone(), r.clone());
            }
            Op::Update(n, s) => {
                if let Some(r) = self.rrds.get_mut(n) {
                    let _ = r.apply(s, &mut |_| {});
                }
            }
            Op::Remove(n) => {
                self.rrds.remove(n);
            }
            Op::Commit | Op::Checkpoint => {}
        }
    }
}

/// Run one op against the store. `Ok(true)` = a commit succeeded. Errors from the RRD layer
/// (refused samples) are part of the workload; every other error is returned.
pub fn run_op(store: &mut Store, op: &Op) -> Result<bool, Error> {
    match op {
        Op::Create(n, r) => store.create(n, r.clone(), true).map(|_| false),
        Op::Update(n, s) => match store.update(n, s, &mut |_| {}) {
            Ok(()) | Err(Error::Rrd(_)) => Ok(false),
            Err(e) => Err(e),
        },
        Op::Remove(n) => store.remove(n).map(|_| false),
        Op::Commit => store.commit().map(|_| true),
        Op::Checkpoint => store.checkpoint().map(|_| true),
    }
}

/// Whether the store holds exactly the model's RRDs, bit for bit.
pub fn same(store: &Store, model: &Model) -> Result<(), String> {
    let names = store.names();
    let want: Vec<String> = model.rrds.keys().cloned().collect();
    if names != want {
        return Err(format!("names {names:?} != {want:?}"));
    }
    for (n, r) in &model.rrds {
        let got = store.get(n).ok_or_else(|| format!("{n} missing"))?;
        if rrd_bytes(got) != rrd_bytes(r) {
            return Err(format!(
                "{n}: last_up {} vs {}, differs in {}",
                got.last_up,
                r.last_up,
                first_difference(got, r)
            ));
        }
    }
    Ok(())
}

/// Which part of two RRDs differs first (for failure messages).
fn first_difference(a: &Rrd, b: &Rrd) -> String {
    if format!("{:?}", a.pdp) != format!("{:?}", b.pdp) {
        return format!("pdp_prep {:?} vs {:?}", a.pdp, b.pdp);
    }
    if format!("{:?}", a.cdp) != format!("{:?}", b.cdp) {
        return "cdp_prep".into();
    }
    for (i, (x, y)) in a.rra.iter().zip(&b.rra).enumerate() {
        if x.cur_row != y.cur_row {
            return format!("rra {i} cur_row {} vs {}", x.cur_row, y.cur_row);
        }
        for (j, (p, q)) in x.rows.iter().zip(y.rows.iter()).enumerate() {
            if p.to_bits() != q.to_bits() {
                return format!("rra {i} (cur_row {}) value {j}: {p} vs {q}", x.cur_row);
            }
        }
    }
    "schema or usec".into()
}

pub fn small_opts(log_bytes: u64) -> Options {
    Options {
        commit_interval: None,
        max_pending_bytes: usize::MAX,
        log_bytes,
        log_per_series: 0,
        // Every record a batch of its own: the batched replay is what every test opens with.
        replay_batch: 1,
        repair: false,
        only: None,
        partial: false,
        lock_wait: std::time::Duration::ZERO,
        before_checkpoint: None,
        sample_entries: false,
        block_version: 0,
        unmarked_reseeds: false,
        // Spills at a few hundred bytes of sealed chunks: every test on these options (the
        // crash at every sync among them) runs through them.
        spill_bytes: 300,
    }
}

/// A fresh directory under the system temp dir, removed on drop.
pub struct TempDir(pub std::path::PathBuf);

impl TempDir {
    pub fn new(tag: &str) -> TempDir {
        let p = std::env::temp_dir().join(format!(
            "ringlet-engine-{tag}-{}-{}",
            std::process::id(),
            Rng::seeded(
                std::time::SystemTime::now()
                    .duration_since(std::time::UNIX_EPOCH)
                    .map(|d| d.as_nanos() as u64)
                    .unwrap_or(1)
            )
            .next_u64()
        ));
        let _ = std::fs::remove_dir_all(&p);
        std::fs::create_dir_all(&p).expect("temp dir");
        TempDir(p)
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}
