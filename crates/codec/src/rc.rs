//! A binary adaptive range coder: the lengths of a sample block (crate::block, version 2).
//!
//! A block's lens say where each series' bits are and, for a series of one sample (a
//! "row"), how many bits each of its values took: most of what is left of a value's
//! information once its bits are stored plainly. A Rice or Exp-Golomb code spends whole bits
//! on every such symbol; an arithmetic code over probabilities learnt within the block
//! spends their entropy (a fifth of a byte a value at Munin's 4,000 values a commit, the
//! margin between a record of two pages and one of three). Hand-written: a few dozen lines
//! of the classic carry-propagating design (32-bit range, 12-bit probabilities from counts
//! of the bits seen, which learn a block's few thousand symbols closer to their entropy than
//! a fixed adaptation rate), with the block's own symbol trees and the exact end of stream
//! the block's reader checks; no crate offers both.
//!
//! Bytes: the encoder's output without the leading zero byte every such coder starts with,
//! and without trailing zero bytes; the decoder reads zeros past the end and counts the bytes
//! it read, so a reader can tell that every stored byte was used.

/// Probabilities of a 0 bit are in 1/4096ths.
const PROB_BITS: u32 = 12;
const PROB_ONE: u32 = 1 << PROB_BITS;
/// A context's counts are halved when they reach this many bits: the probabilities follow
/// a load whose figures drift across a block, and stay exact for a steady one.
const LIMIT: u32 = 1024;
const TOP: u32 = 1 << 24;

/// `2^40 / (2 n + 2)` rounded up, for every count `n` a context can hold.
static RECIPROCAL: [u64; LIMIT as usize] = {
    let mut t = [0u64; LIMIT as usize];
    let mut n = 0;
    while n < LIMIT as usize {
        let d = 2 * n as u64 + 2;
        t[n] = (1u64 << 40).div_ceil(d);
        n += 1;
    }
    t
};

/// One adaptive binary context: the bits it has seen (halved now and then), and the
/// probability they give (`(zeros + 1/2) / (all + 1)`), kept beside them: a reader needs it
/// at once when it meets the context, and works it out when it learns (its next use is
/// later, so the work overlaps others'; a reader of one series decodes every other series'
/// lengths in turn, this step and the next being most of what it does).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Prob {
    zeros: u16,
    ones: u16,
    p0: u16,
}

impl Default for Prob {
    fn default() -> Self {
        Prob {
            zeros: 0,
            ones: 0,
            p0: Prob::p0_of(0, 0) as u16,
        }
    }
}

impl Prob {
    /// The probability of a 0, in 1/4096ths (1..=4095): `((2 zeros + 1) * 4096) / (2 all +
    /// 2)`, the division done as a multiplication by a reciprocal (exact for these
    /// operands: numerators below 2^24, divisors at most 2048, reciprocals of 40 bits).
    const fn p0_of(zeros: u16, ones: u16) -> u32 {
        let z = zeros as u64;
        let n = zeros as usize + ones as usize;
        let q = (((2 * z + 1) << PROB_BITS) * RECIPROCAL[n]) >> 40;
        let q = q as u32;
        if q < 1 {
            1
        } else if q > PROB_ONE - 1 {
            PROB_ONE - 1
        } else {
            q
        }
    }

    #[inline(always)]
    fn p0(&self) -> u32 {
        u32::from(self.p0)
    }

    #[inline(always)]
    fn learn(&mut self, bit: bool) {
        self.ones += u16::from(bit);
        self.zeros += u16::from(!bit);
        if u32::from(self.zeros) + u32::from(self.ones) >= LIMIT {
            self.zeros = self.zeros.div_ceil(2);
            self.ones = self.ones.div_ceil(2);
        }
        self.p0 = Prob::p0_of(self.zeros, self.ones) as u16;
    }

    /// What coding `bit` here costs, in 1/65536ths of a bit (an estimate for statistics).
    pub fn cost(&self, bit: bool) -> u64 {
        let p0 = self.p0();
        let p = if bit { PROB_ONE - p0 } else { p0 };
        cost_table()[p as usize] as u64
    }
}

/// `-log2(p / 4096) * 65536` for every probability `p`.
fn cost_table() -> &'static [u32; PROB_ONE as usize + 1] {
    static TABLE: std::sync::OnceLock<Box<[u32; PROB_ONE as usize + 1]>> =
        std::sync::OnceLock::new();
    TABLE.get_or_init(|| {
        let mut t = Box::new([0u32; PROB_ONE as usize + 1]);
        for (p, c) in t.iter_mut().enumerate() {
            let p = (p as f64).max(0.5) / f64::from(PROB_ONE);
            *c = (-p.log2() * 65536.0).round() as u32;
        }
        t
    })
}

/// Writes bits at given probabilities.
#[derive(Debug, Clone)]
pub struct Encoder {
    low: u64,
    range: u32,
    cache: u8,
    /// Bytes held back: the cached one and the 0xFF bytes after it (a carry may change them).
    pending: u64,
    out: Vec<u8>,
    /// Whether the first byte (always zero) has been left out.
    started: bool,
}

impl Default for Encoder {
    fn default() -> Self {
        Encoder {
            low: 0,
            range: u32::MAX,
            cache: 0,
            pending: 1,
            out: Vec::new(),
            started: false,
        }
    }
}

impl Encoder {
    pub fn new() -> Self {
        Encoder::default()
    }

    fn emit(&mut self, b: u8) {
        if self.started {
            self.out.push(b);
        } else {
            debug_assert_eq!(b, 0, "a range coder's first byte");
            self.started = true;
        }
    }

    fn shift_low(&mut self) {
        if (self.low as u32) < 0xFF00_0000 || self.low >> 32 != 0 {
            let carry = (self.low >> 32) as u8;
            let mut b = self.cache;
            while self.pending > 0 {
                self.emit(b.wrapping_add(carry));
                b = 0xFF;
                self.pending -= 1;
            }
            self.cache = (self.low >> 24) as u8;
        }
        self.pending += 1;
        self.low = (self.low & 0x00FF_FFFF) << 8;
    }

    /// Code `bit` with `p`, then let `p` learn it.
    pub fn bit(&mut self, p: &mut Prob, bit: bool) {
        let bound = (self.range >> PROB_BITS) * p.p0();
        if bit {
            self.low += u64::from(bound);
            self.range -= bound;
        } else {
            self.range = bound;
        }
        p.learn(bit);
        while self.range < TOP {
            self.range <<= 8;
            self.shift_low();
        }
    }

    /// Code the low `n` bits of `v`, most significant first, each at one half.
    pub fn direct(&mut self, v: u64, n: u32) {
        for i in (0..n).rev() {
            let mut half = Prob::default();
            self.bit(&mut half, (v >> i) & 1 == 1);
        }
    }

    /// The bytes. The value left in the coder is the one in its interval with the most
    /// trailing zero bytes, which are then left out.
    pub fn finish(mut self) -> Vec<u8> {
        let end = self.low + u64::from(self.range);
        for shift in [32u32, 24, 16, 8, 0] {
            let mask = (1u64 << shift) - 1;
            let v = (self.low + mask) & !mask;
            if v < end {
                self.low = v;
                break;
            }
        }
        for _ in 0..5 {
            self.shift_low();
        }
        while self.out.last() == Some(&0) {
            self.out.pop();
        }
        self.out
    }
}

/// Reads what an [`Encoder`] wrote, with the same probabilities in the same order.
#[derive(Debug, Clone)]
pub struct Decoder<'a> {
    data: &'a [u8],
    /// Bytes read, past the end too (those read as zeros).
    read: usize,
    code: u32,
    range: u32,
}

impl<'a> Decoder<'a> {
    pub fn new(data: &'a [u8]) -> Self {
        let mut d = Decoder {
            data,
            read: 0,
            code: 0,
            range: u32::MAX,
        };
        for _ in 0..4 {
            d.code = (d.code << 8) | u32::from(d.next_byte());
        }
        d
    }

    fn next_byte(&mut self) -> u8 {
        let b = self.data.get(self.read).copied().unwrap_or(0);
        self.read += 1;
        b
    }

    /// Read a bit coded with `p`, then let `p` learn it. Damaged bytes give other bits,
    /// never a panic.
    #[inline(always)]
    pub fn bit(&mut self, p: &mut Prob) -> bool {
        let bound = (self.range >> PROB_BITS) * p.p0();
        let bit = self.code >= bound;
        // Without a branch on the bit (half of them would be mispredicted).
        let mask = 0u32.wrapping_sub(u32::from(bit));
        self.code = self.code.wrapping_sub(bound & mask);
        self.range = (self.range.wrapping_sub(bound) & mask) | (bound & !mask);
        p.learn(bit);
        while self.range < TOP {
            self.range <<= 8;
            self.code = (self.code << 8) | u32::from(self.next_byte());
        }
        bit
    }

    /// Read `n` bits coded by [`Encoder::direct`].
    pub fn direct(&mut self, n: u32) -> u64 {
        let mut v = 0u64;
        for _ in 0..n {
            let mut half = Prob::default();
            v = (v << 1) | u64::from(self.bit(&mut half));
        }
        v
    }

    /// Whether every stored byte was needed: false when bytes follow what the encoder wrote.
    pub fn used_all(&self) -> bool {
        self.read >= self.data.len()
    }

    /// Bytes read so far, those past the end (read as zeros) too.
    pub fn bytes_read(&self) -> usize {
        self.read
    }
}

/// A tree of contexts for symbols of `n` bits (`0..2^n`): each bit coded with the context
/// of the bits before it, so the tree learns any distribution of the symbols.
#[derive(Debug, Clone)]
pub struct BitTree {
    bits: u32,
    probs: Vec<Prob>,
}

impl BitTree {
    pub fn new(bits: u32) -> Self {
        BitTree {
            bits,
            probs: vec![Prob::default(); 1 << bits],
        }
    }

    pub fn encode(&mut self, e: &mut Encoder, sym: u64) {
        let mut m = 1usize;
        for i in (0..self.bits).rev() {
            let b = (sym >> i) & 1 == 1;
            e.bit(&mut self.probs[m], b);
            m = (m << 1) | b as usize;
        }
    }

    pub fn decode(&mut self, d: &mut Decoder) -> u64 {
        let mut m = 1usize;
        for _ in 0..self.bits {
            let b = d.bit(&mut self.probs[m]);
            m = (m << 1) | b as usize;
        }
        (m - (1 << self.bits)) as u64
    }

    /// What coding `sym` costs now, in 1/65536ths of a bit.
    pub fn cost(&self, sym: u64) -> u64 {
        let mut m = 1usize;
        let mut c = 0;
        for i in (0..self.bits).rev() {
            let b = (sym >> i) & 1 == 1;
            c += self.probs[m].cost(b);
            m = (m << 1) | b as usize;
        }
        c
    }
}

/// Any `u64`: values below `2^bits - 1` in a [`BitTree`], the others as the tree's last
/// symbol followed by the excess's bit length in adaptive unary and its bits below the top.
#[derive(Debug, Clone)]
pub struct Wide {
    tree: BitTree,
    unary: [Prob; 16],
}

impl Wide {
    pub fn new(bits: u32) -> Self {
        Wide {
            tree: BitTree::new(bits),
            unary: [Prob::default(); 16],
        }
    }

    fn escape(&self) -> u64 {
        (1u64 << self.tree.bits) - 1
    }

    pub fn encode(&mut self, e: &mut Encoder, v: u64) {
        let esc = self.escape();
        if v < esc {
            self.tree.encode(e, v);
            return;
        }
        self.tree.encode(e, esc);
        let x = v - esc;
        let n = 64 - x.leading_zeros();
        for i in 0..n {
            e.bit(&mut self.unary[(i as usize).min(15)], true);
        }
        if n < 64 {
            e.bit(&mut self.unary[(n as usize).min(15)], false);
        }
        if n > 1 {
            e.direct(x, n - 1);
        }
    }

    /// What coding `v` costs now, in 1/65536ths of a bit.
    pub fn cost(&self, v: u64) -> u64 {
        let esc = self.escape();
        if v < esc {
            return self.tree.cost(v);
        }
        let x = v - esc;
        let n = 64 - x.leading_zeros();
        let mut c = self.tree.cost(esc) + (u64::from(n.saturating_sub(1)) << 16);
        for i in 0..n {
            c += self.unary[(i as usize).min(15)].cost(true);
        }
        if n < 64 {
            c += self.unary[(n as usize).min(15)].cost(false);
        }
        c
    }

    pub fn decode(&mut self, d: &mut Decoder) -> u64 {
        let esc = self.escape();
        let v = self.tree.decode(d);
        if v < esc {
            return v;
        }
        let mut n = 0u32;
        while n < 64 && d.bit(&mut self.unary[(n as usize).min(15)]) {
            n += 1;
        }
        let x = match n {
            0 => 0,
            _ => (1u64 << (n - 1)) | d.direct(n - 1),
        };
        esc.wrapping_add(x)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::block::tests::Rng;

    #[test]
    fn bits_and_symbols_come_back() {
        let mut rng = Rng(1);
        for case in 0..200 {
            let n = (rng.next() % 3000) as usize;
            // Skewed bits, symbols of a few sizes, wide values near the edges.
            let skew = rng.next() % 2048;
            let items: Vec<(u64, u64)> = (0..n)
                .map(|_| {
                    let kind = rng.next() % 4;
                    let v = match kind {
                        0 => u64::from(rng.next() % 2048 < skew),
                        1 => rng.next() % 128,
                        2 => match rng.next() % 4 {
                            0 => u64::MAX - rng.next() % 3,
                            1 => rng.next() >> (rng.next() % 64),
                            _ => rng.next() % 80,
                        },
                        _ => rng.next() % (1 << 20),
                    };
                    (kind, v)
                })
                .collect();
            let (mut p, mut t, mut w) = (Prob::default(), BitTree::new(7), Wide::new(6));
            let mut e = Encoder::new();
            for &(k, v) in &items {
                match k {
                    0 => e.bit(&mut p, v == 1),
                    1 => t.encode(&mut e, v),
                    2 => w.encode(&mut e, v),
                    _ => e.direct(v, 20),
                }
            }
            let bytes = e.finish();
            let (mut p, mut t, mut w) = (Prob::default(), BitTree::new(7), Wide::new(6));
            let mut d = Decoder::new(&bytes);
            for (i, &(k, v)) in items.iter().enumerate() {
                let got = match k {
                    0 => u64::from(d.bit(&mut p)),
                    1 => t.decode(&mut d),
                    2 => w.decode(&mut d),
                    _ => d.direct(20),
                };
                assert_eq!(got, v, "case {case}, item {i}");
            }
            assert!(d.used_all(), "case {case}");
            // A byte after those the decoder reads (trimmed zeros put back first).
            let mut longer = bytes.clone();
            longer.resize(d.bytes_read(), 0);
            longer.push(1);
            let mut d = Decoder::new(&longer);
            let (mut p, mut t, mut w) = (Prob::default(), BitTree::new(7), Wide::new(6));
            for &(k, _) in &items {
                match k {
                    0 => drop(d.bit(&mut p)),
                    1 => drop(t.decode(&mut d)),
                    2 => drop(w.decode(&mut d)),
                    _ => drop(d.direct(20)),
                }
            }
            assert!(
                !d.used_all(),
                "case {case}: a byte after the end goes unseen"
            );
        }
    }

    #[test]
    fn a_learnt_distribution_costs_about_its_entropy() {
        // Symbols 0..16 with probabilities 1/2, 1/4, ...: 2 bits of entropy a symbol.
        let mut rng = Rng(2);
        let mut t = BitTree::new(4);
        let mut e = Encoder::new();
        let n = 20_000;
        let mut est = 0;
        for _ in 0..n {
            let s = (rng.next() | 1 << 15).trailing_zeros() as u64;
            est += t.cost(s);
            t.encode(&mut e, s);
        }
        let bits = e.finish().len() as f64 * 8.0 / n as f64;
        assert!((1.95..2.05).contains(&bits), "{bits} bits a symbol");
        let est = est as f64 / 65536.0 / n as f64;
        assert!((est - bits).abs() < 0.02, "estimate {est} against {bits}");
    }

    #[test]
    fn the_reciprocals_divide_exactly() {
        for n in 0..LIMIT as u64 {
            for z in 0..=n {
                let a = (2 * z + 1) << PROB_BITS;
                assert_eq!(
                    (a * RECIPROCAL[n as usize]) >> 40,
                    a / (2 * n + 2),
                    "{z}/{n}"
                );
            }
        }
    }

    #[test]
    fn damaged_bytes_decode_to_something() {
        let mut rng = Rng(3);
        for _ in 0..500 {
            let bytes: Vec<u8> = (0..rng.next() % 40).map(|_| rng.next() as u8).collect();
            let mut d = Decoder::new(&bytes);
            let mut w = Wide::new(6);
            for _ in 0..50 {
                w.decode(&mut d);
            }
        }
    }
}
