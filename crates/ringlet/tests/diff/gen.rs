//! A whole differential case from one seed: schema, `create`, update calls with reads in
//! between, then every final read.

use super::case::{Case, Expect, Kind, Stdin, Step};
use super::hw_gen::{add_hw, hw_tune_steps};
use super::query_gen::{fetch, final_queries, mid_query};
use super::rng::Rng;
use super::schema_gen::{duration, gen_schema};
use super::source_gen::source_steps;
use super::tune_gen::tune_steps;
use super::update_gen::UpdateGen;
use std::collections::BTreeSet;

/// Seeds from here (up to [`SOURCED`]) make cases that tune their file with DS and RRA
/// changes.
pub const TUNED: u64 = 1 << 40;

/// Seeds from here (up to [`HOLT`]) make cases that create files with `--source` from
/// theirs.
pub const SOURCED: u64 = 1 << 41;

/// Seeds from here on make cases whose file has Holt-Winters archives (`hw_gen`).
pub const HOLT: u64 = 1 << 42;

pub fn generate(seed: u64) -> Case {
    let mut rng = super::rng::seeded(seed);
    let mut feats: BTreeSet<&'static str> = BTreeSet::new();
    let mut schema = gen_schema(&mut rng);
    // Holt-Winters archives after the others (a stream of their own).
    let mut hrng = super::rng::seeded(seed ^ 0x686f_6c74);
    let holt = seed >= HOLT;
    if holt {
        add_hw(&mut hrng, &mut schema, &mut feats);
    }
    let sourced = (SOURCED..HOLT).contains(&seed);
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
    let step = if schema.units {
        feats.insert("create:units");
        duration(schema.step)
    } else {
        schema.step.to_string()
    };
    create.extend([b.to_string(), t0.to_string(), s.to_string(), step]);
    create.extend(schema.ds.iter().map(|d| d.definition(schema.units)));
    create.extend(
        schema
            .rras
            .iter()
            .filter(|r| !r.implied())
            .map(|r| r.definition(schema.step, schema.units)),
    );
    let mut steps = vec![Step {
        kind: Kind::Create,
        args: create,
        stdin: Stdin::Empty,
        expect: Expect::Ok,
    }];
    if rng.chance(0.05) {
        // rrdtool create overwrites by default.
        feats.insert("create:overwrite");
        steps.push(steps[0].clone());
    }
    if rng.chance(0.15) {
        feats.insert("err:create");
        steps.push(bad_create(&mut rng, t0, &create_args(&steps[0])));
    }
    let mut ug = UpdateGen::new(&mut rng, &schema, t0);
    let n = if rng.chance(0.12) {
        // A long run, so coarse archives fill and wrap; in big calls to keep it quick.
        feats.insert("long-run");
        ug.max_per_call = rng.range(10, 30);
        rng.range(150, 500)
    } else {
        rng.range(8, 60)
    };
    ug.run(&mut rng, n, &mut feats, &mut steps, &mut |rng, steps| {
        mid_query(rng, steps)
    });
    // A quarter of the cases tune the file, then update it a little more (with a stream of
    // their own, so that the rest of a seed's case is what it was before tune existed).
    // What follows a tune is not modelled: those steps expect anything.
    let mut trng = super::rng::seeded(seed ^ 0x7475_6e65);
    let forced = (TUNED..SOURCED).contains(&seed);
    if holt {
        // More calls of more values, so that seasons pass: the burn-in smoothings, later
        // ones, failures.
        ug.max_per_call = hrng.range(3, 15);
        let n = hrng.range(20, 80);
        ug.run(&mut hrng, n, &mut feats, &mut steps, &mut |rng, steps| {
            mid_query(rng, steps)
        });
        // tune's Holt-Winters options (its DS and RRA changes are not made on these yet).
        if hrng.chance(0.4) {
            feats.insert("tune");
            let from = steps.len();
            hw_tune_steps(&mut hrng, &schema, "x.rrd", &mut feats, &mut steps);
            let n = hrng.range(5, 30);
            ug.run(&mut hrng, n, &mut feats, &mut steps, &mut |_, _| {});
            for s in &mut steps[from..] {
                s.expect = Expect::Any;
            }
        }
        let last = ug.applied.sec;
        final_queries(&mut rng, &schema, t0, last, &mut feats, &mut steps);
    } else if trng.chance(0.25) || forced {
        feats.insert("tune");
        let from = steps.len();
        tune_steps(&mut trng, &schema, "x.rrd", forced, &mut feats, &mut steps);
        let n = trng.range(2, 10);
        ug.run(&mut trng, n, &mut feats, &mut steps, &mut |_, _| {});
        let last = ug.applied.sec;
        if !sourced {
            final_queries(&mut rng, &schema, t0, last, &mut feats, &mut steps);
        } else {
            steps.push(dump_x());
        }
        for s in &mut steps[from..] {
            s.expect = Expect::Any;
        }
    } else if !sourced {
        let last = ug.applied.sec;
        final_queries(&mut rng, &schema, t0, last, &mut feats, &mut steps);
    } else {
        // The --source cases read x.rrd through what they make of it, and its dump; the
        // other reads are the general cases' (and would only add time).
        steps.push(dump_x());
    }
    let x_last = ug.applied.sec;
    let plain_restore = steps
        .iter()
        .any(|s| s.kind == Kind::Restore && s.args.len() == 3);
    if plain_restore && rng.chance(0.3) {
        // The restored copy must consolidate further updates exactly like the original.
        feats.insert("restore:then-update");
        ug.file = "y.rrd";
        let n = rng.range(3, 12);
        let from = steps.len();
        ug.run(&mut rng, n, &mut feats, &mut steps, &mut |_, _| {});
        if feats.contains("tune") {
            // The copy has what the tune made: other data sources, maybe.
            for s in &mut steps[from..] {
                s.expect = Expect::Any;
            }
        }
        let last = ug.applied.sec;
        for cf in schema.cfs() {
            let mut f = fetch(&mut rng, &schema, cf, t0, last, &mut feats);
            f.args[1] = "y.rrd".to_string();
            steps.push(f);
        }
        steps.push(Step {
            kind: Kind::Dump,
            args: vec!["dump".to_string(), "y.rrd".to_string()],
            stdin: Stdin::Empty,
            expect: Expect::Ok,
        });
    }
    // Some cases then make new files from x.rrd with --source (a stream of their own again).
    let mut srng = super::rng::seeded(seed ^ 0x736f_7572_6365);
    if holt && hrng.chance(0.3) {
        // From a file with Holt-Winters archives, sometimes into one with them.
        source_steps(
            &mut srng,
            &schema,
            x_last,
            true,
            Some(&mut hrng),
            &mut feats,
            &mut steps,
        );
    } else if !holt && (srng.chance(0.1) || sourced) {
        let tuned = feats.contains("tune");
        source_steps(
            &mut srng, &schema, x_last, tuned, None, &mut feats, &mut steps,
        );
    }
    Case {
        seed,
        steps,
        features: feats,
    }
}

fn dump_x() -> Step {
    Step {
        kind: Kind::Dump,
        args: vec!["dump".to_string(), "x.rrd".to_string()],
        stdin: Stdin::Empty,
        expect: Expect::Ok,
    }
}

/// The DS and RRA arguments of a create step.
fn create_args(create: &Step) -> Vec<String> {
    create.args[6..].to_vec()
}

/// A `create` that rrdtool refuses, with the fragment of its message.
fn bad_create(rng: &mut Rng, t0: u64, good: &[String]) -> Step {
    let ds = "DS:a:GAUGE:600:U:U".to_string();
    let rra = "RRA:AVERAGE:0.5:1:10".to_string();
    let (name, step, defs, msg): (&str, &str, Vec<String>, &'static str) = match rng.range(0, 10) {
        0 => (
            "z.rrd",
            "10",
            vec![ds.clone(), ds.clone(), rra],
            "Duplicate DS name: a",
        ),
        1 => (
            "z.rrd",
            "10",
            vec![ds],
            "you must define at least one Round Robin Archive",
        ),
        2 => (
            "z.rrd",
            "10",
            vec![rra],
            "you must define at least one Data Source",
        ),
        3 => (
            "z.rrd",
            "10",
            vec!["DS:a:FOO:600:U:U".into(), rra],
            "invalid DS type specified (FOO)",
        ),
        4 => (
            "z.rrd",
            "10",
            vec![ds, "RRA:AVG:0.5:1:10".into()],
            "Unrecognized consolidation function AVG",
        ),
        5 => (
            "z.rrd",
            "10",
            vec![ds, "RRA:AVERAGE:1.5:1:10".into()],
            "Invalid xff: must be between 0 and 1",
        ),
        6 => (
            "z.rrd",
            "10",
            vec![ds, "RRA:AVERAGE:0.5:1:0".into()],
            "Invalid row count 0: value must be positive",
        ),
        7 => (
            "z.rrd",
            "10",
            vec!["DS:a:COMPUTE:b,1,+".into(), rra],
            "failed to parse computed data source",
        ),
        8 => (
            "z.rrd",
            "10",
            vec!["DS:a:GAUGE:600:10:5".into(), rra],
            "min must be less than max in DS definition",
        ),
        9 => (
            "z.rrd",
            "0",
            vec![ds, rra],
            "step size: value must be positive",
        ),
        _ => (
            "x.rrd",
            "10",
            good.to_vec(),
            "creating 'x.rrd': File exists",
        ),
    };
    // On an existing file with --no-overwrite, rrdtool reports the file before any bad
    // definition.
    let (name, defs, msg) = if rng.chance(0.3) {
        ("x.rrd", defs, "creating 'x.rrd': File exists")
    } else {
        (name, defs, msg)
    };
    let mut args = vec!["create".to_string(), name.to_string()];
    if name == "x.rrd" {
        args.push(rng.pick(&["--no-overwrite", "-O"]).to_string());
    }
    args.extend([
        "--start".to_string(),
        t0.to_string(),
        "--step".to_string(),
        step.to_string(),
    ]);
    args.extend(defs);
    Step {
        kind: Kind::Create,
        args,
        stdin: Stdin::Empty,
        expect: Expect::Err(msg),
    }
}
