//! Every on-disk byte of a ringlet store: framing, checksums, encodings. No I/O.
//!
//! The engine decides *when* and *where* bytes are written; this crate decides *what* they
//! are, and docs/FORMAT.md describes the same bytes. Modules: [`crc32c`] (the checksum),
//! [`bytes`] (little-endian fields; varints and bit streams are the `bitio` crate's), [`decimal`] and
//! [`sample`] (the per-series sample compression), [`rrdbin`] (one `Rrd` as bytes) with
//! [`rows`] (its archive rows), [`frame`] (log superblock and record frames), [`record`] (a
//! commit record's payload) with [`block`] (a commit's samples, commit-wide) and [`checkpoint`] (checkpoint files); [`whisper`] reads other stores' files for
//! `ringlet import`; [`emoncms`] is emoncms's feed files' layout.

#![forbid(unsafe_code)]

pub mod block;
pub mod bytes;
pub mod checkpoint;
pub mod crc32c;
pub mod decimal;
pub mod emoncms;
pub mod frame;
pub mod rc;
pub mod record;
pub mod rows;
pub mod rrdbin;
pub mod sample;
pub mod segment;
pub mod whisper;

pub use bytes::DecodeError;
