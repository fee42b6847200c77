//! Blobs: byte files the store holds whole, for views of other programs' files (emoncms's
//! PHPFina and PHPTimeSeries feeds through `ringlet serve --phpfina`): written at any
//! offset, cut and extended, renamed and removed, read back exactly as a plain file would
//! hold them after the same calls.
//!
//! A blob is a length and chunks of [`BLOB_CHUNK`] bytes: a chunk of zeros (never written,
//! or past a gap), one on the heap (written since the last checkpoint stored it), or one
//! stored in a segment file (key: the blob's id, [`BLOB_ARCHIVE`], the chunk's index; read
//! through the store's mapped segments). A chunk never holds bytes past the blob's length,
//! so what a cut removed reads as zeros when the blob grows again.
//!
//! Between commits each blob notes what changed: the least length a cut left and the byte
//! ranges written. A commit turns that into a few entries (a cut, the ranges' bytes as they
//! are now, a final length), one set a blob however many writes it took: an emoncms feed
//! written a point every 10 seconds is one entry of 120 bytes in a 5-minute commit. Those
//! entries set bytes and lengths outright, so replaying them onto the blob as a later
//! checkpoint holds it gives that checkpoint's blob again: a lagged checkpoint writes each
//! blob as it is when the checkpoint is written (docs/FORMAT.md). A checkpoint stores the
//! blob's chunks written since the last one in a segment of their own class
//! ([`crate::segments::BLOB_CLASS`]), whole; the rest it names where they are.
//!
//! Hand-written: a blob's bytes are other programs' file bytes (float32 bit patterns, NaN
//! payloads), kept exactly; no crate holds a growing byte array in checkpointed chunks.

use crate::ids::IdMap;
use crate::{Error, Store};
use codec::record::RecordWriter;
use std::sync::Arc;

use codec::checkpoint::{BlobImage, BLOB_ARCHIVE, BLOB_CHUNK};
use codec::record::Entry;
use rrd::rows::ChunkSource;
use std::collections::{BTreeMap, BTreeSet, HashMap};

/// The longest blob: 2^32 float32 points of a PHPFina feed.
pub const MAX_BLOB_LEN: u64 = 1 << 34;

const CHUNK: u64 = BLOB_CHUNK as u64;

#[derive(Clone, Debug)]
enum Chunk {
    /// The chunk's first bytes (the rest, up to the blob's length, zeros); written since the
    /// last checkpoint stored it.
    Heap(Vec<u8>),
    /// In this segment, as the last checkpoint stored it.
    Stored(u32),
}

/// One blob.
pub struct Blob {
    pub name: Arc<str>,
    len: u64,
    /// The chunks that hold bytes, by index; a chunk not here is zeros (never written, or
    /// past a gap or an extension): a blob cut to 16 GiB and never written costs nothing.
    chunks: BTreeMap<u32, Chunk>,
    /// The length as of the last commit.
    committed_len: u64,
    /// Since the last commit: the least length a cut left, and the byte ranges written
    /// (sorted, disjoint, none adjacent).
    cut: Option<u64>,
    ranges: Vec<(u64, u64)>,
}

fn chunks_for(len: u64) -> usize {
    len.div_ceil(CHUNK) as usize
}

/// Chunk `c`'s key in [`Blob::chunks`] (a blob has at most 2^20 chunks).
fn key(c: usize) -> u32 {
    c as u32
}

impl Blob {
    fn new(name: Arc<str>) -> Blob {
        Blob {
            name,
            len: 0,
            chunks: BTreeMap::new(),
            committed_len: 0,
            cut: None,
            ranges: Vec::new(),
        }
    }

    /// Its length in bytes.
    pub(crate) fn len(&self) -> u64 {
        self.len
    }

    /// The bytes chunk `c` holds (fewer than its span: zeros follow).
    fn held<'a>(
        &'a self,
        src: Option<&Arc<dyn ChunkSource>>,
        id: u64,
        c: usize,
    ) -> Result<std::borrow::Cow<'a, [u8]>, String> {
        match self.chunks.get(&key(c)) {
            None => Ok(std::borrow::Cow::Borrowed(&[])),
            Some(Chunk::Heap(v)) => Ok(std::borrow::Cow::Borrowed(v)),
            Some(Chunk::Stored(seg)) => {
                let found = src.and_then(|s| s.chunk(*seg, (id, BLOB_ARCHIVE, c as u32)));
                let Some((bytes, start, len)) = found else {
                    return Err(format!(
                        "chunk {c} of {} (segment {seg}) is damaged or missing",
                        self.name
                    ));
                };
                let all: &[u8] = (*bytes).as_ref();
                Ok(std::borrow::Cow::Owned(all[start..start + len].to_vec()))
            }
        }
    }

    /// Up to `len` bytes from `off` (fewer at the end; none past it).
    pub fn read(
        &self,
        src: Option<&Arc<dyn ChunkSource>>,
        id: u64,
        off: u64,
        len: u64,
    ) -> Result<Vec<u8>, String> {
        let end = off.saturating_add(len).min(self.len);
        if off >= end {
            return Ok(Vec::new());
        }
        let mut out = vec![0u8; (end - off) as usize];
        let mut at = off;
        while at < end {
            let c = (at / CHUNK) as usize;
            let base = c as u64 * CHUNK;
            let stop = end.min(base + CHUNK);
            let held = self.held(src, id, c)?;
            let (from, to) = ((at - base) as usize, (stop - base) as usize);
            if from < held.len() {
                let n = to.min(held.len());
                let o = (at - off) as usize;
                out[o..o + n - from].copy_from_slice(&held[from..n]);
            }
            at = stop;
        }
        Ok(out)
    }

    /// Chunk `c` on the heap, holding at least `need` bytes.
    fn load(
        &mut self,
        src: Option<&Arc<dyn ChunkSource>>,
        id: u64,
        c: usize,
        need: usize,
    ) -> Result<&mut Vec<u8>, String> {
        if !matches!(self.chunks.get(&key(c)), Some(Chunk::Heap(_))) {
            let v = self.held(src, id, c)?.into_owned();
            self.chunks.insert(key(c), Chunk::Heap(v));
        }
        let Some(Chunk::Heap(v)) = self.chunks.get_mut(&key(c)) else {
            unreachable!("loaded above")
        };
        if v.len() < need {
            v.resize(need, 0);
        }
        Ok(v)
    }

    /// Set the bytes at `off` to `data`, the blob grown (with zeros over a gap) if they end
    /// past it.
    fn write(
        &mut self,
        src: Option<&Arc<dyn ChunkSource>>,
        id: u64,
        off: u64,
        data: &[u8],
    ) -> Result<(), String> {
        let end = off
            .checked_add(data.len() as u64)
            .filter(|&e| e <= MAX_BLOB_LEN)
            .ok_or_else(|| format!("{}: a write past {MAX_BLOB_LEN} bytes", self.name))?;
        if end > self.len {
            self.len = end;
        }
        let mut at = off;
        while at < end {
            let c = (at / CHUNK) as usize;
            let base = c as u64 * CHUNK;
            let stop = end.min(base + CHUNK);
            let v = self.load(src, id, c, (stop - base) as usize)?;
            let d = (at - off) as usize;
            v[(at - base) as usize..(stop - base) as usize]
                .copy_from_slice(&data[d..d + (stop - at) as usize]);
            at = stop;
        }
        Ok(())
    }

    /// Set the length: cut, or extended with zeros.
    fn set_len(
        &mut self,
        src: Option<&Arc<dyn ChunkSource>>,
        id: u64,
        len: u64,
    ) -> Result<(), String> {
        if len > MAX_BLOB_LEN {
            return Err(format!("{}: a length past {MAX_BLOB_LEN} bytes", self.name));
        }
        if len < self.len {
            let keep = chunks_for(len);
            drop(self.chunks.split_off(&key(keep)));
            let within = (len % CHUNK) as usize;
            if within > 0 {
                let c = keep - 1;
                let held = match self.chunks.get(&key(c)) {
                    None => 0,
                    Some(Chunk::Heap(v)) => v.len(),
                    Some(Chunk::Stored(_)) => usize::MAX,
                };
                if held > within {
                    self.load(src, id, c, 0)?.truncate(within);
                }
            }
        }
        self.len = len;
        Ok(())
    }

    fn note_write(&mut self, off: u64, end: u64) {
        if off >= end {
            return;
        }
        let r = &mut self.ranges;
        // Appends, the usual case, extend the last range.
        if let Some(last) = r.last_mut() {
            if off >= last.0 && off <= last.1 {
                last.1 = last.1.max(end);
                return;
            }
        }
        let i = r.partition_point(|&(_, e)| e < off);
        let mut j = i;
        let (mut a, mut b) = (off, end);
        while j < r.len() && r[j].0 <= b {
            a = a.min(r[j].0);
            b = b.max(r[j].1);
            j += 1;
        }
        r.splice(i..j, [(a, b)]);
    }

    fn note_cut(&mut self, len: u64) {
        if len < self.len {
            self.cut = Some(self.cut.map_or(len, |c| c.min(len)));
        }
    }

    /// Whether anything changed since the last commit.
    fn changed(&self) -> bool {
        self.cut.is_some() || !self.ranges.is_empty() || self.len != self.committed_len
    }

    /// The entries that take the blob from its committed state to this one, added to `rec`;
    /// the bytes they hold.
    fn take_entries(
        &mut self,
        src: Option<&Arc<dyn ChunkSource>>,
        id: u64,
        rec: &mut RecordWriter,
    ) -> Result<u64, String> {
        let mut bytes = 0;
        let cut = self.cut.take();
        if let Some(c) = cut {
            rec.blob_truncate(id, c);
        }
        let mut reach = cut.unwrap_or(self.committed_len);
        for (a, b) in std::mem::take(&mut self.ranges) {
            let b = b.min(self.len);
            if a >= b {
                continue;
            }
            let data = self.read(src, id, a, b - a)?;
            rec.blob_write(id, a, &data);
            bytes += data.len() as u64;
            reach = reach.max(b);
        }
        if self.len != reach {
            rec.blob_truncate(id, self.len);
        }
        self.committed_len = self.len;
        Ok(bytes)
    }

    /// The blob as a checkpoint names it: heap chunks stored with `store` (which returns
    /// their segment), and the segment of every chunk (0: zeros).
    pub(crate) fn image(
        &self,
        store: &mut dyn FnMut(usize, &[u8]) -> u32,
    ) -> (Vec<u32>, Vec<(usize, u32)>) {
        let mut table = vec![0u32; chunks_for(self.len)];
        let mut stored = Vec::new();
        for (&c, ch) in &self.chunks {
            let c = c as usize;
            let seg = match ch {
                Chunk::Stored(s) => *s,
                Chunk::Heap(v) if v.iter().all(|&b| b == 0) => 0,
                Chunk::Heap(v) => {
                    let s = store(c, v);
                    stored.push((c, s));
                    s
                }
            };
            if let Some(t) = table.get_mut(c) {
                *t = seg;
            }
        }
        (table, stored)
    }
}

/// Every blob of a store, by id and by name, and which changed since the last commit.
#[derive(Default)]
pub struct Blobs {
    by_name: HashMap<Arc<str>, u64>,
    by_id: IdMap<Blob>,
    /// Blobs written or cut since the last commit.
    dirty: BTreeSet<u64>,
    /// Changes when a blob is made, renamed or removed ([`Store::blobs_version`]).
    version: u64,
}

impl Blobs {
    /// Every blob with its id, in id order (a checkpoint's).
    pub(crate) fn in_order(&self) -> Vec<(u64, &Blob)> {
        let mut all: Vec<(u64, &Blob)> = self.by_id.iter().map(|(&id, b)| (id, b)).collect();
        all.sort_unstable_by_key(|&(id, _)| id);
        all
    }

    pub fn id(&self, name: &str) -> Option<u64> {
        self.by_name.get(name).copied()
    }

    pub fn get(&self, id: u64) -> Option<&Blob> {
        self.by_id.get(&id)
    }

    pub fn has_changes(&self) -> bool {
        !self.dirty.is_empty()
    }

    /// Every blob's (id, name, length), by name.
    pub fn list(&self) -> Vec<(u64, Arc<str>, u64)> {
        let mut v: Vec<_> = self
            .by_id
            .iter()
            .map(|(&id, b)| (id, b.name.clone(), b.len))
            .collect();
        v.sort_unstable_by(|a, b| a.1.cmp(&b.1));
        v
    }

    /// A blob as a checkpoint held it.
    pub fn insert_image(&mut self, img: BlobImage) {
        let name: Arc<str> = img.name.into();
        let mut b = Blob::new(name.clone());
        b.len = img.len;
        b.committed_len = img.len;
        b.chunks = img
            .chunks
            .iter()
            .enumerate()
            .filter(|(_, &s)| s != 0)
            .map(|(c, &s)| (key(c), Chunk::Stored(s)))
            .collect();
        self.by_name.insert(name, img.id);
        self.by_id.insert(img.id, b);
    }

    /// Apply a blob entry of a replayed record (true), or say it is none (false). Entries
    /// name blobs by id, and names are set again once replay ends ([`Blobs::reindex`]): a
    /// lagged checkpoint holds each blob as it was at its end, which the replay of earlier
    /// records passes through. An entry for a blob not held is one removed later: skipped.
    pub fn replay(
        &mut self,
        src: Option<&Arc<dyn ChunkSource>>,
        e: &Entry<'_>,
    ) -> Result<bool, String> {
        match e {
            Entry::BlobCreate { id, name } => {
                let mut b = Blob::new(name.as_str().into());
                b.committed_len = 0;
                self.by_id.insert(*id, b);
            }
            Entry::BlobWrite { id, offset, data } => {
                if let Some(b) = self.by_id.get_mut(id) {
                    b.write(src, *id, *offset, data)?;
                    b.committed_len = b.len;
                }
            }
            Entry::BlobTruncate { id, len } => {
                if let Some(b) = self.by_id.get_mut(id) {
                    b.set_len(src, *id, *len)?;
                    b.committed_len = b.len;
                }
            }
            Entry::BlobRename { id, name } => {
                if let Some(b) = self.by_id.get_mut(id) {
                    b.name = name.as_str().into();
                }
            }
            Entry::BlobRemove { id } => {
                self.by_id.remove(id);
            }
            _ => return Ok(false),
        }
        Ok(true)
    }

    /// The names again from the blobs (after a replay, which went by ids alone).
    pub fn reindex(&mut self) {
        self.version += 1;
        self.by_name = self
            .by_id
            .iter()
            .map(|(&id, b)| (b.name.clone(), id))
            .collect();
    }
}

impl Store {
    fn blob_src(&self) -> Option<&Arc<dyn ChunkSource>> {
        self.reg.src.as_ref()
    }

    fn blob_id(&self, name: &str) -> Result<u64, Error> {
        self.reg
            .blobs
            .id(name)
            .ok_or_else(|| Error::NotFound(name.to_string()))
    }

    /// Every blob's name and length, by name.
    pub fn blobs(&self) -> Vec<(String, u64)> {
        self.reg
            .blobs
            .list()
            .into_iter()
            .map(|(_, n, len)| (n.to_string(), len))
            .collect()
    }

    /// Changes whenever a blob is made, renamed or removed: a reader that keeps the names
    /// lists them again when it changes.
    pub fn blobs_version(&self) -> u64 {
        self.reg.blobs.version
    }

    /// The length of blob `name`, if there is one.
    pub fn blob_len(&self, name: &str) -> Option<u64> {
        let id = self.reg.blobs.id(name)?;
        self.reg.blobs.get(id).map(|b| b.len)
    }

    /// Whether blob `name` may hold a byte other than zero in `off..off + len`: false where
    /// no chunk there was ever written (a gap, an extension), so a reader of a sparse blob
    /// skips it without reading zeros.
    pub fn blob_held(&self, name: &str, off: u64, len: u64) -> bool {
        let Some(b) = self
            .reg
            .blobs
            .id(name)
            .and_then(|id| self.reg.blobs.get(id))
        else {
            return false;
        };
        let end = off.saturating_add(len).min(b.len);
        if off >= end {
            return false;
        }
        let (first, last) = (
            key((off / CHUNK) as usize),
            key(((end - 1) / CHUNK) as usize),
        );
        b.chunks.range(first..=last).next().is_some()
    }

    /// Up to `len` bytes of blob `name` from `off` (fewer at its end). A stored chunk that
    /// fails its check is `Error::Corrupt`, never other bytes.
    pub fn blob_read(&self, name: &str, off: u64, len: u64) -> Result<Vec<u8>, Error> {
        let id = self.blob_id(name)?;
        let b = self.reg.blobs.get(id).expect("indexed");
        b.read(self.blob_src(), id, off, len)
            .map_err(|what| self.blob_corrupt(what))
    }

    fn blob_corrupt(&self, what: String) -> Error {
        Error::Corrupt {
            file: self.dir.clone(),
            offset: 0,
            what,
        }
    }

    /// Make blob `name`, empty (one of that name is removed first).
    pub fn blob_create(&mut self, name: &str) -> Result<(), Error> {
        self.writable()?;
        if let Some(old) = self.reg.blobs.id(name) {
            self.blob_remove_id(old);
        }
        let id = self.reg.next_id;
        self.reg.next_id += 1;
        self.pending.entry(|rec| rec.blob_create(id, name));
        let name: Arc<str> = name.into();
        self.reg.blobs.by_name.insert(name.clone(), id);
        self.reg.blobs.by_id.insert(id, Blob::new(name));
        self.reg.blobs.version += 1;
        self.maybe_commit()
    }

    /// Set the bytes of blob `name` at `off` to `data` (growing it, zeros over a gap).
    /// `Error::Invalid` past [`MAX_BLOB_LEN`].
    pub fn blob_write(&mut self, name: &str, off: u64, data: &[u8]) -> Result<(), Error> {
        self.writable()?;
        let id = self.blob_id(name)?;
        let src = self.reg.src.clone();
        let b = self.reg.blobs.by_id.get_mut(&id).expect("indexed");
        if off.saturating_add(data.len() as u64) > MAX_BLOB_LEN {
            return Err(Error::Invalid(format!(
                "{name}: a write past {MAX_BLOB_LEN} bytes"
            )));
        }
        if let Err(what) = b.write(src.as_ref(), id, off, data) {
            // A stored chunk that could not be read to be written into: nothing changed.
            return Err(self.blob_corrupt(what));
        }
        b.note_write(off, off + data.len() as u64);
        self.reg.blobs.dirty.insert(id);
        self.pending.add(data.len(), 0);
        self.maybe_commit()
    }

    /// Set the length of blob `name`: cut, or extended with zeros.
    pub fn blob_set_len(&mut self, name: &str, len: u64) -> Result<(), Error> {
        self.writable()?;
        let id = self.blob_id(name)?;
        if len > MAX_BLOB_LEN {
            return Err(Error::Invalid(format!(
                "{name}: a length past {MAX_BLOB_LEN} bytes"
            )));
        }
        let src = self.reg.src.clone();
        let b = self.reg.blobs.by_id.get_mut(&id).expect("indexed");
        b.note_cut(len);
        if let Err(what) = b.set_len(src.as_ref(), id, len) {
            return Err(self.blob_corrupt(what));
        }
        self.reg.blobs.dirty.insert(id);
        self.maybe_commit()
    }

    /// Give blob `from` the name `to` (one named `to` is removed first).
    pub fn blob_rename(&mut self, from: &str, to: &str) -> Result<(), Error> {
        self.writable()?;
        let id = self.blob_id(from)?;
        if from == to {
            return Ok(());
        }
        if let Some(old) = self.reg.blobs.id(to) {
            self.blob_remove_id(old);
        }
        self.pending.entry(|rec| rec.blob_rename(id, to));
        let blobs = &mut self.reg.blobs;
        blobs.version += 1;
        blobs.by_name.remove(from);
        let to: Arc<str> = to.into();
        blobs.by_name.insert(to.clone(), id);
        blobs.by_id.get_mut(&id).expect("indexed").name = to;
        self.maybe_commit()
    }

    /// Remove blob `name`.
    pub fn blob_remove(&mut self, name: &str) -> Result<(), Error> {
        self.writable()?;
        let id = self.blob_id(name)?;
        self.blob_remove_id(id);
        self.maybe_commit()
    }

    fn blob_remove_id(&mut self, id: u64) {
        let blobs = &mut self.reg.blobs;
        blobs.version += 1;
        if let Some(b) = blobs.by_id.remove(&id) {
            blobs.by_name.remove(&b.name);
        }
        blobs.dirty.remove(&id);
        self.pending.entry(|rec| rec.blob_remove(id));
    }

    /// A commit's blob entries: what each blob changed since the last commit.
    pub(crate) fn blob_entries(&mut self, rec: &mut RecordWriter) -> Result<u64, Error> {
        let src = self.reg.src.clone();
        let mut bytes = 0;
        for id in std::mem::take(&mut self.reg.blobs.dirty) {
            if let Some(b) = self.reg.blobs.by_id.get_mut(&id) {
                if b.changed() {
                    bytes += b
                        .take_entries(src.as_ref(), id, rec)
                        .map_err(|what| Error::Io(std::io::Error::other(what)))?;
                }
            }
        }
        Ok(bytes)
    }

    /// The chunks a durable checkpoint stored leave the heap.
    pub(crate) fn blobs_stored(&mut self, marks: Vec<(u64, usize, u32)>) {
        for (id, c, seg) in marks {
            if let Some(b) = self.reg.blobs.by_id.get_mut(&id) {
                if let Some(ch) = b.chunks.get_mut(&key(c)) {
                    *ch = Chunk::Stored(seg);
                }
            }
        }
    }

    /// Bytes of blob chunks on the heap (written since the last checkpoint).
    pub fn blob_heap_bytes(&self) -> usize {
        self.reg
            .blobs
            .by_id
            .values()
            .flat_map(|b| b.chunks.values())
            .map(|c| match c {
                Chunk::Heap(v) => v.capacity(),
                Chunk::Stored(_) => 0,
            })
            .sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn blob() -> Blob {
        Blob::new("b".into())
    }

    /// A blob extended to 16 GiB holds no chunk until one is written: memory follows the
    /// bytes written, not the length (a feed cut to 2^34 cost 24 MB before).
    #[test]
    fn a_sparse_blob_holds_only_the_chunks_written() {
        let mut b = blob();
        b.set_len(None, 0, MAX_BLOB_LEN).unwrap();
        assert!(b.chunks.is_empty());
        b.write(None, 0, MAX_BLOB_LEN - 4, &[1, 2, 3, 4]).unwrap();
        assert_eq!(b.chunks.len(), 1);
        assert_eq!(
            b.read(None, 0, MAX_BLOB_LEN - 8, 8).unwrap(),
            [0, 0, 0, 0, 1, 2, 3, 4]
        );
        assert_eq!(b.read(None, 0, 1 << 33, 4).unwrap(), [0; 4]);
        b.set_len(None, 0, 100).unwrap();
        assert!(b.chunks.is_empty());
        let (table, stored) = b.image(&mut |_, _| 7);
        assert_eq!((table, stored), (vec![0], vec![]));
    }

    #[test]
    fn writes_cuts_and_gaps_read_as_a_file_would() {
        let mut b = blob();
        let mut file: Vec<u8> = Vec::new();
        let mut rng = 0x2545_F491_4F6C_DD1Du64;
        let mut next = |m: u64| {
            rng ^= rng << 13;
            rng ^= rng >> 7;
            rng ^= rng << 17;
            rng % m
        };
        for _ in 0..2000 {
            match next(4) {
                0 | 1 => {
                    let off = next(3 * CHUNK);
                    let n = next(CHUNK + 100) as usize;
                    let data: Vec<u8> = (0..n).map(|i| (i as u8) ^ (off as u8) | 1).collect();
                    b.write(None, 1, off, &data).unwrap();
                    let end = off as usize + n;
                    if file.len() < end {
                        file.resize(end, 0);
                    }
                    file[off as usize..end].copy_from_slice(&data);
                }
                2 => {
                    let len = next(3 * CHUNK);
                    b.set_len(None, 1, len).unwrap();
                    file.resize(len as usize, 0);
                }
                _ => {
                    let off = next(3 * CHUNK);
                    let n = next(2 * CHUNK);
                    let want = file
                        .get(off as usize..(off + n).min(file.len() as u64) as usize)
                        .unwrap_or_default();
                    assert_eq!(b.read(None, 1, off, n).unwrap(), want);
                }
            }
            assert_eq!(b.len(), file.len() as u64);
        }
        assert_eq!(b.read(None, 1, 0, u64::MAX).unwrap(), file);
    }

    #[test]
    fn written_ranges_merge() {
        let mut b = blob();
        for (a, e) in [(0, 4), (4, 8), (20, 24), (10, 12), (11, 21), (100, 104)] {
            b.note_write(a, e);
        }
        assert_eq!(b.ranges, vec![(0, 8), (10, 24), (100, 104)]);
        b.note_write(0, 200);
        assert_eq!(b.ranges, vec![(0, 200)]);
    }

    #[test]
    fn too_long_is_refused() {
        let mut b = blob();
        assert!(b.write(None, 1, MAX_BLOB_LEN, &[1]).is_err());
        assert!(b.set_len(None, 1, MAX_BLOB_LEN + 1).is_err());
        assert_eq!(b.len(), 0);
    }
}
