//! The web page (`ringlet serve --http ADDR`, at `/`): find series, chart and compare them,
//! and see what the disk is spared. Served by the same listener as graphite-web's API
//! ([`crate::graphite::http`]), on the same read path (the daemon's queued values applied
//! first, rows read from the store as `rrdtool fetch` reads them).
//!
//! - `/` is one page of our own (`web/index.html`: its HTML, CSS and script, no framework)
//!   and `/ui/uPlot.iife.min.js`, `/ui/uPlot.min.css` the charting library uPlot 1.6.32 (MIT,
//!   pinned: `web/vendor/uPlot-1.6.32`, its sha256 in `web/README.md`). Every asset is built
//!   into the binary (`include_str!`): the page works with no network.
//! - `/api/tree?dir=D`: the directories under `D` (with their series counts) and the
//!   series directly in it: the page's tree opens a directory at a time.
//! - `/api/series?q=WORDS&limit=N`: the series (name, step, last update, data sources with
//!   their type and Graphite path, archives), sorted by name; `q` keeps those whose name,
//!   data source names or paths contain every word (any case); at most `limit` (default
//!   [`SERIES_LIMIT`]), with the count of all that matched.
//! - `/api/fetch?series=NAME&ds=DS&cf=CF&rra=auto|N&from=T&until=T&width=PX`: one data
//!   source's rows. With `rra=auto` (the default) they are exactly `rrdtool fetch`'s
//!   (`-s from -e until -r (until-from)/width`: the archive rrdtool picks for the range at
//!   about a row a pixel); `rra=N` reads archive N over the same slots. Times in Graphite's
//!   forms (`-1d`, `now`, seconds). More than [`MAX_POINTS`] rows are consolidated by the
//!   CF (the reply says by how many).
//! - `/api/stats`: STATS as JSON (every `Key: number` line), the loss window (`-w`), and the
//!   write load projected: ringlet's device bytes a day and a year against what writing each
//!   series' file once a window would cost ([`PER_FILE_WRITE`], docs/BENCHMARKS.md).
//!
//! The replies' JSON is written by `serde_json` ([`to_json`]: Python's separators and ASCII
//! escapes, as this API has always written it), but a fetch's values, which may be infinite.
//! A bad request gets a 4xx and `{"error": "..."}`; nothing a request says reaches a path
//! outside the store (a series is looked up by name in the store, never opened as a file).

use crate::daemon::Daemon;
use crate::graphite::paths_of;
use crate::points::{FeedPoints, Points};
use serde_json::{json, Value};

/// The page and its library, built in.
const INDEX_HTML: &str = include_str!("../web/index.html");
const UPLOT_JS: &str = include_str!("../web/vendor/uPlot-1.6.32/uPlot.iife.min.js");
const UPLOT_CSS: &str = include_str!("../web/vendor/uPlot-1.6.32/uPlot.min.css");

/// Series `/api/series` lists when no `limit` is given.
pub const SERIES_LIMIT: usize = 5_000;
/// The largest `limit` it takes.
pub const MAX_SERIES_LIMIT: usize = 200_000;
/// Rows `/api/fetch` returns at most; more are consolidated.
pub const MAX_POINTS: usize = 20_000;
/// Rows `/api/fetch` reads at most (before consolidating them), 8 bytes each.
pub const MAX_ROWS: u64 = 5_000_000;
/// Device bytes one write of one RRD file costs when a daemon writes each file once a
/// window: rrdcached `-w 300` on ext4 under the Munin load wrote 12,399 bytes a value with
/// one value a file a window (docs/BENCHMARKS.md, issue 15's real-time runs; 616-6,050 a
/// sample under the Ganglia load, where each write carries 30 values).
pub const PER_FILE_WRITE: u64 = 12_399;

/// An answer: status, content type, body.
pub struct Reply {
    pub code: u16,
    pub content_type: &'static str,
    pub body: Vec<u8>,
    /// Whether the body never changes for this build (the page's assets).
    pub immutable: bool,
}

fn json_reply(code: u16, body: &Value) -> Reply {
    Reply {
        code,
        content_type: "application/json",
        body: to_json(body),
        immutable: false,
    }
}

/// `v` as the API has always written it: `serde_json`'s output in Python's `json.dumps`
/// style, `", "` and `": "` between items and ASCII only (the escapes of
/// [`crate::graphite::format::json_str`], the daemon's other JSON writer), so that a reply's
/// bytes do not depend on which writer made them.
fn to_json(v: &Value) -> Vec<u8> {
    let mut out = Vec::new();
    let mut ser = serde_json::Serializer::with_formatter(&mut out, PyStyle);
    // Writing a `Value` to memory cannot fail.
    let _ = serde::Serialize::serialize(v, &mut ser);
    out
}

/// [`to_json`]'s formatter.
struct PyStyle;

/// `", "` before every item of an array or object but the first.
fn separate<W: ?Sized + std::io::Write>(w: &mut W, first: bool) -> std::io::Result<()> {
    if first {
        Ok(())
    } else {
        w.write_all(b", ")
    }
}

impl serde_json::ser::Formatter for PyStyle {
    fn begin_array_value<W: ?Sized + std::io::Write>(
        &mut self,
        w: &mut W,
        first: bool,
    ) -> std::io::Result<()> {
        separate(w, first)
    }

    fn begin_object_key<W: ?Sized + std::io::Write>(
        &mut self,
        w: &mut W,
        first: bool,
    ) -> std::io::Result<()> {
        separate(w, first)
    }

    fn begin_object_value<W: ?Sized + std::io::Write>(&mut self, w: &mut W) -> std::io::Result<()> {
        w.write_all(b": ")
    }

    fn write_string_fragment<W: ?Sized + std::io::Write>(
        &mut self,
        w: &mut W,
        fragment: &str,
    ) -> std::io::Result<()> {
        for c in fragment.chars() {
            if (c as u32) > 0x7e {
                let mut buf = [0u16; 2];
                for u in c.encode_utf16(&mut buf) {
                    write!(w, "\\u{u:04x}")?;
                }
            } else {
                w.write_all(&[c as u8])?;
            }
        }
        Ok(())
    }

    fn write_char_escape<W: ?Sized + std::io::Write>(
        &mut self,
        w: &mut W,
        e: serde_json::ser::CharEscape,
    ) -> std::io::Result<()> {
        use serde_json::ser::CharEscape as E;
        match e {
            E::Quote => w.write_all(b"\\\""),
            E::ReverseSolidus => w.write_all(b"\\\\"),
            E::Solidus => w.write_all(b"/"),
            E::LineFeed => w.write_all(b"\\n"),
            E::CarriageReturn => w.write_all(b"\\r"),
            E::Tab => w.write_all(b"\\t"),
            E::Backspace => w.write_all(b"\\u0008"),
            E::FormFeed => w.write_all(b"\\u000c"),
            E::AsciiControl(b) => write!(w, "\\u{b:04x}"),
        }
    }
}

fn error(code: u16, msg: &str) -> Reply {
    json_reply(code, &json!({ "error": msg }))
}

fn asset(content_type: &'static str, body: &str) -> Reply {
    Reply {
        code: 200,
        content_type,
        body: body.as_bytes().to_vec(),
        immutable: true,
    }
}

/// The page's answer to `path`, or `None` when the path is not the page's (graphite-web's
/// routes then).
pub fn route(d: &Daemon, path: &str, params: &[(String, String)], now: i64) -> Option<Reply> {
    let get = |k: &str| params.iter().find(|(p, _)| p == k).map(|(_, v)| v.as_str());
    if path.starts_with("/api/") {
        if let Some(why) = d.unreadable() {
            return Some(error(503, &why));
        }
    }
    Some(match path {
        "" | "/" | "/index.html" => Reply {
            immutable: false,
            ..asset("text/html; charset=utf-8", INDEX_HTML)
        },
        "/ui/uPlot.iife.min.js" => asset("text/javascript; charset=utf-8", UPLOT_JS),
        "/ui/uPlot.min.css" => asset("text/css; charset=utf-8", UPLOT_CSS),
        "/api/series" => series(d, get("q").unwrap_or(""), get("limit")),
        "/api/tree" => tree(d, get("dir").unwrap_or("")),
        "/api/fetch" => fetch(d, &get, now),
        "/api/stats" => stats(d),
        p if p.starts_with("/api/") || p.starts_with("/ui/") => {
            error(404, &format!("no such endpoint: {p}"))
        }
        _ => return None,
    })
}

/// A JSON number written by hand into a fetch's `values` (`null` for unknown; infinities as
/// numbers too large for a double, which JavaScript reads as ±Infinity: JSON has no
/// infinity, and `serde_json` would write null).
fn json_num(v: f64, out: &mut String) {
    if v.is_nan() {
        out.push_str("null");
    } else if v.is_infinite() {
        out.push_str(if v > 0.0 { "1e9999" } else { "-1e9999" });
    } else {
        out.push_str(ryu::Buffer::new().format(v));
    }
}

/// The store's names, sorted, as of its last create or remove (sorting a million names for
/// every request of the page would take most of a second).
fn sorted_names(d: &Daemon) -> std::sync::Arc<Vec<String>> {
    type Cache = Option<(usize, ((u64, usize), u64), std::sync::Arc<Vec<String>>)>;
    static CACHE: std::sync::Mutex<Cache> = std::sync::Mutex::new(None);
    let inner = d.lock();
    let version = (inner.names_version(), inner.blobs_version());
    let me = d as *const Daemon as usize;
    let mut c = CACHE.lock().unwrap_or_else(|p| p.into_inner());
    if let Some((who, v, names)) = c.as_ref() {
        if *who == me && *v == version {
            return names.clone();
        }
    }
    let mut all = inner.names();
    let feeds = crate::feeds::list(inner.blobs());
    if !feeds.is_empty() {
        all.extend(feeds.iter().map(|f| f.name()));
        all.sort_unstable();
    }
    let names = std::sync::Arc::new(all);
    *c = Some((me, version, names.clone()));
    names
}

/// The Graphite paths of series `name`'s data sources ([`paths_of`]).
fn paths_for(name: &str, schema: &rrd::Schema) -> Vec<(String, usize)> {
    let ds: Vec<String> = schema.ds.iter().map(|d| d.name.clone()).collect();
    paths_of(name, &ds)
}

/// One series as the page lists it: name, step, last update, data sources (type, Graphite
/// path), archives (CF, PDPs a row, rows, seconds a row).
fn entry_json(name: &str, rrd: &rrd::Rrd, paths: &[(String, usize)]) -> Value {
    let ds: Vec<Value> = rrd
        .schema
        .ds
        .iter()
        .enumerate()
        .map(|(i, def)| {
            let path = paths.iter().find(|(_, k)| *k == i).map(|(p, _)| p.as_str());
            json!({ "name": def.name, "type": def.kind.name(), "path": path })
        })
        .collect();
    let rra: Vec<Value> = rrd
        .schema
        .rra
        .iter()
        .map(|r| {
            json!({
                "cf": r.cf.name(),
                "pdp": r.pdp_cnt,
                "rows": r.row_cnt,
                "step": r.pdp_cnt * rrd.schema.step,
            })
        })
        .collect();
    json!({
        "name": name,
        "step": rrd.schema.step,
        "last": rrd.last_up,
        "ds": ds,
        "rra": rra,
    })
}

/// An emoncms feed as the page lists a series (`crate::feeds`): one data source `value`, its
/// points one archive of its interval.
fn feed_json(f: &crate::feeds::Feed) -> Value {
    let name = f.name();
    let path = paths_of(&name, &["value".to_string()])
        .first()
        .map(|(p, _)| p.clone());
    json!({
        "name": name,
        "step": f.interval,
        "last": f.last(),
        "ds": [{ "name": "value", "type": "GAUGE", "path": path }],
        "rra": [{ "cf": "AVERAGE", "pdp": 1, "rows": f.npoints, "step": f.interval }],
        "feed": f.engine.name(),
    })
}

/// `/api/series`.
fn series(d: &Daemon, q: &str, limit: Option<&str>) -> Reply {
    let limit = match limit {
        None | Some("") => SERIES_LIMIT,
        Some(l) => match l.parse::<usize>() {
            Ok(n) if (1..=MAX_SERIES_LIMIT).contains(&n) => n,
            _ => {
                return error(
                    400,
                    &format!("limit '{l}' is not a count from 1 to {MAX_SERIES_LIMIT}"),
                )
            }
        },
    };
    let words: Vec<String> = q.split_whitespace().map(|w| w.to_lowercase()).collect();
    let names = sorted_names(d);
    let mut inner = d.lock();
    let (mut total, mut shown) = (0usize, 0usize);
    let mut out = Vec::new();
    let mut hay = String::new();
    for name in names.iter() {
        let Some(schema) = inner.schema(name) else {
            if let Some(f) = crate::feeds::by_name(inner.blobs(), name) {
                let path = format!("emoncms.{}", f.id);
                let hay = format!("{name}\nvalue\n{path}").to_lowercase();
                if words.iter().all(|w| hay.contains(w.as_str())) {
                    total += 1;
                    if shown < limit {
                        shown += 1;
                        out.push(feed_json(&f));
                    }
                }
            }
            continue;
        };
        // Worked out once for a search, else only for the series listed.
        let mut paths = None;
        if !words.is_empty() {
            let p = paths_for(name, schema);
            hay.clear();
            hay.push_str(&name.to_lowercase());
            for def in &schema.ds {
                hay.push('\n');
                hay.push_str(&def.name.to_lowercase());
            }
            for (path, _) in &p {
                hay.push('\n');
                hay.push_str(&path.to_lowercase());
            }
            if !words.iter().all(|w| hay.contains(w.as_str())) {
                continue;
            }
            paths = Some(p);
        }
        total += 1;
        if shown >= limit {
            continue;
        }
        shown += 1;
        // Read as every reader reads: the series' accepted values applied first, so `last`
        // is what LAST says.
        match crate::read::with_locked(d, &mut inner, name, |rrd| {
            let paths = paths.unwrap_or_else(|| paths_for(name, &rrd.schema));
            entry_json(name, rrd, &paths)
        }) {
            Ok(found) => out.extend(found),
            Err(why) => return error(503, &why.0),
        }
    }
    json_reply(
        200,
        &json!({ "series": out, "total": total, "shown": shown }),
    )
}

/// The names under `prefix` (sorted `names`): the directories directly under it with how
/// many names each holds, the names directly in it, and how many names are under it in all.
/// With no prefix, absolute names (outside the base directory) are under the directory "/".
fn group<'a>(names: &'a [String], prefix: &str) -> (Vec<(&'a str, usize)>, Vec<&'a str>, usize) {
    let from = names.partition_point(|n| n.as_str() < prefix);
    let mut dirs: Vec<(&str, usize)> = Vec::new();
    let mut here: Vec<&str> = Vec::new();
    let mut in_dir = 0usize;
    // Names with a common prefix are next to each other in sorted order: a directory's
    // names come together.
    for n in names[from..].iter() {
        let Some(rest) = n.strip_prefix(prefix) else {
            break;
        };
        in_dir += 1;
        let sub = if prefix.is_empty() && rest.starts_with('/') {
            Some("/")
        } else {
            rest.split_once('/').map(|(sub, _)| sub)
        };
        match sub {
            Some(sub) => match dirs.last_mut() {
                Some((last, k)) if *last == sub => *k += 1,
                _ => dirs.push((sub, 1)),
            },
            None => here.push(n),
        }
    }
    (dirs, here, in_dir)
}

/// `/api/tree?dir=D`: the directories directly under `D` (each with how many series it
/// holds, at any depth) and the series directly in it (at most [`SERIES_LIMIT`]), so that
/// the page's tree opens a directory at a time whatever the store's size.
fn tree(d: &Daemon, dir: &str) -> Reply {
    // Names outside the base directory are absolute: they sit under the directory "/".
    let dir = if dir == "/" {
        dir
    } else {
        dir.trim_end_matches('/')
    };
    let prefix = match dir {
        "" => String::new(),
        "/" => "/".to_string(),
        d => format!("{d}/"),
    };
    let names = sorted_names(d);
    let (dirs, here, in_dir) = group(&names, &prefix);
    if in_dir == 0 && !dir.is_empty() {
        return error(404, &format!("no series under {dir}/"));
    }
    let mut inner = d.lock();
    let dirs: Vec<Value> = dirs
        .iter()
        .map(|(name, k)| json!({ "name": name, "series": k }))
        .collect();
    let mut series: Vec<Value> = Vec::new();
    for n in here.iter().take(SERIES_LIMIT) {
        // Read as every reader reads: the series' accepted values applied first.
        match crate::read::with_locked(d, &mut inner, n, |rrd| {
            entry_json(n, rrd, &paths_for(n, &rrd.schema))
        }) {
            Ok(Some(v)) => series.push(v),
            Ok(None) => {
                series.extend(crate::feeds::by_name(inner.blobs(), n).map(|f| feed_json(&f)))
            }
            Err(why) => return error(503, &why.0),
        }
    }
    json_reply(
        200,
        &json!({
            "dir": dir,
            "total": names.len(),
            "under": in_dir,
            "dirs": dirs,
            "series": series,
            "more": here.len() > SERIES_LIMIT,
        }),
    )
}

/// `/api/fetch`.
fn fetch<'a>(d: &Daemon, get: &dyn Fn(&str) -> Option<&'a str>, now: i64) -> Reply {
    let Some(name) = get("series").filter(|s| !s.is_empty()) else {
        return error(400, "fetch needs series=NAME (a name /api/series lists)");
    };
    let time = |k: &str, default: &str| -> Result<i64, Reply> {
        let v = get(k).filter(|v| !v.is_empty()).unwrap_or(default);
        crate::graphite::time::parse(v, now).map_err(|e| error(400, &format!("{k}: {e}")))
    };
    let (from, until) = match (time("from", "-1d"), time("until", "now")) {
        (Ok(f), Ok(u)) => (f, u),
        (Err(r), _) | (_, Err(r)) => return r,
    };
    if until <= from {
        return error(400, &format!("until ({until}) must be after from ({from})"));
    }
    if from < rrd::parsetime::MIN_TIME {
        return error(400, "from: the first time to fetch must be after 1980");
    }
    let width: u64 = match get("width").filter(|v| !v.is_empty()) {
        None => 1000,
        Some(w) => match w.parse::<u64>() {
            Ok(n) if (1..=100_000).contains(&n) => n,
            _ => {
                return error(
                    400,
                    &format!("width '{w}' is not a count of pixels (1-100000)"),
                )
            }
        },
    };
    if let Some(reply) = fetch_feed(d, name, from, until, width) {
        return reply;
    }
    // A copy of the series (its archives packed) is taken under the store lock; the reply
    // is built after the lock is let go.
    let rrd = match crate::read::copy(d, name) {
        Ok(Some(rrd)) => rrd,
        Ok(None) => return error(404, &format!("no series {name}")),
        Err(why) => return error(503, &why.0),
    };
    let rrd = &rrd;
    if until > i64::MAX / 2 {
        return error(400, &format!("until ({until}) is not a time"));
    }
    let ds = match get("ds").filter(|v| !v.is_empty()) {
        None => 0,
        Some(v) => match rrd.schema.ds_index(v) {
            Some(i) => i,
            None => match v.parse::<usize>() {
                Ok(i) if i < rrd.schema.ds.len() => i,
                _ => return error(400, &format!("{name} has no data source {v}")),
            },
        },
    };
    let cfs: Vec<rrd::Cf> = rrd.schema.rra.iter().map(|r| r.cf).collect();
    let cf = match get("cf").filter(|v| !v.is_empty()) {
        None if cfs.contains(&rrd::Cf::Average) => rrd::Cf::Average,
        None => match cfs.first() {
            Some(&c) => c,
            None => return error(400, &format!("{name} has no archives")),
        },
        Some(v) => match rrd::Cf::from_name(&v.to_ascii_uppercase()) {
            Some(c) if cfs.contains(&c) => c,
            _ => return error(400, &format!("{name} has no {v} archive")),
        },
    };
    let resolution = ((until - from) as u64 / width).max(1);
    // The archive asked for (its index), or rrdtool's choice for the range (`auto`).
    let asked = get("rra").filter(|v| !v.is_empty() && *v != "auto");
    let plan = match asked {
        None => rrd::fetch::plan(rrd, cf, from, until, resolution),
        Some(v) => match v
            .parse::<usize>()
            .ok()
            .filter(|&i| i < rrd.schema.rra.len())
        {
            Some(i) => Some(rrd::fetch::Plan::of(rrd, i, from, until)),
            None => {
                return error(
                    400,
                    &format!(
                        "rra '{v}': auto or an archive of {name} (0 to {})",
                        rrd.schema.rra.len().saturating_sub(1)
                    ),
                )
            }
        },
    };
    // Rows of the archive that will be read, counted before any is: a range of centuries at
    // a fine archive must not take the daemon's memory.
    if let Some(p) = plan {
        if rrd::Budget::new(MAX_ROWS).plan(&p, 1).is_err() {
            return error(
                400,
                &format!(
                    "{from}..{until} is {} rows of archive {} ({} s a row), more than {MAX_ROWS}: narrow the range or choose a coarser archive",
                    p.rows(),
                    p.rra,
                    p.span
                ),
            );
        }
    }
    let (rra, start, step, mut values) = match (asked, plan) {
        (None, _) => match rrd::fetch::fetch(rrd, cf, from, until, resolution, false) {
            Ok(r) => {
                // The archive fetch read (it found one, as the plan did).
                let rra = plan.map_or(0, |p| p.rra);
                let vals: Vec<f64> = r.rows().map(|row| row[ds]).collect();
                (rra, r.start + r.step as i64, r.step as i64, vals)
            }
            Err(e) => return error(400, &e.to_string()),
        },
        // The rows `rrdtool fetch` would give for this archive: labelled by their ends,
        // from the one holding `from` to the one after `until`'s start.
        (Some(_), Some(p)) => {
            let mut rows = Vec::new();
            rrd::fetch::push_archive_rows(rrd, p.rra, p.first_row(), p.rows() as usize, &mut rows);
            let vals = rows.chunks_exact(rrd.ds_cnt()).map(|r| r[ds]).collect();
            (p.rra, p.first_row(), p.span, vals)
        }
        (Some(_), None) => return error(400, "no archive"),
    };
    let def = &rrd.schema.rra[rra];
    let (pdp, rows, rra_cf) = (def.pdp_cnt, def.row_cnt, def.cf);
    let ds_name = rrd.schema.ds[ds].name.clone();
    let (by, step) = if values.len() > MAX_POINTS {
        let by = values.len().div_ceil(MAX_POINTS);
        values = consolidate(&values, by, cf);
        (by, step * by as i64)
    } else {
        (1, step)
    };
    let head = json!({
        "series": name,
        "ds": ds_name,
        "cf": cf.name(),
        "rra": rra,
        "rraCf": rra_cf.name(),
        "pdp": pdp,
        "rows": rows,
        "from": from,
        "until": until,
        "start": start,
        "step": step,
        "consolidated": by,
    });
    fetch_reply(&head, &values)
}

/// `/api/fetch`'s reply: `head`'s object with the values after its fields, written by hand
/// (infinities), the rest by serde_json.
fn fetch_reply(head: &Value, values: &[f64]) -> Reply {
    let mut vals = String::with_capacity(values.len() * 20 + 2);
    vals.push('[');
    for (i, &v) in values.iter().enumerate() {
        if i > 0 {
            vals.push(',');
        }
        json_num(v, &mut vals);
    }
    vals.push(']');
    // The head's object, its closing brace replaced by the values.
    let mut body = to_json(head);
    body.pop();
    body.extend_from_slice(b", \"values\": ");
    body.extend_from_slice(vals.as_bytes());
    body.push(b'}');
    Reply {
        code: 200,
        content_type: "application/json",
        body,
        immutable: false,
    }
}

/// `/api/fetch` of an emoncms feed (`crate::feeds`), if `name` is one: its points in the
/// slots of its interval labelled by their ends as a series' rows are, from the one holding
/// `from` to the one after `until`'s start, averaged in groups when more than `width`.
fn fetch_feed(d: &Daemon, name: &str, from: i64, until: i64, width: u64) -> Option<Reply> {
    let inner = d.lock();
    let feed = crate::feeds::by_name(inner.blobs(), name)?;
    let points = FeedPoints {
        feed: &feed,
        blobs: inner.blobs(),
    };
    let span = points.span()?;
    let (s, e) = rrd::fetch::window(span, from, until);
    let n = (e - s) / span;
    if rrd::Budget::new(MAX_ROWS).spend(n.into()).is_err() {
        return Some(error(
            400,
            &format!(
                "{from}..{until} is {n} points of {span} s, more than {MAX_ROWS}: narrow the range"
            ),
        ));
    }
    // A row labelled t holds the point of the slot that ends at t: the one at t - span.
    let mut values = match points.read(0, s, n as usize) {
        Ok(v) => v,
        Err(e) => return Some(error(500, &format!("{name}: {e}"))),
    };
    drop(inner);
    let mut step = span;
    let most = (width as usize).min(MAX_POINTS);
    let by = values.len().div_ceil(most.max(1)).max(1);
    if by > 1 {
        values = consolidate(&values, by, rrd::Cf::Average);
        step *= by as i64;
    }
    let head = json!({
        "series": name,
        "ds": "value",
        "cf": "AVERAGE",
        "rra": 0,
        "rraCf": "AVERAGE",
        "pdp": 1,
        "rows": feed.npoints,
        "from": from,
        "until": until,
        "start": s + span,
        "step": step,
        "consolidated": by,
    });
    Some(fetch_reply(&head, &values))
}

/// `vals` in groups of `by`, each group's known values consolidated by `cf` (unknown if none).
fn consolidate(vals: &[f64], by: usize, cf: rrd::Cf) -> Vec<f64> {
    vals.chunks(by)
        .map(|g| {
            let known = g.iter().copied().filter(|v| !v.is_nan());
            // As rrdtool reduces: the Holt-Winters CFs average, but FAILURES (any failure).
            match cf {
                rrd::Cf::Min => known.fold(f64::NAN, f64::min),
                rrd::Cf::Max | rrd::Cf::Failures => known.fold(f64::NAN, f64::max),
                rrd::Cf::Last => g
                    .iter()
                    .rev()
                    .copied()
                    .find(|v| !v.is_nan())
                    .unwrap_or(f64::NAN),
                _ => {
                    let (n, sum) = known.fold((0usize, 0.0), |(n, s), v| (n + 1, s + v));
                    if n == 0 {
                        f64::NAN
                    } else {
                        sum / n as f64
                    }
                }
            }
        })
        .collect()
}

/// What the Disk panel shows, from the daemon's STATS: every `Key: number` line, the loss
/// window, and the projections.
fn stats(d: &Daemon) -> Reply {
    let lines = crate::stats::lines(d);
    let mut fields: Vec<(String, f64)> = Vec::new();
    let mut stats = serde_json::Map::new();
    for l in &lines {
        let Some((k, v)) = l.split_once(": ") else {
            continue;
        };
        let v = v.trim();
        let Ok(x) = v.parse::<f64>() else {
            continue;
        };
        // Integers stay integers; the rest as the doubles they are.
        let n = match v.parse::<u64>() {
            Ok(i) => Value::from(i),
            Err(_) => Value::from(x),
        };
        stats.insert(k.to_string(), n);
        fields.push((k.to_string(), x));
    }
    let f = |k: &str| fields.iter().find(|(n, _)| n == k).map_or(0.0, |(_, v)| *v);
    let p = project(
        d.commit_interval.as_secs().max(1),
        f("TreeNodesNumber") as u64,
        f("DataSetsWritten") as u64,
        f("UptimeSeconds") as u64,
    );
    json_reply(
        200,
        &json!({
            "stats": stats,
            "lossWindowSeconds": d.commit_interval.as_secs(),
            "series": f("TreeNodesNumber") as u64,
            "samplesPerDay": p.samples_per_day,
            "bytesPerDay": f("DiskBytesPerDay") as u64,
            "perFileWrite": PER_FILE_WRITE,
            "perFileBytesPerDay": p.per_file_bytes_per_day,
            "filesPerWindow": p.files_per_window,
        }),
    )
}

/// The write load projected to a day.
#[derive(Debug, PartialEq)]
pub struct Projection {
    pub samples_per_day: u64,
    /// Files a per-file writer would write each window: a series is written in a window
    /// if a value came for it (at most the series, at most the values of a window).
    pub files_per_window: u64,
    /// What writing each of those files once a window would cost a day.
    pub per_file_bytes_per_day: u64,
}

/// Project a day from `samples` over `uptime` seconds (STATS projects ringlet's own bytes:
/// DiskBytesPerDay), with `series` series and a window of `window` seconds.
pub fn project(window: u64, series: u64, samples: u64, uptime: u64) -> Projection {
    if uptime < 60 {
        return Projection {
            samples_per_day: 0,
            files_per_window: 0,
            per_file_bytes_per_day: 0,
        };
    }
    let per_day = |x: u64| (x as u128 * 86_400 / uptime as u128) as u64;
    let samples_per_window = (samples as u128 * window as u128 / uptime as u128) as u64;
    let files = series.min(samples_per_window);
    Projection {
        samples_per_day: per_day(samples),
        files_per_window: files,
        per_file_bytes_per_day: (files as u128
            * (86_400 / window.max(1)) as u128
            * PER_FILE_WRITE as u128) as u64,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_unknowns_and_infinities() {
        let mut s = String::new();
        for v in [1.5, f64::NAN, f64::INFINITY, -2.0, 1e-7] {
            json_num(v, &mut s);
            s.push(' ');
        }
        assert_eq!(s, "1.5 null 1e9999 -2.0 1e-7 ");
    }

    #[test]
    fn consolidation_follows_the_cf_and_keeps_unknown_groups() {
        let v = [1.0, f64::NAN, 3.0, f64::NAN, f64::NAN, 8.0, 2.0];
        let avg = consolidate(&v, 3, rrd::Cf::Average);
        assert_eq!(avg[0], 2.0);
        assert_eq!(avg[1], 8.0);
        assert_eq!(avg[2], 2.0);
        assert_eq!(consolidate(&v, 3, rrd::Cf::Max)[0], 3.0);
        assert_eq!(consolidate(&v, 3, rrd::Cf::Min)[1], 8.0);
        assert_eq!(consolidate(&v, 3, rrd::Cf::Last)[0], 3.0);
        assert!(consolidate(&[f64::NAN, f64::NAN], 2, rrd::Cf::Average)[0].is_nan());
    }

    #[test]
    fn the_tree_groups_names_a_directory_at_a_time() {
        let mut names: Vec<String> = ["a/x.rrd", "a/b/y.rrd", "a/b/z.rrd", "a-b/w.rrd", "top.rrd"]
            .iter()
            .chain(&["/abs/q.rrd", "/abs/r/s.rrd", "a0/v.rrd"])
            .map(|s| s.to_string())
            .collect();
        names.sort();
        let (dirs, here, n) = group(&names, "");
        // In byte order ("a-b" before "a/..."), each directory once.
        assert_eq!(dirs, [("/", 2), ("a-b", 1), ("a", 3), ("a0", 1)]);
        assert_eq!(here, ["top.rrd"]);
        assert_eq!(n, 8);
        let (dirs, here, n) = group(&names, "a/");
        assert_eq!((dirs, here, n), (vec![("b", 2)], vec!["a/x.rrd"], 3));
        let (dirs, here, _) = group(&names, "/");
        assert_eq!((dirs, here), (vec![("abs", 2)], vec![]));
        let (dirs, here, _) = group(&names, "/abs/");
        assert_eq!((dirs, here), (vec![("r", 1)], vec!["/abs/q.rrd"]));
        assert_eq!(group(&names, "zz/").2, 0);
    }

    #[test]
    fn the_projection_counts_a_file_a_series_a_window() {
        // 1,000 series, one value each every 300 s, for an hour: 12,000 values.
        let p = project(300, 1_000, 12_000, 3_600);
        assert_eq!(p.samples_per_day, 288_000);
        assert_eq!(p.files_per_window, 1_000);
        assert_eq!(p.per_file_bytes_per_day, 1_000 * 288 * PER_FILE_WRITE);
        // Fewer values a window than series: only the files that got one are written.
        let q = project(300, 1_000, 1_200, 3_600);
        assert_eq!(q.files_per_window, 100);
        // Under a minute: no projection yet, as STATS.
        assert_eq!(project(300, 5, 5, 30).per_file_bytes_per_day, 0);
    }
}
