//! `create --source` steps: new RRDs filled from the case's `x.rrd` (and sometimes from a
//! second source, `w.rrd`, of another step and archives, written with updates of its own):
//! other steps (multiples, divisors, odd ones), archives of every CF and size, data sources
//! kept, renamed through `new=old`, tied to one source by `[n]`, of another type, or new;
//! with and without `--start` (without: the sources' latest last update), `--template`, the
//! sources in either order. Then reads of the new file, and updates to it and reads again.

use super::case::{Expect, Kind, Stdin, Step};
use super::query_gen::fetch;
use super::rng::Rng;
use super::schema_gen::{DsType, GenDs, GenRra, GenSchema, CFS};
use super::update_gen::UpdateGen;
use std::collections::BTreeSet;

fn step(kind: Kind, args: Vec<String>, expect: Expect) -> Step {
    let mut a = vec![kind.word().to_string()];
    a.extend(args);
    Step {
        kind,
        args: a,
        stdin: Stdin::Empty,
        expect,
    }
}

const NEW_NAMES: [&str; 6] = ["n1", "fresh", "copy_a", "renamed", "z-9", "m"];

/// A name for a new data source: one of [`NEW_NAMES`] neither taken (`names`) nor x.rrd's.
fn free_name(names: &[String], x: &GenSchema) -> Option<&'static str> {
    NEW_NAMES
        .iter()
        .copied()
        .find(|n| !names.iter().any(|m| m == n) && !x.ds.iter().any(|e| e.name == *n))
}

/// `n` archives for a new RRD.
fn rras(rng: &mut Rng, n: u64) -> Vec<GenRra> {
    (0..n)
        .map(|i| {
            let pdp = if i == 0 && rng.chance(0.5) {
                1
            } else {
                let any = rng.range(1, 40);
                *rng.pick(&[1, 2, 3, 4, 5, 6, 10, 12, any])
            };
            let cf = *rng.pick(&CFS);
            let xff = *rng.pick(&["0", "0.1", "0.5", "0.5", "0.9", "0.333", "0.25"]);
            GenRra {
                cf,
                xff,
                pdp,
                rows: if rng.chance(0.7) {
                    rng.range(3, 40)
                } else {
                    rng.range(5, 150)
                },
                text: None,
            }
        })
        .collect()
}

/// A step related to `s`'s: the same, a multiple or divisor, or another.
fn other_step(rng: &mut Rng, s: u64) -> u64 {
    let half = if s.is_multiple_of(2) { s / 2 } else { s };
    let any = rng.range(1, 900);
    *rng.pick(&[s, s, s * 2, s * 3, half, 1, 7, 13, 60, 300, any])
}

/// A second source: `x`'s data sources (minus the COMPUTE ones, which would name others)
/// with another step and archives.
fn second_schema(rng: &mut Rng, x: &GenSchema) -> GenSchema {
    let step = other_step(rng, x.step);
    let ds: Vec<GenDs> =
        x.ds.iter()
            .filter(|d| d.ty != DsType::Compute)
            .map(|d| GenDs {
                hb: (2 * step).max(d.hb),
                ..d.clone()
            })
            .collect();
    let n = rng.range(1, 3);
    GenSchema {
        step,
        units: false,
        ds,
        rras: rras(rng, n),
    }
}

/// The steps of the `--source` part of case, appended to `steps`. `x` is x.rrd's schema as
/// created, `x_last` its last update (whole seconds), `tuned`: x.rrd was tuned since (its
/// data sources and step are then not `x`'s).
pub fn source_steps(
    rng: &mut Rng,
    x: &GenSchema,
    x_last: u64,
    tuned: bool,
    hw: Option<&mut Rng>,
    feats: &mut BTreeSet<&'static str>,
    steps: &mut Vec<Step>,
) {
    feats.insert("source");
    // A second source, written over a time that overlaps x.rrd's.
    let w_schema = second_schema(rng, x);
    let second = rng.chance(0.35) && !w_schema.ds.is_empty();
    let mut w_last = 0;
    if second {
        feats.insert("source:two");
        let span = x.max_span().max(w_schema.max_span());
        let w0 = x_last - rng.range(0, span.min(x_last - 1_000_000_000));
        let mut args = vec![
            "w.rrd".to_string(),
            "--start".to_string(),
            w0.to_string(),
            "--step".to_string(),
            w_schema.step.to_string(),
        ];
        args.extend(w_schema.ds.iter().map(|d| d.definition(false)));
        args.extend(
            w_schema
                .rras
                .iter()
                .map(|r| r.definition(w_schema.step, false)),
        );
        steps.push(step(Kind::Create, args, Expect::Ok));
        let mut ug = UpdateGen::new(rng, &w_schema, w0);
        ug.file = "w.rrd";
        let n = rng.range(5, 80);
        ug.run(rng, n, feats, steps, &mut |_, _| {});
        w_last = ug.applied.sec;
    }
    // The new RRD.
    // rrdtool 1.7.2 keeps version 0003 for a file whose DCOUNTER or DDERIVE comes from the
    // template; ringlet writes the 0005 they need (README: deliberate differences).
    let wide =
        x.ds.iter()
            .any(|d| matches!(d.ty, DsType::DCounter | DsType::DDerive));
    // (Nor for Holt-Winters archives from a template: rrdtool keeps 0003 there too, where
    // an MHWPREDICT or a smoothing window needs 0004, which changes the smoothing.)
    let hw_x = x
        .rras
        .iter()
        .any(|r| !super::schema_gen::CFS.contains(&r.cf));
    let template = !tuned && !wide && !hw_x && rng.chance(0.15);
    let given_step = if template && rng.chance(0.5) {
        None
    } else {
        Some(other_step(rng, x.step))
    };
    let step_s = given_step.unwrap_or(x.step);
    let mut t = GenSchema {
        step: step_s,
        units: false,
        ds: Vec::new(),
        rras: Vec::new(),
    };
    let mut defs: Vec<String> = Vec::new();
    let mut names: Vec<String> = Vec::new();
    if template {
        feats.insert("source:template");
        t.ds = x.ds.clone();
        t.rras = x.rras.clone();
        names.extend(x.ds.iter().map(|d| d.name.clone()));
    } else {
        for d in &x.ds {
            if !rng.chance(0.8) {
                continue;
            }
            let ty = if d.ty == DsType::Compute || rng.chance(0.2) {
                *rng.pick(&[
                    DsType::Gauge,
                    DsType::Counter,
                    DsType::Derive,
                    DsType::Absolute,
                ])
            } else {
                d.ty
            };
            let hb = *rng.pick(&[2 * step_s, step_s, d.hb.max(1), 3 * step_s + 1]);
            let (min, max) = if ty == d.ty {
                (d.min.clone(), d.max.clone())
            } else {
                ("U".to_string(), "U".to_string())
            };
            let mut name = d.name.clone();
            let mut mapped = String::new();
            if rng.chance(0.3) {
                if let Some(f) = free_name(&names, x) {
                    feats.insert("source:rename");
                    name = f.to_string();
                    mapped = format!("={}", d.name);
                    if rng.chance(0.3) {
                        feats.insert("source:index");
                        mapped.push_str(&format!("[{}]", rng.range(0, 3)));
                    }
                }
            }
            let g = GenDs {
                name: name.clone(),
                ty,
                hb,
                min,
                max,
                rpn: String::new(),
            };
            let def = g.definition(false);
            defs.push(def.replacen(&format!("DS:{name}:"), &format!("DS:{name}{mapped}:"), 1));
            names.push(name);
            t.ds.push(g);
        }
    }
    if t.ds.is_empty() || rng.chance(0.25) {
        let fresh = free_name(&names, x).expect("a free name");
        feats.insert("source:new-ds");
        let g = GenDs {
            name: fresh.to_string(),
            ty: DsType::Gauge,
            hb: 2 * step_s,
            min: "U".into(),
            max: "U".into(),
            rpn: String::new(),
        };
        defs.push(g.definition(false));
        t.ds.push(g);
    }
    let extra = if template {
        rng.range(0, 1)
    } else {
        rng.range(1, 4)
    };
    let mut more = rras(rng, extra);
    if !template && !tuned && rng.chance(0.4) && step_s == x.step {
        // One of x.rrd's own archives: the exact match, whose state is copied.
        feats.insert("source:same-archive");
        more.push(rng.pick(&x.rras).clone());
    }
    defs.extend(more.iter().map(|r| r.definition(step_s, false)));
    t.rras.extend(more);
    if let Some(hrng) = hw {
        if hrng.chance(0.5) {
            // Holt-Winters archives in the new file too, filled from the sources' AVERAGE
            // (or same CF) archives, their state copied from a source archive of the same
            // CF and current row, or made fresh.
            feats.insert("source:holt-winters");
            let from = t.rras.len();
            super::hw_gen::add_hw(hrng, &mut t, feats);
            defs.extend(
                t.rras[from..]
                    .iter()
                    .filter(|r| !r.implied())
                    .map(|r| r.definition(step_s, false)),
            );
        }
    }
    // The options, anywhere among the definitions (getopt permutes).
    let mut opts: Vec<Vec<String>> = Vec::new();
    let src = |rng: &mut Rng, f: &str| {
        let flag = *rng.pick(&["--source", "-r"]);
        vec![flag.to_string(), f.to_string()]
    };
    let mut files = vec!["x.rrd"];
    if second {
        files.push("w.rrd");
        if rng.chance(0.5) {
            files.reverse();
        }
    }
    for f in &files {
        opts.push(src(rng, f));
    }
    let latest = x_last.max(w_last);
    let start = if rng.chance(0.35) {
        feats.insert("source:start");
        let s = match rng.range(0, 3) {
            0 => latest,
            1 => latest + rng.range(1, 3 * step_s),
            2 => latest - rng.range(1, x.max_span().min(50_000)),
            _ => latest - latest % step_s,
        };
        opts.push(vec!["--start".to_string(), s.to_string()]);
        s
    } else {
        latest
    };
    if let Some(s) = given_step {
        opts.push(vec!["--step".to_string(), s.to_string()]);
    }
    if template {
        opts.push(vec!["--template".to_string(), "x.rrd".to_string()]);
    }
    rng.shuffle(&mut opts);
    let mut args = vec!["s.rrd".to_string()];
    for o in opts {
        args.extend(o);
    }
    args.extend(defs);
    steps.push(step(Kind::Create, args, Expect::Ok));
    if rng.chance(0.15) {
        feats.insert("err:source");
        let args = vec![
            "e.rrd".to_string(),
            "--source".to_string(),
            "nope.rrd".to_string(),
            "DS:a:GAUGE:600:U:U".to_string(),
            "RRA:AVERAGE:0.5:1:10".to_string(),
        ];
        steps.push(step(
            Kind::Create,
            args,
            Expect::Err("error checking for source RRD nope.rrd: No such file or directory"),
        ));
    }
    // Reads of the new file, then updates and reads again.
    let reads = |rng: &mut Rng, t: &GenSchema, last: u64, feats: &mut BTreeSet<&'static str>| {
        let mut out = vec![step(Kind::Dump, vec!["s.rrd".into()], Expect::Ok)];
        for cf in t.cfs() {
            let mut f = fetch(rng, t, cf, last.saturating_sub(t.max_span()), last, feats);
            f.args[1] = "s.rrd".to_string();
            out.push(f);
        }
        out.push(step(Kind::LastUpdate, vec!["s.rrd".into()], Expect::Ok));
        out
    };
    steps.extend(reads(rng, &t, start, feats));
    if rng.chance(0.5) {
        feats.insert("source:then-update");
        let mut ug = UpdateGen::new(rng, &t, start);
        ug.file = "s.rrd";
        let n = rng.range(3, 25);
        ug.run(rng, n, feats, steps, &mut |_, _| {});
        let last = ug.applied.sec;
        steps.extend(reads(rng, &t, last, feats));
    }
}
