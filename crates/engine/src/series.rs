//! The series registry: every RRD of the store by name and by id, with the sample codec state
//! and the samples encoded since the last commit.
//!
//! Ids are assigned from `next_id` and never reused, so log entries name one incarnation of a
//! name. A series' codec state is seeded from its `Rrd` at creation and at every checkpoint
//! (see [`codec::sample`]); `chunk` holds the bit stream of its uncommitted samples.

use bitio::msb::BitWriter;
use codec::sample::{EncodeError, SeriesCodec};
use hashbrown::HashTable;
use rrd::rows::{ChunkSource, SegPool};
use rrd::{Rrd, Sample};
use std::hash::BuildHasher;
use std::sync::Arc;

use crate::ids::IdMap;

pub struct Series {
    /// Shared with the registry's map by name: one copy of each name.
    pub name: Arc<str>,
    pub rrd: Rrd,
    pub codec: SeriesCodec,
    /// Samples accepted since the last commit, encoded.
    pub chunk: BitWriter,
    pub count: u64,
    /// While the chunk holds one sample: [`SeriesCodec::encode_noted`]'s note (non-zero
    /// when the sample can be a block's row).
    pub row: u32,
    /// Rows each archive has written since this process loaded the series (counted by the
    /// writer only; a lagged checkpoint compares them with a snapshot's, see
    /// [`crate::snapshot`]).
    pub rows_written: Box<[u64]>,
}

impl Series {
    fn new(name: Arc<str>, rrd: Rrd) -> Series {
        Series {
            codec: SeriesCodec::from_rrd(&rrd),
            rows_written: vec![0; rrd.rra.len()].into_boxed_slice(),
            name,
            rrd,
            chunk: BitWriter::new(),
            count: 0,
            row: 0,
        }
    }

    /// Append an accepted sample to the pending chunk; returns the bytes the chunk grew by
    /// and the bits its time took.
    pub fn log(&mut self, s: &Sample) -> Result<(usize, u32), EncodeError> {
        let before = self.chunk.as_bytes().len();
        let (time_bits, note) = self.codec.encode_noted(&mut self.chunk, s)?;
        self.row = if self.count == 0 { note } else { 0 };
        self.count += 1;
        Ok((self.chunk.as_bytes().len() - before, time_bits))
    }

    /// Take the pending chunk (bytes, its length in bits, sample count, row note), leaving
    /// it empty.
    pub fn take_chunk(&mut self) -> (Vec<u8>, u64, u64, u32) {
        let bits = self.chunk.bit_len();
        let chunk = std::mem::take(&mut self.chunk).into_bytes();
        let row = std::mem::take(&mut self.row);
        (chunk, bits, std::mem::take(&mut self.count), row)
    }
}

#[derive(Default)]
pub struct Registry {
    /// Ids by name: the table holds only the id (8 bytes a slot, not a name's 16 and an
    /// id's 8), and a probe compares the name of the series the id holds ([`Registry::id`]).
    by_name: HashTable<u64>,
    /// Hashes names for `by_name`.
    names: std::collections::hash_map::RandomState,
    /// Boxed: a map's empty slots then cost a pointer, not a whole series.
    by_id: IdMap<Box<Series>>,
    /// Series with pending samples (each once; ids of since-removed series are skipped).
    pub dirty: Vec<u64>,
    pub next_id: u64,
    /// Where the store's stored chunks are read from; every series' rows read through it.
    pub src: Option<Arc<dyn ChunkSource>>,
    /// Opened for reading these series alone: replay skips the entries of others.
    pub only: Option<Vec<String>>,
    /// The archives' chunk tables, one copy of each ([`rrd::Rows::share`]).
    pool: SegPool,
    /// The store's blobs (ids from the same sequence as series').
    pub blobs: crate::blob::Blobs,
    /// Series with Holt-Winters archives: their updates read archive rows, and their
    /// smoothings rewrite whole archives, which a lagged checkpoint cannot stand for
    /// (`Store::after_append` writes whole ones while any exist).
    pub hw_series: usize,
}

impl Registry {
    pub fn new(next_id: u64) -> Registry {
        Registry {
            next_id,
            ..Registry::default()
        }
    }

    fn hash(&self, name: &str) -> u64 {
        self.names.hash_one(name)
    }

    pub fn id(&self, name: &str) -> Option<u64> {
        let by_id = &self.by_id;
        self.by_name
            .find(self.hash(name), |id| {
                by_id.get(id).is_some_and(|s| &*s.name == name)
            })
            .copied()
    }

    /// The registry's own copy of `name`, for a caller that keys its own map by it (one
    /// copy of each name in the process).
    pub fn shared_name(&self, name: &str) -> Option<Arc<str>> {
        self.get(name).map(|s| s.name.clone())
    }

    pub fn get(&self, name: &str) -> Option<&Series> {
        self.by_id.get(&self.id(name)?).map(|s| &**s)
    }

    pub fn by_id(&self, id: u64) -> Option<&Series> {
        self.by_id.get(&id).map(|s| &**s)
    }

    pub fn by_id_mut(&mut self, id: u64) -> Option<&mut Series> {
        self.by_id.get_mut(&id).map(|s| &mut **s)
    }

    /// Names, sorted, of the series whose id is `from` or later.
    pub fn names_from(&self, from: u64) -> Vec<String> {
        let mut v: Vec<String> = self
            .by_id
            .iter()
            .filter(|&(&id, _)| id >= from)
            .map(|(_, s)| s.name.to_string())
            .collect();
        v.sort_unstable();
        v
    }

    /// All names, sorted.
    pub fn names(&self) -> Vec<String> {
        self.names_from(0)
    }

    pub fn len(&self) -> usize {
        self.by_id.len()
    }

    pub fn is_empty(&self) -> bool {
        self.by_id.is_empty()
    }

    /// Insert a series under `id` (replaying a log entry, loading a checkpoint, or creating
    /// a new one), its chunk table shared.
    pub fn insert(&mut self, id: u64, name: String, mut rrd: Rrd) {
        if let Some(src) = &self.src {
            for (a, data) in rrd.rra.iter_mut().enumerate() {
                data.rows.adopt(src, id, a as u32);
            }
        }
        rrd.schema = rrd::schema::intern(&rrd.schema);
        for data in &mut rrd.rra {
            data.rows.share(&mut self.pool);
        }
        if let Some(old) = self.id(&name) {
            self.remove(old);
        }
        if rrd.hw.is_some() {
            self.hw_series += 1;
        }
        let hash = self.hash(&name);
        let by_id = &self.by_id;
        let names = &self.names;
        self.by_name.insert_unique(hash, id, |i| {
            by_id.get(i).map_or(0, |s| names.hash_one(&*s.name))
        });
        self.by_id
            .insert(id, Box::new(Series::new(name.into(), rrd)));
        self.next_id = self.next_id.max(id + 1);
    }

    pub fn remove(&mut self, id: u64) -> Option<Box<Series>> {
        let s = self.by_id.remove(&id)?;
        if s.rrd.hw.is_some() {
            self.hw_series -= 1;
        }
        if let Ok(slot) = self.by_name.find_entry(self.hash(&s.name), |&i| i == id) {
            slot.remove();
        }
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
        self.by_id.iter_mut().map(|(&id, s)| (id, &mut **s))
    }

    /// Every series, in no order (no list of them is made).
    pub fn each(&self) -> impl Iterator<Item = &Series> {
        self.by_id.values().map(|s| &**s)
    }

    /// Every series in id order.
    pub fn iter(&self) -> impl ExactSizeIterator<Item = (u64, &Series)> {
        let mut v: Vec<(u64, &Series)> = self.by_id.iter().map(|(&id, s)| (id, &**s)).collect();
        v.sort_unstable_by_key(|&(id, _)| id);
        v.into_iter()
    }

    /// Share the chunk tables of series `ids` (all series: `None`) with equal ones, and
    /// forget the tables no series uses any more.
    pub fn share_tables(&mut self, ids: Option<&[u64]>) {
        let pool = &mut self.pool;
        let mut one = |s: &mut Series| {
            for data in &mut s.rrd.rra {
                data.rows.share(pool);
            }
        };
        match ids {
            Some(ids) => {
                for id in ids {
                    if let Some(s) = self.by_id.get_mut(id) {
                        one(s);
                    }
                }
            }
            None => self.by_id.values_mut().for_each(|s| one(s)),
        }
        self.pool.prune();
    }

    /// Seed every codec from its RRD and drop pending chunks (after a checkpoint, which holds
    /// their effect, or at a snapshot, taken right after a commit).
    pub fn reseed_all(&mut self) {
        for s in self.by_id.values_mut() {
            s.codec = SeriesCodec::from_rrd(&s.rrd);
            s.chunk = BitWriter::new();
            s.count = 0;
            s.row = 0;
        }
        self.dirty.clear();
    }
}
