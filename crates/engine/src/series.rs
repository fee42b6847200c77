//! The series registry: every RRD of the store by name and by id, with the sample codec state
//! and the samples encoded since the last commit.
//!
//! Ids are assigned from `next_id` and never reused, so log entries name one incarnation of a
//! name. A series' codec state is seeded from its `Rrd` at creation and at every checkpoint
//! (see [`codec::sample`]); `chunk` holds the bit stream of its uncommitted samples.

use codec::bits::BitWriter;
use codec::sample::{EncodeError, SeriesCodec};
use rrd::rows::ChunkSource;
use rrd::{Rrd, Sample};
use std::collections::HashMap;
use std::sync::Arc;

pub struct Series {
    pub name: String,
    pub rrd: Rrd,
    pub codec: SeriesCodec,
    /// Samples accepted since the last commit, encoded.
    pub chunk: BitWriter,
    pub count: u64,
    /// Rows each archive has written since this process loaded the series (counted by the
    /// writer only; a lagged checkpoint compares them with a snapshot's, see
    /// [`crate::snapshot`]).
    pub rows_written: Vec<u64>,
}

impl Series {
    fn new(name: String, rrd: Rrd) -> Series {
        Series {
            codec: SeriesCodec::from_rrd(&rrd),
            rows_written: vec![0; rrd.rra.len()],
            name,
            rrd,
            chunk: BitWriter::new(),
            count: 0,
        }
    }

    /// Append an accepted sample to the pending chunk; returns the bytes the chunk grew by.
    pub fn log(&mut self, s: &Sample) -> Result<usize, EncodeError> {
        let before = self.chunk.as_bytes().len();
        self.codec.encode(&mut self.chunk, s)?;
        self.count += 1;
        Ok(self.chunk.as_bytes().len() - before)
    }

    /// Take the pending chunk (bytes, sample count), leaving it empty.
    pub fn take_chunk(&mut self) -> (Vec<u8>, u64) {
        let chunk = std::mem::take(&mut self.chunk).into_bytes();
        (chunk, std::mem::take(&mut self.count))
    }
}

#[derive(Default)]
pub struct Registry {
    by_name: HashMap<String, u64>,
    by_id: HashMap<u64, Series>,
    /// Series with pending samples (each once; ids of since-removed series are skipped).
    pub dirty: Vec<u64>,
    pub next_id: u64,
    /// Where the store's stored chunks are read from; every series' rows read through it.
    pub src: Option<Arc<dyn ChunkSource>>,
    /// Opened for reading these series alone: replay skips the entries of others.
    pub only: Option<Vec<String>>,
}

impl Registry {
    pub fn new(next_id: u64) -> Registry {
        Registry {
            next_id,
            ..Registry::default()
        }
    }

    pub fn id(&self, name: &str) -> Option<u64> {
        self.by_name.get(name).copied()
    }

    pub fn get(&self, name: &str) -> Option<&Series> {
        self.by_id.get(&self.id(name)?)
    }

    pub fn by_id(&self, id: u64) -> Option<&Series> {
        self.by_id.get(&id)
    }

    pub fn by_id_mut(&mut self, id: u64) -> Option<&mut Series> {
        self.by_id.get_mut(&id)
    }

    /// All names, sorted.
    pub fn names(&self) -> Vec<String> {
        let mut v: Vec<String> = self.by_name.keys().cloned().collect();
        v.sort_unstable();
        v
    }

    pub fn len(&self) -> usize {
        self.by_id.len()
    }

    pub fn is_empty(&self) -> bool {
        self.by_id.is_empty()
    }

    /// Insert a series under `id` (replaying a log entry or creating a new one).
    pub fn insert(&mut self, id: u64, name: String, mut rrd: Rrd) {
        if let Some(src) = &self.src {
            for (a, data) in rrd.rra.iter_mut().enumerate() {
                data.rows.adopt(src, id, a as u32);
            }
        }
        if let Some(old) = self.by_name.insert(name.clone(), id) {
            self.by_id.remove(&old);
        }
        self.by_id.insert(id, Series::new(name, rrd));
        self.next_id = self.next_id.max(id + 1);
    }

    pub fn remove(&mut self, id: u64) -> Option<Series> {
        let s = self.by_id.remove(&id)?;
        self.by_name.remove(&s.name);
        Some(s)
    }

    /// Every series, mutably, in no particular order.
    /// Every series' id, ascending.
    pub fn ids(&self) -> Vec<u64> {
        let mut v: Vec<u64> = self.by_id.keys().copied().collect();
        v.sort_unstable();
        v
    }

    pub fn iter_mut(&mut self) -> impl Iterator<Item = (u64, &mut Series)> {
        self.by_id.iter_mut().map(|(&id, s)| (id, s))
    }

    /// Every series in id order.
    pub fn iter(&self) -> impl ExactSizeIterator<Item = (u64, &Series)> {
        let mut v: Vec<(u64, &Series)> = self.by_id.iter().map(|(&id, s)| (id, s)).collect();
        v.sort_unstable_by_key(|&(id, _)| id);
        v.into_iter()
    }

    /// Seed every codec from its RRD and drop pending chunks (after a checkpoint, which holds
    /// their effect, or at a snapshot, taken right after a commit).
    pub fn reseed_all(&mut self) {
        for s in self.by_id.values_mut() {
            s.codec = SeriesCodec::from_rrd(&s.rrd);
            s.chunk = BitWriter::new();
            s.count = 0;
        }
        self.dirty.clear();
    }
}
