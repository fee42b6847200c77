//! The fuzz corpora's seeds, made by our own encoders: binary ones taken from a real store
//! built here (its log's record payloads, its checkpoint files, its segment files, its series
//! as `.rrd` files and XML dumps), rows packed by the store's encoder, whisper and PHPFina
//! files built by hand, a writer's histories for `fallback`, and text ones for the parsers of
//! lines. What Debian's tools make (rrdtool's own files and dumps, Python's pickles) is kept
//! in `fuzz/seeds/<target>/` (small, in git; `fuzz/seed.sh --tools` makes it again).
//!
//! The smoke test (`tests/smoke.rs`) runs every target over these, the kept files and the
//! regressions; `fuzz/seed.sh` writes them all into `fuzz/corpus/` to start a campaign (the
//! corpora campaigns grow stay out of git).

/// A seed: its target, its name, its bytes.
pub type Seed = (&'static str, String, Vec<u8>);

fn put(out: &mut Vec<Seed>, target: &'static str, name: &str, bytes: &[u8]) {
    out.push((target, name.to_string(), bytes.to_vec()));
}

/// Whisper is big-endian (the workspace writes its own bytes little-endian only).
fn be32(x: u32) -> [u8; 4] {
    let mut b = x.to_le_bytes();
    b.reverse();
    b
}

fn be64(x: f64) -> [u8; 8] {
    let mut b = x.to_bits().to_le_bytes();
    b.reverse();
    b
}

fn create_args(line: &str) -> Vec<String> {
    line.split_whitespace().map(str::to_string).collect()
}

/// Every target's seeds, made afresh at each call (the store is built in a temporary
/// directory of its own and removed).
pub fn all() -> Vec<Seed> {
    let mut out = Vec::new();
    let dir = &mut out;
    let text: &[(&'static str, &str, &str)] = &[
        ("protocol", "requests", "UPDATE a.rrd 1700000000:1:2 1700000010:U:3\nFLUSH a.rrd\nFLUSHALL\nPENDING a.rrd\nFORGET a.rrd\nQUEUE\nSTATS\nHELP UPDATE\nPING\nFETCH a.rrd AVERAGE -1h now\nFETCHBIN a.rrd MAX 1700000000 1700003600 a\nINFO a.rrd\nFIRST a.rrd 0\nLAST a.rrd\nLASTUPDATE a.rrd\nCREATE x.rrd -s 10 -b 1700000000 DS:a:GAUGE:600:U:U RRA:AVERAGE:0.5:1:10\nCREATE \"with space.rrd\" -O DS:b:COUNTER:20:0:U RRA:MAX:0.5:6:100\nBATCH\nUPDATE b.rrd N:5\n.\nRUN 1700000000 0 fetch a.rrd AVERAGE\nRUNINPUT 3c3f786d6c\nQUIT\n"),
        ("protocol", "odd", "update  a.rrd   1:2\nUPDATE\nFLUSH \"unterminated\nFETCH a.rrd AVERAGE 1700000000 -5 10\nHELP\nWROTE x\n\\x00\n"),
        ("update", "plain", "\n1700000000:1:2\n1700000010:U:U\nN:3.5:4e10\n1700000020.25:-1:0x10\n-10:5:5\n1700000030@2:3\nnow-5min@1:1\n"),
        ("update", "template", "b:a\n1700000000:1:2\n1700000010:7\n1700000020:1:2:3\n"),
        ("create", "args", "x.rrd\n-s\n300\n-b\n1700000000\nDS:in:COUNTER:600:0:U\nDS:out:DERIVE:600:U:1e9\nDS:t:COMPUTE:in,out,+\nRRA:AVERAGE:0.5:1:576\nRRA:MAX:0.5:6:432\nRRA:LAST:0.5:288:450\n"),
        ("create", "short", "y.rrd\n--step=10\nDS:g:GAUGE:20:-10:10\nDS:a:ABSOLUTE:1d:U:U\nRRA:AVERAGE:0.5:10s:1h\nRRA:MIN:0.99:1m:1d\n-O\n"),
        ("times", "at-style", "now\nnow-1h\nend-2d\n-1d\nstart+30min\nteatime\nmidnight yesterday\nnoon tomorrow\n12:00 20231201\n1700000000\n-3h\n20230101\nJan 1 2024\nnow - 5 minutes\n-1y2mon3w4d\n"),
        ("times", "graphite", "-1h\n-24hours\n-7d\n-1mon\nnow\nyesterday\n12:00_20231201\n20231201\n1700000000\n"),
        ("carbon", "lines", "a.b.c 1.5 1700000000\nservers.web01.cpu.load 0.25 -1\nfoo;tag=v;dc=eu 2 1700000010\nbad line\na.b nan 1700000020\n10s:1d,1m:30d\n60:1440\n1h:1y,1d:10y\nx..y 1 1\n"),
        ("http", "queries", "target=sumSeries(servers.*.cpu.{user,system})&from=-1h&until=now&format=json\nquery=servers.*.cpu.*&format=treejson\ntarget=alias(a.b%2Cc,'x')&from=12:00_20231201&until=20231202&maxDataPoints=100&jsonp=cb\nquery=a.[ab]*.c?&leavesOnly=1\ntarget=seriesByTag('name=x')&target=a.b&from=1700000000&until=1700003600&format=raw\nexpr=a.*.c&jsonp=f&noCache=true\n"),
        ("graphite", "targets", "a.b.c\nsumSeries(a.*.b)\nalias(a.b,'x')\nmovingAverage(a.b,'5min')\nasPercent(a.*,b)\nseriesByTag('name=x','dc=~eu.*')\nscale(derivative(a.{b,c}.d),0.5)\nsummarize(a.b,\"1h\",\"sum\",true)\naliasByNode(a.*.c,1,-1)\nhighestMax(a.*,3)\n"),
    ];
    for (t, name, body) in text {
        put(dir, t, name, body.as_bytes());
    }

    // Rows: counts and values as archives hold them.
    let row_sets: Vec<Vec<f64>> = vec![
        vec![f64::NAN; 256],
        (0..256).map(|i| f64::from(i) / 100.0).collect(),
        (0..200)
            .map(|i| (f64::from(i) * 1.37).sin() * 1e3)
            .collect(),
        (0..64).map(|i| f64::from(i % 7) / 3.0).collect(),
        vec![
            0.0,
            -0.0,
            f64::INFINITY,
            f64::NEG_INFINITY,
            1e300,
            5e-324,
            1.0,
            1.0,
            1.0,
            1.0,
        ],
    ];
    for (i, v) in row_sets.iter().enumerate() {
        let mut b = (v.len() as u16).to_le_bytes().to_vec();
        rrd::rows::encode_values(v, &mut b);
        put(dir, "rows", &format!("rows-{i}"), &b);
    }

    // Whisper: two archives (10 s x 6, 60 s x 5), average, xff 0.5; and a PHPFina feed.
    let mut w = Vec::new();
    for x in [1u32, 3600, 0.5f32.to_bits(), 2] {
        w.extend_from_slice(&be32(x));
    }
    let (a0, a1) = (16 + 24, 16 + 24 + 6 * 12);
    for (off, spp, pts) in [(a0, 10u32, 6u32), (a1, 60, 5)] {
        for x in [off as u32, spp, pts] {
            w.extend_from_slice(&be32(x));
        }
    }
    for (spp, pts) in [(10u32, 6u32), (60, 5)] {
        for p in 0..pts {
            w.extend_from_slice(&be32(1_700_000_000 / spp * spp + p * spp));
            w.extend_from_slice(&be64(f64::from(p) * 1.5));
        }
    }
    put(dir, "whisper", "two-archives.wsp", &w);
    let mut f = vec![0u8];
    f.extend_from_slice(&[0; 8]);
    f.extend_from_slice(&10u32.to_le_bytes());
    f.extend_from_slice(&1_700_000_000u32.to_le_bytes());
    for v in [1.0f32, f32::NAN, 2.5, 3.0] {
        f.extend_from_slice(&v.to_le_bytes());
    }
    put(dir, "whisper", "phpfina", &f);

    // A real store: three schemas, updates, commits, a checkpoint with sealed chunks.
    static CALLS: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let call = CALLS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let tmp = std::env::temp_dir().join(format!("ringlet-seeds-{}-{call}", std::process::id()));
    let _ = std::fs::remove_dir_all(&tmp);
    let opts = engine::Options {
        log_bytes: 256 << 10,
        ..engine::Options::default()
    };
    let mut s = engine::Store::open(&tmp, opts).expect("a store");
    let schemas = [
        "a.rrd -s 10 -b 1699999990 DS:g:GAUGE:600:U:U RRA:AVERAGE:0.5:1:600 RRA:MAX:0.5:6:100",
        "b.rrd -s 60 -b 1699999990 DS:in:COUNTER:120:0:U DS:out:DERIVE:120:U:U RRA:AVERAGE:0.5:1:300 RRA:LAST:0.5:10:50",
        "c.rrd -s 1 -b 1699999990 DS:x:ABSOLUTE:10:U:U DS:y:GAUGE:10:0:100 DS:z:COMPUTE:x,y,+ RRA:MIN:0.5:1:100",
    ];
    for line in schemas {
        let req = rrd::create::parse_create(&create_args(line), 1_700_000_000).expect("schema");
        let name = req.name.clone();
        s.create(&name, rrd::state::Rrd::new(req.schema, req.start), false)
            .expect("create");
    }
    for k in 0..900i64 {
        let t = 1_700_000_000 + k * 10;
        let up = |vals: &[String]| rrd::update::Sample {
            time: t,
            usec: 0,
            values: vals.to_vec(),
        };
        let g = format!("{:.2}", (k as f64 * 0.1).sin() * 50.0);
        let _ = s.update("a.rrd", &up(&[g]), &mut |_| {});
        let c = (k * 1234).to_string();
        let _ = s.update("b.rrd", &up(&[c.clone(), c]), &mut |_| {});
        let _ = s.update(
            "c.rrd",
            &up(&["5".into(), "7".into(), "U".into()]),
            &mut |_| {},
        );
        if k % 60 == 59 {
            s.commit().expect("commit");
        }
    }
    s.checkpoint().expect("checkpoint");
    for name in ["a.rrd", "b.rrd", "c.rrd"] {
        let r = s.get(name).expect("series").clone();
        if let Ok(b) = rrd::rrdfile::write(&r) {
            put(dir, "rrdfile", name, &b);
        }
        put(
            dir,
            "restore",
            &format!("{name}.xml"),
            rrd::dump::dump_xml(&r, "").as_bytes(),
        );
    }
    s.close().expect("close");
    let mut files: Vec<_> = std::fs::read_dir(&tmp)
        .expect("store directory")
        .flatten()
        .collect();
    files.sort_by_key(|e| e.file_name());
    for e in files {
        let n = e.file_name().to_string_lossy().to_string();
        let b = std::fs::read(e.path()).expect("store file");
        if n.starts_with("seg-") {
            put(dir, "segment", &n, &b);
        } else if n.starts_with("ckpt") || n.starts_with("checkpoint") {
            if let Ok(h) = codec::checkpoint::decode_checkpoint_header(&b) {
                let mut seed = vec![h.version as u8];
                seed.extend_from_slice(&b[codec::checkpoint::CK_HEADER_LEN..]);
                put(dir, "checkpoint", &n, &seed);
            }
        } else if n == "log" {
            // Every record's payload: a header at each page.
            let page = 4096;
            let mut kept = 0;
            let mut at = codec::frame::RING_START as usize;
            while at + codec::frame::REC_HEADER_LEN <= b.len() && kept < 12 {
                let h: [u8; codec::frame::REC_HEADER_LEN] = b
                    [at..at + codec::frame::REC_HEADER_LEN]
                    .try_into()
                    .expect("header bytes");
                if let codec::frame::HeaderScan::Header(rh) = codec::frame::scan_header(&h) {
                    let p = at + codec::frame::REC_HEADER_LEN;
                    if let Some(payload) = b.get(p..p + rh.payload_len as usize) {
                        put(dir, "record", &format!("record-{}", rh.seq), payload);
                        kept += 1;
                    }
                }
                at += page;
            }
        }
    }
    let _ = std::fs::remove_dir_all(&tmp);
    fallback(dir);
    replay(dir);
    out
}

/// `replay`: the payload of each record of the replay target's own store (the last is the one
/// the target replaces, so each seed is a record that store could hold).
fn replay(out: &mut Vec<Seed>) {
    let Some(w) = crate::replay_store() else {
        return;
    };
    let Ok(log) = w.vfs.open(&w.dir.join("log"), false) else {
        return;
    };
    let mut at = codec::frame::RING_START;
    let mut h = [0u8; codec::frame::REC_HEADER_LEN];
    while at + h.len() as u64 <= w.len {
        if log.read_at(&mut h, at).is_ok() {
            if let codec::frame::HeaderScan::Header(rh) = codec::frame::scan_header(&h) {
                let mut payload = vec![0u8; rh.payload_len as usize];
                if log.read_at(&mut payload, at + h.len() as u64).is_ok() {
                    put(out, "replay", &format!("record-{}", rh.seq), &payload);
                }
            }
        }
        at += 4096;
    }
}

/// `fallback`: two bytes choosing the flipped bit, then (op, value) pairs: updates of either
/// series, commits (5), full checkpoints (6), a stop and a start (7), records after both.
fn fallback(out: &mut Vec<Seed>) {
    for k in 0..8u64 {
        let mut r = testkit::Rng::seeded(k);
        let mut bytes = vec![r.below(256) as u8, r.below(256) as u8];
        for i in 0..300 + 100 * k {
            bytes.push([0, 8, 16, 24, 32, 40][r.index(6)]);
            bytes.push(r.below(256) as u8);
            if i % 7 == 6 {
                bytes.extend([5, 0]);
            }
            if i % (60 + 10 * k) == 59 {
                bytes.extend([if k % 2 == 1 { 6 } else { 7 }, 0]);
            }
        }
        put(out, "fallback", &format!("seed-{k}"), &bytes);
    }
}

/// The seeds kept as files in `<dir>/<target>/` (`fuzz/seeds/`), by name.
pub fn kept(dir: &std::path::Path, target: &'static str) -> Vec<Seed> {
    let mut out: Vec<Seed> = std::fs::read_dir(dir.join(target))
        .map(|rd| {
            rd.flatten()
                .filter(|e| e.path().is_file())
                .filter_map(|e| {
                    let b = std::fs::read(e.path()).ok()?;
                    Some((target, e.file_name().to_string_lossy().into_owned(), b))
                })
                .collect()
        })
        .unwrap_or_default();
    out.sort_by(|a, b| a.1.cmp(&b.1));
    out
}
