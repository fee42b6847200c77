//! Writing rows: values set around the ring go to the open chunk, which is packed a group
//! at a time and sealed when the ring moves past it.

use super::*;

impl Rows {
    /// Open chunk `c` for writing (sealing the one open before).
    pub(super) fn open_chunk(&mut self, c: usize) -> &mut Open {
        if self.open.as_ref().is_none_or(|o| (o.idx as usize) != c) {
            let mut buf = match self.open.take() {
                Some(o) => self.seal_open(o),
                None => Vec::new(),
            };
            buf.clear();
            let prev = self.chunk(c);
            self.open = Some(Box::new(Open::new(c as u32, prev, buf)));
        }
        self.open.as_mut().expect("just opened")
    }

    /// Pack `o` into its chunk, keeping the version it was opened from if nothing changed
    /// (so a chunk already stored stays stored after replay rewrites the same values).
    /// Returns its buffer for reuse.
    pub(super) fn seal_open(&mut self, o: Box<Open>) -> Vec<u8> {
        let mut all = Vec::with_capacity(self.chunk_len(o.idx as usize));
        self.open_values(&o, &mut all);
        let new = pack(&all);
        let same = match (&new, &o.prev) {
            (Chunk::Fill(a), Chunk::Fill(b)) => a == b,
            (Chunk::Packed(a), Chunk::Packed(b)) => a.bytes() == b.bytes(),
            (Chunk::Packed(a), prev @ Chunk::Stored(_)) => self
                .with_stored(o.idx as usize, prev, |b| b == a.bytes())
                .unwrap_or(false),
            _ => false,
        };
        if let (false, Some(src)) = (same, &self.src) {
            if let Chunk::Packed(p) = &new {
                src.src.sealed(p.bytes().len());
            }
            if let Chunk::Packed(old) = &o.prev {
                if old.stored().is_none() {
                    src.src.unsealed(old.bytes().len());
                }
            }
        }
        self.set_chunk(o.idx as usize, if same { o.prev } else { new });
        let mut buf = o.buf;
        buf.clear();
        if buf.capacity() > self.chunk_rows() * (self.ds_cnt as usize) * 2 && !packing_deferred() {
            buf = Vec::new();
        }
        buf
    }

    /// Pack the open chunk's values left unpacked by [`with_packing_deferred`]: the whole
    /// groups writing them outside it would have packed, in one block run (see
    /// [`Open::pack_groups`]), and give back the buffer's spare room.
    pub fn pack_staged(&mut self) {
        let Some(mut o) = self.open.take() else {
            return;
        };
        o.pack_groups(self.chunk_len(o.idx as usize), true);
        if o.buf.capacity() > o.buf.len() + 8 * OPEN_GROUP {
            o.buf.shrink_to_fit();
        }
        self.open = Some(o);
    }

    /// Set value `i`; panics past the end, as a slice would.
    pub fn set(&mut self, i: usize, v: f64) {
        assert!(i < self.len(), "row value {i} out of {}", self.len());
        let (c, j, row) = if self.ds_cnt == 1 {
            // One DS (most RRDs): chunks of `CHUNK_VALUES` rows, a shift instead of the two
            // divisions below (a fifth of a write's own time in a replay).
            let c = i / CHUNK_VALUES;
            let j = i - c * CHUNK_VALUES;
            (c, j, j)
        } else {
            let per = self.chunk_rows() * (self.ds_cnt as usize);
            let c = i / per;
            let j = i - c * per;
            (c, j, j / (self.ds_cnt as usize).max(1))
        };
        self.open_chunk(c);
        let mut o = self.open.take().expect("just opened");
        if o.len() == 0 {
            o.start = j as u32;
        }
        let tail = (o.start + o.packed_n) as usize;
        let staged = o.staged_n();
        let end = tail + staged;
        if j == end && packing_deferred() {
            if o.buf.len() + 8 > o.buf.capacity() {
                // Room for the rest of the chunk at once: it is filled in this replay.
                o.buf.reserve_exact(8 * (self.chunk_len(c) - end));
            }
            o.buf.extend_from_slice(&v.to_bits().to_le_bytes());
        } else if j == end {
            if o.buf.len() + 8 > o.buf.capacity() {
                // Grown by a quarter, not doubled: an open chunk is most of what a series
                // holds in memory, and a doubled buffer is a quarter empty on average.
                let room = self.chunk_len(c).saturating_sub(end).min(OPEN_GROUP);
                let grow = (staged / 4).max(OPEN_GROWTH);
                o.buf
                    .reserve_exact(8 * grow.min(room.saturating_sub(staged)).max(1));
            }
            o.buf.extend_from_slice(&v.to_bits().to_le_bytes());
            if staged + 1 == OPEN_GROUP {
                // A group filled: packed in place of its values, if the chunk goes on.
                o.pack_groups(self.chunk_len(c), false);
            }
        } else if j >= tail && j < end {
            o.set_staged(j - tail, v);
        } else {
            // Not in order (or into the packed values): every value in memory from now on.
            let mut all = Vec::with_capacity(self.chunk_len(c));
            self.open_values(&o, &mut all);
            all[j] = v;
            o.stage_all(&all);
        }
        self.open = Some(o);
        let o = self.open.as_mut().expect("put back");
        let row = row as u32;
        o.written = match o.written() {
            Some((lo, hi)) => (lo.min(row), hi.max(row)),
            None => (row, row),
        };
    }

    /// Set row `row` to `vals` (`ds_cnt` values).
    pub fn set_row(&mut self, row: usize, vals: &[f64]) {
        for (ds, &v) in vals.iter().enumerate().take(self.ds_cnt as usize) {
            self.set(row * (self.ds_cnt as usize) + ds, v);
        }
    }

    /// Set every value of row `row` to `v`.
    pub fn fill_row(&mut self, row: usize, v: f64) {
        for ds in 0..(self.ds_cnt as usize) {
            self.set(row * (self.ds_cnt as usize) + ds, v);
        }
    }

    /// Pack the open chunk, leaving nothing open (memory at rest is the packed size).
    pub fn seal(&mut self) {
        if let Some(o) = self.open.take() {
            self.seal_open(o);
        }
    }
}
