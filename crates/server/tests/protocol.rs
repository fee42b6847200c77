//! Raw-protocol transcripts sent to `ringlet serve` and to the real rrdcached 1.7.2 side by
//! side, compared byte for byte (base directories replaced by `BASE`). Where ringlet differs
//! on purpose (docs/PROTOCOL.md, "Deviations"), the test pins ringlet's documented reply.

mod common;

use common::*;
use std::io::Write;

const T0: i64 = 1_795_200_000;

struct Pair {
    _dir: TempDir,
    r: Ringlet,
    c: Rrdcached,
}

impl Pair {
    fn start(tag: &str) -> Option<Pair> {
        Pair::start_with(tag, &[])
    }

    /// Both daemons with the same options before `-l`.
    fn start_with(tag: &str, before_listen: &[&str]) -> Option<Pair> {
        if !need(&["rrdcached"]) {
            return None;
        }
        let dir = TempDir::new(tag);
        let mut extra = before_listen.to_vec();
        extra.push("--");
        let r = Ringlet::start(dir.path(), &extra);
        let c = Rrdcached::start_with(dir.path(), before_listen);
        Some(Pair { _dir: dir, r, c })
    }

    /// One connection per side; the transcript's replies, normalised.
    fn both(&self, lines: &[&str]) -> (String, String) {
        let mut input = String::new();
        for l in lines {
            input.push_str(l);
            input.push('\n');
        }
        let a = converse(&self.r.sock, input.as_bytes());
        let b = converse(&self.c.sock, input.as_bytes());
        (
            norm(&a, &self.r.base.display().to_string()),
            norm(&b, &self.c.base.display().to_string()),
        )
    }

    /// The transcript must give identical bytes on both daemons.
    fn same(&self, lines: &[&str]) -> String {
        let (r, c) = self.both(lines);
        if r != c {
            panic!(
                "ringlet and rrdcached differ on {lines:#?}\n{}",
                first_difference(&c, &r)
            );
        }
        r
    }
}

fn norm(bytes: &[u8], base: &str) -> String {
    String::from_utf8_lossy(bytes).replace(base, "BASE")
}

fn first_difference(c: &str, r: &str) -> String {
    let (cl, rl): (Vec<_>, Vec<_>) = (c.lines().collect(), r.lines().collect());
    for i in 0..cl.len().max(rl.len()) {
        if cl.get(i) != rl.get(i) {
            return format!(
                "first difference at reply line {}:\n  rrdcached: {:?}\n  ringlet:   {:?}",
                i + 1,
                cl.get(i),
                rl.get(i)
            );
        }
    }
    String::new()
}

fn create_b() -> String {
    format!(
        "CREATE b.rrd -b {T0} -s 60 DS:x:GAUGE:120:U:U DS:y:COUNTER:120:0:U \
         RRA:AVERAGE:0.5:1:100 RRA:MAX:0.5:5:50 RRA:LAST:0.5:1:10"
    )
}

fn t(dt: i64) -> i64 {
    T0 + dt
}

#[test]
fn help_texts_are_rrdcacheds_byte_for_byte() {
    let Some(p) = Pair::start("help") else { return };
    let mut lines = vec![
        "HELP",
        "help",
        "HELP FOO",
        "HELP WROTE",
        "HELP .",
        "HELP help",
    ];
    let names: Vec<String> = proto::COMMANDS
        .iter()
        .filter(|c| !c.after_1_7)
        .flat_map(|c| {
            [
                format!("HELP {}", c.name),
                format!("help {}", c.name.to_lowercase()),
            ]
        })
        .collect();
    lines.extend(names.iter().map(String::as_str));
    let out = p.same(&lines);
    assert!(out.starts_with("22 Command overview\nUPDATE <filename>"));
}

#[test]
fn ping_unknown_commands_and_usage_errors_match() {
    let Some(p) = Pair::start("usage") else {
        return;
    };
    let out = p.same(&[
        "PING",
        "ping",
        "PiNg\r",
        "PING ",
        "FOO",
        "FOO bar baz",
        "",
        " PING",
        "\u{7f}\u{1}garbage",
        "WROTE x.rrd",
        ".",
        "UPDATE",
        "FLUSH",
        "PENDING",
        "FORGET",
        "FETCH",
        "FETCH x.rrd",
        "FETCHBIN",
        "INFO",
        "FIRST",
        "FIRST x.rrd",
        "LAST",
        "CREATE",
        "CREATE x.rrd --step 60 DS:x:GAUGE:120:U:U RRA:AVERAGE:0.5:1:10",
        "CREATE x.rrd -b 100 DS:x:GAUGE:120:U:U RRA:AVERAGE:0.5:1:10",
        "CREATE x.rrd DS:x:GAUGE:120:U:U",
        "CREATE sub/x.rrd DS:x:GAUGE:120:U:U RRA:AVERAGE:0.5:1:10",
        "LIST",
        "LIST x",
        "LIST /nonexist",
        "LIST RECURSIVE /nonexist/",
        "LIST /../",
        "QUEUE",
        "UPDATE nonexist.rrd 1:1",
        "FLUSH nonexist.rrd",
        "PENDING nonexist.rrd",
        "FORGET nonexist.rrd",
        "INFO nonexist.rrd",
        "LAST nonexist.rrd",
        "FIRST nonexist.rrd 0",
        "FETCH nonexist.rrd AVERAGE",
        "FETCH /etc/passwd AVERAGE",
        "FETCH ../x.rrd AVERAGE",
        "UPDATE /etc/x.rrd 1:1",
        "QUIT",
        "PING",
    ]);
    assert!(
        out.ends_with("-1 BASE/../x.rrd: Permission denied\n-1 /etc/x.rrd: Permission denied\n")
    );
}

#[test]
fn create_update_pending_fetch_first_last_info_match() {
    let Some(p) = Pair::start("data") else { return };
    let cb = create_b();
    let lines = [
        cb.as_str(),
        &format!("CREATE q6.rrd -O -b {T0} DS:x:GAUGE:120:U:U RRA:AVERAGE:0.5:1:10"),
        &format!("CREATE q6.rrd -O -b {T0} DS:x:GAUGE:120:U:U RRA:AVERAGE:0.5:1:10"),
        &format!("UPDATE b.rrd {}:1:100 {}:2:200", t(60), t(120)),
        "PENDING b.rrd",
        &format!("UPDATE b.rrd {}:3:300 garbage", t(180)),
        &format!("UPDATE b.rrd {}.5:1:400 {}.7:1:500", t(240), t(240)),
        "UPDATE b.rrd N:1:1",
        "UPDATE b.rrd inf:1:1",
        "UPDATE b.rrd -inf:1:1",
        "UPDATE b.rrd nan:1:1",
        "UPDATE b.rrd 0x6B01A1B3:1:1",
        "UPDATE b.rrd  1795200005:1:1",
        "UPDATE b.rrd 1795200006 :1:1",
        "UPDATE b.rrd :1:1",
        &format!("UPDATE b.rrd {}@1:1", t(400)),
        &format!("UPDATE b.rrd {T0}:1:1"),
        "UPDATE b.rrd -10:1:1",
        &format!("UPDATE b.rrd {}", t(300)),
        "UPDATE b.rrd",
        "PENDING b.rrd",
        "PENDING nonexist.rrd",
        "LAST b.rrd",
        // ringlet applied the queue for LAST; the values stay pending until committed.
        &format!("UPDATE b.rrd {}:4:600", t(420)),
        "PENDING b.rrd",
        "FLUSH b.rrd",
        "PENDING b.rrd",
        &format!("FETCH b.rrd AVERAGE {T0} {}", t(300)),
        &format!("fetch b.rrd AVERAGE {T0} {} y x", t(300)),
        &format!("FETCH b.rrd AVERAGE {T0} {} y y", t(300)),
        &format!("FETCH b.rrd AVERAGE {T0} {} x y x", t(300)),
        "FETCH b.rrd FOO",
        &format!("FETCH b.rrd MAX {T0} {}", t(600)),
        &format!("FETCH b.rrd LAST {}junk {}", t(60), t(900)),
        &format!("FETCH b.rrd AVERAGE 0x{:x} {}", t(60), t(300)),
        &format!("FETCH b.rrd AVERAGE {} {}", t(300), t(60)),
        &format!("FETCHBIN b.rrd AVERAGE {T0} {}", t(300)),
        &format!("FETCHBIN b.rrd AVERAGE {T0} {} y", t(300)),
        "FETCH b.rrd AVERAGE 100 200",
        "FETCH b.rrd AVERAGE 99999999999999999999999",
        "FETCH b.rrd AVERAGE 1 99999999999999999999999",
        "FETCH nonexist.rrd FOO -99999999999999999999999",
        "FETCH b.rrd AVERAGE 9223372036854775806 9223372036854775807",
        "FETCH b.rrd AVERAGE 0x7fffffffffffff00 0x7fffffffffffffff",
        &format!("FETCH b.rrd AVERAGE {} {}", t(60), t(59)),
        &format!("FETCH b.rrd AVERAGE {} {}", t(70), t(69)),
        &format!("FETCH b.rrd AVERAGE {} {}", t(70), t(-1000)),
        "FIRST b.rrd 0",
        "FIRST b.rrd 2147483648",
        "FIRST b.rrd -2147483649",
        "FIRST b.rrd 1",
        "FIRST b.rrd 3",
        "FIRST b.rrd x",
        "FIRST b.rrd -1",
        "LAST b.rrd",
        "INFO b.rrd",
        &format!("CREATE t.rrd -b {T0} -t b.rrd DS:z:GAUGE:120:0:1 RRA:MIN:0.5:1:5"),
        "INFO t.rrd",
        // The template's last update without -b; sources (flushed first) fill the new file.
        "CREATE t2.rrd -t b.rrd",
        "LAST t2.rrd",
        "CREATE s.rrd -r b.rrd -s 30 DS:y:COUNTER:120:U:U DS:w=x:GAUGE:60:U:U RRA:MAX:0:3:20",
        "LAST s.rrd",
        &format!("FETCH s.rrd MAX {T0} {}", t(600)),
        "INFO s.rrd",
        "CREATE s2.rrd -r nonexist.rrd DS:x:GAUGE:120:U:U RRA:AVERAGE:0.5:1:10",
        "CREATE s2.rrd -r nonexist.rrd DS:x:GAUGE:120:U:U",
        &format!("CREATE u.rrd -b{T0} -s60 DS:x:GAUGE:120:U:U RRA:AVERAGE:0.5:1:10"),
        &format!("CREATE v.rrd -b {T0} -Ox DS:x:GAUGE:120:U:U RRA:AVERAGE:0.5:1:10"),
        &format!("CREATE v.rrd -b {T0} -O DS:x:GAUGE:120:U:U RRA:AVERAGE:0.5:1:10"),
        &format!("CREATE x.rrd -b {T0} DS:x:FOO:1:U:U RRA:AVERAGE:0.5:1:10"),
        &format!("CREATE x.rrd -b {T0} DS:x:GAUGE RRA:AVERAGE:0.5:1:10"),
        &format!("CREATE x.rrd -b {T0} DS:x:GAUGE:10:U:U RRA:FOO:0.5:1:10"),
        &format!("CREATE x.rrd -b {T0} DS:x:GAUGE:10:U:U DS:x:GAUGE:10:U:U RRA:AVERAGE:0.5:1:10"),
        &format!("CREATE x.rrd -b {T0} DS:x:GAUGE:10:U:U RRA:AVERAGE:0.5:1:10 junk"),
        &format!("CREATE x.rrd -b {T0} DS:x:GAUGE:10:U:U RRA:AVERAGE:0.5:1:0"),
        &format!("CREATE x.rrd -b {T0} DS:x:GAUGE:10:U:U RRA:AVERAGE:1.5:1:10"),
        &format!("CREATE x.rrd -b {T0} DS:c:COMPUTE:x,2,* RRA:AVERAGE:0.5:1:10"),
        &format!("CREATE x.rrd -b {T0} -s abc DS:x:GAUGE:10:U:U RRA:AVERAGE:0.5:1:10"),
        "INFO x.rrd",
    ];
    let (r, c) = p.both(&lines);
    // rrdtool starts each RRA at a random row: INFO's cur_row lines differ by design.
    let strip = |s: &str| {
        s.lines()
            .filter(|l| !l.contains("].cur_row "))
            .map(|l| format!("{l}\n"))
            .collect::<String>()
    };
    let (r, c) = (strip(&r), strip(&c));
    assert_eq!(r, c, "{}", first_difference(&c, &r));
    assert!(r.contains("0 errors, enqueued 2 value(s).\n2 updates pending\n"));
    assert!(r.contains("-1 too many fields given - duplicates!\n"));
    // The sources filled the new file (rrdcached's own answer, which ringlet's equals).
    assert!(r.contains("1795200120: 1.00826446280991732e+02 2.00000000000000000e+00\n"));
    assert!(r.contains("-1 RRD Error: Cannot open source RRD nonexist.rrd\n"));
}

#[test]
fn fetch_of_a_missing_column_names_the_file() {
    // rrdcached prints the file name after freeing it (garbage bytes); ringlet prints it.
    let Some(p) = Pair::start("col") else { return };
    let cb = create_b();
    let (r, c) = p.both(&[&cb, &format!("FETCH b.rrd AVERAGE {T0} {} z", t(300))]);
    assert!(
        c.starts_with("0 RRD created OK\n-1 field z not found in "),
        "{c}"
    );
    assert_eq!(r, "0 RRD created OK\n-1 field z not found in BASE/b.rrd\n");
}

#[test]
fn batch_replies_match_including_errors() {
    let Some(p) = Pair::start("batch") else {
        return;
    };
    let cb = create_b();
    let lines = [
        cb.as_str(),
        "BATCH",
        &format!("UPDATE b.rrd {}:5:600", t(60)),
        &format!("UPDATE nonexist.rrd {}:5:600", t(60)),
        &format!("UPDATE b.rrd {}:5:600", t(30)),
        "FLUSH b.rrd",
        "STATS",
        &format!("UPDATE b.rrd {}", t(120)),
        "UPDATE b.rrd",
        "BATCH",
        "FOO",
        "PING",
        "QUEUE",
        "FETCH b.rrd AVERAGE",
        "CREATE c.rrd DS:x:GAUGE:120:U:U",
        &format!("update b.rrd {}:6:700", t(120)),
        ".",
        "BATCH",
        &format!("UPDATE b.rrd {}:7:800", t(180)),
        ".",
        "PENDING b.rrd",
        "BATCH",
        ".",
        "PING",
    ];
    let out = p.same(&lines);
    assert!(out.contains("0 Go ahead.  End with dot '.' on its own line.\n"));
    assert!(out.contains("\n2 No such file: BASE/nonexist.rrd\n"));
    assert!(out.contains("\n0 errors\n"));
}

#[test]
fn stats_has_rrdcacheds_nine_keys_in_order() {
    let Some(p) = Pair::start("stats") else {
        return;
    };
    let keys = |s: &str| -> Vec<String> {
        s.lines()
            .skip(1)
            .map(|l| l.split(':').next().unwrap_or("").to_string())
            .collect()
    };
    let (r, c) = p.both(&["STATS"]);
    // rrdcached's nine first, in its order; ringlet's own after them (librrd skips keys it
    // does not know).
    assert_eq!(keys(&r)[..9], keys(&c));
    assert_eq!(
        keys(&r)[9..],
        [
            "DiskBytesWritten",
            "Fsyncs",
            "Commits",
            "DiskBytesPerSample",
            "DiskBytesPerDay",
            "UptimeSeconds",
            "ApplyErrors",
            "DiskBytesAtOpen",
            "LogRingBytes",
            "LogSinceCheckpoint",
            "RecordBytes",
            "RecordBytesPerSample",
            "RecordSeriesBytesPerSample",
            "RecordTimeBytesPerSample",
            "RecordValueBytesPerSample",
            "RecordEntryBytesPerSample",
            "RecordFramingBytesPerSample",
            "RecordPaddingBytesPerSample",
            "CheckpointBytesPerSample",
            "SpillBytesPerSample",
            "Spills",
            "ArchiveHeapBytes",
            "ResidentBytes",
            "DamagedChunks",
        ]
    );
    assert_eq!(r.lines().next(), Some("33 Statistics follow"));
    let value = |k: &str| -> u64 {
        r.lines()
            .find_map(|l| l.strip_prefix(&format!("{k}: ")))
            .and_then(|v| v.parse().ok())
            .unwrap_or(0)
    };
    // The daemon's own memory, and the archives' share of it.
    assert!(value("ResidentBytes") > 1 << 20, "{r}");
    assert!(value("ArchiveHeapBytes") < value("ResidentBytes"), "{r}");
    assert_eq!(keys(&r)[0], "QueueLength");
    // Values are numbers: unsigned integers but for the bytes per sample.
    for l in r.lines().skip(1) {
        let v = l.split(": ").nth(1).expect("key: value");
        if l.split(':').next().unwrap_or("").ends_with("PerSample") {
            assert!(v.parse::<f64>().is_ok(), "{l}");
        } else {
            assert!(v.parse::<u64>().is_ok(), "{l}");
        }
    }
}

#[test]
fn ringlet_stats_reads_either_daemon() {
    let Some(p) = Pair::start("statscli") else {
        return;
    };
    let r = cli::client::stats(&format!("unix:{}", p.r.sock.display())).expect("ringlet");
    let c = cli::client::stats(&p.c.sock.display().to_string()).expect("rrdcached");
    assert_eq!(r.len(), 33, "{r:?}");
    assert_eq!(c.len(), 9, "{c:?}");
    assert!(r[0].starts_with("QueueLength: ") && c[0].starts_with("QueueLength: "));
    let e = cli::client::stats("unix:/nonexistent/sock").unwrap_err();
    assert_eq!(
        e,
        "cannot connect to unix:/nonexistent/sock: No such file or directory"
    );
}

#[test]
fn stats_counters_count_ringlets_commits() {
    let Some(p) = Pair::start("stats2") else {
        return;
    };
    let cb = create_b();
    let mut s = connect(&p.r.sock);
    request(&mut s, &cb);
    request(
        &mut s,
        &format!("UPDATE b.rrd {}:1:1 {}:2:2", t(60), t(120)),
    );
    request(&mut s, &format!("UPDATE b.rrd {}:3:3", t(180)));
    // Pipelined with the updates: they count already.
    s.write_all(format!("UPDATE b.rrd {}:4:4\nSTATS\n", t(240)).as_bytes())
        .unwrap();
    assert_eq!(read_reply(&mut s), "0 errors, enqueued 1 value(s).\n");
    let st = read_reply(&mut s);
    assert!(st.contains("\nUpdatesReceived: 3\n"), "{st}");
    assert!(st.contains("\nQueueLength: 1\n"), "pending series: {st}");
    assert!(st.contains("\nUpdatesWritten: 0\n"), "{st}");
    assert_eq!(
        request(&mut s, "FLUSH b.rrd"),
        format!("0 Successfully flushed {}/b.rrd.\n", p.r.base.display())
    );
    let st = request(&mut s, "STATS");
    assert!(st.contains("\nFlushesReceived: 1\n"), "{st}");
    assert!(
        st.contains("\nUpdatesWritten: 1\n"),
        "one series committed: {st}"
    );
    assert!(
        st.contains("\nDataSetsWritten: 4\n"),
        "four samples committed: {st}"
    );
    assert!(st.contains("\nQueueLength: 0\n"), "{st}");
    assert!(
        !st.contains("JournalBytes: 0\n"),
        "the commit wrote log bytes: {st}"
    );
    // CREATE and FLUSH each committed (one fdatasync or more each).
    let num = |key: &str| -> u64 {
        let l = st
            .lines()
            .find_map(|l| l.strip_prefix(&format!("{key}: ")))
            .unwrap_or_else(|| panic!("{key} in {st}"));
        l.parse().expect("a number")
    };
    assert_eq!(num("Commits"), 2, "{st}");
    assert!(num("Fsyncs") >= 2, "{st}");
    assert_eq!(num("ApplyErrors"), 0, "{st}");
    // Where the two records' bytes went (no checkpoint yet): their split adds up.
    assert_eq!(num("RecordBytes"), num("JournalBytes"), "{st}");
    let f = |key: &str| -> f64 {
        st.lines()
            .find_map(|l| l.strip_prefix(&format!("{key}: ")))
            .unwrap_or_else(|| panic!("{key} in {st}"))
            .parse()
            .expect("a number")
    };
    let total = f("RecordBytesPerSample");
    assert!(
        (total - num("RecordBytes") as f64 / 4.0).abs() < 0.001,
        "{st}"
    );
    let parts: f64 = ["Series", "Time", "Value", "Entry", "Framing", "Padding"]
        .iter()
        .map(|k| f(&format!("Record{k}BytesPerSample")))
        .sum();
    assert!((parts - total).abs() < 0.01, "{parts} vs {total}: {st}");
    for k in ["Value", "Entry", "Padding", "Time", "Series"] {
        assert!(f(&format!("Record{k}BytesPerSample")) > 0.0, "{k}: {st}");
    }
    assert_eq!(f("CheckpointBytesPerSample"), 0.0, "{st}");
}

#[test]
fn list_names_match_as_sets() {
    let Some(p) = Pair::start("list") else { return };
    let mut lines = vec![create_b()];
    lines.push(format!(
        "CREATE q.rrd -b {T0} DS:x:GAUGE:120:U:U RRA:AVERAGE:0.5:1:10"
    ));
    std::fs::create_dir_all(p.r.base.join("sub")).unwrap();
    std::fs::create_dir_all(p.c.base.join("sub")).unwrap();
    lines.push(format!(
        "CREATE sub/c.rrd -b {T0} DS:x:GAUGE:120:U:U RRA:AVERAGE:0.5:1:10"
    ));
    for l in [
        "LIST /",
        "LIST RECURSIVE /",
        "LIST /sub",
        "LIST RECURSIVE /sub/",
        "LIST /b.rrd",
        "LIST //",
    ] {
        lines.push(l.to_string());
    }
    let refs: Vec<&str> = lines.iter().map(String::as_str).collect();
    let (r, c) = p.both(&refs);
    // rrdcached lists in readdir order, ringlet sorted: compare each reply as a set.
    let sets = |s: &str| -> Vec<Vec<String>> {
        let mut replies = Vec::new();
        let mut it = s.lines();
        while let Some(st) = it.next() {
            let n: i64 = st.split(' ').next().unwrap().parse().unwrap();
            let mut body: Vec<String> = (0..n.max(0))
                .map(|_| it.next().unwrap().to_string())
                .collect();
            body.sort();
            body.insert(0, st.to_string());
            replies.push(body);
        }
        replies
    };
    assert_eq!(sets(&r), sets(&c), "\nringlet:\n{r}\nrrdcached:\n{c}");
}

#[test]
fn suspend_resume_match_and_unknown_files_keep_the_connection() {
    let Some(p) = Pair::start("suspend") else {
        return;
    };
    let cb = create_b();
    let upd = format!("UPDATE b.rrd {}:1:1", t(60));
    p.same(&[
        &cb,
        &upd,
        "SUSPEND b.rrd",
        "SUSPEND b.rrd",
        "FLUSH b.rrd",
        "RESUME b.rrd",
        "RESUME b.rrd",
        "SUSPENDALL",
        "RESUMEALL",
    ]);
    // rrdcached answers an unknown file and then closes the connection (its handler returns
    // -1); ringlet answers the same text and keeps serving.
    let (r, c) = p.both(&["SUSPEND nonexist.rrd", "PING"]);
    assert_eq!(c, "-1 BASE/nonexist.rrd - No such file or directory\n");
    assert_eq!(
        r,
        "-1 BASE/nonexist.rrd - No such file or directory\n0 PONG\n"
    );
    let (r, c) = p.both(&["SUSPEND", "PING"]);
    assert_eq!(c, "-1 Usage: SUSPEND <filename>\n");
    assert_eq!(r, "-1 Usage: SUSPEND <filename>\n0 PONG\n");
    let (r, _) = p.both(&["RESUME nonexist.rrd", "PING"]);
    assert_eq!(
        r,
        "-1 BASE/nonexist.rrd - No such file or directory\n0 PONG\n"
    );
}

#[test]
fn forget_drops_unwritten_values_and_queue_lists_pending_series() {
    let Some(p) = Pair::start("forget") else {
        return;
    };
    let cb = create_b();
    let upd = format!("UPDATE b.rrd {}:1:100 {}:2:200", t(60), t(120));
    let (r, c) = p.both(&[
        &cb,
        &upd,
        "QUEUE",
        "PENDING b.rrd",
        "FORGET b.rrd",
        "PENDING b.rrd",
        "QUEUE",
    ]);
    // rrdcached's write queue holds a file only after -w seconds; ringlet's QUEUE lists every
    // series with values waiting for the next commit.
    assert!(
        c.contains("0 errors, enqueued 2 value(s).\n0 in queue.\n"),
        "{c}"
    );
    assert!(
        r.contains("0 errors, enqueued 2 value(s).\n1 in queue.\n2 BASE/b.rrd\n"),
        "{r}"
    );
    assert!(
        r.ends_with("0 Gone!\n0 updates pending\n0 in queue.\n"),
        "{r}"
    );
    assert!(
        c.ends_with("0 Gone!\n0 updates pending\n0 in queue.\n"),
        "{c}"
    );
    // Both dropped the two values: not written (rrdcached), not applied (ringlet).
    let fetch = format!("FETCH b.rrd AVERAGE {T0} {}", t(240));
    p.same(&[&fetch]);
    let rows = fetch_rows(&p.r.sock, "b.rrd", "AVERAGE", T0, t(120));
    assert_eq!(rows[0], (t(60), "-nan -nan".to_string()));
    // A value written by a FETCH (rrdcached writes the file first; ringlet applies it) stays
    // after FORGET; the next one, not written yet, goes. The dropped values' times can be
    // used again (rrdcached's file never saw them; ringlet's checks restart from its series).
    let u3 = format!("UPDATE b.rrd {}:3:300", t(60));
    let u4 = format!("UPDATE b.rrd {}:4:400", t(120));
    p.same(&[&u3, &fetch, &u4, "FORGET b.rrd", &fetch]);
    let rows = fetch_rows(&p.r.sock, "b.rrd", "AVERAGE", T0, t(240));
    assert_eq!(rows[0], (t(60), "3.00000000000000000e+00 -nan".to_string()));
    assert_eq!(rows[1], (t(120), "-nan -nan".to_string()));
}

#[test]
fn bad_values_are_refused_when_they_arrive() {
    // rrdcached queues "abc" with "0 errors" and later drops it with every value after it;
    // ringlet checks values at UPDATE time and refuses the first bad one and the rest.
    let Some(p) = Pair::start("badval") else {
        return;
    };
    let cb = create_b();
    let mut s = connect(&p.r.sock);
    request(&mut s, &cb);
    let base = p.r.base.display().to_string();
    let r = request(
        &mut s,
        &format!(
            "UPDATE b.rrd {}:1:100 {}:abc:200 {}:3:300",
            t(60),
            t(120),
            t(180)
        ),
    );
    assert!(r.starts_with(&format!("-1 {base}/b.rrd: ")), "{r}");
    assert_eq!(
        request(&mut s, "PENDING b.rrd"),
        format!("1 updates pending\n{}:1:100\n", t(60))
    );
    let r = request(&mut s, &format!("UPDATE b.rrd {}:1", t(240)));
    assert!(
        r.starts_with(&format!("-1 {base}/b.rrd: ")),
        "wrong arity is refused: {r}"
    );
    assert_eq!(
        request(&mut s, &format!("UPDATE b.rrd {}:4:400", t(240))),
        "0 errors, enqueued 1 value(s).\n"
    );
    let mut c = connect(&p.c.sock);
    request(&mut c, &cb);
    let r = request(
        &mut c,
        &format!(
            "UPDATE b.rrd {}:1:100 {}:abc:200 {}:3:300",
            t(60),
            t(120),
            t(180)
        ),
    );
    assert_eq!(r, "0 errors, enqueued 3 value(s).\n");
}

#[test]
fn a_value_bad_for_a_later_ds_is_refused_and_kept_in_part() {
    // rrdtool applies such a value up to the bad DS (the DS before it keep the new value as
    // their last_ds) and logs it; ringlet refuses it at UPDATE time and applies it the same
    // way when the queue reaches the store.
    let Some(p) = Pair::start("partial") else {
        return;
    };
    let mut s = connect(&p.r.sock);
    request(&mut s, &create_b());
    let base = p.r.base.display().to_string();
    let r = request(
        &mut s,
        &format!("UPDATE b.rrd {}:1:100 {}:7:abc", t(60), t(120)),
    );
    assert_eq!(
        r,
        format!("-1 {base}/b.rrd: not a simple unsigned integer: 'abc'\n")
    );
    assert_eq!(
        request(&mut s, "PENDING b.rrd"),
        format!("1 updates pending\n{}:1:100\n", t(60))
    );
    let info = request(&mut s, "INFO b.rrd");
    assert!(
        info.contains(&format!("\nlast_update 1 {}\n", t(60))),
        "{info}"
    );
    assert!(info.contains("\nds[x].last_ds 2 7\n"), "{info}");
    assert!(info.contains("\nds[y].last_ds 2 100\n"), "{info}");
    assert_eq!(
        request(&mut s, &format!("UPDATE b.rrd {}:2:400", t(120))),
        "0 errors, enqueued 1 value(s).\n"
    );
    let rows = fetch_rows(&p.r.sock, "b.rrd", "AVERAGE", T0, t(120));
    assert_eq!(rows[1].0, t(120));
    assert!(
        rows[1].1.starts_with("2.00000000000000000e+00 5.0000"),
        "{rows:?}"
    );
}

#[test]
fn long_lines_get_an_error_and_the_connection_goes_on() {
    let Some(p) = Pair::start("long") else { return };
    let long = format!("UPDATE b.rrd {}", "1:1 ".repeat(3000));
    let mut input = long.into_bytes();
    input.extend_from_slice(b"\nPING\n");
    let r = converse(&p.r.sock, &input);
    let r = String::from_utf8_lossy(&r);
    // Under --max-line (1 MiB by default) a 12 KB line is simply served.
    assert!(r.starts_with("-1 No such file: "), "{r}");
    assert!(r.ends_with("0 PONG\n"), "{r}");
    // rrdcached drops the connection at 8 KiB without a reply.
    let c = converse(&p.c.sock, &input);
    assert!(c.is_empty(), "{}", String::from_utf8_lossy(&c));
    // Past --max-line: an error, then the next line is served.
    let mut s = connect(&p.r.sock);
    let huge = vec![b'x'; 2 << 20];
    s.write_all(&huge).unwrap();
    s.write_all(b"\nPING\n").unwrap();
    assert_eq!(
        read_reply(&mut s),
        "-1 Line too long (more than 1048576 bytes)\n"
    );
    assert_eq!(read_reply(&mut s), "0 PONG\n");
}

#[test]
fn permissions_refuse_like_rrdcached_inside_and_outside_batches() {
    let Some(p) = Pair::start_with("perm", &["-P", "FLUSH,PENDING,BATCH"]) else {
        return;
    };
    let out = p.same(&[
        "UPDATE b.rrd 1:1",
        "STATS",
        "PENDING b.rrd",
        "FLUSH nonexist.rrd",
        "HELP",
        "HELP STATS",
        "BATCH",
        "UPDATE b.rrd 1:1",
        "FLUSH nonexist.rrd",
        "STATS",
        ".",
        "QUIT",
    ]);
    assert!(
        out.starts_with("-1 Permission denied.\n-1 Permission denied.\n"),
        "{out}"
    );
}

#[test]
fn tcp_clients_with_relative_names_work() {
    if !need(&["rrdtool"]) {
        return;
    }
    let dir = TempDir::new("tcp");
    let port = free_port();
    let addr = format!("127.0.0.1:{port}");
    let r = Ringlet::start(dir.path(), &["-l", &addr]);
    let run = |args: &[&str]| {
        let a: Vec<String> = args.iter().map(|s| s.to_string()).collect();
        rrdtool_env(dir.path(), &a, Some(&addr))
    };
    let o = run(&[
        "create",
        "t.rrd",
        "--start",
        &T0.to_string(),
        "--step",
        "60",
        "DS:x:GAUGE:120:U:U",
        "RRA:AVERAGE:0.5:1:10",
    ]);
    assert_eq!(o.code, 0, "{o:?}");
    assert!(
        r.base.join("t.rrd").is_file(),
        "created under the base directory"
    );
    let o = run(&[
        "update",
        "t.rrd",
        &format!("{}:5", t(60)),
        &format!("{}:7", t(120)),
    ]);
    assert_eq!(o.code, 0, "{o:?}");
    let o = run(&[
        "fetch",
        "t.rrd",
        "AVERAGE",
        "-s",
        &T0.to_string(),
        "-e",
        &t(120).to_string(),
    ]);
    assert_eq!(o.code, 0, "{o:?}");
    assert!(
        o.stdout.contains(&format!(
            "{}: 5.0000000000e+00\n{}: 7.0000000000e+00\n",
            t(60),
            t(120)
        )),
        "{}",
        o.stdout
    );
    let o = run(&[
        "update",
        &r.base.join("t.rrd").display().to_string(),
        &format!("{}:1", t(180)),
    ]);
    assert_eq!(
        o.stderr,
        "ERROR: absolute path names not allowed when talking to a remote daemon\n"
    );
}

#[test]
fn files_that_are_not_rrds_get_librrds_errors() {
    let Some(p) = Pair::start("notrrd") else {
        return;
    };
    for base in [&p.r.base, &p.c.base] {
        std::fs::write(base.join("junk.rrd"), "garbage\n").unwrap();
        std::fs::write(base.join("empty.rrd"), "").unwrap();
        std::fs::write(base.join("zero.rrd"), vec![0u8; 300]).unwrap();
        std::fs::create_dir_all(base.join("dir.rrd")).unwrap();
    }
    let mut lines = Vec::new();
    for f in ["junk.rrd", "empty.rrd", "zero.rrd", "dir.rrd"] {
        for c in [
            format!("UPDATE {f} {}:1", t(60)),
            format!("FETCH {f} AVERAGE {T0} {}", t(60)),
            format!("INFO {f}"),
            format!("LAST {f}"),
            format!("FIRST {f} 0"),
            format!("FLUSH {f}"),
            format!("PENDING {f}"),
            format!("FORGET {f}"),
        ] {
            lines.push(c);
        }
    }
    lines.push("PING".into());
    let refs: Vec<&str> = lines.iter().map(String::as_str).collect();
    let out = p.same(&refs);
    assert!(out.starts_with("-1 RRD Error: reached EOF while loading header rrd->stat_head\n"));
}

/// rrdcached's create starts each archive at a random row, librrd's updates of
/// Holt-Winters archives smooth at each wrap during burn-in: its file is turned to start at
/// row 0, as ringlet's do, before any update.
fn at_row_zero(path: &std::path::Path) {
    let mut bytes = std::fs::read(path).unwrap();
    rrd::rrdfile::move_current_rows(&mut bytes, |_| 0).unwrap();
    std::fs::write(path, bytes).unwrap();
}

/// Holt-Winters archives through the daemon as through rrdcached: each FLUSH of a file's
/// queued values is one update call to librrd (the seasonal smoother at its end when due),
/// and to ringlet (the queue applied); the predictions, deviations, failures and smoothed
/// seasons read back equal.
#[test]
fn holt_winters_updates_flush_as_rrdcached() {
    let Some(p) = Pair::start("hw") else { return };
    let create = format!(
        "CREATE h.rrd -b {T0} -s 10 DS:x:GAUGE:40:U:U RRA:AVERAGE:0.5:1:30 \
         RRA:HWPREDICT:80:0.3:0.1:40 RRA:MHWPREDICT:40:0.2:0.1:8:8 \
         RRA:SEASONAL:8:0.2:7:smoothing-window=0.5"
    );
    p.same(&[&create]);
    at_row_zero(&p.c.base.join("h.rrd"));
    // Each daemon's librrd hashes the file's absolute path into the row after which the
    // seasonal archives smooth: rrdcached's file gets the row of ringlet's path.
    let mut args = vec![p.r.base.join("h.rrd").display().to_string()];
    args.extend(create.split_whitespace().skip(2).map(String::from));
    let schema = rrd::create::parse_create(&args, 0).unwrap().schema;
    let file = p.c.base.join("h.rrd");
    let mut bytes = std::fs::read(&file).unwrap();
    for (r, def) in schema.rra.iter().enumerate() {
        if matches!(def.cf, rrd::Cf::Seasonal | rrd::Cf::DevSeasonal) {
            let at = 128 + 120 * schema.ds.len() + 120 * r + 40 + 8 * 4;
            bytes[at..at + 8].copy_from_slice(&def.hw().smooth_idx.to_le_bytes());
        }
    }
    std::fs::write(&file, bytes).unwrap();
    let mut t = T0;
    let mut seed = 99u64;
    let mut next = |n: u64| {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed % n
    };
    for call in 0..150 {
        let mut update = String::from("UPDATE h.rrd");
        for _ in 0..1 + next(4) {
            t += if next(40) == 0 {
                10 * (3 + next(5) as i64)
            } else {
                3 + next(10) as i64
            };
            let phase = (t / 10) as f64 * std::f64::consts::TAU / 40.0;
            // Bursts, the last of them within FAILURES' rows at the end.
            let spike = if call % 31 < 3 || (140..144).contains(&call) {
                70.0
            } else {
                0.0
            };
            let x = 50.0 + 20.0 * phase.sin() + next(100) as f64 / 25.0 + spike;
            update.push_str(&format!(" {t}:{x:.2}"));
        }
        p.same(&[&update, "FLUSH h.rrd"]);
    }
    let mut reads = Vec::new();
    for cf in [
        "AVERAGE",
        "HWPREDICT",
        "MHWPREDICT",
        "SEASONAL",
        "DEVSEASONAL",
        "DEVPREDICT",
        "FAILURES",
    ] {
        reads.push(format!("FETCH h.rrd {cf} {} {t}", T0 + 600));
    }
    let reads: Vec<&str> = reads.iter().map(String::as_str).collect();
    let out = p.same(&reads);
    // The models learnt: the rows each archive keeps (30 to 80) are mostly known.
    let known = out
        .lines()
        .filter(|l| l.contains("e+0") && !l.contains(": 0.0000") && !l.contains("nan"))
        .count();
    assert!(known > 200, "{known} known values: {out}");
    let (r, c) = p.both(&["INFO h.rrd"]);
    let strip = |s: &str| {
        s.lines()
            .filter(|l| !l.contains("].cur_row "))
            .map(|l| format!("{l}\n"))
            .collect::<String>()
    };
    assert_eq!(strip(&r), strip(&c));
}
