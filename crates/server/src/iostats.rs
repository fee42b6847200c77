//! What the daemon has written to disk: the process's own I/O accounting, the store's fsyncs,
//! and the projections STATS reports after rrdcached's nine keys.
//!
//! Bytes come from `/proc/self/io` (`write_bytes`: what the process caused to be sent to
//! the storage layer, counted when pages are dirtied, so a small append to a page counts the
//! page). fsyncs are counted by wrapping the store's file system ([`CountingFs`]): every
//! `fdatasync`/`fsync` of the log, a checkpoint or a directory.

use engine::{RealFs, VFile, Vfs};
use std::io;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

/// The real file system, counting syncs.
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
    fn map(&self, path: &Path) -> io::Result<std::sync::Arc<dyn engine::vfs::Mapping>> {
        RealFs.map(path)
    }
    fn try_lock(&self, path: &Path) -> io::Result<Option<engine::vfs::LockGuard>> {
        RealFs.try_lock(path)
    }
    fn block_size(&self, dir: &Path) -> io::Result<u64> {
        RealFs.block_size(dir)
    }
}

/// `write_bytes` of `/proc/self/io`; 0 where the kernel does not provide it.
pub fn disk_bytes_written() -> u64 {
    std::fs::read_to_string("/proc/self/io")
        .ok()
        .as_deref()
        .and_then(write_bytes)
        .unwrap_or(0)
}

/// The process's resident memory in bytes (`VmRSS` of `/proc/self/status`; 0 where there is
/// none).
pub fn resident_bytes() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .as_deref()
        .and_then(vm_rss)
        .unwrap_or(0)
}

fn vm_rss(status: &str) -> Option<u64> {
    let kb: u64 = status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))?
        .trim()
        .strip_suffix("kB")?
        .trim()
        .parse()
        .ok()?;
    kb.checked_mul(1024)
}

fn write_bytes(io: &str) -> Option<u64> {
    io.lines()
        .find_map(|l| l.strip_prefix("write_bytes:"))
        .and_then(|v| v.trim().parse().ok())
}

/// What STATS reports about writing, after rrdcached's keys.
pub struct WriteLoad {
    pub disk_bytes: u64,
    /// `disk_bytes` when the store had been opened (creating a store zero-fills its log
    /// ring): left out of the projections.
    pub at_open: u64,
    pub fsyncs: u64,
    pub commits: u64,
    pub samples: u64,
    pub uptime_secs: u64,
    pub apply_errors: u64,
}

impl WriteLoad {
    /// `Key: value` lines, in this order (docs/PROTOCOL.md).
    pub fn lines(&self) -> Vec<String> {
        let serving = self.disk_bytes.saturating_sub(self.at_open);
        let per_sample = if self.samples == 0 {
            "0.00".to_string()
        } else {
            format!("{:.2}", serving as f64 / self.samples as f64)
        };
        // The rate since start, over a day; the first minute is too short to project from.
        let per_day = if self.uptime_secs < 60 {
            0
        } else {
            (serving as u128 * 86_400 / u128::from(self.uptime_secs)) as u64
        };
        vec![
            format!("DiskBytesWritten: {}", self.disk_bytes),
            format!("Fsyncs: {}", self.fsyncs),
            format!("Commits: {}", self.commits),
            format!("DiskBytesPerSample: {per_sample}"),
            format!("DiskBytesPerDay: {per_day}"),
            format!("UptimeSeconds: {}", self.uptime_secs),
            format!("ApplyErrors: {}", self.apply_errors),
            format!("DiskBytesAtOpen: {}", self.at_open),
        ]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn write_bytes_is_read_from_proc_self_io_text() {
        let text = "rchar: 10\nwchar: 20\nsyscr: 1\nsyscw: 2\nread_bytes: 4096\nwrite_bytes: 8192\ncancelled_write_bytes: 0\n";
        assert_eq!(write_bytes(text), Some(8192));
        assert_eq!(write_bytes("rchar: 1\n"), None);
        let status = "Name:\tringlet\nVmHWM:\t  9000 kB\nVmRSS:\t    8192 kB\nThreads: 4\n";
        assert_eq!(vm_rss(status), Some(8192 * 1024));
        assert_eq!(vm_rss("Name: x\n"), None);
        assert!(resident_bytes() > 0, "this process has resident memory");
    }

    #[test]
    fn projections_from_the_counters() {
        let w = WriteLoad {
            disk_bytes: 3_690 + 65_536,
            at_open: 65_536,
            fsyncs: 4,
            commits: 3,
            samples: 1_000,
            uptime_secs: 3_600,
            apply_errors: 0,
        };
        assert_eq!(
            w.lines(),
            [
                "DiskBytesWritten: 69226",
                "Fsyncs: 4",
                "Commits: 3",
                "DiskBytesPerSample: 3.69",
                "DiskBytesPerDay: 88560",
                "UptimeSeconds: 3600",
                "ApplyErrors: 0",
                "DiskBytesAtOpen: 65536",
            ]
        );
        let young = WriteLoad {
            samples: 0,
            uptime_secs: 5,
            ..w
        };
        assert_eq!(young.lines()[3], "DiskBytesPerSample: 0.00");
        assert_eq!(young.lines()[4], "DiskBytesPerDay: 0");
    }
}
