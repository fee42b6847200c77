//! What the daemon tests share: temporary directories, starting `ringlet serve` and the real
//! rrdcached as child processes (stopped by pid when dropped), a raw protocol client, an HTTP
//! client and free loopback ports, running `rrdtool`, and a seeded random generator.
#![allow(dead_code)]

use std::io::{Read, Write};
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

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

/// Connect to a unix socket with read/write timeouts.
pub fn connect(sock: &Path) -> UnixStream {
    let s = UnixStream::connect(sock).expect("connect");
    s.set_read_timeout(Some(Duration::from_secs(30)))
        .expect("timeout");
    s.set_write_timeout(Some(Duration::from_secs(30)))
        .expect("timeout");
    s
}

/// Send `input` on a new connection, half-close, and read everything until the server closes.
pub fn converse(sock: &Path, input: &[u8]) -> Vec<u8> {
    let mut s = connect(sock);
    s.write_all(input).expect("send");
    let _ = s.shutdown(std::net::Shutdown::Write);
    let mut out = Vec::new();
    let _ = s.read_to_end(&mut out);
    out
}

/// Read one reply (status line and its following lines) from a stream.
pub fn read_reply(s: &mut impl Read) -> String {
    let line = read_line(s);
    let n: i64 = line
        .split(' ')
        .next()
        .and_then(|t| t.parse().ok())
        .unwrap_or_else(|| panic!("bad status line {line:?}"));
    let mut out = line;
    for _ in 0..n.max(0) {
        out.push_str(&read_line(s));
    }
    out
}

/// One line, newline included; empty at EOF.
pub fn read_line(s: &mut impl Read) -> String {
    let mut v = Vec::new();
    let mut b = [0u8; 1];
    loop {
        match s.read(&mut b) {
            Ok(0) => break,
            Ok(_) => {
                v.push(b[0]);
                if b[0] == b'\n' {
                    break;
                }
            }
            Err(e) => panic!("read failed after {:?}: {e}", String::from_utf8_lossy(&v)),
        }
    }
    String::from_utf8_lossy(&v).into_owned()
}

/// Send one request line, read its reply.
pub fn request(s: &mut UnixStream, line: &str) -> String {
    s.write_all(format!("{line}\n").as_bytes()).expect("send");
    read_reply(s)
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

/// SplitMix64: small, seeded, reproducible.
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng(seed ^ 0x9e37_79b9_7f4a_7c15)
    }
    pub fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
    /// Uniform in 0..n.
    pub fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }
    pub fn chance(&mut self, percent: u64) -> bool {
        self.below(100) < percent
    }
    pub fn pick<'a, T>(&mut self, xs: &'a [T]) -> &'a T {
        &xs[self.below(xs.len() as u64) as usize]
    }
}

/// FETCH the whole of a one-DS series through a raw connection; (time, value text) pairs.
pub fn fetch_rows(sock: &Path, file: &str, cf: &str, start: i64, end: i64) -> Vec<(i64, String)> {
    let mut s = connect(sock);
    let r = request(&mut s, &format!("FETCH {file} {cf} {start} {end}"));
    assert!(r.contains(" Success\n"), "FETCH {file} failed: {r}");
    r.lines()
        .filter_map(|l| {
            let (t, v) = l.split_once(": ")?;
            let t: i64 = t.trim().parse().ok()?;
            Some((t, v.to_string()))
        })
        .collect()
}

/// A TCP port free on the loopback now.
/// A loopback port free now, below the kernel's range of ephemeral ports (32768 and up):
/// a port from that range, let go until the daemon binds it, can be taken meanwhile by any
/// outgoing connection (other tests run beside this one).
pub fn free_port() -> u16 {
    use std::sync::atomic::{AtomicU32, Ordering};
    static NEXT: AtomicU32 = AtomicU32::new(0);
    let seed = std::process::id().wrapping_mul(2_654_435_761);
    for _ in 0..10_000 {
        let n = NEXT.fetch_add(7919, Ordering::Relaxed).wrapping_add(seed);
        let port = 20_000 + (n % 12_000) as u16;
        if std::net::TcpListener::bind(("127.0.0.1", port)).is_ok() {
            return port;
        }
    }
    panic!("no free loopback port between 20000 and 32000");
}

/// (status, head, body) of an HTTP/1.0 request on the loopback; a non-empty `body` is sent
/// as a form.
pub fn http_request(port: u16, method: &str, path: &str, body: &str) -> (u16, String, String) {
    let mut s = std::net::TcpStream::connect(("127.0.0.1", port)).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
    let head = if body.is_empty() {
        format!("{method} {path} HTTP/1.0\r\nHost: x\r\n\r\n")
    } else {
        format!(
            "{method} {path} HTTP/1.0\r\nHost: x\r\nContent-Type: application/x-www-form-urlencoded\r\nContent-Length: {}\r\n\r\n{body}",
            body.len()
        )
    };
    s.write_all(head.as_bytes()).unwrap();
    let mut out = Vec::new();
    s.read_to_end(&mut out).unwrap();
    let text = String::from_utf8_lossy(&out).to_string();
    let status = text
        .split(' ')
        .nth(1)
        .and_then(|c| c.parse().ok())
        .unwrap_or(0);
    let (head, body) = text.split_once("\r\n\r\n").unwrap_or((&text, ""));
    (status, head.to_string(), body.to_string())
}

/// The body of a GET that must answer 200.
pub fn http_get(port: u16, path: &str) -> String {
    let (st, _, b) = http_request(port, "GET", path, "");
    assert_eq!(st, 200, "{path}: {b}");
    b
}
