//! A client of the daemon's HTTP listener on the loopback, for tests, and free loopback ports
//! for the daemons they start.

use std::io::{Read, Write};
use std::time::Duration;

/// A loopback port free now, below the kernel's range of ephemeral ports (32768 and up):
/// a port from that range, let go until the daemon binds it, can be taken meanwhile by any
/// outgoing connection (other tests run beside this one).
pub fn free_port() -> u16 {
    use std::sync::atomic::{AtomicU32, Ordering};
    static NEXT: AtomicU32 = AtomicU32::new(0);
    let seed = std::process::id().wrapping_mul(2_654_435_761);
    for _ in 0..10_000 {
        let n = NEXT.fetch_add(7919, Ordering::Relaxed).wrapping_add(seed);
        let port = 20_000 + (n % 12_000) as u16;
        if std::net::TcpListener::bind(("127.0.0.1", port)).is_ok() {
            return port;
        }
    }
    panic!("no free loopback port between 20000 and 32000");
}

/// (status, head, body) of an HTTP/1.0 request on the loopback; a non-empty `body` is sent
/// as a form.
pub fn request(port: u16, method: &str, path: &str, body: &str) -> (u16, String, String) {
    let mut s = std::net::TcpStream::connect(("127.0.0.1", port)).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
    let head = if body.is_empty() {
        format!("{method} {path} HTTP/1.0\r\nHost: x\r\n\r\n")
    } else {
        format!(
            "{method} {path} HTTP/1.0\r\nHost: x\r\nContent-Type: application/x-www-form-urlencoded\r\nContent-Length: {}\r\n\r\n{body}",
            body.len()
        )
    };
    s.write_all(head.as_bytes()).unwrap();
    let mut out = Vec::new();
    s.read_to_end(&mut out).unwrap();
    let text = String::from_utf8_lossy(&out).to_string();
    let status = text
        .split(' ')
        .nth(1)
        .and_then(|c| c.parse().ok())
        .unwrap_or(0);
    let (head, body) = text.split_once("\r\n\r\n").unwrap_or((&text, ""));
    (status, head.to_string(), body.to_string())
}

/// The body of a GET that must answer 200.
pub fn get(port: u16, path: &str) -> String {
    let (st, _, b) = request(port, "GET", path, "");
    assert_eq!(st, 200, "{path}: {b}");
    b
}
