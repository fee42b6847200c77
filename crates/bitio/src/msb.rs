//! Bit streams most significant bit first, with Exp-Golomb and Rice codes (the sample codec's).
//!
//! The sample codec spends single bits on the common case (a regular timestamp, an unchanged
//! value), so its payload is a bit stream. Exp-Golomb of order `k` codes an unsigned `u` as
//! `v = u + 2^k` written in `bitlen(v)` bits, preceded by `bitlen(v) - k - 1` zero bits: small
//! numbers are short, and there is no upper bound (every `u64` fits). Rice of parameter `k`
//! (unary quotient, `k` low bits) is shorter for the roughly geometric residuals of decimal
//! values; it escapes to Exp-Golomb for outliers.

use crate::DecodeError;

/// Exp-Golomb order for residuals whose running magnitude (8 x mean) is `mag`:
/// `min(40, max(0, bitlen(mag >> 3) - 1))`.
#[inline]
pub fn order(mag: u64) -> u32 {
    let mean = mag >> 3;
    (64 - mean.leading_zeros()).saturating_sub(1).min(40)
}

/// Unary quotients of a Rice code stop here; larger values escape to Exp-Golomb.
pub const RICE_ESCAPE: u64 = 12;

/// Appends bits, MSB first, to a byte vector; the last byte is padded with zero bits.
#[derive(Debug, Default, Clone)]
pub struct BitWriter {
    buf: Vec<u8>,
    /// Bits used in the last byte (0 = the last byte is full or there is none).
    used: u32,
}

impl BitWriter {
    #[inline]
    pub fn new() -> Self {
        BitWriter::default()
    }

    /// Bits written so far.
    #[inline]
    pub fn bit_len(&self) -> u64 {
        if self.used == 0 {
            self.buf.len() as u64 * 8
        } else {
            (self.buf.len() as u64 - 1) * 8 + self.used as u64
        }
    }

    #[inline]
    pub fn bit(&mut self, b: bool) {
        if self.used == 0 {
            self.buf.push(0);
        }
        if b {
            if let Some(last) = self.buf.last_mut() {
                *last |= 0x80 >> self.used;
            }
        }
        self.used = (self.used + 1) % 8;
    }

    /// The low `n` bits of `v`, most significant first; `n <= 64`.
    #[inline]
    pub fn bits(&mut self, v: u64, n: u32) {
        let mut n = n.min(64);
        while n > 0 {
            if self.used == 0 {
                self.buf.push(0);
            }
            let free = 8 - self.used;
            let take = free.min(n);
            let part = ((v >> (n - take)) & ((1u64 << take) - 1)) as u8;
            if let Some(last) = self.buf.last_mut() {
                *last |= part << (free - take);
            }
            self.used = (self.used + take) % 8;
            n -= take;
        }
    }

    /// Bits `from..to` of `src` (bit 0 is the most significant bit of `src[0]`), appended
    /// as they are: one series' stream copied into a commit-wide block without the byte
    /// padding it ended with. `to <= src.len() * 8`.
    #[inline]
    pub fn append(&mut self, src: &[u8], from: u64, to: u64) {
        debug_assert!(from <= to && to <= src.len() as u64 * 8);
        let mut at = from;
        // Whole bytes of the source while both sides allow, 64 bits at a time otherwise.
        if self.used == 0 && at.is_multiple_of(8) {
            let whole = ((to - at) / 8) as usize;
            let b = (at / 8) as usize;
            self.buf.extend_from_slice(&src[b..b + whole]);
            at += whole as u64 * 8;
        }
        while at < to {
            let n = (to - at).min(57) as u32;
            // Up to 8 source bytes starting at the byte that holds `at`.
            let b = (at / 8) as usize;
            let mut word = 0u64;
            for (i, &x) in src[b..].iter().take(8).enumerate() {
                word |= (x as u64) << (56 - 8 * i);
            }
            let shift = (at % 8) as u32;
            let v = (word << shift) >> (64 - n);
            self.bits(v, n);
            at += n as u64;
        }
    }

    /// Exp-Golomb of order `k` (`k <= 63`).
    #[inline]
    pub fn exp_golomb(&mut self, u: u64, k: u32) {
        let v = u as u128 + (1u128 << k);
        let n = 128 - v.leading_zeros();
        for _ in 0..(n - k - 1) {
            self.bit(false);
        }
        if n > 64 {
            self.bits((v >> 64) as u64, n - 64);
            self.bits(v as u64, 64);
        } else {
            self.bits(v as u64, n);
        }
    }

    /// Rice code of parameter `k` with an escape: `q = u >> k`; if `q < RICE_ESCAPE`, `q`
    /// one bits, a zero, then the low `k` bits of `u`; else `RICE_ESCAPE` one bits and
    /// Exp-Golomb(k) of `u - (RICE_ESCAPE << k)`.
    #[inline]
    pub fn rice(&mut self, u: u64, k: u32) {
        let q = u >> k;
        if q < RICE_ESCAPE {
            for _ in 0..q {
                self.bit(true);
            }
            self.bit(false);
            self.bits(u, k);
        } else {
            for _ in 0..RICE_ESCAPE {
                self.bit(true);
            }
            self.exp_golomb(u - (RICE_ESCAPE << k), k);
        }
    }

    /// Room for `bytes` more bytes.
    #[inline]
    pub fn reserve(&mut self, bytes: usize) {
        self.buf.reserve(bytes);
    }

    #[inline]
    pub fn into_bytes(self) -> Vec<u8> {
        self.buf
    }

    #[inline]
    pub fn as_bytes(&self) -> &[u8] {
        &self.buf
    }
}

/// Reads what [`BitWriter`] wrote; running past the end is a [`DecodeError`].
#[derive(Debug, Clone)]
pub struct BitReader<'a> {
    buf: &'a [u8],
    pos: u64,
    /// Bits past this are not this reader's (a series' range in a block).
    end: u64,
    /// Zero bits read before `pos` moves (a block's series whose leading zeros were left out).
    zeros: u32,
}

impl<'a> BitReader<'a> {
    #[inline]
    pub fn new(buf: &'a [u8]) -> Self {
        BitReader {
            buf,
            pos: 0,
            end: buf.len() as u64 * 8,
            zeros: 0,
        }
    }

    /// Bits `from..to` of `buf`, after `zeros` zero bits that are not in `buf`.
    /// `to` is clamped to the buffer's bits.
    #[inline]
    pub fn slice(buf: &'a [u8], from: u64, to: u64, zeros: u32) -> Self {
        let end = to.min(buf.len() as u64 * 8);
        BitReader {
            buf,
            pos: from.min(end),
            end,
            zeros,
        }
    }

    /// The position in `buf`, in bits (after the leading zeros, once read).
    #[inline]
    pub fn position(&self) -> u64 {
        self.pos
    }

    /// Whether every bit of the range was read, the leading zeros included.
    #[inline]
    pub fn at_end(&self) -> bool {
        self.pos == self.end && self.zeros == 0
    }

    /// An error at the byte being read.
    #[inline]
    pub fn err(&self, what: &str) -> DecodeError {
        DecodeError::new((self.pos / 8) as usize, what)
    }

    /// Bits not read yet (including the last byte's padding).
    #[inline]
    pub fn remaining_bits(&self) -> u64 {
        self.end.saturating_sub(self.pos) + self.zeros as u64
    }

    #[inline]
    pub fn bit(&mut self) -> Result<bool, DecodeError> {
        if self.zeros > 0 {
            self.zeros -= 1;
            return Ok(false);
        }
        if self.pos >= self.end {
            return Err(self.err("bit stream ends early"));
        }
        let b = self.buf[(self.pos / 8) as usize];
        let v = (b >> (7 - (self.pos % 8))) & 1 == 1;
        self.pos += 1;
        Ok(v)
    }

    /// The next 64 bits of `buf` from `pos`, most significant first, of which at least 57
    /// are the buffer's (bits past `end` may be anything; callers check `end`); `None` when
    /// fewer than 8 bytes are left from `pos`'s byte.
    #[inline]
    fn peek(&self) -> Option<u64> {
        let b = (self.pos / 8) as usize;
        let bytes: [u8; 8] = self.buf.get(b..b.checked_add(8)?)?.try_into().ok()?;
        // The stream is most significant bit first: its first byte is the word's top byte
        // (the store's integers are little-endian; only this bit order is not).
        Some(u64::from_le_bytes(bytes).swap_bytes() << (self.pos % 8))
    }

    /// Whether `n` bits can be taken from one [`peek`](Self::peek): no leading zeros owed,
    /// `n` fits in what a peek guarantees, and the range holds `n` more bits.
    #[inline]
    fn fits(&self, n: u32) -> bool {
        self.zeros == 0 && n <= 57 && self.end - self.pos >= n as u64
    }

    /// `n` bits (`n <= 64`) as an unsigned number.
    ///
    /// This and [`rice`](Self::rice) and [`exp_golomb`](Self::exp_golomb) take the common
    /// case from one 64-bit load (the replay of a full log ring decodes tens of millions of
    /// values); the bit-at-a-time reading below stays for the ends of ranges, owed leading
    /// zeros and long codes, and the test `word_reads_match_bit_reads` holds both to the same
    /// results.
    #[inline]
    pub fn bits(&mut self, n: u32) -> Result<u64, DecodeError> {
        if n == 0 {
            return Ok(0);
        }
        if self.fits(n) {
            if let Some(w) = self.peek() {
                self.pos += n as u64;
                return Ok(w >> (64 - n));
            }
        }
        self.bits_slow(n)
    }

    #[inline]
    fn bits_slow(&mut self, n: u32) -> Result<u64, DecodeError> {
        let mut n = n.min(64);
        let mut v = 0u64;
        while n > 0 && self.zeros > 0 {
            self.zeros -= 1;
            v <<= 1;
            n -= 1;
        }
        if self.end - self.pos < n as u64 {
            return Err(self.err("bit stream ends early"));
        }
        while n > 0 {
            let b = self.buf[(self.pos / 8) as usize];
            let off = (self.pos % 8) as u32;
            let take = (8 - off).min(n);
            let part = (b >> (8 - off - take)) as u64 & ((1u64 << take) - 1);
            v = (v << take) | part;
            self.pos += take as u64;
            n -= take;
        }
        Ok(v)
    }

    #[inline]
    pub fn rice(&mut self, k: u32) -> Result<u64, DecodeError> {
        if self.zeros == 0 && k < 64 {
            if let Some(w) = self.peek() {
                let q = (!w).leading_zeros();
                if (q as u64) < RICE_ESCAPE && self.fits(q + 1 + k) {
                    let low = if k == 0 {
                        0
                    } else {
                        (w << (q + 1)) >> (64 - k)
                    };
                    self.pos += (q + 1 + k) as u64;
                    return Ok(((q as u64) << k) | low);
                }
            }
        }
        self.rice_slow(k)
    }

    #[inline]
    fn rice_slow(&mut self, k: u32) -> Result<u64, DecodeError> {
        let mut q = 0u64;
        while q < RICE_ESCAPE && self.bit()? {
            q += 1;
        }
        if q < RICE_ESCAPE {
            return Ok((q << k) | self.bits_slow(k)?);
        }
        let rest = self.exp_golomb_slow(k)?;
        rest.checked_add(RICE_ESCAPE << k)
            .ok_or_else(|| self.err("Rice value exceeds 64 bits"))
    }

    #[inline]
    pub fn exp_golomb(&mut self, k: u32) -> Result<u64, DecodeError> {
        if self.zeros == 0 && k < 64 {
            if let Some(w) = self.peek() {
                let z = w.leading_zeros();
                // `z` zeros, the leading one, `z + k` bits: the value plus 2^k.
                let len = z + 1 + k;
                if z < 64 && self.fits(z + len) {
                    let v = (w << z) >> (64 - len);
                    self.pos += (z + len) as u64;
                    return Ok(v - (1u64 << k));
                }
            }
        }
        self.exp_golomb_slow(k)
    }

    #[inline]
    fn exp_golomb_slow(&mut self, k: u32) -> Result<u64, DecodeError> {
        let mut zeros = 0u32;
        while !self.bit()? {
            zeros += 1;
            if zeros + k > 64 {
                return Err(self.err("Exp-Golomb prefix too long"));
            }
        }
        // The leading 1 was consumed; `zeros + k` bits follow.
        let rest = zeros + k;
        let mut v: u128 = 1;
        for _ in 0..rest {
            v = (v << 1) | self.bit()? as u128;
        }
        let u = v - (1u128 << k);
        u64::try_from(u).map_err(|_| self.err("Exp-Golomb value exceeds 64 bits"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exp_golomb_roundtrips_every_order_and_edge() {
        let vals = [0u64, 1, 2, 3, 7, 8, 1000, 1 << 40, u64::MAX - 1, u64::MAX];
        for k in [0u32, 1, 3, 10, 40, 63] {
            let mut w = BitWriter::new();
            for &v in &vals {
                w.exp_golomb(v, k);
                w.bit(true);
            }
            let bytes = w.into_bytes();
            let mut r = BitReader::new(&bytes);
            for &v in &vals {
                assert_eq!(r.exp_golomb(k).unwrap(), v, "k={k}");
                assert!(r.bit().unwrap());
            }
        }
    }

    #[test]
    fn rice_roundtrips_below_and_above_the_escape() {
        let vals = [0u64, 1, 5, 11, 12, 13, 100, 4095, 4096, 1 << 40, u64::MAX];
        for k in [0u32, 1, 4, 8, 40] {
            let mut w = BitWriter::new();
            for &v in &vals {
                w.rice(v, k);
                w.bit(true);
            }
            let bytes = w.into_bytes();
            let mut r = BitReader::new(&bytes);
            for &v in &vals {
                assert_eq!(r.rice(k).unwrap(), v, "k={k}");
                assert!(r.bit().unwrap());
            }
        }
        let mut w = BitWriter::new();
        w.rice(5, 2); // q = 1: `1 0`, then `01`
        assert_eq!(w.as_bytes(), &[0b1001_0000]);
    }

    #[test]
    fn exp_golomb_zero_at_order_zero_is_one_bit() {
        let mut w = BitWriter::new();
        w.exp_golomb(0, 0);
        assert_eq!(w.bit_len(), 1);
        w.exp_golomb(1, 0);
        assert_eq!(w.bit_len(), 4);
    }

    /// The 64-bit fast paths read what bit-at-a-time reading does, value, error and position
    /// alike: random bytes (runs of ones and zeros, for long unary and Exp-Golomb prefixes),
    /// ranges that start and end inside bytes, owed leading zeros, every order of code.
    #[test]
    fn word_reads_match_bit_reads() {
        let mut rng = testkit::Rng::new(0x9e37_79b9_7f4a_7c15u64);
        let mut next = move || rng.next_u64();
        for _ in 0..4000 {
            let len = (next() % 40) as usize;
            let buf: Vec<u8> = (0..len)
                .map(|_| match next() % 4 {
                    0 => 0xff,
                    1 => 0,
                    _ => next() as u8,
                })
                .collect();
            let bits = len as u64 * 8;
            let from = if bits == 0 { 0 } else { next() % bits };
            let to = from + next() % (bits - from + 9);
            let zeros = (next() % 4 == 0) as u32 * (next() % 20) as u32;
            let mut fast = BitReader::slice(&buf, from, to, zeros);
            let mut slow = fast.clone();
            for _ in 0..30 {
                let op = next() % 3;
                let k = match next() % 3 {
                    0 => (next() % 4) as u32,
                    1 => (next() % 64) as u32,
                    _ => (next() % 20) as u32,
                };
                let (a, b) = match op {
                    0 => (fast.bits(k), slow.bits_slow(k)),
                    1 => (fast.rice(k), slow.rice_slow(k)),
                    _ => (fast.exp_golomb(k), slow.exp_golomb_slow(k)),
                };
                assert_eq!(a.is_ok(), b.is_ok(), "op {op} k {k}");
                if a.is_err() {
                    break;
                }
                assert_eq!(a.unwrap(), b.unwrap(), "op {op} k {k}");
                assert_eq!((fast.pos, fast.zeros), (slow.pos, slow.zeros));
            }
        }
    }

    #[test]
    fn reading_past_the_end_is_an_error() {
        let mut r = BitReader::new(&[0]);
        assert!(r.exp_golomb(0).is_err());
        let mut r = BitReader::new(&[]);
        assert!(r.bit().is_err());
    }
}
