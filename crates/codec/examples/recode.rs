//! What a store's stored archive rows take, and what they would take packed again by this
//! build's `encode_values` (docs/FORMAT.md, "RRD image": the block kinds):
//!
//!     cargo run --release -p codec --example recode -- STORE_DIR
//!
//! Reads every segment file of the store (read-only), decodes each chunk and packs its
//! values again; prints bytes a value, in all and by archive index.

use codec::segment::SegView;
use std::collections::BTreeMap;

fn main() {
    let Some(dir) = std::env::args().nth(1) else {
        eprintln!("usage: recode STORE_DIR");
        std::process::exit(2);
    };
    // archive -> (values, bytes stored, bytes packed again)
    let mut by_arch: BTreeMap<u32, (usize, usize, usize)> = BTreeMap::new();
    let entries = std::fs::read_dir(&dir).unwrap_or_else(|e| panic!("{dir}: {e}"));
    for e in entries.flatten() {
        let p = e.path();
        let name = e.file_name().to_string_lossy().to_string();
        let Some(hex) = name.strip_prefix("seg-") else {
            continue;
        };
        let Ok(id) = u64::from_str_radix(hex, 16) else {
            continue;
        };
        let b = std::fs::read(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()));
        let view = match SegView::header_checked(&b, id) {
            Ok(v) => v,
            Err(e) => {
                eprintln!(
                    "{}: {e} (a version 1 segment is not read here)",
                    p.display()
                );
                continue;
            }
        };
        for ord in 0..view.len() {
            let key = view.key(ord);
            let Ok((s, l)) = view.chunk(ord) else {
                eprintln!("{}: chunk {ord} damaged", p.display());
                continue;
            };
            let bytes = &b[s..s + l];
            // A chunk holds at most 256 values of a row of one DS, or one row of more.
            let mut vals = Vec::new();
            let n = std::iter::once(256)
                .chain(1..=65_536)
                .find(|&n| {
                    vals.clear();
                    rrd::rows::decode_values(bytes, n, &mut vals) == Ok(bytes.len())
                })
                .unwrap_or(0);
            let mut again = Vec::new();
            rrd::rows::encode_values(&vals, &mut again);
            let a = by_arch.entry(key.1).or_default();
            a.0 += n;
            a.1 += l;
            a.2 += again.len();
        }
    }
    let per = |b: usize, n: usize| b as f64 / n.max(1) as f64;
    let (n, s, a) = by_arch
        .values()
        .fold((0, 0, 0), |t, v| (t.0 + v.0, t.1 + v.1, t.2 + v.2));
    println!(
        "{n} values: stored {s} bytes ({:.2} a value), packed again {a} ({:.2} a value)",
        per(s, n),
        per(a, n)
    );
    for (arch, (n, s, a)) in by_arch {
        println!(
            "archive {arch}: {n} values, stored {:.2} a value, packed again {:.2}",
            per(s, n),
            per(a, n)
        );
    }
}
