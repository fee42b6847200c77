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

/// Consolidation function of an archive: the four that consolidate, and the Holt-Winters
/// family of aberrant-behaviour detection (rrdcreate(1)), each of one PDP a row.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Cf {
    Average,
    Min,
    Max,
    Last,
    /// Predictions of the additive Holt-Winters model.
    HwPredict,
    /// Predictions of the multiplicative model.
    MhwPredict,
    /// The seasonal coefficients (one season of rows).
    Seasonal,
    /// The seasonal deviations.
    DevSeasonal,
    /// The deviation predictions.
    DevPredict,
    /// 1 where the violations in the window reach the threshold, else 0.
    Failures,
}

impl Cf {
    pub fn name(self) -> &'static str {
        match self {
            Cf::Average => "AVERAGE",
            Cf::Min => "MIN",
            Cf::Max => "MAX",
            Cf::Last => "LAST",
            Cf::HwPredict => "HWPREDICT",
            Cf::MhwPredict => "MHWPREDICT",
            Cf::Seasonal => "SEASONAL",
            Cf::DevSeasonal => "DEVSEASONAL",
            Cf::DevPredict => "DEVPREDICT",
            Cf::Failures => "FAILURES",
        }
    }

    pub fn from_name(s: &str) -> Option<Cf> {
        Some(match s {
            "AVERAGE" => Cf::Average,
            "MIN" => Cf::Min,
            "MAX" => Cf::Max,
            "LAST" => Cf::Last,
            "HWPREDICT" => Cf::HwPredict,
            "MHWPREDICT" => Cf::MhwPredict,
            "SEASONAL" => Cf::Seasonal,
            "DEVSEASONAL" => Cf::DevSeasonal,
            "DEVPREDICT" => Cf::DevPredict,
            "FAILURES" => Cf::Failures,
            _ => return None,
        })
    }

    /// One of the Holt-Winters family.
    pub fn is_hw(self) -> bool {
        !matches!(self, Cf::Average | Cf::Min | Cf::Max | Cf::Last)
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
    /// rrdtool's parameters 1 to 5 (`par[1..=5]` of its `rra_def_t`) as their bits: the
    /// Holt-Winters archives' ([`RraDef::hw`]); 0 for the others.
    pub par: [u64; 5],
}

/// A Holt-Winters archive's parameters, by their meaning (rrdtool keeps them in numbered
/// slots whose meaning depends on the CF).
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct HwParams {
    /// HWPREDICT/MHWPREDICT: the intercept's smoothing (`alpha`).
    pub alpha: f64,
    /// HWPREDICT/MHWPREDICT: the slope's smoothing (`beta`).
    pub beta: f64,
    /// SEASONAL/DEVSEASONAL: the seasonal smoothing (`gamma`).
    pub gamma: f64,
    /// SEASONAL/DEVSEASONAL: the fraction of a season the smoother averages over.
    pub smoothing_window: f64,
    /// FAILURES: the bounds' widths in deviations above and below the prediction.
    pub delta_pos: f64,
    pub delta_neg: f64,
    /// The index of the archive this one depends on (see rrdcreate(1)).
    pub dependent: u64,
    /// HWPREDICT/MHWPREDICT: the season's length in rows.
    pub period: u64,
    /// SEASONAL/DEVSEASONAL: the row after which the smoother runs.
    pub smooth_idx: u64,
    /// FAILURES: the window's length and the violations in it that make a failure.
    pub window_len: u64,
    pub failure_threshold: u64,
    /// SEASONAL/DEVSEASONAL: its definition gave `smoothing-window=`, which makes rrdtool
    /// write a file of version 0004 (and then smooth with the archive's window, not 0.05),
    /// even for a window of 0.05 or 0, where the window alone does not tell. Kept in a slot
    /// rrdtool leaves 0 (par[5]); a `.rrd` file holds it as its version.
    pub asks_v4: bool,
}

impl RraDef {
    /// An archive of a consolidating CF (no Holt-Winters parameters).
    pub fn new(cf: Cf, xff: f64, pdp_cnt: u64, row_cnt: u64) -> RraDef {
        RraDef {
            cf,
            xff,
            pdp_cnt,
            row_cnt,
            par: [0; 5],
        }
    }

    /// The Holt-Winters parameters, read from rrdtool's slots by this archive's CF.
    pub fn hw(&self) -> HwParams {
        let f = |i: usize| f64::from_bits(self.par[i]);
        let hw = matches!(self.cf, Cf::HwPredict | Cf::MhwPredict);
        let seasonal = matches!(self.cf, Cf::Seasonal | Cf::DevSeasonal);
        let failures = self.cf == Cf::Failures;
        HwParams {
            alpha: if hw { f(0) } else { 0.0 },
            beta: if hw { f(1) } else { 0.0 },
            gamma: if seasonal { f(0) } else { 0.0 },
            smoothing_window: if seasonal { f(1) } else { 0.0 },
            delta_pos: if failures { f(0) } else { 0.0 },
            delta_neg: if failures { f(1) } else { 0.0 },
            dependent: self.par[2],
            // rrdtool keeps the period as a double.
            period: if hw { f(3) as u64 } else { 0 },
            smooth_idx: if seasonal { self.par[3] } else { 0 },
            window_len: if failures { self.par[3] } else { 0 },
            failure_threshold: if failures { self.par[4] } else { 0 },
            asks_v4: seasonal && self.par[4] == 1,
        }
    }

    /// Store Holt-Winters parameters in rrdtool's slots for this archive's CF.
    pub fn set_hw(&mut self, p: &HwParams) {
        match self.cf {
            Cf::HwPredict | Cf::MhwPredict => {
                self.par[0] = p.alpha.to_bits();
                self.par[1] = p.beta.to_bits();
                self.par[3] = (p.period as f64).to_bits();
            }
            Cf::Seasonal | Cf::DevSeasonal => {
                self.par[0] = p.gamma.to_bits();
                self.par[1] = p.smoothing_window.to_bits();
                self.par[3] = p.smooth_idx;
                self.par[4] = u64::from(p.asks_v4);
            }
            Cf::Failures => {
                self.par[0] = p.delta_pos.to_bits();
                self.par[1] = p.delta_neg.to_bits();
                self.par[3] = p.window_len;
                self.par[4] = p.failure_threshold;
            }
            _ => {}
        }
        if self.cf.is_hw() {
            self.par[2] = p.dependent;
        }
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct Schema {
    /// Seconds per primary data point.
    pub step: u64,
    pub ds: Vec<DsDef>,
    pub rra: Vec<RraDef>,
}

/// The longest time one row of an archive may span (steps x seconds), about 35,000 years;
/// and a whole archive, rows x that, at most 2^62 seconds: row times are computed in `i64`
/// seconds, and rrdtool's own arithmetic wraps past them.
pub const MAX_ROW_SPAN: u64 = 1 << 40;

impl Schema {
    /// Whether every archive's row span (`step` x steps) and whole span (x rows) stay within
    /// [`MAX_ROW_SPAN`] and 2^62 seconds, so that no time computed from them overflows. The
    /// readers of schemas (CREATE, `.rrd` files, XML dumps, checkpoints and log records)
    /// refuse one that does not.
    /// Whether the Holt-Winters archives hang together as update needs them: one PDP a
    /// row, each depending on an archive of the CF rrdtool's update reads there
    /// (HWPREDICT/MHWPREDICT on a SEASONAL, SEASONAL and DEVSEASONAL on a
    /// HWPREDICT/MHWPREDICT whose SEASONAL exists, DEVPREDICT and FAILURES on a DEVSEASONAL),
    /// and a FAILURES window rrdtool's CDP scratch holds (at most 28). rrdtool's create makes
    /// them so; a file or dump made otherwise is refused with this message.
    pub fn check_hw(&self) -> Result<(), String> {
        let cf_at = |i: u64| self.rra.get(i as usize).map(|r| r.cf);
        let predict = |c: Option<Cf>| matches!(c, Some(Cf::HwPredict | Cf::MhwPredict));
        for (i, r) in self.rra.iter().enumerate() {
            if !r.cf.is_hw() {
                continue;
            }
            let bad = |why: &str| {
                Err(format!(
                    "corrupt RRA definition: {} archive {i} {why}",
                    r.cf.name()
                ))
            };
            if r.pdp_cnt != 1 {
                return bad("has more than one PDP a row");
            }
            let d = r.par[2];
            let seasonal_of = |h: u64| {
                self.rra
                    .get(h as usize)
                    .is_some_and(|hw| cf_at(hw.par[2]) == Some(Cf::Seasonal))
            };
            let ok = match r.cf {
                Cf::HwPredict | Cf::MhwPredict => cf_at(d) == Some(Cf::Seasonal),
                Cf::Seasonal => predict(cf_at(d)),
                Cf::DevSeasonal => predict(cf_at(d)) && seasonal_of(d),
                _ => {
                    cf_at(d) == Some(Cf::DevSeasonal) && {
                        let h = self.rra[d as usize].par[2];
                        predict(cf_at(h)) && seasonal_of(h)
                    }
                }
            };
            if !ok {
                return bad("depends on no archive of the right type");
            }
            if r.cf == Cf::Failures && r.hw().window_len > 28 {
                return bad("has a window longer than 28");
            }
        }
        Ok(())
    }

    pub fn spans_fit(&self) -> bool {
        self.step <= MAX_ROW_SPAN
            && self.rra.iter().all(|r| {
                let span = u128::from(self.step) * u128::from(r.pdp_cnt);
                span <= u128::from(MAX_ROW_SPAN) && span * u128::from(r.row_cnt) <= 1 << 62
            })
    }

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

/// Schemas in use, by [`schema_hash`]: each held weakly, so a schema no RRD uses goes.
type Pool = std::collections::HashMap<u64, Vec<std::sync::Weak<Schema>>>;

static POOL: std::sync::Mutex<Option<(Pool, usize)>> = std::sync::Mutex::new(None);

/// One shared copy of each schema: a store of a million series of one schema holds it once.
/// Returns the copy already in use that is bit for bit the same as `s`, or `s` itself (then
/// the copy others get).
pub fn intern(s: &std::sync::Arc<Schema>) -> std::sync::Arc<Schema> {
    use std::sync::Arc;
    let h = schema_hash(s);
    let mut g = POOL.lock().unwrap_or_else(|p| p.into_inner());
    let (pool, sweep_at) = g.get_or_insert_with(|| (Pool::new(), 64));
    let bucket = pool.entry(h).or_default();
    bucket.retain(|w| w.strong_count() > 0);
    for w in bucket.iter() {
        if let Some(t) = w.upgrade() {
            if Arc::ptr_eq(&t, s) || same(&t, s) {
                return t;
            }
        }
    }
    bucket.push(Arc::downgrade(s));
    if pool.len() >= *sweep_at {
        pool.retain(|_, b| {
            b.retain(|w| w.strong_count() > 0);
            !b.is_empty()
        });
        *sweep_at = (pool.len() * 2).max(64);
    }
    s.clone()
}

/// A hash of every field, floats by their bits.
fn schema_hash(s: &Schema) -> u64 {
    use std::hash::{Hash, Hasher};
    let mut h = std::collections::hash_map::DefaultHasher::new();
    s.step.hash(&mut h);
    for d in &s.ds {
        (
            &d.name,
            d.kind,
            d.heartbeat,
            d.min.to_bits(),
            d.max.to_bits(),
            &d.rpn,
        )
            .hash(&mut h);
    }
    for r in &s.rra {
        (r.cf, r.xff.to_bits(), r.pdp_cnt, r.row_cnt).hash(&mut h);
    }
    h.finish()
}

/// Equal bit for bit (NaN bounds included, which `==` would call different).
fn same(a: &Schema, b: &Schema) -> bool {
    a.step == b.step
        && a.ds.len() == b.ds.len()
        && a.rra.len() == b.rra.len()
        && a.ds.iter().zip(&b.ds).all(|(x, y)| {
            x.name == y.name
                && x.kind == y.kind
                && x.heartbeat == y.heartbeat
                && x.min.to_bits() == y.min.to_bits()
                && x.max.to_bits() == y.max.to_bits()
                && x.rpn == y.rpn
        })
        && a.rra.iter().zip(&b.rra).all(|(x, y)| {
            x.cf == y.cf
                && x.xff.to_bits() == y.xff.to_bits()
                && x.pdp_cnt == y.pdp_cnt
                && x.row_cnt == y.row_cnt
        })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    fn schema(heartbeat: u64) -> Schema {
        Schema {
            step: 10,
            ds: vec![DsDef {
                name: "v".into(),
                kind: DsType::Gauge,
                heartbeat,
                min: f64::NAN,
                max: f64::NAN,
                rpn: None,
            }],
            rra: vec![RraDef {
                cf: Cf::Average,
                xff: 0.5,
                pdp_cnt: 1,
                row_cnt: 100,
                par: [0; 5],
            }],
        }
    }

    #[test]
    fn equal_schemas_share_one_copy_and_different_ones_do_not() {
        let a = intern(&Arc::new(schema(20)));
        let b = intern(&Arc::new(schema(20)));
        assert!(Arc::ptr_eq(&a, &b), "NaN bounds compare by their bits");
        let c = intern(&Arc::new(schema(21)));
        assert!(!Arc::ptr_eq(&a, &c));
        assert_eq!(c.ds[0].heartbeat, 21);
        // Once nothing holds it, a schema is not kept: the next one is a copy of its own.
        let weak = Arc::downgrade(&c);
        drop(c);
        assert_eq!(weak.strong_count(), 0);
        let d = intern(&Arc::new(schema(21)));
        assert_eq!(d.ds[0].heartbeat, 21);
    }
}
