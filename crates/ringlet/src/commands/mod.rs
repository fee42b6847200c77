//! The rrdtool commands over a ringlet store: argument checks in rrdtool's order, the work,
//! and the exact text rrdtool prints.
//!
//! Each command returns an [`Outcome`]: what goes to stdout, and rrdtool's error message if it
//! failed (printed as `ERROR: <msg>` on stderr, exit status 1). Argument errors are found
//! before the store is opened; the store is opened once, and closed (committed) before the
//! command returns, also after a failed update whose earlier arguments were applied.

mod read;
mod write;

pub use read::{dump, fetch_cmd, first, info, last, lastupdate, xport};
pub use write::{create, restore, update};

use crate::getopt::Opt;
use crate::store;
use engine::Store;
use rrd::Rrd;
use std::cell::RefCell;
use std::path::Path;

/// What a command printed, and its error.
#[derive(Debug, Default)]
pub struct Outcome {
    pub stdout: String,
    pub error: Option<String>,
}

impl Outcome {
    pub(crate) fn ok(stdout: String) -> Outcome {
        Outcome {
            stdout,
            error: None,
        }
    }
    pub(crate) fn err(msg: impl Into<String>) -> Outcome {
        Outcome {
            stdout: String::new(),
            error: Some(msg.into()),
        }
    }
}

/// The environment of one invocation.
pub struct Ctx<'a> {
    pub store_dir: &'a Path,
    /// Wall clock: seconds and microseconds.
    pub now: (i64, i64),
    /// Pipe mode (`ringlet -`): the store stays open across commands; each command commits.
    pub shared: Option<&'a RefCell<Store>>,
}

pub(crate) const NO_DAEMON: &str =
    "ringlet does not support --daemon (rrdcached) on the command line";

pub(crate) fn opt(long: &'static str, short: char, takes_value: bool) -> Opt {
    Opt {
        long,
        short,
        takes_value,
    }
}

/// Run `f` on the opened store and close it (committing) afterwards, even if `f` failed.
pub(crate) fn with_store(ctx: &Ctx, f: impl FnOnce(&mut Store) -> Outcome) -> Outcome {
    if let Some(cell) = ctx.shared {
        let mut st = cell.borrow_mut();
        let mut out = f(&mut st);
        if let Err(e) = st.commit() {
            if out.error.is_none() {
                out.error = Some(e.to_string());
            }
        }
        return out;
    }
    let mut st = match store::open(ctx.store_dir) {
        Ok(s) => s,
        Err(e) => return Outcome::err(e),
    };
    let mut out = f(&mut st);
    if let Err(e) = st.close() {
        if out.error.is_none() {
            out.error = Some(e.to_string());
        }
    }
    out
}

/// [`with_store`] for a command that only reads RRD `given`: a store that does not exist yet
/// is not created, the RRD is simply missing.
pub(crate) fn reading(ctx: &Ctx, given: &str, f: impl FnOnce(&mut Store) -> Outcome) -> Outcome {
    if ctx.shared.is_none() && !ctx.store_dir.exists() {
        return Outcome::err(format!("opening '{given}': No such file or directory"));
    }
    with_store(ctx, f)
}

/// Load an RRD for reading, with rrdtool's "opening" error.
pub(crate) fn load<'s>(st: &'s Store, given: &str) -> Result<&'s Rrd, String> {
    let name = store::normalize(given)?;
    st.get(&name)
        .ok_or_else(|| format!("opening '{given}': No such file or directory"))
}
