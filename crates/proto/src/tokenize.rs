//! Field splitting as rrdcached does it: one space separates fields, a backslash escapes the
//! next character (`\ ` is a space inside a field, `\\` a backslash), two spaces in a row make
//! an empty field, there is no quoting. A single trailing space ends the line without adding
//! a field.

/// Split `line` into fields.
pub fn fields(line: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut chars = line.chars().peekable();
    while chars.peek().is_some() {
        let mut field = String::new();
        while let Some(c) = chars.next() {
            match c {
                ' ' => break,
                '\\' => {
                    if let Some(n) = chars.next() {
                        field.push(n);
                    }
                }
                c => field.push(c),
            }
        }
        out.push(field);
    }
    out
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
    }
}
