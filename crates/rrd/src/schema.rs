//! The schema of an RRD: step, data sources and round-robin archives.
//!
//! Mirrors what `rrdtool create` accepts (see `rrdcreate(1)`), minus the Holt-Winters family,
//! which `create` refuses for now. A schema never changes after creation (tune is not
//! supported yet).

/// Data source type (`DST` in `rrdcreate(1)`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum DsType {
    Gauge,
    Counter,
    Derive,
    Absolute,
    DCounter,
    DDerive,
    Compute,
}

impl DsType {
    /// The name rrdtool prints (`info`, `dump`).
    pub fn name(self) -> &'static str {
        match self {
            DsType::Gauge => "GAUGE",
            DsType::Counter => "COUNTER",
            DsType::Derive => "DERIVE",
            DsType::Absolute => "ABSOLUTE",
            DsType::DCounter => "DCOUNTER",
            DsType::DDerive => "DDERIVE",
            DsType::Compute => "COMPUTE",
        }
    }

    pub fn from_name(s: &str) -> Option<DsType> {
        Some(match s {
            "GAUGE" => DsType::Gauge,
            "COUNTER" => DsType::Counter,
            "DERIVE" => DsType::Derive,
            "ABSOLUTE" => DsType::Absolute,
            "DCOUNTER" => DsType::DCounter,
            "DDERIVE" => DsType::DDerive,
            "COMPUTE" => DsType::Compute,
            _ => return None,
        })
    }
}

/// One data source. `heartbeat`, `min`, `max` are meaningless for COMPUTE, which has `rpn`.
#[derive(Debug, Clone, PartialEq)]
pub struct DsDef {
    /// 1..=19 characters of `[a-zA-Z0-9_]`.
    pub name: String,
    pub kind: DsType,
    /// Minimal heartbeat in seconds.
    pub heartbeat: u64,
    /// Lower bound of the rate, NaN for `U`.
    pub min: f64,
    /// Upper bound of the rate, NaN for `U`.
    pub max: f64,
    /// COMPUTE only: the RPN expression as rrdtool prints it back (`info`'s `cdef`).
    pub rpn: Option<String>,
}

/// Consolidation function of an archive.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Cf {
    Average,
    Min,
    Max,
    Last,
}

impl Cf {
    pub fn name(self) -> &'static str {
        match self {
            Cf::Average => "AVERAGE",
            Cf::Min => "MIN",
            Cf::Max => "MAX",
            Cf::Last => "LAST",
        }
    }

    pub fn from_name(s: &str) -> Option<Cf> {
        Some(match s {
            "AVERAGE" => Cf::Average,
            "MIN" => Cf::Min,
            "MAX" => Cf::Max,
            "LAST" => Cf::Last,
            _ => return None,
        })
    }
}

/// The Holt-Winters consolidation functions: rrdtool has them; ringlet refuses them (in
/// `create`, `restore` and `.rrd` import) until it can reproduce their results.
pub const HOLT_WINTERS: [&str; 6] = [
    "HWPREDICT",
    "MHWPREDICT",
    "SEASONAL",
    "DEVSEASONAL",
    "DEVPREDICT",
    "FAILURES",
];

/// One round-robin archive.
#[derive(Debug, Clone, PartialEq)]
pub struct RraDef {
    pub cf: Cf,
    /// X-files factor, 0 <= xff < 1.
    pub xff: f64,
    /// Primary data points per row (`steps`).
    pub pdp_cnt: u64,
    /// Rows kept.
    pub row_cnt: u64,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Schema {
    /// Seconds per primary data point.
    pub step: u64,
    pub ds: Vec<DsDef>,
    pub rra: Vec<RraDef>,
}

impl Schema {
    pub fn ds_index(&self, name: &str) -> Option<usize> {
        self.ds.iter().position(|d| d.name == name)
    }

    /// Indices of the DS that take input, in file order: rrdtool's default update template.
    pub fn input_ds(&self) -> impl Iterator<Item = usize> + '_ {
        self.ds
            .iter()
            .enumerate()
            .filter(|(_, d)| d.kind != DsType::Compute)
            .map(|(i, _)| i)
    }
}
