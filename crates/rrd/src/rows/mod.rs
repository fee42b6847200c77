//! Archive rows in memory: a ring of rows kept in chunks, most of them stored in the store's
//! segment files and read from there when needed.
//!
//! An `.rrd` file spends 8 bytes per row and DS however little the rows say. Held that way
//! in memory, 26,000 RRDs with gmetad's archives take 16 GB, and every update lands on cold
//! memory. Here an archive is cut into chunks of whole rows (about [`CHUNK_VALUES`] values
//! each). A chunk is one of: a single repeated bit pattern (a fresh archive's unknowns: no
//! memory beyond its table entry), stored in a segment file (4 bytes of a table shared by the
//! archives whose chunks sit in the same segments, [`SegPool`]: the segment's number;
//! the bytes are read through the page cache via the store's [`ChunkSource`] when a read
//! needs them), or its values packed by [`encode_values`] on the heap (sealed since the last
//! checkpoint stored chunks; docs/FORMAT.md, "Archive rows"). Rows are written one after
//! another around the ring, so writes go to the open chunk, which holds only the values
//! written into it since it was opened; moving on packs it. Every value comes back bit for
//! bit.
//!
//! The block encoding lives here, not in `codec`, because both the store's bytes and this
//! in-memory form use it; `codec` re-exports it with its reader and writer.

mod chunk;
mod decode;
mod encode;
mod store;
mod write;

use bitio::lsb::{Reader as BitReader, Writer as BitWriter};
use bitio::{put_varint, unzigzag, varint_len, width, zigzag};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use chunk::*;
pub use chunk::{
    encode_piece, piece_head, with_packing_deferred, ChunkSource, Fresh, Keep, Packed, Part,
    PieceHead, PlaceMemo, SegPool,
};
use decode::*;
pub use decode::{decode_rows, decode_values, PackError, SharedBytes};
use encode::*;
pub use encode::{encode_uniform, encode_values};

/// About how many values a chunk holds: whole rows, at least one.
pub const CHUNK_VALUES: usize = 256;

/// Rows per chunk for `ds_cnt` values a row: `CHUNK_VALUES / ds_cnt`, at least 1. Part of
/// the checkpoint format (docs/FORMAT.md, "Chunked archive rows").
pub fn chunk_rows_for(ds_cnt: usize) -> usize {
    (CHUNK_VALUES / ds_cnt.max(1)).max(1)
}

/// The rows of one archive: `row_cnt` rows of `ds_cnt` values, row after row.
///
/// Memory: 4 bytes a chunk (the segment holding it), plus the chunks that are not stored
/// and not the archive's common fill (on the heap until a checkpoint stores them), plus the
/// open chunk's values.
/// What this thread's reads of rows met of damage: how many chunks read as unknown because
/// the disk no longer holds them as written, and the latest (archive, chunk, segment). A
/// reader compares it before and after building its answer ([`damage`]) and answers an error
/// rather than unknown rows a client would take for a gap in its data. Per thread: a reply
/// is built on one thread, and nothing is added to each archive (a store keeps millions).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Damage {
    pub chunks: u64,
    pub last: Option<(u32, usize, u32)>,
}

thread_local! {
    static DAMAGE: std::cell::Cell<Damage> = const {
        std::cell::Cell::new(Damage { chunks: 0, last: None })
    };
}

/// This thread's [`Damage`] so far.
pub fn damage() -> Damage {
    DAMAGE.with(|d| d.get())
}

/// `f`, and the damage its reads met (`None`: none): how every reader of rows checks.
pub fn watch<R>(f: impl FnOnce() -> R) -> (R, Option<Damage>) {
    let before = damage();
    let r = f();
    (r, damage().since(before))
}

impl Damage {
    /// What was met since `before` was taken (`None`: nothing).
    pub fn since(self, before: Damage) -> Option<Damage> {
        (self.chunks > before.chunks).then_some(Damage {
            chunks: self.chunks - before.chunks,
            last: self.last,
        })
    }

    /// The words of an error about it for series `name`.
    pub fn message(&self, name: &str) -> String {
        let at = match self.last {
            Some((a, c, seg)) => format!(" (archive {a}, chunk {c}, segment {seg})"),
            None => String::new(),
        };
        format!(
            "{name}: {} stored chunk(s) of its rows are damaged on disk{at}, not served as \
             unknown values; `ringlet check` lists the damage, `ringlet check --cut` makes \
             those rows unknown for good",
            self.chunks
        )
    }
}

fn note_damage(archive: u32, c: usize, ch: &Chunk) {
    let seg = match ch {
        Chunk::Stored(s) => *s,
        _ => 0,
    };
    DAMAGE.with(|d| {
        let mut v = d.get();
        v.chunks += 1;
        v.last = Some((archive, c, seg));
        d.set(v);
    });
}

pub struct Rows {
    row_cnt: usize,
    /// u32: with `archive` in the room of one `usize` (an archive is kept for every series
    /// of a store; a million series keep three each). Rows a chunk: [`chunk_rows_for`] of it,
    /// computed, not kept (80 bytes a `Rows` put an archive list of three at 264 bytes, in
    /// jemalloc's 320-byte class; 72 puts it at 240, in the 256).
    ds_cnt: u32,
    /// Which archive of its series these rows are, where stored chunks are read from
    /// ([`Rows::adopt`]).
    archive: u32,
    /// Per chunk: the segment that holds it (`1..UNPLACED`), or 0: it is in `other`, or
    /// else every value is `fill`. The open chunk's entry is stale while it is open. Shared
    /// (copied on write) with every archive whose table is the same ([`SegPool`]).
    segs: Arc<Vec<u32>>,
    /// Chunks neither stored nor `fill`, by index, ascending (never `Chunk::Stored`).
    other: Others,
    fill: u64,
    /// The chunk being written (boxed: most archives at rest have none).
    open: Option<Box<Open>>,
    src: Option<Source>,
}

impl Rows {
    /// `row_cnt` rows of `ds_cnt` values, every one `v`.
    pub fn filled(row_cnt: u64, ds_cnt: usize, v: f64) -> Rows {
        let mut r = Rows::empty(row_cnt as usize, ds_cnt);
        r.fill = v.to_bits();
        r
    }

    /// Rows from their values, row after row (`vals.len()` a multiple of `ds_cnt`; a
    /// partial last row is dropped). `ds_cnt` 0 holds nothing.
    pub fn from_values(ds_cnt: usize, vals: &[f64]) -> Rows {
        let row_cnt = vals.len().checked_div(ds_cnt).unwrap_or(0);
        let mut r = Rows::empty(row_cnt, ds_cnt);
        let per = r.chunk_rows() * ds_cnt;
        for c in 0..r.segs.len() {
            r.set_chunk(
                c,
                pack(&vals[c * per..((c + 1) * per).min(row_cnt * ds_cnt)]),
            );
        }
        r
    }

    /// Every chunk a fill of unknowns.
    fn empty(row_cnt: usize, ds_cnt: usize) -> Rows {
        let chunk_rows = chunk_rows_for(ds_cnt);
        Rows {
            row_cnt,
            // At most CHUNK_VALUES rows a chunk; a row of more than u32::MAX values would
            // not fit in memory.
            ds_cnt: ds_cnt as u32,
            archive: 0,
            segs: Arc::new(vec![0; row_cnt.div_ceil(chunk_rows)]),
            other: Others::default(),
            fill: crate::num::DNAN.to_bits(),
            open: None,
            src: None,
        }
    }

    pub fn row_cnt(&self) -> u64 {
        self.row_cnt as u64
    }

    pub fn ds_cnt(&self) -> usize {
        self.ds_cnt as usize
    }

    /// Number of values, `row_cnt * ds_cnt`.
    pub fn len(&self) -> usize {
        self.row_cnt * (self.ds_cnt as usize)
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Values in chunk `c` (the last chunk may hold fewer rows).
    pub fn chunk_len(&self, c: usize) -> usize {
        let rows = self.chunk_rows().min(self.row_cnt - c * self.chunk_rows());
        rows * (self.ds_cnt as usize)
    }

    /// Make chunk `c`'s table entry `seg`, copying the table first if it is shared.
    fn set_seg(&mut self, c: usize, seg: u32) {
        if self.segs[c] != seg {
            Arc::make_mut(&mut self.segs)[c] = seg;
        }
    }

    /// Share this archive's chunk table with the equal tables in `pool` (or add it there).
    /// Series created together with one schema have their chunks sealed at the same times
    /// and stored in the same segments: their tables are equal, and one copy serves them
    /// all. A table changed since it was shared is a copy of its own until shared again.
    pub fn share(&mut self, pool: &mut SegPool) {
        if Arc::strong_count(&self.segs) > 1 {
            return;
        }
        match pool.0.get(&self.segs) {
            Some(t) => self.segs = t.clone(),
            None => {
                pool.0.insert(self.segs.clone());
            }
        }
    }

    /// Which chunk table these rows use (equal for rows sharing one) and its bytes.
    pub fn table(&self) -> (usize, usize) {
        (Arc::as_ptr(&self.segs) as usize, self.segs.capacity() * 4)
    }

    /// Sealed chunk `c` as it stands (stale for the open chunk).
    fn chunk(&self, c: usize) -> Chunk {
        match self.segs[c] {
            0 => match self.other.find(c) {
                Ok(i) => self.other.get(i).clone(),
                Err(_) => Chunk::Fill(self.fill),
            },
            seg => Chunk::Stored(seg),
        }
    }

    /// Make sealed chunk `c` be `ch`.
    fn set_chunk(&mut self, c: usize, ch: Chunk) {
        let at = self.other.find(c);
        match ch {
            Chunk::Stored(seg) => {
                self.set_seg(c, seg);
                if let Ok(i) = at {
                    self.other.remove(i);
                }
            }
            Chunk::Fill(b) if b == self.fill => {
                self.set_seg(c, 0);
                if let Ok(i) = at {
                    self.other.remove(i);
                }
            }
            ch => {
                self.set_seg(c, 0);
                match at {
                    Ok(i) => self.other.set(i, ch),
                    Err(i) => self.other.insert(i, c, ch),
                }
            }
        }
    }

    /// The values of chunk `c` into `out` (cleared first).
    fn unpack_into(&self, c: usize, out: &mut Vec<f64>) {
        out.clear();
        if let Some(o) = self.open.as_ref().filter(|o| (o.idx as usize) == c) {
            self.open_values(o, out);
            return;
        }
        self.unpack_chunk(c, &self.chunk(c), out);
    }

    /// The open chunk's current values into `out` (empty).
    fn open_values(&self, o: &Open, out: &mut Vec<f64>) {
        if (o.start as usize) == 0 && o.len() == self.chunk_len(o.idx as usize) {
            o.written_into(out);
        } else {
            self.unpack_chunk(o.idx as usize, &o.prev, out);
            let mut w = Vec::with_capacity(o.len());
            o.written_into(&mut w);
            out[(o.start as usize)..(o.start as usize) + w.len()].copy_from_slice(&w);
        }
    }

    /// The values of `ch`, a version of chunk `c`, into `out` (empty).
    fn unpack_chunk(&self, c: usize, ch: &Chunk, out: &mut Vec<f64>) {
        let n = self.chunk_len(c);
        let ok = match ch {
            Chunk::Fill(b) => {
                out.resize(n, f64::from_bits(*b));
                true
            }
            // Packed here from whole values, or checked at load: it always decodes.
            Chunk::Packed(p) => decode_values(p.bytes(), n, out).is_ok(),
            Chunk::Stored(seg) => self.unpack_stored(c, *seg, n, out, MAX_PIECE_LINKS),
        };
        if !ok {
            // A stored chunk that is gone or damaged (its source reported it): unknown,
            // never its damaged bytes; the reader is told ([`damage`]).
            out.clear();
            note_damage(self.archive, c, ch);
        }
        out.resize(n, f64::NAN);
    }

    /// The values of chunk `c` (`n` of them) as stored in segment `seg` into `out` (empty):
    /// packed whole, or a piece over the pieces before it (at most `links` more, each in an
    /// older segment). False if any of it cannot be read.
    fn unpack_stored(&self, c: usize, seg: u32, n: usize, out: &mut Vec<f64>, links: u32) -> bool {
        let pieces = self.src.as_ref().is_some_and(|s| s.src.pieces(seg));
        if !pieces {
            return self
                .with_stored(c, &Chunk::Stored(seg), |b| decode_values(b, n, out).is_ok())
                .unwrap_or(false);
        }
        let mut vals = Vec::new();
        let head = self.with_stored(c, &Chunk::Stored(seg), |b| {
            let h = piece_head(b, n).ok()?;
            decode_values(&b[h.len..], h.n, &mut vals).ok()?;
            Some(h)
        });
        let Some(Some(h)) = head else {
            return false;
        };
        if h.prev == 0 {
            *out = vals;
            return true;
        }
        if links == 0 || h.prev >= seg || !self.unpack_stored(c, h.prev, n, out, links - 1) {
            return false;
        }
        out[h.start..h.start + h.n].copy_from_slice(&vals);
        true
    }

    /// The values of chunk `c` as it stands sealed (for the open chunk, the version it was
    /// opened from); unknown where it cannot be read.
    pub fn chunk_values(&self, c: usize) -> Vec<f64> {
        let mut out = Vec::with_capacity(self.chunk_len(c));
        self.unpack_chunk(c, &self.chunk(c), &mut out);
        out
    }

    /// The open chunk `c`'s values written since it was opened on a stored version: where
    /// they start in the chunk, the values, and that version's segment. `None` if chunk `c`
    /// is not open on a stored version or nothing was written.
    pub fn open_piece(&self, c: usize) -> Option<(usize, Vec<f64>, u32)> {
        let o = self.open.as_ref().filter(|o| (o.idx as usize) == c)?;
        let Chunk::Stored(seg) = o.prev else {
            return None;
        };
        if o.len() == 0 {
            return None;
        }
        let mut vals = Vec::with_capacity(o.len());
        o.written_into(&mut vals);
        Some((o.start as usize, vals, seg))
    }

    /// Run `f` on the checked bytes of `ch`, a stored version of chunk `c`.
    fn with_stored<T>(&self, c: usize, ch: &Chunk, f: impl FnOnce(&[u8]) -> T) -> Option<T> {
        let Chunk::Stored(seg) = *ch else {
            return None;
        };
        let s = self.src.as_ref()?;
        let (buf, start, len) = s.src.chunk(seg, (s.series, self.archive, c as u32))?;
        let all: &[u8] = (*buf).as_ref();
        Some(f(all.get(start..start + len)?))
    }

    /// The packed bytes of chunk `c` as it stands sealed (`None` for a fill, or a stored
    /// chunk that cannot be read).
    pub fn packed_bytes(&self, c: usize) -> Option<Vec<u8>> {
        match self.chunk(c) {
            Chunk::Fill(_) => None,
            Chunk::Packed(p) => Some(p.bytes().to_vec()),
            Chunk::Stored(seg) if self.src.as_ref().is_some_and(|s| s.src.pieces(seg)) => {
                // Pieces: the values they add up to, packed whole.
                let mut v = Vec::new();
                let n = self.chunk_len(c);
                if !self.unpack_stored(c, seg, n, &mut v, MAX_PIECE_LINKS) {
                    return None;
                }
                let mut b = Vec::new();
                encode_values(&v, &mut b);
                Some(b)
            }
            ch @ Chunk::Stored(_) => self.with_stored(c, &ch, |b| b.to_vec()),
        }
    }

    /// Value `i` (row `i / ds_cnt`, DS `i % ds_cnt`); panics past the end, as a slice would.
    pub fn get(&self, i: usize) -> f64 {
        assert!(i < self.len(), "row value {i} out of {}", self.len());
        let per = self.chunk_rows() * (self.ds_cnt as usize);
        let c = i / per;
        if let Some(o) = self.open.as_ref().filter(|o| (o.idx as usize) == c) {
            let j = i - c * per;
            let tail = (o.start + o.packed_n) as usize;
            if j >= tail && j < tail + o.staged_n() {
                return o.staged(j - tail);
            }
            if j >= (o.start as usize) && j < tail {
                let mut w = Vec::with_capacity(o.packed_n as usize);
                o.written_into(&mut w);
                return w[j - (o.start as usize)];
            }
            let mut v = Vec::new();
            self.unpack_chunk(c, &o.prev, &mut v);
            return v[j];
        }
        match self.chunk(c) {
            Chunk::Fill(b) => f64::from_bits(b),
            _ => {
                let mut v = Vec::new();
                self.unpack_into(c, &mut v);
                v[i - c * per]
            }
        }
    }
}

impl Rows {
    /// The value every row holds when no chunk has values of its own (none open, none
    /// stored, none packed: a fresh archive), else None.
    pub fn uniform(&self) -> Option<f64> {
        let only_fill =
            self.open.is_none() && self.other.is_empty() && self.segs.iter().all(|&s| s == 0);
        only_fill.then(|| f64::from_bits(self.fill))
    }

    /// Every value, row after row.
    pub fn to_vec(&self) -> Vec<f64> {
        let mut out = Vec::with_capacity(self.len());
        let mut buf = Vec::new();
        for c in 0..self.segs.len() {
            self.unpack_into(c, &mut buf);
            out.extend_from_slice(&buf);
        }
        out
    }

    /// Every value, row after row, by value.
    pub fn iter(&self) -> std::vec::IntoIter<f64> {
        self.to_vec().into_iter()
    }

    /// A reader that unpacks each chunk once for a walk through many rows.
    pub fn reader(&self) -> RowReader<'_> {
        RowReader {
            rows: self,
            chunk: usize::MAX,
            buf: Vec::new(),
        }
    }

    /// Bytes of memory the rows take of their own: heap chunks, the open chunk (not the
    /// chunk table, which may be shared: [`Rows::table`]).
    pub fn heap_bytes(&self) -> usize {
        let packed: usize = self
            .other
            .iter()
            .map(|(_, c)| match c {
                Chunk::Packed(p) => match &p.bytes {
                    PackedBytes::Owned(v) => v.capacity() + 32,
                    // In the page cache, not on the heap.
                    PackedBytes::Shared { .. } => 32,
                },
                _ => 0,
            })
            .sum();
        let open = self
            .open
            .as_ref()
            .map_or(0, |o| o.buf.capacity() + size_of::<Open>());
        packed + open + self.other.capacity() * std::mem::size_of::<(u32, Chunk)>()
    }
}

/// A chunk of `len` bytes at `start` of `buf` (a mapped version 1 segment), stored in `seg`.
fn shared_chunk(buf: SharedBytes, start: usize, len: usize, seg: u64) -> Result<Chunk, String> {
    if (*buf).as_ref().len() < start.saturating_add(len) {
        return Err("past the end of its segment".into());
    }
    Ok(Chunk::Packed(Arc::new(Packed {
        bytes: PackedBytes::Shared { buf, start, len },
        seg: AtomicU64::new(seg),
    })))
}

/// A chunk holding `vals`.
fn pack(vals: &[f64]) -> Chunk {
    match vals.first() {
        Some(v0) if vals.iter().all(|v| v.to_bits() == v0.to_bits()) => Chunk::Fill(v0.to_bits()),
        None => Chunk::Fill(f64::NAN.to_bits()),
        Some(_) => {
            let mut out = Vec::with_capacity(vals.len() * 2);
            encode_values(vals, &mut out);
            out.shrink_to_fit();
            Chunk::Packed(Arc::new(Packed {
                bytes: PackedBytes::Owned(out),
                seg: AtomicU64::new(0),
            }))
        }
    }
}

/// Rows of one archive read one at a time, each chunk unpacked once while rows stay in it.
pub struct RowReader<'a> {
    rows: &'a Rows,
    chunk: usize,
    buf: Vec<f64>,
}

impl RowReader<'_> {
    /// The values of row `row` (`< row_cnt`).
    pub fn row(&mut self, row: usize) -> &[f64] {
        let r = self.rows;
        let c = row / r.chunk_rows();
        if c != self.chunk {
            r.unpack_into(c, &mut self.buf);
            self.chunk = c;
        }
        let at = (row - c * r.chunk_rows()) * (r.ds_cnt as usize);
        &self.buf[at..at + (r.ds_cnt as usize)]
    }

    /// Appends the values of rows `row..row + n` (`row + n <= row_cnt`) to `out`, a chunk's
    /// rows at a time.
    pub fn push_rows(&mut self, mut row: usize, mut n: usize, out: &mut Vec<f64>) {
        let r = self.rows;
        let (per, d) = (r.chunk_rows(), r.ds_cnt as usize);
        while n > 0 {
            let c = row / per;
            if c != self.chunk {
                r.unpack_into(c, &mut self.buf);
                self.chunk = c;
            }
            let at = row - c * per;
            let take = (per - at).min(n);
            out.extend_from_slice(&self.buf[at * d..(at + take) * d]);
            row += take;
            n -= take;
        }
    }
}

impl Chunk {
    /// The same values, not marked stored and shared with nothing (a stored chunk stays a
    /// reference: [`Rows::adopt`] reads it if the copy goes to another store or series).
    fn detached(&self) -> Chunk {
        match self {
            Chunk::Fill(b) => Chunk::Fill(*b),
            Chunk::Stored(seg) => Chunk::Stored(*seg),
            Chunk::Packed(p) => Chunk::Packed(Arc::new(Packed {
                bytes: p.bytes.clone(),
                seg: AtomicU64::new(0),
            })),
        }
    }
}

impl Clone for Rows {
    /// The same rows, sharing no heap chunk: a store marks the chunks it has stored in its
    /// own segments, and a copy (a template RRD created in several stores) starts unmarked.
    fn clone(&self) -> Rows {
        Rows {
            row_cnt: self.row_cnt,
            ds_cnt: self.ds_cnt,
            archive: self.archive,
            segs: self.segs.clone(),
            other: Others(
                self.other
                    .0
                    .as_ref()
                    .map(|v| Box::new(v.iter().map(|(c, ch)| (*c, ch.detached())).collect())),
            ),
            fill: self.fill,
            open: self.open.as_ref().map(|o| {
                Box::new(Open {
                    idx: o.idx,
                    prev: o.prev.detached(),
                    start: o.start,
                    packed_n: o.packed_n,
                    packed_len: o.packed_len,
                    buf: o.buf.clone(),
                    written: o.written,
                })
            }),
            src: self.src.clone(),
        }
    }
}

impl PartialEq for Rows {
    /// Equal when they hold the same values (compared as `f64`, as a `Vec<f64>` would).
    fn eq(&self, other: &Rows) -> bool {
        self.row_cnt == other.row_cnt
            && self.ds_cnt == other.ds_cnt
            && self.to_vec() == other.to_vec()
    }
}

impl std::fmt::Debug for Rows {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "Rows({} x {}: {:?})",
            self.row_cnt,
            (self.ds_cnt as usize),
            self.to_vec()
        )
    }
}

#[cfg(test)]
mod tests;
