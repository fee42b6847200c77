//! `tune` steps for the differential cases: a data source's heartbeat, bounds, type and name
//! changed the ways Cacti changes them, with good and bad values, unknown names and options,
//! and the Holt-Winters options an RRD without those archives refuses. What a tune step does
//! is not modelled (rrdtool applies the options before a bad one): every step is `Any`, and
//! the comparison of the two tools is the check.
//!
//! A COMPUTE data source is renamed but never given a heartbeat, bounds or another type:
//! rrdtool 1.7.2 writes those over its expression and leaves a file it cannot read back
//! (ringlet refuses them with its own error). A type change never takes away the last
//! DCOUNTER or DDERIVE nor brings the first (ringlet refuses those: see `tune.rs`).

use super::case::{Expect, Kind, Stdin, Step};
use super::rng::Rng;
use super::schema_gen::{DsType, GenSchema};
use std::collections::BTreeSet;

fn arg(rng: &mut Rng, short: &str, long: &str, value: String) -> Vec<String> {
    match rng.below(3) {
        0 => vec![short.to_string(), value],
        1 => vec![format!("--{long}"), value],
        _ => vec![format!("--{long}={value}")],
    }
}

/// One option of a tune line, with the feature it exercises.
/// `typed`: a type change was generated already (one a case: the next would be judged on
/// types the first may have changed).
fn option(
    rng: &mut Rng,
    schema: &GenSchema,
    names: &[String],
    typed: &mut bool,
) -> (Vec<String>, &'static str) {
    let plain: Vec<usize> = (0..schema.ds.len())
        .filter(|&i| schema.ds[i].ty != DsType::Compute)
        .collect();
    let ds = |rng: &mut Rng, any: bool| -> String {
        if rng.chance(0.08) {
            return "nope".to_string();
        }
        if any || plain.is_empty() {
            names[rng.index(names.len())].clone()
        } else {
            names[plain[rng.index(plain.len())]].clone()
        }
    };
    let step = schema.step;
    let mut pick = rng.below(14);
    if matches!(pick, 6 | 7) && std::mem::replace(typed, true) {
        pick = 0;
    }
    match pick {
        0 | 1 => {
            let hb = rng
                .pick(&[
                    (step * 2).to_string(),
                    (step / 2).max(1).to_string(),
                    "86400".into(),
                    "1".into(),
                    "12x".into(),
                    "+7".into(),
                    "abc".into(),
                ])
                .clone();
            let d = ds(rng, plain.is_empty());
            (
                arg(rng, "-h", "heartbeat", format!("{d}:{hb}")),
                "tune:heartbeat",
            )
        }
        2..=5 => {
            let v = rng
                .pick(&[
                    "U", "0", "-3", "1e3", "100", "0.5", "12abc", "1e400", ".5", "Unknown", "x",
                    "inf", "1e",
                ])
                .to_string();
            let d = ds(rng, plain.is_empty());
            if rng.coin() {
                (
                    arg(rng, "-i", "minimum", format!("{d}:{v}")),
                    "tune:minimum",
                )
            } else {
                (
                    arg(rng, "-a", "maximum", format!("{d}:{v}")),
                    "tune:maximum",
                )
            }
        }
        6 | 7 => {
            let d = ds(rng, plain.is_empty());
            // The file's version stays (ringlet refuses a change that would take away the
            // last DCOUNTER or DDERIVE, or bring the first: see tune.rs).
            let is_d = |t: DsType| matches!(t, DsType::DCounter | DsType::DDerive);
            let this_d = schema
                .ds
                .iter()
                .zip(names)
                .any(|(g, n)| *n == d && is_d(g.ty));
            let others_d = schema
                .ds
                .iter()
                .zip(names)
                .any(|(g, n)| *n != d && is_d(g.ty));
            let types: &[&str] = match (this_d, others_d) {
                (_, true) => &[
                    "GAUGE", "COUNTER", "DERIVE", "ABSOLUTE", "DCOUNTER", "DDERIVE", "FOO", "gauge",
                ],
                (true, false) => &["DCOUNTER", "DDERIVE", "FOO"],
                (false, false) => &["GAUGE", "COUNTER", "DERIVE", "ABSOLUTE", "FOO", "gauge"],
            };
            let t = rng.pick(types).to_string();
            (
                arg(rng, "-d", "data-source-type", format!("{d}:{t}")),
                "tune:type",
            )
        }
        8 | 9 => {
            let new = rng
                .pick(&[
                    "renamed".to_string(),
                    "ds_x-1".to_string(),
                    names[0].clone(),
                    "x".repeat(22),
                    String::new(),
                ])
                .clone();
            let d = ds(rng, true);
            (
                arg(rng, "-r", "data-source-rename", format!("{d}:{new}")),
                "tune:rename",
            )
        }
        10 => {
            let (s, l, v) = *rng.pick(&[
                ("-x", "alpha", "0.5"),
                ("-y", "beta", "5"),
                ("-w", "window-length", "5"),
                ("-f", "failure-threshold", "30"),
                ("-p", "deltapos", "2"),
            ]);
            (arg(rng, s, l, v.to_string()), "tune:holt-winters")
        }
        11 => {
            let d = ds(rng, true);
            (arg(rng, "-b", "aberrant-reset", d), "tune:reset")
        }
        12 => (arg(rng, "-t", "step", (step * 2).to_string()), "tune:step"),
        _ => {
            let bad = rng.pick(&["--bogus", "extra"]).to_string();
            (vec![bad], "tune:bad")
        }
    }
}

/// One to three tune lines on `file` (1 to 3 options each); the names they may have renamed
/// are tracked so that later options name the new ones too.
pub fn tune_steps(
    rng: &mut Rng,
    schema: &GenSchema,
    file: &str,
    feats: &mut BTreeSet<&'static str>,
    steps: &mut Vec<Step>,
) {
    let names: Vec<String> = schema.ds.iter().map(|d| d.name.clone()).collect();
    let mut typed = false;
    for _ in 0..rng.range(1, 4) {
        let mut args = vec!["tune".to_string(), file.to_string()];
        for _ in 0..rng.range(1, 4) {
            let (o, f) = option(rng, schema, &names, &mut typed);
            feats.insert(f);
            args.extend(o);
        }
        if rng.chance(0.1) {
            // The file after the options: getopt permutes.
            let f = args.remove(1);
            args.push(f);
        }
        steps.push(Step {
            kind: Kind::Tune,
            args,
            stdin: Stdin::Empty,
            expect: Expect::Any,
        });
    }
}
