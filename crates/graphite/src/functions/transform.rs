//! graphite-web's Transform group: each series' values changed, one series at a time.

use super::*;

/// `scale`.
pub(super) fn scale(a: &Args<'_, '_>) -> Result<Vec<Series>, String> {
    let f = a.num(1, "factor")?;
    map(
        a.series(0)?,
        |s| format!("scale({},{})", s.name, fmt_g(f)),
        |v| v.map(|x| x * f),
    )
}

/// `offset`.
pub(super) fn offset(a: &Args<'_, '_>) -> Result<Vec<Series>, String> {
    let f = a.num(1, "factor")?;
    map(
        a.series(0)?,
        |s| format!("offset({},{})", s.name, fmt_g(f)),
        |v| v.map(|x| x + f),
    )
}

/// `absolute`.
pub(super) fn absolute(a: &Args<'_, '_>) -> Result<Vec<Series>, String> {
    map(
        a.series(0)?,
        |s| format!("absolute({})", s.name),
        |v| v.map(f64::abs),
    )
}

/// `scaleToSeconds`.
pub(super) fn scale_to_seconds(a: &Args<'_, '_>) -> Result<Vec<Series>, String> {
    let secs = a.num(1, "seconds")?;
    Ok(a.series(0)?
        .into_iter()
        .map(|s| {
            let f = secs / s.step as f64;
            let vals = s.values.iter().map(|v| v.map(|x| x * f)).collect();
            s.with(format!("scaleToSeconds({},{})", s.name, secs as i64), vals)
        })
        .collect())
}

/// `transformNull`.
pub(super) fn transform_null(a: &Args<'_, '_>) -> Result<Vec<Series>, String> {
    let d = a.num_or(1, "default", 0.0)?;
    map(
        a.series(0)?,
        |s| format!("transformNull({},{})", s.name, fmt_g(d)),
        |v| Some(v.unwrap_or(d)),
    )
}

/// `keepLastValue`.
pub(super) fn keep_last_value(a: &Args<'_, '_>) -> Result<Vec<Series>, String> {
    let limit = a.num_or(1, "limit", f64::INFINITY)?;
    Ok(a.series(0)?
        .into_iter()
        .map(|s| {
            let mut vals = s.values.clone();
            let mut last: Option<f64> = None;
            let mut gap_start = 0usize;
            let mut gap = 0usize;
            for i in 0..vals.len() {
                match vals[i] {
                    Some(x) => {
                        // A gap no longer than the limit is filled.
                        if gap > 0 && (gap as f64) <= limit {
                            if let Some(l) = last {
                                for v in &mut vals[gap_start..i] {
                                    *v = Some(l);
                                }
                            }
                        }
                        gap = 0;
                        last = Some(x);
                    }
                    None => {
                        if gap == 0 {
                            gap_start = i;
                        }
                        gap += 1;
                    }
                }
            }
            // A gap at the end is filled too, within the limit.
            if gap > 0 && (gap as f64) <= limit {
                if let Some(l) = last {
                    for v in &mut vals[gap_start..] {
                        *v = Some(l);
                    }
                }
            }
            s.with(format!("keepLastValue({})", s.name), vals)
        })
        .collect())
}

/// `derivative`.
pub(super) fn derivative(a: &Args<'_, '_>) -> Result<Vec<Series>, String> {
    Ok(a.series(0)?
        .into_iter()
        .map(|s| {
            let mut prev: Option<f64> = None;
            let vals = s
                .values
                .iter()
                .map(|&v| {
                    let out = match (prev, v) {
                        (Some(p), Some(x)) => Some(x - p),
                        _ => None,
                    };
                    prev = v;
                    out
                })
                .collect();
            s.with(format!("derivative({})", s.name), vals)
        })
        .collect())
}

/// `nonNegativeDerivative`, `perSecond`.
pub(super) fn non_negative_derivative(a: &Args<'_, '_>) -> Result<Vec<Series>, String> {
    let Args { name, .. } = *a;
    let max = a.opt_num(1, "maxValue")?;
    let min = a.opt_num(2, "minValue")?;
    let per_second = name == "perSecond";
    Ok(a.series(0)?
        .into_iter()
        .map(|s| {
            let mut prev: Option<f64> = None;
            let step = s.step as f64;
            let vals = s
                .values
                .iter()
                .map(|&v| {
                    let (d, p) = non_negative_delta(v, prev, max, min);
                    prev = p;
                    d.map(|d| {
                        if per_second {
                            (d / step * 1e6).round() / 1e6
                        } else {
                            d
                        }
                    })
                })
                .collect();
            s.with(format!("{name}({})", s.name), vals)
        })
        .collect())
}

/// `integral`.
pub(super) fn integral(a: &Args<'_, '_>) -> Result<Vec<Series>, String> {
    Ok(a.series(0)?
        .into_iter()
        .map(|s| {
            let mut cur = 0.0;
            let vals = s
                .values
                .iter()
                .map(|v| {
                    v.map(|x| {
                        cur += x;
                        cur
                    })
                })
                .collect();
            s.with(format!("integral({})", s.name), vals)
        })
        .collect())
}

/// `timeShift`.
pub(super) fn time_shift(a: &Args<'_, '_>) -> Result<Vec<Series>, String> {
    let Args { ctx, .. } = *a;
    let shift = a.string(1, "timeShift")?;
    let spec = if shift.starts_with(['+', '-']) {
        shift.clone()
    } else {
        format!("-{shift}")
    };
    let delta = crate::time::parse(&format!("now{spec}"), 0)
        .map_err(|_| format!("timeShift: bad shift '{shift}'"))?;
    let inner = ctx.over(ctx.from + delta, ctx.until + delta);
    let e = a.arg(0, "seriesList").ok_or("timeShift: no series")?;
    Ok(eval(&inner, e)?
        .into_iter()
        .map(|mut s| {
            s.name = format!("timeShift({}, \"{spec}\")", s.name);
            s.start -= delta;
            s.end -= delta;
            s
        })
        .collect())
}

/// `summarize`.
pub(super) fn summarize(a: &Args<'_, '_>) -> Result<Vec<Series>, String> {
    let Args { ctx, .. } = *a;
    let spec = a.string(1, "intervalString")?;
    let interval = interval_secs(&spec)?;
    let func = a.string_or(2, "func", "sum")?;
    if !is_agg(&func) {
        return Err(format!("summarize: unknown function '{func}'"));
    }
    let align = a.bool_or(3, "alignToFrom", false)?;
    let l = a.series(0)?;
    for s in &l {
        let buckets = (i128::from(s.end) - i128::from(s.start)) / i128::from(interval) + 2;
        ctx.limits
            .points(buckets, &format!("summarize({}, '{spec}')", s.name))?;
    }
    Ok(l.into_iter()
        .map(|s| summarize_series(&s, &spec, interval, &func, align))
        .collect())
}

/// `hitcount`.
pub(super) fn hitcount(a: &Args<'_, '_>) -> Result<Vec<Series>, String> {
    let Args { ctx, .. } = *a;
    let spec = a.string(1, "intervalString")?;
    let interval = interval_secs(&spec)?;
    let align = a.bool_or(2, "alignToInterval", false)?;
    let l = if align {
        // Fetched again from the start of the from's day, hour or minute.
        let unit = if interval >= 86_400 {
            86_400
        } else if interval >= 3600 {
            3600
        } else if interval >= 60 {
            60
        } else {
            1
        };
        let inner = ctx.over(ctx.from - ctx.from.rem_euclid(unit), ctx.until);
        let mut l = eval(&inner, a.need(0, "seriesList")?)?;
        for s in &mut l {
            let n = (s.end - s.start) / interval;
            s.end = s.start + n * interval + interval;
        }
        l
    } else {
        a.series(0)?
    };
    for s in &l {
        let buckets = (i128::from(s.end) - i128::from(s.start)) / i128::from(interval) + 2;
        ctx.limits
            .points(buckets, &format!("hitcount({}, '{spec}')", s.name))?;
    }
    Ok(l.iter()
        .map(|s| hitcount_series(s, &spec, interval, align))
        .collect())
}

/// graphite-web's summarize: buckets of `interval` (aligned to it, or to the series'
/// start), each `func` of its points, None unless enough are known.
pub(super) fn summarize_series(
    s: &Series,
    spec: &str,
    interval: i64,
    func: &str,
    align: bool,
) -> Series {
    let (start, mut end) = if align {
        (s.start, s.end)
    } else {
        (
            s.start - s.start.rem_euclid(interval),
            s.end - s.end.rem_euclid(interval) + interval,
        )
    };
    let n = s
        .values
        .len()
        .min(((s.end - s.start).max(0) / s.step.max(1)) as usize);
    let per = interval as f64 / s.step as f64;
    let ts = |i: usize| s.start + i as i64 * s.step;
    let mut vals = Vec::new();
    let (mut i, mut t) = (0usize, start);
    while t < end {
        let mut first = i;
        let mut known = 0usize;
        while i < n && ts(i) < t + interval {
            if ts(i) <= t {
                first = i;
            }
            if ts(i) >= t && s.values[i].is_some() {
                known += 1;
            }
            i += 1;
        }
        let group = &s.values[first.min(i)..i];
        let k: Vec<f64> = group.iter().flatten().copied().collect();
        vals.push(if known > 0 && known as f64 / per >= s.xff {
            agg(func, &k, group)
        } else {
            None
        });
        t += interval;
    }
    if align {
        end = t;
    }
    let name = format!(
        "summarize({}, \"{spec}\", \"{func}\"{})",
        s.name,
        if align { ", true" } else { "" }
    );
    let mut r = s.with(name, vals);
    r.start = start;
    r.end = end;
    r.step = interval;
    r
}

/// graphite-web's hitcount: each point's value times the seconds of its step that fall in a
/// bucket of `interval`, summed a bucket; buckets end at the series' end.
pub(super) fn hitcount_series(s: &Series, spec: &str, interval: i64, align: bool) -> Series {
    let step = s.step;
    let count = ((s.end - s.start) as f64 / interval as f64).ceil().max(0.0) as usize;
    let start = s.end - count as i64 * interval;
    let mut buckets: Vec<Option<f64>> = vec![None; count];
    let mut add = |b: i64, v: f64| {
        if let Some(slot) = usize::try_from(b).ok().and_then(|b| buckets.get_mut(b)) {
            *slot = Some(slot.unwrap_or(0.0) + v);
        }
    };
    for (i, v) in s.values.iter().enumerate() {
        let Some(v) = *v else {
            continue;
        };
        let t0 = s.start + i as i64 * step;
        let (sb, sm) = (
            (t0 - start).div_euclid(interval),
            (t0 - start).rem_euclid(interval),
        );
        let t1 = t0 + step;
        let (mut eb, mut em) = (
            (t1 - start).div_euclid(interval),
            (t1 - start).rem_euclid(interval),
        );
        if eb >= count as i64 {
            eb = count as i64 - 1;
            em = interval;
        }
        if sb == eb {
            if sb >= 0 {
                add(sb, v * (em - sm) as f64);
            }
        } else {
            if sb >= 0 {
                add(sb, v * (interval - sm) as f64);
            }
            for j in sb + 1..eb {
                add(j, v * interval as f64);
            }
            if em > 0 {
                add(eb, v * em as f64);
            }
        }
    }
    let name = format!(
        "hitcount({}, \"{spec}\"{})",
        s.name,
        if align { ", true" } else { "" }
    );
    let mut r = s.with(name, buckets);
    r.start = start;
    r.step = interval;
    r
}

/// graphite-web's `_nonNegativeDelta`: (delta, the new previous value).
pub(super) fn non_negative_delta(
    v: Option<f64>,
    prev: Option<f64>,
    max: Option<f64>,
    min: Option<f64>,
) -> (Option<f64>, Option<f64>) {
    let Some(v) = v else {
        return (None, None);
    };
    if max.is_some_and(|m| v > m) || min.is_some_and(|m| v < m) {
        return (None, None);
    }
    let Some(p) = prev else {
        return (None, Some(v));
    };
    if v >= p {
        return (Some(v - p), Some(v));
    }
    if let Some(m) = max {
        return (Some(m + 1.0 + v - p - min.unwrap_or(0.0)), Some(v));
    }
    if let Some(m) = min {
        return (Some(v - m), Some(v));
    }
    (None, Some(v))
}
