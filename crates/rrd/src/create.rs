//! `rrdtool create`: from its command-line arguments to a [`Schema`] and a start time.
//!
//! [`parse_create`] reads the arguments exactly as rrdtool 1.7.2 does (GNU getopt options
//! first, then the file name and the `DS:`/`RRA:` definitions in order) and reports rrdtool's
//! error texts. Durations (`--step 5m`, `DS:x:GAUGE:2m:U:U`, `RRA:AVERAGE:0.5:1h:1d`) follow
//! `rrd_scaled_duration` in `librrd(3)`. The Holt-Winters archives are refused: ringlet does
//! not support them yet. `--template` takes step, DS and RRA definitions (and, without
//! `--start` or `--source`, the last update) from an existing RRD, and `--source` names the
//! RRDs to fill the new one from ([`crate::prefill`]), through the caller's store
//! ([`CreateEnv`], [`parse_create_env`]). `DS:new=old[n]:...` says where `new` reads in the
//! sources ([`parse_ds_mapped`]); without sources the mapping is read and ignored, as
//! rrdtool does.

use crate::parsetime::{self, Base};
use crate::prefill::Mapping;
use crate::schema::{Cf, DsDef, DsType, RraDef, Schema};
use crate::{num, rpn, RrdError};

/// What `rrdtool create <args>` asks for.
#[derive(Debug, Clone, PartialEq)]
pub struct CreateRequest {
    /// The file name: the first non-option argument.
    pub name: String,
    pub schema: Schema,
    /// `--start`, resolved (default: the template's last update, else now - 10 s).
    pub start: i64,
    /// `--start` was given (with sources, the default start is their latest last update).
    pub start_given: bool,
    /// `--no-overwrite`/`-O`.
    pub no_overwrite: bool,
    /// `--source`/`-r`, in the order given.
    pub sources: Vec<String>,
    /// The mapping of each `DS:` definition (`DS:new=old[n]:...`), in order.
    pub maps: Vec<Mapping>,
}

impl CreateRequest {
    /// The new RRD: every row unknown, or filled from `sources` (those named, loaded in their
    /// order) as rrdtool fills them ([`crate::prefill`]).
    pub fn build(&self, sources: &[&crate::Rrd]) -> crate::Rrd {
        let start = match sources {
            [_, ..] if !self.start_given => crate::prefill::latest(sources),
            _ => self.start,
        };
        let mut rrd = crate::Rrd::new(self.schema.clone(), start);
        crate::prefill::prefill(&mut rrd, sources, &self.maps);
        rrd
    }
}

/// What `create` asks of the store while it reads its arguments.
pub trait CreateEnv {
    /// An existing RRD's schema and last update (`--template`); None: "Cannot open template".
    fn template(&mut self, name: &str) -> Option<(Schema, i64)>;
    /// Whether the file to create exists; asked only with `--no-overwrite`, right after the
    /// options are read and before any definition is checked, as rrdtool does.
    fn exists(&mut self, name: &str) -> bool;
    /// `--source NAME`, checked where rrdtool checks it (`stat`, while it reads the options):
    /// the error text when it names no RRD.
    fn source(&mut self, name: &str) -> Result<(), String>;
}

/// A [`CreateEnv`] of closures, for callers that allow no source.
struct Closures<'a> {
    template: &'a mut dyn FnMut(&str) -> Option<Schema>,
    exists: &'a mut dyn FnMut(&str) -> bool,
}

impl CreateEnv for Closures<'_> {
    fn template(&mut self, name: &str) -> Option<(Schema, i64)> {
        (self.template)(name).map(|s| (s, 0))
    }
    fn exists(&mut self, name: &str) -> bool {
        (self.exists)(name)
    }
    fn source(&mut self, _name: &str) -> Result<(), String> {
        Err("ringlet does not support create --source here".into())
    }
}

/// Multipliers of the duration suffixes of `rrd_scaled_duration`.
fn suffix_scale(c: u8) -> Option<u64> {
    Some(match c {
        b's' => 1,
        b'm' => 60,
        b'h' => 3600,
        b'd' => 86400,
        b'w' => 604800,
        b'M' => 2678400,
        b'y' => 31622400,
        _ => return None,
    })
}

/// `rrd_scaled_duration(token, divisor)`: a positive count, or a suffixed duration divided by
/// `divisor`. Errors are librrd's diagnostics.
pub fn scaled_duration(token: &str, divisor: u64) -> Result<u64, &'static str> {
    let b = token.as_bytes();
    if b.first().is_none_or(|c| !c.is_ascii_digit()) {
        return Err("value must be (suffixed) positive number");
    }
    let digits = b.iter().take_while(|c| c.is_ascii_digit()).count();
    // strtoul saturates.
    let mut value = token[..digits].parse::<u64>().unwrap_or(u64::MAX);
    if value == 0 {
        return Err("value must be positive");
    }
    match &b[digits..] {
        [] => {}
        [c] => {
            let Some(scale) = suffix_scale(*c) else {
                return Err("value has trailing garbage");
            };
            let secs = value.wrapping_mul(scale);
            if divisor == 0 || secs % divisor != 0 {
                return Err("value would truncate when scaled");
            }
            value = secs / divisor;
        }
        _ => return Err("value has trailing garbage"),
    }
    Ok(value)
}

/// Most archive values (rows x DS, all archives) one RRD may hold: ringlet keeps an RRD's rows
/// in memory, so larger schemas fail as rrdtool fails when it cannot allocate its file (1 GiB).
pub const MAX_VALUES: u64 = 1 << 27;

fn err(msg: impl Into<String>) -> RrdError {
    RrdError::new(msg)
}

/// Parse `rrdtool create`'s arguments (everything after the word `create`).
pub fn parse_create(args: &[String], now: i64) -> Result<CreateRequest, RrdError> {
    parse_create_with(args, now, &mut |_| None, &mut |_| false)
}

/// [`parse_create`] with the store's answers: `template` returns the schema of an existing
/// RRD, or `None` when there is none (`Cannot open template RRD <name>`); `exists` says
/// whether the file to create exists, asked only with `--no-overwrite`, right after the
/// options are read and before any definition is checked, as rrdtool does.
pub fn parse_create_with(
    args: &[String],
    now: i64,
    template: &mut dyn FnMut(&str) -> Option<Schema>,
    exists: &mut dyn FnMut(&str) -> bool,
) -> Result<CreateRequest, RrdError> {
    parse_create_env(args, now, &mut Closures { template, exists })
}

/// Parse `rrdtool create`'s arguments with the store's answers ([`CreateEnv`]).
pub fn parse_create_env(
    args: &[String],
    now: i64,
    env: &mut dyn CreateEnv,
) -> Result<CreateRequest, RrdError> {
    let req = parse_create_any(args, now, env)?;
    // rrdtool checks only that an archive index is in range; an archive depending on one of
    // the wrong type makes a file its updates cannot work on.
    req.schema.check_hw().map_err(|e| {
        err(format!(
            "{}: the rra-num of a Holt-Winters archive must name the archive it works with (see rrdcreate)",
            e.trim_start_matches("corrupt RRA definition: ")
        ))
    })?;
    Ok(req)
}

/// [`parse_create_env`] with the Holt-Winters archives rrdtool makes (those named, and those
/// an HWPREDICT without its own SEASONAL adds: [`add_contingent`]).
pub fn parse_create_any(
    args: &[String],
    now: i64,
    env: &mut dyn CreateEnv,
) -> Result<CreateRequest, RrdError> {
    let mut sources: Vec<String> = Vec::new();
    let mut template_name: Option<String> = None;
    let mut start_spec: Option<String> = None;
    let mut step_spec: Option<String> = None;
    let mut no_overwrite = false;
    let mut positional: Vec<&str> = Vec::new();
    let mut i = 0;
    while i < args.len() {
        let a = args[i].as_str();
        i += 1;
        if a == "--" {
            positional.extend(args[i..].iter().map(String::as_str));
            break;
        }
        let is_long = a.starts_with("--");
        let (opt, inline): (&str, Option<&str>) = if let Some(long) = a.strip_prefix("--") {
            match long.split_once('=') {
                Some((o, v)) => (o, Some(v)),
                None => (long, None),
            }
        } else if a.len() > 1 && a.starts_with('-') {
            // One character, whatever its length in bytes (`-é` is an unknown option, not a
            // slice through a character).
            let end = 1 + a[1..].chars().next().map_or(0, char::len_utf8);
            let short = &a[1..end];
            let rest = &a[end..];
            (short, (!rest.is_empty()).then_some(rest))
        } else {
            positional.push(a);
            continue;
        };
        let takes_arg = match opt {
            "start" | "b" | "step" | "s" | "source" | "r" | "template" | "t" | "daemon" | "d" => {
                true
            }
            "no-overwrite" | "O" => false,
            _ => return Err(err(format!("invalid option -- '{opt}'"))),
        };
        if !takes_arg {
            no_overwrite = true;
            continue;
        }
        let val = match inline {
            Some(v) => v.to_string(),
            None => {
                let Some(v) = args.get(i) else {
                    let an = if is_long { "" } else { "an " };
                    return Err(err(format!("option requires {an}argument -- '{opt}'")));
                };
                i += 1;
                v.clone()
            }
        };
        match opt {
            "start" | "b" => {
                let ts = parsetime::parse_time(&val, now)
                    .map_err(|e| err(format!("start time: {}", e.msg)))?;
                let Base::Absolute(t) = ts.base else {
                    return Err(err(
                        "specifying time relative to the 'start' or 'end' makes no sense here",
                    ));
                };
                if t < parsetime::MIN_TIME {
                    return Err(err("the first entry to the RRD should be after 1980"));
                }
                start_spec = Some(t.to_string());
            }
            "step" | "s" => {
                scaled_duration(&val, 1).map_err(|m| err(format!("step size: {m}")))?;
                step_spec = Some(val);
            }
            "source" | "r" => {
                env.source(&val).map_err(err)?;
                sources.push(val);
            }
            "template" | "t" => {
                if template_name.is_some() {
                    return Err(err("template already set"));
                }
                template_name = Some(val);
            }
            _ => return Err(err("ringlet does not support --daemon")),
        }
    }
    let Some((name, defs)) = positional.split_first() else {
        return Err(err("need name of an rrd file to create"));
    };
    if no_overwrite && env.exists(name) {
        return Err(err(format!("creating '{name}': File exists")));
    }
    let mut template_last_up = 0;
    let base = match &template_name {
        Some(t) => match env.template(t) {
            Some((schema, last_up)) => {
                template_last_up = last_up;
                Some(schema)
            }
            None => return Err(err(format!("Cannot open template RRD {t}"))),
        },
        None => None,
    };
    let step = match (&step_spec, &base) {
        (Some(s), _) => scaled_duration(s, 1).map_err(|m| err(format!("step size: {m}")))?,
        (None, Some(b)) => b.step,
        (None, None) => 300,
    };
    let start_given = start_spec.is_some();
    let start = match start_spec {
        Some(s) => s.parse::<i64>().unwrap_or(now - 10),
        // rrdtool takes the template's last update when neither --start nor --source is
        // given.
        None if template_last_up > 0 && sources.is_empty() => template_last_up,
        None => now - 10,
    };
    let mut schema = match base {
        Some(b) => Schema { step, ..b },
        None => Schema {
            step,
            ds: Vec::new(),
            rra: Vec::new(),
        },
    };
    let mut maps = Vec::new();
    // rrdtool hashes the file name as given (rrdcached gives the absolute path).
    let hash = fnv_hash(name);
    for def in defs {
        if let Some(body) = def.strip_prefix("DS:") {
            let (ds, map) = parse_ds_mapped(body, &schema.ds)?;
            schema.ds.push(ds);
            maps.push(map);
        } else if let Some(body) = def.strip_prefix("RRA:") {
            let (rra, _version4) = parse_rra_any(body, step, hash)?;
            schema.rra.push(rra);
            add_contingent(&mut schema.rra, hash)?;
        } else {
            return Err(err(format!("can't parse argument '{def}'")));
        }
    }
    if schema.rra.is_empty() {
        return Err(err("you must define at least one Round Robin Archive"));
    }
    if schema.ds.is_empty() {
        return Err(err("you must define at least one Data Source"));
    }
    let values = schema.rra.iter().try_fold(0u64, |acc, r| {
        r.row_cnt
            .checked_mul(schema.ds.len() as u64)
            .and_then(|v| acc.checked_add(v))
    });
    if values.is_none_or(|v| v > MAX_VALUES) {
        return Err(err("cannot allocate memory"));
    }
    if !schema.spans_fit() {
        return Err(err(format!(
            "an archive would span more than {} seconds a row or 2^62 in all (step x steps x rows)",
            crate::schema::MAX_ROW_SPAN
        )));
    }
    Ok(CreateRequest {
        name: name.to_string(),
        schema,
        start,
        start_given,
        no_overwrite,
        sources,
        maps,
    })
}

/// A character of a data source's name: `[a-zA-Z0-9_-]`.
pub fn is_name_char(c: u8) -> bool {
    c.is_ascii_alphanumeric() || c == b'_' || c == b'-'
}

/// `DS:name:TYPE:...` after the `DS:`, as create reads it (`prev`: the data sources defined
/// before it, which a COMPUTE expression may name). `tune` reads its added ones the same way.
pub fn parse_ds(body: &str, prev: &[DsDef]) -> Result<DsDef, RrdError> {
    parse_ds_mapped(body, prev).map(|(ds, _)| ds)
}

/// A name of `[a-zA-Z0-9_-]{1,19}` at the start of `s`, and what follows it.
fn ds_name(s: &str) -> Option<(&str, &str)> {
    let n = s.bytes().take_while(|&c| is_name_char(c)).count();
    (n > 0 && n <= 19).then(|| s.split_at(n))
}

/// [`parse_ds`] with the definition's mapping: `name=from[index]:TYPE:...` (rrdtool's DS
/// pattern: `from` a name, `index` digits read by `strtol` into an `int`).
pub fn parse_ds_mapped(body: &str, prev: &[DsDef]) -> Result<(DsDef, Mapping), RrdError> {
    let bad = || err("invalid DS format");
    let (name, mut rest) = ds_name(body).ok_or_else(bad)?;
    let mut map = Mapping {
        name: name.to_string(),
        from: String::new(),
        index: -1,
    };
    if let Some(r) = rest.strip_prefix('=') {
        let (from, r) = ds_name(r).ok_or_else(bad)?;
        map.from = from.to_string();
        rest = r;
        if let Some(r) = rest.strip_prefix('[') {
            let digits = r.bytes().take_while(u8::is_ascii_digit).count();
            if digits == 0 || r.as_bytes().get(digits) != Some(&b']') {
                return Err(bad());
            }
            // strtol saturates; the result is stored in an int.
            map.index = r[..digits].parse::<i64>().unwrap_or(i64::MAX) as i32;
            rest = &r[digits + 1..];
        }
    }
    let Some(rest) = rest.strip_prefix(':') else {
        return Err(bad());
    };
    parse_ds_body(name, rest, prev).map(|ds| (ds, map))
}

/// The type and its parameters of data source `name` (`rest`: after `name:`).
fn parse_ds_body(name: &str, rest: &str, prev: &[DsDef]) -> Result<DsDef, RrdError> {
    let bad = || err("invalid DS format");
    let type_len = rest.bytes().take_while(|c| c.is_ascii_uppercase()).count();
    if type_len == 0 || type_len > 19 || rest.as_bytes().get(type_len) != Some(&b':') {
        return Err(bad());
    }
    let params = &rest[type_len + 1..];
    if params.is_empty() {
        return Err(bad());
    }
    if prev.iter().any(|d| d.name == name) {
        return Err(err(format!("Duplicate DS name: {name}")));
    }
    let type_name = &rest[..type_len];
    let Some(kind) = DsType::from_name(type_name) else {
        return Err(err(format!("invalid DS type specified ({type_name})")));
    };
    if kind == DsType::Compute {
        let names: Vec<&str> = prev.iter().map(|d| d.name.as_str()).collect();
        let prog = rpn::compile_compute(params, &names)?;
        let cdef =
            prog.to_cdef_string(&|i| names.get(i).map_or_else(String::new, |s| s.to_string()));
        return Ok(DsDef {
            name: name.to_string(),
            kind,
            heartbeat: 0,
            min: f64::NAN,
            max: f64::NAN,
            rpn: Some(cdef),
        });
    }
    let fail = |m: &str| err(format!("failed to parse data source {params}: {m}"));
    let Some((hb, minmax)) = params.split_once(':') else {
        return Err(fail("missing separator"));
    };
    let heartbeat = scaled_duration(hb, 1).map_err(fail)?;
    let mut parts = minmax.split(':');
    let (min_s, max_s) = match (parts.next(), parts.next()) {
        (Some(a), Some(b)) if !a.is_empty() && !b.is_empty() => (a, b),
        _ => return Err(fail("failed to extract min:max")),
    };
    let bound = |s: &str, what: &str| -> Result<f64, RrdError> {
        if s == "U" {
            Ok(num::DNAN)
        } else {
            num::strtodbl_in(&format!("parsing {what} val"), s)
        }
    };
    let min = bound(min_s, "min")?;
    let max = bound(max_s, "max")?;
    if min >= max {
        return Err(fail("min must be less than max in DS definition"));
    }
    Ok(DsDef {
        name: name.to_string(),
        kind,
        heartbeat,
        min,
        max,
        rpn: None,
    })
}

/// The most `RRA:` arguments rrdtool reads, and the longest FAILURES window.
const MAX_FAILURES_WINDOW: i32 = 28;

/// rrdtool's `parseRRA`, every CF: its fields token by token (C's `strtok`: empty ones
/// skipped), each checked as it is read, so the first bad one is the error; then the count.
/// `hash` is rrdtool's FNV hash of the file's name ([`fnv_hash`]), which places a seasonal
/// archive's smoothing. Also returns whether the archive needs file version 4 (MHWPREDICT, or
/// a `smoothing-window=`).
pub fn parse_rra_any(body: &str, step: u64, hash: u64) -> Result<(RraDef, bool), RrdError> {
    let toks: Vec<&str> = body.split(':').filter(|t| !t.is_empty()).collect();
    let mut def = RraDef::new(Cf::Average, 0.0, 1, 0);
    let mut hw = crate::schema::HwParams::default();
    let mut v4 = false;
    let mut min_tokens = 4;
    let unit = |t: &str| matches!(num::strtod(t), Some((_, n)) if n == t.len());
    let real = |t: &str| num::strtod(t).map_or(0.0, |(v, _)| v);
    for (k, t) in toks.iter().enumerate() {
        let cf = def.cf;
        match k {
            0 => {
                // sscanf's %19[A-Z]: the leading capitals.
                let n = t.bytes().take_while(u8::is_ascii_uppercase).count().min(19);
                let name = &t[..n];
                let Some(c) = Cf::from_name(name) else {
                    return Err(err(format!("Unrecognized consolidation function {name}")));
                };
                def.cf = c;
                match c {
                    Cf::HwPredict | Cf::MhwPredict => {
                        v4 |= c == Cf::MhwPredict;
                        min_tokens = 5;
                        hw.alpha = 0.1;
                        hw.beta = 1.0 / 288.0;
                        hw.dependent = i32::MAX as u64;
                    }
                    Cf::Seasonal | Cf::DevSeasonal => {
                        min_tokens = if c == Cf::Seasonal { 4 } else { 3 };
                        hw.gamma = 0.1;
                        hw.smoothing_window = 0.05;
                        hw.dependent = u64::MAX;
                    }
                    Cf::DevPredict => {
                        min_tokens = 3;
                        hw.dependent = u64::MAX;
                    }
                    Cf::Failures => {
                        min_tokens = 5;
                        hw.delta_pos = 2.0;
                        hw.delta_neg = 2.0;
                        hw.window_len = 3;
                        hw.failure_threshold = 2;
                        hw.dependent = u64::MAX;
                    }
                    _ => {}
                }
            }
            1 if cf.is_hw() => {
                def.row_cnt = scaled_duration(t, step)
                    .map_err(|m| err(format!("Invalid row count {t}: {m}")))?;
            }
            1 => {
                let v = real(t);
                if !unit(t) || !(0.0..1.0).contains(&v) {
                    return Err(err("Invalid xff: must be between 0 and 1"));
                }
                def.xff = v;
            }
            2 => match cf {
                Cf::HwPredict | Cf::MhwPredict => {
                    let v = real(t);
                    if !unit(t) || v <= 0.0 || v >= 1.0 {
                        return Err(err("Invalid alpha: must be between 0 and 1"));
                    }
                    hw.alpha = v;
                }
                Cf::Seasonal | Cf::DevSeasonal => {
                    let v = real(t);
                    if !unit(t) || v <= 0.0 || v >= 1.0 {
                        return Err(err("Invalid gamma: must be between 0 and 1"));
                    }
                    hw.gamma = v;
                    hw.smooth_idx = hash.checked_rem(def.row_cnt).unwrap_or(0);
                }
                Cf::Failures => {
                    let n = num::atoi(t);
                    hw.failure_threshold = n as i64 as u64;
                    if !(1..=MAX_FAILURES_WINDOW).contains(&n) {
                        return Err(err(format!(
                            "Failure threshold is out of range 1, {MAX_FAILURES_WINDOW}"
                        )));
                    }
                }
                Cf::DevPredict => hw.dependent = (num::atoi(t) as i64 - 1) as u64,
                _ => {
                    def.pdp_cnt = scaled_duration(t, step)
                        .map_err(|m| err(format!("Invalid step {t}: {m}")))?;
                }
            },
            3 => match cf {
                Cf::HwPredict | Cf::MhwPredict => {
                    let v = real(t);
                    if !unit(t) || !(0.0..=1.0).contains(&v) {
                        return Err(err("Invalid beta: must be between 0 and 1"));
                    }
                    hw.beta = v;
                }
                Cf::Seasonal | Cf::DevSeasonal => {
                    hw.dependent = (num::atoi(t) as i64 - 1) as u64;
                }
                Cf::Failures => {
                    let n = num::atoi(t);
                    hw.window_len = n as i64 as u64;
                    if !(1..=MAX_FAILURES_WINDOW).contains(&n) {
                        return Err(err(format!(
                            "Window length is out of range 1, {MAX_FAILURES_WINDOW}"
                        )));
                    }
                    if hw.window_len < hw.failure_threshold {
                        return Err(err("Window length is shorter than the failure threshold"));
                    }
                }
                Cf::DevPredict => {
                    return Err(err(
                        "Unexpected extra argument for consolidation function DEVPREDICT",
                    ))
                }
                _ => {
                    def.row_cnt = scaled_duration(t, step.wrapping_mul(def.pdp_cnt))
                        .map_err(|m| err(format!("Invalid row count {t}: {m}")))?;
                }
            },
            4 => match cf {
                Cf::Failures => hw.dependent = (num::atoi(t) as i64 - 1) as u64,
                Cf::Seasonal | Cf::DevSeasonal => {
                    // sscanf("smoothing-window=%lf"): the number after the prefix, any tail.
                    let Some(v) = t
                        .strip_prefix("smoothing-window=")
                        .and_then(num::strtod)
                        .filter(|&(_, n)| n > 0)
                        .map(|(v, _)| v)
                    else {
                        return Err(err(format!("Invalid option {t}")));
                    };
                    v4 = true;
                    hw.asks_v4 = true;
                    hw.smoothing_window = v;
                    // rrdtool's test lets NaN through.
                    if !v.is_nan() && !(0.0..=1.0).contains(&v) {
                        return Err(err(format!(
                            "Invalid smoothing-window {}: must be between 0 and 1",
                            c_fixed6(v)
                        )));
                    }
                }
                Cf::HwPredict | Cf::MhwPredict => {
                    // An unsigned short in rrdtool.
                    let period = num::atoi(t) as u16 as u64;
                    if period > def.row_cnt {
                        return Err(err(
                            "Length of seasonal cycle exceeds length of HW prediction array",
                        ));
                    }
                    hw.period = period;
                }
                _ => {
                    return Err(err(format!(
                        "Unexpected extra argument for consolidation function {}",
                        cf.name()
                    )))
                }
            },
            5 => hw.dependent = (num::atoi(t) as i64 - 1) as u64,
            _ => return Err(err("Unknown error")),
        }
    }
    if toks.len() < min_tokens {
        return Err(err(format!(
            "Expected at least {min_tokens} arguments for RRA but got {}",
            toks.len()
        )));
    }
    def.set_hw(&hw);
    Ok((def, v4))
}

/// C's `%f`: six decimals, glibc's words for the infinities and NaN.
fn c_fixed6(v: f64) -> String {
    let sign = if v.is_sign_negative() { "-" } else { "" };
    if v.is_nan() {
        format!("{sign}nan")
    } else if v.is_infinite() {
        format!("{sign}inf")
    } else {
        format!("{v:.6}")
    }
}

/// rrdtool's `handle_dependent_rras`: an HWPREDICT or MHWPREDICT just read (the last of
/// `rras`) that names no SEASONAL archive gets the four rrdtool adds after it: SEASONAL and
/// DEVSEASONAL (a season of rows, its alpha as their gamma, smoothing at `hash % period`, a
/// smoothing window of 0), DEVPREDICT (its rows) and FAILURES (a season of rows, bounds of 2
/// deviations, 7 violations in 9), each pointing at the one it depends on.
pub fn add_contingent(rras: &mut Vec<RraDef>, hash: u64) -> Result<(), RrdError> {
    let Some(last) = rras.last() else {
        return Ok(());
    };
    let p = last.hw();
    if !matches!(last.cf, Cf::HwPredict | Cf::MhwPredict) || p.dependent != i32::MAX as u64 {
        return Ok(());
    }
    if p.period == 0 {
        // rrdtool 1.7.2 dies of a division by zero here.
        return Err(err(format!(
            "the seasonal period of {} must be at least 1",
            last.cf.name()
        )));
    }
    let (hw, rows) = ((rras.len() - 1) as u64, last.row_cnt);
    let mut q = p;
    q.dependent = hw + 1;
    let n = rras.len() - 1;
    rras[n].set_hw(&q);
    let make = |cf, row_cnt, params: crate::schema::HwParams| {
        let mut r = RraDef::new(cf, 0.0, 1, row_cnt);
        r.set_hw(&params);
        r
    };
    let seasonal = crate::schema::HwParams {
        gamma: p.alpha,
        smooth_idx: hash % p.period,
        dependent: hw,
        ..Default::default()
    };
    rras.push(make(Cf::Seasonal, p.period, seasonal));
    rras.push(make(Cf::DevSeasonal, p.period, seasonal));
    let dev = crate::schema::HwParams {
        dependent: hw + 2,
        ..Default::default()
    };
    rras.push(make(Cf::DevPredict, rows, dev));
    let failures = crate::schema::HwParams {
        delta_pos: 2.0,
        delta_neg: 2.0,
        failure_threshold: 7,
        window_len: 9,
        dependent: hw + 2,
        ..Default::default()
    };
    rras.push(make(Cf::Failures, p.period, failures));
    Ok(())
}

/// rrdtool's `FnvHash` of a file name: FNV-1 over its bytes, in C's 64-bit `unsigned long`
/// (so not reduced to 32 bits), which places seasonal archives' smoothing.
pub fn fnv_hash(name: &str) -> u64 {
    name.bytes().fold(0x811c_9dc5u64, |h, b| {
        h.wrapping_mul(0x0100_0193) ^ u64::from(b)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const NOW: i64 = 1795304690;

    fn create(args: &str) -> Result<CreateRequest, RrdError> {
        let v: Vec<String> = args.split_whitespace().map(String::from).collect();
        parse_create(&v, NOW)
    }

    fn fails(args: &str) -> String {
        create(args).expect_err(args).msg
    }

    #[test]
    fn holt_winters_archives_parse_as_rrdtool_reads_them() {
        // `rrdtool create h.rrd ... RRA:HWPREDICT:30:0.1:0.0035:12`, and its SEASONAL's
        // smoothing index in dump (9 for the name h.rrd).
        assert_eq!(fnv_hash("h.rrd") % 12, 9);
        let (d, v4) = parse_rra_any("HWPREDICT:30:0.1:0.0035:12", 300, 0).unwrap();
        let p = d.hw();
        assert_eq!(
            (d.cf, d.row_cnt, d.pdp_cnt, v4),
            (Cf::HwPredict, 30, 1, false)
        );
        assert_eq!((p.alpha, p.beta, p.period), (0.1, 0.0035, 12));
        // Created without a SEASONAL index: rrdtool adds the four others (INT_MAX marks it).
        assert_eq!(p.dependent, i32::MAX as u64);
        let (d, v4) = parse_rra_any(
            "SEASONAL:1d:0.2:2:smoothing-window=0.1",
            300,
            fnv_hash("h.rrd"),
        )
        .unwrap();
        let p = d.hw();
        assert_eq!(
            (d.row_cnt, p.gamma, p.smoothing_window, p.dependent, v4),
            (288, 0.2, 0.1, 1, true)
        );
        assert_eq!(p.smooth_idx, fnv_hash("h.rrd") % 288);
        let (d, _) = parse_rra_any("FAILURES:12:7:9:4", 300, 0).unwrap();
        let p = d.hw();
        assert_eq!((p.failure_threshold, p.window_len, p.dependent), (7, 9, 3));
        assert_eq!((p.delta_pos, p.delta_neg), (2.0, 2.0));
        assert!(parse_rra_any("MHWPREDICT:30:0.5:0.5:5", 300, 0).unwrap().1);
        // An AVERAGE's bad xff is found before its missing fields, as rrdtool reads them.
        assert_eq!(
            parse_rra_any("AVERAGE:1.5:1", 300, 0).unwrap_err().msg,
            "Invalid xff: must be between 0 and 1"
        );
    }

    #[test]
    fn an_hwpredict_alone_gets_rrdtools_four_other_archives() {
        // As `rrdtool dump h.rrd` shows them after this create.
        let args: Vec<String> = "h.rrd --start 1700000000 --step 300 DS:x:GAUGE:600:U:U \
             RRA:AVERAGE:0.5:1:20 RRA:HWPREDICT:30:0.1:0.0035:12"
            .split_whitespace()
            .map(String::from)
            .collect();
        let mut env = Closures {
            template: &mut |_| None,
            exists: &mut |_| false,
        };
        let r = parse_create_any(&args, NOW, &mut env).unwrap().schema.rra;
        let got: Vec<(Cf, u64, u64)> = r
            .iter()
            .map(|a| (a.cf, a.row_cnt, a.hw().dependent))
            .collect();
        assert_eq!(
            got,
            [
                (Cf::Average, 20, 0),
                (Cf::HwPredict, 30, 2),
                (Cf::Seasonal, 12, 1),
                (Cf::DevSeasonal, 12, 1),
                (Cf::DevPredict, 30, 3),
                (Cf::Failures, 12, 3),
            ]
        );
        let (s, f) = (r[2].hw(), r[5].hw());
        assert_eq!((s.gamma, s.smooth_idx, s.smoothing_window), (0.1, 9, 0.0));
        assert_eq!(r[3].hw().smooth_idx, 9);
        assert_eq!(
            (f.delta_pos, f.delta_neg, f.window_len, f.failure_threshold),
            (2.0, 2.0, 9, 7)
        );
        assert_eq!(
            parse_create_env(&args, NOW, &mut env).unwrap().schema.rra,
            r
        );
        // rrdtool divides by the period here, and dies of a period of 0.
        let mut zero = args.clone();
        zero[6] = "RRA:HWPREDICT:30:0.1:0.0035:0".into();
        assert!(parse_create_any(&zero, NOW, &mut env)
            .unwrap_err()
            .msg
            .contains("at least 1"));
    }

    #[test]
    fn durations_scale_like_librrd() {
        assert_eq!(scaled_duration("5m", 1), Ok(300));
        assert_eq!(scaled_duration("1M", 1), Ok(2678400));
        assert_eq!(scaled_duration("1d", 300), Ok(288));
        assert_eq!(
            scaled_duration("7m", 3600),
            Err("value would truncate when scaled")
        );
        assert_eq!(scaled_duration("1x", 1), Err("value has trailing garbage"));
        assert_eq!(
            scaled_duration("-1", 1),
            Err("value must be (suffixed) positive number")
        );
        assert_eq!(scaled_duration("0", 1), Err("value must be positive"));
        assert_eq!(scaled_duration("99999999999999999999", 1), Ok(u64::MAX));
    }

    #[test]
    fn full_definition_parses() {
        let r = create(
            "a.rrd -O --start 1700000000 --step 1h DS:x:GAUGE:2m:0:100 DS:y-z:COUNTER:600:U:U \
             DS:c:COMPUTE:x,y-z,+ RRA:AVERAGE:0.5:1h:1d RRA:MAX:0:1:10",
        )
        .unwrap();
        assert_eq!(r.name, "a.rrd");
        assert!(r.no_overwrite);
        assert_eq!(r.start, 1700000000);
        assert_eq!(r.schema.step, 3600);
        assert_eq!(r.schema.ds[0].heartbeat, 120);
        assert!(r.schema.ds[1].min.is_nan());
        assert_eq!(r.schema.ds[2].rpn.as_deref(), Some("x,y-z,+"));
        assert_eq!((r.schema.rra[0].pdp_cnt, r.schema.rra[0].row_cnt), (1, 24));
        assert_eq!(
            create("a.rrd DS:x:GAUGE:1:U:U RRA:LAST:0.5:1:1")
                .unwrap()
                .start,
            NOW - 10
        );
    }

    #[test]
    fn template_gives_step_ds_and_rra_and_step_option_wins() {
        let base = create("t.rrd --step 10 DS:a:GAUGE:30:U:U RRA:AVERAGE:0.5:1:10")
            .unwrap()
            .schema;
        let args: Vec<String> = "n.rrd -t t.rrd DS:b:GAUGE:1:U:U RRA:MAX:0.5:1m:1h"
            .split_whitespace()
            .map(String::from)
            .collect();
        let r = parse_create_with(
            &args,
            NOW,
            &mut |n| (n == "t.rrd").then(|| base.clone()),
            &mut |_| false,
        )
        .unwrap();
        assert_eq!(r.schema.step, 10);
        assert_eq!(r.schema.ds.len(), 2);
        assert_eq!((r.schema.rra[1].pdp_cnt, r.schema.rra[1].row_cnt), (6, 60));
        let mut with_step = args.clone();
        with_step.push("--step=20".into());
        let r = parse_create_with(&with_step, NOW, &mut |_| Some(base.clone()), &mut |_| false)
            .unwrap();
        assert_eq!(r.schema.step, 20);
        assert_eq!(
            parse_create_with(&args, NOW, &mut |_| None, &mut |_| false)
                .unwrap_err()
                .msg,
            "Cannot open template RRD t.rrd"
        );
    }

    #[test]
    fn errors_are_rrdtools() {
        let ok_ds = "DS:x:GAUGE:120:0:100";
        let ok_rra = "RRA:AVERAGE:0.5:1:10";
        assert_eq!(
            fails("c.rrd"),
            "you must define at least one Round Robin Archive"
        );
        assert_eq!(
            fails(&format!("c.rrd {ok_rra}")),
            "you must define at least one Data Source"
        );
        assert_eq!(fails("c.rrd DS:x.y:GAUGE:1:U:U"), "invalid DS format");
        assert_eq!(
            fails("c.rrd DS:abcdefghijklmnopqrst:GAUGE:1:U:U"),
            "invalid DS format"
        );
        assert_eq!(
            fails(&format!("c.rrd {ok_ds} {ok_ds}")),
            "Duplicate DS name: x"
        );
        assert_eq!(fails("c.rrd DS:x:FOO:1"), "invalid DS type specified (FOO)");
        assert_eq!(
            fails("c.rrd DS:x:GAUGE:0:0:100"),
            "failed to parse data source 0:0:100: value must be positive"
        );
        assert_eq!(
            fails("c.rrd DS:x:GAUGE:120:5:1"),
            "failed to parse data source 120:5:1: min must be less than max in DS definition"
        );
        assert_eq!(
            fails("c.rrd DS:x:GAUGE:120:0"),
            "failed to parse data source 120:0: failed to extract min:max"
        );
        assert_eq!(
            fails("c.rrd DS:x:GAUGE:120"),
            "failed to parse data source 120: missing separator"
        );
        assert_eq!(
            fails("c.rrd DS:x:GAUGE:120:a:1"),
            "parsing min val - Cannot convert 'a' to float"
        );
        assert_eq!(
            fails("c.rrd DS:x:GAUGE:120:1x:100"),
            "parsing min val - Converted '1x' to 1.000000, but cannot convert 'x'"
        );
        assert_eq!(
            fails(&format!("c.rrd {ok_ds} RRA:AVERAGE:1:1:1")),
            "Invalid xff: must be between 0 and 1"
        );
        assert_eq!(
            fails(&format!("c.rrd {ok_ds} RRA:AVERAGE:0.5:1")),
            "Expected at least 4 arguments for RRA but got 3"
        );
        assert_eq!(
            fails(&format!("c.rrd {ok_ds} RRA:FOO:1")),
            "Unrecognized consolidation function FOO"
        );
        assert_eq!(
            fails(&format!("c.rrd {ok_ds} RRA:AVERAGE:0.5:7m:1d")),
            "Invalid step 7m: value would truncate when scaled"
        );
        assert_eq!(
            fails(&format!("c.rrd {ok_ds} RRA:AVERAGE:0.5:1:10:3")),
            "Unexpected extra argument for consolidation function AVERAGE"
        );
        assert_eq!(
            fails(&format!("c.rrd --step 0 {ok_ds} {ok_rra}")),
            "step size: value must be positive"
        );
        assert_eq!(
            fails(&format!("c.rrd --start 100 {ok_ds} {ok_rra}")),
            "start time: did you really mean month 100?"
        );
        assert_eq!(
            fails(&format!("c.rrd foo {ok_ds} {ok_rra}")),
            "can't parse argument 'foo'"
        );
        assert_eq!(
            fails(&format!("c.rrd --foo {ok_ds} {ok_rra}")),
            "invalid option -- 'foo'"
        );
        // A short option of a character of several bytes (found by the fuzz smoke: it was
        // sliced through the character).
        assert_eq!(
            fails(&format!("c.rrd -\u{e9}x {ok_ds} {ok_rra}")),
            "invalid option -- '\u{e9}'"
        );
        assert_eq!(
            fails(&format!(
                "c.rrd {ok_ds} RRA:AVERAGE:0.5:1:99999999999999999999"
            )),
            "cannot allocate memory"
        );
        // Row times would overflow (found by the fuzz smoke with overflow checks on).
        for huge in [
            "--step 2000000000000 DS:x:GAUGE:600:U:U RRA:AVERAGE:0.5:1:10",
            "--step 1000000 DS:x:GAUGE:600:U:U RRA:AVERAGE:0.5:1000000000:10",
            "--step 1000000 DS:x:GAUGE:600:U:U RRA:AVERAGE:0.5:1000000:100000000",
        ] {
            assert!(
                fails(&format!("c.rrd {huge}")).contains("would span more than"),
                "{huge}"
            );
        }
        assert!(create("c.rrd --step 86400 DS:x:GAUGE:1d:U:U RRA:AVERAGE:0.5:365:1000").is_ok());
        assert!(create(&format!("c.rrd {ok_ds} RRA:HWPREDICT:10:0.1:0.1:10")).is_ok());
        // rrdtool makes this file (an rra-num naming the wrong archive); ringlet refuses it.
        assert_eq!(
            fails(&format!(
                "c.rrd {ok_ds} RRA:HWPREDICT:10:0.1:0.1:10:2 RRA:DEVSEASONAL:10:0.1:1 \
                 RRA:SEASONAL:10:0.1:1"
            )),
            "HWPREDICT archive 0 depends on no archive of the right type: the rra-num of a \
             Holt-Winters archive must name the archive it works with (see rrdcreate)"
        );
    }
}
