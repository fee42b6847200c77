//! rrdcached's sockets handed to ringlet with no moment a client is refused
//! (`ringlet migrate rrdcached`).
//!
//! A unix socket's path is taken over before rrdcached stops: a new socket (systemd's, from
//! the socket unit the migration writes, or one bound here where systemd does not run) is
//! put at the path (bound at a temporary name beside it and renamed over it: a client's
//! connect reaches either daemon, never nothing). rrdcached serves the connections it has
//! until it exits; new ones wait in the new socket's backlog until ringlet, started with
//! that socket (systemd's `LISTEN_FDS`), accepts them. rrdcached removes its socket's path
//! as it exits, which is now the new socket's: a second name of the new socket, made
//! beforehand, puts it back at once (a watcher looks every millisecond).
//!
//! A [`Prober`] connects to every address every 10 ms from before the hand-over until
//! ringlet answers, and another sends PING and times the answer: the outage reported is what
//! a client saw, not a timer around the steps.

use server::config::Addr;
use std::os::unix::net::UnixListener;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering::SeqCst};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// What the probes saw of one address.
#[derive(Default, Clone, Debug)]
pub struct Seen {
    /// Connection attempts, and those refused (or that found no socket).
    pub tries: u64,
    pub refused: u64,
    /// The longest run of refused attempts: from its first to the next success.
    pub longest_refusal: Duration,
    /// The longest a PING waited for its answer (queued while no daemon accepted).
    pub longest_wait: Duration,
    /// PINGs that got no answer at all (the connection closed on them).
    pub unanswered: u64,
}

/// Probes of a set of addresses, each in its own threads until [`Prober::finish`].
pub struct Prober {
    stop: Arc<AtomicBool>,
    seen: Vec<(Addr, Arc<Mutex<Seen>>)>,
    threads: Vec<std::thread::JoinHandle<()>>,
}

fn connect(a: &Addr, timeout: Duration) -> std::io::Result<Box<dyn cli::client::Stream>> {
    match a {
        Addr::Unix(_) => cli::client::connect_stream(a, Some(timeout)),
        Addr::Tcp(h, p) => {
            use std::net::ToSocketAddrs;
            let host = if h.is_empty() { "127.0.0.1" } else { h };
            let sa = (host.trim_matches(|c| c == '[' || c == ']'), *p)
                .to_socket_addrs()?
                .next()
                .ok_or_else(|| std::io::Error::other("no address"))?;
            let s = std::net::TcpStream::connect_timeout(&sa, Duration::from_secs(1))?;
            s.set_read_timeout(Some(timeout))?;
            Ok(Box::new(s))
        }
    }
}

impl Prober {
    pub fn start(addrs: &[Addr]) -> Prober {
        let stop = Arc::new(AtomicBool::new(false));
        let mut p = Prober {
            stop: stop.clone(),
            seen: Vec::new(),
            threads: Vec::new(),
        };
        for a in addrs {
            let seen = Arc::new(Mutex::new(Seen::default()));
            p.seen.push((a.clone(), seen.clone()));
            // Connects every 10 ms (closed at once: a refused one is an outage).
            let (a1, s1, st1) = (a.clone(), seen.clone(), stop.clone());
            p.threads.push(std::thread::spawn(move || {
                let mut refused_since: Option<Instant> = None;
                while !st1.load(SeqCst) {
                    let ok = connect(&a1, Duration::from_secs(1)).is_ok();
                    let now = Instant::now();
                    let mut s = s1.lock().unwrap();
                    s.tries += 1;
                    if ok {
                        if let Some(t) = refused_since.take() {
                            s.longest_refusal = s.longest_refusal.max(now - t);
                        }
                    } else {
                        s.refused += 1;
                        refused_since.get_or_insert(now);
                    }
                    drop(s);
                    std::thread::sleep(Duration::from_millis(10));
                }
                if let Some(t) = refused_since {
                    let mut s = s1.lock().unwrap();
                    s.longest_refusal = s.longest_refusal.max(t.elapsed());
                }
            }));
            // PING, the answer timed.
            let (a2, s2, st2) = (a.clone(), seen, stop.clone());
            p.threads.push(std::thread::spawn(move || {
                use std::io::{Read, Write};
                while !st2.load(SeqCst) {
                    let t = Instant::now();
                    if let Ok(mut c) = connect(&a2, Duration::from_secs(300)) {
                        let mut buf = [0u8; 64];
                        let answered =
                            c.write_all(b"PING\n").is_ok() && c.read(&mut buf).is_ok_and(|n| n > 0);
                        let mut s = s2.lock().unwrap();
                        if answered {
                            s.longest_wait = s.longest_wait.max(t.elapsed());
                        } else {
                            s.unanswered += 1;
                        }
                    }
                    std::thread::sleep(Duration::from_millis(10));
                }
            }));
        }
        p
    }

    /// Stop the probes (after a last round); what each address saw.
    pub fn finish(self) -> Vec<(Addr, Seen)> {
        std::thread::sleep(Duration::from_millis(50));
        self.stop.store(true, SeqCst);
        for t in self.threads {
            let _ = t.join();
        }
        self.seen
            .into_iter()
            .map(|(a, s)| (a, s.lock().unwrap().clone()))
            .collect()
    }
}

/// The report of [`Prober::finish`]: one line an address.
pub fn report(seen: &[(Addr, Seen)]) -> String {
    seen.iter()
        .map(|(a, s)| {
            format!(
                "{a}: {} of {} connections refused{}; answers waited at most {:.2} s{}",
                s.refused,
                s.tries,
                if s.refused > 0 {
                    format!(" (for {:.3} s at most)", s.longest_refusal.as_secs_f64())
                } else {
                    String::new()
                },
                s.longest_wait.as_secs_f64(),
                if s.unanswered > 0 {
                    format!(", {} PINGs closed unanswered", s.unanswered)
                } else {
                    String::new()
                }
            )
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// The socket now at `path` held there while rrdcached exits: the path bound onto itself
/// (a mount point cannot be removed: rrdcached's unlink at its exit fails, and no client
/// finds the path empty), and a second name (`.NAME.ringlet-keep` beside it) that puts it
/// back at once should the path go all the same (where mounting is not allowed).
pub struct Kept {
    pub path: PathBuf,
    keep: PathBuf,
    pinned: bool,
}

/// Bind `path` onto itself; whether it could.
fn pin(path: &Path) -> bool {
    use std::os::unix::ffi::OsStrExt;
    let Ok(c) = std::ffi::CString::new(path.as_os_str().as_bytes()) else {
        return false;
    };
    // SAFETY: mount(2) with two valid C strings, no file system type and no data.
    unsafe {
        libc::mount(
            c.as_ptr(),
            c.as_ptr(),
            std::ptr::null(),
            libc::MS_BIND,
            std::ptr::null(),
        ) == 0
    }
}

/// Undo [`pin`] (the socket stays at the path: the same one is beneath).
fn unpin(path: &Path) {
    use std::os::unix::ffi::OsStrExt;
    if let Ok(c) = std::ffi::CString::new(path.as_os_str().as_bytes()) {
        // SAFETY: umount2(2) with a valid C string.
        unsafe {
            libc::umount2(c.as_ptr(), libc::MNT_DETACH);
        }
    }
}

fn beside(path: &Path, tag: &str) -> Result<PathBuf, String> {
    let name = path
        .file_name()
        .ok_or(format!("{}: not a socket path", path.display()))?;
    let dir = path.parent().unwrap_or(Path::new("/"));
    Ok(dir.join(format!(".{}.ringlet-{tag}", name.to_string_lossy())))
}

impl Kept {
    /// A second name for the socket at `path`.
    pub fn of(path: &Path) -> Result<Kept, String> {
        let keep = beside(path, "keep")?;
        let _ = std::fs::remove_file(&keep);
        std::fs::hard_link(path, &keep)
            .map_err(|e| format!("cannot link {} to {}: {e}", path.display(), keep.display()))?;
        let pinned = pin(path);
        Ok(Kept {
            path: path.to_path_buf(),
            keep,
            pinned,
        })
    }

    /// Whether the path is held by a mount (else only put back by the watch).
    pub fn pinned(&self) -> bool {
        self.pinned
    }

    /// Put the socket back at its path if it is gone; whether it had to.
    pub fn restore(&self) -> bool {
        if std::fs::symlink_metadata(&self.path).is_ok() {
            return false;
        }
        std::fs::hard_link(&self.keep, &self.path).is_ok()
    }
}

impl Drop for Kept {
    fn drop(&mut self) {
        if self.pinned {
            unpin(&self.path);
        }
        self.restore();
        let _ = std::fs::remove_file(&self.keep);
    }
}

/// Watch `kept` every millisecond until dropped, putting each path back as soon as it is
/// gone. How many times it had to is [`Watch::finish`]'s.
pub struct Watch {
    stop: Arc<AtomicBool>,
    thread: std::thread::JoinHandle<(Vec<Kept>, u64)>,
}

impl Watch {
    pub fn start(kept: Vec<Kept>) -> Watch {
        let stop = Arc::new(AtomicBool::new(false));
        let st = stop.clone();
        let thread = std::thread::spawn(move || {
            let mut put_back = 0;
            loop {
                let last = st.load(SeqCst);
                put_back += kept.iter().filter(|k| k.restore()).count() as u64;
                if last {
                    return (kept, put_back);
                }
                std::thread::sleep(Duration::from_millis(1));
            }
        });
        Watch { stop, thread }
    }

    /// Stop watching (after a last look); the second names are removed.
    pub fn finish(self) -> u64 {
        self.stop.store(true, SeqCst);
        self.thread.join().map(|(_, n)| n).unwrap_or(0)
    }
}

/// A socket bound here at `path` in place of the one there (rrdcached's): bound at a
/// temporary name beside it with `mode` and `group`, then renamed over it.
pub fn take_path(path: &Path, mode: u32, group: Option<&str>) -> Result<UnixListener, String> {
    use std::os::unix::fs::PermissionsExt;
    let tmp = beside(path, &format!("new-{}", std::process::id()))?;
    let _ = std::fs::remove_file(&tmp);
    let l =
        UnixListener::bind(&tmp).map_err(|e| format!("cannot listen on {}: {e}", tmp.display()))?;
    let set = || -> Result<(), String> {
        std::fs::set_permissions(&tmp, std::fs::Permissions::from_mode(mode))
            .map_err(|e| format!("cannot chmod {}: {e}", tmp.display()))?;
        if let Some(g) = group {
            server::sys::chgrp(&tmp, g)?;
        }
        std::fs::rename(&tmp, path)
            .map_err(|e| format!("cannot rename {} to {}: {e}", tmp.display(), path.display()))
    };
    if let Err(e) = set() {
        let _ = std::fs::remove_file(&tmp);
        return Err(e);
    }
    Ok(l)
}

/// The mode and group of the socket file at `path` (rrdcached's, as clients reach it).
pub fn access_of(path: &Path) -> Option<(u32, String)> {
    use std::os::unix::fs::MetadataExt;
    let m = std::fs::metadata(path).ok()?;
    Some((m.mode() & 0o7777, server::sys::group_name(m.gid())))
}

/// `ringlet serve --defaults FILE` in the background, given `sockets` as systemd gives them
/// (descriptors 3 on, `LISTEN_FDS`, `LISTEN_PID`): it returns once the daemon serves.
pub fn serve_with(
    exe: &Path,
    defaults: &Path,
    sockets: &[(UnixListener, PathBuf)],
) -> Result<(), String> {
    use std::os::fd::AsRawFd;
    use std::os::unix::process::CommandExt;
    // Copies above every descriptor the child's 3.. could collide with.
    let high: Vec<std::os::fd::OwnedFd> = sockets
        .iter()
        .map(|(s, _)| {
            // SAFETY: F_DUPFD_CLOEXEC on a descriptor we own gives a new one we own.
            let fd = unsafe { libc::fcntl(s.as_raw_fd(), libc::F_DUPFD_CLOEXEC, 100) };
            if fd < 0 {
                return Err(format!("dup: {}", std::io::Error::last_os_error()));
            }
            // SAFETY: fd was just made and is owned by nothing else.
            Ok(unsafe { std::os::fd::FromRawFd::from_raw_fd(fd) })
        })
        .collect::<Result<_, String>>()?;
    let raw: Vec<i32> = high.iter().map(|f| f.as_raw_fd()).collect();
    let mut cmd = std::process::Command::new("/bin/sh");
    // $$ is the shell's pid, which exec keeps: the daemon's LISTEN_PID.
    // Each socket named by its path (bound beside it and renamed, it reports the other).
    let names: Vec<String> = sockets
        .iter()
        .map(|(_, p)| p.display().to_string().replace(':', "_"))
        .collect();
    cmd.arg("-c")
        .arg(format!(
            "LISTEN_PID=$$ LISTEN_FDS={} exec \"$0\" serve --defaults \"$1\"",
            raw.len()
        ))
        .env("LISTEN_FDNAMES", names.join(":"))
        .arg(exe)
        .arg(defaults)
        .stdin(std::process::Stdio::null());
    // SAFETY: dup2 only, between fork and exec.
    unsafe {
        cmd.pre_exec(move || {
            for (i, &fd) in raw.iter().enumerate() {
                if libc::dup2(fd, 3 + i as i32) < 0 {
                    return Err(std::io::Error::last_os_error());
                }
            }
            Ok(())
        });
    }
    // Without -g the daemon goes to the background once its sockets listen.
    let st = cmd
        .status()
        .map_err(|e| format!("{}: {e}", exe.display()))?;
    drop(high);
    if st.success() {
        Ok(())
    } else {
        Err(format!(
            "ringlet serve --defaults {} failed ({st})",
            defaults.display()
        ))
    }
}

/// The socket unit that holds rrdcached's unix sockets for ringlet.service.
pub const UNIT: &str = "ringlet-rrdcached.socket";
pub const UNIT_DIR: &str = "/etc/systemd/system";

/// The text of [`UNIT`] for unix sockets `paths`, made with `mode` and `group` (the
/// daemon sets each one's own as it starts, from the options file).
pub fn unit_text(paths: &[PathBuf], mode: u32, group: &str, from: &str) -> String {
    let mut s = format!(
        "# Written by `ringlet migrate rrdcached` (from {from}): rrdcached's sockets, held by\n\
         # systemd for ringlet.service, so that clients find them from early boot and a\n\
         # restart refuses none. Removed by `apt purge ringlet`.\n\
         [Unit]\nDescription=rrdcached's sockets, served by ringlet\n\
         Documentation=man:ringlet(1)\n\n[Socket]\n"
    );
    for p in paths {
        // Its directory resolved: systemd takes /var/run/x as /run/x, with a warning.
        let shown = p
            .parent()
            .and_then(|d| std::fs::canonicalize(d).ok())
            .zip(p.file_name())
            .map(|(d, n)| d.join(n))
            .unwrap_or_else(|| p.clone());
        s.push_str(&format!("ListenStream={}\n", shown.display()));
    }
    s.push_str(&format!(
        "SocketUser=root\nSocketGroup={group}\nSocketMode={mode:04o}\nBacklog=4096\n\
         Service=ringlet.service\n\n[Install]\nWantedBy=sockets.target\n"
    ));
    s
}

/// Move the socket at `path` aside (to `.NAME.ringlet-old` beside it): the one it names
/// keeps its connections; new ones find the next socket put at `path`. For a systemd that
/// will not bind over a path that is there. The name aside, to remove once its daemon is
/// gone.
pub fn move_aside(path: &Path) -> Result<PathBuf, String> {
    let old = beside(path, "old")?;
    std::fs::rename(path, &old)
        .map_err(|e| format!("cannot move {} aside: {e}", path.display()))?;
    Ok(old)
}
