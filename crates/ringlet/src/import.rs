//! `ringlet import whisper DIR`: a tree of whisper files (carbon's) as series of the store;
//! `ringlet import phpfina DIR`: emoncms's PHPFina feeds (`<id>.meta`, `<id>.dat`) likewise;
//! `ringlet import rrd DIR`: a tree of rrdtool's `.rrd` files (rrdcached's `-b`), each the
//! series of its path under DIR, read by `rrd::rrdfile`, stored by one `restore`, then read
//! back by `dump` and compared with the file's dump (every field, every row), so a file is
//! counted imported only once the store holds it exactly. The files are left where they are.
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
                               [--resume|-r] [--daemon|-d ADDR] [--quiet|-q] DIR

Import a tree of whisper files (carbon's, under its LOCAL_DATA_DIR): DIR/a/b/c.wsp becomes
the series of the Graphite path a.b.c (the store name a/b/c.rrd, as `ringlet serve --carbon`
names it), with one archive per whisper archive and every point kept. `phpfina` reads
emoncms's PHPFina feeds (ID.meta and ID.dat) in DIR as the series emoncms.ID. Each file is checked
before it is stored, stored whole or not at all, and read back and compared. `rrd` reads
rrdtool's .rrd files: DIR/a/b.rrd becomes the series a/b.rrd (P/a/b.rrd with --prefix P),
read back and compared with the file (every field and row, as `rrdtool dump` prints
them); the files stay where they are (a daemon with -b DIR names them the same). Runs in the
daemon that holds the store if there is one (found as for every command), else on the store.

  --prefix P     put every path under P (P.a.b.c; PHPFina: P.ID, default emoncms)
  -f, --force    replace series that exist
  -r, --resume   skip series that exist (an interrupted import)
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

/// Run `ringlet import` with the arguments after `import`; the exit status.
pub fn run(args: &[String], dir: &Path) -> i32 {
    let takes = crate::opts::Takes {
        write_flags: true,
        daemon: true,
        prefix: true,
    };
    let o = match crate::opts::parse_or_usage(args, takes, USAGE) {
        Ok(o) => o,
        Err(status) => return status,
    };
    let (force, resume, quiet, daemon, pos) = (o.force, o.resume, o.quiet, o.daemon, o.pos);
    let mut prefix = o
        .prefix
        .map(|p| p.trim_end_matches('.').to_string())
        .unwrap_or_default();
    let [kind, tree] = pos.as_slice() else {
        eprint!("{USAGE}");
        return 2;
    };
    let (phpfina, rrds) = match kind.as_str() {
        "whisper" => (false, false),
        "phpfina" => (true, false),
        "rrd" => (false, true),
        _ => return fail(&format!("cannot import '{kind}' (whisper, phpfina, rrd)")),
    };
    let tree = PathBuf::from(tree);
    let mut files = Vec::new();
    let listed = if rrds {
        walk_ext(&tree, Path::new(""), "rrd", &mut files)
    } else if phpfina {
        walk_ext(&tree, Path::new(""), "meta", &mut files)
    } else {
        walk(&tree, Path::new(""), &mut files)
    };
    if let Err(e) = listed {
        return fail(&format!("{}: {e}", tree.display()));
    }
    if files.is_empty() {
        let what = if rrds {
            ".rrd"
        } else if phpfina {
            ".meta"
        } else {
            ".wsp"
        };
        return fail(&format!("no {what} files under {}", tree.display()));
    }
    if phpfina && prefix.is_empty() {
        prefix = "emoncms".into();
    }
    let mut src = match Source::open(daemon, dir, false) {
        Ok(s) => s,
        Err(e) => return fail(&e),
    };
    let bar = if quiet {
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
    let tmp = std::env::temp_dir().join(format!("ringlet-import-{}.xml", std::process::id()));
    let (mut done, mut skipped, mut failed) = (0u64, 0u64, 0u64);
    for f in &files {
        bar.inc(1);
        let named = if rrds {
            rrd_name(f, &prefix)
        } else {
            server::carbon::name_of(&graphite_path(f, &prefix, phpfina))
        };
        let name = match named {
            Ok(n) => n,
            Err(e) => {
                bar.suspend(|| eprintln!("{}: {e}", f.display()));
                failed += 1;
                continue;
            }
        };
        let exists = src
            .run(dir, "last", std::slice::from_ref(&name))
            .error
            .is_none();
        if exists && resume {
            skipped += 1;
            continue;
        }
        if exists && !force {
            bar.suspend(|| {
                eprintln!("{name}: exists already (--resume skips it, --force replaces it)")
            });
            failed += 1;
            continue;
        }
        let read = |p: PathBuf| std::fs::read(&p).map_err(|e| format!("{}: {e}", p.display()));
        let restore = |src: &mut Source, xml: &str| -> Result<(), String> {
            std::fs::write(&tmp, xml).map_err(|e| format!("{}: {e}", tmp.display()))?;
            let mut a = vec![tmp.display().to_string(), name.clone()];
            if force {
                a.insert(0, "-f".into());
            }
            match src.run(dir, "restore", &a).error {
                Some(e) => Err(e),
                None => Ok(()),
            }
        };
        let r = if rrds {
            read(tree.join(f)).and_then(|b| {
                let rrd = rrd::rrdfile::read(&b).map_err(|e| e.msg)?;
                let xml = rrd::dump::dump_xml(&rrd, "none");
                restore(&mut src, &xml)?;
                // Read back as `rrdtool dump` prints it: every field and row in time order
                // (a restore starts each archive's ring afresh, so the bytes of a file would
                // differ by the rotation alone).
                let back = src.run(
                    dir,
                    "dump",
                    &["--header".into(), "none".into(), name.clone()],
                );
                match back.error {
                    Some(e) => Err(format!("read back: {e}")),
                    None if back.stdout != xml => {
                        Err("read back, the series differs from the file".into())
                    }
                    None => Ok(()),
                }
            })
        } else {
            let parsed = if phpfina {
                read(tree.join(f)).and_then(|m| {
                    let dat = read(tree.join(f.with_extension("dat")))?;
                    parse_phpfina(&m, &dat)
                })
            } else {
                read(tree.join(f)).and_then(|b| parse(&b))
            };
            parsed.and_then(|w| {
                restore(
                    &mut src,
                    &rrd::dump::dump_xml(&to_rrd(&w, crate::now().0), ""),
                )?;
                verify(&mut src, dir, &name, &w)
            })
        };
        match r {
            Ok(()) => done += 1,
            Err(e) => {
                bar.suspend(|| eprintln!("{}: {e}", f.display()));
                failed += 1;
            }
        }
        bar.set_message(format!("{done} imported"));
    }
    let _ = std::fs::remove_file(&tmp);
    if let Source::Store(st) = &mut src {
        if let Err(e) = st.commit() {
            return fail(&format!("commit: {e}"));
        }
    }
    bar.finish_and_clear();
    println!(
        "{done} imported, {skipped} skipped (there already), {failed} failed, of {} files",
        files.len()
    );
    i32::from(failed > 0)
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
