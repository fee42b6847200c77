//! The CDEFs of `xport`: each on its own grid, with the series operators the RPN module
//! leaves to its caller (TIME/LTIME, STEPWIDTH, COUNT, PREV, PREV(x), NEWDAY..NEWYEAR,
//! `x,w,TREND`/`TRENDNAN`, PREDICT/PREDICTSIGMA/PREDICTPERC), computed as rrdtool computes
//! them.

use super::{err, gcd, value, Kind, Var};
use crate::rpn::{self, EvalCtx, Rpn};
use crate::RrdError;

/// A compiled CDEF with the series operators the RPN module leaves to the caller.
#[derive(Debug)]
pub(super) struct Cdef {
    pub(super) rpn: Rpn,
    pub(super) series: Series,
}

/// The series operators of one CDEF, each standing as a variable in its program.
#[derive(Debug, Default)]
pub(super) struct Series {
    /// `x,window,TREND` / `TRENDNAN`: variable [`TREND_BASE`]` - k` is `trends[k]`.
    pub(super) trends: Vec<Trend>,
    /// `PREV(x)`: variable [`PREV_OF_BASE`]` - k` is the previous value of `prev_of[k]`.
    pub(super) prev_of: Vec<usize>,
    /// PREDICT family: variable [`PREDICT_BASE`]` - k` is `predicts[k]`.
    pub(super) predicts: Vec<Predict>,
}

/// `shifts..,n,window,[percentile,]x,PREDICT*`.
#[derive(Debug, Clone)]
pub(super) struct Predict {
    pub(super) var: usize,
    pub(super) shifts: Vec<i64>,
    pub(super) window: i64,
    pub(super) kind: PredictKind,
}

#[derive(Debug, Clone, Copy)]
pub(super) enum PredictKind {
    Average,
    Sigma,
    Percentile(f64),
}

#[derive(Debug, Clone, Copy)]
pub(super) struct Trend {
    pub(super) var: usize,
    pub(super) window: f64,
    pub(super) nan_safe: bool,
}

/// Variable indices standing for what the RPN module leaves to the caller: a CDEF's grid
/// time (TIME, and LTIME: ringlet is UTC), grid step (STEPWIDTH), 1-based grid index (COUNT)
/// and previous value (PREV).
pub(super) const TIME_VAR: usize = usize::MAX - 1;
pub(super) const STEP_VAR: usize = usize::MAX - 2;
pub(super) const COUNT_VAR: usize = usize::MAX - 3;
pub(super) const PREV_VAR: usize = usize::MAX - 4;
pub(super) const NEWDAY_VAR: usize = usize::MAX - 5;
pub(super) const NEWWEEK_VAR: usize = usize::MAX - 6;
pub(super) const NEWMONTH_VAR: usize = usize::MAX - 7;
pub(super) const NEWYEAR_VAR: usize = usize::MAX - 8;

/// NEWDAY, NEWWEEK (weeks start on Sunday, C locale), NEWMONTH, NEWYEAR: 1 when the grid
/// step ending at `t` crosses into a new period (UTC), else 0.
fn new_period(var: usize, t: i64, step: i64) -> f64 {
    let (d1, d0) = (t.div_euclid(86_400), (t - step).div_euclid(86_400));
    let changed = match var {
        NEWDAY_VAR => d1 != d0,
        NEWWEEK_VAR => (d1 + 4).div_euclid(7) != (d0 + 4).div_euclid(7),
        _ => {
            let (y1, m1, _) = crate::dump::civil_from_days(d1);
            let (y0, m0, _) = crate::dump::civil_from_days(d0);
            if var == NEWMONTH_VAR {
                (y1, m1) != (y0, m0)
            } else {
                y1 != y0
            }
        }
    };
    if changed {
        1.0
    } else {
        0.0
    }
}

/// First of the variable indices for `x,w,TREND` (counting down), and for `PREV(x)`.
pub(super) const TREND_BASE: usize = usize::MAX - 1000;
pub(super) const PREV_OF_BASE: usize = usize::MAX - 2000;
pub(super) const PREDICT_BASE: usize = usize::MAX - 3000;

/// PREDICT at grid time `t`: the known values of x's rows ending in `(t-s-window,
/// t-s+x.step]` for every shift s, averaged (PREDICT), their sample standard deviation
/// (PREDICTSIGMA), or a percentile (PREDICTPERC: interpolated for p >= 0, the nearest value,
/// halves rounded up, for p < 0). Rows outside x's data are left out (rrdtool reads past its
/// arrays there).
fn predict(vars: &[Var], p: &Predict, t: i64) -> f64 {
    let src = &vars[p.var];
    if src.step <= 0 {
        return f64::NAN;
    }
    let mut vals: Vec<f64> = Vec::new();
    for s in &p.shifts {
        let lo = (t - s - p.window - src.start).div_euclid(src.step);
        let hi = (t - s + src.step - src.start).div_euclid(src.step) - 1;
        for idx in lo.max(0)..=hi {
            if let Some(v) = src.rows.get(idx as usize) {
                if !v.is_nan() {
                    vals.push(*v);
                }
            }
        }
    }
    if vals.is_empty() {
        return f64::NAN;
    }
    let n = vals.len() as f64;
    match p.kind {
        PredictKind::Average => vals.iter().sum::<f64>() / n,
        PredictKind::Sigma => {
            let mean = vals.iter().sum::<f64>() / n;
            let sq: f64 = vals.iter().map(|v| (v - mean) * (v - mean)).sum();
            (sq / (n - 1.0)).sqrt()
        }
        PredictKind::Percentile(pc) => {
            vals.sort_by(f64::total_cmp);
            let pos = (n - 1.0) * pc.abs() / 100.0;
            if pc < 0.0 {
                vals[((pos + 0.5).floor() as usize).min(vals.len() - 1)]
            } else {
                let lo = (pos.floor() as usize).min(vals.len() - 1);
                let hi = (lo + 1).min(vals.len() - 1);
                vals[lo] + (vals[hi] - vals[lo]) * (pos - lo as f64)
            }
        }
    }
}

/// A CDEF over its own grid: step the gcd of its inputs' steps, from the latest input start
/// to the earliest input end (one without inputs is refused, as rrdtool does). TIME and
/// LTIME give the grid time, STEPWIDTH the step, COUNT the 1-based grid index, PREV the
/// previous value of this CDEF, PREV(x) the row of x before the one covering the grid time. `x,w,TREND` averages the last
/// `ceil(w/x.step)` rows of x (unknown while the grid index is lower, or when one is unknown;
/// TRENDNAN skips unknowns).
pub(super) fn eval_cdef(
    vars: &[Var],
    i: usize,
    now: i64,
) -> Result<(i64, i64, Vec<f64>), RrdError> {
    let Kind::Cdef(c) = &vars[i].kind else {
        return Ok((0, 0, Vec::new()));
    };
    let mut inputs: Vec<usize> = c
        .rpn
        .ops()
        .iter()
        .filter_map(|op| match op {
            rpn::Op::Var(j) if *j < vars.len() && !matches!(vars[*j].kind, Kind::Vdef(_)) => {
                Some(*j)
            }
            _ => None,
        })
        .collect();
    inputs.extend(c.series.trends.iter().map(|t| t.var));
    inputs.extend(c.series.prev_of.iter().copied());
    inputs.extend(c.series.predicts.iter().map(|p| p.var));
    if inputs.is_empty() {
        return Err(err(
            "rpn expressions without DEF or CDEF variables are not supported",
        ));
    }
    let g_step = inputs.iter().map(|&j| vars[j].step).fold(0, gcd);
    // The grid ignores SHIFTs: shifted inputs are read at their shifted times on it.
    let g_start = inputs
        .iter()
        .map(|&j| vars[j].start - vars[j].shift)
        .max()
        .unwrap_or(0);
    let g_end = inputs
        .iter()
        .map(|&j| vars[j].start - vars[j].shift + vars[j].rows.len() as i64 * vars[j].step)
        .min()
        .unwrap_or(0);
    if g_step <= 0 {
        return Ok((g_start, g_step, Vec::new()));
    }
    let n = ((g_end - g_start) / g_step).max(0) as usize;
    let mut rows = Vec::with_capacity(n);
    let mut prev = f64::NAN;
    for k in 1..=n {
        let t = g_start + k as i64 * g_step;
        let ctx = EvalCtx {
            time: t,
            step: g_step,
            now,
        };
        let trend = |tr: &Trend| {
            let src = &vars[tr.var];
            if src.step <= 0 {
                return f64::NAN;
            }
            // The window is counted in the source's own rows, ending with the last row that
            // ends at or before t; it is unknown while the CDEF grid index is below the row
            // count. On a finer CDEF grid the window can reach before the source's first
            // row: rrdtool reads memory there, which held zeros in every run seen.
            let count = (tr.window / src.step as f64).ceil().max(1.0) as i64;
            if (k as i64) < count {
                return f64::NAN;
            }
            let last = (t - src.start).div_euclid(src.step) - 1;
            let (mut sum, mut known) = (0.0, 0usize);
            for idx in last - count + 1..=last {
                let v = if idx < 0 {
                    0.0
                } else {
                    src.rows.get(idx as usize).copied().unwrap_or(f64::NAN)
                };
                if v.is_nan() {
                    if !tr.nan_safe {
                        return f64::NAN;
                    }
                } else {
                    sum += v;
                    known += 1;
                }
            }
            if known == 0 {
                f64::NAN
            } else {
                sum / known as f64
            }
        };
        let x = c.rpn.try_eval(
            &|j| match j {
                TIME_VAR => t as f64,
                STEP_VAR => g_step as f64,
                COUNT_VAR => k as f64,
                PREV_VAR => prev,
                NEWDAY_VAR | NEWWEEK_VAR | NEWMONTH_VAR | NEWYEAR_VAR => new_period(j, t, g_step),
                _ if j < vars.len() => value(vars, j, t),
                _ if j <= TREND_BASE && TREND_BASE - j < c.series.trends.len() => {
                    trend(&c.series.trends[TREND_BASE - j])
                }
                _ if j <= PREDICT_BASE && PREDICT_BASE - j < c.series.predicts.len() => {
                    predict(vars, &c.series.predicts[PREDICT_BASE - j], t)
                }
                _ if j <= PREV_OF_BASE && PREV_OF_BASE - j < c.series.prev_of.len() => {
                    if k == 1 {
                        f64::NAN
                    } else {
                        // The source's row before the one covering t, on its own grid.
                        let src = c.series.prev_of[PREV_OF_BASE - j];
                        value(vars, src, t - vars[src].step)
                    }
                }
                _ => f64::NAN,
            },
            &ctx,
        )?;
        rows.push(x);
        prev = x;
    }
    Ok((g_start, g_step, rows))
}
