//! From per-DS `pdp_new` to PDPs, CDPs and rows: rrdtool 1.7.2's step processing.
//!
//! Owns `simple_update` (no step boundary crossed), the JKammler split of the open left PDP,
//! `process_pdp_st` (PDP values, heartbeat and unknown-seconds rules, COMPUTE), the CDP update
//! of every archive (xff, primary/secondary values, carry-over) and the row writes with the
//! times `updatev` prints. The floating-point operations are rrdtool's, in rrdtool's order.

use super::RowWrite;
use crate::num::DNAN;
use crate::rpn;
use crate::schema::{Cf, DsType};
use crate::{Rrd, RrdError};

/// Where one update falls relative to step boundaries (`calculate_elapsed_steps`).
#[derive(Debug, Clone, Copy)]
pub(super) struct Steps {
    /// Seconds since the last update.
    pub interval: f64,
    /// Seconds from the last update to the last boundary crossed.
    pub pre_int: f64,
    /// Seconds from the last boundary crossed to this update.
    pub post_int: f64,
    /// Boundaries crossed (PDPs completed).
    pub elapsed: u64,
    /// Index of the first PDP completed (`proc_pdp_st / step`).
    pub proc_pdp_cnt: u64,
    /// The update's time, for RPN `NOW` (rrdtool reads the clock; the sample time is the
    /// replayable stand-in, equal to it for `N` updates).
    pub now: i64,
}

/// Up to this many DS, per-update scratch lives on the stack.
const STACK_DS: usize = 32;

/// No boundary crossed: accumulate into the open PDP.
pub(super) fn simple_update(rrd: &mut Rrd, interval: f64, pdp_new: &[f64]) {
    for (p, &new) in rrd.pdp.iter_mut().zip(pdp_new) {
        if new.is_nan() {
            p.unkn_sec_cnt = (p.unkn_sec_cnt as f64 + interval.floor()) as u64;
        } else if p.val.is_nan() {
            p.val = new;
        } else {
            p.val += new;
        }
    }
}

/// At least one boundary crossed. When more than one is crossed and the last update was not
/// on a boundary, the open left PDP is closed first on its own (JKammler split): its rows are
/// written before the rest.
pub(super) fn process_steps(
    rrd: &mut Rrd,
    mut st: Steps,
    pdp_new: &mut [f64],
    time: i64,
    sink: &mut dyn FnMut(RowWrite),
) -> Result<(), RrdError> {
    let step = rrd.schema.step;
    // rrdtool's seasonal coefficient buffers live for the whole update argument.
    let mut coefs = super::hw::Coefs::default();
    if st.elapsed > 1 {
        let open = (st.pre_int as u64) % step;
        if open > 0 {
            let sec_open = open as f64;
            let ds_cnt = pdp_new.len();
            let mut stack = [0f64; STACK_DS];
            let mut heap = Vec::new();
            let left: &mut [f64] = if ds_cnt <= STACK_DS {
                &mut stack[..ds_cnt]
            } else {
                heap.resize(ds_cnt, 0.0);
                &mut heap
            };
            for (l, n) in left.iter_mut().zip(pdp_new.iter_mut()) {
                *l = *n * sec_open / st.interval;
                *n -= *l;
            }
            let left_st = Steps {
                interval: sec_open,
                pre_int: sec_open,
                post_int: 0.0,
                elapsed: 1,
                proc_pdp_cnt: st.proc_pdp_cnt,
                now: st.now,
            };
            let time_ref = rrd.last_up + open as i64;
            run_steps(rrd, left_st, left, time_ref, &mut coefs, sink)?;
            st.interval -= sec_open;
            st.pre_int -= sec_open;
            st.elapsed -= 1;
            st.proc_pdp_cnt += 1;
        }
    }
    run_steps(rrd, st, pdp_new, time, &mut coefs, sink)
}

/// `process_all_pdp_st`, `update_all_cdp_prep` and `write_to_rras` for one batch.
fn run_steps(
    rrd: &mut Rrd,
    st: Steps,
    pdp_new: &[f64],
    time_ref: i64,
    coefs: &mut super::hw::Coefs,
    sink: &mut dyn FnMut(RowWrite),
) -> Result<(), RrdError> {
    if rrd.hw.is_some() {
        return super::hw::run_steps(rrd, st, pdp_new, time_ref, coefs, sink);
    }
    let ds_cnt = pdp_new.len();
    let mut stack = [0f64; STACK_DS];
    let mut heap = Vec::new();
    let pdp_temp: &mut [f64] = if ds_cnt <= STACK_DS {
        &mut stack[..ds_cnt]
    } else {
        heap.resize(ds_cnt, 0.0);
        &mut heap
    };
    process_all_pdp_st(rrd, &st, pdp_new, pdp_temp)?;
    for r in 0..rrd.schema.rra.len() {
        let def = &rrd.schema.rra[r];
        let (pdp_cnt, row_cnt) = (def.pdp_cnt, def.row_cnt);
        // (The same without divisions for one PDP a row: replay makes millions of these.)
        let start_pdp_offset = if pdp_cnt == 1 {
            1
        } else {
            pdp_cnt - st.proc_pdp_cnt % pdp_cnt
        };
        let rra_step_cnt = if start_pdp_offset > st.elapsed {
            0
        } else if pdp_cnt == 1 {
            st.elapsed.min(row_cnt)
        } else {
            ((st.elapsed - start_pdp_offset) / pdp_cnt + 1).min(row_cnt)
        };
        update_cdps(rrd, r, &st, start_pdp_offset, rra_step_cnt, pdp_temp);
        if rra_step_cnt == 0 {
            continue;
        }
        write_rows(rrd, r, rra_step_cnt, time_ref, false, sink);
    }
    Ok(())
}

/// `write_to_rras` for archive `r`: `rra_step_cnt` rows after its current one, the first
/// from each CDP's primary value, the others from the secondary; with `skip` (a seasonal
/// archive on a bulk update) the current row only moves. Each row goes to `sink` with the
/// time updatev prints: from the batch's reference time (the update time, or for the
/// split-off left PDP `last_up + whole open seconds`) rounded down to the row span.
#[inline]
pub(super) fn write_rows(
    rrd: &mut Rrd,
    r: usize,
    rra_step_cnt: u64,
    time_ref: i64,
    skip: bool,
    sink: &mut dyn FnMut(RowWrite),
) {
    let ds_cnt = rrd.pdp.len();
    let (pdp_cnt, row_cnt) = (rrd.schema.rra[r].pdp_cnt, rrd.schema.rra[r].row_cnt);
    let span = (pdp_cnt * rrd.schema.step) as i64;
    let last_end = time_ref - time_ref.rem_euclid(span);
    let data = &mut rrd.rra[r];
    for k in 0..rra_step_cnt {
        // `cur_row < row_cnt` (`check_shape`): the wrap without a division.
        data.cur_row = if data.cur_row + 1 >= row_cnt {
            0
        } else {
            data.cur_row + 1
        };
        if skip {
            continue;
        }
        let base = data.cur_row as usize * ds_cnt;
        // updatev (#899) prints every row after the first one span too late.
        let time = last_end - (rra_step_cnt - 1 - k) as i64 * span + if k > 0 { span } else { 0 };
        for ds in 0..ds_cnt {
            let c = &rrd.cdp[r * ds_cnt + ds];
            let value = if k == 0 { c.primary } else { c.secondary };
            data.rows.set(base + ds, value);
            sink(RowWrite {
                rra: r,
                ds,
                time,
                value,
            });
        }
    }
}

/// `process_pdp_st` for every DS: the rate of the PDPs completed, into `pdp_temp`.
pub(super) fn process_all_pdp_st(
    rrd: &mut Rrd,
    st: &Steps,
    pdp_new: &[f64],
    pdp_temp: &mut [f64],
) -> Result<(), RrdError> {
    let step = rrd.schema.step;
    for i in 0..pdp_new.len() {
        let def = &rrd.schema.ds[i];
        let p = &mut rrd.pdp[i];
        let new = pdp_new[i];
        let mut pre_unknown = 0.0;
        if new.is_nan() {
            pre_unknown = st.pre_int;
        } else {
            let v = if p.val.is_nan() { 0.0 } else { p.val };
            p.val = v + new / st.interval * st.pre_int;
        }
        let temp =
            if st.interval > def.heartbeat as f64 || (step as f64 / 2.0) < p.unkn_sec_cnt as f64 {
                DNAN
            } else {
                p.val
                    / ((st.elapsed.wrapping_mul(step).wrapping_sub(p.unkn_sec_cnt)) as f64
                        - pre_unknown)
            };
        pdp_temp[i] = temp;
        if def.kind == DsType::Compute {
            pdp_temp[i] = rpn::eval_compute(&rrd.schema, i, pdp_temp, st.now)?;
        }
        let p = &mut rrd.pdp[i];
        if new.is_nan() {
            p.unkn_sec_cnt = st.post_int.floor() as u64;
            p.val = DNAN;
        } else {
            p.unkn_sec_cnt = 0;
            p.val = new / st.interval * st.post_int;
        }
    }
    Ok(())
}

/// The CDP update of archive `r` for every DS (`update_cdp`; for archives of one PDP per row
/// the PDP itself).
fn update_cdps(
    rrd: &mut Rrd,
    r: usize,
    st: &Steps,
    start_pdp_offset: u64,
    rra_step_cnt: u64,
    pdp_temp: &[f64],
) {
    let def = &rrd.schema.rra[r];
    let ds_cnt = pdp_temp.len();
    let cdps = &mut rrd.cdp[r * ds_cnt..(r + 1) * ds_cnt];
    if def.pdp_cnt == 1 {
        // One PDP per row: the PDP is the row. rrdtool leaves the secondary value alone when
        // only one PDP was completed (verified with the file bytes).
        for (c, &pdp) in cdps.iter_mut().zip(pdp_temp) {
            c.primary = pdp;
            if st.elapsed > 1 {
                c.secondary = pdp;
            }
        }
        return;
    }
    let (cf, xff, pdp_cnt) = (def.cf, def.xff, def.pdp_cnt);
    for (c, &pdp) in cdps.iter_mut().zip(pdp_temp) {
        update_cdp(
            c,
            cf,
            xff,
            pdp_cnt,
            pdp,
            rra_step_cnt,
            st.elapsed,
            start_pdp_offset,
        );
    }
}

/// One data source's CDP update in an archive of `pdp_cnt` PDPs a row (rrdtool's
/// `update_cdp`): `pdp` is the PDP value, `rra_step_cnt` the rows this update completes,
/// `elapsed` the PDPs it completes and `start_pdp_offset` those of them that belong to the
/// first row completed. `create --source` calls it PDP by PDP, as rrdtool does.
#[allow(clippy::too_many_arguments)]
pub fn update_cdp(
    c: &mut crate::CdpPrep,
    cf: Cf,
    xff: f64,
    pdp_cnt: u64,
    pdp: f64,
    rra_step_cnt: u64,
    elapsed: u64,
    start_pdp_offset: u64,
) {
    if rra_step_cnt > 0 {
        if pdp.is_nan() {
            c.unkn_pdp_cnt = c.unkn_pdp_cnt.wrapping_add(start_pdp_offset);
            c.secondary = DNAN;
        } else {
            c.secondary = pdp;
        }
        c.primary = if c.unkn_pdp_cnt as f64 > pdp_cnt as f64 * xff {
            DNAN
        } else {
            initial_cdp_val(cf, c.val, pdp, start_pdp_offset, pdp_cnt, c.unkn_pdp_cnt)
        };
        let n = elapsed.wrapping_sub(start_pdp_offset) % pdp_cnt;
        c.val = if n == 0 || pdp.is_nan() {
            match cf {
                Cf::Max => f64::NEG_INFINITY,
                Cf::Min => f64::INFINITY,
                Cf::Average => 0.0,
                // LAST, and rrdtool's default for the others.
                _ => DNAN,
            }
        } else {
            match cf {
                Cf::Average => pdp * n as f64,
                _ => pdp,
            }
        };
        c.unkn_pdp_cnt = if pdp.is_nan() { n } else { 0 };
    } else if pdp.is_nan() {
        c.unkn_pdp_cnt = c.unkn_pdp_cnt.wrapping_add(elapsed);
    } else if c.val.is_nan() {
        c.val = match cf {
            Cf::Average => pdp * elapsed as f64,
            _ => pdp,
        };
    } else {
        c.val = match cf {
            Cf::Average => c.val + pdp * elapsed as f64,
            Cf::Min => keep_min(c.val, pdp),
            Cf::Max => keep_max(c.val, pdp),
            _ => pdp,
        };
    }
}

/// The value of the first row an update completes (`initialize_cdp_val`).
fn initial_cdp_val(
    cf: Cf,
    cdp_val: f64,
    pdp: f64,
    start_pdp_offset: u64,
    pdp_cnt: u64,
    unkn: u64,
) -> f64 {
    let ifnan = |x: f64, d: f64| if x.is_nan() { d } else { x };
    match cf {
        Cf::Average => {
            (ifnan(cdp_val, 0.0) + ifnan(pdp, 0.0) * start_pdp_offset as f64)
                / pdp_cnt.wrapping_sub(unkn) as f64
        }
        Cf::Max => keep_max(
            ifnan(cdp_val, f64::NEG_INFINITY),
            ifnan(pdp, f64::NEG_INFINITY),
        ),
        Cf::Min => keep_min(ifnan(cdp_val, f64::INFINITY), ifnan(pdp, f64::INFINITY)),
        _ => pdp,
    }
}

/// The larger of the value so far and a new PDP, keeping the value so far on a tie (so
/// `-0.0` then `0.0` stays `-0.0`, as rrdtool's file shows). Neither is NaN here.
fn keep_max(so_far: f64, new: f64) -> f64 {
    if new > so_far {
        new
    } else {
        so_far
    }
}

/// The smaller of the value so far and a new PDP, keeping the value so far on a tie.
fn keep_min(so_far: f64, new: f64) -> f64 {
    if new < so_far {
        new
    } else {
        so_far
    }
}
