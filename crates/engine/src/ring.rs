//! The log file as a ring of commit records: creation, positioned reads and writes that wrap
//! at the ring's end, and the scan that recovery uses to find the live records.
//!
//! The file is created at its final size and zero-filled (written, not just allocated), so
//! overwriting it later changes no metadata: an `fdatasync` after a commit flushes data pages
//! only. Record frames are codec's ([`codec::frame`]); this module knows where they go.

use crate::files;
use crate::vfs::{VFile, Vfs};
use codec::frame::{
    decode_superblock, encode_superblock, framed_len, page_for_block_size, scan_header,
    verify_record, HeaderScan, RecordHeader, PAGE, REC_HEADER_LEN, RING_START, SB_MARK_OFFSET,
};
use std::io;
use std::path::{Path, PathBuf};

/// Zeros are written in pieces of this size when a log is created or re-extended.
const ZERO_CHUNK: usize = 1 << 20;

/// Why the scan stopped at a position.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum End {
    /// Nothing was ever committed here (zeros, or an older lap's bytes).
    Clean,
    /// A record for this position that is incomplete or fails its checksum.
    Torn { reason: String, extent: u64 },
    /// Bytes that cannot be there: garbage where the ring was never written, a header for
    /// another position or sequence number.
    Garbage { reason: String },
}

/// What the scan found at a position.
#[derive(Debug)]
pub enum Scan {
    Record {
        header: RecordHeader,
        payload: Vec<u8>,
        framed: u64,
    },
    End(End),
}

pub struct LogRing {
    file: Box<dyn VFile>,
    pub path: PathBuf,
    pub cap: u64,
    /// Records start and end on multiples of this (the file system's block size when the
    /// log was created, 512..=4096), so a commit never rewrites a block of an earlier one.
    pub page: u64,
}

fn write_zeros(f: &mut dyn VFile, from: u64, to: u64) -> io::Result<()> {
    let zeros = vec![0u8; ZERO_CHUNK];
    let mut off = from;
    while off < to {
        let n = ((to - off) as usize).min(ZERO_CHUNK);
        f.write_at(&zeros[..n], off)?;
        off += n as u64;
    }
    Ok(())
}

/// Write `dir/log.tmp`: superblock, then `cap` bytes of ring reading as zeros (allocated when
/// `allocate` and the file system can, else written), synced.
fn build(vfs: &dyn Vfs, dir: &Path, cap: u64, page: u64, allocate: bool) -> io::Result<()> {
    let tmp = files::tmp(&files::log(dir));
    let mut f = vfs.open(&tmp, true)?;
    f.set_len(0)?;
    // The ring is overwritten in place lap after lap: on btrfs, copy-on-write would move
    // every rewritten block and update the extent and checksum trees at each commit.
    // The flag only takes on an empty file.
    f.no_cow();
    f.write_at(&encode_superblock(cap, page), 0)?;
    if !(allocate && f.allocate(RING_START + cap)?) {
        write_zeros(f.as_mut(), RING_START, RING_START + cap)?;
    }
    f.sync_all()?;
    f.drop_cache();
    Ok(())
}

/// Rename the built `log.tmp` over `log`, durably.
fn put_in_place(vfs: &dyn Vfs, dir: &Path) -> io::Result<()> {
    vfs.rename(&files::tmp(&files::log(dir)), &files::log(dir))?;
    vfs.sync_dir(dir)
}

impl LogRing {
    /// Create `dir/log` with a ring of `cap` bytes and records aligned to the file system's
    /// block size: built as `log.tmp`, zero-filled, synced, renamed into place, directory
    /// synced.
    pub fn create(vfs: &dyn Vfs, dir: &Path, cap: u64) -> io::Result<()> {
        let page = page_for_block_size(vfs.block_size(dir)?);
        build(vfs, dir, cap, page, false)?;
        put_in_place(vfs, dir)
    }

    /// Build a larger ring of `cap` bytes, empty, as `log.tmp`, with this ring's page size
    /// (records keep their alignment): reserved with `fallocate` where the file system can
    /// (a grown ring may be gigabytes: writing its zeros would stall commits for seconds),
    /// else zero-filled; synced. [`LogRing::replace`] puts it in place.
    pub fn prepare_larger(&self, vfs: &dyn Vfs, dir: &Path, cap: u64) -> io::Result<()> {
        build(vfs, dir, cap, self.page, true)
    }

    /// Rename the ring [`LogRing::prepare_larger`] built over the log and open it. The
    /// caller has made the log's records unneeded first (a checkpoint at the log's end).
    pub fn replace(vfs: &dyn Vfs, dir: &Path) -> io::Result<Result<LogRing, String>> {
        put_in_place(vfs, dir)?;
        LogRing::open(vfs, dir)
    }

    /// Remove a `log.tmp` left by a crash while a ring was being built or before it was
    /// put in place (the log itself is whole either way).
    pub fn remove_unfinished(vfs: &dyn Vfs, dir: &Path) -> io::Result<()> {
        let tmp = files::tmp(&files::log(dir));
        if vfs.exists(&tmp)? {
            vfs.remove(&tmp)?;
        }
        Ok(())
    }

    /// Open `dir/log` and read its superblock; `Err(Ok(reason))` when the superblock is bad.
    pub fn open(vfs: &dyn Vfs, dir: &Path) -> io::Result<Result<LogRing, String>> {
        let path = files::log(dir);
        let file = vfs.open(&path, false)?;
        let mut sb = vec![0u8; PAGE as usize];
        let n = file.read_at(&mut sb, 0)?;
        match decode_superblock(&sb[..n]) {
            Ok((cap, page)) => Ok(Ok(LogRing {
                file,
                path,
                cap,
                page,
            })),
            Err(why) => Ok(Err(why.to_string())),
        }
    }

    /// Let the kernel drop the log's cached pages, as after it was written whole (created)
    /// or read whole (replayed). Such pages sit in large folios on kernels that have them
    /// (Linux 6.18's ext4), and a commit's page written into one dirties the whole folio: the
    /// process's I/O accounting (`write_bytes`, STATS' DiskBytesWritten) then counts the
    /// folio, a hundred kilobytes and more a commit, though the device gets the page. A
    /// commit's write into uncached pages makes folios of about its own size.
    pub fn drop_cache(&self) {
        self.file.drop_cache();
    }

    /// The bytes of the superblock page's mark of a clean close ([`crate::clean`]).
    pub fn read_mark(&self) -> io::Result<[u8; crate::clean::LEN]> {
        let mut b = [0u8; crate::clean::LEN];
        let n = self.file.read_at(&mut b, SB_MARK_OFFSET)?;
        b[n..].fill(0);
        Ok(b)
    }

    /// Write the mark's bytes (not synced: the commit's or the caller's sync carries them).
    pub fn write_mark(&mut self, bytes: &[u8; crate::clean::LEN]) -> io::Result<()> {
        self.file.write_at(bytes, SB_MARK_OFFSET)
    }

    /// File offset of a log position.
    pub fn offset(&self, lsn: u64) -> u64 {
        RING_START + lsn % self.cap
    }

    /// The file is shorter than superblock + ring (it was truncated).
    pub fn is_short(&self) -> io::Result<bool> {
        Ok(self.file.len()? < RING_START + self.cap)
    }

    /// Zero-fill a truncated file back to its full length and sync it.
    pub fn restore_len(&mut self) -> io::Result<()> {
        let len = self.file.len()?;
        let full = RING_START + self.cap;
        if len < full {
            write_zeros(self.file.as_mut(), len, full)?;
            self.file.sync_all()?;
        }
        Ok(())
    }

    /// The (at most two) file ranges holding `len` bytes from `lsn`.
    fn pieces(&self, lsn: u64, len: usize) -> [(u64, usize, usize); 2] {
        let at = lsn % self.cap;
        let first = ((self.cap - at) as usize).min(len);
        [
            (RING_START + at, 0, first),
            (RING_START, first, len - first),
        ]
    }

    /// Write `bytes` at `lsn`, wrapping at the ring's end (`bytes.len() <= cap`).
    pub fn write(&mut self, lsn: u64, bytes: &[u8]) -> io::Result<()> {
        for (off, start, n) in self.pieces(lsn, bytes.len()) {
            if n > 0 {
                self.file.write_at(&bytes[start..start + n], off)?;
            }
        }
        Ok(())
    }

    /// Write a record of `framed` bytes at `lsn`: `header`, then `parts` one after the
    /// other, then zeros. Staged through a buffer of at most [`ZERO_CHUNK`] bytes, so the
    /// record is never copied whole, and written in whole pages (`lsn` and `framed` are
    /// multiples of the page): no page is half written, none read back first.
    pub fn write_record(
        &mut self,
        lsn: u64,
        header: &[u8],
        parts: &[&[u8]],
        framed: u64,
    ) -> io::Result<()> {
        let mut stage: Vec<u8> = Vec::with_capacity((framed as usize).min(ZERO_CHUNK));
        let mut at = lsn;
        let mut pieces = std::iter::once(header).chain(parts.iter().copied());
        let mut rest: &[u8] = &[];
        loop {
            while rest.is_empty() {
                match pieces.next() {
                    Some(p) => rest = p,
                    None => break,
                }
            }
            if rest.is_empty() {
                break;
            }
            let n = rest.len().min(ZERO_CHUNK - stage.len());
            stage.extend_from_slice(&rest[..n]);
            rest = &rest[n..];
            if stage.len() == ZERO_CHUNK {
                self.write(at, &stage)?;
                at += stage.len() as u64;
                stage.clear();
            }
        }
        let end = lsn + framed;
        debug_assert!(at + stage.len() as u64 <= end, "record longer than framed");
        // What is staged, then zeros to the end.
        while at < end {
            let want = ((end - at) as usize).min(ZERO_CHUNK);
            if stage.len() < want {
                stage.resize(want, 0);
            }
            self.write(at, &stage)?;
            at += stage.len() as u64;
            stage.clear();
        }
        Ok(())
    }

    /// Read into `buf` from `lsn`, wrapping; returns the bytes read (short if truncated).
    pub fn read(&self, lsn: u64, buf: &mut [u8]) -> io::Result<usize> {
        let mut total = 0;
        for (off, start, n) in self.pieces(lsn, buf.len()) {
            if n == 0 {
                continue;
            }
            let got = self.file.read_at(&mut buf[start..start + n], off)?;
            total += got;
            if got < n {
                break;
            }
        }
        Ok(total)
    }

    /// `fdatasync` the log.
    pub fn sync(&mut self) -> io::Result<()> {
        self.file.sync_data()
    }

    /// Zero `len` bytes from `lsn` (a cut tail), then sync.
    pub fn zero(&mut self, lsn: u64, len: u64) -> io::Result<()> {
        let len = len.min(self.cap);
        for (off, _, n) in self.pieces(lsn, len as usize) {
            if n > 0 {
                write_zeros(self.file.as_mut(), off, off + n as u64)?;
            }
        }
        self.sync()
    }

    /// The committed records that lie past `from` in the ring window ending at `window_end`:
    /// at each page boundary, a well-formed header whose sequence number is at least
    /// `min_seq`, written for this position in this lap or a later one, whose checksum
    /// holds. Records of earlier laps (lower sequence numbers) and garbage are passed over.
    /// A writer appends in order and syncs each record before the next, so a valid record
    /// here means the damage at `from` is not the end of the log. At most `limit` are
    /// returned, as (position, sequence number). Reads the file mapped ([`Vfs::map`]), so
    /// only each page's header is touched (and the payload of a header that qualifies),
    /// not the whole ring.
    pub fn records_after(
        &self,
        vfs: &dyn Vfs,
        from: u64,
        window_end: u64,
        min_seq: u64,
        limit: usize,
    ) -> io::Result<Vec<(u64, u64)>> {
        let map = vfs.map(&self.path)?;
        let file: &[u8] = (*map).as_ref();
        let mut found = Vec::new();
        let mut at = from.next_multiple_of(self.page);
        // Pages are let go a window at a time: the pass holds at most a window of the ring.
        const WINDOW: u64 = 1 << 20;
        let mut window_from = at;
        while at < window_end && found.len() < limit {
            if at - window_from >= WINDOW {
                let (off, len) = (
                    self.offset(window_from) as usize,
                    (at - window_from) as usize,
                );
                map.release_range(off, len.min(file.len().saturating_sub(off)));
                window_from = at;
            }
            let off = self.offset(at) as usize;
            let Some(h) = file
                .get(off..off + REC_HEADER_LEN)
                .and_then(|h| <&[u8; REC_HEADER_LEN]>::try_from(h).ok())
            else {
                break; // past the end of a short file
            };
            let mut next = at + self.page;
            if let HeaderScan::Header(hd) = scan_header(h) {
                let here = hd.lsn >= at && (hd.lsn - at).is_multiple_of(self.cap);
                if here && hd.seq >= min_seq && u64::from(hd.payload_len) < self.cap {
                    let mut payload = vec![0u8; hd.payload_len as usize];
                    let got = self.read(at + REC_HEADER_LEN as u64, &mut payload)?;
                    if got == payload.len() && verify_record(h, &hd, &payload) {
                        found.push((at, hd.seq));
                        next = at + framed_len(payload.len(), self.page);
                    }
                }
            }
            at = next;
        }
        map.release();
        Ok(found)
    }

    /// Look for the record `(lsn, seq)`. `window_start` is the checkpoint's position: a record
    /// may not reach `window_start + cap`.
    pub fn scan(&self, lsn: u64, seq: u64, window_start: u64) -> io::Result<Scan> {
        let mut h = [0u8; REC_HEADER_LEN];
        let n = self.read(lsn, &mut h)?;
        if n < REC_HEADER_LEN && h[..n].iter().all(|&b| b == 0) {
            return Ok(Scan::End(End::Clean)); // the file ends here (reported as truncated)
        }
        if n < REC_HEADER_LEN {
            return Ok(Scan::End(End::Torn {
                reason: "log file truncated inside a record header".into(),
                extent: self.page,
            }));
        }
        let header = match scan_header(&h) {
            HeaderScan::Zero => return Ok(Scan::End(End::Clean)),
            HeaderScan::Garbage if lsn >= self.cap => return Ok(Scan::End(End::Clean)),
            HeaderScan::Garbage => {
                return Ok(Scan::End(End::Garbage {
                    reason: "non-zero bytes where no record was ever written".into(),
                }))
            }
            HeaderScan::Header(hd) => hd,
        };
        if header.lsn != lsn {
            if header.lsn < lsn && (lsn - header.lsn).is_multiple_of(self.cap) {
                return Ok(Scan::End(End::Clean)); // a record of an earlier lap
            }
            return Ok(Scan::End(End::Garbage {
                reason: format!("record header for position {} found at {lsn}", header.lsn),
            }));
        }
        if header.seq != seq {
            return Ok(Scan::End(End::Garbage {
                reason: format!("sequence number {} where {seq} was expected", header.seq),
            }));
        }
        let framed = framed_len(header.payload_len as usize, self.page);
        if lsn + framed > window_start + self.cap {
            return Ok(Scan::End(End::Torn {
                reason: format!("record length {} overruns the ring", header.payload_len),
                extent: self.page,
            }));
        }
        let mut payload = vec![0u8; header.payload_len as usize];
        let got = self.read(lsn + REC_HEADER_LEN as u64, &mut payload)?;
        if got < payload.len() {
            return Ok(Scan::End(End::Torn {
                reason: "log file truncated inside a record".into(),
                extent: framed,
            }));
        }
        if !verify_record(&h, &header, &payload) {
            return Ok(Scan::End(End::Torn {
                reason: "record checksum mismatch (torn or corrupt write)".into(),
                extent: framed,
            }));
        }
        Ok(Scan::Record {
            header,
            payload,
            framed,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sim::SimFs;
    use codec::frame::{encode_record, record_header, KIND_COMMIT};

    #[test]
    fn a_record_written_in_parts_is_the_framed_record_and_wraps() {
        let fs = SimFs::new();
        let dir = Path::new("/s");
        fs.create_dir_all(dir).unwrap();
        let cap = 4 << 20;
        LogRing::create(&fs, dir, cap).unwrap();
        let mut ring = LogRing::open(&fs, dir).unwrap().unwrap();
        // 2.5 MiB of payload from 3 MiB into a 4 MiB ring: staged a megabyte at a time,
        // written across the ring's end.
        let body: Vec<u8> = (0..(5u32 << 19))
            .map(|i| (i.wrapping_mul(2_654_435_761) >> 7) as u8)
            .collect();
        let head = [3u8, 1];
        let lsn = 4 * cap + (3 << 20);
        let parts: [&[u8]; 2] = [&head, &body];
        let payload = [&head[..], &body[..]].concat();
        let framed = framed_len(payload.len(), ring.page);
        let header = record_header(KIND_COMMIT, 42, lsn, &parts);
        ring.write_record(lsn, &header, &parts, framed).unwrap();
        let want = encode_record(KIND_COMMIT, 42, lsn, &payload, ring.page);
        let mut got = vec![0u8; want.len()];
        assert_eq!(ring.read(lsn, &mut got).unwrap(), want.len());
        assert!(got == want, "the bytes differ from the framed record");
        match ring.scan(lsn, 42, lsn).unwrap() {
            Scan::Record { payload: p, .. } => assert!(p == payload),
            other => panic!("{other:?}"),
        }
    }
}
