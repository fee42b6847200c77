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

/// An archive's rows, written as [`encode_runs`] writes its values row after row (a fresh
/// archive's, all one value, without making them: a carbon client's first points create
/// thousands of series of 70,000 rows).
pub fn encode_rows(w: &mut ByteWriter, rows: &Rows) {
    match rows.uniform() {
        Some(v) => rrd::rows::encode_uniform(rows.len(), v, &mut w.buf),
        None => encode_runs(w, &rows.to_vec()),
    }
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
    fn a_fresh_archive_is_written_as_its_values_would_be() {
        for (rows, ds, v) in [
            (70_000, 1, rrd::num::DNAN),
            (3, 1, 0.0),
            (1, 2, -0.0),
            (2, 1, 1.5),
            (1, 1, f64::NAN),
            (0, 1, 1.0),
        ] {
            let mut r = Rows::filled(rows, ds, v);
            assert_eq!(r.uniform().map(f64::to_bits), Some(v.to_bits()));
            let (mut a, mut b) = (ByteWriter::new(), ByteWriter::new());
            encode_rows(&mut a, &r);
            encode_runs(&mut b, &r.to_vec());
            assert_eq!(a.buf, b.buf, "{rows} rows of {ds}, {v}");
            if rows > 1 {
                // A value of its own: the rows are written value by value.
                r.set(1, 7.25);
                assert_eq!(r.uniform(), None);
                let (mut a, mut b) = (ByteWriter::new(), ByteWriter::new());
                encode_rows(&mut a, &r);
                encode_runs(&mut b, &r.to_vec());
                assert_eq!(a.buf, b.buf);
            }
        }
    }

    /// The encoding itself is tested in `rrd::rows`; here, that it sits in the store's byte
    /// streams: the reader ends right after the values, and errors carry its position.
    #[test]
    fn runs_go_through_the_stores_reader_and_writer() {
        let vals = [
            1.5,
            1.5,
            1.5,
            1.5,
            0.25,
            -0.0,
            f64::NAN,
            1e300,
            2.0,
            2.5,
            3.5,
            4.5,
        ];
        let mut w = ByteWriter::new();
        w.u8(0x11);
        encode_runs(&mut w, &vals);
        w.u8(0xAB);
        let mut r = ByteReader::new(&w.buf);
        assert_eq!(r.u8().unwrap(), 0x11);
        let back = decode_runs(&mut r, vals.len()).unwrap();
        let bits = |v: &[f64]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
        assert_eq!(bits(&back), bits(&vals));
        assert_eq!(r.u8().unwrap(), 0xAB);
        r.finish().unwrap();
        let mut r = ByteReader::new(&w.buf[..6]);
        r.u8().unwrap();
        let e = decode_runs(&mut r, vals.len()).unwrap_err();
        assert!(e.to_string().contains("truncated"), "{e}");
    }
}
