//! The workspace's one bit and varint coding, beneath `rrd` (archive rows) and `codec`
//! (records, checkpoints, samples), which both depend on it:
//!
//! - [`put_varint`], [`read_varint`], [`varint_len`]: LEB128 varints, 7 bits a byte, least
//!   significant group first; [`zigzag`] and [`unzigzag`] for signed numbers; [`width`].
//! - [`lsb`]: fields packed least significant bit first (archive rows' packed blocks).
//! - [`msb`]: bit streams most significant bit first, Exp-Golomb and Rice codes (the sample
//!   codec), and [`DecodeError`], what a malformed stream gives.
//!
//! Two bit orders, because both are in files already written; each is written once here.
//! Hand-written: the exact bits are the format (docs/FORMAT.md), and the readers are on the
//! hot path of replay and reads.

#![forbid(unsafe_code)]

pub mod lsb;
pub mod msb;

use std::fmt;

/// Malformed bytes: what was expected and where (offset within the decoded buffer).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DecodeError {
    pub offset: usize,
    pub what: String,
}

impl DecodeError {
    pub fn new(offset: usize, what: impl Into<String>) -> Self {
        DecodeError {
            offset,
            what: what.into(),
        }
    }
}

impl fmt::Display for DecodeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} at byte {}", self.what, self.offset)
    }
}

impl std::error::Error for DecodeError {}

/// Zigzag: small signed numbers to small unsigned ones (0, -1, 1, -2 ... -> 0, 1, 2, 3 ...).
#[inline]
pub fn zigzag(n: i64) -> u64 {
    ((n << 1) ^ (n >> 63)) as u64
}

/// The signed number [`zigzag`] gave `u` for.
#[inline]
pub fn unzigzag(u: u64) -> i64 {
    ((u >> 1) as i64) ^ -((u & 1) as i64)
}

/// Append `v` as a varint.
#[inline]
pub fn put_varint(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push(v as u8 | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

/// The bytes [`put_varint`] takes for `v`.
#[inline]
pub fn varint_len(v: u64) -> usize {
    (64 - (v | 1).leading_zeros() as usize).div_ceil(7)
}

/// Bits needed for `v`: 0 for 0.
#[inline]
pub fn width(v: u64) -> u8 {
    (64 - v.leading_zeros()) as u8
}

/// Why [`read_varint`] failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum VarintError {
    /// The bytes ended inside it, at this offset.
    Truncated(usize),
    /// Its tenth byte holds more than the 64th bit.
    Overflow,
    /// More than ten bytes.
    TooLong,
}

/// The varint at `buf[*pos..]`, moving `*pos` past it (on an error, `*pos` is where
/// reading stopped).
#[inline]
pub fn read_varint(buf: &[u8], pos: &mut usize) -> Result<u64, VarintError> {
    let mut v = 0u64;
    for shift in (0..64).step_by(7) {
        let Some(&b) = buf.get(*pos) else {
            return Err(VarintError::Truncated(*pos));
        };
        *pos += 1;
        let part = u64::from(b & 0x7f);
        if shift == 63 && part > 1 {
            return Err(VarintError::Overflow);
        }
        v |= part << shift;
        if b & 0x80 == 0 {
            return Ok(v);
        }
    }
    Err(VarintError::TooLong)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn varints_round_trip_and_refuse_what_no_writer_makes() {
        let mut rng = testkit::Rng::new(0x2545_f491_4f6c_dd1d);
        let mut vals = vec![0, 1, 127, 128, 16383, 16384, u64::MAX - 1, u64::MAX];
        vals.extend((0..1000).map(|_| rng.next_u64() >> rng.below(64)));
        let mut buf = Vec::new();
        for &v in &vals {
            let at = buf.len();
            put_varint(&mut buf, v);
            assert_eq!(buf.len() - at, varint_len(v), "{v}");
        }
        let mut pos = 0;
        for &v in &vals {
            assert_eq!(read_varint(&buf, &mut pos), Ok(v));
        }
        assert_eq!(pos, buf.len());
        assert_eq!(read_varint(&[0x80], &mut 0), Err(VarintError::Truncated(1)));
        let over = [0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x02];
        assert_eq!(read_varint(&over, &mut 0), Err(VarintError::Overflow));
        assert_eq!(read_varint(&[0x80; 11], &mut 0), Err(VarintError::TooLong));
        for n in [0i64, -1, 1, i64::MIN, i64::MAX, -12345] {
            assert_eq!(unzigzag(zigzag(n)), n);
        }
        assert_eq!((width(0), width(1), width(u64::MAX)), (0, 1, 64));
    }

    #[test]
    fn zigzag_maps_small_signed_to_small_unsigned() {
        assert_eq!(zigzag(0), 0);
        assert_eq!(zigzag(-1), 1);
        assert_eq!(zigzag(1), 2);
        for n in [i64::MIN, -5, 5, i64::MAX] {
            assert_eq!(unzigzag(zigzag(n)), n);
        }
    }

    #[test]
    fn lsb_fields_come_back_in_order() {
        let mut rng = testkit::Rng::new(7);
        let fields: Vec<(u64, u8)> = (0..500)
            .map(|_| {
                let w = rng.below(65) as u8;
                let v = if w == 64 {
                    rng.next_u64()
                } else {
                    rng.next_u64() & ((1u64 << w) - 1)
                };
                (v, w)
            })
            .collect();
        let mut out = Vec::new();
        let mut w = lsb::Writer::new(&mut out);
        for &(v, n) in &fields {
            w.put(v, n);
        }
        w.finish();
        let mut r = lsb::Reader::new(&out);
        for &(v, n) in &fields {
            assert_eq!(r.get(n), v);
        }
    }
}
