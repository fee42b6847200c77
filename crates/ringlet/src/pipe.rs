//! Pipe mode, `ringlet -`: rrdtool's "REMOTE CONTROL". Commands are read from stdin one line
//! at a time, with the same arguments as on the command line; after each one the output, then
//! `OK u:<user> s:<system> r:<real>` (running totals in seconds), or `ERROR: <message>`, is
//! written to stdout. `quit` or end of input ends. rrdtool's file-system commands (`cd`,
//! `mkdir`, `pwd`, `ls`) are refused: names are store names.
//!
//! Where the commands run: a line's own `--daemon ADDR` (Cacti adds one to each line when it
//! is set up for rrdcached), else the daemon of `$RRDCACHED_ADDRESS` or the one that holds the
//! store, over one connection each; else the store: a command that only reads opens it for
//! the series it reads, as on its own; the first command that writes opens it whole, and it
//! stays open and locked until the input pauses ([`COMMIT_EVERY`] without a line while
//! changes wait): then they are committed and the store let go, so commands on their own
//! that wait for it run, and the next command that writes opens it again.
//! Beside a daemon, a session that wrote ends with one commit in each daemon it wrote to
//! (RUN `commit-session`, [`proto::run::COMMIT`]) before `ringlet -` exits: Cacti's
//! Boost deletes the values it flushed once the session is over, so they must be on the
//! disk by then, not in the daemon's next commit (docs/DURABILITY.md).
//!
//! On the store alone, what the commands change is committed (written and synced) once a
//! second while they come ([`COMMIT_EVERY`], also when the input pauses), at the end of the
//! input or `quit`, and when a SIGTERM, SIGINT, SIGHUP, SIGUSR1 or SIGUSR2 ends the run: a
//! Cacti poll of thousands of updates costs a few commits, not one page and one fsync
//! each (rrdtool's own updates go to the page cache, as unsynced). What a kill -9 or a
//! power cut can lose is the last second's commands (docs/DURABILITY.md).

use cli::client::Client;
use cli::{split_args, Ctx, Outcome};
use std::cell::RefCell;
use std::collections::{HashMap, VecDeque};
use std::io::{BufRead, Write};
use std::path::Path;
use std::sync::mpsc;
use std::time::{Duration, Instant};

/// How long what the commands changed may wait for its commit, on the store alone.
pub const COMMIT_EVERY: Duration = Duration::from_secs(1);

/// What the main loop waits for.
enum Msg {
    Line(String),
    /// A line that is not UTF-8: its error is printed, and the session goes on (as
    /// rrdtool's pipe mode goes on after a line it cannot run).
    Bad(String),
    /// End of input (or a read error).
    End,
    /// A signal that ends the run.
    Signal,
}

/// Run `cmd` with `args` on the session's store, open to write. The series a `create` made
/// (empty) join `unplaced`: committed with the next commit and given their placeholders then
/// ([`place`]); before anything else is written the session does that, so no value of a
/// series is committed before its placeholder is on the disk. Those a `restore` made hold
/// data: committed at once and given their placeholders.
fn run_on(
    st: &mut engine::Store,
    dir: &Path,
    renderer: &mut cli::graph::Renderer,
    (cmd, args): (&str, &[String]),
    bytes: &mut Vec<u8>,
    unplaced: &mut Vec<String>,
) -> Outcome {
    if cli::writes(cmd) && cmd != "create" && !unplaced.is_empty() {
        if let Err(e) = place(st, dir, unplaced) {
            return Outcome::err(e);
        }
    }
    let (mut out, written) = {
        let cell = RefCell::new(&mut *st);
        let ctx = Ctx {
            shared: Some(&cell),
            commit_each: false,
            ..Ctx::local(dir, crate::now())
        };
        let out = cli::graph::run_or_draw(renderer, false, cmd, args, bytes, &mut |cmd, args| {
            cli::dispatch(cmd, args, &ctx)
        });
        (out, ctx.written.into_inner())
    };
    unplaced.extend(written);
    if cli::writes(cmd) && cmd != "create" && !unplaced.is_empty() {
        if let Err(e) = place(st, dir, unplaced) {
            out.error.get_or_insert(e);
        }
    }
    out
}

/// Commit, then give the series created since the last commit their placeholders (written,
/// then their file systems synced: placed.rs).
fn place(st: &mut engine::Store, dir: &Path, unplaced: &mut Vec<String>) -> Result<(), String> {
    st.commit().map_err(|e| e.to_string())?;
    crate::placed::write(dir, &std::mem::take(unplaced))
}

/// Lines of stdin, and the ending signals, on one channel.
fn inputs() -> mpsc::Receiver<Msg> {
    // Blocked here and in both threads: the signal thread takes them with sigwait.
    server::sys::block_signals();
    let (tx, rx) = mpsc::channel();
    let sig = tx.clone();
    std::thread::spawn(move || {
        server::sys::wait_signal();
        let _ = sig.send(Msg::Signal);
    });
    std::thread::spawn(move || {
        let mut stdin = std::io::stdin().lock();
        let mut buf = Vec::new();
        loop {
            buf.clear();
            match stdin.read_until(b'\n', &mut buf) {
                Ok(0) => break,
                Ok(_) => {}
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(e) => {
                    eprintln!("ERROR: reading the commands: {e}");
                    break;
                }
            }
            if tx.send(line(&buf)).is_err() {
                return;
            }
        }
        let _ = tx.send(Msg::End);
    });
    rx
}

/// One input line (its `\n` or `\r\n` taken off) as a message: a command, or the error of a
/// line that is not UTF-8 (names and arguments are UTF-8 in the store).
fn line(bytes: &[u8]) -> Msg {
    let bytes = bytes.strip_suffix(b"\n").unwrap_or(bytes);
    let bytes = bytes.strip_suffix(b"\r").unwrap_or(bytes);
    match std::str::from_utf8(bytes) {
        Ok(l) => Msg::Line(l.to_string()),
        Err(e) => Msg::Bad(format!(
            "the line is not UTF-8 (byte 0x{:02X} at column {}): {}",
            bytes[e.valid_up_to()],
            e.valid_up_to() + 1,
            String::from_utf8_lossy(bytes)
        )),
    }
}

/// User and system CPU seconds of this process, as rrdtool's timing line gives them.
fn cpu_times() -> (f64, f64) {
    // SAFETY: a zeroed rusage is valid, and getrusage fills the one we own.
    let ru = unsafe {
        let mut ru: libc::rusage = std::mem::zeroed();
        if libc::getrusage(libc::RUSAGE_SELF, &mut ru) != 0 {
            return (0.0, 0.0);
        }
        ru
    };
    let secs = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
    (secs(ru.ru_utime), secs(ru.ru_stime))
}

/// How many lines may be sent to a daemon before their answers are read.
const PIPELINE: usize = 256;

/// Whether a command may be sent to a daemon ahead of the answers to the lines before it
/// (restore sends its input first, graph draws here, the rest are refused here).
fn pipelined(cmd: &str) -> bool {
    !matches!(
        cmd,
        "quit" | "cd" | "mkdir" | "pwd" | "ls" | "restore" | "graph" | "graphv"
    )
}

/// What rrdtool 1.7.2's pipe mode keeps from one line to the next: `restore`'s `-r` and
/// `-f` live in static variables there, so once a line gave one, every later restore of the
/// session has it (Cacti's RRD editing utilities restore with `-f` in one session).
#[derive(Default)]
struct Sticky {
    range_check: bool,
    force_overwrite: bool,
}

impl Sticky {
    /// The arguments of `cmd` with what earlier lines left set.
    fn restore(&mut self, cmd: &str, mut args: Vec<String>) -> Vec<String> {
        if cmd != "restore" {
            return args;
        }
        let (r, f) = cli::commands::restore_flags(&args);
        for (given, kept, flag) in [
            (r, &mut self.range_check, "-r"),
            (f, &mut self.force_overwrite, "-f"),
        ] {
            if *kept && !given {
                args.insert(0, flag.to_string());
            }
            *kept |= given;
        }
        args
    }
}

/// Print a command's output and its `OK`/`ERROR` line; false when stdout is gone.
fn print(stdout: &mut impl Write, mut bytes: Vec<u8>, out: Outcome, started: Instant) -> bool {
    bytes.extend_from_slice(out.stdout.as_bytes());
    match out.error {
        Some(e) => bytes.extend_from_slice(format!("ERROR: {e}\n").as_bytes()),
        None => {
            let (u, s) = cpu_times();
            let r = started.elapsed().as_secs_f64();
            bytes.extend_from_slice(format!("OK u:{u:1.2} s:{s:1.2} r:{r:1.2}\n").as_bytes());
        }
    }
    stdout.write_all(&bytes).is_ok() && stdout.flush().is_ok()
}

/// Read and print the answers to the lines sent ahead, in order; false when stdout is gone.
fn answer(
    pending: &mut VecDeque<String>,
    clients: &mut HashMap<String, Client>,
    stdout: &mut impl Write,
    started: Instant,
) -> bool {
    while let Some(addr) = pending.pop_front() {
        let out = match clients.get_mut(&addr) {
            Some(c) => c.finish_run(),
            None => Outcome::err(format!("{addr}: the connection was lost")),
        };
        if clients.get(&addr).is_some_and(Client::is_broken) {
            // The connection broke: the next line connects again.
            clients.remove(&addr);
        }
        if !print(stdout, Vec::new(), out, started) {
            return false;
        }
    }
    true
}

/// The session's connection to the daemon at `addr`, made at its first use (or again after
/// it broke).
fn client<'a>(
    clients: &'a mut HashMap<String, Client>,
    addr: &str,
) -> Result<&'a mut Client, String> {
    if !clients.contains_key(addr) {
        let c = Client::connect(addr)?;
        clients.insert(addr.to_string(), c);
    }
    Ok(clients.get_mut(addr).expect("inserted above"))
}

/// Run pipe mode on the store in `dir`; the process exit status.
pub fn run(dir: &Path) -> i32 {
    let started = Instant::now();
    let rx = inputs();
    // Every graph of the session drawn by one rrdtool, as in its own pipe mode.
    let mut renderer = cli::graph::Renderer::new();
    let first = rx.recv().ok();
    let mut clients: HashMap<String, Client> = HashMap::new();
    let default = match crate::daemon_for(None, dir) {
        crate::Daemon::At(addr, c) => {
            clients.insert(addr.clone(), c);
            Some(addr)
        }
        // Each line reports it, as it would with the address on the line.
        crate::Daemon::Unreachable(addr, _) => Some(addr),
        crate::Daemon::None => None,
    };
    // `$RRDCACHED_ADDRESS` names the daemon (rrdtool's output with --daemon); the daemon
    // that holds the store, found by itself, does not.
    let default_named = std::env::var("RRDCACHED_ADDRESS").is_ok_and(|a| !a.is_empty());
    // Cacti draws each graph with its own `ringlet -` and one line: alone, rrdtool starts
    // while the store opens (beside a daemon, the daemon has one started ahead).
    if let (None, Some(Msg::Line(l))) = (&default, &first) {
        if split_args(l)
            .first()
            .is_some_and(|c| cli::graph::is_graph(c))
        {
            renderer.start();
        }
    }
    // On the store alone, it is opened to write at the first command that writes, and kept
    // for the rest of the session; a command that only reads before then opens the store
    // for the series it reads, as on its own, and writes nothing (a graph page's session
    // of one `graph` line does not load the store, nor sync anything).
    let mut store: Option<engine::Store> = None;
    let mut sticky = Sticky::default();
    let mut stdout = std::io::stdout().lock();
    // When what the commands changed was first left uncommitted.
    let mut dirty_since: Option<Instant> = None;
    // Series created since the last commit, without their placeholders yet (run_on).
    let mut unplaced: Vec<String> = Vec::new();
    let mut status = 0;
    // Lines sent to a daemon whose answers are not read yet (their daemons, in order), and
    // a message taken from the channel while looking for more lines.
    let mut pending: VecDeque<String> = VecDeque::new();
    let mut next: Option<Msg> = first;
    let mut broken = false;
    // The daemons this session sent writes to: each commits them before the session ends.
    let mut wrote: Vec<String> = Vec::new();
    let mut note = |addr: &str, cmd: &str| {
        if cli::writes(cmd) && !wrote.iter().any(|a| a == addr) {
            wrote.push(addr.to_string());
        }
    };
    loop {
        let msg = match next.take() {
            Some(m) => Ok(m),
            None => match dirty_since {
                Some(t) => rx.recv_timeout(COMMIT_EVERY.saturating_sub(t.elapsed())),
                None => rx.recv().map_err(|_| mpsc::RecvTimeoutError::Disconnected),
            },
        };
        let line = match msg {
            Ok(Msg::Line(l)) => l,
            Ok(Msg::Bad(why)) => {
                // In turn: the answers of the lines before it first.
                if !answer(&mut pending, &mut clients, &mut stdout, started)
                    || !print(&mut stdout, Vec::new(), Outcome::err(why), started)
                {
                    broken = true;
                    break;
                }
                continue;
            }
            Ok(Msg::End | Msg::Signal) | Err(mpsc::RecvTimeoutError::Disconnected) => break,
            Err(mpsc::RecvTimeoutError::Timeout) => {
                // The input paused with changes pending: commit them now, and let the store
                // go, so that commands on their own (a graph page's, waiting for it) run
                // while the session waits; its next command that writes opens it again.
                if let Some(mut st) = store.take() {
                    let done = place(&mut st, dir, &mut unplaced)
                        .and_then(|()| st.close().map_err(|e| e.to_string()));
                    if let Err(e) = done {
                        eprintln!("ERROR: {e}");
                        status = 1;
                    }
                }
                dirty_since = None;
                continue;
            }
        };
        let args = split_args(&line);
        // A command for a daemon, sent now and answered later when more lines are waiting.
        if let Some((cmd, rest)) = args.split_first().filter(|(c, _)| pipelined(c)) {
            let (flag, rest) = cli::take_daemon(cmd, rest);
            let named = flag.is_some() || default_named;
            if let Some(addr) = flag.or_else(|| default.clone()) {
                let sent = client(&mut clients, &addr).and_then(|c| {
                    c.named = named;
                    c.send_run(cmd, &rest, crate::now())
                });
                match sent {
                    Ok(()) => {
                        note(&addr, cmd);
                        pending.push_back(addr);
                        if pending.len() < PIPELINE {
                            if let Ok(m) = rx.try_recv() {
                                let more = matches!(m, Msg::Line(_) | Msg::Bad(_));
                                next = Some(m);
                                if more {
                                    continue;
                                }
                            }
                        }
                        if !answer(&mut pending, &mut clients, &mut stdout, started) {
                            broken = true;
                            break;
                        }
                    }
                    Err(e) => {
                        if !answer(&mut pending, &mut clients, &mut stdout, started)
                            || !print(&mut stdout, Vec::new(), Outcome::err(e), started)
                        {
                            broken = true;
                            break;
                        }
                        if clients.get(&addr).is_some_and(Client::is_broken) {
                            clients.remove(&addr);
                        }
                    }
                }
                continue;
            }
        }
        // Anything else runs in turn: the answers of the lines before it first.
        if !answer(&mut pending, &mut clients, &mut stdout, started) {
            broken = true;
            break;
        }
        let mut bytes: Vec<u8> = Vec::new();
        let out = match args.split_first() {
            Some((cmd, _)) if cmd == "quit" => break,
            Some((cmd, _)) if matches!(cmd.as_str(), "cd" | "mkdir" | "pwd" | "ls") => {
                Outcome::err(format!("ringlet does not support '{cmd}' in pipe mode"))
            }
            Some((cmd, rest)) => {
                let (flag, rest) = cli::take_daemon(cmd, rest);
                let rest = sticky.restore(cmd, rest);
                let named = flag.is_some() || default_named;
                match (flag.or_else(|| default.clone()), store.as_mut()) {
                    (Some(addr), _) => {
                        note(&addr, cmd);
                        match client(&mut clients, &addr) {
                            Ok(c) => {
                                c.named = named;
                                let out = cli::graph::run_or_draw(
                                    &mut renderer,
                                    true,
                                    cmd,
                                    &rest,
                                    &mut bytes,
                                    &mut |cmd, args| c.run(cmd, args, crate::now()),
                                );
                                if c.is_broken() {
                                    // The connection broke: the next line connects again.
                                    clients.remove(&addr);
                                }
                                out
                            }
                            Err(e) => Outcome::err(e),
                        }
                    }
                    (None, None) if !cli::writes(cmd) => {
                        let ctx = Ctx::local(dir, crate::now());
                        cli::graph::run_or_draw(
                            &mut renderer,
                            false,
                            cmd,
                            &rest,
                            &mut bytes,
                            &mut |cmd, args| cli::dispatch(cmd, args, &ctx),
                        )
                    }
                    (None, None) => match cli::store::open(dir) {
                        Ok(st) => run_on(
                            store.insert(st),
                            dir,
                            &mut renderer,
                            (cmd, &rest),
                            &mut bytes,
                            &mut unplaced,
                        ),
                        Err(e) => Outcome::err(e),
                    },
                    (None, Some(st)) => run_on(
                        st,
                        dir,
                        &mut renderer,
                        (cmd, &rest),
                        &mut bytes,
                        &mut unplaced,
                    ),
                }
            }
            None => Outcome::ok(cli::HELP.into()),
        };
        let mut out = out;
        let mut let_go = false;
        if let (Some(st), Some((cmd, _))) = (store.as_mut(), args.split_first()) {
            if cli::writes(cmd) {
                let since = *dirty_since.get_or_insert_with(Instant::now);
                if since.elapsed() >= COMMIT_EVERY {
                    if let Err(e) = place(st, dir, &mut unplaced) {
                        out.error.get_or_insert(e);
                    }
                    dirty_since = None;
                    // A command on its own waits for the store (a graph page's): let it
                    // go now, as at a pause, though the input flows; the next command that
                    // writes opens it again once that one is done.
                    let_go = st.others_wait();
                }
            }
        }
        if let_go {
            if let Some(st) = store.take() {
                if let Err(e) = st.close() {
                    out.error.get_or_insert(e.to_string());
                }
            }
        }
        if !print(&mut stdout, bytes, out, started) {
            broken = true;
            break;
        }
    }
    if !broken {
        answer(&mut pending, &mut clients, &mut stdout, started);
    }
    // What the session wrote through a daemon is committed before it ends: a client that
    // deletes its copy once the session is over (Cacti's Boost) loses nothing to a crash
    // of the daemon before its next commit. One commit a session, a daemon.
    for addr in wrote {
        if let Err(e) = client(&mut clients, &addr).and_then(|c| c.commit(crate::now())) {
            eprintln!("ERROR: this session's updates are not committed: {e}");
            status = 1;
        }
    }
    let closed = store.map(|st| {
        st.close()
            .map_err(|e| e.to_string())
            .and_then(|()| crate::placed::write(dir, &unplaced))
    });
    match closed {
        Some(Err(e)) => {
            eprintln!("ERROR: {e}");
            1
        }
        _ => status,
    }
}
