//! The daemon's shared state: the store, what each file has pending since the last commit,
//! suspended files, counters; and how a client's file name becomes a store name.
//!
//! One mutex guards the store and the pending lists: an update is applied to the in-memory
//! RRD at once (so reads see it) and becomes durable at the next commit, which writes every
//! series in one record. rrdcached's vocabulary maps onto that: "pending" values are those
//! accepted since the last commit, "flush" is a commit.

use crate::config::Config;
use engine::{Options, Store};
use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, MutexGuard};
use std::time::Duration;

/// rrdcached's STATS counters (all monotonic except where noted).
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
}

pub struct Inner {
    pub store: Store,
    /// Value strings accepted since the last commit, per store name, in order.
    pub pending: BTreeMap<String, Vec<String>>,
    pub suspended: BTreeSet<String>,
    /// (mtime, length) of each `.rrd` file as ringlet last wrote or read it: a file that
    /// differs when a client sends FORGET was changed by someone else (`rrdtool tune`, a
    /// local create) and is read again.
    pub disk: BTreeMap<String, (Option<std::time::SystemTime>, u64)>,
}

pub struct Daemon {
    inner: Mutex<Inner>,
    pub stats: Stats,
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
        let store = Store::open(
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
                pending: BTreeMap::new(),
                disk: BTreeMap::new(),
                suspended: BTreeSet::new(),
            }),
            stats: Stats::default(),
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

    /// Commit everything pending. Returns the number of samples made durable.
    pub fn commit(&self, inner: &mut Inner) -> Result<u64, String> {
        let st = inner.store.commit().map_err(|e| e.to_string())?;
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
        inner.pending.clear();
        Ok(st.samples as u64)
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
