//! Shared pieces of the benchmarks: a seeded generator of realistic monitoring series.
//!
//! Real monitoring data is not random floats: gauges carry two decimals and drift, counters
//! grow by roughly steady increments, many series are constant. Compression figures are only
//! meaningful on such data, so every benchmark draws its values from [`Series`].

/// The workloads' generator: SplitMix64 from its seed (`Rng::new(seed)`), so a workload is
/// the same for a seed on every machine.
pub use testkit::SplitMix as Rng;

/// [`Kind::Walk`]'s increments are uniform in `0..WALK_SPAN`: `log2(WALK_SPAN)` bits of
/// entropy a value.
pub const WALK_SPAN: u64 = 50_000;

/// The kind of a generated series, and the DS type it is stored as.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// A percentage-like gauge with two decimals, drifting.
    Gauge,
    /// An octet counter growing by a noisy rate.
    Counter,
    /// A gauge that never changes (disk size, memory total...).
    Constant,
    /// A counter whose increments are uniform in 0..50,000: about 15.6 bits of information a
    /// value, what issue 15's Munin and Cacti loads measure the record encoding against.
    Walk,
}

impl Kind {
    pub fn ds_type(self) -> &'static str {
        match self {
            Kind::Gauge | Kind::Constant => "GAUGE",
            Kind::Counter | Kind::Walk => "COUNTER",
        }
    }
}

/// One generated series: its kind and the state of its random walk.
#[derive(Debug, Clone)]
pub struct Series {
    pub kind: Kind,
    /// Gauge: value in hundredths. Counter: current count. Constant: the value.
    level: i64,
    /// Counter: mean increment per step.
    rate: i64,
}

impl Series {
    /// Series `i` of a workload: a third of each kind, deterministic from the seed.
    pub fn new(i: u64, rng: &mut Rng) -> Series {
        let kind = [Kind::Gauge, Kind::Counter, Kind::Constant][(i % 3) as usize];
        Series::with_kind(kind, rng)
    }

    /// A series of the given kind, its starting point drawn from `rng`.
    pub fn with_kind(kind: Kind, rng: &mut Rng) -> Series {
        match kind {
            Kind::Gauge => Series {
                kind: Kind::Gauge,
                level: rng.below(10_000) as i64,
                rate: 0,
            },
            Kind::Counter => Series {
                kind: Kind::Counter,
                level: rng.below(1 << 40) as i64,
                rate: 1 + rng.below(1_000_000) as i64,
            },
            Kind::Constant => Series {
                kind: Kind::Constant,
                level: rng.below(1 << 20) as i64,
                rate: 0,
            },
            Kind::Walk => Series {
                kind: Kind::Walk,
                level: rng.below(1 << 40) as i64,
                rate: 0,
            },
        }
    }

    /// The next value, as the client would send it.
    pub fn next_value(&mut self, rng: &mut Rng) -> String {
        match self.kind {
            Kind::Gauge => {
                let step = rng.below(201) as i64 - 100;
                self.level = (self.level + step).clamp(0, 10_000);
                format!("{}.{:02}", self.level / 100, self.level % 100)
            }
            Kind::Counter => {
                let jitter = rng.below(self.rate as u64 / 4 + 1) as i64;
                self.level += self.rate - self.rate / 8 + jitter;
                self.level.to_string()
            }
            Kind::Constant => self.level.to_string(),
            Kind::Walk => {
                self.level += rng.below(WALK_SPAN) as i64;
                self.level.to_string()
            }
        }
    }
}

/// Parse `90`, `15s`, `5m`, `6h`, `2d` into seconds.
pub fn parse_duration(s: &str) -> Result<u64, String> {
    let (num, unit) = s.split_at(s.find(|c: char| !c.is_ascii_digit()).unwrap_or(s.len()));
    let n: u64 = num.parse().map_err(|_| format!("bad duration '{s}'"))?;
    let mult = match unit {
        "" | "s" => 1,
        "m" => 60,
        "h" => 3600,
        "d" => 86400,
        _ => return Err(format!("bad duration unit in '{s}' (use s, m, h or d)")),
    };
    Ok(n * mult)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_parse_with_units() {
        assert_eq!(parse_duration("90"), Ok(90));
        assert_eq!(parse_duration("5m"), Ok(300));
        assert_eq!(parse_duration("6h"), Ok(21600));
        assert!(parse_duration("5x").is_err());
    }

    #[test]
    fn gauges_keep_two_decimals() {
        let mut rng = Rng::new(1);
        let mut s = Series::new(0, &mut rng);
        for _ in 0..100 {
            let v = s.next_value(&mut rng);
            let (_, frac) = v.split_once('.').expect("gauge has decimals");
            assert_eq!(frac.len(), 2, "{v}");
        }
    }

    #[test]
    fn counters_only_grow() {
        let mut rng = Rng::new(2);
        let mut s = Series::new(1, &mut rng);
        let mut last = 0u64;
        for _ in 0..100 {
            let v: u64 = s
                .next_value(&mut rng)
                .parse()
                .expect("counter is an integer");
            assert!(v > last);
            last = v;
        }
    }
}
