//! The HTTP/1.1 server (`--http`): connections, their limits and timeouts, and a request's
//! path and form parameters ([`Query`]); the routes are the caller's (the daemon's `server::routes`).
//!
//! A connection is a thread, as every other connection of the daemon ([`crate::gate`]),
//! and what made the review's attacks work is bounded here:
//!
//! - A request's head (request line and headers) is read within [`HEAD_TIME`] and at most
//!   [`MAX_HEAD`] bytes (431 past it, never buffered further); its body, of a declared length
//!   up to [`MAX_BODY`] (413 past it, 411 without one), within [`BODY_TIME`]. A reply is
//!   written within [`WRITE_TIME`]. A kept-alive connection waits [`KEEP_ALIVE`] for the next
//!   request. Whatever misses its time is closed.
//! - At most [`Limits::connections`] connections at once. When they are all taken, the one
//!   that has waited longest on its client (sending its head or body slowly, or not reading
//!   its reply) is closed to make room, if it has waited more than [`SHED_AFTER`]; only
//!   when every connection is busy with a request of ours is the newcomer refused (503).
//!   Idle or slow clients therefore cannot keep a bystander out, however many they are.
//! - At most [`Limits::workers`] requests are worked on at once (each may build a large
//!   reply); the others wait for a turn, not holding a worker while they read or write.
//! - A failed accept (out of file descriptors) is retried after a pause (gate's loop).
//!
//! Hand-written over `httparse` (hyper's parser): tiny_http, used before, accepts and
//! reads its connections itself, with no timeouts, no bound on a header line or on
//! connections, and an accept loop that ends at the first EMFILE; hyper would bring an
//! async runtime into a daemon that is blocking threads everywhere else.

use std::collections::HashMap;
use std::io::{self, Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

/// The longest request head read.
pub const MAX_HEAD: usize = 64 << 10;
/// The most headers a request may have.
const MAX_HEADERS: usize = 100;
/// The largest request body read (a POSTed form of targets).
pub const MAX_BODY: usize = 1 << 20;
/// Time a client has to send a request's head.
pub const HEAD_TIME: Duration = Duration::from_secs(10);
/// Time a client has to send a body of its declared length.
pub const BODY_TIME: Duration = Duration::from_secs(30);
/// Time a reply has to be taken by the client, from its first byte to its last.
pub const WRITE_TIME: Duration = Duration::from_secs(30);
/// Time a kept-alive connection waits for its next request.
pub const KEEP_ALIVE: Duration = Duration::from_secs(15);
/// A connection waiting on its client this long may be closed to let another in.
pub const SHED_AFTER: Duration = Duration::from_millis(500);

/// One request.
pub struct Request {
    pub method: String,
    /// The request target: path and query.
    pub url: String,
    /// Headers, names lowercased.
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

/// What the routes read of a request: its path, its parameters (the query string's, then a
/// POSTed form's), and the time it is answered at.
pub struct Query {
    pub path: String,
    pub params: Vec<(String, String)>,
    pub now: i64,
}

impl Query {
    pub fn of(req: &Request) -> Query {
        let url = req.url.as_str();
        let (path, query) = url.split_once('?').unwrap_or((url, ""));
        let mut params = form(query);
        if req.method == "POST"
            && req
                .header("content-type")
                .is_some_and(|t| t.starts_with("application/x-www-form-urlencoded"))
        {
            params.extend(form(&String::from_utf8_lossy(&req.body)));
        }
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |t| t.as_secs() as i64);
        Query {
            path: path.to_string(),
            params,
            now,
        }
    }

    /// The first parameter named `k`.
    pub fn get(&self, k: &str) -> Option<&str> {
        self.params
            .iter()
            .find(|(p, _)| p == k)
            .map(|(_, v)| v.as_str())
    }
}

/// `application/x-www-form-urlencoded` pairs (`+` is a space, `%XX` a byte).
pub fn form(q: &str) -> Vec<(String, String)> {
    fn dec(s: &str) -> String {
        let b = s.as_bytes();
        let mut out = Vec::with_capacity(b.len());
        let mut i = 0;
        while i < b.len() {
            match b[i] {
                b'+' => out.push(b' '),
                b'%' if i + 2 < b.len() => {
                    let hex = |c: u8| (c as char).to_digit(16);
                    match (hex(b[i + 1]), hex(b[i + 2])) {
                        (Some(h), Some(l)) => {
                            out.push((h * 16 + l) as u8);
                            i += 2;
                        }
                        _ => out.push(b'%'),
                    }
                }
                c => out.push(c),
            }
            i += 1;
        }
        String::from_utf8_lossy(&out).into_owned()
    }
    q.split('&')
        .filter(|p| !p.is_empty())
        .map(|p| match p.split_once('=') {
            Some((k, v)) => (dec(k), dec(v)),
            None => (dec(p), String::new()),
        })
        .collect()
}

impl Request {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    }
}

/// One reply.
pub struct Response {
    pub code: u16,
    pub headers: Vec<(&'static str, String)>,
    pub body: Vec<u8>,
}

impl Response {
    pub fn new(code: u16, content_type: &str, body: Vec<u8>) -> Response {
        Response {
            code,
            headers: vec![("Content-Type", content_type.to_string())],
            body,
        }
    }

    pub fn text(code: u16, body: &str) -> Response {
        Response::new(
            code,
            "text/plain; charset=utf-8",
            format!("{body}\n").into_bytes(),
        )
    }

    pub fn with_header(mut self, k: &'static str, v: &str) -> Response {
        self.headers.push((k, v.to_string()));
        self
    }
}

fn reason(code: u16) -> &'static str {
    match code {
        200 => "OK",
        204 => "No Content",
        304 => "Not Modified",
        400 => "Bad Request",
        404 => "Not Found",
        405 => "Method Not Allowed",
        408 => "Request Timeout",
        411 => "Length Required",
        413 => "Payload Too Large",
        414 => "URI Too Long",
        429 => "Too Many Requests",
        431 => "Request Header Fields Too Large",
        500 => "Internal Server Error",
        501 => "Not Implemented",
        503 => "Service Unavailable",
        _ => "",
    }
}

/// The listener's bounds.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    /// Connections at once.
    pub connections: usize,
    /// Requests worked on at once.
    pub workers: usize,
    /// Reply bytes held at once by the replies being sent ([`REPLY_BUDGET`]).
    pub reply_bytes: u64,
    /// Time a client has to take a whole reply ([`WRITE_TIME`]).
    pub reply_time: Duration,
}

/// Reply bytes the connections may hold at once while their clients read them: a reply
/// that does not fit beside those being sent is answered 503 (with `Retry-After`) and
/// dropped, so slow readers cannot pin more than this, and (with [`WRITE_TIME`], a
/// deadline for the whole reply) for at most 30 s. A reply larger than the whole is sent
/// when it is alone.
pub const REPLY_BUDGET: u64 = 1 << 30;

/// The live connections: which one to close when a newcomer needs room.
struct Conns {
    next: AtomicU64,
    /// Each connection's socket (to shut it down) and since when it waits on its client
    /// (None: busy with a request of ours).
    live: Mutex<HashMap<u64, (TcpStream, Option<Instant>)>>,
    max: usize,
    refused: AtomicU64,
    shed: AtomicU64,
}

impl Conns {
    /// Room for `s`: Some(id) (another connection may have been closed for it), or None.
    fn admit(&self, s: &TcpStream) -> Option<u64> {
        let mut live = self.live.lock().unwrap_or_else(|p| p.into_inner());
        if live.len() >= self.max {
            let oldest = live
                .iter()
                .filter_map(|(id, (_, w))| w.map(|w| (*id, w)))
                .min_by_key(|&(_, w)| w)
                .filter(|&(_, w)| w.elapsed() >= SHED_AFTER);
            let (id, _) = oldest?;
            if let Some((sock, _)) = live.remove(&id) {
                // Its thread's next read or write fails and ends it.
                let _ = sock.shutdown(Shutdown::Both);
                self.shed.fetch_add(1, Ordering::Relaxed);
            }
        }
        let clone = s.try_clone().ok()?;
        let id = self.next.fetch_add(1, Ordering::Relaxed);
        live.insert(id, (clone, Some(Instant::now())));
        Some(id)
    }

    fn waiting(&self, id: u64, on_client: bool) {
        let mut live = self.live.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(c) = live.get_mut(&id) {
            c.1 = on_client.then(Instant::now);
        }
    }

    fn gone(&self, id: u64) {
        self.live
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .remove(&id);
    }
}

/// Turns at working on a request.
struct Turns {
    free: Mutex<usize>,
    cv: Condvar,
    /// What the replies being sent hold ([`Limits::reply_bytes`]).
    replies: crate::gate::Share,
}

impl Turns {
    fn run<R>(&self, f: impl FnOnce() -> R) -> R {
        {
            let mut free = self.free.lock().unwrap_or_else(|p| p.into_inner());
            while *free == 0 {
                free = self.cv.wait(free).unwrap_or_else(|p| p.into_inner());
            }
            *free -= 1;
        }
        struct Give<'a>(&'a Turns);
        impl Drop for Give<'_> {
            fn drop(&mut self) {
                *self.0.free.lock().unwrap_or_else(|p| p.into_inner()) += 1;
                self.0.cv.notify_one();
            }
        }
        let _give = Give(self);
        f()
    }
}

/// What the listener counts (STATS).
pub struct Counts {
    conns: Arc<Conns>,
}

impl Counts {
    /// (connections now, refused, closed to make room) since the start.
    pub fn get(&self) -> (usize, u64, u64) {
        let live = self.conns.live.lock().map_or(0, |l| l.len());
        (
            live,
            self.conns.refused.load(Ordering::Relaxed),
            self.conns.shed.load(Ordering::Relaxed),
        )
    }
}

/// A request handler.
pub type Handler = dyn Fn(Request) -> Response + Send + Sync;

/// Serve `listener` with `handler` for ever (on the calling thread); `counts` is set first.
pub fn serve(listener: TcpListener, limits: Limits, handler: Arc<Handler>) -> Counts {
    let conns = Arc::new(Conns {
        next: AtomicU64::new(0),
        live: Mutex::new(HashMap::new()),
        max: limits.connections.max(1),
        refused: AtomicU64::new(0),
        shed: AtomicU64::new(0),
    });
    let turns = Arc::new(Turns {
        free: Mutex::new(limits.workers.max(1)),
        cv: Condvar::new(),
        replies: crate::gate::Share::new(limits.reply_bytes),
    });
    let counts = Counts {
        conns: conns.clone(),
    };
    std::thread::spawn(move || {
        // The pool of gate's loop is not the bound here (Conns is): it only caps threads
        // should shed connections be slow to end.
        let pool = crate::gate::Pool::new("http", conns.max * 2);
        let c2 = conns.clone();
        let accept = move || {
            let (s, _) = listener.accept()?;
            let _ = s.set_nodelay(true);
            Ok(s)
        };
        let serve = move |s: TcpStream| match c2.admit(&s) {
            Some(id) => {
                let _ = connection(&s, id, &c2, &turns, &*handler, limits.reply_time);
                c2.gone(id);
            }
            None => {
                c2.refused.fetch_add(1, Ordering::Relaxed);
                too_many(s);
            }
        };
        crate::gate::accept_loop("http", vec![pool], accept, too_many, serve);
    });
    counts
}

/// Answer a connection there is no room for (503) and close it.
fn too_many(s: TcpStream) {
    let reply = Response::text(503, "too many connections");
    let _ = write_response(&s, &reply, false, false, Duration::from_secs(1));
}

/// Read into `buf` until `deadline`, at most `max` bytes in all; Ok(0) at EOF.
fn read_some(s: &TcpStream, buf: &mut [u8], deadline: Instant) -> io::Result<usize> {
    let left = deadline.saturating_duration_since(Instant::now());
    if left.is_zero() {
        return Err(io::ErrorKind::TimedOut.into());
    }
    s.set_read_timeout(Some(left))?;
    (&*s).read(buf)
}

/// Serve requests on one connection until it closes, a limit ends it, or it asks to close.
fn connection(
    s: &TcpStream,
    id: u64,
    conns: &Conns,
    turns: &Turns,
    handler: &Handler,
    reply_time: Duration,
) -> io::Result<()> {
    let mut buf: Vec<u8> = Vec::with_capacity(4096);
    let mut first = true;
    loop {
        conns.waiting(id, true);
        // The head: what is buffered from the last request's read, then more.
        let start = Instant::now();
        let deadline = if first {
            start + HEAD_TIME
        } else {
            start + KEEP_ALIVE
        };
        first = false;
        let mut head_deadline = deadline;
        let (parsed, head_len) = loop {
            let mut headers = [httparse::EMPTY_HEADER; MAX_HEADERS];
            let mut r = httparse::Request::new(&mut headers);
            match r.parse(&buf) {
                Ok(httparse::Status::Complete(n)) => {
                    let req = Request {
                        method: r.method.unwrap_or("").to_string(),
                        url: r.path.unwrap_or("").to_string(),
                        headers: r
                            .headers
                            .iter()
                            .map(|h| {
                                (
                                    h.name.to_ascii_lowercase(),
                                    String::from_utf8_lossy(h.value).into_owned(),
                                )
                            })
                            .collect(),
                        body: Vec::new(),
                    };
                    let http10 = r.version == Some(0);
                    break ((req, http10), n);
                }
                Ok(httparse::Status::Partial) => {}
                Err(httparse::Error::TooManyHeaders) => {
                    return refuse(s, 431, "too many headers");
                }
                Err(e) => return refuse(s, 400, &format!("bad request: {e}")),
            }
            if buf.len() >= MAX_HEAD {
                return refuse(
                    s,
                    431,
                    &format!("request head longer than {MAX_HEAD} bytes"),
                );
            }
            let mut chunk = [0u8; 4096];
            let room = (MAX_HEAD - buf.len()).min(chunk.len());
            let n = match read_some(s, &mut chunk[..room], head_deadline) {
                Ok(0) => return Ok(()),
                Ok(n) => n,
                Err(e) if timed_out(&e) && buf.is_empty() => return Ok(()),
                Err(e) if timed_out(&e) => return refuse(s, 408, "request head too slow"),
                Err(e) => return Err(e),
            };
            if buf.is_empty() {
                // The first byte of a request starts its head's own time.
                head_deadline = Instant::now() + HEAD_TIME;
            }
            buf.extend_from_slice(&chunk[..n]);
        };
        let (mut req, http10) = parsed;
        buf.drain(..head_len);
        // The body: a declared length, read within its time.
        if req
            .header("transfer-encoding")
            .is_some_and(|t| !t.eq_ignore_ascii_case("identity"))
        {
            return refuse(s, 411, "a body needs a Content-Length (no chunked bodies)");
        }
        let len = match content_length(&req) {
            Ok(n) => n,
            Err(why) => return refuse(s, 400, why),
        };
        if len > MAX_BODY as u64 {
            return refuse(s, 413, &format!("body larger than {MAX_BODY} bytes"));
        }
        let len = len as usize;
        if len > buf.len()
            && req
                .header("expect")
                .is_some_and(|e| e.eq_ignore_ascii_case("100-continue"))
        {
            s.set_write_timeout(Some(WRITE_TIME))?;
            (&*s).write_all(b"HTTP/1.1 100 Continue\r\n\r\n")?;
        }
        let body_deadline = Instant::now() + BODY_TIME;
        while buf.len() < len {
            let mut chunk = vec![0u8; (len - buf.len()).min(64 << 10)];
            match read_some(s, &mut chunk, body_deadline) {
                Ok(0) => return Ok(()),
                Ok(n) => buf.extend_from_slice(&chunk[..n]),
                Err(e) if timed_out(&e) => return refuse(s, 408, "request body too slow"),
                Err(e) => return Err(e),
            }
        }
        req.body = buf.drain(..len).collect();
        let close = http10
            || req
                .header("connection")
                .is_some_and(|c| c.eq_ignore_ascii_case("close"));
        let head = req.method == "HEAD";
        conns.waiting(id, false);
        let resp = turns.run(|| {
            std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| handler(req)))
                .unwrap_or_else(|_| Response::text(500, "the request made the daemon panic"))
        });
        conns.waiting(id, true);
        // The reply is held while the client takes it: within the budget, else refused.
        let held = turns.replies.try_take(resp.body.len() as u64);
        let resp = match held {
            Some(_) => resp,
            None => {
                let used = turns.replies.used();
                drop(resp);
                Response::text(
                    503,
                    &format!(
                        "the replies being sent hold {used} bytes (at most {}): try again",
                        turns.replies.cap()
                    ),
                )
                .with_header("Retry-After", "5")
            }
        };
        write_response(s, &resp, head, !close, reply_time)?;
        drop((resp, held));
        if close {
            return Ok(());
        }
    }
}

/// The body's length a request declares (0 without one). RFC 9112 6.3: a Content-Length
/// that is not digits (`+5`, `-1`, `5 6`), or several that differ, leave the framing
/// unknown: the request is answered 400 and the connection closed. Equal values (`5, 5`,
/// or the header twice) are one length (RFC 9110 8.6).
fn content_length(req: &Request) -> Result<u64, &'static str> {
    let mut len = None;
    for (k, v) in &req.headers {
        if k != "content-length" {
            continue;
        }
        for part in v.split(',') {
            let part = part.trim_matches([' ', '\t']);
            if part.is_empty() || !part.bytes().all(|b| b.is_ascii_digit()) {
                return Err("Content-Length is not a number");
            }
            let n = part
                .parse::<u64>()
                .map_err(|_| "Content-Length is too large")?;
            if len.is_some_and(|l| l != n) {
                return Err("Content-Length given twice with different values");
            }
            len = Some(n);
        }
    }
    Ok(len.unwrap_or(0))
}

fn timed_out(e: &io::Error) -> bool {
    matches!(
        e.kind(),
        io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut
    )
}

/// Answer with an error and close. What the client is still sending is read and dropped
/// for a moment first (at most [`LINGER_BYTES`] within [`LINGER`]): closing a socket with
/// bytes unread resets it, and the client could lose the answer before reading it.
fn refuse(s: &TcpStream, code: u16, why: &str) -> io::Result<()> {
    write_response(
        s,
        &Response::text(code, why),
        false,
        false,
        Duration::from_secs(5),
    )?;
    let _ = s.shutdown(Shutdown::Write);
    let deadline = Instant::now() + LINGER;
    let (mut sink, mut left) = ([0u8; 16 << 10], LINGER_BYTES);
    while left > 0 {
        match read_some(s, &mut sink, deadline) {
            Ok(0) | Err(_) => break,
            Ok(n) => left = left.saturating_sub(n),
        }
    }
    Ok(())
}

/// How long, and how much, a refused client's bytes are drained before the close.
const LINGER: Duration = Duration::from_secs(2);
const LINGER_BYTES: usize = 4 << 20;

fn write_response(
    s: &TcpStream,
    r: &Response,
    head_only: bool,
    keep_alive: bool,
    within: Duration,
) -> io::Result<()> {
    let deadline = Instant::now() + within;
    let mut out = Vec::with_capacity(256);
    out.extend_from_slice(format!("HTTP/1.1 {} {}\r\n", r.code, reason(r.code)).as_bytes());
    for (k, v) in &r.headers {
        // A header value never carries a line break into the reply.
        let v: String = v.chars().filter(|c| *c != '\r' && *c != '\n').collect();
        out.extend_from_slice(format!("{k}: {v}\r\n").as_bytes());
    }
    out.extend_from_slice(format!("Content-Length: {}\r\n", r.body.len()).as_bytes());
    out.extend_from_slice(if keep_alive {
        b"Connection: keep-alive\r\n\r\n".as_slice()
    } else {
        b"Connection: close\r\n\r\n".as_slice()
    });
    let body: &[u8] = if head_only { &[] } else { &r.body };
    // A small reply in one write; a large one after its head, never copied.
    if body.len() <= SMALL_REPLY {
        out.extend_from_slice(body);
        return write_by(s, &out, deadline);
    }
    write_by(s, &out, deadline)?;
    write_by(s, body, deadline)
}

/// Replies up to this size are written with their head in one write.
const SMALL_REPLY: usize = 64 << 10;

/// Write all of `bytes` before `deadline` (one deadline for the whole reply, not a timeout
/// per write: a client taking a byte now and then is closed when it passes).
fn write_by(s: &TcpStream, bytes: &[u8], deadline: Instant) -> io::Result<()> {
    let mut w = s;
    for chunk in bytes.chunks(256 << 10) {
        let mut chunk = chunk;
        while !chunk.is_empty() {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return Err(io::ErrorKind::TimedOut.into());
            }
            w.set_write_timeout(Some(left))?;
            match w.write(chunk) {
                Ok(0) => return Err(io::ErrorKind::WriteZero.into()),
                Ok(n) => chunk = &chunk[n..],
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn forms_decode() {
        assert_eq!(
            form("target=sumSeries(a.*)&from=-1d&x&target=a%2Bb+c&bad=%zz%4"),
            vec![
                ("target".into(), "sumSeries(a.*)".into()),
                ("from".into(), "-1d".into()),
                ("x".into(), String::new()),
                ("target".into(), "a+b c".into()),
                ("bad".into(), "%zz%4".into()),
            ]
        );
    }

    /// A server that answers with the request's method, target and body length, or with
    /// N MB of `x` for `/big/N`.
    fn server(limits: Limits) -> (std::net::SocketAddr, Counts) {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = l.local_addr().unwrap();
        let h: Arc<Handler> = Arc::new(|r: Request| {
            if let Some(mb) = r.url.strip_prefix("/big/") {
                let n: usize = mb.parse().unwrap();
                return Response::new(200, "text/plain", vec![b'x'; n << 20]);
            }
            let body = format!("{} {} {}", r.method, r.url, r.body.len());
            Response::new(200, "text/plain", body.into_bytes())
        });
        (addr, serve(l, limits, h))
    }

    fn limits() -> Limits {
        Limits {
            connections: 8,
            workers: 2,
            reply_bytes: REPLY_BUDGET,
            reply_time: WRITE_TIME,
        }
    }

    #[test]
    fn framing_that_is_not_one_length_is_refused() {
        let (addr, _) = server(limits());
        for bad in [
            "Content-Length: 5\r\nContent-Length: 6\r\n",
            "Content-Length: +5\r\n",
            "Content-Length: 5, 6\r\n",
            "Content-Length: -1\r\n",
            "Content-Length: 0x5\r\n",
            "Content-Length: \r\n",
        ] {
            let r = get(
                addr,
                format!("POST /p HTTP/1.1\r\n{bad}\r\nhello").as_bytes(),
            );
            assert!(r.starts_with("HTTP/1.1 400"), "{bad}: {r}");
            assert!(r.contains("Connection: close"), "{bad}: {r}");
        }
        for same in [
            "Content-Length: 5\r\nContent-Length: 5\r\n",
            "Content-Length: 5, 5\r\n",
        ] {
            let r = get(
                addr,
                format!("POST /p HTTP/1.1\r\n{same}Connection: close\r\n\r\nhello").as_bytes(),
            );
            assert!(r.ends_with("POST /p 5"), "{same}: {r}");
        }
    }

    #[test]
    fn a_slow_reader_holds_its_reply_for_the_reply_time_at_most_and_within_the_budget() {
        let (addr, _) = server(Limits {
            reply_bytes: 40 << 20,
            reply_time: Duration::from_secs(3),
            ..limits()
        });
        // A reader that takes nothing: its 32 MB reply is held (socket buffers take less).
        let mut slow = TcpStream::connect(addr).unwrap();
        slow.write_all(b"GET /big/32 HTTP/1.1\r\n\r\n").unwrap();
        std::thread::sleep(Duration::from_millis(500));
        // Another 32 MB does not fit beside it: refused at once, the connection kept.
        let mut c = TcpStream::connect(addr).unwrap();
        c.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
        c.write_all(b"GET /big/32 HTTP/1.1\r\n\r\n").unwrap();
        let mut head = [0u8; 200];
        let n = c.read(&mut head).unwrap();
        let head = String::from_utf8_lossy(&head[..n]).to_string();
        assert!(head.starts_with("HTTP/1.1 503"), "{head}");
        assert!(head.contains("Retry-After: 5"), "{head}");
        // A small one fits.
        let r = get(addr, b"GET /s HTTP/1.1\r\nConnection: close\r\n\r\n");
        assert!(r.ends_with("GET /s 0"), "{r}");
        // Past its reply time the slow reader is closed (reading what was sent ends),
        // its reply dropped: a large one fits again.
        slow.set_read_timeout(Some(Duration::from_secs(10)))
            .unwrap();
        std::thread::sleep(Duration::from_secs(3));
        let t = Instant::now();
        let mut got = 0usize;
        let mut buf = vec![0u8; 1 << 20];
        loop {
            match slow.read(&mut buf) {
                Ok(0) | Err(_) => break,
                Ok(n) => got += n,
            }
        }
        assert!(got < 32 << 20, "the whole reply came: {got}");
        assert!(t.elapsed() < Duration::from_secs(5), "{:?}", t.elapsed());
        let mut c = TcpStream::connect(addr).unwrap();
        c.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
        c.write_all(b"GET /big/32 HTTP/1.1\r\nConnection: close\r\n\r\n")
            .unwrap();
        let mut all = Vec::new();
        let _ = c.read_to_end(&mut all);
        assert!(
            all.starts_with(b"HTTP/1.1 200"),
            "{}",
            String::from_utf8_lossy(&all[..100])
        );
        assert_eq!(
            all.len() - (all.windows(4).position(|w| w == b"\r\n\r\n").unwrap() + 4),
            32 << 20
        );
    }

    fn get(addr: std::net::SocketAddr, req: &[u8]) -> String {
        let mut c = TcpStream::connect(addr).unwrap();
        c.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
        c.write_all(req).unwrap();
        let mut out = String::new();
        let _ = c.read_to_string(&mut out);
        out
    }

    #[test]
    fn requests_bodies_and_keep_alive() {
        let (addr, _) = server(limits());
        let r = get(
            addr,
            b"GET /a?b=1 HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
        );
        assert!(r.starts_with("HTTP/1.1 200 OK\r\n"), "{r}");
        assert!(r.ends_with("\r\n\r\nGET /a?b=1 0"), "{r}");
        let r = get(
            addr,
            b"POST /p HTTP/1.1\r\nContent-Length: 5\r\n\r\nhelloGET /q HTTP/1.1\r\nConnection: close\r\n\r\n",
        );
        assert!(r.contains("POST /p 5") && r.ends_with("GET /q 0"), "{r}");
        let r = get(addr, b"POST /p HTTP/1.1\r\nContent-Length: 5000000\r\n\r\n");
        assert!(r.starts_with("HTTP/1.1 413"), "{r}");
        let r = get(
            addr,
            b"GET / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n",
        );
        assert!(r.starts_with("HTTP/1.1 411"), "{r}");
        let r = get(addr, b"HEAD /h HTTP/1.0\r\n\r\n");
        assert!(
            r.starts_with("HTTP/1.1 200") && r.ends_with("\r\n\r\n"),
            "{r}"
        );
    }

    #[test]
    fn a_head_that_never_ends_is_refused_at_its_bound() {
        let (addr, _) = server(limits());
        let mut c = TcpStream::connect(addr).unwrap();
        c.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
        let _ = c.write_all(b"GET / HTTP/1.1\r\nX-Long: ");
        let line = vec![b'a'; 16 << 10];
        for _ in 0..8 {
            if c.write_all(&line).is_err() {
                break;
            }
        }
        let mut out = String::new();
        let _ = c.read_to_string(&mut out);
        assert!(out.starts_with("HTTP/1.1 431"), "{out}");
    }

    #[test]
    fn slow_clients_make_room_for_a_bystander() {
        let (addr, counts) = server(Limits {
            connections: 4,
            ..limits()
        });
        // Four that send half a head, and a body they never finish.
        let mut held = Vec::new();
        for i in 0..4 {
            let mut c = TcpStream::connect(addr).unwrap();
            if i % 2 == 0 {
                c.write_all(b"GET / HTTP/1.1\r\nHost").unwrap();
            } else {
                c.write_all(b"POST / HTTP/1.1\r\nContent-Length: 500000\r\n\r\nx")
                    .unwrap();
            }
            held.push(c);
        }
        std::thread::sleep(SHED_AFTER + Duration::from_millis(200));
        let t = Instant::now();
        let r = get(addr, b"GET /v HTTP/1.1\r\nConnection: close\r\n\r\n");
        assert!(r.ends_with("GET /v 0"), "{r}");
        assert!(t.elapsed() < Duration::from_secs(1), "{:?}", t.elapsed());
        assert!(counts.get().2 >= 1, "one was closed for it");
    }
}
