//! The bytes of a checkpoint file: every series' full image, and the log position it covers.
//!
//! ```text
//! 0  magic "RINGCKP1"  8 version u32  12 flags u32 (0)  16 generation u64
//! 24 log_lsn u64 (replay the log from here)   32 log_seq u64 (seq of the record at log_lsn)
//! 40 payload_len u64   48 payload_crc u32   52 header_crc u32 over bytes 0..52
//! 56 payload = next_id varint, complete_lsn varint, series_count varint,
//!              per series: id varint, name (varint len, UTF-8), image (varint len; version 3:
//!              chunked RRD image, version 2: RRD image),
//!              (version 3) segment_count varint, segment ids (varint deltas, ascending)
//! ```
//!
//! Version 3 stores archive rows by chunk ([`crate::rrdbin::encode_rrd_chunked`]): a chunk
//! sealed and stored in a segment file ([`crate::segment`]) costs nothing more here, so each
//! row is written about once. Version 2 (every row in the image) is still read.
//!
//! Two checkpoint files alternate; the valid one (both CRCs pass) with the higher generation
//! wins. Bytes past `56 + payload_len` are leftovers of an older, longer checkpoint and mean
//! nothing.
//!
//! A checkpoint may be *lagged*: it holds the state as of `log_lsn`, written later when the
//! log had reached `complete_lsn`, and archive rows that replaying the log from `log_lsn` to
//! `complete_lsn` rewrites are left out of it (stored as unknown). Such a checkpoint is only
//! complete once replay has reached `complete_lsn`; for a plain one the two are equal.

use crate::bytes::{ByteReader, ByteWriter, DecodeError, ReadAt, WindowReader};
use crate::crc32c::{crc32c, Crc32c};
use crate::rrdbin::{
    decode_rrd, decode_rrd_chunked, encode_head_chunked, encode_rrd_chunked, ChunkEntry,
};
use rrd::rows::Keep;
use rrd::Rrd;

pub const CK_MAGIC: [u8; 8] = *b"RINGCKP1";
pub const CK_VERSION: u32 = 3;
/// The older version still read: every archive row in each image.
pub const CK_VERSION_FULL_IMAGES: u32 = 2;
pub const CK_MAGIC_OFFSET: usize = 0;
pub const CK_VERSION_OFFSET: usize = CK_MAGIC_OFFSET + CK_MAGIC.len();
pub const CK_FLAGS_OFFSET: usize = CK_VERSION_OFFSET + size_of::<u32>();
pub const CK_GENERATION_OFFSET: usize = CK_FLAGS_OFFSET + size_of::<u32>();
pub const CK_LOG_LSN_OFFSET: usize = CK_GENERATION_OFFSET + size_of::<u64>();
pub const CK_LOG_SEQ_OFFSET: usize = CK_LOG_LSN_OFFSET + size_of::<u64>();
pub const CK_PAYLOAD_LEN_OFFSET: usize = CK_LOG_SEQ_OFFSET + size_of::<u64>();
pub const CK_PAYLOAD_CRC_OFFSET: usize = CK_PAYLOAD_LEN_OFFSET + size_of::<u64>();
pub const CK_HEADER_CRC_OFFSET: usize = CK_PAYLOAD_CRC_OFFSET + size_of::<u32>();
pub const CK_HEADER_LEN: usize = CK_HEADER_CRC_OFFSET + size_of::<u32>();

/// The header fields of a checkpoint.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CheckpointHeader {
    pub version: u32,
    pub generation: u64,
    pub log_lsn: u64,
    pub log_seq: u64,
    pub payload_len: u64,
    pub payload_crc: u32,
}

/// One series in a checkpoint.
#[derive(Debug, Clone, PartialEq)]
pub struct SeriesImage {
    pub id: u64,
    pub name: String,
    /// The whole RRD; version 3: chunks "in the segments" are placeholders to find there
    /// ([`rrd::Rows::place`]).
    pub rrd: Rrd,
}

/// The state a checkpoint holds.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct CheckpointState {
    pub next_id: u64,
    /// Replay must reach this log position before the state is whole (see the module doc).
    pub complete_lsn: u64,
    /// Segment files the images draw on, ascending (version 3).
    pub segments: Vec<u64>,
    pub series: Vec<SeriesImage>,
}

/// A whole checkpoint file's bytes, from borrowed series (a plain checkpoint: complete at
/// `log_lsn`).
pub fn encode_checkpoint<'a>(
    generation: u64,
    log_lsn: u64,
    log_seq: u64,
    next_id: u64,
    series: impl ExactSizeIterator<Item = (u64, &'a str, &'a Rrd)>,
) -> Vec<u8> {
    let mut w = CheckpointWriter::new(generation, log_lsn, log_seq, next_id, log_lsn, series.len());
    for (id, name, rrd) in series {
        w.series(id, name, rrd);
    }
    w.finish(&[])
}

/// Builds a checkpoint one series at a time, so a caller can make each image on the fly.
pub struct CheckpointWriter {
    w: ByteWriter,
    img: ByteWriter,
    generation: u64,
    log_lsn: u64,
    log_seq: u64,
    left: usize,
}

impl CheckpointWriter {
    /// Start a checkpoint of `count` series: state as of `log_lsn` (whose record has sequence
    /// number `log_seq`), whole once replay reaches `complete_lsn` (>= `log_lsn`).
    pub fn new(
        generation: u64,
        log_lsn: u64,
        log_seq: u64,
        next_id: u64,
        complete_lsn: u64,
        count: usize,
    ) -> Self {
        debug_assert!(complete_lsn >= log_lsn);
        let mut w = ByteWriter::new();
        w.raw(&[0; CK_HEADER_LEN]);
        w.varint(next_id);
        w.varint(complete_lsn);
        w.varint(count as u64);
        CheckpointWriter {
            w,
            img: ByteWriter::new(),
            generation,
            log_lsn,
            log_seq,
            left: count,
        }
    }

    /// Add one series with every archive row in the image (exactly `count` calls of this
    /// and [`CheckpointWriter::series_chunked`] in all).
    pub fn series(&mut self, id: u64, name: &str, rrd: &Rrd) {
        let chunks: Vec<Vec<ChunkEntry>> = rrd
            .rra
            .iter()
            .map(|a| {
                (0..a.rows.chunk_count())
                    .map(|c| match a.rows.keep(c, rrd::rows::Fresh::NONE) {
                        Keep::Fill(b) => ChunkEntry::Fill(b),
                        Keep::Packed(p) => ChunkEntry::Inline(p.bytes().to_vec()),
                        // Read from its segment (unreadable: unknown, as a read serves it).
                        Keep::Stored(_) => match a.rows.packed_bytes(c) {
                            Some(b) => ChunkEntry::Inline(b),
                            None => ChunkEntry::Fill(rrd::num::DNAN.to_bits()),
                        },
                        Keep::Values(v) => {
                            let mut b = Vec::new();
                            rrd::rows::encode_values(&v, &mut b);
                            ChunkEntry::Inline(b)
                        }
                    })
                    .collect()
            })
            .collect();
        self.series_chunked(id, name, rrd, &chunks);
    }

    /// Add one series: its head from `rrd`, its rows as `chunks` say (per archive, one
    /// entry per chunk).
    pub fn series_chunked(&mut self, id: u64, name: &str, rrd: &Rrd, chunks: &[Vec<ChunkEntry>]) {
        debug_assert!(self.left > 0, "more series than announced");
        self.left = self.left.saturating_sub(1);
        self.w.varint(id);
        self.w.str(name);
        self.img.buf.clear();
        encode_rrd_chunked(&mut self.img, rrd, chunks);
        self.w.bytes(&self.img.buf);
    }

    /// [`CheckpointWriter::series_chunked`] for a series kept as a snapshot keeps it: the
    /// bytes of its head ([`crate::rrdbin::head_bytes`]) and its archives' `cur_row`.
    pub fn series_head_chunked(
        &mut self,
        id: u64,
        name: &str,
        head: &[u8],
        cur_rows: &[u64],
        chunks: &[Vec<ChunkEntry>],
    ) {
        debug_assert!(self.left > 0, "more series than announced");
        self.left = self.left.saturating_sub(1);
        self.w.varint(id);
        self.w.str(name);
        self.img.buf.clear();
        encode_head_chunked(&mut self.img, head, cur_rows, chunks);
        self.w.bytes(&self.img.buf);
    }

    /// The file's bytes: header, then payload, naming the segments the images draw on
    /// (ascending).
    pub fn finish(mut self, segments: &[u64]) -> Vec<u8> {
        debug_assert_eq!(self.left, 0, "fewer series than announced");
        self.w.varint(segments.len() as u64);
        let mut prev = 0;
        for &id in segments {
            debug_assert!(id > prev, "segment ids ascending");
            self.w.varint(id.wrapping_sub(prev));
            prev = id;
        }
        let mut b = self.w.buf;
        let payload_len = (b.len() - CK_HEADER_LEN) as u64;
        let payload_crc = crc32c(&b[CK_HEADER_LEN..]);
        b[CK_MAGIC_OFFSET..CK_VERSION_OFFSET].copy_from_slice(&CK_MAGIC);
        b[CK_VERSION_OFFSET..CK_FLAGS_OFFSET].copy_from_slice(&CK_VERSION.to_le_bytes());
        b[CK_FLAGS_OFFSET..CK_GENERATION_OFFSET].copy_from_slice(&0u32.to_le_bytes());
        b[CK_GENERATION_OFFSET..CK_LOG_LSN_OFFSET].copy_from_slice(&self.generation.to_le_bytes());
        b[CK_LOG_LSN_OFFSET..CK_LOG_SEQ_OFFSET].copy_from_slice(&self.log_lsn.to_le_bytes());
        b[CK_LOG_SEQ_OFFSET..CK_PAYLOAD_LEN_OFFSET].copy_from_slice(&self.log_seq.to_le_bytes());
        b[CK_PAYLOAD_LEN_OFFSET..CK_PAYLOAD_CRC_OFFSET].copy_from_slice(&payload_len.to_le_bytes());
        b[CK_PAYLOAD_CRC_OFFSET..CK_HEADER_CRC_OFFSET].copy_from_slice(&payload_crc.to_le_bytes());
        let hcrc = crc32c(&b[..CK_HEADER_CRC_OFFSET]);
        b[CK_HEADER_CRC_OFFSET..CK_HEADER_LEN].copy_from_slice(&hcrc.to_le_bytes());
        b
    }
}

/// Parse and check a checkpoint header.
pub fn decode_checkpoint_header(b: &[u8]) -> Result<CheckpointHeader, DecodeError> {
    if b.len() < CK_HEADER_LEN {
        return Err(DecodeError::new(b.len(), "checkpoint header truncated"));
    }
    if b[..CK_VERSION_OFFSET] != CK_MAGIC {
        return Err(DecodeError::new(0, "not a ringlet checkpoint (bad magic)"));
    }
    let mut r = ByteReader::new(&b[CK_VERSION_OFFSET..CK_HEADER_LEN]);
    let version = r.u32()?;
    let flags = r.u32()?;
    let generation = r.u64()?;
    let log_lsn = r.u64()?;
    let log_seq = r.u64()?;
    let payload_len = r.u64()?;
    let payload_crc = r.u32()?;
    let header_crc = r.u32()?;
    if crc32c(&b[..CK_HEADER_CRC_OFFSET]) != header_crc {
        return Err(DecodeError::new(
            CK_HEADER_CRC_OFFSET,
            "checkpoint header checksum mismatch",
        ));
    }
    if !(version == CK_VERSION || version == CK_VERSION_FULL_IMAGES) || flags != 0 {
        return Err(DecodeError::new(
            CK_VERSION_OFFSET,
            "unsupported checkpoint version",
        ));
    }
    Ok(CheckpointHeader {
        version,
        generation,
        log_lsn,
        log_seq,
        payload_len,
        payload_crc,
    })
}

/// Check the payload's CRC and decode it. `payload` is exactly `payload_len` bytes.
pub fn decode_checkpoint_payload(
    h: &CheckpointHeader,
    payload: &[u8],
) -> Result<CheckpointState, DecodeError> {
    decode_checkpoint_payload_of(h, payload, None)
}

/// [`decode_checkpoint_payload`] keeping only the series whose names `keep` accepts (the
/// others are checked by the payload's checksum, then skipped without decoding).
pub fn decode_checkpoint_payload_of(
    h: &CheckpointHeader,
    payload: &[u8],
    keep: Option<&dyn Fn(&str) -> bool>,
) -> Result<CheckpointState, DecodeError> {
    if payload.len() as u64 != h.payload_len {
        return Err(DecodeError::new(
            CK_HEADER_LEN,
            "checkpoint payload truncated",
        ));
    }
    if crc32c(payload) != h.payload_crc {
        return Err(DecodeError::new(
            CK_HEADER_LEN,
            "checkpoint payload checksum mismatch",
        ));
    }
    let mut src = |off: u64, b: &mut [u8]| -> Result<usize, String> {
        let from = payload.get(off as usize..).unwrap_or_default();
        let n = b.len().min(from.len());
        b[..n].copy_from_slice(&from[..n]);
        Ok(n)
    };
    let mut r = WindowReader::new(h.payload_len, 1 << 20, &mut src);
    decode_payload(h, &mut r, keep)
}

/// [`decode_checkpoint_payload_of`] for a payload read a window at a time (`read(off, buf)`
/// fills `buf` from byte `off` of the payload): memory for one window and the series kept,
/// not the whole payload. The checksum is checked in a first pass, before anything is
/// decoded.
pub fn decode_checkpoint_payload_read(
    h: &CheckpointHeader,
    read: &mut ReadAt<'_>,
    keep: Option<&dyn Fn(&str) -> bool>,
) -> Result<CheckpointState, DecodeError> {
    const WINDOW: usize = 1 << 20;
    let truncated = || DecodeError::new(CK_HEADER_LEN, "checkpoint payload truncated");
    let mut crc = Crc32c::new();
    let mut buf = vec![0u8; WINDOW];
    let mut off = 0u64;
    while off < h.payload_len {
        let want = (h.payload_len - off).min(WINDOW as u64) as usize;
        let got = read(off, &mut buf[..want]).map_err(|e| DecodeError::new(CK_HEADER_LEN, e))?;
        if got == 0 {
            return Err(truncated());
        }
        crc.update(&buf[..got.min(want)]);
        off += got.min(want) as u64;
    }
    drop(buf);
    if crc.finish() != h.payload_crc {
        return Err(DecodeError::new(
            CK_HEADER_LEN,
            "checkpoint payload checksum mismatch",
        ));
    }
    let mut r = WindowReader::new(h.payload_len, WINDOW, read);
    decode_payload(h, &mut r, keep)
}

/// The payload's contents (its checksum checked by the caller).
fn decode_payload(
    h: &CheckpointHeader,
    r: &mut WindowReader<'_>,
    keep: Option<&dyn Fn(&str) -> bool>,
) -> Result<CheckpointState, DecodeError> {
    let next_id = r.varint()?;
    let complete_lsn = r.varint()?;
    if complete_lsn < h.log_lsn {
        return Err(DecodeError::new(
            CK_HEADER_LEN,
            "checkpoint completion point before its log position",
        ));
    }
    let n = r.len(h.payload_len)?;
    let mut series = Vec::with_capacity(if keep.is_some() { 1 } else { n });
    for _ in 0..n {
        let id = r.varint()?;
        let at = r.pos();
        let name = r.bytes()?;
        let name = std::str::from_utf8(name)
            .map_err(|_| DecodeError::new(at as usize, "string is not UTF-8"))?;
        if keep.is_some_and(|k| !k(name)) {
            let len = r.len(r.remaining())?;
            r.skip(len as u64)?;
            continue;
        }
        let name = name.to_string();
        let image = r.bytes()?;
        let mut ir = ByteReader::new(image);
        let rrd = if h.version >= CK_VERSION {
            decode_rrd_chunked(&mut ir)?
        } else {
            decode_rrd(&mut ir)?
        };
        ir.finish()?;
        series.push(SeriesImage { id, name, rrd });
    }
    let mut segments = Vec::new();
    if h.version >= CK_VERSION {
        let n = r.len(h.payload_len)?;
        let mut prev = 0u64;
        for _ in 0..n {
            let d = r.varint()?;
            if d == 0 {
                return Err(r.err("segment ids not ascending"));
            }
            prev = prev
                .checked_add(d)
                .ok_or_else(|| r.err("segment id overflow"))?;
            segments.push(prev);
        }
    }
    r.finish()?;
    Ok(CheckpointState {
        next_id,
        complete_lsn,
        segments,
        series,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rrdbin::tests::sample_rrd;

    #[test]
    fn header_layout_is_pinned() {
        assert_eq!(CK_HEADER_LEN, 56);
        assert_eq!(CK_HEADER_CRC_OFFSET, 52);
    }

    #[test]
    fn checkpoint_roundtrips_and_damage_is_caught() {
        let rrd = sample_rrd();
        let list = [(3u64, "x", &rrd), (5, "y/z", &rrd)];
        let b = encode_checkpoint(9, 8192, 4, 6, list.iter().map(|&(i, n, r)| (i, n, r)));
        let h = decode_checkpoint_header(&b).unwrap();
        assert_eq!((h.generation, h.log_lsn, h.log_seq), (9, 8192, 4));
        let body = &b[CK_HEADER_LEN..];
        let st = decode_checkpoint_payload(&h, body).unwrap();
        assert_eq!((st.next_id, st.complete_lsn), (6, 8192));
        assert_eq!(st.series.len(), 2);
        assert_eq!(st.series[1].name, "y/z");
        for at in [0, 20, 40, 53] {
            let mut d = b.clone();
            d[at] ^= 4;
            assert!(decode_checkpoint_header(&d).is_err(), "header byte {at}");
        }
        let mut d = body.to_vec();
        d[100] ^= 1;
        assert!(decode_checkpoint_payload(&h, &d).is_err());
        assert!(decode_checkpoint_payload(&h, &body[..body.len() - 1]).is_err());
    }

    #[test]
    fn chunk_entries_and_segment_list_roundtrip() {
        let rrd = sample_rrd();
        let per = rrd::rows::chunk_rows_for(rrd.ds_cnt());
        let chunks: Vec<Vec<ChunkEntry>> = rrd
            .schema
            .rra
            .iter()
            .enumerate()
            .map(|(a, d)| {
                (0..(d.row_cnt as usize).div_ceil(per))
                    .map(|c| match (a + c) % 3 {
                        0 => ChunkEntry::Segments,
                        1 => ChunkEntry::Fill(f64::NAN.to_bits()),
                        _ => {
                            let mut b = Vec::new();
                            let n = per.min(d.row_cnt as usize - c * per) * rrd.ds_cnt();
                            let vals: Vec<f64> = (0..n).map(|i| (i + c) as f64 * 1.5).collect();
                            rrd::rows::encode_values(&vals, &mut b);
                            ChunkEntry::Inline(b)
                        }
                    })
                    .collect()
            })
            .collect();
        let mut w = CheckpointWriter::new(2, 100, 7, 9, 300, 1);
        w.series_chunked(4, "a/b", &rrd, &chunks);
        let b = w.finish(&[3, 10, 11]);
        let h = decode_checkpoint_header(&b).unwrap();
        assert_eq!(h.version, CK_VERSION);
        let st = decode_checkpoint_payload(&h, &b[CK_HEADER_LEN..]).unwrap();
        assert_eq!(st.segments, vec![3, 10, 11]);
        assert_eq!(st.complete_lsn, 300);
        let back = &st.series[0].rrd;
        for (a, list) in chunks.iter().enumerate() {
            let mut rows = back.rra[a].rows.clone();
            for (c, e) in list.iter().enumerate() {
                let got = match rows.packed_bytes(c) {
                    Some(b) => ChunkEntry::Inline(b),
                    None if rows.place(c, 1) => ChunkEntry::Segments,
                    None => ChunkEntry::Fill(rows.get(c * per * rrd.ds_cnt()).to_bits()),
                };
                assert_eq!(&got, e, "archive {a} chunk {c}");
            }
        }
        assert_eq!(
            format!("{:?}", st.series[0].rrd.pdp),
            format!("{:?}", rrd.pdp)
        );
        assert_eq!(st.series[0].rrd.rra[2].cur_row, rrd.rra[2].cur_row);
    }

    /// A series written from its head bytes and `cur_row`s (as a snapshot keeps it) is the
    /// same image byte for byte.
    #[test]
    fn a_head_and_cur_rows_write_the_same_image() {
        let rrd = sample_rrd();
        let chunks: Vec<Vec<ChunkEntry>> = rrd
            .rra
            .iter()
            .map(|r| vec![ChunkEntry::Segments; r.rows.chunk_count()])
            .collect();
        let mut a = CheckpointWriter::new(2, 100, 7, 9, 300, 1);
        a.series_chunked(4, "a/b", &rrd, &chunks);
        let mut b = CheckpointWriter::new(2, 100, 7, 9, 300, 1);
        let cur: Vec<u64> = rrd.rra.iter().map(|r| r.cur_row).collect();
        b.series_head_chunked(4, "a/b", &crate::rrdbin::head_bytes(&rrd), &cur, &chunks);
        assert_eq!(a.finish(&[1]), b.finish(&[1]));
    }

    /// Version 2 files (every row in the image, no segment list) are still read.
    #[test]
    fn version_2_checkpoints_are_read() {
        let rrd = sample_rrd();
        let mut p = ByteWriter::new();
        p.varint(6);
        p.varint(8192);
        p.varint(1);
        p.varint(3);
        p.str("x");
        let mut img = ByteWriter::new();
        crate::rrdbin::encode_rrd(&mut img, &rrd);
        p.bytes(&img.buf);
        let mut b = encode_checkpoint(9, 8192, 4, 6, std::iter::empty());
        b.truncate(CK_HEADER_LEN);
        b[CK_VERSION_OFFSET..CK_FLAGS_OFFSET].copy_from_slice(&2u32.to_le_bytes());
        b[CK_PAYLOAD_LEN_OFFSET..CK_PAYLOAD_CRC_OFFSET]
            .copy_from_slice(&(p.buf.len() as u64).to_le_bytes());
        b[CK_PAYLOAD_CRC_OFFSET..CK_HEADER_CRC_OFFSET]
            .copy_from_slice(&crc32c(&p.buf).to_le_bytes());
        let hcrc = crc32c(&b[..CK_HEADER_CRC_OFFSET]);
        b[CK_HEADER_CRC_OFFSET..CK_HEADER_LEN].copy_from_slice(&hcrc.to_le_bytes());
        b.extend_from_slice(&p.buf);
        let h = decode_checkpoint_header(&b).unwrap();
        assert_eq!(h.version, 2);
        let st = decode_checkpoint_payload(&h, &b[CK_HEADER_LEN..]).unwrap();
        assert!(st.segments.is_empty());
        assert_eq!(
            crate::rrdbin::rrd_bytes(&st.series[0].rrd),
            crate::rrdbin::rrd_bytes(&rrd)
        );
    }
}
