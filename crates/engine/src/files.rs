//! Every file name in a store directory, in one place.
//!
//! ```text
//! <dir>/LOCK          empty; flock'ed while a Store is open: shared by readers of a few
//!                     series (Options::only alone), else exclusively
//! <dir>/LOCK.wait     empty; flock'ed shared by an open waiting for LOCK, so that a
//!                     writer that can let go of the store (pipe mode) knows to
//! <dir>/log           superblock page + the commit-record ring (fixed size, zero-filled)
//! <dir>/checkpoint.a  checkpoints of odd generation
//! <dir>/checkpoint.b  checkpoints of even generation
//! <dir>/seg-<id>      a segment: sealed archive chunks (id: 16 hex digits)
//! <dir>/clean        an older store's mark of a clean close (now in the log: crate::clean)
//! <dir>/*.tmp         a file being created; renamed into place once complete and synced
//! ```

use std::path::{Path, PathBuf};

pub const LOCK: &str = "LOCK";
pub const LOG: &str = "log";
pub const CHECKPOINT_A: &str = "checkpoint.a";
pub const CHECKPOINT_B: &str = "checkpoint.b";
pub const TMP_SUFFIX: &str = ".tmp";

pub const CLEAN: &str = "clean";

/// The mark of a clean close ([`crate::Store::close`]).
pub fn clean(dir: &Path) -> PathBuf {
    dir.join(CLEAN)
}

pub fn lock(dir: &Path) -> PathBuf {
    dir.join(LOCK)
}

pub const WAIT: &str = "LOCK.wait";

/// Where an open waiting for [`lock`] says so ([`crate::Store::others_wait`]).
pub fn wait(dir: &Path) -> PathBuf {
    dir.join(WAIT)
}

pub fn log(dir: &Path) -> PathBuf {
    dir.join(LOG)
}

/// The checkpoint file that holds generation `generation` (odd: a, even: b).
pub fn checkpoint(dir: &Path, generation: u64) -> PathBuf {
    dir.join(if generation % 2 == 1 {
        CHECKPOINT_A
    } else {
        CHECKPOINT_B
    })
}

pub fn checkpoints(dir: &Path) -> [PathBuf; 2] {
    [dir.join(CHECKPOINT_A), dir.join(CHECKPOINT_B)]
}

/// The temporary name under which `path` is built before being renamed into place.
pub fn tmp(path: &Path) -> PathBuf {
    let mut s = path.as_os_str().to_os_string();
    s.push(TMP_SUFFIX);
    PathBuf::from(s)
}

pub const SEGMENT_PREFIX: &str = "seg-";

/// The segment file numbered `id`.
pub fn segment(dir: &Path, id: u64) -> PathBuf {
    dir.join(format!("{SEGMENT_PREFIX}{id:016x}"))
}

/// The number of a segment file's name, if it is one.
pub fn segment_id(name: &str) -> Option<u64> {
    let hex = name.strip_prefix(SEGMENT_PREFIX)?;
    (hex.len() == 16).then(|| u64::from_str_radix(hex, 16).ok())?
}
