//! A simulated file system for crash and I/O-error tests.
//!
//! Every file keeps a *live* image (what reads see) and a *durable* image (what survives a
//! crash): `sync_data`/`sync_all` copy live to durable; directory entries (creations,
//! renames, removals) become durable only at `sync_dir`. The test arms one fault:
//! [`Fault::CrashAtSync`] freezes the whole file system at the N-th sync (that sync does not
//! happen; every later call fails, as if the process died), [`Fault::FailSync`] and
//! [`Fault::FailWrite`] make the N-th sync or write return an error and carry on.
//! [`SimFs::restart`] then gives the file system a rebooted machine would see: the durable
//! images, optionally plus a seeded random subset of the unsynced 512-byte sectors (torn
//! writes).

use crate::vfs::{LockGuard, VFile, Vfs};
use std::collections::{HashMap, HashSet};
use std::io;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard};

/// The fault a test arms.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fault {
    None,
    /// The N-th sync (1-based, file or directory) never happens: the machine stops there.
    CrashAtSync(u64),
    /// The N-th sync returns EIO (nothing becomes durable); the file system goes on.
    FailSync(u64),
    /// The N-th write returns EIO without writing; the file system goes on.
    FailWrite(u64),
    /// The N-th write panics without writing (a bug in the middle of a commit).
    PanicAtWrite(u64),
    /// The disk is full: every write past a file's end (and every growth) fails with
    /// `StorageFull`, until the fault is cleared; writes within a file go on.
    NoSpace,
}

#[derive(Debug, Clone)]
enum Pending {
    Write(u64, Vec<u8>),
    SetLen(u64),
}

#[derive(Debug, Clone, Default)]
struct Inode {
    live: Vec<u8>,
    durable: Vec<u8>,
    /// Changes since the last sync, in order (for torn restarts).
    pending: Vec<Pending>,
}

#[derive(Debug, Default)]
struct State {
    inodes: Vec<Inode>,
    names: HashMap<PathBuf, usize>,
    durable_names: HashMap<PathBuf, usize>,
    locks: HashSet<PathBuf>,
    syncs: u64,
    writes: u64,
    fault: Option<Fault>,
    crashed: bool,
    /// Block size reported to the store (0: 4096).
    block_size: u64,
}

/// A shared handle on one simulated machine's disk.
#[derive(Clone, Default)]
pub struct SimFs {
    st: Arc<Mutex<State>>,
}

fn eio(what: &str) -> io::Error {
    io::Error::other(format!("simulated {what}"))
}

impl SimFs {
    pub fn new() -> Self {
        SimFs::default()
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        // A panic while holding the lock leaves the state usable; ignore poisoning.
        self.st.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Report `n` as the file system's block size (the log's record alignment).
    pub fn set_block_size(&self, n: u64) {
        self.lock().block_size = n;
    }

    pub fn set_fault(&self, f: Fault) {
        self.lock().fault = Some(f);
    }

    /// Syncs performed so far (including the faulted one).
    pub fn syncs(&self) -> u64 {
        self.lock().syncs
    }

    /// Writes performed so far (including a faulted one).
    pub fn writes(&self) -> u64 {
        self.lock().writes
    }

    pub fn crashed(&self) -> bool {
        self.lock().crashed
    }

    /// The disk after a reboot: durable images and durable names, no locks, no fault. With
    /// `torn_seed`, each unsynced sector write survives with probability 1/2.
    pub fn restart(&self, torn_seed: Option<u64>) -> SimFs {
        let st = self.lock();
        let mut rng = torn_seed.map(testkit::Rng::seeded);
        let mut coin = move || rng.as_mut().is_some_and(testkit::Rng::coin);
        let inodes = st
            .inodes
            .iter()
            .map(|ino| {
                let mut img = ino.durable.clone();
                for p in &ino.pending {
                    match p {
                        Pending::SetLen(n) => {
                            if coin() {
                                img.resize(*n as usize, 0);
                            }
                        }
                        Pending::Write(off, data) => {
                            for (i, sector) in data.chunks(512).enumerate() {
                                if coin() {
                                    write_into(&mut img, off + i as u64 * 512, sector);
                                }
                            }
                        }
                    }
                }
                Inode {
                    live: img.clone(),
                    durable: img,
                    pending: Vec::new(),
                }
            })
            .collect();
        SimFs {
            st: Arc::new(Mutex::new(State {
                inodes,
                names: st.durable_names.clone(),
                durable_names: st.durable_names.clone(),
                block_size: st.block_size,
                ..State::default()
            })),
        }
    }

    /// The live bytes of a file (for tests that damage files).
    pub fn read_file(&self, path: &Path) -> Option<Vec<u8>> {
        let st = self.lock();
        st.names.get(path).map(|&i| st.inodes[i].live.clone())
    }

    /// Replace a file's bytes, live and durable (damage done "while the machine was off").
    pub fn write_file(&self, path: &Path, bytes: Vec<u8>) {
        let mut st = self.lock();
        let i = match st.names.get(path) {
            Some(&i) => i,
            None => {
                st.inodes.push(Inode::default());
                let i = st.inodes.len() - 1;
                st.names.insert(path.to_path_buf(), i);
                st.durable_names.insert(path.to_path_buf(), i);
                i
            }
        };
        st.inodes[i] = Inode {
            live: bytes.clone(),
            durable: bytes,
            pending: Vec::new(),
        };
    }

    /// Count a sync; `Err` if it is the faulted one (or the machine is down).
    fn sync_point(&self, st: &mut State) -> io::Result<()> {
        if st.crashed {
            return Err(eio("crash"));
        }
        st.syncs += 1;
        match st.fault {
            Some(Fault::CrashAtSync(n)) if n == st.syncs => {
                st.crashed = true;
                Err(eio("crash"))
            }
            Some(Fault::FailSync(n)) if n == st.syncs => Err(eio("fsync error")),
            _ => Ok(()),
        }
    }
}

fn write_into(img: &mut Vec<u8>, off: u64, data: &[u8]) {
    let end = off as usize + data.len();
    if img.len() < end {
        img.resize(end, 0);
    }
    img[off as usize..end].copy_from_slice(data);
}

struct SimFile {
    fs: SimFs,
    ino: usize,
}

impl SimFile {
    fn alive(&self) -> io::Result<MutexGuard<'_, State>> {
        let st = self.fs.lock();
        if st.crashed {
            return Err(eio("crash"));
        }
        Ok(st)
    }
}

impl VFile for SimFile {
    fn read_at(&self, buf: &mut [u8], off: u64) -> io::Result<usize> {
        let st = self.alive()?;
        let live = &st.inodes[self.ino].live;
        if off >= live.len() as u64 {
            return Ok(0);
        }
        let n = buf.len().min(live.len() - off as usize);
        buf[..n].copy_from_slice(&live[off as usize..off as usize + n]);
        Ok(n)
    }

    fn write_at(&mut self, buf: &[u8], off: u64) -> io::Result<()> {
        let mut st = self.alive()?;
        st.writes += 1;
        if st.fault == Some(Fault::FailWrite(st.writes)) {
            return Err(eio("write error"));
        }
        if st.fault == Some(Fault::PanicAtWrite(st.writes)) {
            drop(st);
            panic!("simulated panic in a write");
        }
        if st.fault == Some(Fault::NoSpace)
            && off + buf.len() as u64 > st.inodes[self.ino].live.len() as u64
        {
            return Err(io::Error::new(
                io::ErrorKind::StorageFull,
                "No space left on device",
            ));
        }
        let ino = &mut st.inodes[self.ino];
        write_into(&mut ino.live, off, buf);
        ino.pending.push(Pending::Write(off, buf.to_vec()));
        Ok(())
    }

    fn len(&self) -> io::Result<u64> {
        Ok(self.alive()?.inodes[self.ino].live.len() as u64)
    }

    fn set_len(&mut self, len: u64) -> io::Result<()> {
        let mut st = self.alive()?;
        if st.fault == Some(Fault::NoSpace) && len > st.inodes[self.ino].live.len() as u64 {
            return Err(io::Error::new(
                io::ErrorKind::StorageFull,
                "No space left on device",
            ));
        }
        let ino = &mut st.inodes[self.ino];
        ino.live.resize(len as usize, 0);
        ino.pending.push(Pending::SetLen(len));
        Ok(())
    }

    fn sync_data(&mut self) -> io::Result<()> {
        let fs = self.fs.clone();
        let mut st = fs.lock();
        fs.sync_point(&mut st)?;
        let ino = &mut st.inodes[self.ino];
        ino.durable = ino.live.clone();
        ino.pending.clear();
        Ok(())
    }

    fn sync_all(&mut self) -> io::Result<()> {
        self.sync_data()
    }
}

impl Vfs for SimFs {
    fn block_size(&self, _dir: &Path) -> io::Result<u64> {
        Ok(match self.lock().block_size {
            0 => 4096,
            n => n,
        })
    }

    fn create_dir_all(&self, _dir: &Path) -> io::Result<()> {
        if self.lock().crashed {
            return Err(eio("crash"));
        }
        Ok(())
    }

    fn exists(&self, path: &Path) -> io::Result<bool> {
        let st = self.lock();
        if st.crashed {
            return Err(eio("crash"));
        }
        // A directory exists while it holds a file (directories are not kept apart).
        Ok(st.names.contains_key(path) || st.names.keys().any(|p| p.starts_with(path)))
    }

    fn open(&self, path: &Path, create: bool) -> io::Result<Box<dyn VFile>> {
        let mut st = self.lock();
        if st.crashed {
            return Err(eio("crash"));
        }
        let ino = match st.names.get(path) {
            Some(&i) => i,
            None if create => {
                st.inodes.push(Inode::default());
                let i = st.inodes.len() - 1;
                st.names.insert(path.to_path_buf(), i);
                i
            }
            None => return Err(io::Error::from(io::ErrorKind::NotFound)),
        };
        Ok(Box::new(SimFile {
            fs: self.clone(),
            ino,
        }))
    }

    fn rename(&self, from: &Path, to: &Path) -> io::Result<()> {
        let mut st = self.lock();
        if st.crashed {
            return Err(eio("crash"));
        }
        let Some(i) = st.names.remove(from) else {
            return Err(io::Error::from(io::ErrorKind::NotFound));
        };
        st.names.insert(to.to_path_buf(), i);
        Ok(())
    }

    fn sync_dir(&self, _dir: &Path) -> io::Result<()> {
        let mut st = self.lock();
        self.sync_point(&mut st)?;
        st.durable_names = st.names.clone();
        Ok(())
    }

    fn remove(&self, path: &Path) -> io::Result<()> {
        let mut st = self.lock();
        if st.crashed {
            return Err(eio("crash"));
        }
        match st.names.remove(path) {
            Some(_) => Ok(()),
            None => Err(io::Error::from(io::ErrorKind::NotFound)),
        }
    }

    fn list(&self, dir: &Path) -> io::Result<Vec<String>> {
        let st = self.lock();
        if st.crashed {
            return Err(eio("crash"));
        }
        Ok(st
            .names
            .keys()
            .filter(|p| p.parent() == Some(dir))
            .filter_map(|p| p.file_name().map(|n| n.to_string_lossy().into_owned()))
            .collect())
    }

    fn try_lock(&self, path: &Path) -> io::Result<Option<LockGuard>> {
        let mut st = self.lock();
        if st.crashed {
            return Err(eio("crash"));
        }
        if !st.locks.insert(path.to_path_buf()) {
            return Ok(None);
        }
        Ok(Some(Box::new(SimLock {
            fs: self.clone(),
            path: path.to_path_buf(),
        })))
    }
}

struct SimLock {
    fs: SimFs,
    path: PathBuf,
}

impl Drop for SimLock {
    fn drop(&mut self) {
        self.fs.lock().locks.remove(&self.path);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unsynced_writes_vanish_at_restart_and_synced_ones_stay() {
        let fs = SimFs::new();
        let p = Path::new("/s/f");
        let mut f = fs.open(p, true).unwrap();
        f.write_at(b"abc", 0).unwrap();
        f.sync_data().unwrap();
        fs.sync_dir(Path::new("/s")).unwrap();
        f.write_at(b"XY", 1).unwrap();
        assert_eq!(fs.read_file(p).unwrap(), b"aXY");
        assert_eq!(fs.restart(None).read_file(p).unwrap(), b"abc");
    }

    #[test]
    fn a_new_name_needs_a_directory_sync() {
        let fs = SimFs::new();
        let mut f = fs.open(Path::new("/s/new"), true).unwrap();
        f.write_at(b"x", 0).unwrap();
        f.sync_all().unwrap();
        assert!(fs.restart(None).read_file(Path::new("/s/new")).is_none());
    }

    #[test]
    fn crash_at_sync_freezes_everything() {
        let fs = SimFs::new();
        fs.set_fault(Fault::CrashAtSync(2));
        let mut f = fs.open(Path::new("/f"), true).unwrap();
        f.sync_data().unwrap();
        assert!(f.sync_data().is_err());
        assert!(f.write_at(b"x", 0).is_err());
        assert!(fs.crashed());
    }

    #[test]
    fn lock_is_exclusive_until_dropped() {
        let fs = SimFs::new();
        let g = fs.try_lock(Path::new("/L")).unwrap();
        assert!(g.is_some());
        assert!(fs.try_lock(Path::new("/L")).unwrap().is_none());
        drop(g);
        assert!(fs.try_lock(Path::new("/L")).unwrap().is_some());
    }
}
