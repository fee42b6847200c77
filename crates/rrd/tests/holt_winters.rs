//! Holt-Winters archives as rrdtool 1.7.2 creates them: the archives a create makes (those
//! named and those it adds), their parameters and first CDP state, compared with `rrdtool
//! dump` and `rrdtool info` of the file rrdtool creates from the same arguments. (ringlet's `create` still
//! refuses these archives; this checks the parts made so far.) `info` and the `.rrd` file's
//! bytes too, each archive's current row aside. Needs /usr/bin/rrdtool.

use std::process::Command;

/// rrdtool's dump and info of the file it creates from `args`.
fn rrdtool_dump(dir: &std::path::Path, args: &[String]) -> Option<(String, String)> {
    let run = |a: &[String]| {
        Command::new("rrdtool")
            .args(a)
            .current_dir(dir)
            .env("TZ", "UTC")
            .output()
            .ok()
    };
    let mut create = vec!["create".to_string()];
    create.extend(args.iter().cloned());
    let c = run(&create)?;
    if !c.status.success() {
        return None;
    }
    let d = run(&["dump".to_string(), args[0].clone()])?;
    let i = run(&["info".to_string(), args[0].clone()])?;
    Some((
        String::from_utf8(d.stdout).unwrap(),
        String::from_utf8(i.stdout).unwrap(),
    ))
}

/// info without the lines of each archive's current row (rrdtool starts at a random one)
/// and of the header size (a layout fact).
fn masked(info: &str) -> String {
    info.lines()
        .filter(|l| !l.contains(".cur_row = ") && !l.starts_with("header_size"))
        .map(|l| format!("{l}\n"))
        .collect()
}

fn first_difference(case: &str, what: &str, got: &str, want: &str) -> Option<String> {
    if got == want {
        return None;
    }
    let line = got
        .lines()
        .zip(want.lines())
        .position(|(a, b)| a != b)
        .unwrap_or(got.lines().count().min(want.lines().count()));
    Some(format!(
        "{case}: {what}: first difference at line {}:\n ours:    {:?}\n rrdtool: {:?}",
        line + 1,
        got.lines().nth(line),
        want.lines().nth(line)
    ))
}

struct NoStore;
impl rrd::create::CreateEnv for NoStore {
    fn template(&mut self, _: &str) -> Option<(rrd::Schema, i64)> {
        None
    }
    fn exists(&mut self, _: &str) -> bool {
        false
    }
    fn source(&mut self, _: &str) -> Result<(), String> {
        Err("none".into())
    }
}

#[test]
fn fresh_holt_winters_files_dump_as_rrdtools() {
    if Command::new("rrdtool").output().is_err() {
        eprintln!("rrdtool not found: skipped");
        return;
    }
    let dir = std::env::temp_dir().join(format!("ringlet-hw-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let cases = [
        "h.rrd --start 1700000000 --step 300 DS:x:GAUGE:600:U:U RRA:AVERAGE:0.5:1:20 \
         RRA:HWPREDICT:30:0.1:0.0035:12",
        "m.rrd --start 1700000123 --step 60 DS:a:COUNTER:120:0:U DS:b:GAUGE:120:U:U \
         RRA:MHWPREDICT:1h:0.5:0.2:7 RRA:MAX:0.5:5:10",
        "explicit-name.rrd --start 1700000000 --step 10 DS:x:GAUGE:20:U:U \
         RRA:HWPREDICT:40:0.3:0.1:8:3 RRA:SEASONAL:8:0.2:2:smoothing-window=0.2 \
         RRA:DEVSEASONAL:8:0.4:2 RRA:DEVPREDICT:40:4 RRA:FAILURES:8:3:5:4 RRA:LAST:0:2:9",
        "d.rrd --start 1700000000 --step 300 DS:x:DCOUNTER:600:U:U RRA:HWPREDICT:10:0.5:0.5:5",
    ];
    let mut failed = Vec::new();
    for case in cases {
        let args: Vec<String> = case.split_whitespace().map(String::from).collect();
        let Some((want, want_info)) = rrdtool_dump(&dir, &args) else {
            failed.push(format!("{case}: rrdtool did not run"));
            continue;
        };
        let req = rrd::create::parse_create_any(&args, 1_700_000_000, &mut NoStore).unwrap();
        let ours = rrd::Rrd::new(req.schema, req.start);
        let got = rrd::dump::dump_xml(&ours, "dtd");
        failed.extend(first_difference(case, "dump", &got, &want));
        // The file's bytes, each archive's current row aside.
        let theirs = std::fs::read(dir.join(&args[0])).unwrap();
        let mut mine = rrd::rrdfile::write(&ours).unwrap();
        let end = rrd::rrdfile::header_size(ours.ds_cnt(), ours.schema.rra.len());
        let mut theirs = theirs;
        for f in [&mut mine, &mut theirs] {
            f[end - 8 * ours.schema.rra.len()..end].fill(0);
        }
        if mine != theirs {
            let at = mine.iter().zip(&theirs).position(|(a, b)| a != b);
            failed.push(format!(
                "{case}: .rrd bytes differ at {at:?} (lengths {} and {})",
                mine.len(),
                theirs.len()
            ));
        }
        let info = rrd::info::format_info(&rrd::info::info(&ours, &args[0]));
        failed.extend(first_difference(
            case,
            "info",
            &masked(&info),
            &masked(&want_info),
        ));
    }
    let _ = std::fs::remove_dir_all(&dir);
    assert!(failed.is_empty(), "{}", failed.join("\n"));
}
