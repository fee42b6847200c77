//! Commits: the pending changes of every series in one record appended to the log ring and
//! synced, a checkpoint standing in when the ring is full, the ring grown with the series.

use crate::error::out_of_space;
use crate::logpos::MarkWrite;
use crate::snapshot::Snapshot;
use crate::{files, ring, CommitStats, Error, RecordCost, Store};
use codec::frame::framed_len;

impl Store {
    /// Whether a commit is due: changes are pending and the size limit or the commit
    /// interval has been reached (a daemon's timer can poll this).
    pub fn commit_due(&self) -> bool {
        let pending = !self.pending.record_is_empty()
            || !self.reg.dirty.is_empty()
            || self.reg.blobs.has_changes();
        pending
            && self
                .pending
                .due(self.opts.max_pending_bytes, self.opts.commit_interval)
    }

    /// Commit if the size or time trigger says so.
    pub(crate) fn maybe_commit(&mut self) -> Result<(), Error> {
        if self.commit_due() {
            self.commit()?;
        }
        Ok(())
    }

    /// Make everything accepted so far durable: one appended record, one fdatasync.
    pub fn commit(&mut self) -> Result<CommitStats, Error> {
        if self.read_only() {
            // Nothing can be pending: every write was refused.
            return Ok(CommitStats::default());
        }
        self.writable()?;
        // A panic from here on (a bug) leaves `busy` set and the store refusing writes, as a
        // failed write does: the pending data may be half taken, and must not be dropped
        // silently while later commits go on.
        self.health.begin();
        let r = self.commit_inner();
        self.health.end();
        r
    }

    pub(crate) fn commit_inner(&mut self) -> Result<CommitStats, Error> {
        self.pending.commit_begins();
        if self.pending.record_is_empty()
            && self.reg.dirty.is_empty()
            && !self.reg.blobs.has_changes()
        {
            if self.health.owed_checkpoint().is_some() {
                // Nothing new, but what an earlier commit took is not durable yet.
                let bytes = self.checkpoint_for_commit()?;
                return Ok(CommitStats {
                    bytes,
                    ..CommitStats::default()
                });
            }
            return Ok(CommitStats::default());
        }
        let mut rec = self.pending.take_record();
        if self.opts.block_version != 0 {
            rec.block_version(self.opts.block_version);
        }
        let version = rec.block().version();
        let mut stats = CommitStats::default();
        // The most samples one series has in the record (crate::SAMPLE_PIECES).
        let mut most = 0u64;
        let mut dirty = std::mem::take(&mut self.reg.dirty);
        // The block codes ids as gaps: ascending.
        dirty.sort_unstable();
        // Room for about the last commit's samples: a buffer that doubles as it grows holds
        // the old and the new copy at once (a million series' commit is ~50 MB); pages of
        // the room not written are never touched.
        rec.reserve(self.log.last_record + self.log.last_record / 8);
        // Updates that sealed chunks copied their tables: share them again.
        self.reg.share_tables(Some(&dirty));
        for id in dirty {
            if let Some(s) = self.reg.by_id_mut(id) {
                let (chunk, bits, count, note) = s.take_chunk();
                if count == 0 {
                    continue;
                }
                if self.opts.sample_entries {
                    rec.samples(id, count, &chunk);
                } else if let Some(row) = (count == 1 && version >= 2)
                    .then(|| codec::sample::row_of(&chunk, bits, note, &s.codec, version >= 3))
                    .flatten()
                {
                    rec.block_row(id, &row);
                } else {
                    rec.block_series(id, count, &chunk, bits);
                }
                stats.series += 1;
                stats.samples += count as usize;
                most = most.max(count);
            }
        }
        if let Err(e) = self.blob_entries(&mut rec) {
            self.health.fail();
            return Err(e);
        }
        let time_bits = self.pending.taken();
        let block_cost = rec.block().cost();
        let entries_len = rec.len();
        // Written from the entries as they were built, not from a copy (nor a framed one).
        let parts = rec.finish_parts();
        let payload_len: usize = parts.iter().map(|p| p.len()).sum();
        self.log.last_record = parts[3].len();
        let framed = framed_len(payload_len, self.log.ring.page);
        let too_big = payload_len > u32::MAX as usize;
        self.samples_total += stats.samples as u64;
        self.pieces_total += stats.series as u64
            + crate::record_pieces(payload_len)
            + most.saturating_mul(crate::SAMPLE_PIECES);
        let cost = RecordCost::of(&parts, entries_len, &block_cost, time_bits, framed);
        // A failed write of the log leaves the store refusing writes; a failed checkpoint
        // that stood in for the record leaves it writable, every commit writing a checkpoint
        // until one is (`must_checkpoint`).
        let n = self.write_commit(&parts, framed, too_big)?;
        let spilled = self.maybe_spill();
        self.segs.table.release_all();
        stats.bytes = n + spilled;
        if n >= framed {
            self.stats.record_cost.add(&cost);
        }
        self.stats.commits += 1;
        self.stats.samples_committed += stats.samples as u64;
        Ok(stats)
    }

    /// Put one commit's record on disk; returns the bytes written (record and any
    /// checkpoint). The record goes after the last one if the ring has room before the newest
    /// checkpoint's start; otherwise (or if it is too large to frame) a full checkpoint
    /// holding this commit's effect is written instead of the record. After an appended
    /// record, [`Store::after_append`] keeps the ring ahead with lagged checkpoints.
    pub(crate) fn write_commit(
        &mut self,
        payload: &[&[u8]],
        framed: u64,
        too_big: bool,
    ) -> Result<u64, Error> {
        if too_big || self.health.owed_checkpoint().is_some() || !self.log.has_room(framed) {
            if self.is_partial() {
                // What the commit took from the series is in no record: nothing more may be
                // committed in this process (the command fails; nothing of it was written).
                self.health.fail();
                return Err(Error::Invalid(format!(
                    "a commit of {framed} bytes needs a checkpoint, which a store opened \
                     for a few series cannot write: nothing was written"
                )));
            }
            self.unmark()?;
            return self.checkpoint_for_commit();
        }
        self.append(payload, framed)
            .inspect_err(|_| self.health.fail())?;
        // The commit is durable now, whatever happens to the checkpoint. One that could not
        // be written (a full disk) leaves the older checkpoint and the log as they were: the
        // next commits try again while the ring has room.
        match self.after_append() {
            Ok(n) => Ok(framed + n),
            Err(e) if !self.health.failed() && out_of_space(&e) => {
                self.abandon_checkpoint();
                self.notices.push(format!(
                    "could not write a checkpoint ({e}); the next commits try again, and once \
                     the log ring is full ({} of {} bytes used now) commits fail until one is \
                     written",
                    self.log.since_checkpoint(),
                    self.log.cap()
                ));
                Ok(framed)
            }
            Err(e) => {
                // Any other failure (EIO: what reached the disk is not known) leaves the
                // store refusing writes; this commit stands.
                self.health.fail_after_commit(e.to_string());
                Ok(framed)
            }
        }
    }

    /// The whole state as a checkpoint, in place of a commit's record (the ring has no room
    /// for it, the record is too large, or an earlier such checkpoint failed). On failure the
    /// store stays writable and the next commit tries again: the state in memory holds what
    /// this commit took, and the newest checkpoint and the log are as they were.
    pub(crate) fn checkpoint_for_commit(&mut self) -> Result<u64, Error> {
        match self.write_checkpoint() {
            Ok(n) => {
                if self.health.checkpoint_written() {
                    self.notices
                        .push("a checkpoint was written: commits go on".to_string());
                }
                Ok(n)
            }
            Err(e) if out_of_space(&e) => {
                self.abandon_checkpoint();
                self.health.owe_checkpoint(e.to_string());
                Err(e)
            }
            Err(e) => {
                self.health.fail();
                Err(e)
            }
        }
    }

    /// After a checkpoint failed: give back what it wrote (segment files no checkpoint names,
    /// a temporary file), best effort: on a full disk that space is what the next try needs.
    pub(crate) fn abandon_checkpoint(&mut self) {
        let _ = self.segs.remove_unused(self.vfs.as_ref(), &self.dir);
        for p in files::checkpoints(&self.dir) {
            let tmp = files::tmp(&p);
            if self.vfs.exists(&tmp).unwrap_or(false) {
                let _ = self.vfs.remove(&tmp);
            }
        }
    }

    /// Why every commit now has to write a checkpoint (an earlier one that stood in for a
    /// commit's record failed), if one has to.
    pub fn must_checkpoint(&self) -> Option<&str> {
        self.health.owed_checkpoint()
    }

    /// With nothing pending (a commit just ended), the in-memory state is the committed one:
    /// take a snapshot once the log since the newest checkpoint fills half the ring, and write
    /// the lagged checkpoint of that snapshot once it fills seven eighths. So a checkpoint
    /// comes every half ring of log and frees half the ring, replay from it rebuilds the
    /// archive rows written in the last three eighths of the ring before it, and the last
    /// eighth is headroom for the next records. Returns the checkpoint bytes written.
    pub(crate) fn after_append(&mut self) -> Result<u64, Error> {
        if self.is_partial() {
            // Snapshots and checkpoints hold every series: the next whole open's. (A
            // partial open leaves room for its record before the ring's half.)
            return Ok(0);
        }
        if let Some(cap) = self.ring_wanted() {
            return self.grow_ring(cap);
        }
        let used = self.log.since_checkpoint();
        let cap = self.log.cap();
        let mut written = 0;
        if self.reg.hw_series > 0 {
            // Holt-Winters series read archive rows as they update (the season ahead) and
            // their smoothings rewrite whole archives: a lagged checkpoint, which holds rows
            // as they are when it is written and leaves out those replay writes again, does
            // not give their state at its snapshot. Whole checkpoints at the log's end, every
            // half ring, while any such series exists.
            self.snap = None;
            if used >= cap / 2 {
                written = self.write_checkpoint()?;
            }
            return Ok(written);
        }
        if used >= cap - cap / 8 {
            if let Some(snap) = self.snap.take() {
                written = self.write_lagged_checkpoint(snap)?;
            }
        }
        if self.snap.is_none() && self.log.since_checkpoint() >= cap / 2 {
            self.snap = Some(Snapshot::take(
                &self.reg,
                self.log.end_lsn,
                self.log.next_seq,
                self.samples_total,
                self.pieces_total,
            ));
            self.reg.reseed_all();
            self.pending.reseed();
        }
        Ok(written)
    }

    /// The size of ring the series call for, when it is larger than the ring: 1.5 times
    /// `series x log_per_series`, in whole 64 KiB (so the next growth is a third of the
    /// series away, and a million series created one by one grow the ring about ten times).
    pub(crate) fn ring_wanted(&self) -> Option<u64> {
        let per = self.opts.log_per_series;
        let series = self.reg.len();
        if per == 0 || series < self.grow_retry_at {
            return None;
        }
        let need = (series as u64).checked_mul(per)?;
        if need <= self.log.cap() {
            return None;
        }
        (need.checked_add(need / 2)?).checked_next_multiple_of(64 << 10)
    }

    /// Replace the ring by an empty one of `cap` bytes: built beside the log (`log.tmp`),
    /// then a full checkpoint (after it no record of the log is needed), then the new ring
    /// renamed over the log. A crash before the rename leaves the old log, which the
    /// checkpoint serves as well (the next open removes `log.tmp`); after it, the new one.
    /// A ring that cannot be built (no space) leaves the store as it was, with a notice.
    pub(crate) fn grow_ring(&mut self, cap: u64) -> Result<u64, Error> {
        let old = self.log.cap();
        if let Err(e) = self
            .log
            .ring
            .prepare_larger(self.vfs.as_ref(), &self.dir, cap)
        {
            let _ = ring::LogRing::remove_unfinished(self.vfs.as_ref(), &self.dir);
            let series = self.reg.len();
            self.grow_retry_at = series + series / 4 + 1;
            self.notices.push(format!(
                "cannot grow the log ring from {old} to {cap} bytes for {series} series \
                 (checkpoints stay as frequent as they are): {e}"
            ));
            return Ok(0);
        }
        let n = self.write_checkpoint().inspect_err(|_| {
            drop(ring::LogRing::remove_unfinished(
                self.vfs.as_ref(),
                &self.dir,
            ))
        })?;
        self.log.ring = match ring::LogRing::replace(self.vfs.as_ref(), &self.dir)
            .inspect_err(|_| self.health.fail())?
        {
            Ok(ring) => ring,
            Err(why) => {
                self.health.fail();
                return Err(Error::Corrupt {
                    file: files::log(&self.dir),
                    offset: 0,
                    what: why,
                });
            }
        };
        // The new ring's superblock page holds no mark.
        self.disk_mark = None;
        self.stats.rings_grown += 1;
        self.notices.push(format!(
            "log ring grown from {old} to {cap} bytes for {} series",
            self.reg.len()
        ));
        Ok(n)
    }

    /// What the store did or could not do that the operator should hear about (a log ring
    /// grown, or not), oldest first; each is returned once.
    pub fn take_notices(&mut self) -> Vec<String> {
        std::mem::take(&mut self.notices)
    }

    /// The mark of a clean close goes under the same sync: set after this record when the
    /// store is closing, cleared when one is on the disk.
    pub(crate) fn append(&mut self, payload: &[&[u8]], framed: u64) -> Result<(), Error> {
        let mark = if self.closing {
            Some(MarkWrite::SetAfter)
        } else {
            self.disk_mark.map(|_| MarkWrite::Clear)
        };
        let on_disk = self.log.append(payload, framed, mark)?;
        if mark.is_some() {
            self.disk_mark = on_disk;
        }
        self.stats.log_bytes += framed;
        self.stats.record_bytes += payload.iter().map(|p| p.len() as u64).sum::<u64>();
        Ok(())
    }
}
