use super::*;

fn xorshift(x: u64) -> impl FnMut() -> u64 {
    let mut rng = testkit::Rng::new(x);
    move || rng.next_u64()
}

fn mixed_values(n: usize, seed: u64) -> Vec<f64> {
    let mut next = xorshift(seed);
    (0..n)
        .map(|_| match next() % 5 {
            0 => f64::from_bits(next()),
            1 => (next() % 100_000) as f64 / 100.0,
            2 => -((next() % 1000) as f64) / 8.0,
            3 => (next() % 1_000_000) as f64 / 1e6,
            _ => f64::NAN,
        })
        .collect()
}

fn bits(v: &[f64]) -> Vec<u64> {
    v.iter().map(|x| x.to_bits()).collect()
}

#[test]
fn rows_decode_a_chunk_at_a_time() {
    // Blocks that cross chunk boundaries, runs over whole chunks and parts of them, and
    // rows of two DSs: the same rows as decoding every value first.
    let mut vals = mixed_values(3000, 7);
    vals.extend(std::iter::repeat_n(2.5, 1100));
    vals.extend(mixed_values(333, 9));
    vals.extend(std::iter::repeat_n(f64::NAN, 700));
    for ds in [1, 2] {
        let n = vals.len() / ds * ds;
        let mut buf = Vec::new();
        encode_values(&vals[..n], &mut buf);
        buf.extend_from_slice(b"after");
        let (rows, used) = decode_rows(&buf, (n / ds) as u64, ds).unwrap();
        assert_eq!(used, buf.len() - 5);
        assert_eq!(bits(&rows.to_vec()), bits(&vals[..n]));
        assert!(decode_rows(&buf[..used - 1], (n / ds) as u64, ds).is_err());
        assert!(decode_rows(&buf, (n / ds) as u64 + 1, ds).is_err());
    }
    // 2^31 unknowns in a few bytes: a chunk table, no values (found by fuzzing: it
    // was expanded first, 16 GB).
    let mut buf = Vec::new();
    put_varint(&mut buf, (1u64 << 31) << 2 | BLOCK_REPEAT);
    buf.extend_from_slice(&crate::num::DNAN.to_le_bytes());
    let (rows, used) = decode_rows(&buf, 1 << 31, 1).unwrap();
    assert_eq!(used, buf.len());
    assert!(rows.heap_bytes() < 40 << 20, "{}", rows.heap_bytes());
    assert!(rows.get((1 << 31) - 1).is_nan());
}

#[test]
fn packed_values_come_back_bit_for_bit() {
    let vals = mixed_values(5000, 0x2545_F491_4F6C_DD1D);
    let mut out = Vec::new();
    encode_values(&vals, &mut out);
    let mut back = Vec::new();
    let used = decode_values(&out, vals.len(), &mut back).unwrap();
    assert_eq!(used, out.len());
    assert_eq!(bits(&back), bits(&vals));
}

/// What rrdtool's consolidation makes of short decimals and whole counts: sums of
/// 2-decimal values divided by a PDP count (with the sum's rounding), rates over whole
/// seconds, their averages; and, between them, noise, repeats and unknowns.
fn rrd_like_values(n: usize, seed: u64) -> Vec<f64> {
    let mut next = xorshift(seed);
    let mut out = Vec::with_capacity(n);
    while out.len() < n {
        let kind = next() % 6;
        for _ in 0..(1 + next() % 40) {
            out.push(match kind {
                0 => {
                    let k = [4u64, 6, 40, 12, 288][(next() % 5) as usize];
                    let sum: f64 = (0..k).map(|_| (next() % 10_000) as f64 / 100.0).sum();
                    sum / k as f64
                }
                1 => {
                    let step = [10.0, 15.0, 60.0, 300.0][(next() % 4) as usize];
                    (next() % 5_000_000) as f64 / step
                }
                2 => {
                    let r: f64 = (0..6).map(|_| (next() % 50_000) as f64 / 300.0).sum();
                    r / 6.0
                }
                3 => f64::from_bits(next()),
                4 => -((next() % 1000) as f64) / 3.0,
                _ => [f64::NAN, 0.0, -0.0, f64::INFINITY, 1.5][(next() % 5) as usize],
            });
        }
    }
    out.truncate(n);
    out
}

#[test]
fn ratios_of_small_divisors_come_back_bit_for_bit_in_fewer_bytes() {
    for seed in 1..40u64 {
        let vals = rrd_like_values(3000, seed * 0x9E37_79B9);
        let mut out = Vec::new();
        encode_values(&vals, &mut out);
        let mut back = Vec::new();
        let used = decode_values(&out, vals.len(), &mut back).unwrap();
        assert_eq!(used, out.len());
        assert_eq!(bits(&back), bits(&vals), "seed {seed}");
    }
    // Averages of four 2-decimal PDPs, as rrdtool sums and divides them: most are not
    // short decimals (the sum's rounding), all are ratios of 4 * 10^2 within an ulp or two.
    let mut next = xorshift(99);
    let avgs: Vec<f64> = (0..256)
        .map(|_| {
            (0..4)
                .map(|_| (next() % 10_000) as f64 / 100.0)
                .sum::<f64>()
                / 4.0
        })
        .collect();
    let mut out = Vec::new();
    encode_values(&avgs, &mut out);
    assert!(out.len() < 256 * 4, "{} bytes for 256 averages", out.len());
    // Rates of counters over 300 s: within a few units of m / 300.
    let rates: Vec<f64> = (0..256)
        .map(|_| (next() % 3_000_000) as f64 / 300.0)
        .collect();
    let mut out2 = Vec::new();
    encode_values(&rates, &mut out2);
    assert!(out2.len() < 256 * 5, "{} bytes for 256 rates", out2.len());
    for (v, b) in [(avgs, out), (rates, out2)] {
        let mut back = Vec::new();
        decode_values(&b, v.len(), &mut back).unwrap();
        assert_eq!(bits(&back), bits(&v));
    }
    // Noise stays literal: no block kind that costs more than the 8 bytes.
    let noise: Vec<f64> = (0..256).map(|_| f64::from_bits(next() >> 2)).collect();
    let mut out3 = Vec::new();
    encode_values(&noise, &mut out3);
    assert!(out3.len() <= 256 * 8 + 8, "{}", out3.len());
}

/// Munin's and Cacti's rows: a counter's rate over 300 s (an increment of 0 to 50,000
/// divided), the average of six of them (Munin's 30-minute archive), and a 2-decimal
/// random walk; the bytes a value of the packed blocks and of the varint blocks before
/// them (kinds 2 and 3, still written where they are smaller).
#[test]
fn packed_blocks_take_the_bits_of_the_values_spread() {
    let mut next = xorshift(0x5EED);
    let rates: Vec<f64> = (0..256).map(|_| (next() % 50_001) as f64 / 300.0).collect();
    let avgs: Vec<f64> = (0..256)
        .map(|_| {
            (0..6)
                .map(|_| (next() % 50_001) as f64 / 300.0)
                .sum::<f64>()
                / 6.0
        })
        .collect();
    let mut level = 5_000i64;
    let walk: Vec<f64> = (0..256)
        .map(|_| {
            level += (next() % 41) as i64 - 20;
            level as f64 / 100.0
        })
        .collect();
    for (what, vals, most, varint_least) in [
        ("rates", &rates, 2.1, 3.5),
        ("averages of 6 rates", &avgs, 2.9, 3.5),
        ("2-decimal walk", &walk, 0.85, 1.0),
    ] {
        let mut out = Vec::new();
        encode_values(vals, &mut out);
        let mut back = Vec::new();
        assert_eq!(
            decode_values(&out, vals.len(), &mut back).unwrap(),
            out.len()
        );
        assert_eq!(bits(&back), bits(vals), "{what}");
        let a_value = out.len() as f64 / vals.len() as f64;
        assert!(a_value <= most, "{what}: {a_value} bytes a value");
        assert_eq!(out[0], EXTENDED, "{what}: one packed block");
        // The same run in the varint blocks: a decimal one where the values are short
        // decimals, else a ratio one.
        let varint = match min_scale(vals[0]) {
            Some(s) if vals.iter().all(|&v| as_decimal(v, s).is_some()) => {
                let ms: Vec<i64> = vals.iter().map(|&v| as_decimal(v, s).unwrap()).collect();
                form_cost(Form::Decimal, 1, &ms, &vec![0; ms.len()])
            }
            _ => {
                let (k, scale, n) = best_ratio(vals).unwrap();
                assert_eq!(n, vals.len(), "{what}");
                let d = ratio_divisor(k, scale);
                let (ms, us): (Vec<i64>, Vec<i64>) =
                    vals.iter().map(|&v| as_ratio(v, d).unwrap()).unzip();
                form_cost(Form::Ratio, k, &ms, &us)
            }
        };
        assert!(
            varint as f64 / vals.len() as f64 >= varint_least,
            "{what}: varint {varint}"
        );
    }
}

#[test]
fn the_form_chosen_is_the_one_of_fewest_bytes() {
    // choose_form's one pass against form_cost's figure for each form, on runs of
    // every length up to a block, spreads small and large, with and without ulps.
    let mut next = xorshift(0xF0F0);
    for _ in 0..3_000 {
        let n = 1 + (next() % MAX_PACKED as u64) as usize;
        let spread = 1u64 << (next() % 50);
        let walk = next().is_multiple_of(2);
        let mut m = (next() % (1 << 40)) as i64 - (1 << 39);
        let ms: Vec<i64> = (0..n)
            .map(|_| {
                let r = (next() % spread) as i64 - (spread / 2) as i64;
                if walk {
                    m += r;
                    m
                } else {
                    r
                }
            })
            .collect();
        let us: Vec<i64> = (0..n)
            .map(|_| match next() % 3 {
                0 => 0,
                _ => (next() % (2 * MAX_ULPS as u64 + 1)) as i64 - MAX_ULPS,
            })
            .map(|u| if walk { u } else { 0 })
            .collect();
        let k = [1u64, 3, 300][(next() % 3) as usize];
        let exact = k == 1 && us.iter().all(|&u| u == 0);
        let least = [
            Form::Decimal,
            Form::Ratio,
            Form::Packed(PRED_NONE),
            Form::Packed(PRED_DELTA),
        ]
        .into_iter()
        .filter(|&f| f != Form::Decimal || exact)
        .map(|f| form_cost(f, k, &ms, &us))
        .min()
        .unwrap();
        let chosen = choose_form(k, &ms, &us);
        assert_eq!(form_cost(chosen, k, &ms, &us), least, "{chosen:?}, n {n}");
        let mut out = Vec::new();
        put_numbered_block(&mut out, k, 2, &ms, &us);
        assert_eq!(out.len(), least, "{chosen:?}, n {n}");
    }
}

#[test]
fn blocks_written_before_packed_ones_still_read() {
    // A decimal block (kind 2) of 1.25, 1.5, 1.0, 0.75 at scale 2 and a ratio block
    // (kind 3) of 1/3 and 2/3 (k 3, scale 0, u 0), as written before packed blocks.
    let mut b = vec![(4 << 2) | 2, 2];
    for d in [125i64, 25, -50, -25] {
        put_varint(&mut b, zigzag(d));
    }
    b.extend_from_slice(&[(2 << 2) | 3, 3, 0, 2, 0, 2, 0]);
    let mut back = Vec::new();
    assert_eq!(decode_values(&b, 6, &mut back).unwrap(), b.len());
    assert_eq!(
        bits(&back),
        bits(&[1.25, 1.5, 1.0, 0.75, 1.0 / 3.0, 2.0 / 3.0])
    );
}

#[test]
fn a_packed_block_of_any_bytes_decodes_or_errs() {
    // Extended headers followed by random bytes: values or an error, never a panic,
    // and never more than MAX_PACKED values from one block whatever its widths say.
    let mut next = xorshift(11);
    for _ in 0..50_000 {
        let n = 1 + next() % 300;
        let mut b = vec![EXTENDED];
        put_varint(&mut b, (n << 2) | (next() % 4));
        for _ in 0..(next() % 40) {
            b.push(next() as u8);
        }
        let mut back = Vec::new();
        match decode_values(&b, n as usize, &mut back) {
            Ok(used) => {
                assert!(used <= b.len());
                assert_eq!(back.len(), n as usize);
            }
            Err(e) => assert!(e.offset <= b.len(), "{e:?}"),
        }
    }
    // Zero-width fields: no bytes, so the count alone bounds the block.
    let mut b = vec![EXTENDED];
    put_varint(&mut b, ((MAX_PACKED as u64 + 1) << 2) | EXT_PACKED);
    b.extend_from_slice(&[1, 0, PRED_NONE, 0, 0, 0]);
    let e = decode_values(&b, MAX_PACKED + 1, &mut Vec::new()).unwrap_err();
    assert!(e.what.contains("too long"), "{e:?}");
}

#[test]
fn a_ratio_block_of_any_bytes_decodes_or_errs() {
    // Headers of kind 3 followed by random bytes: a value or an error, never a panic.
    let mut next = xorshift(5);
    for _ in 0..20_000 {
        let n = 1 + next() % 6;
        let mut b = Vec::new();
        put_varint(&mut b, (n << 2) | BLOCK_RATIO);
        for _ in 0..(next() % 24) {
            b.push(next() as u8);
        }
        let mut back = Vec::new();
        let _ = decode_values(&b, n as usize, &mut back);
    }
}

#[test]
fn truncated_packing_is_an_error_not_a_panic() {
    let vals = mixed_values(300, 7);
    let mut out = Vec::new();
    encode_values(&vals, &mut out);
    for cut in [0, 1, out.len() / 2, out.len() - 1] {
        let mut back = Vec::new();
        assert!(decode_values(&out[..cut], vals.len(), &mut back).is_err());
    }
}

#[test]
fn writes_around_the_ring_read_back_like_a_vec() {
    // 3 DS: 85 rows a chunk; 1000 rows is 12 chunks, the last one short.
    let (rows, ds) = (1000usize, 3usize);
    let mut model = vec![f64::NAN; rows * ds];
    let mut r = Rows::filled(rows as u64, ds, f64::NAN);
    let vals = mixed_values(rows * ds * 3, 99);
    let mut k = 0;
    for lap in 0..3 {
        for row in (0..rows).map(|i| (i + 400 * lap) % rows) {
            for d in 0..ds {
                let v = vals[k % vals.len()];
                k += 1;
                model[row * ds + d] = v;
                r.set(row * ds + d, v);
            }
            if row % 97 == 0 {
                let i = (row * 7) % (rows * ds);
                assert_eq!(r.get(i).to_bits(), model[i].to_bits());
            }
        }
        assert_eq!(bits(&r.to_vec()), bits(&model));
    }
    r.seal();
    assert_eq!(bits(&r.to_vec()), bits(&model));
    let mut rd = r.reader();
    for row in (0..rows).rev() {
        assert_eq!(bits(rd.row(row)), bits(&model[row * ds..row * ds + ds]));
    }
    let again = Rows::from_values(ds, &model);
    assert_eq!(bits(&again.to_vec()), bits(&model));
}

/// [`near`] turns away no value that the exact checks accept: values within a few units
/// in the last place of ratios of every divisor (at and past the 63 allowed, `m` from 1
/// to near 2^53, both signs), short decimals, and random bit patterns.
#[test]
fn the_division_free_test_never_turns_away_a_fit() {
    let exact_ratio = |v: f64, d: f64| {
        let m = round_small(v * d)?;
        let u = v.to_bits().wrapping_sub((m as f64 / d).to_bits()) as i64;
        (u.unsigned_abs() <= MAX_ULPS as u64).then_some((m, u))
    };
    let exact_decimal = |v: f64, scale: u8| {
        let p = POW10[scale as usize];
        let m = round_small(v * p)?;
        ((m as f64 / p).to_bits() == v.to_bits()).then_some(m)
    };
    let mut next = xorshift(11);
    let divs = ratio_divisors();
    let (mut fits, mut turned) = (0, 0);
    for i in 0..400_000 {
        let (_, scale, d) = divs[(next() % divs.len() as u64) as usize];
        let mag = 1u64 << (next() % 53);
        let mut m = (next() % mag) as i64;
        if next().is_multiple_of(2) {
            m = -m;
        }
        let u = (next() % 141) as i64 - 70;
        let v = match i % 4 {
            0 | 1 => ratio_value(m, d, u),
            2 => m as f64 / POW10[scale as usize],
            _ => f64::from_bits(next()),
        };
        let want = exact_ratio(v, d);
        assert_eq!(as_ratio(v, d), want, "{v:e} / {d}");
        fits += usize::from(want.is_some());
        turned += usize::from(want.is_none() && round_small(v * d).is_some());
        assert_eq!(
            as_decimal(v, scale),
            exact_decimal(v, scale),
            "{v:e} at {scale}"
        );
    }
    // Both sides of the line were reached.
    assert!(fits > 100_000 && turned > 50_000, "{fits} {turned}");
}

#[test]
fn round_small_rounds_as_round_does() {
    let mut next = xorshift(3);
    let mut cases = vec![
        0.0,
        -0.0,
        0.5,
        -0.5,
        1.5,
        -1.5,
        2.5,
        0.49999999999999994,
        -0.49999999999999994,
        4503599627370495.5,
        -4503599627370495.5,
        8.99999999999999e15,
        9.0e15,
        -9.0e15,
        9.1e15,
        1e300,
        f64::INFINITY,
        f64::NEG_INFINITY,
        f64::NAN,
        5e-324,
    ];
    cases.extend((0..100_000).map(|_| f64::from_bits(next()) % 1e16));
    cases.extend((0..100_000).map(|_| (next() % 2_000_000) as f64 / 1000.0 - 1000.0));
    for x in cases {
        let want = x.round();
        let want = (want.is_finite() && want.abs() < 9.0e15).then_some(want as i64);
        assert_eq!(round_small(x), want, "{x:e}");
    }
}

#[test]
fn an_open_chunk_fits_in_64_bytes() {
    // Every archive being written keeps one: a million series, two or three each.
    assert!(size_of::<Open>() <= 64, "{}", size_of::<Open>());
}

#[test]
fn the_open_chunk_holds_only_what_was_written_and_writes_anywhere_stay_exact() {
    let (rows, ds) = (1000usize, 2usize);
    let vals = mixed_values(rows * ds, 7);
    let mut model = vals.clone();
    let mut r = Rows::from_values(ds, &vals);
    let at_rest = r.heap_bytes();
    // Rows written in order: the open chunk holds the written values only.
    for row in 300..310 {
        for d in 0..ds {
            let v = (row * 10 + d) as f64;
            model[row * ds + d] = v;
            r.set(row * ds + d, v);
        }
    }
    assert!(
        r.heap_bytes() < at_rest + 64 * 8,
        "{} after 10 rows, {at_rest} at rest",
        r.heap_bytes()
    );
    assert_eq!(bits(&r.to_vec()), bits(&model));
    assert_eq!(r.get(299 * ds).to_bits(), model[299 * ds].to_bits());
    assert_eq!(r.get(305 * ds + 1).to_bits(), model[305 * ds + 1].to_bits());
    // What a checkpoint keeps of it is every value of the chunk.
    let c = 300 / r.chunk_rows();
    let Keep::Values(kept) = r.keep(c, Fresh::NONE) else {
        panic!("rows written before the snapshot: the values");
    };
    let lo = c * r.chunk_rows() * ds;
    assert_eq!(bits(&kept), bits(&model[lo..lo + kept.len()]));
    // Out of order (before, then after a gap, then overwriting): still exact.
    for (i, v) in [(299 * ds, 1.25), (320 * ds + 1, -3.0), (301 * ds, 9.5)] {
        model[i] = v;
        r.set(i, v);
        assert_eq!(r.get(i).to_bits(), v.to_bits());
        assert_eq!(bits(&r.to_vec()), bits(&model));
    }
    r.seal();
    assert_eq!(bits(&r.to_vec()), bits(&model));
}

#[test]
fn an_open_chunk_packs_its_values_as_they_fill_and_reads_them_back() {
    // One DS: 256 rows a chunk. Averages as consolidation makes them, written in order
    // from mid-chunk (as after a restart), read back after every write.
    let mut next = xorshift(11);
    let n = 2000usize;
    let mut model = vec![crate::num::DNAN; n];
    let mut r = Rows::unknown(n as u64, 1);
    for i in 100..700 {
        let v = (0..6)
            .map(|_| (next() % 10_000) as f64 / 100.0)
            .sum::<f64>()
            / 6.0;
        model[i] = v;
        r.set(i, v);
        assert_eq!(r.get(i).to_bits(), v.to_bits(), "{i}");
        if i % 37 == 0 {
            let back = r.get(i - 35);
            assert_eq!(back.to_bits(), model[i - 35].to_bits(), "{i}");
            assert_eq!(bits(&r.to_vec()), bits(&model), "{i}");
        }
    }
    // Chunk 2 (rows 512..768) is open with 188 values: most of them packed, in far less
    // than 8 bytes each.
    let open = r.heap_bytes();
    assert!(open < 188 * 5 + 2 * 256 * 4, "{open} bytes");
    let c = 2;
    let Keep::Values(kept) = r.keep(c, Fresh::NONE) else {
        panic!("the values");
    };
    assert_eq!(bits(&kept), bits(&model[512..768]));
    // A write into the packed values: every value unpacked, still exact; then on in order.
    model[520] = -1.5;
    r.set(520, -1.5);
    assert_eq!(bits(&r.to_vec()), bits(&model));
    for (i, m) in model.iter_mut().enumerate().take(800).skip(700) {
        *m = i as f64 / 3.0;
        r.set(i, *m);
    }
    assert_eq!(bits(&r.to_vec()), bits(&model));
    r.seal();
    assert_eq!(bits(&r.to_vec()), bits(&model));
}

/// Chunk by chunk `a` and `b` hold the same bytes; their open chunks the same rows,
/// as many values packed and staged, `b`'s packed in no more bytes.
fn assert_same_packing(a: &Rows, b: &Rows, what: &str) {
    for c in 0..a.segs.len() {
        match (a.chunk(c), b.chunk(c)) {
            (Chunk::Fill(x), Chunk::Fill(y)) => assert_eq!(x, y, "{what}: chunk {c}"),
            (Chunk::Packed(x), Chunk::Packed(y)) => {
                assert_eq!(x.bytes(), y.bytes(), "{what}: chunk {c}")
            }
            _ => panic!("{what}: chunk {c} differs in kind"),
        }
    }
    match (&a.open, &b.open) {
        (None, None) => {}
        (Some(x), Some(y)) => {
            let f = |o: &Open| (o.idx, o.start, o.packed_n, o.staged_n(), o.written);
            assert_eq!(f(x), f(y), "{what}: the open chunk");
            // Packed together, no more room than group by group (on these values).
            assert!(y.packed_len <= x.packed_len, "{what}: packed bytes");
            assert!(
                y.buf.capacity() <= y.buf.len() + 8 * OPEN_GROUP,
                "{what}: room"
            );
        }
        _ => panic!("{what}: one has an open chunk"),
    }
}

#[test]
fn deferred_packing_ends_as_packing_as_it_fills() {
    // Rows written with their packing deferred, then packed, hold what rows written one
    // value at a time hold, wherever the writes start and stop, sealed chunks byte for
    // byte, the open chunk the same values packed and staged in no more bytes: replay
    // defers, the daemon's writes do not, and the two go on from each other's state.
    let mut next = xorshift(5);
    for ds in [1usize, 2, 3, 300] {
        let n = 2400 / ds * ds;
        let vals: Vec<f64> = (0..n)
            .map(|i| match i % 3 {
                0 => (next() % 10_000) as f64 / 100.0,
                1 => (0..4).map(|_| (next() % 1000) as f64 / 100.0).sum::<f64>() / 4.0,
                _ => f64::from_bits(next()),
            })
            .collect();
        for (from, stops) in [
            (0usize, vec![0usize, 7, 8, 9, 255, 256, 257, 1000]),
            (100, vec![13, 300, 611, 612, 1800]),
        ] {
            let from = from / ds * ds;
            let mut plain = Rows::unknown((n / ds) as u64, ds);
            let mut defer = Rows::unknown((n / ds) as u64, ds);
            let mut at = from;
            for (k, &stop) in stops.iter().chain([&n]).enumerate() {
                let stop = (stop / ds * ds).max(at).min(n);
                let what = format!("{ds} DS, from {from}, to {stop}");
                for (i, &v) in vals.iter().enumerate().take(stop).skip(at) {
                    plain.set(i, v);
                }
                // Every other stretch deferred, the others written as the daemon does.
                if k % 2 == 0 {
                    with_packing_deferred(|| {
                        for (i, &v) in vals.iter().enumerate().take(stop).skip(at) {
                            defer.set(i, v);
                        }
                    });
                    defer.pack_staged();
                } else {
                    for (i, &v) in vals.iter().enumerate().take(stop).skip(at) {
                        defer.set(i, v);
                    }
                }
                assert_same_packing(&plain, &defer, &what);
                assert_eq!(bits(&defer.to_vec()), bits(&plain.to_vec()), "{what}");
                at = stop;
            }
        }
    }
    // Deferred, the values stay unpacked until packed.
    let mut r = Rows::unknown(1000, 1);
    with_packing_deferred(|| (0..100).for_each(|i| r.set(i, i as f64 / 7.0)));
    let o = r.open.as_ref().expect("open");
    assert_eq!((o.packed_n, o.staged_n()), (0, 100));
    r.pack_staged();
    let o = r.open.as_ref().expect("open");
    assert_eq!((o.packed_n, o.staged_n()), (96, 4));
    // Out of order under deferral: every value staged, still exact once packed.
    let mut r = Rows::unknown(1000, 1);
    let mut model = vec![crate::num::DNAN; 1000];
    with_packing_deferred(|| {
        for i in (300..400).chain(310..330).chain(400..450) {
            model[i] = i as f64 * 0.25;
            r.set(i, model[i]);
        }
    });
    r.pack_staged();
    assert_eq!(bits(&r.to_vec()), bits(&model));
    assert!(!packing_deferred(), "the flag is put back");
}

fn stored_seg(k: Keep<'_>) -> Option<Option<u64>> {
    match k {
        Keep::Packed(p) => Some(p.stored()),
        _ => None,
    }
}

#[test]
fn keep_leaves_out_fresh_chunks_and_names_the_opened_version() {
    // 1 DS: 256 rows a chunk, 4 chunks. Rows 1..=600 written: chunks 0 and 1 sealed,
    // chunk 2 open with rows 512..=600 written into it.
    let mut r = Rows::filled(1000, 1, f64::NAN);
    for row in 1..=600 {
        r.set(row, row as f64 * 0.25);
    }
    if let Keep::Packed(p) = r.keep(0, Fresh::NONE) {
        p.mark_stored(5);
    }
    assert_eq!(stored_seg(r.keep(0, Fresh::NONE)), Some(Some(5)));
    assert_eq!(stored_seg(r.keep(1, Fresh::NONE)), Some(None));
    assert!(matches!(r.keep(2, Fresh::NONE), Keep::Values(v) if v[600 - 512] == 150.0));
    assert!(matches!(r.keep(3, Fresh::NONE), Keep::Fill(_)));
    // Since the snapshot, rows 500..=600: chunk 2 got only fresh rows, so its opened
    // version (unknown) will do; chunk 1 has older rows and is kept.
    let since = Fresh {
        first: 500,
        count: 101,
    };
    assert!(matches!(r.keep(2, since), Keep::Fill(b) if f64::from_bits(b).is_nan()));
    assert_eq!(stored_seg(r.keep(1, since)), Some(None));
    // Since row 590 only: chunk 2 has rows from before, so its values are kept.
    assert!(matches!(
        r.keep(
            2,
            Fresh {
                first: 590,
                count: 11
            }
        ),
        Keep::Values(_)
    ));
    // Replay rewrites chunks 0 and 1 whole: the stored one is named, the other left out.
    let wide = Fresh {
        first: 0,
        count: 601,
    };
    assert_eq!(stored_seg(r.keep(0, wide)), Some(Some(5)));
    assert!(matches!(r.keep(1, wide), Keep::Fill(_)));
    // Around the ring end: rows 900..=999 and 0..=300 cover chunk 0 (0..=255).
    let wrap = Fresh {
        first: 900,
        count: 401,
    };
    assert!(wrap.covers(0, 255, 1000) && !wrap.covers(256, 511, 1000));
}

/// A source holding packed chunks of series 1 archive 0, by (segment, chunk index).
struct Src(std::collections::HashMap<(u32, u32), Vec<u8>>);

impl ChunkSource for Src {
    fn chunk(&self, seg: u32, key: (u64, u32, u32)) -> Option<(SharedBytes, usize, usize)> {
        assert_eq!((key.0, key.1), (1, 0));
        let b = self.0.get(&(seg, key.2))?.clone();
        let len = b.len();
        Some((Arc::new(b), 0, len))
    }
}

#[test]
fn stored_chunks_are_read_through_the_source_and_leave_the_heap() {
    let vals = mixed_values(1000, 5);
    let mut packed = std::collections::HashMap::new();
    for c in 0..4 {
        let mut b = Vec::new();
        encode_values(&vals[c * 256..((c + 1) * 256).min(1000)], &mut b);
        packed.insert((7, c as u32), b);
    }
    let src: Arc<dyn ChunkSource> = Arc::new(Src(packed));
    let parts = (0..4).map(|_| Part::InSegments).collect();
    let mut r = Rows::from_parts(1000, 1, parts).unwrap();
    r.adopt(&src, 1, 0);
    assert_eq!(r.unplaced(), Some(0));
    for c in 0..4 {
        assert!(r.place(c, 7));
    }
    assert_eq!(r.unplaced(), None);
    assert_eq!(bits(&r.to_vec()), bits(&vals));
    assert_eq!(
        r.heap_bytes(),
        0,
        "a stored chunk is only its segment number"
    );
    assert_eq!(r.table().1, 4 * 4, "in the chunk table");
    let mut used = Vec::new();
    r.segments_used(&mut used);
    assert_eq!(used, vec![7; 4]);
    // Rewritten alike: still the stored version; changed: a heap version, which a store
    // settles once it has stored it.
    r.set(300, vals[300]);
    r.seal();
    assert!(matches!(r.keep(1, Fresh::NONE), Keep::Stored(7)));
    r.set(300, 1.5);
    r.seal();
    let Keep::Packed(p) = r.keep(1, Fresh::NONE) else {
        panic!("a new version is on the heap");
    };
    let p = p.clone();
    assert!(r.heap_bytes() > 0);
    r.settle(1, &p, 8);
    assert!(matches!(r.keep(1, Fresh::NONE), Keep::Stored(8)));
    // A copy shares the stored chunks; adopted by another store it reads them first.
    let mut copy = r.clone();
    let other: Arc<dyn ChunkSource> = Arc::new(Src(Default::default()));
    copy.adopt(&other, 1, 0);
    assert_eq!(copy.get(0).to_bits(), vals[0].to_bits());
    assert!(matches!(copy.keep(0, Fresh::NONE), Keep::Packed(_)));
    // Segment 8 is not in the source: the chunk reads as unknown, never as other bytes.
    assert!(r.get(300).is_nan() && r.get(256).is_nan());
    assert_eq!(r.get(0).to_bits(), vals[0].to_bits());
}

/// An open chunk rebased on its stored version holds nothing; the next writes open it
/// again on that version, holding only what they write, and read back over it.
#[test]
fn a_rebased_open_chunk_holds_only_what_is_written_after() {
    let vals = mixed_values(400, 11);
    let mut r = Rows::unknown(1000, 1);
    for (i, &v) in vals.iter().enumerate().take(300) {
        r.set(i, v);
    }
    // Chunk 1 (rows 256..512) is open with 44 values: store its version as a checkpoint
    // would, in segment 9.
    let Keep::Values(v) = r.keep(1, Fresh::NONE) else {
        panic!("the open chunk's values");
    };
    let mut b = Vec::new();
    encode_values(&v, &mut b);
    let src: Arc<dyn ChunkSource> = Arc::new(Src([((9, 1), b)].into_iter().collect()));
    r.adopt(&src, 1, 0);
    let before = r.heap_bytes();
    r.rebase(0, 9);
    assert_eq!(r.heap_bytes(), before, "chunk 0 is not the open one");
    r.rebase(1, 9);
    assert!(r.heap_bytes() < before, "{} of {before}", r.heap_bytes());
    assert!(matches!(r.keep(1, Fresh::NONE), Keep::Stored(9)));
    for (i, &v) in vals.iter().enumerate().skip(300) {
        r.set(i, v);
    }
    let mut want = vals.clone();
    want.resize(1000, crate::num::DNAN);
    assert!(
        bits(&r.to_vec()) == bits(&want),
        "read back over the stored version"
    );
    // Only rows a replay from a snapshot after the rebase rewrites were written since: the
    // stored version is what the checkpoint keeps.
    let fresh = Fresh {
        first: 300,
        count: 100,
    };
    assert!(matches!(r.keep(1, fresh), Keep::Stored(9)));
    let Keep::Values(v) = r.keep(1, Fresh::NONE) else {
        panic!("the open chunk's values");
    };
    assert_eq!(bits(&v[..144]), bits(&vals[256..400]));
    assert_eq!(
        r.open.as_ref().map(|o| o.len()),
        Some(100),
        "the values written after the rebase"
    );
    r.seal();
    assert!(bits(&r.to_vec()) == bits(&want), "sealed");
}

/// A source whose segments 20 and up hold pieces.
struct PieceSrc(std::collections::HashMap<(u32, u32), Vec<u8>>);

impl ChunkSource for PieceSrc {
    fn chunk(&self, seg: u32, key: (u64, u32, u32)) -> Option<(SharedBytes, usize, usize)> {
        let b = self.0.get(&(seg, key.2))?.clone();
        let len = b.len();
        Some((Arc::new(b), 0, len))
    }
    fn pieces(&self, seg: u32) -> bool {
        seg >= 20
    }
}

/// A chunk stored as a whole first piece and pieces over it reads as their values laid
/// over each other; a chain that points forward, is too long, or has a damaged link reads
/// as unknown, never as other values.
#[test]
fn pieces_read_back_over_the_pieces_before_them() {
    let vals = mixed_values(256, 21);
    let mut whole = Vec::new();
    encode_piece(0, 0, &vals[..100], &mut whole);
    // A first piece must be the whole chunk.
    assert!(piece_head(&whole, 256).is_err());
    whole.clear();
    let mut first = vals.clone();
    first[100..].fill(crate::num::DNAN);
    encode_piece(0, 0, &first, &mut whole);
    let mut p1 = Vec::new();
    encode_piece(100, 20, &vals[100..180], &mut p1);
    let mut p2 = Vec::new();
    encode_piece(180, 21, &vals[180..256], &mut p2);
    let h = piece_head(&p2, 256).unwrap();
    assert_eq!((h.start, h.n, h.prev), (180, 76, 21));
    let chunks = [((20, 0), whole), ((21, 0), p1.clone()), ((22, 0), p2)];
    let src: Arc<dyn ChunkSource> = Arc::new(PieceSrc(chunks.iter().cloned().collect()));
    let mut r = Rows::from_parts(256, 1, vec![Part::InSegments]).unwrap();
    r.adopt(&src, 1, 0);
    assert!(r.place(0, 22));
    assert_eq!(bits(&r.to_vec()), bits(&vals));
    // Flattened for a copy: the values packed whole.
    let mut back = Vec::new();
    decode_values(&r.packed_bytes(0).unwrap(), 256, &mut back).unwrap();
    assert_eq!(bits(&back), bits(&vals));
    // Read through segment 21: the first two pieces.
    assert!(r.place(0, 21));
    assert_eq!(bits(&r.to_vec()[..180]), bits(&vals[..180]));
    assert!(r.get(200).is_nan());
    // A piece whose link points at itself or a newer segment, a damaged link, a piece
    // past its chunk: unknown.
    let mut bad = Vec::new();
    encode_piece(100, 23, &vals[100..180], &mut bad);
    let mut gone = Vec::new();
    encode_piece(100, 19, &vals[100..180], &mut gone);
    let mut past = Vec::new();
    encode_piece(250, 20, &vals[100..180], &mut past);
    for (seg, b) in [(23, bad), (24, gone), (25, past)] {
        let mut m: std::collections::HashMap<(u32, u32), Vec<u8>> =
            chunks.iter().cloned().collect();
        m.insert((seg, 0), b);
        let src: Arc<dyn ChunkSource> = Arc::new(PieceSrc(m));
        let mut r = Rows::from_parts(256, 1, vec![Part::InSegments]).unwrap();
        r.adopt(&src, 1, 0);
        assert!(r.place(0, seg));
        assert!(r.to_vec().iter().all(|v| v.is_nan()), "segment {seg}");
    }
    // A chain longer than a read follows: unknown.
    let mut m: std::collections::HashMap<(u32, u32), Vec<u8>> = chunks.into_iter().collect();
    let top = 22 + MAX_PIECE_LINKS + 1;
    for seg in 23..=top {
        let mut b = Vec::new();
        encode_piece(180, seg - 1, &vals[180..256], &mut b);
        m.insert((seg, 0), b);
    }
    let src: Arc<dyn ChunkSource> = Arc::new(PieceSrc(m));
    let mut r = Rows::from_parts(256, 1, vec![Part::InSegments]).unwrap();
    r.adopt(&src, 1, 0);
    assert!(r.place(0, top));
    assert!(r.get(0).is_nan());
    assert!(r.place(0, 30));
    assert_eq!(r.get(0).to_bits(), vals[0].to_bits());
}

/// Archives that share a table and get the same chunks placed share the result; others
/// get their own; every value reads back from the segment placed.
#[test]
fn placing_shared_tables_keeps_them_shared() {
    let vals = mixed_values(1000, 9);
    let mut packed = std::collections::HashMap::new();
    for c in 0..4u32 {
        let mut b = Vec::new();
        let c0 = c as usize * 256;
        encode_values(&vals[c0..(c0 + 256).min(1000)], &mut b);
        packed.insert((7, c), b);
    }
    let src: Arc<dyn ChunkSource> = Arc::new(Src(packed));
    let mut pool = SegPool::default();
    let mut rows: Vec<Rows> = (0..3)
        .map(|_| {
            let parts = (0..4).map(|_| Part::InSegments).collect();
            let mut r = Rows::from_parts(1000, 1, parts).unwrap();
            r.adopt(&src, 1, 0);
            r.share(&mut pool);
            r
        })
        .collect();
    assert_eq!(rows[0].table().0, rows[2].table().0, "shared before");
    let mut memo = PlaceMemo::default();
    for r in &mut rows[..2] {
        r.place_many(&[0, 1, 2, 3], 7, &mut memo);
    }
    rows[2].place_many(&[0, 1], 7, &mut memo);
    assert_eq!(
        rows[0].table().0,
        rows[1].table().0,
        "the same placement, one table"
    );
    assert_ne!(rows[0].table().0, rows[2].table().0);
    assert_eq!(rows[0].unplaced(), None);
    assert_eq!(rows[2].unplaced(), Some(2));
    assert_eq!(bits(&rows[1].to_vec()), bits(&vals));
    assert_eq!(bits(&rows[2].to_vec()[..512]), bits(&vals[..512]));
}

#[test]
fn parts_rebuild_the_rows_and_stored_chunks_stay_stored_when_rewritten_alike() {
    let vals = mixed_values(1000, 3);
    let mut r = Rows::from_values(1, &vals);
    let parts: Vec<Part> = (0..r.chunk_count())
        .map(|c| match r.keep(c, Fresh::NONE) {
            Keep::Fill(b) => Part::Fill(b),
            Keep::Packed(p) => Part::Packed(p.bytes().to_vec(), 9),
            Keep::Values(v) => Part::Values(v.to_vec()),
            Keep::Stored(_) => Part::InSegments,
        })
        .collect();
    let mut back = Rows::from_parts(1000, 1, parts).unwrap();
    assert_eq!(bits(&back.to_vec()), bits(&vals));
    // Replay writes the same values again: the chunk is still the stored version.
    for (row, &v) in vals.iter().enumerate().take(300).skip(256) {
        back.set(row, v);
    }
    back.seal();
    assert_eq!(stored_seg(back.keep(1, Fresh::NONE)), Some(Some(9)));
    // A different value makes a new version, not stored.
    back.set(260, 1.0);
    back.seal();
    assert_eq!(stored_seg(back.keep(1, Fresh::NONE)), Some(None));
    // A copy is not marked: marks belong to the store that stored the chunk.
    assert_eq!(stored_seg(back.clone().keep(0, Fresh::NONE)), Some(None));
    assert_eq!(stored_seg(back.keep(0, Fresh::NONE)), Some(Some(9)));
    // Wrong shapes are errors.
    assert!(Rows::from_parts(1000, 1, vec![Part::Fill(0)]).is_err());
    r.seal();
    let bad = (0..4).map(|_| Part::Packed(vec![1, 2, 3], 1)).collect();
    assert!(Rows::from_parts(1000, 1, bad).is_err());
}

#[test]
fn chunks_left_in_a_shared_buffer_read_back_exactly_and_stay_off_the_heap() {
    let vals = mixed_values(1000, 3);
    let r = Rows::from_values(1, &vals);
    // The packed chunks laid end to end in one buffer, as a segment file holds them.
    let mut file = vec![0xAAu8; 7];
    let mut places = Vec::new();
    for c in 0..r.chunk_count() {
        match r.keep(c, Fresh::NONE) {
            Keep::Packed(p) => {
                places.push(Some((file.len(), p.bytes().len())));
                file.extend_from_slice(p.bytes());
            }
            _ => places.push(None),
        }
    }
    let buf: SharedBytes = Arc::new(file);
    let parts: Vec<Part> = (0..r.chunk_count())
        .map(|c| match (places[c], r.keep(c, Fresh::NONE)) {
            (Some((start, len)), _) => Part::Shared {
                buf: buf.clone(),
                start,
                len,
                seg: 4,
            },
            (None, Keep::Fill(b)) => Part::Fill(b),
            (None, _) => unreachable!("sealed rows are packed or filled"),
        })
        .collect();
    let back = Rows::from_parts(1000, 1, parts).unwrap();
    assert_eq!(bits(&back.to_vec()), bits(&vals));
    assert!(
        back.heap_bytes() < r.heap_bytes() / 4,
        "{} vs {}",
        back.heap_bytes(),
        r.heap_bytes()
    );
    assert_eq!(stored_seg(back.keep(0, Fresh::NONE)), Some(Some(4)));
    // A range past the buffer's end is refused, not read.
    let bad = (0..r.chunk_count())
        .map(|_| Part::Shared {
            buf: buf.clone(),
            start: 1 << 20,
            len: 8,
            seg: 4,
        })
        .collect();
    assert!(Rows::from_parts(1000, 1, bad).is_err());
}

#[test]
fn unknown_rows_take_almost_no_memory() {
    // gmetad's longest archive: 52,704 rows, 421 KB as an .rrd file's rows.
    let r = Rows::filled(52_704, 1, f64::NAN);
    assert!(r.heap_bytes() < 4_000, "{}", r.heap_bytes());
    let mut w = r.clone();
    for i in 0..1000 {
        w.set(i, (i % 10) as f64 / 4.0);
    }
    w.seal();
    assert!(w.heap_bytes() < 8_000, "{}", w.heap_bytes());
}
