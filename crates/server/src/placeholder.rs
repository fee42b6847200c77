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
use std::io::Read;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

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
    /// The file systems placeholders were written on, synced before each checkpoint.
    pub written: Written,
}

/// The file systems placeholders are written on (a directory of each, by device): `-b`'s,
/// and those of absolute names (a daemon without `-b`, or outside it without `-B`). A
/// placeholder is written unsynced; the checkpoint that holds its series syncs these first
/// (`engine::Options::before_checkpoint`), so a power cut never leaves a series the
/// checkpoint holds without its placeholder and a create-if-missing client re-creating it.
#[derive(Debug, Clone, Default)]
pub struct Written(Arc<Mutex<Vec<(u64, PathBuf)>>>);

impl Written {
    /// Note the file system of directory `dir` (once a device).
    pub fn note(&self, dir: &Path) {
        use std::os::unix::fs::MetadataExt;
        let Ok(m) = std::fs::metadata(dir) else {
            return;
        };
        let mut fs = self.0.lock().unwrap_or_else(|p| p.into_inner());
        if !fs.iter().any(|(dev, _)| *dev == m.dev()) {
            fs.push((m.dev(), dir.to_path_buf()));
        }
    }

    /// Sync every file system noted; the number synced. A directory gone since is skipped
    /// (its placeholders went with it).
    pub fn sync(&self) -> std::io::Result<u64> {
        let dirs: Vec<PathBuf> = {
            let fs = self.0.lock().unwrap_or_else(|p| p.into_inner());
            fs.iter().map(|(_, d)| d.clone()).collect()
        };
        let mut n = 0;
        for d in dirs {
            match crate::sys::sync_file_system(&d) {
                Ok(()) => n += 1,
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                Err(e) => return Err(e),
            }
        }
        Ok(n)
    }
}

impl Places {
    pub fn new(store: &Path, address: String) -> Places {
        Places {
            store: store.to_path_buf(),
            aside: imported_dir(store),
            address,
            beneath: None,
            written: Written::default(),
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

/// The series a placeholder of this store names ([`Places::text`]); None for anything else
/// (another store's placeholder, the short text of a very long name, not a placeholder).
pub fn names(places: &Places, bytes: &[u8]) -> Option<String> {
    if !is_placeholder(bytes) {
        return None;
    }
    let text = std::str::from_utf8(bytes).ok()?;
    let rest = text.split_once("\nThe series '")?.1;
    let tail = format!("' lives in the ringlet store {}\n", places.store.display());
    let (name, _) = rest.split_once(&tail)?;
    (!name.is_empty() && !name.contains('\n')).then(|| name.to_string())
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
pub(crate) fn inspect_at(dir: &std::fs::File, name: &std::ffi::CString) -> Found {
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
    At::of(places.beneath.as_deref(), path, true)?
        .replace(places.text(abs, name).as_bytes(), sync)?;
    if places.beneath.is_none() {
        // Under -B every placeholder is below the base, whose file system is noted.
        if let Some(dir) = path.parent() {
            places.written.note(dir);
        }
    }
    Ok(())
}

/// A free name for `name` under the imported directory: `<aside>/<name>`, else with `.1`,
/// `.2`, ... after it.
pub fn aside_path(places: &Places, name: &str) -> PathBuf {
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
        crate::beneath::mkdir_p(dir)?;
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
