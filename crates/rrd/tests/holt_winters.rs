//! Holt-Winters archives as rrdtool 1.7.2 creates them: the archives a create makes (those
//! named and those it adds), their parameters and first CDP state, compared with `rrdtool
//! dump` and `rrdtool info` of the file rrdtool creates from the same arguments, and the
//! `.rrd` file's bytes, each archive's current row aside; then update calls applied to
//! rrdtool's file and to the same file read in give the same dumps after each call, and
//! restore of the last dump the same file as rrdtool's restore. Needs /usr/bin/rrdtool.

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

/// A small deterministic generator (xorshift64*).
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

/// 180 update calls a schema (each one `rrdtool update` of one to five values) applied by rrdtool to
/// its file and by ringlet to the same file read in: after every call the dumps are equal.
/// The values follow a season with noise, with unknowns, late and bulk updates, so the
/// models start, learn, smooth (burn-in and after), reset on gaps and flag failures.
#[test]
fn holt_winters_updates_match_rrdtool() {
    if Command::new("rrdtool").output().is_err() {
        eprintln!("rrdtool not found: skipped");
        return;
    }
    let dir = std::env::temp_dir().join(format!("ringlet-hwu-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let cases = [
        "a.rrd --step 10 DS:x:GAUGE:40:U:U RRA:AVERAGE:0.5:1:30 RRA:HWPREDICT:80:0.3:0.1:40",
        "b.rrd --step 10 DS:x:GAUGE:40:U:U DS:y:COUNTER:40:U:U RRA:MHWPREDICT:40:0.5:0.2:6 \
         RRA:MAX:0.5:3:10",
        "c.rrd --step 10 DS:x:GAUGE:40:U:U RRA:HWPREDICT:40:0.3:0.1:8:2 \
         RRA:SEASONAL:8:0.2:1:smoothing-window=0.3 RRA:DEVSEASONAL:8:0.4:1 RRA:DEVPREDICT:40:3 \
         RRA:FAILURES:20:3:5:3 RRA:LAST:0:2:9",
        "d.rrd --step 10 DS:x:GAUGE:40:U:U RRA:FAILURES:20:2:4:3 RRA:DEVPREDICT:40:3 \
         RRA:DEVSEASONAL:9:0.4:5:smoothing-window=0.5 RRA:SEASONAL:9:0.2:5 RRA:MHWPREDICT:40:0.3:0.1:9:4",
        "e.rrd --step 10 DS:x:GAUGE:40:U:U DS:z:GAUGE:40:U:U RRA:HWPREDICT:88:0.6:0.4:44 \
         RRA:AVERAGE:0.5:2:12",
    ];
    let mut failed = Vec::new();
    let mut smoothed_all = 0;
    for (n, case) in cases.iter().enumerate() {
        let start = 1_700_000_000i64;
        let mut args: Vec<String> = case.split_whitespace().map(String::from).collect();
        args.insert(1, format!("--start={start}"));
        let file = dir.join(&args[0]);
        let mut create = vec!["create".to_string()];
        create.extend(args.iter().cloned());
        let ok = Command::new("rrdtool")
            .args(&create)
            .current_dir(&dir)
            .status()
            .unwrap()
            .success();
        assert!(ok, "{case}: rrdtool create failed");
        let mut ours = rrd::rrdfile::read(&std::fs::read(&file).unwrap()).unwrap();
        let ds_cnt = ours.ds_cnt();
        let mut rng = Rng(0x9e37_79b9_7f4a_7c15 ^ (n as u64 + 1));
        let mut t = start;
        let mut counter = 1000u64;
        let mut smoothed = 0u32;
        let mut burst = 0u64;
        let fails_at: Vec<usize> = (0..ours.schema.rra.len())
            .filter(|&r| ours.schema.rra[r].cf == rrd::schema::Cf::Failures)
            .collect();
        let mut failures = 0u32;
        'calls: for call in 0..180 {
            let vals = 1 + rng.below(5);
            let mut argv = Vec::new();
            for _ in 0..vals {
                t += match rng.below(80) {
                    0 => 10 * (3 + rng.below(25)) as i64,
                    1..=3 => 20,
                    4..=9 => 10 - (t % 10),
                    _ => 3 + rng.below(12) as i64,
                };
                let mut fields = vec![t.to_string()];
                if burst == 0 && rng.below(40) == 0 {
                    burst = 3 + rng.below(4);
                }
                burst = burst.saturating_sub(1);
                for ds in 0..ds_cnt {
                    if rng.below(25) == 0 {
                        fields.push("U".into());
                    } else if ds == 1 && case.contains("COUNTER") {
                        counter += rng.below(500);
                        fields.push(counter.to_string());
                    } else {
                        let phase = (t / 10) as f64 * std::f64::consts::TAU / 40.0;
                        let spike = if burst > 0 { 80.0 } else { 0.0 };
                        let v = 50.0 + 20.0 * phase.sin() + rng.below(100) as f64 / 25.0 + spike;
                        fields.push(format!("{v:.3}"));
                    }
                }
                argv.push(fields.join(":"));
            }
            let mut cmd = vec!["update".to_string(), args[0].clone()];
            cmd.extend(argv.iter().cloned());
            let theirs = Command::new("rrdtool")
                .args(&cmd)
                .current_dir(&dir)
                .output()
                .unwrap();
            let mut ok = true;
            for a in &argv {
                let s = rrd::update::parse_update_arg(&ours.schema.clone(), a, None, (0, 0));
                let applied = s.map_err(|e| e.msg).and_then(|s| {
                    ours.apply(&s, &mut |w| {
                        if fails_at.contains(&w.rra) && w.value == 1.0 {
                            failures += 1;
                        }
                    })
                    .map_err(|e| e.error().msg.clone())
                });
                if applied.is_err() {
                    ok = false;
                    break;
                }
            }
            let bits = |r: &rrd::Rrd| -> Vec<u64> {
                r.rra
                    .iter()
                    .flat_map(|a| a.rows.to_vec())
                    .map(f64::to_bits)
                    .collect()
            };
            let before = bits(&ours);
            if ours.end_update_call(ok) && bits(&ours) != before {
                smoothed += 1;
            }
            if ok != theirs.status.success() {
                failed.push(format!(
                    "{case}: call {call} {argv:?}: ours ok {ok}, rrdtool {theirs:?}"
                ));
                break;
            }
            let want = Command::new("rrdtool")
                .args(["dump", &args[0]])
                .current_dir(&dir)
                .output()
                .unwrap();
            let want = String::from_utf8(want.stdout).unwrap();
            let got = rrd::dump::dump_xml(&ours, "dtd");
            if let Some(d) =
                first_difference(&format!("{case} call {call} {argv:?}"), "dump", &got, &want)
            {
                failed.push(d);
                break 'calls;
            }
        }
        // What the calls exercised: smoothing, learnt predictions, failures flagged.
        let known = |cf: rrd::schema::Cf| {
            (0..ours.schema.rra.len())
                .filter(|&r| ours.schema.rra[r].cf == cf)
                .flat_map(|r| ours.rra[r].rows.to_vec())
                .filter(|v| !v.is_nan() && *v != 0.0)
                .count()
        };
        let predicted = known(rrd::schema::Cf::HwPredict) + known(rrd::schema::Cf::MhwPredict);
        eprintln!("{case}: the smoother changed rows {smoothed} times, {predicted} predictions, {failures} failures");
        smoothed_all += smoothed;
        // restore of the dump: the same file as rrdtool's restore, current rows aside.
        let xml = Command::new("rrdtool")
            .args(["dump", &args[0]])
            .current_dir(&dir)
            .output()
            .unwrap()
            .stdout;
        std::fs::write(dir.join("x.xml"), &xml).unwrap();
        let _ = std::fs::remove_file(dir.join("r.rrd"));
        let ok = Command::new("rrdtool")
            .args(["restore", "x.xml", "r.rrd"])
            .current_dir(&dir)
            .status()
            .unwrap()
            .success();
        let restored = rrd::restore::restore_xml(std::str::from_utf8(&xml).unwrap(), false);
        match (ok, restored) {
            (true, Ok(r)) => {
                let mut mine = rrd::rrdfile::write(&r).unwrap();
                let mut theirs = std::fs::read(dir.join("r.rrd")).unwrap();
                let end = rrd::rrdfile::header_size(r.ds_cnt(), r.schema.rra.len());
                for f in [&mut mine, &mut theirs] {
                    f[end - 8 * r.schema.rra.len()..end].fill(0);
                }
                // The rows: each restore puts the newest row last, rrdtool at its cur_row.
                if mine[..end] != theirs[..end] {
                    let at = mine.iter().zip(&theirs).position(|(a, b)| a != b);
                    failed.push(format!("{case}: restored headers differ at byte {at:?}"));
                }
            }
            (a, b) => failed.push(format!("{case}: restore: rrdtool ok {a}, ours {b:?}")),
        }
        if predicted == 0 || failures == 0 {
            failed.push(format!(
                "{case}: too little exercised: predictions {predicted}, failures {failures}"
            ));
        }
    }
    if smoothed_all < 20 {
        failed.push(format!(
            "the smoother changed rows only {smoothed_all} times"
        ));
    }
    let _ = std::fs::remove_dir_all(&dir);
    assert!(failed.is_empty(), "{}", failed.join("\n"));
}
