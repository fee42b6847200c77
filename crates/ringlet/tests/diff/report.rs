//! What a failing differential run prints: a per-command summary, and for a failing case a
//! minimal reproducer (its seed, how to rerun it, the commands up to the first difference, and
//! a line diff of that difference).

use super::case::{Case, Kind};
use super::compare::{comparable_stdout, line_diff, Field};
use super::exec::Output;
use std::collections::BTreeMap;
use std::fmt::Write;

/// The outcome of one case.
pub struct CaseResult {
    pub seed: u64,
    /// (step index, kind, differing fields) for every compared step that differed.
    pub mismatches: Vec<(usize, Kind, Vec<Field>)>,
    /// Compared steps per kind: (matched, mismatched).
    pub per_kind: BTreeMap<Kind, (u64, u64)>,
    /// The reproducer of the first difference, if any.
    pub reproducer: Option<String>,
    /// One line on the first difference: the command and the first differing output line.
    pub headline: Option<String>,
}

/// The first line where `a` and `b` differ, as `"rrdtool: ... | ringlet: ..."`.
fn first_differing_line(a: &[u8], b: &[u8]) -> String {
    let (ta, tb) = (text(a), text(b));
    let (mut la, mut lb) = (ta.lines(), tb.lines());
    loop {
        match (la.next(), lb.next()) {
            (None, None) => return "(same lines; line endings differ)".to_string(),
            (x, y) if x == y => continue,
            (x, y) => {
                let cut = |l: Option<&str>| {
                    l.map_or("<none>".to_string(), |l| l.chars().take(90).collect())
                };
                return format!("rrdtool: {} | ringlet: {}", cut(x), cut(y));
            }
        }
    }
}

/// The one-line summary of a step's difference.
pub fn headline(
    case: &Case,
    at: usize,
    fields: &[Field],
    rrd: &[Output],
    ours: &[Output],
) -> String {
    let step = &case.steps[at];
    let (a, b) = (&rrd[at], &ours[at]);
    let what = match fields.first() {
        Some(Field::Status) => format!(
            "exit {} vs {}; {}",
            a.status,
            b.status,
            first_differing_line(&a.stderr, &b.stderr)
        ),
        Some(Field::Stderr) => first_differing_line(&a.stderr, &b.stderr),
        _ => first_differing_line(
            &comparable_stdout(step.kind, &a.stdout),
            &comparable_stdout(step.kind, &b.stdout),
        ),
    };
    format!(
        "seed {} cmd {} {}: {}",
        case.seed,
        at + 1,
        step.kind.word(),
        what
    )
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// The reproducer for the first difference of `case`, at step `at`.
pub fn reproducer(
    case: &Case,
    at: usize,
    fields: &[Field],
    rrd: &[Output],
    ours: &[Output],
) -> String {
    let step = &case.steps[at];
    let mut s = String::new();
    let _ = writeln!(
        s,
        "=== seed {}: first difference at command {} ({}): {}",
        case.seed,
        at + 1,
        step.kind.word(),
        fields
            .iter()
            .map(|f| f.word())
            .collect::<Vec<_>>()
            .join(", ")
    );
    let _ = writeln!(
        s,
        "rerun: DIFF_SEED={} DIFF_CASES=1 cargo test -p ringlet --test differential -- --nocapture",
        case.seed
    );
    let _ = writeln!(
        s,
        "features: {}",
        case.features.iter().copied().collect::<Vec<_>>().join(" ")
    );
    let _ = writeln!(
        s,
        "commands (TZ=UTC LC_ALL=C, empty dir; ringlet: `ringlet --store DIR` for `rrdtool`):"
    );
    for (i, st) in case.steps.iter().enumerate().take(at + 1) {
        let mark = if i == at { '>' } else { ' ' };
        let flag = if rrd[i].status != 0 {
            "   # exit 1"
        } else {
            ""
        };
        let _ = writeln!(
            s,
            "{mark}{:3} {}{flag}",
            i + 1,
            st.shell("rrdtool", &case.steps)
        );
    }
    let (a, b) = (&rrd[at], &ours[at]);
    let _ = writeln!(s, "exit status: rrdtool {}, ringlet {}", a.status, b.status);
    if a.stderr != b.stderr {
        let _ = writeln!(s, "stderr (- rrdtool, + ringlet):");
        s.push_str(&line_diff(&text(&a.stderr), &text(&b.stderr), 2, 12));
    }
    let (sa, sb) = (
        comparable_stdout(step.kind, &a.stdout),
        comparable_stdout(step.kind, &b.stdout),
    );
    if sa != sb {
        let _ = writeln!(s, "stdout (- rrdtool, + ringlet):");
        s.push_str(&line_diff(&text(&sa), &text(&sb), 3, 40));
    }
    s
}

/// The per-command table of a run.
pub fn summary(results: &[CaseResult]) -> String {
    let mut total: BTreeMap<Kind, (u64, u64)> = BTreeMap::new();
    let mut first: BTreeMap<Kind, u64> = BTreeMap::new();
    for r in results {
        for (k, (m, x)) in &r.per_kind {
            let e = total.entry(*k).or_default();
            e.0 += m;
            e.1 += x;
        }
        if let Some((_, k, _)) = r.mismatches.first() {
            *first.entry(*k).or_default() += 1;
        }
    }
    let mut s = String::new();
    let _ = writeln!(
        s,
        "{:<11} {:>8} {:>10} {:>22}",
        "command", "matches", "mismatches", "cases failing first here"
    );
    for (k, (m, x)) in &total {
        let _ = writeln!(
            s,
            "{:<11} {:>8} {:>10} {:>22}",
            k.word(),
            m,
            x,
            first.get(k).copied().unwrap_or(0)
        );
    }
    s
}
