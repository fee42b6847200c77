//! emoncms's feeds held by the store (the blobs of the `--phpfina` and `--phptimeseries`
//! views, `view::Kind`) as series the other ways in read: the web page and Graphite's API show feed
//! `<id>` as the series `emoncms/<id>.rrd`, the name `ringlet import phpfina` gives it
//! (Graphite path `emoncms.<id>`), one data source `value`: a PHPFina feed's points, one an
//! interval from its meta's start time; a PHPTimeSeries feed's records averaged in slots of
//! its commonest gap. A series of that name (an imported feed) is shown instead.
//!
//! The values are read from the `.dat` blob for the slots asked, a range at a time; nothing
//! is converted or kept.

use crate::daemon::Blobs;
use codec::emoncms::RECORD;

/// The series names of feeds begin with this.
pub const PREFIX: &str = "emoncms/";

/// The blob names of the PHPFina view's files begin with this (`phpfina/12.dat`).
pub const PHPFINA: &str = "phpfina/";

/// The blob names of the PHPTimeSeries view's files begin with this.
pub const PHPTIMESERIES: &str = "phptimeseries/";

/// Which of emoncms's engines holds a feed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Engine {
    /// `<id>.meta` and `<id>.dat`: a point an interval.
    PhpFina,
    /// `feed_<id>.MYD`: 9-byte records (249, u32 time, float32 value) in time order.
    PhpTimeSeries,
}

impl Engine {
    pub fn name(self) -> &'static str {
        match self {
            Engine::PhpFina => "PHPFina",
            Engine::PhpTimeSeries => "PHPTimeSeries",
        }
    }
}

/// Records of a PHPTimeSeries feed whose gaps give its interval.
const GAPS: u64 = 64;

/// An emoncms feed the store holds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Feed {
    pub id: u32,
    pub engine: Engine,
    /// Seconds a point: the meta's (0 while it is not written whole: no points then); for
    /// PHPTimeSeries the commonest gap between its last records (60 with fewer than two).
    pub interval: u32,
    /// The time of the first point (0: none yet).
    pub start: u32,
    /// Points (PHPFina) or records (PHPTimeSeries).
    pub npoints: u64,
    /// The time of the last point.
    last: i64,
}

impl Feed {
    /// Its series name.
    pub fn name(&self) -> String {
        format!("{PREFIX}{}.rrd", self.id)
    }

    /// The time of its last point (its start when it has none).
    pub fn last(&self) -> i64 {
        self.last
    }

    fn blob(&self) -> String {
        match self.engine {
            Engine::PhpFina => format!("{PHPFINA}{}.dat", self.id),
            Engine::PhpTimeSeries => format!("{PHPTIMESERIES}feed_{}.MYD", self.id),
        }
    }

    /// The feed's values for `n` slots of its interval from `first` (a time): PHPFina, each
    /// the point at the slot's time; PHPTimeSeries, the mean of the records in the slot. NaN
    /// where there is none.
    pub fn values(&self, store: Blobs<'_>, first: i64, n: usize) -> Result<Vec<f64>, String> {
        let mut out = vec![f64::NAN; n];
        let iv = i64::from(self.interval);
        if iv == 0 || self.npoints == 0 || n == 0 {
            return Ok(out);
        }
        if self.engine == Engine::PhpTimeSeries {
            return self.record_values(store, first, out);
        }
        // The positions the slots fall on, clipped to the points there are.
        let pos0 = (first - i64::from(self.start)).div_euclid(iv);
        let lo = pos0.max(0);
        let hi = (pos0 + n as i64).min(self.npoints as i64);
        if lo >= hi {
            return Ok(out);
        }
        let bytes = store
            .read(&self.blob(), 4 * lo as u64, 4 * (hi - lo) as u64)
            .map_err(|e| e.to_string())?;
        for (k, w) in bytes.chunks_exact(4).enumerate() {
            let v = codec::emoncms::value(w.try_into().expect("4 bytes"));
            out[(lo - pos0) as usize + k] = f64::from(v);
        }
        Ok(out)
    }

    /// Record `i` of a PHPTimeSeries feed: (time, value).
    fn record(&self, store: Blobs<'_>, i: u64) -> Result<(i64, f32), String> {
        let b = store
            .read(&self.blob(), i * RECORD, RECORD)
            .map_err(|e| e.to_string())?;
        Ok(parse_record(&b).unwrap_or((i64::MAX, f32::NAN)))
    }

    fn record_values(
        &self,
        store: Blobs<'_>,
        first: i64,
        mut out: Vec<f64>,
    ) -> Result<Vec<f64>, String> {
        let iv = i64::from(self.interval);
        let end = first.saturating_add(iv.saturating_mul(out.len() as i64));
        // The first record at or after `first` (the records are in time order).
        let (mut lo, mut hi) = (0u64, self.npoints);
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            if self.record(store, mid)?.0 < first {
                lo = mid + 1;
            } else {
                hi = mid;
            }
        }
        let mut sums = vec![(0f64, 0u32); out.len()];
        let mut i = lo;
        'pieces: while i < self.npoints {
            let k = (self.npoints - i).min(4096);
            let b = store
                .read(&self.blob(), i * RECORD, k * RECORD)
                .map_err(|e| e.to_string())?;
            for r in b.chunks_exact(RECORD as usize) {
                let Some((t, v)) = parse_record(r) else {
                    continue;
                };
                if t >= end {
                    break 'pieces;
                }
                if t >= first && !v.is_nan() {
                    let slot = &mut sums[((t - first) / iv) as usize];
                    slot.0 += f64::from(v);
                    slot.1 += 1;
                }
            }
            i += k;
        }
        for (o, (sum, count)) in out.iter_mut().zip(sums) {
            if count > 0 {
                *o = sum / f64::from(count);
            }
        }
        Ok(out)
    }
}

/// A PHPTimeSeries record's (time, value).
fn parse_record(b: &[u8]) -> Option<(i64, f32)> {
    codec::emoncms::record(b).map(|(_, t, v)| (i64::from(t), v))
}

/// The meta's (interval, start) from its bytes (interval 0 while not written whole).
fn meta(b: &[u8]) -> (u32, u32) {
    codec::emoncms::meta(b).unwrap_or((0, 0))
}

/// Feed `id`, if the store holds its files: PHPFina's two, else PHPTimeSeries' one (emoncms
/// numbers its feeds across engines).
pub fn get(store: Blobs<'_>, id: u32) -> Option<Feed> {
    if let Some(len) = store.len(&format!("{PHPFINA}{id}.dat")) {
        let m = store.read(&format!("{PHPFINA}{id}.meta"), 0, 16).ok()?;
        let (interval, start) = meta(&m);
        let npoints = if interval == 0 { 0 } else { len / 4 };
        return Some(Feed {
            id,
            engine: Engine::PhpFina,
            interval,
            start,
            npoints,
            last: i64::from(start) + i64::from(interval) * (npoints.saturating_sub(1) as i64),
        });
    }
    let name = format!("{PHPTIMESERIES}feed_{id}.MYD");
    let len = store.len(&name)?;
    let n = len / RECORD;
    let mut f = Feed {
        id,
        engine: Engine::PhpTimeSeries,
        interval: 60,
        start: 0,
        npoints: n,
        last: 0,
    };
    if n == 0 {
        return Some(f);
    }
    let first = f.record(store, 0).ok()?.0;
    let k = n.min(GAPS);
    let b = store.read(&name, (n - k) * RECORD, k * RECORD).ok()?;
    let times: Vec<i64> = b
        .chunks_exact(RECORD as usize)
        .filter_map(|r| parse_record(r).map(|p| p.0))
        .collect();
    let mut gaps: Vec<i64> = times
        .windows(2)
        .map(|w| w[1] - w[0])
        .filter(|&g| g > 0)
        .collect();
    gaps.sort_unstable();
    // The commonest gap (the first of equals), within a u32.
    let mut best = (0usize, 60i64);
    let mut i = 0;
    while i < gaps.len() {
        let run = gaps[i..].iter().take_while(|&&g| g == gaps[i]).count();
        if run > best.0 {
            best = (run, gaps[i]);
        }
        i += run;
    }
    f.interval = u32::try_from(best.1).unwrap_or(60).max(1);
    f.start = u32::try_from(first).unwrap_or(0);
    f.last = times.last().copied().unwrap_or(first);
    Some(f)
}

/// The feed a series name names (`emoncms/<id>.rrd`), if the store holds it and no series
/// has that name.
pub fn by_name(store: Blobs<'_>, name: &str) -> Option<Feed> {
    let id: u32 = name
        .strip_prefix(PREFIX)?
        .strip_suffix(".rrd")?
        .parse()
        .ok()?;
    if store.is_series(name) || name != format!("{PREFIX}{id}.rrd") {
        return None;
    }
    get(store, id)
}

/// Every feed the store holds, by id, that no series' name hides.
pub fn list(store: Blobs<'_>) -> Vec<Feed> {
    let mut ids: Vec<u32> = store
        .list()
        .iter()
        .filter_map(|(n, _)| {
            if let Some(r) = n.strip_prefix(PHPFINA) {
                r.strip_suffix(".meta")?.parse().ok()
            } else {
                n.strip_prefix(PHPTIMESERIES)?
                    .strip_prefix("feed_")?
                    .strip_suffix(".MYD")?
                    .parse()
                    .ok()
            }
        })
        .collect();
    ids.sort_unstable();
    ids.dedup();
    ids.into_iter()
        .filter_map(|id| get(store, id))
        .filter(|f| !store.is_series(&f.name()))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use engine::Store;

    #[test]
    fn a_feeds_values_are_its_points_at_the_slots() {
        /// The test's store directory, removed however the test ends.
        struct Gone(std::path::PathBuf);
        impl Drop for Gone {
            fn drop(&mut self) {
                let _ = std::fs::remove_dir_all(&self.0);
            }
        }
        let dir = std::env::temp_dir().join(format!("ringlet-feeds-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let _gone = Gone(dir.clone());
        let mut s = Store::open(&dir, engine::Options::default()).unwrap();
        let meta: Vec<u8> = [0u32, 0, 10, 1000]
            .iter()
            .flat_map(|v| v.to_le_bytes())
            .collect();
        s.blob_create("phpfina/7.meta").unwrap();
        s.blob_write("phpfina/7.meta", 0, &meta).unwrap();
        s.blob_create("phpfina/7.dat").unwrap();
        let pts: Vec<u8> = [1.5f32, f32::NAN, 3.0]
            .iter()
            .flat_map(|v| v.to_le_bytes())
            .collect();
        s.blob_write("phpfina/7.dat", 0, &pts).unwrap();
        s.blob_create("phpfina/8.meta").unwrap();
        let f = by_name(Blobs::of(&s), "emoncms/7.rrd").unwrap();
        assert_eq!(
            (f.interval, f.start, f.npoints, f.last()),
            (10, 1000, 3, 1020)
        );
        let v = f.values(Blobs::of(&s), 990, 5).unwrap();
        assert!(v[0].is_nan() && v[2].is_nan() && v[4].is_nan());
        assert_eq!((v[1], v[3]), (1.5, 3.0));
        // Feed 8 has no data file: not a feed yet.
        assert_eq!(
            list(Blobs::of(&s)).iter().map(|f| f.id).collect::<Vec<_>>(),
            vec![7]
        );
        assert!(
            by_name(Blobs::of(&s), "emoncms/07.rrd").is_none()
                && by_name(Blobs::of(&s), "emoncms/7").is_none()
        );
        // A PHPTimeSeries feed: records mostly 10 s apart (one at 1015), averaged in 10-s slots.
        s.blob_create("phptimeseries/feed_9.MYD").unwrap();
        let mut recs = Vec::new();
        for (t, v) in [
            (1000u32, 1.0f32),
            (1010, 2.0),
            (1015, 4.0),
            (1020, 5.0),
            (1030, 6.0),
            (1040, 7.0),
        ] {
            recs.push(249u8);
            recs.extend(t.to_le_bytes());
            recs.extend(v.to_le_bytes());
        }
        s.blob_write("phptimeseries/feed_9.MYD", 0, &recs).unwrap();
        let f = by_name(Blobs::of(&s), "emoncms/9.rrd").unwrap();
        assert_eq!(
            (f.engine, f.interval, f.start, f.npoints, f.last()),
            (Engine::PhpTimeSeries, 10, 1000, 6, 1040)
        );
        let v = f.values(Blobs::of(&s), 990, 7).unwrap();
        assert!(v[0].is_nan() && v[6].is_nan());
        assert_eq!(&v[1..6], &[1.0, 3.0, 5.0, 6.0, 7.0]);
        assert_eq!(
            list(Blobs::of(&s)).iter().map(|f| f.id).collect::<Vec<_>>(),
            vec![7, 9]
        );
        drop(s);
    }
}
