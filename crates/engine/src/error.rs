//! What a store's operations fail with.

use rrd::RrdError;

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
    /// The store was opened to read a few series (`Options::only`).
    ReadOnly,
    /// A request the store cannot carry out as asked (a blob written past its longest).
    Invalid(String),
    /// On-disk data that fails its checksum or framing where it must not (not a torn tail).
    Corrupt {
        file: std::path::PathBuf,
        offset: u64,
        what: String,
    },
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
            Error::ReadOnly => write!(f, "the store was opened read-only"),
            Error::Invalid(what) => write!(f, "{what}"),
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

/// Whether `e` is the file system out of room (ENOSPC, EDQUOT): a checkpoint that fails so
/// leaves the older checkpoint and the log as they were, and is tried again; any other
/// failed write or fsync (EIO) leaves the store refusing writes, since what reached the
/// disk is not known.
pub(crate) fn out_of_space(e: &Error) -> bool {
    matches!(e, Error::Io(io) if matches!(
        io.kind(),
        std::io::ErrorKind::StorageFull | std::io::ErrorKind::QuotaExceeded
    ))
}
