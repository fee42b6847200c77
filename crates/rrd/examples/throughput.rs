//! In-process throughput of `parse_update_arg` + `Rrd::apply` (updates/s on one core).
//!
//! `cargo run --release -p rrd --example throughput [updates]`. Prints one line per scenario;
//! no assertion (the target is >= 1,000,000 updates/s with parsing).

use std::time::Instant;

use rrd::schema::{Cf, DsDef, DsType, RraDef, Schema};
use rrd::update::parse_update_arg;
use rrd::Rrd;

fn ds(name: &str, kind: DsType) -> DsDef {
    DsDef {
        name: name.into(),
        kind,
        heartbeat: 600,
        min: f64::NAN,
        max: f64::NAN,
        rpn: None,
    }
}

fn rras() -> Vec<RraDef> {
    let r = |cf, pdp_cnt, row_cnt| RraDef {
        cf,
        xff: 0.5,
        pdp_cnt,
        row_cnt,
        par: [0; 5],
    };
    vec![
        r(Cf::Average, 1, 2016),
        r(Cf::Average, 6, 1344),
        r(Cf::Max, 6, 1344),
        r(Cf::Min, 288, 730),
    ]
}

fn bench(label: &str, schema: Schema, n: usize, value: &dyn Fn(usize) -> String) {
    let step = schema.step as i64;
    let mut rrd = Rrd::new(schema, 1_700_000_000);
    // Pre-render the arguments so only parse + apply is timed.
    let args: Vec<String> = (0..n)
        .map(|i| format!("{}:{}", 1_700_000_000 + (i as i64 + 1) * step / 2, value(i)))
        .collect();
    let mut rows = 0usize;
    let t0 = Instant::now();
    for a in &args {
        let s = parse_update_arg(&rrd.schema, a, None, (0, 0)).expect("valid argument");
        rrd.apply(&s, &mut |_| rows += 1).expect("valid update");
    }
    let dt = t0.elapsed().as_secs_f64();
    println!(
        "{label}: {n} updates in {dt:.3} s = {:.0} updates/s ({rows} row values)",
        n as f64 / dt
    );
}

fn main() {
    let n: usize = std::env::args()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(2_000_000);
    let one = |kind| Schema {
        step: 10,
        ds: vec![ds("a", kind)],
        rra: rras(),
    };
    bench("GAUGE 1 DS", one(DsType::Gauge), n, &|i| {
        format!("{}.{}", i % 1000, i % 7)
    });
    bench("COUNTER 1 DS", one(DsType::Counter), n, &|i| {
        format!("{}", i * 137)
    });
    let four = Schema {
        step: 10,
        ds: vec![
            ds("a", DsType::Gauge),
            ds("b", DsType::Counter),
            ds("c", DsType::Derive),
            ds("d", DsType::Absolute),
        ],
        rra: rras(),
    };
    bench("4 DS mixed", four, n / 2, &|i| {
        format!("{}:{}:{}:{}", i % 100, i * 3, i, i % 5)
    });
    let mut comp = one(DsType::Gauge);
    comp.ds.push(ds("b", DsType::Gauge));
    comp.ds.push(DsDef {
        name: "c".into(),
        kind: DsType::Compute,
        heartbeat: 0,
        min: f64::NAN,
        max: f64::NAN,
        rpn: Some("a,b,+,2,/".into()),
    });
    bench("2 GAUGE + COMPUTE", comp, n / 2, &|i| {
        format!("{}:{}", i % 100, i % 7)
    });
}
