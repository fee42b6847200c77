//! collectd 5.12 (Debian's collectd-core) as the client: its rrdcached plugin creates the
//! `.rrd` files itself under the daemon's base directory and sends `forget`, `update` and
//! `STATS` to `ringlet serve`. The csv plugin writes the same values to text files, which are
//! the known values: after a FLUSH, FETCH must return them. Skipped, with a word, when
//! `collectd` is not installed (CI installs collectd-core).

mod common;

use common::*;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

fn collectd_bin() -> Option<String> {
    ["/usr/sbin/collectd", "/usr/bin/collectd"]
        .iter()
        .find(|p| Path::new(p).is_file())
        .map(|p| p.to_string())
}

/// collectd's configuration: every second, logging to standard output, the load, memory
/// and cpu plugins, `plugins` besides, and the rrdcached plugin writing through `sock`
/// under `data` (with `rrdcached` added to its block).
fn collectd_conf(
    dir: &Path,
    host: &str,
    sock: &Path,
    data: &Path,
    plugins: &str,
    rrdcached: &str,
) -> String {
    format!(
        r#"Interval 1
BaseDir "{dir}"
PIDFile "{dir}/collectd.pid"
PluginDir "/usr/lib/collectd"
TypesDB "/usr/share/collectd/types.db"
FQDNLookup false
Hostname "{host}"
LoadPlugin logfile
<Plugin logfile>
  LogLevel info
  File STDOUT
</Plugin>
LoadPlugin load
LoadPlugin memory
LoadPlugin cpu
{plugins}LoadPlugin rrdcached
<Plugin rrdcached>
  DaemonAddress "unix:{sock}"
  DataDir "{data}"
  CreateFiles true
{rrdcached}</Plugin>
"#,
        dir = dir.display(),
        sock = sock.display(),
        data = data.display(),
    )
}

/// `epoch,v1,v2,...` lines of a csv plugin file.
fn csv_rows(dir: &Path, prefix: &str) -> Vec<(f64, Vec<f64>)> {
    let mut rows = Vec::new();
    let Ok(rd) = std::fs::read_dir(dir) else {
        return rows;
    };
    let mut files: Vec<_> = rd
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().starts_with(prefix))
        .map(|e| e.path())
        .collect();
    files.sort();
    for f in files {
        for l in std::fs::read_to_string(&f).unwrap_or_default().lines() {
            let mut it = l.split(',');
            let Some(Ok(t)) = it.next().map(str::parse::<f64>) else {
                continue; // the header
            };
            let v: Vec<f64> = it.filter_map(|x| x.parse().ok()).collect();
            rows.push((t, v));
        }
    }
    rows
}

#[test]
fn collectd_rrdcached_plugin_writes_values_that_fetch_returns() {
    let Some(bin) = collectd_bin() else {
        assert!(
            !in_ci(),
            "collectd is not installed: scripts/setup installs collectd-core"
        );
        eprintln!("SKIP: collectd not installed (apt-get install collectd-core)");
        return;
    };
    let dir = TempDir::new("collectd");
    let d = Ringlet::start(dir.path(), &[]);
    let data = d.base.join("collectd");
    let csv = dir.path().join("csv");
    let conf = dir.path().join("collectd.conf");
    let text = collectd_conf(
        dir.path(),
        "ringlet-test",
        &d.sock,
        &data,
        &format!(
            "LoadPlugin csv\n<Plugin csv>\n  DataDir \"{}\"\n  StoreRates false\n</Plugin>\n",
            csv.display()
        ),
        "  CollectStatistics true\n",
    );
    std::fs::write(&conf, text).unwrap();
    let log = dir.path().join("collectd.log");
    let child = Command::new(&bin)
        .arg("-f")
        .arg("-C")
        .arg(&conf)
        .stdin(Stdio::null())
        .stdout(std::fs::File::create(&log).unwrap())
        .stderr(std::fs::File::create(dir.path().join("collectd.err")).unwrap())
        .spawn()
        .expect("start collectd");
    let mut p = common::Proc::adopt(child, "collectd");
    let load_rrd = data.join("ringlet-test/load/load.rrd");
    // Until at least 5 values of load have been sent.
    let mut s = connect(&d.sock);
    let mut pending = 0;
    for _ in 0..200 {
        std::thread::sleep(Duration::from_millis(100));
        let r = request(&mut s, "PENDING collectd/ringlet-test/load/load.rrd");
        pending = r
            .split(' ')
            .next()
            .and_then(|n| n.parse().ok())
            .unwrap_or(0);
        if pending >= 5 {
            break;
        }
    }
    let st = p
        .stop(libc::SIGTERM, Duration::from_secs(20))
        .expect("collectd exits");
    let logtext = std::fs::read_to_string(&log).unwrap_or_default();
    assert!(
        pending >= 5,
        "collectd sent {pending} load values\n{logtext}"
    );
    assert!(st.success(), "{st:?}\n{logtext}");
    assert!(
        load_rrd.is_file(),
        "collectd created {}",
        load_rrd.display()
    );
    assert!(
        !logtext.contains("rrdcached plugin: rrdc_update"),
        "update errors:\n{logtext}"
    );

    // The values csv saw are the ones FETCH returns, at the rows a sample ends exactly
    // (collectd's stamps are fractional: other rows mix two samples).
    let sent = csv_rows(&csv.join("ringlet-test/load"), "load-");
    assert!(sent.len() >= 5, "csv rows: {sent:?}");
    assert!(request(&mut s, "FLUSH collectd/ringlet-test/load/load.rrd")
        .starts_with("0 Successfully flushed"));
    let first = sent[0].0.floor() as i64 - 5;
    let last = sent[sent.len() - 1].0.ceil() as i64 + 5;
    let r = request(
        &mut s,
        &format!("FETCH collectd/ringlet-test/load/load.rrd AVERAGE {first} {last}"),
    );
    assert!(r.contains("DSName: shortterm midterm longterm\n"), "{r}");
    let rows: Vec<(i64, Vec<f64>)> = r
        .lines()
        .filter_map(|l| {
            let (t, v) = l.split_once(": ")?;
            let t: i64 = t.trim().parse().ok()?;
            Some((
                t,
                v.split(' ')
                    .map(|x| x.parse().unwrap_or(f64::NAN))
                    .collect(),
            ))
        })
        .collect();
    let known: Vec<&(i64, Vec<f64>)> = rows.iter().filter(|(_, v)| !v[0].is_nan()).collect();
    assert!(known.len() >= 3, "known rows: {r}");
    let close = |a: f64, b: f64| (a - b).abs() <= 1e-9 * a.abs().max(1.0);
    let mut matched = 0;
    for w in sent.windows(2) {
        // Two consecutive samples with the same values: the row between them is exactly them.
        if w[0].1 == w[1].1 {
            let t = w[1].0.floor() as i64;
            if let Some((_, v)) = rows.iter().find(|(rt, _)| *rt == t && t as f64 > w[0].0) {
                for (a, b) in v.iter().zip(&w[1].1) {
                    assert!(close(*a, *b), "row {t}: fetched {v:?}, csv {:?}", w[1].1);
                }
                matched += 1;
            }
        }
    }
    // Every fetched value lies within what was sent.
    let (lo, hi) = sent.iter().fold((f64::MAX, f64::MIN), |(lo, hi), (_, v)| {
        (lo.min(v[0]), hi.max(v[0]))
    });
    for (t, v) in &known {
        assert!(
            v[0] >= lo - 1e-9 && v[0] <= hi + 1e-9,
            "row {t}: {v:?} outside [{lo}, {hi}]"
        );
    }
    eprintln!(
        "collectd: {} samples sent, {} rows known, {matched} rows equal to a csv sample",
        sent.len(),
        known.len()
    );
    // The rrdcached plugin's statistics, polled through STATS, are stored too.
    assert!(data
        .join("ringlet-test/rrdcached/queue_length.rrd")
        .is_file());
    let list = request(&mut s, "LIST RECURSIVE /collectd/ringlet-test/memory");
    assert!(list.contains("memory-used.rrd\n"), "{list}");
}

/// collectd's rrdcached plugin does not send a value again when its request fails; it
/// connects again for the next. Restarts of the daemon on systemd's socket (the package's
/// `systemctl restart`, an upgrade) must therefore never fail a request: the stopping daemon
/// answers what it has received and ends its connections' reading (the plugin's next
/// request reaches the next daemon), and refuses nothing with "Shutting down".
#[test]
fn collectd_loses_no_value_across_restarts_on_systemds_socket() {
    let Some(bin) = collectd_bin() else {
        assert!(
            !in_ci(),
            "collectd is not installed: scripts/setup installs collectd-core"
        );
        eprintln!("SKIP: collectd not installed (apt-get install collectd-core)");
        return;
    };
    let dir = TempDir::new("collectd-restarts");
    std::fs::create_dir_all(dir.path().join("db")).unwrap();
    let sock = dir.path().join("r.sock");
    let dlog = dir.path().join("ringlet.log");
    let listener = std::os::unix::net::UnixListener::bind(&sock).unwrap();
    let mut d = serve_on_passed_socket(dir.path(), &listener, &dlog);
    wait_for_socket(&sock, &mut d, &dlog);
    let conf = dir.path().join("collectd.conf");
    let text = collectd_conf(
        dir.path(),
        "restarts",
        &sock,
        &dir.path().join("db/collectd"),
        "",
        "",
    );
    std::fs::write(&conf, text).unwrap();
    let log = dir.path().join("collectd.log");
    let child = Command::new(&bin)
        .arg("-f")
        .arg("-C")
        .arg(&conf)
        .stdin(Stdio::null())
        .stdout(std::fs::File::create(&log).unwrap())
        .stderr(Stdio::null())
        .spawn()
        .expect("start collectd");
    let mut p = common::Proc::adopt(child, "collectd");
    let load = dir.path().join("db/collectd/restarts/load/load.rrd");
    for _ in 0..100 {
        if load.exists() {
            break;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    assert!(
        load.exists(),
        "collectd wrote nothing: {}",
        std::fs::read_to_string(&log).unwrap_or_default()
    );
    let restarts = 10;
    for _ in 0..restarts {
        std::thread::sleep(Duration::from_millis(1300));
        let st = d
            .stop(libc::SIGTERM, Duration::from_secs(60))
            .expect("stops");
        assert!(st.success(), "{st}");
        d = serve_on_passed_socket(dir.path(), &listener, &dlog);
    }
    std::thread::sleep(Duration::from_millis(1500));
    p.stop(libc::SIGTERM, Duration::from_secs(10));
    let text = std::fs::read_to_string(&log).unwrap();
    let failed: Vec<&str> = text.lines().filter(|l| l.contains("failed")).collect();
    assert!(
        failed.is_empty(),
        "collectd's requests failed across {restarts} restarts: {failed:#?}"
    );
    // Its values did go through every daemon (each took the socket from systemd).
    let dtext = std::fs::read_to_string(&dlog).unwrap();
    assert_eq!(
        dtext.matches("(from systemd)").count(),
        restarts + 1,
        "{dtext}"
    );
    assert!(!text.contains("Shutting down"), "{text}");
}
