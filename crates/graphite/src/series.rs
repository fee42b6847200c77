//! A series as graphite-web's functions see it, and what graphite-web does to every series:
//! consolidation (`consolidateBy`, `maxDataPoints`) and the aggregations its functions name.

/// A series as graphite-web's functions see it: points at `start`, `start + step`, ...
/// (before `end`), each a value or None.
#[derive(Debug, Clone, PartialEq)]
pub struct Series {
    pub name: String,
    pub path_expression: String,
    pub start: i64,
    pub end: i64,
    pub step: i64,
    pub values: Vec<Option<f64>>,
    /// How [`Series::consolidate`] combines points: average, sum, min, max, first, last.
    pub consolidation: String,
    pub xff: f64,
}

impl Series {
    pub fn new(name: String, start: i64, end: i64, step: i64, values: Vec<Option<f64>>) -> Series {
        Series {
            path_expression: name.clone(),
            name,
            start,
            end,
            step,
            values,
            consolidation: "average".into(),
            xff: 0.0,
        }
    }

    /// The same series, renamed, with other values.
    pub fn with(&self, name: String, values: Vec<Option<f64>>) -> Series {
        Series {
            name,
            values,
            ..self.clone()
        }
    }

    /// Combine every `n` points into one with the series' consolidation function (a point
    /// is None unless a fraction >= xff of its points are known; a last short group counts
    /// as a whole one), as graphite-web's consolidating iterator does.
    pub fn consolidate(&mut self, n: usize) {
        if n <= 1 {
            return;
        }
        let f = self.consolidation.clone();
        let xff = self.xff;
        self.values = self
            .values
            .chunks(n)
            .map(|c| {
                let known: Vec<f64> = c.iter().flatten().copied().collect();
                if known.is_empty() || (known.len() as f64 / n as f64) < xff {
                    return None;
                }
                agg(&f, &known, c)
            })
            .collect();
        self.step *= n as i64;
    }
}

/// A consolidation (or aggregation) function over the known values `v` of a group `all`.
pub fn agg(f: &str, v: &[f64], all: &[Option<f64>]) -> Option<f64> {
    if v.is_empty() {
        return None;
    }
    Some(match f {
        "sum" | "total" => v.iter().sum(),
        "average" | "avg" => v.iter().sum::<f64>() / v.len() as f64,
        "avg_zero" => v.iter().sum::<f64>() / all.len() as f64,
        "max" => v.iter().copied().fold(f64::MIN, f64::max),
        "min" => v.iter().copied().fold(f64::MAX, f64::min),
        "first" => v[0],
        "last" | "current" => v[v.len() - 1],
        "count" => v.len() as f64,
        "multiply" => v.iter().product(),
        "diff" => v[0] - v[1..].iter().sum::<f64>(),
        "range" | "rangeOf" => {
            v.iter().copied().fold(f64::MIN, f64::max) - v.iter().copied().fold(f64::MAX, f64::min)
        }
        "median" => {
            let mut s = v.to_vec();
            s.sort_by(f64::total_cmp);
            let m = s.len() / 2;
            if s.len() % 2 == 1 {
                s[m]
            } else {
                (s[m - 1] + s[m]) / 2.0
            }
        }
        "stddev" => {
            let mean = v.iter().sum::<f64>() / v.len() as f64;
            (v.iter().map(|x| (x - mean) * (x - mean)).sum::<f64>() / v.len() as f64).sqrt()
        }
        _ => return None,
    })
}

/// Whether `f` names an aggregation [`agg`] knows.
pub fn is_agg(f: &str) -> bool {
    matches!(
        f,
        "sum"
            | "total"
            | "average"
            | "avg"
            | "avg_zero"
            | "max"
            | "min"
            | "first"
            | "last"
            | "current"
            | "count"
            | "multiply"
            | "diff"
            | "range"
            | "rangeOf"
            | "median"
            | "stddev"
    )
}

/// `maxDataPoints`, as graphite-web applies it to its JSON: each series consolidated so
/// that the whole range fits, its start nudged so that the bands stay put between calls.
pub fn fit(series: &mut [Series], max_points: usize) {
    if series.is_empty() || max_points == 0 {
        return;
    }
    let start = series.iter().map(|s| s.start).min().unwrap_or(0);
    let end = series.iter().map(|s| s.end).max().unwrap_or(0);
    let range = end - start;
    for s in series {
        if max_points == 1 {
            let n = s.values.len();
            s.consolidate(n);
            continue;
        }
        let points = range as f64 / s.step as f64;
        if (max_points as f64) < points {
            let per = (points / max_points as f64).ceil() as i64;
            let secs = per * s.step;
            let nudge = secs + s.start.rem_euclid(s.step) - s.start.rem_euclid(secs);
            s.start += nudge;
            let lose = (nudge / s.step) as usize;
            // graphite-web drops one fewer value than the steps it moved the start by.
            let drop = lose.saturating_sub(1).min(s.values.len());
            s.values.drain(..drop);
            s.consolidate(per as usize);
        }
    }
}

/// The points of `s`: (value, time) from its start, one step apart, as many as the values
/// and the range allow.
pub fn datapoints(s: &Series) -> Vec<(Option<f64>, i64)> {
    let n = if s.step > 0 {
        (((s.end - s.start) / s.step) + 1).max(0) as usize
    } else {
        0
    };
    s.values
        .iter()
        .take(n)
        .enumerate()
        .map(|(i, v)| (*v, s.start + i as i64 * s.step))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn consolidation_and_max_data_points_follow_graphite_web() {
        let mut s = Series::new(
            "a".into(),
            100,
            160,
            10,
            vec![Some(1.0), None, Some(3.0), Some(4.0), None, None],
        );
        let mut c = s.clone();
        c.consolidate(2);
        assert_eq!(c.values, vec![Some(1.0), Some(3.5), None]);
        assert_eq!(c.step, 20);
        s.consolidation = "max".into();
        s.consolidate(4);
        assert_eq!(s.values, vec![Some(4.0), None]);
        // 60 points into at most 20: 3 a point, the start nudged to a multiple of 30.
        let vals: Vec<Option<f64>> = (0..60).map(|i| Some(i as f64)).collect();
        let mut v = vec![Series::new("b".into(), 1000, 1600, 10, vals)];
        fit(&mut v, 20);
        assert_eq!(v[0].step, 30);
        assert_eq!(v[0].start, 1020);
        assert_eq!(v[0].values[0], Some(2.0));
        let dp = datapoints(&v[0]);
        assert_eq!(dp[0], (Some(2.0), 1020));
        assert!(dp.len() <= 20);
    }
}
