//! `ringlet import whisper DIR`: a tree of whisper files (carbon's) as series of the store;
//! `ringlet import phpfina DIR`: emoncms's PHPFina feeds (`<id>.meta`, `<id>.dat`) likewise;
//! `ringlet import rrd DIR`: a tree of rrdtool's `.rrd` files (rrdcached's `-b`), each the
//! series of its path under DIR, read by `rrd::rrdfile`, stored by one `restore`, then read
//! back by `dump` and compared with the file's dump (every field, every row), so a file is
//! counted imported only once the store holds it exactly. The files are left where they are,
//! or with `--move` (what `ringlet migrate` runs) moved into `<store>/imported/` once a commit
//! holds their series, a placeholder left at each path as the daemon leaves one for a file it
//! finds under `-b` (on a store: committed a batch at a time, then moved; beside a daemon
//! whose `-b` is DIR: the daemon moves each file after its commit).
//!
//! Each `a/b/c.wsp` under DIR becomes the series of the Graphite path `a.b.c` (`a/b/c.rrd`,
//! as `--carbon` names it; `--prefix p.` puts it under `p`; carbon's tagged series,
//! `_tagged/<hash>/<hash>/<name>.wsp`, are the tagged series of that name): one GAUGE `value`, an archive a
//! whisper archive (its seconds a point and its point count; the CF from the file's
//! aggregation method, as `--carbon` maps carbon's rules; xff `1 - xFilesFactor`), every
//! point in its slot's row, and the consolidation in progress of each coarser archive taken
//! from the finest one's newest points, so that points sent later continue it. A file is
//! read whole and checked (header, archive table, sizes) before anything is stored; a series
//! is stored by one `restore` (all or nothing), then read back and compared with the file
//! (the count of points of the finest archive and a sample of their values). Runs where the
//! store is: in the daemon that holds it, else on the store. `--resume` skips series that
//! exist; `--force` replaces them.
//!
//! The files are read by `codec::whisper`; feed `<id>` is the series of `emoncms.<id>`
//! (`--prefix` replaces `emoncms`), one archive long enough for every point and at least a
//! year.

use crate::export::{fail, Source};
use codec::whisper::{parse, parse_phpfina, Whisper};
use std::path::{Path, PathBuf};

pub const USAGE: &str = "\
usage: ringlet [--store DIR] import whisper|phpfina|rrd [--prefix PREFIX] [--force|-f]
                               [--resume|-r] [--move] [--daemon|-d ADDR] [--quiet|-q] DIR

Import a tree of whisper files (carbon's, under its LOCAL_DATA_DIR): DIR/a/b/c.wsp becomes
the series of the Graphite path a.b.c (the store name a/b/c.rrd, as `ringlet serve --carbon`
names it), with one archive per whisper archive and every point kept. `phpfina` reads
emoncms's PHPFina feeds (ID.meta and ID.dat) in DIR as the series emoncms.ID. Each file is checked
before it is stored, stored whole or not at all, and read back and compared. `rrd` reads
rrdtool's .rrd files: DIR/a/b.rrd becomes the series a/b.rrd (P/a/b.rrd with --prefix P),
read back and compared with the file (every field and row, as `rrdtool dump` prints
them); the files stay where they are (a daemon with -b DIR names them the same), or with
--move go into STORE/imported/ (their paths kept) once the store holds them durably, a
placeholder taking each path, as `ringlet serve -b DIR` does with a file it finds there.
Runs in the daemon that holds the store if there is one (found as for every command), else
on the store.

  --prefix P     put every path under P (P.a.b.c; PHPFina: P.ID, default emoncms)
  -f, --force    replace series that exist
  -r, --resume   skip series that exist (an interrupted import)
  --move         (rrd) move each file aside once stored: DIR is the -b of the daemon that
                 will serve it (beside a running daemon, its own -b)
  -q, --quiet    no progress bar
";

/// The RRD of a whisper file: every point in its slot's row (rrdtool labels a row by its
/// end: the slot's start plus its span); `now` for a file without points.
pub fn to_rrd(w: &Whisper, now: i64) -> rrd::Rrd {
    use rrd::Cf;
    use server::carbon::{graphite_schema, Method, Retention};
    // whisper's aggregation types: 1 average, 2 sum, 3 last, 4 max, 5 min, 6 avg_zero,
    // 7 absmax, 8 absmin.
    let method = match w.method {
        2 => Method::Sum,
        3 => Method::Last,
        4 | 7 => Method::Max,
        5 | 8 => Method::Min,
        _ => Method::Average,
    };
    let ret: Vec<Retention> = w
        .archives
        .iter()
        .map(|a| Retention {
            precision: a.spp,
            points: a.points,
        })
        .collect();
    let schema = graphite_schema(&ret, method, f64::from(w.xff));
    let cf = schema.rra.last().map_or(Cf::Average, |r| r.cf);
    let step = schema.step as i64;
    let newest = w
        .archives
        .iter()
        .filter_map(|a| a.data.keys().next_back().map(|&t| t + a.spp as i64))
        .max();
    // The last update: the end of the finest archive's newest slot (or of any archive's).
    let last = w.archives[0]
        .data
        .keys()
        .next_back()
        .map(|&t| t + step)
        .or(newest)
        .unwrap_or(now - now.rem_euclid(step));
    let mut r = rrd::Rrd::new(schema, last);
    for (i, a) in w.archives.iter().enumerate() {
        let span = a.spp as i64;
        for (&t, &v) in &a.data {
            // Sums and coarse slots still filling are left to the consolidation below.
            if let Some(row) = r.ring_row(i, t + span) {
                r.rra[i].rows.set(row, v);
            }
        }
        if i == 0 {
            continue;
        }
        // The coarse row in progress: the finest archive's points since that row began.
        let end = r.rra_end(i);
        let (mut sum, mut n, mut unknown) = (f64::NAN, 0u64, 0u64);
        let mut t = end;
        while t < last {
            match w.archives[0].data.get(&t) {
                Some(&v) => {
                    sum = match (cf, sum.is_nan()) {
                        (_, true) => v,
                        (Cf::Average, false) => sum + v,
                        (Cf::Min, false) => sum.min(v),
                        (Cf::Max, false) => sum.max(v),
                        _ => v,
                    };
                    n += 1;
                }
                None => unknown += 1,
            }
            t += step;
        }
        let c = &mut r.cdp[i];
        c.val = if n == 0 { rrd::num::DNAN } else { sum };
        c.unkn_pdp_cnt = unknown;
    }
    // The sum method's coarse archives hold sums: as averages, a row is the sum over its
    // points (the method `--carbon` stores as AVERAGE).
    if w.method == 2 {
        for (i, a) in w.archives.iter().enumerate().skip(1) {
            let k = (a.spp / w.archives[0].spp) as f64;
            for (&t, &v) in &a.data {
                if let Some(row) = r.ring_row(i, t + a.spp as i64) {
                    r.rra[i].rows.set(row, v / k);
                }
            }
        }
    }
    r
}

/// Every `.wsp` file under `dir`, sorted, relative.
fn walk(dir: &Path, rel: &Path, out: &mut Vec<PathBuf>) -> std::io::Result<()> {
    walk_ext(dir, rel, "wsp", out)
}

/// Every file ending in `.ext` under `dir`, sorted, relative.
fn walk_ext(dir: &Path, rel: &Path, ext: &str, out: &mut Vec<PathBuf>) -> std::io::Result<()> {
    let mut entries: Vec<_> = std::fs::read_dir(dir.join(rel))?.flatten().collect();
    entries.sort_by_key(|e| e.file_name());
    for e in entries {
        let ty = e.file_type()?;
        let r = rel.join(e.file_name());
        if ty.is_dir() {
            walk_ext(dir, &r, ext, out)?;
        } else if ty.is_file() && r.extension().is_some_and(|x| x == ext) {
            out.push(r);
        }
    }
    Ok(())
}

/// The number of `.rrd` files under `dir`, and their bytes.
pub(crate) fn rrd_files(dir: &Path) -> (u64, u64) {
    let mut files = Vec::new();
    let _ = walk_ext(dir, Path::new(""), "rrd", &mut files);
    let bytes = files
        .iter()
        .filter_map(|f| std::fs::metadata(dir.join(f)).ok())
        .map(|m| m.len())
        .sum();
    (files.len() as u64, bytes)
}

/// Run `ringlet import` with the arguments after `import`; the exit status.
pub fn run(args: &[String], dir: &Path) -> i32 {
    let takes = crate::opts::Takes {
        write_flags: true,
        daemon: true,
        prefix: true,
        moves: true,
    };
    let o = match crate::opts::parse_or_usage(args, takes, USAGE) {
        Ok(o) => o,
        Err(status) => return status,
    };
    let [kind, tree] = o.pos.as_slice() else {
        eprint!("{USAGE}");
        return 2;
    };
    let kind = match kind.as_str() {
        "whisper" => Kind::Whisper,
        "phpfina" => Kind::Phpfina,
        "rrd" => Kind::Rrd,
        _ => return fail(&format!("cannot import '{kind}' (whisper, phpfina, rrd)")),
    };
    if o.moves && kind != Kind::Rrd {
        return fail("--move is for rrd files");
    }
    if o.moves && o.prefix.is_some() {
        return fail("--move keeps each file's path as its series' name: no --prefix");
    }
    let mut src = match Source::open(o.daemon.clone(), dir, false) {
        Ok(s) => s,
        Err(e) => return fail(&e),
    };
    let job = Job {
        kind,
        tree: PathBuf::from(tree),
        prefix: o.prefix.clone(),
        force: o.force,
        resume: o.resume,
        quiet: o.quiet,
        moves: o.moves.then(|| crate::placeholder_address(dir)),
    };
    let done = import(&job, &mut src, dir);
    // Closed cleanly also after a failure: what was imported is committed either way.
    let closed = src.close();
    match (done, closed) {
        (Ok(n), Ok(())) => {
            println!("{n}");
            i32::from(n.failed > 0)
        }
        (Err(e), _) | (Ok(_), Err(e)) => fail(&e),
    }
}

#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    Whisper,
    Phpfina,
    Rrd,
}

/// One import: what and how.
pub(crate) struct Job {
    pub kind: Kind,
    pub tree: PathBuf,
    pub prefix: Option<String>,
    pub force: bool,
    pub resume: bool,
    pub quiet: bool,
    /// `--move`: each file moved aside once stored, a placeholder naming this address (the
    /// daemon that will serve the store) left at its path.
    pub moves: Option<String>,
}

/// What an import did.
#[derive(Debug, Default, Clone, Copy)]
pub(crate) struct Counts {
    pub done: u64,
    pub skipped: u64,
    pub failed: u64,
    pub moved: u64,
    pub files: u64,
}

impl std::fmt::Display for Counts {
    fn fmt(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        write!(
            f,
            "{} imported, {} skipped (there already), {} failed, of {} files",
            self.done, self.skipped, self.failed, self.files
        )?;
        if self.moved > 0 {
            write!(f, "; {} moved aside", self.moved)?;
        }
        Ok(())
    }
}

/// Files read but not yet committed (a store's import commits a batch at a time, then moves
/// the batch's files aside): their paths and series, and the bytes they took.
#[derive(Default)]
struct Pending {
    files: Vec<(PathBuf, String)>,
    bytes: u64,
}

/// A batch is committed past this many file bytes (or files): the store holds the series in
/// memory until then.
const BATCH_BYTES: u64 = 64 << 20;
const BATCH_FILES: usize = 4096;

/// Run `job` on `src` (the daemon, or the store at `dir`). Err: nothing could be done (no
/// such tree, no files, a failed commit).
pub(crate) fn import(job: &Job, src: &mut Source, dir: &Path) -> Result<Counts, String> {
    let (tree, kind) = (&job.tree, job.kind);
    let mut prefix = job
        .prefix
        .as_deref()
        .map(|p| p.trim_end_matches('.').to_string())
        .unwrap_or_default();
    let mut files = Vec::new();
    let (listed, what) = match kind {
        Kind::Rrd => (walk_ext(tree, Path::new(""), "rrd", &mut files), ".rrd"),
        Kind::Phpfina => (walk_ext(tree, Path::new(""), "meta", &mut files), ".meta"),
        Kind::Whisper => (walk(tree, Path::new(""), &mut files), ".wsp"),
    };
    listed.map_err(|e| format!("{}: {e}", tree.display()))?;
    if files.is_empty() {
        return Err(format!("no {what} files under {}", tree.display()));
    }
    if kind == Kind::Phpfina && prefix.is_empty() {
        prefix = "emoncms".into();
    }
    let bar = if job.quiet {
        indicatif::ProgressBar::hidden()
    } else {
        indicatif::ProgressBar::new(files.len() as u64)
    };
    bar.set_style(
        indicatif::ProgressStyle::with_template(
            "{spinner} importing [{bar:30}] {pos}/{len} files, {msg} ({eta} left)",
        )
        .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar()),
    );
    // Where placeholders say the series live (with --move, on a store).
    let places = job.moves.as_ref().map(|addr| {
        // As the daemon will name it: the path as given (STORE=), made absolute.
        let abs_dir = std::path::absolute(dir).unwrap_or_else(|_| dir.to_path_buf());
        server::placeholder::Places::new(&abs_dir, addr.clone())
    });
    let abs_tree = std::fs::canonicalize(tree).unwrap_or_else(|_| tree.clone());
    let tmp = std::env::temp_dir().join(format!("ringlet-import-{}.xml", std::process::id()));
    let mut n = Counts {
        files: files.len() as u64,
        ..Counts::default()
    };
    let mut pending = Pending::default();
    let mut left_in_place = false;
    // Beside a daemon, --move: the files are taken in by the daemon from its -b, a batch at
    // a time (adopt), each compared while the store is locked.
    let adopting =
        kind == Kind::Rrd && job.moves.is_some() && !job.force && matches!(src, Source::Daemon(_));
    let mut batch = Batch::default();
    for f in &files {
        bar.inc(1);
        let named = match kind {
            Kind::Rrd => rrd_name(f, &prefix),
            _ => server::carbon::name_of(&graphite_path(f, &prefix, kind == Kind::Phpfina)),
        };
        let name = match named {
            Ok(n) => n,
            Err(e) => {
                bar.suspend(|| eprintln!("{}: {e}", f.display()));
                n.failed += 1;
                continue;
            }
        };
        let path = tree.join(f);
        // A placeholder: a daemon (or an earlier import) has this file's series already.
        if kind == Kind::Rrd && is_placeholder(&path) {
            n.skipped += 1;
            continue;
        }
        if adopting {
            batch.bytes += std::fs::metadata(&path).map(|m| m.len()).unwrap_or(0);
            batch.files.push((f.clone(), name));
            if batch.files.len() >= ADOPT_FILES || batch.bytes >= ADOPT_BYTES {
                adopt(
                    src,
                    (dir, &tmp),
                    job,
                    &mut batch,
                    (&mut n, &mut left_in_place),
                    &bar,
                );
            }
            bar.set_message(format!("{} imported", n.done));
            continue;
        }
        let exists = src
            .run(dir, "last", std::slice::from_ref(&name))
            .error
            .is_none();
        if exists && job.resume {
            n.skipped += 1;
            continue;
        }
        if exists && !job.force {
            bar.suspend(|| {
                eprintln!("{name}: exists already (--resume skips it, --force replaces it)")
            });
            n.failed += 1;
            continue;
        }
        let read = |p: &Path| std::fs::read(p).map_err(|e| format!("{}: {e}", p.display()));
        let r = match kind {
            Kind::Rrd => read(&path).and_then(|b| {
                let size = b.len() as u64;
                let rrd = rrd::rrdfile::read(&b).map_err(|e| e.msg)?;
                drop(b);
                store_rrd(src, dir, &tmp, &name, rrd, job.force)?;
                if job.moves.is_some() {
                    if let Source::Store(_) = src {
                        pending.files.push((path.clone(), name.clone()));
                        pending.bytes += size;
                    } else if is_placeholder(&path) {
                        n.moved += 1;
                    } else {
                        left_in_place = true;
                    }
                }
                Ok(())
            }),
            Kind::Phpfina | Kind::Whisper => {
                let parsed = if kind == Kind::Phpfina {
                    read(&path).and_then(|m| {
                        let dat = read(&path.with_extension("dat"))?;
                        parse_phpfina(&m, &dat)
                    })
                } else {
                    read(&path).and_then(|b| parse(&b))
                };
                parsed.and_then(|w| {
                    let xml = rrd::dump::dump_xml(&to_rrd(&w, crate::now().0), "");
                    restore(src, dir, &tmp, &name, &xml, job.force)?;
                    verify(src, dir, &name, &w)
                })
            }
        };
        match r {
            Ok(()) => n.done += 1,
            // Beside a daemon that serves DIR: a client named the file meanwhile, and the
            // daemon took it in itself.
            Err(_) if kind == Kind::Rrd && is_placeholder(&path) => n.skipped += 1,
            Err(e) => {
                bar.suspend(|| eprintln!("{}: {e}", f.display()));
                n.failed += 1;
            }
        }
        if pending.bytes >= BATCH_BYTES || pending.files.len() >= BATCH_FILES {
            n.moved += settle(src, &mut pending, places.as_ref(), &abs_tree, tree, &bar)?;
        }
        bar.set_message(format!("{} imported", n.done));
    }
    adopt(
        src,
        (dir, &tmp),
        job,
        &mut batch,
        (&mut n, &mut left_in_place),
        &bar,
    );
    let _ = std::fs::remove_file(&tmp);
    n.moved += settle(src, &mut pending, places.as_ref(), &abs_tree, tree, &bar)?;
    bar.finish_and_clear();
    if left_in_place {
        eprintln!(
            "--move: the daemon's -b is not {}; files whose series it does not place there \
             were left in place",
            tree.display()
        );
    }
    Ok(n)
}

/// Files handed to the daemon together: at most this many, or about this many bytes (the
/// daemon holds its lock while it compares them).
const ADOPT_FILES: usize = 16;
const ADOPT_BYTES: u64 = 16 << 20;

/// Files waiting to be handed to the daemon (their paths under the tree, their series).
#[derive(Default)]
struct Batch {
    files: Vec<(PathBuf, String)>,
    bytes: u64,
}

/// Hand the batch to the daemon (RUN `adopt-files`): it takes each file in from its path
/// under its -b, compares, commits the batch, and moves the files aside. A file the daemon
/// does not find at its path (DIR is not its -b) is restored as without --move and left in
/// place.
/// `at`: the store's directory and the restore's temporary file; `tally`: the counts, and
/// whether a file was left in place.
fn adopt(
    src: &mut Source,
    at: (&Path, &Path),
    job: &Job,
    batch: &mut Batch,
    tally: (&mut Counts, &mut bool),
    bar: &indicatif::ProgressBar,
) {
    let ((dir, tmp), (n, left_in_place)) = (at, tally);
    if batch.files.is_empty() {
        return;
    }
    let names: Vec<String> = batch.files.iter().map(|(_, name)| name.clone()).collect();
    let out = src.run(dir, server::series::import::ADOPT, &names);
    let lines: Vec<&str> = out.stdout.lines().collect();
    for (k, (f, name)) in std::mem::take(&mut batch.files).into_iter().enumerate() {
        let line = match (&out.error, lines.get(k)) {
            (Some(e), _) => format!("failed {e}"),
            (None, Some(l)) => l.to_string(),
            (None, None) => "failed: the daemon did not answer for it".into(),
        };
        let (word, rest) = line.split_once(' ').unwrap_or((line.as_str(), ""));
        let said = |what: &str| bar.suspend(|| eprintln!("{}: {what}", f.display()));
        match word {
            "imported" => {
                n.done += 1;
                match rest.split_once(" (not moved aside: ") {
                    Some((_, why)) => said(&format!("stored, not moved aside: {why}")),
                    None => n.moved += 1,
                }
            }
            "there" => n.skipped += 1,
            "missing" => {
                // Not at the path the daemon gives this series: as without --move.
                *left_in_place = true;
                let exists = src
                    .run(dir, "last", std::slice::from_ref(&name))
                    .error
                    .is_none();
                if exists && job.resume {
                    n.skipped += 1;
                    continue;
                }
                let path = job.tree.join(&f);
                let r = std::fs::read(&path)
                    .map_err(|e| format!("{}: {e}", path.display()))
                    .and_then(|b| rrd::rrdfile::read(&b).map_err(|e| e.msg))
                    .and_then(|rrd| store_rrd(src, dir, tmp, &name, rrd, false));
                match r {
                    Ok(()) => n.done += 1,
                    Err(e) => {
                        said(&e);
                        n.failed += 1;
                    }
                }
            }
            _ => {
                let why = rest.split_once(": ").map_or(rest, |(_, w)| w);
                said(why);
                n.failed += 1;
            }
        }
    }
    batch.bytes = 0;
}

/// Whether the file at `path` is a ringlet placeholder.
fn is_placeholder(path: &Path) -> bool {
    server::placeholder::inspect(None, path) == server::placeholder::Found::Placeholder
}

/// Commit what a store holds (nothing beside a daemon, which commits each command), then
/// move the pending files aside: the number moved.
fn settle(
    src: &mut Source,
    pending: &mut Pending,
    places: Option<&server::placeholder::Places>,
    abs_tree: &Path,
    tree: &Path,
    bar: &indicatif::ProgressBar,
) -> Result<u64, String> {
    let Source::Store(st) = src else {
        return Ok(0);
    };
    st.commit().map_err(|e| format!("commit: {e}"))?;
    let mut moved = 0;
    for (path, name) in pending.files.drain(..) {
        let Some(places) = places else { continue };
        let rel = path.strip_prefix(tree).unwrap_or(&path);
        let abs = abs_tree.join(rel).display().to_string();
        match server::placeholder::move_aside(places, &path, &abs, &name) {
            Ok(_) => moved += 1,
            Err(e) => {
                bar.suspend(|| eprintln!("{}: stored, but not moved aside: {e}", path.display()))
            }
        }
    }
    pending.bytes = 0;
    Ok(moved)
}

/// Store `rrd` (an .rrd file's) as series `name` and read it back as `rrdtool dump` prints
/// it, every field and row in time order, compared with the file's (a store starts each
/// archive's ring afresh, so the bytes of a file would differ by the rotation alone). On a
/// store it is created there directly; beside a daemon, restored from its dump.
fn store_rrd(
    src: &mut Source,
    dir: &Path,
    tmp: &Path,
    name: &str,
    rrd: rrd::Rrd,
    force: bool,
) -> Result<(), String> {
    let want = rrd::dump::dump_xml(&rrd, "none");
    let differs = || Err("read back, the series differs from the file".to_string());
    match src {
        Source::Store(st) => {
            let name = cli::store::normalize(name)?;
            st.create(&name, rrd, force).map_err(|e| e.to_string())?;
            let back = st.get(&name).map(|r| rrd::dump::dump_xml(r, "none"));
            if back.as_deref() != Some(want.as_str()) {
                let _ = st.remove(&name);
                return differs();
            }
            Ok(())
        }
        Source::Daemon(_) => {
            restore(src, dir, tmp, name, &want, force)?;
            let back = src.run(
                dir,
                "dump",
                &["--header".into(), "none".into(), name.to_string()],
            );
            match back.error {
                Some(e) => Err(format!("read back: {e}")),
                // A client's update may have come between (the daemon serves the base
                // directory): the series is stored, and newer than the file.
                None if back.stdout != want && !updated_since(&back.stdout, &want) => differs(),
                None => Ok(()),
            }
        }
    }
}

/// Whether dump `back` is of a series updated after the one dump `file` shows.
fn updated_since(back: &str, file: &str) -> bool {
    let last = |d: &str| -> Option<i64> {
        let at = d.find("<lastupdate>")? + "<lastupdate>".len();
        d[at..].split('<').next()?.trim().parse().ok()
    };
    matches!((last(back), last(file)), (Some(b), Some(f)) if b > f)
}

/// Restore `xml` as series `name` there (`-f` with `force`).
fn restore(
    src: &mut Source,
    dir: &Path,
    tmp: &Path,
    name: &str,
    xml: &str,
    force: bool,
) -> Result<(), String> {
    std::fs::write(tmp, xml).map_err(|e| format!("{}: {e}", tmp.display()))?;
    let mut a = vec![tmp.display().to_string(), name.to_string()];
    if force {
        a.insert(0, "-f".into());
    }
    match src.run(dir, "restore", &a).error {
        Some(e) => Err(e),
        None => Ok(()),
    }
}

/// The Graphite path of whisper file (or PHPFina meta) `f` under the tree, under `prefix`.
fn graphite_path(f: &Path, prefix: &str, phpfina: bool) -> String {
    let comps: Vec<String> = f
        .with_extension("")
        .components()
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .collect();
    // carbon keeps a tagged series at _tagged/<hash>/<hash>/<name, dots as _DOT_>.
    let path = match comps.as_slice() {
        [t, _, _, enc] if t == "_tagged" && !phpfina => enc.replace("_DOT_", "."),
        _ => comps.join("."),
    };
    if prefix.is_empty() {
        path
    } else {
        format!("{prefix}.{path}")
    }
}

/// The series name of `.rrd` file `f` (its path under the tree), under `prefix`.
fn rrd_name(f: &Path, prefix: &str) -> Result<String, String> {
    let mut parts: Vec<String> = Vec::new();
    if !prefix.is_empty() {
        parts.push(prefix.to_string());
    }
    for c in f.components() {
        match c {
            std::path::Component::Normal(s) => match s.to_str() {
                Some(s) => parts.push(s.to_string()),
                None => return Err("a name that is not UTF-8".into()),
            },
            _ => return Err("not a plain path".into()),
        }
    }
    Ok(parts.join("/"))
}

/// Read the series back: the finest archive holds the file's finest points.
fn verify(src: &mut Source, dir: &Path, name: &str, w: &Whisper) -> Result<(), String> {
    let a = &w.archives[0];
    let (Some(&first), Some(&last)) = (a.data.keys().next(), a.data.keys().next_back()) else {
        return Ok(());
    };
    let step = a.spp as i64;
    let args: Vec<String> = vec![
        name.to_string(),
        "AVERAGE".into(),
        "-r".into(),
        step.to_string(),
        "-s".into(),
        first.to_string(),
        "-e".into(),
        (last + step).to_string(),
    ];
    let out = src.run(dir, "fetch", &args);
    if let Some(e) = out.error {
        return Err(format!("read back: {e}"));
    }
    let mut known = 0usize;
    let mut checked = 0usize;
    for line in out.stdout.lines() {
        let Some((t, v)) = line.split_once(':') else {
            continue;
        };
        let (Ok(t), Ok(v)) = (t.trim().parse::<i64>(), v.trim().parse::<f64>()) else {
            continue;
        };
        if v.is_nan() {
            continue;
        }
        known += 1;
        // rrdtool prints a row at its end: the point of the slot before it.
        match a.data.get(&(t - step)) {
            Some(&p) if (p - v).abs() <= 1e-9 * p.abs().max(1.0) => checked += 1,
            p => return Err(format!("read back {v} at {t}, the file holds {p:?}")),
        }
    }
    let want = a.data.range(first..=last).count();
    if known != want {
        return Err(format!("read back {known} points of {want}"));
    }
    debug_assert_eq!(checked, known);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn be(v: u32) -> [u8; 4] {
        let mut b = v.to_le_bytes();
        b.reverse();
        b
    }

    /// A whisper file of one archive (10 s x 4 points), as python3-whisper lays it out.
    fn file(points: &[(u32, f64)]) -> Vec<u8> {
        let mut b = Vec::new();
        b.extend(be(1)); // average
        b.extend(be(40));
        b.extend(be(0.5f32.to_bits()));
        b.extend(be(1));
        b.extend(be(28)); // offset
        b.extend(be(10));
        b.extend(be(4));
        for i in 0..4 {
            let (t, v) = points.get(i).copied().unwrap_or((0, 0.0));
            b.extend(be(t));
            let mut x = v.to_bits().to_le_bytes();
            x.reverse();
            b.extend(x);
        }
        b
    }

    #[test]
    fn phpfina_feeds_are_one_archive_of_their_interval() {
        let mut meta = vec![0u8; 8];
        meta.extend(10u32.to_le_bytes());
        meta.extend(1_700_000_003u32.to_le_bytes());
        let mut dat = Vec::new();
        for v in [1.5f32, f32::NAN, 3.0] {
            dat.extend(v.to_le_bytes());
        }
        let w = parse_phpfina(&meta, &dat).unwrap();
        let d: Vec<(i64, f64)> = w.archives[0].data.iter().map(|(&t, &v)| (t, v)).collect();
        assert_eq!(d, vec![(1_700_000_000, 1.5), (1_700_000_020, 3.0)]);
        assert!(w.archives[0].points >= 366 * 8640);
        let r = to_rrd(&w, 0);
        assert_eq!(r.last_up, 1_700_000_030);
        assert_eq!(r.value_at(0, 0, 1_700_000_010), 1.5);
        assert!(r.value_at(0, 0, 1_700_000_020).is_nan());
        assert!(parse_phpfina(&meta[..12], &dat).is_err());
        assert!(parse_phpfina(&meta, &dat[..5]).is_err());
    }

    #[test]
    fn whisper_points_come_in_their_slots_and_stale_ones_stay_out() {
        // 1700000000 is a stale point of an earlier lap of the ring.
        let w = parse(&file(&[
            (1_700_000_100, 1.0),
            (1_700_000_110, 2.5),
            (1_700_000_000, 9.0),
            (1_700_000_090, f64::NAN),
        ]))
        .unwrap();
        assert_eq!(w.archives.len(), 1);
        let d: Vec<(i64, f64)> = w.archives[0].data.iter().map(|(&t, &v)| (t, v)).collect();
        assert_eq!(d, vec![(1_700_000_100, 1.0), (1_700_000_110, 2.5)]);
        let r = to_rrd(&w, 0);
        assert_eq!(r.last_up, 1_700_000_120);
        assert_eq!(r.value_at(0, 0, 1_700_000_110), 1.0);
        assert_eq!(r.value_at(0, 0, 1_700_000_120), 2.5);
        assert!(r.value_at(0, 0, 1_700_000_100).is_nan());
        assert!((r.schema.rra[0].xff - 0.5).abs() < 1e-12);
        // Damaged files are refused, never read past their end.
        let good = file(&[(1_700_000_100, 1.0)]);
        for cut in [0, 10, 16, 27, 40] {
            assert!(parse(&good[..cut]).is_err(), "cut at {cut}");
        }
        let mut bad = good.clone();
        bad[12..16].copy_from_slice(&be(1000));
        assert!(parse(&bad).is_err());
        let mut bad = good;
        bad[16..20].copy_from_slice(&be(u32::MAX));
        assert!(parse(&bad).is_err());
    }
}
