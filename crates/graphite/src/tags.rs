//! Graphite's tagged series: `name;tag1=value1;tag2=value2`.
//!
//! A tagged series has a canonical name, its tags sorted by tag (a tag given twice keeps its
//! last value), and is stored as the series `_tagged/<canonical>.rrd` (the tree of dotted
//! paths stays the untagged metrics'). Tags and values follow graphite-web's rules (a tag has
//! no `;`, `!`, `^`, `=`; a value has no `;` and does not start with `~`; neither is empty),
//! and here neither holds `/` or a control character (they are a file's name under `-b`).
//! `seriesByTag` takes graphite-web's expressions: `tag=value` (an empty value: the tag is
//! absent), `tag!=value`, `tag=~regex` and `tag!=~regex` (the regex anchored at the start,
//! as Python's `re.match`); at least one must select something by itself.

use regex::Regex;

/// Where tagged series are stored, under the store's names.
pub const PREFIX: &str = "_tagged/";

/// A tagged name: its metric name and tags, sorted by tag.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Tagged {
    pub name: String,
    pub tags: Vec<(String, String)>,
}

impl Tagged {
    /// The canonical form: `name;a=1;b=2`.
    pub fn canonical(&self) -> String {
        let mut s = self.name.clone();
        for (k, v) in &self.tags {
            s.push(';');
            s.push_str(k);
            s.push('=');
            s.push_str(v);
        }
        s
    }

    /// A tag's value (`name` is the metric name).
    pub fn get(&self, tag: &str) -> Option<&str> {
        if tag == "name" {
            return Some(&self.name);
        }
        self.tags
            .iter()
            .find(|(k, _)| k == tag)
            .map(|(_, v)| v.as_str())
    }
}

fn bad_char(c: char) -> bool {
    c == '/' || c.is_control()
}

/// Parse `name;tag=value;...`.
pub fn parse(s: &str) -> Result<Tagged, String> {
    let mut parts = s.split(';');
    let name = parts.next().unwrap_or("");
    if name.is_empty() || name.chars().any(bad_char) || name.contains(['!', '^', '=']) {
        return Err(format!("bad tagged series name '{}'", name.escape_debug()));
    }
    let mut tags: Vec<(String, String)> = Vec::new();
    for p in parts {
        let Some((k, v)) = p.split_once('=') else {
            return Err(format!("tag '{}' has no value", p.escape_debug()));
        };
        if k.is_empty() || k.contains(['!', '^', '=']) || k.chars().any(bad_char) {
            return Err(format!("bad tag '{}'", k.escape_debug()));
        }
        if v.is_empty() || v.starts_with('~') || v.chars().any(bad_char) {
            return Err(format!("bad value for tag '{k}': '{}'", v.escape_debug()));
        }
        if k == "name" {
            return Err("'name' is the series' own name, not a tag".into());
        }
        match tags.iter_mut().find(|(t, _)| t == k) {
            Some(t) => t.1 = v.to_string(),
            None => tags.push((k.to_string(), v.to_string())),
        }
    }
    tags.sort();
    Ok(Tagged {
        name: name.to_string(),
        tags,
    })
}

/// The tags graphite-web gives a new series named `name`: a name that looks like a function
/// call (`word(...)`) is only its name; otherwise the name is read as a tagged series
/// (`metric;tag=value;...`, or OpenMetrics' `metric{tag="value",...}`), its tags in the order
/// given and `name` last, or, where it does not read, only its name.
pub fn of_name(name: &str) -> crate::series::Tags {
    let plain = || vec![("name".to_string(), name.to_string())];
    let call = {
        let b = name.as_bytes();
        let word = b.iter().take_while(|c| c.is_ascii_alphabetic()).count();
        word > 0
            && b.get(word) == Some(&b'(')
            && b.len() > word + 2
            && b.last() == Some(&b')')
            && !name.contains('\n')
    };
    if call {
        return plain();
    }
    let parsed = if name.ends_with("\"}") && name.contains('{') {
        openmetrics_tags(name)
    } else {
        carbon_tags(name)
    };
    parsed.unwrap_or_else(plain)
}

/// A name's tags read strictly (graphite-web's TaggedSeries.parse): None where it raises.
pub fn strict_tags(name: &str) -> Option<crate::series::Tags> {
    if name.ends_with("\"}") && name.contains('{') {
        openmetrics_tags(name)
    } else {
        carbon_tags(name)
    }
}

fn valid_tag(tag: &str, value: &str) -> bool {
    !tag.is_empty()
        && !value.is_empty()
        && !tag.contains([';', '!', '^', '='])
        && !value.contains(';')
        && !value.starts_with('~')
}

fn with_name(mut tags: crate::series::Tags, metric: &str) -> Option<crate::series::Tags> {
    let name = metric.trim_start_matches('~');
    if name.is_empty() {
        return None;
    }
    crate::series::set_tag(&mut tags, "name", name);
    Some(tags)
}

fn carbon_tags(path: &str) -> Option<crate::series::Tags> {
    let mut segments = path.split(';');
    let metric = segments.next().unwrap_or("");
    if metric.is_empty() {
        return None;
    }
    let mut tags = Vec::new();
    for seg in segments {
        let (t, v) = seg.split_once('=')?;
        if !valid_tag(t, v) {
            return None;
        }
        crate::series::set_tag(&mut tags, t, v);
    }
    with_name(tags, metric)
}

fn openmetrics_tags(path: &str) -> Option<crate::series::Tags> {
    let inner = &path[..path.len() - 1];
    let mut parts = inner.splitn(3, '{');
    let (metric, mut raw) = (parts.next()?, parts.next()?);
    if parts.next().is_some() || metric.is_empty() {
        return None;
    }
    static SEG: std::sync::OnceLock<Regex> = std::sync::OnceLock::new();
    let seg = SEG.get_or_init(|| {
        Regex::new(r#"^([^=]+)="((?:[\\]["\\]|[^"\\])+)"(:?,|$)"#).expect("a valid regex")
    });
    let mut tags = Vec::new();
    while !raw.is_empty() {
        let c = seg.captures(raw)?;
        let t = c.get(1)?.as_str();
        let v = c
            .get(2)?
            .as_str()
            .replace("\\\"", "\"")
            .replace("\\\\", "\\");
        if !valid_tag(t, &v) {
            return None;
        }
        crate::series::set_tag(&mut tags, t, v);
        raw = &raw[c.get(0)?.end()..];
    }
    with_name(tags, metric)
}

/// One `seriesByTag` expression.
pub struct Expr {
    tag: String,
    op: Op,
}

enum Op {
    Eq(String),
    Ne(String),
    Match(Regex),
    NoMatch(Regex),
}

impl Expr {
    pub fn parse(s: &str) -> Result<Expr, String> {
        let bad =
            || format!("seriesByTag: '{s}' is not tag=value, tag!=value, tag=~re or tag!=~re");
        let (tag, op) = if let Some((t, v)) = s.split_once("!=~") {
            (t, Op::NoMatch(re(v)?))
        } else if let Some((t, v)) = s.split_once("=~") {
            (t, Op::Match(re(v)?))
        } else if let Some((t, v)) = s.split_once("!=") {
            (t, Op::Ne(v.to_string()))
        } else if let Some((t, v)) = s.split_once('=') {
            (t, Op::Eq(v.to_string()))
        } else {
            return Err(bad());
        };
        let tag = tag.trim();
        if tag.is_empty() {
            return Err(bad());
        }
        Ok(Expr {
            tag: tag.to_string(),
            op,
        })
    }

    /// The tag it tests.
    pub fn tag(&self) -> &str {
        &self.tag
    }

    /// Whether this expression selects series by itself (it does not match an absent tag).
    pub fn positive(&self) -> bool {
        match &self.op {
            Op::Eq(v) => !v.is_empty(),
            Op::Match(r) => !r.is_match(""),
            _ => false,
        }
    }

    pub fn matches(&self, t: &Tagged) -> bool {
        let v = t.get(&self.tag).unwrap_or("");
        match &self.op {
            Op::Eq(w) => v == w,
            Op::Ne(w) => v != w,
            Op::Match(r) => r.is_match(v),
            Op::NoMatch(r) => !r.is_match(v),
        }
    }
}

/// A regex anchored at the start, as Python's `re.match` applies it.
fn re(v: &str) -> Result<Regex, String> {
    Regex::new(&format!("^(?:{v})")).map_err(|e| format!("seriesByTag: regex '{v}': {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tagged_names_are_canonical_and_checked() {
        let t = parse("disk.used;host=b;dc=x;host=a").unwrap();
        assert_eq!(t.canonical(), "disk.used;dc=x;host=a");
        assert_eq!(t.get("name"), Some("disk.used"));
        for bad in [
            ";a=b", "n;a", "n;=b", "n;a=", "n;a=~b", "n;a!=b", "n;a=b/c", "n;name=x", "a/b;c=d",
        ] {
            assert!(parse(bad).is_err(), "{bad}");
        }
        let e = |s: &str| Expr::parse(s).unwrap();
        assert!(e("host=a").matches(&t) && e("host=a").positive());
        assert!(e("host!=b").matches(&t) && !e("host!=b").positive());
        assert!(e("dc=~x|y").matches(&t) && e("dc=~x|y").positive());
        assert!(!e("dc=~y").matches(&t));
        assert!(e("rack=").matches(&t) && !e("rack=").positive());
        assert!(e("name=~disk").matches(&t));
        assert!(!e("name!=~disk").matches(&t));
        assert!(Expr::parse("nothing").is_err());
        assert!(Expr::parse("a=~(").is_err());
    }
}
