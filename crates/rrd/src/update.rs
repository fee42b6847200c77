//! `rrdtool update`: from an update argument to consolidated rows, exactly as rrdtool 1.7.2.
//!
//! Two steps. [`parse_update_arg`] turns one argument (`"N:1:U"`, `"1795300130.047:5"`,
//! `"now-10@3"` ...) into a [`Sample`]: a resolved time plus one raw value string per DS in
//! file order. [`Rrd::apply`] advances the RRD by one sample: PDPs, CDPs, rows. The engine logs
//! samples, not rows: replaying the same samples on the same state gives the same bytes.
//!
//! Error texts are rrdtool's. rrdtool prefixes the errors of [`parse_update_arg`] and
//! [`Rrd::apply`] with `<file>: ` on the command line; that prefix is the caller's job. The
//! errors of [`parse_template`] carry no prefix in rrdtool either.
//!
//! Behaviour found with the binary (file bytes, `updatev`) and reproduced here, beyond the
//! reference notes: an update argument is split at the first `@` if there is one, else at the
//! first `:`; field counts are checked before the time is parsed. DCOUNTER/DDERIVE read the
//! new value and then `last_ds` only when `last_ds` is known, so unparsable text can be
//! stored while the heartbeat is exceeded and make every later update fail. An archive with
//! one PDP per row sets its secondary value only when two or more PDPs complete at once.
//! `updatev` prints the rows of the split-off left PDP at `last_up + whole open seconds`
//! rounded down to the row span (sub-second `last_up` gives an earlier row's time), and every
//! row after the first of a batch one span late (#899). Unknown is DNAN (sign bit set)
//! everywhere, as in the file.

use crate::num::{rrd_diff, strtodbl_in, DNAN};
use crate::schema::{DsType, Schema};
use crate::{Rrd, RrdError};

mod consolidate;
mod hw;
pub mod reuse;

pub use consolidate::update_cdp;
use consolidate::Steps;

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

/// `-t ds1:ds2:...`: the DS index each value field of an update argument goes to.
///
/// Errors (no `<file>: ` prefix in rrdtool): `tmplt contains more DS definitions than RRD`
/// when there are more names than DS (duplicates count), `unknown DS name '<name>'`. COMPUTE
/// DS may be named; their values are ignored.
pub fn parse_template(schema: &Schema, tmpl: &str) -> Result<Vec<usize>, RrdError> {
    let mut out = Vec::new();
    for name in tmpl.split(':') {
        if out.len() >= schema.ds.len() {
            return Err(RrdError::new("tmplt contains more DS definitions than RRD"));
        }
        match schema.ds_index(name) {
            Some(i) => out.push(i),
            None => return Err(RrdError::new(format!("unknown DS name '{}'", name))),
        }
    }
    Ok(out)
}

/// Parses one update argument into a [`Sample`].
///
/// `now` is the current time `(seconds, microseconds)`, used for `N` and for negative
/// (relative) times. `template` maps value fields to DS indices (see [`parse_template`]);
/// `None` means every non-COMPUTE DS in file order.
///
/// Checks in rrdtool's order: the field count (`expected %lu data source readings (got %lu)
/// from <time>`, `found extra data on update argument: <rest>`) before the time. The time is
/// `N`, or a number read by `rrd_strtodbl` (`error while parsing time in get_time_from_reading
/// - <strtodbl error>`); a negative number is relative to `now`. In the `<time>@<values>` form
/// the time is an at-style time ([`crate::parsetime`]).
pub fn parse_update_arg(
    schema: &Schema,
    arg: &str,
    template: Option<&[usize]>,
    now: (i64, i64),
) -> Result<Sample, RrdError> {
    let (time_str, rest, at_form) = if let Some(p) = arg.find('@') {
        (&arg[..p], &arg[p + 1..], true)
    } else if let Some(p) = arg.find(':') {
        (&arg[..p], &arg[p + 1..], false)
    } else {
        return Err(RrdError::new(format!(
            "expected timestamp not found in data source from {}",
            arg
        )));
    };

    let want = template.map_or_else(|| schema.input_ds().count(), |t| t.len());
    let got = rest.split(':').take(want + 1).count();
    if got < want {
        return Err(RrdError::new(format!(
            "expected {} data source readings (got {}) from {}",
            want, got, time_str
        )));
    }
    if got > want {
        // Everything after the `want`-th field and its separator.
        let mut p = 0usize;
        for _ in 0..want {
            p += rest[p..].find(':').map_or(rest.len() - p, |q| q + 1);
        }
        return Err(RrdError::new(format!(
            "found extra data on update argument: {}",
            &rest[p..]
        )));
    }
    let values = match template {
        None => {
            let mut fields = rest.split(':');
            schema
                .ds
                .iter()
                .map(|d| match d.kind {
                    DsType::Compute => "U".to_string(),
                    _ => fields.next().unwrap_or("U").to_string(),
                })
                .collect()
        }
        Some(t) => {
            let mut values = vec!["U".to_string(); schema.ds.len()];
            for (&ds, f) in t.iter().zip(rest.split(':')) {
                if let Some(slot) = values.get_mut(ds) {
                    slot.clear();
                    slot.push_str(f);
                }
            }
            values
        }
    };

    let (time, usec) = if at_form {
        parse_at_time(time_str, now)?
    } else {
        parse_reading_time(time_str, now)?
    };
    Ok(Sample { time, usec, values })
}

/// C's `(long)x` on x86-64: truncation, and `i64::MIN` for NaN and out-of-range values.
pub(crate) fn c_long(x: f64) -> i64 {
    const LIMIT: f64 = 9_223_372_036_854_775_808.0; // 2^63
    if x.is_nan() || !(-LIMIT..LIMIT).contains(&x) {
        i64::MIN
    } else {
        x as i64
    }
}

/// `get_time_from_reading` for the `<time>:<values>` form.
fn parse_reading_time(s: &str, now: (i64, i64)) -> Result<(i64, i64), RrdError> {
    if s == "N" {
        return Ok(now);
    }
    let mut tmp = strtodbl_in("error while parsing time in get_time_from_reading", s)?;
    if tmp < 0.0 {
        // now_sec + now_usec * 1e-6f + tmp: the microseconds scaled in single precision.
        tmp += now.0 as f64 + f64::from(now.1 as f32 * 1e-6f32);
    }
    let sec = tmp.floor();
    let usec = c_long((tmp - sec) * 1e6);
    Ok((c_long(sec), usec))
}

/// The time of the `<time>@<values>` form: rrdtool's at-style time (microseconds 0).
/// Errors: `ds time: <s>: <parsetime error>`, and start/end-relative times are refused.
fn parse_at_time(s: &str, now: (i64, i64)) -> Result<(i64, i64), RrdError> {
    if s.is_empty() {
        // rrdtool's parser refuses an empty time; ours takes it as `now`.
        return Err(RrdError::new("ds time: : unparsable time: "));
    }
    let spec = crate::parsetime::parse_time(s, now.0)
        .map_err(|e| RrdError::new(format!("ds time: {}: {}", s, e.msg)))?;
    match spec.absolute() {
        Some(t) => Ok((t, 0)),
        None => Err(RrdError::new(format!(
            "specifying time relative to the 'start' or 'end' makes no sense here: {}",
            s
        ))),
    }
}

/// A value whose decimal and number are known ([`Rrd::apply_parsed`]): `mantissa / 10^scale`
/// spelled canonically, and `value`, `num::strtod` of that text.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Number {
    pub value: f64,
    pub mantissa: i64,
    pub scale: u8,
}

/// Whether [`Rrd::apply_parsed`] with `pending` needs no text for a known value of a DS of
/// this kind (GAUGE and ABSOLUTE read the number; COUNTER and DERIVE the text).
pub fn text_unneeded(kind: DsType) -> bool {
    matches!(kind, DsType::Gauge | DsType::Absolute)
}

/// What `last_ds` holds after an update whose value's text was `s`: its longest prefix of
/// at most 29 bytes (rrdtool's `last_ds` is `char[30]`), cut at a character boundary.
pub fn last_ds_prefix(s: &str) -> &str {
    if s.len() <= 29 {
        return s;
    }
    let mut n = 29;
    while !s.is_char_boundary(n) {
        n -= 1;
    }
    &s[..n]
}

fn is_unsigned_int(s: &str) -> bool {
    s.bytes().all(|b| b.is_ascii_digit())
}

fn is_signed_int(s: &str) -> bool {
    let b = s.strip_prefix('-').unwrap_or(s);
    is_unsigned_int(b)
}

/// Up to this many DS, per-update scratch lives on the stack.
const STACK_DS: usize = 32;

impl Rrd {
    /// Applies one sample: rrdtool's `update_pdp_prep`, then the PDP step processing (simple
    /// update, or boundaries with the JKammler split), the CDP update of every archive and the
    /// row writes, in rrdtool's order and with its floating-point operations. Every row written
    /// goes to `sink` in `updatev` order.
    pub fn apply(&mut self, s: &Sample, sink: &mut dyn FnMut(RowWrite)) -> Result<(), ApplyError> {
        self.apply_parsed(s, &[], None, sink)
    }

    /// [`Rrd::apply`] with some values already read: `nums[i]`, where present, is the
    /// decimal `s.values[i]` spells and its number, `num::strtod`'s of the text (bit for
    /// bit; the sample codec gives them for the decimals it decodes). A GAUGE or ABSOLUTE
    /// value uses the number instead of reading its text again (COUNTER and DERIVE work on
    /// the text, as rrdtool does). With `pending`, the text of such a value is not even
    /// needed: instead of `last_ds`, the decimal goes to `pending[i]` (and a value kept as
    /// text sets it to `None`); the caller sets `last_ds` from the decimal left there once
    /// it is done ([`last_ds_prefix`]), as replay does after a series' samples, whose every
    /// value but the last would have been formatted only to be overwritten.
    pub fn apply_parsed(
        &mut self,
        s: &Sample,
        nums: &[Option<Number>],
        pending: Option<&mut [Option<(i64, u8)>]>,
        sink: &mut dyn FnMut(RowWrite),
    ) -> Result<(), ApplyError> {
        self.check_time(s)?;
        self.check_shape().map_err(ApplyError::Rejected)?;
        self.apply_shaped(s, nums, pending, sink)
    }

    /// [`Rrd::apply_parsed`] for a caller that applies many samples to an RRD whose shape
    /// it checked once ([`Rrd::check_shape`] returned `Ok`): applying keeps the shape, and
    /// replay checked it for every sample (a walk over the archives, a twentieth of its
    /// applying).
    pub fn apply_parsed_shaped(
        &mut self,
        s: &Sample,
        nums: &[Option<Number>],
        pending: Option<&mut [Option<(i64, u8)>]>,
        sink: &mut dyn FnMut(RowWrite),
    ) -> Result<(), ApplyError> {
        self.check_time(s)?;
        self.apply_shaped(s, nums, pending, sink)
    }

    /// Refuses a sample not after the last update.
    fn check_time(&self, s: &Sample) -> Result<(), ApplyError> {
        if s.time < self.last_up || (s.time == self.last_up && s.usec <= self.last_up_usec) {
            return Err(ApplyError::Rejected(RrdError::new(format!(
                "illegal attempt to update using time {} when last update time is {} (minimum one second step)",
                s.time, self.last_up
            ))));
        }
        Ok(())
    }

    #[inline]
    fn apply_shaped(
        &mut self,
        s: &Sample,
        nums: &[Option<Number>],
        pending: Option<&mut [Option<(i64, u8)>]>,
        sink: &mut dyn FnMut(RowWrite),
    ) -> Result<(), ApplyError> {
        let ds_cnt = self.schema.ds.len();
        if s.values.len() != ds_cnt {
            return Err(ApplyError::Rejected(RrdError::new(format!(
                "expected {} data source readings (got {})",
                ds_cnt,
                s.values.len()
            ))));
        }
        let mut stack = [0f64; STACK_DS];
        let mut heap = Vec::new();
        let pdp_new: &mut [f64] = if ds_cnt <= STACK_DS {
            &mut stack[..ds_cnt]
        } else {
            heap.resize(ds_cnt, 0.0);
            &mut heap
        };

        let interval = (s.time - self.last_up) as f64 + usec_secs(s.usec - self.last_up_usec);
        self.update_pdp_prep(s, nums, pending, interval, pdp_new)?;

        let step = self.schema.step as i64;
        // The steps of the last and of this update, from one division (over a quarter of
        // this function's time was the five it took before): the step starts are multiples
        // of `step`, so their quotients and differences are exact. This update's step is
        // nearly always the last one's or the next: found by comparing.
        let proc_q = self.last_up.div_euclid(step);
        let proc_pdp_st = proc_q * step;
        let occu_q = match s.time.checked_sub(proc_pdp_st) {
            Some(into) if into < step => proc_q,
            Some(into) if into - step < step => proc_q + 1,
            _ => s.time.div_euclid(step),
        };
        let occu_pdp_st = occu_q * step;
        let steps = if occu_pdp_st > proc_pdp_st {
            Some(Steps {
                interval,
                pre_int: (occu_pdp_st - self.last_up) as f64 - usec_secs(self.last_up_usec),
                post_int: (s.time - occu_pdp_st) as f64 + usec_secs(s.usec),
                elapsed: (occu_q - proc_q) as u64,
                proc_pdp_cnt: proc_q as u64,
                now: s.time,
            })
        } else {
            None
        };
        match steps {
            None => consolidate::simple_update(self, interval, pdp_new),
            Some(st) => consolidate::process_steps(self, st, pdp_new, s.time, sink)
                .map_err(ApplyError::Partial)?,
        }
        self.last_up = s.time;
        self.last_up_usec = s.usec;
        Ok(())
    }

    /// Refuses states `apply` cannot work on (a zero step or row count, or vectors that do not
    /// match the schema), so a damaged state gives an error instead of a panic.
    pub fn check_shape(&self) -> Result<(), RrdError> {
        let sc = &self.schema;
        let n = sc.ds.len();
        let ok = sc.step > 0
            && self.pdp.len() == n
            && self.cdp.len() == sc.rra.len() * n
            && self.rra.len() == sc.rra.len()
            && sc.rra.iter().zip(&self.rra).all(|(d, r)| {
                d.pdp_cnt > 0
                    && d.row_cnt > 0
                    && r.cur_row < d.row_cnt
                    && r.rows.len() as u64 == d.row_cnt * n as u64
            });
        if ok {
            Ok(())
        } else {
            Err(RrdError::new("RRD state does not match its schema"))
        }
    }

    /// rrdtool's `update_pdp_prep`: `last_ds` and the rate*seconds of this update per DS.
    fn update_pdp_prep(
        &mut self,
        s: &Sample,
        nums: &[Option<Number>],
        mut pending: Option<&mut [Option<(i64, u8)>]>,
        interval: f64,
        pdp_new: &mut [f64],
    ) -> Result<(), ApplyError> {
        for (i, def) in self.schema.ds.iter().enumerate() {
            let raw = s.values[i].as_str();
            let known = nums.get(i).copied().flatten();
            // The text of a known decimal may not be there (`pending`): it is no `U`.
            let unknown = known.is_none() && raw.starts_with('U');
            let pdp = &mut self.pdp[i];
            let within_hb = def.heartbeat as f64 >= interval;
            if !within_hb {
                pdp.last_ds.clear();
                pdp.last_ds.push('U');
            }
            let mut new = DNAN;
            if !unknown && def.kind != DsType::Compute && within_hb {
                let fail = |e: RrdError| {
                    if i == 0 {
                        ApplyError::Rejected(e)
                    } else {
                        ApplyError::Partial(e)
                    }
                };
                let rate;
                match def.kind {
                    DsType::Counter | DsType::Derive => {
                        let counter = def.kind == DsType::Counter;
                        if counter && !is_unsigned_int(raw) {
                            return Err(fail(RrdError::new(format!(
                                "not a simple unsigned integer: '{}'",
                                raw
                            ))));
                        }
                        if !counter && !is_signed_int(raw) {
                            return Err(fail(RrdError::new(format!(
                                "not a simple signed integer: '{}'",
                                raw
                            ))));
                        }
                        if !pdp.last_ds.starts_with('U') {
                            new = rrd_diff(raw, &pdp.last_ds);
                            if counter && new < 0.0 {
                                new += 4294967295.0;
                                if new < 0.0 {
                                    new += 18446744069414584320.0;
                                }
                            }
                        }
                        rate = new / interval;
                    }
                    DsType::Absolute => {
                        new = match known {
                            Some(k) => k.value,
                            _ => strtodbl_in("Function update_pdp_prep, case DST_ABSOLUTE", raw)
                                .map_err(fail)?,
                        };
                        rate = new / interval;
                    }
                    DsType::Gauge => {
                        let v = match known {
                            Some(k) => k.value,
                            _ => strtodbl_in("Function update_pdp_prep, case DST_GAUGE", raw)
                                .map_err(fail)?,
                        };
                        new = v * interval;
                        rate = v;
                    }
                    DsType::DCounter | DsType::DDerive => {
                        let ctx = if def.kind == DsType::DCounter {
                            "Function update_pdp_prep, case DST_DCOUNTER"
                        } else {
                            "Function update_pdp_prep, case DST_DDERIVE"
                        };
                        // Both strings are read only when there is an old value: new first,
                        // then the old one (which can fail too: DCOUNTER keeps bad text).
                        if !pdp.last_ds.starts_with('U') {
                            let v = strtodbl_in(ctx, raw).map_err(fail)?;
                            let old = strtodbl_in(ctx, &pdp.last_ds).map_err(fail)?;
                            let reset = def.kind == DsType::DCounter
                                && ((v > 0.0 && old > v) || (v < 0.0 && v > old));
                            new = if reset { DNAN } else { v - old };
                        }
                        rate = new / interval;
                    }
                    DsType::Compute => unreachable!("COMPUTE takes no input"),
                }
                if !rate.is_nan()
                    && ((!def.max.is_nan() && rate > def.max)
                        || (!def.min.is_nan() && rate < def.min))
                {
                    new = DNAN;
                }
            }
            pdp_new[i] = new;
            let lazy = text_unneeded(def.kind);
            match (known, pending.as_deref_mut()) {
                (Some(k), Some(p)) if lazy => p[i] = Some((k.mantissa, k.scale)),
                (_, p) => {
                    if let Some(p) = p {
                        p[i] = None;
                    }
                    pdp.last_ds.clear();
                    pdp.last_ds.push_str(last_ds_prefix(raw));
                }
            }
        }
        Ok(())
    }
}

/// Microseconds in seconds, `u as f64 / 1e6`; without the division for 0 (whole-second
/// updates, nearly all of them: its result, +0.0, is known). The division is a call of its
/// own: inline, the compiler computed it for every update and picked one result after,
/// and waiting for it was a tenth of `apply_parsed`'s time in replay.
#[inline]
fn usec_secs(u: i64) -> f64 {
    if u == 0 {
        0.0
    } else {
        usec_secs_divided(u)
    }
}

#[cold]
#[inline(never)]
fn usec_secs_divided(u: i64) -> f64 {
    u as f64 / 1e6
}

#[cfg(test)]
mod tests;
