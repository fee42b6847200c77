//! Differential tests: ringlet's CLI against the real rrdtool 1.7.2, byte for byte.
//!
//! Each case is generated from a seed (`diff::gen`): a random schema, `create`, update calls
//! with deliberate errors, then every read command. The same command lines go to `rrdtool` in
//! one empty directory and to `ringlet --store DIR` in another; stdout, stderr and exit status
//! of every command must be identical (info's layout keys excepted).
//!
//! Environment:
//! - `DIFF_CASES`: cases to run (default 500 with CI=true or in release builds, 40 otherwise).
//! - `DIFF_SEED`: first seed (default 1); case i uses seed DIFF_SEED+i. One case:
//!   `DIFF_SEED=1234 DIFF_CASES=1`.
//! - `DIFF_ONLY=fetch,info`: compare only these commands (all still run).
//! - `DIFF_SKIP_FEATURES=tricky-number,...`: leave out cases with these generator features, to
//!   look past a known difference.
//! - `DIFF_THREADS` (default 2); `DIFF_SHOW`: reproducers printed (default 3), each shrunk
//!   unless `DIFF_MINIMIZE=0`.
//! - `DIFF_RINGLET`: another binary to test instead of this build's, run as
//!   `BIN --store DIR <command> ...`.
//! - `DIFF_TUNE_CASES`, `DIFF_SOURCE_CASES`, `DIFF_HW_CASES`: cases of the tune, `create
//!   --source` and Holt-Winters tests (default as `DIFF_CASES`).
//! - `DIFF_GEN_CASES`: cases of the generator self-check (default 100 with CI=true or in
//!   release builds, 40 otherwise; feature coverage is checked from 100); `DIFF_PRINT`: the
//!   self-check prints every command with rrdtool's output.
//!
//! rrdtool must be on PATH; without it the tests fail under CI=true and are skipped otherwise.

mod diff;

use diff::case::{Case, Expect, Kind};
use diff::compare::differences;
use diff::exec::{rrdtool_available, run_case, Output, Tool};
use diff::gen::generate;
use diff::minimize::minimize;
use diff::report::{headline, reproducer, summary, CaseResult};
use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

fn env_u64(name: &str) -> Option<u64> {
    std::env::var(name).ok().and_then(|v| v.trim().parse().ok())
}

/// Cases a test runs unless told: `full` with CI=true or in a release build, else 40.
fn default_cases(full: u64) -> u64 {
    if in_ci() || !cfg!(debug_assertions) {
        full
    } else {
        40
    }
}

fn in_ci() -> bool {
    std::env::var("CI").is_ok_and(|v| v == "true" || v == "1")
}

/// False (after saying why) when rrdtool is missing outside CI.
fn need_rrdtool() -> bool {
    if rrdtool_available() {
        return true;
    }
    assert!(!in_ci(), "rrdtool is not on PATH: run scripts/setup");
    eprintln!("rrdtool not found on PATH: differential tests skipped");
    false
}

fn seeds(default_cases: u64) -> Vec<u64> {
    let n = env_u64("DIFF_CASES").unwrap_or(default_cases);
    let first = env_u64("DIFF_SEED").unwrap_or(1);
    (0..n).map(|i| first + i).collect()
}

fn work_dir(tag: &str, seed: u64) -> PathBuf {
    std::env::temp_dir().join(format!("ringlet-diff-{}-{tag}-{seed}", std::process::id()))
}

/// Run `f` on every seed over `DIFF_THREADS` threads; results in seed order.
fn parallel<T: Send>(seeds: &[u64], f: impl Fn(u64) -> T + Sync) -> Vec<T> {
    let threads = env_u64("DIFF_THREADS").unwrap_or(2).max(1) as usize;
    let next = AtomicUsize::new(0);
    let out: Mutex<Vec<(usize, T)>> = Mutex::new(Vec::new());
    std::thread::scope(|s| {
        for _ in 0..threads {
            s.spawn(|| loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                if i >= seeds.len() {
                    break;
                }
                let r = f(seeds[i]);
                out.lock().unwrap_or_else(|e| e.into_inner()).push((i, r));
            });
        }
    });
    let mut v = out.into_inner().unwrap_or_else(|e| e.into_inner());
    v.sort_by_key(|(i, _)| *i);
    v.into_iter().map(|(_, r)| r).collect()
}

fn only_filter() -> Option<BTreeSet<Kind>> {
    let v = std::env::var("DIFF_ONLY").ok()?;
    let set: BTreeSet<Kind> = v
        .split(',')
        .map(str::trim)
        .filter(|w| !w.is_empty())
        .map(|w| Kind::from_word(w).unwrap_or_else(|| panic!("DIFF_ONLY: unknown command {w:?}")))
        .collect();
    Some(set)
}

fn compare_case(
    case: &Case,
    rrd: &[Output],
    ours: &[Output],
    only: &Option<BTreeSet<Kind>>,
) -> CaseResult {
    let mut r = CaseResult {
        seed: case.seed,
        mismatches: Vec::new(),
        per_kind: BTreeMap::new(),
        reproducer: None,
        headline: None,
    };
    for (i, step) in case.steps.iter().enumerate() {
        if only.as_ref().is_some_and(|o| !o.contains(&step.kind)) {
            continue;
        }
        let d = differences(step.kind, &rrd[i], &ours[i]);
        let e = r.per_kind.entry(step.kind).or_default();
        if d.is_empty() {
            e.0 += 1;
        } else {
            e.1 += 1;
            if r.reproducer.is_none() {
                r.reproducer = Some(reproducer(case, i, &d, rrd, ours));
                r.headline = Some(headline(case, i, &d, rrd, ours));
            }
            r.mismatches.push((i, step.kind, d));
        }
    }
    r
}

#[test]
fn ringlet_cli_matches_rrdtool_byte_for_byte() {
    if !need_rrdtool() {
        return;
    }
    let default = default_cases(500);
    differential(seeds(default));
}

/// Cases whose seeds are in `diff::gen::TUNED` and up: every one tunes its file with DS and
/// RRA changes (data sources and archives added and removed, rows added and removed, the step
/// divided) before its last updates and reads.
#[test]
fn tune_changes_match_rrdtool_byte_for_byte() {
    if !need_rrdtool() {
        return;
    }
    // 400 in CI (the Graphite differential took the minute 100 more took; DIFF_TUNE_CASES
    // for more).
    differential(forced_seeds_of(
        diff::gen::TUNED,
        "DIFF_TUNE_CASES",
        400,
        |f| f.contains("tune") && f.iter().any(|f| MODIFY.contains(f)),
    ));
}

/// The seeds after `base` that a test of one generator path runs (`env`, else `full` in CI
/// or a release build), each checked to take that path (`takes`).
fn forced_seeds_of(
    base: u64,
    env: &str,
    full: u64,
    takes: impl Fn(&BTreeSet<&'static str>) -> bool,
) -> Vec<u64> {
    let n = env_u64(env).unwrap_or(default_cases(full));
    let seeds: Vec<u64> = (1..=n).map(|i| base + i).collect();
    assert!(seeds.iter().all(|&s| takes(&generate(s).features)));
    seeds
}

/// Cases whose seeds are in `diff::gen::SOURCED` and up: every one makes a new file from its
/// own (and sometimes from a second) with `create --source`, reads it, updates it and reads
/// it again.
#[test]
fn source_creates_match_rrdtool_byte_for_byte() {
    if !need_rrdtool() {
        return;
    }
    // 350 by default (about 2.4 minutes; CI's time went to the Holt-Winters cases).
    differential(forced_seeds_of(
        diff::gen::SOURCED,
        "DIFF_SOURCE_CASES",
        350,
        |f| f.contains("source"),
    ));
}

/// Cases whose seeds are in `diff::gen::HOLT` and up: their file has Holt-Winters archives
/// (`diff::hw_gen`), updated, read by every CF, dumped, restored, some tuned with the
/// Holt-Winters options (`DIFF_HW_CASES`; 100 by default, about 1.5 minutes, to keep CI's
/// time: `DIFF_HW_CASES=500` for the issue's count, about 6.5 minutes).
#[test]
fn holt_winters_match_rrdtool_byte_for_byte() {
    if !need_rrdtool() {
        return;
    }
    differential(forced_seeds_of(
        diff::gen::HOLT,
        "DIFF_HW_CASES",
        100,
        |f| f.contains("holt-winters"),
    ));
}

/// The generator's features of tune's DS and RRA changes.
const MODIFY: &[&str] = &[
    "tune:del-ds",
    "tune:add-ds",
    "tune:del-rra",
    "tune:add-rra",
    "tune:rows",
    "tune:step-change",
    "tune:modify-bad",
];

/// Run `seeds` on both tools and compare (the environment's filters applied).
fn differential(seeds: Vec<u64>) {
    let only = only_filter();
    let bin = std::env::var_os("DIFF_RINGLET").unwrap_or(env!("CARGO_BIN_EXE_ringlet").into());
    let ringlet = Tool::Ringlet(PathBuf::from(bin));
    let started = std::time::Instant::now();
    let skip: Vec<String> = std::env::var("DIFF_SKIP_FEATURES")
        .map(|v| v.split(',').map(|f| f.trim().to_string()).collect())
        .unwrap_or_default();
    let seeds: Vec<u64> = seeds
        .into_iter()
        .filter(|&s| {
            skip.is_empty()
                || !generate(s)
                    .features
                    .iter()
                    .any(|f| skip.iter().any(|k| k == f))
        })
        .collect();
    let results = parallel(&seeds, |seed| {
        let case = generate(seed);
        let (dr, dg) = (work_dir("rrdtool", seed), work_dir("ringlet", seed));
        let rrd = run_case(&Tool::Rrdtool, &case, &dr, None);
        let ours = run_case(&ringlet, &case, &dg, Some(&rrd));
        let _ = std::fs::remove_dir_all(&dr);
        let _ = std::fs::remove_dir_all(&dg);
        compare_case(&case, &rrd, &ours, &only)
    });
    let failed: Vec<&CaseResult> = results
        .iter()
        .filter(|r| !r.mismatches.is_empty())
        .collect();
    eprintln!(
        "differential: {} cases in {:.1}s, {} failed\n{}",
        results.len(),
        started.elapsed().as_secs_f64(),
        failed.len(),
        summary(&results)
    );
    for r in failed.iter().take(40) {
        if let Some(h) = &r.headline {
            eprintln!("{h}");
        }
    }
    let show = env_u64("DIFF_SHOW").unwrap_or(3) as usize;
    let shrink = std::env::var("DIFF_MINIMIZE").map_or(true, |v| v != "0");
    for r in failed.iter().take(show) {
        let Some((at, ..)) = r.mismatches.first() else {
            continue;
        };
        let case = generate(r.seed);
        let small = if shrink {
            minimize(&case, *at, &ringlet, &work_dir("shrink", r.seed))
        } else {
            None
        };
        match small {
            Some((small, rrd, ours)) => {
                let last = small.steps.len() - 1;
                let fields = differences(small.steps[last].kind, &rrd[last], &ours[last]);
                eprintln!(
                    "(shrunk from {} to {} commands; DIFF_MINIMIZE=0 shows the original)\n{}",
                    at + 1,
                    small.steps.len(),
                    reproducer(&small, last, &fields, &rrd, &ours)
                );
            }
            None => {
                if let Some(rep) = &r.reproducer {
                    eprintln!("{rep}");
                }
            }
        }
    }
    assert!(
        failed.is_empty(),
        "{} of {} cases differ from rrdtool; first seeds: {:?}",
        failed.len(),
        results.len(),
        failed.iter().take(10).map(|r| r.seed).collect::<Vec<_>>()
    );
}

/// What one rrdtool-only run of a case says about the generator.
struct GenCheck {
    seed: u64,
    broken: Vec<String>,
    features: BTreeSet<&'static str>,
    updates_ok: u64,
    updates_err: u64,
    cells: u64,
    known_cells: u64,
    /// The highest share of known values in one of the case's fetches.
    best_fetch: f64,
}

fn check_generated(seed: u64) -> GenCheck {
    let case = generate(seed);
    let dir = work_dir("gen", seed);
    let outs = run_case(&Tool::Rrdtool, &case, &dir, None);
    let _ = std::fs::remove_dir_all(&dir);
    if std::env::var_os("DIFF_PRINT").is_some() {
        let mut s = format!("=== seed {seed}\n");
        for (st, out) in case.steps.iter().zip(&outs) {
            s.push_str(&format!("$ {}\n", st.shell("rrdtool", &case.steps)));
            s.push_str(&String::from_utf8_lossy(&out.stdout));
            s.push_str(&String::from_utf8_lossy(&out.stderr));
        }
        eprintln!("{s}");
    }
    let mut c = GenCheck {
        seed,
        broken: Vec::new(),
        features: case.features.clone(),
        updates_ok: 0,
        updates_err: 0,
        cells: 0,
        known_cells: 0,
        best_fetch: 0.0,
    };
    for (i, (step, out)) in case.steps.iter().zip(&outs).enumerate() {
        let err = String::from_utf8_lossy(&out.stderr);
        let ok = match &step.expect {
            Expect::Ok => out.status == 0 && out.stderr.is_empty(),
            Expect::Err(frag) => out.status == 1 && err.contains(frag),
            Expect::Any => true,
        };
        if !ok {
            c.broken.push(format!(
                "seed {seed} command {}: expected {:?}, rrdtool exit {} stderr {:?}\n  {}",
                i + 1,
                step.expect,
                out.status,
                err.trim_end(),
                step.shell("rrdtool", &case.steps)
            ));
        }
        if matches!(step.kind, Kind::Update | Kind::Updatev) {
            if out.status == 0 {
                c.updates_ok += 1;
            } else {
                c.updates_err += 1;
            }
        }
        if step.kind == Kind::Fetch && out.status == 0 {
            let (mut n, mut k) = (0, 0);
            for line in String::from_utf8_lossy(&out.stdout).lines().skip(2) {
                for v in line.split_whitespace().skip(1) {
                    n += 1;
                    k += u64::from(!v.contains("nan"));
                }
            }
            c.cells += n;
            c.known_cells += k;
            if n > 0 {
                c.best_fetch = c.best_fetch.max(k as f64 / n as f64);
            }
        }
    }
    c
}

/// The generator's cases do on rrdtool what they were meant to (valid updates accepted, each
/// deliberate error refused with its message), reach every feature, and give mostly known data.
#[test]
fn generated_cases_do_on_rrdtool_what_they_intend() {
    if !need_rrdtool() {
        return;
    }
    let default = default_cases(100);
    let n = env_u64("DIFF_GEN_CASES").unwrap_or(default);
    let first = env_u64("DIFF_SEED").unwrap_or(1);
    let seeds: Vec<u64> = (0..n).map(|i| first + i).collect();
    let checks = parallel(&seeds, check_generated);
    let broken: Vec<&String> = checks.iter().flat_map(|c| &c.broken).collect();
    let feats: BTreeSet<&'static str> = checks
        .iter()
        .flat_map(|c| c.features.iter().copied())
        .collect();
    let (ok, err): (u64, u64) = checks
        .iter()
        .fold((0, 0), |a, c| (a.0 + c.updates_ok, a.1 + c.updates_err));
    let (cells, known) = checks
        .iter()
        .fold((0, 0), |a, c| (a.0 + c.cells, a.1 + c.known_cells));
    let with_data = checks.iter().filter(|c| c.best_fetch >= 0.25).count();
    eprintln!(
        "generator: {n} cases, update calls {ok} ok / {err} refused, fetch cells {known} known of \
         {cells}, {with_data} cases with a fetch at least a quarter known\nfeatures: {}",
        feats.iter().copied().collect::<Vec<_>>().join(" ")
    );
    for b in broken.iter().take(10) {
        eprintln!("{b}");
    }
    assert!(
        broken.is_empty(),
        "{} steps did not do what the generator intended",
        broken.len()
    );
    if n >= 100 {
        let want = [
            "GAUGE",
            "COUNTER",
            "DERIVE",
            "ABSOLUTE",
            "DCOUNTER",
            "DDERIVE",
            "COMPUTE",
            "AVERAGE",
            "MIN",
            "MAX",
            "LAST",
            "wrap32",
            "wrap64",
            "subsecond",
            "same-second",
            "template",
            "gap>hb",
            "gap>retention",
            "U",
            "out-of-range",
            "derive-down",
            "err:time",
            "err:count",
            "err:not-integer",
            "err:template",
            "err:create",
            "create:units",
            "restore:then-update",
            "name:dot-slash",
            "err:bad-float",
            "fetch:align",
            "fetch:resolution",
        ];
        let missing: Vec<&&str> = want.iter().filter(|w| !feats.contains(**w)).collect();
        assert!(missing.is_empty(), "no case exercised {missing:?}");
        assert!(
            ok > 5 * err,
            "too many refused updates: {ok} ok, {err} refused"
        );
        assert!(
            with_data * 2 >= checks.len(),
            "fetches mostly unknown in too many cases"
        );
    }
    let _ = checks.iter().map(|c| c.seed).max();
}

#[test]
fn one_seed_always_generates_the_same_case() {
    let (a, b) = (generate(77), generate(77));
    let lines = |c: &Case| c.steps.iter().map(|s| s.args.join(" ")).collect::<Vec<_>>();
    assert_eq!(lines(&a), lines(&b));
    assert_ne!(lines(&a), lines(&generate(78)));
}

/// What rrdtool itself prints about one `.rrd` file: `info` (without its file name and
/// `cur_row`, which rrdtool's create picks at random), `dump`, `lastupdate`, `first`, `last`,
/// and `fetch` of every consolidation function the file has.
fn read_with_rrdtool(file: &std::path::Path) -> Vec<(String, Vec<u8>)> {
    let run = |args: &[&str]| -> Vec<u8> {
        let o = std::process::Command::new("rrdtool")
            .args(args)
            .env("TZ", "UTC")
            .env("LC_ALL", "C")
            .output()
            .expect("rrdtool");
        let mut v = o.stdout;
        v.extend_from_slice(&o.stderr);
        v.extend_from_slice(format!("exit {:?}", o.status.code()).as_bytes());
        v
    };
    let f = file.to_str().expect("a UTF-8 path");
    let info = run(&["info", f]);
    let text = String::from_utf8_lossy(&info);
    let masked: String = text
        .lines()
        .filter(|l| !l.starts_with("filename = ") && !l.contains("].cur_row = "))
        .map(|l| format!("{l}\n"))
        .collect();
    let num = |key: &str| -> Option<i64> {
        text.lines()
            .find_map(|l| l.strip_prefix(key))
            .and_then(|v| v.trim().parse().ok())
    };
    let step = num("step = ").unwrap_or(1);
    let last = String::from_utf8_lossy(&run(&["last", f]))
        .lines()
        .next()
        .and_then(|l| l.trim().parse::<i64>().ok());
    // Each archive's own span (rows x resolution): a fetch of an unbounded range would make
    // rrdtool (and this test) hold a row for every step of it.
    let mut fetches: Vec<(String, i64, i64)> = Vec::new();
    for i in 0.. {
        let Some(cf) = text.lines().find_map(|l| {
            l.strip_prefix(&format!("rra[{i}].cf = \""))
                .map(|v| v.trim_end_matches('"').to_string())
        }) else {
            break;
        };
        let first = String::from_utf8_lossy(&run(&["first", f, "--rraindex", &i.to_string()]))
            .lines()
            .next()
            .and_then(|l| l.trim().parse::<i64>().ok());
        if let (Some(first), Some(last)) = (first, last) {
            fetches.push((cf, first, last.max(first)));
        }
    }
    let mut out = vec![
        ("info".to_string(), masked.into_bytes()),
        ("dump".to_string(), run(&["dump", f])),
        ("lastupdate".to_string(), run(&["lastupdate", f])),
        ("first".to_string(), run(&["first", f])),
        ("last".to_string(), run(&["last", f])),
    ];
    for (cf, first, last) in fetches {
        let (s, e) = (first.to_string(), last.to_string());
        out.push((
            format!("fetch {cf} -s {s} -e {e}"),
            run(&["fetch", f, &cf, "-s", &s, "-e", &e, "-r", &step.to_string()]),
        ));
    }
    out
}

/// The files ringlet holds (what `ringlet export` writes, the bytes the live view serves) are
/// rrdtool's own: for generated cases, rrdtool reads ringlet's exported file as the file it
/// made itself from the same commands. (`DIFF_CASES`, `DIFF_SEED` as above; default 100 in CI
/// or release builds, 30 otherwise.)
#[test]
fn rrdtool_reads_ringlets_files_as_its_own() {
    if !need_rrdtool() {
        return;
    }
    let default = if in_ci() || !cfg!(debug_assertions) {
        100
    } else {
        30
    };
    let seeds = seeds(default);
    let bin = PathBuf::from(env!("CARGO_BIN_EXE_ringlet"));
    let ringlet = Tool::Ringlet(bin.clone());
    let failures = parallel(&seeds, |seed| {
        let case = generate(seed);
        let (rd, ld) = (work_dir("frd", seed), work_dir("fld", seed));
        let r_out = run_case(&Tool::Rrdtool, &case, &rd, None);
        run_case(&ringlet, &case, &ld, Some(&r_out));
        let exp = ld.join("exp");
        let o = std::process::Command::new(&bin)
            .arg("--store")
            .arg(ld.join("store"))
            .args(["export", "-q"])
            .arg(&exp)
            .output()
            .expect("ringlet export");
        let mut bad = Vec::new();
        let mut compared = 0usize;
        let files: Vec<PathBuf> = std::fs::read_dir(&rd)
            .map(|rd| rd.flatten().map(|e| e.path()).collect())
            .unwrap_or_default();
        for f in files {
            let Some(name) = f.file_name().and_then(|n| n.to_str()).map(str::to_string) else {
                continue;
            };
            // rrdtool's own files that rrdtool can read (a failed restore leaves none).
            if !name.ends_with(".rrd") || read_with_rrdtool(&f)[0].1.ends_with(b"exit Some(1)") {
                continue;
            }
            let mine = exp.join(&name);
            if !mine.exists() {
                bad.push(format!(
                    "seed {seed}: {name} not exported ({})",
                    String::from_utf8_lossy(&o.stderr).trim()
                ));
                continue;
            }
            compared += 1;
            for ((what, want), (_, got)) in
                read_with_rrdtool(&f).iter().zip(read_with_rrdtool(&mine))
            {
                if *want != got {
                    bad.push(format!(
                        "seed {seed}: {name}: rrdtool {what} differs\n--- on rrdtool's file\n{}\n--- on ringlet's\n{}",
                        String::from_utf8_lossy(want),
                        String::from_utf8_lossy(&got)
                    ));
                }
            }
        }
        // DIFF_KEEP=1 keeps both directories (rrdtool's files, ringlet's store and export).
        if std::env::var_os("DIFF_KEEP").is_none() {
            let _ = std::fs::remove_dir_all(&rd);
            let _ = std::fs::remove_dir_all(&ld);
        } else {
            eprintln!("kept {} and {}", rd.display(), ld.display());
        }
        (compared, bad)
    });
    let files: usize = failures.iter().map(|f| f.0).sum();
    // Most cases end with a file rrdtool can read: the comparison is not vacuous.
    assert!(
        files >= seeds.len() / 2,
        "{files} files compared in {} cases",
        seeds.len()
    );
    let bad: Vec<String> = failures.into_iter().flat_map(|f| f.1).collect();
    assert!(
        bad.is_empty(),
        "{} differences in {} cases:\n{}\nthe first:\n{}",
        bad.len(),
        seeds.len(),
        bad.iter()
            .map(|b| b.lines().next().unwrap_or(""))
            .collect::<Vec<_>>()
            .join("\n"),
        bad[0]
    );
}
