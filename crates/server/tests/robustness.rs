//! `ringlet serve` under hostile or heavy clients: hundreds of concurrent updaters, garbage,
//! a 10 MB line, half-closed sockets, a client that does not read its replies. Each test
//! checks that the daemon answers with clear errors, keeps serving everyone else, and loses
//! nothing it accepted (FETCH after FLUSH, and after SIGTERM and a restart on the same store).

mod common;

use common::*;
use std::io::{Read, Write};
use std::path::Path;
use std::time::{Duration, Instant};

const T0: i64 = 1_795_200_000;

fn create(s: &mut std::os::unix::net::UnixStream, file: &str) {
    let r = request(
        s,
        &format!("CREATE {file} -b {T0} -s 1 DS:x:GAUGE:10:U:U RRA:LAST:0.5:1:100000"),
    );
    assert_eq!(r, "0 RRD created OK\n", "CREATE {file}");
}

/// Values of `file` (step 1, LAST) for T0+1 ..= T0+n, as text.
fn values(sock: &Path, file: &str, n: i64) -> Vec<String> {
    fetch_rows(sock, file, "LAST", T0, T0 + n)
        .into_iter()
        .filter(|(t, _)| *t > T0 && *t <= T0 + n)
        .map(|(_, v)| v)
        .collect()
}

fn expect_values(sock: &Path, file: &str, n: i64, value: impl Fn(i64) -> f64) {
    let got = values(sock, file, n);
    assert_eq!(got.len() as i64, n, "{file}: rows");
    for (i, v) in got.iter().enumerate() {
        let want = rrd::fmt::c_exp(value(i as i64 + 1), 17);
        assert_eq!(v, &want, "{file} at T0+{}", i + 1);
    }
}

/// A client on its own thread that PINGs and updates `file` while a test misbehaves
/// elsewhere; returns the worst reply latency seen.
fn bystander(sock: &Path, file: &str, stop: &std::sync::atomic::AtomicBool) -> (Duration, i64) {
    let mut s = connect(sock);
    create(&mut s, file);
    let mut worst = Duration::ZERO;
    let mut n = 0;
    while !stop.load(std::sync::atomic::Ordering::SeqCst) && n < 100_000 {
        let t = Instant::now();
        assert_eq!(request(&mut s, "PING"), "0 PONG\n");
        n += 1;
        let r = request(&mut s, &format!("UPDATE {file} {}:{n}", T0 + n));
        assert_eq!(r, "0 errors, enqueued 1 value(s).\n");
        worst = worst.max(t.elapsed());
        std::thread::sleep(Duration::from_millis(2));
    }
    (worst, n)
}

#[test]
fn many_concurrent_connections_update_and_nothing_is_lost() {
    const CONNS: usize = 300;
    const VALUES: i64 = 40;
    let dir = TempDir::new("conc");
    let mut d = Ringlet::start(dir.path(), &[]);
    // Every connection is open before any of them sends.
    let mut socks: Vec<_> = (0..CONNS).map(|_| connect(&d.sock)).collect();
    let barrier = std::sync::Barrier::new(CONNS);
    std::thread::scope(|sc| {
        for (i, s) in socks.iter_mut().enumerate() {
            let barrier = &barrier;
            sc.spawn(move || {
                let file = format!("c{i}.rrd");
                create(s, &file);
                barrier.wait();
                for k in 1..=VALUES {
                    // Some pipelined, some one by one.
                    if k % 2 == 0 {
                        let v = (i as i64) * 1000 + k;
                        let r = request(s, &format!("UPDATE {file} {}:{v}", T0 + k));
                        assert_eq!(r, "0 errors, enqueued 1 value(s).\n");
                    } else {
                        let v = (i as i64) * 1000 + k;
                        s.write_all(format!("update {file} {}:{v}\nPING\n", T0 + k).as_bytes())
                            .unwrap();
                        assert_eq!(read_reply(s), "0 errors, enqueued 1 value(s).\n");
                        assert_eq!(read_reply(s), "0 PONG\n");
                    }
                }
            });
        }
    });
    drop(socks);
    let mut s = connect(&d.sock);
    let st = request(&mut s, "STATS");
    assert!(
        st.contains(&format!("\nUpdatesReceived: {}\n", CONNS as i64 * VALUES)),
        "{st}"
    );
    for i in (0..CONNS).step_by(7) {
        let file = format!("c{i}.rrd");
        assert!(request(&mut s, &format!("FLUSH {file}")).starts_with("0 Successfully flushed"));
        expect_values(&d.sock, &file, VALUES, |k| (i as f64) * 1000.0 + k as f64);
    }
    assert!(request(&mut s, "STATS").contains("\nApplyErrors: 0\n"));
    drop(s);
    // SIGTERM commits; a new daemon on the same store serves every value.
    let st = d
        .proc
        .stop(libc::SIGTERM, Duration::from_secs(20))
        .expect("exits on SIGTERM");
    assert!(st.success(), "{st:?}");
    let d = Ringlet::start(dir.path(), &[]);
    for i in 0..CONNS {
        expect_values(&d.sock, &format!("c{i}.rrd"), VALUES, |k| {
            (i as f64) * 1000.0 + k as f64
        });
    }
}

#[test]
fn a_name_thousands_of_directories_deep_does_not_kill_the_daemon() {
    // Issue 18, defect 0: CREATE d/d/.../x.rrd under -R then LIST / overflowed a connection
    // thread's stack (recursion per directory level) and aborted the whole process.
    let dir = TempDir::new("deep");
    let mut r = Ringlet::start(dir.path(), &["-R"]);
    let mut s = connect(&r.sock);
    let room = 4000 - r.base.display().to_string().len();
    let deep = format!("{}x.rrd", "d/".repeat(room / 2));
    let reply = request(
        &mut s,
        &format!("CREATE {deep} -b {T0} -s 10 DS:x:GAUGE:20:U:U RRA:LAST:0.5:1:10"),
    );
    assert_eq!(reply, "0 RRD created OK\n");
    for line in ["LIST /", "LIST RECURSIVE /", "LIST RECURSIVE /d/d/d"] {
        let reply = request(&mut s, line);
        assert!(reply.starts_with("1 RRDs\n"), "{line}: {reply}");
    }
    let mut s = connect(&r.sock);
    assert_eq!(request(&mut s, "PING"), "0 PONG\n");
    assert!(r.proc.alive());
    // And the daemon restarts on it (placeholders are checked at open).
    r.proc.stop(libc::SIGTERM, Duration::from_secs(10)).unwrap();
    let r = Ringlet::start(dir.path(), &["-R"]);
    let mut s = connect(&r.sock);
    assert!(request(&mut s, &format!("LAST {deep}")).starts_with("0 "));
}

#[test]
fn garbage_gets_errors_and_other_clients_are_served() {
    let dir = TempDir::new("garbage");
    let d = Ringlet::start(dir.path(), &[]);
    let stop = std::sync::atomic::AtomicBool::new(false);
    std::thread::scope(|sc| {
        let by = sc.spawn(|| bystander(&d.sock, "by.rrd", &stop));
        // Malformed lines and unknown commands: one error each, in order, then PONG.
        let out = converse(
            &d.sock,
            b"FOO\nUPDATE\nFETCH x\n\n\r\nLIST nope\nFIRST a.rrd\nCREATE x.rrd -Q\nPING\n",
        );
        assert_eq!(
            String::from_utf8_lossy(&out),
            "-1 Unknown command: FOO\n\
             -1 Usage: UPDATE <filename> <values> [<values> ...]\n\
             -1 Usage: FETCH <file> <CF> [<start> [<end>] [<column>...]]\n\
             -1 Unknown command: \n\
             -1 Unknown command: \n\
             -1 Usage: LIST [RECURSIVE] /[<path>]\n\
             -1 Usage: FIRST <filename> <rra index>\n\
             -1 Usage: CREATE <filename> [-b start] [-s step] [-O] <DS definitions> <RRA definitions>\n\
             0 PONG\n"
        );
        // Binary garbage, NULs and invalid UTF-8 included: every line gets a reply.
        let mut g = rng(99);
        let mut bytes = Vec::new();
        let mut lines = 0;
        for _ in 0..2000 {
            let len = g.below(200);
            for _ in 0..len {
                let b = g.below(256) as u8;
                if b != b'\n' {
                    bytes.push(b);
                }
            }
            bytes.push(b'\n');
            lines += 1;
        }
        bytes.extend_from_slice(b"PING\n");
        let out = converse(&d.sock, &bytes);
        let text = String::from_utf8_lossy(&out);
        let replies = text.lines().filter(|l| l.starts_with("-1 ")).count();
        assert!(
            text.ends_with("0 PONG\n"),
            "{}",
            &text[text.len().saturating_sub(200)..]
        );
        // A random line may be a command by chance (e.g. "."); every other one is an error.
        assert!(replies >= lines - 5, "{replies} errors for {lines} lines");
        // A 10 MB line: an error naming the limit, then the connection goes on.
        let mut s = connect(&d.sock);
        let mut big = b"UPDATE by.rrd ".to_vec();
        big.resize(10 << 20, b'9');
        big.extend_from_slice(b"\nPING\n");
        let writer = {
            let mut w = s.try_clone().unwrap();
            std::thread::spawn(move || w.write_all(&big))
        };
        assert_eq!(
            read_reply(&mut s),
            "-1 Line too long (more than 1048576 bytes)\n"
        );
        assert_eq!(read_reply(&mut s), "0 PONG\n");
        writer.join().unwrap().unwrap();
        stop.store(true, std::sync::atomic::Ordering::SeqCst);
        let (worst, n) = by.join().unwrap();
        assert!(
            worst < Duration::from_secs(2),
            "a bystander waited {worst:?}"
        );
        let mut s = connect(&d.sock);
        assert!(request(&mut s, "FLUSH by.rrd").starts_with("0 Successfully"));
        expect_values(&d.sock, "by.rrd", n, |k| k as f64);
    });
}

#[test]
fn half_closed_and_abandoned_connections_are_harmless() {
    let dir = TempDir::new("halfclose");
    let mut d = Ringlet::start(dir.path(), &[]);
    let mut s = connect(&d.sock);
    create(&mut s, "h.rrd");
    // Requests, then shutdown(Write): every reply still arrives, then EOF.
    let mut input = String::new();
    for k in 1..=500 {
        input.push_str(&format!("UPDATE h.rrd {}:{k}\n", T0 + k));
    }
    input.push_str("PENDING h.rrd\n");
    let out = String::from_utf8(converse(&d.sock, input.as_bytes())).unwrap();
    assert_eq!(out.matches("0 errors, enqueued 1 value(s).\n").count(), 500);
    assert!(out.contains("500 updates pending\n"));
    // A partial line at EOF is ignored; connecting and closing at once, too.
    assert!(converse(&d.sock, b"UPDATE h.rrd 1795209999:1").is_empty());
    for _ in 0..50 {
        drop(connect(&d.sock));
    }
    // Closing without reading replies: the daemon notices and carries on.
    for _ in 0..20 {
        let mut c = connect(&d.sock);
        c.write_all(b"STATS\nHELP\nHELP BATCH\n").unwrap();
    }
    // Half-closed in the middle of a BATCH: no reply for the batch, its commands ran.
    let out = converse(
        &d.sock,
        format!("BATCH\nUPDATE h.rrd {}:501\n", T0 + 501).as_bytes(),
    );
    assert_eq!(out, b"0 Go ahead.  End with dot '.' on its own line.\n");
    assert_eq!(request(&mut s, "LAST h.rrd"), format!("0 {}\n", T0 + 501));
    assert!(request(&mut s, "FLUSH h.rrd").starts_with("0 Successfully"));
    expect_values(&d.sock, "h.rrd", 501, |k| k as f64);
    assert!(d.proc.alive());
}

#[test]
fn a_client_that_does_not_read_stalls_only_itself() {
    const N: i64 = 60_000;
    let dir = TempDir::new("noread");
    let d = Ringlet::start(dir.path(), &[]);
    let mut s = connect(&d.sock);
    create(&mut s, "slow.rrd");
    let stop = std::sync::atomic::AtomicBool::new(false);
    std::thread::scope(|sc| {
        let by = sc.spawn(|| bystander(&d.sock, "by.rrd", &stop));
        // The writer sends N updates (and more reply bytes than any socket buffer holds)
        // while nobody reads: the daemon's writes to it block, its own requests back up.
        let mut w = s.try_clone().unwrap();
        let writer = sc.spawn(move || {
            let mut buf = String::new();
            for k in 1..=N {
                buf.push_str(&format!("UPDATE slow.rrd {}:{k}\n", T0 + k));
            }
            w.write_all(buf.as_bytes()).unwrap();
            w.shutdown(std::net::Shutdown::Write).unwrap();
        });
        std::thread::sleep(Duration::from_secs(2));
        // Others are served meanwhile.
        let mut o = connect(&d.sock);
        let t = Instant::now();
        assert_eq!(request(&mut o, "PING"), "0 PONG\n");
        assert!(t.elapsed() < Duration::from_secs(1));
        // Now read: every update was answered, and every answered one is kept.
        let mut out = Vec::new();
        s.read_to_end(&mut out).unwrap();
        writer.join().unwrap();
        let text = String::from_utf8(out).unwrap();
        assert_eq!(
            text.matches("0 errors, enqueued 1 value(s).\n").count() as i64,
            N,
            "one reply per update"
        );
        stop.store(true, std::sync::atomic::Ordering::SeqCst);
        let (worst, _) = by.join().unwrap();
        assert!(
            worst < Duration::from_secs(2),
            "a bystander waited {worst:?}"
        );
    });
    let mut o = connect(&d.sock);
    assert!(request(&mut o, "FLUSH slow.rrd").starts_with("0 Successfully"));
    expect_values(&d.sock, "slow.rrd", N, |k| k as f64);
}

#[test]
fn a_client_that_never_reads_and_leaves_loses_nothing_it_was_told() {
    const N: i64 = 60_000;
    let dir = TempDir::new("noread2");
    let d = Ringlet::start(dir.path(), &[]);
    let mut s = connect(&d.sock);
    create(&mut s, "gone.rrd");
    let mut w = connect(&d.sock);
    w.set_write_timeout(Some(Duration::from_secs(3))).unwrap();
    let mut buf = String::new();
    for k in 1..=N {
        buf.push_str(&format!("UPDATE gone.rrd {}:{k}\n", T0 + k));
    }
    // The write stalls once the buffers are full; give up and close without reading.
    let _ = w.write_all(buf.as_bytes());
    drop(w);
    std::thread::sleep(Duration::from_millis(300));
    // Whatever prefix the daemon took is applied without holes.
    let last: i64 = request(&mut s, "LAST gone.rrd")[2..]
        .trim()
        .parse()
        .unwrap();
    let n = last - T0;
    assert!(n > 0 && n <= N, "{n}");
    assert!(request(&mut s, "FLUSH gone.rrd").starts_with("0 Successfully"));
    expect_values(&d.sock, "gone.rrd", n, |k| k as f64);
    assert_eq!(request(&mut s, "PING"), "0 PONG\n");
}

#[test]
fn random_arguments_to_every_command_get_a_reply_and_keep_the_connection() {
    let dir = TempDir::new("fuzz");
    let d = Ringlet::start(dir.path(), &["-R"]);
    let mut s = connect(&d.sock);
    create(&mut s, "a.rrd");
    let names: Vec<&str> = proto::COMMANDS
        .iter()
        .map(|c| c.name)
        .filter(|n| !matches!(*n, "QUIT" | "BATCH" | "."))
        .collect();
    let pool = [
        "a.rrd",
        "b.rrd",
        "sub/c.rrd",
        "../x.rrd",
        "/etc/passwd",
        "/",
        "",
        "RECURSIVE",
        "AVERAGE",
        "MAX",
        "FOO",
        "0",
        "-1",
        "1",
        "x",
        "99999999999999999999999",
        "-99999999999999999999999",
        "9223372036854775807",
        "-9223372036854775808",
        "0x7fffffffffffffff",
        "1795200060",
        "1795200060:1",
        "1795200061.5:2",
        "N:1",
        "1795200070:U",
        "1795200080:1e308",
        "1795200090:-1e308",
        "1795200100:nan",
        "1795200110:inf",
        "1:2:3:4",
        "-b",
        "-s",
        "-O",
        "-r",
        "-t",
        "-h",
        "xsd",
        "DS:x:GAUGE:10:U:U",
        "DS:y:COUNTER:1:0:0",
        "DS:x:COMPUTE:x,x,+",
        "RRA:AVERAGE:0.5:1:10",
        "RRA:MAX:2:0:0",
        "RRA:HWPREDICT:10:0.1:0.0035:5",
        "x",
    ];
    let mut g = rng(4242);
    for i in 0..3000 {
        let mut line = (*g.pick(&names)).to_string();
        if g.percent(50) {
            line = line.to_lowercase();
        }
        for _ in 0..g.below(7) {
            line.push(' ');
            let tok: &&str = g.pick(&pool);
            line.push_str(tok);
        }
        s.write_all(format!("{line}\nPING\n").as_bytes()).unwrap();
        let r = read_reply(&mut s);
        assert!(!r.is_empty(), "no reply to {line:?} (line {i})");
        assert_eq!(
            read_reply(&mut s),
            "0 PONG\n",
            "after {line:?} (line {i}): {r}"
        );
    }
    assert!(
        d.log_text().lines().all(|l| !l.contains("panicked")),
        "{}",
        d.log_text()
    );
}

#[test]
fn a_batch_of_ten_thousand_updates_is_answered_and_applied() {
    // rrdcached #1188: clients hang after some hundred UPDATEs in a BATCH.
    const N: i64 = 10_000;
    let dir = TempDir::new("bigbatch");
    let d = Ringlet::start(dir.path(), &[]);
    let mut s = connect(&d.sock);
    create(&mut s, "b.rrd");
    let mut input = String::from("BATCH\n");
    for k in 1..=N {
        input.push_str(&format!("UPDATE b.rrd {}:{k}\n", T0 + k));
    }
    input.push_str(&format!("UPDATE b.rrd {}:0\n.\n", T0 + 1));
    let out = converse(&d.sock, input.as_bytes());
    assert_eq!(
        String::from_utf8_lossy(&out),
        format!(
            "0 Go ahead.  End with dot '.' on its own line.\n1 errors\n{} illegal attempt to update using time {}.000000 when last update time is {}.000000 (minimum one second step)\n",
            N + 1,
            T0 + 1,
            T0 + N
        )
    );
    assert!(request(&mut s, "FLUSH b.rrd").starts_with("0 Successfully"));
    expect_values(&d.sock, "b.rrd", N, |k| k as f64);
}

#[test]
fn racing_updates_of_one_file_keep_every_accepted_value() {
    const THREADS: usize = 32;
    const EACH: usize = 200;
    let dir = TempDir::new("race");
    let d = Ringlet::start(dir.path(), &[]);
    let mut s = connect(&d.sock);
    let r = request(
        &mut s,
        &format!("CREATE r.rrd -b {T0} -s 1 DS:x:GAUGE:100000:U:U RRA:LAST:0.5:1:100000"),
    );
    assert_eq!(r, "0 RRD created OK\n");
    let clock = std::sync::atomic::AtomicI64::new(1);
    let accepted = std::sync::Mutex::new(Vec::new());
    std::thread::scope(|sc| {
        for _ in 0..THREADS {
            sc.spawn(|| {
                let mut c = connect(&d.sock);
                for _ in 0..EACH {
                    let k = clock.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                    let r = request(&mut c, &format!("UPDATE r.rrd {}:{k}", T0 + k));
                    if r == "0 errors, enqueued 1 value(s).\n" {
                        accepted.lock().unwrap().push(k);
                    } else {
                        assert!(r.starts_with("-1 illegal attempt to update"), "{r}");
                    }
                }
            });
        }
    });
    let mut accepted = accepted.into_inner().unwrap();
    accepted.sort();
    assert!(!accepted.is_empty());
    assert!(request(&mut s, "FLUSH r.rrd").starts_with("0 Successfully"));
    let n = (THREADS * EACH) as i64;
    let rows = fetch_rows(&d.sock, "r.rrd", "LAST", T0, T0 + n);
    // Row k is the value of the first accepted update at or after k (a gauge holds its value
    // back to the previous update), so each accepted k reads as itself.
    for k in &accepted {
        let (_, v) = rows.iter().find(|(t, _)| *t == T0 + k).expect("row");
        assert_eq!(v, &rrd::fmt::c_exp(*k as f64, 17), "accepted value {k}");
    }
    let last = *accepted.last().unwrap();
    assert_eq!(request(&mut s, "LAST r.rrd"), format!("0 {}\n", T0 + last));
    // Every queued value reached the store as its check at UPDATE time said it would.
    let st = request(&mut s, "STATS");
    assert!(st.contains("\nApplyErrors: 0\n"), "{st}");
}

#[test]
fn socket_mode_and_permissions_apply_to_the_following_socket() {
    use std::os::unix::fs::PermissionsExt;
    let dir = TempDir::new("mode");
    let d = Ringlet::start(dir.path(), &["-m", "0600", "-P", "PING", "--"]);
    let mode = std::fs::metadata(&d.sock).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o600);
    let out = converse(&d.sock, b"PING\nSTATS\nHELP PING\nQUIT\n");
    assert_eq!(
        String::from_utf8_lossy(&out),
        "0 PONG\n-1 Permission denied.\n4 Help for PING\nUsage: PING\n\nPING given, PONG returned\n\n"
    );
}

#[test]
fn connections_past_the_limit_get_an_error_and_slots_come_back() {
    let dir = TempDir::new("maxconn");
    let d = Ringlet::start(dir.path(), &["--max-connections", "4"]);
    // The start-up probe's connection may still be winding down.
    std::thread::sleep(Duration::from_millis(200));
    let mut held: Vec<_> = (0..4).map(|_| connect(&d.sock)).collect();
    for s in held.iter_mut() {
        assert_eq!(request(s, "PING"), "0 PONG\n");
    }
    let mut extra = connect(&d.sock);
    let mut out = String::new();
    extra.read_to_string(&mut out).unwrap();
    assert_eq!(out, "-1 Too many connections\n");
    drop(held);
    std::thread::sleep(Duration::from_millis(200));
    let mut again = connect(&d.sock);
    assert_eq!(request(&mut again, "PING"), "0 PONG\n");
}

#[test]
fn a_client_that_sends_a_byte_at_a_time_holds_up_nobody() {
    // Issue 18, defect 8: slow clients must not hold other clients up.
    let dir = TempDir::new("slowwriter");
    let d = Ringlet::start(dir.path(), &[]);
    let mut s = connect(&d.sock);
    create(&mut s, "slow.rrd");
    let sock = d.sock.clone();
    let slow = std::thread::spawn(move || {
        let mut c = connect(&sock);
        for b in format!("UPDATE slow.rrd {}:1\n", T0 + 10).bytes() {
            c.write_all(&[b]).unwrap();
            std::thread::sleep(Duration::from_millis(60));
        }
        let mut line = String::new();
        std::io::BufRead::read_line(&mut std::io::BufReader::new(c), &mut line).unwrap();
        line
    });
    let mut worst = Duration::ZERO;
    let t0 = Instant::now();
    while t0.elapsed() < Duration::from_secs(1) {
        let t = Instant::now();
        assert_eq!(request(&mut s, "PING"), "0 PONG\n");
        worst = worst.max(t.elapsed());
        std::thread::sleep(Duration::from_millis(20));
    }
    assert!(worst < Duration::from_millis(500), "a PING took {worst:?}");
    assert_eq!(slow.join().unwrap(), "0 errors, enqueued 1 value(s).\n");
}

#[test]
fn the_connection_limit_is_the_daemons_not_each_listeners() {
    // Issue 18, defect 8: the cap was counted per listener (10,000 connections over three
    // sockets made 10,003 threads).
    let dir = TempDir::new("maxconn2");
    let second = dir.path().join("second.sock");
    let l2 = format!("unix:{}", second.display());
    let mut d = Ringlet::start(dir.path(), &["--max-connections", "6", "-l", &l2]);
    std::thread::sleep(Duration::from_millis(200));
    let threads = |pid: u32| -> usize {
        let s = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
        s.lines()
            .find_map(|l| l.strip_prefix("Threads:"))
            .unwrap()
            .trim()
            .parse()
            .unwrap()
    };
    let idle = threads(d.proc.pid());
    let mut held = Vec::new();
    let mut refused = 0;
    for i in 0..10 {
        let sock = if i % 2 == 0 { &d.sock } else { &second };
        let mut s = connect(sock);
        use std::io::Write;
        // A refused connection may be closed before the request goes out.
        let _ = s.write_all(b"PING\n");
        let mut line = String::new();
        std::io::BufRead::read_line(&mut std::io::BufReader::new(&mut s), &mut line).unwrap();
        match line.as_str() {
            "0 PONG\n" => held.push(s),
            "-1 Too many connections\n" => refused += 1,
            other => panic!("{other}"),
        }
    }
    assert_eq!((held.len(), refused), (6, 4), "6 in all, over both sockets");
    assert!(
        threads(d.proc.pid()) <= idle + 6,
        "a thread per connection, no more"
    );
    assert!(d.proc.alive());
}

#[test]
fn run_requests_keep_the_protocols_rules() {
    // RUN (the CLI beside the daemon) is a command like the others: -P, BATCH, usage errors,
    // bad input, and what it runs cannot reach the daemon's files.
    let dir = TempDir::new("run");
    let d = Ringlet::start(dir.path(), &["-P", "PING", "--"]);
    let out = converse(&d.sock, b"RUN 1700000000 0 info x.rrd\nRUNINPUT 00\nPING\n");
    assert_eq!(
        String::from_utf8_lossy(&out),
        "-1 Permission denied.\n-1 Permission denied.\n0 PONG\n"
    );
    drop(d);
    let dir = TempDir::new("run2");
    let d = Ringlet::start(dir.path(), &[]);
    let out = converse(
        &d.sock,
        b"RUN 1700000000\nRUNINPUT zz\nRUNINPUT abc\nBATCH\nRUN 1700000000 0 last x.rrd\n.\nPING\n",
    );
    assert_eq!(
        String::from_utf8_lossy(&out),
        "-1 Usage: RUN <seconds> <microseconds> <command> [<argument> ...]\n\
         -1 RUNINPUT: not hex\n\
         -1 RUNINPUT: odd number of hex digits\n\
         0 Go ahead.  End with dot '.' on its own line.\n\
         1 errors\n1 Can't use 'RUN' here.\n\
         0 PONG\n"
    );
    // A dump to a file is written by the client, never by the daemon.
    let mut s = connect(&d.sock);
    create(&mut s, "x.rrd");
    let target = dir.path().join("written-by-daemon.xml");
    let r = request(
        &mut s,
        &format!("RUN 1700000000 0 dump x.rrd {}", target.display()),
    );
    let status: Vec<&str> = r.lines().next().unwrap().split(' ').collect();
    assert_eq!(
        &status[1..3],
        ["0", "-1"],
        "no output, no error, a file: {status:?}"
    );
    assert!(!target.exists(), "the daemon wrote a client's file");
    // Input a RUN did not use is gone with it.
    let out = converse(
        &d.sock,
        b"RUNINPUT 3c3e\nRUN 1700000000 0 info x.rrd\nRUN 1700000000 0 restore - y.rrd\n",
    );
    let text = String::from_utf8_lossy(&out);
    assert!(
        text.ends_with("eCould not create xml reader for: -\n"),
        "{text}"
    );
}

#[test]
fn a_fetch_being_answered_does_not_hold_up_other_clients() {
    // Issue 18, defect 7: FETCH built its whole reply under the store lock, so a second
    // client's LAST waited for it. With the reply built slowly (a test hook makes it take
    // 1.5 s), LAST must be answered before the FETCH is.
    let dir = TempDir::new("slowfetch");
    let d = Ringlet::start_env(dir.path(), &[], &[("RINGLET_FAIL_POINT", "slow-fetch")]);
    let mut s = connect(&d.sock);
    create(&mut s, "big.rrd");
    create(&mut s, "small.rrd");
    let sock = d.sock.clone();
    let fetch = std::thread::spawn(move || {
        let mut c = connect(&sock);
        let r = request(&mut c, &format!("FETCH big.rrd AVERAGE {T0} {}", T0 + 3600));
        (Instant::now(), r)
    });
    std::thread::sleep(Duration::from_millis(300));
    let sent = Instant::now();
    let r = request(&mut s, "LAST small.rrd");
    let waited = sent.elapsed();
    assert!(r.starts_with("0 "), "{r}");
    let (_, fr) = fetch.join().unwrap();
    assert!(fr.contains(" Success\n"), "{fr}");
    // Held behind the lock, LAST would wait out the rest of the 1.5 s (about 1.2 s).
    assert!(
        waited < Duration::from_millis(700),
        "LAST waited {waited:?} for the FETCH"
    );
}

/// The daemon's resident memory, from /proc.
fn rss_kb(pid: u32, key: &str) -> u64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .unwrap_or_default()
        .lines()
        .find_map(|l| l.strip_prefix(key))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap_or(0)
}

#[test]
fn a_flood_of_unknown_names_is_refused_with_bounded_memory_and_others_are_served() {
    // Issue 21: a client sending distinct unknown names must not grow the daemon (no entry
    // is made for a name that is not a series), nor stop other clients.
    let dir = TempDir::new("unknown-names");
    let d = Ringlet::start(dir.path(), &[]);
    // 300,000 each way in every test run; `RINGLET_FLOOD_NAMES=1000000` for the issue's
    // million (docs/DURABILITY.md).
    let n: usize = std::env::var("RINGLET_FLOOD_NAMES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(300_000);
    let stop = std::sync::atomic::AtomicBool::new(false);
    std::thread::scope(|sc| {
        let by = sc.spawn(|| bystander(&d.sock, "by.rrd", &stop));
        // Pipelined, one reply each.
        let mut s = connect(&d.sock);
        let mut r = s.try_clone().unwrap();
        let reader = std::thread::spawn(move || {
            let mut errors = 0usize;
            for _ in 0..n {
                if read_line(&mut r).starts_with("-1 ") {
                    errors += 1;
                }
            }
            errors
        });
        let mut buf = Vec::with_capacity(1 << 20);
        for i in 0..n {
            buf.extend_from_slice(format!("UPDATE flood/name{i}.rrd N:1\n").as_bytes());
            if buf.len() > (1 << 20) - 64 {
                s.write_all(&buf).unwrap();
                buf.clear();
            }
        }
        s.write_all(&buf).unwrap();
        assert_eq!(reader.join().unwrap(), n);
        let after_lines = rss_kb(d.proc.pid(), "VmRSS:");
        // In one BATCH: the reply counts them all, a line each.
        let mut b = connect(&d.sock);
        let mut text = b"BATCH\n".to_vec();
        for i in 0..n {
            text.extend_from_slice(format!("UPDATE flood/batch{i}.rrd N:1\n").as_bytes());
        }
        text.extend_from_slice(b".\n");
        let mut w = b.try_clone().unwrap();
        let writer = std::thread::spawn(move || w.write_all(&text));
        assert!(read_reply(&mut b).starts_with("0 Go ahead"));
        let head = read_line(&mut b);
        assert_eq!(head, format!("{n} errors\n"));
        for k in 0..n {
            let l = read_line(&mut b);
            assert!(l.starts_with(&format!("{} ", k + 1)), "{l}");
        }
        writer.join().unwrap().unwrap();
        stop.store(true, std::sync::atomic::Ordering::SeqCst);
        let (worst, m) = by.join().unwrap();
        assert!(
            worst < Duration::from_secs(5),
            "a bystander waited {worst:?}"
        );
        let mut c = connect(&d.sock);
        assert!(request(&mut c, "FLUSH by.rrd").starts_with("0 Successfully"));
        expect_values(&d.sock, "by.rrd", m, |k| k as f64);
        // No entry for any of them: the pipelined flood left the daemon's memory where a
        // daemon with one series is (tens of MB); the batch's peak is its reply, a line an
        // error (about 70 bytes here), given back after.
        let peak = rss_kb(d.proc.pid(), "VmHWM:");
        eprintln!("RSS after {n} unknown names: {after_lines} kB; peak with the batch {peak} kB");
        assert!(after_lines < 100_000, "{after_lines} kB after the flood");
        assert!(peak < 300_000, "peak {peak} kB");
    });
}

/// Read one line from a TCP stream (a reply), or what is there at EOF.
fn tcp_line(s: &mut std::net::TcpStream) -> String {
    let mut out = Vec::new();
    let mut b = [0u8; 1];
    while let Ok(1) = s.read(&mut b) {
        out.push(b[0]);
        if b[0] == b'\n' {
            break;
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

#[test]
fn tcp_clients_cannot_take_the_unix_sockets_slots() {
    // The review (issue 44, defect 7): 4,096 idle TCP connections took every slot of the
    // daemon and every new client, unix socket included, got `-1 Too many connections`.
    let dir = TempDir::new("tcpslots");
    let port = free_port();
    let tcp = format!("127.0.0.1:{port}");
    let d = Ringlet::start(dir.path(), &["--max-connections", "6", "-l", &tcp]);
    std::thread::sleep(Duration::from_millis(200));
    let (mut held, mut refused) = (Vec::new(), 0);
    for _ in 0..8 {
        let mut s = std::net::TcpStream::connect(&tcp).unwrap();
        s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
        let _ = s.write_all(b"PING\n");
        match tcp_line(&mut s).as_str() {
            "0 PONG\n" => held.push(s),
            "-1 Too many connections\n" => refused += 1,
            other => panic!("{other:?}"),
        }
    }
    assert_eq!((held.len(), refused), (3, 5), "TCP takes half the slots");
    // The unix socket has the rest.
    let mut local: Vec<_> = (0..3).map(|_| connect(&d.sock)).collect();
    for s in local.iter_mut() {
        assert_eq!(request(s, "PING"), "0 PONG\n");
    }
    let mut extra = connect(&d.sock);
    let mut out = String::new();
    extra.read_to_string(&mut out).unwrap();
    assert_eq!(out, "-1 Too many connections\n");
}

#[test]
fn an_idle_tcp_connection_is_closed_and_a_unix_one_is_not() {
    let dir = TempDir::new("idle");
    let port = free_port();
    let tcp = format!("127.0.0.1:{port}");
    let d = Ringlet::start(dir.path(), &["--idle-timeout", "1", "-l", &tcp]);
    let mut t = std::net::TcpStream::connect(&tcp).unwrap();
    t.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    let mut u = connect(&d.sock);
    t.write_all(b"PING\n").unwrap();
    assert_eq!(tcp_line(&mut t), "0 PONG\n");
    let start = Instant::now();
    // Nothing sent for the timeout: the daemon closes it (EOF, not the test's own timeout).
    assert_eq!(tcp_line(&mut t), "");
    let waited = start.elapsed();
    assert!(
        waited >= Duration::from_millis(900) && waited < Duration::from_secs(8),
        "{waited:?}"
    );
    assert_eq!(request(&mut u, "PING"), "0 PONG\n");
    // A client that keeps talking is not cut off.
    let mut busy = std::net::TcpStream::connect(&tcp).unwrap();
    busy.set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    for _ in 0..6 {
        busy.write_all(b"PING\n").unwrap();
        assert_eq!(tcp_line(&mut busy), "0 PONG\n");
        std::thread::sleep(Duration::from_millis(400));
    }
}

#[test]
fn under_minus_b_nothing_outside_the_base_is_written_through_a_link() {
    // The review (issue 44, defect 6): anyone who can write in -b could make the daemon
    // write or delete outside it: (a) a link planted at a placeholder's temporary name,
    // (b) a series' directory swapped for a link while the daemon was stopped (a real .rrd
    // there was replaced by a placeholder, its data gone), (c) RUN (the CLI beside the
    // daemon) creating a series through a link that CREATE refuses.
    let dir = TempDir::new("minusb");
    let outside = dir.path().join("outside");
    std::fs::create_dir_all(&outside).unwrap();
    let victim = outside.join("victim.txt");
    std::fs::write(&victim, "ORIGINAL").unwrap();
    let mut rrd_bytes = b"RRD\0".to_vec();
    rrd_bytes.resize(700, 7);
    std::fs::write(outside.join("keep.rrd"), &rrd_bytes).unwrap();
    let mut d = Ringlet::start(dir.path(), &[]);
    // (a)
    let planted = d.base.join(format!("new.rrd.ringlet-tmp-{}", d.proc.pid()));
    std::os::unix::fs::symlink(&victim, &planted).unwrap();
    let mut s = connect(&d.sock);
    create(&mut s, "new.rrd");
    std::fs::create_dir_all(d.base.join("d")).unwrap();
    std::fs::create_dir_all(d.base.join("e")).unwrap();
    create(&mut s, "d/x.rrd");
    create(&mut s, "e/keep.rrd");
    assert_eq!(std::fs::read_to_string(&victim).unwrap(), "ORIGINAL");
    assert!(std::fs::symlink_metadata(d.base.join("new.rrd"))
        .unwrap()
        .is_file());
    // (c)
    std::os::unix::fs::symlink(&outside, d.base.join("link")).unwrap();
    let r = request(
        &mut s,
        "RUN 1700000000 0 create link/b.rrd -s 10 DS:v:GAUGE:20:U:U RRA:AVERAGE:0.5:1:10",
    );
    assert!(r.contains("link/b.rrd: Permission denied"), "{r}");
    assert!(request(&mut s, "LIST RECURSIVE /")
        .lines()
        .all(|l| !l.contains("link")));
    drop(s);
    assert!(d
        .proc
        .stop(libc::SIGTERM, Duration::from_secs(20))
        .is_some());
    // (b)
    for sub in ["d", "e"] {
        std::fs::remove_dir_all(d.base.join(sub)).unwrap();
        std::os::unix::fs::symlink(&outside, d.base.join(sub)).unwrap();
    }
    let before = std::fs::read_dir(&outside).unwrap().count();
    let d2 = Ringlet::start(dir.path(), &[]);
    let mut s = connect(&d2.sock);
    assert_eq!(request(&mut s, "PING"), "0 PONG\n");
    // What the daemon does at start with the series' paths is done before it serves.
    std::thread::sleep(Duration::from_millis(500));
    let after = std::fs::read_dir(&outside).unwrap().count();
    assert_eq!(before, after, "files made outside the base directory");
    assert_eq!(std::fs::read(outside.join("keep.rrd")).unwrap(), rrd_bytes);
    assert_eq!(std::fs::read_to_string(&victim).unwrap(), "ORIGINAL");
}

#[test]
fn listeners_recover_once_the_file_descriptors_come_back() {
    // The review (issue 44, defect 4): slow connections exhausted the daemon's file
    // descriptors and the HTTP listener stopped accepting for good, even after the flood.
    // Here the daemon may hold 64 descriptors; 80 connections are held on its HTTP port,
    // then let go: each listener answers again.
    use std::os::unix::process::CommandExt;
    let dir = TempDir::new("emfile");
    let hport = free_port();
    let sock = dir.path().join("r.sock");
    std::fs::create_dir_all(dir.path().join("db")).unwrap();
    let log = std::fs::File::create(dir.path().join("ringlet.log")).unwrap();
    let mut cmd = std::process::Command::new(RINGLET);
    cmd.args(["-g", "-l"])
        .arg(format!("unix:{}", sock.display()))
        .arg("-b")
        .arg(dir.path().join("db"))
        .arg("--store")
        .arg(dir.path().join("store"))
        .args(["--http", &hport.to_string()])
        .stdin(std::process::Stdio::null())
        .stdout(log.try_clone().unwrap())
        .stderr(log);
    // SAFETY: setrlimit only, between fork and exec.
    unsafe {
        cmd.pre_exec(|| {
            let lim = libc::rlimit {
                rlim_cur: 64,
                rlim_max: 64,
            };
            if libc::setrlimit(libc::RLIMIT_NOFILE, &lim) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    let mut p = Proc::adopt(cmd.spawn().unwrap(), "ringlet serve");
    wait_for_socket(&sock, &mut p, &dir.path().join("ringlet.log"));
    let held: Vec<std::net::TcpStream> = (0..80)
        .filter_map(|_| std::net::TcpStream::connect(("127.0.0.1", hport)).ok())
        .collect();
    assert!(held.len() >= 64, "{} held", held.len());
    std::thread::sleep(Duration::from_millis(500));
    drop(held);
    let t = Instant::now();
    loop {
        let answered = std::panic::catch_unwind(|| http_get(hport, "/version"));
        if answered.is_ok_and(|b| b.trim() == "1.1.8") {
            break;
        }
        assert!(
            t.elapsed() < Duration::from_secs(20),
            "HTTP never answered again"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    let mut s = connect(&sock);
    assert_eq!(request(&mut s, "PING"), "0 PONG\n");
    assert!(p.alive());
}
