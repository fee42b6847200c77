//! The arguments of `xport`: rrdtool's option parser (options anywhere, no abbreviations,
//! its error texts), the DEF/CDEF/XPORT statements, and start/end time specifications.

use super::cdef::{
    Cdef, Predict, PredictKind, Series, Trend, COUNT_VAR, NEWDAY_VAR, NEWMONTH_VAR, NEWWEEK_VAR,
    NEWYEAR_VAR, PREDICT_BASE, PREV_OF_BASE, PREV_VAR, STEP_VAR, TIME_VAR, TREND_BASE,
};
use super::vdef::parse_vdef;
use super::{err, Decor, Def, Kind, Var};
use crate::num::strtod;
use crate::parsetime::{parse_time, resolve_pair};
use crate::rpn;
use crate::{Cf, RrdError};

/// Output format and grid options.
#[derive(Debug, Clone)]
pub(super) struct Opts {
    pub(super) start: Option<String>,
    pub(super) end: Option<String>,
    pub(super) maxrows: i64,
    pub(super) step: i64,
    pub(super) json: bool,
    pub(super) showtime: bool,
    pub(super) enumds: bool,
}

/// Options recognised by name; `true` when they take an argument.
const LONG_OPTS: [(&str, char, bool); 8] = [
    ("start", 's', true),
    ("end", 'e', true),
    ("maxrows", 'm', true),
    ("step", '\0', true),
    ("json", '\0', false),
    ("showtime", 't', false),
    ("enumds", '\0', false),
    ("daemon", 'd', true),
];

/// rrdtool's option parser: options anywhere, `--name=value` or `--name value`, `-xVALUE` or
/// `-x VALUE`, bundled flags; everything else is an element.
pub(super) fn parse_options(args: &[String]) -> Result<(Opts, Vec<String>), RrdError> {
    let mut o = Opts {
        start: None,
        end: None,
        maxrows: 400,
        step: 0,
        json: false,
        showtime: false,
        enumds: false,
    };
    let mut elements = Vec::new();
    let mut i = 0;
    while i < args.len() {
        let a = &args[i];
        i += 1;
        let (name, mut inline): (String, Option<String>) = if let Some(long) = a.strip_prefix("--")
        {
            if long.is_empty() {
                elements.extend(args[i..].iter().cloned());
                break;
            }
            let (n, v) = match long.split_once('=') {
                Some((n, v)) => (n, Some(v.to_string())),
                None => (long, None),
            };
            if !LONG_OPTS.iter().any(|(l, _, _)| *l == n) {
                return Err(err(format!("invalid option -- '{}'", long)));
            }
            (n.to_string(), v)
        } else if a.len() > 1 && a.starts_with('-') {
            // Short options, possibly bundled; the first one taking an argument ends the bundle.
            let mut chars = a[1..].char_indices();
            let mut found = None;
            for (pos, c) in chars.by_ref() {
                let Some((l, _, takes)) = LONG_OPTS.iter().find(|(_, s, _)| *s == c && c != '\0')
                else {
                    return Err(err(format!("invalid option -- '{}'", c)));
                };
                if *takes {
                    let rest = &a[1 + pos + c.len_utf8()..];
                    found = Some((l.to_string(), (!rest.is_empty()).then(|| rest.to_string())));
                    break;
                }
                set_flag(&mut o, l);
            }
            match found {
                Some(x) => x,
                None => continue,
            }
        } else {
            elements.push(a.clone());
            continue;
        };
        let takes = LONG_OPTS
            .iter()
            .find(|(l, _, _)| *l == name)
            .is_some_and(|x| x.2);
        if !takes {
            if inline.is_some() {
                return Err(err(format!("option takes no arguments -- '{}'", name)));
            }
            set_flag(&mut o, &name);
            continue;
        }
        if inline.is_none() {
            if i < args.len() {
                inline = Some(args[i].clone());
                i += 1;
            } else {
                return Err(err(format!("option requires argument -- '{}'", name)));
            }
        }
        let v = inline.unwrap_or_default();
        match name.as_str() {
            "start" => o.start = Some(v),
            "end" => o.end = Some(v),
            // C ints: atoi keeps the low 32 bits.
            "maxrows" => o.maxrows = i64::from(crate::num::atol(&v) as i32),
            "step" => o.step = i64::from(crate::num::atol(&v) as i32),
            _ => {} // daemon: ringlet is the daemon.
        }
    }
    Ok((o, elements))
}

fn set_flag(o: &mut Opts, name: &str) {
    match name {
        "json" => o.json = true,
        "showtime" => o.showtime = true,
        "enumds" => o.enumds = true,
        _ => {}
    }
}

/// Splits an element on `:`, honouring `\:` escapes.
fn split_colons(s: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur = String::new();
    let mut chars = s.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '\\' && chars.peek() == Some(&':') {
            chars.next();
            cur.push(':');
        } else if c == ':' {
            out.push(std::mem::take(&mut cur));
        } else {
            cur.push(c);
        }
    }
    out.push(cur);
    out
}

/// Graph elements that xport accepts and ignores.
/// Graph elements that draw a series (LINE[width], AREA, STACK, TICK).
fn is_series_element(kw: &str) -> bool {
    matches!(kw, "AREA" | "STACK" | "TICK")
        || kw
            .strip_prefix("LINE")
            .is_some_and(|w| w.bytes().all(|b| b.is_ascii_digit() || b == b'.'))
}

/// One statement; graph elements add to `decor`.
pub(super) fn parse_element(
    el: &str,
    vars: &mut Vec<Var>,
    exports: &mut Vec<(usize, String)>,
    decor: &mut Decor,
) -> Result<(), RrdError> {
    let (kw, rest) = el.split_once(':').unwrap_or((el, ""));
    let find = |vars: &[Var], n: &str| vars.iter().rposition(|v| v.name == n);
    match kw {
        "DEF" => {
            let f = split_colons(rest);
            let (vname, file) = f[0].split_once('=').unwrap_or((&f[0], ""));
            if file.is_empty() || f.len() < 2 {
                return Err(err(format!("No argument for definition of DS in {}", el)));
            }
            if f.len() < 3 {
                return Err(err(format!("No argument for definition of CF in {}", el)));
            }
            let cf = Cf::from_name(&f[2]).ok_or_else(|| err(format!("bad CF: {}", f[2])))?;
            let mut def = Def {
                file: file.to_string(),
                ds: f[1].clone(),
                cf,
                reduce: None,
                step: None,
                start: None,
                end: None,
            };
            for opt in &f[3..] {
                let (k, v) = opt.split_once('=').unwrap_or((opt, ""));
                match k {
                    "step" => {
                        let s = crate::num::atol(v);
                        if s <= 0 {
                            return Err(err(format!("Bad step value: {}", v)));
                        }
                        def.step = Some(s);
                    }
                    "reduce" => {
                        def.reduce = Some(
                            Cf::from_name(v).ok_or_else(|| err(format!("bad reduce CF: {}", v)))?,
                        )
                    }
                    "start" => def.start = Some(v.to_string()),
                    "end" => def.end = Some(v.to_string()),
                    "daemon" => {}
                    _ => {
                        return Err(err(format!(
                            "Unused Arguments \"{}\" in command : {}",
                            opt, el
                        )))
                    }
                }
            }
            vars.push(Var {
                name: vname.to_string(),
                kind: Kind::Def(def),
                start: 0,
                step: 0,
                rows: Vec::new(),
                shift: 0,
            });
        }
        "CDEF" => {
            let Some((vname, expr)) = rest.split_once('=') else {
                return Err(err(format!("don't understand '{}'", rest)));
            };
            if find(vars, vname).is_some() {
                return Err(err(format!("trying to reuse vname {}", vname)));
            }
            if expr.is_empty() {
                return Err(err("can not parse an empty rpn expression"));
            }
            let (text, series) = series_tokens(expr, vars);
            let resolve = |n: &str| match n {
                "\u{1}TIME" => Some(TIME_VAR),
                "\u{1}STEPWIDTH" => Some(STEP_VAR),
                "\u{1}COUNT" => Some(COUNT_VAR),
                "\u{1}PREV" => Some(PREV_VAR),
                "\u{1}NEWDAY" => Some(NEWDAY_VAR),
                "\u{1}NEWWEEK" => Some(NEWWEEK_VAR),
                "\u{1}NEWMONTH" => Some(NEWMONTH_VAR),
                "\u{1}NEWYEAR" => Some(NEWYEAR_VAR),
                _ => {
                    if let Some(k) = n.strip_prefix("\u{1}TREND") {
                        return k.parse::<usize>().ok().map(|k| TREND_BASE - k);
                    }
                    if let Some(k) = n.strip_prefix("\u{1}PREVOF") {
                        return k.parse::<usize>().ok().map(|k| PREV_OF_BASE - k);
                    }
                    if let Some(k) = n.strip_prefix("\u{1}PREDICT") {
                        return k.parse::<usize>().ok().map(|k| PREDICT_BASE - k);
                    }
                    find(vars, n)
                }
            };
            let r = rpn::compile(&text, &resolve).map_err(|_| not_understood(expr, vars))?;
            vars.push(Var {
                name: vname.to_string(),
                kind: Kind::Cdef(Cdef { rpn: r, series }),
                start: 0,
                step: 0,
                rows: Vec::new(),
                shift: 0,
            });
        }
        "XPORT" => {
            let f = split_colons(rest);
            if f.len() > 2 {
                return Err(err(format!(
                    "Unused Arguments \"{}\" in command : {}",
                    f[2..].join(":"),
                    el
                )));
            }
            if rest.is_empty() {
                return Err(err("No positional VNAME"));
            }
            if strtod(&f[0]).is_some_and(|(_, n)| n == f[0].len()) {
                return Err(err(format!(
                    "Encountered unknown type variable '' in line '{}'",
                    el
                )));
            }
            let i = find(vars, &f[0])
                .ok_or_else(|| err(format!("{} is not a vname nor a number", f[0])))?;
            if matches!(vars[i].kind, Kind::Vdef(_)) {
                return Err(err(format!(
                    "Cannot shift a VDEF: '{}' in line '{}'\n",
                    f[0], el
                )));
            }
            exports.push((i, f.get(1).cloned().unwrap_or_default()));
        }
        "SHIFT" => {
            let f = split_colons(rest);
            if f.len() > 2 {
                return Err(err(format!(
                    "Unused Arguments \"{}\" in command : {}",
                    f[2..].join(":"),
                    el
                )));
            }
            let i = find(vars, &f[0]).ok_or_else(|| err(format!("vname {} not found", f[0])))?;
            let Some(by) = f.get(1) else {
                return Err(err("No shift given"));
            };
            if find(vars, by).is_some_and(|j| matches!(vars[j].kind, Kind::Vdef(_))) {
                return Err(err(format!(
                    "ringlet: SHIFT by a VDEF ({}) is not supported",
                    by
                )));
            }
            let b = by.as_bytes();
            let digits = b
                .strip_prefix(b"-")
                .or_else(|| b.strip_prefix(b"+"))
                .unwrap_or(b);
            if digits.is_empty() || !digits.iter().all(u8::is_ascii_digit) {
                return Err(err(format!("error parsing number {}", by)));
            }
            vars.push(Var {
                name: "\u{0}SHIFT".to_string(),
                kind: Kind::Shift {
                    target: i,
                    secs: crate::num::atol(by),
                },
                start: 0,
                step: 0,
                rows: Vec::new(),
                shift: 0,
            });
        }
        "VDEF" => {
            let (name, d) = parse_vdef(rest, vars)?;
            vars.push(Var {
                name,
                kind: Kind::Vdef(d),
                start: 0,
                step: 0,
                rows: Vec::new(),
                shift: 0,
            });
        }
        "COMMENT" => decor.gprints.push(("comment", rest.replace("\\:", ":"))),
        "TEXTALIGN" => decor.gprints.push(("align", rest.to_string())),
        "HRULE" | "VRULE" => {
            // rrdtool prints these values as 0 (its own bug); a vname must be a VDEF.
            let f = split_colons(rest);
            let what = f[0].split('#').next().unwrap_or("");
            if let Some(j) = find(vars, what) {
                if !matches!(vars[j].kind, Kind::Vdef(_)) {
                    return Err(err(format!(
                        "Using vname {} of wrong type in line {}\n",
                        what, el
                    )));
                }
            }
            if kw == "HRULE" {
                decor.rules.push(("hrule", "0.0000000000e+00".to_string()));
            } else {
                decor.rules.push(("vrule", "0".to_string()));
            }
        }
        "PRINT" | "GPRINT" => {
            return Err(err(format!("ringlet: xport does not support {} yet", kw)))
        }
        _ if is_series_element(kw) => {
            let f = split_colons(rest);
            let name = f[0].split('#').next().unwrap_or("");
            if find(vars, name).is_none() {
                return Err(err(format!("{} is not a vname nor a number", name)));
            }
            let legend = f.get(1).cloned().unwrap_or_default();
            let kind = match kw {
                "TICK" => None,
                "AREA" => Some("area"),
                "STACK" => match decor.last_draw {
                    Some(k) => Some(k),
                    None => return Err(err(format!("No previous LINE or AREA found for {}", el))),
                },
                _ => Some("line"),
            };
            if let Some(k) = kind {
                let text = if k == "area" && !legend.is_empty() {
                    format!("  {}", legend)
                } else {
                    legend
                };
                decor.gprints.push((k, text));
                decor.last_draw = Some(k);
            }
        }
        _ => {
            return Err(err(format!(
                "'{}' is not a valid function name in {}",
                kw, el
            )))
        }
    }
    Ok(())
}

/// Renames the TIME, LTIME, STEPWIDTH, COUNT, PREV and NEW* tokens to names only the
/// variables of [`super::cdef`] resolve to, and replaces each `x,w,TREND`/`TRENDNAN` triple,
/// `PREV(x)` and literal `...,x,PREDICT`/`PREDICTSIGMA`/`PREDICTPERC` run by one such name,
/// returning their definitions.
fn series_tokens(expr: &str, vars: &[Var]) -> (String, Series) {
    let toks: Vec<&str> = expr.split(',').collect();
    // Each output token with the index of the input token it came from.
    let mut out: Vec<(String, usize)> = Vec::with_capacity(toks.len());
    let mut series = Series::default();
    let num = |t: &str| {
        strtod(t)
            .filter(|&(_, n)| n == t.len() && !t.is_empty())
            .map(|x| x.0)
    };
    let var = |t: &str| vars.iter().rposition(|v| v.name == t);
    let mut i = 0;
    while i < toks.len() {
        let t = toks[i];
        if i + 2 < toks.len() && matches!(toks[i + 2], "TREND" | "TRENDNAN") {
            if let (Some(var), Some(window)) = (var(t), num(toks[i + 1])) {
                out.push((format!("\u{1}TREND{}", series.trends.len()), i));
                series.trends.push(Trend {
                    var,
                    window,
                    nan_safe: toks[i + 2] == "TRENDNAN",
                });
                i += 3;
                continue;
            }
        }
        if let Some(name) = t.strip_prefix("PREV(").and_then(|r| r.strip_suffix(')')) {
            if let Some(var) = var(name) {
                out.push((format!("\u{1}PREVOF{}", series.prev_of.len()), i));
                series.prev_of.push(var);
                i += 1;
                continue;
            }
        }
        if matches!(t, "PREDICT" | "PREDICTSIGMA" | "PREDICTPERC") {
            if let Some((p, first)) = predict_args(&toks, i, &num, &var) {
                // The arguments must still be plain tokens at the end of the output.
                let taken = i - first;
                let plain = out.len() >= taken
                    && out[out.len() - taken..]
                        .iter()
                        .zip(first..i)
                        .all(|((s, src), k)| *src == k && s == toks[k]);
                if plain {
                    out.truncate(out.len() - taken);
                    out.push((format!("\u{1}PREDICT{}", series.predicts.len()), i));
                    series.predicts.push(p);
                    i += 1;
                    continue;
                }
            }
        }
        let name = match t {
            "TIME" | "LTIME" => "\u{1}TIME",
            "STEPWIDTH" => "\u{1}STEPWIDTH",
            "COUNT" => "\u{1}COUNT",
            "PREV" => "\u{1}PREV",
            "NEWDAY" => "\u{1}NEWDAY",
            "NEWWEEK" => "\u{1}NEWWEEK",
            "NEWMONTH" => "\u{1}NEWMONTH",
            "NEWYEAR" => "\u{1}NEWYEAR",
            _ => t,
        };
        out.push((name.to_string(), i));
        i += 1;
    }
    let text: Vec<String> = out.into_iter().map(|(s, _)| s).collect();
    (text.join(","), series)
}

/// The literal arguments before `toks[at]` (a PREDICT operator): `shift_n,...,shift_1,n,
/// window,[percentile,]x` or `multiplier,-n,window,[percentile,]x` (shifts 0, m, ..,
/// (n-1)m). Returns the definition and the index of its first argument token.
fn predict_args(
    toks: &[&str],
    at: usize,
    num: &dyn Fn(&str) -> Option<f64>,
    var: &dyn Fn(&str) -> Option<usize>,
) -> Option<(Predict, usize)> {
    let mut j = at.checked_sub(1)?;
    let x = var(toks[j])?;
    let kind = match toks[at] {
        "PREDICT" => PredictKind::Average,
        "PREDICTSIGMA" => PredictKind::Sigma,
        _ => {
            j = j.checked_sub(1)?;
            PredictKind::Percentile(num(toks[j])?)
        }
    };
    j = j.checked_sub(1)?;
    let window = num(toks[j])? as i64;
    j = j.checked_sub(1)?;
    let n = num(toks[j])? as i64;
    let shifts = if n > 0 {
        j = j.checked_sub(n as usize)?;
        toks[j..j + n as usize]
            .iter()
            .map(|t| num(t).map(|v| v as i64))
            .collect::<Option<Vec<i64>>>()?
    } else if n < 0 {
        j = j.checked_sub(1)?;
        let m = num(toks[j])? as i64;
        (0..-n).map(|k| k * m).collect()
    } else {
        return None;
    };
    Some((
        Predict {
            var: x,
            shifts,
            window,
            kind,
        },
        j,
    ))
}

/// rrdtool's CDEF parse error: `don't understand '<rest of the expression>'` from the first
/// token that is neither a number, an operator nor a known vname.
fn not_understood(expr: &str, vars: &[Var]) -> RrdError {
    let mut pos = 0;
    for tok in expr.split(',') {
        // A number must be followed by a comma.
        let is_num = strtod(tok).is_some_and(|(_, n)| n == tok.len())
            && !tok.is_empty()
            && pos + tok.len() < expr.len();
        let known =
            vars.iter().any(|v| v.name == tok) || rpn::compile(tok, &|_| None).is_ok() || is_num;
        if !known {
            return err(format!("don't understand '{}'", &expr[pos..]));
        }
        pos += tok.len() + 1;
    }
    err(format!("don't understand '{}'", expr))
}

/// Start and end times from `-s`/`-e` (at-style, defaults `end-24h` and `now`), with
/// rrdtool's `start time: ` / `end time: ` error prefixes.
pub(super) fn start_end(
    s: Option<&str>,
    e: Option<&str>,
    now: i64,
) -> Result<(i64, i64), RrdError> {
    let start = parse_time(s.unwrap_or("end-24h"), now)
        .map_err(|x| err(format!("start time: {}", x.msg)))?;
    let end =
        parse_time(e.unwrap_or("now"), now).map_err(|x| err(format!("end time: {}", x.msg)))?;
    resolve_pair(&start, &end)
}
