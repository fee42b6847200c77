//! The daemon's process on its machine, with nothing of RRDs, the store or a protocol in it:
//! `log` (log lines, C's strerror texts, fail points for tests), `proc` (the process's disk
//! writes and resident memory), `sys` (fork, signals,
//! privileges, detaching a stale mount, the allocator), `gate` (connection pools, every
//! listener's accept loop, shares of a byte budget), `httpd` (one HTTP/1.1 listener: limits,
//! timeouts, shedding slow clients; the routes are the caller's), `beneath` (files under a
//! directory reached without following links). `crates/server` builds the daemon on them.

pub mod beneath;
pub mod gate;
pub mod httpd;
pub mod log;
pub mod proc;
pub mod sys;
