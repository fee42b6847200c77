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
use codec::bytes::{ByteReader, ByteWriter};
use std::sync::Arc;

/// One series as it stood at the snapshot: what its checkpoint image holds besides its
/// schema (shared) and rows, as bytes in one allocation: 189 bytes a million-schema series
/// (one DS, three archives) with its place in the snapshot, where the schema's bytes and
/// three boxes took 378 (`SNAPSHOT=1 cargo run --release -p engine --example memory`).
pub struct SnapSeries {
    pub id: u64,
    pub name: Arc<str>,
    pub schema: Arc<rrd::Schema>,
    /// The live state's length (varint), the live state as the checkpoint writes it
    /// ([`codec::rrdbin::live_bytes`]), then per archive its `cur_row` and then per archive
    /// the rows it had written ([`crate::series::Series::rows_written`]), varints.
    bytes: Box<[u8]>,
}

impl SnapSeries {
    fn new(id: u64, name: Arc<str>, rrd: &rrd::Rrd, rows_written: &[u64]) -> SnapSeries {
        let live = codec::rrdbin::live_bytes(rrd);
        let mut w = ByteWriter::new();
        w.buf.reserve_exact(live.len() + 3 + 6 * rrd.rra.len());
        w.varint(live.len() as u64);
        w.buf.extend_from_slice(&live);
        for r in &rrd.rra {
            w.varint(r.cur_row);
        }
        for &n in rows_written {
            w.varint(n);
        }
        SnapSeries {
            id,
            name,
            schema: rrd.schema.clone(),
            bytes: w.buf.into_boxed_slice(),
        }
    }

    /// The live state's bytes, each archive's `cur_row` and the rows each had written.
    pub fn parts(&self) -> (&[u8], Vec<u64>, Vec<u64>) {
        let n = self.schema.rra.len();
        let mut r = ByteReader::new(&self.bytes);
        // Written by `new` just so: reads cannot fail.
        let len = r.varint().unwrap_or(0) as usize;
        let live = r.take(len).unwrap_or_default();
        let mut next = || r.varint().unwrap_or(0);
        let cur_rows = (0..n).map(|_| next()).collect();
        let rows_written = (0..n).map(|_| next()).collect();
        (live, cur_rows, rows_written)
    }
}

/// The registry's state at a commit boundary.
pub struct Snapshot {
    /// Log position of the first record after the snapshot.
    pub lsn: u64,
    /// Its sequence number.
    pub seq: u64,
    pub next_id: u64,
    /// Samples logged before it ([`crate::Store::samples_since_checkpoint`] once its
    /// checkpoint is written).
    pub samples: u64,
    /// Pieces logged before it (a series' samples in one record).
    pub pieces: u64,
    /// In id order.
    pub series: Vec<SnapSeries>,
}

impl Snapshot {
    /// Record the state of `reg` at log position `lsn` (nothing may be pending: the caller has
    /// just committed).
    pub fn take(reg: &Registry, lsn: u64, seq: u64, samples: u64, pieces: u64) -> Snapshot {
        let series = reg
            .iter()
            .map(|(id, s)| SnapSeries::new(id, s.name.clone(), &s.rrd, &s.rows_written))
            .collect();
        Snapshot {
            lsn,
            seq,
            next_id: reg.next_id,
            samples,
            pieces,
            series,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_snapshot_series_gives_back_its_parts() {
        let args: Vec<String> = ["x.rrd", "-s", "300", "DS:a:GAUGE:600:U:U"]
            .iter()
            .chain(&["RRA:AVERAGE:0.5:1:10", "RRA:MAX:0.5:12:5"])
            .map(|s| s.to_string())
            .collect();
        let schema = rrd::create::parse_create(&args, 1_000_000_000)
            .unwrap()
            .schema;
        let mut rrd = rrd::Rrd::new(schema, 1_000_000_000);
        rrd.rra[0].cur_row = 7;
        rrd.rra[1].cur_row = 4;
        rrd.pdp[0].last_ds = "12.5".into();
        let s = SnapSeries::new(3, "x/y".into(), &rrd, &[300, 1 << 40]);
        let (live, cur, written) = s.parts();
        assert_eq!(live, codec::rrdbin::live_bytes(&rrd));
        assert_eq!(cur, [7, 4]);
        assert_eq!(written, [300, 1 << 40]);
    }
}
