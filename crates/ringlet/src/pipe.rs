//! Pipe mode, `ringlet -`: rrdtool's "REMOTE CONTROL". Commands are read from stdin one line
//! at a time, with the same arguments as on the command line; after each one the output, then
//! `OK u:<user> s:<system> r:<real>` (running totals in seconds), or `ERROR: <message>`, is
//! written to stdout. `quit` or end of input ends. The store stays open and locked for the
//! whole session; every command commits before its `OK`. rrdtool's file-system commands
//! (`cd`, `mkdir`, `pwd`, `ls`) are refused: names are store names.

use crate::dispatch;
use std::cell::RefCell;
use std::io::{BufRead, Write};
use std::path::Path;
use std::time::Instant;

/// Split a line into arguments: whitespace separates, `"..."` and `'...'` group (quotes
/// removed).
pub fn split_args(line: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur = String::new();
    let mut in_arg = false;
    let mut quote: Option<char> = None;
    for c in line.chars() {
        match quote {
            Some(q) if c == q => quote = None,
            Some(_) => cur.push(c),
            None if c == '"' || c == '\'' => {
                quote = Some(c);
                in_arg = true;
            }
            None if c.is_whitespace() => {
                if in_arg {
                    out.push(std::mem::take(&mut cur));
                    in_arg = false;
                }
            }
            None => {
                cur.push(c);
                in_arg = true;
            }
        }
    }
    if in_arg {
        out.push(cur);
    }
    out
}

/// User and system CPU seconds of this process (from /proc; 0 where unavailable).
fn cpu_times() -> (f64, f64) {
    let Ok(stat) = std::fs::read_to_string("/proc/self/stat") else {
        return (0.0, 0.0);
    };
    // Fields after the parenthesised command name; utime and stime are fields 14 and 15.
    let Some(rest) = stat.rsplit_once(')').map(|(_, r)| r) else {
        return (0.0, 0.0);
    };
    let f: Vec<&str> = rest.split_whitespace().collect();
    let tick = |i: usize| f.get(i).and_then(|v| v.parse::<f64>().ok()).unwrap_or(0.0) / 100.0;
    (tick(11), tick(12))
}

/// Run pipe mode on the store in `dir`; the process exit status.
pub fn run(dir: &Path) -> i32 {
    let started = Instant::now();
    let store = match crate::store::open(dir) {
        Ok(s) => RefCell::new(s),
        Err(e) => {
            eprintln!("ERROR: {e}");
            return 1;
        }
    };
    let stdin = std::io::stdin();
    let mut stdout = std::io::stdout().lock();
    for line in stdin.lock().lines() {
        let Ok(line) = line else { break };
        let args = split_args(&line);
        let out = match args.split_first() {
            Some((cmd, _)) if cmd == "quit" => break,
            Some((cmd, _)) if matches!(cmd.as_str(), "cd" | "mkdir" | "pwd" | "ls") => {
                crate::commands::Outcome {
                    stdout: String::new(),
                    error: Some(format!("ringlet does not support '{cmd}' in pipe mode")),
                }
            }
            Some((cmd, rest)) => dispatch(cmd, rest, dir, Some(&store)),
            None => dispatch("help", &[], dir, Some(&store)),
        };
        let mut text = out.stdout;
        match out.error {
            Some(e) => text.push_str(&format!("ERROR: {e}\n")),
            None => {
                let (u, s) = cpu_times();
                let r = started.elapsed().as_secs_f64();
                text.push_str(&format!("OK u:{u:1.2} s:{s:1.2} r:{r:1.2}\n"));
            }
        }
        if stdout.write_all(text.as_bytes()).is_err() || stdout.flush().is_err() {
            break;
        }
    }
    match store.into_inner().close() {
        Ok(()) => 0,
        Err(e) => {
            eprintln!("ERROR: {e}");
            1
        }
    }
}

#[cfg(test)]
mod tests {
    use super::split_args;

    #[test]
    fn quotes_group_and_disappear() {
        assert_eq!(
            split_args(r#"update a.rrd "1700009300:1:1"  'x y' N:2"#),
            ["update", "a.rrd", "1700009300:1:1", "x y", "N:2"]
        );
        assert!(split_args("   ").is_empty());
    }
}
