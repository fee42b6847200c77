//! Segment files: archive chunks stored once, so that checkpoints need not rewrite rows.
//!
//! Archive rows live in memory as chunks ([`rrd::Rows`]); a sealed chunk does not change
//! until the ring comes round to it again. A checkpoint stores each sealed chunk the first
//! time it needs it, in a new segment file, and afterwards only says "in the segments"
//! (docs/FORMAT.md, "Segments"). Chunks whose rows replay rebuilds are not stored at all
//! ([`rrd::Rows::keep`]). A checkpoint writes one segment per retention class (the archive's
//! rows times its row span, rounded up to a power of two), so the chunks of a segment expire
//! about together and a segment file is removed soon after its last chunk is overwritten.
//! The chunk each archive is writing goes, at each checkpoint, into a segment of pieces: the
//! values written since it was last stored, over that version ([`PIECES_CLASS`]).
//!
//! Order of a checkpoint: segments written and synced, directory synced, checkpoint written
//! and synced ([`crate::ckptfile`]), then chunks marked stored and segments that the new
//! checkpoint no longer draws on removed. A crash at any point leaves the older checkpoint
//! and every segment it names; segments no checkpoint names are removed at open.

use crate::files;
use crate::series::Registry;
use crate::vfs::{Mapping, VFile, Vfs};
use codec::rrdbin::ChunkEntry;
use codec::segment::{
    decode_segment, key_from, segment_class, segment_header, segment_version, Loc, SegKey, SegView,
    SegmentSpool, SegmentWriter, KEY_LEN, LOC_LEN, SEG_HEADER_LEN,
};
use rrd::rows::{encode_piece, encode_values, ChunkSource, Fresh, Keep, Packed, SharedBytes};
use rrd::Rrd;
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::io;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, RwLock};

/// A version 2 segment read with positioned reads rather than mapped, for a store opened
/// for a few series (the CLI on its own): only the keys of those series, their locs and the
/// chunks read are ever in memory. (A mapping would do, but one touch of a mapped file the
/// kernel caches in large folios maps the whole folio, up to 2 MiB a segment.)
///
/// With a checkpoint that names each chunk's segment, the file is opened only when a read
/// first needs one of its chunks (a one-day fetch needs one segment of dozens).
struct ReadSeg {
    /// The file and its key count, once opened (or why it could not be).
    opened: std::sync::OnceLock<Result<Opened, String>>,
    /// What opens it when first needed.
    lazy: Option<(Arc<dyn Vfs>, std::path::PathBuf, u64)>,
    /// The keys looked up so far ([`ReadSeg::series_keys`]): ordinal and loc of each.
    found: Mutex<HashMap<SegKey, (u32, Loc)>>,
    /// Series whose keys were looked up.
    looked: Mutex<std::collections::HashSet<u64>>,
}

/// A segment file read by position: version 2 (its keys searched in the file), or a
/// version 1 one read whole, its chunks by key.
enum Opened {
    V2 {
        file: Mutex<Box<dyn VFile>>,
        count: u64,
        class: u32,
    },
    V1(HashMap<SegKey, Vec<u8>>),
}

/// Open segment `id` at `path` for positioned reads, its header checked (a version 1
/// segment is read and checked whole).
fn open_read(vfs: &dyn Vfs, path: &Path, id: u64) -> Result<Opened, String> {
    let err = |e: &dyn std::fmt::Display| format!("{}: {e}", path.display());
    let f = vfs.open(path, false).map_err(|e| err(&e))?;
    let len = f.len().map_err(|e| err(&e))?;
    let mut head = [0u8; SEG_HEADER_LEN];
    let n = f.read_at(&mut head, 0).map_err(|e| err(&e))?;
    let (version, count) = segment_header(&head[..n], id).map_err(|e| err(&e))?;
    if version == 2 {
        count
            .checked_mul((KEY_LEN + LOC_LEN) as u64)
            .and_then(|b| b.checked_add(SEG_HEADER_LEN as u64))
            .filter(|&e| e <= len)
            .ok_or_else(|| err(&"segment index truncated"))?;
        return Ok(Opened::V2 {
            file: Mutex::new(f),
            count,
            class: segment_class(&head).unwrap_or(0),
        });
    }
    let mut all = vec![0u8; usize::try_from(len).map_err(|_| err(&"segment too large"))?];
    let mut at = 0;
    while at < all.len() {
        match f.read_at(&mut all[at..], at as u64).map_err(|e| err(&e))? {
            0 => return Err(err(&"segment truncated")),
            n => at += n,
        }
    }
    let chunks = decode_segment(&all, id).map_err(|e| err(&e))?;
    Ok(Opened::V1(
        chunks
            .into_iter()
            .map(|c| ((c.series, c.archive, c.chunk), c.bytes.to_vec()))
            .collect(),
    ))
}

impl ReadSeg {
    /// A segment opened now.
    fn now(o: Opened) -> ReadSeg {
        ReadSeg {
            opened: std::sync::OnceLock::from(Ok(o)),
            lazy: None,
            found: Mutex::new(HashMap::new()),
            looked: Mutex::new(Default::default()),
        }
    }

    /// A segment opened when first read.
    fn later(vfs: Arc<dyn Vfs>, path: std::path::PathBuf, id: u64) -> ReadSeg {
        ReadSeg {
            opened: std::sync::OnceLock::new(),
            lazy: Some((vfs, path, id)),
            found: Mutex::new(HashMap::new()),
            looked: Mutex::new(Default::default()),
        }
    }

    fn opened(&self) -> io::Result<&Opened> {
        self.opened
            .get_or_init(|| match &self.lazy {
                Some((vfs, path, id)) => open_read(vfs.as_ref(), path, *id),
                None => Err("segment not open".into()),
            })
            .as_ref()
            .map_err(|e| io::Error::other(e.clone()))
    }

    /// The version 2 file.
    fn file(&self) -> io::Result<&Mutex<Box<dyn VFile>>> {
        match self.opened()? {
            Opened::V2 { file, .. } => Ok(file),
            Opened::V1(_) => Err(io::Error::other("a version 1 segment")),
        }
    }

    fn read(&self, off: u64, len: usize) -> io::Result<Vec<u8>> {
        let mut b = vec![0u8; len];
        let f = self.file()?.lock().unwrap_or_else(|p| p.into_inner());
        let mut at = 0;
        while at < len {
            match f.read_at(&mut b[at..], off + at as u64)? {
                0 => {
                    return Err(io::Error::new(
                        io::ErrorKind::UnexpectedEof,
                        "segment truncated",
                    ))
                }
                n => at += n,
            }
        }
        Ok(b)
    }

    fn key(&self, ord: u64) -> io::Result<SegKey> {
        Ok(key_from(&self.read(
            SEG_HEADER_LEN as u64 + ord * KEY_LEN as u64,
            KEY_LEN,
        )?))
    }

    /// The keys of `series` in this segment (a binary search by positioned reads, then its
    /// run of keys and their locs), remembered for [`ReadSeg::chunk`].
    fn series_keys(&self, series: u64) -> io::Result<Vec<SegKey>> {
        let count = match self.opened()? {
            Opened::V2 { count, .. } => *count,
            Opened::V1(chunks) => {
                let mut keys: Vec<SegKey> =
                    chunks.keys().filter(|k| k.0 == series).copied().collect();
                keys.sort_unstable();
                return Ok(keys);
            }
        };
        let (mut lo, mut hi) = (0u64, count);
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            if self.key(mid)?.0 < series {
                lo = mid + 1;
            } else {
                hi = mid;
            }
        }
        let mut keys = Vec::new();
        const BATCH: u64 = 64;
        let mut at = lo;
        'run: while at < count {
            let n = BATCH.min(count - at);
            let b = self.read(
                SEG_HEADER_LEN as u64 + at * KEY_LEN as u64,
                n as usize * KEY_LEN,
            )?;
            for k in b.chunks_exact(KEY_LEN).map(key_from) {
                if k.0 != series {
                    break 'run;
                }
                // A damaged key must not pass for a neighbour's: the run is strictly
                // ascending.
                if keys.last().is_some_and(|l| *l >= k) {
                    return Err(io::Error::other("segment keys out of order"));
                }
                keys.push(k);
            }
            at += n;
        }
        if keys.is_empty() {
            return Ok(keys);
        }
        let locs_at = SEG_HEADER_LEN as u64 + count * KEY_LEN as u64;
        let b = self.read(locs_at + lo * LOC_LEN as u64, keys.len() * LOC_LEN)?;
        let mut found = self.found.lock().unwrap_or_else(|p| p.into_inner());
        for (i, (k, l)) in keys.iter().zip(b.chunks_exact(LOC_LEN)).enumerate() {
            found.insert(*k, ((lo + i as u64) as u32, Loc::from_bytes(l)));
        }
        Ok(keys)
    }

    /// The checked bytes of the chunk with `key` (its series' keys looked up by
    /// [`ReadSeg::series_keys`] the first time).
    fn chunk(&self, key: SegKey) -> Option<Vec<u8>> {
        if let Ok(Opened::V1(chunks)) = self.opened() {
            return chunks.get(&key).cloned();
        }
        let known = |k: &SegKey| {
            self.found
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .get(k)
                .copied()
        };
        let (ord, loc) = match known(&key) {
            Some(f) => f,
            None => {
                let first = self
                    .looked
                    .lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .insert(key.0);
                if first {
                    self.series_keys(key.0).ok()?;
                }
                known(&key)?
            }
        };
        let b = self.read(loc.off, loc.len as usize).ok()?;
        loc.checks(key, ord, &b).then_some(b)
    }
}

/// The mapped segment files that stored chunks are read from, by id: the store's
/// [`ChunkSource`]. A segment stays here while a chunk in memory may name it, even after
/// its file is removed (a mapping outlives the name).
#[derive(Default)]
pub struct SegTable {
    maps: RwLock<HashMap<u32, Arc<dyn Mapping>>>,
    /// Segments read with positioned reads (a store opened for a few series).
    reads: RwLock<HashMap<u32, Arc<ReadSeg>>>,
    /// Chunks that failed their checksum (or whose segment was gone) when read.
    pub damaged: AtomicU64,
    /// Packed bytes of the chunks sealed on the heap since the last count
    /// ([`ChunkSource::sealed`]; set to the exact figure by every checkpoint and spill): an
    /// upper bound of what the heap holds unstored (a chunk overwritten or removed since is
    /// not taken off).
    pub sealed: AtomicU64,
    /// Mapped segments that hold pieces ([`PIECES_CLASS`]).
    piece_segs: RwLock<std::collections::HashSet<u32>>,
    /// Stored chunks read from mappings since their pages were last let go, and how many
    /// times they were let go for that ([`RELEASE_EVERY`]).
    touched: AtomicU64,
    pub releases: AtomicU64,
}

/// Stored chunks read from the mappings after which their pages are let go (each read
/// touches a page or two of a segment's index and chunks): a commit that seals many chunks
/// laid over pieces (a million series' 1-minute archives seal together) would otherwise
/// hold every page it read until the commit ends. At most about 64 MB touched.
const RELEASE_EVERY: u64 = 8192;

impl SegTable {
    /// Segment `id` holds pieces.
    fn mark_pieces(&self, id: u64) {
        if let Ok(id) = u32::try_from(id) {
            self.piece_segs.write().expect("segment table").insert(id);
        }
    }

    fn insert(&self, id: u32, m: Arc<dyn Mapping>) {
        self.maps.write().expect("segment table").insert(id, m);
    }

    fn get(&self, id: u32) -> Option<Arc<dyn Mapping>> {
        self.maps.read().expect("segment table").get(&id).cloned()
    }

    /// Drop every mapped segment's pages from the process (they stay in the page cache, and
    /// a read faults them in again). Pages a mapping has touched count in the process's
    /// resident memory until then: a store that seals chunks over the ones a lap before
    /// (compared when sealed) or serves reads would otherwise hold, in a day, every page of
    /// its daily archives' segments (hundreds of MB for 26,000 gmetad series).
    pub fn release_all(&self) {
        for m in self.maps.read().expect("segment table").values() {
            m.release();
        }
    }

    /// Keep only the mappings of `ids`.
    fn retain(&self, ids: &BTreeSet<u64>) {
        self.maps
            .write()
            .expect("segment table")
            .retain(|id, _| ids.contains(&u64::from(*id)));
        self.reads
            .write()
            .expect("segment table")
            .retain(|id, _| ids.contains(&u64::from(*id)));
        self.piece_segs
            .write()
            .expect("segment table")
            .retain(|id| ids.contains(&u64::from(*id)));
    }
}

impl ChunkSource for SegTable {
    fn pieces(&self, seg: u32) -> bool {
        if self
            .piece_segs
            .read()
            .expect("segment table")
            .contains(&seg)
        {
            return true;
        }
        let read = self.reads.read().expect("segment table").get(&seg).cloned();
        read.is_some_and(
            |r| matches!(r.opened(), Ok(Opened::V2 { class, .. }) if *class == PIECES_CLASS),
        )
    }

    fn sealed(&self, bytes: usize) {
        self.sealed.fetch_add(bytes as u64, Ordering::Relaxed);
    }

    fn unsealed(&self, bytes: usize) {
        let _ = self
            .sealed
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |v| {
                Some(v.saturating_sub(bytes as u64))
            });
    }

    fn chunk(&self, seg: u32, key: (u64, u32, u32)) -> Option<(SharedBytes, usize, usize)> {
        let read = self.reads.read().expect("segment table").get(&seg).cloned();
        let found = if let Some(r) = read {
            r.chunk(key).map(|b| {
                let len = b.len();
                let shared: SharedBytes = Arc::new(b);
                (shared, 0, len)
            })
        } else {
            let found = self.get(seg).and_then(|m| {
                let all: &[u8] = (*m).as_ref();
                let view = SegView::trusted(all)?;
                let (start, len) = view.chunk(view.find(key)?).ok()?;
                let shared: SharedBytes = m.clone();
                Some((shared, start, len))
            });
            if self.touched.fetch_add(1, Ordering::Relaxed) + 1 >= RELEASE_EVERY {
                // The chunk just found stays readable: a released page faults in again.
                self.touched.store(0, Ordering::Relaxed);
                self.releases.fetch_add(1, Ordering::Relaxed);
                self.release_all();
            }
            found
        };
        if found.is_none() && self.damaged.fetch_add(1, Ordering::Relaxed) == 0 {
            eprintln!(
                "ringlet: stored chunk {key:?} of segment {seg} is damaged or missing; \
                 its rows read as unknown (further damage is counted, not logged)"
            );
        }
        found
    }
}

/// A chunk going into a new segment (series id, archive, chunk; the heap version, if it is
/// one; the segment, 0 if its id is out of range, which fails the write), then, once the
/// segment is durable, to drop from the heap ([`rrd::Rows::settle`], [`rrd::Rows::rebase`],
/// or [`rrd::Rows::place`] for one stored again). 32 bytes: a checkpoint of a million series
/// holds one for each of its three million open chunks.
pub struct Settled {
    pub series: u64,
    pub archive: u32,
    pub chunk: u32,
    pub seg: u32,
    /// The open chunk's current values ([`Keep::Values`]): the chunk is rebased on them.
    pub open: bool,
    pub heap: Option<Arc<Packed>>,
}

impl Settled {
    fn new(series: u64, a: usize, c: usize, seg: u64, heap: Option<Arc<Packed>>) -> Settled {
        Settled {
            series,
            archive: a as u32,
            chunk: c as u32,
            seg: u32::try_from(seg).unwrap_or(0),
            open: false,
            heap,
        }
    }
}

/// What one spill ([`Segments::spill`]) wrote.
#[derive(Debug, Clone, Copy, Default)]
pub struct Spilled {
    /// Bytes of the new segment files.
    pub bytes: u64,
    pub chunks: usize,
    pub segments: usize,
    /// Packed bytes of unstored chunks left on the heap.
    pub left: u64,
}

/// The chunks of `marks`, now durably in their segments: each heap version marked stored;
/// the list to drop from the heap ([`settle`]).
fn stored_marks(marks: Vec<Settled>) -> Vec<Settled> {
    for m in &marks {
        if let Some(p) = &m.heap {
            p.mark_stored(u64::from(m.seg));
        }
    }
    marks
}

/// Chunks now durably in segments ([`Segments::installed`], [`Segments::spill`]): drop their
/// heap versions from the series in `reg`.
pub fn settle(reg: &mut Registry, settled: Vec<Settled>) {
    for m in settled {
        let Some(s) = reg.by_id_mut(m.series) else {
            continue;
        };
        let Some(data) = s.rrd.rra.get_mut(m.archive as usize) else {
            continue;
        };
        let (rows, c) = (&mut data.rows, m.chunk as usize);
        match &m.heap {
            Some(p) => rows.settle(c, p, m.seg),
            None if m.open => rows.rebase(c, m.seg),
            None => {
                rows.place(c, m.seg);
            }
        }
    }
}

/// The segment of pieces of open chunks a checkpoint writes as it goes
/// ([`SegmentSpool`]), and the first error writing it.
struct Spool {
    w: SegmentSpool,
    file: Box<dyn crate::vfs::VFile>,
    err: Option<io::Error>,
}

/// The segments of one checkpoint being written.
pub struct Plan {
    next_id: u64,
    writers: BTreeMap<u32, SegmentWriter>,
    /// Where the open chunks' pieces go as they come: the file system and directory, the
    /// most the checkpoint can store (one a series' archive), and the segment once begun.
    spool_to: Option<(Arc<dyn Vfs>, std::path::PathBuf, usize)>,
    spool: Option<Spool>,
    /// A series whose last update is before this time has stopped ([`STOPPED_AFTER`]).
    stopped_before: i64,
    marks: Vec<Settled>,
    /// Segments whose files are present (the newest checkpoint's) and that a chunk may go on
    /// being read from (not a segment of open chunks' versions of an earlier kind,
    /// [`OPEN_CLASS`], nor one of pieces of an epoch that ends).
    present: BTreeSet<u64>,
    /// Segments of pieces of the epoch this checkpoint goes on ([`PIECE_EPOCH`]; none when
    /// it begins one): a piece may be laid over a piece in them.
    staying: BTreeSet<u64>,
    /// This plan's segments of pieces ([`PIECES_CLASS`]).
    new_pieces: BTreeSet<u64>,
    /// Segments the checkpoint's images draw on.
    pub live: BTreeSet<u64>,
    /// Bytes of the new segment files.
    pub bytes: u64,
    /// Of those, bytes of segments of pieces of open chunks ([`PIECES_CLASS`]).
    pub open_bytes: u64,
}

/// The store's segments.
pub struct Segments {
    /// Segments the newest checkpoint draws on.
    pub live: BTreeSet<u64>,
    /// Segments the checkpoint before it draws on: their files stay while it is the
    /// fallback (should the newest file be found damaged), until the next checkpoint.
    pub older: BTreeSet<u64>,
    /// Segments written by spills ([`Segments::spill`]) that chunks in memory are read from
    /// and the newest checkpoint does not name (yet): kept, and named by the next checkpoint
    /// that keeps their chunks. After a crash no checkpoint names them: the next open
    /// removes them (replay rebuilds their chunks).
    pub spilled: BTreeSet<u64>,
    /// Spilled segments not synced yet, with their open files: the next checkpoint syncs
    /// them (and the directory) before it can name them ([`Segments::write`]).
    unsynced: Vec<(u64, Box<dyn VFile>)>,
    /// Segments of open chunks' whole versions ([`OPEN_CLASS`], written before pieces) the
    /// newest checkpoint names.
    pub open_segs: BTreeSet<u64>,
    /// Segments of pieces ([`PIECES_CLASS`]) the newest checkpoint names: its epoch's.
    pub pieces: BTreeSet<u64>,
    /// Number for the next new segment.
    pub next_id: u64,
    /// The mapped segments chunks are read from.
    pub table: Arc<SegTable>,
    /// Segments of version 1 (read whole when placed, their chunks held by their mappings).
    old: Vec<(u64, Arc<dyn Mapping>)>,
    /// The store's directory (segment files' names in errors).
    dir: std::path::PathBuf,
}

impl std::fmt::Debug for Segments {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Segments({:?}, next {})", self.live, self.next_id)
    }
}

/// Spilled segments left unsynced at most (open files) before a spill syncs them all.
const MAX_UNSYNCED: usize = 64;

/// The class of a segment of whole versions of open chunks, as checkpoints of earlier builds
/// stored them: the next checkpoint stores a chunk still there again, and the file goes.
/// Retention classes are below 64.
pub const OPEN_CLASS: u32 = 1 << 16;

/// The class of a segment of pieces of open chunks (`rrd::rows::PieceHead`): what each
/// checkpoint writes since pieces. A checkpoint stores, for the chunk each archive is
/// writing, the values written since it was last stored laid over that version when that
/// version is a piece of the current epoch ([`PIECE_EPOCH`]), else the whole chunk. Every
/// checkpoint names the epoch's segments of pieces (chains reach into them), so no chain
/// reaches a removed file, and nothing about chains is read or held to decide.
pub const PIECES_CLASS: u32 = OPEN_CLASS | 1;

/// The class of a segment of blob chunks (`crate::blob`): each checkpoint stores the
/// chunks written since the last one in one such segment, whole, and names every segment
/// that holds a blob's chunk.
pub const BLOB_CLASS: u32 = OPEN_CLASS | 2;

/// Checkpoints of pieces an epoch lasts: the checkpoint that finds this many segments of
/// pieces begins a new epoch, storing every chunk still in a piece whole (in a new segment
/// of pieces if it is being written, else with its archive's class), and the epoch's
/// segments go. A chain of pieces is at most this long, and a chunk being filled over many
/// checkpoints is written whole once an epoch (in pieces at the others).
pub const PIECE_EPOCH: usize = 16;

/// Seconds without an update after which a series counts as stopped (a host taken out of
/// service whose files stay): the chunks it was writing are stored with their archives'
/// sealed chunks, once, instead of whole again at every epoch of pieces. Should it come
/// back, the version it resumes from is left behind there, superseded.
pub const STOPPED_AFTER: i64 = 86_400;

/// The retention class of archive `a`: log2 of the seconds it spans, rounded up.
fn class_of(rrd: &Rrd, a: usize) -> u32 {
    let def = &rrd.schema.rra[a];
    let secs = def
        .row_cnt
        .saturating_mul(def.pdp_cnt)
        .saturating_mul(rrd.schema.step)
        .max(1);
    64 - (secs - 1).leading_zeros()
}

/// Where a chunk stored whole goes ([`Plan::store_whole`]).
#[derive(Clone, Copy)]
struct Whole {
    id: u64,
    a: usize,
    c: usize,
    sealed: u32,
    writing: bool,
}

/// The entry of a chunk stored in segment `seg` (ids are below 2^32: [`Segments::write`]
/// refuses others).
fn stored(seg: u64) -> ChunkEntry {
    ChunkEntry::Stored(u32::try_from(seg).unwrap_or(u32::MAX))
}

/// Rows of each archive of `now` that replay from a snapshot rewrites: the snapshot had
/// written `rows_then` rows with `head` its state then (`None`: a checkpoint of the current
/// state, replay rewrites nothing).
pub fn fresh_rows(head: Option<(&[u64], &[u64])>, now: &Rrd, rows_now: &[u64]) -> Vec<Fresh> {
    (0..now.rra.len())
        .map(|a| match head {
            None => Fresh::NONE,
            Some((cur_rows, rows_then)) => {
                let n = now.schema.rra[a].row_cnt as usize;
                let written = rows_now[a].saturating_sub(rows_then[a]) as usize;
                Fresh {
                    first: (cur_rows[a] as usize + 1) % n.max(1),
                    count: written.min(n),
                }
            }
        })
        .collect()
}

impl Plan {
    /// Add `bytes` (chunk `c` of archive `a` of series `id`) to this plan's segment of
    /// `class`; returns the segment's id.
    fn store(
        &mut self,
        class: u32,
        id: u64,
        a: usize,
        c: usize,
        bytes: &[u8],
        heap: Option<Arc<Packed>>,
    ) -> u64 {
        let next_id = &mut self.next_id;
        let w = self.writers.entry(class).or_insert_with(|| {
            *next_id += 1;
            SegmentWriter::new(*next_id - 1, class)
        });
        w.chunk(id, a as u32, c as u32, bytes);
        self.marks.push(Settled::new(id, a, c, w.id(), heap));
        w.id()
    }

    /// Store chunk `c` of blob `id` in this checkpoint's segment of blobs; its id.
    pub fn store_blob(&mut self, id: u64, c: usize, bytes: &[u8]) -> u32 {
        let seg = self.store(
            BLOB_CLASS,
            id,
            codec::checkpoint::BLOB_ARCHIVE as usize,
            c,
            bytes,
            None,
        );
        // Out of range: 0, which fails the segment's write (as for archive chunks).
        u32::try_from(seg).unwrap_or(0)
    }

    /// The id of this checkpoint's segment of pieces, begun now if it is not yet (`None`:
    /// no spool, or its file cannot be made: chunks go whole with their classes then).
    fn spool_id(&mut self) -> Option<u64> {
        let (vfs, dir, max) = self.spool_to.as_ref()?;
        if self.spool.is_none() {
            let seg = self.next_id;
            let file = vfs.open(&files::segment(dir, seg), true);
            let file = file.and_then(|mut f| f.set_len(0).map(|_| f));
            match file {
                Ok(file) => {
                    self.next_id += 1;
                    self.spool = Some(Spool {
                        w: SegmentSpool::new(seg, PIECES_CLASS, *max),
                        file,
                        err: None,
                    });
                    self.new_pieces.insert(seg);
                }
                // Not begun: the chunks go whole with their classes, to segments written
                // at the end (which will likely fail the same way and report it).
                Err(_) => return None,
            }
        }
        self.spool.as_ref().map(|sp| sp.w.id())
    }

    /// Add a piece (chunk `c` of archive `a` of series `id`) to this checkpoint's segment of
    /// pieces, its bytes written to the file now; the segment's id, or `None` if the spool
    /// cannot take it (keys out of order, full).
    fn spooled(&mut self, id: u64, a: usize, c: usize, bytes: &[u8]) -> Option<u64> {
        self.spool_id()?;
        let sp = self.spool.as_mut()?;
        let (at, new) = sp.w.chunk((id, a as u32, c as u32), bytes)?;
        if new && sp.err.is_none() {
            if let Err(e) = sp.file.write_at(bytes, at) {
                sp.err = Some(e);
            }
        }
        let seg = sp.w.id();
        self.marks.push(Settled::new(id, a, c, seg, None));
        Some(seg)
    }

    /// Store chunk `c` (archive `a` of series `id`, retention class `sealed`) as `vals`,
    /// whole: a first piece in this checkpoint's segment of pieces if it is the chunk being
    /// written (`writing`), else packed with its class.
    fn store_whole(&mut self, w: Whole, vals: &[f64], b: &mut Vec<u8>) -> u64 {
        b.clear();
        if w.writing {
            encode_piece(0, 0, vals, b);
            if let Some(seg) = self.spooled(w.id, w.a, w.c, b) {
                return seg;
            }
            b.clear();
        }
        encode_values(vals, b);
        self.store(w.sealed, w.id, w.a, w.c, b, None)
    }

    /// A piece over the version open chunk `c` was opened from, if that version is a piece
    /// of the current epoch: the piece's bytes into `b`.
    fn piece_of(&self, rows: &rrd::Rows, c: usize, b: &mut Vec<u8>) -> bool {
        let Some((start, vals, prev)) = rows.open_piece(c) else {
            return false;
        };
        // Every value written again (out of order): the whole chunk, which starts a chain.
        if !self.staying.contains(&u64::from(prev))
            || (start == 0 && vals.len() == rows.chunk_len(c))
        {
            return false;
        }
        b.clear();
        encode_piece(start, prev, &vals, b);
        true
    }

    /// The chunk entries of series `id` as `rows_of` holds it now, given the rows replay
    /// rewrites (`fresh`, per archive). Sealed chunks not stored yet go into this plan's
    /// segments, and so do stored ones whose segment file is gone.
    pub fn entries(&mut self, id: u64, now: &Rrd, fresh: &[Fresh]) -> Vec<Vec<ChunkEntry>> {
        let mut all = Vec::with_capacity(now.rra.len());
        let mut b = Vec::new();
        let stopped = now.last_up < self.stopped_before;
        for (a, data) in now.rra.iter().enumerate() {
            let rows = &data.rows;
            let sealed = class_of(now, a);
            // The chunk the next row goes to: its versions go with the open chunks' (unless
            // the series has stopped).
            let next = (data.cur_row as usize + 1) % rows.row_cnt().max(1) as usize;
            let writing = if stopped {
                usize::MAX
            } else {
                next / rows.chunk_rows()
            };
            let mut list = Vec::with_capacity(rows.chunk_count());
            for c in 0..rows.chunk_count() {
                let whole = Whole {
                    id,
                    a,
                    c,
                    sealed,
                    writing: c == writing,
                };
                let Some(keep) = rows.keep_lazy(c, fresh[a]) else {
                    // The open chunk: stored (what was written since it was last stored,
                    // over that version, where the epoch allows; else whole), and rebased on
                    // it once the checkpoint is durable: memory holds what is written after.
                    let piece = whole.writing && self.piece_of(rows, c, &mut b);
                    let seg = match piece.then(|| self.spooled(id, a, c, &b)).flatten() {
                        Some(seg) => seg,
                        None => self.store_whole(whole, &rows.open_now(c), &mut b),
                    };
                    if let Some(m) = self.marks.last_mut() {
                        m.open = true;
                    }
                    self.live.insert(seg);
                    list.push(stored(seg));
                    continue;
                };
                list.push(match keep {
                    Keep::Fill(b) => ChunkEntry::Fill(b),
                    // Not from keep_lazy (the open chunk is its None); stored whole.
                    Keep::Values(v) => {
                        let seg = self.store_whole(whole, &v, &mut b);
                        if let Some(m) = self.marks.last_mut() {
                            m.open = true;
                        }
                        self.live.insert(seg);
                        stored(seg)
                    }
                    Keep::Packed(p) => {
                        let seg = match p.stored().filter(|s| self.present.contains(s)) {
                            Some(seg) => seg,
                            None => self.store(sealed, id, a, c, p.bytes(), Some(p.clone())),
                        };
                        self.live.insert(seg);
                        stored(seg)
                    }
                    Keep::Stored(seg) if self.present.contains(&seg) => {
                        self.live.insert(seg);
                        stored(seg)
                    }
                    Keep::Stored(_) => match rows.packed_bytes(c) {
                        // A version of an open chunk in a segment leaving the window (or of
                        // an earlier kind), or its file was removed while a version the
                        // checkpoint did not keep still pointed at it: store it again, whole.
                        Some(_) => {
                            let seg = self.store_whole(whole, &rows.chunk_values(c), &mut b);
                            self.live.insert(seg);
                            stored(seg)
                        }
                        None => ChunkEntry::Fill(rrd::num::DNAN.to_bits()),
                    },
                });
            }
            all.push(list);
        }
        all
    }

    /// The segments the checkpoint names, ascending.
    pub fn live_ids(&self) -> Vec<u64> {
        self.live.iter().copied().collect()
    }
}

impl Segments {
    /// Start the segments of a spill.
    pub fn plan(&self) -> Plan {
        // The epoch goes on with its segments of pieces, or this checkpoint begins a new one
        // (nothing stays).
        let staying = if self.pieces.len() >= PIECE_EPOCH {
            BTreeSet::new()
        } else {
            self.pieces.clone()
        };
        Plan {
            // 0 means "not stored" in a chunk: numbers start at 1.
            next_id: self.next_id.max(1),
            writers: BTreeMap::new(),
            spool_to: None,
            spool: None,
            stopped_before: i64::MIN,
            marks: Vec::new(),
            present: self
                .live
                .union(&self.spilled)
                .filter(|s| {
                    !self.open_segs.contains(s) && (!self.pieces.contains(s) || staying.contains(s))
                })
                .copied()
                .collect(),
            // Every checkpoint names the epoch's segments: chains of pieces reach into them.
            live: staying.clone(),
            staying,
            new_pieces: BTreeSet::new(),
            bytes: 0,
            open_bytes: 0,
        }
    }

    /// Start the segments of a checkpoint of at most `archives` archives, `newest` the time
    /// of the store's latest update: the open chunks' versions are written to their segment
    /// in `dir` as they come ([`SegmentSpool`]).
    pub fn checkpoint_plan(&self, vfs: Arc<dyn Vfs>, archives: usize, newest: i64) -> Plan {
        Plan {
            spool_to: Some((vfs, self.dir.clone(), archives)),
            stopped_before: newest.saturating_sub(STOPPED_AFTER),
            ..self.plan()
        }
    }

    /// The source stored chunks are read from.
    pub fn source(&self) -> Arc<dyn ChunkSource> {
        self.table.clone()
    }

    /// Write the plan's new segments and map them for reading. `durable` (a checkpoint's
    /// plan): make them durable (each file, then the directory), and the spilled segments
    /// not synced yet with them, since the checkpoint may name those too. Else (a spill) the
    /// files are only handed to the device's writeback and kept open for that sync.
    pub fn write(
        &mut self,
        plan: &mut Plan,
        vfs: &dyn Vfs,
        dir: &Path,
        durable: bool,
    ) -> io::Result<()> {
        self.next_id = self.next_id.max(plan.next_id);
        let spilled_unsynced = durable && !self.unsynced.is_empty();
        if durable {
            self.sync_spilled()?;
        }
        if let Some(mut sp) = plan.spool.take() {
            let id = sp.w.id();
            if let Some(e) = sp.err.take() {
                return Err(e);
            }
            sp.file.write_at(&sp.w.index(), 0)?;
            sp.file.sync_all()?;
            let n = sp.w.written_len();
            plan.bytes += n;
            plan.open_bytes += n;
            let id32 = u32::try_from(id)
                .map_err(|_| io::Error::other(format!("segment id {id} out of range")))?;
            let mapped = vfs.map(&files::segment(dir, id))?;
            mapped.random();
            self.table.insert(id32, mapped);
            self.table.mark_pieces(id);
            if plan.writers.is_empty() {
                return vfs.sync_dir(dir);
            }
        }
        if plan.writers.is_empty() {
            return if spilled_unsynced {
                vfs.sync_dir(dir)
            } else {
                Ok(())
            };
        }
        for (_, w) in std::mem::take(&mut plan.writers) {
            let id = w.id();
            let path = files::segment(dir, id);
            let mut f = vfs.open(&path, true)?;
            f.set_len(0)?;
            let mut at = 0u64;
            w.finish_to(&mut |piece: &[u8]| {
                f.write_at(piece, at)?;
                at += piece.len() as u64;
                Ok(())
            })?;
            if durable {
                f.sync_all()?;
            } else {
                f.start_writeback();
            }
            plan.bytes += at;
            let id32 = u32::try_from(id)
                .map_err(|_| io::Error::other(format!("segment id {id} out of range")))?;
            let mapped = vfs.map(&path)?;
            mapped.random();
            self.table.insert(id32, mapped);
            if !durable {
                self.unsynced.push((id, f));
            }
        }
        if durable {
            vfs.sync_dir(dir)
        } else if self.unsynced.len() > MAX_UNSYNCED {
            // Bounded open files: a long stretch of spills between checkpoints syncs them
            // here now and then.
            self.sync_spilled()?;
            vfs.sync_dir(dir)
        } else {
            Ok(())
        }
    }

    /// Sync the spilled segments written since the last sync (each file; the caller syncs
    /// the directory). One that fails stays listed, to be synced again.
    fn sync_spilled(&mut self) -> io::Result<()> {
        while let Some((_, f)) = self.unsynced.last_mut() {
            f.sync_all()?;
            self.unsynced.pop();
        }
        Ok(())
    }

    /// The plan's checkpoint is durable: mark its new chunks stored and remove the segments
    /// it no longer draws on (best effort: a leftover is removed at the next open). Returns
    /// the chunks the store can now drop from its heap.
    pub fn installed(&mut self, plan: Plan, vfs: &dyn Vfs, dir: &Path) -> Vec<Settled> {
        let out = stored_marks(plan.marks);
        self.older = std::mem::replace(&mut self.live, plan.live);
        // The window: the pieces that stay and this checkpoint's (older ones are named by
        // no chain any more: their chunks were stored again); segments of whole versions of
        // an earlier kind are never kept.
        self.pieces = plan.staying.union(&plan.new_pieces).copied().collect();
        let live = &self.live;
        self.open_segs.retain(|s| live.contains(s));
        let _ = self.remove_unused(vfs, dir);
        out
    }

    /// Store sealed chunks the heap holds (not yet in a segment) without a checkpoint, so
    /// that memory holds a bounded amount of them whatever the checkpoint interval: the
    /// retention classes that hold the most go into a new segment each, largest first, until
    /// at most `leave` bytes are left on the heap (a class holding little, such as a
    /// year-long archive's, waits for the next checkpoint rather than make a file that lives
    /// for a year). The chunks are marked stored before the files are synced: the log holds
    /// every sample they were made of until a checkpoint names them, and the checkpoint
    /// syncs them first ([`Segments::write`]); no checkpoint names them yet
    /// ([`Segments::spilled`]), and until one does they are read through the page cache
    /// (each chunk's checksum checked as it is read). Returns the chunks to drop from the
    /// heap and what was written.
    pub fn spill(
        &mut self,
        reg: &Registry,
        leave: u64,
        vfs: &dyn Vfs,
        dir: &Path,
    ) -> io::Result<(Vec<Settled>, Spilled)> {
        let series: Vec<(u64, &crate::series::Series)> = reg.iter().collect();
        let mut by_class: BTreeMap<u32, u64> = BTreeMap::new();
        for (_, s) in &series {
            for (a, data) in s.rrd.rra.iter().enumerate() {
                let n: usize = data.rows.unstored().map(|(_, p)| p.bytes().len()).sum();
                if n > 0 {
                    *by_class.entry(class_of(&s.rrd, a)).or_default() += n as u64;
                }
            }
        }
        let mut classes: Vec<(u32, u64)> = by_class.into_iter().collect();
        classes.sort_by_key(|&(c, n)| (std::cmp::Reverse(n), c));
        let mut left: u64 = classes.iter().map(|c| c.1).sum();
        let mut chosen = BTreeSet::new();
        for (class, n) in classes {
            if left <= leave {
                break;
            }
            chosen.insert(class);
            left -= n;
        }
        let mut plan = self.plan();
        for (id, s) in &series {
            for (a, data) in s.rrd.rra.iter().enumerate() {
                let class = class_of(&s.rrd, a);
                if !chosen.contains(&class) {
                    continue;
                }
                for (c, p) in data.rows.unstored() {
                    plan.store(class, *id, a, c, p.bytes(), Some(p.clone()));
                }
            }
        }
        let segments = plan.writers.len();
        let chunks = plan.marks.len();
        self.write(&mut plan, vfs, dir, false)?;
        self.spilled
            .extend(plan.marks.iter().map(|m| u64::from(m.seg)));
        let out = stored_marks(plan.marks);
        self.table.sealed.store(left, Ordering::Relaxed);
        let spilled = Spilled {
            bytes: plan.bytes,
            chunks,
            segments,
            left,
        };
        Ok((out, spilled))
    }

    /// Drop the mappings of segments that neither the newest checkpoint nor any chunk in
    /// memory (`used`) names; a spilled segment the checkpoint now names is one of its own,
    /// one no chunk uses any more is let go (its file removed by the next checkpoint).
    pub fn retain(&mut self, used: &BTreeSet<u64>) {
        let live = &self.live;
        self.spilled
            .retain(|s| used.contains(s) && !live.contains(s));
        let spilled = &self.spilled;
        self.unsynced.retain(|(s, _)| spilled.contains(s));
        let keep: BTreeSet<u64> = used.union(&self.live).copied().collect();
        self.table.retain(&keep);
        self.old.retain(|(id, _)| keep.contains(id));
    }

    /// Remove every segment file that neither the two newest checkpoints name nor a spill
    /// wrote for chunks in memory.
    pub fn remove_unused(&self, vfs: &dyn Vfs, dir: &Path) -> io::Result<()> {
        let mut removed = false;
        for name in vfs.list(dir)? {
            if let Some(id) = files::segment_id(&name) {
                if !self.live.contains(&id)
                    && !self.older.contains(&id)
                    && !self.spilled.contains(&id)
                {
                    vfs.remove(&dir.join(&name))?;
                    removed = true;
                }
            }
        }
        if removed {
            vfs.sync_dir(dir)?;
        }
        Ok(())
    }

    /// The segments of a checkpoint naming `live`: map them and check their headers and
    /// indexes (version 2; a version 1 segment is checked whole), and number new ones after
    /// every segment file present. No chunk is read: they stay in the mapped files, read
    /// through the page cache when a read needs them.
    ///
    /// `few`: the store opens for a few series: version 2 segments are read with positioned
    /// reads, not mapped; only their headers are checked here (each chunk read checks its
    /// own key and bytes), and placing reads only those series' keys (a binary search in
    /// each segment, then their run of keys and locs).
    ///
    /// `lazy` (with `few`, for a checkpoint that names each chunk's segment): segments are
    /// not even opened until a read needs one of their chunks; a segment missing or damaged
    /// then reads as unknown rows, counted and logged, like a damaged chunk.
    pub fn open(
        vfs: &dyn Vfs,
        dir: &Path,
        live: &[u64],
        few: bool,
        lazy: Option<&Arc<dyn Vfs>>,
    ) -> Result<Segments, String> {
        let table = Arc::new(SegTable::default());
        let mut old = Vec::new();
        let (mut open_segs, mut pieces) = (BTreeSet::new(), BTreeSet::new());
        for &id in live {
            let path = files::segment(dir, id);
            let err = |e: &dyn std::fmt::Display| format!("{}: {e}", path.display());
            if few {
                let id32 = u32::try_from(id).map_err(|_| err(&"segment id out of range"))?;
                let seg = match lazy {
                    // Not even opened until a read needs one of its chunks.
                    Some(vfs) => ReadSeg::later(vfs.clone(), path.clone(), id),
                    // Read, not mapped: the header now (a version 1 segment whole), the few
                    // series' keys when placing.
                    None => ReadSeg::now(open_read(vfs, &path, id)?),
                };
                table
                    .reads
                    .write()
                    .expect("segment table")
                    .insert(id32, Arc::new(seg));
                continue;
            }
            let mapped = vfs.map(&path).map_err(|e| err(&e))?;
            let all: &[u8] = (*mapped).as_ref();
            // Headers only: placing the chunks checks the rest (the keys, or a version 1
            // segment whole) as it reads them, once.
            if segment_version(all, id).map_err(|e| err(&e))? == 1 {
                old.push((id, mapped.clone()));
            } else {
                SegView::header_checked(all, id).map_err(|e| err(&e))?;
                match segment_class(all) {
                    Some(OPEN_CLASS) => {
                        open_segs.insert(id);
                    }
                    Some(PIECES_CLASS) => {
                        pieces.insert(id);
                        table.mark_pieces(id);
                    }
                    _ => {}
                }
                let id32 = u32::try_from(id).map_err(|_| err(&"segment id out of range"))?;
                table.insert(id32, mapped.clone());
            }
            mapped.release();
        }
        let mut next_id = live.iter().max().map_or(1, |m| m + 1);
        if let Ok(names) = vfs.list(dir) {
            for id in names.iter().filter_map(|n| files::segment_id(n)) {
                next_id = next_id.max(id + 1);
            }
        }
        Ok(Segments {
            live: live.iter().copied().collect(),
            older: BTreeSet::new(),
            spilled: BTreeSet::new(),
            unsynced: Vec::new(),
            open_segs,
            pieces,
            next_id,
            table,
            old,
            dir: dir.to_path_buf(),
        })
    }

    /// An error about segment `id`, naming its file.
    fn err(&self, id: u64, e: &dyn std::fmt::Display) -> String {
        format!("{}: {e}", files::segment(&self.dir, id).display())
    }

    /// Find the chunks a checkpoint has "in the segments" (placeholders in the rows of the
    /// series in `reg`): each is the one with its key in the highest-numbered segment that
    /// has it. Reads the segments' keys (for a store opened for a few series, only theirs),
    /// not their chunks; fails if one is in none.
    ///
    /// `named`: the checkpoint named each stored chunk's segment (version 4): no key is
    /// read; only chunks in version 1 segments are taken into memory from them.
    pub fn place(&self, reg: &mut Registry, named: bool) -> Result<(), String> {
        for &id in &self.live {
            if let Some((_, m)) = self.old.iter().find(|(o, _)| *o == id) {
                let all: &[u8] = (**m).as_ref();
                let shared: SharedBytes = m.clone();
                let chunks = decode_segment(all, id).map_err(|e| self.err(id, &e))?;
                for ch in chunks {
                    let Some(rows) = rows_of(reg, ch.series, ch.archive) else {
                        continue;
                    };
                    if named && u32::try_from(id).ok() != rows.seg_of(ch.chunk as usize) {
                        continue;
                    }
                    let start = ch.bytes.as_ptr() as usize - all.as_ptr() as usize;
                    rows.place_shared(
                        ch.chunk as usize,
                        shared.clone(),
                        start,
                        ch.bytes.len(),
                        id,
                    )?;
                }
                m.release();
                continue;
            }
            if named {
                continue;
            }
            let read = u32::try_from(id)
                .ok()
                .and_then(|i| Some((i, self.table.reads.read().ok()?.get(&i)?.clone())));
            if let Some((id32, r)) = read {
                // Ascending: a newer segment's chunk replaces an older one's.
                for sid in reg.ids() {
                    let keys = r.series_keys(sid).map_err(|e| self.err(id, &e))?;
                    for (_, a, c) in keys {
                        if let Some(rows) = rows_of(reg, sid, a) {
                            rows.place(c as usize, id32);
                        }
                    }
                }
                continue;
            }
            let (Ok(id32), Some(m)) = (
                u32::try_from(id),
                u32::try_from(id).ok().and_then(|i| self.table.get(i)),
            ) else {
                return Err(format!("segment {id} is not open"));
            };
            let all: &[u8] = (*m).as_ref();
            let view = SegView::open(all, id).map_err(|e| self.err(id, &e))?;
            // Keys are sorted: one lookup, and one placement, for each run of one series'
            // archive; archives that share a table and get the same chunks placed share the
            // result.
            let mut memo = rrd::rows::PlaceMemo::default();
            let mut cs: Vec<u32> = Vec::new();
            let mut ord = 0;
            while ord < view.len() {
                let (series, a, c) = view.key(ord);
                cs.clear();
                cs.push(c);
                ord += 1;
                while ord < view.len() {
                    let (s2, a2, c2) = view.key(ord);
                    if (s2, a2) != (series, a) {
                        break;
                    }
                    cs.push(c2);
                    ord += 1;
                }
                if let Some(rows) = rows_of(reg, series, a) {
                    rows.place_many(&cs, id32, &mut memo);
                }
            }
            m.release();
            // From now on its chunks are read one at a time.
            m.random();
        }
        for (_, s) in reg.iter() {
            for (a, data) in s.rrd.rra.iter().enumerate() {
                if let Some(c) = data.rows.unplaced() {
                    return Err(format!(
                        "series {}: archive {a} chunk {c} is in none of the checkpoint's segments",
                        s.name
                    ));
                }
            }
        }
        Ok(())
    }
}

/// The rows of archive `a` of series `id`, if it has them.
fn rows_of(reg: &mut Registry, id: u64, a: u32) -> Option<&mut rrd::Rows> {
    reg.by_id_mut(id)?
        .rrd
        .rra
        .get_mut(a as usize)
        .map(|r| &mut r.rows)
}

/// Entries for a series whose rows do not matter (every chunk unknown).
pub fn unknown_entries(schema: &rrd::Schema) -> Vec<Vec<ChunkEntry>> {
    let per = rrd::rows::chunk_rows_for(schema.ds.len());
    schema
        .rra
        .iter()
        .map(|d| {
            vec![ChunkEntry::Fill(rrd::num::DNAN.to_bits()); (d.row_cnt as usize).div_ceil(per)]
        })
        .collect()
}
