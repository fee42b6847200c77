//! The render functions Grafana's users lean on, with graphite-web's names for their results
//! and its handling of None (read from its documentation and source; written here).

use super::expr::Expr;
use super::render::{agg, fmt_g, is_agg, Ctx, Series};
use regex::Regex;

/// Evaluate function `name` on its arguments.
pub fn call(
    ctx: &Ctx<'_>,
    name: &str,
    args: &[Expr],
    kwargs: &[(String, Expr)],
) -> Result<Vec<Series>, String> {
    let a = Args {
        ctx,
        name,
        args,
        kwargs,
    };
    match name {
        "alias" => {
            let mut l = a.series(0)?;
            let n = a.string(1, "newName")?;
            for s in &mut l {
                s.name = n.clone();
            }
            Ok(l)
        }
        "seriesByTag" => {
            let mut exprs = Vec::new();
            let mut quoted = Vec::new();
            for (i, _) in args.iter().enumerate() {
                let e = a.string(i, "tagExpressions")?;
                exprs.push(super::tags::Expr::parse(&e)?);
                quoted.push(format!("'{e}'"));
            }
            if !exprs.iter().any(super::tags::Expr::positive) {
                return Err(
                    "seriesByTag: at least one expression must select series by itself \
                     (tag=value or tag=~regex that does not match nothing)"
                        .into(),
                );
            }
            let expression = format!("seriesByTag({})", quoted.join(","));
            let leaves = ctx.g.leaves(ctx.d);
            let mut out = Vec::new();
            for path in leaves.keys().filter(|p| p.contains(';')) {
                let Ok(t) = super::tags::parse(path) else {
                    continue;
                };
                if exprs.iter().all(|e| e.matches(&t)) {
                    for mut s in ctx.fetch(path)? {
                        s.path_expression = expression.clone();
                        out.push(s);
                    }
                }
            }
            Ok(out)
        }
        "aliasByTags" => {
            let keys: Vec<Expr> = args.iter().skip(1).cloned().collect();
            Ok(a.series(0)?
                .into_iter()
                .map(|mut s| {
                    let t = super::tags::parse(&metric_of(&s.name)).ok();
                    let m = metric_of(&s.name);
                    let parts: Vec<&str> = m.split(';').next().unwrap_or("").split('.').collect();
                    s.name = keys
                        .iter()
                        .filter_map(|k| match k {
                            Expr::Num(n) => pick(&parts, *n as i64).map(str::to_string),
                            Expr::Str(tag) | Expr::Path(tag) => {
                                t.as_ref().and_then(|t| t.get(tag)).map(str::to_string)
                            }
                            _ => None,
                        })
                        .collect::<Vec<_>>()
                        .join(".");
                    s
                })
                .collect())
        }
        "aliasByNode" => {
            let nodes = a.ints_from(1)?;
            Ok(a.series(0)?
                .into_iter()
                .map(|mut s| {
                    let m = metric_of(&s.name);
                    let parts: Vec<&str> = m.split('.').collect();
                    s.name = nodes
                        .iter()
                        .filter_map(|&n| pick(&parts, n))
                        .collect::<Vec<_>>()
                        .join(".");
                    s
                })
                .collect())
        }
        "aliasByMetric" => Ok(a
            .series(0)?
            .into_iter()
            .map(|mut s| {
                let m = metric_of(&s.name);
                s.name = m.rsplit('.').next().unwrap_or(&m).to_string();
                s
            })
            .collect()),
        "aliasSub" => {
            let re = a.regex(1, "search")?;
            // Python's \1 backreferences as the regex crate's ${1}.
            let rep = backrefs(&a.string(2, "replace")?);
            Ok(a.series(0)?
                .into_iter()
                .map(|mut s| {
                    s.name = re.replace_all(&s.name, rep.as_str()).into_owned();
                    s
                })
                .collect())
        }
        "sumSeries" | "sum" => aggregate(a.all_series()?, "sum", "sumSeries"),
        "averageSeries" | "avg" => aggregate(a.all_series()?, "average", "averageSeries"),
        "maxSeries" => aggregate(a.all_series()?, "max", "maxSeries"),
        "minSeries" => aggregate(a.all_series()?, "min", "minSeries"),
        "diffSeries" => aggregate(a.all_series()?, "diff", "diffSeries"),
        "multiplySeries" => aggregate(a.all_series()?, "multiply", "multiplySeries"),
        "rangeOfSeries" => aggregate(a.all_series()?, "rangeOf", "rangeOfSeries"),
        "aggregate" => {
            let f = a.string(1, "func")?;
            let f = f.strip_suffix("Series").unwrap_or(&f).to_string();
            if !is_agg(&f) {
                return Err(format!("aggregate: unknown function '{f}'"));
            }
            aggregate(a.series(0)?, &f, &format!("{f}Series"))
        }
        "countSeries" => {
            let l = a.all_series()?;
            if l.is_empty() {
                return Ok(vec![]);
            }
            let name = format!("countSeries({})", path_expressions(&l));
            let (l, start, end, step) = normalize(l);
            let n = l.len() as f64;
            let len = l.iter().map(|s| s.values.len()).max().unwrap_or(0);
            Ok(vec![Series::new(
                name,
                start,
                end,
                step,
                vec![Some(n); len],
            )])
        }
        "divideSeries" => {
            let dividends = a.series(0)?;
            let divisors = a.series(1)?;
            if divisors.len() != 1 {
                return Err(format!(
                    "divideSeries: the divisor must be one series, not {}",
                    divisors.len()
                ));
            }
            let divisor = &divisors[0];
            Ok(dividends
                .into_iter()
                .map(|s| {
                    let name = format!("divideSeries({},{})", s.name, divisor.name);
                    let (l, start, end, step) = normalize(vec![s, divisor.clone()]);
                    let vals = zip_longest(&l, |row| match (row[0], row[1]) {
                        (Some(x), Some(y)) if y != 0.0 => Some(x / y),
                        _ => None,
                    });
                    Series::new(name, start, end, step, vals)
                })
                .collect())
        }
        "scale" => {
            let f = a.num(1, "factor")?;
            map(
                a.series(0)?,
                |s| format!("scale({},{})", s.name, fmt_g(f)),
                |v| v.map(|x| x * f),
            )
        }
        "offset" => {
            let f = a.num(1, "factor")?;
            map(
                a.series(0)?,
                |s| format!("offset({},{})", s.name, fmt_g(f)),
                |v| v.map(|x| x + f),
            )
        }
        "absolute" => map(
            a.series(0)?,
            |s| format!("absolute({})", s.name),
            |v| v.map(f64::abs),
        ),
        "scaleToSeconds" => {
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
        "transformNull" => {
            let d = a.num_or(1, "default", 0.0)?;
            map(
                a.series(0)?,
                |s| format!("transformNull({},{})", s.name, fmt_g(d)),
                |v| Some(v.unwrap_or(d)),
            )
        }
        "removeAboveValue" | "removeBelowValue" => {
            let n = a.num(1, "n")?;
            let above = name == "removeAboveValue";
            map(
                a.series(0)?,
                |s| format!("{name}({}, {})", s.name, fmt_g(n)),
                |v| v.filter(|&x| if above { x <= n } else { x >= n }),
            )
        }
        "keepLastValue" => {
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
        "derivative" => Ok(a
            .series(0)?
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
            .collect()),
        "nonNegativeDerivative" | "perSecond" => {
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
        "integral" => Ok(a
            .series(0)?
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
            .collect()),
        "constantLine" => {
            let v = a.num(0, "value")?;
            let (from, until) = (ctx.from, ctx.until);
            let step = ((until - from) / 2).max(1);
            Ok(vec![Series::new(
                super::render::py_float(v),
                from,
                until,
                step,
                vec![Some(v); 3],
            )])
        }
        "consolidateBy" => {
            let f = a.string(1, "consolidationFunc")?;
            if !matches!(
                f.as_str(),
                "sum" | "average" | "avg" | "avg_zero" | "min" | "max" | "first" | "last"
            ) {
                return Err(format!("consolidateBy: unknown function '{f}'"));
            }
            Ok(a.series(0)?
                .into_iter()
                .map(|mut s| {
                    s.consolidation = f.clone();
                    s.name = format!("consolidateBy({},\"{f}\")", s.name);
                    s
                })
                .collect())
        }
        "sortByName" => {
            let natural = a.bool_or(1, "natural", false)?;
            let reverse = a.bool_or(2, "reverse", false)?;
            let mut l = a.series(0)?;
            if natural {
                l.sort_by(|x, y| natural_cmp(&x.name, &y.name));
            } else {
                l.sort_by(|x, y| x.name.cmp(&y.name));
            }
            if reverse {
                l.reverse();
            }
            Ok(l)
        }
        "sortByMaxima" => {
            let mut l = a.series(0)?;
            l.sort_by(|x, y| {
                let m = |s: &Series| s.values.iter().flatten().copied().fold(f64::MIN, f64::max);
                m(y).total_cmp(&m(x))
            });
            Ok(l)
        }
        "limit" => {
            let n = a.num(1, "n")? as usize;
            let mut l = a.series(0)?;
            l.truncate(n);
            Ok(l)
        }
        "exclude" | "grep" => {
            let re = a.regex(1, "pattern")?;
            let keep = name == "grep";
            Ok(a.series(0)?
                .into_iter()
                .filter(|s| re.is_match(&s.name) == keep)
                .collect())
        }
        "highestCurrent" | "highestAverage" | "highestMax" | "lowestCurrent" | "lowestAverage"
        | "highest" | "lowest" => {
            let n = a.num_or(1, "n", 1.0)? as usize;
            let func = match name {
                "highestCurrent" | "lowestCurrent" => "current".to_string(),
                "highestMax" => "max".to_string(),
                "highestAverage" | "lowestAverage" => "average".to_string(),
                _ => a.string_or(2, "func", "average")?,
            };
            if !is_agg(&func) {
                return Err(format!("{name}: unknown function '{func}'"));
            }
            let key = |s: &Series| {
                let known: Vec<f64> = s.values.iter().flatten().copied().collect();
                agg(&func, &known, &s.values)
            };
            // Series without a value are left out, as graphite-web does.
            let mut l: Vec<(f64, Series)> = a
                .series(0)?
                .into_iter()
                .filter_map(|s| key(&s).map(|k| (k, s)))
                .collect();
            if name.starts_with("highest") {
                l.sort_by(|x, y| y.0.total_cmp(&x.0));
            } else {
                l.sort_by(|x, y| x.0.total_cmp(&y.0));
            }
            Ok(l.into_iter().take(n).map(|(_, s)| s).collect())
        }
        "groupByNode" | "groupByNodes" => {
            let (nodes, callback) = if name == "groupByNode" {
                (
                    vec![a.int(1, "nodeNum")?],
                    a.string_or(2, "callback", "average")?,
                )
            } else {
                let cb = a.string(1, "callback")?;
                (a.ints_from(2)?, cb)
            };
            let cb = callback
                .strip_suffix("Series")
                .unwrap_or(&callback)
                .to_string();
            if !is_agg(&cb) {
                return Err(format!("{name}: unknown function '{callback}'"));
            }
            aggregate_groups(a.series(0)?, &cb, |name| {
                let m = metric_of(name);
                let parts: Vec<&str> = m.split('.').collect();
                nodes
                    .iter()
                    .filter_map(|&n| pick(&parts, n))
                    .collect::<Vec<_>>()
                    .join(".")
            })
        }
        "sumSeriesWithWildcards" | "averageSeriesWithWildcards" => {
            let positions = a.ints_from(1)?;
            let f = if name.starts_with("sum") {
                "sum"
            } else {
                "average"
            };
            aggregate_groups(a.series(0)?, f, |name| {
                name.split('.')
                    .enumerate()
                    .filter(|(i, _)| !positions.contains(&(*i as i64)))
                    .map(|(_, p)| p)
                    .collect::<Vec<_>>()
                    .join(".")
            })
        }
        "asPercent" => {
            let l = a.series(0)?;
            let total = match a.arg(1, "total") {
                None | Some(Expr::None) => None,
                Some(Expr::Num(t)) => Some(Total::Num(*t)),
                Some(e) => Some(Total::Series(ctx.eval(e)?)),
            };
            as_percent(l, total)
        }
        "timeShift" => {
            let shift = a.string(1, "timeShift")?;
            let spec = if shift.starts_with(['+', '-']) {
                shift.clone()
            } else {
                format!("-{shift}")
            };
            let delta = super::time::parse(&format!("now{spec}"), 0)
                .map_err(|_| format!("timeShift: bad shift '{shift}'"))?;
            let inner = Ctx {
                d: ctx.d,
                g: ctx.g,
                from: ctx.from + delta,
                until: ctx.until + delta,
                now: ctx.now,
                budget: ctx.budget,
            };
            let e = a.arg(0, "seriesList").ok_or("timeShift: no series")?;
            Ok(inner
                .eval(e)?
                .into_iter()
                .map(|mut s| {
                    s.name = format!("timeShift({}, \"{spec}\")", s.name);
                    s.start -= delta;
                    s.end -= delta;
                    s
                })
                .collect())
        }
        "summarize" => {
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
                ctx.budget
                    .points(buckets, &format!("summarize({}, '{spec}')", s.name))?;
            }
            Ok(l.into_iter()
                .map(|s| summarize(&s, &spec, interval, &func, align))
                .collect())
        }
        "hitcount" => {
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
                let inner = Ctx {
                    d: ctx.d,
                    g: ctx.g,
                    from: ctx.from - ctx.from.rem_euclid(unit),
                    until: ctx.until,
                    now: ctx.now,
                    budget: ctx.budget,
                };
                let mut l = inner.eval(a.need(0, "seriesList")?)?;
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
                ctx.budget
                    .points(buckets, &format!("hitcount({}, '{spec}')", s.name))?;
            }
            Ok(l.iter()
                .map(|s| hitcount(s, &spec, interval, align))
                .collect())
        }
        "movingAverage" | "movingSum" | "movingMin" | "movingMax" | "movingMedian"
        | "movingWindow" => {
            let (func, xff_at) = if name == "movingWindow" {
                (a.string_or(2, "func", "average")?, 3)
            } else {
                (name.trim_start_matches("moving").to_ascii_lowercase(), 2)
            };
            if !is_agg(&func) {
                return Err(format!("{name}: unknown function '{func}'"));
            }
            let xff = a.opt_num(xff_at, "xFilesFactor")?;
            let window = a.need(1, "windowSize")?.clone();
            let first = a.series(0)?;
            if first.is_empty() {
                return Ok(first);
            }
            let (preview, label) = match &window {
                Expr::Str(w) => (interval_secs(w)?, format!("\"{w}\"")),
                Expr::Num(n) if *n >= 0.0 && n.fract() == 0.0 => {
                    let step = first.iter().map(|s| s.step).max().unwrap_or(1);
                    (step * *n as i64, format!("{}", *n as i64))
                }
                e => return Err(format!("{name}: bad windowSize {e:?}")),
            };
            let inner = Ctx {
                d: ctx.d,
                g: ctx.g,
                from: ctx.from - preview,
                until: ctx.until,
                now: ctx.now,
                budget: ctx.budget,
            };
            let tag = format!("moving{}{}", func[..1].to_ascii_uppercase(), &func[1..]);
            let l = inner.eval(a.need(0, "seriesList")?)?;
            for s in &l {
                // Each point visits its window.
                let points = match &window {
                    Expr::Num(n) => *n as u128,
                    _ => (preview / s.step.max(1)).max(0) as u128,
                };
                let n = (s.values.len() as u128).saturating_sub(points);
                ctx.budget
                    .work(n.saturating_mul(points), &format!("{name}({})", s.name))?;
            }
            Ok(l.into_iter()
                .map(|s| {
                    // A count of points, or as many as the time takes at this step.
                    let points = match &window {
                        Expr::Num(n) => *n as usize,
                        _ => (preview / s.step.max(1)) as usize,
                    };
                    let vals: Vec<Option<f64>> = (points..s.values.len())
                        .map(|i| {
                            let win = &s.values[i - points..i];
                            let known: Vec<f64> = win.iter().flatten().copied().collect();
                            let need = xff.unwrap_or(s.xff);
                            if known.is_empty()
                                || points == 0
                                || (known.len() as f64 / points as f64) < need
                            {
                                None
                            } else {
                                agg(&func, &known, win)
                            }
                        })
                        .collect();
                    let mut r = s.with(format!("{tag}({},{label})", s.name), vals);
                    r.start = s.start + preview;
                    r
                })
                .collect())
        }
        other => Err(format!("unknown function '{other}'")),
    }
}

/// Seconds of an interval string (`1h`, `10min`, `1d`), as graphite-web's parseTimeOffset
/// reads it (a sign is allowed and ignored).
fn interval_secs(spec: &str) -> Result<i64, String> {
    let t = super::time::parse(&format!("now+{}", spec.trim_start_matches(['+', '-'])), 0)
        .map_err(|_| format!("bad interval '{spec}'"))?;
    if t <= 0 {
        return Err(format!("bad interval '{spec}'"));
    }
    Ok(t)
}

/// graphite-web's summarize: buckets of `interval` (aligned to it, or to the series'
/// start), each `func` of its points, None unless enough are known.
fn summarize(s: &Series, spec: &str, interval: i64, func: &str, align: bool) -> Series {
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
fn hitcount(s: &Series, spec: &str, interval: i64, align: bool) -> Series {
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

enum Total {
    Num(f64),
    Series(Vec<Series>),
}

fn as_percent(l: Vec<Series>, total: Option<Total>) -> Result<Vec<Series>, String> {
    if l.is_empty() {
        return Ok(l);
    }
    let pct = |x: Option<f64>, t: Option<f64>| match (x, t) {
        (Some(x), Some(t)) if t != 0.0 => Some(x / t * 100.0),
        _ => None,
    };
    match total {
        Some(Total::Num(t)) => Ok(l
            .into_iter()
            .map(|s| {
                let vals = s.values.iter().map(|&v| pct(v, Some(t))).collect();
                s.with(format!("asPercent({},{})", s.name, fmt_g(t)), vals)
            })
            .collect()),
        Some(Total::Series(ts)) if ts.len() == 1 => {
            let t = &ts[0];
            Ok(l.into_iter()
                .map(|s| {
                    let name = format!("asPercent({},{})", s.name, t.name);
                    let (n, start, end, step) = normalize(vec![s, t.clone()]);
                    let vals = zip_longest(&n, |row| pct(row[0], row[1]));
                    Series::new(name, start, end, step, vals)
                })
                .collect())
        }
        Some(Total::Series(ts)) => {
            if ts.len() != l.len() {
                return Err(
                    "asPercent: the total must be one series or as many as the series".into(),
                );
            }
            let mut a = l;
            let mut b = ts;
            a.sort_by(|x, y| x.name.cmp(&y.name));
            b.sort_by(|x, y| x.name.cmp(&y.name));
            Ok(a.into_iter()
                .zip(b)
                .map(|(s, t)| {
                    let name = format!("asPercent({},{})", s.name, t.name);
                    let (n, start, end, step) = normalize(vec![s, t]);
                    let vals = zip_longest(&n, |row| pct(row[0], row[1]));
                    Series::new(name, start, end, step, vals)
                })
                .collect())
        }
        None => {
            let exprs = path_expressions(&l);
            let (n, start, end, step) = normalize(l);
            let totals = zip_longest(&n, |row| {
                let k: Vec<f64> = row.iter().flatten().copied().collect();
                (!k.is_empty()).then(|| k.iter().sum())
            });
            Ok(n.into_iter()
                .map(|s| {
                    let vals = s
                        .values
                        .iter()
                        .zip(totals.iter().chain(std::iter::repeat(&None)))
                        .map(|(&v, &t)| pct(v, t))
                        .collect();
                    let mut r = Series::new(
                        format!("asPercent({},sumSeries({exprs}))", s.name),
                        start,
                        end,
                        step,
                        vals,
                    );
                    r.path_expression = s.path_expression.clone();
                    r
                })
                .collect())
        }
    }
}

/// graphite-web's `_nonNegativeDelta`: (delta, the new previous value).
fn non_negative_delta(
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

/// Every series at the least common multiple of their steps, over their joint range.
pub fn normalize(mut l: Vec<Series>) -> (Vec<Series>, i64, i64, i64) {
    fn gcd(a: i64, b: i64) -> i64 {
        if b == 0 {
            a
        } else {
            gcd(b, a % b)
        }
    }
    let step = l
        .iter()
        .map(|s| s.step.max(1))
        .fold(1, |acc, s| acc / gcd(acc, s) * s);
    for s in &mut l {
        let n = (step / s.step.max(1)) as usize;
        s.consolidate(n);
    }
    let start = l.iter().map(|s| s.start).min().unwrap_or(0);
    let mut end = l.iter().map(|s| s.end).max().unwrap_or(0);
    end -= (end - start).rem_euclid(step);
    (l, start, end, step)
}

/// `f` of each row of the series' values side by side (None past a series' end).
fn zip_longest(l: &[Series], f: impl Fn(&[Option<f64>]) -> Option<f64>) -> Vec<Option<f64>> {
    let len = l.iter().map(|s| s.values.len()).max().unwrap_or(0);
    let mut row = vec![None; l.len()];
    (0..len)
        .map(|i| {
            for (r, s) in row.iter_mut().zip(l) {
                *r = s.values.get(i).copied().flatten();
            }
            f(&row)
        })
        .collect()
}

/// The series' path expressions, sorted and once each, comma-separated.
fn path_expressions(l: &[Series]) -> String {
    let mut v: Vec<&str> = l.iter().map(|s| s.path_expression.as_str()).collect();
    v.sort_unstable();
    v.dedup();
    v.join(",")
}

/// The series grouped by `key` of their names, each group aggregated by `func` into one
/// series named by its key, the groups in key order (groupByNode, ...WithWildcards).
fn aggregate_groups(
    l: Vec<Series>,
    func: &str,
    key: impl Fn(&str) -> String,
) -> Result<Vec<Series>, String> {
    let mut groups: std::collections::BTreeMap<String, Vec<Series>> = Default::default();
    for s in l {
        groups.entry(key(&s.name)).or_default().push(s);
    }
    let mut out = Vec::new();
    for (k, l) in groups {
        for mut s in aggregate(l, func, &format!("{func}Series"))? {
            s.name = k.clone();
            out.push(s);
        }
    }
    Ok(out)
}

/// `func` over the series, point by point: one series named `name(paths)`.
fn aggregate(l: Vec<Series>, func: &str, name: &str) -> Result<Vec<Series>, String> {
    if l.is_empty() {
        return Ok(vec![]);
    }
    let title = format!("{name}({})", path_expressions(&l));
    let (l, start, end, step) = normalize(l);
    let vals = zip_longest(&l, |row| {
        let known: Vec<f64> = row.iter().flatten().copied().collect();
        if func == "diff" {
            // The first series less the others, where the first is known.
            return row[0].map(|first| first - row[1..].iter().flatten().sum::<f64>());
        }
        agg(func, &known, row)
    });
    Ok(vec![Series::new(title, start, end, step, vals)])
}

fn map(
    l: Vec<Series>,
    name: impl Fn(&Series) -> String,
    f: impl Fn(Option<f64>) -> Option<f64>,
) -> Result<Vec<Series>, String> {
    Ok(l.into_iter()
        .map(|s| {
            let vals = s.values.iter().map(|&v| f(v)).collect();
            s.with(name(&s), vals)
        })
        .collect())
}

/// The metric path inside a name wrapped in functions (`scale(a.b.c,2)` is `a.b.c`).
fn metric_of(name: &str) -> String {
    let inner = name.rsplit('(').next().unwrap_or(name);
    let end = inner.find([',', ')']).unwrap_or(inner.len());
    inner[..end].trim().to_string()
}

/// Component `n` (negative: from the end).
fn pick<'a>(parts: &[&'a str], n: i64) -> Option<&'a str> {
    let i = if n < 0 { parts.len() as i64 + n } else { n };
    usize::try_from(i).ok().and_then(|i| parts.get(i).copied())
}

/// Python's `\1` and `\g<1>` as the regex crate's `${1}`.
fn backrefs(s: &str) -> String {
    let mut out = String::new();
    let mut it = s.chars().peekable();
    while let Some(c) = it.next() {
        match c {
            '\\' if it.peek().is_some_and(char::is_ascii_digit) => {
                let mut n = String::new();
                while let Some(d) = it.peek().filter(|d| d.is_ascii_digit()) {
                    n.push(*d);
                    it.next();
                }
                out.push_str(&format!("${{{n}}}"));
            }
            '\\' if it.peek() == Some(&'g') => {
                it.next();
                let mut n = String::new();
                if it.peek() == Some(&'<') {
                    it.next();
                    for d in it.by_ref() {
                        if d == '>' {
                            break;
                        }
                        n.push(d);
                    }
                }
                out.push_str(&format!("${{{n}}}"));
            }
            '$' => out.push_str("$$"),
            c => out.push(c),
        }
    }
    out
}

fn natural_cmp(a: &str, b: &str) -> std::cmp::Ordering {
    let key = |s: &str| -> Vec<(String, u64)> {
        let mut out = Vec::new();
        let mut text = String::new();
        let mut num = String::new();
        for c in s.chars() {
            if c.is_ascii_digit() {
                num.push(c);
            } else {
                if !num.is_empty() {
                    out.push((std::mem::take(&mut text), num.parse().unwrap_or(0)));
                    num.clear();
                }
                text.push(c);
            }
        }
        out.push((text, num.parse().unwrap_or(0)));
        out
    };
    key(a).cmp(&key(b))
}

/// A function's arguments, by position or keyword.
struct Args<'a, 'b> {
    ctx: &'b Ctx<'a>,
    name: &'b str,
    args: &'b [Expr],
    kwargs: &'b [(String, Expr)],
}

impl Args<'_, '_> {
    fn arg(&self, i: usize, key: &str) -> Option<&Expr> {
        self.args
            .get(i)
            .or_else(|| self.kwargs.iter().find(|(k, _)| k == key).map(|(_, e)| e))
    }

    fn need(&self, i: usize, key: &str) -> Result<&Expr, String> {
        self.arg(i, key)
            .ok_or_else(|| format!("{}: missing argument '{key}'", self.name))
    }

    fn series(&self, i: usize) -> Result<Vec<Series>, String> {
        let e = self.need(i, "seriesList")?;
        self.ctx.eval(e)
    }

    /// Every positional argument as series (sumSeries(a, b, c)).
    fn all_series(&self) -> Result<Vec<Series>, String> {
        let mut out = Vec::new();
        for e in self.args {
            out.extend(self.ctx.eval(e)?);
        }
        Ok(out)
    }

    fn string(&self, i: usize, key: &str) -> Result<String, String> {
        match self.need(i, key)? {
            Expr::Str(s) | Expr::Path(s) => Ok(s.clone()),
            Expr::Num(n) => Ok(fmt_g(*n)),
            e => Err(format!(
                "{}: '{key}' must be a string, not {e:?}",
                self.name
            )),
        }
    }

    fn string_or(&self, i: usize, key: &str, d: &str) -> Result<String, String> {
        match self.arg(i, key) {
            None => Ok(d.to_string()),
            Some(_) => self.string(i, key),
        }
    }

    fn regex(&self, i: usize, key: &str) -> Result<Regex, String> {
        let s = self.string(i, key)?;
        Regex::new(&s).map_err(|e| format!("{}: pattern '{s}': {e}", self.name))
    }

    fn num(&self, i: usize, key: &str) -> Result<f64, String> {
        match self.need(i, key)? {
            Expr::Num(n) => Ok(*n),
            Expr::Str(s) => s
                .parse()
                .map_err(|_| format!("{}: '{key}' must be a number", self.name)),
            e => Err(format!(
                "{}: '{key}' must be a number, not {e:?}",
                self.name
            )),
        }
    }

    fn num_or(&self, i: usize, key: &str, d: f64) -> Result<f64, String> {
        match self.arg(i, key) {
            None | Some(Expr::None) => Ok(d),
            Some(_) => self.num(i, key),
        }
    }

    fn opt_num(&self, i: usize, key: &str) -> Result<Option<f64>, String> {
        match self.arg(i, key) {
            None | Some(Expr::None) => Ok(None),
            Some(_) => self.num(i, key).map(Some),
        }
    }

    fn int(&self, i: usize, key: &str) -> Result<i64, String> {
        let n = self.num(i, key)?;
        if n.fract() != 0.0 {
            return Err(format!("{}: '{key}' must be an integer", self.name));
        }
        Ok(n as i64)
    }

    fn ints_from(&self, i: usize) -> Result<Vec<i64>, String> {
        (i..self.args.len()).map(|k| self.int(k, "nodes")).collect()
    }

    fn bool_or(&self, i: usize, key: &str, d: bool) -> Result<bool, String> {
        match self.arg(i, key) {
            None => Ok(d),
            Some(Expr::Bool(b)) => Ok(*b),
            Some(Expr::Num(n)) => Ok(*n != 0.0),
            Some(e) => Err(format!(
                "{}: '{key}' must be true or false, not {e:?}",
                self.name
            )),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(name: &str, vals: &[Option<f64>]) -> Series {
        Series::new(
            name.into(),
            100,
            100 + 10 * vals.len() as i64,
            10,
            vals.to_vec(),
        )
    }

    #[test]
    fn aggregates_skip_nones_and_name_the_paths() {
        let l = vec![
            s("a.x", &[Some(1.0), None, None]),
            s("a.y", &[Some(2.0), Some(5.0), None]),
        ];
        let r = aggregate(l.clone(), "sum", "sumSeries").unwrap();
        assert_eq!(r[0].name, "sumSeries(a.x,a.y)");
        assert_eq!(r[0].values, vec![Some(3.0), Some(5.0), None]);
        let r = aggregate(l.clone(), "diff", "diffSeries").unwrap();
        assert_eq!(r[0].values, vec![Some(-1.0), None, None]);
        let r = aggregate(l, "average", "averageSeries").unwrap();
        assert_eq!(r[0].values, vec![Some(1.5), Some(5.0), None]);
        // Different steps meet at their least common multiple.
        let mut b = s("b", &[Some(1.0), Some(3.0), Some(5.0), Some(7.0)]);
        b.step = 5;
        let (n, _, _, step) = normalize(vec![s("a", &[Some(0.0), Some(0.0)]), b]);
        assert_eq!(step, 10);
        assert_eq!(n[1].values, vec![Some(2.0), Some(6.0)]);
    }

    #[test]
    fn deltas_follow_graphite_web() {
        assert_eq!(
            non_negative_delta(Some(5.0), None, None, None),
            (None, Some(5.0))
        );
        assert_eq!(
            non_negative_delta(Some(7.0), Some(5.0), None, None),
            (Some(2.0), Some(7.0))
        );
        assert_eq!(
            non_negative_delta(Some(2.0), Some(5.0), None, None),
            (None, Some(2.0))
        );
        assert_eq!(
            non_negative_delta(Some(2.0), Some(250.0), Some(255.0), None),
            (Some(8.0), Some(2.0))
        );
        assert_eq!(
            non_negative_delta(None, Some(5.0), None, None),
            (None, None)
        );
    }

    #[test]
    fn names_and_nodes() {
        assert_eq!(metric_of("scale(a.b.c,2)"), "a.b.c");
        assert_eq!(metric_of("a.b.c"), "a.b.c");
        assert_eq!(metric_of("sumSeries(a.*.c)"), "a.*.c");
        assert_eq!(pick(&["a", "b", "c"], -1), Some("c"));
        assert_eq!(pick(&["a", "b", "c"], 3), None);
        assert_eq!(backrefs("\\1-\\g<2>$"), "${1}-${2}$$");
        assert_eq!(natural_cmp("a2", "a10"), std::cmp::Ordering::Less);
    }
}
