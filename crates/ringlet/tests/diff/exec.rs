//! Running a case: every step as its own process of `rrdtool` (in a fresh directory) or of
//! `ringlet --store DIR` (in another), with TZ=UTC and LC_ALL=C, capturing stdout, stderr and
//! exit status. A step that hangs is killed after a deadline and reported as status -1.

use super::case::{Case, Kind, Stdin};
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Output {
    pub status: i32,
    pub stdout: Vec<u8>,
    pub stderr: Vec<u8>,
}

pub enum Tool {
    Rrdtool,
    Ringlet(PathBuf),
}

const DEADLINE: Duration = Duration::from_secs(20);

/// Is the real rrdtool on PATH?
pub fn rrdtool_available() -> bool {
    Command::new("rrdtool")
        .arg("--version")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok()
}

/// Run every step of `case` with `tool` in `dir` (created empty). Steps whose stdin is an
/// rrdtool output read it from `rrdtool_outputs` (or from this run, for rrdtool itself).
pub fn run_case(
    tool: &Tool,
    case: &Case,
    dir: &Path,
    rrdtool_outputs: Option<&[Output]>,
) -> Vec<Output> {
    let _ = std::fs::remove_dir_all(dir);
    let store = dir.join("store");
    if let Err(e) = std::fs::create_dir_all(&store) {
        panic!("cannot create {}: {e}", store.display());
    }
    let mut outs: Vec<Output> = Vec::with_capacity(case.steps.len());
    for step in &case.steps {
        let input: Vec<u8> = match step.stdin {
            Stdin::Empty => Vec::new(),
            Stdin::RrdtoolStdoutOf(i) => match rrdtool_outputs {
                Some(r) => r[i].stdout.clone(),
                None => outs[i].stdout.clone(),
            },
        };
        let mut cmd = match tool {
            Tool::Rrdtool => Command::new("rrdtool"),
            Tool::Ringlet(bin) => {
                let mut c = Command::new(bin);
                c.arg("--store").arg(&store);
                // A small log ring: each case makes a fresh store, and the default 64 MiB
                // zero-filled log per case would only cost disk writes (and exercises the
                // ring's wrap and checkpoints less).
                c.env("RINGLET_LOG_SIZE", "256k");
                c
            }
        };
        cmd.args(&step.args)
            .current_dir(dir)
            .env("TZ", "UTC")
            .env("LC_ALL", "C")
            .env_remove("RRDCACHED_ADDRESS");
        let out = run_one(cmd, input);
        if matches!(tool, Tool::Rrdtool) && step.kind == Kind::Create && out.status == 0 {
            start_at_row_zero(dir, &step.args);
        }
        if matches!(tool, Tool::Rrdtool) && step.kind == Kind::Restore && out.status == 0 {
            end_at_last_row(dir, &step.args);
        }
        outs.push(out);
    }
    outs
}

/// rrdtool's create starts each archive at a random row, ringlet's at row 0: the file rrdtool
/// created is turned to start at row 0 too (its rows moved with it: a create with `--source`
/// has data; a plain one only unknown rows). Where rrdtool itself reads by place (tune's fill
/// of rows added: a quirk at the end of an archive's range), the two then agree.
fn start_at_row_zero(dir: &Path, args: &[String]) {
    if let Some(name) = args.iter().skip(1).find(|a| a.ends_with(".rrd")) {
        move_rows(&dir.join(name), |_| 0);
    }
}

/// rrdtool's restore puts each archive's newest row at a random row, ringlet's at the last:
/// the file rrdtool restored is turned to end at its last row too (Holt-Winters' burn-in
/// smoothings run when the current row wraps).
fn end_at_last_row(dir: &Path, args: &[String]) {
    if let Some(name) = args.last() {
        move_rows(&dir.join(name), |rows| rows - 1);
    }
}

fn move_rows(path: &Path, to: impl Fn(u64) -> u64) {
    let Ok(mut bytes) = std::fs::read(path) else {
        return;
    };
    if rrd::rrdfile::move_current_rows(&mut bytes, to).is_ok() {
        std::fs::write(path, bytes).unwrap();
    }
}

fn run_one(mut cmd: Command, input: Vec<u8>) -> Output {
    cmd.stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = match cmd.spawn() {
        Ok(c) => c,
        Err(e) => {
            return Output {
                status: -2,
                stdout: Vec::new(),
                stderr: format!("<spawn failed: {e}>").into_bytes(),
            }
        }
    };
    let writer = child.stdin.take().map(|mut w| {
        std::thread::spawn(move || {
            let _ = w.write_all(&input);
        })
    });
    // Readers report on a channel when their pipe closes (the child exited or closed it), so
    // the wait below blocks instead of polling; the deadline only matters for a hang.
    let (tx, rx) = mpsc::channel::<()>();
    let reader = |r: Option<Box<dyn Read + Send>>, tx: mpsc::Sender<()>| {
        std::thread::spawn(move || {
            let mut buf = Vec::new();
            if let Some(mut r) = r {
                let _ = r.read_to_end(&mut buf);
            }
            let _ = tx.send(());
            buf
        })
    };
    let out = reader(
        child
            .stdout
            .take()
            .map(|r| Box::new(r) as Box<dyn Read + Send>),
        tx.clone(),
    );
    let err = reader(
        child
            .stderr
            .take()
            .map(|r| Box::new(r) as Box<dyn Read + Send>),
        tx,
    );
    let deadline = Instant::now() + DEADLINE;
    let mut hung = false;
    for _ in 0..2 {
        let left = deadline.saturating_duration_since(Instant::now());
        if rx.recv_timeout(left).is_err() {
            hung = true;
            break;
        }
    }
    if hung {
        let _ = child.kill();
    }
    let status = match child.wait() {
        Ok(s) if !hung => status_code(s),
        _ => -1,
    };
    if let Some(w) = writer {
        let _ = w.join();
    }
    let stdout = out.join().unwrap_or_default();
    let mut stderr = err.join().unwrap_or_default();
    if status == -1 {
        stderr.extend_from_slice(b"<killed after the deadline>\n");
    }
    Output {
        status,
        stdout,
        stderr,
    }
}

fn status_code(s: std::process::ExitStatus) -> i32 {
    use std::os::unix::process::ExitStatusExt;
    match (s.code(), s.signal()) {
        (Some(c), _) => c,
        (None, Some(sig)) => 128 + sig,
        _ => -2,
    }
}
