//! Carbon's plaintext protocol: `ringlet serve --carbon ADDR` takes `path value timestamp`
//! lines on TCP and UDP at ADDR (several lines a datagram), as carbon-cache does on 2003.
//!
//! - A path `a.b.c` is the series `a/b/c.rrd` (under `-b`, with its placeholder, as a
//!   CREATE would make it): one GAUGE data source named `value`, so Graphite's metrics,
//!   the view's files and the RRD tools see one tree. A component that is empty, `.` or
//!   `..`, holds `/` or a control character, or a path longer than [`MAX_PATH`], is refused.
//! - A new series takes its archives from carbon's own files in `--graphite-conf DIR`:
//!   `storage-schemas.conf` (first section whose `pattern` matches: `retentions`, one
//!   archive a retention) and `storage-aggregation.conf` (first match: `xFilesFactor`,
//!   `aggregationMethod`), or [`DEFAULT_SCHEMAS`] and [`DEFAULT_AGGREGATION`] without them.
//!   docs/PROTOCOL.md ("Carbon") maps each setting to the RRD and states what differs from
//!   whisper.
//! - A point is the value of its slot, `[t - t % step, + step)`, as in whisper: it becomes an
//!   update at the slot's end, so the archive's row for the slot holds the value; a slot
//!   skipped is unknown (an update of `U` at the start of the point's slot), never filled
//!   from the next point. The first point of a slot is kept; later points for a slot already
//!   written, or older ones, are counted and dropped (whisper keeps the last).
//! - Timestamps: seconds, with a fraction or not; `-1` (and `N`) is now. Values: numbers as
//!   carbon's `float()` reads them, `nan` is unknown.
//! - A malformed line is counted and logged (the first few), never fatal: the good lines
//!   beside it are kept. Lines longer than [`MAX_LINE`] are dropped whole.
//!
//! Nothing is acknowledged in carbon's protocol: points are durable at the next commit
//! (`-w`), as updates sent over rrdcached's protocol are.
//!
//! The protocol's text is parsed here by hand (three fields); the patterns are the `regex`
//! crate's, which reads Python's `re` syntax as carbon's files use it (classes, anchors,
//! alternation; no look-around).

mod listen;
mod paths;

pub use graphite::carbon::{
    graphite_schema, parse_retentions, Method, Retention, Rules, DEFAULT_AGGREGATION,
    DEFAULT_MAX_CREATES_PER_MINUTE, DEFAULT_SCHEMAS,
};
pub use listen::{serve_pickle, serve_tcp, serve_udp};

use crate::daemon::Daemon;
use crate::ingest;
use rrd::Rrd;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

/// Carbon's `storage-schemas.conf` and `storage-aggregation.conf` in `dir` (each optional),
/// else the defaults.
pub fn load_rules(dir: Option<&Path>) -> Result<Rules, String> {
    let read = |name: &str, default: &str| -> Result<(String, String), String> {
        match dir.map(|d| d.join(name)) {
            Some(p) if p.exists() => std::fs::read_to_string(&p)
                .map(|t| (t, p.display().to_string()))
                .map_err(|e| format!("{}: {e}", p.display())),
            _ => Ok((default.to_string(), format!("{name} (built in)"))),
        }
    };
    let (st, sf) = read("storage-schemas.conf", DEFAULT_SCHEMAS)?;
    let (at, af) = read("storage-aggregation.conf", DEFAULT_AGGREGATION)?;
    Rules::parse(&st, &sf, &at, &af)
}

/// carbon.conf's `MAX_CREATES_PER_MINUTE` in `dir`, else carbon's default.
pub fn max_creates_per_minute(dir: Option<&Path>) -> Result<f64, String> {
    let Some(p) = dir.map(|d| d.join("carbon.conf")).filter(|p| p.exists()) else {
        return Ok(DEFAULT_MAX_CREATES_PER_MINUTE);
    };
    let text = std::fs::read_to_string(&p).map_err(|e| format!("{}: {e}", p.display()))?;
    graphite::carbon::max_creates_per_minute(&text, &p.display().to_string())
}

/// The longest metric path taken, bytes (carbon has no limit; file systems have 4096 for a
/// whole path).
pub const MAX_PATH: usize = 1024;

/// The longest line taken, bytes; a longer one is dropped whole.
pub const MAX_LINE: usize = 4096;

/// The largest pickle taken (carbon's own limit, 1 MiB); a larger one is skipped whole.
pub const MAX_PICKLE: usize = 1 << 20;

/// The series of metric `path`: `a.b.c` is `a/b/c.rrd`.
pub fn name_of(path: &str) -> Result<String, String> {
    let mut name = String::with_capacity(path.len() + 4);
    name_into(path, &mut name)?;
    Ok(name)
}

/// [`name_of`] into `name` (cleared first).
pub fn name_into(path: &str, name: &mut String) -> Result<(), String> {
    name.clear();
    if path.len() > MAX_PATH {
        return Err(format!("path longer than {MAX_PATH} bytes"));
    }
    if path.contains(';') {
        // A tagged series: under _tagged/, by its canonical name.
        let t = crate::graphite::tags::parse(path)?;
        name.push_str(crate::graphite::tags::PREFIX);
        name.push_str(&t.canonical());
        name.push_str(".rrd");
        return Ok(());
    }
    for (i, c) in path.split('.').enumerate() {
        if c.is_empty() {
            return Err("empty path component".into());
        }
        if c.contains('/') || c.chars().any(char::is_control) || c.len() > 255 {
            return Err(format!("bad path component '{}'", c.escape_debug()));
        }
        if i > 0 {
            name.push('/');
        }
        name.push_str(c);
    }
    name.push_str(".rrd");
    Ok(())
}

/// What a carbon connection keeps between its points: its entries (no shared lookup for a
/// series it has sent before) and buffers.
#[derive(Default)]
pub struct Conn {
    /// Entries by the paths this connection sent (no name to build for a path seen before).
    paths: paths::Paths,
    local: ingest::Local,
    name: String,
    /// A pickle's value, formatted.
    val: String,
    /// Points taken, dropped late and not created since the last [`Carbon::settle`].
    points: u64,
    late: u64,
    not_created: u64,
}

impl Conn {
    fn count(&mut self, taken: Taken) {
        match taken {
            Taken::Queued => self.points += 1,
            Taken::Late => self.late += 1,
            Taken::NotCreated => self.not_created += 1,
        }
    }
}

/// One point of a plaintext line: path, value (NaN: unknown), time (seconds).
pub fn parse_line(line: &str, now: f64) -> Result<(&str, f64, f64), String> {
    parse_point(line, || now).map(|(p, v, _, t)| (p, v, t))
}

/// [`parse_line`], with the value's text, asking for the time now only for `-1`.
fn parse_point(line: &str, now: impl Fn() -> f64) -> Result<(&str, f64, &str, f64), String> {
    let mut f = line.split_ascii_whitespace();
    let (Some(path), Some(v), Some(t), None) = (f.next(), f.next(), f.next(), f.next()) else {
        return Err("not 'path value timestamp'".into());
    };
    let nan = |s: &str| s.eq_ignore_ascii_case("nan");
    let value = if nan(v) || v.strip_prefix(['-', '+']).is_some_and(nan) {
        f64::NAN
    } else {
        v.parse::<f64>()
            .map_err(|_| format!("value '{}' is not a number", v.escape_debug()))?
    };
    if value.is_infinite() {
        return Err(format!("value '{v}' is infinite"));
    }
    let ts = match t {
        "-1" | "N" => Some(now()),
        // Whole seconds, as collectors send them, read without the float parser.
        _ if t.len() <= 12 && t.bytes().all(|b| b.is_ascii_digit()) => {
            Some(t.bytes().fold(0u64, |n, b| n * 10 + u64::from(b - b'0')) as f64)
        }
        _ => t.parse::<f64>().ok(),
    }
    .filter(|x| x.is_finite() && *x >= 0.0 && *x < 1e12)
    .ok_or_else(|| format!("timestamp '{}' is not a time", t.escape_debug()))?;
    Ok((path, value, v, ts))
}

/// What the carbon listeners have taken and refused, for STATS and the log.
#[derive(Default)]
pub struct Counts {
    /// Points queued.
    pub points: AtomicU64,
    /// Lines refused (malformed, bad path, too long).
    pub bad: AtomicU64,
    /// Points dropped: their slot was already written, or earlier.
    pub late: AtomicU64,
    /// Series created.
    pub created: AtomicU64,
    /// Points of new series dropped because `MAX_CREATES_PER_MINUTE` was spent (the series'
    /// next point tries again).
    pub create_limited: AtomicU64,
}

/// New series carbon's listeners may create: carbon's `MAX_CREATES_PER_MINUTE` as carbon
/// spends it, a bucket of that many that fills at that rate (a burst of up to a minute's
/// worth, then one every `60 / rate` seconds). Infinite: no bound.
pub struct CreateBudget {
    per_minute: f64,
    /// Creates left, and when it was last filled.
    left: std::sync::Mutex<(f64, std::time::Instant)>,
}

impl CreateBudget {
    pub fn new(per_minute: f64) -> CreateBudget {
        CreateBudget {
            per_minute,
            left: std::sync::Mutex::new((per_minute, std::time::Instant::now())),
        }
    }

    /// The bound, a minute.
    pub fn per_minute(&self) -> f64 {
        self.per_minute
    }

    /// Spend one create, if one is left.
    pub fn take(&self) -> bool {
        self.take_at(std::time::Instant::now())
    }

    fn take_at(&self, now: std::time::Instant) -> bool {
        if self.per_minute.is_infinite() {
            return true;
        }
        let mut g = self.left.lock().unwrap_or_else(|p| p.into_inner());
        let (left, at) = &mut *g;
        let secs = now.saturating_duration_since(*at).as_secs_f64();
        *left = (*left + secs * self.per_minute / 60.0).min(self.per_minute);
        *at = now;
        if *left >= 1.0 {
            *left -= 1.0;
            true
        } else {
            false
        }
    }
}

/// What became of one point.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Taken {
    Queued,
    /// Its slot was already written, or an earlier one.
    Late,
    /// Its series is new and `MAX_CREATES_PER_MINUTE` was spent.
    NotCreated,
}

/// Carbon's side of the daemon: the rules new series follow, the bounds, and the counts.
pub struct Carbon {
    pub rules: Rules,
    pub counts: Counts,
    pub creates: CreateBudget,
    /// Carbon's TCP connections at once (`--carbon-max-connections`).
    pub conns: Arc<crate::gate::Pool>,
    /// A TCP connection that sends nothing for this long is closed (`--idle-timeout`).
    pub idle: Option<std::time::Duration>,
}

/// Refusals logged in full before they are only counted.
const LOGGED: u64 = 20;

/// STATS's carbon lines: what carbon's listeners took, refused and dropped.
impl crate::daemon::StatsLines for Carbon {
    fn stats_lines(&self, lines: &mut Vec<String>) {
        let n = |a: &AtomicU64| a.load(Ordering::Relaxed);
        let c = &self.counts;
        lines.push(format!("CarbonPoints: {}", n(&c.points)));
        lines.push(format!("CarbonLinesRefused: {}", n(&c.bad)));
        lines.push(format!("CarbonPointsLate: {}", n(&c.late)));
        lines.push(format!("CarbonSeriesCreated: {}", n(&c.created)));
        lines.push(format!("CarbonPointsNotCreated: {}", n(&c.create_limited)));
        lines.push(format!("CarbonConnections: {}", self.conns.active()));
        lines.push(format!(
            "CarbonConnectionsRefused: {}",
            self.conns.refused()
        ));
    }
}

impl Carbon {
    pub fn new(rules: Rules) -> Carbon {
        Carbon {
            rules,
            counts: Counts::default(),
            creates: CreateBudget::new(f64::INFINITY),
            conns: crate::gate::Pool::new("carbon", 1024),
            idle: None,
        }
    }

    fn refuse(&self, from: &str, line: &str, why: &str) {
        let n = self.counts.bad.fetch_add(1, Ordering::Relaxed);
        if n < LOGGED {
            let shown: String = line.chars().take(200).collect();
            crate::log::line(&format!(
                "carbon: {from}: line refused ({why}): {}{}",
                shown.escape_debug(),
                if n + 1 == LOGGED {
                    " (further refusals are counted, not logged)"
                } else {
                    ""
                }
            ));
        }
    }

    /// Take one line (without its newline) from `from`; `l` is the connection's.
    pub fn line(&self, d: &Daemon, l: &mut Conn, from: &str, line: &str) {
        let line = line.trim_end_matches('\r');
        if line.trim().is_empty() {
            return;
        }
        let now = || {
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0.0, |t| t.as_secs_f64())
        };
        let (path, value, text, ts) = match parse_point(line, now) {
            Ok(p) => p,
            Err(e) => return self.refuse(from, line, &e),
        };
        match self.point(d, l, path, value, Some(text), ts) {
            Ok(taken) => l.count(taken),
            Err(e) => self.refuse(from, line, &e),
        }
    }

    /// Count what connection `l` has taken and queued since the last call (the shared
    /// counters are touched once a read, not once a point).
    pub fn settle(&self, d: &Daemon, l: &mut Conn) {
        if l.points > 0 {
            self.counts
                .points
                .fetch_add(std::mem::take(&mut l.points), Ordering::Relaxed);
        }
        if l.late > 0 {
            self.counts
                .late
                .fetch_add(std::mem::take(&mut l.late), Ordering::Relaxed);
        }
        if l.not_created > 0 {
            let n = std::mem::take(&mut l.not_created);
            let before = self.counts.create_limited.fetch_add(n, Ordering::Relaxed);
            // Logged when the first is dropped, then every 10,000.
            if before == 0 || before / 10_000 != (before + n) / 10_000 {
                crate::log::line(&format!(
                    "carbon: new series past MAX_CREATES_PER_MINUTE ({}): {} points of \
                     series not yet made dropped so far (each series' next point tries \
                     again; CarbonPointsNotCreated in STATS)",
                    self.creates.per_minute(),
                    before + n
                ));
            }
        }
        if l.local.queued > 0 {
            d.queued(std::mem::take(&mut l.local.queued));
        }
    }

    /// Queue one point, or say why not: `value`, written as `text` when a line gave it (a
    /// number Rust reads, so librrd's strtod does), else formatted (a pickle's).
    fn point(
        &self,
        d: &Daemon,
        l: &mut Conn,
        path: &str,
        value: f64,
        text: Option<&str>,
        ts: f64,
    ) -> Result<Taken, String> {
        let t = ts.floor() as i64;
        // Borrowed from the connection's table: no count of the entry to touch a point.
        let e = match l.paths.get(path) {
            Some(e) => e,
            None => {
                name_into(path, &mut l.name)?;
                let e = match l.local.entry(d, &l.name) {
                    Ok(e) => e,
                    Err(_) => {
                        if !self.create(d, path, &l.name, t)? {
                            return Ok(Taken::NotCreated);
                        }
                        l.local.entry(d, &l.name).map_err(|r| r.message)?
                    }
                };
                l.paths.insert(path, e)
            }
        };
        let value = match text {
            _ if value.is_nan() => None,
            Some(text) => Some(text),
            None => {
                use std::fmt::Write as _;
                l.val.clear();
                let _ = write!(l.val, "{value}");
                Some(l.val.as_str())
            }
        };
        let r = l.local.update_slot(d, e, t, value);
        if l.local.queued >= 1 << 16 {
            d.queued(std::mem::take(&mut l.local.queued));
        }
        match r {
            Ok(ingest::Slot::Queued) => Ok(Taken::Queued),
            Ok(ingest::Slot::Late) => Ok(Taken::Late),
            Err(resp) => Err(resp.message),
        }
    }

    /// Make the series of `path` (unless another connection just did), its archives from
    /// the rules, starting one slot before the point at `t`. Ok(false): not made, the
    /// budget of creates is spent.
    fn create(&self, d: &Daemon, path: &str, name: &str, t: i64) -> Result<bool, String> {
        let schema = self.rules.schema(path);
        let step = schema.step as i64;
        let start = t - t.rem_euclid(step) - step;
        let target = d.resolve(name)?;
        let mut inner = d.lock();
        if inner.has(&target.name) {
            return Ok(true);
        }
        if !self.creates.take() {
            return Ok(false);
        }
        crate::series::life::place_series(d, &mut inner, &target, Rrd::new(schema, start))?;
        self.counts.created.fetch_add(1, Ordering::Relaxed);
        Ok(true)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_create_budget_is_a_minute_s_worth_that_fills_at_the_rate() {
        let b = CreateBudget::new(60.0);
        let t0 = std::time::Instant::now();
        assert!((0..60).all(|_| b.take_at(t0)));
        assert!(!b.take_at(t0));
        // One a second comes back, never more than the bound.
        assert!(!b.take_at(t0 + std::time::Duration::from_millis(500)));
        assert!(b.take_at(t0 + std::time::Duration::from_millis(1000)));
        let later = t0 + std::time::Duration::from_secs(3600);
        assert_eq!((0..100).filter(|_| b.take_at(later)).count(), 60);
        let inf = CreateBudget::new(f64::INFINITY);
        assert!((0..100_000).all(|_| inf.take()));
        let none = CreateBudget::new(0.0);
        assert!(!none.take_at(later));
    }

    #[test]
    fn paths_are_names_under_the_base_and_never_leave_it() {
        assert_eq!(name_of("servers.web1.cpu").unwrap(), "servers/web1/cpu.rrd");
        assert_eq!(name_of("a-b_c.d e").unwrap(), "a-b_c/d e.rrd");
        assert_eq!(name_of("x.y;b=2;a=1").unwrap(), "_tagged/x.y;a=1;b=2.rrd");
        for bad in [
            "", "a..b", ".a", "a.", "a/../b", "a.b/c", "x;tag", "x;t=a/b", "a\u{1}b",
        ] {
            assert!(name_of(bad).is_err(), "{bad:?}");
        }
        assert!(name_of(&"x".repeat(MAX_PATH + 1)).is_err());
    }

    #[test]
    fn lines_are_path_value_time() {
        assert_eq!(parse_line("a.b 1.5 100", 7.0).unwrap(), ("a.b", 1.5, 100.0));
        assert_eq!(
            parse_line("a.b  -2e3\t-1", 7.0).unwrap(),
            ("a.b", -2000.0, 7.0)
        );
        assert!(parse_line("a.b nan 5.5", 7.0).unwrap().1.is_nan());
        for bad in [
            "a.b 1",
            "a.b 1 2 3",
            "a.b x 1",
            "a.b 1 x",
            "a.b inf 1",
            "a.b 1 -5",
        ] {
            assert!(parse_line(bad, 7.0).is_err(), "{bad}");
        }
    }
}
