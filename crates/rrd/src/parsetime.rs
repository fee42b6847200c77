//! rrdtool's at-style time specifications (`rrdfetch(1)`, "AT-STYLE TIME SPECIFICATION").
//!
//! [`parse_time`] turns one specification (`-1d`, `now-2h30m`, `noon yesterday`,
//! `end-3weeks`, `20200101`, `12/31/99 11:59pm`, `1700000000` ...) into a [`TimeSpec`]: either
//! an absolute time or an offset from the other end of a start/end pair. [`resolve_pair`] then
//! resolves a start and an end that may refer to each other. Everything is computed in UTC:
//! ringlet ignores `TZ` (rrdtool uses the local time zone for day boundaries and calendar
//! offsets; with `TZ=UTC` or `TZ` unset on a UTC host both agree). Error texts are rrdtool's,
//! without the `start time: ` / `end time: ` prefix the callers add.

use crate::RrdError;

/// Seconds before which rrdtool refuses a time (`... should be after 1980`; really 10*365 days).
pub const MIN_TIME: i64 = 10 * 365 * 24 * 3600;

/// What a specification is relative to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Base {
    /// A point in time (`now`, a date, an epoch number), with the offsets already applied.
    Absolute(i64),
    /// `start...`: relative to the resolved start time.
    Start,
    /// `end...`: relative to the resolved end time.
    End,
}

/// A parsed time specification.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TimeSpec {
    pub base: Base,
    /// Calendar offsets (years, months, days) applied on the other end's date; `Start`/`End` only.
    pub years: i64,
    pub months: i64,
    pub days: i64,
    /// Offset in seconds; `Start`/`End` only.
    pub secs: i64,
}

impl TimeSpec {
    /// The absolute time, or `None` when the spec refers to start/end.
    pub fn absolute(&self) -> Option<i64> {
        match self.base {
            Base::Absolute(t) => Some(t),
            _ => None,
        }
    }

    fn apply_to(&self, t: i64) -> i64 {
        let mut tm = Tm::from_epoch(t);
        tm.year += self.years;
        tm.mon += self.months;
        tm.mday += self.days;
        tm.to_epoch() + self.secs
    }
}

/// Resolve a start/end pair that may refer to each other (rrdtool's `proc_start_end`).
pub fn resolve_pair(start: &TimeSpec, end: &TimeSpec) -> Result<(i64, i64), RrdError> {
    match (start.base, end.base) {
        (Base::Absolute(s), Base::Absolute(e)) => Ok((s, e)),
        (Base::End, Base::Absolute(e)) => Ok((start.apply_to(e), e)),
        (Base::Absolute(s), Base::Start) => Ok((s, end.apply_to(s))),
        _ => Err(RrdError::new(
            "the start and end times cannot be specified relative to each other",
        )),
    }
}

/// Broken-down UTC time; fields may be out of range until [`Tm::to_epoch`] normalises them.
#[derive(Debug, Clone, Copy)]
struct Tm {
    year: i64,
    /// 0..=11 once normalised.
    mon: i64,
    mday: i64,
    hour: i64,
    min: i64,
    sec: i64,
}

/// Days since 1970-01-01 of a civil date (proleptic Gregorian; month 1..=12).
pub fn days_from_civil(y: i64, m: i64, d: i64) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146097 + doe - 719468
}

impl Tm {
    fn from_epoch(t: i64) -> Tm {
        let days = t.div_euclid(86400);
        let secs = t.rem_euclid(86400);
        let z = days + 719468;
        let era = z.div_euclid(146097);
        let doe = z - era * 146097;
        let yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
        let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
        let mp = (5 * doy + 2) / 153;
        let d = doy - (153 * mp + 2) / 5 + 1;
        let m = if mp < 10 { mp + 3 } else { mp - 9 };
        let y = yoe + era * 400 + i64::from(m <= 2);
        Tm {
            year: y,
            mon: m - 1,
            mday: d,
            hour: secs / 3600,
            min: secs % 3600 / 60,
            sec: secs % 60,
        }
    }

    /// `timegm` with `mktime`'s normalisation (`Apr 31` is `May 1`).
    fn to_epoch(self) -> i64 {
        let year = self.year + self.mon.div_euclid(12);
        let mon = self.mon.rem_euclid(12);
        let days = days_from_civil(year, mon + 1, 1) + self.mday - 1;
        days * 86400 + self.hour * 3600 + self.min * 60 + self.sec
    }

    /// Day of the week, 0 = Sunday.
    fn wday(self) -> i64 {
        (days_from_civil(self.year, self.mon + 1, self.mday) + 4).rem_euclid(7)
    }
}

#[derive(Debug, Clone, PartialEq)]
enum Tok {
    Num(String),
    Word(String),
    Punct(char),
}

/// Tokens with the byte offset where each starts in the specification.
fn tokenize(spec: &str) -> Vec<(Tok, usize)> {
    let b = spec.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < b.len() {
        let c = b[i];
        if c.is_ascii_whitespace() || c == b'_' || c == b',' {
            i += 1;
        } else if c.is_ascii_digit() {
            let s = i;
            while i < b.len() && b[i].is_ascii_digit() {
                i += 1;
            }
            out.push((Tok::Num(spec[s..i].to_string()), s));
        } else if c.is_ascii_alphabetic() {
            let s = i;
            while i < b.len() && b[i].is_ascii_alphabetic() {
                i += 1;
            }
            out.push((Tok::Word(spec[s..i].to_ascii_lowercase()), s));
        } else {
            let ch = spec[i..].chars().next().unwrap_or('?');
            out.push((Tok::Punct(ch), i));
            i += ch.len_utf8();
        }
    }
    out
}

const MONTHS: [&str; 12] = [
    "january",
    "february",
    "march",
    "april",
    "may",
    "june",
    "july",
    "august",
    "september",
    "october",
    "november",
    "december",
];
const WEEKDAYS: [&str; 7] = [
    "sunday",
    "monday",
    "tuesday",
    "wednesday",
    "thursday",
    "friday",
    "saturday",
];

/// A month or weekday name, in full or as its first three letters (`sep`, not `sept`).
fn name_index(word: &str, names: &[&str]) -> Option<usize> {
    names
        .iter()
        .position(|n| *n == word || (word.len() == 3 && n.starts_with(word)))
}

#[derive(Clone, Copy, PartialEq)]
enum Unit {
    Sec,
    Min,
    Hour,
    Day,
    Week,
    Month,
    Year,
    /// `m`: months or minutes, decided by context.
    Ambiguous,
}

fn unit_of(word: &str) -> Option<Unit> {
    Some(match word {
        "s" | "sec" | "secs" | "second" | "seconds" => Unit::Sec,
        "m" => Unit::Ambiguous,
        "min" | "minute" | "minutes" => Unit::Min,
        "h" | "hr" | "hour" | "hours" => Unit::Hour,
        "d" | "day" | "days" => Unit::Day,
        "w" | "wk" | "week" | "weeks" => Unit::Week,
        "mon" | "month" | "months" => Unit::Month,
        "y" | "yr" | "year" | "years" => Unit::Year,
        _ => return None,
    })
}

struct Parser<'a> {
    spec: &'a str,
    toks: Vec<(Tok, usize)>,
    i: usize,
}

impl Parser<'_> {
    fn peek(&self) -> Option<&Tok> {
        self.toks.get(self.i).map(|(t, _)| t)
    }
    fn peek_at(&self, k: usize) -> Option<&Tok> {
        self.toks.get(self.i + k).map(|(t, _)| t)
    }
    fn rest(&self) -> &str {
        self.toks
            .get(self.i)
            .map(|(_, at)| &self.spec[*at..])
            .unwrap_or("")
    }
    fn num(&self, k: usize) -> Option<(i64, usize)> {
        match self.peek_at(k) {
            Some(Tok::Num(s)) => Some((s.parse().unwrap_or(i64::MAX), s.len())),
            _ => None,
        }
    }
}

fn err(msg: impl Into<String>) -> RrdError {
    RrdError::new(msg)
}

/// A 2- or 4-digit year as rrdtool accepts it.
fn full_year(y: i64) -> Result<i64, RrdError> {
    if y < 38 {
        Ok(2000 + y)
    } else if y < 70 {
        Err(err("won't handle dates before epoch (01/01/1970), sorry"))
    } else if y < 100 {
        Ok(1900 + y)
    } else if y > 1970 && y <= MAX_OFFSET / (366 * 86400) {
        Ok(y)
    } else {
        Err(err(format!(
            "invalid year {y} (should be either 00-99 or >1900)"
        )))
    }
}

/// The year rrdtool 1.7.2 lands in when a numeric date (`10.12`, `1/1`) or a month name after
/// a time of day (`10:00 Dec 25`) leaves out the year.
const NO_YEAR: i64 = 30000;

fn set_date(tm: &mut Tm, year: i64, mon: i64, mday: i64) -> Result<(), RrdError> {
    if !(1..=12).contains(&mon) {
        return Err(err(format!("did you really mean month {mon}?")));
    }
    if !(1..=31).contains(&mday) {
        return Err(err(format!(
            "I'm afraid that {mday} is not a valid day of the month"
        )));
    }
    tm.year = if year == NO_YEAR {
        year
    } else {
        full_year(year)?
    };
    tm.mon = mon - 1;
    tm.mday = mday;
    Ok(())
}

/// Parse one at-style specification. `now` is the reference for `now` and for dates that
/// leave out the year or the time of day.
pub fn parse_time(spec: &str, now: i64) -> Result<TimeSpec, RrdError> {
    let mut p = Parser {
        spec,
        toks: tokenize(spec),
        i: 0,
    };
    let mut ts = TimeSpec {
        base: Base::Absolute(now),
        years: 0,
        months: 0,
        days: 0,
        secs: 0,
    };
    let mut tm = Tm::from_epoch(now);
    match p.peek().cloned() {
        None => {}
        Some(Tok::Word(w)) if w == "now" || w == "n" => {
            p.i += 1;
            if !matches!(p.peek(), None | Some(Tok::Punct('+' | '-'))) {
                return Err(err("if 'now' is followed by a token it must be +|- offset"));
            }
        }
        Some(Tok::Word(w)) if matches!(w.as_str(), "start" | "s" | "end" | "e" | "epoch") => {
            p.i += 1;
            ts.base = match w.as_str() {
                "start" | "s" => Base::Start,
                "end" | "e" => Base::End,
                _ => Base::Absolute(0),
            };
            if w == "epoch" {
                // rrdtool zeroes its `struct tm`: day 0 of January 1900, i.e. 1899-12-31.
                tm = Tm {
                    year: 1900,
                    mon: 0,
                    mday: 0,
                    hour: 0,
                    min: 0,
                    sec: 0,
                };
            }
            if !matches!(p.peek(), Some(Tok::Punct('+' | '-'))) {
                return Err(err("'start' or 'end' MUST be followed by +|- offset"));
            }
        }
        Some(Tok::Punct('+' | '-')) => {}
        Some(_) => {
            let had_tod = time_of_day(&mut p, &mut tm)?;
            day(&mut p, &mut tm, had_tod)?;
            if !had_tod {
                // `19970703 12:45`, `Mar 29 1999 3am`: the time of day may follow the date.
                time_of_day(&mut p, &mut tm)?;
            }
        }
    }
    offsets(&mut p, &mut ts, &mut tm)?;
    if let Base::Absolute(_) = ts.base {
        ts.base = Base::Absolute(tm.to_epoch() + ts.secs);
        ts.secs = 0;
    }
    Ok(ts)
}

/// `HH:MM`, `HH`, `HHam`, `midnight`, `noon`, `teatime`. Returns whether one was given.
fn time_of_day(p: &mut Parser, tm: &mut Tm) -> Result<bool, RrdError> {
    if let Some(Tok::Word(w)) = p.peek() {
        let h = match w.as_str() {
            "midnight" => 0,
            "noon" => 12,
            "teatime" => 16,
            _ => return Ok(false),
        };
        p.i += 1;
        (tm.hour, tm.min, tm.sec) = (h, 0, 0);
        return Ok(true);
    }
    let Some((mut hour, len)) = p.num(0) else {
        return Ok(false);
    };
    if len > 2 || hour > 23 {
        return Ok(false);
    }
    let mut minute = 0;
    let mut k = 1;
    match p.peek_at(1) {
        Some(Tok::Punct('/' | '.')) => return Ok(false),
        Some(Tok::Punct(':')) => {
            if let Some((m, _)) = p.num(2) {
                if m > 59 {
                    return Err(err(format!("parsing HH:MM syntax, got MM = {m} (>59!)")));
                }
                minute = m;
                k = 3;
            }
        }
        _ => {}
    }
    if let Some(Tok::Word(w)) = p.peek_at(k) {
        if w == "am" || w == "pm" {
            if hour > 12 {
                return Err(err("there cannot be more than 12 AM or PM hours"));
            }
            if w == "am" && hour == 12 {
                hour = 0;
            } else if w == "pm" && hour < 12 {
                hour += 12;
            }
            k += 1;
        }
    }
    p.i += k;
    (tm.hour, tm.min, tm.sec) = (hour, minute, 0);
    Ok(true)
}

/// The day part: `yesterday`/`today`/`tomorrow`, a weekday, `Month DD [YYYY]`, `MM/DD/[YY]YY`,
/// `DD.MM.[YY]YY`, `YYYYMMDD`, or seconds since the epoch.
fn day(p: &mut Parser, tm: &mut Tm, had_tod: bool) -> Result<(), RrdError> {
    match p.peek().cloned() {
        Some(Tok::Word(w)) => {
            let shift = match w.as_str() {
                "yesterday" => Some(-1),
                "today" => Some(0),
                "tomorrow" => Some(1),
                _ => name_index(&w, &WEEKDAYS).map(|wd| wd as i64 - tm.wday()),
            };
            if let Some(shift) = shift {
                if !had_tod {
                    return Err(err(format!("unparsable time: {}", p.rest())));
                }
                p.i += 1;
                tm.mday += shift;
                return Ok(());
            }
            let Some(mon) = name_index(&w, &MONTHS) else {
                if had_tod {
                    return Ok(());
                }
                return Err(err(format!("unparsable time: {}", p.rest())));
            };
            p.i += 1;
            let Some((mday, _)) = p.num(0) else {
                return Err(err("the day of the month should follow month name"));
            };
            p.i += 1;
            let year = match p.num(0) {
                Some((y, _)) => {
                    p.i += 1;
                    y
                }
                None if had_tod => NO_YEAR,
                None => tm.year,
            };
            set_date(tm, year, mon as i64 + 1, mday)
        }
        Some(Tok::Num(_)) => {
            let Some((n, _)) = p.num(0) else {
                return Ok(());
            };
            let sep = match p.peek_at(1) {
                Some(Tok::Punct(c @ ('/' | '.'))) => Some(*c),
                _ => None,
            };
            if !had_tod {
                (tm.hour, tm.min, tm.sec) = (0, 0, 0);
            }
            if let Some(sep) = sep {
                let Some((second, _)) = p.num(2) else {
                    return Err(err(format!("unparsable time: {}", p.rest())));
                };
                p.i += 3;
                // Without a year rrdtool ends up in the year 30000; so does ringlet.
                let mut year = NO_YEAR;
                if p.peek() == Some(&Tok::Punct(sep)) {
                    if let Some((y, _)) = p.num(1) {
                        year = y;
                        p.i += 2;
                    }
                }
                let (mon, mday) = if sep == '/' { (n, second) } else { (second, n) };
                return set_date(tm, year, mon, mday);
            }
            p.i += 1;
            if n > MAX_OFFSET {
                Err(err(format!("time out of range: {n}")))
            } else if n > MIN_TIME {
                *tm = Tm::from_epoch(n);
                Ok(())
            } else if n > 19700101 && n < 24000101 {
                set_date(tm, n / 10000, n / 100 % 100, n % 100)
            } else {
                Err(err(format!("did you really mean month {n}?")))
            }
        }
        Some(Tok::Punct(c)) if !had_tod => {
            // rrdtool prints the offending character twice here (`@@1700000000`).
            Err(err(format!("unparsable time: {c}{}", p.rest())))
        }
        _ => Ok(()),
    }
}

/// The largest offset, and the latest time, in seconds (about 35,000 years; of days, months
/// and years, as many as make that much): beyond it the sums of offsets and dates could
/// overflow (rrdtool's own arithmetic wraps there).
const MAX_OFFSET: i64 = 1 << 40;

/// `+`/`-` groups: `-5mon1w2d`, `+1h30m`, `-1d-6h`.
fn offsets(p: &mut Parser, ts: &mut TimeSpec, tm: &mut Tm) -> Result<(), RrdError> {
    let relative = !matches!(ts.base, Base::Absolute(_));
    while let Some(tok) = p.peek().cloned() {
        let sign = match tok {
            Tok::Punct('+') => 1,
            Tok::Punct('-') => -1,
            _ => return Err(err(format!("unparsable trailing text: '...{}'", p.rest()))),
        };
        let sign_ch = if sign > 0 { '+' } else { '-' };
        p.i += 1;
        if p.num(0).is_none() {
            return Err(err(format!("There should be number after '{sign_ch}'")));
        }
        let mut prev: Option<Unit> = None;
        while let Some((n, _)) = p.num(0) {
            p.i += 1;
            let mut unit = Unit::Sec;
            if let Some(Tok::Word(w)) = p.peek() {
                unit = unit_of(w).unwrap_or(Unit::Sec);
                p.i += 1;
            }
            if unit == Unit::Ambiguous {
                unit = match prev {
                    Some(Unit::Year | Unit::Month | Unit::Week | Unit::Day) => Unit::Month,
                    Some(_) => Unit::Min,
                    None if n < 6 => Unit::Month,
                    None => Unit::Min,
                };
            }
            prev = Some(unit);
            let v = sign * n;
            // Each sum, its unit's length at most and the seconds of the units' longest.
            const DAY: i64 = 86400;
            let (to, by, most) = match unit {
                Unit::Sec | Unit::Ambiguous => (&mut ts.secs, 1, 1),
                Unit::Min => (&mut ts.secs, 60, 1),
                Unit::Hour => (&mut ts.secs, 3600, 1),
                Unit::Day => (&mut ts.days, 1, DAY),
                Unit::Week => (&mut ts.days, 7, DAY),
                Unit::Month => (&mut ts.months, 1, 31 * DAY),
                Unit::Year => (&mut ts.years, 1, 366 * DAY),
            };
            *to = v
                .checked_mul(by)
                .and_then(|v| to.checked_add(v))
                .filter(|t| t.unsigned_abs() <= (MAX_OFFSET / most) as u64)
                .ok_or_else(|| err(format!("time offset out of range: '{}'", p.spec)))?;
        }
    }
    if !relative {
        tm.year += ts.years;
        tm.mon += ts.months;
        tm.mday += ts.days;
        (ts.years, ts.months, ts.days) = (0, 0, 0);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// 2026-11-21 23:44:50 UTC, a Saturday.
    const NOW: i64 = 1795304690;

    fn abs(spec: &str) -> i64 {
        parse_time(spec, NOW)
            .unwrap_or_else(|e| panic!("{spec}: {e}"))
            .absolute()
            .unwrap_or_else(|| panic!("{spec}: not absolute"))
    }

    fn fails(spec: &str) -> String {
        parse_time(spec, NOW).expect_err(spec).msg
    }

    #[test]
    fn offsets_from_now_match_rrdtool() {
        assert_eq!(abs("now"), NOW);
        assert_eq!(abs("N"), NOW);
        assert_eq!(abs("-1h"), NOW - 3600);
        assert_eq!(abs("now - 1 hour"), NOW - 3600);
        assert_eq!(abs("-1d"), 1795218290);
        assert_eq!(abs("-1w"), 1794699890);
        assert_eq!(abs("-1m"), 1792626290);
        assert_eq!(abs("-1min"), NOW - 60);
        assert_eq!(abs("-1y"), 1763768690);
        assert_eq!(abs("-1h30m"), NOW - 5400);
        assert_eq!(abs("-6m"), NOW - 360);
        assert_eq!(abs("-3hrs"), NOW - 3);
        assert_eq!(abs("-1h5"), NOW - 3605);
        assert_eq!(abs("-1h-1m"), 1792626290 - 3600);
    }

    #[test]
    fn absolute_forms_match_rrdtool() {
        assert_eq!(abs("midnight"), 1795219200);
        assert_eq!(abs("noon"), 1795262400);
        assert_eq!(abs("teatime-1y"), 1763740800);
        assert_eq!(abs("12:30 yesterday"), 1795177800);
        assert_eq!(abs("midnight tomorrow"), 1795305600);
        assert_eq!(abs("20200101"), 1577836800);
        assert_eq!(abs("01/02/2020"), 1577923200);
        assert_eq!(abs("31.12.2020"), 1609372800);
        assert_eq!(abs("12/31/99"), 946598400);
        assert_eq!(abs("1700000000"), 1700000000);
        assert_eq!(abs("Jan 1"), 1767311090);
        assert_eq!(abs("May 31 -1month"), 1777679090);
        assert_eq!(abs("feb 30"), 1772495090);
        assert_eq!(abs("5pm"), 1795280400);
        assert_eq!(abs("12am"), 1795219200);
        assert_eq!(abs("midnight mon"), 1794787200);
        assert_eq!(abs("noon friday"), 1795176000);
        assert_eq!(abs("10:00 25.12.2020"), 1608890400);
        assert_eq!(abs("19970703 12:45"), 867933900);
        assert_eq!(abs("Mar 29 1999 3am"), 922676400);
        assert_eq!(abs("3am Mar 29 1999"), 922676400);
    }

    #[test]
    fn errors_are_rrdtools() {
        assert_eq!(fails("foo"), "unparsable time: foo");
        assert_eq!(fails("today"), "unparsable time: today");
        assert_eq!(fails("Sept 5"), "unparsable time: Sept 5");
        assert_eq!(fails("noon thurs"), "unparsable trailing text: '...thurs'");
        assert_eq!(fails("100"), "did you really mean month 100?");
        assert_eq!(fails("20201301"), "did you really mean month 13?");
        assert_eq!(fails("now-"), "There should be number after '-'");
        assert_eq!(
            fails("e"),
            "'start' or 'end' MUST be followed by +|- offset"
        );
        assert_eq!(
            fails("now yesterday"),
            "if 'now' is followed by a token it must be +|- offset"
        );
        assert_eq!(fails("12:30:45"), "unparsable trailing text: '...:45'");
        assert_eq!(fails("13:70"), "parsing HH:MM syntax, got MM = 70 (>59!)");
        assert_eq!(fails("13pm"), "there cannot be more than 12 AM or PM hours");
        assert_eq!(
            fails("jan"),
            "the day of the month should follow month name"
        );
        assert_eq!(
            fails("12/31/1970"),
            "invalid year 1970 (should be either 00-99 or >1900)"
        );
        assert_eq!(
            fails("12/31/69"),
            "won't handle dates before epoch (01/01/1970), sorry"
        );
        assert_eq!(
            fails("12/32/2020"),
            "I'm afraid that 32 is not a valid day of the month"
        );
    }

    #[test]
    fn offsets_too_large_are_refused_and_nothing_overflows() {
        assert_eq!(
            fails("now+9223372036854775807h"),
            "time offset out of range: 'now+9223372036854775807h'"
        );
        assert_eq!(
            fails("1+7000000000000000000+7000000000000000000"),
            "time offset out of range: '1+7000000000000000000+7000000000000000000'"
        );
        assert!(parse_time("now+1000000000000s", NOW).is_ok());
        assert!(parse_time("now-30000y", NOW).is_ok());
        assert!(parse_time("now-40000y", NOW).is_err());
        // Whatever they give, these return (overflow checks are on in tests).
        let big = "99999999999999999999";
        for spec in [
            big.to_string(),
            format!("{big}+{big}"),
            format!("{big}-1y"),
            format!("-{big}d"),
            format!("{big}:00"),
            format!("noon+{big}m-{big}m"),
            "now+1099511627776s+1099511627776s".to_string(),
            format!("12/31/{big}"),
            format!("{big} {big}"),
            format!("e-{big}"),
            format!("@{big}"),
            "e-30000y".into(),
            "e+1099511627776s".into(),
        ] {
            if let Ok(ts) = parse_time(&spec, NOW) {
                let latest = parse_time("1099511627776", NOW).unwrap();
                let _ = resolve_pair(&ts, &latest);
            }
        }
    }

    #[test]
    fn start_and_end_resolve_against_each_other() {
        let e = parse_time("1700000000", NOW).unwrap();
        let s = parse_time("e-2m", NOW).unwrap();
        assert_eq!(
            resolve_pair(&s, &e).unwrap(),
            (1700000000 - 5270400, 1700000000)
        );
        let s = parse_time("e-1h30m", NOW).unwrap();
        assert_eq!(resolve_pair(&s, &e).unwrap().0, 1700000000 - 5400);
        let e2 = parse_time("start+6h", NOW).unwrap();
        let s2 = parse_time("1700000000", NOW).unwrap();
        assert_eq!(resolve_pair(&s2, &e2).unwrap().1, 1700000000 + 6 * 3600);
        assert!(resolve_pair(&s, &e2).is_err());
    }
}
