//! Replies: a status line `N message`, then N lines (N > 0), or `-1 message` for an error.
//!
//! `N` counts the lines that follow, so a client can read a reply without knowing the
//! command. FETCHBIN is the one reply whose body also carries raw bytes; its `N` still counts
//! only the text lines, as rrdcached's does.

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Response {
    /// Number of text lines after the status line; -1 for an error.
    pub status: i64,
    pub message: String,
    /// Everything after the status line, newlines included.
    pub body: Vec<u8>,
}

impl Response {
    /// `0 message`.
    pub fn ok(message: impl Into<String>) -> Response {
        Response {
            status: 0,
            message: message.into(),
            body: Vec::new(),
        }
    }

    /// `-1 message`.
    pub fn err(message: impl Into<String>) -> Response {
        Response {
            status: -1,
            message: message.into(),
            body: Vec::new(),
        }
    }

    /// `N message` followed by the N lines.
    pub fn lines<S: AsRef<str>>(message: impl Into<String>, lines: &[S]) -> Response {
        let mut body = Vec::new();
        for l in lines {
            body.extend_from_slice(l.as_ref().as_bytes());
            body.push(b'\n');
        }
        Response {
            status: lines.len() as i64,
            message: message.into(),
            body,
        }
    }

    /// A reply whose status counts `text_lines` but whose body also holds raw bytes.
    pub fn raw(text_lines: i64, message: impl Into<String>, body: Vec<u8>) -> Response {
        Response {
            status: text_lines,
            message: message.into(),
            body,
        }
    }

    pub fn is_error(&self) -> bool {
        self.status < 0
    }

    /// The reply as sent on the wire.
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(self.message.len() + self.body.len() + 8);
        self.write_to(&mut out);
        out
    }

    /// Append the reply as sent on the wire to `out`, its body moved rather than copied
    /// when `out` is empty and the body large (a RUN's dump): the daemon holds it once.
    pub fn append_to(self, out: &mut Vec<u8>) {
        if !out.is_empty() || self.body.len() < 1 << 16 {
            return self.write_to(out);
        }
        let mut head = Vec::with_capacity(self.message.len() + 24);
        push_int(&mut head, self.status);
        head.push(b' ');
        head.extend_from_slice(self.message.as_bytes());
        head.push(b'\n');
        let mut body = self.body;
        // In place when the body left room before it is full (it moves up by the head).
        body.splice(0..0, head);
        *out = body;
    }

    /// Append the reply as sent on the wire to `out`.
    pub fn write_to(&self, out: &mut Vec<u8>) {
        push_int(out, self.status);
        out.push(b' ');
        out.extend_from_slice(self.message.as_bytes());
        out.push(b'\n');
        out.extend_from_slice(&self.body);
    }
}

/// A reply's status line as a client reads it (its end of line, `\n` or `\r\n`, may be
/// there): the number (the lines that follow when positive, -1 for an error) and the
/// message; `None` when it does not start with a number.
pub fn status(line: &str) -> Option<(i64, &str)> {
    let line = line.trim_end_matches(['\n', '\r']);
    let (n, msg) = line.split_once(' ').unwrap_or((line, ""));
    Some((n.parse().ok()?, msg))
}

/// Append UPDATE's success reply, `0 errors, enqueued N value(s).` (the status 0 reads as the
/// error count), without building a [`Response`]: it is the reply to nearly every request.
pub fn write_enqueued(out: &mut Vec<u8>, n: usize) {
    out.extend_from_slice(b"0 errors, enqueued ");
    push_int(out, n as i64);
    out.extend_from_slice(b" value(s).\n");
}

/// Append `n` in decimal.
fn push_int(out: &mut Vec<u8>, n: i64) {
    let mut digits = [0u8; 20];
    let mut i = digits.len();
    let mut m = n.unsigned_abs();
    loop {
        i -= 1;
        digits[i] = b'0' + (m % 10) as u8;
        m /= 10;
        if m == 0 {
            break;
        }
    }
    if n < 0 {
        out.push(b'-');
    }
    out.extend_from_slice(&digits[i..]);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_status_line_reads_as_its_number_and_message() {
        assert_eq!(
            status("0 errors, enqueued 1 value(s).\n"),
            Some((0, "errors, enqueued 1 value(s)."))
        );
        assert_eq!(status("3 Success\r\n"), Some((3, "Success")));
        assert_eq!(status("-1 No such file: x"), Some((-1, "No such file: x")));
        assert_eq!(status("0"), Some((0, "")));
        assert_eq!(status("bad reply\n"), None);
        assert_eq!(status(""), None);
        for r in [
            Response::ok("fine"),
            Response::err("no"),
            Response::lines("2 x", &["a", "b"]),
        ] {
            let text = String::from_utf8(r.to_bytes()).unwrap();
            let (n, msg) = status(text.lines().next().unwrap()).unwrap();
            assert_eq!((n, msg), (r.status, r.message.as_str()));
        }
    }

    #[test]
    fn status_counts_following_lines() {
        let r = Response::lines("updates pending", &["1:2", "3:4"]);
        assert_eq!(r.to_bytes(), b"2 updates pending\n1:2\n3:4\n");
    }

    #[test]
    fn errors_are_minus_one() {
        assert_eq!(
            Response::err("Unknown command: FOO").to_bytes(),
            b"-1 Unknown command: FOO\n"
        );
        assert_eq!(Response::ok("PONG").to_bytes(), b"0 PONG\n");
    }

    #[test]
    fn the_enqueued_reply_is_rrdcacheds() {
        let mut out = Vec::new();
        write_enqueued(&mut out, 1);
        write_enqueued(&mut out, 1234567890);
        assert_eq!(
            out,
            b"0 errors, enqueued 1 value(s).\n0 errors, enqueued 1234567890 value(s).\n"
        );
        assert_eq!(
            Response::raw(i64::MIN, "x", Vec::new()).to_bytes(),
            b"-9223372036854775808 x\n"
        );
        assert_eq!(Response::lines("m", &["a"; 12]).to_bytes()[..5], *b"12 m\n");
    }

    /// A large reply into an empty buffer is moved, not copied (the daemon holds a RUN's
    /// dump once), and gives the same bytes as a copy.
    #[test]
    fn a_large_body_is_moved_into_an_empty_buffer() {
        let mut body = Vec::with_capacity(1 << 20);
        body.extend(std::iter::repeat_n(b'x', (1 << 20) - 64));
        let ptr = body.as_ptr();
        let r = Response::raw(3, "a b c", body);
        let want = r.to_bytes();
        let mut out = Vec::new();
        r.append_to(&mut out);
        assert_eq!(out, want);
        assert_eq!(out.as_ptr(), ptr, "the body's buffer was copied");
        // Into a buffer that holds something: appended.
        let mut out = b"0 OK\n".to_vec();
        Response::raw(1, "m", vec![b'y'; 1 << 17]).append_to(&mut out);
        assert_eq!(&out[..9], b"0 OK\n1 m\n");
        assert_eq!(out.len(), 9 + (1 << 17));
    }
}
