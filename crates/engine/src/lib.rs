//! The ringlet store: many RRDs in one directory, time-major commits, recovery.
//!
//! API contract (implementation in progress): see docs/ARCHITECTURE.md.

use rrd::{Rrd, RrdError, RowWrite, Sample};
use std::path::Path;
use std::time::Duration;

/// Errors a caller can act on.
#[derive(Debug)]
pub enum Error {
    /// The RRD layer refused the operation; `RrdError::msg` is rrdtool's text.
    Rrd(RrdError),
    /// `create` without overwrite on an existing name.
    Exists(String),
    /// No RRD of that name.
    NotFound(String),
    /// Another process holds the store's lock.
    Locked(std::path::PathBuf),
    /// An earlier fsync or write failed; the store refuses writes until reopened.
    PreviousIo,
    /// On-disk data that fails its checksum or framing where it must not (not a torn tail).
    Corrupt { file: std::path::PathBuf, offset: u64, what: String },
    Io(std::io::Error),
}

impl std::fmt::Display for Error {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Error::Rrd(e) => write!(f, "{e}"),
            Error::Exists(n) => write!(f, "{n}: File exists"),
            Error::NotFound(n) => write!(f, "opening '{n}': No such file or directory"),
            Error::Locked(p) => write!(f, "store {} is locked by another process", p.display()),
            Error::PreviousIo => write!(f, "an earlier write to the store failed; reopen it"),
            Error::Corrupt { file, offset, what } => {
                write!(f, "{}: corrupt at offset {offset}: {what}", file.display())
            }
            Error::Io(e) => write!(f, "{e}"),
        }
    }
}

impl std::error::Error for Error {}

impl From<std::io::Error> for Error {
    fn from(e: std::io::Error) -> Self {
        Error::Io(e)
    }
}

/// How a store commits.
#[derive(Debug, Clone)]
pub struct Options {
    /// Commit at least this often while updates are pending (the loss window). None: only on
    /// explicit commit, size limit and close.
    pub commit_interval: Option<Duration>,
    /// Commit when this many bytes of encoded updates are pending.
    pub max_pending_bytes: usize,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            commit_interval: Some(Duration::from_secs(300)),
            max_pending_bytes: 64 << 20,
        }
    }
}

/// What one commit wrote.
#[derive(Debug, Clone, Default)]
pub struct CommitStats {
    pub series: usize,
    pub samples: usize,
    pub bytes: u64,
}

/// A store directory, opened for reading and writing by this process alone.
pub struct Store {
    _private: (),
}

impl Store {
    /// Open (creating if absent) the store in `dir`: take its lock, load the last checkpoint,
    /// replay the log after it, cut a torn tail.
    pub fn open(dir: &Path, opts: Options) -> Result<Store, Error> {
        let _ = (dir, opts);
        unimplemented!("engine in progress")
    }

    pub fn get(&self, name: &str) -> Option<&Rrd> {
        let _ = name;
        unimplemented!("engine in progress")
    }

    /// Names of all RRDs, sorted.
    pub fn names(&self) -> Vec<String> {
        unimplemented!("engine in progress")
    }

    /// Add an RRD (a fresh `create`, or a `restore` with data). `Error::Exists` if the name
    /// is taken and `overwrite` is false.
    pub fn create(&mut self, name: &str, rrd: Rrd, overwrite: bool) -> Result<(), Error> {
        let _ = (name, rrd, overwrite);
        unimplemented!("engine in progress")
    }

    pub fn remove(&mut self, name: &str) -> Result<(), Error> {
        let _ = name;
        unimplemented!("engine in progress")
    }

    /// Apply one sample to `name` (see `Rrd::apply`) and queue it for the next commit.
    /// `Error::Rrd` carries rrdtool's message; a partially applied sample is still logged.
    pub fn update(
        &mut self,
        name: &str,
        sample: &Sample,
        sink: &mut dyn FnMut(RowWrite),
    ) -> Result<(), Error> {
        let _ = (name, sample, sink);
        unimplemented!("engine in progress")
    }

    /// Make everything accepted so far durable: one appended record, one fdatasync.
    pub fn commit(&mut self) -> Result<CommitStats, Error> {
        unimplemented!("engine in progress")
    }

    /// Commit and release the lock.
    pub fn close(self) -> Result<(), Error> {
        unimplemented!("engine in progress")
    }
}
