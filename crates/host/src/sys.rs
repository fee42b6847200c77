//! The few POSIX calls std does not offer: fork into the background, signals by sigwait,
//! pid files, socket group, dropping privileges, giving freed memory back.

use std::ffi::CString;
use std::path::Path;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Signal {
    Term,
    Int,
    Usr1,
    Usr2,
    Hup,
}

const SIGNALS: [(libc::c_int, Signal); 5] = [
    (libc::SIGTERM, Signal::Term),
    (libc::SIGINT, Signal::Int),
    (libc::SIGUSR1, Signal::Usr1),
    (libc::SIGUSR2, Signal::Usr2),
    (libc::SIGHUP, Signal::Hup),
];

fn sigset() -> libc::sigset_t {
    // SAFETY: sigemptyset/sigaddset initialise and fill a set we own.
    unsafe {
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        for (s, _) in SIGNALS {
            libc::sigaddset(&mut set, s);
        }
        set
    }
}

/// Block the handled signals in this thread and every thread it starts afterwards.
pub fn block_signals() {
    let set = sigset();
    // SAFETY: set is a valid, initialised signal set.
    unsafe {
        libc::pthread_sigmask(libc::SIG_BLOCK, &set, std::ptr::null_mut());
        libc::signal(libc::SIGPIPE, libc::SIG_IGN);
    }
}

/// Wait for one of the handled signals.
pub fn wait_signal() -> Signal {
    let set = sigset();
    loop {
        let mut sig: libc::c_int = 0;
        // SAFETY: set is valid; sig is written by sigwait.
        let rc = unsafe { libc::sigwait(&set, &mut sig) };
        if rc == 0 {
            if let Some((_, s)) = SIGNALS.iter().find(|(n, _)| *n == sig) {
                return *s;
            }
        }
    }
}

/// The child's end of the start-up handshake after [`daemonize`].
pub struct Ready {
    fd: libc::c_int,
}

impl Ready {
    pub fn ok(self) {
        self.send(b"ok");
        redirect_stdio();
    }
    pub fn fail(self, msg: &str) {
        self.send(msg.as_bytes());
    }
    fn send(&self, b: &[u8]) {
        // SAFETY: fd is the write end of our pipe; b is a valid buffer.
        unsafe {
            libc::write(self.fd, b.as_ptr().cast(), b.len());
            libc::close(self.fd);
        }
    }
}

fn redirect_stdio() {
    let null = CString::new("/dev/null").expect("no NUL");
    // SAFETY: plain open/dup2/close on descriptors we own.
    unsafe {
        let fd = libc::open(null.as_ptr(), libc::O_RDWR);
        if fd >= 0 {
            libc::dup2(fd, 0);
            libc::dup2(fd, 1);
            libc::dup2(fd, 2);
            if fd > 2 {
                libc::close(fd);
            }
        }
    }
}

/// Fork into the background. The parent waits until the child reports that it is serving
/// (or why it failed), prints any error, and exits; the child returns a [`Ready`] to report.
/// Must be called before any thread is started.
pub fn daemonize() -> Result<Ready, String> {
    let mut fds = [0 as libc::c_int; 2];
    // SAFETY: fds has room for the two descriptors pipe writes.
    if unsafe { libc::pipe(fds.as_mut_ptr()) } != 0 {
        return Err(format!("pipe: {}", std::io::Error::last_os_error()));
    }
    // SAFETY: no other threads exist yet (documented precondition).
    let pid = unsafe { libc::fork() };
    if pid < 0 {
        return Err(format!("fork: {}", std::io::Error::last_os_error()));
    }
    if pid > 0 {
        // SAFETY: reading from our pipe into a local buffer.
        unsafe {
            libc::close(fds[1]);
            let mut buf = [0u8; 4096];
            let mut got = Vec::new();
            loop {
                let n = libc::read(fds[0], buf.as_mut_ptr().cast(), buf.len());
                if n <= 0 {
                    break;
                }
                got.extend_from_slice(&buf[..n as usize]);
            }
            if got == b"ok" {
                libc::_exit(0);
            }
            eprintln!("ringlet serve: {}", String::from_utf8_lossy(&got));
            libc::_exit(1);
        }
    }
    // SAFETY: setsid in the child; closing the read end we do not use.
    unsafe {
        libc::close(fds[0]);
        libc::setsid();
    }
    Ok(Ready { fd: fds[1] })
}

/// systemd's notification socket (`$NOTIFY_SOCKET`), connected at start while the daemon
/// may still reach it (before `-U` drops its privileges): `Err` why not.
static NOTIFY: std::sync::OnceLock<Result<std::os::unix::net::UnixDatagram, String>> =
    std::sync::OnceLock::new();

/// Connect to systemd's notification socket, if the daemon runs under systemd (a
/// `Type=notify` unit sets `$NOTIFY_SOCKET`): call before dropping privileges.
pub fn notify_connect() {
    use std::os::linux::net::SocketAddrExt;
    let Some(path) = std::env::var_os("NOTIFY_SOCKET") else {
        return;
    };
    NOTIFY.get_or_init(|| {
        let bytes = path.as_encoded_bytes();
        let addr = match bytes.strip_prefix(b"@") {
            Some(name) => std::os::unix::net::SocketAddr::from_abstract_name(name),
            None => std::os::unix::net::SocketAddr::from_pathname(&path),
        };
        addr.and_then(|a| {
            let s = std::os::unix::net::UnixDatagram::unbound()?;
            s.connect_addr(&a)?;
            Ok(s)
        })
        .map_err(|e| e.to_string())
    });
}

/// Tell systemd how the daemon stands: `READY=1` once its sockets listen, `STOPPING=1` when
/// it begins to stop. Nothing without systemd. The protocol is a datagram of `KEY=VALUE`
/// lines to that unix socket (`@` at its start: an abstract name), as sd_notify(3)
/// describes; no library is needed for it.
pub fn notify(state: &str) {
    notify_connect();
    let sent = match NOTIFY.get() {
        None => return,
        Some(Ok(s)) => s
            .send(state.as_bytes())
            .map(|_| ())
            .map_err(|e| e.to_string()),
        Some(Err(e)) => Err(e.clone()),
    };
    if let Err(e) = sent {
        crate::log::line(&format!("cannot tell systemd {state:?}: {e}"));
    }
}

/// Refuse to start when the pid file names a live process; remove a stale one.
pub fn check_pid_file(p: &Path) -> Result<(), String> {
    let Ok(s) = std::fs::read_to_string(p) else {
        return Ok(());
    };
    if let Ok(pid) = s.trim().parse::<libc::pid_t>() {
        // SAFETY: kill with signal 0 only checks for existence.
        if pid > 0 && unsafe { libc::kill(pid, 0) } == 0 && !is_zombie(pid) {
            return Err(format!(
                "pid file {} names running process {pid}",
                p.display()
            ));
        }
    }
    let _ = std::fs::remove_file(p);
    Ok(())
}

/// A process that has exited but was not reaped (its state in /proc is Z or X) is not
/// running, though kill(pid, 0) still succeeds (containers whose init does not reap).
pub fn is_zombie(pid: libc::pid_t) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .ok()
        .and_then(|st| {
            st.rsplit_once(')')
                .and_then(|(_, rest)| rest.trim_start().chars().next())
        })
        .is_some_and(|state| state == 'Z' || state == 'X')
}

fn gid_of(group: &str) -> Result<libc::gid_t, String> {
    if let Ok(n) = group.parse() {
        return Ok(n);
    }
    let c = CString::new(group).map_err(|_| format!("invalid group '{group}'"))?;
    // SAFETY: getgrnam returns a pointer into static storage or null.
    let g = unsafe { libc::getgrnam(c.as_ptr()) };
    if g.is_null() {
        return Err(format!("unknown group '{group}'"));
    }
    // SAFETY: g is non-null.
    Ok(unsafe { (*g).gr_gid })
}

/// `-s`: give a socket file to a group.
pub fn chgrp(path: &Path, group: &str) -> Result<(), String> {
    let gid = gid_of(group)?;
    std::os::unix::fs::chown(path, None, Some(gid))
        .map_err(|e| format!("chgrp {}: {e}", path.display()))
}

/// Who the daemon becomes with `-U`/`-G`: user id, group id, and the user's name for its
/// supplementary groups.
#[derive(Debug, Clone)]
pub struct Ids {
    pub uid: Option<libc::uid_t>,
    pub gid: Option<libc::gid_t>,
    user: Option<CString>,
}

/// Resolve `-G group` and `-U user` (names or numbers). A user without `-G` takes the user's
/// primary group, as login does.
pub fn ids(group: Option<&str>, user: Option<&str>) -> Result<Option<Ids>, String> {
    if group.is_none() && user.is_none() {
        return Ok(None);
    }
    let mut out = Ids {
        uid: None,
        gid: group.map(gid_of).transpose()?,
        user: None,
    };
    if let Some(u) = user {
        let c = CString::new(u).map_err(|_| format!("invalid user '{u}'"))?;
        // SAFETY: getpwnam/getpwuid return static storage or null; read at once.
        let p = match u.parse::<libc::uid_t>() {
            Ok(n) => unsafe { libc::getpwuid(n) },
            Err(_) => unsafe { libc::getpwnam(c.as_ptr()) },
        };
        if p.is_null() {
            match u.parse::<libc::uid_t>() {
                // A bare number with no passwd entry: that uid, no groups of its own.
                Ok(n) => out.uid = Some(n),
                Err(_) => return Err(format!("unknown user '{u}'")),
            }
        } else {
            // SAFETY: p is non-null; its strings are C strings.
            unsafe {
                out.uid = Some((*p).pw_uid);
                out.gid = out.gid.or(Some((*p).pw_gid));
                out.user = Some(std::ffi::CStr::from_ptr((*p).pw_name).to_owned());
            }
        }
    }
    Ok(Some(out))
}

/// Give the store directory (and what is in it, one level down) to the daemon's user before
/// it drops root, so that it can write checkpoints, segments and imported files.
pub fn give(dir: &Path, ids: &Ids) -> Result<(), String> {
    let own = |p: &Path| {
        std::os::unix::fs::chown(p, ids.uid, ids.gid)
            .map_err(|e| format!("chown {}: {e}", p.display()))
    };
    own(dir)?;
    let mut todo = vec![dir.to_path_buf()];
    while let Some(d) = todo.pop() {
        let rd = std::fs::read_dir(&d).map_err(|e| format!("{}: {e}", d.display()))?;
        for e in rd.flatten() {
            let p = e.path();
            own(&p)?;
            if e.file_type().is_ok_and(|t| t.is_dir()) {
                todo.push(p);
            }
        }
    }
    Ok(())
}

/// `-G`, `-U`: switch the supplementary groups, the group, then the user, for good.
pub fn drop_privileges(ids: &Ids) -> Result<(), String> {
    if let Some(gid) = ids.gid {
        // The supplementary groups are root's until replaced: the user's own (initgroups),
        // else the one group.
        // SAFETY: valid C string and gid; setgroups with a one-element array.
        let r = match &ids.user {
            Some(u) => unsafe { libc::initgroups(u.as_ptr(), gid) },
            None => unsafe { libc::setgroups(1, &gid) },
        };
        if r != 0 {
            return Err(format!("setgroups: {}", std::io::Error::last_os_error()));
        }
        // SAFETY: setgid with a valid gid.
        if unsafe { libc::setgid(gid) } != 0 {
            return Err(format!("setgid {gid}: {}", std::io::Error::last_os_error()));
        }
    }
    if let Some(uid) = ids.uid {
        // SAFETY: setuid with a valid uid.
        if unsafe { libc::setuid(uid) } != 0 {
            return Err(format!("setuid {uid}: {}", std::io::Error::last_os_error()));
        }
        // SAFETY: getuid never fails.
        if uid != 0 && unsafe { libc::setuid(0) } == 0 {
            return Err("could not drop root: setuid(0) still works".into());
        }
    }
    Ok(())
}

/// Give the heap's free pages back to the kernel. A commit frees the queues and buffers it
/// drained all at once, in the middle of the heap, where the allocator keeps them: under
/// the Ganglia load that was 35 MB of 180 at 26,000 series, resident for nothing. The
/// `ringlet` binary allocates with jemalloc (its arenas are purged; it would return them
/// within seconds anyway); glibc's heap is trimmed for what C code allocates there.
pub fn release_free_memory() {
    // "arena.<MALLCTL_ARENAS_ALL>.purge": every arena's unused dirty pages, now.
    const PURGE_ALL: &[u8] = b"arena.4096.purge\0";
    // SAFETY: a NUL-terminated control name that takes and returns nothing.
    unsafe {
        tikv_jemalloc_sys::mallctl(
            PURGE_ALL.as_ptr().cast(),
            std::ptr::null_mut(),
            std::ptr::null_mut(),
            std::ptr::null_mut(),
            0,
        );
    }
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: malloc_trim only walks the allocator's own lists; any thread may call it.
    unsafe {
        libc::malloc_trim(0);
    }
}

/// Start jemalloc's background thread, which returns the pages freed in the heap to the
/// kernel within the decay times the `ringlet` binary sets (seconds), also while the daemon
/// is idle. Only the daemon wants one; called after the signals are blocked, so the thread
/// takes none of them.
pub fn start_allocator_thread() {
    const NAME: &[u8] = b"background_thread\0";
    let mut on = true;
    // SAFETY: a NUL-terminated control name that takes a bool, given by its address and size.
    unsafe {
        tikv_jemalloc_sys::mallctl(
            NAME.as_ptr().cast(),
            std::ptr::null_mut(),
            std::ptr::null_mut(),
            (&mut on as *mut bool).cast(),
            std::mem::size_of::<bool>(),
        );
    }
}

/// Make everything written on the file system that holds `dir` durable (`syncfs`): the
/// placeholders written since the last call, before a checkpoint that holds their series.
pub fn sync_file_system(dir: &Path) -> std::io::Result<()> {
    use std::os::fd::AsRawFd;
    let d = std::fs::File::open(dir)?;
    // SAFETY: syncfs takes a valid descriptor, owned by `d` for the call.
    if unsafe { libc::syncfs(d.as_raw_fd()) } == 0 {
        Ok(())
    } else {
        Err(std::io::Error::last_os_error())
    }
}

/// Detach the mount at `dir` (`umount2` with `MNT_DETACH`): a FUSE view left by a daemon that
/// died answers every access with ENOTCONN until it is.
pub fn detach_mount(dir: &Path) -> std::io::Result<()> {
    use std::os::unix::ffi::OsStrExt;
    let c = std::ffi::CString::new(dir.as_os_str().as_bytes())
        .map_err(|_| std::io::Error::from(std::io::ErrorKind::InvalidInput))?;
    // SAFETY: a valid NUL-terminated path.
    if unsafe { libc::umount2(c.as_ptr(), libc::MNT_DETACH) } == 0 {
        Ok(())
    } else {
        Err(std::io::Error::last_os_error())
    }
}

/// `statfs(2)` of `dir`, for its error only (a FUSE mount whose server died: ENOTCONN).
pub fn statfs(dir: &Path) -> std::io::Result<()> {
    use std::os::unix::ffi::OsStrExt;
    let c = std::ffi::CString::new(dir.as_os_str().as_bytes())
        .map_err(|_| std::io::Error::from(std::io::ErrorKind::InvalidInput))?;
    // SAFETY: a valid NUL-terminated path and a zeroed struct the call fills.
    let mut st: libc::statfs = unsafe { std::mem::zeroed() };
    if unsafe { libc::statfs(c.as_ptr(), &mut st) } == 0 {
        Ok(())
    } else {
        Err(std::io::Error::last_os_error())
    }
}

/// The process's effective user id.
pub fn euid() -> u32 {
    // SAFETY: geteuid cannot fail and touches no memory.
    unsafe { libc::geteuid() }
}

/// The process's effective group id.
pub fn egid() -> u32 {
    // SAFETY: getegid cannot fail and touches no memory.
    unsafe { libc::getegid() }
}

/// Whether `f` may hold data in `off..off + len` (SEEK_DATA: a hole or the file's end
/// reads as zeros without reading).
pub fn file_has_data(f: &std::fs::File, off: u64, len: u64) -> bool {
    use std::os::fd::AsRawFd;
    // SAFETY: lseek on a descriptor `f` owns; it changes only the offset, which positioned
    // reads do not use.
    let at = unsafe { libc::lseek(f.as_raw_fd(), off as libc::off_t, libc::SEEK_DATA) };
    if at < 0 {
        // ENXIO: no data past `off`; anything else: assume there is.
        return std::io::Error::last_os_error().raw_os_error() != Some(libc::ENXIO);
    }
    (at as u64) < off.saturating_add(len)
}

/// A listening socket systemd passed (socket activation), with what it is bound to.
#[derive(Debug)]
pub enum Inherited {
    /// A unix stream socket and the paths it answers at: the one it was bound to (as the
    /// kernel reports it), and its name in `LISTEN_FDNAMES` when that is a path (a socket
    /// bound beside its path and renamed onto it: `ringlet migrate`'s).
    Unix(
        std::os::unix::net::UnixListener,
        std::path::PathBuf,
        Option<std::path::PathBuf>,
    ),
    /// A TCP socket.
    Tcp(std::net::TcpListener),
    /// Anything else (a datagram socket, a FIFO): what it is, for the log.
    Other(i32, String),
}

/// The sockets systemd passed this process (sd_listen_fds(3)): `LISTEN_PID` must be this
/// process and `LISTEN_FDS` says how many, from descriptor 3 on. The variables are removed
/// (a child must not take them for its own) and the descriptors closed on exec. Nothing
/// when the daemon was not started so. Must be called before a thread starts (the
/// environment is changed).
pub fn listen_fds() -> Vec<Inherited> {
    use std::os::fd::FromRawFd;
    let pid = std::env::var("LISTEN_PID").ok();
    let count = std::env::var("LISTEN_FDS").ok();
    let names = std::env::var("LISTEN_FDNAMES").unwrap_or_default();
    let names: Vec<&str> = names.split(':').collect();
    std::env::remove_var("LISTEN_PID");
    std::env::remove_var("LISTEN_FDS");
    std::env::remove_var("LISTEN_FDNAMES");
    let (Some(pid), Some(count)) = (pid, count) else {
        return Vec::new();
    };
    if pid.trim().parse::<u32>().ok() != Some(std::process::id()) {
        return Vec::new();
    }
    let n: i32 = count.trim().parse().unwrap_or(0);
    let mut out = Vec::new();
    for fd in 3..3 + n.clamp(0, 1024) {
        // SAFETY: fcntl on a descriptor number; an invalid one only fails.
        if unsafe { libc::fcntl(fd, libc::F_SETFD, libc::FD_CLOEXEC) } != 0 {
            continue;
        }
        let kind = socket_kind(fd);
        // SAFETY: systemd passed the descriptor to this process and nothing else owns it.
        out.push(match kind {
            Ok(Kind::Unix(path)) => {
                let name = names
                    .get((fd - 3) as usize)
                    .filter(|n| n.starts_with('/'))
                    .map(std::path::PathBuf::from);
                Inherited::Unix(unsafe { FromRawFd::from_raw_fd(fd) }, path, name)
            }
            Ok(Kind::Tcp) => Inherited::Tcp(unsafe { FromRawFd::from_raw_fd(fd) }),
            Ok(Kind::Other(what)) => Inherited::Other(fd, what),
            Err(e) => Inherited::Other(fd, e),
        });
    }
    out
}

enum Kind {
    Unix(std::path::PathBuf),
    Tcp,
    Other(String),
}

/// What descriptor `fd` is: a listening unix stream socket (its path), a listening TCP one.
fn socket_kind(fd: i32) -> Result<Kind, String> {
    use std::os::unix::ffi::OsStrExt;
    let int = |opt: libc::c_int| -> Result<libc::c_int, String> {
        let mut v: libc::c_int = 0;
        let mut len = std::mem::size_of::<libc::c_int>() as libc::socklen_t;
        // SAFETY: getsockopt writes an int into v, its size in len.
        let r = unsafe {
            libc::getsockopt(
                fd,
                libc::SOL_SOCKET,
                opt,
                (&mut v as *mut libc::c_int).cast(),
                &mut len,
            )
        };
        if r != 0 {
            return Err(format!(
                "descriptor {fd}: {}",
                std::io::Error::last_os_error()
            ));
        }
        Ok(v)
    };
    let (ty, listening) = (int(libc::SO_TYPE)?, int(libc::SO_ACCEPTCONN)?);
    // SAFETY: sockaddr_storage is plain data; getsockname fills at most len bytes of it.
    let mut ss: libc::sockaddr_storage = unsafe { std::mem::zeroed() };
    let mut len = std::mem::size_of::<libc::sockaddr_storage>() as libc::socklen_t;
    // SAFETY: as above.
    if unsafe {
        libc::getsockname(
            fd,
            (&mut ss as *mut libc::sockaddr_storage).cast(),
            &mut len,
        )
    } != 0
    {
        return Err(format!(
            "descriptor {fd}: {}",
            std::io::Error::last_os_error()
        ));
    }
    let family = ss.ss_family as libc::c_int;
    if ty != libc::SOCK_STREAM || listening == 0 {
        return Ok(Kind::Other(format!(
            "descriptor {fd}: not a listening stream socket (family {family}, type {ty})"
        )));
    }
    match family {
        libc::AF_UNIX => {
            // SAFETY: the family says the storage holds a sockaddr_un.
            let un: &libc::sockaddr_un =
                unsafe { &*(&ss as *const libc::sockaddr_storage).cast::<libc::sockaddr_un>() };
            let off = std::mem::size_of::<libc::sa_family_t>();
            let n = (len as usize).saturating_sub(off).min(un.sun_path.len());
            let bytes: Vec<u8> = un.sun_path[..n].iter().map(|&c| c as u8).collect();
            let end = bytes.iter().position(|&b| b == 0).unwrap_or(bytes.len());
            if end == 0 {
                return Ok(Kind::Other(format!(
                    "descriptor {fd}: an abstract or unnamed unix socket"
                )));
            }
            Ok(Kind::Unix(std::path::PathBuf::from(
                std::ffi::OsStr::from_bytes(&bytes[..end]),
            )))
        }
        libc::AF_INET | libc::AF_INET6 => Ok(Kind::Tcp),
        f => Ok(Kind::Other(format!("descriptor {fd}: socket family {f}"))),
    }
}

/// The name of user `uid` (its number when it has none).
pub fn user_name(uid: u32) -> String {
    // SAFETY: getpwuid returns static storage or null; read at once, before another call.
    unsafe {
        let p = libc::getpwuid(uid);
        if p.is_null() {
            uid.to_string()
        } else {
            std::ffi::CStr::from_ptr((*p).pw_name)
                .to_string_lossy()
                .into_owned()
        }
    }
}

/// The name of group `gid` (its number when it has none).
pub fn group_name(gid: u32) -> String {
    // SAFETY: getgrgid returns static storage or null; read at once, before another call.
    unsafe {
        let g = libc::getgrgid(gid);
        if g.is_null() {
            gid.to_string()
        } else {
            std::ffi::CStr::from_ptr((*g).gr_name)
                .to_string_lossy()
                .into_owned()
        }
    }
}

/// Whether descriptor `fd` becomes readable (a listening socket: a connection waits)
/// within `timeout_ms`.
pub fn readable(fd: std::os::fd::RawFd, timeout_ms: i32) -> bool {
    let mut p = libc::pollfd {
        fd,
        events: libc::POLLIN,
        revents: 0,
    };
    // SAFETY: poll on one pollfd we own.
    unsafe { libc::poll(&mut p, 1, timeout_ms) > 0 && p.revents & libc::POLLIN != 0 }
}
