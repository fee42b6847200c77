//! engine-load: drive an `engine::Store` with a monitoring workload in virtual time.
//!
//! `engine-load create --store DIR --series 3000 --step 15` makes the series;
//! `engine-load run --store DIR --duration 6h --commit 5m` feeds one update per series per
//! step, committing at every commit boundary of virtual time, as a daemon would with
//! `-w 300`. Splitting the two lets the device harness (bench/device.sh) count only the
//! steady-state writes of `run`.

use engine::{Options, Store};
use ringlet_bench::{parse_duration, Rng, Series};
use rrd::{Cf, DsDef, RraDef, Rrd, Sample, Schema};
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Instant;

const USAGE: &str = "\
usage: engine-load create     --store DIR [--series N] [--step SECS] [--start EPOCH] [--seed N]
                              [--rras default|gmetad]
       engine-load run        --store DIR [--duration 6h] [--commit 5m] [--seed N]
       engine-load open       --store DIR
       engine-load checkpoint --store DIR

create: make N series (default 3000) named host<h>/m<i>.rrd, a third each of 2-decimal gauges,
        counters and constants, each with DS:value:<GAUGE|COUNTER>:<2*step>:U:U and the archives
        AVERAGE 1 PDP x 1 day, AVERAGE and MAX of 20 PDPs x 1 week; then commit and close.
        --rras gmetad: gmetad's default archives instead (AVERAGE 1 x 5856, 4 x 20160,
        40 x 52704). The log ring is $RINGLET_LOG_SIZE (e.g. 512M) or the engine's default (64M).
run:    continue every series from its last update, one value per series per step, for
        --duration of virtual time, committing at every --commit boundary; then close.
        Prints samples, commits, bytes the engine reported writing, and wall-clock rates.
open:   open the store (checkpoint + replay) and print how long recovery took.
checkpoint: write a checkpoint now and print its size.";

struct Args {
    cmd: String,
    store: PathBuf,
    series: u64,
    step: u64,
    start: i64,
    duration: u64,
    commit: u64,
    seed: u64,
    gmetad: bool,
}

fn parse_args() -> Result<Args, String> {
    let mut it = std::env::args().skip(1);
    let cmd = it.next().ok_or("missing command")?;
    if cmd == "--help" || cmd == "-h" {
        return Err(String::new());
    }
    let mut a = Args {
        cmd,
        store: PathBuf::new(),
        series: 3000,
        step: 15,
        start: 1_790_000_000,
        duration: 6 * 3600,
        commit: 300,
        seed: 1,
        gmetad: false,
    };
    while let Some(flag) = it.next() {
        let val = it.next().ok_or(format!("{flag} needs a value"))?;
        let num = || {
            val.parse::<u64>()
                .map_err(|_| format!("{flag}: not a number: {val}"))
        };
        match flag.as_str() {
            "--store" => a.store = PathBuf::from(&val),
            "--series" => a.series = num()?,
            "--step" => a.step = parse_duration(&val)?,
            "--start" => a.start = num()? as i64,
            "--duration" => a.duration = parse_duration(&val)?,
            "--commit" => a.commit = parse_duration(&val)?,
            "--seed" => a.seed = num()?,
            "--rras" => match val.as_str() {
                "default" => a.gmetad = false,
                "gmetad" => a.gmetad = true,
                _ => return Err(format!("--rras: default or gmetad, not {val}")),
            },
            _ => return Err(format!("unknown option {flag}")),
        }
    }
    if a.store.as_os_str().is_empty() {
        return Err("--store is required".into());
    }
    Ok(a)
}

fn name(i: u64) -> String {
    format!("host{}/m{}.rrd", i / 50, i % 50)
}

/// The inverse of [`name`].
fn index_of(name: &str) -> Option<u64> {
    let (h, m) = name
        .strip_prefix("host")?
        .strip_suffix(".rrd")?
        .split_once("/m")?;
    Some(h.parse::<u64>().ok()? * 50 + m.parse::<u64>().ok()?)
}

fn schema(kind: &str, step: u64, gmetad: bool) -> Schema {
    let day = 86_400 / step;
    let week = 7 * 86_400 / (step * 20);
    let rra = |cf, pdp_cnt, row_cnt| RraDef {
        cf,
        xff: 0.5,
        pdp_cnt,
        row_cnt,
    };
    let rra = if gmetad {
        // gmetad's defaults: AVERAGE 1 PDP x 5856, 4 x 20160, 40 x 52704 (78,720 rows).
        vec![
            rra(Cf::Average, 1, 5856),
            rra(Cf::Average, 4, 20160),
            rra(Cf::Average, 40, 52704),
        ]
    } else {
        vec![
            rra(Cf::Average, 1, day),
            rra(Cf::Average, 20, week),
            rra(Cf::Max, 20, week),
        ]
    };
    Schema {
        step,
        ds: vec![DsDef {
            name: "value".into(),
            kind: rrd::DsType::from_name(kind).expect("known DS type"),
            heartbeat: 2 * step,
            min: f64::NAN,
            max: f64::NAN,
            rpn: None,
        }],
        rra,
    }
}

fn create(a: &Args) -> Result<(), String> {
    let opts = Options {
        log_bytes: engine::log_size_from_env()?,
        ..Options::default()
    };
    let mut store = Store::open(&a.store, opts).map_err(|e| e.to_string())?;
    let mut rng = Rng::new(a.seed);
    for i in 0..a.series {
        let s = Series::new(i, &mut rng);
        let rrd = Rrd::new(schema(s.kind.ds_type(), a.step, a.gmetad), a.start);
        store
            .create(&name(i), rrd, true)
            .map_err(|e| e.to_string())?;
    }
    store.close().map_err(|e| e.to_string())?;
    println!(
        "created {} series, step {} s, in {}",
        a.series,
        a.step,
        a.store.display()
    );
    Ok(())
}

fn run(a: &Args) -> Result<(), String> {
    let mut store = Store::open(
        &a.store,
        Options {
            commit_interval: None,
            ..Options::default()
        },
    )
    .map_err(|e| e.to_string())?;
    let names = store.names();
    if names.is_empty() {
        return Err("the store has no series: run `engine-load create` first".into());
    }
    // Re-create each generator from the seed, then advance past the values already stored:
    // the values only need to look real, not continue the earlier run exactly.
    let mut rng = Rng::new(a.seed ^ 0x5EED);
    let mut series: Vec<(String, Series, i64)> = Vec::with_capacity(names.len());
    for n in names {
        let rrd = store.get(&n).ok_or("series vanished")?;
        let step = rrd.schema.step;
        let last = rrd.last_up;
        // The kind of a series follows from its index, as in `create`.
        let i = index_of(&n).ok_or(format!("{n}: not a series engine-load made"))?;
        series.push((n, Series::new(i, &mut rng), last - last % step as i64));
    }
    let step = a.step as i64;
    let t0 = series.iter().map(|s| s.2).max().unwrap_or(0) + step;
    let t_end = t0 + a.duration as i64;
    let began = Instant::now();
    let (mut samples, mut commits, mut bytes) = (0u64, 0u64, 0u64);
    let mut next_commit = t0 - t0 % a.commit as i64 + a.commit as i64;
    let mut t = t0;
    let mut sink = |_| {};
    while t < t_end {
        for (n, s, _) in series.iter_mut() {
            let sample = Sample {
                time: t,
                usec: 0,
                values: vec![s.next_value(&mut rng)],
            };
            store
                .update(n, &sample, &mut sink)
                .map_err(|e| format!("{n}: {e}"))?;
            samples += 1;
        }
        t += step;
        if t >= next_commit {
            let st = store.commit().map_err(|e| e.to_string())?;
            commits += 1;
            bytes += st.bytes;
            next_commit += a.commit as i64;
        }
    }
    let st = store.commit().map_err(|e| e.to_string())?;
    bytes += st.bytes;
    commits += u64::from(st.samples > 0);
    let ss = store.stats().clone();
    store.close().map_err(|e| e.to_string())?;
    let secs = began.elapsed().as_secs_f64();
    println!(
        "samples={samples} commits={commits} engine_bytes={bytes} engine_bytes_per_sample={:.3} \
         log_bytes={} checkpoints={} checkpoint_bytes={} segment_bytes={} wall_s={secs:.2} \
         samples_per_s={:.0}",
        bytes as f64 / samples.max(1) as f64,
        ss.log_bytes,
        ss.checkpoints,
        ss.checkpoint_bytes,
        ss.segment_bytes,
        samples as f64 / secs
    );
    Ok(())
}

fn open(a: &Args) -> Result<(), String> {
    let t = Instant::now();
    let store = Store::open(&a.store, Options::default()).map_err(|e| e.to_string())?;
    let r = store.recovery();
    println!(
        "open_s={:.3} series={} checkpoint_generation={} records_replayed={} samples_replayed={}",
        t.elapsed().as_secs_f64(),
        store.names().len(),
        r.checkpoint_generation,
        r.records_replayed,
        r.samples_replayed
    );
    store.close().map_err(|e| e.to_string())
}

fn checkpoint(a: &Args) -> Result<(), String> {
    let mut store = Store::open(&a.store, Options::default()).map_err(|e| e.to_string())?;
    let bytes = store.checkpoint().map_err(|e| e.to_string())?;
    println!("checkpoint_bytes={bytes} series={}", store.names().len());
    store.close().map_err(|e| e.to_string())
}

fn main() -> ExitCode {
    let args = match parse_args() {
        Ok(a) => a,
        Err(e) => {
            if !e.is_empty() {
                eprintln!("engine-load: {e}");
            }
            eprintln!("{USAGE}");
            return ExitCode::from(2);
        }
    };
    let r = match args.cmd.as_str() {
        "create" => create(&args),
        "run" => run(&args),
        "open" => open(&args),
        "checkpoint" => checkpoint(&args),
        other => Err(format!("unknown command {other}\n{USAGE}")),
    };
    match r {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("engine-load: {e}");
            ExitCode::FAILURE
        }
    }
}
