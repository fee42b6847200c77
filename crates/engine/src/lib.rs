//! The ringlet store: many RRDs in one directory, time-major commits, recovery.
//!
//! Updates are applied in memory (`Rrd::apply`) and their raw `Sample`s are encoded into a
//! per-series pending chunk. A commit appends ONE record to the log ring holding every
//! change since the previous commit (creates, removes, samples of every series), then
//! `fdatasync`s. Before the ring would overwrite records the newest checkpoint still needs,
//! a checkpoint (the full state) is written instead, to the older of two checkpoint files.
//! Opening replays the records after the newest valid checkpoint. Modules: [`files`] (names),
//! [`vfs`] and [`sim`] (file access, real and simulated), [`ring`] (the log file),
//! [`ckptfile`] (checkpoint files), [`series`] (the registry), [`recovery`] (open) and
//! [`replay`] (applying records, in parallel across series).
//! The bytes are the codec crate's; docs/FORMAT.md and docs/DURABILITY.md describe both.

pub mod blob;
mod checkpoint;
pub mod ckptfile;
pub mod clean;
mod commit;
mod error;
pub mod files;
mod health;
pub mod ids;
mod logpos;
mod name;
mod options;
mod pending;
pub mod recovery;
pub mod replay;
pub mod ring;
pub mod segments;
pub mod series;
pub mod sim;
pub mod snapshot;
mod stats;
pub mod vfs;

pub use error::Error;
pub use name::{normalize_name, BadName};
pub use options::{
    log_per_series_from_env, log_size_from_env, parse_any_size, parse_size, spill_budget,
    spill_bytes_from_env, Hook, Options, DEFAULT_LOG_PER_SERIES, DEFAULT_SPILL_BYTES, SPILL_AUTO,
};
pub use recovery::{Cut, RecoveryReport};
pub use stats::{CommitStats, RecordCost, StoreStats};
pub use vfs::{CountingFs, RealFs, VFile, Vfs};

use codec::frame::PAGE;
use error::out_of_space;
use rrd::{ApplyError, RowWrite, Rrd, Sample};
use series::Registry;
use snapshot::Snapshot;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// Pieces of log (a series' samples in one record) past which a reader of one series spends
/// more than a few milliseconds: it decodes where every series' samples lie in each record it
/// reads (the sample block's lengths are one arithmetic code), about 250-330 ns a piece on
/// this project's 2-core machine (2026-11-29: `ringlet --store S last` of one of 5,000
/// Cacti-like series over 1.44 M pieces took 0.37 s; of one of 300 over 18,300, 6 ms more
/// than with no log). A clean close past it writes a checkpoint ([`Store::close`]; the
/// daemon's stop too), so that one-shot commands after it replay little.
pub const READER_PIECES: u64 = 8_192;

/// A record counts as this many pieces towards [`READER_PIECES`]: reading it, checking its
/// checksum and decoding its entries cost a reader about what decoding as many pieces does
/// (2026-11-29: 3,026 records of one piece each, a log of one-shot updates, cost a reader
/// 13.5 ms, 4.5 us a record).
pub const RECORD_PIECES: u64 = 16;

/// ... and every this many bytes of its payload as one more: reading and checking them, and
/// stepping over entries (a record that created 5,000 series, 5 MB of images a reader of
/// one series does not decode, cost it 5 ms, about 20,000 pieces' worth).
pub const PIECE_BYTES: u64 = 256;

/// ... and every sample of the one series of the record that has the most as this many: a
/// reader of a series applies its samples to its archives, and the one with the most is
/// the slowest to read (2026-11-29: 2,880 one-minute samples of 4 data sources, Cacti's
/// eight archives, cost a reader 8 ms, 2.8 us a sample; a store that one `ringlet -`
/// session filled took 10 ms to open where one checkpointed takes 3).
pub const SAMPLE_PIECES: u64 = 16;

/// What a record of `payload_len` bytes costs a reader of one series besides its pieces
/// ([`RECORD_PIECES`], [`PIECE_BYTES`]): counted the same by a commit and by replay.
pub(crate) fn record_pieces(payload_len: usize) -> u64 {
    RECORD_PIECES + payload_len as u64 / PIECE_BYTES
}

/// A series' handle ([`Store::series_id`]): its id, never reused in a store.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct SeriesId(u64);

/// A store directory, opened for reading and writing by this process alone.
pub struct Store {
    vfs: Arc<dyn Vfs>,
    dir: PathBuf,
    opts: Options,
    _lock: vfs::LockGuard,
    /// The log ring and where it stands ([`logpos::Log`]).
    log: logpos::Log,
    reg: Registry,
    /// Segment files of stored archive chunks.
    segs: segments::Segments,
    /// The state at a past commit boundary, for the next (lagged) checkpoint.
    snap: Option<Snapshot>,
    /// Creates, removes (and the samples that preceded a removal), in order.
    /// The record the next commit writes, and what is pending in all ([`pending::Pending`]).
    pending: pending::Pending,
    /// Whether writes are refused, and why ([`health::Health`]).
    health: health::Health,
    /// The mark of a clean close in the log's superblock page, as it is on the disk (None:
    /// zeros or nothing valid) ([`Store::mark_clean`]).
    disk_mark: Option<clean::Mark>,
    /// The commit under way is the closing one: its record sets the mark.
    closing: bool,
    /// Opened for a few series, the open found damage that a writer of the whole store
    /// would have repaired with a checkpoint ([`Store::partial_is_safe`]).
    owed: bool,
    /// Samples in the log since the store was created (as far as this process knows: those
    /// replayed at open and committed since), and as many at the newest checkpoint's
    /// position: [`Store::samples_since_checkpoint`].
    samples_total: u64,
    samples_at_ckpt: u64,
    /// The same for pieces (a series' samples in one record): what a reader of one series
    /// decodes its way past ([`Store::pieces_since_checkpoint`]).
    pieces_total: u64,
    pieces_at_ckpt: u64,
    /// After a ring could not be grown: the number of series at which to try again.
    grow_retry_at: usize,
    /// Sealed bytes a spill waits for after one failed ([`Store::maybe_spill`]).
    spill_retry_at: u64,
    /// What the operator should hear about (a ring grown, or not), for the caller to log.
    notices: Vec<String>,
    report: RecoveryReport,
    stats: StoreStats,
}

/// The store's lock (`<dir>/LOCK`): shared for a reader, else alone; waiting up to `wait`
/// for another process's hold to end, a little longer each time it looks (from 2 ms to
/// 50 ms).
fn hold(
    vfs: &dyn Vfs,
    dir: &Path,
    reader: bool,
    wait: std::time::Duration,
) -> Result<vfs::LockGuard, Error> {
    let path = files::lock(dir);
    let deadline = std::time::Instant::now() + wait;
    let mut pause = std::time::Duration::from_millis(2);
    // Held shared while waiting, where a writer made the file: a writer that can let go
    // of the store (pipe mode on its own) sees it at its next commit and does.
    let mut knock: Option<vfs::LockGuard> = None;
    let at = files::wait(dir);
    loop {
        // A writer lets those that wait already (their knock) have the store first, within
        // its own wait and until it waits itself: else one that let go for them would take
        // it back at once. (One that may not wait, the daemon, takes the store if free.) The
        // file is made here, by a writer, so that a reader's wait writes nothing.
        let now = std::time::Instant::now();
        if !reader && knock.is_none() && now + pause < deadline {
            if let Ok(None) = vfs.try_lock(&at) {
                std::thread::sleep(pause);
                pause = (pause * 2).min(std::time::Duration::from_millis(50));
                continue;
            }
        }
        let got = if reader {
            vfs.try_lock_shared(&path)?
        } else {
            vfs.try_lock(&path)?
        };
        if let Some(lock) = got {
            return Ok(lock);
        }
        let now = std::time::Instant::now();
        if now >= deadline {
            return Err(Error::Locked(dir.to_path_buf()));
        }
        if knock.is_none() {
            // Not made here: a reader writes nothing.
            if vfs.exists(&at).unwrap_or(false) {
                knock = vfs.try_lock_shared(&at).ok().flatten();
            }
        }
        std::thread::sleep(pause.min(deadline - now));
        pause = (pause * 2).min(std::time::Duration::from_millis(50));
    }
}

impl Store {
    /// Open (creating if absent) the store in `dir`: take its lock, load the last checkpoint,
    /// replay the log after it, cut a torn tail.
    pub fn open(dir: &Path, opts: Options) -> Result<Store, Error> {
        Store::open_with(Arc::new(RealFs), dir, opts)
    }

    /// [`Store::open`] through a given file system (tests pass a [`sim::SimFs`]).
    pub fn open_with(vfs: Arc<dyn Vfs>, dir: &Path, opts: Options) -> Result<Store, Error> {
        if opts.only.is_some() && opts.partial {
            let whole = Options {
                only: None,
                partial: false,
                ..opts.clone()
            };
            return match Store::open_inner(vfs.clone(), dir, opts) {
                Ok(st) if st.partial_is_safe() => Ok(st),
                Ok(st) => {
                    drop(st);
                    Store::open_inner(vfs, dir, whole)
                }
                Err(Error::NotFound(_)) => Store::open_inner(vfs, dir, whole),
                Err(e) => Err(e),
            };
        }
        Store::open_inner(vfs, dir, opts)
    }

    /// Whether a store opened for a few series may write them alone (`Options::partial`):
    /// its open found the log as a clean close left it and wrote nothing, the next record
    /// fits well before the point where a writer keeps a snapshot for the next checkpoint
    /// (which needs every series), and its close owes the readers no checkpoint.
    fn partial_is_safe(&self) -> bool {
        let r = &self.report;
        !self.owed
            && !r.searched_past_end
            && r.cut.is_none()
            && !r.log_was_truncated
            && r.invalid_checkpoints.is_empty()
            && self.partial_room()
            && !self.close_wants_checkpoint()
    }

    /// Whether a store opened for a few series has room in the ring for the record of a
    /// command (up to an eighth of the ring) before the ring's half, where a writer keeps a
    /// snapshot of every series for the next checkpoint.
    pub(crate) fn partial_room(&self) -> bool {
        let cap = self.log.cap();
        self.log.since_checkpoint() < cap / 2 - cap / 8
    }

    /// Opened with `only` and `partial`, and found safe to write those series alone (an
    /// open that was not is the whole store's: `Options::partial`).
    pub fn is_partial(&self) -> bool {
        self.opts.only.is_some() && self.opts.partial
    }

    /// Opened to read a few series: every write is refused.
    pub(crate) fn read_only(&self) -> bool {
        self.opts.only.is_some() && !self.opts.partial
    }

    fn open_inner(vfs: Arc<dyn Vfs>, dir: &Path, opts: Options) -> Result<Store, Error> {
        let writer = opts.only.is_none() || opts.partial;
        if let Some(names) = &opts.only {
            if !vfs.exists(dir)? {
                return Err(Error::NotFound(names.first().cloned().unwrap_or_default()));
            }
        } else {
            vfs.create_dir_all(dir)?;
        }
        let lock = hold(vfs.as_ref(), dir, !writer, opts.lock_wait)?;
        if writer {
            // A writer: an older store's mark file goes, durably, before anything is written
            // (recovery itself may write). The mark in the log is cleared by the first
            // record, or before a checkpoint (crate::clean).
            clean::remove(vfs.as_ref(), dir)?;
        }
        let ring_cap = opts.log_bytes.max(PAGE).div_ceil(PAGE) * PAGE;
        let r = recovery::recover(
            &vfs,
            dir,
            ring_cap,
            // A few series: records a megabyte at a time, their buffers reused (a reader
            // after a crash reads up to 7/8 of the ring; fresh pages for all of it were a
            // third of its time).
            if opts.only.is_some() {
                opts.replay_batch.min(1 << 20)
            } else {
                opts.replay_batch
            },
            opts.repair,
            opts.only.as_deref(),
            opts.spill_bytes,
        )?;
        // Replay read the log: its pages are cached in large folios (LogRing::drop_cache),
        // which a writer's commits would dirty whole. A reader writes nothing and leaves the
        // cache as it is: the next command reads the log from memory.
        if opts.only.is_none() {
            r.log.drop_cache();
        }
        let disk_mark = r.mark.filter(|_| writer);
        // A partial writer's open that wanted a checkpoint (damage) opens the whole store.
        let owed = opts.only.is_some() && (r.needs_checkpoint || r.wants_checkpoint);
        let needs_checkpoint = r.needs_checkpoint && opts.only.is_none();
        let wants_checkpoint = r.wants_checkpoint && opts.only.is_none();
        let mut store = Store {
            vfs,
            dir: dir.to_path_buf(),
            opts,
            _lock: lock,
            log: logpos::Log {
                ring: r.log,
                end_lsn: r.end_lsn,
                next_seq: r.next_seq,
                ckpt_lsn: r.ckpt_lsn,
                ckpt_gen: r.ckpt_gen,
                last_record: 0,
            },
            reg: r.reg,
            segs: r.segs,
            snap: None,
            pending: pending::Pending::new(),
            health: health::Health::default(),
            disk_mark,
            closing: false,
            owed,
            grow_retry_at: 0,
            spill_retry_at: 0,
            notices: Vec::new(),
            samples_total: r.report.samples_replayed,
            samples_at_ckpt: 0,
            pieces_total: r.report.pieces_replayed,
            pieces_at_ckpt: 0,
            report: r.report,
            stats: StoreStats::default(),
        };
        if store.report.records_replayed == 0 && !store.opts.unmarked_reseeds {
            // The codecs start from the checkpoint's RRDs, as they did after the checkpoint
            // was written: the first record says so, for a replay that reaches it from the
            // older checkpoint (the writer that wrote this one may have stopped before
            // writing any record after it).
            store.pending.reseed();
        }
        if needs_checkpoint {
            store.checkpoint()?;
        } else if wants_checkpoint {
            if let Err(e) = store.checkpoint() {
                if !out_of_space(&e) {
                    return Err(e);
                }
                store.notices.push(format!(
                    "the newest checkpoint was damaged and could not be written again: {e}"
                ));
            }
        }
        store.reg.share_tables(None);
        // What replay sealed beyond the budget goes to segment files now.
        store.maybe_spill();
        store.segs.table.release_all();
        Ok(store)
    }

    /// What recovery found when this store was opened (checkpoint used, records replayed,
    /// a cut tail).
    pub fn recovery(&self) -> &RecoveryReport {
        &self.report
    }

    /// Bytes of log an open would replay now: those since the newest checkpoint's start.
    pub fn log_since_checkpoint(&self) -> u64 {
        self.log.since_checkpoint()
    }

    /// Pieces (a series' samples in one record) logged since the newest checkpoint's start,
    /// each record counting as [`RECORD_PIECES`] more, one more every [`PIECE_BYTES`] of its
    /// payload, and [`SAMPLE_PIECES`] more for each sample of its series with the most: a
    /// reader of one series decodes its way past each of them and applies its own samples
    /// ([`READER_PIECES`]).
    pub fn pieces_since_checkpoint(&self) -> u64 {
        self.pieces_total - self.pieces_at_ckpt
    }

    /// Whether the log since the newest checkpoint would cost a reader of one series (the CLI
    /// on its own, after this writer) more than a few milliseconds ([`READER_PIECES`]).
    pub fn slow_for_readers(&self) -> bool {
        self.pieces_since_checkpoint()
            .saturating_add(self.pending_pieces())
            > READER_PIECES
    }

    /// What the next commit adds to [`Store::pieces_since_checkpoint`], about (its bytes
    /// left out): a close asks before its last commit, which may hold a whole session.
    fn pending_pieces(&self) -> u64 {
        let (mut series, mut most) = (0u64, 0u64);
        for &id in &self.reg.dirty {
            if let Some(s) = self.reg.by_id(id).filter(|s| s.count > 0) {
                series += 1;
                most = most.max(s.count);
            }
        }
        if series == 0 {
            return 0;
        }
        series + RECORD_PIECES + most.saturating_mul(SAMPLE_PIECES)
    }

    /// Whether another process waits to open this store (a command on its own, for a
    /// graph or a fetch): it holds `LOCK.wait` shared while it waits ([`hold`]; a writer's
    /// open made the file). A writer that can let go of the store between
    /// commits (pipe mode on its own) asks at each and closes it if so.
    pub fn others_wait(&self) -> bool {
        !self.read_only() && matches!(self.vfs.try_lock(&files::wait(&self.dir)), Ok(None))
    }

    /// Samples an open would replay now: those logged since the newest checkpoint's start
    /// (replay time goes with them more than with the log's bytes).
    pub fn samples_since_checkpoint(&self) -> u64 {
        self.samples_total - self.samples_at_ckpt
    }

    /// The log ring's size in bytes.
    pub fn log_capacity(&self) -> u64 {
        self.log.cap()
    }

    /// The store's own copy of series `name`'s name (shared, not copied): a caller that keys
    /// a map of its own by names holds no second copy of each.
    pub fn shared_name(&self, name: &str) -> Option<Arc<str>> {
        self.reg.shared_name(name)
    }

    pub fn get(&self, name: &str) -> Option<&Rrd> {
        self.reg.get(name).map(|s| &s.rrd)
    }

    /// [`Store::get`] by the series' id ([`Store::series_id`]).
    pub fn get_id(&self, id: SeriesId) -> Option<&Rrd> {
        self.reg.by_id(id.0).map(|s| &s.rrd)
    }

    /// Names of all RRDs, sorted.
    pub fn names(&self) -> Vec<String> {
        self.reg.names()
    }

    /// Names (sorted) of the series created in the log replayed at open, after the
    /// checkpoint it started from: of all series, the only ones whose placeholders an
    /// [`Options::before_checkpoint`] hook may not have made durable.
    pub fn created_since_checkpoint(&self) -> Vec<String> {
        self.reg.names_from(self.report.checkpoint_next_id)
    }

    /// Changes whenever a series is created or removed: (the next id, the number of series).
    /// A reader that keeps the names lists them again when it changes.
    pub fn names_version(&self) -> (u64, usize) {
        (self.reg.next_id, self.reg.len())
    }

    /// Number of RRDs (without listing them).
    pub fn len(&self) -> usize {
        self.reg.len()
    }

    pub fn is_empty(&self) -> bool {
        self.reg.is_empty()
    }

    /// Bytes of the heap that archive rows take, over every series (`rrd::Rows::heap_bytes`,
    /// and each distinct chunk table once): sealed chunks read from segment files are in the
    /// page cache, not here.
    pub fn archive_heap_bytes(&self) -> usize {
        let own: usize = self
            .reg
            .iter()
            .map(|(_, s)| s.rrd.rra.iter().map(|r| r.rows.heap_bytes()).sum::<usize>())
            .sum();
        own + self.chunk_table_bytes()
    }

    /// Bytes of the archives' chunk tables, each shared table once: series created together
    /// share one ([`rrd::Rows::share`]).
    pub fn chunk_table_bytes(&self) -> usize {
        let mut seen = std::collections::HashMap::new();
        for (_, s) in self.reg.iter() {
            for a in &s.rrd.rra {
                let (id, bytes) = a.rows.table();
                seen.insert(id, bytes);
            }
        }
        seen.values().sum()
    }

    /// Stored chunks that failed their checksum (or whose segment was gone) when read since
    /// open: they were read as unknown.
    pub fn damaged_chunks(&self) -> u64 {
        self.segs
            .table
            .damaged
            .load(std::sync::atomic::Ordering::Relaxed)
    }

    /// Counters since open.
    pub fn stats(&self) -> &StoreStats {
        &self.stats
    }

    /// Bytes of encoded changes waiting for the next commit (what [`Options::max_pending_bytes`]
    /// is compared with).
    pub fn pending_bytes(&self) -> usize {
        self.pending.bytes()
    }

    /// Samples accepted but not yet committed.
    pub fn pending_samples(&self) -> u64 {
        self.reg
            .dirty
            .iter()
            .filter_map(|&id| self.reg.by_id(id))
            .map(|s| s.count)
            .sum()
    }

    /// Why the store refuses writes, when a checkpoint failed after its commit had become
    /// durable (the commit returned Ok; later writes get `Error::PreviousIo`).
    pub fn deferred_error(&self) -> Option<&str> {
        self.health.deferred()
    }

    /// Whether the store refuses writes (a failed write or fsync, or a commit or update that
    /// panicked half way): the owner should stop accepting data it cannot commit.
    pub fn refuses_writes(&self) -> bool {
        self.writable().is_err()
    }

    pub(crate) fn writable(&self) -> Result<(), Error> {
        if self.read_only() {
            Err(Error::ReadOnly)
        } else if self.health.refuses() {
            Err(Error::PreviousIo)
        } else {
            Ok(())
        }
    }

    /// Add an RRD (a fresh `create`, or a `restore` with data). `Error::Exists` if the name
    /// is taken and `overwrite` is false.
    pub fn create(&mut self, name: &str, rrd: Rrd, overwrite: bool) -> Result<(), Error> {
        self.writable()?;
        self.opened(name)?;
        if let Some(old) = self.reg.id(name) {
            if !overwrite {
                return Err(Error::Exists(name.to_string()));
            }
            self.remove_id(old);
        }
        let id = self.reg.next_id;
        self.pending.entry(|rec| rec.create(id, name, &rrd));
        self.reg.insert(id, name.to_string(), rrd);
        self.maybe_commit()
    }

    pub fn remove(&mut self, name: &str) -> Result<(), Error> {
        self.writable()?;
        self.opened(name)?;
        let Some(id) = self.reg.id(name) else {
            return Err(Error::NotFound(name.to_string()));
        };
        self.remove_id(id);
        self.maybe_commit()
    }

    /// A store opened for a few series knows nothing of the others: a name among them may
    /// be taken or not.
    fn opened(&self, name: &str) -> Result<(), Error> {
        match &self.opts.only {
            Some(names) if !names.iter().any(|n| n == name) => Err(Error::ReadOnly),
            _ => Ok(()),
        }
    }

    /// Log the removal of `id`, after its pending samples (they happened first).
    pub(crate) fn remove_id(&mut self, id: u64) {
        let removed = self.reg.remove(id);
        self.pending.entry(|rec| {
            if let Some(mut s) = removed {
                let (chunk, _, count, _) = s.take_chunk();
                if count > 0 {
                    rec.samples(id, count, &chunk);
                }
            }
            rec.remove(id);
        });
    }

    /// The end of an update call of `id` (one `rrdtool update` command or one daemon
    /// UPDATE, however many samples it carried; `ok` when none failed): an RRD with
    /// Holt-Winters archives runs its seasonal smoother here if a sample of the call
    /// scheduled it, as rrdtool does once at the end of an update call
    /// ([`rrd::Rrd::end_update_call`]). The smoothing is logged after the samples before it:
    /// those go into a Samples entry of their own, the Smooth entry after them. Nothing for
    /// other series.
    pub fn end_update_call(&mut self, id: SeriesId, ok: bool) -> Result<(), Error> {
        let id = id.0;
        if self.reg.by_id(id).is_none_or(|s| s.rrd.hw.is_none()) {
            return Ok(());
        }
        self.writable()?;
        self.health.begin();
        let Some(s) = self.reg.by_id_mut(id) else {
            self.health.end();
            return Ok(());
        };
        if s.rrd.end_update_call(ok) {
            let (chunk, _, count, _) = s.take_chunk();
            self.pending.entry(|rec| {
                if count > 0 {
                    rec.samples(id, count, &chunk);
                }
                rec.smooth(id);
            });
        }
        self.health.end();
        self.maybe_commit()
    }

    /// The handle of `name`, for [`Store::update_id`]: valid until the series is removed or
    /// re-created (a re-created name gets a new handle).
    pub fn series_id(&self, name: &str) -> Option<SeriesId> {
        self.reg.id(name).map(SeriesId)
    }

    /// Apply one sample to `name` (see `Rrd::apply`) and queue it for the next commit.
    /// `Error::Rrd` carries rrdtool's message; a partially applied sample is still logged.
    pub fn update(
        &mut self,
        name: &str,
        sample: &Sample,
        sink: &mut dyn FnMut(RowWrite),
    ) -> Result<(), Error> {
        let Some(id) = self.series_id(name) else {
            self.writable()?;
            return Err(Error::NotFound(name.to_string()));
        };
        self.update_id(id, sample, sink)
    }

    /// [`Store::update`] by handle (one name lookup for many samples). A stale handle is
    /// `Error::NotFound`.
    pub fn update_id(
        &mut self,
        id: SeriesId,
        sample: &Sample,
        sink: &mut dyn FnMut(RowWrite),
    ) -> Result<(), Error> {
        self.writable()?;
        // As in commit: a panic half way (the RRD changed, the log not) stops writes.
        self.health.begin();
        let r = self.update_inner(id, sample, sink);
        self.health.end();
        r?;
        self.maybe_commit()
    }

    pub(crate) fn update_inner(
        &mut self,
        id: SeriesId,
        sample: &Sample,
        sink: &mut dyn FnMut(RowWrite),
    ) -> Result<(), Error> {
        let id = id.0;
        let Some(s) = self.reg.by_id_mut(id) else {
            return Err(Error::NotFound(format!("series #{id}")));
        };
        let series::Series {
            rrd, rows_written, ..
        } = s;
        let mut count_rows = |w: RowWrite| {
            if w.ds == 0 {
                rows_written[w.rra] += 1;
            }
            sink(w)
        };
        let outcome = match rrd.apply(sample, &mut count_rows) {
            Ok(()) => Ok(()),
            Err(ApplyError::Rejected(e)) => return Err(Error::Rrd(e)),
            Err(ApplyError::Partial(e)) => Err(Error::Rrd(e)),
        };
        let first = s.count == 0;
        match s.log(sample) {
            Ok((grew, time_bits)) => {
                self.pending.add(grew, u64::from(time_bits));
            }
            Err(e) => {
                // apply accepted a sample the log cannot hold: memory and log would diverge.
                self.health.fail();
                return Err(Error::Io(std::io::Error::other(e.to_string())));
            }
        }
        if first {
            self.reg.dirty.push(id);
        }
        outcome
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn store_can_move_to_another_thread() {
        fn send<T: Send>() {}
        send::<Store>();
    }
}
