//! The step processing of an RRD with Holt-Winters archives, in rrdtool 1.7.2's order.
//!
//! An RRD without them takes `consolidate::run_steps`, which writes each archive's rows
//! right after its CDP update. Here the seasonal archives read rows ahead of the one being
//! written, so the order is rrdtool's, archive by archive for every step: the CDP update of
//! every archive (`update_all_cdp_prep`: consolidation, and for archives of one PDP a row
//! crossed by more than two PDPs at once the bulk reset, `reset_cdp`), then the Holt-Winters
//! update of every archive of one PDP a row for the primary and then the secondary value
//! (`update_aberrant_cdps`, only when one or two PDPs were completed), then the row writes
//! (`write_to_rras`), the seasonal ones left out on a bulk update. The seasonal smoother is
//! scheduled here and run once at the end of the update call ([`Rrd::end_update_call`]).
//!
//! Learnt from rrdcreate(1), rrdtool's file bytes and a reading of rrd_update.c, rrd_hw.c,
//! rrd_hw_update.c and rrd_hw_math.c; the code is ours. What this keeps of rrdtool's C, as
//! it changes results: the prediction takes the null count as a C `int`; an archive decides
//! "already updated" by comparing archive indexes (FAILURES compares its own with the
//! SEASONAL archive's for the deviation too); a FAILURES archive's violations are bytes over
//! the start of its CDP scratch, counted as signed chars into an unsigned short; the
//! smoother reads a file of version 0003 with the default window whatever the archive holds.

use super::consolidate::{process_all_pdp_st, update_cdp, write_rows, Steps};
use super::RowWrite;
use crate::num::DNAN;
use crate::schema::Cf;
use crate::{Rrd, RrdError};

/// Burn-in: the smoother runs at every wrap of a seasonal archive until it has wrapped this
/// many times, then once a season at its smoothing row.
const BURNIN_CYCLES: u64 = 3;

/// Slots of [`crate::HwState::scratch`] (rrdtool's scratch slots 2 to 7).
const INTERCEPT: usize = 0; // also SEASONAL's seasonal, DEVSEASONAL's deviation
const LAST_INTERCEPT: usize = 1; // also the last seasonal / deviation
const SLOPE: usize = 2;
const LAST_SLOPE: usize = 3;
const NULL_COUNT: usize = 4; // also the seasonal archives' burn-in count
const LAST_NULL_COUNT: usize = 5;

/// The seasonal coefficients read ahead for one archive (`lookup_seasonal`), one per DS.
/// rrdtool keeps two such buffers for a whole update argument, shared by its archives.
#[derive(Default)]
pub(super) struct Coefs {
    last: Option<Vec<f64>>,
    next: Option<Vec<f64>>,
}

/// Additive or multiplicative Holt-Winters: the archive's own CF, or for the seasonal and
/// FAILURES archives that of the HWPREDICT/MHWPREDICT they depend on.
#[derive(Clone, Copy)]
struct Model {
    multiplicative: bool,
}

impl Model {
    fn of(cf: Cf) -> Model {
        Model {
            multiplicative: cf == Cf::MhwPredict,
        }
    }

    fn identity(self) -> f64 {
        if self.multiplicative {
            1.0
        } else {
            0.0
        }
    }

    /// The null count is a C `int` in rrdtool's prediction.
    fn predict(self, intercept: f64, slope: f64, null_count: u64, seasonal: f64) -> f64 {
        let n = null_count as u32 as i32 as f64;
        if self.multiplicative {
            (intercept + slope * n) * seasonal
        } else {
            intercept + slope * n + seasonal
        }
    }

    /// The new intercept from the coefficients before it (`coefs`: intercept, slope, null
    /// count as they stand).
    fn intercept(self, alpha: f64, observed: f64, seasonal: f64, coefs: &[u64; 6]) -> f64 {
        let (int, slope, nulls) = (
            f64::from_bits(coefs[INTERCEPT]),
            f64::from_bits(coefs[SLOPE]),
            coefs[NULL_COUNT] as f64,
        );
        if self.multiplicative {
            if seasonal <= 0.0 {
                return DNAN;
            }
            alpha * (observed / seasonal) + (1.0 - alpha) * (int + slope * nulls)
        } else {
            alpha * (observed - seasonal) + (1.0 - alpha) * (int + slope * nulls)
        }
    }

    fn seasonality(self, gamma: f64, observed: f64, intercept: f64, seasonal: f64) -> f64 {
        if self.multiplicative {
            if intercept <= 0.0 {
                return DNAN;
            }
            gamma * (observed / intercept) + (1.0 - gamma) * seasonal
        } else {
            gamma * (observed - intercept) + (1.0 - gamma) * seasonal
        }
    }

    fn init_seasonality(self, seasonal: f64, intercept: f64) -> f64 {
        if self.multiplicative {
            if intercept <= 0.0 {
                return DNAN;
            }
            seasonal / intercept
        } else {
            seasonal - intercept
        }
    }
}

fn slope(beta: f64, coefs: &[u64; 6]) -> f64 {
    beta * (f64::from_bits(coefs[INTERCEPT]) - f64::from_bits(coefs[LAST_INTERCEPT]))
        + (1.0 - beta) * f64::from_bits(coefs[SLOPE])
}

fn f(bits: u64) -> f64 {
    f64::from_bits(bits)
}

/// One batch of steps (`process_all_pdp_st`, `update_all_cdp_prep`, `update_aberrant_cdps`,
/// `write_to_rras`) for an RRD with Holt-Winters archives.
pub(super) fn run_steps(
    rrd: &mut Rrd,
    st: Steps,
    pdp_new: &[f64],
    time_ref: i64,
    coefs: &mut Coefs,
    sink: &mut dyn FnMut(RowWrite),
) -> Result<(), RrdError> {
    let ds_cnt = pdp_new.len();
    let mut pdp_temp = vec![0f64; ds_cnt];
    process_all_pdp_st(rrd, &st, pdp_new, &mut pdp_temp)?;
    let n_rra = rrd.schema.rra.len();
    let mut step_cnt = vec![0u64; n_rra];
    let mut skip = vec![false; n_rra];
    let elapsed = st.elapsed;

    // update_all_cdp_prep
    for r in 0..n_rra {
        let def = rrd.schema.rra[r].clone();
        let start_pdp_offset = def.pdp_cnt - st.proc_pdp_cnt % def.pdp_cnt;
        step_cnt[r] = if start_pdp_offset <= elapsed {
            ((elapsed - start_pdp_offset) / def.pdp_cnt + 1).min(def.row_cnt)
        } else {
            0
        };
        if matches!(def.cf, Cf::Seasonal | Cf::DevSeasonal) {
            // A bulk update: the seasonal archive skips ahead, unwritten.
            if step_cnt[r] > 1 {
                skip[r] = true;
                coefs.last = Some(lookup_seasonal(rrd, r, elapsed));
                coefs.next = Some(lookup_seasonal(rrd, r, elapsed + 1));
            }
            if schedule_smooth(rrd, r, elapsed) {
                if let Some(h) = rrd.hw.as_mut() {
                    h.smooth_due = true;
                }
            }
        }
        for (ds, &pdp) in pdp_temp.iter().enumerate() {
            let k = r * ds_cnt + ds;
            if def.pdp_cnt > 1 {
                update_cdp(
                    &mut rrd.cdp[k],
                    def.cf,
                    def.xff,
                    def.pdp_cnt,
                    pdp,
                    step_cnt[r],
                    elapsed,
                    start_pdp_offset,
                );
            } else if elapsed > 2 {
                reset_cdp(rrd, r, ds, elapsed, pdp, coefs);
            }
        }
    }

    // update_aberrant_cdps: the primary value, then for two PDPs the secondary.
    if elapsed < 3 {
        for pass in 0..elapsed {
            let primary = pass == 0;
            for r in 0..n_rra {
                let def = &rrd.schema.rra[r];
                if def.pdp_cnt != 1 {
                    continue;
                }
                let cf = def.cf;
                if matches!(cf, Cf::Seasonal | Cf::DevSeasonal) {
                    coefs.next = Some(lookup_seasonal(rrd, r, elapsed + 1 + pass));
                }
                for (ds, &pdp) in pdp_temp.iter().enumerate() {
                    update_aberrant(rrd, r, ds, cf, pdp, primary, coefs);
                }
            }
        }
    }

    for r in 0..n_rra {
        write_rows(rrd, r, step_cnt[r], time_ref, skip[r], sink);
    }
    Ok(())
}

/// The row `offset` rows after archive `r`'s current one (`lookup_seasonal`), one value per
/// DS.
fn lookup_seasonal(rrd: &Rrd, r: usize, offset: u64) -> Vec<f64> {
    let ds_cnt = rrd.ds_cnt();
    let row_cnt = rrd.schema.rra[r].row_cnt;
    let mut row = rrd.rra[r].cur_row.wrapping_add(offset);
    if row >= row_cnt {
        row %= row_cnt;
    }
    let base = row as usize * ds_cnt;
    (0..ds_cnt)
        .map(|ds| rrd.rra[r].rows.get(base + ds))
        .collect()
}

/// `do_schedule_smooth`: whether this step crosses the seasonal archive's smoothing row
/// (during burn-in: its end, counting the burn-in cycle off in DS 0's slot).
fn schedule_smooth(rrd: &mut Rrd, r: usize, elapsed: u64) -> bool {
    let ds_cnt = rrd.ds_cnt();
    let cur_row = rrd.rra[r].cur_row;
    let row_cnt = rrd.schema.rra[r].row_cnt;
    let smooth_idx = rrd.schema.rra[r].hw().smooth_idx;
    let Some(h) = rrd.hw.as_mut() else {
        return false;
    };
    let init = &mut h.scratch[r * ds_cnt][NULL_COUNT];
    let reach = cur_row.wrapping_add(elapsed);
    if *init > BURNIN_CYCLES {
        if smooth_idx > cur_row {
            return reach >= smooth_idx;
        }
        return reach >= row_cnt && reach >= row_cnt.wrapping_add(smooth_idx);
    }
    if reach >= row_cnt {
        *init = init.wrapping_add(1);
        return *init != 0;
    }
    false
}

/// The bytes of a FAILURES archive's violation history (the start of its CDP scratch).
fn violations(rrd: &Rrd, k: usize) -> [u8; 32] {
    let ds_cnt = rrd.ds_cnt();
    rrd.scratch_bytes(k / ds_cnt, k % ds_cnt)
}

fn set_violations(rrd: &mut Rrd, k: usize, b: &[u8; 32]) {
    let word = |i: usize| u64::from_le_bytes(b[8 * i..8 * i + 8].try_into().expect("8 bytes"));
    rrd.cdp[k].val = f64::from_bits(word(0));
    rrd.cdp[k].unkn_pdp_cnt = word(1);
    if let Some(h) = rrd.hw.as_mut() {
        h.scratch[k][0] = word(2);
        h.scratch[k][1] = word(3);
    }
}

/// `erase_violations`: the window's bytes set to 0.
fn erase_violations(rrd: &mut Rrd, r: usize, k: usize) {
    let len = rrd.schema.rra[r].hw().window_len as u16 as usize;
    let mut b = violations(rrd, k);
    for x in b.iter_mut().take(len.min(32)) {
        *x = 0;
    }
    set_violations(rrd, k, &b);
}

/// `reset_cdp`: an archive of one PDP a row crossed by more than two PDPs at once.
fn reset_cdp(rrd: &mut Rrd, r: usize, ds: usize, elapsed: u64, pdp: f64, coefs: &Coefs) {
    let k = r * rrd.ds_cnt() + ds;
    let cf = rrd.schema.rra[r].cf;
    match cf {
        Cf::Seasonal | Cf::DevSeasonal => {
            // (rrdtool reads buffers a one-row season never fills; unknown here.)
            let at = |v: &Option<Vec<f64>>| v.as_ref().map_or(DNAN, |v| v[ds]);
            if let Some(h) = rrd.hw.as_mut() {
                h.scratch[k][LAST_INTERCEPT] = at(&coefs.last).to_bits();
                h.scratch[k][INTERCEPT] = at(&coefs.next).to_bits();
            }
        }
        Cf::HwPredict | Cf::MhwPredict | Cf::DevPredict => {
            if cf != Cf::DevPredict {
                if let Some(h) = rrd.hw.as_mut() {
                    let s = &mut h.scratch[k];
                    s[NULL_COUNT] = s[NULL_COUNT].wrapping_add(elapsed);
                    s[LAST_NULL_COUNT] = s[LAST_NULL_COUNT].wrapping_add(elapsed - 1);
                }
            }
            rrd.cdp[k].primary = DNAN;
            rrd.cdp[k].secondary = DNAN;
        }
        Cf::Failures => {
            rrd.cdp[k].primary = 0.0;
            rrd.cdp[k].secondary = 0.0;
            erase_violations(rrd, r, k);
        }
        _ => {
            rrd.cdp[k].primary = pdp;
            rrd.cdp[k].secondary = pdp;
        }
    }
}

/// `update_aberrant_CF`: the PDP into the primary (or secondary) value, then the archive's
/// Holt-Winters update of it.
fn update_aberrant(
    rrd: &mut Rrd,
    r: usize,
    ds: usize,
    cf: Cf,
    pdp: f64,
    primary: bool,
    coefs: &Coefs,
) {
    let ds_cnt = rrd.ds_cnt();
    let k = r * ds_cnt + ds;
    let v = match cf {
        Cf::HwPredict | Cf::MhwPredict => update_hwpredict(rrd, r, ds, pdp),
        Cf::DevPredict => update_devpredict(rrd, r, ds),
        Cf::Seasonal => update_seasonal(rrd, r, ds, pdp, coefs),
        Cf::DevSeasonal => update_devseasonal(rrd, r, ds, pdp, coefs),
        Cf::Failures => update_failures(rrd, r, ds, pdp),
        _ => pdp,
    };
    let c = &mut rrd.cdp[k];
    if primary {
        c.primary = v;
    } else {
        c.secondary = v;
    }
}

fn dep(rrd: &Rrd, r: usize) -> usize {
    rrd.schema.rra[r].par[2] as usize
}

fn slots(rrd: &Rrd, r: usize, ds: usize) -> [u64; 6] {
    rrd.hw_slots(r, ds)
}

fn slots_mut(rrd: &mut Rrd, r: usize, ds: usize) -> &mut [u64; 6] {
    let k = r * rrd.ds_cnt() + ds;
    &mut rrd
        .hw
        .as_mut()
        .expect("an RRD with Holt-Winters archives")
        .scratch[k]
}

/// `update_hwpredict`: returns the prediction, the value written.
fn update_hwpredict(rrd: &mut Rrd, r: usize, ds: usize, observed: f64) -> f64 {
    let def = &rrd.schema.rra[r];
    let model = Model::of(def.cf);
    let p = def.hw();
    let seas = dep(rrd, r);
    let seasonal = coef(rrd, seas, ds, seas < r);
    let s = slots_mut(rrd, r, ds);
    s[LAST_INTERCEPT] = s[INTERCEPT];
    s[LAST_SLOPE] = s[SLOPE];
    s[LAST_NULL_COUNT] = s[NULL_COUNT];
    if f(s[INTERCEPT]).is_nan() || f(s[SLOPE]).is_nan() || seasonal.is_nan() {
        if f(s[INTERCEPT]).is_nan() && !observed.is_nan() {
            s[INTERCEPT] = observed.to_bits();
            s[LAST_INTERCEPT] = observed.to_bits();
            s[SLOPE] = 0f64.to_bits();
            s[LAST_SLOPE] = 0f64.to_bits();
            s[NULL_COUNT] = 1;
            s[LAST_NULL_COUNT] = 1;
        }
        return DNAN;
    }
    let prediction = model.predict(f(s[INTERCEPT]), f(s[SLOPE]), s[NULL_COUNT], seasonal);
    if observed.is_nan() {
        s[NULL_COUNT] = s[NULL_COUNT].wrapping_add(1);
    } else {
        s[INTERCEPT] = model.intercept(p.alpha, observed, seasonal, s).to_bits();
        s[SLOPE] = slope(p.beta, s).to_bits();
        s[NULL_COUNT] = 1;
    }
    prediction
}

/// `update_devpredict`: the DEVSEASONAL archive's deviation, as it stood before this step.
fn update_devpredict(rrd: &Rrd, r: usize, ds: usize) -> f64 {
    let d = dep(rrd, r);
    coef(rrd, d, ds, d < r)
}

/// Archive `a`'s coefficient for `ds` (its intercept, seasonal coefficient or deviation) as
/// another archive's update sees it: the one before this step if `a` was updated first in
/// this pass (`first`: rrdtool compares the archives' indexes), else the current one.
fn coef(rrd: &Rrd, a: usize, ds: usize, first: bool) -> f64 {
    let s = slots(rrd, a, ds);
    f(if first {
        s[LAST_INTERCEPT]
    } else {
        s[INTERCEPT]
    })
}

/// An HWPREDICT/MHWPREDICT archive's intercept, slope and null count for `ds`, those before
/// this step if it was updated first in this pass.
fn model_coefs(rrd: &Rrd, hwr: usize, ds: usize, first: bool) -> (f64, f64, u64) {
    let h = slots(rrd, hwr, ds);
    if first {
        (f(h[LAST_INTERCEPT]), f(h[LAST_SLOPE]), h[LAST_NULL_COUNT])
    } else {
        (f(h[INTERCEPT]), f(h[SLOPE]), h[NULL_COUNT])
    }
}

/// `update_seasonal`: returns the seasonal coefficient written for this step.
fn update_seasonal(rrd: &mut Rrd, r: usize, ds: usize, observed: f64, coefs: &Coefs) -> f64 {
    let hwr = dep(rrd, r);
    let model = Model::of(rrd.schema.rra[hwr].cf);
    let gamma = rrd.schema.rra[r].hw().gamma;
    let alpha = rrd.schema.rra[hwr].hw().alpha;
    let next = coefs.next.as_ref().map_or(DNAN, |v| v[ds]);
    let s = slots_mut(rrd, r, ds);
    let seasonal = f(s[INTERCEPT]);
    s[LAST_INTERCEPT] = s[INTERCEPT];
    s[INTERCEPT] = next.to_bits();
    if observed.is_nan() {
        return seasonal;
    }
    let hc = slots(rrd, hwr, ds);
    if hwr < r {
        if f(hc[LAST_INTERCEPT]).is_nan() || f(hc[LAST_SLOPE]).is_nan() {
            DNAN
        } else if seasonal.is_nan() {
            model.init_seasonality(observed, f(hc[LAST_INTERCEPT]))
        } else {
            model.seasonality(gamma, observed, f(hc[INTERCEPT]), seasonal)
        }
    } else if f(hc[INTERCEPT]).is_nan() || f(hc[SLOPE]).is_nan() {
        model.identity()
    } else if seasonal.is_nan() {
        model.init_seasonality(observed, f(hc[INTERCEPT]))
    } else {
        let intercept = model.intercept(alpha, observed, seasonal, &hc);
        model.seasonality(gamma, observed, intercept, seasonal)
    }
}

/// `update_devseasonal`: returns the seasonal deviation written for this step.
fn update_devseasonal(rrd: &mut Rrd, r: usize, ds: usize, observed: f64, coefs: &Coefs) -> f64 {
    let hwr = dep(rrd, r);
    let model = Model::of(rrd.schema.rra[hwr].cf);
    let gamma = rrd.schema.rra[r].hw().gamma;
    let next = coefs.next.as_ref().map_or(DNAN, |v| v[ds]);
    let s = slots_mut(rrd, r, ds);
    s[LAST_INTERCEPT] = s[INTERCEPT];
    s[INTERCEPT] = next.to_bits();
    let last_dev = f(s[LAST_INTERCEPT]);
    let seas = dep(rrd, hwr);
    let seasonal = coef(rrd, seas, ds, seas < r);
    let (int, slo, nulls) = model_coefs(rrd, hwr, ds, hwr < r);
    if int.is_nan() || slo.is_nan() || seasonal.is_nan() {
        return DNAN;
    }
    let prediction = model.predict(int, slo, nulls, seasonal);
    if observed.is_nan() {
        last_dev
    } else if last_dev.is_nan() {
        (prediction - observed).abs()
    } else {
        gamma * (prediction - observed).abs() + (1.0 - gamma) * last_dev
    }
}

/// `update_failures`: 1 when the violations in the window reach the threshold, else 0.
fn update_failures(rrd: &mut Rrd, r: usize, ds: usize, observed: f64) -> f64 {
    let p = rrd.schema.rra[r].hw();
    let devr = dep(rrd, r);
    let hwr = dep(rrd, devr);
    let seas = dep(rrd, hwr);
    let model = Model::of(rrd.schema.rra[hwr].cf);
    // rrdtool compares with the SEASONAL archive's index for the deviation too.
    let deviation = coef(rrd, devr, ds, r > seas);
    let mut violation = 0u8;
    if !deviation.is_nan() {
        let seasonal = coef(rrd, seas, ds, r > seas);
        let (int, slo, nulls) = model_coefs(rrd, hwr, ds, r > hwr);
        let prediction = model.predict(int, slo, nulls, seasonal);
        violation = if observed.is_nan() {
            1
        } else {
            u8::from(
                observed > prediction + p.delta_pos * deviation
                    || observed < prediction - p.delta_neg * deviation,
            )
        };
    }
    let k = r * rrd.ds_cnt() + ds;
    let mut b = violations(rrd, k);
    let mut count = u16::from(violation);
    let len = (p.window_len as u16 as usize).min(32);
    for i in (2..=len).rev() {
        b[i - 1] = b[i - 2];
        count = count.wrapping_add(b[i - 1] as i8 as i16 as u16);
    }
    b[0] = violation;
    set_violations(rrd, k, &b);
    if (count as u64) < p.failure_threshold {
        0.0
    } else {
        1.0
    }
}

impl Rrd {
    /// The end of an update call (one `rrdtool update` command, however many values it
    /// carried): rrdtool runs the seasonal smoother here when a step of the call scheduled
    /// it and the call ended without an error. Returns whether it ran. Nothing for an RRD
    /// without Holt-Winters archives.
    pub fn end_update_call(&mut self, ok: bool) -> bool {
        let Some(h) = self.hw.as_mut() else {
            return false;
        };
        let due = std::mem::take(&mut h.smooth_due);
        if due && ok {
            self.smooth();
        }
        due && ok
    }

    /// rrdtool's `smooth_all_rras`: the smoother over every SEASONAL and DEVSEASONAL archive.
    pub fn smooth(&mut self) {
        if let Some(h) = self.hw.as_mut() {
            h.smooth_due = false;
        }
        let v4 = crate::rrdfile::version(&self.schema) != "0003";
        for r in 0..self.schema.rra.len() {
            if matches!(self.schema.rra[r].cf, Cf::Seasonal | Cf::DevSeasonal) {
                self.apply_smoother(r, v4);
            }
        }
    }

    /// `apply_smoother`: a centred moving average over the season of 2*offset+1 rows (offset
    /// half the smoothing window, in rows), unless a row is unknown; for SEASONAL, the rows'
    /// mean then moved into the HWPREDICT archive's intercept.
    fn apply_smoother(&mut self, r: usize, v4: bool) {
        let ds_cnt = self.ds_cnt();
        let def = &self.schema.rra[r];
        let rows = def.row_cnt;
        let window = if v4 { def.hw().smoothing_window } else { 0.05 };
        let offset = (window / 2.0 * rows as f64).floor() as u64;
        if offset == 0 {
            return;
        }
        let n = rows as usize;
        let mut vals = self.rra[r].rows.to_vec();
        if vals.iter().any(|v| v.is_nan()) {
            return;
        }
        let orig = vals.clone();
        let width = (2 * offset + 1) as f64;
        // MyMod: i - offset as a signed number, wrapped into the season.
        let wrap = |x: i64| -> usize {
            if x < 0 {
                let m = (x.unsigned_abs()) % rows;
                (rows - m) as usize
            } else {
                (x as u64 % rows) as usize
            }
        };
        let mut baseline = vec![0f64; ds_cnt];
        for j in 0..ds_cnt {
            let mut queue = std::collections::VecDeque::with_capacity(2 * offset as usize + 1);
            let mut sum = 0f64;
            for i in 0..2 * offset {
                let k = wrap(i as i64 - offset as i64);
                let v = orig[k * ds_cnt + j];
                queue.push_back(v);
                sum += v;
            }
            for i in offset..rows + offset {
                let k = (i % rows) as usize;
                let v = orig[k * ds_cnt + j];
                sum += v;
                queue.push_back(v);
                let c = wrap(i as i64 - offset as i64);
                vals[c * ds_cnt + j] = sum / width;
                baseline[j] += vals[c * ds_cnt + j];
                sum -= queue.pop_front().unwrap_or(0.0);
            }
            baseline[j] /= rows as f64;
        }
        if def.cf == Cf::Seasonal {
            let hwr = def.par[2] as usize;
            let model = Model::of(self.schema.rra[hwr].cf);
            for (j, base) in baseline.iter().enumerate() {
                for i in 0..n {
                    vals[i * ds_cnt + j] = model.init_seasonality(vals[i * ds_cnt + j], *base);
                }
                if let Some(h) = self.hw.as_mut() {
                    let s = &mut h.scratch[hwr * ds_cnt + j];
                    s[INTERCEPT] = (f64::from_bits(s[INTERCEPT]) + base).to_bits();
                }
            }
        }
        for (i, v) in vals.into_iter().enumerate() {
            self.rra[r].rows.set(i, v);
        }
    }
}

impl Rrd {
    /// `tune --aberrant-reset`: data source `ds` starts learning again (rrdtool's
    /// `reset_aberrant_coefficients`): the HWPREDICT/MHWPREDICT coefficients unknown and
    /// their null counts 1, the seasonal coefficients and deviations unknown in the CDP and
    /// in every row (the burn-in count kept), the FAILURES history erased.
    pub fn reset_aberrant(&mut self, ds: usize) {
        let ds_cnt = self.ds_cnt();
        let nan = DNAN.to_bits();
        for r in 0..self.schema.rra.len() {
            let k = r * ds_cnt + ds;
            match self.schema.rra[r].cf {
                Cf::HwPredict | Cf::MhwPredict => {
                    if let Some(h) = self.hw.as_mut() {
                        let s = &mut h.scratch[k];
                        s[..4].fill(nan);
                        s[NULL_COUNT] = 1;
                        s[LAST_NULL_COUNT] = 1;
                    }
                }
                Cf::Seasonal | Cf::DevSeasonal => {
                    if let Some(h) = self.hw.as_mut() {
                        h.scratch[k][INTERCEPT] = nan;
                        h.scratch[k][LAST_INTERCEPT] = nan;
                    }
                    for row in 0..self.schema.rra[r].row_cnt as usize {
                        self.rra[r].rows.set(row * ds_cnt + ds, DNAN);
                    }
                }
                Cf::Failures => erase_violations(self, r, k),
                _ => {}
            }
        }
    }

    /// The violation history of FAILURES archive `rra` erased for every data source, over
    /// its window (`tune`'s `--window-length`/`--failure-threshold` do this).
    pub fn erase_violations(&mut self, rra: usize) {
        let ds_cnt = self.ds_cnt();
        if self.schema.rra[rra].cf == Cf::Failures {
            for ds in 0..ds_cnt {
                erase_violations(self, rra, rra * ds_cnt + ds);
            }
        }
    }
}
