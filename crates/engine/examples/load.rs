//! A write-load driver for device measurements (bench/device.sh): `create` makes N series in
//! a store, `run` feeds one realistic value per series per 15 s step of virtual time and
//! commits every 5 virtual minutes, then closes. Prints the samples written.
//!
//! `load create DIR N` / `load run DIR N HOURS` / `load open DIR 0` (time a recovery) /
//! `load checkpoint DIR 0` (write one, print its size)

use engine::{Options, Store};
use rrd::{Cf, DsDef, DsType, RraDef, Rrd, Sample, Schema};
use std::path::Path;

const START: i64 = 1_700_000_000;
const STEP: i64 = 15;

fn kind(i: usize) -> DsType {
    [DsType::Gauge, DsType::Counter, DsType::Gauge][i % 3]
}

fn schema(i: usize) -> Schema {
    let rra = |cf, pdp_cnt, row_cnt| RraDef {
        cf,
        xff: 0.5,
        pdp_cnt,
        row_cnt,
    };
    Schema {
        step: STEP as u64,
        ds: vec![DsDef {
            name: "value".into(),
            kind: kind(i),
            heartbeat: 2 * STEP as u64,
            min: f64::NAN,
            max: f64::NAN,
            rpn: None,
        }],
        rra: vec![
            rra(Cf::Average, 1, 5760),
            rra(Cf::Average, 20, 2016),
            rra(Cf::Max, 20, 2016),
        ],
    }
}

fn opts() -> Options {
    Options {
        commit_interval: None,
        ..Options::default()
    }
}

fn main() -> Result<(), String> {
    let args: Vec<String> = std::env::args().collect();
    let usage = "usage: load create DIR N | load run DIR N HOURS | load open DIR 0";
    let (cmd, dir) = (
        args.get(1).ok_or(usage)?,
        Path::new(args.get(2).ok_or(usage)?),
    );
    let n: usize = args.get(3).ok_or(usage)?.parse().map_err(|_| usage)?;
    let name = |i: usize| format!("host{}/m{i}.rrd", i / 50);
    let t = std::time::Instant::now();
    let mut store = Store::open(dir, opts()).map_err(|e| e.to_string())?;
    if cmd == "checkpoint" {
        let bytes = store.checkpoint().map_err(|e| e.to_string())?;
        println!(
            "checkpoint of {} series: {bytes} bytes",
            store.names().len()
        );
        return Ok(());
    }
    if cmd == "open" {
        let r = store.recovery();
        println!(
            "open took {:.3} s: checkpoint generation {}, {} records and {} samples replayed",
            t.elapsed().as_secs_f64(),
            r.checkpoint_generation,
            r.records_replayed,
            r.samples_replayed
        );
        return Ok(());
    }
    if cmd == "create" {
        for i in 0..n {
            store
                .create(&name(i), Rrd::new(schema(i), START), false)
                .map_err(|e| e.to_string())?;
        }
        return store.close().map_err(|e| e.to_string());
    }
    let hours: i64 = args.get(4).ok_or(usage)?.parse().map_err(|_| usage)?;
    let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
    let mut rnd = move |m: u64| {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x % m
    };
    let t0 = store.get(&name(0)).ok_or("run `create` first")?.last_up;
    let t0 = if std::env::var_os("LOAD_ALIGN").is_some() {
        t0 - t0 % STEP
    } else {
        t0
    };
    let mut gauge: Vec<i64> = (0..n).map(|i| 2000 + (i as i64 % 17) * 100).collect();
    let mut counter: Vec<u64> = (0..n).map(|i| 1_000_000 * i as u64).collect();
    let steps = hours * 3600 / STEP;
    let mut samples = 0u64;
    for k in 1..=steps {
        let t = t0 + STEP * k;
        for i in 0..n {
            let v = match i % 3 {
                0 => {
                    gauge[i] += rnd(21) as i64 - 10;
                    format!("{}.{:02}", gauge[i] / 100, gauge[i].rem_euclid(100))
                }
                1 => {
                    counter[i] += 40 + rnd(20);
                    counter[i].to_string()
                }
                _ => "1".into(),
            };
            let s = Sample {
                time: t,
                usec: 0,
                values: vec![v],
            };
            store
                .update(&name(i), &s, &mut |_| {})
                .map_err(|e| e.to_string())?;
            samples += 1;
        }
        if k % 20 == 0 {
            store.commit().map_err(|e| e.to_string())?;
        }
    }
    store.close().map_err(|e| e.to_string())?;
    println!("samples={samples}");
    Ok(())
}
