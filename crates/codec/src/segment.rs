//! The bytes of a segment file: sealed archive chunks, each stored once.
//!
//! Version 2 (written now) has an index, so that a store opens without reading the chunks
//! and a read checks only the chunk it needs:
//!
//! ```text
//! 0  magic "RINGSEG1"  8 version u32 (2)  12 class u32  16 id u64
//! 24 count u64         32 keys_crc u32    36 header_crc u32 over bytes 0..36
//! 40 keys: count x (series u64, archive u32, chunk u32), strictly ascending
//! 40 + 16 count  locs: count x (offset u64 from the file's start, len u32, crc u32)
//! then the chunks' packed values (rrd::rows block encoding), in key order
//! ```
//!
//! `keys_crc` is CRC32C of the keys; a loc's `crc` is CRC32C of its key (16 bytes as in
//! the keys), its ordinal (u32), offset and length, then the chunk's bytes, so a damaged key,
//! loc or chunk is caught when that chunk is read ([`SegView::chunk`]) even by a reader that
//! did not check every key (one that opens a single series).
//!
//! Chunks of one series with the same chunk index and the same bytes are written once, their
//! locs pointing at the same bytes: an RRD's archives of one step a row (AVERAGE, MIN, MAX and
//! LAST of Munin's, Cacti's and LibreNMS's templates) hold the same values, and so do their
//! open chunks' pieces. Readers take each loc as it is (a chunk is found by its loc alone).
//!
//! Version 1 (still read):
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

use crate::bytes::{ByteReader, DecodeError};
use crate::crc32c::{crc32c, Crc32c};

pub const SEG_MAGIC: [u8; 8] = *b"RINGSEG1";
/// The version written.
pub const SEG_VERSION: u32 = 2;
pub const SEG_HEADER_LEN: usize = 40;
const SEG_HEADER_CRC_OFFSET: usize = 36;
/// Bytes of one key, and of one loc, in a version 2 index.
pub const KEY_LEN: usize = 16;
pub const LOC_LEN: usize = 16;

/// One chunk in a segment, borrowed from the file's bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SegChunk<'a> {
    pub series: u64,
    pub archive: u32,
    pub chunk: u32,
    pub bytes: &'a [u8],
}

/// A chunk's key: (series id, archive, chunk index).
pub type SegKey = (u64, u32, u32);

/// Builds a segment one chunk at a time.
pub struct SegmentWriter {
    id: u64,
    class: u32,
    keys: Vec<SegKey>,
    /// Each chunk's (start, end) in `data`, in the order added (shared by equal chunks of a
    /// series: [`Shared`]).
    spans: Vec<(usize, usize)>,
    data: Vec<u8>,
    /// Whether the keys came in ascending order (a store adds them so): only then are the
    /// chunks laid out as added, and equal ones written once.
    ascending: bool,
    shared: Shared<(usize, usize)>,
}

/// The chunks added for the series being added, by chunk index: where their bytes are, to
/// find one with the same index and bytes (the archives of one step a row of an RRD).
struct Shared<T> {
    series: Option<u64>,
    by_chunk: Vec<(u32, T)>,
}

impl<T: Copy> Shared<T> {
    fn new() -> Self {
        Shared {
            series: None,
            by_chunk: Vec::new(),
        }
    }

    /// Where chunk `chunk` of `series` with these bytes already is (`same` compares a
    /// candidate's bytes with them).
    fn find(&mut self, series: u64, chunk: u32, same: impl Fn(T) -> bool) -> Option<T> {
        if self.series != Some(series) {
            self.series = Some(series);
            self.by_chunk.clear();
        }
        self.by_chunk
            .iter()
            .filter(|(c, _)| *c == chunk)
            .map(|&(_, at)| at)
            .find(|&at| same(at))
    }

    fn add(&mut self, chunk: u32, at: T) {
        // A series adds a few chunks a segment (a checkpoint after a long import, a few
        // hundred): the list is searched whole.
        if self.by_chunk.len() < 4096 {
            self.by_chunk.push((chunk, at));
        }
    }
}

impl SegmentWriter {
    pub fn new(id: u64, class: u32) -> Self {
        SegmentWriter {
            id,
            class,
            keys: Vec::new(),
            spans: Vec::new(),
            data: Vec::new(),
            ascending: true,
            shared: Shared::new(),
        }
    }

    pub fn id(&self) -> u64 {
        self.id
    }

    /// Add one chunk's packed values; returns its position among the chunks added. Keys are
    /// distinct (a checkpoint stores a chunk once).
    pub fn chunk(&mut self, series: u64, archive: u32, chunk: u32, bytes: &[u8]) -> usize {
        let key = (series, archive, chunk);
        self.ascending &= self.keys.last().is_none_or(|&k| k < key);
        let data = &self.data;
        let same = self
            .shared
            .find(series, chunk, |(s, e)| data[s..e] == *bytes)
            .filter(|_| self.ascending);
        let span = same.unwrap_or_else(|| {
            let start = self.data.len();
            self.data.extend_from_slice(bytes);
            let span = (start, self.data.len());
            self.shared.add(chunk, span);
            span
        });
        self.keys.push(key);
        self.spans.push(span);
        self.keys.len() - 1
    }

    /// The file's bytes, and the ordinal in the file of each chunk, in the order added.
    pub fn finish(self) -> (Vec<u8>, Vec<u32>) {
        let mut b = Vec::with_capacity(self.file_len() as usize);
        let ords = self
            .finish_to(&mut |piece: &[u8]| {
                b.extend_from_slice(piece);
                Ok(())
            })
            .expect("a Vec takes every byte");
        (b, ords)
    }

    /// The file's length.
    pub fn file_len(&self) -> u64 {
        let data = if self.ascending {
            self.data.len()
        } else {
            self.spans.iter().map(|(s, e)| e - s).sum()
        };
        (SEG_HEADER_LEN + self.keys.len() * (KEY_LEN + LOC_LEN) + data) as u64
    }

    /// [`SegmentWriter::finish`], the file's bytes given to `out` in order, piece by piece:
    /// the header and index, then the chunks (in one piece when they were added in key
    /// order, as a store adds them), so the file is never built whole in memory beside them
    /// (a checkpoint or a spill's segments are up to hundreds of MB).
    pub fn finish_to(
        self,
        out: &mut dyn FnMut(&[u8]) -> std::io::Result<()>,
    ) -> std::io::Result<Vec<u32>> {
        let n = self.keys.len();
        let mut order: Vec<usize> = (0..n).collect();
        order.sort_unstable_by_key(|&i| self.keys[i]);
        let mut ords = vec![0u32; n];
        for (ord, &i) in order.iter().enumerate() {
            ords[i] = ord as u32;
        }
        // Added in key order, the chunks are laid out as added (equal ones once); else in key
        // order, each where the one before ends.
        let base = (SEG_HEADER_LEN + n * (KEY_LEN + LOC_LEN)) as u64;
        let mut off = base;
        let mut locs = Vec::with_capacity(n);
        for (ord, &i) in order.iter().enumerate() {
            let (s, e) = self.spans[i];
            let len = (e - s) as u32;
            let at = if self.ascending { base + s as u64 } else { off };
            let crc = loc_crc(self.keys[i], ord as u32, at, len, &self.data[s..e]);
            locs.push(Loc { off: at, len, crc });
            off += u64::from(len);
        }
        let b = head_and_index(
            self.id,
            self.class,
            order.iter().map(|&i| self.keys[i]),
            &locs,
        );
        drop(locs);
        out(&b)?;
        drop(b);
        if self.ascending {
            out(&self.data)?;
        } else {
            let mut buf = Vec::with_capacity(1 << 20);
            for &i in &order {
                let (s, e) = self.spans[i];
                if buf.len() + (e - s) > buf.capacity() && !buf.is_empty() {
                    out(&buf)?;
                    buf.clear();
                }
                buf.extend_from_slice(&self.data[s..e]);
            }
            if !buf.is_empty() {
                out(&buf)?;
            }
        }
        Ok(ords)
    }
}

/// A version 2 segment's header and index: `keys` (ascending) and their `locs`, as many.
fn head_and_index(
    id: u64,
    class: u32,
    keys: impl Iterator<Item = SegKey>,
    locs: &[Loc],
) -> Vec<u8> {
    let n = locs.len();
    let mut b = Vec::with_capacity(SEG_HEADER_LEN + n * (KEY_LEN + LOC_LEN));
    b.extend_from_slice(&SEG_MAGIC);
    b.extend_from_slice(&SEG_VERSION.to_le_bytes());
    b.extend_from_slice(&class.to_le_bytes());
    b.extend_from_slice(&id.to_le_bytes());
    b.extend_from_slice(&(n as u64).to_le_bytes());
    b.extend_from_slice(&[0; 8]); // keys_crc and header_crc, below
    for (s, a, c) in keys {
        b.extend_from_slice(&s.to_le_bytes());
        b.extend_from_slice(&a.to_le_bytes());
        b.extend_from_slice(&c.to_le_bytes());
    }
    let keys_crc = crc32c(&b[SEG_HEADER_LEN..]);
    b[32..36].copy_from_slice(&keys_crc.to_le_bytes());
    let hcrc = crc32c(&b[..SEG_HEADER_CRC_OFFSET]);
    b[36..40].copy_from_slice(&hcrc.to_le_bytes());
    for l in locs {
        b.extend_from_slice(&l.off.to_le_bytes());
        b.extend_from_slice(&l.len.to_le_bytes());
        b.extend_from_slice(&l.crc.to_le_bytes());
    }
    b
}

/// A segment written as its chunks come, for a writer that adds them in ascending key
/// order and knows how many it may add at most (`max`): each chunk's place in the file is
/// known when it is added, so its bytes go to the file at once ([`SegmentSpool::chunk`]),
/// and only the keys and locs (32 bytes a chunk) are held until the header and index are
/// written at the start ([`SegmentSpool::index`]). The chunks start after room for `max`
/// index entries; room left unused is never written (a hole that reads as zeros and that
/// no loc points into). A checkpoint stores its open chunks' versions this way: a million
/// series hold hundreds of MB of them, which must not be on the heap twice.
pub struct SegmentSpool {
    id: u64,
    class: u32,
    max: usize,
    keys: Vec<SegKey>,
    locs: Vec<Loc>,
    next: u64,
    /// The bytes of the chunks added for the series being added (`recent`), to write equal
    /// ones once: (start, end) in `recent` and the loc they are at.
    shared: Shared<(usize, usize, usize)>,
    recent: Vec<u8>,
}

impl SegmentSpool {
    pub fn new(id: u64, class: u32, max: usize) -> Self {
        SegmentSpool {
            id,
            class,
            max,
            keys: Vec::new(),
            locs: Vec::new(),
            next: (SEG_HEADER_LEN + max * (KEY_LEN + LOC_LEN)) as u64,
            shared: Shared::new(),
            recent: Vec::new(),
        }
    }

    pub fn id(&self) -> u64 {
        self.id
    }

    /// Chunks added.
    pub fn len(&self) -> usize {
        self.keys.len()
    }

    pub fn is_empty(&self) -> bool {
        self.keys.is_empty()
    }

    /// Add one chunk's packed values: the offset in the file to write `bytes` at, or `None`
    /// (nothing added) when its key is not above every key before or `max` were added; with
    /// `false` when a chunk of the same series and index with the same bytes is already
    /// there (nothing to write: the two locs share them).
    pub fn chunk(&mut self, key: SegKey, bytes: &[u8]) -> Option<(u64, bool)> {
        if self.keys.len() >= self.max || self.keys.last().is_some_and(|&k| k >= key) {
            return None;
        }
        let len = u32::try_from(bytes.len()).ok()?;
        let (series, _, chunk) = key;
        if self.shared.series != Some(series) {
            self.recent.clear();
        }
        let recent = &self.recent;
        let same = self
            .shared
            .find(series, chunk, |(s, e, _)| recent[s..e] == *bytes);
        let ord = self.keys.len() as u32;
        let (off, new) = match same {
            Some((_, _, loc)) => (self.locs[loc].off, false),
            None => {
                // The bytes kept for comparison while the series lasts (1 MiB at most).
                if self.recent.len() + bytes.len() <= 1 << 20 {
                    let start = self.recent.len();
                    self.recent.extend_from_slice(bytes);
                    self.shared
                        .add(chunk, (start, self.recent.len(), self.locs.len()));
                }
                let off = self.next;
                self.next += u64::from(len);
                (off, true)
            }
        };
        self.locs.push(Loc {
            off,
            len,
            crc: loc_crc(key, ord, off, len, bytes),
        });
        self.keys.push(key);
        Some((off, new))
    }

    /// Bytes of the file that are written: the header, the index and the chunks.
    pub fn written_len(&self) -> u64 {
        let room = (self.max - self.keys.len()) * (KEY_LEN + LOC_LEN);
        self.next - room as u64
    }

    /// The header and index, to write at the file's start once every chunk is added.
    pub fn index(&self) -> Vec<u8> {
        head_and_index(self.id, self.class, self.keys.iter().copied(), &self.locs)
    }
}

fn loc_crc(key: SegKey, ord: u32, off: u64, len: u32, bytes: &[u8]) -> u32 {
    let mut c = Crc32c::new();
    c.update(&key.0.to_le_bytes());
    c.update(&key.1.to_le_bytes());
    c.update(&key.2.to_le_bytes());
    c.update(&ord.to_le_bytes());
    c.update(&off.to_le_bytes());
    c.update(&len.to_le_bytes());
    c.update(bytes);
    c.finish()
}

/// The header of a segment file: its version and, for version 2, its chunk count.
fn header(b: &[u8], id: u64) -> Result<(u32, u64), DecodeError> {
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
    let count_or_len = r.u64()?;
    let _ = r.u32()?;
    let header_crc = r.u32()?;
    if crc32c(&b[..SEG_HEADER_CRC_OFFSET]) != header_crc {
        return Err(DecodeError::new(
            SEG_HEADER_CRC_OFFSET,
            "segment header checksum mismatch",
        ));
    }
    if version != 1 && version != 2 {
        return Err(DecodeError::new(8, "unsupported segment version"));
    }
    if file_id != id {
        return Err(DecodeError::new(16, "segment id does not match its name"));
    }
    Ok((version, count_or_len))
}

/// A segment's header (its first [`SEG_HEADER_LEN`] bytes) checked: its version (1 or 2)
/// and, for version 2, its chunk count. For a reader that does not hold the whole file.
pub fn segment_header(b: &[u8], id: u64) -> Result<(u32, u64), DecodeError> {
    header(b, id)
}

/// A key as the index stores it ([`KEY_LEN`] bytes).
pub fn key_from(k: &[u8]) -> SegKey {
    (
        u64::from_le_bytes(k[0..8].try_into().expect("8 bytes")),
        u32::from_le_bytes(k[8..12].try_into().expect("4 bytes")),
        u32::from_le_bytes(k[12..16].try_into().expect("4 bytes")),
    )
}

/// A chunk's loc ([`LOC_LEN`] bytes): offset in the file, length, checksum.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Loc {
    pub off: u64,
    pub len: u32,
    crc: u32,
}

impl Loc {
    pub fn from_bytes(l: &[u8]) -> Loc {
        Loc {
            off: u64::from_le_bytes(l[0..8].try_into().expect("8 bytes")),
            len: u32::from_le_bytes(l[8..12].try_into().expect("4 bytes")),
            crc: u32::from_le_bytes(l[12..16].try_into().expect("4 bytes")),
        }
    }

    /// Whether `bytes` (read at `off`) are chunk `ord` with `key`, undamaged: the check a
    /// reader of a single chunk makes ([`SegView::chunk`] makes the same one).
    pub fn checks(&self, key: SegKey, ord: u32, bytes: &[u8]) -> bool {
        bytes.len() == self.len as usize && loc_crc(key, ord, self.off, self.len, bytes) == self.crc
    }
}

/// The class a segment's header gives (read after the header is checked; `None` if the
/// bytes are too short to hold one).
pub fn segment_class(b: &[u8]) -> Option<u32> {
    Some(u32::from_le_bytes(b.get(12..16)?.try_into().ok()?))
}

/// The version of a segment file whose header checks (1 or 2).
pub fn segment_version(b: &[u8], id: u64) -> Result<u32, DecodeError> {
    header(b, id).map(|h| h.0)
}

/// A version 2 segment whose header and keys are checked; its chunks are checked when read.
#[derive(Debug, Clone, Copy)]
pub struct SegView<'a> {
    b: &'a [u8],
    count: usize,
}

impl<'a> SegView<'a> {
    /// Check the header and the keys of a version 2 segment (not the chunks).
    pub fn open(b: &'a [u8], id: u64) -> Result<SegView<'a>, DecodeError> {
        let (version, count) = header(b, id)?;
        if version != 2 {
            return Err(DecodeError::new(8, "not a version 2 segment"));
        }
        usize::try_from(count)
            .ok()
            .and_then(|n| n.checked_mul(KEY_LEN + LOC_LEN))
            .and_then(|n| n.checked_add(SEG_HEADER_LEN))
            .filter(|&end| end <= b.len())
            .ok_or_else(|| DecodeError::new(24, "segment index truncated"))?;
        let count = count as usize;
        let keys = &b[SEG_HEADER_LEN..SEG_HEADER_LEN + count * KEY_LEN];
        let want = u32::from_le_bytes(b[32..36].try_into().expect("4 bytes"));
        if crc32c(keys) != want {
            return Err(DecodeError::new(
                SEG_HEADER_LEN,
                "segment keys checksum mismatch",
            ));
        }
        let v = SegView { b, count };
        for i in 1..count {
            if v.key(i - 1) >= v.key(i) {
                return Err(DecodeError::new(
                    SEG_HEADER_LEN + i * KEY_LEN,
                    "segment keys out of order",
                ));
            }
        }
        Ok(v)
    }

    /// A view with only the header checked (not the keys): [`SegView::chunk`] still checks
    /// the key of what it returns. For a file that passed [`SegView::open`], or a reader of
    /// a few chunks.
    pub fn header_checked(b: &'a [u8], id: u64) -> Result<SegView<'a>, DecodeError> {
        let (version, _) = header(b, id)?;
        if version != 2 {
            return Err(DecodeError::new(8, "not a version 2 segment"));
        }
        SegView::trusted(b).ok_or_else(|| DecodeError::new(24, "segment index truncated"))
    }

    /// A view of a file whose header was checked before.
    pub fn trusted(b: &'a [u8]) -> Option<SegView<'a>> {
        let count = usize::try_from(u64::from_le_bytes(b.get(24..32)?.try_into().ok()?)).ok()?;
        let end = count
            .checked_mul(KEY_LEN + LOC_LEN)?
            .checked_add(SEG_HEADER_LEN)?;
        (end <= b.len()).then_some(SegView { b, count })
    }

    pub fn len(&self) -> usize {
        self.count
    }

    pub fn is_empty(&self) -> bool {
        self.count == 0
    }

    /// The key of chunk `ord` (< len).
    pub fn key(&self, ord: usize) -> SegKey {
        key_from(&self.b[SEG_HEADER_LEN + ord * KEY_LEN..][..KEY_LEN])
    }

    /// The ordinal of the chunk with `key`, if the segment has it.
    pub fn find(&self, key: SegKey) -> Option<usize> {
        let (mut lo, mut hi) = (0, self.count);
        while lo < hi {
            let mid = (lo + hi) / 2;
            match self.key(mid).cmp(&key) {
                std::cmp::Ordering::Less => lo = mid + 1,
                std::cmp::Ordering::Greater => hi = mid,
                // A damaged key must not pass for a neighbour's: its neighbours bracket it.
                std::cmp::Ordering::Equal => {
                    let before = mid == 0 || self.key(mid - 1) < key;
                    let after = mid + 1 == self.count || self.key(mid + 1) > key;
                    return (before && after).then_some(mid);
                }
            }
        }
        None
    }

    /// The checked bytes of chunk `ord`: (offset in the file, length).
    pub fn chunk(&self, ord: usize) -> Result<(usize, usize), DecodeError> {
        if ord >= self.count {
            return Err(DecodeError::new(24, "no such chunk in the segment"));
        }
        let at = SEG_HEADER_LEN + self.count * KEY_LEN + ord * LOC_LEN;
        let loc = Loc::from_bytes(&self.b[at..at + LOC_LEN]);
        let (off, len) = (loc.off, loc.len);
        let start = usize::try_from(off)
            .ok()
            .filter(|&s| {
                s.checked_add(len as usize)
                    .is_some_and(|e| e <= self.b.len())
            })
            .ok_or_else(|| DecodeError::new(at, "segment chunk past the end of the file"))?;
        let bytes = &self.b[start..start + len as usize];
        if !loc.checks(self.key(ord), ord as u32, bytes) {
            return Err(DecodeError::new(start, "segment chunk checksum mismatch"));
        }
        Ok((start, len as usize))
    }
}

/// Check a whole version 1 segment file and list its chunks; `id` is the number its name
/// carries.
pub fn decode_segment(b: &[u8], id: u64) -> Result<Vec<SegChunk<'_>>, DecodeError> {
    let (version, payload_len) = header(b, id)?;
    if version != 1 {
        return Err(DecodeError::new(8, "not a version 1 segment"));
    }
    let payload_crc = u32::from_le_bytes(b[32..36].try_into().expect("4 bytes"));
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

/// A version 1 segment's bytes (what stores before version 2 wrote), for tests of old
/// stores.
pub fn encode_v1_segment(id: u64, class: u32, chunks: &[SegChunk<'_>]) -> Vec<u8> {
    let mut payload = crate::bytes::ByteWriter::new();
    payload.varint(chunks.len() as u64);
    for c in chunks {
        payload.varint(c.series);
        payload.varint(u64::from(c.archive));
        payload.varint(u64::from(c.chunk));
        payload.bytes(c.bytes);
    }
    let mut b = Vec::with_capacity(SEG_HEADER_LEN + payload.buf.len());
    b.extend_from_slice(&SEG_MAGIC);
    b.extend_from_slice(&1u32.to_le_bytes());
    b.extend_from_slice(&class.to_le_bytes());
    b.extend_from_slice(&id.to_le_bytes());
    b.extend_from_slice(&(payload.buf.len() as u64).to_le_bytes());
    b.extend_from_slice(&crc32c(&payload.buf).to_le_bytes());
    let hcrc = crc32c(&b[..SEG_HEADER_CRC_OFFSET]);
    b.extend_from_slice(&hcrc.to_le_bytes());
    b.extend_from_slice(&payload.buf);
    b
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn segment_roundtrips_and_damage_is_caught() {
        let mut w = SegmentWriter::new(7, 16);
        assert_eq!(w.chunk(300, 2, 70_000, &[9; 200]), 0);
        assert_eq!(w.chunk(3, 0, 5, b"abc"), 1);
        let (b, ords) = w.finish();
        assert_eq!(ords, vec![1, 0], "sorted by key");
        let v = SegView::open(&b, 7).unwrap();
        assert_eq!(v.len(), 2);
        assert_eq!(v.key(0), (3, 0, 5));
        assert_eq!(v.find((300, 2, 70_000)), Some(1));
        assert_eq!(v.find((300, 2, 69_999)), None);
        let (s, l) = v.chunk(0).unwrap();
        assert_eq!(&b[s..s + l], b"abc");
        let (s, l) = v.chunk(1).unwrap();
        assert_eq!(&b[s..s + l], &[9; 200]);
        assert_eq!(segment_version(&b, 7).unwrap(), 2);
        assert!(SegView::open(&b, 8).is_err(), "wrong id");
        // Header and keys: caught at open.
        for at in [0, 9, 20, 30, 37, 45, 60] {
            let mut d = b.clone();
            d[at] ^= 2;
            assert!(SegView::open(&d, 7).is_err(), "byte {at}");
        }
        // Locs and chunk bytes: caught when that chunk is read.
        let locs = SEG_HEADER_LEN + 2 * KEY_LEN;
        for at in [
            locs,
            locs + 9,
            locs + 13,
            locs + LOC_LEN + 2,
            b.len() - 1,
            b.len() - 201,
        ] {
            let mut d = b.clone();
            d[at] ^= 4;
            let v = SegView::open(&d, 7).unwrap();
            assert!(v.chunk(0).is_err() || v.chunk(1).is_err(), "byte {at}");
        }
        assert!(SegView::open(&b[..locs + 3], 7).is_err(), "index cut short");
        // A reader that checks only the header still never takes a damaged key's chunk.
        let mut d = b.clone();
        d[SEG_HEADER_LEN + KEY_LEN + 3] ^= 1;
        let v = SegView::header_checked(&d, 7).unwrap();
        assert!(v.chunk(1).is_err() && v.chunk(0).is_ok());
        let short = &b[..b.len() - 1];
        let v = SegView::open(short, 7).unwrap();
        assert!(v.chunk(1).is_err(), "chunk cut short");
    }

    #[test]
    fn a_spooled_segment_reads_like_a_written_one_and_refuses_keys_out_of_order() {
        // Room for 5 chunks, 3 added: a hole after the index, the chunks after it.
        let mut sp = SegmentSpool::new(9, 1 << 16, 5);
        let mut file = Vec::new();
        let mut put = |at: u64, bytes: &[u8]| {
            let end = at as usize + bytes.len();
            if file.len() < end {
                file.resize(end, 0xEE);
            }
            file[at as usize..end].copy_from_slice(bytes);
        };
        let chunks: [(SegKey, &[u8]); 3] = [
            ((3, 0, 5), b"abc"),
            ((3, 1, 0), &[7; 40]),
            ((300, 2, 70_000), &[9; 200]),
        ];
        for (k, b) in chunks {
            let (at, new) = sp.chunk(k, b).expect("ascending");
            assert!(new);
            put(at, b);
        }
        assert_eq!(sp.chunk((3, 1, 0), b"x"), None, "not above the last key");
        assert_eq!(sp.len(), 3);
        let head = sp.index();
        assert_eq!(head.len(), SEG_HEADER_LEN + 3 * (KEY_LEN + LOC_LEN));
        put(0, &head);
        assert_eq!(
            sp.written_len(),
            file.len() as u64 - 2 * (KEY_LEN + LOC_LEN) as u64
        );
        let v = SegView::open(&file, 9).unwrap();
        assert_eq!(v.len(), 3);
        assert_eq!(segment_class(&file), Some(1 << 16));
        for (ord, (k, b)) in chunks.iter().enumerate() {
            assert_eq!(v.find(*k), Some(ord));
            let (s, l) = v.chunk(ord).unwrap();
            assert_eq!(&file[s..s + l], *b);
        }
        // The same chunks through the writer that holds them: the same reads.
        let mut w = SegmentWriter::new(9, 1 << 16);
        for (k, b) in chunks {
            w.chunk(k.0, k.1, k.2, b);
        }
        let (whole, _) = w.finish();
        let v2 = SegView::open(&whole, 9).unwrap();
        for ord in 0..3 {
            assert_eq!(v2.key(ord), v.key(ord));
        }
        // A damaged chunk is caught as in any segment.
        let (s, _) = v.chunk(2).unwrap();
        file[s + 10] ^= 1;
        assert!(SegView::open(&file, 9).unwrap().chunk(2).is_err());
        // Full: no more chunks.
        let mut sp = SegmentSpool::new(1, 0, 1);
        assert!(sp.chunk((1, 0, 0), b"a").is_some());
        assert_eq!(sp.chunk((2, 0, 0), b"b"), None);
    }

    #[test]
    fn equal_chunks_of_a_series_are_written_once_and_each_key_reads_them() {
        // Three archives of one step a row (AVERAGE, MIN, MAX) of series 4: chunk 2 of each
        // the same bytes, chunk 3 of the third different; series 5's chunk 2 the same bytes
        // again, but another series: written again.
        let same = [7u8; 300];
        let chunks: [(SegKey, &[u8]); 6] = [
            ((4, 0, 2), &same),
            ((4, 0, 3), b"xyz"),
            ((4, 1, 2), &same),
            ((4, 2, 2), &same),
            ((4, 2, 3), b"xyw"),
            ((5, 0, 2), &same),
        ];
        let mut w = SegmentWriter::new(3, 1);
        for (k, b) in chunks {
            w.chunk(k.0, k.1, k.2, b);
        }
        let index = SEG_HEADER_LEN + 6 * (KEY_LEN + LOC_LEN);
        assert_eq!(w.file_len(), (index + 300 + 3 + 3 + 300) as u64);
        let (whole, _) = w.finish();
        assert_eq!(whole.len(), index + 606);
        let mut sp = SegmentSpool::new(3, 1, 6);
        let mut file = vec![0; index];
        let mut written = Vec::new();
        for (k, b) in chunks {
            let (at, new) = sp.chunk(k, b).unwrap();
            written.push(new);
            if new {
                assert_eq!(at as usize, file.len());
                file.extend_from_slice(b);
            }
        }
        assert_eq!(written, [true, true, false, false, true, true]);
        file[..index].copy_from_slice(&sp.index());
        for f in [&whole, &file] {
            let v = SegView::open(f, 3).unwrap();
            for (ord, (k, b)) in chunks.iter().enumerate() {
                assert_eq!(v.find(*k), Some(ord));
                let (s, l) = v.chunk(ord).unwrap();
                assert_eq!(&f[s..s + l], *b);
            }
        }
        // Added out of key order, nothing is shared: every chunk in key order, whole.
        let mut w = SegmentWriter::new(3, 1);
        for (k, b) in chunks.iter().rev() {
            w.chunk(k.0, k.1, k.2, b);
        }
        assert_eq!(w.file_len(), (index + 4 * 300 + 6) as u64);
        let (back, _) = w.finish();
        assert_eq!(back.len(), index + 1206);
        let v = SegView::open(&back, 3).unwrap();
        for (ord, (_, b)) in chunks.iter().enumerate() {
            let (s, l) = v.chunk(ord).unwrap();
            assert_eq!(&back[s..s + l], *b);
        }
    }

    #[test]
    fn version_one_still_reads() {
        let chunks = [
            SegChunk {
                series: 3,
                archive: 0,
                chunk: 5,
                bytes: b"abc",
            },
            SegChunk {
                series: 300,
                archive: 2,
                chunk: 70_000,
                bytes: &[9; 200],
            },
        ];
        let b = encode_v1_segment(7, 16, &chunks);
        assert_eq!(segment_version(&b, 7).unwrap(), 1);
        assert_eq!(decode_segment(&b, 7).unwrap(), chunks.to_vec());
        assert!(SegView::open(&b, 7).is_err());
        for at in [0, 9, 20, 37, 45, b.len() - 1] {
            let mut d = b.clone();
            d[at] ^= 2;
            assert!(decode_segment(&d, 7).is_err(), "byte {at}");
        }
        assert!(decode_segment(&b[..b.len() - 1], 7).is_err());
    }
}
