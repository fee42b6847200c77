//! Values read back from their blocks ([`super::encode`]), bit for bit, from bytes that
//! may be damaged: every length is checked before it is used.

use super::*;

/// Why [`decode_values`] stopped: the byte offset in its input and what was wrong.
#[derive(Debug, Clone, PartialEq)]
pub struct PackError {
    pub offset: usize,
    pub what: &'static str,
}

/// Read `n` values written by [`encode_values`] from the start of `buf`, appending them to
/// `out`. Returns how many bytes they took.
/// The varint at `*pos` of `buf`, moving `*pos` past it.
pub(super) fn read_varint(buf: &[u8], pos: &mut usize) -> Result<u64, PackError> {
    let start = *pos;
    bitio::read_varint(buf, pos).map_err(|e| PackError {
        offset: start,
        what: match e {
            bitio::VarintError::Truncated(_) => "truncated varint",
            bitio::VarintError::Overflow | bitio::VarintError::TooLong => "varint too long",
        },
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
pub(super) const BLOCK_PACKED: u64 = 4 + EXT_PACKED;

/// A block's header at `*pos`: its number of values and its kind (0 to 3, or 4 plus the
/// extended kind), `*pos` moved past it.
pub(super) fn block_head(buf: &[u8], pos: &mut usize) -> Result<(usize, u64), PackError> {
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
pub(super) fn decode_packed(buf: &[u8], n: usize, out: &mut Vec<f64>) -> Result<usize, PackError> {
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
