//! What an archive's chunks are: stored in a segment file (read through the store's
//! [`ChunkSource`]), packed on the heap, the one open for writing, or the archive's common
//! fill; pieces of a chunk laid over the version before; chunk tables shared between
//! archives ([`SegPool`]).

use super::*;

/// A piece of a chunk (docs/FORMAT.md, "Segment files"): the values from index `start`
/// (`n` of them) written over the piece before it, in segment `prev` (0: none; then the
/// piece is the whole chunk, `start` 0). A segment of pieces holds a checkpoint's open
/// chunks, each the values written since the chunk was last stored, so that a chunk being
/// filled over many checkpoints is not written whole at each of them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PieceHead {
    pub start: usize,
    pub n: usize,
    pub prev: u32,
    /// Bytes of the header: the values' blocks follow.
    pub len: usize,
}

/// Encode a piece: its header, then `vals` as [`encode_values`] packs them.
pub fn encode_piece(start: usize, prev: u32, vals: &[f64], out: &mut Vec<u8>) {
    put_varint(out, start as u64);
    put_varint(out, vals.len() as u64);
    put_varint(out, u64::from(prev));
    encode_values(vals, out);
}

/// The header of a piece of a chunk of `chunk_len` values.
pub fn piece_head(buf: &[u8], chunk_len: usize) -> Result<PieceHead, PackError> {
    let mut pos = 0;
    let start = read_varint(buf, &mut pos)?;
    let n = read_varint(buf, &mut pos)?;
    let prev = read_varint(buf, &mut pos)?;
    let bad = |what| PackError { offset: 0, what };
    let (start, n) = (start as usize, n as usize);
    if start > chunk_len || n > chunk_len - start {
        return Err(bad("piece past its chunk's end"));
    }
    let prev = u32::try_from(prev).map_err(|_| bad("piece's segment out of range"))?;
    if prev == 0 && (start != 0 || n != chunk_len) {
        return Err(bad("a first piece that is not the whole chunk"));
    }
    Ok(PieceHead {
        start,
        n,
        prev,
        len: pos,
    })
}

/// Links a read follows at most through a chunk's pieces (a store keeps chains shorter:
/// `engine::segments::PIECE_EPOCH`); a longer chain reads as damaged.
pub(super) const MAX_PIECE_LINKS: u32 = 64;

/// Where a sealed chunk's packed values are.
#[derive(Clone)]
pub(super) enum PackedBytes {
    /// On the heap.
    Owned(Vec<u8>),
    /// `len` bytes at `start` of a shared buffer (a mapped segment file).
    Shared {
        buf: SharedBytes,
        start: usize,
        len: usize,
    },
}

impl PackedBytes {
    pub(super) fn as_slice(&self) -> &[u8] {
        match self {
            PackedBytes::Owned(v) => v,
            PackedBytes::Shared { buf, start, len } => {
                let all: &[u8] = (**buf).as_ref();
                all.get(*start..start + len).unwrap_or(&[])
            }
        }
    }
}

/// Packed values of one sealed chunk, and the segment they were stored in (0: not yet).
pub struct Packed {
    pub(super) bytes: PackedBytes,
    pub(super) seg: AtomicU64,
}

impl Packed {
    /// The values, as [`encode_values`] wrote them.
    pub fn bytes(&self) -> &[u8] {
        self.bytes.as_slice()
    }

    /// The segment that holds these bytes, once stored.
    pub fn stored(&self) -> Option<u64> {
        Some(self.seg.load(Ordering::Relaxed)).filter(|&s| s != 0)
    }

    /// Record that segment `seg` (non-zero) now durably holds these bytes.
    pub fn mark_stored(&self, seg: u64) {
        self.seg.store(seg, Ordering::Relaxed);
    }
}

/// Where the store keeps chunks it has stored: its segment files. `rrd` does no I/O; a store
/// gives its archives one ([`Rows::adopt`]) and they read stored chunks through it.
pub trait ChunkSource: Send + Sync {
    /// The packed bytes of the chunk with `key` (series id, archive, chunk index) in
    /// segment `seg`, checked against their checksum: `len` bytes at `start` of the buffer.
    /// `None` if the segment is gone, lacks the key, or the bytes are damaged (the source
    /// reports it); the chunk then reads as unknown.
    fn chunk(&self, seg: u32, key: (u64, u32, u32)) -> Option<(SharedBytes, usize, usize)>;

    /// Whether segment `seg` holds pieces of chunks ([`PieceHead`]) rather than whole packed
    /// chunks.
    fn pieces(&self, _seg: u32) -> bool {
        false
    }

    /// A chunk of `bytes` packed bytes was sealed on the heap, not stored yet: the store
    /// counts them to know when to spill ([`Rows::unstored`]). Not called for a chunk sealed
    /// with the values it already had.
    fn sealed(&self, _bytes: usize) {}

    /// A chunk of `bytes` packed bytes counted by [`ChunkSource::sealed`] was replaced by
    /// a newer version before it was stored (its archive came round to it again): never to
    /// be stored, no longer held.
    fn unsealed(&self, _bytes: usize) {}
}

/// One chunk, by value: a single repeated bit pattern, packed values on the heap (immutable:
/// a new version of the chunk is a new `Packed`), or stored in a segment file (read through
/// the page cache when needed).
#[derive(Clone)]
pub(super) enum Chunk {
    Fill(u64),
    Packed(Arc<Packed>),
    Stored(u32),
}

/// The open chunk: its index, the version it was opened from, the values written since
/// (the chunk's values from index `start` on: the first `packed_n` of them packed, by
/// [`encode_values`] in groups of [`OPEN_GROUP`] (a replay's in one run), then the staged
/// ones; the others are still `prev`'s), and the rows (within the chunk) written since it
/// was opened. Rows are written in order, so the values grow by appending and hold only
/// what was written; a write elsewhere first brings in every value (`start` 0, every value
/// staged, nothing packed). Positions are u32 (a chunk holds at most [`CHUNK_VALUES`]
/// values, but a row of more DSs makes a chunk of one row: still far below 2^32): every
/// series of a store keeps one of these for each archive it writes, so it is kept in 64
/// bytes (jemalloc's 64-byte class; 88 with a buffer each for packed and staged values, and
/// a second allocation).
pub(super) struct Open {
    pub(super) idx: u32,
    pub(super) start: u32,
    pub(super) packed_n: u32,
    /// Bytes of `buf` that are packed values; the rest are the staged values, 8 bytes each
    /// (little-endian bit patterns).
    pub(super) packed_len: u32,
    /// The first and last row written since the chunk was opened; `NOT_WRITTEN` if none.
    pub(super) written: (u32, u32),
    pub(super) prev: Chunk,
    /// Open chunks are most of what a series holds in memory: packed, the values of
    /// consolidation take 2-4 bytes instead of 8.
    pub(super) buf: Vec<u8>,
}

/// `Open::written` when no row was written.
pub(super) const NOT_WRITTEN: (u32, u32) = (u32::MAX, 0);

impl Open {
    pub(super) fn new(idx: u32, prev: Chunk, buf: Vec<u8>) -> Open {
        Open {
            idx,
            start: 0,
            packed_n: 0,
            packed_len: 0,
            written: NOT_WRITTEN,
            prev,
            buf,
        }
    }

    /// How many values were written since it was opened (from `start` on).
    pub(super) fn len(&self) -> usize {
        self.packed_n as usize + self.staged_n()
    }

    /// The rows written since it was opened, first and last.
    pub(super) fn written(&self) -> Option<(u32, u32)> {
        (self.written.0 <= self.written.1).then_some(self.written)
    }

    pub(super) fn staged_n(&self) -> usize {
        (self.buf.len() - self.packed_len as usize) / 8
    }

    pub(super) fn staged(&self, i: usize) -> f64 {
        let at = self.packed_len as usize + i * 8;
        let b: [u8; 8] = self.buf[at..at + 8].try_into().expect("8 bytes");
        f64::from_bits(u64::from_le_bytes(b))
    }

    pub(super) fn set_staged(&mut self, i: usize, v: f64) {
        let at = self.packed_len as usize + i * 8;
        self.buf[at..at + 8].copy_from_slice(&v.to_bits().to_le_bytes());
    }

    /// Pack the staged values of whole groups in their place, but not a group that ends at
    /// `chunk_len` (the chunk is sealed whole): each group on its own, as writing them one
    /// at a time does, or with `together` all of them in one call to [`encode_values`] (a
    /// replay's packing of what it left staged: one search for a divisor instead of one a
    /// group, and fewer block heads; the same values, and the same sealed chunk, which is
    /// packed again whole). Packed through a buffer the thread keeps, so that the group
    /// writing packs as it fills costs no allocation unless it comes out longer than its
    /// values (a literal block: one byte more). Returns whether any was packed.
    pub(super) fn pack_groups(&mut self, chunk_len: usize, together: bool) -> bool {
        thread_local! {
            static PACKED: std::cell::RefCell<Vec<u8>> = const {
                std::cell::RefCell::new(Vec::new())
            };
        }
        // Groups that end before the chunk does.
        let tail = (self.start + self.packed_n) as usize;
        let room = chunk_len.saturating_sub(tail + 1) / OPEN_GROUP;
        let n = (self.staged_n() / OPEN_GROUP).min(room);
        if n == 0 {
            return false;
        }
        let mut pack = |b: &mut Vec<u8>| {
            b.clear();
            let staged = &self.buf[self.packed_len as usize..];
            let value =
                |x: &[u8]| f64::from_bits(u64::from_le_bytes(x.try_into().expect("8 bytes")));
            if together {
                let vals: Vec<f64> = staged[..n * 8 * OPEN_GROUP]
                    .chunks_exact(8)
                    .map(value)
                    .collect();
                encode_values(&vals, b);
            } else {
                for g in staged.chunks_exact(8 * OPEN_GROUP).take(n) {
                    let mut group = [0f64; OPEN_GROUP];
                    for (v, x) in group.iter_mut().zip(g.chunks_exact(8)) {
                        *v = value(x);
                    }
                    encode_values(&group, b);
                }
            }
            let packed = b.len();
            b.extend_from_slice(&staged[n * 8 * OPEN_GROUP..]);
            self.buf.truncate(self.packed_len as usize);
            self.buf.reserve_exact(b.len());
            self.buf.extend_from_slice(b);
            self.packed_len += packed as u32;
            self.packed_n += (n * OPEN_GROUP) as u32;
        };
        PACKED.with(|cell| match cell.try_borrow_mut() {
            Ok(mut b) => pack(&mut b),
            Err(_) => pack(&mut Vec::new()),
        });
        true
    }

    /// Every value staged, `vals`, nothing packed (a write out of order).
    pub(super) fn stage_all(&mut self, vals: &[f64]) {
        self.buf = Vec::with_capacity(vals.len() * 8);
        for v in vals {
            self.buf.extend_from_slice(&v.to_bits().to_le_bytes());
        }
        self.start = 0;
        self.packed_len = 0;
        self.packed_n = 0;
    }

    /// Those values, in order, into `out` (appended).
    pub(super) fn written_into(&self, out: &mut Vec<f64>) {
        if self.packed_n > 0 {
            // Packed here from whole values: it always decodes.
            let _ = decode_values(
                &self.buf[..self.packed_len as usize],
                self.packed_n as usize,
                out,
            );
        }
        out.extend((0..self.staged_n()).map(|i| self.staged(i)));
    }
}

/// What a checkpoint must keep of one chunk so that replaying the log from a snapshot
/// rebuilds it ([`Rows::keep`]).
pub enum Keep<'a> {
    /// Every value has this bit pattern.
    Fill(u64),
    /// Sealed packed values on the heap: already in a segment when [`Packed::stored`] says
    /// so, else to be stored (then [`Rows::settle`]).
    Packed(Arc<Packed>),
    /// The open chunk's current values.
    Values(std::borrow::Cow<'a, [f64]>),
    /// Stored in this segment.
    Stored(u64),
}

/// One chunk as a checkpoint gives it back ([`Rows::from_parts`]).
pub enum Part {
    Fill(u64),
    /// Packed values and the segment they came from (0: none).
    Packed(Vec<u8>, u64),
    /// Packed values left where they are: `len` bytes at `start` of the mapped segment `seg`
    /// (checked by the segment's checksum when the store opened it; decoded when read).
    Shared {
        buf: SharedBytes,
        start: usize,
        len: usize,
        seg: u64,
    },
    Values(Vec<f64>),
    /// In one of the store's segments, to be found there ([`Rows::place`]).
    InSegments,
}

/// Ring rows written after a snapshot: `count` rows from `first` on, wrapping (`count` at
/// least the row count: every row).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Fresh {
    pub first: usize,
    pub count: usize,
}

impl Fresh {
    pub const NONE: Fresh = Fresh { first: 0, count: 0 };

    /// Whether rows `lo..=hi` (no wrap, `< row_cnt`) were all written since the snapshot.
    pub(super) fn covers(&self, lo: usize, hi: usize, row_cnt: usize) -> bool {
        if self.count >= row_cnt {
            return true;
        }
        if self.count == 0 || hi < lo {
            return false;
        }
        // Offsets from `first`, around the ring: the range must sit inside [0, count).
        let off = |r: usize| (r + row_cnt - self.first % row_cnt) % row_cnt;
        let (a, b) = (off(lo), off(hi));
        a <= b && b < self.count
    }
}

/// Where stored chunks of these rows are read: the store's source and the rows' key there.
#[derive(Clone)]
pub(super) struct Source {
    pub(super) src: Arc<dyn ChunkSource>,
    pub(super) series: u64,
}

/// The chunks of an archive that are neither stored nor the fill, by index, ascending: most
/// archives have none, so an empty list takes one word and no allocation.
#[derive(Default)]
// The box is the point: an empty list costs one word in every archive, a list its Vec.
#[allow(clippy::box_collection)]
pub(super) struct Others(pub(super) Option<Box<Vec<(u32, Chunk)>>>);

impl Others {
    pub(super) fn list(&self) -> &[(u32, Chunk)] {
        self.0.as_deref().map_or(&[], |v| v.as_slice())
    }
    pub(super) fn iter(&self) -> std::slice::Iter<'_, (u32, Chunk)> {
        self.list().iter()
    }
    pub(super) fn is_empty(&self) -> bool {
        self.list().is_empty()
    }
    pub(super) fn capacity(&self) -> usize {
        self.0.as_ref().map_or(0, |v| v.capacity())
    }
    pub(super) fn find(&self, c: usize) -> Result<usize, usize> {
        self.list().binary_search_by_key(&(c as u32), |e| e.0)
    }
    pub(super) fn get(&self, i: usize) -> &Chunk {
        &self.list()[i].1
    }
    pub(super) fn set(&mut self, i: usize, ch: Chunk) {
        if let Some(v) = self.0.as_mut() {
            v[i].1 = ch;
        }
    }
    pub(super) fn insert(&mut self, i: usize, c: usize, ch: Chunk) {
        self.0.get_or_insert_default().insert(i, (c as u32, ch));
    }
    pub(super) fn remove(&mut self, i: usize) {
        if let Some(v) = self.0.as_mut() {
            v.remove(i);
            if v.is_empty() {
                self.0 = None;
            } else if v.capacity() > 2 * v.len() {
                // Chunks leave as checkpoints store them: give the room back.
                v.shrink_to_fit();
            }
        }
    }
}

/// Placements already made to shared tables ([`Rows::place_many`]): (table, segment,
/// chunks) -> the table before and after.
#[derive(Default)]
pub struct PlaceMemo(pub(super) TableMemo);

pub(super) type TableMemo = std::collections::HashMap<
    (usize, u32, Vec<u32>),
    (Arc<Vec<u32>>, Arc<Vec<u32>>),
    std::hash::BuildHasherDefault<crate::fx::Fx>,
>;

/// The chunk tables archives share ([`Rows::share`]), hashed by [`crate::fx::Fx`] (SipHash
/// was a tenth of a store's open; tables are the store's own numbers, not chosen input).
#[derive(Default)]
pub struct SegPool(pub(super) Tables);

/// The set of shared chunk tables.
pub(super) type Tables =
    std::collections::HashSet<Arc<Vec<u32>>, std::hash::BuildHasherDefault<crate::fx::Fx>>;

impl SegPool {
    /// Forget the tables no archive uses any more.
    pub fn prune(&mut self) {
        self.0.retain(|t| Arc::strong_count(t) > 1);
    }

    /// Distinct tables held.
    pub fn len(&self) -> usize {
        self.0.len()
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

thread_local! {
    /// Set by [`with_packing_deferred`]: open chunks keep every value unpacked.
    static DEFERRED: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// Run `f` with the open chunks written on this thread keeping their values unpacked (no
/// group packed as it fills; a chunk sealed in `f` is packed once, from its values), then
/// pack them as writing would have ([`Rows::pack_staged`] on each archive `f` wrote: the
/// caller's part). Replay writes a series' rows by the thousand in one go: most of them
/// are sealed before the replay of the series ends, and packing them eight at a time first,
/// then unpacking them to seal the chunk, was a third of its time (26,000 gmetad series,
/// 25.8 million samples: 5.8 s, 4.0 s with the groups left unpacked). The values stay
/// unpacked only while `f` runs: memory grows by the open chunks `f` writes, 2 KiB each
/// at most, and the caller packs them before it goes on.
pub fn with_packing_deferred<R>(f: impl FnOnce() -> R) -> R {
    struct Reset(bool);
    impl Drop for Reset {
        fn drop(&mut self) {
            DEFERRED.with(|d| d.set(self.0));
        }
    }
    let _reset = Reset(DEFERRED.with(|d| d.replace(true)));
    f()
}

pub(super) fn packing_deferred() -> bool {
    DEFERRED.with(|d| d.get())
}

/// Values an open chunk's buffer grows by at least when full (else by a quarter).
pub(super) const OPEN_GROWTH: usize = 4;
/// Values an open chunk holds unpacked at most: each group of this many is packed as it
/// fills. Small, so that a young chunk is packed too (a 1-minute archive writes 30 rows in
/// half an hour); a group's block header and first value cost about 4 bytes more than the
/// values' own 2-3.
pub(super) const OPEN_GROUP: usize = 8;

/// `segs` entry of a chunk a checkpoint has "in the segments", not yet found.
pub(super) const UNPLACED: u32 = u32::MAX;
