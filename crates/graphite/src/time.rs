//! `from` and `until` in Graphite's forms (graphite-web's attime), in UTC:
//!
//! - seconds since the epoch (`1700000000`; eight digits that read as a date are the date);
//! - `now`, an offset from now (`-1d`, `-6h`, `-30min`, `+1w`, `now-2h`: units `s`, `min`,
//!   `h`, `d`, `w`, `mon` = 30 days, `y` = 365 days, by their first letters, several in a
//!   row: `-1d12h`);
//! - a reference, with an optional offset: `HH:MM` and `noon`, `midnight`, `teatime`, then
//!   `today`, `yesterday`, `tomorrow`, `YYYYMMDD`, `MM/DD/YY[YY]`: `04:00_20240101`,
//!   `midnight+1h`, `20240101-1d`.

/// Seconds since the epoch of `s`, with `now` the time now.
pub fn parse(s: &str, now: i64) -> Result<i64, String> {
    let t: String = s
        .trim()
        .to_ascii_lowercase()
        .chars()
        .filter(|c| !matches!(c, '_' | ',' | ' '))
        .collect();
    let bad = || format!("cannot parse the time '{s}'");
    if t.is_empty() {
        return Err(bad());
    }
    if t.bytes().all(|b| b.is_ascii_digit()) {
        let date = t.len() == 8
            && t[..4].parse::<u32>().is_ok_and(|y| y > 1900)
            && t[4..6].parse::<u32>().is_ok_and(|m| m < 13)
            && t[6..].parse::<u32>().is_ok_and(|d| d < 32);
        if !date {
            return t.parse().map_err(|_| bad());
        }
    }
    let (reference, offset) = match t.find(['+', '-']) {
        Some(i) => (&t[..i], &t[i..]),
        None => (t.as_str(), ""),
    };
    reference_time(reference, now)
        .zip(offset_secs(offset))
        .and_then(|(r, o)| r.checked_add(o))
        .ok_or_else(bad)
}

/// Midnight of a date, for years 1-9999 (Python's `datetime`, which graphite-web parses
/// with, has no others).
fn date(y: i64, m: i64, d: i64) -> Option<i64> {
    ((1..=9999).contains(&y) && (1..=12).contains(&m) && (1..=31).contains(&d))
        .then(|| rrd::parsetime::days_from_civil(y, m, d) * 86_400)
}

fn reference_time(r: &str, now: i64) -> Option<i64> {
    if r.is_empty() || r == "now" {
        return Some(now);
    }
    let mut r = r;
    let (mut hour, mut minute) = (0i64, 0i64);
    if let Some(i) = r.find(':').filter(|&i| i > 0 && i < 3) {
        hour = r[..i].parse().ok()?;
        minute = r.get(i + 1..i + 3)?.parse().ok()?;
        r = &r[i + 3..];
        if let Some(rest) = r.strip_prefix("am") {
            r = rest;
        } else if let Some(rest) = r.strip_prefix("pm") {
            hour = (hour + 12) % 24;
            r = rest;
        }
    }
    if let Some(i) = r.find("am").filter(|&i| i > 0 && i < 3) {
        hour = r[..i].parse().ok()?;
        r = &r[i + 2..];
    } else if let Some(i) = r.find("pm").filter(|&i| i > 0 && i < 3) {
        hour = (r[..i].parse::<i64>().ok()? + 12) % 24;
        r = &r[i + 2..];
    }
    for (word, h) in [("noon", 12), ("midnight", 0), ("teatime", 16)] {
        if let Some(rest) = r.strip_prefix(word) {
            (hour, minute) = (h, 0);
            r = rest;
        }
    }
    let today = now - now.rem_euclid(86_400);
    let day = match r {
        "" | "today" => today,
        "yesterday" => today - 86_400,
        "tomorrow" => today + 86_400,
        _ if r.matches('/').count() == 2 => {
            let mut it = r.split('/').map(|x| x.parse::<i64>().ok());
            let (m, d, mut y) = (it.next()??, it.next()??, it.next()??);
            if y < 1900 {
                y += 1900;
            }
            if y < 1970 {
                y += 100;
            }
            date(y, m, d)?
        }
        _ if r.len() == 8 && r.bytes().all(|b| b.is_ascii_digit()) => date(
            r[..4].parse().ok()?,
            r[4..6].parse().ok()?,
            r[6..].parse().ok()?,
        )?,
        _ => return None,
    };
    Some(day + hour * 3600 + minute * 60)
}

/// graphite-web's parseTimeOffset in seconds: `-1d12h`, `+30min`, `1h` (a sign alone is
/// no time). None where graphite-web raises.
pub fn offset(o: &str) -> Option<i64> {
    if o == "+" || o == "-" {
        return Some(0);
    }
    offset_secs(o)
}

/// `-1d12h`, `+30min`: seconds.
fn offset_secs(o: &str) -> Option<i64> {
    if o.is_empty() {
        return Some(0);
    }
    let (sign, mut rest) = match o.as_bytes()[0] {
        b'+' => (1, &o[1..]),
        b'-' => (-1, &o[1..]),
        _ => (1, o),
    };
    let mut total = 0i64;
    if rest.is_empty() {
        return None;
    }
    while !rest.is_empty() {
        let d = rest.bytes().take_while(u8::is_ascii_digit).count();
        let n: i64 = rest[..d].parse().ok()?;
        rest = &rest[d..];
        let u = rest.bytes().take_while(u8::is_ascii_alphabetic).count();
        let unit = &rest[..u];
        rest = &rest[u..];
        let secs = if unit.starts_with('s') {
            1
        } else if unit.starts_with("min") {
            60
        } else if unit.starts_with('h') {
            3600
        } else if unit.starts_with('d') {
            86_400
        } else if unit.starts_with('w') {
            7 * 86_400
        } else if unit.starts_with("mon") {
            30 * 86_400
        } else if unit.starts_with('y') {
            365 * 86_400
        } else {
            return None;
        };
        total = total.checked_add(n.checked_mul(secs)?)?;
    }
    Some(sign * total)
}

#[cfg(test)]
mod tests {
    use super::*;

    const NOW: i64 = 1_700_000_000; // 2023-11-14 22:13:20 UTC

    #[test]
    fn graphites_time_forms() {
        assert_eq!(parse("now", NOW), Ok(NOW));
        assert_eq!(parse("1600000000", NOW), Ok(1_600_000_000));
        assert_eq!(parse("-1d", NOW), Ok(NOW - 86_400));
        assert_eq!(parse("-6h", NOW), Ok(NOW - 6 * 3600));
        assert_eq!(parse("-30min", NOW), Ok(NOW - 1800));
        assert_eq!(parse("-1d12h", NOW), Ok(NOW - 86_400 - 12 * 3600));
        assert_eq!(parse("now-2w", NOW), Ok(NOW - 14 * 86_400));
        assert_eq!(parse("-1mon", NOW), Ok(NOW - 30 * 86_400));
        assert_eq!(parse("-1y", NOW), Ok(NOW - 365 * 86_400));
        assert_eq!(parse("20231114", NOW), Ok(1_699_920_000));
        assert_eq!(parse("04:00_20231114", NOW), Ok(1_699_920_000 + 4 * 3600));
        assert_eq!(parse("11/14/2023", NOW), Ok(1_699_920_000));
        assert_eq!(parse("11/14/23", NOW), Ok(1_699_920_000));
        assert_eq!(parse("midnight", NOW), Ok(1_699_920_000));
        assert_eq!(
            parse("noon yesterday", NOW),
            Ok(1_699_920_000 - 86_400 + 12 * 3600)
        );
        assert_eq!(parse("today+1h", NOW), Ok(1_699_920_000 + 3600));
        for bad in ["", "-1x", "soon", "-", "13/40/2020"] {
            assert!(parse(bad, NOW).is_err(), "{bad}");
        }
    }

    #[test]
    fn times_past_any_calendar_are_refused_not_overflowed() {
        for bad in [
            "01/01/818880000002168931",
            "1/2/-9223372036854775808",
            "now+9223372036854775807s",
            "9223372036854775807+1s",
            "-9223372036854775807-1y",
        ] {
            assert!(parse(bad, NOW).is_err(), "{bad}");
        }
        assert_eq!(parse("12/31/9999", NOW), Ok(253_402_214_400));
    }
}
