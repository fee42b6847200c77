//! Lagged checkpoints: the small state of every series at a past commit boundary, kept in
//! memory so the checkpoint written later (when the log ring needs room) can start replay
//! there and leave out the archive rows that replay rewrites.
//!
//! A checkpoint at the current log end must hold every archive row, although the one-PDP
//! archives are nothing but the logged samples consolidated. A lagged checkpoint holds the
//! state as of the snapshot's position `S` instead, written when the log has reached
//! `L > S`: the live state (`last_up`, `pdp_prep`, `cdp_prep`, each archive's `cur_row`) as
//! it was at `S`, and each archive's rows as they are now, by chunk
//! ([`crate::segments::Plan::entries`]): a chunk whose rows were all written between `S`
//! and `L` is left out (replaying `S..L` writes it again), a sealed chunk is named in the
//! segments (stored there the first time), the open chunk is the version it was opened from
//! if only such rows were written into it since, else its values. Rows not written since `S`
//! are the same now as at `S`, so the image is exactly the state at `S` once replay has passed
//! `L` (the checkpoint's `complete_lsn`; recovery refuses to serve a state that stops short).
//!
//! Replay from `S` decodes samples with codecs seeded from the RRDs at `S`, so taking a
//! snapshot reseeds every codec, and the next record says so (a Reseed entry, see
//! [`codec::record`]).

use crate::series::Registry;

/// One series as it stood at the snapshot: what its checkpoint image holds besides rows, as
/// bytes (with the rest of this, about 380 bytes a gmetad series, where an `Rrd` head took
/// 1 KB: `SNAPSHOT=1 GMETAD=1 cargo run --release -p engine --example memory`).
pub struct SnapSeries {
    pub id: u64,
    pub name: std::sync::Arc<str>,
    pub schema: std::sync::Arc<rrd::Schema>,
    /// Schema and live state, as the checkpoint writes them ([`codec::rrdbin::head_bytes`]).
    pub head: Box<[u8]>,
    /// Each archive's `cur_row`.
    pub cur_rows: Box<[u64]>,
    /// Rows each archive had written when the snapshot was taken ([`crate::series::Series::rows_written`]).
    pub rows_written: Box<[u64]>,
}

/// The registry's state at a commit boundary.
pub struct Snapshot {
    /// Log position of the first record after the snapshot.
    pub lsn: u64,
    /// Its sequence number.
    pub seq: u64,
    pub next_id: u64,
    /// In id order.
    pub series: Vec<SnapSeries>,
}

impl Snapshot {
    /// Record the state of `reg` at log position `lsn` (nothing may be pending: the caller has
    /// just committed).
    pub fn take(reg: &Registry, lsn: u64, seq: u64) -> Snapshot {
        let series = reg
            .iter()
            .map(|(id, s)| SnapSeries {
                id,
                name: s.name.clone(),
                schema: s.rrd.schema.clone(),
                head: codec::rrdbin::head_bytes(&s.rrd).into_boxed_slice(),
                cur_rows: s.rrd.rra.iter().map(|r| r.cur_row).collect(),
                rows_written: s.rows_written.clone(),
            })
            .collect();
        Snapshot {
            lsn,
            seq,
            next_id: reg.next_id,
            series,
        }
    }
}
