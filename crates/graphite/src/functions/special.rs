//! graphite-web's Special group: series chosen by tags, constants, consolidation, and the
//! odd ones out.

use super::*;

/// `seriesByTag`: the tagged series every expression matches (string arguments only, as
/// graphite-web reads them), sorted by name, each with the call as written for its path
/// expression.
pub(super) fn series_by_tag(
    ctx: &Ctx<'_>,
    args: &[Expr],
    raw: &str,
) -> Result<Vec<Series>, String> {
    if !ctx.fetched(raw) {
        return Ok(vec![]);
    }
    if ctx.from > ctx.until {
        return Err(format!(
            "Invalid interval start={} end={}",
            ctx.from, ctx.until
        ));
    }
    let mut exprs = Vec::new();
    for a in args {
        if let Expr::Str(s) = a {
            exprs.push(crate::tags::Expr::parse(s)?);
        }
    }
    if !exprs.iter().any(crate::tags::Expr::positive) {
        return Err(
            "seriesByTag: at least one expression must select series by itself \
             (tag=value or tag=~regex that does not match nothing)"
                .into(),
        );
    }
    let xff = ctx.state.xff.get().unwrap_or(0.0);
    let mut out = Vec::new();
    for path in ctx.source.tagged() {
        let Ok(t) = crate::tags::parse(&path) else {
            continue;
        };
        if exprs.iter().all(|e| e.matches(&t)) {
            for mut s in ctx.fetch(&path)? {
                s.path_expression = raw.to_string();
                s.xff = xff;
                out.push(s);
            }
        }
    }
    out.sort_by(|a, b| a.name.cmp(&b.name));
    Ok(out)
}

/// graphite-web's constantLine of `value`: three points over the request's range, named
/// by the value.
pub(super) fn constant(ctx: &Ctx<'_>, value: Value) -> Result<Series, String> {
    let (from, until) = (ctx.from, ctx.until);
    let step = ((until - from) as f64 / 2.0).trunc() as i64;
    let v = value.number();
    if v.is_none() && value != Value::None {
        return Err(format!(
            "constantLine: the value must be a number, not {}",
            value.py_str()
        ));
    }
    let mut s = Series::new(value.py_str(), from, until, step, vec![v; 3]);
    s.xff = xff_of(ctx, None);
    s.ints = matches!(value, Value::Int(_) | Value::Bool(_));
    s.path_expression = format!("constantLine({})", value.py_str());
    Ok(s)
}

pub(super) fn constant_line(c: &mut Call<'_, '_>) -> Result<Value, String> {
    let v = c.take("value");
    Ok(Value::List(vec![constant(c.ctx, v)?]))
}

/// `consolidateBy` and `cumulative` (consolidateBy 'sum').
pub(super) fn consolidate_by(c: &mut Call<'_, '_>) -> Result<Value, String> {
    let f = if c.name == "cumulative" {
        "sum".to_string()
    } else {
        c.get("consolidationFunc").py_str()
    };
    let mut l = c.series("seriesList")?;
    for s in &mut l {
        s.consolidation = f.clone();
        s.set_tag("consolidateBy", f.clone());
        s.name = format!("consolidateBy({},\"{f}\")", s.name);
        s.path_expression = s.name.clone();
    }
    Ok(Value::List(l))
}

/// `setXFilesFactor` and `xFilesFactor`: the series' and the rest of the request's.
pub(super) fn set_xfiles_factor(c: &mut Call<'_, '_>) -> Result<Value, String> {
    let v = c.get("xFilesFactor").clone();
    let x = c.num("xFilesFactor")?;
    c.ctx.state.xff.set(Some(x));
    let mut l = c.series("seriesList")?;
    for s in &mut l {
        s.xff = x;
        s.set_tag("xFilesFactor", v.py_str());
    }
    Ok(Value::List(l))
}

pub(super) fn changed(c: &mut Call<'_, '_>) -> Result<Value, String> {
    let mut l = c.series("seriesList")?;
    for s in &mut l {
        s.ints = true;
        s.name = format!("changed({})", s.name);
        s.path_expression = s.name.clone();
        let pts = s.points().into_owned();
        let mut prev: Option<f64> = None;
        for (i, v) in pts.into_iter().enumerate() {
            s.values[i] = Some(match (prev, v) {
                (None, _) => {
                    prev = v;
                    0.0
                }
                (Some(p), Some(x)) if p != x => {
                    prev = Some(x);
                    1.0
                }
                _ => 0.0,
            });
        }
    }
    Ok(Value::List(l))
}

pub(super) fn fallback_series(c: &mut Call<'_, '_>) -> Result<Value, String> {
    let l = c.series("seriesList")?;
    if !l.is_empty() {
        return Ok(Value::List(l));
    }
    Ok(c.take("fallback"))
}

/// A name as graphite-web's substr cuts it: the inside of its innermost call, its nodes
/// from `start` (to `stop` where not 0), up to its first comma.
pub(super) fn substr_name(name: &str, start: i64, stop: i64) -> String {
    let left = name.rfind('(').map_or(0, |i| i + 1);
    let right = name.find(')').unwrap_or(name.len() + 1);
    let clean = if left <= right.min(name.len()) {
        &name[left..right.min(name.len())]
    } else {
        ""
    };
    let parts: Vec<&str> = clean.split('.').collect();
    let n = parts.len() as i64;
    let fix = |x: i64| if x < 0 { (n + x).max(0) } else { x.min(n) } as usize;
    let (a, b) = (fix(start), if stop == 0 { n as usize } else { fix(stop) });
    let joined = if a < b {
        parts[a..b].join(".")
    } else {
        String::new()
    };
    match joined.find(',') {
        Some(i) => joined[..i].to_string(),
        None => joined,
    }
}

pub(super) fn substr(c: &mut Call<'_, '_>) -> Result<Value, String> {
    let start = c.int("start")?;
    let stop = c.int("stop")?;
    let mut l = c.series("seriesList")?;
    for s in &mut l {
        s.name = substr_name(&s.name, start, stop);
    }
    Ok(Value::List(l))
}

pub(super) fn cacti_style(c: &mut Call<'_, '_>) -> Result<Value, String> {
    let system = c.opt_str("system")?.filter(|s| !s.is_empty());
    let units = c.opt_str("units")?.filter(|s| !s.is_empty());
    let mut l = c.series("seriesList")?;
    if l.is_empty() {
        return Ok(Value::List(l));
    }
    let fmt = |x: f64| -> Result<String, String> {
        Ok(match (&system, &units) {
            (Some(sys), Some(u)) => {
                let (v, p) = alias::format_units(x, sys)?;
                format!("{} {p}{u}", f2(v))
            }
            (Some(sys), None) => {
                let (v, p) = alias::format_units(x, sys)?;
                format!("{}{p}", f2(v))
            }
            (None, Some(u)) => format!("{} {u}", f2(x)),
            (None, None) => f2(x),
        })
    };
    // graphite-web measures the columns with whole numbers (3 for none or zero).
    let width = |f: &dyn Fn(&[Option<f64>]) -> Option<f64>| -> Result<usize, String> {
        let mut w = 0;
        for s in &l {
            // Python's int(): no negative zero.
            let v = f(&s.points()).filter(|v| *v != 0.0).unwrap_or(3.0).trunc() + 0.0;
            w = w.max(fmt(v)?.chars().count());
        }
        Ok(w + 3)
    };
    let name_len = l.iter().map(|s| s.name.chars().count()).max().unwrap_or(0);
    let last_len = width(&|p| safe_last(p))?;
    let max_len = width(&|p| safe_max(p))?;
    let min_len = width(&|p| safe_min(p))?;
    for s in &mut l {
        let pts = s.points();
        let show =
            |v: Option<f64>| -> Result<String, String> { v.map_or(Ok("nan".to_string()), &fmt) };
        s.name = format!(
            "{:<name_len$} Current:{:<last_len$} Max:{:<max_len$} Min:{:<min_len$} ",
            s.name,
            show(safe_last(&s.values))?,
            show(safe_max(&pts))?,
            show(safe_min(&pts))?,
        );
    }
    Ok(Value::List(l))
}

/// `events`: the request's range a second a point, every point None (the store keeps no
/// events; graphite-web's count of events in each second).
pub(super) fn events(c: &mut Call<'_, '_>) -> Result<Value, String> {
    let tags: Vec<String> = c.take_rest().iter().map(Value::py_str).collect();
    let name = format!("events(\"{}\")", tags.join("\", \""));
    let (from, until) = (c.ctx.from, c.ctx.until);
    let n = (until - from).max(0);
    c.ctx.limits.points(i128::from(n), "events")?;
    let mut s = Series::new(name, from, until, 1, vec![None; n as usize]);
    s.consolidation = "sum".into();
    s.xff = xff_of(c.ctx, None);
    s.ints = true;
    Ok(Value::List(vec![s]))
}

/// `randomWalk`: a walk from 0 by steps drawn in [-0.5, 0.5).
pub(super) fn random_walk(c: &mut Call<'_, '_>) -> Result<Value, String> {
    let name = c.str("name")?;
    let step = c.int("step")?;
    if step <= 0 {
        return Err(format!("randomWalk: the step must be positive, not {step}"));
    }
    let (from, until) = (c.ctx.from, c.ctx.until);
    let n = (until - from + step - 1).div_euclid(step).max(0);
    c.ctx.limits.points(i128::from(n), "randomWalk")?;
    // A small generator of its own (xorshift), seeded from the clock: a walk, not a secret.
    let mut x = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0x9e37_79b9_7f4a_7c15, |d| d.as_nanos() as u64)
        | 1;
    let mut cur = 0.0;
    let values = (0..n)
        .map(|_| {
            let v = cur;
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            cur += (x >> 11) as f64 / (1u64 << 53) as f64 - 0.5;
            Some(v)
        })
        .collect();
    let mut s = Series::new(name, from, until, step, values);
    s.xff = xff_of(c.ctx, None);
    Ok(Value::List(vec![s]))
}
