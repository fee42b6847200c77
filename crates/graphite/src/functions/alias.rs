//! graphite-web's Alias group: the names a series is shown by.

use super::*;

/// `alias`.
pub(super) fn alias(a: &Args<'_, '_>) -> Result<Vec<Series>, String> {
    let mut l = a.series(0)?;
    let n = a.string(1, "newName")?;
    for s in &mut l {
        s.name = n.clone();
    }
    Ok(l)
}

/// `aliasByTags`.
pub(super) fn alias_by_tags(a: &Args<'_, '_>) -> Result<Vec<Series>, String> {
    let Args { args, .. } = *a;
    let keys: Vec<Expr> = args.iter().skip(1).cloned().collect();
    Ok(a.series(0)?
        .into_iter()
        .map(|mut s| {
            let t = crate::tags::parse(&metric_of(&s.name)).ok();
            let m = metric_of(&s.name);
            let parts: Vec<&str> = m.split(';').next().unwrap_or("").split('.').collect();
            s.name = keys
                .iter()
                .filter_map(|k| match k {
                    Expr::Num(n) => pick(&parts, *n as i64).map(str::to_string),
                    Expr::Str(tag) | Expr::Path(tag) => {
                        t.as_ref().and_then(|t| t.get(tag)).map(str::to_string)
                    }
                    _ => None,
                })
                .collect::<Vec<_>>()
                .join(".");
            s
        })
        .collect())
}

/// `aliasByNode`.
pub(super) fn alias_by_node(a: &Args<'_, '_>) -> Result<Vec<Series>, String> {
    let nodes = a.ints_from(1)?;
    Ok(a.series(0)?
        .into_iter()
        .map(|mut s| {
            let m = metric_of(&s.name);
            let parts: Vec<&str> = m.split('.').collect();
            s.name = nodes
                .iter()
                .filter_map(|&n| pick(&parts, n))
                .collect::<Vec<_>>()
                .join(".");
            s
        })
        .collect())
}

/// `aliasByMetric`.
pub(super) fn alias_by_metric(a: &Args<'_, '_>) -> Result<Vec<Series>, String> {
    Ok(a.series(0)?
        .into_iter()
        .map(|mut s| {
            let m = metric_of(&s.name);
            s.name = m.rsplit('.').next().unwrap_or(&m).to_string();
            s
        })
        .collect())
}

/// `aliasSub`.
pub(super) fn alias_sub(a: &Args<'_, '_>) -> Result<Vec<Series>, String> {
    let re = a.regex(1, "search")?;
    // Python's \1 backreferences as the regex crate's ${1}.
    let rep = backrefs(&a.string(2, "replace")?);
    Ok(a.series(0)?
        .into_iter()
        .map(|mut s| {
            s.name = re.replace_all(&s.name, rep.as_str()).into_owned();
            s
        })
        .collect())
}

/// Python's `\1` and `\g<1>` as the regex crate's `${1}`.
pub(super) fn backrefs(s: &str) -> String {
    let mut out = String::new();
    let mut it = s.chars().peekable();
    while let Some(c) = it.next() {
        match c {
            '\\' if it.peek().is_some_and(char::is_ascii_digit) => {
                let mut n = String::new();
                while let Some(d) = it.peek().filter(|d| d.is_ascii_digit()) {
                    n.push(*d);
                    it.next();
                }
                out.push_str(&format!("${{{n}}}"));
            }
            '\\' if it.peek() == Some(&'g') => {
                it.next();
                let mut n = String::new();
                if it.peek() == Some(&'<') {
                    it.next();
                    for d in it.by_ref() {
                        if d == '>' {
                            break;
                        }
                        n.push(d);
                    }
                }
                out.push_str(&format!("${{{n}}}"));
            }
            '$' => out.push_str("$$"),
            c => out.push(c),
        }
    }
    out
}
