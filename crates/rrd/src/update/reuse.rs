//! One UPDATE value (`<time>:<v1>:...`) read into a reusable `rrd::Sample`.
//!
//! Ingest reads every value once to check it and again when the queue is applied to the
//! store, so this is the daemon's hottest parser. [`read`] gives exactly what
//! `parse_update_arg(schema, v, None, (0, 0))` gives; for the common form (a
//! plain number as time, one field per input DS) it refills `out`'s strings in place instead
//! of allocating new ones, and reuses the time rrdcached's check already read.

use super::{parse_update_arg, Sample};
use crate::{DsType, RrdError, Schema};

/// rrdcached's check of a value: the number before the first `:` (None if there is no `:`
/// or no number there; `N` is not a number).
pub fn stamp(v: &str) -> Option<f64> {
    v.split_once(':')
        .and_then(|(ts, _)| crate::num::strtodbl(ts).ok())
        .filter(|t| t.is_finite())
}

/// Read `v` into `out` (`stamp`: [`stamp`]`(v)`, known to be Some). On error `out` is left in
/// an unspecified state.
pub fn read(schema: &Schema, v: &str, stamp: f64, out: &mut Sample) -> Result<(), RrdError> {
    if !fill(schema, v, stamp, out) {
        *out = parse_update_arg(schema, v, None, (0, 0))?;
    }
    Ok(())
}

/// The common form without allocating; false when `v` takes parse_update_arg's other paths
/// (the `@` form, a wrong number of fields).
fn fill(schema: &Schema, v: &str, stamp: f64, out: &mut Sample) -> bool {
    if v.contains('@') {
        return false;
    }
    let Some((_, rest)) = v.split_once(':') else {
        return false;
    };
    let want = schema.input_ds().count();
    if rest.split(':').take(want + 1).count() != want {
        return false;
    }
    out.values.truncate(schema.ds.len());
    out.values.resize_with(schema.ds.len(), String::new);
    let mut fields = rest.split(':');
    for (slot, d) in out.values.iter_mut().zip(&schema.ds) {
        slot.clear();
        match d.kind {
            DsType::Compute => slot.push('U'),
            _ => slot.push_str(fields.next().unwrap_or("U")),
        }
    }
    // rrdtool's get_time_from_reading with now = 0: a negative time stays as it is.
    let sec = stamp.floor();
    out.time = c_long(sec);
    out.usec = c_long((stamp - sec) * 1e6);
    true
}

/// C's `(long)x` on x86-64: truncation, and `i64::MIN` for NaN and out-of-range values.
fn c_long(x: f64) -> i64 {
    const LIMIT: f64 = 9_223_372_036_854_775_808.0; // 2^63
    if x.is_nan() || !(-LIMIT..LIMIT).contains(&x) {
        i64::MIN
    } else {
        x as i64
    }
}

/// An empty sample to read into.
pub fn scratch() -> Sample {
    Sample {
        time: 0,
        usec: 0,
        values: Vec::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn schema(ds: &[&str]) -> Schema {
        let mut args: Vec<String> = vec!["x.rrd".into(), "--start".into(), "1790000000".into()];
        args.extend(ds.iter().map(|s| s.to_string()));
        args.push("RRA:AVERAGE:0.5:1:10".into());
        crate::create::parse_create_with(&args, 1_790_000_000, &mut |_| None, &mut |_| false)
            .expect("create")
            .schema
    }

    #[test]
    fn reads_exactly_what_parse_update_arg_reads() {
        let schemas = [
            schema(&["DS:a:GAUGE:600:U:U"]),
            schema(&[
                "DS:a:COUNTER:600:U:U",
                "DS:c:COMPUTE:a,2,*",
                "DS:b:DERIVE:600:U:U",
            ]),
        ];
        let values = [
            "1790000010:5",
            "1790000010.25:5",
            "1790000010.999999:-1.5e3",
            "1790000010:U",
            "1790000010:",
            "1790000010:1:2",
            "1790000010:1:2:3",
            "1790000010:a:b",
            "1790000010@5",
            "1790000010:5@6",
            "0x10:1:2",
            "1e9:1",
            "9.3e18:1",
            "-5:1",
            "1790000010:1::",
        ];
        let mut out = scratch();
        for s in &schemas {
            for v in values {
                let Some(st) = stamp(v) else { continue };
                let want = parse_update_arg(s, v, None, (0, 0));
                let got = read(s, v, st, &mut out).map(|()| out.clone());
                assert_eq!(got, want, "{v}");
            }
        }
    }

    #[test]
    fn the_common_form_refills_in_place() {
        let s = schema(&["DS:a:GAUGE:600:U:U"]);
        let mut out = scratch();
        read(&s, "1790000010:12345", 1_790_000_010.0, &mut out).unwrap();
        let p = out.values[0].as_ptr();
        read(&s, "1790000020:6", 1_790_000_020.0, &mut out).unwrap();
        assert_eq!(out.values, ["6"]);
        assert_eq!(out.values[0].as_ptr(), p, "no new allocation");
        assert_eq!((out.time, out.usec), (1_790_000_020, 0));
    }

    #[test]
    fn rrdcacheds_check_wants_a_number_before_a_colon() {
        assert_eq!(stamp("12:3"), Some(12.0));
        assert_eq!(stamp("N:3"), None);
        assert_eq!(stamp("12"), None);
        assert_eq!(stamp("12x:3"), None);
        assert_eq!(stamp("inf:3"), None);
    }
}
