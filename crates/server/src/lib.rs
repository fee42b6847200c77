//! `ringlet serve`: a drop-in replacement for rrdcached over a ringlet store, with carbon's
//! protocols, graphite-web's API, a web page and FUSE views beside it.
//!
//! It parses rrdcached's command line ([`config`]), opens the store (`daemon`: the store's
//! state, private to it, with the one read path and the commits), binds the listeners,
//! runs one thread per connection and one committer thread, and turns SIGTERM, SIGINT,
//! SIGUSR1 and SIGUSR2 into a final commit and a clean exit ([`run`]). The protocols' ways
//! in are leaves (`rrdcached`, `remote`, [`carbon`], `graphite`, `web`, `view`); what needs no
//! daemon lives in the crates below (`host`: processes, connections, HTTP; `proto`: the
//! wire formats; `graphite`: the render language; `cli`: the commands). No unsafe code here:
//! the system calls are `host`'s.

#![forbid(unsafe_code)]

pub mod carbon;
pub mod config;
pub(crate) mod daemon;
pub(crate) use daemon::read;
pub use daemon::series;
pub use host::{beneath, gate, httpd, log, sys};
pub(crate) mod entry;
pub mod feeds;
pub(crate) mod graphite;
pub(crate) mod ingest;
pub mod placeholder;
pub(crate) mod points;
pub(crate) mod remote;
pub(crate) mod routes;
pub(crate) mod rrdcached;
pub(crate) mod stats;
pub(crate) mod view;
pub(crate) mod web;

use config::{Addr, Config};
use daemon::Daemon;
use std::net::{TcpListener, UdpSocket};
use std::os::unix::net::UnixListener;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

enum Listener {
    Unix(UnixListener, PathBuf),
    Tcp(TcpListener),
}

fn bind(l: &config::Listen) -> Result<Listener, String> {
    match &l.addr {
        Addr::Unix(path) => {
            if let Some(dir) = path.parent() {
                std::fs::create_dir_all(dir)
                    .map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
            }
            let _ = std::fs::remove_file(path);
            let sock = UnixListener::bind(path)
                .map_err(|e| format!("cannot listen on unix:{}: {e}", path.display()))?;
            set_socket_access(l, path)?;
            Ok(Listener::Unix(sock, path.clone()))
        }
        Addr::Tcp(host, port) => {
            let host = if host.is_empty() {
                "0.0.0.0"
            } else {
                host.as_str()
            };
            let addr = if host.contains(':') {
                format!("[{host}]:{port}")
            } else {
                format!("{host}:{port}")
            };
            let sock =
                TcpListener::bind(&addr).map_err(|e| format!("cannot listen on {addr}: {e}"))?;
            Ok(Listener::Tcp(sock))
        }
    }
}

/// The socket systemd passed for listener `l` (the same unix path, its directory resolved,
/// or a TCP address `l` resolves to), taken out of `inherited`.
fn take_inherited(l: &config::Listen, inherited: &mut Vec<sys::Inherited>) -> Option<Listener> {
    let i = inherited.iter().position(|s| match (s, &l.addr) {
        (sys::Inherited::Unix(_, got, name), Addr::Unix(want)) => {
            same_socket_path(got, want)
                || name.as_deref().is_some_and(|n| same_socket_path(n, want))
        }
        (sys::Inherited::Tcp(t), Addr::Tcp(..)) => t
            .local_addr()
            .is_ok_and(|a| tcp_addrs(&l.addr).contains(&a)),
        _ => false,
    })?;
    match inherited.remove(i) {
        sys::Inherited::Unix(s, p, name) => Some(Listener::Unix(s, name.unwrap_or(p))),
        sys::Inherited::Tcp(t) => Some(Listener::Tcp(t)),
        sys::Inherited::Other(..) => None,
    }
}

/// Whether two unix socket paths name the same place: equal, or equal once their
/// directories are resolved (systemd binds /var/run/x as /run/x).
fn same_socket_path(a: &Path, b: &Path) -> bool {
    let resolved = |p: &Path| -> Option<PathBuf> {
        let abs = std::path::absolute(p).ok()?;
        Some(
            std::fs::canonicalize(abs.parent()?)
                .ok()?
                .join(abs.file_name()?),
        )
    };
    a == b || resolved(a).is_some_and(|x| Some(x) == resolved(b))
}

/// The addresses a TCP listener's host and port stand for (all interfaces: 0.0.0.0, [::]).
fn tcp_addrs(a: &Addr) -> Vec<std::net::SocketAddr> {
    use std::net::ToSocketAddrs;
    match a {
        Addr::Tcp(h, p) if h.is_empty() => vec![
            std::net::SocketAddr::from(([0, 0, 0, 0], *p)),
            std::net::SocketAddr::from(([0u16; 8], *p)),
        ],
        Addr::Tcp(h, p) => (h.trim_matches(|c| c == '[' || c == ']'), *p)
            .to_socket_addrs()
            .map(|it| it.collect())
            .unwrap_or_default(),
        Addr::Unix(_) => Vec::new(),
    }
}

/// The file mode and group of `-m`/`-s` (a group without a mode: 0760) given to a unix
/// socket, bound here or by systemd (with the unit's SocketMode and SocketGroup; the
/// options file says what it should be).
fn set_socket_access(l: &config::Listen, path: &Path) -> Result<(), String> {
    let mode = match (l.mode, &l.group) {
        (Some(m), _) => Some(m),
        (None, Some(_)) => Some(0o760),
        _ => None,
    };
    if let Some(m) = mode {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(m))
            .map_err(|e| format!("cannot chmod {}: {e}", path.display()))?;
    }
    if let Some(g) = &l.group {
        sys::chgrp(path, g)?;
    }
    Ok(())
}

fn describe(l: &Listener) -> String {
    match l {
        Listener::Unix(_, p) => format!("unix:{}", p.display()),
        Listener::Tcp(t) => t.local_addr().map_or("tcp".into(), |a| a.to_string()),
    }
}

/// The daemon's rrdcached listeners' pools ([`gate`]): every connection counts in `all`
/// (`--max-connections`), a TCP one also in `tcp` (`--max-tcp-connections`, half of it by
/// default), so clients on the network cannot take the slots of the local unix sockets.
struct Pools {
    all: Arc<gate::Pool>,
    tcp: Arc<gate::Pool>,
    /// A TCP connection that sends nothing for this long is closed (`--idle-timeout`).
    idle: Option<Duration>,
}

/// Ends a connection's reading (its requests already received are still read).
type Closer = Box<dyn Fn() + Send + Sync>;

/// Set once the daemon stops: no connection is accepted any more (those waiting stay in the
/// socket's backlog, for the next daemon on systemd's socket).
static DRAINING: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// The rrdcached connections being served, each with its [`Closer`].
static OPEN: std::sync::Mutex<Vec<(u64, Closer)>> = std::sync::Mutex::new(Vec::new());
static NEXT_CONN: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

/// A connection in [`OPEN`] while it is served.
struct Registered(u64);

impl Registered {
    fn new(closer: Option<Closer>) -> Registered {
        use std::sync::atomic::Ordering::SeqCst;
        let id = NEXT_CONN.fetch_add(1, SeqCst);
        if let Some(c) = closer {
            if DRAINING.load(SeqCst) {
                c();
            }
            OPEN.lock().unwrap_or_else(|e| e.into_inner()).push((id, c));
        }
        Registered(id)
    }
}

impl Drop for Registered {
    fn drop(&mut self) {
        OPEN.lock()
            .unwrap_or_else(|e| e.into_inner())
            .retain(|(id, _)| *id != self.0);
    }
}

/// Before the final commit: accept no more connections, end the reading of every open one
/// (a request it holds already is still read and answered; a client's next request fails
/// at once and its library connects again, to the next daemon on systemd's socket), and
/// wait (up to 10 s) until they are done. So no UPDATE meets "Shutting down": everything
/// acknowledged is in the final commit. A client sending at the very moment its connection
/// is ended may see it fail.
fn drain() {
    use std::sync::atomic::Ordering::SeqCst;
    DRAINING.store(true, SeqCst);
    for (_, close) in OPEN.lock().unwrap_or_else(|e| e.into_inner()).iter() {
        close();
    }
    let begun = std::time::Instant::now();
    while begun.elapsed() < Duration::from_secs(10) {
        if OPEN.lock().unwrap_or_else(|e| e.into_inner()).is_empty() {
            return;
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    log::line("connections still open 10 s after the stop began: committing without them");
}

/// Accept connections on `l`, one thread each; past a pool's bound a new one gets
/// `-1 Too many connections` and is closed.
fn spawn_acceptor(
    d: Arc<Daemon>,
    l: Listener,
    access: Arc<rrdcached::conn::Access>,
    pools: &Pools,
) {
    let (tcp, idle) = (matches!(l, Listener::Tcp(_)), pools.idle);
    let counted = if tcp {
        vec![pools.all.clone(), pools.tcp.clone()]
    } else {
        vec![pools.all.clone()]
    };
    std::thread::spawn(move || {
        let accept = || -> std::io::Result<Box<dyn ConnStream>> {
            // Waiting in poll, not accept: once the daemon stops, no connection is taken
            // from the backlog.
            use std::os::fd::AsRawFd;
            let fd = match &l {
                Listener::Unix(s, _) => s.as_raw_fd(),
                Listener::Tcp(s) => s.as_raw_fd(),
            };
            loop {
                if DRAINING.load(std::sync::atomic::Ordering::SeqCst) {
                    std::thread::sleep(Duration::from_secs(3600));
                    continue;
                }
                if sys::readable(fd, 200) {
                    break;
                }
            }
            Ok(match &l {
                Listener::Unix(s, _) => Box::new(s.accept()?.0),
                Listener::Tcp(s) => {
                    let c = s.accept()?.0;
                    let _ = c.set_nodelay(true);
                    let _ = c.set_read_timeout(idle);
                    Box::new(c)
                }
            })
        };
        let refused = |mut s: Box<dyn ConnStream>| {
            let _ = s.write_all(b"-1 Too many connections\n");
        };
        let serve = move |stream: Box<dyn ConnStream>| {
            stream.set_write_timeout(Some(Duration::from_secs(30)));
            let _open = Registered::new(stream.read_closer());
            // A bug that panics ends this connection only; the slot is given back.
            let served = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                rrdcached::conn::serve(&d, &access, stream)
            }));
            match served {
                Ok(Err(e)) if idle_end(&e) => {}
                Ok(Err(e))
                    if e.kind() != std::io::ErrorKind::BrokenPipe
                        && e.kind() != std::io::ErrorKind::ConnectionReset =>
                {
                    log::line(&format!("connection closed: {e}"));
                }
                Err(_) => {
                    log::line("connection closed: a request made the daemon panic");
                    // A panic half way through a commit or an update leaves the store
                    // refusing writes: then stop accepting values too.
                    if d.lock().refuses_writes() {
                        d.panicked("a request");
                    }
                }
                _ => {}
            }
        };
        gate::accept_loop("rrdcached", counted, accept, refused, serve);
    });
}

/// Whether a read ended because the client sent nothing for the idle timeout.
fn idle_end(e: &std::io::Error) -> bool {
    matches!(
        e.kind(),
        std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
    )
}

/// A socket a connection thread can serve.
trait ConnStream: std::io::Read + std::io::Write + Send {
    fn set_write_timeout(&self, t: Option<Duration>);
    /// What ends its reading from another thread (see [`drain`]).
    fn read_closer(&self) -> Option<Closer>;
}
impl ConnStream for std::os::unix::net::UnixStream {
    fn set_write_timeout(&self, t: Option<Duration>) {
        let _ = std::os::unix::net::UnixStream::set_write_timeout(self, t);
    }
    fn read_closer(&self) -> Option<Closer> {
        let c = self.try_clone().ok()?;
        Some(Box::new(move || {
            let _ = c.shutdown(std::net::Shutdown::Read);
        }))
    }
}
impl ConnStream for std::net::TcpStream {
    fn read_closer(&self) -> Option<Closer> {
        let c = self.try_clone().ok()?;
        Some(Box::new(move || {
            let _ = c.shutdown(std::net::Shutdown::Read);
        }))
    }
    fn set_write_timeout(&self, t: Option<Duration>) {
        let _ = std::net::TcpStream::set_write_timeout(self, t);
    }
}

fn final_commit(d: &Daemon) {
    match d.final_commit() {
        Ok(n) => log::line(&format!("committed {n} samples at shutdown")),
        Err(e) => log::line(&format!("final commit failed: {e}")),
    }
}

/// Run the daemon. Returns the process exit code.
pub fn run(args: &[String], default_store: PathBuf) -> i32 {
    let cfg = match config::parse(args) {
        Ok(c) => c,
        Err(e) if e.is_empty() => {
            print!("{}", config::HELP);
            return 0;
        }
        Err(e) => {
            eprintln!("ringlet serve: {e}");
            return 2;
        }
    };
    let store_dir = cfg.store.clone().unwrap_or(default_store);
    // systemd's sockets, before the fork (LISTEN_PID names this process).
    let inherited = sys::listen_fds();
    let ready = if cfg.foreground {
        None
    } else {
        match sys::daemonize() {
            Ok(r) => Some(r),
            Err(e) => {
                eprintln!("ringlet serve: {e}");
                return 1;
            }
        }
    };
    match start(&cfg, &store_dir, inherited) {
        Ok((d, sockets, views)) => {
            if let Some(r) = ready {
                r.ok();
            }
            // Its sockets listen (and the views are mounted, or said why not).
            sys::notify(&format!("READY=1\nMAINPID={}", std::process::id()));
            wait_for_signal(&d, &cfg, &sockets, views);
            0
        }
        Err(e) => {
            match ready {
                Some(r) => r.fail(&e),
                None => eprintln!("ringlet serve: {e}"),
            }
            1
        }
    }
}

/// What `start` leaves running: the daemon, its unix sockets (removed at exit), the view.
type Started = (Arc<Daemon>, Vec<OwnSocket>, Vec<view::Mounted>);

/// A unix socket file the daemon bound, and the file it made (device and inode).
#[derive(Clone)]
struct OwnSocket(PathBuf, Option<(u64, u64)>);

impl OwnSocket {
    fn of(path: &Path) -> OwnSocket {
        use std::os::unix::fs::MetadataExt;
        let id = std::fs::symlink_metadata(path)
            .ok()
            .map(|m| (m.dev(), m.ino()));
        OwnSocket(path.to_path_buf(), id)
    }

    /// Removed at exit, unless another socket took its path since (systemd's, when the
    /// package's socket unit started while this daemon ran; a migration's hand-over).
    fn remove(&self) {
        use std::os::unix::fs::MetadataExt;
        let now = std::fs::symlink_metadata(&self.0)
            .ok()
            .map(|m| (m.dev(), m.ino()));
        if now.is_some() && now == self.1 {
            let _ = std::fs::remove_file(&self.0);
        }
    }
}

/// The daemon started, step by step: the process made ready, the store opened, the
/// placeholders checked, every address bound, the views mounted, privileges dropped, then
/// every listener and the committer started.
fn start(
    cfg: &Config,
    store_dir: &Path,
    inherited: Vec<sys::Inherited>,
) -> Result<Started, String> {
    let ids = prepare_process(cfg)?;
    wait_for_handover(store_dir);
    clear_stale_views(cfg);
    let (d, view_at) = open_daemon(cfg, store_dir)?;
    check_placeholders(&d);
    // The open's buffers (checkpoint, log replay) are freed: give their pages back.
    sys::release_free_memory();
    let bound = bind_all(cfg, inherited)?;
    record_process(cfg, store_dir)?;
    let views = mount_views(&d, cfg, store_dir, view_at, ids.as_ref());
    // -U/-G: the store was opened (and locked) as root; its files become the user's, so that
    // the checkpoints and segments written from now on can replace them. The base directory
    // must be writable by the user, as for rrdcached.
    if let Some(ids) = &ids {
        sys::give(store_dir, ids)?;
        sys::drop_privileges(ids)?;
    }
    replay_handover(&d, cfg, store_dir);
    let sockets = bound.sockets.clone();
    serve_all(&d, cfg, bound);
    let dc = d.clone();
    std::thread::spawn(move || dc.committer());
    Ok((d, sockets, views))
}

/// The file in which `ringlet migrate rrdcached` names the rrdcached it is stopping.
pub const HANDOVER_FILE: &str = "handover";
/// The updates only rrdcached's journal held, which `ringlet migrate rrdcached` leaves for
/// the daemon to apply before it serves (a client's newer value would make them refused).
pub const HANDOVER_UPDATES: &str = "handover.updates";
/// What the daemon made of them, for the migration to report.
pub const HANDOVER_RESULT: &str = "handover.result";

/// An in-memory connection: a request text in, the answers out.
struct Duplex {
    input: std::io::Cursor<Vec<u8>>,
    output: Vec<u8>,
}

impl std::io::Read for Duplex {
    fn read(&mut self, b: &mut [u8]) -> std::io::Result<usize> {
        self.input.read(b)
    }
}

impl std::io::Write for Duplex {
    fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
        self.output.write(b)
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// The updates of [`HANDOVER_UPDATES`] applied as a client's requests (a file under -b seen
/// for the first time is imported first, as for any client), committed, before the daemon
/// serves; what became of them written to [`HANDOVER_RESULT`].
fn replay_handover(d: &Daemon, cfg: &Config, store_dir: &Path) {
    let file = store_dir.join(HANDOVER_UPDATES);
    let Ok(text) = std::fs::read_to_string(&file) else {
        return;
    };
    let updates: Vec<&str> = text.lines().filter(|l| l.starts_with("UPDATE ")).collect();
    let mut input = updates.join("\n");
    input.push_str("\nFLUSHALL\nQUIT\n");
    let mut io = Duplex {
        input: std::io::Cursor::new(input.into_bytes()),
        output: Vec::new(),
    };
    let access = rrdcached::conn::Access {
        allowed: None,
        max_line: cfg.max_line,
    };
    let _ = rrdcached::conn::serve(d, &access, &mut io);
    let answers = String::from_utf8_lossy(&io.output);
    let mut lines = answers.lines();
    let (mut ok, mut refused) = (0, 0);
    for _ in &updates {
        match lines.next() {
            Some(l) if l.starts_with("0 ") => ok += 1,
            _ => refused += 1,
        }
    }
    let said = format!(
        "applied the {} updates only rrdcached's journal held: {ok} accepted, {refused} \
         refused (older than the files' last update)",
        updates.len()
    );
    log::line(&said);
    let _ = std::fs::write(store_dir.join(HANDOVER_RESULT), format!("{said}\n"));
    let _ = std::fs::remove_file(&file);
}

/// A daemon started while `ringlet migrate rrdcached` stops rrdcached (systemd starts it
/// when a client reaches one of its sockets) waits until that rrdcached has exited: it
/// still writes its files and journal until then. Its sockets' clients wait in their
/// backlogs meanwhile. At most 10 minutes (the migration's own limit for the stop).
fn wait_for_handover(store_dir: &Path) {
    let file = store_dir.join(HANDOVER_FILE);
    let Ok(text) = std::fs::read_to_string(&file) else {
        return;
    };
    let Ok(pid) = text.trim().parse::<i32>() else {
        let _ = std::fs::remove_file(&file);
        return;
    };
    let alive = || Path::new(&format!("/proc/{pid}")).exists() && !sys::is_zombie(pid);
    // Until the migration removes the file (it leaves rrdcached's last updates first), or
    // rrdcached is gone and the migration has not come back for a minute.
    let mut gone_at: Option<std::time::Instant> = None;
    let mut waiting = || {
        if !file.exists() {
            return false;
        }
        if alive() {
            return true;
        }
        gone_at
            .get_or_insert_with(std::time::Instant::now)
            .elapsed()
            < Duration::from_secs(60)
    };
    if alive() {
        log::line(&format!(
            "waiting for rrdcached (pid {pid}) to exit before serving (ringlet migrate \
             rrdcached hands its sockets over; {} names it)",
            file.display()
        ));
    }
    let begun = std::time::Instant::now();
    let mut n = 0u64;
    while waiting() && begun.elapsed() < Duration::from_secs(600) {
        // systemd's start timeout is pushed on while waiting (every second).
        if n.is_multiple_of(50) {
            sys::notify("EXTEND_TIMEOUT_USEC=10000000");
        }
        n += 1;
        std::thread::sleep(Duration::from_millis(20));
    }
    let _ = std::fs::remove_file(&file);
}

/// The process made ready before any thread starts: the log file, the pid file checked,
/// signals blocked (one thread handles them with sigwait), systemd's socket reached while
/// the daemon may, the allocator's thread; the user and group of -U/-G looked up.
fn prepare_process(cfg: &Config) -> Result<Option<sys::Ids>, String> {
    if let Some(f) = &cfg.log_file {
        let file = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(f)
            .map_err(|e| format!("cannot open log file {}: {e}", f.display()))?;
        log::to_file(file);
    }
    if let Some(p) = &cfg.pid_file {
        sys::check_pid_file(p)?;
    }
    sys::block_signals();
    sys::notify_connect();
    sys::start_allocator_thread();
    sys::ids(cfg.group.as_deref(), cfg.user.as_deref())
}

/// A view left mounted by a daemon that died hides the directory it is on: gone first.
fn clear_stale_views(cfg: &Config) {
    let rrd_view = cfg
        .view
        .as_ref()
        .and_then(|v| v.as_deref().or(cfg.base.as_deref()));
    let feed_views = [cfg.phpfina.as_deref(), cfg.phptimeseries.as_deref()];
    for dir in [rrd_view].into_iter().chain(feed_views).flatten() {
        if let Err(e) = view::clear_stale(dir) {
            log::line(&format!("no view: {e}"));
        }
    }
}

/// The store opened (what recovery found logged), the base directory recorded in it for the
/// CLI; and where `--view` mounts, the daemon reaching the files under -b beneath it when
/// it mounts over -b.
type Opened = (Arc<Daemon>, Option<Result<PathBuf, String>>);

fn open_daemon(cfg: &Config, store_dir: &Path) -> Result<Opened, String> {
    let opening = std::time::Instant::now();
    let d = Arc::new(Daemon::open(cfg, store_dir)?);
    // A view over -b: from now on the daemon reaches the files there beneath it, through
    // the directory opened before the view is mounted on top.
    let view_at = cfg
        .view
        .as_ref()
        .map(|v| view_dir(v.as_deref(), d.base.as_deref(), store_dir));
    if let (Some(Ok(dir)), Some(base)) = (&view_at, &d.base) {
        if dir.as_os_str() == std::ffi::OsStr::new(base) {
            let opened = std::fs::File::open(base)
                .map_err(|e| format!("cannot open the base directory {base}: {e}"))?;
            d.go_beneath(opened);
        }
    }
    let rep = d.lock().recovery().clone();
    log::line(&format!(
        "{}, in {:.2} s",
        describe_recovery(store_dir, &rep),
        opening.elapsed().as_secs_f64()
    ));
    // The CLI names series under -b as the daemon does (cli::store::normalize), here for
    // RUN and, through the file, for a CLI on the store while the daemon is stopped.
    cli::store::set_base(d.base.as_deref());
    let base_file = cli::store::base_file(store_dir);
    let recorded = match &d.base {
        Some(b) => std::fs::write(&base_file, format!("{b}\n")),
        None => std::fs::remove_file(&base_file).or_else(|e| {
            if e.kind() == std::io::ErrorKind::NotFound {
                Ok(())
            } else {
                Err(e)
            }
        }),
    };
    if let Err(e) = recorded {
        log::line(&format!(
            "cannot record the base directory in the store: {e}"
        ));
    }
    Ok((d, view_at))
}

/// Before serving: the series created since the checkpoint the store opened from have their
/// placeholders (a stat-then-create client must not create one again over its data). The
/// others' were made durable with a checkpoint (Options::before_checkpoint): they are
/// checked, and copies that earlier versions wrote replaced, after the daemon serves, by a
/// thread of their own.
fn check_placeholders(d: &Arc<Daemon>) {
    let t0 = std::time::Instant::now();
    let places = d.lock().places().clone();
    let first = d.lock().created_since_checkpoint();
    let checked_first = first.len();
    let fixed = series::repair::repair(d, &places, first, &|| false);
    log::line(&format!(
        "placeholders of the {checked_first} series created since the checkpoint checked in {:.2} s",
        t0.elapsed().as_secs_f64()
    ));
    report_repair(&fixed, t0);
    // Every daemon: without -b, series with absolute names have placeholders too.
    let dc = d.clone();
    std::thread::spawn(move || {
        let t0 = std::time::Instant::now();
        // All of them: those just checked are placeholders now, found as such at once.
        let all = dc.lock().names();
        let n = all.len();
        let fixed = series::repair::repair(&dc, &places, all, &|| dc.closing());
        if !dc.closing() {
            log::line(&format!(
                "placeholders of all {n} series checked in {:.2} s",
                t0.elapsed().as_secs_f64()
            ));
            report_repair(&fixed, t0);
        }
        sys::release_free_memory();
    });
}

/// Every address bound, before privileges are dropped.
struct Bound {
    /// rrdcached's sockets, each with the commands it allows.
    rrdcached: Vec<(Listener, Option<Vec<usize>>)>,
    /// The unix sockets among them bound here (removed at exit).
    sockets: Vec<OwnSocket>,
    /// Carbon's listeners, with what they share.
    carbon: Option<CarbonBound>,
    /// The web page's and graphite-web's.
    http: Vec<TcpListener>,
}

/// Carbon's listeners: what they share, plaintext on TCP and UDP, pickles.
type CarbonBound = (
    Arc<carbon::Carbon>,
    Vec<(TcpListener, UdpSocket)>,
    Vec<TcpListener>,
);

/// Every listener bound: the sockets systemd passed (`inherited`) taken for the addresses
/// they are bound to, the others bound here. A passed socket no option names is served
/// too (every command allowed: the unit that made it is the administrator's); systemd
/// keeps the passed ones, so they are not removed at exit and a restart refuses no client.
fn bind_all(cfg: &Config, mut inherited: Vec<sys::Inherited>) -> Result<Bound, String> {
    let mut b = Bound {
        rrdcached: Vec::new(),
        sockets: Vec::new(),
        carbon: None,
        http: Vec::new(),
    };
    for l in &cfg.listen {
        let one = match take_inherited(l, &mut inherited) {
            Some(one) => {
                if let Listener::Unix(_, p) = &one {
                    set_socket_access(l, p)?;
                }
                log::line(&format!("listening on {} (from systemd)", describe(&one)));
                one
            }
            None => {
                let one = bind(l)?;
                if let Listener::Unix(_, p) = &one {
                    b.sockets.push(OwnSocket::of(p));
                }
                log::line(&format!("listening on {}", describe(&one)));
                one
            }
        };
        b.rrdcached.push((one, l.allowed.clone()));
    }
    for s in inherited {
        let one = match s {
            sys::Inherited::Unix(s, p, name) => Listener::Unix(s, name.unwrap_or(p)),
            sys::Inherited::Tcp(t) => Listener::Tcp(t),
            sys::Inherited::Other(_, what) => {
                log::line(&format!("a socket from systemd is not served: {what}"));
                continue;
            }
        };
        log::line(&format!(
            "listening on {} (from systemd; no option names it: every command allowed)",
            describe(&one)
        ));
        b.rrdcached.push((one, None));
    }
    // Carbon's plaintext protocol: TCP and UDP on each --carbon address.
    if !cfg.carbon.is_empty() || !cfg.carbon_pickle.is_empty() {
        let rules = carbon::load_rules(cfg.graphite_conf.as_deref())?;
        let mut c = carbon::Carbon::new(rules);
        let per_minute = carbon::max_creates_per_minute(cfg.graphite_conf.as_deref())?;
        c.creates = carbon::CreateBudget::new(per_minute);
        c.conns = gate::Pool::new("carbon", cfg.carbon_connections);
        c.idle = cfg.idle_timeout;
        let mut plain = Vec::new();
        for a in &cfg.carbon {
            let tcp = TcpListener::bind(a)
                .map_err(|e| format!("cannot listen for carbon on {a} (TCP): {e}"))?;
            let udp = UdpSocket::bind(a)
                .map_err(|e| format!("cannot listen for carbon on {a} (UDP): {e}"))?;
            log::line(&format!(
                "listening for carbon's plaintext protocol on {a} (TCP and UDP)"
            ));
            plain.push((tcp, udp));
        }
        let mut pickles = Vec::new();
        for a in &cfg.carbon_pickle {
            let tcp = TcpListener::bind(a)
                .map_err(|e| format!("cannot listen for carbon's pickles on {a}: {e}"))?;
            log::line(&format!("listening for carbon's pickle protocol on {a}"));
            pickles.push(tcp);
        }
        b.carbon = Some((Arc::new(c), plain, pickles));
    }
    // graphite-web's API.
    for a in &cfg.http {
        let server = TcpListener::bind(a).map_err(|e| format!("cannot serve HTTP on {a}: {e}"))?;
        log::line(&format!(
            "serving the web page and graphite-web's API on http://{a}/"
        ));
        b.http.push(server);
    }
    Ok(b)
}

/// The pid file written, and where a `ringlet` CLI on this store finds the daemon: the first
/// unix socket, else the first TCP address.
fn record_process(cfg: &Config, store_dir: &Path) -> Result<(), String> {
    if let Some(p) = &cfg.pid_file {
        std::fs::write(p, format!("{}\n", std::process::id()))
            .map_err(|e| format!("cannot write pid file {}: {e}", p.display()))?;
    }
    if let Some(addr) = cfg.client_address() {
        if let Err(e) = remote::record(store_dir, &addr) {
            log::line(&format!(
                "cannot record the daemon's address in the store: {e}"
            ));
        }
    }
    Ok(())
}

/// The views mounted, as root (before -U): a failure is logged and the sockets served.
fn mount_views(
    d: &Arc<Daemon>,
    cfg: &Config,
    store_dir: &Path,
    view_at: Option<Result<PathBuf, String>>,
    ids: Option<&sys::Ids>,
) -> Vec<view::Mounted> {
    let mut wanted: Vec<(view::Kind, Result<PathBuf, String>)> = Vec::new();
    if let Some(at) = view_at {
        wanted.push((view::Kind::Rrd, at));
    }
    for (kind, dir) in [
        (view::Kind::PhpFina, &cfg.phpfina),
        (view::Kind::PhpTimeSeries, &cfg.phptimeseries),
    ] {
        if let Some(dir) = dir {
            let at = feed_dir(kind, dir, d.base.as_deref(), store_dir, &wanted);
            wanted.push((kind, at));
        }
    }
    let mut views = Vec::new();
    for (kind, at) in wanted {
        // The view shows the ids the daemon has after -U/-G from the first answer (a
        // client that checks the owner, as gmetad does, may ask before the drop).
        let owner = ids.map(|i| (i.uid, i.gid)).unwrap_or_default();
        match at.and_then(|dir| view::mount(d.clone(), &dir, owner, kind).map(|m| (m, dir))) {
            Ok((m, dir)) => {
                log::line(&format!("{} mounted at {}", kind.what(), dir.display()));
                views.push(m);
            }
            Err(e) => log::line(&format!("no {}: {e}", kind.what())),
        }
    }
    views
}

/// Every listener started on what `bind_all` bound.
fn serve_all(d: &Arc<Daemon>, cfg: &Config, bound: Bound) {
    // Carbon's counts are in STATS from the first answer.
    if let Some((c, ..)) = &bound.carbon {
        d.add_stats(c.clone());
    }
    let pools = Pools {
        all: gate::Pool::new("rrdcached sockets", cfg.max_connections),
        tcp: gate::Pool::new("rrdcached TCP sockets", cfg.tcp_connections()),
        idle: cfg.idle_timeout,
    };
    for (b, allowed) in bound.rrdcached {
        let access = Arc::new(rrdcached::conn::Access {
            allowed,
            max_line: cfg.max_line,
        });
        spawn_acceptor(d.clone(), b, access, &pools);
    }
    if let Some((c, plain, pickles)) = bound.carbon {
        for (tcp, udp) in plain {
            let (d1, c1, d2, c2) = (d.clone(), c.clone(), d.clone(), c.clone());
            std::thread::spawn(move || carbon::serve_tcp(d1, c1, tcp));
            std::thread::spawn(move || carbon::serve_udp(d2, c2, udp));
        }
        for tcp in pickles {
            let (d1, c1) = (d.clone(), c.clone());
            std::thread::spawn(move || carbon::serve_pickle(d1, c1, tcp));
        }
    }
    if !bound.http.is_empty() {
        let g = Arc::new(graphite::Graphite::new());
        for server in bound.http {
            let (d1, g1) = (d.clone(), g.clone());
            let limits = httpd::Limits {
                connections: cfg.http_connections,
                workers: cfg.http_workers,
                reply_bytes: httpd::REPLY_BUDGET,
                reply_time: httpd::WRITE_TIME,
            };
            routes::serve(d1, g1, server, limits);
        }
    }
}

/// Where `--view` mounts: DIR, or the base directory for a bare `--view` (the daemon then
/// reaches its placeholders beneath the view). Not inside the base directory (a part of the
/// tree would hide the rest's placeholders), nor over the store.
fn view_dir(dir: Option<&Path>, base: Option<&str>, store: &Path) -> Result<PathBuf, String> {
    let Some(dir) = dir.or(base.map(Path::new)) else {
        return Err("--view without a directory needs -b".into());
    };
    let dir = std::fs::canonicalize(dir)
        .map_err(|e| format!("cannot mount the view at {}: {e}", dir.display()))?;
    // The store's own files must not be behind the view.
    if std::fs::canonicalize(store).is_ok_and(|s| s.starts_with(&dir)) {
        return Err(format!(
            "cannot mount the view at {}: the store {} is under it",
            dir.display(),
            store.display()
        ));
    }
    if let Some(b) = base.and_then(|b| std::fs::canonicalize(b).ok()) {
        if dir.starts_with(&b) && dir != b {
            return Err(format!(
                "the view cannot be mounted at {}: it is inside the base directory {}; mount it \
                 at the base directory itself (a bare --view) or elsewhere",
                dir.display(),
                b.display()
            ));
        }
    }
    Ok(dir)
}

/// Where an emoncms view mounts: `dir`, which must exist, and be neither over the store, nor
/// at or inside the base directory, nor where another view is.
fn feed_dir(
    kind: view::Kind,
    dir: &Path,
    base: Option<&str>,
    store: &Path,
    others: &[(view::Kind, Result<PathBuf, String>)],
) -> Result<PathBuf, String> {
    let what = kind.what();
    let dir = std::fs::canonicalize(dir)
        .map_err(|e| format!("cannot mount the {what} at {}: {e}", dir.display()))?;
    if std::fs::canonicalize(store).is_ok_and(|s| s.starts_with(&dir)) {
        return Err(format!(
            "cannot mount the {what} at {}: the store {} is under it",
            dir.display(),
            store.display()
        ));
    }
    if let Some(b) = base.and_then(|b| std::fs::canonicalize(b).ok()) {
        if dir.starts_with(&b) || b.starts_with(&dir) {
            return Err(format!(
                "cannot mount the {what} at {}: the base directory {} is there (emoncms's \
                 directories are apart from the RRDs')",
                dir.display(),
                b.display()
            ));
        }
    }
    if let Some((k, _)) = others
        .iter()
        .find(|(_, at)| at.as_ref().is_ok_and(|o| *o == dir))
    {
        return Err(format!(
            "cannot mount the {what} at {}: the {} is mounted there",
            dir.display(),
            k.what()
        ));
    }
    Ok(dir)
}

/// Log what a check of placeholders (begun at `t0`) changed under the base directory.
fn report_repair(fixed: &series::repair::Repaired, t0: std::time::Instant) {
    if fixed.written + fixed.copies_replaced > 0 || !fixed.moved_aside.is_empty() {
        log::line(&format!(
            "placeholders: {} written, {} full-size copies replaced ({} bytes freed), {} changed files moved aside, in {:.1} s",
            fixed.written,
            fixed.copies_replaced,
            fixed.copy_bytes,
            fixed.moved_aside.len(),
            t0.elapsed().as_secs_f64()
        ));
    }
    for (name, dest) in &fixed.moved_aside {
        log::line(&format!(
            "{name}: the file at its path differed from the store (changed by hand?); kept at {}",
            dest.display()
        ));
    }
}

/// One line for the log about what opening the store found.
fn describe_recovery(dir: &Path, r: &engine::recovery::RecoveryReport) -> String {
    if r.created {
        return format!("created a new store in {}", dir.display());
    }
    let mut s = format!(
        "opened store {}: checkpoint generation {}, replayed {} commits ({} samples)",
        dir.display(),
        r.checkpoint_generation,
        r.records_replayed,
        r.samples_replayed
    );
    if !r.invalid_checkpoints.is_empty() {
        s += &format!(
            "; invalid checkpoints skipped: {}",
            r.invalid_checkpoints.join(", ")
        );
    }
    if let Some(c) = &r.cut {
        s += &format!(
            "; WARNING: log cut at file offset {} ({}): what followed was torn or corrupt and is not served",
            c.file_offset, c.reason
        );
    }
    if r.samples_refused > 0 {
        s += &format!("; WARNING: {} replayed samples refused", r.samples_refused);
    }
    s
}

fn wait_for_signal(d: &Daemon, cfg: &Config, sockets: &[OwnSocket], views: Vec<view::Mounted>) {
    loop {
        let sig = sys::wait_signal();
        match sig {
            sys::Signal::Hup => continue,
            other => {
                log::line(&format!("caught {other:?}, committing and exiting"));
                break;
            }
        }
    }
    sys::notify("STOPPING=1");
    drain();
    // emoncms's feeds written into the directories beneath their views, kept in step until
    // the unmount, so emoncms writes on while the daemon is down (view/copy.rs).
    let copies: Vec<_> = views.iter().filter_map(view::Mounted::write_back).collect();
    // Unmounted first: no reader opens a file of a daemon that is stopping, no writer writes
    // to a feed after the final commit.
    drop(views);
    final_commit(d);
    view::Mounted::stopped(copies);
    let _ = std::fs::remove_file(cli::client::address_file(&d.lock().places().store));
    for s in sockets {
        s.remove();
    }
    if let Some(p) = &cfg.pid_file {
        let _ = std::fs::remove_file(p);
    }
}
