//! What the workspace's tests, fuzz seeds and simulations share, so that each is written once.
//!
//! - [`Rng`]: Marsaglia's xorshift64 (shifts 13, 7, 17), and [`SplitMix`]: SplitMix64; seeded
//!   generators whose sequences are the same on every machine and in every release, so that
//!   a failing case repeats from its seed. Not for anything a client could predict or
//!   attack: nothing in the daemon's behaviour toward clients depends on them.
//! - [`rrdcached`]: a client of the rrdcached protocol on a unix socket (a request, its
//!   reply, a whole conversation).
//! - [`http`]: a client of the daemon's HTTP listener on the loopback, and free loopback
//!   ports.
//! - [`json`] (feature `json`): JSON replies parsed, for tests that check them by field.
//! - [`emoncms`]: emoncms's PHPFina file operations as a seeded random sequence, applied to
//!   a directory (a plain one, or a view of one), and the tree they leave.
//!
//! No dependencies but the optional JSON parser: every crate, from `rrd` at the bottom up,
//! may take it as a dev-dependency; `engine` takes it for its simulated disk's torn writes.

#![forbid(unsafe_code)]

pub mod emoncms;
pub mod http;
#[cfg(feature = "json")]
pub mod json;
pub mod rrdcached;

/// xorshift64: a seeded, repeatable generator for tests and simulations.
#[derive(Clone, Debug)]
pub struct Rng(u64);

impl Rng {
    /// The generator whose state is `state` (not zero: zero stays zero).
    pub const fn new(state: u64) -> Rng {
        Rng(state)
    }

    /// The generator of a small seed (0, 1, 2...): the seed spread over the word by the
    /// golden-ratio multiplier, and odd, so that no seed gives the all-zero state.
    pub const fn seeded(seed: u64) -> Rng {
        Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1)
    }

    /// The next word.
    pub fn next_u64(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
}

/// SplitMix64 (Steele, Lea and Flood): every seed a full-period stream, neighbouring seeds
/// far apart. The benchmarks' workloads and the differential tests' cases are drawn from it
/// (their figures and cases are the same for a seed as before it moved here).
#[derive(Clone, Debug)]
pub struct SplitMix(u64);

impl SplitMix {
    /// The generator whose state is `state`.
    pub const fn new(state: u64) -> SplitMix {
        SplitMix(state)
    }

    /// The next word.
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
}

/// What both generators draw, from their words: one definition for both.
macro_rules! draws {
    ($t:ty) => {
        impl $t {
            /// A number in `0..n` (0 when `n` is 0).
            pub fn below(&mut self, n: u64) -> u64 {
                self.next_u64() % n.max(1)
            }

            /// An index in `0..n` (0 when `n` is 0).
            pub fn index(&mut self, n: usize) -> usize {
                self.below(n as u64) as usize
            }

            /// Uniform in `lo..=hi` (`lo <= hi`).
            pub fn range(&mut self, lo: u64, hi: u64) -> u64 {
                let span = hi - lo;
                if span == u64::MAX {
                    return self.next_u64();
                }
                lo + self.next_u64() % (span + 1)
            }

            /// Uniform in `lo..=hi` for signed bounds.
            pub fn irange(&mut self, lo: i64, hi: i64) -> i64 {
                let span = hi.wrapping_sub(lo) as u64;
                lo.wrapping_add(self.range(0, span) as i64)
            }

            /// Uniform in [0, 1), of 53 bits.
            pub fn unit(&mut self) -> f64 {
                (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64
            }

            /// A fair coin.
            pub fn coin(&mut self) -> bool {
                self.next_u64() & 1 == 1
            }

            /// True with probability `p`.
            pub fn chance(&mut self, p: f64) -> bool {
                self.unit() < p
            }

            /// True `pct` times in a hundred.
            pub fn percent(&mut self, pct: u64) -> bool {
                self.below(100) < pct
            }

            /// One element of a non-empty slice.
            pub fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
                &items[self.index(items.len())]
            }

            /// Fisher-Yates shuffle in place.
            pub fn shuffle<T>(&mut self, items: &mut [T]) {
                for i in (1..items.len()).rev() {
                    let j = self.range(0, i as u64) as usize;
                    items.swap(i, j);
                }
            }
        }
    };
}

draws!(Rng);
draws!(SplitMix);

#[cfg(test)]
mod tests {
    use super::{Rng, SplitMix};

    #[test]
    fn the_sequence_is_xorshift64_13_7_17() {
        // The first words from state 1, computed by hand from the definition.
        let mut r = Rng::new(1);
        let a = r.next_u64();
        let mut x = 1u64;
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        assert_eq!(a, x);
        assert_eq!(a, 0x4082_2041);
        assert_ne!(r.next_u64(), a);
    }

    #[test]
    fn splitmix_is_splitmix64() {
        // The first word of state 0 (the reference's published first output).
        assert_eq!(SplitMix::new(0).next_u64(), 0xE220_A839_7B1D_CDAF);
    }

    #[test]
    fn ranges_hold() {
        let mut r = Rng::seeded(0);
        for n in [1u64, 2, 7, 1000] {
            for _ in 0..1000 {
                assert!(r.below(n) < n);
            }
        }
        assert_eq!(r.below(0), 0);
        for _ in 0..1000 {
            let u = r.unit();
            assert!((0.0..1.0).contains(&u));
        }
    }
}
