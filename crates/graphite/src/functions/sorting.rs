//! graphite-web's Sorting group.

use super::*;

/// `sortByName`.
pub(super) fn sort_by_name(a: &Args<'_, '_>) -> Result<Vec<Series>, String> {
    let natural = a.bool_or(1, "natural", false)?;
    let reverse = a.bool_or(2, "reverse", false)?;
    let mut l = a.series(0)?;
    if natural {
        l.sort_by(|x, y| natural_cmp(&x.name, &y.name));
    } else {
        l.sort_by(|x, y| x.name.cmp(&y.name));
    }
    if reverse {
        l.reverse();
    }
    Ok(l)
}

/// `sortByMaxima`.
pub(super) fn sort_by_maxima(a: &Args<'_, '_>) -> Result<Vec<Series>, String> {
    let mut l = a.series(0)?;
    l.sort_by(|x, y| {
        let m = |s: &Series| s.values.iter().flatten().copied().fold(f64::MIN, f64::max);
        m(y).total_cmp(&m(x))
    });
    Ok(l)
}

pub(super) fn natural_cmp(a: &str, b: &str) -> std::cmp::Ordering {
    let key = |s: &str| -> Vec<(String, u64)> {
        let mut out = Vec::new();
        let mut text = String::new();
        let mut num = String::new();
        for c in s.chars() {
            if c.is_ascii_digit() {
                num.push(c);
            } else {
                if !num.is_empty() {
                    out.push((std::mem::take(&mut text), num.parse().unwrap_or(0)));
                    num.clear();
                }
                text.push(c);
            }
        }
        out.push((text, num.parse().unwrap_or(0)));
        out
    };
    key(a).cmp(&key(b))
}
