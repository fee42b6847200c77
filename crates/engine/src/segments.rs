//! Segment files: archive chunks stored once, so that checkpoints need not rewrite rows.
//!
//! Archive rows live in memory as chunks ([`rrd::Rows`]); a sealed chunk does not change
//! until the ring comes round to it again. A checkpoint stores each sealed chunk the first
//! time it needs it, in a new segment file, and afterwards only says "in the segments"
//! (docs/FORMAT.md, "Segments"). Chunks whose rows replay rebuilds are not stored at all
//! ([`rrd::Rows::keep`]). A checkpoint writes one segment per retention class (the archive's
//! rows times its row span, rounded up to a power of two), so the chunks of a segment expire
//! about together and a segment file is removed soon after its last chunk is overwritten.
//!
//! Order of a checkpoint: segments written and synced, directory synced, checkpoint written
//! and synced ([`crate::ckptfile`]), then chunks marked stored and segments that the new
//! checkpoint no longer draws on removed. A crash at any point leaves the older checkpoint
//! and every segment it names; segments no checkpoint names are removed at open.

use crate::files;
use crate::series::Registry;
use crate::vfs::{Mapping, Vfs};
use codec::rrdbin::ChunkEntry;
use codec::segment::{decode_segment, segment_version, SegView, SegmentWriter};
use rrd::rows::{encode_values, ChunkSource, Fresh, Keep, Packed, SharedBytes};
use rrd::Rrd;
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::io;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, RwLock};

/// The mapped segment files that stored chunks are read from, by id: the store's
/// [`ChunkSource`]. A segment stays here while a chunk in memory may name it, even after
/// its file is removed (a mapping outlives the name).
#[derive(Default)]
pub struct SegTable {
    maps: RwLock<HashMap<u32, Arc<dyn Mapping>>>,
    /// Chunks that failed their checksum (or whose segment was gone) when read.
    pub damaged: AtomicU64,
}

impl SegTable {
    fn insert(&self, id: u32, m: Arc<dyn Mapping>) {
        self.maps.write().expect("segment table").insert(id, m);
    }

    fn get(&self, id: u32) -> Option<Arc<dyn Mapping>> {
        self.maps.read().expect("segment table").get(&id).cloned()
    }

    /// Keep only the mappings of `ids`.
    fn retain(&self, ids: &BTreeSet<u64>) {
        self.maps
            .write()
            .expect("segment table")
            .retain(|id, _| ids.contains(&u64::from(*id)));
    }
}

impl ChunkSource for SegTable {
    fn chunk(&self, seg: u32, key: (u64, u32, u32)) -> Option<(SharedBytes, usize, usize)> {
        let found = self.get(seg).and_then(|m| {
            let all: &[u8] = (*m).as_ref();
            let view = SegView::trusted(all)?;
            let (start, len) = view.chunk(view.find(key)?).ok()?;
            let shared: SharedBytes = m.clone();
            Some((shared, start, len))
        });
        if found.is_none() && self.damaged.fetch_add(1, Ordering::Relaxed) == 0 {
            eprintln!(
                "ringlet: stored chunk {key:?} of segment {seg} is damaged or missing; \
                 its rows read as unknown (further damage is counted, not logged)"
            );
        }
        found
    }
}

/// A chunk going into a new segment: where it is in memory (series id, archive, chunk; the
/// heap version, if it is one) and the segment it goes to.
struct Mark {
    series: u64,
    archive: usize,
    chunk: usize,
    heap: Option<Arc<Packed>>,
    seg: u64,
}

/// A chunk now durably in a segment, to drop from the heap ([`rrd::Rows::settle`], or
/// [`rrd::Rows::place`] for one moved out of a removed segment).
pub struct Settled {
    pub series: u64,
    pub archive: usize,
    pub chunk: usize,
    pub heap: Option<Arc<Packed>>,
    pub seg: u32,
}

/// The segments of one checkpoint being written.
pub struct Plan {
    next_id: u64,
    writers: BTreeMap<u32, SegmentWriter>,
    marks: Vec<Mark>,
    /// Segments whose files are present (the newest checkpoint's).
    present: BTreeSet<u64>,
    /// Segments the checkpoint's images draw on.
    pub live: BTreeSet<u64>,
    /// Bytes of the new segment files.
    pub bytes: u64,
}

/// The store's segments.
pub struct Segments {
    /// Segments the newest checkpoint draws on.
    pub live: BTreeSet<u64>,
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

/// Rows of each archive of `now` that replay from a snapshot rewrites: the snapshot had
/// written `rows_then` rows with `head` its state then (`None`: a checkpoint of the current
/// state, replay rewrites nothing).
pub fn fresh_rows(head: Option<(&Rrd, &[u64])>, now: &Rrd, rows_now: &[u64]) -> Vec<Fresh> {
    (0..now.rra.len())
        .map(|a| match head {
            None => Fresh::NONE,
            Some((h, rows_then)) => {
                let n = now.schema.rra[a].row_cnt as usize;
                let written = rows_now[a].saturating_sub(rows_then[a]) as usize;
                Fresh {
                    first: (h.rra[a].cur_row as usize + 1) % n.max(1),
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
        self.marks.push(Mark {
            series: id,
            archive: a,
            chunk: c,
            heap,
            seg: w.id(),
        });
        w.id()
    }

    /// The chunk entries of series `id` as `rows_of` holds it now, given the rows replay
    /// rewrites (`fresh`, per archive). Sealed chunks not stored yet go into this plan's
    /// segments, and so do stored ones whose segment file is gone.
    pub fn entries(&mut self, id: u64, now: &Rrd, fresh: &[Fresh]) -> Vec<Vec<ChunkEntry>> {
        let mut all = Vec::with_capacity(now.rra.len());
        for (a, data) in now.rra.iter().enumerate() {
            let rows = &data.rows;
            let class = class_of(now, a);
            let mut list = Vec::with_capacity(rows.chunk_count());
            for c in 0..rows.chunk_count() {
                list.push(match rows.keep(c, fresh[a]) {
                    Keep::Fill(b) => ChunkEntry::Fill(b),
                    Keep::Values(v) => {
                        let mut b = Vec::new();
                        encode_values(&v, &mut b);
                        ChunkEntry::Inline(b)
                    }
                    Keep::Packed(p) => {
                        let seg = match p.stored().filter(|s| self.present.contains(s)) {
                            Some(seg) => seg,
                            None => self.store(class, id, a, c, p.bytes(), Some(p.clone())),
                        };
                        self.live.insert(seg);
                        ChunkEntry::Segments
                    }
                    Keep::Stored(seg) if self.present.contains(&seg) => {
                        self.live.insert(seg);
                        ChunkEntry::Segments
                    }
                    Keep::Stored(_) => match rows.packed_bytes(c) {
                        // Its file was removed while a version the checkpoint did not keep
                        // still pointed at it: store it again.
                        Some(b) => {
                            let seg = self.store(class, id, a, c, &b, None);
                            self.live.insert(seg);
                            ChunkEntry::Segments
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
    /// Start the segments of a checkpoint.
    pub fn plan(&self) -> Plan {
        Plan {
            // 0 means "not stored" in a chunk: numbers start at 1.
            next_id: self.next_id.max(1),
            writers: BTreeMap::new(),
            marks: Vec::new(),
            present: self.live.clone(),
            live: BTreeSet::new(),
            bytes: 0,
        }
    }

    /// The source stored chunks are read from.
    pub fn source(&self) -> Arc<dyn ChunkSource> {
        self.table.clone()
    }

    /// Write the plan's new segments and make them durable (each file, then the directory);
    /// map them for reading.
    pub fn write(&mut self, plan: &mut Plan, vfs: &dyn Vfs, dir: &Path) -> io::Result<()> {
        self.next_id = self.next_id.max(plan.next_id);
        if plan.writers.is_empty() {
            return Ok(());
        }
        for (_, w) in std::mem::take(&mut plan.writers) {
            let id = w.id();
            let path = files::segment(dir, id);
            let (bytes, _) = w.finish();
            let mut f = vfs.open(&path, true)?;
            f.set_len(0)?;
            f.write_at(&bytes, 0)?;
            f.sync_all()?;
            plan.bytes += bytes.len() as u64;
            let id32 = u32::try_from(id)
                .map_err(|_| io::Error::other(format!("segment id {id} out of range")))?;
            let mapped = vfs.map(&path)?;
            mapped.random();
            self.table.insert(id32, mapped);
        }
        vfs.sync_dir(dir)
    }

    /// The plan's checkpoint is durable: mark its new chunks stored and remove the segments
    /// it no longer draws on (best effort: a leftover is removed at the next open). Returns
    /// the chunks the store can now drop from its heap.
    pub fn installed(&mut self, plan: Plan, vfs: &dyn Vfs, dir: &Path) -> Vec<Settled> {
        let mut out = Vec::with_capacity(plan.marks.len());
        for m in plan.marks {
            if let Some(p) = &m.heap {
                p.mark_stored(m.seg);
            }
            if let Ok(seg) = u32::try_from(m.seg) {
                out.push(Settled {
                    series: m.series,
                    archive: m.archive,
                    chunk: m.chunk,
                    heap: m.heap,
                    seg,
                });
            }
        }
        self.live = plan.live;
        let _ = self.remove_unused(vfs, dir);
        out
    }

    /// Drop the mappings of segments that neither the newest checkpoint nor any chunk in
    /// memory (`used`) names.
    pub fn retain(&mut self, used: &BTreeSet<u64>) {
        let keep: BTreeSet<u64> = used.union(&self.live).copied().collect();
        self.table.retain(&keep);
        self.old.retain(|(id, _)| keep.contains(id));
    }

    /// Remove every segment file the newest checkpoint does not name.
    pub fn remove_unused(&self, vfs: &dyn Vfs, dir: &Path) -> io::Result<()> {
        let mut removed = false;
        for name in vfs.list(dir)? {
            if let Some(id) = files::segment_id(&name) {
                if !self.live.contains(&id) {
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
    /// `few`: the store opens for a few series: only headers are checked (each chunk read
    /// checks its own key and bytes), see [`Segments::place_few`].
    pub fn open(vfs: &dyn Vfs, dir: &Path, live: &[u64], few: bool) -> Result<Segments, String> {
        let table = Arc::new(SegTable::default());
        let mut old = Vec::new();
        for &id in live {
            let path = files::segment(dir, id);
            let err = |e: &dyn std::fmt::Display| format!("{}: {e}", path.display());
            let mapped = vfs.map(&path).map_err(|e| err(&e))?;
            if few {
                mapped.random();
            }
            let all: &[u8] = (*mapped).as_ref();
            // Headers only: placing the chunks checks the rest (the keys, or a version 1
            // segment whole) as it reads them, once.
            if segment_version(all, id).map_err(|e| err(&e))? == 1 {
                old.push((id, mapped.clone()));
            } else {
                SegView::header_checked(all, id).map_err(|e| err(&e))?;
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
    /// has it. Reads the segments' keys, not their chunks; fails if one is in none.
    pub fn place(&self, reg: &mut Registry) -> Result<(), String> {
        self.place_in(reg, false)
    }

    /// [`Segments::place`] for a registry holding a few series: each of their chunks is
    /// looked up by key in the segments, newest first (a binary search in each), instead of
    /// reading every segment's keys.
    pub fn place_few(&self, reg: &mut Registry) -> Result<(), String> {
        self.place_in(reg, true)
    }

    fn place_in(&self, reg: &mut Registry, few: bool) -> Result<(), String> {
        let mut v2 = Vec::new();
        for &id in &self.live {
            if let Some((_, m)) = self.old.iter().find(|(o, _)| *o == id) {
                let all: &[u8] = (**m).as_ref();
                let shared: SharedBytes = m.clone();
                let chunks = decode_segment(all, id).map_err(|e| self.err(id, &e))?;
                for ch in chunks {
                    let Some(rows) = rows_of(reg, ch.series, ch.archive) else {
                        continue;
                    };
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
            let (Ok(id32), Some(m)) = (
                u32::try_from(id),
                u32::try_from(id).ok().and_then(|i| self.table.get(i)),
            ) else {
                return Err(format!("segment {id} is not open"));
            };
            if few {
                v2.push((id32, m));
                continue;
            }
            let all: &[u8] = (*m).as_ref();
            let view = SegView::open(all, id).map_err(|e| self.err(id, &e))?;
            for ord in 0..view.len() {
                let (series, a, c) = view.key(ord);
                if let Some(rows) = rows_of(reg, series, a) {
                    rows.place(c as usize, id32);
                }
            }
            m.release();
            // From now on its chunks are read one at a time.
            m.random();
        }
        if few {
            v2.reverse();
            let views: Vec<(u32, SegView<'_>)> = v2
                .iter()
                .filter_map(|(id, m)| Some((*id, SegView::trusted((**m).as_ref())?)))
                .collect();
            for (sid, s) in reg.iter_mut() {
                for (a, data) in s.rrd.rra.iter_mut().enumerate() {
                    for c in 0..data.rows.chunk_count() {
                        if !data.rows.placeable(c) {
                            continue;
                        }
                        let key = (sid, a as u32, c as u32);
                        if let Some((id, _)) = views.iter().find(|(_, v)| v.find(key).is_some()) {
                            data.rows.place(c, *id);
                        }
                    }
                }
            }
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
pub fn unknown_entries(head: &Rrd) -> Vec<Vec<ChunkEntry>> {
    let per = rrd::rows::chunk_rows_for(head.ds_cnt());
    head.schema
        .rra
        .iter()
        .map(|d| {
            vec![ChunkEntry::Fill(rrd::num::DNAN.to_bits()); (d.row_cnt as usize).div_ceil(per)]
        })
        .collect()
}
