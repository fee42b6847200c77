//! engine-load: drive an `engine::Store` with a monitoring workload in virtual time.
//!
//! `engine-load create --store DIR --series 3000 --step 15` makes the series;
//! `engine-load run --store DIR --duration 6h --commit 5m` feeds one update per series per
//! step, committing at every commit boundary of virtual time, as a daemon would with
//! `-w 300`. Splitting the two lets the device harness (bench/device.sh) count only the
//! steady-state writes of `run`.

use engine::{Options, Store};
use ringlet_bench::{parse_duration, Kind, Rng, Series};
use rrd::{Cf, DsDef, RraDef, Rrd, Sample, Schema};
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Instant;

const USAGE: &str = "\
usage: engine-load create     --store DIR [--workload W] [--series N] [--step SECS] [--start EPOCH]
                              [--seed N]
       engine-load run        --store DIR [--workload W] [--duration 6h] [--commit 5m] [--seed N]
                              [--warmup D] [--sample-entries | --block-version V] [--crash]
       engine-load open       --store DIR
       engine-load stat       --store DIR
       engine-load checkpoint --store DIR

--workload (give the same to create and run):
  default   3000 series at 15 s, a third each of 2-decimal gauges, counters and constants, each
            with DS:value:<GAUGE|COUNTER>:<2*step>:U:U and the archives AVERAGE 1 PDP x 1 day,
            AVERAGE and MAX of 20 PDPs x 1 week
  gmetad    the same series with gmetad's default archives (AVERAGE 1 x 5856, 4 x 20160,
            40 x 52704); `--rras gmetad` says the same
  munin     4000 series at 300 s, one DERIVE each, Munin's archives (AVERAGE, MIN and MAX at
            5 min x 576, 30 min x 432, 2 h x 540, 1 day x 450)
  cacti     2000 series at 300 s, two COUNTERs each (Cacti's interface template: AVERAGE and
            MAX at 1 x 600, 6 x 700, 24 x 775, 288 x 797)
  librenms  13000 series at 300 s, two COUNTERs each (LibreNMS's archives: AVERAGE, MIN, MAX
            and LAST at 1 x 2016, 6 x 1440, 24 x 1440, 288 x 1440)
  ganglia   3000 series at 15 s, one 2-decimal GAUGE each, gmetad's archives
  The counters of munin, cacti and librenms grow by increments uniform in 0..50,000
  (log2(50,000) = 15.6 bits of information a value); --series and --step override the sizes.

create: make the series, named host<h>/m<i>.rrd; then commit and close. The log ring is
        $RINGLET_LOG_SIZE (e.g. 512M) or the engine's default (64M).
run:    continue every series from its last update, one value per column per series per step,
        for --duration of virtual time, committing at every --commit boundary; then close.
        Prints samples (values), commits, bytes the engine reported writing, the archives' heap
        bytes (the most seen, and at the end), the records'
        payload bytes and where their bytes went, and wall-clock rates. --warmup D runs D of
        virtual time first, not counted (the codec learns each series' figures afresh at
        every open and checkpoint; a store that runs for days spends most commits after that).
        --crash ends without closing (no mark of a clean close, no checkpoint at the close),
        as a process killed after its last commit.
        --sample-entries writes the records as stores did before the sample block (one
        Samples entry a series), --block-version 1 as they did before its version 2 (no
        rows, Rice-coded lengths), 2 as before its version 3 (rows against the stream's
        predictor), to compare (3, the current one, is the default); --block-v1 is
        --block-version 1.
open:   open the store (checkpoint + replay) and print how long recovery took; then close it.
stat:   open it as a reader of one series does (nothing written) and print the log since the
        checkpoint it replays (bytes, pieces, records).
checkpoint: write a checkpoint now and print its size.";

/// A workload's series: how many, their step, DS type and value kind per column, archives.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Workload {
    Default,
    Gmetad,
    Munin,
    Cacti,
    Librenms,
    Ganglia,
}

impl Workload {
    fn parse(s: &str) -> Result<Workload, String> {
        Ok(match s {
            "default" => Workload::Default,
            "gmetad" => Workload::Gmetad,
            "munin" => Workload::Munin,
            "cacti" => Workload::Cacti,
            "librenms" => Workload::Librenms,
            "ganglia" => Workload::Ganglia,
            _ => {
                return Err(format!(
                    "--workload: default, gmetad, munin, cacti, librenms or ganglia, not {s}"
                ))
            }
        })
    }

    /// Default (series, step).
    fn size(self) -> (u64, u64) {
        match self {
            Workload::Default | Workload::Gmetad | Workload::Ganglia => (3000, 15),
            Workload::Munin => (4000, 300),
            Workload::Cacti => (2000, 300),
            Workload::Librenms => (13_000, 300),
        }
    }

    /// The value kind of each column of series `i`.
    fn columns(self, i: u64) -> Vec<Kind> {
        match self {
            Workload::Default | Workload::Gmetad => {
                vec![[Kind::Gauge, Kind::Counter, Kind::Constant][(i % 3) as usize]]
            }
            Workload::Ganglia => vec![Kind::Gauge],
            Workload::Munin => vec![Kind::Walk],
            Workload::Cacti | Workload::Librenms => vec![Kind::Walk, Kind::Walk],
        }
    }
}

struct Args {
    cmd: String,
    store: PathBuf,
    series: u64,
    step: u64,
    start: i64,
    duration: u64,
    warmup: u64,
    commit: u64,
    sample_entries: bool,
    /// run: end without closing, as a process killed after its last commit.
    crash: bool,
    block_version: u8,
    seed: u64,
    workload: Workload,
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
        series: 0,
        step: 0,
        start: 1_790_000_000,
        duration: 6 * 3600,
        warmup: 0,
        sample_entries: false,
        crash: false,
        block_version: 0,
        commit: 300,
        seed: 1,
        workload: Workload::Default,
    };
    while let Some(flag) = it.next() {
        if flag == "--sample-entries" {
            a.sample_entries = true;
            continue;
        }
        if flag == "--block-v1" {
            a.block_version = 1;
            continue;
        }
        if flag == "--crash" {
            a.crash = true;
            continue;
        }
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
            "--warmup" => a.warmup = parse_duration(&val)?,
            "--block-version" => {
                a.block_version = match val.as_str() {
                    "1" => 1,
                    "2" => 2,
                    "3" => 3,
                    _ => return Err(format!("--block-version: 1, 2 or 3, not {val}")),
                }
            }
            "--commit" => a.commit = parse_duration(&val)?,
            "--seed" => a.seed = num()?,
            "--rras" => match val.as_str() {
                "default" => a.workload = Workload::Default,
                "gmetad" => a.workload = Workload::Gmetad,
                _ => return Err(format!("--rras: default or gmetad, not {val}")),
            },
            "--workload" => a.workload = Workload::parse(&val)?,
            _ => return Err(format!("unknown option {flag}")),
        }
    }
    if a.store.as_os_str().is_empty() {
        return Err("--store is required".into());
    }
    let (series, step) = a.workload.size();
    if a.series == 0 {
        a.series = series;
    }
    if a.step == 0 {
        a.step = step;
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

fn schema(w: Workload, i: u64, step: u64) -> Schema {
    let rra = |cf, pdp_cnt, row_cnt| RraDef {
        cf,
        xff: 0.5,
        pdp_cnt,
        row_cnt,
        par: [0; 5],
    };
    let each = |cfs: &[Cf], rows: &[(u64, u64)]| -> Vec<RraDef> {
        cfs.iter()
            .flat_map(|&cf| rows.iter().map(move |&(p, r)| rra(cf, p, r)))
            .collect()
    };
    let rra = match w {
        Workload::Default => {
            let day = 86_400 / step;
            let week = 7 * 86_400 / (step * 20);
            vec![
                rra(Cf::Average, 1, day),
                rra(Cf::Average, 20, week),
                rra(Cf::Max, 20, week),
            ]
        }
        // gmetad's defaults: AVERAGE 1 PDP x 5856, 4 x 20160, 40 x 52704 (78,720 rows).
        Workload::Gmetad | Workload::Ganglia => {
            each(&[Cf::Average], &[(1, 5856), (4, 20160), (40, 52704)])
        }
        Workload::Munin => each(
            &[Cf::Average, Cf::Min, Cf::Max],
            &[(1, 576), (6, 432), (24, 540), (288, 450)],
        ),
        Workload::Cacti => each(
            &[Cf::Average, Cf::Max],
            &[(1, 600), (6, 700), (24, 775), (288, 797)],
        ),
        Workload::Librenms => each(
            &[Cf::Average, Cf::Min, Cf::Max, Cf::Last],
            &[(1, 2016), (6, 1440), (24, 1440), (288, 1440)],
        ),
    };
    let kinds = w.columns(i);
    let ds_type = |k: Kind| match (w, k) {
        (Workload::Munin, _) => "DERIVE",
        (_, k) => k.ds_type(),
    };
    let names: &[&str] = if kinds.len() == 2 {
        &["traffic_in", "traffic_out"]
    } else {
        &["value"]
    };
    Schema {
        step,
        ds: kinds
            .iter()
            .zip(names)
            .map(|(&k, name)| DsDef {
                name: (*name).into(),
                kind: rrd::DsType::from_name(ds_type(k)).expect("known DS type"),
                heartbeat: 2 * step,
                min: if kinds.len() == 2 { 0.0 } else { f64::NAN },
                max: f64::NAN,
                rpn: None,
            })
            .collect(),
        rra,
    }
}

fn create(a: &Args) -> Result<(), String> {
    let opts = Options {
        log_bytes: engine::log_size_from_env()?,
        ..Options::default()
    };
    let mut store = Store::open(&a.store, opts).map_err(|e| e.to_string())?;
    for i in 0..a.series {
        let rrd = Rrd::new(schema(a.workload, i, a.step), a.start);
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
            sample_entries: a.sample_entries,
            block_version: a.block_version,
            spill_bytes: engine::spill_bytes_from_env()?,
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
    let mut series: Vec<(String, Vec<Series>, i64)> = Vec::with_capacity(names.len());
    for n in names {
        let rrd = store.get(&n).ok_or("series vanished")?;
        let step = rrd.schema.step;
        let last = rrd.last_up;
        // The kind of a series follows from its index, as in `create`.
        let i = index_of(&n).ok_or(format!("{n}: not a series engine-load made"))?;
        let cols = a
            .workload
            .columns(i)
            .into_iter()
            .map(|k| Series::with_kind(k, &mut rng))
            .collect();
        series.push((n, cols, last - last % step as i64));
    }
    let step = a.step as i64;
    let t0 = series.iter().map(|s| s.2).max().unwrap_or(0) + step;
    let measured_from = t0 + a.warmup as i64;
    let t_end = measured_from + a.duration as i64;
    let began = Instant::now();
    let (mut samples, mut commits, mut bytes) = (0u64, 0u64, 0u64);
    // What the warm-up wrote, taken off at the end: (samples, commits, bytes, stats).
    let mut warm: Option<(u64, u64, u64, engine::StoreStats)> = None;
    let mut dev0 = None;
    if a.warmup == 0 {
        warm = Some((0, 0, 0, store.stats().clone()));
        dev0 = device_snapshot(&a.store);
    }
    let mut next_commit = t0 - t0 % a.commit as i64 + a.commit as i64;
    let mut t = t0;
    let mut sink = |_| {};
    // The archives' heap bytes (rows not stored yet, open chunks, chunk tables), the most
    // seen at every 12th commit.
    let mut heap_most = 0usize;
    while t < t_end {
        for (n, s, _) in series.iter_mut() {
            let sample = Sample {
                time: t,
                usec: 0,
                values: s.iter_mut().map(|c| c.next_value(&mut rng)).collect(),
            };
            store
                .update(n, &sample, &mut sink)
                .map_err(|e| format!("{n}: {e}"))?;
            samples += s.len() as u64;
        }
        t += step;
        if t >= next_commit {
            let st = store.commit().map_err(|e| e.to_string())?;
            commits += 1;
            bytes += st.bytes;
            next_commit += a.commit as i64;
            if commits % 12 == 0 {
                heap_most = heap_most.max(store.archive_heap_bytes());
            }
            if warm.is_none() && t >= measured_from {
                warm = Some((samples, commits, bytes, store.stats().clone()));
                dev0 = device_snapshot(&a.store);
            }
        }
    }
    let st = store.commit().map_err(|e| e.to_string())?;
    bytes += st.bytes;
    commits += u64::from(st.samples > 0);
    let mut ss = store.stats().clone();
    let heap_end = store.archive_heap_bytes();
    let dev1 = device_snapshot(&a.store);
    println!(
        "log_since_checkpoint={} log_ring={} pieces_since_checkpoint={}",
        store.log_since_checkpoint(),
        store.log_capacity(),
        store.pieces_since_checkpoint()
    );
    if a.crash {
        // The mark of a clean close stays as the last open found it: a record after it.
        drop(store);
    } else {
        store.close().map_err(|e| e.to_string())?;
    }
    let secs = began.elapsed().as_secs_f64();
    let (ws, wc, wb, w) = warm.unwrap_or((0, 0, 0, engine::StoreStats::default()));
    samples -= ws;
    commits -= wc;
    bytes -= wb;
    ss.log_bytes -= w.log_bytes;
    ss.record_bytes -= w.record_bytes;
    ss.record_cost = ss.record_cost.since(&w.record_cost);
    ss.checkpoints -= w.checkpoints;
    ss.checkpoint_bytes -= w.checkpoint_bytes;
    ss.segment_bytes -= w.segment_bytes;
    ss.open_chunk_bytes -= w.open_chunk_bytes;
    ss.spills -= w.spills;
    ss.spill_bytes -= w.spill_bytes;
    let c = &ss.record_cost;
    let per = |bits: u64| bits as f64 / 8.0 / samples.max(1) as f64;
    if let (Some(d0), Some(d1)) = (dev0, dev1) {
        // What reached the device while the measured commits were made (not the close).
        println!(
            "device: writes={} bytes={} flushes={} bytes_per_sample={:.3} bytes_per_commit={:.0}",
            d1.0 - d0.0,
            d1.1 - d0.1,
            d1.2 - d0.2,
            (d1.1 - d0.1) as f64 / samples.max(1) as f64,
            (d1.1 - d0.1) as f64 / commits.max(1) as f64
        );
    }
    println!("archive heap bytes: most {heap_most} at the end {heap_end}");
    println!(
        "record bytes a sample: series {:.3} times {:.3} values {:.3} entries {:.3} framing {:.3} \
         padding {:.3}",
        per(c.series),
        per(c.times),
        per(c.values),
        per(c.entries),
        per(c.framing),
        per(c.padding)
    );
    println!(
        "samples={samples} commits={commits} engine_bytes={bytes} engine_bytes_per_sample={:.3} \
         log_bytes={} record_bytes={} record_bytes_per_sample={:.3} checkpoints={} checkpoint_bytes={} segment_bytes={} open_chunk_bytes={} spills={} \
         spill_bytes={} wall_s={secs:.2} samples_per_s={:.0}",
        bytes as f64 / samples.max(1) as f64,
        ss.log_bytes,
        ss.record_bytes,
        ss.record_bytes as f64 / samples.max(1) as f64,
        ss.checkpoints,
        ss.checkpoint_bytes,
        ss.segment_bytes,
        ss.open_chunk_bytes,
        ss.spills,
        ss.spill_bytes,
        samples as f64 / secs
    );
    Ok(())
}

/// The block device holding `dir`, after its file system was synced (`sync -f`): (writes,
/// bytes written, flushes) from `/sys/dev/block/MAJ:MIN/stat`. None where the device has no
/// statistics (tmpfs, overlay).
fn device_snapshot(dir: &std::path::Path) -> Option<(u64, u64, u64)> {
    use std::os::unix::fs::MetadataExt;
    let synced = std::process::Command::new("sync")
        .arg("-f")
        .arg(dir)
        .status()
        .ok()?;
    if !synced.success() {
        return None;
    }
    let dev = std::fs::metadata(dir).ok()?.dev();
    let major = ((dev >> 8) & 0xfff) | ((dev >> 32) & !0xfff);
    let minor = (dev & 0xff) | ((dev >> 12) & !0xff);
    let text = std::fs::read_to_string(format!("/sys/dev/block/{major}:{minor}/stat")).ok()?;
    let f: Vec<u64> = text
        .split_whitespace()
        .filter_map(|x| x.parse().ok())
        .collect();
    // Fields: writes completed (4), sectors written (6), flushes completed (14, newer kernels).
    Some((*f.get(4)?, f.get(6)? * 512, f.get(14).copied().unwrap_or(0)))
}

fn open(a: &Args) -> Result<(), String> {
    let t = Instant::now();
    let opts = Options {
        spill_bytes: engine::spill_bytes_from_env()?,
        ..Options::default()
    };
    let store = Store::open(&a.store, opts).map_err(|e| e.to_string())?;
    let r = store.recovery();
    println!(
        "open_s={:.3} series={} checkpoint_generation={} records_replayed={} samples_replayed={} \
         log_since_checkpoint={} log_ring={}",
        t.elapsed().as_secs_f64(),
        store.names().len(),
        r.checkpoint_generation,
        r.records_replayed,
        r.samples_replayed,
        store.log_since_checkpoint(),
        store.log_capacity()
    );
    store.close().map_err(|e| e.to_string())
}

/// What a reader of one series meets, read as one (nothing is written).
fn stat(a: &Args) -> Result<(), String> {
    let opts = Options {
        only: Some(Vec::new()),
        ..Options::default()
    };
    let store = Store::open(&a.store, opts).map_err(|e| e.to_string())?;
    let r = store.recovery();
    println!(
        "log_since_checkpoint={} log_ring={} pieces_since_checkpoint={} records_replayed={} \
         searched_past_end={}",
        store.log_since_checkpoint(),
        store.log_capacity(),
        store.pieces_since_checkpoint(),
        r.records_replayed,
        r.searched_past_end
    );
    Ok(())
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
        "stat" => stat(&args),
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
