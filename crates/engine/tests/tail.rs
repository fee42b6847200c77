//! Damage to the log tail (garbage, flipped bits, truncation) is detected by checksum, cut,
//! reported, and never served; damage before the end, with committed records after it, makes
//! open refuse (`Error::Corrupt`) unless asked to repair, which cuts there and says what was
//! dropped; damage to the newest checkpoint falls back to the older one plus the log, unless
//! that log was overwritten since. Recovery zeroes nothing.

mod common;

use codec::frame::RING_START;
use common::*;
use engine::sim::SimFs;
use engine::{files, Options, Store};
use std::path::Path;
use std::sync::Arc;

const DIR: &str = "/store";
const RING: u64 = 1 << 20;

fn open(fs: &SimFs) -> Store {
    Store::open_with(Arc::new(fs.clone()), Path::new(DIR), small_opts(RING))
        .unwrap_or_else(|e| panic!("open: {e}"))
}

/// Run a workload to completion; returns the model after each commit (index = commit no.).
fn committed_states(fs: &SimFs, seed: u64) -> Vec<Model> {
    let mut store = open(fs);
    let mut model = Model::default();
    let mut states = vec![Model::default()];
    for op in workload(seed, 200) {
        model.apply(&op);
        if let Op::Commit = op {
            // Only commits that wrote a record count (an empty commit writes nothing).
            if store.commit().unwrap().bytes > 0 {
                states.push(model.clone());
            }
        } else {
            run_op(&mut store, &op).unwrap();
        }
    }
    store.close().unwrap();
    states
}

fn log_path() -> std::path::PathBuf {
    files::log(Path::new(DIR))
}

#[test]
fn garbage_after_the_last_record_is_the_end_and_loses_nothing() {
    let fs = SimFs::new();
    let states = committed_states(&fs, 11);
    let end = open(&fs).recovery().end_lsn;
    for magic in [false, true] {
        let mut log = fs.read_file(&log_path()).unwrap();
        let at = (RING_START + end) as usize;
        for (i, b) in log[at..at + 700].iter_mut().enumerate() {
            *b = (i * 37 + 1) as u8;
        }
        if magic {
            // What looks like a damaged record header is reported (nothing follows it).
            log[at..at + 4].copy_from_slice(&codec::frame::REC_MAGIC);
        }
        fs.write_file(&log_path(), log.clone());
        let store = open(&fs);
        match (magic, store.recovery().cut.clone()) {
            (false, None) => {}
            (true, Some(cut)) => {
                assert_eq!(cut.lsn, end);
                assert_eq!(cut.file_offset, RING_START + end);
            }
            other => panic!("{other:?}"),
        }
        same(&store, states.last().unwrap()).unwrap();
        drop(store);
        assert_eq!(
            fs.read_file(&log_path()).unwrap(),
            log,
            "recovery wrote nothing"
        );
    }
}

fn last_record(log: &[u8], r: &engine::RecoveryReport) -> (u64, usize) {
    let mut last = None;
    let mut lsn = r.checkpoint_lsn;
    while lsn < r.end_lsn {
        let h = &log[(RING_START + lsn) as usize..][..32];
        let len = u32::from_le_bytes(h[24..28].try_into().unwrap()) as usize;
        last = Some((lsn, len));
        lsn += codec::frame::framed_len(len, codec::frame::PAGE);
    }
    last.expect("at least one record after the checkpoint")
}

#[test]
fn a_flipped_bit_in_the_last_record_cuts_that_record() {
    let fs = SimFs::new();
    let states = committed_states(&fs, 12);
    let r = open(&fs).recovery().clone();
    let log = fs.read_file(&log_path()).unwrap();
    let (last, _) = last_record(&log, &r);
    let mut damaged = log.clone();
    damaged[(RING_START + last) as usize + 40] ^= 0x08;
    fs.write_file(&log_path(), damaged);
    let store = open(&fs);
    let cut = store.recovery().cut.clone().expect("reported");
    assert_eq!(cut.lsn, last);
    assert!(cut.reason.contains("checksum"), "{}", cut.reason);
    assert_eq!(store.recovery().records_replayed, r.records_replayed - 1);
    // The state is the one before the last commit, exactly.
    same(&store, &states[states.len() - 2]).unwrap();
}

#[test]
fn a_truncated_log_is_cut_reported_and_restored_to_size() {
    let fs = SimFs::new();
    let states = committed_states(&fs, 13);
    let r = open(&fs).recovery().clone();
    let log = fs.read_file(&log_path()).unwrap();
    let full = log.len();
    // Cut inside the last record's payload.
    let (last, len) = last_record(&log, &r);
    let cut_at = (RING_START + last) as usize + 32 + len / 2;
    fs.write_file(&log_path(), log[..cut_at].to_vec());
    let store = open(&fs);
    let rep = store.recovery().clone();
    assert!(rep.log_was_truncated);
    let cut = rep.cut.clone().expect("reported");
    assert_eq!(cut.lsn, last);
    assert_eq!(fs.read_file(&log_path()).unwrap().len(), full);
    // Whatever was replayed is a committed state, and the last commit is gone.
    assert_eq!(rep.records_replayed, r.records_replayed - 1);
    same(&store, &states[states.len() - 2]).unwrap();
}

#[test]
fn truncation_exactly_at_the_end_of_the_records_is_no_cut() {
    let fs = SimFs::new();
    let states = committed_states(&fs, 17);
    let r = open(&fs).recovery().clone();
    let log = fs.read_file(&log_path()).unwrap();
    fs.write_file(
        &log_path(),
        log[..(RING_START + r.end_lsn) as usize].to_vec(),
    );
    let store = open(&fs);
    assert!(store.recovery().log_was_truncated);
    assert_eq!(store.recovery().cut, None);
    same(&store, states.last().unwrap()).unwrap();
}

#[test]
fn bytes_appended_past_the_ring_are_ignored() {
    let fs = SimFs::new();
    let states = committed_states(&fs, 14);
    let mut log = fs.read_file(&log_path()).unwrap();
    log.extend(std::iter::repeat_n(0xAB, 10_000));
    fs.write_file(&log_path(), log);
    let store = open(&fs);
    assert_eq!(store.recovery().cut, None);
    same(&store, states.last().unwrap()).unwrap();
}

/// A store with two checkpoints (generation 2 after the first half of a workload, 3 after
/// the rest), closed; and the model of its state.
fn two_checkpoints(fs: &SimFs, seed: u64) -> Model {
    let mut store = open(fs);
    let mut model = Model::default();
    let ops = workload(seed, 200);
    let (a, b) = ops.split_at(ops.len() / 2);
    for op in a {
        model.apply(op);
        run_op(&mut store, op).unwrap();
    }
    store.checkpoint().unwrap(); // generation 2: checkpoint.b
    for op in b {
        model.apply(op);
        run_op(&mut store, op).unwrap();
    }
    store.checkpoint().unwrap(); // generation 3: checkpoint.a
    store.close().unwrap();
    model
}

/// Flip a bit of checkpoint `generation`'s file, at `at(len)`.
fn damage_checkpoint(fs: &SimFs, generation: u64, at: impl Fn(usize) -> usize) {
    let p = files::checkpoint(Path::new(DIR), generation);
    let mut ck = fs.read_file(&p).unwrap();
    let i = at(ck.len());
    ck[i] ^= 0x40;
    fs.write_file(&p, ck);
}

#[test]
fn a_damaged_newest_checkpoint_falls_back_to_the_older_one_and_the_log() {
    let fs = SimFs::new();
    let model = two_checkpoints(&fs, 15);
    damage_checkpoint(&fs, 3, |n| n / 2);
    let store = open(&fs);
    let r = store.recovery();
    assert_eq!(r.checkpoint_generation, 2, "{r:?}");
    assert_eq!(r.invalid_checkpoints.len(), 1, "{r:?}");
    assert!(r.records_replayed > 0);
    same(&store, &model).unwrap();
}

/// A store with two checkpoints and committed records after both: generation 2 after the
/// first third of a workload, generation 3 after the second, then the last third committed
/// to the log. `reopen`: the store is closed after generation 3 and reopened for the last
/// third (a daemon stopped with a checkpoint and started again). Returns the model.
fn records_after_both_checkpoints(fs: &SimFs, seed: u64, reopen: bool) -> Model {
    written_after_both_checkpoints(fs, seed, reopen, small_opts(RING))
}

/// [`records_after_both_checkpoints`] with the writer's options `opts`.
fn written_after_both_checkpoints(fs: &SimFs, seed: u64, reopen: bool, opts: Options) -> Model {
    let open = || Store::open_with(Arc::new(fs.clone()), Path::new(DIR), opts.clone()).unwrap();
    let mut store = open();
    let mut model = Model::default();
    let ops = workload(seed, 300);
    let third = ops.len() / 3;
    for (i, op) in ops.iter().enumerate() {
        if i == third {
            store.checkpoint().unwrap(); // generation 2: checkpoint.b
        }
        if i == 2 * third {
            store.checkpoint().unwrap(); // generation 3: checkpoint.a
            if reopen {
                store.close().unwrap();
                store = open();
            }
        }
        model.apply(op);
        run_op(&mut store, op).unwrap();
    }
    store.close().unwrap();
    model
}

/// The review's finding: with records after both checkpoints, a damaged newest one made
/// open replay from the older one through records whose samples were encoded by codecs the
/// newest checkpoint had restarted, and serve values never written. Replay from the older
/// checkpoint must give exactly what was committed, whether the newest was written by a
/// running store or at a stop, and whether its payload or its header is damaged.
#[test]
fn a_damaged_newest_checkpoint_with_records_after_both_replays_exactly() {
    for (seed, reopen) in [(31, false), (32, true), (33, true), (34, false)] {
        for at in [|n: usize| n / 2, |_: usize| 20, |n: usize| n - 6] {
            let fs = SimFs::new();
            let model = records_after_both_checkpoints(&fs, seed, reopen);
            damage_checkpoint(&fs, 3, at);
            let store = open(&fs);
            let r = store.recovery();
            assert_eq!(r.checkpoint_generation, 2, "{r:?}");
            assert_eq!(r.invalid_checkpoints.len(), 1, "{r:?}");
            same(&store, &model).unwrap_or_else(|e| panic!("seed {seed} reopen {reopen}: {e}"));
        }
    }
}

/// [`records_after_both_checkpoints`] by a writer from before the mark of codec restarts
/// (checkpoints without the flag, no Reseed entry after a full checkpoint).
fn unmarked_records_after_both_checkpoints(fs: &SimFs, seed: u64, reopen: bool) -> Model {
    let opts = Options {
        unmarked_reseeds: true,
        ..small_opts(RING)
    };
    written_after_both_checkpoints(fs, seed, reopen, opts)
}

/// A store written before the mark: where the lost checkpoint's header still says where
/// its writer restarted the codecs (a damaged payload, or a damaged header whose position
/// and sequence number meet a record), replay restarts them there and is exact; where it
/// cannot say (the position itself damaged), the open is refused, naming the checkpoint.
#[test]
fn an_unmarked_store_replays_past_a_lost_checkpoint_only_where_its_header_says_where() {
    use codec::checkpoint::{CK_GENERATION_OFFSET, CK_HEADER_CRC_OFFSET, CK_LOG_LSN_OFFSET};
    for (seed, reopen) in [(41, false), (42, true)] {
        for at in [
            |n: usize| n / 2,
            |_: usize| CK_GENERATION_OFFSET + 4,
            |_: usize| CK_HEADER_CRC_OFFSET,
        ] {
            let fs = SimFs::new();
            let model = unmarked_records_after_both_checkpoints(&fs, seed, reopen);
            damage_checkpoint(&fs, 3, at);
            let store = open(&fs);
            assert_eq!(store.recovery().checkpoint_generation, 2);
            same(&store, &model).unwrap_or_else(|e| panic!("seed {seed} reopen {reopen}: {e}"));
        }
        let fs = SimFs::new();
        unmarked_records_after_both_checkpoints(&fs, seed, reopen);
        damage_checkpoint(&fs, 3, |_| CK_LOG_LSN_OFFSET + 1);
        let err = Store::open_with(Arc::new(fs.clone()), Path::new(DIR), small_opts(RING))
            .err()
            .expect("refused");
        let msg = err.to_string();
        assert!(
            msg.contains("checkpoint.a") && msg.contains("could serve values never written"),
            "{msg}"
        );
        // A damaged header of the older file is no doubt: the newest serves.
        let fs = SimFs::new();
        let model = unmarked_records_after_both_checkpoints(&fs, seed, reopen);
        damage_checkpoint(&fs, 2, |_| CK_LOG_LSN_OFFSET + 1);
        let store = open(&fs);
        assert_eq!(store.recovery().checkpoint_generation, 3);
        same(&store, &model).unwrap();
    }
}

/// The older checkpoint's segment files outlive opens from the newest (which remove the
/// files no checkpoint names), so it stays a whole fallback: damaged later, the newest gives
/// way to it and the log.
#[test]
fn the_older_checkpoint_keeps_its_segments_through_opens_from_the_newest() {
    let fs = SimFs::new();
    let model = two_checkpoints(&fs, 19);
    for _ in 0..2 {
        let store = open(&fs);
        assert_eq!(store.recovery().checkpoint_generation, 3);
        same(&store, &model).unwrap();
        store.close().unwrap();
    }
    damage_checkpoint(&fs, 3, |n| n / 2);
    let store = open(&fs);
    assert_eq!(store.recovery().checkpoint_generation, 2);
    same(&store, &model).unwrap();
}

/// Once the newest checkpoint is valid, the older one is checked as far as its header and
/// meta: damage there is reported, and the store opens from the newest.
#[test]
fn a_damaged_older_checkpoint_is_reported_and_the_newest_serves() {
    let fs = SimFs::new();
    let model = two_checkpoints(&fs, 17);
    damage_checkpoint(&fs, 2, |n| n - 6); // in the meta, at the file's end
    let store = open(&fs);
    let r = store.recovery();
    assert_eq!(r.checkpoint_generation, 3, "{r:?}");
    assert_eq!(r.invalid_checkpoints.len(), 1, "{r:?}");
    same(&store, &model).unwrap();
}

#[test]
fn no_valid_checkpoint_is_an_error_not_an_empty_store() {
    let fs = SimFs::new();
    committed_states(&fs, 16);
    for g in [1, 2] {
        let p = files::checkpoint(Path::new(DIR), g);
        if let Some(mut ck) = fs.read_file(&p) {
            ck[3] ^= 1;
            fs.write_file(&p, ck);
        }
    }
    let r = Store::open_with(Arc::new(fs.clone()), Path::new(DIR), small_opts(RING));
    assert!(
        matches!(r, Err(engine::Error::Corrupt { .. })),
        "{:?}",
        r.err()
    );
}

fn open_repairing(fs: &SimFs) -> Result<Store, engine::Error> {
    let mut o = small_opts(RING);
    o.repair = true;
    Store::open_with(Arc::new(fs.clone()), Path::new(DIR), o)
}

#[test]
fn random_damage_anywhere_in_the_log_fails_closed_or_loses_only_the_torn_tail() {
    let fs = SimFs::new();
    let states = committed_states(&fs, 18);
    let r = open(&fs).recovery().clone();
    assert_eq!(r.checkpoint_lsn, 0, "the whole history must be in the log");
    let pristine = fs.read_file(&log_path()).unwrap();
    let last = states.len() - 1;
    let mut rng = Rng::seeded(99);
    let (mut refused, mut tail) = (0, 0);
    for _ in 0..200 {
        // A machine of its own for each flip (a repair writes a checkpoint).
        let fs = fs.restart(None);
        let mut log = pristine.clone();
        let at = (RING_START + rng.below(r.end_lsn)) as usize;
        log[at] ^= 1 << rng.below(8);
        fs.write_file(&log_path(), log.clone());
        let opened = Store::open_with(Arc::new(fs.clone()), Path::new(DIR), small_opts(RING));
        match opened {
            Ok(store) => {
                // Only the last record may go, and then it is reported.
                let rep = store.recovery();
                let k = rep.records_replayed as usize;
                same(&store, &states[k]).unwrap_or_else(|e| panic!("flip at {at}: {e}"));
                assert!(
                    k == last || (k == last - 1 && rep.cut.is_some()),
                    "flip at {at}: {rep:?}"
                );
                tail += usize::from(k < last);
            }
            Err(engine::Error::Corrupt { offset, what, .. }) => {
                refused += 1;
                assert!(
                    offset <= at as u64,
                    "flip at {at} reported at {offset}: {what}"
                );
                assert!(what.contains("committed record(s) follow it"), "{what}");
                assert_eq!(fs.read_file(&log_path()).unwrap(), log, "nothing zeroed");
                // Repair cuts at the damage and says what it dropped; the store opens from
                // then on, with the same state.
                let store = open_repairing(&fs).unwrap();
                let rep = store.recovery().clone();
                let k = rep.records_replayed as usize;
                same(&store, &states[k]).unwrap();
                let cut = rep.cut.expect("repair reports its cut");
                assert!(cut.reason.contains("repair dropped"), "{}", cut.reason);
                drop(store);
                let store = open(&fs);
                same(&store, &states[k]).unwrap();
                assert_eq!(store.recovery().cut, None, "after the repair's checkpoint");
            }
            Err(e) => panic!("flip at {at}: {e}"),
        }
    }
    // Most flips land in the padding that aligns records to pages (not served, harmless).
    assert!(refused > 0, "refused {refused}, tail {tail}");
}

/// Update series "a" at `t` and commit: one record in the log.
fn commit_one(store: &mut Store, t: i64) {
    let s = rrd::Sample {
        time: t,
        usec: 0,
        values: vec!["1.5".into()],
    };
    store.update("a", &s, &mut |_| {}).unwrap();
    store.commit().unwrap();
}

#[test]
fn bit_rot_in_a_record_header_after_the_ring_wrapped_fails_closed() {
    // Issue 18, defect 1 (../shared/repro/engine_header_bitrot.rs): one flipped bit in a
    // record header after the first lap was taken for the clean end; 6 committed records
    // were dropped with no cut reported.
    const SMALL: u64 = 64 << 10;
    let fs = SimFs::new();
    let opts = || small_opts(SMALL);
    let mut store = Store::open_with(Arc::new(fs.clone()), Path::new(DIR), opts()).unwrap();
    store.create("a", make_rrd(0), false).unwrap();
    store.commit().unwrap();
    let mut t = START;
    // Past the first lap, then on to three records after a checkpoint (the one the damage
    // goes into lies after its complete position).
    let (mut seen, mut after) = (0, 0);
    for k in 0..200 {
        t += 15;
        commit_one(&mut store, t);
        let n = store.stats().checkpoints;
        if n > seen {
            (seen, after) = (n, 0);
        } else {
            after += 1;
        }
        if k >= 40 && after == 3 {
            break;
        }
    }
    drop(store);
    let r = Store::open_with(Arc::new(fs.clone()), Path::new(DIR), opts())
        .unwrap()
        .recovery()
        .clone();
    assert!(
        r.checkpoint_lsn >= SMALL && r.records_replayed >= 3,
        "{r:?}"
    );
    let lsn = r.checkpoint_complete_lsn + 4096;
    assert!(lsn < r.end_lsn);
    let off = (RING_START + lsn % SMALL) as usize;
    let mut log = fs.read_file(&log_path()).unwrap();
    log[off] ^= 0x01;
    fs.write_file(&log_path(), log.clone());
    match Store::open_with(Arc::new(fs.clone()), Path::new(DIR), opts()) {
        Err(engine::Error::Corrupt { offset, what, .. }) => {
            assert_eq!(offset, off as u64, "{what}");
            assert!(what.contains(&format!("log position {lsn}")), "{what}");
        }
        Err(e) => panic!("{e}"),
        Ok(s) => panic!("opened: {:?}", s.recovery()),
    }
    assert_eq!(fs.read_file(&log_path()).unwrap(), log, "nothing zeroed");
    let mut o = opts();
    o.repair = true;
    let s = Store::open_with(Arc::new(fs.clone()), Path::new(DIR), o).unwrap();
    let cut = s.recovery().cut.clone().expect("reported");
    assert_eq!(cut.lsn, lsn);
    assert!(cut.reason.contains("repair dropped"), "{}", cut.reason);
    assert!(s.get("a").unwrap().last_up < t);
}

#[test]
fn a_damaged_newest_checkpoint_whose_older_log_was_overwritten_fails_closed() {
    // Issue 18, defect 2 (../shared/repro/engine_checkpoint_fallback.rs): open fell back to
    // the older checkpoint, cut its log where a newer lap had overwritten it (zeroing a page
    // of live log) and served 19 committed records fewer.
    const SMALL: u64 = 64 << 10;
    let fs = SimFs::new();
    let open_small = || Store::open_with(Arc::new(fs.clone()), Path::new(DIR), small_opts(SMALL));
    let mut store = open_small().unwrap();
    store.create("a", make_rrd(0), false).unwrap();
    store.commit().unwrap();
    let mut t = START;
    let mut step = |store: &mut Store| {
        t += 15;
        commit_one(store, t);
    };
    for _ in 0..48 {
        step(&mut store);
    }
    store.checkpoint().unwrap();
    drop(store);
    let r = open_small().unwrap().recovery().clone();
    let (g_old, l_old) = (r.checkpoint_generation, r.checkpoint_lsn);
    // Commit until a lagged checkpoint g+1 is the newest and the ring has overwritten the
    // older checkpoint's log, before g+2 replaces the older file.
    let mut store = open_small().unwrap();
    loop {
        step(&mut store);
        drop(store);
        store = open_small().unwrap();
        let r = store.recovery().clone();
        if r.checkpoint_generation == g_old + 1 && r.end_lsn > l_old + SMALL + 4096 {
            break;
        }
        assert!(r.checkpoint_generation <= g_old + 1, "overshot: {r:?}");
    }
    drop(store);
    let p = files::checkpoint(Path::new(DIR), g_old + 1);
    let mut ck = fs.read_file(&p).unwrap();
    ck[60] ^= 0x10;
    fs.write_file(&p, ck);
    let log = fs.read_file(&log_path()).unwrap();
    match open_small() {
        Err(engine::Error::Corrupt { what, .. }) => {
            assert!(what.contains("committed record(s) follow it"), "{what}")
        }
        Err(e) => panic!("{e}"),
        Ok(s) => panic!("rolled back: {:?}", s.recovery()),
    }
    assert_eq!(fs.read_file(&log_path()).unwrap(), log, "nothing zeroed");
}

#[test]
fn a_checksummed_record_that_does_not_decode_is_corrupt_not_a_tail() {
    let fs = SimFs::new();
    committed_states(&fs, 19);
    let r = open(&fs).recovery().clone();
    // A well-framed record (right position, sequence and CRC) whose payload is nonsense:
    // not a torn write but a bug or damage, so open refuses instead of serving part of it.
    let seq = r.records_replayed; // the checkpoint was at seq 0
    let rec = codec::frame::encode_record(
        codec::frame::KIND_COMMIT,
        seq,
        r.end_lsn,
        &[1, 9],
        codec::frame::PAGE,
    );
    let mut log = fs.read_file(&log_path()).unwrap();
    let at = (RING_START + r.end_lsn) as usize;
    log[at..at + rec.len()].copy_from_slice(&rec);
    fs.write_file(&log_path(), log);
    match Store::open_with(Arc::new(fs.clone()), Path::new(DIR), small_opts(RING)) {
        Err(engine::Error::Corrupt { file, offset, what }) => {
            assert_eq!(file, log_path());
            assert_eq!(offset, RING_START + r.end_lsn);
            assert!(what.contains(&format!("record {seq}")), "{what}");
        }
        Err(e) => panic!("expected Corrupt, got {e}"),
        Ok(_) => panic!("expected Corrupt, got a store"),
    }
}
