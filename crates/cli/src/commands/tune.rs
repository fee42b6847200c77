//! `tune`: rrdtool 1.7.2's changes to a data source's header (`-h` heartbeat, `-i` minimum,
//! `-a` maximum, `-d` type, `-r` rename), with its texts, as Cacti sends them.
//!
//! rrdtool 1.7.2 applies the options in the order given, each to the file as it goes: an
//! option that fails stops the command with its error, and the options before it stay
//! applied. ringlet does the same (the series is replaced once, with what was applied).
//!
//! What rrdtool reads, as observed on it:
//! - `NAME:VALUE`: NAME is 1 to 19 characters of `[a-zA-Z0-9_-]`; the new name of `-r` is
//!   read the same way (cut at 19, ending at any other character). rrdtool lets a rename
//!   take another data source's name; ringlet too, but not where a COMPUTE data source
//!   would then read another one (its expression names them: a name reads as the first).
//! - A heartbeat is C's `strtol` (a sign, digits, the rest ignored; saturating), kept as the
//!   unsigned number of the same bits (`-5` is 18446744073709551611).
//! - A minimum or maximum is `U` (or `Unknown`) or a number as rrdtool reads one
//!   (`rrd::num::strtod`: the rest ignored), but not `inf` or `nan`.
//! - A type is a word of capitals; `COMPUTE` as the new type changes nothing (rrdtool's
//!   would leave a file it cannot read back); a new type forgets the last reading (`UNKN`).
//!   A change that would take away an RRD's last DCOUNTER or DDERIVE, or bring the first, is
//!   refused: rrdtool keeps the file's version (0005 with those types, else 0003) whatever
//!   the types become, and ringlet derives the version from the types.
//! - Holt-Winters options (`-p -n -f -w -x -y -z -v -s -S`) set the first archive of their
//!   CF as rrdtool's `rrd_tune.c` does, with its checks in its order (`-x`/`-y` an HWPREDICT,
//!   else an MHWPREDICT; `-f`/`-w` erase the FAILURES history; `-s`/`-S` ask for file
//!   version 4 first, which ringlet keeps only where a seasonal archive exists); `-b` resets
//!   a data source's coefficients (`Rrd::reset_aberrant`); `-t` changes nothing (rrdtool
//!   1.7.2's does not either, without DS or RRA changes).
//! - rrdtool's DS and RRA changes (`DEL:`, `DS:`, `DELRRA:`, `RRA#`, and `-t` with them)
//!   come after the options, on what they made ([`super::modify`]); any other argument
//!   after the file is `unparseable argument`.

use super::{load, modify, opt, Ctx, Outcome};
use crate::getopt::{self, Item, Opt};
use crate::store;
use rrd::{Cf, DsType, Rrd};

const SPEC: &[(&str, char)] = &[
    ("heartbeat", 'h'),
    ("minimum", 'i'),
    ("maximum", 'a'),
    ("data-source-type", 'd'),
    ("data-source-rename", 'r'),
    ("deltapos", 'p'),
    ("deltaneg", 'n'),
    ("failure-threshold", 'f'),
    ("window-length", 'w'),
    ("alpha", 'x'),
    ("beta", 'y'),
    ("gamma", 'z'),
    ("gamma-deviation", 'v'),
    ("smoothing-window", 's'),
    ("smoothing-window-deviation", 'S'),
    ("aberrant-reset", 'b'),
    ("step", 't'),
    ("daemon", 'D'),
];

fn spec() -> Vec<Opt> {
    SPEC.iter().map(|&(l, s)| opt(l, s, true)).collect()
}

/// The error of an option whose value is missing or unreadable.
fn invalid(long: &str) -> String {
    match long {
        "heartbeat" => "invalid arguments for heartbeat".into(),
        "minimum" => "invalid arguments for minimum ds value".into(),
        "maximum" => "invalid arguments for maximum ds value".into(),
        // rrdtool says so for a rename too.
        "data-source-type" | "data-source-rename" => {
            "invalid arguments for data source type".into()
        }
        other => format!("option requires an argument -- '{other}'"),
    }
}

/// `rrdtool tune FILE [options] ...`.
pub fn tune(ctx: &Ctx, args: &[String]) -> Outcome {
    let spec = spec();
    let (items, positional) = getopt::parse_each(args, &spec);
    let items: Vec<Result<(&str, String), String>> = items
        .into_iter()
        .map(|i| match i {
            Item::Opt(long, v) => Ok((long, v)),
            Item::Missing(long, _) if SPEC[..5].iter().any(|(l, _)| *l == long) => {
                Err(invalid(long))
            }
            Item::Missing(_, e) | Item::Invalid(e) => Err(e),
        })
        .collect();
    let Some((given, rest)) = positional.split_first() else {
        return Outcome::err("missing file name");
    };
    if items.iter().any(|i| matches!(i, Ok(("daemon", _)))) {
        return Outcome::err(super::NO_DAEMON);
    }
    let name = match store::normalize(given) {
        Ok(n) => n,
        Err(e) => return Outcome::err(e),
    };
    super::writing(ctx, std::slice::from_ref(&name), given, true, |st| {
        let mut rrd = match load(st, given) {
            Ok(r) => r.clone(),
            Err(e) => return Outcome::err(e),
        };
        let mut changed = false;
        let mut error = None;
        for item in &items {
            let res = match item {
                Ok((long, value)) => apply(&mut rrd, long, value, &mut changed),
                Err(e) => Err(e.clone()),
            };
            if let Err(e) = res {
                error = Some(e);
                break;
            }
        }
        if error.is_none() && !rest.is_empty() {
            // The DS and RRA changes, after the options, on what they made.
            let step = items.iter().rev().find_map(|i| match i {
                Ok(("step", v)) => Some(v.as_str()),
                _ => None,
            });
            match modify::scan(rest).and_then(|ch| modify::apply(&mut rrd, &ch, step, given)) {
                Ok(()) => changed = true,
                Err(e) => error = Some(e),
            }
        }
        if changed {
            if let Err(e) = st.create(&name, rrd, true) {
                return Outcome::err(e.to_string());
            }
            ctx.wrote(&name);
        }
        Outcome {
            error,
            ..Outcome::default()
        }
    })
}

/// Apply one option to `rrd`; `changed` is set when the header changed.
fn apply(rrd: &mut Rrd, long: &str, value: &str, changed: &mut bool) -> Result<(), String> {
    match long {
        "heartbeat" | "minimum" | "maximum" => {
            let (ds, v) = name_and_value(value).ok_or_else(|| invalid(long))?;
            let (hb, x) = if long == "heartbeat" {
                (strtol(v).ok_or_else(|| invalid(long))? as u64, 0.0)
            } else {
                (0, bound(v).ok_or_else(|| invalid(long))?)
            };
            let i = ds_index(rrd, ds)?;
            if rrd.schema.ds[i].kind == DsType::Compute {
                return Err(format!(
                    "ringlet does not set the {long} of COMPUTE data source '{ds}' (rrdtool \
                     would overwrite its expression)"
                ));
            }
            let d = &mut std::sync::Arc::make_mut(&mut rrd.schema).ds[i];
            match long {
                "heartbeat" => d.heartbeat = hb,
                "minimum" => d.min = x,
                _ => d.max = x,
            }
            *changed = true;
        }
        "data-source-type" => {
            let (ds, v) = name_and_value(value).ok_or_else(|| invalid(long))?;
            let word_len = v.bytes().take_while(u8::is_ascii_uppercase).count();
            if word_len == 0 {
                return Err(invalid(long));
            }
            let word = &v[..word_len];
            // rrdtool looks the data source up before the type.
            let i = ds_index(rrd, ds)?;
            let kind = DsType::from_name(word)
                .ok_or_else(|| format!("unknown data acquisition function '{word}'"))?;
            let old = rrd.schema.ds[i].kind;
            if kind == DsType::Compute || old == kind {
                return Ok(());
            }
            if old == DsType::Compute {
                return Err(format!(
                    "ringlet does not change the type of COMPUTE data source '{ds}' (rrdtool \
                     would read its expression as a heartbeat and bounds)"
                ));
            }
            let mut after = (*rrd.schema).clone();
            after.ds[i].kind = kind;
            let (was, would) = (
                rrd::rrdfile::version(&rrd.schema),
                rrd::rrdfile::version(&after),
            );
            if was != would {
                // rrdtool keeps the file's version whatever the types become (a DCOUNTER in
                // a file of version 0003); ringlet derives the version from the types.
                return Err(format!(
                    "ringlet does not change data source '{ds}' from {} to {}: the file's \
                     version would change from {was} to {would}",
                    old.name(),
                    kind.name()
                ));
            }
            std::sync::Arc::make_mut(&mut rrd.schema).ds[i].kind = kind;
            // rrdtool forgets the last reading: a counter's is no base for a gauge.
            rrd.pdp[i].last_ds = "UNKN".into();
            *changed = true;
        }
        "data-source-rename" => {
            let (old, v) = name_and_value(value).ok_or_else(|| invalid(long))?;
            let new = ds_name(v).ok_or_else(|| invalid(long))?;
            let i = ds_index(rrd, old)?;
            rename(rrd, i, new)?;
            *changed = true;
        }
        "aberrant-reset" => {
            let ds = ds_name(value).unwrap_or("");
            let i = ds_index(rrd, ds)?;
            if rrd.hw.is_some() {
                rrd.reset_aberrant(i);
                *changed = true;
            }
        }
        "step" => {}
        "deltapos" | "deltaneg" => {
            let (code, p) = strtodbl_code(value);
            if (code == 1 || code == 2) && p < 0.1 {
                return Err("Parameter specified is too small".into());
            }
            if code == 1 {
                return Err("Unable to parse parameter in set_deltaarg".into());
            }
            // (Nothing read at all is not an error to rrdtool: the parameter becomes 0.)
            let r = first_of(rrd, Cf::Failures).ok_or("Failures RRA does not exist in this RRD")?;
            let mut hw = rrd.schema.rra[r].hw();
            if long == "deltapos" {
                hw.delta_pos = p;
            } else {
                hw.delta_neg = p;
            }
            std::sync::Arc::make_mut(&mut rrd.schema).rra[r].set_hw(&hw);
            *changed = true;
        }
        "failure-threshold" | "window-length" => {
            // C's atoi into an unsigned long.
            let n = rrd::num::atoi(value) as i64 as u64;
            if !(1..=28).contains(&n) {
                return Err("Parameter must be between 1 and 28".into());
            }
            let r = first_of(rrd, Cf::Failures).ok_or("Failures RRA does not exist in this RRD")?;
            let mut hw = rrd.schema.rra[r].hw();
            if long == "window-length" {
                hw.window_len = n;
            } else {
                hw.failure_threshold = n;
            }
            std::sync::Arc::make_mut(&mut rrd.schema).rra[r].set_hw(&hw);
            rrd.erase_violations(r);
            *changed = true;
        }
        _ => {
            // alpha, beta (HWPREDICT, else MHWPREDICT), gamma (SEASONAL), gamma-deviation
            // (DEVSEASONAL): strictly between 0 and 1; the smoothing windows (SEASONAL,
            // DEVSEASONAL) from 0 to 1, and they make the file version 4 first.
            let window = long.starts_with("smoothing-window");
            let cfs: &[Cf] = match long {
                "alpha" | "beta" => &[Cf::HwPredict, Cf::MhwPredict],
                "gamma" | "smoothing-window" => &[Cf::Seasonal],
                _ => &[Cf::DevSeasonal],
            };
            if window {
                if let Some(r) = first_of(rrd, Cf::Seasonal).or(first_of(rrd, Cf::DevSeasonal)) {
                    let mut hw = rrd.schema.rra[r].hw();
                    hw.asks_v4 = true;
                    std::sync::Arc::make_mut(&mut rrd.schema).rra[r].set_hw(&hw);
                    *changed = true;
                }
            }
            let (code, p) = strtodbl_code(value);
            // (Comparisons, not a range: a NaN is inside for rrdtool.)
            #[allow(clippy::manual_range_contains)]
            let outside = if window {
                p < 0.0 || p > 1.0
            } else {
                p <= 0.0 || p >= 1.0
            };
            if (code == 1 || code == 2) && outside {
                return Err("Holt-Winters parameter must be between 0 and 1".into());
            }
            if code == 0 {
                return Err("Unable to parse Holt-Winters parameter".into());
            }
            let r = cfs
                .iter()
                .find_map(|&cf| first_of(rrd, cf))
                .ok_or("Holt-Winters RRA does not exist in this RRD")?;
            let mut hw = rrd.schema.rra[r].hw();
            match long {
                "alpha" => hw.alpha = p,
                "beta" => hw.beta = p,
                "gamma" | "gamma-deviation" => hw.gamma = p,
                _ => hw.smoothing_window = p,
            }
            std::sync::Arc::make_mut(&mut rrd.schema).rra[r].set_hw(&hw);
            *changed = true;
        }
    }
    Ok(())
}

/// The first archive of `cf`, as rrdtool's tune looks for the one to set.
fn first_of(rrd: &Rrd, cf: Cf) -> Option<usize> {
    rrd.schema.rra.iter().position(|r| r.cf == cf)
}

/// `rrd_strtodbl`'s answer and number: 0 when nothing was read (the number 0), 1 when
/// something follows the number, 2 when the whole string is one (or `nan`, `inf`, ...).
fn strtodbl_code(s: &str) -> (u8, f64) {
    match rrd::num::strtod(s) {
        None => (0, 0.0),
        Some((v, n)) if n == s.len() => (2, v),
        Some((v, _)) => (1, v),
    }
}

/// Rename data source `i` to `new`, and every COMPUTE expression that names it. rrdtool
/// lets two data sources have one name, and its COMPUTE reads them by position; here it
/// reads them by name, the first of that name: ringlet refuses a name that would make a
/// COMPUTE read another data source than before.
fn rename(rrd: &mut Rrd, i: usize, new: &str) -> Result<(), String> {
    let old_names: Vec<String> = rrd.schema.ds.iter().map(|d| d.name.clone()).collect();
    let mut new_names = old_names.clone();
    new_names[i] = new.to_string();
    let olds: Vec<&str> = old_names.iter().map(String::as_str).collect();
    let news: Vec<&str> = new_names.iter().map(String::as_str).collect();
    let at = |j: usize| format!("#{j}");
    let mut exprs = Vec::new();
    for (k, d) in rrd.schema.ds.iter().enumerate() {
        if let (DsType::Compute, Some(expr)) = (d.kind, &d.rpn) {
            let prog = rrd::rpn::compile_compute(expr, &olds).map_err(|e| e.msg)?;
            let renamed = prog.to_cdef_string(&|j| new_names.get(j).cloned().unwrap_or_default());
            let read = rrd::rpn::compile_compute(&renamed, &news).map_err(|e| e.msg)?;
            if read.to_cdef_string(&at) != prog.to_cdef_string(&at) {
                return Err(format!(
                    "ringlet does not name data source '{}' '{new}': COMPUTE data source \
                     '{}' would read another data source of that name",
                    old_names[i], d.name
                ));
            }
            exprs.push((k, renamed));
        }
    }
    let schema = std::sync::Arc::make_mut(&mut rrd.schema);
    for (k, e) in exprs {
        schema.ds[k].rpn = Some(e);
    }
    schema.ds[i].name = new.to_string();
    Ok(())
}

/// The data source named `name`, or rrdtool's error.
fn ds_index(rrd: &Rrd, name: &str) -> Result<usize, String> {
    rrd.schema
        .ds
        .iter()
        .position(|d| d.name == name)
        .ok_or_else(|| format!("unknown data source name '{name}'"))
}

/// A data source name at the start of `s`: up to 19 characters of `[a-zA-Z0-9_-]`.
fn ds_name(s: &str) -> Option<&str> {
    let n = s
        .bytes()
        .take(19)
        .take_while(|b| b.is_ascii_alphanumeric() || *b == b'_' || *b == b'-')
        .count();
    (n > 0).then(|| &s[..n])
}

/// `NAME:VALUE`: the name, and the text after the colon.
fn name_and_value(s: &str) -> Option<(&str, &str)> {
    let name = ds_name(s)?;
    let v = s[name.len()..].strip_prefix(':')?;
    Some((name, v))
}

/// C's `strtol` in base 10 as rrdtool uses it: leading white space, a sign, at least one
/// digit, the rest ignored; saturating at the bounds of a 64-bit long.
pub(crate) fn strtol(s: &str) -> Option<i64> {
    let r = rrd::num::strtol(s, 10);
    (r.digits > 0).then_some(r.value)
}

/// A minimum or maximum: `U` or `Unknown` (NaN), else [`decimal`].
fn bound(s: &str) -> Option<f64> {
    if s == "U" || s == "Unknown" {
        return Some(rrd::num::DNAN);
    }
    decimal(s)
}

/// A number at the start of `s` as rrdtool reads one ([`rrd::num::strtod`]: its digits,
/// rounding and exponent range; the rest ignored), but not its words: tune refuses `inf` and
/// `nan`. None without a digit.
fn decimal(s: &str) -> Option<f64> {
    let word = s.trim_start_matches(['+', '-']).as_bytes();
    if [b"inf".as_slice(), b"nan"]
        .iter()
        .any(|w| word.len() >= 3 && word[..3].eq_ignore_ascii_case(w))
    {
        return None;
    }
    rrd::num::strtod(s).map(|(v, _)| v)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_read_as_rrdtool_reads_them() {
        assert_eq!(strtol("12x"), Some(12));
        assert_eq!(strtol("+7"), Some(7));
        assert_eq!(strtol("-5").map(|v| v as u64), Some(18446744073709551611));
        assert_eq!(strtol("99999999999999999999"), Some(i64::MAX));
        assert_eq!(strtol("abc"), None);
        assert_eq!(strtol(""), None);
        assert_eq!(decimal("1e"), Some(1.0));
        assert_eq!(decimal("12abc"), Some(12.0));
        assert_eq!(decimal("0x10"), Some(0.0));
        assert_eq!(decimal(".5"), Some(0.5));
        assert_eq!(decimal("-.5"), Some(-0.5));
        assert_eq!(decimal("5."), Some(5.0));
        assert_eq!(decimal("+3e2"), Some(300.0));
        assert_eq!(decimal("1e+"), Some(1.0));
        assert_eq!(decimal("1e400"), Some(f64::INFINITY));
        for bad in ["inf", "-inf", "nan", "-", ".", "", "abc"] {
            assert_eq!(decimal(bad), None, "{bad}");
        }
        assert!(bound("U").unwrap().is_nan() && bound("Unknown").unwrap().is_nan());
        assert_eq!(bound("UU"), None);
        assert_eq!(bound("U5"), None);
    }

    #[test]
    fn names_are_cut_as_rrdtool_cuts_them() {
        assert_eq!(name_and_value("ds1:5"), Some(("ds1", "5")));
        assert_eq!(name_and_value("bad-name:5"), Some(("bad-name", "5")));
        assert_eq!(name_and_value(":5"), None);
        assert_eq!(name_and_value("d$1:5"), None);
        assert_eq!(name_and_value(&format!("{}:5", "x".repeat(20))), None);
        assert_eq!(ds_name("a:b"), Some("a"));
        assert_eq!(ds_name(&"x".repeat(22)), Some(&*"x".repeat(19)));
    }
}
