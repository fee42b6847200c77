//! RUN, the request that runs a `ringlet` command in the daemon holding the store
//! (docs/PROTOCOL.md, 18), without I/O: the request line, the input sent ahead, the reply.
//!
//! Wire format: `RUN <secs> <usecs> <command> <args...>` with the protocol's backslash
//! escapes; restore's input goes first in `RUNINPUT <hex>` lines. The reply is `<n> <out>
//! <err> <file>` (the byte lengths of stdout, of the error message and of the file, `-1` for
//! none) and `n` lines, each a one-letter tag and a line of text: `o` stdout, `e` the error,
//! `p` the file's path, `f` the file. A text is its lines joined by newlines, plus one if its
//! length says so.

use crate::tokenize::escape;
use crate::Response;

/// What a command printed, and its error.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Outcome {
    pub stdout: String,
    pub error: Option<String>,
    /// A file the command writes (`dump x.rrd out.xml`): path and contents. Written by the
    /// command itself, except inside the daemon (`cli::Ctx::remote`), where it goes back to the
    /// client, which writes it on its side (and reports `cannot write to` itself).
    pub file: Option<(String, String)>,
}

impl Outcome {
    pub fn ok(stdout: String) -> Outcome {
        Outcome {
            stdout,
            ..Outcome::default()
        }
    }
    pub fn err(msg: impl Into<String>) -> Outcome {
        Outcome {
            error: Some(msg.into()),
            ..Outcome::default()
        }
    }
}

/// Most input a connection may send ahead of one RUN.
pub const MAX_INPUT: usize = 256 << 20;

/// Input bytes per RUNINPUT line (twice that in hex).
pub const INPUT_CHUNK: usize = 32 * 1024;

/// The arguments a client puts first in a RUN when the daemon was named (the client's `named`).
pub const NAMED: [&str; 2] = ["--daemon", "-"];
/// The arguments without the mark of a named daemon ([`NAMED`]), and whether it was there.
pub fn strip_named(args: &[String]) -> (bool, &[String]) {
    if args.len() >= 2 && args[..2] == NAMED {
        (true, &args[2..])
    } else {
        (false, args)
    }
}

/// RUN's command that commits what the daemon holds (the client's `commit`): pipe mode sends it
/// at the end of a session that wrote, so what a client deletes once the session is over
/// (Cacti's Boost its queued values) is on the disk.
pub const COMMIT: &str = "commit-session";
/// Bytes as lowercase hex: how binary travels in the daemon's line protocol (RUN's input,
/// export's files).
pub fn hex(bytes: &[u8]) -> String {
    const H: &[u8; 16] = b"0123456789abcdef";
    let mut s = String::with_capacity(bytes.len() * 2);
    for b in bytes {
        s.push(H[(b >> 4) as usize] as char);
        s.push(H[(b & 15) as usize] as char);
    }
    s
}

/// Append the bytes `h` (hex, either case; `-` for none) stands for to `out`.
pub fn unhex(h: &str, out: &mut Vec<u8>) -> Result<(), String> {
    let v = |c: u8| match c {
        b'0'..=b'9' => Some(c - b'0'),
        b'a'..=b'f' => Some(c - b'a' + 10),
        b'A'..=b'F' => Some(c - b'A' + 10),
        _ => None,
    };
    if h == "-" {
        return Ok(());
    }
    if !h.len().is_multiple_of(2) {
        return Err("odd number of hex digits".into());
    }
    for p in h.as_bytes().chunks(2) {
        match (v(p[0]), v(p[1])) {
            (Some(a), Some(b)) => out.push(a << 4 | b),
            _ => return Err("not hex".into()),
        }
    }
    Ok(())
}

/// Append the bytes RUNINPUT's `h` stands for to `out` ([`unhex`], with its error).
pub fn runinput(h: &str, out: &mut Vec<u8>) -> Result<(), String> {
    unhex(h, out).map_err(|e| format!("RUNINPUT: {e}"))
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

/// A command's words fit RUN's one line.
pub fn sendable(cmd: &str, args: &[String]) -> Result<(), String> {
    if std::iter::once(cmd)
        .chain(args.iter().map(String::as_str))
        .any(|a| a.contains(['\n', '\r']))
    {
        return Err("an argument with a line break cannot be sent to the daemon".into());
    }
    Ok(())
}

/// The RUN line of `cmd` at the time `now`, its words escaped; `named`: the daemon was named
/// ([`NAMED`] first).
pub fn run_line(now: (i64, i64), cmd: &str, args: &[String], named: bool) -> String {
    let mut line = format!("RUN {} {} {}", now.0, now.1, escape(cmd));
    let first: &[&str] = if named { &NAMED } else { &[] };
    for a in first.iter().copied().chain(args.iter().map(String::as_str)) {
        line.push(' ');
        line.push_str(&escape(a));
    }
    line
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
        runinput(&hex(b"<a b='c'>\r\n\\"), &mut v).unwrap();
        assert_eq!(v, b"<a b='c'>\r\n\\");
        assert!(runinput("zz", &mut v).is_err());
        let f: Vec<String> = crate::tokenize::fields(&escape("a b\\c"));
        assert_eq!(f, ["a b\\c"]);
    }

    #[test]
    fn a_text_the_reply_cannot_tell_from_its_length_is_not_made_up() {
        assert_eq!(join(&[], -1), None);
        assert_eq!(join(&["x".into()], 2).as_deref(), Some("x\n"));
    }
}
