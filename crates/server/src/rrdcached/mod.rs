//! rrdcached's protocol: what each command does on a ringlet store, and the reply it gives;
//! [`conn`] reads the requests of one connection. Commands by family, as proto's table lists
//! them: [`write`] (UPDATE, FLUSH, FORGET, CREATE, PENDING, QUEUE, SUSPEND...), [`fetch`]
//! (FETCH, INFO, FIRST, LAST, DUMP: through [`crate::read`]), [`list`] (LIST), STATS
//! ([`crate::stats`]); RUN is [`crate::remote`]'s.
//!
//! Replies follow rrdcached 1.7.2 byte for byte where clients parse them. Where ringlet
//! behaves differently on purpose (values are checked when they arrive, FORGET keeps data,
//! reads never wait for a write) docs/PROTOCOL.md says so.

pub mod conn;
pub mod fetch;
pub mod list;
pub mod write;

use crate::daemon::Daemon;
use proto::{Command, Response};
use std::borrow::Cow;
use std::sync::atomic::Ordering;

/// What the connection does after a command.
pub enum Reply {
    Send(Response),
    /// Close without a reply (QUIT).
    Close,
}

/// Handle one command. `now` is the request time (frozen at BATCH start inside a batch).
pub fn handle(d: &Daemon, cmd: Command, now: i64) -> Reply {
    Reply::Send(match cmd {
        Command::Quit => return Reply::Close,
        Command::Ping => Response::ok("PONG"),
        Command::Help { topic } => proto::request::help(topic.as_deref()),
        Command::Update { file, values } => {
            d.stats.updates_received.fetch_add(1, Ordering::Relaxed);
            match write::update(d, &file, values.into_iter().map(Cow::Owned)) {
                Ok(n) => Response::ok(format!("errors, enqueued {n} value(s).")),
                Err(r) => r,
            }
        }
        Command::Flush { file } => write::flush(d, &file),
        Command::FlushAll => match d.commit_all() {
            Ok(_) => Response::ok("Started flush."),
            Err(e) => Response::err(e),
        },
        Command::Pending { file } => write::pending(d, &file),
        Command::Forget { file } => write::forget(d, &file),
        Command::Queue => write::queue(d),
        Command::Stats => Response::lines("Statistics follow", &crate::stats::lines(d)),
        Command::Fetch {
            file,
            cf,
            start,
            end,
            columns,
            binary,
        } => {
            // Damaged rows are an error, never unknown values a client takes for a gap.
            let (r, damage) = rrd::rows::watch(|| {
                fetch::fetch(
                    d,
                    &file,
                    &cf,
                    start.as_deref(),
                    end.as_deref(),
                    &columns,
                    binary,
                    now,
                )
            });
            match damage {
                Some(dm) => Response::err(dm.message(&file)),
                None => r,
            }
        }
        Command::Info { file } => fetch::info(d, &file),
        Command::First { file, rra } => fetch::first(d, &file, &rra),
        Command::Last { file } => fetch::last(d, &file),
        Command::Create { file, args } => write::create(d, &file, &args, now),
        Command::List { recursive, path } => list::list(d, recursive, &path),
        Command::Suspend { file } => write::suspend(d, &file, true),
        Command::Resume { file } => write::suspend(d, &file, false),
        Command::SuspendAll | Command::ResumeAll => {
            let all = matches!(cmd, Command::SuspendAll);
            let mut inner = d.lock();
            let names = inner.names();
            let mut n = 0;
            for name in names {
                let changed = inner.suspend(&name, all);
                n += usize::from(changed);
            }
            Response::ok(if all {
                format!("{n} rrds suspend")
            } else {
                format!("{n} rrds resumed")
            })
        }
        Command::Dump { file, header } => fetch::dump(d, &file, header.as_deref()),
        Command::Tune { .. } => Response::err("RRD Error: TUNE is not supported by ringlet yet"),
        // Served by the connection, which holds the input (conn.rs); not in a batch.
        Command::Run { .. } | Command::RunInput { .. } => Response::err("Can't use 'RUN' here."),
        // Context checks in the connection refuse these before they get here.
        Command::Wrote { .. } => Response::err("Can't use 'WROTE' here."),
        Command::Batch | Command::BatchEnd => Response::err("Can't use 'BATCH' here."),
    })
}

/// C `strtol(s, NULL, 0)`: optional sign, `0x` hex, leading-0 octal, junk after ignored; an
/// out-of-range number is clamped (C's LONG_MAX/LONG_MIN with ERANGE).
pub(crate) fn strtol(s: &str) -> i64 {
    strtol_checked(s).unwrap_or_else(|clamped| clamped)
}

/// [`strtol`], with `Err(clamped)` where C sets ERANGE.
pub(crate) fn strtol_checked(s: &str) -> Result<i64, i64> {
    let r = rrd::num::strtol(s, 0);
    if r.erange {
        Err(r.value)
    } else {
        Ok(r.value)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strtol_reads_like_c() {
        assert_eq!(strtol("1795212900"), 1795212900);
        assert_eq!(strtol("-1h"), -1);
        assert_eq!(strtol("0x10"), 16);
        assert_eq!(strtol("010"), 8);
        assert_eq!(strtol("junk"), 0);
        assert_eq!(strtol_checked("-9223372036854775808"), Ok(i64::MIN));
        assert_eq!(strtol_checked("9223372036854775808"), Err(i64::MAX));
        assert_eq!(strtol_checked("-99999999999999999999999"), Err(i64::MIN));
        assert_eq!(strtol("0xffffffffffffffffffffffff"), i64::MAX);
    }
}
