//! Archive rows as bytes: a sequence of values in blocks (literal, repeated, short decimals).
//!
//! Part of the RRD image ([`crate::rrdbin`]) and so of checkpoints and create records. Every
//! value comes back bit for bit (NaN payloads, signed zeros): repeats compare bit patterns,
//! and a decimal block holds only values that are exactly `m / 10^scale` in IEEE double,
//! the division the reader performs.

use crate::bytes::{unzigzag, zigzag, ByteReader, ByteWriter, DecodeError};

/// Shortest run of equal values worth a repeat block.
const MIN_RUN: usize = 3;
/// Shortest run of short decimals worth a decimal block.
const MIN_DECIMALS: usize = 4;
/// Most fraction digits a decimal block may have.
const MAX_SCALE: u8 = 6;
const POW10: [f64; MAX_SCALE as usize + 1] = [1.0, 10.0, 100.0, 1e3, 1e4, 1e5, 1e6];

const BLOCK_LITERAL: u64 = 0;
const BLOCK_REPEAT: u64 = 1;
const BLOCK_DECIMAL: u64 = 2;

/// `m` such that `m as f64 / 10^scale` is exactly `v` (bit for bit), if there is one with
/// `|m| < 2^53`. The decoder computes the same IEEE division, so the value comes back exact.
fn as_decimal(v: f64, scale: u8) -> Option<i64> {
    let p = POW10[scale as usize];
    let x = (v * p).round();
    if !x.is_finite() || x.abs() >= 9.0e15 {
        return None;
    }
    let m = x as i64;
    ((m as f64 / p).to_bits() == v.to_bits()).then_some(m)
}

/// The smallest scale at which `v` is a short decimal.
fn min_scale(v: f64) -> Option<u8> {
    (0..=MAX_SCALE).find(|&s| as_decimal(v, s).is_some())
}

/// Values as blocks, each a varint header `n << 2 | kind` (n >= 1):
/// kind 0, `n` literal f64; kind 1, one f64 repeated `n` times; kind 2, a scale byte then
/// `n` varints `zz(m_i - m_(i-1))` (`m_(-1) = 0`), value `i` being `m_i as f64 / 10^scale`.
/// Unknown rows of fresh archives cost a few bytes; rows that are short decimals (a 2-decimal
/// gauge's PDPs, MAX and LAST rows) one or two bytes each.
pub fn encode_runs(w: &mut ByteWriter, vals: &[f64]) {
    let run_at = |i: usize| {
        let b = vals[i].to_bits();
        vals[i..].iter().take_while(|v| v.to_bits() == b).count()
    };
    let flush = |w: &mut ByteWriter, from: usize, to: usize| {
        if from < to {
            w.varint((((to - from) as u64) << 2) | BLOCK_LITERAL);
            vals[from..to].iter().for_each(|&v| w.f64(v));
        }
    };
    let mut i = 0;
    let mut lit_start = 0;
    while i < vals.len() {
        let run = run_at(i);
        if run >= MIN_RUN {
            flush(w, lit_start, i);
            w.varint(((run as u64) << 2) | BLOCK_REPEAT);
            w.f64(vals[i]);
            i += run;
            lit_start = i;
            continue;
        }
        if let Some(scale) = min_scale(vals[i]) {
            let ms: Vec<i64> = vals[i..]
                .iter()
                .map_while(|&v| as_decimal(v, scale))
                .collect();
            if ms.len() >= MIN_DECIMALS {
                flush(w, lit_start, i);
                w.varint(((ms.len() as u64) << 2) | BLOCK_DECIMAL);
                w.u8(scale);
                let mut prev = 0i64;
                for &m in &ms {
                    w.varint(zigzag(m.wrapping_sub(prev)));
                    prev = m;
                }
                i += ms.len();
                lit_start = i;
                continue;
            }
        }
        i += 1;
    }
    flush(w, lit_start, vals.len());
}

/// Most values one archive may hold (16 GiB of rows): a bound on allocations.
pub const MAX_VALUES: u128 = 1 << 31;

pub fn decode_runs(r: &mut ByteReader, n: usize) -> Result<Vec<f64>, DecodeError> {
    let mut out = Vec::with_capacity(n.min(r.remaining()));
    while out.len() < n {
        let h = r.varint()?;
        let len = (h >> 2) as usize;
        if len == 0 || len > n - out.len() {
            return Err(r.err("bad run length in archive rows"));
        }
        match h & 3 {
            BLOCK_LITERAL => {
                if len > r.remaining() / 8 {
                    return Err(r.err("archive rows truncated"));
                }
                for _ in 0..len {
                    out.push(r.f64()?);
                }
            }
            BLOCK_REPEAT => {
                let v = r.f64()?;
                out.resize(out.len() + len, v);
            }
            BLOCK_DECIMAL => {
                let scale = r.u8()?;
                let Some(&p) = POW10.get(scale as usize) else {
                    return Err(r.err("bad decimal scale in archive rows"));
                };
                if len > r.remaining() {
                    return Err(r.err("archive rows truncated"));
                }
                let mut m = 0i64;
                for _ in 0..len {
                    m = m.wrapping_add(unzigzag(r.varint()?));
                    out.push(m as f64 / p);
                }
            }
            _ => return Err(r.err("unknown block kind in archive rows")),
        }
    }
    Ok(out)
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
