//! A store opened to read a few series (`Options::only`, what a CLI command that reads one
//! series does on its own): it holds exactly their state, bit for bit as a whole open has
//! it (checkpoint images, stored chunks found by key, their log entries replayed), writes
//! nothing, and refuses every write.

mod common;

use common::*;
use engine::{Error, Options, Store};
use rrd::{Cf, DsType, Rrd, Sample, Schema};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

/// Every file of the store, by name, with its bytes.
fn files(dir: &std::path::Path) -> Vec<(String, Vec<u8>)> {
    let mut v: Vec<(String, Vec<u8>)> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| {
            let p = e.unwrap().path();
            (
                p.file_name().unwrap().to_string_lossy().into_owned(),
                std::fs::read(&p).unwrap(),
            )
        })
        .collect();
    v.sort();
    v
}

fn only(names: &[&str]) -> Options {
    Options {
        only: Some(names.iter().map(|n| n.to_string()).collect()),
        ..small_opts(64 << 10)
    }
}

/// Options to write `names` alone (`Options::partial`).
fn partial(names: &[&str]) -> Options {
    Options {
        partial: true,
        ..only(names)
    }
}

/// A store whose archives were written long enough to be stored in segments, and the
/// model of what it holds.
fn stored_store(dir: &TempDir) -> Model {
    // A small ring: checkpoints (lagged and full) and segments come and go; the last
    // commits stay in the log.
    let mut st = Store::open(&dir.0, small_opts(64 << 10)).unwrap();
    let mut model = Model::default();
    let mut ops = workload(11, 3000);
    // Archives of several chunks, written long enough to be stored in segments.
    let schema = Schema {
        step: 10,
        ds: vec![ds("v", DsType::Gauge)],
        rra: vec![rra(Cf::Average, 1, 900), rra(Cf::Max, 10, 3000)],
    };
    for s in 0..5 {
        ops.push(Op::Create(
            format!("long{s}.rrd"),
            Rrd::new(schema.clone(), START - 10),
        ));
    }
    for r in 0..4000i64 {
        for s in 0..5 {
            let v = 100.0 + ((r * 7 + s * 13) % 97) as f64 / 4.0;
            ops.push(Op::Update(
                format!("long{s}.rrd"),
                Sample {
                    time: START + r * 10,
                    usec: 0,
                    values: vec![format!("{v:.2}")],
                },
            ));
        }
        if r % 7 == 6 {
            ops.push(Op::Commit);
        }
    }
    ops.push(Op::Commit);
    for op in ops {
        run_op(&mut st, &op).unwrap();
        model.apply(&op);
    }
    st.close().unwrap();
    assert!(
        files(&dir.0).iter().any(|(n, _)| n.starts_with("seg-")),
        "the workload stored chunks"
    );
    model
}

#[test]
fn one_series_opens_alone_exactly_and_read_only() {
    let dir = TempDir::new("only");
    let model = stored_store(&dir);
    let before = files(&dir.0);
    for (name, want) in &model.rrds {
        let mut st = Store::open(&dir.0, only(&[name])).unwrap();
        assert_eq!(st.names(), vec![name.clone()]);
        let got = st.get(name).unwrap();
        assert_eq!(
            codec::rrdbin::rrd_bytes(got),
            codec::rrdbin::rrd_bytes(want),
            "{name}"
        );
        let s = Sample {
            time: got.last_up + 60,
            usec: 0,
            values: vec!["1".into(); got.ds_cnt()],
        };
        assert!(matches!(
            st.update(name, &s, &mut |_| {}),
            Err(Error::ReadOnly)
        ));
        assert!(matches!(st.remove(name), Err(Error::ReadOnly)));
        assert!(matches!(st.checkpoint(), Err(Error::ReadOnly)));
        st.close().unwrap();
    }
    // Several at once (a graph's DEFs): each past the others' records as when alone (a
    // reader stops decoding a block's lengths after the last of its series).
    let names: Vec<&String> = model.rrds.keys().collect();
    for pair in [[0, names.len() - 1], [names.len() / 2, 1], [2, 3]] {
        let pair: Vec<&str> = pair.iter().map(|&i| names[i].as_str()).collect();
        let st = Store::open(&dir.0, only(&pair)).unwrap();
        for name in &pair {
            assert_eq!(
                st.get(name).map(codec::rrdbin::rrd_bytes),
                model.rrds.get(*name).map(codec::rrdbin::rrd_bytes),
                "{name} beside {pair:?}"
            );
        }
    }
    // A name the store lacks: an empty store to read, not an error.
    let st = Store::open(&dir.0, only(&["nope.rrd"])).unwrap();
    assert!(st.get("nope.rrd").is_none() && st.is_empty());
    drop(st);
    assert!(files(&dir.0) == before, "a read-only open wrote nothing");
    // No store at all: nothing is created.
    let missing = dir.0.join("missing");
    assert!(matches!(
        Store::open(&missing, only(&["a.rrd"])),
        Err(Error::NotFound(_))
    ));
    assert!(!missing.exists());
}

#[test]
fn a_reader_of_a_few_series_after_a_crash_reads_them_exactly_wherever_they_are_in_the_blocks() {
    // Records of a daemon: every series' samples in one block each commit. A reader of a
    // few decodes each block's lengths up to the last of its series only, then the head.
    let dir = TempDir::new("only-blocks");
    let mut st = Store::open(&dir.0, small_opts(1 << 20)).unwrap();
    let names: Vec<String> = (0..60).map(|i| format!("b{i:02}.rrd")).collect();
    for (i, n) in names.iter().enumerate() {
        st.create(n, make_rrd(i as u64), false).unwrap();
    }
    st.checkpoint().unwrap();
    for k in 1..=40i64 {
        for (i, n) in names.iter().enumerate() {
            // Now and then a series sits a commit out: blocks with gaps in their ids.
            if (i as i64 + k) % 7 == 0 {
                continue;
            }
            let ds = st.get(n).unwrap().ds_cnt();
            let s = Sample {
                time: START + 15 * k,
                usec: 0,
                values: vec![format!("{}", (k * 31 + i as i64 * 7) % 1000); ds],
            };
            st.update(n, &s, &mut |_| {}).unwrap();
        }
        st.commit().unwrap();
    }
    // Dropped, not closed: every reader replays the 40 records.
    drop(st);
    let whole = Store::open(&dir.0, small_opts(1 << 20)).unwrap();
    let want: std::collections::BTreeMap<&str, Vec<u8>> = names
        .iter()
        .map(|n| (n.as_str(), codec::rrdbin::rrd_bytes(whole.get(n).unwrap())))
        .collect();
    drop(whole);
    for set in [
        &[0usize][..],
        &[59],
        &[30],
        &[0, 59],
        &[12, 13, 40],
        &[7, 14],
    ] {
        let set: Vec<&str> = set.iter().map(|&i| names[i].as_str()).collect();
        let st = Store::open(&dir.0, only(&set)).unwrap();
        assert_eq!(st.recovery().records_replayed, 40, "{set:?}");
        for n in &set {
            let got = st.get(n).map(codec::rrdbin::rrd_bytes);
            assert_eq!(got.as_ref(), want.get(n), "{n} in {set:?}");
        }
    }
}

#[test]
fn a_damaged_stored_chunk_reads_as_unknown_when_one_series_is_read() {
    let dir = TempDir::new("only-damage");
    let model = stored_store(&dir);
    // Flip one byte in the middle of every segment's chunk data (past its index).
    for (name, bytes) in files(&dir.0) {
        if !name.starts_with("seg-") {
            continue;
        }
        let count = u64::from_le_bytes(bytes[24..32].try_into().unwrap()) as usize;
        let data = 40 + 32 * count;
        let mut b = bytes.clone();
        let at = data + (b.len() - data) / 2;
        b[at] ^= 0x5a;
        std::fs::write(dir.0.join(&name), b).unwrap();
    }
    let (mut damaged, mut unknown) = (0, 0);
    for (name, want) in &model.rrds {
        let st = Store::open(&dir.0, only(&[name])).unwrap();
        let got = st.get(name).unwrap();
        for (a, w) in want.rra.iter().enumerate() {
            let (mut g, mut w) = (got.rra[a].rows.reader(), w.rows.reader());
            for r in 0..want.schema.rra[a].row_cnt as usize {
                for (x, y) in g.row(r).to_vec().iter().zip(w.row(r)) {
                    // Never another value: the stored one, or unknown where it was damaged.
                    assert!(x.to_bits() == y.to_bits() || x.is_nan(), "{name} {a} {r}");
                    unknown += usize::from(x.is_nan() && !y.is_nan());
                }
            }
        }
        damaged += st.damaged_chunks();
    }
    assert!(
        damaged > 0 && unknown > 0,
        "{damaged} chunks, {unknown} values"
    );
}

#[test]
fn a_clean_close_lets_a_reader_skip_the_search_of_the_ring_and_any_write_removes_it() {
    let dir = TempDir::new("only-clean");
    let model = stored_store(&dir);
    let marked = |dir: &TempDir| engine::clean::is_marked(&engine::RealFs, &dir.0).unwrap();
    assert!(marked(&dir), "close leaves the mark");
    let name = model.rrds.keys().next().unwrap().clone();
    let want = codec::rrdbin::rrd_bytes(&model.rrds[&name]);
    let read = |dir: &TempDir| {
        let st = Store::open(&dir.0, only(&[&name])).unwrap();
        let got = codec::rrdbin::rrd_bytes(st.get(&name).unwrap());
        (got, st.recovery().searched_past_end)
    };
    assert_eq!(
        read(&dir),
        (want.clone(), false),
        "the mark spares the search"
    );
    // A writer that writes nothing leaves it as it was: it still names the log's end.
    drop(Store::open(&dir.0, small_opts(64 << 10)).unwrap());
    assert_eq!(read(&dir), (want.clone(), false), "an idle writer");
    // A write after the mark clears it with its record, under the record's one sync.
    let syncs = Arc::new(AtomicU64::new(0));
    let fs = Arc::new(engine::CountingFs {
        syncs: syncs.clone(),
    });
    let mut st = Store::open_with(fs.clone(), &dir.0, small_opts(64 << 10)).unwrap();
    let before = syncs.load(Ordering::Relaxed);
    let rrd = st.get(&name).unwrap().clone();
    let s = Sample {
        time: rrd.last_up + 10,
        usec: 0,
        values: vec!["5".into(); rrd.ds_cnt()],
    };
    st.update(&name, &s, &mut |_| {}).unwrap();
    st.commit().unwrap();
    assert_eq!(
        syncs.load(Ordering::Relaxed) - before,
        1,
        "one sync a commit"
    );
    assert!(!marked(&dir), "a commit after the mark clears it");
    drop(st);
    let (got, searched) = read(&dir);
    assert!(
        searched && got != want,
        "the update is read, after a search"
    );
    let want = got;
    // A closing write sets the mark with its record: one sync for the command.
    let mut st = Store::open_with(fs, &dir.0, small_opts(64 << 10)).unwrap();
    let before = syncs.load(Ordering::Relaxed);
    let s = Sample {
        time: rrd.last_up + 20,
        ..s
    };
    st.update(&name, &s, &mut |_| {}).unwrap();
    st.close().unwrap();
    assert_eq!(
        syncs.load(Ordering::Relaxed) - before,
        1,
        "one sync a close"
    );
    let (got, searched) = read(&dir);
    assert!(!searched && got != want, "the closing write is read");
    // A mark naming another position is ignored.
    let log = dir.0.join("log");
    let mut b = std::fs::read(&log).unwrap();
    b[2048 + 16] ^= 1;
    std::fs::write(&log, &b).unwrap();
    assert!(!marked(&dir));
    assert!(read(&dir).1, "a damaged mark is not trusted");
    // An older store's mark file is honoured, and a writer's open removes it.
    b[2048 + 16] ^= 1;
    let file = dir.0.join("clean");
    std::fs::write(&file, &b[2048..2048 + engine::clean::LEN]).unwrap();
    b[2048..2048 + engine::clean::LEN].fill(0);
    std::fs::write(&log, &b).unwrap();
    assert!(!read(&dir).1, "the file's mark spares the search");
    drop(Store::open(&dir.0, small_opts(64 << 10)).unwrap());
    assert!(!file.exists(), "a writer's open removes the file");
    assert!(read(&dir).1);
}

#[test]
fn a_block_claiming_series_past_every_id_is_corrupt_also_to_a_reader_of_a_few() {
    let dir = TempDir::new("only-claim");
    let mut st = Store::open(&dir.0, small_opts(1 << 20)).unwrap();
    for op in workload(23, 200) {
        run_op(&mut st, &op).unwrap();
    }
    st.commit().unwrap();
    // Dropped, not closed: a reader of a few series searches the ring for its end.
    drop(st);
    let st = Store::open(&dir.0, small_opts(1 << 20)).unwrap();
    let (r, name) = (st.recovery().clone(), st.names()[0].clone());
    drop(st);
    // A well-framed record whose block claims 2^60 rows of no bits from id 5,000 on (the
    // store has a few dozen series): a whole open finds id 5,000 unknown; a reader of one
    // series must not walk the rest of the claim (it would take centuries).
    let mut head = bitio::msb::BitWriter::new();
    head.exp_golomb(0, 0); // no series before the first
    head.exp_golomb(5_000, 0); // its id
    head.exp_golomb(2, 0); // count 1 (zigzagged change from 0)
    head.bits(0b11_00, 4); // a row of one value
    head.exp_golomb(1 << 60, 0); // then every other series like it
    let head = head.into_bytes();
    let varint = |out: &mut Vec<u8>, mut v: u64| loop {
        let b = (v & 0x7f) as u8;
        v >>= 7;
        if v == 0 {
            out.push(b);
            break;
        }
        out.push(b | 0x80);
    };
    let mut payload = vec![1u8, 7];
    varint(&mut payload, (1 << 60) + 1);
    varint(&mut payload, head.len() as u64);
    payload.extend_from_slice(&head);
    payload.extend_from_slice(&[0, 0]); // no lens bytes, no body bytes
    let seq = r.records_replayed;
    let rec = codec::frame::encode_record(
        codec::frame::KIND_COMMIT,
        seq,
        r.end_lsn,
        &payload,
        codec::frame::PAGE,
    );
    let log = engine::files::log(&dir.0);
    let mut bytes = std::fs::read(&log).unwrap();
    let at = (codec::frame::RING_START + r.end_lsn) as usize;
    bytes[at..at + rec.len()].copy_from_slice(&rec);
    std::fs::write(&log, bytes).unwrap();
    for only in [None, Some(vec![name])] {
        let opts = engine::Options {
            only: only.clone(),
            ..small_opts(1 << 20)
        };
        match Store::open(&dir.0, opts) {
            Err(engine::Error::Corrupt { what, .. }) => {
                assert!(what.contains("unknown series 5000"), "{what}")
            }
            Err(e) => panic!("{only:?}: expected Corrupt, got {e}"),
            Ok(_) => panic!("{only:?}: expected Corrupt, got a store"),
        }
    }
}

#[test]
fn a_crash_at_a_closing_or_a_first_commit_never_lets_a_mark_hide_a_record() {
    // The mark of a clean close and a record share one sync: a crash there may leave either
    // one, both or neither (torn to the sector), and what a reader of one series then reads
    // is what a writer's whole recovery reads: the state before the commit, or after it.
    use engine::sim::{Fault, SimFs};
    let dir = std::path::PathBuf::from("/store");
    let names = ["a.rrd", "b.rrd"];
    let sample = |t: i64, v: u64| Sample {
        time: t,
        usec: 0,
        values: vec![v.to_string(), (v * 3).to_string()],
    };
    let state = |fs: &SimFs, opts: Options| {
        let st = Store::open_with(Arc::new(fs.clone()), &dir, opts).unwrap();
        let s = st.get(names[0]).map(codec::rrdbin::rrd_bytes);
        (s, st.recovery().searched_past_end)
    };
    let mut seen_set = [false; 2];
    for seed in 0..60u64 {
        let fs = SimFs::new();
        let mut st = Store::open_with(Arc::new(fs.clone()), &dir, small_opts(64 << 10)).unwrap();
        for n in names {
            st.create(n, make_rrd(1), false).unwrap();
        }
        let mut t = START + 15;
        for k in 0..5 {
            for n in names {
                st.update(n, &sample(t, k), &mut |_| {}).unwrap();
            }
            t += 15;
        }
        st.commit().unwrap();
        // Seeds with an odd number: a clean close first, then a writer whose first commit
        // clears the mark as it appends (the crash is there); even: the closing commit.
        if seed % 2 == 1 {
            st.close().unwrap();
            // Half of them write as a command on its own does: the two series alone.
            let opts = match seed % 4 {
                1 => partial(&names),
                _ => small_opts(64 << 10),
            };
            st = Store::open_with(Arc::new(fs.clone()), &dir, opts).unwrap();
            assert_eq!(st.is_partial(), seed % 4 == 1);
        }
        let before = st.get(names[0]).map(codec::rrdbin::rrd_bytes);
        for n in names {
            st.update(n, &sample(t, 99), &mut |_| {}).unwrap();
        }
        let after = st.get(names[0]).map(codec::rrdbin::rrd_bytes);
        fs.set_fault(Fault::CrashAtSync(fs.syncs() + 1));
        let _ = if seed % 2 == 1 {
            st.commit().map(|_| ())
        } else {
            st.close()
        };
        assert!(fs.crashed(), "seed {seed}");
        let fs = fs.restart(Some(seed));
        let (read, _) = state(&fs, only(&[names[0]]));
        let (whole, _) = state(&fs, small_opts(64 << 10));
        assert_eq!(read, whole, "seed {seed}: a reader and a writer disagree");
        assert!(read == before || read == after, "seed {seed}");
        seen_set[usize::from(read == after)] = true;
    }
    assert!(seen_set[0] && seen_set[1], "torn both ways: {seen_set:?}");
}

#[test]
fn a_close_past_the_readers_pieces_leaves_a_checkpoint_and_one_before_does_not() {
    // One-shot readers after a close decode every piece since the checkpoint: past
    // READER_PIECES a writer's close writes one first (it costs less than the log it spares).
    use engine::sim::SimFs;
    let dir = std::path::PathBuf::from("/store");
    let series = 200u64;
    let run = |commits: u64| {
        let fs = SimFs::new();
        let mut st = Store::open_with(Arc::new(fs.clone()), &dir, small_opts(1 << 20)).unwrap();
        for i in 0..series {
            st.create(&format!("s{i}.rrd"), make_rrd(0), false).unwrap();
        }
        st.commit().unwrap();
        for k in 1..=commits {
            for i in 0..series {
                let s = Sample {
                    time: START + 15 * k as i64,
                    usec: 0,
                    values: vec![(k * 7 + i).to_string()],
                };
                st.update(&format!("s{i}.rrd"), &s, &mut |_| {}).unwrap();
            }
            st.commit().unwrap();
        }
        // Each record counts RECORD_PIECES more, and its bytes.
        let per = series + engine::RECORD_PIECES;
        let pieces = st.pieces_since_checkpoint();
        assert!(pieces >= commits * per + engine::RECORD_PIECES, "{pieces}");
        let slow = st.slow_for_readers();
        // The daemon's stop asks for an eighth: 200 series' checkpoint (a KiB a series) is
        // more than an eighth of this short run's log.
        assert!(!st.checkpoint_spares_readers(8));
        assert!(st.log_since_checkpoint() < 8 * 200 * 1024);
        let want = st.get("s3.rrd").map(codec::rrdbin::rrd_bytes);
        // A reader counts what the writer counted, and so does the next writer's replay.
        st.mark_clean().unwrap();
        drop(st);
        let rd = Store::open_with(Arc::new(fs.clone()), &dir, only(&["s3.rrd"])).unwrap();
        assert_eq!(rd.pieces_since_checkpoint(), pieces);
        drop(rd);
        let st = Store::open_with(Arc::new(fs.clone()), &dir, small_opts(1 << 20)).unwrap();
        assert_eq!(st.pieces_since_checkpoint(), pieces);
        st.close().unwrap();
        let rd = Store::open_with(Arc::new(fs), &dir, only(&["s3.rrd"])).unwrap();
        assert_eq!(rd.get("s3.rrd").map(codec::rrdbin::rrd_bytes), want);
        (slow, rd.recovery().records_replayed)
    };
    let past = engine::READER_PIECES / (series + engine::RECORD_PIECES) + 1;
    assert_eq!(run(past), (true, 0), "a checkpoint at the close");
    let (slow, replayed) = run(past / 3);
    assert!(
        !slow && replayed == past / 3 + 1,
        "{replayed} records replayed"
    );
}

#[test]
fn a_close_after_many_samples_of_one_series_leaves_a_checkpoint_and_few_do_not() {
    // A reader of a series applies its samples since the checkpoint: one session that wrote
    // days of one series (pipe mode filling a new store, all of it in the close's own
    // commit) costs every reader after it that replay, unless the close checkpoints.
    use engine::sim::SimFs;
    let dir = std::path::PathBuf::from("/store");
    let run = |samples: u64| {
        let fs = SimFs::new();
        let mut st = Store::open_with(Arc::new(fs.clone()), &dir, small_opts(1 << 20)).unwrap();
        st.create("one.rrd", make_rrd(0), false).unwrap();
        for k in 1..=samples {
            let s = Sample {
                time: START + 15 * k as i64,
                usec: 0,
                values: vec![(k % 50).to_string()],
            };
            st.update("one.rrd", &s, &mut |_| {}).unwrap();
        }
        let want = st.get("one.rrd").map(codec::rrdbin::rrd_bytes);
        // Nothing committed yet: the close's own commit holds them all.
        assert_eq!(st.pieces_since_checkpoint(), 0);
        st.close().unwrap();
        let rd = Store::open_with(Arc::new(fs), &dir, only(&["one.rrd"])).unwrap();
        assert_eq!(rd.get("one.rrd").map(codec::rrdbin::rrd_bytes), want);
        rd.recovery().records_replayed
    };
    let many = engine::READER_PIECES / engine::SAMPLE_PIECES + 1;
    assert_eq!(run(many), 0, "a checkpoint at the close");
    assert_eq!(run(many / 4), 1, "the close's record replayed");
}

#[test]
fn commands_on_their_own_write_their_series_alone_as_the_whole_store_would() {
    // A command that writes a few series (update, create, a re-create as tune and restore
    // do) opens them alone and commits one record: the store ends as one written whole.
    let dir = TempDir::new("partial");
    let whole_dir = TempDir::new("partial-whole");
    let opts = || small_opts(1 << 20);
    let mut whole = Store::open(&whole_dir.0, opts()).unwrap();
    let mut st = Store::open(&dir.0, opts()).unwrap();
    let names: Vec<String> = (0..12).map(|i| format!("d/s{i}.rrd")).collect();
    for (k, n) in names.iter().enumerate() {
        st.create(n, make_rrd(k as u64), false).unwrap();
        whole.create(n, make_rrd(k as u64), false).unwrap();
    }
    st.close().unwrap();
    let mut rng = Rng::seeded(5);
    let (mut partial_opens, mut t) = (0, START);
    for step in 0..300 {
        let n = &names[rng.below(names.len() as u64) as usize];
        let mut one = Store::open(&dir.0, partial(&[n])).unwrap();
        partial_opens += usize::from(one.is_partial());
        match rng.below(10) {
            0 => {
                // Re-created with another schema (tune's and restore's way).
                let rrd = make_rrd(rng.below(4));
                one.create(n, rrd.clone(), true).unwrap();
                whole.create(n, rrd, true).unwrap();
            }
            _ => {
                t += 1 + rng.below(30) as i64;
                let ds = whole.get(n).unwrap().ds_cnt();
                let s = Sample {
                    time: t,
                    usec: 0,
                    values: (0..ds).map(|_| rng.below(1000).to_string()).collect(),
                };
                let a = one.update(n, &s, &mut |_| {}).map_err(|e| e.to_string());
                let b = whole.update(n, &s, &mut |_| {}).map_err(|e| e.to_string());
                assert_eq!(a, b, "step {step}");
            }
        }
        // A name it did not open is not its to create.
        if one.is_partial() {
            assert!(matches!(
                one.create("d/other.rrd", make_rrd(0), false),
                Err(Error::ReadOnly)
            ));
        }
        one.close().unwrap();
        if step % 50 == 49 {
            whole.commit().unwrap();
        }
    }
    assert!(
        partial_opens > 250,
        "{partial_opens} of 300 opens wrote their series alone"
    );
    let all = Store::open(&dir.0, opts()).unwrap();
    for n in &names {
        assert_eq!(
            all.get(n).map(codec::rrdbin::rrd_bytes),
            whole.get(n).map(codec::rrdbin::rrd_bytes),
            "{n}"
        );
    }
}

#[test]
fn a_partial_open_is_the_whole_stores_after_a_crash_near_the_rings_half_or_past_the_readers_pieces()
{
    use engine::sim::SimFs;
    let dir = std::path::PathBuf::from("/store");
    let fs = SimFs::new();
    let open = |opts: Options| Store::open_with(Arc::new(fs.clone()), &dir, opts).unwrap();
    // A fresh store has no checkpoint yet to read from: the whole store.
    let mut st = open(partial(&["a.rrd"]));
    assert!(!st.is_partial());
    st.create("a.rrd", make_rrd(0), false).unwrap();
    st.create("b.rrd", make_rrd(0), false).unwrap();
    st.close().unwrap();
    let upd = |st: &mut Store, t: i64| {
        let s = Sample {
            time: t,
            usec: 0,
            values: vec!["1".into()],
        };
        st.update("a.rrd", &s, &mut |_| {}).unwrap();
    };
    let mut st = open(partial(&["a.rrd"]));
    assert!(st.is_partial());
    upd(&mut st, START + 15);
    // Killed after its commit: no mark, so the next one searches the ring, as a whole.
    st.commit().unwrap();
    drop(st);
    let mut st = open(partial(&["a.rrd"]));
    assert!(!st.is_partial(), "after a crash");
    upd(&mut st, START + 30);
    st.close().unwrap();
    // Records up to past 3/8 of the ring: the next write needs the room a whole writer has.
    let mut t = START + 45;
    let cap = 64u64 << 10;
    let mut st = open(small_opts(cap));
    while st.log_since_checkpoint() < cap / 2 - cap / 8 {
        upd(&mut st, t);
        st.commit().unwrap();
        t += 15;
    }
    // Marked clean without the close's checkpoint (as a build before it left stores).
    st.mark_clean().unwrap();
    drop(st);
    let st = open(partial(&["a.rrd"]));
    assert!(!st.is_partial(), "near the ring's half");
    // Its close writes the checkpoint that gives the next ones room.
    st.close().unwrap();
    assert!(
        open(partial(&["a.rrd"])).is_partial(),
        "after the close's checkpoint"
    );
    // Past the readers' pieces (in a larger ring): the same.
    let dir = std::path::PathBuf::from("/store2");
    let open = |opts: Options| Store::open_with(Arc::new(fs.clone()), &dir, opts).unwrap();
    let mut st = open(small_opts(1 << 20));
    let names: Vec<String> = (0..200).map(|i| format!("s{i}.rrd")).collect();
    for n in &names {
        st.create(n, make_rrd(0), false).unwrap();
    }
    let mut k = 0;
    while !st.slow_for_readers() {
        k += 1;
        for n in &names {
            let s = Sample {
                time: START + 15 * k,
                usec: 0,
                values: vec![k.to_string()],
            };
            st.update(n, &s, &mut |_| {}).unwrap();
        }
        st.commit().unwrap();
    }
    st.mark_clean().unwrap();
    drop(st);
    let st = open(partial(&["s1.rrd"]));
    assert!(!st.is_partial(), "past the readers' pieces");
    st.close().unwrap();
    let st = open(partial(&["s1.rrd"]));
    assert!(st.is_partial() && st.recovery().records_replayed == 0);
}
