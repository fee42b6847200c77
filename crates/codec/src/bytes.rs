//! Little-endian byte writer and bounds-checked reader (varints and [`DecodeError`] are
//! `bitio`'s).
//!
//! All multi-byte integers in ringlet's files are little-endian; floats are stored as the
//! little-endian bytes of their IEEE-754 bit pattern (NaN payloads and signs survive). The
//! reader never panics on short or malformed input: it returns [`DecodeError`] with the offset.

pub use bitio::DecodeError;

/// Appends little-endian fields to a byte vector.
#[derive(Debug, Default, Clone)]
pub struct ByteWriter {
    pub buf: Vec<u8>,
}

impl ByteWriter {
    pub fn new() -> Self {
        ByteWriter { buf: Vec::new() }
    }

    pub fn u8(&mut self, v: u8) {
        self.buf.push(v);
    }

    pub fn u32(&mut self, v: u32) {
        self.buf.extend_from_slice(&v.to_le_bytes());
    }

    pub fn u64(&mut self, v: u64) {
        self.buf.extend_from_slice(&v.to_le_bytes());
    }

    pub fn i64(&mut self, v: i64) {
        self.buf.extend_from_slice(&v.to_le_bytes());
    }

    pub fn f64(&mut self, v: f64) {
        self.u64(v.to_bits());
    }

    /// Unsigned LEB128: 7 bits per byte, low group first, high bit = more follows.
    pub fn varint(&mut self, v: u64) {
        bitio::put_varint(&mut self.buf, v);
    }

    /// Varint length, then the bytes.
    pub fn bytes(&mut self, b: &[u8]) {
        self.varint(b.len() as u64);
        self.buf.extend_from_slice(b);
    }

    pub fn str(&mut self, s: &str) {
        self.bytes(s.as_bytes());
    }

    pub fn raw(&mut self, b: &[u8]) {
        self.buf.extend_from_slice(b);
    }
}

/// Reads what [`ByteWriter`] wrote, checking every bound.
#[derive(Debug, Clone)]
pub struct ByteReader<'a> {
    buf: &'a [u8],
    pos: usize,
}

impl<'a> ByteReader<'a> {
    pub fn new(buf: &'a [u8]) -> Self {
        ByteReader { buf, pos: 0 }
    }

    pub fn pos(&self) -> usize {
        self.pos
    }

    /// The bytes not read yet.
    pub fn rest(&self) -> &'a [u8] {
        &self.buf[self.pos..]
    }

    pub fn remaining(&self) -> usize {
        self.buf.len() - self.pos
    }

    pub fn err(&self, what: impl Into<String>) -> DecodeError {
        DecodeError::new(self.pos, what)
    }

    pub fn take(&mut self, n: usize) -> Result<&'a [u8], DecodeError> {
        if self.remaining() < n {
            return Err(self.err(format!("need {n} bytes, have {}", self.remaining())));
        }
        let s = &self.buf[self.pos..self.pos + n];
        self.pos += n;
        Ok(s)
    }

    fn array<const N: usize>(&mut self) -> Result<[u8; N], DecodeError> {
        let mut a = [0u8; N];
        a.copy_from_slice(self.take(N)?);
        Ok(a)
    }

    pub fn u8(&mut self) -> Result<u8, DecodeError> {
        Ok(self.take(1)?[0])
    }

    pub fn u32(&mut self) -> Result<u32, DecodeError> {
        Ok(u32::from_le_bytes(self.array()?))
    }

    pub fn u64(&mut self) -> Result<u64, DecodeError> {
        Ok(u64::from_le_bytes(self.array()?))
    }

    pub fn i64(&mut self) -> Result<i64, DecodeError> {
        Ok(i64::from_le_bytes(self.array()?))
    }

    pub fn f64(&mut self) -> Result<f64, DecodeError> {
        Ok(f64::from_bits(self.u64()?))
    }

    pub fn varint(&mut self) -> Result<u64, DecodeError> {
        let start = self.pos;
        bitio::read_varint(self.buf, &mut self.pos).map_err(|e| match e {
            bitio::VarintError::Truncated(at) => DecodeError::new(at, "need 1 bytes, have 0"),
            bitio::VarintError::Overflow => DecodeError::new(start, "varint overflows 64 bits"),
            bitio::VarintError::TooLong => DecodeError::new(start, "varint longer than 10 bytes"),
        })
    }

    /// A varint that must fit `usize` and be at most `max` (guards allocations).
    pub fn len(&mut self, max: usize) -> Result<usize, DecodeError> {
        let start = self.pos;
        let v = self.varint()?;
        if v > max as u64 {
            return Err(DecodeError::new(start, format!("length {v} exceeds {max}")));
        }
        Ok(v as usize)
    }

    pub fn bytes(&mut self) -> Result<&'a [u8], DecodeError> {
        let n = self.len(self.remaining())?;
        self.take(n)
    }

    pub fn str(&mut self) -> Result<String, DecodeError> {
        let start = self.pos;
        let b = self.bytes()?;
        String::from_utf8(b.to_vec()).map_err(|_| DecodeError::new(start, "string is not UTF-8"))
    }

    /// Fails unless every byte was consumed.
    pub fn finish(&self) -> Result<(), DecodeError> {
        if self.remaining() != 0 {
            return Err(self.err(format!("{} trailing bytes", self.remaining())));
        }
        Ok(())
    }
}

/// A source read by position: `read(off, buf)` fills `buf` from byte `off` and returns how
/// many bytes it gave (0 only past the end).
pub type ReadAt<'a> = dyn FnMut(u64, &mut [u8]) -> Result<usize, String> + 'a;

/// Reads what [`ByteWriter`] wrote from a source too large to hold at once (a checkpoint
/// file read for one series), a window at a time, with [`ByteReader`]'s checks. `read(off,
/// buf)` fills `buf` from byte `off` of the source and returns how many bytes it gave.
pub struct WindowReader<'s> {
    read: &'s mut ReadAt<'s>,
    total: u64,
    buf: Vec<u8>,
    /// Source offset of `buf[0]`.
    start: u64,
    pos: usize,
    end: usize,
}

impl<'s> WindowReader<'s> {
    /// A source of `total` bytes, read `window` bytes at a time (more for a longer item).
    pub fn new(total: u64, window: usize, read: &'s mut ReadAt<'s>) -> Self {
        WindowReader {
            read,
            total,
            buf: vec![0; window.max(16)],
            start: 0,
            pos: 0,
            end: 0,
        }
    }

    /// Position in the source.
    pub fn pos(&self) -> u64 {
        self.start + self.pos as u64
    }

    pub fn remaining(&self) -> u64 {
        self.total - self.pos()
    }

    pub fn err(&self, what: impl Into<String>) -> DecodeError {
        DecodeError::new(self.pos() as usize, what)
    }

    /// Make `n` bytes (at most what remains) available at `pos`.
    fn fill(&mut self, n: usize) -> Result<(), DecodeError> {
        if self.end - self.pos >= n {
            return Ok(());
        }
        if self.remaining() < n as u64 {
            return Err(self.err(format!("need {n} bytes, have {}", self.remaining())));
        }
        self.buf.copy_within(self.pos..self.end, 0);
        self.start += self.pos as u64;
        self.end -= self.pos;
        self.pos = 0;
        if self.buf.len() < n {
            self.buf.resize(n, 0);
        }
        while self.end < n {
            let at = self.start + self.end as u64;
            let want = (self.buf.len() - self.end).min((self.total - at) as usize);
            let got = (self.read)(at, &mut self.buf[self.end..self.end + want])
                .map_err(|e| self.err(e))?;
            if got == 0 {
                return Err(self.err("source ended early"));
            }
            self.end += got.min(want);
        }
        Ok(())
    }

    pub fn take(&mut self, n: usize) -> Result<&[u8], DecodeError> {
        self.fill(n)?;
        let s = &self.buf[self.pos..self.pos + n];
        self.pos += n;
        Ok(s)
    }

    /// Pass over `n` bytes without keeping them.
    pub fn skip(&mut self, n: u64) -> Result<(), DecodeError> {
        if self.remaining() < n {
            return Err(self.err(format!("need {n} bytes, have {}", self.remaining())));
        }
        let here = (self.end - self.pos) as u64;
        if n <= here {
            self.pos += n as usize;
        } else {
            self.start = self.pos() + n;
            self.pos = 0;
            self.end = 0;
        }
        Ok(())
    }

    pub fn varint(&mut self) -> Result<u64, DecodeError> {
        let at = self.pos();
        self.fill(10.min(self.remaining() as usize))?;
        let mut r = ByteReader::new(&self.buf[self.pos..self.end]);
        let v = r
            .varint()
            .map_err(|e| DecodeError::new(at as usize, e.what))?;
        self.pos += r.pos();
        Ok(v)
    }

    /// A varint that must fit `usize` and be at most `max` (guards allocations).
    pub fn len(&mut self, max: u64) -> Result<usize, DecodeError> {
        let at = self.pos();
        let v = self.varint()?;
        if v > max || usize::try_from(v).is_err() {
            return Err(DecodeError::new(
                at as usize,
                format!("length {v} exceeds {max}"),
            ));
        }
        Ok(v as usize)
    }

    pub fn bytes(&mut self) -> Result<&[u8], DecodeError> {
        let n = self.len(self.remaining())?;
        self.take(n)
    }

    pub fn str(&mut self) -> Result<String, DecodeError> {
        let at = self.pos();
        let b = self.bytes()?.to_vec();
        String::from_utf8(b).map_err(|_| DecodeError::new(at as usize, "string is not UTF-8"))
    }

    /// Fails unless every byte was consumed.
    pub fn finish(&self) -> Result<(), DecodeError> {
        if self.remaining() != 0 {
            return Err(self.err(format!("{} trailing bytes", self.remaining())));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_window_reader_reads_what_a_byte_reader_reads() {
        let mut w = ByteWriter::new();
        for i in 0..500u64 {
            w.varint(i * 977);
            w.str(&"x".repeat(i as usize % 40));
            w.bytes(&vec![i as u8; (i as usize * 13) % 300]);
        }
        let all = w.buf;
        for window in [16, 100, 4096] {
            let mut src = |off: u64, b: &mut [u8]| -> Result<usize, String> {
                let from = &all[off as usize..];
                let n = b.len().min(from.len()).min(37);
                b[..n].copy_from_slice(&from[..n]);
                Ok(n)
            };
            let mut r = WindowReader::new(all.len() as u64, window, &mut src);
            let mut b = ByteReader::new(&all);
            for i in 0..500u64 {
                assert_eq!(r.varint().unwrap(), b.varint().unwrap());
                assert_eq!(r.str().unwrap(), b.str().unwrap());
                if i % 2 == 0 {
                    assert_eq!(r.bytes().unwrap(), b.bytes().unwrap());
                } else {
                    let n = r.len(u64::MAX).unwrap();
                    r.skip(n as u64).unwrap();
                    b.bytes().unwrap();
                }
                assert_eq!(r.pos(), b.pos() as u64);
            }
            r.finish().unwrap();
            assert!(r.varint().is_err());
        }
    }

    #[test]
    fn varint_roundtrips_edges() {
        for v in [0u64, 1, 127, 128, 300, 1 << 35, u64::MAX - 1, u64::MAX] {
            let mut w = ByteWriter::new();
            w.varint(v);
            let mut r = ByteReader::new(&w.buf);
            assert_eq!(r.varint().unwrap(), v);
            r.finish().unwrap();
        }
    }

    #[test]
    fn varint_rejects_overlong() {
        let buf = [0xFFu8; 11];
        assert!(ByteReader::new(&buf).varint().is_err());
        let buf = [0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0x02];
        assert!(ByteReader::new(&buf).varint().is_err());
    }

    #[test]
    fn short_input_is_an_error_not_a_panic() {
        let mut r = ByteReader::new(&[1, 2, 3]);
        assert!(r.u64().is_err());
        let mut r = ByteReader::new(&[5, b'a']);
        assert!(r.bytes().is_err());
    }
}
