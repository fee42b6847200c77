//! `rrdtool update`: from an update argument to consolidated rows, exactly as rrdtool 1.7.2.
//!
//! Two steps. [`parse_update_arg`] turns one argument (`"N:1:U"`, `"1795300130.047:5"`,
//! `"now-10@3"` ...) into a [`Sample`]: a resolved time plus one raw value string per DS in
//! file order. [`Rrd::apply`] advances the RRD by one sample: PDPs, CDPs, rows. The engine logs
//! samples, not rows: replaying the same samples on the same state gives the same bytes.

use crate::{Rrd, RrdError};

/// One update, resolved: the unit the engine logs and replays.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Sample {
    /// Whole seconds.
    pub time: i64,
    /// Microseconds, 0..1_000_000.
    pub usec: i64,
    /// One raw input string per DS, in file order (`"U"` for DS the template left out and for
    /// COMPUTE DS). Kept as text: COUNTER/DERIVE arithmetic and `last_ds` work on the text.
    pub values: Vec<String>,
}

/// One row written to an archive (what `updatev` prints).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RowWrite {
    pub rra: usize,
    pub ds: usize,
    /// The time updatev prints for this row (with rrdtool's #899 quirk where it applies).
    pub time: i64,
    pub value: f64,
}

/// Why [`Rrd::apply`] failed.
#[derive(Debug, Clone, PartialEq)]
pub enum ApplyError {
    /// Refused before any state changed (e.g. time not after `last_up`).
    Rejected(RrdError),
    /// Failed after changing some state, as rrdtool does (e.g. a bad COUNTER value after an
    /// earlier DS was already processed). A replay must apply the sample again to match.
    Partial(RrdError),
}

impl ApplyError {
    pub fn error(&self) -> &RrdError {
        match self {
            ApplyError::Rejected(e) | ApplyError::Partial(e) => e,
        }
    }
}
