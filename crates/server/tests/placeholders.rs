//! What the daemon leaves under `-b` (docs/PROTOCOL.md, deviation 16): one small placeholder
//! per series, never a copy; a stat-then-create client creates each series once; a real file
//! is imported, then moved aside; full-size copies of earlier versions become placeholders
//! when the store opens, and nothing the store holds is lost on the way.

mod common;

use common::*;
use std::path::Path;
use std::time::Duration;

const T0: i64 = 1_795_200_000;

/// Bytes and files under `dir` (recursively), and how many of the files are placeholders.
fn tree(dir: &Path) -> (u64, usize, usize) {
    let (mut bytes, mut files, mut ph) = (0, 0, 0);
    let mut todo = vec![dir.to_path_buf()];
    while let Some(d) = todo.pop() {
        for e in std::fs::read_dir(&d).unwrap().flatten() {
            let m = e.metadata().unwrap();
            if m.is_dir() {
                todo.push(e.path());
            } else {
                bytes += m.len();
                files += 1;
                if std::fs::read(e.path())
                    .unwrap()
                    .starts_with(b"ringlet placeholder:")
                {
                    ph += 1;
                }
            }
        }
    }
    (bytes, files, ph)
}

/// `rrdtool create NAME --start START` of a one-GAUGE, 100-row file under `base`, locally (as
/// collectd's CreateFiles or a person does), not through the daemon.
fn local_create(base: &Path, name: &str, start: i64) {
    let args: Vec<String> =
        format!("create {name} --start {start} --step 10 DS:x:GAUGE:20:U:U RRA:LAST:0.5:1:100")
            .split(' ')
            .map(String::from)
            .collect();
    assert_eq!(rrdtool(base, &args).code, 0, "rrdtool {args:?}");
}

const DEFS: &str =
    "DS:x:GAUGE:20:U:U RRA:AVERAGE:0.5:6:1440 RRA:AVERAGE:0.5:60:4320 RRA:AVERAGE:0.5:360:8760";

/// A gmetad-like client: stat the file, CREATE it if missing, then UPDATE it.
fn stat_then_create(r: &Ringlet, n: usize, t: i64) -> usize {
    let mut s = connect(&r.sock);
    let mut created = 0;
    for i in 0..n {
        let rel = format!("h{}/m{i}.rrd", i % 7);
        if !r.base.join(&rel).exists() {
            let reply = request(&mut s, &format!("CREATE {rel} -b {T0} -s 10 {DEFS}"));
            assert_eq!(reply, "0 RRD created OK\n");
            created += 1;
        }
        let reply = request(&mut s, &format!("UPDATE {rel} {t}:{i}"));
        assert_eq!(reply, "0 errors, enqueued 1 value(s).\n", "{rel}");
    }
    created
}

#[test]
fn create_leaves_only_placeholders_and_stat_then_create_clients_create_once() {
    let dir = TempDir::new("ph-create");
    let n = 300;
    let mut r = Ringlet::start(dir.path(), &["-R"]);
    assert_eq!(stat_then_create(&r, n, T0 + 10), n);
    let (bytes, files, ph) = tree(&r.base);
    assert_eq!(
        (files, ph),
        (n, n),
        "one placeholder per series, nothing else"
    );
    // At most one block per series (the real rrdtool file for these archives: 116 KB).
    assert!(bytes <= 1024 * n as u64, "{bytes} bytes under -b");
    // FLUSH and FLUSHALL write nothing under -b.
    let mut s = connect(&r.sock);
    assert_eq!(
        request(&mut s, "FLUSH h0/m0.rrd"),
        format!("0 Successfully flushed {}/h0/m0.rrd.\n", r.base.display())
    );
    request(&mut s, "FLUSHALL");
    assert_eq!(tree(&r.base), (bytes, files, ph));
    // The second round finds every file: no CREATE.
    assert_eq!(stat_then_create(&r, n, T0 + 20), 0);
    drop(s);
    // A placeholder lost in a power cut (missing, or empty) is put back at open, so the
    // client does not create the series again over its data.
    r.proc.stop(libc::SIGTERM, Duration::from_secs(10)).unwrap();
    std::fs::remove_file(r.base.join("h1/m1.rrd")).unwrap();
    std::fs::write(r.base.join("h2/m2.rrd"), "").unwrap();
    let r = Ringlet::start(dir.path(), &["-R"]);
    assert!(
        r.log_text().contains("placeholders: 2 written"),
        "{}",
        r.log_text()
    );
    assert_eq!(stat_then_create(&r, n, T0 + 30), 0);
    let rows = fetch_rows(&r.sock, "h1/m1.rrd", "AVERAGE", T0, T0 + 60);
    assert!(!rows.is_empty());
}

#[test]
fn a_file_a_client_created_is_imported_then_moved_aside() {
    if !need(&["rrdtool"]) {
        return;
    }
    let dir = TempDir::new("ph-import");
    let r = Ringlet::start(dir.path(), &[]);
    // collectd's CreateFiles: librrd creates the file locally, then values go to the daemon.
    local_create(&r.base, "c.rrd", T0);
    let original = std::fs::read(r.base.join("c.rrd")).unwrap();
    let mut s = connect(&r.sock);
    assert_eq!(
        request(&mut s, &format!("UPDATE c.rrd {}:7", T0 + 10)),
        "0 errors, enqueued 1 value(s).\n"
    );
    let kept = r.store.join("imported/c.rrd");
    assert_eq!(
        std::fs::read(&kept).unwrap(),
        original,
        "the user's file, intact"
    );
    let ph = std::fs::read_to_string(r.base.join("c.rrd")).unwrap();
    assert!(ph.starts_with("ringlet placeholder:"), "{ph}");
    assert!(r.log_text().contains(&kept.display().to_string()));
    let rows = fetch_rows(&r.sock, "c.rrd", "LAST", T0, T0 + 10);
    let at = rows.iter().find(|r| r.0 == T0 + 10).expect("row at T0+10");
    assert!(at.1.starts_with("7.0"), "{rows:?}");
    // A second file created at the same name later goes beside the first.
    drop(s);
    let dir2 = r.store.join("imported");
    let mut s = connect(&r.sock);
    std::fs::remove_file(r.base.join("c.rrd")).unwrap();
    local_create(&r.base, "c.rrd", T0);
    assert_eq!(request(&mut s, "FORGET c.rrd"), "0 Gone!\n");
    assert!(dir2.join("c.rrd.1").exists());
}

#[test]
fn full_size_copies_of_earlier_versions_become_placeholders_and_nothing_is_lost() {
    if !need(&["rrdtool"]) {
        return;
    }
    let dir = TempDir::new("ph-old");
    let mut r = Ringlet::start(dir.path(), &[]);
    let mut s = connect(&r.sock);
    for f in ["old.rrd", "tuned.rrd"] {
        let reply = request(
            &mut s,
            &format!("CREATE {f} -b {T0} -s 10 DS:x:GAUGE:20:U:U RRA:LAST:0.5:1:100"),
        );
        assert_eq!(reply, "0 RRD created OK\n");
        for k in 1..=5 {
            request(&mut s, &format!("UPDATE {f} {}:{k}", T0 + 10 * k));
        }
    }
    request(&mut s, "FLUSHALL");
    let before = fetch_rows(&r.sock, "old.rrd", "LAST", T0, T0 + 60);
    drop(s);
    r.proc.stop(libc::SIGTERM, Duration::from_secs(10)).unwrap();
    // What ringlet 0.1 left: a full copy as of an earlier FLUSH (older than the store)...
    local_create(&r.base, "old.rrd", T0 + 20);
    // ... and one someone changed since (newer than the store: not ours to delete).
    local_create(&r.base, "tuned.rrd", T0 + 500);
    let tuned = std::fs::read(r.base.join("tuned.rrd")).unwrap();
    let r = Ringlet::start(dir.path(), &[]);
    let log = r.log_text();
    assert!(log.contains("1 full-size copies replaced"), "{log}");
    assert!(log.contains("1 changed files moved aside"), "{log}");
    let (_, files, ph) = tree(&r.base);
    assert_eq!((files, ph), (2, 2));
    assert_eq!(
        std::fs::read(r.store.join("imported/tuned.rrd")).unwrap(),
        tuned
    );
    assert_eq!(fetch_rows(&r.sock, "old.rrd", "LAST", T0, T0 + 60), before);
}

#[test]
fn a_symbolic_link_inside_the_base_directory_does_not_escape_it() {
    // Issue 18, defect 4: with base/link -> /elsewhere, CREATE link/x.rrd under -B answered
    // OK and wrote /elsewhere/x.rrd.
    if !need(&["rrdtool"]) {
        return;
    }
    let dir = TempDir::new("ph-link");
    let elsewhere = dir.path().join("elsewhere");
    std::fs::create_dir_all(&elsewhere).unwrap();
    let r = Ringlet::start(dir.path(), &[]);
    std::os::unix::fs::symlink(&elsewhere, r.base.join("link")).unwrap();
    std::os::unix::fs::symlink(elsewhere.join("f.rrd"), r.base.join("f.rrd")).unwrap();
    // A real file outside, reachable only through the links.
    let a: Vec<String> =
        format!("create f.rrd --start {T0} --step 10 DS:x:GAUGE:20:U:U RRA:LAST:0.5:1:10")
            .split(' ')
            .map(String::from)
            .collect();
    assert_eq!(rrdtool(&elsewhere, &a).code, 0);
    let outside = std::fs::read(elsewhere.join("f.rrd")).unwrap();
    let mut s = connect(&r.sock);
    let b = r.base.display();
    for (line, shown) in [
        (
            format!("CREATE link/x.rrd -b {T0} -s 10 DS:x:GAUGE:20:U:U RRA:LAST:0.5:1:10"),
            "link/x.rrd",
        ),
        (format!("UPDATE link/f.rrd {}:1", T0 + 10), "link/f.rrd"),
        (format!("UPDATE f.rrd {}:1", T0 + 10), "f.rrd"),
        ("FETCH f.rrd LAST".to_string(), "f.rrd"),
        ("INFO link/f.rrd".to_string(), "link/f.rrd"),
        ("FLUSH link/f.rrd".to_string(), "link/f.rrd"),
        ("FORGET f.rrd".to_string(), "f.rrd"),
    ] {
        assert_eq!(
            request(&mut s, &line),
            format!("-1 {b}/{shown}: Permission denied\n"),
            "{line}"
        );
    }
    assert_eq!(
        request(&mut s, "LIST /link"),
        format!("-1 Cannot read: {b}/link\n"),
        "nor listed"
    );
    assert!(!elsewhere.join("x.rrd").exists(), "nothing written outside");
    assert_eq!(
        std::fs::read(elsewhere.join("f.rrd")).unwrap(),
        outside,
        "nor moved"
    );
    assert!(!r.store.join("imported").exists(), "nor imported");
}

/// Wait up to 20 s for `what` in the daemon's log.
fn wait_log(r: &Ringlet, what: &str) -> String {
    let until = std::time::Instant::now() + Duration::from_secs(20);
    loop {
        let log = r.log_text();
        if log.contains(what) || std::time::Instant::now() > until {
            return log;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn placeholders_held_by_a_checkpoint_are_checked_after_the_daemon_serves() {
    if !need(&["rrdtool"]) {
        return;
    }
    let dir = TempDir::new("ph-background");
    // -F: the stop writes a checkpoint, so the next open has no series created after it.
    let mut r = Ringlet::start(dir.path(), &["-F", "-R"]);
    let mut s = connect(&r.sock);
    for i in 0..40 {
        let reply = request(
            &mut s,
            &format!(
                "CREATE d{}/s{i}.rrd -b {T0} -s 10 DS:x:GAUGE:20:U:U RRA:LAST:0.5:1:100",
                i % 3
            ),
        );
        assert_eq!(reply, "0 RRD created OK\n");
        request(
            &mut s,
            &format!("UPDATE d{}/s{i}.rrd {}:{i}", i % 3, T0 + 10),
        );
    }
    drop(s);
    r.proc.stop(libc::SIGTERM, Duration::from_secs(10)).unwrap();
    assert!(r.log_text().contains("wrote a checkpoint at shutdown"));
    // By hand while it was stopped: placeholders deleted, emptied, a whole directory gone,
    // and a full-size copy older than the store's data.
    std::fs::remove_file(r.base.join("d0/s3.rrd")).unwrap();
    std::fs::write(r.base.join("d1/s4.rrd"), b"").unwrap();
    std::fs::remove_dir_all(r.base.join("d2")).unwrap();
    local_create(&r.base, "d0/s6.rrd", T0);
    let r = Ringlet::start(dir.path(), &["-F", "-R"]);
    let log = wait_log(&r, "placeholders of all 40 series checked");
    assert!(
        log.contains("placeholders of the 0 series created since the checkpoint checked"),
        "{log}"
    );
    assert!(
        log.contains("placeholders of all 40 series checked"),
        "{log}"
    );
    assert!(
        log.contains("placeholders: 15 written, 1 full-size copies replaced"),
        "{log}"
    );
    let (_, files, ph) = tree(&r.base);
    assert_eq!((files, ph), (40, 40));
    let mut s = connect(&r.sock);
    for i in [3, 4, 6, 8] {
        let reply = request(&mut s, &format!("LAST d{}/s{i}.rrd", i % 3));
        assert_eq!(reply, format!("0 {}\n", T0 + 10), "s{i}");
    }
}

/// `ringlet serve` without `-b` (the Debian package's defaults): clients name absolute paths.
fn start_without_base(dir: &Path, extra: &[&str]) -> Proc {
    let sock = dir.join("r.sock");
    let log = dir.join("ringlet.log");
    let logf = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(&log)
        .unwrap();
    let child = std::process::Command::new(RINGLET)
        .args(["-g", "-l"])
        .arg(format!("unix:{}", sock.display()))
        .arg("--store")
        .arg(dir.join("store"))
        .args(extra)
        .stdin(std::process::Stdio::null())
        .stdout(logf.try_clone().unwrap())
        .stderr(logf)
        .spawn()
        .unwrap();
    let mut p = Proc::adopt(child, "ringlet serve");
    wait_for_socket(&sock, &mut p, &log);
    p
}

/// Without `-b`, a series' placeholder at its absolute path is put back when the daemon
/// opens the store, with the directory a client had made for it: one a power cut took
/// (created after the checkpoint: before the daemon serves) and one deleted while the
/// daemon was stopped (held by the checkpoint: soon after it serves). A create-if-missing
/// client would otherwise create the series again and its values would become unknown.
#[test]
fn without_a_base_directory_placeholders_at_absolute_paths_are_put_back() {
    let dir = TempDir::new("ph-nobase");
    let files = dir.path().join("rrd");
    let path = |h: &str| files.join(format!("{h}/load.rrd"));
    let create = |s: &mut std::os::unix::net::UnixStream, h: &str| {
        let p = path(h);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        let reply = request(
            s,
            &format!(
                "CREATE {} -b {T0} -s 10 DS:x:GAUGE:20:U:U RRA:LAST:0.5:1:100",
                p.display()
            ),
        );
        assert_eq!(reply, "0 RRD created OK\n");
        let reply = request(s, &format!("UPDATE {} {}:7", p.display(), T0 + 10));
        assert_eq!(reply, "0 errors, enqueued 1 value(s).\n");
    };
    // -F: the stop writes a checkpoint that holds h1.
    let mut p = start_without_base(dir.path(), &["-F"]);
    let sock = dir.path().join("r.sock");
    let mut s = connect(&sock);
    create(&mut s, "h1");
    assert!(std::fs::read(path("h1"))
        .unwrap()
        .starts_with(b"ringlet placeholder:"));
    drop(s);
    p.stop(libc::SIGTERM, Duration::from_secs(10)).unwrap();
    // h2 is created after the checkpoint, committed, and the daemon killed.
    let mut p = start_without_base(dir.path(), &[]);
    let mut s = connect(&sock);
    create(&mut s, "h2");
    assert_eq!(request(&mut s, "FLUSHALL"), "0 Started flush.\n");
    std::thread::sleep(Duration::from_millis(500));
    drop(s);
    p.stop(libc::SIGKILL, Duration::from_secs(10)).unwrap();
    // As a power cut (or a person) leaves them: the placeholders and their directories gone.
    std::fs::remove_dir_all(files.join("h1")).unwrap();
    std::fs::remove_dir_all(files.join("h2")).unwrap();
    let _p = start_without_base(dir.path(), &[]);
    // Created since the checkpoint: back before the daemon serves.
    assert!(
        std::fs::read(path("h2"))
            .unwrap_or_default()
            .starts_with(b"ringlet placeholder:"),
        "h2's placeholder is back when the socket answers"
    );
    let until = std::time::Instant::now() + Duration::from_secs(20);
    while !path("h1").exists() && std::time::Instant::now() < until {
        std::thread::sleep(Duration::from_millis(50));
    }
    assert!(std::fs::read(path("h1"))
        .unwrap_or_default()
        .starts_with(b"ringlet placeholder:"));
    let mut s = connect(&sock);
    for h in ["h1", "h2"] {
        let reply = request(&mut s, &format!("LAST {}", path(h).display()));
        assert_eq!(reply, format!("0 {}\n", T0 + 10), "{h}");
    }
}
