//! `graph` and `graphv`: drawn by rrdtool's own renderer (librrd 1.7.2, [`crate::librrd`]) in
//! a drawing process of its own ([`crate::drawer`]), fed straight from the store: no `.rrd`
//! bytes are written anywhere to draw a graph.
//!
//! The arguments are read as rrdtool reads them ([`options`]: its option table; the output
//! file is the first argument that is not an option). The drawing process gets them with
//! the output turned into `-` (the image comes back in memory) and every DEF's file into
//! `cb//FILE`, which librrd fetches through its fetch callback: the parent answers each
//! fetch (series, CF, window, step) with the rows the store holds, the archive chosen as
//! `rrd_fetch` chooses it on the file ([`rrd::fetch::fetch`]), so that the image, PRINT and
//! GPRINT lines and `graphv`'s keys are rrdtool's for a file that holds what the store holds.
//! What rrdtool prints for a file (the `WxH` line and PRINT's lines for `graph`; `graphv`'s
//! keys without the image's) is made from what librrd gave for `-`, and the image is written
//! to the file by the process the user runs ([`Drawn::save`]): alone, `ringlet graph` or
//! pipe mode; beside a daemon, the client, with the image the daemon drew.
//!
//! Who draws ([`Renderer`]): one drawing process for a command or a whole pipe-mode session
//! (cairo numbers the surfaces of a process, and an SVG names its own after them, so a
//! session's graphs are drawn by one process, in order, as rrdtool's own pipe mode does).
//! Alone, it is started before the store is read. Beside a daemon the graph is drawn in the
//! daemon ([`DRAW`], [`Spare`]): one drawing process for each client connection, the first
//! taken from one started ahead, with the client's time zone and locale; the rows come from
//! the daemon's store and count against its read budget. Where the daemon has
//! [`MAX_DRAWERS`] connections drawing already, the client draws itself, its rows asked of
//! the daemon ([`FETCH_ROWS`]).
//!
//! Hand-written (no crate): rrdtool's option table (which options take a value decides which
//! argument is the output), the `--imginfo` line's file name, the `graphv` image key: they
//! are rrdtool 1.7.2's own conventions, checked against it by the tests.

use crate::drawer::{Drawer, FetchFn, MAX_PIXELS, MAX_SIDE};
pub use crate::drawer::{ENV_KEYS, MAX_VALUES};
use crate::librrd::Rows;
use crate::Outcome;

/// What a graph printed (what rrdtool prints on its standard output: the image for `-`, the
/// `WxH` and PRINT lines or `graphv`'s keys for a file), the file to write and its bytes,
/// and the graph's error.
#[derive(Default)]
pub struct Drawn {
    pub stdout: Vec<u8>,
    pub file: Option<(String, Vec<u8>)>,
    /// The image format (`png`, `svg`, ...), for the message when the file cannot be written.
    pub format: String,
    pub error: Option<String>,
}

impl Drawn {
    fn err(e: impl Into<String>) -> Drawn {
        Drawn {
            error: Some(e.into()),
            ..Drawn::default()
        }
    }

    /// Write the output file (where the user is), as rrdtool writes it: its error is the
    /// graph's, after what the graph printed.
    pub fn save(&mut self) {
        if let Some((path, bytes)) = self.file.take() {
            if std::fs::write(&path, &bytes).is_err() {
                self.error
                    .get_or_insert_with(|| format!("Could not save {} to '{path}'", self.format));
            }
        }
    }
}

/// `graphv`'s output for `-` split into the output for a file (the `image = BLOB_SIZE:N`
/// key and its N bytes taken out) and the image.
pub fn split_image_key(out: &[u8]) -> (Vec<u8>, &[u8]) {
    const KEY: &[u8] = b"image = BLOB_SIZE:";
    let at = out
        .windows(KEY.len())
        .position(|w| w == KEY)
        .filter(|&i| i == 0 || out[i - 1] == b'\n');
    let Some(i) = at else {
        return (out.to_vec(), &[]);
    };
    let Some(nl) = out[i..].iter().position(|&b| b == b'\n').map(|p| i + p) else {
        return (out.to_vec(), &[]);
    };
    let n: usize = std::str::from_utf8(&out[i + KEY.len()..nl])
        .ok()
        .and_then(|s| s.trim().parse().ok())
        .unwrap_or(0);
    let end = (nl + 1 + n).min(out.len());
    let mut rest = out[..i].to_vec();
    rest.extend_from_slice(&out[end..]);
    (rest, &out[nl + 1..end])
}

/// `arg` with a `DEF:`'s file sent to librrd's fetch callback (`cb//` before it; other
/// arguments as they are).
pub fn to_callback(arg: &str) -> String {
    match def_file(arg) {
        Some((start, _, _)) => format!("{}cb//{}", &arg[..start], &arg[start..]),
        None => arg.to_string(),
    }
}

/// The file name inside a `DEF:` argument: the byte range after `vname=` up to the first
/// colon not escaped by a backslash, and the text it stands for (escapes removed).
fn def_file(arg: &str) -> Option<(usize, usize, String)> {
    let body = arg.strip_prefix("DEF:")?;
    let eq = body.find('=')?;
    let start = 4 + eq + 1;
    let b = arg.as_bytes();
    let mut i = start;
    let mut name = String::new();
    while i < b.len() {
        match b[i] {
            b'\\' if b.get(i + 1) == Some(&b':') => {
                name.push(':');
                i += 2;
            }
            b':' => break,
            _ => {
                let ch = arg[i..].chars().next()?;
                name.push(ch);
                i += ch.len_utf8();
            }
        }
    }
    Some((start, i, name))
}

/// The files the DEFs of `args` name, each once, in order.
pub fn files(args: &[String]) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    let opts = options(args);
    for i in &opts.operands {
        if let Some((_, _, name)) = def_file(&args[*i]) {
            if !out.contains(&name) {
                out.push(name);
            }
        }
    }
    out
}

/// rrdtool graph's short options that take a value (librrd 1.7.2: the others are flags).
const SHORT_VALUE: &str = "abcdefhlmnstuvwxyBGLRSTWX";

/// Its long options that take a value, with their short letter where they have one.
const LONG_VALUE: &[(&str, char)] = &[
    ("base", 'b'),
    ("border", ' '),
    ("color", 'c'),
    ("daemon", 'd'),
    ("end", 'e'),
    ("font", 'n'),
    ("font-render-mode", 'R'),
    ("font-smoothing-threshold", 'B'),
    ("graph-render-mode", 'G'),
    ("graph-type", ' '),
    ("grid-dash", ' '),
    ("height", 'h'),
    ("imgformat", 'a'),
    ("imginfo", 'f'),
    ("left-axis-format", ' '),
    ("left-axis-formatter", ' '),
    ("legend-direction", ' '),
    ("legend-position", ' '),
    ("lower-limit", 'l'),
    ("right-axis", ' '),
    ("right-axis-format", ' '),
    ("right-axis-formatter", ' '),
    ("right-axis-label", ' '),
    ("start", 's'),
    ("step", 'S'),
    ("tabwidth", 'T'),
    ("title", 't'),
    ("units", ' '),
    ("units-exponent", 'X'),
    ("units-length", 'L'),
    ("upper-limit", 'u'),
    ("vertical-label", 'v'),
    ("watermark", 'W'),
    ("week-fmt", ' '),
    ("width", 'w'),
    ("x-grid", 'x'),
    ("y-grid", 'y'),
    ("zoom", 'm'),
];

/// A graph's arguments as rrdtool reads them: its options and their values, and the
/// arguments that are not options (the output file first, then the graph's elements).
#[derive(Debug, Default, PartialEq)]
pub struct Options {
    /// Each option: its short letter or long name (a long one with a letter as the letter),
    /// and its value.
    pub given: Vec<(String, Option<String>)>,
    /// The indices of the arguments that are not options, in order.
    pub operands: Vec<usize>,
}

impl Options {
    /// The last value of option `key` (a letter or a long name).
    pub fn value(&self, key: &str) -> Option<&str> {
        self.given
            .iter()
            .rev()
            .find(|(k, _)| k == key)
            .and_then(|(_, v)| v.as_deref())
    }

    /// Whether flag `key` is given.
    pub fn has(&self, key: &str) -> bool {
        self.given.iter().any(|(k, _)| k == key)
    }

    /// The output file's index: the first argument that is not an option.
    pub fn output(&self) -> Option<usize> {
        self.operands.first().copied()
    }
}

/// Read `args` (after `graph`) as librrd's option parser does: options anywhere (their
/// values in the same argument or the next), `--` ends them, `-` alone is not one. An
/// option librrd does not know is read as a flag (librrd then says it is invalid).
pub fn options(args: &[String]) -> Options {
    let mut o = Options::default();
    let mut i = 0;
    while i < args.len() {
        let a = &args[i];
        if a == "--" {
            o.operands.extend(i + 1..args.len());
            break;
        }
        if let Some(long) = a.strip_prefix("--") {
            let (name, inline) = match long.split_once('=') {
                Some((n, v)) => (n, Some(v.to_string())),
                None => (long, None),
            };
            let key = |c: char| {
                if c == ' ' {
                    name.to_string()
                } else {
                    c.to_string()
                }
            };
            match LONG_VALUE.iter().find(|(n, _)| *n == name) {
                Some((_, c)) => {
                    let v = inline.or_else(|| {
                        i += 1;
                        args.get(i).cloned()
                    });
                    o.given.push((key(*c), v));
                }
                None => o.given.push((name.to_string(), inline)),
            }
        } else if a.len() > 1 && a.starts_with('-') {
            for (j, c) in a.char_indices().skip(1) {
                if SHORT_VALUE.contains(c) {
                    let rest = &a[j + c.len_utf8()..];
                    let v = if rest.is_empty() {
                        i += 1;
                        args.get(i).cloned()
                    } else {
                        Some(rest.to_string())
                    };
                    o.given.push((c.to_string(), v));
                    break;
                }
                o.given.push((c.to_string(), None));
            }
        } else {
            o.operands.push(i);
        }
        i += 1;
    }
    o
}

/// The `--imginfo` line of a graph drawn to `-` with the output file's name in place of the
/// one librrd gives a graph drawn in memory (`memory`): librrd prints the format (`%s`,
/// `%lu`, `%lu`, and `%%` for a percent sign, nothing else: it refuses any other) with the
/// file's name after its last `/`.
fn imginfo_line(line: &str, format: &str, output: &str) -> String {
    let Some(at) = format.find("%s") else {
        return line.to_string();
    };
    let before = format[..at].replace("%%", "%");
    let base = output.rsplit('/').next().unwrap_or(output);
    match line
        .strip_prefix(&before)
        .and_then(|r| r.strip_prefix("memory"))
    {
        Some(rest) => format!("{before}{base}{rest}"),
        None => line.to_string(),
    }
}

/// Why `args` (of `graph`/`graphv`, without the output) may not be drawn, if they may not:
/// a NUL byte, a width or height past [`MAX_SIDE`] or an area (zoom included) past
/// [`MAX_PIXELS`], a DEF key that names a file or an address (`rrd=`, `daemon=`),
/// `--daemon`.
pub fn refused(args: &[String]) -> Option<String> {
    if args.iter().any(|a| a.contains('\0')) {
        return Some("an argument holds a NUL byte".into());
    }
    let opts = options(args);
    if opts.has("d") {
        return Some("--daemon: a graph is drawn from the store".into());
    }
    let num = |k: &str, default: f64| {
        opts.value(k)
            .and_then(|v| v.trim().parse::<f64>().ok())
            .filter(|v| v.is_finite())
            .unwrap_or(default)
    };
    let (w, h, zoom) = (num("w", 400.0), num("h", 100.0), num("m", 1.0));
    for &i in &opts.operands {
        let Some(body) = args[i].strip_prefix("DEF:") else {
            continue;
        };
        for key in body.split(':').skip(1) {
            let k = key.split('=').next().unwrap_or("");
            if matches!(k, "rrd" | "daemon") && key.contains('=') {
                return Some(format!(
                    "DEF: the key '{k}=' names a file or an address: a DEF names a series"
                ));
            }
        }
    }
    if w > MAX_SIDE as f64 || h > MAX_SIDE as f64 {
        return Some(format!(
            "a graph of {w} x {h}: at most {MAX_SIDE} on a side"
        ));
    }
    let area = w.abs() * h.abs() * zoom * zoom;
    if area > MAX_PIXELS as f64 {
        return Some(format!(
            "a graph of {w} x {h} at zoom {zoom} ({area} pixels): at most {MAX_PIXELS}"
        ));
    }
    None
}

/// Why the drawing environment `env` may not be used, if it may not: a time zone that names
/// a file (`TZ=/dev/stdin`, `TZ=:/etc/x`, one with `..`) rather than a zone of the system's
/// (`Europe/Paris`, `UTC`, `CET-1CEST`), or a value with a NUL byte.
pub fn env_refused(env: &[(String, String)]) -> Option<String> {
    for (k, v) in env {
        if v.contains('\0') {
            return Some(format!("{k} holds a NUL byte"));
        }
        if k == "TZ" {
            let zone = v.strip_prefix(':').unwrap_or(v);
            if zone.starts_with('/') || zone.split('/').any(|c| c == "..") {
                return Some(format!("TZ={v}: a time zone names a zone, not a file"));
            }
        }
    }
    None
}

/// Where graphs are drawn: one drawing process for a command or a whole pipe-mode session
/// (in a session every graph goes to the same process, in order, as it would in `rrdtool -`
/// itself: cairo numbers the surfaces a process makes, and an SVG names its own after that
/// number, `<g id="surface9">`).
pub struct Renderer {
    drawer: Option<Drawer>,
    /// The environment the graph is drawn in (the client's, in the daemon); None: this
    /// process's.
    env: Option<Env>,
    /// A pipe-mode session beside a daemon: whether its graphs are drawn there (decided by
    /// its first graph, so that they are all drawn by one process).
    remote: Option<bool>,
    /// In the daemon: its place among the [`MAX_DRAWERS`].
    _ticket: Option<Ticket>,
}

/// The values of [`ENV_KEYS`] a process has (those set, in that order).
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub struct Env(Vec<(String, String)>);

impl Env {
    /// This process's.
    pub fn here() -> Env {
        Env(ENV_KEYS
            .iter()
            .filter_map(|k| std::env::var(k).ok().map(|v| (k.to_string(), v)))
            .collect())
    }

    /// The variables set, as (key, value).
    pub fn pairs(&self) -> &[(String, String)] {
        &self.0
    }

    /// As arguments of the daemon's `draw`: `KEY=VALUE` each, then `--`.
    fn to_args(&self) -> Vec<String> {
        let mut a: Vec<String> = self.0.iter().map(|(k, v)| format!("{k}={v}")).collect();
        a.push("--".into());
        a
    }

    /// Read back from `draw`'s arguments: the environment, and the arguments after `--`.
    fn from_args(args: &[String]) -> Option<(Env, &[String])> {
        let end = args.iter().position(|a| a == "--")?;
        let mut env = Vec::new();
        for a in &args[..end] {
            let (k, v) = a.split_once('=')?;
            if !ENV_KEYS.contains(&k) {
                return None;
            }
            env.push((k.to_string(), v.to_string()));
        }
        Some((Env(env), &args[end + 1..]))
    }
}

impl Default for Renderer {
    fn default() -> Self {
        Renderer::new()
    }
}

impl Renderer {
    /// For a command or a pipe-mode session: one drawing process for all its graphs,
    /// started by the first (or by [`Renderer::start`]).
    pub fn new() -> Renderer {
        Renderer {
            drawer: None,
            env: None,
            remote: None,
            _ticket: None,
        }
    }

    /// Start the drawing process now, so that its start (loading librrd and its fonts'
    /// libraries) overlaps the store's opening; a failure is reported by the first draw.
    pub fn start(&mut self) {
        if self.drawer.is_none() {
            self.drawer = Drawer::start().ok();
        }
    }

    /// For a command whose process ends once its graph is saved: end the drawing process
    /// now, without waiting for it. Its exit (the unmapping of librrd and its 40 libraries,
    /// about 2 ms) overlaps the writing of the image, and whoever inherits it when this
    /// process has exited reaps it, as for any process that outlives its parent.
    pub fn release(&mut self) {
        if let Some(d) = self.drawer.take() {
            d.release();
        }
    }

    /// Draw `cmd` (graph or graphv) with `args` (rrdtool's, the output file among them),
    /// each DEF's rows from `fetch`. The output file is not written: see [`Drawn::save`].
    pub fn draw(&mut self, cmd: &str, args: &[String], fetch: &mut FetchFn<'_>) -> Drawn {
        if args.is_empty() {
            // rrdtool prints the command's usage.
            return Drawn {
                stdout: crate::usage_text_of(cmd).into_bytes(),
                ..Drawn::default()
            };
        }
        let opts = options(args);
        let format = opts.value("a").unwrap_or("PNG").to_ascii_lowercase();
        let out_at = opts.output();
        let output = out_at.map(|i| args[i].clone());
        // The output becomes `-`, every DEF's file the callback's.
        let mut wire = Vec::with_capacity(args.len());
        let mut rest = Vec::with_capacity(args.len());
        for (i, a) in args.iter().enumerate() {
            if Some(i) == out_at {
                wire.push("-".to_string());
                continue;
            }
            let a = if opts.operands.contains(&i) {
                to_callback(a)
            } else {
                a.clone()
            };
            rest.push(a.clone());
            wire.push(a);
        }
        let env = self.env.clone().unwrap_or_else(Env::here);
        if let Some(why) = refused(&rest).or_else(|| env_refused(env.pairs())) {
            return Drawn::err(why);
        }
        let names = files(args);
        // librrd names a series by its callback name (`cb//x.rrd`): the user's name back.
        let back = |s: String| {
            names
                .iter()
                .fold(s, |s, n| s.replace(&format!("cb//{n}"), n))
        };
        let o = match self.run(cmd, &wire, &env, fetch) {
            Ok(o) => o,
            Err(e) => {
                return Drawn {
                    format,
                    ..Drawn::err(back(e))
                }
            }
        };
        let mut d = Drawn {
            format,
            ..Drawn::default()
        };
        match output.as_deref() {
            // librrd said why itself (no output: `missing filename`); `-`: as it printed.
            None | Some("-") => d.stdout = o.stdout,
            Some(path) if cmd == "graphv" => {
                let (keys, image) = split_image_key(&o.stdout);
                if !image.is_empty() {
                    d.file = Some((path.to_string(), image.to_vec()));
                }
                d.stdout = keys;
            }
            Some(path) => {
                // rrdtool's `WxH` line (not with `--imginfo`) and PRINT's lines (a non-empty
                // `--imginfo`'s first, with the file's name); nothing when librrd drew
                // nothing and said nothing.
                if o.xsize >= 0 {
                    let mut text = String::new();
                    if !opts.has("f") {
                        text = format!("{}x{}\n", o.xsize, o.ysize);
                    }
                    for (k, l) in o.lines.iter().enumerate() {
                        match opts.value("f").filter(|f| k == 0 && !f.is_empty()) {
                            Some(f) => text.push_str(&imginfo_line(l, f, path)),
                            None => text.push_str(l),
                        }
                        text.push('\n');
                    }
                    d.stdout = text.into_bytes();
                }
                if !o.stdout.is_empty() {
                    d.file = Some((path.to_string(), o.stdout));
                }
            }
        }
        d
    }

    /// The drawing process's answer to `wire`, started first if there is none; a process
    /// that died or took too long is dropped (the next graph starts another).
    fn run(
        &mut self,
        cmd: &str,
        wire: &[String],
        env: &Env,
        fetch: &mut FetchFn<'_>,
    ) -> Result<crate::drawer::Output, String> {
        if self.drawer.is_none() {
            self.drawer = Some(Drawer::start()?);
        }
        let Some(drawer) = self.drawer.as_mut() else {
            return Err("no drawing process".into());
        };
        match drawer.draw(cmd, wire, env.pairs(), fetch) {
            Ok(r) => r,
            Err(e) => {
                self.drawer = None;
                Err(e)
            }
        }
    }
}

/// The rows of series `rrd` that librrd's fetch of (`cf`, `start`, `end`, `step`) gets for
/// a graph: what `rrd_fetch` gives on the file (its archive choice and alignment), refused
/// past [`MAX_VALUES`] and where damaged rows were met (`name` names the series).
pub fn rows(
    rrd: &rrd::Rrd,
    name: &str,
    cf: &str,
    start: i64,
    end: i64,
    step: u64,
) -> Result<Rows, String> {
    let cf_v = rrd::Cf::from_name(cf).ok_or_else(|| format!("unknown CF '{cf}'"))?;
    let n = rrd::fetch::fetch_values(rrd, cf_v, start, end, step);
    if rrd::Budget::new(MAX_VALUES).spend(n.into()).is_err() {
        return Err(format!(
            "the graph would read {n} values of '{name}' in one DEF: at most {MAX_VALUES} \
             (a shorter time range, or a coarser archive with step=)"
        ));
    }
    let (r, damage) = rrd::rows::watch(|| rrd::fetch::fetch(rrd, cf_v, start, end, step, false));
    if let Some(d) = damage {
        return Err(d.message(name));
    }
    r.map_err(|e| e.msg)
}

/// The command (run where the store is: here, or in the daemon through RUN) that gives a
/// graph's rows for a DEF: `fetch-rows NAME CF START END STEP`, answered with the rows
/// encoded as the drawing process takes them, in hex. A client beside a daemon that draws
/// itself asks for its rows this way.
pub const FETCH_ROWS: &str = "fetch-rows";

/// The arguments of [`FETCH_ROWS`] for a fetch.
pub fn fetch_rows_args(name: &str, cf: &str, start: i64, end: i64, step: u64) -> Vec<String> {
    vec![
        name.to_string(),
        cf.to_string(),
        start.to_string(),
        end.to_string(),
        step.to_string(),
    ]
}

/// [`FETCH_ROWS`]'s arguments read: the name, the CF, start, end, step.
pub fn parse_fetch_rows(args: &[String]) -> Option<(&str, &str, i64, i64, u64)> {
    let [name, cf, start, end, step] = args else {
        return None;
    };
    Some((
        name,
        cf,
        start.parse().ok()?,
        end.parse().ok()?,
        step.parse().ok()?,
    ))
}

/// The rows from [`FETCH_ROWS`]'s answer.
pub fn rows_from(out: Outcome) -> Result<Rows, String> {
    if let Some(e) = out.error {
        return Err(e);
    }
    let mut bytes = Vec::new();
    crate::unhex(out.stdout.trim_end(), &mut bytes)?;
    crate::drawer::decode_rows(&bytes)
}

/// Run `cmd` through `run` (a command's runner where the store is: the daemon, the pipe's
/// store), or draw it with `renderer` when it is a graph, each DEF's rows asked of `run`
/// ([`FETCH_ROWS`]); the graph's output goes to `image`, before the outcome's text, and its
/// output file is written here.
pub fn run_or_draw(
    renderer: &mut Renderer,
    at_daemon: bool,
    cmd: &str,
    args: &[String],
    image: &mut Vec<u8>,
    run: &mut dyn FnMut(&str, &[String]) -> Outcome,
) -> Outcome {
    if !is_graph(cmd) {
        return run(cmd, args);
    }
    if at_daemon && renderer.remote != Some(false) {
        if let Some(mut d) = draw_at_daemon(cmd, args, run) {
            renderer.remote = Some(true);
            d.save();
            *image = d.stdout;
            return Outcome {
                error: d.error,
                ..Outcome::default()
            };
        }
    }
    renderer.remote.get_or_insert(false);
    let mut d = renderer.draw(cmd, args, &mut |name, cf, start, end, step| {
        rows_from(run(
            FETCH_ROWS,
            &fetch_rows_args(name, cf, start, end, step),
        ))
    });
    d.save();
    *image = d.stdout;
    Outcome {
        error: d.error,
        ..Outcome::default()
    }
}

/// The daemon's command that draws a graph in the daemon (by a drawing process of the
/// connection's: a pipe-mode session's graphs all by one process).
pub const DRAW: &str = "draw";

/// A graph drawn by the daemon that `run` reaches, None where the daemon draws for
/// [`MAX_DRAWERS`] connections already (then it is drawn here). What the graph printed comes
/// back in hex, then the output file's bytes when it has one, which the caller writes here,
/// where its path means what it says.
fn draw_at_daemon(
    cmd: &str,
    args: &[String],
    run: &mut dyn FnMut(&str, &[String]) -> Outcome,
) -> Option<Drawn> {
    let mut a = vec![cmd.to_string()];
    a.extend(Env::here().to_args());
    a.extend(args.iter().cloned());
    let o = run(DRAW, &a);
    if o.error.as_deref() == Some(BUSY) {
        return None;
    }
    let opts = options(args);
    let mut d = Drawn {
        format: opts.value("a").unwrap_or("PNG").to_ascii_lowercase(),
        error: o.error,
        ..Drawn::default()
    };
    let mut lines = o.stdout.split('\n');
    if let Err(e) = crate::unhex(lines.next().unwrap_or(""), &mut d.stdout) {
        d.error.get_or_insert(format!("the daemon's graph: {e}"));
        return Some(d);
    }
    if let (Some(h), Some(path)) = (
        lines.next().filter(|h| !h.is_empty()),
        opts.output().map(|i| &args[i]),
    ) {
        let mut bytes = Vec::new();
        match crate::unhex(h, &mut bytes) {
            Ok(()) => d.file = Some((path.clone(), bytes)),
            Err(e) => {
                d.error.get_or_insert(format!("the daemon's image: {e}"));
            }
        }
    }
    Some(d)
}

/// The daemon's graphs: a drawing process started ahead for the next client that draws
/// (its start, loading librrd and the font libraries, is then not the client's).
#[derive(Default)]
pub struct Spare {
    slot: std::sync::Mutex<Option<Drawer>>,
    /// Connections that have a drawing process of their own now ([`MAX_DRAWERS`] at most).
    live: std::sync::Arc<std::sync::atomic::AtomicUsize>,
}

/// Connections that may each keep a drawing process in the daemon at once; past them, the
/// clients draw themselves (a client that opens many connections does not make the daemon
/// start as many processes).
pub const MAX_DRAWERS: usize = 32;

/// The daemon's answer when [`MAX_DRAWERS`] connections draw already: the client draws.
const BUSY: &str = "draw: busy";

/// One of the daemon's [`MAX_DRAWERS`], given back when its renderer is dropped.
struct Ticket(std::sync::Arc<std::sync::atomic::AtomicUsize>);

impl Drop for Ticket {
    fn drop(&mut self) {
        self.0.fetch_sub(1, std::sync::atomic::Ordering::Relaxed);
    }
}

impl Spare {
    /// Start the spare drawing process (at the daemon's start), in a thread.
    pub fn prepare(self: &std::sync::Arc<Self>) {
        let me = std::sync::Arc::clone(self);
        std::thread::spawn(move || {
            if let Ok(d) = Drawer::start() {
                let mut slot = me.slot.lock().unwrap_or_else(|p| p.into_inner());
                if slot.is_none() {
                    *slot = Some(d);
                }
            }
        });
    }

    /// A renderer for one client, drawing in `env`: the spare drawing process, and another
    /// started ahead at once, in a thread.
    fn renderer(self: &std::sync::Arc<Self>, env: Env) -> Renderer {
        let taken = self.slot.lock().unwrap_or_else(|p| p.into_inner()).take();
        self.live.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let ticket = Ticket(std::sync::Arc::clone(&self.live));
        self.prepare();
        Renderer {
            drawer: taken,
            env: Some(env),
            _ticket: Some(ticket),
            ..Renderer::new()
        }
    }

    /// The daemon's side of [`DRAW`]: `args` are the command, the client's environment and
    /// the graph's arguments; the connection's renderer is made at its first graph. The rows
    /// come from `fetch`; the reply holds what the graph printed, in hex, then the output
    /// file's bytes, in hex, when it has one.
    pub fn serve(
        self: &std::sync::Arc<Self>,
        slot: &mut Option<Renderer>,
        args: &[String],
        fetch: &mut FetchFn<'_>,
    ) -> Result<Drawn, Outcome> {
        let usage = || Outcome::err(format!("usage: {DRAW} graph|graphv KEY=VALUE... -- ARGS"));
        let Some((cmd, rest)) = args.split_first().filter(|(c, _)| is_graph(c)) else {
            return Err(usage());
        };
        let Some((env, gargs)) = Env::from_args(rest) else {
            return Err(usage());
        };
        if slot.is_none() && self.live.load(std::sync::atomic::Ordering::Relaxed) >= MAX_DRAWERS {
            return Err(Outcome::err(BUSY));
        }
        let r = slot.get_or_insert_with(|| self.renderer(env.clone()));
        // A connection draws in its client's latest environment.
        r.env = Some(env);
        Ok(r.draw(cmd, gargs, fetch))
    }
}

/// [`Spare::serve`]'s drawing as the reply's text: what the graph printed in hex, a line,
/// then the output file's bytes in hex and a line when it has one.
pub fn draw_reply(d: Drawn) -> Outcome {
    let mut stdout = String::with_capacity(
        2 * (d.stdout.len() + d.file.as_ref().map_or(0, |(_, b)| b.len())) + 2,
    );
    stdout.push_str(&crate::hex(&d.stdout));
    stdout.push('\n');
    if let Some((_, bytes)) = &d.file {
        stdout.push_str(&crate::hex(bytes));
        stdout.push('\n');
    }
    Outcome {
        stdout,
        error: d.error,
        file: None,
    }
}

/// `hay` with every `from` replaced by `to`.
pub fn replace(hay: &[u8], from: &[u8], to: &[u8]) -> Vec<u8> {
    if from.is_empty() || hay.len() < from.len() {
        return hay.to_vec();
    }
    let mut out = Vec::with_capacity(hay.len());
    let mut i = 0;
    while i < hay.len() {
        if hay[i..].starts_with(from) {
            out.extend_from_slice(to);
            i += from.len();
        } else {
            out.push(hay[i]);
            i += 1;
        }
    }
    out
}

/// Whether `cmd` is drawn here.
pub fn is_graph(cmd: &str) -> bool {
    matches!(cmd, "graph" | "graphv")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_def_past_its_budget_of_values_is_refused_before_any_row_is_read() {
        let args: Vec<String> = [
            "x.rrd",
            "--step",
            "1",
            "DS:v:GAUGE:2:U:U",
            "RRA:MAX:0.5:1:10",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        let c = rrd::create::parse_create(&args, 1_700_000_000).unwrap();
        let r = rrd::Rrd::new(c.schema, c.start);
        let t = 1_700_000_000;
        let few = rows(&r, "x.rrd", "MAX", t, t + 100, 1).unwrap();
        assert!(few.values.len() >= 100);
        let far = t + MAX_VALUES as i64 + 10;
        let e = rows(&r, "x.rrd", "MAX", t, far, 1).unwrap_err();
        assert!(
            e.contains("values of 'x.rrd' in one DEF: at most 8388608"),
            "{e}"
        );
        assert!(rows(&r, "x.rrd", "NOPE", t, t + 100, 1).is_err());
    }

    fn strings(a: &[&str]) -> Vec<String> {
        a.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn def_files_are_found_with_escaped_colons() {
        let (s, e, n) = def_file("DEF:a=x.rrd:ds:AVERAGE").unwrap();
        assert_eq!(
            (&"DEF:a=x.rrd:ds:AVERAGE"[s..e], n.as_str()),
            ("x.rrd", "x.rrd")
        );
        let a = "DEF:v=/r/c\\:d.rrd:ds:MAX:step=60";
        let (s, e, n) = def_file(a).unwrap();
        assert_eq!((&a[s..e], n.as_str()), ("/r/c\\:d.rrd", "/r/c:d.rrd"));
        assert!(def_file("CDEF:a=b,2,*").is_none());
        assert!(def_file("LINE1:a#ff0000").is_none());
        assert_eq!(to_callback(a), "DEF:v=cb///r/c\\:d.rrd:ds:MAX:step=60");
    }

    #[test]
    fn the_output_is_the_first_argument_that_is_no_option_nor_an_options_value() {
        fn out<'a>(a: &[&'a str]) -> Option<&'a str> {
            options(&strings(a)).output().map(|i| a[i])
        }
        assert_eq!(out(&["o.png", "DEF:a=x:v:AVERAGE"]), Some("o.png"));
        assert_eq!(out(&["--start", "-1d", "o.png"]), Some("o.png"));
        assert_eq!(out(&["-s", "-1d", "-jg", "-w400", "o.png"]), Some("o.png"));
        assert_eq!(
            out(&["--title=x", "--title", "DEF:", "o.png"]),
            Some("o.png")
        );
        assert_eq!(out(&["-jgs", "-1d", "-", "x"]), Some("-"));
        assert_eq!(out(&["-s1", "--", "-x.png", "DEF:"]), Some("-x.png"));
        assert_eq!(
            out(&["--lazy", "--border", "2", "--units=si", "o"]),
            Some("o")
        );
        assert_eq!(out(&["--start", "1"]), None);
        let o = options(&strings(&["o", "-a", "SVG", "--imginfo=%s", "-w", "9"]));
        assert_eq!(
            (o.value("a"), o.value("f"), o.value("w")),
            (Some("SVG"), Some("%s"), Some("9"))
        );
    }

    #[test]
    fn the_imginfo_line_names_the_output_file() {
        let f = "<I%%MG SRC=\"/img/%s\" W=%lu H=%lu>";
        assert_eq!(
            imginfo_line("<I%MG SRC=\"/img/memory\" W=481 H=141>", f, "/tmp/a/x.png"),
            "<I%MG SRC=\"/img/x.png\" W=481 H=141>"
        );
        assert_eq!(imginfo_line("other", f, "x.png"), "other");
    }

    #[test]
    fn graphvs_image_key_is_split_off() {
        let out = b"a = 1\nimage = BLOB_SIZE:3\nPNGb = 2\n";
        let (rest, image) = split_image_key(out);
        assert_eq!(
            (rest.as_slice(), image),
            (&b"a = 1\nb = 2\n"[..], &b"PNG"[..])
        );
        assert_eq!(split_image_key(b"a = 1\n").1, b"");
    }

    #[test]
    fn the_clients_environment_goes_with_draw_and_nothing_else() {
        let env = Env(vec![
            ("TZ".into(), "Asia/Tokyo".into()),
            ("LANG".into(), "C".into()),
        ]);
        let mut args = env.to_args();
        args.extend(["-".to_string(), "DEF:a=b:c:AVERAGE".to_string()]);
        let (back, rest) = Env::from_args(&args).unwrap();
        assert_eq!((back, rest), (env, &args[3..]));
        assert!(Env::from_args(&["LD_PRELOAD=x".into(), "--".into()]).is_none());
        assert!(Env::from_args(&["-".into()]).is_none());
    }

    #[test]
    fn fetch_rows_arguments_read_back() {
        let a = fetch_rows_args("a b.rrd", "AVERAGE", -5, 1700000000, 300);
        assert_eq!(
            parse_fetch_rows(&a),
            Some(("a b.rrd", "AVERAGE", -5, 1700000000, 300))
        );
        assert_eq!(parse_fetch_rows(&a[1..]), None);
    }

    #[test]
    fn what_cannot_be_drawn_is_named() {
        let a = |s: &str| -> Vec<String> { s.split(' ').map(String::from).collect() };
        assert_eq!(
            refused(&a("--start -1d DEF:v=x.rrd:v:AVERAGE LINE1:v#f00")),
            None
        );
        assert!(refused(&a("DEF:v=x.rrd:v:AVERAGE:rrd=/etc/secret.rrd")).is_some());
        assert!(refused(&a("DEF:v=x.rrd:v:AVERAGE:daemon=unix:/x")).is_some());
        assert!(refused(&a("--width 32000")).is_some());
        assert!(refused(&a("-w 5000 -h 5000")).is_some());
        assert!(refused(&a("--width=4000 --height=4000")).is_none());
        assert!(refused(&a("-w10001")).is_some());
        assert!(refused(&["a\0b".to_string()]).is_some());
        assert!(refused(&a("--daemon unix:/x")).is_some());
    }

    #[test]
    fn a_time_zone_that_names_a_file_is_refused() {
        let e = |k: &str, v: &str| vec![(k.to_string(), v.to_string())];
        for ok in ["UTC", "Europe/Paris", "CET-1CEST", ":America/New_York"] {
            assert_eq!(env_refused(&e("TZ", ok)), None, "{ok}");
        }
        for bad in [
            "/dev/stdin",
            ":/etc/shadow",
            "../../etc/x",
            "Europe/../../x",
        ] {
            assert!(env_refused(&e("TZ", bad)).is_some(), "{bad}");
        }
        assert!(env_refused(&e("LANG", "C\0")).is_some());
    }
}
