//! graphite-web's Sorting group.

use super::*;
use crate::series::py_cmp;

/// The series sorted by a key of their points (None lowest), stably.
fn sorted_by(
    mut l: Vec<Series>,
    key: impl Fn(&[Option<f64>]) -> Option<f64>,
    reverse: bool,
) -> Vec<Series> {
    let mut keyed: Vec<(f64, Series)> = l
        .drain(..)
        .map(|s| (key(&s.points()).unwrap_or(f64::NEG_INFINITY), s))
        .collect();
    if reverse {
        keyed.sort_by(|a, b| py_cmp(&b.0, &a.0));
    } else {
        keyed.sort_by(|a, b| py_cmp(&a.0, &b.0));
    }
    keyed.into_iter().map(|(_, s)| s).collect()
}

/// `sortBy` and `sortByTotal`.
pub(super) fn sort_by(c: &mut Call<'_, '_>) -> Result<Value, String> {
    let (agg, reverse) = if c.name == "sortByTotal" {
        (Agg::Sum, true)
    } else {
        (c.agg("func")?, c.truthy("reverse"))
    };
    let l = c.series("seriesList")?;
    Ok(Value::List(sorted_by(l, |p| agg.apply(p), reverse)))
}

pub(super) fn sort_by_maxima(c: &mut Call<'_, '_>) -> Result<Value, String> {
    let l = c.series("seriesList")?;
    Ok(Value::List(sorted_by(l, safe_max, true)))
}

pub(super) fn sort_by_minima(c: &mut Call<'_, '_>) -> Result<Value, String> {
    let l: Vec<Series> = c
        .series("seriesList")?
        .into_iter()
        .filter(|s| safe_max(&s.points()).unwrap_or(0.0) > 0.0)
        .collect();
    Ok(Value::List(sorted_by(l, safe_min, false)))
}

pub(super) fn sort_by_name(c: &mut Call<'_, '_>) -> Result<Value, String> {
    let natural = c.truthy("natural");
    let reverse = c.truthy("reverse");
    let mut l = c.series("seriesList")?;
    let key = |s: &Series| {
        if natural {
            natural_key(&s.name)
        } else {
            s.name.clone()
        }
    };
    if reverse {
        l.sort_by_key(|s| std::cmp::Reverse(key(s)));
    } else {
        l.sort_by_key(key);
    }
    Ok(Value::List(l))
}

/// graphite-web's natural sort key: every run of digits zero-padded to ten.
pub(super) fn natural_key(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 8);
    let mut digits = String::new();
    let flush = |digits: &mut String, out: &mut String| {
        if !digits.is_empty() {
            let t = digits.trim_start_matches('0');
            let t = if t.is_empty() { "0" } else { t };
            for _ in t.len()..10 {
                out.push('0');
            }
            out.push_str(t);
            digits.clear();
        }
    };
    for ch in s.chars() {
        if ch.is_ascii_digit() {
            digits.push(ch);
        } else {
            flush(&mut digits, &mut out);
            out.push(ch);
        }
    }
    flush(&mut digits, &mut out);
    out
}
