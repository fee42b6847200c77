//! blockrec: power cuts at the block device, on a machine without device-mapper (issue 21).
//!
//! `serve` mounts a small FUSE file system holding one file, `disk.img` (an image file on a
//! real disk, served read/write at its size), and a write-only `marks`. A loop device over
//! `disk.img` carries a real ext4 or xfs: the loop driver turns the block layer's writes into
//! writes of the file and its flushes (REQ_PREFLUSH, and FUA, which the loop device does not
//! offer, so the block layer sends a flush after the write) into fsync of it. Every write is
//! applied to the image and appended to a log with its offset; every fsync is appended as a
//! flush; every write to `marks` is appended as a mark (a client's note, in the same order as
//! the writes, that it has received an acknowledgement). FUSE without a writeback cache sends
//! each write synchronously, so the log has the device's writes in the order they reached it.
//!
//! `crash` builds crash images from the image as it was when `serve` began and the log: the
//! state at flushes, and states between two flushes where only some of the writes since the
//! last flush reached the disk (each 4 KiB block of them kept or lost at random, applied in
//! order: what a volatile disk cache may leave). Each image is handed to a check command, one
//! at a time (an image is a sparse copy; only one exists at a time), with the last mark before
//! the image's last complete flush: what was acknowledged and must be there.
//!
//! `load` is the client (the rrdcached protocol on a socket): series of one GAUGE and a LAST
//! archive of one-second rows, updated in batches, each batch ended by FLUSHALL and marked
//! once acknowledged. `faults` is the client of a disk that fails: `serve`'s `control` file
//! makes the disk answer every write, or every flush, with EIO until it is healthy again.
//! `verify` opens the store of a crash image (recovery as the daemon's open does it) and
//! checks every series: the acknowledged updates are all there, every value there is the one
//! sent for its time, and what is there is a prefix of what was sent.
//!
//! The log is ours (bench-only): "BLKREC1\n", then entries `W` offset u64 len u32 bytes,
//! `Z` offset u64 len u64 (zeroed: fallocate), `F` (flush), `M` len u32 text.

use engine::{Options, Store};
use fuser::{
    Config, Errno, FileAttr, FileHandle, FileType, Filesystem, FopenFlags, Generation, INodeNo,
    LockOwner, MountOption, OpenFlags, ReplyAttr, ReplyData, ReplyDirectory, ReplyEmpty,
    ReplyEntry, ReplyOpen, ReplyWrite, Request, SessionACL, WriteFlags,
};
use std::ffi::OsStr;
use std::fs::File;
use std::io::{BufRead, BufReader, BufWriter, Read, Write};
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::{Duration, UNIX_EPOCH};

const USAGE: &str = "\
usage: blockrec serve --image IMG --log LOG DIR
       blockrec crash --base BASE --log LOG --work DIR [--images N] [--seed S]
                      [--disk honest|lying] -- CHECK...
       blockrec load --socket PATH --marks PATH [--series N] [--batches B] [--per M]
                     [--from B0] [--pace-ms MS] [--rows R]
       blockrec faults --socket PATH --marks PATH --control PATH --fail MODE [--series N]
                       [--per M] [--good B]
       blockrec verify --store DIR [--series N] [--per M] [--acked MARK]

serve   mount DIR (FUSE) with disk.img (IMG, every write and fsync logged to LOG), marks
        (each write logged as a mark) and control (write healthy, fail-writes or
        fail-flushes: the disk then answers writes or flushes with EIO); runs until DIR is
        unmounted
crash   from BASE (IMG before serve) and LOG: images at flushes and between them (writes since
        the last flush partly lost), each at DIR/crash.img, then CHECK is run with $IMAGE,
        $ACKED (the last mark before its last complete flush, or empty) and $POINT set; prints
        a line an image and the counts (default 1000 images, seed 1); --disk lying: each
        image also loses blocks the three flushes before it promised (the control: checks
        must find it)
load    the client: N series (default 20), B batches (default 100) of M updates each
        (default 10), FLUSHALL after each, then a line appended to the marks file:
        \"created\" or the batch number; --from B0 goes on from batch B0 (the series exist),
        --pace-ms waits between batches, --rows sizes the archive (default all batches)
faults  the client of a disk that fails: B good batches (default 5), then MODE (fail-writes
        or fail-flushes) written to the recorder's control file; prints what the daemon says
        to a batch, FLUSHALL, UPDATE and FETCH then, and to FLUSHALL once the disk is healthy
verify  open the store, check the series against what load sent and what was acknowledged
        (exit 0 good, 1 a wrong or lost value, 2 the store does not open)
";

/// Where `load` starts its one-second rows.
const T0: i64 = 1_700_000_000;

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let res = match args.first().map(String::as_str) {
        Some("serve") => serve(&args[1..]),
        Some("crash") => crash(&args[1..]),
        Some("load") => load(&args[1..]),
        Some("faults") => faults(&args[1..]),
        Some("verify") => match verify(&args[1..]) {
            Ok(code) => std::process::exit(code),
            Err(e) => Err(e),
        },
        Some("-h" | "--help") => {
            print!("{USAGE}");
            return;
        }
        _ => Err(USAGE.trim_end().to_string()),
    };
    if let Err(e) = res {
        eprintln!("blockrec: {e}");
        std::process::exit(2);
    }
}

/// `--name value` pairs before a `--`, and what follows it.
struct Args {
    pairs: Vec<(String, String)>,
    rest: Vec<String>,
    positional: Vec<String>,
}

impl Args {
    fn parse(a: &[String]) -> Result<Args, String> {
        let mut out = Args {
            pairs: Vec::new(),
            rest: Vec::new(),
            positional: Vec::new(),
        };
        let mut i = 0;
        while i < a.len() {
            if a[i] == "--" {
                out.rest = a[i + 1..].to_vec();
                break;
            }
            if let Some(k) = a[i].strip_prefix("--") {
                let v = a.get(i + 1).ok_or(format!("--{k} needs a value"))?;
                out.pairs.push((k.to_string(), v.clone()));
                i += 2;
            } else {
                out.positional.push(a[i].clone());
                i += 1;
            }
        }
        Ok(out)
    }

    fn get(&self, k: &str) -> Option<&str> {
        self.pairs
            .iter()
            .rev()
            .find(|(n, _)| n == k)
            .map(|(_, v)| v.as_str())
    }

    fn need(&self, k: &str) -> Result<&str, String> {
        self.get(k).ok_or(format!("--{k} is needed\n{USAGE}"))
    }

    fn num(&self, k: &str, default: u64) -> Result<u64, String> {
        match self.get(k) {
            None => Ok(default),
            Some(v) => v.parse().map_err(|e| format!("--{k} {v}: {e}")),
        }
    }
}

// ---- serve ----

const ROOT: u64 = 1;
const DISK: u64 = 2;
const MARKS: u64 = 3;
const CONTROL: u64 = 4;

/// What the disk does with writes and flushes (`control`): its faults.
const HEALTHY: u8 = 0;
const FAIL_WRITES: u8 = 1;
const FAIL_FLUSHES: u8 = 2;
const TTL: Duration = Duration::from_secs(3600);

struct Recorder {
    img: File,
    size: u64,
    log: Mutex<BufWriter<File>>,
    /// [`HEALTHY`], [`FAIL_WRITES`] or [`FAIL_FLUSHES`], as last written to `control`.
    mode: std::sync::atomic::AtomicU8,
}

impl Recorder {
    fn attr(&self, ino: u64) -> FileAttr {
        let (kind, size, perm, nlink) = match ino {
            ROOT => (FileType::Directory, 0, 0o755, 2),
            DISK => (FileType::RegularFile, self.size, 0o600, 1),
            _ => (FileType::RegularFile, 0, 0o200, 1),
        };
        FileAttr {
            ino: INodeNo(ino),
            size,
            blocks: size.div_ceil(512),
            atime: UNIX_EPOCH,
            mtime: UNIX_EPOCH,
            ctime: UNIX_EPOCH,
            crtime: UNIX_EPOCH,
            kind,
            perm,
            nlink,
            uid: 0,
            gid: 0,
            rdev: 0,
            flags: 0,
            blksize: 4096,
        }
    }

    fn entry(&self, e: &[&[u8]]) -> std::io::Result<()> {
        let mut log = self.log.lock().unwrap_or_else(|p| p.into_inner());
        for part in e {
            log.write_all(part)?;
        }
        Ok(())
    }
}

fn io_errno(e: &std::io::Error) -> Errno {
    Errno::from_i32(e.raw_os_error().unwrap_or(libc::EIO))
}

impl Filesystem for Recorder {
    fn lookup(&self, _req: &Request, parent: INodeNo, name: &OsStr, reply: ReplyEntry) {
        let ino = match (u64::from(parent), name.to_str()) {
            (ROOT, Some("disk.img")) => DISK,
            (ROOT, Some("marks")) => MARKS,
            (ROOT, Some("control")) => CONTROL,
            _ => return reply.error(Errno::ENOENT),
        };
        reply.entry(&TTL, &self.attr(ino), Generation(0));
    }

    fn getattr(&self, _req: &Request, ino: INodeNo, _fh: Option<FileHandle>, reply: ReplyAttr) {
        match u64::from(ino) {
            i @ (ROOT | DISK | MARKS | CONTROL) => reply.attr(&TTL, &self.attr(i)),
            _ => reply.error(Errno::ENOENT),
        }
    }

    fn open(&self, _req: &Request, ino: INodeNo, _flags: OpenFlags, reply: ReplyOpen) {
        match u64::from(ino) {
            DISK | MARKS | CONTROL => reply.opened(FileHandle(0), FopenFlags::empty()),
            _ => reply.error(Errno::EISDIR),
        }
    }

    fn read(
        &self,
        _req: &Request,
        ino: INodeNo,
        _fh: FileHandle,
        offset: u64,
        size: u32,
        _flags: OpenFlags,
        _lock_owner: Option<LockOwner>,
        reply: ReplyData,
    ) {
        if u64::from(ino) != DISK {
            return reply.data(&[]);
        }
        let n = (size as u64).min(self.size.saturating_sub(offset)) as usize;
        let mut buf = vec![0u8; n];
        match self.img.read_exact_at(&mut buf, offset) {
            Ok(()) => reply.data(&buf),
            Err(e) => reply.error(io_errno(&e)),
        }
    }

    fn write(
        &self,
        _req: &Request,
        ino: INodeNo,
        _fh: FileHandle,
        offset: u64,
        data: &[u8],
        _write_flags: WriteFlags,
        _flags: OpenFlags,
        _lock_owner: Option<LockOwner>,
        reply: ReplyWrite,
    ) {
        use std::sync::atomic::Ordering::SeqCst;
        let r = match u64::from(ino) {
            DISK if offset + data.len() as u64 > self.size => Err(Errno::ENOSPC),
            // A failing device: the write reaches nothing.
            DISK if self.mode.load(SeqCst) == FAIL_WRITES => Err(Errno::EIO),
            DISK => self
                .img
                .write_all_at(data, offset)
                .and_then(|()| {
                    self.entry(&[
                        b"W",
                        &offset.to_le_bytes(),
                        &(data.len() as u32).to_le_bytes(),
                        data,
                    ])
                })
                .map_err(|e| io_errno(&e)),
            MARKS => self
                .entry(&[b"M", &(data.len() as u32).to_le_bytes(), data])
                .map_err(|e| io_errno(&e)),
            CONTROL => match std::str::from_utf8(data).map(str::trim) {
                Ok("healthy") => Ok(HEALTHY),
                Ok("fail-writes") => Ok(FAIL_WRITES),
                Ok("fail-flushes") => Ok(FAIL_FLUSHES),
                _ => Err(Errno::EINVAL),
            }
            .map(|m| {
                self.mode.store(m, SeqCst);
                eprintln!(
                    "blockrec: the disk is now {}",
                    String::from_utf8_lossy(data).trim()
                );
            }),
            _ => Err(Errno::EBADF),
        };
        match r {
            Ok(()) => reply.written(data.len() as u32),
            Err(e) => reply.error(e),
        }
    }

    fn fsync(
        &self,
        _req: &Request,
        ino: INodeNo,
        _fh: FileHandle,
        _datasync: bool,
        reply: ReplyEmpty,
    ) {
        if u64::from(ino) != DISK {
            return reply.ok();
        }
        if self.mode.load(std::sync::atomic::Ordering::SeqCst) == FAIL_FLUSHES {
            return reply.error(Errno::EIO);
        }
        // The log is this run's device: a flush is a point every later image starts from.
        let r = self.entry(&[b"F"]).and_then(|()| {
            let mut log = self.log.lock().unwrap_or_else(|p| p.into_inner());
            log.flush()
        });
        match r {
            Ok(()) => reply.ok(),
            Err(e) => reply.error(io_errno(&e)),
        }
    }

    fn fallocate(
        &self,
        _req: &Request,
        ino: INodeNo,
        _fh: FileHandle,
        offset: u64,
        length: u64,
        mode: i32,
        reply: ReplyEmpty,
    ) {
        // The loop device turns discards and write-zeroes into these: the range reads as
        // zeros afterwards. Anything else (allocation at the end) is refused.
        let zeroing = libc::FALLOC_FL_PUNCH_HOLE | libc::FALLOC_FL_ZERO_RANGE;
        if u64::from(ino) != DISK || mode & zeroing == 0 || offset + length > self.size {
            return reply.error(Errno::EOPNOTSUPP);
        }
        let r = zero_range(&self.img, offset, length)
            .and_then(|()| self.entry(&[b"Z", &offset.to_le_bytes(), &length.to_le_bytes()]));
        match r {
            Ok(()) => reply.ok(),
            Err(e) => reply.error(io_errno(&e)),
        }
    }

    fn flush(
        &self,
        _req: &Request,
        _ino: INodeNo,
        _fh: FileHandle,
        _lock_owner: LockOwner,
        reply: ReplyEmpty,
    ) {
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
        if u64::from(ino) != ROOT {
            return reply.error(Errno::ENOTDIR);
        }
        let all = [
            (ROOT, FileType::Directory, "."),
            (ROOT, FileType::Directory, ".."),
            (DISK, FileType::RegularFile, "disk.img"),
            (MARKS, FileType::RegularFile, "marks"),
            (CONTROL, FileType::RegularFile, "control"),
        ];
        for (i, (ino, kind, name)) in all.iter().enumerate().skip(offset as usize) {
            if reply.add(INodeNo(*ino), (i + 1) as u64, *kind, name) {
                break;
            }
        }
        reply.ok();
    }
}

/// Zeros over `len` bytes at `off` of `f`, as a hole where the file system can.
fn zero_range(f: &File, off: u64, len: u64) -> std::io::Result<()> {
    use std::os::fd::AsRawFd;
    let mode = libc::FALLOC_FL_PUNCH_HOLE | libc::FALLOC_FL_KEEP_SIZE;
    // SAFETY: a plain system call on an open descriptor.
    if unsafe { libc::fallocate(f.as_raw_fd(), mode, off as i64, len as i64) } == 0 {
        return Ok(());
    }
    let zeros = vec![0u8; 1 << 20];
    let mut at = off;
    while at < off + len {
        let n = ((off + len - at) as usize).min(zeros.len());
        f.write_all_at(&zeros[..n], at)?;
        at += n as u64;
    }
    Ok(())
}

fn serve(a: &[String]) -> Result<(), String> {
    let a = Args::parse(a)?;
    let img_path = a.need("image")?;
    let dir = a
        .positional
        .first()
        .ok_or(format!("the mount point is needed\n{USAGE}"))?;
    let img = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open(img_path)
        .map_err(|e| format!("{img_path}: {e}"))?;
    let size = img.metadata().map_err(|e| e.to_string())?.len();
    let log_path = a.need("log")?;
    let mut log = BufWriter::with_capacity(
        1 << 20,
        File::create(log_path).map_err(|e| format!("{log_path}: {e}"))?,
    );
    log.write_all(b"BLKREC1\n").map_err(|e| e.to_string())?;
    let fs = Recorder {
        img,
        size,
        log: Mutex::new(log),
        mode: std::sync::atomic::AtomicU8::new(HEALTHY),
    };
    let mut cfg = Config::default();
    cfg.mount_options = vec![
        MountOption::RW,
        MountOption::FSName("blockrec".into()),
        MountOption::Subtype("blockrec".into()),
    ];
    cfg.acl = SessionACL::Owner;
    // One thread: the log's order is the order the requests were served in.
    cfg.n_threads = Some(1);
    eprintln!(
        "blockrec: serving {img_path} ({size} bytes) at {dir}/disk.img, logging to {log_path}"
    );
    fuser::mount(fs, Path::new(dir), &cfg).map_err(|e| format!("mount at {dir}: {e}"))
}

// ---- the log ----

enum Entry {
    /// Offset, length, and where the bytes are in the log file.
    Write(u64, u32, u64),
    Zero(u64, u64),
    Flush,
    Mark(String),
}

fn read_log(path: &str) -> Result<Vec<Entry>, String> {
    let f = File::open(path).map_err(|e| format!("{path}: {e}"))?;
    let mut r = BufReader::with_capacity(1 << 20, f);
    let mut magic = [0u8; 8];
    r.read_exact(&mut magic)
        .map_err(|e| format!("{path}: {e}"))?;
    if &magic != b"BLKREC1\n" {
        return Err(format!("{path}: not a blockrec log"));
    }
    let mut pos = 8u64;
    let mut out = Vec::new();
    let mut tag = [0u8; 1];
    loop {
        match r.read(&mut tag) {
            Ok(0) => break,
            Ok(_) => {}
            Err(e) => return Err(format!("{path}: {e}")),
        }
        pos += 1;
        let mut u64b = [0u8; 8];
        let mut u32b = [0u8; 4];
        // A log cut short (the recorder killed) ends at its last whole entry.
        let whole = match tag[0] {
            b'W' => {
                if r.read_exact(&mut u64b).is_err() || r.read_exact(&mut u32b).is_err() {
                    false
                } else {
                    let len = u32::from_le_bytes(u32b);
                    let at = pos + 12;
                    let skipped =
                        std::io::copy(&mut (&mut r).take(u64::from(len)), &mut std::io::sink())
                            .map_err(|e| e.to_string())?;
                    pos = at + u64::from(len);
                    if skipped == u64::from(len) {
                        out.push(Entry::Write(u64::from_le_bytes(u64b), len, at));
                        true
                    } else {
                        false
                    }
                }
            }
            b'Z' => {
                let mut l = [0u8; 8];
                if r.read_exact(&mut u64b).is_err() || r.read_exact(&mut l).is_err() {
                    false
                } else {
                    pos += 16;
                    out.push(Entry::Zero(u64::from_le_bytes(u64b), u64::from_le_bytes(l)));
                    true
                }
            }
            b'F' => {
                out.push(Entry::Flush);
                true
            }
            b'M' => {
                if r.read_exact(&mut u32b).is_err() {
                    false
                } else {
                    let mut t = vec![0u8; u32::from_le_bytes(u32b) as usize];
                    pos += 4 + t.len() as u64;
                    if r.read_exact(&mut t).is_err() {
                        false
                    } else {
                        out.push(Entry::Mark(String::from_utf8_lossy(&t).trim().to_string()));
                        true
                    }
                }
            }
            t => return Err(format!("{path}: unknown entry {t:#x} at byte {}", pos - 1)),
        };
        if !whole {
            break;
        }
    }
    Ok(out)
}

// ---- crash ----

/// A small random generator (xorshift64*): the images must be the same for a seed.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }
}

/// Apply entry `e` to `img`, only the 4 KiB blocks `keep` says (all when None).
fn apply(
    img: &File,
    log: &File,
    e: &Entry,
    keep: Option<&mut dyn FnMut() -> bool>,
) -> Result<(), String> {
    match *e {
        Entry::Write(off, len, at) => {
            let mut buf = vec![0u8; len as usize];
            log.read_exact_at(&mut buf, at).map_err(|e| e.to_string())?;
            match keep {
                None => img.write_all_at(&buf, off).map_err(|e| e.to_string()),
                Some(keep) => {
                    // Blocks of the device, 4 KiB on the image's own grid.
                    let mut s = 0usize;
                    while s < buf.len() {
                        let end = (((off + s as u64) / 4096 + 1) * 4096 - off) as usize;
                        let end = end.min(buf.len());
                        if keep() {
                            img.write_all_at(&buf[s..end], off + s as u64)
                                .map_err(|e| e.to_string())?;
                        }
                        s = end;
                    }
                    Ok(())
                }
            }
        }
        Entry::Zero(off, len) => {
            if keep.is_some_and(|k| !k()) {
                return Ok(());
            }
            zero_range(img, off, len).map_err(|e| e.to_string())
        }
        Entry::Flush | Entry::Mark(_) => Ok(()),
    }
}

/// A sparse copy of `from` at `to` (holes kept: the images are mostly empty).
fn copy_sparse(from: &Path, to: &Path) -> Result<(), String> {
    let st = std::process::Command::new("cp")
        .args(["--sparse=always", "--reflink=auto"])
        .arg(from)
        .arg(to)
        .status()
        .map_err(|e| format!("cp: {e}"))?;
    if st.success() {
        Ok(())
    } else {
        Err(format!("cp {} {}: {st}", from.display(), to.display()))
    }
}

fn crash(a: &[String]) -> Result<(), String> {
    let a = Args::parse(a)?;
    let base = PathBuf::from(a.need("base")?);
    let log_path = a.need("log")?;
    let work = PathBuf::from(a.need("work")?);
    let images = a.num("images", 1000)?;
    let mut rng = Rng(a.num("seed", 1)?.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1);
    if a.rest.is_empty() {
        return Err(format!("a check command is needed after --\n{USAGE}"));
    }
    let entries = read_log(log_path)?;
    let log = File::open(log_path).map_err(|e| e.to_string())?;
    // Epoch k: the entries after flush k-1 (the log's start for k = 0) up to flush k, or to
    // the end for the last.
    let mut epochs: Vec<std::ops::Range<usize>> = Vec::new();
    let mut start = 0;
    for (i, e) in entries.iter().enumerate() {
        if matches!(e, Entry::Flush) {
            epochs.push(start..i);
            start = i + 1;
        }
    }
    epochs.push(start..entries.len());
    let writes = |r: &std::ops::Range<usize>| {
        entries[r.clone()]
            .iter()
            .filter(|e| matches!(e, Entry::Write(..) | Entry::Zero(..)))
            .count()
    };
    // Half the images at flushes (the state a flush made durable, where anything may be
    // lost after it), spread over them; the rest inside epochs with writes, at random.
    let with_writes: Vec<usize> = (0..epochs.len())
        .filter(|&k| writes(&epochs[k]) > 0)
        .collect();
    if with_writes.is_empty() {
        return Err(format!("{log_path}: no writes recorded"));
    }
    let at_flush = (images / 2).min(epochs.len() as u64);
    // Spread from the first to the last (the state after the last flush: everything).
    let last = epochs.len() as u64 - 1;
    let mut plan: Vec<(usize, bool)> = (0..at_flush)
        .map(|i| {
            (
                (i * last).checked_div(at_flush - 1).unwrap_or(last) as usize,
                false,
            )
        })
        .collect();
    for _ in at_flush..images {
        plan.push((
            with_writes[rng.below(with_writes.len() as u64) as usize],
            true,
        ));
    }
    plan.sort();
    eprintln!(
        "blockrec: {} entries, {} flushes, {} epochs with writes; {} images ({at_flush} at flushes)",
        entries.len(),
        epochs.len() - 1,
        with_writes.len(),
        plan.len()
    );
    std::fs::create_dir_all(&work).map_err(|e| e.to_string())?;
    let cur_path = work.join("current.img");
    let img_path = work.join("crash.img");
    copy_sparse(&base, &cur_path)?;
    let cur = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open(&cur_path)
        .map_err(|e| e.to_string())?;
    // The control: a disk that acknowledges flushes it has not made durable. Each image then
    // also loses a random share of the blocks written in the three epochs before its last
    // flush (put back as they were before them): what the latest acknowledgements rest on.
    // The checks must find what that loses.
    let lying = match a.get("disk").unwrap_or("honest") {
        "honest" => false,
        "lying" => true,
        d => return Err(format!("--disk {d}: honest or lying")),
    };
    let base_file = File::open(&base).map_err(|e| e.to_string())?;
    // Block `b` as it was before entry `upto`: the last write over it before, or the base.
    let block_before = |b: u64, upto: usize, out: &mut [u8]| -> Result<(), String> {
        let (lo, hi) = (b * 4096, b * 4096 + 4096);
        base_file
            .read_exact_at(out, lo)
            .map_err(|e| e.to_string())?;
        // Later entries win: apply, oldest first, those that touch the block.
        for e in &entries[..upto] {
            match *e {
                Entry::Write(off, len, at) if off < hi && off + u64::from(len) > lo => {
                    let (s, t) = (off.max(lo), (off + u64::from(len)).min(hi));
                    log.read_exact_at(
                        &mut out[(s - lo) as usize..(t - lo) as usize],
                        at + (s - off),
                    )
                    .map_err(|e| e.to_string())?;
                }
                Entry::Zero(off, len) if off < hi && off + len > lo => {
                    let (s, t) = (off.max(lo), (off + len).min(hi));
                    out[(s - lo) as usize..(t - lo) as usize].fill(0);
                }
                _ => {}
            }
        }
        Ok(())
    };
    let (mut good, mut bad) = (0u64, 0u64);
    let mut acked = String::new();
    let mut next = 0;
    for (k, ep) in epochs.iter().enumerate() {
        // `cur` holds everything before epoch k: the state after flush k-1.
        while next < plan.len() && plan[next].0 == k {
            let partial = plan[next].1;
            let point = if partial {
                format!("epoch {k} of {}, writes partly applied", epochs.len())
            } else {
                format!("flush {k} of {}", epochs.len() - 1)
            };
            copy_sparse(&cur_path, &img_path)?;
            if lying && k > 0 {
                let img = std::fs::OpenOptions::new()
                    .write(true)
                    .open(&img_path)
                    .map_err(|e| e.to_string())?;
                let from = epochs[k.saturating_sub(3)].start;
                let p = 30 + rng.below(71);
                let mut block = vec![0u8; 4096];
                let mut lost = std::collections::BTreeSet::new();
                for e in &entries[from..epochs[k - 1].end] {
                    let (off, len) = match *e {
                        Entry::Write(off, len, _) => (off, u64::from(len)),
                        Entry::Zero(off, len) => (off, len),
                        _ => continue,
                    };
                    for b in off / 4096..(off + len).div_ceil(4096) {
                        if rng.below(100) < p {
                            lost.insert(b);
                        }
                    }
                }
                for b in lost {
                    block_before(b, from, &mut block)?;
                    img.write_all_at(&block, b * 4096)
                        .map_err(|e| e.to_string())?;
                }
            }
            if partial {
                let img = std::fs::OpenOptions::new()
                    .write(true)
                    .open(&img_path)
                    .map_err(|e| e.to_string())?;
                // How much of the epoch reached the disk: a prefix of it, and of the rest a
                // random share of its blocks.
                let n = ep.len() as u64;
                let cut = ep.start + rng.below(n + 1) as usize;
                let p = rng.below(101);
                let mut r2 = Rng(rng.next() | 1);
                for e in &entries[ep.start..cut] {
                    apply(&img, &log, e, None)?;
                }
                let mut keep = || r2.below(100) < p;
                for e in &entries[cut..ep.end] {
                    apply(&img, &log, e, Some(&mut keep))?;
                }
                img.sync_all().map_err(|e| e.to_string())?;
            }
            let out = std::process::Command::new(&a.rest[0])
                .args(&a.rest[1..])
                .env("IMAGE", &img_path)
                .env("ACKED", &acked)
                .env("POINT", &point)
                .output()
                .map_err(|e| format!("{}: {e}", a.rest[0]))?;
            let said = String::from_utf8_lossy(&out.stdout).trim().to_string();
            let err = String::from_utf8_lossy(&out.stderr).trim().to_string();
            if out.status.success() {
                good += 1;
                println!(
                    "ok   {point} (acked: {}): {said}",
                    if acked.is_empty() { "-" } else { &acked }
                );
            } else {
                bad += 1;
                println!(
                    "FAIL {point} (acked: {}): {said} {err}",
                    if acked.is_empty() { "-" } else { &acked }
                );
            }
            let _ = std::fs::remove_file(&img_path);
            next += 1;
        }
        for e in &entries[ep.clone()] {
            apply(&cur, &log, e, None)?;
        }
        // Marks of this epoch were written after acknowledgements whose flush came before
        // them: from flush k on, they must hold.
        if let Some(m) = entries[ep.clone()].iter().rev().find_map(|e| match e {
            Entry::Mark(m) => Some(m.clone()),
            _ => None,
        }) {
            acked = m;
        }
    }
    let _ = std::fs::remove_file(&cur_path);
    println!("images: {} checked, {good} good, {bad} failed", good + bad);
    if lying {
        // The control passes when the checks caught the disk.
        if bad == 0 {
            return Err("a lying disk lost blocks in every image, and no check found it".into());
        }
        println!(
            "the lying disk: losses found in {bad} of {} images",
            good + bad
        );
        return Ok(());
    }
    if bad > 0 {
        return Err(format!("{bad} of {} images failed", good + bad));
    }
    Ok(())
}

// ---- load and verify ----

/// The value `load` sends for series `i` at its `k`-th update (time `T0 + 1 + k`), as text.
fn value(i: u64, k: u64) -> String {
    let v = (i.wrapping_mul(1_000_003) ^ k.wrapping_mul(7_919)).wrapping_mul(2_654_435_761)
        % 10_000_000;
    format!("{}.{:02}", v / 100, v % 100)
}

fn series_name(i: u64) -> String {
    format!("s{i:03}.rrd")
}

struct Conn {
    r: BufReader<std::os::unix::net::UnixStream>,
    w: std::os::unix::net::UnixStream,
}

impl Conn {
    fn connect(sock: &str) -> Result<Conn, String> {
        let s =
            std::os::unix::net::UnixStream::connect(sock).map_err(|e| format!("{sock}: {e}"))?;
        Ok(Conn {
            r: BufReader::new(s.try_clone().map_err(|e| e.to_string())?),
            w: s,
        })
    }

    /// Send one command, read its reply: the status number, the status line, its lines.
    fn raw(&mut self, line: &str) -> Result<(i64, String, Vec<String>), String> {
        self.w
            .write_all(format!("{line}\n").as_bytes())
            .map_err(|e| format!("send: {e}"))?;
        let mut status = String::new();
        self.r
            .read_line(&mut status)
            .map_err(|e| format!("read: {e}"))?;
        let n: i64 = status
            .split_whitespace()
            .next()
            .and_then(|s| s.parse().ok())
            .ok_or(format!("{line}: reply {status:?}"))?;
        let mut lines = Vec::new();
        for _ in 0..n.max(0) {
            let mut l = String::new();
            self.r.read_line(&mut l).map_err(|e| format!("read: {e}"))?;
            lines.push(l.trim_end().to_string());
        }
        Ok((n, status.trim_end().to_string(), lines))
    }

    /// [`Conn::raw`], Err on a failure.
    fn cmd(&mut self, line: &str) -> Result<String, String> {
        let (n, status, _) = self.raw(line)?;
        if n < 0 {
            return Err(format!("{line}: {status}"));
        }
        Ok(status)
    }
}

/// CREATE `series` series for `rows` one-second updates (as `load` and `faults` do).
fn create_series(c: &mut Conn, series: u64, rows: u64) -> Result<(), String> {
    for i in 0..series {
        c.cmd(&format!(
            "CREATE {} -s 1 -b {T0} DS:v:GAUGE:600:U:U RRA:LAST:0.5:1:{rows} RRA:AVERAGE:0.5:10:{}",
            series_name(i),
            rows / 10 + 1
        ))?;
    }
    Ok(())
}

/// The updates of batch `b` (`per` a series), each UPDATE's reply status.
fn send_batch(c: &mut Conn, series: u64, b: u64, per: u64) -> Result<Vec<(i64, String)>, String> {
    let mut out = Vec::new();
    for i in 0..series {
        for k in b * per..(b + 1) * per {
            let (n, st, _) = c.raw(&format!(
                "UPDATE {} {}:{}",
                series_name(i),
                T0 + 1 + k as i64,
                value(i, k)
            ))?;
            out.push((n, st));
        }
    }
    Ok(out)
}

fn load(a: &[String]) -> Result<(), String> {
    let a = Args::parse(a)?;
    let sock = a.need("socket")?;
    let marks_path = a.need("marks")?;
    let (series, batches, per) = (
        a.num("series", 20)?,
        a.num("batches", 100)?,
        a.num("per", 10)?,
    );
    let (from, pace) = (a.num("from", 0)?, a.num("pace-ms", 0)?);
    let rows = a.num("rows", (from + batches) * per)?.max(16);
    let mut c = Conn::connect(sock)?;
    // Appended to: a soak's runs after each restart go on in one file.
    let mut marks = std::fs::OpenOptions::new()
        .append(true)
        .open(marks_path)
        .map_err(|e| format!("{marks_path}: {e}"))?;
    if from == 0 {
        create_series(&mut c, series, rows)?;
        marks.write_all(b"created\n").map_err(|e| e.to_string())?;
    }
    for b in from..from + batches {
        for (n, st) in send_batch(&mut c, series, b, per)? {
            // After a restart the first batch may have reached the store before the kill
            // (a timer's commit) though it was never acknowledged: those times are taken.
            if n < 0 && !(b == from && from > 0 && st.contains("illegal attempt to update")) {
                return Err(format!("batch {b}: an update refused: {st}"));
            }
        }
        c.cmd("FLUSHALL")?;
        marks
            .write_all(format!("{b}\n").as_bytes())
            .map_err(|e| e.to_string())?;
        if pace > 0 {
            std::thread::sleep(Duration::from_millis(pace));
        }
    }
    eprintln!(
        "blockrec: {series} series, batches {from}..{} of {per}: all acknowledged",
        from + batches
    );
    Ok(())
}

/// The fault run's client: good batches, then the disk fails (`control`), then what the
/// daemon says to a batch, FLUSHALL, UPDATE and FETCH, then the disk heals and FLUSHALL
/// again. Prints one line a step (`STEP: status`), for the script to check.
fn faults(a: &[String]) -> Result<(), String> {
    let a = Args::parse(a)?;
    let mut c = Conn::connect(a.need("socket")?)?;
    let open = |k: &str| -> Result<File, String> {
        let p = a.need(k)?;
        std::fs::OpenOptions::new()
            .write(true)
            .open(p)
            .map_err(|e| format!("{p}: {e}"))
    };
    let (mut marks, mut control) = (open("marks")?, open("control")?);
    let (series, per, good) = (a.num("series", 20)?, a.num("per", 10)?, a.num("good", 5)?);
    let fail = a.need("fail")?;
    create_series(&mut c, series, (good + 3) * per + 16)?;
    marks.write_all(b"created").map_err(|e| e.to_string())?;
    for b in 0..good {
        send_batch(&mut c, series, b, per)?;
        c.cmd("FLUSHALL")?;
        marks
            .write_all(b.to_string().as_bytes())
            .map_err(|e| e.to_string())?;
    }
    println!("ACKED: {}", good - 1);
    control
        .write_all(fail.as_bytes())
        .map_err(|e| format!("control {fail}: {e}"))?;
    let sent = send_batch(&mut c, series, good, per)?;
    let refused = sent.iter().filter(|(n, _)| *n < 0).count();
    println!(
        "BATCH ON THE FAILING DISK: {} accepted, {refused} refused",
        sent.len() - refused
    );
    let (_, st, _) = c.raw("FLUSHALL")?;
    println!("FLUSHALL ON THE FAILING DISK: {st}");
    let (_, st, _) = c.raw(&format!(
        "UPDATE {} {}:1",
        series_name(0),
        T0 + 1 + ((good + 1) * per) as i64
    ))?;
    println!("UPDATE AFTER: {st}");
    // What FETCH serves: the last time with a value.
    let (n, st, lines) = c.raw(&format!(
        "FETCH {} LAST {T0} {}",
        series_name(0),
        T0 + ((good + 2) * per) as i64
    ))?;
    if n < 0 {
        println!("FETCH AFTER: {st}");
    } else {
        let last = lines
            .iter()
            .filter_map(|l| l.split_once(": "))
            .filter(|(t, v)| {
                t.parse::<i64>().is_ok() && v.trim().parse::<f64>().is_ok_and(|x| !x.is_nan())
            })
            .filter_map(|(t, _)| t.parse::<i64>().ok())
            .max()
            .map_or(0, |t| t - T0);
        println!(
            "FETCH AFTER: the last update with a value is {} (acknowledged: {})",
            last,
            good * per
        );
    }
    control
        .write_all(b"healthy")
        .map_err(|e| format!("control healthy: {e}"))?;
    let (_, st, _) = c.raw("FLUSHALL")?;
    println!("FLUSHALL ON THE HEALED DISK: {st}");
    Ok(())
}

fn verify(a: &[String]) -> Result<i32, String> {
    let a = Args::parse(a)?;
    let dir = Path::new(a.need("store")?);
    let (series, per) = (a.num("series", 20)?, a.num("per", 10)?);
    // The updates that were acknowledged: none, the creates, or batches 0..=b.
    let acked = a.get("acked").unwrap_or("");
    let (created, upto) = match acked {
        "" => (false, 0),
        "created" => (true, 0),
        b => (
            true,
            (b.parse::<u64>().map_err(|e| format!("--acked {b}: {e}"))? + 1) * per,
        ),
    };
    if !dir.exists() {
        if created {
            println!("the store is missing, though the creates were acknowledged");
            return Ok(1);
        }
        println!("no store yet (nothing acknowledged)");
        return Ok(0);
    }
    let store = match Store::open(dir, Options::default()) {
        Ok(s) => s,
        Err(e) => {
            println!("the store does not open: {e}");
            return Ok(2);
        }
    };
    let mut present_total = 0u64;
    let mut found = 0u64;
    let mut problems = Vec::new();
    for i in 0..series {
        let name = series_name(i);
        let Some(rrd) = store.get(&name) else {
            if created {
                problems.push(format!("{name}: missing"));
            }
            continue;
        };
        found += 1;
        let last = rrd.last_up;
        let end = last.max(T0 + 1);
        let f = match rrd::fetch::fetch(rrd, rrd::Cf::Last, T0, end, 1, false) {
            Ok(f) => f,
            Err(e) => {
                problems.push(format!("{name}: fetch: {}", e.msg));
                continue;
            }
        };
        let mut gap = None;
        let mut present = 0u64;
        for (r, row) in f.rows().enumerate() {
            let t = f.start + (r as i64 + 1) * f.step as i64;
            if t <= T0 {
                continue;
            }
            let k = (t - T0 - 1) as u64;
            let v = row[0];
            if v.is_nan() {
                gap.get_or_insert(k);
                continue;
            }
            if let Some(g) = gap {
                problems.push(format!("{name}: update {k} there after update {g} lost"));
                break;
            }
            let want: f64 = value(i, k).parse().unwrap_or(f64::NAN);
            if v.to_bits() != want.to_bits() {
                problems.push(format!("{name}: update {k} reads {v}, {want} was sent"));
                break;
            }
            present += 1;
        }
        if present < upto {
            problems.push(format!(
                "{name}: {present} updates there, {upto} were acknowledged"
            ));
        }
        present_total += present;
    }
    if problems.is_empty() {
        println!(
            "{found} series, {present_total} updates there, {upto} a series acknowledged; \
             checkpoint {}, {} commits replayed",
            store.recovery().checkpoint_generation,
            store.recovery().records_replayed
        );
        Ok(0)
    } else {
        println!("{}", problems.join("; "));
        Ok(1)
    }
}
