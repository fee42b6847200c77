//! The one door to the file system: the [`Vfs`] and [`VFile`] traits, and [`RealFs`].
//!
//! The store touches files only through these calls, so tests can swap in
//! [`crate::sim::SimFs`], which simulates crashes (at the N-th sync) and I/O errors. The
//! calls are the few the store needs: positioned reads and writes, length, `fdatasync`,
//! `fsync`, directory sync, atomic rename, removal, listing, an exclusive advisory lock, and
//! the no-copy-on-write flag for the log.

use std::any::Any;
use std::fs::{File, OpenOptions, TryLockError};
use std::io;
use std::os::unix::fs::FileExt;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

/// A file opened for reading and writing.
#[allow(clippy::len_without_is_empty)]
pub trait VFile: Send {
    /// Read up to `buf.len()` bytes at `off`; fewer only at the end of the file.
    fn read_at(&self, buf: &mut [u8], off: u64) -> io::Result<usize>;
    /// Write all of `buf` at `off`, growing the file if needed.
    fn write_at(&mut self, buf: &[u8], off: u64) -> io::Result<()>;
    fn len(&self) -> io::Result<u64>;
    fn set_len(&mut self, len: u64) -> io::Result<()>;
    /// `fdatasync`: the data (and the length) are durable.
    fn sync_data(&mut self) -> io::Result<()>;
    /// `fsync`: data and all metadata are durable.
    fn sync_all(&mut self) -> io::Result<()>;
    /// Start writing the file's dirty pages to the device without waiting for them
    /// (`sync_file_range(SYNC_FILE_RANGE_WRITE)`), so that a later `sync_all` finds little
    /// left to do. Durability is unchanged: only `sync_all` makes anything durable. Best
    /// effort: nothing happens where there is no such call.
    fn start_writeback(&mut self) {}
    /// Ask the file system to overwrite this (still empty) file in place rather than copy
    /// each written block elsewhere: btrfs's `chattr +C` (`FS_NOCOW_FL`), which also drops
    /// its data checksums (every log record carries its own CRC32C). Best effort: nothing
    /// happens where the file system has no such flag or refuses it.
    fn no_cow(&mut self) {}
    /// Reserve the file's first `len` bytes without writing them (`fallocate`: they read as
    /// zeros, and writing them later needs no new blocks). `Ok(false)` where the file system
    /// cannot: the caller writes zeros instead.
    fn allocate(&mut self, _len: u64) -> io::Result<bool> {
        Ok(false)
    }
    /// Let the kernel drop the file's clean cached pages (`posix_fadvise(DONTNEED)`); a
    /// hint, without effect on the contents.
    fn drop_cache(&self) {}
}

/// A held lock; dropping it releases the lock.
pub type LockGuard = Box<dyn Any + Send>;

/// A file system.
pub trait Vfs: Send + Sync {
    fn create_dir_all(&self, dir: &Path) -> io::Result<()>;
    fn exists(&self, path: &Path) -> io::Result<bool>;
    /// Open read-write; create an empty file if `create` and it does not exist.
    fn open(&self, path: &Path, create: bool) -> io::Result<Box<dyn VFile>>;
    /// Atomically replace `to` with `from`.
    fn rename(&self, from: &Path, to: &Path) -> io::Result<()>;
    /// Make the directory's entries (created, renamed and removed files) durable.
    fn sync_dir(&self, dir: &Path) -> io::Result<()>;
    /// Remove a file's name (durable at the next [`Vfs::sync_dir`]).
    fn remove(&self, path: &Path) -> io::Result<()>;
    /// The names of the entries in `dir`.
    fn list(&self, dir: &Path) -> io::Result<Vec<String>>;
    /// An exclusive lock on `path` (created if absent); `None` if another holder has it.
    fn try_lock(&self, path: &Path) -> io::Result<Option<LockGuard>>;
    /// A shared lock on `path`: any number of holders at once, none beside an exclusive
    /// one (`None` then). By default the exclusive lock.
    fn try_lock_shared(&self, path: &Path) -> io::Result<Option<LockGuard>> {
        self.try_lock(path)
    }
    /// The file system's block size for files in `dir` (the log aligns records to it).
    fn block_size(&self, _dir: &Path) -> io::Result<u64> {
        Ok(4096)
    }

    /// The whole of an immutable file (a segment) in memory, to read chunks from: the real
    /// file system maps it (pages come from the page cache when read, and count against the
    /// process only while touched); this default reads it.
    fn map(&self, path: &Path) -> io::Result<Arc<dyn Mapping>> {
        let f = self.open(path, false)?;
        let len = f.len()?;
        let mut b = vec![0u8; len as usize];
        let n = f.read_at(&mut b, 0)?;
        b.truncate(n);
        Ok(Arc::new(b))
    }
}

/// An immutable file's bytes ([`Vfs::map`]).
pub trait Mapping: AsRef<[u8]> + Send + Sync {
    /// The bytes were read through once (a check of the whole file): let the process's
    /// share of them go, leaving them to the page cache (a mapping's pages).
    fn release(&self) {}

    /// [`Mapping::release`] for the bytes `start..start + len` (whole pages inside it), so
    /// that a pass over a large file holds only a window of it at a time.
    fn release_range(&self, _start: usize, _len: usize) {}

    /// Reads will be scattered (a segment's chunks, a binary search in its keys): fault in
    /// only the pages touched, not their neighbours (`MADV_RANDOM`), so the process holds
    /// what it reads and no more.
    fn random(&self) {}
}

impl Mapping for Vec<u8> {}

/// A read-only shared mapping of a whole file. The file must not shrink while it is mapped
/// (a segment file never changes once written; removing it leaves the mapping valid).
struct Mmap {
    ptr: *mut libc::c_void,
    len: usize,
}

// SAFETY: the mapping is read-only and owned by this value until it is dropped.
unsafe impl Send for Mmap {}
// SAFETY: as above: shared reads of immutable memory.
unsafe impl Sync for Mmap {}

impl AsRef<[u8]> for Mmap {
    fn as_ref(&self) -> &[u8] {
        // SAFETY: ptr..ptr+len is a live PROT_READ mapping for as long as self lives.
        unsafe { std::slice::from_raw_parts(self.ptr as *const u8, self.len) }
    }
}

impl Mapping for Mmap {
    fn release(&self) {
        // SAFETY: the range is this mapping; MADV_DONTNEED on a shared file mapping drops
        // the pages from this process, and later reads fault them in again from the file.
        unsafe {
            libc::madvise(self.ptr, self.len, libc::MADV_DONTNEED);
        }
    }

    fn random(&self) {
        // SAFETY: advice on the whole of this live mapping; it changes no contents.
        unsafe {
            libc::madvise(self.ptr, self.len, libc::MADV_RANDOM);
        }
    }

    fn release_range(&self, start: usize, len: usize) {
        const PAGE: usize = 4096;
        let lo = start.next_multiple_of(PAGE).min(self.len);
        let hi = (start.saturating_add(len) / PAGE * PAGE).min(self.len);
        if hi > lo {
            // SAFETY: a page-aligned sub-range of this mapping, as in `release`.
            unsafe {
                libc::madvise(
                    self.ptr.cast::<u8>().add(lo).cast(),
                    hi - lo,
                    libc::MADV_DONTNEED,
                );
            }
        }
    }
}

impl Drop for Mmap {
    fn drop(&mut self) {
        // SAFETY: unmapping the mapping this value owns, once.
        unsafe {
            libc::munmap(self.ptr, self.len);
        }
    }
}

/// The real file system (std::fs; `flock` for the lock).
#[derive(Debug, Default, Clone, Copy)]
pub struct RealFs;

struct RealFile(File);

/// `FS_IOC_GETFLAGS`, `FS_IOC_SETFLAGS` (linux/fs.h; `long`-sized on 64-bit) and
/// `FS_NOCOW_FL`.
#[cfg(target_os = "linux")]
const FS_IOC_GETFLAGS: libc::c_ulong = 0x8008_6601;
#[cfg(target_os = "linux")]
const FS_IOC_SETFLAGS: libc::c_ulong = 0x4008_6602;
#[cfg(target_os = "linux")]
const FS_NOCOW_FL: libc::c_long = 0x0080_0000;

impl VFile for RealFile {
    #[cfg(target_os = "linux")]
    fn no_cow(&mut self) {
        use std::os::fd::AsRawFd;
        let fd = self.0.as_raw_fd();
        let mut flags: libc::c_long = 0;
        // SAFETY: both ioctls read or write one `long` through a pointer to a live local.
        // A failure of either (no inode flags here, flag refused) leaves the file as it is.
        if unsafe { libc::ioctl(fd, FS_IOC_GETFLAGS as _, &mut flags) } == 0
            && flags & FS_NOCOW_FL == 0
        {
            flags |= FS_NOCOW_FL;
            unsafe { libc::ioctl(fd, FS_IOC_SETFLAGS as _, &flags) };
        }
    }

    #[cfg(target_os = "linux")]
    fn drop_cache(&self) {
        use std::os::fd::AsRawFd;
        // SAFETY: an advice on a descriptor this file owns; no memory is passed. A failure
        // leaves the cache as it is.
        unsafe { libc::posix_fadvise(self.0.as_raw_fd(), 0, 0, libc::POSIX_FADV_DONTNEED) };
    }

    #[cfg(target_os = "linux")]
    fn allocate(&mut self, len: u64) -> io::Result<bool> {
        use std::os::fd::AsRawFd;
        let Ok(len) = libc::off_t::try_from(len) else {
            return Ok(false);
        };
        // SAFETY: fallocate on a descriptor this file owns; no memory is passed.
        if unsafe { libc::fallocate(self.0.as_raw_fd(), 0, 0, len) } == 0 {
            return Ok(true);
        }
        let e = io::Error::last_os_error();
        match e.raw_os_error() {
            Some(libc::EOPNOTSUPP | libc::ENOSYS) => Ok(false),
            _ => Err(e),
        }
    }

    fn read_at(&self, buf: &mut [u8], off: u64) -> io::Result<usize> {
        let mut done = 0;
        while done < buf.len() {
            match self.0.read_at(&mut buf[done..], off + done as u64) {
                Ok(0) => break,
                Ok(n) => done += n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
        Ok(done)
    }

    fn write_at(&mut self, buf: &[u8], off: u64) -> io::Result<()> {
        self.0.write_all_at(buf, off)
    }

    fn len(&self) -> io::Result<u64> {
        Ok(self.0.metadata()?.len())
    }

    fn set_len(&mut self, len: u64) -> io::Result<()> {
        self.0.set_len(len)
    }

    fn sync_data(&mut self) -> io::Result<()> {
        self.0.sync_data()
    }

    fn sync_all(&mut self) -> io::Result<()> {
        self.0.sync_all()
    }

    #[cfg(target_os = "linux")]
    fn start_writeback(&mut self) {
        use std::os::fd::AsRawFd;
        // SAFETY: a hint on a descriptor this file owns; no memory is passed. A failure
        // (a file system without it) leaves the pages to the next sync.
        unsafe { libc::sync_file_range(self.0.as_raw_fd(), 0, 0, libc::SYNC_FILE_RANGE_WRITE) };
    }
}

impl Vfs for RealFs {
    fn map(&self, path: &Path) -> io::Result<Arc<dyn Mapping>> {
        use std::os::fd::AsRawFd;
        let f = File::open(path)?;
        let len = f.metadata()?.len() as usize;
        if len == 0 {
            return Ok(Arc::new(Vec::new()));
        }
        // SAFETY: a fresh read-only shared mapping of an open file; checked for failure.
        let ptr = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ,
                libc::MAP_SHARED,
                f.as_raw_fd(),
                0,
            )
        };
        if ptr == libc::MAP_FAILED {
            return Err(io::Error::last_os_error());
        }
        Ok(Arc::new(Mmap { ptr, len }))
    }

    fn create_dir_all(&self, dir: &Path) -> io::Result<()> {
        std::fs::create_dir_all(dir)
    }

    fn block_size(&self, dir: &Path) -> io::Result<u64> {
        use std::os::unix::fs::MetadataExt;
        Ok(std::fs::metadata(dir)?.blksize())
    }

    fn exists(&self, path: &Path) -> io::Result<bool> {
        path.try_exists()
    }

    fn open(&self, path: &Path, create: bool) -> io::Result<Box<dyn VFile>> {
        let f = OpenOptions::new()
            .read(true)
            .write(true)
            .create(create)
            .truncate(false)
            .open(path)?;
        Ok(Box::new(RealFile(f)))
    }

    fn rename(&self, from: &Path, to: &Path) -> io::Result<()> {
        std::fs::rename(from, to)
    }

    fn sync_dir(&self, dir: &Path) -> io::Result<()> {
        File::open(dir)?.sync_all()
    }

    fn remove(&self, path: &Path) -> io::Result<()> {
        std::fs::remove_file(path)
    }

    fn list(&self, dir: &Path) -> io::Result<Vec<String>> {
        let mut out = Vec::new();
        for e in std::fs::read_dir(dir)? {
            out.push(e?.file_name().to_string_lossy().into_owned());
        }
        Ok(out)
    }

    fn try_lock(&self, path: &Path) -> io::Result<Option<LockGuard>> {
        let f = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(path)?;
        match f.try_lock() {
            Ok(()) => Ok(Some(Box::new(f))),
            Err(TryLockError::WouldBlock) => Ok(None),
            Err(TryLockError::Error(e)) => Err(e),
        }
    }
    fn try_lock_shared(&self, path: &Path) -> io::Result<Option<LockGuard>> {
        // A reader may not be allowed to write the file: it opens it to read, and makes it
        // only where it is missing.
        let f = match OpenOptions::new().read(true).open(path) {
            Err(e) if e.kind() == io::ErrorKind::NotFound => OpenOptions::new()
                .read(true)
                .write(true)
                .create(true)
                .truncate(false)
                .open(path)?,
            other => other?,
        };
        match f.try_lock_shared() {
            Ok(()) => Ok(Some(Box::new(f))),
            Err(TryLockError::WouldBlock) => Ok(None),
            Err(TryLockError::Error(e)) => Err(e),
        }
    }
}

/// The real file system, counting its syncs (every `fdatasync`/`fsync` of a file, and of a
/// directory) in `syncs`: the daemon's STATS reports them.
pub struct CountingFs {
    pub syncs: Arc<AtomicU64>,
}

struct CountingFile {
    f: Box<dyn VFile>,
    syncs: Arc<AtomicU64>,
}

impl VFile for CountingFile {
    fn read_at(&self, buf: &mut [u8], off: u64) -> io::Result<usize> {
        self.f.read_at(buf, off)
    }
    fn write_at(&mut self, buf: &[u8], off: u64) -> io::Result<()> {
        self.f.write_at(buf, off)
    }
    fn len(&self) -> io::Result<u64> {
        self.f.len()
    }
    fn set_len(&mut self, len: u64) -> io::Result<()> {
        self.f.set_len(len)
    }
    fn sync_data(&mut self) -> io::Result<()> {
        self.syncs.fetch_add(1, Ordering::Relaxed);
        self.f.sync_data()
    }
    fn sync_all(&mut self) -> io::Result<()> {
        self.syncs.fetch_add(1, Ordering::Relaxed);
        self.f.sync_all()
    }
    fn no_cow(&mut self) {
        self.f.no_cow()
    }
    fn allocate(&mut self, len: u64) -> io::Result<bool> {
        self.f.allocate(len)
    }
    fn drop_cache(&self) {
        self.f.drop_cache()
    }
}

impl Vfs for CountingFs {
    fn create_dir_all(&self, dir: &Path) -> io::Result<()> {
        RealFs.create_dir_all(dir)
    }
    fn exists(&self, path: &Path) -> io::Result<bool> {
        RealFs.exists(path)
    }
    fn open(&self, path: &Path, create: bool) -> io::Result<Box<dyn VFile>> {
        Ok(Box::new(CountingFile {
            f: RealFs.open(path, create)?,
            syncs: self.syncs.clone(),
        }))
    }
    fn rename(&self, from: &Path, to: &Path) -> io::Result<()> {
        RealFs.rename(from, to)
    }
    fn sync_dir(&self, dir: &Path) -> io::Result<()> {
        self.syncs.fetch_add(1, Ordering::Relaxed);
        RealFs.sync_dir(dir)
    }
    fn remove(&self, path: &Path) -> io::Result<()> {
        RealFs.remove(path)
    }
    fn list(&self, dir: &Path) -> io::Result<Vec<String>> {
        RealFs.list(dir)
    }
    fn map(&self, path: &Path) -> io::Result<std::sync::Arc<dyn Mapping>> {
        RealFs.map(path)
    }
    fn try_lock(&self, path: &Path) -> io::Result<Option<LockGuard>> {
        RealFs.try_lock(path)
    }
    fn try_lock_shared(&self, path: &Path) -> io::Result<Option<LockGuard>> {
        RealFs.try_lock_shared(path)
    }
    fn block_size(&self, dir: &Path) -> io::Result<u64> {
        RealFs.block_size(dir)
    }
}
