//! Maps keyed by series (and blob) ids, with a hasher made for them: shared by the series
//! registry, the blobs and replay.

use std::collections::HashMap;
use std::hash::BuildHasher;

/// Hashes series ids for maps keyed by them: one multiplication instead of SipHash's rounds
/// (a lookup by id for every piece of samples replay collects, and for every update). Ids
/// are assigned here, in sequence, never chosen by a client, so there is no flooding to
/// fear.
#[derive(Default, Clone, Copy)]
pub struct IdHash;

impl BuildHasher for IdHash {
    type Hasher = IdHasher;

    fn build_hasher(&self) -> IdHasher {
        IdHasher(0)
    }
}

/// The hasher of [`IdHash`].
pub struct IdHasher(u64);

impl std::hash::Hasher for IdHasher {
    fn finish(&self) -> u64 {
        // The product's well-mixed high half folded into the low one, which picks the
        // bucket: ids sharing their low bits (strided) still spread.
        self.0 ^ (self.0 >> 32)
    }

    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.write_u64(u64::from(b));
        }
    }

    fn write_u64(&mut self, n: u64) {
        self.0 = (self.0.rotate_left(29) ^ n).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    }
}

/// A map keyed by series id.
pub type IdMap<V> = HashMap<u64, V, IdHash>;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn id_hashes_spread_sequential_and_strided_ids_over_buckets() {
        // The low 16 bits pick the bucket of a 65,536-bucket table, the top 7 the tag: both
        // spread for ids in sequence and ids sharing their low bits.
        for stride in [1u64, 2, 1024, 1 << 20, 1 << 32] {
            let hashes: Vec<u64> = (1..=65_536u64)
                .map(|i| IdHash.hash_one(i * stride))
                .collect();
            let buckets: std::collections::HashSet<u64> =
                hashes.iter().map(|h| h & 0xFFFF).collect();
            // Random hashes fill 1 - 1/e of the buckets: 41,427.
            assert!(buckets.len() > 38_000, "stride {stride}: {}", buckets.len());
            let mut tags = [0u32; 128];
            for h in &hashes {
                tags[(h >> 57) as usize] += 1;
            }
            let (lo, hi) = (tags.iter().min().unwrap(), tags.iter().max().unwrap());
            assert!(*lo > 300 && *hi < 800, "stride {stride}: tags {lo}..{hi}");
        }
        let mut m: IdMap<u64> = IdMap::default();
        for i in 0..10_000u64 {
            m.insert(i * 7919, i);
        }
        assert!((0..10_000u64).all(|i| m.get(&(i * 7919)) == Some(&i)));
        assert_eq!(m.get(&1), None);
    }
}
