//! The fuzz smoke of every test run: each target of `fuzz_targets::TARGETS` over its seeds
//! (`fuzz_targets::seeds`, made afresh, and the files kept in `fuzz/seeds/<target>/`), the
//! crashes found before (`fuzz/regressions/<target>/`), and mutations of the seeds (bits
//! flipped, bytes changed, inserted and removed, cut short, two inputs spliced), seeded so
//! that a failure repeats. The corpora campaigns grow (`fuzz/corpus/`) are not in git and
//! not read here: every run checks the same inputs. A panic names the target and
//! writes the input to `target/tmp/fuzz-smoke/`. The long campaigns are cargo-fuzz's (fuzz/,
//! docs/DURABILITY.md).

use std::path::{Path, PathBuf};

/// Mutations per target.
const MUTATIONS: usize = 3_000;

fn inputs(dir: &Path) -> Vec<(PathBuf, Vec<u8>)> {
    let mut out: Vec<(PathBuf, Vec<u8>)> = std::fs::read_dir(dir)
        .map(|rd| {
            rd.flatten()
                .filter(|e| e.path().is_file())
                .filter_map(|e| std::fs::read(e.path()).ok().map(|b| (e.path(), b)))
                .collect()
        })
        .unwrap_or_default();
    out.sort();
    out
}

use testkit::Rng;

fn mutate(rng: &mut Rng, a: &[u8], b: &[u8]) -> Vec<u8> {
    let mut v = a.to_vec();
    for _ in 0..1 + rng.index(4) {
        match rng.index(7) {
            0 if !v.is_empty() => {
                let i = rng.index(v.len());
                v[i] ^= 1 << rng.index(8);
            }
            1 if !v.is_empty() => {
                let i = rng.index(v.len());
                v[i] = [0, 0xff, 0x7f, 0x80, b':', b'\n', b'0'][rng.index(7)];
            }
            2 => {
                let i = rng.index(v.len() + 1);
                v.insert(i, rng.next_u64() as u8);
            }
            3 if !v.is_empty() => {
                let i = rng.index(v.len());
                let n = 1 + rng.index(8.min(v.len() - i));
                v.drain(i..i + n);
            }
            4 => v.truncate(rng.index(v.len() + 1)),
            5 if !b.is_empty() => {
                let cut = rng.index(v.len() + 1);
                let from = rng.index(b.len());
                v.truncate(cut);
                v.extend_from_slice(&b[from..]);
            }
            _ => {
                // A run of one byte: lengths and counts that claim a lot.
                let i = rng.index(v.len() + 1);
                let byte = [0xff, 0x00, b'9'][rng.index(3)];
                for _ in 0..1 + rng.index(12) {
                    v.insert(i, byte);
                }
            }
        }
    }
    v
}

fn run(name: &str, f: fn(&[u8]), input: &[u8], what: &str) {
    if std::panic::catch_unwind(|| f(input)).is_err() {
        let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("fuzz-smoke");
        let _ = std::fs::create_dir_all(&dir);
        let file = dir.join(format!("{name}-crash"));
        let _ = std::fs::write(&file, input);
        panic!(
            "fuzz target {name} panicked on {what} (saved to {})",
            file.display()
        );
    }
}

#[test]
fn every_target_survives_its_corpus_its_regressions_and_their_mutations() {
    let fuzz = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fuzz");
    let mut rng = Rng::new(0x9e37_79b9_7f4a_7c15);
    let made = fuzz_targets::seeds::all();
    for &(name, f) in fuzz_targets::TARGETS {
        let corpus: Vec<(PathBuf, Vec<u8>)> = made
            .iter()
            .filter(|s| s.0 == name)
            .cloned()
            .chain(fuzz_targets::seeds::kept(&fuzz.join("seeds"), name))
            .map(|(_, n, b)| (PathBuf::from(format!("seed {n}")), b))
            .collect();
        assert!(!corpus.is_empty(), "{name} has no seed");
        for (p, b) in inputs(&fuzz.join("regressions").join(name))
            .iter()
            .chain(&corpus)
        {
            run(name, f, b, &p.display().to_string());
        }
        for i in 0..MUTATIONS {
            let a = &corpus[rng.index(corpus.len())].1;
            let b = &corpus[rng.index(corpus.len())].1;
            let m = mutate(&mut rng, a, b);
            run(name, f, &m, &format!("mutation {i}"));
        }
        eprintln!("{name}: {} seeds, {MUTATIONS} mutations", corpus.len());
    }
}

#[test]
fn every_target_has_a_cargo_fuzz_file() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fuzz/fuzz_targets");
    for &(name, _) in fuzz_targets::TARGETS {
        let src = std::fs::read_to_string(dir.join(format!("{name}.rs")))
            .unwrap_or_else(|e| panic!("fuzz/fuzz_targets/{name}.rs: {e}"));
        assert!(
            src.contains(&format!("fuzz_targets::{name}(")),
            "fuzz/fuzz_targets/{name}.rs does not run fuzz_targets::{name}"
        );
    }
}
