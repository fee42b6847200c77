//! `.rrd` files made by the real rrdtool read back into an `Rrd` and write out again to the
//! same bytes. Needs /usr/bin/rrdtool.

use std::path::PathBuf;
use std::process::Command;

fn tmpdir(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("ringlet-rrdfile-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn rrdtool(dir: &PathBuf, args: &[&str]) {
    let out = Command::new("rrdtool")
        .args(args)
        .current_dir(dir)
        .env("TZ", "UTC")
        .output()
        .expect("rrdtool runs");
    assert!(
        out.status.success(),
        "rrdtool {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn rrdtool_files_round_trip_byte_for_byte() {
    let d = tmpdir("roundtrip");
    rrdtool(
        &d,
        &[
            "create",
            "x.rrd",
            "--start",
            "1000000000",
            "--step",
            "300",
            "DS:a:GAUGE:600:0:100",
            "DS:b:DCOUNTER:600:U:U",
            "DS:n:COUNTER:600:U:U",
            "DS:c:COMPUTE:a,b,+,2,*,n,MAX",
            "RRA:AVERAGE:0.5:1:10",
            "RRA:MAX:0.3:3:5",
            "RRA:LAST:0.5:2:4",
            "RRA:MIN:0.9:4:3",
        ],
    );
    rrdtool(
        &d,
        &[
            "update",
            "x.rrd",
            "1000000100:10:1.5:100",
            "1000000400:20.25:2.5:4294967290",
            "1000000700.5:U:3.5:10",
            "1000002000:50:1:400",
        ],
    );
    let bytes = std::fs::read(d.join("x.rrd")).unwrap();
    let rrd = rrd::rrdfile::read(&bytes).expect("reads");
    assert_eq!(rrd.last_up, 1000002000);
    assert_eq!(rrd.schema.ds[3].rpn.as_deref(), Some("a,b,+,2,*,n,MAX"));
    assert_eq!(rrd.pdp[2].last_ds, "400");
    assert_eq!(rrd::rrdfile::header_size(4, 4), {
        let out = Command::new("rrdtool")
            .args(["info", "x.rrd"])
            .current_dir(&d)
            .output()
            .unwrap();
        let s = String::from_utf8(out.stdout).unwrap();
        s.lines()
            .find_map(|l| l.strip_prefix("header_size = "))
            .unwrap()
            .parse::<usize>()
            .unwrap()
    });
    assert_eq!(
        rrd::rrdfile::write(&rrd).unwrap(),
        bytes,
        "written bytes differ"
    );
    let _ = std::fs::remove_dir_all(&d);
}

#[test]
fn truncated_and_foreign_files_are_refused() {
    let d = tmpdir("bad");
    rrdtool(
        &d,
        &[
            "create",
            "x.rrd",
            "DS:a:GAUGE:600:U:U",
            "RRA:AVERAGE:0.5:1:10",
        ],
    );
    let bytes = std::fs::read(d.join("x.rrd")).unwrap();
    let e = rrd::rrdfile::read(&bytes[..bytes.len() - 1]).unwrap_err();
    assert!(e.msg.contains("truncated"), "{e}");
    assert_eq!(
        rrd::rrdfile::read(b"hello world").unwrap_err().msg,
        "not an RRD file"
    );
    let _ = std::fs::remove_dir_all(&d);
}

/// A name field (a data source's name) that is not text, or has no NUL in its 20 bytes, is
/// damage: refused, not read into a name that would not fit the field when written again
/// (the fuzzer's find: a name of invalid bytes became replacement characters, 3 bytes each,
/// and the file written from it ran the name into the type's field). A name of 19 bytes, the
/// longest rrdtool makes, reads and writes; a longer one cannot be written.
#[test]
fn names_that_do_not_fit_their_field_are_refused() {
    let d = tmpdir("names");
    rrdtool(
        &d,
        &[
            "create",
            "x.rrd",
            "DS:abcdefghijklmnopqrs:GAUGE:600:U:U",
            "RRA:AVERAGE:0.5:1:10",
        ],
    );
    let bytes = std::fs::read(d.join("x.rrd")).unwrap();
    let r = rrd::rrdfile::read(&bytes).unwrap();
    assert_eq!(r.schema.ds[0].name, "abcdefghijklmnopqrs");
    assert_eq!(
        rrd::rrdfile::write(&r).unwrap(),
        bytes,
        "written back alike"
    );
    // The DS name is at byte 40 of the file (after the 40-byte static header).
    let at = bytes
        .windows(19)
        .position(|w| w == b"abcdefghijklmnopqrs")
        .unwrap();
    let mut no_nul = bytes.clone();
    no_nul[at + 19] = b't';
    assert!(rrd::rrdfile::read(&no_nul)
        .unwrap_err()
        .msg
        .contains("name"));
    let mut not_text = bytes.clone();
    not_text[at..at + 4].copy_from_slice(&[0xff, 0xfe, 0xfd, 0xfc]);
    assert!(rrd::rrdfile::read(&not_text)
        .unwrap_err()
        .msg
        .contains("name"));
    let mut long = r.clone();
    std::sync::Arc::make_mut(&mut long.schema).ds[0].name = "abcdefghijklmnopqrst".into();
    assert!(rrd::rrdfile::write(&long).is_err(), "20 bytes do not fit");
    let _ = std::fs::remove_dir_all(&d);
}

#[test]
fn row_counts_whose_bytes_overflow_are_refused() {
    // Found by fuzzing (2026-11-27): a row count whose rows' bytes overflow a usize panicked
    // (overflow checks) or read as a short archive (without them).
    let args: Vec<String> = [
        "x.rrd",
        "DS:a:GAUGE:600:U:U",
        "DS:b:GAUGE:600:U:U",
        "RRA:AVERAGE:0.5:1:10",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    let r = rrd::create::parse_create(&args, 1_000_000_000).unwrap();
    let bytes = rrd::rrdfile::write(&rrd::Rrd::new(r.schema, 1_000_000_000)).unwrap();
    let cf = bytes
        .windows(8)
        .position(|w| w == b"AVERAGE\0")
        .expect("the archive's definition");
    for rows in [1u64 << 60, 1 << 61, 1 << 63, u64::MAX, u64::MAX / 16 + 1] {
        let mut b = bytes.clone();
        b[cf + 24..cf + 32].copy_from_slice(&rows.to_le_bytes());
        assert!(rrd::rrdfile::read(&b).is_err(), "{rows} rows");
    }
    assert!(rrd::rrdfile::read(&bytes).is_ok());
}

/// A file with Holt-Winters archives reads in and writes back byte for byte; one whose
/// archives rrdtool let depend on the wrong ones (it checks the index only) is refused
/// with a message that says so.
#[test]
fn holt_winters_files_read_and_mislinked_ones_are_refused() {
    let d = tmpdir("hw");
    rrdtool(
        &d,
        &[
            "create",
            "x.rrd",
            "DS:a:GAUGE:600:U:U",
            "RRA:AVERAGE:0.5:1:10",
            "RRA:HWPREDICT:100:0.1:0.0035:10",
        ],
    );
    rrdtool(&d, &["update", "x.rrd", "N:4"]);
    let bytes = std::fs::read(d.join("x.rrd")).unwrap();
    let rrd = rrd::rrdfile::read(&bytes).unwrap();
    assert_eq!(rrd.schema.rra.len(), 6, "the archives rrdtool added");
    assert_eq!(rrd::rrdfile::write(&rrd).unwrap(), bytes);
    rrdtool(
        &d,
        &[
            "create",
            "y.rrd",
            "DS:a:GAUGE:600:U:U",
            "RRA:HWPREDICT:100:0.1:0.0035:10:3",
            "RRA:SEASONAL:10:0.1:1",
            "RRA:DEVSEASONAL:10:0.1:1",
        ],
    );
    let bytes = std::fs::read(d.join("y.rrd")).unwrap();
    let e = rrd::rrdfile::read(&bytes).unwrap_err();
    assert!(
        e.msg.contains("HWPREDICT archive 0 depends on no archive"),
        "{e}"
    );
    let _ = std::fs::remove_dir_all(&d);
}

/// `rrdtool restore` and `restore_xml` give the same file, bit for bit (NaN signs included),
/// apart from where each puts `cur_row`.
#[test]
fn restore_matches_rrdtool_restore_bit_for_bit() {
    let d = tmpdir("restore");
    rrdtool(
        &d,
        &[
            "create",
            "x.rrd",
            "--start",
            "1000000000",
            "--step",
            "60",
            "DS:a:GAUGE:120:0:100",
            "DS:b:DERIVE:120:U:U",
            "RRA:AVERAGE:0.5:1:10",
            "RRA:MAX:0.5:3:5",
        ],
    );
    rrdtool(
        &d,
        &[
            "update",
            "x.rrd",
            "1000000060:10:5",
            "1000000120:U:7",
            "1000000300:20.5:-3",
        ],
    );
    let xml = Command::new("rrdtool")
        .args(["dump", "x.rrd"])
        .current_dir(&d)
        .output()
        .unwrap()
        .stdout;
    std::fs::write(d.join("x.xml"), &xml).unwrap();
    rrdtool(&d, &["restore", "x.xml", "y.rrd"]);
    let theirs = rrd::rrdfile::read(&std::fs::read(d.join("y.rrd")).unwrap()).unwrap();
    let mut ours = rrd::restore::restore_xml(std::str::from_utf8(&xml).unwrap(), false).unwrap();
    for (o, t) in ours.rra.iter_mut().zip(&theirs.rra) {
        // Rotate our ring to rrdtool's cur_row so the raw rows line up.
        let n = o.rows.len() / ours.schema.ds.len();
        let shift = (t.cur_row + n as u64 - o.cur_row) % n as u64;
        let mut vals = o.rows.to_vec();
        vals.rotate_right(shift as usize * ours.schema.ds.len());
        o.rows = rrd::Rows::from_values(ours.schema.ds.len(), &vals);
        o.cur_row = t.cur_row;
    }
    assert_eq!(
        rrd::rrdfile::write(&ours).unwrap(),
        rrd::rrdfile::write(&theirs).unwrap(),
        "restored files differ"
    );
    let _ = std::fs::remove_dir_all(&d);
}
