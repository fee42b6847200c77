//! `ringlet migrate rrdcached` against Debian's rrdcached with collectd writing through it:
//! the test starts rrdcached (its own socket, -b, journal and pid file in a temporary
//! directory) and collectd's rrdcached plugin on that socket, then migrates while collectd
//! runs. Afterwards: ringlet serves the same socket with rrdcached's options, every file
//! under -b is a placeholder and its original is in STORE/imported/ byte for byte, every
//! row rrdtool reads from an original is what ringlet serves for it, collectd's new values
//! reach ringlet without a change to its configuration, and an update only rrdcached's
//! journal held is sent on. A dry run first changes nothing. Skipped, with a word, where
//! rrdcached or collectd is not installed (CI installs both).

use std::io::{Read, Write};
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

struct Dir(PathBuf);
impl Drop for Dir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// A process this test started, stopped by its id however the test ends.
struct Proc(Option<Child>, &'static str);
impl Proc {
    fn stop(&mut self) {
        if let Some(mut c) = self.0.take() {
            // SAFETY: a signal to our own child.
            unsafe { libc::kill(c.id() as i32, libc::SIGTERM) };
            let start = Instant::now();
            while start.elapsed() < Duration::from_secs(30) {
                if let Ok(Some(_)) = c.try_wait() {
                    return;
                }
                std::thread::sleep(Duration::from_millis(50));
            }
            eprintln!("{} did not stop: killed", self.1);
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}
impl Drop for Proc {
    fn drop(&mut self) {
        self.stop();
    }
}

/// The ringlet daemon migrate started (in the background, by its defaults file): found by
/// its command line, stopped by its id.
struct Started(PathBuf);
impl Started {
    fn pid(&self) -> Option<i32> {
        let want = self.0.display().to_string();
        std::fs::read_dir("/proc").ok()?.flatten().find_map(|e| {
            let pid: i32 = e.file_name().to_str()?.parse().ok()?;
            let cmd = std::fs::read(e.path().join("cmdline")).ok()?;
            let words: Vec<String> = cmd
                .split(|&b| b == 0)
                .map(|w| String::from_utf8_lossy(w).into_owned())
                .collect();
            (words.iter().any(|w| w == "serve") && words.contains(&want)).then_some(pid)
        })
    }
}
impl Drop for Started {
    fn drop(&mut self) {
        if let Some(pid) = self.pid() {
            // SAFETY: the daemon this test's migrate started.
            unsafe { libc::kill(pid, libc::SIGTERM) };
            let start = Instant::now();
            while self.pid().is_some() && start.elapsed() < Duration::from_secs(30) {
                std::thread::sleep(Duration::from_millis(50));
            }
        }
    }
}

fn which(prog: &str) -> Option<String> {
    ["/usr/sbin", "/usr/bin", "/sbin", "/bin"]
        .iter()
        .map(|d| format!("{d}/{prog}"))
        .find(|p| Path::new(p).is_file())
}

fn in_ci() -> bool {
    std::env::var("CI").is_ok_and(|v| !v.is_empty() && v != "0" && v != "false")
}

fn request(sock: &Path, line: &str) -> String {
    let mut s = UnixStream::connect(sock).expect("connect");
    s.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
    s.write_all(format!("{line}\n").as_bytes()).unwrap();
    let mut out = Vec::new();
    let mut b = [0u8; 1];
    let mut lines = 0i64;
    let mut want = None;
    while s.read(&mut b).unwrap_or(0) == 1 {
        out.push(b[0]);
        if b[0] == b'\n' {
            lines += 1;
            if want.is_none() {
                let status = String::from_utf8_lossy(&out).to_string();
                let n: i64 = status.split(' ').next().unwrap().parse().unwrap();
                want = Some(n.max(0) + 1);
            }
            if Some(lines) == want {
                break;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// FETCH rows of a series through the socket: (time, first value).
fn fetch(sock: &Path, file: &str, start: i64, end: i64) -> Vec<(i64, f64)> {
    let r = request(sock, &format!("FETCH {file} AVERAGE {start} {end}"));
    assert!(r.contains("Success"), "FETCH {file}: {r}");
    rows(&r)
}

fn rows(text: &str) -> Vec<(i64, f64)> {
    text.lines()
        .filter_map(|l| {
            let (t, v) = l.split_once(':')?;
            let t: i64 = t.trim().parse().ok()?;
            let v = v.split_whitespace().next()?;
            Some((t, v.parse().unwrap_or(f64::NAN)))
        })
        .collect()
}

fn rrd_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for e in std::fs::read_dir(dir).unwrap().flatten() {
        let p = e.path();
        if p.is_dir() {
            rrd_files(&p, out);
        } else if p.extension().is_some_and(|x| x == "rrd") {
            out.push(p);
        }
    }
}

fn root() -> bool {
    // SAFETY: geteuid has no preconditions.
    unsafe { libc::geteuid() == 0 }
}

/// `prog`, run in a private mount namespace when root (`unshare` execs it: its pid).
fn wrapped(prog: &str) -> Command {
    if root() && which("unshare").is_some() {
        let mut c = Command::new("unshare");
        c.args(["-m", "--propagation", "private", "--", prog]);
        c
    } else {
        Command::new(prog)
    }
}

/// `ringlet migrate` in the mount namespace of process `pid` (see [`wrapped`]).
fn migrate_in(pid: &str, store: &Path, args: &[&str]) -> std::process::Output {
    if !(root() && which("nsenter").is_some()) {
        return ringlet(store, args);
    }
    Command::new("nsenter")
        .args([
            "-t",
            pid,
            "-m",
            "--",
            env!("CARGO_BIN_EXE_ringlet"),
            "--store",
        ])
        .arg(store)
        .args(args)
        .stdin(Stdio::null())
        .output()
        .expect("run ringlet")
}

fn ringlet(store: &Path, args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_ringlet"))
        .arg("--store")
        .arg(store)
        .args(args)
        .stdin(Stdio::null())
        .output()
        .expect("run ringlet")
}

fn wait_for(what: &str, secs: u64, mut f: impl FnMut() -> bool) {
    let start = Instant::now();
    while !f() {
        assert!(
            start.elapsed() < Duration::from_secs(secs),
            "waited {secs} s for {what}"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// The tests here look for running rrdcached processes: one at a time.
static ONE: std::sync::Mutex<()> = std::sync::Mutex::new(());

#[test]
fn rrdcached_is_replaced_in_place_and_collectd_keeps_writing() {
    let _one = ONE.lock().unwrap_or_else(|e| e.into_inner());
    let (Some(rrdcached), Some(collectd)) = (which("rrdcached"), which("collectd")) else {
        assert!(
            !in_ci(),
            "rrdcached and collectd must be installed (scripts/setup installs them)"
        );
        eprintln!("SKIP: rrdcached or collectd not installed");
        return;
    };
    let dir = Dir(std::env::temp_dir().join(format!("ringlet-migrate-{}", std::process::id())));
    let _ = std::fs::remove_dir_all(&dir.0);
    let (db, journal) = (dir.0.join("db"), dir.0.join("journal"));
    std::fs::create_dir_all(&db).unwrap();
    std::fs::create_dir_all(&journal).unwrap();
    let sock = dir.0.join("rrdcached.sock");
    let store = dir.0.join("store");
    let to = dir.0.join("ringlet.default");
    let started = Started(to.clone());

    // rrdcached as Debian's init script runs it, in the foreground so that it is our child.
    let args: Vec<String> = format!(
        "-g -B -w 1800 -z 1 -j {} -p {} -l unix:{} -b {}",
        journal.display(),
        dir.0.join("rrdcached.pid").display(),
        sock.display(),
        db.display()
    )
    .split(' ')
    .map(String::from)
    .collect();
    let mut cached = Proc(
        Some(
            // As root, rrdcached in a mount namespace of its own, which the migration
            // joins: it binds rrdcached's socket path onto itself for the hand-over, a
            // mount that must not reach this machine's.
            wrapped(&rrdcached)
                .args(&args)
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(std::fs::File::create(dir.0.join("rrdcached.err")).unwrap())
                .spawn()
                .expect("start rrdcached"),
        ),
        "rrdcached",
    );
    let pid = cached.0.as_ref().unwrap().id().to_string();
    wait_for("rrdcached's socket", 20, || {
        UnixStream::connect(&sock).is_ok()
    });

    // A file of rrdtool's own, written before the migration, with rows spanning archives.
    let own = db.join("own/a.rrd");
    std::fs::create_dir_all(own.parent().unwrap()).unwrap();
    let st = Command::new("rrdtool")
        .arg("create")
        .arg(&own)
        .args([
            "--start",
            "1790000000",
            "--step",
            "10",
            "DS:v:GAUGE:60:U:U",
            "RRA:AVERAGE:0.5:1:100",
            "RRA:MAX:0.5:6:50",
        ])
        .status()
        .unwrap();
    assert!(st.success());
    for k in 1..=60 {
        let r = request(
            &sock,
            &format!(
                "UPDATE {} {}:{}",
                own.display(),
                1_790_000_000 + 10 * k,
                k * k % 37
            ),
        );
        assert!(r.starts_with("0 "), "{r}");
    }

    // collectd, writing through rrdcached's socket into -b.
    let conf = dir.0.join("collectd.conf");
    std::fs::write(
        &conf,
        format!(
            r#"Interval 1
BaseDir "{d}"
PIDFile "{d}/collectd.pid"
PluginDir "/usr/lib/collectd"
TypesDB "/usr/share/collectd/types.db"
FQDNLookup false
Hostname "migrating"
LoadPlugin logfile
<Plugin logfile>
  LogLevel info
  File STDOUT
</Plugin>
LoadPlugin load
LoadPlugin memory
LoadPlugin rrdcached
<Plugin rrdcached>
  DaemonAddress "unix:{sock}"
  DataDir "{db}/collectd"
  CreateFiles true
</Plugin>
"#,
            d = dir.0.display(),
            sock = sock.display(),
            db = db.display()
        ),
    )
    .unwrap();
    let log = dir.0.join("collectd.log");
    let mut collectd = Proc(
        Some(
            Command::new(&collectd)
                .arg("-f")
                .arg("-C")
                .arg(&conf)
                .stdin(Stdio::null())
                .stdout(std::fs::File::create(&log).unwrap())
                .stderr(std::fs::File::create(dir.0.join("collectd.err")).unwrap())
                .spawn()
                .expect("start collectd"),
        ),
        "collectd",
    );
    let load = db.join("collectd/migrating/load/load.rrd");
    let load_name = load.display().to_string();
    wait_for("collectd's load file and 3 values", 60, || {
        load.is_file()
            && request(&sock, &format!("PENDING {load_name}"))
                .split(' ')
                .next()
                .and_then(|n| n.parse::<i64>().ok())
                .is_some_and(|n| n >= 3)
    });

    // A dry run says what it would do and changes nothing.
    let o = ringlet(
        &store,
        &["migrate", "rrdcached", "--dry-run", "--pid", &pid, "--to"],
    );
    assert!(!o.status.success(), "--to needs a value");
    let to_s = to.display().to_string();
    let o = ringlet(
        &store,
        &["migrate", "rrdcached", "-n", "--pid", &pid, "--to", &to_s],
    );
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(
        o.status.success(),
        "{out}{}",
        String::from_utf8_lossy(&o.stderr)
    );
    assert!(out.contains("(dry run: nothing changed)"), "{out}");
    assert!(out.contains("Would import "), "{out}");
    assert!(!to.exists() && !store.exists());
    assert!(cached.0.as_mut().unwrap().try_wait().unwrap().is_none());

    // Values rrdcached accepted after the flush, before its stop: held only by its journal
    // (written here as rrdcached writes it, in a later journal file).
    std::fs::write(
        journal.join("rrd.journal.9999999999.000000"),
        format!(
            "update {f} 1790000610:99\nupdate {f} 1790000620:98\nwrote {f}\n\
             update {f} 1790000630:97\n",
            f = own.display()
        ),
    )
    .unwrap();

    let begun = chrono_now();
    let o = migrate_in(
        &pid,
        &store,
        &["migrate", "rrdcached", "-q", "--pid", &pid, "--to", &to_s],
    );
    let out = String::from_utf8_lossy(&o.stdout).into_owned();
    let err = String::from_utf8_lossy(&o.stderr).into_owned();
    assert!(o.status.success(), "{out}{err}");
    // rrdcached is gone (our child: reaped here), ringlet answers on its socket.
    let status = cached.0.as_mut().unwrap().wait().unwrap();
    cached.0 = None;
    assert!(status.success(), "rrdcached: {status:?}");
    assert!(started.pid().is_some(), "ringlet runs\n{out}{err}");
    assert!(out.contains("0 failed"), "{out}");
    // Ours (the one after the last `wrote`), and any of collectd's that rrdcached journaled
    // after its last flush began (a loaded machine's timing): every one is sent, none refused.
    let held = out
        .split("applied the ")
        .nth(1)
        .and_then(|r| r.split(' ').next())
        .and_then(|n| n.parse::<u64>().ok())
        .unwrap_or(0);
    assert!(
        held >= 1
            && out.contains(&format!(
                "applied the {held} updates only rrdcached's journal held: {held} accepted, 0 refused"
            )),
        "{out}"
    );

    // The file: rrdcached's options, less -p, -j and -g, -w -z -b as their variables.
    let text = std::fs::read_to_string(&to).unwrap();
    for line in [
        "WRITE_TIMEOUT=1800".to_string(),
        "WRITE_JITTER=1".into(),
        format!("BASE_PATH={}", db.display()),
        format!("-l unix:{}\"", sock.display()),
        "BASE_OPTIONS=\"-B -m ".into(),
    ] {
        assert!(text.contains(&line), "{line}: {text}");
    }
    for gone in ["-p", "-j", "-g"] {
        assert!(
            text.contains(&format!("left out rrdcached's {gone}")),
            "{gone}: {text}"
        );
    }
    // No client was refused: ringlet's socket took the path before rrdcached stopped, and
    // held it (bound onto itself) while rrdcached's exit tried to remove it.
    if root() {
        assert!(!out.contains("put back"), "{out}");
    }
    let seen = format!("unix:{}: 0 of ", sock.display());
    assert!(
        out.contains(&seen) && out.contains("connections refused"),
        "{out}"
    );
    assert!(
        text.contains(&format!("STORE={}", store.display())),
        "{text}"
    );

    // Every file under -b is a placeholder; its original is in STORE/imported/, and every
    // row rrdtool reads from it is what ringlet serves.
    let mut files = Vec::new();
    rrd_files(&db, &mut files);
    assert!(files.len() >= 3, "{files:?}");
    for f in &files {
        let head = std::fs::read(f).unwrap();
        assert!(head.starts_with(b"ringlet placeholder:"), "{}", f.display());
        let rel = f.strip_prefix(&db).unwrap();
        let orig = store.join("imported").join(rel);
        let last = Command::new("rrdtool")
            .arg("last")
            .arg(&orig)
            .output()
            .unwrap();
        assert!(last.status.success(), "{}", orig.display());
        let last: i64 = String::from_utf8_lossy(&last.stdout)
            .trim()
            .parse()
            .unwrap();
        let theirs = Command::new("rrdtool")
            .arg("fetch")
            .arg(&orig)
            .args([
                "AVERAGE",
                "-s",
                &(last - 600).to_string(),
                "-e",
                &last.to_string(),
            ])
            .output()
            .unwrap();
        let theirs = rows(&String::from_utf8_lossy(&theirs.stdout));
        let ours = fetch(&sock, &f.display().to_string(), last - 600, last);
        let known = theirs.iter().filter(|r| !r.1.is_nan()).count();
        assert!(known > 0 || f != &own, "{}: {theirs:?}", f.display());
        // Rows to the file's last update (fetch prints the one after it too).
        for (t, v) in theirs.iter().filter(|r| r.0 <= last) {
            let o = ours.iter().find(|r| r.0 == *t);
            // rrdtool prints ten digits; the protocol all of them.
            let same = o.is_some_and(|o| {
                (o.1.is_nan() && v.is_nan()) || (o.1 - v).abs() <= 1e-9 * v.abs().max(1.0)
            });
            assert!(same, "{} at {t}: file {v}, ringlet {o:?}", f.display());
        }
    }
    // The journal's update after the file's last write arrived; the ones before it did not
    // need to.
    let own_rows = fetch(
        &sock,
        &own.display().to_string(),
        1_790_000_600,
        1_790_000_630,
    );
    assert!(
        own_rows.iter().any(|r| r.0 == 1_790_000_630 && r.1 == 97.0),
        "{own_rows:?}"
    );

    // collectd goes on, unchanged: values after the migration reach ringlet.
    wait_for("collectd's values after the migration", 60, || {
        let r = request(&sock, &format!("FLUSH {load_name}"));
        r.starts_with("0 ")
            && fetch(&sock, &load_name, begun - 30, begun + 120)
                .iter()
                .any(|(t, v)| *t > begun + 2 && !v.is_nan())
    });
    collectd.stop();
    let logtext = std::fs::read_to_string(&log).unwrap_or_default();
    eprintln!("migrate printed:\n{out}\ncollectd's log:\n{logtext}");
}

/// No rrdcached running: its options come from its defaults file (Debian's variables, the
/// init script's pid file added and then left out); with --no-start the files are imported
/// on the store, moved aside, and nothing is started.
#[test]
fn without_a_running_rrdcached_its_defaults_file_is_read_and_no_start_imports_on_the_store() {
    let _one = ONE.lock().unwrap_or_else(|e| e.into_inner());
    if which("rrdtool").is_none() {
        assert!(!in_ci(), "rrdtool must be installed");
        return;
    }
    if std::fs::read_dir("/proc").unwrap().flatten().any(|e| {
        std::fs::read_to_string(e.path().join("comm")).is_ok_and(|c| c.trim() == "rrdcached")
    }) {
        eprintln!("SKIP: an rrdcached runs on this machine (migrate would take it)");
        return;
    }
    let dir = Dir(std::env::temp_dir().join(format!("ringlet-migrate2-{}", std::process::id())));
    let _ = std::fs::remove_dir_all(&dir.0);
    let db = dir.0.join("db");
    std::fs::create_dir_all(db.join("h")).unwrap();
    for name in ["h/a.rrd", "b.rrd"] {
        let st = Command::new("rrdtool")
            .arg("create")
            .arg(db.join(name))
            .args([
                "--start",
                "1790000000",
                "--step",
                "60",
                "DS:v:GAUGE:120:U:U",
            ])
            .arg("RRA:AVERAGE:0.5:1:10")
            .status()
            .unwrap();
        assert!(st.success());
    }
    let before = std::fs::read(db.join("h/a.rrd")).unwrap();
    let defaults = dir.0.join("rrdcached.default");
    std::fs::write(
        &defaults,
        format!(
            "# as Debian ships it\nDAEMON=/usr/bin/rrdcached\nWRITE_TIMEOUT=900\n\
             BASE_PATH={}/\nSOCKFILE={}/r.sock\nBASE_OPTIONS=\"-B -F\"\n",
            db.display(),
            dir.0.display()
        ),
    )
    .unwrap();
    let (store, to) = (dir.0.join("store"), dir.0.join("ringlet.default"));
    std::fs::write(&to, "# the package's\n").unwrap();
    let (d, t) = (defaults.display().to_string(), to.display().to_string());
    let migrate = || {
        let args = [
            "migrate",
            "rrdcached",
            "--defaults",
            &d,
            "--to",
            &t,
            "--no-start",
            "-q",
        ];
        ringlet(&store, &args)
    };
    let o = migrate();
    let out = String::from_utf8_lossy(&o.stdout).into_owned();
    assert!(
        o.status.success(),
        "{out}{}",
        String::from_utf8_lossy(&o.stderr)
    );
    assert!(out.contains("(no rrdcached runs)"), "{out}");
    assert!(
        out.contains("2 imported") && out.contains("2 moved aside"),
        "{out}"
    );
    assert!(out.contains("ringlet not started (--no-start)"), "{out}");
    let text = std::fs::read_to_string(&to).unwrap();
    for line in [
        "WRITE_TIMEOUT=900".to_string(),
        format!("BASE_PATH={}/", db.display()),
        format!("BASE_OPTIONS=\"-l unix:{}/r.sock -B -F\"", dir.0.display()),
        "left out rrdcached's -p /var/run/rrdcached.pid".into(),
    ] {
        assert!(text.contains(&line), "{line}: {text}");
    }
    let kept = std::fs::read_to_string(dir.0.join("ringlet.default.before-migrate")).unwrap();
    assert_eq!(kept, "# the package's\n");
    assert_eq!(
        std::fs::read(store.join("imported/h/a.rrd")).unwrap(),
        before
    );
    assert!(std::fs::read(db.join("h/a.rrd"))
        .unwrap()
        .starts_with(b"ringlet placeholder:"));
    let dump = ringlet(&store, &["dump", "h/a.rrd"]);
    let theirs = Command::new("rrdtool")
        .arg("dump")
        .arg(store.join("imported/h/a.rrd"))
        .output()
        .unwrap();
    assert_eq!(dump.stdout, theirs.stdout);
    assert!(!dir.0.join("r.sock").exists(), "nothing was started");
    // Again (an interrupted run resumed): nothing imported twice, and the copy of the file
    // from before the first run is kept.
    let o = migrate();
    let out = String::from_utf8_lossy(&o.stdout).into_owned();
    assert!(o.status.success(), "{out}");
    assert!(out.contains("0 imported, 2 skipped"), "{out}");
    let kept = std::fs::read_to_string(dir.0.join("ringlet.default.before-migrate")).unwrap();
    assert_eq!(kept, "# the package's\n");
}

fn chrono_now() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs() as i64
}
