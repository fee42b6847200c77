//! `rrdtool dump`: an RRD as rrdtool 1.7.2's XML text, byte for byte.
//!
//! [`dump_xml`] prints the header (`dtd`, `xsd` or `none`), the DS definitions with their PDP
//! state, and every archive with its CDP state and rows, oldest row first, each row with its
//! `<!-- YYYY-MM-DD HH:MM:SS UTC / epoch -->` comment. Numbers print through rrdtool's own
//! `%0.10e` ([`crate::fmt::rrd_exp`]), which differs from glibc's near rounding ties. Times in
//! comments are UTC only (rrdtool run with `TZ=UTC`).

use crate::fmt::{c_exp, push_i64, push_padded, push_rrd_exp, rrd_exp};
use crate::{DsType, Rrd};
use std::fmt::Write;

/// The XML header variants of `rrdtool dump -h`.
const HEAD_XML: &str = "<?xml version=\"1.0\" encoding=\"utf-8\"?>\n";
const HEAD_DTD: &str = "<!DOCTYPE rrd SYSTEM \"https://oss.oetiker.ch/rrdtool/rrdtool.dtd\">\n";
const ROOT_XSD: &str = "<rrd xmlns=\"https://oss.oetiker.ch/rrdtool/rrdtool-dump.xml\" \
xmlns:xsi=\"http://www.w3.org/2001/XMLSchema-instance\"\n\
\txsi:schemaLocation=\"https://oss.oetiker.ch/rrdtool/rrdtool-dump.xml \
https://oss.oetiker.ch/rrdtool/rrdtool-dump.xsd\">\n";

/// `rrdtool dump [-h header] file`. `header` is `"xsd"` or `"none"` (`-n`/`--no-header` is
/// `"none"`); anything else, like rrdtool, gives the default DTD header. Matching is exact:
/// rrdtool treats `-h XSD` as the default too.
pub fn dump_xml(rrd: &Rrd, header: &str) -> String {
    // A row is about 60 bytes of comment and tags and 24 a value.
    let rows: usize = rrd.schema.rra.iter().map(|r| r.row_cnt as usize).sum();
    let mut o = String::with_capacity(4096 + rows.saturating_mul(64 + 24 * rrd.ds_cnt()));
    match header {
        "none" => o.push_str("<!-- Round Robin Database Dump -->\n<rrd>\n"),
        "xsd" => {
            o.push_str(HEAD_XML);
            o.push_str("<!-- Round Robin Database Dump -->\n");
            o.push_str(ROOT_XSD);
        }
        _ => {
            o.push_str(HEAD_XML);
            o.push_str(HEAD_DTD);
            o.push_str("<!-- Round Robin Database Dump -->\n<rrd>\n");
        }
    }
    let schema = &rrd.schema;
    let _ = writeln!(
        o,
        "\t<version>{}</version>",
        crate::rrdfile::version(&rrd.schema)
    );
    let _ = writeln!(o, "\t<step>{}</step> <!-- Seconds -->", schema.step);
    let _ = writeln!(
        o,
        "\t<lastupdate>{}</lastupdate> <!-- {} UTC -->\n",
        rrd.last_up,
        utc_datetime(rrd.last_up)
    );
    for (ds, pdp) in schema.ds.iter().zip(&rrd.pdp) {
        o.push_str("\t<ds>\n");
        let _ = writeln!(o, "\t\t<name> {} </name>", ds.name);
        let _ = writeln!(o, "\t\t<type> {} </type>", ds.kind.name());
        if ds.kind == DsType::Compute {
            let _ = writeln!(o, "\t\t<cdef> {} </cdef>", ds.rpn.as_deref().unwrap_or(""));
        } else {
            let _ = writeln!(
                o,
                "\t\t<minimal_heartbeat>{}</minimal_heartbeat>",
                ds.heartbeat
            );
            let _ = writeln!(o, "\t\t<min>{}</min>", rrd_exp(ds.min, 10));
            let _ = writeln!(o, "\t\t<max>{}</max>", rrd_exp(ds.max, 10));
        }
        o.push_str("\n\t\t<!-- PDP Status -->\n");
        let _ = writeln!(o, "\t\t<last_ds>{}</last_ds>", pdp.last_ds);
        let _ = writeln!(o, "\t\t<value>{}</value>", rrd_exp(pdp.val, 10));
        let _ = writeln!(o, "\t\t<unknown_sec> {} </unknown_sec>", pdp.unkn_sec_cnt);
        o.push_str("\t</ds>\n\n");
    }
    let version4 = crate::rrdfile::version(&rrd.schema) != "0003";
    o.push_str("\t<!-- Round Robin Archives -->\n");
    let ds_cnt = rrd.ds_cnt();
    for (i, def) in schema.rra.iter().enumerate() {
        let span = schema.step * def.pdp_cnt;
        o.push_str("\t<rra>\n");
        let _ = writeln!(o, "\t\t<cf>{}</cf>", def.cf.name());
        let _ = writeln!(
            o,
            "\t\t<pdp_per_row>{}</pdp_per_row> <!-- {} seconds -->\n",
            def.pdp_cnt, span
        );
        o.push_str("\t\t<params>\n");
        params(&mut o, def, version4);
        o.push_str("\t\t</params>\n");
        o.push_str("\t\t<cdp_prep>\n");
        for ds in 0..ds_cnt {
            let c = rrd.cdp(i, ds);
            let _ = write!(
                o,
                "\t\t\t<ds>\n\
                 \t\t\t<primary_value>{}</primary_value>\n\
                 \t\t\t<secondary_value>{}</secondary_value>\n",
                rrd_exp(c.primary, 10),
                rrd_exp(c.secondary, 10),
            );
            cdp_fields(&mut o, rrd, i, ds);
            o.push_str("\t\t\t</ds>\n");
        }
        o.push_str("\t\t</cdp_prep>\n\t\t<database>\n");
        let end = rrd.rra_end(i);
        let span = span as i64;
        // Every row the archive keeps, oldest first (the ring read a chunk at a time).
        let oldest = end - (def.row_cnt as i64 - 1) * span;
        let mut vals = Vec::new();
        crate::fetch::push_archive_rows(rrd, i, oldest, def.row_cnt as usize, &mut vals);
        for k in 0..def.row_cnt as usize {
            let t = oldest + k as i64 * span;
            o.push_str("\t\t\t<!-- ");
            push_utc_datetime(&mut o, t);
            o.push_str(" UTC / ");
            push_i64(&mut o, t);
            o.push_str(" --> <row>");
            for v in &vals[k * ds_cnt..(k + 1) * ds_cnt] {
                o.push_str("<v>");
                push_rrd_exp(&mut o, *v, 10);
                o.push_str("</v>");
            }
            o.push_str("</row>\n");
        }
        o.push_str("\t\t</database>\n\t</rra>\n");
    }
    o.push_str("</rrd>\n");
    o
}

/// `YYYY-MM-DD HH:MM:SS` of a Unix time, in UTC (proleptic Gregorian).
pub fn utc_datetime(t: i64) -> String {
    let mut s = String::with_capacity(19);
    push_utc_datetime(&mut s, t);
    s
}

/// [`utc_datetime`] appended to `out` (a dump prints one a row).
pub fn push_utc_datetime(out: &mut String, t: i64) {
    let days = t.div_euclid(86_400);
    let secs = t.rem_euclid(86_400) as u64;
    let (y, m, d) = civil_from_days(days);
    if !(0..=9999).contains(&y) {
        use std::fmt::Write;
        let _ = write!(out, "{y:04}-");
    } else {
        push_padded(out, y as u64, 4);
        out.push('-');
    }
    push_padded(out, u64::from(m), 2);
    out.push('-');
    push_padded(out, u64::from(d), 2);
    out.push(' ');
    push_padded(out, secs / 3600, 2);
    out.push(':');
    push_padded(out, secs / 60 % 60, 2);
    out.push(':');
    push_padded(out, secs % 60, 2);
}

/// Days since 1970-01-01 to (year, month, day) (Howard Hinnant's algorithm).
pub fn civil_from_days(z: i64) -> (i64, u32, u32) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let y = yoe + era * 400;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    (if m <= 2 { y + 1 } else { y }, m, d)
}

/// An archive's `<params>` lines: xff, or the Holt-Winters parameters of its CF (the
/// smoothing window from file version 4). Plain `%0.10e`, as rrdtool prints them: a NaN
/// parameter (tune takes `nan`) is `nan` or `-nan` here, not the rows' `NaN`.
fn params(o: &mut String, def: &crate::schema::RraDef, version4: bool) {
    use crate::schema::Cf;
    let p = def.hw();
    match def.cf {
        Cf::HwPredict | Cf::MhwPredict => {
            let _ = writeln!(o, "\t\t<hw_alpha>{}</hw_alpha>", c_exp(p.alpha, 10));
            let _ = writeln!(o, "\t\t<hw_beta>{}</hw_beta>", c_exp(p.beta, 10));
        }
        Cf::Seasonal | Cf::DevSeasonal => {
            let _ = writeln!(
                o,
                "\t\t<seasonal_gamma>{}</seasonal_gamma>",
                c_exp(p.gamma, 10)
            );
            let _ = writeln!(
                o,
                "\t\t<seasonal_smooth_idx>{}</seasonal_smooth_idx>",
                p.smooth_idx
            );
            if version4 {
                let _ = writeln!(
                    o,
                    "\t\t<smoothing_window>{}</smoothing_window>",
                    c_exp(p.smoothing_window, 10)
                );
            }
        }
        Cf::Failures => {
            let _ = writeln!(o, "\t\t<delta_pos>{}</delta_pos>", c_exp(p.delta_pos, 10));
            let _ = writeln!(o, "\t\t<delta_neg>{}</delta_neg>", c_exp(p.delta_neg, 10));
            let _ = writeln!(o, "\t\t<window_len>{}</window_len>", p.window_len);
            let _ = writeln!(
                o,
                "\t\t<failure_threshold>{}</failure_threshold>",
                p.failure_threshold
            );
        }
        Cf::DevPredict => {}
        _ => {
            let _ = writeln!(o, "\t\t<xff>{}</xff>", c_exp(def.xff, 10));
            return;
        }
    }
    let _ = writeln!(
        o,
        "\t\t<dependent_rra_idx>{}</dependent_rra_idx>",
        p.dependent
    );
}

/// A CDP's fields after its primary and secondary values, by the archive's CF.
fn cdp_fields(o: &mut String, rrd: &Rrd, rra: usize, ds: usize) {
    use crate::schema::Cf;
    let c = rrd.cdp(rra, ds);
    let h = rrd.hw_slots(rra, ds);
    let f = |k: usize| rrd_exp(f64::from_bits(h[k]), 10);
    match rrd.schema.rra[rra].cf {
        Cf::HwPredict | Cf::MhwPredict => {
            let _ = write!(
                o,
                "\t\t\t<intercept>{}</intercept>\n\
                 \t\t\t<last_intercept>{}</last_intercept>\n\
                 \t\t\t<slope>{}</slope>\n\
                 \t\t\t<last_slope>{}</last_slope>\n\
                 \t\t\t<nan_count>{}</nan_count>\n\
                 \t\t\t<last_nan_count>{}</last_nan_count>\n",
                f(0),
                f(1),
                f(2),
                f(3),
                h[4],
                h[5]
            );
        }
        Cf::Seasonal | Cf::DevSeasonal => {
            let _ = write!(
                o,
                "\t\t\t<seasonal>{}</seasonal>\n\
                 \t\t\t<last_seasonal>{}</last_seasonal>\n\
                 \t\t\t<init_flag>{}</init_flag>\n",
                f(0),
                f(1),
                h[4]
            );
        }
        Cf::DevPredict => {}
        Cf::Failures => {
            let bytes = rrd.scratch_bytes(rra, ds);
            let n = (rrd.schema.rra[rra].hw().window_len as usize).min(bytes.len());
            o.push_str("\t\t\t<history>");
            for b in &bytes[..n] {
                // C's %d of a char.
                let _ = write!(o, "{}", *b as i8);
            }
            o.push_str("</history>\n");
        }
        _ => {
            let _ = write!(
                o,
                "\t\t\t<value>{}</value>\n\
                 \t\t\t<unknown_datapoints>{}</unknown_datapoints>\n",
                rrd_exp(c.val, 10),
                c.unkn_pdp_cnt
            );
        }
    }
}

#[cfg(test)]
mod tests;
