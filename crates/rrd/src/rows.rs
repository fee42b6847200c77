//! Archive rows in memory: a ring of rows kept in chunks, most of them stored in the store's
//! segment files and read from there when needed.
//!
//! An `.rrd` file spends 8 bytes per row and DS however little the rows say. Held that way
//! in memory, 26,000 RRDs with gmetad's archives take 16 GB, and every update lands on cold
//! memory. Here an archive is cut into chunks of whole rows (about [`CHUNK_VALUES`] values
//! each). A chunk is one of: a single repeated bit pattern (a fresh archive's unknowns: no
//! memory beyond its table entry), stored in a segment file (4 bytes of a table shared by the
//! archives whose chunks sit in the same segments, [`SegPool`]: the segment's number;
//! the bytes are read through the page cache via the store's [`ChunkSource`] when a read
//! needs them), or its values packed by [`encode_values`] on the heap (sealed since the last
//! checkpoint stored chunks; docs/FORMAT.md, "Archive rows"). Rows are written one after
//! another around the ring, so writes go to the open chunk, which holds only the values
//! written into it since it was opened; moving on packs it. Every value comes back bit for
//! bit.
//!
//! The block encoding lives here, not in `codec`, because both the store's bytes and this
//! in-memory form use it; `codec` re-exports it with its reader and writer.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

/// About how many values a chunk holds: whole rows, at least one.
pub const CHUNK_VALUES: usize = 256;

/// Rows per chunk for `ds_cnt` values a row: `CHUNK_VALUES / ds_cnt`, at least 1. Part of
/// the checkpoint format (docs/FORMAT.md, "Chunked archive rows").
pub fn chunk_rows_for(ds_cnt: usize) -> usize {
    (CHUNK_VALUES / ds_cnt.max(1)).max(1)
}

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
const BLOCK_RATIO: u64 = 3;
/// The header byte of an extended block: `0 << 2 | BLOCK_LITERAL`, which no other block has
/// (their `n` is at least 1). A varint `n << 2 | ext` follows.
const EXTENDED: u8 = 0;
/// Extended kind: a packed block (ratios with their residuals bit-packed).
const EXT_PACKED: u64 = 0;
/// A packed block's predictor: none (`m_i` itself is packed) or the previous `m`.
const PRED_NONE: u8 = 0;
const PRED_DELTA: u8 = 1;
/// Widest field of a packed block: the bits of a `u64`.
const MAX_WIDTH: u8 = 64;
/// Widest `zz(u)` of a packed block: `|u| <= MAX_ULPS` takes 7 bits.
const MAX_ULP_WIDTH: u8 = 7;
/// Most values in a block written by [`put_numbered`]: a packed block's values are bounded
/// by this rather than by its bytes (fields of 0 bits take none), and each block of a long
/// run gets the field widths of its own values.
const MAX_PACKED: usize = CHUNK_VALUES;

/// Shortest run of values worth a ratio block.
const MIN_RATIO: usize = 3;
/// Largest distance, in units in the last place, between a value and its ratio `m / d`.
const MAX_ULPS: i64 = 63;
/// Largest `k` of a ratio block's divisor `k * 10^scale` (so that the divisor is exact).
const MAX_K: u64 = 1 << 24;
/// The divisors `k` a ratio block is tried with, before each scale: what RRD rows are
/// divided by (averages of `pdp_cnt` values, rates over steps of seconds, minutes, hours).
const RATIO_KS: [u16; 40] = [
    1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 12, 14, 15, 16, 18, 20, 24, 25, 30, 36, 40, 45, 48, 50, 60, 72,
    80, 90, 96, 100, 120, 144, 180, 240, 288, 300, 360, 600, 900, 3600,
];
/// Values looked ahead to choose among the divisors that fit a block's first value.
const RATIO_LOOKAHEAD: usize = 16;
/// After a failed search for a divisor, values written literally before the next search,
/// doubled after each failure in a row (a chunk of noisy doubles costs a few searches, not
/// one a value: 5 µs for 256 values instead of 35).
const RATIO_BACKOFF: usize = 8;

fn put_varint(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push(v as u8 | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

fn zigzag(n: i64) -> u64 {
    ((n << 1) ^ (n >> 63)) as u64
}

fn unzigzag(u: u64) -> i64 {
    (u >> 1) as i64 ^ -((u & 1) as i64)
}

fn varint_len(v: u64) -> usize {
    (64 - (v | 1).leading_zeros() as usize).div_ceil(7)
}

/// Bits needed for `v`: 0 for 0.
fn width(v: u64) -> u8 {
    (64 - v.leading_zeros()) as u8
}

/// Fields of up to 64 bits appended least significant bit first, the last byte padded with
/// zeros.
struct BitWriter<'a> {
    out: &'a mut Vec<u8>,
    acc: u128,
    n: u32,
}

impl<'a> BitWriter<'a> {
    fn new(out: &'a mut Vec<u8>) -> Self {
        BitWriter { out, acc: 0, n: 0 }
    }

    /// The low `w` bits of `v` (`w <= 64`).
    fn put(&mut self, v: u64, w: u8) {
        let v = if w >= 64 { v } else { v & ((1u64 << w) - 1) };
        self.acc |= u128::from(v) << self.n;
        self.n += u32::from(w);
        while self.n >= 8 {
            self.out.push(self.acc as u8);
            self.acc >>= 8;
            self.n -= 8;
        }
    }

    fn finish(self) {
        if self.n > 0 {
            self.out.push(self.acc as u8);
        }
    }
}

/// Fields read as [`BitWriter`] wrote them, from bytes the caller checked are there.
struct BitReader<'a> {
    buf: &'a [u8],
    pos: usize,
    acc: u128,
    n: u32,
}

impl<'a> BitReader<'a> {
    fn new(buf: &'a [u8]) -> Self {
        BitReader {
            buf,
            pos: 0,
            acc: 0,
            n: 0,
        }
    }

    /// The next `w` bits (`w <= 64`); zeros past the end of the bytes.
    fn get(&mut self, w: u8) -> u64 {
        let w32 = u32::from(w);
        while self.n < w32 {
            let b = self.buf.get(self.pos).copied().unwrap_or(0);
            self.pos += 1;
            self.acc |= u128::from(b) << self.n;
            self.n += 8;
        }
        let v = if w >= 64 {
            self.acc as u64
        } else {
            (self.acc as u64) & ((1u64 << w) - 1)
        };
        self.acc >>= w32;
        self.n -= w32;
        v
    }
}

/// How a run of numbered values (`m_i / d`, moved by `u_i` units in the last place) is
/// written: the block that takes the fewest bytes of those that can hold it.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Form {
    /// Kind 2: varint deltas of `m` (every `u_i` is 0 and the divisor is `10^scale`).
    Decimal,
    /// Kind 3: varint deltas of `m` and varint `u`.
    Ratio,
    /// Extended, packed, with its predictor.
    Packed(u8),
}

/// Residual `i` of a packed block of predictor `pred`: `m_i`, or `m_i - m_(i-1)` (i >= 1).
fn residual(ms: &[i64], i: usize, pred: u8) -> i64 {
    if pred == PRED_DELTA {
        ms[i].wrapping_sub(ms[i - 1])
    } else {
        ms[i]
    }
}

/// The residuals a packed block of predictor `pred` packs: every `m_i` (none) or, after the
/// first, `m_i - m_(i-1)` (delta); their least value and the width of the offsets above it.
fn packed_residuals(ms: &[i64], pred: u8) -> (i64, u8) {
    let res = |i: usize| residual(ms, i, pred);
    let from = usize::from(pred == PRED_DELTA);
    if ms.len() <= from {
        return (0, 0);
    }
    let (mut lo, mut hi) = (i64::MAX, i64::MIN);
    for i in from..ms.len() {
        let r = res(i);
        lo = lo.min(r);
        hi = hi.max(r);
    }
    (lo, width(hi.wrapping_sub(lo) as u64))
}

/// The form of fewest bytes for the run `(ms, us)` over divisor `k * 10^scale` (the first
/// of equals in the order decimal, ratio, packed, packed with deltas): [`form_cost`]'s
/// figures, gathered in one pass (a chunk being written packs its values eight at a time).
fn choose_form(k: u64, ms: &[i64], us: &[i64]) -> Form {
    let n = ms.len();
    let (mut deltas, mut ulps, mut wu) = (0usize, 0usize, 0u8);
    let (mut lo, mut hi) = (i64::MAX, i64::MIN);
    let (mut dlo, mut dhi) = (i64::MAX, i64::MIN);
    let mut prev = 0i64;
    for (i, (&m, &u)) in ms.iter().zip(us).enumerate() {
        let d = m.wrapping_sub(prev);
        deltas += varint_len(zigzag(d));
        if i > 0 {
            dlo = dlo.min(d);
            dhi = dhi.max(d);
        }
        lo = lo.min(m);
        hi = hi.max(m);
        let zu = zigzag(u);
        ulps += varint_len(zu);
        wu = wu.max(width(zu));
        prev = m;
    }
    let head = varint_len((n as u64) << 2);
    let exact = k == 1 && wu == 0;
    let packed = |base: i64, w: u8, first: usize, fields: usize| {
        1 + head
            + varint_len(k)
            + 4
            + first
            + varint_len(zigzag(base))
            + (fields * usize::from(w) + n * usize::from(wu)).div_ceil(8)
    };
    // A decimal block is a ratio block without the ulps and `k`: never larger.
    let mut best = if exact {
        (head + 1 + deltas, Form::Decimal)
    } else {
        (head + varint_len(k) + 1 + deltas + ulps, Form::Ratio)
    };
    let none = packed(lo, width(hi.wrapping_sub(lo) as u64), 0, n);
    if none < best.0 {
        best = (none, Form::Packed(PRED_NONE));
    }
    let (dlo, dw) = if n > 1 {
        (dlo, width(dhi.wrapping_sub(dlo) as u64))
    } else {
        (0, 0)
    };
    let delta = packed(dlo, dw, varint_len(zigzag(ms[0])), n - 1);
    if delta < best.0 {
        best = (delta, Form::Packed(PRED_DELTA));
    }
    best.1
}

/// Bytes of the run `(ms, us)` over divisor `k * 10^scale` written in `form`.
#[cfg(test)]
fn form_cost(form: Form, k: u64, ms: &[i64], us: &[i64]) -> usize {
    let n = ms.len();
    let deltas = || {
        let mut prev = 0i64;
        ms.iter()
            .map(move |&m| {
                let d = varint_len(zigzag(m.wrapping_sub(prev)));
                prev = m;
                d
            })
            .sum::<usize>()
    };
    match form {
        Form::Decimal => varint_len((n as u64) << 2) + 1 + deltas(),
        Form::Ratio => {
            varint_len((n as u64) << 2)
                + varint_len(k)
                + 1
                + deltas()
                + us.iter().map(|&u| varint_len(zigzag(u))).sum::<usize>()
        }
        Form::Packed(pred) => {
            let (base, w) = packed_residuals(ms, pred);
            let wu = us.iter().map(|&u| width(zigzag(u))).max().unwrap_or(0);
            let first = if pred == PRED_DELTA {
                varint_len(zigzag(ms[0]))
            } else {
                0
            };
            let fields = n - usize::from(pred == PRED_DELTA);
            1 + varint_len((n as u64) << 2)
                + varint_len(k)
                + 4
                + first
                + varint_len(zigzag(base))
                + (fields * usize::from(w) + n * usize::from(wu)).div_ceil(8)
        }
    }
}

/// Write the run of values `m_i / (k * 10^scale)` moved by `u_i` units in the last place
/// (`u_i` all 0 and `k` 1 for a decimal run), in blocks of at most [`MAX_PACKED`] values,
/// each in the form of fewest bytes.
fn put_numbered(out: &mut Vec<u8>, k: u64, scale: u8, ms: &[i64], us: &[i64]) {
    for (ms, us) in ms.chunks(MAX_PACKED).zip(us.chunks(MAX_PACKED)) {
        put_numbered_block(out, k, scale, ms, us);
    }
}

fn put_numbered_block(out: &mut Vec<u8>, k: u64, scale: u8, ms: &[i64], us: &[i64]) {
    let n = ms.len();
    let form = choose_form(k, ms, us);
    match form {
        Form::Decimal | Form::Ratio => {
            let decimal = form == Form::Decimal;
            put_varint(
                out,
                ((n as u64) << 2) | if decimal { BLOCK_DECIMAL } else { BLOCK_RATIO },
            );
            if !decimal {
                put_varint(out, k);
            }
            out.push(scale);
            let mut prev = 0i64;
            for (&m, &u) in ms.iter().zip(us) {
                put_varint(out, zigzag(m.wrapping_sub(prev)));
                if !decimal {
                    put_varint(out, zigzag(u));
                }
                prev = m;
            }
        }
        Form::Packed(pred) => {
            let (base, w) = packed_residuals(ms, pred);
            let wu = us.iter().map(|&u| width(zigzag(u))).max().unwrap_or(0);
            out.push(EXTENDED);
            put_varint(out, ((n as u64) << 2) | EXT_PACKED);
            put_varint(out, k);
            out.push(scale);
            out.push(pred);
            if pred == PRED_DELTA {
                put_varint(out, zigzag(ms[0]));
            }
            put_varint(out, zigzag(base));
            out.push(w);
            out.push(wu);
            let mut bits = BitWriter::new(out);
            let from = usize::from(pred == PRED_DELTA);
            for i in from..n {
                bits.put(residual(ms, i, pred).wrapping_sub(base) as u64, w);
            }
            for &u in us {
                bits.put(zigzag(u), wu);
            }
            bits.finish();
        }
    }
}

/// `m` such that `m as f64 / 10^scale` is exactly `v` (bit for bit), if there is one with
/// `|m| < 2^53`. The decoder computes the same IEEE division, so the value comes back exact.
fn as_decimal(v: f64, scale: u8) -> Option<i64> {
    let p = POW10[scale as usize];
    let x = v * p;
    let m = round_small(x)?;
    if !near(x, m) {
        return None;
    }
    ((m as f64 / p).to_bits() == v.to_bits()).then_some(m)
}

/// Whether `x = v * d` is close enough to the integer `m` nearest it for `m / d` to be `v`
/// within [`MAX_ULPS`] units in the last place: a test without a division that turns away
/// most of the divisors a block's first value is tried with (the divisions were a third of
/// the encoders' time), and never one that [`as_ratio`] or [`as_decimal`] accepts (they
/// check exactly after it; the test `the_division_free_test_never_turns_away_a_fit` holds
/// it to that). If `m / d` rounds to `q` and `v` is within 63 units in the last place of
/// `q`, `|v - m / d| <= 64 * 2^-52 * |m / d|`, so `|v * d - m| <= 1.43e-14 * |m|` with
/// the product's rounding: 4e-14 leaves a margin of almost three. `m == 0` is left to the
/// exact check (`v` a subnormal within 63 units of zero).
#[inline]
fn near(x: f64, m: i64) -> bool {
    m == 0 || (x - m as f64).abs() <= 4e-14 * (m as f64).abs()
}

/// `x.round()` (halves away from zero) as an integer, if its magnitude is below 9.0e15 (so
/// below 2^53: exact in a double); `None` for larger values, infinities and NaN. Inline
/// arithmetic instead of libm's `round`, a call on the baseline x86-64 target: the encoders
/// try up to a few hundred divisors for a block's first value, and the call was a tenth of
/// their time.
#[inline]
fn round_small(x: f64) -> Option<i64> {
    // NaN fails the comparison too.
    if x.is_nan() || x.abs() >= 9.1e15 {
        return None;
    }
    // Both exact: |x| < 2^53.
    let t = x as i64;
    let f = x - t as f64;
    let m = if f >= 0.5 {
        t + 1
    } else if f <= -0.5 {
        t - 1
    } else {
        t
    };
    (m.unsigned_abs() < 9_000_000_000_000_000).then_some(m)
}

/// The smallest scale at which `v` is a short decimal.
fn min_scale(v: f64) -> Option<u8> {
    (0..=MAX_SCALE).find(|&s| as_decimal(v, s).is_some())
}

/// A ratio block's divisor: `k * 10^scale`, exact in a double.
fn ratio_divisor(k: u64, scale: u8) -> f64 {
    k as f64 * POW10[scale as usize]
}

/// The value `m / d` moved by `u` units in the last place: what a ratio block's entry
/// `(m, u)` stands for.
fn ratio_value(m: i64, d: f64, u: i64) -> f64 {
    f64::from_bits((m as f64 / d).to_bits().wrapping_add(u as u64))
}

/// `(m, u)` with `ratio_value(m, d, u)` bit for bit `v`, `|m| < 2^53`, `|u| <= MAX_ULPS`:
/// `v` is within a few units in the last place of the ratio `m / d` (a sum of short
/// decimals divided, a rate over whole seconds: what rrdtool's consolidation makes).
fn as_ratio(v: f64, d: f64) -> Option<(i64, i64)> {
    // `v * d` is finite only if `v` is (`d` >= 1).
    let x = v * d;
    let m = round_small(x)?;
    if !near(x, m) {
        return None;
    }
    // The reader's division gives the same `q`, and `q + u` is `v`'s bit pattern: exact by
    // construction (wrapping arithmetic on the bits), whatever `u` is; only its size is
    // checked.
    let q = (m as f64 / d).to_bits();
    let u = v.to_bits().wrapping_sub(q) as i64;
    (u.unsigned_abs() <= MAX_ULPS as u64).then_some((m, u))
}

/// How many values from the start of `vals` are ratios over `d`.
fn ratio_run(vals: &[f64], d: f64) -> usize {
    vals.iter()
        .take_while(|&&v| as_ratio(v, d).is_some())
        .count()
}

/// Every divisor `(k, scale, k * 10^scale)` of [`RATIO_KS`] and the scales, smallest first.
fn ratio_divisors() -> &'static [(u64, u8, f64)] {
    static ALL: std::sync::OnceLock<Vec<(u64, u8, f64)>> = std::sync::OnceLock::new();
    ALL.get_or_init(|| {
        let mut v: Vec<(u64, u8, f64)> = (0..=MAX_SCALE)
            .flat_map(|s| {
                RATIO_KS
                    .iter()
                    .map(move |&k| (u64::from(k), s, ratio_divisor(u64::from(k), s)))
            })
            .collect();
        // Smallest first; of equal divisors (2 * 10 and 20 * 1), the one of fewer digits of
        // scale.
        v.sort_by(|a, b| a.2.total_cmp(&b.2).then(a.1.cmp(&b.1)));
        v.dedup_by(|a, b| a.2 == b.2);
        v
    })
}

/// The divisor `(k, scale)` that makes the longest ratio run at the start of `vals` (looking
/// [`RATIO_LOOKAHEAD`] values ahead; the smallest divisor among equals), and that run's
/// length (then extended to its end).
fn best_ratio(vals: &[f64]) -> Option<(u64, u8, usize)> {
    let ahead = &vals[..vals.len().min(RATIO_LOOKAHEAD)];
    let mut best: Option<(u64, u8, usize, f64)> = None;
    for &(k, scale, d) in ratio_divisors() {
        if as_ratio(vals[0], d).is_none() {
            continue;
        }
        let n = ratio_run(ahead, d);
        if best.is_none_or(|(_, _, bn, _)| n > bn) {
            best = Some((k, scale, n, d));
            if n == ahead.len() {
                // No divisor does better, and this is the smallest that does as well.
                break;
            }
        }
    }
    let (k, scale, n, d) = best?;
    let n = if n == ahead.len() {
        n + ratio_run(&vals[n..], d)
    } else {
        n
    };
    Some((k, scale, n))
}

/// Append `vals` as blocks, each a varint header `n << 2 | kind` (n >= 1): kind 0, `n`
/// literal f64 (little-endian); kind 1, one f64 repeated `n` times; kind 2, a scale byte then
/// `n` varints `zz(m_i - m_(i-1))` (`m_(-1) = 0`), value `i` being `m_i as f64 / 10^scale`;
/// kind 3, a varint `k` and a scale byte, then `n` pairs of varints `zz(m_i - m_(i-1))`,
/// `zz(u_i)`, value `i` being `m_i as f64 / (k * 10^scale)` moved by `u_i` units in the last
/// place (its bit pattern plus `u_i`); or an extended block, a `0` byte then a varint
/// `n << 2 | 0` (n <= [`MAX_PACKED`]), the packed block: the same `m_i / (k * 10^scale)` and
/// `u_i`, with `k`, the scale, a predictor (0: none; 1: the previous `m`, and then
/// `zz(m_0)`), `zz(base)` and two widths `w` and `wu` (bytes), then bit-packed least
/// significant bit first: the residuals (`m_i`, or `m_i - m_(i-1)` after the first) less
/// `base` in `w` bits each, then every `zz(u_i)` in `wu` bits.
/// A run of decimals or ratios is written in whichever of its block forms takes the fewest
/// bytes. Unknown rows of fresh archives cost a few bytes; rows that are short decimals (a
/// 2-decimal gauge's PDPs, MAX and LAST rows) about a byte each; averages of those and rates
/// over whole seconds (within a few units in the last place of a ratio of a small divisor)
/// the bits of their spread: a counter's rate of 16 bits two bytes, where varints of its
/// deltas and units in the last place took four.
pub fn encode_values(vals: &[f64], out: &mut Vec<u8>) {
    thread_local! {
        /// The runs' `m` and `u` values: kept between calls, since an open chunk packs its
        /// values eight at a time (two allocations a group were a tenth of replay).
        static SCRATCH: std::cell::RefCell<(Vec<i64>, Vec<i64>)> = const {
            std::cell::RefCell::new((Vec::new(), Vec::new()))
        };
    }
    SCRATCH.with(|cell| match cell.try_borrow_mut() {
        Ok(mut scratch) => {
            let (ms, us) = &mut *scratch;
            encode_values_with(vals, out, ms, us);
            if ms.capacity() > MAX_PACKED {
                // A long run: its room is given back, not kept by the thread.
                *ms = Vec::new();
                *us = Vec::new();
            }
        }
        Err(_) => encode_values_with(vals, out, &mut Vec::new(), &mut Vec::new()),
    })
}

fn encode_values_with(vals: &[f64], out: &mut Vec<u8>, ms: &mut Vec<i64>, us: &mut Vec<i64>) {
    let run_at = |i: usize| {
        let b = vals[i].to_bits();
        vals[i..].iter().take_while(|v| v.to_bits() == b).count()
    };
    let flush = |out: &mut Vec<u8>, from: usize, to: usize| {
        if from < to {
            put_varint(out, (((to - from) as u64) << 2) | BLOCK_LITERAL);
            vals[from..to]
                .iter()
                .for_each(|v| out.extend_from_slice(&v.to_le_bytes()));
        }
    };
    let mut i = 0;
    let mut lit_start = 0;
    // The next value at which a ratio block is looked for, and the wait after a failure.
    let mut ratio_from = 0;
    let mut backoff = RATIO_BACKOFF;
    while i < vals.len() {
        let run = run_at(i);
        if run >= MIN_RUN {
            flush(out, lit_start, i);
            put_varint(out, ((run as u64) << 2) | BLOCK_REPEAT);
            out.extend_from_slice(&vals[i].to_le_bytes());
            i += run;
            lit_start = i;
            continue;
        }
        if let Some(scale) = min_scale(vals[i]) {
            ms.clear();
            ms.extend(vals[i..].iter().map_while(|&v| as_decimal(v, scale)));
            if ms.len() >= MIN_DECIMALS {
                flush(out, lit_start, i);
                us.clear();
                us.resize(ms.len(), 0);
                put_numbered(out, 1, scale, ms, us);
                i += ms.len();
                lit_start = i;
                continue;
            }
        }
        if i >= ratio_from {
            match best_ratio(&vals[i..]) {
                Some((k, scale, n)) if n >= MIN_RATIO => {
                    // Stop before a run worth a repeat block.
                    let n = (1..n)
                        .find(|&j| run_at(i + j) >= MIN_RUN)
                        .unwrap_or(n)
                        .max(MIN_RATIO.min(n));
                    flush(out, lit_start, i);
                    let d = ratio_divisor(k, scale);
                    ms.clear();
                    us.clear();
                    for &v in &vals[i..i + n] {
                        let (m, u) = as_ratio(v, d).expect("checked by best_ratio");
                        ms.push(m);
                        us.push(u);
                    }
                    put_numbered(out, k, scale, ms, us);
                    i += n;
                    lit_start = i;
                    backoff = RATIO_BACKOFF;
                    continue;
                }
                _ => {
                    ratio_from = i + backoff;
                    backoff = backoff.saturating_mul(2);
                }
            }
        }
        i += 1;
    }
    flush(out, lit_start, vals.len());
}

/// Why [`decode_values`] stopped: the byte offset in its input and what was wrong.
#[derive(Debug, Clone, PartialEq)]
pub struct PackError {
    pub offset: usize,
    pub what: &'static str,
}

/// Read `n` values written by [`encode_values`] from the start of `buf`, appending them to
/// `out`. Returns how many bytes they took.
/// The varint at `*pos` of `buf`, moving `*pos` past it.
fn read_varint(buf: &[u8], pos: &mut usize) -> Result<u64, PackError> {
    let start = *pos;
    let mut v = 0u64;
    for shift in (0..64).step_by(7) {
        let Some(&b) = buf.get(*pos) else {
            return Err(PackError {
                offset: start,
                what: "truncated varint",
            });
        };
        *pos += 1;
        v |= u64::from(b & 0x7f) << shift;
        if b & 0x80 == 0 {
            return Ok(v);
        }
    }
    Err(PackError {
        offset: start,
        what: "varint too long",
    })
}

pub fn decode_values(buf: &[u8], n: usize, out: &mut Vec<f64>) -> Result<usize, PackError> {
    let mut pos = 0usize;
    let err = |offset: usize, what: &'static str| PackError { offset, what };
    let varint = |pos: &mut usize| read_varint(buf, pos);
    let f64_at = |pos: &mut usize| -> Result<f64, PackError> {
        let b = buf
            .get(*pos..*pos + 8)
            .ok_or(err(*pos, "archive rows truncated"))?;
        *pos += 8;
        let mut a = [0u8; 8];
        a.copy_from_slice(b);
        Ok(f64::from_le_bytes(a))
    };
    let goal = out.len() + n;
    out.reserve(n.min(buf.len()));
    while out.len() < goal {
        let at = pos;
        let (len, kind) = block_head(buf, &mut pos)?;
        if len == 0 || len > goal - out.len() {
            return Err(err(at, "bad run length in archive rows"));
        }
        match kind {
            BLOCK_LITERAL => {
                if len > (buf.len() - pos) / 8 {
                    return Err(err(pos, "archive rows truncated"));
                }
                for _ in 0..len {
                    out.push(f64_at(&mut pos)?);
                }
            }
            BLOCK_REPEAT => {
                let v = f64_at(&mut pos)?;
                out.resize(out.len() + len, v);
            }
            BLOCK_DECIMAL => {
                let Some(&scale) = buf.get(pos) else {
                    return Err(err(pos, "archive rows truncated"));
                };
                pos += 1;
                let Some(&p) = POW10.get(scale as usize) else {
                    return Err(err(pos - 1, "bad decimal scale in archive rows"));
                };
                if len > buf.len() - pos {
                    return Err(err(pos, "archive rows truncated"));
                }
                let mut m = 0i64;
                for _ in 0..len {
                    m = m.wrapping_add(unzigzag(varint(&mut pos)?));
                    out.push(m as f64 / p);
                }
            }
            BLOCK_RATIO => {
                let k = varint(&mut pos)?;
                if k == 0 || k > MAX_K {
                    return Err(err(at, "bad divisor in archive rows"));
                }
                let Some(&scale) = buf.get(pos) else {
                    return Err(err(pos, "archive rows truncated"));
                };
                if scale > MAX_SCALE {
                    return Err(err(pos, "bad ratio scale in archive rows"));
                }
                pos += 1;
                if len > (buf.len() - pos) / 2 {
                    return Err(err(pos, "archive rows truncated"));
                }
                let d = ratio_divisor(k, scale);
                let mut m = 0i64;
                for _ in 0..len {
                    m = m.wrapping_add(unzigzag(varint(&mut pos)?));
                    let u = unzigzag(varint(&mut pos)?);
                    out.push(ratio_value(m, d, u));
                }
            }
            BLOCK_PACKED => {
                pos += decode_packed(&buf[pos..], len, out).map_err(|e| PackError {
                    offset: pos + e.offset,
                    what: e.what,
                })?
            }
            _ => return Err(err(at, "unknown block kind in archive rows")),
        }
    }
    Ok(pos)
}

/// A block's kind as [`block_head`] gives it for a packed block.
const BLOCK_PACKED: u64 = 4 + EXT_PACKED;

/// A block's header at `*pos`: its number of values and its kind (0 to 3, or 4 plus the
/// extended kind), `*pos` moved past it.
fn block_head(buf: &[u8], pos: &mut usize) -> Result<(usize, u64), PackError> {
    let h = read_varint(buf, pos)?;
    let (h, ext) = if h == u64::from(EXTENDED) {
        (read_varint(buf, pos)?, 4)
    } else {
        (h, 0)
    };
    Ok((usize::try_from(h >> 2).unwrap_or(usize::MAX), ext + (h & 3)))
}

/// Read a packed block's `n` values (after its header) from the start of `buf` into `out`;
/// the bytes it took.
fn decode_packed(buf: &[u8], n: usize, out: &mut Vec<f64>) -> Result<usize, PackError> {
    let err = |offset: usize, what: &'static str| PackError { offset, what };
    if n > MAX_PACKED {
        return Err(err(0, "packed block too long in archive rows"));
    }
    let mut pos = 0usize;
    let k = read_varint(buf, &mut pos)?;
    if k == 0 || k > MAX_K {
        return Err(err(0, "bad divisor in archive rows"));
    }
    let head = |pos: &mut usize| -> Result<u8, PackError> {
        let b = *buf.get(*pos).ok_or(err(*pos, "archive rows truncated"))?;
        *pos += 1;
        Ok(b)
    };
    let scale = head(&mut pos)?;
    if scale > MAX_SCALE {
        return Err(err(pos - 1, "bad ratio scale in archive rows"));
    }
    let pred = head(&mut pos)?;
    if pred > PRED_DELTA {
        return Err(err(pos - 1, "bad predictor in archive rows"));
    }
    let first = if pred == PRED_DELTA {
        unzigzag(read_varint(buf, &mut pos)?)
    } else {
        0
    };
    let base = unzigzag(read_varint(buf, &mut pos)?);
    let w = head(&mut pos)?;
    let wu = head(&mut pos)?;
    if w > MAX_WIDTH || wu > MAX_ULP_WIDTH {
        return Err(err(pos - 1, "bad field width in archive rows"));
    }
    let fields = n - usize::from(pred == PRED_DELTA);
    let bits = (fields as u128) * u128::from(w) + (n as u128) * u128::from(wu);
    let bytes = bits.div_ceil(8);
    if bytes > (buf.len() - pos) as u128 {
        return Err(err(pos, "archive rows truncated"));
    }
    let bytes = bytes as usize;
    let mut ms = Vec::with_capacity(n);
    let mut r = BitReader::new(&buf[pos..pos + bytes]);
    let mut prev = first;
    if pred == PRED_DELTA {
        ms.push(first);
    }
    for _ in 0..fields {
        let v = base.wrapping_add(r.get(w) as i64);
        let m = if pred == PRED_DELTA {
            prev.wrapping_add(v)
        } else {
            v
        };
        ms.push(m);
        prev = m;
    }
    let d = ratio_divisor(k, scale);
    for m in ms {
        let u = unzigzag(r.get(wu));
        out.push(ratio_value(m, d, u));
    }
    Ok(pos + bytes)
}

/// Bytes that live outside the heap and are shared by many chunks: a segment file mapped
/// into memory by the store, whose pages the kernel keeps in its page cache and reads in
/// when a chunk is read. `rrd` does no I/O; the store hands these over.
pub type SharedBytes = Arc<dyn AsRef<[u8]> + Send + Sync>;

/// Rows of `row_cnt` rows of `ds_cnt` values from [`encode_values`]'s blocks at the start of
/// `buf` (exactly that many values), and the bytes they took. Built a chunk at a time: a
/// value repeated over whole chunks takes no memory beyond the chunk table (the image of a
/// fresh archive of 2^31 unknowns is a few bytes, and so is what it becomes: expanded first,
/// it took 16 GB, found by fuzzing), and no more than one chunk and one block's values are
/// held unpacked (a block's values are bounded by its bytes).
pub fn decode_rows(buf: &[u8], row_cnt: u64, ds_cnt: usize) -> Result<(Rows, usize), PackError> {
    let mut rows = Rows::unknown(row_cnt, ds_cnt);
    let total = rows.len();
    let err = |offset: usize, what: &'static str| PackError { offset, what };
    let (mut pos, mut done, mut c) = (0usize, 0usize, 0usize);
    let mut chunk: Vec<f64> = Vec::new();
    let mut block: Vec<f64> = Vec::new();
    // Values go into the chunk being filled; a full one is put in place.
    let fill = |rows: &mut Rows,
                c: &mut usize,
                chunk: &mut Vec<f64>,
                vals: &mut dyn Iterator<Item = f64>| {
        for v in vals {
            chunk.push(v);
            if chunk.len() == rows.chunk_len(*c) {
                let full = std::mem::take(chunk);
                rows.put(*c, Part::Values(full))
                    .expect("a whole chunk's values");
                *c += 1;
            }
        }
    };
    while done < total {
        // The block's header, read again by `decode_values` for the blocks it expands.
        let mut p = pos;
        let (len, kind) = block_head(buf, &mut p)?;
        if len == 0 || len > total - done {
            return Err(err(pos, "bad run length in archive rows"));
        }
        if kind == BLOCK_REPEAT {
            let b = buf.get(p..p + 8).ok_or(err(p, "archive rows truncated"))?;
            let v = f64::from_le_bytes([b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7]]);
            pos = p + 8;
            let mut left = len;
            while left > 0 {
                let room = rows.chunk_len(c) - chunk.len();
                if chunk.is_empty() && left >= room {
                    rows.put(c, Part::Fill(v.to_bits()))
                        .expect("a chunk of the archive");
                    c += 1;
                    left -= room;
                } else {
                    let k = left.min(room);
                    fill(
                        &mut rows,
                        &mut c,
                        &mut chunk,
                        &mut std::iter::repeat_n(v, k),
                    );
                    left -= k;
                }
            }
        } else {
            block.clear();
            let used = decode_values(&buf[pos..], len, &mut block).map_err(|e| PackError {
                offset: pos + e.offset,
                what: e.what,
            })?;
            pos += used;
            fill(&mut rows, &mut c, &mut chunk, &mut block.iter().copied());
        }
        done += len;
    }
    Ok((rows, pos))
}

/// A piece of a chunk (docs/FORMAT.md, "Segment files"): the values from index `start`
/// (`n` of them) written over the piece before it, in segment `prev` (0: none; then the
/// piece is the whole chunk, `start` 0). A segment of pieces holds a checkpoint's open
/// chunks, each the values written since the chunk was last stored, so that a chunk being
/// filled over many checkpoints is not written whole at each of them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PieceHead {
    pub start: usize,
    pub n: usize,
    pub prev: u32,
    /// Bytes of the header: the values' blocks follow.
    pub len: usize,
}

/// Encode a piece: its header, then `vals` as [`encode_values`] packs them.
pub fn encode_piece(start: usize, prev: u32, vals: &[f64], out: &mut Vec<u8>) {
    put_varint(out, start as u64);
    put_varint(out, vals.len() as u64);
    put_varint(out, u64::from(prev));
    encode_values(vals, out);
}

/// The header of a piece of a chunk of `chunk_len` values.
pub fn piece_head(buf: &[u8], chunk_len: usize) -> Result<PieceHead, PackError> {
    let mut pos = 0;
    let start = read_varint(buf, &mut pos)?;
    let n = read_varint(buf, &mut pos)?;
    let prev = read_varint(buf, &mut pos)?;
    let bad = |what| PackError { offset: 0, what };
    let (start, n) = (start as usize, n as usize);
    if start > chunk_len || n > chunk_len - start {
        return Err(bad("piece past its chunk's end"));
    }
    let prev = u32::try_from(prev).map_err(|_| bad("piece's segment out of range"))?;
    if prev == 0 && (start != 0 || n != chunk_len) {
        return Err(bad("a first piece that is not the whole chunk"));
    }
    Ok(PieceHead {
        start,
        n,
        prev,
        len: pos,
    })
}

/// Links a read follows at most through a chunk's pieces (a store keeps chains shorter:
/// `engine::segments::PIECE_EPOCH`); a longer chain reads as damaged.
const MAX_PIECE_LINKS: u32 = 64;

/// Where a sealed chunk's packed values are.
#[derive(Clone)]
enum PackedBytes {
    /// On the heap.
    Owned(Vec<u8>),
    /// `len` bytes at `start` of a shared buffer (a mapped segment file).
    Shared {
        buf: SharedBytes,
        start: usize,
        len: usize,
    },
}

impl PackedBytes {
    fn as_slice(&self) -> &[u8] {
        match self {
            PackedBytes::Owned(v) => v,
            PackedBytes::Shared { buf, start, len } => {
                let all: &[u8] = (**buf).as_ref();
                all.get(*start..start + len).unwrap_or(&[])
            }
        }
    }
}

/// Packed values of one sealed chunk, and the segment they were stored in (0: not yet).
pub struct Packed {
    bytes: PackedBytes,
    seg: AtomicU64,
}

impl Packed {
    /// The values, as [`encode_values`] wrote them.
    pub fn bytes(&self) -> &[u8] {
        self.bytes.as_slice()
    }

    /// The segment that holds these bytes, once stored.
    pub fn stored(&self) -> Option<u64> {
        Some(self.seg.load(Ordering::Relaxed)).filter(|&s| s != 0)
    }

    /// Record that segment `seg` (non-zero) now durably holds these bytes.
    pub fn mark_stored(&self, seg: u64) {
        self.seg.store(seg, Ordering::Relaxed);
    }
}

/// Where the store keeps chunks it has stored: its segment files. `rrd` does no I/O; a store
/// gives its archives one ([`Rows::adopt`]) and they read stored chunks through it.
pub trait ChunkSource: Send + Sync {
    /// The packed bytes of the chunk with `key` (series id, archive, chunk index) in
    /// segment `seg`, checked against their checksum: `len` bytes at `start` of the buffer.
    /// `None` if the segment is gone, lacks the key, or the bytes are damaged (the source
    /// reports it); the chunk then reads as unknown.
    fn chunk(&self, seg: u32, key: (u64, u32, u32)) -> Option<(SharedBytes, usize, usize)>;

    /// Whether segment `seg` holds pieces of chunks ([`PieceHead`]) rather than whole packed
    /// chunks.
    fn pieces(&self, _seg: u32) -> bool {
        false
    }

    /// A chunk of `bytes` packed bytes was sealed on the heap, not stored yet: the store
    /// counts them to know when to spill ([`Rows::unstored`]). Not called for a chunk sealed
    /// with the values it already had.
    fn sealed(&self, _bytes: usize) {}

    /// A chunk of `bytes` packed bytes counted by [`ChunkSource::sealed`] was replaced by
    /// a newer version before it was stored (its archive came round to it again): never to
    /// be stored, no longer held.
    fn unsealed(&self, _bytes: usize) {}
}

/// One chunk, by value: a single repeated bit pattern, packed values on the heap (immutable:
/// a new version of the chunk is a new `Packed`), or stored in a segment file (read through
/// the page cache when needed).
#[derive(Clone)]
enum Chunk {
    Fill(u64),
    Packed(Arc<Packed>),
    Stored(u32),
}

/// The open chunk: its index, the version it was opened from, the values written since
/// (the chunk's values from index `start` on: the first `packed_n` of them packed, by
/// [`encode_values`] in groups of [`OPEN_GROUP`] (a replay's in one run), then the staged
/// ones; the others are still `prev`'s), and the rows (within the chunk) written since it
/// was opened. Rows are written in order, so the values grow by appending and hold only
/// what was written; a write elsewhere first brings in every value (`start` 0, every value
/// staged, nothing packed). Positions are u32 (a chunk holds at most [`CHUNK_VALUES`]
/// values, but a row of more DSs makes a chunk of one row: still far below 2^32): every
/// series of a store keeps one of these for each archive it writes, so it is kept in 64
/// bytes (jemalloc's 64-byte class; 88 with a buffer each for packed and staged values, and
/// a second allocation).
struct Open {
    idx: u32,
    start: u32,
    packed_n: u32,
    /// Bytes of `buf` that are packed values; the rest are the staged values, 8 bytes each
    /// (little-endian bit patterns).
    packed_len: u32,
    /// The first and last row written since the chunk was opened; `NOT_WRITTEN` if none.
    written: (u32, u32),
    prev: Chunk,
    /// Open chunks are most of what a series holds in memory: packed, the values of
    /// consolidation take 2-4 bytes instead of 8.
    buf: Vec<u8>,
}

/// `Open::written` when no row was written.
const NOT_WRITTEN: (u32, u32) = (u32::MAX, 0);

impl Open {
    fn new(idx: u32, prev: Chunk, buf: Vec<u8>) -> Open {
        Open {
            idx,
            start: 0,
            packed_n: 0,
            packed_len: 0,
            written: NOT_WRITTEN,
            prev,
            buf,
        }
    }

    /// How many values were written since it was opened (from `start` on).
    fn len(&self) -> usize {
        self.packed_n as usize + self.staged_n()
    }

    /// The rows written since it was opened, first and last.
    fn written(&self) -> Option<(u32, u32)> {
        (self.written.0 <= self.written.1).then_some(self.written)
    }

    fn staged_n(&self) -> usize {
        (self.buf.len() - self.packed_len as usize) / 8
    }

    fn staged(&self, i: usize) -> f64 {
        let at = self.packed_len as usize + i * 8;
        let b: [u8; 8] = self.buf[at..at + 8].try_into().expect("8 bytes");
        f64::from_bits(u64::from_le_bytes(b))
    }

    fn set_staged(&mut self, i: usize, v: f64) {
        let at = self.packed_len as usize + i * 8;
        self.buf[at..at + 8].copy_from_slice(&v.to_bits().to_le_bytes());
    }

    /// Pack the staged values of whole groups in their place, but not a group that ends at
    /// `chunk_len` (the chunk is sealed whole): each group on its own, as writing them one
    /// at a time does, or with `together` all of them in one call to [`encode_values`] (a
    /// replay's packing of what it left staged: one search for a divisor instead of one a
    /// group, and fewer block heads; the same values, and the same sealed chunk, which is
    /// packed again whole). Packed through a buffer the thread keeps, so that the group
    /// writing packs as it fills costs no allocation unless it comes out longer than its
    /// values (a literal block: one byte more). Returns whether any was packed.
    fn pack_groups(&mut self, chunk_len: usize, together: bool) -> bool {
        thread_local! {
            static PACKED: std::cell::RefCell<Vec<u8>> = const {
                std::cell::RefCell::new(Vec::new())
            };
        }
        // Groups that end before the chunk does.
        let tail = (self.start + self.packed_n) as usize;
        let room = chunk_len.saturating_sub(tail + 1) / OPEN_GROUP;
        let n = (self.staged_n() / OPEN_GROUP).min(room);
        if n == 0 {
            return false;
        }
        let mut pack = |b: &mut Vec<u8>| {
            b.clear();
            let staged = &self.buf[self.packed_len as usize..];
            let value =
                |x: &[u8]| f64::from_bits(u64::from_le_bytes(x.try_into().expect("8 bytes")));
            if together {
                let vals: Vec<f64> = staged[..n * 8 * OPEN_GROUP]
                    .chunks_exact(8)
                    .map(value)
                    .collect();
                encode_values(&vals, b);
            } else {
                for g in staged.chunks_exact(8 * OPEN_GROUP).take(n) {
                    let mut group = [0f64; OPEN_GROUP];
                    for (v, x) in group.iter_mut().zip(g.chunks_exact(8)) {
                        *v = value(x);
                    }
                    encode_values(&group, b);
                }
            }
            let packed = b.len();
            b.extend_from_slice(&staged[n * 8 * OPEN_GROUP..]);
            self.buf.truncate(self.packed_len as usize);
            self.buf.reserve_exact(b.len());
            self.buf.extend_from_slice(b);
            self.packed_len += packed as u32;
            self.packed_n += (n * OPEN_GROUP) as u32;
        };
        PACKED.with(|cell| match cell.try_borrow_mut() {
            Ok(mut b) => pack(&mut b),
            Err(_) => pack(&mut Vec::new()),
        });
        true
    }

    /// Every value staged, `vals`, nothing packed (a write out of order).
    fn stage_all(&mut self, vals: &[f64]) {
        self.buf = Vec::with_capacity(vals.len() * 8);
        for v in vals {
            self.buf.extend_from_slice(&v.to_bits().to_le_bytes());
        }
        self.start = 0;
        self.packed_len = 0;
        self.packed_n = 0;
    }

    /// Those values, in order, into `out` (appended).
    fn written_into(&self, out: &mut Vec<f64>) {
        if self.packed_n > 0 {
            // Packed here from whole values: it always decodes.
            let _ = decode_values(
                &self.buf[..self.packed_len as usize],
                self.packed_n as usize,
                out,
            );
        }
        out.extend((0..self.staged_n()).map(|i| self.staged(i)));
    }
}

/// What a checkpoint must keep of one chunk so that replaying the log from a snapshot
/// rebuilds it ([`Rows::keep`]).
pub enum Keep<'a> {
    /// Every value has this bit pattern.
    Fill(u64),
    /// Sealed packed values on the heap: already in a segment when [`Packed::stored`] says
    /// so, else to be stored (then [`Rows::settle`]).
    Packed(Arc<Packed>),
    /// The open chunk's current values.
    Values(std::borrow::Cow<'a, [f64]>),
    /// Stored in this segment.
    Stored(u64),
}

/// One chunk as a checkpoint gives it back ([`Rows::from_parts`]).
pub enum Part {
    Fill(u64),
    /// Packed values and the segment they came from (0: none).
    Packed(Vec<u8>, u64),
    /// Packed values left where they are: `len` bytes at `start` of the mapped segment `seg`
    /// (checked by the segment's checksum when the store opened it; decoded when read).
    Shared {
        buf: SharedBytes,
        start: usize,
        len: usize,
        seg: u64,
    },
    Values(Vec<f64>),
    /// In one of the store's segments, to be found there ([`Rows::place`]).
    InSegments,
}

/// Ring rows written after a snapshot: `count` rows from `first` on, wrapping (`count` at
/// least the row count: every row).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Fresh {
    pub first: usize,
    pub count: usize,
}

impl Fresh {
    pub const NONE: Fresh = Fresh { first: 0, count: 0 };

    /// Whether rows `lo..=hi` (no wrap, `< row_cnt`) were all written since the snapshot.
    fn covers(&self, lo: usize, hi: usize, row_cnt: usize) -> bool {
        if self.count >= row_cnt {
            return true;
        }
        if self.count == 0 || hi < lo {
            return false;
        }
        // Offsets from `first`, around the ring: the range must sit inside [0, count).
        let off = |r: usize| (r + row_cnt - self.first % row_cnt) % row_cnt;
        let (a, b) = (off(lo), off(hi));
        a <= b && b < self.count
    }
}

/// Where stored chunks of these rows are read: the store's source and the rows' key there.
#[derive(Clone)]
struct Source {
    src: Arc<dyn ChunkSource>,
    series: u64,
}

/// The chunks of an archive that are neither stored nor the fill, by index, ascending: most
/// archives have none, so an empty list takes one word and no allocation.
#[derive(Default)]
// The box is the point: an empty list costs one word in every archive, a list its Vec.
#[allow(clippy::box_collection)]
struct Others(Option<Box<Vec<(u32, Chunk)>>>);

impl Others {
    fn list(&self) -> &[(u32, Chunk)] {
        self.0.as_deref().map_or(&[], |v| v.as_slice())
    }
    fn iter(&self) -> std::slice::Iter<'_, (u32, Chunk)> {
        self.list().iter()
    }
    fn is_empty(&self) -> bool {
        self.list().is_empty()
    }
    fn capacity(&self) -> usize {
        self.0.as_ref().map_or(0, |v| v.capacity())
    }
    fn find(&self, c: usize) -> Result<usize, usize> {
        self.list().binary_search_by_key(&(c as u32), |e| e.0)
    }
    fn get(&self, i: usize) -> &Chunk {
        &self.list()[i].1
    }
    fn set(&mut self, i: usize, ch: Chunk) {
        if let Some(v) = self.0.as_mut() {
            v[i].1 = ch;
        }
    }
    fn insert(&mut self, i: usize, c: usize, ch: Chunk) {
        self.0.get_or_insert_default().insert(i, (c as u32, ch));
    }
    fn remove(&mut self, i: usize) {
        if let Some(v) = self.0.as_mut() {
            v.remove(i);
            if v.is_empty() {
                self.0 = None;
            } else if v.capacity() > 2 * v.len() {
                // Chunks leave as checkpoints store them: give the room back.
                v.shrink_to_fit();
            }
        }
    }
}

/// Placements already made to shared tables ([`Rows::place_many`]): (table, segment,
/// chunks) -> the table before and after.
#[derive(Default)]
pub struct PlaceMemo(TableMemo);

type TableMemo = std::collections::HashMap<
    (usize, u32, Vec<u32>),
    (Arc<Vec<u32>>, Arc<Vec<u32>>),
    std::hash::BuildHasherDefault<crate::fx::Fx>,
>;

/// The chunk tables archives share ([`Rows::share`]), hashed by [`crate::fx::Fx`] (SipHash
/// was a tenth of a store's open; tables are the store's own numbers, not chosen input).
#[derive(Default)]
pub struct SegPool(
    std::collections::HashSet<Arc<Vec<u32>>, std::hash::BuildHasherDefault<crate::fx::Fx>>,
);

impl SegPool {
    /// Forget the tables no archive uses any more.
    pub fn prune(&mut self) {
        self.0.retain(|t| Arc::strong_count(t) > 1);
    }

    /// Distinct tables held.
    pub fn len(&self) -> usize {
        self.0.len()
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

thread_local! {
    /// Set by [`with_packing_deferred`]: open chunks keep every value unpacked.
    static DEFERRED: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// Run `f` with the open chunks written on this thread keeping their values unpacked (no
/// group packed as it fills; a chunk sealed in `f` is packed once, from its values), then
/// pack them as writing would have ([`Rows::pack_staged`] on each archive `f` wrote: the
/// caller's part). Replay writes a series' rows by the thousand in one go: most of them
/// are sealed before the replay of the series ends, and packing them eight at a time first,
/// then unpacking them to seal the chunk, was a third of its time (26,000 gmetad series,
/// 25.8 million samples: 5.8 s, 4.0 s with the groups left unpacked). The values stay
/// unpacked only while `f` runs: memory grows by the open chunks `f` writes, 2 KiB each
/// at most, and the caller packs them before it goes on.
pub fn with_packing_deferred<R>(f: impl FnOnce() -> R) -> R {
    struct Reset(bool);
    impl Drop for Reset {
        fn drop(&mut self) {
            DEFERRED.with(|d| d.set(self.0));
        }
    }
    let _reset = Reset(DEFERRED.with(|d| d.replace(true)));
    f()
}

fn packing_deferred() -> bool {
    DEFERRED.with(|d| d.get())
}

/// Values an open chunk's buffer grows by at least when full (else by a quarter).
const OPEN_GROWTH: usize = 4;
/// Values an open chunk holds unpacked at most: each group of this many is packed as it
/// fills. Small, so that a young chunk is packed too (a 1-minute archive writes 30 rows in
/// half an hour); a group's block header and first value cost about 4 bytes more than the
/// values' own 2-3.
const OPEN_GROUP: usize = 8;

/// `segs` entry of a chunk a checkpoint has "in the segments", not yet found.
const UNPLACED: u32 = u32::MAX;

/// The rows of one archive: `row_cnt` rows of `ds_cnt` values, row after row.
///
/// Memory: 4 bytes a chunk (the segment holding it), plus the chunks that are not stored
/// and not the archive's common fill (on the heap until a checkpoint stores them), plus the
/// open chunk's values.
pub struct Rows {
    row_cnt: usize,
    /// u32: with `archive` in the room of one `usize` (an archive is kept for every series
    /// of a store; a million series keep three each). Rows a chunk: [`chunk_rows_for`] of it,
    /// computed, not kept (80 bytes a `Rows` put an archive list of three at 264 bytes, in
    /// jemalloc's 320-byte class; 72 puts it at 240, in the 256).
    ds_cnt: u32,
    /// Which archive of its series these rows are, where stored chunks are read from
    /// ([`Rows::adopt`]).
    archive: u32,
    /// Per chunk: the segment that holds it (`1..UNPLACED`), or 0: it is in `other`, or
    /// else every value is `fill`. The open chunk's entry is stale while it is open. Shared
    /// (copied on write) with every archive whose table is the same ([`SegPool`]).
    segs: Arc<Vec<u32>>,
    /// Chunks neither stored nor `fill`, by index, ascending (never `Chunk::Stored`).
    other: Others,
    fill: u64,
    /// The chunk being written (boxed: most archives at rest have none).
    open: Option<Box<Open>>,
    src: Option<Source>,
}

impl Rows {
    /// `row_cnt` rows of `ds_cnt` values, every one `v`.
    pub fn filled(row_cnt: u64, ds_cnt: usize, v: f64) -> Rows {
        let mut r = Rows::empty(row_cnt as usize, ds_cnt);
        r.fill = v.to_bits();
        r
    }

    /// Rows from their values, row after row (`vals.len()` a multiple of `ds_cnt`; a
    /// partial last row is dropped). `ds_cnt` 0 holds nothing.
    pub fn from_values(ds_cnt: usize, vals: &[f64]) -> Rows {
        let row_cnt = vals.len().checked_div(ds_cnt).unwrap_or(0);
        let mut r = Rows::empty(row_cnt, ds_cnt);
        let per = r.chunk_rows() * ds_cnt;
        for c in 0..r.segs.len() {
            r.set_chunk(
                c,
                pack(&vals[c * per..((c + 1) * per).min(row_cnt * ds_cnt)]),
            );
        }
        r
    }

    /// Every chunk a fill of unknowns.
    fn empty(row_cnt: usize, ds_cnt: usize) -> Rows {
        let chunk_rows = chunk_rows_for(ds_cnt);
        Rows {
            row_cnt,
            // At most CHUNK_VALUES rows a chunk; a row of more than u32::MAX values would
            // not fit in memory.
            ds_cnt: ds_cnt as u32,
            archive: 0,
            segs: Arc::new(vec![0; row_cnt.div_ceil(chunk_rows)]),
            other: Others::default(),
            fill: crate::num::DNAN.to_bits(),
            open: None,
            src: None,
        }
    }

    pub fn row_cnt(&self) -> u64 {
        self.row_cnt as u64
    }

    pub fn ds_cnt(&self) -> usize {
        self.ds_cnt as usize
    }

    /// Number of values, `row_cnt * ds_cnt`.
    pub fn len(&self) -> usize {
        self.row_cnt * (self.ds_cnt as usize)
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Values in chunk `c` (the last chunk may hold fewer rows).
    pub fn chunk_len(&self, c: usize) -> usize {
        let rows = self.chunk_rows().min(self.row_cnt - c * self.chunk_rows());
        rows * (self.ds_cnt as usize)
    }

    /// Make chunk `c`'s table entry `seg`, copying the table first if it is shared.
    fn set_seg(&mut self, c: usize, seg: u32) {
        if self.segs[c] != seg {
            Arc::make_mut(&mut self.segs)[c] = seg;
        }
    }

    /// Share this archive's chunk table with the equal tables in `pool` (or add it there).
    /// Series created together with one schema have their chunks sealed at the same times
    /// and stored in the same segments: their tables are equal, and one copy serves them
    /// all. A table changed since it was shared is a copy of its own until shared again.
    pub fn share(&mut self, pool: &mut SegPool) {
        if Arc::strong_count(&self.segs) > 1 {
            return;
        }
        match pool.0.get(&self.segs) {
            Some(t) => self.segs = t.clone(),
            None => {
                pool.0.insert(self.segs.clone());
            }
        }
    }

    /// Which chunk table these rows use (equal for rows sharing one) and its bytes.
    pub fn table(&self) -> (usize, usize) {
        (Arc::as_ptr(&self.segs) as usize, self.segs.capacity() * 4)
    }

    /// Sealed chunk `c` as it stands (stale for the open chunk).
    fn chunk(&self, c: usize) -> Chunk {
        match self.segs[c] {
            0 => match self.other.find(c) {
                Ok(i) => self.other.get(i).clone(),
                Err(_) => Chunk::Fill(self.fill),
            },
            seg => Chunk::Stored(seg),
        }
    }

    /// Make sealed chunk `c` be `ch`.
    fn set_chunk(&mut self, c: usize, ch: Chunk) {
        let at = self.other.find(c);
        match ch {
            Chunk::Stored(seg) => {
                self.set_seg(c, seg);
                if let Ok(i) = at {
                    self.other.remove(i);
                }
            }
            Chunk::Fill(b) if b == self.fill => {
                self.set_seg(c, 0);
                if let Ok(i) = at {
                    self.other.remove(i);
                }
            }
            ch => {
                self.set_seg(c, 0);
                match at {
                    Ok(i) => self.other.set(i, ch),
                    Err(i) => self.other.insert(i, c, ch),
                }
            }
        }
    }

    /// The values of chunk `c` into `out` (cleared first).
    fn unpack_into(&self, c: usize, out: &mut Vec<f64>) {
        out.clear();
        if let Some(o) = self.open.as_ref().filter(|o| (o.idx as usize) == c) {
            self.open_values(o, out);
            return;
        }
        self.unpack_chunk(c, &self.chunk(c), out);
    }

    /// The open chunk's current values into `out` (empty).
    fn open_values(&self, o: &Open, out: &mut Vec<f64>) {
        if (o.start as usize) == 0 && o.len() == self.chunk_len(o.idx as usize) {
            o.written_into(out);
        } else {
            self.unpack_chunk(o.idx as usize, &o.prev, out);
            let mut w = Vec::with_capacity(o.len());
            o.written_into(&mut w);
            out[(o.start as usize)..(o.start as usize) + w.len()].copy_from_slice(&w);
        }
    }

    /// The values of `ch`, a version of chunk `c`, into `out` (empty).
    fn unpack_chunk(&self, c: usize, ch: &Chunk, out: &mut Vec<f64>) {
        let n = self.chunk_len(c);
        let ok = match ch {
            Chunk::Fill(b) => {
                out.resize(n, f64::from_bits(*b));
                true
            }
            // Packed here from whole values, or checked at load: it always decodes.
            Chunk::Packed(p) => decode_values(p.bytes(), n, out).is_ok(),
            Chunk::Stored(seg) => self.unpack_stored(c, *seg, n, out, MAX_PIECE_LINKS),
        };
        if !ok {
            // A stored chunk that is gone or damaged (its source reported it): unknown,
            // never its damaged bytes.
            out.clear();
        }
        out.resize(n, f64::NAN);
    }

    /// The values of chunk `c` (`n` of them) as stored in segment `seg` into `out` (empty):
    /// packed whole, or a piece over the pieces before it (at most `links` more, each in an
    /// older segment). False if any of it cannot be read.
    fn unpack_stored(&self, c: usize, seg: u32, n: usize, out: &mut Vec<f64>, links: u32) -> bool {
        let pieces = self.src.as_ref().is_some_and(|s| s.src.pieces(seg));
        if !pieces {
            return self
                .with_stored(c, &Chunk::Stored(seg), |b| decode_values(b, n, out).is_ok())
                .unwrap_or(false);
        }
        let mut vals = Vec::new();
        let head = self.with_stored(c, &Chunk::Stored(seg), |b| {
            let h = piece_head(b, n).ok()?;
            decode_values(&b[h.len..], h.n, &mut vals).ok()?;
            Some(h)
        });
        let Some(Some(h)) = head else {
            return false;
        };
        if h.prev == 0 {
            *out = vals;
            return true;
        }
        if links == 0 || h.prev >= seg || !self.unpack_stored(c, h.prev, n, out, links - 1) {
            return false;
        }
        out[h.start..h.start + h.n].copy_from_slice(&vals);
        true
    }

    /// The values of chunk `c` as it stands sealed (for the open chunk, the version it was
    /// opened from); unknown where it cannot be read.
    pub fn chunk_values(&self, c: usize) -> Vec<f64> {
        let mut out = Vec::with_capacity(self.chunk_len(c));
        self.unpack_chunk(c, &self.chunk(c), &mut out);
        out
    }

    /// The open chunk `c`'s values written since it was opened on a stored version: where
    /// they start in the chunk, the values, and that version's segment. `None` if chunk `c`
    /// is not open on a stored version or nothing was written.
    pub fn open_piece(&self, c: usize) -> Option<(usize, Vec<f64>, u32)> {
        let o = self.open.as_ref().filter(|o| (o.idx as usize) == c)?;
        let Chunk::Stored(seg) = o.prev else {
            return None;
        };
        if o.len() == 0 {
            return None;
        }
        let mut vals = Vec::with_capacity(o.len());
        o.written_into(&mut vals);
        Some((o.start as usize, vals, seg))
    }

    /// Run `f` on the checked bytes of `ch`, a stored version of chunk `c`.
    fn with_stored<T>(&self, c: usize, ch: &Chunk, f: impl FnOnce(&[u8]) -> T) -> Option<T> {
        let Chunk::Stored(seg) = *ch else {
            return None;
        };
        let s = self.src.as_ref()?;
        let (buf, start, len) = s.src.chunk(seg, (s.series, self.archive, c as u32))?;
        let all: &[u8] = (*buf).as_ref();
        Some(f(all.get(start..start + len)?))
    }

    /// The packed bytes of chunk `c` as it stands sealed (`None` for a fill, or a stored
    /// chunk that cannot be read).
    pub fn packed_bytes(&self, c: usize) -> Option<Vec<u8>> {
        match self.chunk(c) {
            Chunk::Fill(_) => None,
            Chunk::Packed(p) => Some(p.bytes().to_vec()),
            Chunk::Stored(seg) if self.src.as_ref().is_some_and(|s| s.src.pieces(seg)) => {
                // Pieces: the values they add up to, packed whole.
                let mut v = Vec::new();
                let n = self.chunk_len(c);
                if !self.unpack_stored(c, seg, n, &mut v, MAX_PIECE_LINKS) {
                    return None;
                }
                let mut b = Vec::new();
                encode_values(&v, &mut b);
                Some(b)
            }
            ch @ Chunk::Stored(_) => self.with_stored(c, &ch, |b| b.to_vec()),
        }
    }

    /// Value `i` (row `i / ds_cnt`, DS `i % ds_cnt`); panics past the end, as a slice would.
    pub fn get(&self, i: usize) -> f64 {
        assert!(i < self.len(), "row value {i} out of {}", self.len());
        let per = self.chunk_rows() * (self.ds_cnt as usize);
        let c = i / per;
        if let Some(o) = self.open.as_ref().filter(|o| (o.idx as usize) == c) {
            let j = i - c * per;
            let tail = (o.start + o.packed_n) as usize;
            if j >= tail && j < tail + o.staged_n() {
                return o.staged(j - tail);
            }
            if j >= (o.start as usize) && j < tail {
                let mut w = Vec::with_capacity(o.packed_n as usize);
                o.written_into(&mut w);
                return w[j - (o.start as usize)];
            }
            let mut v = Vec::new();
            self.unpack_chunk(c, &o.prev, &mut v);
            return v[j];
        }
        match self.chunk(c) {
            Chunk::Fill(b) => f64::from_bits(b),
            _ => {
                let mut v = Vec::new();
                self.unpack_into(c, &mut v);
                v[i - c * per]
            }
        }
    }

    /// Open chunk `c` for writing (sealing the one open before).
    fn open_chunk(&mut self, c: usize) -> &mut Open {
        if self.open.as_ref().is_none_or(|o| (o.idx as usize) != c) {
            let mut buf = match self.open.take() {
                Some(o) => self.seal_open(o),
                None => Vec::new(),
            };
            buf.clear();
            let prev = self.chunk(c);
            self.open = Some(Box::new(Open::new(c as u32, prev, buf)));
        }
        self.open.as_mut().expect("just opened")
    }

    /// Pack `o` into its chunk, keeping the version it was opened from if nothing changed
    /// (so a chunk already stored stays stored after replay rewrites the same values).
    /// Returns its buffer for reuse.
    fn seal_open(&mut self, o: Box<Open>) -> Vec<u8> {
        let mut all = Vec::with_capacity(self.chunk_len(o.idx as usize));
        self.open_values(&o, &mut all);
        let new = pack(&all);
        let same = match (&new, &o.prev) {
            (Chunk::Fill(a), Chunk::Fill(b)) => a == b,
            (Chunk::Packed(a), Chunk::Packed(b)) => a.bytes() == b.bytes(),
            (Chunk::Packed(a), prev @ Chunk::Stored(_)) => self
                .with_stored(o.idx as usize, prev, |b| b == a.bytes())
                .unwrap_or(false),
            _ => false,
        };
        if let (false, Some(src)) = (same, &self.src) {
            if let Chunk::Packed(p) = &new {
                src.src.sealed(p.bytes().len());
            }
            if let Chunk::Packed(old) = &o.prev {
                if old.stored().is_none() {
                    src.src.unsealed(old.bytes().len());
                }
            }
        }
        self.set_chunk(o.idx as usize, if same { o.prev } else { new });
        let mut buf = o.buf;
        buf.clear();
        if buf.capacity() > self.chunk_rows() * (self.ds_cnt as usize) * 2 && !packing_deferred() {
            buf = Vec::new();
        }
        buf
    }

    /// Pack the open chunk's values left unpacked by [`with_packing_deferred`]: the whole
    /// groups writing them outside it would have packed, in one block run (see
    /// [`Open::pack_groups`]), and give back the buffer's spare room.
    pub fn pack_staged(&mut self) {
        let Some(mut o) = self.open.take() else {
            return;
        };
        o.pack_groups(self.chunk_len(o.idx as usize), true);
        if o.buf.capacity() > o.buf.len() + 8 * OPEN_GROUP {
            o.buf.shrink_to_fit();
        }
        self.open = Some(o);
    }

    /// Set value `i`; panics past the end, as a slice would.
    pub fn set(&mut self, i: usize, v: f64) {
        assert!(i < self.len(), "row value {i} out of {}", self.len());
        let (c, j, row) = if self.ds_cnt == 1 {
            // One DS (most RRDs): chunks of `CHUNK_VALUES` rows, a shift instead of the two
            // divisions below (a fifth of a write's own time in a replay).
            let c = i / CHUNK_VALUES;
            let j = i - c * CHUNK_VALUES;
            (c, j, j)
        } else {
            let per = self.chunk_rows() * (self.ds_cnt as usize);
            let c = i / per;
            let j = i - c * per;
            (c, j, j / (self.ds_cnt as usize).max(1))
        };
        self.open_chunk(c);
        let mut o = self.open.take().expect("just opened");
        if o.len() == 0 {
            o.start = j as u32;
        }
        let tail = (o.start + o.packed_n) as usize;
        let staged = o.staged_n();
        let end = tail + staged;
        if j == end && packing_deferred() {
            if o.buf.len() + 8 > o.buf.capacity() {
                // Room for the rest of the chunk at once: it is filled in this replay.
                o.buf.reserve_exact(8 * (self.chunk_len(c) - end));
            }
            o.buf.extend_from_slice(&v.to_bits().to_le_bytes());
        } else if j == end {
            if o.buf.len() + 8 > o.buf.capacity() {
                // Grown by a quarter, not doubled: an open chunk is most of what a series
                // holds in memory, and a doubled buffer is a quarter empty on average.
                let room = self.chunk_len(c).saturating_sub(end).min(OPEN_GROUP);
                let grow = (staged / 4).max(OPEN_GROWTH);
                o.buf
                    .reserve_exact(8 * grow.min(room.saturating_sub(staged)).max(1));
            }
            o.buf.extend_from_slice(&v.to_bits().to_le_bytes());
            if staged + 1 == OPEN_GROUP {
                // A group filled: packed in place of its values, if the chunk goes on.
                o.pack_groups(self.chunk_len(c), false);
            }
        } else if j >= tail && j < end {
            o.set_staged(j - tail, v);
        } else {
            // Not in order (or into the packed values): every value in memory from now on.
            let mut all = Vec::with_capacity(self.chunk_len(c));
            self.open_values(&o, &mut all);
            all[j] = v;
            o.stage_all(&all);
        }
        self.open = Some(o);
        let o = self.open.as_mut().expect("put back");
        let row = row as u32;
        o.written = match o.written() {
            Some((lo, hi)) => (lo.min(row), hi.max(row)),
            None => (row, row),
        };
    }

    /// Set row `row` to `vals` (`ds_cnt` values).
    pub fn set_row(&mut self, row: usize, vals: &[f64]) {
        for (ds, &v) in vals.iter().enumerate().take(self.ds_cnt as usize) {
            self.set(row * (self.ds_cnt as usize) + ds, v);
        }
    }

    /// Set every value of row `row` to `v`.
    pub fn fill_row(&mut self, row: usize, v: f64) {
        for ds in 0..(self.ds_cnt as usize) {
            self.set(row * (self.ds_cnt as usize) + ds, v);
        }
    }

    /// Pack the open chunk, leaving nothing open (memory at rest is the packed size).
    pub fn seal(&mut self) {
        if let Some(o) = self.open.take() {
            self.seal_open(o);
        }
    }

    /// Number of chunks.
    pub fn chunk_count(&self) -> usize {
        self.segs.len()
    }

    /// Rows per chunk (the last chunk may have fewer): `CHUNK_VALUES / ds_cnt`, at least 1.
    #[inline]
    pub fn chunk_rows(&self) -> usize {
        if self.ds_cnt == 1 {
            // Without the division: writes ask on every value.
            CHUNK_VALUES
        } else {
            chunk_rows_for(self.ds_cnt as usize)
        }
    }

    /// What a checkpoint must keep of chunk `c` when replay from its snapshot rewrites the
    /// rows `fresh`: nothing that replay rebuilds whole (an unknown fill stands in), the
    /// version the open chunk was opened from if only fresh rows were written into it since,
    /// else the chunk as it is.
    pub fn keep(&self, c: usize, fresh: Fresh) -> Keep<'_> {
        self.keep_lazy(c, fresh)
            .unwrap_or_else(|| Keep::Values(self.open_now(c)))
    }

    /// The open chunk `c`'s current values (empty if chunk `c` is not open).
    pub fn open_now(&self, c: usize) -> std::borrow::Cow<'_, [f64]> {
        let Some(o) = self.open.as_ref().filter(|o| (o.idx as usize) == c) else {
            return std::borrow::Cow::Borrowed(&[]);
        };
        let mut all = Vec::with_capacity(self.chunk_len(c));
        self.open_values(o, &mut all);
        std::borrow::Cow::Owned(all)
    }

    /// [`Rows::keep`] without building the open chunk's values: `None` where they are what
    /// must be kept ([`Rows::open_now`] gives them; a checkpoint that stores a piece needs
    /// only what was written since, [`Rows::open_piece`], and reads nothing it was laid
    /// over).
    pub fn keep_lazy(&self, c: usize, fresh: Fresh) -> Option<Keep<'_>> {
        let lo = c * self.chunk_rows();
        let hi = (lo + self.chunk_rows()).min(self.row_cnt) - 1;
        fn sealed(ch: Chunk) -> Keep<'static> {
            match ch {
                Chunk::Fill(b) => Keep::Fill(b),
                Chunk::Packed(p) => Keep::Packed(p),
                Chunk::Stored(seg) => Keep::Stored(u64::from(seg)),
            }
        }
        let open = self.open.as_ref().filter(|o| (o.idx as usize) == c);
        let current = match open {
            Some(o) => match o.written() {
                Some((a, b)) if fresh.covers(lo + a as usize, lo + b as usize, self.row_cnt) => {
                    sealed(o.prev.clone())
                }
                None => sealed(o.prev.clone()),
                Some(_) => return self.keep_all_fresh(lo, hi, fresh, None),
            },
            None => sealed(self.chunk(c)),
        };
        self.keep_all_fresh(lo, hi, fresh, Some(current))
    }

    /// What to keep of a chunk of rows `lo..=hi` whose current version is `current` (`None`:
    /// the open chunk's values): where replay rewrites every row anything will do, and a
    /// stored version costs no more than the unknown fill.
    fn keep_all_fresh<'a>(
        &self,
        lo: usize,
        hi: usize,
        fresh: Fresh,
        current: Option<Keep<'a>>,
    ) -> Option<Keep<'a>> {
        if !fresh.covers(lo, hi, self.row_cnt) {
            return current;
        }
        let stored = match &current {
            Some(Keep::Packed(p)) => p.stored().is_some(),
            Some(Keep::Stored(_)) => true,
            _ => false,
        };
        if stored {
            current
        } else {
            Some(Keep::Fill(crate::num::DNAN.to_bits()))
        }
    }

    /// Rows from a checkpoint's chunks (`parts.len()` must be the chunk count of `row_cnt`
    /// rows of `ds_cnt` values, and every part the right number of values).
    pub fn from_parts(row_cnt: u64, ds_cnt: usize, parts: Vec<Part>) -> Result<Rows, String> {
        let mut r = Rows::unknown(row_cnt, ds_cnt);
        let want = r.segs.len();
        if parts.len() != want {
            return Err(format!(
                "{} chunks where the archive has {want}",
                parts.len()
            ));
        }
        for (c, part) in parts.into_iter().enumerate() {
            r.put(c, part)?;
        }
        Ok(r)
    }

    /// `row_cnt` rows of `ds_cnt` values, every one unknown (to [`Rows::put`] chunks into).
    pub fn unknown(row_cnt: u64, ds_cnt: usize) -> Rows {
        Rows::empty(row_cnt as usize, ds_cnt)
    }

    /// Make chunks `c..c + n` "in the segments" (`fill` None) or every value `fill`'s bit
    /// pattern, as a checkpoint gives a run of them back: [`Rows::put`] for each, at once.
    pub fn put_run(&mut self, c: usize, n: usize, fill: Option<u64>) -> Result<(), String> {
        let end = c
            .checked_add(n)
            .filter(|&e| e <= self.segs.len())
            .ok_or_else(|| format!("chunks {c}+{n} past the archive's {}", self.segs.len()))?;
        if self.other.is_empty() && self.open.is_none() {
            match fill {
                None => {
                    Arc::make_mut(&mut self.segs)[c..end].fill(UNPLACED);
                    return Ok(());
                }
                Some(b) if b == self.fill => {
                    if self.segs[c..end].iter().any(|&s| s != 0) {
                        Arc::make_mut(&mut self.segs)[c..end].fill(0);
                    }
                    return Ok(());
                }
                Some(_) => {}
            }
        }
        for i in c..end {
            self.put(i, fill.map_or(Part::InSegments, Part::Fill))?;
        }
        Ok(())
    }

    /// Take the chunk table a checkpoint gave for these rows (version 4: each chunk "in the
    /// segments" names its segment there, the others 0), shared with every archive that
    /// names the same one. The rows must have exactly those chunks "in the segments"
    /// ([`Rows::put_run`] with no fill) and no open chunk.
    pub fn adopt_table(&mut self, table: Arc<Vec<u32>>) -> Result<(), String> {
        if table.len() != self.segs.len() || self.open.is_some() {
            return Err(format!(
                "chunk table of {} chunks for an archive of {}",
                table.len(),
                self.segs.len()
            ));
        }
        for (c, (&mine, &t)) in self.segs.iter().zip(table.iter()).enumerate() {
            if (mine == UNPLACED) != (t != 0) || t == UNPLACED {
                return Err(format!("chunk {c}: the chunk table does not match its run"));
            }
        }
        self.segs = table;
        Ok(())
    }

    /// Make chunk `c` (< [`Rows::chunk_count`]) be `part`, as a checkpoint gives it back.
    pub fn put(&mut self, c: usize, part: Part) -> Result<(), String> {
        if c >= self.segs.len() {
            return Err(format!("chunk {c} past the archive's {}", self.segs.len()));
        }
        let n = self.chunk_len(c);
        let ch = match part {
            Part::Fill(b) => Chunk::Fill(b),
            Part::Values(v) if v.len() == n => pack(&v),
            Part::Values(v) => {
                return Err(format!("chunk {c}: {} values, want {n}", v.len()));
            }
            Part::Packed(mut bytes, seg) => {
                let mut scratch = Vec::with_capacity(n);
                match decode_values(&bytes, n, &mut scratch) {
                    Ok(used) if used == bytes.len() => {}
                    Ok(_) => return Err(format!("chunk {c}: bytes after its values")),
                    Err(e) => return Err(format!("chunk {c}: {}", e.what)),
                }
                bytes.shrink_to_fit();
                Chunk::Packed(Arc::new(Packed {
                    bytes: PackedBytes::Owned(bytes),
                    seg: AtomicU64::new(seg),
                }))
            }
            Part::Shared {
                buf,
                start,
                len,
                seg,
            } => shared_chunk(buf, start, len, seg).map_err(|e| format!("chunk {c}: {e}"))?,
            Part::InSegments => Chunk::Stored(UNPLACED),
        };
        self.set_chunk(c, ch);
        Ok(())
    }

    /// Read stored chunks through `src` (the store these rows now belong to), as archive
    /// `archive` of series `series` there. Chunks stored under another source or key (rows
    /// copied from another store or series) are read into memory first, as not stored.
    pub fn adopt(&mut self, src: &Arc<dyn ChunkSource>, series: u64, archive: u32) {
        let same = self.src.as_ref().is_some_and(|s| {
            std::ptr::addr_eq(Arc::as_ptr(&s.src), Arc::as_ptr(src))
                && s.series == series
                && self.archive == archive
        });
        if !same && self.src.is_some() {
            for c in 0..self.segs.len() {
                if let ch @ Chunk::Stored(_) = self.chunk(c) {
                    let mut vals = Vec::new();
                    self.unpack_chunk(c, &ch, &mut vals);
                    self.set_chunk(c, pack(&vals));
                }
            }
            if let Some(mut o) = self.open.take() {
                if let Chunk::Stored(_) = o.prev {
                    let mut vals = Vec::new();
                    self.unpack_chunk(o.idx as usize, &o.prev, &mut vals);
                    o.prev = pack(&vals);
                }
                self.open = Some(o);
            }
        }
        self.archive = archive;
        self.src = Some(Source {
            src: src.clone(),
            series,
        });
    }

    /// Whether chunk `c` may be placed: a checkpoint had it "in the segments".
    fn placeable(&self, c: usize) -> bool {
        match self.segs.get(c) {
            None => false,
            Some(0) => matches!(self.chunk(c), Chunk::Packed(p) if p.stored().is_some()),
            Some(_) => true,
        }
    }

    /// Chunk `c`, marked "in the segments" by a checkpoint, is in segment `seg` (segments
    /// are placed in ascending order: the newest wins). Returns false, changing nothing, if
    /// the checkpoint had the chunk elsewhere.
    pub fn place(&mut self, c: usize, seg: u32) -> bool {
        if seg == 0 || seg == UNPLACED {
            return false;
        }
        if let Some(&old) = self.segs.get(c).filter(|&&s| s != 0) {
            // Stored (or to be found): never in `other`, so the number is all there is. An
            // open chunk opened from that version reads it from the new segment too (its
            // version was stored again there, and the old file goes).
            self.set_seg(c, seg);
            if let Some(o) = self
                .open
                .as_mut()
                .filter(|o| (o.idx as usize) == c && matches!(o.prev, Chunk::Stored(s) if s == old))
            {
                o.prev = Chunk::Stored(seg);
            }
            return true;
        }
        let ok = self.placeable(c);
        if ok {
            self.set_chunk(c, Chunk::Stored(seg));
        }
        ok
    }

    /// [`Rows::place`] for chunks `cs` (ascending) of one segment at once. A shared table is
    /// not copied for each archive that shares it: the first one's result is remembered in
    /// `memo` and given to the others, so tables stay shared through a store's open.
    pub fn place_many(&mut self, cs: &[u32], seg: u32, memo: &mut PlaceMemo) {
        let direct = seg != 0
            && seg != UNPLACED
            && Arc::strong_count(&self.segs) > 1
            && cs
                .iter()
                .all(|&c| self.segs.get(c as usize).is_some_and(|&s| s != 0));
        if !direct {
            for &c in cs {
                self.place(c as usize, seg);
            }
            return;
        }
        let key = (Arc::as_ptr(&self.segs) as usize, seg, cs.to_vec());
        if let Some((_, new)) = memo.0.get(&key) {
            self.segs = new.clone();
            return;
        }
        let mut t = (*self.segs).clone();
        for &c in cs {
            t[c as usize] = seg;
        }
        let new = Arc::new(t);
        let old = std::mem::replace(&mut self.segs, new.clone());
        // The old table is kept alive with its result, so that its address names it.
        memo.0.insert(key, (old, new));
    }

    /// Like [`Rows::place`] for a chunk of an old (version 1) segment, held in its mapping.
    pub fn place_shared(
        &mut self,
        c: usize,
        buf: SharedBytes,
        start: usize,
        len: usize,
        seg: u64,
    ) -> Result<bool, String> {
        let ok = self.placeable(c);
        if ok {
            self.set_chunk(c, shared_chunk(buf, start, len, seg)?);
        }
        Ok(ok)
    }

    /// The segment chunk `c` is stored in, as the chunk table says (None: not stored, or
    /// not yet found).
    pub fn seg_of(&self, c: usize) -> Option<u32> {
        self.segs
            .get(c)
            .copied()
            .filter(|&s| s != 0 && s != UNPLACED)
    }

    /// The first chunk still "in the segments" but found in none.
    pub fn unplaced(&self) -> Option<usize> {
        self.segs.iter().position(|&s| s == UNPLACED)
    }

    /// Heap chunk `p` (chunk `c`) is now durably in segment `seg`: drop it from the heap
    /// (where it is still this version).
    pub fn settle(&mut self, c: usize, p: &Arc<Packed>, seg: u32) {
        let is_p = |ch: &Chunk| matches!(ch, Chunk::Packed(q) if Arc::ptr_eq(q, p));
        if seg == 0 || seg == UNPLACED || c >= self.segs.len() {
            return;
        }
        if is_p(&self.chunk(c)) {
            self.set_chunk(c, Chunk::Stored(seg));
        }
        if let Some(o) = self
            .open
            .as_mut()
            .filter(|o| (o.idx as usize) == c && is_p(&o.prev))
        {
            o.prev = Chunk::Stored(seg);
        }
    }

    /// The open chunk `c`'s values, as they are now, are durably stored in segment `seg` (a
    /// checkpoint stored its [`Keep::Values`]): let them go from memory. The chunk reads
    /// from that segment, and the next write opens it again on that version, holding only
    /// what it writes from then on. Nothing changes unless chunk `c` is the open one.
    pub fn rebase(&mut self, c: usize, seg: u32) {
        let open = self.open.as_ref().is_some_and(|o| (o.idx as usize) == c);
        if seg == 0 || seg == UNPLACED || !open {
            return;
        }
        // Not sealed: the values are not packed again, nor counted as sealed on the heap.
        self.open = None;
        self.set_chunk(c, Chunk::Stored(seg));
    }

    /// The sealed chunks on the heap that no segment holds yet (chunk index, packed
    /// version): what a checkpoint or a spill stores ([`Rows::settle`] then drops them).
    pub fn unstored(&self) -> impl Iterator<Item = (usize, &Arc<Packed>)> {
        self.other.iter().filter_map(|(c, ch)| match ch {
            Chunk::Packed(p) if p.stored().is_none() => Some((*c as usize, p)),
            _ => None,
        })
    }

    /// Add every segment a chunk of these rows (or a version an open chunk came from) is
    /// read from to `out`.
    pub fn segments_used(&self, out: &mut impl Extend<u64>) {
        let seg = |ch: &Chunk| match ch {
            Chunk::Stored(seg) => Some(u64::from(*seg)),
            Chunk::Packed(p) => p.stored(),
            Chunk::Fill(_) => None,
        };
        out.extend(
            self.segs
                .iter()
                .filter(|&&s| s != 0 && s != UNPLACED)
                .map(|&s| u64::from(s)),
        );
        out.extend(self.other.iter().filter_map(|(_, ch)| seg(ch)));
        out.extend(self.open.as_ref().and_then(|o| seg(&o.prev)));
    }

    /// Every value, row after row.
    pub fn to_vec(&self) -> Vec<f64> {
        let mut out = Vec::with_capacity(self.len());
        let mut buf = Vec::new();
        for c in 0..self.segs.len() {
            self.unpack_into(c, &mut buf);
            out.extend_from_slice(&buf);
        }
        out
    }

    /// Every value, row after row, by value.
    pub fn iter(&self) -> std::vec::IntoIter<f64> {
        self.to_vec().into_iter()
    }

    /// A reader that unpacks each chunk once for a walk through many rows.
    pub fn reader(&self) -> RowReader<'_> {
        RowReader {
            rows: self,
            chunk: usize::MAX,
            buf: Vec::new(),
        }
    }

    /// Bytes of memory the rows take of their own: heap chunks, the open chunk (not the
    /// chunk table, which may be shared: [`Rows::table`]).
    pub fn heap_bytes(&self) -> usize {
        let packed: usize = self
            .other
            .iter()
            .map(|(_, c)| match c {
                Chunk::Packed(p) => match &p.bytes {
                    PackedBytes::Owned(v) => v.capacity() + 32,
                    // In the page cache, not on the heap.
                    PackedBytes::Shared { .. } => 32,
                },
                _ => 0,
            })
            .sum();
        let open = self
            .open
            .as_ref()
            .map_or(0, |o| o.buf.capacity() + size_of::<Open>());
        packed + open + self.other.capacity() * std::mem::size_of::<(u32, Chunk)>()
    }
}

/// A chunk of `len` bytes at `start` of `buf` (a mapped version 1 segment), stored in `seg`.
fn shared_chunk(buf: SharedBytes, start: usize, len: usize, seg: u64) -> Result<Chunk, String> {
    if (*buf).as_ref().len() < start.saturating_add(len) {
        return Err("past the end of its segment".into());
    }
    Ok(Chunk::Packed(Arc::new(Packed {
        bytes: PackedBytes::Shared { buf, start, len },
        seg: AtomicU64::new(seg),
    })))
}

/// A chunk holding `vals`.
fn pack(vals: &[f64]) -> Chunk {
    match vals.first() {
        Some(v0) if vals.iter().all(|v| v.to_bits() == v0.to_bits()) => Chunk::Fill(v0.to_bits()),
        None => Chunk::Fill(f64::NAN.to_bits()),
        Some(_) => {
            let mut out = Vec::with_capacity(vals.len() * 2);
            encode_values(vals, &mut out);
            out.shrink_to_fit();
            Chunk::Packed(Arc::new(Packed {
                bytes: PackedBytes::Owned(out),
                seg: AtomicU64::new(0),
            }))
        }
    }
}

/// Rows of one archive read one at a time, each chunk unpacked once while rows stay in it.
pub struct RowReader<'a> {
    rows: &'a Rows,
    chunk: usize,
    buf: Vec<f64>,
}

impl RowReader<'_> {
    /// The values of row `row` (`< row_cnt`).
    pub fn row(&mut self, row: usize) -> &[f64] {
        let r = self.rows;
        let c = row / r.chunk_rows();
        if c != self.chunk {
            r.unpack_into(c, &mut self.buf);
            self.chunk = c;
        }
        let at = (row - c * r.chunk_rows()) * (r.ds_cnt as usize);
        &self.buf[at..at + (r.ds_cnt as usize)]
    }

    /// Appends the values of rows `row..row + n` (`row + n <= row_cnt`) to `out`, a chunk's
    /// rows at a time.
    pub fn push_rows(&mut self, mut row: usize, mut n: usize, out: &mut Vec<f64>) {
        let r = self.rows;
        let (per, d) = (r.chunk_rows(), r.ds_cnt as usize);
        while n > 0 {
            let c = row / per;
            if c != self.chunk {
                r.unpack_into(c, &mut self.buf);
                self.chunk = c;
            }
            let at = row - c * per;
            let take = (per - at).min(n);
            out.extend_from_slice(&self.buf[at * d..(at + take) * d]);
            row += take;
            n -= take;
        }
    }
}

impl Chunk {
    /// The same values, not marked stored and shared with nothing (a stored chunk stays a
    /// reference: [`Rows::adopt`] reads it if the copy goes to another store or series).
    fn detached(&self) -> Chunk {
        match self {
            Chunk::Fill(b) => Chunk::Fill(*b),
            Chunk::Stored(seg) => Chunk::Stored(*seg),
            Chunk::Packed(p) => Chunk::Packed(Arc::new(Packed {
                bytes: p.bytes.clone(),
                seg: AtomicU64::new(0),
            })),
        }
    }
}

impl Clone for Rows {
    /// The same rows, sharing no heap chunk: a store marks the chunks it has stored in its
    /// own segments, and a copy (a template RRD created in several stores) starts unmarked.
    fn clone(&self) -> Rows {
        Rows {
            row_cnt: self.row_cnt,
            ds_cnt: self.ds_cnt,
            archive: self.archive,
            segs: self.segs.clone(),
            other: Others(
                self.other
                    .0
                    .as_ref()
                    .map(|v| Box::new(v.iter().map(|(c, ch)| (*c, ch.detached())).collect())),
            ),
            fill: self.fill,
            open: self.open.as_ref().map(|o| {
                Box::new(Open {
                    idx: o.idx,
                    prev: o.prev.detached(),
                    start: o.start,
                    packed_n: o.packed_n,
                    packed_len: o.packed_len,
                    buf: o.buf.clone(),
                    written: o.written,
                })
            }),
            src: self.src.clone(),
        }
    }
}

impl PartialEq for Rows {
    /// Equal when they hold the same values (compared as `f64`, as a `Vec<f64>` would).
    fn eq(&self, other: &Rows) -> bool {
        self.row_cnt == other.row_cnt
            && self.ds_cnt == other.ds_cnt
            && self.to_vec() == other.to_vec()
    }
}

impl std::fmt::Debug for Rows {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "Rows({} x {}: {:?})",
            self.row_cnt,
            (self.ds_cnt as usize),
            self.to_vec()
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn xorshift(mut x: u64) -> impl FnMut() -> u64 {
        move || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        }
    }

    fn mixed_values(n: usize, seed: u64) -> Vec<f64> {
        let mut next = xorshift(seed);
        (0..n)
            .map(|_| match next() % 5 {
                0 => f64::from_bits(next()),
                1 => (next() % 100_000) as f64 / 100.0,
                2 => -((next() % 1000) as f64) / 8.0,
                3 => (next() % 1_000_000) as f64 / 1e6,
                _ => f64::NAN,
            })
            .collect()
    }

    fn bits(v: &[f64]) -> Vec<u64> {
        v.iter().map(|x| x.to_bits()).collect()
    }

    #[test]
    fn rows_decode_a_chunk_at_a_time() {
        // Blocks that cross chunk boundaries, runs over whole chunks and parts of them, and
        // rows of two DSs: the same rows as decoding every value first.
        let mut vals = mixed_values(3000, 7);
        vals.extend(std::iter::repeat_n(2.5, 1100));
        vals.extend(mixed_values(333, 9));
        vals.extend(std::iter::repeat_n(f64::NAN, 700));
        for ds in [1, 2] {
            let n = vals.len() / ds * ds;
            let mut buf = Vec::new();
            encode_values(&vals[..n], &mut buf);
            buf.extend_from_slice(b"after");
            let (rows, used) = decode_rows(&buf, (n / ds) as u64, ds).unwrap();
            assert_eq!(used, buf.len() - 5);
            assert_eq!(bits(&rows.to_vec()), bits(&vals[..n]));
            assert!(decode_rows(&buf[..used - 1], (n / ds) as u64, ds).is_err());
            assert!(decode_rows(&buf, (n / ds) as u64 + 1, ds).is_err());
        }
        // 2^31 unknowns in a few bytes: a chunk table, no values (found by fuzzing: it
        // was expanded first, 16 GB).
        let mut buf = Vec::new();
        put_varint(&mut buf, (1u64 << 31) << 2 | BLOCK_REPEAT);
        buf.extend_from_slice(&crate::num::DNAN.to_le_bytes());
        let (rows, used) = decode_rows(&buf, 1 << 31, 1).unwrap();
        assert_eq!(used, buf.len());
        assert!(rows.heap_bytes() < 40 << 20, "{}", rows.heap_bytes());
        assert!(rows.get((1 << 31) - 1).is_nan());
    }

    #[test]
    fn packed_values_come_back_bit_for_bit() {
        let vals = mixed_values(5000, 0x2545_F491_4F6C_DD1D);
        let mut out = Vec::new();
        encode_values(&vals, &mut out);
        let mut back = Vec::new();
        let used = decode_values(&out, vals.len(), &mut back).unwrap();
        assert_eq!(used, out.len());
        assert_eq!(bits(&back), bits(&vals));
    }

    /// What rrdtool's consolidation makes of short decimals and whole counts: sums of
    /// 2-decimal values divided by a PDP count (with the sum's rounding), rates over whole
    /// seconds, their averages; and, between them, noise, repeats and unknowns.
    fn rrd_like_values(n: usize, seed: u64) -> Vec<f64> {
        let mut next = xorshift(seed);
        let mut out = Vec::with_capacity(n);
        while out.len() < n {
            let kind = next() % 6;
            for _ in 0..(1 + next() % 40) {
                out.push(match kind {
                    0 => {
                        let k = [4u64, 6, 40, 12, 288][(next() % 5) as usize];
                        let sum: f64 = (0..k).map(|_| (next() % 10_000) as f64 / 100.0).sum();
                        sum / k as f64
                    }
                    1 => {
                        let step = [10.0, 15.0, 60.0, 300.0][(next() % 4) as usize];
                        (next() % 5_000_000) as f64 / step
                    }
                    2 => {
                        let r: f64 = (0..6).map(|_| (next() % 50_000) as f64 / 300.0).sum();
                        r / 6.0
                    }
                    3 => f64::from_bits(next()),
                    4 => -((next() % 1000) as f64) / 3.0,
                    _ => [f64::NAN, 0.0, -0.0, f64::INFINITY, 1.5][(next() % 5) as usize],
                });
            }
        }
        out.truncate(n);
        out
    }

    #[test]
    fn ratios_of_small_divisors_come_back_bit_for_bit_in_fewer_bytes() {
        for seed in 1..40u64 {
            let vals = rrd_like_values(3000, seed * 0x9E37_79B9);
            let mut out = Vec::new();
            encode_values(&vals, &mut out);
            let mut back = Vec::new();
            let used = decode_values(&out, vals.len(), &mut back).unwrap();
            assert_eq!(used, out.len());
            assert_eq!(bits(&back), bits(&vals), "seed {seed}");
        }
        // Averages of four 2-decimal PDPs, as rrdtool sums and divides them: most are not
        // short decimals (the sum's rounding), all are ratios of 4 * 10^2 within an ulp or two.
        let mut next = xorshift(99);
        let avgs: Vec<f64> = (0..256)
            .map(|_| {
                (0..4)
                    .map(|_| (next() % 10_000) as f64 / 100.0)
                    .sum::<f64>()
                    / 4.0
            })
            .collect();
        let mut out = Vec::new();
        encode_values(&avgs, &mut out);
        assert!(out.len() < 256 * 4, "{} bytes for 256 averages", out.len());
        // Rates of counters over 300 s: within a few units of m / 300.
        let rates: Vec<f64> = (0..256)
            .map(|_| (next() % 3_000_000) as f64 / 300.0)
            .collect();
        let mut out2 = Vec::new();
        encode_values(&rates, &mut out2);
        assert!(out2.len() < 256 * 5, "{} bytes for 256 rates", out2.len());
        for (v, b) in [(avgs, out), (rates, out2)] {
            let mut back = Vec::new();
            decode_values(&b, v.len(), &mut back).unwrap();
            assert_eq!(bits(&back), bits(&v));
        }
        // Noise stays literal: no block kind that costs more than the 8 bytes.
        let noise: Vec<f64> = (0..256).map(|_| f64::from_bits(next() >> 2)).collect();
        let mut out3 = Vec::new();
        encode_values(&noise, &mut out3);
        assert!(out3.len() <= 256 * 8 + 8, "{}", out3.len());
    }

    /// Munin's and Cacti's rows: a counter's rate over 300 s (an increment of 0 to 50,000
    /// divided), the average of six of them (Munin's 30-minute archive), and a 2-decimal
    /// random walk; the bytes a value of the packed blocks and of the varint blocks before
    /// them (kinds 2 and 3, still written where they are smaller).
    #[test]
    fn packed_blocks_take_the_bits_of_the_values_spread() {
        let mut next = xorshift(0x5EED);
        let rates: Vec<f64> = (0..256).map(|_| (next() % 50_001) as f64 / 300.0).collect();
        let avgs: Vec<f64> = (0..256)
            .map(|_| {
                (0..6)
                    .map(|_| (next() % 50_001) as f64 / 300.0)
                    .sum::<f64>()
                    / 6.0
            })
            .collect();
        let mut level = 5_000i64;
        let walk: Vec<f64> = (0..256)
            .map(|_| {
                level += (next() % 41) as i64 - 20;
                level as f64 / 100.0
            })
            .collect();
        for (what, vals, most, varint_least) in [
            ("rates", &rates, 2.1, 3.5),
            ("averages of 6 rates", &avgs, 2.9, 3.5),
            ("2-decimal walk", &walk, 0.85, 1.0),
        ] {
            let mut out = Vec::new();
            encode_values(vals, &mut out);
            let mut back = Vec::new();
            assert_eq!(
                decode_values(&out, vals.len(), &mut back).unwrap(),
                out.len()
            );
            assert_eq!(bits(&back), bits(vals), "{what}");
            let a_value = out.len() as f64 / vals.len() as f64;
            assert!(a_value <= most, "{what}: {a_value} bytes a value");
            assert_eq!(out[0], EXTENDED, "{what}: one packed block");
            // The same run in the varint blocks: a decimal one where the values are short
            // decimals, else a ratio one.
            let varint = match min_scale(vals[0]) {
                Some(s) if vals.iter().all(|&v| as_decimal(v, s).is_some()) => {
                    let ms: Vec<i64> = vals.iter().map(|&v| as_decimal(v, s).unwrap()).collect();
                    form_cost(Form::Decimal, 1, &ms, &vec![0; ms.len()])
                }
                _ => {
                    let (k, scale, n) = best_ratio(vals).unwrap();
                    assert_eq!(n, vals.len(), "{what}");
                    let d = ratio_divisor(k, scale);
                    let (ms, us): (Vec<i64>, Vec<i64>) =
                        vals.iter().map(|&v| as_ratio(v, d).unwrap()).unzip();
                    form_cost(Form::Ratio, k, &ms, &us)
                }
            };
            assert!(
                varint as f64 / vals.len() as f64 >= varint_least,
                "{what}: varint {varint}"
            );
        }
    }

    #[test]
    fn the_form_chosen_is_the_one_of_fewest_bytes() {
        // choose_form's one pass against form_cost's figure for each form, on runs of
        // every length up to a block, spreads small and large, with and without ulps.
        let mut next = xorshift(0xF0F0);
        for _ in 0..3_000 {
            let n = 1 + (next() % MAX_PACKED as u64) as usize;
            let spread = 1u64 << (next() % 50);
            let walk = next().is_multiple_of(2);
            let mut m = (next() % (1 << 40)) as i64 - (1 << 39);
            let ms: Vec<i64> = (0..n)
                .map(|_| {
                    let r = (next() % spread) as i64 - (spread / 2) as i64;
                    if walk {
                        m += r;
                        m
                    } else {
                        r
                    }
                })
                .collect();
            let us: Vec<i64> = (0..n)
                .map(|_| match next() % 3 {
                    0 => 0,
                    _ => (next() % (2 * MAX_ULPS as u64 + 1)) as i64 - MAX_ULPS,
                })
                .map(|u| if walk { u } else { 0 })
                .collect();
            let k = [1u64, 3, 300][(next() % 3) as usize];
            let exact = k == 1 && us.iter().all(|&u| u == 0);
            let least = [
                Form::Decimal,
                Form::Ratio,
                Form::Packed(PRED_NONE),
                Form::Packed(PRED_DELTA),
            ]
            .into_iter()
            .filter(|&f| f != Form::Decimal || exact)
            .map(|f| form_cost(f, k, &ms, &us))
            .min()
            .unwrap();
            let chosen = choose_form(k, &ms, &us);
            assert_eq!(form_cost(chosen, k, &ms, &us), least, "{chosen:?}, n {n}");
            let mut out = Vec::new();
            put_numbered_block(&mut out, k, 2, &ms, &us);
            assert_eq!(out.len(), least, "{chosen:?}, n {n}");
        }
    }

    #[test]
    fn blocks_written_before_packed_ones_still_read() {
        // A decimal block (kind 2) of 1.25, 1.5, 1.0, 0.75 at scale 2 and a ratio block
        // (kind 3) of 1/3 and 2/3 (k 3, scale 0, u 0), as written before packed blocks.
        let mut b = vec![(4 << 2) | 2, 2];
        for d in [125i64, 25, -50, -25] {
            put_varint(&mut b, zigzag(d));
        }
        b.extend_from_slice(&[(2 << 2) | 3, 3, 0, 2, 0, 2, 0]);
        let mut back = Vec::new();
        assert_eq!(decode_values(&b, 6, &mut back).unwrap(), b.len());
        assert_eq!(
            bits(&back),
            bits(&[1.25, 1.5, 1.0, 0.75, 1.0 / 3.0, 2.0 / 3.0])
        );
    }

    #[test]
    fn a_packed_block_of_any_bytes_decodes_or_errs() {
        // Extended headers followed by random bytes: values or an error, never a panic,
        // and never more than MAX_PACKED values from one block whatever its widths say.
        let mut next = xorshift(11);
        for _ in 0..50_000 {
            let n = 1 + next() % 300;
            let mut b = vec![EXTENDED];
            put_varint(&mut b, (n << 2) | (next() % 4));
            for _ in 0..(next() % 40) {
                b.push(next() as u8);
            }
            let mut back = Vec::new();
            match decode_values(&b, n as usize, &mut back) {
                Ok(used) => {
                    assert!(used <= b.len());
                    assert_eq!(back.len(), n as usize);
                }
                Err(e) => assert!(e.offset <= b.len(), "{e:?}"),
            }
        }
        // Zero-width fields: no bytes, so the count alone bounds the block.
        let mut b = vec![EXTENDED];
        put_varint(&mut b, ((MAX_PACKED as u64 + 1) << 2) | EXT_PACKED);
        b.extend_from_slice(&[1, 0, PRED_NONE, 0, 0, 0]);
        let e = decode_values(&b, MAX_PACKED + 1, &mut Vec::new()).unwrap_err();
        assert!(e.what.contains("too long"), "{e:?}");
    }

    #[test]
    fn a_ratio_block_of_any_bytes_decodes_or_errs() {
        // Headers of kind 3 followed by random bytes: a value or an error, never a panic.
        let mut next = xorshift(5);
        for _ in 0..20_000 {
            let n = 1 + next() % 6;
            let mut b = Vec::new();
            put_varint(&mut b, (n << 2) | BLOCK_RATIO);
            for _ in 0..(next() % 24) {
                b.push(next() as u8);
            }
            let mut back = Vec::new();
            let _ = decode_values(&b, n as usize, &mut back);
        }
    }

    #[test]
    fn truncated_packing_is_an_error_not_a_panic() {
        let vals = mixed_values(300, 7);
        let mut out = Vec::new();
        encode_values(&vals, &mut out);
        for cut in [0, 1, out.len() / 2, out.len() - 1] {
            let mut back = Vec::new();
            assert!(decode_values(&out[..cut], vals.len(), &mut back).is_err());
        }
    }

    #[test]
    fn writes_around_the_ring_read_back_like_a_vec() {
        // 3 DS: 85 rows a chunk; 1000 rows is 12 chunks, the last one short.
        let (rows, ds) = (1000usize, 3usize);
        let mut model = vec![f64::NAN; rows * ds];
        let mut r = Rows::filled(rows as u64, ds, f64::NAN);
        let vals = mixed_values(rows * ds * 3, 99);
        let mut k = 0;
        for lap in 0..3 {
            for row in (0..rows).map(|i| (i + 400 * lap) % rows) {
                for d in 0..ds {
                    let v = vals[k % vals.len()];
                    k += 1;
                    model[row * ds + d] = v;
                    r.set(row * ds + d, v);
                }
                if row % 97 == 0 {
                    let i = (row * 7) % (rows * ds);
                    assert_eq!(r.get(i).to_bits(), model[i].to_bits());
                }
            }
            assert_eq!(bits(&r.to_vec()), bits(&model));
        }
        r.seal();
        assert_eq!(bits(&r.to_vec()), bits(&model));
        let mut rd = r.reader();
        for row in (0..rows).rev() {
            assert_eq!(bits(rd.row(row)), bits(&model[row * ds..row * ds + ds]));
        }
        let again = Rows::from_values(ds, &model);
        assert_eq!(bits(&again.to_vec()), bits(&model));
    }

    /// [`near`] turns away no value that the exact checks accept: values within a few units
    /// in the last place of ratios of every divisor (at and past the 63 allowed, `m` from 1
    /// to near 2^53, both signs), short decimals, and random bit patterns.
    #[test]
    fn the_division_free_test_never_turns_away_a_fit() {
        let exact_ratio = |v: f64, d: f64| {
            let m = round_small(v * d)?;
            let u = v.to_bits().wrapping_sub((m as f64 / d).to_bits()) as i64;
            (u.unsigned_abs() <= MAX_ULPS as u64).then_some((m, u))
        };
        let exact_decimal = |v: f64, scale: u8| {
            let p = POW10[scale as usize];
            let m = round_small(v * p)?;
            ((m as f64 / p).to_bits() == v.to_bits()).then_some(m)
        };
        let mut next = xorshift(11);
        let divs = ratio_divisors();
        let (mut fits, mut turned) = (0, 0);
        for i in 0..400_000 {
            let (_, scale, d) = divs[(next() % divs.len() as u64) as usize];
            let mag = 1u64 << (next() % 53);
            let mut m = (next() % mag) as i64;
            if next().is_multiple_of(2) {
                m = -m;
            }
            let u = (next() % 141) as i64 - 70;
            let v = match i % 4 {
                0 | 1 => ratio_value(m, d, u),
                2 => m as f64 / POW10[scale as usize],
                _ => f64::from_bits(next()),
            };
            let want = exact_ratio(v, d);
            assert_eq!(as_ratio(v, d), want, "{v:e} / {d}");
            fits += usize::from(want.is_some());
            turned += usize::from(want.is_none() && round_small(v * d).is_some());
            assert_eq!(
                as_decimal(v, scale),
                exact_decimal(v, scale),
                "{v:e} at {scale}"
            );
        }
        // Both sides of the line were reached.
        assert!(fits > 100_000 && turned > 50_000, "{fits} {turned}");
    }

    #[test]
    fn round_small_rounds_as_round_does() {
        let mut next = xorshift(3);
        let mut cases = vec![
            0.0,
            -0.0,
            0.5,
            -0.5,
            1.5,
            -1.5,
            2.5,
            0.49999999999999994,
            -0.49999999999999994,
            4503599627370495.5,
            -4503599627370495.5,
            8.99999999999999e15,
            9.0e15,
            -9.0e15,
            9.1e15,
            1e300,
            f64::INFINITY,
            f64::NEG_INFINITY,
            f64::NAN,
            5e-324,
        ];
        cases.extend((0..100_000).map(|_| f64::from_bits(next()) % 1e16));
        cases.extend((0..100_000).map(|_| (next() % 2_000_000) as f64 / 1000.0 - 1000.0));
        for x in cases {
            let want = x.round();
            let want = (want.is_finite() && want.abs() < 9.0e15).then_some(want as i64);
            assert_eq!(round_small(x), want, "{x:e}");
        }
    }

    #[test]
    fn an_open_chunk_fits_in_64_bytes() {
        // Every archive being written keeps one: a million series, two or three each.
        assert!(size_of::<Open>() <= 64, "{}", size_of::<Open>());
    }

    #[test]
    fn the_open_chunk_holds_only_what_was_written_and_writes_anywhere_stay_exact() {
        let (rows, ds) = (1000usize, 2usize);
        let vals = mixed_values(rows * ds, 7);
        let mut model = vals.clone();
        let mut r = Rows::from_values(ds, &vals);
        let at_rest = r.heap_bytes();
        // Rows written in order: the open chunk holds the written values only.
        for row in 300..310 {
            for d in 0..ds {
                let v = (row * 10 + d) as f64;
                model[row * ds + d] = v;
                r.set(row * ds + d, v);
            }
        }
        assert!(
            r.heap_bytes() < at_rest + 64 * 8,
            "{} after 10 rows, {at_rest} at rest",
            r.heap_bytes()
        );
        assert_eq!(bits(&r.to_vec()), bits(&model));
        assert_eq!(r.get(299 * ds).to_bits(), model[299 * ds].to_bits());
        assert_eq!(r.get(305 * ds + 1).to_bits(), model[305 * ds + 1].to_bits());
        // What a checkpoint keeps of it is every value of the chunk.
        let c = 300 / r.chunk_rows();
        let Keep::Values(kept) = r.keep(c, Fresh::NONE) else {
            panic!("rows written before the snapshot: the values");
        };
        let lo = c * r.chunk_rows() * ds;
        assert_eq!(bits(&kept), bits(&model[lo..lo + kept.len()]));
        // Out of order (before, then after a gap, then overwriting): still exact.
        for (i, v) in [(299 * ds, 1.25), (320 * ds + 1, -3.0), (301 * ds, 9.5)] {
            model[i] = v;
            r.set(i, v);
            assert_eq!(r.get(i).to_bits(), v.to_bits());
            assert_eq!(bits(&r.to_vec()), bits(&model));
        }
        r.seal();
        assert_eq!(bits(&r.to_vec()), bits(&model));
    }

    #[test]
    fn an_open_chunk_packs_its_values_as_they_fill_and_reads_them_back() {
        // One DS: 256 rows a chunk. Averages as consolidation makes them, written in order
        // from mid-chunk (as after a restart), read back after every write.
        let mut next = xorshift(11);
        let n = 2000usize;
        let mut model = vec![crate::num::DNAN; n];
        let mut r = Rows::unknown(n as u64, 1);
        for i in 100..700 {
            let v = (0..6)
                .map(|_| (next() % 10_000) as f64 / 100.0)
                .sum::<f64>()
                / 6.0;
            model[i] = v;
            r.set(i, v);
            assert_eq!(r.get(i).to_bits(), v.to_bits(), "{i}");
            if i % 37 == 0 {
                let back = r.get(i - 35);
                assert_eq!(back.to_bits(), model[i - 35].to_bits(), "{i}");
                assert_eq!(bits(&r.to_vec()), bits(&model), "{i}");
            }
        }
        // Chunk 2 (rows 512..768) is open with 188 values: most of them packed, in far less
        // than 8 bytes each.
        let open = r.heap_bytes();
        assert!(open < 188 * 5 + 2 * 256 * 4, "{open} bytes");
        let c = 2;
        let Keep::Values(kept) = r.keep(c, Fresh::NONE) else {
            panic!("the values");
        };
        assert_eq!(bits(&kept), bits(&model[512..768]));
        // A write into the packed values: every value unpacked, still exact; then on in order.
        model[520] = -1.5;
        r.set(520, -1.5);
        assert_eq!(bits(&r.to_vec()), bits(&model));
        for (i, m) in model.iter_mut().enumerate().take(800).skip(700) {
            *m = i as f64 / 3.0;
            r.set(i, *m);
        }
        assert_eq!(bits(&r.to_vec()), bits(&model));
        r.seal();
        assert_eq!(bits(&r.to_vec()), bits(&model));
    }

    /// Chunk by chunk `a` and `b` hold the same bytes; their open chunks the same rows,
    /// as many values packed and staged, `b`'s packed in no more bytes.
    fn assert_same_packing(a: &Rows, b: &Rows, what: &str) {
        for c in 0..a.segs.len() {
            match (a.chunk(c), b.chunk(c)) {
                (Chunk::Fill(x), Chunk::Fill(y)) => assert_eq!(x, y, "{what}: chunk {c}"),
                (Chunk::Packed(x), Chunk::Packed(y)) => {
                    assert_eq!(x.bytes(), y.bytes(), "{what}: chunk {c}")
                }
                _ => panic!("{what}: chunk {c} differs in kind"),
            }
        }
        match (&a.open, &b.open) {
            (None, None) => {}
            (Some(x), Some(y)) => {
                let f = |o: &Open| (o.idx, o.start, o.packed_n, o.staged_n(), o.written);
                assert_eq!(f(x), f(y), "{what}: the open chunk");
                // Packed together, no more room than group by group (on these values).
                assert!(y.packed_len <= x.packed_len, "{what}: packed bytes");
                assert!(
                    y.buf.capacity() <= y.buf.len() + 8 * OPEN_GROUP,
                    "{what}: room"
                );
            }
            _ => panic!("{what}: one has an open chunk"),
        }
    }

    #[test]
    fn deferred_packing_ends_as_packing_as_it_fills() {
        // Rows written with their packing deferred, then packed, hold what rows written one
        // value at a time hold, wherever the writes start and stop, sealed chunks byte for
        // byte, the open chunk the same values packed and staged in no more bytes: replay
        // defers, the daemon's writes do not, and the two go on from each other's state.
        let mut next = xorshift(5);
        for ds in [1usize, 2, 3, 300] {
            let n = 2400 / ds * ds;
            let vals: Vec<f64> = (0..n)
                .map(|i| match i % 3 {
                    0 => (next() % 10_000) as f64 / 100.0,
                    1 => (0..4).map(|_| (next() % 1000) as f64 / 100.0).sum::<f64>() / 4.0,
                    _ => f64::from_bits(next()),
                })
                .collect();
            for (from, stops) in [
                (0usize, vec![0usize, 7, 8, 9, 255, 256, 257, 1000]),
                (100, vec![13, 300, 611, 612, 1800]),
            ] {
                let from = from / ds * ds;
                let mut plain = Rows::unknown((n / ds) as u64, ds);
                let mut defer = Rows::unknown((n / ds) as u64, ds);
                let mut at = from;
                for (k, &stop) in stops.iter().chain([&n]).enumerate() {
                    let stop = (stop / ds * ds).max(at).min(n);
                    let what = format!("{ds} DS, from {from}, to {stop}");
                    for (i, &v) in vals.iter().enumerate().take(stop).skip(at) {
                        plain.set(i, v);
                    }
                    // Every other stretch deferred, the others written as the daemon does.
                    if k % 2 == 0 {
                        with_packing_deferred(|| {
                            for (i, &v) in vals.iter().enumerate().take(stop).skip(at) {
                                defer.set(i, v);
                            }
                        });
                        defer.pack_staged();
                    } else {
                        for (i, &v) in vals.iter().enumerate().take(stop).skip(at) {
                            defer.set(i, v);
                        }
                    }
                    assert_same_packing(&plain, &defer, &what);
                    assert_eq!(bits(&defer.to_vec()), bits(&plain.to_vec()), "{what}");
                    at = stop;
                }
            }
        }
        // Deferred, the values stay unpacked until packed.
        let mut r = Rows::unknown(1000, 1);
        with_packing_deferred(|| (0..100).for_each(|i| r.set(i, i as f64 / 7.0)));
        let o = r.open.as_ref().expect("open");
        assert_eq!((o.packed_n, o.staged_n()), (0, 100));
        r.pack_staged();
        let o = r.open.as_ref().expect("open");
        assert_eq!((o.packed_n, o.staged_n()), (96, 4));
        // Out of order under deferral: every value staged, still exact once packed.
        let mut r = Rows::unknown(1000, 1);
        let mut model = vec![crate::num::DNAN; 1000];
        with_packing_deferred(|| {
            for i in (300..400).chain(310..330).chain(400..450) {
                model[i] = i as f64 * 0.25;
                r.set(i, model[i]);
            }
        });
        r.pack_staged();
        assert_eq!(bits(&r.to_vec()), bits(&model));
        assert!(!packing_deferred(), "the flag is put back");
    }

    fn stored_seg(k: Keep<'_>) -> Option<Option<u64>> {
        match k {
            Keep::Packed(p) => Some(p.stored()),
            _ => None,
        }
    }

    #[test]
    fn keep_leaves_out_fresh_chunks_and_names_the_opened_version() {
        // 1 DS: 256 rows a chunk, 4 chunks. Rows 1..=600 written: chunks 0 and 1 sealed,
        // chunk 2 open with rows 512..=600 written into it.
        let mut r = Rows::filled(1000, 1, f64::NAN);
        for row in 1..=600 {
            r.set(row, row as f64 * 0.25);
        }
        if let Keep::Packed(p) = r.keep(0, Fresh::NONE) {
            p.mark_stored(5);
        }
        assert_eq!(stored_seg(r.keep(0, Fresh::NONE)), Some(Some(5)));
        assert_eq!(stored_seg(r.keep(1, Fresh::NONE)), Some(None));
        assert!(matches!(r.keep(2, Fresh::NONE), Keep::Values(v) if v[600 - 512] == 150.0));
        assert!(matches!(r.keep(3, Fresh::NONE), Keep::Fill(_)));
        // Since the snapshot, rows 500..=600: chunk 2 got only fresh rows, so its opened
        // version (unknown) will do; chunk 1 has older rows and is kept.
        let since = Fresh {
            first: 500,
            count: 101,
        };
        assert!(matches!(r.keep(2, since), Keep::Fill(b) if f64::from_bits(b).is_nan()));
        assert_eq!(stored_seg(r.keep(1, since)), Some(None));
        // Since row 590 only: chunk 2 has rows from before, so its values are kept.
        assert!(matches!(
            r.keep(
                2,
                Fresh {
                    first: 590,
                    count: 11
                }
            ),
            Keep::Values(_)
        ));
        // Replay rewrites chunks 0 and 1 whole: the stored one is named, the other left out.
        let wide = Fresh {
            first: 0,
            count: 601,
        };
        assert_eq!(stored_seg(r.keep(0, wide)), Some(Some(5)));
        assert!(matches!(r.keep(1, wide), Keep::Fill(_)));
        // Around the ring end: rows 900..=999 and 0..=300 cover chunk 0 (0..=255).
        let wrap = Fresh {
            first: 900,
            count: 401,
        };
        assert!(wrap.covers(0, 255, 1000) && !wrap.covers(256, 511, 1000));
    }

    /// A source holding packed chunks of series 1 archive 0, by (segment, chunk index).
    struct Src(std::collections::HashMap<(u32, u32), Vec<u8>>);

    impl ChunkSource for Src {
        fn chunk(&self, seg: u32, key: (u64, u32, u32)) -> Option<(SharedBytes, usize, usize)> {
            assert_eq!((key.0, key.1), (1, 0));
            let b = self.0.get(&(seg, key.2))?.clone();
            let len = b.len();
            Some((Arc::new(b), 0, len))
        }
    }

    #[test]
    fn stored_chunks_are_read_through_the_source_and_leave_the_heap() {
        let vals = mixed_values(1000, 5);
        let mut packed = std::collections::HashMap::new();
        for c in 0..4 {
            let mut b = Vec::new();
            encode_values(&vals[c * 256..((c + 1) * 256).min(1000)], &mut b);
            packed.insert((7, c as u32), b);
        }
        let src: Arc<dyn ChunkSource> = Arc::new(Src(packed));
        let parts = (0..4).map(|_| Part::InSegments).collect();
        let mut r = Rows::from_parts(1000, 1, parts).unwrap();
        r.adopt(&src, 1, 0);
        assert_eq!(r.unplaced(), Some(0));
        for c in 0..4 {
            assert!(r.place(c, 7));
        }
        assert_eq!(r.unplaced(), None);
        assert_eq!(bits(&r.to_vec()), bits(&vals));
        assert_eq!(
            r.heap_bytes(),
            0,
            "a stored chunk is only its segment number"
        );
        assert_eq!(r.table().1, 4 * 4, "in the chunk table");
        let mut used = Vec::new();
        r.segments_used(&mut used);
        assert_eq!(used, vec![7; 4]);
        // Rewritten alike: still the stored version; changed: a heap version, which a store
        // settles once it has stored it.
        r.set(300, vals[300]);
        r.seal();
        assert!(matches!(r.keep(1, Fresh::NONE), Keep::Stored(7)));
        r.set(300, 1.5);
        r.seal();
        let Keep::Packed(p) = r.keep(1, Fresh::NONE) else {
            panic!("a new version is on the heap");
        };
        let p = p.clone();
        assert!(r.heap_bytes() > 0);
        r.settle(1, &p, 8);
        assert!(matches!(r.keep(1, Fresh::NONE), Keep::Stored(8)));
        // A copy shares the stored chunks; adopted by another store it reads them first.
        let mut copy = r.clone();
        let other: Arc<dyn ChunkSource> = Arc::new(Src(Default::default()));
        copy.adopt(&other, 1, 0);
        assert_eq!(copy.get(0).to_bits(), vals[0].to_bits());
        assert!(matches!(copy.keep(0, Fresh::NONE), Keep::Packed(_)));
        // Segment 8 is not in the source: the chunk reads as unknown, never as other bytes.
        assert!(r.get(300).is_nan() && r.get(256).is_nan());
        assert_eq!(r.get(0).to_bits(), vals[0].to_bits());
    }

    /// An open chunk rebased on its stored version holds nothing; the next writes open it
    /// again on that version, holding only what they write, and read back over it.
    #[test]
    fn a_rebased_open_chunk_holds_only_what_is_written_after() {
        let vals = mixed_values(400, 11);
        let mut r = Rows::unknown(1000, 1);
        for (i, &v) in vals.iter().enumerate().take(300) {
            r.set(i, v);
        }
        // Chunk 1 (rows 256..512) is open with 44 values: store its version as a checkpoint
        // would, in segment 9.
        let Keep::Values(v) = r.keep(1, Fresh::NONE) else {
            panic!("the open chunk's values");
        };
        let mut b = Vec::new();
        encode_values(&v, &mut b);
        let src: Arc<dyn ChunkSource> = Arc::new(Src([((9, 1), b)].into_iter().collect()));
        r.adopt(&src, 1, 0);
        let before = r.heap_bytes();
        r.rebase(0, 9);
        assert_eq!(r.heap_bytes(), before, "chunk 0 is not the open one");
        r.rebase(1, 9);
        assert!(r.heap_bytes() < before, "{} of {before}", r.heap_bytes());
        assert!(matches!(r.keep(1, Fresh::NONE), Keep::Stored(9)));
        for (i, &v) in vals.iter().enumerate().skip(300) {
            r.set(i, v);
        }
        let mut want = vals.clone();
        want.resize(1000, crate::num::DNAN);
        assert!(
            bits(&r.to_vec()) == bits(&want),
            "read back over the stored version"
        );
        // Only rows a replay from a snapshot after the rebase rewrites were written since: the
        // stored version is what the checkpoint keeps.
        let fresh = Fresh {
            first: 300,
            count: 100,
        };
        assert!(matches!(r.keep(1, fresh), Keep::Stored(9)));
        let Keep::Values(v) = r.keep(1, Fresh::NONE) else {
            panic!("the open chunk's values");
        };
        assert_eq!(bits(&v[..144]), bits(&vals[256..400]));
        assert_eq!(
            r.open.as_ref().map(|o| o.len()),
            Some(100),
            "the values written after the rebase"
        );
        r.seal();
        assert!(bits(&r.to_vec()) == bits(&want), "sealed");
    }

    /// A source whose segments 20 and up hold pieces.
    struct PieceSrc(std::collections::HashMap<(u32, u32), Vec<u8>>);

    impl ChunkSource for PieceSrc {
        fn chunk(&self, seg: u32, key: (u64, u32, u32)) -> Option<(SharedBytes, usize, usize)> {
            let b = self.0.get(&(seg, key.2))?.clone();
            let len = b.len();
            Some((Arc::new(b), 0, len))
        }
        fn pieces(&self, seg: u32) -> bool {
            seg >= 20
        }
    }

    /// A chunk stored as a whole first piece and pieces over it reads as their values laid
    /// over each other; a chain that points forward, is too long, or has a damaged link reads
    /// as unknown, never as other values.
    #[test]
    fn pieces_read_back_over_the_pieces_before_them() {
        let vals = mixed_values(256, 21);
        let mut whole = Vec::new();
        encode_piece(0, 0, &vals[..100], &mut whole);
        // A first piece must be the whole chunk.
        assert!(piece_head(&whole, 256).is_err());
        whole.clear();
        let mut first = vals.clone();
        first[100..].fill(crate::num::DNAN);
        encode_piece(0, 0, &first, &mut whole);
        let mut p1 = Vec::new();
        encode_piece(100, 20, &vals[100..180], &mut p1);
        let mut p2 = Vec::new();
        encode_piece(180, 21, &vals[180..256], &mut p2);
        let h = piece_head(&p2, 256).unwrap();
        assert_eq!((h.start, h.n, h.prev), (180, 76, 21));
        let chunks = [((20, 0), whole), ((21, 0), p1.clone()), ((22, 0), p2)];
        let src: Arc<dyn ChunkSource> = Arc::new(PieceSrc(chunks.iter().cloned().collect()));
        let mut r = Rows::from_parts(256, 1, vec![Part::InSegments]).unwrap();
        r.adopt(&src, 1, 0);
        assert!(r.place(0, 22));
        assert_eq!(bits(&r.to_vec()), bits(&vals));
        // Flattened for a copy: the values packed whole.
        let mut back = Vec::new();
        decode_values(&r.packed_bytes(0).unwrap(), 256, &mut back).unwrap();
        assert_eq!(bits(&back), bits(&vals));
        // Read through segment 21: the first two pieces.
        assert!(r.place(0, 21));
        assert_eq!(bits(&r.to_vec()[..180]), bits(&vals[..180]));
        assert!(r.get(200).is_nan());
        // A piece whose link points at itself or a newer segment, a damaged link, a piece
        // past its chunk: unknown.
        let mut bad = Vec::new();
        encode_piece(100, 23, &vals[100..180], &mut bad);
        let mut gone = Vec::new();
        encode_piece(100, 19, &vals[100..180], &mut gone);
        let mut past = Vec::new();
        encode_piece(250, 20, &vals[100..180], &mut past);
        for (seg, b) in [(23, bad), (24, gone), (25, past)] {
            let mut m: std::collections::HashMap<(u32, u32), Vec<u8>> =
                chunks.iter().cloned().collect();
            m.insert((seg, 0), b);
            let src: Arc<dyn ChunkSource> = Arc::new(PieceSrc(m));
            let mut r = Rows::from_parts(256, 1, vec![Part::InSegments]).unwrap();
            r.adopt(&src, 1, 0);
            assert!(r.place(0, seg));
            assert!(r.to_vec().iter().all(|v| v.is_nan()), "segment {seg}");
        }
        // A chain longer than a read follows: unknown.
        let mut m: std::collections::HashMap<(u32, u32), Vec<u8>> = chunks.into_iter().collect();
        let top = 22 + MAX_PIECE_LINKS + 1;
        for seg in 23..=top {
            let mut b = Vec::new();
            encode_piece(180, seg - 1, &vals[180..256], &mut b);
            m.insert((seg, 0), b);
        }
        let src: Arc<dyn ChunkSource> = Arc::new(PieceSrc(m));
        let mut r = Rows::from_parts(256, 1, vec![Part::InSegments]).unwrap();
        r.adopt(&src, 1, 0);
        assert!(r.place(0, top));
        assert!(r.get(0).is_nan());
        assert!(r.place(0, 30));
        assert_eq!(r.get(0).to_bits(), vals[0].to_bits());
    }

    /// Archives that share a table and get the same chunks placed share the result; others
    /// get their own; every value reads back from the segment placed.
    #[test]
    fn placing_shared_tables_keeps_them_shared() {
        let vals = mixed_values(1000, 9);
        let mut packed = std::collections::HashMap::new();
        for c in 0..4u32 {
            let mut b = Vec::new();
            let c0 = c as usize * 256;
            encode_values(&vals[c0..(c0 + 256).min(1000)], &mut b);
            packed.insert((7, c), b);
        }
        let src: Arc<dyn ChunkSource> = Arc::new(Src(packed));
        let mut pool = SegPool::default();
        let mut rows: Vec<Rows> = (0..3)
            .map(|_| {
                let parts = (0..4).map(|_| Part::InSegments).collect();
                let mut r = Rows::from_parts(1000, 1, parts).unwrap();
                r.adopt(&src, 1, 0);
                r.share(&mut pool);
                r
            })
            .collect();
        assert_eq!(rows[0].table().0, rows[2].table().0, "shared before");
        let mut memo = PlaceMemo::default();
        for r in &mut rows[..2] {
            r.place_many(&[0, 1, 2, 3], 7, &mut memo);
        }
        rows[2].place_many(&[0, 1], 7, &mut memo);
        assert_eq!(
            rows[0].table().0,
            rows[1].table().0,
            "the same placement, one table"
        );
        assert_ne!(rows[0].table().0, rows[2].table().0);
        assert_eq!(rows[0].unplaced(), None);
        assert_eq!(rows[2].unplaced(), Some(2));
        assert_eq!(bits(&rows[1].to_vec()), bits(&vals));
        assert_eq!(bits(&rows[2].to_vec()[..512]), bits(&vals[..512]));
    }

    #[test]
    fn parts_rebuild_the_rows_and_stored_chunks_stay_stored_when_rewritten_alike() {
        let vals = mixed_values(1000, 3);
        let mut r = Rows::from_values(1, &vals);
        let parts: Vec<Part> = (0..r.chunk_count())
            .map(|c| match r.keep(c, Fresh::NONE) {
                Keep::Fill(b) => Part::Fill(b),
                Keep::Packed(p) => Part::Packed(p.bytes().to_vec(), 9),
                Keep::Values(v) => Part::Values(v.to_vec()),
                Keep::Stored(_) => Part::InSegments,
            })
            .collect();
        let mut back = Rows::from_parts(1000, 1, parts).unwrap();
        assert_eq!(bits(&back.to_vec()), bits(&vals));
        // Replay writes the same values again: the chunk is still the stored version.
        for (row, &v) in vals.iter().enumerate().take(300).skip(256) {
            back.set(row, v);
        }
        back.seal();
        assert_eq!(stored_seg(back.keep(1, Fresh::NONE)), Some(Some(9)));
        // A different value makes a new version, not stored.
        back.set(260, 1.0);
        back.seal();
        assert_eq!(stored_seg(back.keep(1, Fresh::NONE)), Some(None));
        // A copy is not marked: marks belong to the store that stored the chunk.
        assert_eq!(stored_seg(back.clone().keep(0, Fresh::NONE)), Some(None));
        assert_eq!(stored_seg(back.keep(0, Fresh::NONE)), Some(Some(9)));
        // Wrong shapes are errors.
        assert!(Rows::from_parts(1000, 1, vec![Part::Fill(0)]).is_err());
        r.seal();
        let bad = (0..4).map(|_| Part::Packed(vec![1, 2, 3], 1)).collect();
        assert!(Rows::from_parts(1000, 1, bad).is_err());
    }

    #[test]
    fn chunks_left_in_a_shared_buffer_read_back_exactly_and_stay_off_the_heap() {
        let vals = mixed_values(1000, 3);
        let r = Rows::from_values(1, &vals);
        // The packed chunks laid end to end in one buffer, as a segment file holds them.
        let mut file = vec![0xAAu8; 7];
        let mut places = Vec::new();
        for c in 0..r.chunk_count() {
            match r.keep(c, Fresh::NONE) {
                Keep::Packed(p) => {
                    places.push(Some((file.len(), p.bytes().len())));
                    file.extend_from_slice(p.bytes());
                }
                _ => places.push(None),
            }
        }
        let buf: SharedBytes = Arc::new(file);
        let parts: Vec<Part> = (0..r.chunk_count())
            .map(|c| match (places[c], r.keep(c, Fresh::NONE)) {
                (Some((start, len)), _) => Part::Shared {
                    buf: buf.clone(),
                    start,
                    len,
                    seg: 4,
                },
                (None, Keep::Fill(b)) => Part::Fill(b),
                (None, _) => unreachable!("sealed rows are packed or filled"),
            })
            .collect();
        let back = Rows::from_parts(1000, 1, parts).unwrap();
        assert_eq!(bits(&back.to_vec()), bits(&vals));
        assert!(
            back.heap_bytes() < r.heap_bytes() / 4,
            "{} vs {}",
            back.heap_bytes(),
            r.heap_bytes()
        );
        assert_eq!(stored_seg(back.keep(0, Fresh::NONE)), Some(Some(4)));
        // A range past the buffer's end is refused, not read.
        let bad = (0..r.chunk_count())
            .map(|_| Part::Shared {
                buf: buf.clone(),
                start: 1 << 20,
                len: 8,
                seg: 4,
            })
            .collect();
        assert!(Rows::from_parts(1000, 1, bad).is_err());
    }

    #[test]
    fn unknown_rows_take_almost_no_memory() {
        // gmetad's longest archive: 52,704 rows, 421 KB as an .rrd file's rows.
        let r = Rows::filled(52_704, 1, f64::NAN);
        assert!(r.heap_bytes() < 4_000, "{}", r.heap_bytes());
        let mut w = r.clone();
        for i in 0..1000 {
            w.set(i, (i % 10) as f64 / 4.0);
        }
        w.seal();
        assert!(w.heap_bytes() < 8_000, "{}", w.heap_bytes());
    }
}
