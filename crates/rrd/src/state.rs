//! An RRD in memory: schema, live state and archive rows.
//!
//! The fields are those of an `.rrd` file that carry meaning (rrdtool's `live_head`,
//! `pdp_prep`, `cdp_prep`, `rra_ptr` and data), without its byte layout. `info` and `dump`
//! print them; `update` advances them; the engine persists them.

use crate::num::DNAN;
use crate::rows::Rows;
use crate::schema::Schema;
use std::sync::Arc;

/// Per-DS state of the primary data point being built (rrdtool's `pdp_prep`).
#[derive(Debug, Clone, PartialEq)]
pub struct PdpPrep {
    /// The raw input string of the last update, at most 29 bytes; `"U"` when unknown.
    pub last_ds: compact_str::CompactString,
    /// Seconds of the current PDP that are unknown (`unknown_sec`).
    pub unkn_sec_cnt: u64,
    /// Accumulated rate*seconds of the current PDP (`value`), NaN when nothing known yet.
    pub val: f64,
}

/// Per-RRA, per-DS consolidation state (rrdtool's `cdp_prep` scratch area).
#[derive(Debug, Clone, PartialEq)]
pub struct CdpPrep {
    /// The consolidated value being built (`value`).
    pub val: f64,
    /// PDPs of the current row that were unknown (`unknown_datapoints`).
    pub unkn_pdp_cnt: u64,
    /// Value written to the first row completed by the last update (`primary_value`).
    pub primary: f64,
    /// Value written to further rows completed by the same update (`secondary_value`).
    pub secondary: f64,
}

/// One archive's rows: a ring of `row_cnt` rows of `ds_cnt` values.
#[derive(Debug, Clone, PartialEq)]
pub struct RraData {
    /// Index of the most recently written row.
    pub cur_row: u64,
    /// `row_cnt * ds_cnt` values, row after row, packed ([`Rows`]).
    pub rows: Rows,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Rrd {
    /// Shared: series of one schema can hold one copy (a store interns them); changed
    /// through `Arc::make_mut`.
    pub schema: Arc<Schema>,
    /// Time of the last update, whole seconds.
    pub last_up: i64,
    /// Microseconds part of the last update time, 0..1_000_000.
    pub last_up_usec: i64,
    /// One per DS.
    pub pdp: Vec<PdpPrep>,
    /// One per (RRA, DS): index `rra * ds_cnt + ds`.
    pub cdp: Vec<CdpPrep>,
    /// One per RRA.
    pub rra: Vec<RraData>,
    /// The Holt-Winters archives' part of the CDP state, None when the RRD has none (no cost
    /// to the others).
    pub hw: Option<Box<HwState>>,
}

/// rrdtool's CDP scratch slots 2 to 7 (`intercept`/`seasonal`/`deviation`, their `last_`,
/// `slope`, `last_slope`, `null_count`/`init_flag`, `last_null_count`) as bits, one entry per
/// (archive, DS) like [`Rrd::cdp`]: doubles or counts by the archive's CF. A FAILURES
/// archive keeps its violation history as bytes from the start of its scratch (the bits of
/// [`CdpPrep::val`], [`CdpPrep::unkn_pdp_cnt`], then these).
#[derive(Debug, Clone)]
pub struct HwState {
    pub scratch: Vec<[u64; 6]>,
    /// An update of this call scheduled the seasonal smoother, which rrdtool runs once at
    /// the end of an update call ([`Rrd::end_update_call`]). Not part of the file: a call
    /// ends before anything is stored.
    pub smooth_due: bool,
}

impl PartialEq for HwState {
    /// The stored state: `smooth_due` belongs to a call, not to the RRD.
    fn eq(&self, other: &HwState) -> bool {
        self.scratch == other.scratch
    }
}

impl HwState {
    /// rrdtool's `init_cdp` of the Holt-Winters slots for an archive of `cf` (zeros for
    /// FAILURES and the consolidating CFs).
    pub fn initial(cf: crate::schema::Cf) -> [u64; 6] {
        use crate::schema::Cf;
        let nan = DNAN.to_bits();
        match cf {
            Cf::HwPredict | Cf::MhwPredict => [nan, nan, nan, nan, 1, 1],
            Cf::Seasonal | Cf::DevSeasonal => [nan, nan, 0, 0, 1, 0],
            _ => [0; 6],
        }
    }
}

impl Rrd {
    /// A new RRD as `rrdtool create --start start` leaves it: every row unknown, the part of
    /// the first PDP and of the first row of each archive before `start` counted as unknown.
    /// Unknown is rrdtool's DNAN (sign bit set); primary and secondary values start at 0.0, as
    /// `rrdtool dump` of a fresh file shows. `cur_row` is 0 (rrdtool picks a random row).
    pub fn new(schema: impl Into<Arc<Schema>>, start: i64) -> Rrd {
        let schema: Arc<Schema> = schema.into();
        let step = schema.step as i64;
        let ds_cnt = schema.ds.len();
        let unkn_sec = start.rem_euclid(step);
        let pdp = (0..ds_cnt)
            .map(|_| PdpPrep {
                last_ds: "U".into(),
                unkn_sec_cnt: unkn_sec as u64,
                val: DNAN,
            })
            .collect();
        let mut cdp = Vec::with_capacity(schema.rra.len() * ds_cnt);
        let mut rra = Vec::with_capacity(schema.rra.len());
        let any_hw = schema.rra.iter().any(|r| r.cf.is_hw());
        let mut hw = Vec::new();
        for r in &schema.rra {
            let span = step * r.pdp_cnt as i64;
            let unkn_pdp = ((start - unkn_sec).rem_euclid(span) / step) as u64;
            // rrdtool's init_cdp: the Holt-Winters archives but DEVPREDICT leave value and
            // unknown PDPs at 0.
            let (val, unkn) = match r.cf {
                c if c.is_hw() && c != crate::schema::Cf::DevPredict => (0.0, 0),
                _ => (DNAN, unkn_pdp),
            };
            for _ in 0..ds_cnt {
                cdp.push(CdpPrep {
                    val,
                    unkn_pdp_cnt: unkn,
                    primary: 0.0,
                    secondary: 0.0,
                });
                if any_hw {
                    hw.push(HwState::initial(r.cf));
                }
            }
            rra.push(RraData {
                cur_row: 0,
                rows: Rows::filled(r.row_cnt, ds_cnt, DNAN),
            });
        }
        Rrd {
            schema,
            last_up: start,
            last_up_usec: 0,
            pdp,
            cdp,
            rra,
            hw: any_hw.then(|| {
                Box::new(HwState {
                    scratch: hw,
                    smooth_due: false,
                })
            }),
        }
    }

    pub fn ds_cnt(&self) -> usize {
        self.schema.ds.len()
    }

    pub fn cdp(&self, rra: usize, ds: usize) -> &CdpPrep {
        &self.cdp[rra * self.ds_cnt() + ds]
    }

    /// Archive `rra`'s Holt-Winters CDP slots 2-7 for `ds` (zeros when the RRD has none).
    pub fn hw_slots(&self, rra: usize, ds: usize) -> [u64; 6] {
        self.hw
            .as_ref()
            .map_or([0; 6], |h| h.scratch[rra * self.ds_cnt() + ds])
    }

    /// The first 32 bytes of rrdtool's CDP scratch for (`rra`, `ds`): where a FAILURES
    /// archive keeps its violations, one byte each, the newest first.
    pub fn scratch_bytes(&self, rra: usize, ds: usize) -> [u8; 32] {
        let c = self.cdp(rra, ds);
        let h = self.hw_slots(rra, ds);
        let mut b = [0u8; 32];
        for (k, w) in [c.val.to_bits(), c.unkn_pdp_cnt, h[0], h[1]]
            .iter()
            .enumerate()
        {
            b[8 * k..8 * k + 8].copy_from_slice(&w.to_le_bytes());
        }
        b
    }

    /// Time of the most recent row of archive `rra`: `last_up` rounded down to its row span.
    pub fn rra_end(&self, rra: usize) -> i64 {
        let span = (self.schema.step * self.schema.rra[rra].pdp_cnt) as i64;
        self.last_up - self.last_up.rem_euclid(span)
    }

    /// Time of the oldest row archive `rra` keeps (`rrdtool first`).
    pub fn first(&self, rra: usize) -> i64 {
        let def = &self.schema.rra[rra];
        let span = (self.schema.step * def.pdp_cnt) as i64;
        self.rra_end(rra) - (def.row_cnt as i64 - 1) * span
    }

    /// The ring row of archive `rra` that holds time `t` (a multiple of the row span), if the
    /// archive keeps it.
    pub fn ring_row(&self, rra: usize, t: i64) -> Option<usize> {
        let def = &self.schema.rra[rra];
        let span = (self.schema.step * def.pdp_cnt) as i64;
        let end = self.rra_end(rra);
        if t > end || t % span != 0 {
            return None;
        }
        let back = ((end - t) / span) as u64;
        if back >= def.row_cnt {
            return None;
        }
        Some(((self.rra[rra].cur_row + def.row_cnt - back) % def.row_cnt) as usize)
    }

    /// The value of archive `rra`, DS `ds`, at row `t` (a multiple of the row span); DNAN when
    /// the row is outside the archive's retention. For many rows, walk
    /// [`Rows::reader`] with [`Rrd::ring_row`] instead.
    pub fn value_at(&self, rra: usize, ds: usize, t: i64) -> f64 {
        match self.ring_row(rra, t) {
            Some(row) => self.rra[rra].rows.get(row * self.ds_cnt() + ds),
            None => DNAN,
        }
    }
}
