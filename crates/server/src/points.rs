//! Points over a range, one way for every kind of series the daemon serves by time slots
//! (Graphite's /render, the web page's chart of a feed): [`Points::span`] says how long a
//! slot is for a read of a range, [`Points::read`] gives a data source's values for `n`
//! slots from a slot's start, NaN where there is none. A series' archive ([`Archive`]: the
//! archive rrdtool's fetch picks for the range, `rrd::fetch::plan`, its rows labelled by
//! their ends) and an emoncms feed ([`FeedPoints`]: the points of its interval, or the mean
//! of a PHPTimeSeries' records in each slot) both are. The labels of the slots are the
//! caller's convention (whisper's, rrdtool's), applied to the one read.

use crate::daemon::Blobs;
use crate::feeds::Feed;
use rrd::{Cf, Rrd};

pub(crate) trait Points {
    /// Seconds a slot (an archive's is fixed when it is picked for its range); None:
    /// nothing to read (no archive of the consolidation asked for).
    fn span(&self) -> Option<i64>;

    /// Data source `ds`'s values for `n` slots, the first starting at `first`; fewer where
    /// the slots would run past the last time there is.
    fn read(&self, ds: usize, first: i64, n: usize) -> Result<Vec<f64>, String>;

    /// [`Points::read`], each value as `f` makes it, in one pass (a /render reads a million
    /// values a request).
    fn read_as<T>(
        &self,
        ds: usize,
        first: i64,
        n: usize,
        f: impl FnMut(f64) -> T,
    ) -> Result<Vec<T>, String>
    where
        Self: Sized,
    {
        Ok(self.read(ds, first, n)?.into_iter().map(f).collect())
    }
}

/// A series' archive for a range: the one rrdtool's fetch picks for `cf` over it.
pub(crate) struct Archive<'a> {
    rrd: &'a Rrd,
    plan: Option<rrd::fetch::Plan>,
}

impl<'a> Archive<'a> {
    pub(crate) fn of(rrd: &'a Rrd, cf: Cf, from: i64, until: i64) -> Archive<'a> {
        Archive {
            rrd,
            plan: rrd::fetch::plan(rrd, cf, from, until, 0),
        }
    }
}

impl Points for Archive<'_> {
    fn span(&self) -> Option<i64> {
        self.plan.as_ref().map(|p| p.span)
    }

    fn read(&self, ds: usize, first: i64, n: usize) -> Result<Vec<f64>, String> {
        self.read_as(ds, first, n, |v| v)
    }

    fn read_as<T>(
        &self,
        ds: usize,
        first: i64,
        n: usize,
        mut f: impl FnMut(f64) -> T,
    ) -> Result<Vec<T>, String> {
        let Some(p) = &self.plan else {
            return Ok(Vec::new());
        };
        let (rra, span) = (p.rra, p.span);
        // The slots whose ends are times (a range at i64's end stops short).
        let room = (i128::from(i64::MAX) - i128::from(first)) / i128::from(span);
        let n = n.min(usize::try_from(room.max(0)).unwrap_or(usize::MAX));
        if n == 0 {
            return Ok(Vec::new());
        }
        // rrdtool labels a row by its end: the rows of the slots' ends, a chunk at a time.
        let mut rows = Vec::new();
        rrd::fetch::push_archive_rows(self.rrd, rra, first + span, n, &mut rows);
        let d = self.rrd.ds_cnt().max(1);
        Ok(rows.chunks_exact(d).map(|r| f(r[ds])).collect())
    }
}

/// An emoncms feed read through the store's blobs (under the store lock).
pub(crate) struct FeedPoints<'a> {
    pub(crate) feed: &'a Feed,
    pub(crate) blobs: Blobs<'a>,
}

impl Points for FeedPoints<'_> {
    fn span(&self) -> Option<i64> {
        Some(i64::from(self.feed.interval.max(1)))
    }

    fn read(&self, _ds: usize, first: i64, n: usize) -> Result<Vec<f64>, String> {
        self.feed.values(self.blobs, first, n)
    }
}
