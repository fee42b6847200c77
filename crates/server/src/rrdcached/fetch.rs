//! rrdcached's reads: FETCH (and FETCHBIN), INFO, FIRST, LAST and DUMP. Each names a
//! client's file ([`with_file`]: resolved, imported on first sight), then reads through the one
//! read path ([`crate::read`]).

use super::{strtol, strtol_checked};
use crate::daemon::Daemon;
use crate::read;
use crate::series::import::ensure;
use crate::series::Target;
use proto::Response;
use rrd::fmt::push_c_exp;
use rrd::info::InfoValue;
use rrd::{Cf, Rrd};

/// Rows at most one FETCH reads (beyond them, rrdtool's failed allocation).
const FETCH_ROWS: u64 = 10_000_000;

/// About what a FETCH's reply holds while it is built: its rows (8 bytes a value), their
/// lines (about 25 bytes a value as text, a line's own 50) and the reply joined from them
/// (a 9-million-row FETCH of one value took 831 MB: 92 bytes a row).
fn fetch_bytes(rrd: &Rrd, cf: Cf, start: i64, end: i64) -> u64 {
    const LIM: i64 = 1 << 62;
    let (cs, ce) = (start.clamp(-LIM, LIM), end.clamp(-LIM, LIM));
    let Some(p) = rrd::fetch::plan(rrd, cf, cs, ce, 0) else {
        return 0;
    };
    let rows = (p.rows() + 1).min(FETCH_ROWS);
    rows * (rrd.ds_cnt() as u64 * 40 + 60)
}

/// What rrdcached's `rrd_fetch_r` call returns: the finest archive (it passes no
/// resolution), and none of the command line's checks (no 1980 limit, no start < end). An end
/// before the start gives no rows when both align to one boundary, else rrdtool's failed
/// allocation.
fn daemon_fetch(
    rrd: &Rrd,
    cf: Cf,
    start: i64,
    end: i64,
) -> Result<rrd::fetch::FetchResult, String> {
    // Absurd times (the C arithmetic wraps) choose among archives as if they were merely huge.
    const LIM: i64 = 1 << 62;
    let (cs, ce) = (start.clamp(-LIM, LIM), end.clamp(-LIM, LIM));
    let Some(rra) = rrd::fetch::plan(rrd, cf, cs, ce, 0).map(|p| p.rra) else {
        return Err("the RRD does not contain an RRA matching the chosen CF".into());
    };
    // The window in the C arithmetic rrdcached computes it in.
    let p = rrd::fetch::Plan::wrapping(rrd, rra, start, end);
    let (span, s, e) = (p.span, p.start, p.end);
    // rrdtool sizes its buffer from (end - start) / step in unsigned C arithmetic (an end
    // before the start wraps to a huge size, and the allocation fails unless the byte count
    // wraps again to something an overcommitting malloc grants), then writes one row per
    // step while the time is <= end. Beyond FETCH_ROWS rows ringlet does not try.
    const MAX_BYTES: u64 = 64 << 30;
    let bytes = (e.wrapping_sub(s) as u64 / span as u64)
        .wrapping_mul(rrd.ds_cnt() as u64)
        .wrapping_mul(8);
    if bytes > MAX_BYTES {
        return Err("malloc fetch data area".into());
    }
    // The row times add up in wrapping C arithmetic, compared signed: counted up to one
    // past the budget (the C loop need not end), then spent at once.
    let mut n: i64 = 0;
    let mut t = s.wrapping_add(span);
    while t <= e && n <= FETCH_ROWS as i64 {
        n += 1;
        t = t.wrapping_add(span);
    }
    rrd::Budget::new(FETCH_ROWS)
        .spend(n.into())
        .map_err(|_| "malloc fetch data area".to_string())?;
    let mut values = Vec::new();
    if s.checked_add(span.saturating_mul(n.saturating_add(1)))
        .is_some()
    {
        // No time wraps: the archive's rows a chunk at a time.
        rrd::fetch::push_archive_rows(rrd, rra, s + span, n as usize, &mut values);
    } else {
        let rra_end = rrd.rra_end(rra);
        let row_cnt = rrd.schema.rra[rra].row_cnt as i64;
        let mut reader = rrd.rra[rra].rows.reader();
        for k in 0..n {
            let t = s.wrapping_add((k + 1) * span);
            let kept = t <= rra_end && (rra_end.wrapping_sub(t)) / span < row_cnt;
            match rrd.ring_row(rra, t).filter(|_| kept) {
                Some(row) => values.extend_from_slice(reader.row(row)),
                None => values.extend(std::iter::repeat_n(rrd::num::DNAN, rrd.ds_cnt())),
            }
        }
    }
    Ok(rrd::fetch::FetchResult {
        start: s,
        end: e,
        step: span as u64,
        ds_names: rrd.schema.ds.iter().map(|d| d.name.clone()).collect(),
        values,
    })
}

#[allow(clippy::too_many_arguments)]
pub fn fetch(
    d: &Daemon,
    file: &str,
    cf: &str,
    start: Option<&str>,
    end: Option<&str>,
    columns: &[String],
    binary: bool,
    now: i64,
) -> Response {
    // Times first, as rrdcached: only out-of-range numbers are refused. C's time arithmetic
    // wraps; so does ringlet's.
    let rel = |v: i64| if v <= 0 { now.wrapping_add(v) } else { v };
    let start = match start.map(strtol_checked) {
        None => now - 86400,
        Some(Ok(v)) => rel(v),
        Some(Err(_)) => {
            return Response::err(format!(
                "Cannot parse start time `{}': Only simple integers are allowed.",
                start.unwrap_or_default()
            ))
        }
    };
    let end = match end.map(strtol_checked) {
        None => now,
        Some(Ok(v)) => rel(v),
        Some(Err(_)) => {
            return Response::err(format!(
                "Cannot parse end time `{}': Only simple integers are allowed.",
                end.unwrap_or_default()
            ))
        }
    };
    respond(with_file_copy(d, file, "rrd_fetch_r failed: ", |t, rrd| {
        // A test hook: a reply that takes long to build (the daemon's tests check that
        // other clients are served meanwhile).
        if crate::log::fail_point("slow-fetch") {
            std::thread::sleep(std::time::Duration::from_millis(1500));
        }
        let Some(cf_v) = Cf::from_name(cf) else {
            return Response::err(format!(
                "rrd_fetch_r failed: unknown consolidation function '{cf}'"
            ));
        };
        // Its share of the daemon's read budget, taken before the rows are.
        let _share = d.reads.take(fetch_bytes(rrd, cf_v, start, end));
        let r = match daemon_fetch(rrd, cf_v, start, end) {
            Ok(r) => r,
            Err(e) => return Response::err(format!("rrd_fetch_r failed: {e}")),
        };
        if columns.len() > r.ds_names.len() {
            return Response::err("too many fields given - duplicates!");
        }
        let mut cols: Vec<usize> = Vec::new();
        for c in columns {
            let Some(i) = r.ds_names.iter().position(|n| n == c) else {
                return Response::err(format!("field {c} not found in {}", t.abs));
            };
            if cols.contains(&i) {
                return Response::err(format!("field {c} already used"));
            }
            cols.push(i);
        }
        if cols.is_empty() {
            cols = (0..r.ds_names.len()).collect();
        }
        let mut head = vec![
            "FlushVersion: 1".to_string(),
            // %lu, as rrdcached prints them.
            format!("Start: {}", r.start as u64),
            format!("End: {}", r.end as u64),
            format!("Step: {}", r.step),
            format!("DSCount: {}", cols.len()),
        ];
        if binary {
            let mut body = Vec::new();
            for l in &head {
                body.extend_from_slice(l.as_bytes());
                body.push(b'\n');
            }
            for &c in &cols {
                body.extend_from_slice(
                    format!(
                        "DSName-{}: BinaryData {} 8 LITTLE\n",
                        r.ds_names[c],
                        r.row_count()
                    )
                    .as_bytes(),
                );
                for row in r.rows() {
                    body.extend_from_slice(&row[c].to_le_bytes());
                }
                body.push(b'\n');
            }
            return Response::raw((head.len() + cols.len()) as i64, "Success", body);
        }
        head.push(format!(
            "DSName: {}",
            cols.iter()
                .map(|&c| r.ds_names[c].as_str())
                .collect::<Vec<_>>()
                .join(" ")
        ));
        for (k, row) in r.rows().enumerate() {
            let t = r.start.wrapping_add((k as i64 + 1) * r.step as i64) as u64;
            let mut line = format!("{t:10}:");
            for &c in &cols {
                line.push(' ');
                push_c_exp(&mut line, row[c], 17);
            }
            head.push(line);
        }
        Response::lines("Success", &head)
    }))
}

pub fn info(d: &Daemon, file: &str) -> Response {
    respond(with_file_copy(d, file, "RRD Error: ", |t, rrd| {
        let lines: Vec<String> = rrd::info::info(rrd, &t.abs)
            .into_iter()
            .map(|(k, v)| match v {
                InfoValue::Val(x) => format!("{k} 0 {}", rrd::fmt::info_num(x)),
                InfoValue::Count(n) => format!("{k} 1 {n}"),
                InfoValue::Int(n) => format!("{k} 1 {n}"),
                InfoValue::Str(s) => format!("{k} 2 {s}"),
            })
            .collect();
        Response::lines(format!("Info for {} follows", t.abs), &lines)
    }))
}

pub fn first(d: &Daemon, file: &str, idx: &str) -> Response {
    respond(with_file(d, file, "RRD Error: ", |_, rrd| {
        // rrdcached reads the index into a C int and refuses negative ones itself.
        let i = strtol(idx) as i32;
        if i < 0 {
            return Response::err(format!("Invalid index specified ({i})"));
        }
        match usize::try_from(i)
            .ok()
            .filter(|&i| i < rrd.schema.rra.len())
        {
            Some(i) => Response::ok(rrd.first(i).to_string()),
            None => Response::err("RRD Error: invalid rraindex number"),
        }
    }))
}

pub fn last(d: &Daemon, file: &str) -> Response {
    respond(with_file(d, file, "RRD Error: ", |_, rrd| {
        let step = rrd.schema.step as i64;
        Response::ok((rrd.last_up - rrd.last_up.rem_euclid(step)).to_string())
    }))
}

pub fn dump(d: &Daemon, file: &str, header: Option<&str>) -> Response {
    respond(with_file_copy(d, file, "RRD Error: ", |_, rrd| {
        let xml = rrd::dump::dump_xml(rrd, header.unwrap_or("dtd"));
        let lines: Vec<&str> = xml.lines().collect();
        Response::lines("Success", &lines)
    }))
}

/// The reply a read gives, or its error.
fn respond(r: Result<Response, Response>) -> Response {
    r.unwrap_or_else(|e| e)
}

/// [`crate::read::with`] for a client's file name: resolved, refused while the
/// store cannot be read, and imported from its `.rrd` file on first sight. Errors are
/// librrd's, after `prefix` (`RRD Error: `, or FETCH's `rrd_fetch_r failed: `).
pub fn with_file<R>(
    d: &Daemon,
    file: &str,
    prefix: &str,
    f: impl FnOnce(&Target, &Rrd) -> R,
) -> Result<R, Response> {
    let t = d.resolve(file).map_err(Response::err)?;
    // Refused before an import too (Inner::read refuses it again, under the lock).
    if let Some(why) = d.unreadable() {
        return Err(Response::err(format!("{prefix}{why}")));
    }
    let mut inner = d.lock();
    let missing = || {
        Response::err(format!(
            "{prefix}opening '{}': No such file or directory",
            t.abs
        ))
    };
    match ensure(d, &mut inner, &t, false) {
        Ok(true) => {}
        Ok(false) => return Err(missing()),
        Err(e) => return Err(e.reply(prefix)),
    }
    read::with_locked(d, &mut inner, &t.name, |rrd| f(&t, rrd))
        .map_err(|e| Response::err(format!("{prefix}{e}")))?
        .ok_or_else(missing)
}

/// [`with_file`] on a copy: `f` runs after the store lock is let go (FETCH, DUMP and INFO of
/// large archives: millions of rows), so other clients are not held up meanwhile.
pub fn with_file_copy<R>(
    d: &Daemon,
    name: &str,
    prefix: &str,
    f: impl FnOnce(&Target, &Rrd) -> R,
) -> Result<R, Response> {
    let (t, rrd) = with_file(d, name, prefix, |t, rrd| (t.clone(), rrd.clone()))?;
    Ok(f(&t, &rrd))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rrd(args: &[&str]) -> Rrd {
        let args: Vec<String> = args.iter().map(|s| s.to_string()).collect();
        let c = rrd::create::parse_create(&args, 1_700_000_000).unwrap();
        Rrd::new(c.schema, c.start)
    }

    #[test]
    fn a_fetch_past_its_budget_of_rows_fails_as_rrdtools_allocation_does() {
        let r = rrd(&[
            "x.rrd",
            "--step",
            "1",
            "DS:v:GAUGE:2:U:U",
            "RRA:AVERAGE:0.5:1:10",
        ]);
        let t = 1_700_000_000;
        // FETCH_ROWS rows are read (unknown past the archive's ten), one more is refused.
        let ok = daemon_fetch(&r, Cf::Average, t, t + FETCH_ROWS as i64 - 1).unwrap();
        assert_eq!(ok.values.len() as u64, FETCH_ROWS);
        let over = daemon_fetch(&r, Cf::Average, t, t + FETCH_ROWS as i64).unwrap_err();
        assert_eq!(over, "malloc fetch data area");
        // As the bytes of a wrapped size are.
        let wrapped = daemon_fetch(&r, Cf::Average, t, t - 5).unwrap_err();
        assert_eq!(wrapped, "malloc fetch data area");
    }
}
