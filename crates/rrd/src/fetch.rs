//! `rrdtool fetch`: which archive answers a request, how the window is aligned, what comes out.
//!
//! [`fetch`] reproduces `rrd_fetch` of rrdtool 1.7.2 (reference §3.9): the `--align-start`
//! shift, the archive choice (requested CF, or any one-PDP-per-row archive; full matches
//! before partial ones), the alignment of start down and end up by an extra step, and NaN for
//! rows outside the archive's retention. [`format_fetch`] prints the CLI's text form.

use crate::fmt::c_exp;
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
    /// `(end - start) / step` rows of one value per DS.
    pub rows: Vec<Vec<f64>>,
}

/// The archive rrdtool reads for `cf` over `[start, end]` at `resolution` seconds, or `None`
/// when no archive matches the CF.
pub fn choose_rra(rrd: &Rrd, cf: Cf, start: i64, end: i64, resolution: u64) -> Option<usize> {
    let step = rrd.schema.step as i64;
    let mut best_full: Option<(usize, u64)> = None;
    let mut best_part: Option<(usize, i64, u64)> = None;
    for (i, r) in rrd.schema.rra.iter().enumerate() {
        if r.cf != cf && r.pdp_cnt != 1 {
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
            let covered = (end - start) - (cal_start - start);
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
    let Some(rra) = choose_rra(rrd, cf, start, end, resolution) else {
        return Err(RrdError::new(
            "the RRD does not contain an RRA matching the chosen CF",
        ));
    };
    let span = (rrd.schema.step * rrd.schema.rra[rra].pdp_cnt) as i64;
    let s = start - start.rem_euclid(span);
    let e = end + span - end.rem_euclid(span);
    let mut reader = rrd.rra[rra].rows.reader();
    let rows = (0..(e - s) / span)
        .map(|k| match rrd.ring_row(rra, s + (k + 1) * span) {
            Some(row) => reader.row(row).to_vec(),
            None => vec![DNAN; rrd.ds_cnt()],
        })
        .collect();
    Ok(FetchResult {
        start: s,
        end: e,
        step: span as u64,
        ds_names: rrd.schema.ds.iter().map(|d| d.name.clone()).collect(),
        rows,
    })
}

/// The text `rrdtool fetch` prints: a header of right-aligned DS names, a blank line, then
/// `%10lu:` and ` %0.10e` per value for each row.
pub fn format_fetch(r: &FetchResult) -> String {
    let mut out = String::from("           ");
    for n in &r.ds_names {
        out.push_str(&format!("{n:>20}"));
    }
    out.push_str("\n\n");
    for (k, row) in r.rows.iter().enumerate() {
        let t = r.start + (k as i64 + 1) * r.step as i64;
        out.push_str(&format!("{t:>10}:"));
        for v in row {
            out.push(' ');
            out.push_str(&c_exp(*v, 10));
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
        assert_eq!(f.rows.len(), 4);
        // Retention: rows 1700001240 .. 1700001780 exist; earlier are NaN.
        assert!(f.rows[2][0].is_nan());
        assert_eq!(f.rows[3][0], 0.0);
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
}
