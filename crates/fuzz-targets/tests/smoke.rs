//! The fuzz smoke of every test run: each target of `fuzz_targets::TARGETS` over its corpus
//! (`fuzz/corpus/<target>/`), the crashes found before (`fuzz/regressions/<target>/`), and
//! mutations of the corpus (bits flipped, bytes changed, inserted and removed, cut short,
//! two inputs spliced), seeded so that a failure repeats. A panic names the target and
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

struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }
}

fn mutate(rng: &mut Rng, a: &[u8], b: &[u8]) -> Vec<u8> {
    let mut v = a.to_vec();
    for _ in 0..1 + rng.below(4) {
        match rng.below(7) {
            0 if !v.is_empty() => {
                let i = rng.below(v.len());
                v[i] ^= 1 << rng.below(8);
            }
            1 if !v.is_empty() => {
                let i = rng.below(v.len());
                v[i] = [0, 0xff, 0x7f, 0x80, b':', b'\n', b'0'][rng.below(7)];
            }
            2 => {
                let i = rng.below(v.len() + 1);
                v.insert(i, rng.next() as u8);
            }
            3 if !v.is_empty() => {
                let i = rng.below(v.len());
                let n = 1 + rng.below(8.min(v.len() - i));
                v.drain(i..i + n);
            }
            4 => v.truncate(rng.below(v.len() + 1)),
            5 if !b.is_empty() => {
                let cut = rng.below(v.len() + 1);
                let from = rng.below(b.len());
                v.truncate(cut);
                v.extend_from_slice(&b[from..]);
            }
            _ => {
                // A run of one byte: lengths and counts that claim a lot.
                let i = rng.below(v.len() + 1);
                let byte = [0xff, 0x00, b'9'][rng.below(3)];
                for _ in 0..1 + rng.below(12) {
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
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    for &(name, f) in fuzz_targets::TARGETS {
        let corpus = inputs(&fuzz.join("corpus").join(name));
        assert!(!corpus.is_empty(), "fuzz/corpus/{name} is empty");
        for (p, b) in inputs(&fuzz.join("regressions").join(name))
            .iter()
            .chain(&corpus)
        {
            run(name, f, b, &p.display().to_string());
        }
        for i in 0..MUTATIONS {
            let a = &corpus[rng.below(corpus.len())].1;
            let b = &corpus[rng.below(corpus.len())].1;
            let m = mutate(&mut rng, a, b);
            run(name, f, &m, &format!("mutation {i}"));
        }
        eprintln!(
            "{name}: {} corpus inputs, {MUTATIONS} mutations",
            corpus.len()
        );
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
