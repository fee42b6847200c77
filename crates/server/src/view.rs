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
//! - This first stage is read-only (the mount is `ro`): writes get `EROFS`.
//!
//! The FUSE side is the `fuser` crate (pure Rust, mounting through /dev/fuse as root); what
//! is served is ours.

use crate::daemon::Daemon;
use fuser::{
    Config, Errno, FileAttr, FileHandle, FileType, Filesystem, FopenFlags, Generation, INodeNo,
    LockOwner, MountOption, OpenFlags, ReplyAttr, ReplyData, ReplyDirectory, ReplyEmpty,
    ReplyEntry, ReplyOpen, Request, SessionACL,
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

/// The mounted view; unmounted when dropped.
pub struct Mounted {
    session: Option<fuser::BackgroundSession>,
    pub dir: std::path::PathBuf,
}

impl Drop for Mounted {
    fn drop(&mut self) {
        if let Some(s) = self.session.take() {
            if let Err(e) = s.umount_and_join() {
                crate::log(&format!("view: unmounting {}: {e}", self.dir.display()));
            }
        }
    }
}

/// Mount the view of `d`'s store at `dir`. A stale mount left there by a run that died is
/// detached first.
pub fn mount(d: Arc<Daemon>, dir: &Path) -> Result<Mounted, String> {
    if let Err(e) = std::fs::metadata(dir) {
        // ENOTCONN: a FUSE mount whose daemon is gone.
        if e.raw_os_error() == Some(libc::ENOTCONN) {
            crate::sys::detach_mount(dir)
                .map_err(|e| format!("cannot remove the stale mount at {}: {e}", dir.display()))?;
            crate::log(&format!("view: removed a stale mount at {}", dir.display()));
        } else {
            return Err(format!("cannot mount the view at {}: {e}", dir.display()));
        }
    }
    if !Path::new("/dev/fuse").exists() {
        return Err("cannot mount the view: /dev/fuse is missing (no FUSE here)".into());
    }
    let mut cfg = Config::default();
    cfg.mount_options = vec![
        MountOption::RO,
        MountOption::FSName("ringlet".into()),
        MountOption::Subtype("ringlet".into()),
        MountOption::DefaultPermissions,
        MountOption::NoExec,
        MountOption::NoSuid,
        MountOption::NoDev,
    ];
    // Readable by every user (Munin, the web server), as the files under -b are.
    cfg.acl = SessionACL::All;
    // A slow open (a large file built) does not hold up the others.
    cfg.n_threads = Some(4);
    let fs = View::new(d);
    let session = fuser::spawn_mount(fs, dir, &cfg)
        .map_err(|e| format!("cannot mount the view at {}: {e}", dir.display()))?;
    Ok(Mounted {
        session: Some(session),
        dir: dir.to_path_buf(),
    })
}

/// What an inode is: a directory (its path, "" for the root) or a series' file.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
enum Node {
    Dir(String),
    File(String),
}

impl Node {
    fn path(&self) -> &str {
        match self {
            Node::Dir(p) | Node::File(p) => p,
        }
    }
}

#[derive(Default)]
struct Inodes {
    by_node: HashMap<Node, u64>,
    nodes: Vec<Node>,
}

impl Inodes {
    /// The inode of `n`, given one the first time it is seen (1 is the root).
    fn ino(&mut self, n: Node) -> u64 {
        if let Some(&i) = self.by_node.get(&n) {
            return i;
        }
        self.nodes.push(n.clone());
        let i = self.nodes.len() as u64;
        self.by_node.insert(n, i);
        i
    }

    fn node(&self, ino: u64) -> Option<&Node> {
        self.nodes.get((ino as usize).checked_sub(1)?)
    }
}

/// The store's names as of a version of them ([`engine::Store::names_version`]).
struct Names {
    version: (u64, usize),
    set: Arc<BTreeSet<String>>,
}

struct View {
    d: Arc<Daemon>,
    inodes: Mutex<Inodes>,
    names: RwLock<Names>,
    /// Open files' snapshots by handle.
    open: Mutex<HashMap<u64, Arc<Vec<u8>>>>,
    next_fh: AtomicU64,
    uid: u32,
    gid: u32,
}

impl View {
    fn new(d: Arc<Daemon>) -> View {
        let mut inodes = Inodes::default();
        inodes.ino(Node::Dir(String::new()));
        // SAFETY: getuid/getgid cannot fail.
        let (uid, gid) = unsafe { (libc::getuid(), libc::getgid()) };
        View {
            d,
            inodes: Mutex::new(inodes),
            names: RwLock::new(Names {
                version: (u64::MAX, usize::MAX),
                set: Arc::new(BTreeSet::new()),
            }),
            open: Mutex::new(HashMap::new()),
            next_fh: AtomicU64::new(1),
            uid,
            gid,
        }
    }

    /// The store's names, read again if series were created or removed since.
    fn names(&self) -> Arc<BTreeSet<String>> {
        let version = self.d.lock().store.names_version();
        {
            let n = self.names.read().unwrap_or_else(|p| p.into_inner());
            if n.version == version {
                return n.set.clone();
            }
        }
        let (version, all) = {
            let inner = self.d.lock();
            (inner.store.names_version(), inner.store.names())
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

    fn node(&self, ino: INodeNo) -> Option<Node> {
        let i = self.inodes.lock().unwrap_or_else(|p| p.into_inner());
        i.node(u64::from(ino)).cloned()
    }

    fn ino(&self, n: Node) -> u64 {
        self.inodes.lock().unwrap_or_else(|p| p.into_inner()).ino(n)
    }

    /// What `path` is now: a series' file, a directory (a prefix of names), or nothing.
    fn resolve(&self, path: &str) -> Option<Node> {
        let names = self.names();
        if path.is_empty() {
            return Some(Node::Dir(String::new()));
        }
        if names.contains(path) {
            return Some(Node::File(path.to_string()));
        }
        let prefix = format!("{path}/");
        let under = names
            .range(prefix.clone()..)
            .next()
            .is_some_and(|n| n.starts_with(&prefix));
        under.then(|| Node::Dir(path.to_string()))
    }

    fn attr(&self, ino: u64, n: &Node) -> Option<FileAttr> {
        let base = FileAttr {
            ino: INodeNo(ino),
            size: 0,
            blocks: 0,
            atime: UNIX_EPOCH,
            mtime: UNIX_EPOCH,
            ctime: UNIX_EPOCH,
            crtime: UNIX_EPOCH,
            kind: FileType::Directory,
            perm: 0o755,
            nlink: 2,
            uid: self.uid,
            gid: self.gid,
            rdev: 0,
            flags: 0,
            blksize: 4096,
        };
        match n {
            Node::Dir(_) => Some(base),
            Node::File(name) => {
                let (size, last, usec) = {
                    // The time of the last value accepted: queued ones are applied first,
                    // as for any read.
                    let mut inner = self.d.lock();
                    self.d.apply_series(&mut inner, name);
                    let rrd = inner.store.get(name)?;
                    (
                        rrd::rrdfile::file_len(&rrd.schema),
                        rrd.last_up,
                        rrd.last_up_usec,
                    )
                };
                let t = time_of(last, usec);
                Some(FileAttr {
                    size,
                    blocks: size.div_ceil(512),
                    atime: t,
                    mtime: t,
                    ctime: t,
                    crtime: t,
                    kind: FileType::RegularFile,
                    perm: 0o644,
                    nlink: 1,
                    ..base
                })
            }
        }
    }

    /// The series' file as rrdtool would hold it, with every value the daemon accepted.
    fn snapshot(&self, name: &str) -> Result<Vec<u8>, Errno> {
        let rrd = {
            let mut inner = self.d.lock();
            self.d.apply_series(&mut inner, name);
            match inner.store.get(name) {
                Some(r) => r.clone(),
                None => return Err(Errno::ENOENT),
            }
        };
        rrd::rrdfile::write(&rrd).map_err(|e| {
            crate::log(&format!("view: {name}: cannot build the file: {e}"));
            Errno::EIO
        })
    }
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

impl Filesystem for View {
    fn lookup(&self, _req: &Request, parent: INodeNo, name: &OsStr, reply: ReplyEntry) {
        let Some(Node::Dir(dir)) = self.node(parent) else {
            return reply.error(Errno::ENOENT);
        };
        let Some(name) = name.to_str() else {
            return reply.error(Errno::ENOENT);
        };
        let path = join(&dir, name);
        match self.resolve(&path) {
            Some(n) => {
                let ino = self.ino(n.clone());
                match self.attr(ino, &n) {
                    Some(a) => reply.entry(&TTL, &a, Generation(0)),
                    None => reply.error(Errno::ENOENT),
                }
            }
            None => reply.error(Errno::ENOENT),
        }
    }

    fn getattr(&self, _req: &Request, ino: INodeNo, _fh: Option<FileHandle>, reply: ReplyAttr) {
        let Some(n) = self.node(ino) else {
            return reply.error(Errno::ENOENT);
        };
        // A series removed since the lookup is gone.
        if self.resolve(n.path()).as_ref() != Some(&n) {
            return reply.error(Errno::ENOENT);
        }
        match self.attr(u64::from(ino), &n) {
            Some(a) => reply.attr(&TTL, &a),
            None => reply.error(Errno::ENOENT),
        }
    }

    fn open(&self, _req: &Request, ino: INodeNo, flags: OpenFlags, reply: ReplyOpen) {
        let Some(Node::File(name)) = self.node(ino) else {
            return reply.error(Errno::EISDIR);
        };
        if flags.0 & libc::O_ACCMODE != libc::O_RDONLY {
            return reply.error(Errno::EROFS);
        }
        match self.snapshot(&name) {
            Ok(bytes) => {
                let fh = self.next_fh.fetch_add(1, Ordering::Relaxed);
                self.open
                    .lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .insert(fh, Arc::new(bytes));
                reply.opened(FileHandle(fh), FopenFlags::empty());
            }
            Err(e) => reply.error(e),
        }
    }

    fn read(
        &self,
        _req: &Request,
        _ino: INodeNo,
        fh: FileHandle,
        offset: u64,
        size: u32,
        _flags: OpenFlags,
        _lock_owner: Option<LockOwner>,
        reply: ReplyData,
    ) {
        let bytes = self
            .open
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get(&u64::from(fh))
            .cloned();
        let Some(bytes) = bytes else {
            return reply.error(Errno::EBADF);
        };
        let start = (offset as usize).min(bytes.len());
        let end = start.saturating_add(size as usize).min(bytes.len());
        reply.data(&bytes[start..end]);
    }

    fn release(
        &self,
        _req: &Request,
        _ino: INodeNo,
        fh: FileHandle,
        _flags: OpenFlags,
        _lock_owner: Option<LockOwner>,
        _flush: bool,
        reply: ReplyEmpty,
    ) {
        self.open
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .remove(&u64::from(fh));
        reply.ok();
    }

    fn readdir(
        &self,
        _req: &Request,
        ino: INodeNo,
        _fh: FileHandle,
        offset: u64,
        mut reply: ReplyDirectory,
    ) {
        let Some(Node::Dir(dir)) = self.node(ino) else {
            return reply.error(Errno::ENOTDIR);
        };
        let names = self.names();
        let prefix = if dir.is_empty() {
            String::new()
        } else {
            format!("{dir}/")
        };
        // The directory's children: files directly in it, and the first component of the
        // names deeper down (each once: the names are sorted).
        let mut entries: Vec<(Node, String)> = Vec::new();
        let mut last_dir: Option<String> = None;
        for n in names.range(prefix.clone()..) {
            let Some(rest) = n.strip_prefix(&prefix) else {
                break;
            };
            match rest.split_once('/') {
                None => entries.push((Node::File(n.clone()), rest.to_string())),
                Some((sub, _)) => {
                    if last_dir.as_deref() != Some(sub) {
                        last_dir = Some(sub.to_string());
                        entries.push((Node::Dir(join(&dir, sub)), sub.to_string()));
                    }
                }
            }
        }
        if entries.is_empty() && !dir.is_empty() {
            return reply.error(Errno::ENOENT);
        }
        let parent = match dir.rsplit_once('/') {
            Some((p, _)) => Node::Dir(p.to_string()),
            None => Node::Dir(String::new()),
        };
        let dots = [
            (u64::from(ino), FileType::Directory, ".".to_string()),
            (self.ino(parent), FileType::Directory, "..".to_string()),
        ];
        let all = dots.into_iter().chain(entries.into_iter().map(|(n, name)| {
            let kind = match n {
                Node::Dir(_) => FileType::Directory,
                Node::File(_) => FileType::RegularFile,
            };
            (self.ino(n), kind, name)
        }));
        for (i, (ino, kind, name)) in all.enumerate().skip(offset as usize) {
            if reply.add(INodeNo(ino), (i + 1) as u64, kind, &name) {
                break;
            }
        }
        reply.ok();
    }
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
        assert_eq!(i.ino(Node::Dir(String::new())), 1);
        let a = i.ino(Node::File("a.rrd".into()));
        assert_eq!(i.ino(Node::Dir("x".into())), a + 1);
        assert_eq!(i.ino(Node::File("a.rrd".into())), a);
        assert_eq!(i.node(a), Some(&Node::File("a.rrd".into())));
        assert_eq!(i.node(0), None);
        assert_eq!(i.node(99), None);
    }
}
