//! graphite-web's Alias group: the names a series is shown by.

use super::*;

pub(super) fn alias(c: &mut Call<'_, '_>) -> Result<Value, String> {
    let v = c.get("newName").clone();
    let n = v.py_str();
    let mut l = c.series("seriesList")?;
    for s in &mut l {
        s.name = n.clone();
        s.name_none = v == Value::None;
    }
    Ok(Value::List(l))
}

/// `aliasByNode` and `aliasByTags`: the name made of the nodes and tags given.
pub(super) fn alias_by_node(c: &mut Call<'_, '_>) -> Result<Value, String> {
    let nodes = c.take_rest();
    let mut l = c.series("seriesList")?;
    for s in &mut l {
        s.name = agg_key(s, &nodes)?;
    }
    Ok(Value::List(l))
}

pub(super) fn alias_by_metric(c: &mut Call<'_, '_>) -> Result<Value, String> {
    let mut l = c.series("seriesList")?;
    for s in &mut l {
        s.name = special::substr_name(&s.name, -1, 0);
    }
    Ok(Value::List(l))
}

pub(super) fn alias_sub(c: &mut Call<'_, '_>) -> Result<Value, String> {
    let re = py_regex(&c.str("search")?)?;
    let rep = c.str("replace")?;
    let mut l = c.series("seriesList")?;
    for s in &mut l {
        s.name = py_sub(&re, &rep, &s.name)?;
    }
    Ok(Value::List(l))
}

pub(super) fn alias_query(c: &mut Call<'_, '_>) -> Result<Value, String> {
    let re = py_regex(&c.str("search")?)?;
    let rep = c.str("replace")?;
    let new_name = c.str("newName")?;
    let mut l = c.series("seriesList")?;
    let ctx = c.ctx.over(c.ctx.from, c.ctx.until);
    for s in &mut l {
        let q = py_sub(&re, &rep, &s.name)?;
        let found = evaluate_target(&ctx, &q)?;
        let Some(first) = found.first() else {
            return Err(format!("No series found with query: {q}"));
        };
        let Some(i) = first.values.iter().rposition(Option::is_some) else {
            return Err(format!("Cannot get last value of series: {}", first.name));
        };
        let v = first.values[i].unwrap_or(f64::NAN);
        s.name = py_percent(&new_name, v, first.int_at(i))?;
    }
    Ok(Value::List(l))
}

/// Python's `fmt % x` for one float.
pub(super) fn py_percent(fmt: &str, x: f64, int: bool) -> Result<String, String> {
    let mut out = String::new();
    let mut used = false;
    let mut it = fmt.chars().peekable();
    while let Some(ch) = it.next() {
        if ch != '%' {
            out.push(ch);
            continue;
        }
        let mut flags = String::new();
        while let Some(&f) = it.peek().filter(|f| "-+ #0".contains(**f)) {
            flags.push(f);
            it.next();
        }
        let mut width = String::new();
        while let Some(&d) = it.peek().filter(|d| d.is_ascii_digit()) {
            width.push(d);
            it.next();
        }
        let mut prec: Option<usize> = None;
        if it.peek() == Some(&'.') {
            it.next();
            let mut p = String::new();
            while let Some(&d) = it.peek().filter(|d| d.is_ascii_digit()) {
                p.push(d);
                it.next();
            }
            prec = Some(p.parse().unwrap_or(0));
        }
        let conv = it.next().ok_or("incomplete format")?;
        if conv == '%' {
            out.push('%');
            continue;
        }
        if used {
            return Err("not enough arguments for format string".into());
        }
        used = true;
        let body = match conv {
            'd' | 'i' | 'u' => {
                if !x.is_finite() {
                    return Err("cannot convert float to integer".into());
                }
                // Python's int of the float: every digit (Rust writes a float's exact
                // value), no sign on zero.
                let t = x.trunc();
                if t == 0.0 {
                    "0".to_string()
                } else {
                    format!("{t:.0}")
                }
            }
            'f' | 'F' => format!("{x:.*}", prec.unwrap_or(6)),
            'e' | 'E' => {
                let s = format!("{x:.*e}", prec.unwrap_or(6));
                let (m, e) = s.split_once('e').unwrap_or((&s, "0"));
                let e: i32 = e.parse().unwrap_or(0);
                let s = format!("{m}e{}{:02}", if e < 0 { '-' } else { '+' }, e.abs());
                if conv == 'E' {
                    s.to_uppercase()
                } else {
                    s
                }
            }
            'g' | 'G' => {
                let s = crate::format::fmt_g_prec(x, prec.unwrap_or(6).max(1));
                if conv == 'G' {
                    s.to_uppercase()
                } else {
                    s
                }
            }
            's' | 'r' => crate::format::py_value(x, int),
            other => return Err(format!("unsupported format character '{other}'")),
        };
        let body = if flags.contains('+') && x >= 0.0 && !matches!(conv, 's' | 'r') {
            format!("+{body}")
        } else {
            body
        };
        let w: usize = width.parse().unwrap_or(0);
        let n = body.chars().count();
        if n < w {
            let pad = w - n;
            if flags.contains('-') {
                out.push_str(&body);
                out.push_str(&" ".repeat(pad));
            } else if flags.contains('0') && !matches!(conv, 's' | 'r') {
                let (sign, digits) = match body.strip_prefix(['-', '+']) {
                    Some(d) => (&body[..1], d),
                    None => ("", body.as_str()),
                };
                out.push_str(sign);
                out.push_str(&"0".repeat(pad));
                out.push_str(digits);
            } else {
                out.push_str(&" ".repeat(pad));
                out.push_str(&body);
            }
        } else {
            out.push_str(&body);
        }
    }
    if !used {
        return Err("not all arguments converted during string formatting".into());
    }
    Ok(out)
}

/// graphite-web's format_units: a value in a unit system's largest unit it reaches, and
/// that unit's prefix (si, binary, sec, msec, none; another system is refused, as
/// graphite-web fails on it).
pub(super) fn format_units(v: f64, system: &str) -> Result<(f64, &'static str), String> {
    let units: &[(&str, f64)] = match system {
        "binary" => &[
            ("Pi", 1125899906842624.0),
            ("Ti", 1099511627776.0),
            ("Gi", 1073741824.0),
            ("Mi", 1048576.0),
            ("Ki", 1024.0),
        ],
        "si" => &[("P", 1e15), ("T", 1e12), ("G", 1e9), ("M", 1e6), ("k", 1e3)],
        "sec" => &[
            ("Y", 31536000.0),
            ("M", 2592000.0),
            ("D", 86400.0),
            ("H", 3600.0),
            ("m", 60.0),
        ],
        "msec" => &[
            ("Y", 31536000000.0),
            ("M", 2592000000.0),
            ("D", 86400000.0),
            ("H", 3600000.0),
            ("m", 60000.0),
            ("s", 1000.0),
        ],
        "none" => &[],
        other => return Err(format!("unknown unit system '{other}'")),
    };
    for (prefix, size) in units {
        if v.abs() >= *size {
            let mut v2 = v / size;
            if v2 - v2.floor() < 0.00000000001 && v > 1.0 {
                v2 = v2.floor();
            }
            return Ok((v2, prefix));
        }
    }
    let v = if v - v.floor() < 0.00000000001 && v > 1.0 {
        v.floor()
    } else {
        v
    };
    Ok((v, ""))
}

pub(super) fn legend_value(c: &mut Call<'_, '_>) -> Result<Value, String> {
    let mut types: Vec<String> = c.take_rest().iter().map(Value::py_str).collect();
    let Some(last) = types.last().cloned() else {
        return Err("legendValue: tuple index out of range (no value types)".into());
    };
    let system = (last == "si" || last == "binary").then(|| {
        types.pop();
        last
    });
    let mut l = c.series("seriesList")?;
    for t in &types {
        let agg = Agg::of(t);
        for s in &mut l {
            let (v, int) = match agg {
                Some(a) => {
                    let (v, int) = agg_of_series(a, s);
                    (Some(v), int)
                }
                None => (None, false),
            };
            let text = |v: Option<Option<f64>>| -> String {
                match v {
                    None => "(?)".into(),
                    Some(None) => "None".into(),
                    Some(Some(x)) => crate::format::py_value(x, int),
                }
            };
            match &system {
                None => s.name = format!("{} ({t}: {})", s.name, text(v)),
                Some(sys) => {
                    let formatted = match v {
                        None => "(?)".to_string(),
                        Some(None) => "None".to_string(),
                        Some(Some(x)) => {
                            let (v2, p) = format_units(x, sys)?;
                            format!("{}{p}", f2(v2))
                        }
                    };
                    s.name = format!("{:<20}{t:<5}{formatted:<10}", s.name);
                }
            }
        }
    }
    Ok(Value::List(l))
}
