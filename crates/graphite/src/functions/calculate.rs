//! graphite-web's Calculate group: moving windows over each series.

use super::*;

/// `movingAverage`, `movingSum`, `movingMin`, `movingMax`, `movingMedian`, `movingWindow`.
pub(super) fn moving_average(a: &Args<'_, '_>) -> Result<Vec<Series>, String> {
    let Args { ctx, name, .. } = *a;
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
    let inner = ctx.over(ctx.from - preview, ctx.until);
    let tag = format!("moving{}{}", func[..1].to_ascii_uppercase(), &func[1..]);
    let l = eval(&inner, a.need(0, "seriesList")?)?;
    for s in &l {
        // Each point visits its window.
        let points = match &window {
            Expr::Num(n) => *n as u128,
            _ => (preview / s.step.max(1)).max(0) as u128,
        };
        let n = (s.values.len() as u128).saturating_sub(points);
        ctx.limits
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
