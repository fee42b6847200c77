//! One `Rrd` (schema, live state, every archive row) as bytes: the unit of checkpoints and of
//! the log's create records.
//!
//! A straight field-by-field dump in the order of docs/FORMAT.md ("RRD image"): fixed-width
//! little-endian integers and IEEE-754 bit patterns (so NaN rows and `-0.0` survive), varint
//! counts and lengths; archive rows in blocks (literal, repeated, short decimals), so
//! unknown rows and rows of decimal data cost little. Decoding validates every count against the bytes left before it
//! allocates, and every enum code.

use crate::bytes::{ByteReader, ByteWriter, DecodeError};
use crate::rows::{encode_rows, MAX_VALUES};
use rrd::rows::Part;
use rrd::{CdpPrep, Cf, DsDef, DsType, PdpPrep, Rows, RraData, RraDef, Rrd, Schema};

fn ds_code(k: DsType) -> u8 {
    match k {
        DsType::Gauge => 1,
        DsType::Counter => 2,
        DsType::Derive => 3,
        DsType::Absolute => 4,
        DsType::DCounter => 5,
        DsType::DDerive => 6,
        DsType::Compute => 7,
    }
}

fn ds_kind(c: u8) -> Option<DsType> {
    Some(match c {
        1 => DsType::Gauge,
        2 => DsType::Counter,
        3 => DsType::Derive,
        4 => DsType::Absolute,
        5 => DsType::DCounter,
        6 => DsType::DDerive,
        7 => DsType::Compute,
        _ => return None,
    })
}

fn cf_code(c: Cf) -> u8 {
    match c {
        Cf::Average => 1,
        Cf::Min => 2,
        Cf::Max => 3,
        Cf::Last => 4,
        Cf::HwPredict => 5,
        Cf::MhwPredict => 6,
        Cf::Seasonal => 7,
        Cf::DevSeasonal => 8,
        Cf::DevPredict => 9,
        Cf::Failures => 10,
    }
}

fn cf_kind(c: u8) -> Option<Cf> {
    Some(match c {
        1 => Cf::Average,
        2 => Cf::Min,
        3 => Cf::Max,
        4 => Cf::Last,
        5 => Cf::HwPredict,
        6 => Cf::MhwPredict,
        7 => Cf::Seasonal,
        8 => Cf::DevSeasonal,
        9 => Cf::DevPredict,
        10 => Cf::Failures,
        _ => return None,
    })
}

/// Append the image of `rrd`.
pub fn encode_rrd(w: &mut ByteWriter, rrd: &Rrd) {
    encode_head(w, rrd);
    for r in &rrd.rra {
        w.u64(r.cur_row);
        encode_rows(w, &r.rows);
    }
}

/// Schema and live state: the image up to the archives.
fn encode_head(w: &mut ByteWriter, rrd: &Rrd) {
    encode_schema(w, &rrd.schema);
    encode_live(w, rrd);
}

/// The schema: the head's first part.
fn encode_schema(w: &mut ByteWriter, s: &Schema) {
    w.u64(s.step);
    w.varint(s.ds.len() as u64);
    for d in &s.ds {
        w.str(&d.name);
        w.u8(ds_code(d.kind));
        w.u64(d.heartbeat);
        w.f64(d.min);
        w.f64(d.max);
        match &d.rpn {
            Some(r) => {
                w.u8(1);
                w.str(r);
            }
            None => w.u8(0),
        }
    }
    w.varint(s.rra.len() as u64);
    for r in &s.rra {
        w.u8(cf_code(r.cf));
        w.f64(r.xff);
        w.u64(r.pdp_cnt);
        w.u64(r.row_cnt);
        // A Holt-Winters archive's parameters (rrdtool's slots, as bits).
        if r.cf.is_hw() {
            for p in r.par {
                w.u64(p);
            }
        }
    }
}

/// The live state (last update, PDP and CDP preparation): the head after the schema.
fn encode_live(w: &mut ByteWriter, rrd: &Rrd) {
    w.i64(rrd.last_up);
    w.i64(rrd.last_up_usec);
    for p in &rrd.pdp {
        w.str(&p.last_ds);
        w.u64(p.unkn_sec_cnt);
        w.f64(p.val);
    }
    for c in &rrd.cdp {
        w.f64(c.val);
        w.u64(c.unkn_pdp_cnt);
        w.f64(c.primary);
        w.f64(c.secondary);
    }
    // The Holt-Winters archives' six further CDP slots, archive by archive, DS by DS.
    if let Some(hw) = &rrd.hw {
        let ds_cnt = rrd.schema.ds.len();
        for (i, def) in rrd.schema.rra.iter().enumerate() {
            if def.cf.is_hw() {
                for slots in &hw.scratch[i * ds_cnt..(i + 1) * ds_cnt] {
                    for s in slots {
                        w.u64(*s);
                    }
                }
            }
        }
    }
}

/// One chunk of archive rows in a chunked image (checkpoint versions 3 and 4).
#[derive(Debug, Clone, PartialEq)]
pub enum ChunkEntry {
    /// In this segment ([`crate::segment`]); version 3 images say only "in the segments the
    /// checkpoint names", version 4 images name it in the archive's chunk table.
    Stored(u32),
    /// Every value has this bit pattern.
    Fill(u64),
    /// Packed values ([`rrd::rows::encode_values`]), here.
    Inline(Vec<u8>),
}

const CHUNK_SEGMENTS: u64 = 0;
const CHUNK_FILL: u64 = 1;
const CHUNK_INLINE: u64 = 2;

/// The live state of `rrd` as its image holds it (the part of the head after the schema):
/// what a snapshot keeps of a series besides its shared schema, completed by
/// [`encode_head_chunked`].
pub fn live_bytes(rrd: &Rrd) -> Vec<u8> {
    let mut w = ByteWriter::new();
    encode_live(&mut w, rrd);
    w.buf
}

/// Append a chunked image: the head (`schema`, then `live`: [`live_bytes`]; the head of
/// [`encode_rrd`]), then per archive its `cur_row`, (version 4: `tables` Some) `tables[a]`
/// (varint: 0, no chunk is stored; `k`, the checkpoint's chunk table `k - 1` names the
/// segment of each stored chunk), and its chunks (`chunks[a]`, one entry per chunk) in runs,
/// each a varint header `n << 2 | kind`: kind 0, `n` chunks stored in segments; kind 1, `n`
/// chunks of one repeated f64 (its 8 bytes follow); kind 2, `n` chunks each given inline as a
/// varint length and packed values. Version 3 (`tables` None) named no table.
pub fn encode_head_chunked(
    w: &mut ByteWriter,
    schema: &Schema,
    live: &[u8],
    cur_rows: &[u64],
    chunks: &[Vec<ChunkEntry>],
    tables: Option<&[u64]>,
) {
    encode_schema(w, schema);
    w.buf.extend_from_slice(live);
    encode_archives(w, cur_rows.iter().copied(), chunks, tables);
}

/// The schema's bytes as a chunked image begins with them (version 5 keeps each distinct
/// schema once, in the checkpoint's meta).
pub fn schema_bytes(schema: &Schema) -> Vec<u8> {
    let mut w = ByteWriter::new();
    encode_schema(&mut w, schema);
    w.buf
}

/// [`encode_head_chunked`] with the schema named by its place in the checkpoint's table of
/// schemas (`schema_ref`: table entry `schema_ref - 1`; version 5) instead of its bytes.
pub fn encode_ref_chunked(
    w: &mut ByteWriter,
    schema_ref: u64,
    live: &[u8],
    cur_rows: &[u64],
    chunks: &[Vec<ChunkEntry>],
    tables: &[u64],
) {
    w.varint(schema_ref);
    w.buf.extend_from_slice(live);
    encode_archives(w, cur_rows.iter().copied(), chunks, Some(tables));
}

/// Read a schema written by [`schema_bytes`] (the whole of `b`).
pub fn decode_schema_bytes(b: &[u8]) -> Result<Schema, DecodeError> {
    let mut r = ByteReader::new(b);
    let s = decode_schema(&mut r)?;
    r.finish()?;
    Ok(s)
}

/// Each archive's `cur_row`, chunk table (version 4: `tables`) and chunk entries.
fn encode_archives(
    w: &mut ByteWriter,
    cur_rows: impl Iterator<Item = u64>,
    chunks: &[Vec<ChunkEntry>],
    tables: Option<&[u64]>,
) {
    for (a, (cur_row, list)) in cur_rows.zip(chunks).enumerate() {
        w.u64(cur_row);
        if let Some(t) = tables {
            w.varint(t[a]);
        }
        let mut i = 0;
        while i < list.len() {
            let same = |e: &ChunkEntry| match (&list[i], e) {
                (ChunkEntry::Stored(_), ChunkEntry::Stored(_)) => true,
                (ChunkEntry::Fill(a), ChunkEntry::Fill(b)) => a == b,
                (ChunkEntry::Inline(_), ChunkEntry::Inline(_)) => true,
                _ => false,
            };
            let n = list[i..].iter().take_while(|e| same(e)).count();
            match &list[i] {
                ChunkEntry::Stored(_) => w.varint(((n as u64) << 2) | CHUNK_SEGMENTS),
                ChunkEntry::Fill(b) => {
                    w.varint(((n as u64) << 2) | CHUNK_FILL);
                    w.u64(*b);
                }
                ChunkEntry::Inline(_) => {
                    w.varint(((n as u64) << 2) | CHUNK_INLINE);
                    for e in &list[i..i + n] {
                        if let ChunkEntry::Inline(b) = e {
                            w.bytes(b);
                        }
                    }
                }
            }
            i += n;
        }
    }
}

/// Bytes of `rrd`'s image (for sizing).
pub fn rrd_bytes(rrd: &Rrd) -> Vec<u8> {
    let mut w = ByteWriter::new();
    encode_rrd(&mut w, rrd);
    w.buf
}

/// A count of items of at least `item` bytes each that must fit in what is left.
fn count(r: &mut ByteReader, item: usize) -> Result<usize, DecodeError> {
    let max = r.remaining() / item.max(1);
    r.len(max)
}

/// One image's bytes (as a log's create entry holds them), decoded by [`decode_rrd`], with
/// nothing left over.
pub fn decode_image(img: &[u8]) -> Result<Rrd, DecodeError> {
    let mut ir = ByteReader::new(img);
    let rrd = decode_rrd(&mut ir)?;
    ir.finish()?;
    Ok(rrd)
}

/// Read one image written by [`encode_rrd`].
pub fn decode_rrd(r: &mut ByteReader) -> Result<Rrd, DecodeError> {
    let mut rrd = decode_head(r)?;
    let ds_cnt = rrd.ds_cnt();
    for (def, data) in rrd.schema.rra.iter().zip(rrd.rra.iter_mut()) {
        data.cur_row = read_cur_row(r, def.row_cnt)?;
        let at = r.pos();
        let (rows, used) = rrd::rows::decode_rows(r.rest(), def.row_cnt, ds_cnt)
            .map_err(|e| DecodeError::new(at + e.offset, e.what))?;
        r.take(used)?;
        data.rows = rows;
    }
    Ok(rrd)
}

/// Read one image written by [`encode_head_chunked`] (`tables` None: version 3; else the
/// checkpoint's chunk tables, version 4): the RRD with its rows
/// as the entries give them. Version 3 leaves chunks "in the segments" as placeholders to
/// find there ([`rrd::Rows::place`]; [`rrd::Rows::unplaced`] names one not found); version 4
/// gives each archive its chunk table, shared ([`rrd::Rows::adopt_table`]).
pub fn decode_rrd_chunked(
    r: &mut ByteReader,
    tables: Option<&[std::sync::Arc<Vec<u32>>]>,
) -> Result<Rrd, DecodeError> {
    decode_rrd_chunked_with(r, tables, None)
}

/// [`decode_rrd_chunked`]; with `schemas` (version 5), the image names its schema by its
/// place in that table ([`encode_ref_chunked`]) and the RRD shares it.
pub fn decode_rrd_chunked_with(
    r: &mut ByteReader,
    tables: Option<&[std::sync::Arc<Vec<u32>>]>,
    schemas: Option<&[std::sync::Arc<Schema>]>,
) -> Result<Rrd, DecodeError> {
    let mut rrd = match schemas {
        None => decode_head(r)?,
        Some(all) => {
            let at = r.pos();
            let k = r.varint()?;
            let schema = k
                .checked_sub(1)
                .and_then(|i| all.get(i as usize))
                .ok_or_else(|| DecodeError::new(at, "no such schema"))?;
            decode_live(r, schema.clone())?
        }
    };
    let ds_cnt = rrd.ds_cnt();
    for (def, data) in rrd.schema.rra.iter().zip(rrd.rra.iter_mut()) {
        data.cur_row = read_cur_row(r, def.row_cnt)?;
        let table = match tables {
            None => None,
            Some(all) => {
                let at = r.pos();
                match r.varint()? {
                    0 => Some(None),
                    k => {
                        Some(Some(all.get((k - 1) as usize).ok_or_else(|| {
                            DecodeError::new(at, "no such chunk table")
                        })?))
                    }
                }
            }
        };
        let mut rows = Rows::unknown(def.row_cnt, ds_cnt);
        let want = rows.chunk_count();
        let mut c = 0;
        while c < want {
            let h = r.varint()?;
            let n = (h >> 2) as usize;
            if n == 0 || n > want - c {
                return Err(r.err("bad chunk run length"));
            }
            let at = r.pos();
            let put = |rows: &mut Rows, c: usize, p: Part| {
                rows.put(c, p).map_err(|e| DecodeError::new(at, e))
            };
            match h & 3 {
                CHUNK_SEGMENTS => rows
                    .put_run(c, n, None)
                    .map_err(|e| DecodeError::new(at, e))?,
                CHUNK_FILL => {
                    let b = r.u64()?;
                    rows.put_run(c, n, Some(b))
                        .map_err(|e| DecodeError::new(at, e))?;
                }
                CHUNK_INLINE => {
                    for i in c..c + n {
                        let bytes = r.bytes()?.to_vec();
                        put(&mut rows, i, Part::Packed(bytes, 0))?;
                    }
                }
                _ => return Err(r.err("unknown chunk kind")),
            }
            c += n;
        }
        match table {
            Some(Some(t)) => rows.adopt_table(t.clone()).map_err(|e| r.err(e))?,
            Some(None) if rows.unplaced().is_some() => {
                return Err(r.err("stored chunks without a chunk table"))
            }
            _ => {}
        }
        data.rows = rows;
    }
    Ok(rrd)
}

/// An archive's `cur_row`, checked against its size.
fn read_cur_row(r: &mut ByteReader, row_cnt: u64) -> Result<u64, DecodeError> {
    let cur_row = r.u64()?;
    if row_cnt > 0 && cur_row >= row_cnt {
        return Err(r.err("current row outside the archive"));
    }
    Ok(cur_row)
}

/// Schema and live state; archives with every row unknown.
fn decode_head(r: &mut ByteReader) -> Result<Rrd, DecodeError> {
    let schema = decode_schema(r)?;
    decode_live(r, schema.into())
}

/// A schema ([`encode_schema`]).
fn decode_schema(r: &mut ByteReader) -> Result<Schema, DecodeError> {
    let step = r.u64()?;
    if step == 0 {
        return Err(r.err("step is 0"));
    }
    // The least a DS takes: a name's length (1) with no name, its type (1), heartbeat, min
    // and max (8 each), the RPN flag (1). (34 refused every schema of many DSs with short
    // names, such as 26 DSs named a to z: a store holding one did not open.)
    let ds_cnt = count(r, 27)?;
    let mut ds = Vec::with_capacity(ds_cnt);
    for _ in 0..ds_cnt {
        let name = r.str()?;
        let kind = ds_kind(r.u8()?).ok_or_else(|| r.err("unknown DS type code"))?;
        let heartbeat = r.u64()?;
        let min = r.f64()?;
        let max = r.f64()?;
        let rpn = match r.u8()? {
            0 => None,
            1 => Some(r.str()?),
            _ => return Err(r.err("bad rpn flag")),
        };
        ds.push(DsDef {
            name,
            kind,
            heartbeat,
            min,
            max,
            rpn,
        });
    }
    let rra_cnt = count(r, 25)?;
    let mut rra = Vec::with_capacity(rra_cnt);
    for _ in 0..rra_cnt {
        let cf = cf_kind(r.u8()?).ok_or_else(|| r.err("unknown CF code"))?;
        let xff = r.f64()?;
        let pdp_cnt = r.u64()?;
        let row_cnt = r.u64()?;
        if pdp_cnt == 0 {
            return Err(r.err("RRA with 0 steps per row"));
        }
        let mut par = [0; 5];
        if cf.is_hw() {
            for p in &mut par {
                *p = r.u64()?;
            }
        }
        rra.push(RraDef {
            cf,
            xff,
            pdp_cnt,
            row_cnt,
            par,
        });
    }
    // Rows are bounded with at least one DS: a schema without any still keeps a table
    // entry per chunk of rows (found by fuzzing: 2^40 rows of no DS took 4 TB).
    if rra
        .iter()
        .any(|def| (def.row_cnt as u128) * (ds_cnt.max(1) as u128) > MAX_VALUES)
    {
        return Err(r.err("archive too large"));
    }
    let schema = Schema { step, ds, rra };
    if !schema.spans_fit() {
        return Err(r.err("an archive spans more time than can be counted"));
    }
    if schema.check_hw().is_err() {
        return Err(r.err("Holt-Winters archives that do not hang together"));
    }
    Ok(schema)
}

/// The live state ([`encode_live`]) of an RRD of `schema`; archives with every row unknown.
fn decode_live(r: &mut ByteReader, schema: std::sync::Arc<Schema>) -> Result<Rrd, DecodeError> {
    let ds_cnt = schema.ds.len();
    let rra_cnt = schema.rra.len();
    let last_up = r.i64()?;
    let last_up_usec = r.i64()?;
    let mut pdp = Vec::with_capacity(ds_cnt);
    for _ in 0..ds_cnt {
        pdp.push(PdpPrep {
            last_ds: compact_str::CompactString::new(r.str()?),
            unkn_sec_cnt: r.u64()?,
            val: r.f64()?,
        });
    }
    let cdp_cnt = rra_cnt * ds_cnt;
    if r.remaining() / 32 < cdp_cnt {
        return Err(r.err("CDP state truncated"));
    }
    let mut cdp = Vec::with_capacity(cdp_cnt);
    for _ in 0..cdp_cnt {
        cdp.push(CdpPrep {
            val: r.f64()?,
            unkn_pdp_cnt: r.u64()?,
            primary: r.f64()?,
            secondary: r.f64()?,
        });
    }
    let hw = if schema.rra.iter().any(|d| d.cf.is_hw()) {
        let mut scratch = vec![[0u64; 6]; cdp_cnt];
        for (i, def) in schema.rra.iter().enumerate() {
            if def.cf.is_hw() {
                for slots in &mut scratch[i * ds_cnt..(i + 1) * ds_cnt] {
                    for s in slots.iter_mut() {
                        *s = r.u64()?;
                    }
                }
            }
        }
        Some(Box::new(rrd::HwState {
            scratch,
            smooth_due: false,
        }))
    } else {
        None
    };
    // Rows come after the head; the callers put them in.
    let data = (0..rra_cnt)
        .map(|_| RraData {
            cur_row: 0,
            rows: Rows::filled(0, ds_cnt, rrd::num::DNAN),
        })
        .collect();
    Ok(Rrd {
        schema,
        last_up,
        last_up_usec,
        pdp,
        cdp,
        rra: data,
        hw,
    })
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// A small RRD with every DS type and CF, and some odd floats in its state.
    pub(crate) fn sample_rrd() -> Rrd {
        let kinds = [
            DsType::Gauge,
            DsType::Counter,
            DsType::Derive,
            DsType::Absolute,
            DsType::DCounter,
            DsType::DDerive,
            DsType::Compute,
        ];
        let ds = kinds
            .iter()
            .enumerate()
            .map(|(i, &kind)| DsDef {
                name: format!("ds{i}"),
                kind,
                heartbeat: 600,
                min: if i % 2 == 0 { f64::NAN } else { 0.0 },
                max: if i % 3 == 0 { f64::NAN } else { 1e9 },
                rpn: (kind == DsType::Compute).then(|| "ds0,2,*".to_string()),
            })
            .collect();
        let rra = [Cf::Average, Cf::Min, Cf::Max, Cf::Last]
            .iter()
            .enumerate()
            .map(|(i, &cf)| RraDef {
                cf,
                xff: 0.5,
                pdp_cnt: 1 + i as u64,
                row_cnt: 5 + i as u64,
                par: [0; 5],
            })
            .collect();
        let schema = Schema { step: 300, ds, rra };
        let mut rrd = Rrd::new(schema, 1_700_000_123);
        rrd.pdp[1].last_ds = "12345".into();
        rrd.pdp[2].val = -0.0;
        rrd.cdp[3].primary = f64::from_bits(0x7FF8_0000_0000_0001);
        rrd.rra[2].rows.set(4, 1.5);
        rrd.rra[2].cur_row = 3;
        rrd.last_up_usec = 250_000;
        rrd
    }

    fn bits_equal(a: &Rrd, b: &Rrd) -> bool {
        rrd_bytes(a) == rrd_bytes(b) && format!("{a:?}") == format!("{b:?}")
    }

    #[test]
    fn an_archive_of_too_many_rows_is_refused_even_without_a_ds() {
        // Found by fuzzing (fuzz/regressions/checkpoint/rows-of-no-ds): no DS made the
        // bound on rows zero, and the rows' chunk table took terabytes.
        for ds in [0, 1] {
            let mut schema = sample_rrd().schema.as_ref().clone();
            schema.ds.truncate(ds);
            schema.rra[0].row_cnt = 1 << 40;
            let e = decode_schema_bytes(&schema_bytes(&schema)).unwrap_err();
            assert!(e.to_string().contains("archive too large"), "{e}");
        }
    }

    #[test]
    fn a_schema_of_many_short_named_dss_reads_back() {
        // Found by a spill crash test: the bound on the DS count assumed 34 bytes a DS, and
        // 26 DSs named a to z (28 bytes each) made every checkpoint of the store unreadable.
        let mut schema = sample_rrd().schema.as_ref().clone();
        let one = schema.ds[0].clone();
        schema.ds = (b'a'..=b'z')
            .map(|c| DsDef {
                name: (c as char).to_string(),
                rpn: None,
                ..one.clone()
            })
            .collect();
        schema.rra.truncate(1);
        let b = schema_bytes(&schema);
        assert_eq!(schema_bytes(&decode_schema_bytes(&b).unwrap()), b);
        // An empty name is the least a DS can take: 27 bytes.
        schema.ds.iter_mut().for_each(|d| d.name.clear());
        let b = schema_bytes(&schema);
        assert_eq!(schema_bytes(&decode_schema_bytes(&b).unwrap()), b);
        // One DS fewer than the count says: refused.
        let mut cut = schema.clone();
        cut.ds.pop();
        let mut b = schema_bytes(&cut);
        b[8] += 1;
        assert!(decode_schema_bytes(&b).is_err());
    }

    /// rrdtool's set of Holt-Winters archives from index `at`: HWPREDICT, SEASONAL,
    /// DEVSEASONAL, DEVPREDICT, FAILURES, each depending on the one it must.
    fn hw_set(at: u64) -> Vec<RraDef> {
        let arch = |cf, rows, par| RraDef {
            par,
            ..RraDef::new(cf, 0.0, 1, rows)
        };
        let f = |x: f64| x.to_bits();
        vec![
            arch(Cf::HwPredict, 30, [f(0.1), f(0.0035), at + 1, f(12.0), 0]),
            arch(Cf::Seasonal, 12, [f(0.1), f(0.05), at, 9, 0]),
            arch(Cf::DevSeasonal, 12, [f(0.1), f(0.05), at, 9, 0]),
            arch(Cf::DevPredict, 30, [0, 0, at + 2, 0, 0]),
            arch(Cf::Failures, 12, [f(2.0), f(2.0), at + 2, 9, 7]),
        ]
    }

    #[test]
    fn holt_winters_parameters_read_back() {
        let mut schema = (*sample_rrd().schema).clone();
        let at = schema.rra.len();
        schema.rra.extend(hw_set(at as u64));
        let back = decode_schema_bytes(&schema_bytes(&schema)).unwrap();
        assert_eq!(schema_bytes(&back), schema_bytes(&schema));
        assert_eq!(back.rra[at..], schema.rra[at..]);
        assert_eq!(back.rra[at].hw().period, 12);
        assert_eq!(back.rra[at + 4].hw().failure_threshold, 7);
        // Archives of the four consolidating CFs keep their old bytes.
        let plain = (*sample_rrd().schema).clone();
        let n = schema_bytes(&plain).len();
        assert_eq!(schema_bytes(&schema).len(), n + 5 * (1 + 8 + 8 + 8 + 40));
        // A set that does not hang together is refused: FAILURES on the HWPREDICT.
        schema.rra[at + 4].par[2] = at as u64;
        assert!(decode_schema_bytes(&schema_bytes(&schema)).is_err());
    }

    #[test]
    fn holt_winters_state_reads_back() {
        let mut schema = (*sample_rrd().schema).clone();
        let at = schema.rra.len();
        schema.rra.extend(hw_set(at as u64));
        let mut rrd = Rrd::new(schema, 1_700_000_000);
        let k = at * rrd.ds_cnt();
        let state = rrd.hw.as_mut().expect("HW state");
        assert_eq!(state.scratch[k][4], 1, "null count starts at 1");
        state.scratch[k][0] = 42.5f64.to_bits();
        let bytes = rrd_bytes(&rrd);
        let mut r = ByteReader::new(&bytes);
        let back = decode_rrd(&mut r).unwrap();
        r.finish().unwrap();
        assert_eq!(back.hw, rrd.hw);
        assert!(bits_equal(&rrd, &back));
        // Plain RRDs carry no such state, and their bytes are as before.
        assert!(sample_rrd().hw.is_none());
    }

    #[test]
    fn image_roundtrips_bit_for_bit() {
        let rrd = sample_rrd();
        let bytes = rrd_bytes(&rrd);
        let mut r = ByteReader::new(&bytes);
        let back = decode_rrd(&mut r).unwrap();
        r.finish().unwrap();
        assert!(bits_equal(&rrd, &back));
        assert_eq!(back.pdp[2].val.to_bits(), (-0.0f64).to_bits());
    }

    #[test]
    fn runs_roundtrip_and_shrink_unknown_archives() {
        let mut rrd = sample_rrd();
        let vals = [
            1.0,
            1.0,
            2.0,
            3.0,
            3.0,
            3.0,
            3.0,
            f64::NAN,
            -0.0,
            0.0,
            0.0,
            0.0,
        ];
        std::sync::Arc::make_mut(&mut rrd.schema).rra[0].row_cnt = vals.len() as u64 * 10;
        let cycled: Vec<f64> = vals.iter().cycle().take(vals.len() * 70).copied().collect();
        rrd.rra[0].rows = Rows::from_values(rrd.ds_cnt(), &cycled);
        rrd.rra[0].cur_row = 0;
        let bytes = rrd_bytes(&rrd);
        let back = decode_rrd(&mut ByteReader::new(&bytes)).unwrap();
        assert!(bits_equal(&rrd, &back));
        let mut fresh = Rrd::new(rrd.schema.clone(), 0);
        std::sync::Arc::make_mut(&mut fresh.schema).rra[3].row_cnt = 100_000;
        fresh.rra[3].rows = Rows::from_values(fresh.ds_cnt(), &vec![f64::NAN; 700_000]);
        assert!(
            rrd_bytes(&fresh).len() < 2000,
            "{}",
            rrd_bytes(&fresh).len()
        );
    }

    #[test]
    fn decimal_blocks_roundtrip_bit_for_bit_and_shrink_decimal_rows() {
        let mut rrd = sample_rrd();
        let mut vals: Vec<f64> = (0..400)
            .map(|i| (2000 + (i * 7) % 150) as f64 / 100.0)
            .collect();
        // Values that must stay literal or break runs: not short decimals, signed zero,
        // huge, tiny, infinities, NaN payloads, and a sum with binary rounding.
        vals.extend([
            -0.0,
            0.0,
            0.1 + 0.2,
            1.0 / 3.0,
            1e300,
            -1e-300,
            f64::INFINITY,
            f64::NEG_INFINITY,
            f64::from_bits(0x7FF8_0000_0000_0001),
            9.007_199_254_740_993e15,
            -123_456.789_012,
            0.000_001,
        ]);
        vals.extend((0..50).map(|i| -(i as f64) * 0.25));
        let ds_cnt = rrd.ds_cnt();
        let rows = vals.len().div_ceil(ds_cnt);
        vals.resize(rows * ds_cnt, f64::NAN);
        std::sync::Arc::make_mut(&mut rrd.schema).rra[0].row_cnt = rows as u64;
        rrd.rra[0] = RraData {
            cur_row: 1,
            rows: Rows::from_values(ds_cnt, &vals),
        };
        let bytes = rrd_bytes(&rrd);
        let back = decode_rrd(&mut ByteReader::new(&bytes)).unwrap();
        assert!(bits_equal(&rrd, &back));
        let got: Vec<u64> = back.rra[0]
            .rows
            .to_vec()
            .iter()
            .map(|v| v.to_bits())
            .collect();
        let want: Vec<u64> = vals.iter().map(|v| v.to_bits()).collect();
        assert_eq!(got, want);
        // 400 two-decimal values: about 2 bytes each instead of 8.
        let mut plain = rrd.clone();
        // (A bit far down the mantissa: within a few units in the last place the values
        // would still be ratios of a small divisor, and packed.)
        let flipped: Vec<f64> = vals
            .iter()
            .map(|v| f64::from_bits(v.to_bits() ^ (1 << 30)))
            .collect();
        plain.rra[0].rows = Rows::from_values(ds_cnt, &flipped);
        assert!(rrd_bytes(&rrd).len() + 2000 < rrd_bytes(&plain).len());
    }

    /// The image of a tiny RRD, byte by byte as docs/FORMAT.md ("RRD image") lists it.
    #[test]
    fn image_golden_bytes() {
        let schema = Schema {
            step: 300,
            ds: vec![DsDef {
                name: "x".into(),
                kind: DsType::Gauge,
                heartbeat: 600,
                min: 0.0,
                max: f64::NAN,
                rpn: None,
            }],
            rra: vec![RraDef {
                cf: Cf::Max,
                xff: 0.5,
                pdp_cnt: 1,
                row_cnt: 4,
                par: [0; 5],
            }],
        };
        let mut rrd = Rrd::new(schema, 900);
        rrd.pdp[0] = PdpPrep {
            last_ds: "U".into(),
            unkn_sec_cnt: 0,
            val: f64::NAN,
        };
        rrd.cdp[0] = CdpPrep {
            val: f64::NAN,
            unkn_pdp_cnt: 0,
            primary: f64::NAN,
            secondary: f64::NAN,
        };
        rrd.rra[0] = RraData {
            cur_row: 0,
            rows: Rows::from_values(1, &[1.0, f64::NAN, f64::NAN, f64::NAN]),
        };
        let nan = f64::NAN.to_bits().to_le_bytes();
        let mut want: Vec<u8> = Vec::new();
        want.extend(300u64.to_le_bytes()); // step
        want.extend([1, 1, b'x', 1]); // ds_count, name, GAUGE
        want.extend(600u64.to_le_bytes());
        want.extend(0f64.to_bits().to_le_bytes());
        want.extend(nan);
        want.push(0); // no rpn
        want.extend([1, 3]); // rra_count, MAX
        want.extend(0.5f64.to_bits().to_le_bytes());
        want.extend(1u64.to_le_bytes());
        want.extend(4u64.to_le_bytes());
        want.extend(900i64.to_le_bytes()); // last_up
        want.extend(0i64.to_le_bytes()); // usec
        want.extend([1, b'U']); // last_ds
        want.extend(0u64.to_le_bytes()); // unkn_sec_cnt
        want.extend(nan); // pdp val
        want.extend(nan); // cdp val
        want.extend(0u64.to_le_bytes()); // unkn_pdp_cnt
        want.extend(nan);
        want.extend(nan);
        want.extend(0u64.to_le_bytes()); // cur_row
        want.push(1 << 2); // one literal value (too short a run for a decimal block)
        want.extend(1f64.to_bits().to_le_bytes());
        want.push((3 << 2) | 1); // NaN three times
        want.extend(nan);
        assert_eq!(rrd_bytes(&rrd), want);
    }

    #[test]
    fn every_truncation_is_an_error() {
        let bytes = rrd_bytes(&sample_rrd());
        for cut in 0..bytes.len() {
            let mut r = ByteReader::new(&bytes[..cut]);
            assert!(decode_rrd(&mut r).is_err(), "cut at {cut}");
        }
    }
}
