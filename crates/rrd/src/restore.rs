//! `rrdtool restore`: an RRD from rrdtool's dump XML, the inverse of [`crate::dump`].
//!
//! A small XML tokenizer and reader (module `xml`: elements, attributes skipped, comments,
//! processing instructions, DOCTYPE, CDATA, character references) feed a walker of the dump's
//! fixed layout: `<rrd>` with `version`, `step`, `lastupdate`, `ds`, `rra` (`cf`,
//! `pdp_per_row`, `params`/`xff`, `cdp_prep`, `database`). The row count of each archive is
//! the number of `<row>` elements; rows are placed oldest first so that the last one is the
//! archive's row at `lastupdate` (`cur_row` = last row). Numbers are read as rrdtool reads
//! them ([`crate::num::strtod`], not correctly rounded). Errors carry rrdtool's texts,
//! including the `line N:` (and, for numbers, `ling N:`) prefixes, whose numbers come from
//! libxml2 reading ahead in 512-byte chunks. Holt-Winters archives are read as rrdtool's restore
//! reads them: their parameters by slot whatever the CF, their CDP fields over zeros (only
//! the first 10 of a FAILURES `<history>`), no HWPREDICT period (the dump has none); a set
//! update could not work on is refused ([`Schema::check_hw`]).

use crate::{rpn, rrdfile};
use crate::{CdpPrep, Cf, DsDef, DsType, PdpPrep, Rows, RraData, RraDef, Rrd, RrdError, Schema};

mod xml;

use xml::{xml_err, Ev, Reader};

/// One archive as read, before it becomes schema and state.
struct RraIn {
    def: RraDef,
    cdp: Vec<CdpPrep>,
    /// The Holt-Winters CDP slots 2-7, one per DS.
    slots: Vec<[u64; 6]>,
    rows: Vec<f64>,
}

/// `rrdtool restore [-r] file.xml`: the RRD described by `xml`. With `range_check`, row values
/// outside their DS's [min, max] become unknown (rrdtool's `-r`).
pub fn restore_xml(xml: &str, range_check: bool) -> Result<Rrd, RrdError> {
    let mut rd = Reader::new(xml);
    rd.expect_start("rrd")?;
    let mut step: i64 = 300;
    let mut last_up: i64 = 0;
    let mut ds: Vec<DsDef> = Vec::new();
    let mut pdp: Vec<PdpPrep> = Vec::new();
    let mut rras: Vec<RraIn> = Vec::new();
    let mut version = String::from("0003");
    while let Some(tag) = rd.child("rrd")? {
        match tag.as_str() {
            "version" => {
                version = rd.text("version")?;
            }
            "step" => step = rd.long("step")?,
            "lastupdate" => last_up = rd.long("lastupdate")?,
            "ds" => {
                let (d, p) = read_ds(&mut rd)?;
                ds.push(d);
                pdp.push(p);
            }
            "rra" => rras.push(read_rra(&mut rd, ds.len())?),
            _ => {
                return Err(RrdError::new(format!(
                    "parse_tag_rrd: Unknown tag: {}",
                    tag
                )))
            }
        }
    }
    match rd.next()? {
        Ev::Eof => {}
        _ => return Err(xml_err("Extra content at the end of the document")),
    }
    normalize_computes(&mut ds)?;
    if step <= 0 {
        return Err(RrdError::new(
            "restore: step must be a positive number of seconds",
        ));
    }
    if ds.is_empty() {
        return Err(RrdError::new("restore: the dump has no data source"));
    }
    if rras.is_empty() {
        return Err(RrdError::new(
            "restore: the dump has no round robin archive",
        ));
    }
    let ds_cnt = ds.len();
    let bounds = if range_check {
        range_bounds(step as u64, &ds)?
    } else {
        Vec::new()
    };
    let mut rra_defs = Vec::with_capacity(rras.len());
    let any_hw = rras.iter().any(|r| r.def.cf.is_hw());
    let mut slots = Vec::new();
    let mut cdp = Vec::with_capacity(rras.len() * ds_cnt);
    let mut data = Vec::with_capacity(rras.len());
    for r in rras {
        let row_cnt = r.rows.len() / ds_cnt;
        if r.def.pdp_cnt == 0 {
            return Err(RrdError::new("restore: pdp_per_row must be positive"));
        }
        if row_cnt == 0 {
            return Err(RrdError::new("restore: an archive has no rows"));
        }
        let mut rows = r.rows;
        if range_check {
            clamp_rows(&mut rows, &bounds);
        }
        rra_defs.push(RraDef {
            row_cnt: row_cnt as u64,
            ..r.def
        });
        cdp.extend(r.cdp);
        if any_hw {
            slots.extend(r.slots);
        }
        data.push(RraData {
            cur_row: row_cnt as u64 - 1,
            rows: Rows::from_values(ds_cnt, &rows),
        });
    }
    let mut schema = Schema {
        step: step as u64,
        ds,
        rra: rra_defs,
    };
    rrdfile::keep_version(&mut schema, &version);
    schema
        .check_hw()
        .map_err(|e| RrdError::new(format!("restore: {e}")))?;
    if !schema.spans_fit() {
        return Err(RrdError::new(
            "restore: an archive spans more time than can be counted (step x pdp_per_row x rows)",
        ));
    }
    Ok(Rrd {
        schema: schema.into(),
        last_up,
        last_up_usec: 0,
        pdp,
        cdp,
        rra: data,
        hw: any_hw.then(|| {
            Box::new(crate::HwState {
                scratch: slots,
                smooth_due: false,
            })
        }),
    })
}

/// `-r`: unknown for values outside [min, max] (NaN bounds do not limit), stored as rrdtool's
/// DNAN (sign bit set): the file's bytes, and a fetch printing `-nan`, depend on it.
fn clamp_rows(rows: &mut [f64], bounds: &[(f64, f64)]) {
    for row in rows.chunks_mut(bounds.len()) {
        for (v, (min, max)) in row.iter_mut().zip(bounds) {
            if (!min.is_nan() && *v < *min) || (!max.is_nan() && *v > *max) {
                *v = crate::num::DNAN;
            }
        }
    }
}

/// The [min, max] that `-r` compares with, per DS. A COMPUTE DS has none: rrdtool compares
/// with whatever its compiled RPN leaves in the min/max slots of the `.rrd` header (the
/// 4-byte tokens 2-3 and 4-5), so these are read back from the header [`rrdfile::write`]
/// builds. (For `g` both are 0.0, so only 0 passes; for `g,2,*` nothing passes.)
fn range_bounds(step: u64, ds: &[DsDef]) -> Result<Vec<(f64, f64)>, RrdError> {
    if !ds.iter().any(|d| d.kind == DsType::Compute) {
        return Ok(ds.iter().map(|d| (d.min, d.max)).collect());
    }
    let probe = Schema {
        step,
        ds: ds.to_vec(),
        rra: vec![RraDef {
            cf: Cf::Average,
            xff: 0.5,
            pdp_cnt: 1,
            row_cnt: 1,
            par: [0; 5],
        }],
    };
    let bytes = rrdfile::write(&Rrd::new(probe, 0))?;
    let f64_at = |off: usize| {
        let mut b = [0u8; 8];
        b.copy_from_slice(&bytes[off..off + 8]);
        f64::from_le_bytes(b)
    };
    Ok(ds
        .iter()
        .enumerate()
        .map(|(i, d)| {
            if d.kind == DsType::Compute {
                let par = DS_PAR_OFFSET + i * DS_DEF_SIZE;
                (f64_at(par + 8), f64_at(par + 16))
            } else {
                (d.min, d.max)
            }
        })
        .collect())
}

/// Where the first `ds_def` parameters start in a `.rrd` header, and the size of a `ds_def`
/// (x86-64 layout, see [`rrdfile`]).
const DS_PAR_OFFSET: usize = 128 + 40;
const DS_DEF_SIZE: usize = 120;

/// Parses every COMPUTE expression as `rrdtool restore` does: names of the DS up to and
/// including its own, COMPUTE's restrictions and error texts ([`rpn::compile_compute`]); the
/// stored text is the expression printed back (`g,2.0,*,` becomes `g,2,*`).
fn normalize_computes(ds: &mut [DsDef]) -> Result<(), RrdError> {
    let names: Vec<String> = ds.iter().map(|d| d.name.clone()).collect();
    for (i, d) in ds.iter_mut().enumerate() {
        if d.kind != DsType::Compute {
            continue;
        }
        let expr = d.rpn.as_deref().unwrap_or("");
        let visible: Vec<&str> = names[..=i].iter().map(String::as_str).collect();
        let prog = rpn::compile_compute(expr, &visible)?;
        d.rpn = Some(prog.to_cdef_string(&|j| names[j].clone()));
    }
    Ok(())
}

fn read_ds(rd: &mut Reader) -> Result<(DsDef, PdpPrep), RrdError> {
    let mut d = DsDef {
        name: String::new(),
        kind: DsType::Gauge,
        heartbeat: 0,
        min: f64::NAN,
        max: f64::NAN,
        rpn: None,
    };
    let mut p = PdpPrep {
        last_ds: "U".into(),
        unkn_sec_cnt: 0,
        val: f64::NAN,
    };
    while let Some(tag) = rd.child("ds")? {
        match tag.as_str() {
            "name" => d.name = rd.text("name")?,
            "type" => {
                let t = rd.text("type")?;
                d.kind = DsType::from_name(&t).ok_or_else(|| {
                    RrdError::new(format!(
                        "parse_tag_ds_type: Unknown data source type: {}",
                        t
                    ))
                })?;
            }
            "minimal_heartbeat" => d.heartbeat = rd.long("minimal_heartbeat")? as u64,
            "min" => d.min = rd.double("min")?,
            "max" => d.max = rd.double("max")?,
            "cdef" => d.rpn = Some(rd.text("cdef")?),
            "last_ds" => {
                let mut t = rd.text("last_ds")?;
                truncate_bytes(&mut t, 29);
                p.last_ds = compact_str::CompactString::new(t);
            }
            "value" => p.val = rd.double("value")?,
            "unknown_sec" => p.unkn_sec_cnt = rd.long("unknown_sec")? as u64,
            _ => return Err(RrdError::new(format!("parse_tag_ds: Unknown tag: {}", tag))),
        }
    }
    if d.kind == DsType::Compute && d.rpn.is_none() {
        return Err(RrdError::new("failed to parse computed data source"));
    }
    Ok((d, p))
}

fn truncate_bytes(s: &mut String, max: usize) {
    if s.len() > max {
        let mut n = max;
        while !s.is_char_boundary(n) {
            n -= 1;
        }
        s.truncate(n);
    }
}

fn read_rra(rd: &mut Reader, ds_cnt: usize) -> Result<RraIn, RrdError> {
    let mut r = RraIn {
        def: RraDef {
            cf: Cf::Average,
            xff: 0.5,
            pdp_cnt: 1,
            row_cnt: 0,
            par: [0; 5],
        },
        cdp: Vec::new(),
        slots: Vec::new(),
        rows: Vec::new(),
    };
    let mut xff_seen = false;
    while let Some(tag) = rd.child("rra")? {
        match tag.as_str() {
            "cf" => {
                let t = rd.text("cf")?;
                r.def.cf = Cf::from_name(&t).ok_or_else(|| {
                    RrdError::new(format!(
                        "parse_tag_rra_cf: Unknown consolidation function: {}",
                        t
                    ))
                })?;
            }
            "pdp_per_row" => r.def.pdp_cnt = rd.long("pdp_per_row")? as u64,
            "params" => {
                while let Some(p) = rd.child("params")? {
                    match p.as_str() {
                        "xff" => {
                            r.def.xff = rd.double("xff")?;
                            xff_seen = true;
                        }
                        // Holt-Winters parameters, by rrdtool's slot whatever the CF.
                        "hw_alpha" | "seasonal_gamma" | "delta_pos" => {
                            r.def.par[0] = rd.double(&p)?.to_bits()
                        }
                        "hw_beta" | "smoothing_window" | "delta_neg" => {
                            r.def.par[1] = rd.double(&p)?.to_bits()
                        }
                        "dependent_rra_idx" => r.def.par[2] = rd.long(&p)? as u64,
                        "seasonal_smooth_idx" | "window_len" => r.def.par[3] = rd.long(&p)? as u64,
                        "failure_threshold" => r.def.par[4] = rd.long(&p)? as u64,
                        _ => {
                            return Err(RrdError::new(format!(
                                "parse_tag_rra_params: Unknown tag: {}",
                                p
                            )))
                        }
                    }
                }
            }
            "cdp_prep" => (r.cdp, r.slots) = read_cdp_prep(rd, ds_cnt, r.def.cf.is_hw())?,
            "database" => r.rows = read_database(rd, ds_cnt)?,
            _ => return Err(rd.err(&format!("parse_tag_rra: Unknown tag: {}", tag))),
        }
    }
    // rrdtool's restore starts an archive from zeros: a Holt-Winters one has no xff.
    if r.def.cf.is_hw() && !xff_seen {
        r.def.xff = 0.0;
    }
    // A seasonal archive's par[5] is ringlet's mark of the version (the dump's, here).
    if matches!(r.def.cf, Cf::Seasonal | Cf::DevSeasonal) {
        r.def.par[4] = 0;
    }
    if r.cdp.len() != ds_cnt {
        return Err(RrdError::new(format!(
            "restore: cdp_prep has {} data sources, the file {}",
            r.cdp.len(),
            ds_cnt
        )));
    }
    Ok(r)
}

/// The CDP state and Holt-Winters slots of each DS. rrdtool's restore starts every CDP from
/// zeros and takes any field for any CF; ringlet starts a consolidating archive's unknown
/// (a dump always gives its fields).
fn read_cdp_prep(
    rd: &mut Reader,
    ds_cnt: usize,
    hw: bool,
) -> Result<(Vec<CdpPrep>, Vec<[u64; 6]>), RrdError> {
    // Exactly one <ds> per data source, as rrdtool reads them.
    let mut out = Vec::with_capacity(ds_cnt);
    let mut slots = Vec::with_capacity(ds_cnt);
    for _ in 0..ds_cnt {
        rd.expect_start("ds")?;
        let start = if hw { 0.0 } else { f64::NAN };
        let mut c = CdpPrep {
            val: start,
            unkn_pdp_cnt: 0,
            primary: start,
            secondary: start,
        };
        let mut h = [0u64; 6];
        while let Some(t) = rd.child("ds")? {
            match t.as_str() {
                "primary_value" => c.primary = rd.double("primary_value")?,
                "secondary_value" => c.secondary = rd.double("secondary_value")?,
                "value" => c.val = rd.double("value")?,
                "unknown_datapoints" => c.unkn_pdp_cnt = rd.long("unknown_datapoints")? as u64,
                "intercept" | "seasonal" => h[0] = rd.double(&t)?.to_bits(),
                "last_intercept" | "last_seasonal" => h[1] = rd.double(&t)?.to_bits(),
                "slope" => h[2] = rd.double(&t)?.to_bits(),
                "last_slope" => h[3] = rd.double(&t)?.to_bits(),
                "nan_count" | "init_flag" => h[4] = rd.long(&t)? as u64,
                "last_nan_count" => h[5] = rd.long(&t)? as u64,
                "history" => {
                    // One byte a character ('1' a violation), the first 10 only, over the
                    // start of the scratch (value, unknown count, then the slots).
                    let text = rd.text("history")?;
                    let mut b = [0u8; 32];
                    for (k, w) in [c.val.to_bits(), c.unkn_pdp_cnt, h[0], h[1]]
                        .iter()
                        .enumerate()
                    {
                        b[8 * k..8 * k + 8].copy_from_slice(&w.to_le_bytes());
                    }
                    for (i, ch) in text.bytes().take(10).enumerate() {
                        b[i] = u8::from(ch == b'1');
                    }
                    let word = |i: usize| {
                        u64::from_le_bytes(b[8 * i..8 * i + 8].try_into().expect("8 bytes"))
                    };
                    c.val = f64::from_bits(word(0));
                    c.unkn_pdp_cnt = word(1);
                    h[0] = word(2);
                    h[1] = word(3);
                }
                _ => {
                    return Err(RrdError::new(format!(
                        "parse_tag_rra_cdp_prep: Unknown tag: {}",
                        t
                    )))
                }
            }
        }
        out.push(c);
        slots.push(h);
    }
    rd.expect_end("cdp_prep")?;
    Ok((out, slots))
}

fn read_database(rd: &mut Reader, ds_cnt: usize) -> Result<Vec<f64>, RrdError> {
    let mut rows = Vec::new();
    while let Some(tag) = rd.child("database")? {
        if tag != "row" {
            // rrdtool passes over anything but rows here.
            rd.skip(&tag)?;
            continue;
        }
        for _ in 0..ds_cnt {
            rd.expect_start("v")?;
            rows.push(rd.double("v")?);
        }
        rd.expect_end("row")?;
    }
    Ok(rows)
}

#[cfg(test)]
mod tests;
