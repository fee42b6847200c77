//! Random update sequences for a generated schema: regular and irregular intervals, gaps past
//! the heartbeat and past retention, `U`, 2-decimal gauges, counters wrapping at 2^32 and 2^64,
//! negative DERIVE steps, float DCOUNTER/DDERIVE, sub-second times, templates, and deliberate
//! errors (time not increasing, wrong value count, non-integer counter, bad float, unknown DS in
//! a template), split over several `update`/`updatev` calls of 1..k arguments.
//!
//! The generator tracks the last time rrdtool really applied (an error stops the rest of its
//! call), so every deliberate error is known in advance and no accidental one happens.

use super::case::{Expect, Kind, Step};
use super::rng::Rng;
use super::schema_gen::{DsType, GenSchema};
use std::collections::BTreeSet;

/// A point in time as rrdtool keeps it: whole seconds and microseconds.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct Time {
    pub sec: u64,
    pub usec: u64,
}

impl Time {
    fn as_f64(self) -> f64 {
        self.sec as f64 + self.usec as f64 / 1e6
    }
}

/// Per data source value state, so series look like real ones (monotonic counters, walks).
enum Val {
    Gauge {
        x: f64,
        lo: f64,
        hi: f64,
        dec: usize,
    },
    Counter {
        v: u64,
        wide: bool,
        rate: u64,
    },
    Derive {
        v: i64,
        rate: i64,
    },
    Absolute {
        rate: u64,
        float: bool,
    },
    DCounter {
        v: f64,
        rate: f64,
        dec: usize,
    },
    DDerive {
        v: f64,
        rate: f64,
        dec: usize,
    },
    Compute,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Pattern {
    Regular,
    Jittered,
    Irregular,
    Dense,
    Sparse,
}

pub struct UpdateGen<'a> {
    schema: &'a GenSchema,
    vals: Vec<Val>,
    pattern: Pattern,
    subsec: bool,
    gap_p: f64,
    u_p: f64,
    err_p: f64,
    tmpl_p: f64,
    updatev_p: f64,
    tricky_p: f64,
    /// Most `time:value` arguments in one update call.
    pub max_per_call: u64,
    /// The RRD the calls update.
    pub file: &'static str,
    /// Last time rrdtool applied (the file's last_update).
    pub applied: Time,
    /// Last generated valid time (later calls continue from it, even when an error skipped it).
    cursor: Time,
}

/// A per-second rate ceiling from `rates` (values average half of it), at most the DS maximum
/// when it has one, so that most values are in range.
fn pick_rate(rng: &mut Rng, rates: &[f64], max: &str) -> f64 {
    let cap = num(max, f64::INFINITY);
    let fit: Vec<f64> = rates.iter().copied().filter(|r| *r <= cap).collect();
    if fit.is_empty() {
        rates[0]
    } else {
        *rng.pick(&fit)
    }
}

fn num(s: &str, default: f64) -> f64 {
    s.parse().unwrap_or(default)
}

impl<'a> UpdateGen<'a> {
    pub fn new(rng: &mut Rng, schema: &'a GenSchema, start: u64) -> UpdateGen<'a> {
        let step = schema.step;
        let vals = schema
            .ds
            .iter()
            .map(|d| match d.ty {
                DsType::Gauge => {
                    let lo = num(&d.min, 0.0);
                    let hi = num(&d.max, lo + 100.0);
                    Val::Gauge {
                        x: lo + (hi - lo) * rng.unit(),
                        lo,
                        hi,
                        dec: *rng.pick(&[2, 2, 2, 0, 1, 3]),
                    }
                }
                DsType::Counter => {
                    let wide = rng.chance(0.4);
                    let rate = pick_rate(rng, &[1.0, 10.0, 1000.0, 100_000.0, 10_000_000.0], &d.max)
                        as u64;
                    let near = rate.saturating_mul(step).saturating_mul(rng.range(1, 3));
                    let v = match (wide, rng.chance(0.5)) {
                        (false, true) => (1u64 << 32).saturating_sub(near.clamp(1, 1 << 31)),
                        (true, true) => u64::MAX - near,
                        _ => rng.range(0, 1_000_000),
                    };
                    Val::Counter { v, wide, rate }
                }
                DsType::Derive => Val::Derive {
                    v: rng.irange(-1000, 100_000),
                    rate: pick_rate(rng, &[1.0, 100.0, 10_000.0], &d.max) as i64,
                },
                DsType::Absolute => Val::Absolute {
                    rate: pick_rate(rng, &[1.0, 50.0, 1000.0], &d.max) as u64,
                    float: rng.chance(0.3),
                },
                DsType::DCounter => Val::DCounter {
                    v: if rng.chance(0.1) {
                        -1000.0 * rng.unit()
                    } else {
                        1000.0 * rng.unit()
                    },
                    rate: pick_rate(rng, &[0.01, 1.0, 250.0], &d.max),
                    dec: *rng.pick(&[1, 2, 3, 6]),
                },
                DsType::DDerive => Val::DDerive {
                    v: 200.0 * rng.unit() - 100.0,
                    rate: *rng.pick(&[0.01, 1.0, 250.0]),
                    dec: *rng.pick(&[1, 2, 3, 6]),
                },
                DsType::Compute => Val::Compute,
            })
            .collect();
        let pattern = *rng.pick(&[
            Pattern::Regular,
            Pattern::Jittered,
            Pattern::Irregular,
            Pattern::Irregular,
            Pattern::Dense,
            Pattern::Sparse,
        ]);
        let pattern = if pattern == Pattern::Dense && step < 10 {
            Pattern::Irregular
        } else {
            pattern
        };
        let t0 = Time {
            sec: start,
            usec: 0,
        };
        UpdateGen {
            schema,
            vals,
            pattern,
            subsec: rng.chance(0.3),
            gap_p: *rng.pick(&[0.0, 0.02, 0.05, 0.1]),
            u_p: *rng.pick(&[0.0, 0.0, 0.03, 0.1]),
            err_p: *rng.pick(&[0.0, 0.02, 0.05, 0.1]),
            tmpl_p: *rng.pick(&[0.0, 0.0, 0.3]),
            updatev_p: *rng.pick(&[0.0, 0.2, 0.5]),
            tricky_p: *rng.pick(&[0.0, 0.0, 0.03, 0.08]),
            max_per_call: *rng.pick(&[1, 3, 6]),
            file: "x.rrd",
            applied: t0,
            cursor: t0,
        }
    }

    /// Emit `n` update arguments over several calls into `steps`; `between` may add queries
    /// after a call (mid-sequence reads).
    pub fn run(
        &mut self,
        rng: &mut Rng,
        n: u64,
        feats: &mut BTreeSet<&'static str>,
        steps: &mut Vec<Step>,
        between: &mut dyn FnMut(&mut Rng, &mut Vec<Step>),
    ) {
        let mut left = n;
        while left > 0 {
            let k = rng.range(1, self.max_per_call.min(left));
            left -= k;
            let step = self.call(rng, k, left, feats);
            steps.push(step);
            between(rng, steps);
        }
    }

    fn next_time(&mut self, rng: &mut Rng, gaps: bool, feats: &mut BTreeSet<&'static str>) -> Time {
        let step = self.schema.step;
        let base = self.cursor;
        if self.subsec && base.usec < 900_000 && rng.chance(0.08) {
            feats.insert("same-second");
            return Time {
                sec: base.sec,
                usec: base.usec + rng.range(1000, 99_000),
            };
        }
        let dt = if gaps && rng.chance(self.gap_p) {
            let hb = self.schema.max_hb();
            if rng.chance(0.5) {
                feats.insert("gap>hb");
                rng.range(hb + 1, 3 * hb + step)
            } else {
                feats.insert("gap>retention");
                // At most 40 days, so long runs stay far from 2038.
                let span = self.schema.max_span().min(20 * 86_400);
                rng.range(span / 2 + 1, 2 * span + 1)
            }
        } else {
            let pattern = if rng.chance(0.1) {
                Pattern::Irregular
            } else {
                self.pattern
            };
            match pattern {
                Pattern::Regular => step,
                Pattern::Jittered => {
                    let j = step / 10;
                    step + rng.range(0, 2 * j) - j
                }
                Pattern::Irregular => rng.range(step / 2, step + step / 2).max(1),
                Pattern::Dense => rng.range(1, step / 3),
                Pattern::Sparse => rng.range(step, 3 * step),
            }
        };
        let usec = if self.subsec && rng.chance(0.5) {
            feats.insert("subsecond");
            rng.range(1, 999_999)
        } else {
            0
        };
        Time {
            sec: base.sec + dt.max(1),
            usec,
        }
    }

    fn format_time(rng: &mut Rng, t: Time) -> String {
        if t.usec == 0 {
            t.sec.to_string()
        } else if rng.chance(0.3) {
            let frac = format!("{:06}", t.usec);
            format!("{}.{}", t.sec, frac.trim_end_matches('0'))
        } else {
            format!("{}.{:06}", t.sec, t.usec)
        }
    }

    fn value(
        &mut self,
        rng: &mut Rng,
        i: usize,
        iv: f64,
        feats: &mut BTreeSet<&'static str>,
    ) -> String {
        if self.schema.ds[i].ty != DsType::Compute && rng.chance(self.u_p) {
            feats.insert("U");
            return "U".to_string();
        }
        if rng.chance(self.tricky_p) {
            if let Some(v) = tricky(rng, self.schema.ds[i].ty) {
                feats.insert("tricky-number");
                return v.to_string();
            }
        }
        let ivs = iv.ceil().max(1.0) as u64;
        match &mut self.vals[i] {
            Val::Gauge { x, lo, hi, dec } => {
                let w = *hi - *lo;
                *x += (rng.unit() - 0.5) * w * 0.3 + (*lo + w / 2.0 - *x) * 0.2;
                if *x > *hi + 0.2 * w || *x < *lo - 0.2 * w {
                    *x = *lo + w * rng.unit();
                }
                if rng.chance(0.04) {
                    feats.insert("out-of-range");
                    let out = if rng.chance(0.5) {
                        *hi + w * rng.unit()
                    } else {
                        *lo - w * rng.unit()
                    };
                    return format!("{:.*}", *dec, out);
                }
                if rng.chance(0.02) {
                    feats.insert("exp-notation");
                    return format!("{:e}", (*x * 100.0).round() / 100.0);
                }
                format!("{:.*}", *dec, *x)
            }
            Val::Counter { v, wide, rate } => {
                let inc = rng.range(0, rate.saturating_mul(ivs));
                if rng.chance(0.02) {
                    feats.insert("counter-reset");
                    *v = rng.range(0, 1000);
                } else if *wide {
                    let (n, o) = v.overflowing_add(inc);
                    if o {
                        feats.insert("wrap64");
                    }
                    *v = n;
                } else {
                    let n = (*v + inc) & 0xffff_ffff;
                    if n < *v {
                        feats.insert("wrap32");
                    }
                    *v = n;
                }
                v.to_string()
            }
            Val::Derive { v, rate } => {
                let d = *rate * ivs as i64;
                // Mostly upwards, as real DERIVE series (often min 0) go; sometimes flat
                // (equal negative readings give rrdtool a rate of -0).
                let step = if rng.chance(0.1) {
                    feats.insert("derive-flat");
                    0
                } else {
                    rng.irange(-d / 3, d)
                };
                if step < 0 {
                    feats.insert("derive-down");
                }
                *v += step;
                v.to_string()
            }
            Val::Absolute { rate, float } => {
                let x = rng.range(0, rate.saturating_mul(ivs));
                if *float {
                    format!("{}.{:02}", x, rng.range(0, 99))
                } else {
                    x.to_string()
                }
            }
            Val::DCounter { v, rate, dec } => {
                if rng.chance(0.03) {
                    feats.insert("dcounter-reset");
                    *v *= rng.unit();
                } else {
                    *v += rng.unit() * *rate * iv;
                }
                format!("{:.*}", *dec, *v)
            }
            Val::DDerive { v, rate, dec } => {
                *v += (rng.unit() * 2.0 - 1.0) * *rate * iv;
                format!("{:.*}", *dec, *v)
            }
            Val::Compute => {
                feats.insert("template-compute");
                rng.range(0, 500).to_string()
            }
        }
    }

    /// One `update`/`updatev` call of `k` arguments.
    fn call(
        &mut self,
        rng: &mut Rng,
        k: u64,
        left: u64,
        feats: &mut BTreeSet<&'static str>,
    ) -> Step {
        let verbose = rng.chance(self.updatev_p);
        let kind = if verbose { Kind::Updatev } else { Kind::Update };
        let file = if rng.chance(0.05) {
            feats.insert("name:dot-slash");
            format!("./{}", self.file)
        } else {
            self.file.to_string()
        };
        let mut args = vec![kind.word().to_string(), file];
        let mut order = self.schema.inputs();
        let mut expect = Expect::Ok;
        if rng.chance(self.tmpl_p) {
            feats.insert("template");
            let mut all: Vec<usize> = if rng.chance(0.05) {
                (0..self.schema.ds.len()).collect()
            } else {
                order.clone()
            };
            rng.shuffle(&mut all);
            let keep = rng.range(1, all.len() as u64) as usize;
            all.truncate(keep);
            order = all;
            let mut names: Vec<String> = order
                .iter()
                .map(|&i| self.schema.ds[i].name.clone())
                .collect();
            if rng.chance(self.err_p / 2.0) {
                feats.insert("err:template");
                if names.len() >= self.schema.ds.len() {
                    let j = rng.range(0, names.len() as u64 - 1) as usize;
                    names[j] = "zz".to_string();
                } else {
                    names.push("zz".to_string());
                }
                expect = Expect::Err("unknown DS name 'zz'");
            }
            let t = names.join(":");
            match rng.range(0, 2) {
                0 => args.extend(["-t".to_string(), t]),
                1 => args.extend(["--template".to_string(), t]),
                _ => args.push(format!("--template={t}")),
            }
        }
        let skip_past = rng.chance(0.03);
        if skip_past {
            feats.insert("skip-past-updates");
            args.push(rng.pick(&["-s", "--skip-past-updates"]).to_string());
        }
        if rng.chance(0.05) {
            args.push("--".to_string());
        }
        let mut failed = expect != Expect::Ok;
        for _ in 0..k {
            // No gaps in the last few updates, so the final reads see data.
            let t = self.next_time(rng, left > 3, feats);
            let iv = t.as_f64() - self.applied.as_f64();
            let mut vals: Vec<String> = order
                .iter()
                .map(|&i| self.value(rng, i, iv, feats))
                .collect();
            let mut time = t;
            let mut err: Option<&'static str> = None;
            if !failed && rng.chance(self.err_p) {
                err = self.inject(rng, &order, &mut vals, &mut time, iv, feats);
                if skip_past && err == Some("illegal attempt to update using time") {
                    err = Some("skip");
                }
            }
            let arg = format!("{}:{}", Self::format_time(rng, time), vals.join(":"));
            args.push(arg);
            match err {
                _ if failed => {}
                Some("skip") => {}
                Some(e) => {
                    failed = true;
                    expect = Expect::Err(e);
                }
                None => {
                    self.applied = t;
                    self.cursor = t;
                }
            }
            if failed {
                self.cursor = self.cursor.max(t);
            }
        }
        Step {
            kind,
            args,
            stdin: super::case::Stdin::Empty,
            expect,
        }
    }

    /// Turn one argument into a deliberate error; returns the expected message fragment.
    fn inject(
        &mut self,
        rng: &mut Rng,
        order: &[usize],
        vals: &mut Vec<String>,
        time: &mut Time,
        iv: f64,
        feats: &mut BTreeSet<&'static str>,
    ) -> Option<&'static str> {
        let ds = &self.schema.ds;
        let within_hb = |i: usize| iv + 1.0 <= ds[i].hb as f64;
        let ints: Vec<usize> = (0..order.len())
            .filter(|&j| matches!(ds[order[j]].ty, DsType::Counter | DsType::Derive))
            .filter(|&j| within_hb(order[j]))
            .collect();
        let floats: Vec<usize> = (0..order.len())
            .filter(|&j| matches!(ds[order[j]].ty, DsType::Gauge | DsType::Absolute))
            .filter(|&j| within_hb(order[j]))
            .collect();
        match rng.range(0, 3) {
            1 if !ints.is_empty() => {
                feats.insert("err:not-integer");
                let j = *rng.pick(&ints);
                let bad = if ds[order[j]].ty == DsType::Counter {
                    *rng.pick(&["12.5", "abc", "1e3", "-7", "+5"])
                } else {
                    *rng.pick(&["12.5", "abc", "1e3"])
                };
                vals[j] = bad.to_string();
                Some("not a simple")
            }
            2 if !floats.is_empty() => {
                feats.insert("err:bad-float");
                let j = *rng.pick(&floats);
                vals[j] = rng
                    .pick(&["abc", "12a", "1e-1100", "1e2000", "5 ", "0x10"])
                    .to_string();
                Some("Function update_pdp_prep, case DST_")
            }
            3 => {
                feats.insert("err:time");
                *time = Time {
                    sec: self.applied.sec.saturating_sub(rng.range(0, 2)),
                    usec: 0,
                };
                Some("illegal attempt to update using time")
            }
            _ => {
                feats.insert("err:count");
                if vals.len() >= 2 && rng.chance(0.5) {
                    vals.pop();
                    Some("data source readings")
                } else {
                    vals.push("1".to_string());
                    Some("found extra data on update argument")
                }
            }
        }
    }
}

/// Number spellings where rrdtool's own parsers (rrd_strtod, rrd_diff, the `U` test) differ
/// from the obvious, all accepted by rrdtool for the given type.
fn tricky(rng: &mut Rng, ty: DsType) -> Option<&'static str> {
    const FLOATS: [&str; 16] = [
        "1234567.891",
        "0.1234567890123456789",
        "1.7976931348623157e308",
        "2.2250738585072014e-308",
        "123456789012345678901234567890",
        "inf",
        "-inf",
        "nan",
        "-nan",
        "+5",
        " 5",
        "UNKN",
        "1.5e+3",
        ".5",
        "5.",
        "-0",
    ];
    const INTS: [&str; 5] = [
        "99999999999999999999999",
        "123456789012345678901234567890123",
        "007",
        "Ux",
        "0",
    ];
    match ty {
        DsType::Gauge | DsType::Absolute | DsType::DCounter | DsType::DDerive => {
            Some(*rng.pick(&FLOATS))
        }
        DsType::Counter | DsType::Derive => Some(*rng.pick(&INTS)),
        DsType::Compute => None,
    }
}
