//! The VDEFs of `xport`: one value from a whole series (`VDEF:v=x,AVERAGE`,
//! `VDEF:v=x,95,PERCENT`), usable as a constant in later CDEFs, with rrdtool's parse errors.
//!
//! Facts from the binary: a VDEF covers every row of its series (for a DEF all fetched rows,
//! so up to `floor(end/step)*step + step`); unknown values are skipped; STDEV is the
//! population deviation; PERCENT sorts unknowns lowest and counts them, PERCENTNAN leaves them
//! out, both take the value at `floor(p/100*(n-1) + 0.5)`; the LSL* functions fit a line
//! against the 0-based row index; TOTAL sums value * step.

use super::{err, Kind, Var};
use crate::num::strtod;
use crate::RrdError;

#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) enum VdefFn {
    Maximum,
    Minimum,
    Average,
    Stdev,
    Last,
    First,
    Total,
    Percent(f64),
    PercentNan(f64),
    LslSlope,
    LslInt,
    LslCorrel,
}

/// A parsed VDEF: the series it reads and the function.
#[derive(Debug, Clone, Copy)]
pub(super) struct Vdef {
    pub(super) var: usize,
    pub(super) func: VdefFn,
    /// The value, once computed.
    pub(super) value: f64,
}

/// Parses the part of `VDEF:` after the keyword (`name=x,FUNC`).
pub(super) fn parse_vdef(rest: &str, vars: &[Var]) -> Result<(String, Vdef), RrdError> {
    let Some((name, expr)) = rest.split_once('=') else {
        return Err(err(format!("Comma expected in VDEF definition {}", rest)));
    };
    if vars.iter().any(|v| v.name == name) {
        return Err(err(format!("trying to reuse vname {}", name)));
    }
    let Some((x, func)) = expr.split_once(',') else {
        return Err(err(format!("Comma expected in VDEF definition {}", expr)));
    };
    let Some(var) = vars.iter().rposition(|v| v.name == x) else {
        return Err(err(format!("Not a valid vname: {} in line {}", x, expr)));
    };
    if matches!(vars[var].kind, Kind::Vdef(_)) {
        return Err(err(format!(
            "variable '{}' not DEF nor CDEF in VDEF '{}'",
            x, expr
        )));
    }
    let unknown_string = || {
        err(format!(
            "Unknown function string '{}' in VDEF '{}'",
            func, name
        ))
    };
    let func = match func.split_once(',') {
        Some((param, f)) => {
            let p = match strtod(param) {
                Some((p, n)) if n == param.len() && !param.is_empty() => p,
                _ => return Err(unknown_string()),
            };
            let f = match f {
                "PERCENT" => VdefFn::Percent(p),
                "PERCENTNAN" => VdefFn::PercentNan(p),
                _ => return Err(unknown_string()),
            };
            if !(0.0..=100.0).contains(&p) {
                return Err(err(format!(
                    "Parameter '{:.6}' out of range in VDEF '{}'\n",
                    p, name
                )));
            }
            f
        }
        None => match func {
            "MAXIMUM" => VdefFn::Maximum,
            "MINIMUM" => VdefFn::Minimum,
            "AVERAGE" => VdefFn::Average,
            "STDEV" => VdefFn::Stdev,
            "LAST" => VdefFn::Last,
            "FIRST" => VdefFn::First,
            "TOTAL" => VdefFn::Total,
            "LSLSLOPE" => VdefFn::LslSlope,
            "LSLINT" => VdefFn::LslInt,
            "LSLCORREL" => VdefFn::LslCorrel,
            _ => {
                return Err(err(format!(
                    "Unknown function '{}' in VDEF '{}'\n",
                    func, name
                )))
            }
        },
    };
    Ok((
        name.to_string(),
        Vdef {
            var,
            func,
            value: f64::NAN,
        },
    ))
}

/// The VDEF's value over the rows of its series (`step` seconds each).
pub(super) fn eval_vdef(func: VdefFn, rows: &[f64], step: i64) -> f64 {
    let known: Vec<f64> = rows.iter().copied().filter(|v| !v.is_nan()).collect();
    let n = known.len() as f64;
    let mean = || known.iter().sum::<f64>() / n;
    if known.is_empty() && !matches!(func, VdefFn::Percent(_)) {
        return f64::NAN;
    }
    match func {
        VdefFn::Maximum => known.iter().copied().fold(f64::NEG_INFINITY, f64::max),
        VdefFn::Minimum => known.iter().copied().fold(f64::INFINITY, f64::min),
        VdefFn::Average => mean(),
        VdefFn::Stdev => {
            let m = mean();
            (known.iter().map(|v| (v - m) * (v - m)).sum::<f64>() / n).sqrt()
        }
        VdefFn::Last => known[known.len() - 1],
        VdefFn::First => known[0],
        VdefFn::Total => known.iter().map(|v| v * step as f64).sum(),
        VdefFn::Percent(p) => {
            // Unknowns sort lowest and count.
            let mut all: Vec<f64> = rows.to_vec();
            all.sort_by(|a, b| match (a.is_nan(), b.is_nan()) {
                (true, true) => std::cmp::Ordering::Equal,
                (true, false) => std::cmp::Ordering::Less,
                (false, true) => std::cmp::Ordering::Greater,
                _ => a.total_cmp(b),
            });
            percentile(&all, p)
        }
        VdefFn::PercentNan(p) => {
            let mut k = known.clone();
            k.sort_by(f64::total_cmp);
            percentile(&k, p)
        }
        VdefFn::LslSlope | VdefFn::LslInt | VdefFn::LslCorrel => {
            let (mut sx, mut sy, mut sxx, mut sxy, mut syy) = (0.0, 0.0, 0.0, 0.0, 0.0);
            for (i, v) in rows.iter().enumerate() {
                if v.is_nan() {
                    continue;
                }
                let x = i as f64;
                sx += x;
                sy += v;
                sxx += x * x;
                sxy += x * v;
                syy += v * v;
            }
            let slope = (n * sxy - sx * sy) / (n * sxx - sx * sx);
            match func {
                VdefFn::LslSlope => slope,
                VdefFn::LslInt => (sy - slope * sx) / n,
                _ => (n * sxy - sx * sy) / ((n * sxx - sx * sx) * (n * syy - sy * sy)).sqrt(),
            }
        }
    }
}

/// The value at `floor(p/100*(n-1) + 0.5)` of sorted values.
fn percentile(sorted: &[f64], p: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    let idx = (p / 100.0 * (sorted.len() - 1) as f64 + 0.5).floor() as usize;
    sorted[idx.min(sorted.len() - 1)]
}
