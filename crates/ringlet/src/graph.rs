//! `graph` and `graphv`: drawn by the installed rrdtool's own renderer, on `.rrd` files the
//! store writes for the one command.
//!
//! Each `DEF:vname=FILE:...` names a series; its bytes (`rrd::rrdfile::write`, the file
//! `ringlet export` writes, which rrdtool reads as its own) are written to a private
//! directory (mode 0700, removed afterwards), the DEF is pointed at that copy, and
//! `rrdtool graph` runs on the arguments with its standard output (PNG, SVG, PDF, the
//! `WxH` line, PRINT and GPRINT lines) passed through byte for byte. The image and PRINT
//! lines are therefore rrdtool 1.7.2's for a file that holds what the store holds: the same
//! bytes a graph of the plain file gives (through rrdcached's FETCH, rrdtool picks its
//! archive without the graph's step and may draw from another one). The copies' paths are
//! put back to the names given in whatever rrdtool prints.
//!
//! Where the series are read: the store, the pipe's open store, or the daemon beside the CLI
//! (its `export-file`, over RUN), as every other command. A DEF's `:daemon=` and the
//! command's `--daemon` are taken off (the data comes from the copies). A DEF whose series
//! does not exist gets rrdtool's `opening` error; without rrdtool on PATH, the command says
//! so.

use cli::Outcome;
use std::io::{Read, Write};
use std::path::PathBuf;
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};

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
                crate::now().1
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
    cli::unhex(out.stdout.trim_end(), &mut bytes)?;
    Ok(bytes)
}

/// Where graphs are drawn: a fresh `rrdtool graph` for a one-shot command, or one `rrdtool -`
/// kept for a whole pipe-mode session. In a session every graph goes to the same rrdtool
/// process, in order, as it would in `rrdtool -` itself: cairo numbers the surfaces a process
/// makes, and an SVG names its own after that number (`<g id="surface9">`), so only one
/// process for the session's graphs gives the same bytes as rrdtool's pipe mode.
pub struct Renderer {
    session: bool,
    /// Drawing for one command (`ringlet graph ...`), not a pipe-mode session.
    command: bool,
    scratch: Option<Scratch>,
    child: Option<Session>,
    /// Graphs drawn: their copies' names and end marks.
    drawn: u64,
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
    /// For one command: a fresh `rrdtool graph`.
    pub fn one_shot() -> Renderer {
        Renderer {
            session: false,
            command: false,
            scratch: None,
            child: None,
            drawn: 0,
        }
    }

    /// For a pipe-mode session: one `rrdtool -` for all its graphs, started by the first.
    pub fn session() -> Renderer {
        Renderer {
            session: true,
            ..Renderer::one_shot()
        }
    }

    /// For one command, drawn by an `rrdtool -` started at once ([`Renderer::start`]).
    pub fn command() -> Renderer {
        Renderer {
            command: true,
            ..Renderer::session()
        }
    }

    /// Start the session's rrdtool now, so that its start (a fifth of a graph's time: its
    /// libraries) overlaps the store's opening; a failure is reported by the first draw.
    pub fn start(&mut self) {
        if self.session && self.child.is_none() {
            self.child = spawn_session().ok();
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
        if self.scratch.is_none() {
            match Scratch::new() {
                Ok(s) => self.scratch = Some(s),
                Err(e) => return Drawn::err(format!("graph: {e}")),
            }
        }
        let dir = self
            .scratch
            .as_ref()
            .map(|s| s.0.clone())
            .unwrap_or_default();
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
        let (stdout, error) = if self.session && !(self.command && args.is_empty()) {
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
            match spawn_session() {
                Ok(s) => self.child = Some(s),
                Err(e) => return (Vec::new(), Some(e)),
            }
        }
        let Some(s) = self.child.as_mut() else {
            return (Vec::new(), Some("rrdtool is not running".into()));
        };
        let mark = dir.join(format!("end-{}-{}", self.drawn, crate::now().1));
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

fn spawn_session() -> Result<Session, String> {
    let mut child = Command::new("rrdtool")
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
    cmd: &str,
    args: &[String],
    image: &mut Vec<u8>,
    run: &mut dyn FnMut(&str, &[String]) -> Outcome,
) -> Outcome {
    if !is_graph(cmd) {
        return run(cmd, args);
    }
    let d = renderer.draw(cmd, args, &mut |name| {
        from_hex(run(cli::EXPORT_FILE, &[name.to_string()]))
    });
    *image = d.stdout;
    Outcome {
        error: d.error,
        ..Outcome::default()
    }
}

/// `hay` with every `from` replaced by `to`.
fn replace(hay: &[u8], from: &[u8], to: &[u8]) -> Vec<u8> {
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
    fn copies_paths_are_put_back() {
        assert_eq!(
            replace(b"in '/t/0.rrd'", b"/t/0.rrd", b"x.rrd"),
            b"in 'x.rrd'"
        );
    }
}
