//! Bytes per sample of the sample codec on realistic monitoring series, as a commit record
//! carries them (chunk plus the entry's id, count and length), with a 5-minute commit window.
//! Run with `--nocapture` to see the table.

use codec::record::RecordWriter;
use codec::sample::{encode_chunk, SeriesCodec};
use rrd::Sample;

use testkit::Rng;

/// One value text per step for `n` steps.
fn series(kind: &str, n: usize, rng: &mut Rng) -> Vec<String> {
    let mut out = Vec::with_capacity(n);
    match kind {
        // Temperature-like: a slow random walk printed with 2 decimals.
        "gauge-2dec-walk" => {
            let mut v = 21.37f64;
            for _ in 0..n {
                v += (rng.unit() - 0.5) * 0.1;
                out.push(format!("{v:.2}"));
            }
        }
        // Load average: mean-reverting noise, 2 decimals.
        "gauge-2dec-load" => {
            let mut v = 0.8f64;
            for _ in 0..n {
                v = (v + (1.0 - v) * 0.1 + (rng.unit() - 0.5) * 0.2).max(0.0);
                out.push(format!("{v:.2}"));
            }
        }
        // CPU percent: noisy, 2 decimals (a hard case).
        "gauge-2dec-cpu" => {
            for _ in 0..n {
                out.push(format!("{:.2}", 20.0 + rng.unit() * 10.0));
            }
        }
        // Interface octets: ~10 kB/s with +-10% jitter.
        "counter-octets" => {
            let mut c: u64 = 123_456_789;
            for _ in 0..n {
                c += (150_000.0 * (0.9 + 0.2 * rng.unit())) as u64;
                out.push(c.to_string());
            }
        }
        // Packets: a few per second.
        "counter-packets" => {
            let mut c: u64 = 98_765;
            for _ in 0..n {
                c += 40 + rng.next_u64() % 20;
                out.push(c.to_string());
            }
        }
        // Rarely-changing counter (errors).
        "counter-errors" => {
            let mut c: u64 = 3;
            for _ in 0..n {
                if rng.next_u64().is_multiple_of(200) {
                    c += 1;
                }
                out.push(c.to_string());
            }
        }
        "constant" => out.resize(n, "1".to_string()),
        _ => unreachable!(),
    }
    out
}

/// How sample times are spaced.
#[derive(Clone, Copy)]
enum Clock {
    /// Whole seconds, exactly 15 apart.
    Regular,
    /// rrdtool's local `N:`: 15 s apart, microseconds at random.
    RandomUsec,
    /// collectd: 15 s apart from a fixed sub-second phase, +-500 us of scheduling jitter.
    Jitter,
}

/// Payload bytes per sample when `values` (15 s apart) are committed 20 at a time.
fn bytes_per_sample(values: &[String], clock: Clock, rng: &mut Rng) -> f64 {
    let start = 1_700_000_000i64;
    let mut codec = SeriesCodec::seed(start, 0, ["U"]);
    let samples: Vec<Sample> = values
        .iter()
        .enumerate()
        .map(|(i, v)| {
            let t_us = (start + 15 * (i as i64 + 1)) * 1_000_000
                + match clock {
                    Clock::Regular => 0,
                    Clock::RandomUsec => (rng.next_u64() % 1_000_000) as i64,
                    Clock::Jitter => 47_140 + (rng.next_u64() % 1000) as i64 - 500,
                };
            Sample {
                time: t_us.div_euclid(1_000_000),
                usec: t_us.rem_euclid(1_000_000),
                values: vec![v.clone()],
            }
        })
        .collect();
    let mut total = 0usize;
    for batch in samples.chunks(20) {
        let chunk = encode_chunk(&mut codec, batch).unwrap();
        let mut w = RecordWriter::new();
        w.samples(1000, batch.len() as u64, &chunk);
        total += w.len();
    }
    total as f64 / samples.len() as f64
}

#[test]
fn bytes_per_sample_on_realistic_series() {
    let mut rng = Rng::new(0x5EED_1234_5678_9ABC);
    let n = 5760; // one day at 15 s
    let kinds = [
        "gauge-2dec-walk",
        "gauge-2dec-load",
        "gauge-2dec-cpu",
        "counter-octets",
        "counter-packets",
        "counter-errors",
        "constant",
    ];
    println!(
        "{:<18} {:>10}  (15 s steps, commits of 20 samples)",
        "series", "B/sample"
    );
    let mut regular = Vec::new();
    for kind in kinds {
        let v = series(kind, n, &mut rng);
        let b = bytes_per_sample(&v, Clock::Regular, &mut rng);
        println!("{kind:<18} {b:>10.3}");
        regular.push((kind, b));
    }
    let v = series("gauge-2dec-walk", n, &mut rng);
    let b = bytes_per_sample(&v, Clock::RandomUsec, &mut rng);
    println!("{:<18} {b:>10.3}", "walk, random usec");
    let jitter = bytes_per_sample(&v, Clock::Jitter, &mut rng);
    println!("{:<18} {jitter:>10.3}", "walk, usec jitter");
    let get = |k: &str| regular.iter().find(|(n, _)| *n == k).map(|x| x.1).unwrap();
    // The targets: about 1 byte per sample for regular 2-decimal gauges and counters.
    assert!(get("gauge-2dec-walk") < 1.3, "{}", get("gauge-2dec-walk"));
    assert!(get("gauge-2dec-load") < 1.5, "{}", get("gauge-2dec-load"));
    assert!(get("counter-packets") < 1.3, "{}", get("counter-packets"));
    assert!(get("counter-errors") < 0.7);
    assert!(get("constant") < 0.7);
    // collectd-style times (fixed phase, sub-millisecond jitter) cost about 12 bits more.
    assert!(jitter < get("gauge-2dec-walk") + 1.8, "{jitter}");
}
