//! Values packed in blocks (docs/FORMAT.md, "RRD image"): runs of repeats, short decimals,
//! ratios of small divisors within a few units in the last place, packed runs, literals;
//! each run written in the smallest of its forms. Hand-written: the exact bit patterns and
//! the divisors RRD consolidation makes are the point.

use super::*;

/// Shortest run of equal values worth a repeat block.
pub(super) const MIN_RUN: usize = 3;
/// Shortest run of short decimals worth a decimal block.
pub(super) const MIN_DECIMALS: usize = 4;
/// Most fraction digits a decimal block may have.
pub(super) const MAX_SCALE: u8 = 6;
pub(super) const POW10: [f64; MAX_SCALE as usize + 1] = [1.0, 10.0, 100.0, 1e3, 1e4, 1e5, 1e6];

pub(super) const BLOCK_LITERAL: u64 = 0;
pub(super) const BLOCK_REPEAT: u64 = 1;
pub(super) const BLOCK_DECIMAL: u64 = 2;
pub(super) const BLOCK_RATIO: u64 = 3;
/// The header byte of an extended block: `0 << 2 | BLOCK_LITERAL`, which no other block has
/// (their `n` is at least 1). A varint `n << 2 | ext` follows.
pub(super) const EXTENDED: u8 = 0;
/// Extended kind: a packed block (ratios with their residuals bit-packed).
pub(super) const EXT_PACKED: u64 = 0;
/// A packed block's predictor: none (`m_i` itself is packed) or the previous `m`.
pub(super) const PRED_NONE: u8 = 0;
pub(super) const PRED_DELTA: u8 = 1;
/// Widest field of a packed block: the bits of a `u64`.
pub(super) const MAX_WIDTH: u8 = 64;
/// Widest `zz(u)` of a packed block: `|u| <= MAX_ULPS` takes 7 bits.
pub(super) const MAX_ULP_WIDTH: u8 = 7;
/// Most values in a block written by [`put_numbered`]: a packed block's values are bounded
/// by this rather than by its bytes (fields of 0 bits take none), and each block of a long
/// run gets the field widths of its own values.
pub(super) const MAX_PACKED: usize = CHUNK_VALUES;

/// Shortest run of values worth a ratio block.
pub(super) const MIN_RATIO: usize = 3;
/// Largest distance, in units in the last place, between a value and its ratio `m / d`.
pub(super) const MAX_ULPS: i64 = 63;
/// Largest `k` of a ratio block's divisor `k * 10^scale` (so that the divisor is exact).
pub(super) const MAX_K: u64 = 1 << 24;
/// The divisors `k` a ratio block is tried with, before each scale: what RRD rows are
/// divided by (averages of `pdp_cnt` values, rates over steps of seconds, minutes, hours).
pub(super) const RATIO_KS: [u16; 40] = [
    1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 12, 14, 15, 16, 18, 20, 24, 25, 30, 36, 40, 45, 48, 50, 60, 72,
    80, 90, 96, 100, 120, 144, 180, 240, 288, 300, 360, 600, 900, 3600,
];
/// Values looked ahead to choose among the divisors that fit a block's first value.
pub(super) const RATIO_LOOKAHEAD: usize = 16;
/// After a failed search for a divisor, values written literally before the next search,
/// doubled after each failure in a row (a chunk of noisy doubles costs a few searches, not
/// one a value: 5 µs for 256 values instead of 35).
pub(super) const RATIO_BACKOFF: usize = 8;

/// How a run of numbered values (`m_i / d`, moved by `u_i` units in the last place) is
/// written: the block that takes the fewest bytes of those that can hold it.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(super) enum Form {
    /// Kind 2: varint deltas of `m` (every `u_i` is 0 and the divisor is `10^scale`).
    Decimal,
    /// Kind 3: varint deltas of `m` and varint `u`.
    Ratio,
    /// Extended, packed, with its predictor.
    Packed(u8),
}

/// Residual `i` of a packed block of predictor `pred`: `m_i`, or `m_i - m_(i-1)` (i >= 1).
pub(super) fn residual(ms: &[i64], i: usize, pred: u8) -> i64 {
    if pred == PRED_DELTA {
        ms[i].wrapping_sub(ms[i - 1])
    } else {
        ms[i]
    }
}

/// The residuals a packed block of predictor `pred` packs: every `m_i` (none) or, after the
/// first, `m_i - m_(i-1)` (delta); their least value and the width of the offsets above it.
pub(super) fn packed_residuals(ms: &[i64], pred: u8) -> (i64, u8) {
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
pub(super) fn choose_form(k: u64, ms: &[i64], us: &[i64]) -> Form {
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
pub(super) fn form_cost(form: Form, k: u64, ms: &[i64], us: &[i64]) -> usize {
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
pub(super) fn put_numbered(out: &mut Vec<u8>, k: u64, scale: u8, ms: &[i64], us: &[i64]) {
    for (ms, us) in ms.chunks(MAX_PACKED).zip(us.chunks(MAX_PACKED)) {
        put_numbered_block(out, k, scale, ms, us);
    }
}

pub(super) fn put_numbered_block(out: &mut Vec<u8>, k: u64, scale: u8, ms: &[i64], us: &[i64]) {
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
pub(super) fn as_decimal(v: f64, scale: u8) -> Option<i64> {
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
pub(super) fn near(x: f64, m: i64) -> bool {
    m == 0 || (x - m as f64).abs() <= 4e-14 * (m as f64).abs()
}

/// `x.round()` (halves away from zero) as an integer, if its magnitude is below 9.0e15 (so
/// below 2^53: exact in a double); `None` for larger values, infinities and NaN. Inline
/// arithmetic instead of libm's `round`, a call on the baseline x86-64 target: the encoders
/// try up to a few hundred divisors for a block's first value, and the call was a tenth of
/// their time.
#[inline]
pub(super) fn round_small(x: f64) -> Option<i64> {
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
pub(super) fn min_scale(v: f64) -> Option<u8> {
    (0..=MAX_SCALE).find(|&s| as_decimal(v, s).is_some())
}

/// A ratio block's divisor: `k * 10^scale`, exact in a double.
pub(super) fn ratio_divisor(k: u64, scale: u8) -> f64 {
    k as f64 * POW10[scale as usize]
}

/// The value `m / d` moved by `u` units in the last place: what a ratio block's entry
/// `(m, u)` stands for.
pub(super) fn ratio_value(m: i64, d: f64, u: i64) -> f64 {
    f64::from_bits((m as f64 / d).to_bits().wrapping_add(u as u64))
}

/// `(m, u)` with `ratio_value(m, d, u)` bit for bit `v`, `|m| < 2^53`, `|u| <= MAX_ULPS`:
/// `v` is within a few units in the last place of the ratio `m / d` (a sum of short
/// decimals divided, a rate over whole seconds: what rrdtool's consolidation makes).
pub(super) fn as_ratio(v: f64, d: f64) -> Option<(i64, i64)> {
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
pub(super) fn ratio_run(vals: &[f64], d: f64) -> usize {
    vals.iter()
        .take_while(|&&v| as_ratio(v, d).is_some())
        .count()
}

/// Every divisor `(k, scale, k * 10^scale)` of [`RATIO_KS`] and the scales, smallest first.
pub(super) fn ratio_divisors() -> &'static [(u64, u8, f64)] {
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
pub(super) fn best_ratio(vals: &[f64]) -> Option<(u64, u8, usize)> {
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

/// What [`encode_values`] writes for `n` values that are all `v`, without them: one repeat
/// block (a fresh archive's rows, all unknown, written when its series is created).
pub fn encode_uniform(n: usize, v: f64, out: &mut Vec<u8>) {
    if n >= MIN_RUN {
        put_varint(out, ((n as u64) << 2) | BLOCK_REPEAT);
        out.extend_from_slice(&v.to_le_bytes());
    } else {
        encode_values(&vec![v; n], out);
    }
}

pub(super) fn encode_values_with(
    vals: &[f64],
    out: &mut Vec<u8>,
    ms: &mut Vec<i64>,
    us: &mut Vec<i64>,
) {
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
