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
use crate::vfs::Vfs;
use codec::rrdbin::ChunkEntry;
use codec::segment::{decode_segment, SegmentWriter};
use rrd::rows::{encode_values, Fresh, Keep, Packed, Part, SharedBytes};
use rrd::Rrd;
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::io;
use std::path::Path;
use std::sync::Arc;

/// Where each chunk's bytes are, by (series id, archive, chunk): the newest segment's id,
/// that segment's mapped bytes, and the chunk's offset and length in them.
pub type ChunkMap = HashMap<(u64, u32, u32), (u64, SharedBytes, usize, usize)>;

/// The segments of one checkpoint being written.
pub struct Plan {
    next_id: u64,
    writers: BTreeMap<u32, SegmentWriter>,
    /// Chunks going into the new segments, to mark stored once they are durable.
    marks: Vec<(Arc<Packed>, u64)>,
    /// Segments the checkpoint's images draw on.
    pub live: BTreeSet<u64>,
    /// Bytes of the new segment files.
    pub bytes: u64,
}

/// The store's segments.
#[derive(Debug)]
pub struct Segments {
    /// Segments the newest checkpoint draws on.
    pub live: BTreeSet<u64>,
    /// Number for the next new segment.
    pub next_id: u64,
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
    /// The chunk entries of series `id` as `rows_of` holds it now, given the rows replay
    /// rewrites (`fresh`, per archive). Sealed chunks not stored yet go into this plan's
    /// segments.
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
                        encode_values(v, &mut b);
                        ChunkEntry::Inline(b)
                    }
                    Keep::Packed(p) => {
                        let seg = match p.stored() {
                            Some(seg) => seg,
                            None => {
                                let next_id = &mut self.next_id;
                                let w = self.writers.entry(class).or_insert_with(|| {
                                    *next_id += 1;
                                    SegmentWriter::new(*next_id - 1, class)
                                });
                                w.chunk(id, a as u32, c as u32, p.bytes());
                                self.marks.push((p.clone(), w.id()));
                                w.id()
                            }
                        };
                        self.live.insert(seg);
                        ChunkEntry::Segments
                    }
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
            live: BTreeSet::new(),
            bytes: 0,
        }
    }

    /// Write the plan's new segments and make them durable (each file, then the directory).
    pub fn write(&mut self, plan: &mut Plan, vfs: &dyn Vfs, dir: &Path) -> io::Result<()> {
        self.next_id = self.next_id.max(plan.next_id);
        if plan.writers.is_empty() {
            return Ok(());
        }
        for (_, w) in std::mem::take(&mut plan.writers) {
            let path = files::segment(dir, w.id());
            let bytes = w.finish();
            let mut f = vfs.open(&path, true)?;
            f.set_len(0)?;
            f.write_at(&bytes, 0)?;
            f.sync_all()?;
            plan.bytes += bytes.len() as u64;
        }
        vfs.sync_dir(dir)
    }

    /// The plan's checkpoint is durable: mark its new chunks stored and remove the segments
    /// it no longer draws on (best effort: a leftover is removed at the next open).
    pub fn installed(&mut self, plan: Plan, vfs: &dyn Vfs, dir: &Path) {
        for (p, seg) in plan.marks {
            p.mark_stored(seg);
        }
        self.live = plan.live;
        let _ = self.remove_unused(vfs, dir);
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

    /// The segments of a checkpoint naming `live`: map and check them all, and number new
    /// ones after every segment file present. The chunks stay in the mapped files (read
    /// through the page cache when a read needs them), not on the heap.
    pub fn open(vfs: &dyn Vfs, dir: &Path, live: &[u64]) -> Result<(Segments, ChunkMap), String> {
        let mut map = ChunkMap::new();
        for &id in live {
            let path = files::segment(dir, id);
            let err = |e: &dyn std::fmt::Display| format!("{}: {e}", path.display());
            let mapped = vfs.map(&path).map_err(|e| err(&e))?;
            let shared: SharedBytes = mapped.clone();
            let all: &[u8] = (*mapped).as_ref();
            for ch in decode_segment(all, id).map_err(|e| err(&e))? {
                let start = ch.bytes.as_ptr() as usize - all.as_ptr() as usize;
                // Segments are read in ascending order: a later one holds the newer version.
                map.insert(
                    (ch.series, ch.archive, ch.chunk),
                    (id, shared.clone(), start, ch.bytes.len()),
                );
            }
            // The check read every page: they stay in the page cache, not in the process.
            mapped.release();
        }
        let mut next_id = live.iter().max().map_or(1, |m| m + 1);
        if let Ok(names) = vfs.list(dir) {
            for id in names.iter().filter_map(|n| files::segment_id(n)) {
                next_id = next_id.max(id + 1);
            }
        }
        let segs = Segments {
            live: live.iter().copied().collect(),
            next_id,
        };
        Ok((segs, map))
    }
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

/// Rows for series `id`'s archive `a` from its checkpoint entries and the segments.
pub fn parts(
    map: &mut ChunkMap,
    id: u64,
    a: usize,
    entries: Vec<ChunkEntry>,
) -> Result<Vec<Part>, String> {
    entries
        .into_iter()
        .enumerate()
        .map(|(c, e)| match e {
            ChunkEntry::Fill(b) => Ok(Part::Fill(b)),
            ChunkEntry::Inline(bytes) => Ok(Part::Packed(bytes, 0)),
            ChunkEntry::Segments => match map.remove(&(id, a as u32, c as u32)) {
                Some((seg, buf, start, len)) => Ok(Part::Shared {
                    buf,
                    start,
                    len,
                    seg,
                }),
                None => Err(format!(
                    "series {id} archive {a} chunk {c} is in none of the checkpoint's segments"
                )),
            },
        })
        .collect()
}
