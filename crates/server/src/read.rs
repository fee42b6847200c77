//! The one read path: every reader of a series' values (rrdcached's FETCH, INFO, LAST,
//! FIRST and DUMP, the web API, Graphite's /render, the view's files and sizes) comes
//! through [`with`]: under the store lock, the series' queued values are applied first
//! (reads see every value accepted), then the reader looks at the series. A reply that takes
//! long to build works on [`copy`], the series' packed archives copied under the lock (a
//! byte or two a value, far cheaper than the reply), after the lock is let go. [`all`]
//! applies every series' values, for the CLI beside the daemon, whose command may read any
//! series. rrdcached's reads name a client's file: `rrdcached::fetch::with_file` resolves it and
//! imports it on first sight, then reads through [`with_locked`].

use crate::daemon::{Daemon, Inner};
use rrd::Rrd;

/// `f` on series `name` with every accepted value applied, under the store lock held in
/// `inner`. None: no such series.
pub fn with_locked<R>(
    d: &Daemon,
    inner: &mut Inner,
    name: &str,
    f: impl FnOnce(&Rrd) -> R,
) -> Option<R> {
    d.apply_series(inner, name);
    inner.store.get(name).map(f)
}

/// `f` on series `name` with every accepted value applied (the store lock held meanwhile).
/// None: no such series.
pub fn with<R>(d: &Daemon, name: &str, f: impl FnOnce(&Rrd) -> R) -> Option<R> {
    with_locked(d, &mut d.lock(), name, f)
}

/// A copy of series `name` with every accepted value applied, for a reply built after the
/// store lock is let go. None: no such series.
pub fn copy(d: &Daemon, name: &str) -> Option<Rrd> {
    with(d, name, Rrd::clone)
}

/// The store with every accepted value of every series applied, locked: for a reader that
/// may read any series (a command of the CLI beside the daemon, `crate::remote`).
pub fn all(d: &Daemon) -> std::sync::MutexGuard<'_, Inner> {
    let mut inner = d.lock();
    d.apply_all(&mut inner);
    inner
}
