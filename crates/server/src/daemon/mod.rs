//! The daemon's shared state: the store, the ingest entries, suspended files, counters; and
//! how a client's file name becomes a store name.
//!
//! Two kinds of lock. The store mutex ([`Inner`]) guards the store and what goes with it;
//! UPDATE does not take it: values are checked and queued per series by [`crate::ingest`] on
//! the connection thread. Queued values are applied to the store (`Store::update`: the
//! consolidation and the log encoding) under the store lock, series by series in acceptance
//! order: at a commit (the `-w` timer, FLUSH, FLUSHALL, shutdown), and before anything reads
//! a series; a commit then writes every applied series in one record ([`crate::daemon::commit`]). rrdcached's vocabulary
//! maps onto that: "pending" values are those accepted since the last commit, "flush" is a
//! commit.
//!
//! Lock order: store, then an entry, then the list of entries with queued values. An index
//! shard is never held while taking another lock.

pub mod commit;
pub mod read;
pub(crate) mod run;
pub mod series;
mod state;

pub use state::Blobs;

use crate::config::Config;
use crate::entry::{Entry, Index};
use engine::{Options, Store};
use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::Duration;

/// rrdcached's STATS counters, and ringlet's own (all monotonic).
#[derive(Default)]
pub struct Stats {
    pub updates_received: AtomicU64,
    pub flushes_received: AtomicU64,
    /// Series written by commits (rrdcached: successful rrd_update_r calls).
    pub updates_written: AtomicU64,
    /// Samples written by commits.
    pub data_sets_written: AtomicU64,
    /// Bytes appended to the log.
    pub journal_bytes: AtomicU64,
    pub commits: AtomicU64,
    /// Queued values whose application to the store did not give the outcome their check
    /// at ingest gave (should not happen; each is logged).
    pub apply_errors: AtomicU64,
}

pub struct Inner {
    pub(crate) store: Store,
    suspended: BTreeSet<String>,
    /// (mtime, length) of each `.rrd` file as ringlet last wrote or read it: a file that
    /// differs when a client sends FORGET was changed by someone else (`rrdtool tune`, a
    /// local create) and is read again.
    disk: BTreeMap<Arc<str>, (Option<std::time::SystemTime>, u64)>,
    /// Entries with values applied to the store since the last commit.
    applied: Vec<Arc<Entry>>,
    /// Where queued values are read into when they are applied, reused.
    scratch: rrd::update::Sample,
    /// What placeholders say, and where imported files go.
    places: crate::placeholder::Places,
}

pub struct Daemon {
    pub(crate) inner: Mutex<Inner>,
    /// Ingest entries by store name (and absolute name).
    pub index: Index,
    /// Entries that may have queued values, in the order they got their first one.
    pub(crate) dirty: Mutex<Vec<Arc<Entry>>>,
    /// Set once the store has failed a write: UPDATE refuses values from then on.
    pub(crate) failed: AtomicBool,
    /// Set while commits fail but the store can go on (a full disk: the checkpoint that a
    /// full log ring needs could not be written): UPDATE refuses values, with the reason,
    /// until a commit succeeds again.
    pub(crate) blocked: AtomicBool,
    /// Set when the final commit begins: UPDATE refuses values from then on.
    pub(crate) closing: AtomicBool,
    /// Bytes queued since the last full commit began, and the limit that starts one early.
    pub(crate) queued: AtomicU64,
    pub(crate) queue_limit: u64,
    /// Encoded bytes a commit's drain applies before it commits them and goes on
    /// ([`COMMIT_PIECE`], or `$RINGLET_COMMIT_PIECE`).
    pub(crate) commit_piece: usize,
    /// `-F`: write a checkpoint at shutdown, so that the next start replays no log.
    pub(crate) checkpoint_at_stop: bool,
    /// Wakes the committer before `-w` is up (the queues reached the limit).
    pub(crate) wake: Condvar,
    pub(crate) woken: Mutex<bool>,
    pub(crate) failure: Mutex<String>,
    pub stats: Stats,
    /// fsyncs (and fdatasyncs) the store has made.
    pub syncs: Arc<AtomicU64>,
    pub started: std::time::Instant,
    /// The process's disk bytes written once the store was open (STATS projects from the
    /// bytes after it).
    pub disk_bytes_at_open: u64,
    /// `-b`, canonical, without a trailing slash.
    pub base: Option<String>,
    /// Where the daemon itself reaches the files under `-b` when the view is mounted over it:
    /// `/proc/self/fd/N` of the base directory opened before the mount (the directory
    /// beneath the view), and that descriptor. Unset: the files are reached at `base`.
    pub(crate) lower: std::sync::OnceLock<(std::fs::File, String)>,
    /// Lines the listeners beside rrdcached's add to STATS (carbon's counts).
    more_stats: Mutex<Vec<Arc<dyn StatsLines>>>,
    pub restrict_base: bool,
    pub no_overwrite: bool,
    pub recursive_create: bool,
    pub commit_interval: Duration,
    /// What large replies (FETCH) hold at once ([`READ_BUDGET`]).
    pub reads: crate::gate::Share,
    /// The CLI's graphs beside the daemon (RUN `draw`): an rrdtool started ahead.
    pub spare: Arc<cli::graph::Spare>,
}

/// A listener beside rrdcached's (carbon) that counts what it does: its lines in STATS
/// (`Key: value`), after rrdcached's and ringlet's own. The daemon knows no listener.
pub trait StatsLines: Send + Sync {
    fn stats_lines(&self, out: &mut Vec<String>);
}

/// Bytes the replies being built at once may hold (FETCH's rows and text): a reply waits
/// for its share, one larger than this runs alone. The review found concurrent FETCHes of
/// 9 million rows adding up (831 MB each).
pub const READ_BUDGET: u64 = 1 << 30;

/// Encoded samples a drain applies before it commits them (see [`Daemon::commit_all`]).
pub(crate) const COMMIT_PIECE: usize = 16 << 20;

/// Entries drained per hold of the store lock in [`Daemon::commit_all`]: readers get the lock
/// between chunks.
pub(crate) const DRAIN_CHUNK: usize = 256;

impl Daemon {
    pub fn open(cfg: &Config, store_dir: &Path) -> Result<Daemon, String> {
        let base = match &cfg.base {
            Some(b) => {
                std::fs::create_dir_all(b)
                    .map_err(|e| format!("cannot create base directory {}: {e}", b.display()))?;
                let canon = b
                    .canonicalize()
                    .map_err(|e| format!("base directory {}: {e}", b.display()))?;
                let given = b.to_string_lossy().trim_end_matches('/').to_string();
                let canon = canon.to_string_lossy().to_string();
                if given != canon && !given.is_empty() {
                    return Err(format!(
                        "Base directory (-b) resolved via file system links! ({given} is {canon})"
                    ));
                }
                Some(canon)
            }
            None => None,
        };
        let syncs = Arc::new(AtomicU64::new(0));
        // The file systems placeholders are written on: -b's from the start.
        let written = crate::placeholder::Written::default();
        if let Some(b) = &base {
            written.note(Path::new(b));
        }
        let fs = engine::CountingFs {
            syncs: syncs.clone(),
        };
        let store = Store::open_with(
            Arc::new(fs),
            store_dir,
            Options {
                commit_interval: None,
                log_bytes: match cfg.log_size {
                    Some(n) => n,
                    None => engine::log_size_from_env()?,
                },
                log_per_series: match cfg.log_per_series {
                    Some(n) => n,
                    None => engine::log_per_series_from_env()?,
                },
                spill_bytes: match cfg.spill {
                    Some(n) => n,
                    None => engine::spill_bytes_from_env()?,
                },
                // The placeholders of the series a checkpoint holds are durable with it: an
                // open checks the others first, and these after it serves (lib.rs).
                before_checkpoint: Some({
                    let (syncs, written) = (syncs.clone(), written.clone());
                    engine::Hook(Arc::new(move || {
                        let n = written.sync()?;
                        syncs.fetch_add(n, Ordering::Relaxed);
                        Ok(())
                    }))
                }),
                ..Options::default()
            },
        )
        .map_err(|e| format!("cannot open store {}: {e}", store_dir.display()))?;
        Ok(Daemon {
            inner: Mutex::new(Inner {
                store,
                disk: BTreeMap::new(),
                suspended: BTreeSet::new(),
                applied: Vec::new(),
                scratch: rrd::update::reuse::scratch(),
                places: crate::placeholder::Places {
                    // -B: nothing below the base directory is reached through a link.
                    beneath: base
                        .as_ref()
                        .filter(|_| cfg.restrict_base)
                        .map(std::path::PathBuf::from),
                    written,
                    ..crate::placeholder::Places::new(
                        store_dir,
                        cfg.client_address().unwrap_or_default(),
                    )
                },
            }),
            index: Index::default(),
            dirty: Mutex::new(Vec::new()),
            failed: AtomicBool::new(false),
            blocked: AtomicBool::new(false),
            closing: AtomicBool::new(false),
            queued: AtomicU64::new(0),
            queue_limit: cfg.queue_limit,
            commit_piece: match std::env::var("RINGLET_COMMIT_PIECE") {
                Ok(v) if !v.is_empty() => engine::parse_any_size(&v)
                    .map_err(|e| format!("RINGLET_COMMIT_PIECE: {e}"))?
                    .max(1) as usize,
                _ => COMMIT_PIECE,
            },
            checkpoint_at_stop: cfg.flush_on_shutdown,
            wake: Condvar::new(),
            woken: Mutex::new(false),
            failure: Mutex::new(String::new()),
            stats: Stats::default(),
            syncs,
            spare: Arc::default(),
            started: std::time::Instant::now(),
            disk_bytes_at_open: host::proc::disk_bytes_written(),
            base,
            lower: std::sync::OnceLock::new(),
            more_stats: Mutex::new(Vec::new()),
            restrict_base: cfg.restrict_base,
            no_overwrite: cfg.no_overwrite,
            recursive_create: cfg.recursive_create,
            commit_interval: Duration::from_secs(cfg.commit_interval),
            reads: crate::gate::Share::new(READ_BUDGET),
        })
    }

    pub fn lock(&self) -> MutexGuard<'_, Inner> {
        // A panic while holding the lock must not take the daemon down with it: the state
        // is still consistent at every await point of the handlers (no partial writes).
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Add `s`'s lines to STATS from now on, after ringlet's own.
    pub fn add_stats(&self, s: Arc<dyn StatsLines>) {
        self.more_stats
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push(s);
    }

    /// The lines every listener beside rrdcached's adds to STATS.
    pub fn more_stats(&self) -> Vec<String> {
        let mut out = Vec::new();
        for s in self
            .more_stats
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .iter()
        {
            s.stats_lines(&mut out);
        }
        out
    }

    /// Why UPDATE refuses values: the store failed a write (it refuses writes until reopened),
    /// or commits fail until the disk has room again.
    pub fn failure(&self) -> Option<String> {
        if !self.failed.load(Ordering::Relaxed) && !self.blocked.load(Ordering::Relaxed) {
            return None;
        }
        Some(
            self.failure
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .clone(),
        )
    }

    pub(crate) fn note_store_error(&self, e: &engine::Error) {
        if matches!(e, engine::Error::Io(_) | engine::Error::PreviousIo) {
            let mut failure = self.failure.lock().unwrap_or_else(|p| p.into_inner());
            if !self.failed.swap(true, Ordering::Relaxed) {
                *failure = format!(
                    "a write to the store failed ({e}); restart the daemon, which serves what \
                     reached the disk"
                );
                crate::log::line(&format!(
                    "{failure}. Until then no value is accepted, and nothing the store holds \
                     in memory is read: it may never have reached the disk"
                ));
            }
        }
    }

    /// Why reads are refused: the store failed a write (or the committer panicked), so what
    /// it holds in memory may include values that never reached the disk and never will
    /// (reads must not serve what could not be made durable). A full disk does not stop
    /// reads: what is held is committed once there is room. None when reads are served.
    pub fn unreadable(&self) -> Option<String> {
        if !self.failed.load(Ordering::Relaxed) {
            return None;
        }
        let why = self
            .failure
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone();
        Some(format!(
            "{why} (nothing held in memory is read after a failed write: it may never have \
             reached the disk)"
        ))
    }

    /// List `e` as having queued values (its state says it is not listed yet).
    pub fn dirty(&self, e: &Arc<Entry>) {
        self.dirty
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push(e.clone());
    }
}
