//! What the workspace's tests, fuzz seeds and simulations share, so that each is written once.
//!
//! - [`Rng`]: Marsaglia's xorshift64 (shifts 13, 7, 17), a seeded generator whose sequence is
//!   the same on every machine and in every release, so that a failing case repeats from its
//!   seed. Not for anything a client could predict or attack: nothing in the daemon's
//!   behaviour toward clients depends on it.
//!
//! No dependencies: every crate, from `rrd` at the bottom up, may take it as a
//! dev-dependency; `engine` takes it for its simulated disk's torn writes.

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

    /// A number in `0..n` (0 when `n` is 0).
    pub fn below(&mut self, n: u64) -> u64 {
        self.next_u64() % n.max(1)
    }

    /// An index in `0..n` (0 when `n` is 0).
    pub fn index(&mut self, n: usize) -> usize {
        self.below(n as u64) as usize
    }

    /// Uniform in [0, 1), of 53 bits.
    pub fn unit(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }

    /// A fair coin.
    pub fn coin(&mut self) -> bool {
        self.next_u64() & 1 == 1
    }
}

#[cfg(test)]
mod tests {
    use super::Rng;

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
