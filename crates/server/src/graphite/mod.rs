//! Graphite's read API over the store (`ringlet serve --http ADDR`): what Grafana's Graphite
//! data source and graphite-web's own clients call.
//!
//! - **Paths.** Every series is in Graphite's tree: `a/b/c.rrd` with one data source named
//!   `value` (what carbon's points make, [`crate::carbon`]) is the metric `a.b.c`; any other
//!   series shows each data source `d` as `a.b.c.d` (collectd's `host/load/load.rrd` is
//!   `host.load.load.shortterm`, ...). A dot inside a directory or file name (gmetad's host
//!   names) becomes `_`, as Graphite's clients do when they write. [`Index`] keeps the paths,
//!   sorted, rebuilt when series are created or removed.
//! - **Values.** A metric's points are its series' rows at the resolution rrdtool's fetch
//!   picks for the range (the archive of the data source's first CF, AVERAGE where there is
//!   one), each labelled by the start of its slot (rrdtool labels a row by its end), for the
//!   slots whisper returns for `from`/`until`: from the one after `from`'s to `until`'s.
//!   Values the daemon has accepted are applied first: a read sees them all.
//! - **Queries**: the `graphite` crate (globs, times, tags, the target language, the
//!   functions, graphite-web's formats: no daemon in it); here [`render`] (the store as its
//!   source) and [`http`] (the routes).
//!
//! graphite-web's behaviour is the reference (its source was read, not copied); where this
//! differs, docs/PROTOCOL.md ("Graphite's render API") says so.

pub mod http;
pub mod render;

// The language (crates/graphite), under the names the daemon's modules use.
pub use ::graphite::{format, functions, glob, series, tags, time};

use crate::daemon::Daemon;
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

/// Where a Graphite path's values are: a series and one of its data sources, or an emoncms
/// feed the store holds (`crate::feeds`, `series` its name).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Leaf {
    pub series: String,
    pub ds: usize,
    pub feed: bool,
}

/// Every path of the store, sorted.
#[derive(Default)]
pub struct Index {
    version: Option<((u64, usize), u64)>,
    pub leaves: Arc<BTreeMap<String, Leaf>>,
}

/// A name's component as a Graphite path component: dots (which separate components) become
/// underscores.
pub fn component(s: &str) -> String {
    s.replace('.', "_")
}

/// The Graphite paths of series `name` with data source names `ds`.
pub fn paths_of(name: &str, ds: &[String]) -> Vec<(String, usize)> {
    let base = name.strip_suffix(".rrd").unwrap_or(name);
    if let Some(tagged) = base.strip_prefix(tags::PREFIX) {
        // A tagged series: its canonical name (a data source other than `value` joins the
        // metric name).
        let Ok(t) = tags::parse(tagged) else {
            return Vec::new();
        };
        if ds.len() == 1 && ds[0] == "value" {
            return vec![(t.canonical(), 0)];
        }
        return ds
            .iter()
            .enumerate()
            .map(|(i, d)| {
                let mut u = t.clone();
                u.name = format!("{}.{}", t.name, component(d));
                (u.canonical(), i)
            })
            .collect();
    }
    let comps: Vec<String> = base
        .split('/')
        .filter(|c| !c.is_empty())
        .map(component)
        .collect();
    if comps.is_empty() {
        return Vec::new();
    }
    let path = comps.join(".");
    if ds.len() == 1 && ds[0] == "value" {
        return vec![(path, 0)];
    }
    ds.iter()
        .enumerate()
        .map(|(i, d)| (format!("{path}.{}", component(d)), i))
        .collect()
}

/// Graphite's side of the daemon.
pub struct Graphite {
    index: Mutex<Index>,
}

impl Default for Graphite {
    fn default() -> Self {
        Self::new()
    }
}

impl Graphite {
    pub fn new() -> Graphite {
        Graphite {
            index: Mutex::new(Index::default()),
        }
    }

    /// The paths as of now (rebuilt if series or feeds were created or removed since).
    pub fn leaves(&self, d: &Daemon) -> Arc<BTreeMap<String, Leaf>> {
        let version = {
            let inner = d.lock();
            (inner.names_version(), inner.blobs_version())
        };
        let mut ix = self.index.lock().unwrap_or_else(|p| p.into_inner());
        if ix.version == Some(version) {
            return ix.leaves.clone();
        }
        let mut leaves = BTreeMap::new();
        {
            let inner = d.lock();
            for name in inner.names() {
                let Some(schema) = inner.schema(&name) else {
                    continue;
                };
                let ds: Vec<String> = schema.ds.iter().map(|d| d.name.clone()).collect();
                for (p, i) in paths_of(&name, &ds) {
                    // Two names that read alike (a.b and a_b): the first keeps the path.
                    leaves.entry(p).or_insert(Leaf {
                        series: name.clone(),
                        ds: i,
                        feed: false,
                    });
                }
            }
            for f in crate::feeds::list(inner.blobs()) {
                let name = f.name();
                for (p, _) in paths_of(&name, &["value".to_string()]) {
                    leaves.entry(p).or_insert(Leaf {
                        series: name.clone(),
                        ds: 0,
                        feed: true,
                    });
                }
            }
        }
        ix.version = Some(version);
        ix.leaves = Arc::new(leaves);
        ix.leaves.clone()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_follow_the_tree_and_the_data_sources() {
        let ds = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        assert_eq!(
            paths_of("servers/web1/cpu.rrd", &ds(&["value"])),
            vec![("servers.web1.cpu".to_string(), 0)]
        );
        assert_eq!(
            paths_of("h/load/load.rrd", &ds(&["shortterm", "midterm"])),
            vec![
                ("h.load.load.shortterm".to_string(), 0),
                ("h.load.load.midterm".to_string(), 1)
            ]
        );
        assert_eq!(
            paths_of("c/node1.example.com/load_one.rrd", &ds(&["sum"])),
            vec![("c.node1_example_com.load_one.sum".to_string(), 0)]
        );
        assert_eq!(
            paths_of("/abs/x.rrd", &ds(&["value"]))[0].0,
            "abs.x".to_string()
        );
        assert_eq!(
            paths_of("_tagged/disk.used;dc=x;host=a.rrd", &ds(&["value"])),
            vec![("disk.used;dc=x;host=a".to_string(), 0)]
        );
    }
}

/// Fuzz-style checks of every parser a client's bytes reach (carbon's lines and pickles, the
/// render API's targets, times, patterns and forms): seeded random and mutated inputs, each
/// must give a value or an error, never a panic. (The long campaigns with cargo-fuzz belong to
/// the durability issue; this keeps every parser honest in every test run.)
#[cfg(test)]
mod fuzz {
    use testkit::Rng;

    /// `seeds` mutated: bytes flipped, cut, doubled, spliced with bytes of the alphabet.
    fn cases(seeds: &[&[u8]], alphabet: &[u8], n: usize, seed: u64) -> Vec<Vec<u8>> {
        let mut r = Rng::new(seed);
        let mut out = Vec::with_capacity(n);
        for _ in 0..n {
            let mut v = seeds[r.index(seeds.len())].to_vec();
            for _ in 0..1 + r.index(4) {
                let at = r.index(v.len() + 1);
                match r.index(5) {
                    0 if !v.is_empty() => {
                        let i = r.index(v.len());
                        v[i] = alphabet[r.index(alphabet.len())];
                    }
                    1 => v.truncate(at),
                    2 => {
                        let b = alphabet[r.index(alphabet.len())];
                        v.insert(at, b);
                    }
                    3 if !v.is_empty() => {
                        let i = r.index(v.len());
                        v[i] = r.next_u64() as u8;
                    }
                    _ => {
                        let tail = v[at..].to_vec();
                        v.extend_from_slice(&tail);
                    }
                }
            }
            out.push(v);
        }
        out
    }

    #[test]
    fn parsers_never_panic() {
        let text = |v: &[u8]| String::from_utf8_lossy(v).into_owned();
        let alpha = b"abc.*?[]{},()'\"=-+0123456789eE:;/\\ \t\n%_xXnN";
        for v in cases(
            &[
                b"sumSeries(a.{b,c}.*, 'x', k=1.5e3)",
                b"alias(scale(a.b,-0.5),\"n\")",
                b"summarize(a.b, '1h', func='max', alignToFrom=true)",
            ],
            alpha,
            20_000,
            1,
        ) {
            let _ = ::graphite::expr::parse(&text(&v));
        }
        for v in cases(&[b"a.{b,c}.d[0-9]*", b"x.y?.[!a-z]"], alpha, 20_000, 2) {
            if let Ok(p) = super::glob::Pattern::new(&text(&v)) {
                let _ = p.matches("a.b.d1");
                let _ = p.node_of("a.c.d7.e");
            }
        }
        for v in cases(
            &[
                b"-1d12h",
                b"04:00_20231114",
                b"noon yesterday+1h",
                b"11/14/23",
            ],
            alpha,
            20_000,
            3,
        ) {
            let _ = super::time::parse(&text(&v), 1_700_000_000);
        }
        for v in cases(&[b"target=a%2Bb+c&from=-1d&x"], alpha, 20_000, 4) {
            let _ = crate::httpd::form(&text(&v));
        }
        for v in cases(&[b"a.b.c 1.5 1700000000", b"x -2e3 -1"], alpha, 20_000, 5) {
            let t = text(&v);
            let _ = crate::carbon::parse_line(&t, 1.7e9);
            let _ = crate::carbon::name_of(&t);
        }
        let p2: &[u8] = b"\x80\x02]q\x00(X\x03\x00\x00\x00a.bq\x01J\x00\xf1SeG?\xf8\x00\x00\x00\x00\x00\x00\x86q\x02\x86q\x03X\x01\x00\x00\x00cq\x04J\n\xf1SeK\x02\x86q\x05\x86q\x06e.";
        let p0: &[u8] = b"(lp0\n(S'a'\np1\n(I10\nF2.5\ntp2\ntp3\na.";
        let ops: Vec<u8> = (0u8..=255).collect();
        for v in cases(&[p2, p0], &ops, 50_000, 6) {
            if let Ok(val) = proto::pickle::loads(&v) {
                let _ = proto::pickle::for_each_point(&val, 1024, |_| {});
                let _ = val.number();
            }
        }
    }
}
