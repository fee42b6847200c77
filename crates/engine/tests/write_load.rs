//! Bytes the store writes per sample, as `CommitStats` reports them (framed, page-padded
//! records, and the archive rows of the spills the commits made): 1,000 series at 15 s, one
//! commit per 5 minutes of virtual time, a third each of 2-decimal gauges, counters and
//! constants. Run with `--nocapture` to see the figures.

mod common;

use common::*;
use engine::sim::SimFs;
use engine::Store;
use rrd::{Cf, DsType, Rrd, Sample, Schema};
use std::path::Path;
use std::sync::Arc;

#[test]
fn five_minute_commits_write_about_one_byte_per_sample() {
    let fs = SimFs::new();
    let mut store = Store::open_with(Arc::new(fs), Path::new("/w"), small_opts(64 << 20)).unwrap();
    let n = 1000;
    let kinds = [DsType::Gauge, DsType::Counter, DsType::Gauge];
    for i in 0..n {
        let schema = Schema {
            step: 15,
            ds: vec![ds("value", kinds[i % 3])],
            rra: vec![rra(Cf::Average, 1, 5760), rra(Cf::Max, 20, 2016)],
        };
        store
            .create(
                &format!("host{}/m{i}.rrd", i / 50),
                Rrd::new(schema, START),
                false,
            )
            .unwrap();
    }
    let created = store.commit().unwrap();
    println!("create commit: {} bytes for {n} series", created.bytes);
    let mut rng = Rng::seeded(7);
    let mut gauge: Vec<f64> = (0..n).map(|i| 20.0 + (i % 17) as f64).collect();
    let mut counter: Vec<u64> = (0..n).map(|i| 1_000_000 * i as u64).collect();
    let (mut bytes, mut samples, mut commits) = (0u64, 0usize, 0);
    let spilled_before = store.stats().spill_bytes;
    for step in 1..=(3 * 240) {
        let t = START + 15 * step;
        for i in 0..n {
            let v = match i % 3 {
                0 => {
                    gauge[i] += (rng.below(21) as f64 - 10.0) * 0.01;
                    format!("{:.2}", gauge[i])
                }
                1 => {
                    counter[i] += 40 + rng.below(20);
                    counter[i].to_string()
                }
                _ => "1".to_string(),
            };
            let s = Sample {
                time: t,
                usec: 0,
                values: vec![v],
            };
            store
                .update(&format!("host{}/m{i}.rrd", i / 50), &s, &mut |_| {})
                .unwrap();
        }
        if step % 20 == 0 {
            let st = store.commit().unwrap();
            bytes += st.bytes;
            samples += st.samples;
            commits += 1;
        }
    }
    let spilled = store.stats().spill_bytes - spilled_before;
    assert!(bytes >= spilled, "a commit's bytes count its spill's");
    let per = (bytes - spilled) as f64 / samples as f64;
    println!(
        "{commits} commits, {samples} samples, {bytes} bytes ({spilled} of them spilled archive \
         rows): records {per:.3} B/sample"
    );
    assert_eq!(samples, n * 3 * 240);
    assert!(per < 1.5, "{per} bytes per sample");
}
