//! Carbon's listeners: plaintext lines on TCP and UDP, pickles on TCP, a thread a
//! connection within carbon's pool; each point goes to [`Carbon`].

use super::{Carbon, Conn, MAX_LINE, MAX_PATH, MAX_PICKLE};
use crate::daemon::Daemon;
use std::io::{BufRead, BufReader, Read};
use std::net::{TcpListener, TcpStream, UdpSocket};
use std::sync::Arc;

/// Serve carbon's plaintext protocol on a TCP listener: a thread a connection, lines in.
pub fn serve_tcp(d: Arc<Daemon>, c: Arc<Carbon>, l: TcpListener) {
    accept(d, c, l, "carbon", tcp_conn);
}

/// A thread named `name` a connection accepted on `l`, running `conn` on it, while
/// carbon's pool has room ([`crate::gate`]); past it a new connection is closed (carbon's
/// protocol has no way to say why).
fn accept(
    d: Arc<Daemon>,
    c: Arc<Carbon>,
    l: TcpListener,
    name: &'static str,
    conn: fn(&Daemon, &Carbon, TcpStream),
) {
    let pools = vec![c.conns.clone()];
    let idle = c.idle;
    let accept = || {
        let (s, _) = l.accept()?;
        let _ = s.set_read_timeout(idle);
        Ok(s)
    };
    crate::gate::accept_loop(name, pools, accept, drop, move |s| conn(&d, &c, s));
}

fn tcp_conn(d: &Daemon, c: &Carbon, s: TcpStream) {
    let mut conn = Conn::default();
    tcp_lines(d, c, s, &mut conn);
    c.settle(d, &mut conn);
}

/// The lines of a TCP connection, read in place from its buffer ([`Lines`]).
fn tcp_lines(d: &Daemon, c: &Carbon, s: TcpStream, conn: &mut Conn) {
    let from = s
        .peer_addr()
        .map_or_else(|_| "tcp".to_string(), |a| a.to_string());
    let mut r = BufReader::with_capacity(64 << 10, s);
    let mut lines = Lines::default();
    let take = |conn: &mut Conn, line: Line| match line {
        Line::Whole(line) => match std::str::from_utf8(line) {
            Ok(line) => c.line(d, conn, &from, line),
            Err(_) => c.refuse(&from, &String::from_utf8_lossy(line), "not UTF-8"),
        },
        Line::TooLong(head) => c.refuse(&from, &String::from_utf8_lossy(head), "line too long"),
    };
    loop {
        let chunk = match r.fill_buf() {
            Ok([]) => {
                if !d.closing() {
                    lines.finish(&mut |l| take(conn, l));
                }
                break;
            }
            Ok(chunk) => chunk,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(_) => break,
        };
        if !lines.feed(chunk, || !d.closing(), &mut |l| take(conn, l)) {
            break;
        }
        let n = chunk.len();
        r.consume(n);
        c.settle(d, conn);
    }
}

/// A line [`Lines`] hands on: whole (without its newline), or the first 80 bytes of one
/// longer than [`MAX_LINE`], which is skipped.
#[derive(Debug, PartialEq, Eq)]
enum Line<'a> {
    Whole(&'a [u8]),
    TooLong(&'a [u8]),
}

/// Carbon's lines cut from a stream's reads in place: a line is copied only when a read ends
/// inside it. A last line without its newline counts when the stream ends ([`Lines::finish`]).
#[derive(Default)]
struct Lines {
    /// A line begun at the end of a read.
    part: Vec<u8>,
    /// The rest of a line too long is being skipped.
    skipping: bool,
}

impl Lines {
    /// Hand on each line `chunk` ends; false when `go` says to stop (before a line).
    fn feed(&mut self, chunk: &[u8], go: impl Fn() -> bool, take: &mut impl FnMut(Line)) -> bool {
        let mut at = 0;
        for end in memchr::memchr_iter(b'\n', chunk) {
            if !go() {
                return false;
            }
            let line = &chunk[at..end];
            at = end + 1;
            if self.skipping {
                self.skipping = false;
            } else if self.part.is_empty() {
                Self::hand(line, take);
            } else {
                self.part.extend_from_slice(line);
                Self::hand(&self.part, take);
                self.part.clear();
            }
        }
        if !self.skipping {
            self.part.extend_from_slice(&chunk[at..]);
            if self.part.len() > MAX_LINE {
                Self::hand(&self.part, take);
                self.part.clear();
                self.skipping = true;
            }
        }
        true
    }

    /// The stream ended: its last line, if it had no newline.
    fn finish(&mut self, take: &mut impl FnMut(Line)) {
        if !self.part.is_empty() && !self.skipping {
            Self::hand(&self.part, take);
        }
        self.part.clear();
    }

    fn hand(line: &[u8], take: &mut impl FnMut(Line)) {
        if line.len() > MAX_LINE {
            take(Line::TooLong(&line[..80]));
        } else {
            take(Line::Whole(line));
        }
    }
}

/// Serve carbon's pickle protocol on a TCP listener: a thread a connection; each message a
/// 4-byte big-endian length and a pickled list of `(path, (timestamp, value))`.
pub fn serve_pickle(d: Arc<Daemon>, c: Arc<Carbon>, l: TcpListener) {
    accept(d, c, l, "carbon-pickle", pickle_conn);
}

fn pickle_conn(d: &Daemon, c: &Carbon, s: TcpStream) {
    let from = s
        .peer_addr()
        .map_or_else(|_| "tcp".to_string(), |a| a.to_string());
    let mut r = BufReader::with_capacity(64 << 10, s);
    let mut buf = Vec::new();
    let mut conn = Conn::default();
    loop {
        let mut len = [0u8; 4];
        if r.read_exact(&mut len).is_err() {
            return;
        }
        // carbon's length is big-endian (struct '!L').
        len.reverse();
        let n = u32::from_le_bytes(len) as usize;
        if n > MAX_PICKLE {
            c.refuse(
                &from,
                &format!("({n} bytes)"),
                &format!("pickle larger than {MAX_PICKLE} bytes, skipped"),
            );
            if std::io::copy(&mut (&mut r).take(n as u64), &mut std::io::sink()).is_err() {
                return;
            }
            continue;
        }
        buf.resize(n, 0);
        if r.read_exact(&mut buf).is_err() || d.closing() {
            return;
        }
        let v = match proto::pickle::loads(&buf) {
            Ok(v) => v,
            Err(e) => {
                c.refuse(&from, &format!("({n} bytes)"), &e);
                continue;
            }
        };
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0.0, |t| t.as_secs_f64());
        // A refusal names the item by its place in the message, never by its contents
        // (a few hundred bytes can share their way to 2^40 elements).
        let walked = proto::pickle::for_each_point(&v, MAX_PATH, |point| {
            let (path, ts, value) = match point {
                Ok(p) => p,
                Err(bad) => {
                    let what = format!("(item {} of a {n}-byte pickle)", bad.index);
                    return c.refuse(&from, &what, "not (path, (timestamp, value))");
                }
            };
            let ts = if ts == -1.0 { now } else { ts };
            if !(ts.is_finite() && (0.0..1e12).contains(&ts)) || value.is_infinite() {
                let what = format!("{path} {value} {ts}");
                return c.refuse(&from, &what, "not a time or not a number");
            }
            match c.point(d, &mut conn, path, value, None, ts) {
                Ok(taken) => conn.count(taken),
                Err(e) => c.refuse(&from, &format!("{path} {value} {ts}"), &e),
            }
        });
        if let Err(e) = walked {
            c.refuse(&from, &format!("({n} bytes)"), &e);
        }
        c.settle(d, &mut conn);
    }
}

/// Serve carbon's plaintext protocol on a UDP socket: each datagram, lines.
pub fn serve_udp(d: Arc<Daemon>, c: Arc<Carbon>, s: UdpSocket) {
    let mut buf = vec![0u8; 65_536];
    let mut conn = Conn::default();
    loop {
        let Ok((n, from)) = s.recv_from(&mut buf) else {
            continue;
        };
        if d.closing() {
            return;
        }
        let from = from.to_string();
        for line in buf[..n].split(|&b| b == b'\n') {
            if line.len() > MAX_LINE {
                c.refuse(
                    &from,
                    &String::from_utf8_lossy(&line[..80]),
                    "line too long",
                );
                continue;
            }
            match std::str::from_utf8(line) {
                Ok(l) => c.line(&d, &mut conn, &from, l),
                Err(_) => c.refuse(&from, &String::from_utf8_lossy(line), "not UTF-8"),
            }
        }
        c.settle(&d, &mut conn);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What the lines of `text` are, cut the plain way.
    fn plain(text: &[u8]) -> Vec<(bool, Vec<u8>)> {
        let mut out = Vec::new();
        let mut parts: Vec<&[u8]> = text.split(|&b| b == b'\n').collect();
        if parts.last().is_some_and(|l| l.is_empty()) {
            parts.pop();
        }
        for l in parts {
            if l.len() > MAX_LINE {
                out.push((false, l[..80].to_vec()));
            } else {
                out.push((true, l.to_vec()));
            }
        }
        out
    }

    #[test]
    fn lines_cut_from_reads_of_any_size_are_the_text_s_lines() {
        let mut text = Vec::new();
        let mut seed = 7u64;
        let mut next = |n: u64| {
            seed = seed
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            (seed >> 33) % n
        };
        for i in 0..400 {
            let len = match next(10) {
                0 => MAX_LINE - 1 + next(3) as usize,
                1 => MAX_LINE + 1 + next(3000) as usize,
                2 => 0,
                _ => next(60) as usize,
            };
            text.extend((0..len).map(|k| b'a' + ((i + k) % 26) as u8));
            text.push(b'\n');
        }
        text.extend_from_slice(b"last.line 1 2");
        let mut want = plain(&text);
        for read in [1, 2, 3, 7, 80, 81, 4095, 4096, 4097, 5000, 65536, 1 << 20] {
            let mut got = Vec::new();
            let mut lines = Lines::default();
            let mut take = |l: Line| {
                got.push(match l {
                    Line::Whole(b) => (true, b.to_vec()),
                    Line::TooLong(b) => (false, b.to_vec()),
                })
            };
            for chunk in text.chunks(read) {
                assert!(lines.feed(chunk, || true, &mut take));
            }
            lines.finish(&mut take);
            assert_eq!(got.len(), want.len(), "reads of {read}");
            assert!(got == want, "reads of {read}");
        }
        // A stream that ends in its newline has no last line to add; one that ends inside
        // a line too long hands that on once.
        text.push(b'\n');
        text.extend(std::iter::repeat_n(b'x', MAX_LINE + 5));
        want = plain(&text);
        let mut got = 0;
        let mut lines = Lines::default();
        for chunk in text.chunks(1000) {
            lines.feed(chunk, || true, &mut |_| got += 1);
        }
        lines.finish(&mut |_| got += 1);
        assert_eq!(got, want.len());
        // Told to stop, it hands on nothing more.
        let mut lines = Lines::default();
        assert!(!lines.feed(b"a 1 2\nb 1 2\n", || false, &mut |_| panic!()));
    }
}
