//! `rrdtool restore`: an RRD from rrdtool's dump XML, the inverse of [`crate::dump`].
//!
//! A small XML tokenizer ([`Lexer`]: elements, attributes skipped, comments, processing
//! instructions, DOCTYPE, CDATA, character references) feeds a reader that walks the dump's
//! fixed layout: `<rrd>` with `version`, `step`, `lastupdate`, `ds`, `rra` (`cf`,
//! `pdp_per_row`, `params`/`xff`, `cdp_prep`, `database`). The row count of each archive is
//! the number of `<row>` elements; rows are placed oldest first so that the last one is the
//! archive's row at `lastupdate` (`cur_row` = last row). Numbers are read as rrdtool reads
//! them ([`crate::num::strtod`], not correctly rounded). Errors carry rrdtool's texts,
//! including the `line N:` (and, for numbers, `ling N:`) prefixes, whose numbers come from
//! libxml2 reading ahead in 512-byte chunks. Holt-Winters archives are refused.

use crate::num::strtod;
use crate::{rpn, rrdfile};
use crate::{CdpPrep, Cf, DsDef, DsType, PdpPrep, RraData, RraDef, Rrd, RrdError, Schema};

/// One XML event.
#[derive(Debug, Clone, PartialEq)]
enum Ev {
    Start(String),
    End(String),
    Text(String),
    Eof,
}

/// XML tokenizer with well-formedness checks (tag nesting) giving libxml2's messages.
struct Lexer<'a> {
    s: &'a [u8],
    pos: usize,
    line: usize,
    /// Open elements with the line of their start tag.
    stack: Vec<(String, usize)>,
    /// A self-closing tag's pending end event.
    pending_end: Option<String>,
    /// Whether the last token returned was character data.
    last_was_text: bool,
    /// Whether the last token returned was the end of a self-closing tag.
    synth_end: bool,
    seen_root: bool,
}

fn xml_err(msg: &str) -> RrdError {
    RrdError::new(format!("error reading/parsing XML: {} ", msg))
}

impl<'a> Lexer<'a> {
    fn new(s: &'a str) -> Self {
        Lexer {
            s: s.as_bytes(),
            pos: 0,
            line: 1,
            stack: Vec::new(),
            pending_end: None,
            last_was_text: false,
            synth_end: false,
            seen_root: false,
        }
    }

    fn advance(&mut self, n: usize) {
        let end = (self.pos + n).min(self.s.len());
        self.line += self.s[self.pos..end]
            .iter()
            .filter(|&&b| b == b'\n')
            .count();
        self.pos = end;
    }

    fn starts(&self, p: &str) -> bool {
        self.s[self.pos..].starts_with(p.as_bytes())
    }

    /// Skips to just after `term`; false when the input ends first.
    fn skip_past(&mut self, term: &str) -> bool {
        match find(&self.s[self.pos..], term.as_bytes()) {
            Some(i) => {
                self.advance(i + term.len());
                true
            }
            None => {
                self.advance(self.s.len() - self.pos);
                false
            }
        }
    }

    fn premature_end(&self) -> RrdError {
        match self.stack.last() {
            Some((name, line)) => xml_err(&format!(
                "Premature end of data in tag {} line {}",
                name, line
            )),
            None if self.seen_root => xml_err("Extra content at the end of the document"),
            None => xml_err("Document is empty"),
        }
    }

    fn name(&mut self) -> String {
        let start = self.pos;
        while self.pos < self.s.len() {
            let b = self.s[self.pos];
            if b.is_ascii_whitespace() || b == b'>' || b == b'/' {
                break;
            }
            self.pos += 1;
        }
        String::from_utf8_lossy(&self.s[start..self.pos]).into_owned()
    }

    fn next(&mut self) -> Result<Ev, RrdError> {
        self.last_was_text = false;
        self.synth_end = false;
        if let Some(name) = self.pending_end.take() {
            self.synth_end = true;
            self.stack.pop();
            return Ok(Ev::End(name));
        }
        loop {
            if self.pos >= self.s.len() {
                if !self.stack.is_empty() || !self.seen_root {
                    return Err(self.premature_end());
                }
                return Ok(Ev::Eof);
            }
            if self.starts("<!--") {
                if !self.skip_past("-->") {
                    return Err(xml_err("Comment not terminated"));
                }
                continue;
            }
            if self.starts("<?") {
                if !self.skip_past("?>") {
                    return Err(self.premature_end());
                }
                continue;
            }
            if self.starts("<![CDATA[") {
                self.advance(9);
                let start = self.pos;
                if !self.skip_past("]]>") {
                    return Err(self.premature_end());
                }
                let text = String::from_utf8_lossy(&self.s[start..self.pos - 3]).into_owned();
                return Ok(Ev::Text(text));
            }
            if self.starts("<!") {
                // DOCTYPE, possibly with an internal subset in brackets.
                let mut depth = 0i32;
                while self.pos < self.s.len() {
                    let b = self.s[self.pos];
                    self.advance(1);
                    match b {
                        b'[' => depth += 1,
                        b']' => depth -= 1,
                        b'>' if depth <= 0 => break,
                        _ => {}
                    }
                }
                continue;
            }
            if self.starts("</") {
                self.advance(2);
                let name = self.name();
                if !self.skip_past(">") {
                    return Err(self.premature_end());
                }
                return match self.stack.pop() {
                    Some((open, _)) if open == name => Ok(Ev::End(name)),
                    Some((open, line)) => Err(xml_err(&format!(
                        "Opening and ending tag mismatch: {} line {} and {}",
                        open, line, name
                    ))),
                    None => Err(xml_err("Extra content at the end of the document")),
                };
            }
            if self.starts("<") {
                if self.stack.is_empty() && self.seen_root {
                    return Err(xml_err("Extra content at the end of the document"));
                }
                self.advance(1);
                let line = self.line;
                let name = self.name();
                if name.is_empty() {
                    return Err(xml_err("StartTag: invalid element name"));
                }
                // Attributes: skip to the closing '>', honouring quotes.
                let mut quote = 0u8;
                let self_closing = loop {
                    let Some(&b) = self.s.get(self.pos) else {
                        return Err(xml_err(&format!(
                            "Couldn't find end of Start Tag {} line {}",
                            name, line
                        )));
                    };
                    self.advance(1);
                    if quote != 0 {
                        if b == quote {
                            quote = 0;
                        }
                    } else if b == b'"' || b == b'\'' {
                        quote = b;
                    } else if b == b'>' {
                        break self.s[self.pos - 2] == b'/';
                    }
                };
                self.seen_root = true;
                self.stack.push((name.clone(), line));
                if self_closing {
                    self.pending_end = Some(name.clone());
                }
                return Ok(Ev::Start(name));
            }
            // Character data up to the next markup.
            let start = self.pos;
            let len = self.s[start..]
                .iter()
                .position(|&b| b == b'<')
                .unwrap_or(self.s.len() - start);
            self.advance(len);
            let raw = &self.s[start..start + len];
            if self.stack.is_empty() {
                if raw.iter().all(u8::is_ascii_whitespace) {
                    continue;
                }
                return Err(if self.seen_root {
                    xml_err("Extra content at the end of the document")
                } else {
                    xml_err("Document is empty")
                });
            }
            self.last_was_text = true;
            return Ok(Ev::Text(decode_entities(&String::from_utf8_lossy(raw))));
        }
    }
}

fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len()).position(|w| w == needle)
}

/// Replaces the predefined entities and character references.
fn decode_entities(s: &str) -> String {
    if !s.contains('&') {
        return s.to_string();
    }
    let mut out = String::with_capacity(s.len());
    let mut rest = s;
    while let Some(i) = rest.find('&') {
        out.push_str(&rest[..i]);
        rest = &rest[i..];
        let Some(semi) = rest.find(';') else { break };
        let ent = &rest[1..semi];
        let c = match ent {
            "lt" => Some('<'),
            "gt" => Some('>'),
            "amp" => Some('&'),
            "quot" => Some('"'),
            "apos" => Some('\''),
            _ => ent
                .strip_prefix("#x")
                .and_then(|h| u32::from_str_radix(h, 16).ok())
                .or_else(|| ent.strip_prefix('#').and_then(|d| d.parse().ok()))
                .and_then(char::from_u32),
        };
        match c {
            Some(c) => {
                out.push(c);
                rest = &rest[semi + 1..];
            }
            None => {
                out.push('&');
                rest = &rest[1..];
            }
        }
    }
    out.push_str(rest);
    out
}

/// The dump walker: events with whitespace-only text dropped, one event of look-ahead.
struct Reader<'a> {
    lx: Lexer<'a>,
    peeked: Option<Ev>,
}

impl<'a> Reader<'a> {
    fn peek(&mut self) -> Result<&Ev, RrdError> {
        if self.peeked.is_none() {
            let ev = loop {
                match self.lx.next()? {
                    Ev::Text(t) if t.trim().is_empty() => continue,
                    ev => break ev,
                }
            };
            self.peeked = Some(ev);
        }
        Ok(self.peeked.as_ref().expect("peeked was just filled"))
    }

    fn next(&mut self) -> Result<Ev, RrdError> {
        self.peek()?;
        Ok(self.peeked.take().expect("peeked was just filled"))
    }

    /// The line rrdtool's messages name: libxml2's reader feeds its parser 512-byte chunks
    /// and reports the line where the parsed input ends, so the line at the end of the chunk
    /// holding the token just read (a text token needs the `<` after it); at most the line
    /// after the last newline. Checked on rrdtool's messages for files of 1 to 190 KB.
    fn line(&self) -> usize {
        const CHUNK: usize = 512;
        let s = self.lx.s;
        let need = (self.lx.pos + usize::from(self.lx.last_was_text)).max(1);
        let upto = need.div_ceil(CHUNK).saturating_mul(CHUNK).min(s.len());
        1 + s[..upto].iter().filter(|&&b| b == b'\n').count()
    }

    /// rrdtool's (argument-swapped) "expected X element but found Y".
    fn expected(&self, found: &Ev, wanted: &str) -> RrdError {
        let found = match found {
            Ev::Start(n) => format!("<{}>", n),
            Ev::End(n) => format!("</{}>", n),
            Ev::Text(t) => return self.err(&format!("expected element but found text '{}'", t)),
            Ev::Eof => "end of file".to_string(),
        };
        self.err(&format!("expected {} element but found {}", found, wanted))
    }

    /// rrdtool spells the prefix of its number errors `ling N:`.
    fn ling(&self, msg: &str) -> RrdError {
        RrdError::new(format!("ling {}: {}", self.line(), msg))
    }

    fn err(&self, msg: &str) -> RrdError {
        RrdError::new(format!("line {}: {}", self.line(), msg))
    }

    fn expect_start(&mut self, name: &str) -> Result<(), RrdError> {
        match self.next()? {
            Ev::Start(n) if n == name => Ok(()),
            ev => Err(self.expected(&ev, &format!("<{}>", name))),
        }
    }

    fn expect_end(&mut self, name: &str) -> Result<(), RrdError> {
        match self.next()? {
            Ev::End(n) if n == name => Ok(()),
            ev => Err(self.expected(&ev, &format!("</{}>", name))),
        }
    }

    /// The next child's start tag, or `None` (consuming the end tag) at `</parent>`.
    fn child(&mut self, parent: &str) -> Result<Option<String>, RrdError> {
        match self.next()? {
            Ev::Start(n) => Ok(Some(n)),
            Ev::End(n) if n == parent => Ok(None),
            ev => Err(self.expected(&ev, &format!("</{}>", parent))),
        }
    }

    /// The text of the element whose start tag was just read, trimmed; consumes its end tag.
    /// Like rrdtool (libxml2's reader), the value is the next node: an element start there is
    /// `expected a value but found a <x> element`, an end tag an empty value. `<v/>` has no
    /// end node, so the node after it is looked at.
    fn text(&mut self, name: &str) -> Result<String, RrdError> {
        let t = match self.next()? {
            Ev::Text(t) => t.trim().to_string(),
            Ev::End(n) if n == name => {
                if self.lx.synth_end {
                    if let Ev::Start(m) = self.peek()?.clone() {
                        return Err(
                            self.err(&format!("expected a value but found a <{}> element", m))
                        );
                    }
                }
                return Ok(String::new());
            }
            Ev::Start(m) => {
                return Err(self.err(&format!("expected a value but found a <{}> element", m)))
            }
            ev => return Err(self.expected(&ev, "a value")),
        };
        self.expect_end(name)?;
        Ok(t)
    }

    fn double(&mut self, name: &str) -> Result<f64, RrdError> {
        let t = self.text(name)?;
        match strtod(&t) {
            None => Err(self.ling(&format!(
                "get_xml_double from '{}' Numerical result out of range",
                t
            ))),
            Some((v, n)) => {
                if n < t.len() && !t.as_bytes()[n].is_ascii_whitespace() {
                    return Err(self.ling(&format!("get_xml_double from '{}' Success", t)));
                }
                Ok(v)
            }
        }
    }

    /// An integer as `strtoll` reads it: leading digits, garbage gives 0.
    fn long(&mut self, name: &str) -> Result<i64, RrdError> {
        Ok(c_atoll(&self.text(name)?))
    }

    /// Skips the element whose start tag was just read, children included.
    fn skip(&mut self, name: &str) -> Result<(), RrdError> {
        let mut depth = 1;
        loop {
            match self.next()? {
                Ev::Start(_) => depth += 1,
                Ev::End(n) => {
                    depth -= 1;
                    if depth == 0 && n == name {
                        return Ok(());
                    }
                }
                Ev::Text(_) => {}
                Ev::Eof => return Err(self.expected(&Ev::Eof, &format!("</{}>", name))),
            }
        }
    }
}

/// `strtoll(s, NULL, 10)`: optional sign and leading digits, wrapping; no digits gives 0.
fn c_atoll(s: &str) -> i64 {
    let b = s.trim_start().as_bytes();
    let (neg, digits) = match b.first() {
        Some(b'-') => (true, &b[1..]),
        Some(b'+') => (false, &b[1..]),
        _ => (false, b),
    };
    let mut v: i64 = 0;
    for &c in digits.iter().take_while(|c| c.is_ascii_digit()) {
        v = v.saturating_mul(10).saturating_add(i64::from(c - b'0'));
    }
    if neg {
        -v
    } else {
        v
    }
}

/// Consolidation functions of the Holt-Winters family, which ringlet does not support.
const HW_CFS: [&str; 6] = [
    "HWPREDICT",
    "MHWPREDICT",
    "SEASONAL",
    "DEVSEASONAL",
    "DEVPREDICT",
    "FAILURES",
];

/// One archive as read, before it becomes schema and state.
struct RraIn {
    def: RraDef,
    cdp: Vec<CdpPrep>,
    rows: Vec<f64>,
}

/// `rrdtool restore [-r] file.xml`: the RRD described by `xml`. With `range_check`, row values
/// outside their DS's [min, max] become unknown (rrdtool's `-r`).
pub fn restore_xml(xml: &str, range_check: bool) -> Result<Rrd, RrdError> {
    let mut rd = Reader {
        lx: Lexer::new(xml),
        peeked: None,
    };
    rd.expect_start("rrd")?;
    let mut step: i64 = 300;
    let mut last_up: i64 = 0;
    let mut ds: Vec<DsDef> = Vec::new();
    let mut pdp: Vec<PdpPrep> = Vec::new();
    let mut rras: Vec<RraIn> = Vec::new();
    while let Some(tag) = rd.child("rrd")? {
        match tag.as_str() {
            "version" => {
                rd.text("version")?;
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
        data.push(RraData {
            cur_row: row_cnt as u64 - 1,
            rows,
        });
    }
    Ok(Rrd {
        schema: Schema {
            step: step as u64,
            ds,
            rra: rra_defs,
        },
        last_up,
        last_up_usec: 0,
        pdp,
        cdp,
        rra: data,
    })
}

/// `-r`: unknown for values outside [min, max] (NaN bounds do not limit).
fn clamp_rows(rows: &mut [f64], bounds: &[(f64, f64)]) {
    for row in rows.chunks_mut(bounds.len()) {
        for (v, (min, max)) in row.iter_mut().zip(bounds) {
            if (!min.is_nan() && *v < *min) || (!max.is_nan() && *v > *max) {
                *v = f64::NAN;
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
        last_ds: "U".to_string(),
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
                p.last_ds = t;
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
        },
        cdp: Vec::new(),
        rows: Vec::new(),
    };
    while let Some(tag) = rd.child("rra")? {
        match tag.as_str() {
            "cf" => {
                let t = rd.text("cf")?;
                if HW_CFS.contains(&t.as_str()) {
                    return Err(RrdError::new(format!(
                        "restore: Holt-Winters archives ({}) are not supported",
                        t
                    )));
                }
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
                        "xff" => r.def.xff = rd.double("xff")?,
                        _ => {
                            return Err(RrdError::new(format!(
                                "parse_tag_rra_params: Unknown tag: {}",
                                p
                            )))
                        }
                    }
                }
            }
            "cdp_prep" => r.cdp = read_cdp_prep(rd, ds_cnt)?,
            "database" => r.rows = read_database(rd, ds_cnt)?,
            _ => return Err(rd.err(&format!("parse_tag_rra: Unknown tag: {}", tag))),
        }
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

fn read_cdp_prep(rd: &mut Reader, ds_cnt: usize) -> Result<Vec<CdpPrep>, RrdError> {
    // Exactly one <ds> per data source, as rrdtool reads them.
    let mut out = Vec::with_capacity(ds_cnt);
    for _ in 0..ds_cnt {
        rd.expect_start("ds")?;
        let mut c = CdpPrep {
            val: f64::NAN,
            unkn_pdp_cnt: 0,
            primary: f64::NAN,
            secondary: f64::NAN,
        };
        while let Some(t) = rd.child("ds")? {
            match t.as_str() {
                "primary_value" => c.primary = rd.double("primary_value")?,
                "secondary_value" => c.secondary = rd.double("secondary_value")?,
                "value" => c.val = rd.double("value")?,
                "unknown_datapoints" => c.unkn_pdp_cnt = rd.long("unknown_datapoints")? as u64,
                _ => {
                    return Err(RrdError::new(format!(
                        "parse_tag_rra_cdp_prep: Unknown tag: {}",
                        t
                    )))
                }
            }
        }
        out.push(c);
    }
    rd.expect_end("cdp_prep")?;
    Ok(out)
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
mod tests {
    use super::*;
    use crate::dump::dump_xml;
    use std::path::{Path, PathBuf};
    use std::process::Command;

    const RRDTOOL: &str = "/usr/bin/rrdtool";

    fn rrdtool(dir: &Path, args: &[&str]) -> String {
        let out = Command::new(RRDTOOL)
            .args(args)
            .current_dir(dir)
            .env("TZ", "UTC")
            .env("LC_ALL", "C")
            .output()
            .expect("run rrdtool");
        assert!(
            out.status.success(),
            "rrdtool {:?}: {}",
            args,
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout).expect("utf-8 output")
    }

    fn tmpdir(name: &str) -> PathBuf {
        let d =
            std::env::temp_dir().join(format!("ringlet-restore-{}-{}", name, std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).expect("create temp dir");
        d
    }

    /// rrdtool create + updates -> rrdtool dump -> restore_xml -> dump_xml must give the same
    /// bytes; and rrdtool restore of our dump must dump to the same bytes again.
    fn round_trip(name: &str, create: &[&str], updates: &[String]) {
        if !Path::new(RRDTOOL).exists() {
            return;
        }
        let dir = tmpdir(name);
        let mut args = vec!["create", "a.rrd"];
        args.extend_from_slice(create);
        rrdtool(&dir, &args);
        for chunk in updates.chunks(50) {
            let mut args = vec!["update", "a.rrd"];
            args.extend(chunk.iter().map(String::as_str));
            rrdtool(&dir, &args);
        }
        for header in ["dtd", "xsd", "none"] {
            let theirs = rrdtool(&dir, &["dump", "-h", header, "a.rrd"]);
            let rrd = restore_xml(&theirs, false).expect("restore rrdtool's dump");
            let ours = dump_xml(&rrd, header);
            assert_eq!(ours, theirs, "{} with header {}", name, header);
            std::fs::write(dir.join("ours.xml"), &ours).expect("write xml");
            let _ = std::fs::remove_file(dir.join("b.rrd"));
            rrdtool(&dir, &["restore", "ours.xml", "b.rrd"]);
            assert_eq!(rrdtool(&dir, &["dump", "-h", header, "b.rrd"]), theirs);
        }
        let _ = std::fs::remove_dir_all(&dir);
    }

    /// Deterministic pseudo-random updates every `gap` seconds (xorshift). `kinds` has one
    /// letter per input DS: `g` a float, `c` a growing integer counter, `d` an integer walk
    /// that may go down, `f` a growing float counter. About one value in 13 is `U`.
    fn updates(start: i64, n: usize, gap: i64, kinds: &str, seed: u64) -> Vec<String> {
        let mut x = seed;
        let mut next = || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        let mut acc = vec![1000i64; kinds.len()];
        (1..=n)
            .map(|i| {
                let t = start + i as i64 * gap + (next() % 7) as i64;
                let mut s = t.to_string();
                for (d, k) in kinds.bytes().enumerate() {
                    let r = next();
                    s.push(':');
                    if r % 13 == 0 {
                        s.push('U');
                        continue;
                    }
                    match k {
                        b'c' => {
                            acc[d] += (r % 5000) as i64;
                            s.push_str(&acc[d].to_string());
                        }
                        b'd' => {
                            acc[d] += (r % 5000) as i64 - 2000;
                            s.push_str(&acc[d].to_string());
                        }
                        b'f' => {
                            acc[d] += (r % 5000) as i64;
                            s.push_str(&format!("{}.{}", acc[d], r % 97));
                        }
                        _ => s.push_str(&format!("{}.{}", r % 200, r % 1000)),
                    }
                }
                s
            })
            .collect()
    }

    #[test]
    fn fresh_files_of_every_ds_type_and_cf_round_trip() {
        round_trip(
            "fresh",
            &[
                "--start",
                "1000000000",
                "--step",
                "300",
                "DS:g:GAUGE:600:0:100",
                "DS:c:COUNTER:600:U:U",
                "DS:d:DERIVE:600:-10:U",
                "DS:a:ABSOLUTE:600:U:1e9",
                "DS:x:COMPUTE:g,c,+",
                "RRA:AVERAGE:0.5:1:5",
                "RRA:MAX:0.3:3:4",
                "RRA:MIN:0:2:3",
                "RRA:LAST:0.99:1:2",
            ],
            &[],
        );
        round_trip(
            "fresh-dcounter",
            &[
                "--start",
                "1000000123",
                "--step",
                "60",
                "DS:c:DCOUNTER:120:0:U",
                "DS:d:DDERIVE:120:U:U",
                "RRA:LAST:0.25:1:2",
                "RRA:MIN:0.5:5:3",
            ],
            &[],
        );
    }

    #[test]
    fn updated_files_round_trip() {
        round_trip(
            "updated",
            &[
                "--start",
                "1000000000",
                "--step",
                "300",
                "DS:g:GAUGE:600:0:150",
                "DS:c:COUNTER:600:U:U",
                "DS:x:COMPUTE:g,2,*",
                "RRA:AVERAGE:0.5:1:20",
                "RRA:MAX:0.3:3:10",
                "RRA:MIN:0.6:4:7",
                "RRA:LAST:0:1:5",
            ],
            &updates(1_000_000_000, 150, 280, "gc", 7),
        );
        round_trip(
            "updated-derive",
            &[
                "--start",
                "1100000000",
                "--step",
                "10",
                "DS:d:DERIVE:30:U:U",
                "DS:a:ABSOLUTE:30:U:U",
                "DS:dc:DCOUNTER:30:U:U",
                "RRA:AVERAGE:0.5:1:50",
                "RRA:AVERAGE:0.5:6:10",
                "RRA:MAX:0.5:7:9",
            ],
            &updates(1_100_000_000, 300, 9, "ddf", 99),
        );
    }

    // rrdtool restore -r of a dump with rows 150 (max 100), -5 (min 0), 1e30 (no max):
    // the first two become NaN, the third stays; COMPUTE rows all become NaN.
    #[test]
    fn range_check_makes_out_of_range_rows_unknown() {
        let xml = "<rrd><version>0003</version><step>300</step><lastupdate>900</lastupdate>\
            <ds><name> g </name><type> GAUGE </type><minimal_heartbeat>600</minimal_heartbeat>\
            <min>0</min><max>100</max><last_ds>U</last_ds><value>NaN</value>\
            <unknown_sec> 0 </unknown_sec></ds>\
            <ds><name> c </name><type> COUNTER </type><minimal_heartbeat>600</minimal_heartbeat>\
            <min>NaN</min><max>NaN</max><last_ds>U</last_ds><value>NaN</value>\
            <unknown_sec> 0 </unknown_sec></ds>\
            <ds><name> x </name><type> COMPUTE </type><cdef> g,2,* </cdef>\
            <last_ds>U</last_ds><value>NaN</value><unknown_sec> 0 </unknown_sec></ds>\
            <rra><cf>AVERAGE</cf><pdp_per_row>1</pdp_per_row><params><xff>0.5</xff></params>\
            <cdp_prep><ds/><ds/><ds/></cdp_prep><database>\
            <row><v>150</v><v>1e30</v><v>5</v></row>\
            <row><v>-5</v><v>-1</v><v>0</v></row>\
            <row><v>50</v><v>2</v><v>1</v></row></database></rra></rrd>";
        let plain = restore_xml(xml, false).expect("restore");
        assert_eq!(plain.value_at(0, 0, 300), 150.0);
        assert_eq!(plain.value_at(0, 0, 900), 50.0);
        let r = restore_xml(xml, true).expect("restore -r");
        assert!(r.value_at(0, 0, 300).is_nan());
        assert!(r.value_at(0, 0, 600).is_nan());
        assert_eq!(r.value_at(0, 0, 900), 50.0);
        assert_eq!(r.value_at(0, 1, 300), 1e30);
        assert_eq!(r.value_at(0, 1, 600), -1.0);
        assert!((0..3).all(|i| r.value_at(0, 2, 300 + 300 * i).is_nan()));
        assert_eq!(r.rra[0].cur_row, 2);
        assert_eq!(r.schema.rra[0].row_cnt, 3);
    }

    fn err(xml: &str) -> String {
        restore_xml(xml, false).expect_err("must fail").msg
    }

    const HEAD: &str = "<rrd><version>0003</version><step>300</step><lastupdate>900</lastupdate>\
        <ds><name> g </name><type> GAUGE </type><minimal_heartbeat>600</minimal_heartbeat>\
        <min>0</min><max>100</max><last_ds>U</last_ds><value>NaN</value>\
        <unknown_sec> 0 </unknown_sec></ds>";

    fn with_rra(cf: &str, row: &str) -> String {
        format!(
            "{}<rra><cf>{}</cf><pdp_per_row>1</pdp_per_row><params><xff>0.5</xff></params>\
             <cdp_prep><ds/></cdp_prep><database>{}</database></rra></rrd>",
            HEAD, cf, row
        )
    }

    // Texts from rrdtool restore 1.7.2 of edited dumps (without their libxml2 "line N:").
    #[test]
    fn malformed_xml_gives_rrdtools_messages() {
        assert!(restore_xml(&with_rra("AVERAGE", "<row><v>1</v></row>"), false).is_ok());
        assert_eq!(
            err("<rrd><stepx>300</stepx></rrd>"),
            "parse_tag_rrd: Unknown tag: stepx"
        );
        assert_eq!(
            err("<rrd><step>300</stp></rrd>"),
            "error reading/parsing XML: Opening and ending tag mismatch: step line 1 and stp "
        );
        assert_eq!(
            err("hello"),
            "error reading/parsing XML: Document is empty "
        );
        assert_eq!(
            err("<rrd><ds><type> GAUGEX </type></ds></rrd>"),
            "parse_tag_ds_type: Unknown data source type: GAUGEX"
        );
        assert_eq!(
            err("<rrd><ds><nam>g</nam></ds></rrd>"),
            "parse_tag_ds: Unknown tag: nam"
        );
        assert_eq!(
            err(&with_rra("MAXX", "")),
            "parse_tag_rra_cf: Unknown consolidation function: MAXX"
        );
        assert!(err(&with_rra("AVERAGE", "<row><w>1</w></row>"))
            .ends_with(": expected <w> element but found <v>"));
        assert!(err(&with_rra("AVERAGE", "<row><v>1</v><v>2</v></row>"))
            .ends_with(": expected <v> element but found </row>"));
        // `<v/>` reads the next node as its value: `</row>` gives '', `<v>` an error.
        assert!(err(&with_rra("AVERAGE", "<row><v/></row>"))
            .ends_with(": get_xml_double from '' Numerical result out of range"));
        assert!(err(&with_rra("AVERAGE", "<row><v/><v>1</v></row>"))
            .ends_with(": expected a value but found a <v> element"));
        assert!(err(&with_rra("AVERAGE", "<row><v>U</v></row>"))
            .ends_with(": get_xml_double from 'U' Numerical result out of range"));
        assert!(err(&with_rra("AVERAGE", "<row><v>1.5x</v></row>"))
            .ends_with(": get_xml_double from '1.5x' Success"));
        assert!(err("<rrdx></rrdx>").ends_with(": expected <rrdx> element but found <rrd>"));
        // One <ds> too few, one too many in cdp_prep.
        let two = format!("{}<ds><name> h </name><type> GAUGE </type></ds>", HEAD);
        let rra = |cdp: &str| {
            format!(
                "{}<rra><cf>AVERAGE</cf><params><xff>0.5</xff></params><cdp_prep>{}</cdp_prep>\
                 <database></database></rra></rrd>",
                two, cdp
            )
        };
        assert!(err(&rra("<ds/>")).ends_with(": expected </cdp_prep> element but found <ds>"));
        assert!(
            err(&rra("<ds/><ds/><ds/>")).ends_with(": expected <ds> element but found </cdp_prep>")
        );
        assert!(err(&with_rra("HWPREDICT", "")).contains("Holt-Winters"));
        assert!(err(&HEAD[..200]).starts_with("error reading/parsing XML: "));
    }

    #[test]
    fn values_parse_like_rrdtool() {
        // rrdtool restore accepts these (first row, then dump shows the value).
        for (text, want) in [
            (" 1.5 ", 1.5),
            ("1e", 1.0),
            (".5", 0.5),
            ("+3", 3.0),
            ("1.5 2", 1.5),
            ("-inf", f64::NEG_INFINITY),
            ("infinity", f64::INFINITY),
            ("1e400", f64::INFINITY),
        ] {
            let r = restore_xml(
                &with_rra("LAST", &format!("<row><v>{}</v></row>", text)),
                false,
            )
            .expect(text);
            assert_eq!(r.value_at(0, 0, 900), want, "{}", text);
        }
        for text in ["NaN", "nanx", "-nan"] {
            let r = restore_xml(
                &with_rra("LAST", &format!("<row><v>{}</v></row>", text)),
                false,
            )
            .expect(text);
            assert!(r.value_at(0, 0, 900).is_nan(), "{}", text);
        }
    }

    /// Edits the rows of rrdtool's dump of a fresh file, then compares `rrdtool restore [-r]`
    /// + `rrdtool dump` with restore_xml + dump_xml.
    fn restore_same_as_rrdtool(
        name: &str,
        create: &[&str],
        rows: &[&str],
        edit: &dyn Fn(&str) -> String,
    ) {
        if !Path::new(RRDTOOL).exists() {
            return;
        }
        let dir = tmpdir(name);
        let mut args = vec!["create", "a.rrd"];
        args.extend_from_slice(create);
        rrdtool(&dir, &args);
        let mut rows = rows.iter().peekable();
        let xml: String = rrdtool(&dir, &["dump", "a.rrd"])
            .lines()
            .map(
                |l| match (l.split_once("<row>"), rows.next_if(|_| l.contains("<row>"))) {
                    (Some((head, _)), Some(r)) => format!("{}<row>{}</row>\n", head, r),
                    _ => format!("{}\n", l),
                },
            )
            .collect();
        let xml = edit(&xml);
        std::fs::write(dir.join("in.xml"), &xml).expect("write xml");
        for (flag, check) in [(None, false), (Some("-r"), true)] {
            let _ = std::fs::remove_file(dir.join("b.rrd"));
            let mut args = vec!["restore", "in.xml", "b.rrd"];
            args.extend(flag);
            let out = Command::new(RRDTOOL)
                .args(&args)
                .current_dir(&dir)
                .env("TZ", "UTC")
                .env("LC_ALL", "C")
                .output()
                .expect("run rrdtool");
            let ours = restore_xml(&xml, check);
            if out.status.success() {
                let ours = ours.expect("rrdtool accepted it");
                assert_eq!(
                    dump_xml(&ours, "dtd"),
                    rrdtool(&dir, &["dump", "b.rrd"]),
                    "{} {:?}",
                    name,
                    flag
                );
            } else {
                let msg = String::from_utf8_lossy(&out.stderr);
                let theirs = msg.trim_end().trim_start_matches("ERROR: ");
                assert_eq!(
                    ours.expect_err("rrdtool refused it").msg,
                    theirs,
                    "{}",
                    name
                );
            }
        }
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn range_check_and_compute_parsing_match_rrdtool() {
        let rows: Vec<String> = ["0", "-1", "1e-300", "1e300", "5", "-1e-310", "150", "NaN"]
            .iter()
            .map(|v| format!("<v>{v}</v><v>{v}</v><v>{v}</v>"))
            .collect();
        let rows: Vec<&str> = rows.iter().map(String::as_str).collect();
        for expr in [
            "g",
            "g,2,*",
            "c,g,+,10,/",
            "1,g,GT,g,UNKN,IF",
            "g,c,MAX,3,-",
        ] {
            let ds = format!("DS:x:COMPUTE:{}", expr);
            restore_same_as_rrdtool(
                "range",
                &[
                    "--start",
                    "1000000000",
                    "DS:g:GAUGE:600:-1:100",
                    "DS:c:GAUGE:600:0:U",
                    &ds,
                    "RRA:AVERAGE:0.5:1:8",
                ],
                &rows,
                &|x| x.to_string(),
            );
        }
        for cdef in [
            "g,2.0,*,",
            "g,+2,*",
            "x,2,*",
            "g,40000,*",
            "g,TIME,+",
            "g,2.5,*",
            "zz,2,*",
        ] {
            restore_same_as_rrdtool(
                "cdef",
                &[
                    "--start",
                    "1000000000",
                    "DS:g:GAUGE:600:U:U",
                    "DS:x:COMPUTE:g,2,*",
                    "RRA:LAST:0.5:1:2",
                ],
                &["<v>1</v><v>2</v>", "<v>3</v><v>4</v>"],
                &|x| x.replace("<cdef> g,2,* </cdef>", &format!("<cdef> {} </cdef>", cdef)),
            );
        }
    }

    /// rrdtool's `line N:` prefixes come from libxml2's 512-byte read-ahead; compare them on a
    /// 2000-row dump broken at various places.
    #[test]
    fn error_line_numbers_match_rrdtool() {
        let rows: Vec<String> = (0..2000).map(|i| format!("<v>{}.5</v>", i)).collect();
        let rows: Vec<&str> = rows.iter().map(String::as_str).collect();
        for (k, bad) in [
            (3, "<v>U</v>"),
            (50, "<v>U</v>"),
            (100, "<v>1.5x</v>"),
            (201, "<w>1</w>"),
            (500, "<v>1</v><v>2</v>"),
            (999, "<v/>"),
            (1500, "<v>abc</v>"),
            (1990, "<v>U</v>"),
        ] {
            let needle = format!("<row>{}</row>", rows[k]);
            restore_same_as_rrdtool(
                "lines",
                &[
                    "--start",
                    "1000000000",
                    "DS:g:GAUGE:600:U:U",
                    "RRA:AVERAGE:0.5:1:2000",
                ],
                &rows,
                &|x| x.replacen(&needle, &format!("<row>{}</row>", bad), 1),
            );
        }
        restore_same_as_rrdtool(
            "lines-cf",
            &[
                "--start",
                "1000000000",
                "DS:g:GAUGE:600:U:U",
                "RRA:AVERAGE:0.5:1:20",
            ],
            &[],
            &|x| x.replacen("<cf>AVERAGE</cf>", "<cfx>AVERAGE</cfx>", 1),
        );
    }

    /// Whatever the input, restore_xml answers with an RRD or an error, never a panic:
    /// truncations and random edits of a real dump.
    #[test]
    fn damaged_xml_never_panics() {
        let schema = Schema {
            step: 300,
            ds: vec![
                DsDef {
                    name: "g".into(),
                    kind: DsType::Gauge,
                    heartbeat: 600,
                    min: 0.0,
                    max: f64::NAN,
                    rpn: None,
                },
                DsDef {
                    name: "x".into(),
                    kind: DsType::Compute,
                    heartbeat: 0,
                    min: f64::NAN,
                    max: f64::NAN,
                    rpn: Some("g,2,*".into()),
                },
            ],
            rra: vec![
                RraDef {
                    cf: Cf::Average,
                    xff: 0.5,
                    pdp_cnt: 1,
                    row_cnt: 4,
                },
                RraDef {
                    cf: Cf::Max,
                    xff: 0.5,
                    pdp_cnt: 3,
                    row_cnt: 3,
                },
            ],
        };
        let xml = dump_xml(&Rrd::new(schema, 1_000_000_000), "dtd");
        assert!(restore_xml(&xml, true).is_ok());
        for n in 0..xml.len() {
            let _ = restore_xml(&xml[..n], n & 1 != 0);
        }
        let pieces = [
            "<",
            ">",
            "/",
            "</v>",
            "<v>",
            "<!--",
            "-->",
            "&",
            "&#x41;",
            "]]>",
            "<![CDATA[",
            "\"",
            "=",
            "0",
            "-1",
            "NaN",
            "<ds/>",
            "<row>",
        ];
        let mut x: u64 = 42;
        let bytes = xml.as_bytes();
        for _ in 0..3000 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let at = (x % bytes.len() as u64) as usize;
            let cut = ((x >> 20) % 8) as usize;
            let piece = pieces[((x >> 32) % pieces.len() as u64) as usize];
            let mut edited = Vec::with_capacity(bytes.len() + 16);
            edited.extend_from_slice(&bytes[..at]);
            edited.extend_from_slice(piece.as_bytes());
            edited.extend_from_slice(&bytes[(at + cut).min(bytes.len())..]);
            let text = String::from_utf8_lossy(&edited);
            let _ = restore_xml(&text, x & 4 != 0);
        }
    }
}
