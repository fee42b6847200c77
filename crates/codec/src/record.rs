//! The payload of a commit record: an ordered list of entries.
//!
//! ```text
//! payload = entry_count varint, entries
//! entry   = 1 Create  : id varint, name (varint len, UTF-8), image (varint len, RRD image)
//!         | 2 Remove  : id varint
//!         | 3 Samples : id varint, sample_count varint, chunk (varint len, sample bit stream)
//!         | 4 Reseed  : (nothing) only ever the first entry
//!         | 5 Block   : series_count varint, head, lens, body (each varint len, bytes):
//!                       the samples of many series, commit-wide (crate::block), version 1
//!         | 6 Block   : the same fields, version 2 (rows, arithmetic-coded lens)
//!         | 7 Block   : the same fields, version 3
//!         | 8 BlobCreate   : id varint, name str          (an empty blob: a file of a view)
//!         | 9 BlobWrite    : id varint, offset varint, data (varint len, bytes)
//!         | 10 BlobTruncate: id varint, len varint        (cut, or extended with zeros)
//!         | 11 BlobRename  : id varint, name str
//!         | 12 BlobRemove  : id varint
//!         | 13 Smooth  : id varint    (the seasonal smoother ran, after the series' samples
//!                                      logged before this entry: rrd::Rrd::smooth)
//! ```
//!
//! Blobs (the engine's `blob` module) share the id sequence with series. Their entries set
//! bytes and lengths outright, so applying a blob's entries from some record on to the blob
//! as it stood at any later commit gives the same blob as applying them to the one it was
//! at that record (what a lagged checkpoint relies on); entries naming a blob the reader
//! does not hold are skipped (it was removed later in the log).
//!
//! The writer puts one Block last, holding every series' samples of the commit (Samples
//! entries remain for the samples of a series removed in the same commit, and are read in
//! records written before blocks existed).
//!
//! Reseed says that every series' codec was seeded afresh from its RRD, as the RRD stood
//! before this record, before any sample of the record was encoded (the engine does this when
//! it takes a snapshot for a later checkpoint, so replay can start at that record).
//!
//! Series are named by a numeric id that is never reused (a re-created name gets a new id), so
//! entries of different series commute; entries of one series appear in the order they
//! happened (its samples, then its removal). A Samples chunk is decoded with the series'
//! [`crate::sample::SeriesCodec`], which the reader holds; this module leaves it as bytes.

use crate::block::{Block, BlockWriter, Row};
use crate::bytes::{ByteReader, ByteWriter, DecodeError};
use crate::rrdbin::encode_rrd;
use rrd::Rrd;

const TAG_CREATE: u8 = 1;
const TAG_REMOVE: u8 = 2;
const TAG_SAMPLES: u8 = 3;
const TAG_RESEED: u8 = 4;
const TAG_BLOCK: u8 = 5;
const TAG_BLOCK2: u8 = 6;
const TAG_BLOCK3: u8 = 7;
const TAG_BLOB_CREATE: u8 = 8;
const TAG_BLOB_WRITE: u8 = 9;
const TAG_BLOB_TRUNCATE: u8 = 10;
const TAG_BLOB_RENAME: u8 = 11;
const TAG_BLOB_REMOVE: u8 = 12;
const TAG_SMOOTH: u8 = 13;

/// One entry, as decoded.
#[derive(Debug, Clone, PartialEq)]
pub enum Entry<'a> {
    /// A series made: its image is decoded by whoever needs it
    /// ([`crate::rrdbin::decode_image`]): a reader
    /// of one series decodes only its own.
    Create {
        id: u64,
        name: String,
        image: &'a [u8],
    },
    Remove {
        id: u64,
    },
    Samples {
        id: u64,
        count: u64,
        chunk: &'a [u8],
    },
    /// Every codec was reseeded from its RRD before this record's samples were encoded.
    Reseed,
    /// Samples of many series ([`Block::series`]).
    Block(Block<'a>),
    /// A blob made, empty, with this name.
    BlobCreate {
        id: u64,
        name: String,
    },
    /// Bytes of a blob set at `offset` (a gap before them, past its length, reads as zeros).
    BlobWrite {
        id: u64,
        offset: u64,
        data: &'a [u8],
    },
    /// A blob's length set: cut, or extended with zeros.
    BlobTruncate {
        id: u64,
        len: u64,
    },
    BlobRename {
        id: u64,
        name: String,
    },
    BlobRemove {
        id: u64,
    },
    /// The series' seasonal smoother ran here ([`rrd::Rrd::smooth`]): after its samples in
    /// earlier entries and records, before those of the block. The writer puts the samples
    /// the series logged before it in a Samples entry first.
    Smooth {
        id: u64,
    },
}

/// Builds a record payload entry by entry.
#[derive(Debug, Default, Clone)]
pub struct RecordWriter {
    entries: u64,
    body: ByteWriter,
    reseed: bool,
    /// The commit's samples, written after every other entry.
    block: BlockWriter,
    /// The parts [`RecordWriter::finish_parts`] built: the entry count and any Reseed
    /// entry; the Block entry's fields before its body.
    head: Vec<u8>,
    block_head: Vec<u8>,
}

impl RecordWriter {
    pub fn new() -> Self {
        RecordWriter::default()
    }

    /// Whether no entry was added (a pending [`RecordWriter::reseed`] alone does not count:
    /// it means nothing without samples after it).
    pub fn is_empty(&self) -> bool {
        self.entries == 0 && self.block.is_empty()
    }

    /// Mark the record as the first after a codec reseed: [`RecordWriter::finish`] puts a
    /// Reseed entry before all others.
    pub fn reseed(&mut self) {
        self.reseed = true;
    }

    /// Bytes of the entries so far (not counting the block's samples).
    pub fn len(&self) -> usize {
        self.body.buf.len()
    }

    /// Add a series' samples to the record's block: `count` samples whose stream is the
    /// first `bits` bits of `chunk`. Ids must ascend from one call to the next.
    pub fn block_series(&mut self, id: u64, count: u64, chunk: &[u8], bits: u64) {
        self.block.push(id, count, chunk, bits);
    }

    /// Add a series' one sample to the record's block as a row (ids ascending, as for
    /// [`RecordWriter::block_series`]).
    pub fn block_row(&mut self, id: u64, row: &Row) {
        self.block.push_row(id, row);
    }

    /// Write the block as `version` (1: streams only, what binaries before version 2 read;
    /// 2: rows against the stream's predictor, what binaries before version 3 read).
    pub fn block_version(&mut self, version: u8) {
        assert!(self.block.is_empty(), "before any series");
        self.block = BlockWriter::with_version(version);
    }

    /// The block so far (its series and the bits their streams took).
    pub fn block(&self) -> &BlockWriter {
        &self.block
    }

    pub fn create(&mut self, id: u64, name: &str, rrd: &Rrd) {
        self.entries += 1;
        self.body.u8(TAG_CREATE);
        self.body.varint(id);
        self.body.str(name);
        let mut img = ByteWriter::new();
        encode_rrd(&mut img, rrd);
        self.body.bytes(&img.buf);
    }

    pub fn remove(&mut self, id: u64) {
        self.entries += 1;
        self.body.u8(TAG_REMOVE);
        self.body.varint(id);
    }

    pub fn blob_create(&mut self, id: u64, name: &str) {
        self.entries += 1;
        self.body.u8(TAG_BLOB_CREATE);
        self.body.varint(id);
        self.body.str(name);
    }

    pub fn blob_write(&mut self, id: u64, offset: u64, data: &[u8]) {
        self.entries += 1;
        self.body.u8(TAG_BLOB_WRITE);
        self.body.varint(id);
        self.body.varint(offset);
        self.body.bytes(data);
    }

    pub fn blob_truncate(&mut self, id: u64, len: u64) {
        self.entries += 1;
        self.body.u8(TAG_BLOB_TRUNCATE);
        self.body.varint(id);
        self.body.varint(len);
    }

    pub fn blob_rename(&mut self, id: u64, name: &str) {
        self.entries += 1;
        self.body.u8(TAG_BLOB_RENAME);
        self.body.varint(id);
        self.body.str(name);
    }

    pub fn blob_remove(&mut self, id: u64) {
        self.entries += 1;
        self.body.u8(TAG_BLOB_REMOVE);
        self.body.varint(id);
    }

    pub fn smooth(&mut self, id: u64) {
        self.entries += 1;
        self.body.u8(TAG_SMOOTH);
        self.body.varint(id);
    }

    pub fn samples(&mut self, id: u64, count: u64, chunk: &[u8]) {
        self.entries += 1;
        self.body.u8(TAG_SAMPLES);
        self.body.varint(id);
        self.body.varint(count);
        self.body.bytes(chunk);
    }

    /// The finished payload as parts to be written one after the other: a few bytes of
    /// head (the entry count, a Reseed entry), the entries as they were built, then the
    /// block's fields and its body, not copied (a million series' commit is tens of
    /// megabytes).
    pub fn finish_parts(&mut self) -> [&[u8]; 4] {
        let blocked = !self.block.is_empty();
        let mut w = ByteWriter::new();
        w.varint(self.entries + u64::from(self.reseed) + u64::from(blocked));
        if self.reseed {
            w.u8(TAG_RESEED);
        }
        self.head = w.buf;
        let mut b = ByteWriter::new();
        let body: &[u8] = if blocked {
            let (version, n, head, lens, body) = self.block.finish();
            b.u8(TAG_BLOCK + version - 1);
            b.varint(n);
            b.bytes(&head);
            b.bytes(&lens);
            b.varint(body.len() as u64);
            body
        } else {
            &[]
        };
        self.block_head = b.buf;
        [&self.head, &self.body.buf, &self.block_head, body]
    }

    /// Room for `bytes` more bytes of samples (a hint: the last commit's size), so that the
    /// block's body is not copied as it grows.
    pub fn reserve(&mut self, bytes: usize) {
        self.block.reserve(bytes);
    }

    /// The finished payload.
    pub fn finish(&mut self) -> Vec<u8> {
        self.finish_parts().concat()
    }
}

/// Decode a whole payload into its entries.
pub fn decode_record(payload: &[u8]) -> Result<Vec<Entry<'_>>, DecodeError> {
    let mut r = ByteReader::new(payload);
    let n = r.len(payload.len())?;
    let mut out = Vec::with_capacity(n);
    for _ in 0..n {
        let tag = r.u8()?;
        let e = match tag {
            TAG_CREATE => Entry::Create {
                id: r.varint()?,
                name: r.str()?,
                image: r.bytes()?,
            },
            TAG_REMOVE => Entry::Remove { id: r.varint()? },
            TAG_SAMPLES => Entry::Samples {
                id: r.varint()?,
                count: r.varint()?,
                chunk: r.bytes()?,
            },
            TAG_RESEED if out.is_empty() => Entry::Reseed,
            TAG_BLOCK | TAG_BLOCK2 | TAG_BLOCK3 => {
                let at = r.pos();
                let n = r.varint()?;
                if n == 0 {
                    return Err(DecodeError::new(at, "a block of no series"));
                }
                Entry::Block(Block {
                    version: tag - TAG_BLOCK + 1,
                    n,
                    head: r.bytes()?,
                    lens: r.bytes()?,
                    body: r.bytes()?,
                })
            }
            TAG_BLOB_CREATE => Entry::BlobCreate {
                id: r.varint()?,
                name: r.str()?,
            },
            TAG_BLOB_WRITE => Entry::BlobWrite {
                id: r.varint()?,
                offset: r.varint()?,
                data: r.bytes()?,
            },
            TAG_BLOB_TRUNCATE => Entry::BlobTruncate {
                id: r.varint()?,
                len: r.varint()?,
            },
            TAG_BLOB_RENAME => Entry::BlobRename {
                id: r.varint()?,
                name: r.str()?,
            },
            TAG_BLOB_REMOVE => Entry::BlobRemove { id: r.varint()? },
            TAG_SMOOTH => Entry::Smooth { id: r.varint()? },
            _ => {
                return Err(DecodeError::new(
                    r.pos() - 1,
                    format!("unknown entry tag {tag}"),
                ))
            }
        };
        out.push(e);
    }
    r.finish()?;
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rrdbin::tests::sample_rrd;

    #[test]
    fn entries_roundtrip_in_order() {
        let rrd = sample_rrd();
        let mut w = RecordWriter::new();
        w.samples(4, 2, &[1, 2, 3]);
        w.remove(4);
        w.create(9, "a/b.rrd", &rrd);
        w.samples(9, 1, &[]);
        let p = w.finish();
        let e = decode_record(&p).unwrap();
        assert_eq!(e.len(), 4);
        assert_eq!(
            e[0],
            Entry::Samples {
                id: 4,
                count: 2,
                chunk: &[1, 2, 3]
            }
        );
        assert_eq!(e[1], Entry::Remove { id: 4 });
        match &e[2] {
            Entry::Create { id, name, image } => {
                assert_eq!((*id, name.as_str()), (9, "a/b.rrd"));
                let r = crate::rrdbin::decode_image(image).unwrap();
                assert_eq!(format!("{r:?}"), format!("{rrd:?}"));
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn blob_entries_roundtrip() {
        let mut w = RecordWriter::new();
        w.blob_create(7, "phpfina/1.dat");
        w.blob_write(7, 1 << 33, &[1, 2, 3, 4]);
        w.blob_truncate(7, 2);
        w.blob_rename(7, "phpfina/2.dat");
        w.blob_remove(7);
        let p = w.finish();
        assert_eq!(
            decode_record(&p).unwrap(),
            vec![
                Entry::BlobCreate {
                    id: 7,
                    name: "phpfina/1.dat".into()
                },
                Entry::BlobWrite {
                    id: 7,
                    offset: 1 << 33,
                    data: &[1, 2, 3, 4]
                },
                Entry::BlobTruncate { id: 7, len: 2 },
                Entry::BlobRename {
                    id: 7,
                    name: "phpfina/2.dat".into()
                },
                Entry::BlobRemove { id: 7 },
            ]
        );
        for cut in 0..p.len() {
            assert!(decode_record(&p[..cut]).is_err(), "cut {cut}");
        }
    }

    #[test]
    fn reseed_comes_first_and_only_first() {
        let mut w = RecordWriter::new();
        w.remove(2);
        assert!(!w.is_empty());
        w.reseed();
        let payload = w.finish();
        let e = decode_record(&payload).unwrap();
        assert_eq!(e, vec![Entry::Reseed, Entry::Remove { id: 2 }]);
        let mut alone = RecordWriter::new();
        alone.reseed();
        assert!(alone.is_empty());
        // A Reseed anywhere but first is not a record this writer makes: refused.
        let mut bad = ByteWriter::new();
        bad.varint(2);
        bad.u8(TAG_REMOVE);
        bad.varint(2);
        bad.u8(TAG_RESEED);
        assert!(decode_record(&bad.buf).is_err());
    }

    #[test]
    fn truncated_payload_is_an_error() {
        let mut w = RecordWriter::new();
        w.samples(1, 3, &[9; 10]);
        w.remove(1);
        let p = w.finish();
        for cut in 0..p.len() {
            assert!(decode_record(&p[..cut]).is_err(), "cut {cut}");
        }
    }
}
