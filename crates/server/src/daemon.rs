//! The daemon's shared state: the store, the ingest entries, suspended files, counters; and
//! how a client's file name becomes a store name.
//!
//! Two kinds of lock. The store mutex ([`Inner`]) guards the store and what goes with it;
//! UPDATE does not take it: values are checked and queued per series by [`crate::ingest`] on
//! the connection thread. Queued values are applied to the store (`Store::update`: the
//! consolidation and the log encoding) under the store lock, series by series in acceptance
//! order: at a commit (the `-w` timer, FLUSH, FLUSHALL, shutdown), and before anything reads
//! a series; a commit then writes every applied series in one record ([`crate::commit`]). rrdcached's vocabulary
//! maps onto that: "pending" values are those accepted since the last commit, "flush" is a
//! commit.
//!
//! Lock order: store, then an entry, then the list of entries with queued values. An index
//! shard is never held while taking another lock.

use crate::config::Config;
use crate::ingest::{Entry, Index};
use engine::{Options, Store};
use proto::Response;
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
    pub store: Store,
    pub suspended: BTreeSet<String>,
    /// (mtime, length) of each `.rrd` file as ringlet last wrote or read it: a file that
    /// differs when a client sends FORGET was changed by someone else (`rrdtool tune`, a
    /// local create) and is read again.
    pub disk: BTreeMap<Arc<str>, (Option<std::time::SystemTime>, u64)>,
    /// Entries with values applied to the store since the last commit.
    pub(crate) applied: Vec<Arc<Entry>>,
    /// Where queued values are read into when they are applied, reused.
    pub(crate) scratch: rrd::update::Sample,
    /// What placeholders say, and where imported files go.
    pub places: crate::placeholder::Places,
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
    /// ([`crate::commit::COMMIT_PIECE`], or `$RINGLET_COMMIT_PIECE`).
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
    /// Carbon's side (`--carbon`): its rules and counts, for STATS.
    carbon: std::sync::OnceLock<Arc<crate::carbon::Carbon>>,
    pub restrict_base: bool,
    pub no_overwrite: bool,
    pub recursive_create: bool,
    pub commit_interval: Duration,
    /// What large replies (FETCH) hold at once ([`READ_BUDGET`]).
    pub reads: crate::gate::Share,
}

/// Bytes the replies being built at once may hold (FETCH's rows and text): a reply waits
/// for its share, one larger than this runs alone. The review found concurrent FETCHes of
/// 9 million rows adding up (831 MB each).
pub const READ_BUDGET: u64 = 1 << 30;

/// A client's file name, resolved.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Target {
    /// The absolute name rrdcached would print in replies.
    pub abs: String,
    /// Where the daemon reaches `abs` on disk: `abs` itself, or the same path in the
    /// directory beneath a view mounted over `-b` ([`Daemon::disk_path`]).
    pub disk: std::path::PathBuf,
    /// The store name.
    pub name: String,
}

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
        let fs = crate::iostats::CountingFs {
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
                before_checkpoint: base.clone().map(|b| {
                    let syncs = syncs.clone();
                    engine::Hook(Arc::new(move || {
                        syncs.fetch_add(1, Ordering::Relaxed);
                        crate::sys::sync_file_system(Path::new(&b))
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
                scratch: crate::sample::scratch(),
                places: crate::placeholder::Places {
                    // -B: nothing below the base directory is reached through a link.
                    beneath: base
                        .as_ref()
                        .filter(|_| cfg.restrict_base)
                        .map(std::path::PathBuf::from),
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
                _ => crate::commit::COMMIT_PIECE,
            },
            checkpoint_at_stop: cfg.flush_on_shutdown,
            wake: Condvar::new(),
            woken: Mutex::new(false),
            failure: Mutex::new(String::new()),
            stats: Stats::default(),
            syncs,
            started: std::time::Instant::now(),
            disk_bytes_at_open: crate::iostats::disk_bytes_written(),
            base,
            lower: std::sync::OnceLock::new(),
            carbon: std::sync::OnceLock::new(),
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

    /// Resolve a client's file name as rrdcached does, then normalise it into a store name
    /// (so `./x.rrd` and `x.rrd` are one series, unlike rrdcached's #1071).
    /// Take carbon's plaintext protocol with these rules (once, at start).
    pub fn set_carbon(&self, c: Arc<crate::carbon::Carbon>) {
        let _ = self.carbon.set(c);
    }

    /// Carbon's side, if `--carbon` was given.
    pub fn carbon(&self) -> Option<Arc<crate::carbon::Carbon>> {
        self.carbon.get().cloned()
    }

    pub fn resolve(&self, file: &str) -> Result<Target, String> {
        let abs = match (&self.base, file.starts_with('/')) {
            (Some(base), false) => format!("{base}/{file}"),
            _ => file.to_string(),
        };
        if self.restrict_base {
            let inside = match &self.base {
                Some(base) => abs.starts_with(&format!("{base}/")) && !abs.contains("../"),
                None => !abs.contains("../"),
            };
            if !inside {
                return Err(format!("{abs}: Permission denied"));
            }
        }
        let rel = match &self.base {
            Some(base) => abs.strip_prefix(&format!("{base}/")).unwrap_or(&abs),
            None => &abs,
        };
        let name = engine::normalize_name(rel).map_err(|_| format!("{abs}: Permission denied"))?;
        if self.restrict_base && !name.starts_with('/') {
            self.no_links(&name)
                .map_err(|_| format!("{abs}: Permission denied"))?;
        }
        let disk = self.disk_path(&abs);
        Ok(Target { abs, disk, name })
    }

    /// Reach the files under `-b` through `dir` (the base directory opened before the view
    /// is mounted over it) from now on: set once, before anything under `-b` is touched.
    pub fn go_beneath(&self, dir: std::fs::File) {
        use std::os::fd::AsRawFd;
        let path = format!("/proc/self/fd/{}", dir.as_raw_fd());
        if self.restrict_base {
            self.lock().places.beneath = Some(std::path::PathBuf::from(&path));
        }
        let _ = self.lower.set((dir, path));
    }

    /// The base directory as the daemon reaches it on disk (beneath the view, if it is
    /// mounted over it).
    pub fn disk_base(&self) -> Option<&str> {
        match self.lower.get() {
            Some((_, p)) => Some(p.as_str()),
            None => self.base.as_deref(),
        }
    }

    /// Where the daemon reaches the absolute path `abs` on disk.
    pub fn disk_path(&self, abs: &str) -> std::path::PathBuf {
        if let (Some((_, lower)), Some(base)) = (self.lower.get(), &self.base) {
            if let Some(rel) = abs.strip_prefix(base.as_str()) {
                if rel.is_empty() || rel.starts_with('/') {
                    return std::path::PathBuf::from(format!("{lower}{rel}"));
                }
            }
        }
        std::path::PathBuf::from(abs)
    }

    /// Under `-B`: no component of `name` below the base directory may be a symbolic link
    /// (`base/link -> /elsewhere` would take CREATE, the import of a file, FLUSH and FORGET
    /// outside it). Components that do not exist end the check: nothing is under them.
    pub(crate) fn no_links(&self, name: &str) -> Result<(), ()> {
        let Some(base) = self.disk_base() else {
            return Ok(());
        };
        let mut p = std::path::PathBuf::from(base);
        for c in name.split('/') {
            p.push(c);
            match std::fs::symlink_metadata(&p) {
                Ok(m) if m.file_type().is_symlink() => return Err(()),
                Ok(_) => {}
                Err(_) => return Ok(()),
            }
        }
        Ok(())
    }

    /// The absolute name of a store name, for replies that list files.
    /// The key the ingest index and the connections' maps look `file` up by: a name under
    /// the base directory sent whole without the base's prefix, else `file` as sent. Such a
    /// key names the series that `file` resolves to whenever it is a store name (the index
    /// holds store names only, each resolved and checked when its entry was made).
    pub fn index_key<'a>(&self, file: &'a str) -> &'a str {
        match &self.base {
            Some(b) => file
                .strip_prefix(b.as_str())
                .and_then(|r| r.strip_prefix('/'))
                .filter(|r| !r.is_empty())
                .unwrap_or(file),
            None => file,
        }
    }

    pub fn abs_of(&self, name: &str) -> String {
        match &self.base {
            Some(b) if !name.starts_with('/') => format!("{b}/{name}"),
            _ => name.to_string(),
        }
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
                crate::log(&format!(
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

    /// The entry of series `t`, created (and the `.rrd` file imported on first sight) if
    /// needed. Errors are UPDATE's replies.
    pub fn entry(&self, t: &Target) -> Result<Arc<Entry>, Response> {
        let mut inner = self.lock();
        crate::handlers::known(self, &mut inner, t)?;
        if let Some(e) = self.index.get(&t.name) {
            return Ok(e);
        }
        let (Some(rrd), Some(name)) = (inner.store.get(&t.name), inner.store.shared_name(&t.name))
        else {
            return Err(Response::err(format!("No such file: {}", t.abs)));
        };
        let e = Arc::new(Entry::new(name, rrd));
        self.index.insert(&e);
        Ok(e)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Removes the test's directory (a store's 64 MiB log among it) when dropped.
    struct Cleanup(std::path::PathBuf);
    impl Drop for Cleanup {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }

    fn daemon(base: Option<&str>, restrict: bool) -> (Daemon, Cleanup) {
        let dir = std::env::temp_dir().join(format!(
            "ringlet-daemon-test-{}-{}",
            std::process::id(),
            base.unwrap_or("none").replace('/', "_")
        ));
        let _ = std::fs::remove_dir_all(&dir);
        let cleanup = Cleanup(dir.clone());
        let mut cfg = crate::config::parse(&[]).expect("defaults");
        cfg.restrict_base = restrict;
        cfg.base = base.map(|b| {
            let p = dir.join(b.trim_start_matches('/'));
            std::fs::create_dir_all(&p).unwrap();
            p
        });
        (
            Daemon::open(&cfg, &dir.join("store")).expect("opens"),
            cleanup,
        )
    }

    #[test]
    fn relative_and_absolute_names_meet_in_one_series() {
        let (d, _c) = daemon(Some("db"), true);
        let base = d.base.clone().unwrap();
        let a = d.resolve("x/./a.rrd").unwrap();
        let b = d.resolve(&format!("{base}/x/a.rrd")).unwrap();
        assert_eq!(a.name, "x/a.rrd");
        assert_eq!(a.name, b.name);
        assert_eq!(b.abs, format!("{base}/x/a.rrd"));
    }

    /// An absolute spelling finds the entry made for the relative one (and the reverse)
    /// through the one key the index holds, and a name outside the base is its own key.
    #[test]
    fn absolute_names_look_up_the_store_name() {
        let (d, _c) = daemon(Some("db4"), false);
        let base = d.base.clone().unwrap();
        assert_eq!(d.index_key(&format!("{base}/x/a.rrd")), "x/a.rrd");
        assert_eq!(d.index_key("x/a.rrd"), "x/a.rrd");
        assert_eq!(
            d.index_key(&format!("{base}x/a.rrd")),
            format!("{base}x/a.rrd")
        );
        assert_eq!(d.index_key(&format!("{base}/")), format!("{base}/"));
        assert_eq!(d.index_key("/srv/x.rrd"), "/srv/x.rrd");
        let rrd = rrd::Rrd::new(
            rrd::create::parse_create(
                &["a.rrd", "DS:x:GAUGE:20:U:U", "RRA:LAST:0.5:1:10"].map(String::from),
                1_700_000_000,
            )
            .unwrap()
            .schema,
            1_700_000_000,
        );
        d.lock().store.create("x/a.rrd", rrd, false).unwrap();
        let e = crate::ingest::entry_for(&d, &format!("{base}/x/a.rrd")).unwrap();
        let f = crate::ingest::entry_for(&d, "x/a.rrd").unwrap();
        let g = crate::ingest::entry_for(&d, "x//a.rrd").unwrap();
        assert!(Arc::ptr_eq(&e, &f) && Arc::ptr_eq(&e, &g));
        assert_eq!(d.index.entries().len(), 1);
    }

    #[test]
    fn restricted_base_refuses_escapes_with_rrdcacheds_text() {
        let (d, _c) = daemon(Some("db2"), true);
        let base = d.base.clone().unwrap();
        assert_eq!(
            d.resolve("../x.rrd").unwrap_err(),
            format!("{base}/../x.rrd: Permission denied")
        );
        assert_eq!(
            d.resolve("/etc/x.rrd").unwrap_err(),
            "/etc/x.rrd: Permission denied"
        );
    }

    #[test]
    fn unrestricted_absolute_names_outside_base_are_kept_whole() {
        let (d, _c) = daemon(Some("db3"), false);
        assert_eq!(d.resolve("/srv/x.rrd").unwrap().name, "/srv/x.rrd");
    }
}
