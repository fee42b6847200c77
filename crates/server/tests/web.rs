//! The web page's side of `--http` (crates/server/src/web.rs): the page and its assets are
//! served whole and within the page weight; `/api/series` lists and filters the series;
//! `/api/fetch` gives exactly the rows `rrdtool fetch -r` gives on a file fed the same
//! updates (Debian's rrdtool as the oracle) for the archive it picks, and an archive named;
//! `/api/stats` is STATS; every bad request gets a 4xx with a JSON reason, and the daemon
//! keeps serving. (The page itself
//! is checked in headless Chromium by crates/ringlet/tests/real/web.sh.)

mod common;

use common::*;
use std::io::Write;
use testkit::json::Value;

/// (status, headers, body) of a GET.
fn http(port: u16, path: &str) -> (u16, String, String) {
    http_request(port, "GET", path, "")
}

fn get(port: u16, path: &str) -> String {
    http_get(port, path)
}

/// The first value named `key` in a JSON reply (depth first, in the reply's order): a
/// string's text, or a number's or a boolean's.
fn field(json: &str, key: &str) -> String {
    fn find<'a>(v: &'a Value, key: &str) -> Option<&'a Value> {
        match v {
            Value::Object(m) => m.get(key).or_else(|| m.values().find_map(|x| find(x, key))),
            Value::Array(a) => a.iter().find_map(|x| find(x, key)),
            _ => None,
        }
    }
    let v = testkit::json::parse(json);
    match find(&v, key).unwrap_or_else(|| panic!("no {key} in {json}")) {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// The `values` array of a fetch reply (None for null).
fn values(json: &str) -> Vec<Option<f64>> {
    let v = testkit::json::parse(json);
    v["values"]
        .as_array()
        .expect("values")
        .iter()
        .map(|x| {
            if x.is_null() {
                None
            } else {
                Some(x.as_f64().expect("a number"))
            }
        })
        .collect()
}

/// `rrdtool fetch` rows (time, value of DS `ds`).
fn rrdtool_fetch(dir: &std::path::Path, args: &[&str], ds: usize) -> Vec<(i64, Option<f64>)> {
    let mut a: Vec<String> = vec!["fetch".into()];
    a.extend(args.iter().map(|s| s.to_string()));
    let o = rrdtool(dir, &a);
    assert_eq!(o.code, 0, "rrdtool {a:?}: {}", o.stderr);
    o.stdout
        .lines()
        .filter_map(|l| l.split_once(':'))
        .filter_map(|(t, vs)| {
            let t: i64 = t.trim().parse().ok()?;
            let v = vs.split_whitespace().nth(ds)?;
            let v: f64 = v.parse().ok()?;
            Some((t, (!v.is_nan()).then_some(v)))
        })
        .collect()
}

#[test]
fn the_page_its_api_and_rrdtools_rows() {
    if !need(&["rrdtool"]) {
        return;
    }
    let dir = TempDir::new("web");
    let hport = free_port();
    let d = Ringlet::start(
        dir.path(),
        &["-w", "120", "--http", &format!("127.0.0.1:{hport}")],
    );
    std::fs::create_dir_all(d.base.join("web")).unwrap();
    std::fs::create_dir_all(d.base.join("h1")).unwrap();
    let mut s = connect(&d.sock);
    // Two days of minutes before a fixed time: a saw 0..99 and a counter; hourly MAX and
    // AVERAGE archives.
    // A whole hour (1,800,000,000 is one).
    let end: i64 = 1_800_000_000;
    let t0 = end - 2 * 86_400;
    assert!(request(
        &mut s,
        &format!("CREATE web/known.rrd -b {t0} -s 60 DS:v:GAUGE:120:U:U DS:w:COUNTER:120:U:U RRA:AVERAGE:0.5:1:2880 RRA:MAX:0.5:60:48 RRA:AVERAGE:0.5:60:400")
    )
    .starts_with("0 "));
    assert!(request(
        &mut s,
        &format!("CREATE h1/load.rrd -b {t0} -s 60 DS:shortterm:GAUGE:120:0:U RRA:LAST:0.5:1:100")
    )
    .starts_with("0 "));
    let mut batch = String::from("BATCH\n");
    let mut c = 0u64;
    // The same updates into a file of rrdtool's own, the oracle (`rrdtool fetch --daemon`
    // cannot ask for a resolution: rrdcached's FETCH has none).
    let oracle = dir.path().join("known.rrd").display().to_string();
    let mut create: Vec<String> = ["create", &oracle, "-b", &t0.to_string(), "-s", "60"]
        .iter()
        .map(|s| s.to_string())
        .collect();
    create.extend(
        [
            "DS:v:GAUGE:120:U:U",
            "DS:w:COUNTER:120:U:U",
            "RRA:AVERAGE:0.5:1:2880",
        ]
        .iter()
        .chain(&["RRA:MAX:0.5:60:48", "RRA:AVERAGE:0.5:60:400"])
        .map(|s| s.to_string()),
    );
    assert_eq!(rrdtool(dir.path(), &create).code, 0);
    let mut update = vec!["update".to_string(), oracle.clone()];
    for k in 1..=2 * 1440i64 {
        let t = t0 + 60 * k;
        c += 1000 + (k as u64 % 7) * 10;
        batch += &format!("UPDATE web/known.rrd {t}:{}:{c}\n", k % 100);
        update.push(format!("{t}:{}:{c}", k % 100));
    }
    assert_eq!(rrdtool(dir.path(), &update).code, 0);
    batch += ".\n";
    s.write_all(batch.as_bytes()).unwrap();
    let go = read_reply(&mut s);
    assert!(go.starts_with("0 Go ahead"), "{go}");
    let r = read_reply(&mut s);
    assert!(r.starts_with("0 errors"), "{r}");

    // The page and its assets: served whole, the page under 300 KB in all.
    let (st, head, page) = http(hport, "/");
    assert_eq!(st, 200);
    assert!(head.contains("text/html"), "{head}");
    for id in [
        "id=\"tree\"",
        "id=\"search\"",
        "id=\"chart\"",
        "id=\"legend\"",
        "id=\"disk\"",
    ] {
        assert!(page.contains(id), "the page has no {id}");
    }
    let js = get(hport, "/ui/uPlot.iife.min.js");
    let css = get(hport, "/ui/uPlot.min.css");
    assert!(js.contains("uPlot"));
    let weight = page.len() + js.len() + css.len();
    assert!(weight <= 300_000, "page weight {weight} bytes");
    eprintln!(
        "page weight: {weight} bytes (page {}, uPlot {} + {})",
        page.len(),
        js.len(),
        css.len()
    );

    // The series, filtered as the search box asks.
    let all = get(hport, "/api/series");
    assert_eq!(field(&all, "total"), "2");
    assert!(
        all.contains("\"name\": \"web/known.rrd\", \"step\": 60"),
        "{all}"
    );
    assert!(all.contains("{\"name\": \"v\", \"type\": \"GAUGE\", \"path\": \"web.known.v\"}"));
    assert!(all.contains("{\"cf\": \"MAX\", \"pdp\": 60, \"rows\": 48, \"step\": 3600}"));
    let one = get(hport, "/api/series?q=KNOWN%20w");
    assert_eq!(field(&one, "total"), "1");
    assert!(one.contains("web/known.rrd"));
    let by_path = get(hport, "/api/series?q=h1.load.short");
    assert_eq!(field(&by_path, "total"), "1");
    assert!(by_path.contains("h1/load.rrd"));
    let limited = get(hport, "/api/series?limit=1");
    assert_eq!(
        (
            field(&limited, "total").as_str(),
            field(&limited, "shown").as_str()
        ),
        ("2", "1")
    );

    // The tree, a directory at a time.
    assert_eq!(
        get(hport, "/api/tree"),
        "{\"dir\": \"\", \"total\": 2, \"under\": 2, \"dirs\": [{\"name\": \"h1\", \"series\": 1}, {\"name\": \"web\", \"series\": 1}], \"series\": [], \"more\": false}"
    );
    let web = get(hport, "/api/tree?dir=web/");
    assert!(web.starts_with("{\"dir\": \"web\", \"total\": 2, \"under\": 1, \"dirs\": [], \"series\": [{\"name\": \"web/known.rrd\""), "{web}");

    // Rows as rrdtool fetch gives them, for the archive it picks at a row a pixel.
    for (from, until, width, ds, cf) in [
        (end - 3600, end, 1000u64, "v", "AVERAGE"),
        (end - 86_400, end - 600, 1000, "v", "AVERAGE"),
        (end - 86_400, end, 20, "v", "AVERAGE"),
        (end - 86_400, end, 1000, "w", "AVERAGE"),
        (end - 2 * 86_400, end, 30, "v", "MAX"),
    ] {
        let body = get(
            hport,
            &format!("/api/fetch?series=web/known.rrd&ds={ds}&cf={cf}&from={from}&until={until}&width={width}"),
        );
        let res = ((until - from) as u64 / width).max(1).to_string();
        let want = rrdtool_fetch(
            dir.path(),
            &[
                &oracle,
                cf,
                "-s",
                &from.to_string(),
                "-e",
                &until.to_string(),
                "-r",
                &res,
            ],
            if ds == "v" { 0 } else { 1 },
        );
        let (start, step): (i64, i64) = (
            field(&body, "start").parse().unwrap(),
            field(&body, "step").parse().unwrap(),
        );
        let got: Vec<(i64, Option<f64>)> = values(&body)
            .into_iter()
            .enumerate()
            .map(|(i, v)| (start + i as i64 * step, v))
            .collect();
        assert_eq!(got.len(), want.len(), "{from}..{until} w{width} {ds} {cf}");
        for ((t1, v1), (t2, v2)) in got.iter().zip(&want) {
            assert_eq!(t1, t2);
            match (v1, v2) {
                (Some(a), Some(b)) => {
                    assert!((a - b).abs() <= 1e-9 * b.abs().max(1.0), "{t1}: {a} {b}")
                }
                (a, b) => assert_eq!(a, b, "{t1}"),
            }
        }
        assert!(got.iter().any(|(_, v)| v.is_some()), "{body}");
    }
    // The hourly archive when the range is wide for the width; the minutes when not.
    let wide = get(
        hport,
        &format!(
            "/api/fetch?series=web/known.rrd&from={}&until={end}&width=24",
            end - 86_400
        ),
    );
    assert_eq!(
        (field(&wide, "rra").as_str(), field(&wide, "step").as_str()),
        ("2", "3600")
    );
    // An archive named: its rows over the same slots.
    let max = get(
        hport,
        &format!(
            "/api/fetch?series=web/known.rrd&rra=1&from={}&until={end}",
            end - 86_400
        ),
    );
    assert_eq!(field(&max, "rraCf"), "MAX");
    // rrdtool picks the same archive for MAX at an hour a row.
    let want: Vec<Option<f64>> = rrdtool_fetch(
        dir.path(),
        &[
            &oracle,
            "MAX",
            "-s",
            &(end - 86_400).to_string(),
            "-e",
            &end.to_string(),
            "-r",
            "3600",
        ],
        0,
    )
    .into_iter()
    .map(|(_, v)| v)
    .collect();
    assert_eq!(values(&max), want);
    assert_eq!(want.iter().flatten().count(), 24);
    // Relative times, as the presets send them, and a CF given in any case.
    let rel = get(
        hport,
        "/api/fetch?series=h1/load.rrd&cf=last&from=-1h&until=now",
    );
    assert_eq!(field(&rel, "cf"), "LAST");

    // STATS as JSON, and the projection.
    let st = get(hport, "/api/stats");
    assert_eq!(field(&st, "TreeNodesNumber"), "2");
    assert_eq!(field(&st, "lossWindowSeconds"), "120");
    assert!(st.contains("\"perFileWrite\": 12399"), "{st}");

    // Bad requests: a 4xx and the reason, as JSON.
    for (path, code, says) in [
        ("/api/fetch", 400, "needs series"),
        ("/api/fetch?series=nope.rrd", 404, "no series nope.rrd"),
        ("/api/fetch?series=../../etc/passwd", 404, "no series"),
        (
            "/api/fetch?series=web/known.rrd&ds=zz",
            400,
            "no data source zz",
        ),
        (
            "/api/fetch?series=web/known.rrd&cf=LAST",
            400,
            "no LAST archive",
        ),
        (
            "/api/fetch?series=web/known.rrd&cf=HWPREDICT",
            400,
            "no HWPREDICT",
        ),
        ("/api/fetch?series=web/known.rrd&rra=7", 400, "rra '7'"),
        (
            "/api/fetch?series=web/known.rrd&from=now&until=-1h",
            400,
            "must be after",
        ),
        (
            "/api/fetch?series=web/known.rrd&from=yesterdayish",
            400,
            "from:",
        ),
        (
            "/api/fetch?series=web/known.rrd&from=100&until=200",
            400,
            "after 1980",
        ),
        ("/api/fetch?series=web/known.rrd&width=0", 400, "width"),
        (
            "/api/fetch?series=web/known.rrd&rra=0&from=19800102&until=now",
            400,
            "narrow the range",
        ),
        ("/api/series?limit=lots", 400, "limit"),
        ("/api/tree?dir=we", 404, "no series under we/"),
        ("/api/tree?dir=..%2F..", 404, "no series under"),
        ("/api/nothing", 404, "no such endpoint"),
    ] {
        let (st, head, body) = http(hport, path);
        assert_eq!(st, code, "{path}: {body}");
        assert!(head.contains("application/json"), "{path}: {head}");
        assert!(
            body.starts_with("{\"error\": \"") && body.contains(says),
            "{path}: {body}"
        );
    }
    // Still serving, graphite-web's API beside the page's.
    assert_eq!(get(hport, "/version").trim(), "1.1.8");
    assert!(request(&mut s, "PING").starts_with("0 PONG"));
}

/// The page's lists read as every reader does: a series' queued values are applied first,
/// so `last` is what LAST says (it showed the last value applied before the queue).
#[test]
fn the_series_lists_show_the_last_update_the_daemon_accepted() {
    let dir = TempDir::new("web-last");
    let hport = free_port();
    let d = Ringlet::start(
        dir.path(),
        &["-w", "3600", "--http", &format!("127.0.0.1:{hport}")],
    );
    std::fs::create_dir_all(d.base.join("q")).unwrap();
    let mut s = connect(&d.sock);
    let reply = request(
        &mut s,
        "CREATE q/a.rrd -b 1700000000 -s 10 DS:v:GAUGE:20:U:U RRA:LAST:0.5:1:100",
    );
    assert!(reply.starts_with("0 "), "{reply}");
    for t in [1700000010, 1700000020] {
        let reply = request(&mut s, &format!("UPDATE q/a.rrd {t}:1"));
        assert!(reply.starts_with("0 "), "{reply}");
    }
    for path in ["/api/series?q=q/a", "/api/tree?dir=q"] {
        let body = get(hport, path);
        let v = testkit::json::parse(&body);
        let last = v["series"][0]["last"].as_i64();
        assert_eq!(last, Some(1700000020), "{path}: {body}");
    }
    // The chart's rows hold both values (nothing else has read or committed them).
    let body = get(
        hport,
        "/api/fetch?series=q/a.rrd&cf=LAST&from=1700000000&until=1700000030",
    );
    let v = testkit::json::parse(&body);
    let known: Vec<f64> = v["values"]
        .as_array()
        .unwrap_or_else(|| panic!("{body}"))
        .iter()
        .filter_map(|x| x.as_f64())
        .collect();
    assert_eq!(known, vec![1.0, 1.0], "{body}");
    assert_eq!(request(&mut s, "LAST q/a.rrd"), "0 1700000020\n");
}
