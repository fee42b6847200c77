//! `graph` and `graphv`: drawn by the installed rrdtool's own renderer, on `.rrd` files the
//! store writes for the one command.
//!
//! Each `DEF:vname=FILE:...` names a series; its bytes (`rrd::rrdfile::write`, the file
//! `ringlet export` writes, which rrdtool reads as its own) are written to a private
//! directory (mode 0700, removed afterwards), the DEF is pointed at that copy, and rrdtool
//! draws on the arguments, its output (PNG, SVG, PDF, the `WxH` line, PRINT and GPRINT
//! lines) passed through byte for byte. The image and PRINT lines are therefore rrdtool
//! 1.7.2's for a file that holds what the store holds: the same bytes a graph of the plain
//! file gives (through rrdcached's FETCH, rrdtool picks its archive without the graph's
//! step and may draw from another one). The copies' paths are put back to the names given
//! in whatever rrdtool prints; a DEF whose series is not there names a path that is not
//! there either, so that rrdtool says so itself, in its order.
//!
//! Who draws ([`Renderer`]): one `rrdtool -` for a command or a whole pipe-mode session
//! (cairo numbers the surfaces of a process, and an SVG names its own after them, so a
//! session's graphs are drawn by one process, in order, as rrdtool's own pipe mode does).
//! Alone, it is started before the store is read. Beside a daemon the graph is drawn in the
//! daemon ([`DRAW`], [`Spare`]): an `rrdtool -` it started ahead for the connection, with
//! the client's time zone and locale, reads copies it writes from its store; the image, what
//! rrdtool printed and an output file's bytes come back in hex, and the file is written by
//! the client. Without rrdtool on PATH the command says so.
//!
//! Hand-written (no crate): the argument quoting of rrdtool's pipe mode and the end of a
//! graph's answer (a `last` of a file that cannot exist, whose error ends it: an image may
//! hold any bytes) are rrdtool's own conventions.

use crate::Outcome;
use std::io::{Read, Write};
use std::path::PathBuf;
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};

/// The microseconds of the clock, to tell names apart.
fn micros() -> u32 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.subsec_micros())
}

/// What a graph printed: its standard output's bytes (an image may be among them) and its
/// error.
pub struct Drawn {
    pub stdout: Vec<u8>,
    pub error: Option<String>,
}

impl Drawn {
    fn err(e: impl Into<String>) -> Drawn {
        Drawn {
            stdout: Vec::new(),
            error: Some(e.into()),
        }
    }
}

/// `graphv`'s output for `-` split into the output for a file (the `image = BLOB_SIZE:N`
/// key and its N bytes taken out) and the image.
pub fn split_image_key(out: &[u8]) -> (Vec<u8>, &[u8]) {
    const KEY: &[u8] = b"image = BLOB_SIZE:";
    let at = out
        .windows(KEY.len())
        .position(|w| w == KEY)
        .filter(|&i| i == 0 || out[i - 1] == b'\n');
    let Some(i) = at else {
        return (out.to_vec(), &[]);
    };
    let Some(nl) = out[i..].iter().position(|&b| b == b'\n').map(|p| i + p) else {
        return (out.to_vec(), &[]);
    };
    let n: usize = std::str::from_utf8(&out[i + KEY.len()..nl])
        .ok()
        .and_then(|s| s.trim().parse().ok())
        .unwrap_or(0);
    let end = (nl + 1 + n).min(out.len());
    let mut rest = out[..i].to_vec();
    rest.extend_from_slice(&out[end..]);
    (rest, &out[nl + 1..end])
}

/// `arg` with a `DEF:`'s file sent to librrd's fetch callback (`cb//` before it; other
/// arguments as they are).
pub fn to_callback(arg: &str) -> String {
    match def_file(arg) {
        Some((start, _, _)) => format!("{}cb//{}", &arg[..start], &arg[start..]),
        None => arg.to_string(),
    }
}

/// The file name inside a `DEF:` argument: the byte range after `vname=` up to the first
/// colon not escaped by a backslash, and the text it stands for (escapes removed).
fn def_file(arg: &str) -> Option<(usize, usize, String)> {
    let body = arg.strip_prefix("DEF:")?;
    let eq = body.find('=')?;
    let start = 4 + eq + 1;
    let b = arg.as_bytes();
    let mut i = start;
    let mut name = String::new();
    while i < b.len() {
        match b[i] {
            b'\\' if b.get(i + 1) == Some(&b':') => {
                name.push(':');
                i += 2;
            }
            b':' => break,
            _ => {
                let ch = arg[i..].chars().next()?;
                name.push(ch);
                i += ch.len_utf8();
            }
        }
    }
    Some((start, i, name))
}

/// A DEF without its `:daemon=ADDR` option (the copies are read as files).
fn without_daemon(arg: &str) -> String {
    let mut out = String::with_capacity(arg.len());
    let mut rest = arg;
    while let Some(at) = rest.find(":daemon=") {
        out.push_str(&rest[..at]);
        // The address may hold colons (`unix:/path`): it ends at the next option.
        let after = &rest[at + 1..];
        let end = [":step=", ":start=", ":end=", ":reduce=", ":daemon="]
            .iter()
            .filter_map(|o| after.find(o))
            .min()
            .unwrap_or(after.len());
        rest = &after[end..];
    }
    out.push_str(rest);
    out
}

/// A private directory for the copies, removed when dropped.
struct Scratch(PathBuf);

impl Scratch {
    fn new() -> std::io::Result<Scratch> {
        use std::os::unix::fs::DirBuilderExt;
        let base = std::env::temp_dir();
        for n in 0..100u32 {
            let p = base.join(format!(
                "ringlet-graph-{}-{}-{n}",
                std::process::id(),
                micros()
            ));
            match std::fs::DirBuilder::new().mode(0o700).create(&p) {
                Ok(()) => return Ok(Scratch(p)),
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
                Err(e) => return Err(e),
            }
        }
        Err(std::io::Error::other(
            "no private directory for the graph's files",
        ))
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// The files the DEFs of `args` name, each once, in order.
pub fn files(args: &[String]) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for (_, _, name) in args.iter().filter_map(|a| def_file(a)) {
        if !out.contains(&name) {
            out.push(name);
        }
    }
    out
}

/// The bytes of a file from the answer of `export-file` (hex), or its error.
pub fn from_hex(out: Outcome) -> Result<Vec<u8>, String> {
    if let Some(e) = out.error {
        return Err(e);
    }
    let mut bytes = Vec::new();
    crate::unhex(out.stdout.trim_end(), &mut bytes)?;
    Ok(bytes)
}

/// Where graphs are drawn: one `rrdtool -` for a command or a whole pipe-mode session. In a
/// session every graph goes to the same rrdtool process, in order, as it would in `rrdtool
/// -` itself: cairo numbers the surfaces a process makes, and an SVG names its own after
/// that number (`<g id="surface9">`), so only one process for the session's graphs gives the
/// same bytes as rrdtool's pipe mode.
pub struct Renderer {
    /// Drawing for one command (`ringlet graph ...`), not a pipe-mode session.
    command: bool,
    scratch: Option<Scratch>,
    child: Option<Session>,
    /// Graphs drawn: their copies' names and end marks.
    drawn: u64,
    /// The environment rrdtool draws in (the client's, in the daemon); None: this process's.
    env: Option<Env>,
    /// A pipe-mode session beside a daemon: whether its graphs are drawn there (decided by
    /// its first graph, so that they are all drawn by one rrdtool).
    remote: Option<bool>,
    /// In the daemon: its place among the [`MAX_DRAWERS`].
    _ticket: Option<Ticket>,
}

/// The environment a drawing depends on: the time zone and locale (axis labels, dates in
/// COMMENTs, number formats) and rrdtool's default font.
pub const ENV_KEYS: [&str; 8] = [
    "TZ",
    "LANG",
    "LANGUAGE",
    "LC_ALL",
    "LC_CTYPE",
    "LC_NUMERIC",
    "LC_TIME",
    "RRD_DEFAULT_FONT",
];

/// The values of [`ENV_KEYS`] a process has (those set, in that order).
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub struct Env(Vec<(String, String)>);

impl Env {
    /// This process's.
    pub fn here() -> Env {
        Env(ENV_KEYS
            .iter()
            .filter_map(|k| std::env::var(k).ok().map(|v| (k.to_string(), v)))
            .collect())
    }

    /// The variables set, as (key, value).
    pub fn pairs(&self) -> &[(String, String)] {
        &self.0
    }

    /// As arguments of the daemon's `draw`: `KEY=VALUE` each, then `--`.
    fn to_args(&self) -> Vec<String> {
        let mut a: Vec<String> = self.0.iter().map(|(k, v)| format!("{k}={v}")).collect();
        a.push("--".into());
        a
    }

    /// Read back from `draw`'s arguments: the environment, and the arguments after `--`.
    fn from_args(args: &[String]) -> Option<(Env, &[String])> {
        let end = args.iter().position(|a| a == "--")?;
        let mut env = Vec::new();
        for a in &args[..end] {
            let (k, v) = a.split_once('=')?;
            if !ENV_KEYS.contains(&k) {
                return None;
            }
            env.push((k.to_string(), v.to_string()));
        }
        Some((Env(env), &args[end + 1..]))
    }
}

/// The `rrdtool -` of a session.
struct Session {
    child: Child,
    stdin: ChildStdin,
    stdout: ChildStdout,
}

impl Drop for Session {
    fn drop(&mut self) {
        // `quit` ends it by itself (its exit, with its font threads, takes milliseconds
        // that a one-shot graph need not wait for); one that does not read it is killed.
        if self
            .stdin
            .write_all(b"quit\n")
            .and_then(|_| self.stdin.flush())
            .is_err()
        {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

/// An argument for a pipe-mode line that rrdtool reads back as it is: single-quoted
/// stretches, a single quote itself in double quotes (rrdtool joins adjacent quoted parts).
fn quoted(arg: &str) -> String {
    let mut s = String::with_capacity(arg.len() + 2);
    for (i, part) in arg.split('\'').enumerate() {
        if i > 0 {
            s.push_str("\"'\"");
        }
        if !part.is_empty() {
            s.push('\'');
            s.push_str(part);
            s.push('\'');
        }
    }
    if s.is_empty() {
        s.push_str("''");
    }
    s
}

/// The place of the last `needle` in `hay`.
fn rfind(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len()).rposition(|w| w == needle)
}

/// A reply of rrdtool's pipe mode split into the command's output and its error: the
/// status line (`OK u:..` or `ERROR: ..`) is the last line, and may follow an image's last
/// byte on its line.
fn split_reply(reply: &[u8]) -> (Vec<u8>, Option<String>) {
    let body = reply.strip_suffix(b"\n").unwrap_or(reply);
    let last_line = |at: usize| !body[at..].contains(&b'\n');
    let ok = rfind(body, b"OK u:").filter(|&p| last_line(p));
    let err = rfind(body, b"ERROR: ").filter(|&p| last_line(p));
    match (ok, err) {
        (Some(o), e) if e.is_none_or(|e| o > e) => (body[..o].to_vec(), None),
        (_, Some(e)) => (
            body[..e].to_vec(),
            Some(String::from_utf8_lossy(&body[e + 7..]).into_owned()),
        ),
        _ => (
            reply.to_vec(),
            Some("rrdtool's answer to the graph has no status line".into()),
        ),
    }
}

impl Renderer {
    /// For a pipe-mode session: one `rrdtool -` for all its graphs, started by the first.
    pub fn session() -> Renderer {
        Renderer {
            command: false,
            scratch: None,
            child: None,
            drawn: 0,
            env: None,
            remote: None,
            _ticket: None,
        }
    }

    /// For one command, drawn by an `rrdtool -` started at once ([`Renderer::start`]).
    pub fn command() -> Renderer {
        Renderer {
            command: true,
            ..Renderer::session()
        }
    }

    /// The private directory of this renderer's files, made at its first use.
    fn scratch_dir(&mut self) -> Result<PathBuf, String> {
        if self.scratch.is_none() {
            self.scratch = Some(Scratch::new().map_err(|e| format!("graph: {e}"))?);
        }
        Ok(self
            .scratch
            .as_ref()
            .map(|s| s.0.clone())
            .unwrap_or_default())
    }

    /// Start the session's rrdtool now, so that its start (a fifth of a graph's time: its
    /// libraries) overlaps the store's opening; a failure is reported by the first draw.
    pub fn start(&mut self) {
        if self.child.is_none() {
            self.child = spawn_session(self.env.as_ref()).ok();
        }
    }

    /// Draw `rrdtool <cmd> args` (`cmd`: graph or graphv); `export` gives the bytes of a
    /// series' `.rrd` file, or rrdtool's error for it, where the store is.
    pub fn draw(
        &mut self,
        cmd: &str,
        args: &[String],
        export: &mut dyn FnMut(&str) -> Result<Vec<u8>, String>,
    ) -> Drawn {
        let dir = match self.scratch_dir() {
            Ok(d) => d,
            Err(e) => return Drawn::err(e),
        };
        self.drawn += 1;
        // Each file once, however many DEFs name it. A series that is not there is named
        // by a path that is not there either: rrdtool says so itself, in its order.
        let mut copies: Vec<(String, PathBuf)> = Vec::new();
        let mut argv = Vec::with_capacity(args.len());
        for a in args {
            let Some((start, end, name)) = def_file(a) else {
                argv.push(a.clone());
                continue;
            };
            let copy = match copies.iter().find(|(n, _)| *n == name) {
                Some((_, p)) => p.clone(),
                None => {
                    let p = dir.join(format!("{}.rrd", copies.len()));
                    match export(&name) {
                        Ok(bytes) => {
                            if let Err(e) = std::fs::write(&p, &bytes) {
                                return Drawn::err(format!("graph: {}: {e}", p.display()));
                            }
                        }
                        Err(e) if e.ends_with("No such file or directory") => {
                            let _ = std::fs::remove_file(&p);
                        }
                        Err(e) => return Drawn::err(e),
                    }
                    copies.push((name.clone(), p.clone()));
                    p
                }
            };
            let path = copy.to_string_lossy().replace(':', "\\:");
            argv.push(without_daemon(&format!(
                "{}{path}{}",
                &a[..start],
                &a[end..]
            )));
        }
        // `rrdtool graph` alone prints graph's usage; its pipe mode, the general one.
        let (stdout, error) = if !(self.command && args.is_empty()) {
            self.in_session(cmd, &argv, &dir)
        } else {
            one_shot(cmd, &argv)
        };
        let back = |bytes: &[u8]| -> Vec<u8> {
            let mut v = bytes.to_vec();
            for (name, p) in &copies {
                v = replace(&v, p.to_string_lossy().as_bytes(), name.as_bytes());
            }
            v
        };
        Drawn {
            stdout: back(&stdout),
            error: error.map(|e| String::from_utf8_lossy(&back(e.as_bytes())).into_owned()),
        }
    }

    /// The graph sent to the session's rrdtool, then a line whose answer cannot be part of
    /// an image (an error naming a file that cannot exist): all before that answer is the
    /// graph's.
    fn in_session(
        &mut self,
        cmd: &str,
        argv: &[String],
        dir: &std::path::Path,
    ) -> (Vec<u8>, Option<String>) {
        if argv.iter().any(|a| a.contains(['\n', '\r'])) {
            return one_shot(cmd, argv);
        }
        if self.child.is_none() {
            match spawn_session(self.env.as_ref()) {
                Ok(s) => self.child = Some(s),
                Err(e) => return (Vec::new(), Some(e)),
            }
        }
        let Some(s) = self.child.as_mut() else {
            return (Vec::new(), Some("rrdtool is not running".into()));
        };
        let mark = dir.join(format!("end-{}-{}", self.drawn, micros()));
        let mut line = String::from(cmd);
        for a in argv {
            line.push(' ');
            line.push_str(&quoted(a));
        }
        line.push_str(&format!("\nlast {}\n", quoted(&mark.to_string_lossy())));
        let end = format!(
            "ERROR: opening '{}': No such file or directory\n",
            mark.display()
        );
        let sent = s
            .stdin
            .write_all(line.as_bytes())
            .and_then(|_| s.stdin.flush());
        let mut reply = Vec::new();
        let mut buf = [0u8; 65536];
        let done = sent.is_ok()
            && loop {
                if reply.ends_with(end.as_bytes()) {
                    break true;
                }
                match s.stdout.read(&mut buf) {
                    Ok(0) | Err(_) => break false,
                    Ok(n) => reply.extend_from_slice(&buf[..n]),
                }
            };
        if !done {
            // It ended (killed, or out of memory): the next graph starts another.
            self.child = None;
            return (
                Vec::new(),
                Some("rrdtool ended while drawing the graph".into()),
            );
        }
        reply.truncate(reply.len() - end.len());
        // `last` prints -1 before its error.
        if let Some(r) = reply.strip_suffix(b"-1\n") {
            reply.truncate(r.len());
        }
        split_reply(&reply)
    }
}

const NO_RRDTOOL: &str = "draws with rrdtool's own renderer, and rrdtool could not be run";

fn spawn_session(env: Option<&Env>) -> Result<Session, String> {
    let mut c = Command::new("rrdtool");
    if let Some(env) = env {
        for k in ENV_KEYS {
            c.env_remove(k);
        }
        c.envs(env.0.iter().map(|(k, v)| (k, v)));
    }
    let mut child = c
        .arg("-")
        .env_remove("RRDCACHED_ADDRESS")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .map_err(|e| {
            format!("graph {NO_RRDTOOL} ({e}): install rrdtool (Debian: apt install rrdtool)")
        })?;
    match (child.stdin.take(), child.stdout.take()) {
        (Some(stdin), Some(stdout)) => Ok(Session {
            child,
            stdin,
            stdout,
        }),
        _ => {
            let _ = child.kill();
            let _ = child.wait();
            Err("rrdtool's pipes could not be opened".into())
        }
    }
}

/// `rrdtool <cmd> argv` as its own process: its standard output and error.
fn one_shot(cmd: &str, argv: &[String]) -> (Vec<u8>, Option<String>) {
    let out = match Command::new("rrdtool")
        .arg(cmd)
        .args(argv)
        .env_remove("RRDCACHED_ADDRESS")
        .output()
    {
        Ok(o) => o,
        Err(e) => {
            return (
                Vec::new(),
                Some(format!(
                    "{cmd} {NO_RRDTOOL} ({e}): install rrdtool (Debian: apt install rrdtool)"
                )),
            )
        }
    };
    let error = (!out.status.success()).then(|| {
        let e = String::from_utf8_lossy(&out.stderr);
        let e = e.trim_end_matches('\n');
        e.strip_prefix("ERROR: ").unwrap_or(e).to_string()
    });
    (out.stdout, error)
}

/// Run `cmd` through `run` (a command's runner where the store is: the daemon, the pipe's
/// store), or draw it with `renderer` when it is a graph, the files' bytes asked of `run` as
/// `export-file`; the drawing's output goes to `image`, before the outcome's text.
pub fn run_or_draw(
    renderer: &mut Renderer,
    at_daemon: bool,
    cmd: &str,
    args: &[String],
    image: &mut Vec<u8>,
    run: &mut dyn FnMut(&str, &[String]) -> Outcome,
) -> Outcome {
    if !is_graph(cmd) {
        return run(cmd, args);
    }
    if at_daemon && renderer.remote != Some(false) {
        if let Some(d) = draw_at_daemon(cmd, args, run) {
            renderer.remote = Some(true);
            *image = d.stdout;
            return Outcome {
                error: d.error,
                ..Outcome::default()
            };
        }
    }
    renderer.remote.get_or_insert(false);
    let d = renderer.draw(cmd, args, &mut |name| {
        from_hex(run(crate::EXPORT_FILE, &[name.to_string()]))
    });
    *image = d.stdout;
    Outcome {
        error: d.error,
        ..Outcome::default()
    }
}

/// The daemon's command that draws a graph in the daemon (by an rrdtool it started ahead,
/// one for each client connection: a pipe-mode session's graphs all by one process).
pub const DRAW: &str = "draw";

/// A graph drawn by the daemon that `run` reaches, None where it cannot be (no output file
/// first among the arguments, an output file this process cannot write, a daemon without
/// `draw`): then it is drawn here. The image and what rrdtool printed come back in hex; an
/// output file's bytes too, and it is written here, where its path means what it says.
fn draw_at_daemon(
    cmd: &str,
    args: &[String],
    run: &mut dyn FnMut(&str, &[String]) -> Outcome,
) -> Option<Drawn> {
    let out = args.first()?;
    if out.is_empty() || (out.starts_with('-') && out != "-") {
        return None;
    }
    if out != "-" {
        // Where rrdtool could not save it, rrdtool here says how (and a failed graph leaves
        // no file behind, as rrdtool's).
        let existed = std::path::Path::new(out).exists();
        std::fs::OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(false)
            .open(out)
            .ok()?;
        if !existed {
            let _ = std::fs::remove_file(out);
        }
    }
    let mut a = vec![cmd.to_string()];
    a.extend(Env::here().to_args());
    a.extend(args.iter().cloned());
    let o = run(DRAW, &a);
    if o.error.as_deref() == Some(BUSY) {
        return None;
    }
    // What rrdtool printed, in hex, then the file's bytes when it made one.
    let mut lines = o.stdout.split('\n');
    let mut stdout = Vec::new();
    crate::unhex(lines.next()?, &mut stdout).ok()?;
    if let Some(h) = lines.next().filter(|h| !h.is_empty()) {
        let mut bytes = Vec::new();
        crate::unhex(h, &mut bytes).ok()?;
        if let Err(e) = std::fs::write(out, &bytes) {
            return Some(Drawn::err(format!("{out}: {e}")));
        }
    }
    Some(Drawn {
        stdout,
        error: o.error,
    })
}

/// The daemon's graphs: an `rrdtool -` started ahead for the next client that draws (its
/// start, a fifth of a first graph's time, is then not the client's), with the environment
/// the last client drew in.
#[derive(Default)]
pub struct Spare {
    slot: std::sync::Mutex<Option<(Env, Session)>>,
    /// Connections that have an rrdtool of their own now ([`MAX_DRAWERS`] at most).
    live: std::sync::Arc<std::sync::atomic::AtomicUsize>,
}

/// Connections that may each keep an rrdtool in the daemon at once; past them, the clients
/// draw themselves (a client that opens many connections does not make the daemon start
/// as many processes).
pub const MAX_DRAWERS: usize = 32;

/// The daemon's answer when [`MAX_DRAWERS`] connections draw already: the client draws.
const BUSY: &str = "draw: busy";

/// One of the daemon's [`MAX_DRAWERS`], given back when its renderer is dropped.
struct Ticket(std::sync::Arc<std::sync::atomic::AtomicUsize>);

impl Drop for Ticket {
    fn drop(&mut self) {
        self.0.fetch_sub(1, std::sync::atomic::Ordering::Relaxed);
    }
}

impl Spare {
    /// A renderer for one client, drawing in `env`: the spare rrdtool when it was started in
    /// that environment; another is started ahead at once, in a thread.
    pub fn renderer(self: &std::sync::Arc<Self>, env: Env) -> Renderer {
        let taken = {
            let mut slot = self.slot.lock().unwrap_or_else(|p| p.into_inner());
            match slot.take() {
                Some((e, s)) if e == env => Some(s),
                other => {
                    *slot = other;
                    None
                }
            }
        };
        self.live.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let ticket = Ticket(std::sync::Arc::clone(&self.live));
        let me = std::sync::Arc::clone(self);
        let e = env.clone();
        std::thread::spawn(move || {
            if let Ok(s) = spawn_session(Some(&e)) {
                // The newest environment's; an older spare is ended.
                *me.slot.lock().unwrap_or_else(|p| p.into_inner()) = Some((e, s));
            }
        });
        Renderer {
            child: taken,
            env: Some(env),
            _ticket: Some(ticket),
            ..Renderer::session()
        }
    }

    /// The daemon's side of [`DRAW`]: `args` are the command, the client's environment and
    /// the graph's arguments; the connection's renderer is made at its first graph. An
    /// output file is drawn in the renderer's private directory and sent back.
    pub fn serve(
        self: &std::sync::Arc<Self>,
        slot: &mut Option<Renderer>,
        args: &[String],
        export: &mut dyn FnMut(&str) -> Result<Vec<u8>, String>,
    ) -> Outcome {
        let usage = || Outcome::err(format!("usage: {DRAW} graph|graphv KEY=VALUE... -- ARGS"));
        let Some((cmd, rest)) = args.split_first().filter(|(c, _)| is_graph(c)) else {
            return usage();
        };
        let Some((env, gargs)) = Env::from_args(rest) else {
            return usage();
        };
        let Some(out) = gargs.first().cloned() else {
            return usage();
        };
        if slot.is_none() && self.live.load(std::sync::atomic::Ordering::Relaxed) >= MAX_DRAWERS {
            return Outcome::err(BUSY);
        }
        let r = slot.get_or_insert_with(|| self.renderer(env));
        let mut gargs = gargs.to_vec();
        let mut file = None;
        if out != "-" {
            let dir = match r.scratch_dir() {
                Ok(d) => d.join(format!("out-{}", r.drawn)),
                Err(e) => return Outcome::err(e),
            };
            if let Err(e) = std::fs::create_dir(&dir) {
                return Outcome::err(format!("graph: {}: {e}", dir.display()));
            }
            let name = std::path::Path::new(&out)
                .file_name()
                .map_or_else(|| "graph".into(), |n| n.to_owned());
            let p = dir.join(name);
            gargs[0] = p.to_string_lossy().into_owned();
            file = Some((dir, p));
        }
        let mut d = r.draw(cmd, &gargs, export);
        let mut image = None;
        if let Some((dir, p)) = file {
            let (from, to) = (p.to_string_lossy().into_owned(), out.clone());
            d.stdout = replace(&d.stdout, from.as_bytes(), to.as_bytes());
            d.error = d.error.map(|e| e.replace(&from, &to));
            image = std::fs::read(&p).ok();
            let _ = std::fs::remove_dir_all(dir);
        }
        let mut stdout = crate::hex(&d.stdout);
        stdout.push('\n');
        if let Some(bytes) = image {
            stdout.push_str(&crate::hex(&bytes));
            stdout.push('\n');
        }
        Outcome {
            stdout,
            error: d.error,
            file: None,
        }
    }
}

/// `hay` with every `from` replaced by `to`.
pub fn replace(hay: &[u8], from: &[u8], to: &[u8]) -> Vec<u8> {
    if from.is_empty() || hay.len() < from.len() {
        return hay.to_vec();
    }
    let mut out = Vec::with_capacity(hay.len());
    let mut i = 0;
    while i < hay.len() {
        if hay[i..].starts_with(from) {
            out.extend_from_slice(to);
            i += from.len();
        } else {
            out.push(hay[i]);
            i += 1;
        }
    }
    out
}

/// Whether `cmd` is drawn here.
pub fn is_graph(cmd: &str) -> bool {
    matches!(cmd, "graph" | "graphv")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn def_files_are_found_with_escaped_colons() {
        let (s, e, n) = def_file("DEF:a=x.rrd:ds:AVERAGE").unwrap();
        assert_eq!(
            (&"DEF:a=x.rrd:ds:AVERAGE"[s..e], n.as_str()),
            ("x.rrd", "x.rrd")
        );
        let a = "DEF:v=/r/c\\:d.rrd:ds:MAX:step=60";
        let (s, e, n) = def_file(a).unwrap();
        assert_eq!((&a[s..e], n.as_str()), ("/r/c\\:d.rrd", "/r/c:d.rrd"));
        assert!(def_file("CDEF:a=b,2,*").is_none());
        assert!(def_file("LINE1:a#ff0000").is_none());
    }

    #[test]
    fn a_defs_daemon_is_taken_off() {
        assert_eq!(
            without_daemon("DEF:a=x.rrd:ds:AVERAGE:daemon=unix:/s:step=60"),
            "DEF:a=x.rrd:ds:AVERAGE:step=60"
        );
        assert_eq!(
            without_daemon("DEF:a=x.rrd:ds:AVERAGE:step=60"),
            "DEF:a=x.rrd:ds:AVERAGE:step=60"
        );
    }

    #[test]
    fn arguments_are_quoted_as_rrdtools_pipe_mode_reads_them() {
        let args = ["a b", "it's", "'", "", "DEF:a=x.rrd:v:AVERAGE", "\"q\""];
        let line: Vec<String> = args.iter().map(|a| quoted(a)).collect();
        assert_eq!(crate::split_args(&line.join(" ")), args);
    }

    #[test]
    fn a_replys_status_line_is_its_last_even_after_an_image() {
        let (out, err) = split_reply(b"\x89PNG..OK u:1\n..OK u:0.01 s:0.00 r:0.00\n");
        assert_eq!((out.as_slice(), err), (&b"\x89PNG..OK u:1\n.."[..], None));
        let (out, err) = split_reply(b"481x141\nERROR: opening 'x': No such file\n");
        assert_eq!(out, b"481x141\n");
        assert_eq!(err.as_deref(), Some("opening 'x': No such file"));
        assert!(split_reply(b"no status").1.is_some());
    }

    #[test]
    fn the_clients_environment_goes_with_draw_and_nothing_else() {
        let env = Env(vec![
            ("TZ".into(), "Asia/Tokyo".into()),
            ("LANG".into(), "C".into()),
        ]);
        let mut args = env.to_args();
        args.extend(["-".to_string(), "DEF:a=b:c:AVERAGE".to_string()]);
        let (back, rest) = Env::from_args(&args).unwrap();
        assert_eq!((back, rest), (env, &args[3..]));
        assert!(Env::from_args(&["LD_PRELOAD=x".into(), "--".into()]).is_none());
        assert!(Env::from_args(&["-".into()]).is_none());
    }

    #[test]
    fn copies_paths_are_put_back() {
        assert_eq!(
            replace(b"in '/t/0.rrd'", b"/t/0.rrd", b"x.rrd"),
            b"in 'x.rrd'"
        );
    }
}
