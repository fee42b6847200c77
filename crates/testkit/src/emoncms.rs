//! emoncms's PHPFina feeds as file operations, for tests that run the same random sequence
//! against a plain directory and against ringlet's view of one (issue 47).
//!
//! What emoncms does to the files, from its documented format (our own code, written from
//! the description, not from emoncms's source):
//!
//! - `<id>.meta`: 16 bytes, little-endian u32: 0, 0, interval, start_time. Written whole
//!   when the feed is made (start 0) and again at its first point (start = the point's time
//!   floored to the interval).
//! - `<id>.dat`: float32 values, NaN for a missing point; point `pos = (t - start) /
//!   interval` is at byte `4 * pos`. A point at an existing position is a 4-byte write
//!   there; a new one is one write at the end, NaN-padded over a gap. The file is opened
//!   with mode `c+` (read and write, created if missing, not truncated) for every post.
//! - Clearing a feed truncates `.dat` to 0 and writes the meta with start 0; deleting it
//!   unlinks both files.
//!
//! [`Op`]s are generated from a seed ([`ops`]) and applied to a directory ([`apply`]); the
//! resulting tree is compared byte for byte ([`tree`]).

use crate::SplitMix;
use std::io::{Read, Seek, SeekFrom, Write};
use std::path::Path;

/// One thing emoncms does to its PHPFina directory.
#[derive(Clone, Debug, PartialEq)]
pub enum Op {
    /// A feed made: its meta with start 0, an empty data file.
    Create { id: u32, interval: u32 },
    /// A point posted at time `t` (seconds).
    Post { id: u32, t: u32, value: f32 },
    /// Points posted in one call (emoncms's `post_multiple`), in this order.
    PostMany { id: u32, points: Vec<(u32, f32)> },
    /// The feed's data cleared (truncated), its meta back to start 0.
    Clear { id: u32 },
    /// The feed's files unlinked.
    Delete { id: u32 },
    /// A read of `count` points from position `pos`, as a graph reads (fseek/fread each).
    Read { id: u32, pos: u32, count: u32 },
}

/// A random sequence of `n` operations on a few feeds: creates, runs of posts (in order,
/// with gaps, repeats and a few into the past), multi-point posts, clears, deletes, reads.
pub fn ops(seed: u64, n: usize) -> Vec<Op> {
    let mut r = SplitMix::new(seed ^ 0x5eed_f1a0);
    let mut live: Vec<(u32, u32, u32)> = Vec::new(); // (id, interval, next time)
    let mut next_id = 1;
    let mut out = Vec::with_capacity(n);
    let t0 = 1_700_000_000u32;
    while out.len() < n {
        let k = r.below(100);
        if live.is_empty() || k < 4 {
            let interval = *r.pick(&[5u32, 10, 10, 30, 60, 300]);
            live.push((next_id, interval, t0 + r.below(3600) as u32));
            out.push(Op::Create {
                id: next_id,
                interval,
            });
            next_id += 1;
            continue;
        }
        let i = r.index(live.len());
        let (id, interval, next) = live[i];
        let value = |r: &mut SplitMix| {
            if r.percent(3) {
                f32::NAN
            } else {
                (r.unit() * 4000.0 - 500.0) as f32
            }
        };
        match k {
            4 | 5 => {
                out.push(Op::Clear { id });
                live[i].2 = next + interval * 10;
            }
            6 => {
                out.push(Op::Delete { id });
                live.remove(i);
            }
            7..=14 => {
                let pos = r.below(64) as u32;
                out.push(Op::Read {
                    id,
                    pos,
                    count: r.range(1, 40) as u32,
                });
            }
            15..=19 => {
                let mut t = next;
                let points = (0..r.range(2, 12))
                    .map(|_| {
                        t += interval * r.range(1, 3) as u32;
                        (t, value(&mut r))
                    })
                    .collect();
                live[i].2 = t;
                out.push(Op::PostMany { id, points });
            }
            _ => {
                // Mostly the next interval, sometimes a gap, a repeat or a time in the past.
                let t = match r.below(20) {
                    0 => next.saturating_sub(interval * r.range(1, 20) as u32),
                    1 => next,
                    2 | 3 => next + interval * r.range(2, 50) as u32,
                    _ => next + interval,
                } + r.below(interval as u64) as u32;
                live[i].2 = live[i].2.max(t);
                out.push(Op::Post {
                    id,
                    t,
                    value: value(&mut r),
                });
            }
        }
    }
    out
}

fn meta_path(dir: &Path, id: u32) -> std::path::PathBuf {
    dir.join(format!("{id}.meta"))
}

fn dat_path(dir: &Path, id: u32) -> std::path::PathBuf {
    dir.join(format!("{id}.dat"))
}

/// The meta's (interval, start_time), if the feed has one.
fn read_meta(dir: &Path) -> impl Fn(u32) -> std::io::Result<(u32, u32)> + '_ {
    move |id| {
        let mut b = [0u8; 16];
        std::fs::File::open(meta_path(dir, id))?.read_exact(&mut b)?;
        let word = |i: usize| u32::from_le_bytes([b[i], b[i + 1], b[i + 2], b[i + 3]]);
        Ok((word(8), word(12)))
    }
}

fn write_meta(dir: &Path, id: u32, interval: u32, start: u32) -> std::io::Result<()> {
    let mut b = Vec::with_capacity(16);
    for w in [0u32, 0, interval, start] {
        b.extend_from_slice(&w.to_le_bytes());
    }
    let mut f = std::fs::File::create(meta_path(dir, id))?;
    f.write_all(&b)
}

/// Apply `op` to the directory as emoncms would; a read's bytes are returned (for a
/// comparison of what the two directories give back), other operations return nothing.
/// Operations on a feed that is not there do nothing, as emoncms refuses them.
pub fn apply(dir: &Path, op: &Op) -> std::io::Result<Vec<u8>> {
    let meta = read_meta(dir);
    match op {
        Op::Create { id, interval } => {
            write_meta(dir, *id, *interval, 0)?;
            std::fs::OpenOptions::new()
                .write(true)
                .create(true)
                .truncate(true)
                .open(dat_path(dir, *id))?;
        }
        Op::Post { id, t, value } => post(dir, *id, &[(*t, *value)])?,
        Op::PostMany { id, points } => post(dir, *id, points)?,
        Op::Clear { id } => {
            let Ok((interval, _)) = meta(*id) else {
                return Ok(Vec::new());
            };
            std::fs::OpenOptions::new()
                .write(true)
                .open(dat_path(dir, *id))?
                .set_len(0)?;
            write_meta(dir, *id, interval, 0)?;
        }
        Op::Delete { id } => {
            let _ = std::fs::remove_file(meta_path(dir, *id));
            let _ = std::fs::remove_file(dat_path(dir, *id));
        }
        Op::Read { id, pos, count } => {
            let Ok(mut f) = std::fs::File::open(dat_path(dir, *id)) else {
                return Ok(Vec::new());
            };
            let mut out = Vec::new();
            for p in *pos..pos + count {
                let mut b = [0u8; 4];
                f.seek(SeekFrom::Start(4 * p as u64))?;
                let n = f.read(&mut b)?;
                out.extend_from_slice(&b[..n]);
            }
            return Ok(out);
        }
    }
    Ok(Vec::new())
}

/// Points posted to a feed: the first sets its start; each goes at its position, over an
/// existing point or appended after NaN padding.
fn post(dir: &Path, id: u32, points: &[(u32, f32)]) -> std::io::Result<()> {
    let Ok((interval, mut start)) = read_meta(dir)(id) else {
        return Ok(());
    };
    let mut f = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .open(dat_path(dir, id))?;
    let mut npoints = (f.metadata()?.len() / 4) as u32;
    for &(t, value) in points {
        let t = t - t % interval;
        if npoints == 0 && start == 0 {
            start = t;
            write_meta(dir, id, interval, start)?;
        }
        if t < start {
            continue;
        }
        let pos = (t - start) / interval;
        if pos < npoints {
            f.seek(SeekFrom::Start(4 * pos as u64))?;
            f.write_all(&value.to_le_bytes())?;
        } else {
            let mut b = Vec::with_capacity(4 * (pos - npoints + 1) as usize);
            for _ in npoints..pos {
                b.extend_from_slice(&f32::NAN.to_le_bytes());
            }
            b.extend_from_slice(&value.to_le_bytes());
            f.seek(SeekFrom::Start(4 * npoints as u64))?;
            f.write_all(&b)?;
            npoints = pos + 1;
        }
    }
    Ok(())
}

/// Every file under `dir` with its bytes, sorted by name.
pub fn tree(dir: &Path) -> std::io::Result<Vec<(String, Vec<u8>)>> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir)? {
        let e = e?;
        if e.file_type()?.is_file() {
            out.push((
                e.file_name().to_string_lossy().into_owned(),
                std::fs::read(e.path())?,
            ));
        }
    }
    out.sort();
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scratch(tag: &str) -> std::path::PathBuf {
        let d = std::env::temp_dir().join(format!("testkit-emoncms-{tag}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        d
    }

    #[test]
    fn a_feed_is_its_meta_and_a_float_array_with_nan_over_gaps() {
        let d = scratch("feed");
        apply(
            &d,
            &Op::Create {
                id: 3,
                interval: 10,
            },
        )
        .unwrap();
        let want: Vec<u8> = [0u32, 0, 10, 0]
            .iter()
            .flat_map(|w| w.to_le_bytes())
            .collect();
        assert_eq!(std::fs::read(d.join("3.meta")).unwrap(), want);
        apply(
            &d,
            &Op::Post {
                id: 3,
                t: 1_700_000_005,
                value: 1.5,
            },
        )
        .unwrap();
        apply(
            &d,
            &Op::Post {
                id: 3,
                t: 1_700_000_030,
                value: 2.5,
            },
        )
        .unwrap();
        apply(
            &d,
            &Op::Post {
                id: 3,
                t: 1_700_000_010,
                value: 9.0,
            },
        )
        .unwrap();
        let dat = std::fs::read(d.join("3.dat")).unwrap();
        let f = |i: usize| f32::from_le_bytes(dat[4 * i..4 * i + 4].try_into().unwrap());
        assert_eq!(dat.len(), 16);
        assert_eq!((f(0), f(1), f(3)), (1.5, 9.0, 2.5));
        assert!(f(2).is_nan());
        let meta = std::fs::read(d.join("3.meta")).unwrap();
        assert_eq!(
            u32::from_le_bytes(meta[12..16].try_into().unwrap()),
            1_700_000_000
        );
        let r = apply(
            &d,
            &Op::Read {
                id: 3,
                pos: 3,
                count: 3,
            },
        )
        .unwrap();
        assert_eq!(r, 2.5f32.to_le_bytes());
        apply(&d, &Op::Clear { id: 3 }).unwrap();
        assert_eq!(std::fs::read(d.join("3.dat")).unwrap().len(), 0);
        apply(&d, &Op::Delete { id: 3 }).unwrap();
        assert!(tree(&d).unwrap().is_empty());
        let _ = std::fs::remove_dir_all(&d);
    }

    #[test]
    fn a_sequence_repeats_from_its_seed_and_has_every_kind_of_op() {
        let a = ops(7, 400);
        // (NaN is not equal to itself: compared as text.)
        let text = |o: &[Op]| format!("{o:?}");
        assert!(text(&a) == text(&ops(7, 400)), "not repeated");
        assert!(text(&a) != text(&ops(8, 400)), "the seed changes nothing");
        let has = |f: fn(&Op) -> bool| a.iter().any(f);
        assert!(has(|o| matches!(o, Op::Create { .. })));
        assert!(has(|o| matches!(o, Op::Post { .. })));
        assert!(has(|o| matches!(o, Op::PostMany { .. })));
        assert!(has(|o| matches!(o, Op::Clear { .. })));
        assert!(has(|o| matches!(o, Op::Delete { .. })));
        assert!(has(|o| matches!(o, Op::Read { .. })));
        // Applied twice to two directories, the same trees and reads.
        let (x, y) = (scratch("x"), scratch("y"));
        for op in &a {
            assert_eq!(apply(&x, op).unwrap(), apply(&y, op).unwrap());
        }
        assert_eq!(tree(&x).unwrap(), tree(&y).unwrap());
        assert!(!tree(&x).unwrap().is_empty());
        let _ = std::fs::remove_dir_all(&x);
        let _ = std::fs::remove_dir_all(&y);
    }
}
