//! Writes every target's seeds into a corpus directory, `<DIR>/<target>/<name>`: those our
//! own encoders make (`fuzz_targets::seeds::all`) and those kept in `fuzz/seeds/` (made by
//! Debian's tools). `fuzz/seed.sh` runs it to start a campaign.
//!
//! usage: cargo run -p fuzz-targets --example seeds -- [DIR]   (default fuzz/corpus)

use std::path::{Path, PathBuf};

fn main() {
    let dir = PathBuf::from(
        std::env::args()
            .nth(1)
            .unwrap_or_else(|| "fuzz/corpus".into()),
    );
    let kept = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fuzz/seeds");
    let mut seeds = fuzz_targets::seeds::all();
    for (target, _) in fuzz_targets::TARGETS {
        seeds.extend(fuzz_targets::seeds::kept(&kept, target));
    }
    for (target, name, bytes) in &seeds {
        let d = dir.join(target);
        std::fs::create_dir_all(&d).expect("corpus directory");
        std::fs::write(d.join(name), bytes).expect("seed file");
    }
    for (t, _) in fuzz_targets::TARGETS {
        let n = seeds.iter().filter(|s| s.0 == *t).count();
        println!("{t}: {n} seeds");
    }
}
