//! A daemon's STATS (ringlet serve's or rrdcached's), for `ringlet stats`: its usage text and
//! the query; the binary reads the command's options.

use crate::config::parse_addr;
use crate::log::strerror;
use std::time::Duration;

pub const USAGE: &str = "\
usage: ringlet [--store DIR] stats [-d|--daemon ADDR]

Print the STATS of a running daemon (ringlet serve or rrdcached), one `Key: value` per
line. ADDR: unix:/path, /path, host, host:port, [v6]:port; default $RRDCACHED_ADDRESS,
else the daemon that holds the store (the address it records in STORE/daemon), else
unix:/tmp/rrdcached.sock. ringlet serve adds what it wrote to disk after rrdcached's nine
keys (docs/PROTOCOL.md).
";

/// Send STATS to `addr`; the reply's lines.
pub fn query(addr: &str) -> Result<Vec<String>, String> {
    let parsed = parse_addr(addr)?;
    let timeout = Some(Duration::from_secs(10));
    let s = cli::client::connect_stream(&parsed, timeout)
        .map_err(|e| format!("cannot connect to {addr}: {}", strerror(&e)))?;
    let (n, msg, lines) = cli::client::Client::on(addr, s).request("STATS")?;
    if n < 0 {
        return Err(format!("{addr}: {msg}"));
    }
    Ok(lines
        .into_iter()
        .map(|l| l.trim_end_matches('\r').to_string())
        .collect())
}
