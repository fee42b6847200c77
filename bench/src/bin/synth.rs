//! synth: build a store whose series already hold days of history, without feeding it sample
//! by sample (issue 19's figures need stores with 1, 30 and 365 days of 15-second data for
//! 26,000 series; feeding them through the daemon would take that long).
//!
//! Each series gets gmetad's archives (one GAUGE at step 15; AVERAGE 1 x 5856, 4 x 20160,
//! 40 x 52704) or collectd-like ones (step 10; AVERAGE 6 x 1440, 60 x 4320, 360 x 8760), with
//! the last `--days` of rows filled with noisy values and the rest unknown, as a store fed for
//! that long would hold: each archive is a random walk of 2-decimal values divided by its
//! PDPs per row (a 2-decimal gauge's averages), so values pack as they would. The live state
//! says the last update was at the end of the history (a step boundary). Series are created
//! through `engine::Store` in batches (each batch one commit), then a checkpoint is written
//! (a store that ran that long has checkpointed: its sealed chunks are in segment files) and
//! the store is closed. Prints the series made, the history held, the wall time and the store's size.

use engine::{Options, Store};
use ringlet_bench::Rng;
use rrd::{Rows, RraData, Rrd};
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Instant;

const USAGE: &str = "\
usage: synth --store DIR [--series N] [--days D] [--rras gmetad|collectd] [--end EPOCH] [--seed N]

Defaults: 260 series (1/100 of the Ganglia site), 1 day, gmetad's archives, the history
ending at 1795200000. Series are named cluster/host<h>/metric<i>.rrd, 20 a host. The log
ring is $RINGLET_LOG_SIZE or the engine's default.";

struct Args {
    store: PathBuf,
    series: u64,
    days: u64,
    collectd: bool,
    end: i64,
    seed: u64,
}

fn parse() -> Result<Args, String> {
    let mut a = Args {
        store: PathBuf::new(),
        series: 260,
        days: 1,
        collectd: false,
        end: 1_795_200_000,
        seed: 1,
    };
    let mut it = std::env::args().skip(1);
    while let Some(k) = it.next() {
        let mut v = || {
            it.next()
                .ok_or_else(|| format!("{k} needs a value\n{USAGE}"))
        };
        let num = |s: String| s.parse::<u64>().map_err(|_| format!("{k}: not a number"));
        match k.as_str() {
            "--store" => a.store = PathBuf::from(v()?),
            "--series" => a.series = num(v()?)?,
            "--days" => a.days = num(v()?)?,
            "--rras" => {
                a.collectd = match v()?.as_str() {
                    "gmetad" => false,
                    "collectd" => true,
                    other => return Err(format!("--rras: gmetad or collectd, not {other}")),
                }
            }
            "--end" => a.end = num(v()?)? as i64,
            "--seed" => a.seed = num(v()?)?,
            "-h" | "--help" => return Err(USAGE.into()),
            other => return Err(format!("unknown option {other}\n{USAGE}")),
        }
    }
    if a.store.as_os_str().is_empty() {
        return Err(USAGE.into());
    }
    Ok(a)
}

/// The series' RRD: the schema of `defs`, its archives filled over `days` up to `end`.
fn series(defs: &str, step: u64, end: i64, days: u64, rng: &mut Rng) -> Result<Rrd, String> {
    let mut args = vec![
        "x.rrd".to_string(),
        "--step".into(),
        step.to_string(),
        "--start".into(),
        (end - 10).to_string(),
    ];
    args.extend(defs.split(' ').map(String::from));
    let req = rrd::create::parse_create_with(&args, end, &mut |_| None, &mut |_| false)
        .map_err(|e| e.msg)?;
    let mut rrd = Rrd::new(req.schema, end - 10);
    let history = (days * 86_400) as i64;
    for (a, def) in rrd.schema.rra.clone().iter().enumerate() {
        let span = (step * def.pdp_cnt) as i64;
        let n = def.row_cnt as usize;
        let filled = ((history / span) as usize).min(n);
        let mut vals = vec![rrd::num::DNAN; n];
        // A random walk of 2-decimal values (in hundredths), averaged over the row's PDPs.
        let mut level: i64 = 100 + rng.below(400) as i64;
        for v in vals[n - filled..].iter_mut() {
            level = (level + rng.below(41) as i64 - 20).clamp(0, 100_000);
            *v = if def.pdp_cnt > 1 {
                // The average of pdp_cnt 2-decimal values: hundredths over pdp_cnt.
                let sum = level * def.pdp_cnt as i64 + rng.below(def.pdp_cnt) as i64;
                sum as f64 / 100.0 / def.pdp_cnt as f64
            } else {
                level as f64 / 100.0
            };
        }
        // Row i is (n - 1 - i) rows before the newest, the newest at the last update.
        rrd.rra[a] = RraData {
            cur_row: (n - 1) as u64,
            rows: Rows::from_values(1, &vals),
        };
    }
    rrd.last_up = end - end.rem_euclid(step as i64);
    rrd.last_up_usec = 0;
    Ok(rrd)
}

fn run() -> Result<(), String> {
    let a = parse()?;
    let (step, defs) = if a.collectd {
        (
            10,
            "DS:value:GAUGE:20:U:U RRA:AVERAGE:0.5:6:1440 RRA:AVERAGE:0.5:60:4320 RRA:AVERAGE:0.5:360:8760",
        )
    } else {
        (
            15,
            "DS:sum:GAUGE:120:U:U RRA:AVERAGE:0.5:1:5856 RRA:AVERAGE:0.5:4:20160 RRA:AVERAGE:0.5:40:52704",
        )
    };
    let opts = Options {
        commit_interval: None,
        log_bytes: engine::log_size_from_env()?,
        ..Options::default()
    };
    let t0 = Instant::now();
    let mut store = Store::open(&a.store, opts).map_err(|e| e.to_string())?;
    let mut rng = Rng::new(a.seed);
    for i in 0..a.series {
        let name = format!("cluster/host{}/metric{i}.rrd", i / 20);
        let rrd = series(defs, step, a.end, a.days, &mut rng)?;
        store
            .create(&name, rrd, true)
            .map_err(|e| format!("{name}: {e}"))?;
        if i % 100 == 99 {
            store.commit().map_err(|e| e.to_string())?;
        }
    }
    // A store that ran that long has checkpointed: its sealed chunks are in segment files.
    store.checkpoint().map_err(|e| e.to_string())?;
    store.close().map_err(|e| e.to_string())?;
    let bytes: u64 = std::fs::read_dir(&a.store)
        .map_err(|e| e.to_string())?
        .flatten()
        .filter_map(|e| e.metadata().ok())
        .filter(|m| m.is_file())
        .map(|m| m.len())
        .sum();
    println!(
        "synth: {} series, {} days of history ending at {}, in {:.1} s; store {} bytes",
        a.series,
        a.days,
        a.end,
        t0.elapsed().as_secs_f64(),
        bytes
    );
    Ok(())
}

fn main() -> ExitCode {
    match run() {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("synth: {e}");
            ExitCode::FAILURE
        }
    }
}
