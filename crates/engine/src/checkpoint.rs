//! Checkpoints: the whole state written to the older of two checkpoint files (full, or
//! lagged: as of a snapshot half a ring earlier), segments of stored chunks settled and
//! spilled, and the close with its mark of a clean stop.

use crate::error::out_of_space;
use crate::options::spill_budget;
use crate::snapshot::Snapshot;
use crate::{ckptfile, clean, segments, Error, Store};
use codec::checkpoint::CheckpointWriter;

impl Store {
    /// Every blob into checkpoint `w`, its heap chunks stored through `plan`; returns the
    /// chunks to mark stored once the checkpoint is durable ([`Store::blobs_stored`]).
    pub(crate) fn checkpoint_blobs(
        &self,
        w: &mut codec::checkpoint::CheckpointWriter,
        plan: &mut segments::Plan,
    ) -> Vec<(u64, usize, u32)> {
        let mut marks = Vec::new();
        for (id, b) in self.reg.blobs.in_order() {
            let (table, stored) = b.image(&mut |c, bytes| plan.store_blob(id, c, bytes));
            for &s in &table {
                if s != 0 {
                    plan.live.insert(u64::from(s));
                }
            }
            w.blob(id, &b.name, b.len(), &table);
            marks.extend(stored.into_iter().map(|(c, s)| (id, c, s)));
        }
        marks
    }

    /// Write the checkpoint of `snap` (replay starts at its position; complete at the log's
    /// end now); returns its size.
    pub(crate) fn write_lagged_checkpoint(&mut self, snap: Snapshot) -> Result<u64, Error> {
        let generation = self.log.ckpt_gen + 1;
        let mut w = CheckpointWriter::new(
            generation,
            snap.lsn,
            snap.seq,
            snap.next_id,
            self.log.end_lsn,
            snap.series.len(),
        );
        if self.opts.unmarked_reseeds {
            w = w.without_reseed_mark();
        }
        let mut file = self.begin_checkpoint(generation)?;
        let archives = snap.series.iter().map(|s| s.schema.rra.len()).sum();
        let mut plan = self
            .segs
            .checkpoint_plan(self.vfs.clone(), archives, self.newest_update());
        for s in &snap.series {
            let (live, cur_rows, rows_written) = s.parts();
            // Ids are never reused: a series with this id now is the one snapshotted.
            let entries = match self.reg.by_id(s.id) {
                Some(now) => {
                    let fresh = segments::fresh_rows(
                        Some((&cur_rows, &rows_written)),
                        &now.rrd,
                        &now.rows_written,
                    );
                    plan.entries(s.id, &now.rrd, &fresh)
                }
                // Removed later in the log: replay drops it, its rows never show.
                None => segments::unknown_entries(&s.schema),
            };
            w.series_head_chunked(s.id, &s.name, &s.schema, live, &cur_rows, &entries);
            stream(&mut w, &mut file)?;
        }
        // Blobs as they are now: replaying the log from the snapshot onto them gives them
        // again (crate::blob).
        let blobs = self.checkpoint_blobs(&mut w, &mut plan);
        let n = self.install_checkpoint(generation, snap.lsn, w, file, plan)?;
        self.blobs_stored(blobs);
        self.samples_at_ckpt = snap.samples;
        self.pieces_at_ckpt = snap.pieces;
        Ok(n)
    }

    /// Open the file checkpoint `generation` is written into as it is built.
    pub(crate) fn begin_checkpoint(&self, generation: u64) -> Result<ckptfile::Writing, Error> {
        if self.opts.only.is_some() {
            // A store opened for a few series must never write a checkpoint of them alone.
            return Err(Error::ReadOnly);
        }
        Ok(ckptfile::Writing::begin(
            self.vfs.as_ref(),
            &self.dir,
            generation,
        )?)
    }

    /// Finish checkpoint `generation` (replay from `lsn`) and make it the newest; returns its
    /// size with its new segments'. The segments go first: the checkpoint names them, and it
    /// is valid once its header is written, last.
    pub(crate) fn install_checkpoint(
        &mut self,
        generation: u64,
        lsn: u64,
        w: CheckpointWriter,
        mut file: ckptfile::Writing,
        mut plan: segments::Plan,
    ) -> Result<u64, Error> {
        let (at, tail, header) = w.finish_parts(&plan.live_ids());
        file.write_at(at, &tail)?;
        let len = at + tail.len() as u64;
        drop(tail);
        self.segs
            .write(&mut plan, self.vfs.as_ref(), &self.dir, true)?;
        if let Some(hook) = &self.opts.before_checkpoint {
            if let Err(e) = (hook.0)() {
                self.notices
                    .push(format!("before checkpoint {generation}: {e}"));
            }
        }
        file.finish(self.vfs.as_ref(), &header)?;
        self.log.checkpointed(generation, lsn);
        let n = len + plan.bytes;
        self.stats.checkpoints += 1;
        self.stats.checkpoint_bytes += n;
        self.stats.segment_bytes += plan.bytes - plan.open_bytes;
        self.stats.open_chunk_bytes += plan.open_bytes;
        // The chunks just stored leave the heap; segments no chunk names any more are let go.
        let settled = self.segs.installed(plan, self.vfs.as_ref(), &self.dir);
        self.settle(settled);
        self.reg.share_tables(None);
        let mut used = std::collections::BTreeSet::new();
        let mut unstored = 0u64;
        for (_, s) in self.reg.iter() {
            for a in &s.rrd.rra {
                a.rows.segments_used(&mut used);
                unstored += a
                    .rows
                    .unstored()
                    .map(|(_, p)| p.bytes().len() as u64)
                    .sum::<u64>();
            }
        }
        self.segs.retain(&used);
        self.segs
            .table
            .sealed
            .store(unstored, std::sync::atomic::Ordering::Relaxed);
        Ok(n)
    }

    /// Chunks now durably in segments: drop their heap versions.
    pub(crate) fn settle(&mut self, settled: Vec<segments::Settled>) {
        segments::settle(&mut self.reg, settled);
    }

    /// Once the heap holds more than [`Options::spill_bytes`] of sealed chunks no segment
    /// holds, store them now ([`segments::Segments::spill`]) rather than at the next
    /// checkpoint. A spill that fails (a full disk) costs memory, not data: the log holds
    /// those rows, the chunks stay on the heap, and the next try waits for another budget's
    /// worth; the files it left are removed by the next checkpoint or open.
    /// Returns the bytes it wrote.
    pub(crate) fn maybe_spill(&mut self) -> u64 {
        let budget = spill_budget(self.opts.spill_bytes, self.log.cap());
        if budget == 0 || self.opts.only.is_some() || self.health.failed() {
            return 0;
        }
        let sealed = self
            .segs
            .table
            .sealed
            .load(std::sync::atomic::Ordering::Relaxed);
        if sealed <= budget.max(self.spill_retry_at) {
            return 0;
        }
        match self
            .segs
            .spill(&self.reg, budget / 4, self.vfs.as_ref(), &self.dir)
        {
            Ok((settled, w)) => {
                self.settle(settled);
                self.reg.share_tables(None);
                self.spill_retry_at = 0;
                if w.chunks > 0 {
                    self.stats.spills += 1;
                    self.stats.spill_bytes += w.bytes;
                }
                w.bytes
            }
            Err(e) => {
                self.spill_retry_at = sealed.saturating_add(budget);
                self.notices.push(format!(
                    "could not store {sealed} bytes of sealed archive rows ahead of the next \
                     checkpoint ({e}); they stay in memory until it, or the next try"
                ));
                0
            }
        }
    }

    /// Write the whole state as the next checkpoint generation, covering the log up to
    /// `end_lsn`; returns its size. Codec states restart from the RRDs.
    pub(crate) fn write_checkpoint(&mut self) -> Result<u64, Error> {
        let generation = self.log.ckpt_gen + 1;
        let mut w = CheckpointWriter::new(
            generation,
            self.log.end_lsn,
            self.log.next_seq,
            self.reg.next_id,
            self.log.end_lsn,
            self.reg.len(),
        );
        if self.opts.unmarked_reseeds {
            w = w.without_reseed_mark();
        }
        let mut file = self.begin_checkpoint(generation)?;
        let archives = self.reg.each().map(|s| s.rrd.rra.len()).sum();
        let mut plan = self
            .segs
            .checkpoint_plan(self.vfs.clone(), archives, self.newest_update());
        for (id, s) in self.reg.iter() {
            let fresh = segments::fresh_rows(None, &s.rrd, &s.rows_written);
            let entries = plan.entries(id, &s.rrd, &fresh);
            w.series_chunked(id, &s.name, &s.rrd, &entries);
            stream(&mut w, &mut file)?;
        }
        let blobs = self.checkpoint_blobs(&mut w, &mut plan);
        let n = self.install_checkpoint(generation, self.log.end_lsn, w, file, plan)?;
        self.blobs_stored(blobs);
        self.samples_at_ckpt = self.samples_total;
        self.pieces_at_ckpt = self.pieces_total;
        self.snap = None;
        self.reg.reseed_all();
        // The next record says so: replay from the older checkpoint (should this one be
        // found damaged) restarts the codecs there as this writer did.
        if !self.opts.unmarked_reseeds {
            self.pending.reseed();
        }
        Ok(n)
    }

    /// The time of the latest update of any series (what a checkpoint takes as now).
    pub(crate) fn newest_update(&self) -> i64 {
        self.reg
            .each()
            .map(|s| s.rrd.last_up)
            .max()
            .unwrap_or(i64::MIN)
    }

    /// Commit pending changes, then write a checkpoint now (it makes the log before it
    /// reusable and shortens the next recovery).
    pub fn checkpoint(&mut self) -> Result<u64, Error> {
        self.writable()?;
        self.commit()?;
        self.unmark()?;
        // The log holds everything (the commit above): a checkpoint that cannot be written
        // leaves the older one and the log as they were.
        self.write_checkpoint().inspect_err(|e| {
            if out_of_space(e) {
                self.abandon_checkpoint();
            } else {
                self.health.fail();
            }
        })
    }

    /// Commit and release the lock, leaving the mark of a clean close. When the log since the
    /// newest checkpoint would slow every reader of one series after this close
    /// ([`Store::slow_for_readers`]) and a checkpoint would write no more than that log
    /// holds (the newest checkpoint's size as the measure: a writer on its own, pipe mode's
    /// sessions, writes little a close), a checkpoint comes first; one that finds the disk
    /// full is left for later.
    pub fn close(mut self) -> Result<(), Error> {
        if self.opts.only.is_none() && self.close_wants_checkpoint() {
            match self.checkpoint() {
                Ok(_) => {}
                Err(e) if out_of_space(&e) => {}
                Err(e) => return Err(e),
            }
        }
        self.mark_clean()
    }

    /// Whether a close now writes a checkpoint first ([`Store::close`]): the readers after it
    /// would be slow, or the writers, which open the whole store once the log leaves no room
    /// for a record before the ring's half ([`Store::partial_room`]); and it writes no more
    /// than the log it spares (the close's own commit counted).
    pub(crate) fn close_wants_checkpoint(&self) -> bool {
        // With what the close's own commit adds (a session's whole work may be pending).
        let since = self.log.since_checkpoint() + self.pending.bytes() as u64;
        // The newest checkpoint's size alone: a partial open asks too, knowing only its own
        // series, and must answer as the whole store's close would.
        (self.slow_for_readers() || !self.partial_room()) && self.newest_checkpoint_len() <= since
    }

    /// Whether a checkpoint now would spare the readers of one series a slow replay
    /// ([`Store::slow_for_readers`]) and cost at most `1/spare` of the log it spares (its size
    /// estimated as the newest checkpoint's, or 1 KiB a series if more). The daemon's stop
    /// asks with 8: a stop after days writes one, a short run's stop does not (its write
    /// load stays that of its commits).
    pub fn checkpoint_spares_readers(&self, spare: u64) -> bool {
        self.slow_for_readers()
            && self.checkpoint_estimate().saturating_mul(spare) <= self.log.since_checkpoint()
    }

    /// What a checkpoint now would write, about: the newest one's size, or 1 KiB a series
    /// (Cacti's eight archives take about 800 bytes) if more.
    fn checkpoint_estimate(&self) -> u64 {
        (self.newest_checkpoint_len()).max(self.reg.len() as u64 * 1024)
    }

    /// Bytes of the newest checkpoint's file (0 if it cannot be read: a checkpoint is due).
    fn newest_checkpoint_len(&self) -> u64 {
        let path = crate::files::checkpoint(&self.dir, self.log.ckpt_gen);
        (self.vfs.open(&path, false))
            .and_then(|f| f.len())
            .unwrap_or(0)
    }

    /// Everything accepted is committed: leave the mark of a clean close (the checkpoint
    /// generation, and where the log ends), so that a reader of a few series need not search
    /// the rest of the ring for committed records (docs/DURABILITY.md). It goes with the
    /// last commit's record, under its one sync (or alone, with a sync of its own, when
    /// nothing was pending or a checkpoint came after the record); the next commit's record
    /// clears it. Nothing for a read-only store.
    pub fn mark_clean(&mut self) -> Result<(), Error> {
        if self.read_only() {
            return Ok(());
        }
        self.closing = true;
        let committed = self.commit();
        self.closing = false;
        committed?;
        let m = self.log.mark();
        if self.disk_mark != Some(m) {
            self.writable()?;
            let written = self.log.ring.write_mark(&clean::encode(&m));
            written
                .and_then(|()| self.log.ring.sync())
                .inspect_err(|_| self.health.fail())?;
            self.disk_mark = Some(m);
        }
        Ok(())
    }

    /// Clear the mark of a clean close, durably, before writing anything but a record after
    /// it (a checkpoint).
    pub(crate) fn unmark(&mut self) -> Result<(), Error> {
        if self.disk_mark.is_some() {
            let cleared = self.log.ring.write_mark(&[0; clean::LEN]);
            cleared
                .and_then(|()| self.log.ring.sync())
                .inspect_err(|_| self.health.fail())?;
            self.disk_mark = None;
        }
        Ok(())
    }
}

/// A checkpoint is written a megabyte at a time as it is built, not held whole in memory.
pub(crate) const CHECKPOINT_WRITE: usize = 1 << 20;

/// Write what `w` has built so far, once it is [`CHECKPOINT_WRITE`] bytes.
pub(crate) fn stream(w: &mut CheckpointWriter, file: &mut ckptfile::Writing) -> Result<(), Error> {
    if let Some((at, bytes)) = w.take_written(CHECKPOINT_WRITE) {
        file.write_at(at, &bytes)?;
    }
    Ok(())
}
