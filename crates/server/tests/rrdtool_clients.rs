//! rrdtool 1.7.2 as the client: the same seeded random command sequences (create, update with
//! errors, fetch, info, first, last, xport, graph PRINT of VDEFs, flushcached) run with
//! `--daemon` against `ringlet serve` and against the real rrdcached; stdout, stderr and exit
//! code of every command must match once socket paths and base directories are normalised.
//!
//! The commands librrd 1.7.2 runs on the file itself even with `--daemon` (`update
//! --template`, `lastupdate`, `dump`, `tune`) meet ringlet's placeholder and fail openly
//! (`local_readers_fail_openly_on_placeholders`); the `ringlet` CLI runs them through the
//! daemon (`crates/ringlet/tests/beside.rs`).
//!
//! Environment: `DAEMON_DIFF_CASES` (default 200 with CI=true, 40 otherwise),
//! `DAEMON_DIFF_SEED` (first seed, default 1), `DAEMON_DIFF_THREADS` (default 4),
//! `DAEMON_DIFF_SHOW` (mismatching cases printed, default 3), `DAEMON_DIFF_PRINT` (print every
//! command with rrdcached's output). A failure prints each bad case's
//! seed and commands, so `DAEMON_DIFF_SEED=<seed> DAEMON_DIFF_CASES=1` reproduces it.

mod common;

use common::*;
use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

const T0: i64 = 1_795_200_000;

/// `update --template` makes librrd read the file locally: not generated (see the module doc).
const TEMPLATES: bool = false;

#[derive(Clone, Copy, PartialEq)]
enum Ty {
    Gauge,
    Counter,
    Derive,
    Absolute,
    DCounter,
    DDerive,
}

struct Ds {
    name: String,
    ty: Ty,
    /// The last counter value, for increasing counters.
    acc: i64,
}

/// One generated case: the rrdtool argument lists, `--daemon` added at run time.
struct Case {
    seed: u64,
    cmds: Vec<Vec<String>>,
}

fn s(x: impl ToString) -> String {
    x.to_string()
}

fn gen(seed: u64) -> Case {
    let mut g = rng(seed);
    let file = format!("f{seed}.rrd");
    let step: i64 = *g.pick(&[1, 10, 60, 300]);
    let start = T0 - g.below(5) as i64 * step;
    let nds = 1 + g.below(3) as usize;
    let mut ds: Vec<Ds> = Vec::new();
    let mut create = vec![
        s("create"),
        file.clone(),
        s("--start"),
        s(start),
        s("--step"),
        s(step),
    ];
    for i in 0..nds {
        let ty = *g.pick(&[
            Ty::Gauge,
            Ty::Gauge,
            Ty::Counter,
            Ty::Derive,
            Ty::Absolute,
            Ty::DCounter,
            Ty::DDerive,
        ]);
        let tn = match ty {
            Ty::Gauge => "GAUGE",
            Ty::Counter => "COUNTER",
            Ty::Derive => "DERIVE",
            Ty::Absolute => "ABSOLUTE",
            Ty::DCounter => "DCOUNTER",
            Ty::DDerive => "DDERIVE",
        };
        let hb = step * *g.pick(&[1, 2, 3, 10]);
        let (min, max) = match g.below(4) {
            0 => (s("0"), s("U")),
            1 => (s("U"), s("1000")),
            2 => (s("-50"), s("50")),
            _ => (s("U"), s("U")),
        };
        let name = format!("d{i}");
        create.push(format!("DS:{name}:{tn}:{hb}:{min}:{max}"));
        ds.push(Ds {
            name,
            ty,
            acc: g.below(1000) as i64,
        });
    }
    let compute = g.percent(15);
    if compute {
        // A COMPUTE DS: no value in updates, computed from the others.
        let a = &ds[0].name;
        create.push(format!("DS:cmp:COMPUTE:{a},2,*,1,+"));
    }
    let cfs = ["AVERAGE", "MIN", "MAX", "LAST"];
    let nrra = 1 + g.below(4);
    let mut rra_cfs: Vec<&str> = Vec::new();
    for _ in 0..nrra {
        let cf = *g.pick(&cfs);
        let xff = g.pick(&["0", "0.5", "0.9"]);
        let pdp = g.pick(&[1, 1, 2, 5, 12]);
        let rows = g.pick(&[5, 10, 50, 200]);
        rra_cfs.push(cf);
        create.push(format!("RRA:{cf}:{xff}:{pdp}:{rows}"));
    }
    let mut cmds = Vec::new();
    if g.percent(4) {
        // A create the daemon refuses (no RRA, or a bad DS), then the real one.
        let mut bad = create.clone();
        if g.percent(50) {
            bad.retain(|a| !a.starts_with("RRA:"));
        } else {
            bad.push(s("DS:bad:GAUGE"));
        }
        cmds.push(bad);
    }
    cmds.push(create);
    let mut now = start as f64;
    let last_t = |now: f64| now.floor() as i64;
    let mut flushed_since_update;
    let rounds = 3 + g.below(8);
    for _ in 0..rounds {
        // One update invocation of 1..5 values; timestamp errors on purpose now and then.
        let mut up = vec![s("update"), file.clone()];
        // No template: librrd maps it by reading the file locally, which through ringlet
        // is a placeholder (`local_readers_fail_openly_on_placeholders`).
        let order: Option<Vec<usize>> = if TEMPLATES && !compute && g.percent(20) {
            let mut o: Vec<usize> = (0..nds).filter(|_| g.percent(70)).collect();
            if o.is_empty() {
                o.push(g.below(nds as u64) as usize);
            }
            for i in (1..o.len()).rev() {
                o.swap(i, g.below(i as u64 + 1) as usize);
            }
            let names: Vec<&str> = o.iter().map(|&i| ds[i].name.as_str()).collect();
            up.extend([s("-t"), names.join(":")]);
            Some(o)
        } else {
            None
        };
        let nvals = 1 + g.below(5);
        for _ in 0..nvals {
            let dt: f64 = match g.below(20) {
                0 => 0.0,
                1 => -(step as f64),
                2 => 0.5,
                3 => step as f64 / 2.0,
                4..=9 => step as f64,
                10..=12 => 2.0 * step as f64,
                13 => 7.0 * step as f64,
                14 => 25.0 * step as f64,
                15 => 1.0,
                _ => (1 + g.below(3 * step as u64)) as f64,
            };
            let t = now + dt;
            let stamp = if t.fract() == 0.0 {
                format!("{t:.0}")
            } else {
                format!("{t}")
            };
            let mut v = stamp;
            let picked: Vec<usize> = order.clone().unwrap_or_else(|| (0..nds).collect());
            for &i in &picked {
                let d = &mut ds[i];
                v.push(':');
                if g.percent(7) {
                    v.push('U');
                    continue;
                }
                match d.ty {
                    Ty::Gauge => match g.below(3) {
                        0 => v.push_str(&s(g.below(100) as i64 - 20)),
                        1 => v.push_str(&format!("{}.{}", g.below(100), g.below(1000))),
                        _ => v.push_str(&format!("{:e}", (g.below(100000) as f64) / 7.0)),
                    },
                    Ty::Counter => {
                        d.acc += g.below(5000) as i64;
                        v.push_str(&s(d.acc));
                    }
                    Ty::Derive => {
                        d.acc += g.below(500) as i64 - 200;
                        v.push_str(&s(d.acc));
                    }
                    Ty::Absolute => v.push_str(&s(g.below(1000))),
                    Ty::DCounter => {
                        d.acc += g.below(5000) as i64;
                        v.push_str(&format!("{}.{}", d.acc, g.below(100)));
                    }
                    Ty::DDerive => {
                        d.acc += g.below(500) as i64 - 200;
                        v.push_str(&format!("{}.{}", d.acc, g.below(10)));
                    }
                }
            }
            up.push(v);
            if t > now {
                now = t;
            }
        }
        if g.percent(3) {
            // An update of a file that does not exist.
            cmds.push(vec![
                s("update"),
                format!("missing{seed}.rrd"),
                format!("{}:1", last_t(now) + 1),
            ]);
        }
        cmds.push(up);
        flushed_since_update = false;
        // Reads.
        for _ in 0..g.below(3) {
            let lo = start - g.below(3) as i64 * step * 10;
            let mut from = lo + g.below(((now as i64 - lo) + step * 3) as u64) as i64;
            let mut to = from + 1 + g.below((step * 40) as u64) as i64;
            if g.percent(15) {
                // Far back and wide: past what the finest archives hold, so the archive
                // choice weighs partial coverage.
                from = now as i64 - g.below((step * 3000) as u64) as i64;
                to = now as i64 - g.below((step * 50) as u64) as i64 + step;
            }
            let cf = if g.percent(90) {
                *g.pick(&rra_cfs)
            } else {
                *g.pick(&cfs)
            };
            match g.below(12) {
                9..=11 => {
                    // librrd's local readers (lastupdate, dump, tune) are not compared: INFO.
                    cmds.push(vec![s("info"), file.clone()]);
                    flushed_since_update = true;
                }
                0 | 1 => {
                    let mut f = vec![
                        s("fetch"),
                        file.clone(),
                        s(cf),
                        s("-s"),
                        s(from),
                        s("-e"),
                        s(to),
                    ];
                    if g.percent(20) {
                        f.extend([s("-r"), s(step * 5)]);
                    }
                    cmds.push(f);
                    flushed_since_update = true;
                }
                2 => {
                    cmds.push(vec![s("info"), file.clone()]);
                    flushed_since_update = true;
                }
                3 => {
                    // rrdcached's FIRST reads the file without flushing: flush first, as a
                    // client that wants current data does.
                    if !flushed_since_update {
                        cmds.push(vec![s("flushcached"), file.clone()]);
                        flushed_since_update = true;
                    }
                    cmds.push(vec![
                        s("first"),
                        file.clone(),
                        s("--rraindex"),
                        s(g.below(nrra + 1)),
                    ]);
                }
                4 => cmds.push(vec![s("last"), file.clone()]),
                5 => {
                    let d = &g.pick(&ds).name;
                    let mut x = vec![s("xport"), s("-s"), s(from), s("-e"), s(to)];
                    if g.percent(30) {
                        x.extend([s("--step"), s(step * 2)]);
                    }
                    x.push(format!("DEF:a={file}:{d}:{cf}"));
                    x.push(s("CDEF:b=a,2,*"));
                    x.push(s("XPORT:a:a"));
                    x.push(s("XPORT:b:b"));
                    cmds.push(x);
                    flushed_since_update = true;
                }
                6 | 7 => {
                    let d = &g.pick(&ds).name;
                    let mut gr = vec![s("graph"), s("/dev/null"), s("-s"), s(from), s("-e"), s(to)];
                    if g.percent(30) {
                        gr.extend([s("-w"), s(20 + g.below(400))]);
                    }
                    gr.push(format!("DEF:a={file}:{d}:{cf}"));
                    for (i, f) in [
                        "AVERAGE", "MAXIMUM", "MINIMUM", "TOTAL", "FIRST", "LAST", "STDEV",
                        "LSLSLOPE",
                    ]
                    .iter()
                    .enumerate()
                    {
                        if i < 2 || g.percent(40) {
                            gr.push(format!("VDEF:v{i}=a,{f}"));
                            gr.push(format!("PRINT:v{i}:%.17le"));
                        }
                    }
                    if g.percent(30) {
                        gr.push(s("VDEF:p=a,95,PERCENT"));
                        gr.push(s("PRINT:p:%.17le"));
                    }
                    cmds.push(gr);
                    flushed_since_update = true;
                }
                _ => {
                    let mut f = vec![s("flushcached"), file.clone()];
                    if g.percent(20) {
                        f.push(format!("missing{seed}.rrd"));
                    }
                    cmds.push(f);
                    flushed_since_update = true;
                }
            }
        }
    }
    // Finally everything once, with all data flushed.
    cmds.push(vec![
        s("fetch"),
        file.clone(),
        s(rra_cfs[0]),
        s("-s"),
        s(start),
        s("-e"),
        s(now as i64 + step),
    ]);
    cmds.push(vec![s("info"), file.clone()]);
    cmds.push(vec![s("last"), file.clone()]);
    for i in 0..nrra {
        cmds.push(vec![s("first"), file.clone(), s("--rraindex"), s(i)]);
    }
    Case { seed, cmds }
}

/// Paths and INFO's random `cur_row` lines normalised away.
fn normalise(o: &Out, sock: &Path, base: &Path) -> Out {
    let f = |t: &str| {
        let dir = sock
            .parent()
            .map(|d| d.display().to_string())
            .unwrap_or_default();
        t.replace(&sock.display().to_string(), "SOCK")
            .replace(&base.display().to_string(), "BASE")
            // A truncated message may keep only the tail of the socket path.
            .replace("/r.sock", "/S.sock")
            .replace("/c.sock", "/S.sock")
            .replace(&dir, "DIR")
            .lines()
            .filter(|l| !l.contains("].cur_row = "))
            .map(|l| format!("{l}\n"))
            .collect::<String>()
    };
    Out {
        stdout: f(&o.stdout),
        stderr: f(&o.stderr),
        code: o.code,
    }
}

/// Run one command against the daemon on `sock`: with `--daemon`, or (odd seeds) with
/// RRDCACHED_ADDRESS.
fn run_on(args: &[String], sock: &Path, base: &Path, via_env: bool) -> Out {
    let addr = format!("unix:{}", sock.display());
    if via_env {
        return normalise(&rrdtool_env(base, args, Some(&addr)), sock, base);
    }
    let mut a = args.to_vec();
    a.insert(1, addr);
    a.insert(1, s("--daemon"));
    normalise(&rrdtool(base, &a), sock, base)
}

struct Mismatch {
    seed: u64,
    index: usize,
    report: String,
}

fn run_case(c: &Case, r: &Ringlet, d: &Rrdcached) -> Option<Mismatch> {
    for (i, cmd) in c.cmds.iter().enumerate() {
        let env = c.seed % 2 == 1;
        let a = run_on(cmd, &r.sock, &r.base, env);
        let b = run_on(cmd, &d.sock, &d.base, env);
        if std::env::var_os("DAEMON_DIFF_PRINT").is_some() {
            eprintln!("$ {}\n{}{}[{}]", cmd.join(" "), b.stdout, b.stderr, b.code);
        }
        if a != b {
            let mut report = format!("seed {} command {} of {}:\n", c.seed, i + 1, c.cmds.len());
            for (k, cmd) in c.cmds.iter().enumerate().take(i + 1) {
                report.push_str(&format!(
                    "  {}{}\n",
                    if k == i { "> " } else { "  " },
                    cmd.join(" ")
                ));
            }
            report.push_str(&format!(
                "  rrdcached: code {} stdout {:?} stderr {:?}\n  ringlet:   code {} stdout {:?} stderr {:?}\n",
                b.code, b.stdout, b.stderr, a.code, a.stdout, a.stderr
            ));
            return Some(Mismatch {
                seed: c.seed,
                index: i,
                report,
            });
        }
    }
    None
}

#[test]
fn rrdtool_clients_see_the_same_through_both_daemons() {
    if !need(&["rrdtool", "rrdcached"]) {
        return;
    }
    let cases = env_u64("DAEMON_DIFF_CASES").unwrap_or(if in_ci() { 200 } else { 40 });
    let first = env_u64("DAEMON_DIFF_SEED").unwrap_or(1);
    let threads = env_u64("DAEMON_DIFF_THREADS").unwrap_or(4).max(1) as usize;
    let show = env_u64("DAEMON_DIFF_SHOW").unwrap_or(3) as usize;
    let dir = TempDir::new("clients");
    let r = Ringlet::start(dir.path(), &[]);
    let d = Rrdcached::start(dir.path());
    let seeds: Vec<u64> = (first..first + cases).collect();
    let next = AtomicUsize::new(0);
    let bad: Mutex<Vec<Mismatch>> = Mutex::new(Vec::new());
    let commands = AtomicUsize::new(0);
    std::thread::scope(|sc| {
        for _ in 0..threads {
            sc.spawn(|| loop {
                let i = next.fetch_add(1, Ordering::SeqCst);
                let Some(&seed) = seeds.get(i) else { break };
                let c = gen(seed);
                commands.fetch_add(c.cmds.len(), Ordering::Relaxed);
                if let Some(m) = run_case(&c, &r, &d) {
                    bad.lock().unwrap().push(m);
                }
            });
        }
    });
    let mut bad = bad.into_inner().unwrap();
    bad.sort_by_key(|m| m.seed);
    eprintln!(
        "{} cases ({} rrdtool commands on each daemon): {} mismatching",
        cases,
        commands.load(Ordering::Relaxed),
        bad.len()
    );
    if !bad.is_empty() {
        let shown: Vec<&str> = bad.iter().take(show).map(|m| m.report.as_str()).collect();
        let seeds: Vec<String> = bad
            .iter()
            .map(|m| format!("{}@{}", m.seed, m.index + 1))
            .collect();
        panic!(
            "{} of {cases} cases differ (seed@command: {})\n{}",
            bad.len(),
            seeds.join(" "),
            shown.join("\n")
        );
    }
    // Every queued value reached the store as its check at UPDATE time said it would.
    let st = cli::client::stats(&format!("unix:{}", r.sock.display())).expect("STATS");
    assert!(st.iter().any(|l| l == "ApplyErrors: 0"), "{st:?}");
}

#[test]
fn generator_makes_varied_cases() {
    // The generator itself: reproducible by seed, and it covers every command kind.
    let a = gen(7);
    let b = gen(7);
    assert_eq!(a.cmds, b.cmds);
    let mut kinds = std::collections::BTreeSet::new();
    for seed in 1..60 {
        for c in gen(seed).cmds {
            kinds.insert(c[0].clone());
        }
    }
    let want = [
        "create",
        "update",
        "fetch",
        "info",
        "first",
        "last",
        "xport",
        "graph",
        "flushcached",
    ];
    for k in want {
        assert!(kinds.contains(k), "no {k} in 60 cases");
    }
}

#[test]
fn local_readers_fail_openly_on_placeholders() {
    // librrd 1.7.2 runs `update --template` (to map the template), `lastupdate`, `dump` and
    // `tune` on the file itself, after a FLUSH, even with --daemon. Through ringlet the file
    // is a placeholder: each fails with librrd's own error, none prints numbers, and the
    // series is untouched. The same without a daemon, for rrdtool and the Python binding.
    if !need(&["rrdtool"]) {
        return;
    }
    let dir = TempDir::new("placeholder");
    let r = Ringlet::start(dir.path(), &[]);
    let create = "create x.rrd --start 1795199760 --step 60 DS:d0:GAUGE:120:U:U DS:d1:GAUGE:120:U:U RRA:LAST:0.5:1:10";
    let fetch = "fetch x.rrd LAST -s 1795199760 -e 1795199880";
    let cmd = |c: &str| c.split(' ').map(String::from).collect::<Vec<String>>();
    assert_eq!(run_on(&cmd(create), &r.sock, &r.base, false).code, 0);
    assert_eq!(
        run_on(&cmd("update x.rrd 1795199820:1:2"), &r.sock, &r.base, false).code,
        0
    );
    let before = run_on(&cmd(fetch), &r.sock, &r.base, false);
    assert!(before
        .stdout
        .contains("1795199820: 1.0000000000e+00 2.0000000000e+00"));
    for c in [
        "update x.rrd -t d1:d0 1795199880:3:4",
        "updatev x.rrd -t d1 1795199880:3",
        "lastupdate x.rrd",
        "dump x.rrd",
        "tune x.rrd -h d0:777",
    ] {
        // RRDCACHED_ADDRESS: updatev takes no --daemon.
        let o = run_on(&cmd(c), &r.sock, &r.base, true);
        assert_eq!(o.code, 1, "{c}: {o:?}");
        let quiet = if c.starts_with("updatev") {
            "return_value = -1\n"
        } else {
            ""
        };
        assert_eq!(o.stdout, quiet, "{c}: no numbers");
        assert!(o.stderr.contains("is not an RRD file"), "{c}: {o:?}");
    }
    assert_eq!(
        run_on(&cmd(fetch), &r.sock, &r.base, false),
        before,
        "untouched"
    );
    // Without a daemon: rrdtool on the placeholder itself.
    for c in [
        "fetch x.rrd LAST",
        "info x.rrd",
        "last x.rrd",
        "lastupdate x.rrd",
    ] {
        let o = rrdtool_env(&r.base, &cmd(c), None);
        assert_eq!(o.code, 1, "{c}: {o:?}");
        // rrdtool last prints -1 when it fails.
        let quiet = if c.starts_with("last ") { "-1\n" } else { "" };
        assert_eq!(o.stdout, quiet, "{c}: no numbers");
        assert_eq!(o.stderr, "ERROR: 'x.rrd' is not an RRD file\n", "{c}");
    }
    // The Python binding (Debian's python3-rrdtool), where installed.
    let py = std::process::Command::new("/usr/bin/python3")
        .arg("-c")
        .arg("import rrdtool, sys\ntry:\n  print(rrdtool.lastupdate(sys.argv[1]))\nexcept rrdtool.OperationalError as e:\n  print('error:', e); sys.exit(3)")
        .arg(r.base.join("x.rrd"))
        .output();
    match py {
        Ok(o) if o.status.code() == Some(3) => {
            let out = String::from_utf8_lossy(&o.stdout);
            assert!(
                out.starts_with("error: ") && out.contains("is not an RRD file"),
                "{out}"
            );
        }
        Ok(o) if String::from_utf8_lossy(&o.stderr).contains("No module named") => {
            eprintln!("python3-rrdtool not installed: binding check skipped");
            assert!(
                std::env::var_os("CI").is_none(),
                "CI installs python3-rrdtool"
            );
        }
        other => panic!("python binding: {other:?}"),
    }
    // The placeholder tells a person where the series is.
    let text = std::fs::read_to_string(r.base.join("x.rrd")).unwrap();
    assert!(
        text.contains(&r.addr()) && text.contains(&r.store.display().to_string()),
        "{text}"
    );
}
