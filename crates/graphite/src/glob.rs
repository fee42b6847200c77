//! Graphite's path patterns: components separated by dots, each a glob with `*` (any run of
//! characters), `?` (one), `[abc]`, `[a-z]`, `[!a]`/`[^a]` (a class) and `{a,b,c}`
//! (alternatives, which may hold globs), as graphite-web's finders match them.

use regex::Regex;

/// One pattern component, compiled.
pub struct Component {
    re: Option<Regex>,
    literal: Option<String>,
}

impl Component {
    pub fn new(glob: &str) -> Result<Component, String> {
        if !glob.contains(['*', '?', '[', '{']) {
            return Ok(Component {
                re: None,
                literal: Some(glob.to_string()),
            });
        }
        let mut re = String::from("^(?:");
        let mut chars = glob.chars().peekable();
        let mut depth = 0usize;
        while let Some(c) = chars.next() {
            match c {
                '*' => re.push_str(".*"),
                '?' => re.push('.'),
                '[' => {
                    re.push('[');
                    if matches!(chars.peek(), Some('!') | Some('^')) {
                        chars.next();
                        re.push('^');
                    }
                    let mut closed = false;
                    for c in chars.by_ref() {
                        if c == ']' {
                            closed = true;
                            break;
                        }
                        if c == '\\' || c == '[' || c == '&' || c == '~' {
                            re.push('\\');
                        }
                        re.push(c);
                    }
                    if !closed {
                        return Err(format!("unclosed '[' in '{glob}'"));
                    }
                    re.push(']');
                }
                '{' => {
                    depth += 1;
                    re.push_str("(?:");
                }
                '}' if depth > 0 => {
                    depth -= 1;
                    re.push(')');
                }
                ',' if depth > 0 => re.push('|'),
                c => re.push_str(&regex::escape(&c.to_string())),
            }
        }
        if depth > 0 {
            return Err(format!("unclosed '{{' in '{glob}'"));
        }
        re.push_str(")$");
        Ok(Component {
            re: Some(Regex::new(&re).map_err(|e| format!("pattern '{glob}': {e}"))?),
            literal: None,
        })
    }

    pub fn matches(&self, s: &str) -> bool {
        match (&self.literal, &self.re) {
            (Some(l), _) => l == s,
            (None, Some(re)) => re.is_match(s),
            (None, None) => false,
        }
    }

    /// The component when it is plain text.
    pub fn literal(&self) -> Option<&str> {
        self.literal.as_deref()
    }
}

/// A whole path pattern.
pub struct Pattern {
    pub parts: Vec<Component>,
}

impl Pattern {
    pub fn new(p: &str) -> Result<Pattern, String> {
        if p.is_empty() {
            return Err("empty path".into());
        }
        Ok(Pattern {
            parts: split(p)
                .iter()
                .map(|c| Component::new(c))
                .collect::<Result<_, _>>()?,
        })
    }

    /// The literal path the pattern starts with (components before the first glob), for a
    /// range scan of the sorted paths.
    pub fn prefix(&self) -> String {
        let mut out = Vec::new();
        for c in &self.parts {
            match c.literal() {
                Some(l) => out.push(l),
                None => break,
            }
        }
        out.join(".")
    }

    /// Whether `path` matches the whole pattern.
    pub fn matches(&self, path: &str) -> bool {
        let comps: Vec<&str> = path.split('.').collect();
        comps.len() == self.parts.len() && self.parts.iter().zip(&comps).all(|(p, c)| p.matches(c))
    }

    /// Whether the first components of `path` match the pattern (which then names the node
    /// of that many components): the node's path, and whether `path` ends there (a leaf).
    pub fn node_of<'a>(&self, path: &'a str) -> Option<(&'a str, bool)> {
        let n = self.parts.len();
        let mut end = 0;
        for (i, c) in path.split('.').enumerate() {
            if i == n {
                return Some((&path[..end - 1], false));
            }
            if !self.parts[i].matches(c) {
                return None;
            }
            end += c.len() + 1;
        }
        (path.split('.').count() == n).then_some((path, true))
    }
}

/// Split a pattern on the dots outside `{...}` (so `{a.b,c}` stays one component, as the
/// brace may hold a path's dots in graphite-web's expansion).
pub fn split(p: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur = String::new();
    let mut depth = 0usize;
    for c in p.chars() {
        match c {
            '{' => {
                depth += 1;
                cur.push(c);
            }
            '}' => {
                depth = depth.saturating_sub(1);
                cur.push(c);
            }
            '.' if depth == 0 => out.push(std::mem::take(&mut cur)),
            c => cur.push(c),
        }
    }
    out.push(cur);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn globs_match_as_graphite_matches() {
        let m = |p: &str, s: &str| Pattern::new(p).unwrap().matches(s);
        assert!(m("a.b.c", "a.b.c"));
        assert!(!m("a.b", "a.b.c"));
        assert!(m("a.*.c", "a.xyz.c"));
        assert!(m("a.*", "a.x"));
        assert!(!m("a.*", "a.x.y"));
        assert!(m("a.b?", "a.bc"));
        assert!(m("a.[bc]x", "a.cx"));
        assert!(m("a.[a-c]x", "a.bx"));
        assert!(!m("a.[!a-c]x", "a.bx"));
        assert!(m("a.{web,db}*.cpu", "a.db1.cpu"));
        assert!(!m("a.{web,db}*.cpu", "a.mail1.cpu"));
        assert!(m("a.x+y(z)", "a.x+y(z)"));
        assert!(Pattern::new("a.[bc").is_err());
        assert!(Pattern::new("a.{b,c").is_err());
    }

    #[test]
    fn nodes_are_the_matching_prefixes() {
        let p = Pattern::new("a.*").unwrap();
        assert_eq!(p.node_of("a.b.c"), Some(("a.b", false)));
        assert_eq!(p.node_of("a.b"), Some(("a.b", true)));
        assert_eq!(p.node_of("x.b"), None);
        assert_eq!(p.node_of("a"), None);
        assert_eq!(Pattern::new("a.b*.c").unwrap().prefix(), "a");
    }
}
