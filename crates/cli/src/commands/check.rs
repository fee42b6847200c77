//! `ringlet check [--cut] [NAME...]`: find the archive rows the disk no longer holds as
//! written (a segment file damaged or gone), and with `--cut` make them unknown for good.
//!
//! Every other reader answers an error when it meets such rows (docs/DURABILITY.md): a
//! client cannot tell unknown values from a gap in its data. `check` reads every chunk of
//! every archive (or of the series named), lists each series with damage, and exits 1 when
//! it found any; `--cut` stores each damaged series again with those rows unknown (the rest
//! as they were), so that reads succeed again and say nothing was lost that was not already
//! lost. Runs on the store alone or in the daemon beside it (RUN).

use super::{with_store, Ctx};
use crate::{store, Outcome};

pub const USAGE: &str = "\
usage: ringlet [--store DIR] check [--cut] [NAME...]

Read every stored row of every series (or of the series NAMEd) and list those whose rows
the disk no longer holds as written (a segment file damaged or gone). Readers (FETCH,
fetch, dump, xport, graph, the view, the HTTP API) answer an error for such rows rather
than unknown values. Exit status 1 when damage was found.

  --cut   store each damaged series again with those rows unknown, the rest as they were:
          reads succeed again (what the damage took stays lost)
";

pub fn check(ctx: &Ctx, args: &[String]) -> Outcome {
    if args.iter().any(|a| a == "--help" || a == "-h") {
        return Outcome::ok(USAGE.into());
    }
    let mut cut = false;
    let mut named = Vec::new();
    for a in args {
        match a.as_str() {
            "--cut" => cut = true,
            s if s.starts_with('-') => {
                return Outcome::err(format!(
                    "check: unknown option '{s}' (ringlet check --help)"
                ))
            }
            s => match store::normalize(s) {
                Ok(n) => named.push((s.to_string(), n)),
                Err(e) => return Outcome::err(e),
            },
        }
    }
    with_store(ctx, |st| {
        let names: Vec<(String, String)> = if named.is_empty() {
            st.names().into_iter().map(|n| (n.clone(), n)).collect()
        } else {
            named
        };
        let mut out = String::new();
        let (mut damaged, mut chunks) = (0u64, 0u64);
        for (given, name) in &names {
            let Some(rrd) = st.get(name) else {
                return Outcome::err(format!("opening '{given}': No such file or directory"));
            };
            let (values, damage) =
                rrd::rows::watch(|| rrd.rra.iter().map(|r| r.rows.to_vec()).collect::<Vec<_>>());
            let Some(dm) = damage else {
                continue;
            };
            damaged += 1;
            chunks += dm.chunks;
            if !cut {
                out.push_str(&format!("{name}: {} damaged chunk(s)\n", dm.chunks));
                continue;
            }
            let mut fixed = rrd.clone();
            let ds = rrd.schema.ds.len();
            for (r, v) in fixed.rra.iter_mut().zip(&values) {
                r.rows = rrd::Rows::from_values(ds, v);
            }
            if let Err(e) = st.create(name, fixed, true) {
                return Outcome::err(format!("{name}: {}", store::message(&e, given)));
            }
            ctx.wrote(name);
            out.push_str(&format!(
                "{name}: {} damaged chunk(s) cut: their rows are unknown now\n",
                dm.chunks
            ));
        }
        out.push_str(&format!(
            "{} series checked, {damaged} with damage ({chunks} chunks){}\n",
            names.len(),
            if cut && damaged > 0 { ", cut" } else { "" }
        ));
        let mut o = Outcome::ok(out);
        if damaged > 0 && !cut {
            o.error = Some(format!(
                "{damaged} series hold damaged rows: `ringlet check --cut` makes them unknown"
            ));
        }
        o
    })
}
