//! The read commands of a differential case: `fetch` for every CF with several ranges and
//! resolutions (coarse archives, partial coverage, beyond retention, `-a`, at-style times),
//! `info`, `first` per archive, `last`, `lastupdate`, `dump`, `xport` and the `restore` round
//! trip; plus a few deliberate read errors.

use super::case::{Expect, Kind, Stdin, Step};
use super::rng::Rng;
use super::schema_gen::{GenSchema, CFS};
use std::collections::BTreeSet;

fn step(kind: Kind, rest: Vec<String>, expect: Expect) -> Step {
    let mut args = vec![kind.word().to_string()];
    args.extend(rest);
    Step {
        kind,
        args,
        stdin: Stdin::Empty,
        expect,
    }
}

fn strs(v: &[&str]) -> Vec<String> {
    v.iter().map(|s| s.to_string()).collect()
}

/// A read issued between two update calls.
pub fn mid_query(rng: &mut Rng, steps: &mut Vec<Step>) {
    if !rng.chance(0.12) {
        return;
    }
    let s = match rng.range(0, 3) {
        0 => step(Kind::Info, strs(&["x.rrd"]), Expect::Ok),
        1 => step(Kind::LastUpdate, strs(&["x.rrd"]), Expect::Ok),
        2 => step(Kind::Last, strs(&["x.rrd"]), Expect::Ok),
        _ => step(Kind::First, strs(&["x.rrd"]), Expect::Ok),
    };
    steps.push(s);
}

/// Push one option with a value in one of getopt's spellings.
fn opt(rng: &mut Rng, args: &mut Vec<String>, short: &str, long: &str, val: String) {
    match rng.range(0, 3) {
        0 | 1 => args.extend([short.to_string(), val]),
        2 => args.extend([long.to_string(), val]),
        _ => args.push(format!("{long}={val}")),
    }
}

/// `fetch x.rrd CF` over one of several kinds of range.
pub fn fetch(
    rng: &mut Rng,
    s: &GenSchema,
    cf: &str,
    t0: u64,
    last: u64,
    feats: &mut BTreeSet<&'static str>,
) -> Step {
    let st = s.step;
    let span = s.max_span();
    let rra = rng.pick(&s.rras).clone();
    let rstep = rra.pdp * st;
    let mut res: Option<u64> = None;
    let mut align = false;
    let mut at_style: Option<String> = None;
    let (mut from, mut to) = match rng.range(0, 8) {
        0 => (
            (t0 - rng.range(0, 5 * st)).max(last - 3 * span),
            last + rng.range(0, 3 * st),
        ),
        1 => {
            feats.insert("fetch:resolution");
            res = Some(if rng.chance(0.7) {
                rstep
            } else {
                rstep + rng.range(1, st)
            });
            (last - rng.range(1, rra.rows + 3) * rstep, last)
        }
        2 => {
            feats.insert("fetch:beyond-retention");
            (
                last - span - rng.range(0, span / 2 + st),
                last - rng.range(0, span / 4),
            )
        }
        3 => {
            feats.insert("fetch:align");
            align = true;
            res = if rng.chance(0.5) { Some(rstep) } else { None };
            ((t0 + rng.range(1, 5 * st)).max(last - 2 * span), last)
        }
        4 => {
            let a = last - st * rng.range(1, 10);
            (a, a + st * rng.range(0, 5))
        }
        5 => {
            feats.insert("fetch:at-style");
            let n = rng.range(1, 20) * st;
            at_style = Some(
                rng.pick(&[
                    format!("end-{n}s"),
                    format!("e-{n}"),
                    format!("end-{}min", n / 60 + 1),
                ])
                .clone(),
            );
            (0, last)
        }
        6 => {
            feats.insert("fetch:future");
            (last + st, last + rng.range(2, 10) * st)
        }
        _ => {
            feats.insert("fetch:coarse");
            res = Some(rng.range(2, 50) * rstep);
            (
                last - rng.range(span / 2, 2 * span),
                last + rng.range(0, st),
            )
        }
    };
    if to < from {
        std::mem::swap(&mut from, &mut to);
    }
    let mut args = strs(&["x.rrd", cf]);
    match at_style {
        Some(a) => opt(rng, &mut args, "-s", "--start", a),
        None => opt(rng, &mut args, "-s", "--start", from.to_string()),
    }
    opt(rng, &mut args, "-e", "--end", to.to_string());
    if let Some(r) = res {
        opt(rng, &mut args, "-r", "--resolution", r.to_string());
    }
    if align {
        args.push(rng.pick(&["-a", "--align-start"]).to_string());
    }
    step(Kind::Fetch, args, Expect::Ok)
}

fn xport(
    rng: &mut Rng,
    s: &GenSchema,
    t0: u64,
    last: u64,
    feats: &mut BTreeSet<&'static str>,
) -> Step {
    let cfs = s.cfs();
    let mut args: Vec<String> = Vec::new();
    let from = (t0 - rng.range(0, 3 * s.step)).max(last - 2 * s.max_span());
    let to = last + rng.range(0, 3 * s.step);
    opt(rng, &mut args, "-s", "--start", from.to_string());
    opt(rng, &mut args, "-e", "--end", to.to_string());
    let mut expect = Expect::Ok;
    if rng.chance(0.3) {
        feats.insert("xport:step");
        // rrdtool may refuse some steps ("SANITY CHECK: ... rows cannot be reduced by 5").
        expect = Expect::Any;
        let r = rng.pick(&s.rras).pdp * s.step * rng.range(1, 3);
        args.extend(["--step".to_string(), r.to_string()]);
    }
    if rng.chance(0.25) {
        feats.insert("xport:json");
        args.push("--json".to_string());
    }
    if rng.chance(0.05) {
        args.push(rng.pick(&["-t", "--showtime"]).to_string());
    }
    if rng.chance(0.05) {
        args.push("--enumds".to_string());
    }
    if rng.chance(0.1) {
        feats.insert("xport:maxrows");
        let m = if expect == Expect::Ok && rng.chance(0.2) {
            expect = Expect::Err("maxrows below 10 rows");
            rng.range(1, 9)
        } else {
            rng.range(10, 40)
        };
        let m = m.to_string();
        opt(rng, &mut args, "-m", "--maxrows", m);
    }
    for (i, d) in s.ds.iter().enumerate() {
        args.push(format!("DEF:v{i}=x.rrd:{}:{}", d.name, rng.pick(&cfs)));
    }
    let calc = match (s.ds.len(), rng.range(0, 2)) {
        (1, 0) | (_, 1) => "v0,2,*".to_string(),
        (1, _) => "v0,UN,0,v0,IF".to_string(),
        _ => "v0,v1,+".to_string(),
    };
    args.push(format!("CDEF:calc={calc}"));
    for (i, d) in s.ds.iter().enumerate() {
        args.push(format!("XPORT:v{i}:{}", d.name));
    }
    args.push("XPORT:calc:sum of all".to_string());
    step(Kind::Xport, args, expect)
}

/// Every read at the end of a case; `last` is the file's last_update second.
pub fn final_queries(
    rng: &mut Rng,
    s: &GenSchema,
    t0: u64,
    last: u64,
    feats: &mut BTreeSet<&'static str>,
    steps: &mut Vec<Step>,
) {
    for cf in s.cfs() {
        for _ in 0..rng.range(2, 4) {
            steps.push(fetch(rng, s, cf, t0, last, feats));
        }
    }
    if rng.chance(0.3) {
        let missing: Vec<&str> = CFS
            .iter()
            .copied()
            .filter(|c| !s.cfs().contains(c))
            .collect();
        if !missing.is_empty() {
            feats.insert("fetch:other-cf");
            let cf = *rng.pick(&missing);
            let mut f = fetch(rng, s, cf, t0, last, feats);
            f.expect = Expect::Any;
            steps.push(f);
        }
    }
    if rng.chance(0.1) {
        feats.insert("err:fetch-range");
        let args = vec![
            "x.rrd".to_string(),
            s.cfs()[0].to_string(),
            "-s".to_string(),
            last.to_string(),
            "-e".to_string(),
            (last - s.step).to_string(),
        ];
        steps.push(step(
            Kind::Fetch,
            args,
            Expect::Err("should be less than end"),
        ));
    }
    if rng.chance(0.05) {
        feats.insert("err:no-such-file");
        let f = "nosuch.rrd";
        let probe = match rng.range(0, 3) {
            0 => step(
                Kind::Last,
                strs(&[f]),
                Expect::Err("No such file or directory"),
            ),
            1 => step(
                Kind::Info,
                strs(&[f]),
                Expect::Err("No such file or directory"),
            ),
            2 => step(
                Kind::Update,
                vec![f.to_string(), format!("{}:1", last + 1)],
                Expect::Err("No such file or directory"),
            ),
            _ => step(
                Kind::Fetch,
                vec![
                    f.to_string(),
                    "AVERAGE".into(),
                    "-s".into(),
                    t0.to_string(),
                    "-e".into(),
                    last.to_string(),
                ],
                Expect::Err("No such file or directory"),
            ),
        };
        steps.push(probe);
    }
    steps.push(step(Kind::Info, strs(&["x.rrd"]), Expect::Ok));
    for i in 0..s.rras.len() {
        let args = if i == 0 && rng.chance(0.5) {
            strs(&["x.rrd"])
        } else {
            vec!["x.rrd".to_string(), "--rraindex".to_string(), i.to_string()]
        };
        steps.push(step(Kind::First, args, Expect::Ok));
    }
    if rng.chance(0.1) {
        feats.insert("err:rraindex");
        let args = vec![
            "x.rrd".to_string(),
            "--rraindex".to_string(),
            s.rras.len().to_string(),
        ];
        steps.push(step(
            Kind::First,
            args,
            Expect::Err("invalid rraindex number"),
        ));
    }
    steps.push(step(Kind::Last, strs(&["x.rrd"]), Expect::Ok));
    steps.push(step(Kind::LastUpdate, strs(&["x.rrd"]), Expect::Ok));
    let dump_at = steps.len();
    steps.push(step(Kind::Dump, strs(&["x.rrd"]), Expect::Ok));
    if rng.chance(0.1) {
        feats.insert("dump:header-option");
        let v = rng
            .pick(&[
                strs(&["--no-header", "x.rrd"]),
                strs(&["x.rrd", "--header", "xsd"]),
                strs(&["-h", "none", "x.rrd"]),
            ])
            .clone();
        steps.push(step(Kind::Dump, v, Expect::Ok));
    }
    steps.push(xport(rng, s, t0, last, feats));
    let rargs = if rng.chance(0.15) {
        feats.insert("restore:range-check");
        strs(&[*rng.pick(&["-r", "--range-check"]), "-", "y.rrd"])
    } else {
        strs(&["-", "y.rrd"])
    };
    // -r refuses values outside [min, max]; whether any are stored is not modelled.
    let rexpect = if rargs.len() == 3 {
        Expect::Any
    } else {
        Expect::Ok
    };
    let mut restore = step(Kind::Restore, rargs, rexpect);
    restore.stdin = Stdin::RrdtoolStdoutOf(dump_at);
    steps.push(restore.clone());
    steps.push(step(Kind::Dump, strs(&["y.rrd"]), Expect::Ok));
    if rng.chance(0.3) {
        steps.push(step(Kind::Info, strs(&["y.rrd"]), Expect::Ok));
    }
    if rng.chance(0.1) {
        feats.insert("err:restore-exists");
        restore.expect = Expect::Err("File exists");
        steps.push(restore);
    }
}
