//! The fuzz targets (issue 21): every parser of bytes or text that comes from outside the
//! process or from disk, each as a function of arbitrary bytes that must return (an error is
//! fine) and never panic, hang, or allocate without bound. `fuzz/` (cargo-fuzz, libFuzzer,
//! nightly) runs them for hours from the seeds of [`seeds`]; `tests/smoke.rs` runs each over
//! those seeds and a few thousand mutations of them in every test run (stable). A crash found by either is
//! fixed and its input kept in `fuzz/regressions/<target>/`, which the smoke test replays.
//!
//! Where a decoder accepts its input, the result is also used (encoded again, or read
//! through), so that what it built is checked as well as the parse.

#![forbid(unsafe_code)]

pub mod seeds;

/// A target: a function of arbitrary bytes.
pub type Target = fn(&[u8]);

/// Every target, by name (the name of its fuzz/fuzz_targets/ file and corpus directory).
pub const TARGETS: &[(&str, Target)] = &[
    ("protocol", protocol),
    ("update", update),
    ("create", create),
    ("times", times),
    ("record", record),
    ("replay", replay),
    ("fallback", fallback),
    ("checkpoint", checkpoint),
    ("segment", segment),
    ("rows", rows),
    ("rrdfile", rrdfile),
    ("restore", restore),
    ("carbon", carbon),
    ("pickle", pickle),
    ("graphite", graphite),
    ("http", http),
    ("whisper", whisper),
];

fn text(data: &[u8]) -> std::borrow::Cow<'_, str> {
    String::from_utf8_lossy(data)
}

/// rrdcached's protocol: each line of the input parsed as a request (a daemon's connection
/// reads lines of at most 4,096 bytes; longer ones are refused before parsing).
pub fn protocol(data: &[u8]) {
    for line in text(data).lines() {
        let _ = proto::request::parse(line);
        let _ = proto::tokenize::fields(line);
    }
}

/// A schema of two DSs and three archives that updates are parsed against (built once).
fn schema() -> rrd::Schema {
    static SCHEMA: std::sync::OnceLock<rrd::Schema> = std::sync::OnceLock::new();
    SCHEMA.get_or_init(build_schema).clone()
}

fn build_schema() -> rrd::Schema {
    let args: Vec<String> = [
        "x.rrd",
        "-s",
        "10",
        "DS:a:GAUGE:600:U:U",
        "DS:b:COUNTER:600:0:1e9",
        "RRA:AVERAGE:0.5:1:100",
        "RRA:MAX:0.5:6:100",
        "RRA:LAST:0.5:60:10",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    rrd::create::parse_create(&args, 1_700_000_000)
        .expect("the fuzzing schema")
        .schema
}

/// UPDATE's arguments: the first line a template (or none if empty), each other line an
/// update argument (`time:value:value`, `time@values`, `N:...`).
pub fn update(data: &[u8]) {
    let s = schema();
    let t = text(data);
    let mut lines = t.lines();
    let tmpl = lines
        .next()
        .filter(|l| !l.is_empty())
        .and_then(|l| rrd::update::parse_template(&s, l).ok());
    for l in lines {
        let _ = rrd::update::parse_update_arg(&s, l, tmpl.as_deref(), (1_700_000_000, 0));
    }
}

/// CREATE's arguments, one a line; a schema that parses is also built into an RRD and
/// written as a `.rrd` file.
pub fn create(data: &[u8]) {
    let args: Vec<String> = text(data).lines().map(str::to_string).collect();
    if let Ok(req) = rrd::create::parse_create(&args, 1_700_000_000) {
        // Whatever CREATE accepts, a checkpoint must read back: the schema's bytes decode
        // to the same bytes (a bound on the DS count once refused 26 DSs named a to z).
        let bytes = codec::rrdbin::schema_bytes(&req.schema);
        let back = codec::rrdbin::decode_schema_bytes(&bytes)
            .unwrap_or_else(|e| panic!("a schema CREATE accepted does not read back: {e}"));
        assert_eq!(codec::rrdbin::schema_bytes(&back), bytes);
        let cells =
            req.schema.ds.len() as u64 * req.schema.rra.iter().map(|r| r.row_cnt).sum::<u64>();
        // A schema of millions of rows is valid; building it here would only measure memory.
        if cells <= 1 << 16 {
            let r = rrd::state::Rrd::new(req.schema, req.start);
            let _ = rrd::rrdfile::write(&r);
        }
    }
}

/// Times: rrdtool's at-style times (fetch -s/-e, update's `time@`) and Graphite's
/// (`from`/`until`), one a line.
pub fn times(data: &[u8]) {
    for l in text(data).lines() {
        let _ = rrd::parsetime::parse_time(l, 1_700_000_000);
        let _ = graphite::time::parse(l, 1_700_000_000);
    }
}

/// A commit record's payload (past its checksum): every entry decoded, and the samples of
/// each series decoded from its stream as replay would.
pub fn record(data: &[u8]) {
    let Ok(entries) = codec::record::decode_record(data) else {
        return;
    };
    let mut codec = codec::sample::SeriesCodec::seed(1_700_000_000, 0, ["U", "U"]);
    for e in entries {
        match e {
            codec::record::Entry::Samples { count, chunk, .. } => {
                let _ = codec::sample::decode_chunk(&mut codec, chunk, count as usize);
            }
            codec::record::Entry::Block(b) => {
                // A block may claim 2^64 series of no bits each; replay stops at the first
                // id past every id made (engine::replay), this target after 2^16.
                for s in b.series().take(1 << 16) {
                    let Ok(s) = s else { break };
                    // Streams and rows alike, as replay reads them.
                    let _ = codec::sample::for_each_parsed_in_span(
                        &mut codec,
                        &s.span,
                        s.count.min(1 << 16),
                        &[true],
                        |_, _| Ok::<(), codec::DecodeError>(()),
                    );
                }
            }
            codec::record::Entry::Create { image, .. } => {
                if let Ok(rrd) = codec::rrdbin::decode_image(image) {
                    if small(&rrd) {
                        let _ = rrd::rrdfile::write(&rrd);
                    }
                }
            }
            _ => {}
        }
    }
}

/// The replay target's store, left unclosed on the simulated disk: its log, its directory,
/// and where its last record starts (place, sequence number, log position).
pub(crate) struct Written {
    pub(crate) vfs: std::sync::Arc<dyn engine::vfs::Vfs>,
    pub(crate) dir: &'static std::path::Path,
    pub(crate) last: Option<(u64, u64, u64)>,
    pub(crate) len: u64,
}

fn replay_opts() -> engine::Options {
    engine::Options {
        log_bytes: 256 << 10,
        ..engine::Options::default()
    }
}

const REPLAY_T0: i64 = 1_700_000_000;

/// Two series, a commit of their creation, two of updates.
pub(crate) fn replay_store() -> Option<Written> {
    use engine::vfs::Vfs;
    let fs = engine::sim::SimFs::new();
    let vfs: std::sync::Arc<dyn Vfs> = std::sync::Arc::new(fs);
    let dir = std::path::Path::new("/store");
    let opts = replay_opts;
    let t0 = REPLAY_T0;
    {
        let Ok(mut st) = engine::Store::open_with(vfs.clone(), dir, opts()) else {
            return None;
        };
        for name in ["a.rrd", "b.rrd"] {
            let rrd = rrd::state::Rrd::new(schema(), t0 - 10);
            st.create(name, rrd, false).expect("create");
        }
        st.commit().expect("commit");
        let sample = rrd::update::Sample {
            time: t0,
            usec: 0,
            values: vec!["1.5".into(), "100".into()],
        };
        st.update("a.rrd", &sample, &mut |_| {}).expect("update");
        st.commit().expect("commit");
        // A sample that continues both decimals a step later: the last record's block holds
        // it as a row (docs/FORMAT.md, "Sample block"), which the input replaces.
        let sample = rrd::update::Sample {
            time: t0 + 10,
            usec: 0,
            values: vec!["2.5".into(), "150".into()],
        };
        st.update("a.rrd", &sample, &mut |_| {}).expect("update");
        st.commit().expect("commit");
        // Dropped without close: the records stay to be replayed.
    }
    let log = vfs.open(&dir.join("log"), false).ok()?;
    let len = log.len().unwrap_or(0);
    let (mut last, mut at) = (None, codec::frame::RING_START);
    let mut h = [0u8; codec::frame::REC_HEADER_LEN];
    while at + h.len() as u64 <= len {
        if log.read_at(&mut h, at).is_ok() {
            if let codec::frame::HeaderScan::Header(rh) = codec::frame::scan_header(&h) {
                if last.is_none_or(|(_, s, _)| rh.seq > s) {
                    last = Some((at, rh.seq, rh.lsn));
                }
            }
        }
        at += 4096;
    }
    Some(Written {
        vfs,
        dir,
        last,
        len,
    })
}

/// A commit record past its checksum, replayed by a store's open: a store on the simulated
/// file system (two series, a commit) has its last record's payload replaced by the input,
/// framed with a valid checksum, and is opened again (replay applies what decodes; open
/// must fail with an error or serve the series).
pub fn replay(data: &[u8]) {
    let Some(Written { vfs, dir, last, .. }) = replay_store() else {
        return;
    };
    let Some((at, seq, lsn)) = last else { return };
    let Ok(mut log) = vfs.open(&dir.join("log"), false) else {
        return;
    };
    let len = log.len().unwrap_or(0);
    let rec = codec::frame::encode_record(codec::frame::KIND_COMMIT, seq, lsn, data, 4096);
    if at + rec.len() as u64 > len || log.write_at(&rec, at).is_err() {
        return;
    }
    drop(log);
    let t0 = REPLAY_T0;
    if let Ok(st) = engine::Store::open_with(vfs, dir, replay_opts()) {
        for name in st.names() {
            if let Some(r) = st.get(&name) {
                let _ = rrd::fetch::fetch(r, rrd::Cf::Average, t0 - 3600, t0 + 3600, 1, false);
                if small(r) {
                    let _ = rrd::rrdfile::write(r);
                }
            }
        }
    }
}

/// Replay from the older checkpoint past a damaged newest one. The input drives a writer of
/// two series (updates, commits, full checkpoints, a stop and a start, the ring's own lagged
/// checkpoints); then one bit of the newest checkpoint file is flipped (its first two bytes
/// choose which) and the store opened again: refused, or holding exactly what was written,
/// bit for bit ([`rrd::rrdfile::write`] of each series against the same updates applied in
/// memory). A different state panics: the review found replay from the older checkpoint
/// serving values never written.
pub fn fallback(data: &[u8]) {
    use engine::vfs::Vfs;
    let [a, b, ops @ ..] = data else {
        return;
    };
    let fs = engine::sim::SimFs::new();
    let vfs: std::sync::Arc<dyn Vfs> = std::sync::Arc::new(fs.clone());
    let dir = std::path::Path::new("/store");
    let open = || {
        let opts = engine::Options {
            log_bytes: 64 << 10,
            commit_interval: None,
            spill_bytes: 2048,
            ..engine::Options::default()
        };
        engine::Store::open_with(vfs.clone(), dir, opts)
    };
    let t0 = 1_700_000_000;
    let names = ["a.rrd", "b.rrd"];
    let mut model: Vec<rrd::state::Rrd> = names
        .iter()
        .map(|_| rrd::state::Rrd::new(schema(), t0 - 10))
        .collect();
    let Ok(mut st) = open() else { return };
    for (name, rrd) in names.iter().zip(&model) {
        st.create(name, rrd.clone(), false).expect("create");
    }
    st.commit().expect("commit");
    let (mut t, mut counter) = ([t0; 2], [1000u64; 2]);
    for op in ops.chunks(2).take(600) {
        let (o, v) = (op[0], op.get(1).copied().unwrap_or(0));
        match o % 8 {
            0..=4 => {
                let i = usize::from(o >> 3) & 1;
                t[i] += 5 + i64::from(o >> 4);
                counter[i] += u64::from(v) * 37;
                let sample = rrd::update::Sample {
                    time: t[i],
                    usec: 0,
                    values: vec![format!("{}.{}", v / 10, v % 10), counter[i].to_string()],
                };
                let _ = model[i].apply(&sample, &mut |_| {});
                match st.update(names[i], &sample, &mut |_| {}) {
                    Ok(()) | Err(engine::Error::Rrd(_)) => {}
                    Err(e) => panic!("update: {e}"),
                }
            }
            5 => {
                st.commit().expect("commit");
            }
            6 => {
                st.checkpoint().expect("checkpoint");
            }
            _ => {
                st.close().expect("close");
                st = open().expect("reopen");
            }
        }
    }
    st.close().expect("close");
    // The newest checkpoint file: the one whose header claims the higher generation.
    let generation = |p: &std::path::Path| {
        fs.read_file(p).map_or(0, |f| {
            codec::checkpoint::decode_checkpoint_header(&f).map_or(0, |h| h.generation)
        })
    };
    let Some(newest) = engine::files::checkpoints(dir)
        .into_iter()
        .max_by_key(|p| generation(p))
    else {
        return;
    };
    let Some(mut ck) = fs.read_file(&newest) else {
        return;
    };
    let at = usize::from(u16::from_le_bytes([*a, *b])) % ck.len().max(1);
    if let Some(byte) = ck.get_mut(at) {
        *byte ^= 1 << (a % 8);
    }
    fs.write_file(&newest, ck);
    if let Ok(st) = open() {
        for (name, want) in names.iter().zip(&model) {
            let got = st.get(name).expect("series");
            assert!(
                rrd::rrdfile::write(got).ok() == rrd::rrdfile::write(want).ok(),
                "{name}: replay past a damaged newest checkpoint gave another state (last update {} vs {})",
                got.last_up,
                want.last_up
            );
        }
    }
}

/// Whether `r`'s archives are small enough to write out as a `.rrd` file here (a valid
/// schema may have 2^31 rows: 16 GB as a file, which would only measure memory). 65,536
/// values: at a million, writing one file took half a second in the instrumented build (a
/// slow unit of the record campaign, 2026-11-27), time the parsers' own code did not get.
fn small(r: &rrd::state::Rrd) -> bool {
    r.ds_cnt() as u64 * r.schema.rra.iter().map(|a| a.row_cnt).sum::<u64>() <= 1 << 16
}

/// A checkpoint's payload (past its checksum), as each version reads it: the first byte
/// picks the version, the rest is the payload.
pub fn checkpoint(data: &[u8]) {
    let Some((&v, payload)) = data.split_first() else {
        return;
    };
    let h = codec::checkpoint::CheckpointHeader {
        version: u32::from(v % 6),
        flags: 0,
        generation: 1,
        log_lsn: 0,
        log_seq: 1,
        payload_len: payload.len() as u64,
        payload_crc: codec::crc32c::crc32c(payload),
    };
    let _ = codec::checkpoint::decode_checkpoint_payload(&h, payload);
    let _ = codec::checkpoint::decode_checkpoint_header(data);
    let _ = codec::checkpoint::read_checkpoint_header_unchecked(data);
}

/// A segment file: its header and index (version 2), every chunk found through it, and the
/// whole-file reading of version 1.
pub fn segment(data: &[u8]) {
    if let Ok(v) = codec::segment::SegView::open(data, 1) {
        for ord in 0..v.len().min(1 << 16) {
            let k = v.key(ord);
            let _ = v.find(k);
            if let Ok((start, len)) = v.chunk(ord) {
                let mut out = Vec::new();
                let _ = rrd::rows::decode_values(&data[start..start + len], 256, &mut out);
            }
        }
    }
    let _ = codec::segment::decode_segment(data, 1);
    spooled_segment(data);
}

/// Chunks cut from the input, written as a checkpoint writes its open chunks' versions (a
/// spool, with room for a few more than it gets; chunks of a series with the same index and
/// bytes share them): the segment opens and every chunk reads back by its key.
fn spooled_segment(data: &[u8]) {
    use codec::segment::{SegKey, SegView, SegmentSpool};
    let chunks: Vec<(SegKey, &[u8])> = data
        .chunks(17)
        .take(64)
        .enumerate()
        .map(|(i, c)| {
            // Four archives a series, chunk 0 or 1 of each: equal pieces of one series and
            // index are written once.
            let key = (i as u64 / 4, i as u32, u32::from(c[0] % 2));
            (key, c)
        })
        .collect();
    let room = data.first().map_or(0, |&b| usize::from(b % 4));
    let mut sp = SegmentSpool::new(2, 1 << 16, chunks.len() + room);
    let mut file = Vec::new();
    for (k, b) in &chunks {
        let (at, new) = sp.chunk(*k, b).expect("keys ascending, room for each");
        let at = at as usize;
        if !new {
            assert_eq!(&file[at..at + b.len()], *b, "shared with equal bytes");
            continue;
        }
        if file.len() < at + b.len() {
            file.resize(at + b.len(), 0);
        }
        file[at..at + b.len()].copy_from_slice(b);
    }
    let head = sp.index();
    if file.len() < head.len() {
        file.resize(head.len(), 0);
    }
    file[..head.len()].copy_from_slice(&head);
    let v = SegView::open(&file, 2).expect("a spooled segment opens");
    assert_eq!(v.len(), chunks.len());
    for (ord, (k, b)) in chunks.iter().enumerate() {
        assert_eq!(v.find(*k), Some(ord));
        let (s, l) = v.chunk(ord).expect("a spooled chunk checks");
        assert_eq!(&file[s..s + l], *b);
    }
}

/// Archive rows' block encoding: the first two bytes say how many values to read.
pub fn rows(data: &[u8]) {
    if data.len() < 2 {
        return;
    }
    let n = usize::from(u16::from_le_bytes([data[0], data[1]]));
    // The same bytes as a piece of a chunk of `n` values: its header reads or errs, and a
    // header that reads stays within the chunk.
    if let Ok(h) = rrd::rows::piece_head(&data[2..], n) {
        assert!(h.start + h.n <= n && h.len <= data.len() - 2);
        assert!(h.prev != 0 || (h.start == 0 && h.n == n));
    }
    let mut out = Vec::new();
    if rrd::rows::decode_values(&data[2..], n, &mut out).is_ok() {
        // What decodes encodes again and decodes to the same bits.
        let mut again = Vec::new();
        rrd::rows::encode_values(&out, &mut again);
        let mut back = Vec::new();
        let used = rrd::rows::decode_values(&again, n, &mut back).expect("re-encoded rows decode");
        assert_eq!(used, again.len());
        assert!(out
            .iter()
            .zip(&back)
            .all(|(a, b)| a.to_bits() == b.to_bits()));
    }
}

/// A `.rrd` file, as the view, `ringlet import` and the daemon's first sight of a file read
/// it; one that reads is written again and read back.
pub fn rrdfile(data: &[u8]) {
    if let Ok(r) = rrd::rrdfile::read(data) {
        if let Ok(bytes) = rrd::rrdfile::write(&r) {
            rrd::rrdfile::read(&bytes).expect("a written .rrd file reads");
        }
    }
}

/// rrdtool's XML dump, as `restore` reads it (with and without the range check).
pub fn restore(data: &[u8]) {
    let t = text(data);
    let _ = rrd::restore::restore_xml(&t, true);
    if let Ok(r) = rrd::restore::restore_xml(&t, false) {
        let _ = rrd::dump::dump_xml(&r, "");
    }
}

/// carbon's plaintext lines, storage-schemas retentions and metric names.
pub fn carbon(data: &[u8]) {
    for l in text(data).lines() {
        let _ = server::carbon::parse_line(l, 1_700_000_000.0);
        let _ = server::carbon::parse_retentions(l);
        let _ = server::carbon::name_of(l);
    }
}

/// A pickle, as carbon's pickle receiver gets it (without its length prefix).
pub fn pickle(data: &[u8]) {
    if let Ok(v) = proto::pickle::loads(data) {
        // What carbon's listener does with a message: each item a point or not.
        let mut n = 0u64;
        let _ = proto::pickle::for_each_point(&v, server::carbon::MAX_PATH, |p| {
            n += u64::from(p.is_ok());
        });
    }
}

/// Graphite's target expressions (render's `target=`), one a line.
pub fn graphite(data: &[u8]) {
    for l in text(data).lines() {
        let _ = graphite::expr::parse(l);
    }
}

/// The HTTP API's query strings (and form bodies), one a line, as the render, find and
/// page routes read them: every parameter decoded, targets parsed, `from`/`until` read, and
/// `query`s matched as globs.
pub fn http(data: &[u8]) {
    for l in text(data).lines() {
        for (k, v) in server::httpd::form(l) {
            match k.as_str() {
                "target" => {
                    let _ = graphite::expr::parse(&v);
                }
                "from" | "until" => {
                    let _ = graphite::time::parse(&v, 1_700_000_000);
                }
                _ => {
                    if let Ok(p) = graphite::glob::Pattern::new(&v) {
                        let _ = p.prefix();
                    }
                    if let Ok(c) = graphite::glob::Component::new(&v) {
                        let _ = c.matches("servers");
                    }
                }
            }
        }
    }
}

/// A whisper file; with a first byte of 0 the rest is a PHPFina feed (16 bytes of `.meta`,
/// then the `.dat`).
pub fn whisper(data: &[u8]) {
    match data.split_first() {
        Some((0, rest)) if rest.len() >= 16 => {
            let _ = codec::whisper::parse_phpfina(&rest[..16], &rest[16..]);
        }
        _ => {
            let _ = codec::whisper::parse(data);
        }
    }
}
