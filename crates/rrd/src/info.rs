//! `rrdtool info`: the key/value view of an RRD, in rrdtool 1.7.2's order and spelling.
//!
//! [`info`] lists the keys; [`format_info`] prints them as the CLI does (`key = value`, strings
//! quoted, numbers `%0.10e` or `NaN`). Keys that describe rrdtool's file layout
//! (`rrd_version`, `header_size`, `cur_row`) get plausible values: the version rrdtool would
//! write, the x86-64 header size of the same schema, and ringlet's own ring position.

use crate::fmt::info_num;
use crate::rrdfile;
use crate::schema::{Cf, DsType};
use crate::Rrd;

/// One value of an info key.
#[derive(Debug, Clone, PartialEq)]
pub enum InfoValue {
    /// Printed quoted.
    Str(String),
    /// Printed as an unsigned integer (`%lu`).
    Count(u64),
    /// Printed as an integer that may be negative (`last_update`).
    Int(i64),
    /// Printed `%0.10e`, or `NaN`.
    Val(f64),
}

impl InfoValue {
    /// The text after `key = `.
    pub fn render(&self) -> String {
        match self {
            InfoValue::Str(s) => format!("\"{s}\""),
            InfoValue::Count(n) => n.to_string(),
            InfoValue::Int(n) => n.to_string(),
            InfoValue::Val(v) => info_num(*v),
        }
    }
}

/// The keys and values `rrdtool info <filename>` prints, in order.
pub fn info(rrd: &Rrd, filename: &str) -> Vec<(String, InfoValue)> {
    use InfoValue::*;
    let mut out: Vec<(String, InfoValue)> = Vec::new();
    let mut put = |k: String, v: InfoValue| out.push((k, v));
    put("filename".into(), Str(filename.to_string()));
    put(
        "rrd_version".into(),
        Str(rrdfile::version(&rrd.schema).to_string()),
    );
    put("step".into(), Count(rrd.schema.step));
    put("last_update".into(), Int(rrd.last_up));
    let size = rrdfile::header_size(rrd.ds_cnt(), rrd.schema.rra.len());
    put("header_size".into(), Count(size as u64));
    for (i, (d, p)) in rrd.schema.ds.iter().zip(&rrd.pdp).enumerate() {
        let k = |f: &str| format!("ds[{}].{f}", d.name);
        put(k("index"), Count(i as u64));
        put(k("type"), Str(d.kind.name().to_string()));
        if d.kind == DsType::Compute {
            put(k("cdef"), Str(d.rpn.clone().unwrap_or_default()));
        } else {
            put(k("minimal_heartbeat"), Count(d.heartbeat));
            put(k("min"), Val(d.min));
            put(k("max"), Val(d.max));
        }
        put(k("last_ds"), Str(p.last_ds.to_string()));
        put(k("value"), Val(p.val));
        put(k("unknown_sec"), Count(p.unkn_sec_cnt));
    }
    let version4 = rrdfile::version(&rrd.schema) != "0003";
    for (r, def) in rrd.schema.rra.iter().enumerate() {
        let k = |f: &str| format!("rra[{r}].{f}");
        put(k("cf"), Str(def.cf.name().to_string()));
        put(k("rows"), Count(def.row_cnt));
        put(k("cur_row"), Count(rrd.rra[r].cur_row));
        put(k("pdp_per_row"), Count(def.pdp_cnt));
        let p = def.hw();
        match def.cf {
            Cf::HwPredict | Cf::MhwPredict => {
                put(k("alpha"), Val(p.alpha));
                put(k("beta"), Val(p.beta));
            }
            Cf::Seasonal | Cf::DevSeasonal => {
                put(k("gamma"), Val(p.gamma));
                if version4 {
                    put(k("smoothing_window"), Val(p.smoothing_window));
                }
            }
            Cf::Failures => {
                put(k("delta_pos"), Val(p.delta_pos));
                put(k("delta_neg"), Val(p.delta_neg));
                put(k("failure_threshold"), Count(p.failure_threshold));
                put(k("window_length"), Count(p.window_len));
            }
            Cf::DevPredict => {}
            _ => put(k("xff"), Val(def.xff)),
        }
        for d in 0..rrd.ds_cnt() {
            let c = rrd.cdp(r, d);
            let h = rrd.hw_slots(r, d);
            let cdp = |f: &str| k(&format!("cdp_prep[{d}].{f}"));
            match def.cf {
                Cf::HwPredict | Cf::MhwPredict => {
                    put(cdp("intercept"), Val(f64::from_bits(h[0])));
                    put(cdp("slope"), Val(f64::from_bits(h[2])));
                    put(cdp("NaN_count"), Count(h[4]));
                }
                Cf::Seasonal => put(cdp("seasonal"), Val(f64::from_bits(h[0]))),
                Cf::DevSeasonal => put(cdp("deviation"), Val(f64::from_bits(h[0]))),
                Cf::DevPredict => {}
                Cf::Failures => {
                    let n = (p.window_len as usize).min(32);
                    let bytes = rrd.scratch_bytes(r, d);
                    let history: String = bytes[..n]
                        .iter()
                        .map(|&b| if b == 1 { '1' } else { '0' })
                        .collect();
                    put(cdp("history"), Str(history));
                }
                _ => {
                    put(cdp("value"), Val(c.val));
                    put(cdp("unknown_datapoints"), Count(c.unkn_pdp_cnt));
                }
            }
        }
    }
    out
}

/// The CLI form: one `key = value` line per key.
pub fn format_info(items: &[(String, InfoValue)]) -> String {
    let mut s = String::new();
    for (k, v) in items {
        s.push_str(k);
        s.push_str(" = ");
        s.push_str(&v.render());
        s.push('\n');
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::create::parse_create;

    fn new_rrd(args: &str) -> Rrd {
        let v: Vec<String> = args.split_whitespace().map(String::from).collect();
        let req = parse_create(&v, 1795304690).unwrap();
        Rrd::new(req.schema, req.start)
    }

    #[test]
    fn fresh_rrd_prints_like_rrdtool_create() {
        let mut r = new_rrd(
            "a.rrd --start 1700000000 --step 60 DS:x:GAUGE:120:0:100 DS:y:DCOUNTER:120:U:U \
             DS:z:COMPUTE:x,y,+ RRA:AVERAGE:0.5:1:10 RRA:MAX:0.5:5:4",
        );
        r.rra[0].cur_row = 1;
        r.rra[1].cur_row = 2;
        let text = format_info(&info(&r, "a.rrd"));
        let want = "filename = \"a.rrd\"\nrrd_version = \"0005\"\nstep = 60\n\
last_update = 1700000000\nheader_size = 1576\nds[x].index = 0\nds[x].type = \"GAUGE\"\n\
ds[x].minimal_heartbeat = 120\nds[x].min = 0.0000000000e+00\nds[x].max = 1.0000000000e+02\n\
ds[x].last_ds = \"U\"\nds[x].value = NaN\nds[x].unknown_sec = 20\nds[y].index = 1\n\
ds[y].type = \"DCOUNTER\"\nds[y].minimal_heartbeat = 120\nds[y].min = NaN\nds[y].max = NaN\n\
ds[y].last_ds = \"U\"\nds[y].value = NaN\nds[y].unknown_sec = 20\nds[z].index = 2\n\
ds[z].type = \"COMPUTE\"\nds[z].cdef = \"x,y,+\"\nds[z].last_ds = \"U\"\nds[z].value = NaN\n\
ds[z].unknown_sec = 20\nrra[0].cf = \"AVERAGE\"\nrra[0].rows = 10\nrra[0].cur_row = 1\n\
rra[0].pdp_per_row = 1\nrra[0].xff = 5.0000000000e-01\nrra[0].cdp_prep[0].value = NaN\n\
rra[0].cdp_prep[0].unknown_datapoints = 0\nrra[0].cdp_prep[1].value = NaN\n\
rra[0].cdp_prep[1].unknown_datapoints = 0\nrra[0].cdp_prep[2].value = NaN\n\
rra[0].cdp_prep[2].unknown_datapoints = 0\nrra[1].cf = \"MAX\"\nrra[1].rows = 4\n\
rra[1].cur_row = 2\nrra[1].pdp_per_row = 5\nrra[1].xff = 5.0000000000e-01\n\
rra[1].cdp_prep[0].value = NaN\nrra[1].cdp_prep[0].unknown_datapoints = 3\n\
rra[1].cdp_prep[1].value = NaN\nrra[1].cdp_prep[1].unknown_datapoints = 3\n\
rra[1].cdp_prep[2].value = NaN\nrra[1].cdp_prep[2].unknown_datapoints = 3\n";
        assert_eq!(text, want);
    }

    #[test]
    fn header_size_matches_x86_64_layout() {
        let rrd = new_rrd("b.rrd DS:x:GAUGE:120:0:100 RRA:AVERAGE:0.5:1:10");
        let size = info(&rrd, "b.rrd")
            .into_iter()
            .find(|(k, _)| k == "header_size");
        assert_eq!(size.map(|(_, v)| v), Some(InfoValue::Count(584)));
    }
}
