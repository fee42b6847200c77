//! Damage to the log tail (garbage, flipped bits, truncation) is detected by checksum, cut,
//! reported, zeroed, and never served; damage to the newest checkpoint falls back to the
//! older one plus the log.

mod common;

use codec::frame::RING_START;
use common::*;
use engine::sim::SimFs;
use engine::{files, Store};
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
fn garbage_after_the_last_record_is_cut_and_reported() {
    let fs = SimFs::new();
    let states = committed_states(&fs, 11);
    let end = open(&fs).recovery().end_lsn;
    let mut log = fs.read_file(&log_path()).unwrap();
    let at = (RING_START + end) as usize;
    for (i, b) in log[at..at + 700].iter_mut().enumerate() {
        *b = (i * 37 + 1) as u8;
    }
    fs.write_file(&log_path(), log);
    let store = open(&fs);
    let cut = store
        .recovery()
        .cut
        .clone()
        .expect("garbage must be reported");
    assert_eq!(cut.lsn, end);
    assert_eq!(cut.file_offset, RING_START + end);
    same(&store, states.last().unwrap()).unwrap();
    drop(store);
    // The cut was zeroed: the next open finds a clean end.
    let store = open(&fs);
    assert_eq!(store.recovery().cut, None);
    same(&store, states.last().unwrap()).unwrap();
}

/// Start and payload length of the last record replayed, found by walking the headers.
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

#[test]
fn a_damaged_newest_checkpoint_falls_back_to_the_older_one_and_the_log() {
    let fs = SimFs::new();
    let mut store = open(&fs);
    let mut model = Model::default();
    let ops = workload(15, 200);
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
    let p = files::checkpoint(Path::new(DIR), 3);
    let mut ck = fs.read_file(&p).unwrap();
    let n = ck.len();
    ck[n / 2] ^= 0x40;
    fs.write_file(&p, ck);
    let store = open(&fs);
    let r = store.recovery();
    assert_eq!(r.checkpoint_generation, 2, "{r:?}");
    assert_eq!(r.invalid_checkpoints.len(), 1, "{r:?}");
    assert!(r.records_replayed > 0);
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

#[test]
fn random_damage_anywhere_in_the_log_serves_a_committed_prefix() {
    let fs = SimFs::new();
    let states = committed_states(&fs, 18);
    let r = open(&fs).recovery().clone();
    assert_eq!(r.checkpoint_lsn, 0, "the whole history must be in the log");
    let pristine = fs.read_file(&log_path()).unwrap();
    let mut rng = Rng::new(99);
    for _ in 0..60 {
        let mut log = pristine.clone();
        let at = (RING_START + rng.below(r.end_lsn)) as usize;
        log[at] ^= 1 << rng.below(8);
        fs.write_file(&log_path(), log);
        let store = open(&fs);
        let rep = store.recovery();
        let k = rep.records_replayed as usize;
        same(&store, &states[k]).unwrap_or_else(|e| panic!("flip at {at}: {e}"));
        assert_eq!(
            rep.cut.is_some(),
            k < states.len() - 1,
            "flip at {at}: {rep:?}"
        );
    }
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
