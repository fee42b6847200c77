//! One client connection: read request lines, run them, write replies; BATCH mode.
//!
//! Lines may end in `\n` or `\r\n` and be pipelined. A line longer than the configured limit
//! gets an error and is skipped up to its newline (rrdcached drops the connection at 8 KiB).
//! Bytes that are not UTF-8 are read lossily, so garbage gets `Unknown command`, never a
//! crash. A client that stops reading is cut off by the write timeout; others are unaffected.
//!
//! UPDATE, nearly every request a daemon gets, takes a short path: its fields are borrowed
//! from the read buffer, its values checked and queued without the store lock
//! ([`crate::ingest`]), and its reply appended without formatting. The replies to all the
//! requests of one read go out in one write.

use super::{handle, Reply};
use crate::daemon::Daemon;
use proto::{Command, Response};
use std::io::{self, Read, Write};
use std::sync::atomic::Ordering;

/// What a connection is allowed to do.
pub struct Access {
    /// Allowed command indices; None: all.
    pub allowed: Option<Vec<usize>>,
    pub max_line: usize,
}

impl Access {
    fn update_allowed(&self) -> bool {
        let update = proto::find("UPDATE").expect("UPDATE in table");
        allowed(self, update)
    }
}

fn now() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs() as i64)
}

struct Batch {
    start: i64,
    /// Commands seen since BATCH, counting `.` too.
    count: u64,
    /// The error lines so far, each `N message\n`, in one buffer (a line each as a `String`
    /// took 340 bytes: a batch of a million unknown names held 340 MB), and how many.
    errors: Vec<u8>,
    error_count: usize,
}

impl Batch {
    fn error(&mut self, n: u64, message: &str) {
        self.errors
            .extend_from_slice(itoa::Buffer::new().format(n).as_bytes());
        self.errors.push(b' ');
        self.errors.extend_from_slice(message.as_bytes());
        self.errors.push(b'\n');
        self.error_count += 1;
    }

    /// The reply to `.`: `N errors` and the lines (the buffer itself when nothing else is
    /// waiting to be sent: a large one is not copied).
    fn finish(mut self, out: &mut Vec<u8>) {
        let mut head = itoa::Buffer::new()
            .format(self.error_count)
            .as_bytes()
            .to_vec();
        head.extend_from_slice(b" errors\n");
        if out.is_empty() {
            self.errors.splice(0..0, head);
            *out = self.errors;
        } else {
            out.extend_from_slice(&head);
            out.extend_from_slice(&self.errors);
        }
    }
}

/// Serve one connection until it closes, QUIT, or an I/O error.
pub fn serve<S: Read + Write>(d: &Daemon, access: &Access, mut sock: S) -> io::Result<()> {
    let mut buf: Vec<u8> = Vec::with_capacity(8192);
    let mut chunk = vec![0u8; 64 * 1024];
    let mut skipping = false;
    let mut out: Vec<u8> = Vec::new();
    let mut c = Conn {
        d,
        access,
        batch: None,
        update_ok: access.update_allowed(),
        received: 0,
        local: Default::default(),
        input: None,
        renderer: None,
        more: false,
        owes: false,
        owed: Vec::new(),
    };
    loop {
        let n = sock.read(&mut chunk)?;
        if n == 0 {
            return Ok(());
        }
        if skipping {
            // The rest of a line that was too long: drop it up to its newline, however
            // many reads that takes (one error per line, not per read).
            match chunk[..n].iter().position(|&b| b == b'\n') {
                None => continue,
                Some(p) => {
                    skipping = false;
                    buf.extend_from_slice(&chunk[p + 1..n]);
                }
            }
        } else {
            buf.extend_from_slice(&chunk[..n]);
        }
        let mut consumed = 0;
        let eol = |from: usize| {
            buf[from..]
                .iter()
                .position(|&b| b == b'\n')
                .map(|p| from + p)
        };
        let mut next = eol(0);
        while let Some(line_end) = next {
            // The next line's end, found once: whether more lines follow this one.
            next = eol(line_end + 1);
            c.more = next.is_some();
            let line = String::from_utf8_lossy(&buf[consumed..line_end]);
            if !c.run_line(&line, &mut out) {
                c.count();
                c.pay(&mut out);
                sock.write_all(&out)?;
                return Ok(());
            }
            consumed = line_end + 1;
        }
        c.count();
        c.pay(&mut out);
        buf.drain(..consumed);
        if buf.len() > access.max_line {
            let r = Response::err(format!(
                "Line too long (more than {} bytes)",
                access.max_line
            ));
            out.extend_from_slice(&r.to_bytes());
            buf.clear();
            skipping = true;
        }
        if !out.is_empty() {
            sock.write_all(&out)?;
            out.clear();
            if out.capacity() > 1 << 20 {
                // A large reply (a batch's errors, a long LIST) is not kept for the
                // connection's life.
                out = Vec::new();
            }
        }
    }
}

fn allowed(access: &Access, spec: &proto::CommandSpec) -> bool {
    if spec.always_allowed {
        return true;
    }
    match &access.allowed {
        None => true,
        Some(list) => {
            let idx = proto::table::index_of(spec);
            // `.` is allowed wherever BATCH is.
            let batch = proto::table::index_of(proto::find("BATCH").expect("BATCH in table"));
            list.contains(&idx) || (spec.name == "." && list.contains(&batch))
        }
    }
}

/// A connection's state between lines.
struct Conn<'a> {
    d: &'a Daemon,
    access: &'a Access,
    batch: Option<Batch>,
    update_ok: bool,
    /// UPDATE lines not yet added to the daemon's UpdatesReceived, and queued bytes not yet
    /// counted (once per read).
    received: u64,
    local: crate::ingest::Local,
    /// Input sent ahead of the next RUN (RUNINPUT), and whether any was.
    input: Option<Vec<u8>>,
    /// The rrdtool that draws this connection's graphs (RUN `draw`), from its first.
    renderer: Option<cli::graph::Renderer>,
    /// More whole lines follow the one being run in what was read.
    more: bool,
    /// The RUN just run left its commit to [`Conn::pay`].
    owes: bool,
    /// Replies in `out` (byte ranges) to RUNs whose commit waits for the end of the read:
    /// a pipelined run of creates is committed once, before any of their answers is sent.
    owed: Vec<(usize, usize)>,
}

impl Conn<'_> {
    fn count(&mut self) {
        if self.received > 0 {
            let s = &self.d.stats.updates_received;
            s.fetch_add(std::mem::take(&mut self.received), Ordering::Relaxed);
        }
        if self.local.queued > 0 {
            self.d.queued(std::mem::take(&mut self.local.queued));
        }
    }

    /// Run one line, appending any reply to `out`. Returns false when the connection must
    /// close.
    fn run_line(&mut self, line: &str, out: &mut Vec<u8>) -> bool {
        if let Some(b) = self.batch.as_mut() {
            b.count += 1;
        }
        if self.update_ok {
            if let Some(r) = self.fast_update(line) {
                match (self.batch.as_mut(), r) {
                    (None, Ok(n)) => proto::response::write_enqueued(out, n),
                    (None, Err(r)) => r.write_to(out),
                    (Some(_), Ok(_)) => {}
                    (Some(b), Err(r)) => {
                        let n = b.count;
                        b.error(n, &r.message)
                    }
                }
                return true;
            }
        }
        // Anything else (STATS among them) sees every UPDATE before it counted.
        self.count();
        if self.batch.is_none() {
            if let Some(r) = self.run(line) {
                let start = out.len();
                r.append_to(out);
                if std::mem::take(&mut self.owes) {
                    self.owed.push((start, out.len()));
                }
                return true;
            }
        }
        run_line(self.d, self.access, line, &mut self.batch, out)
    }

    /// Commit what the RUNs of this read left uncommitted, before their answers go out; if
    /// the commit fails, each of them answers its error instead.
    fn pay(&mut self, out: &mut Vec<u8>) {
        if self.owed.is_empty() {
            return;
        }
        let owed = std::mem::take(&mut self.owed);
        let result = {
            let mut inner = self.d.lock();
            self.d.commit(&mut inner)
        };
        if let Err(e) = result {
            let err = Response::err(e).to_bytes();
            let mut fixed = Vec::with_capacity(out.len());
            let mut at = 0;
            for (start, end) in owed {
                fixed.extend_from_slice(&out[at..start]);
                fixed.extend_from_slice(&err);
                at = end;
            }
            fixed.extend_from_slice(&out[at..]);
            *out = fixed;
        }
    }

    /// RUN and RUNINPUT (the CLI beside the daemon, remote.rs), which use the connection's
    /// input; None for any other line. A RUN whose commit is left to [`Conn::pay`] sets
    /// `owes`.
    fn run(&mut self, line: &str) -> Option<Response> {
        let head = line.split(' ').next().unwrap_or("");
        if !head.eq_ignore_ascii_case("RUN") && !head.eq_ignore_ascii_case("RUNINPUT") {
            return None;
        }
        let (spec, cmd) = match proto::parse(line) {
            Ok(x) => x,
            Err(r) => return Some(r),
        };
        if !allowed(self.access, spec) {
            return Some(Response::err("Permission denied."));
        }
        Some(match cmd {
            Command::RunInput { hex } => {
                let input = self.input.get_or_insert_with(Vec::new);
                if input.len() + hex.len() / 2 > proto::run::MAX_INPUT {
                    self.input = None;
                    return Some(Response::err(format!(
                        "RUNINPUT: more than {} bytes of input",
                        proto::run::MAX_INPUT
                    )));
                }
                match proto::run::runinput(&hex, input) {
                    Ok(()) => Response::ok(format!("{} bytes of input", input.len())),
                    Err(e) => {
                        self.input = None;
                        Response::err(e)
                    }
                }
            }
            Command::Run {
                now,
                usec,
                cmd,
                args,
            } => {
                // Input that is not UTF-8 is no XML the command could read: none.
                let text = self.input.take().and_then(|i| String::from_utf8(i).ok());
                let (Ok(now), Ok(usec)) = (now.parse::<i64>(), usec.parse::<i64>()) else {
                    return Some(proto::request::usage(spec));
                };
                if cmd == crate::series::import::ADOPT {
                    return Some(crate::remote::adopt(self.d, &args));
                }
                if cmd == proto::run::COMMIT {
                    return Some(crate::remote::commit(self.d));
                }
                if cmd == cli::graph::DRAW {
                    return Some(crate::remote::draw(self.d, &mut self.renderer, &args));
                }
                // A create followed by more lines: committed with them, once.
                let (r, owes) = crate::remote::serve(
                    self.d,
                    (now, usec),
                    &cmd,
                    &args,
                    text.as_deref(),
                    self.more,
                );
                self.owes = owes;
                r
            }
            _ => return None,
        })
    }

    /// UPDATE with a file name, straight from the line's fields; None for any other line.
    fn fast_update(&mut self, line: &str) -> Option<Result<usize, Response>> {
        let (file, values) = proto::request::update(line)?;
        self.received += 1;
        Some(self.local.update(self.d, &file, values))
    }
}

/// Run one line the general way (the batch count is already advanced), appending any reply
/// to `out`. Returns false when the connection must close.
fn run_line(
    d: &Daemon,
    access: &Access,
    line: &str,
    batch: &mut Option<Batch>,
    out: &mut Vec<u8>,
) -> bool {
    if let Some(b) = batch.as_mut() {
        let n = b.count;
        let parsed = proto::parse(line);
        let reply = match parsed {
            Err(r) => Some(r),
            Ok((spec, _)) if !allowed(access, spec) => Some(Response::err("Permission denied.")),
            Ok((spec, _)) if !spec.ctx.batch => {
                Some(Response::err(format!("Can't use '{}' here.", spec.name)))
            }
            Ok((_, Command::BatchEnd)) => {
                batch.take().expect("in a batch").finish(out);
                return true;
            }
            Ok((_, cmd)) => match handle(d, cmd, b.start) {
                Reply::Send(r) => Some(r),
                Reply::Close => return false,
            },
        };
        if let Some(r) = reply.filter(Response::is_error) {
            b.error(n, &r.message);
        }
        return true;
    }
    let reply = match proto::parse(line) {
        Err(r) => r,
        Ok((spec, _)) if !allowed(access, spec) => Response::err("Permission denied."),
        Ok((spec, _)) if !spec.ctx.client => {
            Response::err(format!("Can't use '{}' here.", spec.name))
        }
        Ok((_, Command::Batch)) => {
            *batch = Some(Batch {
                start: now(),
                count: 0,
                errors: Vec::new(),
                error_count: 0,
            });
            Response::ok("Go ahead.  End with dot '.' on its own line.")
        }
        Ok((_, cmd)) => match handle(d, cmd, now()) {
            Reply::Send(r) => r,
            Reply::Close => return false,
        },
    };
    reply.write_to(out);
    true
}
