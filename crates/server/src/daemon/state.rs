//! What code outside the daemon's own modules may do with the store ([`Inner`]'s store is
//! private to `crate::daemon`): look at names and schemas (which queued values do not
//! change), read a series through [`super::read`] (its queue applied first, the store
//! readable: [`super::read::Fresh`]), read and write emoncms's feed files ([`Blobs`],
//! [`BlobsMut`]: files, not series; no queue stands before them), and read the store's
//! counters. Series are made, replaced, removed and written by `super::series` and
//! `super::commit`, which hold the rules (entry reset, placeholder, commit).

use super::Inner;
use engine::{Error, RecoveryReport, Store, StoreStats};
use rrd::Schema;

impl Inner {
    /// Whether series `name` exists.
    pub fn has(&self, name: &str) -> bool {
        self.store.get(name).is_some()
    }

    /// Series `name`'s definition (data sources, archives, step): the same before and after
    /// its queued values are applied.
    pub fn schema(&self, name: &str) -> Option<&Schema> {
        self.store.get(name).map(|r| &*r.schema)
    }

    /// The series' names, sorted.
    pub fn names(&self) -> Vec<String> {
        self.store.names()
    }

    /// Changes whenever a series is made or removed.
    pub fn names_version(&self) -> (u64, usize) {
        self.store.names_version()
    }

    /// Changes whenever a feed file is made, removed or renamed.
    pub fn blobs_version(&self) -> u64 {
        self.store.blobs_version()
    }

    /// How many series the store holds.
    pub fn series_count(&self) -> usize {
        self.store.len()
    }

    /// The store's counters (STATS).
    pub fn store_stats(&self) -> &StoreStats {
        self.store.stats()
    }

    /// The log ring's size, and the bytes written to it since the last checkpoint.
    pub fn log_fill(&self) -> (u64, u64) {
        (self.store.log_capacity(), self.store.log_since_checkpoint())
    }

    /// Bytes the archives hold in memory, and chunks found damaged when read.
    pub fn heap_and_damage(&self) -> (usize, u64) {
        (self.store.archive_heap_bytes(), self.store.damaged_chunks())
    }

    /// What the open found and repaired.
    pub fn recovery(&self) -> &RecoveryReport {
        self.store.recovery()
    }

    /// Series made since the last checkpoint (their placeholders are checked at start).
    pub fn created_since_checkpoint(&self) -> Vec<String> {
        self.store.created_since_checkpoint()
    }

    /// Whether the store has failed a write and refuses every other one.
    pub fn refuses_writes(&self) -> bool {
        self.store.refuses_writes()
    }

    /// Whether series `name` is suspended (SUSPEND: its values stay queued).
    pub fn is_suspended(&self, name: &str) -> bool {
        self.suspended.contains(name)
    }

    /// Suspend series `name` (`on`) or resume it; whether that changed anything.
    pub fn suspend(&mut self, name: &str, on: bool) -> bool {
        if on {
            self.suspended.insert(name.to_string())
        } else {
            self.suspended.remove(name)
        }
    }

    /// What placeholders say, and where imported files go.
    pub fn places(&self) -> &crate::placeholder::Places {
        &self.places
    }

    /// emoncms's feed files, to read.
    pub fn blobs(&self) -> Blobs<'_> {
        Blobs(&self.store)
    }

    /// emoncms's feed files, to write (durable at the next commit).
    pub fn blobs_mut(&mut self) -> BlobsMut<'_> {
        BlobsMut(&mut self.store)
    }
}

/// emoncms's feed files in the store, read (`crate::feeds`, the view's feed files).
#[derive(Clone, Copy)]
pub struct Blobs<'a>(&'a Store);

impl<'a> Blobs<'a> {
    /// For a store opened by itself (tests, the CLI's readers).
    pub fn of(store: &'a Store) -> Blobs<'a> {
        Blobs(store)
    }

    /// Every feed file: name and length.
    pub fn list(&self) -> Vec<(String, u64)> {
        self.0.blobs()
    }

    pub fn len(&self, name: &str) -> Option<u64> {
        self.0.blob_len(name)
    }

    /// Whether bytes `off..off+len` of `name` are held by the store (not only beneath it).
    pub fn held(&self, name: &str, off: u64, len: u64) -> bool {
        self.0.blob_held(name, off, len)
    }

    pub fn read(&self, name: &str, off: u64, len: u64) -> Result<Vec<u8>, Error> {
        self.0.blob_read(name, off, len)
    }

    /// Whether `name` is a series (a feed's name may be taken by one).
    pub fn is_series(&self, name: &str) -> bool {
        self.0.get(name).is_some()
    }
}

/// emoncms's feed files in the store, written (the view, the copy taken in at start).
pub struct BlobsMut<'a>(&'a mut Store);

impl BlobsMut<'_> {
    pub fn create(&mut self, name: &str) -> Result<(), Error> {
        self.0.blob_create(name)
    }

    pub fn write(&mut self, name: &str, off: u64, data: &[u8]) -> Result<(), Error> {
        self.0.blob_write(name, off, data)
    }

    pub fn set_len(&mut self, name: &str, len: u64) -> Result<(), Error> {
        self.0.blob_set_len(name, len)
    }

    pub fn rename(&mut self, from: &str, to: &str) -> Result<(), Error> {
        self.0.blob_rename(from, to)
    }

    pub fn remove(&mut self, name: &str) -> Result<(), Error> {
        self.0.blob_remove(name)
    }
}
