//! Ingest rate of `Store::update` against plain `Rrd::apply` on the same samples (what the
//! engine adds per update: lookup, sample encoding, commits), in a temp directory.
//! `cargo run --release -p engine --example ingest`

use engine::{Options, Store};
use rrd::{Cf, DsDef, DsType, RraDef, Rrd, Sample, Schema};
use std::time::Instant;

fn schema(kind: DsType) -> Schema {
    Schema {
        step: 15,
        ds: vec![DsDef {
            name: "value".into(),
            kind,
            heartbeat: 30,
            min: f64::NAN,
            max: f64::NAN,
            rpn: None,
        }],
        rra: vec![
            RraDef {
                cf: Cf::Average,
                xff: 0.5,
                pdp_cnt: 1,
                row_cnt: 5760,
                par: [0; 5],
            },
            RraDef {
                cf: Cf::Max,
                xff: 0.5,
                pdp_cnt: 20,
                row_cnt: 2016,
                par: [0; 5],
            },
        ],
    }
}

fn main() {
    let n = 3000usize;
    let steps = 200i64;
    let start = 1_700_000_000i64;
    let names: Vec<String> = (0..n).map(|i| format!("host{}/m{i}.rrd", i / 50)).collect();
    let samples: Vec<Vec<Sample>> = (1..=steps)
        .map(|k| {
            (0..n)
                .map(|i| Sample {
                    time: start + 15 * k,
                    usec: 0,
                    values: vec![match i % 3 {
                        0 => format!(
                            "{}.{:02}",
                            20 + (k + i as i64) % 7,
                            (k * 7 + i as i64) % 100
                        ),
                        1 => (1000 * i as i64 + 50 * k).to_string(),
                        _ => "1".into(),
                    }],
                })
                .collect()
        })
        .collect();
    let kinds = [DsType::Gauge, DsType::Counter, DsType::Gauge];

    let store_only = std::env::args().any(|a| a == "--store-only");
    let mut plain: Vec<Rrd> = (0..if store_only { 0 } else { n })
        .map(|i| Rrd::new(schema(kinds[i % 3]), start))
        .collect();
    let t = Instant::now();
    for step in &samples {
        for (r, s) in plain.iter_mut().zip(step) {
            let _ = r.apply(s, &mut |_| {});
        }
    }
    let apply = t.elapsed().as_secs_f64();

    let opts = Options {
        commit_interval: None,
        max_pending_bytes: usize::MAX,
        log_bytes: 64 << 20,
        log_per_series: 0,
        replay_batch: 64 << 20,
        repair: false,
        only: None,
        partial: false,
        lock_wait: std::time::Duration::ZERO,
        before_checkpoint: None,
        sample_entries: false,
        block_version: 0,
        unmarked_reseeds: false,
        spill_bytes: engine::DEFAULT_SPILL_BYTES,
    };
    let dir = std::env::temp_dir().join(format!("ringlet-ingest-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let mut store = Store::open(&dir, opts).unwrap();
    for (i, name) in names.iter().enumerate() {
        store
            .create(name, Rrd::new(schema(kinds[i % 3]), start), false)
            .unwrap();
    }
    store.commit().unwrap();
    let t = Instant::now();
    let mut in_commit = 0.0;
    for (k, step) in samples.iter().enumerate() {
        for (name, s) in names.iter().zip(step) {
            let _ = store.update(name, s, &mut |_| {});
        }
        if k % 20 == 19 {
            let c = Instant::now();
            store.commit().unwrap();
            in_commit += c.elapsed().as_secs_f64();
        }
    }
    let with_store = t.elapsed().as_secs_f64();
    drop(store);
    let _ = std::fs::remove_dir_all(&dir);
    let total = (n as i64 * steps) as f64;
    println!("Rrd::apply alone : {:>10.0} updates/s", total / apply);
    println!(
        "Store::update    : {:>10.0} updates/s (incl. commits)",
        total / with_store
    );
    println!(
        "Store::update    : {:>10.0} updates/s (excl. {in_commit:.3} s in commit/fdatasync)",
        total / (with_store - in_commit)
    );
}
