//! The XML side of `restore`: a small tokenizer for rrdtool's dump files (elements with
//! attributes skipped, comments, processing instructions, DOCTYPE, CDATA, character
//! references; nesting checked with libxml2's messages) and a reader over its events that
//! reports errors as rrdtool does, `line N:` numbers included.

use crate::num::strtod;
use crate::RrdError;

/// One XML event.
#[derive(Debug, Clone, PartialEq)]
pub(super) enum Ev {
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

pub(super) fn xml_err(msg: &str) -> RrdError {
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

    pub(super) fn next(&mut self) -> Result<Ev, RrdError> {
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
pub(super) struct Reader<'a> {
    lx: Lexer<'a>,
    peeked: Option<Ev>,
}

impl<'a> Reader<'a> {
    pub(super) fn peek(&mut self) -> Result<&Ev, RrdError> {
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

    pub(super) fn next(&mut self) -> Result<Ev, RrdError> {
        self.peek()?;
        Ok(self.peeked.take().expect("peeked was just filled"))
    }

    /// The line rrdtool's messages name: libxml2's reader feeds its parser 512-byte chunks
    /// and reports the line where the parsed input ends, so the line at the end of the chunk
    /// holding the token just read (a text token needs the `<` after it); at most the line
    /// after the last newline. Checked on rrdtool's messages for files of 1 to 190 KB.
    pub(super) fn line(&self) -> usize {
        const CHUNK: usize = 512;
        let s = self.lx.s;
        let need = (self.lx.pos + usize::from(self.lx.last_was_text)).max(1);
        let upto = need.div_ceil(CHUNK).saturating_mul(CHUNK).min(s.len());
        1 + s[..upto].iter().filter(|&&b| b == b'\n').count()
    }

    /// rrdtool's (argument-swapped) "expected X element but found Y".
    pub(super) fn expected(&self, found: &Ev, wanted: &str) -> RrdError {
        let found = match found {
            Ev::Start(n) => format!("<{}>", n),
            Ev::End(n) => format!("</{}>", n),
            Ev::Text(t) => return self.err(&format!("expected element but found text '{}'", t)),
            Ev::Eof => "end of file".to_string(),
        };
        self.err(&format!("expected {} element but found {}", found, wanted))
    }

    /// rrdtool spells the prefix of its number errors `ling N:`.
    pub(super) fn ling(&self, msg: &str) -> RrdError {
        RrdError::new(format!("ling {}: {}", self.line(), msg))
    }

    pub(super) fn err(&self, msg: &str) -> RrdError {
        RrdError::new(format!("line {}: {}", self.line(), msg))
    }

    pub(super) fn expect_start(&mut self, name: &str) -> Result<(), RrdError> {
        match self.next()? {
            Ev::Start(n) if n == name => Ok(()),
            ev => Err(self.expected(&ev, &format!("<{}>", name))),
        }
    }

    pub(super) fn expect_end(&mut self, name: &str) -> Result<(), RrdError> {
        match self.next()? {
            Ev::End(n) if n == name => Ok(()),
            ev => Err(self.expected(&ev, &format!("</{}>", name))),
        }
    }

    /// The next child's start tag, or `None` (consuming the end tag) at `</parent>`.
    pub(super) fn child(&mut self, parent: &str) -> Result<Option<String>, RrdError> {
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
    pub(super) fn text(&mut self, name: &str) -> Result<String, RrdError> {
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

    pub(super) fn double(&mut self, name: &str) -> Result<f64, RrdError> {
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
                // rrdtool restore stores every unknown as its DNAN (sign bit set), whatever
                // the spelling (`NaN`, `nan`, `-nan`).
                Ok(if v.is_nan() { crate::num::DNAN } else { v })
            }
        }
    }

    /// An integer as `strtoll` reads it: leading digits, garbage gives 0.
    pub(super) fn long(&mut self, name: &str) -> Result<i64, RrdError> {
        Ok(crate::num::atol(&self.text(name)?))
    }

    /// Skips the element whose start tag was just read, children included.
    pub(super) fn skip(&mut self, name: &str) -> Result<(), RrdError> {
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

impl<'a> Reader<'a> {
    /// A reader over a whole document.
    pub(super) fn new(xml: &'a str) -> Self {
        Reader {
            lx: Lexer::new(xml),
            peeked: None,
        }
    }
}
