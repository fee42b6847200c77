//! Fields of up to 64 bits packed least significant bit first (the archive rows' packed
//! blocks, docs/FORMAT.md "RRD image"). Not [`crate::msb`]'s order: both are on-disk formats.

/// Fields of up to 64 bits appended least significant bit first, the last byte padded with
/// zeros.
pub struct Writer<'a> {
    out: &'a mut Vec<u8>,
    acc: u128,
    n: u32,
}

impl<'a> Writer<'a> {
    #[inline]
    pub fn new(out: &'a mut Vec<u8>) -> Self {
        Writer { out, acc: 0, n: 0 }
    }

    /// The low `w` bits of `v` (`w <= 64`).
    #[inline]
    pub fn put(&mut self, v: u64, w: u8) {
        let v = if w >= 64 { v } else { v & ((1u64 << w) - 1) };
        self.acc |= u128::from(v) << self.n;
        self.n += u32::from(w);
        while self.n >= 8 {
            self.out.push(self.acc as u8);
            self.acc >>= 8;
            self.n -= 8;
        }
    }

    #[inline]
    pub fn finish(self) {
        if self.n > 0 {
            self.out.push(self.acc as u8);
        }
    }
}

/// Fields read as [`Writer`] wrote them, from bytes the caller checked are there.
pub struct Reader<'a> {
    buf: &'a [u8],
    pos: usize,
    acc: u128,
    n: u32,
}

impl<'a> Reader<'a> {
    #[inline]
    pub fn new(buf: &'a [u8]) -> Self {
        Reader {
            buf,
            pos: 0,
            acc: 0,
            n: 0,
        }
    }

    /// The next `w` bits (`w <= 64`); zeros past the end of the bytes.
    #[inline]
    pub fn get(&mut self, w: u8) -> u64 {
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
