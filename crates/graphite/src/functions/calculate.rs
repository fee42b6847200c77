//! graphite-web's Calculate group: moving windows, percentiles, Holt-Winters, regression.

use super::*;

/// Python's `str.capitalize`: the first letter upper, the rest lower.
fn capitalize(s: &str) -> String {
    let mut c = s.chars();
    match c.next() {
        Some(f) => f.to_uppercase().collect::<String>() + &c.as_str().to_lowercase(),
        None => String::new(),
    }
}

/// A window's seconds and how it is written in names: an interval (`"5min"`, its absolute
/// seconds) or a count of points (times the largest step).
fn window_of(name: &str, w: &Value, l: &[Series]) -> Result<(i64, String, Option<i64>), String> {
    match w {
        Value::Str(s) => {
            let secs = crate::time::offset(s)
                .ok_or_else(|| format!("{name}: bad interval '{s}'"))?
                .abs();
            Ok((secs, format!("\"{s}\""), None))
        }
        v => {
            let n = v
                .number()
                .ok_or_else(|| format!("{name}: windowSize must be a number or an interval"))?
                .trunc() as i64;
            if n < 0 {
                return Err(format!("{name}: windowSize must not be negative"));
            }
            let step = l.iter().map(|s| s.step).max().unwrap_or(0);
            Ok((step * n, v.py_str(), Some(n)))
        }
    }
}

/// `movingWindow` and the `moving*` functions named after their aggregation.
pub(super) fn moving_window(c: &mut Call<'_, '_>) -> Result<Value, String> {
    let func = match c.name {
        "movingWindow" => c.get("func").clone(),
        n => Value::Str(n.trim_start_matches("moving").to_ascii_lowercase()),
    };
    let xff = c.opt_num("xFilesFactor")?;
    let window = c.take("windowSize");
    let l = c.series("seriesList")?;
    if l.is_empty() {
        return Ok(Value::List(l));
    }
    let (preview, label, count) = window_of(c.name, &window, &l)?;
    let agg = agg_func(&func)?;
    let tag = format!("moving{}", capitalize(&func.py_str()));
    let l = c.first_over(c.ctx.from - preview, c.ctx.until)?;
    let mut out = Vec::new();
    for mut s in l {
        let points = match count {
            Some(n) => n as usize,
            None => py_div(preview, s.step).max(0) as usize,
        };
        let n = s.values.len().saturating_sub(points) as u128;
        c.ctx.limits.work(
            n.saturating_mul(points as u128),
            &format!("{}({})", c.name, s.name),
        )?;
        s.set_tag(&tag, window.py_str());
        let need = xff.unwrap_or(s.xff);
        let mut known: Vec<Option<f64>> = Vec::with_capacity(points);
        let values = (points..s.values.len())
            .map(|i| {
                known.clear();
                known.extend(s.values[i - points..i].iter().filter(|v| v.is_some()));
                if !known.is_empty() && xff_ok(known.len(), points as f64, need) {
                    agg.apply(&known)
                } else {
                    None
                }
            })
            .collect();
        let name = format!("{tag}({},{label})", s.name);
        let mut r = s.copy(name, s.start + preview, s.end, s.step, values);
        r.ints = agg.int_result(s.ints);
        out.push(r);
    }
    Ok(Value::List(out))
}

pub(super) fn exponential_moving_average(c: &mut Call<'_, '_>) -> Result<Value, String> {
    let window = c.take("windowSize");
    let l = c.series("seriesList")?;
    if l.is_empty() {
        return Ok(Value::List(l));
    }
    let (preview, label, count) = window_of(c.name, &window, &l)?;
    let constant = 2.0 / (count.unwrap_or(preview) as f64 + 1.0);
    let l = c.first_over(c.ctx.from - preview, c.ctx.until)?;
    let mut out = Vec::new();
    for mut s in l {
        let points = match count {
            Some(n) => n as usize,
            None => py_div(preview, s.step).max(0) as usize,
        };
        s.set_tag("exponentialMovingAverage", window.py_str());
        let first = &s.values[..points.min(s.values.len())];
        let mut ema = safe_avg(first).unwrap_or(0.0);
        let mut values = vec![Some(py_round(ema, 6))];
        for v in s.values.iter().skip(points) {
            match v {
                Some(x) => {
                    ema = constant * x + (1.0 - constant) * ema;
                    values.push(Some(py_round(ema, 6)));
                }
                None => values.push(None),
            }
        }
        let name = format!("exponentialMovingAverage({},{label})", s.name);
        out.push(s.copy(name, s.start + preview, s.end, s.step, values));
    }
    Ok(Value::List(out))
}

/// A series' points.
type Points = Vec<Option<f64>>;

/// graphite-web's holtWintersAnalysis: (predictions, deviations) of each point.
fn holt_winters(s: &Series, season_secs: i64) -> Result<(Points, Points), String> {
    let (alpha, gamma, beta) = (0.1, 0.1, 0.0035);
    let season = py_div(season_secs, s.step);
    let pts = s.points();
    let mut intercepts: Vec<Option<f64>> = Vec::with_capacity(pts.len());
    let mut slopes: Vec<f64> = Vec::with_capacity(pts.len());
    let mut seasonals: Vec<f64> = Vec::with_capacity(pts.len());
    let mut predictions: Vec<Option<f64>> = Vec::with_capacity(pts.len());
    let mut deviations: Vec<Option<f64>> = Vec::with_capacity(pts.len());
    // A season ago; graphite-web fails where that is not yet known (a season shorter than
    // two steps).
    let back = |v: &[f64], i: i64| -> Result<f64, String> {
        let j = i - season;
        if j < 0 {
            return Ok(0.0);
        }
        v.get(j as usize)
            .copied()
            .ok_or_else(|| "list index out of range (a seasonality shorter than two steps)".into())
    };
    let mut next_pred: Option<f64> = None;
    for (i, actual) in pts.iter().enumerate() {
        let i64i = i as i64;
        let Some(actual) = *actual else {
            intercepts.push(None);
            slopes.push(0.0);
            seasonals.push(0.0);
            predictions.push(next_pred);
            deviations.push(Some(0.0));
            next_pred = None;
            continue;
        };
        let (last_intercept, last_slope, prediction) = if i == 0 {
            (actual, 0.0, Some(actual))
        } else {
            let li = intercepts[i - 1].unwrap_or(actual);
            (li, slopes[i - 1], next_pred)
        };
        let last_seasonal = back(&seasonals, i64i)?;
        let next_last_seasonal = back(&seasonals, i64i + 1)?;
        let last_dev = if i64i - season < 0 {
            0.0
        } else {
            deviations
                .get((i64i - season) as usize)
                .copied()
                .flatten()
                .ok_or_else(|| {
                    "list index out of range (a seasonality shorter than a step)".to_string()
                })?
        };
        let intercept =
            alpha * (actual - last_seasonal) + (1.0 - alpha) * (last_intercept + last_slope);
        let slope = beta * (intercept - last_intercept) + (1.0 - beta) * last_slope;
        let seasonal = gamma * (actual - intercept) + (1.0 - gamma) * last_seasonal;
        next_pred = Some(intercept + slope + next_last_seasonal);
        let deviation =
            gamma * (actual - prediction.unwrap_or(0.0)).abs() + (1.0 - gamma) * last_dev;
        intercepts.push(Some(intercept));
        slopes.push(slope);
        seasonals.push(seasonal);
        predictions.push(prediction);
        deviations.push(Some(deviation));
    }
    Ok((predictions, deviations))
}

/// The interval parameter `p`'s seconds.
fn secs_of(c: &Call<'_, '_>, p: &str) -> Result<i64, String> {
    transform::interval_of(c.name, c.get(p))
}

/// Each series of the first argument over the bootstrap and the range, with its
/// predictions and deviations for the range alone (and the tags graphite-web's analysis
/// leaves on it).
fn analysed(c: &mut Call<'_, '_>) -> Result<Vec<(Series, Points, Points, i64)>, String> {
    let boot = secs_of(c, "bootstrapInterval")?;
    let season = secs_of(c, "seasonality")?;
    let l = c.first_over(c.ctx.from - boot, c.ctx.until)?;
    let mut out = Vec::new();
    for mut s in l {
        if s.step == 0 {
            return Err("integer division or modulo by zero".into());
        }
        c.ctx.limits.work(
            s.values.len() as u128 * 8,
            &format!("{}({})", c.name, s.name),
        )?;
        let (p, d) = holt_winters(&s, season)?;
        s.set_tag("holtWintersForecast", "1");
        s.set_tag("holtWintersDeviation", "1");
        let skip = py_div(boot, s.step).max(0) as usize;
        let p = p.get(skip..).map(<[_]>::to_vec).unwrap_or_default();
        let d = d.get(skip..).map(<[_]>::to_vec).unwrap_or_default();
        out.push((s, p, d, boot));
    }
    Ok(out)
}

pub(super) fn holt_winters_forecast(c: &mut Call<'_, '_>) -> Result<Value, String> {
    let mut out = Vec::new();
    for (s, p, _, boot) in analysed(c)? {
        let mut r = Series::new(
            format!("holtWintersForecast({})", s.name),
            s.start + boot,
            s.end,
            s.step,
            p,
        );
        r.tags = s.tags.clone();
        r.xff = s.xff;
        out.push(r);
    }
    Ok(Value::List(out))
}

/// The lower and upper confidence bands of each series, in that order.
fn bands(c: &mut Call<'_, '_>) -> Result<Vec<Series>, String> {
    let delta = c.num("delta")?;
    let mut out = Vec::new();
    for (mut s, p, d, boot) in analysed(c)? {
        let (mut lower, mut upper) = (Vec::new(), Vec::new());
        for (i, f) in p.iter().enumerate() {
            match (*f, d.get(i).copied().flatten()) {
                (Some(f), Some(dev)) => {
                    upper.push(Some(f + delta * dev));
                    lower.push(Some(f - delta * dev));
                }
                _ => {
                    upper.push(None);
                    lower.push(None);
                }
            }
        }
        s.set_tag("holtWintersConfidenceUpper", "1");
        s.set_tag("holtWintersConfidenceLower", "1");
        let start = s.start + boot;
        for (kind, values) in [("Lower", lower), ("Upper", upper)] {
            let mut r = Series::new(
                format!("holtWintersConfidence{kind}({})", s.name),
                start,
                s.end,
                s.step,
                values,
            );
            r.tags = s.tags.clone();
            r.xff = s.xff;
            r.path_expression = s.path_expression.clone();
            out.push(r);
        }
    }
    Ok(out)
}

pub(super) fn holt_winters_confidence_bands(c: &mut Call<'_, '_>) -> Result<Value, String> {
    bands(c).map(Value::List)
}

pub(super) fn holt_winters_confidence_area(c: &mut Call<'_, '_>) -> Result<Value, String> {
    let mut b = bands(c)?;
    if b.len() != 2 {
        return Err("areaBetween series argument must reference *exactly* 2 series".into());
    }
    let name = format!("holtWintersConfidenceArea({})", b[1].path_expression);
    let tags = b[1].tags.clone();
    tags.borrow_mut().retain(|(k, _)| k != "areaBetween");
    crate::series::set_tag(&mut tags.borrow_mut(), "holtWintersConfidenceArea", "1");
    for s in &mut b {
        s.tags = tags.clone();
        s.name = name.clone();
        s.path_expression = name.clone();
    }
    Ok(Value::List(b))
}

pub(super) fn holt_winters_aberration(c: &mut Call<'_, '_>) -> Result<Value, String> {
    let l = c.series("seriesList")?;
    let b = bands(c)?;
    let mut out = Vec::new();
    for mut s in l {
        let find = |kind: &str| {
            let n = format!("holtWintersConfidence{kind}({})", s.name);
            b.iter()
                .rev()
                .find(|x| x.name == n)
                .map(|x| x.values.clone())
                .ok_or_else(|| format!("holtWintersAberration: no band '{n}'"))
        };
        let (lower, upper) = (find("Lower")?, find("Upper")?);
        let mut values = Vec::with_capacity(s.values.len());
        // graphite-web's zeros are Python ints (`aberration.append(0)`).
        let mut zeros = Vec::with_capacity(s.values.len());
        for i in 0..s.point_count() {
            let v = s.values[i];
            let band = |b: &[Option<f64>]| {
                b.get(i).copied().ok_or_else(|| {
                    "list index out of range (a band is shorter than its series)".to_string()
                })
            };
            let d = match v {
                None => None,
                Some(x) => match (band(&upper)?, band(&lower)?) {
                    (Some(u), _) if x > u => Some(x - u),
                    (_, Some(lo)) if x < lo => Some(x - lo),
                    _ => None,
                },
            };
            zeros.push(d.is_none());
            values.push(Some(d.unwrap_or(0.0)));
        }
        s.set_tag("holtWintersAberration", "1");
        let mut r = Series::new(
            format!("holtWintersAberration({})", s.name),
            s.start,
            s.end,
            s.step,
            values,
        );
        r.tags = s.tags.clone();
        r.xff = s.xff;
        r.int_mask = Some(zeros);
        out.push(r);
    }
    Ok(Value::List(out))
}

pub(super) fn linear_regression(c: &mut Call<'_, '_>) -> Result<Value, String> {
    let from = match c.get("startSourceAt") {
        Value::None => c.ctx.from,
        _ => transform::date_of(c, "startSourceAt")?,
    };
    let until = match c.get("endSourceAt") {
        Value::None => c.ctx.until,
        _ => transform::date_of(c, "endSourceAt")?,
    };
    let l = c.series("seriesList")?;
    let sources = c.first_over(from, until)?;
    let mut out = Vec::new();
    for (src, mut s) in sources.iter().zip(l) {
        s.set_tag("linearRegressions", format!("{from}, {until}"));
        let name = format!("linearRegression({}, {from}, {until})", s.name);
        let Some((factor, offset)) = regression(src) else {
            continue;
        };
        let values = (0..s.values.len())
            .map(|i| Some(offset + (s.start + i as i64 * s.step) as f64 * factor))
            .collect();
        let mut r = Series::new(name, s.start, s.end, s.step, values);
        r.tags = s.tags.clone();
        r.xff = s.xff;
        out.push(r);
    }
    Ok(Value::List(out))
}

/// graphite-web's _linearRegressionAnalysis: (factor, offset) of the least-squares line.
fn regression(s: &Series) -> Option<(f64, f64)> {
    let pts = s.points();
    let known: Vec<(i64, f64)> = pts
        .iter()
        .enumerate()
        .filter_map(|(i, v)| v.map(|v| (i as i64, v)))
        .collect();
    let n = known.len() as i64;
    let sum_i: i64 = known.iter().map(|(i, _)| i).sum();
    let sum_v = known.iter().fold(0.0, |a, (_, v)| a + v);
    let sum_ii: i64 = known.iter().map(|(i, _)| i * i).sum();
    let sum_iv = known.iter().fold(0.0, |a, (i, v)| a + *i as f64 * v);
    let den = (n * sum_ii - sum_i * sum_i) as f64;
    if den == 0.0 {
        return None;
    }
    let factor = (n as f64 * sum_iv - sum_i as f64 * sum_v) / den / s.step as f64;
    let offset = (sum_ii as f64 * sum_v - sum_iv * sum_i as f64) / den - factor * s.start as f64;
    Some((factor, offset))
}

pub(super) fn n_percentile(c: &mut Call<'_, '_>) -> Result<Value, String> {
    let v = c.get("n").clone();
    let n = c.num("n")?;
    if n == 0.0 {
        return Err("The requested percent is required to be greater than 0".into());
    }
    let l = c.series("seriesList")?;
    let mut out = Vec::new();
    for mut s in l {
        let sorted: Vec<Option<f64>> = s.points().iter().filter(|v| v.is_some()).copied().collect();
        if sorted.is_empty() {
            continue;
        }
        if let Some(p) = percentile(&sorted, n, false) {
            s.set_tag("nPercentile", v.py_str());
            let name = format!("nPercentile({}, {})", s.name, fmt_g(n));
            let count = ((s.end - s.start) as f64 / s.step as f64).trunc().max(0.0) as usize;
            let mut r = s.copy(name, s.start, s.end, s.step, vec![Some(p); count]);
            r.ints = s.ints;
            out.push(r);
        }
    }
    Ok(Value::List(out))
}

pub(super) fn stdev(c: &mut Call<'_, '_>) -> Result<Value, String> {
    let pv = c.get("points").clone();
    let points = c.int("points")?;
    // Python's series[index - 2.0] fails once a point leaves the window.
    let float = c.index("points").err();
    let tolerance = c.num("windowTolerance")?;
    if points == 0 {
        return Err("float division by zero".into());
    }
    let l = c.series("seriesList")?;
    let mut out = Vec::new();
    for mut s in l {
        s.set_tag("stdev", pv.py_str());
        let name = format!("stdev({},{points})", s.name);
        let pts = s.points();
        let (mut valid, mut sum, mut sq) = (0i64, 0.0f64, 0.0f64);
        let mut values = Vec::with_capacity(pts.len());
        for (i, v) in pts.iter().enumerate() {
            let i = i as i64;
            let dropped = if i < points {
                None
            } else if let Some(e) = &float {
                return Err(e.clone());
            } else {
                usize::try_from(i - points)
                    .ok()
                    .and_then(|j| s.values.get(j))
                    .copied()
                    .flatten()
            };
            if let Some(d) = dropped {
                valid -= 1;
                sum -= d;
                sq -= py_pow(d, 2.0);
            }
            if let Some(x) = v {
                valid += 1;
                sum += x;
                sq += py_pow(*x, 2.0);
            }
            values.push(if valid > 0 && valid as f64 / points as f64 >= tolerance {
                let r = (valid as f64 * sq - py_pow(sum, 2.0)).sqrt() / valid as f64;
                (!r.is_nan()).then_some(r)
            } else {
                None
            });
        }
        out.push(s.copy(name, s.start, s.end, s.step, values));
    }
    Ok(Value::List(out))
}

pub(super) fn aggregate_line(c: &mut Call<'_, '_>) -> Result<Value, String> {
    let func = c.get("func").clone();
    let agg = agg_func(&func)?;
    let keep = c.truthy("keepStep");
    let l = c.series("seriesList")?;
    let mut out = Vec::new();
    for s in l {
        let (v, int) = agg_of_series(agg, &s);
        let text = match v {
            Some(x) => fmt_g(x),
            None => "None".into(),
        };
        let name = format!("aggregateLine({}, {text})", s.name);
        if keep {
            let n = s.values.len();
            let mut r = s.copy(name, s.start, s.end, s.step, vec![v; n]);
            r.ints = int;
            out.push(r);
        } else {
            let value = match v {
                None => Value::None,
                Some(x) if int && x.fract() == 0.0 => Value::Int(x as i64),
                Some(x) => Value::Float(x),
            };
            let mut r = special::constant(c.ctx, value)?;
            r.name = name.clone();
            r.path_expression = name;
            out.push(r);
        }
    }
    Ok(Value::List(out))
}

pub(super) fn identity(c: &mut Call<'_, '_>) -> Result<Value, String> {
    let name = c.str("name")?;
    let (from, until) = (c.ctx.from, c.ctx.until);
    let n = (until - from + 59).div_euclid(60).max(0);
    c.ctx.limits.points(i128::from(n), "identity")?;
    let values = (0..n).map(|i| Some((from + i * 60) as f64)).collect();
    let mut s = Series::new(name.clone(), from, until, 60, values);
    s.xff = xff_of(c.ctx, None);
    s.ints = true;
    s.path_expression = format!("identity(\"{name}\")");
    Ok(Value::List(vec![s]))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_capitalize_as_python() {
        assert_eq!(capitalize("average"), "Average");
        assert_eq!(capitalize("rangeOf"), "Rangeof");
        assert_eq!(capitalize("avg_zero"), "Avg_zero");
    }
}
