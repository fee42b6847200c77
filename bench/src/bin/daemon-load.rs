//! daemon-load: drive an rrdcached-protocol daemon (ringlet serve or rrdcached) over a socket.
//!
//! It optionally CREATEs N series, then sends U updates spread over them in virtual time
//! (series `i` gets `start+10*k` for k = 1, 2, ...), on C concurrent connections (series `i`
//! on connection `i mod C`, so each series' updates stay in order). `--mode update` sends one
//! `UPDATE file t:v` line per update, pipelined with at most `--window` requests outstanding,
//! and checks every reply is `0 errors, enqueued 1 value(s).`; `--mode batch` sends BATCH,
//! `--lines-per-batch` UPDATE lines of `--values-per-line` values each, `.`, and checks the
//! batch ends in `0 errors`. Requests are generated before the clock starts, so the timed part
//! is the daemon's ingest plus the socket traffic. With `--pid` it also reports the daemon's CPU
//! seconds (utime+stime of /proc/PID/stat) during the timed part and its peak RSS (VmHWM).
//! `--check K` FETCHes K series afterwards and compares every row with the values sent.

use ringlet_bench::{Rng, Series};
use std::io::{self, BufRead, BufReader, Read, Write};
use std::net::{Shutdown, TcpStream};
use std::os::unix::net::UnixStream;
use std::process::ExitCode;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::time::Instant;

const STEP: i64 = 10;

const USAGE: &str = "\
usage: daemon-load --connect unix:/path|host:port [options]

  --create              CREATE the series first (not timed)
  --series N            number of series (default 10000), files s<i>.rrd
  --updates U           total updates (default 2000000; rounded down to a multiple of N)
  --conns C             concurrent connections (default 4)
  --mode update|batch   one UPDATE line per update, or BATCH blocks (default update)
  --window W            update mode: requests outstanding per connection (default 1000)
  --values-per-line V   batch mode: values per UPDATE line (default 10)
  --lines-per-batch L   batch mode: UPDATE lines per BATCH (default 1000)
  --start EPOCH         create -b, first update at EPOCH+10 (default 1790000000)
  --seed N              value generator seed (default 1)
  --pid PID             report the daemon's CPU seconds, peak RSS and bytes written (write_bytes)
                        from /proc/PID
  --check K             afterwards FETCH K series and compare with the values sent
  --flush               afterwards send FLUSHALL and time it (until STATS UpdatesWritten has
                        grown by N): the deferred write work (rrdcached writes the .rrd
                        files, ringlet commits its log), with the daemon's CPU for it
  --label TEXT          put TEXT in the RESULT line

Prints updates, seconds, updates/s, errors (the first error reply is printed), and a
machine-readable `RESULT key=value ...` line.";

#[derive(Clone, Copy, PartialEq, Eq)]
enum Mode {
    Update,
    Batch,
}

#[derive(Clone)]
struct Args {
    connect: String,
    create: bool,
    series: u64,
    updates: u64,
    conns: u64,
    mode: Mode,
    window: u64,
    per_line: u64,
    per_batch: u64,
    start: i64,
    seed: u64,
    pid: Option<u32>,
    check: u64,
    flush: bool,
    label: String,
}

fn parse_args() -> Result<Args, String> {
    let mut a = Args {
        connect: String::new(),
        create: false,
        series: 10_000,
        updates: 2_000_000,
        conns: 4,
        mode: Mode::Update,
        window: 1000,
        per_line: 10,
        per_batch: 1000,
        start: 1_790_000_000,
        seed: 1,
        pid: None,
        check: 0,
        flush: false,
        label: String::new(),
    };
    let mut it = std::env::args().skip(1);
    while let Some(flag) = it.next() {
        match flag.as_str() {
            "-h" | "--help" => return Err(String::new()),
            "--create" => {
                a.create = true;
                continue;
            }
            "--flush" => {
                a.flush = true;
                continue;
            }
            _ => {}
        }
        let val = it.next().ok_or(format!("{flag} needs a value"))?;
        let num = || {
            val.parse::<u64>()
                .map_err(|_| format!("{flag}: not a number: {val}"))
        };
        match flag.as_str() {
            "--connect" => a.connect = val.clone(),
            "--series" => a.series = num()?.max(1),
            "--updates" => a.updates = num()?,
            "--conns" => a.conns = num()?.max(1),
            "--mode" => {
                a.mode = match val.as_str() {
                    "update" => Mode::Update,
                    "batch" => Mode::Batch,
                    _ => return Err(format!("--mode: update or batch, not {val}")),
                }
            }
            "--window" => a.window = num()?.max(1),
            "--values-per-line" => a.per_line = num()?.max(1),
            "--lines-per-batch" => a.per_batch = num()?.max(1),
            "--start" => a.start = num()? as i64,
            "--seed" => a.seed = num()?,
            "--pid" => a.pid = Some(num()? as u32),
            "--check" => a.check = num()?,
            "--label" => a.label = val.clone(),
            _ => return Err(format!("unknown option {flag}")),
        }
    }
    if a.connect.is_empty() {
        return Err("--connect is required".into());
    }
    Ok(a)
}

/// A connection to the daemon, unix or TCP.
enum Stream {
    Unix(UnixStream),
    Tcp(TcpStream),
}

impl Stream {
    fn connect(addr: &str) -> io::Result<Stream> {
        if let Some(p) = addr.strip_prefix("unix:") {
            return UnixStream::connect(p).map(Stream::Unix);
        }
        if addr.starts_with('/') {
            return UnixStream::connect(addr).map(Stream::Unix);
        }
        let s = TcpStream::connect(addr)?;
        s.set_nodelay(true)?;
        Ok(Stream::Tcp(s))
    }

    fn try_clone(&self) -> io::Result<Stream> {
        match self {
            Stream::Unix(s) => s.try_clone().map(Stream::Unix),
            Stream::Tcp(s) => s.try_clone().map(Stream::Tcp),
        }
    }

    fn shutdown_write(&self) {
        let _ = match self {
            Stream::Unix(s) => s.shutdown(Shutdown::Write),
            Stream::Tcp(s) => s.shutdown(Shutdown::Write),
        };
    }
}

impl Read for Stream {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        match self {
            Stream::Unix(s) => s.read(buf),
            Stream::Tcp(s) => s.read(buf),
        }
    }
}

impl Write for Stream {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        match self {
            Stream::Unix(s) => s.write(buf),
            Stream::Tcp(s) => s.write(buf),
        }
    }
    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// What a request's replies must look like.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Expect {
    /// One reply, exactly this status line.
    Line(&'static str),
    /// BATCH: `0 Go ahead...`, then `N errors` and N lines; N must be 0.
    Batch,
}

/// The bytes one connection sends, cut into requests.
struct Plan {
    bytes: Vec<u8>,
    /// End offset of each request in `bytes`.
    ends: Vec<usize>,
    expect: Expect,
    updates: u64,
}

/// Series `i`'s value generator: its own seeded stream, so a checker can replay it.
fn generator(seed: u64, i: u64) -> (Series, Rng) {
    let mut rng = Rng::new(seed.wrapping_mul(1_000_003).wrapping_add(i));
    let s = Series::new(i, &mut rng);
    (s, rng)
}

fn create_plan(a: &Args, conn: u64) -> Plan {
    let mut p = Plan {
        bytes: Vec::new(),
        ends: Vec::new(),
        expect: Expect::Line("0 RRD created OK"),
        updates: 0,
    };
    let mut i = conn;
    while i < a.series {
        let line = format!(
            "CREATE s{i}.rrd -b {} -s {STEP} DS:value:GAUGE:{}:U:U RRA:AVERAGE:0.5:1:8640 \
             RRA:AVERAGE:0.5:30:2016 RRA:MAX:0.5:30:2016\n",
            a.start,
            2 * STEP
        );
        p.bytes.extend_from_slice(line.as_bytes());
        p.ends.push(p.bytes.len());
        i += a.conns;
    }
    p
}

fn update_plan(a: &Args, conn: u64, steps: u64) -> Plan {
    use std::fmt::Write as _;
    let mut gens: Vec<(u64, Series, Rng)> = (conn..a.series)
        .step_by(a.conns as usize)
        .map(|i| {
            let (s, r) = generator(a.seed, i);
            (i, s, r)
        })
        .collect();
    let mut p = Plan {
        bytes: Vec::new(),
        ends: Vec::new(),
        expect: match a.mode {
            Mode::Update => Expect::Line("0 errors, enqueued 1 value(s)."),
            Mode::Batch => Expect::Batch,
        },
        updates: 0,
    };
    let per_line = if a.mode == Mode::Update {
        1
    } else {
        a.per_line
    };
    let mut line = String::new();
    let mut lines_in_batch = 0;
    let mut k0 = 1;
    while k0 <= steps {
        let k1 = (k0 + per_line - 1).min(steps);
        for (i, s, r) in gens.iter_mut() {
            if a.mode == Mode::Batch && lines_in_batch == 0 {
                p.bytes.extend_from_slice(b"BATCH\n");
            }
            line.clear();
            let _ = write!(line, "UPDATE s{i}.rrd");
            for k in k0..=k1 {
                let _ = write!(line, " {}:{}", a.start + STEP * k as i64, s.next_value(r));
                p.updates += 1;
            }
            line.push('\n');
            p.bytes.extend_from_slice(line.as_bytes());
            if a.mode == Mode::Update {
                p.ends.push(p.bytes.len());
            } else {
                lines_in_batch += 1;
                if lines_in_batch == a.per_batch {
                    p.bytes.extend_from_slice(b".\n");
                    p.ends.push(p.bytes.len());
                    lines_in_batch = 0;
                }
            }
        }
        k0 = k1 + 1;
    }
    if lines_in_batch > 0 {
        p.bytes.extend_from_slice(b".\n");
        p.ends.push(p.bytes.len());
    }
    p
}

#[derive(Default)]
struct Outcome {
    errors: u64,
    first_error: Option<String>,
}

/// Send `plan` on `s`, at most `window` requests outstanding, reading and checking every reply.
fn drive(s: Stream, plan: &Plan, window: u64) -> Result<Outcome, String> {
    let done = Arc::new((Mutex::new(0u64), Condvar::new()));
    let stop = Arc::new(AtomicU64::new(0));
    let rs = s.try_clone().map_err(|e| format!("clone socket: {e}"))?;
    let total = plan.ends.len() as u64;
    let expect = plan.expect;
    let reader = {
        let done = Arc::clone(&done);
        let stop = Arc::clone(&stop);
        std::thread::spawn(move || read_replies(rs, total, expect, &done, &stop))
    };
    let mut w = s;
    let chunk = (window / 4).max(1);
    let mut sent = 0u64;
    let mut from = 0usize;
    let (lock, cv) = &*done;
    while sent < total {
        let n = chunk.min(total - sent);
        {
            let mut d = lock.lock().map_err(|_| "reader panicked")?;
            while sent + n - *d > window && stop.load(Ordering::Relaxed) == 0 {
                d = cv.wait(d).map_err(|_| "reader panicked")?;
            }
        }
        if stop.load(Ordering::Relaxed) != 0 {
            break;
        }
        let to = plan.ends[(sent + n - 1) as usize];
        w.write_all(&plan.bytes[from..to])
            .map_err(|e| format!("write: {e}"))?;
        from = to;
        sent += n;
    }
    let out = reader.join().map_err(|_| "reader panicked")?;
    w.shutdown_write();
    out
}

fn read_replies(
    s: Stream,
    total: u64,
    expect: Expect,
    done: &(Mutex<u64>, Condvar),
    stop: &AtomicU64,
) -> Result<Outcome, String> {
    let fail = |m: String| {
        stop.store(1, Ordering::Relaxed);
        done.1.notify_all();
        Err(m)
    };
    let mut r = BufReader::with_capacity(256 * 1024, s);
    let mut out = Outcome::default();
    let mut line = String::new();
    let mut completed = 0u64;
    let mut go_ahead = false;
    let mut since_notify = 0u64;
    while completed < total {
        line.clear();
        match r.read_line(&mut line) {
            Ok(0) => {
                return fail(format!(
                    "daemon closed after {completed} of {total} replies"
                ))
            }
            Ok(_) => {}
            Err(e) => return fail(format!("read: {e}")),
        }
        let status = line.trim_end_matches(['\n', '\r']);
        let n: i64 = status
            .split_once(' ')
            .map_or(status, |(n, _)| n)
            .parse()
            .unwrap_or(i64::MIN);
        let mut extra = Vec::new();
        for _ in 0..n.max(0) {
            let mut l = String::new();
            match r.read_line(&mut l) {
                Ok(0) | Err(_) => return fail("daemon closed inside a reply".into()),
                Ok(_) => extra.push(l.trim_end().to_string()),
            }
        }
        let bad = match expect {
            Expect::Line(want) => {
                completed += 1;
                (status != want).then(|| (1, status.to_string()))
            }
            Expect::Batch if !go_ahead => {
                go_ahead = true;
                (!status.starts_with("0 Go ahead")).then(|| (1, status.to_string()))
            }
            Expect::Batch => {
                go_ahead = false;
                completed += 1;
                match status {
                    "0 errors" => None,
                    _ if status.ends_with(" errors") && n > 0 => {
                        Some((n as u64, format!("{status}: {}", extra.join(" | "))))
                    }
                    _ => Some((1, status.to_string())),
                }
            }
        };
        if let Some((count, text)) = bad {
            if out.first_error.is_none() {
                eprintln!("daemon-load: error reply: {text}");
                out.first_error = Some(text);
            }
            out.errors += count;
        }
        since_notify += 1;
        if since_notify >= 64 || r.buffer().is_empty() || completed == total {
            since_notify = 0;
            let mut d = done.0.lock().map_err(|_| "writer panicked".to_string())?;
            *d = completed;
            done.1.notify_all();
        }
    }
    Ok(out)
}

/// Run one plan per connection, concurrently; returns (errors, first error, seconds).
fn run_plans(a: &Args, plans: Vec<Plan>, window: u64) -> Result<(Outcome, f64), String> {
    let streams: Vec<Stream> = (0..plans.len())
        .map(|_| Stream::connect(&a.connect).map_err(|e| format!("connect {}: {e}", a.connect)))
        .collect::<Result<_, _>>()?;
    let plans = Arc::new(plans);
    let t0 = Instant::now();
    let handles: Vec<_> = streams
        .into_iter()
        .enumerate()
        .map(|(c, s)| {
            let plans = Arc::clone(&plans);
            std::thread::spawn(move || drive(s, &plans[c], window))
        })
        .collect();
    let mut total = Outcome::default();
    for h in handles {
        let o = h.join().map_err(|_| "connection thread panicked")??;
        total.errors += o.errors;
        if total.first_error.is_none() {
            total.first_error = o.first_error;
        }
    }
    Ok((total, t0.elapsed().as_secs_f64()))
}

/// utime+stime of a process, in clock ticks.
fn cpu_ticks(pid: u32) -> Option<u64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let rest = &stat[stat.rfind(')')? + 2..];
    let f: Vec<&str> = rest.split(' ').collect();
    // Fields 14 and 15 of stat(5); `rest` starts at field 3.
    Some(f.get(11)?.parse::<u64>().ok()? + f.get(12)?.parse::<u64>().ok()?)
}

/// `write_bytes` of /proc/PID/io: bytes the process caused to be written to storage (counted
/// when pages are dirtied; 0 on tmpfs).
fn write_bytes(pid: u32) -> Option<u64> {
    let io = std::fs::read_to_string(format!("/proc/{pid}/io")).ok()?;
    let l = io.lines().find_map(|l| l.strip_prefix("write_bytes:"))?;
    l.trim().parse().ok()
}

fn vm_hwm_kb(pid: u32) -> Option<u64> {
    let st = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let l = st.lines().find(|l| l.starts_with("VmHWM:"))?;
    l.split_whitespace().nth(1)?.parse().ok()
}

fn clk_tck() -> u64 {
    std::process::Command::new("getconf")
        .arg("CLK_TCK")
        .output()
        .ok()
        .and_then(|o| String::from_utf8(o.stdout).ok())
        .and_then(|s| s.trim().parse().ok())
        .unwrap_or(100)
}

/// STATS' UpdatesWritten.
fn updates_written(s: &mut Stream, r: &mut BufReader<Stream>) -> Result<u64, String> {
    s.write_all(b"STATS\n").map_err(|e| e.to_string())?;
    let mut status = String::new();
    r.read_line(&mut status).map_err(|e| e.to_string())?;
    let n: i64 = status
        .split_once(' ')
        .and_then(|(n, _)| n.parse().ok())
        .unwrap_or(-1);
    let mut written = None;
    for _ in 0..n.max(0) {
        let mut l = String::new();
        r.read_line(&mut l).map_err(|e| e.to_string())?;
        if let Some(v) = l.trim_end().strip_prefix("UpdatesWritten: ") {
            written = v.parse().ok();
        }
    }
    written.ok_or_else(|| format!("STATS without UpdatesWritten: {}", status.trim_end()))
}

/// FLUSHALL, then wait until every series has been written; returns seconds.
fn flush_all(a: &Args) -> Result<f64, String> {
    let mut s = Stream::connect(&a.connect).map_err(|e| format!("connect: {e}"))?;
    let mut r = BufReader::new(s.try_clone().map_err(|e| e.to_string())?);
    let before = updates_written(&mut s, &mut r)?;
    let t0 = Instant::now();
    s.write_all(b"FLUSHALL\n").map_err(|e| e.to_string())?;
    let mut status = String::new();
    r.read_line(&mut status).map_err(|e| e.to_string())?;
    if !status.starts_with("0 ") {
        return Err(format!("FLUSHALL: {}", status.trim_end()));
    }
    while updates_written(&mut s, &mut r)? < before + a.series {
        if t0.elapsed().as_secs() > 600 {
            return Err("FLUSHALL: not all series written after 600 s".into());
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    Ok(t0.elapsed().as_secs_f64())
}

/// FETCH K series and compare every row with the values the generator sent.
fn check(a: &Args, steps: u64) -> Result<(), String> {
    let mut s = Stream::connect(&a.connect).map_err(|e| format!("connect: {e}"))?;
    let mut r = BufReader::new(s.try_clone().map_err(|e| e.to_string())?);
    let k = a.check.min(a.series);
    let mut rows_ok = 0u64;
    for j in 0..k {
        let i = j * a.series / k;
        let (mut ser, mut rng) = generator(a.seed, i);
        let req = format!(
            "FETCH s{i}.rrd AVERAGE {} {}\n",
            a.start,
            a.start + STEP * steps as i64
        );
        s.write_all(req.as_bytes()).map_err(|e| e.to_string())?;
        let mut status = String::new();
        r.read_line(&mut status).map_err(|e| e.to_string())?;
        let n: i64 = status
            .split_once(' ')
            .and_then(|(n, _)| n.parse().ok())
            .unwrap_or(-1);
        if n <= 0 {
            return Err(format!("FETCH s{i}.rrd: {}", status.trim_end()));
        }
        let mut got = std::collections::BTreeMap::new();
        for _ in 0..n {
            let mut l = String::new();
            r.read_line(&mut l).map_err(|e| e.to_string())?;
            if let Some((t, v)) = l.trim_end().split_once(": ") {
                if let (Ok(t), Ok(v)) = (t.parse::<i64>(), v.parse::<f64>()) {
                    got.insert(t, v);
                }
            }
        }
        for step in 1..=steps {
            let t = a.start + STEP * step as i64;
            let want: f64 = ser
                .next_value(&mut rng)
                .parse()
                .map_err(|_| "generator gave a non-number")?;
            match got.get(&t) {
                // rrdtool's PDP arithmetic (value x seconds / seconds) may move the last bit.
                Some(&v) if (v - want).abs() <= want.abs() * 1e-12 => rows_ok += 1,
                other => return Err(format!("FETCH s{i}.rrd at {t}: got {other:?}, sent {want}")),
            }
        }
    }
    println!("check: {k} series, {rows_ok} rows equal to the values sent");
    Ok(())
}

fn run(a: &Args) -> Result<bool, String> {
    let conns = a.conns.min(a.series);
    let a = &Args { conns, ..a.clone() };
    if a.create {
        let plans: Vec<Plan> = (0..conns).map(|c| create_plan(a, c)).collect();
        let (o, secs) = run_plans(a, plans, a.window)?;
        println!(
            "create: {} series in {secs:.2} s, {} errors",
            a.series, o.errors
        );
        if o.errors > 0 {
            return Ok(false);
        }
    }
    let steps = a.updates / a.series;
    let gen0 = Instant::now();
    let plans: Vec<Plan> = std::thread::scope(|sc| {
        let hs: Vec<_> = (0..conns)
            .map(|c| sc.spawn(move || update_plan(a, c, steps)))
            .collect();
        hs.into_iter().filter_map(|h| h.join().ok()).collect()
    });
    if plans.len() as u64 != conns {
        return Err("generator thread panicked".into());
    }
    let updates: u64 = plans.iter().map(|p| p.updates).sum();
    let bytes: usize = plans.iter().map(|p| p.bytes.len()).sum();
    eprintln!(
        "generated {updates} updates, {bytes} bytes in {:.2} s",
        gen0.elapsed().as_secs_f64()
    );
    let window = match a.mode {
        Mode::Update => a.window,
        // Whole batches: one in flight while the next is sent.
        Mode::Batch => 2,
    };
    let before = a.pid.and_then(cpu_ticks);
    let written0 = a.pid.and_then(write_bytes);
    let (o, secs) = run_plans(a, plans, window)?;
    let after = a.pid.and_then(cpu_ticks);
    let rate = updates as f64 / secs;
    let mode = match a.mode {
        Mode::Update => "update",
        Mode::Batch => "batch",
    };
    println!(
        "{mode}: {updates} updates in {secs:.3} s = {rate:.0} updates/s, {} errors",
        o.errors
    );
    let mut result = format!(
        "RESULT label={} mode={mode} conns={conns} series={} updates={updates} seconds={secs:.3} \
         rate={rate:.0} errors={}",
        if a.label.is_empty() { "-" } else { &a.label },
        a.series,
        o.errors
    );
    if let (Some(pid), Some(b), Some(e)) = (a.pid, before, after) {
        let cpu = (e - b) as f64 / clk_tck() as f64;
        let per100k = cpu * 100_000.0 / updates.max(1) as f64;
        let hwm = vm_hwm_kb(pid).unwrap_or(0);
        println!(
            "daemon pid {pid}: {cpu:.2} CPU s, {per100k:.3} CPU s per 100k updates, peak RSS {} MB",
            hwm / 1024
        );
        result += &format!(" cpu={cpu:.2} cpu_per_100k={per100k:.3} rss_kb={hwm}");
    }
    if a.flush {
        let c0 = a.pid.and_then(cpu_ticks);
        let fsecs = flush_all(a)?;
        let c1 = a.pid.and_then(cpu_ticks);
        print!("flushall: {fsecs:.3} s");
        result += &format!(" flush_seconds={fsecs:.3}");
        if let (Some(b), Some(e)) = (c0, c1) {
            let cpu = (e - b) as f64 / clk_tck() as f64;
            print!(", daemon {cpu:.2} CPU s");
            result += &format!(" flush_cpu={cpu:.2}");
        }
        println!();
    }
    // What the daemon wrote for the updates (and for FLUSHALL's work, if asked for).
    if let (Some(w0), Some(w1)) = (written0, a.pid.and_then(write_bytes)) {
        let bytes = w1.saturating_sub(w0);
        let per = bytes as f64 / updates.max(1) as f64;
        println!("daemon wrote {bytes} bytes to storage, {per:.2} per update");
        result += &format!(" disk_bytes={bytes} disk_per_update={per:.2}");
    }
    println!("{result}");
    if a.check > 0 {
        check(a, steps)?;
    }
    Ok(o.errors == 0)
}

fn main() -> ExitCode {
    let a = match parse_args() {
        Ok(a) => a,
        Err(e) => {
            if e.is_empty() {
                println!("{USAGE}");
                return ExitCode::SUCCESS;
            }
            eprintln!("daemon-load: {e}\n{USAGE}");
            return ExitCode::from(2);
        }
    };
    match run(&a) {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::FAILURE,
        Err(e) => {
            eprintln!("daemon-load: {e}");
            ExitCode::FAILURE
        }
    }
}
