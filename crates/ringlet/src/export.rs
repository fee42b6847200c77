//! `ringlet export OUTDIR [NAME-GLOB ...]`: real `.rrd` files, byte for byte what rrdtool
//! 1.7.2 holds for the same updates (`rrd::rrdfile::write`), one per series, at
//! `OUTDIR/<name>`, so a user can go back to rrdcached or hand files to any tool.
//!
//! Runs where the store is: in the daemon that holds it (or `--daemon`/`$RRDCACHED_ADDRESS`),
//! else on the store itself. Each file is written beside its final name, synced and renamed,
//! so a file that exists is whole: `--resume` skips the ones an interrupted run wrote.
//! Existing files are never overwritten without `--force`.
//!
//! `ringlet export phpfina OUTDIR` (and `phptimeseries`) writes the emoncms views' feed files
//! back as plain files (`<id>.meta`, `<id>.dat`; `feed_<id>.MYD`), byte for byte what the
//! view shows, so an emoncms user can leave: stop the daemon (or emoncms's writers), export,
//! point emoncms at OUTDIR.

use cli::client::Client;
use cli::{Ctx, Outcome};
use std::cell::RefCell;
use std::io::Write;
use std::path::{Path, PathBuf};

pub const USAGE: &str = "\
usage: ringlet [--store DIR] export [--force|-f] [--resume|-r] [--daemon|-d ADDR]
                               OUTDIR [NAME-GLOB ...]
       ringlet [--store DIR] export [-f|-r] [-d ADDR] phpfina|phptimeseries OUTDIR

Write every series of the store (or those whose names match a glob: * any characters,
/ too; ? one; [a-z] one of a set) as a real .rrd file at OUTDIR/<name>, byte for byte
what rrdtool 1.7.2 would hold for the same updates. Use it to go back to rrdcached or
to hand files to any tool that reads .rrd files.

Beside a running `ringlet serve`, the series are read through the daemon (found as for
every command: --daemon, $RRDCACHED_ADDRESS, or the address the store records), with
every value it has accepted.

`export phpfina OUTDIR` writes the feeds of the PHPFina view (serve --phpfina) as plain
<id>.meta and <id>.dat files in OUTDIR, byte for byte what the view shows (`export
phptimeseries OUTDIR`: feed_<id>.MYD), so emoncms can be pointed at OUTDIR and the
daemon left. Stop emoncms's writers first for files of one moment. (To export series
to a directory named phpfina, write ./phpfina.)

  -f, --force    overwrite files that exist
  -r, --resume   skip files that exist (an interrupted export: each file is written
                 whole, then renamed into place)
  -q, --quiet    no progress bar
";

/// Where the commands run (export's and import's): the daemon that holds the store, else
/// the store itself.
pub(crate) enum Source {
    Daemon(Client),
    Store(Box<engine::Store>),
}

impl Source {
    /// The daemon named or recorded for `dir` (see [`crate::daemon_for`]), else the store,
    /// opened here (`existing`: only a store that is there already).
    pub(crate) fn open(
        daemon: Option<String>,
        dir: &Path,
        existing: bool,
    ) -> Result<Source, String> {
        match crate::daemon_for(daemon, dir) {
            crate::Daemon::At(_, c) => Ok(Source::Daemon(c)),
            crate::Daemon::Unreachable(_, e) => Err(e),
            crate::Daemon::None if existing && !dir.exists() => {
                Err(format!("no store at {}", dir.display()))
            }
            crate::Daemon::None => cli::store::open(dir).map(|s| Source::Store(Box::new(s))),
        }
    }

    /// Close the store opened here (committed, and marked closed cleanly: the next
    /// command's open reads no log); nothing to do for a daemon.
    pub(crate) fn close(self) -> Result<(), String> {
        match self {
            Source::Daemon(_) => Ok(()),
            Source::Store(st) => (*st).close().map_err(|e| e.to_string()),
        }
    }

    /// Run `cmd` there (a `restore`'s XML file is read on this side, beside a daemon).
    pub(crate) fn run(&mut self, dir: &Path, cmd: &str, args: &[String]) -> Outcome {
        match self {
            Source::Daemon(c) => c.run(cmd, args, crate::now()),
            Source::Store(st) => {
                let cell = RefCell::new(&mut **st);
                let ctx = Ctx {
                    shared: Some(&cell),
                    commit_each: false,
                    ..Ctx::local(dir, crate::now())
                };
                cli::dispatch(cmd, args, &ctx)
            }
        }
    }
}

pub(crate) fn fail(msg: &str) -> i32 {
    eprintln!("ERROR: {msg}");
    1
}

/// Run `ringlet export` with the arguments after `export`; the exit status.
pub fn run(args: &[String], dir: &Path) -> i32 {
    let takes = crate::opts::Takes {
        write_flags: true,
        daemon: true,
        prefix: false,
        moves: false,
    };
    let o = match crate::opts::parse_or_usage(args, takes, USAGE) {
        Ok(o) => o,
        Err(status) => return status,
    };
    let (force, resume, quiet, daemon, pos) = (o.force, o.resume, o.quiet, o.daemon, o.pos);
    let Some((out, globs)) = pos.split_first() else {
        eprint!("{USAGE}");
        return 2;
    };
    let feeds = match (out.as_str(), globs) {
        ("phpfina", [to]) => Some((server::feeds::PHPFINA, to)),
        ("phptimeseries", [to]) => Some((server::feeds::PHPTIMESERIES, to)),
        _ => None,
    };
    let mut src = match Source::open(daemon, dir, true) {
        Ok(s) => s,
        Err(e) => return fail(&e),
    };
    if let Some((prefix, to)) = feeds {
        let o = FeedExport {
            prefix,
            out: PathBuf::from(to),
            force,
            resume,
            quiet,
        };
        let status = o.run(&mut src, dir);
        if let Err(e) = src.close() {
            return fail(&e);
        }
        return status;
    }
    let out = PathBuf::from(out);
    let listed = src.run(dir, cli::EXPORT_NAMES, globs);
    if let Some(e) = listed.error {
        return fail(&e);
    }
    let names: Vec<String> = listed.stdout.lines().map(String::from).collect();
    if names.is_empty() {
        return fail(&if globs.is_empty() {
            "the store holds no series".to_string()
        } else {
            format!("no series matches {}", globs.join(" "))
        });
    }
    let target = |n: &str| out.join(n.trim_start_matches('/'));
    let existing: Vec<&String> = names.iter().filter(|n| target(n).exists()).collect();
    if !existing.is_empty() && !force && !resume {
        return fail(&format!(
            "{} of the {} files exist already (first: {}): --resume skips them, --force overwrites them",
            existing.len(),
            names.len(),
            target(existing[0]).display()
        ));
    }
    let bar = progress(
        quiet,
        names.len() as u64,
        "{spinner} exporting [{bar:30}] {pos}/{len} series, {msg} ({eta} left)",
    );
    let (mut written, mut skipped, mut bytes, mut failed) = (0u64, 0u64, 0u64, 0u64);
    for name in &names {
        let path = target(name);
        if resume && path.exists() {
            skipped += 1;
            bar.inc(1);
            continue;
        }
        let got = src.run(dir, cli::EXPORT_FILE, std::slice::from_ref(name));
        let res = match got.error {
            Some(e) => Err(e),
            None => unhex(got.stdout.trim_end())
                .and_then(|b| write_whole(&path, &b).map(|()| b.len() as u64)),
        };
        match res {
            Ok(n) => {
                written += 1;
                bytes += n;
                bar.set_message(human(bytes));
            }
            Err(e) => {
                failed += 1;
                bar.suspend(|| eprintln!("ERROR: {name}: {e}"));
            }
        }
        bar.inc(1);
    }
    bar.finish_and_clear();
    if let Err(e) = src.close() {
        return fail(&e);
    }
    let mut line = format!(
        "exported {written} series ({}) to {}",
        human(bytes),
        out.display()
    );
    if skipped > 0 {
        line += &format!(", {skipped} skipped (already there)");
    }
    if failed > 0 {
        line += &format!(", {failed} failed");
    }
    println!("{line}");
    i32::from(failed > 0)
}

/// `export phpfina|phptimeseries OUTDIR`: the blobs under `prefix` as plain files.
struct FeedExport {
    prefix: &'static str,
    out: PathBuf,
    force: bool,
    resume: bool,
    quiet: bool,
}

impl FeedExport {
    fn run(&self, src: &mut Source, dir: &Path) -> i32 {
        let listed = src.run(dir, cli::EXPORT_BLOBS, &[self.prefix.to_string()]);
        if let Some(e) = listed.error {
            return fail(&e);
        }
        let files: Vec<(String, u64)> = listed
            .stdout
            .lines()
            .filter_map(|l| {
                let (n, len) = l.rsplit_once(' ')?;
                Some((n.to_string(), len.parse().ok()?))
            })
            .collect();
        let what = self.prefix.trim_end_matches('/');
        if files.is_empty() {
            return fail(&format!(
                "the store holds no {what} feeds (they are written through serve --{what})"
            ));
        }
        let target = |n: &str| self.out.join(n.strip_prefix(self.prefix).unwrap_or(n));
        let existing = files.iter().filter(|(n, _)| target(n).exists()).count();
        if existing > 0 && !self.force && !self.resume {
            return fail(&format!(
                "{existing} of the {} files exist already in {}: --resume skips them, --force overwrites them",
                files.len(),
                self.out.display()
            ));
        }
        let total: u64 = files.iter().map(|f| f.1).sum();
        let bar = progress(
            self.quiet,
            total,
            "{spinner} exporting [{bar:30}] {bytes}/{total_bytes}, {msg} ({eta} left)",
        );
        let (mut written, mut skipped, mut failed, mut bytes) = (0u64, 0u64, 0u64, 0u64);
        for (name, len) in &files {
            let path = target(name);
            bar.set_message(name.strip_prefix(self.prefix).unwrap_or(name).to_string());
            if self.resume && path.exists() {
                skipped += 1;
                bar.inc(*len);
                continue;
            }
            match self.read(src, dir, name, *len, &bar) {
                Ok(b) => match write_whole(&path, &b) {
                    Ok(()) => {
                        written += 1;
                        bytes += b.len() as u64;
                    }
                    Err(e) => {
                        failed += 1;
                        bar.suspend(|| eprintln!("ERROR: {e}"));
                    }
                },
                Err(e) => {
                    failed += 1;
                    bar.suspend(|| eprintln!("ERROR: {name}: {e}"));
                }
            }
        }
        bar.finish_and_clear();
        let mut line = format!(
            "exported {written} {what} files ({}) to {}",
            human(bytes),
            self.out.display()
        );
        if skipped > 0 {
            line += &format!(", {skipped} skipped (already there)");
        }
        if failed > 0 {
            line += &format!(", {failed} failed");
        }
        println!("{line}");
        i32::from(failed > 0)
    }

    /// Blob `name`'s bytes, a piece at a time (its length as listed; a blob that grew since
    /// is read to its end as it is now).
    fn read(
        &self,
        src: &mut Source,
        dir: &Path,
        name: &str,
        len: u64,
        bar: &indicatif::ProgressBar,
    ) -> Result<Vec<u8>, String> {
        let mut b = Vec::with_capacity(len as usize);
        loop {
            let args = [
                name.to_string(),
                b.len().to_string(),
                cli::EXPORT_BLOB_PIECE.to_string(),
            ];
            let got = src.run(dir, cli::EXPORT_BLOB, &args);
            if let Some(e) = got.error {
                return Err(e);
            }
            let before = b.len();
            cli::unhex(got.stdout.trim_end(), &mut b)?;
            let n = (b.len() - before) as u64;
            bar.inc(n.min(len.saturating_sub(before as u64)));
            if n < cli::EXPORT_BLOB_PIECE {
                return Ok(b);
            }
        }
    }
}

/// A progress bar of `len` in `template`'s style (hidden with `quiet`): export's and
/// import's.
pub(crate) fn progress(quiet: bool, len: u64, template: &str) -> indicatif::ProgressBar {
    let bar = if quiet {
        indicatif::ProgressBar::hidden()
    } else {
        indicatif::ProgressBar::new(len)
    };
    bar.set_style(
        indicatif::ProgressStyle::with_template(template)
            .expect("a valid template")
            .progress_chars("=> "),
    );
    bar
}

fn human(b: u64) -> String {
    match b {
        b if b >= 1 << 30 => format!("{:.1} GiB", b as f64 / (1u64 << 30) as f64),
        b if b >= 1 << 20 => format!("{:.1} MiB", b as f64 / (1u64 << 20) as f64),
        b if b >= 1 << 10 => format!("{:.1} KiB", b as f64 / 1024.0),
        b => format!("{b} bytes"),
    }
}

fn unhex(h: &str) -> Result<Vec<u8>, String> {
    let mut out = Vec::with_capacity(h.len() / 2);
    cli::unhex(h, &mut out)?;
    Ok(out)
}

/// Write `bytes` at `path` whole: beside it, synced, renamed into place.
fn write_whole(path: &Path, bytes: &[u8]) -> Result<(), String> {
    let err = |e: std::io::Error| format!("{}: {e}", path.display());
    if let Some(d) = path.parent() {
        std::fs::create_dir_all(d).map_err(err)?;
    }
    let mut tmp = path.as_os_str().to_os_string();
    tmp.push(".ringlet-export-tmp");
    let tmp = PathBuf::from(tmp);
    let r = (|| {
        let mut f = std::fs::File::create(&tmp)?;
        f.write_all(bytes)?;
        f.sync_all()?;
        std::fs::rename(&tmp, path)
    })();
    if r.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    r.map_err(err)
}
