//! emoncms's PHPFina feeds held by the store (the blobs of `--phpfina`'s view,
//! `view::Kind`) as series the other ways in read: the web page and Graphite's API show feed
//! `<id>` as the series `emoncms/<id>.rrd`, the name `ringlet import phpfina` gives it
//! (Graphite path `emoncms.<id>`), one data source `value`, one point an interval from the meta's start
//! time. A series of that name (an imported feed) is shown instead.
//!
//! The values are read from the `.dat` blob for the slots asked, a range at a time; nothing
//! is converted or kept.

use engine::Store;

/// The series names of feeds begin with this.
pub const PREFIX: &str = "emoncms/";

/// The blob names of the PHPFina view's files begin with this (`phpfina/12.dat`).
pub const PHPFINA: &str = "phpfina/";

/// The blob names of the PHPTimeSeries view's files begin with this.
pub const PHPTIMESERIES: &str = "phptimeseries/";

/// A PHPFina feed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Feed {
    pub id: u32,
    /// Seconds a point; 0 while its meta is not written whole (no points then).
    pub interval: u32,
    /// The time of the first point (0: none yet).
    pub start: u32,
    pub npoints: u64,
}

impl Feed {
    /// Its series name.
    pub fn name(&self) -> String {
        format!("{PREFIX}{}.rrd", self.id)
    }

    /// The time of its last point (its start when it has none).
    pub fn last(&self) -> i64 {
        i64::from(self.start) + i64::from(self.interval) * (self.npoints.saturating_sub(1) as i64)
    }

    fn dat(&self) -> String {
        format!("{PHPFINA}{}.dat", self.id)
    }

    /// The feed's values for `n` slots of its interval from `first` (a time): each the point
    /// at the slot's time, NaN where there is none.
    pub fn values(&self, store: &Store, first: i64, n: usize) -> Result<Vec<f64>, String> {
        let mut out = vec![f64::NAN; n];
        let iv = i64::from(self.interval);
        if iv == 0 || self.npoints == 0 || n == 0 {
            return Ok(out);
        }
        // The positions the slots fall on, clipped to the points there are.
        let pos0 = (first - i64::from(self.start)).div_euclid(iv);
        let lo = pos0.max(0);
        let hi = (pos0 + n as i64).min(self.npoints as i64);
        if lo >= hi {
            return Ok(out);
        }
        let bytes = store
            .blob_read(&self.dat(), 4 * lo as u64, 4 * (hi - lo) as u64)
            .map_err(|e| e.to_string())?;
        for (k, w) in bytes.chunks_exact(4).enumerate() {
            let v = f32::from_le_bytes(w.try_into().expect("4 bytes"));
            out[(lo - pos0) as usize + k] = f64::from(v);
        }
        Ok(out)
    }
}

/// The meta's (interval, start) from its bytes (interval 0 while not written whole).
fn meta(b: &[u8]) -> (u32, u32) {
    if b.len() < 16 {
        return (0, 0);
    }
    let word = |i: usize| u32::from_le_bytes(b[i..i + 4].try_into().expect("4 bytes"));
    (word(8), word(12))
}

/// Feed `id`, if the store holds both its files.
pub fn get(store: &Store, id: u32) -> Option<Feed> {
    let p = PHPFINA;
    let len = store.blob_len(&format!("{p}{id}.dat"))?;
    let m = store.blob_read(&format!("{p}{id}.meta"), 0, 16).ok()?;
    let (interval, start) = meta(&m);
    Some(Feed {
        id,
        interval,
        start,
        npoints: if interval == 0 { 0 } else { len / 4 },
    })
}

/// The feed a series name names (`emoncms/<id>.rrd`), if the store holds it and no series
/// has that name.
pub fn by_name(store: &Store, name: &str) -> Option<Feed> {
    let id: u32 = name
        .strip_prefix(PREFIX)?
        .strip_suffix(".rrd")?
        .parse()
        .ok()?;
    if store.get(name).is_some() || name != format!("{PREFIX}{id}.rrd") {
        return None;
    }
    get(store, id)
}

/// Every feed the store holds (both files), by id, that no series' name hides.
pub fn list(store: &Store) -> Vec<Feed> {
    let p = PHPFINA;
    let mut ids: Vec<u32> = store
        .blobs()
        .iter()
        .filter_map(|(n, _)| n.strip_prefix(p)?.strip_suffix(".meta")?.parse().ok())
        .collect();
    ids.sort_unstable();
    ids.into_iter()
        .filter_map(|id| get(store, id))
        .filter(|f| store.get(&f.name()).is_none())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_feeds_values_are_its_points_at_the_slots() {
        let dir = std::env::temp_dir().join(format!("ringlet-feeds-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
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
        let f = by_name(&s, "emoncms/7.rrd").unwrap();
        assert_eq!(
            (f.interval, f.start, f.npoints, f.last()),
            (10, 1000, 3, 1020)
        );
        let v = f.values(&s, 990, 5).unwrap();
        assert!(v[0].is_nan() && v[2].is_nan() && v[4].is_nan());
        assert_eq!((v[1], v[3]), (1.5, 3.0));
        // Feed 8 has no data file: not a feed yet.
        assert_eq!(list(&s).iter().map(|f| f.id).collect::<Vec<_>>(), vec![7]);
        assert!(by_name(&s, "emoncms/07.rrd").is_none() && by_name(&s, "emoncms/7").is_none());
        drop(s);
        let _ = std::fs::remove_dir_all(&dir);
    }
}
