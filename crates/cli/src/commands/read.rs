//! The commands that only read: `fetch`, `info`, `first`, `last`, `lastupdate`, `dump`,
//! `xport`. They never create a missing store.

use super::{load, opt, read_one, with_store, Ctx, Outcome, NO_DAEMON};
use crate::getopt;
use crate::store;
use engine::Store;
use rrd::fetch::{fetch, format_fetch};
use rrd::parsetime::{parse_time, resolve_pair, Base, TimeSpec, MIN_TIME};
use rrd::{Cf, Rrd};

pub fn fetch_cmd(ctx: &Ctx, args: &[String]) -> Outcome {
    let spec = [
        opt("resolution", 'r', true),
        opt("start", 's', true),
        opt("end", 'e', true),
        opt("align-start", 'a', false),
        opt("daemon", 'd', true),
    ];
    let p = match getopt::parse(args, &spec) {
        Ok(p) => p,
        Err(e) => return Outcome::err(e),
    };
    // Defaults: `-s end-24h -e now`.
    let mut start_spec = TimeSpec {
        base: Base::End,
        years: 0,
        months: 0,
        days: 0,
        secs: -86400,
    };
    let mut end_spec = TimeSpec {
        base: Base::Absolute(ctx.now.0),
        secs: 0,
        ..start_spec
    };
    let mut resolution = 1u64;
    for (l, v) in &p.opts {
        match *l {
            "resolution" => match rrd::create::scaled_duration(v, 1) {
                Ok(r) => resolution = r,
                Err(m) => return Outcome::err(format!("resolution: {m}")),
            },
            "start" => match parse_time(v, ctx.now.0) {
                Ok(t) => start_spec = t,
                Err(e) => return Outcome::err(format!("start time: {}", e.msg)),
            },
            "end" => match parse_time(v, ctx.now.0) {
                Ok(t) => end_spec = t,
                Err(e) => return Outcome::err(format!("end time: {}", e.msg)),
            },
            "daemon" => return Outcome::err(NO_DAEMON),
            _ => {}
        }
    }
    let (start, end) = match resolve_pair(&start_spec, &end_spec) {
        Ok(x) => x,
        Err(e) => return Outcome::err(e.msg),
    };
    if start < MIN_TIME {
        return Outcome::err("the first entry to fetch should be after 1980");
    }
    if end < start {
        return Outcome::err(format!("start ({start}) should be less than end ({end})"));
    }
    let [given, cf_name, ..] = p.positional.as_slice() else {
        return Outcome::err("Usage: rrdtool fetch <file> <CF> [options]");
    };
    let Some(cf) = Cf::from_name(cf_name) else {
        return Outcome::err(format!("unknown consolidation function '{cf_name}'"));
    };
    let align = p.has("align-start");
    read_one(ctx, given, |st| {
        let rrd = match load(st, given) {
            Ok(r) => r,
            Err(e) => return Outcome::err(e),
        };
        match fetch(rrd, cf, start, end, resolution, align) {
            Ok(r) => Outcome::ok(format_fetch(&r)),
            Err(e) => Outcome::err(e.msg),
        }
    })
}

/// `info`, `last`, `lastupdate`: one file, nothing else.
fn single_file<'a>(p: &'a getopt::Parsed, usage: &str) -> Result<&'a str, String> {
    if p.has("daemon") {
        return Err(NO_DAEMON.to_string());
    }
    match p.positional.as_slice() {
        [one] => Ok(one),
        _ => Err(usage.to_string()),
    }
}

pub fn info(ctx: &Ctx, args: &[String]) -> Outcome {
    let spec = [opt("daemon", 'd', true), opt("noflush", 'F', false)];
    let given = match getopt::parse(args, &spec).and_then(|p| {
        single_file(
            &p,
            "Usage: rrdtool info [--daemon |-d <addr> [--noflush|-F]] <file>",
        )
        .map(String::from)
    }) {
        Ok(g) => g,
        Err(e) => return Outcome::err(e),
    };
    read_one(ctx, &given, |st| match load(st, &given) {
        Ok(rrd) => Outcome::ok(rrd::info::format_info(&rrd::info::info(rrd, &given))),
        Err(e) => Outcome::err(e),
    })
}

/// `first` and `last` print `-1` on stdout when they fail.
fn minus_one(mut o: Outcome) -> Outcome {
    if o.error.is_some() {
        o.stdout = "-1\n".to_string();
    }
    o
}

pub fn last(ctx: &Ctx, args: &[String]) -> Outcome {
    let spec = [opt("daemon", 'd', true)];
    let given = match getopt::parse(args, &spec).and_then(|p| {
        single_file(&p, "Usage: rrdtool last [--daemon|-d <addr>] <file>").map(String::from)
    }) {
        Ok(g) => g,
        Err(e) => return minus_one(Outcome::err(e)),
    };
    minus_one(read_one(ctx, &given, |st| match load(st, &given) {
        Ok(rrd) => Outcome::ok(format!("{}\n", rrd.last_up)),
        Err(e) => Outcome::err(e),
    }))
}

pub fn first(ctx: &Ctx, args: &[String]) -> Outcome {
    let spec = [opt("rraindex", '\0', true), opt("daemon", 'd', true)];
    let p = match getopt::parse(args, &spec) {
        Ok(p) => p,
        Err(e) => return minus_one(Outcome::err(e)),
    };
    if p.has("daemon") {
        return minus_one(Outcome::err(NO_DAEMON));
    }
    // atoi: leading digits with an optional sign, else 0.
    let index = p
        .opts
        .iter()
        .rev()
        .find(|(l, _)| *l == "rraindex")
        .map_or(0, |(_, v)| atoi(v));
    let Some(given) = p.positional.first().cloned() else {
        return minus_one(Outcome::err(
            "usage rrdtool first [--rraindex number] [--daemon|-d <addr>] file.rrd",
        ));
    };
    minus_one(read_one(ctx, &given, |st| {
        let rrd = match load(st, &given) {
            Ok(r) => r,
            Err(e) => return Outcome::err(e),
        };
        let Some(def) = usize::try_from(index)
            .ok()
            .and_then(|i| rrd.schema.rra.get(i).map(|d| (i, d)))
        else {
            return Outcome::err("invalid rraindex number");
        };
        let (i, def) = def;
        let span = (rrd.schema.step * def.pdp_cnt) as i64;
        let first = rrd.rra_end(i) - (def.row_cnt as i64 - 1) * span;
        Outcome::ok(format!("{first}\n"))
    }))
}

/// C's `atoi` (`first --rraindex`).
fn atoi(s: &str) -> i64 {
    i64::from(rrd::num::atoi(s))
}

pub fn lastupdate(ctx: &Ctx, args: &[String]) -> Outcome {
    let spec = [opt("daemon", 'd', true)];
    let given = match getopt::parse(args, &spec).and_then(|p| {
        single_file(&p, "Usage: rrdtool lastupdate [--daemon|-d <addr>] <file>").map(String::from)
    }) {
        Ok(g) => g,
        Err(e) => return Outcome::err(e),
    };
    read_one(ctx, &given, |st| {
        let rrd = match load(st, &given) {
            Ok(r) => r,
            Err(e) => return Outcome::err(e),
        };
        let mut s = String::new();
        for d in &rrd.schema.ds {
            s.push(' ');
            s.push_str(&d.name);
        }
        s.push_str(&format!("\n\n{}:", rrd.last_up));
        for p in &rrd.pdp {
            s.push(' ');
            s.push_str(&p.last_ds);
        }
        s.push('\n');
        Outcome::ok(s)
    })
}

const DUMP_USAGE: &str = "usage rrdtool dump [--header|-h {none,xsd,dtd}]\n[--no-header|-n]\n\
[--daemon|-d address]\nfile.rrd [file.xml]";

pub fn dump(ctx: &Ctx, args: &[String]) -> Outcome {
    let spec = [
        opt("header", 'h', true),
        opt("no-header", 'n', false),
        opt("daemon", 'd', true),
    ];
    // rrdtool dump answers any option error with its usage.
    let Ok(p) = getopt::parse(args, &spec) else {
        return Outcome::err(DUMP_USAGE);
    };
    let mut header = "dtd".to_string();
    for (l, v) in &p.opts {
        match *l {
            "header" => header.clone_from(v),
            "no-header" => header = "none".to_string(),
            _ => return Outcome::err(NO_DAEMON),
        }
    }
    let (given, out_file) = match p.positional.as_slice() {
        [f] => (f.clone(), None),
        [f, x] => (f.clone(), Some(x.clone())),
        _ => return Outcome::err(DUMP_USAGE),
    };
    read_one(ctx, &given, |st| {
        let rrd = match load(st, &given) {
            Ok(r) => r,
            Err(e) => return Outcome::err(e),
        };
        let xml = rrd::dump::dump_xml(rrd, &header);
        match out_file {
            None => Outcome::ok(xml),
            Some(path) if ctx.remote => Outcome {
                file: Some((path, xml)),
                ..Outcome::default()
            },
            Some(path) => match std::fs::write(&path, xml) {
                Ok(()) => Outcome::default(),
                Err(e) => Outcome::err(format!("cannot write to {path}: {e}")),
            },
        }
    })
}

pub fn xport(ctx: &Ctx, args: &[String]) -> Outcome {
    if args.iter().any(|a| a == "-d" || a.starts_with("--daemon")) {
        return Outcome::err(NO_DAEMON);
    }
    let run = |st: &mut Store, asked: &mut Vec<String>| {
        let mut loader = |given: &str| -> Result<Rrd, rrd::RrdError> {
            if let Ok(n) = store::normalize(given) {
                asked.push(n);
            }
            load(st, given).cloned().map_err(rrd::RrdError::new)
        };
        match rrd::xport::xport(args, ctx.now.0, &mut loader) {
            Ok(s) => Outcome::ok(s),
            Err(e) => Outcome::err(e.msg),
        }
    };
    if ctx.shared.is_some() || !ctx.store_dir.exists() {
        return with_store(ctx, |st| run(st, &mut Vec::new()));
    }
    // On its own: open the store for the series the DEFs name (xport only reads), and again
    // with any series it asked for beyond them (a name spelt so that the DEFs' reading here
    // missed it), so that the answer is the one a whole open gives.
    let mut names: Vec<String> = args
        .iter()
        .filter_map(|a| def_file(a))
        .filter_map(|f| store::normalize(&f).ok())
        .collect();
    for _ in 0..3 {
        names.sort_unstable();
        names.dedup();
        let mut st = match store::open_reading_all(ctx.store_dir, &names, "xport") {
            Ok(st) => st,
            Err(e) => return Outcome::err(e),
        };
        let mut asked = Vec::new();
        let out = run(&mut st, &mut asked);
        if asked.iter().all(|a| names.binary_search(a).is_ok()) {
            return out;
        }
        names.extend(asked);
    }
    with_store(ctx, |st| run(st, &mut Vec::new()))
}

/// The file a `DEF:vname=file:ds:CF...` argument names (`\:` in it is a colon).
fn def_file(arg: &str) -> Option<String> {
    let rest = arg.strip_prefix("DEF:")?;
    let (_, after) = rest.split_once('=')?;
    let mut out = String::new();
    let mut it = after.chars();
    while let Some(c) = it.next() {
        match c {
            '\\' => match it.next() {
                Some(':') => out.push(':'),
                Some(n) => {
                    out.push('\\');
                    out.push(n);
                }
                None => out.push('\\'),
            },
            ':' => return Some(out),
            c => out.push(c),
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::atoi;

    #[test]
    fn def_file_reads_the_file_of_a_def() {
        use super::def_file;
        assert_eq!(
            def_file("DEF:a=h/x.rrd:sum:AVERAGE").as_deref(),
            Some("h/x.rrd")
        );
        assert_eq!(
            def_file("DEF:a=c\\:\\x.rrd:v:MAX:step=60").as_deref(),
            Some("c:\\x.rrd")
        );
        assert_eq!(def_file("XPORT:a"), None);
        assert_eq!(def_file("DEF:a=nocolon"), None);
    }

    #[test]
    fn atoi_reads_like_c() {
        assert_eq!(atoi("12x"), 12);
        assert_eq!(atoi("x"), 0);
        assert_eq!(atoi("-3"), -3);
    }
}
