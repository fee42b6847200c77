//! The one read path: every reader of a series' values (rrdcached's FETCH, INFO, LAST,
//! FIRST and DUMP, the web API, Graphite's /render, the view's files and sizes, the CLI's
//! graphs) comes through here, and the only way to a series' values is [`Fresh`], which
//! only [`Inner::read`] makes: under the store lock, once the series' queued values are
//! applied (reads see every value accepted) and the store is readable (nothing held in
//! memory is read after a failed write: [`Daemon::unreadable`]). The store is private to
//! `crate::daemon`, so a reader that skips either rule does not compile.
//!
//! [`with`] and [`with_locked`] run a closure on a fresh series; a reply that takes long to
//! build works on [`copy`], the series' packed archives copied under the lock (a byte or two
//! a value, far cheaper than the reply), after the lock is let go. [`all`] applies every
//! series' values, for the CLI beside the daemon, whose command may read any series.
//! rrdcached's reads name a client's file: `rrdcached::fetch::with_file` resolves it and
//! imports it on first sight, then reads through [`with_locked`].

use super::{Daemon, Inner};
use rrd::Rrd;
use std::ops::Deref;

/// A series with every accepted value applied, from a readable store: made only by
/// [`Inner::read`].
pub struct Fresh<'a> {
    rrd: &'a Rrd,
}

impl Deref for Fresh<'_> {
    type Target = Rrd;
    fn deref(&self) -> &Rrd {
        self.rrd
    }
}

/// Why nothing is read: the store failed a write ([`Daemon::unreadable`]'s text).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Unreadable(pub String);

impl std::fmt::Display for Unreadable {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl Inner {
    /// Series `name` with every accepted value applied. Ok(None): no such series.
    pub fn read(&mut self, d: &Daemon, name: &str) -> Result<Option<Fresh<'_>>, Unreadable> {
        if let Some(why) = d.unreadable() {
            return Err(Unreadable(why));
        }
        d.apply_series(self, name);
        Ok(self.store.get(name).map(|rrd| Fresh { rrd }))
    }
}

/// `f` on series `name` with every accepted value applied, under the store lock held in
/// `inner`. Ok(None): no such series.
pub fn with_locked<R>(
    d: &Daemon,
    inner: &mut Inner,
    name: &str,
    f: impl FnOnce(&Rrd) -> R,
) -> Result<Option<R>, Unreadable> {
    Ok(inner.read(d, name)?.map(|r| f(&r)))
}

/// `f` on series `name` with every accepted value applied (the store lock held meanwhile).
/// Ok(None): no such series.
pub fn with<R>(d: &Daemon, name: &str, f: impl FnOnce(&Rrd) -> R) -> Result<Option<R>, Unreadable> {
    with_locked(d, &mut d.lock(), name, f)
}

/// A copy of series `name` with every accepted value applied, for a reply built after the
/// store lock is let go. Ok(None): no such series.
pub fn copy(d: &Daemon, name: &str) -> Result<Option<Rrd>, Unreadable> {
    with(d, name, Rrd::clone)
}

/// The store with every accepted value of every series applied, locked: for a reader that
/// may read any series (a command of the CLI beside the daemon, `crate::remote`).
pub fn all(d: &Daemon) -> std::sync::MutexGuard<'_, Inner> {
    let mut inner = d.lock();
    d.apply_all(&mut inner);
    inner
}
