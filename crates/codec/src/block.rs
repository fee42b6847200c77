//! A commit's samples as one block: every series' samples back to back, without the
//! per-series framing and byte padding of a Samples entry.
//!
//! The loads that poll every few minutes (Cacti, Munin, LibreNMS at `-w 300`) commit about
//! one sample a series: a Samples entry then spends a tag, the id, the count, the length and
//! the last byte's padding (about 5.5 bytes) on 2-3 bytes of sample. A block codes what those
//! fields say commit-wide instead (docs/FORMAT.md, "Sample block"):
//!
//! - **head**: the series in ascending id order, as runs. A series is *regular* when its id is
//!   the previous one's plus one and its count and shape (a stream's stripped prefix, or a
//!   row's value count) are the previous one's; the head holds `EG(0)(run)` of regular
//!   series, then one series spelled out, and so on, ending with a run. A commit of every
//!   series with one sample each is a handful of bits.
//! - **lens**: where each series' bits are, so that a reader finds any series' samples
//!   without decoding the others': replay decodes series in parallel and a reader of one
//!   series skips the rest. Version 1: each stream's length, Rice-coded against a running
//!   mean. Versions 2 and 3: the same lengths, and each row value's bit length and top bit,
//!   in an adaptive arithmetic code ([`crate::rc`]).
//! - **body**: the streams, each without its leading zero bits up to [`MAX_STRIP`] (a regular
//!   time and a decimal first value begin every stream of a steady load with `00`), and the
//!   rows' bits.
//!
//! A *row* (versions 2 and 3) is a series' one sample whose values all continue their
//! decimals: its values' residuals stored as numbers whose bit lengths are in the lens,
//! rather than as the stream's Rice codes. A Rice code spends its unary part on what the
//! stream's length says again; a row's residual costs its bit length once, at about its
//! entropy, and its bits below the top one. Version 3 takes a row's residuals against the
//! sample codec's row predictor (a slow running mean among its choices), version 2 against
//! the stream's. Munin's 4,000 values a commit fit two pages where streams took three.
//!
//! Hand-written (no general-purpose compressor) because the reader must find each series'
//! bits from the head and lens alone, and because the streams are already entropy-coded
//! by the sample codec: what is left to save is framing, which a generic coder cannot see.

use crate::bytes::DecodeError;
use crate::rc::{BitTree, Decoder, Encoder, Prob, Wide};
use bitio::msb::{BitReader, BitWriter};
use bitio::{unzigzag, zigzag};

/// At most this many leading zero bits of a series' stream are left out of the body.
pub const MAX_STRIP: u32 = 2;

/// A row holds at most this many values (a series of more DS is a stream).
pub const MAX_ROW_FIELDS: usize = 4;

/// The head's 2-bit shape of a series that is a row (0..=2 are a stream's strip).
const SHAPE_ROW: u32 = 3;

/// A value's bit length in a row is at most this (a residual of 64 bits).
const MAX_FIELD_LEN: u64 = 64;

/// The lens' running figures, advanced alike by the writer and the reader.
#[derive(Debug, Clone, Copy, Default)]
struct LenModel {
    /// 16 x the running mean of the lengths.
    mean16: u64,
    /// 8 x the running mean of the coded residuals (version 1's Rice order).
    mag: u64,
}

impl LenModel {
    fn predict(&self) -> u64 {
        (self.mean16 + 8) >> 4
    }

    fn order(&self) -> u32 {
        bitio::msb::order(self.mag)
    }

    fn learn(&mut self, len: u64, u: u64) {
        self.mean16 = self.mean16 - (self.mean16 >> 4) + len.min(1 << 40);
        self.mag = self.mag - (self.mag >> 3) + u.min(1 << 40);
    }
}

/// The contexts of a version 2 block's lens (docs/FORMAT.md, "Sample block").
#[derive(Debug, Clone)]
struct Lens2 {
    /// A stream's length against the running mean.
    len: Wide,
    /// Whether a row's time is off its step.
    late: Prob,
    /// A row's values' bit lengths, by the value's place in the row.
    field: Vec<BitTree>,
    /// A value's top bit, by place and bit length.
    top: Vec<[Prob; MAX_FIELD_LEN as usize + 1]>,
}

impl Default for Lens2 {
    fn default() -> Self {
        Lens2 {
            len: Wide::new(6),
            late: Prob::default(),
            field: vec![BitTree::new(7); MAX_ROW_FIELDS],
            top: vec![[Prob::default(); MAX_FIELD_LEN as usize + 1]; MAX_ROW_FIELDS],
        }
    }
}

/// A row: the one sample of a series, whose values all continue their decimals
/// ([`crate::sample::row_of`] reads it from the series' stream).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Row {
    /// The time's change of step (0: the sample is one step after the previous).
    pub dod: i64,
    /// Values.
    pub n: usize,
    /// Each value's residual against the codec's prediction, zigzagged.
    pub u: [u64; MAX_ROW_FIELDS],
    /// Bits the stream spent on the time.
    pub time_bits: u32,
    /// Whether `u` is against the row predictor rather than the stream's (block version 3).
    pub row_pred: bool,
}

/// A row value's bit length in a block: `u` is `2^len - 1` plus a number of `len` bits.
fn field_len(u: u64) -> u32 {
    let v = u as u128 + 1;
    127 - v.leading_zeros()
}

/// What a block spent, in bits, by purpose (estimates where the lens' arithmetic code
/// shares bytes between purposes).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct BlockCost {
    /// Streams as they were pushed, before stripping.
    pub stream_bits: u64,
    /// Leading zeros left out: (streams that lost their first bit, all).
    pub stripped_first: u64,
    pub stripped: u64,
    /// The head, and the lens' stream lengths: which series, and where.
    pub index_bits: u64,
    /// What the rows' streams had spent on their times, and what the rows spend.
    pub row_stream_time_bits: u64,
    pub row_time_bits: u64,
    /// What the rows spend on their values (bits in the body and their lengths).
    pub row_value_bits: u64,
}

/// Builds a block series by series, in ascending id order.
#[derive(Debug, Clone)]
pub struct BlockWriter {
    version: u8,
    n: u64,
    head: BitWriter,
    lens: BitWriter,
    rc: Encoder,
    lens2: Lens2,
    body: BitWriter,
    prev_id: Option<u64>,
    prev_count: u64,
    /// The previous series' shape: a stream's strip, or SHAPE_ROW + 4 * (values - 1).
    prev_shape: u32,
    run: u64,
    model: LenModel,
    cost: BlockCost,
    /// 1/65536ths of a bit, estimated.
    est_index: u64,
    est_times: u64,
    est_values: u64,
}

impl Default for BlockWriter {
    fn default() -> Self {
        BlockWriter::with_version(3)
    }
}

impl BlockWriter {
    /// A block of the current version (3).
    pub fn new() -> Self {
        BlockWriter::default()
    }

    /// A block of `version` 1 (streams only, Rice-coded lens: what records before version
    /// 2 hold), 2 (rows against the stream's predictor) or 3.
    pub fn with_version(version: u8) -> Self {
        assert!((1..=3).contains(&version), "block version {version}");
        BlockWriter {
            version,
            n: 0,
            head: BitWriter::new(),
            lens: BitWriter::new(),
            rc: Encoder::new(),
            lens2: Lens2::default(),
            body: BitWriter::new(),
            prev_id: None,
            prev_count: 0,
            prev_shape: 0,
            run: 0,
            model: LenModel::default(),
            cost: BlockCost::default(),
            est_index: 0,
            est_times: 0,
            est_values: 0,
        }
    }

    /// The block's version.
    pub fn version(&self) -> u8 {
        self.version
    }

    /// Series added so far.
    pub fn len(&self) -> u64 {
        self.n
    }

    pub fn is_empty(&self) -> bool {
        self.n == 0
    }

    /// Room for `bytes` more bytes of streams.
    pub fn reserve(&mut self, bytes: usize) {
        self.body.reserve(bytes);
    }

    /// The head's entry for a series: nothing when it is regular, else the run before it
    /// and its fields.
    fn head_entry(&mut self, id: u64, count: u64, shape: u32) {
        debug_assert!(self.prev_id.is_none_or(|p| id > p), "ids ascend");
        let regular = self.prev_id.is_some_and(|p| id == p.wrapping_add(1))
            && count == self.prev_count
            && shape == self.prev_shape;
        if regular {
            self.run += 1;
        } else {
            self.head.exp_golomb(self.run, 0);
            self.run = 0;
            let gap = match self.prev_id {
                None => id,
                Some(p) => id - p - 1,
            };
            self.head.exp_golomb(gap, 0);
            self.head
                .exp_golomb(zigzag(count.wrapping_sub(self.prev_count) as i64), 0);
            self.head.bits(u64::from(shape.min(SHAPE_ROW)), 2);
            if shape >= SHAPE_ROW {
                self.head.bits(u64::from((shape - SHAPE_ROW) / 4), 2);
            }
        }
        self.prev_id = Some(id);
        self.prev_count = count;
        self.prev_shape = shape;
        self.n += 1;
    }

    /// Add series `id` (greater than every id added before) with `count` samples, whose
    /// stream is the first `bits` bits of `chunk`.
    pub fn push(&mut self, id: u64, count: u64, chunk: &[u8], bits: u64) {
        let bits = bits.min(chunk.len() as u64 * 8);
        // Leading zero bits of the stream, up to MAX_STRIP.
        let lead = chunk.first().map_or(0, |b| b.leading_zeros());
        let strip = lead.min(MAX_STRIP).min(bits as u32);
        self.head_entry(id, count, strip);
        let len = bits - strip as u64;
        let u = zigzag(len.wrapping_sub(self.model.predict()) as i64);
        if self.version == 1 {
            self.lens.rice(u, self.model.order());
        } else {
            self.est_index += self.lens2.len.cost(u);
            self.lens2.len.encode(&mut self.rc, u);
        }
        self.model.learn(len, u);
        self.body.append(chunk, strip as u64, bits);
        self.cost.stream_bits += bits;
        self.cost.stripped += strip as u64;
        self.cost.stripped_first += u64::from(strip > 0);
    }

    /// Add series `id` (greater than every id added before) with one sample, `row`.
    /// Version 2 only.
    pub fn push_row(&mut self, id: u64, row: &Row) {
        assert!(self.version >= 2, "rows are version 2");
        assert_eq!(
            row.row_pred,
            self.version >= 3,
            "a row's predictor and the version"
        );
        let n = row.n;
        assert!((1..=MAX_ROW_FIELDS).contains(&n), "a row of {n} values");
        self.head_entry(id, 1, SHAPE_ROW + 4 * (n as u32 - 1));
        let late = row.dod != 0;
        let l = &mut self.lens2;
        self.est_times += l.late.cost(late);
        self.rc.bit(&mut l.late, late);
        if late {
            let b0 = self.body.bit_len();
            self.body.exp_golomb(zigzag(row.dod), 0);
            self.est_times += (self.body.bit_len() - b0) << 16;
        }
        for (i, &u) in row.u[..n].iter().enumerate() {
            let len = field_len(u);
            self.est_values += l.field[i].cost(u64::from(len));
            l.field[i].encode(&mut self.rc, u64::from(len));
            if len > 0 {
                let x = (u as u128 + 1 - (1u128 << len)) as u64;
                let top = (x >> (len - 1)) & 1 == 1;
                let p = &mut l.top[i][len as usize];
                self.est_values += p.cost(top);
                self.rc.bit(p, top);
                self.body.bits(x, len - 1);
                self.est_values += u64::from(len - 1) << 16;
            }
        }
        self.cost.row_stream_time_bits += u64::from(row.time_bits);
    }

    /// What the block spent so far, by purpose (the lens' shares estimated from the
    /// probabilities they were coded at).
    pub fn cost(&self) -> BlockCost {
        let mut c = self.cost;
        c.row_time_bits = self.est_times >> 16;
        c.row_value_bits = self.est_values >> 16;
        let lens = match self.version {
            1 => self.lens.bit_len(),
            _ => self.est_index >> 16,
        };
        c.index_bits = self.head.bit_len() + lens;
        c
    }

    /// The block's parts: (version, series count, head bytes, lens bytes, body bytes). The
    /// head ends with the last run.
    pub fn finish(&mut self) -> (u8, u64, Vec<u8>, Vec<u8>, &[u8]) {
        let mut head = std::mem::take(&mut self.head);
        head.exp_golomb(self.run, 0);
        let lens = if self.version == 1 {
            std::mem::take(&mut self.lens).into_bytes()
        } else {
            std::mem::take(&mut self.rc).finish()
        };
        (
            self.version,
            self.n,
            head.into_bytes(),
            lens,
            self.body.as_bytes(),
        )
    }
}

/// One series' place in a block.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BlockSeries<'a> {
    pub id: u64,
    pub count: u64,
    pub span: BitSpan<'a>,
}

/// A series' bits: a stream (bits `from..to` of `buf` after `zeros` zero bits left out),
/// or a row (`row` values, their bit lengths and top bits in `shape`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BitSpan<'a> {
    pub buf: &'a [u8],
    pub from: u64,
    pub to: u64,
    pub zeros: u8,
    /// Whether the stream must end exactly at `to` (a block's series; a Samples entry's
    /// chunk ends in padding).
    pub exact: bool,
    /// 0: a stream. Else a row: its values (bits 0-2), bit 4 set when the body holds the
    /// time's change of step first, bit 5 when its residuals are against the row predictor
    /// (version 3).
    pub row: u8,
    /// A row's values, a byte each: bits 0-5 the bits of the value in the body, bits 6-7
    /// 0 for a value of no bits, 2 or 3 for a top bit of 0 or 1 in front of them.
    pub shape: u32,
}

impl<'a> BitSpan<'a> {
    /// A Samples entry's whole chunk.
    pub fn chunk(buf: &'a [u8]) -> Self {
        BitSpan {
            buf,
            from: 0,
            to: buf.len() as u64 * 8,
            zeros: 0,
            exact: false,
            row: 0,
            shape: 0,
        }
    }

    /// A stream's bits (a row's are read with [`BitSpan::read_row`]).
    pub fn reader(&self) -> BitReader<'a> {
        BitReader::slice(self.buf, self.from, self.to, u32::from(self.zeros))
    }

    /// A row's sample: its time's change of step and its values' residuals; `None` for a
    /// stream.
    pub fn read_row(&self) -> Option<Result<Row, DecodeError>> {
        if self.row == 0 {
            return None;
        }
        let mut r = BitReader::slice(self.buf, self.from, self.to, 0);
        let mut row = Row {
            n: usize::from(self.row & 7),
            row_pred: self.row & 32 != 0,
            ..Row::default()
        };
        let read = |r: &mut BitReader, row: &mut Row| -> Result<(), DecodeError> {
            if self.row & 16 != 0 {
                row.dod = unzigzag(r.exp_golomb(0)?);
            }
            for i in 0..row.n.min(MAX_ROW_FIELDS) {
                let f = self.shape >> (8 * i);
                let b = f & 63;
                row.u[i] = match (f >> 6) & 3 {
                    0 => 0,
                    s => {
                        let x = (u64::from(s & 1) << b) | r.bits(b)?;
                        let u = (1u128 << (b + 1)) - 1 + u128::from(x);
                        u64::try_from(u).map_err(|_| r.err("a row value past 64 bits"))?
                    }
                };
            }
            if !r.at_end() {
                return Err(r.err("a row's bits and values disagree"));
            }
            Ok(())
        };
        Some(read(&mut r, &mut row).map(|()| row))
    }
}

/// The parts of a block as stored; [`Block::series`] walks them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Block<'a> {
    /// 1 (entry tag 5), 2 (entry tag 6) or 3 (entry tag 7).
    pub version: u8,
    pub n: u64,
    pub head: &'a [u8],
    pub lens: &'a [u8],
    pub body: &'a [u8],
}

impl<'a> Block<'a> {
    pub fn series(&self) -> BlockIter<'a> {
        BlockIter {
            version: self.version,
            left: self.n,
            run: 0,
            head: BitReader::new(self.head),
            lens: BitReader::new(self.lens),
            rc: Decoder::new(if self.version >= 2 { self.lens } else { &[] }),
            lens2: if self.version >= 2 {
                Some(Box::default())
            } else {
                None
            },
            body: self.body,
            at: 0,
            prev_id: None,
            prev_count: 0,
            prev_shape: 0,
            model: LenModel::default(),
            started: false,
            done: false,
        }
    }
}

/// What [`BlockIter::rest_of_head`] found.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Rest {
    pub series: u64,
    pub most: u64,
    pub unknown: Option<u64>,
}

/// The series of a block in order; an error (once, then the end) if the parts disagree.
pub struct BlockIter<'a> {
    version: u8,
    left: u64,
    /// Regular series still to come before the next spelled-out one.
    run: u64,
    head: BitReader<'a>,
    lens: BitReader<'a>,
    rc: Decoder<'a>,
    lens2: Option<Box<Lens2>>,
    body: &'a [u8],
    at: u64,
    prev_id: Option<u64>,
    prev_count: u64,
    prev_shape: u32,
    model: LenModel,
    started: bool,
    done: bool,
}

impl<'a> BlockIter<'a> {
    fn step(&mut self) -> Result<Option<BlockSeries<'a>>, DecodeError> {
        let body_bits = self.body.len() as u64 * 8;
        if self.left == 0 {
            // The head's last run must have been read, and every part used up to its padding.
            if self.run != 0 {
                return Err(self.head.err("block head: a run past the series count"));
            }
            let lens_left = if self.version >= 2 {
                !self.rc.used_all()
            } else {
                self.lens.remaining_bits() >= 8
            };
            if self.head.remaining_bits() >= 8 || lens_left || body_bits - self.at >= 8 {
                return Err(DecodeError::new(0, "block: bytes after its last series"));
            }
            return Ok(None);
        }
        let spelled = self.run == 0;
        let (id, count, shape) = if !spelled {
            self.run -= 1;
            let id = self
                .prev_id
                .and_then(|p| p.checked_add(1))
                .ok_or_else(|| self.head.err("block head: id past 2^64"))?;
            (id, self.prev_count, self.prev_shape)
        } else {
            self.spelled()?
        };
        let span = if shape >= SHAPE_ROW {
            self.row_span(shape)?
        } else {
            let strip = shape;
            let u = match self.lens2.as_mut() {
                Some(l) => l.len.decode(&mut self.rc),
                None => self.lens.rice(self.model.order())?,
            };
            let len = self.model.predict().wrapping_add(unzigzag(u) as u64);
            self.model.learn(len, u);
            if len > body_bits - self.at {
                return Err(self.lens.err("block: a series longer than the body"));
            }
            // Every sample takes at least one bit: a count beyond the bits is damage.
            if count > len + strip as u64 {
                return Err(self.head.err("block: more samples than bits"));
            }
            BitSpan {
                buf: self.body,
                from: self.at,
                to: self.at + len,
                zeros: strip as u8,
                exact: true,
                row: 0,
                shape: 0,
            }
        };
        self.at = span.to;
        self.left -= 1;
        self.prev_id = Some(id);
        self.prev_count = count;
        self.prev_shape = shape;
        if spelled {
            // The run of regular series after it (the last one closes the head).
            self.run = self.head.exp_golomb(0)?;
        }
        Ok(Some(BlockSeries { id, count, span }))
    }

    /// A series the head spells out (it is not regular): its id, count and shape.
    fn spelled(&mut self) -> Result<(u64, u64, u32), DecodeError> {
        let gap = self.head.exp_golomb(0)?;
        let id = match self.prev_id {
            None => Some(gap),
            Some(p) => p.checked_add(1).and_then(|x| x.checked_add(gap)),
        }
        .ok_or_else(|| self.head.err("block head: id past 2^64"))?;
        let dc = unzigzag(self.head.exp_golomb(0)?);
        let count = self.prev_count.wrapping_add(dc as u64);
        let mut shape = self.head.bits(2)? as u32;
        if count == 0 || (shape > MAX_STRIP && self.version < 2) {
            return Err(self.head.err("block head: a series with no samples"));
        }
        if shape == SHAPE_ROW {
            shape += 4 * self.head.bits(2)? as u32;
            if count != 1 {
                return Err(self.head.err("block head: a row of more than one sample"));
            }
        }
        Ok((id, count, shape))
    }

    /// The series left, read from the head alone and a run of regular ones at a time
    /// (their lengths are not decoded), for a reader whose series all came already: how
    /// many, the most samples one has, and the first id at or past `bound` (ids no series
    /// was given), if any. The lens and the body are not checked for bytes past their
    /// last series (the record's checksum vouches for its bytes); the head is. The block
    /// is read to its end.
    pub fn rest_of_head(&mut self, bound: u64) -> Result<Rest, DecodeError> {
        let mut rest = Rest::default();
        if !self.started {
            self.started = true;
            if self.head.exp_golomb(0)? != 0 {
                return Err(self.head.err("block head: a run before any series"));
            }
        }
        self.done = true;
        while self.left > 0 {
            let (first, last) = if self.run > 0 {
                let k = self.run.min(self.left);
                let (first, last) = self
                    .prev_id
                    .and_then(|p| Some((p.checked_add(1)?, p.checked_add(k)?)))
                    .ok_or_else(|| self.head.err("block head: id past 2^64"))?;
                self.run -= k;
                self.left -= k;
                rest.series += k;
                (first, last)
            } else {
                let (id, count, shape) = self.spelled()?;
                self.prev_count = count;
                self.prev_shape = shape;
                self.left -= 1;
                rest.series += 1;
                self.run = self.head.exp_golomb(0)?;
                (id, id)
            };
            self.prev_id = Some(last);
            rest.most = rest.most.max(self.prev_count);
            if rest.unknown.is_none() && last >= bound {
                rest.unknown = Some(first.max(bound));
            }
        }
        if self.run != 0 {
            return Err(self.head.err("block head: a run past the series count"));
        }
        if self.head.remaining_bits() >= 8 {
            return Err(DecodeError::new(0, "block: bytes after its last series"));
        }
        Ok(rest)
    }

    /// A row's place: its lens symbols, and the time's change in the body.
    fn row_span(&mut self, shape: u32) -> Result<BitSpan<'a>, DecodeError> {
        let Some(l) = self.lens2.as_mut() else {
            return Err(self.head.err("block head: a row in a version 1 block"));
        };
        let n = (shape - SHAPE_ROW) / 4 + 1;
        let late = self.rc.bit(&mut l.late);
        let mut bits = 0u64;
        if late {
            // The change of step leads the row's body: read it to know where the values are.
            let mut r = BitReader::slice(self.body, self.at, self.body.len() as u64 * 8, 0);
            r.exp_golomb(0)?;
            bits = r.position() - self.at;
        }
        let mut packed = 0u32;
        for i in 0..n as usize {
            let len = l.field[i].decode(&mut self.rc);
            if len > MAX_FIELD_LEN {
                return Err(DecodeError::new(0, "block lens: a row value past 64 bits"));
            }
            let f = if len == 0 {
                0
            } else {
                let top = self.rc.bit(&mut l.top[i][len as usize]);
                bits += len - 1;
                (2 | u32::from(top)) << 6 | (len as u32 - 1)
            };
            packed |= f << (8 * i);
        }
        let body_bits = self.body.len() as u64 * 8;
        if bits > body_bits - self.at {
            return Err(DecodeError::new(0, "block: a row longer than the body"));
        }
        Ok(BitSpan {
            buf: self.body,
            from: self.at,
            to: self.at + bits,
            zeros: 0,
            exact: true,
            row: n as u8 | if late { 16 } else { 0 } | if self.version >= 3 { 32 } else { 0 },
            shape: packed,
        })
    }
}

impl<'a> Iterator for BlockIter<'a> {
    type Item = Result<BlockSeries<'a>, DecodeError>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.done {
            return None;
        }
        if !self.started {
            self.started = true;
            // The head opens with a run (zero: nothing precedes the first series).
            match self.head.exp_golomb(0) {
                Ok(0) => {}
                Ok(_) => {
                    self.done = true;
                    return Some(Err(self.head.err("block head: a run before any series")));
                }
                Err(e) => {
                    self.done = true;
                    return Some(Err(e));
                }
            }
        }
        match self.step() {
            Ok(Some(s)) => Some(Ok(s)),
            Ok(None) => {
                self.done = true;
                None
            }
            Err(e) => {
                self.done = true;
                Some(Err(e))
            }
        }
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::record::{decode_record, Entry, RecordWriter};
    use crate::sample::SeriesCodec;
    use rrd::Sample;

    /// splitmix64, for cases (shared with the range coder's tests).
    pub(crate) struct Rng(pub u64);
    impl Rng {
        pub fn next(&mut self) -> u64 {
            self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
            let mut z = self.0;
            z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
            z ^ (z >> 31)
        }
        pub fn below(&mut self, n: u64) -> u64 {
            self.next() % n
        }
    }

    fn chunk_of(rng: &mut Rng) -> (Vec<u8>, u64) {
        let bits = 1 + rng.below(70);
        let mut w = BitWriter::new();
        // Streams that often begin with zeros, as real ones do.
        let lead = rng.below(4).min(bits);
        w.bits(0, lead as u32);
        for _ in lead..bits {
            w.bit(rng.below(2) == 1);
        }
        (w.into_bytes(), bits)
    }

    /// A row of `n` values with residuals of every size, and now and then a late time, for
    /// a block of `version`.
    fn row_of(rng: &mut Rng, version: u8) -> Row {
        let mut row = Row {
            n: 1 + rng.below(MAX_ROW_FIELDS as u64) as usize,
            row_pred: version >= 3,
            ..Row::default()
        };
        if rng.below(5) == 0 {
            row.dod = rng.below(41) as i64 - 20;
        }
        for u in &mut row.u[..row.n] {
            *u = match rng.below(6) {
                0 => 0,
                1 => u64::MAX - rng.below(3),
                2 => rng.next() >> rng.below(64),
                _ => rng.below(50_000),
            };
        }
        row
    }

    enum Item {
        Stream(u64, Vec<u8>, u64),
        Row(Row),
    }

    #[test]
    fn every_series_comes_back_with_its_bits() {
        let mut rng = Rng(7);
        for case in 0..600 {
            let version = 1 + (case % 3) as u8;
            let n = 1 + rng.below(if case % 10 == 0 { 2000 } else { 40 });
            let mut id = rng.below(5);
            let mut input = Vec::new();
            for _ in 0..n {
                // Mostly consecutive ids and equal counts, sometimes not.
                id += 1 + if rng.below(8) == 0 {
                    rng.below(100_000)
                } else {
                    0
                };
                if version >= 2 && rng.below(3) > 0 {
                    input.push((id, Item::Row(row_of(&mut rng, version))));
                    continue;
                }
                let count = if rng.below(6) == 0 {
                    1 + rng.below(40)
                } else {
                    3
                };
                let (chunk, bits) = chunk_of(&mut rng);
                input.push((id, Item::Stream(count.min(bits), chunk, bits)));
            }
            let mut w = BlockWriter::with_version(version);
            for (id, item) in &input {
                match item {
                    Item::Stream(count, chunk, bits) => w.push(*id, *count, chunk, *bits),
                    Item::Row(row) => w.push_row(*id, row),
                }
            }
            let (v, n2, head, lens, body) = w.finish();
            assert_eq!((v, n2), (version, n));
            let block = Block {
                version,
                n,
                head: &head,
                lens: &lens,
                body,
            };
            let got: Vec<_> = block.series().collect::<Result<_, _>>().unwrap();
            assert_eq!(got.len(), input.len(), "case {case}");
            // The head alone after any number of series tells what walking the rest does.
            let k = rng.below(n + 1) as usize;
            let bound = input[rng.below(n) as usize].0 + rng.below(3);
            let mut it = block.series();
            for _ in 0..k {
                it.next().unwrap().unwrap();
            }
            let rest = it.rest_of_head(bound).unwrap();
            assert!(
                it.next().is_none(),
                "case {case}: the block read to its end"
            );
            let want = Rest {
                series: (n as usize - k) as u64,
                most: got[k..].iter().map(|g| g.count).max().unwrap_or(0),
                unknown: got[k..].iter().map(|g| g.id).find(|&id| id >= bound),
            };
            assert_eq!(rest, want, "case {case}: after {k}");
            for (g, (id, item)) in got.iter().zip(&input) {
                assert_eq!(g.id, *id, "case {case}");
                match item {
                    Item::Row(row) => {
                        assert_eq!(g.count, 1, "case {case}");
                        let back = g.span.read_row().expect("a row").unwrap();
                        let want = Row {
                            time_bits: 0,
                            ..*row
                        };
                        assert_eq!(back, want, "case {case}");
                    }
                    Item::Stream(count, chunk, bits) => {
                        assert_eq!(g.count, *count, "case {case}");
                        assert!(g.span.read_row().is_none());
                        let mut r = g.span.reader();
                        let mut back = BitWriter::new();
                        for _ in 0..*bits {
                            back.bit(r.bit().unwrap());
                        }
                        assert!(r.at_end(), "case {case}: span longer than the stream");
                        let mut want = BitWriter::new();
                        want.append(chunk, 0, *bits);
                        assert_eq!(back.as_bytes(), want.as_bytes(), "case {case}");
                    }
                }
            }
        }
    }

    #[test]
    fn a_steady_commit_costs_its_streams_and_little_else() {
        // 4,000 series of one sample each, ids 1..=4000, streams of 18-21 bits that start
        // with `00`: the head is a few bytes and the lens about 2.5 bits a series.
        for version in [1, 2] {
            let mut rng = Rng(3);
            let mut w = BlockWriter::with_version(version);
            for id in 1..=4000u64 {
                let bits = 18 + rng.below(4);
                let mut c = BitWriter::new();
                c.bits(0, 2);
                for _ in 2..bits {
                    c.bit(rng.below(2) == 1);
                }
                w.push(id, 1, c.as_bytes(), bits);
            }
            let streams = w.cost().stream_bits;
            let (_, _, head, lens, body) = w.finish();
            assert!(head.len() <= 8, "head {} bytes", head.len());
            assert!(lens.len() * 8 <= 4000 * 3, "lens {} bytes", lens.len());
            assert_eq!(body.len() as u64, (streams - 2 * 4000).div_ceil(8));
        }
    }

    #[test]
    fn version_3_rows_of_steady_counters_cost_less_than_version_2() {
        // Counters growing by increments uniform in 0..50,000 (15.61 bits of information
        // a value), one sample a series a commit, coded by the sample codec: version 2's
        // rows take the stream's residual (a trend of noisy running means and the choice
        // between predictors, both noisy), version 3's the row predictor's.
        let series = 4000usize;
        let mut bits = [0f64; 2];
        for (vi, version) in [2u8, 3].into_iter().enumerate() {
            let mut rng = Rng(9);
            let mut codecs: Vec<SeriesCodec> = (0..series)
                .map(|i| SeriesCodec::seed(1_000_000, 0, [(i * 1000).to_string().as_str()]))
                .collect();
            let mut value: Vec<u64> = (0..series as u64).map(|i| i * 1000).collect();
            for commit in 1..=100i64 {
                let mut rec = RecordWriter::new();
                rec.block_version(version);
                for (i, c) in codecs.iter_mut().enumerate() {
                    value[i] += rng.below(50_001);
                    let s = Sample {
                        time: 1_000_000 + 300 * commit,
                        usec: 0,
                        values: vec![value[i].to_string()],
                    };
                    let mut w = BitWriter::new();
                    let note = c.encode_noted(&mut w, &s).unwrap().1;
                    let (b, n) = (w.as_bytes(), w.bit_len());
                    let row = crate::sample::row_of(b, n, note, c, version >= 3).unwrap();
                    rec.block_row(i as u64 + 1, &row);
                }
                let payload = rec.finish();
                // Past the first commits, which learn each series' rate.
                if commit > 80 {
                    bits[vi] += payload.len() as f64 * 8.0 / (20 * series) as f64;
                }
            }
        }
        eprintln!(
            "bits a value: version 2 {:.3}, version 3 {:.3}",
            bits[0], bits[1]
        );
        assert!(bits[1] < 15.95, "version 3: {:.3} bits a value", bits[1]);
        assert!(bits[1] < bits[0] - 0.2, "{bits:?}");
    }

    #[test]
    fn rows_of_uniform_residuals_cost_about_their_entropy() {
        // Munin's and Cacti's counters: residuals spread evenly over 50,000 values, whose
        // information is log2(50,000) = 15.61 bits. A row spends its value's bit length (in
        // the lens) and its bits below the top one (in the body).
        for values in [1usize, 2] {
            let mut rng = Rng(4);
            let mut w = BlockWriter::new();
            let series = 4000 / values as u64;
            for id in 1..=series {
                let mut row = Row {
                    n: values,
                    row_pred: true,
                    ..Row::default()
                };
                for u in &mut row.u[..values] {
                    *u = rng.below(50_000);
                }
                w.push_row(id, &row);
            }
            let cost = w.cost();
            let (_, _, head, lens, body) = w.finish();
            let bits = (head.len() + lens.len() + body.len()) as f64 * 8.0 / 4000.0;
            eprintln!("{values} values a row: {bits:.3} bits a value");
            assert!(
                bits < 15.85,
                "{values} values a row: {bits:.3} bits a value"
            );
            assert!(head.len() <= 8, "head {} bytes", head.len());
            // The estimate of what the values took is close to the bytes.
            let est = (cost.index_bits + cost.row_time_bits + cost.row_value_bits) as f64;
            let real = (head.len() + lens.len() + body.len()) as f64 * 8.0;
            assert!(
                (est / real - 1.0).abs() < 0.01,
                "estimate {est} against {real}"
            );
        }
    }

    #[test]
    fn sample_streams_decode_from_a_block_as_from_their_chunks() {
        // Real sample streams through a record: what replay does, in a block of each
        // version, with rows (one regular or late sample) and streams.
        for (version, late) in [(1u8, false), (2, false), (2, true), (3, false), (3, true)] {
            let mut rng = Rng(11);
            let seeds: Vec<SeriesCodec> = (0..60)
                .map(|i| match i % 3 {
                    0 => SeriesCodec::seed(1_000_000 + i, 0, ["100"]),
                    1 => SeriesCodec::seed(1_000_000 + i, 0, ["100", "2.50"]),
                    _ => SeriesCodec::seed(1_000_000 + i, 0, ["1", "2", "3", "4", "5"]),
                })
                .collect();
            let mut enc = seeds.clone();
            let mut want: Vec<Vec<Sample>> = vec![Vec::new(); enc.len()];
            // Four commits: the later ones' rows have codecs that learnt from the first.
            let mut dec = seeds.clone();
            for commit in 0..4 {
                let mut rec = RecordWriter::new();
                rec.block_version(version);
                let mut rows = 0;
                for (i, c) in enc.iter_mut().enumerate() {
                    want[i].clear();
                    if i % 7 == 3 {
                        continue; // not in this commit
                    }
                    let mut w = BitWriter::new();
                    let mut note = 0;
                    let count = if i % 5 == 0 { 3 } else { 1 };
                    for k in 1..=count {
                        let t = 1_000_000 + i as i64 + 300 * (k + 3 * commit);
                        let t = if late && i % 4 == 1 { t + 7 } else { t };
                        let values = (0..c.ds_count())
                            .map(|d| match (d, rng.below(20)) {
                                (1, _) => format!("{}.{:02}", rng.below(100), rng.below(100)),
                                (_, 0) if i % 2 == 0 => "U".to_string(),
                                _ => (1000 * k as u64 + rng.below(50_000)).to_string(),
                            })
                            .collect();
                        let s = Sample {
                            time: t,
                            usec: 0,
                            values,
                        };
                        note = c.encode_noted(&mut w, &s).unwrap().1;
                        want[i].push(s);
                    }
                    let row = (count == 1 && version >= 2)
                        .then(|| {
                            let (b, n) = (w.as_bytes(), w.bit_len());
                            crate::sample::row_of(b, n, note, c, version >= 3)
                        })
                        .flatten();
                    match row {
                        Some(row) => {
                            rows += 1;
                            rec.block_row(i as u64 + 1, &row)
                        }
                        None => rec.block_series(
                            i as u64 + 1,
                            want[i].len() as u64,
                            w.as_bytes(),
                            w.bit_len(),
                        ),
                    }
                }
                assert_eq!(rows > 0, version >= 2, "rows {rows}");
                let payload = rec.finish();
                let entries = decode_record(&payload).unwrap();
                let Entry::Block(b) = &entries[0] else {
                    panic!("{entries:?}")
                };
                assert_eq!(b.version, version);
                let mut seen = 0;
                for s in b.series() {
                    let s = s.unwrap();
                    let i = (s.id - 1) as usize;
                    let mut got = Vec::new();
                    crate::sample::for_each_parsed_in_span(
                        &mut dec[i],
                        &s.span,
                        s.count,
                        &[],
                        |x, _| {
                            got.push(x.clone());
                            Ok::<(), DecodeError>(())
                        },
                    )
                    .unwrap();
                    assert_eq!(got, want[i], "version {version}, commit {commit}");
                    seen += 1;
                }
                assert_eq!(seen, 60 - 9);
                assert_eq!(
                    dec, enc,
                    "version {version}: the codecs after commit {commit}"
                );
            }
        }
    }

    #[test]
    fn a_damaged_block_is_an_error_not_a_panic() {
        for version in [1, 2, 3] {
            let mut rng = Rng(5);
            let mut w = BlockWriter::with_version(version);
            for id in 1..=30u64 {
                if version >= 2 && id % 3 != 0 {
                    w.push_row(id * 2, &row_of(&mut rng, version));
                    continue;
                }
                let (chunk, bits) = chunk_of(&mut rng);
                w.push(id * 2, 1, &chunk, bits);
            }
            let (_, n, head, lens, body) = w.finish();
            let body = body.to_vec();
            let walk = |n: u64, head: &[u8], lens: &[u8], body: &[u8]| {
                Block {
                    version,
                    n,
                    head,
                    lens,
                    body,
                }
                .series()
                .map(|s| s.and_then(|s| s.span.read_row().transpose().map(|_| s)))
                .collect::<Result<Vec<_>, _>>()
                .map(|v| v.len())
            };
            // The first series, then the head alone ([`BlockIter::rest_of_head`]).
            let head_after_one = |n: u64, head: &[u8], lens: &[u8], body: &[u8]| {
                let b = Block {
                    version,
                    n,
                    head,
                    lens,
                    body,
                };
                let mut it = b.series();
                it.next().transpose()?;
                it.rest_of_head(u64::MAX)
            };
            assert!(walk(n, &head, &lens, &body).is_ok());
            assert!(head_after_one(n, &head, &lens, &body).is_ok());
            assert!(
                head_after_one(n + 1, &head, &lens, &body).is_err(),
                "count too high"
            );
            assert!(
                head_after_one(n - 1, &head, &lens, &body).is_err(),
                "count too low"
            );
            assert!(walk(n + 1, &head, &lens, &body).is_err(), "count too high");
            assert!(walk(n - 1, &head, &lens, &body).is_err(), "count too low");
            assert!(walk(n, &head, &lens, &body[..body.len() - 1]).is_err());
            let mut longer = body.clone();
            longer.push(0);
            assert!(
                walk(n, &head, &lens, &longer).is_err(),
                "a byte after the body"
            );
            // Any one byte changed or cut: an error or other series, never a panic.
            for part in 0..3 {
                let parts = [&head[..], &lens[..], &body[..]];
                for at in 0..parts[part].len() {
                    for x in [0u8, 0xFF, 0x55] {
                        let mut p: Vec<Vec<u8>> = parts.iter().map(|p| p.to_vec()).collect();
                        p[part][at] = x;
                        let _ = walk(n, &p[0], &p[1], &p[2]);
                        let _ = head_after_one(n, &p[0], &p[1], &p[2]);
                        p[part].truncate(at);
                        let _ = walk(n, &p[0], &p[1], &p[2]);
                        let _ = head_after_one(n, &p[0], &p[1], &p[2]);
                    }
                }
            }
        }
    }

    #[test]
    fn a_span_stays_small() {
        // Replay holds one for every (series, record) piece it collects, up to two million
        // at a time: rows' fields fit where a stream's were.
        assert_eq!(std::mem::size_of::<BitSpan>(), 40);
    }

    #[test]
    fn append_copies_any_bit_range() {
        let mut rng = Rng(9);
        for _ in 0..500 {
            let len = rng.below(40) as usize;
            let src: Vec<u8> = (0..len).map(|_| rng.next() as u8).collect();
            let total = len as u64 * 8;
            let from = rng.below(total + 1);
            let to = from + rng.below(total - from + 1);
            let lead = rng.below(13) as u32;
            let mut a = BitWriter::new();
            a.bits(0x5A5, lead);
            a.append(&src, from, to);
            let mut b = BitWriter::new();
            b.bits(0x5A5, lead);
            let mut r = BitReader::slice(&src, from, to, 0);
            while !r.at_end() {
                b.bit(r.bit().unwrap());
            }
            assert_eq!(a.as_bytes(), b.as_bytes());
            assert_eq!(a.bit_len(), lead as u64 + to - from);
        }
    }
}
