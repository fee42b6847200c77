//! From a request line to a [`Command`], or to the error reply rrdcached gives for it.
//!
//! Only syntax is checked here (arity, `LIST`'s leading slash). Whether a command is allowed
//! on this socket or inside a batch, whether the file exists, and what it does are the
//! server's business.

use crate::response::Response;
use crate::table::{find, CommandSpec};
use crate::tokenize::{fields, split, Fields};
use std::borrow::Cow;

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Command {
    Update {
        file: String,
        values: Vec<String>,
    },
    Wrote {
        file: String,
    },
    Flush {
        file: String,
    },
    FlushAll,
    Pending {
        file: String,
    },
    Forget {
        file: String,
    },
    Queue,
    Stats,
    Help {
        topic: Option<String>,
    },
    Ping,
    Batch,
    BatchEnd,
    Fetch {
        file: String,
        cf: String,
        start: Option<String>,
        end: Option<String>,
        columns: Vec<String>,
        binary: bool,
    },
    Info {
        file: String,
    },
    First {
        file: String,
        rra: String,
    },
    Last {
        file: String,
    },
    Create {
        file: String,
        args: Vec<String>,
    },
    List {
        recursive: bool,
        path: String,
    },
    Suspend {
        file: String,
    },
    Resume {
        file: String,
    },
    SuspendAll,
    ResumeAll,
    Quit,
    Tune {
        file: String,
        args: Vec<String>,
    },
    Dump {
        file: String,
        header: Option<String>,
    },
    /// ringlet's own: run a `ringlet` CLI command in the daemon (the CLI beside it).
    Run {
        /// The client's clock: seconds and microseconds, as given.
        now: String,
        usec: String,
        cmd: String,
        args: Vec<String>,
    },
    /// ringlet's own: a piece of the next RUN's input (`restore`'s XML), in hex.
    RunInput {
        hex: String,
    },
}

/// `-1 Usage: <syntax>`.
pub fn usage(spec: &CommandSpec) -> Response {
    Response::err(format!("Usage: {}", spec.syntax.unwrap_or(spec.name)))
}

/// UPDATE's fields, borrowed from the line (without its `\n`; a trailing `\r` is ignored):
/// the file, and the values in order. None for a line that is not an UPDATE naming a file.
/// The one parser of UPDATE: the daemon's connections take it this way, without a copy;
/// [`parse`] builds [`Command::Update`] from it.
pub fn update(line: &str) -> Option<(Cow<'_, str>, Fields<'_>)> {
    let line = line.strip_suffix('\r').unwrap_or(line);
    let mut f = split(line);
    if !f.next()?.eq_ignore_ascii_case("UPDATE") {
        return None;
    }
    let file = f.next()?;
    Some((file, f))
}

/// Parse one request line (without its `\n`; a trailing `\r` is ignored). On success also
/// returns the command's table entry, for context and permission checks.
pub fn parse(line: &str) -> Result<(&'static CommandSpec, Command), Response> {
    let line = line.strip_suffix('\r').unwrap_or(line);
    let mut f = fields(line).into_iter();
    let name = f.next().unwrap_or_default();
    let spec = find(&name).ok_or_else(|| Response::err(format!("Unknown command: {name}")))?;
    let rest: Vec<String> = f.collect();
    let file = |i: usize| rest.get(i).cloned().ok_or_else(|| usage(spec));
    let cmd = match spec.name {
        "UPDATE" => {
            let (file, values) = update(line).ok_or_else(|| usage(spec))?;
            Command::Update {
                file: file.into_owned(),
                values: values.map(Cow::into_owned).collect(),
            }
        }
        "WROTE" => Command::Wrote { file: file(0)? },
        "FLUSH" => Command::Flush { file: file(0)? },
        "FLUSHALL" => Command::FlushAll,
        "PENDING" => Command::Pending { file: file(0)? },
        "FORGET" => Command::Forget { file: file(0)? },
        "QUEUE" => Command::Queue,
        "STATS" => Command::Stats,
        "HELP" => Command::Help {
            topic: rest.first().cloned(),
        },
        "PING" => Command::Ping,
        "BATCH" => Command::Batch,
        "." => Command::BatchEnd,
        "FETCH" | "FETCHBIN" => Command::Fetch {
            file: file(0)?,
            cf: file(1)?,
            start: rest.get(2).cloned(),
            end: rest.get(3).cloned(),
            columns: rest.get(4..).map(<[String]>::to_vec).unwrap_or_default(),
            binary: spec.name == "FETCHBIN",
        },
        "INFO" => Command::Info { file: file(0)? },
        "FIRST" => Command::First {
            file: file(0)?,
            rra: file(1)?,
        },
        "LAST" => Command::Last { file: file(0)? },
        "CREATE" => Command::Create {
            file: file(0)?,
            args: rest[1..].to_vec(),
        },
        "LIST" => {
            let (recursive, path) = match rest.first().map(String::as_str) {
                Some("RECURSIVE") => (true, rest.get(1).cloned()),
                _ => (false, rest.first().cloned()),
            };
            match path {
                Some(p) if p.starts_with('/') => Command::List { recursive, path: p },
                _ => return Err(usage(spec)),
            }
        }
        "SUSPEND" => Command::Suspend { file: file(0)? },
        "RESUME" => Command::Resume { file: file(0)? },
        "SUSPENDALL" => Command::SuspendAll,
        "RESUMEALL" => Command::ResumeAll,
        "QUIT" => Command::Quit,
        "TUNE" => Command::Tune {
            file: file(0)?,
            args: rest[1..].to_vec(),
        },
        "DUMP" => {
            let header = match (rest.get(1).map(String::as_str), rest.get(2)) {
                (None, _) => None,
                (Some("-h" | "--header"), Some(h)) => Some(h.clone()),
                _ => return Err(usage(spec)),
            };
            Command::Dump {
                file: file(0)?,
                header,
            }
        }
        "RUN" => {
            if rest.len() < 3 {
                return Err(usage(spec));
            }
            Command::Run {
                now: rest[0].clone(),
                usec: rest[1].clone(),
                cmd: rest[2].clone(),
                args: rest[3..].to_vec(),
            }
        }
        "RUNINPUT" => Command::RunInput { hex: file(0)? },
        other => unreachable!("command {other} in the table but not parsed"),
    };
    Ok((spec, cmd))
}

/// `HELP` or `HELP <cmd>`. The overview lists rrdcached 1.7.2's commands, byte for byte as
/// 1.7.2 does; `HELP TUNE` and `HELP DUMP` (1.8/1.9 additions ringlet accepts) still work.
pub fn help(topic: Option<&str>) -> Response {
    if let Some(spec) = topic.and_then(find).filter(|s| s.syntax.is_some()) {
        let mut lines = vec![format!("Usage: {}", spec.syntax.unwrap_or_default())];
        lines.extend(spec.help.iter().map(|s| s.to_string()));
        return Response::lines(format!("Help for {}", spec.name), &lines);
    }
    let lines: Vec<&str> = crate::table::COMMANDS
        .iter()
        .filter(|c| !c.after_1_7)
        .filter_map(|c| c.syntax)
        .collect();
    Response::lines("Command overview", &lines)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn err_bytes(line: &str) -> Vec<u8> {
        parse(line).expect_err("should be refused").to_bytes()
    }

    #[test]
    fn unknown_commands_echo_the_token() {
        assert_eq!(err_bytes("FOO bar"), b"-1 Unknown command: FOO\n");
        assert_eq!(err_bytes(""), b"-1 Unknown command: \n");
        assert_eq!(err_bytes(" PING"), b"-1 Unknown command: \n");
    }

    #[test]
    fn missing_arguments_give_usage() {
        assert_eq!(
            err_bytes("UPDATE"),
            b"-1 Usage: UPDATE <filename> <values> [<values> ...]\n"
        );
        assert_eq!(
            err_bytes("FETCH x.rrd"),
            b"-1 Usage: FETCH <file> <CF> [<start> [<end>] [<column>...]]\n"
        );
        assert_eq!(
            err_bytes("FIRST x.rrd"),
            b"-1 Usage: FIRST <filename> <rra index>\n"
        );
        assert_eq!(
            err_bytes("LIST x"),
            b"-1 Usage: LIST [RECURSIVE] /[<path>]\n"
        );
        assert_eq!(err_bytes("RESUME"), b"-1 Usage: RESUME <filename>\n");
    }

    #[test]
    fn update_keeps_values_in_order() {
        let (_, c) = parse("update a.rrd 1:2 3:4\r").unwrap();
        assert_eq!(
            c,
            Command::Update {
                file: "a.rrd".into(),
                values: vec!["1:2".into(), "3:4".into()]
            }
        );
    }

    #[test]
    fn update_without_values_is_not_a_usage_error() {
        assert!(matches!(
            parse("UPDATE x.rrd"),
            Ok((_, Command::Update { .. }))
        ));
    }

    #[test]
    fn fetch_takes_optional_range_and_columns() {
        let (_, c) = parse("FETCH b.rrd AVERAGE 100 200 y x").unwrap();
        assert_eq!(
            c,
            Command::Fetch {
                file: "b.rrd".into(),
                cf: "AVERAGE".into(),
                start: Some("100".into()),
                end: Some("200".into()),
                columns: vec!["y".into(), "x".into()],
                binary: false
            }
        );
    }

    #[test]
    fn help_matches_rrdcached() {
        let h = help(Some("PING")).to_bytes();
        assert_eq!(
            h,
            b"4 Help for PING\nUsage: PING\n\nPING given, PONG returned\n\n"
        );
        let o = String::from_utf8(help(None).to_bytes()).unwrap();
        assert!(o.starts_with(
            "22 Command overview\nUPDATE <filename> <values> [<values> ...]\nFLUSH <filename>\n"
        ));
        assert!(
            o.ends_with("RESUMEALL\nQUIT\n"),
            "1.7.2's list: no TUNE, DUMP"
        );
        assert_eq!(help(Some("tune")).message, "Help for TUNE");
        assert_eq!(help(Some("DUMP")).message, "Help for DUMP");
        assert_eq!(
            help(Some("WROTE")).status,
            22,
            "WROTE has no help; the overview is shown"
        );
        assert_eq!(
            help(Some("HELP")).to_bytes(),
            b"2 Help for HELP\nUsage: HELP [<command>]\n\n"
        );
    }
}
