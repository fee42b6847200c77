//! `rrdtool fetch`: which archive answers a request, how the window is aligned, what comes out.
//!
//! [`fetch`] reproduces `rrd_fetch` of rrdtool 1.7.2 (reference §3.9): the `--align-start`
//! shift, the archive choice (requested CF, or any one-PDP-per-row archive; full matches
//! before partial ones), the alignment of start down and end up by an extra step, and NaN for
//! rows outside the archive's retention. [`format_fetch`] prints the CLI's text form.

use crate::fmt::push_c_exp;
use crate::num::DNAN;
use crate::parsetime::MIN_TIME;
use crate::{Cf, Rrd, RrdError};

/// The rows of one fetch.
#[derive(Debug, Clone, PartialEq)]
pub struct FetchResult {
    /// Exclusive: row i covers `(start + i*step, start + (i+1)*step]` and is labelled with its
    /// end, `start + (i+1)*step`.
    pub start: i64,
    /// Inclusive label of the last row.
    pub end: i64,
    pub step: u64,
    pub ds_names: Vec<String>,
    /// `(end - start) / step` rows of one value per DS, row after row (one vector: a
    /// 30-day fetch is thousands of rows, and a vector each cost more to allocate and free
    /// than to fill).
    pub values: Vec<f64>,
}

impl FetchResult {
    /// The number of rows.
    pub fn row_count(&self) -> usize {
        self.values.len() / self.ds_names.len().max(1)
    }

    /// The rows, oldest first, one value per DS each.
    pub fn rows(&self) -> std::slice::ChunksExact<'_, f64> {
        self.values.chunks_exact(self.ds_names.len().max(1))
    }
}

/// Appends to `out` the rows of archive `rra` labelled `t0 + k * span` for `k` in `0..n`
/// (`span`: the archive's row span), a row of DNAN for each time the archive does not keep
/// (not a multiple of the span, or outside its retention); the rows it keeps are copied a
/// chunk at a time rather than looked up one by one ([`Rrd::ring_row`] gives the same rows).
pub fn push_archive_rows(rrd: &Rrd, rra: usize, t0: i64, n: usize, out: &mut Vec<f64>) {
    let d = rrd.ds_cnt();
    let def = &rrd.schema.rra[rra];
    let span = i128::from(rrd.schema.step as i64) * i128::from(def.pdp_cnt as i64);
    out.reserve(n * d);
    // The kept rows are k in lo..hi, in ring order from the row of t0 + lo * span.
    let (lo, hi) = if span <= 0 || i128::from(t0).rem_euclid(span) != 0 {
        (n, n)
    } else {
        let end = i128::from(rrd.rra_end(rra));
        let oldest = end - (i128::from(def.row_cnt as i64) - 1) * span;
        let t0 = i128::from(t0);
        let lo = (oldest - t0 + span - 1)
            .div_euclid(span)
            .clamp(0, n as i128);
        let hi = ((end - t0).div_euclid(span) + 1).clamp(lo, n as i128);
        (lo as usize, hi as usize)
    };
    out.resize(out.len() + lo * d, DNAN);
    if hi > lo {
        let t = t0 + lo as i64 * span as i64;
        let first = rrd
            .ring_row(rra, t)
            .expect("a time inside the retention has a row");
        let row_cnt = def.row_cnt as usize;
        let m = hi - lo;
        let mut reader = rrd.rra[rra].rows.reader();
        let before_wrap = m.min(row_cnt - first);
        reader.push_rows(first, before_wrap, out);
        reader.push_rows(0, m - before_wrap, out);
    }
    out.resize(out.len() + (n - hi) * d, DNAN);
}

/// How a range is read from an archive: which archive, its row span, and the window of rows
/// rrdtool gives for the range (rows labelled by their ends: from the one after `start`,
/// the window's start, to `end`). Every reader of a range plans it here ([`plan`], or
/// [`Plan::of`] for an archive chosen by its caller), so that the archive choice and the
/// alignment are written once.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Plan {
    pub rra: usize,
    /// Seconds a row of the archive stands for.
    pub span: i64,
    /// The window's start: `start` down to a multiple of the span.
    pub start: i64,
    /// The window's end: `end` up past a multiple of the span (the row holding `end`).
    pub end: i64,
}

impl Plan {
    /// Archive `rra` over `[start, end]`, aligned as rrdtool aligns a fetch. Times far
    /// outside any real range (a Graphite `from` of billions of years) saturate instead of
    /// wrapping.
    pub fn of(rrd: &Rrd, rra: usize, start: i64, end: i64) -> Plan {
        let span = span_of(rrd, rra);
        let (start, end) = window(span, start, end);
        Plan {
            rra,
            span,
            start,
            end,
        }
    }

    /// The window as rrdcached's C arithmetic computes it: wrapping where the times do.
    pub fn wrapping(rrd: &Rrd, rra: usize, start: i64, end: i64) -> Plan {
        let span = span_of(rrd, rra);
        Plan {
            rra,
            span,
            start: start.wrapping_sub(start.rem_euclid(span)),
            end: end.wrapping_add(span - end.rem_euclid(span)),
        }
    }

    /// Rows in the window (0 for an empty or reversed one).
    pub fn rows(&self) -> u64 {
        ((i128::from(self.end) - i128::from(self.start)).max(0) / i128::from(self.span)) as u64
    }

    /// The first row's label (its end).
    pub fn first_row(&self) -> i64 {
        self.start.saturating_add(self.span)
    }
}

/// rrdtool's window of rows of `span` seconds (`span` > 0) over `[start, end]`: `start` down
/// to a multiple of the span, `end` up past one (the row holding `end`); the rows are
/// labelled by their ends, from `start + span`. Also the window of an emoncms feed's slots.
pub fn window(span: i64, start: i64, end: i64) -> (i64, i64) {
    (
        start.saturating_sub(start.rem_euclid(span)),
        end.saturating_add(span - end.rem_euclid(span)),
    )
}

/// Seconds a row of archive `rra` stands for (at least 1).
pub fn span_of(rrd: &Rrd, rra: usize) -> i64 {
    let span = rrd
        .schema
        .step
        .saturating_mul(rrd.schema.rra[rra].pdp_cnt)
        .max(1);
    i64::try_from(span).unwrap_or(i64::MAX)
}

/// rrdtool's plan for `cf` over `[start, end]` at `resolution` seconds (0: the finest, as
/// rrdcached asks): the archive [`choose_rra`] picks, aligned as [`Plan::of`]. None when no
/// archive matches the CF.
pub fn plan(rrd: &Rrd, cf: Cf, start: i64, end: i64, resolution: u64) -> Option<Plan> {
    choose_rra(rrd, cf, start, end, resolution).map(|rra| Plan::of(rrd, rra, start, end))
}

/// The archive rrdtool reads for `cf` over `[start, end]` at `resolution` seconds, or `None`
/// when no archive matches the CF.
fn choose_rra(rrd: &Rrd, cf: Cf, start: i64, end: i64, resolution: u64) -> Option<usize> {
    let step = rrd.schema.step as i64;
    let mut best_full: Option<(usize, u64)> = None;
    let mut best_part: Option<(usize, i128, u64)> = None;
    for (i, r) in rrd.schema.rra.iter().enumerate() {
        // The CF itself, or any archive of one PDP a row when both CFs consolidate (not the
        // Holt-Winters family).
        if r.cf != cf && (r.pdp_cnt != 1 || cf.is_hw() || r.cf.is_hw()) {
            continue;
        }
        let span = step * r.pdp_cnt as i64;
        let cal_end = rrd.last_up - rrd.last_up.rem_euclid(span);
        let cal_start = cal_end - span * r.row_cnt as i64;
        let diff = resolution.abs_diff(span as u64);
        if cal_start <= start {
            if best_full.is_none_or(|(_, d)| diff < d) {
                best_full = Some((i, diff));
            }
        } else {
            // In i128: a range near i64's ends (a Graphite `from` of billions of years) would
            // overflow.
            let covered =
                (i128::from(end) - i128::from(start)) - (i128::from(cal_start) - i128::from(start));
            let better = match best_part {
                None => true,
                Some((_, c, d)) => covered > c || (covered == c && diff < d),
            };
            if better {
                best_part = Some((i, covered, diff));
            }
        }
    }
    best_full.map(|b| b.0).or(best_part.map(|b| b.0))
}

/// Fetch `cf` values for `[start, end]`. `align` is `--align-start`: shift start down to a
/// multiple of `resolution` and end by the same amount, before anything else.
pub fn fetch(
    rrd: &Rrd,
    cf: Cf,
    mut start: i64,
    mut end: i64,
    resolution: u64,
    align: bool,
) -> Result<FetchResult, RrdError> {
    if align && resolution > 0 {
        let delta = start.rem_euclid(resolution as i64);
        start -= delta;
        end -= delta;
    }
    if start < MIN_TIME {
        return Err(RrdError::new(
            "the first entry to fetch should be after 1980",
        ));
    }
    if end < start {
        return Err(RrdError::new(format!(
            "start ({start}) should be less than end ({end})"
        )));
    }
    let Some(p) = plan(rrd, cf, start, end, resolution) else {
        return Err(RrdError::new(
            "the RRD does not contain an RRA matching the chosen CF",
        ));
    };
    let mut values = Vec::new();
    push_archive_rows(rrd, p.rra, p.first_row(), p.rows() as usize, &mut values);
    Ok(FetchResult {
        start: p.start,
        end: p.end,
        step: p.span as u64,
        ds_names: rrd.schema.ds.iter().map(|d| d.name.clone()).collect(),
        values,
    })
}

/// How many values (rows x data sources) [`fetch`] of these arguments gives, without
/// making them (0 where it fails); for a caller that bounds what it reads.
pub fn fetch_values(rrd: &Rrd, cf: Cf, start: i64, end: i64, resolution: u64) -> u64 {
    if start < MIN_TIME || end < start {
        return 0;
    }
    plan(rrd, cf, start, end, resolution)
        .map_or(0, |p| p.rows().saturating_mul(rrd.ds_cnt() as u64))
}

/// The text `rrdtool fetch` prints: a header of right-aligned DS names, a blank line, then
/// `%10lu:` and ` %0.10e` per value for each row.
pub fn format_fetch(r: &FetchResult) -> String {
    use std::fmt::Write;
    let mut out = String::with_capacity(32 + r.ds_names.len() * 20 + r.values.len() * 18);
    out.push_str("           ");
    for n in &r.ds_names {
        let _ = write!(out, "{n:>20}");
    }
    out.push_str("\n\n");
    for (k, row) in r.rows().enumerate() {
        let t = r.start + (k as i64 + 1) * r.step as i64;
        let _ = write!(out, "{t:>10}:");
        for v in row {
            out.push(' ');
            push_c_exp(&mut out, *v, 10);
        }
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::schema::{DsDef, DsType, RraDef, Schema};

    fn rrd(rras: &[(Cf, u64, u64)], last_up: i64) -> Rrd {
        let schema = Schema {
            step: 60,
            ds: vec![DsDef {
                name: "x".into(),
                kind: DsType::Gauge,
                heartbeat: 120,
                min: DNAN,
                max: DNAN,
                rpn: None,
            }],
            rra: rras
                .iter()
                .map(|&(cf, pdp_cnt, row_cnt)| RraDef {
                    cf,
                    xff: 0.5,
                    pdp_cnt,
                    row_cnt,
                    par: [0; 5],
                })
                .collect(),
        };
        let mut r = Rrd::new(schema, last_up);
        // Fill every row with its archive index so the choice is visible.
        for (i, d) in r.rra.iter_mut().enumerate() {
            d.rows = crate::Rows::filled(d.rows.row_cnt(), d.rows.ds_cnt(), i as f64);
        }
        r
    }

    #[test]
    fn one_pdp_archive_serves_other_cfs() {
        let r = rrd(&[(Cf::Average, 1, 10), (Cf::Max, 5, 10)], 1700001780);
        assert_eq!(choose_rra(&r, Cf::Min, 1700001000, 1700001500, 1), Some(0));
        let r = rrd(&[(Cf::Max, 5, 10)], 1700001780);
        assert_eq!(choose_rra(&r, Cf::Min, 1700001000, 1700001500, 1), None);
    }

    #[test]
    fn full_match_beats_partial_and_resolution_picks_among_full() {
        let r = rrd(&[(Cf::Max, 1, 10), (Cf::Max, 5, 10)], 1700001780);
        // Only the 5-PDP archive reaches back to 1700000000: full beats partial.
        assert_eq!(choose_rra(&r, Cf::Max, 1700000000, 1700001500, 1), Some(1));
        // Both full: the nearest resolution wins.
        assert_eq!(choose_rra(&r, Cf::Max, 1700001500, 1700001700, 1), Some(0));
        assert_eq!(
            choose_rra(&r, Cf::Max, 1700001500, 1700001700, 300),
            Some(1)
        );
    }

    #[test]
    fn window_aligns_start_down_and_end_up_one_step() {
        let r = rrd(&[(Cf::Average, 1, 10)], 1700001780);
        let f = fetch(&r, Cf::Average, 1700001030, 1700001200, 1, false).unwrap();
        assert_eq!((f.start, f.end, f.step), (1700001000, 1700001240, 60));
        assert_eq!(f.row_count(), 4);
        // Retention: rows 1700001240 .. 1700001780 exist; earlier are NaN.
        assert!(f.values[2].is_nan());
        assert_eq!(f.values[3], 0.0);
        let text = format_fetch(&f);
        assert!(text.starts_with("                              x\n\n1700001060: -nan\n"));
        assert!(text.ends_with("1700001240: 0.0000000000e+00\n"));
    }

    #[test]
    fn align_start_shifts_both_ends_by_the_resolution_remainder() {
        let r = rrd(&[(Cf::Max, 5, 10)], 1700001780);
        let f = fetch(&r, Cf::Max, 1700000150, 1700000420, 300, true).unwrap();
        assert_eq!((f.start, f.end), (1700000100, 1700000400));
        let f = fetch(&r, Cf::Max, 1700000150, 1700000420, 300, false).unwrap();
        assert_eq!(f.end, 1700000700);
    }

    #[test]
    fn bad_windows_fail_like_rrdtool() {
        let r = rrd(&[(Cf::Max, 5, 10)], 1700001780);
        assert_eq!(
            fetch(&r, Cf::Max, 1700000000, 1699990000, 1, false)
                .unwrap_err()
                .msg,
            "start (1700000000) should be less than end (1699990000)"
        );
        assert_eq!(
            fetch(&r, Cf::Min, 1700000000, 1700000000, 1, false)
                .unwrap_err()
                .msg,
            "the RRD does not contain an RRA matching the chosen CF"
        );
    }

    /// The rows copied a chunk at a time are the rows looked up one by one: every window
    /// around the retention (before, across its start, inside, across the end, after),
    /// aligned or not, on archives whose ring wraps at any row, with chunk edges in between.
    #[test]
    fn archive_rows_in_runs_are_the_ring_rows() {
        use crate::rows::chunk_rows_for;
        let ds = 3;
        let per = chunk_rows_for(ds) as u64;
        for row_cnt in [1, 2, 7, per - 1, per, per + 1, 3 * per + 5] {
            let schema = Schema {
                step: 60,
                ds: (0..ds)
                    .map(|i| DsDef {
                        name: format!("d{i}"),
                        kind: DsType::Gauge,
                        heartbeat: 120,
                        min: DNAN,
                        max: DNAN,
                        rpn: None,
                    })
                    .collect(),
                rra: vec![RraDef {
                    cf: Cf::Average,
                    xff: 0.5,
                    pdp_cnt: 2,
                    row_cnt,
                    par: [0; 5],
                }],
            };
            let span = 120i64;
            for cur in [0, row_cnt / 2, row_cnt - 1] {
                let mut r = Rrd::new(schema.clone(), 1_700_000_000);
                r.last_up = 1_700_003_630;
                r.rra[0].cur_row = cur;
                let vals: Vec<f64> = (0..row_cnt as usize * ds).map(|i| i as f64).collect();
                r.rra[0].rows = crate::Rows::from_values(ds, &vals);
                let end = r.rra_end(0);
                let oldest = end - (row_cnt as i64 - 1) * span;
                for t0 in [
                    oldest - 5 * span,
                    oldest - span,
                    oldest,
                    oldest + span,
                    end,
                    end + span,
                ] {
                    for shift in [0, 7] {
                        for n in [0, 1, 3, row_cnt as usize + 9] {
                            let t0 = t0 + shift;
                            let mut got = vec![-1.0];
                            push_archive_rows(&r, 0, t0, n, &mut got);
                            let mut want = vec![-1.0];
                            let mut rd = r.rra[0].rows.reader();
                            for k in 0..n as i64 {
                                match r.ring_row(0, t0 + k * span) {
                                    Some(row) => want.extend_from_slice(rd.row(row)),
                                    None => want.extend(std::iter::repeat_n(DNAN, ds)),
                                }
                            }
                            let bits =
                                |v: &[f64]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
                            assert_eq!(
                                bits(&got),
                                bits(&want),
                                "rows {row_cnt} cur {cur} t0 {t0} n {n}"
                            );
                        }
                    }
                }
            }
        }
    }
}
