//! What a target is evaluated against ([`Ctx`]): the time range, the request's budget, and
//! the [`Source`] of the series.

use crate::series::Series;

/// Where a target's series come from.
pub trait Source {
    /// The series of every path `pattern` (a glob, or a tagged series' whole name) matches,
    /// sorted by path, for `ctx`'s range, within its budget.
    fn fetch(&self, ctx: &Ctx<'_>, pattern: &str) -> Result<Vec<Series>, String>;

    /// The names of the tagged series (`name;tag=value;...`), sorted.
    fn tagged(&self) -> Vec<String>;
}

/// What a target is evaluated against.
pub struct Ctx<'a> {
    pub source: &'a dyn Source,
    pub from: i64,
    pub until: i64,
    pub now: i64,
    /// What the whole request may still read and make.
    pub limits: &'a Limits,
    /// What functions leave for those evaluated after them (graphite-web's requestContext).
    pub state: State,
    /// Whether the series fetched now are looked at only for their names, tags, ranges and
    /// steps: the first argument of a function that reads it again over another range
    /// (`movingAverage`, `timeShift`, ...; see `functions::REREAD`). A source may leave
    /// their values out (empty), sparing a read graphite-web makes and throws away.
    pub shape_only: std::cell::Cell<bool>,
    /// The values of the `template()` being evaluated (graphite-web's `replacements`,
    /// which it passes down a template's arguments and no further: a function evaluating
    /// a target afresh, as `movingAverage` its first argument, evaluates it without them).
    pub replacements: std::cell::RefCell<Option<std::rc::Rc<Replacements>>>,
}

/// A template's values by name, in graphite-web's order (its dict's), each an
/// [`Expr::Int`](crate::expr::Expr), `Num` or `Str`.
pub type Replacements = Vec<(String, crate::expr::Expr)>;

/// What graphite-web's functions keep in its requestContext for later ones: the
/// xFilesFactor (the request's, or the one `setXFilesFactor` set; a copied context takes
/// its own), `stacked`'s running totals, and the path expressions fetched for each time
/// range (both shared by copies, as a shallow copy shares them).
///
/// graphite-web fetches, before evaluating a target, the paths its calls name as
/// positional arguments, and a path evaluated later finds its series only among those: a
/// path given only as a keyword argument (`transformNull(a, referenceSeries=b)`) gives no
/// series unless another target or argument of the same time range named it.
/// The path expressions fetched, by time range.
pub type Prefetched = std::collections::HashMap<(i64, i64), std::collections::HashSet<String>>;

#[derive(Default)]
pub struct State {
    pub xff: std::cell::Cell<Option<f64>>,
    pub stacks: std::rc::Rc<std::cell::RefCell<std::collections::HashMap<String, Vec<f64>>>>,
    pub prefetched: std::rc::Rc<std::cell::RefCell<Prefetched>>,
    /// The request's `template[name]=value` parameters, which every `template()` of it
    /// takes over its own values.
    pub template: std::rc::Rc<Vec<(String, String)>>,
}

impl State {
    /// A copy, as graphite-web's `requestContext.copy()`.
    pub fn copy(&self) -> State {
        State {
            xff: std::cell::Cell::new(self.xff.get()),
            stacks: self.stacks.clone(),
            prefetched: self.prefetched.clone(),
            template: self.template.clone(),
        }
    }
}

/// Points a request may read from the store and make in its functions, all its targets
/// together (16 bytes each as a series holds them: 160 MB). The review found 8 targets of
/// 10 million rows, `summarize(x, '1s')` over five years and a range whose row count
/// overflowed taking 1.5 GB each.
pub const MAX_POINTS: u64 = 10_000_000;

/// Steps of work a request's functions may take over the points (a moving window's points
/// each visit their window).
pub const MAX_WORK: u64 = 2_000_000_000;

/// Series at most one target may fetch (a glob over a large tree must not take the daemon's
/// memory).
pub const MAX_SERIES: usize = 100_000;

/// Rows at most one series may give (a range of centuries at a fine archive must not take
/// the daemon's memory: 16 bytes a row).
pub const MAX_ROWS: u64 = 10_000_000;

/// A request's two budgets ([`rrd::Budget`]): the points it reads and makes
/// ([`MAX_POINTS`]) and the steps of work its functions take ([`MAX_WORK`]), spent before
/// anything is allocated or walked.
pub struct Limits {
    points: rrd::Budget,
    work: rrd::Budget,
}

impl Default for Limits {
    fn default() -> Self {
        Limits::new(MAX_POINTS, MAX_WORK)
    }
}

impl Limits {
    pub fn new(points: u64, work: u64) -> Limits {
        Limits {
            points: rrd::Budget::new(points),
            work: rrd::Budget::new(work),
        }
    }

    /// Spend `n` points (any integer: a negative count is none) for `what`.
    pub fn points(&self, n: i128, what: &str) -> Result<(), String> {
        self.points.spend(n).map_err(|o| {
            format!(
                "{what}: {} points, more than the {} a request may read and make \
                 (narrow the time range, the targets, or the interval)",
                o.asked, o.limit
            )
        })
    }

    /// Spend `n` steps of work for `what`.
    pub fn work(&self, n: u128, what: &str) -> Result<(), String> {
        let n = i128::try_from(n).unwrap_or(i128::MAX);
        self.work.spend(n).map_err(|o| {
            format!(
                "{what}: more work than a request may take ({} steps; a smaller window \
                 or range)",
                o.limit
            )
        })
    }
}

impl Ctx<'_> {
    /// The series `pattern` names, from the source.
    pub fn fetch(&self, pattern: &str) -> Result<Vec<Series>, String> {
        self.source.fetch(self, pattern)
    }

    /// This context over another range (`timeShift`, `moving*`'s preview, `summarize`'s
    /// alignment), the same source and budget.
    pub fn over(&self, from: i64, until: i64) -> Ctx<'_> {
        Ctx {
            source: self.source,
            from,
            until,
            now: self.now,
            limits: self.limits,
            state: self.state.copy(),
            shape_only: std::cell::Cell::new(false),
            replacements: Default::default(),
        }
    }

    /// Mark the path expressions of `e` (its paths and seriesByTag calls, through positional
    /// arguments only, as graphite-web's prefetch walks it) fetched for this range.
    /// A seriesByTag call fetches the tagged series it finds too, each under its own name.
    pub fn prefetch(&self, e: &crate::expr::Expr) {
        use crate::expr::Expr;
        fn walk(
            ctx: &Ctx<'_>,
            e: &Expr,
            reps: Option<&Replacements>,
            out: &mut std::collections::HashSet<String>,
        ) {
            match e {
                Expr::Path(p) => {
                    // graphite-web puts a template's values in as its evaluation does,
                    // except that a path naming one whole stays as it is.
                    let mut p = p.clone();
                    for (name, v) in reps.into_iter().flatten() {
                        let var = format!("${name}");
                        if p != var {
                            p = p.replace(&var, &literal_text(v));
                        }
                    }
                    out.insert(p);
                }
                Expr::Template { inner, values } => {
                    walk(ctx, inner, Some(&ctx.template_values(values)), out)
                }
                Expr::Call {
                    name, raw, args, ..
                } if name == "seriesByTag" => {
                    out.insert(raw.clone());
                    let exprs: Vec<crate::tags::Expr> = args
                        .iter()
                        .filter_map(|a| match a {
                            Expr::Str(s) => crate::tags::Expr::parse(s).ok(),
                            _ => None,
                        })
                        .collect();
                    if exprs.iter().any(crate::tags::Expr::positive) {
                        for path in ctx.source.tagged() {
                            if crate::tags::parse(&path)
                                .is_ok_and(|t| exprs.iter().all(|x| x.matches(&t)))
                            {
                                out.insert(path);
                            }
                        }
                    }
                }
                Expr::Call { args, .. } => args.iter().for_each(|a| walk(ctx, a, reps, out)),
                _ => {}
            }
        }
        let mut found = std::collections::HashSet::new();
        walk(self, e, None, &mut found);
        let mut p = self.state.prefetched.borrow_mut();
        p.entry((self.from, self.until)).or_default().extend(found);
    }

    /// A template's values as graphite-web gathers them: its named ones, or `1`, `2`...
    /// for positional ones, then the request's `template[...]` parameters over them (a
    /// dict: a name given again keeps its place and takes the later value).
    pub fn template_values(&self, values: &[(String, crate::expr::Expr)]) -> Replacements {
        let mut out: Replacements = Vec::new();
        let request = self
            .state
            .template
            .iter()
            .map(|(k, v)| (k.clone(), crate::expr::Expr::Str(v.clone())));
        for (k, v) in values.iter().cloned().chain(request) {
            dict_set(&mut out, k, v);
        }
        out
    }

    /// Whether path expression `p` was fetched for this range.
    pub fn fetched(&self, p: &str) -> bool {
        self.state
            .prefetched
            .borrow()
            .get(&(self.from, self.until))
            .is_some_and(|s| s.contains(p))
    }

    /// A new context for a request.
    pub fn new<'a>(
        source: &'a dyn Source,
        from: i64,
        until: i64,
        now: i64,
        limits: &'a Limits,
    ) -> Ctx<'a> {
        Ctx {
            source,
            from,
            until,
            now,
            limits,
            state: State::default(),
            shape_only: std::cell::Cell::new(false),
            replacements: Default::default(),
        }
    }

    /// Whisper's slots of `span` seconds for `from`..`until` (from the one after `from`'s up
    /// to `until`'s): the first's start, the end of the last, their count; refused past
    /// [`MAX_ROWS`] or the request's budget of points.
    pub fn slots(&self, span: i64, path: &str) -> Result<(i64, i64, i128), String> {
        self.slots_in(self.from, self.until, span, path)
    }

    /// [`Ctx::slots`] for `from`..`until` (a range equal to one slot is that slot, as
    /// whisper's).
    pub fn slots_in(
        &self,
        from: i64,
        until: i64,
        span: i64,
        path: &str,
    ) -> Result<(i64, i64, i128), String> {
        // In i128: the slots of a range near i64's ends overflow i64 (the review's
        // `from=-158548959918y&until=5000000000000000000` made a row count that passed).
        let slot_end = |t: i64| i128::from(t) - i128::from(t.rem_euclid(span)) + i128::from(span);
        let (from, mut until) = (slot_end(from), slot_end(until));
        if from == until {
            until += i128::from(span);
        }
        let rows = (until - from).max(0) / i128::from(span);
        if rrd::Budget::new(MAX_ROWS).spend(rows).is_err() {
            return Err(format!(
                "{path}: {from}..{until} is more than {MAX_ROWS} rows of {span} s"
            ));
        }
        self.limits.points(rows, path)?;
        let (Ok(from), Ok(until)) = (i64::try_from(from), i64::try_from(until)) else {
            return Err(format!("{path}: {from}..{until} is not a time range"));
        };
        Ok((from, until, rows))
    }
}

/// A template value's text (an `Int`, `Num` or `Str`) as Python's `str` writes it.
pub fn literal_text(v: &crate::expr::Expr) -> String {
    use crate::expr::Expr;
    match v {
        Expr::Int(i) => i.to_string(),
        Expr::Num(n) => crate::format::py_float(*n),
        Expr::Str(s) => s.clone(),
        _ => "None".into(),
    }
}

/// `d[k] = v` for a Python dict kept as pairs in insertion order: a key already there
/// keeps its place and takes the new value.
pub fn dict_set<T>(d: &mut Vec<(String, T)>, k: String, v: T) {
    match d.iter_mut().find(|(n, _)| *n == k) {
        Some(slot) => slot.1 = v,
        None => d.push((k, v)),
    }
}
