//! `create --source`: a new RRD's rows and consolidation state filled from other RRDs, as
//! rrdtool 1.7.2 fills them. Learnt from rrdcreate(1), from rrdtool's files and from reading
//! its rrd_create.c for the rules; the code is ringlet's. Hand-written because the result
//! must be rrdtool's to the bit, quirks included.
//!
//! What rrdtool does, and so this module:
//! - Data source `d` of the new RRD reads, in each source in the order given, the data
//!   source of its name (`DS:new=old:...` reads `old`; `DS:new=old[n]:...` only from the
//!   n-th source, counted from 1).
//! - Every row of every archive (and of a scratch archive of AVERAGE, one PDP a row, twice as
//!   many rows as the largest PDPs-a-row, when the RRD has no such archive that long) is
//!   filled DS by DS from the candidate archives: in each source its archives of AVERAGE or
//!   of the row's CF, ordered by rrdtool's own quicksort ([`quick_sort`]) with its comparison
//!   (an archive of the same CF and row span first, then AVERAGE, then finer, then longer).
//!   The candidates' rows over the row's seconds count while the row is not fully covered;
//!   an archive only counts where both ends of the row fall in its range. Seconds already
//!   covered count once ([`Coverage`]); AVERAGE is the mean weighted by the seconds newly
//!   covered, MIN/MAX the extreme, LAST the last value read. The row is written when more
//!   than `xff` of it is covered.
//! - The last reading of a data source (`last_ds`, the PDP so far) is copied from the first
//!   source whose current PDP ends within the new RRD's current PDP, with a known last
//!   reading and the same type.
//! - Each archive's consolidation state is copied from a source archive of the same CF, PDPs
//!   a row and step whose current row and PDP are the new one's; otherwise it is consolidated
//!   again, PDP by PDP with rrdtool's `update_cdp`, from the rows of the AVERAGE archive of one
//!   PDP a row filled above (one PDP a row: its current row's value as the primary value).
//! - Without `--start`, the last update is the latest of the sources'.
//!
//! rrdtool's C types are kept where they change results: times of rows in `int` arithmetic
//! (wrapping), row indices by `int` modulo, the boundary test of a row's range after `int`
//! overflow.

use crate::num::DNAN;
use crate::rows::RowReader;
use crate::schema::{Cf, RraDef};
use crate::state::{CdpPrep, Rrd};
use crate::update::update_cdp;
use crate::Rows;

/// `DS:name=from[index]:...`: where data source `name` reads in the sources.
#[derive(Debug, Clone, PartialEq)]
pub struct Mapping {
    pub name: String,
    /// The source's data source name; empty for none given (the same name).
    pub from: String,
    /// The one source to read, counted from 1; -1 for every source (C's `int` of `strtol`).
    pub index: i32,
}

/// `a % b` made non-negative, in C `int`s.
fn pmod(a: i32, b: i32) -> i32 {
    if b == 0 {
        return 0;
    }
    let x = a.wrapping_rem(b);
    if x < 0 {
        x + b
    } else {
        x
    }
}

/// Seconds a row of an archive spans, as rrdtool's `int`.
fn slot(step: u64, pdp_cnt: u64) -> i32 {
    pdp_cnt.wrapping_mul(step) as i32
}

/// An archive's place in time: what rrdtool's row arithmetic reads.
#[derive(Clone, Copy)]
struct Ring {
    last_up: i64,
    step: u64,
    pdp_cnt: u64,
    row_cnt: u64,
    cur_row: u64,
}

impl Ring {
    /// The last second of ring row `row` (`end_time_for_row`).
    fn row_end(&self, row: u64) -> i64 {
        let ts = slot(self.step, self.pdp_cnt);
        let past = pmod(
            (self.cur_row as i32).wrapping_sub(row as i32),
            self.row_cnt as i32,
        );
        let lu = self.last_up;
        let base = if ts == 0 { lu } else { lu - lu % ts as i64 };
        base - past.wrapping_mul(ts) as i64
    }

    /// The ring row holding second `t`, or -1 (`row_for_time`).
    fn row_for(&self, t: i64) -> i32 {
        let ts = slot(self.step, self.pdp_cnt) as i64;
        if ts == 0 {
            return -1;
        }
        let (mut req, mut last) = (t, self.last_up);
        let delta = req % ts;
        if delta > 0 {
            req += ts - delta;
        }
        let delta = req % ts;
        if delta > 0 {
            last += ts - delta;
        }
        if req > last {
            return -1;
        }
        let floor = (last as i32).wrapping_sub((self.row_cnt as i32).wrapping_mul(ts as i32));
        if req <= floor as i64 {
            return -1;
        }
        let past = ((last - req) / ts) as i32;
        if past >= self.row_cnt as i32 {
            return -1;
        }
        pmod(
            (self.cur_row as i32).wrapping_sub(past),
            self.row_cnt as i32,
        )
    }
}

/// rrdtool's `overlap`: the seconds between the later start and the earlier end.
fn overlap(s1: i64, e1: i64, s2: i64, e2: i64) -> i64 {
    if s1 >= e1 || s2 >= e2 || s1 > e2 || s2 > e1 {
        return 0;
    }
    e1.min(e2) - s1.max(s2)
}

/// rrdtool's `is_interval_within_interval`; a one-second interval is within any.
fn within(s1: i64, e1: i64, s2: i64, e2: i64) -> bool {
    if e1 - s1 > e2 - s2 {
        return false;
    }
    overlap(s1, e1, s2, e2) == e1 - s1
}

#[derive(Clone, Copy, Debug, PartialEq)]
struct Span {
    covered: bool,
    start: i64,
    end: i64,
}

/// The seconds of a row covered so far: rrdtool's list of intervals, with its way of adding
/// one (one-second intervals and the pieces split off included).
struct Coverage(Vec<Span>);

impl Coverage {
    fn new(start: i64, end: i64) -> Coverage {
        Coverage(vec![Span {
            covered: false,
            start,
            end,
        }])
    }

    /// Cover `start..=end`; the seconds newly covered.
    fn add(&mut self, mut start: i64, mut end: i64) -> i64 {
        let v = &mut self.0;
        let (first, last) = (v[0].start, v[v.len() - 1].end);
        start = start.max(first);
        end = end.min(last);
        let mut newly = 0;
        if end < first || start > last {
            return 0;
        }
        let span = |covered, start, end| Span {
            covered,
            start,
            end,
        };
        let mut i = 0;
        while i < v.len() {
            let Span {
                covered,
                start: os,
                end: oe,
            } = v[i];
            if within(start, end, os, oe) {
                if covered {
                    break;
                }
                newly += end - start + 1;
                if start == os && end == oe {
                    v[i].covered = true;
                } else if os == start {
                    v[i] = span(true, os, end);
                    v.insert(i + 1, span(false, end + 1, oe));
                } else if oe == end {
                    v[i] = span(false, os, start - 1);
                    v.insert(i + 1, span(true, start, oe));
                } else {
                    v[i] = span(false, os, start - 1);
                    v.insert(i + 1, span(true, start, end));
                    v.insert(i + 2, span(false, end + 1, oe));
                }
                break;
            }
            if within(os, oe, start, end) && !covered {
                v[i].covered = true;
                newly += oe - os + 1;
            }
            if start >= os && start <= oe {
                if v[i].covered {
                    start = oe + 1;
                } else if os == start {
                    v[i].covered = true;
                    start = oe + 1;
                } else {
                    v[i] = span(false, os, start - 1);
                    v.insert(i + 1, span(true, start, oe));
                    newly += oe - start + 1;
                    start = oe + 1;
                }
            }
            i += 1;
        }
        let mut i = 0;
        while i + 1 < v.len() {
            if v[i].covered == v[i + 1].covered {
                v[i].end = v[i + 1].end;
                v.remove(i + 1);
            } else {
                i += 1;
            }
        }
        newly
    }
}

/// rrdtool's own quicksort (quicksort.c's scheme: the first element as pivot, two cursors),
/// which its candidate order needs: that comparison is not a total order, so another sort
/// would order some candidates otherwise.
pub fn quick_sort<T>(v: &mut [T], cmp: &mut dyn FnMut(&T, &T) -> i32) {
    if v.len() > 1 {
        sort_range(v, 0, v.len() as isize - 1, cmp);
    }
}

fn sort_range<T>(v: &mut [T], begin: isize, end: isize, cmp: &mut dyn FnMut(&T, &T) -> i32) {
    if begin >= end {
        return;
    }
    let p = begin as usize;
    let (mut l, mut r) = (begin + 1, end);
    while l < r {
        if cmp(&v[l as usize], &v[p]) <= 0 {
            l += 1;
        } else if cmp(&v[r as usize], &v[p]) >= 0 {
            r -= 1;
        } else {
            v.swap(l as usize, r as usize);
        }
    }
    if cmp(&v[l as usize], &v[p]) <= 0 {
        v.swap(l as usize, p);
        l -= 1;
    } else {
        l -= 1;
        v.swap(l as usize, p);
    }
    sort_range(v, begin, l, cmp);
    sort_range(v, r, end, cmp);
}

/// One archive of one source that may fill a data source: (source, archive, its column).
#[derive(Clone, Copy, Debug)]
struct Cand {
    src: usize,
    rra: usize,
    ds: usize,
}

/// The new RRD while it is filled: its archives' values (ring order) and definitions, the
/// scratch archive last when there is one.
struct Target<'a> {
    rrd: &'a mut Rrd,
    defs: Vec<RraDef>,
    cur_row: Vec<u64>,
    values: Vec<Vec<f64>>,
}

impl Target<'_> {
    fn ring(&self, r: usize) -> Ring {
        Ring {
            last_up: self.rrd.last_up,
            step: self.rrd.schema.step,
            pdp_cnt: self.defs[r].pdp_cnt,
            row_cnt: self.defs[r].row_cnt,
            cur_row: self.cur_row[r],
        }
    }
}

fn src_ring(s: &Rrd, r: usize) -> Ring {
    let d = &s.schema.rra[r];
    Ring {
        last_up: s.last_up,
        step: s.schema.step,
        pdp_cnt: d.pdp_cnt,
        row_cnt: d.row_cnt,
        cur_row: s.rra[r].cur_row,
    }
}

/// The last update of a new RRD filled from `sources` without `--start`: the latest of theirs.
/// (rrdtool sets it after its create made the consolidation state with another start, but
/// [`prefill`] makes every archive's state again, so the RRD can be made with this one.)
pub fn latest(sources: &[&Rrd]) -> i64 {
    sources.iter().map(|s| s.last_up).fold(0, i64::max)
}

/// Fill `rrd` (as create made it, every row unknown) from `sources`, in the order given.
/// `maps`: the `DS:` definitions' mappings (data sources from `--template` have none).
pub fn prefill(rrd: &mut Rrd, sources: &[&Rrd], maps: &[Mapping]) {
    if sources.is_empty() {
        return;
    }
    let ds_cnt = rrd.ds_cnt();
    let mut defs = rrd.schema.rra.clone();
    let mut cur_row: Vec<u64> = rrd.rra.iter().map(|r| r.cur_row).collect();
    let mut values: Vec<Vec<f64>> = rrd.rra.iter().map(|r| r.rows.to_vec()).collect();
    // The archive the consolidation state is computed from: the longest AVERAGE archive of
    // one PDP a row (the first of them), or a scratch one when none is twice as long as the
    // largest PDPs a row.
    let largest = 2 * defs.iter().map(|d| d.pdp_cnt).max().unwrap_or(0);
    let mut best: Option<usize> = None;
    for (i, d) in defs.iter().enumerate() {
        if d.pdp_cnt == 1 && d.cf == Cf::Average && best.is_none_or(|b| defs[b].row_cnt < d.row_cnt)
        {
            best = Some(i);
        }
    }
    let cdp_rra = match best {
        Some(b) if defs[b].row_cnt >= largest => b,
        _ => {
            defs.push(RraDef::new(Cf::Average, 0.5, 1, largest));
            cur_row.push(0);
            values.push(vec![DNAN; largest as usize * ds_cnt]);
            defs.len() - 1
        }
    };
    let real = rrd.schema.rra.len();
    let mut readers: Vec<Vec<RowReader<'_>>> = sources
        .iter()
        .map(|s| s.rra.iter().map(|r| r.rows.reader()).collect())
        .collect();
    let mut t = Target {
        rrd,
        defs,
        cur_row,
        values,
    };
    for r in 0..t.defs.len() {
        let target = t.defs[r].clone();
        for d in 0..ds_cnt {
            let mut cands = candidates(&t, d, sources, maps, |s| {
                s.cf == Cf::Average || s.cf == target.cf
            });
            if cands.is_empty() {
                continue;
            }
            order(&mut cands, sources, &target, t.rrd.schema.step);
            for row in 0..target.row_cnt {
                fill_bin(&mut t, r, d, row, &cands, sources, &mut readers);
            }
            fill_pdp(t.rrd, d, &cands, sources);
        }
    }
    for r in 0..real {
        let target = t.defs[r].clone();
        for d in 0..ds_cnt {
            let cands = candidates(&t, d, sources, maps, |s| {
                s.cf == target.cf && s.pdp_cnt == target.pdp_cnt
            });
            fill_cdp(&mut t, r, d, &cands, sources, cdp_rra);
        }
    }
    t.values.truncate(real);
    let Target { rrd, values, .. } = t;
    for (data, v) in rrd.rra.iter_mut().zip(values) {
        data.rows = Rows::from_values(ds_cnt, &v);
    }
}

/// The archives that may fill data source `d` of the new RRD, source by source in the
/// order given, each source's in its file order (`find_matching_candidates`).
fn candidates(
    t: &Target<'_>,
    d: usize,
    sources: &[&Rrd],
    maps: &[Mapping],
    select: impl Fn(&RraDef) -> bool,
) -> Vec<Cand> {
    let name = t.rrd.schema.ds[d].name.as_str();
    let map = maps.iter().find(|m| m.name == name);
    let looked = match map {
        Some(m) if !m.from.is_empty() => m.from.as_str(),
        _ => name,
    };
    let mut out = Vec::new();
    for (k, s) in sources.iter().enumerate() {
        if let Some(m) = map {
            if m.index >= 0 && k as i64 + 1 != m.index as i64 {
                continue;
            }
        }
        let Some(sd) = s.schema.ds.iter().position(|x| x.name == looked) else {
            continue;
        };
        let mut mine: Vec<Cand> = (s.schema.rra.iter().enumerate())
            .filter(|(_, a)| select(a))
            .map(|(i, _)| Cand {
                src: k,
                rra: i,
                ds: sd,
            })
            .collect();
        // rrdtool sorts each source's candidates first (find_candidate_rras' qsort with
        // sort_candidates: fewer PDPs a row first, then more rows, differences taken as C
        // ints; glibc's qsort of a few elements is a stable merge sort). Among archives of
        // one CF and PDP count this decides whose consolidation state a new archive copies.
        let rra = &s.schema.rra;
        mine.sort_by(|a, b| {
            let (x, y) = (&rra[a.rra], &rra[b.rra]);
            let d = if a.rra == b.rra {
                0
            } else if x.pdp_cnt == y.pdp_cnt {
                y.row_cnt.wrapping_sub(x.row_cnt) as i32
            } else {
                x.pdp_cnt.wrapping_sub(y.pdp_cnt) as i32
            };
            d.cmp(&0)
        });
        out.extend(mine);
    }
    out
}

/// Sort each source's candidates in place as rrdtool does (`order_candidates`).
fn order(cands: &mut [Cand], sources: &[&Rrd], target: &RraDef, step: u64) {
    let tspan = target.pdp_cnt.wrapping_mul(step as i32 as i64 as u64);
    let mut cmp = |a: &Cand, b: &Cand| -> i32 {
        let (sa, sb) = (sources[a.src], sources[b.src]);
        let (ra, rb) = (&sa.schema.rra[a.rra], &sb.schema.rra[b.rra]);
        // rrdtool's step as an `int`, widened back for the product.
        let span_a = ra.pdp_cnt.wrapping_mul(sa.schema.step as i32 as i64 as u64);
        let span_b = rb.pdp_cnt.wrapping_mul(sb.schema.step as i32 as i64 as u64);
        if ra.cf == target.cf && span_a == tspan {
            return -1;
        }
        if rb.cf == target.cf && span_b == tspan {
            return 1;
        }
        if ra.cf != rb.cf {
            if ra.cf == Cf::Average {
                return -1;
            }
            if rb.cf == Cf::Average {
                return 1;
            }
            return 0;
        }
        let d = span_a.wrapping_sub(span_b) as i32;
        if d != 0 {
            return d;
        }
        (ra.row_cnt.wrapping_sub(rb.row_cnt) as i32).wrapping_neg()
    };
    let mut from = 0;
    while from < cands.len() {
        let src = cands[from].src;
        let to = from + cands[from..].iter().take_while(|c| c.src == src).count();
        quick_sort(&mut cands[from..to], &mut cmp);
        from = to;
    }
}

/// Row `row` of archive `r`, data source `d` (`prefill_bin`).
fn fill_bin(
    t: &mut Target<'_>,
    r: usize,
    d: usize,
    row: u64,
    cands: &[Cand],
    sources: &[&Rrd],
    readers: &mut [Vec<RowReader<'_>>],
) {
    let def = &t.defs[r];
    let size = (def.pdp_cnt * t.rrd.schema.step) as i64;
    let need = (def.xff * size as f64) as i64;
    let bin_end = t.ring(r).row_end(row);
    let bin_start = bin_end - size + 1;
    let mut cover = Coverage::new(bin_start, bin_end);
    let (mut total, mut value) = (0i64, DNAN);
    let cf = def.cf;
    for c in cands {
        if total >= size {
            break;
        }
        let s = sources[c.src];
        let ring = src_ring(s, c.rra);
        let (end_bin, start_bin) = (ring.row_for(bin_end), ring.row_for(bin_start));
        if end_bin < 0 || start_bin < 0 {
            continue;
        }
        let rows = ring.row_cnt;
        let mut count = pmod(end_bin.wrapping_sub(start_bin).wrapping_add(1), rows as i32);
        let cand_size = (ring.pdp_cnt * ring.step) as i64;
        let mut ci = start_bin as u64;
        while count > 0 && total < size {
            if ci == rows {
                ci = 0;
            }
            let cend = ring.row_end(ci);
            let cstart = cend - cand_size + 1;
            let v = readers[c.src][c.rra].row(ci as usize)[c.ds];
            if !v.is_nan() {
                let newly = cover.add(cstart, cend) as i32;
                if newly > 0 {
                    total += newly as i64;
                    value = consolidate(cf, value, v, size as i32, newly);
                }
            }
            ci += 1;
            count -= 1;
        }
    }
    if total > need {
        let v = match cf {
            Cf::Average if total != 0 => value / total as i32 as f64 * size as i32 as f64,
            _ => value,
        };
        let ds_cnt = t.rrd.ds_cnt();
        t.values[r][row as usize * ds_cnt + d] = v;
    }
}

/// rrdtool's `prefill_consolidate`: the estimate so far with value `v` covering `newly`
/// seconds of a row of `size`.
fn consolidate(cf: Cf, est: f64, v: f64, size: i32, newly: i32) -> f64 {
    match cf {
        Cf::Min if est.is_nan() => v,
        Cf::Min => {
            if est < v {
                est
            } else {
                v
            }
        }
        Cf::Max if est.is_nan() => v,
        Cf::Max => {
            if est > v {
                est
            } else {
                v
            }
        }
        Cf::Last => v,
        // AVERAGE, and rrdtool's default for the Holt-Winters CFs.
        _ => {
            let est = if est.is_nan() { 0.0 } else { est };
            est + v / size as f64 * newly as f64
        }
    }
}

/// Data source `d`'s last reading from the first source whose current PDP ends in the new
/// RRD's (`prefill_pdp_prep`).
fn fill_pdp(rrd: &mut Rrd, d: usize, cands: &[Cand], sources: &[&Rrd]) {
    if rrd.pdp[d].last_ds != "U" {
        return;
    }
    let step = rrd.schema.step as i64;
    let begin = (rrd.last_up / step) * step + 1;
    let end = begin + step - 1;
    let mut seen: Option<usize> = None;
    for c in cands {
        if seen == Some(c.src) {
            continue;
        }
        seen = Some(c.src);
        let s = sources[c.src];
        if s.pdp[c.ds].last_ds == "U" {
            continue;
        }
        let sstep = s.schema.step as i64;
        let sbegin = (s.last_up / sstep) * sstep + 1;
        let send = sbegin + sstep - 1;
        if send <= end && send >= begin && rrd.schema.ds[d].kind == s.schema.ds[c.ds].kind {
            rrd.pdp[d] = s.pdp[c.ds].clone();
            // rrdtool compares the unknown seconds read as a double (a tiny number) with the
            // step here, so this takes effect only for counts beyond 2^52.
            let as_double = f64::from_bits(rrd.pdp[d].unkn_sec_cnt);
            if as_double > step as f64 {
                let source_known = (sstep as f64 - as_double) as i64;
                let max_known = rrd.last_up - begin;
                rrd.pdp[d].unkn_sec_cnt = (max_known - source_known).max(0) as u64;
            }
            break;
        }
    }
}

/// The current row of an archive (`get_cdp_start_end`): its first and last second.
fn cdp_window(last_up: i64, step: u64, pdp_cnt: u64) -> (i64, i64) {
    let span = slot(step, pdp_cnt) as i64;
    if span == 0 {
        return (0, -1);
    }
    let begin = (last_up / span) * span + 1;
    (begin, begin + span - 1)
}

/// Archive `r`'s consolidation state for data source `d` (`prefill_cdp_prep`).
fn fill_cdp(
    t: &mut Target<'_>,
    r: usize,
    d: usize,
    cands: &[Cand],
    sources: &[&Rrd],
    cdp_rra: usize,
) {
    let def = t.defs[r].clone();
    let step = t.rrd.schema.step;
    let last_up = t.rrd.last_up;
    let ds_cnt = t.rrd.ds_cnt();
    let (begin, end) = cdp_window(last_up, step, def.pdp_cnt);
    for c in cands {
        let s = sources[c.src];
        if s.schema.step != step {
            continue;
        }
        let sdef = &s.schema.rra[c.rra];
        if cdp_window(s.last_up, s.schema.step, sdef.pdp_cnt) == (begin, end)
            && last_up / step as i64 == s.last_up / step as i64
        {
            // The whole scratch area: the Holt-Winters slots too (zeros from a source
            // archive of a consolidating CF, as in rrdtool's file).
            t.rrd.cdp[r * ds_cnt + d] = s.cdp[c.rra * s.ds_cnt() + c.ds].clone();
            let slots = s.hw_slots(c.rra, c.ds);
            if let Some(h) = t.rrd.hw.as_mut() {
                h.scratch[r * ds_cnt + d] = slots;
            }
            return;
        }
    }
    // rrdtool's init_cdp, its unknown PDPs then set to 0. The Holt-Winters archives but
    // DEVPREDICT keep the value their init leaves (0; their slots are as the create made
    // them), FAILURES its zeroed history.
    let keeps = def.cf.is_hw() && def.cf != Cf::DevPredict;
    let mut c = CdpPrep {
        val: if keeps {
            t.rrd.cdp[r * ds_cnt + d].val
        } else {
            DNAN
        },
        unkn_pdp_cnt: 0,
        ..t.rrd.cdp[r * ds_cnt + d].clone()
    };
    if def.cf == Cf::Failures {
        c.val = 0.0;
        if let Some(h) = t.rrd.hw.as_mut() {
            h.scratch[r * ds_cnt + d] = crate::HwState::initial(Cf::Failures);
        }
    } else if def.cf.is_hw() {
        if let Some(h) = t.rrd.hw.as_mut() {
            let init = crate::HwState::initial(def.cf);
            let s = &mut h.scratch[r * ds_cnt + d];
            match def.cf {
                // init_seasonal_cdp leaves the burn-in count alone.
                Cf::Seasonal | Cf::DevSeasonal => {
                    s[0] = init[0];
                    s[1] = init[1];
                    s[4] = 1;
                }
                Cf::DevPredict => {}
                _ => *s = init,
            }
        }
    }
    let ring = t.ring(cdp_rra);
    let at = |row: i32| t.values[cdp_rra][row as usize * ds_cnt + d];
    let span = slot(step, def.pdp_cnt) as i64;
    if def.pdp_cnt == 1 {
        let row = ring.row_for(begin - step as i64);
        c.primary = if row >= 0 { at(row) } else { 0.0 };
        c.secondary = 0.0;
    } else if span != 0 {
        let mut time = begin - def.pdp_cnt.wrapping_mul(step) as i64;
        while time < end && time < last_up {
            let row = ring.row_for(time);
            if row >= 0 {
                let v = at(row);
                let n = def.pdp_cnt.wrapping_sub(((time % span) as u64) / step) as i32;
                let n = n as i64 as u64;
                update_cdp(
                    &mut c,
                    def.cf,
                    def.xff,
                    def.pdp_cnt,
                    v,
                    (n == 1) as u64,
                    1,
                    n,
                );
            }
            time += step as i64;
        }
    }
    t.rrd.cdp[r * ds_cnt + d] = c;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn coverage_counts_each_second_once() {
        let mut c = Coverage::new(1, 100);
        assert_eq!(c.add(1, 10), 10);
        assert_eq!(c.add(5, 20), 10);
        assert_eq!(c.add(50, 150), 51);
        assert_eq!(c.add(0, 100), 29);
        assert_eq!(c.add(0, 100), 0);
    }

    #[test]
    fn a_one_second_interval_counts_as_within_the_first_piece() {
        // rrdtool's quirk: [100,100] is "within" the covered first piece, so nothing is
        // added although second 100 is not covered.
        let mut c = Coverage::new(1, 100);
        assert_eq!(c.add(1, 10), 10);
        assert_eq!(c.add(100, 100), 0);
    }

    #[test]
    fn quick_sort_orders_a_total_order() {
        let mut v = vec![5, 3, 9, 1, 1, 7, 2, 8];
        quick_sort(&mut v, &mut |a: &i32, b: &i32| a - b);
        assert_eq!(v, vec![1, 1, 2, 3, 5, 7, 8, 9]);
        let mut v: Vec<i32> = vec![];
        quick_sort(&mut v, &mut |a: &i32, b: &i32| a - b);
    }

    #[test]
    fn rows_by_time_as_rrdtool() {
        let r = Ring {
            last_up: 1000,
            step: 10,
            pdp_cnt: 1,
            row_cnt: 5,
            cur_row: 2,
        };
        assert_eq!(r.row_end(2), 1000);
        assert_eq!(r.row_end(3), 960);
        assert_eq!(r.row_for(1000), 2);
        assert_eq!(r.row_for(991), 2);
        assert_eq!(r.row_for(960), 3);
        assert_eq!(r.row_for(951), 3);
        assert_eq!(r.row_for(950), -1);
        assert_eq!(r.row_for(1001), -1);
    }
}
