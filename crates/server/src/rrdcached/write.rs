//! rrdcached's commands that change what the store holds or say what waits: UPDATE, FLUSH,
//! PENDING, FORGET, QUEUE, CREATE, SUSPEND and RESUME.

use super::strtol;
use crate::daemon::Daemon;
use crate::series::import::{disk_stamp, ensure, import};
use crate::series::Target;
use proto::Response;
use rrd::Rrd;
use std::borrow::Cow;
use std::path::Path;
use std::sync::atomic::Ordering;

/// UPDATE: check and queue the values (see [`crate::ingest`]). Ok: how many were accepted;
/// the caller counts UpdatesReceived and sends rrdcached's `0 errors, enqueued N value(s).`.
pub fn update<'a>(
    d: &Daemon,
    file: &str,
    values: impl Iterator<Item = Cow<'a, str>>,
) -> Result<usize, Response> {
    let e = crate::ingest::entry_for(d, file)?;
    let mut queued = 0;
    let r = crate::ingest::update(
        d,
        &e,
        values,
        &mut queued,
        &mut rrd::update::reuse::scratch(),
    );
    d.queued(queued);
    r
}

pub fn flush(d: &Daemon, file: &str) -> Response {
    d.stats.flushes_received.fetch_add(1, Ordering::Relaxed);
    let t = match d.resolve(file) {
        Ok(t) => t,
        Err(e) => return Response::err(e),
    };
    let mut inner = d.lock();
    if !inner.has(&t.name) {
        return match disk_stamp(&inner, &t) {
            Some(_) => Response::ok(format!("Nothing to flush: {}.", t.abs)),
            None => Response::err(format!("No such file: {}.", t.abs)),
        };
    }
    if inner.is_suspended(&t.name) {
        return Response::ok(format!("Successfully flushed {}.", t.abs));
    }
    d.apply_series(&mut inner, &t.name);
    // The commit is the flush: nothing is written under the base directory.
    if let Err(e) = d.commit(&mut inner) {
        return Response::err(e);
    }
    Response::ok(format!("Successfully flushed {}.", t.abs))
}

pub fn pending(d: &Daemon, file: &str) -> Response {
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

pub fn forget(d: &Daemon, file: &str) -> Response {
    let t = match d.resolve(file) {
        Ok(t) => t,
        Err(e) => return Response::err(e),
    };
    let mut inner = d.lock();
    if !inner.has(&t.name) {
        return Response::err("No such file or directory");
    }
    // As rrdcached, the file's values not yet written are dropped: those not yet applied to
    // the store (a read or FLUSH applies them, as rrdcached's FETCH and FLUSH write them).
    // Values applied are kept and will be committed. A file someone else changed since
    // ringlet last wrote or read it (librrd sends FORGET after `rrdtool tune` and around a
    // local create) is the new truth: it is read again.
    d.reset_series(&mut inner, &t.name);
    inner.suspend(&t.name, false);
    if crate::series::disk::changed_on_disk(&inner, &t) {
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

pub fn queue(d: &Daemon) -> Response {
    let inner = d.lock();
    let lines: Vec<String> = d
        .pending_series(&inner)
        .iter()
        .filter(|(e, _)| !inner.is_suspended(&e.name))
        .map(|(e, n)| format!("{n} {}", d.abs_of(&e.name)))
        .collect();
    Response::lines("in queue.", &lines)
}

pub fn create(d: &Daemon, file: &str, args: &[String], now: i64) -> Response {
    let t = match d.resolve(file) {
        Ok(t) => t,
        Err(e) => return Response::err(e),
    };
    let mut start: Option<i64> = None;
    let mut step: Option<String> = None;
    let mut no_overwrite = d.no_overwrite;
    let mut template: Option<Target> = None;
    // Sources as given (librrd's message names them so) and as resolved.
    let mut sources: Vec<(String, Result<Target, String>)> = Vec::new();
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
                        let t = d.resolve(&v);
                        sources.push((v, t));
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
    for (given, _) in &sources {
        cargs.extend(["--source".to_string(), given.clone()]);
    }
    cargs.extend(defs);
    let mut inner = d.lock();
    // The template's current definition and last update, as a FLUSH before rrdtool's create
    // would give.
    let template_now = match &template {
        Some(src) => match ensure(d, &mut inner, src, false) {
            Ok(true) => inner
                .store
                .get(&src.name)
                .map(|r| ((*r.schema).clone(), r.last_up)),
            _ => None,
        },
        None => None,
    };
    // Each source flushed (rrdcached's flush_file) and brought into the store if it is a
    // plain file; a missing one is librrd's "Cannot open source RRD" once the definitions
    // are read.
    let mut source_names: Vec<Result<String, String>> = Vec::new();
    for (given, t) in &sources {
        let name = match t {
            Ok(src) => match ensure(d, &mut inner, src, false) {
                Ok(true) => Ok(src.name.clone()),
                _ => Err(given.clone()),
            },
            Err(_) => Err(given.clone()),
        };
        source_names.push(name);
    }
    let mut env = DaemonEnv {
        template: template_now,
    };
    let req = match rrd::create::parse_create_env(&cargs, now, &mut env) {
        Ok(r) => r,
        Err(e) => return Response::err(format!("RRD Error: {}", e.msg)),
    };
    let mut refs: Vec<&Rrd> = Vec::with_capacity(source_names.len());
    for n in &source_names {
        match n.as_ref().ok().and_then(|n| inner.store.get(n)) {
            Some(r) => refs.push(r),
            None => {
                let given = n.as_ref().unwrap_or_else(|g| g);
                return Response::err(format!("RRD Error: Cannot open source RRD {given}"));
            }
        }
    }
    let rrd = req.build(&refs);
    drop(refs);
    if !d.recursive_create {
        // rrdcached creates missing directories only with -R. ringlet's series need no
        // directory, but a directory that holds series counts as existing.
        let dir = t.abs.rsplit_once('/').map_or("", |(dir, _)| dir);
        let disk_dir = t.disk.parent().unwrap_or(Path::new("/"));
        let rel_dir = t.name.rsplit_once('/').map(|(dir, _)| format!("{dir}/"));
        let known = || {
            rel_dir
                .as_ref()
                .is_none_or(|p| inner.names().iter().any(|n| n.starts_with(p.as_str())))
        };
        if !dir.is_empty() && !disk_dir.is_dir() && !known() {
            return Response::err(format!(
                "No permission to recursively create: {dir}\nDid you pass -R to the daemon?"
            ));
        }
    }
    let exists = inner.has(&t.name) || t.disk.exists();
    if no_overwrite && exists {
        return Response::err(format!("RRD Error: creating '{}': File exists", t.abs));
    }
    // A placeholder at the file's path, not a copy: clients that stat() the file before
    // creating it find it; the store is the data (placeholder.rs).
    if let Err(e) = crate::series::life::place_series(d, &mut inner, &t, rrd) {
        return Response::err(e);
    }
    // rrdcached's file exists when it answers; ringlet's series is durable when it answers.
    if let Err(e) = d.commit(&mut inner) {
        return Response::err(format!("RRD Error: {e}"));
    }
    Response::ok("RRD created OK")
}

/// CREATE's answers: the template read before, no check of a source while the options are
/// read (librrd opens them after the definitions).
struct DaemonEnv {
    template: Option<(rrd::Schema, i64)>,
}

impl rrd::create::CreateEnv for DaemonEnv {
    fn template(&mut self, _: &str) -> Option<(rrd::Schema, i64)> {
        self.template.clone()
    }
    fn exists(&mut self, _: &str) -> bool {
        false
    }
    fn source(&mut self, _: &str) -> Result<(), String> {
        Ok(())
    }
}

pub fn suspend(d: &Daemon, file: &str, on: bool) -> Response {
    let t = match d.resolve(file) {
        Ok(t) => t,
        Err(e) => return Response::err(e),
    };
    let mut inner = d.lock();
    if !inner.has(&t.name) {
        return Response::err(format!("{} - No such file or directory", t.abs));
    }
    let changed = inner.suspend(&t.name, on);
    Response::ok(match (on, changed) {
        (true, true) => format!("{} suspended", t.abs),
        (true, false) => format!("{} already suspended", t.abs),
        (false, true) => format!("{} resumed", t.abs),
        (false, false) => format!("{} not suspended", t.abs),
    })
}
