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
        /// The call as written (graphite-web's `seriesByTag` names its series by it).
        raw: String,
    },
    Int(i64),
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

/// The characters graphite-web's grammar keeps out of a path unless escaped with `\\`.
const SYMBOLS: &[u8] = b"(){},.'\"\\|";

pub fn parse(s: &str) -> Result<Expr, String> {
    if s.len() > MAX_TARGET {
        return Err(format!("target longer than {MAX_TARGET} bytes"));
    }
    let mut p = Parser {
        s: s.as_bytes(),
        at: 0,
        depth: 0,
    };
    let e = p.piped()?;
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

    /// An expression with its pipes: `a.b | scale(2) | alias('x')` is
    /// `alias(scale(a.b, 2), 'x')`.
    fn piped(&mut self) -> Result<Expr, String> {
        let mut e = self.expr()?;
        loop {
            let save = self.at;
            self.ws();
            if self.peek() != Some(b'|') {
                self.at = save;
                return Ok(e);
            }
            self.at += 1;
            self.ws();
            match self.expr()? {
                Expr::Call {
                    name,
                    mut args,
                    kwargs,
                    raw,
                } => {
                    args.insert(0, e);
                    e = Expr::Call {
                        name,
                        args,
                        kwargs,
                        raw,
                    };
                }
                other => {
                    return Err(format!(
                        "a pipe must lead to a function call, not {other:?}"
                    ))
                }
            }
        }
    }

    fn expr(&mut self) -> Result<Expr, String> {
        self.ws();
        match self.peek() {
            None => Err("a target ends too soon".into()),
            Some(q @ (b'\'' | b'"')) => {
                self.at += 1;
                let start = self.at;
                while let Some(c) = self.peek() {
                    if c == q {
                        break;
                    }
                    // A backslash keeps the next character in the string (as written).
                    self.at += if c == b'\\' { 2 } else { 1 };
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
                let mut tok = Vec::new();
                while let Some(c) = self.peek() {
                    match c {
                        b'\\'
                            if self
                                .s
                                .get(self.at + 1)
                                .is_some_and(|n| SYMBOLS.contains(n) || *n == b'=') =>
                        {
                            tok.push(self.s[self.at + 1]);
                            self.at += 2;
                            continue;
                        }
                        b'{' => depth += 1,
                        b'}' => depth = depth.saturating_sub(1),
                        b',' | b')' | b'|' if depth == 0 => break,
                        b'(' if depth == 0 => break,
                        b'=' if depth == 0 && !tok.contains(&b';') => break,
                        b'\'' | b'"' => break,
                        c if c.is_ascii_whitespace() && depth == 0 => break,
                        _ => {}
                    }
                    tok.push(c);
                    self.at += 1;
                }
                let raw_end = self.at;
                let tok = String::from_utf8_lossy(&tok).into_owned();
                if tok.is_empty() {
                    return Err(format!("expected a value at {}", self.at));
                }
                self.ws();
                if self.peek() == Some(b'(') {
                    let b = tok.as_bytes();
                    if !(b[0].is_ascii_alphabetic() || b[0] == b'_')
                        || !b.iter().all(|b| b.is_ascii_alphanumeric() || *b == b'_')
                    {
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
                        raw: self.text(start, self.at),
                    });
                }
                self.at = raw_end;
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
            let e = self.piped()?;
            self.ws();
            if self.peek() == Some(b'=') {
                let Expr::Path(key) = e else {
                    return Err("a keyword argument needs a name".into());
                };
                self.at += 1;
                kwargs.push((key, self.piped()?));
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

/// A token that is not a call: graphite-web's literals (true, false, none, inf, integers
/// `-?\\d+`, floats `-?\\d+\\.\\d+`, either with an exponent), else a path.
fn atom(tok: String) -> Expr {
    match tok.to_ascii_lowercase().as_str() {
        "true" => return Expr::Bool(true),
        "false" => return Expr::Bool(false),
        "none" => return Expr::None,
        "inf" => return Expr::Num(f64::INFINITY),
        _ => {}
    }
    let digits = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
    let int = |s: &str| digits(s.strip_prefix('-').unwrap_or(s));
    let float = |s: &str| {
        let s = s.strip_prefix('-').unwrap_or(s);
        s.split_once('.')
            .is_some_and(|(a, b)| digits(a) && digits(b))
    };
    let (mant, exp) = match tok.find(['e', 'E']) {
        Some(i) => (&tok[..i], Some(&tok[i + 1..])),
        None => (tok.as_str(), None),
    };
    match exp {
        None if int(mant) => match tok.parse::<i64>() {
            Ok(v) => Expr::Int(v),
            Err(_) => tok.parse().map(Expr::Num).unwrap_or(Expr::Path(tok)),
        },
        None if float(mant) => tok.parse().map(Expr::Num).unwrap_or(Expr::Path(tok)),
        Some(e) if (int(mant) || float(mant)) && int(e) => {
            tok.parse().map(Expr::Num).unwrap_or(Expr::Path(tok))
        }
        _ => Expr::Path(tok),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The call's parts, without its raw text.
    fn strip(e: Expr) -> Expr {
        match e {
            Expr::Call {
                name, args, kwargs, ..
            } => Expr::Call {
                name,
                args: args.into_iter().map(strip).collect(),
                kwargs: kwargs.into_iter().map(|(k, v)| (k, strip(v))).collect(),
                raw: String::new(),
            },
            e => e,
        }
    }

    fn p(s: &str) -> Result<Expr, String> {
        parse(s).map(strip)
    }

    fn call(name: &str, args: Vec<Expr>) -> Expr {
        Expr::Call {
            name: name.into(),
            args,
            kwargs: vec![],
            raw: String::new(),
        }
    }

    #[test]
    fn targets_parse_as_graphite_reads_them() {
        assert_eq!(p("a.b.c"), Ok(Expr::Path("a.b.c".into())));
        assert_eq!(
            p("sumSeries(a.{b,c}.*, x.y)"),
            Ok(call(
                "sumSeries",
                vec![Expr::Path("a.{b,c}.*".into()), Expr::Path("x.y".into())]
            ))
        );
        assert_eq!(
            p("alias(scale(a.b, -0.5), 'half \"b\"')"),
            Ok(call(
                "alias",
                vec![
                    call("scale", vec![Expr::Path("a.b".into()), Expr::Num(-0.5)]),
                    Expr::Str("half \"b\"".into())
                ]
            ))
        );
        assert_eq!(
            p("summarize(a, \"1h\", func='max', alignToFrom=true)"),
            Ok(Expr::Call {
                name: "summarize".into(),
                args: vec![Expr::Path("a".into()), Expr::Str("1h".into())],
                kwargs: vec![
                    ("func".into(), Expr::Str("max".into())),
                    ("alignToFrom".into(), Expr::Bool(true))
                ],
                raw: String::new(),
            })
        );
        assert_eq!(p("10.host.cpu"), Ok(Expr::Path("10.host.cpu".into())));
        assert_eq!(
            p("scale(disk.used;host=a;dc=x, 2)"),
            Ok(call(
                "scale",
                vec![Expr::Path("disk.used;host=a;dc=x".into()), Expr::Int(2)]
            ))
        );
        assert_eq!(p(" 42 "), Ok(Expr::Int(42)));
        assert_eq!(p("1e3"), Ok(Expr::Num(1000.0)));
        assert_eq!(p("2.50"), Ok(Expr::Num(2.5)));
        assert_eq!(p("inf"), Ok(Expr::Num(f64::INFINITY)));
        assert_eq!(p(".5"), Ok(Expr::Path(".5".into())));
        // Pipes put what comes before into the call's first argument.
        assert_eq!(
            p("a.b | scale(2) |alias('x')"),
            Ok(call(
                "alias",
                vec![
                    call("scale", vec![Expr::Path("a.b".into()), Expr::Int(2)]),
                    Expr::Str("x".into())
                ]
            ))
        );
        // Escaped symbols are part of a path.
        assert_eq!(p("a\\(b\\).c"), Ok(Expr::Path("a(b).c".into())));
        // A call keeps its text as written.
        match parse("f(seriesByTag( 'a=b' ), 2)").unwrap() {
            Expr::Call { args, .. } => match &args[0] {
                Expr::Call { raw, .. } => assert_eq!(raw, "seriesByTag( 'a=b' )"),
                e => panic!("{e:?}"),
            },
            e => panic!("{e:?}"),
        }
        for bad in [
            "",
            "f(a",
            "f(a,",
            "'x",
            "a b",
            "f(x=1, y)",
            "f-g(x)",
            "f(a))",
            "a | b",
        ] {
            assert!(parse(bad).is_err(), "{bad}");
        }
        let deep = "f(".repeat(100) + &")".repeat(100);
        assert!(parse(&deep).is_err());
    }
}
