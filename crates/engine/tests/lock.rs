//! The store's lock between processes (here, stores opened in one process, which `flock`
//! treats alike): readers of a few series share it, anything else holds it alone, and an
//! open waits up to `Options::lock_wait` for a hold to end.

mod common;

use common::*;
use engine::{Error, Options, Store};
use std::time::{Duration, Instant};

fn reader(wait: Duration) -> Options {
    Options {
        only: Some(vec!["s0".to_string()]),
        lock_wait: wait,
        ..small_opts(64 << 10)
    }
}

fn writer(wait: Duration) -> Options {
    Options {
        lock_wait: wait,
        ..small_opts(64 << 10)
    }
}

#[test]
fn readers_share_the_store_and_a_writer_waits_for_them() {
    let dir = TempDir::new("lock");
    {
        let mut s = Store::open(&dir.0, small_opts(64 << 10)).unwrap();
        s.create("s0", make_rrd(0), false).unwrap();
        s.close().unwrap();
    }
    // Readers at once.
    let a = Store::open(&dir.0, reader(Duration::ZERO)).unwrap();
    let b = Store::open(&dir.0, reader(Duration::ZERO)).unwrap();
    assert!(a.get("s0").is_some() && b.get("s0").is_some());
    // A writer beside them: refused at once without a wait, after it with one.
    assert!(matches!(
        Store::open(&dir.0, writer(Duration::ZERO)),
        Err(Error::Locked(_))
    ));
    let t = Instant::now();
    assert!(matches!(
        Store::open(&dir.0, writer(Duration::from_millis(300))),
        Err(Error::Locked(_))
    ));
    let waited = t.elapsed();
    assert!(waited >= Duration::from_millis(300), "{waited:?}");
    assert!(waited < Duration::from_secs(5), "{waited:?}");
    // Once the readers let go during its wait, the writer has it.
    let t = Instant::now();
    let writing = std::thread::spawn({
        let d = dir.0.clone();
        move || Store::open(&d, writer(Duration::from_secs(20))).map(|_| ())
    });
    std::thread::sleep(Duration::from_millis(200));
    drop(a);
    drop(b);
    writing.join().unwrap().unwrap();
    assert!(t.elapsed() >= Duration::from_millis(200));
    // A writer holds it alone: a reader waits for it too.
    let w = Store::open(&dir.0, writer(Duration::ZERO)).unwrap();
    assert!(matches!(
        Store::open(&dir.0, reader(Duration::ZERO)),
        Err(Error::Locked(_))
    ));
    let reading = std::thread::spawn({
        let d = dir.0.clone();
        move || Store::open(&d, reader(Duration::from_secs(20))).map(|s| s.get("s0").is_some())
    });
    std::thread::sleep(Duration::from_millis(100));
    w.close().unwrap();
    assert!(reading.join().unwrap().unwrap());
}

#[test]
fn an_open_that_waits_knocks_and_a_writers_open_lets_it_have_the_store_first() {
    let dir = TempDir::new("lock-knock");
    let mut w = Store::open(&dir.0, writer(Duration::ZERO)).unwrap();
    w.create("s0", make_rrd(0), false).unwrap();
    w.commit().unwrap();
    assert!(!w.others_wait(), "no one waits");
    // A reader waits for the writer: it knocks (LOCK.wait, which the writer made).
    let d = dir.0.clone();
    let reading = std::thread::spawn(move || {
        let st = Store::open(&d, reader(Duration::from_secs(20)))?;
        let opened = Instant::now();
        let got = st.get("s0").is_some();
        // It holds the store a while: the writer's open below waits for it.
        std::thread::sleep(Duration::from_millis(300));
        Ok::<(bool, Instant), Error>((got, opened))
    });
    let t = Instant::now();
    while !w.others_wait() {
        assert!(
            t.elapsed() < Duration::from_secs(10),
            "the reader never knocked"
        );
        std::thread::sleep(Duration::from_millis(5));
    }
    // The writer lets go, and opens again at once: the reader has the store first.
    w.close().unwrap();
    let w = Store::open(&dir.0, writer(Duration::from_secs(20))).unwrap();
    let reopened = Instant::now();
    drop(w);
    let (got, opened) = reading.join().unwrap().unwrap();
    assert!(got);
    assert!(
        opened < reopened,
        "the writer's open waited for the reader that knocked"
    );
    // A reader on its own writes nothing, LOCK.wait included (the writer made it).
    assert!(dir.0.join("LOCK.wait").exists());
}
