//! A commit's samples as one block: every series' sample stream back to back, without the
//! per-series framing and byte padding of a Samples entry.
//!
//! The loads that poll every few minutes (Cacti, Munin, LibreNMS at `-w 300`) commit about
//! one sample a series: a Samples entry then spends a tag, the id, the count, the length and
//! the last byte's padding (about 5.5 bytes) on 2-3 bytes of sample. A block codes what those
//! fields say commit-wide instead (docs/FORMAT.md, "Sample block"):
//!
//! - **head**: the series in ascending id order, as runs. A series is *regular* when its id is
//!   the previous one's plus one and its count and stripped prefix are the previous one's;
//!   the head holds `EG(0)(run)` of regular series, then one series spelled out, and so on,
//!   ending with a run. A commit of every series with one sample each is a handful of bits.
//! - **lens**: each series' stream length in bits, Rice-coded against a running mean (both
//!   sides keep the same figures, as the sample codec does), so a reader finds any series'
//!   samples without decoding the others': replay decodes series in parallel and a reader
//!   of one series skips the rest.
//! - **body**: the streams, each without its leading zero bits up to [`MAX_STRIP`] (a regular
//!   time and a decimal first value begin every stream of a steady load with `00`); the
//!   reader puts them back.
//!
//! Hand-written (no general-purpose compressor) because the reader must find each series'
//! bits from the head and lens alone, and because the streams are already entropy-coded
//! by the sample codec: what is left to save is framing, which a generic coder cannot see.

use crate::bits::{BitReader, BitWriter};
use crate::bytes::{unzigzag, zigzag, DecodeError};

/// At most this many leading zero bits of a series' stream are left out of the body.
pub const MAX_STRIP: u32 = 2;

/// The lens' running figures, advanced alike by the writer and the reader.
#[derive(Debug, Clone, Copy, Default)]
struct LenModel {
    /// 16 x the running mean of the lengths.
    mean16: u64,
    /// 8 x the running mean of the coded residuals.
    mag: u64,
}

impl LenModel {
    fn predict(&self) -> u64 {
        (self.mean16 + 8) >> 4
    }

    fn order(&self) -> u32 {
        crate::sample::order(self.mag)
    }

    fn learn(&mut self, len: u64, u: u64) {
        self.mean16 = self.mean16 - (self.mean16 >> 4) + len.min(1 << 40);
        self.mag = self.mag - (self.mag >> 3) + u.min(1 << 40);
    }
}

/// Builds a block series by series, in ascending id order.
#[derive(Debug, Default, Clone)]
pub struct BlockWriter {
    n: u64,
    head: BitWriter,
    lens: BitWriter,
    body: BitWriter,
    prev_id: Option<u64>,
    prev_count: u64,
    prev_strip: u32,
    run: u64,
    model: LenModel,
    /// Bits of the series' streams as given (before stripping): what the sample codec spent.
    stream_bits: u64,
    stripped_first: u64,
    stripped: u64,
}

impl BlockWriter {
    pub fn new() -> Self {
        BlockWriter::default()
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

    /// Add series `id` (greater than every id added before) with `count` samples, whose
    /// stream is the first `bits` bits of `chunk`.
    pub fn push(&mut self, id: u64, count: u64, chunk: &[u8], bits: u64) {
        let bits = bits.min(chunk.len() as u64 * 8);
        debug_assert!(self.prev_id.is_none_or(|p| id > p), "ids ascend");
        // Leading zero bits of the stream, up to MAX_STRIP.
        let lead = chunk.first().map_or(0, |b| b.leading_zeros());
        let strip = lead.min(MAX_STRIP).min(bits as u32);
        let regular = self.prev_id.is_some_and(|p| id == p.wrapping_add(1))
            && count == self.prev_count
            && strip == self.prev_strip;
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
            self.head.bits(strip as u64, 2);
        }
        let len = bits - strip as u64;
        let u = zigzag(len.wrapping_sub(self.model.predict()) as i64);
        self.lens.rice(u, self.model.order());
        self.model.learn(len, u);
        self.body.append(chunk, strip as u64, bits);
        self.stream_bits += bits;
        self.stripped += strip as u64;
        self.stripped_first += u64::from(strip > 0);
        self.prev_id = Some(id);
        self.prev_count = count;
        self.prev_strip = strip;
        self.n += 1;
    }

    /// Bits of the series' streams as they were pushed.
    pub fn stream_bits(&self) -> u64 {
        self.stream_bits
    }

    /// Leading zero bits left out of the streams: (series that lost their first bit, all).
    pub fn stripped(&self) -> (u64, u64) {
        (self.stripped_first, self.stripped)
    }

    /// Bits of the head and lens so far: what says which series are in the block and
    /// where their samples are.
    pub fn index_bits(&self) -> u64 {
        self.head.bit_len() + self.lens.bit_len()
    }

    /// The block's parts: (series count, head bytes, lens bytes, body bytes). The head ends
    /// with the last run.
    pub fn finish(&mut self) -> (u64, Vec<u8>, &[u8], &[u8]) {
        let mut head = std::mem::take(&mut self.head);
        head.exp_golomb(self.run, 0);
        (
            self.n,
            head.into_bytes(),
            self.lens.as_bytes(),
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

/// A series' stream: bits `from..to` of `buf` after `zeros` zero bits left out.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BitSpan<'a> {
    pub buf: &'a [u8],
    pub from: u64,
    pub to: u64,
    pub zeros: u32,
    /// Whether the stream must end exactly at `to` (a block's series; a Samples entry's
    /// chunk ends in padding).
    pub exact: bool,
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
        }
    }

    pub fn reader(&self) -> BitReader<'a> {
        BitReader::slice(self.buf, self.from, self.to, self.zeros)
    }
}

/// The parts of a block as stored; [`Block::series`] walks them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Block<'a> {
    pub n: u64,
    pub head: &'a [u8],
    pub lens: &'a [u8],
    pub body: &'a [u8],
}

impl<'a> Block<'a> {
    pub fn series(&self) -> BlockIter<'a> {
        BlockIter {
            left: self.n,
            run: 0,
            head: BitReader::new(self.head),
            lens: BitReader::new(self.lens),
            body: self.body,
            at: 0,
            prev_id: None,
            prev_count: 0,
            prev_strip: 0,
            model: LenModel::default(),
            started: false,
            done: false,
        }
    }
}

/// The series of a block in order; an error (once, then the end) if the parts disagree.
pub struct BlockIter<'a> {
    left: u64,
    /// Regular series still to come before the next spelled-out one.
    run: u64,
    head: BitReader<'a>,
    lens: BitReader<'a>,
    body: &'a [u8],
    at: u64,
    prev_id: Option<u64>,
    prev_count: u64,
    prev_strip: u32,
    model: LenModel,
    started: bool,
    done: bool,
}

impl<'a> BlockIter<'a> {
    fn step(&mut self) -> Result<Option<BlockSeries<'a>>, DecodeError> {
        if self.left == 0 {
            // The head's last run must have been read, and every part used up to its padding.
            if self.run != 0 {
                return Err(self.head.err("block head: a run past the series count"));
            }
            let (body_bits, used) = (self.body.len() as u64 * 8, self.at);
            if self.head.remaining_bits() >= 8
                || self.lens.remaining_bits() >= 8
                || body_bits - used >= 8
            {
                return Err(DecodeError::new(0, "block: bytes after its last series"));
            }
            return Ok(None);
        }
        let spelled = self.run == 0;
        let (id, count, strip) = if !spelled {
            self.run -= 1;
            let id = self
                .prev_id
                .and_then(|p| p.checked_add(1))
                .ok_or_else(|| self.head.err("block head: id past 2^64"))?;
            (id, self.prev_count, self.prev_strip)
        } else {
            let gap = self.head.exp_golomb(0)?;
            let id = match self.prev_id {
                None => Some(gap),
                Some(p) => p.checked_add(1).and_then(|x| x.checked_add(gap)),
            }
            .ok_or_else(|| self.head.err("block head: id past 2^64"))?;
            let dc = unzigzag(self.head.exp_golomb(0)?);
            let count = self.prev_count.wrapping_add(dc as u64);
            let strip = self.head.bits(2)? as u32;
            if count == 0 || strip > MAX_STRIP {
                return Err(self.head.err("block head: a series with no samples"));
            }
            (id, count, strip)
        };
        let u = self.lens.rice(self.model.order())?;
        let len = self.model.predict().wrapping_add(unzigzag(u) as u64);
        self.model.learn(len, u);
        let body_bits = self.body.len() as u64 * 8;
        if len > body_bits - self.at {
            return Err(self.lens.err("block: a series longer than the body"));
        }
        // Every sample takes at least one bit: a count beyond the bits is damage.
        if count > len + strip as u64 {
            return Err(self.head.err("block: more samples than bits"));
        }
        let span = BitSpan {
            buf: self.body,
            from: self.at,
            to: self.at + len,
            zeros: strip,
            exact: true,
        };
        self.at += len;
        self.left -= 1;
        self.prev_id = Some(id);
        self.prev_count = count;
        self.prev_strip = strip;
        if spelled {
            // The run of regular series after it (the last one closes the head).
            self.run = self.head.exp_golomb(0)?;
        }
        Ok(Some(BlockSeries { id, count, span }))
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
mod tests {
    use super::*;
    use crate::record::{decode_record, Entry, RecordWriter};
    use crate::sample::{for_each_in, SeriesCodec};
    use rrd::Sample;

    /// splitmix64, for cases.
    struct Rng(u64);
    impl Rng {
        fn next(&mut self) -> u64 {
            self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
            let mut z = self.0;
            z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
            z ^ (z >> 31)
        }
        fn below(&mut self, n: u64) -> u64 {
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

    #[test]
    fn every_series_comes_back_with_its_bits() {
        let mut rng = Rng(7);
        for case in 0..300 {
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
                let count = if rng.below(6) == 0 {
                    1 + rng.below(40)
                } else {
                    3
                };
                let (chunk, bits) = chunk_of(&mut rng);
                input.push((id, count.min(bits), chunk, bits));
            }
            let mut w = BlockWriter::new();
            for (id, count, chunk, bits) in &input {
                w.push(*id, *count, chunk, *bits);
            }
            let (n2, head, lens, body) = w.finish();
            assert_eq!(n2, n);
            let block = Block {
                n,
                head: &head,
                lens,
                body,
            };
            let got: Vec<_> = block.series().collect::<Result<_, _>>().unwrap();
            assert_eq!(got.len(), input.len(), "case {case}");
            for (g, (id, count, chunk, bits)) in got.iter().zip(&input) {
                assert_eq!((g.id, g.count), (*id, *count), "case {case}");
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

    #[test]
    fn a_steady_commit_costs_its_streams_and_little_else() {
        // 4,000 series of one sample each, ids 1..=4000, streams of 18-21 bits that start
        // with `00`: the head is a few bytes and the lens about 2.5 bits a series.
        let mut rng = Rng(3);
        let mut w = BlockWriter::new();
        for id in 1..=4000u64 {
            let bits = 18 + rng.below(4);
            let mut c = BitWriter::new();
            c.bits(0, 2);
            for _ in 2..bits {
                c.bit(rng.below(2) == 1);
            }
            w.push(id, 1, c.as_bytes(), bits);
        }
        let streams = w.stream_bits();
        let (_, head, lens, body) = w.finish();
        assert!(head.len() <= 8, "head {} bytes", head.len());
        assert!(lens.len() * 8 <= 4000 * 3, "lens {} bytes", lens.len());
        assert_eq!(body.len() as u64, (streams - 2 * 4000).div_ceil(8));
    }

    #[test]
    fn sample_streams_decode_from_a_block_as_from_their_chunks() {
        // Real sample streams through a record: what replay does.
        let mut rng = Rng(11);
        let seeds: Vec<SeriesCodec> = (0..50)
            .map(|i| SeriesCodec::seed(1_000_000 + i, 0, ["100"]))
            .collect();
        let mut enc = seeds.clone();
        let mut want: Vec<Vec<Sample>> = vec![Vec::new(); 50];
        let mut rec = RecordWriter::new();
        for (i, c) in enc.iter_mut().enumerate() {
            if i % 7 == 3 {
                continue; // not in this commit
            }
            let mut w = BitWriter::new();
            let mut v = 100u64;
            for k in 1..=(1 + i as i64 % 3) {
                v += rng.below(50_000);
                let s = Sample {
                    time: 1_000_000 + i as i64 + 300 * k,
                    usec: 0,
                    values: vec![v.to_string()],
                };
                c.encode(&mut w, &s).unwrap();
                want[i].push(s);
            }
            rec.block_series(
                i as u64 + 1,
                want[i].len() as u64,
                w.as_bytes(),
                w.bit_len(),
            );
        }
        let payload = rec.finish();
        let entries = decode_record(&payload).unwrap();
        let Entry::Block(b) = &entries[0] else {
            panic!("{entries:?}")
        };
        let mut dec = seeds.clone();
        let mut seen = 0;
        for s in b.series() {
            let s = s.unwrap();
            let i = (s.id - 1) as usize;
            let mut r = s.span.reader();
            let mut got = Vec::new();
            for_each_in(&mut dec[i], &mut r, s.count, |x| {
                got.push(x.clone());
                Ok::<(), DecodeError>(())
            })
            .unwrap();
            assert!(r.at_end());
            assert_eq!(got, want[i]);
            seen += 1;
        }
        assert_eq!(seen, 50 - 7);
    }

    #[test]
    fn a_damaged_block_is_an_error_not_a_panic() {
        let mut rng = Rng(5);
        let mut w = BlockWriter::new();
        for id in 1..=30u64 {
            let (chunk, bits) = chunk_of(&mut rng);
            w.push(id * 2, 1, &chunk, bits);
        }
        let (n, head, lens, body) = w.finish();
        let (lens, body) = (lens.to_vec(), body.to_vec());
        let walk = |n: u64, head: &[u8], lens: &[u8], body: &[u8]| {
            Block {
                n,
                head,
                lens,
                body,
            }
            .series()
            .collect::<Result<Vec<_>, _>>()
            .map(|v| v.len())
        };
        assert!(walk(n, &head, &lens, &body).is_ok());
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
                    p[part].truncate(at);
                    let _ = walk(n, &p[0], &p[1], &p[2]);
                }
            }
        }
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
