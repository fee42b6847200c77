//! A client of the rrdcached protocol on a unix socket, for tests: every read and write has
//! a timeout, and a reply is read whole (its status line and the lines it announces).

use std::io::{Read, Write};
use std::os::unix::net::UnixStream;
use std::path::Path;
use std::time::Duration;

/// Connect to a unix socket with read and write timeouts of 30 s.
pub fn connect(sock: &Path) -> UnixStream {
    let s = UnixStream::connect(sock).expect("connect");
    s.set_read_timeout(Some(Duration::from_secs(30)))
        .expect("timeout");
    s.set_write_timeout(Some(Duration::from_secs(30)))
        .expect("timeout");
    s
}

/// Send `input` on a new connection, half-close, and read everything until the server closes.
pub fn converse(sock: &Path, input: &[u8]) -> Vec<u8> {
    let mut s = connect(sock);
    s.write_all(input).expect("send");
    let _ = s.shutdown(std::net::Shutdown::Write);
    let mut out = Vec::new();
    let _ = s.read_to_end(&mut out);
    out
}

/// Read one reply (status line and its following lines) from a stream.
pub fn read_reply(s: &mut impl Read) -> String {
    let line = read_line(s);
    let (n, _) =
        proto::response::status(&line).unwrap_or_else(|| panic!("bad status line {line:?}"));
    let mut out = line;
    for _ in 0..n.max(0) {
        out.push_str(&read_line(s));
    }
    out
}

/// One line, newline included; empty at EOF. A byte at a time: what follows the line (the
/// next reply, FETCHBIN's raw bytes) stays in the stream for the test to read.
pub fn read_line(s: &mut impl Read) -> String {
    let mut v = Vec::new();
    let mut b = [0u8; 1];
    loop {
        match s.read(&mut b) {
            Ok(0) => break,
            Ok(_) => {
                v.push(b[0]);
                if b[0] == b'\n' {
                    break;
                }
            }
            Err(e) => panic!("read failed after {:?}: {e}", String::from_utf8_lossy(&v)),
        }
    }
    String::from_utf8_lossy(&v).into_owned()
}

/// Send one request line, read its reply.
pub fn request(s: &mut UnixStream, line: &str) -> String {
    s.write_all(format!("{line}\n").as_bytes()).expect("send");
    read_reply(s)
}

/// FETCH the whole of a one-DS series through a new connection; (time, value text) pairs.
pub fn fetch_rows(sock: &Path, file: &str, cf: &str, start: i64, end: i64) -> Vec<(i64, String)> {
    let mut s = connect(sock);
    let r = request(&mut s, &format!("FETCH {file} {cf} {start} {end}"));
    assert!(r.contains(" Success\n"), "FETCH {file} failed: {r}");
    r.lines()
        .filter_map(|l| {
            let (t, v) = l.split_once(": ")?;
            let t: i64 = t.trim().parse().ok()?;
            Some((t, v.to_string()))
        })
        .collect()
}
