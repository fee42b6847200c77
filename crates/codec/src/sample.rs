//! The sample codec: a series' accepted `Sample`s as a compact bit stream, with per-series
//! state carried from one commit to the next.
//!
//! A [`SeriesCodec`] is the state both the writer and the reader hold for one series. It is
//! *seeded* from the series' `Rrd` ([`SeriesCodec::from_rrd`]: `last_up`, `last_up_usec` and
//! each DS's `last_ds`) whenever a reader could start decoding there: when the series is
//! created and at every checkpoint. Between seeds it evolves only through
//! [`SeriesCodec::encode`] / [`SeriesCodec::decode`], so a reader holding the checkpointed
//! `Rrd` can decode every later commit record. The bit layout of one sample is in
//! docs/FORMAT.md ("Sample bit stream"); in short:
//!
//! - time: `0` when the step and the microseconds repeat; else `1`, Exp-Golomb(0) of the
//!   zigzagged delta-of-delta in seconds, then `0` (same usec) or `1` + EG(k) of the
//!   zigzagged usec change (`k` adapts to the size of recent changes, like the values').
//! - each DS value: `0` + Rice(k) residual for a canonical decimal with the previous decimal's
//!   scale (the prediction is the previous value, or previous + previous delta for trending
//!   series such as counters; both sides pick the predictor and `k` from the same running
//!   statistics, so no bits are spent on either); `10` for `U`; `110` + scale + value for a
//!   decimal with a new scale; `1110` + raw bytes for text that is not a canonical decimal;
//!   `1111` for a repeat of the previous raw text.
//!
//! Every decimal of the first kind also updates the figures of a *row prediction*
//! ([`row_of`]): a block of version 3 stores a series' one sample as the residuals against
//! it, which can use a slow running mean of the changes (a row needs no Rice order, and
//! streams keep the prediction older records were written with).

use crate::block::{BitSpan, Row, MAX_ROW_FIELDS};
use crate::bytes::DecodeError;
use crate::decimal::Decimal;
use bitio::msb::{order, BitReader, BitWriter};
use bitio::{unzigzag, zigzag};
use rrd::{Rrd, Sample};

/// Initial microsecond magnitude: a mean change of 1024 (order 10).
const USEC_MAG_SEED: u64 = 8 << 10;

/// Per-DS state of the value predictor.
#[derive(Debug, Clone, PartialEq)]
struct DsCodec {
    /// The exact text of the previous value (`last_ds`).
    last: compact_str::CompactString,
    /// The previous decimal value (kept across `U` and raw values).
    num: Option<Decimal>,
    /// Mantissa change at the previous decimal of the same scale.
    delta: i64,
    /// Running cost (sum of residual bit lengths, decaying by 1/8) of predicting "previous".
    /// At most 8 x 64: 16 bits hold it.
    cost_delta: u16,
    /// The same for predicting "previous + previous delta".
    cost_dod: u16,
    /// The same for predicting "previous + trend".
    cost_trend: u16,
    /// 8 x the running mean of changes (decaying by 1/8).
    trend8: i64,
    /// Running magnitude of the residuals sent (8 x their mean); picks the Exp-Golomb order.
    mag: u64,
    /// 64 x a slow running mean of changes (decaying by 1/64): a row's fourth predictor.
    slow64: i64,
    /// For each row predictor (previous, + delta, + trend, + slow mean), 32 x the running
    /// mean (decaying by 1/32) of the zigzagged residual it would have left, each clamped
    /// to 2^26; a row predicts with the smallest.
    row_cost: [u32; 4],
    /// The encoder's row prediction of the latest value (for [`row_of`]). Not state: a
    /// decoder never needs it, and codecs compare equal whatever it holds.
    row_pred: Scratch,
}

/// An encoder's working value kept beside a codec's state, left out of its comparison.
#[derive(Debug, Clone, Copy, Default)]
struct Scratch(i64);

impl PartialEq for Scratch {
    fn eq(&self, _: &Scratch) -> bool {
        true
    }
}

impl DsCodec {
    fn seed(last: &str) -> Self {
        DsCodec {
            last: last.into(),
            num: Decimal::parse(last),
            delta: 0,
            cost_delta: 0,
            cost_dod: 0,
            cost_trend: 0,
            trend8: 0,
            mag: 0,
            slow64: 0,
            row_cost: [0; 4],
            row_pred: Scratch::default(),
        }
    }

    fn order(&self) -> u32 {
        order(self.mag)
    }

    /// The trend: the running mean of recent changes.
    fn trend(&self) -> i64 {
        self.trend8 / 8
    }

    fn prediction(&self, prev: i64) -> i64 {
        if self.cost_trend < self.cost_delta.min(self.cost_dod) {
            prev.wrapping_add(self.trend())
        } else if self.cost_dod < self.cost_delta {
            prev.wrapping_add(self.delta)
        } else {
            prev
        }
    }

    /// What a row's residual is taken against (block version 3): the previous value plus
    /// the change of whichever of [`DsCodec::row_offsets`] left the smallest residuals of
    /// late. Streams keep [`DsCodec::prediction`] (records before version 3 depend on it);
    /// a row has no Rice order to fit and can use the slow mean, which predicts a counter
    /// of steady rate with less noise than the trend.
    fn row_prediction(&self, prev: i64) -> i64 {
        let c = &self.row_cost;
        let best = (1..4).fold(0, |b, j| if c[j] < c[b] { j } else { b });
        prev.wrapping_add(self.row_offsets()[best])
    }

    /// The changes the row predictors add to the previous value.
    fn row_offsets(&self) -> [i64; 4] {
        [0, self.delta, self.trend(), self.slow64 / 64]
    }

    /// Forget the changes at a decimal of a new scale.
    fn restart(&mut self) {
        self.delta = 0;
        self.trend8 = 0;
        self.slow64 = 0;
    }

    /// Learn from a decimal `m` of the previous scale whose residual `u` was sent.
    fn learn(&mut self, prev: i64, m: i64, u: u64) {
        let bitlen = |v: u64| (64 - v.leading_zeros()) as u16;
        let d = m.wrapping_sub(prev);
        // The residual each predictor would have left (the stream's three are the rows'
        // first three).
        let r = self.row_offsets().map(|off| zigzag(d.wrapping_sub(off)));
        for (c, r) in self.row_cost.iter_mut().zip(r) {
            *c = *c - (*c >> 5) + r.min(1 << 26) as u32;
        }
        self.slow64 = self
            .slow64
            .saturating_sub(self.slow64 / 64)
            .saturating_add(d);
        self.cost_delta = self.cost_delta - (self.cost_delta >> 3) + bitlen(r[0]);
        self.cost_dod = self.cost_dod - (self.cost_dod >> 3) + bitlen(r[1]);
        self.cost_trend = self.cost_trend - (self.cost_trend >> 3) + bitlen(r[2]);
        self.trend8 = self
            .trend8
            .saturating_sub(self.trend8 / 8)
            .saturating_add(d);
        self.mag = self.mag - (self.mag >> 3) + u.min(1 << 40);
        self.delta = d;
    }
}

/// Why a sample could not be encoded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EncodeError {
    /// The sample has a different number of values than the series has DS.
    ValueCount { expected: usize, got: usize },
}

impl std::fmt::Display for EncodeError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            EncodeError::ValueCount { expected, got } => {
                write!(f, "sample has {got} values, series has {expected} DS")
            }
        }
    }
}

impl std::error::Error for EncodeError {}

/// The encoder/decoder state of one series (see the module documentation).
#[derive(Debug, Clone, PartialEq)]
pub struct SeriesCodec {
    time: i64,
    usec: i64,
    /// Seconds between the previous two samples (0 right after a seed).
    step: i64,
    /// Running magnitude (8 x mean) of microsecond changes; picks their Exp-Golomb order.
    umag: u64,
    ds: Vec<DsCodec>,
}

impl SeriesCodec {
    /// State seeded from a last update time and the `last_ds` text of each DS.
    pub fn seed<'a>(time: i64, usec: i64, last_ds: impl IntoIterator<Item = &'a str>) -> Self {
        SeriesCodec {
            time,
            usec,
            step: 0,
            umag: USEC_MAG_SEED,
            ds: last_ds.into_iter().map(DsCodec::seed).collect(),
        }
    }

    /// State seeded from an RRD as it stands (at its creation or at a checkpoint).
    pub fn from_rrd(rrd: &Rrd) -> Self {
        SeriesCodec::seed(
            rrd.last_up,
            rrd.last_up_usec,
            rrd.pdp.iter().map(|p| p.last_ds.as_str()),
        )
    }

    fn usec_order(&self) -> u32 {
        order(self.umag)
    }

    fn learn_usec(&mut self, u: u64) {
        self.umag = self.umag - (self.umag >> 3) + u.min(1 << 40);
    }

    pub fn ds_count(&self) -> usize {
        self.ds.len()
    }

    /// Append one sample to `w` and advance the state.
    pub fn encode(&mut self, w: &mut BitWriter, s: &Sample) -> Result<u32, EncodeError> {
        self.encode_noted(w, s).map(|(time_bits, _)| time_bits)
    }

    /// [`SeriesCodec::encode`], returning the bits the time took and a note for
    /// [`row_of`]: non-zero when the sample can be a block's row (the microseconds repeat
    /// and every value continues its decimal, at most [`MAX_ROW_FIELDS`] of them), holding
    /// the Rice order each value was coded with.
    pub fn encode_noted(
        &mut self,
        w: &mut BitWriter,
        s: &Sample,
    ) -> Result<(u32, u32), EncodeError> {
        if s.values.len() != self.ds.len() {
            return Err(EncodeError::ValueCount {
                expected: self.ds.len(),
                got: s.values.len(),
            });
        }
        let step = s.time.wrapping_sub(self.time);
        let dod = step.wrapping_sub(self.step);
        let before = w.bit_len();
        let mut rowable = s.usec == self.usec && (1..=MAX_ROW_FIELDS).contains(&self.ds.len());
        if dod == 0 && s.usec == self.usec {
            w.bit(false);
        } else {
            w.bit(true);
            w.exp_golomb(zigzag(dod), 0);
            if s.usec == self.usec {
                w.bit(false);
            } else {
                w.bit(true);
                let u = zigzag(s.usec.wrapping_sub(self.usec));
                w.exp_golomb(u, self.usec_order());
                self.learn_usec(u);
            }
        }
        let time_bits = (w.bit_len() - before) as u32;
        self.time = s.time;
        self.usec = s.usec;
        self.step = step;
        let mut note = 1u32 << 31;
        for (i, (ds, v)) in self.ds.iter_mut().zip(&s.values).enumerate() {
            match encode_value(ds, w, v) {
                Some(k) if rowable => note |= k << (6 * i),
                _ => rowable = false,
            }
        }
        Ok((time_bits, if rowable { note } else { 0 }))
    }

    /// Read one sample from `r` and advance the state.
    pub fn decode(&mut self, r: &mut BitReader) -> Result<Sample, DecodeError> {
        let mut s = Sample {
            time: 0,
            usec: 0,
            values: Vec::new(),
        };
        self.decode_into(r, &mut s)?;
        Ok(s)
    }

    /// [`SeriesCodec::decode`] into an existing sample, reusing its strings.
    pub fn decode_into(&mut self, r: &mut BitReader, out: &mut Sample) -> Result<(), DecodeError> {
        self.decode_with(&mut Src::Bits(r), out, None)
    }

    /// [`SeriesCodec::decode_into`], and with `parsed` each value's decimal and number (as
    /// `rrd::num::strtod` reads its text), where the codec knows it: set for a decimal,
    /// `None` for `U` and raw text, left as it was for a repeat (the caller keeps them from
    /// one sample to the next of one series, starting with every entry `None`). A decimal
    /// of a DS whose `lazy` entry is set is not spelled: neither in `out` (whose text for it
    /// is stale) nor in the codec (its `stale` entry is set; [`SeriesCodec::spell_stale`]).
    fn decode_with(
        &mut self,
        src: &mut Src<'_, '_>,
        out: &mut Sample,
        mut parsed: Option<Parsed<'_>>,
    ) -> Result<(), DecodeError> {
        match src {
            Src::Bits(r) => {
                if r.bit()? {
                    let dod = unzigzag(r.exp_golomb(0)?);
                    self.step = self.step.wrapping_add(dod);
                    if r.bit()? {
                        let u = r.exp_golomb(self.usec_order())?;
                        self.learn_usec(u);
                        self.usec = self.usec.wrapping_add(unzigzag(u));
                    }
                }
            }
            Src::Row(row) => {
                if row.n != self.ds.len() {
                    return Err(DecodeError::new(
                        0,
                        "a row's values and the series' DS differ",
                    ));
                }
                self.step = self.step.wrapping_add(row.dod);
            }
        }
        self.time = self.time.wrapping_add(self.step);
        out.time = self.time;
        out.usec = self.usec;
        out.values.resize_with(self.ds.len(), String::new);
        for (i, (ds, v)) in self.ds.iter_mut().zip(out.values.iter_mut()).enumerate() {
            let Some(p) = parsed.as_mut() else {
                src.value(ds, i, true)?;
                v.clear();
                v.push_str(&ds.last);
                continue;
            };
            let lazy = p.lazy.get(i).copied().unwrap_or(false);
            match src.value(ds, i, !lazy)? {
                Read::Decimal(d) => {
                    p.nums[i] = rrd::num::decimal_value(d.mantissa, d.scale).map(|value| {
                        rrd::update::Number {
                            value,
                            mantissa: d.mantissa,
                            scale: d.scale,
                        }
                    });
                    if lazy {
                        p.stale[i] = true;
                        if p.nums[i].is_none() {
                            // No number (2^53 or more): the text is needed after all.
                            d.format_into(&mut ds.last);
                            p.stale[i] = false;
                        }
                    }
                }
                Read::Text => {
                    p.nums[i] = None;
                    p.stale[i] = false;
                }
                Read::Repeat => {}
            }
            if !p.stale[i] {
                v.clear();
                v.push_str(&ds.last);
            }
        }
        Ok(())
    }

    /// Spell in the codec's state the decimals [`SeriesCodec::decode_with`] left unspelled.
    fn spell_stale(&mut self, stale: &mut [bool]) {
        for (ds, st) in self.ds.iter_mut().zip(stale) {
            if std::mem::take(st) {
                if let Some(d) = ds.num {
                    d.format_into(&mut ds.last);
                }
            }
        }
    }
}

/// Append one value; returns the Rice order when it continued the decimal (kind `0`).
fn encode_value(ds: &mut DsCodec, w: &mut BitWriter, v: &str) -> Option<u32> {
    let dec = Decimal::parse(v);
    let mut k = None;
    match (dec, ds.num) {
        (Some(d), Some(prev)) if d.scale == prev.scale => {
            let u = zigzag(d.mantissa.wrapping_sub(ds.prediction(prev.mantissa)));
            w.bit(false);
            let order = ds.order();
            w.rice(u, order);
            k = Some(order);
            ds.row_pred = Scratch(ds.row_prediction(prev.mantissa));
            ds.learn(prev.mantissa, d.mantissa, u);
            ds.num = Some(d);
        }
        (Some(d), _) => {
            w.bits(0b110, 3);
            w.bits(d.scale as u64, 5);
            w.exp_golomb(zigzag(d.mantissa), 6);
            ds.num = Some(d);
            ds.restart();
        }
        (None, _) if v == "U" => w.bits(0b10, 2),
        (None, _) if v == ds.last => w.bits(0b1111, 4),
        (None, _) => {
            w.bits(0b1110, 4);
            w.exp_golomb(v.len() as u64, 3);
            for &b in v.as_bytes() {
                w.bits(b as u64, 8);
            }
        }
    }
    if ds.last != v {
        ds.last.clear();
        ds.last.push_str(v);
    }
    k
}

/// The row of a stream of one sample that [`SeriesCodec::encode_noted`] noted as one
/// (`note` non-zero), `codec` having encoded it last; `None` when it is not. With
/// `row_pred` (block version 3) the values' residuals are taken against the row predictor
/// ([`DsCodec::row_prediction`]), else against the stream's.
pub fn row_of(
    chunk: &[u8],
    bits: u64,
    note: u32,
    codec: &SeriesCodec,
    row_pred: bool,
) -> Option<Row> {
    let values = codec.ds.len();
    if note == 0 || !(1..=MAX_ROW_FIELDS).contains(&values) {
        return None;
    }
    let mut r = BitReader::slice(chunk, 0, bits, 0);
    let mut row = Row {
        n: values,
        row_pred,
        ..Row::default()
    };
    if r.bit().ok()? {
        row.dod = unzigzag(r.exp_golomb(0).ok()?);
        if r.bit().ok()? {
            return None;
        }
    }
    row.time_bits = r.position() as u32;
    for (i, ds) in codec.ds.iter().enumerate() {
        if r.bit().ok()? {
            return None;
        }
        row.u[i] = r.rice((note >> (6 * i)) & 63).ok()?;
        if row_pred {
            row.u[i] = zigzag(ds.num?.mantissa.wrapping_sub(ds.row_pred.0));
        }
    }
    r.at_end().then_some(row)
}

/// The decimal that continues `ds`'s previous one, `prev`, by the zigzagged residual `u`
/// (kind `0`): against the stream's prediction, or with `row_pred` a row's.
fn residual(ds: &mut DsCodec, prev: Decimal, u: u64, row_pred: bool, spell: bool) -> Read {
    let (m, u) = if row_pred {
        let m = ds.row_prediction(prev.mantissa).wrapping_add(unzigzag(u));
        (m, zigzag(m.wrapping_sub(ds.prediction(prev.mantissa))))
    } else {
        (ds.prediction(prev.mantissa).wrapping_add(unzigzag(u)), u)
    };
    ds.learn(prev.mantissa, m, u);
    let d = Decimal {
        mantissa: m,
        scale: prev.scale,
    };
    ds.num = Some(d);
    if spell {
        d.format_into(&mut ds.last);
    }
    Read::Decimal(d)
}

/// Where a sample is decoded from: a stream, or a block's row.
enum Src<'r, 'b> {
    Bits(&'r mut BitReader<'b>),
    Row(&'r Row),
}

impl Src<'_, '_> {
    /// DS `i`'s value.
    fn value(&mut self, ds: &mut DsCodec, i: usize, spell: bool) -> Result<Read, DecodeError> {
        match self {
            Src::Bits(r) => decode_value(ds, r, spell),
            Src::Row(row) => match ds.num {
                Some(prev) => Ok(residual(ds, prev, row.u[i], row.row_pred, spell)),
                None => Err(DecodeError::new(
                    0,
                    "a row's value without a previous decimal",
                )),
            },
        }
    }
}

/// What [`decode_value`] read.
enum Read {
    Decimal(Decimal),
    /// `U` or raw text.
    Text,
    /// The previous text again.
    Repeat,
}

/// What [`SeriesCodec::decode_with`] gives beside the text, and its state for a series.
struct Parsed<'a> {
    lazy: &'a [bool],
    nums: &'a mut [Option<rrd::update::Number>],
    stale: &'a mut [bool],
}

/// Read one value; the text is left in `ds.last` (a decimal's only with `spell`).
fn decode_value(ds: &mut DsCodec, r: &mut BitReader, spell: bool) -> Result<Read, DecodeError> {
    if !r.bit()? {
        let Some(prev) = ds.num else {
            return Err(r.err("decimal residual without a previous decimal"));
        };
        let u = r.rice(ds.order())?;
        Ok(residual(ds, prev, u, false, spell))
    } else if !r.bit()? {
        ds.last.clear();
        ds.last.push('U');
        Ok(Read::Text)
    } else if !r.bit()? {
        let scale = r.bits(5)? as u8;
        let m = unzigzag(r.exp_golomb(6)?);
        let d = Decimal { mantissa: m, scale };
        ds.num = Some(d);
        ds.restart();
        if spell {
            d.format_into(&mut ds.last);
        }
        Ok(Read::Decimal(d))
    } else if r.bit()? {
        // A repeat: `last` already holds the text.
        Ok(Read::Repeat)
    } else {
        let len = r.exp_golomb(3)?;
        if len > r.remaining_bits() / 8 {
            return Err(r.err("raw value longer than the chunk"));
        }
        let mut bytes = Vec::with_capacity(len as usize);
        for _ in 0..len {
            bytes.push(r.bits(8)? as u8);
        }
        ds.last = compact_str::CompactString::from_utf8(&bytes)
            .map_err(|_| r.err("raw value is not UTF-8"))?;
        Ok(Read::Text)
    }
}

/// Encode `samples` as one byte-padded chunk, advancing `codec`.
pub fn encode_chunk(codec: &mut SeriesCodec, samples: &[Sample]) -> Result<Vec<u8>, EncodeError> {
    let mut w = BitWriter::new();
    for s in samples {
        codec.encode(&mut w, s)?;
    }
    Ok(w.into_bytes())
}

/// Decode `count` samples from one chunk, advancing `codec`, handing each to `f` (one
/// reused `Sample`, so replay allocates nothing per sample).
pub fn for_each_in_chunk<E: From<DecodeError>>(
    codec: &mut SeriesCodec,
    bytes: &[u8],
    count: u64,
    f: impl FnMut(&Sample) -> Result<(), E>,
) -> Result<(), E> {
    for_each_in(codec, &mut BitReader::new(bytes), count, f)
}

/// [`for_each_in_chunk`] from a reader (a series' range of a commit-wide block).
pub fn for_each_in<E: From<DecodeError>>(
    codec: &mut SeriesCodec,
    r: &mut BitReader,
    count: u64,
    mut f: impl FnMut(&Sample) -> Result<(), E>,
) -> Result<(), E> {
    let mut s = Sample {
        time: 0,
        usec: 0,
        values: Vec::new(),
    };
    for _ in 0..count {
        codec.decode_into(r, &mut s)?;
        f(&s)?;
    }
    Ok(())
}

/// [`for_each_in`], handing `f` each value's decimal and number as well, where the codec
/// knows it (`rrd::num::strtod` of its text, for `rrd::Rrd::apply_parsed`): replay reads
/// the decimals it decodes without parsing their text again. The decimals of the DS whose
/// `lazy` entry is set are not spelled at all: their text in the sample `f` gets is stale
/// (`f` must take them from the numbers; `apply_parsed` with `pending` does); the codec's
/// own copy is spelled once, when this returns.
pub fn for_each_parsed_in<E: From<DecodeError>>(
    codec: &mut SeriesCodec,
    r: &mut BitReader,
    count: u64,
    lazy: &[bool],
    f: impl FnMut(&Sample, &[Option<rrd::update::Number>]) -> Result<(), E>,
) -> Result<(), E> {
    parsed_from(codec, Src::Bits(r), count, lazy, f)
}

/// [`for_each_parsed_in`] for a series' place in a record: a stream (which must end where
/// its bits do, for a block's) or a block's row.
pub fn for_each_parsed_in_span<E: From<DecodeError>>(
    codec: &mut SeriesCodec,
    span: &BitSpan,
    count: u64,
    lazy: &[bool],
    f: impl FnMut(&Sample, &[Option<rrd::update::Number>]) -> Result<(), E>,
) -> Result<(), E> {
    if let Some(row) = span.read_row() {
        let row = row?;
        return parsed_from(codec, Src::Row(&row), count.min(1), lazy, f);
    }
    let mut r = span.reader();
    parsed_from(codec, Src::Bits(&mut r), count, lazy, f)?;
    if span.exact && !r.at_end() {
        return Err(r.err("its samples end before its bits in the block").into());
    }
    Ok(())
}

fn parsed_from<E: From<DecodeError>>(
    codec: &mut SeriesCodec,
    mut src: Src<'_, '_>,
    count: u64,
    lazy: &[bool],
    mut f: impl FnMut(&Sample, &[Option<rrd::update::Number>]) -> Result<(), E>,
) -> Result<(), E> {
    let mut s = Sample {
        time: 0,
        usec: 0,
        values: Vec::new(),
    };
    let n = codec.ds.len();
    let mut nums = vec![None; n];
    let mut stale = vec![false; n];
    let mut run = || -> Result<(), E> {
        for _ in 0..count {
            let parsed = Parsed {
                lazy,
                nums: &mut nums,
                stale: &mut stale,
            };
            codec.decode_with(&mut src, &mut s, Some(parsed))?;
            f(&s, &nums)?;
        }
        Ok(())
    };
    let res = run();
    codec.spell_stale(&mut stale);
    res
}

/// Decode `count` samples from one chunk, advancing `codec`.
pub fn decode_chunk(
    codec: &mut SeriesCodec,
    bytes: &[u8],
    count: usize,
) -> Result<Vec<Sample>, DecodeError> {
    let mut r = BitReader::new(bytes);
    let mut out = Vec::with_capacity(count.min(1 << 16));
    for _ in 0..count {
        out.push(codec.decode(&mut r)?);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample(time: i64, usec: i64, values: &[&str]) -> Sample {
        Sample {
            time,
            usec,
            values: values.iter().map(|s| s.to_string()).collect(),
        }
    }

    fn roundtrip(seed: &SeriesCodec, samples: &[Sample]) -> usize {
        let mut enc = seed.clone();
        let bytes = encode_chunk(&mut enc, samples).unwrap();
        let mut dec = seed.clone();
        let back = decode_chunk(&mut dec, &bytes, samples.len()).unwrap();
        assert_eq!(back, samples);
        assert_eq!(enc, dec, "encoder and decoder states diverged");
        bytes.len()
    }

    #[test]
    fn every_kind_of_value_text_comes_back_byte_for_byte() {
        let seed = SeriesCodec::seed(1000, 0, ["U", "U"]);
        let texts = [
            "1",
            "2",
            "3.50",
            "3.5",
            "-7.25",
            "U",
            "U",
            "1e3",
            "1e3",
            "+5",
            ".5",
            "0",
            "007",
            "-0",
            "NaN",
            "12345678901234567890",
            "0.000001",
            "4.20",
            "4.21",
            "4.19",
        ];
        let samples: Vec<Sample> = texts
            .iter()
            .enumerate()
            .map(|(i, t)| {
                sample(
                    1000 + 15 * (i as i64 + 1),
                    0,
                    &[t, texts[texts.len() - 1 - i]],
                )
            })
            .collect();
        roundtrip(&seed, &samples);
    }

    #[test]
    fn irregular_times_and_microseconds_roundtrip() {
        let seed = SeriesCodec::seed(1_700_000_000, 0, ["0"]);
        let times = [
            (1_700_000_015, 0),
            (1_700_000_030, 0),
            (1_700_000_031, 999_999),
            (1_700_000_031, 999_999),
            (1_700_000_100, 5),
            (1_700_000_000, 0),
            (-5, 0),
            (i64::MAX, 0),
            (i64::MIN, 1),
        ];
        let samples: Vec<Sample> = times.iter().map(|&(t, u)| sample(t, u, &["1"])).collect();
        roundtrip(&seed, &samples);
    }

    #[test]
    fn regular_constant_series_costs_three_bits_a_sample() {
        let seed = SeriesCodec::seed(0, 0, ["42"]);
        let samples: Vec<Sample> = (1..=800).map(|i| sample(i * 15, 0, &["42"])).collect();
        let bytes = roundtrip(&seed, &samples);
        // First sample pays for the step; the rest: 1 time bit + `0` tag + EG(0) of zero.
        assert!(bytes <= 800 * 3 / 8 + 4, "{bytes} bytes");
    }

    #[test]
    fn random_sequences_roundtrip_across_chunks() {
        let texts = [
            "U", "0", "1", "-1", "0.5", "0.50", "12.34", "1e3", "abc", "", "-7",
        ];
        for seed in 1..60u64 {
            let mut rng = testkit::Rng::seeded(seed);
            let mut rnd = move |n: u64| rng.next_u64() % n;
            let seed_texts = [texts[rnd(11) as usize], texts[rnd(11) as usize]];
            let start = SeriesCodec::seed(1_000_000, rnd(3) as i64, seed_texts);
            let (mut enc, mut dec) = (start.clone(), start);
            let mut t = 1_000_000i64;
            for _chunk in 0..5 {
                let samples: Vec<Sample> = (0..rnd(30))
                    .map(|_| {
                        t += [15, 15, 15, 14, 16, 300, 1][rnd(7) as usize];
                        let v = |r: u64| match r % 4 {
                            0 => texts[(r / 4 % 11) as usize].to_string(),
                            1 => format!("{}.{:02}", r % 5000, r % 100),
                            2 => (r % 100_000).to_string(),
                            _ => format!("-{}.{}", r % 90 + 1, r % 10),
                        };
                        Sample {
                            time: t,
                            usec: [0, 0, 0, 999_999, 5][rnd(5) as usize],
                            values: vec![v(rnd(1 << 40)), v(rnd(1 << 40))],
                        }
                    })
                    .collect();
                let bytes = encode_chunk(&mut enc, &samples).unwrap();
                let back = decode_chunk(&mut dec, &bytes, samples.len()).unwrap();
                assert_eq!(back, samples, "seed {seed}");
                assert_eq!(enc, dec);
            }
        }
    }

    #[test]
    fn decoded_numbers_are_what_strtod_reads_of_the_text() {
        // Decimals, repeats of decimals, of raw text and of U, raw text that reads as a
        // number, U: wherever the codec gives a number, it is rrd_strtod's of the text, and
        // it gives one for every decimal.
        let texts = [
            "12.37",
            "12.37",
            "12.5",
            "12.5",
            "-0.005",
            "1e3",
            "1e3",
            "U",
            "U",
            "7",
            "7",
            "0.1",
            "0.3",
            "123456789012345678",
            "9007199254740993",
            "-4.20",
            "abc",
            "abc",
            "0.000000000000000001",
            "3",
            "3",
        ];
        let mut rng = testkit::Rng::new(0x9E37_79B9_7F4A_7C15u64);
        let mut rnd = move |n: u64| rng.next_u64() % n;
        let mut samples = Vec::new();
        for i in 0..2000 {
            let pick = |r: u64| match r % 3 {
                0 => texts[(r / 3 % texts.len() as u64) as usize].to_string(),
                1 => format!("{}.{:02}", r % 5000, r / 7 % 100),
                _ => format!("-{}", r % 100_000),
            };
            let (a, b) = (rnd(1 << 40), rnd(1 << 40));
            let values = if i > 0 && a % 5 == 0 {
                // A repeat of the previous sample's text.
                let prev: &Sample = &samples[i - 1];
                prev.values.clone()
            } else {
                vec![pick(a), pick(b)]
            };
            samples.push(Sample {
                time: 1000 + 15 * i as i64,
                usec: 0,
                values,
            });
        }
        let start = SeriesCodec::seed(1000, 0, ["U", "5"]);
        let mut enc = start.clone();
        let bytes = encode_chunk(&mut enc, &samples).unwrap();
        let mut dec = start;
        let (mut k, mut given, mut decimals) = (0, 0, 0);
        let mut r = BitReader::new(&bytes);
        for_each_parsed_in(&mut dec, &mut r, samples.len() as u64, &[], |s, nums| {
            assert_eq!(s, &samples[k]);
            assert_eq!(nums.len(), s.values.len());
            for (t, n) in s.values.iter().zip(nums) {
                if let Some(d) = crate::decimal::Decimal::parse(t) {
                    decimals += 1;
                    let big = d.mantissa.unsigned_abs() >= 1 << 53;
                    assert!(n.is_some() || big, "{t:?}: no number");
                }
                if let Some(n) = n {
                    given += 1;
                    let want = rrd::num::strtod(t).map(|(w, used)| (w.to_bits(), used));
                    assert_eq!(Some((n.value.to_bits(), t.len())), want, "{t:?}");
                    let spelled = crate::decimal::Decimal {
                        mantissa: n.mantissa,
                        scale: n.scale,
                    };
                    assert_eq!(spelled.format(), *t);
                }
            }
            k += 1;
            Ok::<(), DecodeError>(())
        })
        .unwrap();
        assert_eq!(k, samples.len());
        assert!(
            given > 2000 && given <= decimals,
            "{given} numbers, {decimals} decimals"
        );
    }

    /// A short stream whose bytes are pinned: a change to the bit layout must change this
    /// test and docs/FORMAT.md ("Sample bit stream") together.
    #[test]
    fn sample_stream_golden_bytes() {
        let seed = SeriesCodec::seed(1000, 0, ["U"]);
        let samples = [
            sample(1015, 0, &["1.50"]),
            sample(1030, 0, &["1.52"]),
            sample(1045, 0, &["1.52"]),
            sample(1060, 250_000, &["U"]),
            sample(1075, 250_000, &["abc"]),
            sample(1090, 250_000, &["abc"]),
        ];
        let bytes = encode_chunk(&mut seed.clone(), &samples).unwrap();
        assert_eq!(bytes, GOLDEN, "{bytes:02x?}");
        assert_eq!(decode_chunk(&mut seed.clone(), &bytes, 6).unwrap(), samples);
    }

    /// First sample, by hand: `1` (time changed), `0000 11111` (EG0 of zz(15) = 30), `0`
    /// (same usec), `110` (new scale), `00010` (scale 2), `00 101101100` (EG6 of zz(150)).
    /// Second: `0` (regular), `0` (same scale), `11110` (Rice(0) of zz(2) = 4).
    const GOLDEN: &[u8] = &[
        0x87, 0xd8, 0x45, 0xb0, 0xf0, 0xe0, 0x1e, 0x94, 0x82, 0x75, 0xb0, 0xb1, 0x31, 0xbc,
    ];

    #[test]
    fn a_ds_codec_state_stays_small() {
        // One per DS of every series held: a million series' worth is 112 MB.
        assert!(std::mem::size_of::<DsCodec>() <= 112);
    }

    #[test]
    fn mismatched_value_count_is_refused() {
        let mut c = SeriesCodec::seed(0, 0, ["U"]);
        let err = c.encode(&mut BitWriter::new(), &sample(1, 0, &["1", "2"]));
        assert_eq!(
            err,
            Err(EncodeError::ValueCount {
                expected: 1,
                got: 2
            })
        );
    }

    #[test]
    fn decoding_garbage_fails_or_yields_without_panic() {
        for seed in 0..200u64 {
            let mut rng = testkit::Rng::seeded(seed);
            let bytes: Vec<u8> = (0..32).map(|_| rng.next_u64() as u8).collect();
            let mut c = SeriesCodec::seed(0, 0, ["1", "U"]);
            let _ = decode_chunk(&mut c, &bytes, 50);
        }
    }
}
