//! Replays a scenario through `rrd::Rrd::apply` and prints `updatev`-style rows and the full
//! state; the differential scripts compare it with real rrdtool files.
//!
//! Input (stdin), one directive per line:
//! `step N`, `start T`, `ds NAME TYPE HB MIN MAX` (`ds NAME COMPUTE RPN`),
//! `rra CF XFF STEPS ROWS`, `template a:b`, `now SEC USEC`, `update ARG`.
//! `rra` and `ds` lines come before the first `update`.

use std::io::Read;

use rrd::num::strtodbl;
use rrd::schema::{Cf, DsDef, DsType, RraDef, Schema};
use rrd::update::{parse_template, parse_update_arg};
use rrd::Rrd;

fn fmt(x: f64) -> String {
    format!("{:016x}({})", x.to_bits(), py_repr(x))
}

fn py_repr(x: f64) -> String {
    if x.is_nan() {
        "nan".into()
    } else if x.is_infinite() {
        if x > 0.0 {
            "inf".into()
        } else {
            "-inf".into()
        }
    } else {
        let s = format!("{:?}", x);
        // Python repr switches to exponent form outside [1e-4, 1e16).
        let a = x.abs();
        if a != 0.0 && !(1e-4..1e16).contains(&a) {
            let e = format!("{:e}", x);
            let (m, ex) = e.split_once('e').unwrap();
            let exn: i32 = ex.parse().unwrap();
            format!("{}e{}{:02}", m, if exn < 0 { '-' } else { '+' }, exn.abs())
        } else {
            s
        }
    }
}

fn upd_num(x: f64) -> String {
    if x.is_nan() {
        "NaN".into()
    } else {
        rrd::fmt::c_exp(x, 10)
    }
}

fn main() {
    let mut input = String::new();
    std::io::stdin().read_to_string(&mut input).unwrap();
    let mut schema = Schema {
        step: 300,
        ds: vec![],
        rra: vec![],
    };
    let mut start = 0i64;
    let mut rrd: Option<Rrd> = None;
    let mut template: Option<Vec<usize>> = None;
    let mut now = (0i64, 0i64);
    let mut out = Vec::new();
    for line in input.lines() {
        let (cmd, rest) = line.split_once(' ').unwrap_or((line, ""));
        match cmd {
            "step" => schema.step = rest.parse().unwrap(),
            "start" => start = rest.parse().unwrap(),
            "now" => {
                let (a, b) = rest.split_once(' ').unwrap();
                now = (a.parse().unwrap(), b.parse().unwrap());
            }
            "ds" => {
                let f: Vec<&str> = rest.split(' ').collect();
                let kind = DsType::from_name(f[1]).unwrap();
                let bound = |s: &str| {
                    if s == "U" {
                        f64::NAN
                    } else {
                        strtodbl(s).unwrap()
                    }
                };
                let d = if kind == DsType::Compute {
                    DsDef {
                        name: f[0].into(),
                        kind,
                        heartbeat: 0,
                        min: f64::NAN,
                        max: f64::NAN,
                        rpn: Some(f[2].into()),
                    }
                } else {
                    DsDef {
                        name: f[0].into(),
                        kind,
                        heartbeat: f[2].parse().unwrap(),
                        min: bound(f[3]),
                        max: bound(f[4]),
                        rpn: None,
                    }
                };
                schema.ds.push(d);
            }
            "rra" => {
                let f: Vec<&str> = rest.split(' ').collect();
                schema.rra.push(RraDef {
                    cf: Cf::from_name(f[0]).unwrap(),
                    xff: f[1].parse().unwrap(),
                    pdp_cnt: f[2].parse().unwrap(),
                    row_cnt: f[3].parse().unwrap(),
                    par: [0; 5],
                });
            }
            "template" => {
                template = match parse_template(&schema, rest) {
                    Ok(t) => Some(t),
                    Err(e) => {
                        out.push(format!("template error {}", e.msg));
                        None
                    }
                }
            }
            "update" => {
                let r = rrd.get_or_insert_with(|| Rrd::new(schema.clone(), start));
                out.push(format!("update {}", rest));
                match parse_update_arg(&r.schema, rest, template.as_deref(), now) {
                    Err(e) => out.push(format!("error {}", e.msg)),
                    Ok(s) => {
                        let mut rows = Vec::new();
                        let res = r.apply(&s, &mut |w| rows.push(w));
                        for w in rows {
                            let d = &r.schema.rra[w.rra];
                            out.push(format!(
                                "[{}]RRA[{}][{}]DS[{}] = {}",
                                w.time,
                                d.cf.name(),
                                d.pdp_cnt,
                                r.schema.ds[w.ds].name,
                                upd_num(w.value)
                            ));
                        }
                        if let Err(e) = res {
                            out.push(format!("error {}", e.error().msg));
                        }
                    }
                }
            }
            "" => {}
            other => panic!("unknown directive {}", other),
        }
    }
    let r = rrd.get_or_insert_with(|| Rrd::new(schema.clone(), start));
    out.push(format!("last_up {} {}", r.last_up, r.last_up_usec));
    for (i, p) in r.pdp.iter().enumerate() {
        out.push(
            format!(
                "ds {} last_ds={:?} unkn={} val={}",
                i,
                p.last_ds,
                p.unkn_sec_cnt,
                fmt(p.val)
            )
            .replace("last_ds=\"", "last_ds='")
            .replace("\" unkn", "' unkn"),
        );
    }
    let n = r.ds_cnt();
    for ri in 0..r.schema.rra.len() {
        for i in 0..n {
            let c = r.cdp(ri, i);
            out.push(format!(
                "cdp {} {} val={} unkn={} prim={} sec={}",
                ri,
                i,
                fmt(c.val),
                c.unkn_pdp_cnt,
                fmt(c.primary),
                fmt(c.secondary)
            ));
        }
    }
    for (ri, d) in r.schema.rra.iter().enumerate() {
        let data = &r.rra[ri];
        let mut reader = data.rows.reader();
        let mut rows = Vec::new();
        for k in 0..d.row_cnt {
            let row = ((data.cur_row + 1 + k) % d.row_cnt) as usize;
            rows.push(
                reader
                    .row(row)
                    .iter()
                    .map(|v| fmt(*v))
                    .collect::<Vec<_>>()
                    .join(" "),
            );
        }
        out.push(format!("rra {}: {}", ri, rows.join(" | ")));
    }
    println!("{}", out.join("\n"));
}
