//! Graphite's target language: `sumSeries(servers.*.cpu)`, `alias(a.b, 'name')`,
//! `aliasByNode(a.*.c, 1)`, `scale(x, -0.5)`, keyword arguments (`summarize(x, '1h',
//! func='max')`). A path runs to the next `,` or `)` outside braces (`a.{b,c}.d` is one path).

/// A parsed target.
#[derive(Debug, Clone, PartialEq)]
pub enum Expr {
    Path(String),
    Call {
        name: String,
        args: Vec<Expr>,
        kwargs: Vec<(String, Expr)>,
    },
    Num(f64),
    Str(String),
    Bool(bool),
    None,
}

/// Keyword arguments, in order.
pub type Kwargs = Vec<(String, Expr)>;

/// The longest target taken, bytes.
pub const MAX_TARGET: usize = 64 << 10;

/// Calls nested deeper than this are refused (each level is a stack frame of evaluation).
const MAX_DEPTH: usize = 64;

pub fn parse(s: &str) -> Result<Expr, String> {
    if s.len() > MAX_TARGET {
        return Err(format!("target longer than {MAX_TARGET} bytes"));
    }
    let mut p = Parser {
        s: s.as_bytes(),
        at: 0,
        depth: 0,
    };
    let e = p.expr()?;
    p.ws();
    if p.at != p.s.len() {
        return Err(format!(
            "unexpected '{}' at {} in '{s}'",
            String::from_utf8_lossy(&p.s[p.at..])
                .chars()
                .next()
                .unwrap_or(' '),
            p.at
        ));
    }
    Ok(e)
}

struct Parser<'a> {
    s: &'a [u8],
    at: usize,
    depth: usize,
}

impl Parser<'_> {
    fn ws(&mut self) {
        while self.at < self.s.len() && self.s[self.at].is_ascii_whitespace() {
            self.at += 1;
        }
    }

    fn peek(&self) -> Option<u8> {
        self.s.get(self.at).copied()
    }

    fn text(&self, a: usize, b: usize) -> String {
        String::from_utf8_lossy(&self.s[a..b]).into_owned()
    }

    fn expr(&mut self) -> Result<Expr, String> {
        self.ws();
        match self.peek() {
            None => Err("a target ends too soon".into()),
            Some(q @ (b'\'' | b'"')) => {
                self.at += 1;
                let start = self.at;
                while self.peek().is_some_and(|c| c != q) {
                    self.at += 1;
                }
                if self.peek() != Some(q) {
                    return Err("unclosed string".into());
                }
                let t = self.text(start, self.at);
                self.at += 1;
                Ok(Expr::Str(t))
            }
            Some(_) => {
                let start = self.at;
                let mut depth = 0usize;
                // After a `;` the token is a tagged series' name, whose tags hold `=`.
                let mut tagged = false;
                while let Some(c) = self.peek() {
                    match c {
                        b'{' => depth += 1,
                        b'}' => depth = depth.saturating_sub(1),
                        b';' => tagged = true,
                        b',' | b')' if depth == 0 => break,
                        b'(' if depth == 0 => break,
                        b'=' if depth == 0 && !tagged => break,
                        c if c.is_ascii_whitespace() && depth == 0 => break,
                        _ => {}
                    }
                    self.at += 1;
                }
                let tok = self.text(start, self.at);
                if tok.is_empty() {
                    return Err(format!("expected a value at {}", self.at));
                }
                self.ws();
                if self.peek() == Some(b'(') {
                    if !tok.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_') {
                        return Err(format!("'{tok}' is not a function name"));
                    }
                    self.at += 1;
                    self.depth += 1;
                    if self.depth > MAX_DEPTH {
                        return Err("functions nested too deep".into());
                    }
                    let (args, kwargs) = self.args()?;
                    self.depth -= 1;
                    return Ok(Expr::Call {
                        name: tok,
                        args,
                        kwargs,
                    });
                }
                Ok(atom(tok))
            }
        }
    }

    fn args(&mut self) -> Result<(Vec<Expr>, Kwargs), String> {
        let mut args = Vec::new();
        let mut kwargs = Vec::new();
        self.ws();
        if self.peek() == Some(b')') {
            self.at += 1;
            return Ok((args, kwargs));
        }
        loop {
            let e = self.expr()?;
            self.ws();
            if self.peek() == Some(b'=') {
                let Expr::Path(key) = e else {
                    return Err("a keyword argument needs a name".into());
                };
                self.at += 1;
                kwargs.push((key, self.expr()?));
                self.ws();
            } else {
                if !kwargs.is_empty() {
                    return Err("a positional argument after keyword arguments".into());
                }
                args.push(e);
            }
            match self.peek() {
                Some(b',') => self.at += 1,
                Some(b')') => {
                    self.at += 1;
                    return Ok((args, kwargs));
                }
                _ => return Err(format!("expected ',' or ')' at {}", self.at)),
            }
        }
    }
}

fn atom(tok: String) -> Expr {
    match tok.to_ascii_lowercase().as_str() {
        "true" => return Expr::Bool(true),
        "false" => return Expr::Bool(false),
        "none" => return Expr::None,
        _ => {}
    }
    let numeric = tok
        .bytes()
        .all(|b| b.is_ascii_digit() || matches!(b, b'.' | b'-' | b'+' | b'e' | b'E'));
    match tok.parse::<f64>() {
        Ok(v) if numeric && v.is_finite() => Expr::Num(v),
        _ => Expr::Path(tok),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn call(name: &str, args: Vec<Expr>) -> Expr {
        Expr::Call {
            name: name.into(),
            args,
            kwargs: vec![],
        }
    }

    #[test]
    fn targets_parse_as_graphite_reads_them() {
        assert_eq!(parse("a.b.c"), Ok(Expr::Path("a.b.c".into())));
        assert_eq!(
            parse("sumSeries(a.{b,c}.*, x.y)"),
            Ok(call(
                "sumSeries",
                vec![Expr::Path("a.{b,c}.*".into()), Expr::Path("x.y".into())]
            ))
        );
        assert_eq!(
            parse("alias(scale(a.b, -0.5), 'half \"b\"')"),
            Ok(call(
                "alias",
                vec![
                    call("scale", vec![Expr::Path("a.b".into()), Expr::Num(-0.5)]),
                    Expr::Str("half \"b\"".into())
                ]
            ))
        );
        assert_eq!(
            parse("summarize(a, \"1h\", func='max', alignToFrom=true)"),
            Ok(Expr::Call {
                name: "summarize".into(),
                args: vec![Expr::Path("a".into()), Expr::Str("1h".into())],
                kwargs: vec![
                    ("func".into(), Expr::Str("max".into())),
                    ("alignToFrom".into(), Expr::Bool(true))
                ]
            })
        );
        assert_eq!(parse("10.host.cpu"), Ok(Expr::Path("10.host.cpu".into())));
        assert_eq!(
            parse("scale(disk.used;host=a;dc=x, 2)"),
            Ok(call(
                "scale",
                vec![Expr::Path("disk.used;host=a;dc=x".into()), Expr::Num(2.0)]
            ))
        );
        assert_eq!(parse(" 42 "), Ok(Expr::Num(42.0)));
        for bad in [
            "",
            "f(a",
            "f(a,",
            "'x",
            "a b",
            "f(x=1, y)",
            "f-g(x)",
            "f(a))",
        ] {
            assert!(parse(bad).is_err(), "{bad}");
        }
        let deep = "f(".repeat(100) + &")".repeat(100);
        assert!(parse(&deep).is_err());
    }
}
