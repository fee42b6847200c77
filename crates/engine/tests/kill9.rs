//! A real process killed with SIGKILL in the middle of committing: the store reopens with
//! every commit the child reported done, and its state is exactly that of some commit count
//! at least as large (the one in flight may have landed whole; nothing half-done is served).
//!
//! The child is this same test binary, re-run with `KILL9_CHILD_DIR` set (see
//! `kill9_child_loop`): it loops update-update-commit on a real temp directory and prints
//! `committed N` after each commit returns.

mod common;

use common::*;
use engine::Store;
use rrd::Sample;
use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Command, Stdio};

const ENV: &str = "KILL9_CHILD_DIR";
const SERIES: usize = 5;

/// The samples of commit `k` (1-based), deterministic.
fn commit_samples(k: u64) -> Vec<(String, Sample)> {
    let mut rng = Rng::seeded(k);
    (0..SERIES)
        .map(|i| {
            let name = format!("s{i}");
            let time = START + 15 * k as i64;
            let values = match i % 3 {
                0 => vec![format!("{}.{:02}", rng.below(90), rng.below(100))],
                1 => vec![
                    (k * 1000 + rng.below(900)).to_string(),
                    rng.below(7).to_string(),
                ],
                _ => vec![(k * 77).to_string(), rng.below(100).to_string()],
            };
            (
                name,
                Sample {
                    time,
                    usec: 0,
                    values,
                },
            )
        })
        .collect()
}

/// The expected store after `n` commits.
fn model_after(n: u64) -> Model {
    let mut m = Model::default();
    for i in 0..SERIES {
        m.rrds.insert(format!("s{i}"), make_rrd(i as u64));
    }
    for k in 1..=n {
        for (name, s) in commit_samples(k) {
            m.apply(&Op::Update(name, s));
        }
    }
    m
}

fn child_loop(dir: &Path) {
    let mut store = Store::open(dir, small_opts(256 << 10)).expect("child open");
    for i in 0..SERIES {
        store
            .create(&format!("s{i}"), make_rrd(i as u64), false)
            .expect("create");
    }
    store.commit().expect("commit");
    println!("ready");
    for k in 1.. {
        for (name, s) in commit_samples(k) {
            let _ = store.update(&name, &s, &mut |_| {});
        }
        store.commit().expect("commit");
        println!("committed {k}");
    }
}

#[test]
fn kill9_child_loop() {
    // Only does something when run as the child of `sigkill_mid_commit_loses_nothing_committed`.
    if let Ok(dir) = std::env::var(ENV) {
        child_loop(Path::new(&dir));
    }
}

#[test]
fn sigkill_mid_commit_loses_nothing_committed() {
    let dir = TempDir::new("kill9");
    let exe = std::env::current_exe().expect("test binary path");
    for round in 0..3u64 {
        let mut child = Command::new(&exe)
            .args([
                "kill9_child_loop",
                "--exact",
                "--nocapture",
                "--test-threads=1",
            ])
            .env(ENV, &dir.0)
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("spawn child");
        let out = child.stdout.take().expect("child stdout");
        let mut last_done = 0u64;
        let target = 40 + round * 37;
        for line in BufReader::new(out).lines() {
            let Ok(line) = line else { break };
            if let Some(k) = line.strip_prefix("committed ") {
                last_done = k.trim().parse().unwrap_or(last_done);
                if last_done >= target {
                    break;
                }
            }
        }
        // SIGKILL (Child::kill) while the child is committing the next batches.
        child.kill().expect("SIGKILL the child");
        let status = child.wait().expect("reap the child");
        assert_eq!(
            std::os::unix::process::ExitStatusExt::signal(&status),
            Some(9),
            "the child must die by SIGKILL, not exit: {status:?}"
        );
        assert!(last_done >= target, "child stopped early at {last_done}");

        let store = Store::open(&dir.0, small_opts(256 << 10)).expect("reopen after kill");
        let n = ((store.get("s0").expect("s0").last_up - START) / 15) as u64;
        assert!(
            n >= last_done,
            "lost commits: have {n}, child reported {last_done}"
        );
        same(&store, &model_after(n)).unwrap_or_else(|e| panic!("after {n} commits: {e}"));
        drop(store);
        // Next round: the child reopens a store that already holds data; start over clean.
        let _ = std::fs::remove_dir_all(&dir.0);
        std::fs::create_dir_all(&dir.0).expect("recreate temp dir");
    }
}
