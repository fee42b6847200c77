//! The `ringlet` binary: an rrdtool-compatible CLI over a ringlet store.
//!
//! `ringlet [--store DIR] <command> <rrdtool's arguments>` prints what rrdtool 1.7.2 prints
//! for the same arguments (stdout byte for byte, `ERROR: <message>` on stderr, exit status 1
//! on failure), so scripts can swap the binary name. This file reads the global options and
//! the clock, decides where a command runs, and dispatches (`serve` goes to the `server`
//! crate, the commands to the `cli` crate).
//!
//! Where a command runs: with `--daemon ADDR` or `$RRDCACHED_ADDRESS`, in that daemon
//! (`server::remote`); else, when the store is held by a running `ringlet serve`, in that
//! daemon, found by the address it records in the store; else on the store itself. The
//! output is the same in every case.

mod export;
mod handover;
mod import;
mod migrate;
mod opts;
mod pipe;
mod placed;

/// jemalloc, not glibc's malloc: a daemon holds a few dozen small allocations per series
/// (a million series: tens of millions), and glibc's 8-byte header and 32-byte minimum on
/// each, with its arenas' fragmentation, cost a fifth of the daemon's memory
/// (docs/ARCHITECTURE.md, "Memory and reads"). Built with `--features system-alloc`, the
/// binary uses the C library's malloc instead, so that heaptrack can profile the daemon.
#[cfg(not(feature = "system-alloc"))]
#[global_allocator]
static ALLOC: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;

/// jemalloc's options, read at its start: two arenas (glibc gave each allocating thread one,
/// and each connection's kept the pages of the queues it grew), and freed pages returned
/// within seconds, by a background thread that only the daemon starts
/// (`server::sys::start_allocator_thread`: a CLI command that started one at its first
/// allocation spent a thread's start and stop on every run).
#[cfg(not(feature = "system-alloc"))]
#[export_name = "_rjem_malloc_conf"]
static MALLOC_CONF: &u8 = &b"narenas:2,dirty_decay_ms:5000,muzzy_decay_ms:0\0"[0];

use cli::{Ctx, Outcome};
use std::io::Write;
use std::path::Path;
use std::time::{SystemTime, UNIX_EPOCH};

pub(crate) fn now() -> (i64, i64) {
    let d = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default();
    (d.as_secs() as i64, i64::from(d.subsec_micros()))
}

fn run(argv: &[String]) -> Outcome {
    let mut store_flag: Option<String> = None;
    let mut i = 0;
    while i < argv.len() {
        let a = &argv[i];
        if a == "--store" {
            let Some(v) = argv.get(i + 1) else {
                return Outcome::err("option requires argument -- 'store'");
            };
            store_flag = Some(v.clone());
            i += 2;
        } else if let Some(v) = a.strip_prefix("--store=") {
            store_flag = Some(v.to_string());
            i += 1;
        } else {
            break;
        }
    }
    let Some(cmd) = argv.get(i).map(String::as_str) else {
        return Outcome::ok(cli::HELP.into());
    };
    let args = &argv[i + 1..];
    let dir = cli::store::store_dir(store_flag.as_deref());
    // A user in the ringlet group with no store of their own: the system's, through its
    // daemon (not for serve: a user's daemon has its own store).
    let dir = if cmd == "serve" {
        dir
    } else {
        cli::store::own_or_system(dir, store_flag.is_some())
    };
    if cmd == "stats" {
        std::process::exit(stats(args, &dir));
    }
    cli::store::load_base(&dir);
    if cmd == "serve" {
        std::process::exit(server::run(args, dir));
    }
    if cmd == "repair" {
        std::process::exit(repair(args, &dir));
    }
    if cmd == "export" {
        std::process::exit(export::run(args, &dir));
    }
    if cmd == "import" {
        std::process::exit(import::run(args, &dir));
    }
    if cmd == "migrate" {
        std::process::exit(migrate::run(args, &dir));
    }
    if cmd == "-" {
        std::process::exit(pipe::run(&dir));
    }
    let (flag, args) = cli::take_daemon(cmd, args);
    if cli::graph::is_graph(cmd) {
        // One drawing process for the graph: the daemon's, started ahead, or one started
        // here before the store is read.
        let mut renderer = cli::graph::Renderer::new();
        let mut drawn = match daemon_for(flag, &dir) {
            Daemon::At(_, mut c) => {
                let mut image = Vec::new();
                let out = cli::graph::run_or_draw(
                    &mut renderer,
                    true,
                    cmd,
                    &args,
                    &mut image,
                    &mut |cmd, a| c.run(cmd, a, now()),
                );
                cli::graph::Drawn {
                    stdout: image,
                    error: out.error,
                    ..Default::default()
                }
            }
            Daemon::Unreachable(_, e) => cli::graph::Drawn {
                error: Some(e),
                ..Default::default()
            },
            Daemon::None => {
                if !args.is_empty() {
                    renderer.start();
                }
                // The store opened once for every series the graph reads (else each on its
                // own, which gives rrdtool's error for a store that is not there).
                let names: Vec<String> = cli::graph::files(&args)
                    .iter()
                    .filter_map(|n| cli::store::normalize(n).ok())
                    .collect();
                let st = (dir.exists() && !names.is_empty())
                    .then(|| cli::store::open_reading_all(&dir, &names, "").ok())
                    .flatten();
                let ctx = Ctx::local(&dir, now());
                renderer.draw(cmd, &args, &mut |name, cf, start, end, step| match (
                    &st,
                    cli::store::normalize(name),
                ) {
                    (Some(s), Ok(n)) => match s.get(&n) {
                        Some(rrd) => cli::graph::rows(rrd, name, cf, start, end, step),
                        None => Err(format!("opening '{name}': No such file or directory")),
                    },
                    _ => cli::graph::rows_from(cli::dispatch(
                        cli::graph::FETCH_ROWS,
                        &cli::graph::fetch_rows_args(name, cf, start, end, step),
                        &ctx,
                    )),
                })
            }
        };
        renderer.release();
        drawn.save();
        let mut stdout = std::io::stdout().lock();
        let _ = stdout.write_all(&drawn.stdout);
        let _ = stdout.flush();
        return Outcome {
            error: drawn.error,
            ..Outcome::default()
        };
    }
    match daemon_for(flag, &dir) {
        // Run in the daemon: `restore`'s input is read here, `dump`'s file written here.
        Daemon::At(_, mut c) => c.run(cmd, &args, now()),
        Daemon::Unreachable(_, e) => Outcome::err(e),
        Daemon::None => {
            let ctx = Ctx::local(&dir, now());
            let mut out = cli::dispatch(cmd, &args, &ctx);
            // The store is closed (committed): the new series get their placeholders.
            if let Err(e) = placed::write(&dir, &ctx.written.into_inner()) {
                out.error.get_or_insert(e);
            }
            out
        }
    }
}

/// Where a command goes.
pub(crate) enum Daemon {
    /// The daemon at this address, connected.
    At(String, cli::client::Client),
    /// The daemon named by `--daemon` or `$RRDCACHED_ADDRESS` does not answer (the error).
    Unreachable(String, String),
    /// No daemon: the store itself.
    None,
}

/// The address a placeholder written beside the store `dir` names: `$RRDCACHED_ADDRESS`,
/// else the one its daemon recorded, else `ringlet serve`'s default.
pub(crate) fn placeholder_address(dir: &Path) -> String {
    std::env::var("RRDCACHED_ADDRESS")
        .ok()
        .filter(|a| !a.is_empty())
        .or_else(|| cli::client::recorded(dir))
        .unwrap_or_else(|| format!("unix:{}", server::config::DEFAULT_SOCKET))
}

/// The daemon a command goes to: `--daemon`, else `$RRDCACHED_ADDRESS`, else the one that
/// holds the store (its recorded address, if it answers; one connection either way).
pub(crate) fn daemon_for(flag: Option<String>, dir: &Path) -> Daemon {
    let named = flag
        .or_else(|| std::env::var("RRDCACHED_ADDRESS").ok())
        .filter(|a| !a.is_empty());
    if let Some(addr) = named {
        return match cli::client::Client::connect(&addr) {
            Ok(mut c) => {
                c.named = true;
                Daemon::At(addr, c)
            }
            Err(e) => Daemon::Unreachable(addr, e),
        };
    }
    // The system store, for a user other than root who cannot open it: its daemon, found
    // by the address it records, else at the package's socket.
    let system = dir == Path::new(cli::store::SYSTEM_STORE) && server::sys::euid() != 0;
    let addr = cli::client::recorded(dir).or_else(|| {
        (system && Path::new(cli::store::SYSTEM_SOCKET).exists())
            .then(|| format!("unix:{}", cli::store::SYSTEM_SOCKET))
    });
    match addr {
        Some(addr) => match cli::client::Client::connect(&addr) {
            Ok(c) => Daemon::At(addr, c),
            Err(e) if system => {
                let why = cli::store::why_not_system(&addr, &e);
                Daemon::Unreachable(addr, why)
            }
            Err(_) => Daemon::None,
        },
        None => Daemon::None,
    }
}

const REPAIR_USAGE: &str = "\
usage: ringlet [--store DIR] repair

Open a store whose log is damaged before its end (a store that `ringlet serve` and every
command refuse to open, naming the damage): cut the log at the damage, drop the committed
records after it, say how many, and write a checkpoint so that the store opens from then
on. A store that opens as it is is left alone. Stop the daemon that holds the store first.
";

/// `ringlet repair`: the exit status.
fn repair(args: &[String], dir: &Path) -> i32 {
    match opts::parse(args, opts::Takes::default()) {
        Ok(o) if o.help => {
            print!("{REPAIR_USAGE}");
            return 0;
        }
        Ok(o) if o.pos.is_empty() => {}
        _ => {
            eprint!("{REPAIR_USAGE}");
            return 2;
        }
    }
    if !dir.exists() {
        eprintln!("ERROR: no store at {}", dir.display());
        return 1;
    }
    let mut opts = engine::Options {
        commit_interval: None,
        ..engine::Options::default()
    };
    // A store that opens as it is needs no repair.
    match engine::Store::open(dir, opts.clone()) {
        Ok(s) => {
            println!("{}: opens as it is, nothing to repair", dir.display());
            // Not closed: closing writes a checkpoint, and a healthy store is left as it is.
            drop(s);
            return 0;
        }
        Err(engine::Error::Corrupt { .. }) => {}
        Err(e) => {
            eprintln!("ERROR: {e}");
            return 1;
        }
    }
    opts.repair = true;
    match engine::Store::open(dir, opts) {
        Ok(s) => {
            let r = s.recovery().clone();
            match &r.cut {
                Some(c) => println!(
                    "{}: log cut at position {} (file offset {}): {}",
                    dir.display(),
                    c.lsn,
                    c.file_offset,
                    c.reason
                ),
                None => println!("{}: repaired", dir.display()),
            }
            match s.close() {
                Ok(()) => 0,
                Err(e) => {
                    eprintln!("ERROR: {e}");
                    1
                }
            }
        }
        Err(e) => {
            eprintln!("ERROR: cannot repair: {e}");
            1
        }
    }
}

/// `ringlet stats`: ask a running daemon (ringlet serve or rrdcached) for its STATS and print
/// them, one `Key: value` line each; the exit status. The daemon is found as librrd finds
/// it: `-d`/`--daemon ADDR`, else `$RRDCACHED_ADDRESS`, else `unix:/tmp/rrdcached.sock`.
fn stats(args: &[String], dir: &Path) -> i32 {
    let takes = opts::Takes {
        daemon: true,
        ..opts::Takes::default()
    };
    let o = match opts::parse(args, takes) {
        Ok(o) if o.help => {
            print!("{}", cli::client::STATS_USAGE);
            return 0;
        }
        Ok(o) if o.pos.is_empty() => o,
        Ok(_) => {
            eprint!("{}", cli::client::STATS_USAGE);
            return 2;
        }
        Err(e) => {
            eprint!("{}", cli::client::STATS_USAGE);
            eprintln!("ERROR: {e}");
            return 2;
        }
    };
    // As every command finds its daemon: -d, $RRDCACHED_ADDRESS, the store's (issue 62).
    let addr = o
        .daemon
        .or_else(|| std::env::var("RRDCACHED_ADDRESS").ok())
        .filter(|a| !a.is_empty())
        .or_else(|| cli::client::recorded(dir))
        .or_else(|| {
            (dir == Path::new(cli::store::SYSTEM_STORE)
                && Path::new(cli::store::SYSTEM_SOCKET).exists())
            .then(|| format!("unix:{}", cli::store::SYSTEM_SOCKET))
        })
        .unwrap_or_else(|| format!("unix:{}", server::config::DEFAULT_SOCKET));
    match cli::client::stats(&addr) {
        Ok(lines) => {
            let mut out = std::io::stdout().lock();
            for l in lines {
                let _ = writeln!(out, "{l}");
            }
            0
        }
        Err(e) => {
            eprintln!("ERROR: {e}");
            1
        }
    }
}

fn main() {
    let argv: Vec<String> = std::env::args().skip(1).collect();
    if argv.first().map(String::as_str) == Some(cli::drawer::WORKER_ARG) {
        // The drawing process (cli::drawer): before anything else of this binary's.
        std::process::exit(cli::drawer::worker_main());
    }
    let out = run(&argv);
    let mut stdout = std::io::stdout().lock();
    // A closed pipe (`| head`) is not an error worth reporting.
    let _ = stdout.write_all(out.stdout.as_bytes());
    let _ = stdout.flush();
    if let Some(e) = out.error {
        eprintln!("ERROR: {e}");
        std::process::exit(1);
    }
}
