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
            // A name taken where a COMPUTE reads by name: ringlet may refuse (see tune.rs).
            let taken = if schema.ds.iter().any(|d| d.ty == DsType::Compute) {
                "renamed".to_string()
            } else {
                names[0].clone()
            };
            let new = rng
                .pick(&[
                    "renamed".to_string(),
                    "ds_x-1".to_string(),
                    taken,
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

/// The DS and RRA changes of one tune line (1 to 3 of them, maybe with `-t`), kept to
/// those whose outcome rrdtool 1.7.2 can read back (see `modify.rs` for what ringlet
/// refuses): no DCOUNTER or DDERIVE added or deleted, no data source deleted beside a
/// COMPUTE (rrdtool keeps its expression's positions), only the last archive removed (rrdtool
/// fills the archives after a removed one with the wrong rows), never the last data source or
/// archive, no `DS:` that does not parse but for a name twice (rrdtool writes the others half
/// made). `rows`: the fewest rows each archive may have now (shrinks counted as done).
fn changes(
    rng: &mut Rng,
    schema: &GenSchema,
    names: &[String],
    rows: &mut [u64],
    done: &mut Done,
    feats: &mut BTreeSet<&'static str>,
) -> Vec<String> {
    let mut out = Vec::new();
    let has_compute = schema.ds.iter().any(|d| d.ty == DsType::Compute);
    let mut added: Vec<String> = Vec::new();
    for _ in 0..rng.range(1, 4) {
        match rng.below(11) {
            0 | 1 => {
                let del: Vec<usize> = (0..schema.ds.len())
                    .filter(|&i| {
                        !matches!(schema.ds[i].ty, DsType::DCounter | DsType::DDerive)
                            && !has_compute
                    })
                    .collect();
                // Never the last data source, over all the lines of the case.
                let i = del.get(rng.index(del.len().max(1))).copied();
                match i {
                    Some(i)
                        if !done.deleted.contains(&i)
                            && done.deleted.len() + 1 < schema.ds.len()
                            && !rng.chance(0.15) =>
                    {
                        out.push(format!("DEL:{}", names[i]));
                        done.deleted.push(i);
                    }
                    _ => out.push("DEL:nope".into()),
                }
                feats.insert("tune:del-ds");
            }
            2 | 3 => {
                let name = if rng.chance(0.1) {
                    // Twice: refused before anything changes, on both.
                    names[rng.index(names.len())].clone()
                } else {
                    format!("n{}", added.len() + 1)
                };
                if !added.is_empty() && rng.chance(0.3) {
                    let of = &added[rng.index(added.len())];
                    out.push(format!("DS:c{name}:COMPUTE:{of},2,*"));
                } else {
                    let ty = rng.pick(&["GAUGE", "COUNTER", "DERIVE", "ABSOLUTE"]);
                    let hb = *rng.pick(&[schema.step * 2, schema.step, 86_400]);
                    let (min, max) =
                        *rng.pick(&[("U", "U"), ("0", "U"), ("0", "100"), ("-5", "5")]);
                    out.push(format!("DS:{name}:{ty}:{hb}:{min}:{max}"));
                }
                added.push(name);
                feats.insert("tune:add-ds");
            }
            4 => {
                // Only the last archive, and only while none was added or removed before.
                let last = schema.rras.len() - 1;
                if last > 0 && !done.rras_changed && rng.chance(0.7) {
                    out.push(format!("DELRRA:{last}"));
                    rows[last] = 0;
                    done.rras_changed = true;
                } else {
                    out.push(format!("DELRRA:{}", schema.rras.len() + 40));
                }
                feats.insert("tune:del-rra");
            }
            5..=7 => {
                let i = rng.index(schema.rras.len());
                let k = rng.range(0, 6);
                match rng.below(4) {
                    0 | 1 => out.push(format!("RRA#{i}:+{k}")),
                    2 if rows[i] > k + 1 => {
                        out.push(format!("RRA#{i}:-{k}"));
                        rows[i] -= k;
                    }
                    _ if rows[i] > 0 => {
                        let n = rng.range(1, rows[i] + 6);
                        out.push(format!("RRA#{i}:={n}"));
                        rows[i] = rows[i].min(n);
                    }
                    _ => out.push(format!("RRA#{}:+1", schema.rras.len() + 40)),
                }
                feats.insert("tune:rows");
            }
            8 | 9 => {
                let cf = rng.pick(&["AVERAGE", "MIN", "MAX", "LAST"]);
                let xff = rng.pick(&["0.5", "0", "0.9"]);
                let pdp = *rng.pick(&[1, 2, 3, 5, 12]);
                out.push(format!("RRA:{cf}:{xff}:{pdp}:{}", rng.range(1, 40)));
                done.rras_changed = true;
                feats.insert("tune:add-rra");
            }
            _ => {
                let bad = rng
                    .pick(&[
                        "RRA#0:4",
                        "RRA#0:*2",
                        "RRA#x:+1",
                        "DELRRA:-1",
                        "bogus",
                        "RRA:FOO:0.5:1:3",
                        "RRA:AVERAGE:0.5:1:0",
                    ])
                    .to_string();
                out.push(bad);
                feats.insert("tune:modify-bad");
            }
        }
    }
    if rng.chance(0.25) {
        let step = schema.step;
        let div: Vec<u64> = [2, 3, 5, step]
            .into_iter()
            .filter(|&d| d > 1 && step.is_multiple_of(d))
            .collect();
        let to = if div.is_empty() || rng.chance(0.2) {
            step * 2
        } else {
            step / div[rng.index(div.len())]
        };
        out.splice(0..0, arg(rng, "-t", "step", to.to_string()));
        feats.insert("tune:step-change");
    }
    out
}

/// What the change lines of a case did so far (as if each succeeded): the data sources
/// deleted, and whether an archive was added or removed (after which none is removed: the
/// last of the schema may no longer be the file's last).
#[derive(Default)]
struct Done {
    deleted: Vec<usize>,
    rras_changed: bool,
}

/// One to three tune lines on `file` (1 to 3 options each, or DS and RRA changes: the first
/// line such with `changes`); the names they may have renamed are tracked so that later
/// options name the new ones too.
pub fn tune_steps(
    rng: &mut Rng,
    schema: &GenSchema,
    file: &str,
    changes_first: bool,
    feats: &mut BTreeSet<&'static str>,
    steps: &mut Vec<Step>,
) {
    let names: Vec<String> = schema.ds.iter().map(|d| d.name.clone()).collect();
    let mut typed = false;
    let mut rows: Vec<u64> = schema.rras.iter().map(|r| r.rows).collect();
    let mut done = Done::default();
    for line in 0..rng.range(1, 4) {
        let mut args = vec!["tune".to_string(), file.to_string()];
        let modify = rng.chance(0.4) || (changes_first && line == 0);
        if modify {
            args.extend(changes(rng, schema, &names, &mut rows, &mut done, feats));
        } else {
            for _ in 0..rng.range(1, 4) {
                let (o, f) = option(rng, schema, &names, &mut typed);
                feats.insert(f);
                args.extend(o);
            }
        }
        if !modify && rng.chance(0.1) {
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
