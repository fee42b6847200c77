//! The `ringlet` CLI beside a running daemon: the daemon's side of the `RUN` request.
//!
//! A store is held by one process. So that every `ringlet` command works while `ringlet serve`
//! holds the store (and with rrdtool's `--daemon ADDR` / `$RRDCACHED_ADDRESS`), the CLI sends
//! its command line to the daemon, which runs the very same code (the `cli` crate) on its own
//! store, after applying the queued values the command reads, and sends back what the command
//! printed. The output is therefore byte for byte what `ringlet <command>` prints on the store
//! alone. Files stay on the client's side: `restore`'s XML is read by the client and sent
//! ahead (`RUNINPUT`), and `dump x.rrd out.xml` writes `out.xml` on the client.
//!
//! The wire format is `proto::run`'s, the client `cli::client`. The daemon records its
//! address in `<store>/daemon` while it runs ([`record`]), so that a CLI on the same store
//! finds it (`cli::client::recorded`).

use crate::daemon::Daemon;
use cli::client::address_file;
use cli::Outcome;
use proto::run::{encode, strip_named};
use proto::Response;
use std::path::Path;

/// Record the daemon's address in the store (removed at a clean exit; a stale one is found
/// out by the CLI when nothing answers there).
pub fn record(store: &Path, addr: &str) -> std::io::Result<()> {
    let path = address_file(store);
    let tmp = store.join("daemon.tmp");
    std::fs::write(&tmp, format!("{addr}\n"))?;
    std::fs::rename(tmp, path)
}

/// The daemon's side of RUN: run the command on the store as `ringlet <cmd>` would, after
/// applying the queued values it may read, and make what it wrote current for UPDATE's checks
/// (and durable, for create and restore, as CREATE is).
///
/// With `defer`, a command that wrote a series (create, restore) leaves its commit to the
/// caller, which commits before the answer is sent (a pipelined run of creates commits
/// once); the second value says whether it did.
pub fn serve(
    d: &Daemon,
    now: (i64, i64),
    cmd: &str,
    args: &[String],
    input: Option<&str>,
    defer: bool,
) -> (Response, bool) {
    if let Some(why) = d.unreadable() {
        return (Response::err(why), false);
    }
    if cli::writes(cmd) {
        if d.closing() {
            return (
                Response::err("Shutting down: no more updates are accepted."),
                false,
            );
        }
        if let Some(why) = d.failure() {
            return (Response::err(why), false);
        }
    }
    let (out, owed) = crate::daemon::run::run(d, now, cmd, args, input, defer);
    (encode(out), owed)
}

/// The daemon's side of RUN `commit-session`: every accepted value applied and committed,
/// as FLUSHALL (which `-P` may not allow where RUN is).
pub fn commit(d: &Daemon) -> Response {
    if let Some(why) = d.unreadable().or_else(|| d.failure()) {
        return Response::err(why);
    }
    match d.commit_all() {
        Ok(_) => Response::ok("committed"),
        Err(e) => Response::err(e),
    }
}

/// The daemon's side of RUN `adopt-files` (`series::import::adopt_files`): the `.rrd` files
/// at the named series' paths under `-b` taken into the store, one line each.
pub fn adopt(d: &Daemon, args: &[String]) -> Response {
    if let Some(why) = d.unreadable().or_else(|| d.failure()) {
        return Response::err(why);
    }
    if d.closing() {
        return Response::err("Shutting down: no more updates are accepted.");
    }
    let (_, names) = strip_named(args);
    encode(Outcome {
        stdout: crate::series::import::adopt_files(d, names),
        ..Outcome::default()
    })
}

/// The daemon's side of RUN `draw` (`cli::graph::DRAW`): the graph drawn by the
/// connection's drawing process, each DEF's rows read from the store as FETCH reads them
/// (a series named as the CLI names it, confined to the base directory under -B), within
/// the daemon's read budget; the image and what the graph printed go back in hex.
pub fn draw(d: &Daemon, renderer: &mut Option<cli::graph::Renderer>, args: &[String]) -> Response {
    if let Some(why) = d.unreadable() {
        return Response::err(why);
    }
    // A named daemon draws as any other.
    let (_, args) = strip_named(args);
    let spare = std::sync::Arc::clone(&d.spare);
    let mut fetch = |name: &str, cf: &str, start: i64, end: i64, step: u64| {
        let n = cli::store::normalize(name)?;
        if d.restrict_base && (n.starts_with('/') || d.no_links(&n).is_err()) {
            return Err(format!("opening '{name}': Permission denied"));
        }
        let missing = || format!("opening '{name}': No such file or directory");
        // The rows' share of the read budget, taken before they are (outside the lock):
        // the values, and their frame to the drawing process.
        let values = crate::read::with(d, &n, |rrd| {
            rrd::Cf::from_name(cf).map_or(0, |c| rrd::fetch::fetch_values(rrd, c, start, end, step))
        })
        .map_err(|e| e.0)?
        .ok_or_else(missing)?;
        let _share = d
            .reads
            .take(values.min(cli::graph::MAX_VALUES + 1) * 16 + 4096);
        crate::read::with(d, &n, |rrd| {
            cli::graph::rows(rrd, name, cf, start, end, step)
        })
        .map_err(|e| e.0)?
        .unwrap_or_else(|| Err(missing()))
    };
    match spare.serve(renderer, args, &mut fetch) {
        Err(out) => encode(out),
        Ok(drawn) => {
            // The reply holds the image in hex, then in its body: its share of the budget.
            let image = drawn.stdout.len() + drawn.file.as_ref().map_or(0, |(_, b)| b.len());
            let _share = d.reads.take(5 * image as u64);
            encode(cli::graph::draw_reply(drawn))
        }
    }
}
