//! Golden tests of update parsing and consolidation against rrdtool 1.7.2.
//!
//! Every expected value below was produced by the real binary (commands in the comments;
//! `TZ=UTC LC_ALL=C`, rows read with `rrdtool updatev`, python3-rrdtool fetch, or the file
//! bytes). The differential script `crates/rrd/examples/replay.rs` + random scenarios checks
//! far more; these pin the named quirks.

use super::*;
use crate::num::DNAN;
use crate::schema::{Cf, DsDef, RraDef};

fn ds(name: &str, kind: DsType, hb: u64, min: f64, max: f64) -> DsDef {
    DsDef {
        name: name.into(),
        kind,
        heartbeat: hb,
        min,
        max,
        rpn: None,
    }
}

fn compute(name: &str, rpn: &str) -> DsDef {
    DsDef {
        name: name.into(),
        kind: DsType::Compute,
        heartbeat: 0,
        min: f64::NAN,
        max: f64::NAN,
        rpn: Some(rpn.into()),
    }
}

fn rra(cf: Cf, xff: f64, pdp_cnt: u64, row_cnt: u64) -> RraDef {
    RraDef::new(cf, xff, pdp_cnt, row_cnt)
}

/// Runs `args` through parse + apply; returns the updatev lines (errors as `ERR <text>`).
fn run(rrd: &mut Rrd, args: &[&str]) -> Vec<String> {
    let mut out = Vec::new();
    for a in args {
        let s = match parse_update_arg(&rrd.schema, a, None, (0, 0)) {
            Ok(s) => s,
            Err(e) => {
                out.push(format!("ERR {}", e.msg));
                continue;
            }
        };
        let mut rows = Vec::new();
        let r = rrd.apply(&s, &mut |w| rows.push(w));
        for w in rows {
            let d = &rrd.schema.rra[w.rra];
            let v = if w.value.is_nan() {
                "NaN".to_string()
            } else {
                crate::fmt::c_exp(w.value, 10)
            };
            out.push(format!(
                "[{}]RRA[{}][{}]DS[{}] = {}",
                w.time,
                d.cf.name(),
                d.pdp_cnt,
                rrd.schema.ds[w.ds].name,
                v
            ));
        }
        if let Err(e) = r {
            out.push(format!("ERR {}", e.error().msg));
        }
    }
    out
}

const T: i64 = 1_700_000_000;

// Reference §3.5 worked example. rrdtool create x.rrd --start T --step 300
//   DS:x:GAUGE:600:0:100 RRA:AVERAGE:0.5:1:10 RRA:AVERAGE:0.5:3:10 RRA:MAX:0.5:3:10
//   RRA:LAST:0.5:3:10; rrdtool updatev x.rrd T+100:10 ... (T = 1700000100 - 100, aligned)
#[test]
fn worked_example_gauge_heartbeat_split_and_updatev_times() {
    let t = 1_699_999_200; // multiple of 900
    let schema = Schema {
        step: 300,
        ds: vec![ds("x", DsType::Gauge, 600, 0.0, 100.0)],
        rra: vec![
            rra(Cf::Average, 0.5, 1, 10),
            rra(Cf::Average, 0.5, 3, 10),
            rra(Cf::Max, 0.5, 3, 10),
            rra(Cf::Last, 0.5, 3, 10),
        ],
    };
    let mut r = Rrd::new(schema, t);
    let u = |d: i64, v: &str| format!("{}:{}", t + d, v);
    let out = run(
        &mut r,
        &[
            &u(100, "10"),
            &u(400, "20"),
            &u(700, "40"),
            &u(1000, "U"),
            &u(1100, "50"),
            &u(2000, "60"),
        ],
    );
    let f =
        |d: i64, cf: &str, n: u64, v: &str| format!("[{}]RRA[{}][{}]DS[x] = {}", t + d, cf, n, v);
    assert_eq!(
        out,
        vec![
            f(300, "AVERAGE", 1, "1.6666666667e+01"),
            f(600, "AVERAGE", 1, "3.3333333333e+01"),
            f(900, "AVERAGE", 1, "4.0000000000e+01"),
            f(900, "AVERAGE", 3, "3.0000000000e+01"),
            f(900, "MAX", 3, "4.0000000000e+01"),
            f(900, "LAST", 3, "4.0000000000e+01"),
            // gap 900 > heartbeat 600: the left PDP (T+1200) still comes out as 50,
            f(1200, "AVERAGE", 1, "5.0000000000e+01"),
            // then T+1500 and T+1800 unknown; updatev prints T+1800 as T+2100 (#899).
            f(1500, "AVERAGE", 1, "NaN"),
            f(2100, "AVERAGE", 1, "NaN"),
            f(1800, "AVERAGE", 3, "NaN"),
            f(1800, "MAX", 3, "NaN"),
            f(1800, "LAST", 3, "NaN"),
        ]
    );
}

// rrdtool create c.rrd --start T-10 --step 10 DS:c:COUNTER:100:U:U RRA:LAST:0:1:5
// update T:4294967290, T+10:5 -> 1.0 (wrap adds 2^32-1, so the delta is 10, not 11);
// 64-bit: 18446744073709551610 -> 5 gives 0.0.
#[test]
fn counter_wraps_at_2_pow_32_minus_1_and_2_pow_64() {
    let schema = Schema {
        step: 10,
        ds: vec![ds("c", DsType::Counter, 100, f64::NAN, f64::NAN)],
        rra: vec![rra(Cf::Last, 0.0, 1, 5)],
    };
    let mut r = Rrd::new(schema.clone(), T - 10);
    run(
        &mut r,
        &[&format!("{}:4294967290", T), &format!("{}:5", T + 10)],
    );
    assert_eq!(r.value_at(0, 0, T + 10), 1.0);
    let mut r = Rrd::new(schema, T - 10);
    run(
        &mut r,
        &[
            &format!("{}:18446744073709551610", T),
            &format!("{}:5", T + 10),
        ],
    );
    assert_eq!(r.value_at(0, 0, T + 10), 0.0);
}

// Reference §3.8: c1,c2 COUNTER; T+60:100:100, T+120:200:abc fails after c1's last_ds
// changed, T+180:300:300 -> c1 rate (300-200)/60... stored as rrdtool computes it.
#[test]
fn bad_counter_value_fails_after_earlier_ds_changed() {
    const T0: i64 = 1_699_999_980; // multiple of 60
    let schema = Schema {
        step: 60,
        ds: vec![
            ds("c1", DsType::Counter, 600, f64::NAN, f64::NAN),
            ds("c2", DsType::Counter, 600, f64::NAN, f64::NAN),
        ],
        rra: vec![rra(Cf::Average, 0.5, 1, 10)],
    };
    let mut r = Rrd::new(schema, T0);
    let s1 = parse_update_arg(&r.schema, &format!("{}:100:100", T0 + 60), None, (0, 0)).unwrap();
    r.apply(&s1, &mut |_| {}).unwrap();
    let s2 = parse_update_arg(&r.schema, &format!("{}:200:abc", T0 + 120), None, (0, 0)).unwrap();
    let e = r.apply(&s2, &mut |_| {}).unwrap_err();
    assert_eq!(
        e,
        ApplyError::Partial(RrdError::new("not a simple unsigned integer: 'abc'"))
    );
    assert_eq!(r.pdp[0].last_ds, "200");
    assert_eq!(r.pdp[1].last_ds, "100");
    assert_eq!(r.last_up, T0 + 60);
    let s3 = parse_update_arg(&r.schema, &format!("{}:300:300", T0 + 180), None, (0, 0)).unwrap();
    r.apply(&s3, &mut |_| {}).unwrap();
    assert_eq!(r.value_at(0, 0, T0 + 180), 100.0 / 120.0);
}

#[test]
fn time_not_after_last_update_is_rejected() {
    let schema = Schema {
        step: 10,
        ds: vec![ds("a", DsType::Gauge, 100, f64::NAN, f64::NAN)],
        rra: vec![rra(Cf::Last, 0.0, 1, 3)],
    };
    let mut r = Rrd::new(schema, T);
    let out = run(
        &mut r,
        &[
            &format!("{}:1", T),
            &format!("{}.5:1", T),
            &format!("{}.5:1", T),
        ],
    );
    assert_eq!(
        out,
        vec![
            format!("ERR illegal attempt to update using time {T} when last update time is {T} (minimum one second step)"),
            format!("ERR illegal attempt to update using time {T} when last update time is {T} (minimum one second step)"),
        ]
    );
    assert_eq!((r.last_up, r.last_up_usec), (T, 500_000));
}

// rrdtool create a.rrd --start T-200 --step 10 DS:a:GAUGE:100:U:U DS:b:GAUGE:100:U:U ...
// rrdtool update a.rrd -- <arg>   (texts after "ERROR: a.rrd: ")
#[test]
fn update_argument_errors_match_rrdtool() {
    let schema = Schema {
        step: 10,
        ds: vec![
            ds("a", DsType::Gauge, 100, f64::NAN, f64::NAN),
            ds("b", DsType::Gauge, 100, f64::NAN, f64::NAN),
            compute("c", "a,b,+"),
        ],
        rra: vec![rra(Cf::Last, 0.0, 1, 1)],
    };
    let err = |a: &str| {
        parse_update_arg(&schema, a, None, (1795304716, 0))
            .unwrap_err()
            .msg
    };
    assert_eq!(
        err("1700000000:1:2:3"),
        "found extra data on update argument: 3"
    );
    assert_eq!(
        err("1700000000:1:2:3:4"),
        "found extra data on update argument: 3:4"
    );
    assert_eq!(
        err("1700000000:1::"),
        "found extra data on update argument: "
    );
    assert_eq!(err("Nx:1:2:3"), "found extra data on update argument: 3");
    assert_eq!(
        err("1700000000:1"),
        "expected 2 data source readings (got 1) from 1700000000"
    );
    assert_eq!(
        err("abc:1"),
        "expected 2 data source readings (got 1) from abc"
    );
    assert_eq!(
        err("1700000000@1"),
        "expected 2 data source readings (got 1) from 1700000000"
    );
    assert_eq!(
        err("N:1:2@x"),
        "expected 2 data source readings (got 1) from N:1:2"
    );
    assert_eq!(
        err("1700000000"),
        "expected timestamp not found in data source from 1700000000"
    );
    assert_eq!(
        err("N"),
        "expected timestamp not found in data source from N"
    );
    assert_eq!(
        err("Nx:1:2"),
        "error while parsing time in get_time_from_reading - Cannot convert 'Nx' to float"
    );
    assert_eq!(
        err(":1:2"),
        "error while parsing time in get_time_from_reading - Cannot convert '' to float"
    );
    assert_eq!(
        err("1700000000x:1:2"),
        "error while parsing time in get_time_from_reading - Converted '1700000000x' to 1700000000.000000, but cannot convert 'x'"
    );
    let ok = |a: &str| parse_update_arg(&schema, a, None, (1795304716, 250_000)).unwrap();
    assert_eq!(ok("1700000000.5:1:2").usec, 500_000);
    assert_eq!(ok("N:1:2").time, 1795304716);
    assert_eq!(ok("N:1:2").usec, 250_000);
    assert_eq!(ok("-5:1:2").time, 1795304711);
    assert_eq!(ok("1700000000@@1:2").values, vec!["@1", "2", "U"]);
    // 1e400 is inf; C's (time_t) of it is i64::MIN, refused later as an illegal time.
    assert_eq!(ok("1e400:1:2").time, i64::MIN);
    assert_eq!(ok("1e-400:1:2").time, 0);
}

// rrdtool update a.rrd -t <tmpl> -- T:1:2 (a, b GAUGE, c COMPUTE); errors have no file prefix.
#[test]
fn template_errors_and_mapping_match_rrdtool() {
    let schema = Schema {
        step: 10,
        ds: vec![
            ds("a", DsType::Gauge, 100, f64::NAN, f64::NAN),
            ds("b", DsType::Gauge, 100, f64::NAN, f64::NAN),
            compute("c", "a,b,+"),
        ],
        rra: vec![rra(Cf::Last, 0.0, 1, 1)],
    };
    assert_eq!(parse_template(&schema, "b:a"), Ok(vec![1, 0]));
    assert_eq!(parse_template(&schema, "c"), Ok(vec![2]));
    for (t, e) in [
        ("x", "unknown DS name 'x'"),
        ("", "unknown DS name ''"),
        ("a:", "unknown DS name ''"),
        ("b::a", "unknown DS name ''"),
        ("a:a:b:b", "tmplt contains more DS definitions than RRD"),
    ] {
        assert_eq!(parse_template(&schema, t), Err(RrdError::new(e)), "{}", t);
    }
    let tmpl = parse_template(&schema, "b:a").unwrap();
    let s = parse_update_arg(&schema, "1700000000:1:2", Some(&tmpl), (0, 0)).unwrap();
    assert_eq!(s.values, vec!["2", "1", "U"]);
}

// Fresh file, then one update completing one PDP: the pdp_cnt=1 archive sets only its
// primary value (secondary stays 0.0 from create); two PDPs set both.
// rrdtool create a.rrd --start T --step 10 DS:a:GAUGE:100:U:U DS:b:GAUGE:100:U:U
//   RRA:LAST:0:1:10 RRA:AVERAGE:0:2:10; update T+10:5:6 T+20:U:7; read the file bytes.
#[test]
fn one_pdp_archives_keep_secondary_when_one_pdp_completes() {
    let schema = Schema {
        step: 10,
        ds: vec![
            ds("a", DsType::Gauge, 100, f64::NAN, f64::NAN),
            ds("b", DsType::Gauge, 100, f64::NAN, f64::NAN),
        ],
        rra: vec![rra(Cf::Last, 0.0, 1, 10), rra(Cf::Average, 0.0, 2, 10)],
    };
    let mut r = Rrd::new(schema, T);
    run(
        &mut r,
        &[&format!("{}:5:6", T + 10), &format!("{}:U:7", T + 20)],
    );
    let c = |ra, d| r.cdp(ra, d).clone();
    assert_eq!(c(0, 0).primary.to_bits(), DNAN.to_bits());
    assert_eq!(c(0, 0).secondary, 0.0);
    assert_eq!((c(0, 1).primary, c(0, 1).secondary), (7.0, 0.0));
    assert_eq!(c(1, 0).val, 0.0);
    assert_eq!((c(1, 1).primary, c(1, 1).secondary), (6.5, 7.0));
    run(&mut r, &[&format!("{}:8:9", T + 40)]);
    assert_eq!((r.cdp(0, 1).primary, r.cdp(0, 1).secondary), (9.0, 9.0));
}

// Relative (negative) times: now + time, with `now` fixed through an LD_PRELOAD shim that
// makes gettimeofday return (1700000000, usec): FIX_SEC=1700000000 FIX_USEC=<usec>
// rrdtool update a.rrd -- "<rel>:1"; last_up and last_up_usec read from the file.
#[test]
fn relative_times_resolve_like_rrdtool() {
    let schema = Schema {
        step: 10,
        ds: vec![ds("a", DsType::Gauge, 1000, f64::NAN, f64::NAN)],
        rra: vec![rra(Cf::Last, 0.0, 1, 1)],
    };
    let cases: &[(&str, i64, i64, i64)] = &[
        ("-0.5", 0, 1699999999, 500000),
        ("-0.5", 1, 1699999999, 500000),
        ("-0.5", 999999, 1700000000, 499999),
        ("-0.5", 123456, 1699999999, 623456),
        ("-0.5", 941611, 1700000000, 441611),
        ("-0.5", 7, 1699999999, 500006),
        ("-0.1", 0, 1699999999, 900000),
        ("-0.1", 1, 1699999999, 900001),
        ("-0.1", 999999, 1700000000, 899999),
        ("-0.1", 123456, 1700000000, 23456),
        ("-0.1", 941611, 1700000000, 841611),
        ("-0.1", 7, 1699999999, 900007),
        ("-1e-7", 0, 1700000000, 0),
        ("-1e-7", 1, 1700000000, 0),
        ("-1e-7", 999999, 1700000000, 999999),
        ("-1e-7", 123456, 1700000000, 123456),
        ("-1e-7", 941611, 1700000000, 941611),
        ("-1e-7", 7, 1700000000, 6),
        ("-0.000001", 0, 1699999999, 999999),
        ("-0.000001", 1, 1700000000, 0),
        ("-0.000001", 999999, 1700000000, 999998),
        ("-0.000001", 123456, 1700000000, 123455),
        ("-0.000001", 941611, 1700000000, 941610),
        ("-0.000001", 7, 1700000000, 5),
        ("-0.0000015", 0, 1699999999, 999998),
        ("-0.0000015", 1, 1699999999, 999999),
        ("-0.0000015", 999999, 1700000000, 999997),
        ("-0.0000015", 123456, 1700000000, 123454),
        ("-0.0000015", 941611, 1700000000, 941609),
        ("-0.0000015", 7, 1700000000, 5),
        ("-3.3333333", 0, 1699999996, 666666),
        ("-3.3333333", 1, 1699999996, 666667),
        ("-3.3333333", 999999, 1699999997, 666665),
        ("-3.3333333", 123456, 1699999996, 790122),
        ("-3.3333333", 941611, 1699999997, 608277),
        ("-3.3333333", 7, 1699999996, 666673),
    ];
    for &(rel, now_usec, sec, usec) in cases {
        let s = parse_update_arg(&schema, &format!("{}:1", rel), None, (T, now_usec)).unwrap();
        assert_eq!(
            (s.time, s.usec),
            (sec, usec),
            "{} at usec {}",
            rel,
            now_usec
        );
    }
}

// rrdtool update a.rrd -- "<time>@1:2" with the clock fixed at 1700003600.000005
// (LD_PRELOAD shim); last_up from the file, errors after "ERROR: a.rrd: ".
#[test]
fn at_style_times_match_rrdtool() {
    let schema = Schema {
        step: 10,
        ds: vec![
            ds("a", DsType::Gauge, 100, f64::NAN, f64::NAN),
            ds("b", DsType::Gauge, 100, f64::NAN, f64::NAN),
        ],
        rra: vec![rra(Cf::Last, 0.0, 1, 1)],
    };
    let now = (1_700_003_600, 5);
    let at = |a: &str| parse_update_arg(&schema, a, None, now).map(|s| (s.time, s.usec));
    assert_eq!(at("now-1h@1:2"), Ok((1_700_000_000, 0)));
    assert_eq!(at("1700000000@1:2"), Ok((1_700_000_000, 0)));
    assert_eq!(at("N@1:2"), Ok((1_700_003_600, 0)));
    assert_eq!(at("-5@1:2"), Ok((1_700_003_595, 0)));
    assert_eq!(at("noon yesterday@1:2"), Ok((1_699_876_800, 0)));
    let err = |a: &str| at(a).unwrap_err().msg;
    assert_eq!(
        err("end-5@1:2"),
        "specifying time relative to the 'start' or 'end' makes no sense here: end-5"
    );
    assert_eq!(
        err("start+5@1:2"),
        "specifying time relative to the 'start' or 'end' makes no sense here: start+5"
    );
    assert_eq!(err("xyz@1:2"), "ds time: xyz: unparsable time: xyz");
    assert_eq!(err("@1:2"), "ds time: : unparsable time: ");
    // rrdtool: "ds time: 1700000000.5: unparsable trailing text: '....5'" (parsetime's text).
}

// Every DS type but GAUGE/COUNTER, all four CFs with 1 and 3 PDPs per row, xff, min/max
// clamps, U, sub-second times, a gap over the heartbeat:
// rrdtool create g.rrd --start 1699999800 --step 60 DS:ab:ABSOLUTE:120:0:1000
//   DS:dc:DCOUNTER:120:U:U DS:dd:DDERIVE:120:-5:5 DS:de:DERIVE:120:U:U
//   DS:cp:COMPUTE:ab,dc,+,2,/ RRA:AVERAGE:0.5:1:10 RRA:MIN:0.5:3:5 RRA:MAX:0.34:3:5
//   RRA:LAST:0:3:5
// rrdtool updatev g.rrd <each argument>; final state bits read from the file.
#[test]
fn mixed_types_and_cfs_match_rrdtool_updatev_and_state() {
    let schema = Schema {
        step: 60,
        ds: vec![
            ds("ab", DsType::Absolute, 120, 0.0, 1000.0),
            ds("dc", DsType::DCounter, 120, f64::NAN, f64::NAN),
            ds("dd", DsType::DDerive, 120, -5.0, 5.0),
            ds("de", DsType::Derive, 120, f64::NAN, f64::NAN),
            compute("cp", "ab,dc,+,2,/"),
        ],
        rra: vec![
            rra(Cf::Average, 0.5, 1, 10),
            rra(Cf::Min, 0.5, 3, 5),
            rra(Cf::Max, 0.34, 3, 5),
            rra(Cf::Last, 0.0, 3, 5),
        ],
    };
    let mut r = Rrd::new(schema, 1_699_999_800);
    let out = run(
        &mut r,
        &[
            "1699999830.25:100:5.5:-3.5:-3",
            "1699999861.5:50:3.5:1.25:-13",
            "1699999890:U:4.5:2.5:7",
            "1699999950.75:60:10.25:U:U",
            "1700000000:1e3:11.5:9.5:20",
            "1700000060:7:12:9:21",
            "1700000400.5:5:13:9.5:22",
            "1700000500:4:14:9.25:23",
        ],
    );
    let want: &[&str] = &[
        "[1699999860]RRA[AVERAGE][1]DS[ab] = 2.4600000000e+00",
        "[1699999860]RRA[AVERAGE][1]DS[dc] = NaN",
        "[1699999860]RRA[AVERAGE][1]DS[dd] = 1.5073333333e-01",
        "[1699999860]RRA[AVERAGE][1]DS[de] = -3.1733333333e-01",
        "[1699999860]RRA[AVERAGE][1]DS[cp] = NaN",
        "[1699999920]RRA[AVERAGE][1]DS[ab] = 1.0009259259e+00",
        "[1699999920]RRA[AVERAGE][1]DS[dc] = 6.5076375811e-02",
        "[1699999920]RRA[AVERAGE][1]DS[dd] = 4.9266666667e-02",
        "[1699999920]RRA[AVERAGE][1]DS[de] = -2.4000000000e-01",
        "[1699999920]RRA[AVERAGE][1]DS[cp] = 5.3300115087e-01",
        "[1699999920]RRA[MIN][3]DS[ab] = 1.0009259259e+00",
        "[1699999920]RRA[MIN][3]DS[dc] = NaN",
        "[1699999920]RRA[MIN][3]DS[dd] = 4.9266666667e-02",
        "[1699999920]RRA[MIN][3]DS[de] = -3.1733333333e-01",
        "[1699999920]RRA[MIN][3]DS[cp] = NaN",
        "[1699999920]RRA[MAX][3]DS[ab] = 2.4600000000e+00",
        "[1699999920]RRA[MAX][3]DS[dc] = NaN",
        "[1699999920]RRA[MAX][3]DS[dd] = 1.5073333333e-01",
        "[1699999920]RRA[MAX][3]DS[de] = -2.4000000000e-01",
        "[1699999920]RRA[MAX][3]DS[cp] = NaN",
        "[1699999920]RRA[LAST][3]DS[ab] = NaN",
        "[1699999920]RRA[LAST][3]DS[dc] = NaN",
        "[1699999920]RRA[LAST][3]DS[dd] = NaN",
        "[1699999920]RRA[LAST][3]DS[de] = NaN",
        "[1699999920]RRA[LAST][3]DS[cp] = NaN",
        "[1699999980]RRA[AVERAGE][1]DS[ab] = 1.0404649997e+01",
        "[1699999980]RRA[AVERAGE][1]DS[dc] = 6.0881326899e-02",
        "[1699999980]RRA[AVERAGE][1]DS[dd] = NaN",
        "[1699999980]RRA[AVERAGE][1]DS[de] = NaN",
        "[1699999980]RRA[AVERAGE][1]DS[cp] = 5.2327656619e+00",
        "[1700000040]RRA[AVERAGE][1]DS[ab] = 6.8459672871e+00",
        "[1700000040]RRA[AVERAGE][1]DS[dc] = 1.4015792442e-02",
        "[1700000040]RRA[AVERAGE][1]DS[dd] = -8.3333333333e-03",
        "[1700000040]RRA[AVERAGE][1]DS[de] = 1.6666666667e-02",
        "[1700000040]RRA[AVERAGE][1]DS[cp] = 3.4299915398e+00",
        "[1700000100]RRA[AVERAGE][1]DS[ab] = 1.1666666667e-01",
        "[1700000100]RRA[AVERAGE][1]DS[dc] = 8.3333333333e-03",
        "[1700000100]RRA[AVERAGE][1]DS[dd] = -8.3333333333e-03",
        "[1700000100]RRA[AVERAGE][1]DS[de] = 1.6666666667e-02",
        "[1700000100]RRA[AVERAGE][1]DS[cp] = 6.2500000000e-02",
        "[1700000100]RRA[MIN][3]DS[ab] = 1.1666666667e-01",
        "[1700000100]RRA[MIN][3]DS[dc] = 8.3333333333e-03",
        "[1700000100]RRA[MIN][3]DS[dd] = -8.3333333333e-03",
        "[1700000100]RRA[MIN][3]DS[de] = 1.6666666667e-02",
        "[1700000100]RRA[MIN][3]DS[cp] = 6.2500000000e-02",
        "[1700000100]RRA[MAX][3]DS[ab] = 1.0404649997e+01",
        "[1700000100]RRA[MAX][3]DS[dc] = 6.0881326899e-02",
        "[1700000100]RRA[MAX][3]DS[dd] = -8.3333333333e-03",
        "[1700000100]RRA[MAX][3]DS[de] = 1.6666666667e-02",
        "[1700000100]RRA[MAX][3]DS[cp] = 5.2327656619e+00",
        "[1700000100]RRA[LAST][3]DS[ab] = 1.1666666667e-01",
        "[1700000100]RRA[LAST][3]DS[dc] = 8.3333333333e-03",
        "[1700000100]RRA[LAST][3]DS[dd] = NaN",
        "[1700000100]RRA[LAST][3]DS[de] = NaN",
        "[1700000100]RRA[LAST][3]DS[cp] = 6.2500000000e-02",
        "[1700000160]RRA[AVERAGE][1]DS[ab] = NaN",
        "[1700000160]RRA[AVERAGE][1]DS[dc] = NaN",
        "[1700000160]RRA[AVERAGE][1]DS[dd] = NaN",
        "[1700000160]RRA[AVERAGE][1]DS[de] = NaN",
        "[1700000160]RRA[AVERAGE][1]DS[cp] = NaN",
        "[1700000280]RRA[AVERAGE][1]DS[ab] = NaN",
        "[1700000280]RRA[AVERAGE][1]DS[dc] = NaN",
        "[1700000280]RRA[AVERAGE][1]DS[dd] = NaN",
        "[1700000280]RRA[AVERAGE][1]DS[de] = NaN",
        "[1700000280]RRA[AVERAGE][1]DS[cp] = NaN",
        "[1700000340]RRA[AVERAGE][1]DS[ab] = NaN",
        "[1700000340]RRA[AVERAGE][1]DS[dc] = NaN",
        "[1700000340]RRA[AVERAGE][1]DS[dd] = NaN",
        "[1700000340]RRA[AVERAGE][1]DS[de] = NaN",
        "[1700000340]RRA[AVERAGE][1]DS[cp] = NaN",
        "[1700000400]RRA[AVERAGE][1]DS[ab] = NaN",
        "[1700000400]RRA[AVERAGE][1]DS[dc] = NaN",
        "[1700000400]RRA[AVERAGE][1]DS[dd] = NaN",
        "[1700000400]RRA[AVERAGE][1]DS[de] = NaN",
        "[1700000400]RRA[AVERAGE][1]DS[cp] = NaN",
        "[1700000460]RRA[AVERAGE][1]DS[ab] = NaN",
        "[1700000460]RRA[AVERAGE][1]DS[dc] = NaN",
        "[1700000460]RRA[AVERAGE][1]DS[dd] = NaN",
        "[1700000460]RRA[AVERAGE][1]DS[de] = NaN",
        "[1700000460]RRA[AVERAGE][1]DS[cp] = NaN",
        "[1700000280]RRA[MIN][3]DS[ab] = NaN",
        "[1700000280]RRA[MIN][3]DS[dc] = NaN",
        "[1700000280]RRA[MIN][3]DS[dd] = NaN",
        "[1700000280]RRA[MIN][3]DS[de] = NaN",
        "[1700000280]RRA[MIN][3]DS[cp] = NaN",
        "[1700000280]RRA[MAX][3]DS[ab] = NaN",
        "[1700000280]RRA[MAX][3]DS[dc] = NaN",
        "[1700000280]RRA[MAX][3]DS[dd] = NaN",
        "[1700000280]RRA[MAX][3]DS[de] = NaN",
        "[1700000280]RRA[MAX][3]DS[cp] = NaN",
        "[1700000280]RRA[LAST][3]DS[ab] = NaN",
        "[1700000280]RRA[LAST][3]DS[dc] = NaN",
        "[1700000280]RRA[LAST][3]DS[dd] = NaN",
        "[1700000280]RRA[LAST][3]DS[de] = NaN",
        "[1700000280]RRA[LAST][3]DS[cp] = NaN",
        "[1700000460]RRA[AVERAGE][1]DS[ab] = 3.9865996650e-02",
        "[1700000460]RRA[AVERAGE][1]DS[dc] = 9.9664991625e-03",
        "[1700000460]RRA[AVERAGE][1]DS[dd] = -2.4916247906e-03",
        "[1700000460]RRA[AVERAGE][1]DS[de] = 9.9664991625e-03",
        "[1700000460]RRA[AVERAGE][1]DS[cp] = 2.4916247906e-02",
        "[1700000460]RRA[MIN][3]DS[ab] = NaN",
        "[1700000460]RRA[MIN][3]DS[dc] = NaN",
        "[1700000460]RRA[MIN][3]DS[dd] = NaN",
        "[1700000460]RRA[MIN][3]DS[de] = NaN",
        "[1700000460]RRA[MIN][3]DS[cp] = NaN",
        "[1700000460]RRA[MAX][3]DS[ab] = NaN",
        "[1700000460]RRA[MAX][3]DS[dc] = NaN",
        "[1700000460]RRA[MAX][3]DS[dd] = NaN",
        "[1700000460]RRA[MAX][3]DS[de] = NaN",
        "[1700000460]RRA[MAX][3]DS[cp] = NaN",
        "[1700000460]RRA[LAST][3]DS[ab] = NaN",
        "[1700000460]RRA[LAST][3]DS[dc] = NaN",
        "[1700000460]RRA[LAST][3]DS[dd] = NaN",
        "[1700000460]RRA[LAST][3]DS[de] = NaN",
        "[1700000460]RRA[LAST][3]DS[cp] = NaN",
    ];
    assert_eq!(out, want);
    // (ds, unkn_sec_cnt, PDP value bits) and (rra, ds, CDP value, unknown PDPs, primary,
    // secondary bits), from the file.
    let pdp: &[(usize, u64, u64)] = &[
        (0, 0, 0x3ff9ba885c9f8481),
        (1, 0, 0x3fd9ba885c9f8481),
        (2, 0, 0xbfb9ba885c9f8481),
        (3, 0, 0x3fd9ba885c9f8481),
        (4, 40, 0xfff8000000000000),
    ];
    let cdp: &[(usize, usize, u64, u64, u64, u64)] = &[
        (
            0,
            0,
            0xfff8000000000000,
            0,
            0x3fa46950dfaaec89,
            0xfff8000000000000,
        ),
        (
            0,
            1,
            0xfff8000000000000,
            0,
            0x3f846950dfaaec89,
            0xfff8000000000000,
        ),
        (
            0,
            2,
            0xfff8000000000000,
            0,
            0xbf646950dfaaec89,
            0xfff8000000000000,
        ),
        (
            0,
            3,
            0xfff8000000000000,
            0,
            0x3f846950dfaaec89,
            0xfff8000000000000,
        ),
        (
            0,
            4,
            0xfff8000000000000,
            0,
            0x3f9983a51795a7ab,
            0xfff8000000000000,
        ),
        (
            1,
            0,
            0x7ff0000000000000,
            0,
            0xfff8000000000000,
            0x3fa46950dfaaec89,
        ),
        (
            1,
            1,
            0x7ff0000000000000,
            0,
            0xfff8000000000000,
            0x3f846950dfaaec89,
        ),
        (
            1,
            2,
            0x7ff0000000000000,
            0,
            0xfff8000000000000,
            0xbf646950dfaaec89,
        ),
        (
            1,
            3,
            0x7ff0000000000000,
            0,
            0xfff8000000000000,
            0x3f846950dfaaec89,
        ),
        (
            1,
            4,
            0x7ff0000000000000,
            0,
            0xfff8000000000000,
            0x3f9983a51795a7ab,
        ),
        (
            2,
            0,
            0xfff0000000000000,
            0,
            0xfff8000000000000,
            0x3fa46950dfaaec89,
        ),
        (
            2,
            1,
            0xfff0000000000000,
            0,
            0xfff8000000000000,
            0x3f846950dfaaec89,
        ),
        (
            2,
            2,
            0xfff0000000000000,
            0,
            0xfff8000000000000,
            0xbf646950dfaaec89,
        ),
        (
            2,
            3,
            0xfff0000000000000,
            0,
            0xfff8000000000000,
            0x3f846950dfaaec89,
        ),
        (
            2,
            4,
            0xfff0000000000000,
            0,
            0xfff8000000000000,
            0x3f9983a51795a7ab,
        ),
        (
            3,
            0,
            0xfff8000000000000,
            0,
            0xfff8000000000000,
            0x3fa46950dfaaec89,
        ),
        (
            3,
            1,
            0xfff8000000000000,
            0,
            0xfff8000000000000,
            0x3f846950dfaaec89,
        ),
        (
            3,
            2,
            0xfff8000000000000,
            0,
            0xfff8000000000000,
            0xbf646950dfaaec89,
        ),
        (
            3,
            3,
            0xfff8000000000000,
            0,
            0xfff8000000000000,
            0x3f846950dfaaec89,
        ),
        (
            3,
            4,
            0xfff8000000000000,
            0,
            0xfff8000000000000,
            0x3f9983a51795a7ab,
        ),
    ];
    for &(i, unkn, val) in pdp {
        assert_eq!(
            (r.pdp[i].unkn_sec_cnt, r.pdp[i].val.to_bits()),
            (unkn, val),
            "pdp {}",
            i
        );
    }
    for &(ra, i, val, unkn, prim, sec) in cdp {
        let c = r.cdp(ra, i);
        assert_eq!(
            (
                c.val.to_bits(),
                c.unkn_pdp_cnt,
                c.primary.to_bits(),
                c.secondary.to_bits()
            ),
            (val, unkn, prim, sec),
            "cdp {} {}",
            ra,
            i
        );
    }
}

// Signed zeros: a PDP of 0.0 then -0.0 (GAUGE "-0" after an unknown PDP) and the reverse;
// MIN/MAX keep the value so far on a tie. rrdtool create z.rrd --start 1699999980 --step 10
// DS:a:GAUGE:100:U:U RRA:MAX:0:2:3 RRA:MIN:0:2:3 RRA:MAX:0:3:3 RRA:MIN:0:3:3
// RRA:AVERAGE:0:1:5; update +5:0 +10:U +15:-0 +20:-0 +25:-0 +30:-0; file bytes.
#[test]
fn min_max_keep_the_value_so_far_on_signed_zero_ties() {
    let t = 1_699_999_980;
    let schema = Schema {
        step: 10,
        ds: vec![ds("a", DsType::Gauge, 100, f64::NAN, f64::NAN)],
        rra: vec![
            rra(Cf::Max, 0.0, 2, 3),
            rra(Cf::Min, 0.0, 2, 3),
            rra(Cf::Max, 0.0, 3, 3),
            rra(Cf::Min, 0.0, 3, 3),
        ],
    };
    let mut r = Rrd::new(schema, t);
    let args: Vec<String> = [
        (5, "0"),
        (10, "U"),
        (15, "-0"),
        (20, "-0"),
        (25, "-0"),
        (30, "-0"),
    ]
    .iter()
    .map(|(d, v)| format!("{}:{}", t + d, v))
    .collect();
    let args: Vec<&str> = args.iter().map(|s| s.as_str()).collect();
    run(&mut r, &args);
    for ra in 0..4 {
        // Every archive's row at t+20 / t+30 is +0.0 (the earlier 0.0 wins the tie).
        assert_eq!(r.cdp(ra, 0).primary.to_bits(), 0, "rra {}", ra);
        assert_eq!(
            r.cdp(ra, 0).secondary.to_bits(),
            (-0.0f64).to_bits(),
            "rra {}",
            ra
        );
    }
    assert_eq!(r.cdp(0, 0).val.to_bits(), (-0.0f64).to_bits());
}
