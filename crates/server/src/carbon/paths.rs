//! The entries a carbon connection has sent points for, by path, found without hashing in
//! the usual case: a collector sends its series in the same order every interval, so each
//! path remembers the one that followed it last time, and a point first checks that guess
//! (one comparison of bytes that sit after the previous path's, in the order first seen).
//! A wrong guess falls back to a hash table. Hand-written because the guess is what saves the
//! time: with 10,000 series over a connection, the hash table's probe and its key, each in
//! a cache line of its own, were a sixth of carbon's CPU.

use crate::entry::Entry;
use hashbrown::HashTable;
use std::hash::BuildHasher;
use std::sync::Arc;

/// Paths kept before the table starts again (a slot, an entry's pointer and the path's
/// bytes each).
const SLOTS_MAX: usize = 1 << 18;

/// Bytes of paths kept before the table starts again.
const BYTES_MAX: usize = 64 << 20;

const NONE: u32 = u32::MAX;

struct Slot {
    /// The path's bytes in [`Paths::bytes`].
    start: u32,
    len: u32,
    /// The slot of the path sent after this one the last time (NONE: not known).
    next: u32,
    entry: Arc<Entry>,
}

/// A connection's entries by path.
pub(super) struct Paths {
    bytes: Vec<u8>,
    slots: Vec<Slot>,
    /// Slots by their path's hash.
    index: HashTable<u32>,
    /// The slot of the previous point's path (NONE: none, or the table started again).
    prev: u32,
}

impl Default for Paths {
    fn default() -> Paths {
        Paths {
            bytes: Vec::new(),
            slots: Vec::new(),
            index: HashTable::new(),
            prev: NONE,
        }
    }
}

fn hash(path: &[u8]) -> u64 {
    std::hash::BuildHasherDefault::<rrd::fx::Fx>::default().hash_one(path)
}

fn path_of<'a>(bytes: &'a [u8], s: &Slot) -> &'a [u8] {
    &bytes[s.start as usize..(s.start + s.len) as usize]
}

impl Paths {
    /// The entry of `path`, if this connection sent it before; it becomes the previous path.
    pub(super) fn get(&mut self, path: &str) -> Option<&Arc<Entry>> {
        let path = path.as_bytes();
        let guess = match self.slots.get(self.prev as usize) {
            Some(p) => p.next,
            None => NONE,
        };
        let hit = self
            .slots
            .get(guess as usize)
            .is_some_and(|s| path_of(&self.bytes, s) == path);
        if hit {
            self.prev = guess;
            return Some(&self.slots[guess as usize].entry);
        }
        let (bytes, slots) = (&self.bytes, &self.slots);
        let i = *self
            .index
            .find(hash(path), |&i| path_of(bytes, &slots[i as usize]) == path)?;
        self.follow(i);
        Some(&self.slots[i as usize].entry)
    }

    /// Keep `entry` for `path` (not in the table: [`Paths::get`] said None); it becomes the
    /// previous path.
    pub(super) fn insert(&mut self, path: &str, entry: Arc<Entry>) -> &Arc<Entry> {
        if self.slots.len() >= SLOTS_MAX || self.bytes.len() + path.len() > BYTES_MAX {
            *self = Paths::default();
        }
        let i = self.slots.len() as u32;
        self.slots.push(Slot {
            start: self.bytes.len() as u32,
            len: path.len() as u32,
            next: NONE,
            entry,
        });
        self.bytes.extend_from_slice(path.as_bytes());
        let (bytes, slots) = (&self.bytes, &self.slots);
        self.index.insert_unique(hash(path.as_bytes()), i, |&j| {
            hash(path_of(bytes, &slots[j as usize]))
        });
        self.follow(i);
        &self.slots[i as usize].entry
    }

    /// Slot `i` came after the previous one: guess it next time.
    fn follow(&mut self, i: u32) {
        if let Some(p) = self.slots.get_mut(self.prev as usize) {
            p.next = i;
        }
        self.prev = i;
    }

    #[cfg(test)]
    fn len(&self) -> usize {
        self.slots.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(name: &str) -> Arc<Entry> {
        let rrd = rrd::create::parse_create_with(
            &[
                "x.rrd".to_string(),
                "--start".into(),
                "1700000000".into(),
                "DS:value:GAUGE:20:U:U".into(),
                "RRA:AVERAGE:0.5:1:10".into(),
            ],
            1_700_000_000,
            &mut |_| None,
            &mut |_| false,
        )
        .unwrap();
        Arc::new(Entry::new(
            name.into(),
            &rrd::Rrd::new(rrd.schema, 1_700_000_000),
        ))
    }

    #[test]
    fn every_path_finds_its_own_entry_in_any_order() {
        let mut p = Paths::default();
        let names: Vec<String> = (0..500).map(|i| format!("a.b{i}.c")).collect();
        for n in &names {
            assert!(p.get(n).is_none());
            assert_eq!(&*p.insert(n, entry(n)).name, n.as_str());
        }
        // The same order (guessed), another order, a shuffle, repeats, a prefix of a path.
        let mut seed = 1u64;
        for round in 0..6 {
            let mut order: Vec<usize> = (0..names.len()).collect();
            match round {
                1 => order.reverse(),
                2 | 3 => {
                    for i in (1..order.len()).rev() {
                        seed = seed.wrapping_mul(6364136223846793005).wrapping_add(1);
                        order.swap(i, (seed >> 33) as usize % (i + 1));
                    }
                }
                4 => order = order.iter().flat_map(|&i| [i, i]).collect(),
                _ => {}
            }
            for i in order {
                let e = p.get(&names[i]).expect("kept");
                assert_eq!(&*e.name, names[i].as_str());
            }
            assert!(p.get("a.b1").is_none());
            assert!(p.get("a.b1.c.d").is_none());
        }
        assert_eq!(p.len(), names.len());
    }
}
