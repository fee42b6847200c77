//! The rrdtool commands over a ringlet store: argument checks in rrdtool's order, the work,
//! and the exact text rrdtool prints.
//!
//! Each command returns an [`Outcome`]: what goes to stdout, and rrdtool's error message if it
//! failed (printed as `ERROR: <msg>` on stderr, exit status 1). Argument errors are found
//! before the store is opened; the store is opened once, and closed (committed) before the
//! command returns, also after a failed update whose earlier arguments were applied.

mod check;
mod modify;
mod read;
mod resize;
mod tune;
mod write;

pub use check::check;
pub use read::{dump, fetch_cmd, first, info, last, lastupdate, xport};
pub use resize::resize;
pub use tune::tune;
pub use write::{create, restore, restore_flags, restore_input, update, update_target};

use crate::getopt::Opt;
use crate::store;
use engine::Store;
use rrd::Rrd;
use std::cell::RefCell;
use std::path::Path;

pub use proto::run::Outcome;

/// A check of a name: Err is the message a refused one gets.
pub type NameCheck<'a> = dyn Fn(&str) -> Result<(), String> + 'a;

/// The environment of one invocation.
pub struct Ctx<'a> {
    pub store_dir: &'a Path,
    /// Wall clock: seconds and microseconds.
    pub now: (i64, i64),
    /// A store already open: pipe mode (`ringlet -`) keeps it across commands, and the daemon
    /// lends its own. None: the command opens `store_dir` and closes it.
    pub shared: Option<&'a RefCell<&'a mut Store>>,
    /// Commit after each command on a shared store (pipe mode); the daemon commits itself.
    pub commit_each: bool,
    /// Run inside `ringlet serve` for a client beside it: files are the client's, so the
    /// input of `restore` comes from the client (`input`) and files to write go back to it.
    pub remote: bool,
    /// `restore`'s XML when `remote` (None: the client could not read it).
    pub input: Option<&'a str>,
    /// Names of the series the command created (create, restore): the daemon gives them
    /// placeholders and fresh ingest state.
    pub written: RefCell<Vec<String>>,
    /// The daemon's check of a name a command would create (its `-B`: no symbolic link
    /// below the base directory), as CREATE checks it: a name refused is not created, and
    /// the command fails with the message.
    pub may_create: Option<&'a NameCheck<'a>>,
}

impl<'a> Ctx<'a> {
    /// A command that opens the store in `dir` for itself.
    pub fn local(store_dir: &'a Path, now: (i64, i64)) -> Ctx<'a> {
        Ctx {
            store_dir,
            now,
            shared: None,
            commit_each: true,
            remote: false,
            input: None,
            written: RefCell::new(Vec::new()),
            may_create: None,
        }
    }

    /// Whether the command may create series `name` (see [`Ctx::may_create`]).
    pub(crate) fn may_create(&self, name: &str) -> Result<(), String> {
        self.may_create.map_or(Ok(()), |check| check(name))
    }

    pub(crate) fn wrote(&self, name: &str) {
        self.written.borrow_mut().push(name.to_string());
    }
}

/// A `--daemon` option the binary did not take off before the command (it takes them all).
pub(crate) const NO_DAEMON: &str = "--daemon is not allowed here";

pub(crate) const fn opt(long: &'static str, short: char, takes_value: bool) -> Opt {
    Opt {
        long,
        short,
        takes_value,
    }
}

/// Run `f` on the opened store and close it (committing) afterwards, even if `f` failed.
pub fn with_store(ctx: &Ctx, f: impl FnOnce(&mut Store) -> Outcome) -> Outcome {
    if let Some(cell) = ctx.shared {
        let mut st = cell.borrow_mut();
        let mut out = f(&mut st);
        if ctx.commit_each {
            if let Err(e) = st.commit() {
                if out.error.is_none() {
                    out.error = Some(e.to_string());
                }
            }
        }
        return out;
    }
    run_and_close(store::open(ctx.store_dir), f)
}

/// Run `f` on a store this command opened, then close it (committing), even if `f` failed.
fn run_and_close(opened: Result<Store, String>, f: impl FnOnce(&mut Store) -> Outcome) -> Outcome {
    let mut st = match opened {
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

/// [`with_store`] for a command that writes the series `names` alone (update, tune, resize,
/// a create that reads no other series): on its own, the store is opened for them
/// ([`store::open_writing`]: the engine opens it whole where writing them alone is not
/// safe or cheap), and closed with one commit. `exists`: the store must exist already (the
/// series is read: `given` is missing otherwise).
pub(crate) fn writing(
    ctx: &Ctx,
    names: &[String],
    given: &str,
    exists: bool,
    f: impl FnOnce(&mut Store) -> Outcome,
) -> Outcome {
    if ctx.shared.is_some() {
        return with_store(ctx, f);
    }
    if exists && !ctx.store_dir.exists() {
        return Outcome::err(format!("opening '{given}': No such file or directory"));
    }
    run_and_close(store::open_writing(ctx.store_dir, names), f)
}

/// [`with_store`] for a command that reads RRD `given` and writes nothing: on its own, the
/// store is opened for that series alone ([`store::open_reading`]).
pub(crate) fn read_one(ctx: &Ctx, given: &str, f: impl FnOnce(&mut Store) -> Outcome) -> Outcome {
    if ctx.shared.is_some() {
        return with_store(ctx, f);
    }
    if !ctx.store_dir.exists() {
        return Outcome::err(format!("opening '{given}': No such file or directory"));
    }
    let name = match store::normalize(given) {
        Ok(n) => n,
        Err(e) => return Outcome::err(e),
    };
    match store::open_reading(ctx.store_dir, &name, given) {
        Ok(mut st) => f(&mut st),
        Err(e) => Outcome::err(e),
    }
}

/// Load an RRD for reading, with rrdtool's "opening" error.
pub fn load<'s>(st: &'s Store, given: &str) -> Result<&'s Rrd, String> {
    let name = store::normalize(given)?;
    st.get(&name)
        .ok_or_else(|| format!("opening '{given}': No such file or directory"))
}
