//! `ringlet serve --carbon ADDR`: carbon's plaintext protocol on TCP and UDP. Points become
//! series with the archives carbon's own files give (`--graphite-conf`), each point the value
//! of its slot; malformed lines are counted and logged, never fatal, and the good lines beside
//! them are kept. collectd's write_graphite plugin (Debian's collectd-core) is a real client:
//! what it sent (its csv plugin's files) is what FETCH returns.

mod common;

use common::*;
use std::io::Write;
use std::net::{TcpStream, UdpSocket};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

fn stat(sock: &Path, key: &str) -> Option<u64> {
    let mut s = connect(sock);
    let r = request(&mut s, "STATS");
    r.lines()
        .find_map(|l| l.strip_prefix(&format!("{key}: ")))
        .and_then(|v| v.trim().parse().ok())
}

/// Wait until STATS says `key` reached `n`.
fn wait_stat(sock: &Path, key: &str, n: u64) -> u64 {
    let mut got = 0;
    for _ in 0..600 {
        got = stat(sock, key).unwrap_or(0);
        if got >= n {
            break;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    got
}

fn values(rows: &[(i64, String)]) -> Vec<(i64, f64)> {
    rows.iter()
        .map(|(t, v)| (*t, v.trim().parse().unwrap_or(f64::NAN)))
        .collect()
}

fn at(rows: &[(i64, f64)], t: i64) -> f64 {
    rows.iter()
        .find(|(rt, _)| *rt == t)
        .map_or(f64::INFINITY, |r| r.1)
}

#[test]
fn plaintext_points_become_series_with_carbons_archives() {
    let dir = TempDir::new("carbon");
    let conf = dir.path().join("graphite");
    std::fs::create_dir_all(&conf).unwrap();
    std::fs::write(
        conf.join("storage-schemas.conf"),
        "# test\n[test]\npattern = ^test\\.\nretentions = 10s:1h,1m:1d\n\n[default]\npattern = .*\nretentions = 60s:1d\n",
    )
    .unwrap();
    std::fs::write(
        conf.join("storage-aggregation.conf"),
        "[max]\npattern = \\.max$\nxFilesFactor = 0.25\naggregationMethod = max\n",
    )
    .unwrap();
    let port = free_port();
    let addr = format!("127.0.0.1:{port}");
    let d = Ringlet::start(
        dir.path(),
        &[
            "-w",
            "3600",
            "--carbon",
            &addr,
            "--graphite-conf",
            conf.to_str().unwrap(),
        ],
    );
    let t0: i64 = 1_700_000_000;
    let mut lines = String::new();
    for k in 0..20 {
        // Mid-slot times: each point is its slot's value.
        lines += &format!("test.web.cpu {} {}\n", k as f64 * 1.5, t0 + 10 * k + 3);
    }
    lines += "this is not a point\n";
    lines += "test..empty 1 1700000000\n";
    lines += "test.x/../../etc 1 1700000000\n";
    lines += "test.web.mem 5 1700000005\n";
    // The same slot again: the first point is kept.
    lines += "test.web.mem 6 1700000007\n";
    // Three slots skipped: unknown, then this value.
    lines += "test.web.mem 7 1700000045.9\n";
    lines += "test.web.mem nan 1700000055\n";
    lines += "test.web.mem 8 1700000065\n";
    // Older than what the series holds: dropped.
    lines += "test.web.mem 9 1700000015\n";
    lines += "test.web.cpu.max 3 1700000001\r\n";
    lines += "other.thing 4 1700000000\n";
    lines += &format!("{} 1 1700000000\n", "x".repeat(5000));
    let mut c = TcpStream::connect(&addr).unwrap();
    c.write_all(lines.as_bytes()).unwrap();
    drop(c);
    let u = UdpSocket::bind("127.0.0.1:0").unwrap();
    u.send_to(
        b"test.udp.a 42 1700000000\ntest.udp.a 43 1700000010\nbroken\n",
        &addr,
    )
    .unwrap();
    assert_eq!(
        wait_stat(&d.sock, "CarbonPoints", 28),
        28,
        "{}",
        d.log_text()
    );
    assert_eq!(
        wait_stat(&d.sock, "CarbonLinesRefused", 5),
        5,
        "{}",
        d.log_text()
    );
    assert_eq!(stat(&d.sock, "CarbonPointsLate"), Some(2));
    assert_eq!(stat(&d.sock, "CarbonSeriesCreated"), Some(5));

    let cpu_text = fetch_rows(&d.sock, "test/web/cpu.rrd", "AVERAGE", t0, t0 + 200);
    let cpu = values(&cpu_text);
    for k in 0..20 {
        // rrdtool labels a row by its end: slot k ends at t0 + 10 (k + 1).
        assert_eq!(
            at(&cpu, t0 + 10 * (k + 1)),
            k as f64 * 1.5,
            "slot {k}: {cpu:?}"
        );
    }
    let mem = values(&fetch_rows(
        &d.sock,
        "test/web/mem.rrd",
        "AVERAGE",
        t0,
        t0 + 70,
    ));
    assert_eq!(at(&mem, t0 + 10), 5.0, "{mem:?}");
    for t in [20, 30, 40, 60] {
        assert!(at(&mem, t0 + t).is_nan(), "{t}: {mem:?}");
    }
    assert_eq!(at(&mem, t0 + 50), 7.0, "{mem:?}");
    assert_eq!(at(&mem, t0 + 70), 8.0, "{mem:?}");
    let udp = values(&fetch_rows(
        &d.sock,
        "test/udp/a.rrd",
        "AVERAGE",
        t0,
        t0 + 20,
    ));
    assert_eq!((at(&udp, t0 + 10), at(&udp, t0 + 20)), (42.0, 43.0));

    // The archives from the files: first matching schema and aggregation sections.
    let mut s = connect(&d.sock);
    let info = request(&mut s, "INFO test/web/cpu/max.rrd");
    for want in [
        "step 1 10",
        "ds[value].type 2 GAUGE",
        "ds[value].minimal_heartbeat 1 10",
        "rra[0].rows 1 360",
        "rra[1].cf 2 MAX",
        "rra[1].rows 1 1440",
        "rra[1].pdp_per_row 1 6",
        "rra[1].xff 0 7.5000000000e-01",
    ] {
        assert!(info.lines().any(|l| l == want), "{want:?} not in\n{info}");
    }
    let info = request(&mut s, "INFO other/thing.rrd");
    assert!(
        info.contains("step 1 60\n") && info.contains("rra[0].rows 1 1440\n"),
        "{info}"
    );
    // Placeholders under -b; nothing outside it, nothing for the refused paths.
    assert!(d.base.join("test/web/cpu.rrd").is_file());
    assert!(d.base.join("other/thing.rrd").is_file());
    assert!(!dir.path().join("etc.rrd").exists());
    assert!(!d.base.join("test/x").exists());
    let log = d.log_text();
    assert!(
        log.contains("line refused (not 'path value timestamp')"),
        "{log}"
    );
    assert!(log.contains("line refused (empty path component)"), "{log}");
    assert!(log.contains("line too long"), "{log}");
    drop(s);

    // Committed at shutdown; the series and their values are there after a restart.
    let mut d = d;
    assert!(d
        .proc
        .stop(libc::SIGTERM, Duration::from_secs(20))
        .is_some_and(|st| st.success()));
    let d2 = Ringlet::start(dir.path(), &["-w", "3600"]);
    let cpu2 = fetch_rows(&d2.sock, "test/web/cpu.rrd", "AVERAGE", t0, t0 + 200);
    assert_eq!(cpu2, cpu_text);
}

fn collectd_bin() -> Option<String> {
    ["/usr/sbin/collectd", "/usr/bin/collectd"]
        .iter()
        .find(|p| Path::new(p).is_file())
        .map(|p| p.to_string())
}

/// `epoch,value` lines of a csv plugin's files whose names start with `prefix`.
fn csv_rows(dir: &Path, prefix: &str) -> Vec<(f64, f64)> {
    let mut rows = Vec::new();
    let Ok(rd) = std::fs::read_dir(dir) else {
        return rows;
    };
    for e in rd.flatten() {
        if !e.file_name().to_string_lossy().starts_with(prefix) {
            continue;
        }
        for l in std::fs::read_to_string(e.path())
            .unwrap_or_default()
            .lines()
        {
            let mut it = l.split(',');
            if let (Some(Ok(t)), Some(Ok(v))) = (
                it.next().map(str::parse::<f64>),
                it.next().map(str::parse::<f64>),
            ) {
                rows.push((t, v));
            }
        }
    }
    rows.sort_by(|a, b| a.0.total_cmp(&b.0));
    rows
}

#[test]
fn collectd_write_graphite_feeds_it() {
    let Some(bin) = collectd_bin() else {
        assert!(
            !in_ci(),
            "collectd is not installed: scripts/setup installs collectd-core"
        );
        eprintln!("SKIP: collectd not installed");
        return;
    };
    let dir = TempDir::new("carbon-collectd");
    let conf = dir.path().join("graphite");
    std::fs::create_dir_all(&conf).unwrap();
    // One-second slots for collectd's one-second interval: every value is kept.
    std::fs::write(
        conf.join("storage-schemas.conf"),
        "[collectd]\npattern = ^collectd\\.\nretentions = 1s:1h\n",
    )
    .unwrap();
    let port = free_port();
    let addr = format!("127.0.0.1:{port}");
    let d = Ringlet::start(
        dir.path(),
        &["--carbon", &addr, "--graphite-conf", conf.to_str().unwrap()],
    );
    let csv = dir.path().join("csv");
    let cconf = dir.path().join("collectd.conf");
    std::fs::write(
        &cconf,
        format!(
            r#"Interval 1
BaseDir "{dir}"
PIDFile "{dir}/collectd.pid"
PluginDir "/usr/lib/collectd"
TypesDB "/usr/share/collectd/types.db"
FQDNLookup false
Hostname "ringlet-test"
LoadPlugin logfile
<Plugin logfile>
  LogLevel info
  File STDOUT
</Plugin>
LoadPlugin load
LoadPlugin csv
<Plugin csv>
  DataDir "{csv}"
  StoreRates false
</Plugin>
LoadPlugin write_graphite
<Plugin write_graphite>
  <Node "ringlet">
    Host "127.0.0.1"
    Port "{port}"
    Protocol "tcp"
    Prefix "collectd."
    StoreRates false
    LogSendErrors true
  </Node>
</Plugin>
"#,
            dir = dir.path().display(),
            csv = csv.display(),
        ),
    )
    .unwrap();
    let log = dir.path().join("collectd.log");
    let child = Command::new(&bin)
        .arg("-f")
        .arg("-C")
        .arg(&cconf)
        .stdin(Stdio::null())
        .stdout(std::fs::File::create(&log).unwrap())
        .stderr(std::fs::File::create(dir.path().join("collectd.err")).unwrap())
        .spawn()
        .expect("start collectd");
    let mut p = Proc::adopt(child, "collectd");
    // write_graphite buffers up to 1,428 bytes (about 20 lines) before it sends.
    let got = wait_stat(&d.sock, "CarbonPoints", 20);
    p.stop(libc::SIGTERM, Duration::from_secs(20))
        .expect("collectd exits");
    let logtext = std::fs::read_to_string(&log).unwrap_or_default();
    assert!(got >= 20, "{got} points\n{logtext}\n{}", d.log_text());
    assert_eq!(
        stat(&d.sock, "CarbonLinesRefused"),
        Some(0),
        "{}",
        d.log_text()
    );
    let sent = csv_rows(&csv.join("ringlet-test/load"), "load-");
    assert!(sent.len() >= 5, "{sent:?}");
    let mut s = connect(&d.sock);
    assert!(request(&mut s, "FLUSHALL").starts_with("0 "));
    let name = "collectd/ringlet-test/load/load/shortterm.rrd";
    let first = sent[0].0.floor() as i64 - 2;
    let last = sent[sent.len() - 1].0.floor() as i64 + 2;
    let rows = values(&fetch_rows(&d.sock, name, "AVERAGE", first, last));
    // Every known row is the value collectd sent in that second (write_graphite sends its
    // time rounded to a second; rrdtool labels the row by its end).
    let known: Vec<&(i64, f64)> = rows.iter().filter(|r| r.1.is_finite()).collect();
    assert!(known.len() >= 5, "{rows:?}");
    for (t, v) in known {
        let want = sent.iter().find(|(st, _)| st.round() as i64 + 1 == *t);
        assert!(
            // The csv plugin writes six decimals.
            want.is_some_and(|(_, w)| (w - v).abs() <= 1e-6 * w.abs().max(1.0)),
            "row {t}: {v}, collectd sent {want:?}"
        );
    }
}

/// `n` as 4 bytes, big-endian (carbon's length prefix).
fn be32(n: u32) -> Vec<u8> {
    let mut b = n.to_le_bytes();
    b.reverse();
    b.to_vec()
}

/// A pickle frame: its length, then the pickle.
fn frame(p: &[u8]) -> Vec<u8> {
    let mut f = be32(p.len() as u32);
    f.extend_from_slice(p);
    f
}

#[test]
fn pickled_points_are_taken_and_nothing_in_a_pickle_runs() {
    let dir = TempDir::new("carbon-pickle");
    let port = free_port();
    let d = Ringlet::start(
        dir.path(),
        &["-w", "3600", "--carbon-pickle", &port.to_string()],
    );
    // Python's pickle.dumps([('a.b', (1700000000, 1.5)), ('c', (1700000010, 2))], protocol=2)
    let good: &[u8] = b"\x80\x02]q\x00(X\x03\x00\x00\x00a.bq\x01J\x00\xf1SeG?\xf8\x00\x00\x00\x00\x00\x00\x86q\x02\x86q\x03X\x01\x00\x00\x00cq\x04J\n\xf1SeK\x02\x86q\x05\x86q\x06e.";
    // protocol 0, as Python 2's carbon clients may send: [('a.b', (1700000010, 2.5))]
    let old: &[u8] = b"(lp0\n(S'a.b'\np1\n(I1700000010\nF2.5\ntp2\ntp3\na.";
    let mut wire = frame(good);
    // os.system('touch ...') through GLOBAL and REDUCE: refused, not run.
    let marker = dir.path().join("ran");
    wire.extend(frame(
        format!("cos\nsystem\n(S'touch {}'\ntR.", marker.display()).as_bytes(),
    ));
    // Larger than carbon's 1 MiB: skipped whole, the stream goes on.
    wire.extend(be32(2 << 20));
    wire.extend(vec![b'x'; 2 << 20]);
    // Not a list of points.
    wire.extend(frame(b"K\x05."));
    wire.extend(frame(old));
    let mut c = TcpStream::connect(("127.0.0.1", port)).unwrap();
    c.write_all(&wire).unwrap();
    drop(c);
    assert_eq!(wait_stat(&d.sock, "CarbonPoints", 3), 3, "{}", d.log_text());
    assert_eq!(
        wait_stat(&d.sock, "CarbonLinesRefused", 3),
        3,
        "{}",
        d.log_text()
    );
    assert!(!marker.exists(), "a pickle ran a command");
    let t0 = 1_700_000_000;
    let ab = values(&fetch_rows(&d.sock, "a/b.rrd", "AVERAGE", t0, t0 + 20));
    assert_eq!((at(&ab, t0 + 10), at(&ab, t0 + 20)), (1.5, 2.5), "{ab:?}");
    let c = values(&fetch_rows(&d.sock, "c.rrd", "AVERAGE", t0, t0 + 20));
    assert_eq!(at(&c, t0 + 20), 2.0, "{c:?}");
    let log = d.log_text();
    assert!(log.contains("pickle opcode 0x63 refused"), "{log}");
    assert!(log.contains("pickle larger than 1048576 bytes"), "{log}");
}

#[test]
fn carbon_connections_past_the_limit_are_closed_and_slots_come_back() {
    // The review (issue 44, defect 2): a thread for every connection, without bound, until
    // the process aborted at the kernel's map limit.
    let dir = TempDir::new("carbon-conns");
    let port = free_port();
    let d = Ringlet::start(
        dir.path(),
        &[
            "--carbon",
            &port.to_string(),
            "--carbon-max-connections",
            "3",
        ],
    );
    let addr = format!("127.0.0.1:{port}");
    let held: Vec<TcpStream> = (0..3).map(|_| TcpStream::connect(&addr).unwrap()).collect();
    std::thread::sleep(Duration::from_millis(300));
    // The fourth is closed at once.
    let mut extra = TcpStream::connect(&addr).unwrap();
    extra
        .set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    let mut b = [0u8; 1];
    assert_eq!(std::io::Read::read(&mut extra, &mut b).unwrap_or(0), 0);
    assert_eq!(stat(&d.sock, "CarbonConnections"), Some(3));
    assert!(stat(&d.sock, "CarbonConnectionsRefused").unwrap_or(0) >= 1);
    drop(held);
    std::thread::sleep(Duration::from_millis(300));
    let mut s = TcpStream::connect(&addr).unwrap();
    s.write_all(b"x.y 1 1700000000\n").unwrap();
    drop(s);
    assert_eq!(wait_stat(&d.sock, "CarbonPoints", 1), 1);
}

#[test]
fn new_series_past_max_creates_per_minute_are_counted_not_made() {
    // The review (issue 44, defect 8): 200,000 new paths made 202,000 series in 141 s.
    let dir = TempDir::new("carbon-creates");
    let conf = dir.path().join("conf");
    std::fs::create_dir_all(&conf).unwrap();
    std::fs::write(
        conf.join("carbon.conf"),
        "[cache]\nLOCAL_DATA_DIR = /var/lib/graphite/whisper/\nMAX_CREATES_PER_MINUTE = 5\n",
    )
    .unwrap();
    let port = free_port();
    let d = Ringlet::start(
        dir.path(),
        &[
            "--carbon",
            &port.to_string(),
            "--graphite-conf",
            conf.to_str().unwrap(),
        ],
    );
    let mut s = TcpStream::connect(format!("127.0.0.1:{port}")).unwrap();
    let mut lines = String::new();
    for i in 0..20 {
        lines.push_str(&format!("new.m{i} 1 1700000000\n"));
    }
    // A series made before the budget ran out takes every later point.
    lines.push_str("new.m0 2 1700000010\n");
    s.write_all(lines.as_bytes()).unwrap();
    drop(s);
    assert_eq!(wait_stat(&d.sock, "CarbonPointsNotCreated", 15), 15);
    assert_eq!(stat(&d.sock, "CarbonSeriesCreated"), Some(5));
    assert_eq!(stat(&d.sock, "CarbonPoints"), Some(6));
    assert!(d.log_text().contains("MAX_CREATES_PER_MINUTE"));
}
