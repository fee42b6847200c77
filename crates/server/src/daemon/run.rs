//! A command of the `ringlet` CLI run on the daemon's store, as RUN runs it
//! (`crate::remote`): the queued values it reads applied first, the series it wrote given
//! their placeholders, entries reset and committed. The one place outside the daemon's
//! commits that holds the store itself: the CLI's code (the `cli` crate) works on an
//! `engine::Store`.

use super::{Daemon, Inner};
use crate::series::Target;
use cli::{Ctx, Outcome};
use proto::run::strip_named;
use std::cell::RefCell;

/// A command run on the store, as RUN runs it. What it wrote is committed now, or with
/// `defer` left to the caller: the second value says whether a commit is owed.
pub(crate) fn run(
    d: &Daemon,
    now: (i64, i64),
    cmd: &str,
    args: &[String],
    input: Option<&str>,
    defer: bool,
) -> (Outcome, bool) {
    // A named daemon: rrdtool's output with --daemon (below).
    let (named, args) = strip_named(args);
    // An update's series: its entry stays locked while the command runs, so that no UPDATE
    // is checked against the state before it.
    let target = match cmd {
        "update" | "updatev" => cli::commands::update_target(args),
        _ => None,
    };
    // Any other command may read any series: every accepted value is applied first.
    let mut inner = match target {
        Some(_) => d.lock(),
        None => crate::read::all(d),
    };
    // A file renamed under -b (Cacti renames its RRDs with PHP): its series follows. Not
    // looked for when an update's series is there (the poller's every line).
    let known = target
        .as_ref()
        .is_some_and(|n| inner.store.get(n).is_some());
    if !known && !matches!(cmd, "create" | "restore") {
        let given = target
            .clone()
            .or_else(|| args.iter().find(|a| !a.starts_with('-')).cloned());
        if let Some(t) = given.and_then(|g| d.resolve(&g).ok()) {
            if let Err(e) = crate::series::import::adopt_renamed(d, &mut inner, &t) {
                crate::log::line(&format!("{}: not renamed: {e}", t.abs));
            }
        }
    }
    let entry = target.as_ref().and_then(|n| d.index.get(n));
    let mut held = entry.as_ref().map(|e| e.lock());
    if let (Some(e), Some(st)) = (&entry, held.as_mut()) {
        d.apply_queue(&mut inner, e, st);
    }
    let store_dir = inner.places.store.clone();
    // As CREATE: under -B, no series outside the base directory (an absolute name is one:
    // a path under it is named relative to it) nor through a symbolic link below it.
    let may_create = |name: &str| -> Result<(), String> {
        if d.restrict_base && (name.starts_with('/') || d.no_links(name).is_err()) {
            return Err(format!("{}: Permission denied", d.abs_of(name)));
        }
        Ok(())
    };
    let (mut out, written) = {
        let cell = RefCell::new(&mut inner.store);
        let ctx = Ctx {
            store_dir: &store_dir,
            now,
            shared: Some(&cell),
            commit_each: false,
            remote: true,
            input,
            written: RefCell::new(Vec::new()),
            may_create: Some(&may_create),
        };
        let out = cli::dispatch(cmd, args, &ctx);
        (out, ctx.written.into_inner())
    };
    if let (Some(name), Some(st)) = (&target, held.as_mut()) {
        if let Some(rrd) = inner.store.get(name) {
            st.set_shadow(rrd);
        }
    }
    drop(held);
    if named && out.error.is_none() {
        as_with_daemon(d, &inner, cmd, args, &mut out);
    }
    if !written.is_empty() {
        // A real .rrd file at a written series' path (`ringlet import rrd` of the base
        // directory, `restore -f` over a user's file) is moved aside once the commit holds
        // the series, never overwritten by its placeholder.
        let mut aside = Vec::new();
        for name in &written {
            d.reset_series(&mut inner, name);
            let Some(t) = placed(d, name) else {
                continue;
            };
            let beneath = inner.places.beneath.as_deref();
            if crate::placeholder::inspect(beneath, &t.disk) == crate::placeholder::Found::Rrd {
                aside.push(t);
            } else {
                placeholder_for(&mut inner, &t);
            }
        }
        if defer && aside.is_empty() {
            return (out, true);
        }
        match d.commit(&mut inner) {
            Ok(_) => {
                for t in &aside {
                    let _ = crate::series::import::set_aside(&mut inner, t);
                }
            }
            Err(e) => {
                out.error.get_or_insert(e);
            }
        }
        return (out, false);
    }
    (out, false)
}

/// What `rrdtool <cmd> --daemon` prints where it differs from rrdtool on a file (librrd
/// asks the daemon, and prints its answer): `info`'s `filename` is the path the daemon
/// resolved (`/base/h/l.rrd` for `h/l.rrd`), and `last` is the daemon's LAST, the last
/// update's time floored to the step (rrdcached's; rrdtool on a file gives the time itself).
fn as_with_daemon(d: &Daemon, inner: &Inner, cmd: &str, args: &[String], out: &mut Outcome) {
    let Some(given) = args.iter().find(|a| !a.starts_with('-')) else {
        return;
    };
    let Ok(t) = d.resolve(given) else { return };
    match cmd {
        "info" => {
            if let Some(rest) = out.stdout.strip_prefix("filename = \"") {
                if let Some(end) = rest.find("\"\n") {
                    out.stdout = format!("filename = \"{}{}", t.abs, &rest[end..]);
                }
            }
        }
        "last" => {
            let (Some(rrd), Ok(last)) =
                (inner.store.get(&t.name), out.stdout.trim().parse::<i64>())
            else {
                return;
            };
            let step = (rrd.schema.step as i64).max(1);
            out.stdout = format!("{}\n", last - last.rem_euclid(step));
        }
        _ => {}
    }
}

/// The placeholder of a series the CLI created, where it has a path ([`placed`]).
/// Written as CREATE writes it, not synced: the series is durable by the commit, and the
/// daemon's start puts back any placeholder a crash lost (PROTOCOL.md, placeholders).
fn placeholder_for(inner: &mut Inner, t: &Target) {
    match crate::series::life::write_placeholder(inner, t, false) {
        Ok(()) => crate::series::import::forget_disk(inner, t),
        Err(e) => {
            crate::log::line(&format!("{}: no placeholder: {e}", t.abs));
            crate::series::import::remember_disk(inner, t);
        }
    }
}

/// The path of a series the CLI wrote, where CREATE would put its placeholder
/// ([`Daemon::placeholder_path`]); under -B, None for one through a symbolic link inside
/// the base directory.
fn placed(d: &Daemon, name: &str) -> Option<Target> {
    if d.restrict_base && !name.starts_with('/') && d.no_links(name).is_err() {
        return None;
    }
    d.placeholder_path(name)
}
