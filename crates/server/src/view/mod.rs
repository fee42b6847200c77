//! `ringlet serve --view DIR`: every series as a live `.rrd` file under DIR, through FUSE.
//!
//! Tools that open `.rrd` files themselves (`rrdtool info/dump/fetch/graph` without
//! `--daemon`, python3-rrdtool, ganglia-web's directory scan, backups) read what the daemon
//! has accepted, byte for byte what rrdtool 1.7.2 would hold in a file fed the same updates
//! (`rrd::rrdfile::write`, the bytes `ringlet export` writes).
//!
//! - The tree is the store's names: `a/b/c.rrd` is the file `c.rrd` in directory `a/b`.
//!   Names are read from the store when they change (creates and removes), kept sorted, so a
//!   directory is a range of them.
//! - Opening a file takes a snapshot: the series' queued values are applied, its RRD copied
//!   under the daemon's lock (the archives are packed, or read from the store's segment files
//!   on demand), and the file's bytes built from the copy after the lock is let go. Reads
//!   serve that snapshot until the file is closed: a reader sees one consistent state, and
//!   reading a file costs reads of that series alone. Nothing is written.
//! - `st_size` is the file's length from the schema; `st_mtime` the series' last update.
//!   Owners and modes: a directory shows the directory beneath's (or its nearest parent's),
//!   a file its directory's mode less execute with the daemon's ids (after `-U`, the
//!   user's); the kernel checks them (`default_permissions`): a 0700 `-b` stays private.
//! - What tools do to files by hand: a file written whole (`rrdtool create`, which writes
//!   `x.rrdXXXXXX` and renames it; `restore -f`; `cp`) is held in memory as a *loose* file and
//!   imported as the series when it is closed or renamed to its name (a file that is not an
//!   RRD stays loose until removed, and is gone when the daemon stops); a series' file opened
//!   to read and write in place (`rrdtool tune`, which maps it shared) may change its header
//!   only, and is imported when closed (opened to write only, it is written whole: loose); unlink removes the series, rename renames it; mkdir and
//!   rmdir make and remove directories (until the daemon stops: a directory of series exists
//!   as long as they do). A write to rows in place (`rrdtool update` on the file) is refused
//!   with `EPERM` and a log line that names the daemon's socket.
//! - Over `-b`, a name whose last component holds no `.rrd` is a *plain* file on the disk
//!   beneath the view, read and written through (open, create, write, truncate, chmod,
//!   chown, utimes, fsync, rename, unlink): Munin keeps its state (`datafile`,
//!   `state-*.storable`, `limits`, `graphs`) and munin-cgi-graph its image cache beside the
//!   RRDs, and they outlast the daemon. A plain file renamed to a `.rrd` name is imported as
//!   that series. Links are never followed. A view at a directory of its own (`--view
//!   DIR`) keeps them the same way in DIR beneath the view, opened before the mount (they
//!   were loose, in memory, gone at a restart, until the review found it).
//!
//! `ringlet serve --phpfina DIR` and `--phptimeseries DIR` mount the same view over emoncms's
//! data directories ([`Kind`]): there the view's own files are emoncms's feed files
//! (`<id>.meta` and `<id>.dat` of a PHPFina feed, `feed_<id>.MYD` of a PHPTimeSeries one),
//! each held by the store as a blob (`engine::blob`, named `phpfina/<id>.dat`, ...), read and
//! written in place at any offset, cut, renamed and removed as emoncms does to plain files;
//! what is written reaches the disk in the daemon's commits, once a window. Writes that
//! cannot be a feed's (a `.dat` write that is not whole float32 points, a `.meta` past its 16
//! bytes or with interval 0, a feed file name that is not `<digits>.dat`) are refused with
//! EINVAL and a log line. Every other name is a plain file (or directory) in DIR beneath the
//! view, as for `--view DIR`. DIR beneath holds a plain copy of the feeds for emoncms while
//! the daemon is down (`copy.rs`).
//!
//! The FUSE side is the `fuser` crate (pure Rust, mounting through /dev/fuse as root); what
//! is served is ours. The calls themselves are in `fs.rs`; the tree, snapshots and loose
//! files here; the feed files' rules in `feeds.rs`.

mod copy;
mod feeds;
mod fs;
mod kind;

pub use kind::Kind;

use crate::daemon::Daemon;
use crate::series::life::{view_import, view_remove, view_rename};
use fuser::{
    BsdFileFlags, Config, Errno, FileAttr, FileHandle, FileType, Filesystem, FopenFlags,
    Generation, INodeNo, LockOwner, MountOption, OpenFlags, RenameFlags, ReplyAttr, ReplyCreate,
    ReplyData, ReplyDirectory, ReplyEmpty, ReplyEntry, ReplyOpen, ReplyWrite, Request, SessionACL,
    TimeOrNow, WriteFlags,
};
use std::collections::{BTreeSet, HashMap};
use std::ffi::OsStr;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, RwLock};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// How long the kernel may cache an answer. Short: series come and go, and a file's size and
/// time change with every update.
const TTL: Duration = Duration::from_secs(1);

/// Bytes all loose files (written through the view, not yet series) may hold together: they
/// are in the daemon's memory.
const LOOSE_MAX: usize = 1 << 30;

/// The mounted view; unmounted when dropped.
pub struct Mounted {
    running: Option<fuser::BackgroundSession>,
    pub dir: std::path::PathBuf,
    /// An emoncms view's plain copy beneath (`copy.rs`), with the daemon.
    copy: Option<(Arc<Daemon>, Arc<copy::FeedCopy>)>,
}

impl Mounted {
    /// A stop begins: an emoncms view writes the store's feeds into the directory beneath
    /// and keeps it in step until it is unmounted. Returns what [`Mounted::stopped`] needs
    /// once the view is gone.
    pub fn write_back(&self) -> Option<Arc<copy::FeedCopy>> {
        let (d, c) = self.copy.as_ref()?;
        let t0 = std::time::Instant::now();
        let n = c.write_back(d);
        crate::log::line(&format!(
            "{}: feeds written into {} for emoncms while the daemon is down: {n} bytes in {:.2} s",
            self.kind_what(),
            self.dir.display(),
            t0.elapsed().as_secs_f64()
        ));
        Some(c.clone())
    }

    fn kind_what(&self) -> &'static str {
        self.copy.as_ref().map_or("view", |(_, c)| c.kind().what())
    }

    /// The views are unmounted: each copy written back records that it is the store's.
    pub fn stopped(copies: Vec<Arc<copy::FeedCopy>>) {
        for c in copies {
            c.finish();
        }
    }
}

impl Drop for Mounted {
    fn drop(&mut self) {
        let Some(s) = self.running.take() else {
            return;
        };
        if host::sys::euid() != 0 {
            // After -U the daemon may not unmount: its exit closes the FUSE connection, and
            // the next start (as root) removes the dead mount. Not joined: its threads would
            // wait for an unmount that cannot come.
            crate::log::line(&format!(
                "view: {} stays mounted, dead, until the next start (no permission to unmount \
                 after -U)",
                self.dir.display()
            ));
            std::mem::forget(s);
            return;
        }
        if let Err(e) = s.umount_and_join() {
            crate::log::line(&format!("view: unmounting {}: {e}", self.dir.display()));
        }
    }
}

/// Detach a stale view at `dir`: a FUSE mount whose daemon died answers every access with
/// ENOTCONN (and hides the placeholders beneath it) until it is.
pub fn clear_stale(dir: &Path) -> Result<(), String> {
    // statfs goes to the file system's server (a stat may be answered from the kernel's
    // cache of attributes for a moment after the server died).
    match crate::sys::statfs(dir) {
        Err(e) if e.raw_os_error() == Some(libc::ENOTCONN) => {
            crate::sys::detach_mount(dir)
                .map_err(|e| format!("cannot remove the stale mount at {}: {e}", dir.display()))?;
            crate::log::line(&format!("view: removed a stale mount at {}", dir.display()));
            Ok(())
        }
        _ => Ok(()),
    }
}

/// Mount the view of `d`'s store at `dir`. A stale mount left there by a run that died is
/// detached first.
/// `owner`: the user and group the daemon becomes after mounting (`-U`, `-G`), if it does;
/// the view's files and directories show them.
pub fn mount(
    d: Arc<Daemon>,
    dir: &Path,
    owner: (Option<u32>, Option<u32>),
    kind: Kind,
) -> Result<Mounted, String> {
    clear_stale(dir)?;
    if let Err(e) = std::fs::metadata(dir) {
        return Err(format!("cannot mount the view at {}: {e}", dir.display()));
    }
    if !Path::new("/dev/fuse").exists() {
        return Err("cannot mount the view: /dev/fuse is missing (no FUSE here)".into());
    }
    let mut cfg = Config::default();
    cfg.mount_options = vec![
        MountOption::RW,
        MountOption::FSName("ringlet".into()),
        MountOption::Subtype("ringlet".into()),
        MountOption::DefaultPermissions,
        MountOption::NoExec,
        MountOption::NoSuid,
        MountOption::NoDev,
    ];
    // Open to every user (Munin, the web server), as the files under -b are, within the
    // permissions the view shows: those of the directories beneath (View::dir_perm), which
    // the kernel checks (DefaultPermissions), so a private directory stays private.
    cfg.acl = SessionACL::All;
    // A slow open (a large file built) does not hold up the others.
    cfg.n_threads = Some(4);
    // Beneath the view: -b when it is mounted over it (the daemon opened it before), else
    // the directory itself, opened before the mount hides it: other programs' files made
    // there are kept on its disk, as over -b (not in memory, gone at a restart).
    let own = match d.lower.get() {
        Some(_) if kind == Kind::Rrd => None,
        _ => Some(
            std::fs::File::open(dir)
                .map_err(|e| format!("cannot mount the view at {}: {e}", dir.display()))?,
        ),
    };
    if kind != Kind::Rrd {
        match copy::adopt(&d, kind, dir) {
            Ok(done) if !done.is_empty() => crate::log::line(&format!("{}: {done}", kind.what())),
            Ok(_) => {}
            Err(e) => {
                return Err(format!(
                    "cannot mount the {} at {}: {e}",
                    kind.what(),
                    dir.display()
                ))
            }
        }
    }
    let mut fs = View::new(d.clone(), owner, own, kind);
    let copy = match (&fs.beneath, kind) {
        (Some(b), Kind::PhpFina | Kind::PhpTimeSeries) => {
            let c = Arc::new(copy::FeedCopy::new(&d, kind, b));
            fs.copy = Some(c.clone());
            Some((d, c))
        }
        _ => None,
    };
    let running = fuser::spawn_mount(fs, dir, &cfg)
        .map_err(|e| format!("cannot mount the view at {}: {e}", dir.display()))?;
    Ok(Mounted {
        running: Some(running),
        dir: dir.to_path_buf(),
        copy,
    })
}

/// What an inode is: a directory (its path, "" for the root), a series' file, or a loose
/// file (written through the view, not a series yet). Inodes name paths: a path keeps its
/// inode whatever it holds.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
enum Node {
    Dir(String),
    File(String),
    Loose(String),
    /// A file of another program's beneath the view (mounted over `-b`): Munin's state
    /// files, a cache directory's images. Read and written through to the disk.
    Plain(String),
    /// A feed file of an emoncms view (its path in the view), held as a blob.
    Blob(String),
}

#[derive(Default)]
struct Inodes {
    by_path: HashMap<String, u64>,
    paths: Vec<String>,
}

impl Inodes {
    /// The inode of `path`, given one the first time it is seen (1 is the root, "").
    fn ino(&mut self, path: &str) -> u64 {
        if let Some(&i) = self.by_path.get(path) {
            return i;
        }
        self.paths.push(path.to_string());
        let i = self.paths.len() as u64;
        self.by_path.insert(path.to_string(), i);
        i
    }

    /// `from` was renamed to `to`: the kernel now knows `from`'s inode by the new name, and
    /// the inode `to` had (if any) names nothing.
    fn rename(&mut self, from: &str, to: &str) {
        if let Some(old) = self.by_path.remove(to) {
            self.paths[old as usize - 1] = String::new();
        }
        if let Some(i) = self.by_path.remove(from) {
            self.paths[i as usize - 1] = to.to_string();
            self.by_path.insert(to.to_string(), i);
        }
    }

    /// Directory `from` was renamed to `to`: it and every path the kernel knows beneath it
    /// keep their inodes under the new names.
    fn rename_tree(&mut self, from: &str, to: &str) {
        let prefix = format!("{from}/");
        let under: Vec<String> = self
            .by_path
            .keys()
            .filter(|p| p.starts_with(&prefix))
            .cloned()
            .collect();
        self.rename(from, to);
        for p in under {
            let new = format!("{to}/{}", &p[prefix.len()..]);
            self.rename(&p, &new);
        }
    }

    /// `path` was removed: a file made there later gets an inode of its own.
    fn unlink(&mut self, path: &str) {
        if let Some(old) = self.by_path.remove(path) {
            self.paths[old as usize - 1] = String::new();
        }
    }

    fn path(&self, ino: u64) -> Option<&str> {
        self.paths
            .get((ino as usize).checked_sub(1)?)
            .map(String::as_str)
    }
}

/// What setattr asks of a plain file.
struct PlainSet {
    mode: Option<u32>,
    uid: Option<u32>,
    gid: Option<u32>,
    size: Option<u64>,
    atime: Option<TimeOrNow>,
    mtime: Option<TimeOrNow>,
}

/// The store's names as of a version of them ([`engine::Store::names_version`]).
struct Names {
    version: (u64, usize),
    set: Arc<BTreeSet<String>>,
}

/// A file written through the view that is not a series (yet).
struct Loose {
    bytes: Vec<u8>,
    mtime: SystemTime,
}

/// An open file.
enum Handle {
    /// A series' file opened to read: the snapshot taken at open.
    Read(Arc<Vec<u8>>),
    /// A series' file opened to write in place: the snapshot at open, the bytes as written
    /// since, and how many bytes of it are the header (the only part that may change).
    Edit {
        name: String,
        orig: Arc<Vec<u8>>,
        buf: Vec<u8>,
        header: usize,
        dirty: bool,
    },
    /// A loose file at this path, written whole.
    Loose { path: String, dirty: bool },
    /// A plain file beneath the view, open there.
    Plain(Arc<std::fs::File>),
    /// A feed file of an emoncms view (its path in the view): read and written in the store.
    Blob(String),
}

struct View {
    d: Arc<Daemon>,
    inodes: Mutex<Inodes>,
    names: RwLock<Names>,
    /// Loose files by path, and the bytes they hold together.
    loose: Mutex<(HashMap<String, Loose>, usize)>,
    /// Directories made through the view (a directory that holds series needs none).
    dirs: Mutex<BTreeSet<String>>,
    open: Mutex<HashMap<u64, Handle>>,
    next_fh: AtomicU64,
    /// The daemon's first address, for the log line of a refused write.
    address: String,
    /// The directory beneath the view (`-b` when mounted over it, else the view's own
    /// directory), whose directories the view shows and keeps in step (mkdir, rmdir), so
    /// CREATE finds them and they outlast it, and where plain files are kept.
    beneath: Option<String>,
    /// The view's own directory, opened before the mount (when it is not over `-b`).
    _below: Option<std::fs::File>,
    /// The ids the view's own files and directories show: the daemon's after `-U`/`-G`.
    uid: u32,
    gid: u32,
    /// What the view shows: series as `.rrd` files, or emoncms's feed files.
    kind: Kind,
    /// When each feed file was last changed through the view (since the daemon started).
    mtimes: Mutex<HashMap<String, SystemTime>>,
    /// An emoncms view's plain copy in the directory beneath (`copy.rs`).
    copy: Option<Arc<copy::FeedCopy>>,
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

impl View {
    fn new(
        d: Arc<Daemon>,
        owner: (Option<u32>, Option<u32>),
        own: Option<std::fs::File>,
        kind: Kind,
    ) -> View {
        use std::os::fd::AsRawFd;
        let mut inodes = Inodes::default();
        inodes.ino("");
        let address = d.lock().places().address.clone();
        let beneath = match &own {
            Some(f) => Some(format!("/proc/self/fd/{}", f.as_raw_fd())),
            None => d.lower.get().map(|(_, p)| p.clone()),
        };
        View {
            d,
            inodes: Mutex::new(inodes),
            names: RwLock::new(Names {
                version: (u64::MAX, usize::MAX),
                set: Arc::new(BTreeSet::new()),
            }),
            loose: Mutex::new((HashMap::new(), 0)),
            dirs: Mutex::new(BTreeSet::new()),
            open: Mutex::new(HashMap::new()),
            next_fh: AtomicU64::new(1),
            address,
            beneath,
            _below: own,
            uid: owner.0.unwrap_or_else(host::sys::euid),
            gid: owner.1.unwrap_or_else(host::sys::egid),
            kind,
            mtimes: Mutex::new(HashMap::new()),
            copy: None,
        }
    }

    /// Whether `path` is the view's own (a series' file, or one that may become one; an
    /// emoncms feed file): any other name is a plain file beneath.
    fn own(&self, path: &str) -> bool {
        match self.kind {
            Kind::Rrd => rrd_like(path),
            k => k.own(path),
        }
    }

    /// `path` in the directory beneath the view (mounted over `-b`).
    fn below(&self, path: &str) -> Option<std::path::PathBuf> {
        let b = self.beneath.as_ref()?;
        Some(if path.is_empty() {
            std::path::PathBuf::from(b)
        } else {
            std::path::PathBuf::from(format!("{b}/{path}"))
        })
    }

    /// The plain file at `path` beneath the view: only over `-b`, only a name that is not
    /// the view's own ([`View::own`]), only a regular file (never a link out of the tree).
    fn plain_meta(&self, path: &str) -> Option<std::fs::Metadata> {
        if self.own(path) {
            return None;
        }
        let m = std::fs::symlink_metadata(self.below(path)?).ok()?;
        m.file_type().is_file().then_some(m)
    }

    /// The store's names, read again if series were created or removed since.
    fn names(&self) -> Arc<BTreeSet<String>> {
        if self.kind != Kind::Rrd {
            return Arc::new(self.feed_names());
        }
        let version = self.d.lock().names_version();
        {
            let n = self.names.read().unwrap_or_else(|p| p.into_inner());
            if n.version == version {
                return n.set.clone();
            }
        }
        let (version, all) = {
            let inner = self.d.lock();
            (inner.names_version(), inner.names())
        };
        // Names that a path cannot show (absolute ones, outside the base directory; empty
        // components) are left out.
        let set: BTreeSet<String> = all.into_iter().filter(|n| viewable(n)).collect();
        let set = Arc::new(set);
        let mut n = self.names.write().unwrap_or_else(|p| p.into_inner());
        *n = Names {
            version,
            set: set.clone(),
        };
        set
    }

    fn path_of(&self, ino: INodeNo) -> Option<String> {
        let ino = u64::from(ino);
        // Only the root is "": an inode whose path was removed names nothing.
        lock(&self.inodes)
            .path(ino)
            .filter(|p| ino == 1 || !p.is_empty())
            .map(str::to_string)
    }

    fn ino(&self, path: &str) -> u64 {
        lock(&self.inodes).ino(path)
    }

    /// What `path` is now: a loose file (what a writer of that path sees), a series' file, a
    /// directory (made through the view, or a prefix of names), or nothing.
    fn resolve(&self, path: &str) -> Option<Node> {
        if path.is_empty() {
            return Some(Node::Dir(String::new()));
        }
        if self.kind != Kind::Rrd && self.own(path) {
            return self.feed_len(path).map(|_| Node::Blob(path.to_string()));
        }
        if lock(&self.loose).0.contains_key(path) {
            return Some(Node::Loose(path.to_string()));
        }
        // The series' names (a feed view's own names were looked up above: its other names
        // are never a series' nor a series' directory, and listing its feeds is work).
        let names = match self.kind {
            Kind::Rrd => self.names(),
            _ => Arc::new(BTreeSet::new()),
        };
        if names.contains(path) {
            return Some(Node::File(path.to_string()));
        }
        if self.plain_meta(path).is_some() {
            return Some(Node::Plain(path.to_string()));
        }
        let prefix = format!("{path}/");
        let under = |set: &BTreeSet<String>| {
            set.range(prefix.clone()..)
                .next()
                .is_some_and(|n| n.starts_with(&prefix))
        };
        let is_dir = under(&names)
            || lock(&self.dirs).contains(path)
            || lock(&self.loose).0.keys().any(|k| k.starts_with(&prefix))
            || self.below(path).is_some_and(|p| p.is_dir());
        is_dir.then(|| Node::Dir(path.to_string()))
    }

    /// The node at `ino`, as its path is now.
    fn node(&self, ino: INodeNo) -> Option<Node> {
        self.resolve(&self.path_of(ino)?)
    }

    /// The permissions and owners directory `dir` of the view ("" its root) shows: those of
    /// the same directory beneath, or of its nearest parent there (a directory of series only
    /// the store has), so that a private directory stays private through the view (the
    /// kernel checks them: `default_permissions`). Without a directory beneath: 0755, the
    /// daemon's ids.
    fn dir_perm(&self, dir: &str) -> (u16, u32, u32) {
        use std::os::unix::fs::MetadataExt;
        if let Some(b) = &self.beneath {
            let mut d = dir;
            loop {
                // The root is reached through /proc/self/fd/N, a link to follow; below it no
                // link is followed.
                let m = if d.is_empty() {
                    std::fs::metadata(b)
                } else {
                    std::fs::symlink_metadata(format!("{b}/{d}"))
                };
                if let Ok(m) = m {
                    if m.is_dir() {
                        return ((m.mode() & 0o7777) as u16, m.uid(), m.gid());
                    }
                }
                if d.is_empty() {
                    break;
                }
                d = d.rsplit_once('/').map_or("", |(a, _)| a);
            }
        }
        (0o755, self.uid, self.gid)
    }

    fn dir_attr(&self, ino: u64, path: &str) -> FileAttr {
        let (perm, uid, gid) = self.dir_perm(path);
        FileAttr {
            ino: INodeNo(ino),
            size: 0,
            blocks: 0,
            atime: UNIX_EPOCH,
            mtime: UNIX_EPOCH,
            ctime: UNIX_EPOCH,
            crtime: UNIX_EPOCH,
            kind: FileType::Directory,
            perm,
            nlink: 2,
            uid,
            gid,
            rdev: 0,
            flags: 0,
            blksize: 4096,
        }
    }

    /// A file of the view's own: the daemon's ids (after -U, the user's), as for the files
    /// under -b, with its directory's permissions less execute (a 0700 directory's files are
    /// 0600, a 0755 one's 0644).
    fn file_attr(&self, ino: u64, path: &str, size: u64, t: SystemTime) -> FileAttr {
        let dir = path.rsplit_once('/').map_or("", |(d, _)| d);
        let perm = self.dir_perm(dir).0 & 0o666;
        FileAttr {
            size,
            blocks: size.div_ceil(512),
            atime: t,
            mtime: t,
            ctime: t,
            crtime: t,
            kind: FileType::RegularFile,
            perm,
            nlink: 1,
            uid: self.uid,
            gid: self.gid,
            ..self.dir_attr(ino, dir)
        }
    }

    fn attr(&self, ino: u64, n: &Node) -> Option<FileAttr> {
        match n {
            Node::Dir(p) => Some(self.dir_attr(ino, p)),
            Node::Plain(p) => Some(plain_attr(ino, &self.plain_meta(p)?)),
            Node::Loose(p) => {
                let l = lock(&self.loose);
                let f = l.0.get(p)?;
                Some(self.file_attr(ino, p, f.bytes.len() as u64, f.mtime))
            }
            Node::Blob(p) => {
                let size = self.feed_len(p)?;
                let t = lock(&self.mtimes).get(p).copied().unwrap_or(self.started());
                Some(self.file_attr(ino, p, size, t))
            }
            Node::File(name) => {
                // The time of the last value accepted: queued ones are applied first, as for
                // any read.
                let got = crate::read::with(&self.d, name, |rrd| {
                    (
                        rrd::rrdfile::file_len(&rrd.schema),
                        time_of(rrd.last_up, rrd.last_up_usec),
                    )
                });
                let (size, t) = match got {
                    Ok(found) => found?,
                    // Nothing held in memory is read after a failed write (its reads are
                    // EIO): the size from the definition, the time the view's start.
                    Err(_) => (
                        rrd::rrdfile::file_len(self.d.lock().schema(name)?),
                        self.started(),
                    ),
                };
                Some(self.file_attr(ino, name, size, t))
            }
        }
    }

    fn entry(&self, path: &str, reply: ReplyEntry) {
        match self.resolve(path) {
            Some(n) => {
                let ino = self.ino(path);
                match self.attr(ino, &n) {
                    Some(a) => reply.entry(&TTL, &a, Generation(0)),
                    None => reply.error(Errno::ENOENT),
                }
            }
            None => reply.error(Errno::ENOENT),
        }
    }

    /// The series' file as rrdtool would hold it, with every value the daemon accepted.
    fn snapshot(&self, name: &str) -> Result<Vec<u8>, Errno> {
        if self.d.unreadable().is_some() {
            // Logged once, when the write failed.
            return Err(Errno::EIO);
        }
        let rrd = match crate::read::copy(&self.d, name) {
            Ok(Some(rrd)) => rrd,
            Ok(None) => return Err(Errno::ENOENT),
            Err(_) => return Err(Errno::EIO),
        };
        let (bytes, damage) = rrd::rows::watch(|| rrd::rrdfile::write(&rrd));
        // Damaged rows: EIO, as a disk gives for a bad sector, never unknown values.
        if let Some(dm) = damage {
            crate::log::line(&format!("view: {}", dm.message(name)));
            return Err(Errno::EIO);
        }
        bytes.map_err(|e| {
            crate::log::line(&format!("view: {name}: cannot build the file: {e}"));
            Errno::EIO
        })
    }

    fn add_handle(&self, h: Handle) -> u64 {
        let fh = self.next_fh.fetch_add(1, Ordering::Relaxed);
        lock(&self.open).insert(fh, h);
        fh
    }

    /// A new, empty loose file at `path` (replacing one there).
    fn new_loose(&self, path: &str) {
        self.put_loose(path, Vec::new());
    }

    /// Take the loose file at `path` away.
    fn take_loose(&self, path: &str) -> Option<Vec<u8>> {
        let mut l = lock(&self.loose);
        let f = l.0.remove(path)?;
        l.1 -= f.bytes.len();
        Some(f.bytes)
    }

    fn put_loose(&self, path: &str, bytes: Vec<u8>) {
        let mut l = lock(&self.loose);
        l.1 += bytes.len();
        if let Some(old) = l.0.insert(
            path.to_string(),
            Loose {
                bytes,
                mtime: SystemTime::now(),
            },
        ) {
            l.1 -= old.bytes.len();
        }
    }

    /// A loose file at a `.rrd` path becomes that series when it is an RRD file; one that is
    /// not (yet) stays loose. Errors are for close(2).
    fn settle_loose(&self, path: &str) -> Result<(), Errno> {
        if !path.ends_with(".rrd") {
            return Ok(());
        }
        let Some(bytes) = self.take_loose(path) else {
            return Ok(());
        };
        match view_import(&self.d, path, &bytes) {
            Ok(()) => Ok(()),
            Err(e) => {
                // A series' file rewritten with something else: the series stays as it was
                // (and visible). A new file stays loose: it may be written further.
                if self.names().contains(path) {
                    crate::log::line(&format!(
                        "view: {path}: not imported, the series is unchanged: {e}"
                    ));
                } else {
                    crate::log::line(&format!(
                        "view: {path}: not imported (kept as a plain file): {e}"
                    ));
                    self.put_loose(path, bytes);
                }
                Err(Errno::EIO)
            }
        }
    }

    /// A series' file written in place: imported if only its header changed and the series
    /// did not change meanwhile.
    fn settle_edit(&self, name: &str, orig: &[u8], buf: &[u8]) -> Result<(), Errno> {
        let now = self.snapshot(name)?;
        if now != orig {
            crate::log::line(&format!(
                "view: {name}: changed by the daemon while open for writing; the file's changes \
                 are not applied (write it again)"
            ));
            return Err(Errno::EAGAIN);
        }
        view_import(&self.d, name, buf).map_err(|e| {
            crate::log::line(&format!("view: {name}: not imported: {e}"));
            Errno::EIO
        })
    }

    /// Finish what a handle wrote (at flush and release); returns the error for close(2).
    fn settle(&self, fh: u64) -> Result<(), Errno> {
        enum Todo {
            Loose(String),
            Edit(String, Arc<Vec<u8>>, Vec<u8>),
        }
        let todo = {
            let mut open = lock(&self.open);
            match open.get_mut(&fh) {
                Some(Handle::Loose { path, dirty }) if *dirty => {
                    *dirty = false;
                    Todo::Loose(path.clone())
                }
                Some(Handle::Edit {
                    name,
                    orig,
                    buf,
                    dirty,
                    ..
                }) if *dirty => {
                    *dirty = false;
                    Todo::Edit(name.clone(), orig.clone(), buf.clone())
                }
                _ => return Ok(()),
            }
        };
        match todo {
            Todo::Loose(path) => self.settle_loose(&path),
            Todo::Edit(name, orig, buf) => self.settle_edit(&name, &orig, &buf),
        }
    }

    /// flush and fsync: what the handle wrote is imported (the store holds it durably), or
    /// the reason it is not, for close(2) and fsync(2).
    fn reply_settled(&self, fh: FileHandle, reply: ReplyEmpty) {
        match self.settle(u64::from(fh)) {
            Ok(()) => reply.ok(),
            Err(e) => reply.error(e),
        }
    }

    /// Children of directory `dir`: (path, is a directory), each once, in order.
    fn children(&self, dir: &str) -> Vec<(String, bool)> {
        let prefix = if dir.is_empty() {
            String::new()
        } else {
            format!("{dir}/")
        };
        let mut out: BTreeSet<(String, bool)> = BTreeSet::new();
        // `dir`: `p` is a directory made through the view (else a file's path).
        let mut add = |p: &str, dir: bool| {
            if let Some(rest) = p.strip_prefix(&prefix) {
                match rest.split_once('/') {
                    None if !rest.is_empty() => {
                        out.insert((p.to_string(), dir));
                    }
                    Some((sub, _)) => {
                        out.insert((format!("{prefix}{sub}"), true));
                    }
                    None => {}
                }
            }
        };
        let names = self.names();
        let mut last_dir: Option<String> = None;
        for n in names.range(prefix.clone()..) {
            let Some(rest) = n.strip_prefix(&prefix) else {
                break;
            };
            // Each subdirectory once, however many series it holds.
            let sub = rest.split_once('/').map(|(s, _)| s);
            if sub.is_some() && sub == last_dir.as_deref() {
                continue;
            }
            last_dir = sub.map(str::to_string);
            add(n, false);
        }
        for p in lock(&self.loose).0.keys() {
            add(p, false);
        }
        for p in lock(&self.dirs).iter() {
            add(p, true);
        }
        // Directories and plain files beneath (the `.rrd` files there are placeholders of the
        // names above, or files the daemon imports when a client names them).
        if let Some(rd) = self.below(dir).and_then(|p| std::fs::read_dir(p).ok()) {
            for e in rd.flatten() {
                let (Ok(t), Some(n)) = (e.file_type(), e.file_name().to_str().map(str::to_string))
                else {
                    continue;
                };
                if t.is_dir() {
                    add(&join(dir, &n), true);
                } else if t.is_file() && !self.own(&n) {
                    add(&join(dir, &n), false);
                }
            }
        }
        // A name that is both a series' file and a loose file's is listed as the file.
        let mut v: Vec<(String, bool)> = Vec::with_capacity(out.len());
        for e in out {
            if v.last().is_some_and(|l| l.0 == e.0) {
                continue;
            }
            v.push(e);
        }
        v
    }

    /// chmod, chown, truncate and utimes on a plain file beneath.
    fn plain_setattr(&self, p: &str, fh: Option<FileHandle>, set: &PlainSet) -> Result<(), Errno> {
        use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
        let path = self.below(p).ok_or(Errno::ENOENT)?;
        let io = |r: std::io::Result<()>| r.map_err(|e| errno(&e));
        if let Some(m) = set.mode {
            io(std::fs::set_permissions(
                &path,
                std::fs::Permissions::from_mode(m & 0o7777),
            ))?;
        }
        if set.uid.is_some() || set.gid.is_some() {
            io(std::os::unix::fs::lchown(&path, set.uid, set.gid))?;
        }
        if set.size.is_some() || set.atime.is_some() || set.mtime.is_some() {
            let open = fh.and_then(|fh| match lock(&self.open).get(&u64::from(fh)) {
                Some(Handle::Plain(f)) => Some(f.clone()),
                _ => None,
            });
            let f = match open {
                Some(f) => f,
                None => Arc::new(
                    std::fs::OpenOptions::new()
                        .read(set.size.is_none())
                        .write(set.size.is_some())
                        .custom_flags(libc::O_NOFOLLOW)
                        .open(&path)
                        .map_err(|e| errno(&e))?,
                ),
            };
            if let Some(size) = set.size {
                io(f.set_len(size))?;
            }
            let when = |t: TimeOrNow| match t {
                TimeOrNow::SpecificTime(t) => t,
                TimeOrNow::Now => SystemTime::now(),
            };
            let mut times = std::fs::FileTimes::new();
            if let Some(t) = set.atime {
                times = times.set_accessed(when(t));
            }
            if let Some(t) = set.mtime {
                times = times.set_modified(when(t));
            }
            if set.atime.is_some() || set.mtime.is_some() {
                io(f.set_times(times))?;
            }
        }
        Ok(())
    }

    /// A plain file renamed: beneath, or, given a series' name, imported as that series
    /// (and gone beneath once the store holds it).
    fn rename_plain(&self, from: &str, to: &str, target: Option<&Node>) -> Result<(), Errno> {
        let src = self.below(from).ok_or(Errno::ENOENT)?;
        if self.kind != Kind::Rrd && self.own(to) {
            // A feed file put in place (a backup's copy renamed): the store takes it.
            let bytes = std::fs::read(&src).map_err(|e| errno(&e))?;
            self.feed_import(to, &bytes)?;
            return std::fs::remove_file(&src).map_err(|e| errno(&e));
        }
        if self.kind == Kind::Rrd && rrd_like(to) {
            let bytes = std::fs::read(&src).map_err(|e| errno(&e))?;
            if let Some(Node::Loose(t)) = target {
                self.take_loose(t);
            }
            view_import(&self.d, to, &bytes).map_err(|e| {
                crate::log::line(&format!("view: {from}: not imported as {to}: {e}"));
                Errno::EIO
            })?;
            return std::fs::remove_file(&src).map_err(|e| errno(&e));
        }
        if matches!(target, Some(Node::File(_))) {
            // A series' name that is not `.rrd`-like: the series stays; the file is not
            // hidden beneath it.
            return Err(Errno::EEXIST);
        }
        let dst = self.below(to).ok_or(Errno::ENOENT)?;
        std::fs::rename(src, dst).map_err(|e| errno(&e))
    }

    /// Whether directory `dir` is beneath the view and holds no series or loose file.
    fn only_plain_beneath(&self, dir: &str) -> bool {
        if self.beneath.is_none() {
            return false;
        }
        let prefix = format!("{dir}/");
        let names = self.names();
        let series = names
            .range(prefix.clone()..)
            .next()
            .is_some_and(|n| n.starts_with(&prefix));
        let loose = lock(&self.loose).0.keys().any(|k| k.starts_with(&prefix));
        !series && !loose && !lock(&self.dirs).iter().any(|k| k.starts_with(&prefix))
    }

    /// A refused write: logged with where to send updates instead.
    fn refuse_rows(&self, name: &str) -> Errno {
        crate::log::line(&format!(
            "view: {name}: a write to its rows in place was refused; send updates to the daemon \
             (RRDCACHED_ADDRESS={} rrdtool update ...)",
            self.address
        ));
        Errno::EPERM
    }
}

/// Whether a path is the view's own: a series' file, or a file that may become one
/// (rrdtool's temporary `x.rrdXXXXXX`, a copy's `.x.rrd.tmp`): its last component holds
/// `.rrd`. Over `-b` any other name is a plain file beneath, written through to the disk.
fn rrd_like(path: &str) -> bool {
    path.rsplit('/').next().is_some_and(|n| n.contains(".rrd"))
}

fn errno(e: &std::io::Error) -> Errno {
    Errno::from_i32(e.raw_os_error().unwrap_or(libc::EIO))
}

/// A plain file's attributes, as the disk has them.
fn plain_attr(ino: u64, m: &std::fs::Metadata) -> FileAttr {
    use std::os::unix::fs::MetadataExt;
    FileAttr {
        ino: INodeNo(ino),
        size: m.size(),
        blocks: m.blocks(),
        atime: time_of(m.atime(), m.atime_nsec() / 1000),
        mtime: time_of(m.mtime(), m.mtime_nsec() / 1000),
        ctime: time_of(m.ctime(), m.ctime_nsec() / 1000),
        crtime: time_of(m.ctime(), m.ctime_nsec() / 1000),
        kind: FileType::RegularFile,
        perm: (m.mode() & 0o7777) as u16,
        nlink: m.nlink() as u32,
        uid: m.uid(),
        gid: m.gid(),
        rdev: 0,
        flags: 0,
        blksize: 4096,
    }
}

/// The open(2) flags a plain file is opened with beneath: the caller's, never following a
/// link.
fn plain_options(flags: i32) -> std::fs::OpenOptions {
    use std::os::unix::fs::OpenOptionsExt;
    let acc = flags & libc::O_ACCMODE;
    let mut o = std::fs::OpenOptions::new();
    o.read(acc != libc::O_WRONLY)
        .write(acc != libc::O_RDONLY)
        .custom_flags(flags & (libc::O_APPEND | libc::O_TRUNC | libc::O_EXCL) | libc::O_NOFOLLOW);
    o
}

/// A name the view can show as a path: relative, without empty, `.` or `..` components.
fn viewable(name: &str) -> bool {
    !name.is_empty()
        && !name.starts_with('/')
        && name
            .split('/')
            .all(|c| !c.is_empty() && c != "." && c != "..")
}

fn time_of(secs: i64, usec: i64) -> SystemTime {
    let nanos = (usec.clamp(0, 999_999) * 1000) as u32;
    if secs >= 0 {
        UNIX_EPOCH + Duration::new(secs as u64, nanos)
    } else {
        UNIX_EPOCH - Duration::from_secs(secs.unsigned_abs())
    }
}

fn join(dir: &str, name: &str) -> String {
    if dir.is_empty() {
        name.to_string()
    } else {
        format!("{dir}/{name}")
    }
}

/// `name` in directory `parent` (an inode the view gave), if it can be a path there.
fn child(v: &View, parent: INodeNo, name: &OsStr) -> Result<String, Errno> {
    let Some(Node::Dir(dir)) = v.node(parent) else {
        return Err(Errno::ENOENT);
    };
    let name = name.to_str().ok_or(Errno::EINVAL)?;
    if name.is_empty() || name == "." || name == ".." || name.contains('/') {
        return Err(Errno::EINVAL);
    }
    Ok(join(&dir, name))
}

/// Write `bytes` as the plain file `dst` (made or replaced; never through a link).
fn write_plain(dst: &Path, bytes: &[u8]) -> std::io::Result<()> {
    use std::io::Write;
    use std::os::unix::fs::OpenOptionsExt;
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o644)
        .custom_flags(libc::O_NOFOLLOW)
        .open(dst)?;
    f.write_all(bytes)
}

/// Up to `size` bytes of `f` from `offset` (fewer only at its end).
fn read_plain(f: &std::fs::File, offset: u64, size: usize) -> std::io::Result<Vec<u8>> {
    use std::os::unix::fs::FileExt;
    let mut buf = vec![0u8; size];
    let mut got = 0;
    while got < size {
        match f.read_at(&mut buf[got..], offset + got as u64) {
            Ok(0) => break,
            Ok(n) => got += n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    buf.truncate(got);
    Ok(buf)
}

/// Overwrite `buf` at `offset` with `data`, growing it (zeros in any gap).
fn write_at(buf: &mut Vec<u8>, offset: usize, data: &[u8]) {
    let end = offset + data.len();
    if buf.len() < end {
        buf.resize(end, 0);
    }
    buf[offset..end].copy_from_slice(data);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_relative_clean_names_are_paths() {
        assert!(viewable("a/b.rrd"));
        assert!(viewable("b.rrd"));
        for bad in ["", "/abs/x.rrd", "a//b.rrd", "a/../b.rrd", "./b.rrd", "a/"] {
            assert!(!viewable(bad), "{bad}");
        }
    }

    #[test]
    fn inodes_are_stable_and_start_at_the_root() {
        let mut i = Inodes::default();
        assert_eq!(i.ino(""), 1);
        let a = i.ino("a.rrd");
        assert_eq!(i.ino("x"), a + 1);
        assert_eq!(i.ino("a.rrd"), a);
        assert_eq!(i.path(a), Some("a.rrd"));
        assert_eq!(i.path(0), None);
        assert_eq!(i.path(99), None);
        // A rename moves the inode to the new name; the one there before names nothing.
        let b = i.ino("b.rrd");
        i.rename("a.rrd", "b.rrd");
        assert_eq!(i.path(a), Some("b.rrd"));
        assert_eq!(i.ino("b.rrd"), a);
        assert_eq!(i.path(b), Some(""));
        i.unlink("b.rrd");
        assert_ne!(i.ino("b.rrd"), a);
    }

    #[test]
    fn writes_grow_and_overwrite() {
        let mut b = vec![1, 2, 3];
        write_at(&mut b, 1, &[9]);
        assert_eq!(b, [1, 9, 3]);
        write_at(&mut b, 5, &[7, 7]);
        assert_eq!(b, [1, 9, 3, 0, 0, 7, 7]);
    }
}
