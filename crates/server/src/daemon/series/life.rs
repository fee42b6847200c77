//! A series made, replaced, removed and renamed: the store's change, the entry's reset, the
//! placeholder under `-b`. CREATE, carbon's first point, the CLI beside the daemon and the
//! view's writes all come here; each caller commits (the view's hooks commit themselves).

use super::disk::{forget_disk, load_error};
use super::Target;
use crate::daemon::{Daemon, Inner};
use crate::log::strerror;
use crate::placeholder;
use rrd::Rrd;

/// Put the placeholder of a new series `t` at its path (its directory made first: under -R,
/// or where series already live under that name).
/// `durable`: synced as well (placeholder.rs, `write_durable`).
pub(crate) fn write_placeholder(inner: &Inner, t: &Target, durable: bool) -> Result<(), String> {
    let path = t.disk.as_path();
    // The directories are made as the placeholder is written (beneath the base, -B).
    let write = if durable {
        placeholder::write_durable
    } else {
        placeholder::write
    };
    write(&inner.places, path, &t.abs, &t.name).map_err(|e| {
        let mut msg = format!("RRD Error: creating '{}': {}", t.abs, strerror(&e));
        // Which user and which directory: the daemon may run as another user (-U) than
        // the one whose directory it is.
        if e.kind() == std::io::ErrorKind::PermissionDenied {
            let dir = path.parent().unwrap_or(path);
            msg.push_str(&format!(
                " (ringlet runs as user {}, who may not write in {})",
                crate::sys::user_name(crate::sys::euid()),
                dir.display()
            ));
        }
        msg
    })
}

/// Make `rrd` the series `t` (replacing one of that name), with its placeholder; committed by
/// the caller.
pub(crate) fn place_series(
    d: &Daemon,
    inner: &mut Inner,
    t: &Target,
    rrd: Rrd,
) -> Result<(), String> {
    write_placeholder(inner, t, false)?;
    inner
        .store
        .create(&t.name, rrd, true)
        .map_err(|e| format!("RRD Error: {e}"))?;
    d.reset_series(inner, &t.name);
    forget_disk(inner, t);
    Ok(())
}

/// The view's changes to the store (crate::view): a file written whole through it becomes the
/// series `name` (replacing one of that name), as an import of a `.rrd` file does; the store
/// holds it durably when this returns, and its placeholder is under `-b`.
pub(crate) fn view_import(d: &Daemon, name: &str, bytes: &[u8]) -> Result<(), String> {
    let t = d.resolve(name)?;
    let rrd = rrd::rrdfile::read(bytes).map_err(|e| load_error(&t.abs, bytes, &e))?;
    let mut inner = d.lock();
    place_series(d, &mut inner, &t, rrd)?;
    d.commit(&mut inner)?;
    crate::log::line(&format!("view: {} written whole: imported", t.name));
    Ok(())
}

/// The view's unlink of series `name`: the series is removed from the store (durably when
/// this returns), values queued for it are dropped, and its placeholder under `-b` removed.
/// Ok(false): no such series.
pub(crate) fn view_remove(d: &Daemon, name: &str) -> Result<bool, String> {
    let t = d.resolve(name)?;
    let mut inner = d.lock();
    if inner.store.get(&t.name).is_none() {
        return Ok(false);
    }
    remove_locked(d, &mut inner, &t)?;
    d.commit(&mut inner)?;
    crate::log::line(&format!("view: {} removed", t.name));
    Ok(true)
}

fn remove_locked(d: &Daemon, inner: &mut Inner, t: &Target) -> Result<(), String> {
    if let Some(e) = d.index.get(&t.name) {
        e.lock().remove();
    }
    inner.suspended.remove(&t.name);
    inner.store.remove(&t.name).map_err(|e| e.to_string())?;
    forget_disk(inner, t);
    // Only a placeholder is removed: a file someone put there stays.
    if let Ok(at) = crate::beneath::At::of(inner.places.beneath.as_deref(), &t.disk, false) {
        if placeholder::inspect(inner.places.beneath.as_deref(), &t.disk)
            == placeholder::Found::Placeholder
        {
            let _ = at.remove();
        }
    }
    Ok(())
}

/// The view's rename of series `from` to `to` (replacing a series named `to`): every value
/// accepted for `from` goes with it. Durable when this returns.
pub(crate) fn view_rename(d: &Daemon, from: &str, to: &str) -> Result<bool, String> {
    let (f, t) = (d.resolve(from)?, d.resolve(to)?);
    let mut inner = d.lock();
    if !rename_locked(d, &mut inner, &f, &t)? {
        return Ok(false);
    }
    crate::log::line(&format!("view: {} renamed to {}", f.name, t.name));
    Ok(true)
}

/// Series `f` becomes `t` (replacing a series named `t`), with every value accepted for it,
/// durably when this returns; `t`'s placeholder is written, `f`'s removed if it is one.
/// Ok(false): no series `f`.
pub(crate) fn rename_locked(
    d: &Daemon,
    inner: &mut Inner,
    f: &Target,
    t: &Target,
) -> Result<bool, String> {
    let Some(rrd) = crate::read::with_locked(d, inner, &f.name, Rrd::clone).map_err(|e| e.0)?
    else {
        return Ok(false);
    };
    place_series(d, inner, t, rrd)?;
    remove_locked(d, inner, f)?;
    d.commit(inner)?;
    Ok(true)
}
