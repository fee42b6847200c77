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
pub const GRAPHITE_VERSION: &str = "1.1.10";

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
        "/metrics/find" | "/metrics" => find(d, g, get("query").unwrap_or(""), get("format")),
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
        "/tags" => tag_list(d, g, None),
        p if p.starts_with("/tags/") && !p[6..].contains('/') => tag_list(d, g, Some(&p[6..])),
        _ => Err((404, format!("no such page: {path}"))),
    };
    match r {
        Ok(r) => r,
        Err((code, msg)) => text(code, &msg),
    }
}

/// The tagged series (their parsed names) that every `expr` of the request matches.
fn tagged(
    d: &Daemon,
    g: &Graphite,
    params: &[(String, String)],
) -> Result<Vec<super::tags::Tagged>, (u16, String)> {
    let exprs: Vec<super::tags::Expr> = params
        .iter()
        .filter(|(k, _)| k == "expr" || k == "expr[]")
        .map(|(_, v)| super::tags::Expr::parse(v))
        .collect::<Result<_, _>>()
        .map_err(|e| (400, e))?;
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
    let mut out = std::collections::BTreeSet::new();
    for t in tagged(d, g, params)? {
        match tag {
            None => {
                let p = get("tagPrefix").unwrap_or("");
                out.extend(
                    std::iter::once("name".to_string())
                        .chain(t.tags.iter().map(|(k, _)| k.clone()))
                        .filter(|k| k.starts_with(p)),
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
    let ctx = Ctx::new(&store, from, until, now, &limits);
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

fn find(
    d: &Daemon,
    g: &Graphite,
    query: &str,
    format: Option<&str>,
) -> Result<Resp, (u16, String)> {
    if query.is_empty() {
        return Err((400, "find needs a query".into()));
    }
    // graphite-web's completer takes a trailing dot as "everything below".
    let q = if query.ends_with('.') {
        format!("{query}*")
    } else {
        query.to_string()
    };
    let found = nodes(d, g, &q).map_err(|e| (400, e))?;
    let mut out = String::new();
    match format.unwrap_or("treejson") {
        "treejson" => {
            out.push('[');
            for (i, (p, leaf)) in found.iter().enumerate() {
                if i > 0 {
                    out.push_str(", ");
                }
                let name = p.rsplit('.').next().unwrap_or(p);
                let b = |x: bool| if x { 1 } else { 0 };
                out.push_str(&format!(
                    "{{\"allowChildren\": {}, \"expandable\": {}, \"leaf\": {}, \"id\": {}, \"text\": {}, \"context\": {{}}}}",
                    b(!leaf),
                    b(!leaf),
                    b(*leaf),
                    json_string(p),
                    json_string(name)
                ));
            }
            out.push(']');
        }
        "completer" => {
            out.push_str("{\"metrics\": [");
            for (i, (p, leaf)) in found.iter().enumerate() {
                if i > 0 {
                    out.push_str(", ");
                }
                let name = p.rsplit('.').next().unwrap_or(p);
                let path = if *leaf { p.clone() } else { format!("{p}.") };
                out.push_str(&format!(
                    "{{\"path\": {}, \"name\": {}, \"is_leaf\": \"{}\"}}",
                    json_string(&path),
                    json_string(name),
                    if *leaf { 1 } else { 0 }
                ));
            }
            out.push_str("]}");
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
            return Ok(body("application/pickle", p.finish()));
        }
        other => {
            return Err((
                400,
                format!("find format '{other}' is not served (treejson, completer, pickle)"),
            ))
        }
    }
    Ok(body("application/json", out.into_bytes()))
}

fn expand(d: &Daemon, g: &Graphite, params: &[(String, String)]) -> Result<Resp, (u16, String)> {
    let leaves_only = params
        .iter()
        .any(|(k, v)| k == "leavesOnly" && (v == "1" || v.eq_ignore_ascii_case("true")));
    let mut all: std::collections::BTreeSet<String> = Default::default();
    for (_, q) in params.iter().filter(|(k, _)| k == "query") {
        for (p, leaf) in nodes(d, g, q).map_err(|e| (400, e))? {
            if !leaves_only || leaf {
                all.insert(p);
            }
        }
    }
    let list: Vec<String> = all.iter().map(|p| json_string(p)).collect();
    Ok(body(
        "application/json",
        format!("{{\"results\": [{}]}}", list.join(", ")).into_bytes(),
    ))
}
