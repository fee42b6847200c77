//! The commands that change the store: `create`, `update`/`updatev`, `restore`.

use super::{opt, with_store, writing, Ctx, Outcome, NO_DAEMON};
use crate::getopt;
use crate::store;
use engine::Store;
use rrd::fmt::info_num;
use rrd::update::{parse_template, parse_update_arg};
use rrd::{RowWrite, Rrd};

pub fn create(ctx: &Ctx, args: &[String]) -> Outcome {
    if args.iter().any(|a| a == "-d" || a.starts_with("--daemon")) {
        return Outcome::err(NO_DAEMON);
    }
    // Parse without the store first; open it only when the arguments are good, name a
    // template (`-t other.rrd`) or sources (`-r old.rrd`) that must be read from it, or ask
    // (`-O`) whether the file exists: rrdtool answers "File exists" before it checks any
    // definition.
    let mut probe = Probe::default();
    let first = rrd::create::parse_create_env(args, ctx.now.0, &mut probe);
    let needs_store = probe.0;
    if let Err(e) = &first {
        if !needs_store {
            return Outcome::err(e.msg.clone());
        }
    }
    // A create that reads no other series (no --template, no --source) opens the store for
    // its own name alone.
    let alone = match &first {
        Ok(r) if !needs_store => store::normalize(&r.name).ok(),
        _ => None,
    };
    let run = |st: &mut Store| {
        let (req, sources) = match first {
            Ok(r) if !needs_store => (r, Vec::new()),
            _ => {
                let mut env = StoreEnv {
                    st,
                    files: !ctx.remote,
                };
                let req = match rrd::create::parse_create_env(args, ctx.now.0, &mut env) {
                    Ok(r) => r,
                    Err(e) => return Outcome::err(e.msg),
                };
                let mut sources = Vec::with_capacity(req.sources.len());
                for s in &req.sources {
                    match load_source(st, s, !ctx.remote) {
                        Some(r) => sources.push(r),
                        None => return Outcome::err(format!("Cannot open source RRD {s}")),
                    }
                }
                (req, sources)
            }
        };
        let name = match store::normalize(&req.name) {
            Ok(n) => n,
            Err(e) => return Outcome::err(e),
        };
        if let Err(e) = ctx.may_create(&name) {
            return Outcome::err(e);
        }
        let refs: Vec<&Rrd> = sources.iter().map(|s| s.as_ref()).collect();
        let rrd = req.build(&refs);
        drop(refs);
        drop(sources);
        match st.create(&name, rrd, !req.no_overwrite) {
            Ok(()) => {
                ctx.wrote(&name);
                Outcome::default()
            }
            Err(e) => Outcome::err(store::message(&e, &req.name)),
        }
    };
    match alone {
        Some(name) => writing(ctx, std::slice::from_ref(&name), &name, false, run),
        None => with_store(ctx, run),
    }
}

/// The first reading of create's arguments, without the store: it notes whether the store is
/// needed (a template, a source, or whether the file exists).
#[derive(Default)]
struct Probe(bool);

impl rrd::create::CreateEnv for Probe {
    fn template(&mut self, _: &str) -> Option<(rrd::Schema, i64)> {
        self.0 = true;
        None
    }
    fn exists(&mut self, _: &str) -> bool {
        self.0 = true;
        false
    }
    fn source(&mut self, _: &str) -> Result<(), String> {
        self.0 = true;
        Ok(())
    }
}

/// create's answers from the store: templates and sources are series in it, or else plain
/// RRD files (sources only) at the path given: not inside the daemon (`files` false), whose
/// files are not the client's (and which may read what the client may not).
struct StoreEnv<'a> {
    st: &'a Store,
    files: bool,
}

impl rrd::create::CreateEnv for StoreEnv<'_> {
    fn template(&mut self, t: &str) -> Option<(rrd::Schema, i64)> {
        let name = store::normalize(t).ok()?;
        self.st.get(&name).map(|r| ((*r.schema).clone(), r.last_up))
    }
    fn exists(&mut self, t: &str) -> bool {
        store::normalize(t).is_ok_and(|n| self.st.get(&n).is_some())
    }
    fn source(&mut self, s: &str) -> Result<(), String> {
        if store::normalize(s).is_ok_and(|n| self.st.get(&n).is_some()) {
            return Ok(());
        }
        if !self.files {
            return Err(format!(
                "error checking for source RRD {s}: no such series (beside the daemon, \
                 sources are series of the store: bring a file in with ringlet import first)"
            ));
        }
        // rrdtool's stat() of the file.
        match std::fs::metadata(s) {
            Err(e) => Err(format!(
                "error checking for source RRD {s}: {}",
                crate::strerror(&e)
            )),
            Ok(m) if !m.is_file() => Err(format!("Not a regular file: {s}")),
            Ok(_) => Ok(()),
        }
    }
}

/// Source `s` of a create: the series of that name, or else (`files`) the RRD file at that
/// path.
fn load_source<'a>(st: &'a Store, s: &str, files: bool) -> Option<std::borrow::Cow<'a, Rrd>> {
    if let Some(r) = store::normalize(s).ok().and_then(|n| st.get(&n)) {
        return Some(std::borrow::Cow::Borrowed(r));
    }
    if !files {
        return None;
    }
    let bytes = std::fs::read(s).ok()?;
    rrd::rrdfile::read(&bytes).ok().map(std::borrow::Cow::Owned)
}

/// `update` and `updatev` (`verbose`).
pub fn update(ctx: &Ctx, args: &[String], verbose: bool) -> Outcome {
    let spec = [
        opt("template", 't', true),
        opt("skip-past-updates", 's', false),
        opt("daemon", 'd', true),
    ];
    let p = match getopt::parse(args, &spec) {
        Ok(p) => p,
        Err(e) => return Outcome::err(e),
    };
    if p.has("daemon") {
        return Outcome::err(NO_DAEMON);
    }
    let template = p
        .opts
        .iter()
        .rev()
        .find(|(l, _)| *l == "template")
        .map(|(_, v)| v.clone());
    let skip_past = p.has("skip-past-updates");
    let Some((given, values)) = p.positional.split_first() else {
        return Outcome::err("Not enough arguments");
    };
    if values.is_empty() {
        return Outcome::err("Not enough arguments");
    }
    let name = match store::normalize(given) {
        Ok(n) => n,
        Err(e) => return Outcome::err(e),
    };
    let mut out = writing(ctx, std::slice::from_ref(&name), given, true, |st| {
        let mut rows: Vec<RowWrite> = Vec::new();
        let res = apply_updates(
            ctx,
            st,
            given,
            &name,
            template.as_deref(),
            skip_past,
            values,
            &mut rows,
        );
        let mut text = String::new();
        if verbose {
            let schema = st.get(&name).map(|r| r.schema.clone());
            text.push_str(&format!(
                "return_value = {}\n",
                if res.is_ok() { 0 } else { -1 }
            ));
            if let Some(schema) = schema {
                for w in &rows {
                    let (Some(rra), Some(ds)) = (schema.rra.get(w.rra), schema.ds.get(w.ds)) else {
                        continue;
                    };
                    text.push_str(&format!(
                        "[{}]RRA[{}][{}]DS[{}] = {}\n",
                        w.time,
                        rra.cf.name(),
                        rra.pdp_cnt,
                        ds.name,
                        info_num(w.value)
                    ));
                }
            }
        }
        Outcome {
            stdout: text,
            error: res.err(),
            file: None,
        }
    });
    if verbose && out.stdout.is_empty() {
        out.stdout = "return_value = -1\n".to_string();
    }
    out
}

#[allow(clippy::too_many_arguments)]
fn apply_updates(
    ctx: &Ctx,
    st: &mut Store,
    given: &str,
    name: &str,
    template: Option<&str>,
    skip_past: bool,
    values: &[String],
    rows: &mut Vec<RowWrite>,
) -> Result<(), String> {
    let Some(rrd) = st.get(name) else {
        return Err(format!("opening '{given}': No such file or directory"));
    };
    let schema = rrd.schema.clone();
    let tmpl = match template {
        Some(t) => Some(parse_template(&schema, t).map_err(|e| e.msg)?),
        None => None,
    };
    let mut each = || -> Result<(), String> {
        for arg in values {
            let sample = parse_update_arg(&schema, arg, tmpl.as_deref(), ctx.now)
                .map_err(|e| format!("{given}: {}", e.msg))?;
            if skip_past {
                if let Some(r) = st.get(name) {
                    if (sample.time, sample.usec) <= (r.last_up, r.last_up_usec) {
                        continue;
                    }
                }
            }
            st.update(name, &sample, &mut |w| rows.push(w))
                .map_err(|e| match e {
                    engine::Error::Rrd(r) => format!("{given}: {}", r.msg),
                    other => store::message(&other, given),
                })?;
        }
        Ok(())
    };
    let res = each();
    // One command is one update call: where rrdtool runs the seasonal smoother of a
    // Holt-Winters RRD, once, if the call went without an error.
    if let Some(id) = st.series_id(name) {
        st.end_update_call(id, res.is_ok())
            .map_err(|e| store::message(&e, given))?;
    }
    res
}

const RESTORE_OPTS: [getopt::Opt; 2] = [
    opt("range-check", 'r', false),
    opt("force-overwrite", 'f', false),
];

/// The flags (`-r`, `-f`) a restore's arguments set before any bad option ends their
/// reading: rrdtool 1.7.2 keeps them in static variables, so that in its pipe mode every
/// later restore of the session has them too.
pub fn restore_flags(args: &[String]) -> (bool, bool) {
    let (items, _) = getopt::parse_each(args, &RESTORE_OPTS);
    let mut flags = (false, false);
    for item in items {
        match item {
            getopt::Item::Opt("range-check", _) => flags.0 = true,
            getopt::Item::Opt("force-overwrite", _) => flags.1 = true,
            getopt::Item::Opt(..) => {}
            _ => break,
        }
    }
    flags
}

pub fn restore(ctx: &Ctx, args: &[String]) -> Outcome {
    let p = match getopt::parse(args, &RESTORE_OPTS) {
        Ok(p) => p,
        Err(e) => return Outcome::err(e),
    };
    let [xml_path, given] = p.positional.as_slice() else {
        return Outcome::err(
            "usage rrdtool restore [--range-check|-r] [--force-overwrite|-f] file.xml file.rrd",
        );
    };
    let name = match store::normalize(given) {
        Ok(n) => n,
        Err(e) => return Outcome::err(e),
    };
    let read = if ctx.remote {
        ctx.input
            .map(str::to_string)
            .ok_or_else(|| std::io::Error::other("no input"))
    } else if xml_path == "-" {
        std::io::read_to_string(std::io::stdin())
    } else {
        std::fs::read_to_string(xml_path)
    };
    let Ok(xml) = read else {
        return Outcome::err(format!("Could not create xml reader for: {xml_path}"));
    };
    let rrd = match rrd::restore::restore_xml(&xml, p.has("range-check")) {
        Ok(r) => r,
        Err(e) => return Outcome::err(e.msg),
    };
    let force = p.has("force-overwrite");
    if let Err(e) = ctx.may_create(&name) {
        return Outcome::err(e);
    }
    with_store(ctx, |st| {
        // The series a forced restore replaces is kept as a real file first: what a tool
        // that edits an RRD by dump and `restore -f` (Cacti's spikekill) copies as its
        // backup is the placeholder, which holds no data.
        if force {
            if let Some(old) = st.get(&name) {
                if let Err(e) = keep_replaced(ctx.store_dir, &name, old, ctx.now.0) {
                    return Outcome::err(format!(
                        "restore: the series it would replace could not be kept: {e}"
                    ));
                }
            }
        }
        match st.create(&name, rrd, force) {
            Ok(()) => {
                ctx.wrote(&name);
                Outcome::default()
            }
            Err(e) => Outcome::err(store::message(&e, given)),
        }
    })
}

/// Where a series replaced by `restore -f` is kept: `<store>/replaced/<name>.<time>.rrd`.
pub fn replaced_path(store_dir: &std::path::Path, name: &str, now: i64) -> std::path::PathBuf {
    store_dir
        .join("replaced")
        .join(format!("{}.{now}.rrd", name.trim_start_matches('/')))
}

/// Write `rrd` (series `name`, about to be replaced) as rrdtool's file at
/// [`replaced_path`], synced; a name taken already gets `.1`, `.2`, ... after it.
fn keep_replaced(
    store_dir: &std::path::Path,
    name: &str,
    rrd: &rrd::Rrd,
    now: i64,
) -> Result<(), String> {
    use std::io::Write;
    let bytes = rrd::rrdfile::write(rrd).map_err(|e| e.msg)?;
    let first = replaced_path(store_dir, name, now);
    let path = (0u32..)
        .map(|i| match i {
            0 => first.clone(),
            i => first.with_extension(format!("rrd.{i}")),
        })
        .find(|p| !p.exists())
        .unwrap_or(first);
    let io = |e: std::io::Error| format!("{}: {e}", path.display());
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).map_err(io)?;
    }
    let mut f = std::fs::File::create(&path).map_err(io)?;
    f.write_all(&bytes).map_err(io)?;
    f.sync_all().map_err(io)?;
    Ok(())
}

/// The file `restore` reads its XML from (`-`: standard input), when its arguments are good:
/// a client beside the daemon reads it on its side.
pub fn restore_input(args: &[String]) -> Option<String> {
    let p = getopt::parse(args, &RESTORE_OPTS).ok()?;
    match p.positional.as_slice() {
        [xml, _] => Some(xml.clone()),
        _ => None,
    }
}

/// The store name `update`/`updatev` writes, when its arguments name one.
pub fn update_target(args: &[String]) -> Option<String> {
    let spec = [
        opt("template", 't', true),
        opt("skip-past-updates", 's', false),
        opt("daemon", 'd', true),
    ];
    let p = getopt::parse(args, &spec).ok()?;
    store::normalize(p.positional.first()?).ok()
}
