//! graphite-web 1.1.8's render functions, every one of its `SeriesFunctions`, giving what
//! graphite-web gives: the same series in the same order, named and tagged as it names and
//! tags them, with its None handling (its source and documentation were read, not copied;
//! the Graphite differential test holds the two side by side).
//!
//! How a call is made, as graphite-web makes it: its arguments are evaluated first (to a
//! [`Value`]: a series list, or a Python int, float, string, bool or None), then checked
//! against the function's parameter table ([`table`], graphite-web's own: where every one
//! passes, the checked values replace them, so `5` for a float parameter becomes `5.0`;
//! where one fails, the call goes on with the values as given, as graphite-web does without
//! ENFORCE_INPUT_VALIDATION), then bound to the function's Python signature ([`spec`]) and
//! the function run ([`Call`]). Functions that look at other times (timeShift, the moving
//! windows, Holt-Winters' bootstrap) evaluate their first argument again over them.
//!
//! A series is graphite-web's TimeSeries ([`Series`]): consolidated lazily (`vpp`), its
//! tags a dict in insertion order. The families have a file each: [`combine`],
//! [`transform`], [`calculate`], [`filter`] (Filter Series and Filter Data), [`sorting`],
//! [`alias`], [`special`] and [`graph`] (display-only options, which JSON passes by).

use super::expr;
use super::expr::Expr;
use super::format::{fmt_g, py_float};
use super::series::{py_max, py_min, Agg, Series};
use crate::ctx::Ctx;
use regex::Regex;

mod alias;
mod calculate;
mod combine;
mod filter;
mod graph;
mod sorting;
pub mod spec;
mod special;
mod table;
mod transform;

pub use spec::functions_json;

/// What an argument or a function gives: graphite-web's Python values.
#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    List(Vec<Series>),
    /// A list of series lists (`mapSeries`, for `reduceSeries`).
    Lists(Vec<Vec<Series>>),
    Int(i64),
    Float(f64),
    Str(String),
    Bool(bool),
    None,
}

impl Value {
    /// Python's `str()` of the value.
    pub fn py_str(&self) -> String {
        match self {
            Value::Int(i) => i.to_string(),
            Value::Float(f) => py_float(*f),
            Value::Str(s) => s.clone(),
            Value::Bool(b) => if *b { "True" } else { "False" }.into(),
            Value::None => "None".into(),
            Value::List(_) | Value::Lists(_) => "[...]".into(),
        }
    }

    /// Python's truth of the value.
    pub fn truthy(&self) -> bool {
        match self {
            Value::Int(i) => *i != 0,
            Value::Float(f) => *f != 0.0,
            Value::Str(s) => !s.is_empty(),
            Value::Bool(b) => *b,
            Value::None => false,
            Value::List(l) => !l.is_empty(),
            Value::Lists(l) => !l.is_empty(),
        }
    }

    /// The value as a Python number (an int, float or bool).
    pub fn number(&self) -> Option<f64> {
        match self {
            Value::Int(i) => Some(*i as f64),
            Value::Float(f) => Some(*f),
            Value::Bool(b) => Some(f64::from(u8::from(*b))),
            _ => None,
        }
    }

    fn kind(&self) -> &'static str {
        match self {
            Value::List(_) => "a series list",
            Value::Lists(_) => "a list of series lists",
            Value::Int(_) => "an integer",
            Value::Float(_) => "a float",
            Value::Str(_) => "a string",
            Value::Bool(_) => "a boolean",
            Value::None => "None",
        }
    }
}

/// The value of `e` (a path's series, a function's result, a literal).
pub fn eval(ctx: &Ctx<'_>, e: &Expr) -> Result<Value, String> {
    match e {
        Expr::Path(p) => {
            let reps = ctx.replacements.borrow().clone();
            match reps {
                Some(reps) => match templated(&reps, p)? {
                    Ok(p) => fetch(ctx, &p).map(Value::List),
                    Err(v) => Ok(v),
                },
                None => fetch(ctx, p).map(Value::List),
            }
        }
        Expr::Template { inner, values } => {
            let reps = std::rc::Rc::new(ctx.template_values(values));
            let before = ctx.replacements.replace(Some(reps));
            let r = eval(ctx, inner);
            ctx.replacements.replace(before);
            r
        }
        Expr::Call { name, .. } if name == "template" => {
            Err("invalid template() syntax, only string/numeric arguments are allowed".into())
        }
        Expr::Call {
            name, raw, args, ..
        } if name == "seriesByTag" => special::series_by_tag(ctx, args, raw).map(Value::List),
        Expr::Call {
            name, args, kwargs, ..
        } => call(ctx, name, args, kwargs),
        Expr::Int(i) => Ok(Value::Int(*i)),
        Expr::Num(n) => Ok(Value::Float(*n)),
        Expr::Str(s) => Ok(Value::Str(s.clone())),
        Expr::Bool(b) => Ok(Value::Bool(*b)),
        Expr::None => Ok(Value::None),
    }
}

/// A path under a template, as graphite-web's evaluator reads it: the values in turn, a
/// path that is `$name` whole being that value (a string of digits and dots read as a
/// float), else `$name` replaced by the value's text. Ok(path), or Err(the value).
fn templated(reps: &[(String, Expr)], path: &str) -> Result<Result<String, Value>, String> {
    let mut p = path.to_string();
    for (name, v) in reps {
        let var = format!("${name}");
        if p == var {
            return Ok(Err(match v {
                Expr::Int(i) => Value::Int(*i),
                Expr::Num(n) => Value::Float(*n),
                Expr::Str(s)
                    if !s.is_empty()
                        && s.strip_prefix('-')
                            .unwrap_or(s)
                            .bytes()
                            .all(|b| b.is_ascii_digit() || b == b'.')
                        && s != "-" =>
                {
                    Value::Float(
                        s.parse()
                            .map_err(|_| format!("could not convert string to float: '{s}'"))?,
                    )
                }
                Expr::Str(s) => Value::Str(s.clone()),
                _ => Value::None,
            }));
        }
        p = p.replace(&var, &crate::ctx::literal_text(v));
    }
    Ok(Ok(p))
}

/// The series of a path, each with the request's xFilesFactor (none where the path was
/// not fetched for this range: see [`crate::ctx::State`]).
fn fetch(ctx: &Ctx<'_>, path: &str) -> Result<Vec<Series>, String> {
    if !ctx.fetched(path) {
        return Ok(vec![]);
    }
    if ctx.from > ctx.until {
        return Err(format!(
            "Invalid interval start={} end={}",
            ctx.from, ctx.until
        ));
    }
    let mut l = ctx.fetch(path)?;
    let xff = ctx.state.xff.get().unwrap_or(0.0);
    for s in &mut l {
        s.xff = xff;
    }
    Ok(l)
}

/// The series `e` stands for (a series list; an error for anything else).
pub fn eval_series(ctx: &Ctx<'_>, e: &Expr) -> Result<Vec<Series>, String> {
    match eval(ctx, e)? {
        Value::List(l) => Ok(l),
        Value::None => Ok(vec![]),
        Value::Lists(l) if l.is_empty() => Ok(vec![]),
        v => Err(format!("{e:?} is {}, not series", v.kind())),
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
    // Every target's paths are fetched before any is evaluated, as graphite-web does.
    let mut parsed = Vec::with_capacity(targets.len());
    for t in targets {
        let e = expr::parse(t).map_err(|e| format!("target '{t}': {e}"))?;
        ctx.prefetch(&top(e.clone(), t));
        parsed.push((t, e));
    }
    let mut out = Vec::new();
    for (t, e) in parsed {
        out.extend(evaluate_parsed(ctx, e, t).map_err(|e| format!("target '{t}': {e}"))?);
    }
    Ok(out)
}

/// A target as graphite-web's grammar reads it at the top: a call, or a path (`5` and
/// `true` are paths there).
fn top(e: Expr, target: &str) -> Expr {
    match e {
        Expr::Path(_) | Expr::Call { .. } | Expr::Template { .. } => e,
        _ => Expr::Path(target.trim().to_string()),
    }
}

/// One target's series: a call's result, or a path's series (at the top a target is a call
/// or a path, never a literal: `5` and `true` are paths).
pub fn evaluate_target(ctx: &Ctx<'_>, target: &str) -> Result<Vec<Series>, String> {
    let e = top(expr::parse(target)?, target);
    ctx.prefetch(&e);
    evaluate_parsed(ctx, e, target)
}

fn evaluate_parsed(ctx: &Ctx<'_>, e: Expr, target: &str) -> Result<Vec<Series>, String> {
    let e = top(e, target);
    match eval(ctx, &e)? {
        Value::List(l) => Ok(l),
        Value::Lists(l) if l.is_empty() => Ok(vec![]),
        Value::Lists(_) => Err("a list of series lists cannot be drawn (use reduceSeries)".into()),
        v if !v.truthy() => Ok(vec![]),
        v => Err(format!("the target gives {}, not series", v.kind())),
    }
}

/// A function call being made: the request, the arguments bound to the function's
/// parameters, and its positional arguments as written (graphite-web's
/// `requestContext['args']`, which functions looking at other times evaluate again).
pub struct Call<'c, 'a> {
    pub ctx: &'c Ctx<'a>,
    pub name: &'c str,
    pub raw: &'c [Expr],
    bound: spec::Bound,
}

impl Call<'_, '_> {
    /// The value bound to parameter `p` (None where it was not given and has no default).
    pub fn get(&self, p: &str) -> &Value {
        self.bound.get(p)
    }

    /// The value of `p`, taken out.
    pub fn take(&mut self, p: &str) -> Value {
        self.bound.take(p)
    }

    /// The values given past the named parameters (`*nodes`).
    pub fn rest(&self) -> &[Value] {
        &self.bound.rest
    }

    /// Take the rest out.
    pub fn take_rest(&mut self) -> Vec<Value> {
        std::mem::take(&mut self.bound.rest)
    }

    /// Parameter `p` as a series list (an empty list of lists is an empty list).
    pub fn series(&mut self, p: &str) -> Result<Vec<Series>, String> {
        match self.take(p) {
            Value::List(l) => Ok(l),
            Value::Lists(l) if l.is_empty() => Ok(vec![]),
            v => Err(format!(
                "{}: '{p}' must be series, not {}",
                self.name,
                v.kind()
            )),
        }
    }

    /// Every value of the rest, as series lists (`sumSeries(a, b, c)`).
    pub fn rest_series(&mut self) -> Result<Vec<Vec<Series>>, String> {
        let name = self.name;
        self.take_rest()
            .into_iter()
            .map(|v| match v {
                Value::List(l) => Ok(l),
                Value::Lists(l) if l.is_empty() => Ok(vec![]),
                v => Err(format!(
                    "{name}: every argument must be series, not {}",
                    v.kind()
                )),
            })
            .collect()
    }

    /// Parameter `p` as a Python number.
    pub fn num(&self, p: &str) -> Result<f64, String> {
        let v = self.get(p);
        v.number()
            .ok_or_else(|| format!("{}: '{p}' must be a number, not {}", self.name, v.kind()))
    }

    /// Parameter `p` as a number, or None.
    pub fn opt_num(&self, p: &str) -> Result<Option<f64>, String> {
        match self.get(p) {
            Value::None => Ok(None),
            _ => self.num(p).map(Some),
        }
    }

    /// Parameter `p` as an integer (Python's `int()` of a number: toward zero).
    pub fn int(&self, p: &str) -> Result<i64, String> {
        match self.get(p) {
            Value::Int(i) => Ok(*i),
            Value::Bool(b) => Ok(i64::from(*b)),
            Value::Float(f) if f.is_finite() => Ok(f.trunc() as i64),
            Value::Str(s) => s
                .trim()
                .parse()
                .map_err(|_| format!("{}: '{p}' must be an integer, not '{s}'", self.name)),
            v => Err(format!(
                "{}: '{p}' must be an integer, not {}",
                self.name,
                v.kind()
            )),
        }
    }

    /// Parameter `p` where graphite-web uses it as a list index, a slice bound or a
    /// repeat count (`limit`'s n, `delay`'s steps): there a float fails, as Python's
    /// `list[2.0]` does (graphite-web checks the type, logs the mismatch and goes on).
    pub fn index(&self, p: &str) -> Result<i64, String> {
        match self.get(p) {
            Value::Float(f) => Err(format!(
                "{}: '{p}' must be an integer, not a float ({}): slice indices must be integers",
                self.name,
                py_float(*f)
            )),
            _ => self.int(p),
        }
    }

    /// Parameter `p` as a string.
    pub fn str(&self, p: &str) -> Result<String, String> {
        match self.get(p) {
            Value::Str(s) => Ok(s.clone()),
            v => Err(format!(
                "{}: '{p}' must be a string, not {}",
                self.name,
                v.kind()
            )),
        }
    }

    /// Parameter `p` as a string, or None.
    pub fn opt_str(&self, p: &str) -> Result<Option<String>, String> {
        match self.get(p) {
            Value::None => Ok(None),
            _ => self.str(p).map(Some),
        }
    }

    /// Parameter `p`'s truth.
    pub fn truthy(&self, p: &str) -> bool {
        self.get(p).truthy()
    }

    /// Parameter `p` as one of graphite-web's aggregation functions.
    pub fn agg(&self, p: &str) -> Result<Agg, String> {
        agg_func(self.get(p))
    }

    /// The first positional argument as written, evaluated over `from`..`until` (with the
    /// request's state copied, as graphite-web's requestContext.copy()). Without its pipes:
    /// graphite-web used them up (popped them from the parsed target) evaluating it the
    /// first time, so `movingAverage(a|scale(2), 5)` looks again at `a` alone.
    pub fn first_over(&self, from: i64, until: i64) -> Result<Vec<Series>, String> {
        let e = self
            .raw
            .first()
            .ok_or_else(|| format!("{}: its series must be the first argument", self.name))?;
        let e = &without_pipes(e);
        let ctx = self.ctx.over(from, until);
        ctx.prefetch(e);
        eval_series(&ctx, e)
    }
}

/// `e` with every piped call replaced by what was piped into it, throughout.
fn without_pipes(e: &Expr) -> Expr {
    match e {
        Expr::Template { inner, values } => Expr::Template {
            inner: Box::new(without_pipes(inner)),
            values: values.clone(),
        },
        Expr::Call {
            piped: true, args, ..
        } if !args.is_empty() => without_pipes(&args[0]),
        Expr::Call {
            name,
            args,
            kwargs,
            raw,
            piped,
        } => Expr::Call {
            name: name.clone(),
            args: args.iter().map(without_pipes).collect(),
            kwargs: kwargs
                .iter()
                .map(|(k, v)| (k.clone(), without_pipes(v)))
                .collect(),
            raw: raw.clone(),
            piped: *piped,
        },
        e => e.clone(),
    }
}

/// graphite-web's getAggFunc: an aggregation function by name.
pub fn agg_func(v: &Value) -> Result<Agg, String> {
    match v {
        Value::Str(s) => Agg::of(s).ok_or_else(|| format!("Unsupported aggregation function: {s}")),
        v => Err(format!("Unsupported aggregation function: {}", v.py_str())),
    }
}

/// Evaluate function `name` on its arguments, as graphite-web's evaluator does.
pub fn call(
    ctx: &Ctx<'_>,
    name: &str,
    args: &[Expr],
    kwargs: &[(String, Expr)],
) -> Result<Value, String> {
    let def = spec::lookup(name)
        .ok_or_else(|| format!("Received request for unknown function: {name}"))?;
    let mut vals = Vec::with_capacity(args.len());
    for (i, a) in args.iter().enumerate() {
        let shape = i == 0 && REREAD.contains(&name) && names_only(a);
        ctx.shape_only.set(shape);
        let v = eval(ctx, a);
        ctx.shape_only.set(false);
        vals.push(v?);
    }
    let mut kw = Vec::with_capacity(kwargs.len());
    for (k, e) in kwargs {
        kw.push((k.clone(), eval(ctx, e)?));
    }
    spec::validate(def, &mut vals, &mut kw);
    run(ctx, def, args, vals, kw)
}

/// The functions that read their first argument again over another range (its preview,
/// bootstrap or shift) and look at its first reading only for its series' names, tags,
/// ranges and steps: that reading's values are left out where it is a path or a
/// seriesByTag (series chosen by name alone), which graphite-web reads in full and throws
/// away.
pub const REREAD: &[&str] = &[
    "exponentialMovingAverage",
    "holtWintersConfidenceArea",
    "holtWintersConfidenceBands",
    "holtWintersForecast",
    "movingAverage",
    "movingMax",
    "movingMedian",
    "movingMin",
    "movingSum",
    "movingWindow",
    "timeShift",
    "timeStack",
];

/// Whether the series `e` stands for are chosen by their names alone.
fn names_only(e: &Expr) -> bool {
    match e {
        Expr::Path(_) => true,
        Expr::Call { name, piped, .. } => name == "seriesByTag" && !piped,
        _ => false,
    }
}

/// Run `def` on values already evaluated (and checked, or not: graphite-web calls the
/// callbacks of groupByNodes, groupByTags and reduceSeries without checking them).
fn run(
    ctx: &Ctx<'_>,
    def: &'static spec::Def,
    raw: &[Expr],
    vals: Vec<Value>,
    kw: Vec<(String, Value)>,
) -> Result<Value, String> {
    let bound = spec::bind(def, vals, kw)?;
    let mut c = Call {
        ctx,
        name: def.name,
        raw,
        bound,
    };
    match runner(def.name) {
        Some(f) => f(&mut c),
        None => Err(format!("{} is not served", def.name)),
    }
}

/// Call function `name` with positional values, unchecked (graphite-web's
/// `SeriesFunctions[name](requestContext, *values)`).
pub fn call_direct(
    ctx: &Ctx<'_>,
    raw: &[Expr],
    name: &str,
    vals: Vec<Value>,
) -> Result<Value, String> {
    let def = spec::lookup(name).ok_or_else(|| format!("unknown function '{name}'"))?;
    run(ctx, def, raw, vals, vec![])
}

/// A function's body.
type Run = fn(&mut Call<'_, '_>) -> Result<Value, String>;

/// The body of each function, by name.
fn runner(name: &str) -> Option<Run> {
    Some(match name {
        // Combine
        "aggregate" => combine::aggregate,
        "aggregateSeriesLists" => combine::aggregate_series_lists,
        "aggregateWithWildcards" => combine::aggregate_with_wildcards,
        "applyByNode" => combine::apply_by_node,
        "asPercent" | "pct" => combine::as_percent,
        "averageSeries" | "avg" => combine::average_series,
        "averageSeriesWithWildcards" => combine::average_series_with_wildcards,
        "countSeries" => combine::count_series,
        "diffSeries" => combine::diff_series,
        "diffSeriesLists" => combine::diff_series_lists,
        "divideSeries" => combine::divide_series,
        "divideSeriesLists" => combine::divide_series_lists,
        "group" => combine::group,
        "groupByNode" => combine::group_by_node,
        "groupByNodes" => combine::group_by_nodes,
        "groupByTags" => combine::group_by_tags,
        "map" | "mapSeries" => combine::map_series,
        "maxSeries" => combine::max_series,
        "minSeries" => combine::min_series,
        "multiplySeries" => combine::multiply_series,
        "multiplySeriesLists" => combine::multiply_series_lists,
        "multiplySeriesWithWildcards" => combine::multiply_series_with_wildcards,
        "percentileOfSeries" => combine::percentile_of_series,
        "rangeOfSeries" => combine::range_of_series,
        "reduce" | "reduceSeries" => combine::reduce_series,
        "stddevSeries" => combine::stddev_series,
        "sum" | "sumSeries" => combine::sum_series,
        "sumSeriesLists" => combine::sum_series_lists,
        "sumSeriesWithWildcards" => combine::sum_series_with_wildcards,
        "weightedAverage" => combine::weighted_average,
        "powSeries" => combine::pow_series,
        // Transform
        "absolute" => transform::absolute,
        "add" => transform::add,
        "delay" => transform::delay,
        "derivative" => transform::derivative,
        "exp" => transform::exp,
        "hitcount" => transform::hitcount,
        "integral" => transform::integral,
        "integralByInterval" => transform::integral_by_interval,
        "interpolate" => transform::interpolate,
        "invert" => transform::invert,
        "isNonNull" => transform::is_non_null,
        "keepLastValue" => transform::keep_last_value,
        "log" => transform::log,
        "logit" => transform::logit,
        "minMax" => transform::min_max,
        "nonNegativeDerivative" => transform::non_negative_derivative,
        "offset" => transform::offset,
        "offsetToZero" => transform::offset_to_zero,
        "perSecond" => transform::per_second,
        "pow" => transform::pow,
        "round" => transform::round,
        "scale" => transform::scale,
        "scaleToSeconds" => transform::scale_to_seconds,
        "sigmoid" => transform::sigmoid,
        "smartSummarize" => transform::smart_summarize,
        "squareRoot" => transform::square_root,
        "summarize" => transform::summarize,
        "timeShift" => transform::time_shift,
        "timeSlice" => transform::time_slice,
        "timeStack" => transform::time_stack,
        "transformNull" => transform::transform_null,
        "time" | "timeFunction" => transform::time_function,
        "sin" | "sinFunction" => transform::sin_function,
        // Calculate
        "aggregateLine" => calculate::aggregate_line,
        "exponentialMovingAverage" => calculate::exponential_moving_average,
        "holtWintersAberration" => calculate::holt_winters_aberration,
        "holtWintersConfidenceArea" => calculate::holt_winters_confidence_area,
        "holtWintersConfidenceBands" => calculate::holt_winters_confidence_bands,
        "holtWintersForecast" => calculate::holt_winters_forecast,
        "linearRegression" => calculate::linear_regression,
        "movingAverage" | "movingMax" | "movingMedian" | "movingMin" | "movingSum"
        | "movingWindow" => calculate::moving_window,
        "nPercentile" => calculate::n_percentile,
        "stdev" => calculate::stdev,
        "identity" => calculate::identity,
        // Filter Series, Filter Data
        "averageAbove" | "averageBelow" | "currentAbove" | "currentBelow" | "maximumAbove"
        | "maximumBelow" | "minimumAbove" | "minimumBelow" => filter::above_below,
        "averageOutsidePercentile" => filter::average_outside_percentile,
        "exclude" | "grep" => filter::exclude,
        "filterSeries" => filter::filter_series,
        "highest" | "lowest" | "highestAverage" | "highestCurrent" | "highestMax"
        | "lowestAverage" | "lowestCurrent" => filter::highest,
        "limit" => filter::limit,
        "mostDeviant" => filter::most_deviant,
        "removeBetweenPercentile" => filter::remove_between_percentile,
        "removeEmptySeries" => filter::remove_empty_series,
        "unique" => filter::unique,
        "useSeriesAbove" => filter::use_series_above,
        "removeAbovePercentile" | "removeBelowPercentile" => filter::remove_percentile,
        "removeAboveValue" | "removeBelowValue" => filter::remove_value,
        // Sorting
        "sortBy" | "sortByTotal" => sorting::sort_by,
        "sortByMaxima" => sorting::sort_by_maxima,
        "sortByMinima" => sorting::sort_by_minima,
        "sortByName" => sorting::sort_by_name,
        // Alias
        "alias" => alias::alias,
        "aliasByMetric" => alias::alias_by_metric,
        "aliasByNode" | "aliasByTags" => alias::alias_by_node,
        "aliasQuery" => alias::alias_query,
        "aliasSub" => alias::alias_sub,
        "legendValue" => alias::legend_value,
        // Graph
        "alpha" | "color" | "lineWidth" => graph::pass,
        "areaBetween" => graph::area_between,
        "dashed" => graph::dashed,
        "drawAsInfinite" | "secondYAxis" => graph::mark,
        "stacked" => graph::stacked,
        "threshold" => graph::threshold,
        "verticalLine" => graph::vertical_line,
        // Special
        "cactiStyle" => special::cacti_style,
        "changed" => special::changed,
        "consolidateBy" | "cumulative" => special::consolidate_by,
        "constantLine" => special::constant_line,
        "events" => special::events,
        "fallbackSeries" => special::fallback_series,
        "randomWalk" | "randomWalkFunction" => special::random_walk,
        "setXFilesFactor" | "xFilesFactor" => special::set_xfiles_factor,
        "substr" => special::substr,
        _ => return None,
    })
}

// ---------------------------------------------------------------------------------------
// What the families share: graphite-web's helpers, as its functions use them.

/// Series over their joint range at the least common multiple of their steps, each
/// consolidated to it (lazily, as graphite-web's normalize): (start, end, step), or None
/// for no series.
pub(super) fn normalize(l: &mut [Series]) -> Option<(i64, i64, i64)> {
    if l.is_empty() {
        return None;
    }
    let step = l.iter().map(|s| s.step).reduce(lcm)?;
    for s in l.iter_mut() {
        let n = if s.step != 0 { step / s.step } else { 1 };
        s.consolidate(n.max(1) as usize);
    }
    let start = l.iter().map(|s| s.start).min()?;
    let mut end = l.iter().map(|s| s.end).max()?;
    if step != 0 {
        end -= py_mod(end - start, step);
    }
    Some((start, end, step))
}

/// graphite-web's lcm of two steps.
fn lcm(a: i64, b: i64) -> i64 {
    fn gcd(a: i64, b: i64) -> i64 {
        if b == 0 {
            a
        } else {
            gcd(b, py_mod(a, b))
        }
    }
    if a == b {
        return a;
    }
    let (a, b) = if a < b { (b, a) } else { (a, b) };
    let g = gcd(a, b);
    if g == 0 {
        return 0;
    }
    a.div_euclid(g) * b
}

/// Python's `x ** y` of floats: the C library's `pow`, called (an exponent the compiler
/// can see, such as 2, would become a multiplication, which differs from glibc's pow in
/// the last bit for about a fifth of large numbers).
pub(super) fn py_pow(x: f64, y: f64) -> f64 {
    x.powf(std::hint::black_box(y))
}

/// Python's `%` on integers (the sign of the divisor).
pub(super) fn py_mod(a: i64, b: i64) -> i64 {
    if b == 0 {
        return 0;
    }
    let r = a % b;
    if r != 0 && ((r < 0) != (b < 0)) {
        r + b
    } else {
        r
    }
}

/// Python's `//` on integers (toward negative infinity).
pub(super) fn py_div(a: i64, b: i64) -> i64 {
    if b == 0 {
        return 0;
    }
    (a - py_mod(a, b)) / b
}

/// The rows of the series' points side by side, to the longest (None past a series' end).
pub(super) fn rows(l: &[Series]) -> Vec<Vec<Option<f64>>> {
    let pts: Vec<Vec<Option<f64>>> = l.iter().map(|s| s.points().into_owned()).collect();
    let len = pts.iter().map(Vec::len).max().unwrap_or(0);
    (0..len)
        .map(|i| pts.iter().map(|p| p.get(i).copied().flatten()).collect())
        .collect()
}

/// The series' path expressions, each once, in order, comma-separated.
pub(super) fn path_expressions(l: &[Series]) -> String {
    let mut v: Vec<&str> = Vec::new();
    for s in l {
        if !v.contains(&s.path_expression.as_str()) {
            v.push(&s.path_expression);
        }
    }
    v.join(",")
}

/// Whether enough of `row` is known (graphite-web's xffValues).
pub(super) fn xff_values(row: &[Option<f64>], xff: f64) -> bool {
    xff_ok(row.iter().flatten().count(), row.len() as f64, xff)
}

/// graphite-web's xff(nonNull, total, xFilesFactor).
pub(super) fn xff_ok(non_null: usize, total: f64, xff: f64) -> bool {
    non_null > 0 && total != 0.0 && non_null as f64 / total >= xff
}

/// A node of a series' name or path expression, or the tag it names (graphite-web's
/// getNodeOrTag).
pub(super) fn node_or_tag(s: &Series, n: &Value, path: Option<&str>) -> Result<String, String> {
    let index = match n {
        Value::Int(i) => Some(*i),
        Value::Bool(b) => Some(i64::from(*b)),
        Value::Float(f) if f.fract() == 0.0 => {
            return Err(format!("list indices must be integers, not float ({f})"))
        }
        _ => None,
    };
    if let Some(i) = index {
        let base = path.unwrap_or(&s.name);
        let base = base.split(';').next().unwrap_or("");
        let parts: Vec<&str> = base.split('.').collect();
        if let Some(p) = py_index(&parts, i) {
            return Ok(p.to_string());
        }
    }
    Ok(s.tag(&n.py_str()).unwrap_or_default())
}

/// Python's `list[i]` (negative from the end).
pub(super) fn py_index<'a>(parts: &[&'a str], i: i64) -> Option<&'a str> {
    let i = if i < 0 { parts.len() as i64 + i } else { i };
    usize::try_from(i).ok().and_then(|i| parts.get(i).copied())
}

/// The key of a series for grouping by nodes or tags (graphite-web's aggKey): the nodes of
/// its first path expression where its name looks like a call.
pub(super) fn agg_key(s: &Series, nodes: &[Value]) -> Result<String, String> {
    if s.name.is_empty() {
        return Err("string index out of range (a series with an empty name)".into());
    }
    let path = if s.name.ends_with(')') {
        first_path_expression(&s.name)?
    } else {
        None
    };
    let keys: Result<Vec<String>, String> = nodes
        .iter()
        .map(|n| node_or_tag(s, n, path.as_deref()))
        .collect();
    Ok(keys?.join("."))
}

/// The first path inside a name that reads as a call (`scale(a.b.c,2)` is `a.b.c`).
pub(super) fn first_path_expression(name: &str) -> Result<Option<String>, String> {
    let mut e = expr::parse(name).map_err(|e| format!("cannot read the name '{name}': {e}"))?;
    loop {
        match e {
            Expr::Path(p) => return Ok(Some(p)),
            Expr::Call { args, .. } => {
                e = args
                    .into_iter()
                    .next()
                    .ok_or_else(|| format!("'{name}' has no first argument"))?;
            }
            _ => return Ok(None),
        }
    }
}

/// Python's `re` pattern as the regex crate's (the syntax both share; Python's `(?P<n>`
/// is the regex crate's too).
pub(super) fn py_regex(p: &str) -> Result<Regex, String> {
    Regex::new(p).map_err(|e| format!("bad regular expression '{p}': {e}"))
}

/// Python's `re.sub(pattern, replace, s)` (an error where Python's template is one: a
/// group the pattern does not have, an unknown escape).
pub(super) fn py_sub(re: &Regex, replace: &str, s: &str) -> Result<String, String> {
    let rep = template(re, replace)?;
    Ok(re.replace_all(s, rep.as_str()).into_owned())
}

/// A Python replacement template as the regex crate's: `\1`, `\g<1>`, `\g<name>` become
/// `${1}`, `${name}`; `\n`, `\t` and the like their characters; `$` itself.
pub(super) fn template(re: &Regex, s: &str) -> Result<String, String> {
    let groups = re.captures_len();
    let group = |g: &str| -> Result<String, String> {
        match g.parse::<usize>() {
            Ok(n) if n < groups => Ok(format!("${{{n}}}")),
            Ok(n) => Err(format!("invalid group reference {n}")),
            Err(_) if re.capture_names().flatten().any(|c| c == g) => Ok(format!("${{{g}}}")),
            Err(_) => Err(format!("unknown group name '{g}'")),
        }
    };
    let mut out = String::new();
    let mut it = s.chars().peekable();
    while let Some(c) = it.next() {
        match c {
            '\\' => match it.next() {
                Some(d) if d.is_ascii_digit() => {
                    let mut n = d.to_string();
                    if let Some(&e) = it.peek().filter(|e| e.is_ascii_digit()) {
                        n.push(e);
                        it.next();
                    }
                    out.push_str(&group(&n)?);
                }
                Some('g') => {
                    if it.next() != Some('<') {
                        return Err("missing < in a group reference".into());
                    }
                    let mut n = String::new();
                    loop {
                        match it.next() {
                            Some('>') => break,
                            Some(x) => n.push(x),
                            None => return Err("missing > in a group reference".into()),
                        }
                    }
                    out.push_str(&group(&n)?);
                }
                Some('n') => out.push('\n'),
                Some('t') => out.push('\t'),
                Some('r') => out.push('\r'),
                Some('f') => out.push('\x0c'),
                Some('v') => out.push('\x0b'),
                Some('a') => out.push('\x07'),
                Some('b') => out.push('\x08'),
                Some('\\') => out.push('\\'),
                Some(x) if x.is_ascii_alphabetic() => return Err(format!("bad escape \\{x}")),
                Some(x) => {
                    out.push('\\');
                    if x == '$' {
                        out.push_str("$$");
                    } else {
                        out.push(x);
                    }
                }
                None => return Err("bad escape (end of template)".into()),
            },
            '$' => out.push_str("$$"),
            c => out.push(c),
        }
    }
    Ok(out)
}

/// Python's `round(x, n)`: the nearest decimal of n places to the float's exact value
/// (half to even, as Python's correctly rounded `round`).
pub(super) fn py_round(x: f64, n: i64) -> f64 {
    if !x.is_finite() || x == 0.0 {
        return x;
    }
    if n >= 0 {
        let n = n.min(330) as usize;
        return format!("{x:.n$}").parse().unwrap_or(x);
    }
    // Whole tens, hundreds, ...: the digits above 10^-n, rounded on the exact value.
    let mag = x.abs().log10().floor() as i64;
    let keep = mag + 1 + n;
    if keep < 0 {
        return 0.0 * x.signum();
    }
    if keep == 0 {
        // Rounds to 0 or to 10^-n (a half rounds to the even 0).
        let unit = 10f64.powi((-n) as i32);
        let up = x.abs() > unit / 2.0;
        return if up {
            unit * x.signum()
        } else {
            0.0 * x.signum()
        };
    }
    let digits = (keep - 1) as usize;
    format!("{x:.digits$e}").parse().unwrap_or(x)
}

/// Python's `'%.2f' % x`.
pub(super) fn f2(x: f64) -> String {
    if x.is_nan() {
        return "nan".into();
    }
    if x.is_infinite() {
        return if x > 0.0 { "inf" } else { "-inf" }.into();
    }
    format!("{x:.2}")
}

/// Python's `%g` of a value (a number; its `str` otherwise).
pub(super) fn g_of(v: &Value) -> String {
    match v.number() {
        Some(x) => fmt_g(x),
        None => v.py_str(),
    }
}

/// Python's `%d` of a value (a number, toward zero).
pub(super) fn d_of(v: &Value) -> Result<String, String> {
    match v {
        Value::Int(i) => Ok(i.to_string()),
        Value::Bool(b) => Ok(i64::from(*b).to_string()),
        Value::Float(f) if f.is_finite() => Ok(format!("{}", f.trunc() as i64)),
        v => Err(format!("%d format: a number is required, not {}", v.kind())),
    }
}

/// The request's xFilesFactor, or `given` where one is given.
pub(super) fn xff_of(ctx: &Ctx<'_>, given: Option<f64>) -> f64 {
    given.or(ctx.state.xff.get()).unwrap_or(0.0)
}

/// An aggregate of one series' points and whether Python's would be an int (the extreme or
/// last value itself, where that is one; a count; a sum or difference of ints).
pub(super) fn agg_of_series(agg: Agg, s: &Series) -> (Option<f64>, bool) {
    match agg {
        Agg::Min | Agg::Max => match s.extreme(agg == Agg::Max) {
            Some((v, int)) => (Some(v), int),
            None => (None, false),
        },
        Agg::Last => {
            let pts = s.points();
            match pts.iter().rposition(Option::is_some) {
                Some(i) => (pts[i], s.vpp <= 1 && s.int_at(i)),
                None => (None, false),
            }
        }
        _ => (agg.apply(&s.points()), agg.int_result(s.ints)),
    }
}

/// The maximum and minimum of known values (safeMax, safeMin).
pub(super) fn safe_max(v: &[Option<f64>]) -> Option<f64> {
    v.iter().flatten().copied().reduce(py_max)
}

pub(super) fn safe_min(v: &[Option<f64>]) -> Option<f64> {
    v.iter().flatten().copied().reduce(py_min)
}

/// The mean of known values (safeAvg).
pub(super) fn safe_avg(v: &[Option<f64>]) -> Option<f64> {
    Agg::Average.apply(v)
}

/// The last known value of the raw values (safeLast, which reads a series backwards).
pub(super) fn safe_last(v: &[Option<f64>]) -> Option<f64> {
    v.iter().rev().flatten().next().copied()
}

/// graphite-web's _getPercentile over known values.
pub(super) fn percentile(points: &[Option<f64>], n: f64, interpolate: bool) -> Option<f64> {
    let mut sorted: Vec<f64> = points.iter().flatten().copied().collect();
    if sorted.is_empty() {
        return None;
    }
    sorted.sort_by(crate::series::py_cmp);
    let fractional = n / 100.0 * (sorted.len() as f64 + 1.0);
    let mut rank = fractional.trunc() as i64;
    let frac = fractional - rank as f64;
    if !interpolate {
        rank += frac.ceil() as i64;
    }
    let len = sorted.len() as i64;
    let mut p = if rank == 0 {
        sorted[0]
    } else if rank - 1 == len {
        sorted[sorted.len() - 1]
    } else {
        *usize::try_from(rank - 1)
            .ok()
            .and_then(|i| sorted.get(i))
            .or_else(|| {
                // Python's negative index of a rank below zero.
                let i = len + rank - 1;
                usize::try_from(i).ok().and_then(|i| sorted.get(i))
            })?
    };
    if interpolate && rank != len {
        let next = usize::try_from(rank)
            .ok()
            .and_then(|i| sorted.get(i))
            .copied()?;
        p += frac * (next - p);
    }
    Some(p)
}

/// What `/functions` says a function does (ringlet's words; graphite-web's documentation
/// has the long form).
pub fn describe(name: &str) -> &'static str {
    match name {
        "absolute" => "Each value made positive.",
        "add" => "A constant added to each value.",
        "aggregate" => "The series aggregated into one by the function given, point by point.",
        "aggregateLine" => "A line at the aggregate of each series over the whole range.",
        "aggregateSeriesLists" => "Two lists aggregated pairwise, series by series.",
        "aggregateWithWildcards" => {
            "Series grouped by their names without the given nodes, each group aggregated."
        }
        "alias" => "The series renamed.",
        "aliasByMetric" => "Each series named by the last node of its metric.",
        "aliasByNode" => "Each series named by the given nodes or tags of its name.",
        "aliasByTags" => "Each series named by the given tags or nodes.",
        "aliasQuery" => "Each series named by the last value of a query built from its name.",
        "aliasSub" => "Each name changed by a regular expression substitution.",
        "alpha" => "The series drawn with the given transparency (no change to the data).",
        "applyByNode" => {
            "A template of functions applied to each prefix of the names up to a node."
        }
        "areaBetween" => "The area between two series drawn filled.",
        "asPercent" | "pct" => {
            "Each series as a percentage of a total (their sum, a series, or a number)."
        }
        "averageAbove" => "The series whose average is above n.",
        "averageBelow" => "The series whose average is at or below n.",
        "averageOutsidePercentile" => {
            "The series whose average lies outside the n-th percentile of the averages."
        }
        "averageSeries" | "avg" => "The average of the series, point by point.",
        "averageSeriesWithWildcards" => {
            "Series grouped without the given nodes, each group averaged."
        }
        "cactiStyle" => "Current, maximum and minimum added to each name, Cacti's way.",
        "changed" => "1 where a value differs from the one before, else 0.",
        "color" => "The series drawn in the given color (no change to the data).",
        "consolidateBy" => {
            "How the series' points are combined when there are more than can be shown."
        }
        "constantLine" => "A line at the given value.",
        "countSeries" => "The number of series, at each point.",
        "cumulative" => "Points combined by their sum when there are more than can be shown.",
        "currentAbove" => "The series whose last value is above n.",
        "currentBelow" => "The series whose last value is at or below n.",
        "dashed" => "The series drawn dashed.",
        "delay" => "Each series shifted by a number of steps.",
        "derivative" => "The difference between each value and the one before.",
        "diffSeries" => "The first series less the others, point by point.",
        "diffSeriesLists" => "Two lists subtracted pairwise.",
        "divideSeries" => "Each series divided by one divisor series.",
        "divideSeriesLists" => "Two lists divided pairwise.",
        "drawAsInfinite" => "Each non-zero value drawn as a vertical line.",
        "events" => "Events with the given tags, counted each second.",
        "exclude" => "The series whose names do not match a regular expression.",
        "exp" => "e raised to each value.",
        "exponentialMovingAverage" => {
            "The exponential moving average over a window of points or time."
        }
        "fallbackSeries" => "The series, or the fallback where there are none.",
        "filterSeries" => "The series whose aggregate compares with a threshold as asked.",
        "grep" => "The series whose names match a regular expression.",
        "group" => "The series of every argument, as one list.",
        "groupByNode" => "Series grouped by a node or tag, each group aggregated.",
        "groupByNodes" => "Series grouped by several nodes or tags, each group aggregated.",
        "groupByTags" => "Series grouped by tags, each group aggregated into a tagged series.",
        "highest" => "The n series highest by an aggregate.",
        "highestAverage" => "The n series with the highest averages.",
        "highestCurrent" => "The n series with the highest last values.",
        "highestMax" => "The n series with the highest maxima.",
        "hitcount" => "Rates turned into counts in buckets of an interval.",
        "holtWintersAberration" => {
            "How far each value lies outside its Holt-Winters confidence bands."
        }
        "holtWintersConfidenceArea" => "The Holt-Winters confidence bands drawn as an area.",
        "holtWintersConfidenceBands" => "The upper and lower Holt-Winters confidence bands.",
        "holtWintersForecast" => "The Holt-Winters forecast of each series.",
        "identity" => "A series whose value is its time.",
        "integral" => "The running sum of each series.",
        "integralByInterval" => "The running sum of each series, restarting every interval.",
        "interpolate" => "Gaps filled by straight lines between the values around them.",
        "invert" => "1 divided by each value.",
        "isNonNull" => "1 where a value is known, else 0.",
        "keepLastValue" => "Gaps filled with the last known value.",
        "legendValue" => "Aggregates of each series added to its name.",
        "limit" => "The first n series.",
        "lineWidth" => "The series drawn with the given line width (no change to the data).",
        "linearRegression" => "The least-squares line through each series.",
        "log" => "The logarithm of each value.",
        "logit" => "The logit of each value.",
        "lowest" => "The n series lowest by an aggregate.",
        "lowestAverage" => "The n series with the lowest averages.",
        "lowestCurrent" => "The n series with the lowest last values.",
        "map" | "mapSeries" => "Series grouped into lists by nodes or tags, for reduceSeries.",
        "maxSeries" => "The maximum of the series, point by point.",
        "maximumAbove" => "The series whose maximum is above n.",
        "maximumBelow" => "The series whose maximum is at or below n.",
        "minMax" => "Each series scaled to lie between 0 and 1.",
        "minSeries" => "The minimum of the series, point by point.",
        "minimumAbove" => "The series whose minimum is above n.",
        "minimumBelow" => "The series whose minimum is at or below n.",
        "mostDeviant" => "The n series with the largest variance.",
        "movingAverage" => "The average over a moving window of points or time.",
        "movingMax" => "The maximum over a moving window.",
        "movingMedian" => "The median over a moving window.",
        "movingMin" => "The minimum over a moving window.",
        "movingSum" => "The sum over a moving window.",
        "movingWindow" => "An aggregate over a moving window.",
        "multiplySeries" => "The product of the series, point by point.",
        "multiplySeriesLists" => "Two lists multiplied pairwise.",
        "multiplySeriesWithWildcards" => {
            "Series grouped without the given nodes, each group multiplied."
        }
        "nPercentile" => "A line at the n-th percentile of each series.",
        "nonNegativeDerivative" => {
            "The increase of a counter between points, wraps and resets handled."
        }
        "offset" => "A constant added to each value.",
        "offsetToZero" => "Each series moved so that its minimum is zero.",
        "perSecond" => "The increase of a counter per second.",
        "percentileOfSeries" => "The n-th percentile across the series, point by point.",
        "pow" => "Each value raised to a power.",
        "powSeries" => "The first series raised to the power of the others, point by point.",
        "randomWalk" | "randomWalkFunction" => "A random walk, for trying things out.",
        "rangeOfSeries" => "The range (maximum less minimum) of the series, point by point.",
        "reduce" | "reduceSeries" => {
            "The lists of mapSeries reduced by a function over matched series."
        }
        "removeAbovePercentile" => "Values above the n-th percentile removed.",
        "removeAboveValue" => "Values above n removed.",
        "removeBelowPercentile" => "Values below the n-th percentile removed.",
        "removeBelowValue" => "Values below n removed.",
        "removeBetweenPercentile" => {
            "The series with a value outside the n-th percentiles of their points' columns."
        }
        "removeEmptySeries" => "The series with enough known values.",
        "round" => "Each value rounded to a precision.",
        "scale" => "Each value multiplied by a factor.",
        "scaleToSeconds" => "Each value scaled to a rate per the given seconds.",
        "secondYAxis" => "The series drawn against the second Y axis.",
        "seriesByTag" => "The tagged series that match every tag expression.",
        "setXFilesFactor" | "xFilesFactor" => "The share of known values aggregations require.",
        "sigmoid" => "The sigmoid of each value.",
        "sin" | "sinFunction" => "A sine wave over the range.",
        "smartSummarize" => "Buckets of an interval aligned to the range's start, each aggregated.",
        "sortBy" => "The series sorted by an aggregate.",
        "sortByMaxima" => "The series sorted by their maxima, highest first.",
        "sortByMinima" => "The series sorted by their minima, lowest first.",
        "sortByName" => "The series sorted by name.",
        "sortByTotal" => "The series sorted by their sums, highest first.",
        "squareRoot" => "The square root of each value.",
        "stacked" => "The series stacked, each on those before it.",
        "stddevSeries" => "The standard deviation of the series, point by point.",
        "stdev" => "The standard deviation over a moving window of points.",
        "substr" => "Each name cut to some of its nodes.",
        "sum" | "sumSeries" => "The sum of the series, point by point.",
        "sumSeriesLists" => "Two lists added pairwise.",
        "sumSeriesWithWildcards" => "Series grouped without the given nodes, each group summed.",
        "summarize" => "Buckets of an interval, each aggregated (a sum by default).",
        "threshold" => "A line at the given value, with a label.",
        "time" | "timeFunction" => "A series whose value is its time, every step seconds.",
        "timeShift" => "The series as they were an interval before.",
        "timeSlice" => "Values outside a time window removed.",
        "timeStack" => "The series at several shifts back in time, for comparison.",
        "transformNull" => "Unknown values replaced by a default.",
        "unique" => "The series, each name once.",
        "useSeriesAbove" => "Series found by a substitution of the names of those above a value.",
        "verticalLine" => "A vertical line at a time.",
        "weightedAverage" => "The average of the series weighted by others.",
        _ => "",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn python_arithmetic_and_rounding() {
        assert_eq!(py_mod(-7, 3), 2);
        assert_eq!(py_mod(7, -3), -2);
        assert_eq!(py_div(-7, 2), -4);
        assert_eq!(py_round(0.125, 2), 0.12);
        assert_eq!(py_round(2.675, 2), 2.67);
        assert_eq!(py_round(2.5, 0), 2.0);
        assert_eq!(py_round(3.5, 0), 4.0);
        assert_eq!(py_round(1234.5, -1), 1230.0);
        assert_eq!(py_round(1250.0, -2), 1200.0);
        assert_eq!(py_round(-1351.0, -2), -1400.0);
        assert_eq!(py_round(40.0, -2), 0.0);
        assert_eq!(py_round(60.0, -2), 100.0);
        assert_eq!(py_round(7.8, -1), 10.0);
        assert_eq!(py_round(5.0, -1), 0.0);
        assert_eq!(py_round(15.0, -1), 20.0);
        assert_eq!(lcm(60, 300), 300);
        assert_eq!(lcm(40, 60), 120);
        let re = Regex::new("(a)(b)").unwrap();
        assert_eq!(template(&re, "\\1-\\g<2>$").unwrap(), "${1}-${2}$$");
        assert!(template(&re, "\\3").is_err());
        assert!(template(&re, "\\q").is_err());
    }

    #[test]
    fn percentiles_follow_graphite_web() {
        let v: Vec<Option<f64>> = [5.0, 1.0, 4.0, 2.0, 3.0].iter().map(|&x| Some(x)).collect();
        assert_eq!(percentile(&v, 50.0, false), Some(3.0));
        assert_eq!(percentile(&v, 90.0, false), Some(5.0));
        assert_eq!(percentile(&v, 10.0, false), Some(1.0));
        assert_eq!(percentile(&v, 25.0, true), Some(1.5));
        assert_eq!(percentile(&[None], 50.0, false), None);
    }

    /// A store of two series of 60 s points that records each fetch: its pattern, range
    /// and whether it was for the series' shape alone (then it gives no values).
    struct Recorder(std::cell::RefCell<Vec<(String, i64, bool)>>);

    impl crate::ctx::Source for Recorder {
        fn fetch(&self, ctx: &Ctx<'_>, pattern: &str) -> Result<Vec<Series>, String> {
            let shape = ctx.shape_only.get();
            self.0
                .borrow_mut()
                .push((pattern.to_string(), ctx.from, shape));
            let (from, until) = (ctx.from - ctx.from % 60, ctx.until - ctx.until % 60);
            Ok(["a.x", "a.y"]
                .iter()
                .filter(|n| crate::glob::Pattern::new(pattern).unwrap().matches(n))
                .map(|n| {
                    let values = if shape {
                        vec![]
                    } else {
                        (from..until).step_by(60).map(|t| Some(t as f64)).collect()
                    };
                    Series::new(n.to_string(), from, until, 60, values)
                })
                .collect())
        }

        fn tagged(&self) -> Vec<String> {
            vec![]
        }
    }

    #[test]
    fn a_first_argument_read_again_is_first_read_for_its_shape_alone() {
        let limits = crate::ctx::Limits::new(1 << 30, 1 << 40);
        let run = |target: &str| {
            let src = Recorder(Default::default());
            let ctx = Ctx::new(&src, 6000, 9000, 9000, &limits);
            let out = evaluate(&ctx, &[target.to_string()]).unwrap();
            (out, src.0.into_inner())
        };
        // movingAverage reads a.* for its names and step, then again with its preview.
        let (out, reads) = run("movingAverage(a.*,'5min')");
        assert_eq!(
            reads,
            vec![("a.*".into(), 6000, true), ("a.*".into(), 5700, false)]
        );
        assert_eq!(out.len(), 2);
        assert_eq!(out[0].values.len(), 50);
        assert_eq!(out[0].values[0], Some(5820.0)); // (5700 + ... + 5940) / 5
                                                    // A first argument chosen by its values is read whole both times; so is a path
                                                    // under another function, and the same path as a second argument.
        let (_, reads) = run("movingAverage(removeBelowValue(a.*,7000),'5min')");
        assert!(reads.iter().all(|r| !r.2), "{reads:?}");
        let (out, reads) = run("timeShift(a.x,'1min')|scale(2)");
        assert_eq!(
            reads,
            vec![("a.x".into(), 6000, true), ("a.x".into(), 5940, false)]
        );
        assert_eq!(out[0].values[0], Some(2.0 * 5940.0));
        let (_, reads) = run("sumSeries(a.x, movingSum(a.y, 3))");
        assert_eq!(
            reads,
            vec![
                ("a.x".into(), 6000, false),
                ("a.y".into(), 6000, true),
                ("a.y".into(), 5820, false)
            ]
        );
    }

    #[test]
    fn templates_put_their_values_in_paths_as_graphite_web_does() {
        let limits = crate::ctx::Limits::new(1 << 30, 1 << 40);
        let run = |target: &str, request: Vec<(&str, &str)>| {
            let src = Recorder(Default::default());
            let mut ctx = Ctx::new(&src, 6000, 9000, 9000, &limits);
            ctx.state.template = std::rc::Rc::new(
                request
                    .into_iter()
                    .map(|(k, v)| (k.to_string(), v.to_string()))
                    .collect(),
            );
            let out = evaluate(&ctx, &[target.to_string()]).map(|l| {
                l.iter()
                    .map(|s| (s.name.clone(), s.values.get(1).copied().flatten()))
                    .collect::<Vec<_>>()
            });
            (out, src.0.into_inner())
        };
        let (out, _) = run("template(a.$n, n='x')", vec![]);
        assert_eq!(out.unwrap(), vec![("a.x".to_string(), Some(6060.0))]);
        // By position; a whole `$f` is the value itself (a string of digits a float).
        let (out, _) = run("template(scale(a.$1, $2), 'y', '0.5')", vec![]);
        assert_eq!(out.unwrap(), vec![("scale(a.y,0.5)".into(), Some(3030.0))]);
        // The request's template[...] values win.
        let (out, _) = run("template(a.$n, n='x')", vec![("n", "y")]);
        assert_eq!(out.unwrap()[0].0, "a.y");
        // Not outside a template; not in what a function evaluates afresh (graphite-web
        // re-reads movingAverage's first argument without the values: nothing).
        let (out, _) = run("a.$n", vec![("n", "x")]);
        assert_eq!(out.unwrap(), vec![]);
        let (out, reads) = run("template(movingAverage(a.$n, 2), n='x')", vec![]);
        assert_eq!(out.unwrap(), vec![]);
        assert_eq!(reads[0].0, "a.x");
        // Other literals: a call, refused.
        assert!(run("template(a.$n, n=true)", vec![]).0.is_err());
    }

    #[test]
    fn nodes_and_first_paths() {
        let s = Series::new("a.b.c".into(), 0, 10, 10, vec![Some(1.0)]);
        assert_eq!(node_or_tag(&s, &Value::Int(-1), None).unwrap(), "c");
        assert_eq!(node_or_tag(&s, &Value::Int(5), None).unwrap(), "");
        assert_eq!(
            node_or_tag(&s, &Value::Str("name".into()), None).unwrap(),
            "a.b.c"
        );
        assert_eq!(
            first_path_expression("scale(sum(x.y.z),2)").unwrap(),
            Some("x.y.z".into())
        );
        assert_eq!(first_path_expression("f(2, a)").unwrap(), None);
    }
}
