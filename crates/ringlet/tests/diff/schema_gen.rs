//! Random RRD schemas for the differential tests: data sources of every type (COMPUTE over
//! earlier ones), archives of every CF with small row counts so retention edges are reached,
//! steps from 1 s to an hour, heartbeats above and below the update gaps.

use super::rng::Rng;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
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
    pub fn word(self) -> &'static str {
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
}

#[derive(Clone, Debug)]
pub struct GenDs {
    pub name: String,
    pub ty: DsType,
    pub hb: u64,
    /// "U" or a number, as written in the DS definition.
    pub min: String,
    pub max: String,
    pub rpn: String,
}

impl GenDs {
    /// `DS:...`; with `units`, the heartbeat as a duration like `10m` where it divides evenly.
    pub fn definition(&self, units: bool) -> String {
        if self.ty == DsType::Compute {
            format!("DS:{}:COMPUTE:{}", self.name, self.rpn)
        } else {
            let hb = if units {
                duration(self.hb)
            } else {
                self.hb.to_string()
            };
            format!(
                "DS:{}:{}:{}:{}:{}",
                self.name,
                self.ty.word(),
                hb,
                self.min,
                self.max
            )
        }
    }
}

#[derive(Clone, Debug)]
pub struct GenRra {
    pub cf: &'static str,
    pub xff: &'static str,
    pub pdp: u64,
    pub rows: u64,
    /// A Holt-Winters archive's `RRA:` definition (`hw_gen`); none for one rrdtool adds
    /// itself after an HWPREDICT alone ([`GenRra::implied`]) and for the others.
    pub text: Option<String>,
}

impl GenRra {
    /// A Holt-Winters archive rrdtool's create adds (not in the create's arguments).
    pub fn implied(&self) -> bool {
        self.text.is_none() && !CFS.contains(&self.cf)
    }

    /// `RRA:...`; with `units`, steps and rows as durations (`1h`, `2d`) where they divide.
    pub fn definition(&self, step: u64, units: bool) -> String {
        if let Some(t) = &self.text {
            return t.clone();
        }
        if units {
            let (per_row, span) = (self.pdp * step, self.rows * self.pdp * step);
            format!(
                "RRA:{}:{}:{}:{}",
                self.cf,
                self.xff,
                duration(per_row),
                duration(span)
            )
        } else {
            format!("RRA:{}:{}:{}:{}", self.cf, self.xff, self.pdp, self.rows)
        }
    }
}

/// Seconds as rrdcreate's duration syntax with the largest unit that divides them exactly.
pub fn duration(secs: u64) -> String {
    for (unit, n) in [("w", 604_800), ("d", 86_400), ("h", 3600), ("m", 60)] {
        if secs >= n && secs / n * n == secs {
            return format!("{}{unit}", secs / n);
        }
    }
    format!("{secs}s")
}

#[derive(Clone, Debug)]
pub struct GenSchema {
    pub step: u64,
    /// Write step, heartbeats and RRA sizes with unit suffixes (`5m`, `1d`).
    pub units: bool,
    pub ds: Vec<GenDs>,
    pub rras: Vec<GenRra>,
}

impl GenSchema {
    /// The longest span any archive keeps, in seconds.
    pub fn max_span(&self) -> u64 {
        self.rras
            .iter()
            .map(|r| r.pdp * r.rows * self.step)
            .max()
            .unwrap_or(self.step)
    }

    pub fn max_hb(&self) -> u64 {
        self.ds.iter().map(|d| d.hb).max().unwrap_or(self.step)
    }

    pub fn cfs(&self) -> Vec<&'static str> {
        let mut v: Vec<&'static str> = Vec::new();
        for r in &self.rras {
            if !v.contains(&r.cf) {
                v.push(r.cf);
            }
        }
        v
    }

    /// The data sources an update fills by default (every non-COMPUTE one, in order).
    pub fn inputs(&self) -> Vec<usize> {
        (0..self.ds.len())
            .filter(|&i| self.ds[i].ty != DsType::Compute)
            .collect()
    }
}

const NAMES: [&str; 16] = [
    "a",
    "b",
    "c",
    "in",
    "out",
    "load",
    "temp",
    "ds0",
    "rx_bytes",
    "tx_bytes",
    "requests",
    "errs",
    "x",
    "value",
    "abcdefghijklmnopqrs",
    "Mem_Free-2",
];

pub const CFS: [&str; 4] = ["AVERAGE", "MIN", "MAX", "LAST"];

pub fn gen_schema(rng: &mut Rng) -> GenSchema {
    let step = match rng.range(0, 7) {
        0 => 1,
        1 => 5,
        2 => 10,
        3 => 60,
        4 | 5 => 300,
        6 => 3600,
        _ => rng.range(1, 3600),
    };
    let mut names: Vec<&str> = NAMES.to_vec();
    rng.shuffle(&mut names);
    let nds = rng.range(1, 4) as usize;
    let mut ds: Vec<GenDs> = Vec::new();
    for (i, name) in names.iter().take(nds).enumerate() {
        let ty = if i > 0 && rng.chance(0.2) {
            DsType::Compute
        } else {
            *rng.pick(&[
                DsType::Gauge,
                DsType::Counter,
                DsType::Derive,
                DsType::Absolute,
                DsType::DCounter,
                DsType::DDerive,
            ])
        };
        let hb = match rng.range(0, 19) {
            0..=6 => 2 * step,
            7 => step,
            8 => step + step / 2,
            9 => (step / 2).max(1),
            10..=11 => step * rng.range(3, 10),
            12..=13 => rng.range(step, 3 * step),
            14 => rng.range(1, 3 * step),
            _ => 600.max(step),
        };
        let (min, max) = min_max(rng, ty);
        let rpn = if ty == DsType::Compute {
            let x = &ds[rng.range(0, i as u64 - 1) as usize].name;
            let y = &ds[rng.range(0, i as u64 - 1) as usize].name;
            match rng.range(0, 5) {
                0 => format!("{x},{y},+"),
                1 => format!("{x},8,*"),
                2 => format!("{x},{y},-"),
                3 => format!("{x},1000,/"),
                4 => format!("{x},{y},MAX"),
                _ => format!("{x},UN,0,{x},IF"),
            }
        } else {
            String::new()
        };
        ds.push(GenDs {
            name: name.to_string(),
            ty,
            hb,
            min,
            max,
            rpn,
        });
    }
    let nrra = rng.range(1, 4);
    let mut rras = Vec::new();
    for i in 0..nrra {
        let pdp = if i == 0 && rng.chance(0.7) {
            1
        } else {
            let any = rng.range(1, 30);
            *rng.pick(&[1, 1, 2, 3, 4, 5, 6, 10, 12, any])
        };
        let rows = if rng.chance(0.7) {
            rng.range(5, 30)
        } else {
            rng.range(5, 100)
        };
        let cf = *rng.pick(&CFS);
        let xff = *rng.pick(&["0", "0.1", "0.5", "0.5", "0.9", "0.333", "0.25", "0.99"]);
        rras.push(GenRra {
            cf,
            xff,
            pdp,
            rows,
            text: None,
        });
    }
    let units = rng.chance(0.15);
    GenSchema {
        step,
        units,
        ds,
        rras,
    }
}

fn min_max(rng: &mut Rng, ty: DsType) -> (String, String) {
    let (lo, hi) = match ty {
        DsType::Gauge => *rng.pick(&[
            ("U", "U"),
            ("0", "100"),
            ("-50", "50"),
            ("0", "U"),
            ("-1.5", "1e3"),
            ("0.001", "U"),
        ]),
        DsType::Counter => *rng.pick(&[("U", "U"), ("0", "U"), ("0", "1000000"), ("0", "50")]),
        DsType::DCounter => *rng.pick(&[("U", "U"), ("0", "U"), ("0", "1000")]),
        DsType::Derive | DsType::DDerive => *rng.pick(&[("U", "U"), ("0", "U"), ("-100", "100")]),
        DsType::Absolute => *rng.pick(&[("U", "U"), ("0", "U"), ("0", "500")]),
        DsType::Compute => ("U", "U"),
    };
    (lo.to_string(), hi.to_string())
}
