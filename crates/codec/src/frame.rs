//! The log file's bytes: its superblock and the frame of every record in the ring.
//!
//! ```text
//! log file = [ superblock page | ring of `ring_cap` bytes ]
//! superblock (page 0, rest zero but the mark of a clean close):
//!   0  magic "RINGLOG1"   8  version u32   12 page size u32   16 ring_cap u64   24 crc u32
//!   2048  the mark of a clean close (36 bytes, engine's `clean`), or zeros
//! record (at ring offset lsn % ring_cap, wrapping at the ring's end):
//!   0  magic "RLR1" u32   4  kind u8   5 reserved [0;3]   8 seq u64   16 lsn u64
//!   24 payload_len u32    28 crc u32 over bytes 0..28 and the payload
//!   32 payload, then zero padding to a multiple of PAGE
//! ```
//!
//! `lsn` (log sequence number) is the record's logical byte position: the total bytes written
//! to the ring before it, over all laps. A record read at lsn `L` is live only if its header
//! says `lsn == L` and `seq` is the one expected; an older lap's record at the same place says
//! `L - k * ring_cap`. Offsets are built one from the previous, as in docs/FORMAT.md.

use crate::crc32c::Crc32c;

/// Page size: every record starts and ends on a page boundary of the ring.
pub const PAGE: u64 = 4096;

pub const SB_MAGIC: [u8; 8] = *b"RINGLOG1";
pub const SB_VERSION: u32 = 1;
pub const SB_MAGIC_OFFSET: usize = 0;
pub const SB_VERSION_OFFSET: usize = SB_MAGIC_OFFSET + SB_MAGIC.len();
pub const SB_PAGE_OFFSET: usize = SB_VERSION_OFFSET + size_of::<u32>();
pub const SB_RING_CAP_OFFSET: usize = SB_PAGE_OFFSET + size_of::<u32>();
pub const SB_CRC_OFFSET: usize = SB_RING_CAP_OFFSET + size_of::<u64>();
pub const SB_LEN: usize = SB_CRC_OFFSET + size_of::<u32>();
/// The ring starts after the superblock's page.
pub const RING_START: u64 = PAGE;
/// Where the mark of a clean close lives in the superblock's page: past its fields, in a
/// 512-byte sector (and a 1 KiB block) of its own, so that a torn write of the mark never
/// tears the superblock.
pub const SB_MARK_OFFSET: u64 = 2048;

pub const REC_MAGIC: [u8; 4] = *b"RLR1";
pub const REC_MAGIC_OFFSET: usize = 0;
pub const REC_KIND_OFFSET: usize = REC_MAGIC_OFFSET + REC_MAGIC.len();
pub const REC_RESERVED_OFFSET: usize = REC_KIND_OFFSET + size_of::<u8>();
pub const REC_SEQ_OFFSET: usize = REC_RESERVED_OFFSET + 3;
pub const REC_LSN_OFFSET: usize = REC_SEQ_OFFSET + size_of::<u64>();
pub const REC_LEN_OFFSET: usize = REC_LSN_OFFSET + size_of::<u64>();
pub const REC_CRC_OFFSET: usize = REC_LEN_OFFSET + size_of::<u32>();
pub const REC_HEADER_LEN: usize = REC_CRC_OFFSET + size_of::<u32>();

/// Record kinds.
pub const KIND_COMMIT: u8 = 1;

fn le_u32(b: &[u8], at: usize) -> u32 {
    let mut a = [0u8; 4];
    a.copy_from_slice(&b[at..at + 4]);
    u32::from_le_bytes(a)
}

fn le_u64(b: &[u8], at: usize) -> u64 {
    let mut a = [0u8; 8];
    a.copy_from_slice(&b[at..at + 8]);
    u64::from_le_bytes(a)
}

/// Whether `page` can be a log's record alignment: a power of two from 512 to [`PAGE`].
pub fn valid_page(page: u64) -> bool {
    page.is_power_of_two() && (512..=PAGE).contains(&page)
}

/// The record alignment for a file system of block size `block`: the block size clamped to
/// 512..=[`PAGE`] and rounded down to a power of two.
pub fn page_for_block_size(block: u64) -> u64 {
    let b = block.clamp(512, PAGE);
    1 << (63 - b.leading_zeros())
}

/// The superblock (4 KiB) for a ring of `ring_cap` bytes whose records are aligned to `page`.
pub fn encode_superblock(ring_cap: u64, page: u64) -> Vec<u8> {
    debug_assert!(valid_page(page));
    let mut b = vec![0u8; PAGE as usize];
    b[SB_MAGIC_OFFSET..SB_VERSION_OFFSET].copy_from_slice(&SB_MAGIC);
    b[SB_VERSION_OFFSET..SB_PAGE_OFFSET].copy_from_slice(&SB_VERSION.to_le_bytes());
    b[SB_PAGE_OFFSET..SB_RING_CAP_OFFSET].copy_from_slice(&(page as u32).to_le_bytes());
    b[SB_RING_CAP_OFFSET..SB_CRC_OFFSET].copy_from_slice(&ring_cap.to_le_bytes());
    let crc = crate::crc32c::crc32c(&b[..SB_CRC_OFFSET]);
    b[SB_CRC_OFFSET..SB_LEN].copy_from_slice(&crc.to_le_bytes());
    b
}

/// The ring capacity and record alignment a superblock declares, or why it is not a valid
/// superblock.
pub fn decode_superblock(b: &[u8]) -> Result<(u64, u64), &'static str> {
    if b.len() < SB_LEN {
        return Err("superblock truncated");
    }
    if b[SB_MAGIC_OFFSET..SB_VERSION_OFFSET] != SB_MAGIC {
        return Err("not a ringlet log (bad magic)");
    }
    if crate::crc32c::crc32c(&b[..SB_CRC_OFFSET]) != le_u32(b, SB_CRC_OFFSET) {
        return Err("superblock checksum mismatch");
    }
    if le_u32(b, SB_VERSION_OFFSET) != SB_VERSION {
        return Err("unsupported log version");
    }
    let page = le_u32(b, SB_PAGE_OFFSET) as u64;
    if !valid_page(page) {
        return Err("unsupported page size");
    }
    let cap = le_u64(b, SB_RING_CAP_OFFSET);
    if cap == 0 || !cap.is_multiple_of(PAGE) {
        return Err("ring capacity is not a positive multiple of 4 KiB");
    }
    Ok((cap, page))
}

/// Bytes a record with `payload_len` bytes of payload occupies in a ring aligned to `page`.
pub fn framed_len(payload_len: usize, page: u64) -> u64 {
    (REC_HEADER_LEN + payload_len).div_ceil(page as usize) as u64 * page
}

/// The fields of a record header.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RecordHeader {
    pub kind: u8,
    pub seq: u64,
    pub lsn: u64,
    pub payload_len: u32,
    pub crc: u32,
}

/// What the 32 bytes at a record position are.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HeaderScan {
    /// All zero: never written (a fresh ring) or zeroed.
    Zero,
    /// A well-formed header (its payload still has to pass the CRC).
    Header(RecordHeader),
    /// Neither: garbage or a torn header.
    Garbage,
}

/// The 32-byte header of a record whose payload is `parts` one after the other (its CRC
/// covers the header's first 28 bytes and the payload): [`encode_record`] without copying
/// the payload.
pub fn record_header(kind: u8, seq: u64, lsn: u64, parts: &[&[u8]]) -> [u8; REC_HEADER_LEN] {
    let len: usize = parts.iter().map(|p| p.len()).sum();
    let mut h = [0u8; REC_HEADER_LEN];
    h[REC_MAGIC_OFFSET..REC_KIND_OFFSET].copy_from_slice(&REC_MAGIC);
    h[REC_KIND_OFFSET] = kind;
    h[REC_SEQ_OFFSET..REC_LSN_OFFSET].copy_from_slice(&seq.to_le_bytes());
    h[REC_LSN_OFFSET..REC_LEN_OFFSET].copy_from_slice(&lsn.to_le_bytes());
    h[REC_LEN_OFFSET..REC_CRC_OFFSET].copy_from_slice(&(len as u32).to_le_bytes());
    let mut crc = Crc32c::new();
    crc.update(&h[..REC_CRC_OFFSET]);
    for p in parts {
        crc.update(p);
    }
    h[REC_CRC_OFFSET..REC_HEADER_LEN].copy_from_slice(&crc.finish().to_le_bytes());
    h
}

/// A record framed and padded to `page`, ready to be written at `lsn`.
pub fn encode_record(kind: u8, seq: u64, lsn: u64, payload: &[u8], page: u64) -> Vec<u8> {
    let len = framed_len(payload.len(), page) as usize;
    let mut b = Vec::with_capacity(len);
    b.extend_from_slice(&record_header(kind, seq, lsn, &[payload]));
    b.extend_from_slice(payload);
    b.resize(len, 0);
    b
}

/// Classify the header bytes at a record position.
pub fn scan_header(h: &[u8; REC_HEADER_LEN]) -> HeaderScan {
    if h.iter().all(|&b| b == 0) {
        return HeaderScan::Zero;
    }
    if h[REC_MAGIC_OFFSET..REC_KIND_OFFSET] != REC_MAGIC
        || h[REC_RESERVED_OFFSET..REC_SEQ_OFFSET] != [0; 3]
        || h[REC_KIND_OFFSET] != KIND_COMMIT
    {
        return HeaderScan::Garbage;
    }
    HeaderScan::Header(RecordHeader {
        kind: h[REC_KIND_OFFSET],
        seq: le_u64(h, REC_SEQ_OFFSET),
        lsn: le_u64(h, REC_LSN_OFFSET),
        payload_len: le_u32(h, REC_LEN_OFFSET),
        crc: le_u32(h, REC_CRC_OFFSET),
    })
}

/// Whether `payload` belongs to `header` (the CRC over header fields and payload matches).
pub fn verify_record(h: &[u8; REC_HEADER_LEN], header: &RecordHeader, payload: &[u8]) -> bool {
    if payload.len() != header.payload_len as usize {
        return false;
    }
    let mut crc = Crc32c::new();
    crc.update(&h[..REC_CRC_OFFSET]);
    crc.update(payload);
    crc.finish() == header.crc
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn header_layout_is_pinned() {
        // A format change must change these numbers and docs/FORMAT.md together.
        assert_eq!(SB_LEN, 28);
        assert_eq!(REC_HEADER_LEN, 32);
        assert_eq!(
            (
                REC_SEQ_OFFSET,
                REC_LSN_OFFSET,
                REC_LEN_OFFSET,
                REC_CRC_OFFSET
            ),
            (8, 16, 24, 28)
        );
    }

    #[test]
    fn record_golden_bytes() {
        let b = encode_record(KIND_COMMIT, 7, 8192, b"hi", PAGE);
        assert_eq!(b.len(), PAGE as usize);
        assert_eq!(
            &b[..34],
            &[
                b'R', b'L', b'R', b'1', 1, 0, 0, 0, 7, 0, 0, 0, 0, 0, 0, 0, 0, 0x20, 0, 0, 0, 0, 0,
                0, 2, 0, 0, 0, 0xfc, 0x74, 0xfb, 0xc0, b'h', b'i'
            ][..]
        );
    }

    #[test]
    fn a_header_over_parts_is_the_header_over_their_concatenation() {
        let payload: Vec<u8> = (0..3000u32).map(|i| (i * 7) as u8).collect();
        let whole = encode_record(KIND_COMMIT, 9, 4096 * 3, &payload, PAGE);
        let (a, b) = payload.split_at(5);
        let h = record_header(KIND_COMMIT, 9, 4096 * 3, &[a, &[], b]);
        assert_eq!(&whole[..REC_HEADER_LEN], &h[..]);
        let other = record_header(KIND_COMMIT, 9, 4096 * 3, &[b, a]);
        assert_ne!(&whole[..REC_HEADER_LEN], &other[..]);
    }

    #[test]
    fn record_roundtrips_and_any_flipped_bit_is_caught() {
        let payload: Vec<u8> = (0..5000u32).map(|i| (i * 31) as u8).collect();
        let b = encode_record(KIND_COMMIT, 3, 4096 * 5, &payload, PAGE);
        assert_eq!(b.len() as u64, framed_len(payload.len(), PAGE));
        assert_eq!(framed_len(payload.len(), 1024), 5120);
        assert_eq!(encode_record(KIND_COMMIT, 3, 0, &payload, 512).len(), 5120);
        let h: [u8; REC_HEADER_LEN] = b[..REC_HEADER_LEN].try_into().unwrap();
        let HeaderScan::Header(hdr) = scan_header(&h) else {
            panic!("not a header")
        };
        assert_eq!((hdr.seq, hdr.lsn, hdr.payload_len), (3, 4096 * 5, 5000));
        let body = &b[REC_HEADER_LEN..REC_HEADER_LEN + 5000];
        assert!(verify_record(&h, &hdr, body));
        for bit in [0usize, 77, 4999 * 8 + 7] {
            let mut p = body.to_vec();
            p[bit / 8] ^= 1 << (bit % 8);
            assert!(!verify_record(&h, &hdr, &p));
        }
        let mut h2 = h;
        h2[REC_LSN_OFFSET] ^= 1;
        let HeaderScan::Header(hdr2) = scan_header(&h2) else {
            panic!()
        };
        assert!(!verify_record(&h2, &hdr2, body));
    }

    #[test]
    fn pages_follow_the_block_size_within_512_to_4096() {
        assert_eq!(page_for_block_size(4096), 4096);
        assert_eq!(page_for_block_size(1024), 1024);
        assert_eq!(page_for_block_size(65536), 4096);
        assert_eq!(page_for_block_size(0), 512);
        assert_eq!(page_for_block_size(3000), 2048);
        assert!(valid_page(512) && valid_page(4096) && !valid_page(8192) && !valid_page(256));
    }

    #[test]
    fn superblock_roundtrips_and_rejects_damage() {
        let b = encode_superblock(64 << 20, PAGE);
        assert_eq!(decode_superblock(&b), Ok((64 << 20, PAGE)));
        let k = encode_superblock(1 << 20, 1024);
        assert_eq!(decode_superblock(&k), Ok((1 << 20, 1024)));
        let mut odd = encode_superblock(1 << 20, 1024);
        odd[SB_PAGE_OFFSET] = 0x01; // 1025: not a power of two
        let crc = crate::crc32c::crc32c(&odd[..SB_CRC_OFFSET]);
        odd[SB_CRC_OFFSET..SB_LEN].copy_from_slice(&crc.to_le_bytes());
        assert_eq!(decode_superblock(&odd), Err("unsupported page size"));
        let mut d = b.clone();
        d[SB_RING_CAP_OFFSET] ^= 0x10;
        assert!(decode_superblock(&d).is_err());
        assert!(decode_superblock(&[0; PAGE as usize]).is_err());
    }
}
