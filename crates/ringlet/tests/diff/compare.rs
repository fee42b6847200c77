//! Comparing one step's outputs from both tools: exit status, stderr and stdout byte for byte,
//! except the `info` keys that describe rrdtool's file layout (filename, rrd_version,
//! header_size, rra[i].cur_row); and a small line diff for reproducers.

use super::case::Kind;
use super::exec::Output;

/// Which part of a step's result differed first.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Field {
    Status,
    Stderr,
    Stdout,
}

impl Field {
    pub fn word(self) -> &'static str {
        match self {
            Field::Status => "exit status",
            Field::Stderr => "stderr",
            Field::Stdout => "stdout",
        }
    }
}

/// `info` lines that only describe rrdtool's file layout.
fn is_layout_key(line: &str) -> bool {
    if ["filename = ", "rrd_version = ", "header_size = "]
        .iter()
        .any(|p| line.starts_with(p))
    {
        return true;
    }
    // rra[<n>].cur_row = <n>
    line.strip_prefix("rra[")
        .and_then(|r| r.split_once("].cur_row = "))
        .is_some_and(|(n, _)| n.bytes().all(|b| b.is_ascii_digit()))
}

/// The stdout to compare: `info` without layout keys, everything else as is.
pub fn comparable_stdout(kind: Kind, out: &[u8]) -> Vec<u8> {
    if kind != Kind::Info {
        return out.to_vec();
    }
    let text = String::from_utf8_lossy(out);
    let mut kept = String::with_capacity(text.len());
    for line in text.split_inclusive('\n') {
        if !is_layout_key(line) {
            kept.push_str(line);
        }
    }
    kept.into_bytes()
}

/// The differing fields of one step, empty when the outputs match.
pub fn differences(kind: Kind, a: &Output, b: &Output) -> Vec<Field> {
    let mut d = Vec::new();
    if a.status != b.status {
        d.push(Field::Status);
    }
    if a.stderr != b.stderr {
        d.push(Field::Stderr);
    }
    if comparable_stdout(kind, &a.stdout) != comparable_stdout(kind, &b.stdout) {
        d.push(Field::Stdout);
    }
    d
}

/// A unified-style line diff of `a` (rrdtool, `-`) against `b` (ringlet, `+`), with up to
/// `ctx` lines of context and at most `max_lines` lines of output.
pub fn line_diff(a: &str, b: &str, ctx: usize, max_lines: usize) -> String {
    let lines = |t: &'_ str| -> Vec<String> {
        if t.is_empty() {
            return Vec::new();
        }
        let mut v: Vec<String> = t.split('\n').map(str::to_string).collect();
        if t.ends_with('\n') {
            v.pop();
            if let Some(l) = v.last_mut() {
                l.push('\u{23ce}'); // a visible end of line, so "no newline" shows up
            }
        }
        v
    };
    let (va, vb) = (lines(a), lines(b));
    let la: Vec<&str> = va.iter().map(String::as_str).collect();
    let lb: Vec<&str> = vb.iter().map(String::as_str).collect();
    let ops = diff_ops(&la, &lb);
    // Mark which op indices to show: changes and their context.
    let n = ops.len();
    let mut show = vec![false; n];
    for (i, op) in ops.iter().enumerate() {
        if !matches!(op, Op::Same(_)) {
            let lo = i.saturating_sub(ctx);
            let hi = (i + ctx + 1).min(n);
            show[lo..hi].iter_mut().for_each(|s| *s = true);
        }
    }
    let mut out = String::new();
    let mut lines = 0;
    let mut gap = false;
    for (i, op) in ops.iter().enumerate() {
        if !show[i] {
            gap = true;
            continue;
        }
        if gap || (i == 0 && matches!(op, Op::Same(_))) {
            out.push_str("  ...\n");
            gap = false;
        }
        if lines >= max_lines {
            out.push_str("  ... (diff cut)\n");
            break;
        }
        let (sign, text) = match op {
            Op::Same(t) => (' ', *t),
            Op::Del(t) => ('-', *t),
            Op::Add(t) => ('+', *t),
        };
        out.push_str(&format!("  {sign} {text}\n"));
        lines += 1;
    }
    out
}

enum Op<'a> {
    Same(&'a str),
    Del(&'a str),
    Add(&'a str),
}

/// LCS over the lines between the common prefix and suffix; falls back to "all deleted, all
/// added" when the middle is too large for the quadratic table.
fn diff_ops<'a>(a: &[&'a str], b: &[&'a str]) -> Vec<Op<'a>> {
    let pre = a.iter().zip(b).take_while(|(x, y)| x == y).count();
    let suf = a[pre..]
        .iter()
        .rev()
        .zip(b[pre..].iter().rev())
        .take_while(|(x, y)| x == y)
        .count();
    let (ma, mb) = (&a[pre..a.len() - suf], &b[pre..b.len() - suf]);
    let mut ops: Vec<Op> = a[..pre].iter().map(|t| Op::Same(t)).collect();
    if ma.len() * mb.len() <= 4_000_000 {
        let (n, m) = (ma.len(), mb.len());
        let mut t = vec![0u32; (n + 1) * (m + 1)];
        for i in (0..n).rev() {
            for j in (0..m).rev() {
                t[i * (m + 1) + j] = if ma[i] == mb[j] {
                    t[(i + 1) * (m + 1) + j + 1] + 1
                } else {
                    t[(i + 1) * (m + 1) + j].max(t[i * (m + 1) + j + 1])
                };
            }
        }
        let (mut i, mut j) = (0, 0);
        while i < n || j < m {
            if i < n && j < m && ma[i] == mb[j] {
                ops.push(Op::Same(ma[i]));
                i += 1;
                j += 1;
            } else if i < n && (j == m || t[(i + 1) * (m + 1) + j] >= t[i * (m + 1) + j + 1]) {
                ops.push(Op::Del(ma[i]));
                i += 1;
            } else {
                ops.push(Op::Add(mb[j]));
                j += 1;
            }
        }
    } else {
        ops.extend(ma.iter().map(|t| Op::Del(t)));
        ops.extend(mb.iter().map(|t| Op::Add(t)));
    }
    ops.extend(a[a.len() - suf..].iter().map(|t| Op::Same(t)));
    ops
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn info_layout_keys_are_masked_and_others_kept() {
        let info = b"filename = \"x.rrd\"\nrrd_version = \"0003\"\nstep = 10\nheader_size = 1576\nrra[0].cur_row = 7\nrra[0].rows = 10\n";
        let got = comparable_stdout(Kind::Info, info);
        assert_eq!(got, b"step = 10\nrra[0].rows = 10\n".to_vec());
        assert_eq!(comparable_stdout(Kind::Dump, info), info.to_vec());
    }

    #[test]
    fn line_diff_shows_changed_line_with_context() {
        let d = line_diff("a\nb\nc\nd\ne\nf", "a\nb\nc\nX\ne\nf", 1, 40);
        assert!(d.contains("  - d\n  + X\n"), "{d}");
        assert!(d.contains("    c\n"), "{d}");
        assert!(!d.contains("    a\n"), "{d}");
    }
}
