//! The bytes of a segment file: sealed archive chunks, each stored once.
//!
//! ```text
//! 0  magic "RINGSEG1"  8 version u32 (1)  12 class u32  16 id u64
//! 24 payload_len u64   32 payload_crc u32  36 header_crc u32 over bytes 0..36
//! 40 payload = chunk_count varint,
//!              per chunk: series id varint, archive varint, chunk index varint,
//!                         packed values (varint len, rrd::rows block encoding)
//! ```
//!
//! A checkpoint names the segments it draws on; an archive chunk the checkpoint marks as
//! "in the segments" is the one with that (series, archive, chunk) in the highest-numbered of
//! them. `class` groups chunks that expire together (docs/FORMAT.md, "Segments"); readers
//! need not look at it.

use crate::bytes::{ByteReader, ByteWriter, DecodeError};
use crate::crc32c::crc32c;

pub const SEG_MAGIC: [u8; 8] = *b"RINGSEG1";
pub const SEG_VERSION: u32 = 1;
pub const SEG_HEADER_LEN: usize = 40;
const SEG_HEADER_CRC_OFFSET: usize = 36;

/// One chunk in a segment, borrowed from the file's bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SegChunk<'a> {
    pub series: u64,
    pub archive: u32,
    pub chunk: u32,
    pub bytes: &'a [u8],
}

/// Builds a segment one chunk at a time.
pub struct SegmentWriter {
    w: ByteWriter,
    id: u64,
    class: u32,
    count: u64,
}

impl SegmentWriter {
    pub fn new(id: u64, class: u32) -> Self {
        SegmentWriter {
            w: ByteWriter::new(),
            id,
            class,
            count: 0,
        }
    }

    pub fn id(&self) -> u64 {
        self.id
    }

    /// Add one chunk's packed values.
    pub fn chunk(&mut self, series: u64, archive: u32, chunk: u32, bytes: &[u8]) {
        self.w.varint(series);
        self.w.varint(u64::from(archive));
        self.w.varint(u64::from(chunk));
        self.w.bytes(bytes);
        self.count += 1;
    }

    /// The file's bytes.
    pub fn finish(self) -> Vec<u8> {
        let mut payload = ByteWriter::new();
        payload.varint(self.count);
        payload.raw(&self.w.buf);
        let mut b = Vec::with_capacity(SEG_HEADER_LEN + payload.buf.len());
        b.extend_from_slice(&SEG_MAGIC);
        b.extend_from_slice(&SEG_VERSION.to_le_bytes());
        b.extend_from_slice(&self.class.to_le_bytes());
        b.extend_from_slice(&self.id.to_le_bytes());
        b.extend_from_slice(&(payload.buf.len() as u64).to_le_bytes());
        b.extend_from_slice(&crc32c(&payload.buf).to_le_bytes());
        let hcrc = crc32c(&b[..SEG_HEADER_CRC_OFFSET]);
        b.extend_from_slice(&hcrc.to_le_bytes());
        b.extend_from_slice(&payload.buf);
        b
    }
}

/// Check a whole segment file and list its chunks; `id` is the number its name carries.
pub fn decode_segment(b: &[u8], id: u64) -> Result<Vec<SegChunk<'_>>, DecodeError> {
    if b.len() < SEG_HEADER_LEN {
        return Err(DecodeError::new(b.len(), "segment header truncated"));
    }
    if b[..8] != SEG_MAGIC {
        return Err(DecodeError::new(0, "not a ringlet segment (bad magic)"));
    }
    let mut r = ByteReader::new(&b[8..SEG_HEADER_LEN]);
    let version = r.u32()?;
    let _class = r.u32()?;
    let file_id = r.u64()?;
    let payload_len = r.u64()?;
    let payload_crc = r.u32()?;
    let header_crc = r.u32()?;
    if crc32c(&b[..SEG_HEADER_CRC_OFFSET]) != header_crc {
        return Err(DecodeError::new(
            SEG_HEADER_CRC_OFFSET,
            "segment header checksum mismatch",
        ));
    }
    if version != SEG_VERSION {
        return Err(DecodeError::new(8, "unsupported segment version"));
    }
    if file_id != id {
        return Err(DecodeError::new(16, "segment id does not match its name"));
    }
    let payload = &b[SEG_HEADER_LEN..];
    if payload.len() as u64 != payload_len {
        return Err(DecodeError::new(
            SEG_HEADER_LEN,
            "segment payload truncated",
        ));
    }
    if crc32c(payload) != payload_crc {
        return Err(DecodeError::new(
            SEG_HEADER_LEN,
            "segment payload checksum mismatch",
        ));
    }
    let mut r = ByteReader::new(payload);
    let n = r.len(payload.len())?;
    let mut out = Vec::with_capacity(n);
    for _ in 0..n {
        let series = r.varint()?;
        let archive = u32::try_from(r.varint()?).map_err(|_| r.err("archive index too large"))?;
        let chunk = u32::try_from(r.varint()?).map_err(|_| r.err("chunk index too large"))?;
        let bytes = r.bytes()?;
        out.push(SegChunk {
            series,
            archive,
            chunk,
            bytes,
        });
    }
    r.finish()?;
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn segment_roundtrips_and_damage_is_caught() {
        let mut w = SegmentWriter::new(7, 16);
        w.chunk(3, 0, 5, b"abc");
        w.chunk(300, 2, 70_000, &[9; 200]);
        let b = w.finish();
        let got = decode_segment(&b, 7).unwrap();
        assert_eq!(got.len(), 2);
        assert_eq!((got[0].series, got[0].archive, got[0].chunk), (3, 0, 5));
        assert_eq!(got[0].bytes, b"abc");
        assert_eq!(
            (got[1].series, got[1].chunk, got[1].bytes.len()),
            (300, 70_000, 200)
        );
        assert!(decode_segment(&b, 8).is_err(), "wrong id");
        for at in [0, 9, 20, 37, 45, b.len() - 1] {
            let mut d = b.clone();
            d[at] ^= 2;
            assert!(decode_segment(&d, 7).is_err(), "byte {at}");
        }
        assert!(decode_segment(&b[..b.len() - 1], 7).is_err());
    }
}
