//! C `printf` number formats as rrdtool prints them (glibc, C locale).
//!
//! Rust's `{:e}` prints `1.5e2`; C's `%.10e` prints `1.5000000000e+02`. Both round exactly
//! (round-half-even on the exact binary value), so only the exponent and NaN spelling differ.

/// C `%.{prec}e`. NaN prints as glibc does: `-nan` when the sign bit is set, else `nan`.
pub fn c_exp(x: f64, prec: usize) -> String {
    if x.is_nan() {
        return if x.is_sign_negative() { "-nan" } else { "nan" }.to_string();
    }
    if x.is_infinite() {
        return if x < 0.0 { "-inf" } else { "inf" }.to_string();
    }
    let s = format!("{:.*e}", prec, x);
    let (mant, exp) = s.split_once('e').expect("{:e} always has an exponent");
    let exp: i32 = exp.parse().expect("{:e} exponent is an integer");
    let sign = if exp < 0 { '-' } else { '+' };
    format!("{}e{}{:02}", mant, sign, exp.abs())
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
    if x.is_nan() {
        return "NaN".to_string();
    }
    if x.is_infinite() {
        return if x < 0.0 { "-inf" } else { "inf" }.to_string();
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
    let mut s = String::new();
    if neg {
        s.push('-');
    }
    s.push_str(&ip.to_string());
    if prec > 0 {
        s.push('.');
        s.push_str(&format!("{:0width$}", fp, width = prec));
    }
    s.push('e');
    s.push(if e < 0 { '-' } else { '+' });
    s.push_str(&format!("{:02}", e.abs()));
    s
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
