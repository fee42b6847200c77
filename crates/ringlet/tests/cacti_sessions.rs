//! Random Cacti-like sessions through rrdtool's pipe mode, compared byte for byte.
//!
//! Each case is generated from a seed: a few RRDs in Cacti's rra directory (some in
//! per-device subdirectories), created as Cacti does (`create PATH --start 0 --step N DS..
//! RRA..`), polled with `update PATH --skip-past-updates --template a:b T:v:v` (repeated and
//! past times among them, Boost's lines of many `T:v`, malformed values, unknown names and
//! files), tuned (`--maximum`, `-i`, `--heartbeat`, `--data-source-type`,
//! `--data-source-rename`, bad ones too), resized, and read the ways Cacti reads (`info`,
//! `last`, `fetch`, `xport`, `graph` with PRINT/GPRINT and images, `graphv`, `dump`,
//! `restore -f` of a dump), in lines ending in CRLF or LF with Cacti's leading space. The
//! session runs in parts; between them the rra directory is changed as Cacti's PHP changes
//! it (a file unlinked and created again, a file renamed).
//!
//! The same session goes to `rrdtool -` on files, to `ringlet --store S -` alone, and to
//! `ringlet -` beside `ringlet serve -b RRA`; every byte of stdout must be the same (the
//! `OK u:.. s:.. r:..` timings and the rra directory's own path masked, and the `info` keys
//! that describe rrdtool's file layout), then every RRD's `dump`. Cases that rename a file
//! leave out the store alone (it has no directory to rename in).
//!
//! Environment: `CACTI_CASES` (default 40 with CI=true or in release builds, 12 otherwise),
//! `CACTI_SEED` (first seed, default 1), `CACTI_KEEP=1` keeps a failing case's directory and
//! prints its path. rrdtool must be on PATH (required under CI=true).

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};
use testkit::SplitMix as Rng;

const BIN: &str = env!("CARGO_BIN_EXE_ringlet");

fn in_ci() -> bool {
    std::env::var("CI").is_ok_and(|v| v == "true" || v == "1")
}

fn env_u64(name: &str) -> Option<u64> {
    std::env::var(name).ok().and_then(|v| v.trim().parse().ok())
}

fn have_rrdtool() -> bool {
    let ok = Command::new("rrdtool")
        .arg("--version")
        .stdout(Stdio::null())
        .status()
        .is_ok();
    assert!(ok || !in_ci(), "rrdtool is not on PATH: run scripts/setup");
    ok
}

// --- the generator ---------------------------------------------------------------------

const TYPES: [&str; 4] = ["GAUGE", "COUNTER", "DERIVE", "ABSOLUTE"];

struct Ds {
    name: String,
    typ: &'static str,
    counter: u64,
}

struct Rrd {
    /// Path under the rra directory.
    rel: String,
    step: u64,
    ds: Vec<Ds>,
    cfs: Vec<&'static str>,
    last: u64,
}

/// What the test does to the rra directory between two parts of a session.
enum Action {
    Unlink(String),
    Rename(String, String),
    /// `rrdtool dump` of this RRD (on files) into `xml/<n>.xml`, for a later `restore -f`.
    Dump(String, usize),
}

struct Session {
    /// Directories made before the session starts (Cacti's per-device directories).
    dirs: Vec<String>,
    parts: Vec<String>,
    /// Actions done after part i (same length as parts).
    between: Vec<Vec<Action>>,
    renames: bool,
}

struct Gen {
    r: Rng,
    day0: u64,
    out: String,
    crlf: bool,
    rrds: Vec<Rrd>,
    next_name: usize,
    xml: usize,
}

impl Gen {
    fn line(&mut self, l: &str) {
        // Cacti's poller writes " <command>\r\n"; its one-shot calls "<command>\r\nquit\r\n".
        if self.r.percent(30) {
            self.out.push(' ');
        }
        self.out.push_str(l);
        self.out.push_str(if self.crlf { "\r\n" } else { "\n" });
    }

    fn path(&self, i: usize) -> String {
        format!("{{RRA}}/{}", self.rrds[i].rel)
    }

    fn new_rrd(&mut self, dirs: &[String]) -> Rrd {
        self.next_name += 1;
        let rel = if !dirs.is_empty() && self.r.coin() {
            format!("{}/{}.rrd", self.r.pick(dirs), self.next_name)
        } else {
            format!("host_{}_traffic_{}.rrd", self.r.below(9), self.next_name)
        };
        let step = *self.r.pick(&[60, 300, 300]);
        let n = self.r.range(1, 4) as usize;
        let ds = (0..n)
            .map(|k| Ds {
                name: format!("{}{k}", self.r.pick(&["traffic_in", "load_", "mem", "ds"])),
                typ: TYPES[self.r.index(TYPES.len())],
                counter: self.r.below(1 << 40),
            })
            .collect();
        let mut cfs = vec!["AVERAGE"];
        for cf in ["MIN", "MAX", "LAST"] {
            if self.r.percent(50) {
                cfs.push(cf);
            }
        }
        Rrd {
            rel,
            step,
            ds,
            cfs,
            last: self.day0,
        }
    }

    fn create(&mut self, i: usize) {
        let d = &self.rrds[i];
        let mut l = format!("create {} --start 0 --step {}", self.path(i), d.step);
        for ds in &d.ds {
            let min = if ds.typ == "GAUGE" { "U" } else { "0" };
            let max = ["U", "100", "1000000000"][(ds.counter % 3) as usize];
            write!(l, " DS:{}:{}:{}:{min}:{max}", ds.name, ds.typ, 2 * d.step).unwrap();
        }
        // Cacti's archives, made short so that they wrap within a session.
        let rows = self.r.range(5, 40);
        for cf in &d.cfs {
            for (steps, rows) in [(1, rows), (6, rows / 2 + 3), (24, 4)] {
                write!(l, " RRA:{cf}:0.5:{steps}:{rows}").unwrap();
            }
        }
        self.line(&l);
        self.rrds[i].last = self.day0;
    }

    fn value(&mut self, i: usize, k: usize) -> String {
        let ds = &mut self.rrds[i].ds[k];
        if self.r.percent(4) {
            return "U".into();
        }
        match ds.typ {
            "GAUGE" => match self.r.below(5) {
                0 => format!("{}", self.r.below(1000)),
                1 => format!("-{}.{}", self.r.below(100), self.r.below(100)),
                2 => format!("{}e{}", self.r.below(10), self.r.below(4)),
                _ => format!("{:.2}", self.r.unit() * 100.0),
            },
            "COUNTER" => {
                // Now and then a wrap (or a reset) of a 32-bit counter.
                ds.counter = if self.r.percent(3) {
                    self.r.below(1000)
                } else {
                    (ds.counter + self.r.below(3_000_000)) % (1 << 32)
                };
                ds.counter.to_string()
            }
            "DERIVE" => {
                ds.counter = ds.counter.wrapping_add(self.r.below(10_000)) % (1 << 50);
                if self.r.percent(5) {
                    ds.counter /= 2;
                }
                ds.counter.to_string()
            }
            _ => self.r.below(5000).to_string(),
        }
    }

    /// A poll's values for RRD i at time t: `T:v:v` in the template's order.
    fn sample(&mut self, i: usize, t: u64, order: &[usize]) -> String {
        let mut s = t.to_string();
        for &k in order {
            let v = self.value(i, k);
            s.push(':');
            s.push_str(&v);
        }
        s
    }

    fn update(&mut self, i: usize, t: u64, boost: bool) {
        let n = self.rrds[i].ds.len();
        let mut order: Vec<usize> = (0..n).collect();
        if self.r.percent(20) {
            self.r.shuffle(&mut order);
            order.truncate(self.r.range(1, n as u64) as usize);
        }
        let mut names: Vec<String> = order
            .iter()
            .map(|&k| self.rrds[i].ds[k].name.clone())
            .collect();
        let mut samples = Vec::new();
        let step = self.rrds[i].step;
        if boost {
            let mut t = self.rrds[i].last + self.r.range(1, step);
            for _ in 0..self.r.range(2, 20) {
                samples.push(self.sample(i, t, &order));
                // Boost keeps the order it polled in; now and then a time repeats.
                if !self.r.percent(5) {
                    t += step + self.r.below(step / 3) - step / 6;
                }
            }
            self.rrds[i].last = t;
        } else {
            samples.push(self.sample(i, t, &order));
        }
        let mut skip = "--skip-past-updates ";
        match self.r.below(40) {
            0 => names.push("nosuchds".into()),
            1 => samples.push(format!("{}:abc", t + step)),
            2 => samples[0].push_str(":7"),
            3 => skip = "",
            _ => {}
        }
        let l = format!(
            "update {} {skip}--template {} {}",
            self.path(i),
            names.join(":"),
            samples.join(" ")
        );
        self.line(&l);
    }

    fn tune(&mut self, i: usize) {
        let n = self.rrds[i].ds.len();
        let k = self.r.index(n);
        let name = if self.r.percent(8) {
            "nosuchds".to_string()
        } else {
            self.rrds[i].ds[k].name.clone()
        };
        let num = |r: &mut Rng| match r.below(8) {
            0 => "U".to_string(),
            1 => "12abc".to_string(),
            2 => format!("-{}", r.below(100)),
            3 => format!("{}.5", r.below(1000)),
            _ => format!("{}", r.range(1, 100000)),
        };
        let opt = match self.r.below(6) {
            0 => format!(
                "{} {name}:{}",
                self.r.pick(&["--maximum", "-a"]),
                num(&mut self.r)
            ),
            1 => format!(
                "{} {name}:{}",
                self.r.pick(&["--minimum", "-i"]),
                num(&mut self.r)
            ),
            2 => {
                let h = match self.r.below(6) {
                    0 => "0".to_string(),
                    1 => "x5".to_string(),
                    _ => self.r.range(1, 4000).to_string(),
                };
                format!("{} {name}:{h}", self.r.pick(&["--heartbeat", "-h"]))
            }
            3 => {
                let t = if self.r.percent(10) {
                    "FOO"
                } else {
                    *self.r.pick(&TYPES)
                };
                if self.rrds[i].ds[k].name == name && t != "FOO" {
                    self.rrds[i].ds[k].typ = t;
                }
                format!("{} {name}:{t}", self.r.pick(&["--data-source-type", "-d"]))
            }
            4 => {
                self.next_name += 1;
                let new = format!("renamed{}", self.next_name);
                if self.rrds[i].ds[k].name == name {
                    self.rrds[i].ds[k].name = new.clone();
                }
                format!(
                    "{} {name}:{new}",
                    self.r.pick(&["--data-source-rename", "-r"])
                )
            }
            _ => format!("--maximum {name}:{}", num(&mut self.r)),
        };
        let extra = if self.r.percent(20) {
            format!(" -h {}:{}", self.rrds[i].ds[0].name, self.r.range(60, 2000))
        } else {
            String::new()
        };
        let l = format!("tune {} {opt}{extra}", self.path(i));
        self.line(&l);
    }

    fn span(&mut self, i: usize) -> (u64, u64) {
        let last = self.rrds[i].last;
        let back = self.r.range(1, 40) * self.rrds[i].step;
        (last.saturating_sub(back), last + self.r.below(3) * 300)
    }

    fn read(&mut self, i: usize) {
        let p = self.path(i);
        let (s, e) = self.span(i);
        let cf = *self.r.pick(&self.rrds[i].cfs);
        let k = self.r.index(self.rrds[i].ds.len());
        let ds = self.rrds[i].ds[k].name.clone();
        let l = match self.r.below(16) {
            0 => format!("info {p}"),
            1 => format!("last {p}"),
            2 => format!("fetch {p} {cf} -s {s} -e {e}"),
            3 => format!("fetch {p} {cf} -r {} -s {s} -e {e}", 6 * self.rrds[i].step),
            4 => format!(
                "xport --start {s} --end {e} --maxrows 100 DEF:a=\"{p}\":{ds}:{cf} \
                 CDEF:b=a,8,* XPORT:a:\"in\" XPORT:b:\"bits\""
            ),
            // DSStats: PRINT only.
            5 => format!(
                "graph - --start={s} --end={e} DEF:a=\"{p}\":{ds}:{cf} VDEF:v=a,AVERAGE \
                 VDEF:m=a,MAXIMUM PRINT:v:%lf PRINT:m:%lf"
            ),
            // A graph page: Cacti's options and legend.
            6 => format!(
                "graph - --imgformat=PNG --start='{s}' --end='{e}' --title='Traffic {k}' \
                 --vertical-label='bits per second' --slope-mode --base=1000 --height=80 \
                 --width=300 --rigid --alt-autoscale-max --lower-limit='0' \
                 DEF:a='{p}':'{ds}':{cf} CDEF:c=a,8,* AREA:c#00CF00FF:\"Inbound\" \
                 GPRINT:c:LAST:\" Current\\:%8.2lf %s\" GPRINT:c:AVERAGE:\"Average\\:%8.2lf %s\" \
                 GPRINT:c:MAX:\"Maximum\\:%8.2lf %s\\n\""
            ),
            7 => format!(
                "graphv - --imgformat=SVG --start={s} --end={e} --height=60 --width=200 \
                 DEF:a={p}:{ds}:{cf} LINE1:a#FF0000:\"x\" PRINT:a:LAST:%6.2lf"
            ),
            // Less usual reads, and graphs to files (the CLI writes the file).
            9 => format!("first {p} --rraindex {}", self.r.below(3)),
            10 => format!("lastupdate {p}"),
            11 => format!("xport --json --start {s} --end {e} DEF:a={p}:{ds}:{cf} XPORT:a:\"v\""),
            12 => format!("fetch {p} {cf} -a -s {s} -e {e}"),
            13 => format!(
                "graph {{OUT}}/g{}.png --start {s} --end {e} --width 200 --height 60 \
                 DEF:a={p}:{ds}:{cf} AREA:a#00ff00 PRINT:a:{cf}:%6.2lf",
                self.r.below(3)
            ),
            14 => format!("dump --no-header {p}"),
            _ => format!("dump {p}"),
        };
        self.line(&l);
    }
}

fn generate(seed: u64, day0: u64) -> Session {
    let mut g = Gen {
        r: Rng::new(seed ^ 0x9e37_79b9_7f4a_7c15),
        day0,
        out: String::new(),
        crlf: false,
        rrds: Vec::new(),
        next_name: 0,
        xml: 0,
    };
    g.crlf = g.r.coin();
    let renames = seed.is_multiple_of(4);
    let dirs: Vec<String> = (0..g.r.below(3)).map(|d| format!("{}", d + 1)).collect();
    let mut parts = Vec::new();
    let mut between = Vec::new();
    let n = g.r.range(2, 6) as usize;
    for _ in 0..n {
        let d = g.new_rrd(&dirs);
        g.rrds.push(d);
    }
    for i in 0..n {
        g.create(i);
    }
    let nparts = g.r.range(2, 4);
    let mut t = day0;
    for part in 0..nparts {
        if part > 0 && g.r.percent(60) {
            // A restore of the dump taken between the parts, onto a new file and over one.
            let x = g.xml - 1;
            let fresh = format!("{{RRA}}/restored_{x}.rrd");
            g.line(&format!("restore -f {{XML}}/{x}.xml {fresh}"));
            g.line(&format!("restore {{XML}}/{x}.xml {fresh}"));
            g.line(&format!("info {fresh}"));
        }
        for _ in 0..g.r.range(5, 25) {
            t += 300;
            for i in 0..g.rrds.len() {
                let step = g.rrds[i].step;
                let mut at = t + g.r.below(step / 2);
                if g.r.percent(8) {
                    at = g.rrds[i].last; // a repeated time
                } else if g.r.percent(4) {
                    at = g.rrds[i].last.saturating_sub(step); // a past one
                }
                if g.r.percent(4) {
                    g.update(i, at, true);
                } else {
                    g.update(i, at, false);
                    g.rrds[i].last = g.rrds[i].last.max(at);
                }
                t = t.max(g.rrds[i].last);
            }
            let i = g.r.index(g.rrds.len());
            match g.r.below(20) {
                0 | 1 => g.tune(i),
                2 => {
                    let rows = ["GROW", "SHRINK"];
                    let l = format!(
                        "resize {} {} {} {}",
                        g.path(i),
                        g.r.below(4),
                        g.r.pick(&rows),
                        g.r.range(0, 5)
                    );
                    g.line(&l);
                    g.line("info resize.rrd");
                    g.line("dump resize.rrd");
                }
                3 => g.line("update {RRA}/nosuchfile.rrd --skip-past-updates --template a 1:2"),
                4 => g.line("graph - DEF:a={RRA}/nosuchfile.rrd:x:AVERAGE LINE1:a#ff0000"),
                5..=11 => g.read(i),
                _ => {}
            }
        }
        for i in 0..g.rrds.len() {
            if g.r.percent(30) {
                g.read(i);
            }
        }
        g.line("quit");
        parts.push(std::mem::take(&mut g.out));
        let mut acts = vec![Action::Dump(g.rrds[0].rel.clone(), g.xml)];
        g.xml += 1;
        let i = g.r.index(g.rrds.len());
        if g.r.percent(40) {
            // Cacti deletes a data source's file; a new one takes the name later.
            acts.push(Action::Unlink(g.rrds[i].rel.clone()));
            let fresh = g.new_rrd(&dirs);
            let rel = std::mem::replace(&mut g.rrds[i], fresh).rel;
            g.rrds[i].rel = rel;
            g.create(i);
        } else if renames && g.r.percent(70) {
            g.next_name += 1;
            let to = format!("moved_{}.rrd", g.next_name);
            acts.push(Action::Rename(g.rrds[i].rel.clone(), to.clone()));
            g.rrds[i].rel = to;
        }
        between.push(acts);
    }
    Session {
        dirs,
        parts,
        between,
        renames,
    }
}

// --- running ---------------------------------------------------------------------------

struct Daemon(Child);
impl Drop for Daemon {
    fn drop(&mut self) {
        // SAFETY: kill(2) on the pid of our own child.
        unsafe {
            libc::kill(self.0.id() as libc::pid_t, libc::SIGTERM);
        }
        let _ = self.0.wait();
    }
}

#[derive(Clone, Copy, PartialEq)]
enum Way {
    Files,
    Alone,
    Beside,
}

struct Place {
    way: Way,
    /// The rra directory as the session names it.
    rra: PathBuf,
    store: PathBuf,
}

fn pipe(place: &Place, script: &str, xml: &Path) -> Vec<u8> {
    let out = xml.with_file_name(match place.way {
        Way::Files => "out-files",
        Way::Alone => "out-alone",
        Way::Beside => "out-beside",
    });
    let _ = std::fs::create_dir_all(&out);
    let script = script
        .replace("{RRA}", &place.rra.display().to_string())
        .replace("{XML}", &xml.display().to_string())
        .replace("{OUT}", &out.display().to_string());
    let mut c = match place.way {
        Way::Files => Command::new("rrdtool"),
        _ => {
            let mut c = Command::new(BIN);
            c.arg("--store").arg(&place.store);
            c
        }
    };
    c.arg("-")
        .current_dir(&place.rra)
        .env("TZ", "UTC")
        .env("LC_ALL", "C")
        .env_remove("RRDCACHED_ADDRESS")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = c.spawn().expect("spawn");
    let mut stdin = child.stdin.take().unwrap();
    let feeder = std::thread::spawn(move || {
        use std::io::Write;
        let _ = stdin.write_all(script.as_bytes());
    });
    let out = child.wait_with_output().expect("wait");
    feeder.join().unwrap();
    out.stdout
}

/// The reply stream with the rra directory's path, the timings and `info`'s layout keys masked.
fn masked(out: &[u8], rra: &Path) -> Vec<u8> {
    let out = cli::graph::replace(out, rra.as_os_str().as_encoded_bytes(), b"{RRA}");
    let mut kept = Vec::with_capacity(out.len());
    for line in out.split_inclusive(|&b| b == b'\n') {
        let text = String::from_utf8_lossy(line);
        let layout = ["filename = ", "rrd_version = ", "header_size = "]
            .iter()
            .any(|p| text.starts_with(p))
            || text
                .strip_prefix("rra[")
                .and_then(|r| r.split_once("].cur_row = "))
                .is_some_and(|(n, _)| n.bytes().all(|b| b.is_ascii_digit()));
        if layout {
            continue;
        }
        // The timing may follow an image on its line.
        match line.windows(5).position(|w| w == b"OK u:") {
            Some(at) => {
                kept.extend_from_slice(&line[..at + 2]);
                kept.push(b'\n');
            }
            None => kept.extend_from_slice(line),
        }
    }
    kept
}

fn first_difference(a: &[u8], b: &[u8]) -> String {
    let at = a
        .iter()
        .zip(b)
        .position(|(x, y)| x != y)
        .unwrap_or(a.len().min(b.len()));
    let line_start = |s: &[u8]| {
        s[..at.min(s.len())]
            .iter()
            .rposition(|&c| c == b'\n')
            .map_or(0, |p| p + 1)
    };
    let show = |s: &[u8]| {
        let from = line_start(s).saturating_sub(300);
        String::from_utf8_lossy(&s[from..(at + 200).min(s.len())]).into_owned()
    };
    format!(
        "at byte {at}\n--- rrdtool:\n{}\n--- ringlet:\n{}",
        show(a),
        show(b)
    )
}

fn act(place: &Place, a: &Action, xml: &Path) {
    let p = |rel: &str| place.rra.join(rel);
    match a {
        Action::Unlink(rel) => {
            if place.way != Way::Alone {
                std::fs::remove_file(p(rel)).unwrap_or_else(|e| panic!("unlink {rel}: {e}"));
            }
        }
        Action::Rename(from, to) => {
            assert!(place.way != Way::Alone);
            std::fs::rename(p(from), p(to)).unwrap_or_else(|e| panic!("rename {from}: {e}"));
        }
        Action::Dump(rel, n) => {
            if place.way == Way::Files {
                let out = Command::new("rrdtool")
                    .arg("dump")
                    .arg(p(rel))
                    .output()
                    .unwrap();
                std::fs::write(xml.join(format!("{n}.xml")), out.stdout).unwrap();
            }
        }
    }
}

/// Every RRD file under `dir`, relative to it.
fn rrd_files(dir: &Path, rel: &str, out: &mut Vec<String>) {
    let mut names: Vec<_> = std::fs::read_dir(dir).unwrap().flatten().collect();
    names.sort_by_key(|e| e.file_name());
    for e in names {
        let name = format!("{rel}{}", e.file_name().to_string_lossy());
        if e.file_type().unwrap().is_dir() {
            rrd_files(&e.path(), &format!("{name}/"), out);
        } else if name.ends_with(".rrd") {
            out.push(name);
        }
    }
}

fn dump(place: &Place, rel: &str) -> Vec<u8> {
    let mut c = match place.way {
        Way::Files => Command::new("rrdtool"),
        _ => {
            let mut c = Command::new(BIN);
            c.arg("--store").arg(&place.store);
            c
        }
    };
    let out = c
        .arg("dump")
        .arg(match place.way {
            // `resize` writes the relative name resize.rrd: alone, the store's series of
            // that name (there is no directory it would be in).
            Way::Alone if rel == "resize.rrd" => PathBuf::from(rel),
            _ => place.rra.join(rel),
        })
        .current_dir(&place.rra)
        .env("TZ", "UTC")
        .env_remove("RRDCACHED_ADDRESS")
        .output()
        .unwrap();
    let mut all = out.stdout;
    all.extend_from_slice(&out.stderr);
    masked(&all, &place.rra)
}

/// Run case `seed`; Err describes the first difference.
fn run_case(seed: u64, day0: u64, root: &Path) -> Result<(), String> {
    let s = generate(seed, day0);
    let xml = root.join("xml");
    std::fs::create_dir_all(&xml).unwrap();
    let mk = |way, rra: &str, store: &str| {
        let p = Place {
            way,
            rra: root.join(rra),
            store: root.join(store),
        };
        std::fs::create_dir_all(&p.rra).unwrap();
        for d in &s.dirs {
            std::fs::create_dir_all(p.rra.join(d)).unwrap();
        }
        p
    };
    let files = mk(Way::Files, "files", "unused");
    let alone = mk(Way::Alone, "alone/rra", "alone/store");
    let beside = mk(Way::Beside, "beside/base", "beside/store");
    let sock = root.join("beside/s.sock");
    let log = std::fs::File::create(root.join("beside/serve.log")).unwrap();
    let _daemon = Daemon(
        Command::new(BIN)
            .args(["serve", "-g", "-w", "3600", "-l"])
            .arg(format!("unix:{}", sock.display()))
            .arg("-b")
            .arg(&beside.rra)
            .arg("--store")
            .arg(&beside.store)
            .env("TZ", "UTC")
            .stdin(Stdio::null())
            .stdout(log.try_clone().unwrap())
            .stderr(log)
            .spawn()
            .expect("ringlet serve"),
    );
    let t0 = Instant::now();
    while std::os::unix::net::UnixStream::connect(&sock).is_err() {
        assert!(
            t0.elapsed() < Duration::from_secs(20),
            "daemon did not start"
        );
        std::thread::sleep(Duration::from_millis(10));
    }
    let mut places = vec![&files, &beside];
    if !s.renames {
        places.insert(1, &alone);
    }
    for (n, part) in s.parts.iter().enumerate() {
        let want = masked(&pipe(&files, part, &xml), &files.rra);
        for p in &places[1..] {
            let got = masked(&pipe(p, part, &xml), &p.rra);
            if got != want {
                let way = if p.way == Way::Alone {
                    "alone"
                } else {
                    "beside"
                };
                return Err(format!(
                    "seed {seed}, part {n}, {way}: {}",
                    first_difference(&want, &got)
                ));
            }
        }
        // The images drawn to files: the same bytes.
        let outs = |way: &str| root.join(format!("out-{way}"));
        if let Ok(rd) = std::fs::read_dir(outs("files")) {
            for f in rd.flatten() {
                let want = std::fs::read(f.path()).unwrap_or_default();
                for p in &places[1..] {
                    let way = if p.way == Way::Alone {
                        "alone"
                    } else {
                        "beside"
                    };
                    let got = std::fs::read(outs(way).join(f.file_name())).unwrap_or_default();
                    if got != want {
                        return Err(format!(
                            "seed {seed}, part {n}, {way}: {:?} differs",
                            f.file_name()
                        ));
                    }
                }
            }
        }
        for a in &s.between[n] {
            for p in &places {
                act(p, a, &xml);
            }
        }
    }
    let mut names = Vec::new();
    rrd_files(&files.rra, "", &mut names);
    for rel in names {
        let want = dump(&files, &rel);
        for p in &places[1..] {
            let got = dump(p, &rel);
            if got != want {
                return Err(format!(
                    "seed {seed}, dump of {rel}: {}",
                    first_difference(&want, &got)
                ));
            }
        }
    }
    Ok(())
}

#[test]
fn random_cacti_sessions_match_rrdtool_alone_and_beside_the_daemon() {
    if !have_rrdtool() {
        eprintln!("rrdtool not found: skipped");
        return;
    }
    let release = !cfg!(debug_assertions);
    let n = env_u64("CACTI_CASES").unwrap_or(if in_ci() || release { 40 } else { 12 });
    let first = env_u64("CACTI_SEED").unwrap_or(1);
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs();
    // `--start 0` is today's midnight (TZ=UTC): not across a midnight.
    if now % 86400 > 86400 - 300 {
        std::thread::sleep(Duration::from_secs(86400 - now % 86400 + 1));
    }
    let day0 = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs()
        / 86400
        * 86400;
    let mut failures = Vec::new();
    for seed in first..first + n {
        let root =
            std::env::temp_dir().join(format!("ringlet-cacti-{}-{seed}", std::process::id()));
        let _ = std::fs::remove_dir_all(&root);
        let r = run_case(seed, day0, &root);
        match &r {
            Err(e) if std::env::var("CACTI_KEEP").is_ok() => {
                eprintln!("kept {}: {e}", root.display());
            }
            _ => {
                let _ = std::fs::remove_dir_all(&root);
            }
        }
        if let Err(e) = r {
            failures.push(e);
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {n} sessions differ; the first (CACTI_SEED=<seed> CACTI_CASES=1 CACTI_KEEP=1 \
         to keep it):\n{}",
        failures.len(),
        failures[0]
    );
}

/// The generator reaches what Cacti sends: every command and option, Boost's lines, file
/// changes between the parts, both line ends.
#[test]
fn the_generator_reaches_every_command_cacti_sends() {
    let day0 = 1_800_000_000 / 86400 * 86400;
    let sessions: Vec<Session> = (1..=40).map(|s| generate(s, day0)).collect();
    let all: String = sessions
        .iter()
        .flat_map(|s| s.parts.iter().cloned())
        .collect();
    for w in [
        "create {RRA}/",
        " --start 0 --step ",
        "--skip-past-updates --template ",
        "tune ",
        "--data-source-rename ",
        "--data-source-type ",
        "--heartbeat ",
        "-i ",
        "resize ",
        "info resize.rrd",
        "info ",
        "last ",
        "fetch ",
        "xport ",
        "graph - --imgformat=PNG",
        "graphv - --imgformat=SVG",
        "graph {OUT}/g",
        "xport --json",
        "lastupdate ",
        "first ",
        "dump --no-header",
        "PRINT:v:%lf",
        "dump ",
        "restore -f ",
        "nosuchfile.rrd",
        ":abc",
        "\r\n",
        "\n ",
    ] {
        assert!(all.contains(w), "no session has {w:?}");
    }
    let boost = all.lines().any(|l| {
        l.trim_start().starts_with("update ")
            && l.split(' ').filter(|w| w.contains(':')).count() > 2
    });
    assert!(boost, "no Boost line");
    let acts = sessions.iter().flat_map(|s| s.between.iter().flatten());
    let (mut unlinks, mut renames) = (0, 0);
    for a in acts {
        match a {
            Action::Unlink(_) => unlinks += 1,
            Action::Rename(..) => renames += 1,
            Action::Dump(..) => {}
        }
    }
    assert!(
        unlinks > 0 && renames > 0,
        "{unlinks} unlinks, {renames} renames"
    );
}
