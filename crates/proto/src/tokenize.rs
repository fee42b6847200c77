//! Field splitting as rrdcached does it: one space separates fields, a backslash escapes the
//! next character (`\ ` is a space inside a field, `\\` a backslash), two spaces in a row make
//! an empty field, there is no quoting. A single trailing space ends the line without adding
//! a field.

use std::borrow::Cow;

/// Split `line` into fields.
pub fn fields(line: &str) -> Vec<String> {
    split(line).map(Cow::into_owned).collect()
}

/// [`fields`] without copying: each field borrows from the line unless it holds a backslash
/// escape. The daemon's UPDATE path reads its values this way.
pub fn split(line: &str) -> Fields<'_> {
    Fields { rest: line }
}

/// The fields of one line, in order (see [`split`]).
pub struct Fields<'a> {
    rest: &'a str,
}

impl<'a> Iterator for Fields<'a> {
    type Item = Cow<'a, str>;

    fn next(&mut self) -> Option<Cow<'a, str>> {
        if self.rest.is_empty() {
            return None;
        }
        let rest = self.rest;
        match rest.bytes().position(|c| c == b' ' || c == b'\\') {
            None => {
                self.rest = "";
                Some(Cow::Borrowed(rest))
            }
            Some(i) if rest.as_bytes()[i] == b' ' => {
                self.rest = &rest[i + 1..];
                Some(Cow::Borrowed(&rest[..i]))
            }
            Some(i) => {
                // An escape: this field is rebuilt without its backslashes.
                let mut field = String::from(&rest[..i]);
                let mut chars = rest[i..].char_indices();
                let mut end = rest.len();
                while let Some((k, c)) = chars.next() {
                    match c {
                        ' ' => {
                            end = i + k + 1;
                            break;
                        }
                        '\\' => {
                            if let Some((_, n)) = chars.next() {
                                field.push(n);
                            }
                        }
                        c => field.push(c),
                    }
                }
                self.rest = &rest[end..];
                Some(Cow::Owned(field))
            }
        }
    }
}

/// Escape a field so that [`fields`] gives it back (what librrd's client does).
pub fn escape(field: &str) -> String {
    let mut s = String::with_capacity(field.len());
    for c in field.chars() {
        if c == ' ' || c == '\\' {
            s.push('\\');
        }
        s.push(c);
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn single_spaces_separate_fields() {
        assert_eq!(fields("UPDATE a.rrd 1:2"), ["UPDATE", "a.rrd", "1:2"]);
    }

    #[test]
    fn two_spaces_make_an_empty_field() {
        assert_eq!(fields("UPDATE  x.rrd 1:2"), ["UPDATE", "", "x.rrd", "1:2"]);
        assert_eq!(fields(" PING"), ["", "PING"]);
        assert_eq!(fields("PING  "), ["PING", ""]);
    }

    #[test]
    fn trailing_space_adds_no_field() {
        assert_eq!(fields("PING "), ["PING"]);
        assert!(fields("").is_empty());
    }

    #[test]
    fn backslash_escapes_space_and_itself() {
        assert_eq!(
            fields(r"FLUSH my\ file\\x.rrd"),
            ["FLUSH", r"my file\x.rrd"]
        );
        assert_eq!(fields(&format!("X {}", escape(r"a b\c"))), ["X", r"a b\c"]);
        assert_eq!(
            fields(r"A b\"),
            ["A", "b"],
            "a lone trailing backslash is dropped"
        );
        assert_eq!(fields(r"A \  b"), ["A", " ", "b"]);
        assert_eq!(fields("A x\\é y"), ["A", "xé", "y"]);
    }

    #[test]
    fn fields_without_escapes_are_borrowed() {
        let line = "UPDATE a.rrd 1:2";
        assert!(split(line).all(|f| matches!(f, Cow::Borrowed(_))));
        assert!(matches!(split(r"a\ b").next(), Some(Cow::Owned(_))));
    }
}
