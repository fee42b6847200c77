//! graphite-web's Special group: series that come from the store's tags, from a constant, and
//! the consolidation chosen.

use super::*;

/// `seriesByTag`.
pub(super) fn series_by_tag(a: &Args<'_, '_>) -> Result<Vec<Series>, String> {
    let Args { ctx, args, .. } = *a;
    let mut exprs = Vec::new();
    let mut quoted = Vec::new();
    for (i, _) in args.iter().enumerate() {
        let e = a.string(i, "tagExpressions")?;
        exprs.push(crate::tags::Expr::parse(&e)?);
        quoted.push(format!("'{e}'"));
    }
    if !exprs.iter().any(crate::tags::Expr::positive) {
        return Err(
            "seriesByTag: at least one expression must select series by itself \
             (tag=value or tag=~regex that does not match nothing)"
                .into(),
        );
    }
    let expression = format!("seriesByTag({})", quoted.join(","));
    let mut out = Vec::new();
    for path in ctx.source.tagged() {
        let Ok(t) = crate::tags::parse(&path) else {
            continue;
        };
        if exprs.iter().all(|e| e.matches(&t)) {
            for mut s in ctx.fetch(&path)? {
                s.path_expression = expression.clone();
                out.push(s);
            }
        }
    }
    Ok(out)
}

/// `constantLine`.
pub(super) fn constant_line(a: &Args<'_, '_>) -> Result<Vec<Series>, String> {
    let Args { ctx, .. } = *a;
    let v = a.num(0, "value")?;
    let (from, until) = (ctx.from, ctx.until);
    let step = ((until - from) / 2).max(1);
    Ok(vec![Series::new(
        crate::format::py_float(v),
        from,
        until,
        step,
        vec![Some(v); 3],
    )])
}

/// `consolidateBy`.
pub(super) fn consolidate_by(a: &Args<'_, '_>) -> Result<Vec<Series>, String> {
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
