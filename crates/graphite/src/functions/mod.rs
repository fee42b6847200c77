//! The render functions Grafana's users lean on, with graphite-web's names for their results
//! and its handling of None (read from its documentation and source; written here).
//!
//! [`FUNCTIONS`] is the one list of them: [`call`] finds a function there by name, and
//! `/functions` lists it from there with its group. Each group of graphite-web's has its
//! file; a function is `fn(&Args) -> Result<Vec<Series>, String>` ([`Args`] reads its
//! arguments by position or keyword and evaluates its series through [`eval`]).

use super::expr;
use super::expr::Expr;
use super::format::fmt_g;
use super::series::{agg, is_agg, Series};
use crate::ctx::Ctx;
use regex::Regex;

mod alias;
mod calculate;
mod combine;
mod filter;
mod sorting;
mod special;
mod transform;

/// The series an expression stands for: a path's, or a function's of its arguments.
pub fn eval(ctx: &Ctx<'_>, e: &Expr) -> Result<Vec<Series>, String> {
    match e {
        Expr::Path(p) => ctx.fetch(p),
        Expr::Call { name, args, kwargs } => call(ctx, name, args, kwargs),
        other => Err(format!("{other:?} is not a series")),
    }
}

/// Evaluate `targets` from `from` to `until`.
pub fn evaluate(ctx: &Ctx<'_>, targets: &[String]) -> Result<Vec<Series>, String> {
    if ctx.until <= ctx.from {
        return Err(format!(
            "until ({}) must be after from ({})",
            ctx.until, ctx.from
        ));
    }
    let mut out = Vec::new();
    for t in targets {
        let e = expr::parse(t).map_err(|e| format!("target '{t}': {e}"))?;
        out.extend(eval(ctx, &e).map_err(|e| format!("target '{t}': {e}"))?);
    }
    Ok(out)
}

/// A render function: its name, graphite-web's group for it (`/functions`; None for an
/// alias graphite-web does not list), and what it does.
pub struct Function {
    pub name: &'static str,
    pub group: Option<&'static str>,
    run: fn(&Args<'_, '_>) -> Result<Vec<Series>, String>,
}

/// A [`Function`]; `group` "" for one graphite-web does not list.
const fn def(
    name: &'static str,
    group: &'static str,
    run: fn(&Args<'_, '_>) -> Result<Vec<Series>, String>,
) -> Function {
    Function {
        name,
        group: if group.is_empty() { None } else { Some(group) },
        run,
    }
}

/// Every function served, in the order `/functions` lists them.
pub const FUNCTIONS: &[Function] = &[
    def("alias", "Alias", alias::alias),
    def("aliasByNode", "Alias", alias::alias_by_node),
    def("aliasByMetric", "Alias", alias::alias_by_metric),
    def("aliasSub", "Alias", alias::alias_sub),
    def("sumSeries", "Combine", combine::sum_series),
    def("averageSeries", "Combine", combine::average_series),
    def("maxSeries", "Combine", combine::max_series),
    def("minSeries", "Combine", combine::min_series),
    def("diffSeries", "Combine", combine::diff_series),
    def("divideSeries", "Combine", combine::divide_series),
    def("multiplySeries", "Combine", combine::multiply_series),
    def("countSeries", "Combine", combine::count_series),
    def("rangeOfSeries", "Combine", combine::range_of_series),
    def("aggregate", "Combine", combine::aggregate),
    def(
        "sumSeriesWithWildcards",
        "Combine",
        combine::sum_series_with_wildcards,
    ),
    def(
        "averageSeriesWithWildcards",
        "Combine",
        combine::sum_series_with_wildcards,
    ),
    def("groupByNode", "Combine", combine::group_by_node),
    def("groupByNodes", "Combine", combine::group_by_node),
    def("asPercent", "Combine", combine::as_percent),
    def("scale", "Transform", transform::scale),
    def("scaleToSeconds", "Transform", transform::scale_to_seconds),
    def("offset", "Transform", transform::offset),
    def("absolute", "Transform", transform::absolute),
    def("transformNull", "Transform", transform::transform_null),
    def("keepLastValue", "Transform", transform::keep_last_value),
    def("derivative", "Transform", transform::derivative),
    def(
        "nonNegativeDerivative",
        "Transform",
        transform::non_negative_derivative,
    ),
    def("perSecond", "Transform", transform::non_negative_derivative),
    def("integral", "Transform", transform::integral),
    def("timeShift", "Transform", transform::time_shift),
    def("consolidateBy", "Special", special::consolidate_by),
    def("constantLine", "Special", special::constant_line),
    def("seriesByTag", "Special", special::series_by_tag),
    def("aliasByTags", "Alias", alias::alias_by_tags),
    def("sortByName", "Sorting", sorting::sort_by_name),
    def("sortByMaxima", "Sorting", sorting::sort_by_maxima),
    def("limit", "Filter Series", filter::limit),
    def("exclude", "Filter Series", filter::exclude),
    def("grep", "Filter Series", filter::exclude),
    def(
        "removeAboveValue",
        "Filter Data",
        filter::remove_above_value,
    ),
    def(
        "removeBelowValue",
        "Filter Data",
        filter::remove_above_value,
    ),
    def("highestCurrent", "Filter Series", filter::highest_current),
    def("highestAverage", "Filter Series", filter::highest_current),
    def("highestMax", "Filter Series", filter::highest_current),
    def("lowestCurrent", "Filter Series", filter::highest_current),
    def("lowestAverage", "Filter Series", filter::highest_current),
    def("highest", "Filter Series", filter::highest_current),
    def("lowest", "Filter Series", filter::highest_current),
    def("summarize", "Transform", transform::summarize),
    def("hitcount", "Transform", transform::hitcount),
    def("movingAverage", "Calculate", calculate::moving_average),
    def("movingSum", "Calculate", calculate::moving_average),
    def("movingMin", "Calculate", calculate::moving_average),
    def("movingMax", "Calculate", calculate::moving_average),
    def("movingMedian", "Calculate", calculate::moving_average),
    def("movingWindow", "Calculate", calculate::moving_average),
    def("sum", "", combine::sum_series),
    def("avg", "", combine::average_series),
];

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
    match FUNCTIONS.iter().find(|f| f.name == name) {
        Some(f) => (f.run)(&a),
        None => Err(format!("unknown function '{name}'")),
    }
}

/// Seconds of an interval string (`1h`, `10min`, `1d`), as graphite-web's parseTimeOffset
/// reads it (a sign is allowed and ignored).
pub(super) fn interval_secs(spec: &str) -> Result<i64, String> {
    let t = crate::time::parse(&format!("now+{}", spec.trim_start_matches(['+', '-'])), 0)
        .map_err(|_| format!("bad interval '{spec}'"))?;
    if t <= 0 {
        return Err(format!("bad interval '{spec}'"));
    }
    Ok(t)
}

pub(super) fn map(
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
pub(super) fn metric_of(name: &str) -> String {
    let inner = name.rsplit('(').next().unwrap_or(name);
    let end = inner.find([',', ')']).unwrap_or(inner.len());
    inner[..end].trim().to_string()
}

/// Component `n` (negative: from the end).
pub(super) fn pick<'a>(parts: &[&'a str], n: i64) -> Option<&'a str> {
    let i = if n < 0 { parts.len() as i64 + n } else { n };
    usize::try_from(i).ok().and_then(|i| parts.get(i).copied())
}

/// A function's arguments, by position or keyword.
#[derive(Clone, Copy)]
pub struct Args<'a, 'b> {
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
        eval(self.ctx, e)
    }

    /// Every positional argument as series (sumSeries(a, b, c)).
    fn all_series(&self) -> Result<Vec<Series>, String> {
        let mut out = Vec::new();
        for e in self.args {
            out.extend(eval(self.ctx, e)?);
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
    use super::alias::*;
    use super::combine::*;
    use super::sorting::*;
    use super::transform::*;
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

    /// graphite-web's names for summarize's and hitcount's results (a function renamed in
    /// the code must not rename its results).
    #[test]
    fn summarize_and_hitcount_name_their_results_as_graphite_web_does() {
        let a = s("a.b", &[Some(1.0), Some(2.0), None]);
        assert_eq!(
            summarize_series(&a, "1h", 3600, "sum", false).name,
            "summarize(a.b, \"1h\", \"sum\")"
        );
        assert_eq!(
            summarize_series(&a, "5min", 300, "avg", true).name,
            "summarize(a.b, \"5min\", \"avg\", true)"
        );
        assert_eq!(
            hitcount_series(&a, "1min", 60, false).name,
            "hitcount(a.b, \"1min\")"
        );
        assert_eq!(
            hitcount_series(&a, "10min", 600, true).name,
            "hitcount(a.b, \"10min\", true)"
        );
    }

    #[test]
    fn aggregates_skip_nones_and_name_the_paths() {
        let l = vec![
            s("a.x", &[Some(1.0), None, None]),
            s("a.y", &[Some(2.0), Some(5.0), None]),
        ];
        let r = aggregate_all(l.clone(), "sum", "sumSeries").unwrap();
        assert_eq!(r[0].name, "sumSeries(a.x,a.y)");
        assert_eq!(r[0].values, vec![Some(3.0), Some(5.0), None]);
        let r = aggregate_all(l.clone(), "diff", "diffSeries").unwrap();
        assert_eq!(r[0].values, vec![Some(-1.0), None, None]);
        let r = aggregate_all(l, "average", "averageSeries").unwrap();
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
