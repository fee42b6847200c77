//! The log ring and where it stands: the position the next record goes to, its sequence
//! number, and the newest durable checkpoint's position and generation (the ring may not
//! overwrite anything at or after it). Its arithmetic is here once: the bytes since the
//! checkpoint (what an open replays), whether a record fits, a record appended and synced.

use crate::clean::{self, Mark};
use crate::ring::LogRing;

/// What a commit does to the mark of a clean close in the log's superblock page.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum MarkWrite {
    /// Zeros: a record follows the mark (the first commit after a clean close).
    Clear,
    /// The log's end after this record: the closing commit.
    SetAfter,
}
use codec::frame::{record_header, KIND_COMMIT};
use std::io;

pub(crate) struct Log {
    pub(crate) ring: LogRing,
    /// Log position where the next record goes.
    pub(crate) end_lsn: u64,
    /// Sequence number of the next record.
    pub(crate) next_seq: u64,
    /// Position and generation of the newest durable checkpoint.
    pub(crate) ckpt_lsn: u64,
    pub(crate) ckpt_gen: u64,
    /// Bytes of samples in the last commit's record (room reserved for the next).
    pub(crate) last_record: usize,
}

impl Log {
    /// Bytes written since the newest checkpoint's start: what an open replays.
    pub(crate) fn since_checkpoint(&self) -> u64 {
        self.end_lsn - self.ckpt_lsn
    }

    /// The ring's size in bytes.
    pub(crate) fn cap(&self) -> u64 {
        self.ring.cap
    }

    /// Whether a record of `framed` bytes fits before the newest checkpoint's start.
    pub(crate) fn has_room(&self, framed: u64) -> bool {
        self.end_lsn + framed <= self.ckpt_lsn + self.ring.cap
    }

    /// A commit's record appended and synced; the position and sequence move past it. With
    /// `mark`, the superblock page's mark of a clean close is written under the same sync:
    /// cleared, or set to where the log ends after this record (returned: what the log now
    /// holds there).
    pub(crate) fn append(
        &mut self,
        payload: &[&[u8]],
        framed: u64,
        mark: Option<MarkWrite>,
    ) -> io::Result<Option<Mark>> {
        let header = record_header(KIND_COMMIT, self.next_seq, self.end_lsn, payload);
        self.ring
            .write_record(self.end_lsn, &header, payload, framed)?;
        let after = Mark {
            end_lsn: self.end_lsn + framed,
            next_seq: self.next_seq + 1,
            ..self.mark()
        };
        let on_disk = match mark {
            None => None,
            Some(MarkWrite::Clear) => {
                self.ring.write_mark(&[0; clean::LEN])?;
                None
            }
            Some(MarkWrite::SetAfter) => {
                self.ring.write_mark(&clean::encode(&after))?;
                Some(after)
            }
        };
        self.ring.sync()?;
        self.end_lsn = after.end_lsn;
        self.next_seq = after.next_seq;
        Ok(on_disk)
    }

    /// The mark of a clean close for the log as it stands.
    pub(crate) fn mark(&self) -> Mark {
        Mark {
            generation: self.ckpt_gen,
            end_lsn: self.end_lsn,
            next_seq: self.next_seq,
        }
    }

    /// Checkpoint `generation`, holding everything before `lsn`, is durable.
    pub(crate) fn checkpointed(&mut self, generation: u64, lsn: u64) {
        self.ckpt_gen = generation;
        self.ckpt_lsn = lsn;
    }
}
