//! `ringlet stats`: ask a running daemon (ringlet serve or rrdcached) for its STATS and print
//! them, one `Key: value` line each.
//!
//! The daemon is found as librrd finds it: `-d`/`--daemon ADDR`, else `$RRDCACHED_ADDRESS`,
//! else `unix:/tmp/rrdcached.sock`.

use crate::config::{parse_addr, DEFAULT_SOCKET};
use crate::strerror;
use std::io::Write;
use std::time::Duration;

pub const USAGE: &str = "\
usage: ringlet stats [-d|--daemon ADDR]

Print the STATS of a running daemon (ringlet serve or rrdcached), one `Key: value` per
line. ADDR: unix:/path, /path, host, host:port, [v6]:port; default $RRDCACHED_ADDRESS,
else unix:/tmp/rrdcached.sock. ringlet serve adds what it wrote to disk after rrdcached's
nine keys (docs/PROTOCOL.md).
";

/// Run `ringlet stats` with the arguments after `stats`. Returns the exit code.
pub fn stats(args: &[String]) -> i32 {
    let mut addr: Option<String> = None;
    let mut it = args.iter();
    while let Some(a) = it.next() {
        match a.as_str() {
            "-h" | "--help" => {
                print!("{USAGE}");
                return 0;
            }
            "-d" | "--daemon" => match it.next() {
                Some(v) => addr = Some(v.clone()),
                None => return fail(&format!("option requires an argument -- '{a}'")),
            },
            _ => match a.strip_prefix("--daemon=") {
                Some(v) => addr = Some(v.to_string()),
                None => {
                    eprint!("{USAGE}");
                    return 2;
                }
            },
        }
    }
    let addr = addr
        .or_else(|| std::env::var("RRDCACHED_ADDRESS").ok())
        .filter(|a| !a.is_empty())
        .unwrap_or_else(|| format!("unix:{DEFAULT_SOCKET}"));
    match query(&addr) {
        Ok(lines) => {
            let mut out = std::io::stdout().lock();
            for l in lines {
                let _ = writeln!(out, "{l}");
            }
            0
        }
        Err(e) => fail(&e),
    }
}

fn fail(msg: &str) -> i32 {
    eprintln!("ERROR: {msg}");
    1
}

/// Send STATS to `addr`; the reply's lines.
pub fn query(addr: &str) -> Result<Vec<String>, String> {
    let parsed = parse_addr(addr)?;
    let timeout = Some(Duration::from_secs(10));
    let s = crate::remote::connect_stream(&parsed, timeout)
        .map_err(|e| format!("cannot connect to {addr}: {}", strerror(&e)))?;
    let (n, msg, lines) = crate::remote::Client::on(addr, s).request("STATS")?;
    if n < 0 {
        return Err(format!("{addr}: {msg}"));
    }
    Ok(lines
        .into_iter()
        .map(|l| l.trim_end_matches('\r').to_string())
        .collect())
}
