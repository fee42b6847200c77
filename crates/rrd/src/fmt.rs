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
}
