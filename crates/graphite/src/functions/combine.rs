//! graphite-web's Combine group: many series into one or a few.

use super::*;
use crate::series::set_tag;

/// graphite-web's aggregate over series lists taken together: one series named
/// `<func>Series(<path expressions>)`, tagged with the tags all share and `aggregatedBy`.
/// `func` may end in `Series`. Nothing for no series.
pub(super) fn aggregate_lists(
    ctx: &Ctx<'_>,
    lists: Vec<Vec<Series>>,
    func: &str,
    xff: Option<f64>,
) -> Result<Vec<Series>, String> {
    let f = func.strip_suffix("Series").unwrap_or(func);
    let agg = Agg::of(f).ok_or_else(|| format!("Unsupported aggregation function: {func}"))?;
    let mut l: Vec<Series> = lists.into_iter().flatten().collect();
    let Some((start, end, step)) = normalize(&mut l) else {
        return Ok(vec![]);
    };
    let xff = xff_of(ctx, xff);
    let name = format!("{f}Series({})", path_expressions(&l));
    let rows = rows(&l);
    let values = rows
        .iter()
        .map(|r| {
            if xff_values(r, xff) {
                agg.apply(r)
            } else {
                None
            }
        })
        .collect();
    let ints = agg.int_result(l.iter().all(|s| s.ints));
    // Where only some of the values are ints (isNonNull's beside a path's), each point is
    // an int or not as Python's aggregation of that row makes it.
    let int_mask = (!ints
        && agg.int_result(true)
        && l.iter()
            .any(|s| s.vpp <= 1 && (s.ints || s.int_mask.is_some())))
    .then(|| {
        rows.iter()
            .enumerate()
            .map(|(i, r)| agg.int_at(r, |j| l[j].vpp <= 1 && l[j].int_at(i)))
            .collect::<Vec<bool>>()
    })
    .filter(|m| m.iter().any(|&b| b));
    let mut tags = l[0].tag_list();
    for s in &l[1..] {
        let theirs = s.tags.borrow();
        tags.retain(|(k, v)| theirs.iter().any(|(a, b)| a == k && b == v));
    }
    if !tags.iter().any(|(k, _)| k == "name") {
        set_tag(&mut tags, "name", name.clone());
    }
    set_tag(&mut tags, "aggregatedBy", f);
    let mut s = Series::new(name, start, end, step, values);
    s.xff = xff;
    s.tags = crate::series::own(tags);
    s.ints = ints;
    s.int_mask = int_mask;
    Ok(vec![s])
}

/// A function's rest as one list of series lists.
fn lists(c: &mut Call<'_, '_>) -> Result<Vec<Vec<Series>>, String> {
    c.rest_series()
}

pub(super) fn aggregate(c: &mut Call<'_, '_>) -> Result<Value, String> {
    let func = c.str("func")?;
    let xff = c.opt_num("xFilesFactor")?;
    // graphite-web normalizes a list of series lists (mapSeries') as its series together.
    let l = match c.take("seriesList") {
        Value::Lists(l) => l.into_iter().flatten().collect(),
        Value::List(l) => l,
        v => {
            return Err(format!(
                "aggregate: 'seriesList' must be series, not {}",
                v.kind()
            ))
        }
    };
    aggregate_lists(c.ctx, vec![l], &func, xff).map(Value::List)
}

fn by(c: &mut Call<'_, '_>, func: &str) -> Result<Value, String> {
    let l = lists(c)?;
    aggregate_lists(c.ctx, l, func, None).map(Value::List)
}

pub(super) fn sum_series(c: &mut Call<'_, '_>) -> Result<Value, String> {
    by(c, "sum")
}

pub(super) fn average_series(c: &mut Call<'_, '_>) -> Result<Value, String> {
    by(c, "average")
}

pub(super) fn max_series(c: &mut Call<'_, '_>) -> Result<Value, String> {
    by(c, "max")
}

pub(super) fn min_series(c: &mut Call<'_, '_>) -> Result<Value, String> {
    by(c, "min")
}

pub(super) fn diff_series(c: &mut Call<'_, '_>) -> Result<Value, String> {
    by(c, "diff")
}

pub(super) fn stddev_series(c: &mut Call<'_, '_>) -> Result<Value, String> {
    by(c, "stddev")
}

pub(super) fn range_of_series(c: &mut Call<'_, '_>) -> Result<Value, String> {
    by(c, "rangeOf")
}

/// `multiplySeries`: one series alone is given back as it is.
pub(super) fn multiply_series(c: &mut Call<'_, '_>) -> Result<Value, String> {
    let mut l = lists(c)?;
    if l.len() == 1 && l[0].len() == 1 {
        return Ok(Value::List(l.remove(0)));
    }
    aggregate_lists(c.ctx, l, "multiply", None).map(Value::List)
}

/// The pairs of two lists aggregated (`sumSeriesLists` and the like), each named
/// `<func>Series(<first's name>,<second's name>)`.
fn pairwise(
    ctx: &Ctx<'_>,
    a: Vec<Series>,
    b: Vec<Series>,
    func: &str,
    xff: Option<f64>,
) -> Result<Vec<Series>, String> {
    if a.len() != b.len() {
        return Err(
            "seriesListFirstPos and seriesListSecondPos argument must have equal length".into(),
        );
    }
    let mut out = Vec::new();
    for (x, y) in a.into_iter().zip(b) {
        let title = format!("({},{})", x.name, y.name);
        for mut s in aggregate_lists(ctx, vec![vec![x, y]], func, xff)? {
            let cut = s.name.find("Series(").unwrap_or(s.name.len());
            s.name = format!("{}Series{title}", &s.name[..cut]);
            out.push(s);
        }
    }
    Ok(out)
}

pub(super) fn aggregate_series_lists(c: &mut Call<'_, '_>) -> Result<Value, String> {
    let func = c.str("func")?;
    let xff = c.opt_num("xFilesFactor")?;
    let a = c.series("seriesListFirstPos")?;
    let b = c.series("seriesListSecondPos")?;
    pairwise(c.ctx, a, b, &func, xff).map(Value::List)
}

fn lists_by(c: &mut Call<'_, '_>, func: &str) -> Result<Value, String> {
    let a = c.series("seriesListFirstPos")?;
    let b = c.series("seriesListSecondPos")?;
    pairwise(c.ctx, a, b, func, None).map(Value::List)
}

pub(super) fn sum_series_lists(c: &mut Call<'_, '_>) -> Result<Value, String> {
    lists_by(c, "sum")
}

pub(super) fn diff_series_lists(c: &mut Call<'_, '_>) -> Result<Value, String> {
    lists_by(c, "diff")
}

pub(super) fn multiply_series_lists(c: &mut Call<'_, '_>) -> Result<Value, String> {
    lists_by(c, "multiply")
}

/// Series grouped by `key`, the groups in the order their first series came.
fn group_by<K: PartialEq + Clone>(
    l: Vec<Series>,
    mut key: impl FnMut(&Series) -> Result<K, String>,
) -> Result<Vec<(K, Vec<Series>)>, String> {
    let mut groups: Vec<(K, Vec<Series>)> = Vec::new();
    for s in l {
        let k = key(&s)?;
        match groups.iter_mut().find(|(g, _)| *g == k) {
            Some((_, v)) => v.push(s),
            None => groups.push((k, vec![s])),
        }
    }
    Ok(groups)
}

/// `aggregateWithWildcards` and the `...WithWildcards` functions: grouped by their names
/// without the given nodes, each group aggregated and named by its key.
fn with_wildcards(
    ctx: &Ctx<'_>,
    l: Vec<Series>,
    func: &str,
    positions: &[Value],
) -> Result<Vec<Series>, String> {
    let pos: Vec<f64> = positions.iter().filter_map(Value::number).collect();
    let groups = group_by(l, |s| {
        Ok(s.name
            .split('.')
            .enumerate()
            .filter(|(i, _)| !pos.contains(&(*i as f64)))
            .map(|(_, p)| p)
            .collect::<Vec<_>>()
            .join("."))
    })?;
    let mut out = Vec::new();
    for (k, g) in groups {
        let mut r = aggregate_lists(ctx, vec![g], func, None)?;
        if r.is_empty() {
            return Err("an aggregation gave nothing".into());
        }
        let mut s = r.remove(0);
        s.name = k;
        out.push(s);
    }
    Ok(out)
}

pub(super) fn aggregate_with_wildcards(c: &mut Call<'_, '_>) -> Result<Value, String> {
    let func = c.str("func")?;
    let l = c.series("seriesList")?;
    let pos = c.take_rest();
    with_wildcards(c.ctx, l, &func, &pos).map(Value::List)
}

fn wildcards_by(c: &mut Call<'_, '_>, func: &str) -> Result<Value, String> {
    let l = c.series("seriesList")?;
    let pos = c.take_rest();
    with_wildcards(c.ctx, l, func, &pos).map(Value::List)
}

pub(super) fn sum_series_with_wildcards(c: &mut Call<'_, '_>) -> Result<Value, String> {
    wildcards_by(c, "sum")
}

pub(super) fn average_series_with_wildcards(c: &mut Call<'_, '_>) -> Result<Value, String> {
    wildcards_by(c, "average")
}

pub(super) fn multiply_series_with_wildcards(c: &mut Call<'_, '_>) -> Result<Value, String> {
    wildcards_by(c, "multiply")
}

/// A group's one series: a series function's first (called as graphite-web calls a
/// callback), or the group aggregated.
fn callback_one(c: &Call<'_, '_>, callback: &Value, group: Vec<Series>) -> Result<Series, String> {
    let mut r = match callback {
        Value::Str(f) if spec::lookup(f).is_some() => {
            match call_direct(c.ctx, c.raw, f, vec![Value::List(group)])? {
                Value::List(l) => l,
                v => return Err(format!("{f} gave {}, not series", v.kind())),
            }
        }
        Value::Str(f) => aggregate_lists(c.ctx, vec![group], f, None)?,
        v => return Err(format!("Unsupported aggregation function: {}", v.py_str())),
    };
    if r.is_empty() {
        return Err("list index out of range (the callback gave no series)".into());
    }
    Ok(r.remove(0))
}

fn by_nodes(c: &mut Call<'_, '_>, callback: Value, nodes: Vec<Value>) -> Result<Value, String> {
    let l = c.series("seriesList")?;
    let groups = group_by(l, |s| agg_key(s, &nodes))?;
    let mut out = Vec::new();
    for (k, g) in groups {
        let mut s = callback_one(c, &callback, g)?;
        s.name = k;
        out.push(s);
    }
    Ok(Value::List(out))
}

pub(super) fn group_by_nodes(c: &mut Call<'_, '_>) -> Result<Value, String> {
    let cb = c.take("callback");
    let nodes = c.take_rest();
    by_nodes(c, cb, nodes)
}

pub(super) fn group_by_node(c: &mut Call<'_, '_>) -> Result<Value, String> {
    let cb = c.take("callback");
    let node = c.take("nodeNum");
    by_nodes(c, cb, vec![node])
}

pub(super) fn group_by_tags(c: &mut Call<'_, '_>) -> Result<Value, String> {
    let callback = c.take("callback");
    let tags: Vec<String> = c.take_rest().iter().map(Value::py_str).collect();
    if tags.is_empty() {
        return Err("groupByTags(): no tags specified".into());
    }
    let l = c.series("seriesList")?;
    let Value::Str(cb) = &callback else {
        return Err(format!(
            "groupByTags: the callback must be a function's name, not {}",
            callback.py_str()
        ));
    };
    let by_name = tags.iter().any(|t| t == "name");
    let common = if by_name {
        String::new()
    } else {
        let mut names: Vec<String> = l
            .iter()
            .map(|s| s.tag("name").unwrap_or_default())
            .collect();
        names.sort_unstable();
        names.dedup();
        if names.len() == 1 {
            names[0].to_string()
        } else {
            cb.clone()
        }
    };
    let groups = group_by(l, |s| {
        let mut parts: Vec<String> = tags
            .iter()
            .filter(|t| !by_name || *t != "name")
            .map(|t| format!("{t}={}", s.tag(t).unwrap_or_default()))
            .collect();
        parts.sort();
        let head = if by_name {
            s.tag("name").unwrap_or_default()
        } else {
            common.clone()
        };
        parts.insert(0, head);
        Ok(parts.join(";"))
    })?;
    let mut out = Vec::new();
    for (k, g) in groups {
        let mut s = callback_one(c, &callback, g)?;
        s.tags = crate::series::own(
            crate::tags::strict_tags(&k)
                .ok_or_else(|| format!("groupByTags: '{k}' is not a tagged series' name"))?,
        );
        s.path_expression = k.clone();
        s.name = k;
        out.push(s);
    }
    Ok(Value::List(out))
}

pub(super) fn group(c: &mut Call<'_, '_>) -> Result<Value, String> {
    Ok(Value::List(lists(c)?.into_iter().flatten().collect()))
}

pub(super) fn map_series(c: &mut Call<'_, '_>) -> Result<Value, String> {
    let nodes = c.take_rest();
    let l = c.series("seriesList")?;
    let groups = group_by(l, |s| agg_key(s, &nodes))?;
    Ok(Value::Lists(groups.into_iter().map(|(_, g)| g).collect()))
}

pub(super) fn reduce_series(c: &mut Call<'_, '_>) -> Result<Value, String> {
    let func = c.str("reduceFunction")?;
    let node = c.int("reduceNode")?;
    // Python's nodes[2.0] fails once there is a series to index.
    let node_error = c.index("reduceNode").err();
    let matchers: Vec<String> = c.take_rest().iter().map(Value::py_str).collect();
    let lists = match c.take("seriesLists") {
        Value::Lists(l) => l,
        // graphite-web walks a plain series list as lists: its series' values, which it
        // fails on unless there are none.
        Value::List(l) if l.iter().all(|s| s.point_count() == 0) => vec![],
        v => {
            return Err(format!(
                "reduceSeries: its first argument must be series lists (mapSeries), not {}",
                v.kind()
            ))
        }
    };
    let mut groups: Vec<(String, Vec<Option<Series>>)> = Vec::new();
    for s in lists.into_iter().flatten() {
        if let Some(e) = node_error {
            return Err(e);
        }
        let nodes: Vec<&str> = s.name.split('.').collect();
        let Some(at) = py_index(&nodes, node) else {
            return Err(format!("reduceSeries: '{}' has no node {node}", s.name));
        };
        let cut = if node < 0 {
            (nodes.len() as i64 + node).max(0) as usize
        } else {
            (node as usize).min(nodes.len())
        };
        let key = format!("{}.reduce.{func}", nodes[..cut].join("."));
        if let Some(i) = matchers.iter().position(|m| m == at) {
            let slot = match groups.iter().position(|(k, _)| *k == key) {
                Some(g) => g,
                None => {
                    groups.push((key, vec![None; matchers.len()]));
                    groups.len() - 1
                }
            };
            groups[slot].1[i] = Some(s);
        }
    }
    let mut out = Vec::new();
    for (k, g) in groups {
        let mut args = Vec::new();
        for s in g {
            match s {
                Some(s) => args.push(Value::List(vec![s])),
                None => {
                    return Err(format!(
                        "reduceSeries: '{k}' lacks a series for one of the matchers"
                    ))
                }
            }
        }
        let mut r = match call_direct(c.ctx, c.raw, &func, args)? {
            Value::List(l) => l,
            v => return Err(format!("{func} gave {}, not series", v.kind())),
        };
        if r.is_empty() {
            return Err(format!("reduceSeries: {func} gave no series for '{k}'"));
        }
        let mut s = r.remove(0);
        s.name = k;
        out.push(s);
    }
    Ok(Value::List(out))
}

pub(super) fn apply_by_node(c: &mut Call<'_, '_>) -> Result<Value, String> {
    let node = c.int("nodeNum")?;
    let template = c.str("templateFunction")?;
    let new_name = c.opt_str("newName")?;
    let l = c.series("seriesList")?;
    if !l.is_empty() {
        // Python's split('.')[:2.0 + 1] fails once there is a series to cut.
        c.index("nodeNum")?;
    }
    let mut prefixes: Vec<String> = l
        .iter()
        .map(|s| {
            let parts: Vec<&str> = s.name.split('.').collect();
            let end = if node + 1 < 0 {
                (parts.len() as i64 + node + 1).max(0) as usize
            } else {
                ((node + 1) as usize).min(parts.len())
            };
            parts[..end].join(".")
        })
        .collect();
    prefixes.sort();
    prefixes.dedup();
    let Some(last) = l.last() else {
        return Ok(Value::List(vec![]));
    };
    let ctx = c.ctx.over(c.ctx.from, c.ctx.until);
    let mut out = Vec::new();
    for p in prefixes {
        for mut s in evaluate_target(&ctx, &template.replace('%', &p))? {
            if let Some(n) = new_name.as_deref().filter(|n| !n.is_empty()) {
                s.name = n.replace('%', &p);
            }
            s.path_expression = p.clone();
            s.start = last.start;
            s.end = last.end;
            out.push(s);
        }
    }
    Ok(Value::List(out))
}

/// `asPercent` and `pct`.
pub(super) fn as_percent(c: &mut Call<'_, '_>) -> Result<Value, String> {
    let ctx = c.ctx;
    let nodes = c.take_rest();
    let total = c.take("total");
    let mut l = c.series("seriesList")?;
    if normalize(&mut l).is_none() {
        return Ok(Value::List(vec![]));
    }
    let xff = xff_of(ctx, None);
    let pct = |v: Option<f64>, t: Option<f64>| match (v, t) {
        (Some(v), Some(t)) if t != 0.0 => Some(v / t * 100.0),
        _ => None,
    };
    let new = |name: String, (start, end, step): (i64, i64, i64), values| {
        let mut s = Series::new(name, start, end, step, values);
        s.xff = xff;
        s
    };
    if !nodes.is_empty() {
        // The range of the last series lists normalized (graphite-web labels a missing
        // side's series with it; before any, it has none).
        let mut last: Option<(i64, i64, i64)> = None;
        let sum_of = |mut g: Vec<Series>, last: &mut Option<(i64, i64, i64)>| -> Series {
            if g.len() == 1 {
                return g.remove(0);
            }
            let name = format!("sumSeries({})", path_expressions(&g));
            let range = normalize(&mut g).unwrap_or((0, 0, 1));
            *last = Some(range);
            let values = rows(&g).iter().map(|r| Agg::Sum.apply(r)).collect();
            new(name, range, values)
        };
        let groups = group_by(l, |s| agg_key(s, &nodes))?;
        let mut keys: Vec<String> = groups.iter().map(|(k, _)| k.clone()).collect();
        let mut totals: Vec<(String, Series)> = Vec::new();
        match total {
            Value::None => {
                for (k, g) in &groups {
                    totals.push((k.clone(), sum_of(g.clone(), &mut last)));
                }
            }
            Value::List(t) => {
                for (k, g) in group_by(t, |s| agg_key(s, &nodes))? {
                    if !keys.contains(&k) {
                        keys.push(k.clone());
                    }
                    totals.push((k, sum_of(g, &mut last)));
                }
            }
            _ => return Err("total must be None or a seriesList".into()),
        }
        let unbound = || "asPercent: a missing series before any range was found".to_string();
        let mut out = Vec::new();
        for k in keys {
            let total = totals.iter().find(|(t, _)| *t == k).map(|(_, s)| s);
            let Some((_, members)) = groups.iter().find(|(g, _)| *g == k) else {
                if let Some(t) = total {
                    let name = format!("asPercent(MISSING,{})", t.name);
                    out.push(new(
                        name,
                        last.ok_or_else(unbound)?,
                        vec![None; t.point_count()],
                    ));
                }
                continue;
            };
            for s in members {
                match total {
                    None => {
                        let name = format!("asPercent({},MISSING)", s.name);
                        out.push(new(
                            name,
                            last.ok_or_else(unbound)?,
                            vec![None; s.point_count()],
                        ));
                    }
                    Some(t) => {
                        let name = format!("asPercent({},{})", s.name, t.name);
                        let mut pair = vec![s.clone(), t.clone()];
                        let range = normalize(&mut pair).unwrap_or((0, 0, 1));
                        last = Some(range);
                        let values = rows(&pair).iter().map(|r| pct(r[0], r[1])).collect();
                        out.push(new(name, range, values));
                    }
                }
            }
        }
        return Ok(Value::List(out));
    }
    let (totals, text): (Vec<Option<f64>>, String) = match &total {
        Value::None => (
            rows(&l).iter().map(|r| Agg::Sum.apply(r)).collect(),
            format!("sumSeries({})", path_expressions(&l)),
        ),
        Value::List(t) if t.len() != 1 && t.len() != l.len() => {
            return Err(
                "asPercent second argument must be missing, a single digit, reference \
                        exactly 1 series or reference the same number of series as the first \
                        argument"
                    .into(),
            )
        }
        Value::List(t) if t.len() == l.len() => (vec![], String::new()),
        Value::List(t) => {
            let mut both = l.clone();
            both.push(t[0].clone());
            normalize(&mut both);
            let n = both.len();
            let t = both.pop().unwrap_or_else(|| t[0].clone());
            l = both;
            debug_assert_eq!(l.len(), n - 1);
            (t.points().into_owned(), t.name.clone())
        }
        v => {
            let x = v.number().ok_or_else(|| {
                format!(
                    "asPercent: the total must be a number or series, not {}",
                    v.kind()
                )
            })?;
            (vec![Some(x); l[0].values.len()], v.py_str())
        }
    };
    if let Value::List(t) = total {
        if t.len() == l.len() {
            let mut a = l;
            let mut b = t;
            a.sort_by(|x, y| x.name.cmp(&y.name));
            b.sort_by(|x, y| x.name.cmp(&y.name));
            let mut out = Vec::new();
            for (x, y) in a.into_iter().zip(b) {
                let name = format!("asPercent({},{})", x.name, y.name);
                let mut pair = vec![x, y];
                let range = normalize(&mut pair).unwrap_or((0, 0, 1));
                let values = rows(&pair).iter().map(|r| pct(r[0], r[1])).collect();
                out.push(new(name, range, values));
            }
            return Ok(Value::List(out));
        }
    }
    let out = l
        .iter()
        .map(|s| {
            let pts = s.points();
            let len = pts.len().max(totals.len());
            let values = (0..len)
                .map(|i| {
                    pct(
                        pts.get(i).copied().flatten(),
                        totals.get(i).copied().flatten(),
                    )
                })
                .collect();
            let label = if text.is_empty() {
                &s.path_expression
            } else {
                &text
            };
            new(
                format!("asPercent({},{label})", s.name),
                (s.start, s.end, s.step),
                values,
            )
        })
        .collect();
    Ok(Value::List(out))
}

/// Two series' points divided (graphite-web's safeDiv), at their common step.
fn divide(ctx: &Ctx<'_>, x: Series, y: Series) -> Series {
    let name = format!("divideSeries({},{})", x.name, y.name);
    let mut pair = vec![x, y];
    let (start, end, step) = normalize(&mut pair).unwrap_or((0, 0, 1));
    let values = rows(&pair)
        .iter()
        .map(|r| match (r[0], r[1]) {
            (Some(a), Some(b)) if b != 0.0 => Some(a / b),
            _ => None,
        })
        .collect();
    let mut s = Series::new(name, start, end, step, values);
    s.xff = xff_of(ctx, None);
    s
}

pub(super) fn divide_series(c: &mut Call<'_, '_>) -> Result<Value, String> {
    let mut dividends = c.series("dividendSeriesList")?;
    let divisors = match c.take("divisorSeries") {
        Value::List(l) => l,
        Value::Lists(l) if l.is_empty() => vec![],
        // One list of series (mapSeries'): graphite-web fails on it only when there is
        // something to divide.
        Value::Lists(l) if l.len() == 1 && dividends.is_empty() => {
            return Ok(Value::List(vec![]));
        }
        Value::Lists(l) if l.len() == 1 => {
            return Err("divideSeries: the divisor is a list of series lists".into());
        }
        Value::Lists(l) => vec![Series::new(String::new(), 0, 0, 1, vec![]); l.len()],
        v => {
            return Err(format!(
                "divideSeries: 'divisorSeries' must be series, not {}",
                v.kind()
            ))
        }
    };
    if divisors.is_empty() {
        for s in &mut dividends {
            s.name = format!("divideSeries({},MISSING)", s.name);
            s.path_expression = s.name.clone();
            s.values = vec![None; s.values.len()];
        }
        return Ok(Value::List(dividends));
    }
    if divisors.len() > 1 {
        return Err(format!(
            "divideSeries second argument must reference exactly 1 series (got {})",
            divisors.len()
        ));
    }
    let d = &divisors[0];
    Ok(Value::List(
        dividends
            .into_iter()
            .map(|s| divide(c.ctx, s, d.clone()))
            .collect(),
    ))
}

pub(super) fn divide_series_lists(c: &mut Call<'_, '_>) -> Result<Value, String> {
    let a = c.series("dividendSeriesList")?;
    let b = c.series("divisorSeriesList")?;
    if a.len() != b.len() {
        return Err(
            "dividendSeriesList and divisorSeriesList argument must have equal length".into(),
        );
    }
    Ok(Value::List(
        a.into_iter()
            .zip(b)
            .map(|(x, y)| divide(c.ctx, x, y))
            .collect(),
    ))
}

pub(super) fn count_series(c: &mut Call<'_, '_>) -> Result<Value, String> {
    let given = c.rest().len();
    let l: Vec<Series> = lists(c)?.into_iter().flatten().collect();
    if given == 0 {
        let mut s = special::constant(c.ctx, Value::Int(0))?;
        s.path_expression = "countSeries()".into();
        return Ok(Value::List(vec![s]));
    }
    let mut l = l;
    let Some((start, end, step)) = normalize(&mut l) else {
        return Ok(Value::List(vec![]));
    };
    let name = format!("countSeries({})", path_expressions(&l));
    let n = l.len() as f64;
    let values = vec![Some(n); rows(&l).len()];
    let mut s = Series::new(name, start, end, step, values);
    s.xff = xff_of(c.ctx, None);
    s.ints = true;
    Ok(Value::List(vec![s]))
}

pub(super) fn percentile_of_series(c: &mut Call<'_, '_>) -> Result<Value, String> {
    let n = c.num("n")?;
    let interpolate = c.truthy("interpolate");
    if n <= 0.0 {
        return Err("The requested percent is required to be greater than 0".into());
    }
    let mut l = c.series("seriesList")?;
    if l.is_empty() {
        return Ok(Value::List(vec![]));
    }
    let name = format!("percentileOfSeries({},{})", l[0].path_expression, fmt_g(n));
    let (start, end, step) = normalize(&mut l).unwrap_or((0, 0, 1));
    let values = rows(&l)
        .iter()
        .map(|r| percentile(r, n, interpolate))
        .collect();
    let ints = !interpolate && l.iter().all(|s| s.ints);
    let mut s = Series::new(name, start, end, step, values);
    s.xff = xff_of(c.ctx, None);
    s.ints = ints;
    Ok(Value::List(vec![s]))
}

pub(super) fn weighted_average(c: &mut Call<'_, '_>) -> Result<Value, String> {
    let nodes = c.take_rest();
    let avg = c.series("seriesListAvg")?;
    let weight = c.series("seriesListWeight")?;
    if avg.len() != weight.len() {
        return Err(format!(
            "weightedAverage must receive the same number of series for seriesListAvg and \
             seriesListWeight but received respectively {} and {}",
            avg.len(),
            weight.len()
        ));
    }
    let xff = xff_of(c.ctx, None);
    let mut keyed: Vec<(String, Option<&Series>, Option<&Series>)> = Vec::new();
    for (a, w) in avg.iter().zip(&weight) {
        for (s, is_avg) in [(a, true), (w, false)] {
            let k = agg_key(s, &nodes)?;
            let i = match keyed.iter().position(|(x, _, _)| *x == k) {
                Some(i) => i,
                None => {
                    keyed.push((k, None, None));
                    keyed.len() - 1
                }
            };
            if is_avg {
                keyed[i].1 = Some(s);
            } else {
                keyed[i].2 = Some(s);
            }
        }
    }
    let mut products = Vec::new();
    for (_, a, w) in &keyed {
        let (Some(a), Some(w)) = (a, w) else {
            continue;
        };
        let (pa, pw) = (a.points(), w.points());
        let len = pa.len().max(pw.len());
        let values = (0..len)
            .map(
                |i| match (pa.get(i).copied().flatten(), pw.get(i).copied().flatten()) {
                    (Some(x), Some(y)) => Some(x * y),
                    _ => None,
                },
            )
            .collect();
        let mut s = Series::new(
            format!("product({},{})", w.name, a.name),
            a.start,
            a.end,
            a.step,
            values,
        );
        s.xff = xff;
        products.push(s);
    }
    if products.is_empty() {
        return Ok(Value::List(vec![]));
    }
    let uniq = |l: &[Series]| {
        let mut v: Vec<&str> = l.iter().map(|s| s.path_expression.as_str()).collect();
        v.sort_unstable();
        v.dedup();
        v.join(",")
    };
    let name = format!(
        "weightedAverage({}, {}, {})",
        uniq(&avg),
        uniq(&weight),
        nodes
            .iter()
            .map(Value::py_str)
            .collect::<Vec<_>>()
            .join(",")
    );
    let sp = aggregate_lists(c.ctx, vec![products], "sum", None)?.remove(0);
    let sw = aggregate_lists(c.ctx, vec![weight], "sum", None)?.remove(0);
    let (pp, pw) = (sp.points(), sw.points());
    let len = pp.len().max(pw.len());
    let values = (0..len)
        .map(
            |i| match (pp.get(i).copied().flatten(), pw.get(i).copied().flatten()) {
                (Some(x), Some(y)) if y != 0.0 => Some(x / y),
                _ => None,
            },
        )
        .collect();
    let mut s = Series::new(name, sp.start, sp.end, sp.step, values);
    s.xff = xff;
    Ok(Value::List(vec![s]))
}

pub(super) fn pow_series(c: &mut Call<'_, '_>) -> Result<Value, String> {
    let mut l: Vec<Series> = lists(c)?.into_iter().flatten().collect();
    let Some((start, end, step)) = normalize(&mut l) else {
        return Ok(Value::List(vec![]));
    };
    let name = format!(
        "powSeries({})",
        l.iter()
            .map(|s| s.name.as_str())
            .collect::<Vec<_>>()
            .join(",")
    );
    let values = rows(&l)
        .iter()
        .map(|r| {
            let mut it = r.iter();
            let first = *it.next()?;
            it.fold(first, |acc, &e| transform::safe_pow(acc, e))
        })
        .collect();
    let mut s = Series::new(name, start, end, step, values);
    s.xff = xff_of(c.ctx, None);
    Ok(Value::List(vec![s]))
}
