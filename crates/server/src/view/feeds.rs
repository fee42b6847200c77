//! The emoncms views (`--phpfina DIR`, `--phptimeseries DIR`): which names are feed files,
//! what a write to one may be, and the feed files' side of each call, in the store's blobs.
//!
//! The files' layout is `codec::emoncms`'s.
//!
//! A feed file is the blob `phpfina/<name>` (`phptimeseries/<name>`); the web page and the
//! Graphite API read PHPFina feeds from them (`crate::feeds`).

use super::kind::META_LEN;
use super::*;
use engine::Error;

/// The errno for an error of the store's.
fn store_errno(e: &Error) -> Errno {
    match e {
        Error::NotFound(_) => Errno::ENOENT,
        Error::Invalid(_) => Errno::EINVAL,
        Error::ReadOnly => Errno::EROFS,
        _ => Errno::EIO,
    }
}

impl View {
    /// The blob of feed file `path`.
    fn blob(&self, path: &str) -> String {
        format!("{}{path}", self.kind.prefix())
    }

    /// When the daemon started: the time a feed file not changed since shows.
    pub(super) fn started(&self) -> SystemTime {
        SystemTime::now() - self.d.started.elapsed()
    }

    /// The feed files the store holds for this view.
    pub(super) fn feed_names(&self) -> BTreeSet<String> {
        let prefix = self.kind.prefix();
        let all = self.d.lock().blobs().list();
        all.into_iter()
            .filter_map(|(n, _)| n.strip_prefix(prefix).map(str::to_string))
            .collect()
    }

    /// The length of feed file `path`, if it exists.
    pub(super) fn feed_len(&self, path: &str) -> Option<u64> {
        self.d.lock().blobs().len(&self.blob(path))
    }

    /// A change to make to the plain copy beneath too, while it is kept in step
    /// (`copy.rs`: from the stop's write-back until the unmount). Called with the store
    /// locked.
    fn through(&self, f: impl FnOnce(&super::copy::FeedCopy)) {
        if let Some(c) = self.copy.as_deref().filter(|c| c.through()) {
            f(c);
        }
    }

    fn touched(&self, path: &str) {
        lock(&self.mtimes).insert(path.to_string(), SystemTime::now());
    }

    /// A refusal: logged, with its errno.
    fn refuse(&self, path: &str, why: &str) -> Errno {
        crate::log::line(&format!("{}: {path}: refused: {why}", self.kind.what()));
        Errno::EINVAL
    }

    /// A store error on `path`: logged unless it is a plain one (a file gone), as an errno.
    fn failed(&self, path: &str, e: &Error) -> Errno {
        let n = store_errno(e);
        if n != Errno::ENOENT {
            crate::log::line(&format!("{}: {path}: {e}", self.kind.what()));
        }
        n
    }

    /// What a change of `path` in the store came to, as the call's answer.
    fn changed(&self, path: &str, r: Result<(), Error>) -> Result<(), Errno> {
        match r {
            Ok(()) => {
                self.touched(path);
                Ok(())
            }
            Err(Error::Invalid(why)) => Err(self.refuse(path, &why)),
            Err(e) => Err(self.failed(path, &e)),
        }
    }

    /// The store refuses reads after a failed write (logged once, then).
    fn readable(&self) -> Result<(), Errno> {
        match self.d.unreadable() {
            Some(_) => Err(Errno::EIO),
            None => Ok(()),
        }
    }

    /// Make feed file `path`, empty (O_CREAT); an existing one is kept unless `trunc`.
    pub(super) fn feed_create(&self, path: &str, trunc: bool) -> Result<(), Errno> {
        if !self.kind.valid(path) {
            return Err(self.refuse(path, "not the name of a feed's file"));
        }
        let name = self.blob(path);
        let mut inner = self.d.lock();
        let r = match inner.blobs().len(&name) {
            Some(_) if trunc => inner.blobs_mut().set_len(&name, 0),
            Some(_) => Ok(()),
            None => inner.blobs_mut().create(&name),
        };
        if r.is_ok() && (trunc || inner.blobs().len(&name) == Some(0)) {
            self.through(|c| c.set_len(path, 0));
        }
        drop(inner);
        r.map_err(|e| self.failed(path, &e))?;
        self.touched(path);
        Ok(())
    }

    /// A feed file put in place whole (a plain file renamed to a feed's name).
    pub(super) fn feed_import(&self, path: &str, bytes: &[u8]) -> Result<(), Errno> {
        if !self.kind.valid(path) {
            return Err(self.refuse(path, "not the name of a feed's file"));
        }
        if let Some(why) = self.kind.bad_len(path, bytes.len() as u64) {
            return Err(self.refuse(path, &why));
        }
        if let Some(why) = self.kind.bad_write(path, 0, bytes, &[]) {
            return Err(self.refuse(path, &why));
        }
        let name = self.blob(path);
        let mut inner = self.d.lock();
        let r = inner
            .blobs_mut()
            .create(&name)
            .and_then(|()| inner.blobs_mut().write(&name, 0, bytes));
        if r.is_ok() {
            self.through(|c| {
                c.set_len(path, 0);
                c.wrote(path, 0, bytes);
            });
        }
        drop(inner);
        r.map_err(|e| self.failed(path, &e))?;
        self.touched(path);
        Ok(())
    }

    pub(super) fn feed_read(&self, path: &str, off: u64, size: u32) -> Result<Vec<u8>, Errno> {
        self.readable()?;
        let r = self
            .d
            .lock()
            .blobs()
            .read(&self.blob(path), off, u64::from(size));
        r.map_err(|e| self.failed(path, &e))
    }

    pub(super) fn feed_write(&self, path: &str, off: u64, data: &[u8]) -> Result<(), Errno> {
        let name = self.blob(path);
        let mut inner = self.d.lock();
        let meta = if path.ends_with(".meta") {
            inner
                .blobs()
                .read(&name, 0, META_LEN)
                .map_err(|e| self.failed(path, &e))?
        } else {
            Vec::new()
        };
        if let Some(why) = self.kind.bad_write(path, off, data, &meta) {
            drop(inner);
            return Err(self.refuse(path, &why));
        }
        let r = inner.blobs_mut().write(&name, off, data);
        if r.is_ok() {
            self.through(|c| c.wrote(path, off, data));
        }
        drop(inner);
        self.changed(path, r)
    }

    pub(super) fn feed_set_len(&self, path: &str, len: u64) -> Result<(), Errno> {
        if let Some(why) = self.kind.bad_len(path, len) {
            return Err(self.refuse(path, &why));
        }
        let mut inner = self.d.lock();
        let r = inner.blobs_mut().set_len(&self.blob(path), len);
        if r.is_ok() {
            self.through(|c| c.set_len(path, len));
        }
        drop(inner);
        self.changed(path, r)
    }

    pub(super) fn feed_remove(&self, path: &str) -> Result<(), Errno> {
        let mut inner = self.d.lock();
        let r = inner.blobs_mut().remove(&self.blob(path));
        if r.is_ok() {
            self.through(|c| c.removed(path));
        }
        drop(inner);
        lock(&self.mtimes).remove(path);
        r.map_err(|e| self.failed(path, &e))
    }

    /// Feed file `from` renamed to `to`: to another feed file's name only (anything else,
    /// EXDEV: `mv` then copies it).
    pub(super) fn feed_rename(&self, from: &str, to: &str) -> Result<(), Errno> {
        if !self.kind.own(to) {
            return Err(Errno::EXDEV);
        }
        if !self.kind.valid(to) {
            return Err(self.refuse(to, "not the name of a feed's file"));
        }
        let mut inner = self.d.lock();
        let r = inner.blobs_mut().rename(&self.blob(from), &self.blob(to));
        if r.is_ok() {
            self.through(|c| c.renamed(from, to));
        }
        drop(inner);
        r.map_err(|e| self.failed(from, &e))?;
        let mut m = lock(&self.mtimes);
        let t = m.remove(from).unwrap_or_else(SystemTime::now);
        m.insert(to.to_string(), t);
        Ok(())
    }

    /// fsync of a feed file: everything accepted is committed (as FLUSH).
    pub(super) fn feed_sync(&self, path: &str) -> Result<(), Errno> {
        self.d.commit_all().map(|_| ()).map_err(|e| {
            crate::log::line(&format!("{}: {path}: fsync: {e}", self.kind.what()));
            Errno::EIO
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn feed_names_and_their_ids() {
        let f = Kind::PhpFina;
        for ok in ["1.dat", "1.meta", "4294967295.dat", "007.meta"] {
            assert!(f.own(ok) && f.valid(ok), "{ok}");
        }
        for bad in [
            "x.dat",
            ".dat",
            "4294967296.dat",
            "1.2.dat",
            "-1.meta",
            "1 .dat",
        ] {
            assert!(f.own(bad) && !f.valid(bad), "{bad}");
        }
        for other in ["1.txt", "sub/1.dat", "1.dat.tmp", "feed_1.MYD"] {
            assert!(!f.own(other), "{other}");
        }
        let t = Kind::PhpTimeSeries;
        assert!(t.own("feed_12.MYD") && t.valid("feed_12.MYD"));
        assert!(t.own("12.MYD") && !t.valid("12.MYD"));
        assert!(!t.own("12.dat"));
    }

    #[test]
    fn writes_that_cannot_be_a_feeds_are_named() {
        let f = Kind::PhpFina;
        assert_eq!(f.bad_write("1.dat", 8, &[0; 8], &[]), None);
        assert!(f.bad_write("1.dat", 2, &[0; 4], &[]).is_some());
        assert!(f.bad_write("1.dat", 4, &[0; 6], &[]).is_some());
        let meta: Vec<u8> = [0u32, 0, 10, 1_700_000_000]
            .iter()
            .flat_map(|v| v.to_le_bytes())
            .collect();
        assert_eq!(f.bad_write("1.meta", 0, &meta, &[]), None);
        // emoncms writes its meta four bytes at a time.
        assert_eq!(
            f.bad_write("1.meta", 8, &10u32.to_le_bytes(), &[0; 8]),
            None
        );
        assert!(f
            .bad_write("1.meta", 8, &0u32.to_le_bytes(), &[0; 8])
            .is_some());
        assert!(f.bad_write("1.meta", 12, &[0; 8], &meta).is_some());
        // The start time rewritten (a clear): the interval stays.
        assert_eq!(f.bad_write("1.meta", 12, &[0; 4], &meta), None);
        assert!(f.bad_len("1.meta", 17).is_some() && f.bad_len("1.meta", 0).is_none());
        assert!(f.bad_len("1.dat", 6).is_some() && f.bad_len("1.dat", 8).is_none());
        let t = Kind::PhpTimeSeries;
        assert_eq!(t.bad_write("feed_1.MYD", 18, &[0; 9], &[]), None);
        // The pieces of a write the kernel split at a page: 172 bytes at 3924, then the rest.
        assert_eq!(t.bad_write("feed_1.MYD", 3924, &[0; 172], &[]), None);
        assert_eq!(t.bad_write("feed_1.MYD", 4096, &[0; 5], &[]), None);
        assert!(t.bad_len("feed_1.MYD", 10).is_some());
    }
}
