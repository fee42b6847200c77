//! The drawing process (issue 57): librrd's renderer ([`crate::librrd`]) in a process of its
//! own that reads no file and writes none, its rows fetched from the process that holds the
//! store, bounded in memory and time.
//!
//! The parent ([`Drawer`]) starts its own binary as `<exe> __draw` and talks to it over the
//! child's standard input and output in frames (a tag byte, a u32 length, the payload). A
//! draw goes `D` (the command, the environment that changes a drawing: TZ, LANG, LC_*, and
//! the arguments, every DEF's file turned into `cb//FILE` and the output into `-`); while
//! librrd draws, each fetch comes back as `F` (name, CF, start, end, step), which the parent
//! answers `R` (the rows, as `rrd_fetch` gives them for the file) or `E` (an error, which
//! librrd reports as rrdtool would); the draw ends with `O` (the size, PRINT's lines and what
//! librrd printed: the image) or `X` (librrd's error). The image goes to a memory file
//! (`memfd`), never to a disk; the parent writes the file the user named.
//!
//! The child, once librrd is loaded and before it reads any request, restricts itself:
//! Landlock (read-only access to /usr and the font configuration and cache, nothing else,
//! no TCP: chosen over a mount namespace, which needs root, and seccomp, which cannot tell
//! one path from another), RLIMIT_AS ([`MEMORY`]), RLIMIT_CORE 0. The parent bounds a draw's
//! time ([`DRAW_TIME`]: past it the child is killed and reaped, and the next draw starts
//! another), refuses arguments with NUL bytes and sizes past [`MAX_SIDE`] and
//! [`MAX_PIXELS`], and an image larger than [`MAX_IMAGE`].
//!
//! One child draws a whole pipe-mode session or a daemon connection's graphs in order: cairo
//! numbers the surfaces of a process, and an SVG names its own after them, so only that
//! gives the bytes of rrdtool's own pipe mode.

use crate::librrd::{Fetcher, Lib, Rows};
use std::io::{BufReader, Read, Write};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::time::{Duration, Instant};

/// The argument that makes the binary the drawing process.
pub const WORKER_ARG: &str = "__draw";

/// Address space of the drawing process.
pub const MEMORY: u64 = 2 << 30;

/// Time a draw may take, fetches included.
pub const DRAW_TIME: Duration = Duration::from_secs(30);

/// Largest `--width`/`--height`.
pub const MAX_SIDE: u64 = 10_000;

/// Largest graph area (width x height): 16 million pixels (a 4000 x 4000 graph).
pub const MAX_PIXELS: u64 = 16_000_000;

/// Largest image (or graphv output) returned: 64 MiB (a 4000 x 4000 PNG of noise is 48 MiB;
/// a graph's SVG of 10,000 points a line for 50 lines about 10 MiB).
pub const MAX_IMAGE: usize = 64 << 20;

/// Largest frame either side accepts: an image, or a DEF's rows.
const MAX_FRAME: usize = {
    let rows = MAX_VALUES as usize * 8;
    (if rows > MAX_IMAGE { rows } else { MAX_IMAGE }) + (1 << 20)
};

/// The environment a drawing depends on, passed to the child for each draw: the time zone
/// and locale (axis labels, dates in COMMENTs, number formats) and rrdtool's default font.
pub const ENV_KEYS: [&str; 8] = [
    "TZ",
    "LANG",
    "LANGUAGE",
    "LC_ALL",
    "LC_CTYPE",
    "LC_NUMERIC",
    "LC_TIME",
    "RRD_DEFAULT_FONT",
];

/// Most values (rows x data sources) one DEF's fetch gives a graph: 64 MiB of rows. A graph
/// of a year of a one-minute archive of four data sources reads 2.1 million.
pub const MAX_VALUES: u64 = 8 << 20;

// --- frames -------------------------------------------------------------------------------

fn put_u32(out: &mut Vec<u8>, v: u32) {
    out.extend_from_slice(&v.to_le_bytes());
}

fn put_bytes(out: &mut Vec<u8>, b: &[u8]) {
    put_u32(out, b.len() as u32);
    out.extend_from_slice(b);
}

fn put_strs(out: &mut Vec<u8>, v: &[String]) {
    put_u32(out, v.len() as u32);
    for s in v {
        put_bytes(out, s.as_bytes());
    }
}

/// A frame's payload, read in order.
struct Payload<'a>(&'a [u8]);

impl Payload<'_> {
    fn take(&mut self, n: usize) -> Result<&[u8], String> {
        if self.0.len() < n {
            return Err("a frame ended early".into());
        }
        let (a, b) = self.0.split_at(n);
        self.0 = b;
        Ok(a)
    }
    fn u32(&mut self) -> Result<u32, String> {
        Ok(u32::from_le_bytes(
            self.take(4)?.try_into().expect("4 bytes"),
        ))
    }
    fn u64(&mut self) -> Result<u64, String> {
        Ok(u64::from_le_bytes(
            self.take(8)?.try_into().expect("8 bytes"),
        ))
    }
    fn i64(&mut self) -> Result<i64, String> {
        Ok(self.u64()? as i64)
    }
    fn bytes(&mut self) -> Result<Vec<u8>, String> {
        let n = self.u32()? as usize;
        Ok(self.take(n)?.to_vec())
    }
    fn string(&mut self) -> Result<String, String> {
        String::from_utf8(self.bytes()?).map_err(|_| "a string that is not UTF-8".to_string())
    }
    fn strings(&mut self) -> Result<Vec<String>, String> {
        let n = self.u32()? as usize;
        if n > self.0.len() {
            return Err("a frame's count is past its end".into());
        }
        (0..n).map(|_| self.string()).collect()
    }
}

/// A fetch's rows as they travel: start, end, step, the data sources' names, the values.
pub fn encode_rows(r: &Rows) -> Vec<u8> {
    let mut out = Vec::with_capacity(32 + r.values.len() * 8);
    out.extend_from_slice(&(r.start as u64).to_le_bytes());
    out.extend_from_slice(&(r.end as u64).to_le_bytes());
    out.extend_from_slice(&r.step.to_le_bytes());
    put_strs(&mut out, &r.ds_names);
    put_u32(&mut out, r.values.len() as u32);
    for v in &r.values {
        out.extend_from_slice(&v.to_bits().to_le_bytes());
    }
    out
}

/// [`encode_rows`] read back.
pub fn decode_rows(body: &[u8]) -> Result<Rows, String> {
    let mut p = Payload(body);
    let (start, end, step) = (p.i64()?, p.i64()?, p.u64()?);
    let ds_names = p.strings()?;
    let n = p.u32()? as usize;
    if n > p.0.len() / 8 {
        return Err("a frame's count is past its end".into());
    }
    let values = (0..n)
        .map(|_| p.u64().map(f64::from_bits))
        .collect::<Result<Vec<f64>, String>>()?;
    Ok(Rows {
        start,
        end,
        step,
        ds_names,
        values,
    })
}

fn write_frame(w: &mut impl Write, tag: u8, payload: &[u8]) -> std::io::Result<()> {
    let mut head = [0u8; 5];
    head[0] = tag;
    head[1..].copy_from_slice(&(payload.len() as u32).to_le_bytes());
    w.write_all(&head)?;
    w.write_all(payload)?;
    w.flush()
}

fn read_frame(r: &mut impl Read) -> std::io::Result<(u8, Vec<u8>)> {
    let mut head = [0u8; 5];
    r.read_exact(&mut head)?;
    let n = u32::from_le_bytes(head[1..].try_into().expect("4 bytes")) as usize;
    if n > MAX_FRAME {
        return Err(std::io::Error::other("a frame past the largest"));
    }
    let mut buf = vec![0u8; n];
    r.read_exact(&mut buf)?;
    Ok((head[0], buf))
}

// --- the parent ---------------------------------------------------------------------------

/// What a draw gave: what librrd printed to its standard output (the image for `graph`,
/// the keys and the image for `graphv`), and for `graph` the size and PRINT's lines.
pub struct Output {
    pub stdout: Vec<u8>,
    pub xsize: i32,
    pub ysize: i32,
    pub lines: Vec<String>,
}

/// The parent's answer to a fetch: (name, CF, start, end, step) to the rows.
pub type FetchFn<'a> = dyn FnMut(&str, &str, i64, i64, u64) -> Result<Rows, String> + 'a;

/// The parent's end of a drawing process.
pub struct Drawer {
    pid: libc::pid_t,
    /// Started by `Command` (reaped through it), or forked (reaped with waitpid).
    child: Option<Child>,
    to: std::fs::File,
    from: BufReader<std::fs::File>,
}

impl Drawer {
    /// Start a drawing process: this very binary (`/proc/self/exe`), as [`WORKER_ARG`]; forked instead where
    /// this process has one thread (the CLI's `graph`: the binary is already loaded, which
    /// saves its start, 2 ms of a graph's 45).
    pub fn start() -> Result<Drawer, String> {
        if threads() == 1 {
            if let Some(d) = Drawer::fork() {
                return Ok(d);
            }
        }
        // The running binary itself, also after it was replaced on disk (an upgrade: its
        // path then names the new one, or "(deleted)").
        let mut child = Command::new("/proc/self/exe")
            .arg(WORKER_ARG)
            .env_clear()
            .env("PATH", "/usr/bin:/bin")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .map_err(|e| format!("cannot start the drawing process: {e}"))?;
        let to: ChildStdin = child.stdin.take().expect("piped");
        let from: ChildStdout = child.stdout.take().expect("piped");
        Ok(Drawer {
            pid: child.id() as libc::pid_t,
            child: Some(child),
            to: std::fs::File::from(std::os::fd::OwnedFd::from(to)),
            from: BufReader::new(std::fs::File::from(std::os::fd::OwnedFd::from(from))),
        })
    }

    /// The drawing process forked from this one (which must have one thread): its own
    /// descriptors only, the environment cleared as for an exec. None where it could not.
    fn fork() -> Option<Drawer> {
        use std::os::fd::FromRawFd;
        let mut a = [0i32; 2];
        let mut b = [0i32; 2];
        // SAFETY: pipe2/fork/dup2/close_range/open/_exit on descriptors this process made;
        // the child runs only async-signal-safe calls until it is alone (one thread, no lock
        // held by another) and then the worker's main.
        unsafe {
            if libc::pipe2(a.as_mut_ptr(), libc::O_CLOEXEC) != 0 {
                return None;
            }
            if libc::pipe2(b.as_mut_ptr(), libc::O_CLOEXEC) != 0 {
                libc::close(a[0]);
                libc::close(a[1]);
                return None;
            }
            let pid = libc::fork();
            if pid < 0 {
                for fd in [a[0], a[1], b[0], b[1]] {
                    libc::close(fd);
                }
                return None;
            }
            if pid == 0 {
                let null = libc::open(c"/dev/null".as_ptr(), libc::O_WRONLY);
                if libc::dup2(a[0], 0) < 0 || libc::dup2(b[1], 1) < 0 {
                    libc::_exit(1);
                }
                libc::dup2(null, 2);
                libc::close_range(3, u32::MAX, 0);
                libc::clearenv();
                libc::setenv(c"PATH".as_ptr(), c"/usr/bin:/bin".as_ptr(), 1);
                libc::_exit(serve());
            }
            libc::close(a[0]);
            libc::close(b[1]);
            Some(Drawer {
                pid,
                child: None,
                to: std::fs::File::from_raw_fd(a[1]),
                from: BufReader::new(std::fs::File::from_raw_fd(b[0])),
            })
        }
    }

    /// Draw `kind` (`graph` or `graphv`) with `args` (checked, rewritten: see the module)
    /// and `env`, answering fetches with `fetch`. An error of the process's own (it died,
    /// took too long) leaves it unusable: start another.
    pub fn draw(
        &mut self,
        kind: &str,
        args: &[String],
        env: &[(String, String)],
        fetch: &mut FetchFn<'_>,
    ) -> Result<Result<Output, String>, String> {
        let mut p = Vec::new();
        put_bytes(&mut p, kind.as_bytes());
        let env: Vec<String> = env.iter().map(|(k, v)| format!("{k}={v}")).collect();
        put_strs(&mut p, &env);
        put_strs(&mut p, args);
        write_frame(&mut self.to, b'D', &p).map_err(|e| format!("the drawing process: {e}"))?;
        let deadline = Instant::now() + DRAW_TIME;
        let pid = self.pid;
        // The child is killed at the deadline by a watcher; a read then fails.
        let (tx, rx) = std::sync::mpsc::channel::<()>();
        let watcher = std::thread::spawn(move || {
            if rx.recv_timeout(DRAW_TIME).is_err() {
                // SAFETY: kill(2) on our own child's pid (reaped only by Drop, after this).
                unsafe { libc::kill(pid, libc::SIGKILL) };
            }
        });
        let r = self.answer(fetch);
        let _ = tx.send(());
        let _ = watcher.join();
        if Instant::now() >= deadline && r.is_err() {
            return Err(format!(
                "the graph took longer than {} s to draw",
                DRAW_TIME.as_secs()
            ));
        }
        r
    }

    fn answer(&mut self, fetch: &mut FetchFn<'_>) -> Result<Result<Output, String>, String> {
        let io = |e: std::io::Error| format!("the drawing process ended: {e}");
        loop {
            let (tag, body) = read_frame(&mut self.from).map_err(io)?;
            let mut p = Payload(&body);
            match tag {
                b'F' => {
                    let name = p.string()?;
                    let cf = p.string()?;
                    let (start, end, step) = (p.i64()?, p.i64()?, p.u64()?);
                    let mut out = Vec::new();
                    let tag = match fetch(&name, &cf, start, end, step) {
                        Ok(r) => {
                            out = encode_rows(&r);
                            b'R'
                        }
                        Err(e) => {
                            put_bytes(&mut out, e.as_bytes());
                            b'E'
                        }
                    };
                    write_frame(&mut self.to, tag, &out).map_err(io)?;
                }
                b'O' => {
                    let (x, y) = (p.u32()? as i32, p.u32()? as i32);
                    let lines = p.strings()?;
                    let stdout = p.bytes()?;
                    return Ok(Ok(Output {
                        stdout,
                        xsize: x,
                        ysize: y,
                        lines,
                    }));
                }
                b'X' => return Ok(Err(p.string()?)),
                other => return Err(format!("the drawing process sent '{}'", other as char)),
            }
        }
    }
}

impl Drawer {
    /// End the process now and let it go unreaped (for a process about to exit: see
    /// [`crate::graph::Renderer::release`]).
    pub fn release(self) {
        // SAFETY: kill(2) on our own child, not yet reaped.
        unsafe { libc::kill(self.pid, libc::SIGKILL) };
        // Not reaped here (Drop would wait for its exit); a `Command` child is not
        // reaped by dropping it either. Its pipes close with this process.
        std::mem::forget(self);
    }
}

impl Drop for Drawer {
    fn drop(&mut self) {
        match self.child.as_mut() {
            Some(c) => {
                let _ = c.kill();
                let _ = c.wait();
            }
            None => {
                // SAFETY: kill/waitpid on our own forked child, reaped only here.
                unsafe {
                    libc::kill(self.pid, libc::SIGKILL);
                    libc::waitpid(self.pid, std::ptr::null_mut(), 0);
                }
            }
        }
    }
}

/// The threads of this process (its /proc/self/stat's twentieth field; 0 if unknown).
fn threads() -> usize {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    stat.rsplit_once(") ")
        .and_then(|(_, r)| r.split(' ').nth(17))
        .and_then(|n| n.parse().ok())
        .unwrap_or(0)
}

// --- the child ----------------------------------------------------------------------------

/// The drawing process's main: load librrd, restrict itself, then draw what comes until
/// its input ends. Returns the exit status.
pub fn worker_main() -> i32 {
    serve()
}

/// [`worker_main`], for a process started (ahead of its graphs) or forked (for a graph
/// that waits): fontconfig reads its files on a thread of its own while librrd loads (on
/// two processors the first graph then waits for the longer of the two, not for both as
/// rrdtool's does).
fn serve() -> i32 {
    let fonts = Lib::font_init().map(|init| {
        // Started before librrd's load begins: a thread's start waits for the loader's
        // lock (its TLS), which the load holds throughout.
        let (tx, rx) = std::sync::mpsc::channel::<()>();
        let t = std::thread::spawn(move || {
            let _ = tx.send(());
            init();
        });
        let _ = rx.recv();
        t
    });
    let lib = Lib::load();
    // Joined before the process restricts itself (Landlock holds for the thread that
    // asks and the threads it starts after, not for one already running).
    if let Some(t) = fonts {
        let _ = t.join();
    }
    let lib = match lib {
        Ok(l) => l,
        Err(e) => {
            // Said to the parent as the first draw's error.
            return serve_error(&e);
        }
    };

    // Its answers go to the pipe it was given as standard output; C's standard output
    // (where librrd writes an image for `-`) becomes a memory file.
    // SAFETY: dup/memfd_create/dup2 on descriptors this process owns.
    let (chan, mem) = unsafe {
        let chan = libc::dup(1);
        let mem = libc::memfd_create(c"ringlet-draw".as_ptr(), libc::MFD_CLOEXEC);
        if chan < 0 || mem < 0 || libc::dup2(mem, 1) < 0 {
            return 1;
        }
        (chan, mem)
    };
    if let Err(e) = restrict() {
        return serve_error(&format!("cannot restrict the drawing process: {e}"));
    }
    // SAFETY: `chan` is ours, handed to the File that owns it from now on.
    let out = std::sync::Arc::new(std::sync::Mutex::new(unsafe {
        <std::fs::File as std::os::fd::FromRawFd>::from_raw_fd(chan)
    }));
    let input = std::sync::Arc::new(std::sync::Mutex::new(std::io::stdin()));
    loop {
        let (tag, body) = match read_frame(&mut *input.lock().unwrap_or_else(|p| p.into_inner())) {
            Ok(f) => f,
            Err(_) => return 0,
        };
        if tag != b'D' {
            return 1;
        }
        let mut p = Payload(&body);
        let (Ok(kind), Ok(env), Ok(args)) = (p.string(), p.strings(), p.strings()) else {
            return 1;
        };
        for k in ENV_KEYS {
            // SAFETY: single-threaded here (the draw runs on this thread).
            unsafe { libc::unsetenv(std::ffi::CString::new(k).expect("no NUL").as_ptr()) };
        }
        for kv in &env {
            if let Some((k, v)) = kv.split_once('=') {
                if let (Ok(k), Ok(v)) = (std::ffi::CString::new(k), std::ffi::CString::new(v)) {
                    // SAFETY: as above.
                    unsafe { libc::setenv(k.as_ptr(), v.as_ptr(), 1) };
                }
            }
        }
        // SAFETY: tzset reads TZ again; setlocale from the environment, as rrdtool's main
        // does before it draws. A draw's CPU time is bounded from here (SIGXCPU past it).
        unsafe {
            tzset();
            libc::setlocale(libc::LC_ALL, c"".as_ptr());
            bound_cpu();
        }
        let (i2, o2) = (input.clone(), out.clone());
        let fetch: Box<Fetcher> = Box::new(move |name, cf, start, end, step| {
            let mut req = Vec::new();
            put_bytes(&mut req, name.as_bytes());
            put_bytes(&mut req, cf.as_bytes());
            req.extend_from_slice(&(start as u64).to_le_bytes());
            req.extend_from_slice(&(end as u64).to_le_bytes());
            req.extend_from_slice(&step.to_le_bytes());
            let gone = |e: std::io::Error| format!("the store is gone: {e}");
            write_frame(
                &mut *o2.lock().unwrap_or_else(|p| p.into_inner()),
                b'F',
                &req,
            )
            .map_err(gone)?;
            let (tag, body) =
                read_frame(&mut *i2.lock().unwrap_or_else(|p| p.into_inner())).map_err(gone)?;
            match tag {
                b'R' => decode_rows(&body),
                _ => Err(Payload(&body).string().unwrap_or_else(|e| e)),
            }
        });
        let drawn = if kind == "graphv" {
            lib.graph_v(&args, fetch).map(|()| (0, 0, Vec::new()))
        } else {
            lib.graph(&args, fetch).map(|p| (p.xsize, p.ysize, p.lines))
        };
        let printed = take_memfd(mem);
        let mut reply = Vec::new();
        let tag = match drawn {
            Ok((x, y, lines)) => {
                put_u32(&mut reply, x as u32);
                put_u32(&mut reply, y as u32);
                put_strs(&mut reply, &lines);
                if printed.len() > MAX_IMAGE {
                    reply.clear();
                    put_bytes(
                        &mut reply,
                        format!("the image is larger than {MAX_IMAGE} bytes").as_bytes(),
                    );
                    b'X'
                } else {
                    put_bytes(&mut reply, &printed);
                    b'O'
                }
            }
            Err(e) => {
                put_bytes(&mut reply, e.as_bytes());
                b'X'
            }
        };
        if write_frame(
            &mut *out.lock().unwrap_or_else(|p| p.into_inner()),
            tag,
            &reply,
        )
        .is_err()
        {
            return 0;
        }
    }
}

extern "C" {
    fn tzset();
}

/// Let this draw use [`DRAW_TIME`] more seconds of CPU than the process has used (the
/// soft limit; SIGXCPU ends the process past it).
fn bound_cpu() {
    // SAFETY: getrusage/getrlimit/setrlimit with valid structs.
    unsafe {
        let mut u: libc::rusage = std::mem::zeroed();
        libc::getrusage(libc::RUSAGE_SELF, &mut u);
        let used = (u.ru_utime.tv_sec + u.ru_stime.tv_sec) as u64;
        let mut l: libc::rlimit = std::mem::zeroed();
        libc::getrlimit(libc::RLIMIT_CPU, &mut l);
        l.rlim_cur = (used + DRAW_TIME.as_secs() + 1).min(l.rlim_max);
        libc::setrlimit(libc::RLIMIT_CPU, &l);
    }
}

/// What was written to the memory file since the last draw, and the file emptied.
fn take_memfd(fd: i32) -> Vec<u8> {
    // SAFETY: fflush(NULL) flushes C's streams; then positioned reads and a truncate of a
    // descriptor this process owns.
    unsafe {
        libc::fflush(std::ptr::null_mut());
        let len = libc::lseek(fd, 0, libc::SEEK_END).max(0) as usize;
        let mut buf = vec![0u8; len.min(MAX_IMAGE + 1)];
        let mut got = 0;
        while got < buf.len() {
            let n = libc::pread(
                fd,
                buf[got..].as_mut_ptr() as *mut libc::c_void,
                buf.len() - got,
                got as libc::off_t,
            );
            if n <= 0 {
                break;
            }
            got += n as usize;
        }
        buf.truncate(got);
        libc::ftruncate(fd, 0);
        libc::lseek(fd, 0, libc::SEEK_SET);
        buf
    }
}

/// Answer every draw with `why` (librrd could not be loaded or the sandbox made).
fn serve_error(why: &str) -> i32 {
    let mut out = std::io::stdout();
    let mut input = std::io::stdin();
    while let Ok((tag, _)) = read_frame(&mut input) {
        if tag != b'D' {
            return 1;
        }
        let mut reply = Vec::new();
        put_bytes(&mut reply, why.as_bytes());
        if write_frame(&mut out, b'X', &reply).is_err() {
            return 1;
        }
    }
    1
}

/// The sandbox: Landlock (read-only /usr and the font configuration, no TCP), no core
/// files, an address space of [`MEMORY`].
fn restrict() -> Result<(), String> {
    use landlock::{
        path_beneath_rules, Access, AccessFs, AccessNet, Ruleset, RulesetAttr, RulesetCreatedAttr,
        ABI,
    };
    let abi = ABI::V4;
    let read = [
        "/usr",
        "/etc/fonts",
        "/etc/localtime",
        "/etc/ld.so.cache",
        "/var/cache/fontconfig",
    ];
    Ruleset::default()
        .handle_access(AccessFs::from_all(abi))
        .and_then(|r| r.handle_access(AccessNet::BindTcp | AccessNet::ConnectTcp))
        .and_then(|r| r.create())
        .and_then(|r| r.add_rules(path_beneath_rules(read, AccessFs::from_read(abi))))
        .and_then(|r| r.restrict_self())
        .map_err(|e| e.to_string())?;
    let set = |res, v: u64| {
        let l = libc::rlimit {
            rlim_cur: v,
            rlim_max: v,
        };
        // SAFETY: setrlimit with a valid struct.
        unsafe { libc::setrlimit(res, &l) }
    };
    set(libc::RLIMIT_CORE, 0);
    if set(libc::RLIMIT_AS, MEMORY) != 0 {
        return Err("RLIMIT_AS".into());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// After `restrict`, a file outside /usr and the font configuration cannot be opened,
    /// for reading or writing, while /usr can be read (run in a forked child).
    #[test]
    fn the_sandbox_reads_only_what_drawing_needs() {
        let probe = std::env::temp_dir().join(format!("ringlet-sandbox-{}", std::process::id()));
        std::fs::write(&probe, b"x").unwrap();
        let p = std::ffi::CString::new(probe.to_str().unwrap()).unwrap();
        // SAFETY: fork; the child only makes system calls and exits.
        let pid = unsafe { libc::fork() };
        if pid == 0 {
            // SAFETY: as above; open(2) with valid C strings; _exit never returns.
            unsafe {
                if restrict().is_err() {
                    libc::_exit(10);
                }
                let outside = libc::open(p.as_ptr(), libc::O_RDONLY);
                let write = libc::open(
                    c"/usr/ringlet-sandbox".as_ptr(),
                    libc::O_WRONLY | libc::O_CREAT,
                    0o600,
                );
                let usr = libc::open(c"/usr/share".as_ptr(), libc::O_RDONLY);
                libc::_exit(if outside < 0 && write < 0 && usr >= 0 {
                    0
                } else {
                    11
                });
            }
        }
        let mut status = 0;
        // SAFETY: waitpid on our own child.
        unsafe { libc::waitpid(pid, &mut status, 0) };
        let _ = std::fs::remove_file(&probe);
        assert!(libc::WIFEXITED(status), "{status}");
        assert_eq!(
            libc::WEXITSTATUS(status),
            0,
            "10: no sandbox; 11: a file it should not reach"
        );
    }

    #[test]
    fn frames_read_back() {
        let mut out = Vec::new();
        let mut p = Vec::new();
        put_strs(&mut p, &["a".into(), "bc".into()]);
        put_bytes(&mut p, b"\0\x01");
        write_frame(&mut out, b'D', &p).unwrap();
        let (tag, body) = read_frame(&mut &out[..]).unwrap();
        assert_eq!(tag, b'D');
        let mut r = Payload(&body);
        assert_eq!(r.strings().unwrap(), ["a", "bc"]);
        assert_eq!(r.bytes().unwrap(), b"\0\x01");
        assert!(r.u32().is_err());
    }
}
