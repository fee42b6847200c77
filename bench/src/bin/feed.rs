//! feed: replays the seed write-load workloads against one peer, over the protocol its real
//! clients use.
//!
//! Workloads (`--workload`): `emoncms` (25 series at 60 s + 20 at 10 s), `collectd` (718 at
//! 10 s), `ganglia` (26,000 at 10 s), `cacti` (`--cacti-rrds` RRDs, default 1,000, of two COUNTER
//! DS at 300 s), `million` (1,000,000 collectd-like series at 10 s: one GAUGE, archives 1 min x
//! 1 day, 10 min x 30 days, 1 h x 1 year; issue 19's scale load). RRD schemas are the ones
//! the real client creates (see [`Schema`]); values come from `ringlet_bench::Series`, one
//! seeded generator per value column.
//!
//! Protocols (`--proto`): `rrdcached` (CREATE/BATCH/UPDATE/FLUSHALL, for rrdcached and
//! `ringlet serve`), `pipe` (one long-running `rrdtool -`, one `update` line per sample),
//! `graphite` (plaintext), `promwrite` (Prometheus remote-write 1.0: hand-encoded protobuf,
//! literal-only snappy) and `influx` (InfluxDB 1.x line protocol over HTTP `/write`).
//!
//! `--phase setup` creates the series (RRD peers) or sends one warm-up step at `--start`
//! (index-based peers, which create series on first sight); `--phase run` sends the measured
//! load: `--realtime` sleeps to the wall clock and sends every series due at a step boundary at
//! once, as a real client does; `--accelerated` runs virtual time from `--start` as fast as
//! possible and, over the rrdcached protocol, sends one BATCH per commit window followed by
//! FLUSHALL (waiting until rrdcached's queue is empty). Prints one `RESULT key=value ...` line.

use ringlet_bench::{parse_duration, Kind, Rng, Series};
use std::fmt::Write as _;
use std::io::{self, BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::os::unix::net::UnixStream;
use std::process::{Child, ChildStdin, Command, ExitCode, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

const USAGE: &str = "\
usage: feed --workload emoncms|collectd|ganglia|cacti|munin|million|llm --proto P --target ADDR
            [options]

  munin: 4,000 series at 300 s, one DERIVE each (Munin's DS `42` and archives), counters
  growing by increments uniform in 0..50,000 (issue 15's load)

  llm: --llm-devices devices (default 2,000) of Cacti 1.2's Local Linux Machine: 5 RRDs
  each (load: 3 GAUGE DS; mem_buffers, mem_swap, proc, users: 1 each) at 300 s, Cacti's
  5-minute profile (AVERAGE/MIN/MAX/LAST of 1:600, 6:700, 24:775, 288:797)

  --proto rrdcached|pipe|cacti|graphite|promwrite|influx
  --target ADDR         rrdcached: unix:/path or host:port; pipe, cacti: the rrdtool binary
                        (run as `BIN -` in --dir; cacti: Cacti's poller lines, `update F
                        --skip-past-updates --template a:b T:v:v`); graphite: host:port;
                        promwrite, influx: host:port of the HTTP listener
  --boost SECS          cacti: hold the values and write each RRD's in one line at every
                        SECS boundary (Cacti's Boost; 1h is its usual interval)
  --flush-sock ADDR     accelerated pipe/cacti: FLUSHALL to this daemon at every --window
                        boundary (`ringlet -` beside `ringlet serve`: its commit window)
  --phase setup|run     setup: create the series (RRD peers: CREATE / rrdtool create) or
                        send one warm-up step at --start (others); run: the load (default)
  --realtime            run: sleep to the wall clock, one send per step boundary (default)
  --accelerated         run: virtual time from --start, as fast as possible
  --duration D          run: length (90, 10m, 6h; default 10m)
  --start EPOCH         setup: RRD start / warm-up time; accelerated run: first time
                        (default: now, rounded down to the step); real-time run: each
                        series' values continue from where an accelerated run from
                        EPOCH (a warm-up) leaves them at the first step
  --window SECS         accelerated rrdcached: FLUSHALL every SECS of virtual time (300)
                        and at the end
  --scale F             keep only this fraction of the series (default 1)
  --cacti-rrds N        cacti: number of RRDs (default 1000; 2 series each)
  --cacti-values rate|walk  cacti: octet counters growing by a noisy rate (default; about
                        2.1 bytes of information a value) or by increments uniform in
                        0..50,000 (issue 15's load, 1.95 bytes, as munin's)
  --dir DIR             pipe: working directory of `rrdtool -` (the RRD files)
  --seed N              value generator seed (default 1)
  --names synth         RRD names as bench/src/bin/synth.rs makes them
                        (cluster/host<i/20>/metric<i>.rrd), to load a synthesized store
  --db NAME             influx: database (default bench)
  --syncfs PATH         accelerated: sync the filesystem of PATH every --sync-every seconds
                        of virtual time, once the peer has taken what was sent (emulates the
                        kernel's periodic writeback at the accelerated pace)
  --sync-every SECS     default: vm.dirty_expire_centisecs / 100 (30 s by default)";

/// The kernel's dirty-page expiry in seconds (how long written data may stay in memory).
fn dirty_expire_secs() -> i64 {
    std::fs::read_to_string("/proc/sys/vm/dirty_expire_centisecs")
        .ok()
        .and_then(|s| s.trim().parse::<i64>().ok())
        .map_or(30, |c| (c / 100).max(1))
}

/// The RRD layout a client creates for a series.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Schema {
    /// collectd's rrdtool plugin defaults (RRARows 1200, RRATimespan 3600 86400 604800
    /// 2678400 31622400, XFF 0.1, AVERAGE/MIN/MAX), heartbeat 2 x step; also used for the
    /// emoncms workload, which has no RRD client of its own.
    Collectd,
    /// gmetad's default RRAs: AVERAGE 1:5856, 4:20160, 40:52704, `DS:sum`, heartbeat 2 x step.
    Gmetad,
    /// Issue 19's million-series load: one GAUGE at 10 s, archives 1 min x 1 day, 10 min x
    /// 30 days, 1 h x 1 year (AVERAGE, XFF 0.5), heartbeat 2 x step.
    Scale,
    /// Cacti 0.8's default RRAs (AVERAGE and MAX of 1:600, 6:700, 24:775, 288:797, XFF 0.5),
    /// two COUNTER DS `traffic_in`/`traffic_out`, heartbeat 600, min 0.
    Cacti,
    /// Cacti 1.2's "Local Linux Machine" data sources (index into [`LLM`]), with the
    /// "5 Minute Collection" profile: GAUGE DS, heartbeat 600, min 0, AVERAGE, MIN, MAX and
    /// LAST of 1:600, 6:700, 24:775, 288:797 (XFF 0.5).
    Llm(usize),
    /// Munin's RRDs: one DS named `42` (DERIVE for the counters here, min 0), heartbeat 600,
    /// AVERAGE, MIN and MAX of 1:576, 6:432, 24:540, 288:450 (XFF 0.5).
    Munin,
}

/// The RRDs of one Local Linux Machine device in Cacti 1.2: its data templates' names and
/// data sources.
const LLM: [(&str, &[&str]); 5] = [
    ("load", &["load_1min", "load_5min", "load_15min"]),
    ("mem_buffers", &["mem_buffers"]),
    ("mem_swap", &["mem_swap"]),
    ("proc", &["proc"]),
    ("users", &["users"]),
];

impl Schema {
    /// collectd's RRA list for `step`: for each timespan, PDPs per row =
    /// timespan / (RRARows x step) rounded down, at least 1; rows = timespan / (PDPs x step)
    /// rounded up, at least RRARows.
    fn collectd_rras(step: i64) -> Vec<(i64, i64)> {
        [3600, 86400, 604800, 2678400, 31622400]
            .iter()
            .map(|&span: &i64| {
                let pdp = (span / (1200 * step)).max(1);
                let rows = ((span + pdp * step - 1) / (pdp * step)).max(1200);
                (pdp, rows)
            })
            .collect()
    }

    /// The arguments after the file name of `rrdtool create` / rrdcached's CREATE.
    fn create_args(self, step: i64, start: i64, ds_type: &str) -> String {
        let mut s = format!("-b {start} -s {step}");
        match self {
            Schema::Collectd => {
                let _ = write!(s, " DS:value:{ds_type}:{}:U:U", 2 * step);
                for cf in ["AVERAGE", "MIN", "MAX"] {
                    for (pdp, rows) in Schema::collectd_rras(step) {
                        let _ = write!(s, " RRA:{cf}:0.1:{pdp}:{rows}");
                    }
                }
            }
            Schema::Gmetad => {
                let _ = write!(s, " DS:sum:{ds_type}:{}:U:U", 2 * step);
                for (pdp, rows) in [(1, 5856), (4, 20160), (40, 52704)] {
                    let _ = write!(s, " RRA:AVERAGE:0.5:{pdp}:{rows}");
                }
            }
            Schema::Scale => {
                let _ = write!(s, " DS:value:GAUGE:{}:U:U", 2 * step);
                for (secs, span) in [(60, 86_400), (600, 30 * 86_400), (3600, 365 * 86_400)] {
                    let pdp = (secs / step).max(1);
                    let _ = write!(s, " RRA:AVERAGE:0.5:{pdp}:{}", span / (pdp * step));
                }
            }
            Schema::Munin => {
                let _ = write!(s, " DS:42:DERIVE:{}:0:U", 2 * step);
                for cf in ["AVERAGE", "MIN", "MAX"] {
                    for (pdp, rows) in [(1, 576), (6, 432), (24, 540), (288, 450)] {
                        let _ = write!(s, " RRA:{cf}:0.5:{pdp}:{rows}");
                    }
                }
            }
            Schema::Llm(k) => {
                for ds in LLM[k].1 {
                    let _ = write!(s, " DS:{ds}:GAUGE:600:0:U");
                }
                for cf in ["AVERAGE", "MIN", "MAX", "LAST"] {
                    for (pdp, rows) in [(1, 600), (6, 700), (24, 775), (288, 797)] {
                        let _ = write!(s, " RRA:{cf}:0.5:{pdp}:{rows}");
                    }
                }
            }
            Schema::Cacti => {
                s += " DS:traffic_in:COUNTER:600:0:U DS:traffic_out:COUNTER:600:0:U";
                for cf in ["AVERAGE", "MAX"] {
                    for (pdp, rows) in [(1, 600), (6, 700), (24, 775), (288, 797)] {
                        let _ = write!(s, " RRA:{cf}:0.5:{pdp}:{rows}");
                    }
                }
            }
        }
        s
    }
}

/// One series (one RRD file): its step, schema and one generator per value column.
struct Entry {
    id: u64,
    /// Named as `synth` names its series (`cluster/host<id/20>/metric<id>.rrd`).
    synth_names: bool,
    step: i64,
    schema: Schema,
    cols: Vec<(Series, Rng)>,
    /// Cacti's Boost: ` T:v:v` held until its next flush.
    held: String,
}

impl Entry {
    fn rrd_name(&self) -> String {
        if self.synth_names {
            return format!("cluster/host{}/metric{}.rrd", self.id / 20, self.id);
        }
        if let Schema::Llm(k) = self.schema {
            // Cacti's own: <host>_<data source>_<local data id>.rrd
            return format!("dev{}_{}_{}.rrd", self.id / 5, LLM[k].0, self.id);
        }
        format!("s{}.rrd", self.id)
    }

    /// Names of the value columns for the non-RRD peers (one series per column).
    fn col_name(&self, c: usize) -> String {
        match self.schema {
            Schema::Cacti => format!("s{}_{}", self.id, ["in", "out"][c]),
            Schema::Llm(k) => format!("s{}_{}", self.id, LLM[k].1[c]),
            _ => format!("s{}", self.id),
        }
    }

    fn next_values(&mut self) -> Vec<String> {
        self.cols.iter_mut().map(|(s, r)| s.next_value(r)).collect()
    }

    /// Cacti's update line for the values held (one poll's, or Boost's many), which it
    /// takes.
    fn take_cacti_line(&mut self) -> String {
        let held = std::mem::take(&mut self.held);
        format!(
            "update {} --skip-past-updates --template {}{held}\n",
            self.rrd_name(),
            self.template()
        )
    }

    /// The `--template` of Cacti's update line: the DS names in order.
    fn template(&self) -> String {
        match self.schema {
            Schema::Llm(k) => LLM[k].1.join(":"),
            Schema::Cacti => "traffic_in:traffic_out".into(),
            Schema::Munin => "42".into(),
            Schema::Gmetad => "sum".into(),
            Schema::Collectd | Schema::Scale => "value".into(),
        }
    }
}

/// The series of a workload: groups of (count, step, schema).
fn workload(
    name: &str,
    scale: f64,
    cacti: (u64, Kind),
    llm_devices: u64,
    seed: u64,
) -> Result<Vec<Entry>, String> {
    let (cacti_rrds, cacti_kind) = cacti;
    let groups: Vec<(u64, i64, Schema)> = match name {
        "emoncms" => vec![(25, 60, Schema::Collectd), (20, 10, Schema::Collectd)],
        "collectd" => vec![(718, 10, Schema::Collectd)],
        "ganglia" => vec![(26_000, 10, Schema::Gmetad)],
        "cacti" => vec![(cacti_rrds, 300, Schema::Cacti)],
        "munin" => vec![(4_000, 300, Schema::Munin)],
        // One group per device, so that --scale keeps whole devices.
        "llm" => (0..llm_devices)
            .flat_map(|_| (0..LLM.len()).map(|k| (1, 300, Schema::Llm(k))))
            .collect(),
        "million" => vec![(1_000_000, 10, Schema::Scale)],
        _ => return Err(format!("unknown workload {name}")),
    };
    let mut out = Vec::new();
    let mut id = 0u64;
    for (count, step, schema) in groups {
        let n = ((count as f64 * scale).round() as u64).max(1);
        for _ in 0..n {
            let mut rng = Rng::new(seed.wrapping_mul(1_000_003).wrapping_add(id));
            let cols = if schema == Schema::Cacti {
                (0..2)
                    .map(|c| {
                        let mut r = Rng::new(rng.next_u64() ^ c);
                        (Series::with_kind(cacti_kind, &mut r), r)
                    })
                    .collect()
            } else if schema == Schema::Munin {
                vec![(Series::with_kind(Kind::Walk, &mut rng), rng)]
            } else if let Schema::Llm(k) = schema {
                (0..LLM[k].1.len() as u64)
                    .map(|c| {
                        let mut r = Rng::new(rng.next_u64() ^ c);
                        (Series::with_kind(Kind::Gauge, &mut r), r)
                    })
                    .collect()
            } else {
                let s = Series::new(id, &mut rng);
                vec![(s, rng)]
            };
            out.push(Entry {
                id,
                synth_names: false,
                step,
                schema,
                cols,
                held: String::new(),
            });
            id += 1;
        }
    }
    Ok(out)
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Proto {
    Rrdcached,
    Pipe,
    /// Cacti's poller: `update FILE --skip-past-updates --template ds:ds T:v:v` lines to
    /// one `<target> -` (rrdtool, or ringlet beside its daemon).
    Cacti,
    Graphite,
    PromWrite,
    Influx,
}

struct Args {
    workload: String,
    proto: Proto,
    target: String,
    setup: bool,
    realtime: bool,
    duration: i64,
    start: Option<i64>,
    window: i64,
    scale: f64,
    cacti_rrds: u64,
    cacti_values: Kind,
    dir: String,
    seed: u64,
    synth_names: bool,
    db: String,
    syncfs: Option<String>,
    sync_every: i64,
    llm_devices: u64,
    boost: i64,
    flush_sock: Option<String>,
}

fn parse_args() -> Result<Args, String> {
    let mut a = Args {
        workload: String::new(),
        proto: Proto::Rrdcached,
        target: String::new(),
        setup: false,
        realtime: true,
        duration: 600,
        start: None,
        window: 300,
        scale: 1.0,
        cacti_rrds: 1000,
        cacti_values: Kind::Counter,
        dir: ".".into(),
        seed: 1,
        synth_names: false,
        db: "bench".into(),
        syncfs: None,
        sync_every: dirty_expire_secs(),
        llm_devices: 2000,
        boost: 0,
        flush_sock: None,
    };
    let mut it = std::env::args().skip(1);
    while let Some(flag) = it.next() {
        match flag.as_str() {
            "-h" | "--help" => return Err(String::new()),
            "--realtime" => {
                a.realtime = true;
                continue;
            }
            "--accelerated" => {
                a.realtime = false;
                continue;
            }
            _ => {}
        }
        let v = it.next().ok_or(format!("{flag} needs a value"))?;
        let num = || {
            v.parse::<u64>()
                .map_err(|_| format!("{flag}: not a number: {v}"))
        };
        match flag.as_str() {
            "--workload" => a.workload = v.clone(),
            "--proto" => {
                a.proto = match v.as_str() {
                    "rrdcached" => Proto::Rrdcached,
                    "pipe" => Proto::Pipe,
                    "cacti" => Proto::Cacti,
                    "graphite" => Proto::Graphite,
                    "promwrite" => Proto::PromWrite,
                    "influx" => Proto::Influx,
                    _ => return Err(format!("unknown protocol {v}")),
                }
            }
            "--target" => a.target = v.clone(),
            "--phase" => {
                a.setup = match v.as_str() {
                    "setup" => true,
                    "run" => false,
                    _ => return Err(format!("--phase: setup or run, not {v}")),
                }
            }
            "--duration" => a.duration = parse_duration(&v)? as i64,
            "--start" => a.start = Some(num()? as i64),
            "--window" => a.window = parse_duration(&v)?.max(1) as i64,
            "--scale" => {
                a.scale = v
                    .parse::<f64>()
                    .ok()
                    .filter(|f| *f > 0.0 && *f <= 1.0)
                    .ok_or(format!("--scale: a fraction in (0, 1], not {v}"))?
            }
            "--cacti-rrds" => a.cacti_rrds = num()?.max(1),
            "--cacti-values" => {
                a.cacti_values = match v.as_str() {
                    "rate" => Kind::Counter,
                    "walk" => Kind::Walk,
                    _ => return Err(format!("--cacti-values: rate or walk, not {v}")),
                }
            }
            "--dir" => a.dir = v.clone(),
            "--seed" => a.seed = num()?,
            "--names" if v == "synth" => a.synth_names = true,
            "--names" => return Err(format!("--names: only `synth`, not {v}")),
            "--db" => a.db = v.clone(),
            "--syncfs" => a.syncfs = Some(v.clone()),
            "--sync-every" => a.sync_every = parse_duration(&v)?.max(1) as i64,
            "--llm-devices" => a.llm_devices = num()?.max(1),
            "--boost" => a.boost = parse_duration(&v)? as i64,
            "--flush-sock" => a.flush_sock = Some(v.clone()),
            _ => return Err(format!("unknown option {flag}")),
        }
    }
    if a.workload.is_empty() || a.target.is_empty() {
        return Err("--workload and --target are required".into());
    }
    Ok(a)
}

fn now_f() -> f64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0.0, |d| d.as_secs_f64())
}

/// A byte stream to a daemon, unix or TCP.
enum Stream {
    Unix(UnixStream),
    Tcp(TcpStream),
}

impl Stream {
    fn connect(addr: &str) -> Result<Stream, String> {
        let r = if let Some(p) = addr.strip_prefix("unix:") {
            UnixStream::connect(p).map(Stream::Unix)
        } else if addr.starts_with('/') {
            UnixStream::connect(addr).map(Stream::Unix)
        } else {
            TcpStream::connect(addr).map(Stream::Tcp)
        };
        r.map_err(|e| format!("connect {addr}: {e}"))
    }

    fn try_clone(&self) -> io::Result<Stream> {
        match self {
            Stream::Unix(s) => s.try_clone().map(Stream::Unix),
            Stream::Tcp(s) => s.try_clone().map(Stream::Tcp),
        }
    }
}

impl Read for Stream {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        match self {
            Stream::Unix(s) => s.read(buf),
            Stream::Tcp(s) => s.read(buf),
        }
    }
}

impl Write for Stream {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        match self {
            Stream::Unix(s) => s.write(buf),
            Stream::Tcp(s) => s.write(buf),
        }
    }
    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// An rrdcached-protocol connection.
struct Rrdc {
    w: Stream,
    r: BufReader<Stream>,
}

impl Rrdc {
    fn open(addr: &str) -> Result<Rrdc, String> {
        let w = Stream::connect(addr)?;
        let r = BufReader::new(w.try_clone().map_err(|e| e.to_string())?);
        Ok(Rrdc { w, r })
    }

    /// One status line and its N following lines.
    fn reply(&mut self) -> Result<(i64, String, Vec<String>), String> {
        let mut status = String::new();
        if self.r.read_line(&mut status).map_err(|e| e.to_string())? == 0 {
            return Err("daemon closed the connection".into());
        }
        let status = status.trim_end().to_string();
        let n = proto::response::status(&status).map_or(-1, |(n, _)| n);
        let mut lines = Vec::new();
        for _ in 0..n.max(0) {
            let mut l = String::new();
            self.r.read_line(&mut l).map_err(|e| e.to_string())?;
            lines.push(l.trim_end().to_string());
        }
        Ok((n, status, lines))
    }

    /// Send `lines` (UPDATE ...) as one BATCH; error if any line failed.
    fn batch(&mut self, body: &str) -> Result<(), String> {
        let mut req = String::with_capacity(body.len() + 16);
        req.push_str("BATCH\n");
        req.push_str(body);
        req.push_str(".\n");
        self.w
            .write_all(req.as_bytes())
            .map_err(|e| format!("write: {e}"))?;
        let (_, go, _) = self.reply()?;
        if !go.starts_with("0 Go ahead") {
            return Err(format!("BATCH: {go}"));
        }
        let (n, status, lines) = self.reply()?;
        if n != 0 {
            let first: Vec<&String> = lines.iter().take(3).collect();
            return Err(format!("BATCH: {status}: {first:?}"));
        }
        Ok(())
    }

    /// FLUSHALL, then wait until STATS shows an empty write queue.
    fn flush_all(&mut self) -> Result<(), String> {
        self.w.write_all(b"FLUSHALL\n").map_err(|e| e.to_string())?;
        let (n, status, _) = self.reply()?;
        if n != 0 {
            return Err(format!("FLUSHALL: {status}"));
        }
        let t0 = Instant::now();
        loop {
            self.w.write_all(b"STATS\n").map_err(|e| e.to_string())?;
            let (_, _, lines) = self.reply()?;
            let queue = lines
                .iter()
                .find_map(|l| l.strip_prefix("QueueLength: "))
                .and_then(|v| v.parse::<u64>().ok())
                .unwrap_or(0);
            if queue == 0 {
                return Ok(());
            }
            if t0.elapsed().as_secs() > 900 {
                return Err("FLUSHALL: queue not empty after 900 s".into());
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

/// A long-running `rrdtool -` process: commands on stdin, one `OK`/`ERROR` line each.
struct Pipe {
    child: Child,
    stdin: Option<io::BufWriter<ChildStdin>>,
    sent: u64,
    done: Arc<AtomicU64>,
    errors: Arc<AtomicU64>,
    reader: Option<std::thread::JoinHandle<()>>,
}

impl Pipe {
    fn spawn(rrdtool: &str, dir: &str) -> Result<Pipe, String> {
        let mut child = Command::new(rrdtool)
            .arg("-")
            .current_dir(dir)
            .env("TZ", "UTC")
            .env("LC_ALL", "C")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .map_err(|e| format!("spawn {rrdtool} -: {e}"))?;
        let stdin = child
            .stdin
            .take()
            .map(|s| io::BufWriter::with_capacity(1 << 16, s));
        let out = child.stdout.take().ok_or("no stdout from rrdtool")?;
        let done = Arc::new(AtomicU64::new(0));
        let errors = Arc::new(AtomicU64::new(0));
        let (d, e) = (Arc::clone(&done), Arc::clone(&errors));
        let reader = std::thread::spawn(move || {
            for line in BufReader::new(out).lines() {
                let Ok(line) = line else { break };
                if line.starts_with("OK") {
                    d.fetch_add(1, Ordering::Relaxed);
                } else if line.starts_with("ERROR") {
                    if e.fetch_add(1, Ordering::Relaxed) < 3 {
                        eprintln!("feed: rrdtool: {line}");
                    }
                    d.fetch_add(1, Ordering::Relaxed);
                }
            }
        });
        Ok(Pipe {
            child,
            stdin,
            sent: 0,
            done,
            errors,
            reader: Some(reader),
        })
    }

    fn send(&mut self, line: &str) -> Result<(), String> {
        let w = self.stdin.as_mut().ok_or("rrdtool stdin closed")?;
        w.write_all(line.as_bytes())
            .map_err(|e| format!("rrdtool stdin: {e}"))?;
        self.sent += 1;
        Ok(())
    }

    /// Flush stdin and wait until every command has been answered.
    fn drain(&mut self) -> Result<(), String> {
        if let Some(w) = self.stdin.as_mut() {
            w.flush().map_err(|e| format!("rrdtool stdin: {e}"))?;
        }
        while self.done.load(Ordering::Relaxed) < self.sent {
            if let Ok(Some(st)) = self.child.try_wait() {
                return Err(format!("rrdtool exited early: {st}"));
            }
            std::thread::sleep(Duration::from_millis(5));
        }
        Ok(())
    }

    /// Drain, report the process's CPU and peak RSS, then end it.
    fn finish(mut self) -> Result<String, String> {
        self.drain()?;
        let pid = self.child.id();
        let stats = proc_stats(pid);
        self.stdin = None;
        let _ = self.child.wait();
        if let Some(r) = self.reader.take() {
            let _ = r.join();
        }
        let errors = self.errors.load(Ordering::Relaxed);
        if errors > 0 {
            return Err(format!("rrdtool reported {errors} errors"));
        }
        Ok(stats)
    }
}

/// ` peer_cpu_s=... peer_rss_kb=...` of a process, from /proc.
fn proc_stats(pid: u32) -> String {
    let tck = Command::new("getconf")
        .arg("CLK_TCK")
        .output()
        .ok()
        .and_then(|o| String::from_utf8(o.stdout).ok())
        .and_then(|s| s.trim().parse::<f64>().ok())
        .unwrap_or(100.0);
    let cpu = std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .ok()
        .and_then(|st| {
            let rest = st.get(st.rfind(')')? + 2..)?.to_string();
            let f: Vec<&str> = rest.split(' ').collect();
            Some(f.get(11)?.parse::<f64>().ok()? + f.get(12)?.parse::<f64>().ok()?)
        })
        .unwrap_or(0.0);
    let hwm = std::fs::read_to_string(format!("/proc/{pid}/status"))
        .ok()
        .and_then(|st| {
            st.lines()
                .find(|l| l.starts_with("VmHWM:"))?
                .split_whitespace()
                .nth(1)?
                .parse::<u64>()
                .ok()
        })
        .unwrap_or(0);
    format!(" peer_cpu_s={:.2} peer_rss_kb={hwm}", cpu / tck)
}

/// A keep-alive HTTP/1.1 client for POSTs to one host:port.
struct Http {
    addr: String,
    conn: Option<(TcpStream, BufReader<TcpStream>)>,
}

impl Http {
    fn new(addr: &str) -> Http {
        Http {
            addr: addr.to_string(),
            conn: None,
        }
    }

    /// POST `body` to `path` with extra header lines; error unless the status is 2xx.
    fn post(&mut self, path: &str, headers: &str, body: &[u8]) -> Result<(), String> {
        if self.conn.is_none() {
            let s = TcpStream::connect(&self.addr)
                .map_err(|e| format!("connect {}: {e}", self.addr))?;
            let r = BufReader::new(s.try_clone().map_err(|e| e.to_string())?);
            self.conn = Some((s, r));
        }
        let Some((w, r)) = self.conn.as_mut() else {
            return Err("no connection".into());
        };
        let head = format!(
            "POST {path} HTTP/1.1\r\nHost: {}\r\nContent-Length: {}\r\n{headers}\r\n",
            self.addr,
            body.len()
        );
        w.write_all(head.as_bytes())
            .and_then(|_| w.write_all(body))
            .map_err(|e| format!("POST {path}: {e}"))?;
        let mut status = String::new();
        r.read_line(&mut status).map_err(|e| e.to_string())?;
        let code: u32 = status
            .split_whitespace()
            .nth(1)
            .and_then(|c| c.parse().ok())
            .unwrap_or(0);
        let (mut len, mut chunked, mut close) = (0usize, false, false);
        loop {
            let mut h = String::new();
            if r.read_line(&mut h).map_err(|e| e.to_string())? == 0 {
                close = true;
                break;
            }
            let h = h.trim_end();
            if h.is_empty() {
                break;
            }
            let (k, v) = h.split_once(':').unwrap_or((h, ""));
            let (k, v) = (k.to_ascii_lowercase(), v.trim().to_ascii_lowercase());
            match k.as_str() {
                "content-length" => len = v.parse().unwrap_or(0),
                "transfer-encoding" => chunked = v.contains("chunked"),
                "connection" => close = v == "close",
                _ => {}
            }
        }
        let mut resp = Vec::new();
        if chunked {
            loop {
                let mut sz = String::new();
                r.read_line(&mut sz).map_err(|e| e.to_string())?;
                let n = usize::from_str_radix(sz.trim(), 16).unwrap_or(0);
                let mut chunk = vec![0; n + 2];
                r.read_exact(&mut chunk).map_err(|e| e.to_string())?;
                if n == 0 {
                    break;
                }
                resp.extend_from_slice(&chunk[..n]);
            }
        } else {
            resp.resize(len, 0);
            r.read_exact(&mut resp).map_err(|e| e.to_string())?;
        }
        if close {
            self.conn = None;
        }
        if !(200..300).contains(&code) {
            return Err(format!(
                "POST {path}: {} {}",
                status.trim_end(),
                String::from_utf8_lossy(&resp)
            ));
        }
        Ok(())
    }
}

fn varint(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

/// A length-delimited protobuf field.
fn pb_bytes(out: &mut Vec<u8>, field: u64, data: &[u8]) {
    varint(out, field << 3 | 2);
    varint(out, data.len() as u64);
    out.extend_from_slice(data);
}

/// One remote-write `TimeSeries` with labels (sorted by name) and one sample.
fn pb_series(out: &mut Vec<u8>, labels: &[(&str, &str)], value: f64, ts_ms: i64) {
    let mut ts = Vec::with_capacity(64);
    let mut tmp = Vec::with_capacity(32);
    for (k, v) in labels {
        tmp.clear();
        pb_bytes(&mut tmp, 1, k.as_bytes());
        pb_bytes(&mut tmp, 2, v.as_bytes());
        pb_bytes(&mut ts, 1, &tmp);
    }
    tmp.clear();
    tmp.push(0x09); // field 1, 64-bit: value
    tmp.extend_from_slice(&value.to_le_bytes());
    tmp.push(0x10); // field 2, varint: timestamp in ms
    varint(&mut tmp, ts_ms as u64);
    pb_bytes(&mut ts, 2, &tmp);
    pb_bytes(out, 1, &ts);
}

/// Snappy block format with literals only: valid, uncompressed.
fn snappy_literal(data: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(data.len() + data.len() / 65536 * 3 + 8);
    varint(&mut out, data.len() as u64);
    for chunk in data.chunks(65536) {
        let n = chunk.len() - 1;
        if n < 60 {
            out.push((n as u8) << 2);
        } else if n < 256 {
            out.push(60 << 2);
            out.push(n as u8);
        } else {
            out.push(61 << 2);
            out.extend_from_slice(&(n as u16).to_le_bytes());
        }
        out.extend_from_slice(chunk);
    }
    out
}

/// The open connection to the peer.
enum Peer {
    Rrdc(Rrdc),
    Pipe(Pipe),
    Graphite(Stream),
    Http(Http),
}

/// Samples sent and per-protocol request counts.
#[derive(Default)]
struct Sent {
    samples: u64,
    requests: u64,
}

struct Feeder {
    a: Args,
    wl: String,
    series: Vec<Entry>,
    peer: Peer,
    sent: Sent,
}

/// Series per remote-write / influx request (Prometheus' own shards send up to 2,000).
const PER_REQUEST: usize = 2000;

impl Feeder {
    /// Send every series due at time `t` (t a multiple of its step), in one go.
    fn send_step(&mut self, t: i64) -> Result<(), String> {
        let due: Vec<usize> = (0..self.series.len())
            .filter(|&i| t % self.series[i].step == 0)
            .collect();
        if due.is_empty() {
            return Ok(());
        }
        let wl = self.wl.clone();
        match &mut self.peer {
            Peer::Rrdc(c) => {
                let mut body = String::with_capacity(due.len() * 40);
                for &i in &due {
                    let e = &mut self.series[i];
                    let v = e.next_values();
                    let _ = writeln!(body, "UPDATE {} {t}:{}", e.rrd_name(), v.join(":"));
                    self.sent.samples += v.len() as u64;
                }
                c.batch(&body)?;
                self.sent.requests += 1;
            }
            Peer::Pipe(p) if self.a.proto == Proto::Cacti => {
                let boost = self.a.boost;
                for &i in &due {
                    let e = &mut self.series[i];
                    let v = e.next_values();
                    self.sent.samples += v.len() as u64;
                    let _ = write!(e.held, " {t}:{}", v.join(":"));
                    // Boost holds the values and writes each RRD's in one line at every
                    // boundary of its interval; the poller writes each poll's at once.
                    if boost == 0 || (t + e.step) % boost == 0 {
                        p.send(&e.take_cacti_line())?;
                        self.sent.requests += 1;
                    }
                }
                if let Some(w) = p.stdin.as_mut() {
                    w.flush().map_err(|e| format!("rrdtool stdin: {e}"))?;
                }
            }
            Peer::Pipe(p) => {
                for &i in &due {
                    let e = &mut self.series[i];
                    let v = e.next_values();
                    p.send(&format!("update {} {t}:{}\n", e.rrd_name(), v.join(":")))?;
                    self.sent.samples += v.len() as u64;
                    self.sent.requests += 1;
                }
                if let Some(w) = p.stdin.as_mut() {
                    w.flush().map_err(|e| format!("rrdtool stdin: {e}"))?;
                }
            }
            Peer::Graphite(s) => {
                let mut body = String::with_capacity(due.len() * 40);
                for &i in &due {
                    let e = &mut self.series[i];
                    for (c, v) in e.next_values().iter().enumerate() {
                        let _ = writeln!(body, "{wl}.{} {v} {t}", e.col_name(c));
                        self.sent.samples += 1;
                    }
                }
                s.write_all(body.as_bytes())
                    .map_err(|e| format!("graphite: {e}"))?;
                self.sent.requests += 1;
            }
            Peer::Http(h) => {
                for chunk in due.chunks(PER_REQUEST) {
                    if self.a.proto == Proto::PromWrite {
                        let mut pb = Vec::with_capacity(chunk.len() * 64);
                        for &i in chunk {
                            let e = &mut self.series[i];
                            for (c, v) in e.next_values().iter().enumerate() {
                                let name = e.col_name(c);
                                let val: f64 = v.parse().unwrap_or(f64::NAN);
                                pb_series(
                                    &mut pb,
                                    &[("__name__", wl.as_str()), ("series", &name)],
                                    val,
                                    t * 1000,
                                );
                                self.sent.samples += 1;
                            }
                        }
                        h.post(
                            "/api/v1/write",
                            "Content-Type: application/x-protobuf\r\nContent-Encoding: snappy\r\n\
                             X-Prometheus-Remote-Write-Version: 0.1.0\r\n",
                            &snappy_literal(&pb),
                        )?;
                    } else {
                        let mut body = String::with_capacity(chunk.len() * 48);
                        for &i in chunk {
                            let e = &mut self.series[i];
                            for (c, v) in e.next_values().iter().enumerate() {
                                let _ =
                                    writeln!(body, "{wl},series={} value={v} {t}", e.col_name(c));
                                self.sent.samples += 1;
                            }
                        }
                        let path = format!("/write?db={}&precision=s", self.a.db);
                        h.post(&path, "", body.as_bytes())?;
                    }
                    self.sent.requests += 1;
                }
            }
        }
        Ok(())
    }

    /// Accelerated over the rrdcached protocol: the values of `from..to` (virtual time) as
    /// BATCHes of one UPDATE line per series carrying all its values in the interval.
    fn send_chunk(&mut self, from: i64, to: i64) -> Result<(), String> {
        let Peer::Rrdc(c) = &mut self.peer else {
            return Err("send_chunk needs the rrdcached protocol".into());
        };
        let mut body = String::new();
        for e in self.series.iter_mut() {
            let first = from + (e.step - from.rem_euclid(e.step)) % e.step;
            if first >= to {
                continue;
            }
            let _ = write!(body, "UPDATE {}", e.rrd_name());
            let mut t = first;
            while t < to {
                let v = e.next_values();
                let _ = write!(body, " {t}:{}", v.join(":"));
                self.sent.samples += v.len() as u64;
                t += e.step;
            }
            body.push('\n');
            if body.len() > 4 << 20 {
                c.batch(&body)?;
                self.sent.requests += 1;
                body.clear();
            }
        }
        if !body.is_empty() {
            c.batch(&body)?;
            self.sent.requests += 1;
        }
        Ok(())
    }
}

impl Feeder {
    /// Boost's values still held at the end of a run, written.
    fn flush_held(&mut self) -> Result<(), String> {
        let Peer::Pipe(p) = &mut self.peer else {
            return Ok(());
        };
        for e in self.series.iter_mut().filter(|e| !e.held.is_empty()) {
            p.send(&e.take_cacti_line())?;
            self.sent.requests += 1;
        }
        Ok(())
    }
}

fn gcd(a: i64, b: i64) -> i64 {
    if b == 0 {
        a
    } else {
        gcd(b, a % b)
    }
}

fn run(a: Args) -> Result<String, String> {
    let cacti = (a.cacti_rrds, a.cacti_values);
    let mut series = workload(&a.workload, a.scale, cacti, a.llm_devices, a.seed)?;
    for e in &mut series {
        e.synth_names = a.synth_names;
    }
    let tick = series.iter().fold(0, |g, e| gcd(g, e.step)).max(1);
    let max_step = series.iter().map(|e| e.step).max().unwrap_or(tick);
    let start = a
        .start
        .unwrap_or_else(|| (now_f() as i64).div_euclid(max_step) * max_step);
    let peer = match a.proto {
        Proto::Rrdcached => Peer::Rrdc(Rrdc::open(&a.target)?),
        Proto::Pipe | Proto::Cacti => Peer::Pipe(Pipe::spawn(&a.target, &a.dir)?),
        Proto::Graphite => Peer::Graphite(Stream::connect(&a.target)?),
        Proto::PromWrite | Proto::Influx => Peer::Http(Http::new(&a.target)),
    };
    let cols: usize = series.iter().map(|e| e.cols.len()).sum();
    let mut f = Feeder {
        wl: a.workload.clone(),
        series,
        peer,
        sent: Sent::default(),
        a,
    };
    let t0 = Instant::now();
    let mut summary = format!(
        "workload={} series={} columns={cols}",
        f.a.workload,
        f.series.len()
    );
    if f.a.setup {
        setup(&mut f, start)?;
        let _ = write!(summary, " phase=setup start={start}");
    } else if f.a.realtime {
        let (late, max_lag) = realtime(&mut f, tick)?;
        let _ = write!(
            summary,
            " phase=run mode=realtime late_steps={late} max_lag_s={max_lag:.2}"
        );
    } else {
        let syncs = accelerated(&mut f, start, tick)?;
        let _ = write!(
            summary,
            " phase=run mode=accelerated start={start} syncs={syncs}"
        );
    }
    let _ = write!(
        summary,
        " samples={} requests={} feed_wall_s={:.2}",
        f.sent.samples,
        f.sent.requests,
        t0.elapsed().as_secs_f64()
    );
    match f.peer {
        Peer::Pipe(p) => summary += &p.finish()?,
        Peer::Rrdc(mut c) => {
            let _ = c.w.write_all(b"QUIT\n");
        }
        Peer::Graphite(Stream::Tcp(s)) => {
            let _ = s.shutdown(std::net::Shutdown::Write);
            // carbon reads until EOF; give it the tail of the stream before closing.
            let mut sink = [0u8; 64];
            let _ = (&s).read(&mut sink);
        }
        _ => {}
    }
    Ok(summary)
}

fn setup(f: &mut Feeder, start: i64) -> Result<(), String> {
    match &mut f.peer {
        Peer::Rrdc(c) => {
            for chunk in f.series.chunks(500) {
                let mut req = String::new();
                for e in chunk {
                    let args = e
                        .schema
                        .create_args(e.step, start, e.cols[0].0.kind.ds_type());
                    let _ = writeln!(req, "CREATE {} {args}", e.rrd_name());
                }
                c.w.write_all(req.as_bytes())
                    .map_err(|e| format!("write: {e}"))?;
                for e in chunk {
                    let (n, status, _) = c.reply()?;
                    if n != 0 {
                        return Err(format!("CREATE {}: {status}", e.rrd_name()));
                    }
                }
            }
        }
        Peer::Pipe(p) => {
            for e in &f.series {
                let args = e
                    .schema
                    .create_args(e.step, start, e.cols[0].0.kind.ds_type());
                p.send(&format!("create {} {args}\n", e.rrd_name()))?;
            }
            p.drain()?;
        }
        Peer::Http(h) if f.a.proto == Proto::Influx => {
            let q = format!("/query?q=CREATE+DATABASE+{}", f.a.db);
            h.post(&q, "", b"")?;
            f.send_step(start)?;
        }
        _ => f.send_step(start)?,
    }
    Ok(())
}

/// Real time: at each tick boundary of the wall clock, send what is due. Returns the number
/// of steps whose send ended after the next boundary, and the worst such lag.
fn realtime(f: &mut Feeder, tick: i64) -> Result<(u64, f64), String> {
    let begin = now_f();
    let end = begin + f.a.duration as f64;
    let mut t = (begin as i64).div_euclid(tick) * tick + tick;
    if let Some(start) = f.a.start {
        // Continue each series where an accelerated run from `start` (a warm-up) left it,
        // as if it had been polled all along: a counter that restarted from its first
        // value would jump back, a change no real client sends.
        for e in &mut f.series {
            let steps = (t - 1).div_euclid(e.step) - start.div_euclid(e.step);
            for _ in 0..steps.max(0) {
                e.next_values();
            }
        }
    }
    let (mut late, mut max_lag) = (0u64, 0f64);
    while (t as f64) <= end {
        let wait = t as f64 - now_f();
        if wait > 0.0 {
            std::thread::sleep(Duration::from_secs_f64(wait));
        }
        f.send_step(t)?;
        let lag = now_f() - (t + tick) as f64;
        if lag > 0.0 {
            late += 1;
            max_lag = max_lag.max(lag);
        }
        t += tick;
    }
    if let Peer::Pipe(p) = &mut f.peer {
        p.drain()?;
    }
    Ok((late, max_lag))
}

/// Accelerated: virtual time `start + tick ..= start + duration`, as fast as possible. Over
/// the rrdcached protocol the values go in chunks (one UPDATE line per series per chunk) and
/// FLUSHALL follows every `--window` boundary of virtual time, and the end. With `--syncfs
/// PATH`, the filesystem is synced (syncfs) at every `--sync-every` boundary of virtual time,
/// after the peer has taken everything sent: the kernel's periodic writeback, scaled to
/// virtual time.
fn accelerated(f: &mut Feeder, start: i64, tick: i64) -> Result<u64, String> {
    let end = start + f.a.duration;
    let (w, se) = (f.a.window, f.a.sync_every);
    let next = |t: i64, m: i64| (t.div_euclid(m) + 1) * m;
    let mut syncs = 0;
    // `<target> -` beside a daemon: its commit window is FLUSHALL at each window boundary.
    let mut flusher = match f.a.flush_sock.as_deref() {
        Some(s) => Some(Rrdc::open(s)?),
        None => None,
    };
    let mut from = start + tick;
    while from <= end {
        let mut to = next(from, w);
        if f.a.syncfs.is_some() {
            to = to.min(next(from, se));
        }
        let to = to.min(end + 1);
        if matches!(f.peer, Peer::Rrdc(_)) {
            f.send_chunk(from, to)?;
            // At each window boundary, and at the end: a warm-up leaves nothing pending for
            // the run after it.
            if to % w == 0 || to > end {
                if let Peer::Rrdc(c) = &mut f.peer {
                    c.flush_all()?;
                }
            }
        } else {
            let mut t = from + (tick - from.rem_euclid(tick)) % tick;
            while t < to {
                f.send_step(t)?;
                t += tick;
            }
            if to > end {
                f.flush_held()?;
            }
            if let (Some(c), Peer::Pipe(p)) = (flusher.as_mut(), &mut f.peer) {
                if to % w == 0 || to > end {
                    p.drain()?;
                    c.flush_all()?;
                }
            }
        }
        if let Some(path) = f.a.syncfs.clone() {
            if to % se == 0 {
                if let Peer::Pipe(p) = &mut f.peer {
                    p.drain()?;
                }
                let st = Command::new("sync")
                    .arg("-f")
                    .arg(&path)
                    .status()
                    .map_err(|e| format!("sync -f {path}: {e}"))?;
                if !st.success() {
                    return Err(format!("sync -f {path}: {st}"));
                }
                syncs += 1;
            }
        }
        from = to;
    }
    if let Peer::Pipe(p) = &mut f.peer {
        p.drain()?;
    }
    Ok(syncs)
}

fn main() -> ExitCode {
    let a = match parse_args() {
        Ok(a) => a,
        Err(e) if e.is_empty() => {
            println!("{USAGE}");
            return ExitCode::SUCCESS;
        }
        Err(e) => {
            eprintln!("feed: {e}\n{USAGE}");
            return ExitCode::from(2);
        }
    };
    match run(a) {
        Ok(summary) => {
            println!("RESULT {summary}");
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("feed: {e}");
            ExitCode::FAILURE
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn collectd_rras_match_the_plugin_defaults_for_10s_and_60s() {
        assert_eq!(
            Schema::collectd_rras(10),
            vec![(1, 1200), (7, 1235), (50, 1210), (223, 1202), (2635, 1201)]
        );
        assert_eq!(
            Schema::collectd_rras(60),
            vec![(1, 1200), (1, 1440), (8, 1260), (37, 1207), (439, 1201)]
        );
    }

    #[test]
    fn snappy_literal_block_has_length_prefix_and_literal_tags() {
        let data: Vec<u8> = (0..300u32).map(|i| i as u8).collect();
        let s = snappy_literal(&data);
        assert_eq!(&s[..2], &[0xac, 0x02]); // varint 300
        assert_eq!(s[2], 61 << 2);
        assert_eq!(u16::from_le_bytes([s[3], s[4]]), 299);
        assert_eq!(&s[5..], &data[..]);
    }

    #[test]
    fn remote_write_series_encodes_labels_then_sample() {
        let mut out = Vec::new();
        pb_series(&mut out, &[("a", "b")], 1.0, 5);
        // WriteRequest.timeseries (1, LEN) { labels (1, LEN) { name "a", value "b" },
        // samples (2, LEN) { value 1.0, timestamp 5 } }
        let mut want = vec![
            0x0a, 21, 0x0a, 6, 0x0a, 1, b'a', 0x12, 1, b'b', 0x12, 11, 0x09,
        ];
        want.extend_from_slice(&1.0f64.to_le_bytes());
        want.extend_from_slice(&[0x10, 5]);
        assert_eq!(out, want);
    }

    #[test]
    fn cacti_workload_has_two_counter_columns_per_rrd() {
        let w = workload("cacti", 1.0, (10, Kind::Counter), 1, 1).expect("cacti exists");
        assert_eq!(w.len(), 10);
        assert!(w
            .iter()
            .all(|e| e.cols.len() == 2 && e.cols.iter().all(|c| c.0.kind == Kind::Counter)));
        let w = workload("cacti", 1.0, (10, Kind::Walk), 1, 1).expect("cacti exists");
        assert!(w
            .iter()
            .all(|e| e.cols.iter().all(|c| c.0.kind == Kind::Walk)));
        let args = w[0].schema.create_args(300, 1000, "COUNTER");
        assert!(args.contains("DS:traffic_in:COUNTER:600:0:U"));
        assert!(args.contains("RRA:MAX:0.5:288:797"));
    }

    #[test]
    fn llm_workload_has_cactis_five_rrds_a_device() {
        let w = workload("llm", 1.0, (1, Kind::Counter), 3, 1).expect("llm exists");
        assert_eq!(w.len(), 15);
        assert_eq!(w.iter().map(|e| e.cols.len()).sum::<usize>(), 21);
        assert_eq!(w[0].rrd_name(), "dev0_load_0.rrd");
        assert_eq!(w[0].template(), "load_1min:load_5min:load_15min");
        let args = w[0].schema.create_args(300, 0, "GAUGE");
        assert!(args.contains("DS:load_15min:GAUGE:600:0:U RRA:AVERAGE:0.5:1:600"));
        assert_eq!(args.matches(" RRA:").count(), 16);
        assert!(args.ends_with("RRA:LAST:0.5:288:797"));
    }

    #[test]
    fn scaled_workload_keeps_every_group() {
        let w = workload("emoncms", 0.5, (0, Kind::Counter), 1, 1).expect("emoncms exists");
        assert_eq!(w.iter().filter(|e| e.step == 60).count(), 13);
        assert_eq!(w.iter().filter(|e| e.step == 10).count(), 10);
    }
}
