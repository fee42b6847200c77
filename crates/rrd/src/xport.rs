//! `rrdtool xport`: DEF/CDEF/VDEF/SHIFT/XPORT statements to rrdtool 1.7.2's XML or JSON export.
//!
//! [`xport`] parses the arguments (options `-s/--start`, `-e/--end`, `-m/--maxrows`, `--step`,
//! `-t/--showtime`, `--json`, `--enumds`, `-d/--daemon` accepted and ignored), fetches every
//! DEF through [`crate::fetch::fetch`] at the graph resolution, reduces a DEF whose archive is
//! finer than asked (rrdgraph's `reduce_data`), evaluates CDEFs with [`crate::rpn`] and prints
//! the XPORTed series on one common grid, exactly as the binary does. Facts learnt from the
//! binary (no source read):
//!
//! * Graph step: the larger of `--step` and `(end-start)/maxrows` (integer division). A DEF
//!   fetches at its own `:step=` when given, else at the graph step; when the fetched
//!   archive's step is finer than the larger of the two, the DEF is reduced by
//!   `ceil(that/step)`: groups aligned to multiples of the new step, consolidated with the
//!   DEF's CF (or `:reduce=`) over known values; a group reaching outside the fetched range
//!   is unknown.
//! * Output step: the gcd of the XPORTed series' steps (a CDEF's step is the gcd of its
//!   inputs'). First row at `floor(start/step)*step + step`, last at `ceil(end/step)*step`.
//! * The value of a series at output time t is its row covering `(T-step, T]` around t.
//! * A CDEF is computed on its own grid (gcd of its inputs' steps, from the latest input start
//!   to the earliest input end). The RPN module evaluates plain operators; this module supplies
//!   TIME/LTIME (grid time, UTC), STEPWIDTH, COUNT, PREV, PREV(x), NEWDAY/NEWWEEK/NEWMONTH/
//!   NEWYEAR, `x,w,TREND`/`TRENDNAN` and PREDICT/PREDICTSIGMA/PREDICTPERC (literal arguments).
//!   Where rrdtool reads outside its arrays (a TREND/PREDICT window or PREV(x) beyond the
//!   source's rows) ringlet gives 0 or leaves the value out, not rrdtool's stray bytes.
//! * VDEFs (module `vdef`) reduce a whole series to one value that later CDEFs use as a
//!   constant; XPORTing one is an error, as in rrdtool.
//! * `SHIFT:x:secs` moves x later by whole rows (secs truncated toward zero to a multiple of
//!   x's step) for the statements after it and the export; CDEF grids ignore shifts.
//! * Graph elements add to the meta data: LINE/AREA/STACK legends (AREA's prefixed by two
//!   spaces), COMMENT and TEXTALIGN under `<gprints>`, HRULE/VRULE under `<rules>` (always
//!   printed as 0, as rrdtool does); TICK adds nothing; PRINT/GPRINT are refused for now.
//! * Legends are printed raw (no XML or JSON escaping); JSON prints NaN and infinities as
//!   `null` (XML: `NaN`, `inf`, `-inf`) and, with
//!   `--showtime`, the time as a quoted string.
//! * Numbers print through rrdtool's own `%0.10e` ([`crate::fmt::rrd_exp`]).

use crate::fetch::{fetch, FetchResult};
use crate::fmt::push_rrd_exp;
use crate::parsetime::MIN_TIME;
use crate::{Cf, Rrd, RrdError};
use std::fmt::Write;

mod args;
mod cdef;
mod vdef;

use args::{parse_element, parse_options, start_end};
use cdef::{eval_cdef, Cdef};
use vdef::{eval_vdef, Vdef};

/// One DEF statement.
#[derive(Debug, Clone)]
struct Def {
    file: String,
    ds: String,
    cf: Cf,
    reduce: Option<Cf>,
    step: Option<i64>,
    start: Option<String>,
    end: Option<String>,
}

#[derive(Debug)]
enum Kind {
    Def(Def),
    Cdef(Cdef),
    Vdef(Vdef),
    /// `SHIFT:target:seconds`, in statement order: later statements (and the export) see
    /// the target series that much later in time. Has no name.
    Shift {
        target: usize,
        secs: i64,
    },
}

/// A named series (DEF or CDEF) with its data once computed, or a VDEF's value.
#[derive(Debug)]
struct Var {
    name: String,
    kind: Kind,
    /// DEF: fetched (and reduced) rows. `start` is exclusive: row i ends at start+(i+1)*step.
    start: i64,
    step: i64,
    rows: Vec<f64>,
    /// Seconds SHIFTs have moved `start` so far.
    shift: i64,
}

/// What graph elements contribute to the export's meta data: `<gprints>` entries (LINE,
/// AREA/STACK legends, COMMENT, TEXTALIGN) and `<rules>` (HRULE, VRULE), in statement order.
#[derive(Debug, Default)]
struct Decor {
    gprints: Vec<(&'static str, String)>,
    rules: Vec<(&'static str, String)>,
    /// `line` or `area`: what a STACK continues.
    last_draw: Option<&'static str>,
}

fn err(msg: impl Into<String>) -> RrdError {
    RrdError::new(msg)
}

/// `rrdtool xport <args>`; `now` is the wall clock for time specifications and `load` opens
/// the RRD a DEF names (its error text is passed through, e.g. `opening 'x.rrd': No such file
/// or directory`).
pub fn xport(
    args: &[String],
    now: i64,
    load: &mut dyn FnMut(&str) -> Result<Rrd, RrdError>,
) -> Result<String, RrdError> {
    let (opts, elements) = parse_options(args)?;
    if opts.maxrows < 10 {
        return Err(err("maxrows below 10 rows"));
    }
    let mut vars: Vec<Var> = Vec::new();
    let mut exports: Vec<(usize, String)> = Vec::new();
    let mut decor = Decor::default();
    for el in &elements {
        parse_element(el, &mut vars, &mut exports, &mut decor)?;
    }
    if elements.is_empty() {
        return Err(err("can't make an xport without contents"));
    }
    let (start, end) = start_end(opts.start.as_deref(), opts.end.as_deref(), now)?;
    if start > end {
        return Err(err(format!(
            "start ({}) should be less than end ({})",
            start, end
        )));
    }
    if exports.is_empty() {
        return Err(err("no XPORT found, nothing to do"));
    }
    let pixel = (end - start) / opts.maxrows;
    let too_early = |t: i64| {
        err(format!(
            "the first entry to fetch should be after 1980 ({})",
            t
        ))
    };
    if start < MIN_TIME {
        return Err(too_early(start));
    }
    for v in vars.iter_mut() {
        let Kind::Def(def) = &v.kind else {
            continue;
        };
        let def = def.clone();
        let (ds, de) = match (&def.start, &def.end) {
            (None, None) => (start, end),
            (s, e) => {
                let (ds, de) = start_end(
                    Some(s.as_deref().unwrap_or(&start.to_string())),
                    Some(e.as_deref().unwrap_or(&end.to_string())),
                    now,
                )?;
                (ds, de)
            }
        };
        // The graph step is the larger of `--step` and one pixel ((end-start)/maxrows). The
        // archive is chosen for the DEF's `:step=` when given, else for the graph step; the
        // data are then reduced to the largest of the two.
        let graph_step = opts.step.max(pixel).max(1);
        let ask = def.step.unwrap_or(graph_step);
        let want = ask.max(graph_step);
        if ds < MIN_TIME {
            return Err(too_early(ds));
        }
        let rrd = load(&def.file)?;
        // As rrdtool: the fetch first (no archive of the CF is its error), then the name.
        let fr = fetch(&rrd, def.cf, ds, de, ask as u64, false)?;
        let col = rrd
            .schema
            .ds_index(&def.ds)
            .ok_or_else(|| err(format!("No DS called '{}' in '{}'", def.ds, def.file)))?;
        let (s, st, rows) = reduce(&fr, col, want, def.reduce.unwrap_or(def.cf))?;
        v.start = s;
        v.step = st;
        v.rows = rows;
    }
    // CDEFs, VDEFs and SHIFTs, in statement order (inputs come first); a CDEF on its own grid.
    for i in 0..vars.len() {
        match vars[i].kind {
            Kind::Cdef(_) => {
                let (s, st, rows) = eval_cdef(&vars, i, now)?;
                let v = &mut vars[i];
                v.start = s;
                v.step = st;
                v.rows = rows;
            }
            Kind::Vdef(d) => {
                let src = &vars[d.var];
                let value = eval_vdef(d.func, &src.rows, src.step);
                if let Kind::Vdef(d) = &mut vars[i].kind {
                    d.value = value;
                }
            }
            Kind::Shift { target, secs } => {
                // Whole rows only, truncated toward zero (1234 s on 300 s rows is 1200 s).
                let step = vars[target].step.max(1);
                let by = secs / step * step;
                vars[target].start += by;
                vars[target].shift += by;
            }
            Kind::Def(_) => {}
        }
    }
    let step = exports
        .iter()
        .map(|(i, _)| vars[*i].step)
        .fold(0, gcd)
        .max(1);
    let first = start.div_euclid(step) * step + step;
    let last = end.div_euclid(step) * step + if end.rem_euclid(step) != 0 { step } else { 0 };
    let nrows = if last >= first {
        ((last - first) / step + 1) as usize
    } else {
        0
    };
    let legends: Vec<&str> = exports.iter().map(|(_, l)| l.as_str()).collect();
    let cols: Vec<usize> = exports.iter().map(|(i, _)| *i).collect();
    // Each row's values worked out as it is written: no table of the whole output (a
    // million rows were a vector each, more than the text).
    let grid = Grid {
        first,
        last,
        step,
        nrows,
        cols: &cols,
        vars: &vars,
        legends: &legends,
        decor: &decor,
    };
    Ok(if opts.json {
        format_json(&grid, opts.showtime)
    } else {
        format_xml(&grid, opts.showtime, opts.enumds)
    })
}

fn gcd(a: i64, b: i64) -> i64 {
    if b == 0 {
        a
    } else {
        gcd(b, a % b)
    }
}

/// The value of series `i` at time `t`: its row covering `(T-step, T]` around t, NaN outside.
fn value(vars: &[Var], i: usize, t: i64) -> f64 {
    let v = &vars[i];
    if let Kind::Vdef(d) = &v.kind {
        return d.value;
    }
    if v.step <= 0 || t <= v.start {
        return f64::NAN;
    }
    let idx = ((t - v.start + v.step - 1) / v.step - 1) as usize;
    v.rows.get(idx).copied().unwrap_or(f64::NAN)
}

/// rrdgraph's `reduce_data` on one column: to a step that is a multiple of the fetched one
/// and at least `want`. Returns (exclusive start, step, rows). Rows before the first and
/// after the last boundary of the new step are dropped and their groups left unknown; when
/// fewer rows remain than that (a range shorter than the new step), rrdtool's count goes
/// negative and it fails with its `SANITY CHECK` message, reproduced here.
fn reduce(
    fr: &FetchResult,
    col: usize,
    want: i64,
    cf: Cf,
) -> Result<(i64, i64, Vec<f64>), RrdError> {
    let step0 = fr.step as i64;
    let column: Vec<f64> = fr
        .rows()
        .map(|r| r.get(col).copied().unwrap_or(f64::NAN))
        .collect();
    if step0 <= 0 || want <= step0 {
        return Ok((fr.start, step0, column));
    }
    // rrdtool's factor is a C int from a double ceil; past INT_MAX the conversion gives
    // INT_MIN and the sanity check below fails with these numbers.
    let factor_f = (want as f64 / step0 as f64).ceil();
    if factor_f > f64::from(i32::MAX) {
        return Err(err(
            "SANITY CHECK: 2147483648 rows cannot be reduced by -2147483648 \n",
        ));
    }
    let factor = factor_f as i64;
    let step = step0 * factor;
    let end0 = fr.start + column.len() as i64 * step0;
    let skip_start = (fr.start.div_euclid(step) * step + step - fr.start) % step / step0;
    let skip_end = end0.rem_euclid(step) / step0;
    let kept = column.len() as i64 - skip_start - skip_end;
    if kept < 0 {
        let wrapped = kept as u64;
        if wrapped.checked_rem(factor as u64) != Some(0) {
            return Err(err(format!(
                "SANITY CHECK: {} rows cannot be reduced by {} \n",
                wrapped, factor
            )));
        }
        return Ok((fr.start.div_euclid(step) * step, step, Vec::new()));
    }
    let start = fr.start.div_euclid(step) * step;
    let end = end0.div_euclid(step) * step + if end0.rem_euclid(step) != 0 { step } else { 0 };
    let mut rows = Vec::with_capacity(((end - start) / step) as usize);
    let mut t_end = start + step;
    while t_end <= end {
        let lo = t_end - step;
        let v = if lo < fr.start || t_end > end0 {
            f64::NAN
        } else {
            let from = ((lo - fr.start) / step0) as usize;
            consolidate(&column[from..from + factor as usize], cf)
        };
        rows.push(v);
        t_end += step;
    }
    Ok((start, step, rows))
}

/// One reduced row from its known values.
fn consolidate(vals: &[f64], cf: Cf) -> f64 {
    let known = vals.iter().copied().filter(|v| !v.is_nan());
    // rrdtool's reduce_data: the Holt-Winters CFs but FAILURES average; a FAILURES row
    // holds a failure if any of its rows did.
    match cf {
        Cf::Average
        | Cf::HwPredict
        | Cf::MhwPredict
        | Cf::Seasonal
        | Cf::DevSeasonal
        | Cf::DevPredict => {
            let (sum, n) = known.fold((0.0, 0u32), |(s, n), v| (s + v, n + 1));
            if n == 0 {
                f64::NAN
            } else {
                sum / f64::from(n)
            }
        }
        Cf::Min => known.fold(f64::NAN, |m, v| if m.is_nan() || v < m { v } else { m }),
        Cf::Max | Cf::Failures => {
            known.fold(f64::NAN, |m, v| if m.is_nan() || v > m { v } else { m })
        }
        Cf::Last => vals
            .iter()
            .rev()
            .copied()
            .find(|v| !v.is_nan())
            .unwrap_or(f64::NAN),
    }
}

/// The export grid, ready to print.
struct Grid<'a> {
    first: i64,
    last: i64,
    step: i64,
    nrows: usize,
    /// The exported variables, in order.
    cols: &'a [usize],
    vars: &'a [Var],
    legends: &'a [&'a str],
    decor: &'a Decor,
}

impl Grid<'_> {
    /// Row `k`'s values, one an export.
    fn row(&self, k: usize) -> impl Iterator<Item = f64> + '_ {
        let t = self.first + k as i64 * self.step;
        self.cols.iter().map(move |&i| value(self.vars, i, t))
    }
}

fn format_xml(g: &Grid, showtime: bool, enumds: bool) -> String {
    let mut o = String::with_capacity(512 + g.nrows * (16 + g.legends.len() * 24));
    o.push_str("<?xml version=\"1.0\" encoding=\"ISO-8859-1\"?>\n\n<xport>\n  <meta>\n");
    o.push_str(&format!(
        "    <start>{}</start>\n    <end>{}</end>\n    <step>{}</step>\n    <rows>{}</rows>\n    <columns>{}</columns>\n    <legend>\n",
        g.first,
        g.last,
        g.step,
        g.nrows,
        g.legends.len()
    ));
    for l in g.legends {
        o.push_str(&format!("      <entry>{}</entry>\n", l));
    }
    o.push_str("    </legend>\n");
    for (section, entries) in [("gprints", &g.decor.gprints), ("rules", &g.decor.rules)] {
        if entries.is_empty() {
            continue;
        }
        o.push_str(&format!("    <{}>\n", section));
        for (tag, text) in entries.iter() {
            o.push_str(&format!("        <{}>{}</{}>\n", tag, text, tag));
        }
        o.push_str(&format!("    </{}>\n", section));
    }
    o.push_str("  </meta>\n  <data>\n");
    for k in 0..g.nrows {
        o.push_str("    <row>");
        if showtime {
            let _ = write!(o, "<t>{}</t>", g.first + k as i64 * g.step);
        }
        for (j, v) in g.row(k).enumerate() {
            if enumds {
                let _ = write!(o, "<v{j}>");
                push_rrd_exp(&mut o, v, 10);
                let _ = write!(o, "</v{j}>");
            } else {
                o.push_str("<v>");
                push_rrd_exp(&mut o, v, 10);
                o.push_str("</v>");
            }
        }
        o.push_str("</row>\n");
    }
    o.push_str("  </data>\n</xport>\n");
    o
}

fn format_json(g: &Grid, showtime: bool) -> String {
    let mut o = String::with_capacity(512 + g.nrows * (16 + g.legends.len() * 20));
    o.push_str("{ \"about\": \"RRDtool graph JSON output\",\n  \"meta\": {\n");
    o.push_str(&format!(
        "    \"start\": {},\n    \"end\": {},\n    \"step\": {},\n    \"legend\": [\n",
        g.first, g.last, g.step
    ));
    for (j, l) in g.legends.iter().enumerate() {
        let sep = if j + 1 < g.legends.len() { "," } else { "" };
        o.push_str(&format!("      \"{}\"{}\n", l, sep));
    }
    o.push_str("          ]\n");
    for (section, entries) in [("gprints", &g.decor.gprints), ("rules", &g.decor.rules)] {
        if entries.is_empty() {
            continue;
        }
        o.push_str(&format!("    ,\"{}\": [\n", section));
        let items: Vec<String> = entries
            .iter()
            .map(|(tag, text)| format!("        {{ \"{}\": \"{}\" }}", tag, text))
            .collect();
        o.push_str(&items.join(",\n"));
        o.push_str("\n        ]\n");
    }
    o.push_str("     },\n  \"data\": [\n");
    for k in 0..g.nrows {
        o.push_str("    [ ");
        if showtime {
            let _ = write!(o, "\"{}\",", g.first + k as i64 * g.step);
        }
        for (j, v) in g.row(k).enumerate() {
            if j > 0 {
                o.push_str(", ");
            }
            if v.is_finite() {
                push_rrd_exp(&mut o, v, 10);
            } else {
                o.push_str("null");
            }
        }
        o.push_str(if k + 1 < g.nrows { " ],\n" } else { " ]\n" });
    }
    o.push_str("  ]\n}\n");
    o
}

#[cfg(test)]
mod tests;
