//! The mark of a clean close: where the log ended when everything accepted was committed
//! ([`crate::Store::close`], the daemon's shutdown). It lives in the log file's superblock
//! page ([`codec::frame::SB_MARK_OFFSET`]) and is written with the closing commit's record,
//! under that commit's one `fdatasync`; the next writer's first record clears it (zeros)
//! under its own. Stores written before 2026-11-29 kept it in a file, `<dir>/clean`: still
//! read, and removed (durably) by the next writer's open.
//!
//! While it matches, the log holds no record after `end_lsn`: a reader of a few series (the
//! CLI on its own) that replays up to exactly that position, with the same checkpoint, need
//! not search the rest of the ring for committed records beyond damage (the fail-closed
//! check of recovery), which reads a header in every page of the ring. A mark that does not
//! match is ignored, so a crash between the mark's write and the record's, in either order,
//! never misleads: a mark written without its record names a position the replay does not
//! reach; a record written without the clearing of the mark before it takes the replay
//! past the mark's position; and no commit returns before both are on the disk.
//!
//! ```text
//! 0 magic "RINGCLN1"  8 generation u64  16 end_lsn u64  24 next_seq u64  32 crc u32 (CRC32C of 0..32)
//! ```
//!
//! A mark that is torn, damaged, or names another checkpoint or position is ignored.

use crate::files;
use crate::ring::LogRing;
use crate::vfs::Vfs;
use codec::crc32c::crc32c;
use std::io;
use std::path::Path;

const MAGIC: [u8; 8] = *b"RINGCLN1";
/// The mark's length in bytes.
pub const LEN: usize = 36;

/// What a clean close left: the newest checkpoint's generation and where the log ends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Mark {
    pub generation: u64,
    pub end_lsn: u64,
    pub next_seq: u64,
}

pub(crate) fn encode(m: &Mark) -> [u8; LEN] {
    let mut b = [0u8; LEN];
    b[..8].copy_from_slice(&MAGIC);
    b[8..16].copy_from_slice(&m.generation.to_le_bytes());
    b[16..24].copy_from_slice(&m.end_lsn.to_le_bytes());
    b[24..32].copy_from_slice(&m.next_seq.to_le_bytes());
    let crc = crc32c(&b[..32]);
    b[32..].copy_from_slice(&crc.to_le_bytes());
    b
}

pub(crate) fn decode(b: &[u8]) -> Option<Mark> {
    if b.len() != LEN || b[..8] != MAGIC || crc32c(&b[..32]).to_le_bytes() != b[32..] {
        return None;
    }
    let u = |i: usize| u64::from_le_bytes(b[i..i + 8].try_into().expect("8 bytes"));
    Some(Mark {
        generation: u(8),
        end_lsn: u(16),
        next_seq: u(24),
    })
}

/// Remove the mark file of an older store (`<dir>/clean`), durably, if there is one.
pub fn remove(vfs: &dyn Vfs, dir: &Path) -> io::Result<()> {
    let p = files::clean(dir);
    if vfs.exists(&p)? {
        vfs.remove(&p)?;
        vfs.sync_dir(dir)?;
    }
    Ok(())
}

/// The marks an open may trust, if they match where its replay ended: the one in the log's
/// superblock page (`in_log`, [`read_in_log`]), and an older store's file.
pub fn read_all(vfs: &dyn Vfs, dir: &Path, in_log: Option<Mark>) -> io::Result<Vec<Mark>> {
    let mut marks: Vec<Mark> = in_log.into_iter().collect();
    marks.extend(read_file(vfs, dir)?);
    Ok(marks)
}

/// The mark in the log's superblock page, if a valid one is there.
pub fn read_in_log(log: &LogRing) -> io::Result<Option<Mark>> {
    Ok(decode(&log.read_mark()?))
}

/// Whether the store in `dir` was closed cleanly (a valid mark in its log, or an older
/// store's mark file), whatever position it names: for tests and tools.
pub fn is_marked(vfs: &dyn Vfs, dir: &Path) -> io::Result<bool> {
    let log = match LogRing::open(vfs, dir)? {
        Ok(l) => l,
        Err(_) => return Ok(false),
    };
    Ok(!read_all(vfs, dir, read_in_log(&log)?)?.is_empty())
}

/// An older store's mark file, if a valid one is there.
fn read_file(vfs: &dyn Vfs, dir: &Path) -> io::Result<Option<Mark>> {
    let p = files::clean(dir);
    if !vfs.exists(&p)? {
        return Ok(None);
    }
    let f = vfs.open(&p, false)?;
    let mut b = [0u8; LEN + 1];
    let n = f.read_at(&mut b, 0)?;
    Ok(decode(&b[..n]))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_mark_roundtrips_and_damage_is_ignored() {
        let m = Mark {
            generation: 7,
            end_lsn: 123_456,
            next_seq: 99,
        };
        let b = encode(&m);
        assert_eq!(decode(&b), Some(m));
        for i in 0..LEN {
            let mut d = b;
            d[i] ^= 1;
            assert_eq!(decode(&d), None, "byte {i}");
        }
        assert_eq!(decode(&b[..LEN - 1]), None);
    }
}
