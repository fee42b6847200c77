//! What the daemon leaves under the base directory: one small placeholder file per series.
//!
//! The store is the data; the `.rrd` paths under `-b` exist so that clients that `stat()` a
//! file before creating it (gmetad, collectd's `CreateFiles`, Munin, Cacti) find their series
//! and `ls` shows the tree. A placeholder is a few lines of text (more than 128 bytes, so
//! librrd answers `'<file>' is not an RRD file` rather than reading numbers from it; less than
//! one file-system block) that tell a person who opens it where the series lives and how to
//! read it. The daemon never rewrites a placeholder at FLUSH or commit.
//!
//! A real `.rrd` file found at a series' path is the user's: it is imported (on first sight,
//! as before), the import committed, then it is moved aside into `<store>/imported/` (a hard
//! link where the file systems allow, else a copy) and a placeholder is renamed over its path,
//! so the path never goes missing. Full-size copies that ringlet 0.1 wrote at CREATE and FLUSH
//! are replaced by placeholders when the daemon opens the store ([`repair`]).

use crate::beneath::At;
use crate::daemon::Daemon;
use std::io::Read;
use std::path::{Path, PathBuf};

/// The first bytes of every placeholder.
pub const MAGIC: &[u8] = b"ringlet placeholder:";

/// A placeholder is never larger than this (one block of the smallest common file system).
pub const MAX_LEN: u64 = 1024;

/// Where placeholders point people to, and where imported files go.
#[derive(Debug, Clone)]
pub struct Places {
    /// The store directory.
    pub store: PathBuf,
    /// Where imported `.rrd` files are moved: `<store>/imported`.
    pub aside: PathBuf,
    /// The daemon's first address, as `RRDCACHED_ADDRESS` takes it.
    pub address: String,
    /// With `-B`: the base directory as the daemon reaches it; no link below it is followed
    /// ([`crate::beneath`]).
    pub beneath: Option<PathBuf>,
}

impl Places {
    pub fn new(store: &Path, address: String) -> Places {
        Places {
            store: store.to_path_buf(),
            aside: imported_dir(store),
            address,
            beneath: None,
        }
    }

    /// The placeholder's text for series `name` at `abs`.
    pub fn text(&self, abs: &str, name: &str) -> String {
        let store = self.store.display();
        let mut s = format!(
            "ringlet placeholder: not an RRD file.\n\
             The series '{name}' lives in the ringlet store {store}\n\
             and is served by `ringlet serve` at {addr}. Read it through the daemon:\n  \
             RRDCACHED_ADDRESS={addr} rrdtool fetch {abs} AVERAGE\n  \
             ringlet --store {store} fetch {name} AVERAGE\n\
             Real .rrd files: ringlet --store {store} export DIR\n",
            addr = self.address
        );
        // Very long names: keep the first line and the pointer to the store within a block.
        if s.len() as u64 > MAX_LEN {
            s = format!(
                "ringlet placeholder: not an RRD file.\n\
                 This series lives in the ringlet store {store}, served at {}.\n\
                 Read it through the daemon (RRDCACHED_ADDRESS), or write real .rrd files\n\
                 with `ringlet export DIR`.\n",
                self.address
            );
            s.truncate(MAX_LEN as usize - 1);
            s.push('\n');
        }
        s
    }
}

/// `mkdir -p` without recursion: a client's name may be thousands of directories deep, and a
/// connection thread's stack is small (std's `create_dir_all` recurses once per level).
pub fn mkdir_p(dir: &Path) -> std::io::Result<()> {
    let mut missing = Vec::new();
    let mut at = Some(dir);
    while let Some(d) = at {
        if d.as_os_str().is_empty() || d.is_dir() {
            break;
        }
        missing.push(d);
        at = d.parent();
    }
    for d in missing.into_iter().rev() {
        match std::fs::create_dir(d) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists && d.is_dir() => {}
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

/// `<store>/imported`: where `.rrd` files imported from the base directory are kept.
pub fn imported_dir(store: &Path) -> PathBuf {
    store.join("imported")
}

/// Whether `bytes` (the start of a file) are a placeholder.
pub fn is_placeholder(bytes: &[u8]) -> bool {
    bytes.starts_with(MAGIC)
}

/// What the file at `path` is.
#[derive(Debug, PartialEq, Eq)]
pub enum Found {
    Missing,
    /// An empty file (at a series' path: a placeholder a power cut left unwritten).
    Empty,
    Placeholder,
    /// A file that starts as an RRD does.
    Rrd,
    /// Anything else (a directory, another kind of file).
    Other,
}

/// What is at `path`, not following a link there (nor, with `beneath`, in its directories
/// below the base: such a path is [`Found::Other`]).
pub fn inspect(beneath: Option<&Path>, path: &Path) -> Found {
    let at = match At::of(beneath, path, false) {
        Ok(at) => at,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Found::Missing,
        Err(_) => return Found::Other,
    };
    inspect_at(&at.dir, &at.name)
}

/// [`inspect`] of a file in an open directory.
fn inspect_at(dir: &std::fs::File, name: &std::ffi::CString) -> Found {
    // One lookup: open without following a symlink (nor blocking on a FIFO), then look at
    // what was opened. At a daemon's open this runs once per series.
    let f = match crate::beneath::open_read_in(dir, name) {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Found::Missing,
        // A symlink (ELOOP), a directory we may not read, a socket (ENXIO): not ours.
        Err(_) => {
            return match crate::beneath::stat_in(dir, name) {
                Ok(None) => Found::Missing,
                _ => Found::Other,
            }
        }
    };
    let Ok(m) = f.metadata() else {
        return Found::Other;
    };
    if !m.is_file() {
        return Found::Other;
    }
    if m.len() == 0 {
        return Found::Empty;
    }
    let mut head = [0u8; 20];
    let n = (&f).read(&mut head).unwrap_or(0);
    if is_placeholder(&head[..n]) {
        Found::Placeholder
    } else if head[..n].starts_with(b"RRD\0") {
        Found::Rrd
    } else {
        Found::Other
    }
}

/// A temporary name beside `path` (same directory, so a rename replaces it atomically).
fn tmp_beside(path: &Path) -> PathBuf {
    let mut name = path.file_name().unwrap_or_default().to_os_string();
    name.push(format!(".ringlet-tmp-{}", std::process::id()));
    path.with_file_name(name)
}

/// Put a placeholder at `path` (written beside it, then renamed over it). Not synced: the
/// next checkpoint syncs the file system ([`engine::Options::before_checkpoint`]).
pub fn write(places: &Places, path: &Path, abs: &str, name: &str) -> std::io::Result<()> {
    write_as(places, path, abs, name, false)
}

/// [`write`], then the placeholder and its directory synced: for a series created where a
/// checkpoint may already hold it (a CLI command through the daemon creates its series
/// before their placeholders are written).
pub fn write_durable(places: &Places, path: &Path, abs: &str, name: &str) -> std::io::Result<()> {
    write_as(places, path, abs, name, true)
}

fn write_as(
    places: &Places,
    path: &Path,
    abs: &str,
    name: &str,
    sync: bool,
) -> std::io::Result<()> {
    // Its directories are made (beneath the base under -B); the file is written beside
    // its name exclusively and renamed over it.
    At::of(places.beneath.as_deref(), path, true)?.replace(places.text(abs, name).as_bytes(), sync)
}

/// A free name for `name` under the imported directory: `<aside>/<name>`, else with `.1`,
/// `.2`, ... after it.
fn aside_path(places: &Places, name: &str) -> PathBuf {
    let rel = name.trim_start_matches('/');
    let first = places.aside.join(rel);
    if std::fs::symlink_metadata(&first).is_err() {
        return first;
    }
    (1u32..)
        .map(|i| places.aside.join(format!("{rel}.{i}")))
        .find(|p| std::fs::symlink_metadata(p).is_err())
        .unwrap_or(first)
}

/// Move the user's file at `path` (series `name`) aside into the imported directory and put a
/// placeholder at `path`. The file is linked (or copied and synced) before the placeholder
/// replaces it, so a crash leaves the file in one place or both, never neither. Returns where
/// the file went.
pub fn move_aside(places: &Places, path: &Path, abs: &str, name: &str) -> std::io::Result<PathBuf> {
    let at = At::of(places.beneath.as_deref(), path, false)?;
    let dest = aside_path(places, name);
    if let Some(dir) = dest.parent() {
        mkdir_p(dir)?;
    }
    if at.link_to(&dest).is_err() {
        // Another file system (or no links): copy, and make the copy durable before the
        // original goes.
        let tmp = tmp_beside(&dest);
        let r = (|| {
            let mut from = at.open_read()?;
            let mut to = std::fs::File::create(&tmp)?;
            std::io::copy(&mut from, &mut to)?;
            to.sync_all()?;
            std::fs::rename(&tmp, &dest)
        })();
        if r.is_err() {
            let _ = std::fs::remove_file(&tmp);
        }
        r?;
    }
    if let Some(dir) = dest.parent() {
        let _ = std::fs::File::open(dir).and_then(|d| d.sync_all());
    }
    at.replace(places.text(abs, name).as_bytes(), false)?;
    Ok(dest)
}

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

/// Every series in `names` gets its placeholder under the base directory. A missing or
/// empty file gets a placeholder (so a stat-then-create client does not create the series
/// again over its data); a full-size `.rrd` copy is replaced when the store holds everything
/// it has (same DS and RRA counts, last update not later than the store's), and otherwise
/// moved aside, since someone changed it. Series with absolute names outside the base
/// directory are left alone.
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
    let (Some(base), Some(disk)) = (&d.base, d.disk_base()) else {
        return out;
    };
    names.retain(|n| !n.starts_with('/'));
    // Taken from the end a batch at a time, so each batch's names are freed as it is done.
    names.reverse();
    while !names.is_empty() && !stop() {
        let mut batch = names.split_off(names.len().saturating_sub(REPAIR_BATCH));
        batch.reverse();
        let found = inspect_all(places.beneath.as_deref(), disk, &batch);
        for (name, found) in batch.into_iter().zip(found) {
            if !matches!(found, Found::Placeholder | Found::Other) {
                act(d, places, (base, disk), name, &mut out);
            }
        }
    }
    out
}

/// Names a [`repair`] looks at between checks of its `stop`.
const REPAIR_BATCH: usize = 16 << 10;

/// Give series `name` its placeholder, with the store locked: what is at its path is looked
/// at again first.
/// `base`: `-b` as clients name it, and where the daemon reaches it on disk.
fn act(d: &Daemon, places: &Places, base: (&str, &str), name: String, out: &mut Repaired) {
    let inner = d.lock();
    // A stopping daemon writes nothing more under -b once its last commit has the lock.
    if d.closing() {
        return;
    }
    let Some(rrd) = inner.store.get(&name) else {
        return;
    };
    let abs = format!("{}/{name}", base.0);
    let at = format!("{}/{name}", base.1);
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

/// [`inspect`] of every series' path under `base`, in the order of `names`, on a few threads.
fn inspect_all(beneath: Option<&Path>, base: &str, names: &[String]) -> Vec<Found> {
    const THREADS: usize = 2;
    let per = names.len().div_ceil(THREADS).max(1);
    std::thread::scope(|sc| {
        let parts: Vec<_> = names
            .chunks(per)
            .map(|part| {
                let h = sc.spawn(move || {
                    let mut dir = DirCache::default();
                    part.iter()
                        .map(|n| dir.inspect(beneath, base, n))
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
    fn inspect(&mut self, beneath: Option<&Path>, base: &str, name: &str) -> Found {
        let full = format!("{base}/{name}");
        let (parent, file) = match full.rsplit_once('/') {
            Some((p, f)) if !f.is_empty() => (p, f),
            _ => return inspect(beneath, Path::new(&full)),
        };
        if self.dir.is_none() || self.path != parent {
            self.path = parent.to_string();
            self.dir = At::of(beneath, Path::new(&full), false).ok().map(|a| a.dir);
        }
        let (Some(dir), Ok(c)) = (&self.dir, std::ffi::CString::new(file.as_bytes())) else {
            return inspect(beneath, Path::new(&full));
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_text_is_a_placeholder_between_librrds_header_and_a_block() {
        let p = Places::new(Path::new("/var/lib/ringlet"), "unix:/tmp/r.sock".into());
        for name in ["a.rrd", &"d/".repeat(600)] {
            let t = p.text(&format!("/b/{name}"), name);
            assert!(is_placeholder(t.as_bytes()), "{t}");
            assert!(t.len() >= 128 && t.len() as u64 <= MAX_LEN, "{}", t.len());
        }
        assert!(!is_placeholder(b"RRD\x000003"));
    }
}
