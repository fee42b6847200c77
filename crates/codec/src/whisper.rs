//! Files of other stores that `ringlet import` reads: carbon's whisper files and emoncms's
//! PHPFina feeds. Here so that they can be fuzzed with the store's own decoders; no I/O.
//!
//! Whisper (big-endian: a 16-byte header of aggregation type, maximum retention,
//! xFilesFactor and archive count; 12 bytes an archive of offset, seconds a point and
//! points; 12 bytes a point of time and value), read from its documentation and
//! python3-whisper's files. PHPFina (emoncms's fixed-interval feeds): a 16-byte `.meta` whose
//! little-endian u32 at 8 is the interval and at 12 the first point's time, and a `.dat` of
//! little-endian f32 values one interval apart (NaN: none), read as a one-archive whisper
//! file.

/// One whisper archive: seconds a point, point count, and its valid points by time.
pub struct Archive {
    pub spp: u64,
    pub points: u64,
    pub data: std::collections::BTreeMap<i64, f64>,
}

/// A whisper file.
pub struct Whisper {
    pub method: u32,
    pub xff: f32,
    pub archives: Vec<Archive>,
}

fn be32(b: &[u8], at: usize) -> Option<u32> {
    let s: [u8; 4] = b.get(at..at + 4)?.try_into().ok()?;
    let mut s = s;
    s.reverse();
    Some(u32::from_le_bytes(s))
}

fn be64(b: &[u8], at: usize) -> Option<u64> {
    let s: [u8; 8] = b.get(at..at + 8)?.try_into().ok()?;
    let mut s = s;
    s.reverse();
    Some(u64::from_le_bytes(s))
}

/// Read a whisper file's bytes, checking every size and offset.
pub fn parse(b: &[u8]) -> Result<Whisper, String> {
    let bad = |why: &str| format!("not a whisper file ({why}; compressed whisper is not read)");
    let method = be32(b, 0).ok_or_else(|| bad("shorter than its header"))?;
    let xff = f32::from_bits(be32(b, 8).ok_or_else(|| bad("shorter than its header"))?);
    let count = be32(b, 12).ok_or_else(|| bad("shorter than its header"))? as usize;
    if !(1..=64).contains(&count) {
        return Err(bad(&format!("{count} archives")));
    }
    if !(1..=8).contains(&method) || !(0.0..=1.0).contains(&xff) {
        return Err(bad("an unknown aggregation method or xFilesFactor"));
    }
    let mut archives = Vec::with_capacity(count);
    for i in 0..count {
        let at = 16 + 12 * i;
        let (off, spp, points) = match (be32(b, at), be32(b, at + 4), be32(b, at + 8)) {
            (Some(o), Some(s), Some(p)) => (o as usize, u64::from(s), u64::from(p)),
            _ => return Err(bad("an archive table cut short")),
        };
        let end = (points as usize)
            .checked_mul(12)
            .and_then(|n| n.checked_add(off))
            .filter(|&e| e <= b.len() && off >= 16 + 12 * count);
        let Some(end) = end else {
            return Err(bad(&format!("archive {i} outside the file")));
        };
        if spp == 0 || points == 0 {
            return Err(bad(&format!("archive {i} of {spp} s x {points} points")));
        }
        let mut raw = Vec::with_capacity(points as usize);
        for p in (off..end).step_by(12) {
            let t = i64::from(be32(b, p).unwrap_or(0));
            let v = f64::from_bits(be64(b, p + 4).unwrap_or(0));
            if t > 0 && t % spp as i64 == 0 {
                raw.push((t, v));
            }
        }
        // Points of an earlier lap of the ring are stale: only the last `points` slots count.
        let newest = raw.iter().map(|p| p.0).max().unwrap_or(0);
        let oldest = newest - (points as i64 - 1) * spp as i64;
        let data = raw
            .into_iter()
            .filter(|&(t, v)| t >= oldest && !v.is_nan())
            .collect();
        archives.push(Archive { spp, points, data });
    }
    for w in archives.windows(2) {
        if w[1].spp <= w[0].spp || w[1].spp % w[0].spp != 0 {
            return Err(bad("archives whose precisions do not divide"));
        }
    }
    Ok(Whisper {
        method,
        xff,
        archives,
    })
}

/// A PHPFina feed (`.meta` and `.dat` bytes) as a one-archive whisper file.
pub fn parse_phpfina(meta: &[u8], dat: &[u8]) -> Result<Whisper, String> {
    let Some((interval, start)) = crate::emoncms::meta(meta) else {
        return Err("not a PHPFina feed (a .meta shorter than 16 bytes)".into());
    };
    if interval == 0 {
        return Err("not a PHPFina feed (an interval of 0)".into());
    }
    if !dat.len().is_multiple_of(4) {
        return Err(format!(
            "a .dat of {} bytes, not whole 4-byte values (cut short?)",
            dat.len()
        ));
    }
    let n = dat.len() / 4;
    if n > 0 && start == 0 {
        return Err("not a PHPFina feed (points without a start time)".into());
    }
    let step = i64::from(interval);
    let t0 = i64::from(start) - i64::from(start) % step;
    let data = dat
        .chunks_exact(4)
        .enumerate()
        .filter_map(|(i, c)| {
            let v = crate::emoncms::value([c[0], c[1], c[2], c[3]]);
            (!v.is_nan()).then_some((t0 + i as i64 * step, f64::from(v)))
        })
        .collect();
    let rows = (n as u64).max((366 * 86_400 / u64::from(interval)).max(1));
    Ok(Whisper {
        method: 1,
        xff: 0.5,
        archives: vec![Archive {
            spp: u64::from(interval),
            points: rows,
            data,
        }],
    })
}
