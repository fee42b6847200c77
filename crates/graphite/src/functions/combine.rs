//! graphite-web's Combine group: many series into one or a few.

use super::*;

/// `sumSeries`, `sum`.
pub(super) fn sum_series(a: &Args<'_, '_>) -> Result<Vec<Series>, String> {
    aggregate_all(a.all_series()?, "sum", "sumSeries")
}

/// `averageSeries`, `avg`.
pub(super) fn average_series(a: &Args<'_, '_>) -> Result<Vec<Series>, String> {
    aggregate_all(a.all_series()?, "average", "averageSeries")
}

/// `maxSeries`.
pub(super) fn max_series(a: &Args<'_, '_>) -> Result<Vec<Series>, String> {
    aggregate_all(a.all_series()?, "max", "maxSeries")
}

/// `minSeries`.
pub(super) fn min_series(a: &Args<'_, '_>) -> Result<Vec<Series>, String> {
    aggregate_all(a.all_series()?, "min", "minSeries")
}

/// `diffSeries`.
pub(super) fn diff_series(a: &Args<'_, '_>) -> Result<Vec<Series>, String> {
    aggregate_all(a.all_series()?, "diff", "diffSeries")
}

/// `multiplySeries`.
pub(super) fn multiply_series(a: &Args<'_, '_>) -> Result<Vec<Series>, String> {
    aggregate_all(a.all_series()?, "multiply", "multiplySeries")
}

/// `rangeOfSeries`.
pub(super) fn range_of_series(a: &Args<'_, '_>) -> Result<Vec<Series>, String> {
    aggregate_all(a.all_series()?, "rangeOf", "rangeOfSeries")
}

/// `aggregate`.
pub(super) fn aggregate(a: &Args<'_, '_>) -> Result<Vec<Series>, String> {
    let f = a.string(1, "func")?;
    let f = f.strip_suffix("Series").unwrap_or(&f).to_string();
    if !is_agg(&f) {
        return Err(format!("aggregate: unknown function '{f}'"));
    }
    aggregate_all(a.series(0)?, &f, &format!("{f}Series"))
}

/// `countSeries`.
pub(super) fn count_series(a: &Args<'_, '_>) -> Result<Vec<Series>, String> {
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

/// `divideSeries`.
pub(super) fn divide_series(a: &Args<'_, '_>) -> Result<Vec<Series>, String> {
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

/// `groupByNode`, `groupByNodes`.
pub(super) fn group_by_node(a: &Args<'_, '_>) -> Result<Vec<Series>, String> {
    let Args { name, .. } = *a;
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

/// `sumSeriesWithWildcards`, `averageSeriesWithWildcards`.
pub(super) fn sum_series_with_wildcards(a: &Args<'_, '_>) -> Result<Vec<Series>, String> {
    let Args { name, .. } = *a;
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

/// `asPercent`.
pub(super) fn as_percent(a: &Args<'_, '_>) -> Result<Vec<Series>, String> {
    let Args { ctx, .. } = *a;
    let l = a.series(0)?;
    let total = match a.arg(1, "total") {
        None | Some(Expr::None) => None,
        Some(Expr::Num(t)) => Some(Total::Num(*t)),
        Some(e) => Some(Total::Series(eval(ctx, e)?)),
    };
    percent_of(l, total)
}

pub(super) enum Total {
    Num(f64),
    Series(Vec<Series>),
}

pub(super) fn percent_of(l: Vec<Series>, total: Option<Total>) -> Result<Vec<Series>, String> {
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

/// Every series at the least common multiple of their steps, over their joint range.
pub(super) fn normalize(mut l: Vec<Series>) -> (Vec<Series>, i64, i64, i64) {
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
pub(super) fn zip_longest(
    l: &[Series],
    f: impl Fn(&[Option<f64>]) -> Option<f64>,
) -> Vec<Option<f64>> {
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
pub(super) fn path_expressions(l: &[Series]) -> String {
    let mut v: Vec<&str> = l.iter().map(|s| s.path_expression.as_str()).collect();
    v.sort_unstable();
    v.dedup();
    v.join(",")
}

/// The series grouped by `key` of their names, each group aggregated by `func` into one
/// series named by its key, the groups in key order (groupByNode, ...WithWildcards).
pub(super) fn aggregate_groups(
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
        for mut s in aggregate_all(l, func, &format!("{func}Series"))? {
            s.name = k.clone();
            out.push(s);
        }
    }
    Ok(out)
}

/// `func` over the series, point by point: one series named `name(paths)`.
pub(super) fn aggregate_all(l: Vec<Series>, func: &str, name: &str) -> Result<Vec<Series>, String> {
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
