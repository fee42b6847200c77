//! The rrdcached wire protocol, as rrdcached 1.7.2 speaks it, without I/O.
//!
//! A request is one line; [`request::parse`] turns it into a [`request::Command`] or into the
//! error reply rrdcached gives (`-1 Unknown command: X`, `-1 Usage: ...`). Every command is
//! described once, in [`table::COMMANDS`]: dispatch, `HELP`, batch and permission checks all
//! read that table. [`response::Response`] builds the `N message` status line and its `N`
//! following lines. [`run`] is RUN's request and reply (ringlet's own command), [`addr`] a
//! daemon's address. [`pickle`] reads carbon's pickle protocol (data only). The server
//! (sockets, threads, the store) lives elsewhere.

#![forbid(unsafe_code)]

pub mod addr;
pub mod pickle;
pub mod request;
pub mod response;
pub mod run;
pub mod table;
pub mod tokenize;

pub use request::{parse, Command};
pub use response::Response;
pub use table::{find, CommandSpec, COMMANDS};
