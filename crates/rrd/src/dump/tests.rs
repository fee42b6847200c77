//! Tests of `dump_xml` against `rrdtool dump`: golden outputs and files made by the binary.

use super::*;
use crate::{Cf, DsDef, RraDef, Schema};

fn ds(name: &str, kind: DsType, hb: u64, min: f64, max: f64, rpn: Option<&str>) -> DsDef {
    DsDef {
        name: name.to_string(),
        kind,
        heartbeat: hb,
        min,
        max,
        rpn: rpn.map(str::to_string),
    }
}

fn rra(cf: Cf, xff: f64, pdp_cnt: u64, row_cnt: u64) -> RraDef {
    RraDef::new(cf, xff, pdp_cnt, row_cnt)
}

/// `rrdtool create` leaves primary/secondary at 0, not NaN.
fn fresh(schema: Schema, start: i64) -> Rrd {
    let mut r = Rrd::new(schema, start);
    for c in &mut r.cdp {
        c.primary = 0.0;
        c.secondary = 0.0;
    }
    r
}

/// Puts `vals` (one per DS) at row time `t` of archive `rra`, through the ring.
fn set_row(r: &mut Rrd, rra: usize, t: i64, vals: &[f64]) {
    let def = &r.schema.rra[rra];
    let span = (r.schema.step * def.pdp_cnt) as i64;
    let back = ((r.rra_end(rra) - t) / span) as u64;
    let row = (r.rra[rra].cur_row + def.row_cnt - back) % def.row_cnt;
    r.rra[rra].rows.set_row(row as usize, vals);
}

// TZ=UTC LC_ALL=C rrdtool create f.rrd --start 1000000123 --step 60 \
//   DS:c:DCOUNTER:120:0:U DS:x:COMPUTE:c,8,* RRA:LAST:0.25:1:2 RRA:MIN:0.5:5:3
// rrdtool dump -h none f.rrd
const FRESH_DCOUNTER_COMPUTE: &str = r#"<!-- Round Robin Database Dump -->
<rrd>
	<version>0005</version>
	<step>60</step> <!-- Seconds -->
	<lastupdate>1000000123</lastupdate> <!-- 2001-09-09 01:48:43 UTC -->

	<ds>
		<name> c </name>
		<type> DCOUNTER </type>
		<minimal_heartbeat>120</minimal_heartbeat>
		<min>0.0000000000e+00</min>
		<max>NaN</max>

		<!-- PDP Status -->
		<last_ds>U</last_ds>
		<value>NaN</value>
		<unknown_sec> 43 </unknown_sec>
	</ds>

	<ds>
		<name> x </name>
		<type> COMPUTE </type>
		<cdef> c,8,* </cdef>

		<!-- PDP Status -->
		<last_ds>U</last_ds>
		<value>NaN</value>
		<unknown_sec> 43 </unknown_sec>
	</ds>

	<!-- Round Robin Archives -->
	<rra>
		<cf>LAST</cf>
		<pdp_per_row>1</pdp_per_row> <!-- 60 seconds -->

		<params>
		<xff>2.5000000000e-01</xff>
		</params>
		<cdp_prep>
			<ds>
			<primary_value>0.0000000000e+00</primary_value>
			<secondary_value>0.0000000000e+00</secondary_value>
			<value>NaN</value>
			<unknown_datapoints>0</unknown_datapoints>
			</ds>
			<ds>
			<primary_value>0.0000000000e+00</primary_value>
			<secondary_value>0.0000000000e+00</secondary_value>
			<value>NaN</value>
			<unknown_datapoints>0</unknown_datapoints>
			</ds>
		</cdp_prep>
		<database>
			<!-- 2001-09-09 01:47:00 UTC / 1000000020 --> <row><v>NaN</v><v>NaN</v></row>
			<!-- 2001-09-09 01:48:00 UTC / 1000000080 --> <row><v>NaN</v><v>NaN</v></row>
		</database>
	</rra>
	<rra>
		<cf>MIN</cf>
		<pdp_per_row>5</pdp_per_row> <!-- 300 seconds -->

		<params>
		<xff>5.0000000000e-01</xff>
		</params>
		<cdp_prep>
			<ds>
			<primary_value>0.0000000000e+00</primary_value>
			<secondary_value>0.0000000000e+00</secondary_value>
			<value>NaN</value>
			<unknown_datapoints>3</unknown_datapoints>
			</ds>
			<ds>
			<primary_value>0.0000000000e+00</primary_value>
			<secondary_value>0.0000000000e+00</secondary_value>
			<value>NaN</value>
			<unknown_datapoints>3</unknown_datapoints>
			</ds>
		</cdp_prep>
		<database>
			<!-- 2001-09-09 01:35:00 UTC / 999999300 --> <row><v>NaN</v><v>NaN</v></row>
			<!-- 2001-09-09 01:40:00 UTC / 999999600 --> <row><v>NaN</v><v>NaN</v></row>
			<!-- 2001-09-09 01:45:00 UTC / 999999900 --> <row><v>NaN</v><v>NaN</v></row>
		</database>
	</rra>
</rrd>
"#;

#[test]
fn fresh_file_with_dcounter_and_compute_matches_rrdtool() {
    let schema = Schema {
        step: 60,
        ds: vec![
            ds("c", DsType::DCounter, 120, 0.0, f64::NAN, None),
            ds("x", DsType::Compute, 0, f64::NAN, f64::NAN, Some("c,8,*")),
        ],
        rra: vec![rra(Cf::Last, 0.25, 1, 2), rra(Cf::Min, 0.5, 5, 3)],
    };
    let r = fresh(schema, 1_000_000_123);
    assert_eq!(dump_xml(&r, "none"), FRESH_DCOUNTER_COMPUTE);
}

// TZ=UTC LC_ALL=C rrdtool create u.rrd --start 1000000000 --step 300 DS:g:GAUGE:600:0:100 \
//   DS:c:COUNTER:600:U:U DS:x:COMPUTE:g,2,* RRA:AVERAGE:0.5:1:5 RRA:MAX:0.3:3:4
// rrdtool update u.rrd 1000000100.5:10:100 1000000400:20:200 1000000700.25:30:500 \
//   1000001000:40:1000 1000001333:1.5e-7:1000000
// rrdtool dump u.rrd
const UPDATED_GAUGE_COUNTER: &str = r#"<?xml version="1.0" encoding="utf-8"?>
<!DOCTYPE rrd SYSTEM "https://oss.oetiker.ch/rrdtool/rrdtool.dtd">
<!-- Round Robin Database Dump -->
<rrd>
	<version>0003</version>
	<step>300</step> <!-- Seconds -->
	<lastupdate>1000001333</lastupdate> <!-- 2001-09-09 02:08:53 UTC -->

	<ds>
		<name> g </name>
		<type> GAUGE </type>
		<minimal_heartbeat>600</minimal_heartbeat>
		<min>0.0000000000e+00</min>
		<max>1.0000000000e+02</max>

		<!-- PDP Status -->
		<last_ds>1.5e-7</last_ds>
		<value>3.4950000000e-05</value>
		<unknown_sec> 0 </unknown_sec>
	</ds>

	<ds>
		<name> c </name>
		<type> COUNTER </type>
		<minimal_heartbeat>600</minimal_heartbeat>
		<min>NaN</min>
		<max>NaN</max>

		<!-- PDP Status -->
		<last_ds>1000000</last_ds>
		<value>6.9900000000e+05</value>
		<unknown_sec> 0 </unknown_sec>
	</ds>

	<ds>
		<name> x </name>
		<type> COMPUTE </type>
		<cdef> g,2,* </cdef>

		<!-- PDP Status -->
		<last_ds>U</last_ds>
		<value>NaN</value>
		<unknown_sec> 233 </unknown_sec>
	</ds>

	<!-- Round Robin Archives -->
	<rra>
		<cf>AVERAGE</cf>
		<pdp_per_row>1</pdp_per_row> <!-- 300 seconds -->

		<params>
		<xff>5.0000000000e-01</xff>
		</params>
		<cdp_prep>
			<ds>
			<primary_value>2.6666666717e+01</primary_value>
			<secondary_value>0.0000000000e+00</secondary_value>
			<value>NaN</value>
			<unknown_datapoints>0</unknown_datapoints>
			</ds>
			<ds>
			<primary_value>1.0011120378e+03</primary_value>
			<secondary_value>0.0000000000e+00</secondary_value>
			<value>NaN</value>
			<unknown_datapoints>0</unknown_datapoints>
			</ds>
			<ds>
			<primary_value>5.3333333433e+01</primary_value>
			<secondary_value>0.0000000000e+00</secondary_value>
			<value>NaN</value>
			<unknown_datapoints>0</unknown_datapoints>
			</ds>
		</cdp_prep>
		<database>
			<!-- 2001-09-09 01:45:00 UTC / 999999900 --> <row><v>NaN</v><v>NaN</v><v>NaN</v></row>
			<!-- 2001-09-09 01:50:00 UTC / 1000000200 --> <row><v>1.4975000000e+01</v><v>NaN</v><v>2.9950000000e+01</v></row>
			<!-- 2001-09-09 01:55:00 UTC / 1000000500 --> <row><v>2.3333333333e+01</v><v>5.5564899775e-01</v><v>4.6666666667e+01</v></row>
			<!-- 2001-09-09 02:00:00 UTC / 1000000800 --> <row><v>3.3325000000e+01</v><v>1.2215730705e+00</v><v>6.6650000000e+01</v></row>
			<!-- 2001-09-09 02:05:00 UTC / 1000001100 --> <row><v>2.6666666717e+01</v><v>1.0011120378e+03</v><v>5.3333333433e+01</v></row>
		</database>
	</rra>
	<rra>
		<cf>MAX</cf>
		<pdp_per_row>3</pdp_per_row> <!-- 900 seconds -->

		<params>
		<xff>3.0000000000e-01</xff>
		</params>
		<cdp_prep>
			<ds>
			<primary_value>3.3325000000e+01</primary_value>
			<secondary_value>3.3325000000e+01</secondary_value>
			<value>2.6666666717e+01</value>
			<unknown_datapoints>0</unknown_datapoints>
			</ds>
			<ds>
			<primary_value>NaN</primary_value>
			<secondary_value>1.2215730705e+00</secondary_value>
			<value>1.0011120378e+03</value>
			<unknown_datapoints>0</unknown_datapoints>
			</ds>
			<ds>
			<primary_value>6.6650000000e+01</primary_value>
			<secondary_value>6.6650000000e+01</secondary_value>
			<value>5.3333333433e+01</value>
			<unknown_datapoints>0</unknown_datapoints>
			</ds>
		</cdp_prep>
		<database>
			<!-- 2001-09-09 01:15:00 UTC / 999998100 --> <row><v>NaN</v><v>NaN</v><v>NaN</v></row>
			<!-- 2001-09-09 01:30:00 UTC / 999999000 --> <row><v>NaN</v><v>NaN</v><v>NaN</v></row>
			<!-- 2001-09-09 01:45:00 UTC / 999999900 --> <row><v>NaN</v><v>NaN</v><v>NaN</v></row>
			<!-- 2001-09-09 02:00:00 UTC / 1000000800 --> <row><v>3.3325000000e+01</v><v>NaN</v><v>6.6650000000e+01</v></row>
		</database>
	</rra>
</rrd>
"#;

#[test]
fn updated_file_prints_state_and_rows_oldest_first() {
    let nan = f64::NAN;
    let schema = Schema {
        step: 300,
        ds: vec![
            ds("g", DsType::Gauge, 600, 0.0, 100.0, None),
            ds("c", DsType::Counter, 600, nan, nan, None),
            ds("x", DsType::Compute, 0, nan, nan, Some("g,2,*")),
        ],
        rra: vec![rra(Cf::Average, 0.5, 1, 5), rra(Cf::Max, 0.3, 3, 4)],
    };
    let mut r = fresh(schema, 1_000_000_000);
    r.last_up = 1_000_001_333;
    r.last_up_usec = 0;
    for (p, (last, val, unkn)) in r.pdp.iter_mut().zip([
        ("1.5e-7", 3.495e-05, 0),
        ("1000000", 6.99e+05, 0),
        ("U", nan, 233),
    ]) {
        p.last_ds = last.into();
        p.val = val;
        p.unkn_sec_cnt = unkn;
    }
    let cdp = [
        [26.666666717, 0.0, nan],
        [1001.1120378, 0.0, nan],
        [53.333333433, 0.0, nan],
        [33.325, 33.325, 26.666666717],
        [nan, 1.2215730705, 1001.1120378],
        [66.65, 66.65, 53.333333433],
    ];
    for (c, [p, s, v]) in r.cdp.iter_mut().zip(cdp) {
        c.primary = p;
        c.secondary = s;
        c.val = v;
        c.unkn_pdp_cnt = 0;
    }
    r.rra[0].cur_row = 2;
    r.rra[1].cur_row = 3;
    set_row(&mut r, 0, 1_000_000_200, &[14.975, nan, 29.95]);
    set_row(
        &mut r,
        0,
        1_000_000_500,
        &[23.333333333, 0.55564899775, 46.666666667],
    );
    set_row(&mut r, 0, 1_000_000_800, &[33.325, 1.2215730705, 66.65]);
    set_row(
        &mut r,
        0,
        1_000_001_100,
        &[26.666666717, 1001.1120378, 53.333333433],
    );
    set_row(&mut r, 1, 1_000_000_800, &[33.325, nan, 66.65]);
    assert_eq!(dump_xml(&r, "dtd"), UPDATED_GAUGE_COUNTER);
    // Unknown header names fall back to the DTD header, as in rrdtool.
    assert_eq!(dump_xml(&r, "XSD"), UPDATED_GAUGE_COUNTER);
    let xsd = dump_xml(&r, "xsd");
    assert!(xsd.starts_with(
        "<?xml version=\"1.0\" encoding=\"utf-8\"?>\n<!-- Round Robin Database Dump -->\n<rrd xmlns="
    ));
    assert_eq!(
        xsd.split_once("<version>").map(|x| x.1),
        UPDATED_GAUGE_COUNTER.split_once("<version>").map(|x| x.1)
    );
}

#[test]
fn utc_datetime_formats_epoch_seconds() {
    assert_eq!(utc_datetime(0), "1970-01-01 00:00:00");
    assert_eq!(utc_datetime(1_000_001_333), "2001-09-09 02:08:53");
    assert_eq!(utc_datetime(951_782_400), "2000-02-29 00:00:00");
    assert_eq!(utc_datetime(-1), "1969-12-31 23:59:59");
}

/// rrdtool create + update, then `rrdtool dump` against dump_xml of the file as
/// [`crate::rrdfile::read`] loads it (every double bit for bit).
fn same_as_rrdtool(name: &str, create: &[&str], updates: &[&str]) {
    use std::process::Command;
    if !std::path::Path::new("/usr/bin/rrdtool").exists() {
        return;
    }
    let dir = std::env::temp_dir().join(format!("ringlet-dump-{}-{}", name, std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("temp dir");
    let run = |args: &[&str]| {
        let out = Command::new("/usr/bin/rrdtool")
            .args(args)
            .current_dir(&dir)
            .env("TZ", "UTC")
            .env("LC_ALL", "C")
            .output()
            .expect("run rrdtool");
        assert!(
            out.status.success(),
            "{:?}: {}",
            args,
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout).expect("utf-8")
    };
    let mut args = vec!["create", "a.rrd"];
    args.extend_from_slice(create);
    run(&args);
    if !updates.is_empty() {
        let mut args = vec!["update", "a.rrd"];
        args.extend_from_slice(updates);
        run(&args);
    }
    let bytes = std::fs::read(dir.join("a.rrd")).expect("read rrd");
    let rrd = crate::rrdfile::read(&bytes).expect("parse rrd");
    for header in ["dtd", "xsd", "none"] {
        assert_eq!(
            dump_xml(&rrd, header),
            run(&["dump", "-h", header, "a.rrd"]),
            "{}",
            name
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn dumps_of_rrdtool_files_match_byte_for_byte() {
    same_as_rrdtool(
        "all-types",
        &[
            "--start",
            "1000000000",
            "--step",
            "300",
            "DS:g:GAUGE:600:0:100",
            "DS:c:COUNTER:600:U:U",
            "DS:d:DERIVE:600:-10:U",
            "DS:a:ABSOLUTE:600:U:1e9",
            "DS:x:COMPUTE:g,c,+,2,/",
            "RRA:AVERAGE:0.5:1:5",
            "RRA:MAX:0.3:3:4",
            "RRA:MIN:0:2:3",
            "RRA:LAST:0.99:1:2",
        ],
        &[
            "1000000100.5:10:100:5:7",
            "1000000400:20:200:-3:8",
            "1000000700.25:30:500:4:U",
            "1000001000:40:1000:9:1",
            "1000001333:1.5e-7:1000000:12:2",
            "1000002900:77.7:1000100:15:3",
        ],
    );
    same_as_rrdtool(
        "dcounter",
        &[
            "--start",
            "1000000123",
            "--step",
            "60",
            "DS:c:DCOUNTER:120:0:U",
            "DS:d:DDERIVE:120:U:U",
            "RRA:LAST:0.25:1:2",
            "RRA:AVERAGE:0.5:5:3",
        ],
        &[
            "1000000150:1.5:2.5",
            "1000000200:3.25:-1.5",
            "1000000333:7.125:0",
        ],
    );
    // Values near rounding ties, infinities and a subnormal PDP value.
    same_as_rrdtool(
        "ties",
        &[
            "--start",
            "1000000000",
            "--step",
            "300",
            "DS:g:GAUGE:600:U:U",
            "RRA:LAST:0.5:1:6",
        ],
        &[
            "1000000300:76.6516370385",
            "1000000600:36214187336.5",
            "1000000900:1e400",
            "1000001200:-1e400",
            "1000001500:-2.5",
            "1000001800:1e-320",
            "1000001900:1e-320",
        ],
    );
}

/// rrdtool's `%0.10e` on 5000 seeded doubles of every magnitude (subnormals included): values
/// restored by `rrdtool restore` into a file, read back bit for bit through
/// [`crate::rrdfile::read`], printed by both.
#[test]
fn numbers_print_like_rrdtool_for_seeded_doubles() {
    use std::process::Command;
    if !std::path::Path::new("/usr/bin/rrdtool").exists() {
        return;
    }
    let dir = std::env::temp_dir().join(format!("ringlet-dump-nums-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("temp dir");
    let mut rng = testkit::Rng::new(0x2545_f491_4f6c_dd1d);
    let mut rows = String::new();
    for i in 0..5000u64 {
        let x = rng.next_u64();
        let v = match i % 4 {
            0 => f64::from_bits(x >> 1),
            1 => (x % 2_000_000) as f64 / 1000.0 - 1000.0,
            2 => (x % 100_000_000_000) as f64 / 1e6,
            _ => f64::from_bits(x),
        };
        let v = if v.is_nan() { 1.5 } else { v };
        rows.push_str(&format!("<row><v>{:e}</v></row>\n", v));
    }
    let xml = format!(
        "<rrd><version>0003</version><step>300</step><lastupdate>1500000000</lastupdate>\
         <ds><name>g</name><type>GAUGE</type><minimal_heartbeat>600</minimal_heartbeat>\
         <min>NaN</min><max>NaN</max><last_ds>U</last_ds><value>NaN</value>\
         <unknown_sec>0</unknown_sec></ds><rra><cf>LAST</cf><pdp_per_row>1</pdp_per_row>\
         <params><xff>0.5</xff></params><cdp_prep><ds><primary_value>0</primary_value>\
         <secondary_value>0</secondary_value><value>NaN</value>\
         <unknown_datapoints>0</unknown_datapoints></ds></cdp_prep><database>{}</database>\
         </rra></rrd>",
        rows
    );
    std::fs::write(dir.join("in.xml"), xml).expect("write xml");
    let run = |args: &[&str]| {
        let out = Command::new("/usr/bin/rrdtool")
            .args(args)
            .current_dir(&dir)
            .env("TZ", "UTC")
            .env("LC_ALL", "C")
            .output()
            .expect("run rrdtool");
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout).expect("utf-8")
    };
    run(&["restore", "in.xml", "a.rrd"]);
    let theirs = run(&["dump", "a.rrd"]);
    let bytes = std::fs::read(dir.join("a.rrd")).expect("read rrd");
    let rrd = crate::rrdfile::read(&bytes).expect("parse rrd");
    let ours = dump_xml(&rrd, "dtd");
    let _ = std::fs::remove_dir_all(&dir);
    for (a, b) in ours.lines().zip(theirs.lines()) {
        assert_eq!(a, b);
    }
    assert_eq!(ours, theirs);
}
