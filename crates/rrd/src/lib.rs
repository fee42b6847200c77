//! Pure RRD semantics, as rrdtool 1.7.2 computes them.
//!
//! This crate owns the meaning of an RRD: its schema ([`schema`]), its live state and archive
//! rows ([`state`]), how an update string becomes consolidated rows ([`update`]), how a fetch
//! picks and aligns an archive ([`fetch`]), and the text forms rrdtool prints and reads
//! ([`info`], [`dump`], [`restore`], [`xport`]). It does no I/O and reads no clock: the caller
//! passes "now" in. Everything here is checked against the real `rrdtool` binary by the
//! differential tests in `crates/ringlet/tests/`.

#![forbid(unsafe_code)]

pub mod budget;
pub mod create;
pub mod dump;
pub mod error;
pub mod fetch;
pub mod fmt;
pub mod fx;
pub mod info;
pub mod num;
pub mod parsetime;
pub mod prefill;
pub mod restore;
pub mod rows;
pub mod rpn;
pub mod rrdfile;
pub mod schema;
pub mod state;
pub mod update;
pub mod xport;

pub use budget::{Budget, Over};
pub use error::RrdError;
pub use rows::Rows;
pub use schema::{Cf, DsDef, DsType, RraDef, Schema};
pub use state::{CdpPrep, HwState, PdpPrep, RraData, Rrd};
pub use update::{ApplyError, RowWrite, Sample};
