//! graphite-web's routes over the HTTP listener (`--http ADDR`, [`crate::routes`]):
//! `/render` (GET, and POST of a form), `/metrics/find`, `/metrics/expand`,
//! `/metrics/index.json`, `/version`, `/functions`, `/tags`, `/tags/TAG`,
//! `/tags/autoComplete/tags` and `.../values`. The web page's routes come first
//! ([`crate::routes`]).
//! A bad request gets a 400 with the reason in plain text; a body over
//! [`crate::httpd::MAX_BODY`] a 413.

use super::format::{self, json_string};
use super::glob::Pattern;
use super::render::Store;
use super::Graphite;
use super::{functions, series};
use crate::daemon::Daemon;
use crate::httpd::{Query, Response};
use graphite::{Ctx, Limits};

/// The version `/version` reports: graphite-web's whose API this follows (Grafana picks its
/// features by it).
pub const GRAPHITE_VERSION: &str = "1.1.8";

type Resp = Response;

fn text(code: u16, body: &str) -> Resp {
    Response::text(code, body)
}

fn body(content_type: &str, b: Vec<u8>) -> Resp {
    Response::new(200, content_type, b).with_header("Access-Control-Allow-Origin", "*")
}

/// graphite-web's API: the reply to `q` (after the web page's routes, [`crate::routes`]).
pub fn route(d: &Daemon, g: &Graphite, q: &Query) -> Response {
    let (path, params, now) = (&q.path, q.params.as_slice(), q.now);
    let get = |k: &str| params.iter().find(|(p, _)| p == k).map(|(_, v)| v.as_str());
    if let Some(why) = d.unreadable() {
        return text(503, &why);
    }
    let r = match path.trim_end_matches('/') {
        "/render" => render_route(d, g, params, now),
        "/metrics/find" | "/metrics" => find(d, g, params),
        "/metrics/expand" => expand(d, g, params),
        "/metrics/index.json" => {
            let leaves = g.leaves(d);
            let mut out = String::from("[");
            for (i, p) in leaves.keys().filter(|p| !p.contains(';')).enumerate() {
                if i > 0 {
                    out.push_str(", ");
                }
                out.push_str(&json_string(p));
            }
            out.push(']');
            Ok(body("application/json", out.into_bytes()))
        }
        "/version" => Ok(text(200, GRAPHITE_VERSION)),
        "/functions" => Ok(body(
            "application/json",
            functions::functions_json(
                get("grouped").is_some_and(|g| g == "1" || g.eq_ignore_ascii_case("true")),
                get("group"),
            )
            .into_bytes(),
        )),
        "/tags/autoComplete/tags" => tag_complete(d, g, params, None),
        "/tags/autoComplete/values" => match get("tag") {
            Some(t) => tag_complete(d, g, params, Some(t)),
            None => Err((400, "autoComplete/values needs a tag".into())),
        },
        "/tags/findSeries" => find_series(d, g, params),
        "/tags" => tag_list(d, g, None),
        p if p.starts_with("/tags/") && !p[6..].contains('/') => tag_list(d, g, Some(&p[6..])),
        _ => Err((404, format!("no such page: {path}"))),
    };
    match r {
        Ok(r) => r,
        Err((code, msg)) => text(code, &msg),
    }
}

/// The request's tag expressions (`expr`, several).
fn exprs_of(params: &[(String, String)]) -> Result<Vec<super::tags::Expr>, (u16, String)> {
    params
        .iter()
        .filter(|(k, _)| k == "expr" || k == "expr[]")
        .map(|(_, v)| super::tags::Expr::parse(v))
        .collect::<Result<_, _>>()
        .map_err(|e| (400, e))
}

/// The tagged series (their parsed names) that every `expr` of the request matches.
fn tagged(
    d: &Daemon,
    g: &Graphite,
    params: &[(String, String)],
) -> Result<Vec<super::tags::Tagged>, (u16, String)> {
    let exprs = exprs_of(params)?;
    Ok(g.leaves(d)
        .keys()
        .filter(|p| p.contains(';'))
        .filter_map(|p| super::tags::parse(p).ok())
        .filter(|t| exprs.iter().all(|e| e.matches(t)))
        .collect())
}

/// `/tags/autoComplete/tags` (`tag` None: tag names) and `/tags/autoComplete/values`: sorted,
/// those starting with `tagPrefix` / `valuePrefix`, of the series the `expr`s match, at most
/// `limit` (100 by default).
fn tag_complete(
    d: &Daemon,
    g: &Graphite,
    params: &[(String, String)],
    tag: Option<&str>,
) -> Result<Resp, (u16, String)> {
    let get = |k: &str| params.iter().find(|(p, _)| p == k).map(|(_, v)| v.as_str());
    let limit: usize = match get("limit") {
        Some(l) => l
            .parse()
            .map_err(|_| (400, format!("limit '{l}' is not a count")))?,
        None => 100,
    };
    // With expressions, the tags they test are not suggested (graphite-web's rule).
    let searched: Vec<String> = exprs_of(params)?
        .iter()
        .map(|e| e.tag().to_string())
        .collect();
    let mut out = std::collections::BTreeSet::new();
    for t in tagged(d, g, params)? {
        match tag {
            None => {
                let p = get("tagPrefix").unwrap_or("");
                out.extend(
                    std::iter::once("name".to_string())
                        .chain(t.tags.iter().map(|(k, _)| k.clone()))
                        .filter(|k| k.starts_with(p) && !searched.contains(k)),
                );
            }
            Some(tag) => {
                let p = get("valuePrefix").unwrap_or("");
                if let Some(v) = t.get(tag).filter(|v| v.starts_with(p)) {
                    out.insert(v.to_string());
                }
            }
        }
    }
    let list: Vec<String> = out.iter().take(limit).map(|v| json_string(v)).collect();
    Ok(body(
        "application/json",
        format!("[{}]", list.join(", ")).into_bytes(),
    ))
}

/// `/tags`: every tag, `[{"tag": ...}]`; `/tags/TAG`: its values and how many series have
/// each.
fn tag_list(d: &Daemon, g: &Graphite, tag: Option<&str>) -> Result<Resp, (u16, String)> {
    let all = tagged(d, g, &[])?;
    let out = match tag {
        None => {
            let mut tags = std::collections::BTreeSet::new();
            for t in &all {
                tags.insert("name".to_string());
                tags.extend(t.tags.iter().map(|(k, _)| k.clone()));
            }
            let items: Vec<String> = tags
                .iter()
                .map(|t| format!("{{\"tag\": {}}}", json_string(t)))
                .collect();
            format!("[{}]", items.join(", "))
        }
        Some(tag) => {
            let mut values: std::collections::BTreeMap<String, usize> = Default::default();
            for t in &all {
                if let Some(v) = t.get(tag) {
                    *values.entry(v.to_string()).or_default() += 1;
                }
            }
            let items: Vec<String> = values
                .iter()
                .map(|(v, n)| format!("{{\"count\": {n}, \"value\": {}}}", json_string(v)))
                .collect();
            format!(
                "{{\"tag\": {}, \"values\": [{}]}}",
                json_string(tag),
                items.join(", ")
            )
        }
    };
    Ok(body("application/json", out.into_bytes()))
}

fn render_route(
    d: &Daemon,
    g: &Graphite,
    params: &[(String, String)],
    now: i64,
) -> Result<Resp, (u16, String)> {
    let get = |k: &str| params.iter().find(|(p, _)| p == k).map(|(_, v)| v.as_str());
    let bad = |m: String| (400, m);
    let targets: Vec<String> = params
        .iter()
        .filter(|(k, _)| k == "target" || k == "target[]")
        .map(|(_, v)| v.clone())
        .filter(|v| !v.trim().is_empty())
        .collect();
    let now = match get("now") {
        Some(n) => super::time::parse(n, now).map_err(bad)?,
        None => now,
    };
    let from = super::time::parse(get("from").unwrap_or("-1d"), now).map_err(bad)?;
    let until = super::time::parse(get("until").unwrap_or("now"), now).map_err(bad)?;
    let limits = Limits::default();
    let store = Store { d, g };
    let mut ctx = Ctx::new(&store, from, until, now, &limits);
    // `template[name]=value`: values every template() of the request takes (graphite-web
    // keeps the last of a name given twice, in the place of its first, and reads the name
    // as the key less its first nine and last characters).
    let mut template: Vec<(String, String)> = Vec::new();
    for (k, v) in params.iter().filter(|(k, _)| k.starts_with("template[")) {
        let name = k.get(9..k.len().saturating_sub(1).max(9)).unwrap_or("");
        graphite::ctx::dict_set(&mut template, name.to_string(), v.clone());
    }
    ctx.state.template = std::rc::Rc::new(template);
    if let Some(x) = get("xFilesFactor") {
        let x: f64 = x
            .trim()
            .parse()
            .map_err(|_| bad(format!("xFilesFactor '{x}' is not a number")))?;
        ctx.state.xff.set(Some(x));
    }
    let mut series = functions::evaluate(&ctx, &targets).map_err(bad)?;
    let format = get("format").unwrap_or("json");
    Ok(match format {
        "json" => {
            if let Some(m) = get("maxDataPoints") {
                let m: usize = m
                    .parse()
                    .map_err(|_| bad(format!("maxDataPoints '{m}' is not a count")))?;
                series::fit(&mut series, m).map_err(bad)?;
            }
            let out = format::json(&series, get("noNullPoints").is_some());
            match get("jsonp") {
                Some(cb)
                    if cb
                        .bytes()
                        .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'.') =>
                {
                    body("text/javascript", format!("{cb}({out})").into_bytes())
                }
                Some(_) => return Err(bad("jsonp must be a function name".into())),
                None => body("application/json", out.into_bytes()),
            }
        }
        "csv" => body("text/csv", format::csv(&series).into_bytes()),
        "raw" => body("text/plain", format::raw(&series).into_bytes()),
        "pickle" => body("application/pickle", format::pickle(&series)),
        other => {
            return Err(bad(format!(
                "format '{other}' is not served (json, csv, raw, pickle)"
            )))
        }
    })
}

/// The nodes a find query names: (path, name, is a leaf), sorted, each once.
fn nodes(d: &Daemon, g: &Graphite, query: &str) -> Result<Vec<(String, bool)>, String> {
    let pat = Pattern::new(query)?;
    let leaves = g.leaves(d);
    let prefix = pat.prefix();
    let mut out: std::collections::BTreeSet<(String, bool)> = Default::default();
    for path in leaves.range(prefix.clone()..).map(|(p, _)| p) {
        if !path.starts_with(&prefix) {
            break;
        }
        // Tagged series are found by their tags, not in the tree.
        if path.contains(';') {
            continue;
        }
        if let Some((node, leaf)) = pat.node_of(path) {
            out.insert((node.to_string(), leaf));
        }
    }
    Ok(out.into_iter().collect())
}

/// `/metrics/find`, as graphite-web's find view answers: `query` (required), `format`
/// (`treejson`, the default; `completer`, `nodelist` with `position`, `json`, `pickle`),
/// `leavesOnly`, `wildcards`, `automatic_variants`, `jsonp`; `from`, `until` and `local` are
/// taken and change nothing (every series here is local and has all its times). The
/// matches are sorted by their last node; treejson names each by the query's base path
/// (its nodes before the last) and that node, once each, branches first.
fn find(d: &Daemon, g: &Graphite, params: &[(String, String)]) -> Result<Resp, (u16, String)> {
    let get = |k: &str| params.iter().find(|(p, _)| p == k).map(|(_, v)| v.as_str());
    let int = |k: &str| -> Result<i64, (u16, String)> {
        match get(k) {
            None => Ok(0),
            Some(v) => v
                .trim()
                .parse()
                .map_err(|_| (400, format!("Invalid int value '{v}' for param {k}"))),
        }
    };
    let Some(query) = get("query") else {
        return Err((400, "Missing required parameter 'query'".into()));
    };
    if query.is_empty() {
        return Err((400, "Required parameter 'query' is empty".into()));
    }
    let format = get("format").unwrap_or("treejson");
    let leaves_only = int("leavesOnly")? != 0;
    let wildcards = int("wildcards")? != 0;
    let position = match get("position") {
        Some(_) => int("position")?,
        None => -1,
    };
    let base = match query.rsplit_once('.') {
        Some((b, _)) => format!("{b}."),
        None => String::new(),
    };
    let mut q = query.to_string();
    if format == "completer" {
        q = q.replace("..", "*.");
        if !q.ends_with('*') {
            q.push('*');
        }
        if int("automatic_variants")? != 0 {
            q = q
                .split('.')
                .map(|p| {
                    if p.contains(',') && !p.contains('{') {
                        format!("{{{p}}}")
                    } else {
                        p.to_string()
                    }
                })
                .collect::<Vec<_>>()
                .join(".");
        }
    }
    let mut found: Vec<(String, bool)> = nodes(d, g, &q)
        .map_err(|e| (400, e))?
        .into_iter()
        .filter(|(_, leaf)| *leaf || !leaves_only)
        .collect();
    let name_of = |p: &str| p.rsplit('.').next().unwrap_or(p).to_string();
    found.sort_by_key(|(p, _)| name_of(p));
    let jsonp = get("jsonp").filter(|j| !j.is_empty());
    let reply = |out: String| -> Result<Resp, (u16, String)> {
        match jsonp {
            Some(cb) => Ok(body("text/javascript", format!("{cb}({out})").into_bytes())),
            None => Ok(body("application/json", out.into_bytes())),
        }
    };
    let b = |x: bool| if x { 1 } else { 0 };
    match format {
        "treejson" => {
            let mut items = Vec::new();
            if found.len() > 1 && wildcards {
                let branch = found.iter().any(|(_, leaf)| !leaf);
                items.push(format!(
                    "{{\"text\": \"*\", \"id\": {}, \"allowChildren\": {}, \"expandable\": {}, \"leaf\": {}}}",
                    json_string(&format!("{base}*")),
                    b(branch),
                    b(branch),
                    b(!branch)
                ));
            }
            let mut seen = std::collections::HashSet::new();
            let (mut branches, mut leaves) = (Vec::new(), Vec::new());
            for (p, leaf) in &found {
                let name = name_of(p);
                if !seen.insert(name.clone()) {
                    continue;
                }
                let item = format!(
                    "{{\"text\": {}, \"id\": {}, \"allowChildren\": {}, \"expandable\": {}, \"leaf\": {}}}",
                    json_string(&name),
                    json_string(&format!("{base}{name}")),
                    b(!leaf),
                    b(!leaf),
                    b(*leaf)
                );
                if *leaf {
                    leaves.push(item);
                } else {
                    branches.push(item);
                }
            }
            items.extend(branches);
            items.extend(leaves);
            reply(format!("[{}]", items.join(", ")))
        }
        "completer" => {
            let mut items: Vec<String> = found
                .iter()
                .map(|(p, leaf)| {
                    let path = if *leaf { p.clone() } else { format!("{p}.") };
                    format!(
                        "{{\"path\": {}, \"name\": {}, \"is_leaf\": \"{}\"}}",
                        json_string(&path),
                        json_string(&name_of(p)),
                        b(*leaf)
                    )
                })
                .collect();
            if items.len() > 1 && wildcards {
                items.push("{\"name\": \"*\"}".into());
            }
            reply(format!("{{\"metrics\": [{}]}}", items.join(", ")))
        }
        "nodelist" => {
            let mut nodes = std::collections::BTreeSet::new();
            for (p, _) in &found {
                let parts: Vec<&str> = p.split('.').collect();
                let i = if position < 0 {
                    parts.len() as i64 + position
                } else {
                    position
                };
                match usize::try_from(i).ok().and_then(|i| parts.get(i)) {
                    Some(n) => {
                        nodes.insert(n.to_string());
                    }
                    None => return Err((400, format!("{p} has no node {position}"))),
                }
            }
            let list: Vec<String> = nodes.iter().map(|n| json_string(n)).collect();
            reply(format!("{{\"nodes\": [{}]}}", list.join(", ")))
        }
        "json" => {
            let mut sorted = found.clone();
            sorted.sort();
            let list: Vec<String> = sorted
                .iter()
                .map(|(p, leaf)| {
                    if *leaf {
                        format!(
                            "{{\"path\": {}, \"is_leaf\": true, \"intervals\": []}}",
                            json_string(p)
                        )
                    } else {
                        format!("{{\"path\": {}, \"is_leaf\": false}}", json_string(p))
                    }
                })
                .collect();
            reply(format!("[{}]", list.join(", ")))
        }
        // What graphite-web's CLUSTER_SERVERS ask for: path, is_leaf, intervals (none).
        "pickle" => {
            let mut p = format::Pickle::new();
            p.list(&found, |p, (path, leaf)| {
                p.dict(|p| {
                    p.text("path");
                    p.text(path);
                    p.text("is_leaf");
                    p.bool(*leaf);
                    p.text("intervals");
                    p.list::<u8>(&[], |_, _| {});
                })
            });
            Ok(body("application/pickle", p.finish()))
        }
        _ => Err((400, "Invalid value for 'format' parameter".into())),
    }
}

/// `/metrics/expand`: the paths each `query` matches (`leavesOnly`: leaves only), sorted,
/// all together or, with `groupByExpr`, by query; `jsonp`.
fn expand(d: &Daemon, g: &Graphite, params: &[(String, String)]) -> Result<Resp, (u16, String)> {
    let truthy = |k: &str| {
        params
            .iter()
            .any(|(p, v)| p == k && v.trim().parse::<i64>().is_ok_and(|v| v != 0))
    };
    let leaves_only = truthy("leavesOnly");
    let mut by_query: Vec<(String, std::collections::BTreeSet<String>)> = Vec::new();
    for (_, q) in params.iter().filter(|(k, _)| k == "query") {
        let mut set = std::collections::BTreeSet::new();
        for (p, leaf) in nodes(d, g, q).map_err(|e| (400, e))? {
            if !leaves_only || leaf {
                set.insert(p);
            }
        }
        match by_query.iter_mut().find(|(k, _)| k == q) {
            Some((_, s)) => *s = set,
            None => by_query.push((q.clone(), set)),
        }
    }
    let list = |s: &std::collections::BTreeSet<String>| {
        s.iter()
            .map(|p| json_string(p))
            .collect::<Vec<_>>()
            .join(", ")
    };
    let out = if truthy("groupByExpr") {
        let items: Vec<String> = by_query
            .iter()
            .map(|(q, s)| format!("{}: [{}]", json_string(q), list(s)))
            .collect();
        format!("{{\"results\": {{{}}}}}", items.join(", "))
    } else {
        let all: std::collections::BTreeSet<String> =
            by_query.into_iter().flat_map(|(_, s)| s).collect();
        format!("{{\"results\": [{}]}}", list(&all))
    };
    match params.iter().find(|(k, _)| k == "jsonp").map(|(_, v)| v) {
        Some(cb) if !cb.is_empty() => {
            Ok(body("text/javascript", format!("{cb}({out})").into_bytes()))
        }
        _ => Ok(body("application/json", out.into_bytes())),
    }
}

/// `/tags/findSeries`: the tagged series every `expr` matches, sorted.
fn find_series(
    d: &Daemon,
    g: &Graphite,
    params: &[(String, String)],
) -> Result<Resp, (u16, String)> {
    if !exprs_of(params)?.iter().any(super::tags::Expr::positive) {
        return Err((
            400,
            "At least one tagspec must not match the empty string".into(),
        ));
    }
    let mut paths: Vec<String> = tagged(d, g, params)?
        .iter()
        .map(super::tags::Tagged::canonical)
        .collect();
    paths.sort();
    let list: Vec<String> = paths.iter().map(|p| json_string(p)).collect();
    Ok(body(
        "application/json",
        format!("[{}]", list.join(", ")).into_bytes(),
    ))
}
