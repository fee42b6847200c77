//! The `ringlet` CLI's side of a daemon (`ringlet serve`, or rrdcached for STATS): a
//! connection by address, one request and its reply, and RUN, which runs a command in the
//! daemon that holds the store and gives back what it printed (the wire format is
//! `proto::run`'s; the daemon's side is `server::remote`). `restore`'s input is read here and
//! sent ahead; a file `dump` writes is written here.
//!
//! The daemon records its address in `<store>/daemon` while it runs, so that a CLI on the
//! same store finds it ([`recorded`]).

use proto::addr::{parse_addr, Addr};
use proto::run::{decode, hex, run_line, sendable, Outcome, COMMIT, INPUT_CHUNK, MAX_INPUT};
use std::io::{BufRead, BufReader, Read, Write};
use std::path::{Path, PathBuf};
use std::time::Duration;

use host::log::strerror;

/// `<store>/daemon`: the address of the daemon that holds the store.
pub fn address_file(store: &Path) -> PathBuf {
    store.join("daemon")
}

/// The address recorded in the store in `dir` by the daemon that holds it (stale if that
/// daemon was killed: nothing answers there then).
pub fn recorded(dir: &Path) -> Option<String> {
    let text = std::fs::read_to_string(address_file(dir)).ok()?;
    Some(text.lines().next()?.trim().to_string()).filter(|a| !a.is_empty())
}

pub trait Stream: Read + Write + Send {}
impl<T: Read + Write + Send> Stream for T {}

/// A connection to a daemon for RUN requests.
pub struct Client {
    addr: String,
    r: BufReader<Box<dyn Stream>>,
    /// The daemon was named (`--daemon`, `$RRDCACHED_ADDRESS`): commands print what
    /// `rrdtool <command> --daemon` prints where that differs from rrdtool on a file
    /// (`proto::run::NAMED`); else (the daemon that holds the store, found by itself) what rrdtool
    /// on a file prints.
    pub named: bool,
    /// The connection failed (a write or read error, the daemon closed it, a reply that
    /// is not the protocol's): the next command must connect again. A daemon's error
    /// reply (`-1 ...`) leaves it usable.
    broken: bool,
}

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
        let Some((n, msg)) = proto::response::status(&status) else {
            return Err(format!(
                "{}: unexpected reply '{}'",
                self.addr,
                status.trim_end()
            ));
        };
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
            let input = crate::commands::restore_input(args).and_then(|p| {
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
                    self.send(&format!("RUNINPUT {}", hex(chunk)))?;
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

    /// Have the daemon commit everything it holds now (`proto::run::COMMIT`); done when this returns
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
        self.send(&run_line(now, cmd, args, self.named))
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

/// `ringlet stats`'s usage.
pub const STATS_USAGE: &str = "\
usage: ringlet [--store DIR] stats [-d|--daemon ADDR]

Print the STATS of a running daemon (ringlet serve or rrdcached), one `Key: value` per
line. ADDR: unix:/path, /path, host, host:port, [v6]:port; default $RRDCACHED_ADDRESS,
else the daemon that holds the store (the address it records in STORE/daemon), else
unix:/tmp/rrdcached.sock. ringlet serve adds what it wrote to disk after rrdcached's nine
keys (docs/PROTOCOL.md).
";

/// A daemon's STATS (ringlet serve's or rrdcached's), for `ringlet stats`: STATS sent to
/// `addr`, the reply's lines.
pub fn stats(addr: &str) -> Result<Vec<String>, String> {
    let parsed = parse_addr(addr)?;
    let timeout = Some(Duration::from_secs(10));
    let s = connect_stream(&parsed, timeout)
        .map_err(|e| format!("cannot connect to {addr}: {}", strerror(&e)))?;
    let (n, msg, lines) = Client::on(addr, s).request("STATS")?;
    if n < 0 {
        return Err(format!("{addr}: {msg}"));
    }
    Ok(lines
        .into_iter()
        .map(|l| l.trim_end_matches('\r').to_string())
        .collect())
}
