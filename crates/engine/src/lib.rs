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

pub mod ckptfile;
pub mod clean;
pub mod files;
pub mod recovery;
pub mod replay;
pub mod ring;
pub mod segments;
pub mod series;
pub mod sim;
pub mod snapshot;
pub mod vfs;

pub use recovery::{Cut, RecoveryReport};
pub use vfs::{RealFs, VFile, Vfs};

use codec::checkpoint::CheckpointWriter;
use codec::frame::{framed_len, record_header, KIND_COMMIT, PAGE};
use codec::record::RecordWriter;
use rrd::{ApplyError, RowWrite, Rrd, RrdError, Sample};
use series::Registry;
use snapshot::Snapshot;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Errors a caller can act on.
#[derive(Debug)]
pub enum Error {
    /// The RRD layer refused the operation; `RrdError::msg` is rrdtool's text.
    Rrd(RrdError),
    /// `create` without overwrite on an existing name.
    Exists(String),
    /// No RRD of that name.
    NotFound(String),
    /// Another process holds the store's lock.
    Locked(std::path::PathBuf),
    /// An earlier fsync or write failed; the store refuses writes until reopened.
    PreviousIo,
    /// The store was opened to read a few series (`Options::only`).
    ReadOnly,
    /// On-disk data that fails its checksum or framing where it must not (not a torn tail).
    Corrupt {
        file: std::path::PathBuf,
        offset: u64,
        what: String,
    },
    Io(std::io::Error),
}

impl std::fmt::Display for Error {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Error::Rrd(e) => write!(f, "{e}"),
            Error::Exists(n) => write!(f, "{n}: File exists"),
            Error::NotFound(n) => write!(f, "opening '{n}': No such file or directory"),
            Error::Locked(p) => write!(f, "store {} is locked by another process", p.display()),
            Error::PreviousIo => write!(f, "an earlier write to the store failed; reopen it"),
            Error::ReadOnly => write!(f, "the store was opened read-only"),
            Error::Corrupt { file, offset, what } => {
                write!(f, "{}: corrupt at offset {offset}: {what}", file.display())
            }
            Error::Io(e) => write!(f, "{e}"),
        }
    }
}

impl std::error::Error for Error {}

impl From<std::io::Error> for Error {
    fn from(e: std::io::Error) -> Self {
        Error::Io(e)
    }
}

/// How a store commits.
#[derive(Debug, Clone)]
pub struct Options {
    /// Commit at least this often while updates are pending (the loss window). None: only on
    /// explicit commit, size limit and close.
    pub commit_interval: Option<Duration>,
    /// Commit when this many bytes of encoded updates are pending.
    pub max_pending_bytes: usize,
    /// Size of the log ring when a store is created (rounded up to 4 KiB pages; an existing
    /// store keeps the size it was created with, or a larger one it grew to).
    pub log_bytes: u64,
    /// Ring bytes a series is given: once the series outnumber `ring / log_per_series`, the
    /// next commit replaces the ring with one of 1.5 times `series x log_per_series`
    /// ([`Store::log_capacity`]). A checkpoint writes every series' state and comes every
    /// half ring of log, so this keeps its share of the bytes written per sample the same at
    /// any number of series. 0: the ring keeps its size.
    pub log_per_series: u64,
    /// Bytes of log records an open replays at a time (at least one record): memory at
    /// open holds one batch, not the whole log since the checkpoint.
    pub replay_batch: usize,
    /// Open a store whose log is damaged before its end by cutting it at the damage (the
    /// committed records after it are dropped and counted in the recovery report's cut);
    /// without it such a store does not open (`Error::Corrupt`). `ringlet repair`.
    pub repair: bool,
    /// Open read-only with these series alone (a command that reads them): only their
    /// state is loaded and replayed, nothing is written, and every write is refused
    /// (`Error::ReadOnly`). `None`: the whole store, read-write.
    pub only: Option<Vec<String>>,
    /// Called before each checkpoint becomes the newest (its header written): whatever the
    /// caller wrote beside the store before then is made durable with it. The daemon syncs
    /// the base directory's file system, so the placeholders of the series a checkpoint
    /// holds are on disk, and an open checks before serving only those of series created
    /// after it ([`Store::created_since_checkpoint`]). A failure is a notice, not an error.
    pub before_checkpoint: Option<Hook>,
    /// Write each series' samples as a Samples entry of its own, as stores did before the
    /// commit-wide sample block (docs/FORMAT.md): for tests that a store holding such records
    /// opens. Not for use otherwise (it spends about 5 more bytes a series a commit).
    #[doc(hidden)]
    pub sample_entries: bool,
    /// Write the commit's sample block as this version (1: no rows, Rice-coded lens; 2: rows
    /// against the stream's predictor), as stores did before the current one (0): for tests
    /// that a store holding such records opens.
    #[doc(hidden)]
    pub block_version: u8,
    /// Write as stores did before the mark of codec restarts (checkpoints without
    /// [`codec::checkpoint::CK_FLAG_RESEED_MARKED`], no Reseed entry after a full
    /// checkpoint): for tests that such stores open, or are refused where their replay from
    /// an older checkpoint cannot be trusted.
    #[doc(hidden)]
    pub unmarked_reseeds: bool,
    /// Packed bytes of sealed archive chunks the heap may hold before they are stored
    /// without waiting for a checkpoint (a spill: [`segments::Segments::spill`]). Checkpoints
    /// come every half ring of log, hours apart on a large store, and the rows sealed
    /// between them would stay in memory; a spill writes them where the next checkpoint
    /// would have and lets them go. 0: never. [`SPILL_AUTO`] (the default): an eighth of the
    /// store's log ring, 16 to 64 MiB ([`spill_budget`]).
    pub spill_bytes: u64,
}

/// A caller's action at a point of the store's work ([`Options::before_checkpoint`]).
#[derive(Clone)]
pub struct Hook(pub Arc<dyn Fn() -> std::io::Result<()> + Send + Sync>);

impl std::fmt::Debug for Hook {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Hook")
    }
}

impl Default for Options {
    fn default() -> Self {
        Options {
            commit_interval: Some(Duration::from_secs(300)),
            max_pending_bytes: 64 << 20,
            log_bytes: 64 << 20,
            log_per_series: DEFAULT_LOG_PER_SERIES,
            replay_batch: 64 << 20,
            repair: false,
            only: None,
            before_checkpoint: None,
            sample_entries: false,
            block_version: 0,
            unmarked_reseeds: false,
            spill_bytes: DEFAULT_SPILL_BYTES,
        }
    }
}

/// [`Options::spill_bytes`] unless told otherwise: [`SPILL_AUTO`].
pub const DEFAULT_SPILL_BYTES: u64 = SPILL_AUTO;

/// [`Options::spill_bytes`]: the budget follows the log ring ([`spill_budget`]).
pub const SPILL_AUTO: u64 = u64::MAX;

/// The bytes of sealed rows a store with a log ring of `ring` bytes holds before it spills
/// them, for [`Options::spill_bytes`] `opt`: `opt` itself, or for [`SPILL_AUTO`] an eighth of
/// the ring, at least 16 MiB (the default 64 MiB ring's: about 40 minutes of 26,000 gmetad
/// series' rows) and at most 64 MiB. A larger ring is chosen to write less: its checkpoints
/// come rarer, and rows sealed between them that expire before one (a day-long archive's,
/// under a ring that holds a week of log) are never written if they wait in memory, where a
/// spill would store each (a 512 MiB ring, 3,000 series of the default workload, 2 days:
/// 1.44 bytes a sample with no spill, 3.75 with a spill every 16 MiB).
pub fn spill_budget(opt: u64, ring: u64) -> u64 {
    if opt == SPILL_AUTO {
        (ring / 8).clamp(16 << 20, 64 << 20)
    } else {
        opt
    }
}

/// Why a path cannot name an RRD in a store.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BadName {
    /// It has a `..` component.
    DotDot,
    /// Nothing is left after dropping empty and `.` components.
    Empty,
}

/// The store name of an RRD path: empty and `.` components dropped (`./a//b.rrd` is
/// `a/b.rrd`), a leading `/` kept, `..` refused. The CLI and the daemon both name series
/// this way, so one spelling is one series.
pub fn normalize_name(path: &str) -> Result<String, BadName> {
    let mut parts = Vec::new();
    for c in path.split('/') {
        match c {
            "" | "." => {}
            ".." => return Err(BadName::DotDot),
            c => parts.push(c),
        }
    }
    if parts.is_empty() {
        return Err(BadName::Empty);
    }
    let joined = parts.join("/");
    Ok(if path.starts_with('/') {
        format!("/{joined}")
    } else {
        joined
    })
}

/// Parse a size such as `65536`, `512k`, `64M` or `1G` (powers of 1024), as given for the log
/// ring. At least 64 KiB.
pub fn parse_size(s: &str) -> Result<u64, String> {
    let bytes = parse_any_size(s)?;
    if bytes < 64 << 10 {
        return Err(format!("size '{s}' is below the minimum of 64k"));
    }
    Ok(bytes)
}

/// A size such as `2048`, `2k`, `64M` or `1G` (powers of 1024), any value.
pub fn parse_any_size(s: &str) -> Result<u64, String> {
    let t = s.trim();
    let (num, mult) = match t.char_indices().last() {
        Some((i, 'k' | 'K')) => (&t[..i], 1u64 << 10),
        Some((i, 'm' | 'M')) => (&t[..i], 1 << 20),
        Some((i, 'g' | 'G')) => (&t[..i], 1 << 30),
        _ => (t, 1),
    };
    let n: u64 = num
        .parse()
        .map_err(|_| format!("invalid size '{s}' (use e.g. 65536, 512k, 64M, 1G)"))?;
    n.checked_mul(mult)
        .ok_or_else(|| format!("size '{s}' is too large"))
}

/// [`Options::log_per_series`] unless told otherwise: with about 2 bytes of record a sample
/// and a checkpoint of about 200 bytes a series every half ring, checkpoints add at most
/// `200 x 2 / 1024`, 0.4 bytes a sample, and at a million series the ring is 2-3 GiB.
pub const DEFAULT_LOG_PER_SERIES: u64 = 2 << 10;

/// The ring bytes a series is given, as the binaries read it: `$RINGLET_LOG_PER_SERIES`
/// (e.g. `2k`, or `0` for a ring that keeps its size) when set, else the default.
pub fn log_per_series_from_env() -> Result<u64, String> {
    match std::env::var("RINGLET_LOG_PER_SERIES") {
        Ok(v) if !v.is_empty() => {
            parse_any_size(&v).map_err(|e| format!("RINGLET_LOG_PER_SERIES: {e}"))
        }
        _ => Ok(DEFAULT_LOG_PER_SERIES),
    }
}

/// The bytes of sealed chunks a store holds before it spills them, as the binaries read it:
/// `$RINGLET_SPILL` (e.g. `16M`, or `0`: only checkpoints store them) when set, else
/// [`DEFAULT_SPILL_BYTES`] (an eighth of the ring, 16 to 64 MiB).
pub fn spill_bytes_from_env() -> Result<u64, String> {
    match std::env::var("RINGLET_SPILL") {
        Ok(v) if !v.is_empty() => parse_any_size(&v).map_err(|e| format!("RINGLET_SPILL: {e}")),
        _ => Ok(DEFAULT_SPILL_BYTES),
    }
}

/// The log ring size for a store created now, as the binaries read it: `$RINGLET_LOG_SIZE`
/// (e.g. `64M`) when set, else the default. An existing store keeps the size it has.
pub fn log_size_from_env() -> Result<u64, String> {
    match std::env::var("RINGLET_LOG_SIZE") {
        Ok(v) if !v.is_empty() => parse_size(&v).map_err(|e| format!("RINGLET_LOG_SIZE: {e}")),
        _ => Ok(Options::default().log_bytes),
    }
}

/// A series' handle ([`Store::series_id`]): its id, never reused in a store.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct SeriesId(u64);

/// What one commit wrote.
#[derive(Debug, Clone, Default)]
pub struct CommitStats {
    pub series: usize,
    pub samples: usize,
    /// Bytes written: the record (or the checkpoint that stood in for it), and the segments
    /// of a spill the commit made.
    pub bytes: u64,
}

/// Counters since the store was opened (for a daemon's STATS).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct StoreStats {
    /// Commits that wrote something (a record or a checkpoint).
    pub commits: u64,
    /// Samples made durable by those commits.
    pub samples_committed: u64,
    /// Bytes of log records written (framed, padded).
    pub log_bytes: u64,
    /// Of those, the records' payloads (without their 32-byte headers and page padding).
    pub record_bytes: u64,
    /// Where the records' bytes went.
    pub record_cost: RecordCost,
    pub checkpoints: u64,
    /// Bytes of checkpoints written, their new segment files included.
    pub checkpoint_bytes: u64,
    /// Of those, bytes of segment files of sealed chunks (archive chunks stored once).
    pub segment_bytes: u64,
    /// And of segment files of pieces of open chunks (each checkpoint stores the chunks
    /// being written, the values since they were last stored, and rebases them there:
    /// `segments::PIECES_CLASS`).
    pub open_chunk_bytes: u64,
    /// Times the log ring was replaced by a larger one ([`Options::log_per_series`]).
    pub rings_grown: u64,
    /// Spills of sealed chunks between checkpoints ([`Options::spill_bytes`]), and the
    /// bytes of the segment files they wrote.
    pub spills: u64,
    pub spill_bytes: u64,
}

/// Where appended commit records spent their bytes, in bits (all of them add up to the
/// records' framed, padded size).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RecordCost {
    /// Which series have samples and where their bits are: a block's head and lens.
    pub series: u64,
    /// The samples' times (bits the sample codec spent on them, less those a block left out).
    pub times: u64,
    /// The samples' values (the rest of the samples' bits).
    pub values: u64,
    /// Creates, removes and the samples of series removed in the same commit.
    pub entries: u64,
    /// Record headers, entry counts, field lengths, each part's last byte's padding.
    pub framing: u64,
    /// Zeros up to the next page boundary.
    pub padding: u64,
}

impl RecordCost {
    /// The cost of a record written from `parts` ([`codec::record::RecordWriter::finish_parts`]),
    /// whose block spent `block` and whose samples' streams spent `time_bits` on times.
    fn of(
        parts: &[&[u8]; 4],
        entries_len: usize,
        block: &codec::block::BlockCost,
        time_bits: u64,
        framed: u64,
    ) -> RecordCost {
        let payload: u64 = parts.iter().map(|p| p.len() as u64).sum();
        let series = block.index_bits;
        // The streams' times, less those of the samples that went into rows, which spend
        // their own.
        let stream_bits = block.stream_bits;
        let time_bits = time_bits
            .saturating_sub(block.row_stream_time_bits)
            .min(stream_bits);
        let times = time_bits.saturating_sub(block.stripped_first) + block.row_time_bits;
        let values = (stream_bits - time_bits)
            .saturating_sub(block.stripped - block.stripped_first)
            + block.row_value_bits;
        let entries = entries_len as u64 * 8;
        let header = codec::frame::REC_HEADER_LEN as u64;
        let framing = ((header + payload) * 8).saturating_sub(entries + series + times + values);
        RecordCost {
            series,
            times,
            values,
            entries,
            framing,
            padding: framed.saturating_sub(header + payload) * 8,
        }
    }

    /// What was spent since `earlier` (a copy taken before).
    pub fn since(&self, earlier: &RecordCost) -> RecordCost {
        RecordCost {
            series: self.series - earlier.series,
            times: self.times - earlier.times,
            values: self.values - earlier.values,
            entries: self.entries - earlier.entries,
            framing: self.framing - earlier.framing,
            padding: self.padding - earlier.padding,
        }
    }

    /// All of it, in bits.
    pub fn total(&self) -> u64 {
        self.series + self.times + self.values + self.entries + self.framing + self.padding
    }

    fn add(&mut self, o: &RecordCost) {
        self.series += o.series;
        self.times += o.times;
        self.values += o.values;
        self.entries += o.entries;
        self.framing += o.framing;
        self.padding += o.padding;
    }
}

/// A store directory, opened for reading and writing by this process alone.
pub struct Store {
    vfs: Arc<dyn Vfs>,
    dir: PathBuf,
    opts: Options,
    _lock: vfs::LockGuard,
    log: ring::LogRing,
    reg: Registry,
    /// Log position where the next record goes.
    end_lsn: u64,
    /// Sequence number of the next record.
    next_seq: u64,
    /// Position and generation of the newest durable checkpoint: the ring may not overwrite
    /// anything at or after `ckpt_lsn`.
    ckpt_lsn: u64,
    ckpt_gen: u64,
    /// Segment files of stored archive chunks.
    segs: segments::Segments,
    /// The state at a past commit boundary, for the next (lagged) checkpoint.
    snap: Option<Snapshot>,
    /// Creates, removes (and the samples that preceded a removal), in order.
    pending: RecordWriter,
    pending_bytes: usize,
    last_commit: Instant,
    failed: bool,
    /// Set while a commit or an update is changing the store: still set afterwards only if
    /// one panicked half way (the store then refuses writes, as after a failed write).
    busy: bool,
    /// What failed after a commit had become durable (a lagged checkpoint), for the caller.
    deferred_error: Option<String>,
    /// A checkpoint that had to stand in for a commit's record (the ring full) failed: the
    /// state in memory is ahead of the newest checkpoint and the log, and every commit
    /// writes a checkpoint (only that) until one is written. Why, for the caller.
    must_checkpoint: Option<String>,
    /// The mark of a clean close is on disk ([`Store::mark_clean`]).
    marked: bool,
    /// Samples in the log since the store was created (as far as this process knows: those
    /// replayed at open and committed since), and as many at the newest checkpoint's
    /// position: [`Store::samples_since_checkpoint`].
    samples_total: u64,
    samples_at_ckpt: u64,
    /// Bytes of samples in the last commit's record (room reserved for the next).
    last_record: usize,
    /// Bits the sample codec spent on the times of the pending samples.
    pending_time_bits: u64,
    /// After a ring could not be grown: the number of series at which to try again.
    grow_retry_at: usize,
    /// Sealed bytes a spill waits for after one failed ([`Store::maybe_spill`]).
    spill_retry_at: u64,
    /// What the operator should hear about (a ring grown, or not), for the caller to log.
    notices: Vec<String>,
    report: RecoveryReport,
    stats: StoreStats,
}

/// Whether `e` is the file system out of room (ENOSPC, EDQUOT): a checkpoint that fails so
/// leaves the older checkpoint and the log as they were, and is tried again; any other
/// failed write or fsync (EIO) leaves the store refusing writes, since what reached the
/// disk is not known.
fn out_of_space(e: &Error) -> bool {
    matches!(e, Error::Io(io) if matches!(
        io.kind(),
        std::io::ErrorKind::StorageFull | std::io::ErrorKind::QuotaExceeded
    ))
}

impl Store {
    /// Open (creating if absent) the store in `dir`: take its lock, load the last checkpoint,
    /// replay the log after it, cut a torn tail.
    pub fn open(dir: &Path, opts: Options) -> Result<Store, Error> {
        Store::open_with(Arc::new(RealFs), dir, opts)
    }

    /// [`Store::open`] through a given file system (tests pass a [`sim::SimFs`]).
    pub fn open_with(vfs: Arc<dyn Vfs>, dir: &Path, opts: Options) -> Result<Store, Error> {
        if let Some(names) = &opts.only {
            if !vfs.exists(dir)? {
                return Err(Error::NotFound(names.first().cloned().unwrap_or_default()));
            }
        } else {
            vfs.create_dir_all(dir)?;
        }
        let Some(lock) = vfs.try_lock(&files::lock(dir))? else {
            return Err(Error::Locked(dir.to_path_buf()));
        };
        if opts.only.is_none() {
            // A writer: the mark of the last clean close goes, durably, before anything is
            // written (recovery itself may write).
            clean::remove(vfs.as_ref(), dir)?;
        }
        let ring_cap = opts.log_bytes.max(PAGE).div_ceil(PAGE) * PAGE;
        let r = recovery::recover(
            &vfs,
            dir,
            ring_cap,
            opts.replay_batch,
            opts.repair,
            opts.only.as_deref(),
            opts.spill_bytes,
        )?;
        // Replay read the log: its pages are cached in large folios (LogRing::drop_cache).
        r.log.drop_cache();
        let needs_checkpoint = r.needs_checkpoint && opts.only.is_none();
        let wants_checkpoint = r.wants_checkpoint && opts.only.is_none();
        let mut store = Store {
            vfs,
            dir: dir.to_path_buf(),
            opts,
            _lock: lock,
            log: r.log,
            reg: r.reg,
            end_lsn: r.end_lsn,
            next_seq: r.next_seq,
            ckpt_lsn: r.ckpt_lsn,
            ckpt_gen: r.ckpt_gen,
            segs: r.segs,
            snap: None,
            pending: RecordWriter::new(),
            pending_bytes: 0,
            last_commit: Instant::now(),
            failed: false,
            busy: false,
            deferred_error: None,
            must_checkpoint: None,
            marked: false,
            last_record: 0,
            pending_time_bits: 0,
            grow_retry_at: 0,
            spill_retry_at: 0,
            notices: Vec::new(),
            samples_total: r.report.samples_replayed,
            samples_at_ckpt: 0,
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
        self.end_lsn - self.ckpt_lsn
    }

    /// Samples an open would replay now: those logged since the newest checkpoint's start
    /// (replay time goes with them more than with the log's bytes).
    pub fn samples_since_checkpoint(&self) -> u64 {
        self.samples_total - self.samples_at_ckpt
    }

    /// The log ring's size in bytes.
    pub fn log_capacity(&self) -> u64 {
        self.log.cap
    }

    /// The store's own copy of series `name`'s name (shared, not copied): a caller that keys
    /// a map of its own by names holds no second copy of each.
    pub fn shared_name(&self, name: &str) -> Option<Arc<str>> {
        self.reg.shared_name(name)
    }

    pub fn get(&self, name: &str) -> Option<&Rrd> {
        self.reg.get(name).map(|s| &s.rrd)
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
        self.pending_bytes
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
        self.deferred_error.as_deref()
    }

    /// Whether the store refuses writes (a failed write or fsync, or a commit or update that
    /// panicked half way): the owner should stop accepting data it cannot commit.
    pub fn refuses_writes(&self) -> bool {
        self.writable().is_err()
    }

    fn writable(&self) -> Result<(), Error> {
        if self.opts.only.is_some() {
            Err(Error::ReadOnly)
        } else if self.failed || self.busy {
            Err(Error::PreviousIo)
        } else {
            Ok(())
        }
    }

    /// Add an RRD (a fresh `create`, or a `restore` with data). `Error::Exists` if the name
    /// is taken and `overwrite` is false.
    pub fn create(&mut self, name: &str, rrd: Rrd, overwrite: bool) -> Result<(), Error> {
        self.writable()?;
        if let Some(old) = self.reg.id(name) {
            if !overwrite {
                return Err(Error::Exists(name.to_string()));
            }
            self.remove_id(old);
        }
        let id = self.reg.next_id;
        let before = self.pending.len();
        self.pending.create(id, name, &rrd);
        self.pending_bytes += self.pending.len() - before;
        self.reg.insert(id, name.to_string(), rrd);
        self.maybe_commit()
    }

    pub fn remove(&mut self, name: &str) -> Result<(), Error> {
        self.writable()?;
        let Some(id) = self.reg.id(name) else {
            return Err(Error::NotFound(name.to_string()));
        };
        self.remove_id(id);
        self.maybe_commit()
    }

    /// Log the removal of `id`, after its pending samples (they happened first).
    fn remove_id(&mut self, id: u64) {
        let before = self.pending.len();
        if let Some(mut s) = self.reg.remove(id) {
            let (chunk, _, count, _) = s.take_chunk();
            if count > 0 {
                self.pending.samples(id, count, &chunk);
            }
        }
        self.pending.remove(id);
        self.pending_bytes += self.pending.len() - before;
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
        self.busy = true;
        let r = self.update_inner(id, sample, sink);
        self.busy = false;
        r?;
        self.maybe_commit()
    }

    fn update_inner(
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
                self.pending_bytes += grew;
                self.pending_time_bits += u64::from(time_bits);
            }
            Err(e) => {
                // apply accepted a sample the log cannot hold: memory and log would diverge.
                self.failed = true;
                return Err(Error::Io(std::io::Error::other(e.to_string())));
            }
        }
        if first {
            self.reg.dirty.push(id);
        }
        outcome
    }

    /// Whether a commit is due: changes are pending and the size limit or the commit
    /// interval has been reached (a daemon's timer can poll this).
    pub fn commit_due(&self) -> bool {
        let pending = !self.pending.is_empty() || !self.reg.dirty.is_empty();
        pending
            && (self.pending_bytes >= self.opts.max_pending_bytes
                || self
                    .opts
                    .commit_interval
                    .is_some_and(|iv| self.last_commit.elapsed() >= iv))
    }

    /// Commit if the size or time trigger says so.
    fn maybe_commit(&mut self) -> Result<(), Error> {
        if self.commit_due() {
            self.commit()?;
        }
        Ok(())
    }

    /// Make everything accepted so far durable: one appended record, one fdatasync.
    pub fn commit(&mut self) -> Result<CommitStats, Error> {
        if self.opts.only.is_some() {
            // Nothing can be pending: every write was refused.
            return Ok(CommitStats::default());
        }
        self.writable()?;
        // A panic from here on (a bug) leaves `busy` set and the store refusing writes, as a
        // failed write does: the pending data may be half taken, and must not be dropped
        // silently while later commits go on.
        self.busy = true;
        let r = self.commit_inner();
        self.busy = false;
        r
    }

    fn commit_inner(&mut self) -> Result<CommitStats, Error> {
        self.last_commit = Instant::now();
        if self.pending.is_empty() && self.reg.dirty.is_empty() {
            if self.must_checkpoint.is_some() {
                // Nothing new, but what an earlier commit took is not durable yet.
                let bytes = self.checkpoint_for_commit()?;
                return Ok(CommitStats {
                    bytes,
                    ..CommitStats::default()
                });
            }
            return Ok(CommitStats::default());
        }
        self.unmark()?;
        let mut rec = std::mem::take(&mut self.pending);
        if self.opts.block_version != 0 {
            rec.block_version(self.opts.block_version);
        }
        let version = rec.block().version();
        let mut stats = CommitStats::default();
        let mut dirty = std::mem::take(&mut self.reg.dirty);
        // The block codes ids as gaps: ascending.
        dirty.sort_unstable();
        // Room for about the last commit's samples: a buffer that doubles as it grows holds
        // the old and the new copy at once (a million series' commit is ~50 MB); pages of
        // the room not written are never touched.
        rec.reserve(self.last_record + self.last_record / 8);
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
            }
        }
        self.pending_bytes = 0;
        let time_bits = std::mem::take(&mut self.pending_time_bits);
        let block_cost = rec.block().cost();
        let entries_len = rec.len();
        // Written from the entries as they were built, not from a copy (nor a framed one).
        let parts = rec.finish_parts();
        let payload_len: usize = parts.iter().map(|p| p.len()).sum();
        self.last_record = parts[3].len();
        let framed = framed_len(payload_len, self.log.page);
        let too_big = payload_len > u32::MAX as usize;
        self.samples_total += stats.samples as u64;
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
    fn write_commit(
        &mut self,
        payload: &[&[u8]],
        framed: u64,
        too_big: bool,
    ) -> Result<u64, Error> {
        if too_big
            || self.must_checkpoint.is_some()
            || self.end_lsn + framed > self.ckpt_lsn + self.log.cap
        {
            return self.checkpoint_for_commit();
        }
        self.append(payload, framed)
            .inspect_err(|_| self.failed = true)?;
        // The commit is durable now, whatever happens to the checkpoint. One that could not
        // be written (a full disk) leaves the older checkpoint and the log as they were: the
        // next commits try again while the ring has room.
        match self.after_append() {
            Ok(n) => Ok(framed + n),
            Err(e) if !self.failed && out_of_space(&e) => {
                self.abandon_checkpoint();
                self.notices.push(format!(
                    "could not write a checkpoint ({e}); the next commits try again, and once \
                     the log ring is full ({} of {} bytes used now) commits fail until one is \
                     written",
                    self.end_lsn - self.ckpt_lsn,
                    self.log.cap
                ));
                Ok(framed)
            }
            Err(e) => {
                // Any other failure (EIO: what reached the disk is not known) leaves the
                // store refusing writes; this commit stands.
                self.failed = true;
                self.deferred_error = Some(e.to_string());
                Ok(framed)
            }
        }
    }

    /// The whole state as a checkpoint, in place of a commit's record (the ring has no room
    /// for it, the record is too large, or an earlier such checkpoint failed). On failure the
    /// store stays writable and the next commit tries again: the state in memory holds what
    /// this commit took, and the newest checkpoint and the log are as they were.
    fn checkpoint_for_commit(&mut self) -> Result<u64, Error> {
        match self.write_checkpoint() {
            Ok(n) => {
                if self.must_checkpoint.take().is_some() {
                    self.notices
                        .push("a checkpoint was written: commits go on".to_string());
                }
                Ok(n)
            }
            Err(e) if out_of_space(&e) => {
                self.abandon_checkpoint();
                self.must_checkpoint = Some(e.to_string());
                Err(e)
            }
            Err(e) => {
                self.failed = true;
                Err(e)
            }
        }
    }

    /// After a checkpoint failed: give back what it wrote (segment files no checkpoint names,
    /// a temporary file), best effort: on a full disk that space is what the next try needs.
    fn abandon_checkpoint(&mut self) {
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
        self.must_checkpoint.as_deref()
    }

    /// With nothing pending (a commit just ended), the in-memory state is the committed one:
    /// take a snapshot once the log since the newest checkpoint fills half the ring, and write
    /// the lagged checkpoint of that snapshot once it fills seven eighths. So a checkpoint
    /// comes every half ring of log and frees half the ring, replay from it rebuilds the
    /// archive rows written in the last three eighths of the ring before it, and the last
    /// eighth is headroom for the next records. Returns the checkpoint bytes written.
    fn after_append(&mut self) -> Result<u64, Error> {
        if let Some(cap) = self.ring_wanted() {
            return self.grow_ring(cap);
        }
        let used = self.end_lsn - self.ckpt_lsn;
        let cap = self.log.cap;
        let mut written = 0;
        if used >= cap - cap / 8 {
            if let Some(snap) = self.snap.take() {
                written = self.write_lagged_checkpoint(snap)?;
            }
        }
        if self.snap.is_none() && self.end_lsn - self.ckpt_lsn >= cap / 2 {
            self.snap = Some(Snapshot::take(
                &self.reg,
                self.end_lsn,
                self.next_seq,
                self.samples_total,
            ));
            self.reg.reseed_all();
            self.pending.reseed();
        }
        Ok(written)
    }

    /// The size of ring the series call for, when it is larger than the ring: 1.5 times
    /// `series x log_per_series`, in whole 64 KiB (so the next growth is a third of the
    /// series away, and a million series created one by one grow the ring about ten times).
    fn ring_wanted(&self) -> Option<u64> {
        let per = self.opts.log_per_series;
        let series = self.reg.len();
        if per == 0 || series < self.grow_retry_at {
            return None;
        }
        let need = (series as u64).checked_mul(per)?;
        if need <= self.log.cap {
            return None;
        }
        (need.checked_add(need / 2)?).checked_next_multiple_of(64 << 10)
    }

    /// Replace the ring by an empty one of `cap` bytes: built beside the log (`log.tmp`),
    /// then a full checkpoint (after it no record of the log is needed), then the new ring
    /// renamed over the log. A crash before the rename leaves the old log, which the
    /// checkpoint serves as well (the next open removes `log.tmp`); after it, the new one.
    /// A ring that cannot be built (no space) leaves the store as it was, with a notice.
    fn grow_ring(&mut self, cap: u64) -> Result<u64, Error> {
        let old = self.log.cap;
        if let Err(e) = self.log.prepare_larger(self.vfs.as_ref(), &self.dir, cap) {
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
        self.log = match ring::LogRing::replace(self.vfs.as_ref(), &self.dir)
            .inspect_err(|_| self.failed = true)?
        {
            Ok(ring) => ring,
            Err(why) => {
                self.failed = true;
                return Err(Error::Corrupt {
                    file: files::log(&self.dir),
                    offset: 0,
                    what: why,
                });
            }
        };
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

    /// Write the checkpoint of `snap` (replay starts at its position; complete at the log's
    /// end now); returns its size.
    fn write_lagged_checkpoint(&mut self, snap: Snapshot) -> Result<u64, Error> {
        let generation = self.ckpt_gen + 1;
        let mut w = CheckpointWriter::new(
            generation,
            snap.lsn,
            snap.seq,
            snap.next_id,
            self.end_lsn,
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
        let n = self.install_checkpoint(generation, snap.lsn, w, file, plan)?;
        self.samples_at_ckpt = snap.samples;
        Ok(n)
    }

    /// Open the file checkpoint `generation` is written into as it is built.
    fn begin_checkpoint(&self, generation: u64) -> Result<ckptfile::Writing, Error> {
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
    fn install_checkpoint(
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
        self.ckpt_gen = generation;
        self.ckpt_lsn = lsn;
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
    fn settle(&mut self, settled: Vec<segments::Settled>) {
        segments::settle(&mut self.reg, settled);
    }

    /// Once the heap holds more than [`Options::spill_bytes`] of sealed chunks no segment
    /// holds, store them now ([`segments::Segments::spill`]) rather than at the next
    /// checkpoint. A spill that fails (a full disk) costs memory, not data: the log holds
    /// those rows, the chunks stay on the heap, and the next try waits for another budget's
    /// worth; the files it left are removed by the next checkpoint or open.
    /// Returns the bytes it wrote.
    fn maybe_spill(&mut self) -> u64 {
        let budget = spill_budget(self.opts.spill_bytes, self.log.cap);
        if budget == 0 || self.opts.only.is_some() || self.failed {
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

    fn append(&mut self, payload: &[&[u8]], framed: u64) -> Result<(), Error> {
        let header = record_header(KIND_COMMIT, self.next_seq, self.end_lsn, payload);
        self.log
            .write_record(self.end_lsn, &header, payload, framed)?;
        self.log.sync()?;
        self.end_lsn += framed;
        self.next_seq += 1;
        self.stats.log_bytes += framed;
        self.stats.record_bytes += payload.iter().map(|p| p.len() as u64).sum::<u64>();
        Ok(())
    }

    /// Write the whole state as the next checkpoint generation, covering the log up to
    /// `end_lsn`; returns its size. Codec states restart from the RRDs.
    fn write_checkpoint(&mut self) -> Result<u64, Error> {
        let generation = self.ckpt_gen + 1;
        let mut w = CheckpointWriter::new(
            generation,
            self.end_lsn,
            self.next_seq,
            self.reg.next_id,
            self.end_lsn,
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
        let n = self.install_checkpoint(generation, self.end_lsn, w, file, plan)?;
        self.samples_at_ckpt = self.samples_total;
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
    fn newest_update(&self) -> i64 {
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
                self.failed = true;
            }
        })
    }

    /// Commit and release the lock, leaving the mark of a clean close.
    pub fn close(mut self) -> Result<(), Error> {
        self.mark_clean()
    }

    /// Everything accepted is committed: leave the mark of a clean close (the checkpoint
    /// generation, and where the log ends), so that a reader of a few series need not search
    /// the rest of the ring for committed records (docs/DURABILITY.md). The next write, or
    /// the next writer's open, removes it first. Nothing for a read-only store.
    pub fn mark_clean(&mut self) -> Result<(), Error> {
        if self.opts.only.is_some() {
            return Ok(());
        }
        self.commit()?;
        let m = clean::Mark {
            generation: self.ckpt_gen,
            end_lsn: self.end_lsn,
            next_seq: self.next_seq,
        };
        clean::write(self.vfs.as_ref(), &self.dir, &m).inspect_err(|_| self.failed = true)?;
        self.marked = true;
        Ok(())
    }

    /// Remove the mark of a clean close before writing anything after it.
    fn unmark(&mut self) -> Result<(), Error> {
        if self.marked {
            clean::remove(self.vfs.as_ref(), &self.dir)?;
            self.marked = false;
        }
        Ok(())
    }
}

/// A checkpoint is written a megabyte at a time as it is built, not held whole in memory.
const CHECKPOINT_WRITE: usize = 1 << 20;

/// Write what `w` has built so far, once it is [`CHECKPOINT_WRITE`] bytes.
fn stream(w: &mut CheckpointWriter, file: &mut ckptfile::Writing) -> Result<(), Error> {
    if let Some((at, bytes)) = w.take_written(CHECKPOINT_WRITE) {
        file.write_at(at, &bytes)?;
    }
    Ok(())
}

#[cfg(test)]
mod size_tests {
    use super::{parse_size, spill_budget, Options, SPILL_AUTO};

    #[test]
    fn the_default_spill_budget_is_an_eighth_of_the_ring_within_16_to_64_mib() {
        assert_eq!(spill_budget(SPILL_AUTO, 64 << 20), 16 << 20);
        assert_eq!(spill_budget(SPILL_AUTO, 8 << 20), 16 << 20);
        assert_eq!(spill_budget(SPILL_AUTO, 256 << 20), 32 << 20);
        assert_eq!(spill_budget(SPILL_AUTO, 4 << 30), 64 << 20);
        assert_eq!(spill_budget(0, 4 << 30), 0, "never");
        assert_eq!(spill_budget(1 << 20, 4 << 30), 1 << 20, "as told");
        assert_eq!(Options::default().spill_bytes, SPILL_AUTO);
    }

    #[test]
    fn sizes_take_binary_suffixes() {
        assert_eq!(parse_size("64M"), Ok(64 << 20));
        assert_eq!(parse_size("512k"), Ok(512 << 10));
        assert_eq!(parse_size("1G"), Ok(1 << 30));
        assert_eq!(parse_size("65536"), Ok(65536));
        assert!(parse_size("1k").unwrap_err().contains("minimum"));
        assert!(parse_size("lots").unwrap_err().contains("invalid size"));
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
