//! `tune`'s DS and RRA changes (`DEL:name`, `DS:spec`, `DELRRA:n`, `RRA#n:[+-=]rows`, and
//! `--step` with them), as rrdtool 1.7.2 makes them: learnt from its manual, from its files
//! (`dump`, `info`) and from reading its rrd_modify.c for the rules; the code is ringlet's.
//!
//! rrdtool builds a new file from the old one and moves it over it. What that leaves:
//! - Every archive's rows in time order, the newest last (`cur_row` is `rows - 1`), whatever
//!   changed; values, the archives' consolidation state and the last update as they were.
//! - `DEL:name` removes that data source, its column and its state; names are those after the
//!   options (`-r a:c DEL:c` removes the renamed one); a name that is not there changes
//!   nothing. The deletions come first, then the additions in the order given: `DS:a:...
//!   DEL:a` deletes the old `a` and adds the new one at the end.
//! - `DS:spec` is read as create reads it, after the kept data sources and those added before
//!   it (a COMPUTE may name those). Its column is unknown in every row; its last reading
//!   `U`, its PDP value 0 with the seconds of the current PDP unknown (`last_update % step`);
//!   in each archive a value NaN, primary and secondary 0, and as unknown PDPs those of the
//!   current row so far.
//! - `RRA#n:` and `DELRRA:n` (C's `atoi`: `x` is 0; negative refused), which is `RRA#n:=0`,
//!   name the archives as they were before the command; for one archive the first of them
//!   counts. `+k` adds k rows before the oldest, `-k` removes the k oldest, `=k` sets the
//!   count likewise; an archive left with no row is removed. An `n` past the last archive
//!   changes nothing. The rows added are filled from the archives where they can be
//!   ([`fill`]: rrdtool's rules, quirks included).
//! - `RRA:spec` (read as create reads it) adds an archive after those kept, its rows filled
//!   as added rows are, its consolidation state as rrdtool computes it ([`first_cdp`]).
//! - `-t STEP` with changes divides the step: `STEP` must divide it (and differ from it);
//!   every archive's PDPs per row and unknown PDPs so far grow in proportion; the rest is
//!   made on the RRD that leaves (a new data source's unknown seconds count in the new
//!   step). `-t` of 0 or not a number is no change; without DS or RRA changes `-t` is none.
//! - The checks, in rrdtool's order: while reading the arguments, one that is none of these
//!   (`unparseable argument`), `DELRRA`'s and `RRA#`'s syntax; then the names (`Duplicate DS
//!   name`), some data source left, each `RRA:` then each `DS:` as create reads them.
//!
//! Where rrdtool 1.7.2 leaves a file it cannot read back, or one that says other than what it
//! held, ringlet refuses the command with its reason and changes nothing: no data source or
//! no archive left (rrdtool: "Cannot allocate memory", or a file its own `info` crashes on);
//! a COMPUTE data source that would read another than before (rrdtool keeps its expression's
//! positions: after `DEL:a`, `b,2,*` would read itself); a `DS:` that does not parse (rrdtool
//! writes it half made); a count of rows too large for a row index (rrdtool crashes); a
//! DCOUNTER or DDERIVE added or removed where the file's version would change (as for `-d`).
//!
//! On an RRD with Holt-Winters archives: a data source added gets each such archive's first
//! state (rrdtool's init_cdp per CF) and unknown rows; their rows are never filled (rrdtool
//! fills only the consolidating CFs'), their rows added or removed as any archive's. One
//! added (`RRA:HWPREDICT:...`) is read as create reads it, with the file name as given
//! hashed for its smoothing row, and gets the four rrdtool adds; its state is init_cdp's,
//! or where a candidate archive gives the first state, zeros with it (rrdtool zeroes the
//! whole scratch: its coefficients start at 0). Refused: a change of step (rrdtool gives
//! them more than one PDP a row), an archive removed where one of them would then depend on
//! another (rrdtool does not renumber).
//!
//! One result differs, on purpose: when an archive is removed before one kept, rrdtool 1.7.2
//! fills each archive after it with rows read where the archive of its new index was (the
//! removed one's rows are not counted past): the data of another archive. ringlet keeps
//! each archive's own rows (README says so).

use rrd::create::{is_name_char, parse_ds, parse_rra_any};
use rrd::num::DNAN;
use rrd::rows::Rows;
use rrd::schema::{DsDef, DsType};
use rrd::state::{CdpPrep, PdpPrep, RraData};
use rrd::Rrd;
use std::sync::Arc;

/// The changes named after the file, as read.
#[derive(Debug, Default)]
pub(crate) struct Changes<'a> {
    del: Vec<&'a str>,
    add: Vec<&'a str>,
    add_rra: Vec<&'a str>,
    /// (archive, operation, number): the first for each archive counts.
    rows: Vec<(i64, u8, i64)>,
}

/// Read the arguments after the file, in order: the first that is not a change, or a
/// `DELRRA:`/`RRA#` that does not parse, is the error.
pub(crate) fn scan(args: &[String]) -> Result<Changes<'_>, String> {
    let mut ch = Changes::default();
    for a in args {
        let body = |p: &str| a.strip_prefix(p).filter(|b| !b.is_empty());
        if let Some(b) = body("DEL:") {
            ch.del.push(b);
        } else if let Some(b) = body("DS:") {
            ch.add.push(b);
        } else if let Some(b) = body("DELRRA:") {
            // C's atoi; the same as `RRA#n:=0`, in the same list.
            let n = rrd::num::atol(b) as i32 as i64;
            if n < 0 {
                return Err("DELRRA requires a non-negative, integer argument".into());
            }
            ch.rows.push((n, b'=', 0));
        } else if let Some(b) = body("RRA:") {
            ch.add_rra.push(b);
        } else if let Some(b) = body("RRA#") {
            ch.rows.push(rows_change(b)?);
        } else {
            return Err(format!("unparseable argument: {a}"));
        }
    }
    Ok(ch)
}

/// `n:` then an operation character and a number (C's `%d:%c%d`).
fn rows_change(b: &str) -> Result<(i64, u8, i64), String> {
    const FAILED: &str = "Failed to parse RRA# command";
    // White space, a sign, digits: the number and the bytes read.
    let int = |s: &str| {
        let b = s.as_bytes();
        let space = b
            .iter()
            .take_while(|c| matches!(c, b' ' | b'\t'..=b'\r'))
            .count();
        let sign = usize::from(matches!(b.get(space), Some(b'+' | b'-')));
        let digits = b[space + sign..]
            .iter()
            .take_while(|c| c.is_ascii_digit())
            .count();
        let r = rrd::num::strtol(s, 10);
        (digits > 0).then_some((r.value, space + sign + digits))
    };
    let (n, used) = int(b).ok_or(FAILED)?;
    let rest = b[used..].strip_prefix(':').ok_or(FAILED)?;
    let op = *rest.as_bytes().first().ok_or(FAILED)?;
    let after = rest.get(1..).ok_or(FAILED)?;
    let (k, _) = int(after).ok_or(FAILED)?;
    if !matches!(op, b'+' | b'-' | b'=') {
        let c = rest.chars().next().unwrap_or(' ');
        return Err(format!("{FAILED}: invalid operation: {c}"));
    }
    // C's int.
    let (n, k) = (n as i32 as i64, k as i32 as i64);
    Ok((n, op, k))
}

/// Apply `ch` to `rrd` (its options already applied), `step`: a `--step` given with them.
/// Nothing changes unless all of it can be made.
/// `name`: the file name as given, which rrdtool hashes for a Holt-Winters archive added
/// (its smoothing row).
pub(crate) fn apply(
    rrd: &mut Rrd,
    ch: &Changes,
    step: Option<&str>,
    name: &str,
) -> Result<(), String> {
    // A new step first: the rest is made on the RRD as it leaves it.
    let scale = match step.map(rrd::num::atol) {
        Some(s) if s > 0 => {
            let old = rrd.schema.step;
            if !old.is_multiple_of(s as u64) || old / s as u64 <= 1 {
                return Err(
                    "invalid 'newstep' parameter. The newsize must divide the old \
                            step parameter without a remainder."
                        .into(),
                );
            }
            old / s as u64
        }
        _ => 1,
    };
    if scale != 1 && rrd.hw.is_some() {
        return Err(
            "ringlet does not change the step of an RRD with Holt-Winters archives \
                    (rrdtool 1.7.2 gives them more than one PDP a row, which its updates \
                    do not consolidate)"
                .into(),
        );
    }
    let mut old = (*rrd.schema).clone();
    old.step /= scale;
    for r in &mut old.rra {
        r.pdp_cnt *= scale;
    }
    let old_cdp: Vec<CdpPrep> = (rrd.cdp.iter())
        .map(|c| CdpPrep {
            unkn_pdp_cnt: c.unkn_pdp_cnt * scale,
            ..c.clone()
        })
        .collect();
    // Names: the kept data sources, then those added; a name twice is refused.
    let kept: Vec<usize> = (0..old.ds.len())
        .filter(|&i| !ch.del.contains(&old.ds[i].name.as_str()))
        .collect();
    let mut names: Vec<&str> = kept.iter().map(|&i| old.ds[i].name.as_str()).collect();
    for b in &ch.add {
        let n = b.bytes().take_while(|&c| is_name_char(c)).count();
        let name = &b[..n];
        if n > 0 && b[n..].starts_with(':') {
            if names.contains(&name) {
                return Err(format!("Duplicate DS name: {name}"));
            }
            names.push(name);
        }
    }
    if kept.len() + ch.add.len() == 0 {
        return Err(
            "ringlet does not delete every data source of an RRD (rrdtool 1.7.2 \
                    fails with 'Cannot allocate memory')"
                .into(),
        );
    }
    let hash = rrd::create::fnv_hash(name);
    let parsed = (ch.add_rra.iter())
        .map(|b| {
            parse_rra_any(b, old.step, hash)
                .map(|(d, _)| d)
                .map_err(|e| e.msg)
        })
        .collect::<Result<Vec<_>, _>>()?;
    let mut ds: Vec<DsDef> = kept.iter().map(|&i| old.ds[i].clone()).collect();
    for b in &ch.add {
        let d = parse_ds(b, &ds).map_err(|e| e.msg)?;
        ds.push(d);
    }
    // A kept COMPUTE reads data sources by position in rrdtool's file.
    let old_names: Vec<&str> = old.ds.iter().map(|d| d.name.as_str()).collect();
    for d in &ds[..kept.len()] {
        if let (DsType::Compute, Some(expr)) = (d.kind, &d.rpn) {
            let prog = rrd::rpn::compile_compute(expr, &old_names).map_err(|e| e.msg)?;
            let name_at = |names: &[DsDef]| {
                prog.to_cdef_string(&|j| names.get(j).map_or("\0".into(), |d| d.name.clone()))
            };
            if name_at(&old.ds) != name_at(&ds) {
                return Err(format!(
                    "ringlet does not make this change: COMPUTE data source '{}' would read \
                     other data sources than it names ({expr}; rrdtool 1.7.2 keeps their \
                     positions)",
                    d.name
                ));
            }
        }
    }
    // The archives kept, and their rows.
    let mut first: Vec<Option<(u8, i64)>> = vec![None; old.rra.len()];
    for &(n, op, k) in &ch.rows {
        if let Some(f) = usize::try_from(n).ok().and_then(|n| first.get_mut(n)) {
            f.get_or_insert((op, k));
        }
    }
    let mut rras: Vec<(usize, u64)> = Vec::new();
    for (i, r) in old.rra.iter().enumerate() {
        let rows = r.row_cnt as i128;
        let want = match first[i] {
            None => rows,
            Some((b'+', k)) => rows + k as i128,
            Some((b'-', k)) => rows - k as i128,
            Some((_, k)) => k as i128,
        };
        if want <= 0 {
            continue;
        }
        if want > (1 << 40) {
            return Err(format!(
                "ringlet does not make archive {i} {want} rows long"
            ));
        }
        rras.push((i, want as u64));
    }
    let mut schema = old.clone();
    schema.ds = ds;
    schema.rra = rras
        .iter()
        .map(|&(i, n)| {
            let mut r = old.rra[i].clone();
            r.row_cnt = n;
            r
        })
        .collect();
    // Each archive added after those kept, and after a HWPREDICT or MHWPREDICT alone the
    // four rrdtool adds (handle_dependent_rras).
    for def in parsed {
        schema.rra.push(def);
        rrd::create::add_contingent(&mut schema.rra, hash).map_err(|e| e.msg)?;
    }
    let new_rras: Vec<rrd::schema::RraDef> = schema.rra[rras.len()..].to_vec();
    if schema.rra.is_empty() {
        return Err(
            "ringlet does not remove every archive of an RRD (rrdtool 1.7.2 leaves a \
                    file it cannot read)"
                .into(),
        );
    }
    if !schema.spans_fit() {
        return Err("ringlet does not make an archive span more than it can hold".into());
    }
    let values = (schema.rra.iter()).try_fold(0u64, |acc, r| {
        (r.row_cnt.checked_mul(schema.ds.len() as u64)).and_then(|v| acc.checked_add(v))
    });
    if values.is_none_or(|v| v > rrd::create::MAX_VALUES) {
        return Err(format!(
            "ringlet does not make an RRD of more than {} values (as create)",
            rrd::create::MAX_VALUES
        ));
    }
    // rrdtool 1.7.2 keeps each Holt-Winters archive's rra-num as it was: an archive removed
    // before one leaves it depending on another.
    schema.check_hw().map_err(|e| {
        format!(
            "ringlet does not make this change: {} afterwards (rrdtool 1.7.2 does not \
             renumber the archives they depend on)",
            e.trim_start_matches("corrupt RRA definition: ")
        )
    })?;
    let (was, would) = (rrd::rrdfile::version(&old), rrd::rrdfile::version(&schema));
    if was != would {
        return Err(format!(
            "ringlet does not make this change: the file's version would change from {was} \
             to {would} (rrdtool 1.7.2 keeps the version where a DCOUNTER, DDERIVE or \
             MHWPREDICT, or a smoothing window, needs another)"
        ));
    }
    // The state.
    let (old_cnt, new_cnt) = (old.ds.len(), schema.ds.len());
    let added = new_cnt - kept.len();
    let last = rrd.last_up;
    let step = old.step as i64;
    let map: Vec<Option<usize>> = (0..new_cnt).map(|k| kept.get(k).copied()).collect();
    let mut pdp: Vec<PdpPrep> = kept.iter().map(|&i| rrd.pdp[i].clone()).collect();
    pdp.extend((0..added).map(|_| PdpPrep {
        last_ds: "U".into(),
        unkn_sec_cnt: last.rem_euclid(step) as u64,
        val: 0.0,
    }));
    // rrdtool's first CDP state of an archive: its value unknown, and the PDPs of the row
    // so far unknown too (those of the PDP's unknown seconds' start).
    // (rrdtool's init_cdp: a Holt-Winters archive's but DEVPREDICT's value and unknown PDPs
    // stay 0, and its slots are set as at create.)
    let fresh = |r: &rrd::schema::RraDef, p: &PdpPrep| {
        if r.cf.is_hw() && r.cf != rrd::schema::Cf::DevPredict {
            return CdpPrep {
                val: 0.0,
                unkn_pdp_cnt: 0,
                primary: 0.0,
                secondary: 0.0,
            };
        }
        CdpPrep {
            val: DNAN,
            unkn_pdp_cnt: ((last - p.unkn_sec_cnt as i64).rem_euclid(step * r.pdp_cnt as i64)
                / step) as u64,
            primary: 0.0,
            secondary: 0.0,
        }
    };
    let any_hw = schema.rra.iter().any(|r| r.cf.is_hw());
    let mut slots: Vec<[u64; 6]> = Vec::new();
    let mut cdp = Vec::with_capacity(schema.rra.len() * new_cnt);
    // Each archive's values, oldest row first (the flat order of rrdtool's file).
    let mut values: Vec<Vec<f64>> = Vec::with_capacity(schema.rra.len());
    let mut readers: Vec<_> = rrd.rra.iter().map(|r| r.rows.reader()).collect();
    for (o, &(i, n)) in rras.iter().enumerate() {
        cdp.extend(kept.iter().map(|&d| old_cdp[i * old_cnt + d].clone()));
        cdp.extend((kept.len()..new_cnt).map(|d| fresh(&schema.rra[o], &pdp[d])));
        if any_hw {
            slots.extend(kept.iter().map(|&d| rrd.hw_slots(i, d)));
            let init = rrd::HwState::initial(schema.rra[o].cf);
            slots.extend(std::iter::repeat_n(init, added));
        }
        // The rows added (filled from the archives where they can be), then as many of
        // the old as are kept.
        let rc = old.rra[i].row_cnt;
        let keep = rc.min(n);
        let mut vals = vec![DNAN; ((n - keep) as usize) * new_cnt];
        let span = step * old.rra[i].pdp_cnt as i64;
        for r in 0..(n - keep) as usize {
            let end = last - last.rem_euclid(span) - (n as i64 - 1 - r as i64) * span;
            let row = &mut vals[r * new_cnt..(r + 1) * new_cnt];
            fill(
                rrd,
                &old,
                &mut readers,
                old.rra[i].cf,
                end - span + 1,
                end,
                &map,
                row,
            );
        }
        let cur = rrd.rra[i].cur_row;
        let reader = &mut readers[i];
        for k in rc - keep..rc {
            let row = reader.row(((cur + 1 + k) % rc) as usize);
            vals.extend(kept.iter().map(|&d| row[d]));
            vals.extend(std::iter::repeat_n(DNAN, added));
        }
        values.push(vals);
    }
    // Archives added: filled as rows added are, their CDP state from the finest archive of
    // AVERAGE or of one PDP a row ([`first_cdp`]).
    for r in &new_rras {
        let span = step * r.pdp_cnt as i64;
        let n = r.row_cnt as usize;
        let mut vals = vec![DNAN; n * new_cnt];
        for (k, row) in vals.chunks_mut(new_cnt).enumerate() {
            let end = last - last.rem_euclid(span) - (n - 1 - k) as i64 * span;
            fill(
                rrd,
                &old,
                &mut readers,
                r.cf,
                end - span + 1,
                end,
                &map,
                row,
            );
        }
        values.push(vals);
        let before: u64 = schema.rra[..values.len() - 1]
            .iter()
            .map(|r| r.row_cnt)
            .sum();
        for d in 0..new_cnt {
            let mut c = fresh(r, &pdp[d]);
            let mut chosen = false;
            if let Some(m) = map[d] {
                // rrdtool reads the current value at a row count taken for a value count.
                let at = before as usize + new_cnt * (n - 1) + d;
                let curr = flat(&values, at);
                chosen = first_cdp(rrd, &old, &old_cdp, &mut readers, r, m, curr, &mut c);
            }
            cdp.push(c);
            if any_hw {
                // init_cdp's slots; zeroed with the rest of the state where a candidate
                // gave it (rrdtool then starts a Holt-Winters archive's coefficients at 0).
                slots.push(if chosen {
                    [0; 6]
                } else {
                    rrd::HwState::initial(r.cf)
                });
            }
        }
    }
    rrd.schema = Arc::new(schema);
    rrd.pdp = pdp;
    rrd.cdp = cdp;
    rrd.hw = any_hw.then(|| {
        Box::new(rrd::HwState {
            scratch: slots,
            smooth_due: false,
        })
    });
    rrd.rra = values
        .iter()
        .map(|v| RraData {
            cur_row: (v.len() / new_cnt) as u64 - 1,
            rows: Rows::from_values(new_cnt, v),
        })
        .collect();
    Ok(())
}

/// Value `at` of the archives' values laid end to end.
fn flat(values: &[Vec<f64>], mut at: usize) -> f64 {
    for v in values {
        if at < v.len() {
            return v[at];
        }
        at -= v.len();
    }
    DNAN
}

/// The archives that may fill one of CF `cf`, in the order rrdtool tries them: those of its
/// CF or AVERAGE, fewest PDPs a row first, then most rows.
fn candidates(old: &rrd::schema::Schema, cf: rrd::schema::Cf) -> Vec<usize> {
    let mut c: Vec<usize> = (0..old.rra.len())
        .filter(|&c| old.rra[c].cf == cf || old.rra[c].cf == rrd::schema::Cf::Average)
        .collect();
    c.sort_by(|&a, &b| {
        let (a, b) = (&old.rra[a], &old.rra[b]);
        a.pdp_cnt.cmp(&b.pdp_cnt).then(b.row_cnt.cmp(&a.row_cnt))
    });
    c
}

/// The row of archive `c` that holds second `t`, as rows before its current one (rrdtool's
/// reckoning: `t` rounded up to a row's end, the last update not).
fn past(rrd: &Rrd, old: &rrd::schema::Schema, c: usize, t: i64) -> Option<i64> {
    let slot = (old.rra[c].pdp_cnt * old.step) as i64;
    let rows = old.rra[c].row_cnt as i64;
    let last = rrd.last_up;
    let t = t + (slot - t.rem_euclid(slot)) % slot;
    if t > last || t <= last - rows * slot {
        return None;
    }
    Some((last - t) / slot).filter(|&p| p < rows)
}

/// The CDP state rrdtool 1.7.2 gives data source `m` (its column before) of an archive
/// added, `c` as `fresh` made it: from the first candidate of AVERAGE or of one PDP a row,
/// the state zeroed, the primary value `curr`; the secondary the candidate's own primary if
/// the current row of the new archive starts after the candidate's newest row, else the
/// candidate's value before that start; and the candidate's values since then consolidated
/// into the value (from 0, not unknown: a MIN is at most 0). Returns whether a candidate
/// gave it.
#[allow(clippy::too_many_arguments)]
fn first_cdp(
    rrd: &Rrd,
    old: &rrd::schema::Schema,
    old_cdp: &[CdpPrep],
    readers: &mut [rrd::rows::RowReader<'_>],
    r: &rrd::schema::RraDef,
    m: usize,
    curr: f64,
    c: &mut CdpPrep,
) -> bool {
    use rrd::schema::Cf;
    let Some(ch) = candidates(old, r.cf)
        .into_iter()
        .find(|&k| old.rra[k].pdp_cnt == 1 || old.rra[k].cf == Cf::Average)
    else {
        return false;
    };
    let last = rrd.last_up;
    let slot = (r.pdp_cnt * old.step) as i64;
    let delta = last % slot;
    let end = if delta != 0 {
        last - delta + slot
    } else {
        last
    };
    *c = CdpPrep {
        val: 0.0,
        unkn_pdp_cnt: 0,
        primary: curr,
        secondary: 0.0,
    };
    let rows = old.rra[ch].row_cnt as i64;
    let cur = rrd.rra[ch].cur_row as i64;
    let mut at = |p: i64| readers[ch].row((cur - p).rem_euclid(rows) as usize)[m];
    match past(rrd, old, ch, end - slot + 1) {
        None => c.secondary = old_cdp[ch * old.ds.len() + m].primary,
        Some(ps) => {
            c.secondary = at(ps + 1);
            for p in (0..=ps).rev() {
                let v = at(p);
                if v.is_nan() {
                    c.unkn_pdp_cnt += 1;
                    continue;
                }
                c.val = match r.cf {
                    Cf::Average => c.val + v,
                    Cf::Min if v < c.val => v,
                    Cf::Max if v > c.val => v,
                    Cf::Min | Cf::Max => c.val,
                    // LAST, and the Holt-Winters CFs (update_cdp's default).
                    _ => v,
                };
            }
        }
    }
    true
}

/// Fill a row added to an archive of CF `cf` (the seconds `start..=end`) from the RRD's archives as
/// they were, as rrdtool 1.7.2 does: those of its CF or AVERAGE (itself included), fewest
/// PDPs a row first, then most rows; each data source (`map`: its column before, None for
/// one added) from the first archive with a known value in its rows over that time, which
/// it consolidates with the row's CF (AVERAGE: the mean; LAST: the last). The rows an archive
/// gives are rrdtool's: from the row holding `start` through the one holding `end`, but with
/// `end` past the last update, up to the row before the current one, and with `start` before
/// the oldest, from the current row on, each counted by places in the ring (those are its
/// quirks; they depend on where the ring starts, as rrdtool's do: ringlet's ring starts at
/// row 0 at create, rrdtool's at a random row).
#[allow(clippy::too_many_arguments)]
fn fill(
    rrd: &Rrd,
    old: &rrd::schema::Schema,
    readers: &mut [rrd::rows::RowReader<'_>],
    cf: rrd::schema::Cf,
    start: i64,
    end: i64,
    map: &[Option<usize>],
    row: &mut [f64],
) {
    use rrd::schema::Cf;
    if cf.is_hw() {
        // rrdtool fills rows of the consolidating CFs only.
        return;
    }
    for c in candidates(old, cf) {
        let slot = (old.rra[c].pdp_cnt * old.step) as i64;
        let rows = old.rra[c].row_cnt as i64;
        let cur = rrd.rra[c].cur_row as i64;
        // The rows read, by their place in the ring (rrdtool counts them so: from the row
        // holding `start` through the one holding `end`; with `end` past the last update,
        // through the row before the current one, that row's number taken modulo the row
        // count as an unsigned number (row 0 gives the last place a `u64` of all ones
        // leaves); with `start` before the oldest, from the current row on).
        let at = |p: i64| (cur - p).rem_euclid(rows);
        let (from, to) = match (past(rrd, old, c, start), past(rrd, old, c, end)) {
            (Some(s), Some(e)) => (at(s), at(e)),
            (Some(s), None) if cur >= 1 => (at(s), cur - 1),
            (Some(s), None) => (at(s), (u64::MAX % rows as u64) as i64),
            (None, Some(e)) => (cur, at(e)),
            (None, None) => continue,
        };
        let n = to - from + 1;
        let n = if n < 0 { n + rows } else { n };
        let places: Vec<usize> = (0..n).map(|k| ((from + k) % rows) as usize).collect();
        for (k, slot_v) in row.iter_mut().enumerate() {
            let Some(d) = map[k] else { continue };
            if !slot_v.is_nan() {
                continue;
            }
            let (mut acc, mut covered, mut out) = (f64::NAN, 0i64, DNAN);
            for &p in &places {
                let v = readers[c].row(p)[d];
                if v.is_nan() {
                    continue;
                }
                out = match cf {
                    Cf::Average => {
                        acc = if acc.is_nan() {
                            v * slot as f64
                        } else {
                            acc + v * slot as f64
                        };
                        covered += slot;
                        acc / covered as f64
                    }
                    Cf::Min => {
                        acc = if !acc.is_nan() && acc < v { acc } else { v };
                        acc
                    }
                    Cf::Max => {
                        acc = if !acc.is_nan() && acc > v { acc } else { v };
                        acc
                    }
                    // LAST (the Holt-Winters CFs are never filled: above).
                    _ => v,
                };
            }
            *slot_v = out;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scanned(args: &[&str]) -> Result<usize, String> {
        let v: Vec<String> = args.iter().map(|s| s.to_string()).collect();
        scan(&v).map(|c| c.del.len() + c.add.len() + c.rows.len())
    }

    #[test]
    fn arguments_are_read_as_rrdtool_reads_them() {
        assert_eq!(rows_change("0:+2"), Ok((0, b'+', 2)));
        assert_eq!(rows_change(" 1:- 3x"), Ok((1, b'-', 3)));
        assert_eq!(rows_change("00:=7"), Ok((0, b'=', 7)));
        for bad in ["0:4", "0:+x", "0:=", "x:+1", "0+1", ":+1", "0x:+1", "0:"] {
            assert_eq!(
                rows_change(bad),
                Err("Failed to parse RRA# command".into()),
                "{bad}"
            );
        }
        assert_eq!(
            rows_change("0:*5"),
            Err("Failed to parse RRA# command: invalid operation: *".into())
        );
        assert_eq!(
            rows_change("0: +1"),
            Err("Failed to parse RRA# command: invalid operation:  ".into())
        );
        assert_eq!(scanned(&["DEL:a", "DELRRA:x", "RRA#0:+1"]), Ok(3));
        assert_eq!(
            scanned(&["DELRRA:-1", "bogus"]),
            Err("DELRRA requires a non-negative, integer argument".into())
        );
        assert_eq!(
            scanned(&["bogus", "DELRRA:-1"]),
            Err("unparseable argument: bogus".into())
        );
        assert_eq!(scanned(&["DEL:"]), Err("unparseable argument: DEL:".into()));
    }
}
