//! The mark of a clean close: `<dir>/clean`, written once everything accepted is committed
//! ([`crate::Store::close`], the daemon's shutdown), removed durably by the next writer
//! before it writes anything (its open, or a write after the mark in the same process).
//!
//! While it exists, the log holds no record after `end_lsn`: a reader of a few series (the
//! CLI on its own) that replays up to exactly that position, with the same checkpoint, need
//! not search the rest of the ring for committed records beyond damage (the fail-closed
//! check of recovery), which reads a header in every page of the ring.
//!
//! ```text
//! 0 magic "RINGCLN1"  8 generation u64  16 end_lsn u64  24 next_seq u64  32 crc u32 (CRC32C of 0..32)
//! ```
//!
//! A mark that is torn, damaged, or names another checkpoint or position is ignored.

use crate::files;
use crate::vfs::Vfs;
use codec::crc32c::crc32c;
use std::io;
use std::path::Path;

const MAGIC: [u8; 8] = *b"RINGCLN1";
const LEN: usize = 36;

/// What a clean close left: the newest checkpoint's generation and where the log ends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Mark {
    pub generation: u64,
    pub end_lsn: u64,
    pub next_seq: u64,
}

fn encode(m: &Mark) -> [u8; LEN] {
    let mut b = [0u8; LEN];
    b[..8].copy_from_slice(&MAGIC);
    b[8..16].copy_from_slice(&m.generation.to_le_bytes());
    b[16..24].copy_from_slice(&m.end_lsn.to_le_bytes());
    b[24..32].copy_from_slice(&m.next_seq.to_le_bytes());
    let crc = crc32c(&b[..32]);
    b[32..].copy_from_slice(&crc.to_le_bytes());
    b
}

fn decode(b: &[u8]) -> Option<Mark> {
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

/// Write the mark and make it durable.
pub fn write(vfs: &dyn Vfs, dir: &Path, m: &Mark) -> io::Result<()> {
    let mut f = vfs.open(&files::clean(dir), true)?;
    f.set_len(0)?;
    f.write_at(&encode(m), 0)?;
    f.sync_all()?;
    drop(f);
    vfs.sync_dir(dir)
}

/// Remove the mark, durably, if there is one.
pub fn remove(vfs: &dyn Vfs, dir: &Path) -> io::Result<()> {
    let p = files::clean(dir);
    if vfs.exists(&p)? {
        vfs.remove(&p)?;
        vfs.sync_dir(dir)?;
    }
    Ok(())
}

/// The mark, if a valid one is there.
pub fn read(vfs: &dyn Vfs, dir: &Path) -> io::Result<Option<Mark>> {
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
