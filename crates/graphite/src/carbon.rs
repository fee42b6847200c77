//! Carbon's configuration files as ringlet reads them (their text; the daemon reads the
//! files): `storage-schemas.conf` and
//! `storage-aggregation.conf` (the archives of a new series), and carbon.conf's
//! `MAX_CREATES_PER_MINUTE`. The INI reading is by hand (sections, `key = value`, `#`
//! comments, as Python's configparser reads carbon's files); the patterns are `regex`'s.

use regex::Regex;
use rrd::{Cf, DsDef, DsType, RraDef, Schema};

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
                par: [0; 5],
            })
            .collect(),
    }
}

/// carbon.conf's `MAX_CREATES_PER_MINUTE` when `--graphite-conf` has none (carbon's own
/// example file's).
pub const DEFAULT_MAX_CREATES_PER_MINUTE: f64 = 50.0;

/// What carbon.conf (`text`, read from `file`) says that ringlet uses:
/// `MAX_CREATES_PER_MINUTE` (`[cache]`, or any section: carbon reads it from the one its
/// daemon runs as), a number or `inf`.
pub fn max_creates_per_minute(text: &str, file: &str) -> Result<f64, String> {
    let sections = ini(text, file)?;
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn max_creates_per_minute_comes_from_carbon_conf() {
        let f = "/etc/carbon/carbon.conf";
        assert_eq!(
            max_creates_per_minute("[cache]\nLINE_RECEIVER_PORT = 2003\n", f).unwrap(),
            DEFAULT_MAX_CREATES_PER_MINUTE
        );
        let inf = max_creates_per_minute("[cache]\nmax_creates_per_minute = inf\n", f);
        assert!(inf.unwrap().is_infinite());
        let text = "[cache]\nMAX_CREATES_PER_MINUTE = 600\n[relay]\n";
        assert_eq!(max_creates_per_minute(text, f).unwrap(), 600.0);
        let e = max_creates_per_minute("[cache]\nMAX_CREATES_PER_MINUTE = lots\n", f).unwrap_err();
        assert!(e.contains("carbon.conf:") && e.contains("lots"), "{e}");
    }

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
        let d = Rules::parse(DEFAULT_SCHEMAS, "s", DEFAULT_AGGREGATION, "a").unwrap();
        assert_eq!(d.schema("a.b").step, 10);
        assert_eq!(d.schema("carbon.agents.x").step, 60);
        assert_eq!(d.aggregation("a.count"), (0.0, Method::Sum));
        assert!(d.schema("a.count").rra[1].xff < 1.0);
    }
}
