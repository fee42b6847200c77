//! emoncms's feed files, as emoncms documents and writes them; the one place their layout is
//! read (the emoncms views, the store's feeds, `ringlet import phpfina`):
//! - PHPFina: `<id>.meta`, 16 bytes of little-endian u32 (0, 0, interval, start time);
//!   `<id>.dat`, float32 values (little-endian), one per interval from the start time (NaN
//!   for none).
//! - PHPTimeSeries: `feed_<id>.MYD`, 9-byte records (a byte 249, u32 time, float32 value).

/// Bytes of a PHPFina `.meta` file.
pub const META_LEN: u64 = 16;

/// Bytes of a PHPFina `.dat` value.
pub const VALUE: u64 = 4;

/// Bytes of a PHPTimeSeries record.
pub const RECORD: u64 = 9;

/// The first byte of a PHPTimeSeries record.
pub const RECORD_TAG: u8 = 249;

/// A PHPFina `.meta`'s (interval, start time); None where it is shorter than [`META_LEN`].
pub fn meta(b: &[u8]) -> Option<(u32, u32)> {
    let word = |at: usize| Some(u32::from_le_bytes(b.get(at..at + 4)?.try_into().ok()?));
    Some((word(8)?, word(12)?))
}

/// A PHPFina `.dat` value from its [`VALUE`] bytes.
pub fn value(w: [u8; 4]) -> f32 {
    f32::from_le_bytes(w)
}

/// A PHPTimeSeries record's (tag, time, value); None where `b` is shorter than [`RECORD`].
pub fn record(b: &[u8]) -> Option<(u8, u32, f32)> {
    let b = b.get(..RECORD as usize)?;
    Some((
        b[0],
        u32::from_le_bytes(b[1..5].try_into().ok()?),
        f32::from_le_bytes(b[5..9].try_into().ok()?),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn feed_files_read_back() {
        let mut m = vec![0u8; 8];
        m.extend(10u32.to_le_bytes());
        m.extend(1_700_000_000u32.to_le_bytes());
        assert_eq!(meta(&m), Some((10, 1_700_000_000)));
        assert_eq!(meta(&m[..15]), None);
        let mut r = vec![RECORD_TAG];
        r.extend(1_700_000_060u32.to_le_bytes());
        r.extend(2.5f32.to_le_bytes());
        assert_eq!(record(&r), Some((249, 1_700_000_060, 2.5)));
        assert_eq!(record(&r[..8]), None);
        assert_eq!(value(1.25f32.to_le_bytes()), 1.25);
    }
}
