//! graphite-web's Filter Series and Filter Data groups: which series, and which of their
//! values, are kept.

use super::*;

/// `removeAboveValue`, `removeBelowValue`.
pub(super) fn remove_above_value(a: &Args<'_, '_>) -> Result<Vec<Series>, String> {
    let Args { name, .. } = *a;
    let n = a.num(1, "n")?;
    let above = name == "removeAboveValue";
    map(
        a.series(0)?,
        |s| format!("{name}({}, {})", s.name, fmt_g(n)),
        |v| v.filter(|&x| if above { x <= n } else { x >= n }),
    )
}

/// `limit`.
pub(super) fn limit(a: &Args<'_, '_>) -> Result<Vec<Series>, String> {
    let n = a.num(1, "n")? as usize;
    let mut l = a.series(0)?;
    l.truncate(n);
    Ok(l)
}

/// `exclude`, `grep`.
pub(super) fn exclude(a: &Args<'_, '_>) -> Result<Vec<Series>, String> {
    let Args { name, .. } = *a;
    let re = a.regex(1, "pattern")?;
    let keep = name == "grep";
    Ok(a.series(0)?
        .into_iter()
        .filter(|s| re.is_match(&s.name) == keep)
        .collect())
}

/// `highestCurrent`, `highestAverage`, `highestMax`, `lowestCurrent`, `lowestAverage`, `highest`, `lowest`.
pub(super) fn highest_current(a: &Args<'_, '_>) -> Result<Vec<Series>, String> {
    let Args { name, .. } = *a;
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
