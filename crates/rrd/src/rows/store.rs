//! The rows against the store: what a checkpoint keeps of each chunk, rows rebuilt from a
//! checkpoint's parts, chunks placed in and read from segment files, rebased open chunks.

use super::*;

impl Rows {
    /// Number of chunks.
    pub fn chunk_count(&self) -> usize {
        self.segs.len()
    }

    /// Rows per chunk (the last chunk may have fewer): `CHUNK_VALUES / ds_cnt`, at least 1.
    #[inline]
    pub fn chunk_rows(&self) -> usize {
        if self.ds_cnt == 1 {
            // Without the division: writes ask on every value.
            CHUNK_VALUES
        } else {
            chunk_rows_for(self.ds_cnt as usize)
        }
    }

    /// What a checkpoint must keep of chunk `c` when replay from its snapshot rewrites the
    /// rows `fresh`: nothing that replay rebuilds whole (an unknown fill stands in), the
    /// version the open chunk was opened from if only fresh rows were written into it since,
    /// else the chunk as it is.
    pub fn keep(&self, c: usize, fresh: Fresh) -> Keep<'_> {
        self.keep_lazy(c, fresh)
            .unwrap_or_else(|| Keep::Values(self.open_now(c)))
    }

    /// The open chunk `c`'s current values (empty if chunk `c` is not open).
    pub fn open_now(&self, c: usize) -> std::borrow::Cow<'_, [f64]> {
        let Some(o) = self.open.as_ref().filter(|o| (o.idx as usize) == c) else {
            return std::borrow::Cow::Borrowed(&[]);
        };
        let mut all = Vec::with_capacity(self.chunk_len(c));
        self.open_values(o, &mut all);
        std::borrow::Cow::Owned(all)
    }

    /// [`Rows::keep`] without building the open chunk's values: `None` where they are what
    /// must be kept ([`Rows::open_now`] gives them; a checkpoint that stores a piece needs
    /// only what was written since, [`Rows::open_piece`], and reads nothing it was laid
    /// over).
    pub fn keep_lazy(&self, c: usize, fresh: Fresh) -> Option<Keep<'_>> {
        let lo = c * self.chunk_rows();
        let hi = (lo + self.chunk_rows()).min(self.row_cnt) - 1;
        fn sealed(ch: Chunk) -> Keep<'static> {
            match ch {
                Chunk::Fill(b) => Keep::Fill(b),
                Chunk::Packed(p) => Keep::Packed(p),
                Chunk::Stored(seg) => Keep::Stored(u64::from(seg)),
            }
        }
        let open = self.open.as_ref().filter(|o| (o.idx as usize) == c);
        let current = match open {
            Some(o) => match o.written() {
                Some((a, b)) if fresh.covers(lo + a as usize, lo + b as usize, self.row_cnt) => {
                    sealed(o.prev.clone())
                }
                None => sealed(o.prev.clone()),
                Some(_) => return self.keep_all_fresh(lo, hi, fresh, None),
            },
            None => sealed(self.chunk(c)),
        };
        self.keep_all_fresh(lo, hi, fresh, Some(current))
    }

    /// What to keep of a chunk of rows `lo..=hi` whose current version is `current` (`None`:
    /// the open chunk's values): where replay rewrites every row anything will do, and a
    /// stored version costs no more than the unknown fill.
    pub(super) fn keep_all_fresh<'a>(
        &self,
        lo: usize,
        hi: usize,
        fresh: Fresh,
        current: Option<Keep<'a>>,
    ) -> Option<Keep<'a>> {
        if !fresh.covers(lo, hi, self.row_cnt) {
            return current;
        }
        let stored = match &current {
            Some(Keep::Packed(p)) => p.stored().is_some(),
            Some(Keep::Stored(_)) => true,
            _ => false,
        };
        if stored {
            current
        } else {
            Some(Keep::Fill(crate::num::DNAN.to_bits()))
        }
    }

    /// Rows from a checkpoint's chunks (`parts.len()` must be the chunk count of `row_cnt`
    /// rows of `ds_cnt` values, and every part the right number of values).
    pub fn from_parts(row_cnt: u64, ds_cnt: usize, parts: Vec<Part>) -> Result<Rows, String> {
        let mut r = Rows::unknown(row_cnt, ds_cnt);
        let want = r.segs.len();
        if parts.len() != want {
            return Err(format!(
                "{} chunks where the archive has {want}",
                parts.len()
            ));
        }
        for (c, part) in parts.into_iter().enumerate() {
            r.put(c, part)?;
        }
        Ok(r)
    }

    /// `row_cnt` rows of `ds_cnt` values, every one unknown (to [`Rows::put`] chunks into).
    pub fn unknown(row_cnt: u64, ds_cnt: usize) -> Rows {
        Rows::empty(row_cnt as usize, ds_cnt)
    }

    /// Make chunks `c..c + n` "in the segments" (`fill` None) or every value `fill`'s bit
    /// pattern, as a checkpoint gives a run of them back: [`Rows::put`] for each, at once.
    pub fn put_run(&mut self, c: usize, n: usize, fill: Option<u64>) -> Result<(), String> {
        let end = c
            .checked_add(n)
            .filter(|&e| e <= self.segs.len())
            .ok_or_else(|| format!("chunks {c}+{n} past the archive's {}", self.segs.len()))?;
        if self.other.is_empty() && self.open.is_none() {
            match fill {
                None => {
                    Arc::make_mut(&mut self.segs)[c..end].fill(UNPLACED);
                    return Ok(());
                }
                Some(b) if b == self.fill => {
                    if self.segs[c..end].iter().any(|&s| s != 0) {
                        Arc::make_mut(&mut self.segs)[c..end].fill(0);
                    }
                    return Ok(());
                }
                Some(_) => {}
            }
        }
        for i in c..end {
            self.put(i, fill.map_or(Part::InSegments, Part::Fill))?;
        }
        Ok(())
    }

    /// Take the chunk table a checkpoint gave for these rows (version 4: each chunk "in the
    /// segments" names its segment there, the others 0), shared with every archive that
    /// names the same one. The rows must have exactly those chunks "in the segments"
    /// ([`Rows::put_run`] with no fill) and no open chunk.
    pub fn adopt_table(&mut self, table: Arc<Vec<u32>>) -> Result<(), String> {
        if table.len() != self.segs.len() || self.open.is_some() {
            return Err(format!(
                "chunk table of {} chunks for an archive of {}",
                table.len(),
                self.segs.len()
            ));
        }
        for (c, (&mine, &t)) in self.segs.iter().zip(table.iter()).enumerate() {
            if (mine == UNPLACED) != (t != 0) || t == UNPLACED {
                return Err(format!("chunk {c}: the chunk table does not match its run"));
            }
        }
        self.segs = table;
        Ok(())
    }

    /// Make chunk `c` (< [`Rows::chunk_count`]) be `part`, as a checkpoint gives it back.
    pub fn put(&mut self, c: usize, part: Part) -> Result<(), String> {
        if c >= self.segs.len() {
            return Err(format!("chunk {c} past the archive's {}", self.segs.len()));
        }
        let n = self.chunk_len(c);
        let ch = match part {
            Part::Fill(b) => Chunk::Fill(b),
            Part::Values(v) if v.len() == n => pack(&v),
            Part::Values(v) => {
                return Err(format!("chunk {c}: {} values, want {n}", v.len()));
            }
            Part::Packed(mut bytes, seg) => {
                let mut scratch = Vec::with_capacity(n);
                match decode_values(&bytes, n, &mut scratch) {
                    Ok(used) if used == bytes.len() => {}
                    Ok(_) => return Err(format!("chunk {c}: bytes after its values")),
                    Err(e) => return Err(format!("chunk {c}: {}", e.what)),
                }
                bytes.shrink_to_fit();
                Chunk::Packed(Arc::new(Packed {
                    bytes: PackedBytes::Owned(bytes),
                    seg: AtomicU64::new(seg),
                }))
            }
            Part::Shared {
                buf,
                start,
                len,
                seg,
            } => shared_chunk(buf, start, len, seg).map_err(|e| format!("chunk {c}: {e}"))?,
            Part::InSegments => Chunk::Stored(UNPLACED),
        };
        self.set_chunk(c, ch);
        Ok(())
    }

    /// Read stored chunks through `src` (the store these rows now belong to), as archive
    /// `archive` of series `series` there. Chunks stored under another source or key (rows
    /// copied from another store or series) are read into memory first, as not stored.
    pub fn adopt(&mut self, src: &Arc<dyn ChunkSource>, series: u64, archive: u32) {
        let same = self.src.as_ref().is_some_and(|s| {
            std::ptr::addr_eq(Arc::as_ptr(&s.src), Arc::as_ptr(src))
                && s.series == series
                && self.archive == archive
        });
        if !same && self.src.is_some() {
            for c in 0..self.segs.len() {
                if let ch @ Chunk::Stored(_) = self.chunk(c) {
                    let mut vals = Vec::new();
                    self.unpack_chunk(c, &ch, &mut vals);
                    self.set_chunk(c, pack(&vals));
                }
            }
            if let Some(mut o) = self.open.take() {
                if let Chunk::Stored(_) = o.prev {
                    let mut vals = Vec::new();
                    self.unpack_chunk(o.idx as usize, &o.prev, &mut vals);
                    o.prev = pack(&vals);
                }
                self.open = Some(o);
            }
        }
        self.archive = archive;
        self.src = Some(Source {
            src: src.clone(),
            series,
        });
    }

    /// Whether chunk `c` may be placed: a checkpoint had it "in the segments".
    pub(super) fn placeable(&self, c: usize) -> bool {
        match self.segs.get(c) {
            None => false,
            Some(0) => matches!(self.chunk(c), Chunk::Packed(p) if p.stored().is_some()),
            Some(_) => true,
        }
    }

    /// Chunk `c`, marked "in the segments" by a checkpoint, is in segment `seg` (segments
    /// are placed in ascending order: the newest wins). Returns false, changing nothing, if
    /// the checkpoint had the chunk elsewhere.
    pub fn place(&mut self, c: usize, seg: u32) -> bool {
        if seg == 0 || seg == UNPLACED {
            return false;
        }
        if let Some(&old) = self.segs.get(c).filter(|&&s| s != 0) {
            // Stored (or to be found): never in `other`, so the number is all there is. An
            // open chunk opened from that version reads it from the new segment too (its
            // version was stored again there, and the old file goes).
            self.set_seg(c, seg);
            if let Some(o) = self
                .open
                .as_mut()
                .filter(|o| (o.idx as usize) == c && matches!(o.prev, Chunk::Stored(s) if s == old))
            {
                o.prev = Chunk::Stored(seg);
            }
            return true;
        }
        let ok = self.placeable(c);
        if ok {
            self.set_chunk(c, Chunk::Stored(seg));
        }
        ok
    }

    /// [`Rows::place`] for chunks `cs` (ascending) of one segment at once. A shared table is
    /// not copied for each archive that shares it: the first one's result is remembered in
    /// `memo` and given to the others, so tables stay shared through a store's open.
    pub fn place_many(&mut self, cs: &[u32], seg: u32, memo: &mut PlaceMemo) {
        let direct = seg != 0
            && seg != UNPLACED
            && Arc::strong_count(&self.segs) > 1
            && cs
                .iter()
                .all(|&c| self.segs.get(c as usize).is_some_and(|&s| s != 0));
        if !direct {
            for &c in cs {
                self.place(c as usize, seg);
            }
            return;
        }
        let key = (Arc::as_ptr(&self.segs) as usize, seg, cs.to_vec());
        if let Some((_, new)) = memo.0.get(&key) {
            self.segs = new.clone();
            return;
        }
        let mut t = (*self.segs).clone();
        for &c in cs {
            t[c as usize] = seg;
        }
        let new = Arc::new(t);
        let old = std::mem::replace(&mut self.segs, new.clone());
        // The old table is kept alive with its result, so that its address names it.
        memo.0.insert(key, (old, new));
    }

    /// Like [`Rows::place`] for a chunk of an old (version 1) segment, held in its mapping.
    pub fn place_shared(
        &mut self,
        c: usize,
        buf: SharedBytes,
        start: usize,
        len: usize,
        seg: u64,
    ) -> Result<bool, String> {
        let ok = self.placeable(c);
        if ok {
            self.set_chunk(c, shared_chunk(buf, start, len, seg)?);
        }
        Ok(ok)
    }

    /// The segment chunk `c` is stored in, as the chunk table says (None: not stored, or
    /// not yet found).
    pub fn seg_of(&self, c: usize) -> Option<u32> {
        self.segs
            .get(c)
            .copied()
            .filter(|&s| s != 0 && s != UNPLACED)
    }

    /// The first chunk still "in the segments" but found in none.
    pub fn unplaced(&self) -> Option<usize> {
        self.segs.iter().position(|&s| s == UNPLACED)
    }

    /// Heap chunk `p` (chunk `c`) is now durably in segment `seg`: drop it from the heap
    /// (where it is still this version).
    pub fn settle(&mut self, c: usize, p: &Arc<Packed>, seg: u32) {
        let is_p = |ch: &Chunk| matches!(ch, Chunk::Packed(q) if Arc::ptr_eq(q, p));
        if seg == 0 || seg == UNPLACED || c >= self.segs.len() {
            return;
        }
        if is_p(&self.chunk(c)) {
            self.set_chunk(c, Chunk::Stored(seg));
        }
        if let Some(o) = self
            .open
            .as_mut()
            .filter(|o| (o.idx as usize) == c && is_p(&o.prev))
        {
            o.prev = Chunk::Stored(seg);
        }
    }

    /// The open chunk `c`'s values, as they are now, are durably stored in segment `seg` (a
    /// checkpoint stored its [`Keep::Values`]): let them go from memory. The chunk reads
    /// from that segment, and the next write opens it again on that version, holding only
    /// what it writes from then on. Nothing changes unless chunk `c` is the open one.
    pub fn rebase(&mut self, c: usize, seg: u32) {
        let open = self.open.as_ref().is_some_and(|o| (o.idx as usize) == c);
        if seg == 0 || seg == UNPLACED || !open {
            return;
        }
        // Not sealed: the values are not packed again, nor counted as sealed on the heap.
        self.open = None;
        self.set_chunk(c, Chunk::Stored(seg));
    }

    /// The sealed chunks on the heap that no segment holds yet (chunk index, packed
    /// version): what a checkpoint or a spill stores ([`Rows::settle`] then drops them).
    pub fn unstored(&self) -> impl Iterator<Item = (usize, &Arc<Packed>)> {
        self.other.iter().filter_map(|(c, ch)| match ch {
            Chunk::Packed(p) if p.stored().is_none() => Some((*c as usize, p)),
            _ => None,
        })
    }

    /// Add every segment a chunk of these rows (or a version an open chunk came from) is
    /// read from to `out`.
    pub fn segments_used(&self, out: &mut impl Extend<u64>) {
        let seg = |ch: &Chunk| match ch {
            Chunk::Stored(seg) => Some(u64::from(*seg)),
            Chunk::Packed(p) => p.stored(),
            Chunk::Fill(_) => None,
        };
        out.extend(
            self.segs
                .iter()
                .filter(|&&s| s != 0 && s != UNPLACED)
                .map(|&s| u64::from(s)),
        );
        out.extend(self.other.iter().filter_map(|(_, ch)| seg(ch)));
        out.extend(self.open.as_ref().and_then(|o| seg(&o.prev)));
    }
}
