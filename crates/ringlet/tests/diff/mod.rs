//! The machinery of the differential tests (`tests/differential.rs`): a seeded generator of
//! rrdtool command sequences, a runner that gives them to `rrdtool` and to `ringlet`, and the
//! comparison and reporting of their outputs.

pub mod case;
pub mod compare;
pub mod exec;
pub mod gen;
pub mod hw_gen;
pub mod minimize;
pub mod query_gen;
pub mod report;
pub mod rng;
pub mod schema_gen;
pub mod source_gen;
pub mod tune_gen;
pub mod update_gen;
