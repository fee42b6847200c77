//! Heap bytes per series held by the engine (a counting allocator): N series of issue 19's
//! million-series schema (one GAUGE at 10 s; AVERAGE 1 min x 1 day, 10 min x 30 days, 1 h x
//! 1 year) after creation, after 30 updates each (a 5-minute window), after the commit, and
//! after a checkpoint and reopening, in a temp directory.
//! `cargo run --release -p engine --example memory [-- N]` (default 10,000); with `GMETAD=1`,
//! gmetad's archives instead (step 10 here; AVERAGE 1x5856, 4x20160, 40x52704); with
//! `UPDATES=K`, K updates each instead of 30; with
//! `SNAPSHOT=1`, a log ring so small that the commit takes the snapshot a lagged checkpoint
//! is written from (held until then, as a daemon holds it half the time).

use engine::{Options, Store};
use rrd::{Cf, DsDef, DsType, RraDef, Rrd, Sample, Schema};
use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicIsize, Ordering};

struct Counting;
static LIVE: AtomicIsize = AtomicIsize::new(0);

// SAFETY: forwards to the system allocator, counting the bytes in use.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, l: Layout) -> *mut u8 {
        LIVE.fetch_add(l.size() as isize, Ordering::Relaxed);
        unsafe { System.alloc(l) }
    }
    unsafe fn dealloc(&self, p: *mut u8, l: Layout) {
        LIVE.fetch_sub(l.size() as isize, Ordering::Relaxed);
        unsafe { System.dealloc(p, l) }
    }
    unsafe fn realloc(&self, p: *mut u8, l: Layout, n: usize) -> *mut u8 {
        LIVE.fetch_add(n as isize - l.size() as isize, Ordering::Relaxed);
        unsafe { System.realloc(p, l, n) }
    }
}

#[global_allocator]
static A: Counting = Counting;

fn schema() -> Schema {
    let gmetad = std::env::var_os("GMETAD").is_some();
    let rra = |pdp_cnt, row_cnt| RraDef {
        cf: Cf::Average,
        xff: 0.5,
        pdp_cnt,
        row_cnt,
        par: [0; 5],
    };
    Schema {
        step: 10,
        ds: vec![DsDef {
            name: "value".into(),
            kind: DsType::Gauge,
            heartbeat: 20,
            min: f64::NAN,
            max: f64::NAN,
            rpn: None,
        }],
        rra: if gmetad {
            vec![rra(1, 5856), rra(4, 20160), rra(40, 52704)]
        } else {
            vec![rra(6, 1440), rra(60, 4320), rra(360, 8760)]
        },
    }
}

fn main() {
    let n: usize = std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(10_000);
    let dir = std::env::temp_dir().join(format!("ringlet-memory-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let start = 1_700_000_000i64;
    sizes();
    let report = |what: &str, base: isize| {
        let b = LIVE.load(Ordering::Relaxed) - base;
        println!("{what}: {} bytes a series", b / n as isize);
    };
    {
        let mut opts = Options::default();
        if std::env::var_os("SNAPSHOT").is_some() {
            opts.log_bytes = 64 * n as u64;
        }
        let mut st = Store::open(&dir, opts).expect("open");
        let base = LIVE.load(Ordering::Relaxed);
        for i in 0..n {
            let name = format!("host{}/cpu-{i}/value.rrd", i / 100);
            st.create(&name, Rrd::new(schema(), start), false)
                .expect("create");
        }
        report("created", base);
        let updates: i64 = std::env::var("UPDATES")
            .ok()
            .and_then(|u| u.parse().ok())
            .unwrap_or(30);
        for k in 1..=updates {
            for i in 0..n {
                let name = format!("host{}/cpu-{i}/value.rrd", i / 100);
                let s = Sample {
                    time: start + 10 * k,
                    usec: 0,
                    values: vec![format!("{}.{}", 20 + (i as i64 + k) % 50, k % 10)],
                };
                st.update(&name, &s, &mut |_| {}).expect("update");
            }
            if std::env::var_os("SNAPSHOT").is_some() {
                let c = st.commit().expect("commit");
                report(&format!("commit {k} ({} bytes)", c.bytes), base);
            }
        }
        report(&format!("{updates} updates each"), base);
        st.commit().expect("commit");
        report("committed", base);
        st.checkpoint().expect("checkpoint");
        report("checkpointed", base);
    }
    let base = LIVE.load(Ordering::Relaxed);
    let st = Store::open(&dir, Options::default()).expect("reopen");
    report("reopened", base);
    drop(st);
    let _ = std::fs::remove_dir_all(&dir);
}
fn sizes() {
    println!(
        "Rrd {} Schema {} DsDef {} RraDef {} Rows {} RraData {} PdpPrep {} CdpPrep {} \
         Series {} SeriesCodec {}",
        size_of::<Rrd>(),
        size_of::<Schema>(),
        size_of::<DsDef>(),
        size_of::<RraDef>(),
        size_of::<rrd::Rows>(),
        size_of::<rrd::RraData>(),
        size_of::<rrd::PdpPrep>(),
        size_of::<rrd::CdpPrep>(),
        size_of::<engine::series::Series>(),
        size_of::<codec::sample::SeriesCodec>(),
    );
}
