//! graphite-web's Transform group: each series' values changed, one series at a time.

use super::*;

/// Each point of `s` through `f`, written back at the point's index (as graphite-web's
/// `for i, v in enumerate(series): series[i] = f(v)`).
fn in_place(
    s: &mut Series,
    mut f: impl FnMut(Option<f64>) -> Result<Option<f64>, String>,
) -> Result<(), String> {
    let pts = s.points().into_owned();
    for (i, v) in pts.into_iter().enumerate() {
        s.values[i] = f(v)?;
    }
    Ok(())
}

/// Rename (and make the name its path expression), tag, and change each point in place.
fn each(
    c: &mut Call<'_, '_>,
    tag: Option<(&str, String)>,
    name: impl Fn(&Series) -> String,
    mut f: impl FnMut(Option<f64>) -> Result<Option<f64>, String>,
) -> Result<Value, String> {
    // An absolute or rounded int is an int; anything else here makes floats.
    let keep_ints = matches!(c.name, "absolute" | "round");
    let mut l = c.series("seriesList")?;
    for s in &mut l {
        if let Some((k, v)) = &tag {
            s.set_tag(k, v.clone());
        }
        s.name = name(s);
        s.path_expression = s.name.clone();
        s.ints &= keep_ints;
        if !keep_ints {
            s.int_mask = None;
        }
        in_place(s, &mut f)?;
    }
    Ok(Value::List(l))
}

/// graphite-web's safePow: None where Python's math.pow raises (a negative number to a
/// fraction, zero to a negative power, an overflow).
pub(super) fn safe_pow(a: Option<f64>, b: Option<f64>) -> Option<f64> {
    let (a, b) = (a?, b?);
    let r = py_pow(a, b);
    if a.is_finite() && b.is_finite() && !r.is_finite() {
        return None;
    }
    Some(r)
}

pub(super) fn scale(c: &mut Call<'_, '_>) -> Result<Value, String> {
    let v = c.get("factor").clone();
    let f = c.num("factor")?;
    each(
        c,
        Some(("scale", v.py_str())),
        |s| format!("scale({},{})", s.name, fmt_g(f)),
        |x| Ok(x.map(|x| x * f)),
    )
}

pub(super) fn offset(c: &mut Call<'_, '_>) -> Result<Value, String> {
    let v = c.get("factor").clone();
    let f = c.num("factor")?;
    each(
        c,
        Some(("offset", v.py_str())),
        |s| format!("offset({},{})", s.name, fmt_g(f)),
        |x| Ok(x.map(|x| x + f)),
    )
}

pub(super) fn add(c: &mut Call<'_, '_>) -> Result<Value, String> {
    let v = c.get("constant").clone();
    let f = c.num("constant")?;
    let d = d_of(&v)?;
    each(
        c,
        Some(("add", v.py_str())),
        |s| format!("add({},{d})", s.name),
        |x| Ok(x.map(|x| x + f)),
    )
}

pub(super) fn pow(c: &mut Call<'_, '_>) -> Result<Value, String> {
    let v = c.get("factor").clone();
    let f = c.num("factor")?;
    each(
        c,
        Some(("pow", v.py_str())),
        |s| format!("pow({},{})", s.name, fmt_g(f)),
        |x| Ok(safe_pow(x, Some(f))),
    )
}

pub(super) fn square_root(c: &mut Call<'_, '_>) -> Result<Value, String> {
    each(
        c,
        Some(("squareRoot", "1".into())),
        |s| format!("squareRoot({})", s.name),
        |x| Ok(safe_pow(x, Some(0.5))),
    )
}

pub(super) fn invert(c: &mut Call<'_, '_>) -> Result<Value, String> {
    each(
        c,
        Some(("invert", "1".into())),
        |s| format!("invert({})", s.name),
        |x| Ok(safe_pow(x, Some(-1.0))),
    )
}

pub(super) fn absolute(c: &mut Call<'_, '_>) -> Result<Value, String> {
    each(
        c,
        Some(("absolute", "1".into())),
        |s| format!("absolute({})", s.name),
        |x| Ok(x.map(f64::abs)),
    )
}

/// Python's math.exp: an overflow raises (graphite-web lets it).
fn exp_of(x: f64) -> Result<f64, String> {
    let r = x.exp();
    if r.is_infinite() && x.is_finite() {
        return Err("math range error (exp overflows)".into());
    }
    Ok(r)
}

pub(super) fn exp(c: &mut Call<'_, '_>) -> Result<Value, String> {
    each(
        c,
        Some(("exp", "e".into())),
        |s| format!("exp({})", s.name),
        |x| x.map(exp_of).transpose(),
    )
}

pub(super) fn sigmoid(c: &mut Call<'_, '_>) -> Result<Value, String> {
    each(
        c,
        Some(("sigmoid", "sigmoid".into())),
        |s| format!("sigmoid({})", s.name),
        |x| match x {
            None => Ok(None),
            Some(x) => Ok(Some(1.0 / (1.0 + exp_of(-x)?))),
        },
    )
}

pub(super) fn logit(c: &mut Call<'_, '_>) -> Result<Value, String> {
    each(
        c,
        Some(("logit", "logit".into())),
        |s| format!("logit({})", s.name),
        |x| {
            Ok(x.and_then(|x| {
                if x == 1.0 {
                    return None;
                }
                let q = x / (1.0 - x);
                (q > 0.0).then(|| q.ln())
            }))
        },
    )
}

pub(super) fn offset_to_zero(c: &mut Call<'_, '_>) -> Result<Value, String> {
    let mut l = c.series("seriesList")?;
    for s in &mut l {
        let extreme = s.extreme(false);
        let min = extreme.map(|(m, _)| m);
        let min_int = extreme.is_some_and(|(_, i)| i);
        s.set_tag(
            "offsetToZero",
            min.map_or("None".to_string(), |m| crate::format::py_value(m, min_int)),
        );
        // An int less an int stays one; anything less a float is a float.
        if !min_int {
            s.ints = false;
            s.int_mask = None;
        }
        s.name = format!("offsetToZero({})", s.name);
        s.path_expression = s.name.clone();
        in_place(s, |x| match (x, min) {
            (Some(x), Some(m)) => Ok(Some(x - m)),
            (Some(_), None) => Err("unsupported operand (no minimum)".into()),
            (None, _) => Ok(None),
        })?;
    }
    Ok(Value::List(l))
}

pub(super) fn round(c: &mut Call<'_, '_>) -> Result<Value, String> {
    let p = c.get("precision").clone();
    let digits = match &p {
        Value::None => 0,
        Value::Int(i) => *i,
        Value::Bool(b) => i64::from(*b),
        v => {
            return Err(format!(
                "round: precision must be an integer, not {}",
                v.kind()
            ))
        }
    };
    let tag = if p.truthy() { p.py_str() } else { "0".into() };
    let name = move |s: &Series| match &p {
        Value::None => format!("round({})", s.name),
        _ => format!("round({},{})", s.name, fmt_g(digits as f64)),
    };
    each(c, Some(("round", tag)), name, |x| {
        Ok(x.map(|x| py_round(x, digits)))
    })
}

pub(super) fn scale_to_seconds(c: &mut Call<'_, '_>) -> Result<Value, String> {
    let v = c.get("seconds").clone();
    let secs = c.num("seconds")?;
    let d = d_of(&v)?;
    let mut l = c.series("seriesList")?;
    for s in &mut l {
        s.set_tag("scaleToSeconds", v.py_str());
        s.name = format!("scaleToSeconds({},{d})", s.name);
        s.path_expression = s.name.clone();
        let f = secs / s.step as f64;
        in_place(s, |x| Ok(x.map(|x| py_round(x * f, 6))))?;
    }
    Ok(Value::List(l))
}

/// A new series from `s` (its tags as `tag` leaves them) with other values.
fn derived(
    c: &mut Call<'_, '_>,
    tag: &str,
    tag_value: &str,
    name: impl Fn(&Series) -> String,
    mut f: impl FnMut(&Series, Vec<Option<f64>>) -> Result<Vec<Option<f64>>, String>,
) -> Result<Value, String> {
    // Differences and moves of ints are ints.
    let keep_ints = match c.name {
        "derivative" | "delay" => true,
        "nonNegativeDerivative" => {
            matches!(c.get("maxValue"), Value::None) && matches!(c.get("minValue"), Value::None)
        }
        _ => false,
    };
    let l = c.series("seriesList")?;
    let mut out = Vec::with_capacity(l.len());
    for mut s in l {
        let values = f(&s, s.points().into_owned())?;
        s.set_tag(tag, tag_value);
        let n = name(&s);
        let mut r = s.copy(n, s.start, s.end, s.step, values);
        r.ints = keep_ints && s.ints;
        out.push(r);
    }
    Ok(Value::List(out))
}

pub(super) fn derivative(c: &mut Call<'_, '_>) -> Result<Value, String> {
    derived(
        c,
        "derivative",
        "1",
        |s| format!("derivative({})", s.name),
        |_, pts| {
            let mut prev: Option<f64> = None;
            Ok(pts
                .into_iter()
                .map(|v| {
                    let out = match (prev, v) {
                        (Some(p), Some(x)) => Some(x - p),
                        _ => None,
                    };
                    prev = v;
                    out
                })
                .collect())
        },
    )
}

pub(super) fn integral(c: &mut Call<'_, '_>) -> Result<Value, String> {
    derived(
        c,
        "integral",
        "1",
        |s| format!("integral({})", s.name),
        |_, pts| {
            let mut cur = 0.0;
            Ok(pts
                .into_iter()
                .map(|v| {
                    v.map(|x| {
                        cur += x;
                        cur
                    })
                })
                .collect())
        },
    )
}

/// graphite-web's `_nonNegativeDelta`: (delta, the new previous value); an error where
/// Python compares None with a number (an unknown value with a maxValue or minValue).
pub(super) fn non_negative_delta(
    v: Option<f64>,
    prev: Option<f64>,
    max: Option<f64>,
    min: Option<f64>,
) -> Result<(Option<f64>, Option<f64>), String> {
    let cmp_none = || "'>' not supported between 'NoneType' and 'float'".to_string();
    if let Some(m) = max {
        if v.ok_or_else(cmp_none)? > m {
            return Ok((None, None));
        }
    }
    if let Some(m) = min {
        if v.ok_or_else(cmp_none)? < m {
            return Ok((None, None));
        }
    }
    let (Some(v), Some(p)) = (v, prev) else {
        return Ok((None, v));
    };
    if v >= p {
        return Ok((Some(v - p), Some(v)));
    }
    if let Some(m) = max {
        return Ok((Some(m + 1.0 + v - p - min.unwrap_or(0.0)), Some(v)));
    }
    if let Some(m) = min {
        return Ok((Some(v - m), Some(v)));
    }
    Ok((None, Some(v)))
}

fn deltas(c: &mut Call<'_, '_>, per_second: bool) -> Result<Value, String> {
    let max = c.opt_num("maxValue")?;
    let min = c.opt_num("minValue")?;
    let name = if per_second {
        "perSecond"
    } else {
        "nonNegativeDerivative"
    };
    derived(
        c,
        name,
        "1",
        |s| format!("{name}({})", s.name),
        |s, pts| {
            let mut prev = None;
            let step = s.step as f64;
            pts.into_iter()
                .map(|v| {
                    let (d, p) = non_negative_delta(v, prev, max, min)?;
                    prev = p;
                    Ok(d.map(|d| if per_second { py_round(d / step, 6) } else { d }))
                })
                .collect()
        },
    )
}

pub(super) fn non_negative_derivative(c: &mut Call<'_, '_>) -> Result<Value, String> {
    deltas(c, false)
}

pub(super) fn per_second(c: &mut Call<'_, '_>) -> Result<Value, String> {
    deltas(c, true)
}

pub(super) fn delay(c: &mut Call<'_, '_>) -> Result<Value, String> {
    let v = c.get("steps").clone();
    let steps = c.int("steps")?;
    // Python's series[-2.0:] fails on each series.
    let float = c.index("steps").err();
    let d = d_of(&v)?;
    derived(
        c,
        "delay",
        &v.py_str(),
        |s| format!("delay({},{d})", s.name),
        |s, _| {
            if let Some(e) = &float {
                return Err(e.clone());
            }
            let raw = &s.values;
            let n = raw.len() as i64;
            let slice = |a: i64, b: i64| -> Vec<Option<f64>> {
                // Python's raw[a:b] with negative ends counted from the end.
                let fix = |x: i64| if x < 0 { (n + x).max(0) } else { x.min(n) };
                let (a, b) = (fix(a), fix(b));
                if a < b {
                    raw[a as usize..b as usize].to_vec()
                } else {
                    vec![]
                }
            };
            Ok(if steps < 0 {
                let mut v = slice(-steps, n);
                v.extend(std::iter::repeat_n(None, (-steps).min(n) as usize));
                v
            } else {
                let mut v = vec![None; steps.min(n) as usize];
                v.extend(slice(0, -steps));
                v
            })
        },
    )
}

pub(super) fn integral_by_interval(c: &mut Call<'_, '_>) -> Result<Value, String> {
    let unit = c.str("intervalUnit")?;
    let dur = crate::time::offset(&unit)
        .ok_or_else(|| format!("integralByInterval: bad interval '{unit}'"))?
        .abs();
    if dur == 0 {
        return Err("integer division or modulo by zero".into());
    }
    let start_time = c.ctx.from;
    derived(
        c,
        "integralByInterval",
        &unit.clone(),
        |s| format!("integralByInterval({},'{unit}')", s.name),
        |s, pts| {
            let mut t = s.start;
            let mut cur = 0.0;
            Ok(pts
                .into_iter()
                .map(|v| {
                    if py_div(t - start_time, dur) != py_div(t - start_time - s.step, dur) {
                        cur = 0.0;
                    }
                    if let Some(x) = v {
                        cur += x;
                    }
                    t += s.step;
                    Some(cur)
                })
                .collect())
        },
    )
}

pub(super) fn log(c: &mut Call<'_, '_>) -> Result<Value, String> {
    let b = c.get("base").clone();
    let base = c.num("base")?;
    if base <= 0.0 || base == 1.0 {
        return Err(format!(
            "log: a base of {} is outside the logarithm's domain",
            b.py_str()
        ));
    }
    let bs = b.py_str();
    derived(
        c,
        "log",
        &bs.clone(),
        |s| format!("log({}, {bs})", s.name),
        |_, pts| {
            Ok(pts
                .into_iter()
                .map(|v| v.filter(|&x| x > 0.0).map(|x| x.ln() / base.ln()))
                .collect())
        },
    )
}

/// A number of points that may stand for "no limit".
fn limit_of(c: &Call<'_, '_>) -> Result<f64, String> {
    c.num("limit")
}

pub(super) fn keep_last_value(c: &mut Call<'_, '_>) -> Result<Value, String> {
    let limit = limit_of(c)?;
    let mut l = c.series("seriesList")?;
    for s in &mut l {
        s.name = format!("keepLastValue({})", s.name);
        s.path_expression = s.name.clone();
        let pts = s.points().into_owned();
        let mut nones = 0usize;
        let mut last: Option<f64> = None;
        for (i, v) in pts.into_iter().enumerate() {
            match v {
                None => nones += 1,
                Some(x) => {
                    if nones > 0 && nones as f64 <= limit {
                        if let Some(l) = last {
                            for j in i - nones..i {
                                s.values[j] = Some(l);
                            }
                        }
                    }
                    nones = 0;
                    last = Some(x);
                }
            }
        }
        if nones > 0 && nones as f64 <= limit {
            if let Some(l) = last {
                let n = s.values.len();
                for j in n.saturating_sub(nones)..n {
                    s.values[j] = Some(l);
                }
            }
        }
    }
    Ok(Value::List(l))
}

pub(super) fn interpolate(c: &mut Call<'_, '_>) -> Result<Value, String> {
    let limit = limit_of(c)?;
    let mut l = c.series("seriesList")?;
    for s in &mut l {
        s.name = format!("interpolate({})", s.name);
        s.path_expression = s.name.clone();
        let pts = s.points().into_owned();
        let mut nones = 0usize;
        for (i, v) in pts.into_iter().enumerate() {
            s.values[i] = v;
            if i == 0 {
                continue;
            }
            match v {
                None => nones += 1,
                Some(_) if nones == 0 => {}
                Some(x) => {
                    let Some(before) = s.values[i - nones - 1] else {
                        nones = 0;
                        continue;
                    };
                    if nones as f64 <= limit {
                        for j in i - nones..i {
                            let k = (j - (i - nones - 1)) as f64;
                            s.values[j] = Some(before + k * (x - before) / (nones + 1) as f64);
                        }
                    }
                    nones = 0;
                }
            }
        }
    }
    Ok(Value::List(l))
}

/// Replace the raw values with `values` as graphite-web does (`extend`, then delete as many
/// from the front).
fn replace_values(s: &mut Series, values: Vec<Option<f64>>) {
    let n = values.len();
    s.values.extend(values);
    s.values.drain(..n.min(s.values.len()));
}

pub(super) fn transform_null(c: &mut Call<'_, '_>) -> Result<Value, String> {
    let d = c.get("default").clone();
    let default = c.num("default")?;
    let (reference, defaults): (bool, Option<Vec<Option<f64>>>) = match c.take("referenceSeries") {
        Value::List(l) if !l.is_empty() => (
            true,
            Some(
                rows(&l)
                    .iter()
                    .map(|row| row.iter().any(Option::is_some).then_some(default))
                    .collect(),
            ),
        ),
        // A list of lists (mapSeries'): graphite-web zips the lists, not points, so
        // every position some list has a series at gets the default.
        Value::Lists(ls) if !ls.is_empty() => (
            true,
            Some(vec![
                Some(default);
                ls.iter().map(Vec::len).max().unwrap_or(0)
            ]),
        ),
        _ => (false, None),
    };
    let mut l = c.series("seriesList")?;
    for s in &mut l {
        s.set_tag("transformNull", d.py_str());
        if reference {
            s.set_tag("referenceSeries", "1");
            s.name = format!(
                "transformNull({},{},referenceSeries)",
                s.name,
                fmt_g(default)
            );
        } else {
            s.name = format!("transformNull({},{})", s.name, fmt_g(default));
        }
        s.path_expression = s.name.clone();
        let pts = s.points().into_owned();
        let had_none = pts.iter().any(Option::is_none);
        let int_default = matches!(d, Value::Int(_) | Value::Bool(_));
        if had_none && int_default && s.vpp <= 1 && !s.ints {
            let mut mask = s.int_mask.clone().unwrap_or_else(|| vec![false; pts.len()]);
            mask.resize(pts.len(), false);
            for (m, v) in mask.iter_mut().zip(&pts) {
                if v.is_none() {
                    *m = true;
                }
            }
            s.int_mask = Some(mask);
        }
        s.ints &= !had_none || int_default;
        let values = match defaults.as_ref().filter(|d| !d.is_empty()) {
            Some(ds) => (0..pts.len().max(ds.len()))
                .map(|i| match pts.get(i).copied().flatten() {
                    Some(v) => Some(v),
                    None => ds.get(i).copied().flatten(),
                })
                .collect(),
            None => pts.iter().map(|v| Some(v.unwrap_or(default))).collect(),
        };
        replace_values(s, values);
    }
    Ok(Value::List(l))
}

pub(super) fn is_non_null(c: &mut Call<'_, '_>) -> Result<Value, String> {
    let mut l = c.series("seriesList")?;
    for s in &mut l {
        s.ints = true;
        s.set_tag("isNonNull", "1");
        s.name = format!("isNonNull({})", s.name);
        s.path_expression = s.name.clone();
        let values = s
            .points()
            .iter()
            .map(|v| Some(if v.is_some() { 1.0 } else { 0.0 }))
            .collect();
        replace_values(s, values);
    }
    Ok(Value::List(l))
}

pub(super) fn min_max(c: &mut Call<'_, '_>) -> Result<Value, String> {
    let mut l = c.series("seriesList")?;
    for s in &mut l {
        s.name = format!("minMax({})", s.name);
        s.path_expression = s.name.clone();
        let pts = s.points().into_owned();
        let min = safe_min(&pts).unwrap_or(0.0);
        let max = safe_max(&pts).unwrap_or(0.0);
        for (i, v) in pts.into_iter().enumerate() {
            if s.values[i].is_some() {
                let v = v.ok_or("unsupported operand type(s) for -: 'NoneType' and 'float'")?;
                s.values[i] = Some(if max - min == 0.0 {
                    0.0
                } else {
                    (v - min) / (max - min)
                });
            }
        }
    }
    Ok(Value::List(l))
}

/// An interval's seconds (graphite-web's parseTimeOffset, as `delta.seconds +
/// delta.days * 86400`).
pub(super) fn interval_of(name: &str, v: &Value) -> Result<i64, String> {
    match v {
        Value::Str(s) => {
            crate::time::offset(s).ok_or_else(|| format!("{name}: bad interval '{s}'"))
        }
        v => Err(format!(
            "{name}: the interval must be a string, not {}",
            v.kind()
        )),
    }
}

/// graphite-web's _summarizeValues: buckets of `interval` from `start` to `end`, each
/// `agg` of its points, None unless enough of them are known; and the end reached.
fn summarize_values(
    s: &Series,
    agg: Agg,
    interval: i64,
    start: i64,
    end: i64,
) -> (Vec<Option<f64>>, i64) {
    let pts = s.points();
    let n_ts = if s.step > 0 {
        ((s.end - s.start).max(0) + s.step - 1) / s.step
    } else {
        0
    };
    let n = (n_ts as usize).min(pts.len());
    let per = interval as f64 / s.step as f64;
    let ts = |i: usize| s.start + i as i64 * s.step;
    let mut out = Vec::new();
    let (mut i, mut t) = (0usize, start);
    while t < end {
        let mut first = i;
        let mut known = 0usize;
        while i < n && ts(i) < t + interval {
            if ts(i) <= t {
                first = i;
            }
            if ts(i) >= t && pts[i].is_some() {
                known += 1;
            }
            i += 1;
        }
        out.push(if xff_ok(known, per, s.xff) {
            agg.apply(&pts[first..i])
        } else {
            None
        });
        t += interval;
    }
    (out, t)
}

/// Buckets a request may make (each a point).
fn charge_buckets(c: &Call<'_, '_>, l: &[Series], interval: i64, what: &str) -> Result<(), String> {
    for s in l {
        let buckets = (i128::from(s.end) - i128::from(s.start)) / i128::from(interval.max(1)) + 2;
        c.ctx
            .limits
            .points(buckets, &format!("{what}({})", s.name))?;
    }
    Ok(())
}

pub(super) fn summarize(c: &mut Call<'_, '_>) -> Result<Value, String> {
    let spec = c.str("intervalString")?;
    let interval = interval_of("summarize", c.get("intervalString"))?;
    let func = c.get("func").clone();
    let align = c.truthy("alignToFrom");
    let l = c.series("seriesList")?;
    // graphite-web reads the function's name, and divides by the interval, per series:
    // no series, no error.
    if l.is_empty() {
        return Ok(Value::List(l));
    }
    let agg = agg_func(&func)?;
    if interval <= 0 {
        return Err(format!("summarize: the interval '{spec}' must be positive"));
    }
    charge_buckets(c, &l, interval, "summarize")?;
    let mut out = Vec::new();
    for mut s in l {
        let (start, end) = if align {
            (s.start, s.end)
        } else {
            (
                s.start - py_mod(s.start, interval),
                s.end - py_mod(s.end, interval) + interval,
            )
        };
        let (values, reached) = summarize_values(&s, agg, interval, start, end);
        let end = if align { reached } else { end };
        let ints = agg.int_result(s.ints);
        s.set_tag("summarize", spec.clone());
        s.set_tag("summarizeFunction", func.py_str());
        let name = format!(
            "summarize({}, \"{spec}\", \"{}\"{})",
            s.name,
            func.py_str(),
            if align { ", true" } else { "" }
        );
        let mut r = s.copy(name, start, end, interval, values);
        r.ints = ints;
        out.push(r);
    }
    Ok(Value::List(out))
}

/// The start of `t`'s year, month, ISO week (from weekday `wd`, 1 Monday), day, hour or
/// minute, in UTC.
fn align_start(t: i64, unit: &str, wd: i64) -> i64 {
    let day = t.div_euclid(86_400);
    let (y, m, _) = rrd::dump::civil_from_days(day);
    let m = i64::from(m);
    match unit {
        "years" => rrd::parsetime::days_from_civil(y, 1, 1) * 86_400,
        "months" => rrd::parsetime::days_from_civil(y, m, 1) * 86_400,
        "weeks" => {
            // 1970-01-01 was a Thursday (ISO weekday 4).
            let iso = (day + 3).rem_euclid(7) + 1;
            let mut back = iso - wd;
            if back < 0 {
                back += 7;
            }
            (day - back) * 86_400
        }
        "days" => day * 86_400,
        "hours" => t - t.rem_euclid(3600),
        "minutes" => t - t.rem_euclid(60),
        _ => t,
    }
}

/// graphite-web's getUnitString.
fn unit_string(s: &str) -> Result<&'static str, String> {
    Ok(if s.starts_with('s') {
        "seconds"
    } else if s.starts_with("min") {
        "minutes"
    } else if s.starts_with('h') {
        "hours"
    } else if s.starts_with('d') {
        "days"
    } else if s.starts_with('w') {
        "weeks"
    } else if s.starts_with("mon") {
        "months"
    } else if s.starts_with('y') {
        "years"
    } else {
        return Err(format!("Invalid offset unit '{s}'"));
    })
}

pub(super) fn smart_summarize(c: &mut Call<'_, '_>) -> Result<Value, String> {
    let spec = c.str("intervalString")?;
    let interval = interval_of("smartSummarize", c.get("intervalString"))?;
    let func = c.get("func").clone();
    let align = c.get("alignTo").clone();
    let mut l = c.series("seriesList")?;
    match &align {
        Value::Bool(_) | Value::None => {}
        Value::Str(a) => {
            let unit = unit_string(a)?;
            let wd = match a.chars().last() {
                Some(ch) if ch.is_alphabetic() => 1,
                Some(ch) => ch.to_digit(10).map(i64::from).ok_or("bad weekday")?,
                None => 1,
            };
            let from = align_start(c.ctx.from, unit, wd);
            l = c.first_over(from, c.ctx.until)?;
        }
        v => {
            return Err(format!(
                "smartSummarize: alignTo must be a string, not {}",
                v.kind()
            ))
        }
    }
    if l.is_empty() {
        return Ok(Value::List(l));
    }
    let agg = agg_func(&func)?;
    if interval <= 0 {
        return Err(format!(
            "smartSummarize: the interval '{spec}' must be positive"
        ));
    }
    charge_buckets(c, &l, interval, "smartSummarize")?;
    let mut out = Vec::new();
    for mut s in l {
        let (values, end) = summarize_values(&s, agg, interval, s.start, s.end);
        s.set_tag("smartSummarize", spec.clone());
        s.set_tag("smartSummarizeFunction", func.py_str());
        let name = format!(
            "smartSummarize({}, \"{spec}\", \"{}\")",
            s.name,
            func.py_str()
        );
        out.push(s.copy(name, s.start, end, interval, values));
    }
    Ok(Value::List(out))
}

pub(super) fn hitcount(c: &mut Call<'_, '_>) -> Result<Value, String> {
    let spec = c.str("intervalString")?;
    let interval = interval_of("hitcount", c.get("intervalString"))?;
    let align = c.truthy("alignToInterval");
    let mut l = c.series("seriesList")?;
    if interval <= 0 {
        return Err(format!("hitcount: the interval '{spec}' must be positive"));
    }
    if align {
        let unit = if interval >= 86_400 {
            86_400
        } else if interval >= 3600 {
            3600
        } else if interval >= 60 {
            60
        } else {
            1
        };
        let from = c.ctx.from - c.ctx.from.rem_euclid(unit);
        l = c.first_over(from, c.ctx.until)?;
        for s in &mut l {
            let n = py_div(s.end - s.start, interval);
            s.end = s.start + n * interval + interval;
        }
    }
    charge_buckets(c, &l, interval, "hitcount")?;
    let mut out = Vec::new();
    for mut s in l {
        let values = hitcount_values(&s, interval)?;
        let count = values.len() as i64;
        let start = s.end - count * interval;
        s.set_tag("hitcount", spec.clone());
        let name = format!(
            "hitcount({}, \"{spec}\"{})",
            s.name,
            if align { ", true" } else { "" }
        );
        let mut r = s.copy(name, start, s.end, interval, values);
        r.ints = s.ints;
        out.push(r);
    }
    Ok(Value::List(out))
}

/// graphite-web's hitcount buckets: each point's value times the seconds of its step in a
/// bucket of `interval`, summed a bucket; the buckets end at the series' end.
fn hitcount_values(s: &Series, interval: i64) -> Result<Vec<Option<f64>>, String> {
    let step = s.step;
    let count = ((s.end - s.start) as f64 / interval as f64).ceil().max(0.0) as usize;
    let start = s.end - count as i64 * interval;
    let mut buckets: Vec<Vec<f64>> = vec![Vec::new(); count];
    // Python's list index: from the end when negative, an error past either end.
    let mut add = |b: i64, v: f64| -> Result<(), String> {
        let i = if b < 0 { b + count as i64 } else { b };
        match usize::try_from(i).ok().and_then(|i| buckets.get_mut(i)) {
            Some(slot) => {
                slot.push(v);
                Ok(())
            }
            None => Err("list index out of range (a value past the series' end)".into()),
        }
    };
    for (i, v) in s.points().iter().enumerate() {
        let Some(v) = *v else {
            continue;
        };
        let t0 = s.start + i as i64 * step;
        let (sb, sm) = (py_div(t0 - start, interval), py_mod(t0 - start, interval));
        let t1 = t0 + step;
        let (mut eb, mut em) = (py_div(t1 - start, interval), py_mod(t1 - start, interval));
        if eb >= count as i64 {
            eb = count as i64 - 1;
            em = interval;
        }
        if sb == eb {
            if sb >= 0 {
                add(sb, v * (em - sm) as f64)?;
            }
        } else {
            if sb >= 0 {
                add(sb, v * (interval - sm) as f64)?;
            }
            for j in sb + 1..eb {
                add(j, v * interval as f64)?;
            }
            if em > 0 {
                add(eb, v * em as f64)?;
            }
        }
    }
    Ok(buckets
        .into_iter()
        .map(|b| (!b.is_empty()).then(|| crate::series::py_sum(&b)))
        .collect())
}

/// A time shift's text and seconds: a bare interval is into the past.
fn shift_of(name: &str, v: &Value) -> Result<(String, i64), String> {
    let Value::Str(s) = v else {
        return Err(format!(
            "{name}: the shift must be a string, not {}",
            v.kind()
        ));
    };
    let s = if s.starts_with(|c: char| c.is_ascii_digit()) {
        format!("-{s}")
    } else {
        s.clone()
    };
    let d = crate::time::offset(&s).ok_or_else(|| format!("{name}: bad interval '{s}'"))?;
    Ok((s, d))
}

pub(super) fn time_shift(c: &mut Call<'_, '_>) -> Result<Value, String> {
    let (shift, delta) = shift_of("timeShift", c.get("timeShift"))?;
    let reset_end = c.truthy("resetEnd");
    let l = c.series("seriesList")?;
    let Some(first) = l.first() else {
        return Ok(Value::List(vec![]));
    };
    let mut out = Vec::new();
    for mut s in c.first_over(c.ctx.from + delta, c.ctx.until + delta)? {
        s.set_tag("timeShift", shift.clone());
        s.name = format!("timeShift({}, \"{shift}\")", s.name);
        s.end = if reset_end {
            first.end
        } else {
            s.end - s.start + first.start
        };
        s.start = first.start;
        out.push(s);
    }
    Ok(Value::List(out))
}

pub(super) fn time_stack(c: &mut Call<'_, '_>) -> Result<Value, String> {
    let (unit, delta) = shift_of("timeStack", c.get("timeShiftUnit"))?;
    let from = c.int("timeShiftStart")?;
    let to = c.int("timeShiftEnd")?;
    let l = match c.take("seriesList") {
        // mapSeries' list of lists: graphite-web fails on it only where it shifts.
        Value::Lists(l) if l.is_empty() || from >= to => return Ok(Value::List(vec![])),
        Value::List(l) => l,
        v => {
            return Err(format!(
                "timeStack: 'seriesList' must be series, not {}",
                v.kind()
            ))
        }
    };
    let Some(first) = l.first() else {
        return Ok(Value::List(vec![]));
    };
    let mut out = Vec::new();
    for shift in from..to {
        let d = delta * shift;
        for mut s in c.first_over(c.ctx.from + d, c.ctx.until + d)? {
            s.set_tag("timeShiftUnit", unit.clone());
            s.set_tag("timeShift", shift.to_string());
            s.name = format!("timeShift({}, {unit}, {shift})", s.name);
            s.path_expression = s.name.clone();
            s.start = first.start;
            s.end = first.end;
            out.push(s);
        }
    }
    Ok(Value::List(out))
}

/// A `date` parameter as graphite-web's parseATTime reads it (a string; anything else
/// is refused, as graphite-web fails on it).
pub(super) fn date_of(c: &Call<'_, '_>, p: &str) -> Result<i64, String> {
    match c.get(p) {
        Value::Str(s) => crate::time::parse(s, c.ctx.now).map_err(|e| format!("{}: {e}", c.name)),
        v => Err(format!(
            "{}: '{p}' must be a time string, not {}",
            c.name,
            v.kind()
        )),
    }
}

pub(super) fn time_slice(c: &mut Call<'_, '_>) -> Result<Value, String> {
    let start = date_of(c, "startSliceAt")?;
    let end = date_of(c, "endSliceAt")?;
    let from = c.ctx.from;
    let mut l = c.series("seriesList")?;
    for s in &mut l {
        s.set_tag("timeSliceStart", start.to_string());
        s.set_tag("timeSliceEnd", end.to_string());
        s.name = format!("timeSlice({}, {start}, {end})", s.name);
        let mut t = from;
        let step = s.step;
        in_place(s, |v| {
            let out = if v.is_none() || t < start || t > end {
                None
            } else {
                v
            };
            t += step;
            Ok(out)
        })?;
    }
    Ok(Value::List(l))
}

/// A series made from the request's range, a point every `step` seconds.
fn made(c: &mut Call<'_, '_>, f: impl Fn(i64) -> f64) -> Result<Value, String> {
    let name = c.str("name")?;
    let step = c.int("step")?;
    if step <= 0 {
        return Err(format!("{}: the step must be positive, not {step}", c.name));
    }
    let (from, until) = (c.ctx.from, c.ctx.until);
    let n = (until - from + step - 1).div_euclid(step).max(0);
    c.ctx.limits.points(i128::from(n), c.name)?;
    let values = (0..n).map(|i| Some(f(from + i * step))).collect();
    let mut s = Series::new(name, from, until, step, values);
    s.xff = xff_of(c.ctx, None);
    Ok(Value::List(vec![s]))
}

pub(super) fn time_function(c: &mut Call<'_, '_>) -> Result<Value, String> {
    made(c, |t| t as f64)
}

pub(super) fn sin_function(c: &mut Call<'_, '_>) -> Result<Value, String> {
    let amplitude = c.num("amplitude")?;
    made(c, move |t| (t as f64).sin() * amplitude)
}
