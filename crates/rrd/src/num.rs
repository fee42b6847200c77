//! rrdtool's number parsing: `rrd_strtod`, `rrd_strtodbl` and `rrd_diff`, quirks included.
//!
//! rrdtool 1.7.2 does not use the C library to read the numbers of an update: its own parser
//! accumulates every mantissa digit in a double and scales by binary powers of ten, so results
//! are often one or two ulps away from the correctly rounded value, and exponents outside
//! `[-1021, 1024]` are refused. COUNTER and DERIVE deltas are computed on the decimal strings
//! (`rrd_diff`) before being parsed. Everything here reproduces those results bit for bit; do not
//! replace any of it by `str::parse::<f64>`.

use crate::RrdError;

/// Smallest and largest decimal exponent `rrd_strtod` accepts (C's `DBL_MIN_EXP`/`DBL_MAX_EXP`).
const MIN_EXP: i64 = -1021;
const MAX_EXP: i64 = 1024;

/// DNAN: what `0.0/0.0` gives on x86-64, a quiet NaN with the sign bit set. rrdtool stores
/// unknown values as this bit pattern.
pub const DNAN: f64 = f64::from_bits(0xFFF8_0000_0000_0000);

/// `-DNAN`: the quiet NaN without sign bit.
pub const PNAN: f64 = f64::from_bits(0x7FF8_0000_0000_0000);

fn is_c_space(b: u8) -> bool {
    matches!(b, b' ' | b'\t' | b'\n' | 0x0b | 0x0c | b'\r')
}

fn starts_with_ci(s: &[u8], prefix: &[u8]) -> bool {
    s.len() >= prefix.len() && s[..prefix.len()].eq_ignore_ascii_case(prefix)
}

/// What C's `strtol` gives (glibc, a 64-bit `long`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CLong {
    /// The number, clamped to `i64::MIN..=i64::MAX` where it is out of range.
    pub value: i64,
    /// Out of range (C sets `errno` to ERANGE).
    pub erange: bool,
    /// Digits read (0: no number; the value is then 0).
    pub digits: usize,
}

/// C's `strtol(s, &end, base)` for base 10, or 0 (`0x`/`0X` hex, a leading `0` octal, else
/// decimal): leading C white space, one sign, the digits of the base; whatever follows is
/// ignored. The one reader of C integers for every command and protocol (rrdtool and
/// rrdcached read theirs with `strtol`, `atol`, `atoi`).
pub fn strtol(s: &str, base: u32) -> CLong {
    let b = s.as_bytes();
    let mut i = b.iter().take_while(|&&c| is_c_space(c)).count();
    let neg = match b.get(i) {
        Some(b'-') => {
            i += 1;
            true
        }
        Some(b'+') => {
            i += 1;
            false
        }
        _ => false,
    };
    let mut radix = if base == 0 { 10 } else { base };
    if base == 0 || base == 16 {
        let hex = matches!(b.get(i..i + 2), Some([b'0', b'x' | b'X']))
            && b.get(i + 2).is_some_and(u8::is_ascii_hexdigit);
        if hex {
            radix = 16;
            i += 2;
        } else if base == 0 && b.get(i) == Some(&b'0') {
            radix = 8;
        }
    }
    // Past 2^64 the exact value no longer matters: it is out of range either way.
    let cap: i128 = 1 << 64;
    let mut n: i128 = 0;
    let mut digits = 0;
    for &c in &b[i..] {
        match (c as char).to_digit(radix) {
            Some(v) => {
                n = (n * i128::from(radix) + i128::from(v)).min(cap);
                digits += 1;
            }
            None => break,
        }
    }
    let n = if neg { -n } else { n };
    match i64::try_from(n) {
        Ok(value) => CLong {
            value,
            erange: false,
            digits,
        },
        Err(_) => CLong {
            value: if neg { i64::MIN } else { i64::MAX },
            erange: true,
            digits,
        },
    }
}

/// C's `atol` (and `atoll`): `strtol(s, NULL, 10)`.
pub fn atol(s: &str) -> i64 {
    strtol(s, 10).value
}

/// C's `atoi`: glibc's `(int) strtol(s, NULL, 10)`.
pub fn atoi(s: &str) -> i32 {
    strtol(s, 10).value as i32
}

/// rrdtool's number parser. Returns the value and the number of bytes consumed, or `None`
/// where rrdtool reports failure (no digits, exponent out of range).
///
/// * Leading C whitespace and one optional `+`/`-` are skipped.
/// * Every mantissa digit is accumulated as `n = n*10 + d` in a double (no cut-off), decimals
///   lower the exponent, an optional `e[+-]NNN` moves it; `e` without digits is consumed.
/// * The exponent must lie in `[-1021, 1024]`, else failure (even when the value would be 0).
/// * Scaling multiplies or divides by 10, 1e2, 1e4, 1e8, ... for each set bit of |exponent|.
/// * `rrd_strtodbl`'s special strings are handled here too, case-insensitively and only at the
///   very start of the string (no whitespace, no `+`): a string starting with `nan` gives a
///   NaN without sign bit, `-nan` gives DNAN, `inf` gives +inf and `-inf` gives -inf; rrdtool
///   accepts the whole string then (`"infinity"`, `"nanx"`), so all of it counts as consumed.
pub fn strtod(s: &str) -> Option<(f64, usize)> {
    match plain_decimal(s.as_bytes()) {
        Some(v) => Some((v, s.len())),
        None => strtod_any(s),
    }
}

/// [`strtod`] for any text.
fn strtod_any(s: &str) -> Option<(f64, usize)> {
    let b = s.as_bytes();
    if starts_with_ci(b, b"nan") {
        return Some((PNAN, b.len()));
    }
    if starts_with_ci(b, b"-nan") {
        return Some((DNAN, b.len()));
    }
    if starts_with_ci(b, b"inf") {
        return Some((f64::INFINITY, b.len()));
    }
    if starts_with_ci(b, b"-inf") {
        return Some((f64::NEG_INFINITY, b.len()));
    }
    let mut p = 0;
    while p < b.len() && is_c_space(b[p]) {
        p += 1;
    }
    let mut negative = false;
    if p < b.len() && (b[p] == b'-' || b[p] == b'+') {
        negative = b[p] == b'-';
        p += 1;
    }
    let mut number = 0.0f64;
    let mut exponent: i64 = 0;
    let mut digits = 0usize;
    while p < b.len() && b[p].is_ascii_digit() {
        number = number * 10.0 + f64::from(b[p] - b'0');
        p += 1;
        digits += 1;
    }
    if p < b.len() && b[p] == b'.' {
        p += 1;
        while p < b.len() && b[p].is_ascii_digit() {
            number = number * 10.0 + f64::from(b[p] - b'0');
            p += 1;
            digits += 1;
            exponent -= 1;
        }
    }
    if digits == 0 {
        return None;
    }
    if negative {
        number = -number;
    }
    if p < b.len() && (b[p] == b'e' || b[p] == b'E') {
        p += 1;
        let mut eneg = false;
        if p < b.len() && (b[p] == b'-' || b[p] == b'+') {
            eneg = b[p] == b'-';
            p += 1;
        }
        let mut n: i64 = 0;
        while p < b.len() && b[p].is_ascii_digit() {
            n = n.saturating_mul(10).saturating_add(i64::from(b[p] - b'0'));
            p += 1;
        }
        exponent = if eneg {
            exponent.saturating_sub(n)
        } else {
            exponent.saturating_add(n)
        };
    }
    if !(MIN_EXP..=MAX_EXP).contains(&exponent) {
        return None;
    }
    Some((scale10(number, exponent), p))
}

/// [`strtod`] of the canonical spelling of `mantissa / 10^scale` (an optional `-`, the
/// digits, a point before the last `scale` of them, zeros after `0.` as needed), computed
/// from the numbers: the digit loop reaches `|mantissa|` exactly below 2^53 (leading zeros
/// add nothing), then the sign and the scaling are applied as for the text. `None` from
/// 2^53 on. The sample codec decodes decimals as these two numbers.
pub fn decimal_value(mantissa: i64, scale: u8) -> Option<f64> {
    let m = mantissa.unsigned_abs();
    if m >= 1 << 53 {
        return None;
    }
    let mut number = m as f64;
    if mantissa < 0 {
        number = -number;
    }
    Some(scale10(number, -i64::from(scale)))
}

/// [`strtod`] of the whole of `b` when it is the plain spelling the sample codec and most
/// clients write: an optional `-`, 1-15 digits with at most one `.` among them (not first or
/// last), nothing else. Below 10^15 every partial sum `n*10 + d` is exact, so the double the
/// digit loop reaches is the integer itself; the sign and the scaling are applied as the
/// general path applies them. A fifth of the replay of a gauge was this loop's chain of
/// dependent multiply-adds.
fn plain_decimal(b: &[u8]) -> Option<f64> {
    let (negative, body) = match b.first()? {
        b'-' => (true, &b[1..]),
        _ => (false, b),
    };
    if body.is_empty() || body.len() > 16 || body[0] == b'.' || body[body.len() - 1] == b'.' {
        return None;
    }
    let (mut m, mut frac, mut dot) = (0u64, 0i64, false);
    for &c in body {
        match c {
            b'0'..=b'9' => {
                m = m * 10 + u64::from(c - b'0');
                frac += i64::from(dot);
            }
            b'.' if !dot => dot = true,
            _ => return None,
        }
    }
    if body.len() - usize::from(dot) > 15 {
        return None;
    }
    let mut number = m as f64;
    if negative {
        number = -number;
    }
    Some(scale10(number, -frac))
}

/// `number * 10^exponent` the way `rrd_strtod` computes it: binary exponentiation of 10,
/// multiplying or dividing by each power whose bit is set.
fn scale10(mut number: f64, exponent: i64) -> f64 {
    let mut p10 = 10.0f64;
    let mut n = exponent.unsigned_abs();
    while n != 0 {
        if n & 1 != 0 {
            if exponent < 0 {
                number /= p10;
            } else {
                number *= p10;
            }
        }
        n >>= 1;
        p10 *= p10;
    }
    number
}

/// C `%f` (six decimals) as glibc prints it.
fn c_fixed6(x: f64) -> String {
    if x.is_nan() {
        return if x.is_sign_negative() { "-nan" } else { "nan" }.to_string();
    }
    if x.is_infinite() {
        return if x < 0.0 { "-inf" } else { "inf" }.to_string();
    }
    format!("{:.6}", x)
}

/// `rrd_strtodbl`: the whole string must be a number. Errors carry rrdtool's text without
/// the context prefix rrdtool puts before it (see [`strtodbl_in`]):
/// `Cannot convert '<s>' to float` or `Converted '<s>' to <%f>, but cannot convert '<rest>'`.
pub fn strtodbl(s: &str) -> Result<f64, RrdError> {
    match strtod(s) {
        None => Err(RrdError::new(format!("Cannot convert '{}' to float", s))),
        Some((v, n)) if n == s.len() => Ok(v),
        Some((v, n)) => Err(RrdError::new(format!(
            "Converted '{}' to {}, but cannot convert '{}'",
            s,
            c_fixed6(v),
            &s[n..]
        ))),
    }
}

/// [`strtodbl`] with rrdtool's context prefix: errors read `<ctx> - <message>`, e.g.
/// `Function update_pdp_prep, case DST_GAUGE - Cannot convert 'abc' to float`.
pub fn strtodbl_in(ctx: &str, s: &str) -> Result<f64, RrdError> {
    strtodbl(s).map_err(|e| RrdError::new(format!("{} - {}", ctx, e.msg)))
}

/// At most this many digits per operand in [`rrd_diff`]; longer gives NaN.
const DIFF_MAX_DIGITS: usize = 30;

/// Sign and magnitude of a decimal string as `rrd_diff` reads it: the non-digits before the
/// first digit are skipped (the number is negative when they hold a `-`), then the run of
/// digits is read and anything after it ignored (`"1e400"` reads as 1, `"x-5"` as -5).
/// `None` when there is no digit or more than 30 of them.
fn diff_operand(s: &str) -> Option<(bool, u128)> {
    let b = s.as_bytes();
    let first = b.iter().position(u8::is_ascii_digit)?;
    let negative = b[..first].contains(&b'-');
    let run = b[first..].iter().take_while(|c| c.is_ascii_digit()).count();
    if run > DIFF_MAX_DIGITS {
        return None;
    }
    let digits = &b[first..first + run];
    // Up to 19 digits fit a u64, whose arithmetic is several times cheaper than u128's.
    let v = if run <= 19 {
        u128::from(
            digits
                .iter()
                .fold(0u64, |v, &c| v * 10 + u64::from(c - b'0')),
        )
    } else {
        digits
            .iter()
            .fold(0u128, |v, &c| v * 10 + u128::from(c - b'0'))
    };
    Some((negative, v))
}

/// `rrd_diff(a, b)`: `a - b` computed on decimal strings, then read back by `rrd_strtod`
/// (so large results are not correctly rounded). NaN when an operand has no digits or more
/// than 30, or when the signs differ (`"5"` and `"-3"`, also `"0"` and `"-0"`). Operands are
/// read as [`diff_operand`] says; only `last_ds` kept while the heartbeat was exceeded can
/// hold such text, since new COUNTER/DERIVE values are validated first.
pub fn rrd_diff(a: &str, b: &str) -> f64 {
    let (Some((na, va)), Some((nb, vb))) = (diff_operand(a), diff_operand(b)) else {
        return f64::NAN;
    };
    if na != nb {
        return f64::NAN;
    }
    // Same sign: a - b = sign * (|a| - |b|). Equal negative operands give -0, as rrdtool's
    // string subtraction does ("-571" - "-571" is -0.0, and the sign shows in info and fetch).
    let (mag, neg) = if va >= vb {
        (va - vb, na)
    } else {
        (vb - va, !na)
    };
    let v = accumulate_digits(mag);
    if neg {
        -v
    } else {
        v
    }
}

/// The double `rrd_strtod` gives for the decimal digits of `v`: `n = n*10 + d`, digit by digit.
fn accumulate_digits(v: u128) -> f64 {
    if v < (1u128 << 53) {
        // Every partial sum is exact below 2^53, so the result is the exact value.
        return v as f64;
    }
    let mut buf = [0u8; 40];
    let mut i = buf.len();
    let mut x = v;
    while x > 0 {
        i -= 1;
        buf[i] = (x % 10) as u8;
        x /= 10;
    }
    buf[i..]
        .iter()
        .fold(0.0f64, |n, &d| n * 10.0 + f64::from(d))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_decimals_read_as_the_digit_loop_reads_them() {
        let mut rng = testkit::Rng::new(0x2545_F491_4F6C_DD1Du64);
        let mut next = move || rng.next_u64();
        let mut texts: Vec<String> = [
            "0",
            "-0",
            "0.0",
            "-0.000",
            "5",
            "12.37",
            "-12.37",
            "007",
            "0.1",
            "0.3",
            "123456789012345",
            "1234567890.12345",
            "-999999999999999",
            "9999999999999999",
            "1234567890123456",
            "1.",
            ".5",
            "-",
            "",
            "1.2.3",
            "1e5",
            "+5",
            " 5",
            "5 ",
            "--5",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        for _ in 0..200_000 {
            let digits = 1 + (next() % 17) as usize;
            let mut t: String = (0..digits)
                .map(|_| char::from(b'0' + (next() % 10) as u8))
                .collect();
            if next() % 2 == 0 {
                let at = (next() as usize) % (digits + 1);
                t.insert(at, '.');
            }
            if next() % 3 == 0 {
                t.insert(0, '-');
            }
            texts.push(t);
        }
        let mut plain = 0;
        for t in &texts {
            let general = strtod_any(t);
            if let Some(v) = plain_decimal(t.as_bytes()) {
                plain += 1;
                let (g, n) = general.unwrap_or_else(|| panic!("{t:?}: the loop refuses it"));
                assert_eq!((v.to_bits(), t.len()), (g.to_bits(), n), "{t:?}");
            }
            assert_eq!(
                strtod(t).map(|(v, n)| (v.to_bits(), n)),
                general.map(|(v, n)| (v.to_bits(), n)),
                "{t:?}"
            );
        }
        assert!(
            plain > 100_000,
            "{plain} of {} took the short way",
            texts.len()
        );
    }

    // rrdtool create x.rrd -b 1797498030 -s 1 DS:a:DERIVE:2:U:U RRA:MAX:0.5:1:5
    // rrdtool update x.rrd 1797498042:-571 1797498043:-571 -> info ds[a].value = -0.0000000000e+00
    #[test]
    fn equal_negative_readings_differ_by_negative_zero() {
        assert!(rrd_diff("-571", "-571").is_sign_negative());
        assert_eq!(rrd_diff("-571", "-571"), 0.0);
        assert!(rrd_diff("571", "571").is_sign_positive());
        assert_eq!(rrd_diff("-3", "-13"), 10.0);
        assert_eq!(rrd_diff("-13", "-3"), -10.0);
    }

    fn val(s: &str) -> f64 {
        strtodbl(s).unwrap()
    }

    // Golden values from rrdtool 1.7.2 (reference §3.3): GAUGE, step 1, one value per second,
    // read back with rrdcached FETCH %0.17e / python3-rrdtool fetch.
    #[test]
    fn strtod_is_not_correctly_rounded_like_rrdtool() {
        assert_eq!(val("1234567.891"), 1234567.8909999998);
        assert_eq!(val("0.1234567890123456789"), 0.1234567890123457);
        assert_eq!(val("2.2250738585072014e-308"), 2.2250738585071994e-308);
        assert_eq!(
            val("123456789012345678901234567890"),
            1.2345678901234566e+29
        );
        assert_eq!(val("1.7976931348623157e308"), f64::INFINITY);
        for s in [
            "1.1",
            "4.35",
            "98765.4321",
            "0.000001234",
            "12345678.9012345",
        ] {
            assert_eq!(val(s), s.parse::<f64>().unwrap(), "{}", s);
        }
    }

    // rrdtool create g.rrd --start 1699999999 --step 1 DS:g:GAUGE:10:U:U RRA:LAST:0:1:1
    // rrdtool update g.rrd 1700000000:<v>   (value read from the file's last 8 bytes)
    #[test]
    fn strtodbl_accepts_what_rrdtool_accepts() {
        assert_eq!(val(" 5"), 5.0);
        assert_eq!(val("\t7"), 7.0);
        assert_eq!(val("+5"), 5.0);
        assert_eq!(val("1e"), 1.0);
        assert_eq!(val("1e+"), 1.0);
        assert_eq!(val(".5"), 0.5);
        assert_eq!(val("5."), 5.0);
        assert_eq!(val("1E3"), 1000.0);
        assert_eq!(val("00012"), 12.0);
        assert_eq!(val("1e-1021"), 0.0);
        assert_eq!(val("1e1024"), f64::INFINITY);
        assert_eq!(val("1e+1024"), f64::INFINITY);
        assert!(val("-0").is_sign_negative());
        assert_eq!(val("inf"), f64::INFINITY);
        assert_eq!(val("Inf"), f64::INFINITY);
        assert_eq!(val("infinity"), f64::INFINITY);
        assert_eq!(val("INFINITYx"), f64::INFINITY);
        assert_eq!(val("inf5"), f64::INFINITY);
        assert_eq!(val("-Infinity"), f64::NEG_INFINITY);
        assert_eq!(val("nan").to_bits(), PNAN.to_bits());
        assert_eq!(val("NAN").to_bits(), PNAN.to_bits());
        assert_eq!(val("nanx").to_bits(), PNAN.to_bits());
        assert_eq!(val("-nan").to_bits(), DNAN.to_bits());
    }

    #[test]
    fn strtodbl_error_texts_match_rrdtool() {
        let err = |s: &str| strtodbl(s).unwrap_err().msg;
        for s in [
            ".", "-", "", "abc", "1e-1100", "1e2000", "1e-1022", "1e1025", "u", "+nan", " nan",
            "na", "in", "+inf", " -inf",
        ] {
            assert_eq!(err(s), format!("Cannot convert '{}' to float", s));
        }
        assert_eq!(
            err("5 "),
            "Converted '5 ' to 5.000000, but cannot convert ' '"
        );
        assert_eq!(
            err("0x10"),
            "Converted '0x10' to 0.000000, but cannot convert 'x10'"
        );
        assert_eq!(
            err("1e 5"),
            "Converted '1e 5' to 1.000000, but cannot convert ' 5'"
        );
        assert_eq!(
            err("1.5e3.2"),
            "Converted '1.5e3.2' to 1500.000000, but cannot convert '.2'"
        );
        assert_eq!(
            err("1700000000.5x"),
            "Converted '1700000000.5x' to 1700000000.500000, but cannot convert 'x'"
        );
        assert_eq!(
            strtodbl_in("Function update_pdp_prep, case DST_GAUGE", "abc")
                .unwrap_err()
                .msg,
            "Function update_pdp_prep, case DST_GAUGE - Cannot convert 'abc' to float"
        );
    }

    // DERIVE, step 10: update T:<b>, T+10:<a>; rate = rrd_diff(a, b)/10 (python3-rrdtool fetch).
    #[test]
    fn rrd_diff_matches_rrdtool_derive_rates() {
        assert_eq!(rrd_diff("-13", "-3"), -10.0);
        assert!(rrd_diff("-3", "5").is_nan());
        assert!(rrd_diff("-5", "0").is_nan());
        assert!(rrd_diff("5", "-0").is_nan());
        assert!(rrd_diff("", "100").is_nan());
        assert!(rrd_diff("", "").is_nan());
        assert!(rrd_diff("-", "5").is_nan());
        assert_eq!(rrd_diff("0", "1"), -1.0);
        assert_eq!(rrd_diff("-0", "-5"), 5.0);
        assert_eq!(rrd_diff("0005", "100"), -95.0);
        assert_eq!(
            rrd_diff("0", "99999999999999999999") / 10.0,
            -1.0000000000000002e+19
        );
        assert_eq!(
            rrd_diff("0", "11111111111111111111111111111") / 10.0,
            -1.1111111111111109e+27
        );
        assert_eq!(rrd_diff(&"1".repeat(30), "0") / 10.0, 1.111111111111111e+28);
        assert!(rrd_diff(&"1".repeat(31), "0").is_nan());
        assert!(rrd_diff(&format!("{}5", "0".repeat(30)), "0").is_nan());
        assert_eq!(rrd_diff(&format!("{}5", "0".repeat(29)), "0"), 5.0);
        assert_eq!(
            rrd_diff("-11111111111111111111111111111", "-1") / 10.0,
            -1.1111111111111109e+27
        );
    }

    // DERIVE hb 10, step 5: T:<x> (stored unvalidated: heartbeat exceeded), T+5:<new>;
    // rate = rrd_diff(new, x)/5 from python3-rrdtool fetch.
    #[test]
    fn rrd_diff_reads_the_first_digit_run_of_unvalidated_text() {
        for (x, pos, neg) in [
            ("1e400", Some(19.8), None),
            ("abc5", Some(19.0), None),
            ("5abc7", Some(19.0), None),
            ("+5", Some(19.0), None),
            (" 5", Some(19.0), None),
            ("5.5", Some(19.0), None),
            ("12.34.56", Some(17.6), None),
            ("1-2", Some(19.8), None),
            ("0x20", Some(20.0), None),
            ("-5x3", None, Some(-19.0)),
            ("x-5", None, Some(-19.0)),
            ("--5", None, Some(-19.0)),
            ("-x5", None, Some(-19.0)),
            ("+-5", None, Some(-19.0)),
            ("- 5", None, Some(-19.0)),
            ("-", None, None),
        ] {
            let r = |new: &str| Some(rrd_diff(new, x) / 5.0).filter(|v| !v.is_nan());
            assert_eq!((r("100"), r("-100")), (pos, neg), "{}", x);
        }
    }

    #[test]
    fn c_integers_read_as_glibc_reads_them() {
        let v = |s: &str, b: u32| strtol(s, b).value;
        assert_eq!(v("1795212900", 0), 1795212900);
        assert_eq!(v(" \t-1h", 0), -1);
        assert_eq!(v("0x10", 0), 16);
        assert_eq!(v("0x", 0), 0);
        assert_eq!(v("010", 0), 8);
        assert_eq!(v("010", 10), 10);
        assert_eq!(v("08", 0), 0);
        assert_eq!(
            strtol("junk", 0),
            CLong {
                value: 0,
                erange: false,
                digits: 0
            }
        );
        assert!(!strtol("-9223372036854775808", 10).erange);
        assert_eq!(v("-9223372036854775808", 10), i64::MIN);
        assert_eq!(
            strtol("9223372036854775808", 10),
            CLong {
                value: i64::MAX,
                erange: true,
                digits: 19
            }
        );
        assert_eq!(v("-99999999999999999999999", 10), i64::MIN);
        assert_eq!(v("0xffffffffffffffffffffffff", 0), i64::MAX);
        assert_eq!((atoi("12x"), atoi("x"), atoi("-3")), (12, 0, -3));
        assert_eq!(atoi("4294967297"), 1);
        assert_eq!(atol("+7"), 7);
    }
}
