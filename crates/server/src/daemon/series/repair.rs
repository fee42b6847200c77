//! The placeholders put right when the daemon opens the store: every series gets its
//! placeholder under `-b`, and full-size copies that ringlet 0.1 wrote are replaced (or moved
//! aside when someone changed them).

use crate::beneath::At;
use crate::daemon::Daemon;
use crate::placeholder::{inspect, inspect_at, move_aside, write, Found, Places};
use std::io::Read;
use std::path::{Path, PathBuf};

/// What [`repair`] did.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Repaired {
    /// Placeholders written where the path was missing or empty.
    pub written: u64,
    /// Full-size copies of earlier versions replaced (the store held all they had).
    pub copies_replaced: u64,
    /// Bytes those copies took.
    pub copy_bytes: u64,
    /// Files that differed from the store, moved aside.
    pub moved_aside: Vec<(String, PathBuf)>,
}

/// Every series in `names` gets its placeholder at its path: under the base directory, or
/// at an absolute name (a client of a daemon without `-b`, or outside it without `-B`). A
/// missing or empty file gets a placeholder, its directories made again (so a
/// stat-then-create client does not create the series again over its data, also after a
/// power cut took the placeholder and the directory a client had just made); a full-size
/// `.rrd` copy is replaced when the store holds everything it has (same DS and RRA counts,
/// last update not later than the store's), and otherwise moved aside, since someone
/// changed it. Left alone: relative names without a base directory (carbon's, the CLI's
/// own) and, under `-B`, absolute names (outside the base: no client reaches them).
///
/// Looking takes no lock (a million series take seconds, on two threads); a path found in
/// need of work is looked at again and acted on with the store locked, so a client's
/// CREATE or import of the same series meanwhile is seen, and a series gone is left alone.
/// `stop` is checked between batches: a daemon stopping ends the work there.
pub fn repair(
    d: &Daemon,
    places: &Places,
    mut names: Vec<String>,
    stop: &dyn Fn() -> bool,
) -> Repaired {
    let mut out = Repaired::default();
    names.retain(|n| place(d, n).is_some());
    // Taken from the end a batch at a time, so each batch's names are freed as it is done.
    names.reverse();
    while !names.is_empty() && !stop() {
        let mut batch = names.split_off(names.len().saturating_sub(REPAIR_BATCH));
        batch.reverse();
        let paths: Vec<String> = batch
            .iter()
            .map(|n| place(d, n).map_or_else(String::new, |(_, at)| at))
            .collect();
        let found = inspect_all(places.beneath.as_deref(), &paths);
        for (name, found) in batch.into_iter().zip(found) {
            if !matches!(found, Found::Placeholder | Found::Other) {
                act(d, places, name, &mut out);
            }
        }
    }
    out
}

/// Where series `name`'s placeholder goes ([`Daemon::placeholder_path`]): its absolute name
/// as clients give it, and the path the daemon reaches it by.
fn place(d: &Daemon, name: &str) -> Option<(String, String)> {
    let t = d.placeholder_path(name)?;
    Some((t.abs, t.disk.to_str()?.to_string()))
}

/// Names a [`repair`] looks at between checks of its `stop`.
const REPAIR_BATCH: usize = 16 << 10;

/// Give series `name` its placeholder, with the store locked: what is at its path is looked
/// at again first.
fn act(d: &Daemon, places: &Places, name: String, out: &mut Repaired) {
    let Some((abs, at)) = place(d, &name) else {
        return;
    };
    let inner = d.lock();
    // A stopping daemon writes nothing more under -b once its last commit has the lock.
    if d.closing() {
        return;
    }
    let Some(rrd) = inner.store.get(&name) else {
        return;
    };
    let path = Path::new(&at);
    let beneath = places.beneath.as_deref();
    match inspect(beneath, path) {
        Found::Placeholder | Found::Other => {}
        Found::Empty | Found::Missing => {
            if write(places, path, &abs, &name).is_ok() {
                out.written += 1;
            }
        }
        Found::Rrd => {
            let opened = At::of(beneath, path, false).and_then(|a| a.open_read());
            let len = opened
                .as_ref()
                .ok()
                .and_then(|f| f.metadata().ok())
                .map_or(0, |m| m.len());
            let stale = opened
                .ok()
                .and_then(peek_file)
                .is_some_and(|(ds, rra, last)| {
                    ds == rrd.schema.ds.len() && rra == rrd.schema.rra.len() && last <= rrd.last_up
                });
            if stale {
                if write(places, path, &abs, &name).is_ok() {
                    out.copies_replaced += 1;
                    out.copy_bytes += len;
                }
            } else if let Ok(dest) = move_aside(places, path, &abs, &name) {
                out.moved_aside.push((name, dest));
            }
        }
    }
}

/// [`inspect`] of every series' path, in the order of `paths`, on a few threads.
fn inspect_all(beneath: Option<&Path>, paths: &[String]) -> Vec<Found> {
    const THREADS: usize = 2;
    let per = paths.len().div_ceil(THREADS).max(1);
    std::thread::scope(|sc| {
        let parts: Vec<_> = paths
            .chunks(per)
            .map(|part| {
                let h = sc.spawn(move || {
                    let mut dir = DirCache::default();
                    part.iter()
                        .map(|p| dir.inspect(beneath, p))
                        .collect::<Vec<_>>()
                });
                (part.len(), h)
            })
            .collect();
        // A part whose thread failed is left alone ("Other"), never misaligned.
        parts
            .into_iter()
            .flat_map(|(n, h)| {
                h.join()
                    .ok()
                    .filter(|v| v.len() == n)
                    .unwrap_or_else(|| (0..n).map(|_| Found::Other).collect())
            })
            .collect()
    })
}

/// [`inspect`] of names in turn, opening each file relative to its directory, held open
/// from one name to the next (names come sorted, so a directory's files come together):
/// a path lookup of the base's components per series was a fifth of the time a daemon's
/// open spent on placeholders.
#[derive(Default)]
struct DirCache {
    path: String,
    dir: Option<std::fs::File>,
}

impl DirCache {
    fn inspect(&mut self, beneath: Option<&Path>, full: &str) -> Found {
        let (parent, file) = match full.rsplit_once('/') {
            Some((p, f)) if !f.is_empty() => (p, f),
            _ => return inspect(beneath, Path::new(&full)),
        };
        if self.dir.is_none() || self.path != parent {
            self.path = parent.to_string();
            self.dir = At::of(beneath, Path::new(full), false).ok().map(|a| a.dir);
        }
        let (Some(dir), Ok(c)) = (&self.dir, std::ffi::CString::new(file.as_bytes())) else {
            return inspect(beneath, Path::new(full));
        };
        // Each file by name in the directory held open: no descriptor copied a series.
        inspect_at(dir, &c)
    }
}

/// The DS and RRA counts and last update of the `.rrd` file at `path`, from its header.
fn peek_file(mut f: std::fs::File) -> Option<(usize, usize, i64)> {
    let mut head = vec![0u8; 128];
    f.read_exact(&mut head).ok()?;
    let need = rrd::rrdfile::peek_len(&head);
    head.resize(need, 0);
    f.read_exact(&mut head[128..]).ok()?;
    rrd::rrdfile::peek(&head).ok()
}
