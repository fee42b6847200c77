//! What the daemon tests share: temporary directories, starting `ringlet serve` and the real
//! rrdcached as child processes (stopped by pid when dropped), running `rrdtool`; the
//! protocol and HTTP clients, free loopback ports and the seeded generator are `testkit`'s.
#![allow(dead_code)]

use std::io::{Read, Write};
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};
// Not every test uses every client.
#[allow(unused_imports)]
pub use testkit::http::{free_port, get as http_get, request as http_request};
#[allow(unused_imports)]
pub use testkit::rrdcached::{connect, converse, fetch_rows, read_line, read_reply, request};

/// The path of this build's daemon (`ringlet serve`).
pub const RINGLET: &str = env!("CARGO_BIN_EXE_ringlet-serve");

pub fn in_ci() -> bool {
    std::env::var("CI").is_ok_and(|v| v == "true" || v == "1")
}

pub fn env_u64(name: &str) -> Option<u64> {
    std::env::var(name).ok().and_then(|v| v.trim().parse().ok())
}

/// Is `prog` on PATH?
pub fn have(prog: &str) -> bool {
    std::env::var_os("PATH")
        .is_some_and(|p| std::env::split_paths(&p).any(|d| d.join(prog).is_file()))
}

/// rrdtool and rrdcached are required in CI; elsewhere a missing one skips (false) with a word.
pub fn need(progs: &[&str]) -> bool {
    for p in progs {
        if !have(p) {
            assert!(!in_ci(), "{p} is not on PATH: run scripts/setup");
            eprintln!("SKIP: {p} not found on PATH");
            return false;
        }
    }
    true
}

/// A directory under the system temp dir, removed on drop.
pub struct TempDir(pub PathBuf);

static COUNTER: AtomicUsize = AtomicUsize::new(0);

impl TempDir {
    pub fn new(tag: &str) -> TempDir {
        let n = COUNTER.fetch_add(1, Ordering::SeqCst);
        let p = std::env::temp_dir().join(format!("ringlet-srv-{tag}-{}-{n}", std::process::id()));
        let _ = std::fs::remove_dir_all(&p);
        std::fs::create_dir_all(&p).expect("temp dir");
        // Canonical, so that the daemons' -b check and the paths in replies agree.
        TempDir(p.canonicalize().expect("canonical temp dir"))
    }
    pub fn path(&self) -> &Path {
        &self.0
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// A child process that is stopped by its pid when dropped (SIGTERM, then SIGKILL).
pub struct Proc {
    pub child: Child,
    pub name: String,
    done: Option<ExitStatus>,
}

pub fn signal(pid: u32, sig: libc::c_int) {
    // SAFETY: kill(2) on the pid of a child we started and have not reaped.
    unsafe {
        libc::kill(pid as libc::pid_t, sig);
    }
}

impl Proc {
    /// Take charge of a started child: it is stopped by pid when dropped.
    pub fn adopt(child: Child, name: &str) -> Proc {
        Proc {
            child,
            name: name.to_string(),
            done: None,
        }
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Send `sig` and wait (up to `limit`) for the process to exit.
    pub fn stop(&mut self, sig: libc::c_int, limit: Duration) -> Option<ExitStatus> {
        if let Some(s) = self.done {
            return Some(s);
        }
        signal(self.pid(), sig);
        let t0 = Instant::now();
        while t0.elapsed() < limit {
            if let Ok(Some(s)) = self.child.try_wait() {
                self.done = Some(s);
                return Some(s);
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        None
    }

    pub fn alive(&mut self) -> bool {
        self.done.is_none() && matches!(self.child.try_wait(), Ok(None))
    }
}

impl Drop for Proc {
    fn drop(&mut self) {
        if self.done.is_none() && self.stop(libc::SIGTERM, Duration::from_secs(10)).is_none() {
            let _ = self.stop(libc::SIGKILL, Duration::from_secs(5));
        }
    }
}

/// Wait until the daemon on a unix socket answers PING (`0 PONG`, or a refusal under `-P`).
pub fn wait_for_socket(sock: &Path, p: &mut Proc, log: &Path) {
    // The socket accepts connections once bound, before the daemon serves them (it drops
    // privileges in between with -U): wait for an answer to PING. Under `-P` without PING
    // the answer is a refusal, which shows the daemon serving just as well.
    let answers = || -> std::io::Result<bool> {
        let mut c = UnixStream::connect(sock)?;
        c.set_read_timeout(Some(Duration::from_secs(1)))?;
        c.write_all(b"PING\n")?;
        let mut buf = [0u8; 64];
        let n = c.read(&mut buf)?;
        Ok(buf[..n].starts_with(b"0 PONG") || buf[..n].starts_with(b"-1 Permission denied"))
    };
    let t0 = Instant::now();
    while t0.elapsed() < Duration::from_secs(20) {
        if answers().unwrap_or(false) {
            return;
        }
        if !p.alive() {
            break;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    panic!(
        "{} did not listen on {}: {}",
        p.name,
        sock.display(),
        std::fs::read_to_string(log).unwrap_or_default()
    );
}

/// `ringlet serve` in the foreground on `dir/r.sock`, base `dir/db`, store `dir/store`.
pub struct Ringlet {
    pub proc: Proc,
    pub sock: PathBuf,
    pub base: PathBuf,
    pub store: PathBuf,
    pub log: PathBuf,
}

impl Ringlet {
    /// `extra` goes after the standard options; options before a `"--"` in it go before
    /// `-l` (so that `-P` applies to the socket).
    pub fn start(dir: &Path, extra: &[&str]) -> Ringlet {
        Ringlet::start_env(dir, extra, &[])
    }

    /// [`Ringlet::start`] with environment variables for the daemon.
    pub fn start_env(dir: &Path, extra: &[&str], env: &[(&str, &str)]) -> Ringlet {
        let sock = dir.join("r.sock");
        let base = dir.join("db");
        let store = dir.join("store");
        let log = dir.join("ringlet.log");
        std::fs::create_dir_all(&base).expect("base dir");
        let logf = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&log)
            .expect("log file");
        let (before, after): (Vec<&str>, Vec<&str>) = match extra.iter().position(|a| *a == "--") {
            Some(i) => (extra[..i].to_vec(), extra[i + 1..].to_vec()),
            None => (Vec::new(), extra.to_vec()),
        };
        let mut args: Vec<String> = vec!["-g".into()];
        args.extend(before.iter().map(|s| s.to_string()));
        args.extend([
            "-l".into(),
            format!("unix:{}", sock.display()),
            "-b".into(),
            base.display().to_string(),
            "-B".into(),
            "--store".into(),
            store.display().to_string(),
        ]);
        args.extend(after.iter().map(|s| s.to_string()));
        let child = Command::new(RINGLET)
            .envs(env.iter().copied())
            .args(&args)
            .stdin(Stdio::null())
            .stdout(logf.try_clone().expect("log"))
            .stderr(logf)
            .spawn()
            .expect("start ringlet serve");
        let mut proc = Proc {
            child,
            name: "ringlet serve".into(),
            done: None,
        };
        wait_for_socket(&sock, &mut proc, &log);
        Ringlet {
            proc,
            sock,
            base,
            store,
            log,
        }
    }

    pub fn addr(&self) -> String {
        format!("unix:{}", self.sock.display())
    }

    pub fn log_text(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }
}

/// The real rrdcached 1.7.2 in the foreground on `dir/c.sock`, base `dir/dc` (paths as long
/// as ringlet's, so that messages rrdtool truncates are cut at the same place).
pub struct Rrdcached {
    pub proc: Proc,
    pub sock: PathBuf,
    pub base: PathBuf,
}

impl Rrdcached {
    pub fn start(dir: &Path) -> Rrdcached {
        Rrdcached::start_with(dir, &[])
    }

    /// With extra options before the listening socket (e.g. `-P` applies to it).
    pub fn start_with(dir: &Path, extra: &[&str]) -> Rrdcached {
        let sock = dir.join("c.sock");
        let base = dir.join("dc");
        let journal = dir.join("j");
        let log = dir.join("rrdcached.log");
        std::fs::create_dir_all(&base).expect("base dir");
        std::fs::create_dir_all(&journal).expect("journal dir");
        let logf = std::fs::File::create(&log).expect("log file");
        let child = Command::new("rrdcached")
            .arg("-g")
            .args(extra)
            .arg("-l")
            .arg(format!("unix:{}", sock.display()))
            .arg("-b")
            .arg(&base)
            .arg("-B")
            .arg("-p")
            .arg(dir.join("c.pid"))
            .arg("-j")
            .arg(&journal)
            .stdin(Stdio::null())
            .stdout(logf.try_clone().expect("log"))
            .stderr(logf)
            .spawn()
            .expect("start rrdcached");
        let mut proc = Proc {
            child,
            name: "rrdcached".into(),
            done: None,
        };
        wait_for_socket(&sock, &mut proc, &log);
        Rrdcached { proc, sock, base }
    }

    pub fn addr(&self) -> String {
        format!("unix:{}", self.sock.display())
    }
}

/// stdout, stderr and exit code of a process.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Out {
    pub stdout: String,
    pub stderr: String,
    pub code: i32,
}

/// Run `rrdtool` in `cwd` with TZ=UTC, LC_ALL=C.
pub fn rrdtool(cwd: &Path, args: &[String]) -> Out {
    rrdtool_env(cwd, args, None)
}

/// Run `rrdtool` in `cwd` with TZ=UTC, LC_ALL=C and RRDCACHED_ADDRESS=`daemon` if given.
pub fn rrdtool_env(cwd: &Path, args: &[String], daemon: Option<&str>) -> Out {
    let mut c = Command::new("rrdtool");
    c.args(args)
        .current_dir(cwd)
        .env("TZ", "UTC")
        .env("LC_ALL", "C")
        .env_remove("RRDCACHED_ADDRESS")
        .env_remove("RRDCACHED_STRIPPATH")
        .stdin(Stdio::null());
    if let Some(a) = daemon {
        c.env("RRDCACHED_ADDRESS", a);
    }
    let o = c.output().expect("run rrdtool");
    Out {
        stdout: String::from_utf8_lossy(&o.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&o.stderr).into_owned(),
        code: o.status.code().unwrap_or(-1),
    }
}

/// The tests' generator of a seed (SplitMix64, the seed mixed with the golden ratio first).
pub fn rng(seed: u64) -> testkit::SplitMix {
    testkit::SplitMix::new(seed ^ 0x9e37_79b9_7f4a_7c15)
}

/// `ringlet serve` given `listener` as systemd gives it (descriptor 3, LISTEN_FDS=1,
/// LISTEN_PID its own pid) and the options of [`Ringlet::start`] besides.
pub fn serve_on_passed_socket(
    dir: &Path,
    listener: &std::os::unix::net::UnixListener,
    log: &Path,
) -> Proc {
    use std::os::fd::AsRawFd;
    use std::os::unix::process::CommandExt;
    let fd = listener.as_raw_fd();
    let logf = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(log)
        .expect("log");
    let mut cmd = Command::new("/bin/sh");
    // $$ is the shell's pid, which exec keeps: the daemon's LISTEN_PID.
    cmd.args([
        "-c",
        "LISTEN_PID=$$ LISTEN_FDS=1 exec \"$0\" \"$@\"",
        RINGLET,
        "-g",
    ])
    .args(["-l", &format!("unix:{}", dir.join("r.sock").display())])
    .args(["-b", &dir.join("db").display().to_string(), "-B"])
    .args(["--store", &dir.join("store").display().to_string()])
    .args(["-w", "3600"])
    .stdin(Stdio::null())
    .stdout(logf.try_clone().expect("log"))
    .stderr(logf);
    // SAFETY: dup2 and fcntl only, between fork and exec.
    unsafe {
        cmd.pre_exec(move || {
            if fd == 3 {
                libc::fcntl(3, libc::F_SETFD, 0);
            } else if libc::dup2(fd, 3) < 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    Proc::adopt(cmd.spawn().expect("start ringlet serve"), "ringlet serve")
}
