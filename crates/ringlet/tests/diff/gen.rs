//! A whole differential case from one seed: schema, `create`, update calls with reads in
//! between, then every final read.

use super::case::{Case, Expect, Kind, Stdin, Step};
use super::query_gen::{final_queries, mid_query};
use super::rng::Rng;
use super::schema_gen::gen_schema;
use super::update_gen::UpdateGen;
use std::collections::BTreeSet;

pub fn generate(seed: u64) -> Case {
    let mut rng = Rng::new(seed);
    let mut feats: BTreeSet<&'static str> = BTreeSet::new();
    let schema = gen_schema(&mut rng);
    for d in &schema.ds {
        feats.insert(d.ty.word());
    }
    for r in &schema.rras {
        feats.insert(r.cf);
    }
    let mut t0 = 1_795_300_000 + rng.range(0, 86_400 * 30);
    if rng.chance(0.3) {
        t0 -= t0 % schema.step;
    }
    let mut create = vec!["create".to_string(), "x.rrd".to_string()];
    let (b, s) = *rng.pick(&[("--start", "--step"), ("-b", "-s")]);
    create.extend([
        b.to_string(),
        t0.to_string(),
        s.to_string(),
        schema.step.to_string(),
    ]);
    create.extend(schema.ds.iter().map(|d| d.definition()));
    create.extend(schema.rras.iter().map(|r| r.definition()));
    let mut steps = vec![Step {
        kind: Kind::Create,
        args: create,
        stdin: Stdin::Empty,
        expect: Expect::Ok,
    }];
    let mut ug = UpdateGen::new(&mut rng, &schema, t0);
    let n = rng.range(8, 60);
    ug.run(&mut rng, n, &mut feats, &mut steps, &mut |rng, steps| {
        mid_query(rng, steps)
    });
    let last = ug.applied.sec;
    final_queries(&mut rng, &schema, t0, last, &mut feats, &mut steps);
    Case {
        seed,
        steps,
        features: feats,
    }
}
