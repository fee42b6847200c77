//! `ringlet serve`'s command line: rrdcached 1.7.2's options, so that an existing init script
//! or unit keeps working, plus ringlet's own long options.
//!
//! Options that have no meaning for ringlet (`-t` writer threads, `-j` journal directory,
//! `-z` jitter, `-a` allocation chunk, `-V` log level) are accepted and documented as such.
//!
//! Read by `lexopt`, which splits bundles as getopt does (`-gB` is `-g -B`; `-gw300` is
//! `-g -w 300`; an option's value is the next argument whatever it looks like, `-b -dir`);
//! the errors are written here, in the words rrdcached's users read in its own.

use lexopt::prelude::*;
use std::path::PathBuf;

pub use proto::addr::{parse_addr, Addr, DEFAULT_PORT};
pub const DEFAULT_SOCKET: &str = "/tmp/rrdcached.sock";

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Listen {
    pub addr: Addr,
    /// Allowed command indices (`-P`); None: all commands.
    pub allowed: Option<Vec<usize>>,
    /// `-s`: group of the socket file (unix sockets only).
    pub group: Option<String>,
    /// `-m`: mode of the socket file (unix sockets only).
    pub mode: Option<u32>,
}

#[derive(Debug, Clone)]
pub struct Config {
    pub listen: Vec<Listen>,
    /// `-b`: base directory of relative names; names inside it are stored relative to it.
    pub base: Option<PathBuf>,
    /// `-B`: refuse names outside the base directory.
    pub restrict_base: bool,
    /// `-R`: CREATE may make missing directories (ringlet's names need none; accepted).
    pub recursive_create: bool,
    /// `-O`: CREATE never overwrites.
    pub no_overwrite: bool,
    /// `-w`: seconds between commits (the loss window).
    pub commit_interval: u64,
    /// `-f`: seconds between idle-entry sweeps; ringlet commits on `-w` alone (accepted).
    pub flush_interval: u64,
    /// `-F`: commit everything on SIGTERM (ringlet always does).
    pub flush_on_shutdown: bool,
    /// `-p`: pid file.
    pub pid_file: Option<PathBuf>,
    /// `-g`: stay in the foreground.
    pub foreground: bool,
    /// `-o`: log file (default: stderr in the foreground).
    pub log_file: Option<PathBuf>,
    /// `-G`, `-U`: drop privileges to this group and user after binding.
    pub group: Option<String>,
    pub user: Option<String>,
    /// `--view [DIR]`: mount the live view of every series at DIR (`Some(None)`: bare
    /// `--view`, which means the base directory).
    pub view: Option<Option<PathBuf>>,
    /// `--phpfina DIR`, `--phptimeseries DIR`: emoncms's feed directories, as views whose
    /// feed files the store holds.
    pub phpfina: Option<PathBuf>,
    pub phptimeseries: Option<PathBuf>,
    /// `--store`: the store directory.
    pub store: Option<PathBuf>,
    /// `--max-line`: longest request line accepted, bytes.
    pub max_line: usize,
    /// `--max-connections`: rrdcached connections at once, over all its sockets.
    pub max_connections: usize,
    /// `--max-tcp-connections`: of those, on TCP sockets (None: half of
    /// `max_connections`), so that the network cannot take the unix sockets' slots.
    pub max_tcp_connections: Option<usize>,
    /// `--idle-timeout`: a TCP connection (rrdcached's, carbon's) that sends nothing for
    /// this long is closed (None: never).
    pub idle_timeout: Option<std::time::Duration>,
    /// `--carbon-max-connections`: carbon connections at once (plaintext and pickle, TCP).
    pub carbon_connections: usize,
    /// `--http-max-connections`: HTTP connections at once (each listener).
    pub http_connections: usize,
    /// `--http-workers`: HTTP requests worked on at once (each listener).
    pub http_workers: usize,
    /// `--log-size`: log ring size for a store created now (None: `$RINGLET_LOG_SIZE`, else
    /// the engine's default).
    pub log_size: Option<u64>,
    /// `--log-per-series`: ring bytes a series is given (None: `$RINGLET_LOG_PER_SERIES`,
    /// else the engine's default; 0: the ring keeps its size).
    pub log_per_series: Option<u64>,
    /// `--spill`: bytes of sealed archive chunks held in memory before they are stored
    /// ahead of the next checkpoint (None: `$RINGLET_SPILL`, else the engine's default; 0:
    /// never).
    pub spill: Option<u64>,
    /// `--queue-limit`: bytes of queued values that start a commit before `-w` is up.
    pub queue_limit: u64,
    /// `--carbon ADDR`: where carbon's plaintext protocol is taken (TCP and UDP).
    pub carbon: Vec<std::net::SocketAddr>,
    /// `--carbon-pickle ADDR`: where carbon's pickle protocol is taken (TCP).
    pub carbon_pickle: Vec<std::net::SocketAddr>,
    /// `--graphite-conf DIR`: carbon's storage-schemas.conf and storage-aggregation.conf.
    pub graphite_conf: Option<PathBuf>,
    /// `--http ADDR`: graphite-web's API and the web page.
    pub http: Vec<std::net::SocketAddr>,
}

/// `--idle-timeout`'s default, seconds: three times the longest interval of the clients
/// that keep a connection open (gmetad's, collectd's and Munin's 300 s at most).
pub const DEFAULT_IDLE_TIMEOUT: u64 = 900;

impl Config {
    /// `--max-tcp-connections`, or its default.
    pub fn tcp_connections(&self) -> usize {
        self.max_tcp_connections
            .unwrap_or(self.max_connections / 2)
            .clamp(1, self.max_connections)
    }

    /// The address a client on this machine should use: the first unix socket, else the
    /// first TCP address (recorded in the store, named in placeholders).
    pub fn client_address(&self) -> Option<String> {
        self.listen
            .iter()
            .find(|l| matches!(l.addr, Addr::Unix(_)))
            .or(self.listen.first())
            .map(|l| l.addr.to_string())
    }
}

pub const HELP: &str = "\
usage: ringlet serve [options]

A drop-in replacement for rrdcached: point collectd, Ganglia, Munin, Cacti or
`rrdtool --daemon` at it. Updates are kept in memory and committed to the store in one
fsynced write every -w seconds (the loss window); FLUSH makes a file durable at once.

Files under -b: the store holds the data. Each series gets a small placeholder at its
path (a few lines of text naming the store and this daemon's address), so clients that
stat() a file before creating it keep working; tools that open it get an error, never
old numbers. A real .rrd file found there is imported, then moved to STORE/imported/
(its path under -b kept) and replaced by a placeholder. `ringlet export DIR` writes
real .rrd files.

The `ringlet` CLI on the same store (or given --daemon / $RRDCACHED_ADDRESS) runs its
commands in this daemon (the RUN request) and prints what it prints alone; the daemon
records its address in STORE/daemon while it runs.

rrdcached options (same meaning unless noted):
  -l ADDR        listen on ADDR: unix:/path, /path, host, host:port, [v6]:port
                 (repeatable; default unix:/tmp/rrdcached.sock; TCP port default 42217)
  -L             listen on all interfaces, TCP port 42217
  -s GROUP       group of the following unix sockets
  -m MODE        octal mode of the following unix sockets
  -P CMD[,CMD]   commands allowed on the following sockets (HELP and QUIT always are)
  -b DIR         base directory: relative names are under it
  -B             refuse names outside the base directory
  -R             CREATE may create directories (accepted; ringlet needs none)
  -O             CREATE never overwrites an existing RRD
  -w SECS        commit interval = loss window (default 300; 5m, 1h, 1d... as rrdcached)
  -z SECS        write jitter (accepted, unused: ringlet writes one commit for all)
  -f SECS        idle sweep interval (accepted, unused)
  -t N           writer threads (accepted, unused: one sequential commit writer)
  -j DIR         journal directory (accepted, unused: the store's log is the journal)
  -F             always write a checkpoint at shutdown, so the next start replays no log
                 (ringlet always commits everything at shutdown; without -F it writes
                 one only when the log since the last would slow the next start, or
                 the one-shot commands run while it is down (past 8,192 series-records)
                 and is eight times the checkpoint)
  -p FILE        pid file
  -g             stay in the foreground
  -o FILE        log to FILE
  -V LEVEL       log level (accepted)
  -G GROUP, -U USER  drop privileges after binding
  -a N           allocation chunk (accepted, unused)

ringlet options:
  --defaults FILE        read options from FILE, an /etc/default file in the syntax of
                         Debian's /etc/default/rrdcached (WRITE_TIMEOUT, WRITE_JITTER,
                         WRITE_THREADS, BASE_PATH, JOURNAL_PATH, PIDFILE, SOCKFILE,
                         SOCKGROUP, SOCKMODE, DAEMON_USER, DAEMON_GROUP, NETWORK_OPTIONS,
                         BASE_OPTIONS) and ringlet's STORE and RINGLET_OPTIONS; the
                         command line's options come after them
  --store DIR            store directory (default: $RINGLET_STORE, else /var/lib/ringlet
                         as root, else $XDG_DATA_HOME/ringlet or ~/.local/share/ringlet)
  --commit-interval SECS same as -w
  --max-line BYTES       longest request line (default 1048576; rrdcached: 8191)
  --max-connections N    rrdcached connections at once, over all sockets (default
                         4096); past it a new one gets `-1 Too many connections`
  --max-tcp-connections N  of those, on TCP sockets (default half of --max-connections):
                         clients on the network cannot take the unix sockets' slots
  --idle-timeout SECS    close a TCP connection (rrdcached's, carbon's) that sends
                         nothing for SECS (default 900; 0: never; 5m, 1h as -w). Unix
                         sockets have none. librrd, collectd and gmetad reconnect
  --carbon-max-connections N  carbon connections at once, plaintext and pickle TCP
                         together (default 1024); past it a new one is closed
  --queue-limit BYTES    queued update text that starts a commit before -w is up
                         (default 268435456): bounds the memory the queues take
  --log-size SIZE        log ring size when the store is created (default 64M, or
                         $RINGLET_LOG_SIZE): a larger ring means rarer checkpoints
  --log-per-series SIZE  ring a series is given (default 2k, or $RINGLET_LOG_PER_SERIES):
                         once the series outgrow the ring it is replaced by one 1.5 times
                         their share (a million series: 2-3G); 0 keeps it. Replay
                         after a crash reads up to 7/8 of the ring
  --spill SIZE           archive rows sealed since the last checkpoint held in memory
                         before they are written to segment files (default an eighth
                         of the log ring, 16M to 64M, or $RINGLET_SPILL; 0: at
                         checkpoints only)
  --view [DIR]           mount a live view at DIR: every series as a .rrd file at its
                         name, byte for byte what rrdtool would hold, for tools that
                         open files themselves (rrdtool info/dump/fetch/graph without
                         --daemon, python3-rrdtool, backups). A file written whole
                         there (rrdtool create, restore -f, cp) becomes the series,
                         rrdtool tune changes it, rm removes it, mv renames it; rows
                         written in place are refused. A bare --view mounts over -b,
                         so every path clients already use shows live files (the
                         placeholders stay beneath, for when the view is not there).
                         Needs root and /dev/fuse; without them the daemon serves its
                         sockets and logs why. Unmounted at exit; a stale mount left by
                         a daemon that died is removed at start
  --phpfina DIR          emoncms's PHPFina directory (/var/lib/phpfina) as a view:
                         emoncms keeps writing <id>.meta and <id>.dat there, and the
                         store holds them, written to the disk once a window (-w)
                         instead of at every point; byte for byte what a plain
                         directory would hold. Other files pass through to DIR. The
                         feeds show on the web page and /render as emoncms.<id>. Needs
                         root and /dev/fuse, as --view; with -U www-data emoncms can
                         write there. `ringlet export phpfina DIR` writes the files back
  --phptimeseries DIR    emoncms's PHPTimeSeries directory (/var/lib/phptimeseries) as
                         a view, as --phpfina: feed_<id>.MYD files held by the store
  --carbon ADDR          take carbon's plaintext protocol (`path value timestamp`
                         lines) on TCP and UDP at ADDR (host:port, or a port:
                         loopback; default port 2003). Path a.b.c is the series
                         a/b/c.rrd; a new one gets its archives from carbon's
                         storage-schemas.conf and storage-aggregation.conf
  --carbon-pickle ADDR   take carbon's pickle protocol (a 4-byte length, a pickled list
                         of (path, (timestamp, value)); nothing in it is run; 1 MiB
                         at most) on TCP at ADDR (default port 2004)
  --graphite-conf DIR    where those two files are (default: built-in ones,
                         10s:1d,1m:7d,10m:5y; docs/PROTOCOL.md, Carbon)
  --http ADDR            serve graphite-web's API (/render, /metrics/find, ...: what
                         Grafana's Graphite data source calls) at ADDR (host:port, or
                         a port: loopback; default port 8080). Every series is a path:
                         a/b/c.rrd with one data source named value is a.b.c, else each
                         data source d is a.b.c.d; and a web page at / to find,
                         chart and compare series and see the disk's write load
                         (open http://ADDR/ in a browser)
  --http-max-connections N  HTTP connections at once (default 512); when all are
                         taken, the one waiting longest on a slow client is closed
                         to let a new one in. A request's head must come within 10 s
                         and 64 KiB, its body (a Content-Length up to 1 MiB) within
                         30 s, and its whole reply be taken within 30 s; the replies
                         being sent hold at most 1 GiB (past it, 503 Retry-After: 5)
  --http-workers N       HTTP requests worked on at once (default 4)
  -h, --help             this text

Graphs (ringlet graph beside the daemon, RUN draw) are drawn here by librrd (librrd8), in a
drawing process for each client connection (32 at most; past them the client draws
itself), one started ahead. It reads no file but fonts and locale data, writes none, and
has 2 GiB and 30 s of CPU and of wall-clock time a graph. Refused: a DEF's rrd= or daemon=
key, a NUL byte, a TZ naming a file, a side above 10000 pixels, an area above 16 million
(zoom included). A DEF reads at most 8388608 values, an image is at most 64 MiB, both
within the read budget; under -B a DEF names a series inside the base directory.
";

/// rrdcached's durations: a positive number with an optional suffix (`5m`, `1h`, `2d`, `1w`,
/// `1M`, `1y`), refused with its texts.
fn duration(what: &str, v: &str) -> Result<u64, String> {
    let digits = v.chars().take_while(char::is_ascii_digit).count();
    let (n, suffix) = v.split_at(digits);
    let Ok(n) = n.parse::<u64>() else {
        return Err(format!(
            "Invalid {what} {v}: value must be (suffixed) positive number"
        ));
    };
    let unit = match suffix {
        "" | "s" => 1,
        "m" => 60,
        "h" => 3600,
        "d" => 86_400,
        "w" => 7 * 86_400,
        "M" => 31 * 86_400,
        "y" => 366 * 86_400,
        _ => return Err(format!("Invalid {what} {v}: value has trailing garbage")),
    };
    if n == 0 {
        return Err(format!("Invalid {what} {v}: value must be positive"));
    }
    Ok(n.saturating_mul(unit))
}

/// `--http`'s default port (graphite-web's development server's).
pub const HTTP_PORT: u16 = 8080;

/// The port carbon's plaintext protocol listens on by default (carbon's own, 2003).
pub const CARBON_PORT: u16 = 2003;

/// The port carbon's pickle protocol listens on by default (carbon's own, 2004).
pub const PICKLE_PORT: u16 = 2004;

/// `--carbon`'s address: `host:port`, `[v6]:port`, `host` (port 2003) or `:port` and `port`
/// (loopback: carbon is reached from elsewhere only when asked for).
pub fn carbon_addr(s: &str) -> Result<std::net::SocketAddr, String> {
    listen_addr(s, CARBON_PORT)
}

/// A TCP address to listen on: `host:port`, `[v6]:port`, `host` (port `default`), or
/// `:port` and `port` alone (on 127.0.0.1).
pub fn listen_addr(s: &str, default: u16) -> Result<std::net::SocketAddr, String> {
    use std::net::ToSocketAddrs;
    let bad = || format!("invalid address '{s}' (host:port, or a port)");
    let full = if let Ok(port) = s.trim_start_matches(':').parse::<u16>() {
        format!("127.0.0.1:{port}")
    } else if s.starts_with('[') && s.ends_with(']') || !s.contains(':') {
        format!("{s}:{default}")
    } else {
        s.to_string()
    };
    full.to_socket_addrs()
        .map_err(|e| format!("{}: {e}", bad()))?
        .next()
        .ok_or_else(bad)
}

fn parse_perms(s: &str) -> Result<Vec<usize>, String> {
    let mut out = Vec::new();
    for name in s.split([',', ' ']).filter(|n| !n.is_empty()) {
        let spec = proto::find(name).ok_or(format!("invalid command name '{name}' in -P"))?;
        out.push(proto::table::index_of(spec));
    }
    Ok(out)
}

/// An error of the option reader as a line for the user.
fn lexopt_error(e: lexopt::Error) -> String {
    match e {
        lexopt::Error::UnexpectedValue { option, value } => {
            format!(
                "option {option} takes no value ('{}')",
                value.to_string_lossy()
            )
        }
        e => e.to_string(),
    }
}

/// Parse `ringlet serve`'s arguments. `Err("")` means: print the help text and exit 0.
/// The options an /etc/default file gives (`--defaults FILE`): Debian's rrdcached variables
/// (its init script's mapping: WRITE_TIMEOUT is -w, SOCKFILE with SOCKGROUP and SOCKMODE is
/// `-s G -m M -l unix:F`, ...) and ringlet's STORE and RINGLET_OPTIONS. The file is read as
/// shell assignments (`KEY=value`, `KEY="..."`, `KEY='...'`, `export KEY=...`, comments);
/// an unset or empty variable gives nothing; `$` expansions are refused.
pub fn defaults_args(text: &str) -> Result<Vec<String>, String> {
    let vars = shell_vars(text)?;
    let get = |k: &str| vars.get(k).filter(|v| !v.is_empty()).cloned();
    let mut out: Vec<String> = Vec::new();
    let pair = |flag: &str, key: &str, out: &mut Vec<String>| {
        if let Some(v) = get(key) {
            out.push(flag.to_string());
            out.push(v);
        }
    };
    pair("-w", "WRITE_TIMEOUT", &mut out);
    pair("-z", "WRITE_JITTER", &mut out);
    pair("-t", "WRITE_THREADS", &mut out);
    pair("-b", "BASE_PATH", &mut out);
    pair("-j", "JOURNAL_PATH", &mut out);
    pair("-p", "PIDFILE", &mut out);
    pair("-G", "DAEMON_GROUP", &mut out);
    pair("-U", "DAEMON_USER", &mut out);
    pair("--store", "STORE", &mut out);
    if let Some(sock) = get("SOCKFILE") {
        pair("-s", "SOCKGROUP", &mut out);
        pair("-m", "SOCKMODE", &mut out);
        out.push("-l".into());
        out.push(format!("unix:{sock}"));
    }
    for key in ["NETWORK_OPTIONS", "BASE_OPTIONS", "RINGLET_OPTIONS"] {
        if let Some(v) = get(key) {
            out.extend(v.split_whitespace().map(str::to_string));
        }
    }
    Ok(out)
}

/// The variables a defaults file sets (as [`defaults_args`] reads them), empty ones too.
pub fn defaults_vars(text: &str) -> Result<std::collections::HashMap<String, String>, String> {
    shell_vars(text)
}

/// The variables a file of shell assignments sets.
fn shell_vars(text: &str) -> Result<std::collections::HashMap<String, String>, String> {
    let mut vars = std::collections::HashMap::new();
    for (n, line) in text.lines().enumerate() {
        let at = |what: &str| format!("line {}: {what}", n + 1);
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let line = line.strip_prefix("export ").unwrap_or(line).trim_start();
        let Some((key, rest)) = line.split_once('=') else {
            return Err(at("not KEY=VALUE"));
        };
        if key.is_empty() || !key.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_') {
            return Err(at(&format!("'{key}' is not a variable name")));
        }
        let mut value = String::new();
        let mut chars = rest.chars().peekable();
        while let Some(c) = chars.next() {
            match c {
                '"' | '\'' => {
                    // As sh reads them: nothing is special inside '...'; inside "..." `$` and
                    // backticks expand (refused here, as outside quotes) and a backslash
                    // keeps the next $ ` " \ as itself.
                    let mut closed = false;
                    while let Some(d) = chars.next() {
                        if d == c {
                            closed = true;
                            break;
                        }
                        if c == '"' {
                            match d {
                                '$' | '`' => {
                                    return Err(at(
                                        "$ and `...` expansions are not read; write the value out",
                                    ))
                                }
                                '\\' if matches!(chars.peek(), Some('$' | '`' | '"' | '\\')) => {
                                    value.extend(chars.next());
                                    continue;
                                }
                                _ => {}
                            }
                        }
                        value.push(d);
                    }
                    if !closed {
                        return Err(at("an unclosed quote"));
                    }
                }
                '$' | '`' => {
                    return Err(at(
                        "$ and `...` expansions are not read; write the value out",
                    ))
                }
                // Outside quotes a backslash keeps the next character as itself.
                '\\' => value.extend(chars.next()),
                '#' if value.is_empty() => break,
                c if c.is_whitespace() => {
                    // A comment may follow; anything else does not belong to the value.
                    let rest: String = chars.collect();
                    if !rest.trim_start().is_empty() && !rest.trim_start().starts_with('#') {
                        return Err(at("a value with spaces must be quoted"));
                    }
                    break;
                }
                c => value.push(c),
            }
        }
        vars.insert(key.to_string(), value);
    }
    Ok(vars)
}

/// The command line with each `--defaults FILE` replaced by the options FILE gives.
fn expand_defaults(args: &[String]) -> Result<Vec<String>, String> {
    let mut out = Vec::with_capacity(args.len());
    let mut it = args.iter();
    while let Some(a) = it.next() {
        let file = match a.strip_prefix("--defaults=") {
            Some(f) => f.to_string(),
            None if a == "--defaults" => it
                .next()
                .cloned()
                .ok_or("--defaults needs a file (see ringlet serve --help)")?,
            None => {
                out.push(a.clone());
                continue;
            }
        };
        let text = std::fs::read_to_string(&file).map_err(|e| format!("--defaults {file}: {e}"))?;
        let mut given = defaults_args(&text).map_err(|e| format!("--defaults {file}: {e}"))?;
        // The file's options first: the command line's own come after and win.
        given.append(&mut out);
        out = given;
    }
    Ok(out)
}

pub fn parse(args: &[String]) -> Result<Config, String> {
    let args = &expand_defaults(args)?;
    let mut c = Config {
        listen: Vec::new(),
        base: None,
        restrict_base: false,
        recursive_create: false,
        no_overwrite: false,
        commit_interval: 300,
        flush_interval: 3600,
        flush_on_shutdown: false,
        pid_file: None,
        foreground: false,
        log_file: None,
        group: None,
        user: None,
        store: None,
        max_line: 1 << 20,
        max_connections: 4096,
        max_tcp_connections: None,
        idle_timeout: Some(std::time::Duration::from_secs(DEFAULT_IDLE_TIMEOUT)),
        carbon_connections: 1024,
        http_connections: 512,
        http_workers: 4,
        log_size: None,
        log_per_series: None,
        spill: None,
        queue_limit: 256 << 20,
        carbon: Vec::new(),
        graphite_conf: None,
        carbon_pickle: Vec::new(),
        http: Vec::new(),
        view: None,
        phpfina: None,
        phptimeseries: None,
    };
    let (mut perms, mut sock_group, mut sock_mode) = (None, None, None);
    let mut p = lexopt::Parser::from_args(args.iter().cloned());
    while let Some(arg) = p.next().map_err(lexopt_error)? {
        let flag = match &arg {
            Short(ch) => format!("-{ch}"),
            Long(name) => format!("--{name}"),
            Value(v) => {
                let v = v.to_string_lossy();
                return Err(format!("unknown option '{v}' (see ringlet serve --help)"));
            }
        };
        let mut value = || -> Result<String, String> {
            match p.value() {
                Ok(v) => v
                    .into_string()
                    .map_err(|v| format!("option {flag}: not UTF-8: {}", v.to_string_lossy())),
                Err(_) => Err(format!("option {flag} needs a value")),
            }
        };
        let num = |v: String| {
            v.parse::<u64>()
                .map_err(|_| format!("option {flag}: invalid number '{v}'"))
        };
        match flag.as_str() {
            "-h" | "--help" => return Err(String::new()),
            "-l" => c.listen.push(Listen {
                addr: parse_addr(&value()?)?,
                allowed: perms.clone(),
                group: sock_group.clone(),
                mode: sock_mode,
            }),
            "-L" => c.listen.push(Listen {
                addr: Addr::Tcp(String::new(), DEFAULT_PORT),
                allowed: perms.clone(),
                group: None,
                mode: None,
            }),
            "-s" => sock_group = Some(value()?),
            "-m" => {
                let v = value()?;
                sock_mode = Some(
                    u32::from_str_radix(&v, 8).map_err(|_| format!("invalid file mode '{v}'"))?,
                );
            }
            "-P" => perms = Some(parse_perms(&value()?)?),
            "-b" => c.base = Some(PathBuf::from(value()?)),
            "-B" => c.restrict_base = true,
            "-R" => c.recursive_create = true,
            "-O" => c.no_overwrite = true,
            "-w" | "--commit-interval" => {
                c.commit_interval = duration("write interval", &value()?)?;
            }
            "-z" => {
                duration("write delay", &value()?)?;
            }
            "-t" | "-a" => {
                num(value()?)?;
            }
            "-f" => c.flush_interval = duration("flush interval", &value()?)?,
            "-j" | "-V" => {
                value()?;
            }
            "-F" => c.flush_on_shutdown = true,
            "-p" => c.pid_file = Some(PathBuf::from(value()?)),
            "-g" => c.foreground = true,
            "-o" => c.log_file = Some(PathBuf::from(value()?)),
            "-G" => c.group = Some(value()?),
            "-U" => c.user = Some(value()?),
            "--store" => c.store = Some(PathBuf::from(value()?)),
            "--max-line" => c.max_line = num(value()?)?.max(64) as usize,
            "--log-size" => c.log_size = Some(engine::parse_size(&value()?)?),
            "--log-per-series" => c.log_per_series = Some(engine::parse_any_size(&value()?)?),
            "--spill" => c.spill = Some(engine::parse_any_size(&value()?)?),
            "--queue-limit" => c.queue_limit = num(value()?)?.max(1),
            "--max-connections" => c.max_connections = num(value()?)?.max(1) as usize,
            "--max-tcp-connections" => c.max_tcp_connections = Some(num(value()?)?.max(1) as usize),
            "--idle-timeout" => {
                let v = value()?;
                c.idle_timeout = match v.as_str() {
                    "0" => None,
                    v => Some(std::time::Duration::from_secs(duration("idle timeout", v)?)),
                };
            }
            "--carbon-max-connections" => c.carbon_connections = num(value()?)?.max(1) as usize,
            "--http-max-connections" => c.http_connections = num(value()?)?.max(1) as usize,
            "--http-workers" => c.http_workers = num(value()?)?.max(1) as usize,
            "--carbon" => c.carbon.push(carbon_addr(&value()?)?),
            "--carbon-pickle" => c.carbon_pickle.push(listen_addr(&value()?, PICKLE_PORT)?),
            "--graphite-conf" => c.graphite_conf = Some(PathBuf::from(value()?)),
            "--http" => c.http.push(listen_addr(&value()?, HTTP_PORT)?),
            "--phpfina" => c.phpfina = Some(PathBuf::from(value()?)),
            "--phptimeseries" => c.phptimeseries = Some(PathBuf::from(value()?)),
            // An optional value: `--view=DIR`, `--view DIR`, or `--view` alone.
            "--view" => {
                let dir = match p.optional_value() {
                    Some(v) => Some(v),
                    None => p
                        .raw_args()
                        .map_err(|e| e.to_string())?
                        .next_if(|v| !v.to_string_lossy().starts_with('-')),
                };
                c.view = Some(dir.map(PathBuf::from));
            }
            _ => {
                return Err(format!(
                    "unknown option '{flag}' (see ringlet serve --help)"
                ))
            }
        }
    }
    if c.listen.is_empty() {
        c.listen.push(Listen {
            addr: Addr::Unix(PathBuf::from(DEFAULT_SOCKET)),
            allowed: perms,
            group: sock_group,
            mode: sock_mode,
        });
    }
    Ok(c)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(s: &str) -> Vec<String> {
        s.split_whitespace().map(String::from).collect()
    }

    #[test]
    fn a_flag_of_a_character_of_several_bytes_is_refused_not_cut() {
        for a in ["-\u{e9}", "-\u{e9}300", "-\u{1f600}x"] {
            let e = parse(&args(a)).map(|_| ()).unwrap_err();
            assert!(e.contains('-'), "{a}: {e}");
        }
    }

    #[test]
    fn default_is_the_rrdcached_socket() {
        let c = parse(&[]).unwrap();
        assert_eq!(
            c.listen[0].addr,
            Addr::Unix(PathBuf::from("/tmp/rrdcached.sock"))
        );
        assert_eq!(c.commit_interval, 300);
    }

    #[test]
    fn addresses_parse_like_rrdcached() {
        assert_eq!(
            parse_addr("unix:/run/x.sock").unwrap(),
            Addr::Unix("/run/x.sock".into())
        );
        assert_eq!(
            parse_addr("/run/x.sock").unwrap(),
            Addr::Unix("/run/x.sock".into())
        );
        assert_eq!(
            parse_addr("127.0.0.1").unwrap(),
            Addr::Tcp("127.0.0.1".into(), 42217)
        );
        assert_eq!(
            parse_addr("127.0.0.1:4000").unwrap(),
            Addr::Tcp("127.0.0.1".into(), 4000)
        );
        assert_eq!(
            parse_addr("[::1]:4000").unwrap(),
            Addr::Tcp("::1".into(), 4000)
        );
        assert_eq!(parse_addr("[::1]").unwrap(), Addr::Tcp("::1".into(), 42217));
        assert!(parse_addr("127.0.0.1:http").is_err());
    }

    #[test]
    fn permissions_apply_to_following_sockets() {
        let c = parse(&args("-l unix:/a -P FLUSH,PENDING -l unix:/b -w 60 -g")).unwrap();
        assert_eq!(c.listen[0].allowed, None);
        assert_eq!(c.listen[1].allowed, Some(vec![2, 4]));
        assert_eq!(c.commit_interval, 60);
        assert!(c.foreground);
    }

    #[test]
    fn unknown_permission_names_are_refused() {
        assert!(parse(&args("-P FLUSH,BOGUS"))
            .unwrap_err()
            .contains("BOGUS"));
    }

    #[test]
    fn inline_values_and_long_options() {
        let c = parse(&args("-gB -b /tmp/x")).unwrap();
        assert!(
            c.foreground && c.restrict_base,
            "-gB is -g -B, as getopt has it"
        );
        let c = parse(&args("-gBRw60 -Ol/tmp/y -P FLUSH -b -dir")).unwrap();
        assert!(c.foreground && c.restrict_base && c.recursive_create && c.no_overwrite);
        assert_eq!(c.commit_interval, 60);
        assert_eq!(c.listen[0].addr, Addr::Unix(PathBuf::from("/tmp/y")));
        assert_eq!(
            c.base,
            Some(PathBuf::from("-dir")),
            "a value may start with -"
        );
        assert!(parse(&args("-gX")).unwrap_err().contains("'-X'"));
        let c = parse(&args("-w120 --store=/tmp/s -m 0660 -l /x")).unwrap();
        assert_eq!(c.commit_interval, 120);
        assert_eq!(c.store, Some(PathBuf::from("/tmp/s")));
        assert_eq!(c.listen[0].mode, Some(0o660));
    }

    #[test]
    fn an_etc_default_file_gives_rrdcacheds_options() {
        // Debian 12's /etc/default/rrdcached, as shipped (comments cut), with two set.
        let debian = "# /etc/default file for RRD cache daemon\n\
            DAEMON=/usr/bin/rrdcached\n#WRITE_TIMEOUT=300\nWRITE_TIMEOUT=600\n\
            BASE_PATH=/var/lib/rrdcached/db/\nJOURNAL_PATH=/var/lib/rrdcached/journal/\n\
            PIDFILE=/var/run/rrdcached.pid\nSOCKFILE=/var/run/rrdcached.sock\n\
            SOCKGROUP=_rrdcached\n#SOCKMODE=0660\nNETWORK_OPTIONS=\"-l 127.0.0.1:42217\"\n\
            BASE_OPTIONS=\"-B\"  # refuse names outside -b\nexport STORE='/srv/ringlet'\n";
        assert_eq!(
            defaults_args(debian).unwrap(),
            [
                "-w",
                "600",
                "-b",
                "/var/lib/rrdcached/db/",
                "-j",
                "/var/lib/rrdcached/journal/",
                "-p",
                "/var/run/rrdcached.pid",
                "--store",
                "/srv/ringlet",
                "-s",
                "_rrdcached",
                "-l",
                "unix:/var/run/rrdcached.sock",
                "-l",
                "127.0.0.1:42217",
                "-B",
            ]
        );
        for bad in [
            "WRITE_TIMEOUT=$W",
            "X=\"open",
            "X=a b",
            "no equals",
            "A-B=1",
            // sh runs these: refused, never taken literally.
            "BASE_PATH=\"`touch x`\"",
            "BASE_PATH=`touch x`",
            "BASE_PATH=\"$(touch x)\"",
            "BASE_PATH=\"a${B}\"",
        ] {
            assert!(defaults_args(bad).is_err(), "{bad}");
        }
        // Backslashes as sh reads them; nothing is special inside single quotes.
        for (file, value) in [
            ("BASE_PATH=\"/a\\$b\"", "/a$b"),
            ("BASE_PATH=\"/a\\`b\"", "/a`b"),
            ("BASE_PATH=\"/a\\x\"", "/a\\x"),
            ("BASE_PATH=/a\\ b", "/a b"),
            ("BASE_PATH='/a`b$c'", "/a`b$c"),
        ] {
            assert_eq!(defaults_args(file).unwrap(), ["-b", value], "{file}");
        }
        assert_eq!(
            defaults_args("WRITE_TIMEOUT=\n# c\n").unwrap(),
            Vec::<String>::new()
        );
        // The file's options first; the command line's after them (they win).
        let dir = std::env::temp_dir().join(format!("ringlet-defaults-{}", std::process::id()));
        std::fs::write(&dir, "WRITE_TIMEOUT=600\nSOCKFILE=/run/a.sock\n").unwrap();
        let args: Vec<String> = ["-w", "30", "--defaults", dir.to_str().unwrap(), "-B"]
            .iter()
            .map(|s| s.to_string())
            .collect();
        let c = parse(&args).unwrap();
        let _ = std::fs::remove_file(&dir);
        assert_eq!(c.commit_interval, 30);
        assert!(c.restrict_base);
        assert_eq!(c.listen.len(), 1);
        assert!(parse(&["--defaults".to_string()]).is_err());
        assert!(parse(&["--defaults=/nonexistent/x".to_string()])
            .unwrap_err()
            .contains("/nonexistent/x"));
    }

    #[test]
    fn view_takes_an_optional_value_and_missing_values_are_named() {
        let view = |a: &str| parse(&args(a)).unwrap().view;
        assert_eq!(view("--view"), Some(None));
        assert_eq!(view("--view -g"), Some(None));
        assert_eq!(view("--view /v -g"), Some(Some(PathBuf::from("/v"))));
        assert_eq!(view("--view=/v"), Some(Some(PathBuf::from("/v"))));
        assert_eq!(view("-g"), None);
        assert_eq!(parse(&args("-b")).unwrap_err(), "option -b needs a value");
        assert_eq!(
            parse(&args("--store")).unwrap_err(),
            "option --store needs a value"
        );
        let e = parse(&args("-g=1")).unwrap_err();
        assert!(e.contains("-g") && e.contains("value"), "{e}");
        assert!(parse(&args("stray")).unwrap_err().contains("'stray'"));
        assert!(parse(&args("--max-line x")).unwrap_err().contains("'x'"));
    }

    #[test]
    fn durations_take_rrdcacheds_suffixes_and_texts() {
        let c = parse(&args("-w 5m -f 2h -z 1d")).unwrap();
        assert_eq!((c.commit_interval, c.flush_interval), (300, 7200));
        assert_eq!(
            parse(&args("-w 0")).unwrap_err(),
            "Invalid write interval 0: value must be positive"
        );
        assert_eq!(
            parse(&args("-w 10x")).unwrap_err(),
            "Invalid write interval 10x: value has trailing garbage"
        );
        assert_eq!(
            parse(&args("-f -5")).unwrap_err(),
            "Invalid flush interval -5: value must be (suffixed) positive number"
        );
    }
}
