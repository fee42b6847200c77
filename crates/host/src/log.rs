//! The daemon's log lines, C's `strerror` texts, and fail points for tests. At the bottom of
//! the crate: every module may log.

use std::io::Write;
use std::sync::atomic::Ordering;
use std::sync::Mutex;

static FILE: Mutex<Option<std::fs::File>> = Mutex::new(None);

/// An OS error as C's strerror says it (without Rust's " (os error N)").
pub fn strerror(e: &std::io::Error) -> String {
    let s = e.to_string();
    match s.find(" (os error ") {
        Some(i) => s[..i].to_string(),
        None => s,
    }
}

/// A test hook: `RINGLET_FAIL_POINT=<name>` makes the point of that name fire once (the
/// daemon's tests use `commit-panic` to panic in the committer). Unset, it costs one load.
pub fn fail_point(name: &str) -> bool {
    use std::sync::atomic::AtomicBool;
    static POINT: std::sync::OnceLock<Option<String>> = std::sync::OnceLock::new();
    static FIRED: AtomicBool = AtomicBool::new(false);
    let p = POINT.get_or_init(|| std::env::var("RINGLET_FAIL_POINT").ok());
    p.as_deref() == Some(name) && !FIRED.swap(true, Ordering::SeqCst)
}

/// Log one line: to the `-o` file if given, else to stderr.
pub fn line(msg: &str) {
    let ts = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    let line = format!("ringlet[{}] {ts}: {msg}\n", std::process::id());
    let mut g = FILE.lock().unwrap_or_else(|p| p.into_inner());
    match g.as_mut() {
        Some(f) => {
            let _ = f.write_all(line.as_bytes());
        }
        None => {
            let _ = std::io::stderr().write_all(line.as_bytes());
        }
    }
}

/// Log to `file` from now on (`-o`), not to stderr.
pub fn to_file(file: std::fs::File) {
    *FILE.lock().unwrap_or_else(|p| p.into_inner()) = Some(file);
}
