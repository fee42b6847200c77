//! Decimal strings as (mantissa, scale): the numeric form the sample codec predicts on.
//!
//! `"-12.50"` is mantissa -1250, scale 2. Only the canonical spelling is accepted: an optional
//! `-`, integer digits without leading zeros (a single `0` is fine), and an optional `.` with
//! at least one fraction digit; at most 18 digits in all, so the mantissa fits an `i64`.
//! [`Decimal::format`] gives the string back byte for byte; anything else (`+5`, `.5`, `1e3`,
//! `007`, `-0`, `U`) is not a `Decimal` and the codec stores it as raw text.

use compact_str::CompactString;

/// A canonical decimal string as an integer mantissa and a count of fraction digits.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Decimal {
    pub mantissa: i64,
    pub scale: u8,
}

/// Most digits a mantissa may have (10^18 < 2^63).
pub const MAX_DIGITS: usize = 18;

impl Decimal {
    /// The decimal a string spells, if its canonical re-formatting gives the same bytes.
    pub fn parse(s: &str) -> Option<Decimal> {
        let b = s.as_bytes();
        let (neg, body) = match b.first() {
            Some(b'-') => (true, &b[1..]),
            _ => (false, b),
        };
        let (int, frac) = match body.iter().position(|&c| c == b'.') {
            Some(p) => (&body[..p], Some(&body[p + 1..])),
            None => (body, None),
        };
        if int.is_empty() || !int.iter().all(u8::is_ascii_digit) {
            return None;
        }
        if int.len() > 1 && int[0] == b'0' {
            return None;
        }
        let frac = frac.unwrap_or(&[]);
        if body.len() > int.len() && frac.is_empty() {
            return None; // "5."
        }
        if !frac.iter().all(u8::is_ascii_digit) || int.len() + frac.len() > MAX_DIGITS {
            return None;
        }
        let mut m: i64 = 0;
        for &c in int.iter().chain(frac) {
            m = m * 10 + (c - b'0') as i64;
        }
        if neg {
            if m == 0 {
                return None; // "-0", "-0.00": the sign would be lost
            }
            m = -m;
        }
        let d = Decimal {
            mantissa: m,
            scale: frac.len() as u8,
        };
        // The rules above admit exactly the canonical spellings (tested exhaustively below).
        debug_assert_eq!(d.format(), s);
        Some(d)
    }

    /// The canonical spelling: `-`, integer part, and exactly `scale` fraction digits.
    pub fn format(&self) -> String {
        let mut out = CompactString::default();
        self.format_into(&mut out);
        out.into()
    }

    /// The spelling, digit by digit: any scale.
    fn spelled(&self) -> String {
        let digits = self.mantissa.unsigned_abs().to_string();
        let scale = self.scale as usize;
        let sign = if self.mantissa < 0 { "-" } else { "" };
        if scale == 0 {
            format!("{sign}{digits}")
        } else if digits.len() > scale {
            let (i, f) = digits.split_at(digits.len() - scale);
            format!("{sign}{i}.{f}")
        } else {
            format!("{sign}0.{}{digits}", "0".repeat(scale - digits.len()))
        }
    }

    /// [`Decimal::format`] into `out` (cleared first): the inline text a codec keeps of each
    /// DS's last value (no allocation for 24 bytes or less).
    pub fn format_into(&self, out: &mut CompactString) {
        // Written backwards into one buffer (sign, up to 19 digits, a point, and the zeros
        // of a scale up to 40 before them), then copied once: replay formats every value.
        let scale = self.scale as usize;
        if scale > 40 {
            out.clear();
            out.push_str(&self.spelled());
            return;
        }
        let mut buf = [0u8; 64];
        let mut at = buf.len();
        let mut v = self.mantissa.unsigned_abs();
        let mut written = 0;
        while v != 0 || written <= scale {
            if written == scale && scale > 0 {
                at -= 1;
                buf[at] = b'.';
            }
            at -= 1;
            buf[at] = b'0' + (v % 10) as u8;
            v /= 10;
            written += 1;
        }
        if self.mantissa < 0 {
            at -= 1;
            buf[at] = b'-';
        }
        out.clear();
        // ASCII only.
        out.push_str(std::str::from_utf8(&buf[at..]).unwrap_or("0"));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formatting_spells_every_mantissa_and_scale() {
        let mut rng = testkit::Rng::new(0x9E37_79B9_7F4A_7C15u64);
        let mut out = CompactString::default();
        let ms = [
            0,
            1,
            -1,
            9,
            10,
            -10,
            99,
            100,
            i64::MAX,
            i64::MIN,
            i64::MIN + 1,
        ];
        for i in 0..50_000 {
            let x = rng.next_u64();
            let m = match i % 3 {
                0 => ms[i % ms.len()],
                1 => (x as i64) >> (x % 64),
                _ => x as i64,
            };
            for scale in [0u8, 1, 2, 3, 5, 18, 19, 20, 31, 40, 41, 255] {
                let d = Decimal { mantissa: m, scale };
                d.format_into(&mut out);
                assert_eq!(out.as_str(), d.spelled(), "{m} at scale {scale}");
            }
        }
        // The spelling itself, on a few by hand.
        let spell = |m, scale| Decimal { mantissa: m, scale }.spelled();
        assert_eq!(spell(-1250, 2), "-12.50");
        assert_eq!(spell(5, 3), "0.005");
        assert_eq!(spell(0, 0), "0");
        assert_eq!(spell(0, 2), "0.00");
        assert_eq!(spell(-7, 1), "-0.7");
    }

    #[test]
    fn canonical_decimals_parse_and_reformat_exactly() {
        for s in [
            "0",
            "5",
            "-5",
            "0.50",
            "-0.05",
            "12.340",
            "123456789012345678",
            "1.00000000000000000",
        ] {
            let d = Decimal::parse(s).unwrap_or_else(|| panic!("{s}"));
            assert_eq!(d.format(), s);
        }
        assert_eq!(
            Decimal::parse("-12.50"),
            Some(Decimal {
                mantissa: -1250,
                scale: 2
            })
        );
    }

    #[test]
    fn every_short_string_that_parses_reformats_exactly() {
        let alphabet = ['-', '0', '1', '9', '.', 'e'];
        let mut strings = vec![String::new()];
        for _ in 0..6 {
            let next: Vec<String> = strings
                .iter()
                .flat_map(|s| alphabet.iter().map(move |c| format!("{s}{c}")))
                .collect();
            for s in &next {
                if let Some(d) = Decimal::parse(s) {
                    assert_eq!(&d.format(), s);
                }
            }
            strings = next;
        }
    }

    #[test]
    fn non_canonical_spellings_are_not_decimals() {
        for s in [
            "",
            "-",
            "+5",
            ".5",
            "5.",
            "007",
            "00",
            "-0",
            "-0.0",
            "1e3",
            "U",
            "nan",
            " 1",
            "1 ",
            "1.2.3",
            "1234567890123456789",
            "0x10",
            "١",
        ] {
            assert_eq!(Decimal::parse(s), None, "{s:?}");
        }
    }
}
