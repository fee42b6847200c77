//! Power cuts at the block device (issue 21), small enough for every test run: `bench/crash.sh`
//! on ext4 and on xfs. The daemon's store sits on a real file system on a loop device over
//! `blockrec`'s FUSE recorder while `blockrec load` sends updates and FLUSHALLs; crash images
//! (the state at flushes, and between them with part of the writes lost) are mounted, the
//! store opened and every acknowledged update looked for. A lying disk (flushes acknowledged,
//! not kept) is the control: the same checks must catch it. docs/DURABILITY.md has the full
//! run's figures.

use std::path::Path;
use std::process::Command;

const BLOCKREC: &str = env!("CARGO_BIN_EXE_blockrec");

fn can_run() -> bool {
    // SAFETY: geteuid cannot fail.
    let root = unsafe { libc::geteuid() } == 0;
    let tools = [
        "unshare",
        "losetup",
        "mount",
        "umount",
        "mkfs.ext4",
        "mkfs.xfs",
    ];
    let missing: Vec<&str> = tools
        .iter()
        .copied()
        .filter(|t| {
            !Command::new("sh")
                .args(["-c", &format!("command -v {t}")])
                .output()
                .is_ok_and(|o| o.status.success())
        })
        .collect();
    let ok = root && Path::new("/dev/fuse").exists() && missing.is_empty();
    if !ok {
        eprintln!(
            "the crash images need root, /dev/fuse and {missing:?} (scripts/setup installs them): not run here"
        );
        assert!(
            std::env::var_os("CI").is_none(),
            "CI runs as root with FUSE and scripts/setup's packages: the crash images must run"
        );
    }
    ok
}

/// Run `bench/<script>` with `args` and the binaries of this build; its output.
fn script(script: &str, args: &[&str]) -> String {
    // The daemon's binary is built beside this package's (the workspace's tests build both).
    let ringlet = Path::new(BLOCKREC).with_file_name("ringlet");
    assert!(ringlet.exists(), "{} is not built", ringlet.display());
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join(script);
    let o = Command::new("timeout")
        .args(["-k", "5", "300", "bash"])
        .arg(&path)
        .args(args)
        .env("RINGLET", &ringlet)
        .env("BLOCKREC", BLOCKREC)
        .output()
        .expect("bash");
    let out = String::from_utf8_lossy(&o.stdout).to_string();
    assert!(
        o.status.success(),
        "{script} {args:?} failed: {:?}\n{out}\n{}",
        o.status,
        String::from_utf8_lossy(&o.stderr)
    );
    out
}

fn crash(fs: &str) -> String {
    let args = ["--images", "40", "--series", "20", "--batches", "40"];
    let more = ["--per", "20", "--control", "40"];
    script("crash.sh", &[&["--fs", fs][..], &args, &more].concat())
}

fn check(fs: &str, out: &str) {
    assert!(
        out.lines()
            .any(|l| l == "images: 40 checked, 40 good, 0 failed"),
        "{fs}: not every crash image was good:\n{out}"
    );
    // The images cover the run: the last ones hold every update, after checkpoints.
    assert!(
        out.lines()
            .any(|l| l.starts_with("ok") && l.contains("800 a series acknowledged")),
        "{fs}: no image after the last acknowledgement:\n{out}"
    );
    let caught = out
        .lines()
        .find_map(|l| l.strip_prefix("the lying disk: losses found in "))
        .unwrap_or_else(|| panic!("{fs}: the control did not report:\n{out}"));
    eprintln!("{fs}: a lying disk caught in {caught}");
}

#[test]
fn power_cuts_at_the_block_device_lose_nothing_acknowledged_on_ext4_and_xfs() {
    if !can_run() {
        return;
    }
    for fs in ["ext4", "xfs"] {
        let out = crash(fs);
        check(fs, &out);
    }
}

/// `bench/faults.sh`: the disk fails every write, or every flush, under the daemon.
fn faults(fs: &str, fail: &str) -> String {
    script("faults.sh", &["--fs", fs, "--fail", fail])
}

#[test]
fn a_failing_disk_gets_no_acknowledgement_serves_nothing_unwritten_and_loses_nothing() {
    if !can_run() {
        return;
    }
    for fs in ["ext4", "xfs"] {
        for fail in ["fail-writes", "fail-flushes"] {
            let out = faults(fs, fail);
            let line = |head: &str| {
                out.lines()
                    .find_map(|l| l.strip_prefix(head))
                    .unwrap_or_else(|| panic!("{fs} {fail}: no {head:?} in\n{out}"))
                    .to_string()
            };
            // The script checks the figures; these are the daemon's words for them (each
            // line's start, or a part of it).
            let words = [
                ("FLUSHALL ON THE FAILING DISK: ", "-1 the commit failed ("),
                ("UPDATE AFTER: ", "a write to the store failed ("),
                (
                    "FETCH AFTER: ",
                    "-1 rrd_fetch_r failed: a write to the store",
                ),
                ("FLUSHALL ON THE HEALED DISK: ", "-1 "),
                ("LOGGED: ", "1 lines of failure"),
                ("STORE: ", "50 a series acknowledged"),
            ];
            for (head, want) in words {
                assert!(
                    line(head).contains(want),
                    "{fs} {fail}: {head}{want}?\n{out}"
                );
            }
            eprintln!("{fs} {fail}: {}", line("SERVED AFTER RESTART: "));
        }
    }
}
