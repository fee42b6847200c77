//! What each rrdcached command does on a ringlet store, and the reply it gives.
//!
//! Replies follow rrdcached 1.7.2 byte for byte where clients parse them. Where ringlet
//! behaves differently on purpose (values are checked when they arrive, FORGET keeps data,
//! reads never wait for a write) docs/PROTOCOL.md says so.

use crate::daemon::{Daemon, Inner, Target};
use crate::ingest;
use crate::placeholder;
use crate::strerror;
use proto::{Command, Response};
use rrd::fmt::push_c_exp;
use rrd::info::InfoValue;
use rrd::{Cf, Rrd};
use std::borrow::Cow;
use std::path::Path;
use std::sync::atomic::Ordering;

/// What the connection does after a command.
pub enum Reply {
    Send(Response),
    /// Close without a reply (QUIT).
    Close,
}

/// Handle one command. `now` is the request time (frozen at BATCH start inside a batch).
pub fn handle(d: &Daemon, cmd: Command, now: i64) -> Reply {
    Reply::Send(match cmd {
        Command::Quit => return Reply::Close,
        Command::Ping => Response::ok("PONG"),
        Command::Help { topic } => proto::request::help(topic.as_deref()),
        Command::Update { file, values } => {
            d.stats.updates_received.fetch_add(1, Ordering::Relaxed);
            match update(d, &file, values.into_iter().map(Cow::Owned)) {
                Ok(n) => Response::ok(format!("errors, enqueued {n} value(s).")),
                Err(r) => r,
            }
        }
        Command::Flush { file } => flush(d, &file),
        Command::FlushAll => match d.commit_all() {
            Ok(_) => Response::ok("Started flush."),
            Err(e) => Response::err(e),
        },
        Command::Pending { file } => pending(d, &file),
        Command::Forget { file } => forget(d, &file),
        Command::Queue => queue(d),
        Command::Stats => stats(d),
        Command::Fetch {
            file,
            cf,
            start,
            end,
            columns,
            binary,
        } => fetch(
            d,
            &file,
            &cf,
            start.as_deref(),
            end.as_deref(),
            &columns,
            binary,
            now,
        ),
        Command::Info { file } => info(d, &file),
        Command::First { file, rra } => first(d, &file, &rra),
        Command::Last { file } => last(d, &file),
        Command::Create { file, args } => create(d, &file, &args, now),
        Command::List { recursive, path } => list(d, recursive, &path),
        Command::Suspend { file } => suspend(d, &file, true),
        Command::Resume { file } => suspend(d, &file, false),
        Command::SuspendAll | Command::ResumeAll => {
            let all = matches!(cmd, Command::SuspendAll);
            let mut inner = d.lock();
            let names = inner.store.names();
            let mut n = 0;
            for name in names {
                let changed = if all {
                    inner.suspended.insert(name)
                } else {
                    inner.suspended.remove(&name)
                };
                n += usize::from(changed);
            }
            Response::ok(if all {
                format!("{n} rrds suspend")
            } else {
                format!("{n} rrds resumed")
            })
        }
        Command::Dump { file, header } => dump(d, &file, header.as_deref()),
        Command::Tune { .. } => Response::err("RRD Error: TUNE is not supported by ringlet yet"),
        // Served by the connection, which holds the input (conn.rs); not in a batch.
        Command::Run { .. } | Command::RunInput { .. } => Response::err("Can't use 'RUN' here."),
        // Context checks in the connection refuse these before they get here.
        Command::Wrote { .. } => Response::err("Can't use 'WROTE' here."),
        Command::Batch | Command::BatchEnd => Response::err("Can't use 'BATCH' here."),
    })
}

/// Why a file could not be brought into the store.
enum Fail {
    /// rrdcached's own message, sent as is.
    Plain(String),
    /// librrd's message: `RRD Error: ` or `rrd_fetch_r failed: ` goes before it.
    Rrd(String),
}

impl Fail {
    fn reply(self, rrd_prefix: &str) -> Response {
        match self {
            Fail::Plain(m) => Response::err(m),
            Fail::Rrd(m) => Response::err(format!("{rrd_prefix}{m}")),
        }
    }
}

/// Make sure `t` is in the store, importing its `.rrd` file from disk on first sight (a
/// client such as collectd creates files itself). Ok(false): no such series or file.
/// `update`: UPDATE's own check of a non-file, else librrd's failure to map it.
fn ensure(d: &Daemon, inner: &mut Inner, t: &Target, update: bool) -> Result<bool, Fail> {
    if inner.store.get(&t.name).is_some() {
        return Ok(true);
    }
    let path = t.disk.as_path();
    let beneath = inner.places.beneath.as_deref();
    let regular = match beneath {
        // Under -B: not through a link below the base (Permission denied), nor at the file.
        Some(_) => {
            let at = match crate::beneath::At::of(beneath, path, false) {
                Ok(at) => at,
                Err(e) if e.kind() == std::io::ErrorKind::PermissionDenied => {
                    return Err(Fail::Plain(format!("{}: Permission denied", t.abs)))
                }
                Err(_) => return Ok(false),
            };
            match at.stat() {
                Ok(Some(st)) => st.st_mode & libc::S_IFMT == libc::S_IFREG,
                _ => return Ok(false),
            }
        }
        // Else links are followed, as rrdcached does.
        None => match std::fs::metadata(path) {
            Ok(m) => m.is_file(),
            Err(_) => return Ok(false),
        },
    };
    if !regular {
        return Err(if update {
            Fail::Plain(format!("Not a regular file: {}", t.abs))
        } else {
            Fail::Rrd(format!("mmaping file '{}': No such device", t.abs))
        });
    }
    if placeholder::inspect(beneath, path) == placeholder::Found::Placeholder {
        // A placeholder whose series is gone (another store, or one reset by hand).
        return Err(Fail::Rrd(format!(
            "'{}' is a ringlet placeholder, and the store {} has no series '{}'",
            t.abs,
            inner.places.store.display(),
            t.name
        )));
    }
    import(d, inner, t, false)?;
    Ok(true)
}

/// librrd's message for a file it cannot load, where rrdtool's text is known; else
/// ringlet's reader's.
fn load_error(abs: &str, bytes: &[u8], e: &rrd::RrdError) -> String {
    const STAT_HEAD: usize = 128;
    if bytes.is_empty() {
        format!("mmaping file '{abs}': Invalid argument")
    } else if bytes.len() < STAT_HEAD {
        "reached EOF while loading header rrd->stat_head".to_string()
    } else if !bytes.starts_with(b"RRD\0") {
        format!("'{abs}' is not an RRD file")
    } else {
        format!("{abs}: {e}")
    }
}

/// Read `t`'s `.rrd` file into the store (replacing the series when `replace`), commit, then
/// move the file aside and leave a placeholder at its path (`placeholder::move_aside`): the
/// file is not deleted before the store holds its data durably.
fn import(d: &Daemon, inner: &mut Inner, t: &Target, replace: bool) -> Result<(), Fail> {
    let path = t.disk.as_path();
    let bytes = match inner.places.beneath.as_deref() {
        Some(b) => crate::beneath::At::of(Some(b), path, false).and_then(|at| at.read()),
        None => std::fs::read(path),
    }
    .map_err(|e| Fail::Plain(format!("Cannot read/write {}: {}", t.abs, strerror(&e))))?;
    let rrd = rrd::rrdfile::read(&bytes).map_err(|e| Fail::Rrd(load_error(&t.abs, &bytes, &e)))?;
    drop(bytes);
    inner
        .store
        .create(&t.name, rrd, replace)
        .map_err(|e| Fail::Rrd(e.to_string()))?;
    d.reset_series(inner, &t.name);
    d.commit(inner).map_err(Fail::Rrd)?;
    match placeholder::move_aside(&inner.places, path, &t.abs, &t.name) {
        Ok(dest) => {
            crate::log(&format!(
                "imported {} into the store; the file is now at {}",
                t.abs,
                dest.display()
            ));
            forget_disk(inner, t);
        }
        // The series is in the store and the file still at its path: nothing is lost, but a
        // later change of the file would be read again (FORGET).
        Err(e) => {
            crate::log(&format!(
                "imported {} into the store, but could not move it aside: {e}",
                t.abs
            ));
            remember_disk(inner, t);
        }
    }
    Ok(())
}

/// The (mtime, length) of `t`'s file now, if it is a file (not through a link).
fn disk_stamp(inner: &Inner, t: &Target) -> Option<(Option<std::time::SystemTime>, u64)> {
    let m = match inner.places.beneath.as_deref() {
        Some(b) => {
            let at = crate::beneath::At::of(Some(b), &t.disk, false).ok()?;
            at.open_read().ok()?.metadata().ok()?
        }
        // Without -B links are followed, as rrdcached does.
        None => std::fs::metadata(&t.disk).ok()?,
    };
    let m = Some(m).filter(|m| m.is_file())?;
    Some((m.modified().ok(), m.len()))
}

/// A placeholder was just put at `t`'s path: no stamp is kept (a FORGET finds a placeholder
/// unchanged by looking at it; a million series kept ~95 MB of stamps for nothing).
pub(crate) fn forget_disk(inner: &mut Inner, t: &Target) {
    inner.disk.remove(t.name.as_str());
}

/// Remember the file at `t`'s path (not a placeholder ringlet put there) as it is now.
pub(crate) fn remember_disk(inner: &mut Inner, t: &Target) {
    match disk_stamp(inner, t) {
        Some(s) => {
            // Keyed by the store's copy of the name where it has the series: one copy a name.
            let name = inner
                .store
                .shared_name(&t.name)
                .unwrap_or_else(|| t.name.as_str().into());
            inner.disk.insert(name, s)
        }
        None => inner.disk.remove(t.name.as_str()),
    };
}

/// UPDATE's check that `t` is a series (imported from its file on first sight).
pub(crate) fn known(d: &Daemon, inner: &mut Inner, t: &Target) -> Result<(), Response> {
    match ensure(d, inner, t, true) {
        Ok(true) => Ok(()),
        Ok(false) => Err(Response::err(format!("No such file: {}", t.abs))),
        Err(e) => Err(e.reply("RRD Error: ")),
    }
}

/// UPDATE: check and queue the values (see [`crate::ingest`]). Ok: how many were accepted;
/// the caller counts UpdatesReceived and sends rrdcached's `0 errors, enqueued N value(s).`.
pub fn update<'a>(
    d: &Daemon,
    file: &str,
    values: impl Iterator<Item = Cow<'a, str>>,
) -> Result<usize, Response> {
    let e = ingest::entry_for(d, file)?;
    let mut queued = 0;
    let r = ingest::update(d, &e, values, &mut queued, &mut crate::sample::scratch());
    d.queued(queued);
    r
}

fn flush(d: &Daemon, file: &str) -> Response {
    d.stats.flushes_received.fetch_add(1, Ordering::Relaxed);
    let t = match d.resolve(file) {
        Ok(t) => t,
        Err(e) => return Response::err(e),
    };
    let mut inner = d.lock();
    if inner.store.get(&t.name).is_none() {
        return match disk_stamp(&inner, &t) {
            Some(_) => Response::ok(format!("Nothing to flush: {}.", t.abs)),
            None => Response::err(format!("No such file: {}.", t.abs)),
        };
    }
    if inner.suspended.contains(&t.name) {
        return Response::ok(format!("Successfully flushed {}.", t.abs));
    }
    d.apply_series(&mut inner, &t.name);
    // The commit is the flush: nothing is written under the base directory.
    if let Err(e) = d.commit(&mut inner) {
        return Response::err(e);
    }
    Response::ok(format!("Successfully flushed {}.", t.abs))
}

/// Put the placeholder of a new series `t` at its path (its directory made first: under -R,
/// or where series already live under that name).
/// `durable`: synced as well (placeholder.rs, `write_durable`).
pub(crate) fn write_placeholder(inner: &Inner, t: &Target, durable: bool) -> Result<(), String> {
    let path = t.disk.as_path();
    // The directories are made as the placeholder is written (beneath the base, -B).
    let write = if durable {
        placeholder::write_durable
    } else {
        placeholder::write
    };
    write(&inner.places, path, &t.abs, &t.name)
        .map_err(|e| format!("RRD Error: creating '{}': {}", t.abs, strerror(&e)))
}

/// The view's changes to the store (crate::view): a file written whole through it becomes the
/// series `name` (replacing one of that name), as an import of a `.rrd` file does; the store
/// holds it durably when this returns, and its placeholder is under `-b`.
pub(crate) fn view_import(d: &Daemon, name: &str, bytes: &[u8]) -> Result<(), String> {
    let t = d.resolve(name)?;
    let rrd = rrd::rrdfile::read(bytes).map_err(|e| load_error(&t.abs, bytes, &e))?;
    let mut inner = d.lock();
    place_series(d, &mut inner, &t, rrd)?;
    d.commit(&mut inner)?;
    crate::log(&format!("view: {} written whole: imported", t.name));
    Ok(())
}

/// Make `rrd` the series `t` (replacing one of that name), with its placeholder; committed by
/// the caller.
pub(crate) fn place_series(
    d: &Daemon,
    inner: &mut Inner,
    t: &Target,
    rrd: Rrd,
) -> Result<(), String> {
    write_placeholder(inner, t, false)?;
    inner
        .store
        .create(&t.name, rrd, true)
        .map_err(|e| e.to_string())?;
    d.reset_series(inner, &t.name);
    forget_disk(inner, t);
    Ok(())
}

/// The view's unlink of series `name`: the series is removed from the store (durably when
/// this returns), values queued for it are dropped, and its placeholder under `-b` removed.
/// Ok(false): no such series.
pub(crate) fn view_remove(d: &Daemon, name: &str) -> Result<bool, String> {
    let t = d.resolve(name)?;
    let mut inner = d.lock();
    if inner.store.get(&t.name).is_none() {
        return Ok(false);
    }
    remove_locked(d, &mut inner, &t)?;
    d.commit(&mut inner)?;
    crate::log(&format!("view: {} removed", t.name));
    Ok(true)
}

fn remove_locked(d: &Daemon, inner: &mut Inner, t: &Target) -> Result<(), String> {
    if let Some(e) = d.index.get(&t.name) {
        e.lock().remove();
    }
    inner.suspended.remove(&t.name);
    inner.store.remove(&t.name).map_err(|e| e.to_string())?;
    forget_disk(inner, t);
    // Only a placeholder is removed: a file someone put there stays.
    if let Ok(at) = crate::beneath::At::of(inner.places.beneath.as_deref(), &t.disk, false) {
        if placeholder::inspect(inner.places.beneath.as_deref(), &t.disk)
            == placeholder::Found::Placeholder
        {
            let _ = at.remove();
        }
    }
    Ok(())
}

/// The view's rename of series `from` to `to` (replacing a series named `to`): every value
/// accepted for `from` goes with it. Durable when this returns.
pub(crate) fn view_rename(d: &Daemon, from: &str, to: &str) -> Result<bool, String> {
    let (f, t) = (d.resolve(from)?, d.resolve(to)?);
    let mut inner = d.lock();
    d.apply_series(&mut inner, &f.name);
    let Some(rrd) = inner.store.get(&f.name).cloned() else {
        return Ok(false);
    };
    place_series(d, &mut inner, &t, rrd)?;
    remove_locked(d, &mut inner, &f)?;
    d.commit(&mut inner)?;
    crate::log(&format!("view: {} renamed to {}", f.name, t.name));
    Ok(true)
}

fn pending(d: &Daemon, file: &str) -> Response {
    let t = match d.resolve(file) {
        Ok(t) => t,
        Err(e) => return Response::err(e),
    };
    let Some(e) = d.index.get(&t.name) else {
        return Response::lines::<&str>("updates pending", &[]);
    };
    let st = e.lock();
    Response::lines("updates pending", &st.pending())
}

fn forget(d: &Daemon, file: &str) -> Response {
    let t = match d.resolve(file) {
        Ok(t) => t,
        Err(e) => return Response::err(e),
    };
    let mut inner = d.lock();
    if inner.store.get(&t.name).is_none() {
        return Response::err("No such file or directory");
    }
    // As rrdcached, the file's values not yet written are dropped: those not yet applied to
    // the store (a read or FLUSH applies them, as rrdcached's FETCH and FLUSH write them).
    // Values applied are kept and will be committed. A file someone else changed since
    // ringlet last wrote or read it (librrd sends FORGET after `rrdtool tune` and around a
    // local create) is the new truth: it is read again.
    d.reset_series(&mut inner, &t.name);
    inner.suspended.remove(&t.name);
    let now = disk_stamp(&inner, &t);
    if now.is_some()
        && inner.disk.get(t.name.as_str()) != now.as_ref()
        && placeholder::inspect(inner.places.beneath.as_deref(), &t.disk) == placeholder::Found::Rrd
    {
        if let Err(e) = import(d, &mut inner, &t, true) {
            return e.reply("RRD Error: ");
        }
        d.reset_series(&mut inner, &t.name);
        if let Err(e) = d.commit(&mut inner) {
            return Response::err(e);
        }
    }
    Response::ok("Gone!")
}

fn queue(d: &Daemon) -> Response {
    let inner = d.lock();
    let lines: Vec<String> = d
        .pending_series(&inner)
        .iter()
        .filter(|(e, _)| !inner.suspended.contains(&*e.name))
        .map(|(e, n)| format!("{n} {}", d.abs_of(&e.name)))
        .collect();
    Response::lines("in queue.", &lines)
}

fn stats(d: &Daemon) -> Response {
    Response::lines("Statistics follow", &stats_lines(d))
}

/// STATS's lines, `Key: value` (the web page's Disk panel reads them too).
pub fn stats_lines(d: &Daemon) -> Vec<String> {
    let inner = d.lock();
    let s = &d.stats;
    let nodes = inner.store.len() as u64;
    let depth = if nodes == 0 {
        0
    } else {
        64 - nodes.leading_zeros() as u64
    };
    let queue = d.pending_series(&inner).len();
    let lines = [
        format!("QueueLength: {queue}"),
        format!(
            "UpdatesReceived: {}",
            s.updates_received.load(Ordering::Relaxed)
        ),
        format!(
            "FlushesReceived: {}",
            s.flushes_received.load(Ordering::Relaxed)
        ),
        format!(
            "UpdatesWritten: {}",
            s.updates_written.load(Ordering::Relaxed)
        ),
        format!("DataSetsWritten: {}", inner.store.stats().samples_committed),
        format!("TreeNodesNumber: {nodes}"),
        format!("TreeDepth: {depth}"),
        format!(
            "JournalBytes: {}",
            inner.store.stats().log_bytes
                + inner.store.stats().checkpoint_bytes
                + inner.store.stats().spill_bytes
        ),
        format!("JournalRotate: {}", inner.store.stats().checkpoints),
    ];
    // ringlet's own, after rrdcached's (librrd ignores keys it does not know).
    let load = crate::iostats::WriteLoad {
        disk_bytes: crate::iostats::disk_bytes_written(),
        at_open: d.disk_bytes_at_open,
        fsyncs: d.syncs.load(Ordering::Relaxed),
        commits: inner.store.stats().commits,
        samples: inner.store.stats().samples_committed,
        uptime_secs: d.started.elapsed().as_secs(),
        apply_errors: s.apply_errors.load(Ordering::Relaxed),
    };
    let mut lines = lines.to_vec();
    lines.extend(load.lines());
    lines.push(format!("LogRingBytes: {}", inner.store.log_capacity()));
    lines.push(format!(
        "LogSinceCheckpoint: {}",
        inner.store.log_since_checkpoint()
    ));
    lines.extend(record_lines(inner.store.stats()));
    lines.push(format!(
        "ArchiveHeapBytes: {}",
        inner.store.archive_heap_bytes()
    ));
    lines.push(format!(
        "ResidentBytes: {}",
        crate::iostats::resident_bytes()
    ));
    // With --carbon: what carbon's listeners took, refused and dropped.
    if let Some(c) = d.carbon() {
        let n = |a: &std::sync::atomic::AtomicU64| a.load(Ordering::Relaxed);
        lines.push(format!("CarbonPoints: {}", n(&c.counts.points)));
        lines.push(format!("CarbonLinesRefused: {}", n(&c.counts.bad)));
        lines.push(format!("CarbonPointsLate: {}", n(&c.counts.late)));
        lines.push(format!("CarbonSeriesCreated: {}", n(&c.counts.created)));
        lines.push(format!(
            "CarbonPointsNotCreated: {}",
            n(&c.counts.create_limited)
        ));
        lines.push(format!("CarbonConnections: {}", c.conns.active()));
        lines.push(format!("CarbonConnectionsRefused: {}", c.conns.refused()));
    }
    lines
}

/// Where the log records' bytes went, per sample committed (docs/PROTOCOL.md, STATS): the
/// series index of each commit's block, the samples' times and values, creates and removes,
/// record framing and the padding to whole pages; then checkpoints.
fn record_lines(st: &engine::StoreStats) -> Vec<String> {
    let c = &st.record_cost;
    let per = |bits: u64| {
        if st.samples_committed == 0 {
            "0.000".to_string()
        } else {
            format!("{:.3}", bits as f64 / 8.0 / st.samples_committed as f64)
        }
    };
    vec![
        format!("RecordBytes: {}", c.total() / 8),
        format!("RecordBytesPerSample: {}", per(c.total())),
        format!("RecordSeriesBytesPerSample: {}", per(c.series)),
        format!("RecordTimeBytesPerSample: {}", per(c.times)),
        format!("RecordValueBytesPerSample: {}", per(c.values)),
        format!("RecordEntryBytesPerSample: {}", per(c.entries)),
        format!("RecordFramingBytesPerSample: {}", per(c.framing)),
        format!("RecordPaddingBytesPerSample: {}", per(c.padding)),
        format!("CheckpointBytesPerSample: {}", per(st.checkpoint_bytes * 8)),
        format!("SpillBytesPerSample: {}", per(st.spill_bytes * 8)),
        format!("Spills: {}", st.spills),
    ]
}

/// C `strtol(s, NULL, 0)`: optional sign, `0x` hex, leading-0 octal, junk after ignored; an
/// out-of-range number is clamped (C's LONG_MAX/LONG_MIN with ERANGE).
fn strtol(s: &str) -> i64 {
    strtol_checked(s).unwrap_or_else(|clamped| clamped)
}

/// [`strtol`], with `Err(clamped)` where C sets ERANGE.
fn strtol_checked(s: &str) -> Result<i64, i64> {
    let t = s.trim_start();
    let (neg, t) = match t.as_bytes().first() {
        Some(b'-') => (true, &t[1..]),
        Some(b'+') => (false, &t[1..]),
        _ => (false, t),
    };
    let (radix, digits) = if let Some(h) = t.strip_prefix("0x").or_else(|| t.strip_prefix("0X")) {
        (16, h)
    } else if t.starts_with('0') {
        (8, t)
    } else {
        (10, t)
    };
    // Past 2^64 the exact value no longer matters: it is out of range either way.
    let cap: i128 = 1 << 64;
    let mut n: i128 = 0;
    for c in digits.chars() {
        match c.to_digit(radix) {
            Some(v) => n = (n * i128::from(radix) + i128::from(v)).min(cap),
            None => break,
        }
    }
    let n = if neg { -n } else { n };
    i64::try_from(n).map_err(|_| if neg { i64::MIN } else { i64::MAX })
}

/// What rrdcached's `rrd_fetch_r` call returns: the finest archive (it passes no
/// resolution), and none of the command line's checks (no 1980 limit, no start < end). An end
/// before the start gives no rows when both align to one boundary, else rrdtool's failed
/// allocation.
/// About what a FETCH's reply holds while it is built: its rows (8 bytes a value), their
/// lines (about 25 bytes a value as text, a line's own 50) and the reply joined from them
/// (a 9-million-row FETCH of one value took 831 MB: 92 bytes a row).
fn fetch_bytes(rrd: &Rrd, cf: Cf, start: i64, end: i64) -> u64 {
    const LIM: i64 = 1 << 62;
    let (cs, ce) = (start.clamp(-LIM, LIM), end.clamp(-LIM, LIM));
    let Some(rra) = rrd::fetch::choose_rra(rrd, cf, cs, ce, 0) else {
        return 0;
    };
    let span = (rrd.schema.step * rrd.schema.rra[rra].pdp_cnt).max(1) as i128;
    let rows = ((i128::from(ce) - i128::from(cs)) / span + 2).clamp(0, 10_000_000) as u64;
    rows * (rrd.ds_cnt() as u64 * 40 + 60)
}

fn daemon_fetch(
    rrd: &Rrd,
    cf: Cf,
    start: i64,
    end: i64,
) -> Result<rrd::fetch::FetchResult, String> {
    // Absurd times (the C arithmetic wraps) choose among archives as if they were merely huge.
    const LIM: i64 = 1 << 62;
    let (cs, ce) = (start.clamp(-LIM, LIM), end.clamp(-LIM, LIM));
    let Some(rra) = rrd::fetch::choose_rra(rrd, cf, cs, ce, 0) else {
        return Err("the RRD does not contain an RRA matching the chosen CF".into());
    };
    let span = (rrd.schema.step * rrd.schema.rra[rra].pdp_cnt) as i64;
    let s = start.wrapping_sub(start.rem_euclid(span));
    let e = end.wrapping_add(span - end.rem_euclid(span));
    // rrdtool sizes its buffer from (end - start) / step in unsigned C arithmetic (an end
    // before the start wraps to a huge size, and the allocation fails unless the byte count
    // wraps again to something an overcommitting malloc grants), then writes one row per
    // step while the time is <= end. Beyond MAX_ROWS rows ringlet does not try.
    const MAX_BYTES: u64 = 64 << 30;
    const MAX_ROWS: i64 = 10_000_000;
    let bytes = (e.wrapping_sub(s) as u64 / span as u64)
        .wrapping_mul(rrd.ds_cnt() as u64)
        .wrapping_mul(8);
    if bytes > MAX_BYTES {
        return Err("malloc fetch data area".into());
    }
    // The row times add up in wrapping C arithmetic, compared signed.
    let mut n: i64 = 0;
    let mut t = s.wrapping_add(span);
    while t <= e {
        n += 1;
        if n > MAX_ROWS {
            return Err("malloc fetch data area".into());
        }
        t = t.wrapping_add(span);
    }
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
fn fetch(
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
    with_rrd_copy(d, file, "rrd_fetch_r failed: ", |t, rrd| {
        // A test hook: a reply that takes long to build (the daemon's tests check that
        // other clients are served meanwhile).
        if crate::fail_point("slow-fetch") {
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
    })
}

/// Run `f` on the RRD a client named, importing its `.rrd` file on first sight. Errors are
/// librrd's, after `prefix` (`RRD Error: `, or FETCH's `rrd_fetch_r failed: `).
fn with_rrd_as(
    d: &Daemon,
    file: &str,
    prefix: &str,
    f: impl FnOnce(&Target, &Rrd) -> Response,
) -> Response {
    locked_rrd(d, file, prefix, f).unwrap_or_else(|r| r)
}

/// [`with_rrd_as`]'s work: under the store lock, with the series' queue applied, `f`'s
/// result, or the error reply.
fn locked_rrd<R>(
    d: &Daemon,
    file: &str,
    prefix: &str,
    f: impl FnOnce(&Target, &Rrd) -> R,
) -> Result<R, Response> {
    let t = d.resolve(file).map_err(Response::err)?;
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
    // Reads see every accepted value.
    d.apply_series(&mut inner, &t.name);
    match inner.store.get(&t.name) {
        Some(rrd) => Ok(f(&t, rrd)),
        None => Err(missing()),
    }
}

fn with_rrd(d: &Daemon, file: &str, f: impl FnOnce(&Target, &Rrd) -> Response) -> Response {
    with_rrd_as(d, file, "RRD Error: ", f)
}

/// [`with_rrd_as`] for a reply that takes long to build (FETCH, DUMP and INFO of large
/// archives: millions of rows): `f` runs on a copy taken under the store lock, after the lock
/// is let go, so other clients are not held up meanwhile. The copy is the packed archives
/// (about a byte or two a value), far cheaper than the reply.
fn with_rrd_copy(
    d: &Daemon,
    file: &str,
    prefix: &str,
    f: impl FnOnce(&Target, &Rrd) -> Response,
) -> Response {
    match locked_rrd(d, file, prefix, |t, rrd| (t.clone(), rrd.clone())) {
        Ok((t, rrd)) => f(&t, &rrd),
        Err(r) => r,
    }
}

fn info(d: &Daemon, file: &str) -> Response {
    with_rrd_copy(d, file, "RRD Error: ", |t, rrd| {
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
    })
}

fn first(d: &Daemon, file: &str, idx: &str) -> Response {
    with_rrd(d, file, |_, rrd| {
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
    })
}

fn last(d: &Daemon, file: &str) -> Response {
    with_rrd(d, file, |_, rrd| {
        let step = rrd.schema.step as i64;
        Response::ok((rrd.last_up - rrd.last_up.rem_euclid(step)).to_string())
    })
}

fn dump(d: &Daemon, file: &str, header: Option<&str>) -> Response {
    with_rrd_copy(d, file, "RRD Error: ", |_, rrd| {
        let xml = rrd::dump::dump_xml(rrd, header.unwrap_or("dtd"));
        let lines: Vec<&str> = xml.lines().collect();
        Response::lines("Success", &lines)
    })
}

fn create(d: &Daemon, file: &str, args: &[String], now: i64) -> Response {
    let t = match d.resolve(file) {
        Ok(t) => t,
        Err(e) => return Response::err(e),
    };
    let mut start: Option<i64> = None;
    let mut step: Option<String> = None;
    let mut no_overwrite = d.no_overwrite;
    let mut template: Option<Target> = None;
    let mut defs: Vec<String> = Vec::new();
    let mut it = args.iter();
    let usage = || proto::request::usage(proto::find("CREATE").expect("CREATE is in the table"));
    while let Some(a) = it.next() {
        if a.starts_with("DS:") || a.starts_with("RRA:") {
            defs.push(a.clone());
            continue;
        }
        // rrdcached matches the first two characters only, and the value is always the
        // next field (`-b1795200000` is `-b` followed by whatever comes next).
        let flag = a.get(..2).unwrap_or("");
        match flag {
            "-O" => no_overwrite = true,
            "-b" | "-s" | "-r" | "-t" => {
                let Some(v) = it.next().cloned() else {
                    return usage();
                };
                match flag {
                    "-b" => {
                        let b = strtol(&v);
                        if b < 315_360_000 {
                            return Response::err("The first entry must be after 1980.");
                        }
                        start = Some(b);
                    }
                    "-s" => step = Some(v),
                    "-t" => match d.resolve(&v) {
                        Ok(src) => template = Some(src),
                        Err(e) => return Response::err(e),
                    },
                    _ => {
                        return Response::err(
                            "RRD Error: create --source is not supported by ringlet yet",
                        )
                    }
                }
            }
            _ => return usage(),
        }
    }
    let mut cargs = vec![t.abs.clone()];
    if let Some(b) = start {
        cargs.extend(["--start".to_string(), b.to_string()]);
    }
    if let Some(s) = step.filter(|s| strtol(s) > 0) {
        cargs.extend(["--step".to_string(), s]);
    }
    if let Some(src) = &template {
        cargs.extend(["--template".to_string(), src.abs.clone()]);
    }
    cargs.extend(defs);
    let mut inner = d.lock();
    // The template's current definition, as a FLUSH before rrdtool's create would give.
    let template_schema = match &template {
        Some(src) => match ensure(d, &mut inner, src, false) {
            Ok(true) => inner.store.get(&src.name).map(|r| (*r.schema).clone()),
            _ => None,
        },
        None => None,
    };
    let req = match rrd::create::parse_create_with(
        &cargs,
        now,
        &mut |_| template_schema.clone(),
        &mut |_| false,
    ) {
        Ok(r) => r,
        Err(e) => return Response::err(format!("RRD Error: {}", e.msg)),
    };
    if !d.recursive_create {
        // rrdcached creates missing directories only with -R. ringlet's series need no
        // directory, but a directory that holds series counts as existing.
        let dir = t.abs.rsplit_once('/').map_or("", |(dir, _)| dir);
        let disk_dir = t.disk.parent().unwrap_or(Path::new("/"));
        let rel_dir = t.name.rsplit_once('/').map(|(dir, _)| format!("{dir}/"));
        let known = || {
            rel_dir.as_ref().is_none_or(|p| {
                inner
                    .store
                    .names()
                    .iter()
                    .any(|n| n.starts_with(p.as_str()))
            })
        };
        if !dir.is_empty() && !disk_dir.is_dir() && !known() {
            return Response::err(format!(
                "No permission to recursively create: {dir}\nDid you pass -R to the daemon?"
            ));
        }
    }
    let exists = inner.store.get(&t.name).is_some() || t.disk.exists();
    if no_overwrite && exists {
        return Response::err(format!("RRD Error: creating '{}': File exists", t.abs));
    }
    let rrd = Rrd::new(req.schema, req.start);
    // A placeholder at the file's path, not a copy: clients that stat() the file before
    // creating it find it; the store is the data (placeholder.rs).
    if let Err(e) = write_placeholder(&inner, &t, false) {
        return Response::err(e);
    }
    if let Err(e) = inner.store.create(&t.name, rrd, true) {
        return Response::err(format!("RRD Error: {e}"));
    }
    d.reset_series(&mut inner, &t.name);
    forget_disk(&mut inner, &t);
    // rrdcached's file exists when it answers; ringlet's series is durable when it answers.
    if let Err(e) = d.commit(&mut inner) {
        return Response::err(format!("RRD Error: {e}"));
    }
    Response::ok("RRD created OK")
}

/// LIST: the series in the store and the `.rrd` files and directories on disk under the base
/// directory (rrdcached lists only the disk), sorted (rrdcached: in readdir order).
fn list(d: &Daemon, recursive: bool, path: &str) -> Response {
    let Some(base) = &d.base else {
        return Response::err("No base directory defined");
    };
    let shown = format!("{base}{path}");
    if path.split('/').any(|c| c == "..") {
        return Response::err(format!("Cannot read: {shown}"));
    }
    let dir = path.trim_start_matches('/').trim_end_matches('/');
    if d.restrict_base && !dir.is_empty() && d.no_links(dir).is_err() {
        return Response::err(format!("Cannot read: {shown}"));
    }
    let inner = d.lock();
    let mut names = inner.store.names();
    drop(inner);
    names.retain(|n| !n.starts_with('/'));
    // On disk: beneath a view mounted over -b (which shows the store's names already).
    let disk = d.disk_base().unwrap_or(base.as_str());
    disk_rrds(Path::new(disk), "", &mut names);
    names.sort();
    names.dedup();
    if dir.ends_with(".rrd") {
        let mut out = Vec::new();
        if names.iter().any(|n| n == dir) {
            out.push(dir.rsplit('/').next().unwrap_or(dir).to_string());
        }
        return Response::lines("RRDs", &out);
    }
    let prefix = if dir.is_empty() {
        String::new()
    } else {
        format!("{dir}/")
    };
    let on_disk = Path::new(disk).join(dir).is_dir();
    if !on_disk && !names.iter().any(|n| n.starts_with(&prefix)) {
        return Response::err(format!("List {shown}: No such file or directory"));
    }
    let mut out: Vec<String> = Vec::new();
    for n in &names {
        let Some(rest) = n.strip_prefix(&prefix) else {
            continue;
        };
        if recursive {
            out.push(rest.to_string());
        } else {
            out.push(rest.split('/').next().unwrap_or(rest).to_string());
        }
    }
    if !recursive {
        // Empty directories on disk are listed too (rrdcached shows every sub-directory).
        if let Ok(rd) = std::fs::read_dir(Path::new(disk).join(dir)) {
            for e in rd.flatten() {
                if e.file_type().is_ok_and(|t| t.is_dir()) {
                    out.push(e.file_name().to_string_lossy().into_owned());
                }
            }
        }
    }
    out.sort();
    out.dedup();
    Response::lines("RRDs", &out)
}

/// Add the `.rrd` files under `dir` (names relative to the walk's root, prefixed by `rel`).
/// Symbolic links are not followed. Iterative: the tree's depth is the clients' to choose.
fn disk_rrds(dir: &Path, rel: &str, out: &mut Vec<String>) {
    let mut todo = vec![(dir.to_path_buf(), rel.to_string())];
    while let Some((dir, rel)) = todo.pop() {
        let Ok(rd) = std::fs::read_dir(&dir) else {
            continue;
        };
        for e in rd.flatten() {
            let name = e.file_name().to_string_lossy().into_owned();
            let Ok(ft) = e.file_type() else { continue };
            let full = format!("{rel}{name}");
            if ft.is_dir() {
                todo.push((e.path(), format!("{full}/")));
            } else if ft.is_file() && name.ends_with(".rrd") {
                out.push(full);
            }
        }
    }
}

fn suspend(d: &Daemon, file: &str, on: bool) -> Response {
    let t = match d.resolve(file) {
        Ok(t) => t,
        Err(e) => return Response::err(e),
    };
    let mut inner = d.lock();
    if inner.store.get(&t.name).is_none() {
        return Response::err(format!("{} - No such file or directory", t.abs));
    }
    let changed = if on {
        inner.suspended.insert(t.name.clone())
    } else {
        inner.suspended.remove(&t.name)
    };
    Response::ok(match (on, changed) {
        (true, true) => format!("{} suspended", t.abs),
        (true, false) => format!("{} already suspended", t.abs),
        (false, true) => format!("{} resumed", t.abs),
        (false, false) => format!("{} not suspended", t.abs),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strtol_reads_like_c() {
        assert_eq!(strtol("1795212900"), 1795212900);
        assert_eq!(strtol("-1h"), -1);
        assert_eq!(strtol("0x10"), 16);
        assert_eq!(strtol("010"), 8);
        assert_eq!(strtol("junk"), 0);
        assert_eq!(strtol_checked("-9223372036854775808"), Ok(i64::MIN));
        assert_eq!(strtol_checked("9223372036854775808"), Err(i64::MAX));
        assert_eq!(strtol_checked("-99999999999999999999999"), Err(i64::MIN));
        assert_eq!(strtol("0xffffffffffffffffffffffff"), i64::MAX);
    }
}
