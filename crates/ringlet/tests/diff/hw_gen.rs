//! Holt-Winters archives for the differential cases whose seeds are in `gen::HOLT` and up:
//! an HWPREDICT or MHWPREDICT alone (rrdtool adds SEASONAL, DEVSEASONAL, DEVPREDICT and
//! FAILURES after it), or every archive named, in any order, with their `rra-num`s,
//! smoothing windows, FAILURES thresholds and windows; short seasons, so that the updates
//! run through the burn-in and later smoothings, gaps reset the models and spikes make
//! failures. And tune lines of the Holt-Winters options, with values in and out of range.

use super::case::{Expect, Kind, Stdin, Step};
use super::rng::Rng;
use super::schema_gen::{GenRra, GenSchema};
use std::collections::BTreeSet;

/// A Holt-Winters archive as the schema keeps it for the queries; `text` is its `RRA:`
/// definition, `None` for one rrdtool adds itself.
fn arch(cf: &'static str, rows: u64, text: Option<String>) -> GenRra {
    GenRra {
        cf,
        xff: "0",
        pdp: 1,
        rows,
        text,
    }
}

fn smoothing(rng: &mut Rng) -> String {
    if rng.chance(0.4) {
        format!(
            ":smoothing-window={}",
            rng.pick(&["0", "0.05", "0.1", "0.25", "0.5", "1"])
        )
    } else {
        String::new()
    }
}

fn fraction(rng: &mut Rng) -> &'static str {
    rng.pick::<&str>(&["0.1", "0.5", "0.9", "0.0035", "0.3", "0.05", "0.7"])
}

/// Append a set of Holt-Winters archives (sometimes two) to `schema`.
pub fn add_hw(rng: &mut Rng, schema: &mut GenSchema, feats: &mut BTreeSet<&'static str>) {
    feats.insert("holt-winters");
    for _ in 0..if rng.chance(0.2) { 2 } else { 1 } {
        let period = *rng.pick(&[2, 3, 4, 5, 6, 8, 10, 12, 16, 24, 40]);
        let rows = period * rng.range(1, 3) + rng.range(0, 5);
        let cf = if rng.chance(0.35) {
            feats.insert("hw:multiplicative");
            "MHWPREDICT"
        } else {
            "HWPREDICT"
        };
        let (a, b) = (fraction(rng), fraction(rng));
        let base = schema.rras.len() as u64;
        if rng.chance(0.5) {
            feats.insert("hw:implied");
            schema.rras.push(arch(
                cf,
                rows,
                Some(format!("RRA:{cf}:{rows}:{a}:{b}:{period}")),
            ));
            schema.rras.push(arch("SEASONAL", period, None));
            schema.rras.push(arch("DEVSEASONAL", period, None));
            schema.rras.push(arch("DEVPREDICT", rows, None));
            schema.rras.push(arch("FAILURES", period, None));
        } else {
            feats.insert("hw:explicit");
            // The five in a random order; each names the one it works with (1-based).
            let mut order = ["HW", "SEASONAL", "DEVSEASONAL", "DEVPREDICT", "FAILURES"];
            rng.shuffle(&mut order);
            let at = |name: &str| base + 1 + order.iter().position(|o| *o == name).unwrap() as u64;
            for o in order {
                let text = match o {
                    "HW" => format!("RRA:{cf}:{rows}:{a}:{b}:{period}:{}", at("SEASONAL")),
                    "SEASONAL" | "DEVSEASONAL" => format!(
                        "RRA:{o}:{period}:{}:{}{}",
                        fraction(rng),
                        at("HW"),
                        smoothing(rng)
                    ),
                    "DEVPREDICT" => format!("RRA:DEVPREDICT:{rows}:{}", at("DEVSEASONAL")),
                    _ => {
                        let window = rng.range(1, 28);
                        let threshold = rng.range(1, window);
                        format!(
                            "RRA:FAILURES:{}:{threshold}:{window}:{}",
                            period + rng.range(0, 10),
                            at("DEVSEASONAL")
                        )
                    }
                };
                let cf = if o == "HW" { cf } else { o };
                let rows = match o {
                    "HW" | "DEVPREDICT" => rows,
                    "FAILURES" => {
                        let r: u64 = text.split(':').nth(2).unwrap().parse().unwrap();
                        r
                    }
                    _ => period,
                };
                schema.rras.push(arch(cf, rows, Some(text)));
            }
        }
    }
}

/// Tune lines of Holt-Winters options on `file`, in and out of range.
pub fn hw_tune_steps(
    rng: &mut Rng,
    schema: &GenSchema,
    file: &str,
    feats: &mut BTreeSet<&'static str>,
    steps: &mut Vec<Step>,
) {
    feats.insert("tune:holt-winters");
    for _ in 0..rng.range(1, 3) {
        let mut args = vec!["tune".to_string(), file.to_string()];
        if rng.chance(0.4) {
            // DS and RRA changes: a data source added or removed (not beside a COMPUTE,
            // whose expression rrdtool reads by position), rows added or removed.
            feats.insert("tune:hw-modify");
            let compute = schema
                .ds
                .iter()
                .any(|d| d.ty == super::schema_gen::DsType::Compute);
            for _ in 0..rng.range(1, 3) {
                match rng.range(0, 4) {
                    3 => {
                        // A Holt-Winters archive added (rrdtool adds the other four).
                        feats.insert("tune:hw-add");
                        let period = rng.range(2, 12);
                        args.push(format!(
                            "RRA:HWPREDICT:{}:{}:{}:{period}",
                            period * rng.range(1, 3),
                            fraction(rng),
                            fraction(rng)
                        ));
                    }
                    0 => args.push(format!(
                        "DS:n{}:GAUGE:{}:U:U",
                        rng.range(0, 99),
                        2 * schema.step
                    )),
                    // One data source removed at most, never the last, nor a DCOUNTER or
                    // DDERIVE (the file's version would change: refused, as for any RRD).
                    1 if !compute
                        && schema.ds.len() > 1
                        && !args.iter().any(|a| a.starts_with("DEL:")) =>
                    {
                        use super::schema_gen::DsType;
                        let d = &schema.ds[rng.index(schema.ds.len())];
                        if !matches!(d.ty, DsType::DCounter | DsType::DDerive) {
                            args.push(format!("DEL:{}", d.name));
                        }
                    }
                    _ => {
                        let n = rng.index(schema.rras.len());
                        let op = *rng.pick(&["+", "-"]);
                        let k = if op == "-" {
                            rng.range(0, schema.rras[n].rows.saturating_sub(1))
                        } else {
                            rng.range(1, 12)
                        };
                        args.push(format!("RRA#{n}:{op}{k}"));
                    }
                }
            }
            steps.push(Step {
                kind: Kind::Tune,
                args,
                stdin: Stdin::Empty,
                expect: Expect::Any,
            });
            continue;
        }
        for _ in 0..rng.range(1, 3) {
            let (opt, v): (&str, String) = match rng.range(0, 8) {
                0 => (
                    "--alpha",
                    rng.pick(&["0.5", "0.01", "1", "0", "0.9x"]).to_string(),
                ),
                1 => ("--beta", rng.pick(&["0.2", "0.0035", "1.5"]).to_string()),
                2 => ("--gamma", rng.pick(&["0.3", "0.99", "abc"]).to_string()),
                3 => ("--gamma-deviation", rng.pick(&["0.4", "0.1"]).to_string()),
                4 => (
                    *rng.pick(&["--smoothing-window", "--smoothing-window-deviation"]),
                    rng.pick(&["0", "0.05", "0.2", "1", "1.5"]).to_string(),
                ),
                5 => (
                    *rng.pick(&["--window-length", "--failure-threshold"]),
                    rng.range(0, 30).to_string(),
                ),
                6 => (
                    *rng.pick(&["--deltapos", "--deltaneg"]),
                    rng.pick(&["1.5", "3", "0.05", "2x"]).to_string(),
                ),
                _ => {
                    let ds = &schema.ds[rng.index(schema.ds.len())].name;
                    ("--aberrant-reset", ds.clone())
                }
            };
            args.push(opt.to_string());
            args.push(v);
        }
        steps.push(Step {
            kind: Kind::Tune,
            args,
            stdin: Stdin::Empty,
            expect: Expect::Any,
        });
    }
}
