//! graphite-web's Filter Series and Filter Data groups: which series, and which of their
//! values, are kept.

use super::*;

/// Python's `a < b` for values that may be None (None compared with a number raises).
fn py_lt(a: Option<f64>, b: Option<f64>) -> Result<bool, String> {
    match (a, b) {
        (Some(a), Some(b)) => Ok(a < b),
        _ => Err("'<' not supported between instances of 'NoneType' and 'float'".into()),
    }
}

/// Python's `list[:n]`.
fn py_head<T>(mut l: Vec<T>, n: i64) -> Vec<T> {
    let len = l.len() as i64;
    let end = if n < 0 { (len + n).max(0) } else { n.min(len) };
    l.truncate(end as usize);
    l
}

/// graphite-web's filterSeries operators, on an aggregate that may be None.
fn compare(op: &str, v: Option<f64>, t: f64) -> Result<bool, String> {
    Ok(match op {
        "=" => v == Some(t),
        "!=" => v != Some(t),
        ">" => v.is_some_and(|v| v > t),
        ">=" => v.is_some_and(|v| v >= t),
        "<" => v.is_none_or(|v| v < t),
        "<=" => v.is_none_or(|v| v <= t),
        _ => return Err(format!("Unsupported operator: {op}")),
    })
}

fn filtered(l: Vec<Series>, agg: Agg, op: &str, t: f64) -> Result<Vec<Series>, String> {
    let mut out = Vec::new();
    for s in l {
        if compare(op, agg.apply(&s.points()), t)? {
            out.push(s);
        }
    }
    Ok(out)
}

pub(super) fn filter_series(c: &mut Call<'_, '_>) -> Result<Value, String> {
    let agg = c.agg("func")?;
    let op = c.str("operator")?;
    compare(&op, None, 0.0)?;
    let t = c.num("threshold")?;
    let l = c.series("seriesList")?;
    filtered(l, agg, &op, t).map(Value::List)
}

/// `averageAbove`, `currentBelow`, `maximumAbove`, ...: filterSeries with the aggregate
/// their name says, `>` for Above, `<=` for Below.
pub(super) fn above_below(c: &mut Call<'_, '_>) -> Result<Value, String> {
    let name = c.name;
    let agg = if name.starts_with("average") {
        Agg::Average
    } else if name.starts_with("current") {
        Agg::Last
    } else if name.starts_with("maximum") {
        Agg::Max
    } else {
        Agg::Min
    };
    let op = if name.ends_with("Above") { ">" } else { "<=" };
    let t = c.num("n")?;
    let l = c.series("seriesList")?;
    filtered(l, agg, op, t).map(Value::List)
}

/// `highest`, `lowest` and their named forms: sorted by an aggregate (None lowest), the
/// first n.
pub(super) fn highest(c: &mut Call<'_, '_>) -> Result<Value, String> {
    let name = c.name;
    let agg = match name {
        "highestCurrent" | "lowestCurrent" => Agg::Last,
        "highestMax" => Agg::Max,
        "highestAverage" | "lowestAverage" => Agg::Average,
        _ => c.agg("func")?,
    };
    let n = c.num("n")?.trunc() as i64;
    let l = c.series("seriesList")?;
    let mut keyed: Vec<(f64, Series)> = l
        .into_iter()
        .map(|s| (agg.apply(&s.points()).unwrap_or(f64::NEG_INFINITY), s))
        .collect();
    if name.starts_with("highest") {
        keyed.sort_by(|a, b| crate::series::py_cmp(&b.0, &a.0));
    } else {
        keyed.sort_by(|a, b| crate::series::py_cmp(&a.0, &b.0));
    }
    Ok(Value::List(py_head(
        keyed.into_iter().map(|(_, s)| s).collect(),
        n,
    )))
}

pub(super) fn limit(c: &mut Call<'_, '_>) -> Result<Value, String> {
    let n = c.index("n")?;
    let l = c.series("seriesList")?;
    Ok(Value::List(py_head(l, n)))
}

pub(super) fn exclude(c: &mut Call<'_, '_>) -> Result<Value, String> {
    let keep = c.name == "grep";
    let re = py_regex(&c.str("pattern")?)?;
    let l = c.series("seriesList")?;
    Ok(Value::List(
        l.into_iter()
            .filter(|s| re.is_match(&s.name) == keep)
            .collect(),
    ))
}

pub(super) fn most_deviant(c: &mut Call<'_, '_>) -> Result<Value, String> {
    let n = c.index("n")?;
    let l = c.series("seriesList")?;
    let mut keyed = Vec::new();
    for s in l {
        let pts = s.points();
        let Some(mean) = safe_avg(&pts) else {
            continue;
        };
        let sq = pts
            .iter()
            .flatten()
            .fold(0.0, |a, v| a + py_pow(v - mean, 2.0));
        let count = pts.iter().flatten().count();
        if count == 0 {
            continue;
        }
        keyed.push((sq / count as f64, s));
    }
    keyed.sort_by(|a, b| crate::series::py_cmp(&b.0, &a.0));
    Ok(Value::List(py_head(
        keyed.into_iter().map(|(_, s)| s).collect(),
        n,
    )))
}

pub(super) fn average_outside_percentile(c: &mut Call<'_, '_>) -> Result<Value, String> {
    let mut n = c.num("n")?;
    let l = c.series("seriesList")?;
    let avgs: Vec<Option<f64>> = l.iter().map(|s| safe_avg(&s.points())).collect();
    if n < 50.0 {
        n = 100.0 - n;
    }
    let low = percentile(&avgs, 100.0 - n, false);
    let high = percentile(&avgs, n, false);
    let mut out = Vec::new();
    for (s, a) in l.into_iter().zip(avgs) {
        let inside = py_lt(low, a)? && py_lt(a, high)?;
        if !inside {
            out.push(s);
        }
    }
    Ok(Value::List(out))
}

pub(super) fn remove_between_percentile(c: &mut Call<'_, '_>) -> Result<Value, String> {
    let mut n = c.num("n")?;
    let l = c.series("seriesList")?;
    if n < 50.0 {
        n = 100.0 - n;
    }
    let pts: Vec<Vec<Option<f64>>> = l.iter().map(|s| s.points().into_owned()).collect();
    let cols = pts.iter().map(Vec::len).min().unwrap_or(0);
    let col = |i: usize| -> Vec<Option<f64>> { pts.iter().map(|p| p[i]).collect() };
    let lows: Vec<Option<f64>> = (0..cols)
        .map(|i| percentile(&col(i), 100.0 - n, false))
        .collect();
    let highs: Vec<Option<f64>> = (0..cols).map(|i| percentile(&col(i), n, false)).collect();
    let mut out = Vec::new();
    for (s, p) in l.into_iter().zip(&pts) {
        let mut outside = 0;
        for (i, v) in p.iter().enumerate() {
            let (lo, hi) = (
                *lows.get(i).ok_or("list index out of range")?,
                *highs.get(i).ok_or("list index out of range")?,
            );
            let inside = py_lt(lo, *v)? && py_lt(*v, hi)?;
            if !inside {
                outside += 1;
            }
        }
        if outside > 0 {
            out.push(s);
        }
    }
    Ok(Value::List(out))
}

pub(super) fn remove_percentile(c: &mut Call<'_, '_>) -> Result<Value, String> {
    let above = c.name == "removeAbovePercentile";
    let v = c.get("n").clone();
    let n = c.num("n")?;
    let mut l = c.series("seriesList")?;
    for s in &mut l {
        s.name = format!("{}({}, {})", c.name, s.name, fmt_g(n));
        s.path_expression = s.name.clone();
        if n == 0.0 {
            return Err("The requested percent is required to be greater than 0".into());
        }
        // graphite-web's nPercentile of the series alone (which tags the series itself).
        let known: Vec<Option<f64>> = s.points().iter().filter(|v| v.is_some()).copied().collect();
        if known.is_empty() {
            continue;
        }
        let Some(p) = percentile(&known, n, false) else {
            continue;
        };
        s.set_tag("nPercentile", v.py_str());
        if (s.end - s.start) / s.step.max(1) <= 0 {
            continue;
        }
        remove_past(s, p, above);
    }
    Ok(Value::List(l))
}

/// The points of `s` above `limit` (`above`) or below it and unknown (not `above`)
/// removed, written at their indices as graphite-web writes them.
fn remove_past(s: &mut Series, limit: f64, above: bool) {
    let pts = s.points().into_owned();
    for (i, x) in pts.into_iter().enumerate() {
        let drop = match x {
            Some(x) if above => x > limit,
            Some(x) => x < limit,
            None => !above,
        };
        if drop {
            s.values[i] = None;
        }
    }
}

pub(super) fn remove_value(c: &mut Call<'_, '_>) -> Result<Value, String> {
    let above = c.name == "removeAboveValue";
    let n = c.num("n")?;
    let mut l = c.series("seriesList")?;
    for s in &mut l {
        s.name = format!("{}({}, {})", c.name, s.name, fmt_g(n));
        s.path_expression = s.name.clone();
        remove_past(s, n, above);
    }
    Ok(Value::List(l))
}

pub(super) fn remove_empty_series(c: &mut Call<'_, '_>) -> Result<Value, String> {
    let xff = c.opt_num("xFilesFactor")?.unwrap_or(0.0);
    let l = c.series("seriesList")?;
    Ok(Value::List(
        l.into_iter()
            .filter(|s| {
                !s.values.is_empty()
                    && xff_ok(
                        s.points().iter().flatten().count(),
                        s.values.len() as f64,
                        xff,
                    )
            })
            .collect(),
    ))
}

pub(super) fn unique(c: &mut Call<'_, '_>) -> Result<Value, String> {
    let mut seen = std::collections::HashSet::new();
    Ok(Value::List(
        c.rest_series()?
            .into_iter()
            .flatten()
            .filter(|s| seen.insert(s.name.clone()))
            .collect(),
    ))
}

pub(super) fn use_series_above(c: &mut Call<'_, '_>) -> Result<Value, String> {
    let value = c.num("value")?;
    let re = py_regex(&c.str("search")?)?;
    let rep = c.str("replace")?;
    let l = c.series("seriesList")?;
    let mut names = Vec::new();
    for s in &l {
        let pts = s.points();
        if pts.is_empty() {
            return Err("max() arg is an empty sequence".into());
        }
        if pts.iter().any(Option::is_none) {
            return Err("'>' not supported between instances of 'NoneType' and 'float'".into());
        }
        let m = pts.iter().flatten().copied().reduce(crate::series::py_max);
        if m.is_some_and(|m| m > value) {
            names.push(py_sub(&re, &rep, &s.name)?);
        }
    }
    if names.is_empty() {
        return Ok(Value::List(vec![]));
    }
    let ctx = c.ctx.over(c.ctx.from, c.ctx.until);
    let found = evaluate_target(&ctx, &format!("group({})", names.join(",")))?;
    Ok(Value::List(
        found.into_iter().filter(|s| !s.values.is_empty()).collect(),
    ))
}
