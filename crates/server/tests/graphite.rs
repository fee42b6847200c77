//! `ringlet serve --http ADDR`: graphite-web's API over the store. Points sent with carbon's
//! protocol and an RRD fed through the rrdcached protocol come back from `/render` (json,
//! csv, raw, pickle; functions; maxDataPoints) and are listed by `/metrics/find`,
//! `/metrics/expand` and `/metrics/index.json`; bad requests get a 400 with the reason.

mod common;

use common::*;
use std::io::Write;
use std::net::TcpStream;
use std::time::Duration;

/// (status, body) of an HTTP/1.0 request.
fn http(port: u16, method: &str, path: &str, body: &str) -> (u16, String) {
    let (st, _, b) = http_request(port, method, path, body);
    (st, b)
}

fn get(port: u16, path: &str) -> String {
    http_get(port, path)
}

#[test]
fn the_render_api_serves_carbons_points_and_rrd_files() {
    let dir = TempDir::new("graphite");
    let (cport, hport) = (free_port(), free_port());
    let d = Ringlet::start(
        dir.path(),
        &[
            "-R",
            "-w",
            "3600",
            "--carbon",
            &cport.to_string(),
            "--http",
            &format!("127.0.0.1:{hport}"),
        ],
    );
    // Ten-second slots (the built-in schema); 30 points each, from t0.
    let t0: i64 = 1_700_000_000;
    let mut lines = String::new();
    for k in 0..30i64 {
        lines += &format!("servers.web1.cpu {k} {}\n", t0 + 10 * k);
        lines += &format!("servers.web2.cpu {} {}\n", 2 * k, t0 + 10 * k);
        if k % 3 != 1 {
            lines += &format!("servers.db1.cpu {} {}\n", k % 4, t0 + 10 * k);
        }
    }
    let mut c = TcpStream::connect(("127.0.0.1", cport)).unwrap();
    c.write_all(lines.as_bytes()).unwrap();
    drop(c);
    let mut s = connect(&d.sock);
    for _ in 0..200 {
        let r = request(&mut s, "STATS");
        if r.contains("CarbonPoints: 80\n") {
            break;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    // An RRD with two data sources, through the rrdcached protocol.
    assert!(request(
        &mut s,
        &format!(
            "CREATE host/load.rrd -b {} -s 10 DS:short:GAUGE:20:U:U DS:long:GAUGE:20:U:U RRA:AVERAGE:0.5:1:100",
            t0 - 10
        )
    )
    .starts_with("0 "));
    assert!(request(
        &mut s,
        &format!("UPDATE host/load.rrd {}:1:2 {}:3:4", t0 + 10, t0 + 20)
    )
    .starts_with("0 "));

    assert_eq!(get(hport, "/version").trim(), "1.1.8");
    assert_eq!(
        get(hport, "/metrics/index.json"),
        "[\"host.load.long\", \"host.load.short\", \"servers.db1.cpu\", \"servers.web1.cpu\", \"servers.web2.cpu\"]"
    );
    let f = get(hport, "/metrics/find?query=servers.*");
    assert!(
        f.contains("{\"text\": \"db1\", \"id\": \"servers.db1\", \"allowChildren\": 1"),
        "{f}"
    );
    assert!(f.contains("\"leaf\": 0"), "{f}");
    let f = get(
        hport,
        "/metrics/find?query=servers.web*.cpu&format=completer",
    );
    assert_eq!(
        f,
        "{\"metrics\": [{\"path\": \"servers.web1.cpu\", \"name\": \"cpu\", \"is_leaf\": \"1\"}, {\"path\": \"servers.web2.cpu\", \"name\": \"cpu\", \"is_leaf\": \"1\"}]}"
    );
    assert_eq!(
        get(
            hport,
            "/metrics/expand?query=servers.{web1,db1}.cpu&query=host.*"
        ),
        "{\"results\": [\"host.load\", \"servers.db1.cpu\", \"servers.web1.cpu\"]}"
    );

    let range = format!("from={}&until={}", t0 - 10, t0 + 30);
    // Whisper's slots: the one after from's to until's, each labelled by its start.
    assert_eq!(
        get(
            hport,
            &format!("/render?target=servers.web1.cpu&{range}&format=raw")
        ),
        format!("servers.web1.cpu,{t0},{},10|0.0,1.0,2.0,3.0\n", t0 + 40)
    );
    assert_eq!(
        get(hport, &format!("/render?target=servers.db1.cpu&{range}")),
        format!(
            "[{{\"target\": \"servers.db1.cpu\", \"tags\": {{\"name\": \"servers.db1.cpu\"}}, \"datapoints\": [[0.0, {t0}], [null, {}], [2.0, {}], [3.0, {}]]}}]",
            t0 + 10,
            t0 + 20,
            t0 + 30
        )
    );
    assert_eq!(
        get(hport, &format!("/render?target=host.load.long&{range}&format=csv")),
        "host.load.long,2023-11-14 22:13:20,2.0\r\nhost.load.long,2023-11-14 22:13:30,4.0\r\nhost.load.long,2023-11-14 22:13:40,\r\nhost.load.long,2023-11-14 22:13:50,\r\n"
    );
    let raw = |target: &str| {
        get(
            hport,
            &format!("/render?target={target}&{range}&format=raw"),
        )
    };
    assert_eq!(
        raw("sumSeries(servers.*.cpu)"),
        format!(
            "sumSeries(servers.*.cpu),{t0},{},10|0.0,3.0,8.0,12.0\n",
            t0 + 40
        )
    );
    assert_eq!(
        raw("aliasByNode(servers.web*.cpu,1)"),
        format!(
            "web1,{t0},{e},10|0.0,1.0,2.0,3.0\nweb2,{t0},{e},10|0.0,2.0,4.0,6.0\n",
            e = t0 + 40
        )
    );
    assert_eq!(
        raw("alias(scale(servers.web1.cpu,0.5),'half')"),
        format!("half,{t0},{},10|0.0,0.5,1.0,1.5\n", t0 + 40)
    );
    assert_eq!(
        raw("aliasSub(servers.web1.cpu,'servers\\.(\\w%2B)\\.cpu','\\1-cpu')"),
        format!("web1-cpu,{t0},{},10|0.0,1.0,2.0,3.0\n", t0 + 40)
    );
    assert_eq!(
        raw("transformNull(servers.db1.cpu,-1)"),
        format!(
            "transformNull(servers.db1.cpu,-1),{t0},{},10|0.0,-1.0,2.0,3.0\n",
            t0 + 40
        )
    );
    assert_eq!(
        raw("perSecond(servers.web2.cpu)"),
        format!(
            "perSecond(servers.web2.cpu),{t0},{},10|None,0.2,0.2,0.2\n",
            t0 + 40
        )
    );
    assert_eq!(
        raw("highestMax(servers.*.cpu,1)"),
        format!("servers.web2.cpu,{t0},{},10|0.0,2.0,4.0,6.0\n", t0 + 40)
    );
    // A POSTed form, as Grafana sends it; maxDataPoints consolidates.
    let (st, b) = http(
        hport,
        "POST",
        "/render",
        &format!(
            "target=servers.web1.cpu&from={}&until={}&format=json&maxDataPoints=10",
            t0 - 10,
            t0 + 290
        ),
    );
    assert_eq!(st, 200, "{b}");
    assert_eq!(b.matches("], [").count() + 1, 10, "{b}");
    // Three points a band, the bands aligned to 30 s (graphite-web's nudge).
    assert!(b.contains(&format!("[[1.0, {}], [4.0, ", t0 + 10)), "{b}");
    let p = get(
        hport,
        &format!("/render?target=servers.web1.cpu&{range}&format=pickle"),
    );
    assert!(
        p.contains("pathExpression") && p.ends_with('.'),
        "pickle: {p:?}"
    );

    // graphite-web's grammar reads the longest expression that parses: an unclosed call
    // is the path before it (nothing here), trailing text is left out.
    assert_eq!(get(hport, "/render?target=sumSeries(a"), "[]");
    assert_eq!(
        get(
            hport,
            &format!("/render?target=servers.web1.cpu)junk&{range}&format=raw")
        ),
        format!("servers.web1.cpu,{t0},{},10|0.0,1.0,2.0,3.0\n", t0 + 40)
    );

    // Errors say why.
    for (path, why) in [
        ("/render?target='a'", "a target cannot be a string"),
        ("/render?target=nosuch(a.b)", "unknown function: nosuch"),
        (
            "/render?target=a.b&from=soon",
            "cannot parse the time 'soon'",
        ),
        (
            "/render?target=a.b&format=png",
            "format 'png' is not served",
        ),
        (
            "/render?target=a.b&from=-1h&until=-2h",
            "must be after from",
        ),
        ("/metrics/find?query=a.[b", "unclosed '['"),
        // Centuries at ten seconds a row: refused before a row is read.
        (
            "/render?target=host.load.long&from=19800101&until=21000101",
            "more than 10000000 rows",
        ),
        // The review (issue 44, defect 3): a range whose row count overflowed i64 passed
        // the cap; a function's buckets and several targets add up past a request's budget.
        (
            "/render?target=host.load.long&from=-158548959918y&until=5000000000000000000",
            "more than 10000000 rows",
        ),
        (
            "/render?target=summarize(servers.web1.cpu,'1s')&from=-5y",
            "more than the 10000000 a request may read and make",
        ),
        (
            "/render?target=hitcount(servers.web1.cpu,'1s',true)&from=-5y",
            "more than the 10000000 a request may read and make",
        ),
        (
            "/render?target=host.load.long&target=host.load.short&target=host.load.long\
             &target=host.load.short&from=-2y",
            "more than the 10000000 a request may read and make",
        ),
        (
            "/render?target=movingAverage(host.load.long,2000000)&from=-1y",
            "more work than a request may take",
        ),
    ] {
        let t = std::time::Instant::now();
        let (st, b) = http(hport, "GET", path, "");
        assert_eq!(st, 400, "{path}: {b}");
        assert!(b.contains(why), "{path}: {b}");
        assert!(
            t.elapsed() < Duration::from_secs(5),
            "{path}: {:?}",
            t.elapsed()
        );
    }
    let (st, _) = http(hport, "GET", "/nothing/here", "");
    assert_eq!(st, 404);
    let big = "target=".to_string() + &"a".repeat(2 << 20);
    let (st, _) = http(hport, "POST", "/render", &big);
    assert_eq!(st, 413);
    // The daemon still serves.
    assert!(request(&mut s, "PING").starts_with("0 PONG"));
}

#[test]
fn tagged_series_are_stored_found_by_tag_and_completed() {
    let dir = TempDir::new("graphite-tags");
    let (cport, hport) = (free_port(), free_port());
    let d = Ringlet::start(
        dir.path(),
        &[
            "-w",
            "3600",
            "--carbon",
            &cport.to_string(),
            "--http",
            &format!("127.0.0.1:{hport}"),
        ],
    );
    let t0: i64 = 1_700_000_000;
    let mut lines = String::new();
    for k in 0..4i64 {
        let t = t0 + 10 * k;
        lines += &format!("disk.used;host=a;dc=x {k} {t}\n");
        lines += &format!("disk.used;dc=y;host=b {} {t}\n", 10 * k);
        lines += &format!("cpu.user;host=a;dc=x {} {t}\n", 100 + k);
    }
    // Bad tags are refused; the lines beside them are kept.
    lines += "disk.used;host 1 1700000000\n";
    lines += "disk.used;host=~a 1 1700000000\n";
    let mut c = TcpStream::connect(("127.0.0.1", cport)).unwrap();
    c.write_all(lines.as_bytes()).unwrap();
    drop(c);
    let mut s = connect(&d.sock);
    for _ in 0..200 {
        if request(&mut s, "STATS").contains("CarbonPoints: 12\n") {
            break;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    assert!(request(&mut s, "STATS").contains("CarbonLinesRefused: 2\n"));
    // Stored by canonical name, beside the tree of plain paths.
    assert!(d.base.join("_tagged/disk.used;dc=x;host=a.rrd").is_file());
    let range = format!("from={}&until={}", t0 - 10, t0 + 30);
    let raw = |target: &str| {
        get(
            hport,
            &format!("/render?target={target}&{range}&format=raw"),
        )
    };
    // A tagged name in any order of its tags is the series.
    assert_eq!(
        raw("disk.used;host=a;dc=x"),
        format!(
            "disk.used;dc=x;host=a,{t0},{},10|0.0,1.0,2.0,3.0\n",
            t0 + 40
        )
    );
    assert_eq!(
        raw("seriesByTag('name=disk.used')"),
        format!(
            "disk.used;dc=x;host=a,{t0},{e},10|0.0,1.0,2.0,3.0\ndisk.used;dc=y;host=b,{t0},{e},10|0.0,10.0,20.0,30.0\n",
            e = t0 + 40
        )
    );
    assert_eq!(
        raw("aliasByTags(seriesByTag('host=a','name=~cpu'),'name','dc')"),
        format!("cpu.user.x,{t0},{},10|100.0,101.0,102.0,103.0\n", t0 + 40)
    );
    assert_eq!(
        raw("sumSeries(seriesByTag('name=disk.used','dc!=z'))"),
        format!(
            "sumSeries(seriesByTag('name=disk.used','dc!=z')),{t0},{},10|0.0,11.0,22.0,33.0\n",
            t0 + 40
        )
    );
    let j = get(
        hport,
        &format!("/render?target=seriesByTag('host=b')&{range}"),
    );
    assert!(
        j.contains("\"tags\": {\"dc\": \"y\", \"host\": \"b\", \"name\": \"disk.used\"}"),
        "{j}"
    );
    assert_eq!(
        get(hport, "/tags/autoComplete/tags"),
        "[\"dc\", \"host\", \"name\"]"
    );
    assert_eq!(
        get(hport, "/tags/autoComplete/tags?tagPrefix=h"),
        "[\"host\"]"
    );
    assert_eq!(
        get(
            hport,
            "/tags/autoComplete/values?tag=host&expr=name%3Ddisk.used"
        ),
        "[\"a\", \"b\"]"
    );
    assert_eq!(
        get(hport, "/tags/autoComplete/values?tag=name&expr=host%3Da"),
        "[\"cpu.user\", \"disk.used\"]"
    );
    assert_eq!(
        get(hport, "/tags/host"),
        "{\"tag\": \"host\", \"values\": [{\"count\": 2, \"value\": \"a\"}, {\"count\": 1, \"value\": \"b\"}]}"
    );
    let (st, b) = http(hport, "GET", "/render?target=seriesByTag('host!=a')", "");
    assert_eq!(st, 400, "{b}");
    assert!(b.contains("at least one expression"), "{b}");
    // The plain tree does not show tagged series.
    assert_eq!(
        get(hport, "/metrics/find?query=*&format=completer"),
        "{\"metrics\": []}"
    );
}
