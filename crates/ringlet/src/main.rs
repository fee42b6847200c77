//! The `ringlet` binary: an rrdtool-compatible CLI over a ringlet store.
//!
//! `ringlet [--store DIR] <command> <rrdtool's arguments>` prints what rrdtool 1.7.2 prints
//! for the same arguments (stdout byte for byte, `ERROR: <message>` on stderr, exit status 1
//! on failure), so scripts can swap the binary name. This file reads the global options and
//! the clock and dispatches (`serve` goes to the `server` crate); [`commands`] does the work,
//! [`store`] picks the store and names,
//! [`getopt`] parses options like GNU getopt, [`usage`] holds the per-command usage texts.

mod commands;
mod getopt;
mod pipe;
mod store;
mod usage;

use commands::{Ctx, Outcome};
use std::io::Write;
use std::time::{SystemTime, UNIX_EPOCH};

const HELP: &str = "\
ringlet - an RRD-exact metrics store (rrdtool 1.7.2 compatible command line)

Usage: ringlet [--store DIR] command command_options

Commands (arguments and output as rrdtool's; `ringlet <command>` shows its usage):
  create, update, updatev, fetch, info, first, last, lastupdate, dump, restore, xport
Daemon and pipe mode:
  serve    an rrdcached-compatible daemon over the same store
  stats    print a running daemon's STATS (ringlet stats [-d|--daemon ADDR])
  -        read commands from stdin like `rrdtool -` (OK/ERROR after each; quit ends)

RRD file names are names inside the store (e.g. `db/a.rrd`), not files on disk.
The store is DIR, else $RINGLET_STORE, else $XDG_DATA_HOME/ringlet,
else ~/.local/share/ringlet.

Not supported yet: --daemon, Holt-Winters archives, create --source,
graph, tune, resize.
";

/// rrdtool commands ringlet does not implement.
const NOT_YET: &[&str] = &[
    "graph",
    "graphv",
    "tune",
    "resize",
    "list",
    "flushcached",
    "modify",
];

fn usage_text(cmd: &str, body: &str) -> String {
    format!(
        "ringlet {} (rrdtool 1.7.2 compatible)\n\nUsage: ringlet [--store DIR] {cmd} command_options\n{body}",
        env!("CARGO_PKG_VERSION")
    )
}

fn now() -> (i64, i64) {
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
                return Outcome {
                    stdout: String::new(),
                    error: Some("option requires argument -- 'store'".into()),
                };
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
        return Outcome {
            stdout: HELP.into(),
            error: None,
        };
    };
    let args = &argv[i + 1..];
    if cmd == "stats" {
        std::process::exit(server::client::stats(args));
    }
    if cmd == "serve" {
        let code = server::run(args, store::store_dir(store_flag.as_deref()));
        std::process::exit(code);
    }
    let dir = store::store_dir(store_flag.as_deref());
    if cmd == "-" {
        std::process::exit(pipe::run(&dir));
    }
    dispatch(cmd, args, &dir, None)
}

/// Run one rrdtool command (`cmd` and its arguments) on the store in `dir`, or on `shared`,
/// the store pipe mode keeps open.
pub(crate) fn dispatch(
    cmd: &str,
    args: &[String],
    dir: &std::path::Path,
    shared: Option<&std::cell::RefCell<engine::Store>>,
) -> Outcome {
    if matches!(cmd, "--help" | "-h" | "help" | "--version" | "-v") {
        return Outcome {
            stdout: HELP.into(),
            error: None,
        };
    }
    if NOT_YET.contains(&cmd) {
        return Outcome {
            stdout: String::new(),
            error: Some(format!("ringlet does not support '{cmd}' yet")),
        };
    }
    let Some(body) = usage::usage_of(cmd) else {
        return Outcome {
            stdout: HELP.into(),
            error: None,
        };
    };
    // rrdtool prints a command's usage when it gets no arguments at all; ringlet also for --help.
    if args.is_empty() || args.iter().any(|a| a == "--help") {
        return Outcome {
            stdout: usage_text(cmd, body),
            error: None,
        };
    }
    let ctx = Ctx {
        store_dir: dir,
        now: now(),
        shared,
    };
    match cmd {
        "create" => commands::create(&ctx, args),
        "update" => commands::update(&ctx, args, false),
        "updatev" => commands::update(&ctx, args, true),
        "fetch" => commands::fetch_cmd(&ctx, args),
        "info" => commands::info(&ctx, args),
        "first" => commands::first(&ctx, args),
        "last" => commands::last(&ctx, args),
        "lastupdate" => commands::lastupdate(&ctx, args),
        "dump" => commands::dump(&ctx, args),
        "restore" => commands::restore(&ctx, args),
        _ => commands::xport(&ctx, args),
    }
}

fn main() {
    let argv: Vec<String> = std::env::args().skip(1).collect();
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
