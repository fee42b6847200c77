//! The store as a /render target's source ([`Store`]): its series read as whisper returns
//! them, through the one read path. The language and the functions over them are the
//! `graphite` crate's.

use super::{Graphite, Leaf};
use crate::daemon::Daemon;
use crate::points::{Archive, FeedPoints, Points};
use graphite::ctx::MAX_SERIES;
use graphite::glob::Pattern;
use graphite::series::Series;
use graphite::{Ctx, Source};

/// The store as the [`graphite::Source`] of a request's series: the daemon, and Graphite's
/// index of its paths.
pub struct Store<'a> {
    pub d: &'a Daemon,
    pub g: &'a Graphite,
}

impl Source for Store<'_> {
    /// The series of every path `pattern` matches, sorted by path.
    fn fetch(&self, ctx: &Ctx<'_>, pattern: &str) -> Result<Vec<Series>, String> {
        let leaves = self.g.leaves(self.d);
        if pattern.contains(';') {
            // A tagged series, named whole (in any order of its tags).
            let name = graphite::tags::parse(pattern)?.canonical();
            return Ok(match leaves.get(&name) {
                Some(leaf) => self.read(ctx, leaf, &name)?.into_iter().collect(),
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
                if let Some(mut s) = self.read(ctx, leaf, path)? {
                    s.path_expression = pattern.to_string();
                    out.push(s);
                }
            }
        }
        Ok(out)
    }

    fn tagged(&self) -> Vec<String> {
        let leaves = self.g.leaves(self.d);
        leaves.keys().filter(|p| p.contains(';')).cloned().collect()
    }
}

impl Store<'_> {
    /// One path's points for `from`..`until`, as whisper returns them. A series is read from
    /// the archive rrdtool picks (AVERAGE where it has one, else its first archive's CF); an
    /// emoncms feed (`crate::feeds`) from its points.
    fn read(&self, ctx: &Ctx<'_>, leaf: &Leaf, path: &str) -> Result<Option<Series>, String> {
        if leaf.feed {
            let inner = self.d.lock();
            let Some(feed) = crate::feeds::by_name(inner.blobs(), &leaf.series) else {
                return Ok(None);
            };
            let points = FeedPoints {
                feed: &feed,
                blobs: inner.blobs(),
            };
            return series_of(ctx, &points, leaf.ds, path, (ctx.from, ctx.until));
        }
        // The archive the range reads is copied (packed, a byte or two a value) under the
        // store lock, the others left out (a carbon series' five-year archive is most of its
        // bytes), and the points read from the copy after the lock is let go.
        let Some(picked) =
            crate::read::with(self.d, &leaf.series, |rrd| pick(ctx, rrd)).map_err(|e| e.0)?
        else {
            return Ok(None);
        };
        let Some((rrd, cf, from, until)) = picked else {
            return Ok(None);
        };
        series_of(
            ctx,
            &Archive::of(&rrd, cf, from, until),
            leaf.ds,
            path,
            (from, until),
        )
    }
}

/// What a read of `rrd` for the request takes: a copy of it holding only the archive the
/// range reads, its CF (AVERAGE where it has one, else its first archive's), and the
/// range. None: nothing to read.
///
/// A carbon series (one data source, `value`) reads as its whisper file would: nothing
/// from a start after now or an end before the longest archive reaches back, the end no
/// later than now, the start no earlier than that reach. Other RRDs read as rrdtool fetches
/// them.
fn pick(ctx: &Ctx<'_>, rrd: &rrd::Rrd) -> Option<(rrd::Rrd, rrd::Cf, i64, i64)> {
    let first = rrd.schema.rra.first()?;
    let cf = if rrd.schema.rra.iter().any(|r| r.cf == rrd::Cf::Average) {
        rrd::Cf::Average
    } else {
        first.cf
    };
    let (mut from, mut until) = (ctx.from, ctx.until);
    if rrd.schema.ds.len() == 1 && rrd.schema.ds[0].name == "value" {
        if ctx.from > ctx.now {
            return None;
        }
        let step = rrd.schema.step as i64;
        let reach = rrd
            .schema
            .rra
            .iter()
            .map(|r| {
                (r.pdp_cnt as i64)
                    .saturating_mul(r.row_cnt as i64)
                    .saturating_mul(step)
            })
            .max()
            .unwrap_or(0);
        let oldest = ctx.now.saturating_sub(reach);
        if ctx.until < oldest {
            return None;
        }
        until = until.min(ctx.now);
        from = from.max(oldest);
    }
    // The archive is chosen from the schema and the last update alone, so the copy chooses
    // the same one.
    let keep = rrd::fetch::plan(rrd, cf, from, until, 0).map(|p| p.rra);
    let ds_cnt = rrd.schema.ds.len();
    let copy = rrd::Rrd {
        schema: rrd.schema.clone(),
        last_up: rrd.last_up,
        last_up_usec: rrd.last_up_usec,
        pdp: rrd.pdp.clone(),
        cdp: rrd.cdp.clone(),
        rra: rrd
            .rra
            .iter()
            .enumerate()
            .map(|(i, r)| {
                // A first reading looked at for its shape alone needs no rows.
                if Some(i) == keep && !ctx.shape_only.get() {
                    r.clone()
                } else {
                    rrd::RraData {
                        cur_row: r.cur_row,
                        rows: rrd::Rows::filled(0, ds_cnt, f64::NAN),
                    }
                }
            })
            .collect(),
        hw: None,
    };
    Some((copy, cf, from, until))
}

/// `points`' values for the request's range in whisper's slots of its span (not rrdtool's
/// window): the slots from the one after `from`'s up to `until`'s, each labelled by its
/// start, charged to the request's budget (`Ctx::slots`).
fn series_of(
    ctx: &Ctx<'_>,
    points: &impl Points,
    ds: usize,
    path: &str,
    (from, until): (i64, i64),
) -> Result<Option<Series>, String> {
    let Some(span) = points.span() else {
        return Ok(None);
    };
    let (from, until, rows) = ctx.slots_in(from, until, span, path)?;
    let values = if ctx.shape_only.get() {
        Vec::new()
    } else {
        points.read_as(ds, from, rows as usize, |v| (!v.is_nan()).then_some(v))?
    };
    Ok(Some(Series::new(
        path.to_string(),
        from,
        until,
        span,
        values,
    )))
}
