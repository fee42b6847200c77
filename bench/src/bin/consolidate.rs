//! consolidate: in-process consolidation throughput on one core.
//!
//! Parses and applies update arguments (`<time>:<value>`) to many in-memory RRDs, as the
//! engine does for every accepted sample, and prints updates per second. No I/O, no store:
//! this is the ceiling the engine and the daemon build on.
//!
//! usage: consolidate [--series N] [--updates-per-series N] [--seed N]

use ringlet_bench::{Rng, Series};
use rrd::update::parse_update_arg;
use rrd::{Cf, DsDef, RraDef, Rrd, Schema};
use std::time::Instant;

fn main() {
    let mut series_n = 1000u64;
    let mut per = 2000u64;
    let mut seed = 1u64;
    let args: Vec<String> = std::env::args().skip(1).collect();
    for pair in args.chunks(2) {
        let v = pair.get(1).and_then(|s| s.parse().ok());
        match (pair[0].as_str(), v) {
            ("--series", Some(v)) => series_n = v,
            ("--updates-per-series", Some(v)) => per = v,
            ("--seed", Some(v)) => seed = v,
            _ => {
                eprintln!("usage: consolidate [--series N] [--updates-per-series N] [--seed N]");
                std::process::exit(2);
            }
        }
    }
    let step = 10u64;
    let start = 1_790_000_000i64;
    let mut rng = Rng::new(seed);
    let mut gens = Vec::new();
    let mut rrds = Vec::new();
    for i in 0..series_n {
        let g = Series::new(i, &mut rng);
        let schema = Schema {
            step,
            ds: vec![DsDef {
                name: "value".into(),
                kind: rrd::DsType::from_name(g.kind.ds_type()).expect("known type"),
                heartbeat: 2 * step,
                min: f64::NAN,
                max: f64::NAN,
                rpn: None,
            }],
            // collectd's default archives for a 10 s step (see reference/peers.md).
            rra: [(1, 1200), (7, 1235), (50, 1210), (223, 1202), (2635, 1201)]
                .iter()
                .flat_map(|&(p, r)| {
                    [Cf::Average, Cf::Min, Cf::Max].map(|cf| RraDef {
                        cf,
                        xff: 0.1,
                        pdp_cnt: p,
                        row_cnt: r,
                        par: [0; 5],
                    })
                })
                .collect(),
        };
        rrds.push(Rrd::new(schema, start));
        gens.push(g);
    }
    // Pre-render the arguments so the timing covers parse + apply only.
    let mut args = Vec::with_capacity((series_n * per) as usize);
    for k in 0..per {
        let t = start + ((k + 1) * step) as i64;
        for g in gens.iter_mut() {
            args.push(format!("{t}:{}", g.next_value(&mut rng)));
        }
    }
    let began = Instant::now();
    let mut rows = 0u64;
    let mut i = 0usize;
    for _ in 0..per {
        for rrd in rrds.iter_mut() {
            let s = parse_update_arg(&rrd.schema, &args[i], None, (0, 0)).expect("valid update");
            rrd.apply(&s, &mut |_| rows += 1).expect("applies");
            i += 1;
        }
    }
    let secs = began.elapsed().as_secs_f64();
    let n = series_n * per;
    println!(
        "updates={n} series={series_n} rras_per_series=15 seconds={secs:.3} updates_per_s={:.0} rows_written={rows}",
        n as f64 / secs
    );
}
