//! Archive rows as bytes: a sequence of values in blocks (literal, repeated, short decimals).
//!
//! Part of the RRD image ([`crate::rrdbin`]) and so of checkpoints and create records. Every
//! value comes back bit for bit (NaN payloads, signed zeros): repeats compare bit patterns,
//! and a decimal block holds only values that are exactly `m / 10^scale` in IEEE double,
//! the division the reader performs. The encoding itself is [`rrd::rows::encode_values`],
//! which the engine also uses to hold archives packed in memory; this module puts it on the
//! store's reader and writer.

use crate::bytes::{ByteReader, ByteWriter, DecodeError};
use rrd::Rows;

/// `vals` as blocks, each a varint header `n << 2 | kind` (n >= 1): kind 0, `n` literal f64;
/// kind 1, one f64 repeated `n` times; kind 2, a scale byte then `n` varints
/// `zz(m_i - m_(i-1))` (`m_(-1) = 0`), value `i` being `m_i as f64 / 10^scale`.
pub fn encode_runs(w: &mut ByteWriter, vals: &[f64]) {
    rrd::rows::encode_values(vals, &mut w.buf);
}

/// An archive's rows, written as [`encode_runs`] writes its values row after row.
pub fn encode_rows(w: &mut ByteWriter, rows: &Rows) {
    encode_runs(w, &rows.to_vec());
}

/// Most values one archive may hold (16 GiB of rows): a bound on allocations.
pub const MAX_VALUES: u128 = 1 << 31;

pub fn decode_runs(r: &mut ByteReader, n: usize) -> Result<Vec<f64>, DecodeError> {
    let mut out = Vec::new();
    match rrd::rows::decode_values(r.rest(), n, &mut out) {
        Ok(used) => {
            r.take(used)?;
            Ok(out)
        }
        Err(e) => Err(DecodeError::new(r.pos() + e.offset, e.what)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn random_values_roundtrip_bit_for_bit() {
        let mut x: u64 = 0x2545_F491_4F6C_DD1D;
        let mut next = move || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        let vals: Vec<f64> = (0..5000)
            .map(|_| match next() % 5 {
                0 => f64::from_bits(next()),
                1 => (next() % 100_000) as f64 / 100.0,
                2 => -((next() % 1000) as f64) / 8.0,
                3 => (next() % 1_000_000) as f64 / 1e6,
                _ => f64::NAN,
            })
            .collect();
        let mut w = ByteWriter::new();
        encode_runs(&mut w, &vals);
        let back = decode_runs(&mut ByteReader::new(&w.buf), vals.len()).unwrap();
        let same = back
            .iter()
            .zip(&vals)
            .all(|(a, b)| a.to_bits() == b.to_bits());
        assert!(same && back.len() == vals.len());
    }
}
