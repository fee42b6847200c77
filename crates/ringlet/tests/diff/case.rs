//! One differential case as data: the ordered command lines to give both `rrdtool` and
//! `ringlet`, what each is meant to do (so the generator can be checked against rrdtool alone),
//! and a shell-pasteable rendering for reproducers.

use std::collections::BTreeSet;

/// The rrdtool subcommand a step runs; also the bucket of the per-command summary.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Kind {
    Create,
    Update,
    Updatev,
    Fetch,
    Info,
    First,
    Last,
    LastUpdate,
    Xport,
    Dump,
    Restore,
    Tune,
}

impl Kind {
    pub const ALL: [Kind; 12] = [
        Kind::Create,
        Kind::Update,
        Kind::Updatev,
        Kind::Fetch,
        Kind::Info,
        Kind::First,
        Kind::Last,
        Kind::LastUpdate,
        Kind::Xport,
        Kind::Dump,
        Kind::Restore,
        Kind::Tune,
    ];

    /// The subcommand word, as typed after `rrdtool`.
    pub fn word(self) -> &'static str {
        match self {
            Kind::Create => "create",
            Kind::Update => "update",
            Kind::Updatev => "updatev",
            Kind::Fetch => "fetch",
            Kind::Info => "info",
            Kind::First => "first",
            Kind::Last => "last",
            Kind::LastUpdate => "lastupdate",
            Kind::Xport => "xport",
            Kind::Dump => "dump",
            Kind::Restore => "restore",
            Kind::Tune => "tune",
        }
    }

    pub fn from_word(w: &str) -> Option<Kind> {
        Kind::ALL.iter().copied().find(|k| k.word() == w)
    }
}

/// Where a step's standard input comes from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Stdin {
    Empty,
    /// The stdout that *rrdtool* printed for an earlier step (e.g. its dump), fed to both tools.
    RrdtoolStdoutOf(usize),
}

/// What the generator meant a step to do; checked against rrdtool by the generator test.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Expect {
    Ok,
    /// Exit status 1 with this text somewhere in stderr.
    Err(&'static str),
    /// Either; the step probes an edge whose outcome the generator does not model.
    Any,
}

#[derive(Clone, Debug)]
pub struct Step {
    pub kind: Kind,
    /// The arguments after the program name (and after `--store DIR` for ringlet).
    pub args: Vec<String>,
    pub stdin: Stdin,
    pub expect: Expect,
}

#[derive(Clone, Debug)]
pub struct Case {
    pub seed: u64,
    pub steps: Vec<Step>,
    /// Tags of what the case exercises ("wrap32", "subsecond", "err:time", ...), for coverage.
    pub features: BTreeSet<&'static str>,
}

impl Step {
    /// The step as a shell line for `prog` (`rrdtool` or `ringlet --store DIR`).
    pub fn shell(&self, prog: &str, steps: &[Step]) -> String {
        let mut line = String::new();
        if let Stdin::RrdtoolStdoutOf(i) = self.stdin {
            line.push_str(&format!("rrdtool {} | ", join_quoted(&steps[i].args)));
        }
        line.push_str(prog);
        line.push(' ');
        line.push_str(&join_quoted(&self.args));
        line
    }
}

fn join_quoted(args: &[String]) -> String {
    args.iter().map(|a| quote(a)).collect::<Vec<_>>().join(" ")
}

/// Single-quote an argument for sh when it holds anything but plain characters.
pub fn quote(a: &str) -> String {
    let plain = !a.is_empty()
        && a.chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_.:,=/+@%".contains(c));
    if plain {
        a.to_string()
    } else {
        format!("'{}'", a.replace('\'', r"'\''"))
    }
}
