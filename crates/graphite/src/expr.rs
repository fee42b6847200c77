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
        /// Its first argument came through a pipe (`a|f()`).
        piped: bool,
    },
    /// graphite-web's `template(inner, 'a', 2)` or `template(inner, key='a', n=2)`: `inner`
    /// (a call or a path) with `$key` (or `$1`, `$2` for positional values) replaced in its
    /// paths. `values` in graphite-web's order: by name, or `1`, `2`... in turn; each an
    /// `Int`, `Num` or `Str`.
    Template {
        inner: Box<Expr>,
        values: Vec<(String, Expr)>,
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
        fatal: None,
    };
    p.ws();
    if matches!(p.peek(), Some(b'\'' | b'"')) {
        return Err(format!("a target cannot be a string: {s}"));
    }
    // As graphite-web's grammar (pyparsing's parseString): the longest expression that
    // reads from the start; what follows it is left out.
    p.piped()
}

struct Parser<'a> {
    s: &'a [u8],
    at: usize,
    depth: usize,
    /// An error no reading around can mend (nesting past [`MAX_DEPTH`]).
    fatal: Option<String>,
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
            match self.expr() {
                Ok(Expr::Call {
                    name,
                    mut args,
                    kwargs,
                    raw,
                    ..
                }) => {
                    args.insert(0, e);
                    e = Expr::Call {
                        name,
                        args,
                        kwargs,
                        raw,
                        piped: true,
                    };
                }
                Err(f) if self.fatal.is_some() => return Err(f),
                // Not a call after the pipe: the expression ends before it.
                _ => {
                    self.at = save;
                    return Ok(e);
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
                    let name_ok = is_name(&tok);
                    if tok == "template" {
                        let open = self.at;
                        self.at += 1;
                        match self.template() {
                            Ok(e) => return Ok(e),
                            Err(f) if self.fatal.is_some() => return Err(f),
                            // graphite-web's grammar then reads it as a call, which its
                            // evaluation refuses.
                            Err(_) => self.at = open,
                        }
                    }
                    if name_ok {
                        self.at += 1;
                        self.depth += 1;
                        if self.depth > MAX_DEPTH {
                            self.fatal = Some("functions nested too deep".into());
                        }
                        let args = if let Some(f) = &self.fatal {
                            Err(f.clone())
                        } else {
                            self.args()
                        };
                        self.depth -= 1;
                        match args {
                            Ok((args, kwargs)) => {
                                return Ok(Expr::Call {
                                    name: tok,
                                    args,
                                    kwargs,
                                    raw: self.text(start, self.at),
                                    piped: false,
                                })
                            }
                            Err(e) => {
                                if self.fatal.is_some() {
                                    return Err(e);
                                }
                                // As graphite-web's grammar: a call that does not parse
                                // is read as the path before its parenthesis.
                            }
                        }
                    }
                }
                self.at = raw_end;
                let e = atom(tok);
                match e {
                    Expr::Path(p) => self.path(p, start),
                    e => Ok(e),
                }
            }
        }
    }

    /// The rest of `template(` as graphite-web's grammar reads it: a call or a path (no
    /// pipes), then literals (numbers, strings) all positional or all named, then `)`.
    fn template(&mut self) -> Result<Expr, String> {
        let inner = match self.expr()? {
            e @ (Expr::Call { .. } | Expr::Path(_)) => e,
            _ => return Err("template() takes a call or a path first".into()),
        };
        let literal = |e: &Expr| matches!(e, Expr::Int(_) | Expr::Num(_) | Expr::Str(_));
        let mut values = Vec::new();
        let mut named = None;
        loop {
            self.ws();
            match self.peek() {
                Some(b')') => {
                    self.at += 1;
                    return Ok(Expr::Template {
                        inner: Box::new(inner),
                        values,
                    });
                }
                Some(b',') => self.at += 1,
                _ => return Err("template(): expected ',' or ')'".into()),
            }
            let e = self.expr()?;
            self.ws();
            let kw = self.peek() == Some(b'=');
            if *named.get_or_insert(kw) != kw {
                return Err("template() takes values all positional or all named".into());
            }
            if kw {
                let Expr::Path(key) = e else {
                    return Err("template(): a value's name".into());
                };
                if !is_name(&key) {
                    return Err("template(): a value's name".into());
                }
                self.at += 1;
                let v = self.expr()?;
                if !literal(&v) {
                    return Err("template() takes numbers and strings".into());
                }
                values.push((key, v));
            } else {
                if !literal(&e) {
                    return Err("template() takes numbers and strings".into());
                }
                values.push(((values.len() + 1).to_string(), e));
            }
        }
    }

    /// A path as graphite-web's grammar reads it: nodes joined by dots, none empty. One
    /// that starts with a dot does not read; one with an empty node later reads up to it
    /// (the rest is left for what follows to refuse or leave out).
    fn path(&mut self, p: String, start: usize) -> Result<Expr, String> {
        let mut depth = 0usize;
        let mut prev_dot = true;
        for (i, c) in p.bytes().enumerate() {
            match c {
                b'{' => depth += 1,
                b'}' => depth = depth.saturating_sub(1),
                b'.' if depth == 0 => {
                    if prev_dot {
                        if i == 0 {
                            return Err(format!("'{p}' is not a path (it starts with a dot)"));
                        }
                        return self.cut(p, start, i - 1);
                    }
                    prev_dot = true;
                    continue;
                }
                _ => {}
            }
            prev_dot = false;
        }
        if prev_dot && !p.is_empty() {
            let len = p.len() - 1;
            return self.cut(p, start, len);
        }
        Ok(Expr::Path(p))
    }

    /// Path `p` cut to its first `len` bytes (an empty node after them), the reading
    /// moved back to match.
    fn cut(&mut self, p: String, start: usize, len: usize) -> Result<Expr, String> {
        if self.s.get(start..start + p.len()) != Some(p.as_bytes()) {
            return Err(format!("'{p}' is not a path (an empty node)"));
        }
        self.at = start + len;
        Ok(Expr::Path(p[..len].to_string()))
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
                // graphite-web's grammar reads keyword arguments only after a positional one.
                if args.is_empty() {
                    return Err("keyword arguments without a positional one before them".into());
                }
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

/// Whether `s` is a name in graphite-web's grammar (a function's or a keyword's):
/// `[A-Za-z_][A-Za-z0-9_]*`.
fn is_name(s: &str) -> bool {
    let b = s.as_bytes();
    b.first()
        .is_some_and(|c| c.is_ascii_alphabetic() || *c == b'_')
        && b.iter().all(|c| c.is_ascii_alphanumeric() || *c == b'_')
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
                piped: false,
            },
            Expr::Template { inner, values } => Expr::Template {
                inner: Box::new(strip(*inner)),
                values,
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
            piped: false,
        }
    }

    #[test]
    fn templates_parse_as_graphite_reads_them() {
        let t = |inner: Expr, values: Vec<(&str, Expr)>| Expr::Template {
            inner: Box::new(inner),
            values: values.into_iter().map(|(k, v)| (k.into(), v)).collect(),
        };
        assert_eq!(
            p("template(a.$x.c, x='b')"),
            Ok(t(
                Expr::Path("a.$x.c".into()),
                vec![("x", Expr::Str("b".into()))]
            ))
        );
        assert_eq!(
            p("template(sumSeries(a.$1), 'b', 2, 1.5)"),
            Ok(t(
                call("sumSeries", vec![Expr::Path("a.$1".into())]),
                vec![
                    ("1", Expr::Str("b".into())),
                    ("2", Expr::Int(2)),
                    ("3", Expr::Num(1.5))
                ]
            ))
        );
        assert_eq!(
            p("template(a.$x)"),
            Ok(t(Expr::Path("a.$x".into()), vec![]))
        );
        // Mixed, or other literals, or a pipe inside: a call named template (which
        // evaluation refuses), as graphite-web's grammar falls back to.
        for s in [
            "template(a.$x, 'b', y=2)",
            "template(a.$x, x=true)",
            "template(a.$x|scale(2), x='b')",
        ] {
            assert!(
                matches!(p(s), Ok(Expr::Call { ref name, .. }) if name == "template"),
                "{s}: {:?}",
                p(s)
            );
        }
        // A pipe after the template applies to it.
        assert!(matches!(
            p("template(a.$x, x='b')|scale(2)"),
            Ok(Expr::Call { ref name, ref args, .. })
                if name == "scale" && matches!(args[0], Expr::Template { .. })
        ));
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
                piped: false,
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
        assert!(parse(".5").is_err());
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
        // What does not read is left out, as graphite-web's grammar leaves it: a call
        // that does not parse is the path before its parenthesis.
        for (lenient, read) in [
            ("f(a", "f"),
            ("f(a,", "f"),
            ("a b", "a"),
            ("f(x=1, y)", "f"),
            ("f-g(x)", "f-g"),
            ("sum(f(a).b)", "sum"),
        ] {
            assert_eq!(p(lenient), Ok(Expr::Path(read.into())), "{lenient}");
        }
        assert_eq!(p("f(a))"), Ok(call("f", vec![Expr::Path("a".into())])));
        assert_eq!(p("a | b"), Ok(Expr::Path("a".into())));
        // Keyword arguments only after a positional one.
        assert_eq!(p("a|f(k=1)"), Ok(Expr::Path("a".into())));
        assert_eq!(p("f(k=1)"), Ok(Expr::Path("f".into())));
        assert_eq!(p("a..b"), Ok(Expr::Path("a".into())));
        assert_eq!(p("a.b."), Ok(Expr::Path("a.b".into())));
        assert_eq!(p("x.{a,b}.c"), Ok(Expr::Path("x.{a,b}.c".into())));
        assert!(parse(".a.b").is_err());
        for bad in ["", "'x", " \"y\""] {
            assert!(parse(bad).is_err(), "{bad}");
        }
        let deep = "f(".repeat(100) + &")".repeat(100);
        assert!(parse(&deep).is_err());
    }
}
