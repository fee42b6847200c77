//! The native `.rrd` file of rrdtool 1.7.2 on x86-64 (little-endian, 8-byte `long`), read
//! and written. This is how existing files come in (a client such as collectd creates
//! `.rrd` files itself) and how tools that open `.rrd` files can be served; it is also an
//! exact oracle in tests: rrdtool's own file holds every double bit for bit.
//!
//! Layout (offsets built one from the previous; sizes are C `sizeof` on x86-64):
//!
//! ```text
//! stat_head  128  cookie "RRD\0" | version "0003\0" | pad | float_cookie f64 @16
//!                 | ds_cnt u64 @24 | rra_cnt u64 @32 | pdp_step u64 @40 | par[10] @48
//! ds_def     120 each: name[20] | type[20] | par[10] @40 (heartbeat u64, min f64, max f64;
//!                 COMPUTE: the RPN as 4-byte {u8 op, pad, i16 val} tokens from par[0])
//! rra_def    120 each: cf[20] | pad | row_cnt u64 @24 | pdp_cnt u64 @32 | par[10] @40 (xff f64)
//! live_head   16      last_up i64 | last_up_usec i64
//! pdp_prep   112 each: last_ds[30] | pad | scratch[10] @32 (unkn_sec u64, value f64)
//! cdp_prep    80 each (rra-major): scratch[10] (value f64, unkn_pdp u64, ..., primary f64 @64,
//!                 secondary f64 @72)
//! rra_ptr      8 each: cur_row u64
//! data       row_cnt * ds_cnt f64 per RRA, RRA after RRA, row-major
//! ```
//!
//! Holt-Winters archives carry their parameters (`par[1..=5]`) and CDP slots 2-7; a set of
//! them update could not work on ([`Schema::check_hw`]) and file versions before 0003 are
//! refused.

use crate::rows::Rows;
use crate::schema::{Cf, DsDef, DsType, RraDef, Schema};
use crate::state::{CdpPrep, PdpPrep, RraData, Rrd};
use crate::RrdError;

const COOKIE: &[u8; 4] = b"RRD\0";
const FLOAT_COOKIE: f64 = 8.642135E130;

const UNIVAL: usize = 8;
const PAR_LEN: usize = 10 * UNIVAL;

const STAT_COOKIE: usize = 0;
const STAT_VERSION: usize = STAT_COOKIE + 4;
const STAT_FLOAT_COOKIE: usize = 16;
const STAT_DS_CNT: usize = STAT_FLOAT_COOKIE + 8;
const STAT_RRA_CNT: usize = STAT_DS_CNT + 8;
const STAT_PDP_STEP: usize = STAT_RRA_CNT + 8;
const STAT_PAR: usize = STAT_PDP_STEP + 8;
const STAT_SIZE: usize = STAT_PAR + PAR_LEN;

const NAME_LEN: usize = 20;
const DS_NAME: usize = 0;
const DS_TYPE: usize = DS_NAME + NAME_LEN;
const DS_PAR: usize = DS_TYPE + NAME_LEN;
const DS_SIZE: usize = DS_PAR + PAR_LEN;

const RRA_CF: usize = 0;
const RRA_ROW_CNT: usize = 24;
const RRA_PDP_CNT: usize = RRA_ROW_CNT + 8;
const RRA_PAR: usize = RRA_PDP_CNT + 8;
const RRA_SIZE: usize = RRA_PAR + PAR_LEN;

const LIVE_SIZE: usize = 16;

const LAST_DS_LEN: usize = 30;
const PDP_SCRATCH: usize = 32;
const PDP_SIZE: usize = PDP_SCRATCH + PAR_LEN;

const CDP_VAL: usize = 0;
const CDP_UNKN: usize = UNIVAL;
const CDP_PRIMARY: usize = 8 * UNIVAL;
const CDP_SECONDARY: usize = 9 * UNIVAL;
const CDP_SIZE: usize = PAR_LEN;

const PTR_SIZE: usize = 8;

/// COMPUTE RPN op codes as stored in `.rrd` files (found by creating files with each
/// operator and reading the bytes back). 0 = number, 1 = DS variable, 0x20 = end.
const RPN_NUMBER: u8 = 0;
const RPN_VARIABLE: u8 = 1;
const RPN_END: u8 = 0x20;
const RPN_OPS: &[(u8, &str)] = &[
    (0x02, "INF"),
    (0x04, "NEGINF"),
    (0x05, "UNKN"),
    (0x06, "NOW"),
    (0x08, "+"),
    (0x09, "%"),
    (0x0a, "-"),
    (0x0b, "*"),
    (0x0c, "/"),
    (0x0d, "SIN"),
    (0x0e, "DUP"),
    (0x0f, "EXC"),
    (0x10, "POP"),
    (0x11, "COS"),
    (0x12, "LOG"),
    (0x13, "EXP"),
    (0x14, "LT"),
    (0x15, "LE"),
    (0x16, "GT"),
    (0x17, "GE"),
    (0x18, "EQ"),
    (0x19, "IF"),
    (0x1a, "MIN"),
    (0x1b, "MAX"),
    (0x1c, "LIMIT"),
    (0x1d, "FLOOR"),
    (0x1e, "CEIL"),
    (0x1f, "UN"),
    (0x22, "NE"),
    (0x23, "ISINF"),
    (0x26, "ATAN"),
    (0x27, "SQRT"),
    (0x28, "SORT"),
    (0x29, "REV"),
    (0x2c, "ATAN2"),
    (0x2d, "RAD2DEG"),
    (0x2e, "DEG2RAD"),
    (0x31, "AVG"),
    (0x32, "ABS"),
    (0x33, "ADDNAN"),
    (0x34, "MINNAN"),
    (0x35, "MAXNAN"),
    (0x36, "MEDIAN"),
    (0x41, "SMIN"),
    (0x43, "STDEV"),
    (0x44, "PERCENT"),
    (0x45, "POW"),
];

struct Reader<'a> {
    b: &'a [u8],
}

impl Reader<'_> {
    fn slice(&self, off: usize, len: usize) -> Result<&[u8], RrdError> {
        off.checked_add(len)
            .and_then(|end| self.b.get(off..end))
            .ok_or_else(|| RrdError::new(format!("short read at offset {off}: file is truncated")))
    }
    fn u64(&self, off: usize) -> Result<u64, RrdError> {
        let s = self.slice(off, 8)?;
        Ok(u64::from_le_bytes(s.try_into().expect("8 bytes")))
    }
    fn i64(&self, off: usize) -> Result<i64, RrdError> {
        Ok(self.u64(off)? as i64)
    }
    fn f64(&self, off: usize) -> Result<f64, RrdError> {
        Ok(f64::from_bits(self.u64(off)?))
    }
    fn str(&self, off: usize, len: usize) -> Result<String, RrdError> {
        let s = self.slice(off, len)?;
        let end = s.iter().position(|&c| c == 0).unwrap_or(len);
        Ok(String::from_utf8_lossy(&s[..end]).into_owned())
    }

    /// A name field of `NAME_LEN` bytes (a data source's name or type, a consolidation
    /// function): text ended by a NUL within the field, as rrdtool writes it. Anything else
    /// is damage, and taking it would give a name that does not fit the field again.
    fn name(&self, off: usize) -> Result<String, RrdError> {
        let s = self.slice(off, NAME_LEN)?;
        let end = s
            .iter()
            .position(|&c| c == 0)
            .ok_or_else(|| RrdError::new("corrupt RRD header: a name without its end"))?;
        String::from_utf8(s[..end].to_vec())
            .map_err(|_| RrdError::new("corrupt RRD header: a name that is not text"))
    }
}

/// Size of the header (everything before the data) for a schema: `info`'s `header_size`.
pub fn header_size(ds_cnt: usize, rra_cnt: usize) -> usize {
    STAT_SIZE
        + ds_cnt * DS_SIZE
        + rra_cnt * RRA_SIZE
        + LIVE_SIZE
        + ds_cnt * PDP_SIZE
        + rra_cnt * ds_cnt * CDP_SIZE
        + rra_cnt * PTR_SIZE
}

/// What the start of a `.rrd` file says without reading its rows: the DS and RRA counts and
/// the last update (seconds), from the first [`peek_len`] bytes. Used to tell a stale copy of
/// a series from a file someone changed, without reading whole files.
pub fn peek(bytes: &[u8]) -> Result<(usize, usize, i64), RrdError> {
    let r = Reader { b: bytes };
    if r.slice(STAT_COOKIE, 4)? != COOKIE {
        return Err(RrdError::new("not an RRD file"));
    }
    let ds_cnt = r.u64(STAT_DS_CNT)? as usize;
    let rra_cnt = r.u64(STAT_RRA_CNT)? as usize;
    if ds_cnt == 0 || rra_cnt == 0 || ds_cnt > 65_536 || rra_cnt > 65_536 {
        return Err(RrdError::new("corrupt RRD header"));
    }
    let last = r.i64(STAT_SIZE + ds_cnt * DS_SIZE + rra_cnt * RRA_SIZE)?;
    Ok((ds_cnt, rra_cnt, last))
}

/// How many bytes [`peek`] needs for a file whose stat header (the first 128 bytes) is `head`.
pub fn peek_len(head: &[u8]) -> usize {
    let r = Reader { b: head };
    let n = |off| r.u64(off).map_or(0, |v| v.min(65_536) as usize);
    STAT_SIZE + n(STAT_DS_CNT) * DS_SIZE + n(STAT_RRA_CNT) * RRA_SIZE + LIVE_SIZE
}

/// Parse a `.rrd` file.
pub fn read(bytes: &[u8]) -> Result<Rrd, RrdError> {
    let r = Reader { b: bytes };
    if r.slice(STAT_COOKIE, 4)? != COOKIE {
        return Err(RrdError::new("not an RRD file"));
    }
    let version = r.str(STAT_VERSION, 5)?;
    if !matches!(version.as_str(), "0003" | "0004" | "0005") {
        return Err(RrdError::new(format!("unsupported RRD version {version}")));
    }
    if r.f64(STAT_FLOAT_COOKIE)? != FLOAT_COOKIE {
        return Err(RrdError::new(
            "This RRD was created on another architecture",
        ));
    }
    let ds_cnt = r.u64(STAT_DS_CNT)? as usize;
    let rra_cnt = r.u64(STAT_RRA_CNT)? as usize;
    let step = r.u64(STAT_PDP_STEP)?;
    if ds_cnt == 0 || rra_cnt == 0 || step == 0 || ds_cnt > 65_536 || rra_cnt > 65_536 {
        return Err(RrdError::new("corrupt RRD header"));
    }
    let mut off = STAT_SIZE;
    let mut names = Vec::with_capacity(ds_cnt);
    let mut ds = Vec::with_capacity(ds_cnt);
    for _ in 0..ds_cnt {
        let name = r.name(off + DS_NAME)?;
        let type_name = r.name(off + DS_TYPE)?;
        let kind = DsType::from_name(&type_name)
            .ok_or_else(|| RrdError::new(format!("unknown data source type '{type_name}'")))?;
        names.push(name.clone());
        let par = off + DS_PAR;
        let def = if kind == DsType::Compute {
            DsDef {
                name,
                kind,
                heartbeat: 0,
                min: f64::NAN,
                max: f64::NAN,
                rpn: Some(read_rpn(&r, par, &names)?),
            }
        } else {
            DsDef {
                name,
                kind,
                heartbeat: r.u64(par)?,
                min: r.f64(par + UNIVAL)?,
                max: r.f64(par + 2 * UNIVAL)?,
                rpn: None,
            }
        };
        ds.push(def);
        off += DS_SIZE;
    }
    // COMPUTE variables may only name earlier DS, so names resolved in order are complete.
    let mut rra = Vec::with_capacity(rra_cnt);
    for _ in 0..rra_cnt {
        let cf_name = r.name(off + RRA_CF)?;
        let cf = Cf::from_name(&cf_name)
            .ok_or_else(|| RrdError::new(format!("unknown consolidation function '{cf_name}'")))?;
        let row_cnt = r.u64(off + RRA_ROW_CNT)?;
        let pdp_cnt = r.u64(off + RRA_PDP_CNT)?;
        if row_cnt == 0 || pdp_cnt == 0 {
            return Err(RrdError::new("corrupt RRA definition"));
        }
        // The Holt-Winters parameters (rrdtool's par[1..=5]); nothing for the others.
        let mut par = [0; 5];
        if cf.is_hw() {
            for (k, p) in par.iter_mut().enumerate() {
                *p = r.u64(off + RRA_PAR + 8 * (k + 1))?;
            }
            // A seasonal archive's par[5] is ringlet's own mark (its version is the file's).
            if matches!(cf, Cf::Seasonal | Cf::DevSeasonal) {
                par[4] = 0;
            }
        }
        rra.push(RraDef {
            cf,
            xff: r.f64(off + RRA_PAR)?,
            pdp_cnt,
            row_cnt,
            par,
        });
        off += RRA_SIZE;
    }
    let last_up = r.i64(off)?;
    let last_up_usec = r.i64(off + 8)?;
    off += LIVE_SIZE;
    let mut pdp = Vec::with_capacity(ds_cnt);
    for _ in 0..ds_cnt {
        pdp.push(PdpPrep {
            last_ds: compact_str::CompactString::new(r.str(off, LAST_DS_LEN)?),
            unkn_sec_cnt: r.u64(off + PDP_SCRATCH)?,
            val: r.f64(off + PDP_SCRATCH + UNIVAL)?,
        });
        off += PDP_SIZE;
    }
    // The section is in the file before room is made for it (up to 4 G entries otherwise).
    r.slice(off, rra_cnt * ds_cnt * CDP_SIZE)?;
    let mut cdp = Vec::with_capacity(rra_cnt * ds_cnt);
    let any_hw = rra.iter().any(|r| r.cf.is_hw());
    let mut hw = Vec::new();
    for _ in 0..rra_cnt * ds_cnt {
        if any_hw {
            let mut slots = [0u64; 6];
            for (j, s) in slots.iter_mut().enumerate() {
                *s = r.u64(off + (2 + j) * UNIVAL)?;
            }
            hw.push(slots);
        }
        cdp.push(CdpPrep {
            val: r.f64(off + CDP_VAL)?,
            unkn_pdp_cnt: r.u64(off + CDP_UNKN)?,
            primary: r.f64(off + CDP_PRIMARY)?,
            secondary: r.f64(off + CDP_SECONDARY)?,
        });
        off += CDP_SIZE;
    }
    let mut ptrs = Vec::with_capacity(rra_cnt);
    for _ in 0..rra_cnt {
        ptrs.push(r.u64(off)?);
        off += PTR_SIZE;
    }
    let mut schema = Schema { step, ds, rra };
    keep_version(&mut schema, &version);
    schema.check_hw().map_err(RrdError::new)?;
    if !schema.spans_fit() {
        return Err(RrdError::new(
            "corrupt RRA definition: an archive spans more time than can be counted",
        ));
    }
    let mut data = Vec::with_capacity(rra_cnt);
    for (def, cur_row) in schema.rra.iter().zip(ptrs) {
        // A row count from the file: its bytes counted without overflow, then looked for.
        let len = usize::try_from(def.row_cnt)
            .ok()
            .and_then(|rows| rows.checked_mul(ds_cnt)?.checked_mul(8))
            .ok_or_else(|| {
                RrdError::new(format!(
                    "corrupt RRA definition: {} rows of {ds_cnt} values do not fit in a file",
                    def.row_cnt
                ))
            })?;
        let bytes = r.slice(off, len)?;
        let vals: Vec<f64> = bytes
            .chunks_exact(8)
            .map(|c| f64::from_bits(u64::from_le_bytes(c.try_into().expect("8 bytes"))))
            .collect();
        let rows = Rows::from_values(ds_cnt, &vals);
        if cur_row >= def.row_cnt {
            return Err(RrdError::new("corrupt RRA pointer"));
        }
        data.push(RraData { cur_row, rows });
        off += len;
    }
    Ok(Rrd {
        schema: schema.into(),
        last_up,
        last_up_usec,
        pdp,
        cdp,
        rra: data,
        hw: any_hw.then(|| {
            Box::new(crate::HwState {
                scratch: hw,
                smooth_due: false,
            })
        }),
    })
}

fn read_rpn(r: &Reader, par: usize, names: &[String]) -> Result<String, RrdError> {
    let mut out: Vec<String> = Vec::new();
    for i in 0..PAR_LEN / 4 {
        let tok = r.slice(par + 4 * i, 4)?;
        let op = tok[0];
        let val = i16::from_le_bytes([tok[2], tok[3]]);
        match op {
            RPN_END => return Ok(out.join(",")),
            RPN_NUMBER => out.push(val.to_string()),
            RPN_VARIABLE => out.push(
                names
                    .get(val as usize)
                    .cloned()
                    .ok_or_else(|| RrdError::new("COMPUTE refers to an unknown data source"))?,
            ),
            _ => out.push(
                RPN_OPS
                    .iter()
                    .find(|(c, _)| *c == op)
                    .map(|(_, n)| n.to_string())
                    .ok_or_else(|| {
                        RrdError::new(format!("unsupported COMPUTE operator code {op}"))
                    })?,
            ),
        }
    }
    Err(RrdError::new("COMPUTE expression is not terminated"))
}

fn write_rpn(out: &mut [u8], expr: &str, names: &[&str]) -> Result<(), RrdError> {
    let mut toks: Vec<(u8, i16)> = Vec::new();
    for t in expr.split(',') {
        if let Some(i) = names.iter().position(|n| *n == t) {
            toks.push((RPN_VARIABLE, i as i16));
        } else if let Some((c, _)) = RPN_OPS.iter().find(|(_, n)| *n == t) {
            toks.push((*c, 0));
        } else if let Ok(v) = t.parse::<i16>() {
            toks.push((RPN_NUMBER, v));
        } else {
            return Err(RrdError::new(format!("cannot store COMPUTE token '{t}'")));
        }
    }
    toks.push((RPN_END, 0));
    if toks.len() * 4 > out.len() {
        return Err(RrdError::new(
            "COMPUTE expression too long for the .rrd format",
        ));
    }
    for (i, (op, val)) in toks.into_iter().enumerate() {
        out[4 * i] = op;
        out[4 * i + 2..4 * i + 4].copy_from_slice(&val.to_le_bytes());
    }
    Ok(())
}

/// rrdtool's file version for a schema: 0005 when a DCOUNTER or DDERIVE exists; else 0004
/// with an MHWPREDICT, a seasonal archive's own smoothing window (one other than the
/// default 0.05 and the 0 of those rrdtool adds itself) or one whose definition gave
/// `smoothing-window=` ([`crate::schema::HwParams::asks_v4`]); else 0003.
pub fn version(schema: &Schema) -> &'static str {
    use crate::schema::Cf;
    if schema
        .ds
        .iter()
        .any(|d| matches!(d.kind, DsType::DCounter | DsType::DDerive))
    {
        "0005"
    } else if schema.rra.iter().any(|r| {
        r.cf == Cf::MhwPredict
            || (matches!(r.cf, Cf::Seasonal | Cf::DevSeasonal)
                && (r.hw().asks_v4 || ![0.0, 0.05].contains(&r.hw().smoothing_window)))
    }) {
        "0004"
    } else {
        "0003"
    }
}

/// A schema read from a file (or dump) of `version`: a 0004 or later one whose archives do
/// not say so by themselves had a seasonal archive's `smoothing-window=` (the version
/// changes how the smoother reads the window, so it is kept).
pub fn keep_version(schema: &mut Schema, file_version: &str) {
    if file_version < "0004" || version(schema) != "0003" {
        return;
    }
    if let Some(r) = schema
        .rra
        .iter_mut()
        .find(|r| matches!(r.cf, Cf::Seasonal | Cf::DevSeasonal))
    {
        let mut p = r.hw();
        p.asks_v4 = true;
        r.set_hw(&p);
    }
}

/// Turn the rows of each archive of an `.rrd` file so that its current row is at
/// `to(row_cnt)`, the rows keeping their order around the ring (what the file holds does not
/// change, only where: rrdtool's create and restore start each archive at a random row,
/// ringlet's create at row 0 and restore at the last; tests compare files and behaviour that
/// depends on the place, such as Holt-Winters' smoothing row, with them turned alike).
pub fn move_current_rows(bytes: &mut [u8], to: impl Fn(u64) -> u64) -> Result<(), RrdError> {
    let rrd = read(bytes)?;
    let (ds_cnt, rra_cnt) = (rrd.schema.ds.len(), rrd.schema.rra.len());
    let end = header_size(ds_cnt, rra_cnt);
    let mut at = end;
    for (k, (def, data)) in rrd.schema.rra.iter().zip(&rrd.rra).enumerate() {
        let row = 8 * ds_cnt;
        let len = def.row_cnt as usize * row;
        let want = to(def.row_cnt) % def.row_cnt;
        let by = (data.cur_row + def.row_cnt - want) % def.row_cnt;
        bytes[at..at + len].rotate_left(by as usize * row);
        let ptr = end - 8 * (rra_cnt - k);
        bytes[ptr..ptr + 8].copy_from_slice(&want.to_le_bytes());
        at += len;
    }
    Ok(())
}

fn put(buf: &mut [u8], off: usize, bytes: &[u8]) {
    buf[off..off + bytes.len()].copy_from_slice(bytes);
}

/// Put `name` in a name field, which it must fit with its NUL (never into the next field).
fn put_name(buf: &mut [u8], off: usize, name: &str) -> Result<(), RrdError> {
    if name.len() >= NAME_LEN {
        return Err(RrdError::new(format!(
            "name '{name}' is longer than an RRD file holds ({} bytes)",
            NAME_LEN - 1
        )));
    }
    put(buf, off, name.as_bytes());
    Ok(())
}

/// Serialise an RRD as rrdtool 1.7.2 would store it.
/// The length of the file [`write`] makes for `schema`: its header and every row.
pub fn file_len(schema: &Schema) -> u64 {
    let ds_cnt = schema.ds.len();
    let rows: u64 = schema.rra.iter().map(|r| r.row_cnt).sum();
    header_size(ds_cnt, schema.rra.len()) as u64 + rows * ds_cnt as u64 * 8
}

pub fn write(rrd: &Rrd) -> Result<Vec<u8>, RrdError> {
    let s = &rrd.schema;
    let (ds_cnt, rra_cnt) = (s.ds.len(), s.rra.len());
    let data_len: usize = s.rra.iter().map(|r| r.row_cnt as usize * ds_cnt * 8).sum();
    let mut b = vec![0u8; header_size(ds_cnt, rra_cnt) + data_len];
    put(&mut b, STAT_COOKIE, COOKIE);
    put(&mut b, STAT_VERSION, version(s).as_bytes());
    put(&mut b, STAT_FLOAT_COOKIE, &FLOAT_COOKIE.to_le_bytes());
    put(&mut b, STAT_DS_CNT, &(ds_cnt as u64).to_le_bytes());
    put(&mut b, STAT_RRA_CNT, &(rra_cnt as u64).to_le_bytes());
    put(&mut b, STAT_PDP_STEP, &s.step.to_le_bytes());
    let mut off = STAT_SIZE;
    let names: Vec<&str> = s.ds.iter().map(|d| d.name.as_str()).collect();
    for d in &s.ds {
        put_name(&mut b, off + DS_NAME, &d.name)?;
        put_name(&mut b, off + DS_TYPE, d.kind.name())?;
        let par = off + DS_PAR;
        if let Some(expr) = &d.rpn {
            write_rpn(&mut b[par..par + PAR_LEN], expr, &names)?;
        } else {
            put(&mut b, par, &d.heartbeat.to_le_bytes());
            put(&mut b, par + UNIVAL, &d.min.to_le_bytes());
            put(&mut b, par + 2 * UNIVAL, &d.max.to_le_bytes());
        }
        off += DS_SIZE;
    }
    for r in &s.rra {
        put_name(&mut b, off + RRA_CF, r.cf.name())?;
        put(&mut b, off + RRA_ROW_CNT, &r.row_cnt.to_le_bytes());
        put(&mut b, off + RRA_PDP_CNT, &r.pdp_cnt.to_le_bytes());
        put(&mut b, off + RRA_PAR, &r.xff.to_le_bytes());
        for (k, p) in r.par.iter().enumerate() {
            // (A seasonal archive's par[5] is ringlet's mark of the version: 0 in a file.)
            let p = if k == 4 && matches!(r.cf, Cf::Seasonal | Cf::DevSeasonal) {
                0
            } else {
                *p
            };
            put(&mut b, off + RRA_PAR + 8 * (k + 1), &p.to_le_bytes());
        }
        off += RRA_SIZE;
    }
    put(&mut b, off, &rrd.last_up.to_le_bytes());
    put(&mut b, off + 8, &rrd.last_up_usec.to_le_bytes());
    off += LIVE_SIZE;
    for p in &rrd.pdp {
        let last = p.last_ds.as_bytes();
        put(&mut b, off, &last[..last.len().min(LAST_DS_LEN - 1)]);
        put(&mut b, off + PDP_SCRATCH, &p.unkn_sec_cnt.to_le_bytes());
        put(&mut b, off + PDP_SCRATCH + UNIVAL, &p.val.to_le_bytes());
        off += PDP_SIZE;
    }
    for (k, c) in rrd.cdp.iter().enumerate() {
        put(&mut b, off + CDP_VAL, &c.val.to_le_bytes());
        put(&mut b, off + CDP_UNKN, &c.unkn_pdp_cnt.to_le_bytes());
        put(&mut b, off + CDP_PRIMARY, &c.primary.to_le_bytes());
        put(&mut b, off + CDP_SECONDARY, &c.secondary.to_le_bytes());
        // The Holt-Winters slots 2-7.
        if let Some(hw) = &rrd.hw {
            for (j, s) in hw.scratch[k].iter().enumerate() {
                put(&mut b, off + (2 + j) * UNIVAL, &s.to_le_bytes());
            }
        }
        off += CDP_SIZE;
    }
    for d in &rrd.rra {
        put(&mut b, off, &d.cur_row.to_le_bytes());
        off += PTR_SIZE;
    }
    for d in &rrd.rra {
        for v in d.rows.to_vec() {
            put(&mut b, off, &v.to_le_bytes());
            off += 8;
        }
    }
    Ok(b)
}
