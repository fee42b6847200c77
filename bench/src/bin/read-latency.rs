//! read-latency: how long a small request (LAST) waits while another client's large FETCH is
//! being answered (issue 18, defect 7: the store lock was held while a whole reply was built).
//!
//! Against a running daemon on a unix socket: CREATE `big.rrd` (one GAUGE, step 1, one
//! AVERAGE archive of `--rows` rows, default 1,000,000) and `small.rrd`, fill `big.rrd` with
//! `--fill` values, then for `--seconds` (default 10) one thread FETCHes the whole of
//! `big.rrd` again and again while another sends `LAST small.rrd` every millisecond, timing
//! each; then the same LAST loop with no FETCH running. Prints FETCH times and LAST latency
//! percentiles for both phases.

use std::io::{BufRead, BufReader, Write};
use std::os::unix::net::UnixStream;
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

const USAGE: &str = "usage: read-latency --connect unix:/path [--rows N] [--fill N] [--seconds S]";
const T0: i64 = 1_790_000_000;

struct Conn {
    r: BufReader<UnixStream>,
}

impl Conn {
    fn new(path: &str) -> std::io::Result<Conn> {
        Ok(Conn {
            r: BufReader::new(UnixStream::connect(path)?),
        })
    }

    /// Send one request; read its reply (status line and its lines); the reply's bytes.
    fn request(&mut self, line: &str) -> std::io::Result<(String, usize)> {
        self.r.get_mut().write_all(format!("{line}\n").as_bytes())?;
        let mut status = String::new();
        self.r.read_line(&mut status)?;
        let n: i64 = status
            .split(' ')
            .next()
            .and_then(|v| v.parse().ok())
            .unwrap_or(-1);
        let mut bytes = status.len();
        let mut l = String::new();
        for _ in 0..n.max(0) {
            l.clear();
            bytes += self.r.read_line(&mut l)?;
        }
        Ok((status, bytes))
    }
}

fn percentiles(mut v: Vec<f64>) -> String {
    if v.is_empty() {
        return "no samples".into();
    }
    v.sort_by(f64::total_cmp);
    let p = |q: f64| v[((v.len() - 1) as f64 * q) as usize];
    format!(
        "n={} p50={:.3} ms p99={:.3} ms max={:.3} ms",
        v.len(),
        p(0.5),
        p(0.99),
        v[v.len() - 1]
    )
}

/// LAST small.rrd every millisecond until `stop`; latencies in ms.
fn last_loop(path: &str, stop: &AtomicBool) -> std::io::Result<Vec<f64>> {
    let mut c = Conn::new(path)?;
    let mut out = Vec::new();
    while !stop.load(Ordering::Relaxed) {
        let t = Instant::now();
        let (status, _) = c.request("LAST small.rrd")?;
        out.push(t.elapsed().as_secs_f64() * 1000.0);
        if !status.starts_with("0 ") {
            return Err(std::io::Error::other(format!("LAST: {status}")));
        }
        std::thread::sleep(Duration::from_millis(1));
    }
    Ok(out)
}

fn run() -> Result<(), String> {
    let mut path = String::new();
    let (mut rows, mut fill, mut seconds) = (1_000_000u64, 10_000u64, 10u64);
    let mut it = std::env::args().skip(1);
    while let Some(a) = it.next() {
        let mut v = || it.next().ok_or(USAGE.to_string());
        match a.as_str() {
            "--connect" => {
                let s = v()?;
                path = s.strip_prefix("unix:").unwrap_or(&s).to_string();
            }
            "--rows" => rows = v()?.parse().map_err(|_| USAGE)?,
            "--fill" => fill = v()?.parse().map_err(|_| USAGE)?,
            "--seconds" => seconds = v()?.parse().map_err(|_| USAGE)?,
            _ => return Err(USAGE.into()),
        }
    }
    if path.is_empty() {
        return Err(USAGE.into());
    }
    let io = |e: std::io::Error| e.to_string();
    let mut c = Conn::new(&path).map_err(io)?;
    for (f, n) in [("big.rrd", rows), ("small.rrd", 10)] {
        let (s, _) = c
            .request(&format!(
                "CREATE {f} -b {T0} -s 1 DS:x:GAUGE:10:U:U RRA:AVERAGE:0.5:1:{n}"
            ))
            .map_err(io)?;
        if !s.starts_with("0 ") {
            return Err(format!("CREATE {f}: {s}"));
        }
    }
    for k in 1..=fill {
        let v = (k * 7919) % 1000;
        c.request(&format!("UPDATE big.rrd {}:{v}.25", T0 + k as i64))
            .map_err(io)?;
    }
    c.request(&format!("UPDATE small.rrd {}:1", T0 + 1))
        .map_err(io)?;
    c.request("FLUSHALL").map_err(io)?;
    let end = T0 + fill as i64;
    let fetch_line = format!("FETCH big.rrd AVERAGE {} {end}", end - rows as i64);
    let t = Instant::now();
    let (s, bytes) = c.request(&fetch_line).map_err(io)?;
    println!(
        "one FETCH of {rows} rows: {:.3} s, {bytes} bytes ({})",
        t.elapsed().as_secs_f64(),
        s.trim_end()
    );

    for busy in [true, false] {
        let stop = Arc::new(AtomicBool::new(false));
        let fetches = Arc::new(AtomicU64::new(0));
        let fetcher = busy.then(|| {
            let (stop, fetches, path, line) = (
                stop.clone(),
                fetches.clone(),
                path.clone(),
                fetch_line.clone(),
            );
            std::thread::spawn(move || -> std::io::Result<Vec<f64>> {
                let mut c = Conn::new(&path)?;
                let mut times = Vec::new();
                while !stop.load(Ordering::Relaxed) {
                    let t = Instant::now();
                    c.request(&line)?;
                    times.push(t.elapsed().as_secs_f64() * 1000.0);
                    fetches.fetch_add(1, Ordering::Relaxed);
                }
                Ok(times)
            })
        });
        let (stop2, path2) = (stop.clone(), path.clone());
        let lasts = std::thread::spawn(move || last_loop(&path2, &stop2));
        std::thread::sleep(Duration::from_secs(seconds));
        stop.store(true, Ordering::Relaxed);
        let lat = lasts.join().map_err(|_| "LAST thread")?.map_err(io)?;
        match fetcher {
            Some(h) => {
                let times = h.join().map_err(|_| "FETCH thread")?.map_err(io)?;
                println!(
                    "while FETCHes of {rows} rows run: FETCH {}",
                    percentiles(times)
                );
                println!(
                    "while FETCHes of {rows} rows run: LAST  {}",
                    percentiles(lat)
                );
            }
            None => println!(
                "idle:                                 LAST  {}",
                percentiles(lat)
            ),
        }
    }
    Ok(())
}

fn main() -> ExitCode {
    match run() {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("read-latency: {e}");
            ExitCode::FAILURE
        }
    }
}
