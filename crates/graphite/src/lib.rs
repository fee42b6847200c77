//! graphite-web's render language, independent of where the series come from: [`glob`]
//! (Graphite's `*`, `?`, `[...]`, `{a,b}` per path component), [`time`] (`from`/`until` in
//! Graphite's forms), [`tags`] (tagged series' names and `seriesByTag` expressions),
//! [`expr`] (the target language), [`functions`] (graphite-web's render functions, one file
//! per group), [`series`] (a series and `maxDataPoints`' consolidation) and [`format`]
//! (graphite-web's json, csv, raw and pickle bytes); [`carbon`] reads carbon's
//! storage-schemas.conf, storage-aggregation.conf and carbon.conf (their text).
//!
//! A target is evaluated against a [`Ctx`]: the time range, the request's [`Limits`], and a
//! [`Source`] that gives the series a path or a glob names (the daemon's store, in
//! `server::graphite::render`). Nothing here knows the daemon.
//!
//! graphite-web's behaviour is the reference (its source was read, not copied); where this
//! differs, docs/PROTOCOL.md ("Graphite's render API") says so.

#![forbid(unsafe_code)]

pub mod carbon;
pub mod ctx;
pub mod expr;
pub mod format;
pub mod functions;
pub mod glob;
pub mod series;
pub mod tags;
pub mod time;

pub use ctx::{Ctx, Limits, Source};
