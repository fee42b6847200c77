//! A series brought into the store from its `.rrd` file: on first sight (a client such as
//! collectd creates its files itself), and again when someone else changed the file (FORGET
//! after `rrdtool tune`). The file is moved aside only once the store holds its data
//! durably, and a placeholder takes its path.

pub(crate) use super::disk::{disk_stamp, forget_disk, load_error, remember_disk};
use super::Target;
use crate::daemon::{Daemon, Inner};
use crate::log::strerror;
use crate::placeholder;
use proto::Response;

/// Why a file could not be brought into the store.
pub enum Fail {
    /// rrdcached's own message, sent as is.
    Plain(String),
    /// librrd's message: `RRD Error: ` or `rrd_fetch_r failed: ` goes before it.
    Rrd(String),
}

impl Fail {
    pub fn reply(self, rrd_prefix: &str) -> Response {
        match self {
            Fail::Plain(m) => Response::err(m),
            Fail::Rrd(m) => Response::err(format!("{rrd_prefix}{m}")),
        }
    }
}

/// Make sure `t` is in the store, importing its `.rrd` file from disk on first sight (a
/// client such as collectd creates files itself). Ok(false): no such series or file.
/// `update`: UPDATE's own check of a non-file, else librrd's failure to map it.
pub fn ensure(d: &Daemon, inner: &mut Inner, t: &Target, update: bool) -> Result<bool, Fail> {
    if inner.store.get(&t.name).is_some() {
        return Ok(true);
    }
    let path = t.disk.as_path();
    let beneath = inner.places.beneath.as_deref();
    let regular = match beneath {
        // Under -B: not through a link below the base (Permission denied), nor at the file.
        Some(_) => {
            let at = match crate::beneath::At::of(beneath, path, false) {
                Ok(at) => at,
                Err(e) if e.kind() == std::io::ErrorKind::PermissionDenied => {
                    return Err(Fail::Plain(format!("{}: Permission denied", t.abs)))
                }
                Err(_) => return Ok(false),
            };
            match at.stat() {
                Ok(Some(st)) => st.st_mode & libc::S_IFMT == libc::S_IFREG,
                _ => return Ok(false),
            }
        }
        // Else links are followed, as rrdcached does.
        None => match std::fs::metadata(path) {
            Ok(m) => m.is_file(),
            Err(_) => return Ok(false),
        },
    };
    if !regular {
        return Err(if update {
            Fail::Plain(format!("Not a regular file: {}", t.abs))
        } else {
            Fail::Rrd(format!("mmaping file '{}': No such device", t.abs))
        });
    }
    if placeholder::inspect(beneath, path) == placeholder::Found::Placeholder {
        if adopt_renamed(d, inner, t).map_err(Fail::Rrd)? {
            return Ok(true);
        }
        // A placeholder whose series is gone (another store, or one reset by hand).
        return Err(Fail::Rrd(format!(
            "'{}' is a ringlet placeholder, and the store {} has no series '{}'",
            t.abs,
            inner.places.store.display(),
            t.name
        )));
    }
    import(d, inner, t, false)?;
    Ok(true)
}

/// A placeholder at `t`'s path (where the store has no series) that names another series of
/// this store, whose own path holds no placeholder any more: someone renamed the file (Cacti
/// renames its RRDs with PHP's `rename()`, `mv` does the same). That series takes `t`'s name,
/// with every value accepted for it. Ok(false): not such a placeholder (a copy, another
/// store's, or a series that is gone), nothing changed.
pub(crate) fn adopt_renamed(d: &Daemon, inner: &mut Inner, t: &Target) -> Result<bool, String> {
    if inner.store.get(&t.name).is_some() {
        return Ok(false);
    }
    let beneath = inner.places.beneath.as_deref();
    let Ok(bytes) = crate::beneath::At::of(beneath, &t.disk, false).and_then(|at| at.read()) else {
        return Ok(false);
    };
    let Some(from) = placeholder::names(&inner.places, &bytes) else {
        return Ok(false);
    };
    if from == t.name || inner.store.get(&from).is_none() {
        return Ok(false);
    }
    let f = d.resolve(&from)?;
    if placeholder::inspect(inner.places.beneath.as_deref(), &f.disk) != placeholder::Found::Missing
    {
        // Its own path still holds something: a copy, not a rename.
        return Ok(false);
    }
    if !super::life::rename_locked(d, inner, &f, t)? {
        return Ok(false);
    }
    crate::log::line(&format!(
        "{} holds the placeholder of {} and {} is gone: the series was renamed to {}",
        t.abs, f.name, f.abs, t.name
    ));
    Ok(true)
}

/// Read `t`'s `.rrd` file into the store (replacing the series when `replace`), commit, then
/// move the file aside and leave a placeholder at its path (`placeholder::move_aside`): the
/// file is not deleted before the store holds its data durably.
pub(crate) fn import(d: &Daemon, inner: &mut Inner, t: &Target, replace: bool) -> Result<(), Fail> {
    let path = t.disk.as_path();
    let bytes = read_file(inner.places.beneath.as_deref(), path)
        .map_err(|e| Fail::Plain(format!("Cannot read/write {}: {}", t.abs, strerror(&e))))?;
    let rrd = rrd::rrdfile::read(&bytes).map_err(|e| Fail::Rrd(load_error(&t.abs, &bytes, &e)))?;
    drop(bytes);
    inner
        .store
        .create(&t.name, rrd, replace)
        .map_err(|e| Fail::Rrd(e.to_string()))?;
    d.reset_series(inner, &t.name);
    d.commit(inner).map_err(Fail::Rrd)?;
    let _ = set_aside(inner, t);
    Ok(())
}

/// The user's file at `path`: under -B (`beneath`) through no link below the base.
fn read_file(
    beneath: Option<&std::path::Path>,
    path: &std::path::Path,
) -> std::io::Result<Vec<u8>> {
    match beneath {
        Some(b) => crate::beneath::At::of(Some(b), path, false).and_then(|at| at.read()),
        None => std::fs::read(path),
    }
}

/// The user's `.rrd` file at `t`'s path, whose series a commit holds, moved aside into the
/// store's imported directory with a placeholder at its path (`placeholder::move_aside`),
/// with a log line. Err: it could not be; the series is in the store and the file still at
/// its path, so nothing is lost, but a later change of the file is read again (FORGET).
pub(crate) fn set_aside(inner: &mut Inner, t: &Target) -> Result<(), String> {
    match placeholder::move_aside(&inner.places, &t.disk, &t.abs, &t.name) {
        Ok(dest) => {
            crate::log::line(&format!(
                "imported {} into the store; the file is now at {}",
                t.abs,
                dest.display()
            ));
            forget_disk(inner, t);
            Ok(())
        }
        Err(e) => {
            crate::log::line(&format!(
                "imported {} into the store, but could not move it aside: {e}",
                t.abs
            ));
            remember_disk(inner, t);
            Err(e.to_string())
        }
    }
}

/// UPDATE's check that `t` is a series (imported from its file on first sight).
pub(crate) fn known(d: &Daemon, inner: &mut Inner, t: &Target) -> Result<(), Response> {
    match ensure(d, inner, t, true) {
        Ok(true) => Ok(()),
        Ok(false) => Err(Response::err(format!("No such file: {}", t.abs))),
        Err(e) => Err(e.reply("RRD Error: ")),
    }
}

/// The RUN command of `ringlet import rrd --move` beside a daemon whose `-b` holds the files:
/// [`adopt_files`].
pub const ADOPT: &str = "adopt-files";

/// Bring the `.rrd` files at the paths of series `names` (under `-b`) into the store: each
/// read and parsed, stored, then read back as `rrdtool dump` prints it and compared with the
/// file's dump while the store is locked, so no client's update comes between; then one
/// commit for them all, and each file moved aside with a placeholder at its path, as a file
/// found on first sight is. One line per name: `imported <abs>`, `there <abs>` (the store
/// has the series), `missing <abs>` (no `.rrd` file there), or `failed <abs>: <why>`.
pub fn adopt_files(d: &Daemon, names: &[String]) -> String {
    let mut lines = vec![String::new(); names.len()];
    // Read and parsed before the lock is taken.
    let mut ready = Vec::new();
    let beneath = d.lock().places.beneath.clone();
    for (i, name) in names.iter().enumerate() {
        let t = match d.resolve(name) {
            Ok(t) => t,
            Err(e) => {
                lines[i] = format!("failed {name}: {e}");
                continue;
            }
        };
        match placeholder::inspect(beneath.as_deref(), &t.disk) {
            placeholder::Found::Rrd => {}
            placeholder::Found::Placeholder => {
                lines[i] = format!("there {}", t.abs);
                continue;
            }
            _ => {
                lines[i] = format!("missing {}", t.abs);
                continue;
            }
        }
        let parsed = read_file(beneath.as_deref(), &t.disk)
            .map_err(|e| strerror(&e))
            .and_then(|b| rrd::rrdfile::read(&b).map_err(|e| load_error(&t.abs, &b, &e)));
        match parsed {
            Ok(rrd) => {
                let want = rrd::dump::dump_xml(&rrd, "none");
                ready.push((i, t, rrd, want));
            }
            Err(e) => lines[i] = format!("failed {}: {e}", t.abs),
        }
    }
    let mut inner = d.lock();
    let mut stored = Vec::new();
    for (i, t, rrd, want) in ready {
        if inner.store.get(&t.name).is_some() {
            lines[i] = format!("there {}", t.abs);
            continue;
        }
        if let Err(e) = inner.store.create(&t.name, rrd, false) {
            lines[i] = format!("failed {}: {e}", t.abs);
            continue;
        }
        let back = inner
            .store
            .get(&t.name)
            .map(|r| rrd::dump::dump_xml(r, "none"));
        if back.as_deref() != Some(want.as_str()) {
            let _ = inner.store.remove(&t.name);
            lines[i] = format!(
                "failed {}: read back, the series differs from the file",
                t.abs
            );
            continue;
        }
        d.reset_series(&mut inner, &t.name);
        stored.push((i, t));
    }
    if !stored.is_empty() {
        if let Err(e) = d.commit(&mut inner) {
            for (i, t) in &stored {
                lines[*i] = format!("failed {}: commit: {e}", t.abs);
            }
            return lines.join("\n") + "\n";
        }
    }
    for (i, t) in stored {
        lines[i] = match set_aside(&mut inner, &t) {
            Ok(()) => format!("imported {}", t.abs),
            Err(e) => format!("imported {} (not moved aside: {e})", t.abs),
        };
    }
    lines.join("\n") + "\n"
}
