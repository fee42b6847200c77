//! Archive rows stored in segment files stay there when a store opens: they are read
//! through the page cache when a read needs them, so the heap a store takes for its
//! archives does not grow with the history it holds (issue 19's first stage). On the real
//! file system (segments mapped).

mod common;

use common::TempDir;
use engine::{Options, Store};
use rrd::{Rows, RraData};

/// A store of `series` RRDs whose archive holds `filled` rows of noisy values (the rest
/// unknown), checkpointed (the sealed chunks go to segment files) and closed.
fn store_with_history(dir: &std::path::Path, series: usize, filled: usize) -> Vec<Vec<f64>> {
    let mut st = Store::open(dir, opts()).unwrap();
    let mut all = Vec::new();
    let mut x = 12345u64;
    let args: Vec<String> = "x --start 1700000000 --step 15 DS:v:GAUGE:60:U:U RRA:AVERAGE:0.5:1:5000 RRA:MAX:0.5:4:3000"
        .split(' ')
        .map(String::from)
        .collect();
    let schema =
        rrd::create::parse_create_with(&args, 1_700_000_000, &mut |_| None, &mut |_| false)
            .unwrap()
            .schema;
    for i in 0..series {
        let mut rrd = rrd::Rrd::new(schema.clone(), 1_700_000_000);
        for a in 0..rrd.rra.len() {
            let n = rrd.schema.rra[a].row_cnt as usize * rrd.ds_cnt();
            let mut vals = vec![rrd::num::DNAN; n];
            let keep = (filled * rrd.ds_cnt()).min(n);
            for v in vals[n - keep..].iter_mut() {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                *v = (x % 1_000_000) as f64 / 7.0;
            }
            all.push(vals.clone());
            rrd.rra[a] = RraData {
                cur_row: rrd.schema.rra[a].row_cnt - 1,
                rows: Rows::from_values(rrd.ds_cnt(), &vals),
            };
        }
        st.create(&format!("s{i}"), rrd, false).unwrap();
    }
    // A checkpoint stores the sealed chunks in segment files.
    st.checkpoint().unwrap();
    st.close().unwrap();
    all
}

fn opts() -> Options {
    Options {
        commit_interval: None,
        log_bytes: 4 << 20,
        ..Options::default()
    }
}

#[test]
fn stored_archive_rows_are_not_on_the_heap_and_read_back_exactly() {
    let short = TempDir::new("resident-short");
    let long = TempDir::new("resident-long");
    let rows_of = |dir: &std::path::Path| {
        let st = Store::open(dir, opts()).unwrap();
        let heap = st.archive_heap_bytes();
        let mut got = Vec::new();
        for i in 0..20 {
            for r in &st.get(&format!("s{i}")).unwrap().rra {
                got.push(r.rows.to_vec());
            }
        }
        (heap, got)
    };
    let want_short = store_with_history(&short.0, 20, 10);
    let want_long = store_with_history(&long.0, 20, 1_000_000);
    let (heap_short, got_short) = rows_of(&short.0);
    let (heap_long, got_long) = rows_of(&long.0);
    let bits = |v: &Vec<Vec<f64>>| -> Vec<Vec<u64>> {
        v.iter()
            .map(|r| r.iter().map(|x| x.to_bits()).collect())
            .collect()
    };
    assert_eq!(bits(&got_short), bits(&want_short));
    assert_eq!(
        bits(&got_long),
        bits(&want_long),
        "read back from the segments"
    );
    // The long store holds every row noisy (8 bytes a value packed); on the heap it takes
    // about what the short one does (a stored chunk costs its small handle, a fresh
    // archive's unknown chunk nothing), far from its rows' bytes.
    let full: usize = want_long.iter().map(|r| r.len() * 8).sum();
    assert!(
        heap_long < heap_short * 4,
        "heap {heap_long} vs {heap_short}"
    );
    assert!(
        heap_long * 20 < full,
        "heap {heap_long} of {full} bytes of rows"
    );
}
