//! What a store counts: each commit ([`CommitStats`]), the store's totals ([`StoreStats`])
//! and where a record's bits went ([`RecordCost`]).

/// What one commit wrote.
#[derive(Debug, Clone, Default)]
pub struct CommitStats {
    pub series: usize,
    pub samples: usize,
    /// Bytes written: the record (or the checkpoint that stood in for it), and the segments
    /// of a spill the commit made.
    pub bytes: u64,
}

/// Counters since the store was opened (for a daemon's STATS).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct StoreStats {
    /// Commits that wrote something (a record or a checkpoint).
    pub commits: u64,
    /// Samples made durable by those commits.
    pub samples_committed: u64,
    /// Bytes of log records written (framed, padded).
    pub log_bytes: u64,
    /// Of those, the records' payloads (without their 32-byte headers and page padding).
    pub record_bytes: u64,
    /// Where the records' bytes went.
    pub record_cost: RecordCost,
    pub checkpoints: u64,
    /// Bytes of checkpoints written, their new segment files included.
    pub checkpoint_bytes: u64,
    /// Of those, bytes of segment files of sealed chunks (archive chunks stored once).
    pub segment_bytes: u64,
    /// And of segment files of pieces of open chunks (each checkpoint stores the chunks
    /// being written, the values since they were last stored, and rebases them there:
    /// `segments::PIECES_CLASS`).
    pub open_chunk_bytes: u64,
    /// Times the log ring was replaced by a larger one ([`Options::log_per_series`]).
    pub rings_grown: u64,
    /// Spills of sealed chunks between checkpoints ([`Options::spill_bytes`]), and the
    /// bytes of the segment files they wrote.
    pub spills: u64,
    pub spill_bytes: u64,
}

/// Where appended commit records spent their bytes, in bits (all of them add up to the
/// records' framed, padded size).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RecordCost {
    /// Which series have samples and where their bits are: a block's head and lens.
    pub series: u64,
    /// The samples' times (bits the sample codec spent on them, less those a block left out).
    pub times: u64,
    /// The samples' values (the rest of the samples' bits).
    pub values: u64,
    /// Creates, removes and the samples of series removed in the same commit.
    pub entries: u64,
    /// Record headers, entry counts, field lengths, each part's last byte's padding.
    pub framing: u64,
    /// Zeros up to the next page boundary.
    pub padding: u64,
}

impl RecordCost {
    /// The cost of a record written from `parts` ([`codec::record::RecordWriter::finish_parts`]),
    /// whose block spent `block` and whose samples' streams spent `time_bits` on times.
    pub(crate) fn of(
        parts: &[&[u8]; 4],
        entries_len: usize,
        block: &codec::block::BlockCost,
        time_bits: u64,
        framed: u64,
    ) -> RecordCost {
        let payload: u64 = parts.iter().map(|p| p.len() as u64).sum();
        let series = block.index_bits;
        // The streams' times, less those of the samples that went into rows, which spend
        // their own.
        let stream_bits = block.stream_bits;
        let time_bits = time_bits
            .saturating_sub(block.row_stream_time_bits)
            .min(stream_bits);
        let times = time_bits.saturating_sub(block.stripped_first) + block.row_time_bits;
        let values = (stream_bits - time_bits)
            .saturating_sub(block.stripped - block.stripped_first)
            + block.row_value_bits;
        let entries = entries_len as u64 * 8;
        let header = codec::frame::REC_HEADER_LEN as u64;
        let framing = ((header + payload) * 8).saturating_sub(entries + series + times + values);
        RecordCost {
            series,
            times,
            values,
            entries,
            framing,
            padding: framed.saturating_sub(header + payload) * 8,
        }
    }

    /// What was spent since `earlier` (a copy taken before).
    pub fn since(&self, earlier: &RecordCost) -> RecordCost {
        RecordCost {
            series: self.series - earlier.series,
            times: self.times - earlier.times,
            values: self.values - earlier.values,
            entries: self.entries - earlier.entries,
            framing: self.framing - earlier.framing,
            padding: self.padding - earlier.padding,
        }
    }

    /// All of it, in bits.
    pub fn total(&self) -> u64 {
        self.series + self.times + self.values + self.entries + self.framing + self.padding
    }

    pub(crate) fn add(&mut self, o: &RecordCost) {
        self.series += o.series;
        self.times += o.times;
        self.values += o.values;
        self.entries += o.entries;
        self.framing += o.framing;
        self.padding += o.padding;
    }
}
