//! `graph` and `graphv`: drawn by the installed rrdtool's own renderer, on `.rrd` files the
//! store writes for the one command.
//!
//! Each `DEF:vname=FILE:...` names a series; its bytes (`rrd::rrdfile::write`, the file
//! `ringlet export` writes, which rrdtool reads as its own) are written to a private
//! directory (mode 0700, removed afterwards), the DEF is pointed at that copy, and
//! `rrdtool graph` runs on the arguments with its standard output (PNG, SVG, PDF, the
//! `WxH` line, PRINT and GPRINT lines) passed through byte for byte. The image and PRINT
//! lines are therefore rrdtool 1.7.2's for a file that holds what the store holds: the same
//! bytes a graph of the plain file gives (through rrdcached's FETCH, rrdtool picks its
//! archive without the graph's step and may draw from another one). The copies' paths are
//! put back to the names given in whatever rrdtool prints.
//!
//! Where the series are read: the store, the pipe's open store, or the daemon beside the CLI
//! (its `export-file`, over RUN), as every other command. A DEF's `:daemon=` and the
//! command's `--daemon` are taken off (the data comes from the copies). A DEF whose series
//! does not exist gets rrdtool's `opening` error; without rrdtool on PATH, the command says
//! so.

use cli::Outcome;
use std::path::PathBuf;
use std::process::Command;

/// What a graph printed: its standard output's bytes (an image may be among them) and its
/// error.
pub struct Drawn {
    pub stdout: Vec<u8>,
    pub error: Option<String>,
}

impl Drawn {
    fn err(e: impl Into<String>) -> Drawn {
        Drawn {
            stdout: Vec::new(),
            error: Some(e.into()),
        }
    }
}

/// The file name inside a `DEF:` argument: the byte range after `vname=` up to the first
/// colon not escaped by a backslash, and the text it stands for (escapes removed).
fn def_file(arg: &str) -> Option<(usize, usize, String)> {
    let body = arg.strip_prefix("DEF:")?;
    let eq = body.find('=')?;
    let start = 4 + eq + 1;
    let b = arg.as_bytes();
    let mut i = start;
    let mut name = String::new();
    while i < b.len() {
        match b[i] {
            b'\\' if b.get(i + 1) == Some(&b':') => {
                name.push(':');
                i += 2;
            }
            b':' => break,
            _ => {
                let ch = arg[i..].chars().next()?;
                name.push(ch);
                i += ch.len_utf8();
            }
        }
    }
    Some((start, i, name))
}

/// A DEF without its `:daemon=ADDR` option (the copies are read as files).
fn without_daemon(arg: &str) -> String {
    let mut out = String::with_capacity(arg.len());
    let mut rest = arg;
    while let Some(at) = rest.find(":daemon=") {
        out.push_str(&rest[..at]);
        // The address may hold colons (`unix:/path`): it ends at the next option.
        let after = &rest[at + 1..];
        let end = [":step=", ":start=", ":end=", ":reduce=", ":daemon="]
            .iter()
            .filter_map(|o| after.find(o))
            .min()
            .unwrap_or(after.len());
        rest = &after[end..];
    }
    out.push_str(rest);
    out
}

/// A private directory for the copies, removed when dropped.
struct Scratch(PathBuf);

impl Scratch {
    fn new() -> std::io::Result<Scratch> {
        use std::os::unix::fs::DirBuilderExt;
        let base = std::env::temp_dir();
        for n in 0..100u32 {
            let p = base.join(format!(
                "ringlet-graph-{}-{}-{n}",
                std::process::id(),
                crate::now().1
            ));
            match std::fs::DirBuilder::new().mode(0o700).create(&p) {
                Ok(()) => return Ok(Scratch(p)),
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
                Err(e) => return Err(e),
            }
        }
        Err(std::io::Error::other(
            "no private directory for the graph's files",
        ))
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// The files the DEFs of `args` name, each once, in order.
pub fn files(args: &[String]) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for (_, _, name) in args.iter().filter_map(|a| def_file(a)) {
        if !out.contains(&name) {
            out.push(name);
        }
    }
    out
}

/// The bytes of a file from the answer of `export-file` (hex), or its error.
pub fn from_hex(out: Outcome) -> Result<Vec<u8>, String> {
    if let Some(e) = out.error {
        return Err(e);
    }
    let mut bytes = Vec::new();
    cli::unhex(out.stdout.trim_end(), &mut bytes)?;
    Ok(bytes)
}

/// Draw `rrdtool <cmd> args` (`cmd`: graph or graphv); `export` gives the bytes of a
/// series' `.rrd` file, or rrdtool's error for it, where the store is.
pub fn draw(
    cmd: &str,
    args: &[String],
    export: &mut dyn FnMut(&str) -> Result<Vec<u8>, String>,
) -> Drawn {
    let scratch = match Scratch::new() {
        Ok(s) => s,
        Err(e) => return Drawn::err(format!("graph: {e}")),
    };
    // Each file once, however many DEFs name it.
    let mut copies: Vec<(String, PathBuf)> = Vec::new();
    let mut argv = Vec::with_capacity(args.len());
    for a in args {
        let Some((start, end, name)) = def_file(a) else {
            argv.push(a.clone());
            continue;
        };
        let copy = match copies.iter().find(|(n, _)| *n == name) {
            Some((_, p)) => p.clone(),
            None => {
                let bytes = match export(&name) {
                    Ok(b) => b,
                    Err(e) => return Drawn::err(e),
                };
                let p = scratch.0.join(format!("{}.rrd", copies.len()));
                if let Err(e) = std::fs::write(&p, &bytes) {
                    return Drawn::err(format!("graph: {}: {e}", p.display()));
                }
                copies.push((name.clone(), p.clone()));
                p
            }
        };
        let path = copy.to_string_lossy().replace(':', "\\:");
        argv.push(without_daemon(&format!(
            "{}{path}{}",
            &a[..start],
            &a[end..]
        )));
    }
    let run = Command::new("rrdtool").arg(cmd).args(&argv).output();
    let out = match run {
        Ok(o) => o,
        Err(e) => {
            return Drawn::err(format!(
                "{cmd} draws with rrdtool's own renderer, and rrdtool could not be run ({e}): \
                 install rrdtool (Debian: apt install rrdtool)"
            ))
        }
    };
    let back = |bytes: Vec<u8>| -> Vec<u8> {
        let mut v = bytes;
        for (name, p) in &copies {
            v = replace(&v, p.to_string_lossy().as_bytes(), name.as_bytes());
        }
        v
    };
    let stdout = back(out.stdout);
    let stderr = String::from_utf8_lossy(&back(out.stderr)).into_owned();
    let error = (!out.status.success()).then(|| {
        let e = stderr.trim_end_matches('\n');
        e.strip_prefix("ERROR: ").unwrap_or(e).to_string()
    });
    Drawn { stdout, error }
}

/// Run `cmd` through `run` (a command's runner where the store is: the daemon, the pipe's
/// store), or draw it when it is a graph, the files' bytes asked of `run` as `export-file`;
/// the drawing's output goes to `image`, before the outcome's text.
pub fn run_or_draw(
    cmd: &str,
    args: &[String],
    image: &mut Vec<u8>,
    run: &mut dyn FnMut(&str, &[String]) -> Outcome,
) -> Outcome {
    if !is_graph(cmd) {
        return run(cmd, args);
    }
    let d = draw(cmd, args, &mut |name| {
        from_hex(run(cli::EXPORT_FILE, &[name.to_string()]))
    });
    *image = d.stdout;
    Outcome {
        error: d.error,
        ..Outcome::default()
    }
}

/// `hay` with every `from` replaced by `to`.
fn replace(hay: &[u8], from: &[u8], to: &[u8]) -> Vec<u8> {
    if from.is_empty() || hay.len() < from.len() {
        return hay.to_vec();
    }
    let mut out = Vec::with_capacity(hay.len());
    let mut i = 0;
    while i < hay.len() {
        if hay[i..].starts_with(from) {
            out.extend_from_slice(to);
            i += from.len();
        } else {
            out.push(hay[i]);
            i += 1;
        }
    }
    out
}

/// Whether `cmd` is drawn here.
pub fn is_graph(cmd: &str) -> bool {
    matches!(cmd, "graph" | "graphv")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn def_files_are_found_with_escaped_colons() {
        let (s, e, n) = def_file("DEF:a=x.rrd:ds:AVERAGE").unwrap();
        assert_eq!(
            (&"DEF:a=x.rrd:ds:AVERAGE"[s..e], n.as_str()),
            ("x.rrd", "x.rrd")
        );
        let a = "DEF:v=/r/c\\:d.rrd:ds:MAX:step=60";
        let (s, e, n) = def_file(a).unwrap();
        assert_eq!((&a[s..e], n.as_str()), ("/r/c\\:d.rrd", "/r/c:d.rrd"));
        assert!(def_file("CDEF:a=b,2,*").is_none());
        assert!(def_file("LINE1:a#ff0000").is_none());
    }

    #[test]
    fn a_defs_daemon_is_taken_off() {
        assert_eq!(
            without_daemon("DEF:a=x.rrd:ds:AVERAGE:daemon=unix:/s:step=60"),
            "DEF:a=x.rrd:ds:AVERAGE:step=60"
        );
        assert_eq!(
            without_daemon("DEF:a=x.rrd:ds:AVERAGE:step=60"),
            "DEF:a=x.rrd:ds:AVERAGE:step=60"
        );
    }

    #[test]
    fn copies_paths_are_put_back() {
        assert_eq!(
            replace(b"in '/t/0.rrd'", b"/t/0.rrd", b"x.rrd"),
            b"in 'x.rrd'"
        );
    }
}
