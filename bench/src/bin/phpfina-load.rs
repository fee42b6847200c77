//! phpfina-load: emoncms's PHPFina write load on a directory, for `bench/phpfina.sh`.
//!
//! Feeds (`--feeds 40:10,52:60`: 40 feeds at 10 s, 52 at 60 s, the anchor site) get
//! one point an interval for `--duration` of virtual time from `--start`, written as emoncms
//! writes its files (our own code from the documented format):
//! - `--flush 0`: emoncms with its buffer off (the default): every point is a post: the
//!   `.dat` opened read-write (`c+`), its size taken, the point written at its position (NaN
//!   padding over a gap), closed; the first point of a feed rewrites its `.meta` (start time).
//! - `--flush SECS`: emoncms's feedwriter (Redis buffer): points held, and every SECS of
//!   virtual time each feed's held points written in one post_multiple (one open, one write
//!   of the block, close).
//!
//! The values are a random walk with one decimal, a NaN now and then (a missed reading).
//! Virtual time goes as fast as the writes allow; every `--sync-every` seconds of it the file
//! system is synced (`--syncfs MNT`: the kernel's periodic writeback at the accelerated
//! pace), and every `--window` seconds `--flush-sock` gets a FLUSHALL (ringlet's commit
//! window). `--phase setup` makes the feeds (meta with start 0, empty data) and exits.
//! Prints `RESULT points=N feeds=F wall_s=S`.

use std::io::{BufRead, Write};
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

struct Args {
    dir: PathBuf,
    feeds: Vec<(usize, u32)>,
    start: u32,
    duration: u32,
    flush: u32,
    sync_every: u32,
    syncfs: Option<PathBuf>,
    window: u32,
    flush_sock: Option<PathBuf>,
    setup: bool,
}

const USAGE: &str = "usage: phpfina-load --dir DIR [--feeds 40:10,52:60] --start T [--duration 1d]
       [--flush SECS] [--syncfs MNT] [--sync-every 30] [--window 300] [--flush-sock PATH]
       [--phase setup|run]";

fn secs(v: &str) -> Result<u32, String> {
    let (n, unit) = match v.char_indices().last() {
        Some((i, c)) if c.is_ascii_alphabetic() => (&v[..i], c),
        _ => (v, 's'),
    };
    let n: u32 = n.parse().map_err(|_| format!("bad duration {v}"))?;
    let m = match unit {
        's' => 1,
        'm' => 60,
        'h' => 3600,
        'd' => 86_400,
        _ => return Err(format!("bad duration {v}")),
    };
    Ok(n * m)
}

fn parse() -> Result<Args, String> {
    let mut a = Args {
        dir: PathBuf::new(),
        feeds: vec![(40, 10), (52, 60)],
        start: 0,
        duration: 86_400,
        flush: 0,
        sync_every: 30,
        syncfs: None,
        window: 300,
        flush_sock: None,
        setup: false,
    };
    let mut it = std::env::args().skip(1);
    while let Some(k) = it.next() {
        let mut v = || it.next().ok_or_else(|| format!("{k} needs a value"));
        match k.as_str() {
            "--dir" => a.dir = PathBuf::from(v()?),
            "--feeds" => {
                a.feeds = v()?
                    .split(',')
                    .map(|p| {
                        let (n, iv) = p.split_once(':').ok_or("N:INTERVAL")?;
                        Ok((
                            n.parse().map_err(|_| "N")?,
                            iv.parse().map_err(|_| "INTERVAL")?,
                        ))
                    })
                    .collect::<Result<_, &str>>()?
            }
            "--start" => a.start = v()?.parse().map_err(|_| "--start: a time")?,
            "--duration" => a.duration = secs(&v()?)?,
            "--flush" => a.flush = secs(&v()?)?,
            "--sync-every" => a.sync_every = secs(&v()?)?,
            "--syncfs" => a.syncfs = Some(PathBuf::from(v()?)),
            "--window" => a.window = secs(&v()?)?,
            "--flush-sock" => a.flush_sock = Some(PathBuf::from(v()?)),
            "--phase" => a.setup = v()? == "setup",
            "-h" | "--help" => return Err(USAGE.into()),
            _ => return Err(format!("unknown argument {k}\n{USAGE}")),
        }
    }
    if a.dir.as_os_str().is_empty() {
        return Err(USAGE.into());
    }
    Ok(a)
}

fn meta_bytes(interval: u32, start: u32) -> Vec<u8> {
    [0u32, 0, interval, start]
        .iter()
        .flat_map(|w| w.to_le_bytes())
        .collect()
}

/// emoncms's create_meta: the file opened `wb` (truncated), written, closed.
fn write_meta(dir: &Path, id: usize, interval: u32, start: u32) -> std::io::Result<()> {
    let mut f = std::fs::File::create(dir.join(format!("{id}.meta")))?;
    for w in meta_bytes(interval, start).chunks(4) {
        f.write_all(w)?;
    }
    Ok(())
}

struct Feed {
    id: usize,
    interval: u32,
    start: u32,
    value: f32,
    held: Vec<(u32, f32)>,
}

/// One post_multiple: the points written at their positions (NaN over gaps) in one write.
fn post(dir: &Path, f: &mut Feed, points: &[(u32, f32)]) -> std::io::Result<()> {
    let file = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .open(dir.join(format!("{}.dat", f.id)))?;
    let npoints = file.metadata()?.len() / 4;
    let mut buf: Vec<u8> = Vec::new();
    for &(t, v) in points {
        let t = t - t % f.interval;
        if f.start == 0 {
            f.start = t;
            write_meta(dir, f.id, f.interval, t)?;
        }
        let pos = u64::from((t - f.start) / f.interval);
        if pos < npoints {
            file.write_all_at(&v.to_le_bytes(), 4 * pos)?;
            continue;
        }
        let have = npoints + buf.len() as u64 / 4;
        for _ in have..pos {
            buf.extend_from_slice(&f32::NAN.to_le_bytes());
        }
        buf.extend_from_slice(&v.to_le_bytes());
    }
    if !buf.is_empty() {
        file.write_all_at(&buf, 4 * npoints)?;
    }
    Ok(())
}

fn syncfs(p: &Path) {
    if let Ok(f) = std::fs::File::open(p) {
        use std::os::fd::AsRawFd;
        // SAFETY: a valid descriptor, kept open for the call.
        unsafe { libc::syncfs(f.as_raw_fd()) };
    }
}

fn flush_all(sock: &Path) -> Result<(), String> {
    let mut s = std::os::unix::net::UnixStream::connect(sock).map_err(|e| e.to_string())?;
    s.write_all(b"FLUSHALL\n").map_err(|e| e.to_string())?;
    let mut line = String::new();
    std::io::BufReader::new(&s)
        .read_line(&mut line)
        .map_err(|e| e.to_string())?;
    if line.starts_with("0 ") {
        Ok(())
    } else {
        Err(format!("FLUSHALL: {line}"))
    }
}

fn main() {
    let a = match parse() {
        Ok(a) => a,
        Err(e) => {
            eprintln!("{e}");
            std::process::exit(2);
        }
    };
    if let Err(e) = run(&a) {
        eprintln!("phpfina-load: {e}");
        std::process::exit(1);
    }
}

fn run(a: &Args) -> Result<(), String> {
    let io = |e: std::io::Error| e.to_string();
    let mut feeds = Vec::new();
    let mut id = 1;
    for &(n, interval) in &a.feeds {
        for _ in 0..n {
            feeds.push(Feed {
                id,
                interval,
                start: 0,
                value: 100.0 + id as f32 * 7.0,
                held: Vec::new(),
            });
            id += 1;
        }
    }
    if a.setup {
        for f in &feeds {
            write_meta(&a.dir, f.id, f.interval, 0).map_err(io)?;
            std::fs::File::create(a.dir.join(format!("{}.dat", f.id))).map_err(io)?;
        }
        println!("RESULT feeds={}", feeds.len());
        return Ok(());
    }
    let mut rng = testkit::Rng::seeded(7);
    let t0 = std::time::Instant::now();
    let mut points = 0u64;
    for t in a.start..a.start + a.duration {
        for f in feeds.iter_mut() {
            if t % f.interval != 0 {
                continue;
            }
            let step = (rng.below(41) as f32 - 20.0) / 10.0;
            f.value = ((f.value + step) * 10.0).round() / 10.0;
            let v = if rng.below(500) == 0 {
                f32::NAN
            } else {
                f.value
            };
            points += 1;
            if a.flush == 0 {
                post(&a.dir, f, &[(t, v)]).map_err(io)?;
            } else {
                f.held.push((t, v));
            }
        }
        let since = t - a.start + 1;
        if a.flush > 0 && since.is_multiple_of(a.flush) {
            for f in feeds.iter_mut() {
                let held = std::mem::take(&mut f.held);
                if !held.is_empty() {
                    post(&a.dir, f, &held).map_err(io)?;
                }
            }
        }
        if let Some(sock) = &a.flush_sock {
            if since.is_multiple_of(a.window) {
                flush_all(sock)?;
            }
        }
        if let Some(m) = &a.syncfs {
            if since.is_multiple_of(a.sync_every) {
                syncfs(m);
            }
        }
    }
    println!(
        "RESULT points={points} feeds={} wall_s={:.1}",
        feeds.len(),
        t0.elapsed().as_secs_f64()
    );
    Ok(())
}
