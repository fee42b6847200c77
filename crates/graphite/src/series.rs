//! A series as graphite-web's functions see it, and what graphite-web does to every series:
//! consolidation (`consolidateBy`, `maxDataPoints`) and the aggregations its functions name.

/// A series' tags as graphite-web keeps them: a dict in insertion order (a tag set again
/// keeps its place), every value a string.
pub type Tags = Vec<(String, String)>;

/// Tags as a series holds them: shared, as graphite-web's series share one dict where it
/// copies a series or gives a new one another's tags (a tag set on one shows on all).
pub type SharedTags = std::rc::Rc<std::cell::RefCell<Tags>>;

/// Tags of their own.
pub fn own(t: Tags) -> SharedTags {
    std::rc::Rc::new(std::cell::RefCell::new(t))
}

/// A series as graphite-web's functions see it: points at `start`, `start + step`, ...
/// (before `end`), each a value or None.
///
/// As graphite-web's TimeSeries, a series is consolidated lazily: `vpp` (values per point)
/// above 1 makes [`Series::points`] combine that many raw values a point with the series'
/// consolidation function, while `values` (what graphite-web indexes and counts) stays raw.
#[derive(Debug, Clone, PartialEq)]
pub struct Series {
    pub name: String,
    pub path_expression: String,
    pub start: i64,
    pub end: i64,
    pub step: i64,
    pub values: Vec<Option<f64>>,
    /// Raw values a point (graphite-web's valuesPerPoint).
    pub vpp: usize,
    /// How points are combined: average, avg_zero, sum, min, max, first, last.
    pub consolidation: String,
    pub xff: f64,
    pub tags: SharedTags,
    /// The name is Python's None (written `null`) while it reads "None".
    pub name_none: bool,
    /// Every value is a Python int (isNonNull's, countSeries', a count's): written without
    /// a fraction, and kept whole by the sums, extremes and differences of them.
    pub ints: bool,
    /// Which raw values are Python ints, where only some are (transformNull's default 0
    /// among floats); None: as `ints` says.
    pub int_mask: Option<Vec<bool>>,
}

impl Series {
    /// A new series named `name`, its tags read from the name as graphite-web does.
    pub fn new(name: String, start: i64, end: i64, step: i64, values: Vec<Option<f64>>) -> Series {
        Series {
            path_expression: name.clone(),
            tags: own(crate::tags::of_name(&name)),
            name,
            start,
            end,
            step,
            values,
            vpp: 1,
            consolidation: "average".into(),
            xff: 0.0,
            name_none: false,
            ints: false,
            int_mask: None,
        }
    }

    /// A new series from this one (graphite-web's `copy`): its tags, consolidation and
    /// xFilesFactor kept, the rest given; its path expression is its name.
    pub fn copy(
        &self,
        name: String,
        start: i64,
        end: i64,
        step: i64,
        values: Vec<Option<f64>>,
    ) -> Series {
        Series {
            path_expression: name.clone(),
            name,
            start,
            end,
            step,
            values,
            vpp: 1,
            consolidation: self.consolidation.clone(),
            xff: self.xff,
            tags: self.tags.clone(),
            name_none: false,
            ints: false,
            int_mask: None,
        }
    }

    /// Set tag `k` (in its place if it is there, else last), on every series sharing
    /// these tags.
    pub fn set_tag(&mut self, k: &str, v: impl Into<String>) {
        set_tag(&mut self.tags.borrow_mut(), k, v);
    }

    /// Tag `k`'s value.
    pub fn tag(&self, k: &str) -> Option<String> {
        self.tags
            .borrow()
            .iter()
            .find(|(t, _)| t == k)
            .map(|(_, v)| v.clone())
    }

    /// A copy of the tags.
    pub fn tag_list(&self) -> Tags {
        self.tags.borrow().clone()
    }

    /// Combine every `n` values into a point from now on (graphite-web's `consolidate`:
    /// it sets, not multiplies, the values a point).
    pub fn consolidate(&mut self, n: usize) {
        self.vpp = n.max(1);
    }

    /// The points as graphite-web iterates a series: the raw values, or with `vpp` above 1
    /// each group of `vpp` combined (None unless a fraction >= xff of them is known; a last
    /// short group is measured against a whole one).
    pub fn points(&self) -> std::borrow::Cow<'_, [Option<f64>]> {
        if self.vpp <= 1 {
            return std::borrow::Cow::Borrowed(&self.values);
        }
        let n = self.vpp;
        let f = self.consolidation.as_str();
        self.values
            .chunks(n)
            .map(|c| {
                let known = c.iter().flatten().count();
                if known == 0 || (known as f64 / n as f64) < self.xff {
                    return None;
                }
                let vals: Vec<f64> = if f == "avg_zero" {
                    c.iter().map(|v| v.unwrap_or(0.0)).collect()
                } else {
                    c.iter().flatten().copied().collect()
                };
                match f {
                    "sum" => Some(py_sum(&vals)),
                    "average" | "avg" | "avg_zero" => Some(py_sum(&vals) / vals.len() as f64),
                    "max" => vals.iter().copied().reduce(py_max),
                    "min" => vals.iter().copied().reduce(py_min),
                    "first" => vals.first().copied(),
                    "last" => vals.last().copied(),
                    _ => None,
                }
            })
            .collect::<Vec<_>>()
            .into()
    }

    /// Whether raw value `i` is a Python int.
    pub fn int_at(&self, i: usize) -> bool {
        self.ints
            || self
                .int_mask
                .as_ref()
                .is_some_and(|m| m.get(i).copied().unwrap_or(false))
    }

    /// The smallest or largest known point (Python's min/max: the first of equals) and
    /// whether it is an int.
    pub fn extreme(&self, largest: bool) -> Option<(f64, bool)> {
        let pts = self.points();
        let known = pts
            .iter()
            .enumerate()
            .filter_map(|(i, v)| v.map(|v| (i, v)));
        first_extreme(known, largest).map(|(i, v)| (v, self.vpp <= 1 && self.int_at(i)))
    }

    /// The number of points [`Series::points`] gives.
    pub fn point_count(&self) -> usize {
        self.values.len().div_ceil(self.vpp.max(1))
    }
}

/// Set tag `k` of `tags` (in its place if it is there, else last).
pub fn set_tag(tags: &mut Tags, k: &str, v: impl Into<String>) {
    let v = v.into();
    match tags.iter_mut().find(|(t, _)| t == k) {
        Some(t) => t.1 = v,
        None => tags.push((k.to_string(), v)),
    }
}

/// Floats ordered as Python's `sorted` orders them (equal when neither is less).
pub fn py_cmp(a: &f64, b: &f64) -> std::cmp::Ordering {
    a.partial_cmp(b).unwrap_or(std::cmp::Ordering::Equal)
}

/// The index and value of the largest (or smallest) of `values`: Python's max/min, the
/// first of equals.
pub fn first_extreme(
    values: impl Iterator<Item = (usize, f64)>,
    largest: bool,
) -> Option<(usize, f64)> {
    let mut best: Option<(usize, f64)> = None;
    for (i, v) in values {
        if best.is_none_or(|(_, b)| if largest { v > b } else { v < b }) {
            best = Some((i, v));
        }
    }
    best
}

/// Python's `sum` of floats: from 0, left to right.
pub fn py_sum(v: &[f64]) -> f64 {
    v.iter().fold(0.0, |a, b| a + b)
}

/// Python's `max` of two floats (the first of equals; NaN compares as Python's does).
pub fn py_max(a: f64, b: f64) -> f64 {
    if b > a {
        b
    } else {
        a
    }
}

/// Python's `min` of two floats.
pub fn py_min(a: f64, b: f64) -> f64 {
    if b < a {
        b
    } else {
        a
    }
}

/// graphite-web's aggregation functions (its `aggFuncs`, with their aliases), each over a
/// row of values with their Nones, as its `safe` helpers treat them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Agg {
    Average,
    AvgZero,
    Median,
    Sum,
    Min,
    Max,
    Diff,
    Stddev,
    Count,
    Range,
    Multiply,
    Last,
}

impl Agg {
    /// The function a name stands for (`avg`, `total`, `current`, `rangeOf` are aliases).
    pub fn of(name: &str) -> Option<Agg> {
        Some(match name {
            "average" | "avg" => Agg::Average,
            "avg_zero" => Agg::AvgZero,
            "median" => Agg::Median,
            "sum" | "total" => Agg::Sum,
            "min" => Agg::Min,
            "max" => Agg::Max,
            "diff" => Agg::Diff,
            "stddev" => Agg::Stddev,
            "count" => Agg::Count,
            "range" | "rangeOf" => Agg::Range,
            "multiply" => Agg::Multiply,
            "last" | "current" => Agg::Last,
            _ => return None,
        })
    }

    /// Whether the function gives a Python int over values that all are (`ints`): a count
    /// always; a sum, extreme, last or difference of ints.
    pub fn int_result(self, ints: bool) -> bool {
        match self {
            Agg::Count => true,
            Agg::Sum | Agg::Min | Agg::Max | Agg::Last | Agg::Diff => ints,
            _ => false,
        }
    }

    /// Whether the function over `row` gives a Python int, where `int(j)` says whether
    /// the row's value `j` is one: Python's min/max/last keep the element they pick (the
    /// first of equals), a sum or difference stays an int while every term is, a count is
    /// one always.
    pub fn int_at(self, row: &[Option<f64>], int: impl Fn(usize) -> bool) -> bool {
        let known = || {
            row.iter()
                .enumerate()
                .filter_map(|(j, v)| v.map(|v| (j, v)))
        };
        let picked = |largest| first_extreme(known(), largest).is_some_and(|(j, _)| int(j));
        match self {
            Agg::Count => true,
            Agg::Min => picked(false),
            Agg::Max => picked(true),
            Agg::Last => known().next_back().is_some_and(|(j, _)| int(j)),
            Agg::Sum | Agg::Diff => known().next().is_some() && known().all(|(j, _)| int(j)),
            _ => false,
        }
    }

    /// The function over `row`: None where graphite-web's gives None (no known value; for
    /// multiply, any unknown one). `count` of nothing is 0.
    pub fn apply(self, row: &[Option<f64>]) -> Option<f64> {
        let known = || row.iter().flatten().copied();
        let first_known = row.iter().flatten().next().copied();
        match self {
            Agg::Average => {
                // Python's sum, from 0 left to right, then the count.
                let (sum, n) = known().fold((0.0, 0usize), |(a, n), b| (a + b, n + 1));
                (n > 0).then(|| sum / n as f64)
            }
            Agg::AvgZero => (!row.is_empty())
                .then(|| row.iter().fold(0.0, |a, v| a + v.unwrap_or(0.0)) / row.len() as f64),
            Agg::Median => {
                let mut v: Vec<f64> = known().collect();
                if v.is_empty() {
                    return None;
                }
                v.sort_by(py_cmp);
                let m = v.len() / 2;
                Some(if v.len().is_multiple_of(2) {
                    (v[m - 1] + v[m]) / 2.0
                } else {
                    v[m]
                })
            }
            Agg::Sum => first_known.map(|_| known().fold(0.0, |a, b| a + b)),
            Agg::Min => known().reduce(py_min),
            Agg::Max => known().reduce(py_max),
            Agg::Diff => first_known.map(|f| known().skip(1).fold(f, |a, b| a + -b)),
            Agg::Stddev => {
                let (sum, n) = known().fold((0.0, 0usize), |(a, n), b| (a + b, n + 1));
                if n == 0 {
                    return None;
                }
                let avg = sum / n as f64;
                let sq = known().fold(0.0, |a, x| a + (x - avg) * (x - avg));
                Some((sq / n as f64).sqrt())
            }
            Agg::Count => Some(known().count() as f64),
            Agg::Range => Some(known().reduce(py_max)? - known().reduce(py_min)?),
            Agg::Multiply => {
                if row.iter().any(Option::is_none) {
                    return None;
                }
                known().reduce(|a, b| a * b)
            }
            Agg::Last => row.iter().rev().flatten().next().copied(),
        }
    }
}

/// The names graphite-web's aggregation functions take (sorted, as its `/functions` lists
/// them).
pub const AGG_NAMES: &[&str] = &[
    "average", "avg", "avg_zero", "count", "current", "diff", "last", "max", "median", "min",
    "multiply", "range", "rangeOf", "stddev", "sum", "total",
];

/// `maxDataPoints`, as graphite-web applies it to its JSON: each series consolidated so
/// that the whole range fits, its start nudged so that the bands stay put between calls.
/// A series without values fails there with one point asked for (graphite-web consolidates
/// it by zero values a point), unless no series has values (then nothing is written).
pub fn fit(series: &mut [Series], max_points: usize) -> Result<(), String> {
    if max_points == 0 || !series.iter().any(|s| !s.values.is_empty()) {
        return Ok(());
    }
    let start = series.iter().map(|s| s.start).min().unwrap_or(0);
    let end = series.iter().map(|s| s.end).max().unwrap_or(0);
    let range = end - start;
    for s in series {
        if max_points == 1 {
            let n = s.values.len();
            if n == 0 {
                return Err(format!(
                    "{}: no values to consolidate into one point (graphite-web fails here)",
                    s.name
                ));
            }
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
            // graphite-web drops one fewer value than the steps it moved the start by (and
            // fails when there are not that many).
            let drop = lose.saturating_sub(1);
            if drop > s.values.len() {
                return Err(format!(
                    "{}: {drop} values to drop for maxDataPoints, {} there (graphite-web fails here)",
                    s.name,
                    s.values.len()
                ));
            }
            s.values.drain(..drop);
            s.consolidate(per as usize);
        }
    }
    Ok(())
}

/// The points of `s`: (value, time) from its start, one step (times the values a point)
/// apart, as many as the values and the range allow.
pub fn datapoints(s: &Series) -> Vec<(Option<f64>, i64)> {
    let step = s.step * s.vpp.max(1) as i64;
    let n = if step > 0 {
        (((s.end - s.start) / step) + 1).max(0) as usize
    } else {
        0
    };
    s.points()
        .iter()
        .take(n)
        .enumerate()
        .map(|(i, v)| (*v, s.start + i as i64 * step))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_aggregate_is_an_int_where_python_keeps_one() {
        // Row values 0 (an int, isNonNull's), 0.5 and 1.0 (floats), None.
        let row = [Some(0.0), Some(0.5), None, Some(1.0)];
        let int = |j: usize| j == 0;
        assert!(Agg::Min.int_at(&row, int));
        assert!(!Agg::Max.int_at(&row, int));
        assert!(!Agg::Last.int_at(&row, int));
        assert!(!Agg::Sum.int_at(&row, int));
        assert!(Agg::Count.int_at(&row, int));
        assert!(!Agg::Average.int_at(&row, int));
        // The first of equals: 1 (int) before 1.0.
        let row = [Some(1.0), Some(1.0)];
        assert!(Agg::Max.int_at(&row, |j| j == 0));
        assert!(!Agg::Max.int_at(&row, |j| j == 1));
        assert!(Agg::Sum.int_at(&row, |_| true));
        assert!(!Agg::Sum.int_at(&[None, None], |_| true));
        assert!(Agg::Last.int_at(&[Some(2.0), None], |j| j == 0));
    }

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
        assert_eq!(c.points(), vec![Some(1.0), Some(3.5), None]);
        assert_eq!(c.values.len(), 6);
        s.consolidation = "max".into();
        s.consolidate(4);
        assert_eq!(s.points(), vec![Some(4.0), None]);
        // 60 points into at most 20: 3 a point, the start nudged to a multiple of 30.
        let vals: Vec<Option<f64>> = (0..60).map(|i| Some(i as f64)).collect();
        let mut v = vec![Series::new("b".into(), 1000, 1600, 10, vals)];
        fit(&mut v, 20).unwrap();
        assert_eq!(v[0].vpp, 3);
        assert_eq!(v[0].start, 1020);
        assert_eq!(v[0].points()[0], Some(2.0));
        let dp = datapoints(&v[0]);
        assert_eq!(dp[0], (Some(2.0), 1020));
        assert!(dp.len() <= 20);
    }
}
