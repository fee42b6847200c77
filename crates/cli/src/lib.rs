//! rrdtool's commands over a ringlet store, as a library: the `ringlet` binary runs them on a
//! store it opens (or keeps open in pipe mode), and `ringlet serve` runs them on its own store
//! for a `ringlet` CLI beside it (the `RUN` request), so both print the same bytes.
//!
//! [`dispatch`] runs one command; [`commands`] does the work and prints rrdtool's exact text;
//! [`store`] picks the store and names; [`getopt`] parses options like GNU getopt; [`usage`]
//! holds the per-command usage texts; [`take_daemon`] takes rrdtool's `--daemon` off a
//! command line.

pub mod client;
pub mod commands;
pub mod drawer;
pub mod getopt;
pub mod graph;
pub mod librrd;
pub mod store;
pub mod usage;

pub use commands::{Ctx, Outcome};

pub const HELP: &str = "\
ringlet - an RRD-exact metrics store (rrdtool 1.7.2 compatible command line)

Usage: ringlet [--store DIR] command command_options

Commands (arguments and output as rrdtool's; `ringlet <command>` shows its usage):
  create, update, updatev, fetch, info, first, last, lastupdate, dump, restore, xport,
  tune, resize, graph, graphv (drawn by the installed rrdtool, on copies of the files)
Daemon, export, import and pipe mode:
  serve    an rrdcached-compatible daemon over the same store (ringlet serve --help)
  stats    print a running daemon's STATS (ringlet stats [-d|--daemon ADDR])
  export   write real .rrd files (ringlet export --help)
  import   read a tree of .rrd, whisper or PHPFina files into the store
           (ringlet import --help)
  migrate  replace the running rrdcached in place: same options and sockets, its
           files imported (ringlet migrate --help)
  repair   open a store whose log is damaged, cutting it there (ringlet repair --help)
  check    list the series whose stored rows are damaged on disk; --cut makes those
           rows unknown (ringlet check --help)
  -        read commands from stdin like `rrdtool -` (OK/ERROR after each; quit ends)

RRD file names are names inside the store (e.g. `db/a.rrd`), not files on disk.
The store is DIR, else $RINGLET_STORE, else /var/lib/ringlet when run as
root, else $XDG_DATA_HOME/ringlet, else ~/.local/share/ringlet.

Beside a running `ringlet serve`: every command takes rrdtool's --daemon ADDR
(or $RRDCACHED_ADDRESS) and then runs in that daemon; without either, a store
held by a daemon is reached through the address it records (STORE/daemon).
The output is the same as without a daemon.
";

/// rrdtool commands ringlet does not implement.
const NOT_YET: &[&str] = &["list", "flushcached", "modify"];

/// The usage `ringlet <cmd>` prints without arguments (empty for a command it lacks).
pub fn usage_text_of(cmd: &str) -> String {
    usage::usage_of(cmd).map_or_else(String::new, |b| usage_text(cmd, b))
}

fn usage_text(cmd: &str, body: &str) -> String {
    format!(
        "ringlet {} (rrdtool 1.7.2 compatible)\n\nUsage: ringlet [--store DIR] {cmd} command_options\n{body}",
        env!("CARGO_PKG_VERSION")
    )
}

/// Whether `cmd` changes the store (the daemon commits after it).
pub fn writes(cmd: &str) -> bool {
    matches!(
        cmd,
        "create" | "update" | "updatev" | "restore" | "tune" | "resize" | "check"
    )
}

/// Run one rrdtool command (`cmd` and its arguments) in `ctx`.
pub fn dispatch(cmd: &str, args: &[String], ctx: &Ctx) -> Outcome {
    // Rows the disk no longer holds as written read as unknown inside the engine; a command
    // that met any answers an error instead of printing them as a gap (docs/DURABILITY.md).
    if cmd == "check" {
        // It reads damaged rows on purpose, to list and cut them.
        return commands::check(ctx, args);
    }
    let (mut out, damage) = rrd::rows::watch(|| dispatch_inner(cmd, args, ctx));
    if let Some(d) = damage {
        let name = if matches!(cmd, "xport" | "graph" | "graphv") {
            "a series the DEFs read"
        } else {
            args.iter()
                .find(|a| !a.starts_with('-'))
                .map_or("the store", String::as_str)
        };
        out.stdout.clear();
        out.file = None;
        out.error = Some(d.message(name));
    }
    out
}

fn dispatch_inner(cmd: &str, args: &[String], ctx: &Ctx) -> Outcome {
    if matches!(cmd, "--version" | "-v") {
        // rrdtool's first words, which Cacti reads (`^RRDtool ([0-9.]+) `) to tell which
        // rrdtool its path_rrdtool is.
        return Outcome::ok(format!(
            "RRDtool 1.7.2  (ringlet {}: rrdtool 1.7.2's commands over a ringlet store)\n\n{HELP}",
            env!("CARGO_PKG_VERSION")
        ));
    }
    if matches!(cmd, "--help" | "-h" | "help") {
        return Outcome::ok(HELP.into());
    }
    match cmd {
        // `ringlet export`'s two steps, run where the store is (here or in the daemon).
        EXPORT_NAMES => return export_names(ctx, args),
        EXPORT_FILE => return export_file(ctx, args),
        EXPORT_BLOBS => return export_blobs(ctx, args),
        EXPORT_BLOB => return export_blob(ctx, args),
        graph::FETCH_ROWS => return fetch_rows(ctx, args),
        _ => {}
    }
    if matches!(cmd, "graph" | "graphv") {
        // The binary draws them (rrdtool's renderer in a drawing process), never here.
        return Outcome::err(format!("'{cmd}' is drawn by the ringlet binary, not here"));
    }
    if NOT_YET.contains(&cmd) {
        return Outcome::err(format!("ringlet does not support '{cmd}' yet"));
    }
    let Some(body) = usage::usage_of(cmd) else {
        return Outcome::ok(HELP.into());
    };
    // rrdtool prints a command's usage when it gets no arguments at all; ringlet also for --help.
    if args.is_empty() || args.iter().any(|a| a == "--help") {
        return Outcome::ok(usage_text(cmd, body));
    }
    match cmd {
        "create" => commands::create(ctx, args),
        "update" => commands::update(ctx, args, false),
        "updatev" => commands::update(ctx, args, true),
        "fetch" => commands::fetch_cmd(ctx, args),
        "info" => commands::info(ctx, args),
        "first" => commands::first(ctx, args),
        "last" => commands::last(ctx, args),
        "lastupdate" => commands::lastupdate(ctx, args),
        "dump" => commands::dump(ctx, args),
        "restore" => commands::restore(ctx, args),
        "tune" => commands::tune(ctx, args),
        "resize" => commands::resize(ctx, args),
        _ => commands::xport(ctx, args),
    }
}

/// `ringlet export`'s first step: the store's names that match any of the globs (all names
/// when none), one a line, sorted.
pub const EXPORT_NAMES: &str = "export-names";
/// `ringlet export`'s second step: a series as the bytes of rrdtool 1.7.2's `.rrd` file, in hex.
pub const EXPORT_FILE: &str = "export-file";

/// `ringlet export phpfina|phptimeseries`'s first step: the store's blobs (the emoncms views'
/// files) whose names begin with the prefix given, `NAME LENGTH` a line, sorted.
pub const EXPORT_BLOBS: &str = "export-blobs";
/// Its second step: `LENGTH` bytes of a blob from `OFFSET`, in hex (`-` for none).
pub const EXPORT_BLOB: &str = "export-blob";

/// Most bytes one [`EXPORT_BLOB`] gives (twice that in hex on the daemon's line).
pub const EXPORT_BLOB_PIECE: u64 = 1 << 20;

fn export_blobs(ctx: &Ctx, args: &[String]) -> Outcome {
    let [prefix] = args else {
        return Outcome::err(format!("usage: {EXPORT_BLOBS} PREFIX"));
    };
    if ctx.shared.is_none() && !ctx.store_dir.exists() {
        return Outcome::ok(String::new());
    }
    commands::with_store(ctx, |st| {
        let mut out = String::new();
        for (n, len) in st.blobs() {
            if n.starts_with(prefix.as_str()) {
                out.push_str(&format!("{n} {len}\n"));
            }
        }
        Outcome::ok(out)
    })
}

fn export_blob(ctx: &Ctx, args: &[String]) -> Outcome {
    let usage = || Outcome::err(format!("usage: {EXPORT_BLOB} NAME OFFSET LENGTH"));
    let [name, off, len] = args else {
        return usage();
    };
    let (Ok(off), Ok(len)) = (off.parse::<u64>(), len.parse::<u64>()) else {
        return usage();
    };
    commands::with_store(ctx, |st| {
        match st.blob_read(name, off, len.min(EXPORT_BLOB_PIECE)) {
            Ok(b) if b.is_empty() => Outcome::ok("-".into()),
            Ok(b) => Outcome::ok(hex(&b)),
            Err(e) => Outcome::err(format!("{name}: {e}")),
        }
    })
}

fn export_names(ctx: &Ctx, globs: &[String]) -> Outcome {
    if ctx.shared.is_none() && !ctx.store_dir.exists() {
        return Outcome::ok(String::new());
    }
    commands::with_store(ctx, |st| {
        let mut names = st.names();
        names.retain(|n| globs.is_empty() || globs.iter().any(|g| glob_match(g, n)));
        names.sort();
        let mut out = String::new();
        for n in names {
            out.push_str(&n);
            out.push('\n');
        }
        Outcome::ok(out)
    })
}

fn export_file(ctx: &Ctx, args: &[String]) -> Outcome {
    let [name] = args else {
        return Outcome::err(format!("usage: {EXPORT_FILE} NAME"));
    };
    commands::read_one(ctx, name, |st| {
        let rrd = match commands::load(st, name) {
            Ok(r) => r,
            Err(e) => return Outcome::err(e),
        };
        match rrd::rrdfile::write(rrd) {
            Ok(bytes) => Outcome::ok(hex(&bytes)),
            Err(e) => Outcome::err(e.msg),
        }
    })
}

/// A graph's rows for one DEF ([`graph::FETCH_ROWS`]), encoded as the drawing process takes
/// them, in hex.
fn fetch_rows(ctx: &Ctx, args: &[String]) -> Outcome {
    let Some((name, cf, start, end, step)) = graph::parse_fetch_rows(args) else {
        return Outcome::err(format!(
            "usage: {} NAME CF START END STEP",
            graph::FETCH_ROWS
        ));
    };
    commands::read_one(ctx, name, |st| {
        let rrd = match commands::load(st, name) {
            Ok(r) => r,
            Err(e) => return Outcome::err(e),
        };
        match graph::rows(rrd, name, cf, start, end, step) {
            Ok(r) => Outcome::ok(hex(&drawer::encode_rows(&r))),
            Err(e) => Outcome::err(e),
        }
    })
}

pub use proto::run::{hex, unhex};

/// The C library's text for an I/O error (`strerror`), as rrdtool prints it: Rust's
/// message without its "(os error N)".
pub fn strerror(e: &std::io::Error) -> String {
    let s = e.to_string();
    match s.find(" (os error ") {
        Some(i) => s[..i].to_string(),
        None => s,
    }
}

/// Shell-style matching of a whole name: `*` any run of characters (`/` too), `?` one
/// character, `[abc]`, `[a-z]`, `[!x]` one character of (or not of) a set.
pub fn glob_match(pat: &str, name: &str) -> bool {
    let p: Vec<char> = pat.chars().collect();
    let n: Vec<char> = name.chars().collect();
    // Iterative, with one backtrack point for the last `*` (no recursion on input depth).
    let (mut pi, mut ni) = (0, 0);
    let mut star: Option<(usize, usize)> = None;
    while ni < n.len() {
        let step = match p.get(pi) {
            Some('*') => {
                star = Some((pi, ni));
                pi += 1;
                continue;
            }
            Some('?') => Some(pi + 1),
            Some('[') => class(&p, pi, n[ni]),
            Some(&c) if c == n[ni] => Some(pi + 1),
            _ => None,
        };
        match step {
            Some(next) => {
                pi = next;
                ni += 1;
            }
            None => match star {
                Some((sp, sn)) => {
                    pi = sp + 1;
                    ni = sn + 1;
                    star = Some((sp, sn + 1));
                }
                None => return false,
            },
        }
    }
    p[pi..].iter().all(|&c| c == '*')
}

/// Match `c` against the class starting at `p[i] == '['`: the index after the class, if `c`
/// is in it. An unclosed `[` is a literal.
fn class(p: &[char], i: usize, c: char) -> Option<usize> {
    let mut j = i + 1;
    let negate = matches!(p.get(j), Some('!') | Some('^'));
    if negate {
        j += 1;
    }
    let mut hit = false;
    let mut first = true;
    while j < p.len() && (p[j] != ']' || first) {
        first = false;
        if j + 2 < p.len() && p[j + 1] == '-' && p[j + 2] != ']' {
            hit |= p[j] <= c && c <= p[j + 2];
            j += 3;
        } else {
            hit |= p[j] == c;
            j += 1;
        }
    }
    if j >= p.len() {
        return (c == '[').then_some(i + 1);
    }
    (hit != negate).then_some(j + 1)
}

/// Take rrdtool's `--daemon ADDR` (`--daemon=ADDR`, `-d ADDR`, `-dADDR`) off a command's
/// arguments: the address (the last one given) and the rest, in order. Arguments after `--`
/// are left alone. `restore` has no such option (its `-d` is not one), so it is left as is;
/// `tune`'s short form is `-D` (its `-d` is the data source type).
pub fn take_daemon(cmd: &str, args: &[String]) -> (Option<String>, Vec<String>) {
    if cmd == "restore" {
        return (None, args.to_vec());
    }
    let short = if cmd == "tune" { "-D" } else { "-d" };
    let mut addr = None;
    let mut rest = Vec::with_capacity(args.len());
    let mut it = args.iter();
    while let Some(a) = it.next() {
        if a == "--" {
            rest.push(a.clone());
            rest.extend(it.cloned());
            break;
        }
        if a == "--daemon" || a == short {
            match it.next() {
                Some(v) => addr = Some(v.clone()),
                // Left for the command, which reports the missing argument as getopt does.
                None => rest.push(a.clone()),
            }
        } else if let Some(v) = a.strip_prefix("--daemon=") {
            addr = Some(v.to_string());
        } else if let Some(v) = a
            .strip_prefix(short)
            .filter(|v| !v.is_empty() && !a.starts_with("--"))
        {
            addr = Some(v.to_string());
        } else {
            rest.push(a.clone());
        }
    }
    (addr, rest)
}

/// Split a pipe-mode line into arguments: whitespace separates, `"..."` and `'...'` group
/// (quotes removed).
pub fn split_args(line: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur = String::new();
    let mut in_arg = false;
    let mut quote: Option<char> = None;
    for c in line.chars() {
        match quote {
            Some(q) if c == q => quote = None,
            Some(_) => cur.push(c),
            None if c == '"' || c == '\'' => {
                quote = Some(c);
                in_arg = true;
            }
            None if c.is_whitespace() => {
                if in_arg {
                    out.push(std::mem::take(&mut cur));
                    in_arg = false;
                }
            }
            None => {
                cur.push(c);
                in_arg = true;
            }
        }
    }
    if in_arg {
        out.push(cur);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v(s: &[&str]) -> Vec<String> {
        s.iter().map(|x| x.to_string()).collect()
    }

    #[test]
    fn globs_match_like_the_shell() {
        assert!(glob_match("*", "a/b.rrd"));
        assert!(glob_match("h*/cpu.rrd", "host1/cpu.rrd"));
        assert!(!glob_match("h*/cpu.rrd", "host1/mem.rrd"));
        assert!(glob_match("m?.rrd", "m1.rrd"));
        assert!(glob_match("m[0-3].rrd", "m2.rrd"));
        assert!(!glob_match("m[!0-3].rrd", "m2.rrd"));
        assert!(glob_match("a[", "a["));
        assert!(glob_match("*a*b*c", "xaybzc"));
        assert!(!glob_match("*a*b*c", "xaybz"));
    }

    #[test]
    fn quotes_group_and_disappear() {
        assert_eq!(
            split_args(r#"update a.rrd "1700009300:1:1"  'x y' N:2"#),
            ["update", "a.rrd", "1700009300:1:1", "x y", "N:2"]
        );
        assert!(split_args("   ").is_empty());
    }

    #[test]
    fn daemon_options_come_off_in_every_form() {
        let (a, r) = take_daemon("fetch", &v(&["x.rrd", "-d", "unix:/s", "AVERAGE"]));
        assert_eq!(
            (a.as_deref(), r),
            (Some("unix:/s"), v(&["x.rrd", "AVERAGE"]))
        );
        let (a, r) = take_daemon("fetch", &v(&["--daemon=h:1", "x.rrd", "-dunix:/t", "MAX"]));
        assert_eq!((a.as_deref(), r), (Some("unix:/t"), v(&["x.rrd", "MAX"])));
        let (a, r) = take_daemon("fetch", &v(&["x.rrd", "--", "-d", "y"]));
        assert_eq!((a, r), (None, v(&["x.rrd", "--", "-d", "y"])));
        let (a, r) = take_daemon("restore", &v(&["-d", "x"]));
        assert_eq!((a, r), (None, v(&["-d", "x"])));
    }
}
