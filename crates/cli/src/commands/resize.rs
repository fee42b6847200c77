//! `resize FILE RRA GROW|SHRINK ROWS`: rrdtool 1.7.2's change of one archive's length, which
//! leaves the RRD as it was and writes the result to `resize.rrd` (in the current directory
//! for rrdtool; the series `resize.rrd` here, beside the one resized, as a name of the store).
//!
//! As rrdtool does it, in the archive's ring: GROW puts the new (unknown) rows right after
//! the current row, where the oldest were, so they read as older than anything kept; SHRINK
//! removes the rows after the current row, the oldest, wrapping to the ring's start. Every
//! other byte is the RRD's own. rrdtool 1.7.2 resizes only files of version 0003 (no
//! DCOUNTER or DDERIVE data source), and so does ringlet, with its text. The texts and their order are rrdtool's: the number of
//! arguments, GROW or SHRINK, at least one row, the file, the archive, and a shrink that
//! would leave no row. Numbers are read as C's `atol` reads them (`1x` is 1, `x` is 0).

use super::{Ctx, Outcome};
use crate::store;
use rrd::rows::Rows;

/// The name the result goes to.
pub const RESIZED: &str = "resize.rrd";

pub fn resize(ctx: &Ctx, args: &[String]) -> Outcome {
    let [given, rra, how, rows] = args else {
        return Outcome::err("wrong number of parameters");
    };
    let grow = match how.as_str() {
        "GROW" => true,
        "SHRINK" => false,
        _ => return Outcome::err("I can only GROW or SHRINK"),
    };
    let n = atol(rows);
    if n < 1 {
        return Outcome::err("Please grow or shrink with at least 1 row");
    }
    let n = n as u64;
    let name = match store::normalize(given) {
        Ok(n) => n,
        Err(e) => return Outcome::err(e),
    };
    let out_name = match store::normalize(RESIZED) {
        Ok(n) => n,
        Err(e) => return Outcome::err(e),
    };
    if let Err(e) = ctx.may_create(&out_name) {
        return Outcome::err(e);
    }
    let names = [name, out_name.clone()];
    super::writing(ctx, &names, given, true, |st| {
        let mut rrd = match super::load(st, given) {
            Ok(r) => r.clone(),
            Err(e) => return Outcome::err(e),
        };
        let version = rrd::rrdfile::version(&rrd.schema);
        if version != "0003" {
            return Outcome::err(format!("Do not know how to handle RRD version {version}"));
        }
        // The archive's number as an unsigned long: a negative one is no archive.
        let i = atol(rra) as u64;
        if i >= rrd.rra.len() as u64 {
            return Outcome::err("no such RRA in this RRD");
        }
        let i = i as usize;
        let row_cnt = rrd.schema.rra[i].row_cnt;
        if !grow && n >= row_cnt {
            return Outcome::err("This RRA is not that big");
        }
        let ds_cnt = rrd.ds_cnt().max(1);
        let cur = rrd.rra[i].cur_row as usize;
        let rc = row_cnt as usize;
        let old = rrd.rra[i].rows.to_vec();
        let row = |k: usize| &old[k * ds_cnt..(k + 1) * ds_cnt];
        let (vals, new_cur, new_cnt) = if grow {
            let mut vals = Vec::with_capacity((rc + n as usize) * ds_cnt);
            (0..=cur).for_each(|k| vals.extend_from_slice(row(k)));
            vals.extend(std::iter::repeat_n(rrd::num::DNAN, n as usize * ds_cnt));
            (cur + 1..rc).for_each(|k| vals.extend_from_slice(row(k)));
            (vals, cur, row_cnt + n)
        } else {
            // The n rows after the current one, wrapping to the start.
            let gone = |k: usize| (k + rc - cur - 1) % rc < n as usize;
            let mut vals = Vec::with_capacity((rc - n as usize) * ds_cnt);
            (0..rc)
                .filter(|&k| !gone(k))
                .for_each(|k| vals.extend_from_slice(row(k)));
            let before_cur = (0..cur).filter(|&k| gone(k)).count();
            (vals, cur - before_cur, row_cnt - n)
        };
        std::sync::Arc::make_mut(&mut rrd.schema).rra[i].row_cnt = new_cnt;
        rrd.rra[i].cur_row = new_cur as u64;
        rrd.rra[i].rows = Rows::from_values(rrd.ds_cnt(), &vals);
        if let Err(e) = st.create(&out_name, rrd, true) {
            return Outcome::err(e.to_string());
        }
        ctx.wrote(&out_name);
        Outcome::default()
    })
}

/// C's `atol`: white space, a sign, digits; 0 without digits.
pub(crate) fn atol(s: &str) -> i64 {
    rrd::num::atol(s)
}
