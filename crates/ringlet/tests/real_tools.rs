//! Real tools, unchanged, from Debian's packages, on a ringlet view: the scripts in
//! `tests/real/` start them (and the daemon) in a mount namespace of their own, under
//! `timeout`, in a directory under the system's temp directory, and print what they checked.
//!
//! - `munin.sh`: munin-update with its dbdir on the view over `-b` and `rrdcached_socket` set
//!   (the daemon run as `-U munin`), against a second Munin master on plain files; Munin's
//!   local create and tune, its state files beside the RRDs, munin-limits, munin-html,
//!   munin-graph and munin-cgi-graph.
//! - `ganglia.sh`: gmetad writing through the daemon, ganglia-web (PHP) reading the view.
//! - `cacti.sh`: Debian's Cacti with `path_rrdtool` = ringlet beside `ringlet serve -b` on
//!   its rra directory, against a second Cacti on rrdtool's files, polled at the same fake
//!   times with the same values: every RRD the same (`dump`), Cacti's graphs the same PNGs.
//! - `graphite.sh`: graphite-web (Debian's) as the oracle of `--http`: the same points in
//!   whisper files and through `--carbon`; every target of `graphite-targets.txt` gives the
//!   same JSON from ringlet, from graphite-web over the whisper files, from graphite-web
//!   reading ringlet as its `CLUSTER_SERVERS`, and from ringlet over the whisper files
//!   imported with `ringlet import whisper`; the tagged series' queries of
//!   `graphite-tag-targets.txt` (seriesByTag, aliasByTags) against graphite-web's tag
//!   database.
//! - `graphite-diff.sh`: the Graphite differential: random expressions generated from
//!   graphite-web's own function table (every one of its 151 functions called, nested,
//!   with wildcards, tags, pipes, templates, keyword arguments, second targets and Grafana's options)
//!   rendered by ringlet and by graphite-web over the same nine days of points: the same
//!   series, names, tags and floats, or refused by both; `/functions` the same table;
//!   `/metrics/find` and `/metrics/expand` with their options, the `/tags` calls and
//!   `/version` the same answers.
//!   `GRAPHITE_DIFF_CASES` (default 1000) and `GRAPHITE_DIFF_SEED` choose the run.
//! - `scaleout.sh`: carbon-c-relay (Debian's) spreads points over three ringlet nodes by
//!   consistent hash with replication 2; graphite-web reads the three as its
//!   `CLUSTER_SERVERS` and gives the whisper oracle's JSON, also with one node stopped.
//!
//! - `web.sh`: the web page of `--http` in headless Chromium (Debian's), driven over the
//!   DevTools protocol (`cdp.py`): the tree and the search over 2,002 series (one of them named in HTML), a chart whose
//!   legend gives `rrdtool fetch --daemon`'s min/avg/max/last, drag to zoom, double-click,
//!   the URL, live refresh and the Disk panel against STATS; screenshots of each view in
//!   `target/tmp/web-shots/`.
//!
//! - `diskfull.sh`: the daemon's store on a 40 MB tmpfs filled to its last byte: checkpoints
//!   fail, then commits (UPDATE refuses with the reason, CREATE gets the file system's
//!   error); once space is freed commits go on, and after a restart every value a FLUSHALL
//!   acknowledged is served.
//!
//! Needs root, /dev/fuse, unshare, and the packages scripts/setup installs; without them the
//! tests say so, and fail in CI (which has them).

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

const BIN: &str = env!("CARGO_BIN_EXE_ringlet");

fn have(cmd: &str) -> bool {
    Command::new("sh")
        .args(["-c", cmd])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

/// Whether this machine can run the script's tools; `needs` are shell tests of them.
fn can_run(what: &str, needs: &[&str]) -> bool {
    // SAFETY: geteuid cannot fail.
    let root = unsafe { libc::geteuid() } == 0;
    can_run_with(what, needs, root && Path::new("/dev/fuse").exists())
}

/// [`can_run`], with `base` what the script needs besides `needs` (root and FUSE, or
/// nothing).
fn can_run_with(what: &str, needs: &[&str], base: bool) -> bool {
    let missing: Vec<&str> = needs.iter().copied().filter(|c| !have(c)).collect();
    let ok = base && missing.is_empty();
    if !ok {
        eprintln!(
            "{what} needs root, /dev/fuse and {missing:?} (scripts/setup installs them): not run here"
        );
        assert!(
            std::env::var_os("CI").is_none(),
            "CI runs as root with FUSE and scripts/setup's packages: {what} must run"
        );
    }
    ok
}

struct Dir(PathBuf);
impl Drop for Dir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Run `tests/real/<script>` in a new mount namespace; returns its stdout, or fails with
/// everything it left to read.
fn run(script: &str, tag: &str, limit_s: u32) -> String {
    run_in(script, tag, limit_s, true)
}

/// [`run`], in a mount namespace of its own only if `mounts`.
fn run_in(script: &str, tag: &str, limit_s: u32, mounts: bool) -> String {
    let dir = Dir(std::env::temp_dir().join(format!("ringlet-real-{tag}-{}", std::process::id())));
    let _ = std::fs::remove_dir_all(&dir.0);
    std::fs::create_dir_all(&dir.0).unwrap();
    // The tools' own users (munin, nobody) reach it.
    let _ = Command::new("chmod").arg("755").arg(&dir.0).status();
    let here = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/real");
    let ns: &[&str] = if mounts {
        &["unshare", "-m", "--propagation", "private"]
    } else {
        &[]
    };
    let o = Command::new("timeout")
        .args(["-k", "5", &limit_s.to_string()])
        .args(ns)
        .arg("bash")
        .arg(here.join(script))
        .env("RINGLET", BIN)
        .env("T", &dir.0)
        .env("HERE", &here)
        // Screenshots and such, kept after the test (under target/, not in git).
        .env(
            "SHOTS",
            Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("{tag}-shots")),
        )
        .output()
        .expect("unshare");
    let out = String::from_utf8_lossy(&o.stdout).to_string();
    if !o.status.success() {
        let mut logs = String::new();
        for f in walk(&dir.0) {
            if f.extension().is_some_and(|e| e == "log") {
                let text = std::fs::read_to_string(&f).unwrap_or_default();
                let tail: Vec<&str> = text.lines().rev().take(30).collect();
                logs += &format!("--- {} (last lines)\n", f.display());
                for l in tail.into_iter().rev() {
                    logs += l;
                    logs.push('\n');
                }
            }
        }
        panic!(
            "{script} failed: {:?}\nstdout:\n{out}\nstderr:\n{}\n{logs}",
            o.status,
            String::from_utf8_lossy(&o.stderr)
        );
    }
    out
}

fn walk(d: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    if let Ok(rd) = std::fs::read_dir(d) {
        for e in rd.flatten() {
            let p = e.path();
            if e.file_type().is_ok_and(|t| t.is_dir()) {
                out.extend(walk(&p));
            } else {
                out.push(p);
            }
        }
    }
    out
}

/// The targets a list in `tests/real/` holds (a line each; `#` comments).
fn targets(file: &str) -> usize {
    std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/real")
            .join(file),
    )
    .unwrap()
    .lines()
    .filter(|l| !l.trim().is_empty() && !l.starts_with('#'))
    .count()
}

fn expect(out: &str, lines: &[&str]) {
    for want in lines {
        assert!(
            out.lines().any(|l| l.starts_with(want)),
            "{want:?} not in:\n{out}"
        );
    }
}

#[test]
fn munin_updates_through_the_daemon_and_draws_from_the_view() {
    let needs = [
        "command -v unshare runuser python3 rrdtool",
        "test -x /usr/share/munin/munin-update",
        "test -x /usr/lib/munin/cgi/munin-cgi-graph",
        "perl -MCGI::Fast -e 1",
        "id munin",
    ];
    if !can_run("the Munin test", &needs) {
        return;
    }
    let out = run("munin.sh", "munin", 280);
    expect(
        &out,
        &[
            "RRD FILES SAME: 3",
            "MAX TUNED",
            "VALUES RIGHT",
            "MUNIN-GRAPH DREW",
            "MUNIN-CGI-GRAPH SAME",
        ],
    );
}

#[test]
fn cacti_with_ringlet_as_its_rrdtool_keeps_and_draws_what_cacti_on_files_does() {
    let needs = [
        "command -v unshare mariadbd mariadb-install-db mariadb-dump php rrdtool perl",
        "test -f /usr/share/cacti/cli/install_cacti.php",
        "test -f /usr/share/doc/cacti/cacti.sql",
        "test -f /usr/lib/x86_64-linux-gnu/faketime/libfaketimeMT.so.1",
        "php -m | grep -qi pdo_mysql",
    ];
    // SAFETY: geteuid cannot fail.
    if !can_run_with("the Cacti test", &needs, unsafe { libc::geteuid() } == 0) {
        return;
    }
    let out = run("cacti.sh", "cacti", 600);
    expect(
        &out,
        &[
            "RRD FILES SAME: 5",
            "ALONE RRD FILES SAME: 5",
            "GRAPHS SAME: 4",
            "BOOST RRD FILES SAME: 5 (",
            "BOOST ALONE RRD FILES SAME: 5",
            "BOOST GRAPHS SAME: 4",
            "SPIKEKILL SAME: 5",
        ],
    );
}

#[test]
fn gmetad_writes_through_the_daemon_and_ganglia_web_draws_from_the_view() {
    let needs = [
        "command -v unshare python3 rrdtool gmetad php curl",
        "test -f /usr/share/ganglia-webfrontend/graph.php",
        "id ganglia",
    ];
    if !can_run("the Ganglia test", &needs) {
        return;
    }
    let out = run("ganglia.sh", "ganglia", 280);
    expect(
        &out,
        &[
            "GMETAD FILES SAME: 12",
            "GANGLIA-WEB PAGES",
            "GANGLIA-WEB GRAPHS SAME",
        ],
    );
}

/// What the graphite-web tests need: Debian's graphite-web and python3-whisper.
const GRAPHITE_WEB: [&str; 2] = [
    "/usr/bin/python3 -c 'import whisper, django, graphite'",
    "test -f /usr/lib/python3/dist-packages/graphite/settings.py",
];

#[test]
fn graphite_web_gives_what_ringlets_render_api_gives() {
    if !can_run_with("the graphite-web test", &GRAPHITE_WEB, true) {
        return;
    }
    let out = run_in("graphite.sh", "graphite", 280, false);
    let n = targets("graphite-targets.txt");
    assert!(n >= 50, "{n} targets");
    assert!(out.contains("IMPORTED: 10 imported, 0 skipped"), "{out}");
    let tags = targets("graphite-tag-targets.txt");
    assert_eq!(
        out.lines().filter(|l| l.starts_with("SAME TAGS: ")).count(),
        tags,
        "{out}"
    );
    assert_eq!(
        out.lines().filter(|l| l.starts_with("SAME: ")).count(),
        n,
        "{out}"
    );
    assert!(!out.contains("DIFF"), "{out}");
}

#[test]
fn graphite_web_and_ringlet_agree_on_random_expressions_of_every_function() {
    if !can_run_with("the Graphite differential test", &GRAPHITE_WEB, true) {
        return;
    }
    let cases: usize = std::env::var("GRAPHITE_DIFF_CASES")
        .ok()
        .and_then(|c| c.parse().ok())
        .unwrap_or(1000);
    let limit = 300 + (cases / 8) as u32;
    let out = run_in("graphite-diff.sh", "graphite-diff", limit, false);
    let line = out
        .lines()
        .find(|l| l.starts_with("GRAPHITE DIFF: "))
        .unwrap_or_else(|| panic!("{out}"));
    assert!(
        line.contains(&format!("{cases} expressions, {cases} same"))
            && line.contains(", 0 different, 151 of 151 functions called"),
        "{out}"
    );
    assert!(out.contains("FUNCTIONS SAME: 151\n"), "{out}");
    assert!(out.contains("ENDPOINTS SAME: 34 of 34\n"), "{out}");
    assert!(!out.lines().any(|l| l.starts_with("DIFF:")), "{out}");
}

#[test]
fn carbon_c_relay_spreads_over_three_nodes_and_graphite_web_reads_them_all() {
    let needs = [
        "command -v carbon-c-relay",
        "/usr/bin/python3 -c 'import whisper, django, graphite'",
    ];
    if !can_run_with("the scale-out test", &needs, true) {
        return;
    }
    let out = run_in("scaleout.sh", "scaleout", 280, false);
    let n = targets("graphite-targets.txt");
    expect(&out, &["POINTS ON TWO NODES EACH: 4830"]);
    assert!(out.contains(&format!("THREE NODES SAME: {n}\n")), "{out}");
    assert!(out.contains(&format!("ONE NODE DOWN SAME: {n}\n")), "{out}");
}

#[test]
fn the_web_page_finds_charts_zooms_and_shows_the_disk_in_chromium() {
    let needs = ["command -v chromium rrdtool python3"];
    if !can_run_with("the web page test", &needs, true) {
        return;
    }
    let out = run_in("web.sh", "web", 280, false);
    expect(
        &out,
        &[
            "FIRST CHART MS",
            "TREE LISTS: 2002 series",
            "CHART DRAWN",
            "SEARCH FILTERS",
            "COMPARE: 2 series",
            "ZOOM REQUESTS",
            "DOUBLE-CLICK RESETS",
            "URL RESTORES",
            "LIVE REFRESH",
            "DISK PANEL: 2002 series",
        ],
    );
    eprintln!("{out}");
}

#[test]
fn a_full_disk_refuses_values_loses_nothing_and_goes_on_when_space_returns() {
    let needs = ["command -v unshare mount umount python3"];
    // SAFETY: geteuid cannot fail.
    let root = unsafe { libc::geteuid() } == 0;
    if !can_run_with("the full-disk test", &needs, root) {
        return;
    }
    let out = run("diskfull.sh", "diskfull", 200);
    expect(
        &out,
        &[
            "REFUSED WHILE FULL",
            "CREATE WHILE FULL: -1 RRD Error: creating",
            "WENT ON",
            "ACKNOWLEDGED",
            "LOGGED: a failed checkpoint, then commits going on",
            "NOTHING LOST",
        ],
    );
    eprintln!("{out}");
}
