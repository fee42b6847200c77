//! The plain copy of an emoncms view's feeds in the directory beneath it, so that emoncms
//! loses nothing while the daemon is down (a restart, an upgrade, a crash).
//!
//! emoncms keeps running while ringlet stops: its feedwriter goes on writing to `<id>.dat`
//! and `feed_<id>.MYD` in the directory, which the view no longer covers. So the directory
//! must hold the feeds then, as a plain directory would, and what emoncms writes there while
//! the daemon is down must come back into the store at the next start. The rules:
//!
//! - **At a clean stop** ([`FeedCopy::write_back`]), before the view is unmounted, the store's
//!   feed files are written into the directory beneath (only the 1 MiB pieces that differ are
//!   written, so a stop costs the bytes changed since the last one; files the store no longer
//!   holds are removed; new files get the directory's owner and mode 0644, so emoncms can
//!   write them), synced, and from then until the unmount every change through the view is
//!   made to both ("write-through"). The state file `<store>/feeds-<kind>.copy` then says
//!   `clean`: the directory is the store's feeds.
//! - **At a start after a clean stop** ([`adopt`]), a file that differs from the store's is
//!   emoncms's newer data, taken in whole, as a plain directory would show it; a feed file
//!   removed is removed. The store's previous content is kept in `<store>/imported/` where
//!   taking the file loses bytes it had (not for a file that only grew, which loses none).
//! - **After a crash** the copy is older than the store (the store went on after the last
//!   start). At each start the state file records the copy's files (size, times, inode) as
//!   `started`; at the next start a file unchanged since is an old copy and left alone, and
//!   one changed (emoncms wrote while the daemon was down) is merged: bytes past the end of
//!   the store's feed taken (a `.MYD`: the records later than the store's last), the rest
//!   kept as the store has it, and the file copied into `<store>/imported/`.
//! - **No state file** (the first start on emoncms's own data, or a store of an earlier
//!   version): a feed the store does not hold is taken; one it holds is merged as after a
//!   crash.
//!
//! The copy costs disk space, as much as the feeds take in the store, and its writes happen
//! at a stop, never while the daemon runs (docs/DURABILITY.md, "The emoncms views").

use super::kind::Kind;
use crate::daemon::Daemon;
use std::collections::{BTreeMap, BTreeSet};
use std::fs::File;
use std::io::Write;
use std::os::unix::fs::{FileExt, MetadataExt};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};

/// Bytes compared (and written) at a time.
const PIECE: u64 = 1 << 20;

/// The copy beneath one emoncms view, shared by the view (its write-through) and the daemon's
/// stop ([`FeedCopy::write_back`]).
pub struct FeedCopy {
    kind: Kind,
    /// The directory beneath the view, as the daemon reaches it (`/proc/self/fd/N` of the
    /// directory opened before the mount).
    dir: PathBuf,
    /// The store's state file for this view.
    state: PathBuf,
    /// The view's changes are made to the copy too (from the write-back until the unmount).
    through: AtomicBool,
    /// A change could not be made to the copy: it is not the store's, so no `clean`.
    broken: AtomicBool,
    /// The owner of the directory, given to the files the copy makes.
    owner: (u32, u32),
}

/// What the state file says.
#[derive(Debug, PartialEq)]
enum State {
    /// The copy is the store's feeds (a clean stop wrote it).
    Clean,
    /// The copy's files as they were at the last start: (size, mtime ns, ctime ns, inode).
    Started(BTreeMap<String, Stamp>),
}

type Stamp = (u64, i64, i64, u64);

fn stamp(m: &std::fs::Metadata) -> Stamp {
    (
        m.len(),
        m.mtime() * 1_000_000_000 + m.mtime_nsec(),
        m.ctime() * 1_000_000_000 + m.ctime_nsec(),
        m.ino(),
    )
}

/// The state file of `kind`'s view in the store `store`.
pub fn state_file(store: &Path, kind: Kind) -> PathBuf {
    store.join(format!(
        "feeds-{}.copy",
        kind.prefix().trim_end_matches('/')
    ))
}

fn read_state(path: &Path) -> Option<State> {
    let text = std::fs::read_to_string(path).ok()?;
    let mut lines = text.lines();
    if lines.next()? != "ringlet feed copy 1" {
        return None;
    }
    match lines.next()? {
        "clean" => Some(State::Clean),
        "started" => {
            let mut files = BTreeMap::new();
            for l in lines {
                let mut f = l.splitn(5, ' ');
                let mut num = || f.next().and_then(|v| v.parse::<i64>().ok());
                let (Some(len), Some(m), Some(c), Some(ino)) = (num(), num(), num(), num()) else {
                    return None;
                };
                files.insert(f.next()?.to_string(), (len as u64, m, c, ino as u64));
            }
            Some(State::Started(files))
        }
        _ => None,
    }
}

/// Write the state file (beside, synced, renamed over it, the store directory synced).
fn write_state(path: &Path, state: &State) -> std::io::Result<()> {
    let mut text = String::from("ringlet feed copy 1\n");
    match state {
        State::Clean => text.push_str("clean\n"),
        State::Started(files) => {
            text.push_str("started\n");
            for (name, (len, m, c, ino)) in files {
                text.push_str(&format!("{len} {m} {c} {ino} {name}\n"));
            }
        }
    }
    let tmp = path.with_extension("copy.tmp");
    let mut f = File::create(&tmp)?;
    f.write_all(text.as_bytes())?;
    f.sync_all()?;
    std::fs::rename(&tmp, path)?;
    if let Some(dir) = path.parent() {
        File::open(dir)?.sync_all()?;
    }
    Ok(())
}

/// The feed files (by the view's rules) in `dir`, with their metadata.
fn files_in(dir: &Path, kind: Kind) -> std::io::Result<BTreeMap<String, std::fs::Metadata>> {
    let mut out = BTreeMap::new();
    for e in std::fs::read_dir(dir)? {
        let Ok(e) = e else { continue };
        let Some(name) = e.file_name().to_str().map(str::to_string) else {
            continue;
        };
        if !kind.own(&name) {
            continue;
        }
        if let Ok(m) = std::fs::symlink_metadata(e.path()) {
            if m.is_file() {
                out.insert(name, m);
            }
        }
    }
    Ok(out)
}

/// Whether piece `off..off + len` is zeros both in blob `blob` and in `f`, known without
/// reading (a sparse feed of 16 GiB is mostly that).
fn both_empty(d: &Daemon, blob: &str, f: &File, off: u64, len: u64) -> bool {
    !d.lock().blobs().held(blob, off, len) && !host::sys::file_has_data(f, off, len)
}

/// Up to `len` bytes of `f` at `off` (fewer at its end): the view's reader of plain files.
fn read_at(f: &File, off: u64, len: u64) -> std::io::Result<Vec<u8>> {
    super::read_plain(f, off, len as usize)
}

impl FeedCopy {
    pub fn new(d: &Daemon, kind: Kind, dir: &str) -> FeedCopy {
        let owner = std::fs::metadata(dir).map_or((0, 0), |m| (m.uid(), m.gid()));
        FeedCopy {
            kind,
            dir: PathBuf::from(dir),
            state: state_file(&d.lock().places().store, kind),
            through: AtomicBool::new(false),
            broken: AtomicBool::new(false),
            owner,
        }
    }

    pub fn kind(&self) -> Kind {
        self.kind
    }

    fn path(&self, name: &str) -> PathBuf {
        self.dir.join(name)
    }

    fn blob(&self, name: &str) -> String {
        format!("{}{name}", self.kind.prefix())
    }

    /// A change the copy could not take: logged, and the copy is not the store's.
    fn failed(&self, what: &str, name: &str, e: &std::io::Error) {
        self.broken.store(true, Ordering::Relaxed);
        crate::log::line(&format!(
            "{}: the plain copy beneath: {what} {name}: {e}",
            self.kind.what()
        ));
    }

    /// Open (or make, with the directory's owner) feed file `name` of the copy.
    fn open(&self, name: &str) -> std::io::Result<File> {
        use std::os::unix::fs::OpenOptionsExt;
        let path = self.path(name);
        let f = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .custom_flags(libc::O_NOFOLLOW)
            .mode(0o644)
            .open(&path)?;
        let m = f.metadata()?;
        if (m.uid(), m.gid()) != self.owner {
            let _ = std::os::unix::fs::fchown(&f, Some(self.owner.0), Some(self.owner.1));
        }
        Ok(f)
    }

    /// Whether the view's changes are made to the copy now (the caller holds the store lock).
    pub fn through(&self) -> bool {
        self.through.load(Ordering::Relaxed)
    }

    /// The view wrote `data` at `off` of `name` (the store lock held).
    pub fn wrote(&self, name: &str, off: u64, data: &[u8]) {
        if !self.through() {
            return;
        }
        if let Err(e) = self.open(name).and_then(|f| f.write_all_at(data, off)) {
            self.failed("writing", name, &e);
        }
    }

    /// The view cut or extended `name` to `len` (made it, when new).
    pub fn set_len(&self, name: &str, len: u64) {
        if !self.through() {
            return;
        }
        if let Err(e) = self.open(name).and_then(|f| f.set_len(len)) {
            self.failed("cutting", name, &e);
        }
    }

    /// The view removed `name`.
    pub fn removed(&self, name: &str) {
        if !self.through() {
            return;
        }
        match std::fs::remove_file(self.path(name)) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => self.failed("removing", name, &e),
            _ => {}
        }
    }

    /// The view renamed `from` to `to`.
    pub fn renamed(&self, from: &str, to: &str) {
        if !self.through() {
            return;
        }
        if let Err(e) = std::fs::rename(self.path(from), self.path(to)) {
            self.failed("renaming", from, &e);
        }
    }

    /// Write the store's feeds into the copy, then keep it in step (write-through) until the
    /// view is gone ([`FeedCopy::finish`]). Returns bytes written.
    pub fn write_back(&self, d: &Daemon) -> u64 {
        let prefix = self.kind.prefix();
        let names: Vec<String> = {
            let inner = d.lock();
            // From now on every change through the view is made to the copy too.
            self.through.store(true, Ordering::Relaxed);
            inner
                .blobs()
                .list()
                .into_iter()
                .filter_map(|(n, _)| n.strip_prefix(prefix).map(str::to_string))
                .collect()
        };
        let mut written = 0u64;
        let mut synced = Vec::new();
        for name in &names {
            match self.write_file(d, name) {
                Ok((n, f)) => {
                    written += n;
                    if n > 0 {
                        synced.push((name.clone(), f));
                    }
                }
                Err(e) => self.failed("writing", name, &e),
            }
        }
        // Files the store no longer holds are gone from the copy too.
        let held: BTreeSet<&String> = names.iter().collect();
        match files_in(&self.dir, self.kind) {
            Ok(files) => {
                for name in files.keys().filter(|n| !held.contains(n)) {
                    let inner = d.lock();
                    if inner.blobs().len(&self.blob(name)).is_none() && self.kind.valid(name) {
                        if let Err(e) = std::fs::remove_file(self.path(name)) {
                            self.failed("removing", name, &e);
                        }
                    }
                }
            }
            Err(e) => self.failed("listing", "", &e),
        }
        for (name, f) in synced {
            if let Err(e) = f.sync_all() {
                self.failed("syncing", &name, &e);
            }
        }
        if let Err(e) = File::open(&self.dir).and_then(|f| f.sync_all()) {
            self.failed("syncing", "", &e);
        }
        written
    }

    /// Make the copy's `name` the store's, a piece at a time under the store lock (a change
    /// through the view between pieces is made to both). Bytes written, and the file.
    fn write_file(&self, d: &Daemon, name: &str) -> std::io::Result<(u64, File)> {
        let blob = self.blob(name);
        let f = self.open(name)?;
        let mut written = 0u64;
        let mut off = 0u64;
        loop {
            let inner = d.lock();
            let Some(len) = inner.blobs().len(&blob) else {
                return Ok((written, f));
            };
            if off >= len {
                if f.metadata()?.len() != len {
                    f.set_len(len)?;
                    written += 1;
                }
                return Ok((written, f));
            }
            // Zeros in both (a gap of a sparse feed): left a hole, extended by set_len.
            if !inner.blobs().held(&blob, off, PIECE) && !host::sys::file_has_data(&f, off, PIECE) {
                drop(inner);
                off += PIECE;
                continue;
            }
            let want = inner
                .blobs()
                .read(&blob, off, PIECE)
                .map_err(|e| std::io::Error::other(e.to_string()))?;
            let have = read_at(&f, off, want.len() as u64)?;
            if have != want {
                f.write_all_at(&want, off)?;
                written += want.len() as u64;
            }
            drop(inner);
            off += PIECE;
        }
    }

    /// The view is unmounted: the copy is the store's if every change reached it.
    pub fn finish(&self) {
        if self.broken.load(Ordering::Relaxed) {
            crate::log::line(&format!(
                "{}: the plain copy beneath is not the store's (see above): the next start \
                 merges what is written there as after a crash",
                self.kind.what()
            ));
            return;
        }
        if let Err(e) = write_state(&self.state, &State::Clean) {
            crate::log::line(&format!(
                "{}: {}: {e}",
                self.kind.what(),
                self.state.display()
            ));
        }
    }
}

/// What [`adopt`] did, for the log.
#[derive(Default, Debug)]
struct Adopted {
    new: usize,
    taken: usize,
    merged: usize,
    removed: usize,
    aside: Vec<PathBuf>,
    bad: usize,
}

/// Before the view is mounted over `dir`: what emoncms wrote there while the daemon was down
/// comes into the store (the module's rules); the state file then records the copy as
/// `started`. Returns a line for the log (empty when nothing was there).
pub fn adopt(d: &Daemon, kind: Kind, dir: &Path) -> Result<String, String> {
    let store = d.lock().places().store.clone();
    let state_path = state_file(&store, kind);
    let state = read_state(&state_path);
    let files = files_in(dir, kind).map_err(|e| format!("{}: {e}", dir.display()))?;
    let mut done = Adopted::default();
    let places = d.lock().places().clone();
    let aside_name =
        |name: &str| crate::placeholder::aside_path(&places, &format!("{}{name}", kind.prefix()));
    for (name, meta) in &files {
        let path = dir.join(name);
        if !kind.valid(name) {
            done.bad += 1;
            crate::log::line(&format!(
                "{}: {}: not a feed's file name; left where it is (hidden by the view)",
                kind.what(),
                path.display()
            ));
            continue;
        }
        let blob = format!("{}{name}", kind.prefix());
        // A file as the last start left it is an old copy (the store went on since).
        let unchanged = match &state {
            Some(State::Started(s)) => s.get(name) == Some(&stamp(meta)),
            _ => false,
        };
        let held = d.lock().blobs().len(&blob);
        let f = File::open(&path).map_err(|e| format!("{}: {e}", path.display()))?;
        let io = |e: std::io::Error| format!("{}: {e}", path.display());
        match held {
            None if unchanged => {}
            None => {
                take(d, &blob, &f, meta.len()).map_err(&io)?;
                done.new += 1;
            }
            Some(_) if unchanged => {}
            Some(len) => {
                if same(d, &blob, &f, meta.len()).map_err(&io)? {
                    continue;
                }
                if state == Some(State::Clean) {
                    // emoncms's newer data: taken whole; the store's kept where it loses bytes.
                    if !grown_from(d, &blob, &f, len).map_err(&io)? {
                        let dest = aside_name(name);
                        keep_blob(d, &blob, &dest).map_err(&io)?;
                        done.aside.push(dest);
                    }
                    take(d, &blob, &f, meta.len()).map_err(&io)?;
                    done.taken += 1;
                } else {
                    merge(d, kind, &blob, &f, meta.len(), len).map_err(&io)?;
                    done.merged += 1;
                    if !same(d, &blob, &f, meta.len()).map_err(&io)? {
                        let dest = aside_name(name);
                        keep_file(&path, &dest).map_err(&io)?;
                        done.aside.push(dest);
                    }
                }
            }
        }
    }
    if state == Some(State::Clean) {
        // Removed while the daemon was down: removed from the store, its content kept.
        let prefix = kind.prefix();
        let gone: Vec<String> = d
            .lock()
            .blobs()
            .list()
            .into_iter()
            .filter_map(|(n, _)| n.strip_prefix(prefix).map(str::to_string))
            .filter(|n| !files.contains_key(n))
            .collect();
        for name in gone {
            let blob = format!("{prefix}{name}");
            let dest = aside_name(&name);
            keep_blob(d, &blob, &dest).map_err(|e| format!("{}: {e}", dest.display()))?;
            done.aside.push(dest);
            d.lock()
                .blobs_mut()
                .remove(&blob)
                .map_err(|e| format!("{blob}: {e}"))?;
            done.removed += 1;
        }
    }
    // Durable in the store before the state says the copy is old.
    d.commit_all()?;
    let now = files_in(dir, kind).map_err(|e| format!("{}: {e}", dir.display()))?;
    let stamps = now.iter().map(|(n, m)| (n.clone(), stamp(m))).collect();
    write_state(&state_path, &State::Started(stamps))
        .map_err(|e| format!("{}: {e}", state_path.display()))?;
    if done.new + done.taken + done.merged + done.removed + done.bad == 0 {
        return Ok(String::new());
    }
    Ok(format!(
        "{} feed files in {} ({}): {} new taken into the store, {} written while the daemon \
         was down taken in, {} merged (written after a crash), {} removed while it was down, \
         {} left (not feed file names); {} previous copies kept in {}",
        files.len(),
        dir.display(),
        match state {
            Some(State::Clean) => "after a clean stop",
            Some(State::Started(_)) => "after a crash",
            None => "no copy recorded",
        },
        done.new,
        done.taken,
        done.merged,
        done.removed,
        done.bad,
        done.aside.len(),
        places.aside.display()
    ))
}

/// Make blob `blob` the bytes of `f` (`len` long), a piece at a time.
fn take(d: &Daemon, blob: &str, f: &File, len: u64) -> std::io::Result<()> {
    let err = |e: engine::Error| std::io::Error::other(e.to_string());
    let mut inner = d.lock();
    if inner.blobs().len(blob).is_none() {
        inner.blobs_mut().create(blob).map_err(err)?;
    }
    inner.blobs_mut().set_len(blob, len).map_err(err)?;
    drop(inner);
    let mut off = 0;
    while off < len {
        if both_empty(d, blob, f, off, PIECE.min(len - off)) {
            off += PIECE;
            continue;
        }
        let have = read_at(f, off, PIECE.min(len - off))?;
        if have.is_empty() {
            break;
        }
        let mut inner = d.lock();
        let cur = inner
            .blobs()
            .read(blob, off, have.len() as u64)
            .map_err(err)?;
        if cur != have {
            inner.blobs_mut().write(blob, off, &have).map_err(err)?;
        }
        drop(inner);
        off += have.len() as u64;
    }
    Ok(())
}

/// Whether blob `blob` holds the bytes of `f` (`len` long).
fn same(d: &Daemon, blob: &str, f: &File, len: u64) -> std::io::Result<bool> {
    if d.lock().blobs().len(blob) != Some(len) {
        return Ok(false);
    }
    prefix_same(d, blob, f, len)
}

/// Whether the first `n` bytes of blob `blob` and of `f` are the same.
fn prefix_same(d: &Daemon, blob: &str, f: &File, n: u64) -> std::io::Result<bool> {
    let mut off = 0;
    while off < n {
        let k = PIECE.min(n - off);
        if both_empty(d, blob, f, off, k) {
            off += k;
            continue;
        }
        let have = read_at(f, off, k)?;
        let cur = d
            .lock()
            .blobs()
            .read(blob, off, k)
            .map_err(|e| std::io::Error::other(e.to_string()))?;
        if have != cur {
            return Ok(false);
        }
        off += k;
    }
    Ok(true)
}

/// Whether `f` is blob `blob` (`len` long) with bytes after it: taking it loses none.
fn grown_from(d: &Daemon, blob: &str, f: &File, len: u64) -> std::io::Result<bool> {
    Ok(f.metadata()?.len() >= len && prefix_same(d, blob, f, len)?)
}

/// After a crash (or without a record of the copy): what of `f` the store does not have.
/// Past the end of the store's feed (`len`): taken; a `.MYD`'s records later than the
/// store's last (whole records, in order) appended. The rest stays as the store has it.
fn merge(d: &Daemon, kind: Kind, blob: &str, f: &File, flen: u64, len: u64) -> std::io::Result<()> {
    let err = |e: engine::Error| std::io::Error::other(e.to_string());
    if kind == Kind::PhpTimeSeries {
        const R: u64 = codec::emoncms::RECORD;
        let end = len / R * R;
        let last = if end >= R {
            let b = d.lock().blobs().read(blob, end - R, R).map_err(err)?;
            codec::emoncms::record(&b).map_or(0, |(_, t, _)| t)
        } else {
            0
        };
        let mut at = end;
        let mut off = 0;
        let mut newest = last;
        while off + R <= flen {
            let n = (PIECE / R * R).min((flen - off) / R * R);
            let b = read_at(f, off, n)?;
            let mut add = Vec::new();
            for r in b.chunks_exact(R as usize) {
                let Some((tag, t, _)) = codec::emoncms::record(r) else {
                    continue;
                };
                if tag == codec::emoncms::RECORD_TAG && t > newest {
                    add.extend_from_slice(r);
                    newest = t;
                }
            }
            if !add.is_empty() {
                d.lock().blobs_mut().write(blob, at, &add).map_err(err)?;
                at += add.len() as u64;
            }
            off += n.max(R);
        }
        return Ok(());
    }
    if flen > len {
        let mut off = len;
        while off < flen {
            let have = read_at(f, off, PIECE.min(flen - off))?;
            if have.is_empty() {
                break;
            }
            d.lock().blobs_mut().write(blob, off, &have).map_err(err)?;
            off += have.len() as u64;
        }
    }
    Ok(())
}

/// Keep blob `blob`'s bytes in the file `dest` (synced), a piece at a time.
fn keep_blob(d: &Daemon, blob: &str, dest: &Path) -> std::io::Result<()> {
    if let Some(dir) = dest.parent() {
        std::fs::create_dir_all(dir)?;
    }
    let out = File::create(dest)?;
    let len = d.lock().blobs().len(blob).unwrap_or(0);
    let mut off = 0;
    while off < len {
        // A gap of a sparse feed stays a hole (the length is set at the end).
        if !d.lock().blobs().held(blob, off, PIECE) {
            off += PIECE;
            continue;
        }
        let b = d
            .lock()
            .blobs()
            .read(blob, off, PIECE)
            .map_err(|e| std::io::Error::other(e.to_string()))?;
        if b.is_empty() {
            break;
        }
        out.write_all_at(&b, off)?;
        off += b.len() as u64;
    }
    out.set_len(len)?;
    out.sync_all()?;
    if let Some(dir) = dest.parent() {
        File::open(dir)?.sync_all()?;
    }
    Ok(())
}

/// Keep a copy of the file at `path` in `dest` (synced); the file stays.
fn keep_file(path: &Path, dest: &Path) -> std::io::Result<()> {
    if let Some(dir) = dest.parent() {
        std::fs::create_dir_all(dir)?;
    }
    std::fs::copy(path, dest)?;
    File::open(dest)?.sync_all()?;
    if let Some(dir) = dest.parent() {
        File::open(dir)?.sync_all()?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_state_file_reads_back() {
        let dir = std::env::temp_dir().join(format!("ringlet-copy-state-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let p = dir.join("feeds-phpfina.copy");
        for s in [
            State::Clean,
            State::Started(BTreeMap::from([
                ("1.dat".to_string(), (400, 1_700_000_000_123_456_789, 5, 77)),
                ("1.meta".to_string(), (16, 1, 2, 3)),
            ])),
            State::Started(BTreeMap::new()),
        ] {
            write_state(&p, &s).unwrap();
            assert_eq!(read_state(&p), Some(s));
        }
        std::fs::write(&p, "something else\nclean\n").unwrap();
        assert_eq!(read_state(&p), None);
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
