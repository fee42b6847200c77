//! `/render`: targets evaluated over the store, and the formats graphite-web writes them in.

use super::expr::{self, Expr};
use super::glob::Pattern;
use super::{functions, Graphite, Leaf};
use crate::daemon::Daemon;
use std::fmt::Write as _;

/// A series as graphite-web's functions see it: points at `start`, `start + step`, ...
/// (before `end`), each a value or None.
#[derive(Debug, Clone, PartialEq)]
pub struct Series {
    pub name: String,
    pub path_expression: String,
    pub start: i64,
    pub end: i64,
    pub step: i64,
    pub values: Vec<Option<f64>>,
    /// How [`Series::consolidate`] combines points: average, sum, min, max, first, last.
    pub consolidation: String,
    pub xff: f64,
}

impl Series {
    pub fn new(name: String, start: i64, end: i64, step: i64, values: Vec<Option<f64>>) -> Series {
        Series {
            path_expression: name.clone(),
            name,
            start,
            end,
            step,
            values,
            consolidation: "average".into(),
            xff: 0.0,
        }
    }

    /// The same series, renamed, with other values.
    pub fn with(&self, name: String, values: Vec<Option<f64>>) -> Series {
        Series {
            name,
            values,
            ..self.clone()
        }
    }

    /// Combine every `n` points into one with the series' consolidation function (a point
    /// is None unless a fraction >= xff of its points are known; a last short group counts
    /// as a whole one), as graphite-web's consolidating iterator does.
    pub fn consolidate(&mut self, n: usize) {
        if n <= 1 {
            return;
        }
        let f = self.consolidation.clone();
        let xff = self.xff;
        self.values = self
            .values
            .chunks(n)
            .map(|c| {
                let known: Vec<f64> = c.iter().flatten().copied().collect();
                if known.is_empty() || (known.len() as f64 / n as f64) < xff {
                    return None;
                }
                agg(&f, &known, c)
            })
            .collect();
        self.step *= n as i64;
    }
}

/// A consolidation (or aggregation) function over the known values `v` of a group `all`.
pub fn agg(f: &str, v: &[f64], all: &[Option<f64>]) -> Option<f64> {
    if v.is_empty() {
        return None;
    }
    Some(match f {
        "sum" | "total" => v.iter().sum(),
        "average" | "avg" => v.iter().sum::<f64>() / v.len() as f64,
        "avg_zero" => v.iter().sum::<f64>() / all.len() as f64,
        "max" => v.iter().copied().fold(f64::MIN, f64::max),
        "min" => v.iter().copied().fold(f64::MAX, f64::min),
        "first" => v[0],
        "last" | "current" => v[v.len() - 1],
        "count" => v.len() as f64,
        "multiply" => v.iter().product(),
        "diff" => v[0] - v[1..].iter().sum::<f64>(),
        "range" | "rangeOf" => {
            v.iter().copied().fold(f64::MIN, f64::max) - v.iter().copied().fold(f64::MAX, f64::min)
        }
        "median" => {
            let mut s = v.to_vec();
            s.sort_by(f64::total_cmp);
            let m = s.len() / 2;
            if s.len() % 2 == 1 {
                s[m]
            } else {
                (s[m - 1] + s[m]) / 2.0
            }
        }
        "stddev" => {
            let mean = v.iter().sum::<f64>() / v.len() as f64;
            (v.iter().map(|x| (x - mean) * (x - mean)).sum::<f64>() / v.len() as f64).sqrt()
        }
        _ => return None,
    })
}

/// Whether `f` names an aggregation [`agg`] knows.
pub fn is_agg(f: &str) -> bool {
    matches!(
        f,
        "sum"
            | "total"
            | "average"
            | "avg"
            | "avg_zero"
            | "max"
            | "min"
            | "first"
            | "last"
            | "current"
            | "count"
            | "multiply"
            | "diff"
            | "range"
            | "rangeOf"
            | "median"
            | "stddev"
    )
}

/// What a target is evaluated against.
pub struct Ctx<'a> {
    pub d: &'a Daemon,
    pub g: &'a Graphite,
    pub from: i64,
    pub until: i64,
    pub now: i64,
    /// What the whole request may still read and make.
    pub budget: &'a Budget,
}

/// Points a request may read from the store and make in its functions, all its targets
/// together (16 bytes each as a series holds them: 160 MB). The review found 8 targets of
/// 10 million rows, `summarize(x, '1s')` over five years and a range whose row count
/// overflowed taking 1.5 GB each.
pub const MAX_POINTS: u64 = 10_000_000;

/// Steps of work a request's functions may take over the points (a moving window's points
/// each visit their window).
pub const MAX_WORK: u64 = 2_000_000_000;

/// A request's budget ([`MAX_POINTS`], [`MAX_WORK`]), spent before anything is allocated or
/// walked; counts are checked without overflow.
pub struct Budget {
    points: std::cell::Cell<u64>,
    work: std::cell::Cell<u64>,
}

impl Default for Budget {
    fn default() -> Self {
        Budget::new(MAX_POINTS, MAX_WORK)
    }
}

impl Budget {
    pub fn new(points: u64, work: u64) -> Budget {
        Budget {
            points: std::cell::Cell::new(points),
            work: std::cell::Cell::new(work),
        }
    }

    /// Spend `n` points (any integer: a negative count is none) for `what`.
    pub fn points(&self, n: i128, what: &str) -> Result<(), String> {
        let n = u64::try_from(n.max(0)).unwrap_or(u64::MAX);
        let left = self.points.get();
        if n > left {
            return Err(format!(
                "{what}: {n} points, more than the {MAX_POINTS} a request may read and make \
                 (narrow the time range, the targets, or the interval)"
            ));
        }
        self.points.set(left - n);
        Ok(())
    }

    /// Spend `n` steps of work for `what`.
    pub fn work(&self, n: u128, what: &str) -> Result<(), String> {
        let n = u64::try_from(n).unwrap_or(u64::MAX);
        let left = self.work.get();
        if n > left {
            return Err(format!(
                "{what}: more work than a request may take ({MAX_WORK} steps; a smaller window \
                 or range)"
            ));
        }
        self.work.set(left - n);
        Ok(())
    }
}

/// Series at most one target may fetch (a glob over a large tree must not take the daemon's
/// memory).
pub const MAX_SERIES: usize = 100_000;
/// Rows at most one series may give (a range of centuries at a fine archive must not take
/// the daemon's memory: 16 bytes a row).
pub const MAX_ROWS: usize = 10_000_000;

impl Ctx<'_> {
    pub fn eval(&self, e: &Expr) -> Result<Vec<Series>, String> {
        match e {
            Expr::Path(p) => self.fetch(p),
            Expr::Call { name, args, kwargs } => functions::call(self, name, args, kwargs),
            other => Err(format!("{other:?} is not a series")),
        }
    }

    /// The series of every path `pattern` matches, sorted by path.
    pub fn fetch(&self, pattern: &str) -> Result<Vec<Series>, String> {
        let leaves = self.g.leaves(self.d);
        if pattern.contains(';') {
            // A tagged series, named whole (in any order of its tags).
            let name = super::tags::parse(pattern)?.canonical();
            return Ok(match leaves.get(&name) {
                Some(leaf) => self.read(leaf, &name)?.into_iter().collect(),
                None => Vec::new(),
            });
        }
        let pat = Pattern::new(pattern)?;
        let prefix = pat.prefix();
        let mut out = Vec::new();
        for (path, leaf) in leaves.range(prefix.clone()..) {
            if !path.starts_with(&prefix) {
                break;
            }
            if !path.contains(';') && pat.matches(path) {
                if out.len() >= MAX_SERIES {
                    return Err(format!("'{pattern}' matches more than {MAX_SERIES} series"));
                }
                if let Some(mut s) = self.read(leaf, path)? {
                    s.path_expression = pattern.to_string();
                    out.push(s);
                }
            }
        }
        Ok(out)
    }

    /// One path's points for `from`..`until`, as whisper returns them: the slots from the
    /// one after `from`'s up to `until`'s, each labelled by its start.
    fn read(&self, leaf: &Leaf, path: &str) -> Result<Option<Series>, String> {
        // A copy (its archives as packed, a byte or two a value) is taken under the store
        // lock, and the points read from it after the lock is let go.
        let rrd = {
            let mut inner = self.d.lock();
            self.d.apply_series(&mut inner, &leaf.series);
            match inner.store.get(&leaf.series) {
                Some(r) => r.clone(),
                None => return Ok(None),
            }
        };
        let rrd = &rrd;
        let Some(first) = rrd.schema.rra.first() else {
            return Ok(None);
        };
        let cf = if rrd.schema.rra.iter().any(|r| r.cf == rrd::Cf::Average) {
            rrd::Cf::Average
        } else {
            first.cf
        };
        let Some(rra) = rrd::fetch::choose_rra(rrd, cf, self.from, self.until, 0) else {
            return Ok(None);
        };
        let span = (rrd.schema.step.saturating_mul(rrd.schema.rra[rra].pdp_cnt)).max(1);
        let span = i64::try_from(span).unwrap_or(i64::MAX);
        // In i128: the slots of a range near i64's ends overflow i64 (the review's
        // `from=-158548959918y&until=5000000000000000000` made a row count that passed).
        let slot_end = |t: i64| i128::from(t) - i128::from(t.rem_euclid(span)) + i128::from(span);
        let (from, until) = (slot_end(self.from), slot_end(self.until));
        let rows = (until - from).max(0) / i128::from(span);
        if rows > MAX_ROWS as i128 {
            return Err(format!(
                "{path}: {from}..{until} is more than {MAX_ROWS} rows of {span} s"
            ));
        }
        self.budget.points(rows, path)?;
        let (Ok(from), Ok(until)) = (i64::try_from(from), i64::try_from(until)) else {
            return Err(format!("{path}: {from}..{until} is not a time range"));
        };
        let mut values = Vec::with_capacity(rows as usize);
        // Each chunk of rows decoded once for the walk.
        let mut reader = rrd.rra[rra].rows.reader();
        let mut t = from;
        while t < until {
            let Some(end) = t.checked_add(span) else {
                break;
            };
            // rrdtool labels a row by its end.
            let v = match rrd.ring_row(rra, end) {
                Some(row) => reader.row(row)[leaf.ds],
                None => f64::NAN,
            };
            values.push((!v.is_nan()).then_some(v));
            t += span;
        }
        Ok(Some(Series::new(
            path.to_string(),
            from,
            until,
            span,
            values,
        )))
    }
}

/// Evaluate `targets` from `from` to `until`.
pub fn evaluate(ctx: &Ctx<'_>, targets: &[String]) -> Result<Vec<Series>, String> {
    if ctx.until <= ctx.from {
        return Err(format!(
            "until ({}) must be after from ({})",
            ctx.until, ctx.from
        ));
    }
    let mut out = Vec::new();
    for t in targets {
        let e = expr::parse(t).map_err(|e| format!("target '{t}': {e}"))?;
        out.extend(ctx.eval(&e).map_err(|e| format!("target '{t}': {e}"))?);
    }
    Ok(out)
}

/// `maxDataPoints`, as graphite-web applies it to its JSON: each series consolidated so
/// that the whole range fits, its start nudged so that the bands stay put between calls.
pub fn fit(series: &mut [Series], max_points: usize) {
    if series.is_empty() || max_points == 0 {
        return;
    }
    let start = series.iter().map(|s| s.start).min().unwrap_or(0);
    let end = series.iter().map(|s| s.end).max().unwrap_or(0);
    let range = end - start;
    for s in series {
        if max_points == 1 {
            let n = s.values.len();
            s.consolidate(n);
            continue;
        }
        let points = range as f64 / s.step as f64;
        if (max_points as f64) < points {
            let per = (points / max_points as f64).ceil() as i64;
            let secs = per * s.step;
            let nudge = secs + s.start.rem_euclid(s.step) - s.start.rem_euclid(secs);
            s.start += nudge;
            let lose = (nudge / s.step) as usize;
            // graphite-web drops one fewer value than the steps it moved the start by.
            let drop = lose.saturating_sub(1).min(s.values.len());
            s.values.drain(..drop);
            s.consolidate(per as usize);
        }
    }
}

/// The points of `s`: (value, time) from its start, one step apart, as many as the values
/// and the range allow.
pub fn datapoints(s: &Series) -> Vec<(Option<f64>, i64)> {
    let n = if s.step > 0 {
        (((s.end - s.start) / s.step) + 1).max(0) as usize
    } else {
        0
    };
    s.values
        .iter()
        .take(n)
        .enumerate()
        .map(|(i, v)| (*v, s.start + i as i64 * s.step))
        .collect()
}

/// [`py_float`] appended to `out`: ryu's shortest digits (Python's repr picks the same ones,
/// where Rust's own formatting can pick another of two equally short), laid out as Python
/// does: positional from 1e-4 below 1e16 with ".0" for a whole number, else an exponent
/// with its sign and two digits at least.
pub fn py_float_into(out: &mut String, v: f64) {
    if !v.is_finite() || v == 0.0 {
        out.push_str(if v.is_nan() {
            "nan"
        } else if v == f64::INFINITY {
            "inf"
        } else if v == f64::NEG_INFINITY {
            "-inf"
        } else if v.is_sign_negative() {
            "-0.0"
        } else {
            "0.0"
        });
        return;
    }
    let mut b = ryu::Buffer::new();
    let r = b.format_finite(v);
    if (1e-4..1e15).contains(&v.abs()) && !r.contains('e') {
        out.push_str(r);
        return;
    }
    let (neg, r) = match r.strip_prefix('-') {
        Some(x) => (true, x),
        None => (false, r),
    };
    let (mant, e) = match r.split_once('e') {
        Some((m, e)) => (m, e.parse::<i32>().unwrap_or(0)),
        None => (r, 0),
    };
    let (int, frac) = mant.split_once('.').unwrap_or((mant, ""));
    let all = format!("{int}{frac}");
    let lead = all.bytes().take_while(|&c| c == b'0').count();
    let digits = all[lead..].trim_end_matches('0');
    let digits = if digits.is_empty() { "0" } else { digits };
    // The decimal exponent of the first significant digit.
    let exp = e + int.len() as i32 - 1 - lead as i32;
    if neg {
        out.push('-');
    }
    if (-4..16).contains(&exp) {
        if exp < 0 {
            out.push_str("0.");
            for _ in 0..(-exp - 1) {
                out.push('0');
            }
            out.push_str(digits);
        } else {
            let point = exp as usize + 1;
            if digits.len() <= point {
                out.push_str(digits);
                for _ in digits.len()..point {
                    out.push('0');
                }
                out.push_str(".0");
            } else {
                out.push_str(&digits[..point]);
                out.push('.');
                out.push_str(&digits[point..]);
            }
        }
    } else {
        out.push_str(&digits[..1]);
        if digits.len() > 1 {
            out.push('.');
            out.push_str(&digits[1..]);
        }
        let _ = write!(out, "e{}{:02}", if exp < 0 { '-' } else { '+' }, exp.abs());
    }
}

/// A float as Python's `repr` writes it (`2.0`, `0.1`, `1e-05`, `1e+16`).
pub fn py_float(v: f64) -> String {
    let mut s = String::new();
    py_float_into(&mut s, v);
    s
}

/// A float as Python's `%g` writes it (names such as `scale(a,0.5)`).
pub fn fmt_g(v: f64) -> String {
    if v.is_nan() {
        return "nan".into();
    }
    if v.is_infinite() {
        return if v > 0.0 { "inf" } else { "-inf" }.into();
    }
    if v == 0.0 {
        return "0".into();
    }
    let e = format!("{v:.5e}");
    let (mant, exp) = e.split_once('e').unwrap_or((&e, "0"));
    let exp: i32 = exp.parse().unwrap_or(0);
    let trim = |s: String| {
        if s.contains('.') {
            s.trim_end_matches('0').trim_end_matches('.').to_string()
        } else {
            s
        }
    };
    if (-4..6).contains(&exp) {
        let decimals = (5 - exp).max(0) as usize;
        trim(format!("{v:.decimals$}"))
    } else {
        format!(
            "{}e{}{:02}",
            trim(mant.to_string()),
            if exp < 0 { '-' } else { '+' },
            exp.abs()
        )
    }
}

/// `s` as a JSON string literal, appended to `out`, escaped as Python's `json.dumps` does
/// (ASCII only: `\uXXXX` beyond, surrogate pairs above the BMP). The one JSON string writer
/// of the daemon's HTTP answers.
pub fn json_str(s: &str, out: &mut String) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if (c as u32) < 0x20 || (c as u32) > 0x7e => {
                // As Python's json.dumps (ensure_ascii): \uXXXX, surrogate pairs above.
                let mut buf = [0u16; 2];
                for u in c.encode_utf16(&mut buf) {
                    let _ = write!(out, "\\u{u:04x}");
                }
            }
            c => out.push(c),
        }
    }
    out.push('"');
}

fn json_num(v: Option<f64>, out: &mut String) {
    match v {
        None => out.push_str("null"),
        Some(x) if x.is_nan() => out.push_str("null"),
        Some(x) if x.is_infinite() => out.push_str(if x > 0.0 { "1e9999" } else { "-1e9999" }),
        Some(x) => py_float_into(out, x),
    }
}

/// [`json_str`] as a `String`.
pub fn json_string(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    json_str(s, &mut out);
    out
}

/// graphite-web's JSON: `[{"target": ..., "tags": {"name": ...}, "datapoints": [[v, t]]}]`.
pub fn json(series: &[Series], no_null_points: bool) -> String {
    let points: usize = series.iter().map(|s| s.values.len()).sum();
    let mut out = String::with_capacity(points * 24 + 128 * series.len() + 2);
    out.push('[');
    let mut first = true;
    for s in series {
        let mut points = datapoints(s);
        if no_null_points {
            points.retain(|p| p.0.is_some_and(|v| !v.is_nan()));
            if points.is_empty() {
                continue;
            }
        }
        if !first {
            out.push_str(", ");
        }
        first = false;
        out.push_str("{\"target\": ");
        json_str(&s.name, &mut out);
        out.push_str(", \"tags\": {\"name\": ");
        // A tagged series' name (not wrapped in a function) gives its tags, as graphite-web.
        match super::tags::parse(&s.name)
            .ok()
            .filter(|_| !s.name.contains('('))
        {
            Some(t) => {
                json_str(&t.name, &mut out);
                for (k, v) in &t.tags {
                    out.push_str(", ");
                    json_str(k, &mut out);
                    out.push_str(": ");
                    json_str(v, &mut out);
                }
            }
            None => json_str(&s.name, &mut out),
        }
        out.push_str("}, \"datapoints\": [");
        let mut ints = itoa::Buffer::new();
        for (i, (v, t)) in points.iter().enumerate() {
            if i > 0 {
                out.push_str(", ");
            }
            out.push('[');
            json_num(*v, &mut out);
            out.push_str(", ");
            out.push_str(ints.format(*t));
            out.push(']');
        }
        out.push_str("]}");
    }
    out.push(']');
    out
}

/// `name,YYYY-MM-DD HH:MM:SS,value` lines (UTC), an empty value for None.
pub fn csv(series: &[Series]) -> String {
    let mut out = String::new();
    for s in series {
        let name = if s.name.contains([',', '"', '\n', '\r']) {
            format!("\"{}\"", s.name.replace('"', "\"\""))
        } else {
            s.name.clone()
        };
        for (i, v) in s.values.iter().enumerate() {
            let t = s.start + i as i64 * s.step;
            let _ = write!(out, "{name},{},", rrd::dump::utc_datetime(t));
            if let Some(v) = v {
                out.push_str(&py_float(*v));
            }
            out.push_str("\r\n");
        }
    }
    out
}

/// `name,start,end,step|v,v,None,...` lines.
pub fn raw(series: &[Series]) -> String {
    let mut out = String::new();
    for s in series {
        let _ = write!(out, "{},{},{},{}|", s.name, s.start, s.end, s.step);
        let vals: Vec<String> = s
            .values
            .iter()
            .map(|v| v.map_or("None".to_string(), py_float))
            .collect();
        out.push_str(&vals.join(","));
        out.push('\n');
    }
    out
}

/// Pickle protocol 2, written by hand: the few opcodes lists, dicts, text, numbers, bools
/// and None take (nothing that names a class, so any unpickler, however restricted, reads it).
pub struct Pickle(pub Vec<u8>);

impl Pickle {
    pub fn new() -> Pickle {
        Pickle(vec![0x80, 2]) // PROTO 2
    }
    pub fn text(&mut self, s: &str) {
        self.0.push(b'X'); // BINUNICODE
        self.0.extend_from_slice(&(s.len() as u32).to_le_bytes());
        self.0.extend_from_slice(s.as_bytes());
    }
    pub fn int(&mut self, v: i64) {
        match i32::try_from(v) {
            Ok(x) => {
                self.0.push(b'J'); // BININT
                self.0.extend_from_slice(&x.to_le_bytes());
            }
            Err(_) => {
                // LONG1: a little-endian two's complement of 8 bytes.
                self.0.extend_from_slice(&[0x8a, 8]);
                self.0.extend_from_slice(&v.to_le_bytes());
            }
        }
    }
    pub fn float(&mut self, v: f64) {
        self.0.push(b'G'); // BINFLOAT: pickle's one big-endian field
        let mut b = v.to_le_bytes();
        b.reverse();
        self.0.extend_from_slice(&b);
    }
    pub fn bool(&mut self, v: bool) {
        self.0.push(if v { 0x88 } else { 0x89 }); // NEWTRUE, NEWFALSE
    }
    pub fn none(&mut self) {
        self.0.push(b'N');
    }
    /// A list of `n` items, each written by `item`.
    pub fn list<T>(&mut self, items: &[T], mut item: impl FnMut(&mut Pickle, &T)) {
        self.0.push(b']'); // EMPTY_LIST
        if !items.is_empty() {
            self.0.push(b'('); // MARK
            for i in items {
                item(self, i);
            }
            self.0.push(b'e'); // APPENDS
        }
    }
    /// A dict whose pairs `pairs` writes (key, then value, each).
    pub fn dict(&mut self, pairs: impl FnOnce(&mut Pickle)) {
        self.0.push(b'}'); // EMPTY_DICT
        self.0.push(b'(');
        pairs(self);
        self.0.push(b'u'); // SETITEMS
    }
    pub fn finish(mut self) -> Vec<u8> {
        self.0.push(b'.'); // STOP
        self.0
    }
}

impl Default for Pickle {
    fn default() -> Self {
        Self::new()
    }
}

/// graphite-web's pickle format (what its `CLUSTER_SERVERS` read): a list of dicts with
/// name, start, end, step, values, pathExpression, valuesPerPoint, consolidationFunc and
/// xFilesFactor.
pub fn pickle(series: &[Series]) -> Vec<u8> {
    let mut p = Pickle::new();
    p.list(series, |p, s| {
        p.dict(|p| {
            p.text("name");
            p.text(&s.name);
            p.text("start");
            p.int(s.start);
            p.text("end");
            p.int(s.end);
            p.text("step");
            p.int(s.step);
            p.text("values");
            p.list(&s.values, |p, v| match v {
                Some(x) => p.float(*x),
                None => p.none(),
            });
            p.text("pathExpression");
            p.text(&s.path_expression);
            p.text("valuesPerPoint");
            p.int(1);
            p.text("consolidationFunc");
            p.text(&s.consolidation);
            p.text("xFilesFactor");
            p.float(s.xff);
        })
    });
    p.finish()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn floats_print_as_python_prints_them() {
        for v in [
            2.0,
            0.1,
            1.5e-5,
            1e16,
            123456789.25,
            -3.0,
            1e15,
            0.0001,
            9.99e15,
            0.5,
        ] {
            let mut s = String::new();
            py_float_into(&mut s, v);
            assert_eq!(s, py_float(v), "{v}");
        }
        // Python's own repr of each (printed by python3).
        let want = "2.0|0.1|1.5e-05|1e+16|123456789.25|-3.0|1000000000000000.0|0.0001|9990000000000000.0|0.5|98323320172204.12|1e-05|1.2345e-07|-2.5e+20|1e+22|123.456|0.00012|5e-324|1.7976931348623157e+308|1234567890123456.0|0.3|2.675|-0.0001|99999999999999.98";
        let vals = [
            2.0,
            0.1,
            1.5e-5,
            1e16,
            123456789.25,
            -3.0,
            1e15,
            0.0001,
            9.99e15,
            0.5,
            9.832332017220413e13,
            1e-05,
            1.2345e-7,
            -2.5e20,
            1e22,
            123.456,
            0.00012,
            5e-324,
            f64::MAX,
            1234567890123456.0,
            0.3,
            2.675,
            -0.0001,
            99999999999999.99,
        ];
        for (v, w) in vals.iter().zip(want.split('|')) {
            assert_eq!(py_float(*v), w, "{v:e}");
        }
        assert_eq!(py_float(2.0), "2.0");
        assert_eq!(py_float(0.1), "0.1");
        assert_eq!(py_float(1.5e-5), "1.5e-05");
        assert_eq!(py_float(1e16), "1e+16");
        assert_eq!(py_float(123456789.25), "123456789.25");
        assert_eq!(py_float(-3.0), "-3.0");
        assert_eq!(fmt_g(0.5), "0.5");
        assert_eq!(fmt_g(2.0), "2");
        assert_eq!(fmt_g(1e6), "1e+06");
        assert_eq!(fmt_g(123456.0), "123456");
        assert_eq!(fmt_g(0.0001), "0.0001");
        assert_eq!(fmt_g(1.0 / 3.0), "0.333333");
        assert_eq!(
            rrd::dump::utc_datetime(1_700_000_000),
            "2023-11-14 22:13:20"
        );
        assert_eq!(rrd::dump::utc_datetime(0), "1970-01-01 00:00:00");
    }

    #[test]
    fn consolidation_and_max_data_points_follow_graphite_web() {
        let mut s = Series::new(
            "a".into(),
            100,
            160,
            10,
            vec![Some(1.0), None, Some(3.0), Some(4.0), None, None],
        );
        let mut c = s.clone();
        c.consolidate(2);
        assert_eq!(c.values, vec![Some(1.0), Some(3.5), None]);
        assert_eq!(c.step, 20);
        s.consolidation = "max".into();
        s.consolidate(4);
        assert_eq!(s.values, vec![Some(4.0), None]);
        // 60 points into at most 20: 3 a point, the start nudged to a multiple of 30.
        let vals: Vec<Option<f64>> = (0..60).map(|i| Some(i as f64)).collect();
        let mut v = vec![Series::new("b".into(), 1000, 1600, 10, vals)];
        fit(&mut v, 20);
        assert_eq!(v[0].step, 30);
        assert_eq!(v[0].start, 1020);
        assert_eq!(v[0].values[0], Some(2.0));
        let dp = datapoints(&v[0]);
        assert_eq!(dp[0], (Some(2.0), 1020));
        assert!(dp.len() <= 20);
    }

    #[test]
    fn formats_write_what_graphite_web_writes() {
        let s = Series::new("a.b".into(), 100, 120, 10, vec![Some(1.5), None]);
        assert_eq!(
            json(std::slice::from_ref(&s), false),
            "[{\"target\": \"a.b\", \"tags\": {\"name\": \"a.b\"}, \"datapoints\": [[1.5, 100], [null, 110]]}]"
        );
        assert_eq!(
            json(std::slice::from_ref(&s), true),
            "[{\"target\": \"a.b\", \"tags\": {\"name\": \"a.b\"}, \"datapoints\": [[1.5, 100]]}]"
        );
        assert_eq!(raw(std::slice::from_ref(&s)), "a.b,100,120,10|1.5,None\n");
        assert_eq!(
            csv(std::slice::from_ref(&s)),
            "a.b,1970-01-01 00:01:40,1.5\r\na.b,1970-01-01 00:01:50,\r\n"
        );
        let p = pickle(&[s]);
        assert_eq!(&p[..3], &[0x80, 2, b']']);
        assert_eq!(p.last(), Some(&b'.'));
    }
}
