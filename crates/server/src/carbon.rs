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

use crate::daemon::Daemon;
use crate::ingest;
use regex::Regex;
use rrd::{Cf, DsDef, DsType, RraDef, Rrd, Schema};
use std::borrow::Cow;
use std::io::{BufRead, BufReader, Read};
use std::net::{TcpListener, TcpStream, UdpSocket};
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

/// The longest metric path taken, bytes (carbon has no limit; file systems have 4096 for a
/// whole path).
pub const MAX_PATH: usize = 1024;

/// The longest line taken, bytes; a longer one is dropped whole.
pub const MAX_LINE: usize = 4096;

/// The largest pickle taken (carbon's own limit, 1 MiB); a larger one is skipped whole.
pub const MAX_PICKLE: usize = 1 << 20;

/// `storage-schemas.conf` when `--graphite-conf` has none: carbon's own metrics at one
/// minute, everything else 10 seconds for a day, a minute for a week, ten minutes for
/// five years (collectd's and statsd's 10-second interval, at full resolution for a day).
pub const DEFAULT_SCHEMAS: &str = "\
[carbon]
pattern = ^carbon\\.
retentions = 60:90d

[default]
pattern = .*
retentions = 10s:1d,1m:7d,10m:5y
";

/// `storage-aggregation.conf` when `--graphite-conf` has none: carbon's example file.
pub const DEFAULT_AGGREGATION: &str = "\
[min]
pattern = \\.min$
xFilesFactor = 0.1
aggregationMethod = min

[max]
pattern = \\.max$
xFilesFactor = 0.1
aggregationMethod = max

[sum]
pattern = \\.count$
xFilesFactor = 0
aggregationMethod = sum

[default_average]
pattern = .*
xFilesFactor = 0.5
aggregationMethod = average
";

/// One retention: seconds a point, points kept.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Retention {
    pub precision: u64,
    pub points: u64,
}

/// How points are combined into a coarser archive's row (`aggregationMethod`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Method {
    Average,
    Sum,
    Min,
    Max,
    Last,
}

struct SchemaRule {
    name: String,
    pattern: Regex,
    retentions: Vec<Retention>,
}

struct AggRule {
    pattern: Regex,
    xff: Option<f64>,
    method: Option<Method>,
}

/// What carbon's two files say.
pub struct Rules {
    schemas: Vec<SchemaRule>,
    aggregation: Vec<AggRule>,
}

/// A section of an INI file: its name, the line it starts at, its settings (keys lowercased).
type Section = (String, usize, Vec<(String, String)>);

/// `[section]` and `key = value` lines (`#` and `;` start comments).
fn ini(text: &str, file: &str) -> Result<Vec<Section>, String> {
    let mut out: Vec<Section> = Vec::new();
    for (i, raw) in text.lines().enumerate() {
        let line = raw.trim();
        if line.is_empty() || line.starts_with('#') || line.starts_with(';') {
            continue;
        }
        if let Some(rest) = line.strip_prefix('[') {
            let name = rest
                .strip_suffix(']')
                .ok_or_else(|| format!("{file}:{}: a section name ends with ']'", i + 1))?;
            out.push((name.trim().to_string(), i + 1, Vec::new()));
            continue;
        }
        let (k, v) = line
            .split_once('=')
            .or_else(|| line.split_once(':'))
            .ok_or_else(|| format!("{file}:{}: not 'key = value': {line}", i + 1))?;
        let Some(section) = out.last_mut() else {
            return Err(format!("{file}:{}: a setting before any [section]", i + 1));
        };
        section
            .2
            .push((k.trim().to_ascii_lowercase(), v.trim().to_string()));
    }
    Ok(out)
}

/// Seconds in a unit as whisper's retention strings spell it (`s`, `min`, `hours`, ...).
fn unit_seconds(u: &str) -> Option<u64> {
    let u = u.to_ascii_lowercase();
    let is = |short: &str, long: &str| u == short || (u.starts_with(short) && long.starts_with(&u));
    Some(if u.is_empty() || is("s", "seconds") {
        1
    } else if is("m", "minutes") || is("min", "minutes") {
        60
    } else if is("h", "hours") {
        3600
    } else if is("d", "days") {
        86_400
    } else if is("w", "weeks") {
        7 * 86_400
    } else if is("y", "years") {
        365 * 86_400
    } else {
        return None;
    })
}

/// `10s:6h,1m:7d,10m:5y`: precision (seconds, or with a unit) and duration (with a unit;
/// a bare number is a count of points), each precision a multiple of the first.
pub fn parse_retentions(s: &str) -> Result<Vec<Retention>, String> {
    let split = |part: &str| -> Option<(u64, Option<u64>)> {
        let d = part.chars().take_while(char::is_ascii_digit).count();
        let n: u64 = part[..d].parse().ok()?;
        let unit = &part[d..];
        if unit.is_empty() {
            Some((n, None))
        } else {
            Some((n, Some(unit_seconds(unit)?)))
        }
    };
    let mut out = Vec::new();
    for def in s.split(',').map(str::trim).filter(|d| !d.is_empty()) {
        let (p, d) = def
            .split_once(':')
            .ok_or_else(|| format!("retention '{def}': not precision:duration"))?;
        let (pn, pu) =
            split(p.trim()).ok_or_else(|| format!("retention '{def}': bad precision"))?;
        let precision = pn.saturating_mul(pu.unwrap_or(1));
        let (dn, du) = split(d.trim()).ok_or_else(|| format!("retention '{def}': bad duration"))?;
        if precision == 0 || dn == 0 {
            return Err(format!("retention '{def}': must be positive"));
        }
        let points = match du {
            None => dn,
            Some(u) => dn.saturating_mul(u) / precision,
        };
        if points == 0 {
            return Err(format!("retention '{def}': shorter than one point"));
        }
        out.push(Retention { precision, points });
    }
    let Some(first) = out.first().copied() else {
        return Err("no retentions".into());
    };
    for w in out.windows(2) {
        if w[1].precision <= w[0].precision || w[1].precision % first.precision != 0 {
            return Err(format!(
                "retentions '{s}': each precision must be a larger multiple of the first"
            ));
        }
    }
    Ok(out)
}

fn method(s: &str) -> Result<Method, String> {
    Ok(match s.to_ascii_lowercase().as_str() {
        "average" | "avg" | "avg_zero" | "median" => Method::Average,
        "sum" => Method::Sum,
        "min" => Method::Min,
        "max" => Method::Max,
        "last" => Method::Last,
        other => return Err(format!("unknown aggregationMethod '{other}'")),
    })
}

impl Rules {
    /// Carbon's files in `dir` (each optional), else the defaults.
    pub fn load(dir: Option<&Path>) -> Result<Rules, String> {
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

    pub fn parse(schemas: &str, sf: &str, aggregation: &str, af: &str) -> Result<Rules, String> {
        let pattern = |file: &str, line: usize, p: &str| {
            Regex::new(p).map_err(|e| format!("{file}:{line}: pattern '{p}': {e}"))
        };
        let mut rules = Rules {
            schemas: Vec::new(),
            aggregation: Vec::new(),
        };
        for (name, line, kv) in ini(schemas, sf)? {
            let get = |k: &str| kv.iter().find(|(key, _)| key == k).map(|(_, v)| v.as_str());
            // carbon skips a section without a pattern or retentions.
            let (Some(p), Some(r)) = (get("pattern"), get("retentions")) else {
                continue;
            };
            rules.schemas.push(SchemaRule {
                name,
                pattern: pattern(sf, line, p)?,
                retentions: parse_retentions(r).map_err(|e| format!("{sf}:{line}: {e}"))?,
            });
        }
        for (_, line, kv) in ini(aggregation, af)? {
            let get = |k: &str| kv.iter().find(|(key, _)| key == k).map(|(_, v)| v.as_str());
            let Some(p) = get("pattern") else {
                continue;
            };
            let xff = match get("xfilesfactor") {
                Some(v) => Some(
                    v.parse::<f64>()
                        .ok()
                        .filter(|x| (0.0..=1.0).contains(x))
                        .ok_or_else(|| format!("{af}:{line}: xFilesFactor '{v}' not in 0..1"))?,
                ),
                None => None,
            };
            let m = match get("aggregationmethod") {
                Some(v) => Some(method(v).map_err(|e| format!("{af}:{line}: {e}"))?),
                None => None,
            };
            rules.aggregation.push(AggRule {
                pattern: pattern(af, line, p)?,
                xff,
                method: m,
            });
        }
        Ok(rules)
    }

    /// The schema section for `path` (first match; carbon's fallback without one: a minute
    /// for a day).
    pub fn retentions(&self, path: &str) -> (&str, Vec<Retention>) {
        match self.schemas.iter().find(|r| r.pattern.is_match(path)) {
            Some(r) => (&r.name, r.retentions.clone()),
            None => (
                "carbon's fallback",
                vec![Retention {
                    precision: 60,
                    points: 1440,
                }],
            ),
        }
    }

    /// xFilesFactor and method for `path` (first match; 0.5 and average where it says
    /// nothing, as carbon).
    pub fn aggregation(&self, path: &str) -> (f64, Method) {
        match self.aggregation.iter().find(|r| r.pattern.is_match(path)) {
            Some(r) => (r.xff.unwrap_or(0.5), r.method.unwrap_or(Method::Average)),
            None => (0.5, Method::Average),
        }
    }

    /// The RRD schema of a new series for `path`: step the first precision; one GAUGE
    /// `value` whose heartbeat is the step (a skipped slot is unknown); per retention one
    /// archive of `precision / step` steps a row, `points` rows, the method's CF (sum:
    /// AVERAGE, rrdtool has none), xff `1 - xFilesFactor` (whisper asks for a known
    /// fraction, rrdtool allows an unknown one; just below 1 for an xFilesFactor of 0).
    pub fn schema(&self, path: &str) -> Schema {
        let (_, ret) = self.retentions(path);
        let (xf, m) = self.aggregation(path);
        graphite_schema(&ret, m, xf)
    }
}

/// The RRD schema of a Graphite metric with these retentions (at least one, each precision
/// a multiple of the first), aggregation method and xFilesFactor: what [`Rules::schema`]
/// gives a new series, and what `ringlet import whisper` gives a whisper file.
pub fn graphite_schema(ret: &[Retention], m: Method, xfiles: f64) -> Schema {
    let step = ret[0].precision;
    let cf = match m {
        Method::Average | Method::Sum => Cf::Average,
        Method::Min => Cf::Min,
        Method::Max => Cf::Max,
        Method::Last => Cf::Last,
    };
    Schema {
        step,
        ds: vec![DsDef {
            name: "value".into(),
            kind: DsType::Gauge,
            heartbeat: step,
            min: f64::NAN,
            max: f64::NAN,
            rpn: None,
        }],
        rra: ret
            .iter()
            .enumerate()
            .map(|(i, r)| RraDef {
                // The first archive holds the points themselves.
                cf: if i == 0 { Cf::Average } else { cf },
                xff: (1.0 - xfiles).clamp(0.0, 1.0 - 1e-9),
                pdp_cnt: r.precision / step,
                row_cnt: r.points,
            })
            .collect(),
    }
}

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

/// Paths a connection keeps before it starts again (a path and an entry's pointer each).
const PATHS_MAX: usize = 1 << 18;

type PathHash = std::hash::BuildHasherDefault<rrd::fx::Fx>;

/// What a carbon connection keeps between its points: its entries (no shared lookup for a
/// series it has sent before) and buffers.
#[derive(Default)]
pub struct Conn {
    /// Entries by the paths this connection sent (no name to build for a path seen before).
    paths: std::collections::HashMap<Box<str>, Arc<crate::entry::Entry>, PathHash>,
    local: ingest::Local,
    name: String,
    gap: String,
    val: String,
    /// The current line's value text, written as the point's value (empty: the value is
    /// formatted, as for a pickle's).
    text: String,
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
    let value = match v.to_ascii_lowercase().as_str() {
        "nan" | "-nan" | "+nan" => f64::NAN,
        _ => v
            .parse::<f64>()
            .map_err(|_| format!("value '{}' is not a number", v.escape_debug()))?,
    };
    if value.is_infinite() {
        return Err(format!("value '{v}' is infinite"));
    }
    let ts = match t {
        "-1" | "N" => now(),
        _ => t
            .parse::<f64>()
            .ok()
            .filter(|x| x.is_finite() && *x >= 0.0 && *x < 1e12)
            .ok_or_else(|| format!("timestamp '{}' is not a time", t.escape_debug()))?,
    };
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

/// carbon.conf's `MAX_CREATES_PER_MINUTE` when `--graphite-conf` has none (carbon's own
/// example file's).
pub const DEFAULT_MAX_CREATES_PER_MINUTE: f64 = 50.0;

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

/// What carbon.conf says that ringlet uses: `MAX_CREATES_PER_MINUTE` (`[cache]`, or any
/// section: carbon reads it from the one its daemon runs as), a number or `inf`.
pub fn max_creates_per_minute(dir: Option<&Path>) -> Result<f64, String> {
    let Some(p) = dir.map(|d| d.join("carbon.conf")).filter(|p| p.exists()) else {
        return Ok(DEFAULT_MAX_CREATES_PER_MINUTE);
    };
    let text = std::fs::read_to_string(&p).map_err(|e| format!("{}: {e}", p.display()))?;
    let file = p.display().to_string();
    let sections = ini(&text, &file)?;
    let cache = sections
        .iter()
        .find(|(name, ..)| name.eq_ignore_ascii_case("cache"))
        .into_iter()
        .chain(&sections);
    for (_, line, settings) in cache {
        if let Some((_, v)) = settings.iter().find(|(k, _)| k == "max_creates_per_minute") {
            return match v.trim().to_ascii_lowercase().as_str() {
                "inf" | "infinity" => Ok(f64::INFINITY),
                n => n
                    .parse::<f64>()
                    .ok()
                    .filter(|x| *x >= 0.0 && !x.is_nan())
                    .ok_or_else(|| {
                        format!(
                            "{file}:{line}: MAX_CREATES_PER_MINUTE '{v}' is not a number or inf"
                        )
                    }),
            };
        }
    }
    Ok(DEFAULT_MAX_CREATES_PER_MINUTE)
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
        l.text.clear();
        l.text.push_str(text);
        match self.point(d, l, path, value, ts) {
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

    /// Queue one point, or say why not.
    fn point(
        &self,
        d: &Daemon,
        l: &mut Conn,
        path: &str,
        value: f64,
        ts: f64,
    ) -> Result<Taken, String> {
        let t = ts.floor() as i64;
        let e = match l.paths.get(path) {
            Some(e) => e.clone(),
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
                if l.paths.len() >= PATHS_MAX {
                    l.paths.clear();
                }
                l.paths.insert(path.into(), e.clone());
                e
            }
        };
        let (step, last, n_ds) = {
            let st = e.lock();
            let s = &st.shadow;
            (s.schema.step as i64, s.last_up, s.schema.ds.len())
        };
        if n_ds != 1 {
            return Err(format!(
                "{} has {n_ds} data sources; a Graphite metric has one",
                e.name
            ));
        }
        let end = t - t.rem_euclid(step) + step;
        if end <= last {
            return Ok(Taken::Late);
        }
        use std::fmt::Write as _;
        l.gap.clear();
        l.val.clear();
        let gap = end - step > last;
        if gap {
            // Slots skipped since the last point are unknown, not this point's value.
            let _ = write!(l.gap, "{}:U", end - step);
        }
        if value.is_nan() {
            let _ = write!(l.val, "{end}:U");
        } else if !l.text.is_empty() {
            // The value as the line gave it (a number Rust reads, so librrd's strtod does).
            let _ = write!(l.val, "{end}:{}", l.text);
            l.text.clear();
        } else {
            let _ = write!(l.val, "{end}:{value}");
        }
        let vals = [Cow::Borrowed(l.gap.as_str()), Cow::Borrowed(l.val.as_str())];
        let skip = usize::from(!gap);
        let r = l.local.update_entry(d, &e, vals.into_iter().skip(skip));
        if l.local.queued >= 1 << 16 {
            d.queued(std::mem::take(&mut l.local.queued));
        }
        r.map(|_| Taken::Queued).map_err(|resp| resp.message)
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
        if inner.store.get(&target.name).is_some() {
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

/// Serve carbon's plaintext protocol on a TCP listener: a thread a connection, lines in.
pub fn serve_tcp(d: Arc<Daemon>, c: Arc<Carbon>, l: TcpListener) {
    accept(d, c, l, "carbon", tcp_conn);
}

/// A thread named `name` a connection accepted on `l`, running `conn` on it, while
/// carbon's pool has room ([`crate::gate`]); past it a new connection is closed (carbon's
/// protocol has no way to say why).
fn accept(
    d: Arc<Daemon>,
    c: Arc<Carbon>,
    l: TcpListener,
    name: &'static str,
    conn: fn(&Daemon, &Carbon, TcpStream),
) {
    let pools = vec![c.conns.clone()];
    let idle = c.idle;
    let accept = || {
        let (s, _) = l.accept()?;
        let _ = s.set_read_timeout(idle);
        Ok(s)
    };
    crate::gate::accept_loop(name, pools, accept, drop, move |s| conn(&d, &c, s));
}

fn tcp_conn(d: &Daemon, c: &Carbon, s: TcpStream) {
    let mut conn = Conn::default();
    tcp_lines(d, c, s, &mut conn);
    c.settle(d, &mut conn);
}

fn tcp_lines(d: &Daemon, c: &Carbon, s: TcpStream, conn: &mut Conn) {
    let from = s
        .peer_addr()
        .map_or_else(|_| "tcp".to_string(), |a| a.to_string());
    let mut r = BufReader::with_capacity(64 << 10, s);
    let mut buf = Vec::with_capacity(256);
    loop {
        buf.clear();
        // At most MAX_LINE + 1 bytes of a line: a longer one is refused and skipped.
        let n = match (&mut r)
            .take(MAX_LINE as u64 + 1)
            .read_until(b'\n', &mut buf)
        {
            Ok(0) | Err(_) => return,
            Ok(n) => n,
        };
        if n > MAX_LINE && buf.last() != Some(&b'\n') {
            c.refuse(&from, &String::from_utf8_lossy(&buf[..80]), "line too long");
            // Skip to the end of that line.
            loop {
                buf.clear();
                match (&mut r).take(MAX_LINE as u64).read_until(b'\n', &mut buf) {
                    Ok(0) | Err(_) => return,
                    Ok(_) if buf.last() == Some(&b'\n') => break,
                    Ok(_) => {}
                }
            }
            continue;
        }
        if d.closing() {
            return;
        }
        match std::str::from_utf8(&buf) {
            Ok(line) => c.line(d, conn, &from, line.trim_end_matches('\n')),
            Err(_) => c.refuse(&from, &String::from_utf8_lossy(&buf), "not UTF-8"),
        }
        if r.buffer().is_empty() {
            c.settle(d, conn);
        }
    }
}

/// Serve carbon's pickle protocol on a TCP listener: a thread a connection; each message a
/// 4-byte big-endian length and a pickled list of `(path, (timestamp, value))`.
pub fn serve_pickle(d: Arc<Daemon>, c: Arc<Carbon>, l: TcpListener) {
    accept(d, c, l, "carbon-pickle", pickle_conn);
}

fn pickle_conn(d: &Daemon, c: &Carbon, s: TcpStream) {
    let from = s
        .peer_addr()
        .map_or_else(|_| "tcp".to_string(), |a| a.to_string());
    let mut r = BufReader::with_capacity(64 << 10, s);
    let mut buf = Vec::new();
    let mut conn = Conn::default();
    loop {
        let mut len = [0u8; 4];
        if r.read_exact(&mut len).is_err() {
            return;
        }
        // carbon's length is big-endian (struct '!L').
        len.reverse();
        let n = u32::from_le_bytes(len) as usize;
        if n > MAX_PICKLE {
            c.refuse(
                &from,
                &format!("({n} bytes)"),
                &format!("pickle larger than {MAX_PICKLE} bytes, skipped"),
            );
            if std::io::copy(&mut (&mut r).take(n as u64), &mut std::io::sink()).is_err() {
                return;
            }
            continue;
        }
        buf.resize(n, 0);
        if r.read_exact(&mut buf).is_err() || d.closing() {
            return;
        }
        let v = match crate::pickle::loads(&buf) {
            Ok(v) => v,
            Err(e) => {
                c.refuse(&from, &format!("({n} bytes)"), &e);
                continue;
            }
        };
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0.0, |t| t.as_secs_f64());
        // A refusal names the item by its place in the message, never by its contents
        // (a few hundred bytes can share their way to 2^40 elements).
        let walked = crate::pickle::for_each_point(&v, MAX_PATH, |point| {
            let (path, ts, value) = match point {
                Ok(p) => p,
                Err(bad) => {
                    let what = format!("(item {} of a {n}-byte pickle)", bad.index);
                    return c.refuse(&from, &what, "not (path, (timestamp, value))");
                }
            };
            let ts = if ts == -1.0 { now } else { ts };
            if !(ts.is_finite() && (0.0..1e12).contains(&ts)) || value.is_infinite() {
                let what = format!("{path} {value} {ts}");
                return c.refuse(&from, &what, "not a time or not a number");
            }
            match c.point(d, &mut conn, path, value, ts) {
                Ok(taken) => conn.count(taken),
                Err(e) => c.refuse(&from, &format!("{path} {value} {ts}"), &e),
            }
        });
        if let Err(e) = walked {
            c.refuse(&from, &format!("({n} bytes)"), &e);
        }
        c.settle(d, &mut conn);
    }
}

/// Serve carbon's plaintext protocol on a UDP socket: each datagram, lines.
pub fn serve_udp(d: Arc<Daemon>, c: Arc<Carbon>, s: UdpSocket) {
    let mut buf = vec![0u8; 65_536];
    let mut conn = Conn::default();
    loop {
        let Ok((n, from)) = s.recv_from(&mut buf) else {
            continue;
        };
        if d.closing() {
            return;
        }
        let from = from.to_string();
        for line in buf[..n].split(|&b| b == b'\n') {
            if line.len() > MAX_LINE {
                c.refuse(
                    &from,
                    &String::from_utf8_lossy(&line[..80]),
                    "line too long",
                );
                continue;
            }
            match std::str::from_utf8(line) {
                Ok(l) => c.line(&d, &mut conn, &from, l),
                Err(_) => c.refuse(&from, &String::from_utf8_lossy(line), "not UTF-8"),
            }
        }
        c.settle(&d, &mut conn);
    }
}

#[cfg(test)]
mod tests {
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
    fn max_creates_per_minute_comes_from_carbon_conf() {
        let dir = std::env::temp_dir().join(format!("ringlet-carbonconf-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        assert_eq!(
            max_creates_per_minute(Some(&dir)).unwrap(),
            DEFAULT_MAX_CREATES_PER_MINUTE
        );
        let f = dir.join("carbon.conf");
        std::fs::write(&f, "[cache]\nmax_creates_per_minute = inf\n").unwrap();
        assert!(max_creates_per_minute(Some(&dir)).unwrap().is_infinite());
        std::fs::write(&f, "[cache]\nMAX_CREATES_PER_MINUTE = 600\n[relay]\n").unwrap();
        assert_eq!(max_creates_per_minute(Some(&dir)).unwrap(), 600.0);
        std::fs::write(&f, "[cache]\nMAX_CREATES_PER_MINUTE = lots\n").unwrap();
        let e = max_creates_per_minute(Some(&dir)).unwrap_err();
        assert!(e.contains("carbon.conf:") && e.contains("lots"), "{e}");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    use super::*;

    #[test]
    fn retentions_read_as_whisper_reads_them() {
        assert_eq!(
            parse_retentions("10s:6h,1m:7d,10m:5y").unwrap(),
            vec![
                Retention {
                    precision: 10,
                    points: 2160
                },
                Retention {
                    precision: 60,
                    points: 10080
                },
                Retention {
                    precision: 600,
                    points: 262_800
                },
            ]
        );
        // A bare duration is a count of points; a bare precision is seconds.
        assert_eq!(
            parse_retentions("60:1440").unwrap(),
            vec![Retention {
                precision: 60,
                points: 1440
            }]
        );
        assert_eq!(
            parse_retentions("1min:1day, 1hours:1years").unwrap()[1],
            Retention {
                precision: 3600,
                points: 8760
            }
        );
        for bad in [
            "",
            "10s",
            "0:10",
            "10s:0",
            "10x:1d",
            "1m:1d,30s:7d",
            "10s:1d,15s:2d",
        ] {
            assert!(parse_retentions(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn the_first_matching_sections_give_the_schema() {
        let r = Rules::parse(
            "[a]\npattern = ^servers\\.\nretentions = 10s:1h,1m:1d\n[b]\npattern=.*\nretentions=60:100\n",
            "s",
            "[m]\npattern = \\.max$\naggregationMethod = max\n[d]\npattern = .*\nxFilesFactor = 0.2\n",
            "a",
        )
        .unwrap();
        let s = r.schema("servers.web1.cpu.max");
        assert_eq!(s.step, 10);
        assert_eq!(s.ds[0].heartbeat, 10);
        assert_eq!(
            s.rra
                .iter()
                .map(|a| (a.cf, a.pdp_cnt, a.row_cnt))
                .collect::<Vec<_>>(),
            vec![(Cf::Average, 1, 360), (Cf::Max, 6, 1440)]
        );
        // Only the first matching aggregation section counts: its xFilesFactor is unset.
        assert!((s.rra[1].xff - 0.5).abs() < 1e-12);
        let o = r.schema("other.thing");
        assert_eq!((o.step, o.rra.len(), o.rra[0].row_cnt), (60, 1, 100));
        assert!((o.rra[0].xff - 0.8).abs() < 1e-12);
        assert!(Rules::parse("[x]\npattern = (\nretentions = 1:1\n", "s", "", "a").is_err());
        assert!(Rules::parse("pattern = x\n", "s", "", "a").is_err());
        // The built-in files parse.
        let d = Rules::load(None).unwrap();
        assert_eq!(d.schema("a.b").step, 10);
        assert_eq!(d.schema("carbon.agents.x").step, 60);
        assert_eq!(d.aggregation("a.count"), (0.0, Method::Sum));
        assert!(d.schema("a.count").rra[1].xff < 1.0);
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
