//! The series service: every way in (rrdcached's commands, carbon, the view, the CLI beside
//! the daemon, the web page) reaches a series through it. A client's file name becomes a
//! [`Target`] here (rrdcached's resolution against `-b`, `-B`'s checks, the store name); a
//! series is brought into the store here (a `.rrd` file imported on first sight,
//! [`import`]), made, replaced, removed and renamed here ([`life`]), with its placeholder
//! under `-b` ([`crate::placeholder`]) and the stamps of files someone else may change; and
//! the placeholders are put right when the daemon opens ([`repair`]).
//!
//! Methods on [`Daemon`] where every caller has a daemon and a name (`d.resolve(file)`);
//! functions of `(d, inner, ...)` where the caller holds the store lock. Nothing here knows a
//! protocol: errors are texts (or [`import::Fail`], which says whose text it is).

pub mod disk;
pub mod import;
pub mod life;
pub mod repair;

use crate::daemon::Daemon;
use crate::entry::Entry;
use proto::Response;
use std::sync::Arc;

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

impl Daemon {
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
        if self.restrict_base && !name.starts_with('/') {
            self.no_links(&name)
                .map_err(|_| format!("{abs}: Permission denied"))?;
        }
        let disk = self.disk_path(&abs);
        Ok(Target { abs, disk, name })
    }

    /// Where the placeholder of series `name` (a store name) goes: under the base directory
    /// for a relative name; at an absolute name itself (a client of a daemon without `-b`,
    /// or outside it without `-B`). None for a relative name without a base directory
    /// (carbon's series, the CLI's own names: not files) and, under `-B`, for an absolute
    /// name (outside the base: no client reaches it).
    pub fn placeholder_path(&self, name: &str) -> Option<Target> {
        let abs = if name.starts_with('/') {
            if self.restrict_base {
                return None;
            }
            name.to_string()
        } else {
            format!("{}/{name}", self.base.as_deref()?)
        };
        Some(Target {
            disk: self.disk_path(&abs),
            abs,
            name: name.to_string(),
        })
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

    /// The entry of series `t`, created (and the `.rrd` file imported on first sight) if
    /// needed. Errors are UPDATE's replies.
    pub fn entry(&self, t: &Target) -> Result<Arc<Entry>, Response> {
        let mut inner = self.lock();
        import::known(self, &mut inner, t)?;
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
pub(crate) mod tests {
    use super::*;
    use crate::config;

    /// Removes the test's directory (a store's 64 MiB log among it) when dropped.
    pub(crate) struct Cleanup(std::path::PathBuf);
    impl Drop for Cleanup {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }

    /// A daemon on a store of its own (named by `base`), with `-b base` if given.
    pub(crate) fn daemon(base: Option<&str>, restrict: bool) -> (Daemon, Cleanup) {
        let dir = std::env::temp_dir().join(format!(
            "ringlet-daemon-test-{}-{}",
            std::process::id(),
            base.unwrap_or("none").replace('/', "_")
        ));
        let _ = std::fs::remove_dir_all(&dir);
        let cleanup = Cleanup(dir.clone());
        let mut cfg = config::parse(&[]).expect("defaults");
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
