//! What graphite-web knows of each function besides its body: its parameter table (checked
//! before the call, listed by `/functions`) and its Python signature (how positional and
//! keyword arguments bind, and their defaults). Both come from graphite-web 1.1.8's own
//! table ([`super::table`]); the checks and the binding are graphite-web's and Python's rules.

use super::table::TABLE;
use super::Value;
use crate::format::{json_str, py_float};
use crate::series::AGG_NAMES;

/// A Python literal of the table: a default, an option, a suggestion.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Lit {
    Str(&'static str),
    Int(i64),
    Float(f64),
    Bool(bool),
    None,
    Inf,
}

impl Lit {
    fn json(self, out: &mut String) {
        match self {
            Lit::Str(s) => json_str(s, out),
            Lit::Int(i) => out.push_str(&i.to_string()),
            Lit::Float(f) => out.push_str(&py_float(f)),
            Lit::Bool(b) => out.push_str(if b { "true" } else { "false" }),
            Lit::None => out.push_str("null"),
            Lit::Inf => out.push_str("Infinity"),
        }
    }
}

/// A parameter of graphite-web's table.
#[derive(Debug)]
pub struct P {
    pub name: &'static str,
    pub ty: &'static str,
    pub required: bool,
    pub default: Option<Lit>,
    pub multiple: bool,
    pub options: &'static [Lit],
    pub suggestions: &'static [Lit],
}

/// A function of graphite-web's table: its name, group, Python signature as `/functions`
/// writes it (`summarize(seriesList, intervalString, func='sum', alignToFrom=False)`), and
/// parameters.
#[derive(Debug)]
pub struct Def {
    pub name: &'static str,
    pub group: &'static str,
    pub function: &'static str,
    pub params: &'static [P],
}

/// The function named `name`.
pub fn lookup(name: &str) -> Option<&'static Def> {
    TABLE
        .binary_search_by(|d| d.name.cmp(name))
        .ok()
        .map(|i| &TABLE[i])
}

/// Every function, by name.
pub fn all() -> &'static [Def] {
    TABLE
}

/// Python `==` between a value and a literal (`1 == True == 1.0`).
fn py_eq(v: &Value, l: &Lit) -> bool {
    match (v, l) {
        (Value::Str(a), Lit::Str(b)) => a == b,
        (Value::None, Lit::None) => true,
        (Value::Str(_) | Value::None | Value::List(_) | Value::Lists(_), _) => false,
        (_, Lit::Str(_) | Lit::None) => false,
        (v, l) => {
            let x = v.number();
            let y = match l {
                Lit::Int(i) => Some(*i as f64),
                Lit::Float(f) => Some(*f),
                Lit::Bool(b) => Some(f64::from(u8::from(*b))),
                Lit::Inf => Some(f64::INFINITY),
                _ => None,
            };
            x.is_some() && x == y
        }
    }
}

/// Python's `float()` of a string (`' 1.5 '`, `'1e3'`, `'inf'`, `'nan'`).
fn py_float_of(s: &str) -> Option<f64> {
    let t = s.trim().replace('_', "");
    match t.to_ascii_lowercase().trim_start_matches(['+', '-']) {
        "inf" | "infinity" | "nan" => {
            let v = if t.to_ascii_lowercase().contains("nan") {
                f64::NAN
            } else {
                f64::INFINITY
            };
            return Some(if t.starts_with('-') { -v } else { v });
        }
        _ => {}
    }
    if t.is_empty()
        || !t
            .bytes()
            .all(|b| b.is_ascii_digit() || matches!(b, b'.' | b'e' | b'E' | b'+' | b'-'))
    {
        return None;
    }
    t.parse().ok()
}

/// A parameter's check of one value: Err where graphite-web's raises; Ok(Some(v)) where it
/// gives another value.
fn check(p: &P, v: &Value) -> Result<Option<Value>, ()> {
    if matches!(v, Value::None) && (p.default.is_some() || !p.required) {
        return Ok(None);
    }
    if !p.options.is_empty() && !p.options.iter().any(|o| py_eq(v, o)) {
        return Err(());
    }
    let int = |v: &Value| -> Result<Option<Value>, ()> {
        match v {
            Value::Int(_) => Ok(None),
            Value::Bool(b) => Ok(Some(Value::Int(i64::from(*b)))),
            Value::Str(s) => {
                let t = s.trim().replace('_', "");
                t.parse::<i64>()
                    .map(|i| Some(Value::Int(i)))
                    .map_err(|_| ())
            }
            _ => Err(()),
        }
    };
    let float = |v: &Value| -> Result<Option<Value>, ()> {
        match v {
            Value::Float(_) => Ok(None),
            Value::Int(i) => Ok(Some(Value::Float(*i as f64))),
            Value::Bool(b) => Ok(Some(Value::Float(f64::from(u8::from(*b))))),
            Value::Str(s) => py_float_of(s).map(|f| Some(Value::Float(f))).ok_or(()),
            _ => Err(()),
        }
    };
    match p.ty {
        "boolean" => match v {
            Value::Str(s) if s.eq_ignore_ascii_case("true") => Ok(Some(Value::Bool(true))),
            Value::Str(s) if s.eq_ignore_ascii_case("false") => Ok(Some(Value::Bool(false))),
            Value::Str(_) => Err(()),
            Value::Int(_) | Value::Float(_) => match v.number() {
                Some(0.0) => Ok(Some(Value::Bool(false))),
                Some(1.0) => Ok(Some(Value::Bool(true))),
                _ => Err(()),
            },
            Value::Bool(_) => Ok(None),
            v => Ok(Some(Value::Bool(v.truthy()))),
        },
        "float" => float(v),
        "integer" | "node" => int(v),
        "intOrInf" => int(v).or_else(|_| match float(v) {
            Ok(Some(Value::Float(f))) if f == f64::INFINITY => Ok(Some(Value::Float(f))),
            Ok(None) if v.number() == Some(f64::INFINITY) => Ok(None),
            _ => Err(()),
        }),
        "interval" => match v {
            Value::Str(s) if crate::time::offset(s).is_some() => Ok(None),
            _ => Err(()),
        },
        "seriesList" => match v {
            Value::List(_) => Ok(None),
            _ => Err(()),
        },
        "seriesLists" => match v {
            Value::Lists(_) => Ok(None),
            Value::List(l) if l.is_empty() => Ok(None),
            _ => Err(()),
        },
        "aggFunc" => match v {
            Value::Str(s)
                if AGG_NAMES.contains(&s.as_str())
                    || s.strip_suffix("Series")
                        .is_some_and(|f| AGG_NAMES.contains(&f)) =>
            {
                Ok(None)
            }
            _ => Err(()),
        },
        "aggOrSeriesFunc" => match v {
            Value::Str(s)
                if AGG_NAMES.contains(&s.as_str())
                    || s.strip_suffix("Series")
                        .is_some_and(|f| AGG_NAMES.contains(&f)) =>
            {
                Ok(None)
            }
            Value::Str(s) if p.options.iter().any(|o| matches!(o, Lit::Str(x) if x == s)) => {
                Ok(None)
            }
            _ => Ok(Some(Value::Bool(false))),
        },
        _ => Ok(None),
    }
}

/// graphite-web's validateParams: where every argument passes its parameter's check, the
/// checked values replace the given ones; where one fails, nothing changes (graphite-web
/// logs it and calls the function with what it was given).
pub fn validate(def: &Def, args: &mut [Value], kwargs: &mut [(String, Value)]) {
    let params = def.params;
    if params.is_empty() {
        return;
    }
    let mut changes: Vec<(bool, usize, Value)> = Vec::new();
    let (args_params, kwargs_params): (&[P], &[P]) = if args.len() + kwargs.len() > params.len() {
        if !params[params.len() - 1].multiple {
            return;
        }
        (params, &[])
    } else {
        (&params[..args.len()], &params[args.len()..])
    };
    for (i, v) in args.iter().enumerate() {
        let p = &args_params[i.min(args_params.len() - 1)];
        match check(p, v) {
            Ok(Some(n)) => changes.push((true, i, n)),
            Ok(None) => {}
            Err(()) => return,
        }
    }
    let mut used = 0;
    for p in kwargs_params {
        let found = kwargs.iter().position(|(k, _)| k == p.name);
        let v = found.map(|i| &kwargs[i].1);
        match v {
            None | Some(Value::None) => {
                if p.required {
                    return;
                }
                continue;
            }
            Some(v) => {
                used += 1;
                match check(p, v) {
                    Ok(Some(n)) => changes.push((false, found.unwrap_or(0), n)),
                    Ok(None) => {}
                    Err(()) => return,
                }
            }
        }
    }
    // Keyword arguments no parameter took.
    let distinct: std::collections::HashSet<&str> =
        kwargs.iter().map(|(k, _)| k.as_str()).collect();
    if distinct.len() > used {
        return;
    }
    for (positional, i, v) in changes {
        if positional {
            args[i] = v;
        } else {
            kwargs[i].1 = v;
        }
    }
}

/// A default of a signature (a Python literal).
#[derive(Debug, Clone)]
enum Default {
    Str(String),
    Int(i64),
    Float(f64),
    Bool(bool),
    None,
}

impl Default {
    fn value(&self) -> Value {
        match self {
            Default::Str(s) => Value::Str(s.clone()),
            Default::Int(i) => Value::Int(*i),
            Default::Float(f) => Value::Float(*f),
            Default::Bool(b) => Value::Bool(*b),
            Default::None => Value::None,
        }
    }
}

/// A Python signature: its parameters with their defaults, and the name of `*rest`.
struct Sig {
    params: Vec<(String, Option<Default>)>,
    rest: Option<String>,
}

/// The signature in `/functions`' `function` text.
fn sig(def: &Def) -> Sig {
    let inner = def
        .function
        .split_once('(')
        .and_then(|(_, r)| r.strip_suffix(')'))
        .unwrap_or("");
    let mut params = Vec::new();
    let mut rest = None;
    for part in split_top(inner) {
        let part = part.trim();
        if part.is_empty() {
            continue;
        }
        if let Some(r) = part.strip_prefix('*') {
            rest = Some(r.trim_start_matches('*').to_string());
            continue;
        }
        match part.split_once('=') {
            Some((n, d)) => params.push((n.to_string(), Some(py_literal(d)))),
            None => params.push((part.to_string(), None)),
        }
    }
    Sig { params, rest }
}

/// `a, b='x,y', c=3` split at its top-level commas.
fn split_top(s: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut quote = None;
    let mut start = 0;
    for (i, c) in s.char_indices() {
        match (quote, c) {
            (None, '\'' | '"') => quote = Some(c),
            (Some(q), c) if c == q => quote = None,
            (None, ',') => {
                out.push(&s[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    out.push(&s[start..]);
    out
}

/// A Python literal as `repr` writes it.
fn py_literal(s: &str) -> Default {
    let s = s.trim();
    match s {
        "None" => return Default::None,
        "True" => return Default::Bool(true),
        "False" => return Default::Bool(false),
        "inf" => return Default::Float(f64::INFINITY),
        _ => {}
    }
    if let Some(q) = s
        .strip_prefix('\'')
        .and_then(|r| r.strip_suffix('\''))
        .or_else(|| s.strip_prefix('"').and_then(|r| r.strip_suffix('"')))
    {
        return Default::Str(q.to_string());
    }
    if let Ok(i) = s.parse::<i64>() {
        return Default::Int(i);
    }
    s.parse().map(Default::Float).unwrap_or(Default::None)
}

/// Arguments bound to a signature.
#[derive(Debug)]
pub struct Bound {
    names: Vec<String>,
    vals: Vec<Value>,
    pub rest: Vec<Value>,
    none: Value,
}

impl Bound {
    pub fn get(&self, p: &str) -> &Value {
        self.names
            .iter()
            .position(|n| n == p)
            .map_or(&self.none, |i| &self.vals[i])
    }

    pub fn take(&mut self, p: &str) -> Value {
        match self.names.iter().position(|n| n == p) {
            Some(i) => std::mem::replace(&mut self.vals[i], Value::None),
            None => Value::None,
        }
    }
}

/// Bind values to `def`'s Python signature as a Python call does (a TypeError where
/// Python raises one).
pub fn bind(def: &Def, args: Vec<Value>, kwargs: Vec<(String, Value)>) -> Result<Bound, String> {
    static SIGS: std::sync::OnceLock<Vec<Sig>> = std::sync::OnceLock::new();
    let sigs = SIGS.get_or_init(|| TABLE.iter().map(sig).collect());
    let i = TABLE
        .binary_search_by(|d| d.name.cmp(def.name))
        .map_err(|_| format!("unknown function '{}'", def.name))?;
    let sig = &sigs[i];
    let n = sig.params.len();
    if args.len() > n && sig.rest.is_none() {
        return Err(format!(
            "{}() takes {} positional arguments but {} were given",
            def.name,
            n,
            args.len()
        ));
    }
    let mut vals: Vec<Option<Value>> = vec![None; n];
    let mut rest = Vec::new();
    for (i, v) in args.into_iter().enumerate() {
        if i < n {
            vals[i] = Some(v);
        } else {
            rest.push(v);
        }
    }
    for (k, v) in kwargs {
        match sig.params.iter().position(|(p, _)| *p == k) {
            Some(i) if vals[i].is_some() => {
                return Err(format!(
                    "{}() got multiple values for argument '{k}'",
                    def.name
                ))
            }
            Some(i) => vals[i] = Some(v),
            None => {
                return Err(format!(
                    "{}() got an unexpected keyword argument '{k}'",
                    def.name
                ))
            }
        }
    }
    let mut out = Vec::with_capacity(n);
    for (i, v) in vals.into_iter().enumerate() {
        match v.or_else(|| sig.params[i].1.as_ref().map(Default::value)) {
            Some(v) => out.push(v),
            None => {
                return Err(format!(
                    "{}() missing a required argument: '{}'",
                    def.name, sig.params[i].0
                ))
            }
        }
    }
    Ok(Bound {
        names: sig.params.iter().map(|(p, _)| p.clone()).collect(),
        vals: out,
        rest,
        none: Value::None,
    })
}

/// `/functions` as graphite-web writes it (`grouped`: by group; `group`: that group only):
/// each function's name, Python signature, description, module, group and parameters.
pub fn functions_json(grouped: bool, group: Option<&str>) -> String {
    let mut groups: Vec<(&str, Vec<String>)> = Vec::new();
    let mut flat = Vec::new();
    for d in all() {
        if group.is_some_and(|g| g != d.group) {
            continue;
        }
        let mut out = String::new();
        json_str(d.name, &mut out);
        out.push_str(": {\"name\": ");
        json_str(d.name, &mut out);
        out.push_str(", \"function\": ");
        json_str(d.function, &mut out);
        out.push_str(", \"description\": ");
        json_str(super::describe(d.name), &mut out);
        out.push_str(", \"module\": \"graphite.render.functions\", \"group\": ");
        json_str(d.group, &mut out);
        out.push_str(", \"params\": [");
        for (i, p) in d.params.iter().enumerate() {
            if i > 0 {
                out.push_str(", ");
            }
            out.push_str("{\"name\": ");
            json_str(p.name, &mut out);
            out.push_str(", \"type\": ");
            json_str(p.ty, &mut out);
            if p.required {
                out.push_str(", \"required\": true");
            }
            if let Some(l) = p.default.filter(|l| *l != Lit::None) {
                out.push_str(", \"default\": ");
                l.json(&mut out);
            }
            if p.multiple {
                out.push_str(", \"multiple\": true");
            }
            for (key, list) in [("options", p.options), ("suggestions", p.suggestions)] {
                if list.is_empty() {
                    continue;
                }
                out.push_str(", \"");
                out.push_str(key);
                out.push_str("\": [");
                for (j, l) in list.iter().enumerate() {
                    if j > 0 {
                        out.push_str(", ");
                    }
                    l.json(&mut out);
                }
                out.push(']');
            }
            out.push('}');
        }
        out.push_str("]}");
        if grouped {
            match groups.iter_mut().find(|(g, _)| *g == d.group) {
                Some((_, v)) => v.push(out),
                None => groups.push((d.group, vec![out])),
            }
        } else {
            flat.push(out);
        }
    }
    // As graphite-web's encoder writes an infinite default before a comma.
    let fix = |s: String| s.replace("Infinity,", "1e9999,");
    if grouped {
        let parts: Vec<String> = groups
            .into_iter()
            .map(|(g, v)| {
                let mut k = String::new();
                json_str(g, &mut k);
                format!("{k}: {{{}}}", v.join(", "))
            })
            .collect();
        fix(format!("{{{}}}", parts.join(", ")))
    } else {
        fix(format!("{{{}}}", flat.join(", ")))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_table_binds_as_python_does() {
        let d = lookup("summarize").unwrap();
        let b = bind(
            d,
            vec![Value::List(vec![]), Value::Str("1h".into())],
            vec![("alignToFrom".into(), Value::Bool(true))],
        )
        .unwrap();
        assert_eq!(b.get("func"), &Value::Str("sum".into()));
        assert_eq!(b.get("alignToFrom"), &Value::Bool(true));
        assert!(bind(d, vec![Value::List(vec![])], vec![]).is_err());
        assert!(bind(
            d,
            vec![Value::List(vec![]), Value::Str("1h".into())],
            vec![("intervalString".into(), Value::Str("1h".into()))]
        )
        .is_err());
        let d = lookup("keepLastValue").unwrap();
        let b = bind(d, vec![Value::List(vec![])], vec![]).unwrap();
        assert_eq!(b.get("limit"), &Value::Float(f64::INFINITY));
        let d = lookup("aliasByNode").unwrap();
        let b = bind(
            d,
            vec![Value::List(vec![]), Value::Int(1), Value::Int(2)],
            vec![],
        )
        .unwrap();
        assert_eq!(b.rest, vec![Value::Int(1), Value::Int(2)]);
        assert_eq!(all().len(), 151);
    }

    #[test]
    fn checks_convert_only_when_all_pass() {
        let d = lookup("removeAboveValue").unwrap();
        let mut a = vec![Value::List(vec![]), Value::Int(5)];
        validate(d, &mut a, &mut []);
        assert_eq!(a[1], Value::Float(5.0));
        let d = lookup("summarize").unwrap();
        let mut a = vec![
            Value::List(vec![]),
            Value::Str("1h".into()),
            Value::Str("bogus".into()),
        ];
        validate(d, &mut a, &mut []);
        assert_eq!(a[2], Value::Str("bogus".into()));
        let mut a = vec![Value::List(vec![]), Value::Str("1h".into())];
        let mut k = vec![("alignToFrom".to_string(), Value::Str("true".into()))];
        validate(d, &mut a, &mut k);
        assert_eq!(k[0].1, Value::Bool(true));
    }
}
