//! What a /render target is evaluated against ([`Ctx`]): the time range, the request's
//! budget, and the store's series read as whisper returns them ([`Ctx::fetch`], through the
//! one read path). The functions over them are [`super::functions`]'s.

use super::glob::Pattern;
use super::series::Series;
use super::{Graphite, Leaf};
use crate::daemon::Daemon;

/// What a target is evaluated against.
pub struct Ctx<'a> {
    pub d: &'a Daemon,
    pub g: &'a Graphite,
    pub from: i64,
    pub until: i64,
    pub now: i64,
    /// What the whole request may still read and make.
    pub budget: &'a Budget,
}

/// Points a request may read from the store and make in its functions, all its targets
/// together (16 bytes each as a series holds them: 160 MB). The review found 8 targets of
/// 10 million rows, `summarize(x, '1s')` over five years and a range whose row count
/// overflowed taking 1.5 GB each.
pub const MAX_POINTS: u64 = 10_000_000;

/// Steps of work a request's functions may take over the points (a moving window's points
/// each visit their window).
pub const MAX_WORK: u64 = 2_000_000_000;

/// A request's budget ([`MAX_POINTS`], [`MAX_WORK`]), spent before anything is allocated or
/// walked; counts are checked without overflow.
pub struct Budget {
    points: std::cell::Cell<u64>,
    work: std::cell::Cell<u64>,
}

impl Default for Budget {
    fn default() -> Self {
        Budget::new(MAX_POINTS, MAX_WORK)
    }
}

impl Budget {
    pub fn new(points: u64, work: u64) -> Budget {
        Budget {
            points: std::cell::Cell::new(points),
            work: std::cell::Cell::new(work),
        }
    }

    /// Spend `n` points (any integer: a negative count is none) for `what`.
    pub fn points(&self, n: i128, what: &str) -> Result<(), String> {
        let n = u64::try_from(n.max(0)).unwrap_or(u64::MAX);
        let left = self.points.get();
        if n > left {
            return Err(format!(
                "{what}: {n} points, more than the {MAX_POINTS} a request may read and make \
                 (narrow the time range, the targets, or the interval)"
            ));
        }
        self.points.set(left - n);
        Ok(())
    }

    /// Spend `n` steps of work for `what`.
    pub fn work(&self, n: u128, what: &str) -> Result<(), String> {
        let n = u64::try_from(n).unwrap_or(u64::MAX);
        let left = self.work.get();
        if n > left {
            return Err(format!(
                "{what}: more work than a request may take ({MAX_WORK} steps; a smaller window \
                 or range)"
            ));
        }
        self.work.set(left - n);
        Ok(())
    }
}

/// Series at most one target may fetch (a glob over a large tree must not take the daemon's
/// memory).
pub const MAX_SERIES: usize = 100_000;

/// Rows at most one series may give (a range of centuries at a fine archive must not take
/// the daemon's memory: 16 bytes a row).
pub const MAX_ROWS: usize = 10_000_000;

impl Ctx<'_> {
    /// Whisper's slots of `span` seconds for `from`..`until` (from the one after `from`'s up
    /// to `until`'s): the first's start, the end of the last, their count; refused past
    /// [`MAX_ROWS`] or the request's budget of points.
    fn slots(&self, span: i64, path: &str) -> Result<(i64, i64, i128), String> {
        // In i128: the slots of a range near i64's ends overflow i64 (the review's
        // `from=-158548959918y&until=5000000000000000000` made a row count that passed).
        let slot_end = |t: i64| i128::from(t) - i128::from(t.rem_euclid(span)) + i128::from(span);
        let (from, until) = (slot_end(self.from), slot_end(self.until));
        let rows = (until - from).max(0) / i128::from(span);
        if rows > MAX_ROWS as i128 {
            return Err(format!(
                "{path}: {from}..{until} is more than {MAX_ROWS} rows of {span} s"
            ));
        }
        self.budget.points(rows, path)?;
        let (Ok(from), Ok(until)) = (i64::try_from(from), i64::try_from(until)) else {
            return Err(format!("{path}: {from}..{until} is not a time range"));
        };
        Ok((from, until, rows))
    }

    /// An emoncms feed's points for `from`..`until` (`crate::feeds`), in whisper's slots of
    /// its interval, as [`Ctx::read`] gives a series'.
    fn read_feed(&self, leaf: &Leaf, path: &str) -> Result<Option<Series>, String> {
        let inner = self.d.lock();
        let Some(feed) = crate::feeds::by_name(&inner.store, &leaf.series) else {
            return Ok(None);
        };
        let span = i64::from(feed.interval.max(1));
        let (from, until, rows) = self.slots(span, path)?;
        let values = feed.values(&inner.store, from, rows as usize)?;
        drop(inner);
        let values = values
            .into_iter()
            .map(|v| (!v.is_nan()).then_some(v))
            .collect();
        Ok(Some(Series::new(
            path.to_string(),
            from,
            until,
            span,
            values,
        )))
    }

    /// The series of every path `pattern` matches, sorted by path.
    pub fn fetch(&self, pattern: &str) -> Result<Vec<Series>, String> {
        let leaves = self.g.leaves(self.d);
        if pattern.contains(';') {
            // A tagged series, named whole (in any order of its tags).
            let name = super::tags::parse(pattern)?.canonical();
            return Ok(match leaves.get(&name) {
                Some(leaf) => self.read(leaf, &name)?.into_iter().collect(),
                None => Vec::new(),
            });
        }
        let pat = Pattern::new(pattern)?;
        let prefix = pat.prefix();
        let mut out = Vec::new();
        for (path, leaf) in leaves.range(prefix.clone()..) {
            if !path.starts_with(&prefix) {
                break;
            }
            if !path.contains(';') && pat.matches(path) {
                if out.len() >= MAX_SERIES {
                    return Err(format!("'{pattern}' matches more than {MAX_SERIES} series"));
                }
                if let Some(mut s) = self.read(leaf, path)? {
                    s.path_expression = pattern.to_string();
                    out.push(s);
                }
            }
        }
        Ok(out)
    }

    /// One path's points for `from`..`until`, as whisper returns them: the slots from the
    /// one after `from`'s up to `until`'s, each labelled by its start.
    fn read(&self, leaf: &Leaf, path: &str) -> Result<Option<Series>, String> {
        if leaf.feed {
            return self.read_feed(leaf, path);
        }
        // A copy (its archives as packed, a byte or two a value) is taken under the store
        // lock, and the points read from it after the lock is let go.
        let Some(rrd) = crate::read::copy(self.d, &leaf.series) else {
            return Ok(None);
        };
        let rrd = &rrd;
        let Some(first) = rrd.schema.rra.first() else {
            return Ok(None);
        };
        let cf = if rrd.schema.rra.iter().any(|r| r.cf == rrd::Cf::Average) {
            rrd::Cf::Average
        } else {
            first.cf
        };
        let Some(rra) = rrd::fetch::choose_rra(rrd, cf, self.from, self.until, 0) else {
            return Ok(None);
        };
        let span = (rrd.schema.step.saturating_mul(rrd.schema.rra[rra].pdp_cnt)).max(1);
        let span = i64::try_from(span).unwrap_or(i64::MAX);
        let (from, until, rows) = self.slots(span, path)?;
        let mut values = Vec::with_capacity(rows as usize);
        // Each chunk of rows decoded once for the walk.
        let mut reader = rrd.rra[rra].rows.reader();
        let mut t = from;
        while t < until {
            let Some(end) = t.checked_add(span) else {
                break;
            };
            // rrdtool labels a row by its end.
            let v = match rrd.ring_row(rra, end) {
                Some(row) => reader.row(row)[leaf.ds],
                None => f64::NAN,
            };
            values.push((!v.is_nan()).then_some(v));
            t += span;
        }
        Ok(Some(Series::new(
            path.to_string(),
            from,
            until,
            span,
            values,
        )))
    }
}
