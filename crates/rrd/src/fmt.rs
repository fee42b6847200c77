//! C `printf` number formats as rrdtool prints them (glibc, C locale).
//!
//! Rust's `{:e}` prints `1.5e2`; C's `%.10e` prints `1.5000000000e+02`. Both round exactly
//! (round-half-even on the exact binary value), so only the exponent and NaN spelling differ.

/// C `%.{prec}e`. NaN prints as glibc does: `-nan` when the sign bit is set, else `nan`.
pub fn c_exp(x: f64, prec: usize) -> String {
    let mut s = String::new();
    push_c_exp(&mut s, x, prec);
    s
}

/// [`c_exp`] appended to `out` (no allocation of its own: fetch prints thousands).
pub fn push_c_exp(out: &mut String, x: f64, prec: usize) {
    use std::fmt::Write;
    if x.is_nan() {
        out.push_str(if x.is_sign_negative() { "-nan" } else { "nan" });
        return;
    }
    if x.is_infinite() {
        out.push_str(if x < 0.0 { "-inf" } else { "inf" });
        return;
    }
    let at = out.len();
    let _ = write!(out, "{:.*e}", prec, x);
    // Rust's exponent ("e2", "e-7") as C's: a sign and at least two digits.
    let e = at + out[at..].find('e').expect("{:e} always has an exponent");
    let exp: i32 = out[e + 1..].parse().expect("{:e} exponent is an integer");
    out.truncate(e + 1);
    out.push(if exp < 0 { '-' } else { '+' });
    push_padded(out, u64::from(exp.unsigned_abs()), 2);
}

/// `v` in decimal.
pub(crate) fn push_i64(out: &mut String, v: i64) {
    if v < 0 {
        out.push('-');
    }
    push_padded(out, v.unsigned_abs(), 1);
}

/// `v` in decimal, zero-padded to `width` digits.
pub(crate) fn push_padded(out: &mut String, mut v: u64, width: usize) {
    for _ in 20..width {
        out.push('0');
    }
    let mut buf = [b'0'; 20];
    let mut i = buf.len();
    while v > 0 {
        i -= 1;
        buf[i] = b'0' + (v % 10) as u8;
        v /= 10;
    }
    let start = i.min(buf.len().saturating_sub(width));
    out.push_str(std::str::from_utf8(&buf[start..]).expect("ASCII digits"));
}

/// `%0.10e`, with NaN spelled `NaN`: rrdtool's `info` and `dump` form.
pub fn info_num(x: f64) -> String {
    if x.is_nan() {
        "NaN".to_string()
    } else {
        c_exp(x, 10)
    }
}

/// `%0.{prec}e` as rrdtool's own `rrd_snprintf` prints it: used by `dump` and `xport` (not by
/// `info` or `fetch`, which use glibc). It computes in `double` arithmetic, so near a rounding
/// tie its last digit can differ from glibc's exact [`c_exp`] (36214187336.5 -> `3.6214187337e+10`,
/// glibc `...336e+10`; 76.6516370385 -> `7.6651637039e+01`, glibc `...038e+01`). The decimal
/// exponent of tiny values stops at -308, so subnormals print like `0.0000000002e-308`.
/// NaN prints `NaN`, infinities `inf`/`-inf`, and -0 prints without a sign.
/// Checked against `rrdtool dump` for 2000 varied doubles (restore of chosen values, then dump).
pub fn rrd_exp(x: f64, prec: usize) -> String {
    let mut s = String::new();
    push_rrd_exp(&mut s, x, prec);
    s
}

/// [`rrd_exp`] appended to `out` (no allocation of its own: dump and xport print thousands).
pub fn push_rrd_exp(out: &mut String, x: f64, prec: usize) {
    if x.is_nan() {
        out.push_str("NaN");
        return;
    }
    if x.is_infinite() {
        out.push_str(if x < 0.0 { "-inf" } else { "inf" });
        return;
    }
    let neg = x < 0.0;
    let v = x.abs();
    // Decimal exponent, found by repeated scaling, bounded at +-308.
    const LIM: i32 = 308;
    let mut e = 0i32;
    let mut t = v;
    while t < 1.0 && t > 0.0 {
        e -= 1;
        if e <= -LIM {
            break;
        }
        t *= 10.0;
    }
    while t >= 10.0 {
        e += 1;
        if e >= LIM {
            break;
        }
        t /= 10.0;
    }
    let u = v / pow10_loop(e);
    let mut ip = u as u64;
    let mask = pow10_loop(prec as i32);
    let f = mask * (u - ip as f64);
    let fi = f as u64;
    let mut fp = if f - (fi as f64) < 0.5 { fi } else { fi + 1 };
    if fp as f64 >= mask {
        ip += 1;
        fp = 0;
        if ip == 10 {
            ip = 1;
            e += 1;
        }
    }
    if neg {
        out.push('-');
    }
    push_padded(out, ip, 1);
    if prec > 0 {
        out.push('.');
        push_padded(out, fp, prec);
    }
    out.push('e');
    out.push(if e < 0 { '-' } else { '+' });
    push_padded(out, u64::from(e.unsigned_abs()), 2);
}

/// 10^e by repeated multiplication or division, as rrdtool's printer computes it.
fn pow10_loop(mut e: i32) -> f64 {
    let mut r = 1.0f64;
    while e > 0 {
        r *= 10.0;
        e -= 1;
    }
    while e < 0 {
        r /= 10.0;
        e += 1;
    }
    r
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn c_exp_matches_glibc() {
        assert_eq!(c_exp(150.0, 10), "1.5000000000e+02");
        assert_eq!(c_exp(0.0, 10), "0.0000000000e+00");
        assert_eq!(c_exp(-0.0, 2), "-0.00e+00");
        assert_eq!(c_exp(1e-300, 3), "1.000e-300");
        assert_eq!(c_exp(f64::NAN, 10), "nan");
        assert_eq!(c_exp(-f64::NAN, 10), "-nan");
        assert_eq!(c_exp(f64::NEG_INFINITY, 10), "-inf");
        assert_eq!(c_exp(0.1 + 0.2, 17), "3.00000000000000044e-01");
    }

    #[test]
    fn info_num_spells_nan() {
        assert_eq!(info_num(f64::NAN), "NaN");
        assert_eq!(info_num(0.5), "5.0000000000e-01");
    }

    #[test]
    fn rrd_exp_rounds_like_rrdtool_not_glibc() {
        // rrdtool restore of these values, then rrdtool dump (TZ=UTC LC_ALL=C).
        assert_eq!(rrd_exp(36214187336.5, 10), "3.6214187337e+10");
        assert_eq!(rrd_exp(76.6516370385, 10), "7.6651637039e+01");
        assert_eq!(rrd_exp(546.925823485, 10), "5.4692582348e+02");
        assert_eq!(
            rrd_exp(f64::from_bits(0x4018_0000_0000_0000), 10),
            "6.0000000000e+00"
        );
        assert_eq!(rrd_exp(-1.0 / 0.6, 10), "-1.6666666667e+00");
        assert_eq!(rrd_exp(2e-318, 10), "0.0000000002e-308");
        assert_eq!(rrd_exp(f64::NAN, 10), "NaN");
        assert_eq!(rrd_exp(f64::NEG_INFINITY, 10), "-inf");
        assert_eq!(rrd_exp(-0.0, 10), "0.0000000000e+00");
        assert_eq!(rrd_exp(9.99999999999, 10), "1.0000000000e+01");
        assert_eq!(rrd_exp(1e300, 10), "1.0000000000e+300");
    }
}
