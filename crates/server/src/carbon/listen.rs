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

fn tcp_lines(d: &Daemon, c: &Carbon, s: TcpStream, conn: &mut Conn) {
    let from = s
        .peer_addr()
        .map_or_else(|_| "tcp".to_string(), |a| a.to_string());
    let mut r = BufReader::with_capacity(64 << 10, s);
    let mut buf = Vec::with_capacity(256);
    loop {
        buf.clear();
        // At most MAX_LINE + 1 bytes of a line: a longer one is refused and skipped.
        let n = match (&mut r)
            .take(MAX_LINE as u64 + 1)
            .read_until(b'\n', &mut buf)
        {
            Ok(0) | Err(_) => return,
            Ok(n) => n,
        };
        if n > MAX_LINE && buf.last() != Some(&b'\n') {
            c.refuse(&from, &String::from_utf8_lossy(&buf[..80]), "line too long");
            // Skip to the end of that line.
            loop {
                buf.clear();
                match (&mut r).take(MAX_LINE as u64).read_until(b'\n', &mut buf) {
                    Ok(0) | Err(_) => return,
                    Ok(_) if buf.last() == Some(&b'\n') => break,
                    Ok(_) => {}
                }
            }
            continue;
        }
        if d.closing() {
            return;
        }
        match std::str::from_utf8(&buf) {
            Ok(line) => c.line(d, conn, &from, line.trim_end_matches('\n')),
            Err(_) => c.refuse(&from, &String::from_utf8_lossy(&buf), "not UTF-8"),
        }
        if r.buffer().is_empty() {
            c.settle(d, conn);
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
            match c.point(d, &mut conn, path, value, ts) {
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
