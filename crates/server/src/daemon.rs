//! The daemon's shared state: the store, the ingest entries, suspended files, counters; how
//! a client's file name becomes a store name; and how queued values reach the store.
//!
//! Two kinds of lock. The store mutex ([`Inner`]) guards the store and what goes with it;
//! UPDATE does not take it: values are checked and queued per series by [`crate::ingest`] on
//! the connection thread. Queued values are applied to the store (`Store::update`: the
//! consolidation and the log encoding) under the store lock, series by series in acceptance
//! order: at a commit (the `-w` timer, FLUSH, FLUSHALL, shutdown), and before anything reads
//! a series. A commit then writes every applied series in one record. rrdcached's vocabulary
//! maps onto that: "pending" values are those accepted since the last commit, "flush" is a
//! commit.
//!
//! Lock order: store, then an entry, then the list of entries with queued values. An index
//! shard is never held while taking another lock.

use crate::config::Config;
use crate::ingest::{Entry, EntryState, Index, ACCEPTED};
use engine::{Options, Store};
use proto::Response;
use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant};

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
    pub disk: BTreeMap<String, (Option<std::time::SystemTime>, u64)>,
    /// Entries with values applied to the store since the last commit.
    applied: Vec<Arc<Entry>>,
}

pub struct Daemon {
    inner: Mutex<Inner>,
    /// Ingest entries by store name (and absolute name).
    pub index: Index,
    /// Entries that may have queued values, in the order they got their first one.
    dirty: Mutex<Vec<Arc<Entry>>>,
    /// Set once the store has failed a write: UPDATE refuses values from then on.
    failed: AtomicBool,
    /// Set when the final commit begins: UPDATE refuses values from then on.
    closing: AtomicBool,
    /// Bytes queued since the last full commit began, and the limit that starts one early.
    queued: AtomicU64,
    queue_limit: u64,
    /// Wakes the committer before `-w` is up (the queues reached the limit).
    wake: Condvar,
    woken: Mutex<bool>,
    failure: Mutex<String>,
    pub stats: Stats,
    /// fsyncs (and fdatasyncs) the store has made.
    pub syncs: Arc<AtomicU64>,
    pub started: std::time::Instant,
    /// `-b`, canonical, without a trailing slash.
    pub base: Option<String>,
    pub restrict_base: bool,
    pub no_overwrite: bool,
    pub recursive_create: bool,
    pub commit_interval: Duration,
}

/// A client's file name, resolved.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Target {
    /// The absolute name rrdcached would print in replies.
    pub abs: String,
    /// The store name.
    pub name: String,
}

/// Entries drained per hold of the store lock in [`Daemon::commit_all`]: readers get the lock
/// between chunks.
const DRAIN_CHUNK: usize = 256;

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
            }),
            index: Index::default(),
            dirty: Mutex::new(Vec::new()),
            failed: AtomicBool::new(false),
            closing: AtomicBool::new(false),
            queued: AtomicU64::new(0),
            queue_limit: cfg.queue_limit,
            wake: Condvar::new(),
            woken: Mutex::new(false),
            failure: Mutex::new(String::new()),
            stats: Stats::default(),
            syncs,
            started: std::time::Instant::now(),
            base,
            restrict_base: cfg.restrict_base,
            no_overwrite: cfg.no_overwrite,
            recursive_create: cfg.recursive_create,
            commit_interval: Duration::from_secs(cfg.commit_interval),
        })
    }

    pub fn lock(&self) -> MutexGuard<'_, Inner> {
        // A panic while holding the lock must not take the daemon down with it: the state
        // is still consistent at every await point of the handlers (no partial writes).
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Resolve a client's file name as rrdcached does, then normalise it into a store name
    /// (so `./x.rrd` and `x.rrd` are one series, unlike rrdcached's #1071).
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
        Ok(Target { abs, name })
    }

    /// The absolute name of a store name, for replies that list files.
    pub fn abs_of(&self, name: &str) -> String {
        match &self.base {
            Some(b) if !name.starts_with('/') => format!("{b}/{name}"),
            _ => name.to_string(),
        }
    }

    /// Count `bytes` more of queued values; at the limit, wake the committer (as the store
    /// commits on its own when its pending data reaches its size limit), so that the queues'
    /// memory stays bounded whatever `-w` is.
    pub fn queued(&self, bytes: u64) {
        let before = self.queued.fetch_add(bytes, Ordering::Relaxed);
        if before < self.queue_limit && before + bytes >= self.queue_limit {
            *self.woken.lock().unwrap_or_else(|p| p.into_inner()) = true;
            self.wake.notify_one();
        }
    }

    /// The committer thread: commit everything every `-w` seconds, and whenever the queues
    /// reach their limit.
    pub fn committer(&self) -> ! {
        let mut due = Instant::now() + self.commit_interval;
        loop {
            let mut woken = self.woken.lock().unwrap_or_else(|p| p.into_inner());
            while !*woken {
                let now = Instant::now();
                if now >= due {
                    break;
                }
                woken = match self.wake.wait_timeout(woken, due - now) {
                    Ok((g, _)) => g,
                    Err(p) => p.into_inner().0,
                };
            }
            *woken = false;
            drop(woken);
            // Whatever is pending (samples, and creates without samples); a commit with
            // nothing pending writes nothing.
            if let Err(e) = self.commit_all() {
                crate::log(&format!("commit failed: {e}"));
            }
            due = Instant::now() + self.commit_interval;
        }
    }

    /// Whether the final commit has begun.
    pub fn closing(&self) -> bool {
        self.closing.load(Ordering::SeqCst)
    }

    /// The last commit, at shutdown: stop accepting values, wait for the UPDATEs under way
    /// (each holds its entry's lock while it queues), then apply and commit everything, so
    /// every value acknowledged is durable.
    pub fn final_commit(&self) -> Result<u64, String> {
        self.closing.store(true, Ordering::SeqCst);
        for e in self.index.entries() {
            drop(e.lock());
        }
        self.commit_all()
    }

    /// Why UPDATE refuses values: the store failed a write (it refuses writes until reopened).
    pub fn failure(&self) -> Option<String> {
        if !self.failed.load(Ordering::Relaxed) {
            return None;
        }
        Some(
            self.failure
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .clone(),
        )
    }

    fn note_store_error(&self, e: &engine::Error) {
        if matches!(e, engine::Error::Io(_) | engine::Error::PreviousIo) {
            *self.failure.lock().unwrap_or_else(|p| p.into_inner()) =
                engine::Error::PreviousIo.to_string();
            self.failed.store(true, Ordering::Relaxed);
        }
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
        crate::handlers::known(&mut inner, t)?;
        if let Some(e) = self.index.get(&t.name) {
            return Ok(e);
        }
        let Some(rrd) = inner.store.get(&t.name) else {
            return Err(Response::err(format!("No such file: {}", t.abs)));
        };
        let e = Arc::new(Entry::new(t, rrd));
        self.index.insert(&t.name, &e);
        Ok(e)
    }

    /// Apply `name`'s queued values to the store (before a read or a FLUSH of it).
    pub fn apply_series(&self, inner: &mut Inner, name: &str) {
        if let Some(e) = self.index.get(name) {
            let mut st = e.lock();
            self.apply_queue(inner, &e, &mut st);
        }
    }

    /// Apply an entry's queued values to the store, in order. A value whose outcome differs
    /// from the one its check gave at ingest is counted and logged; the others go on.
    fn apply_queue(&self, inner: &mut Inner, e: &Arc<Entry>, st: &mut EntryState) {
        if st.queue.is_empty() {
            return;
        }
        let queue = std::mem::take(&mut st.queue);
        let mut sample = std::mem::replace(&mut st.scratch, crate::sample::scratch());
        let mut bad = 0u64;
        // The first mismatch is logged with the count (a failed store fails every value).
        let mut first: Option<String> = None;
        for line in queue.split_terminator('\n') {
            let (flag, v) = (line.as_bytes()[0], &line[1..]);
            let read = match crate::sample::stamp(v) {
                Some(stamp) => crate::sample::read(&st.shadow.schema, v, stamp, &mut sample),
                None => Err(rrd::RrdError::new("no timestamp")),
            };
            if let Err(err) = read {
                bad += 1;
                first.get_or_insert_with(|| format!("{v} lost: {}", err.msg));
                continue;
            }
            match inner.store.update(&e.name, &sample, &mut |_| {}) {
                Ok(()) if flag == ACCEPTED => {}
                Err(engine::Error::Rrd(_)) if flag != ACCEPTED => {}
                Ok(()) => {
                    bad += 1;
                    first.get_or_insert_with(|| format!("{v} applied, though refused"));
                }
                Err(err) => {
                    bad += 1;
                    self.note_store_error(&err);
                    first.get_or_insert_with(|| format!("{v} not applied: {err}"));
                }
            }
        }
        st.scratch = sample;
        st.applied = st.pending.len();
        st.applied_n = st.pending_n;
        if !st.in_applied {
            st.in_applied = true;
            inner.applied.push(e.clone());
        }
        if let Some(what) = first {
            crate::log(&format!(
                "{}: {bad} queued value(s) did not apply as checked; first: {what}",
                e.abs
            ));
            self.stats.apply_errors.fetch_add(bad, Ordering::Relaxed);
            // The shadow went its own way: start again from what the store has.
            if let Some(rrd) = inner.store.get(&e.name) {
                st.shadow = crate::ingest::shadow_of(rrd);
            }
        }
    }

    /// Forget `name`'s queued and pending values and restart its checks from the store's
    /// series (after CREATE, FORGET, or a re-read file).
    pub fn reset_series(&self, inner: &mut Inner, name: &str) {
        if let (Some(e), Some(rrd)) = (self.index.get(name), inner.store.get(name)) {
            e.lock().reset(rrd);
        }
    }

    /// Commit what has been applied to the store. Returns the number of samples made durable.
    pub fn commit(&self, inner: &mut Inner) -> Result<u64, String> {
        let st = match inner.store.commit() {
            Ok(st) => st,
            Err(e) => {
                self.note_store_error(&e);
                return Err(e.to_string());
            }
        };
        if st.samples > 0 {
            self.stats.commits.fetch_add(1, Ordering::Relaxed);
        }
        self.stats
            .updates_written
            .fetch_add(st.series as u64, Ordering::Relaxed);
        self.stats
            .data_sets_written
            .fetch_add(st.samples as u64, Ordering::Relaxed);
        self.stats
            .journal_bytes
            .fetch_add(st.bytes, Ordering::Relaxed);
        // What was applied is durable: no longer pending.
        for e in std::mem::take(&mut inner.applied) {
            let mut s = e.lock();
            let (cut, n) = (s.applied, s.applied_n);
            s.pending.drain(..cut);
            s.pending_n -= n;
            s.applied = 0;
            s.applied_n = 0;
            s.in_applied = false;
        }
        Ok(st.samples as u64)
    }

    /// Apply every queued value and commit: everything accepted before the call is durable
    /// when it returns. The store lock is let go between chunks of series so that reads are
    /// not held up by a long drain.
    pub fn commit_all(&self) -> Result<u64, String> {
        self.queued.store(0, Ordering::Relaxed);
        let mut budget = self.dirty.lock().unwrap_or_else(|p| p.into_inner()).len();
        loop {
            let mut inner = self.lock();
            let chunk: Vec<Arc<Entry>> = {
                let mut dirty = self.dirty.lock().unwrap_or_else(|p| p.into_inner());
                let k = budget.min(DRAIN_CHUNK).min(dirty.len());
                dirty.drain(..k).collect()
            };
            budget -= chunk.len();
            for e in &chunk {
                let mut st = e.lock();
                st.in_dirty = false;
                self.apply_queue(&mut inner, e, &mut st);
            }
            if budget == 0 || chunk.is_empty() {
                return self.commit(&mut inner);
            }
        }
    }

    /// Entries with values accepted since the last commit, with their count, by name.
    pub fn pending_series(&self, inner: &Inner) -> Vec<(Arc<Entry>, usize)> {
        let mut all: Vec<Arc<Entry>> = self.dirty.lock().unwrap_or_else(|p| p.into_inner()).clone();
        all.extend(inner.applied.iter().cloned());
        all.sort_by(|a, b| a.name.cmp(&b.name));
        all.dedup_by(|a, b| Arc::ptr_eq(a, b));
        all.into_iter()
            .filter_map(|e| {
                let n = e.lock().pending_n;
                (n > 0).then_some((e, n))
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn daemon(base: Option<&str>, restrict: bool) -> Daemon {
        let dir = std::env::temp_dir().join(format!(
            "ringlet-daemon-test-{}-{}",
            std::process::id(),
            base.unwrap_or("none").replace('/', "_")
        ));
        let _ = std::fs::remove_dir_all(&dir);
        let mut cfg = crate::config::parse(&[]).expect("defaults");
        cfg.restrict_base = restrict;
        cfg.base = base.map(|b| {
            let p = dir.join(b.trim_start_matches('/'));
            std::fs::create_dir_all(&p).unwrap();
            p
        });
        Daemon::open(&cfg, &dir.join("store")).expect("opens")
    }

    #[test]
    fn relative_and_absolute_names_meet_in_one_series() {
        let d = daemon(Some("db"), true);
        let base = d.base.clone().unwrap();
        let a = d.resolve("x/./a.rrd").unwrap();
        let b = d.resolve(&format!("{base}/x/a.rrd")).unwrap();
        assert_eq!(a.name, "x/a.rrd");
        assert_eq!(a.name, b.name);
        assert_eq!(b.abs, format!("{base}/x/a.rrd"));
    }

    #[test]
    fn restricted_base_refuses_escapes_with_rrdcacheds_text() {
        let d = daemon(Some("db2"), true);
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
        let d = daemon(Some("db3"), false);
        assert_eq!(d.resolve("/srv/x.rrd").unwrap().name, "/srv/x.rrd");
    }
}
