//! The `ringlet` CLI beside a running daemon: the `RUN` request, both sides.
//!
//! A store is held by one process. So that every `ringlet` command works while `ringlet serve`
//! holds the store (and with rrdtool's `--daemon ADDR` / `$RRDCACHED_ADDRESS`), the CLI sends
//! its command line to the daemon, which runs the very same code (the `cli` crate) on its own
//! store, after applying the queued values the command reads, and sends back what the command
//! printed. The output is therefore byte for byte what `ringlet <command>` prints on the store
//! alone. Files stay on the client's side: `restore`'s XML is read by the client and sent
//! ahead (`RUNINPUT`), and `dump x.rrd out.xml` writes `out.xml` on the client.
//!
//! Wire format (docs/PROTOCOL.md, 18): `RUN <secs> <usecs> <command> <args...>` with the
//! protocol's backslash escapes; the reply is `<n> <out> <err> <file>` (the byte lengths of
//! stdout, of the error message and of the file, `-1` for none) and `n` lines, each a
//! one-letter tag and a line of text: `o` stdout, `e` the error, `p` the file's path, `f` the
//! file. A text is its lines joined by newlines, plus one if its length says so.
//!
//! The daemon records its address in `<store>/daemon` while it runs ([`record`]), so that a
//! CLI on the same store finds it ([`recorded`]).

use crate::config::{parse_addr, Addr};
use crate::daemon::Daemon;
use crate::log::strerror;
use cli::Outcome;
use proto::Response;
use std::io::{BufRead, BufReader, Read, Write};
use std::path::{Path, PathBuf};

/// Most input a connection may send ahead of one RUN.
pub const MAX_INPUT: usize = 256 << 20;

/// Input bytes per RUNINPUT line (twice that in hex).
const INPUT_CHUNK: usize = 32 * 1024;

/// `<store>/daemon`: the address of the daemon that holds the store.
pub fn address_file(store: &Path) -> PathBuf {
    store.join("daemon")
}

/// Record the daemon's address in the store (removed at a clean exit; a stale one is found
/// out by the CLI when nothing answers there).
pub fn record(store: &Path, addr: &str) -> std::io::Result<()> {
    let path = address_file(store);
    let tmp = store.join("daemon.tmp");
    std::fs::write(&tmp, format!("{addr}\n"))?;
    std::fs::rename(tmp, path)
}

/// The address recorded in the store in `dir` by the daemon that holds it (stale if that
/// daemon was killed: nothing answers there then).
pub fn recorded(dir: &Path) -> Option<String> {
    let text = std::fs::read_to_string(address_file(dir)).ok()?;
    Some(text.lines().next()?.trim().to_string()).filter(|a| !a.is_empty())
}

/// Append the bytes RUNINPUT's `h` stands for to `out` (`cli::unhex`, with its error).
pub fn unhex(h: &str, out: &mut Vec<u8>) -> Result<(), String> {
    cli::unhex(h, out).map_err(|e| format!("RUNINPUT: {e}"))
}

/// The protocol's escaping of one field (the inverse of `proto::tokenize`).
fn escape(field: &str) -> String {
    let mut s = String::with_capacity(field.len());
    for c in field.chars() {
        if c == ' ' || c == '\\' {
            s.push('\\');
        }
        s.push(c);
    }
    s
}

/// A text's lines as the reply carries them (none for an empty text).
fn text_lines(t: &str) -> impl Iterator<Item = &str> {
    let body = t.strip_suffix('\n').unwrap_or(t);
    let lines = if t.is_empty() { None } else { Some(body) };
    lines.into_iter().flat_map(|b| b.split('\n'))
}

/// The text of `lines`, `len` bytes long.
fn join(lines: &[String], len: i64) -> Option<String> {
    if len < 0 {
        return None;
    }
    let mut s = lines.join("\n");
    if s.len() as i64 + 1 == len {
        s.push('\n');
    }
    Some(s)
}

/// The reply to a RUN: what the command printed.
pub fn encode(out: Outcome) -> Response {
    let len = |t: Option<&str>| t.map_or(-1, |t| t.len() as i64);
    let message = format!(
        "{} {} {}",
        out.stdout.len(),
        len(out.error.as_deref()),
        len(out.file.as_ref().map(|f| f.1.as_str()))
    );
    // The reply's lines written straight into its body (a dump of millions of rows is one
    // buffer, not a string a line), each text freed once it is in; room is left before
    // them for the status line (`Response::append_to`).
    let Outcome {
        stdout,
        error,
        file,
    } = out;
    let size = |t: &str| t.len() + t.bytes().filter(|&b| b == b'\n').count() + 2;
    let mut body = Vec::with_capacity(
        64 + message.len()
            + size(&stdout)
            + error.as_deref().map_or(0, size)
            + file.as_ref().map_or(0, |(p, t)| p.len() + 2 + size(t)),
    );
    fn put(body: &mut Vec<u8>, tag: u8, text: &str) -> i64 {
        let mut n = 0;
        for l in text_lines(text) {
            body.push(tag);
            body.extend_from_slice(l.as_bytes());
            body.push(b'\n');
            n += 1;
        }
        n
    }
    let mut n = put(&mut body, b'o', &stdout);
    drop(stdout);
    if let Some(e) = &error {
        n += put(&mut body, b'e', e);
    }
    if let Some((path, text)) = file {
        body.push(b'p');
        body.extend_from_slice(path.as_bytes());
        body.push(b'\n');
        n += 1 + put(&mut body, b'f', &text);
    }
    Response::raw(n, message, body)
}

/// The command printed, from a RUN reply's status message and lines.
pub fn decode(message: &str, lines: &[String]) -> Result<Outcome, String> {
    let lens: Vec<i64> = message
        .split(' ')
        .map(|v| v.parse::<i64>())
        .collect::<Result<_, _>>()
        .map_err(|_| format!("unexpected reply to RUN: {message}"))?;
    let [out_len, err_len, file_len] = lens[..] else {
        return Err(format!("unexpected reply to RUN: {message}"));
    };
    let pick = |tag: char| -> Vec<String> {
        lines
            .iter()
            .filter(|l| l.starts_with(tag))
            .map(|l| l[1..].to_string())
            .collect()
    };
    let path = pick('p').into_iter().next();
    Ok(Outcome {
        stdout: join(&pick('o'), out_len).unwrap_or_default(),
        error: join(&pick('e'), err_len),
        file: match (path, join(&pick('f'), file_len)) {
            (Some(p), Some(t)) => Some((p, t)),
            _ => None,
        },
    })
}

pub trait Stream: Read + Write + Send {}
impl<T: Read + Write + Send> Stream for T {}

/// A connection to a daemon for RUN requests.
pub struct Client {
    addr: String,
    r: BufReader<Box<dyn Stream>>,
    /// The daemon was named (`--daemon`, `$RRDCACHED_ADDRESS`): commands print what
    /// `rrdtool <command> --daemon` prints where that differs from rrdtool on a file
    /// ([`NAMED`]); else (the daemon that holds the store, found by itself) what rrdtool
    /// on a file prints.
    pub named: bool,
    /// The connection failed (a write or read error, the daemon closed it, a reply that
    /// is not the protocol's): the next command must connect again. A daemon's error
    /// reply (`-1 ...`) leaves it usable.
    broken: bool,
}

/// The arguments a client puts first in a RUN when the daemon was named ([`Client::named`]).
const NAMED: [&str; 2] = ["--daemon", "-"];

/// A connection to a daemon's address as `-l` and librrd take it (`unix:/path`, `/path`,
/// `host`, `host:port`, `[v6]:port`), parsed.
pub fn connect_stream(
    addr: &Addr,
    read_timeout: Option<std::time::Duration>,
) -> std::io::Result<Box<dyn Stream>> {
    Ok(match addr {
        Addr::Unix(p) => {
            let s = std::os::unix::net::UnixStream::connect(p)?;
            s.set_read_timeout(read_timeout)?;
            Box::new(s)
        }
        Addr::Tcp(h, port) => {
            let h = if h.contains(':') {
                format!("[{h}]")
            } else {
                h.clone()
            };
            let s = std::net::TcpStream::connect(format!("{h}:{port}"))?;
            s.set_read_timeout(read_timeout)?;
            let _ = s.set_nodelay(true);
            Box::new(s)
        }
    })
}

/// A command's words fit RUN's one line.
fn sendable(cmd: &str, args: &[String]) -> Result<(), String> {
    if std::iter::once(cmd)
        .chain(args.iter().map(String::as_str))
        .any(|a| a.contains(['\n', '\r']))
    {
        return Err("an argument with a line break cannot be sent to the daemon".into());
    }
    Ok(())
}

impl Client {
    /// Connect as librrd does, with its error text.
    pub fn connect(addr: &str) -> Result<Client, String> {
        let parsed = parse_addr(addr)?;
        let s = connect_stream(&parsed, None)
            .map_err(|e| format!("Unable to connect to rrdcached: {}", strerror(&e)))?;
        Ok(Client::on(addr, s))
    }

    /// A client of the daemon at `addr` over a stream already connected.
    pub fn on(addr: &str, s: Box<dyn Stream>) -> Client {
        Client {
            addr: addr.to_string(),
            r: BufReader::new(s),
            named: false,
            broken: false,
        }
    }

    /// Whether the connection failed and the next command must connect again (see
    /// [`Client::broken`]); an error the daemon answered does not count.
    pub fn is_broken(&self) -> bool {
        self.broken
    }

    /// Send one request line and read its reply: status number, message and lines.
    pub fn request(&mut self, line: &str) -> Result<(i64, String, Vec<String>), String> {
        self.send(line)?;
        self.reply()
    }

    fn send(&mut self, line: &str) -> Result<(), String> {
        // One write a request: the line and its end together.
        let mut buf = Vec::with_capacity(line.len() + 1);
        buf.extend_from_slice(line.as_bytes());
        buf.push(b'\n');
        let sent = self.r.get_mut().write_all(&buf);
        self.broken |= sent.is_err();
        sent.map_err(|e| format!("{}: {}", self.addr, strerror(&e)))
    }

    /// Read one reply: its status number, message and lines. Any failure here leaves the
    /// connection [`Client::broken`]: where the next reply starts is unknown.
    fn reply(&mut self) -> Result<(i64, String, Vec<String>), String> {
        let r = self.read_reply();
        self.broken |= r.is_err();
        r
    }

    fn read_reply(&mut self) -> Result<(i64, String, Vec<String>), String> {
        let addr = &self.addr;
        let io = |e: std::io::Error| format!("{addr}: {}", strerror(&e));
        let mut status = String::new();
        if self.r.read_line(&mut status).map_err(io)? == 0 {
            return Err(format!("{}: the daemon closed the connection", self.addr));
        }
        let status = status.trim_end_matches(['\n', '\r']);
        let (n, msg) = status.split_once(' ').unwrap_or((status, ""));
        let n: i64 = n
            .parse()
            .map_err(|_| format!("{}: unexpected reply '{status}'", self.addr))?;
        let mut lines = Vec::new();
        for _ in 0..n.max(0) {
            let mut l = String::new();
            if self.r.read_line(&mut l).map_err(io)? == 0 {
                return Err(format!("{}: the reply ended early", self.addr));
            }
            if l.ends_with('\n') {
                l.pop();
            }
            lines.push(l);
        }
        Ok((n, msg.to_string(), lines))
    }

    /// Run `cmd` with `args` in the daemon at the time `now`: what it printed. `restore`'s
    /// input is read here; a file `dump` writes is written here.
    pub fn run(&mut self, cmd: &str, args: &[String], now: (i64, i64)) -> Outcome {
        match self.try_run(cmd, args, now) {
            Ok(out) => out,
            Err(e) => Outcome::err(e),
        }
    }

    fn try_run(&mut self, cmd: &str, args: &[String], now: (i64, i64)) -> Result<Outcome, String> {
        sendable(cmd, args)?;
        let mut inputs = 0;
        if cmd == "restore" {
            // As the command would read it: a file that cannot be read is its own error,
            // which the daemon reports when no input came.
            let input = cli::commands::restore_input(args).and_then(|p| {
                if p == "-" {
                    std::io::read_to_string(std::io::stdin()).ok()
                } else {
                    std::fs::read_to_string(p).ok()
                }
            });
            if let Some(text) = input {
                if text.len() > MAX_INPUT {
                    return Err(format!(
                        "the input is larger than the daemon takes ({MAX_INPUT} bytes)"
                    ));
                }
                for chunk in text.as_bytes().chunks(INPUT_CHUNK) {
                    self.send(&format!("RUNINPUT {}", cli::hex(chunk)))?;
                    inputs += 1;
                }
                if text.is_empty() {
                    self.send("RUNINPUT -")?;
                    inputs += 1;
                }
            }
        }
        self.send_run_line(cmd, args, now)?;
        for _ in 0..inputs {
            let (n, msg, _) = self.reply()?;
            if n < 0 {
                return Err(format!("{}: {msg}", self.addr));
            }
        }
        self.finish()
    }

    /// Send the RUN of `cmd` (not `restore`, whose input goes first) without waiting for its
    /// answer, which [`Client::finish_run`] reads: pipe mode sends the lines it already has
    /// one after another, then reads their answers in order.
    pub fn send_run(&mut self, cmd: &str, args: &[String], now: (i64, i64)) -> Result<(), String> {
        sendable(cmd, args)?;
        if cmd == "restore" {
            return Err("restore sends its input first: use run".into());
        }
        self.send_run_line(cmd, args, now)
    }

    /// Have the daemon commit everything it holds now ([`COMMIT`]); done when this returns
    /// Ok.
    pub fn commit(&mut self, now: (i64, i64)) -> Result<(), String> {
        self.send_run_line(COMMIT, &[], now)?;
        let (n, msg, _) = self.reply()?;
        if n < 0 {
            return Err(format!("{}: {msg}", self.addr));
        }
        Ok(())
    }

    /// The answer to the oldest RUN sent by [`Client::send_run`].
    pub fn finish_run(&mut self) -> Outcome {
        self.finish().unwrap_or_else(Outcome::err)
    }

    fn send_run_line(&mut self, cmd: &str, args: &[String], now: (i64, i64)) -> Result<(), String> {
        let mut line = format!("RUN {} {} {}", now.0, now.1, escape(cmd));
        let named = NAMED.iter().map(|a| a.to_string());
        let named: Vec<String> = if self.named {
            named.collect()
        } else {
            Vec::new()
        };
        for a in named.iter().chain(args) {
            line.push(' ');
            line.push_str(&escape(a));
        }
        self.send(&line)
    }

    /// Read a RUN's answer: what the command printed (a file it wrote is written here).
    fn finish(&mut self) -> Result<Outcome, String> {
        let (n, msg, lines) = self.reply()?;
        if n < 0 {
            if msg.starts_with("Unknown command") {
                return Err(format!(
                    "the daemon at {} is not ringlet serve ({msg}): ringlet's commands run only in its own daemon",
                    self.addr
                ));
            }
            return Err(format!("{}: {msg}", self.addr));
        }
        let mut out = decode(&msg, &lines)?;
        if let Some((path, text)) = out.file.take() {
            if let Err(e) = std::fs::write(&path, text) {
                out.error = Some(format!("cannot write to {path}: {e}"));
            }
        }
        Ok(out)
    }
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

/// The arguments without the mark of a named daemon ([`NAMED`]), and whether it was there.
pub(crate) fn strip_named(args: &[String]) -> (bool, &[String]) {
    if args.len() >= 2 && args[..2] == NAMED {
        (true, &args[2..])
    } else {
        (false, args)
    }
}

/// RUN's command that commits what the daemon holds ([`Client::commit`]): pipe mode sends it
/// at the end of a session that wrote, so what a client deletes once the session is over
/// (Cacti's Boost its queued values) is on the disk.
pub const COMMIT: &str = "commit-session";

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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn texts_survive_the_reply_exactly() {
        for (out, err, file) in [
            ("", None, None),
            ("a\n", Some("x"), None),
            (
                "a\n\nb",
                Some("two\nlines\n"),
                Some(("o.xml", "<x>\n</x>\n")),
            ),
            ("\n", Some(""), Some(("p", ""))),
        ] {
            let make = || Outcome {
                stdout: out.into(),
                error: err.map(String::from),
                file: file.map(|(p, t)| (p.to_string(), t.to_string())),
            };
            let o = make();
            let r = encode(make());
            let bytes = String::from_utf8(r.to_bytes()).unwrap();
            let mut it = bytes.split_terminator('\n');
            let status = it.next().unwrap();
            let (_, msg) = status.split_once(' ').unwrap();
            let lines: Vec<String> = it.map(String::from).collect();
            assert_eq!(decode(msg, &lines).unwrap(), o, "{bytes:?}");
        }
    }

    #[test]
    fn hex_and_escapes_round_trip() {
        let mut v = Vec::new();
        unhex(&cli::hex(b"<a b='c'>\r\n\\"), &mut v).unwrap();
        assert_eq!(v, b"<a b='c'>\r\n\\");
        assert!(unhex("zz", &mut v).is_err());
        let f: Vec<String> = proto::tokenize::fields(&escape("a b\\c"));
        assert_eq!(f, ["a b\\c"]);
    }

    #[test]
    fn a_text_the_reply_cannot_tell_from_its_length_is_not_made_up() {
        assert_eq!(join(&[], -1), None);
        assert_eq!(join(&["x".into()], 2).as_deref(), Some("x\n"));
    }
}
