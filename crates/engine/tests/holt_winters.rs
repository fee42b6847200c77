//! A series with Holt-Winters archives in the store: the seasonal smoother runs at the end
//! of an update call (`Store::end_update_call`), and the log says where, so that every
//! open (replay after the whole checkpoints such a store takes, spilled segments; a reader
//! of the one series; an open right after a call that failed, whose smoothing did not run)
//! holds exactly what the live store held, smoothing included, bit for bit as an RRD
//! updated call by call in memory.

mod common;

use common::*;
use engine::{Options, Store};
use rrd::update::parse_update_arg;
use rrd::Rrd;

fn schema() -> rrd::Schema {
    let args: Vec<String> = "h.rrd --start 1700000000 --step 10 DS:x:GAUGE:40:U:U \
         DS:y:GAUGE:40:U:U RRA:AVERAGE:0.5:1:50 RRA:HWPREDICT:80:0.4:0.1:40"
        .split_whitespace()
        .map(String::from)
        .collect();
    rrd::create::parse_create(&args, 0).unwrap().schema
}

/// One call's update arguments: one to four values a few seconds apart on a season of 40
/// steps, sometimes after a gap of more than two steps.
fn call(rng: &mut Rng, t: &mut i64) -> Vec<String> {
    (0..1 + rng.below(4))
        .map(|_| {
            *t += if rng.below(60) == 0 {
                10 * (3 + rng.below(8) as i64)
            } else {
                4 + rng.below(9) as i64
            };
            let phase = (*t / 10) as f64 * std::f64::consts::TAU / 40.0;
            let v = 100.0 + 30.0 * phase.sin() + rng.below(100) as f64 / 20.0;
            format!("{}:{v:.2}:{:.1}", *t, v / 2.0)
        })
        .collect()
}

fn apply_call(st: &mut Store, model: &mut Rrd, argv: &[String]) -> bool {
    let id = st.series_id("h").unwrap();
    let schema = model.schema.clone();
    let mut ok = true;
    for a in argv {
        let s = parse_update_arg(&schema, a, None, (0, 0)).unwrap();
        let m = model.apply(&s, &mut |_| {}).is_ok();
        let r = st.update_id(id, &s, &mut |_| {}).is_ok();
        assert_eq!(m, r);
        ok &= m;
    }
    let smoothed = model.end_update_call(ok);
    st.end_update_call(id, ok).unwrap();
    smoothed
}

fn same_as(st: &Store, model: &Rrd, when: &str) {
    let got = st.get("h").expect("the series");
    if rrd::rrdfile::write(got).unwrap() != rrd::rrdfile::write(model).unwrap() {
        eprintln!(
            "last_up {} {} pdp {:?} {:?}",
            got.last_up, model.last_up, got.pdp, model.pdp
        );
        eprintln!(
            "cdp eq {}",
            format!("{:?}", got.cdp) == format!("{:?}", model.cdp)
        );
        eprintln!("hw eq {}", got.hw == model.hw);
        for (i, (a, b)) in got.rra.iter().zip(&model.rra).enumerate() {
            let (x, y) = (a.rows.to_vec(), b.rows.to_vec());
            let d: Vec<usize> = (0..x.len())
                .filter(|&k| x[k].to_bits() != y[k].to_bits())
                .collect();
            eprintln!("rra {i} cur {} {} differing {:?}", a.cur_row, b.cur_row, d);
        }
    }
    assert!(
        rrd::rrdfile::write(got).unwrap() == rrd::rrdfile::write(model).unwrap(),
        "{when}: the store's series differs from the model"
    );
}

#[test]
fn smoothing_is_logged_where_it_ran_and_replayed_there() {
    let dir = TempDir::new("hw");
    let mut model = Rrd::new(schema(), 1_700_000_000);
    // A small ring: checkpoints every few dozen calls.
    let log = 48 << 10;
    let mut st = Store::open(&dir.0, small_opts(log)).unwrap();
    st.create("h", model.clone(), false).unwrap();
    let mut rng = Rng::seeded(7);
    let mut t = 1_700_000_000i64;
    let mut smoothed = 0;
    for n in 0..1500 {
        let mut argv = call(&mut rng, &mut t);
        if n % 13 == 0 {
            // A call that fails at its end (a time before the last): its values stay, and
            // the smoothing it scheduled does not run, also after a reopen replays it.
            argv.push(format!("{}:1:1", t - 100));
        }
        if apply_call(&mut st, &mut model, &argv) {
            smoothed += 1;
        }
        if n % 13 == 0 {
            // Reopened right after the failed call: what its values scheduled is not left
            // for the next call to run.
            st.commit().unwrap();
            drop(st);
            st = Store::open(&dir.0, small_opts(log)).unwrap();
            same_as(&st, &model, &format!("reopened after the failed call {n}"));
        }
        match n % 97 {
            // Commits of a few calls, some of them with a smoothing in the middle.
            0..=40 if n % 7 == 0 => {
                st.commit().unwrap();
            }
            50 => {
                st.commit().unwrap();
                st.checkpoint().unwrap();
            }
            96 => {
                // Reopened: replay of everything since the last checkpoint.
                st.commit().unwrap();
                drop(st);
                let only = Options {
                    only: Some(vec!["h".to_string()]),
                    ..small_opts(log)
                };
                let reader = Store::open(&dir.0, only).unwrap();
                same_as(&reader, &model, &format!("read alone after call {n}"));
                drop(reader);
                st = Store::open(&dir.0, small_opts(log)).unwrap();
                same_as(&st, &model, &format!("reopened after call {n}"));
            }
            _ => {}
        }
    }
    st.commit().unwrap();
    drop(st);
    let st = Store::open(&dir.0, small_opts(log)).unwrap();
    same_as(&st, &model, "at the end");
    // The season of 40 rows smooths with rrdtool's default window (2 rows of 40): it must
    // have run, and changed the seasonal rows, many times for the test to mean anything.
    assert!(smoothed >= 20, "the smoother ran {smoothed} times");
}
