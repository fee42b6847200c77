//! Replay applies a batch of records a run of pieces at a time (`engine::replay`, two million
//! (series, record) pieces a run): a log whose records each hold a step of many series,
//! replayed in one batch, comes back exactly as a model that applied every sample in order.

mod common;

use common::*;
use engine::{Options, Store};
use rrd::{Cf, DsType, Rrd, Sample, Schema};

#[test]
fn a_batch_of_more_pieces_than_a_run_replays_exactly() {
    let dir = TempDir::new("replay-runs");
    let opts = Options {
        commit_interval: None,
        log_bytes: 256 << 20,
        ..Options::default()
    };
    let schema = Schema {
        step: 10,
        ds: vec![ds("v", DsType::Gauge)],
        rra: vec![rra(Cf::Average, 1, 300), rra(Cf::Max, 6, 100)],
    };
    let (series, rounds) = (2_600, 850i64);
    let mut model = Model::default();
    let mut st = Store::open(&dir.0, opts.clone()).unwrap();
    for s in 0..series {
        let op = Op::Create(format!("s{s}"), Rrd::new(schema.clone(), START));
        model.apply(&op);
        run_op(&mut st, &op).unwrap();
    }
    st.commit().unwrap();
    let mut rng = Rng::seeded(7);
    for r in 1..=rounds {
        for s in 0..series {
            let values = vec![format!("{}.{}", rng.below(100), rng.below(10))];
            let op = Op::Update(
                format!("s{s}"),
                Sample {
                    time: START + 10 * r,
                    usec: 0,
                    values,
                },
            );
            model.apply(&op);
            run_op(&mut st, &op).unwrap();
        }
        // A record a step: 2,600 pieces each, 2.2 million in all.
        st.commit().unwrap();
    }
    assert_eq!(st.stats().checkpoints, 0);
    drop(st);
    let st = Store::open(&dir.0, opts).unwrap();
    assert_eq!(
        st.recovery().samples_replayed,
        (series as u64) * rounds as u64
    );
    assert!(st.recovery().records_replayed > rounds as u64);
    same(&st, &model).unwrap();
}
