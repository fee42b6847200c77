//! The formats /render writes (json, csv, raw, pickle), byte for byte as graphite-web writes
//! them. Hand-written, not a JSON crate's: the contract is Python's own bytes (`json.dumps`'s
//! separators and `\\uXXXX` escapes, `repr` of a float, `None`), which clients and our
//! comparisons with graphite-web read.

use super::series::{datapoints, Series};
use std::fmt::Write as _;

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
    fmt_g_prec(v, 6)
}

/// A float as Python's `%.<p>g` writes it.
pub fn fmt_g_prec(v: f64, p: usize) -> String {
    if v.is_nan() {
        return "nan".into();
    }
    if v.is_infinite() {
        return if v > 0.0 { "inf" } else { "-inf" }.into();
    }
    if v == 0.0 {
        return if v.is_sign_negative() { "-0" } else { "0" }.into();
    }
    let p = p.max(1);
    let e = format!("{v:.*e}", p - 1);
    let (mant, exp) = e.split_once('e').unwrap_or((&e, "0"));
    let exp: i32 = exp.parse().unwrap_or(0);
    let trim = |s: String| {
        if s.contains('.') {
            s.trim_end_matches('0').trim_end_matches('.').to_string()
        } else {
            s
        }
    };
    if exp >= -4 && exp < p as i32 {
        let decimals = (p as i32 - 1 - exp).max(0) as usize;
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

/// A value as Python's `str` writes it: an int without a fraction.
pub fn py_value(v: f64, int: bool) -> String {
    if int && v.is_finite() && v.fract() == 0.0 && v.abs() < 9.0e15 {
        return format!("{}", v as i64);
    }
    py_float(v)
}

fn json_num(v: Option<f64>, int: bool, out: &mut String) {
    match v {
        Some(x) if int && x.is_finite() && x.fract() == 0.0 && x.abs() < 9.0e15 => {
            out.push_str(itoa::Buffer::new().format(x as i64))
        }
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
    let mut out = String::with_capacity(points * 32 + 128 * series.len() + 2);
    // graphite-web writes nothing unless some series has a value (`if any(data)`).
    if !series.iter().any(|s| !s.values.is_empty()) {
        return "[]".into();
    }
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
        if s.name_none && s.name == "None" {
            out.push_str("null");
        } else {
            json_str(&s.name, &mut out);
        }
        out.push_str(", \"tags\": {");
        for (i, (k, v)) in s.tags.borrow().iter().enumerate() {
            if i > 0 {
                out.push_str(", ");
            }
            json_str(k, &mut out);
            out.push_str(": ");
            json_str(v, &mut out);
        }
        out.push_str("}, \"datapoints\": [");
        let mut ints = itoa::Buffer::new();
        for (i, (v, t)) in points.iter().enumerate() {
            if i > 0 {
                out.push_str(", ");
            }
            out.push('[');
            json_num(*v, s.ints || (s.vpp <= 1 && s.int_at(i)), &mut out);
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
        for (i, v) in s.points().iter().enumerate() {
            let t = s.start + i as i64 * s.step;
            let _ = write!(out, "{name},{},", rrd::dump::utc_datetime(t));
            if let Some(v) = v {
                out.push_str(&py_value(*v, s.ints));
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
            .points()
            .iter()
            .map(|v| v.map_or("None".to_string(), |v| py_value(v, s.ints)))
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
            p.list(&s.points(), |p, v| match v {
                Some(x) => p.float(*x),
                None => p.none(),
            });
            p.text("pathExpression");
            p.text(&s.path_expression);
            p.text("valuesPerPoint");
            p.int(s.vpp as i64);
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
    fn json_strings_escape_what_json_needs() {
        assert_eq!(json_string("a\"b\\c\n\u{1}"), "\"a\\\"b\\\\c\\n\\u0001\"");
        assert_eq!(json_string("h\u{2028}"), "\"h\\u2028\"");
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
