//! The `ringlet` CLI beside a running `ringlet serve` on the same store prints what it prints
//! on the store alone: every command (create, update, updatev, fetch, xport, info, first,
//! last, lastupdate, dump to stdout and to a file, restore from a file and from stdin, pipe
//! mode), errors included, whether the daemon is found through the address the store
//! records, `$RRDCACHED_ADDRESS`, or `--daemon`. Also: values a client queued through the
//! daemon are seen at once, and `ringlet export` writes rrdtool's own bytes.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

const BIN: &str = env!("CARGO_BIN_EXE_ringlet");
static SEQ: AtomicUsize = AtomicUsize::new(0);

/// A directory removed on drop.
struct Dir(PathBuf);
impl Dir {
    fn new(tag: &str) -> Dir {
        let p = std::env::temp_dir().join(format!(
            "ringlet-beside-{tag}-{}-{}",
            std::process::id(),
            SEQ.fetch_add(1, Ordering::SeqCst)
        ));
        let _ = std::fs::remove_dir_all(&p);
        std::fs::create_dir_all(&p).unwrap();
        Dir(p)
    }
}
impl Drop for Dir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// `ringlet serve` on `dir/store`, stopped by its pid (SIGTERM) when dropped.
struct Daemon {
    child: Child,
    sock: PathBuf,
}
impl Daemon {
    fn start(dir: &Path) -> Daemon {
        Daemon::start_with(dir, &["-b", dir.join("base").to_str().unwrap()])
    }

    /// The daemon with `args` instead of `-b dir/base`.
    fn start_with(dir: &Path, args: &[&str]) -> Daemon {
        Daemon::start_from(Path::new(BIN), dir, args)
    }

    /// [`Daemon::start_with`], the binary at `bin`.
    fn start_from(bin: &Path, dir: &Path, args: &[&str]) -> Daemon {
        let sock = dir.join("s.sock");
        std::fs::create_dir_all(dir.join("base")).unwrap();
        let log = std::fs::File::create(dir.join("serve.log")).unwrap();
        let child = Command::new(bin)
            .args(["serve", "-g", "-w", "3600", "-R", "-l"])
            .arg(format!("unix:{}", sock.display()))
            .args(args)
            .arg("--store")
            .arg(dir.join("store"))
            .stdin(Stdio::null())
            .stdout(log.try_clone().unwrap())
            .stderr(log)
            .spawn()
            .expect("ringlet serve");
        let t0 = Instant::now();
        while std::os::unix::net::UnixStream::connect(&sock).is_err() {
            assert!(
                t0.elapsed() < Duration::from_secs(20),
                "daemon did not start"
            );
            std::thread::sleep(Duration::from_millis(10));
        }
        Daemon { child, sock }
    }
    fn addr(&self) -> String {
        format!("unix:{}", self.sock.display())
    }
}
impl Drop for Daemon {
    fn drop(&mut self) {
        // SAFETY: kill(2) on the pid of our own child.
        unsafe {
            libc::kill(self.child.id() as libc::pid_t, libc::SIGTERM);
        }
        let _ = self.child.wait();
    }
}

#[derive(Debug, PartialEq)]
struct Out {
    stdout: String,
    stderr: String,
    code: i32,
}

/// How the CLI reaches the store.
#[derive(Clone, Copy, Debug)]
enum Way {
    Alone,
    Found,
    Env,
    Flag,
}

fn ringlet(dir: &Path, way: Way, addr: &str, args: &[&str], stdin: Option<&str>) -> Out {
    let mut c = Command::new(BIN);
    c.env_remove("RRDCACHED_ADDRESS")
        .env("TZ", "UTC")
        .current_dir(dir)
        .arg("--store")
        .arg(dir.join("store"));
    let mut args: Vec<String> = args.iter().map(|s| s.to_string()).collect();
    match way {
        Way::Env => {
            c.env("RRDCACHED_ADDRESS", addr);
        }
        // rrdtool's place for it: after the command's name (restore has none).
        Way::Flag if args.len() > 1 && args[0] != "restore" && args[0] != "-" => {
            args.insert(1, addr.to_string());
            args.insert(1, "--daemon".into());
        }
        Way::Flag if args[0] == "-" => {
            c.env("RRDCACHED_ADDRESS", addr);
        }
        _ => {}
    }
    c.args(&args)
        .stdin(if stdin.is_some() {
            Stdio::piped()
        } else {
            Stdio::null()
        })
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = c.spawn().unwrap();
    if let Some(s) = stdin {
        use std::io::Write;
        child.stdin.take().unwrap().write_all(s.as_bytes()).unwrap();
    }
    let o = child.wait_with_output().unwrap();
    // Pipe mode's CPU and wall times differ from run to run.
    let mask = |b: &[u8]| {
        String::from_utf8_lossy(b)
            .split_inclusive('\n')
            .map(|l| if l.starts_with("OK u:") { "OK\n" } else { l })
            .collect::<String>()
    };
    Out {
        stdout: mask(&o.stdout),
        stderr: mask(&o.stderr),
        code: o.status.code().unwrap_or(-1),
    }
}

const PIPE: &str = "\
update p.rrd 1700000060:5
fetch p.rrd AVERAGE -s 1700000000 -e 1700000120
update p.rrd 1700000030:1
last p.rrd
fetch p.rrd AVERAGE --daemon unix:/nonexistent/s.sock
tune p.rrd -h v:600
tune p.rrd DS:w:COUNTER:120:U:U RRA:LAST:0.5:1:3
lastupdate p.rrd
first p.rrd --rraindex 1
graph - --start 1700000000 --end 1700000120 DEF:v=p.rrd:v:AVERAGE PRINT:v:MAX:%6.2lf
bogus
quit
";

/// The script every way runs; what each command printed, and the files it wrote.
fn script(way: Way) -> (Vec<(String, Out)>, Vec<String>) {
    let dir = Dir::new(&format!("{way:?}").to_lowercase());
    let d = match way {
        Way::Alone => None,
        _ => Some(Daemon::start(&dir.0)),
    };
    let addr = d.as_ref().map(Daemon::addr).unwrap_or_default();
    std::fs::write(
        dir.0.join("in.xml"),
        "not xml, restore's own error is the test",
    )
    .unwrap();
    let schema = "--start 1700000000 --step 60 DS:x:GAUGE:120:0:100 DS:y:COUNTER:120:U:U RRA:AVERAGE:0.5:1:10 RRA:MAX:0.5:5:4 RRA:LAST:0.5:1:5";
    let cmds: Vec<String> = vec![
        format!("create a.rrd {schema}"),
        format!("create a.rrd -O {schema}"),
        "create p.rrd --start 1700000000 --step 60 DS:v:GAUGE:120:U:U RRA:AVERAGE:0.5:1:10".into(),
        "create bad.rrd DS:x:GAUGE".into(),
        "update a.rrd 1700000060:1:100 1700000120:3:400".into(),
        "updatev a.rrd 1700000180:3:500 1700000300:U:700".into(),
        "update a.rrd -t y:x 1700000360:900:7".into(),
        "update a.rrd 1700000100:1:1".into(),
        "updatev a.rrd 1700000420:abc:1".into(),
        "update missing.rrd 1700000060:1".into(),
        "fetch a.rrd AVERAGE -s 1700000000 -e 1700000600".into(),
        "fetch a.rrd MAX -r 300 -s 1700000000 -e 1700000600".into(),
        "fetch a.rrd MIN -s 1700000000 -e 1700000600".into(),
        "fetch missing.rrd AVERAGE".into(),
        "xport -s 1700000000 -e 1700000600 DEF:a=a.rrd:x:AVERAGE CDEF:b=a,2,* XPORT:a:x XPORT:b:twice".into(),
        "xport --json -s 1700000000 -e 1700000600 DEF:a=a.rrd:y:AVERAGE XPORT:a".into(),
        "info a.rrd".into(),
        "first a.rrd --rraindex 1".into(),
        "first a.rrd --rraindex 9".into(),
        "last a.rrd".into(),
        "lastupdate a.rrd".into(),
        "dump a.rrd".into(),
        "dump -h none a.rrd out.xml".into(),
        "dump a.rrd /nonexistent/dir/out.xml".into(),
        "restore out.xml b.rrd".into(),
        "restore out.xml b.rrd".into(),
        "restore -f out.xml b.rrd".into(),
        "restore in.xml c.rrd".into(),
        "restore nothere.xml c.rrd".into(),
        "info b.rrd".into(),
        "fetch".into(),
        "graph x.png".into(),
        // Cacti's other commands: tune and resize run where the store is, graph draws here
        // with rrdtool on copies of the files, wherever they are.
        "tune a.rrd -h x:300 --maximum y:1000".into(),
        "tune a.rrd -d y:DERIVE -r x:xx -h nope:5".into(),
        "info a.rrd".into(),
        "resize a.rrd 0 GROW 2".into(),
        "resize a.rrd 1 SHRINK 9".into(),
        "dump resize.rrd".into(),
        // tune's DS and RRA changes: a column and an archive added, rows added (filled from
        // the other archives), a name twice refused, then the column and an archive removed.
        "tune a.rrd DS:z:GAUGE:120:U:U RRA#0:+3 RRA:MIN:0.5:2:5".into(),
        "tune a.rrd DS:z:GAUGE:1:U:U".into(),
        "fetch a.rrd MIN -r 120 -s 1700000000 -e 1700000600".into(),
        "tune a.rrd DEL:z DELRRA:3".into(),
        "dump a.rrd -n".into(),
        // A new file filled from a series with --source.
        "create n.rrd --source a.rrd --step 30 DS:xx:GAUGE:120:U:U DS:w=y:DERIVE:120:U:U RRA:MAX:0:4:10".into(),
        "fetch n.rrd MAX -s 1700000000 -e 1700000600".into(),
        "graph - --start 1700000000 --end 1700000600 DEF:v=a.rrd:xx:AVERAGE PRINT:v:AVERAGE:%6.2lf".into(),
        "graph g.png --start 1700000000 --end 1700000600 DEF:v=a.rrd:xx:AVERAGE LINE1:v#ff0000".into(),
        "graph - DEF:v=missing.rrd:x:AVERAGE LINE1:v#ff0000".into(),
    ];
    let mut outs = Vec::new();
    for c in &cmds {
        let args: Vec<&str> = c.split(' ').collect();
        outs.push((c.clone(), ringlet(&dir.0, way, &addr, &args, None)));
    }
    let xml = std::fs::read_to_string(dir.0.join("out.xml")).unwrap_or_default();
    // restore from stdin
    let c = "restore - s.rrd";
    let args: Vec<&str> = c.split(' ').collect();
    outs.push((c.into(), ringlet(&dir.0, way, &addr, &args, Some(&xml))));
    outs.push((
        "info s.rrd".into(),
        ringlet(&dir.0, way, &addr, &["info", "s.rrd"], None),
    ));
    outs.push(("-".into(), ringlet(&dir.0, way, &addr, &["-"], Some(PIPE))));
    if let Some(d) = &d {
        // What the daemon itself serves agrees, and the CLI's series have placeholders.
        let ph = std::fs::read_to_string(dir.0.join("base/a.rrd")).unwrap();
        assert!(ph.starts_with("ringlet placeholder:"), "{ph}");
        assert!(d.sock.exists());
    }
    let png = std::fs::read(dir.0.join("g.png")).unwrap_or_default();
    assert!(
        png.starts_with(b"\x89PNG"),
        "{way:?}: no graph drawn: {outs:#?}"
    );
    let files = vec![xml, cli::hex(&png)];
    (outs, files)
}

#[test]
fn the_cli_beside_the_daemon_prints_what_it_prints_alone() {
    let (alone, alone_files) = script(Way::Alone);
    // The script means something: data, errors, files.
    let get = |c: &str| &alone.iter().find(|(k, _)| k == c).unwrap().1;
    assert!(get("fetch a.rrd AVERAGE -s 1700000000 -e 1700000600")
        .stdout
        .contains(": 3.0000000000e+00"));
    assert_eq!(get("update a.rrd 1700000100:1:1").code, 1);
    assert!(alone_files[0].contains("<rrd>"));
    assert_eq!(get("info s.rrd").code, 0);
    let added = &get("fetch a.rrd MIN -r 120 -s 1700000000 -e 1700000600").stdout;
    let head: Vec<&str> = added.lines().next().unwrap().split_whitespace().collect();
    assert_eq!(head, ["xx", "y", "z"], "{added}");
    // The MIN archive added is filled from the others.
    let known = |l: &str| {
        l.split_whitespace()
            .nth(1)
            .is_some_and(|v| !v.contains("nan"))
    };
    assert!(added.lines().skip(2).any(known), "{added}");
    assert_eq!(
        get("tune a.rrd DS:z:GAUGE:1:U:U").stderr,
        "ERROR: Duplicate DS name: z\n"
    );
    let after = &get("dump a.rrd -n").stdout;
    assert!(!after.contains("<name> z </name>") && after.matches("<rra>").count() == 3);
    let filled = &get("fetch n.rrd MAX -s 1700000000 -e 1700000600").stdout;
    assert!(filled.lines().skip(2).any(known), "{filled}");
    let pipe = &get("-").stdout;
    assert!(pipe.contains(" v w\n"), "{pipe}");
    assert!(!pipe.contains("invalid rraindex"), "{pipe}");
    for way in [Way::Found, Way::Env, Way::Flag] {
        let (beside, files) = script(way);
        for ((c, a), (_, b)) in alone.iter().zip(&beside) {
            if matches!(way, Way::Env | Way::Flag) && c.starts_with("info ") && a.code == 0 {
                // A named daemon: what `rrdtool info --daemon` prints, the path the daemon
                // resolved (its -b and the name).
                let name = c.trim_start_matches("info ");
                let (head, rest) = b.stdout.split_once('\n').unwrap();
                assert!(
                    head.starts_with("filename = \"/")
                        && head.ends_with(&format!("/base/{name}\"")),
                    "{way:?}: `{c}`: {head}"
                );
                assert_eq!(a.stdout.split_once('\n').unwrap().1, rest, "{way:?}: `{c}`");
                continue;
            }
            if matches!(way, Way::Env | Way::Flag) && (c.starts_with("last ") || c == "-") {
                // A named daemon's LAST: the time floored to the step (60 s here), as
                // `rrdtool last --daemon` prints it (in pipe mode too).
                let floored: String = a
                    .stdout
                    .split_inclusive('\n')
                    .map(|l| match l.trim().parse::<i64>() {
                        Ok(t) if t > 1_000_000_000 => format!("{}\n", t - t.rem_euclid(60)),
                        _ => l.to_string(),
                    })
                    .collect();
                assert_eq!(floored, b.stdout, "{way:?}: `{c}`");
                assert_eq!((&a.stderr, a.code), (&b.stderr, b.code), "{way:?}: `{c}`");
                continue;
            }
            assert_eq!(a, b, "{way:?}: `{c}` differs");
        }
        assert_eq!(alone_files, files, "{way:?}: the files dump wrote");
    }
}

#[test]
fn a_named_daemon_prints_what_rrdtool_prints_with_daemon() {
    // The review (issue 44, defect 10): `info` printed the name as given where
    // `rrdtool info --daemon` prints the path the daemon resolved, and `last` the last
    // update's time where `rrdtool last --daemon` prints rrdcached's LAST (floored to the
    // step). A daemon found by the CLI itself is not named: rrdtool's output on a file.
    let dir = Dir::new("named");
    let d = Daemon::start(&dir.0);
    let addr = d.addr();
    let run = |way: Way, args: &[&str]| ringlet(&dir.0, way, &addr, args, None).stdout;
    let create = "create h.rrd --start 1700000000 --step 10 DS:v:GAUGE:20:U:U RRA:AVERAGE:0.5:1:10";
    run(Way::Found, &create.split(' ').collect::<Vec<_>>());
    run(
        Way::Found,
        &["update", "h.rrd", "1700000013:5", "1700000027:6"],
    );
    assert_eq!(run(Way::Found, &["last", "h.rrd"]), "1700000027\n");
    let base = dir.0.join("base").canonicalize().unwrap();
    for way in [Way::Env, Way::Flag] {
        assert_eq!(run(way, &["last", "h.rrd"]), "1700000020\n", "{way:?}");
        let info = run(way, &["info", "h.rrd"]);
        let want = format!("filename = \"{}/h.rrd\"\n", base.display());
        assert!(info.starts_with(&want), "{way:?}: {info}");
    }
    if which("rrdtool") {
        // The oracle: rrdtool itself through the same daemon, from the base directory
        // (librrd makes a relative name absolute where it runs).
        let out = Command::new("rrdtool")
            .current_dir(&base)
            .args(["last", "--daemon", &addr, "h.rrd"])
            .output()
            .unwrap();
        assert_eq!(String::from_utf8_lossy(&out.stdout), "1700000020\n");
        let out = Command::new("rrdtool")
            .current_dir(&base)
            .args(["info", "--daemon", &addr, "h.rrd"])
            .output()
            .unwrap();
        let want = format!("filename = \"{}/h.rrd\"\n", base.display());
        assert!(String::from_utf8_lossy(&out.stdout).starts_with(&want));
    }
}

fn which(prog: &str) -> bool {
    Command::new("sh")
        .args(["-c", &format!("command -v {prog}")])
        .output()
        .is_ok_and(|o| o.status.success())
}

fn raw(sock: &Path, line: &str) -> String {
    use std::io::{BufRead, BufReader, Write};
    let mut s = std::os::unix::net::UnixStream::connect(sock).unwrap();
    s.write_all(format!("{line}\n").as_bytes()).unwrap();
    let mut r = BufReader::new(s);
    let mut l = String::new();
    r.read_line(&mut l).unwrap();
    l
}

#[test]
fn the_cli_sees_values_queued_in_the_daemon_and_its_updates_are_checked_in_order() {
    let dir = Dir::new("queued");
    let d = Daemon::start(&dir.0);
    let run = |args: &[&str]| ringlet(&dir.0, Way::Found, "", args, None);
    let c = "create q.rrd --start 1700000000 --step 60 DS:v:GAUGE:120:U:U RRA:LAST:0.5:1:10";
    assert_eq!(run(&c.split(' ').collect::<Vec<_>>()).code, 0);
    // A client (collectd, gmetad) queues a value through the protocol; not yet committed.
    assert_eq!(
        raw(&d.sock, "UPDATE q.rrd 1700000060:42"),
        "0 errors, enqueued 1 value(s).\n"
    );
    let f = run(&[
        "fetch",
        "q.rrd",
        "LAST",
        "-s",
        "1700000000",
        "-e",
        "1700000120",
    ]);
    assert!(
        f.stdout.contains("1700000040: 4.2000000000e+01"),
        "{}",
        f.stdout
    );
    // The CLI's update goes after the queued value; the daemon's check follows it.
    assert_eq!(run(&["update", "q.rrd", "1700000120:43"]).code, 0);
    assert_eq!(
        raw(&d.sock, "UPDATE q.rrd 1700000120:44"),
        "-1 illegal attempt to update using time 1700000120.000000 when last update time is 1700000120.000000 (minimum one second step)\n"
    );
    assert_eq!(
        raw(&d.sock, "UPDATE q.rrd 1700000180:45"),
        "0 errors, enqueued 1 value(s).\n"
    );
    let l = run(&["lastupdate", "q.rrd"]);
    assert_eq!(l.stdout, " v\n\n1700000180: 45\n");
    // The path under -b, as rrdtool's users write it, names the same series.
    let abs = dir.0.join("base/q.rrd").display().to_string();
    assert_eq!(run(&["lastupdate", &abs]), l);
    // A daemon that is not ringlet: a clear error.
    let o = ringlet(
        &dir.0,
        Way::Flag,
        "unix:/nonexistent/x.sock",
        &["last", "q.rrd"],
        None,
    );
    assert_eq!(o.code, 1);
    assert!(
        o.stderr
            .starts_with("ERROR: Unable to connect to rrdcached: "),
        "{o:?}"
    );
    // The daemon gone, the CLI opens the store itself and finds everything committed.
    drop(d);
    let l = run(&["lastupdate", "q.rrd"]);
    assert_eq!(l.stdout, " v\n\n1700000180: 45\n", "{l:?}");
    assert_eq!(
        run(&["lastupdate", &abs]),
        l,
        "the base the daemon recorded"
    );
    // Without the daemon nothing reads the placeholder itself as data.
    let other = Dir::new("other");
    let o = ringlet(&other.0, Way::Alone, "", &["fetch", &abs, "LAST"], None);
    assert_eq!((o.code, o.stdout.as_str()), (1, ""), "{o:?}");
}

#[test]
fn export_writes_rrdtools_own_bytes() {
    if Command::new("rrdtool").arg("--version").output().is_err() {
        assert!(std::env::var_os("CI").is_none(), "CI installs rrdtool");
        return;
    }
    let dir = Dir::new("export");
    let d = Daemon::start(&dir.0);
    let rrdtool = |args: &[&str], cwd: &Path| {
        let o = Command::new("rrdtool")
            .args(args)
            .current_dir(cwd)
            .output()
            .unwrap();
        assert!(o.status.success(), "{args:?}: {o:?}");
        o.stdout
    };
    // A file created by rrdtool (as collectd does), taken over by the daemon at first
    // update; the same file kept aside and fed the same updates by rrdtool itself.
    let mirror = dir.0.join("mirror");
    std::fs::create_dir_all(&mirror).unwrap();
    let create = [
        "create",
        "m.rrd",
        "--start",
        "1700000000",
        "--step",
        "60",
        "DS:x:GAUGE:120:0:100",
        "DS:c:COUNTER:120:U:U",
        "RRA:AVERAGE:0.5:1:50",
        "RRA:MAX:0.5:5:20",
        "RRA:MIN:0.5:12:10",
        "RRA:LAST:0.5:1:5",
    ];
    rrdtool(&create, &dir.0.join("base"));
    std::fs::copy(dir.0.join("base/m.rrd"), mirror.join("m.rrd")).unwrap();
    let mut updates = Vec::new();
    let mut c = 1000u64;
    for k in 1..=120u64 {
        c += (k * 37) % 500;
        updates.push(format!(
            "{}:{}:{c}",
            1_700_000_000 + 60 * k - (k % 3),
            (k * 13) % 100
        ));
    }
    for u in &updates {
        assert_eq!(
            raw(&d.sock, &format!("UPDATE m.rrd {u}")),
            "0 errors, enqueued 1 value(s).\n"
        );
    }
    let mut args = vec!["update", "m.rrd"];
    args.extend(updates.iter().map(String::as_str));
    rrdtool(&args, &mirror);
    // Through the daemon, and on the store alone after it stops: the same bytes as rrdtool's.
    let run = |out: &str, extra: &[&str]| {
        let mut a = vec!["export", "-q", out];
        a.extend(extra);
        ringlet(&dir.0, Way::Found, "", &a, None)
    };
    let o = run("exp", &["m*"]);
    assert_eq!(o.code, 0, "{o:?}");
    assert!(o.stdout.starts_with("exported 1 series ("), "{o:?}");
    let want = std::fs::read(mirror.join("m.rrd")).unwrap();
    assert_eq!(std::fs::read(dir.0.join("exp/m.rrd")).unwrap(), want);
    assert_eq!(
        rrdtool(&["dump", "exp/m.rrd"], &dir.0),
        rrdtool(&["dump", "m.rrd"], &mirror)
    );
    // Existing files: refused, resumed, or overwritten only when told.
    let again = run("exp", &[]);
    assert_eq!(again.code, 1);
    assert!(again.stderr.contains("exist already"), "{again:?}");
    assert_eq!(std::fs::read(dir.0.join("exp/m.rrd")).unwrap(), want);
    let resumed = run("exp", &["--resume"]);
    assert_eq!(resumed.code, 0, "{resumed:?}");
    assert!(
        resumed.stdout.ends_with("1 skipped (already there)\n"),
        "{resumed:?}"
    );
    drop(d);
    let o = run("exp", &["--force"]);
    assert_eq!(o.code, 0, "{o:?}");
    assert_eq!(std::fs::read(dir.0.join("exp/m.rrd")).unwrap(), want);
    let none = run("exp2", &["nothing*"]);
    assert_eq!(none.code, 1);
    assert_eq!(none.stderr, "ERROR: no series matches nothing*\n");
}

#[test]
fn a_log_damaged_before_its_end_is_refused_until_repaired() {
    let dir = Dir::new("repair");
    let run = |args: &[&str]| ringlet(&dir.0, Way::Alone, "", args, None);
    // Commits that stay in the log: a daemon FLUSHes each update, then dies (kill -9)
    // before any checkpoint covers them.
    let mut d = Daemon::start(&dir.0);
    let c = "CREATE r.rrd -b 1700000000 -s 60 DS:v:GAUGE:120:U:U RRA:LAST:0.5:1:100";
    assert_eq!(raw(&d.sock, c), "0 RRD created OK\n");
    for k in 1..=5 {
        let u = format!("UPDATE r.rrd {}:{k}", 1_700_000_000 + 60 * k);
        assert_eq!(raw(&d.sock, &u), "0 errors, enqueued 1 value(s).\n");
        assert!(raw(&d.sock, "FLUSH r.rrd").starts_with("0 Successfully flushed"));
    }
    // SAFETY: kill(2) on our own child.
    unsafe {
        libc::kill(d.child.id() as libc::pid_t, libc::SIGKILL);
    }
    let _ = d.child.wait();
    assert_eq!(
        run(&["repair"]).stdout,
        format!(
            "{}: opens as it is, nothing to repair\n",
            dir.0.join("store").display()
        )
    );
    // Rot in the payload of the third record (one commit per update).
    let log = dir.0.join("store/log");
    let mut bytes = std::fs::read(&log).unwrap();
    let starts: Vec<usize> = (4096..bytes.len() - 4)
        .step_by(512)
        .filter(|&i| &bytes[i..i + 4] == b"RLR1")
        .collect();
    assert!(starts.len() >= 6, "{starts:?}");
    bytes[starts[2] + 33] ^= 0x08;
    std::fs::write(&log, &bytes).unwrap();
    let f = run(&["lastupdate", "r.rrd"]);
    assert_eq!((f.code, f.stdout.as_str()), (1, ""), "{f:?}");
    assert!(
        f.stderr.contains("committed record(s) follow it") && f.stderr.contains("ringlet repair"),
        "{f:?}"
    );
    assert_eq!(
        std::fs::read(&log).unwrap(),
        bytes,
        "a refused open changes nothing"
    );
    let r = run(&["repair"]);
    assert_eq!(r.code, 0, "{r:?}");
    assert!(r.stdout.contains("committed record(s) after it"), "{r:?}");
    let f = run(&["lastupdate", "r.rrd"]);
    assert_eq!(f.code, 0, "{f:?}");
    assert!(
        f.stdout.as_str() < " v\n\n1700000300: 5\n",
        "records dropped: {f:?}"
    );
    assert_eq!(run(&["update", "r.rrd", "1700000600:9"]).code, 0);
    assert_eq!(
        run(&["lastupdate", "r.rrd"]).stdout,
        " v\n\n1700000600: 9\n"
    );
}

/// Cacti keeps its RRDs as files it renames and deletes with PHP: beside the daemon those
/// files are placeholders. A placeholder renamed takes its series along (the next command on
/// the new path finds it, over RUN as over rrdcached's UPDATE); a copy of one does not; a
/// file deleted and created again is a new series.
#[test]
fn a_renamed_placeholder_takes_its_series_along() {
    let dir = Dir::new("rename");
    let d = Daemon::start(&dir.0);
    let base = dir.0.join("base");
    let run = |args: &[&str]| ringlet(&dir.0, Way::Found, &d.addr(), args, None);
    let a = base.join("a.rrd");
    let (a, b, c) = (
        a.to_str().unwrap().to_string(),
        base.join("b.rrd").to_str().unwrap().to_string(),
        base.join("c.rrd").to_str().unwrap().to_string(),
    );
    let schema = "--start 1700000000 --step 60 DS:v:GAUGE:120:U:U RRA:AVERAGE:0.5:1:10";
    let mut create = vec!["create", a.as_str()];
    create.extend(schema.split(' '));
    assert_eq!(run(&create).code, 0);
    assert_eq!(run(&["update", &a, "1700000060:5", "1700000120:7"]).code, 0);
    let before = run(&[
        "fetch",
        &a,
        "AVERAGE",
        "-s",
        "1700000000",
        "-e",
        "1700000180",
    ]);
    assert!(before.stdout.contains("5.0000000000e+00"), "{before:?}");

    std::fs::rename(&a, &b).unwrap();
    let u = run(&[
        "update",
        &b,
        "--skip-past-updates",
        "-t",
        "v",
        "1700000180:9",
    ]);
    assert_eq!(u.code, 0, "{u:?}");
    let after = run(&[
        "fetch",
        &b,
        "AVERAGE",
        "-s",
        "1700000000",
        "-e",
        "1700000240",
    ]);
    // The series' rows came along, and the update went on from them.
    assert!(after.stdout.contains("5.0000000000e+00"), "{after:?}");
    assert_ne!(after.stdout, before.stdout);
    let last = run(&["lastupdate", &b]);
    assert!(last.stdout.contains("1700000180: 9"), "{last:?}");
    let gone = run(&["info", &a]);
    assert_eq!(gone.code, 1, "{gone:?}");
    assert!(gone.stderr.contains("No such file"), "{gone:?}");
    let ph = std::fs::read_to_string(&b).unwrap();
    assert!(ph.contains("The series 'b.rrd'"), "{ph}");

    // Over rrdcached's protocol too: rename back, UPDATE the old name.
    std::fs::rename(&b, &a).unwrap();
    let r = raw(&d.sock, "UPDATE a.rrd 1700000240:11");
    assert!(r.starts_with("0 "), "{r}");
    let last = run(&["lastupdate", &a]);
    assert!(last.stdout.contains("1700000240: 11"), "{last:?}");

    // A copy is not a rename: the original keeps its series, the copy is refused.
    std::fs::copy(&a, &c).unwrap();
    let r = run(&["update", &c, "1700000300:1"]);
    assert_eq!(r.code, 1, "{r:?}");
    assert_eq!(run(&["last", &a]).stdout, "1700000240\n");

    // Deleted and created again: a new, empty series.
    std::fs::remove_file(&a).unwrap();
    assert_eq!(run(&create).code, 0);
    assert_eq!(run(&["last", &a]).stdout, "1700000000\n");
}

/// A graph beside the daemon is drawn in the daemon (by a drawing process of its own), in
/// the client's time zone (the axis's labels), to the client's output file: the bytes
/// rrdtool draws on a plain file there.
#[test]
fn a_graph_drawn_in_the_daemon_has_the_clients_time_zone_and_output_file() {
    if !which("rrdtool") {
        return;
    }
    let dir = Dir::new("draw");
    let d = Daemon::start(&dir.0);
    let files = dir.0.join("files");
    std::fs::create_dir_all(&files).unwrap();
    let schema = "--start 1700000000 --step 300 DS:v:GAUGE:600:U:U RRA:AVERAGE:0.5:1:400";
    let mut lines = vec![format!("create a.rrd {schema}")];
    for i in 1..300u64 {
        lines.push(format!(
            "update a.rrd {}:{}",
            1_700_000_000 + 300 * i,
            i % 37
        ));
    }
    let script = lines.join("\n") + "\n";
    let pipe = |c: &mut Command| {
        let mut child = c
            .arg("-")
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .spawn()
            .unwrap();
        use std::io::Write;
        child
            .stdin
            .take()
            .unwrap()
            .write_all(script.as_bytes())
            .unwrap();
        assert!(child.wait().unwrap().success());
    };
    pipe(Command::new("rrdtool").current_dir(&files));
    pipe(
        Command::new(BIN)
            .current_dir(&dir.0)
            .arg("--store")
            .arg(dir.0.join("store")),
    );
    let graph = "--start 1700000000 --end 1700086400 DEF:v=a.rrd:v:AVERAGE LINE1:v#ff0000";
    let draw = |tz: &str, out: &str, ringlet: bool| -> Vec<u8> {
        let mut c = if ringlet {
            let mut c = Command::new(BIN);
            c.current_dir(&dir.0)
                .arg("--store")
                .arg(dir.0.join("store"));
            c
        } else {
            let mut c = Command::new("rrdtool");
            c.current_dir(&files);
            c
        };
        let o = c
            .env("TZ", tz)
            .env_remove("RRDCACHED_ADDRESS")
            .arg("graph")
            .arg(out)
            .args(graph.split(' '))
            .output()
            .unwrap();
        assert!(o.status.success(), "{o:?}");
        assert_eq!(String::from_utf8_lossy(&o.stdout), "481x141\n");
        let at = if ringlet { &dir.0 } else { &files };
        std::fs::read(at.join(out)).unwrap()
    };
    let tokyo = draw("Asia/Tokyo", "t.png", false);
    assert_ne!(
        tokyo,
        draw("UTC", "u.png", false),
        "the zone changes the image"
    );
    assert!(tokyo == draw("Asia/Tokyo", "t.png", true), "Tokyo differs");
    assert!(
        draw("UTC", "u.png", false) == draw("UTC", "u.png", true),
        "UTC differs"
    );
    // The daemon drew them: it keeps a drawing process started ahead for the next client.
    let pid = d.child.id().to_string();
    let kids = std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter(|e| {
            let cmdline = std::fs::read(e.path().join("cmdline")).unwrap_or_default();
            let st = std::fs::read_to_string(e.path().join("stat")).unwrap_or_default();
            // pid (comm) state ppid ...
            let after = st.rsplit_once(") ").map_or("", |(_, r)| r);
            cmdline.split(|&b| b == 0).any(|a| a == b"__draw")
                && after.split(' ').nth(1) == Some(pid.as_str())
        })
        .count();
    assert!(kids > 0, "the daemon has no drawing process of its own");
}

/// Creates sent ahead by `ringlet -` beside the daemon are committed together, before
/// their answers: every one answered OK survives a kill -9 right after, and they took
/// fewer commits than creates.
#[test]
fn pipelined_creates_are_committed_together_before_their_answers() {
    let dir = Dir::new("creates");
    let d = Daemon::start(&dir.0);
    let n = 200;
    let script: String = (0..n)
        .map(|i| {
            format!("create c{i}.rrd --start 1700000000 --step 60 DS:v:GAUGE:120:U:U RRA:LAST:0.5:1:10\n")
        })
        .collect();
    let out = ringlet(&dir.0, Way::Found, &d.addr(), &["-"], Some(&script));
    assert_eq!(out.stdout, "OK\n".repeat(n), "{out:?}");
    // SAFETY: kill(2) on our own child.
    unsafe {
        libc::kill(d.child.id() as libc::pid_t, libc::SIGKILL);
    }
    let mut d = d;
    let _ = d.child.wait();
    let log = std::fs::read(dir.0.join("store/log")).unwrap();
    let records = (4096..log.len().saturating_sub(4))
        .step_by(512)
        .filter(|&i| &log[i..i + 4] == b"RLR1")
        .count();
    assert!(
        records > 0 && records < n / 2,
        "{records} records for {n} creates"
    );
    for i in [0, n / 2, n - 1] {
        let last = ringlet(
            &dir.0,
            Way::Alone,
            "",
            &["last", &format!("c{i}.rrd")],
            None,
        );
        assert_eq!(last.stdout, "1700000000\n", "c{i}.rrd: {last:?}");
    }
}

/// A CLI command through the daemon that writes a series whose path under -b holds the
/// user's real .rrd file (restore -f over it, import rrd --force of the base directory)
/// commits, then moves the file aside into STORE/imported/: it is never overwritten by the
/// placeholder. `import rrd --move` of the base directory has the daemon take its files in.
#[test]
fn a_users_file_under_the_base_is_moved_aside_not_overwritten() {
    if !which("rrdtool") {
        return;
    }
    let dir = Dir::new("aside");
    let d = Daemon::start(&dir.0);
    let base = dir.0.join("base");
    let run = |args: &[&str]| ringlet(&dir.0, Way::Found, &d.addr(), args, None);
    let make = |name: &str, v: u32| {
        let p = base.join(name);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        let st = Command::new("rrdtool")
            .arg("create")
            .arg(&p)
            .args([
                "--start",
                "1700000000",
                "--step",
                "60",
                "DS:v:GAUGE:120:U:U",
            ])
            .arg("RRA:AVERAGE:0.5:1:10")
            .status()
            .unwrap();
        assert!(st.success());
        let st = Command::new("rrdtool")
            .arg("update")
            .arg(&p)
            .arg(format!("1700000060:{v}"))
            .status()
            .unwrap();
        assert!(st.success());
        std::fs::read(&p).unwrap()
    };
    // restore -f over a user's file.
    let user = make("u.rrd", 1);
    let xml = dir.0.join("x.xml");
    let out = Command::new("rrdtool")
        .arg("dump")
        .arg(base.join("u.rrd"))
        .output()
        .unwrap();
    std::fs::write(&xml, &out.stdout).unwrap();
    let r = run(&["restore", "-f", xml.to_str().unwrap(), "u.rrd"]);
    assert_eq!(r.code, 0, "{r:?}");
    assert_eq!(
        std::fs::read(dir.0.join("store/imported/u.rrd")).unwrap(),
        user
    );
    assert!(std::fs::read(base.join("u.rrd"))
        .unwrap()
        .starts_with(b"ringlet placeholder:"));
    // import rrd --move of the daemon's base directory: the daemon takes each file in.
    let (a, b) = (make("h/a.rrd", 2), make("h/b.rrd", 3));
    let r = run(&["import", "-q", "--move", "rrd", base.to_str().unwrap()]);
    assert!(
        r.stdout
            .contains("2 imported, 1 skipped (there already), 0 failed, of 3 files; 2 moved aside"),
        "{r:?}"
    );
    for (name, bytes) in [("h/a.rrd", a), ("h/b.rrd", b)] {
        assert_eq!(
            std::fs::read(dir.0.join("store/imported").join(name)).unwrap(),
            bytes
        );
        let theirs = Command::new("rrdtool")
            .arg("dump")
            .arg(dir.0.join("store/imported").join(name))
            .output()
            .unwrap();
        assert_eq!(
            run(&["dump", name]).stdout,
            String::from_utf8_lossy(&theirs.stdout)
        );
    }
}

/// `ringlet -` with `input` as its stdin, on the store in `dir` (found beside its daemon,
/// or alone): its stdout with the timings masked, and its exit status.
fn pipe_bytes(dir: &Path, input: &[u8]) -> (String, i32) {
    use std::io::Write;
    let mut child = Command::new(BIN)
        .env_remove("RRDCACHED_ADDRESS")
        .current_dir(dir)
        .arg("--store")
        .arg(dir.join("store"))
        .arg("-")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let input = input.to_vec();
    // Written from a thread: a long input must not wait for its answers to be read.
    let w = std::thread::spawn(move || {
        let _ = stdin.write_all(&input);
    });
    let o = child.wait_with_output().unwrap();
    w.join().unwrap();
    let out = String::from_utf8_lossy(&o.stdout)
        .split_inclusive('\n')
        .map(|l| if l.starts_with("OK u:") { "OK\n" } else { l })
        .collect();
    (out, o.status.code().unwrap_or(-1))
}

/// rrdtool's pipe mode reports a line it cannot run and runs the rest: a line that is not
/// UTF-8 gets its ERROR and the session goes on, alone and beside the daemon (it ended the
/// session silently, exit 0, and lost the later updates).
#[test]
fn a_line_that_is_not_utf8_gets_an_error_and_the_session_goes_on() {
    let lines = |b: &str| -> Vec<u8> {
        let mut v = Vec::new();
        v.extend_from_slice(
            format!("create {b}a.rrd -b 1700000000 -s 10 DS:v:GAUGE:20:U:U RRA:AVERAGE:0.5:1:100\nupdate {b}a.rrd 1700000010:1\n").as_bytes(),
        );
        v.extend_from_slice(format!("update {b}a.rrd 1700000020:2 --template ").as_bytes());
        v.extend_from_slice(b"\xe9t\xe9\r\n");
        v.extend_from_slice(format!("update {b}a.rrd 1700000030:3\nlast {b}a.rrd\n").as_bytes());
        v
    };
    let want = |out: &str| {
        let l: Vec<&str> = out.lines().collect();
        assert_eq!(l.len(), 6, "{out}");
        assert_eq!(&l[..2], ["OK", "OK"], "{out}");
        assert!(
            l[2].starts_with("ERROR: the line is not UTF-8 (byte 0xE9 at column 38)"),
            "{out}"
        );
        assert_eq!(&l[3..], ["OK", "1700000030", "OK"], "{out}");
    };
    let alone = Dir::new("nonutf8-alone");
    let (out, code) = pipe_bytes(&alone.0, &lines(""));
    want(&out);
    assert_eq!(code, 0);
    let beside = Dir::new("nonutf8-beside");
    let _d = Daemon::start(&beside.0);
    let (out, _) = pipe_bytes(&beside.0, &lines(""));
    want(&out);
}

/// Beside the daemon, a line longer than its --max-line gets the daemon's error, and each
/// later line its own answer (they said "the connection was lost" though the daemon ran
/// them).
#[test]
fn after_a_line_too_long_for_the_daemon_the_later_lines_report_their_own_results() {
    let dir = Dir::new("longline");
    let base = dir.0.join("base");
    let d = Daemon::start_with(
        &dir.0,
        &["-b", base.to_str().unwrap(), "--max-line", "4096"],
    );
    let mut input = String::from(
        "create a.rrd -b 1700000000 -s 10 DS:v:GAUGE:20:U:U RRA:AVERAGE:0.5:1:100\nupdate a.rrd",
    );
    for i in 0..20000 {
        input.push_str(&format!(" {}:1", 1700000010 + 10 * i));
    }
    input.push('\n');
    for i in 0..5 {
        input.push_str(&format!("update a.rrd {}:{i}\n", 1800000000 + 10 * i));
    }
    input.push_str("last a.rrd\n");
    let (out, _) = pipe_bytes(&dir.0, input.as_bytes());
    let l: Vec<&str> = out.lines().collect();
    assert_eq!(l.len(), 9, "{out}");
    assert_eq!(l[0], "OK");
    assert!(
        l[1].starts_with("ERROR: ") && l[1].contains("Line too long"),
        "{out}"
    );
    assert_eq!(
        &l[2..],
        ["OK"; 5]
            .iter()
            .chain(&["1800000040", "OK"])
            .copied()
            .collect::<Vec<_>>(),
        "{out}"
    );
    assert_eq!(raw(&d.sock, "LAST a.rrd"), "0 1800000040\n");
}

/// Without a daemon, `create` (one-shot and in pipe mode) of a path leaves a placeholder
/// there, as the daemon does, so a client that checks the file before creating it (Cacti
/// alone: `file_exists`) finds it and does not create the series again over its data. A
/// relative store name is not a path: no file.
#[test]
fn the_cli_alone_leaves_a_placeholder_at_a_created_path() {
    let dir = Dir::new("alone-placeholder");
    let rra = dir.0.join("rra");
    std::fs::create_dir_all(&rra).unwrap();
    let schema = "-b 1699999800 -s 300 DS:v:GAUGE:600:U:U RRA:AVERAGE:0.5:1:100";
    let one = rra.join("one.rrd");
    let out = ringlet(
        &dir.0,
        Way::Alone,
        "",
        &[
            &["create", one.to_str().unwrap()][..],
            &schema.split(' ').collect::<Vec<_>>(),
        ]
        .concat(),
        None,
    );
    assert_eq!(out.code, 0, "{out:?}");
    let text = std::fs::read_to_string(&one).expect("a placeholder at the created path");
    assert!(text.starts_with("ringlet placeholder:"), "{text}");
    // Pipe mode, as Cacti runs it: each poll checks the file, creates only when missing.
    let two = rra.join("sub/two.rrd");
    std::fs::create_dir_all(two.parent().unwrap()).unwrap();
    for poll in 0..3 {
        let mut script = String::new();
        if !two.exists() {
            script.push_str(&format!("create {} {schema}\n", two.display()));
        }
        script.push_str(&format!(
            "update {} {}:{}\n",
            two.display(),
            1700000100 + 300 * poll,
            poll + 1
        ));
        let (out, code) = pipe_bytes(&dir.0, script.as_bytes());
        assert_eq!(code, 0);
        assert!(!out.contains("ERROR"), "poll {poll}: {out}");
        assert_eq!(poll == 0, out.lines().count() == 2, "poll {poll}: {out}");
    }
    let fetch = ringlet(
        &dir.0,
        Way::Alone,
        "",
        &[
            "fetch",
            two.to_str().unwrap(),
            "AVERAGE",
            "-s",
            "1699999800",
            "-e",
            "1700000700",
        ],
        None,
    );
    // Every poll's value is there: created once.
    for (t, v) in [(1700000100, 1), (1700000400, 2), (1700000700, 3)] {
        assert!(
            fetch.stdout.contains(&format!("{t}: {v}.0000000000e+00")),
            "{fetch:?}"
        );
    }
    // Creates alone in a session (committed together at its end, or at the next write),
    // and read before they are committed: each has its placeholder once the session ends.
    let (three, four) = (rra.join("three.rrd"), rra.join("sub/four.rrd"));
    let script = format!(
        "create {} {schema}\ncreate {} {schema}\nlast {}\n",
        three.display(),
        four.display(),
        three.display()
    );
    let (out, code) = pipe_bytes(&dir.0, script.as_bytes());
    assert_eq!(code, 0);
    assert!(
        !out.contains("ERROR") && out.contains("1699999800"),
        "{out}"
    );
    for p in [&three, &four] {
        let text = std::fs::read_to_string(p).expect("a placeholder after the session");
        assert!(text.starts_with("ringlet placeholder:"), "{text}");
    }
    // A store name is not a file.
    let out = ringlet(
        &dir.0,
        Way::Alone,
        "",
        &[
            &["create", "x.rrd"][..],
            &schema.split(' ').collect::<Vec<_>>(),
        ]
        .concat(),
        None,
    );
    assert_eq!(out.code, 0, "{out:?}");
    assert!(!dir.0.join("x.rrd").exists());
}

/// Beside a daemon without -b, a CLI create of an absolute path gets its placeholder there
/// (as protocol CREATE); beside one with -b -B, an absolute name outside the base is
/// refused as CREATE refuses it.
#[test]
fn the_cli_through_the_daemon_creates_absolute_paths_as_create_does() {
    let schema = [
        "-b",
        "1700000000",
        "-s",
        "300",
        "DS:v:GAUGE:600:U:U",
        "RRA:AVERAGE:0.5:1:100",
    ];
    let dir = Dir::new("abs-nobase");
    let d = Daemon::start_with(&dir.0, &[]);
    let path = dir.0.join("elsewhere/a.rrd");
    let out = ringlet(
        &dir.0,
        Way::Found,
        &d.addr(),
        &[&["create", path.to_str().unwrap()][..], &schema].concat(),
        None,
    );
    assert_eq!(out.code, 0, "{out:?}");
    let text = std::fs::read_to_string(&path).expect("a placeholder at the created path");
    assert!(text.starts_with("ringlet placeholder:"), "{text}");
    drop(d);
    let dir = Dir::new("abs-restricted");
    let base = dir.0.join("base");
    let d = Daemon::start_with(&dir.0, &["-b", base.to_str().unwrap(), "-B"]);
    let path = dir.0.join("outside.rrd");
    let out = ringlet(
        &dir.0,
        Way::Found,
        &d.addr(),
        &[&["create", path.to_str().unwrap()][..], &schema].concat(),
        None,
    );
    assert_eq!(out.code, 1, "{out:?}");
    assert!(out.stderr.contains("Permission denied"), "{out:?}");
    assert!(!path.exists());
    let last = raw(&d.sock, &format!("LAST {}", path.display()));
    assert!(last.starts_with("-1"), "{last}");
}

/// A pipe-mode session beside the daemon commits what it wrote before `ringlet -` exits
/// (Cacti's Boost deletes the values it flushed once the session is over): a kill -9 of the
/// daemon right after loses none of them, with a loss window of an hour.
#[test]
fn a_pipe_session_beside_the_daemon_is_committed_when_it_ends() {
    let dir = Dir::new("session-commit");
    let d = Daemon::start(&dir.0);
    let mut script = String::new();
    for i in 0..20 {
        script.push_str(&format!(
            "create b{i}.rrd -b 1700000000 -s 10 DS:v:GAUGE:20:U:U RRA:LAST:0.5:1:100\n"
        ));
    }
    let (out, _) = pipe_bytes(&dir.0, script.as_bytes());
    assert_eq!(out, "OK\n".repeat(20));
    let mut script = String::new();
    for i in 0..20 {
        script.push_str(&format!("update b{i}.rrd 1700000010:{i} 1700000020:{i}\n"));
    }
    let (out, code) = pipe_bytes(&dir.0, script.as_bytes());
    assert_eq!((out, code), ("OK\n".repeat(20), 0));
    let mut d = d;
    // SAFETY: kill(2) on our own child.
    unsafe {
        libc::kill(d.child.id() as libc::pid_t, libc::SIGKILL);
    }
    let _ = d.child.wait();
    for i in [0, 7, 19] {
        let last = ringlet(
            &dir.0,
            Way::Alone,
            "",
            &["lastupdate", &format!("b{i}.rrd")],
            None,
        );
        assert_eq!(
            last.stdout,
            format!(" v\n\n1700000020: {i}\n"),
            "b{i}: {last:?}"
        );
    }
}

/// A stored chunk damaged on disk (a flipped byte in a segment file) is an error for every
/// reader, never rows of unknowns a client takes for a gap: FETCH, `ringlet fetch` beside
/// the daemon and alone; STATS counts it; `ringlet check` lists it (exit 1) and `--cut`
/// makes those rows unknown, after which reads succeed.
#[test]
fn damaged_rows_are_an_error_that_check_finds_and_cuts() {
    let dir = Dir::new("damage");
    let base = dir.0.join("base");
    // -F: the stop writes a checkpoint, which stores the sealed chunks in a segment file.
    let d = Daemon::start_with(&dir.0, &["-b", base.to_str().unwrap(), "-F"]);
    let create = ringlet(
        &dir.0,
        Way::Found,
        &d.addr(),
        &[
            "create",
            "d.rrd",
            "-b",
            "1700000000",
            "-s",
            "1",
            "DS:v:GAUGE:20:U:U",
            "RRA:LAST:0.5:1:5000",
        ],
        None,
    );
    assert_eq!(create.code, 0, "{create:?}");
    let values: Vec<String> = (1..=4000)
        .map(|i| format!("{}:{}", 1700000000 + i, i % 97))
        .collect();
    let mut args = vec!["update", "d.rrd"];
    args.extend(values.iter().map(String::as_str));
    assert_eq!(ringlet(&dir.0, Way::Found, &d.addr(), &args, None).code, 0);
    let fetch = [
        "fetch",
        "d.rrd",
        "LAST",
        "-s",
        "1700000000",
        "-e",
        "1700004000",
    ];
    let good = ringlet(&dir.0, Way::Found, &d.addr(), &fetch, None);
    assert_eq!(good.code, 0, "{good:?}");
    drop(d);
    let seg = std::fs::read_dir(dir.0.join("store"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.file_name().unwrap().to_string_lossy().starts_with("seg-"))
        .max_by_key(|p| std::fs::metadata(p).unwrap().len())
        .expect("a segment file");
    let mut b = std::fs::read(&seg).unwrap();
    let at = b.len() / 2;
    b[at] ^= 0x10;
    std::fs::write(&seg, &b).unwrap();
    // Alone: an error, nothing printed as rows.
    let alone = ringlet(&dir.0, Way::Alone, "", &fetch, None);
    assert_eq!(alone.code, 1, "{alone:?}");
    assert!(alone.stderr.contains("damaged on disk"), "{alone:?}");
    assert!(!alone.stdout.contains("1700000"), "{alone:?}");
    let d = Daemon::start(&dir.0);
    let reply = raw(&d.sock, "FETCH d.rrd LAST 1700000000 1700004000");
    assert!(
        reply.starts_with("-1 ") && reply.contains("damaged on disk"),
        "{reply}"
    );
    let beside = ringlet(&dir.0, Way::Found, &d.addr(), &fetch, None);
    assert!(
        beside.code == 1 && beside.stderr.contains("damaged on disk"),
        "{beside:?}"
    );
    let stats = ringlet(&dir.0, Way::Alone, "", &["stats", "-d", &d.addr()], None);
    // Without -d, the daemon that holds the store is found through it.
    let found = ringlet(&dir.0, Way::Alone, "", &["stats"], None);
    assert!(found.stdout.contains("DamagedChunks: "), "{found:?}");
    let count = stats
        .stdout
        .lines()
        .find_map(|l| l.strip_prefix("DamagedChunks: "))
        .and_then(|n| n.trim().parse::<u64>().ok());
    assert!(count.is_some_and(|n| n >= 1), "{stats:?}");
    let check = ringlet(&dir.0, Way::Found, &d.addr(), &["check"], None);
    assert_eq!(check.code, 1, "{check:?}");
    assert!(
        check.stdout.contains("d.rrd: 1 damaged chunk(s)"),
        "{check:?}"
    );
    let cut = ringlet(&dir.0, Way::Found, &d.addr(), &["check", "--cut"], None);
    assert_eq!(cut.code, 0, "{cut:?}");
    assert!(
        cut.stdout.contains("cut: their rows are unknown now"),
        "{cut:?}"
    );
    let after = ringlet(&dir.0, Way::Found, &d.addr(), &fetch, None);
    assert_eq!(after.code, 0, "{after:?}");
    // The damaged chunk's rows are unknown now, the others as they were.
    let rows = |o: &Out| -> Vec<String> { o.stdout.lines().map(String::from).collect() };
    let (g, a) = (rows(&good), rows(&after));
    assert_eq!(g.len(), a.len());
    let changed: Vec<_> = g.iter().zip(&a).filter(|(x, y)| x != y).collect();
    assert!(
        !changed.is_empty() && changed.iter().all(|(_, y)| y.ends_with("nan")),
        "{:?}",
        &changed[..changed.len().min(3)]
    );
    assert!(
        changed.len() < g.len() / 2,
        "{} rows changed",
        changed.len()
    );
    let again = ringlet(&dir.0, Way::Found, &d.addr(), &["check"], None);
    assert_eq!(again.code, 0, "{again:?}");
}

/// One RUN on an open connection: the status line and the lines after it.
fn run_on(
    r: &mut std::io::BufReader<std::os::unix::net::UnixStream>,
    line: &str,
) -> (String, Vec<String>) {
    use std::io::{BufRead, Write};
    r.get_mut()
        .write_all(format!("{line}\n").as_bytes())
        .unwrap();
    let mut status = String::new();
    r.read_line(&mut status).unwrap();
    let n: i64 = status
        .split(' ')
        .next()
        .and_then(|n| n.parse().ok())
        .unwrap_or(0);
    let lines = (0..n.max(0))
        .map(|_| {
            let mut l = String::new();
            r.read_line(&mut l).unwrap();
            l.trim_end_matches('\n').to_string()
        })
        .collect();
    (status.trim_end().to_string(), lines)
}

/// Past the daemon's 32 drawing connections a new one is told `draw: busy` and the CLI
/// draws itself, its rows read through the daemon (RUN fetch-rows): the same bytes. Under
/// -B a DEF may not name a series outside the base directory, nor a file with `rrd=`.
#[test]
fn past_the_daemons_drawers_the_client_draws_the_same_bytes_and_defs_stay_in_the_base() {
    if !which("rrdtool") {
        return;
    }
    let dir = Dir::new("busy");
    let base = dir.0.join("base");
    let d = Daemon::start_with(&dir.0, &["-b", base.to_str().unwrap(), "-B"]);
    let mut script = String::from(
        "create a.rrd --start 1700000000 --step 300 DS:v:GAUGE:600:U:U RRA:AVERAGE:0.5:1:400\n",
    );
    for i in 1..300u64 {
        script.push_str(&format!(
            "update a.rrd {}:{}\n",
            1_700_000_000 + 300 * i,
            i % 37
        ));
    }
    let out = ringlet(&dir.0, Way::Found, &d.addr(), &["-"], Some(&script));
    assert_eq!(out.code, 0, "{out:?}");
    let graph = [
        "graph",
        "-",
        "--start",
        "1700000000",
        "--end",
        "1700086400",
        "DEF:v=a.rrd:v:AVERAGE",
        "LINE1:v#ff0000",
    ];
    let image = || {
        let o = Command::new(BIN)
            .current_dir(&dir.0)
            .env("TZ", "UTC")
            .env("RRDCACHED_ADDRESS", d.addr())
            .args(graph)
            .output()
            .unwrap();
        assert!(o.status.success(), "{o:?}");
        o.stdout
    };
    let drawn_there = image();
    assert!(drawn_there.starts_with(b"\x89PNG"));
    let draw = format!(
        "RUN 1700090000 0 draw graph TZ=UTC -- {}",
        graph[1..].join(" ")
    );
    let mut held = Vec::new();
    for _ in 0..32 {
        let s = std::os::unix::net::UnixStream::connect(&d.sock).unwrap();
        let mut r = std::io::BufReader::new(s);
        let (status, _) = run_on(&mut r, &draw);
        assert!(!status.starts_with('-'), "{status}");
        held.push(r);
    }
    let s = std::os::unix::net::UnixStream::connect(&d.sock).unwrap();
    let mut r = std::io::BufReader::new(s);
    let (status, lines) = run_on(&mut r, &draw);
    assert!(
        lines.iter().any(|l| l.contains("draw: busy")),
        "{status} {lines:?}"
    );
    assert!(image() == drawn_there, "the client's own drawing differs");
    drop(held);
    // Under -B: a series outside the base, a file by rrd=, a path with `..`.
    for def in [
        "DEF:v=/etc/passwd.rrd:v:AVERAGE",
        "DEF:v=a.rrd:v:AVERAGE:rrd=/etc/passwd",
        "DEF:v=../a.rrd:v:AVERAGE",
    ] {
        let line =
            format!("RUN 1700090000 0 draw graph -- - --start 1700000000 {def} LINE1:v#ff0000");
        // The daemon frees a closed connection's drawer when its thread sees the close:
        // until then a draw may still find every drawer taken.
        let mut tries = 0;
        let (status, text) = loop {
            let (status, lines) = run_on(&mut r, &line);
            let text = lines.join("\n");
            tries += 1;
            if !text.contains("draw: busy") || tries == 100 {
                break (status, text);
            }
            std::thread::sleep(std::time::Duration::from_millis(100));
        };
        assert!(
            text.contains("Permission denied")
                || text.contains("names a file")
                || text.contains("'..' is not allowed"),
            "{def}: {status} {text}"
        );
        assert!(!text.contains("root:"), "{def}: {text}");
    }
}

/// The daemon draws after its binary was replaced on disk (a package upgrade): its drawing
/// process is the running binary, not the file now at its path.
#[test]
fn the_daemon_draws_after_its_binary_is_replaced() {
    let dir = Dir::new("upgraded");
    let bin = dir.0.join("ringlet-copy");
    std::fs::copy(BIN, &bin).unwrap();
    let d = Daemon::start_from(&bin, &dir.0, &[]);
    // Replaced as dpkg replaces it: a new file renamed over the path.
    let new = dir.0.join("ringlet-new");
    std::fs::copy(BIN, &new).unwrap();
    std::fs::rename(&new, &bin).unwrap();
    let s = std::os::unix::net::UnixStream::connect(&d.sock).unwrap();
    let mut r = std::io::BufReader::new(s);
    let (status, _) = run_on(
        &mut r,
        "RUN 1700090000 0 create a.rrd --start 1700000000 --step 300 DS:v:GAUGE:600:U:U RRA:AVERAGE:0.5:1:400",
    );
    assert!(!status.starts_with('-'), "{status}");
    let (status, lines) = run_on(
        &mut r,
        "RUN 1700090000 0 draw graph TZ=UTC -- - --start 1700000000 --end 1700086400 DEF:v=a.rrd:v:AVERAGE LINE1:v#ff0000",
    );
    let png = lines.iter().any(|l| l.starts_with("o89504e47"));
    drop(d);
    assert!(png, "{status} {lines:?}");
}
