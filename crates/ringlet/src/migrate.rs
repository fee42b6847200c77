//! `ringlet migrate rrdcached`: replace a running rrdcached in place. Its options are read
//! from its command line (`/proc/PID/cmdline`; else from Debian's `/etc/default/rrdcached`,
//! as its init script builds them) and merged into `/etc/default/ringlet` ([`merge`]: the
//! package's user, socket and options kept, rrdcached's sockets added with the mode and
//! group each had, each change said); rrdcached is told to write everything (FLUSHALL, then
//! STATS until its queue is empty); ringlet's sockets take its unix sockets' paths before it
//! stops ([`crate::handover`]: systemd's `ringlet-rrdcached.socket`, or sockets bound here
//! and renamed onto them), so a client never finds no socket; rrdcached is stopped (by
//! systemd where systemd runs it, else by SIGTERM to its pid) and ringlet started on those
//! sockets, probes measuring what clients saw; updates that only rrdcached's journal held
//! (accepted after the flush, before the stop) are sent to it; and every `.rrd` under
//! rrdcached's `-b` is imported through it (`import rrd --resume --move`: each compared
//! with the file after import, moved into `<store>/imported/` once committed, a
//! placeholder left at its path; a file a client names first is taken in by the daemon
//! itself, as it does with any file it finds under `-b`). With `--no-start` the files are
//! imported on the store instead. Clients keep their configuration: the socket paths, `-b`,
//! `-w` are the same.
//!
//! Options left out of the new file, with the reason written in it: `-p` (rrdcached's pid
//! file: its init script would stop ringlet by it), `-j` (the store's log is ringlet's
//! journal), `-g` (the service adds it), `-U`/`-G` where the package names its user, `-B`
//! while the store holds series outside `-b`.

use crate::export::Source;
use crate::import::{Job, Kind};
use cli::client::Client;
use lexopt::prelude::*;
use server::config::{Addr, Config};
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

pub const USAGE: &str = "\
usage: ringlet [--store DIR] migrate rrdcached [--dry-run|-n] [--pid PID] [--exe PATH]
                 [--defaults FILE] [--to FILE] [--no-start] [--quiet|-q]

Replace the rrdcached that runs here with ringlet, in place:
  1. read rrdcached's options from its command line (/proc/PID/cmdline), or when none runs
     from FILE (default /etc/default/rrdcached, as Debian's init script reads it). A process
     is taken as rrdcached only when it runs a binary named rrdcached in a system directory
     (/usr/bin, /usr/sbin, /bin, /sbin, /usr/local/bin, /usr/local/sbin; or --exe PATH),
     owned by root and writable by no one else, as root or a system user (uid below 1000);
  2. merge them into --to (default /etc/default/ringlet; the file there is kept beside it
     as .before-migrate): the package's user, socket and options kept; rrdcached's -w, -b
     as WRITE_TIMEOUT, BASE_PATH; its sockets added with the mode and group each had; its
     other options beside them; not -p, -j, -g, nor -U/-G where the package names a user
     (added when it ran as another user without them and none is named), nor -B while the
     store holds series outside -b; each change said;
  3. tell rrdcached to write every queued value (FLUSHALL) and wait for its queue to empty;
     put ringlet's sockets at its unix sockets' paths (systemd's ringlet-rrdcached.socket
     where the package runs under systemd, else sockets bound beside them and renamed onto
     them), then stop it (systemctl stop + disable where systemd runs it, else SIGTERM);
  4. start ringlet on those sockets (systemctl restart ringlet, else `ringlet serve
     --defaults FILE` handed them), report what clients saw of the hand-over (a connection
     every 10 ms and a PING at a time on each address), send it the updates that only
     rrdcached's journal (-j) held;
  5. import every .rrd under rrdcached's -b through it (as `ringlet import rrd --resume
     --move`: each compared with its file after import, moved into STORE/imported/ once
     committed, a placeholder left at its path; a file a client names first is taken in by
     the daemon as it sees it), and give the store and -b to the daemon's user.
     Interrupted? `ringlet import rrd --resume --move DIR`.
Clients (collectd, gmetad, Munin, Cacti, rrdtool --daemon) keep their configuration.

  -n, --dry-run     print what would be done, change nothing
  --pid PID         the rrdcached to replace (when several run)
  --exe PATH        the rrdcached binary a running rrdcached may run, besides the system
                    directories' (an rrdcached built into /opt, say)
  --defaults FILE   rrdcached's defaults file (default /etc/default/rrdcached)
  --to FILE         ringlet's defaults file to write (default /etc/default/ringlet)
  --no-start        write the file, stop rrdcached and import on the store, but do not
                    start ringlet
  -q, --quiet       no progress bar
";

const RRDCACHED_DEFAULTS: &str = "/etc/default/rrdcached";
const RINGLET_DEFAULTS: &str = "/etc/default/ringlet";

#[derive(Default)]
struct Opts {
    dry_run: bool,
    pid: Option<u32>,
    exe: Option<PathBuf>,
    defaults: Option<PathBuf>,
    to: Option<PathBuf>,
    no_start: bool,
    quiet: bool,
}

fn parse(args: &[String]) -> Result<Option<Opts>, String> {
    let mut o = Opts::default();
    let mut what = None;
    let mut p = lexopt::Parser::from_args(args.iter().cloned());
    let text = |p: &mut lexopt::Parser| -> Result<String, String> {
        p.value()
            .map_err(|e| e.to_string())?
            .string()
            .map_err(|e| e.to_string())
    };
    while let Some(arg) = p.next().map_err(|e| e.to_string())? {
        match arg {
            Short('h') | Long("help") => return Ok(None),
            Short('n') | Long("dry-run") => o.dry_run = true,
            Short('q') | Long("quiet") => o.quiet = true,
            Long("no-start") => o.no_start = true,
            Long("pid") => {
                let v = text(&mut p)?;
                o.pid = Some(
                    v.parse()
                        .map_err(|_| format!("--pid: '{v}' is not a pid"))?,
                );
            }
            Long("exe") => o.exe = Some(text(&mut p)?.into()),
            Long("defaults") => o.defaults = Some(text(&mut p)?.into()),
            Long("to") => o.to = Some(text(&mut p)?.into()),
            Value(v) if what.is_none() => what = Some(v.string().map_err(|e| e.to_string())?),
            other => return Err(other.unexpected().to_string()),
        }
    }
    match what.as_deref() {
        Some("rrdcached") => Ok(Some(o)),
        Some(w) => Err(format!("cannot migrate from '{w}' (rrdcached)")),
        None => Err("migrate what? (rrdcached)".into()),
    }
}

/// Run `ringlet migrate` with the arguments after `migrate`; the exit status.
pub fn run(args: &[String], dir: &Path) -> i32 {
    let o = match parse(args) {
        Ok(Some(o)) => o,
        Ok(None) => {
            print!("{USAGE}");
            return 0;
        }
        Err(e) => {
            eprint!("{USAGE}");
            eprintln!("ERROR: {e}");
            return 1;
        }
    };
    match migrate(&o, dir) {
        Ok(()) => 0,
        Err(e) => {
            eprintln!("ERROR: {e}");
            1
        }
    }
}

/// The rrdcached found: its pid (None: not running) and options, and where they came from.
struct Found {
    pid: Option<u32>,
    args: Vec<String>,
    from: String,
}

/// Running rrdcached processes: pid and arguments (after argv[0]).
fn running() -> Vec<(u32, Vec<String>)> {
    let mut out = Vec::new();
    let Ok(rd) = std::fs::read_dir("/proc") else {
        return out;
    };
    for e in rd.flatten() {
        let Some(pid) = e.file_name().to_str().and_then(|s| s.parse::<u32>().ok()) else {
            continue;
        };
        match cmdline(pid) {
            Some(args) if alive(pid) => out.push((pid, args)),
            _ => {}
        }
    }
    out.sort();
    out
}

/// The arguments of process `pid` when it is an rrdcached.
fn cmdline(pid: u32) -> Option<Vec<String>> {
    let comm = std::fs::read_to_string(format!("/proc/{pid}/comm")).ok()?;
    if comm.trim_end() != "rrdcached" {
        return None;
    }
    let raw = std::fs::read(format!("/proc/{pid}/cmdline")).ok()?;
    let mut words = raw
        .split(|&b| b == 0)
        .map(|w| String::from_utf8_lossy(w).into_owned());
    words.next()?;
    let mut args: Vec<String> = words.collect();
    if args.last().is_some_and(String::is_empty) {
        args.pop();
    }
    Some(args)
}

/// Directories a system's rrdcached binary is installed in.
const SYSTEM_BIN: [&str; 6] = [
    "/usr/bin",
    "/usr/sbin",
    "/bin",
    "/sbin",
    "/usr/local/bin",
    "/usr/local/sbin",
];

/// Why process `pid` (named rrdcached) is not taken as the rrdcached to replace, if it is
/// not: its options become ringlet's (run as root) and it is stopped, so a process any user
/// can start under that name must not be. It must run a binary named `rrdcached` in a
/// system directory (or `exe`), owned by root and writable by no one else, as root or a
/// system user (uid below 1000: Debian's SYS_UID_MAX is 999).
fn untrusted(pid: u32, exe: Option<&Path>) -> Option<String> {
    use std::os::unix::fs::MetadataExt;
    let path = match std::fs::read_link(format!("/proc/{pid}/exe")) {
        Ok(p) => p,
        Err(e) => return Some(format!("its binary cannot be read ({e})")),
    };
    let shown = path.display().to_string();
    let real = std::fs::canonicalize(&path).unwrap_or_else(|_| path.clone());
    let dir_ok = real.parent().is_some_and(|d| {
        SYSTEM_BIN
            .iter()
            .any(|s| std::fs::canonicalize(s).is_ok_and(|c| c == d))
    });
    let named = real.file_name().is_some_and(|n| n == "rrdcached");
    let given = exe.is_some_and(|e| std::fs::canonicalize(e).is_ok_and(|e| e == real));
    if !(given || (dir_ok && named)) {
        return Some(format!(
            "it runs {shown}, not an rrdcached of the system's directories (give --exe {shown} \
             if it is yours)"
        ));
    }
    match std::fs::metadata(&real) {
        Ok(m) if m.uid() == 0 && m.mode() & 0o022 == 0 => {}
        Ok(_) => {
            return Some(format!(
                "its binary {shown} is not owned by root, or others may write it"
            ))
        }
        Err(e) => return Some(format!("its binary {shown}: {e}")),
    }
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    let uid = status
        .lines()
        .find_map(|l| l.strip_prefix("Uid:"))
        .and_then(|v| v.split_whitespace().next()?.parse::<u32>().ok());
    match uid {
        Some(u) if u < 1000 => None,
        Some(u) => Some(format!("it runs as uid {u}, not root or a system user")),
        None => Some("its user cannot be read".into()),
    }
}

fn find(o: &Opts) -> Result<Found, String> {
    if let Some(pid) = o.pid {
        let args = cmdline(pid)
            .filter(|_| alive(pid))
            .ok_or(format!("process {pid} is not a running rrdcached"))?;
        if let Some(why) = untrusted(pid, o.exe.as_deref()) {
            return Err(format!("process {pid} is not taken as rrdcached: {why}"));
        }
        return Ok(Found {
            pid: Some(pid),
            args,
            from: format!("the command line of rrdcached (pid {pid})"),
        });
    }
    let (procs, refused): (Vec<_>, Vec<_>) = running()
        .into_iter()
        .map(|(pid, args)| (pid, args, untrusted(pid, o.exe.as_deref())))
        .partition(|(_, _, why)| why.is_none());
    if procs.is_empty() && !refused.is_empty() {
        // Something named rrdcached runs, and it is not one to take: neither adopted nor
        // ignored (ringlet started on the sockets of an rrdcached still running would fail).
        return Err(format!(
            "{}; nothing was changed",
            refused
                .iter()
                .map(|(pid, _, why)| format!(
                    "process {pid} is named rrdcached but is not taken: {}",
                    why.as_deref().unwrap_or("")
                ))
                .collect::<Vec<_>>()
                .join("; ")
        ));
    }
    let procs: Vec<(u32, Vec<String>)> = procs.into_iter().map(|(p, a, _)| (p, a)).collect();
    match procs.as_slice() {
        [(pid, args)] => Ok(Found {
            pid: Some(*pid),
            args: args.clone(),
            from: format!("the command line of rrdcached (pid {pid})"),
        }),
        [] => {
            let file = o
                .defaults
                .clone()
                .unwrap_or_else(|| RRDCACHED_DEFAULTS.into());
            let text = std::fs::read_to_string(&file).map_err(|e| {
                format!(
                    "no rrdcached runs here, and {} cannot be read: {e}",
                    file.display()
                )
            })?;
            let mut args = server::config::defaults_args(&text)
                .map_err(|e| format!("{}: {e}", file.display()))?;
            if !args.iter().any(|a| a == "-p") {
                // Debian's init script always names one.
                args.extend(["-p".into(), "/var/run/rrdcached.pid".into()]);
            }
            Ok(Found {
                pid: None,
                args,
                from: format!("{} (no rrdcached runs)", file.display()),
            })
        }
        many => Err(format!(
            "{} rrdcached processes run (pids {}): name one with --pid",
            many.len(),
            many.iter()
                .map(|(p, _)| p.to_string())
                .collect::<Vec<_>>()
                .join(", ")
        )),
    }
}

/// The value of option `flag` (the last given; `-j DIR` or `-jDIR`).
fn option(args: &[String], flag: &str) -> Option<String> {
    let mut out = None;
    let mut it = args.iter();
    while let Some(a) = it.next() {
        if a == flag {
            out = it.next().cloned();
        } else if let Some(v) = a.strip_prefix(flag).filter(|v| !v.is_empty()) {
            out = Some(v.to_string());
        }
    }
    out
}

/// ringlet's defaults file as a migration writes it, and what it changed.
struct Merged {
    text: String,
    /// Each change, for the file's head and the user.
    changes: Vec<String>,
    /// The user and group the daemon runs as, when the file names them.
    owner: Option<(String, Option<String>)>,
    /// rrdcached's unix sockets, each with the mode and group written for it.
    unix: Vec<(PathBuf, u32, String)>,
}

/// Where one of rrdcached's options goes in ringlet's file.
enum Goes {
    /// A variable of its own (`-w` is WRITE_TIMEOUT...).
    Var(&'static str),
    /// Left out, and why.
    Out(&'static str),
    /// Into BASE_OPTIONS as it is.
    Kept,
}

fn goes(flag: &str, package_user: bool, outside_base: bool) -> Goes {
    match flag {
        "-w" => Goes::Var("WRITE_TIMEOUT"),
        "-z" => Goes::Var("WRITE_JITTER"),
        "-t" => Goes::Var("WRITE_THREADS"),
        "-b" => Goes::Var("BASE_PATH"),
        "-p" => Goes::Out("rrdcached's pid file, by which its init script would stop ringlet"),
        "-j" => Goes::Out("ringlet's store log is its journal"),
        "-g" => Goes::Out("the service adds it"),
        "-U" | "-G" if package_user => {
            Goes::Out("ringlet runs as the package's user, DAEMON_USER; the files are given to it")
        }
        "-B" if outside_base => Goes::Out(
            "the store holds series outside -b that clients write through the package's socket",
        ),
        _ => Goes::Kept,
    }
}

/// Options of rrdcached that take a value (the rest are flags).
const TAKES_VALUE: &str = "wztbjpUGlsmPfao";

/// ringlet's defaults file: the package's setup in `old` (its variables, when there is one)
/// kept, rrdcached's options (`found`) merged in: `-w -z -t -b` as their variables, its
/// sockets added to BASE_OPTIONS with the mode and group each had (`access`: a socket
/// file's mode and group, read from the live socket), the rest of its options beside them.
/// `added`: [`identity`]'s -U/-G, used when the package names no user. `outside_base`: a
/// series of the store outside -b, when there is one (-B is then left out).
fn merge(
    found: &Found,
    old: Option<&std::collections::HashMap<String, String>>,
    store: &Path,
    added: &[String],
    outside_base: Option<&str>,
    access: &dyn Fn(&Path) -> Option<(u32, String)>,
) -> Merged {
    let get = |k: &str| {
        old.and_then(|v| v.get(k))
            .filter(|v| !v.is_empty())
            .cloned()
    };
    let package_user = get("DAEMON_USER").is_some();
    let mut vars: Vec<(&str, String)> = Vec::new();
    let mut changes = Vec::new();
    let mut opts: Vec<String> = Vec::new();
    let mut unix = Vec::new();
    let (mut mode, mut group): (Option<u32>, Option<String>) = (None, None);
    let mut it = found.args.iter().peekable();
    while let Some(a) = it.next() {
        // -x VALUE or -xVALUE.
        let (flag, value) = match a.strip_prefix('-').and_then(|r| r.chars().next()) {
            Some(c) if TAKES_VALUE.contains(c) => {
                let flag = format!("-{c}");
                let v = if a.len() > 2 {
                    a[2..].to_string()
                } else {
                    it.next().cloned().unwrap_or_default()
                };
                (flag, Some(v))
            }
            _ => (a.clone(), None),
        };
        match goes(&flag, package_user, outside_base.is_some()) {
            Goes::Var(k) => {
                let v = value.unwrap_or_default();
                if get(k).as_deref() != Some(v.as_str()) {
                    changes.push(format!("{k}={v} (rrdcached's {flag})"));
                }
                vars.retain(|(x, _)| *x != k);
                vars.push((k, v));
            }
            Goes::Out(why) => changes.push(format!(
                "left out rrdcached's {flag}{}: {why}",
                value.map(|v| format!(" {v}")).unwrap_or_default()
            )),
            Goes::Kept => {
                match (flag.as_str(), &value) {
                    ("-m", Some(v)) => mode = u32::from_str_radix(v, 8).ok(),
                    ("-s", Some(v)) => group = Some(v.clone()),
                    ("-l", Some(v)) => {
                        let path = v
                            .strip_prefix("unix:")
                            .or(v.starts_with('/').then_some(v.as_str()));
                        if let Some(path) = path {
                            // The mode and group clients reach it with (the live socket's;
                            // else what rrdcached makes as root), written out when not
                            // given: the package's SOCKMODE and SOCKGROUP come before and
                            // would apply.
                            let live = access(Path::new(path));
                            let write = live.is_some() || get("SOCKFILE").is_some();
                            let (m0, g0) = live.unwrap_or((0o755, "root".into()));
                            let m = mode.unwrap_or(m0);
                            let g = group.clone().unwrap_or(g0);
                            if mode.is_none() && write {
                                opts.extend(["-m".into(), format!("{m:04o}")]);
                            }
                            if group.is_none() && write {
                                opts.extend(["-s".into(), g.clone()]);
                            }
                            changes.push(format!(
                                "rrdcached's socket unix:{path} (mode {m:04o}, group {g}) \
                                 served{}",
                                if old.is_some() {
                                    " beside the package's"
                                } else {
                                    ""
                                }
                            ));
                            unix.push((PathBuf::from(path), m, g));
                        } else {
                            changes.push(format!("rrdcached's address {v} served"));
                        }
                    }
                    _ => {}
                }
                opts.push(flag);
                opts.extend(value);
            }
        }
    }
    if let Some(name) = outside_base {
        changes.push(format!(
            "(e.g. {name}: -B would refuse it; rrdcached's clients name files under -b anyway)"
        ));
    }
    if !package_user && !added.is_empty() {
        changes.push(format!(
            "added {} (rrdcached ran as them without these options, e.g. by a unit's User=)",
            added.join(" ")
        ));
        opts.extend(added.iter().cloned());
    }
    let owner = match get("DAEMON_USER") {
        Some(u) => Some((u, get("DAEMON_GROUP"))),
        None => option(&opts, "-U").map(|u| (u, option(&opts, "-G"))),
    };
    let base_options = get("BASE_OPTIONS")
        .into_iter()
        .chain(std::iter::once(opts.join(" ")))
        .filter(|s| !s.is_empty())
        .collect::<Vec<_>>()
        .join(" ");
    let store_s = store.display().to_string();
    if get("STORE").is_some_and(|s| s != store_s) {
        changes.push(format!("STORE={store_s}"));
    }

    // The file, in the package's order.
    let mut t = format!(
        "# /etc/default/ringlet: the options of ringlet.service, read by `ringlet serve \
         --defaults`\n# (ringlet-serve(8)) in the syntax of Debian's /etc/default/rrdcached.\n\
         # Written by `ringlet migrate rrdcached`: {} with rrdcached's merged in, from\n\
         # {}:\n#   rrdcached {}\n# What changed:\n",
        if old.is_some() {
            "the setup that was here (kept beside as .before-migrate)"
        } else {
            "a new setup"
        },
        found.from,
        found.args.join(" ")
    );
    for c in &changes {
        t.push_str(&format!("#   - {c}\n"));
    }
    t.push_str("# Restart the service after a change: systemctl restart ringlet\n");
    let value = |k: &str| -> Option<String> {
        vars.iter()
            .find(|(x, _)| *x == k)
            .map(|(_, v)| v.clone())
            .or_else(|| get(k))
    };
    let quoted = |v: &str| {
        if v.is_empty() || v.contains(' ') {
            format!("\"{v}\"")
        } else {
            v.to_string()
        }
    };
    let mut written = std::collections::HashSet::new();
    let mut section = |t: &mut String, comment: &str, keys: &[&str], always: &[(&str, String)]| {
        let mut body = String::new();
        for k in keys {
            let v = always
                .iter()
                .find(|(x, _)| x == k)
                .map(|(_, v)| v.clone())
                .or_else(|| value(k));
            written.insert(k.to_string());
            if let Some(v) = v {
                body.push_str(&format!("{k}={}\n", quoted(&v)));
            }
        }
        if !body.is_empty() {
            t.push_str(&format!("\n# {comment}\n{body}"));
        }
    };
    section(
        &mut t,
        "Commit interval in seconds: the most a crash can lose (rrdcached's -w, -z, -t).",
        &["WRITE_TIMEOUT", "WRITE_JITTER", "WRITE_THREADS"],
        &[],
    );
    section(
        &mut t,
        "Where clients' files are (rrdcached's -b): names are under it; a .rrd file found \
         there\n# is imported on first sight and a placeholder left at its path.",
        &["BASE_PATH"],
        &[],
    );
    section(
        &mut t,
        "The package's socket, its group and mode (systemd holds it: ringlet.socket).",
        &["SOCKFILE", "SOCKGROUP", "SOCKMODE"],
        &[],
    );
    section(
        &mut t,
        "The user and group the daemon runs as once its sockets are bound.",
        &["DAEMON_USER", "DAEMON_GROUP"],
        &[],
    );
    section(
        &mut t,
        "TCP sockets (rrdcached's -l).",
        &["NETWORK_OPTIONS", "JOURNAL_PATH", "PIDFILE"],
        &[],
    );
    section(
        &mut t,
        "rrdcached's other options as it ran, and its sockets with their modes and groups\n\
         # (systemd holds its unix sockets where it runs: ringlet-rrdcached.socket).",
        &["BASE_OPTIONS"],
        &[("BASE_OPTIONS", base_options)],
    );
    section(
        &mut t,
        "The store: the log, checkpoints and segments, the imported .rrd files in imported/.",
        &["STORE"],
        &[("STORE", store_s)],
    );
    section(
        &mut t,
        "ringlet's own options, as `ringlet serve --help` lists them (--http, --view, ...).",
        &["RINGLET_OPTIONS"],
        &[(
            "RINGLET_OPTIONS",
            get("RINGLET_OPTIONS").unwrap_or_default(),
        )],
    );
    // Anything else the file set, kept as it was.
    if let Some(old) = old {
        let mut rest: Vec<_> = old
            .iter()
            .filter(|(k, v)| !written.contains(k.as_str()) && !v.is_empty())
            .collect();
        rest.sort();
        if !rest.is_empty() {
            t.push_str("\n# Kept as the file before set them.\n");
            for (k, v) in rest {
                t.push_str(&format!("{k}={}\n", quoted(v)));
            }
        }
    }
    Merged {
        text: t,
        changes,
        owner,
        unix,
    }
}

/// `-U USER -G GROUP` for an rrdcached that runs as a user other than root without `-U`/`-G`
/// (systemd's User=, or started by that user): ringlet, started as root, becomes the same.
fn identity(pid: u32, args: &[String]) -> Vec<String> {
    let Ok(status) = std::fs::read_to_string(format!("/proc/{pid}/status")) else {
        return Vec::new();
    };
    // "Uid:\treal\teffective\tsaved\tfs": the effective one.
    let id = |key: &str| -> Option<u32> {
        status
            .lines()
            .find_map(|l| l.strip_prefix(key))?
            .split_whitespace()
            .nth(1)?
            .parse()
            .ok()
    };
    let (Some(uid), Some(gid)) = (id("Uid:"), id("Gid:")) else {
        return Vec::new();
    };
    if uid == 0 {
        return Vec::new();
    }
    let mut out = Vec::new();
    if option(args, "-U").is_none() {
        out.extend(["-U".to_string(), server::sys::user_name(uid)]);
    }
    if option(args, "-G").is_none() {
        out.extend(["-G".to_string(), server::sys::group_name(gid)]);
    }
    out
}

/// Whether systemd is the service manager here.
fn systemd() -> bool {
    Path::new("/run/systemd/system").is_dir()
}

fn systemctl(args: &[&str]) -> Result<(), String> {
    let st = std::process::Command::new("systemctl")
        .args(args)
        .status()
        .map_err(|e| format!("systemctl: {e}"))?;
    if st.success() {
        Ok(())
    } else {
        Err(format!("systemctl {} failed ({st})", args.join(" ")))
    }
}

/// A client of the daemon at `addr` (rrdcached's protocol), with a read timeout.
fn client(addr: &Addr) -> Result<Client, String> {
    cli::client::connect_stream(addr, Some(Duration::from_secs(60)))
        .map(|s| Client::on(&addr.to_string(), s))
        .map_err(|e| format!("{addr}: {e}"))
}

/// A client of the first of the daemon's addresses that answers.
fn connect(cfg: &Config) -> Result<Client, String> {
    let mut last = String::from("no address");
    for a in &addresses(cfg) {
        match client(a) {
            Ok(c) => return Ok(c),
            Err(e) => last = e,
        }
    }
    Err(last)
}

/// The addresses a daemon with `cfg` listens on (rrdcached's default when none is given);
/// an address on all interfaces is reached on the loopback.
fn addresses(cfg: &Config) -> Vec<Addr> {
    if cfg.listen.is_empty() {
        return vec![Addr::Unix(server::config::DEFAULT_SOCKET.into())];
    }
    cfg.listen
        .iter()
        .map(|l| match &l.addr {
            Addr::Tcp(h, p) if h.is_empty() => Addr::Tcp("127.0.0.1".into(), *p),
            a => a.clone(),
        })
        .collect()
}

/// FLUSHALL, then STATS until rrdcached's queue is empty: every value it accepted so far is
/// in its files. Each of its addresses is tried in turn (-P may allow the commands on one
/// only). Ok(false): no address allowed them.
fn flush_all(cfg: &Config, bar: &indicatif::ProgressBar) -> Result<bool, String> {
    let mut why = Vec::new();
    for addr in addresses(cfg) {
        let mut c = match client(&addr) {
            Ok(c) => c,
            Err(e) => {
                why.push(e);
                continue;
            }
        };
        let (n, msg, _) = c.request("FLUSHALL")?;
        if n < 0 {
            why.push(format!("{addr}: FLUSHALL: {msg}"));
            continue;
        }
        let start = Instant::now();
        loop {
            let (n, msg, lines) = c.request("STATS")?;
            if n < 0 {
                why.push(format!("{addr}: STATS: {msg}"));
                break;
            }
            let queue = lines
                .iter()
                .find_map(|l| l.strip_prefix("QueueLength: "))
                .and_then(|v| v.trim().parse::<u64>().ok())
                .ok_or("rrdcached's STATS has no QueueLength")?;
            if queue == 0 {
                return Ok(true);
            }
            bar.set_message(format!("rrdcached is writing: {queue} files queued"));
            if start.elapsed() > Duration::from_secs(3600) {
                return Err(format!(
                    "rrdcached still has {queue} files queued after an hour"
                ));
            }
            std::thread::sleep(Duration::from_millis(200));
        }
    }
    bar.suspend(|| eprintln!("rrdcached: {}", why.join("; ")));
    Ok(false)
}

/// The systemd service process `pid` runs in (its cgroup's last part, `name.service`).
fn unit_of(pid: u32) -> Option<String> {
    unit_in(&std::fs::read_to_string(format!("/proc/{pid}/cgroup")).ok()?)
}

/// [`unit_of`] of a `/proc/PID/cgroup` text (cgroup v2's one line, or v1's several).
fn unit_in(text: &str) -> Option<String> {
    text.lines().find_map(|l| {
        let path = l.rsplit(':').next()?;
        let last = path.rsplit('/').next()?;
        last.ends_with(".service").then(|| last.to_string())
    })
}

/// Whether process `pid` runs (a zombie, exited but not yet reaped by its parent, does not).
fn alive(pid: u32) -> bool {
    Path::new(&format!("/proc/{pid}")).exists() && !server::sys::is_zombie(pid as libc::pid_t)
}

/// Stop rrdcached: by systemd when it runs it, else SIGTERM to `pid`; wait until it is gone.
/// The unit it ran in, when systemd stopped it: disabled once ringlet serves (a disable
/// reloads systemd: seconds the clients need not wait).
fn stop(pid: u32, bar: &indicatif::ProgressBar) -> Result<(String, Option<String>), String> {
    let mut unit_stopped = None;
    let how = match unit_of(pid).filter(|_| systemd()) {
        // systemd runs it (Debian's rrdcached.service, or a unit of the site's own): stopped
        // by it, so that it is not started again behind our back.
        Some(unit) => {
            systemctl(&["stop", &unit])?;
            let how = format!("systemctl stop {unit}");
            unit_stopped = Some(unit);
            how
        }
        None => {
            // SAFETY: kill with a pid read from /proc and a valid signal.
            if unsafe { libc::kill(pid as i32, libc::SIGTERM) } != 0 {
                return Err(format!(
                    "SIGTERM to rrdcached (pid {pid}): {}",
                    std::io::Error::last_os_error()
                ));
            }
            format!("SIGTERM to pid {pid}")
        }
    };
    let start = Instant::now();
    while alive(pid) {
        bar.set_message(format!("waiting for rrdcached (pid {pid}) to exit"));
        if start.elapsed() > Duration::from_secs(600) {
            return Err(format!(
                "rrdcached (pid {pid}) still runs 10 minutes after {how}"
            ));
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    Ok((how, unit_stopped))
}

/// The updates only rrdcached's journal in `dir` holds: per file, those after the last
/// `wrote` (or `forget`) of it, as the `UPDATE` lines to send again (rrdcached's replay
/// does the same; values at or before a file's last update are refused harmlessly).
fn journal_leftovers(dir: &Path, base: Option<&Path>) -> Vec<String> {
    let Ok(rd) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut files: Vec<PathBuf> = rd
        .flatten()
        .map(|e| e.path())
        .filter(|p| {
            p.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.starts_with("rrd.journal."))
        })
        .collect();
    files.sort();
    // Read a line at a time: a journal can hold an hour of every update (-f), most of them
    // written since; only the unwritten ones are kept.
    let mut left = Leftovers::new(base);
    for f in files {
        let Ok(file) = std::fs::File::open(&f) else {
            continue;
        };
        for line in BufReader::new(file).split(b'\n') {
            let Ok(line) = line else { break };
            left.feed(&String::from_utf8_lossy(&line));
        }
        // A last line cut off (rrdcached never syncs its journal) is not an entry: `split`
        // gives it too, so it is taken back.
        if !ends_a_line(&f) {
            left.unfeed_last();
        }
    }
    left.finish()
}

/// Whether file `f` is empty or ends with a line break.
fn ends_a_line(f: &Path) -> bool {
    use std::os::unix::fs::FileExt;
    let Ok(file) = std::fs::File::open(f) else {
        return true;
    };
    let len = file.metadata().map(|m| m.len()).unwrap_or(0);
    let mut b = [0u8; 1];
    len == 0 || (file.read_exact_at(&mut b, len - 1).is_ok() && b[0] == b'\n')
}

/// The journal's updates since each file's last write, fed a line at a time.
struct Leftovers<'a> {
    base: Option<&'a Path>,
    /// Per absolute name: the `UPDATE` lines since its last write, in order.
    pending: std::collections::HashMap<String, Vec<String>>,
    /// The names in the order first seen.
    order: Vec<String>,
    /// The name the last line added to, to take a cut-off line back.
    last: Option<String>,
}

impl<'a> Leftovers<'a> {
    fn new(base: Option<&'a Path>) -> Self {
        Leftovers {
            base,
            pending: Default::default(),
            order: Vec::new(),
            last: None,
        }
    }

    fn abs(&self, name: &str) -> String {
        match self.base {
            Some(b) if !name.starts_with('/') => b.join(name).display().to_string(),
            _ => name.to_string(),
        }
    }

    fn feed(&mut self, line: &str) {
        self.last = None;
        let Some((cmd, args)) = line.split_once(' ') else {
            return;
        };
        match cmd {
            "update" => {
                let Some(name) = args.split(' ').next() else {
                    return;
                };
                let key = self.abs(name);
                if !self.pending.contains_key(&key) {
                    self.order.push(key.clone());
                }
                self.pending
                    .entry(key.clone())
                    .or_default()
                    .push(format!("UPDATE {args}"));
                self.last = Some(key);
            }
            "wrote" | "forget" => {
                let key = self.abs(args);
                if let Some(p) = self.pending.get_mut(&key) {
                    p.clear();
                }
            }
            _ => {}
        }
    }

    fn unfeed_last(&mut self) {
        if let Some(k) = self.last.take() {
            if let Some(p) = self.pending.get_mut(&k) {
                p.pop();
            }
        }
    }

    fn finish(mut self) -> Vec<String> {
        std::mem::take(&mut self.order)
            .into_iter()
            .flat_map(|k| self.pending.remove(&k).unwrap_or_default())
            .collect()
    }
}

/// [`Leftovers`] of a journal's text.
#[cfg(test)]
fn leftovers(text: &str, base: Option<&Path>) -> Vec<String> {
    let mut left = Leftovers::new(base);
    for line in text.lines() {
        left.feed(line);
    }
    left.finish()
}

/// Write `text` to `to`, keeping the file there as `<to>.before-migrate`.
fn write_defaults(to: &Path, text: &str) -> Result<Option<PathBuf>, String> {
    let mut kept = None;
    if to.exists() {
        let mut old = to.as_os_str().to_owned();
        old.push(".before-migrate");
        let old = PathBuf::from(old);
        // A second run keeps the first one's copy: the file from before any migration.
        if !old.exists() {
            std::fs::copy(to, &old).map_err(|e| format!("{}: {e}", old.display()))?;
        }
        kept = Some(old);
    }
    write_file(to, text)?;
    Ok(kept)
}

/// The package's setup to merge into: `<to>.before-migrate` when an earlier migration
/// left it (the file at `to` is then that migration's), else the file at `to`.
fn package_setup(to: &Path) -> Result<Option<std::collections::HashMap<String, String>>, String> {
    let mut before = to.as_os_str().to_owned();
    before.push(".before-migrate");
    for f in [PathBuf::from(before), to.to_path_buf()] {
        if let Ok(text) = std::fs::read_to_string(&f) {
            return server::config::defaults_vars(&text)
                .map(Some)
                .map_err(|e| format!("{}: {e}", f.display()));
        }
    }
    Ok(None)
}

/// A series of the store named by an absolute path outside `base` (one -B would refuse).
fn outside_base(dir: &Path, base: Option<&Path>) -> Option<String> {
    let base = base?;
    if !dir.exists() {
        return None;
    }
    let mut src = Source::open(None, dir, true).ok()?;
    let listed = src.run(dir, cli::EXPORT_NAMES, &[]);
    let _ = src.close();
    listed
        .stdout
        .lines()
        .find(|n| n.starts_with('/') && !Path::new(n).starts_with(base))
        .map(String::from)
}

/// How the sockets go from rrdcached to ringlet.
enum Way {
    /// systemd runs the package's units: a socket unit for rrdcached's unix sockets.
    Units,
    /// Sockets bound here and given to `ringlet serve` as systemd would.
    Here,
    /// --no-start.
    NotStarted,
}

/// Whether ringlet.service runs and was started after socket unit `unit` began to listen
/// (so systemd passed it that unit's sockets).
fn started_after(unit: &str) -> bool {
    let show = |u: &str, what: &str| -> Option<String> {
        let out = std::process::Command::new("systemctl")
            .args(["show", "-p", what, "--value", u])
            .output()
            .ok()?;
        Some(String::from_utf8_lossy(&out.stdout).trim().to_string())
    };
    let stamp = |u: &str, what: &str| -> Option<u64> { show(u, what)?.parse().ok() };
    // Serving, or on its way (it waits for rrdcached, then answers).
    let active =
        show("ringlet.service", "ActiveState").is_some_and(|s| s == "active" || s == "activating");
    match (
        stamp("ringlet.service", "InactiveExitTimestampMonotonic"),
        stamp(unit, "ActiveEnterTimestampMonotonic"),
    ) {
        (Some(began), Some(listening)) => active && listening > 0 && began > listening,
        _ => false,
    }
}

fn package_unit() -> bool {
    systemd()
        && std::process::Command::new("systemctl")
            .args(["cat", "ringlet.service", "ringlet.socket"])
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .status()
            .is_ok_and(|s| s.success())
}

/// Give every file and directory under `dir` (and it) to `owner`, links not followed.
fn give_tree(dir: &Path, owner: &(String, Option<String>)) -> Result<u64, String> {
    use std::os::unix::fs::MetadataExt;
    let ids = server::sys::ids(owner.1.as_deref(), Some(&owner.0))?
        .ok_or("no user to give the files to")?;
    let (uid, gid) = (ids.uid, ids.gid);
    let mut changed = 0;
    let mut todo = vec![dir.to_path_buf()];
    let mut own = |p: &Path| -> Result<(), String> {
        let m = std::fs::symlink_metadata(p).map_err(|e| format!("{}: {e}", p.display()))?;
        if uid.is_some_and(|u| u != m.uid()) || gid.is_some_and(|g| g != m.gid()) {
            std::os::unix::fs::lchown(p, uid, gid)
                .map_err(|e| format!("chown {}: {e}", p.display()))?;
            changed += 1;
        }
        Ok(())
    };
    own(dir)?;
    while let Some(d) = todo.pop() {
        let Ok(rd) = std::fs::read_dir(&d) else {
            continue;
        };
        for e in rd.flatten() {
            let p = e.path();
            own(&p)?;
            if e.file_type().is_ok_and(|t| t.is_dir()) {
                todo.push(p);
            }
        }
    }
    Ok(changed)
}

fn migrate(o: &Opts, dir: &Path) -> Result<(), String> {
    let found = find(o)?;
    if let Some(bad) = found
        .args
        .iter()
        .find(|a| a.is_empty() || a.contains(|c: char| c.is_whitespace() || "\"'$`\\".contains(c)))
    {
        return Err(format!(
            "rrdcached's option '{bad}' holds a space, quote or $: write /etc/default/ringlet \
             by hand (see ringlet-serve(8))"
        ));
    }
    let cfg = server::config::parse(&found.args)
        .map_err(|e| format!("rrdcached's options ({}): {e}", found.from))?;
    let added = found
        .pid
        .map(|p| identity(p, &found.args))
        .unwrap_or_default();
    let store = std::path::absolute(dir).unwrap_or_else(|_| dir.to_path_buf());
    let to = o.to.clone().unwrap_or_else(|| RINGLET_DEFAULTS.into());
    let old = package_setup(&to)?;
    let base = cfg.base.clone();
    let outside = outside_base(dir, base.as_deref());
    let merged = merge(
        &found,
        old.as_ref(),
        &store,
        &added,
        outside.as_deref(),
        &crate::handover::access_of,
    );
    let journal = option(&found.args, "-j").map(PathBuf::from);
    let addrs = addresses(&cfg);
    let first = addrs.first().map(|a| a.to_string()).unwrap_or_default();
    let listing = addrs
        .iter()
        .map(|a| a.to_string())
        .collect::<Vec<_>>()
        .join(", ");
    let way = if o.no_start {
        Way::NotStarted
    } else if to == Path::new(RINGLET_DEFAULTS) && package_unit() {
        Way::Units
    } else {
        Way::Here
    };
    let unit_path = Path::new(crate::handover::UNIT_DIR).join(crate::handover::UNIT);
    let unit_text = merged.unix.first().map(|(_, m, g)| {
        let paths: Vec<PathBuf> = merged.unix.iter().map(|(p, ..)| p.clone()).collect();
        crate::handover::unit_text(&paths, *m, g, &found.from)
    });

    println!("rrdcached's options, from {}:", found.from);
    println!("  {}", found.args.join(" "));
    if o.dry_run {
        let count = base.as_deref().map_or((0, 0), crate::import::rrd_files);
        println!("Would write {}:", to.display());
        for l in merged.text.lines() {
            println!("  | {l}");
        }
        if let (Way::Units, Some(t)) = (&way, &unit_text) {
            println!("Would write {} (and enable it):", unit_path.display());
            for l in t.lines() {
                println!("  | {l}");
            }
        }
        match found.pid {
            Some(pid) => println!(
                "Would send FLUSHALL to rrdcached at {first}, wait for its queue to empty, put \
                 ringlet's sockets at its unix sockets' paths, and stop it ({})",
                match unit_of(pid).filter(|_| systemd()) {
                    Some(unit) => format!("systemctl stop + disable {unit}"),
                    None => format!("SIGTERM to pid {pid}"),
                }
            ),
            None => println!("rrdcached is not running: nothing to stop"),
        }
        match way {
            Way::Units => println!("Would restart ringlet.service on {listing} and its own"),
            Way::Here => println!("Would start ringlet on {listing}"),
            Way::NotStarted => {}
        }
        if let Some(j) = &journal {
            println!(
                "Would send ringlet the updates only rrdcached's journal in {} holds",
                j.display()
            );
        }
        match &base {
            Some(b) => println!(
                "Would import {} .rrd files ({:.1} MB) under {} into the store {}{}, moving \
                 each into {}/imported/ once stored",
                count.0,
                count.1 as f64 / 1e6,
                b.display(),
                store.display(),
                if o.no_start { "" } else { " through ringlet" },
                store.display()
            ),
            None => println!(
                "rrdcached has no -b: files are imported by the daemon as clients first name them"
            ),
        }
        if let Some(owner) = &merged.owner {
            println!(
                "Would give the store{} to {}",
                base.as_deref()
                    .map(|b| format!(" and {}", b.display()))
                    .unwrap_or_default(),
                owner.0
            );
        }
        println!("(dry run: nothing changed)");
        return Ok(());
    }

    // The store must be free, or held by the package's service (restarted on the new file
    // below, on the same sockets).
    // (Found by the address it records, not $RRDCACHED_ADDRESS, which may name rrdcached.)
    let holder = cli::client::recorded(dir).filter(|a| cli::client::Client::connect(a).is_ok());
    let service_active =
        systemd() && systemctl(&["is-active", "--quiet", "ringlet.service"]).is_ok();
    match (&holder, &way) {
        (Some(_), Way::Units) if service_active => {}
        (Some(addr), _) if service_active => {
            systemctl(&["stop", "ringlet.service"])?;
            println!("stopped ringlet.service (it held the store at {addr})");
        }
        (Some(addr), _) => {
            return Err(format!(
                "a ringlet daemon holds the store {} (at {addr}): stop it first",
                store.display()
            ))
        }
        _ => {}
    }
    let bar = if o.quiet {
        indicatif::ProgressBar::hidden()
    } else {
        indicatif::ProgressBar::new_spinner()
    };
    bar.enable_steady_tick(Duration::from_millis(200));

    let flushed = match found.pid {
        Some(_) => {
            bar.set_message("rrdcached: FLUSHALL");
            flush_all(&cfg, &bar)?
        }
        None => true,
    };
    // Without FLUSHALL, only a stop writes rrdcached's values: when it has no journal, or
    // -F says so.
    if !flushed && journal.is_some() && !found.args.iter().any(|a| a == "-F") {
        return Err(
            "rrdcached took neither FLUSHALL nor STATS on any of its sockets (-P), and with \
             a journal (-j) and no -F it does not write its values at a stop: allow FLUSHALL \
             and STATS on one socket, or stop it with -F, then run this again"
                .into(),
        );
    }

    let kept = write_defaults(&to, &merged.text)?;
    bar.suspend(|| {
        println!(
            "wrote {}{}: the package's setup kept{}",
            to.display(),
            kept.map(|k| format!(" (the one before is {})", k.display()))
                .unwrap_or_default(),
            if merged.changes.is_empty() {
                String::new()
            } else {
                format!(", and\n  {}", merged.changes.join("\n  "))
            }
        )
    });

    // The hand-over: ringlet's sockets at rrdcached's unix paths before it stops, probed
    // from before until ringlet answers.
    let probing = found.pid.map(|_| crate::handover::Prober::start(&addrs));
    let mut held: Vec<(std::os::unix::net::UnixListener, PathBuf)> = Vec::new();
    let mut kept_names = Vec::new();
    let mut aside: Vec<PathBuf> = Vec::new();
    // Under systemd the unit is written whether or not rrdcached runs now: its sockets are
    // systemd's from the next boot on too.
    match way {
        Way::Units => {
            if let Some(t) = &unit_text {
                write_file(&unit_path, t)?;
                systemctl(&["daemon-reload"])?;
                // systemd starts no socket unit of a running service: the service is
                // stopped (its own socket stays, clients wait), and told (if a client
                // starts it) to wait for rrdcached's exit.
                if let Some(pid) = found.pid {
                    write_file(&dir.join(server::HANDOVER_FILE), &format!("{pid}\n"))?;
                }
                systemctl(&["stop", "ringlet.service"])?;
                // systemd binds each path anew (the one there, rrdcached's, replaced).
                if let Err(e) = systemctl(&["start", crate::handover::UNIT]) {
                    // One that will not: rrdcached's sockets moved aside first (a moment
                    // with no socket at the path, which the probes measure).
                    bar.suspend(|| eprintln!("{e}: moving rrdcached's sockets aside"));
                    for (p, ..) in &merged.unix {
                        if std::fs::symlink_metadata(p).is_ok() {
                            aside.push(crate::handover::move_aside(p)?);
                        }
                    }
                    systemctl(&["start", crate::handover::UNIT])?;
                }
                bar.suspend(|| {
                    println!(
                        "wrote {}: systemd holds rrdcached's sockets for ringlet",
                        unit_path.display()
                    )
                });
            }
        }
        Way::Here if found.pid.is_some() => {
            for (p, m, g) in &merged.unix {
                held.push((crate::handover::take_path(p, *m, Some(g))?, p.clone()));
            }
        }
        Way::Here | Way::NotStarted => {}
    }
    if found.pid.is_some() && !o.no_start {
        for (p, ..) in &merged.unix {
            kept_names.push(crate::handover::Kept::of(p)?);
        }
    }
    let unpinned: Vec<String> = kept_names
        .iter()
        .filter(|k| !k.pinned())
        .map(|k| k.path.display().to_string())
        .collect();
    if !unpinned.is_empty() {
        bar.suspend(|| {
            eprintln!(
                "cannot hold {} by a bind mount while rrdcached exits (it removes its socket \
                 path then): put back within a millisecond instead",
                unpinned.join(", ")
            )
        });
    }
    let watch = crate::handover::Watch::start(kept_names);
    let mut to_disable = None;
    if let Some(pid) = found.pid {
        let (how, unit) = stop(pid, &bar)?;
        to_disable = unit;
        bar.suspend(|| println!("rrdcached wrote every queued value and stopped ({how})"));
    }
    for a in aside {
        let _ = std::fs::remove_file(a);
    }
    // rrdcached's files are the daemon's user's before it starts (it writes placeholders
    // there as that user).
    if let (Some(b), false) = (&base, o.no_start) {
        bar.suspend(|| give(&merged, &[b]));
    }
    let left = journal
        .as_deref()
        .map(|j| journal_leftovers(j, base.as_deref()))
        .unwrap_or_default();
    // They are the daemon's to apply before it serves: a client's newer value would have
    // them refused. Then a daemon waiting for the hand-over (started by systemd when a
    // client came) goes on.
    if !left.is_empty() {
        let mut text = left.join("\n");
        text.push('\n');
        std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
        write_file(&dir.join(server::HANDOVER_UPDATES), &text)?;
    }
    let _ = std::fs::remove_file(dir.join(server::HANDOVER_FILE));

    // Without a daemon to start: the files imported on the store now.
    if o.no_start {
        watch.finish();
        bar.finish_and_clear();
        if let Some(unit) = &to_disable {
            systemctl(&["disable", "--quiet", unit])
                .unwrap_or_else(|e| eprintln!("{e}: disable {unit} by hand"));
        }
        if let Some(b) = &base {
            let mut src = Source::open(None, dir, false)?;
            // Placeholders name the address the daemon names in its own.
            let named = cfg.client_address().unwrap_or_else(|| first.clone());
            let done = bulk(o, b, &named, &mut src, dir, &to);
            src.close()?;
            done?;
        }
        give(
            &merged,
            &[dir].into_iter().chain(base.as_deref()).collect::<Vec<_>>(),
        );
        println!(
            "ringlet not started (--no-start): ringlet serve --defaults {}",
            to.display()
        );
        if !left.is_empty() {
            println!(
                "{} updates only rrdcached's journal held are left in {} for ringlet to \
                 apply when it starts",
                left.len(),
                dir.join(server::HANDOVER_UPDATES).display()
            );
        }
        return Ok(());
    }

    // ringlet on the sockets: a file a client names is imported as the daemon first sees
    // it; every other file is taken through the daemon below.
    let how = match way {
        // A client may have started it already (it waited for rrdcached's exit): with
        // rrdcached's sockets if it started after their unit, and then it is left to serve.
        Way::Units if started_after(crate::handover::UNIT) => {
            Ok("started by systemd for a client, on rrdcached's sockets".to_string())
        }
        Way::Units => {
            bar.set_message("systemctl restart ringlet");
            systemctl(&["restart", "ringlet.service"])
                .map(|()| "systemctl restart ringlet".to_string())
        }
        _ => {
            let exe = std::env::current_exe().map_err(|e| format!("ringlet's own path: {e}"))?;
            crate::handover::serve_with(&exe, &to, &held)
                .map(|()| format!("{} serve --defaults {}", exe.display(), to.display()))
        }
    };
    // The sockets are the daemon's (or systemd's) now.
    drop(held);
    let how = match how {
        Ok(h) => h,
        Err(e) => {
            watch.finish();
            bar.finish_and_clear();
            return Err(format!(
                "{e}; rrdcached is stopped: start ringlet (ringlet serve --defaults {}) or \
                 rrdcached again",
                to.display()
            ));
        }
    };
    let answered = wait_answer(&cfg);
    let put_back = watch.finish();
    bar.finish_and_clear();
    answered.map_err(|e| format!("ringlet started ({how}) but does not answer: {e}"))?;
    println!("ringlet serves {listing} ({how})");
    // What starts at boot, once clients are served: rrdcached not, ringlet with its sockets.
    if let Some(unit) = &to_disable {
        match systemctl(&["disable", "--quiet", unit]) {
            Ok(()) => println!("systemctl disable {unit}: rrdcached does not start at boot"),
            Err(e) => eprintln!("{e}: disable {unit} by hand"),
        }
    }
    if let Way::Units = way {
        let mut units = vec!["ringlet.service", "ringlet.socket"];
        if unit_text.is_some() {
            units.push(crate::handover::UNIT);
        }
        let mut args = vec!["enable", "--quiet"];
        args.extend(&units);
        systemctl(&args).unwrap_or_else(|e| eprintln!("{e}: enable {} by hand", units.join(" ")));
    }
    if let Some(p) = probing {
        let seen = p.finish();
        println!(
            "what clients saw of the hand-over (a connection every 10 ms and a PING at a time \
             on each address, from before ringlet took the sockets until it answered{}):\n{}",
            if put_back > 0 {
                format!("; rrdcached's exit removed a socket path {put_back} times, put back")
            } else {
                String::new()
            },
            crate::handover::report(&seen)
        );
    }
    let result = dir.join(server::HANDOVER_RESULT);
    if let Ok(said) = std::fs::read_to_string(&result) {
        print!("ringlet {said}");
        let _ = std::fs::remove_file(&result);
    } else if !left.is_empty() {
        println!(
            "the {} updates only rrdcached's journal held were not applied: {} holds them",
            left.len(),
            dir.join(server::HANDOVER_UPDATES).display()
        );
    }
    if found.pid.is_some() && !systemd() {
        println!(
            "rrdcached was stopped by its pid: keep it from starting at boot \
             (update-rc.d rrdcached disable), and start ringlet there instead"
        );
    }
    if let Some(b) = &base {
        let mut src = match crate::daemon_for(Some(first.clone()), dir) {
            crate::Daemon::At(_, c) => Source::Daemon(c),
            crate::Daemon::Unreachable(a, e) => return Err(format!("{a}: {e}")),
            crate::Daemon::None => return Err(format!("{first}: no daemon answers")),
        };
        bulk(o, b, &first, &mut src, dir, &to)?;
    }
    give(
        &merged,
        &[dir].into_iter().chain(base.as_deref()).collect::<Vec<_>>(),
    );
    Ok(())
}

/// The store and the base directory given to the daemon's user (the import moved files in
/// as root): one owner.
fn give(merged: &Merged, dirs: &[&Path]) {
    let Some(owner) = &merged.owner else {
        return;
    };
    for d in dirs {
        match give_tree(d, owner) {
            Ok(0) => {}
            Ok(n) => println!("gave {n} files under {} to {}", d.display(), owner.0),
            Err(e) => eprintln!("{e}: give {} to {} by hand", d.display(), owner.0),
        }
    }
}

/// Wait until the daemon answers on its first address (up to 5 minutes: a large store's
/// open reads its log).
fn wait_answer(cfg: &Config) -> Result<(), String> {
    let begun = Instant::now();
    loop {
        match connect(cfg) {
            Ok(mut c) => match c.request("PING") {
                Ok(_) => return Ok(()),
                Err(e) if begun.elapsed() > Duration::from_secs(300) => return Err(e),
                Err(_) => {}
            },
            Err(e) if begun.elapsed() > Duration::from_secs(300) => return Err(e),
            Err(_) => {}
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Write `text` to `path` whole (beside it, synced, renamed).
fn write_file(path: &Path, text: &str) -> Result<(), String> {
    let mut tmp = path.as_os_str().to_owned();
    tmp.push(".ringlet-tmp");
    let tmp = PathBuf::from(tmp);
    let w = || -> std::io::Result<()> {
        let mut f = std::fs::File::create(&tmp)?;
        f.write_all(text.as_bytes())?;
        f.sync_all()?;
        std::fs::rename(&tmp, path)
    };
    w().map_err(|e| format!("{}: {e}", path.display()))
}

/// Import every `.rrd` under `base` (as `import rrd --resume --move`).
fn bulk(
    o: &Opts,
    base: &Path,
    addr: &str,
    src: &mut Source,
    dir: &Path,
    to: &Path,
) -> Result<(), String> {
    let job = Job {
        kind: Kind::Rrd,
        tree: base.to_path_buf(),
        prefix: None,
        force: false,
        resume: true,
        quiet: o.quiet,
        moves: Some(addr.to_string()),
    };
    match crate::import::import(&job, src, dir) {
        Ok(n) => {
            println!("{n}");
            if n.failed > 0 {
                return Err(format!(
                    "{} files were not imported (above); they stay where they are: mend them \
                     and run `ringlet import rrd --resume --move {}` (or start ringlet with \
                     {}: it imports a file when a client first names it)",
                    n.failed,
                    base.display(),
                    to.display()
                ));
            }
            Ok(())
        }
        Err(e) if e.starts_with("no .rrd files") => {
            println!("{e}: nothing to import");
            Ok(())
        }
        Err(e) => Err(e),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(s: &str) -> Vec<String> {
        s.split_whitespace().map(String::from).collect()
    }

    #[test]
    fn a_daemon_run_as_another_user_gives_that_user_and_group() {
        // Our own process: root gives nothing, another user gives -U and -G.
        let own = identity(std::process::id(), &[]);
        // SAFETY: geteuid has no preconditions.
        let euid = unsafe { libc::geteuid() };
        assert_eq!(own.is_empty(), euid == 0, "{own:?}");
        if euid != 0 || !Path::new("/usr/bin/setpriv").exists() {
            return;
        }
        let mut child = std::process::Command::new("/usr/bin/setpriv")
            .args([
                "--reuid=65534",
                "--regid=65534",
                "--clear-groups",
                "sleep",
                "30",
            ])
            .spawn()
            .unwrap();
        let pid = child.id();
        let start = Instant::now();
        let mut got = Vec::new();
        while start.elapsed() < Duration::from_secs(10) {
            got = identity(pid, &[]);
            if !got.is_empty() {
                break;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        let only_g = identity(pid, &words("-U someone"));
        let _ = child.kill();
        let _ = child.wait();
        assert_eq!(got.len(), 4, "{got:?}");
        assert_eq!((got[0].as_str(), got[2].as_str()), ("-U", "-G"));
        // nobody and nogroup on Debian; the number where a system has no name for it.
        assert!(["nobody", "65534"].contains(&got[1].as_str()), "{got:?}");
        assert_eq!(only_g, got[2..]);
    }

    /// A process named rrdcached is taken only when it runs a root-owned binary of a system
    /// directory (or --exe) as root or a system user: a copy of sleep named rrdcached, run
    /// from a temporary directory, as root or as nobody, is not.
    #[test]
    fn a_process_named_rrdcached_is_taken_only_from_a_system_binary_and_user() {
        use std::os::unix::fs::PermissionsExt;
        // SAFETY: geteuid has no preconditions.
        if unsafe { libc::geteuid() } != 0 || !Path::new("/usr/bin/setpriv").exists() {
            return;
        }
        let dir =
            std::env::temp_dir().join(format!("ringlet-fake-rrdcached-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o755)).unwrap();
        let fake = dir.join("rrdcached");
        std::fs::copy("/bin/sleep", &fake).unwrap();
        std::fs::set_permissions(&fake, std::fs::Permissions::from_mode(0o755)).unwrap();
        let run = |as_nobody: bool| {
            let mut c = std::process::Command::new("/usr/bin/setpriv");
            if as_nobody {
                c.args(["--reuid=65534", "--regid=65534", "--clear-groups"]);
            }
            let child = c.arg(&fake).arg("30").spawn().unwrap();
            // Until it runs the fake (setpriv execs it).
            let start = Instant::now();
            while start.elapsed() < Duration::from_secs(10)
                && std::fs::read_link(format!("/proc/{}/exe", child.id()))
                    .ok()
                    .as_deref()
                    != Some(fake.as_path())
            {
                std::thread::sleep(Duration::from_millis(10));
            }
            child
        };
        let mut root = run(false);
        let mut nobody = run(true);
        let from_tmp = untrusted(root.id(), None);
        let given = untrusted(root.id(), Some(&fake));
        let nobody_given = untrusted(nobody.id(), Some(&fake));
        let found = find(&Opts {
            pid: Some(nobody.id()),
            ..Opts::default()
        });
        for c in [&mut root, &mut nobody] {
            let _ = c.kill();
            let _ = c.wait();
        }
        std::fs::remove_dir_all(&dir).unwrap();
        assert!(
            from_tmp.as_deref().is_some_and(|w| w.contains("--exe")),
            "{from_tmp:?}"
        );
        assert_eq!(given, None);
        assert!(
            nobody_given
                .as_deref()
                .is_some_and(|w| w.contains("uid 65534")),
            "{nobody_given:?}"
        );
        let err = found.err().unwrap_or_default();
        assert!(err.contains("is not taken as rrdcached"), "{err}");
    }

    #[test]
    fn a_process_is_in_the_service_its_cgroup_names() {
        assert_eq!(
            unit_in("0::/system.slice/rrdcached.service\n").as_deref(),
            Some("rrdcached.service")
        );
        assert_eq!(
            unit_in("12:pids:/system.slice/munin-rrd.service\n1:name=systemd:/system.slice/munin-rrd.service\n")
                .as_deref(),
            Some("munin-rrd.service")
        );
        assert_eq!(
            unit_in("0::/user.slice/user-0.slice/session-3.scope\n"),
            None
        );
        assert_eq!(unit_in("4:memory:/process_api/5dbe\n0::/\n"), None);
        assert_eq!(unit_of(u32::MAX), None);
    }

    fn found(args: &str) -> Found {
        Found {
            pid: Some(1),
            args: words(args),
            from: "test".into(),
        }
    }

    fn parsed(text: &str) -> Config {
        server::config::parse(&server::config::defaults_args(text).unwrap()).unwrap()
    }

    fn socket(cfg: &Config, path: &str) -> (Option<u32>, Option<String>, Option<Vec<usize>>) {
        let l = cfg
            .listen
            .iter()
            .find(|l| l.addr == Addr::Unix(path.into()))
            .unwrap_or_else(|| panic!("no {path} in {:?}", cfg.listen));
        (l.mode, l.group.clone(), l.allowed.clone())
    }

    #[test]
    fn without_a_package_file_rrdcacheds_options_are_written_less_pid_journal_foreground() {
        let f = found(
            "-B -w 1800 -z 900 -j /var/lib/rrdcached/journal/ -p /var/run/rrdcached.pid -g \
             -s www-data -m 0660 -l unix:/run/r.sock -l 127.0.0.1:42217 -b /d",
        );
        let none = |_: &Path| None;
        let m = merge(&f, None, Path::new("/var/lib/ringlet"), &[], None, &none);
        let cfg = parsed(&m.text);
        assert_eq!(cfg.commit_interval, 1800);
        assert_eq!(cfg.base.as_deref(), Some(Path::new("/d")));
        assert!(cfg.restrict_base && !cfg.foreground, "{}", m.text);
        assert_eq!(cfg.pid_file, None);
        assert_eq!(
            socket(&cfg, "/run/r.sock"),
            (Some(0o660), Some("www-data".into()), None)
        );
        assert_eq!(cfg.listen.len(), 2, "{:?}", cfg.listen);
        for gone in [
            "-j /var/lib/rrdcached/journal/",
            "-p /var/run/rrdcached.pid",
            "-g",
        ] {
            assert!(
                m.changes
                    .iter()
                    .any(|c| c.contains(&format!("left out rrdcached's {gone}"))),
                "{gone}: {:?}",
                m.changes
            );
        }
        assert_eq!(
            m.unix,
            [(PathBuf::from("/run/r.sock"), 0o660, "www-data".into())]
        );
        assert_eq!(m.owner, None);
        // rrdcached run as another user without -U/-G: they are added.
        let with = merge(
            &f,
            None,
            Path::new("/s"),
            &words("-U munin -G munin"),
            None,
            &none,
        );
        let cfg = parsed(&with.text);
        assert_eq!(
            (cfg.user.as_deref(), cfg.group.as_deref()),
            (Some("munin"), Some("munin"))
        );
        assert_eq!(with.owner, Some(("munin".into(), Some("munin".into()))));
    }

    const PACKAGE: &str = "WRITE_TIMEOUT=300\nSOCKFILE=/run/ringlet/ringlet.sock\n\
        SOCKGROUP=ringlet\nSOCKMODE=0660\nDAEMON_USER=ringlet\nDAEMON_GROUP=ringlet\n\
        BASE_OPTIONS=\"\"\nSTORE=/var/lib/ringlet\nRINGLET_OPTIONS=\"--http 127.0.0.1:8080\"\n";

    #[test]
    fn the_package_setup_is_kept_and_rrdcacheds_sockets_added_with_their_access() {
        let old = server::config::defaults_vars(PACKAGE).unwrap();
        let f = found(
            "-B -w 1800 -l unix:/var/run/rrdcached.sock -P FLUSH,UPDATE -l unix:/run/b.sock \
             -b /var/lib/rrdcached/db/ -U rrd -G rrd -p /var/run/rrdcached.pid",
        );
        let access = |p: &Path| {
            Some((
                if p.ends_with("b.sock") { 0o600 } else { 0o755 },
                "adm".into(),
            ))
        };
        let m = merge(
            &f,
            Some(&old),
            Path::new("/var/lib/ringlet"),
            &[],
            None,
            &access,
        );
        let cfg = parsed(&m.text);
        // The package's: its user, its socket with its group and mode, its own options.
        assert_eq!(
            (cfg.user.as_deref(), cfg.group.as_deref()),
            (Some("ringlet"), Some("ringlet"))
        );
        assert_eq!(
            socket(&cfg, "/run/ringlet/ringlet.sock"),
            (Some(0o660), Some("ringlet".into()), None)
        );
        assert_eq!(cfg.http.len(), 1, "{}", m.text);
        // rrdcached's: its sockets as clients reached them (not the package's mode and
        // group, which come first), its -P, its -w, -b, -B.
        assert_eq!(
            socket(&cfg, "/var/run/rrdcached.sock"),
            (Some(0o755), Some("adm".into()), None)
        );
        let (mode, group, allowed) = socket(&cfg, "/run/b.sock");
        assert_eq!((mode, group.as_deref()), (Some(0o600), Some("adm")));
        assert_eq!(allowed.map(|a| a.len()), Some(2));
        assert_eq!(cfg.commit_interval, 1800);
        assert_eq!(
            cfg.base.as_deref(),
            Some(Path::new("/var/lib/rrdcached/db/"))
        );
        assert!(cfg.restrict_base);
        assert_eq!(m.owner, Some(("ringlet".into(), Some("ringlet".into()))));
        for said in [
            "WRITE_TIMEOUT=1800",
            "BASE_PATH=/var/lib/rrdcached/db/",
            "left out rrdcached's -U rrd",
            "left out rrdcached's -G rrd",
            "unix:/var/run/rrdcached.sock (mode 0755, group adm)",
        ] {
            assert!(
                m.changes.iter().any(|c| c.contains(said)),
                "{said}: {:?}",
                m.changes
            );
            assert!(m.text.contains(said), "{said}: {}", m.text);
        }
        // A series outside -b: -B left out, and said why.
        let m = merge(
            &f,
            Some(&old),
            Path::new("/var/lib/ringlet"),
            &[],
            Some("/srv/x.rrd"),
            &access,
        );
        assert!(!parsed(&m.text).restrict_base, "{}", m.text);
        assert!(m.text.contains("/srv/x.rrd"), "{}", m.text);
    }

    #[test]
    fn a_value_joined_to_its_option_is_read_and_the_last_option_wins() {
        assert_eq!(
            option(&words("-j /a -b /x -j/b"), "-j").as_deref(),
            Some("/b")
        );
        let m = merge(
            &found("-w600 -b/d -j/j -l unix:/r.sock"),
            None,
            Path::new("/s"),
            &[],
            None,
            &|_: &Path| None,
        );
        let cfg = parsed(&m.text);
        assert_eq!(
            (cfg.commit_interval, cfg.base.as_deref()),
            (600, Some(Path::new("/d")))
        );
        assert!(
            m.changes
                .iter()
                .any(|c| c.contains("left out rrdcached's -j /j")),
            "{:?}",
            m.changes
        );
    }

    #[test]
    fn a_journal_file_is_read_in_order_and_a_cut_off_last_line_is_not_an_entry() {
        let dir = std::env::temp_dir().join(format!("ringlet-journal-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(
            dir.join("rrd.journal.1790000000.000000"),
            "update a.rrd 100:1\nupdate a.rrd 110:2\n",
        )
        .unwrap();
        std::fs::write(
            dir.join("rrd.journal.1790000100.000000"),
            "wrote /b/a.rrd\nupdate a.rrd 120:3\nupdate a.rrd 130:",
        )
        .unwrap();
        std::fs::write(dir.join("other"), "update a.rrd 140:5\n").unwrap();
        let left = journal_leftovers(&dir, Some(Path::new("/b")));
        let _ = std::fs::remove_dir_all(&dir);
        assert_eq!(left, ["UPDATE a.rrd 120:3"]);
    }

    #[test]
    fn only_updates_after_a_files_last_write_are_left() {
        let journal = "update a.rrd 100:1\n\
                       update /b/c.rrd 100:2 110:3\n\
                       wrote /b/a.rrd\n\
                       update a.rrd 120:4\n\
                       update d.rrd 100:5\n\
                       forget /b/d.rrd\n\
                       update /b/c.rrd 120:6\n\
                       bogus\n";
        assert_eq!(
            leftovers(journal, Some(Path::new("/b"))),
            [
                "UPDATE a.rrd 120:4",
                "UPDATE /b/c.rrd 100:2 110:3",
                "UPDATE /b/c.rrd 120:6"
            ]
        );
    }
}
