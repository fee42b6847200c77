//! What the next commit writes besides the series' own logged samples: the record being
//! built (creates, removes and the samples of a removed series, blob changes), the bytes
//! pending in all (what [`crate::Options::max_pending_bytes`] limits: the series' logged
//! samples counted too), the bits the sample codec spent on their times, and when the last
//! commit began.

use codec::record::RecordWriter;
use std::time::{Duration, Instant};

pub(crate) struct Pending {
    rec: RecordWriter,
    bytes: usize,
    time_bits: u64,
    last_commit: Instant,
}

impl Pending {
    pub(crate) fn new() -> Pending {
        Pending {
            rec: RecordWriter::new(),
            bytes: 0,
            time_bits: 0,
            last_commit: Instant::now(),
        }
    }

    /// `f` adds entries to the record; their bytes are counted.
    pub(crate) fn entry(&mut self, f: impl FnOnce(&mut RecordWriter)) {
        let before = self.rec.len();
        f(&mut self.rec);
        self.bytes += self.rec.len() - before;
    }

    /// Bytes pending outside the record: a series' logged sample (and the bits its time
    /// took), a blob's written bytes.
    pub(crate) fn add(&mut self, bytes: usize, time_bits: u64) {
        self.bytes += bytes;
        self.time_bits += time_bits;
    }

    pub(crate) fn bytes(&self) -> usize {
        self.bytes
    }

    /// Whether the record holds no entry (the series' samples and blobs are asked apart).
    pub(crate) fn record_is_empty(&self) -> bool {
        self.rec.is_empty()
    }

    /// Whether the size limit or the commit interval has been reached.
    pub(crate) fn due(&self, max_bytes: usize, interval: Option<Duration>) -> bool {
        self.bytes >= max_bytes || interval.is_some_and(|iv| self.last_commit.elapsed() >= iv)
    }

    /// A commit begins now.
    pub(crate) fn commit_begins(&mut self) {
        self.last_commit = Instant::now();
    }

    /// The record, for the commit to finish (a new one starts).
    pub(crate) fn take_record(&mut self) -> RecordWriter {
        std::mem::replace(&mut self.rec, RecordWriter::new())
    }

    /// Everything the commit took: the bits its samples' times took.
    pub(crate) fn taken(&mut self) -> u64 {
        self.bytes = 0;
        std::mem::take(&mut self.time_bits)
    }

    /// The next record says that the codecs restart here (a checkpoint reseeded them).
    pub(crate) fn reseed(&mut self) {
        self.rec.reseed();
    }
}
