//! The one command table: names, where each command may be used, syntax and help text.
//!
//! The order is rrdcached 1.7.2's (`HELP` lists commands in this order; an index into this
//! table is the permission bit of `-P`), followed by TUNE (1.8), DUMP (1.9) and ringlet's own RUN
//! and RUNINPUT (the `ringlet` CLI beside a daemon). The syntax
//! lines and help texts are the protocol's user-visible strings, reproduced so that clients
//! and people see what they know.

/// Where a command may be used.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Ctx {
    /// On a normal connection.
    pub client: bool,
    /// Between `BATCH` and `.`.
    pub batch: bool,
    /// In journal replay (rrdcached's; ringlet keeps its own log and uses this only for
    /// `WROTE`, which is refused everywhere else).
    pub journal: bool,
}

const C: Ctx = Ctx {
    client: true,
    batch: false,
    journal: false,
};
const CB: Ctx = Ctx {
    client: true,
    batch: true,
    journal: false,
};
const CBJ: Ctx = Ctx {
    client: true,
    batch: true,
    journal: true,
};
const J: Ctx = Ctx {
    client: false,
    batch: false,
    journal: true,
};
const B: Ctx = Ctx {
    client: false,
    batch: true,
    journal: false,
};

#[derive(Debug)]
pub struct CommandSpec {
    pub name: &'static str,
    pub ctx: Ctx,
    /// `HELP` and `QUIT` pass every permission check.
    pub always_allowed: bool,
    /// The syntax line (`Usage: <syntax>`); None for `WROTE` and `.`, which are not listed.
    pub syntax: Option<&'static str>,
    /// Lines after the `Usage:` line in `HELP <cmd>`.
    pub help: &'static [&'static str],
    /// Added after 1.7.2 (TUNE, DUMP): accepted, but not in the `HELP` overview.
    pub after_1_7: bool,
}

macro_rules! spec {
    ($name:expr, $ctx:expr, $syntax:expr, [$($help:expr),* $(,)?]) => {
        CommandSpec { name: $name, ctx: $ctx, always_allowed: false, syntax: $syntax, help: &[$($help),*], after_1_7: false }
    };
}

macro_rules! spec_new {
    ($name:expr, $ctx:expr, $syntax:expr, [$($help:expr),* $(,)?]) => {
        CommandSpec { name: $name, ctx: $ctx, always_allowed: false, syntax: $syntax, help: &[$($help),*], after_1_7: true }
    };
}

pub static COMMANDS: &[CommandSpec] = &[
    spec!(
        "UPDATE",
        CBJ,
        Some("UPDATE <filename> <values> [<values> ...]"),
        [
            "",
            "Adds the given file to the internal cache if it is not yet known and",
            "appends the given value(s) to the entry. See the rrdcached(1) manpage",
            "for details.",
            "",
            "Each <values> has the following form:",
            "  <values> = <time>:<value>[:<value>[...]]",
            "See the rrdupdate(1) manpage for details.",
            "",
        ]
    ),
    spec!("WROTE", J, None, []),
    spec!(
        "FLUSH",
        CB,
        Some("FLUSH <filename>"),
        [
            "",
            "Adds the given filename to the head of the update queue and returns",
            "after it has been dequeued.",
            "",
        ]
    ),
    spec!(
        "FLUSHALL",
        C,
        Some("FLUSHALL"),
        [
            "",
            "Triggers writing of all pending updates.  Returns immediately.",
            "",
        ]
    ),
    spec!(
        "PENDING",
        C,
        Some("PENDING <filename>"),
        [
            "",
            "Shows any 'pending' updates for a file, in order.",
            "The updates shown have not yet been written to the underlying RRD file.",
            "",
        ]
    ),
    spec!(
        "FORGET",
        CBJ,
        Some("FORGET <filename>"),
        [
            "",
            "Removes the file completely from the cache.",
            "Any pending updates for the file will be lost.",
            "",
        ]
    ),
    spec!(
        "QUEUE",
        C,
        Some("QUEUE"),
        [
            "",
            "Shows all files in the output queue.",
            "The output is zero or more lines in the following format:",
            "(where <num_vals> is the number of values to be written)",
            "",
            "<num_vals> <filename>",
            "",
        ]
    ),
    spec!(
        "STATS",
        C,
        Some("STATS"),
        [
            "",
            "Returns some performance counters, see the rrdcached(1) manpage for",
            "a description of the values.",
            "",
        ]
    ),
    CommandSpec {
        name: "HELP",
        ctx: C,
        always_allowed: true,
        syntax: Some("HELP [<command>]"),
        help: &[""],
        after_1_7: false,
    },
    spec!(
        "PING",
        C,
        Some("PING"),
        ["", "PING given, PONG returned", ""]
    ),
    spec!(
        "BATCH",
        C,
        Some("BATCH"),
        [
            "",
            "The 'BATCH' command permits the client to initiate a bulk load",
            "   of commands to rrdcached.",
            "",
            "Usage:",
            "",
            "    client: BATCH",
            "    server: 0 Go ahead.  End with dot '.' on its own line.",
            "    client: command #1",
            "    client: command #2",
            "    client: ... and so on",
            "    client: .",
            "    server: 2 errors",
            "    server: 7 message for command #7",
            "    server: 9 message for command #9",
            "",
            "For more information, consult the rrdcached(1) documentation.",
            "",
        ]
    ),
    spec!(".", B, None, []),
    spec!(
        "FETCH",
        C,
        Some("FETCH <file> <CF> [<start> [<end>] [<column>...]]"),
        [
            "",
            "The 'FETCH' can be used by the client to retrieve values from an RRD file.",
            "",
        ]
    ),
    spec!(
        "FETCHBIN",
        C,
        Some("FETCHBIN <file> <CF> [<start> [<end>] [<column>...]]"),
        [
            "",
            "The 'FETCHBIN' can be used by the client to retrieve values from an RRD file.",
            "",
        ]
    ),
    spec!(
        "INFO",
        C,
        Some("INFO <filename>"),
        [
            "",
            "The INFO command retrieves information about a specified RRD file.",
            "This is returned in standard rrdinfo format, a sequence of lines",
            "with the format <keyname> = <value>",
            "Note that this is the data as of the last update of the RRD file itself,",
            "not the last time data was received via rrdcached, so there may be pending",
            "updates in the queue.  If this bothers you, then first run a FLUSH.",
            "",
        ]
    ),
    spec!(
        "FIRST",
        C,
        Some("FIRST <filename> <rra index>"),
        [
            "",
            "The FIRST command retrieves the first data time for a specified RRA in",
            "an RRD file.",
            "",
        ]
    ),
    spec!(
        "LAST",
        C,
        Some("LAST <filename>"),
        [
            "",
            "The LAST command retrieves the last update time for a specified RRD file.",
            "Note that this is the time of the last update of the RRD file itself, not",
            "the last time data was received via rrdcached, so there may be pending",
            "updates in the queue.  If this bothers you, then first run a FLUSH.",
            "",
        ]
    ),
    spec!(
        "CREATE",
        CB,
        Some("CREATE <filename> [-b start] [-s step] [-O] <DS definitions> <RRA definitions>"),
        [
            "",
            "The CREATE command will create an RRD file, overwriting any existing file",
            "unless the -O option is given or rrdcached was started with the -O option.",
            "The start parameter needs to be in seconds since 1/1/70 (AT-style syntax is",
            "not acceptable) and the step is in seconds (default is 300).",
            "The DS and RRA definitions are as for the 'rrdtool create' command.",
            "",
        ]
    ),
    spec!(
        "LIST",
        C,
        Some("LIST [RECURSIVE] /[<path>]"),
        [
            "",
            "This command lists the RRD files in the storage base directory (/).",
            "Note that this is the list of RRD files on storage as of the last update.",
            "There may be pending updates in the queue, so a FLUSH may have to be run",
            "beforehand.",
            "When invoked with 'LIST RECURSIVE /<path>' it will behave similarly to",
            "'ls -R' but limited to rrd files (listing all the rrd bases in the subtree",
            " of <path>, skipping empty directories).",
            "",
        ]
    ),
    spec!(
        "SUSPEND",
        CB,
        Some("SUSPEND <filename>"),
        [
            "",
            "The SUSPEND command will suspend writing to an RRD file. While a file is",
            "suspended, all metrics for it are cached in memory until RESUME is called",
            "for that file or RESUMEALL is called.",
            "",
        ]
    ),
    spec!(
        "RESUME",
        CB,
        Some("RESUME <filename>"),
        [
            "",
            "The RESUME command will resume writing to an RRD file previously suspended",
            "by SUSPEND or SUSPENDALL.",
            "",
        ]
    ),
    spec!(
        "SUSPENDALL",
        CB,
        Some("SUSPENDALL"),
        [
            "",
            "The SUSPENDALL command will suspend writing to all RRD files. While a file",
            "is suspended, all metrics for it are cached in memory until RESUME is called",
            "for that file or RESUMEALL is called.",
            "",
        ]
    ),
    spec!(
        "RESUMEALL",
        CB,
        Some("RESUMEALL"),
        [
            "",
            "The RESUMEALL command will resume writing to all RRD files previously suspended.",
            "",
        ]
    ),
    CommandSpec {
        name: "QUIT",
        ctx: CB,
        always_allowed: true,
        syntax: Some("QUIT"),
        help: &["", "Disconnect from rrdcached.", ""],
        after_1_7: false,
    },
    spec_new!(
        "TUNE",
        C,
        Some("TUNE <filename> [options]"),
        [
            "",
            "The TUNE command changes parameters of an RRD file, as 'rrdtool tune' does.",
            "",
        ]
    ),
    spec_new!(
        "DUMP",
        C,
        Some("DUMP <filename> [-h none|xsd|dtd]"),
        [
            "",
            "The DUMP command prints an RRD file as XML, as 'rrdtool dump' does.",
            "",
        ]
    ),
    spec_new!(
        "RUN",
        C,
        Some("RUN <seconds> <microseconds> <command> [<argument> ...]"),
        [
            "",
            "ringlet's own: runs a `ringlet` (rrdtool) command on the daemon's store, at",
            "the client's time, as `ringlet <command>` would without a daemon. The reply",
            "holds its standard output (lines starting with o), its error (e) and a file",
            "to write (p: the path, f: its lines); the status line gives their lengths.",
            "",
        ]
    ),
    spec_new!(
        "RUNINPUT",
        C,
        Some("RUNINPUT <hex>"),
        [
            "",
            "ringlet's own: adds bytes (in hex) to the input of the next RUN on this",
            "connection (the XML of `restore`).",
            "",
        ]
    ),
];

/// Look a command up by name, ignoring case as rrdcached does.
pub fn find(name: &str) -> Option<&'static CommandSpec> {
    COMMANDS.iter().find(|c| c.name.eq_ignore_ascii_case(name))
}

/// Index of a command in the table: its permission bit.
pub fn index_of(spec: &CommandSpec) -> usize {
    COMMANDS
        .iter()
        .position(|c| std::ptr::eq(c, spec))
        .expect("spec comes from COMMANDS")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lookup_ignores_case() {
        assert_eq!(find("update").map(|c| c.name), Some("UPDATE"));
        assert_eq!(find("FetchBin").map(|c| c.name), Some("FETCHBIN"));
        assert!(find("FOO").is_none());
    }

    #[test]
    fn permission_bits_follow_rrdcached_order() {
        let names: Vec<_> = COMMANDS.iter().map(|c| c.name).collect();
        assert_eq!(&names[..4], ["UPDATE", "WROTE", "FLUSH", "FLUSHALL"]);
        assert_eq!(index_of(find("QUIT").unwrap()), 23);
    }
}
