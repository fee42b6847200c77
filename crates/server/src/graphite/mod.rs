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
//! - **Queries**: [`glob`] (Graphite's `*`, `?`, `[...]`, `{a,b}` per path component),
//!   [`time`] (`from`/`until` in Graphite's forms), [`expr`] (the target language) and
//!   [`functions`] (what Grafana's users lean on), [`render`] (json, csv, raw, pickle;
//!   `maxDataPoints` as graphite-web consolidates), [`http`] (the listener and the routes).
//!
//! graphite-web's behaviour is the reference (its source was read, not copied); where this
//! differs, docs/PROTOCOL.md ("Graphite's render API") says so.

pub mod expr;
pub mod functions;
pub mod glob;
pub mod http;
pub mod render;
pub mod time;

use crate::daemon::Daemon;
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

/// Where a Graphite path's values are: a series and one of its data sources.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Leaf {
    pub series: String,
    pub ds: usize,
}

/// Every path of the store, sorted.
#[derive(Default)]
pub struct Index {
    version: Option<(u64, usize)>,
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

    /// The paths as of now (rebuilt if series were created or removed since).
    pub fn leaves(&self, d: &Daemon) -> Arc<BTreeMap<String, Leaf>> {
        let version = d.lock().store.names_version();
        let mut ix = self.index.lock().unwrap_or_else(|p| p.into_inner());
        if ix.version == Some(version) {
            return ix.leaves.clone();
        }
        let mut leaves = BTreeMap::new();
        {
            let inner = d.lock();
            for name in inner.store.names() {
                let Some(rrd) = inner.store.get(&name) else {
                    continue;
                };
                let ds: Vec<String> = rrd.schema.ds.iter().map(|d| d.name.clone()).collect();
                for (p, i) in paths_of(&name, &ds) {
                    // Two names that read alike (a.b and a_b): the first keeps the path.
                    leaves.entry(p).or_insert(Leaf {
                        series: name.clone(),
                        ds: i,
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
    }
}
