//! Archive rows stored in segment files stay there when a store opens: they are read
//! through the page cache when a read needs them, so the heap a store takes for its
//! archives does not grow with the history it holds (issue 19's first stage). On the real
//! file system (segments mapped).

mod common;

use common::TempDir;
use engine::{Options, Store};
use rrd::{Rows, RraData};

/// A store of `series` RRDs whose archive holds `filled` rows of noisy values (the rest
/// unknown), checkpointed (the sealed chunks go to segment files) and closed.
fn store_with_history(dir: &std::path::Path, series: usize, filled: usize) -> Vec<Vec<f64>> {
    let mut st = Store::open(dir, opts()).unwrap();
    let all = fill(&mut st, series, filled);
    // A checkpoint stores the sealed chunks in segment files.
    st.checkpoint().unwrap();
    st.close().unwrap();
    all
}

/// Create `series` RRDs in `st` as [`store_with_history`] describes; their values.
fn fill(st: &mut Store, series: usize, filled: usize) -> Vec<Vec<f64>> {
    let mut all = Vec::new();
    let mut rng = testkit::Rng::new(12345);
    let schema = schema_of("--step 15 DS:v:GAUGE:60:U:U RRA:AVERAGE:0.5:1:5000 RRA:MAX:0.5:4:3000");
    for i in 0..series {
        let mut rrd = rrd::Rrd::new(schema.clone(), 1_700_000_000);
        for a in 0..rrd.rra.len() {
            let n = rrd.schema.rra[a].row_cnt as usize * rrd.ds_cnt();
            let mut vals = vec![rrd::num::DNAN; n];
            let keep = (filled * rrd.ds_cnt()).min(n);
            for v in vals[n - keep..].iter_mut() {
                *v = (rng.next_u64() % 1_000_000) as f64 / 7.0;
            }
            all.push(vals.clone());
            rrd.rra[a] = RraData {
                cur_row: rrd.schema.rra[a].row_cnt - 1,
                rows: Rows::from_values(rrd.ds_cnt(), &vals),
            };
        }
        st.create(&format!("s{i}"), rrd, false).unwrap();
    }
    all
}

fn bits(v: &[Vec<f64>]) -> Vec<Vec<u64>> {
    v.iter()
        .map(|r| r.iter().map(|x| x.to_bits()).collect())
        .collect()
}

fn read_all(st: &Store, series: usize) -> Vec<Vec<f64>> {
    let mut got = Vec::new();
    for i in 0..series {
        for r in &st.get(&format!("s{i}")).unwrap().rra {
            got.push(r.rows.to_vec());
        }
    }
    got
}

/// The store in `dir` opened for series `s<i>` alone (as the CLI opens it), its two
/// archives checked against `want` (two archives a series, as [`fill`] makes them).
fn open_one(dir: &std::path::Path, i: usize, want: &[Vec<f64>]) -> Store {
    let one = Options {
        only: Some(vec![format!("s{i}")]),
        ..opts()
    };
    let st = Store::open(dir, one).unwrap();
    for a in 0..2 {
        let got = st.get(&format!("s{i}")).unwrap().rra[a].rows.to_vec();
        assert_eq!(
            bits(&[got]),
            bits(&want[i * 2 + a..i * 2 + a + 1]),
            "archive {a}"
        );
    }
    st
}

#[test]
fn a_checkpoint_moves_the_chunks_it_stores_off_the_heap() {
    let dir = TempDir::new("resident-settle");
    let mut st = Store::open(&dir.0, opts()).unwrap();
    let want = fill(&mut st, 10, 1_000_000);
    let before = st.archive_heap_bytes();
    st.checkpoint().unwrap();
    let after = st.archive_heap_bytes();
    assert!(after * 10 < before, "heap {before} -> {after}");
    assert_eq!(
        bits(&read_all(&st, 10)),
        bits(&want),
        "read from the segments"
    );
    // Written again: the changed chunk is on the heap until the next checkpoint.
    st.close().unwrap();
    let st = Store::open(&dir.0, opts()).unwrap();
    assert_eq!(bits(&read_all(&st, 10)), bits(&want));
    assert_eq!(st.archive_heap_bytes(), after, "as after the checkpoint");
}

#[test]
fn a_store_with_version_1_segments_opens_and_reads_them() {
    use codec::segment::{encode_v1_segment, SegChunk, SegView};
    let dir = TempDir::new("resident-v1");
    let want = store_with_history(&dir.0, 5, 1_000_000);
    let mut converted = 0;
    for e in std::fs::read_dir(&dir.0).unwrap() {
        let path = e.unwrap().path();
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        let Some(hex) = name.strip_prefix("seg-") else {
            continue;
        };
        let id = u64::from_str_radix(hex, 16).unwrap();
        let b = std::fs::read(&path).unwrap();
        let v = SegView::open(&b, id).unwrap();
        let chunks: Vec<SegChunk<'_>> = (0..v.len())
            .map(|ord| {
                let (series, archive, chunk) = v.key(ord);
                let (s, l) = v.chunk(ord).unwrap();
                SegChunk {
                    series,
                    archive,
                    chunk,
                    bytes: &b[s..s + l],
                }
            })
            .collect();
        std::fs::write(&path, encode_v1_segment(id, 0, &chunks)).unwrap();
        converted += 1;
    }
    assert!(converted > 0);
    // A reader of one series reads them by position, opened when first needed.
    let st = open_one(&dir.0, 2, &want);
    assert_eq!(st.damaged_chunks(), 0);
    drop(st);
    let mut st = Store::open(&dir.0, opts()).unwrap();
    assert_eq!(bits(&read_all(&st, 5)), bits(&want), "read from version 1");
    // The next checkpoint goes on naming them; the store opens again.
    st.checkpoint().unwrap();
    st.close().unwrap();
    let st = Store::open(&dir.0, opts()).unwrap();
    assert_eq!(bits(&read_all(&st, 5)), bits(&want));
}

/// Rewrite every checkpoint file of the store in `dir` as version 3 wrote it (stored chunks
/// "in the segments", found by their keys at open).
fn checkpoints_to_version(dir: &std::path::Path, version: u32) -> usize {
    use codec::checkpoint::*;
    use codec::rrdbin::ChunkEntry;
    let mut n = 0;
    for f in ["checkpoint.a", "checkpoint.b"] {
        let path = dir.join(f);
        let Ok(b) = std::fs::read(&path) else {
            continue;
        };
        let Ok(h) = decode_checkpoint_header(&b) else {
            continue;
        };
        let Ok(st) = decode_checkpoint_payload(&h, &b[CK_HEADER_LEN..][..h.payload_len as usize])
        else {
            continue;
        };
        assert_eq!(h.version, CK_VERSION);
        let w = CheckpointWriter::new(
            h.generation,
            h.log_lsn,
            h.log_seq,
            st.next_id,
            st.complete_lsn,
            st.series.len(),
        );
        let mut w = match version {
            3 => w.version_3(),
            4 => w.version_4(),
            _ => w,
        };
        for s in &st.series {
            let per = rrd::rows::chunk_rows_for(s.rrd.ds_cnt());
            let entries: Vec<Vec<ChunkEntry>> = s
                .rrd
                .rra
                .iter()
                .map(|r| {
                    (0..r.rows.chunk_count())
                        .map(|c| match r.rows.seg_of(c) {
                            Some(seg) => ChunkEntry::Stored(seg),
                            None => match r.rows.packed_bytes(c) {
                                Some(b) => ChunkEntry::Inline(b),
                                None => {
                                    ChunkEntry::Fill(r.rows.get(c * per * s.rrd.ds_cnt()).to_bits())
                                }
                            },
                        })
                        .collect()
                })
                .collect();
            w.series_chunked(s.id, &s.name, &s.rrd, &entries);
        }
        std::fs::write(&path, w.finish(&st.segments)).unwrap();
        n += 1;
    }
    n
}

/// A store whose checkpoint is of version 3 (made before the chunk tables were written
/// into checkpoints) or 4 (before the table of schemas) opens without loss, whole or for
/// one series, and its next checkpoint is of the current version.
#[test]
fn a_store_with_a_version_3_or_4_checkpoint_opens_and_reads() {
    for older in [3, 4] {
        let dir = TempDir::new(&format!("resident-ck{older}"));
        let want = store_with_history(&dir.0, 5, 1_000_000);
        assert!(checkpoints_to_version(&dir.0, older) > 0);
        let version = |dir: &std::path::Path| {
            ["checkpoint.a", "checkpoint.b"]
                .iter()
                .filter_map(|f| std::fs::read(dir.join(f)).ok())
                .filter_map(|b| codec::checkpoint::decode_checkpoint_header(&b).ok())
                .max_by_key(|h| h.generation)
                .unwrap()
                .version
        };
        assert_eq!(version(&dir.0), older);
        drop(open_one(&dir.0, 3, &want));
        let mut st = Store::open(&dir.0, opts()).unwrap();
        assert_eq!(
            bits(&read_all(&st, 5)),
            bits(&want),
            "read through version {older}"
        );
        st.checkpoint().unwrap();
        st.close().unwrap();
        assert_eq!(version(&dir.0), codec::checkpoint::CK_VERSION);
        let st = Store::open(&dir.0, opts()).unwrap();
        assert_eq!(bits(&read_all(&st, 5)), bits(&want));
    }
}

#[test]
fn a_damaged_stored_chunk_reads_as_unknown_and_is_counted() {
    let dir = TempDir::new("resident-damage");
    let want = store_with_history(&dir.0, 3, 1_000_000);
    let seg = std::fs::read_dir(&dir.0)
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.file_name().unwrap().to_string_lossy().starts_with("seg-"))
        .unwrap();
    let mut b = std::fs::read(&seg).unwrap();
    let at = b.len() - 10; // in the last chunk's bytes
    b[at] ^= 0x10;
    std::fs::write(&seg, &b).unwrap();
    let st = Store::open(&dir.0, opts()).unwrap();
    assert_eq!(st.damaged_chunks(), 0, "open reads no chunk");
    let before = rrd::rows::damage();
    let got = read_all(&st, 3);
    assert_eq!(st.damaged_chunks(), 1);
    // The reading thread is told, so a reader answers an error rather than the unknowns.
    let met = rrd::rows::damage().since(before).expect("damage noted");
    assert_eq!(met.chunks, 1);
    assert!(met.last.is_some_and(|(_, _, seg)| seg > 0), "{met:?}");
    let mut differ = 0;
    for (g, w) in got.iter().zip(&want) {
        for (a, b) in g.iter().zip(w) {
            if a.to_bits() != b.to_bits() {
                assert!(a.is_nan(), "a damaged chunk reads as unknown, not {a}");
                differ += 1;
            }
        }
    }
    assert!(
        differ > 0 && differ <= rrd::rows::CHUNK_VALUES,
        "{differ} values"
    );
}

fn opts() -> Options {
    Options {
        commit_interval: None,
        log_bytes: 4 << 20,
        ..Options::default()
    }
}

#[test]
fn stored_archive_rows_are_not_on_the_heap_and_read_back_exactly() {
    let short = TempDir::new("resident-short");
    let long = TempDir::new("resident-long");
    let rows_of = |dir: &std::path::Path| {
        let st = Store::open(dir, opts()).unwrap();
        let heap = st.archive_heap_bytes();
        let mut got = Vec::new();
        for i in 0..20 {
            for r in &st.get(&format!("s{i}")).unwrap().rra {
                got.push(r.rows.to_vec());
            }
        }
        (heap, got)
    };
    let want_short = store_with_history(&short.0, 20, 10);
    let want_long = store_with_history(&long.0, 20, 1_000_000);
    let (heap_short, got_short) = rows_of(&short.0);
    let (heap_long, got_long) = rows_of(&long.0);
    assert_eq!(bits(&got_short), bits(&want_short));
    assert_eq!(
        bits(&got_long),
        bits(&want_long),
        "read back from the segments"
    );
    // The long store holds every row noisy (8 bytes a value packed); on the heap it takes
    // about what the short one does (a stored chunk costs its small handle, a fresh
    // archive's unknown chunk nothing), far from its rows' bytes.
    let full: usize = want_long.iter().map(|r| r.len() * 8).sum();
    assert!(
        heap_long <= heap_short + heap_short / 10,
        "heap {heap_long} vs {heap_short}"
    );
    assert!(
        heap_long * 20 < full,
        "heap {heap_long} of {full} bytes of rows"
    );
}

/// Series created together with one schema have equal chunk tables (their chunks sealed at
/// the same times, stored in the same segments): one copy serves them all, so the tables'
/// memory does not grow with the series count, after a checkpoint, after reopening, and
/// after a commit that sealed chunks of every series.
#[test]
fn series_created_together_share_one_chunk_table() {
    let few = TempDir::new("resident-share-few");
    let many = TempDir::new("resident-share-many");
    store_with_history(&few.0, 5, 1_000_000);
    store_with_history(&many.0, 200, 1_000_000);
    let a = Store::open(&few.0, opts()).unwrap();
    let b = Store::open(&many.0, opts()).unwrap();
    let (ha, hb) = (a.chunk_table_bytes(), b.chunk_table_bytes());
    // A table of its own each would make `hb` 40 times `ha`.
    assert!(hb < ha * 2, "5 series: {ha} bytes; 200 series: {hb} bytes");
    drop(a);
    drop(b);
    // Written on and committed: every series seals a chunk, and shares its table again.
    let mut st = Store::open(&many.0, opts()).unwrap();
    let before = st.chunk_table_bytes();
    let t0 = st.get("s0").unwrap().last_up;
    for k in 1..=300i64 {
        for i in 0..200 {
            let s = rrd::Sample {
                time: t0 + 15 * k,
                usec: 0,
                values: vec![format!("{}", (i * 7 + k) % 100)],
            };
            st.update(&format!("s{i}"), &s, &mut |_| {}).unwrap();
        }
    }
    st.commit().unwrap();
    let committed = st.chunk_table_bytes();
    st.checkpoint().unwrap();
    let after = st.chunk_table_bytes();
    assert!(
        committed < before * 3 && after < before * 3,
        "{before} bytes before, {committed} committed, {after} after the checkpoint"
    );
}

/// A store in `dir` opened with `o`, with `series` RRDs `s<i>` of one 5,000-row archive of
/// 15-second rows.
fn one_archive_store(dir: &std::path::Path, o: Options, series: usize) -> Store {
    store_of(
        dir,
        o,
        series,
        "--step 15 DS:v:GAUGE:60:U:U RRA:AVERAGE:0.5:1:5000",
    )
}

/// The schema `create` makes of `spec` (its arguments after the start, 1700000000).
fn schema_of(spec: &str) -> rrd::Schema {
    let args: Vec<String> = format!("x --start 1700000000 {spec}")
        .split(' ')
        .map(String::from)
        .collect();
    rrd::create::parse_create_with(&args, 1_700_000_000, &mut |_| None, &mut |_| false)
        .unwrap()
        .schema
}

/// A store in `dir` opened with `o`, with `series` RRDs `s<i>` created with `spec` (the
/// arguments of `create` after its start).
fn store_of(dir: &std::path::Path, o: Options, series: usize, spec: &str) -> Store {
    let mut st = Store::open(dir, o).unwrap();
    let schema = schema_of(spec);
    for i in 0..series {
        let rrd = rrd::Rrd::new(schema.clone(), 1_700_000_000);
        st.create(&format!("s{i}"), rrd, false).unwrap();
    }
    st
}

/// The bits of the first archive's rows of series `s0..s<n>`.
fn first_archives(s: &Store, n: usize) -> Vec<Vec<u64>> {
    (0..n)
        .map(|i| {
            let r = s.get(&format!("s{i}")).unwrap().rra[0].rows.to_vec();
            r.iter().map(|v| v.to_bits()).collect()
        })
        .collect()
}

/// Update series `s<i>` of [`one_archive_store`] at step `k` with a noisy value from `x`.
fn update_noisy(st: &mut Store, i: usize, k: i64, x: &mut testkit::Rng) {
    update_noisy_every(st, i, 15 * k, x)
}

/// Update series `s<i>` at `secs` after the stores' start with a noisy value from `x`.
fn update_noisy_every(st: &mut Store, i: usize, secs: i64, x: &mut testkit::Rng) {
    let x = x.next_u64();
    let s = rrd::Sample {
        time: 1_700_000_000 + secs,
        usec: 0,
        values: vec![format!("{}", (x % 1_000_000) as f64 / 7.0)],
    };
    st.update(&format!("s{i}"), &s, &mut |_| {}).unwrap();
}

/// Archive heap bytes of a store fed `steps` noisy 15-second updates of 20 series (one
/// 5,000-row archive each), committed every 20 steps, with no checkpoint due (64 MiB ring):
/// after `steps / 4` and after `steps`, and the store's stats.
fn heap_while_fed(
    dir: &std::path::Path,
    spill: u64,
    steps: i64,
) -> (usize, usize, engine::StoreStats) {
    let o = Options {
        log_bytes: 64 << 20,
        spill_bytes: spill,
        ..opts()
    };
    let mut st = one_archive_store(dir, o, 20);
    let mut x = testkit::Rng::new(99);
    let mut early = 0;
    for k in 1..=steps {
        for i in 0..20 {
            update_noisy(&mut st, i, k, &mut x);
        }
        if k % 20 == 0 {
            st.commit().unwrap();
        }
        if k == steps / 4 {
            early = st.archive_heap_bytes();
        }
    }
    (early, st.archive_heap_bytes(), st.stats().clone())
}

#[test]
fn rows_overwritten_before_they_are_stored_do_not_count_toward_a_spill() {
    // 20 series, one 5,000-row archive each, three laps of noisy rows and no checkpoint: the
    // heap holds one lap's sealed chunks at most (each lap replaces the one before), under
    // the budget, so nothing is spilled, though the chunks sealed over the laps are past it.
    let a = TempDir::new("resident-laps");
    let (_, late, stats) = heap_while_fed(&a.0, 1 << 20, 15_000);
    assert_eq!(stats.checkpoints, 0, "{stats:?}");
    assert_eq!(stats.spills, 0, "{stats:?}");
    assert!(late > 400 << 10 && late < 1 << 20, "{late}");
}

#[test]
fn sealed_rows_are_spilled_so_the_heap_does_not_grow_between_checkpoints() {
    // 4,000 noisy rows of 20 series: about 640 KB of sealed chunks and no checkpoint. Spilled
    // past 64 KiB, the heap holds at most that and the open chunks (20 x 256 values).
    let a = TempDir::new("resident-spill");
    let (early, late, stats) = heap_while_fed(&a.0, 64 << 10, 4000);
    assert_eq!(stats.checkpoints, 0, "{stats:?}");
    assert!(stats.spills >= 5, "{stats:?}");
    assert!(
        late < (64 << 10) + 20 * 256 * 8 + (16 << 10),
        "{early} then {late}"
    );
    // Without spills the same load keeps every sealed chunk.
    let b = TempDir::new("resident-nospill");
    let (early0, late0, stats0) = heap_while_fed(&b.0, 0, 4000);
    assert_eq!(stats0.spills, 0);
    assert!(
        late0 > 3 * early0 && late0 > 4 * late,
        "{early0} then {late0}, spilled {late}"
    );
    // The spilled store reads back what the other holds, after a reopen too.
    let reopened = Store::open(&a.0, opts()).unwrap();
    let other = Store::open(&b.0, opts()).unwrap();
    for i in 0..20 {
        let n = format!("s{i}");
        let (x, y) = (reopened.get(&n).unwrap(), other.get(&n).unwrap());
        assert_eq!(
            bits(&[x.rra[0].rows.to_vec()]),
            bits(&[y.rra[0].rows.to_vec()])
        );
    }
}

#[test]
fn spills_between_checkpoints_keep_few_files_open() {
    // A spill's files are synced by the checkpoint that names them, kept open until then;
    // hundreds of spills with no checkpoint keep at most 64 of them open (then synced at
    // once), and what they stored reads back after a reopen.
    let a = TempDir::new("resident-spill-files");
    let o = Options {
        log_bytes: 64 << 20,
        spill_bytes: 4 << 10,
        ..opts()
    };
    let mut st = one_archive_store(&a.0, o, 20);
    let open_here = || {
        std::fs::read_dir("/proc/self/fd")
            .unwrap()
            .filter_map(|e| std::fs::read_link(e.ok()?.path()).ok())
            .filter(|p| p.starts_with(&a.0))
            .count()
    };
    let (mut x, mut most) = (testkit::Rng::new(5), 0);
    // A spill every 256 rows (the series seal together), 93 of them.
    for k in 1..=24_000 {
        for i in 0..20 {
            update_noisy(&mut st, i, k, &mut x);
        }
        if k % 20 == 0 {
            st.commit().unwrap();
            most = most.max(open_here());
        }
    }
    let stats = st.stats().clone();
    assert_eq!(stats.checkpoints, 0, "{stats:?}");
    assert!(stats.spills > 80, "{stats:?}");
    assert!(most > 40 && most <= 64 + 8, "{most} files open");
    let before = first_archives(&st, 20);
    drop(st);
    let reopened = Store::open(&a.0, opts()).unwrap();
    assert_eq!(first_archives(&reopened, 20), before);
}

/// Feed `series` RRDs (one 5,000-row archive of noisy values each) `steps` 15-second
/// updates; series `i >= live` stop after step 40 (hosts gone). `checkpoint_every`: steps
/// between checkpoints (0: none). Returns the store, the archive heap bytes just before and
/// just after each checkpoint, and the most segment files seen at once.
fn feed_open_chunks(
    dir: &std::path::Path,
    series: usize,
    live: usize,
    steps: i64,
    checkpoint_every: i64,
) -> (Store, Vec<(usize, usize)>, usize) {
    let mut st = one_archive_store(dir, opts(), series);
    let segs = || {
        std::fs::read_dir(dir)
            .unwrap()
            .filter(|e| {
                let n = e.as_ref().unwrap().file_name();
                engine::files::segment_id(&n.to_string_lossy()).is_some()
            })
            .count()
    };
    let (mut heaps, mut most, mut x) = (Vec::new(), 0, testkit::Rng::new(7));
    for k in 1..=steps {
        for i in (0..series).filter(|&i| i < live || k <= 40) {
            update_noisy(&mut st, i, k, &mut x);
        }
        st.commit().unwrap();
        if checkpoint_every > 0 && k % checkpoint_every == 0 {
            let before = st.archive_heap_bytes();
            st.checkpoint().unwrap();
            heaps.push((before, st.archive_heap_bytes()));
            most = most.max(segs());
        }
    }
    (st, heaps, most)
}

/// A checkpoint stores each open chunk as it stands and rebases it there: memory holds the
/// rows written since the last checkpoint, not the whole chunk since it opened (a chunk of
/// a long archive takes days to fill). The versions' segments are replaced at each
/// checkpoint (a version no write replaced, such as a stopped series', is carried into
/// the new one), so they do not pile up; the rows read back exactly, after a reopen too.
#[test]
fn open_chunks_are_rebased_at_checkpoints_so_the_heap_holds_rows_since_the_last() {
    let a = TempDir::new("resident-rebase");
    let b = TempDir::new("resident-rebase-none");
    // 250 steps: the 256-row chunk is never sealed; a checkpoint every 20 steps.
    let (st, heaps, most) = feed_open_chunks(&a.0, 20, 10, 250, 20);
    let (other, _, _) = feed_open_chunks(&b.0, 20, 10, 250, 0);
    assert_eq!(heaps.len(), 12);
    for (i, &(before, after)) in heaps.iter().enumerate().skip(2) {
        // Before: 20 steps of the 10 live series (8 bytes each, a group of 8 at a time
        // packed); after: the open chunks gone.
        assert!(
            after * 4 < before,
            "checkpoint {i}: heap {before} -> {after}"
        );
        assert!(
            before < 10 * 20 * 8 * 3,
            "checkpoint {i}: {before} bytes held for 20 steps of 10 series"
        );
    }
    // The versions' files: the window of pieces, and the one before it (the fallback's).
    assert!(
        most <= engine::segments::PIECE_EPOCH + 1,
        "{most} segment files at once"
    );
    let rows = |s: &Store| first_archives(s, 20);
    let want = rows(&other);
    assert_eq!(rows(&st), want, "rebased rows read back as written");
    // Written on after the last checkpoint, then dropped without a close: the reopened
    // store replays onto the stored versions.
    drop(st);
    let st = Store::open(&a.0, opts()).unwrap();
    assert_eq!(rows(&st), want, "after a reopen");
}

/// Checkpoints store the chunk each archive is writing as pieces: what was written since the
/// chunk was last stored, with the whole chunk once every `PIECE_EPOCH` checkpoints, so what
/// a checkpoint writes does not grow as the chunk fills (a chunk of hourly rows takes ten
/// days). A series that stopped a day ago (a host taken out of service) has its chunk stored
/// with its archive's sealed chunks when the epoch of pieces ends, not in pieces again.
/// Every row reads back, after a reopen too.
#[test]
fn open_chunks_are_stored_as_pieces_and_a_stopped_series_once() {
    let dir = TempDir::new("resident-stopped");
    // Hourly rows: a chunk of 256 rows takes ten days to fill, a day is 24 steps.
    let spec = "--step 3600 DS:v:GAUGE:7200:U:U RRA:AVERAGE:0.5:1:1000";
    let mut st = store_of(&dir.0, opts(), 20, spec);
    let mut per_checkpoint = Vec::new();
    let mut x = testkit::Rng::new(3);
    for k in 1..=120i64 {
        // s10..s19 stop after the fifth hour.
        for i in (0..20).filter(|&i| i < 10 || k <= 5) {
            update_noisy_every(&mut st, i, 3600 * k, &mut x);
        }
        if k % 6 == 0 {
            let before = st.stats().open_chunk_bytes;
            st.checkpoint().unwrap();
            per_checkpoint.push(st.stats().open_chunk_bytes - before);
        }
    }
    // Pieces: the live half's six new rows each time; the whole chunks (growing with their
    // fill) once every PIECE_EPOCH checkpoints, when an epoch of pieces begins.
    let window = engine::segments::PIECE_EPOCH;
    let p = &per_checkpoint;
    for (i, &n) in p.iter().enumerate().skip(1) {
        if i % window != 0 {
            assert!(n * 10 < p[1] * 13 && n * 10 > p[1] * 7, "pieces: {p:?}");
        } else {
            assert!(n > 3 * p[1], "whole: {p:?}");
        }
    }
    // Where each series' chunk is now: the live ones' in a segment of pieces, the stopped
    // ones' with the archive's sealed chunks.
    let class_of = |i: usize| {
        let seg = st.get(&format!("s{i}")).unwrap().rra[0]
            .rows
            .seg_of(0)
            .unwrap();
        let bytes = std::fs::read(engine::files::segment(&dir.0, u64::from(seg))).unwrap();
        codec::segment::segment_class(&bytes).unwrap()
    };
    for i in 0..20 {
        let pieces = class_of(i) == engine::segments::PIECES_CLASS;
        assert_eq!(pieces, i < 10, "series {i}");
    }
    let rows = |s: &Store| first_archives(s, 20);
    let want = rows(&st);
    st.close().unwrap();
    let st = Store::open(&dir.0, opts()).unwrap();
    assert!(rows(&st) == want, "read back after a reopen");
    drop(st);
    // The CLI's open of one series reads its chain of pieces by positioned reads, each
    // segment opened when first needed.
    for i in [0usize, 15] {
        let one = Options {
            only: Some(vec![format!("s{i}")]),
            ..opts()
        };
        let s = Store::open(&dir.0, one).unwrap();
        let r = s.get(&format!("s{i}")).unwrap().rra[0].rows.to_vec();
        let got: Vec<u64> = r.iter().map(|v| v.to_bits()).collect();
        assert!(got == want[i], "series {i} alone");
    }
}
