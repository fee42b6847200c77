//! The bytes of a checkpoint file: every series' image, and the log position it covers.
//!
//! ```text
//! 0  magic "RINGCKP1"  8 version u32  12 flags u32  16 generation u64
//! 24 log_lsn u64 (replay the log from here)   32 log_seq u64 (seq of the record at log_lsn)
//! 40 payload_len u64   48 payload_crc u32   52 header_crc u32 over bytes 0..52
//! 56 payload (version 4):
//!    frames: per series  len u32, crc u32 (CRC32C of the body), body = id varint, name str,
//!            chunked image ([`crate::rrdbin::encode_head_chunked`])
//!    index:  pages of 4096 bytes: up to 255 entries (name hash u64, frame offset u64 from
//!            the payload's start) sorted by hash then offset, zeros, count u32 at 4088,
//!            CRC32C of bytes 0..4092 at 4092
//!    meta:   next_id, complete_lsn, series_count, frames_len, page_count (varints), each
//!            page's first hash (u64), segment_count and ids (varint deltas, ascending),
//!            table_count and chunk tables (len varint, then runs: count varint, segment
//!            varint; 0 = not stored)
//!    meta_len u32 (last 4 bytes); payload_crc is CRC32C of meta and meta_len
//! ```
//!
//! Version 4 is laid out so that a reader of one series (the CLI on its own) reads the
//! header, the meta at the payload's end, one or two index pages and that series' frame,
//! each checked by its own CRC, not the whole file; opening a whole store reads and checks
//! everything (every frame, every page, and that the index names exactly the frames). The
//! chunk tables name the segment of each stored chunk, so an open needs no segment's keys;
//! archives whose chunks were stored together (series created together) name one table.
//!
//! Version 3 (still read): `next_id varint, complete_lsn varint, series_count varint`, per
//! series `id varint, name str, image bytes` ([`crate::rrdbin::encode_head_chunked`], chunks
//! "in the segments" without saying which), then the segment list; `payload_crc` covers the
//! whole payload. Version 2 (still read): the same with every row in each image.
//!
//! Flags: bit 0 ([`CK_FLAG_RESEED_MARKED`]) says that the writer starts the first log record
//! after each checkpoint with a Reseed entry; every other bit is 0 (a header with one set is
//! refused).
//!
//! Two checkpoint files alternate; the valid one with the higher generation wins. Bytes past
//! `56 + payload_len` are leftovers of an older, longer checkpoint and mean nothing.
//!
//! A checkpoint may be *lagged*: it holds the state as of `log_lsn`, written later when the
//! log had reached `complete_lsn`, and archive rows that replaying the log from `log_lsn` to
//! `complete_lsn` rewrites are left out of it (stored as unknown). Such a checkpoint is only
//! complete once replay has reached `complete_lsn`; for a plain one the two are equal.

use crate::bytes::{ByteReader, ByteWriter, DecodeError, ReadAt, WindowReader};
use crate::crc32c::{crc32c, Crc32c};
use crate::rrdbin::{
    decode_rrd, decode_rrd_chunked, decode_rrd_chunked_with, decode_schema_bytes,
    encode_head_chunked, encode_ref_chunked, live_bytes, schema_bytes, ChunkEntry,
};
use rrd::rows::Keep;
use rrd::Rrd;
use std::collections::HashMap;
use std::sync::Arc;

pub const CK_MAGIC: [u8; 8] = *b"RINGCKP1";
pub const CK_VERSION: u32 = 6;
/// Version 5: no blobs section in the meta.
pub const CK_VERSION_V5: u32 = 5;
/// Version 4: frames hold their schema's bytes (no table of schemas in the meta).
pub const CK_VERSION_V4: u32 = 4;
/// The version before: one checksum over the payload, stored chunks found by their keys.
pub const CK_VERSION_V3: u32 = 3;
/// The older version still read: every archive row in each image.
pub const CK_VERSION_FULL_IMAGES: u32 = 2;
/// Header flag: the writer of this checkpoint (and of every later one) starts the first log
/// record after each checkpoint with a Reseed entry ([`crate::record`]), so replay from this
/// checkpoint through the records after a newer one that was lost decodes them with the
/// codecs their writer used. Checkpoints without it were written before the mark existed.
pub const CK_FLAG_RESEED_MARKED: u32 = 1;
/// Every flag this version knows; a header with another is refused.
pub const CK_KNOWN_FLAGS: u32 = CK_FLAG_RESEED_MARKED;
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
/// Bytes of an index page (version 4).
pub const CK_PAGE: usize = 4096;
/// Entries an index page holds.
pub const CK_PAGE_ENTRIES: usize = 255;
const PAGE_COUNT_AT: usize = CK_PAGE - 8;
const PAGE_CRC_AT: usize = CK_PAGE - 4;
const FRAME_HEAD: usize = 8;
/// Bytes of a blob's chunk: a blob is stored and read by chunks of this size (its last
/// chunk shorter).
pub const BLOB_CHUNK: usize = 16 << 10;
/// Chunks an archive can have (2^31 values, at least 256 a chunk).
const MAX_TABLE: u64 = 1 << 23;

/// The hash the index sorts names by: 64-bit FNV-1a of the name's UTF-8 bytes.
pub fn name_hash(name: &str) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for &b in name.as_bytes() {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    h
}

/// The header fields of a checkpoint.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CheckpointHeader {
    pub version: u32,
    /// [`CK_FLAG_RESEED_MARKED`] or nothing.
    pub flags: u32,
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
    /// The whole RRD; version 4: stored chunks name their segment (the shared chunk table);
    /// version 3: chunks "in the segments" are placeholders to find there
    /// ([`rrd::Rows::place`]).
    pub rrd: Rrd,
}

/// The state a checkpoint holds.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct CheckpointState {
    pub next_id: u64,
    /// Replay must reach this log position before the state is whole (see the module doc).
    pub complete_lsn: u64,
    /// Segment files the images draw on, ascending (versions 3 and 4).
    pub segments: Vec<u64>,
    pub series: Vec<SeriesImage>,
    /// Whether stored chunks name their segments (version 4); else they are to be found by
    /// their keys.
    pub tables: bool,
    /// Version 6: every blob (none before).
    pub blobs: Vec<BlobImage>,
}

/// One blob in a checkpoint (version 6): its length and where each of its chunks is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BlobImage {
    pub id: u64,
    pub name: String,
    pub len: u64,
    /// Per chunk of the blob's chunk size (`ceil(len / chunk size)` of them): the segment
    /// that stores it (key: the blob's id, archive [`BLOB_ARCHIVE`], the chunk's index), or
    /// 0 for a chunk of zeros.
    pub chunks: Vec<u32>,
}

/// The archive number a blob's chunks have in segment keys (no RRD has that many archives).
pub const BLOB_ARCHIVE: u32 = u32::MAX;

/// Most chunks a blob's table may name (16 GiB in 16 KiB chunks).
const MAX_BLOB_CHUNKS: u64 = 1 << 20;

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
    next_id: u64,
    complete_lsn: u64,
    count: usize,
    left: usize,
    version: u32,
    flags: u32,
    /// (name hash, frame offset) of each series written.
    index: Vec<(u64, u64)>,
    /// Bytes of the file already handed out by [`CheckpointWriter::take_written`]: `w`
    /// holds the file from this offset on.
    flushed: u64,
    /// Version 5: each distinct schema's bytes, by reference (`k`: entry `k - 1`), and the
    /// reference of each schema met, by its address (the series of a store share them).
    schemas: HashMap<Vec<u8>, u64, std::hash::BuildHasherDefault<rrd::fx::Fx>>,
    schema_at: HashMap<usize, u64, std::hash::BuildHasherDefault<rrd::fx::Fx>>,
    /// Each distinct chunk table and its reference (`k`: table `k - 1`).
    tables: HashMap<Vec<u32>, u64, std::hash::BuildHasherDefault<rrd::fx::Fx>>,
    scratch: Vec<u32>,
    refs: Vec<u64>,
    /// Version 6: the blobs section of the meta, and how many blobs it holds.
    blobs: ByteWriter,
    blob_count: u64,
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
        CheckpointWriter {
            w,
            img: ByteWriter::new(),
            generation,
            log_lsn,
            log_seq,
            next_id,
            complete_lsn,
            count,
            left: count,
            version: CK_VERSION,
            flags: CK_FLAG_RESEED_MARKED,
            index: Vec::with_capacity(count),
            flushed: 0,
            schemas: HashMap::default(),
            schema_at: HashMap::default(),
            tables: HashMap::default(),
            scratch: Vec::new(),
            refs: Vec::new(),
            blobs: ByteWriter::new(),
            blob_count: 0,
        }
    }

    /// Write version 5 instead (no blobs; for tests that stores made before version 6 still
    /// open). Call before adding any series.
    pub fn version_5(mut self) -> Self {
        debug_assert_eq!(self.left, self.count, "before any series");
        self.version = CK_VERSION_V5;
        self
    }

    /// Add a blob (version 6): its length and each chunk's segment (0: zeros), as
    /// [`BlobImage`] holds them.
    pub fn blob(&mut self, id: u64, name: &str, len: u64, chunks: &[u32]) {
        debug_assert!(self.version >= CK_VERSION, "blobs need version 6");
        self.blob_count += 1;
        let b = &mut self.blobs;
        b.varint(id);
        b.str(name);
        b.varint(len);
        put_runs(b, chunks);
    }

    /// Write version 3 instead (what stores made before version 4 hold; for tests that such
    /// stores still open). Call before adding any series.
    pub fn version_3(mut self) -> Self {
        debug_assert_eq!(self.left, self.count, "before any series");
        self.version = CK_VERSION_V3;
        self.flags = 0;
        self.w.varint(self.next_id);
        self.w.varint(self.complete_lsn);
        self.w.varint(self.count as u64);
        self
    }

    /// Write version 4 instead (each frame with its schema's bytes; for tests that stores
    /// made before version 5 still open). Call before adding any series.
    pub fn version_4(mut self) -> Self {
        debug_assert_eq!(self.left, self.count, "before any series");
        self.version = CK_VERSION_V4;
        self.flags = 0;
        self
    }

    /// Leave [`CK_FLAG_RESEED_MARKED`] out (what stores written before the mark hold; for
    /// tests that such stores still open, or are refused where replay cannot be trusted).
    pub fn without_reseed_mark(mut self) -> Self {
        self.flags = 0;
        self
    }

    /// The reference of `schema` in the table of schemas (version 5), added if new.
    fn schema_ref(&mut self, schema: &rrd::Schema) -> u64 {
        let addr = schema as *const rrd::Schema as usize;
        if let Some(&k) = self.schema_at.get(&addr) {
            return k;
        }
        let bytes = schema_bytes(schema);
        let next = self.schemas.len() as u64 + 1;
        let k = *self.schemas.entry(bytes).or_insert(next);
        self.schema_at.insert(addr, k);
        k
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
        let cur: Vec<u64> = rrd.rra.iter().map(|r| r.cur_row).collect();
        self.series_head_chunked(id, name, &rrd.schema, &live_bytes(rrd), &cur, chunks);
    }

    /// [`CheckpointWriter::series_chunked`] for a series kept as a snapshot keeps it: its
    /// schema, the bytes of its live state ([`crate::rrdbin::live_bytes`]) and its archives'
    /// `cur_row`.
    #[allow(clippy::too_many_arguments)]
    pub fn series_head_chunked(
        &mut self,
        id: u64,
        name: &str,
        schema: &rrd::Schema,
        live: &[u8],
        cur_rows: &[u64],
        chunks: &[Vec<ChunkEntry>],
    ) {
        debug_assert!(self.left > 0, "more series than announced");
        self.left = self.left.saturating_sub(1);
        self.img.buf.clear();
        if self.version == CK_VERSION_V3 {
            self.w.varint(id);
            self.w.str(name);
            encode_head_chunked(&mut self.img, schema, live, cur_rows, chunks, None);
            self.w.bytes(&self.img.buf);
            return;
        }
        let mut refs = std::mem::take(&mut self.refs);
        refs.clear();
        refs.extend(chunks.iter().map(|list| self.table_ref(list)));
        if self.version >= CK_VERSION_V5 {
            let k = self.schema_ref(schema);
            encode_ref_chunked(&mut self.img, k, live, cur_rows, chunks, &refs);
        } else {
            encode_head_chunked(&mut self.img, schema, live, cur_rows, chunks, Some(&refs));
        }
        self.refs = refs;
        let start = self.w.buf.len();
        self.index.push((
            name_hash(name),
            self.flushed + start as u64 - CK_HEADER_LEN as u64,
        ));
        self.w.raw(&[0; FRAME_HEAD]);
        self.w.varint(id);
        self.w.str(name);
        self.w.raw(&self.img.buf);
        let body = &self.w.buf[start + FRAME_HEAD..];
        let len = u32::try_from(body.len()).expect("a series image under 4 GiB");
        let crc = crc32c(body);
        self.w.buf[start..start + 4].copy_from_slice(&len.to_le_bytes());
        self.w.buf[start + 4..start + 8].copy_from_slice(&crc.to_le_bytes());
    }

    /// The chunk table of one archive's entries (0: none stored; `k`: table `k - 1`), each
    /// distinct table kept once.
    fn table_ref(&mut self, list: &[ChunkEntry]) -> u64 {
        self.scratch.clear();
        let mut any = false;
        for e in list {
            self.scratch.push(match e {
                ChunkEntry::Stored(seg) => {
                    any = true;
                    *seg
                }
                _ => 0,
            });
        }
        if !any {
            return 0;
        }
        if let Some(&k) = self.tables.get(self.scratch.as_slice()) {
            return k;
        }
        let k = self.tables.len() as u64 + 1;
        self.tables.insert(self.scratch.clone(), k);
        k
    }

    /// Once at least `min` bytes of frames are buffered: them, and the file offset they go
    /// at, so that a checkpoint is written as it is built rather than held whole in memory
    /// (300 MB for a million series). The header is all zeros until
    /// [`CheckpointWriter::finish_parts`] gives it. Versions 4 and 5 only (version 3's
    /// checksum covers its whole payload).
    pub fn take_written(&mut self, min: usize) -> Option<(u64, Vec<u8>)> {
        if self.version == CK_VERSION_V3 || self.w.buf.len() < min.max(1) {
            return None;
        }
        let at = self.flushed;
        let bytes = std::mem::take(&mut self.w.buf);
        self.flushed += bytes.len() as u64;
        self.w.buf.reserve(bytes.len());
        Some((at, bytes))
    }

    /// The file's bytes: header, then payload, naming the segments the images draw on
    /// (ascending). Only when nothing was taken by [`CheckpointWriter::take_written`].
    pub fn finish(self, segments: &[u64]) -> Vec<u8> {
        assert_eq!(self.flushed, 0, "part of the checkpoint was taken");
        let (_, mut b, header) = self.finish_parts(segments);
        b[..CK_HEADER_LEN].copy_from_slice(&header);
        b
    }

    /// The end of the file (what [`CheckpointWriter::take_written`] has not given yet,
    /// with the file offset it goes at) and the header, to be written at offset 0 last:
    /// the checkpoint is valid once it is there.
    pub fn finish_parts(mut self, segments: &[u64]) -> (u64, Vec<u8>, [u8; CK_HEADER_LEN]) {
        debug_assert_eq!(self.left, 0, "fewer series than announced");
        let put_segments = |w: &mut ByteWriter| {
            w.varint(segments.len() as u64);
            let mut prev = 0;
            for &id in segments {
                debug_assert!(id > prev, "segment ids ascending");
                w.varint(id.wrapping_sub(prev));
                prev = id;
            }
        };
        let payload_crc = if self.version == CK_VERSION_V3 {
            put_segments(&mut self.w);
            crc32c(&self.w.buf[CK_HEADER_LEN..])
        } else {
            let frames_len = self.flushed + self.w.buf.len() as u64 - CK_HEADER_LEN as u64;
            self.index.sort_unstable();
            let pages = self.index.chunks(CK_PAGE_ENTRIES);
            let page_count = pages.len();
            let mut page = vec![0u8; CK_PAGE];
            for list in pages {
                page.fill(0);
                for (i, (h, off)) in list.iter().enumerate() {
                    page[i * 16..i * 16 + 8].copy_from_slice(&h.to_le_bytes());
                    page[i * 16 + 8..i * 16 + 16].copy_from_slice(&off.to_le_bytes());
                }
                page[PAGE_COUNT_AT..PAGE_CRC_AT]
                    .copy_from_slice(&(list.len() as u32).to_le_bytes());
                let crc = crc32c(&page[..PAGE_CRC_AT]);
                page[PAGE_CRC_AT..].copy_from_slice(&crc.to_le_bytes());
                self.w.raw(&page);
            }
            let meta_at = self.w.buf.len();
            let m = &mut self.w;
            m.varint(self.next_id);
            m.varint(self.complete_lsn);
            m.varint(self.count as u64);
            m.varint(frames_len);
            m.varint(page_count as u64);
            for list in self.index.chunks(CK_PAGE_ENTRIES) {
                m.u64(list[0].0);
            }
            put_segments(m);
            let tables = in_ref_order(&self.tables);
            m.varint(tables.len() as u64);
            for t in tables {
                m.varint(t.len() as u64);
                put_runs(m, t);
            }
            if self.version >= CK_VERSION_V5 {
                let schemas = in_ref_order(&self.schemas);
                m.varint(schemas.len() as u64);
                for b in schemas {
                    m.bytes(b);
                }
            }
            if self.version >= CK_VERSION {
                m.varint(self.blob_count);
                m.raw(&self.blobs.buf);
            }
            let meta_len = (m.buf.len() - meta_at) as u32;
            m.u32(meta_len);
            crc32c(&m.buf[meta_at..])
        };
        let payload_len = self.flushed + self.w.buf.len() as u64 - CK_HEADER_LEN as u64;
        let mut b = [0u8; CK_HEADER_LEN];
        b[CK_MAGIC_OFFSET..CK_VERSION_OFFSET].copy_from_slice(&CK_MAGIC);
        b[CK_VERSION_OFFSET..CK_FLAGS_OFFSET].copy_from_slice(&self.version.to_le_bytes());
        b[CK_FLAGS_OFFSET..CK_GENERATION_OFFSET].copy_from_slice(&self.flags.to_le_bytes());
        b[CK_GENERATION_OFFSET..CK_LOG_LSN_OFFSET].copy_from_slice(&self.generation.to_le_bytes());
        b[CK_LOG_LSN_OFFSET..CK_LOG_SEQ_OFFSET].copy_from_slice(&self.log_lsn.to_le_bytes());
        b[CK_LOG_SEQ_OFFSET..CK_PAYLOAD_LEN_OFFSET].copy_from_slice(&self.log_seq.to_le_bytes());
        b[CK_PAYLOAD_LEN_OFFSET..CK_PAYLOAD_CRC_OFFSET].copy_from_slice(&payload_len.to_le_bytes());
        b[CK_PAYLOAD_CRC_OFFSET..CK_HEADER_CRC_OFFSET].copy_from_slice(&payload_crc.to_le_bytes());
        let hcrc = crc32c(&b[..CK_HEADER_CRC_OFFSET]);
        b[CK_HEADER_CRC_OFFSET..CK_HEADER_LEN].copy_from_slice(&hcrc.to_le_bytes());
        (self.flushed, self.w.buf, b)
    }
}

/// A table of segments as runs: (count, segment) pairs, each count at least 1.
fn put_runs(m: &mut ByteWriter, t: &[u32]) {
    let mut i = 0;
    while i < t.len() {
        let n = t[i..].iter().take_while(|&&s| s == t[i]).count();
        m.varint(n as u64);
        m.varint(u64::from(t[i]));
        i += n;
    }
}

/// A table of `len` segments read as runs ([`put_runs`]).
fn read_runs(r: &mut ByteReader<'_>, len: u64) -> Result<Vec<u32>, DecodeError> {
    let mut t = Vec::with_capacity(len.min(1 << 16) as usize);
    while (t.len() as u64) < len {
        let at = r.pos();
        let run = r.varint()?;
        let seg = r.varint()?;
        if run == 0 || run > len - t.len() as u64 {
            return Err(DecodeError::new(at, "bad chunk table run"));
        }
        let seg = u32::try_from(seg)
            .ok()
            .filter(|&s| s != u32::MAX)
            .ok_or_else(|| DecodeError::new(at, "segment id out of range"))?;
        t.resize(t.len() + run as usize, seg);
    }
    Ok(t)
}

/// The keys of a table of references (`k`: entry `k - 1`), in entry order.
fn in_ref_order<K, S>(refs: &HashMap<K, u64, S>) -> Vec<&K> {
    let mut all: Vec<(&K, u64)> = refs.iter().map(|(key, &k)| (key, k)).collect();
    all.sort_unstable_by_key(|&(_, k)| k);
    all.into_iter().map(|(key, _)| key).collect()
}

/// A checkpoint header's fields as they stand, without checking its checksum, version or
/// flags (`None` only without the magic or room for every field): what a damaged header
/// probably said, for recovery to weigh, never to trust as valid.
pub fn read_checkpoint_header_unchecked(b: &[u8]) -> Option<CheckpointHeader> {
    if b.len() < CK_HEADER_LEN || b[..CK_VERSION_OFFSET] != CK_MAGIC {
        return None;
    }
    let mut r = ByteReader::new(&b[CK_VERSION_OFFSET..CK_HEADER_LEN]);
    Some(CheckpointHeader {
        version: r.u32().ok()?,
        flags: r.u32().ok()?,
        generation: r.u64().ok()?,
        log_lsn: r.u64().ok()?,
        log_seq: r.u64().ok()?,
        payload_len: r.u64().ok()?,
        payload_crc: r.u32().ok()?,
    })
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
    if !(CK_VERSION_FULL_IMAGES..=CK_VERSION).contains(&version) {
        return Err(DecodeError::new(
            CK_VERSION_OFFSET,
            "unsupported checkpoint version",
        ));
    }
    if flags & !CK_KNOWN_FLAGS != 0 {
        return Err(DecodeError::new(
            CK_FLAGS_OFFSET,
            "unsupported checkpoint flags",
        ));
    }
    Ok(CheckpointHeader {
        version,
        flags,
        generation,
        log_lsn,
        log_seq,
        payload_len,
        payload_crc,
    })
}

/// Check the payload and decode it. `payload` is exactly `payload_len` bytes.
pub fn decode_checkpoint_payload(
    h: &CheckpointHeader,
    payload: &[u8],
) -> Result<CheckpointState, DecodeError> {
    decode_checkpoint_payload_of(h, payload, None)
}

/// [`decode_checkpoint_payload`] keeping only the series named in `only` (if given).
pub fn decode_checkpoint_payload_of(
    h: &CheckpointHeader,
    payload: &[u8],
    only: Option<&[String]>,
) -> Result<CheckpointState, DecodeError> {
    if payload.len() as u64 != h.payload_len {
        return Err(DecodeError::new(
            CK_HEADER_LEN,
            "checkpoint payload truncated",
        ));
    }
    let mut src = |off: u64, b: &mut [u8]| -> Result<usize, String> {
        let from = payload.get(off as usize..).unwrap_or_default();
        let n = b.len().min(from.len());
        b[..n].copy_from_slice(&from[..n]);
        Ok(n)
    };
    if h.version >= CK_VERSION_V4 {
        return decode_v4(h, &mut src, only);
    }
    if crc32c(payload) != h.payload_crc {
        return Err(checksum_mismatch());
    }
    let mut r = WindowReader::new(h.payload_len, 1 << 20, &mut src);
    decode_payload(h, &mut r, only)
}

/// [`decode_checkpoint_payload_of`] for a payload read by position (`read(off, buf)` fills
/// `buf` from byte `off` of the payload). Version 4 with `only`: the meta, the index pages
/// and the frames of those series, nothing else. Older versions: memory for one window and
/// the series kept, the checksum checked in a first pass over the whole payload.
pub fn decode_checkpoint_payload_read(
    h: &CheckpointHeader,
    read: &mut ReadAt<'_>,
    only: Option<&[String]>,
) -> Result<CheckpointState, DecodeError> {
    if h.version >= CK_VERSION_V4 {
        return decode_v4(h, read, only);
    }
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
        return Err(checksum_mismatch());
    }
    let mut r = WindowReader::new(h.payload_len, WINDOW, read);
    decode_payload(h, &mut r, only)
}

fn checksum_mismatch() -> DecodeError {
    DecodeError::new(CK_HEADER_LEN, "checkpoint payload checksum mismatch")
}

/// `len` bytes at payload offset `off`.
fn read_exact(read: &mut ReadAt<'_>, off: u64, len: usize) -> Result<Vec<u8>, DecodeError> {
    let at = CK_HEADER_LEN + off as usize;
    let mut b = vec![0u8; len];
    let mut got = 0;
    while got < len {
        match read(off + got as u64, &mut b[got..]).map_err(|e| DecodeError::new(at, e))? {
            0 => return Err(DecodeError::new(at, "checkpoint payload truncated")),
            n => got += n.min(len - got),
        }
    }
    Ok(b)
}

/// What a version 4 payload's meta says.
struct Meta {
    next_id: u64,
    complete_lsn: u64,
    count: u64,
    frames_len: u64,
    /// Each index page's first hash.
    dir: Vec<u64>,
    segments: Vec<u64>,
    tables: Vec<Arc<Vec<u32>>>,
    /// Version 5: the table of schemas the frames name (None: version 4).
    schemas: Option<Vec<Arc<rrd::Schema>>>,
    blobs: Vec<BlobImage>,
}

/// Read and check the meta at the end of a version 4 payload.
fn read_meta(h: &CheckpointHeader, read: &mut ReadAt<'_>) -> Result<Meta, DecodeError> {
    let total = h.payload_len;
    let at = |off: u64| CK_HEADER_LEN + off as usize;
    if total < 4 {
        return Err(DecodeError::new(at(0), "checkpoint payload truncated"));
    }
    // Usually one read brings the meta whole.
    let tail_len = total.min(64 << 10);
    let tail = read_exact(read, total - tail_len, tail_len as usize)?;
    let meta_len = u64::from(u32::from_le_bytes(
        tail[tail.len() - 4..].try_into().expect("4 bytes"),
    ));
    if meta_len + 4 > total {
        return Err(DecodeError::new(
            at(total - 4),
            "checkpoint meta longer than its payload",
        ));
    }
    let meta_at = total - 4 - meta_len;
    let meta = if meta_len + 4 <= tail_len {
        tail[(tail_len - 4 - meta_len) as usize..].to_vec()
    } else {
        read_exact(read, meta_at, meta_len as usize + 4)?
    };
    if crc32c(&meta) != h.payload_crc {
        return Err(checksum_mismatch());
    }
    let mut r = ByteReader::new(&meta[..meta.len() - 4]);
    let err = |r: &ByteReader, what: &str| DecodeError::new(at(meta_at) + r.pos(), what);
    let next_id = r.varint()?;
    let complete_lsn = r.varint()?;
    if complete_lsn < h.log_lsn {
        return Err(err(
            &r,
            "checkpoint completion point before its log position",
        ));
    }
    let count = r.varint()?;
    let frames_len = r.varint()?;
    let page_count = r.varint()?;
    if page_count != count.div_ceil(CK_PAGE_ENTRIES as u64)
        || count > frames_len / (FRAME_HEAD as u64 + 2)
    {
        return Err(err(&r, "checkpoint index does not fit its series count"));
    }
    page_count
        .checked_mul(CK_PAGE as u64)
        .and_then(|p| p.checked_add(frames_len))
        .filter(|&e| e == meta_at)
        .ok_or_else(|| err(&r, "checkpoint sections do not fit its payload"))?;
    let dir_bytes = r.take(page_count as usize * 8)?;
    let dir: Vec<u64> = dir_bytes
        .chunks_exact(8)
        .map(|b| u64::from_le_bytes(b.try_into().expect("8 bytes")))
        .collect();
    let n = r.len(r.remaining())?;
    let mut segments = Vec::with_capacity(n);
    let mut prev = 0u64;
    for _ in 0..n {
        let d = r.varint()?;
        if d == 0 {
            return Err(err(&r, "segment ids not ascending"));
        }
        prev = prev
            .checked_add(d)
            .ok_or_else(|| err(&r, "segment id overflow"))?;
        segments.push(prev);
    }
    let n = r.len(r.remaining())?;
    let mut tables = Vec::with_capacity(n);
    let shift = |e: DecodeError| DecodeError::new(at(meta_at) + e.offset, e.what);
    for _ in 0..n {
        let len = r.varint()?;
        if len == 0 || len > MAX_TABLE {
            return Err(err(&r, "bad chunk table length"));
        }
        tables.push(Arc::new(read_runs(&mut r, len).map_err(shift)?));
    }
    let schemas = if h.version >= CK_VERSION_V5 {
        let n = r.len(r.remaining())?;
        let mut all = Vec::with_capacity(n);
        for _ in 0..n {
            let at = r.pos();
            let s = decode_schema_bytes(r.bytes()?).map_err(|e| {
                DecodeError::new(CK_HEADER_LEN + meta_at as usize + at + e.offset, e.what)
            })?;
            all.push(rrd::schema::intern(&Arc::new(s)));
        }
        Some(all)
    } else {
        None
    };
    let mut blobs = Vec::new();
    if h.version >= CK_VERSION {
        let n = r.len(r.remaining())?;
        for _ in 0..n {
            let id = r.varint()?;
            let name = r.str()?;
            let len = r.varint()?;
            let count = len.div_ceil(BLOB_CHUNK as u64);
            // A lagged checkpoint holds blobs made after its `next_id` (crate::record).
            if count > MAX_BLOB_CHUNKS {
                return Err(err(&r, "bad blob in checkpoint"));
            }
            let chunks = read_runs(&mut r, count).map_err(shift)?;
            blobs.push(BlobImage {
                id,
                name,
                len,
                chunks,
            });
        }
    }
    r.finish()?;
    Ok(Meta {
        blobs,
        next_id,
        complete_lsn,
        count,
        frames_len,
        dir,
        segments,
        tables,
        schemas,
    })
}

/// Index page `p`, checked: its entries.
fn read_page(read: &mut ReadAt<'_>, m: &Meta, p: usize) -> Result<Vec<(u64, u64)>, DecodeError> {
    let off = m.frames_len + (p * CK_PAGE) as u64;
    page_entries(&read_exact(read, off, CK_PAGE)?, m, p)
}

/// The entries of index page `p` (its bytes `b`), checked.
fn page_entries(b: &[u8], m: &Meta, p: usize) -> Result<Vec<(u64, u64)>, DecodeError> {
    let at = CK_HEADER_LEN + m.frames_len as usize + p * CK_PAGE;
    let crc = u32::from_le_bytes(b[PAGE_CRC_AT..].try_into().expect("4 bytes"));
    if crc32c(&b[..PAGE_CRC_AT]) != crc {
        return Err(DecodeError::new(
            at,
            "checkpoint index page checksum mismatch",
        ));
    }
    let n = u32::from_le_bytes(b[PAGE_COUNT_AT..PAGE_CRC_AT].try_into().expect("4 bytes")) as usize;
    let want = (m.count as usize - p * CK_PAGE_ENTRIES).min(CK_PAGE_ENTRIES);
    if n != want {
        return Err(DecodeError::new(at, "checkpoint index page count mismatch"));
    }
    let e: Vec<(u64, u64)> = b[..n * 16]
        .chunks_exact(16)
        .map(|x| {
            (
                u64::from_le_bytes(x[..8].try_into().expect("8 bytes")),
                u64::from_le_bytes(x[8..].try_into().expect("8 bytes")),
            )
        })
        .collect();
    if e.first().map(|x| x.0) != m.dir.get(p).copied() || e.windows(2).any(|w| w[0] >= w[1]) {
        return Err(DecodeError::new(at, "checkpoint index page out of order"));
    }
    Ok(e)
}

/// One frame's body, checked against its CRC, decoded.
fn decode_frame(body: &[u8], crc: u32, at: usize, m: &Meta) -> Result<SeriesImage, DecodeError> {
    if crc32c(body) != crc {
        return Err(DecodeError::new(at, "checkpoint series checksum mismatch"));
    }
    let mut r = ByteReader::new(body);
    let local = |e: DecodeError| DecodeError::new(at + FRAME_HEAD + e.offset, e.what);
    let id = r.varint().map_err(local)?;
    let name = r.str().map_err(local)?;
    let rrd =
        decode_rrd_chunked_with(&mut r, Some(&m.tables), m.schemas.as_deref()).map_err(local)?;
    r.finish().map_err(local)?;
    Ok(SeriesImage { id, name, rrd })
}

/// The (len, crc) of a frame's head.
fn frame_head(b: &[u8]) -> (u64, u32) {
    (
        u64::from(u32::from_le_bytes(b[..4].try_into().expect("4 bytes"))),
        u32::from_le_bytes(b[4..8].try_into().expect("4 bytes")),
    )
}

/// A version 4 payload: all of it, checked whole, or (`only`) the named series alone.
fn decode_v4(
    h: &CheckpointHeader,
    read: &mut ReadAt<'_>,
    only: Option<&[String]>,
) -> Result<CheckpointState, DecodeError> {
    let m = read_meta(h, read)?;
    let mut series = Vec::new();
    if let Some(names) = only {
        for name in names {
            if series.iter().any(|s: &SeriesImage| &s.name == name) {
                continue;
            }
            if let Some(s) = find_series(read, &m, name)? {
                series.push(s);
            }
        }
    } else {
        // The index first (the frames' reader holds `read` to the end).
        let mut index = Vec::with_capacity(m.count as usize);
        let pages = read_exact(read, m.frames_len, m.dir.len() * CK_PAGE)?;
        for (p, b) in pages.chunks_exact(CK_PAGE).enumerate() {
            index.extend(page_entries(b, &m, p)?);
        }
        drop(pages);
        let mut seen = Vec::with_capacity(m.count as usize);
        series.reserve(m.count as usize);
        let mut r = WindowReader::new(m.frames_len, 1 << 20, read);
        for _ in 0..m.count {
            let off = r.pos();
            let (len, crc) = frame_head(r.take(FRAME_HEAD)?);
            if len > r.remaining() {
                return Err(r.err("checkpoint series frame past its section"));
            }
            let at = CK_HEADER_LEN + off as usize;
            let s = decode_frame(r.take(len as usize)?, crc, at, &m)?;
            seen.push((name_hash(&s.name), off));
            series.push(s);
        }
        r.finish()?;
        seen.sort_unstable();
        if seen != index {
            return Err(DecodeError::new(
                CK_HEADER_LEN + m.frames_len as usize,
                "checkpoint index does not name its series",
            ));
        }
    }
    Ok(CheckpointState {
        next_id: m.next_id,
        complete_lsn: m.complete_lsn,
        segments: m.segments,
        series,
        tables: true,
        blobs: m.blobs,
    })
}

/// The series named `name`, looked up in the index.
fn find_series(
    read: &mut ReadAt<'_>,
    m: &Meta,
    name: &str,
) -> Result<Option<SeriesImage>, DecodeError> {
    let hash = name_hash(name);
    // Entries of one hash may begin on the page before the first whose first hash is it.
    let mut p = m.dir.partition_point(|&d| d < hash).saturating_sub(1);
    while p < m.dir.len() && m.dir[p] <= hash {
        for (eh, off) in read_page(read, m, p)? {
            if eh < hash {
                continue;
            }
            if eh > hash {
                return Ok(None);
            }
            let at = CK_HEADER_LEN + off as usize;
            if off + FRAME_HEAD as u64 > m.frames_len {
                return Err(DecodeError::new(
                    at,
                    "checkpoint index entry past the frames",
                ));
            }
            // The head and (usually) the whole body in one read.
            let first = (m.frames_len - off).min(4096) as usize;
            let mut b = read_exact(read, off, first)?;
            let (len, crc) = frame_head(&b);
            let end = FRAME_HEAD as u64 + len;
            if off + end > m.frames_len {
                return Err(DecodeError::new(
                    at,
                    "checkpoint series frame past its section",
                ));
            }
            if end as usize > b.len() {
                let more = read_exact(read, off + b.len() as u64, end as usize - b.len())?;
                b.extend_from_slice(&more);
            }
            let s = decode_frame(&b[FRAME_HEAD..end as usize], crc, at, m)?;
            if s.name == name {
                return Ok(Some(s));
            }
        }
        p += 1;
    }
    Ok(None)
}

/// A version 2 or 3 payload's contents (its checksum checked by the caller).
fn decode_payload(
    h: &CheckpointHeader,
    r: &mut WindowReader<'_>,
    only: Option<&[String]>,
) -> Result<CheckpointState, DecodeError> {
    let keep = |n: &str| only.is_none_or(|names| names.iter().any(|x| x == n));
    let next_id = r.varint()?;
    let complete_lsn = r.varint()?;
    if complete_lsn < h.log_lsn {
        return Err(DecodeError::new(
            CK_HEADER_LEN,
            "checkpoint completion point before its log position",
        ));
    }
    let n = r.len(h.payload_len)?;
    let mut series = Vec::with_capacity(if only.is_some() { 1 } else { n });
    for _ in 0..n {
        let id = r.varint()?;
        let at = r.pos();
        let name = r.bytes()?;
        let name = std::str::from_utf8(name)
            .map_err(|_| DecodeError::new(at as usize, "string is not UTF-8"))?;
        if !keep(name) {
            let len = r.len(r.remaining())?;
            r.skip(len as u64)?;
            continue;
        }
        let name = name.to_string();
        let image = r.bytes()?;
        let mut ir = ByteReader::new(image);
        let rrd = if h.version >= CK_VERSION_V3 {
            decode_rrd_chunked(&mut ir, None)?
        } else {
            decode_rrd(&mut ir)?
        };
        ir.finish()?;
        series.push(SeriesImage { id, name, rrd });
    }
    let mut segments = Vec::new();
    if h.version >= CK_VERSION_V3 {
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
        tables: false,
        blobs: Vec::new(),
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
        for at in [3, 100, body.len() - 3] {
            let mut d = body.to_vec();
            d[at] ^= 1;
            assert!(
                decode_checkpoint_payload(&h, &d).is_err(),
                "payload byte {at}"
            );
        }
        assert!(decode_checkpoint_payload(&h, &body[..body.len() - 1]).is_err());
    }

    /// Entries of every kind, stored chunks in several segments: what a checkpoint wrote
    /// comes back, each stored chunk naming its segment.
    fn mixed_entries(rrd: &Rrd, salt: usize) -> Vec<Vec<ChunkEntry>> {
        let per = rrd::rows::chunk_rows_for(rrd.ds_cnt());
        rrd.schema
            .rra
            .iter()
            .enumerate()
            .map(|(a, d)| {
                (0..(d.row_cnt as usize).div_ceil(per))
                    .map(|c| match (a + c + salt) % 4 {
                        0 => ChunkEntry::Stored(3 + (c % 2) as u32),
                        1 => ChunkEntry::Fill(f64::NAN.to_bits()),
                        2 => ChunkEntry::Stored(11),
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
            .collect()
    }

    /// The entries `rrd`'s rows give back (stored chunks with their segment).
    fn entries_of(rrd: &Rrd) -> Vec<Vec<ChunkEntry>> {
        let per = rrd::rows::chunk_rows_for(rrd.ds_cnt());
        rrd.rra
            .iter()
            .map(|r| {
                (0..r.rows.chunk_count())
                    .map(|c| match r.rows.keep(c, rrd::rows::Fresh::NONE) {
                        Keep::Stored(seg) => ChunkEntry::Stored(seg as u32),
                        _ => match r.rows.packed_bytes(c) {
                            Some(b) => ChunkEntry::Inline(b),
                            None => ChunkEntry::Fill(r.rows.get(c * per * rrd.ds_cnt()).to_bits()),
                        },
                    })
                    .collect()
            })
            .collect()
    }

    #[test]
    fn chunk_entries_tables_and_segment_list_roundtrip() {
        let rrd = sample_rrd();
        let names: Vec<String> = (0..600).map(|i| format!("h{}/m{i}.rrd", i % 7)).collect();
        let mut w = CheckpointWriter::new(2, 100, 7, 9, 300, names.len());
        let lists: Vec<_> = (0..names.len())
            .map(|i| mixed_entries(&rrd, i % 3))
            .collect();
        for (i, n) in names.iter().enumerate() {
            w.series_chunked(i as u64 + 1, n, &rrd, &lists[i]);
        }
        let b = w.finish(&[3, 4, 11]);
        let h = decode_checkpoint_header(&b).unwrap();
        assert_eq!(h.version, CK_VERSION);
        let st = decode_checkpoint_payload(&h, &b[CK_HEADER_LEN..]).unwrap();
        assert_eq!(st.segments, vec![3, 4, 11]);
        assert_eq!((st.complete_lsn, st.next_id), (300, 9));
        assert_eq!(st.series.len(), names.len());
        for (i, s) in st.series.iter().enumerate() {
            assert_eq!((s.id, &s.name), (i as u64 + 1, &names[i]));
            assert_eq!(entries_of(&s.rrd), lists[i], "series {i}");
            assert_eq!(format!("{:?}", s.rrd.pdp), format!("{:?}", rrd.pdp));
            assert_eq!(s.rrd.rra[2].cur_row, rrd.rra[2].cur_row);
        }
        // Equal tables are one table, shared by the archives that name it.
        let (t0, _) = st.series[0].rrd.rra[0].rows.table();
        let (t3, _) = st.series[3].rrd.rra[0].rows.table();
        assert_eq!(t0, t3);
        // One series by name, from its index page and frame alone.
        let mut reads = Vec::new();
        let mut read = |off: u64, buf: &mut [u8]| -> Result<usize, String> {
            reads.push((off, buf.len()));
            let p = &b[CK_HEADER_LEN..];
            let from = p.get(off as usize..).unwrap_or_default();
            let n = buf.len().min(from.len());
            buf[..n].copy_from_slice(&from[..n]);
            Ok(n)
        };
        let want = vec![names[417].clone(), "not/there.rrd".to_string()];
        let one = decode_checkpoint_payload_read(&h, &mut read, Some(&want)).unwrap();
        assert_eq!(one.series.len(), 1);
        assert_eq!(one.series[0].name, names[417]);
        assert_eq!(entries_of(&one.series[0].rrd), lists[417]);
        let bytes: usize = reads.iter().map(|r| r.1).sum();
        assert!(
            bytes < b.len() / 4,
            "{bytes} bytes read of {} for one series",
            b.len()
        );
    }

    /// A checkpoint handed out as it is built (frames at their offsets, then the end, then
    /// the header) is the same file, byte for byte, as one built whole.
    #[test]
    fn a_checkpoint_written_as_built_is_the_same_file() {
        let rrd = sample_rrd();
        let n = 300;
        let build = |take: Option<usize>| {
            let mut w = CheckpointWriter::new(2, 100, 7, 9, 300, n);
            let mut file = vec![0xEEu8; 64]; // leftovers of an older file are overwritten
            let mut put = |at: u64, b: &[u8]| {
                let at = at as usize;
                if file.len() < at + b.len() {
                    file.resize(at + b.len(), 0xEE);
                }
                file[at..at + b.len()].copy_from_slice(b);
            };
            for i in 0..n {
                w.series_chunked(i as u64, &format!("s{i}"), &rrd, &mixed_entries(&rrd, i));
                if let Some((at, b)) = take.and_then(|m| w.take_written(m)) {
                    put(at, &b);
                }
            }
            let (at, tail, header) = w.finish_parts(&[3, 4, 11]);
            put(at, &tail);
            put(0, &header);
            file
        };
        let whole = build(None);
        let mut w = CheckpointWriter::new(2, 100, 7, 9, 300, n);
        for i in 0..n {
            w.series_chunked(i as u64, &format!("s{i}"), &rrd, &mixed_entries(&rrd, i));
        }
        assert_eq!(whole, w.finish(&[3, 4, 11]));
        for take in [1, 500, 4096] {
            assert_eq!(build(Some(take)), whole, "taken at {take} bytes");
        }
    }

    /// Version 5 keeps each distinct schema once, in the meta: its frames are smaller by
    /// the schema's bytes, the series decoded share one schema, and version 4 (the schema in
    /// every frame) still reads the same.
    #[test]
    fn version_5_keeps_each_schema_once() {
        let rrd = sample_rrd();
        let n = 200;
        let build = |w: CheckpointWriter| {
            let mut w = w;
            for i in 0..n {
                w.series_chunked(i as u64, &format!("s{i}"), &rrd, &mixed_entries(&rrd, i));
            }
            w.finish(&[3, 4, 11])
        };
        let v5 = build(CheckpointWriter::new(2, 100, 7, 9, 300, n));
        let v4 = build(CheckpointWriter::new(2, 100, 7, 9, 300, n).version_4());
        let schema_len = crate::rrdbin::schema_bytes(&rrd.schema).len();
        // Each frame names its schema in a byte; the meta holds it once, with its length
        // and the count.
        assert!(
            v5.len() + n * schema_len <= v4.len() + n + schema_len + 4,
            "{} against {} bytes ({schema_len} a schema)",
            v5.len(),
            v4.len()
        );
        let read = |b: &[u8]| {
            let h = decode_checkpoint_header(b).unwrap();
            (
                h.version,
                decode_checkpoint_payload(&h, &b[CK_HEADER_LEN..]).unwrap(),
            )
        };
        let ((ver5, st5), (ver4, st4)) = (read(&v5), read(&v4));
        assert_eq!((ver5, ver4), (CK_VERSION, CK_VERSION_V4));
        assert!(st5
            .series
            .windows(2)
            .all(|w| Arc::ptr_eq(&w[0].rrd.schema, &w[1].rrd.schema)));
        for (a, b) in st5.series.iter().zip(&st4.series) {
            assert_eq!((a.id, &a.name), (b.id, &b.name));
            assert_eq!(format!("{:?}", a.rrd), format!("{:?}", b.rrd));
        }
    }

    /// Damage anywhere in a version 4 payload fails a whole open; a reader of one series
    /// fails only where it reads.
    #[test]
    fn damage_in_frames_index_or_meta_is_caught() {
        let rrd = sample_rrd();
        let n = 300;
        let mut w = CheckpointWriter::new(2, 100, 7, 9, 300, n);
        for i in 0..n {
            w.series_chunked(i as u64, &format!("s{i}"), &rrd, &mixed_entries(&rrd, i));
        }
        let b = w.finish(&[3, 4, 11]);
        let h = decode_checkpoint_header(&b).unwrap();
        let body = &b[CK_HEADER_LEN..];
        let m = {
            let mut src = |off: u64, buf: &mut [u8]| -> Result<usize, String> {
                let from = body.get(off as usize..).unwrap_or_default();
                let k = buf.len().min(from.len());
                buf[..k].copy_from_slice(&from[..k]);
                Ok(k)
            };
            read_meta(&h, &mut src).unwrap()
        };
        let spots = [
            10,                                     // a frame
            m.frames_len as usize + 20,             // the first index page's entries
            m.frames_len as usize + CK_PAGE + 4090, // the second page's count and CRC
            body.len() - 10,                        // the meta
            body.len() - 2,                         // meta_len
        ];
        for at in spots {
            let mut d = body.to_vec();
            d[at] ^= 0x20;
            assert!(decode_checkpoint_payload(&h, &d).is_err(), "byte {at}");
        }
        // Frames that are not where the index says (two swapped entries' offsets).
        let mut d = body.to_vec();
        let p = m.frames_len as usize;
        let (a, c) = (p + 8, p + 24);
        let (x, y) = (d[a..a + 8].to_vec(), d[c..c + 8].to_vec());
        d[a..a + 8].copy_from_slice(&y);
        d[c..c + 8].copy_from_slice(&x);
        let crc = crc32c(&d[p..p + PAGE_CRC_AT]);
        d[p + PAGE_CRC_AT..p + CK_PAGE].copy_from_slice(&crc.to_le_bytes());
        assert!(
            decode_checkpoint_payload(&h, &d).is_err(),
            "index off its frames"
        );
        assert!(decode_checkpoint_payload(&h, &body[..body.len() - 1]).is_err());
    }

    /// Version 3 files (one checksum, stored chunks found by key) are still read.
    #[test]
    fn version_3_checkpoints_are_read() {
        let rrd = sample_rrd();
        let list = mixed_entries(&rrd, 1);
        let mut w = CheckpointWriter::new(2, 100, 7, 9, 300, 2).version_3();
        w.series_chunked(4, "a/b", &rrd, &list);
        w.series_chunked(5, "a/c", &rrd, &list);
        let b = w.finish(&[3, 4, 11]);
        let h = decode_checkpoint_header(&b).unwrap();
        assert_eq!(h.version, 3);
        let st = decode_checkpoint_payload(&h, &b[CK_HEADER_LEN..]).unwrap();
        assert!(!st.tables);
        assert_eq!(st.segments, vec![3, 4, 11]);
        let mut rows = st.series[1].rrd.rra[0].rows.clone();
        for (c, e) in list[0].iter().enumerate() {
            assert_eq!(
                matches!(e, ChunkEntry::Stored(_)),
                rows.place(c, 9),
                "chunk {c} is a placeholder exactly where stored"
            );
        }
        let only = vec!["a/c".to_string()];
        let st = decode_checkpoint_payload_of(&h, &b[CK_HEADER_LEN..], Some(&only)).unwrap();
        assert_eq!(st.series.len(), 1);
        assert_eq!(st.series[0].id, 5);
    }

    /// A series written from its head bytes and `cur_row`s (as a snapshot keeps it) is the
    /// same image byte for byte.
    #[test]
    fn a_head_and_cur_rows_write_the_same_image() {
        let rrd = sample_rrd();
        let chunks: Vec<Vec<ChunkEntry>> = rrd
            .rra
            .iter()
            .map(|r| vec![ChunkEntry::Stored(1); r.rows.chunk_count()])
            .collect();
        let mut a = CheckpointWriter::new(2, 100, 7, 9, 300, 1);
        a.series_chunked(4, "a/b", &rrd, &chunks);
        let mut b = CheckpointWriter::new(2, 100, 7, 9, 300, 1);
        let cur: Vec<u64> = rrd.rra.iter().map(|r| r.cur_row).collect();
        b.series_head_chunked(
            4,
            "a/b",
            &rrd.schema,
            &crate::rrdbin::live_bytes(&rrd),
            &cur,
            &chunks,
        );
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
