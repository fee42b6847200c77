//! The HTTP listener (`--http ADDR`, [`crate::httpd`]): one server, two sets of routes. The
//! web page's ([`crate::web`]: the page, its assets and its API) come first, then
//! graphite-web's API ([`crate::graphite::http`]).

use crate::daemon::Daemon;
use crate::graphite::Graphite;
use crate::httpd::{Query, Request, Response};
use std::sync::Arc;

/// Serve the web page and graphite-web's API on `listener` (its bounds: `limits`).
pub fn serve(
    d: Arc<Daemon>,
    g: Arc<Graphite>,
    listener: std::net::TcpListener,
    limits: crate::httpd::Limits,
) {
    let handler = Arc::new(move |req: Request| {
        if d.closing() {
            return Response::text(503, "shutting down");
        }
        // Rows the disk no longer holds as written are an error, not a gap in the graph.
        match rrd::rows::watch(|| route(&d, &g, &Query::of(&req))) {
            (r, None) => r,
            (_, Some(dm)) => Response::text(500, &dm.message("a series this request reads")),
        }
    });
    let _ = crate::httpd::serve(listener, limits, handler);
}

fn route(d: &Daemon, g: &Graphite, q: &Query) -> Response {
    if let Some(r) = crate::web::route(d, &q.path, &q.params, q.now) {
        let cache = if r.immutable {
            "public, max-age=86400"
        } else {
            "no-store"
        };
        return Response::new(r.code, r.content_type, r.body).with_header("Cache-Control", cache);
    }
    crate::graphite::http::route(d, g, q)
}
