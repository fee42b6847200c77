//! Decoders never panic (nor allocate without bound) on damaged input: every decoder is fed
//! seeded mutations of valid encodings and random bytes, and must return `Ok` or `Err`.

use codec::bytes::ByteReader;
use codec::checkpoint::{decode_checkpoint_header, decode_checkpoint_payload, encode_checkpoint};
use codec::record::{decode_record, RecordWriter};
use codec::rrdbin::{decode_rrd, rrd_bytes};
use codec::sample::{decode_chunk, encode_chunk, SeriesCodec};
use rrd::{Cf, DsDef, DsType, RraDef, Rrd, Sample, Schema};

use testkit::Rng;

fn rrd() -> Rrd {
    let ds = |name: &str, kind| DsDef {
        name: name.into(),
        kind,
        heartbeat: 600,
        min: f64::NAN,
        max: f64::NAN,
        rpn: None,
    };
    let schema = Schema {
        step: 300,
        ds: vec![ds("a", DsType::Gauge), ds("b", DsType::Counter)],
        rra: vec![
            RraDef {
                cf: Cf::Average,
                xff: 0.5,
                pdp_cnt: 1,
                row_cnt: 50,
                par: [0; 5],
            },
            RraDef {
                cf: Cf::Max,
                xff: 0.5,
                pdp_cnt: 6,
                row_cnt: 10,
                par: [0; 5],
            },
        ],
    };
    let mut r = Rrd::new(schema, 1_700_000_000);
    let mut vals = r.rra[0].rows.to_vec();
    for (i, v) in vals.iter_mut().enumerate().step_by(3) {
        *v = i as f64;
    }
    r.rra[0].rows = rrd::Rows::from_values(r.ds_cnt(), &vals);
    r
}

/// Flip, overwrite, insert, delete or truncate a few bytes.
fn mutate(rng: &mut Rng, b: &[u8]) -> Vec<u8> {
    let mut v = b.to_vec();
    for _ in 0..1 + rng.index(4) {
        match rng.index(5) {
            0 if !v.is_empty() => {
                let i = rng.index(v.len());
                v[i] ^= 1 << rng.index(8);
            }
            1 if !v.is_empty() => {
                let i = rng.index(v.len());
                v[i] = rng.next_u64() as u8;
            }
            2 => {
                let i = rng.index(v.len() + 1);
                v.insert(i, rng.next_u64() as u8);
            }
            3 if !v.is_empty() => {
                let i = rng.index(v.len());
                v.remove(i);
            }
            _ => {
                let n = rng.index(v.len() + 1);
                v.truncate(n);
            }
        }
    }
    v
}

#[test]
fn damaged_encodings_decode_to_errors_not_panics() {
    let r = rrd();
    let image = rrd_bytes(&r);
    let mut w = RecordWriter::new();
    w.create(3, "x/y.rrd", &r);
    w.samples(3, 2, &[0x87, 0xd8, 0x45]);
    w.remove(3);
    let record = w.finish();
    let ck = encode_checkpoint(4, 8192, 2, 5, [(3u64, "x/y.rrd", &r)].into_iter());
    let samples: Vec<Sample> = (1..40)
        .map(|i| Sample {
            time: 1_700_000_000 + 300 * i,
            usec: 0,
            values: vec![format!("{}.{:02}", i % 7, i % 100), (i * 1000).to_string()],
        })
        .collect();
    let seed = SeriesCodec::from_rrd(&r);
    let chunk = encode_chunk(&mut seed.clone(), &samples).unwrap();

    let mut rng = Rng::new(0x1234_5678_9ABC_DEF1);
    for _ in 0..3000 {
        let d = mutate(&mut rng, &image);
        let _ = decode_rrd(&mut ByteReader::new(&d));
        let d = mutate(&mut rng, &record);
        let _ = decode_record(&d);
        let d = mutate(&mut rng, &ck);
        if let Ok(h) = decode_checkpoint_header(&d) {
            let body = d.get(56..).unwrap_or(&[]);
            let _ = decode_checkpoint_payload(&h, body);
        }
        let d = mutate(&mut rng, &chunk);
        let _ = decode_chunk(&mut seed.clone(), &d, samples.len());
        let random: Vec<u8> = (0..rng.index(200)).map(|_| rng.next_u64() as u8).collect();
        let _ = decode_rrd(&mut ByteReader::new(&random));
        let _ = decode_record(&random);
    }
}
