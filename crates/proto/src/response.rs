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
        let mut out = format!("{} {}\n", self.status, self.message).into_bytes();
        out.extend_from_slice(&self.body);
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
}
