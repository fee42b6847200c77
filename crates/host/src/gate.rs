//! Connection slots: how many connections a listener, or a family of listeners, serves at
//! once, and the accept loop every TCP and unix listener of the daemon runs.
//!
//! A connection is a thread (blocking I/O, a 256 KiB stack reserved). Without a bound, idle
//! connections are threads without end: carbon's listeners took 16,000 until the kernel's
//! `vm.max_map_count` refused a new thread's signal stack and the process aborted, losing
//! what was not committed. So each connection first takes a [`Slot`] from every [`Pool`] it
//! counts in (the daemon's rrdcached sockets together, their TCP listeners among them,
//! carbon's listeners), is refused when any is full, and gives the slots back when its
//! thread ends, or at once if its thread cannot be started. A full pool is logged once a
//! minute, not once a refusal.
//!
//! An accept that fails (EMFILE, ENFILE, ENOBUFS: out of file descriptors or memory) is
//! logged and tried again after a short pause, so a listener recovers once the flood that
//! exhausted them is gone, and never spins.

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Threads' stack reserved (touched only as used).
pub const STACK: usize = 256 * 1024;

/// How long an accept that failed waits before the next.
const ACCEPT_PAUSE: Duration = Duration::from_millis(50);

/// A bound on connections at once.
pub struct Pool {
    name: &'static str,
    max: usize,
    active: AtomicUsize,
    refused: AtomicU64,
    logged: Mutex<Option<Instant>>,
}

impl Pool {
    pub fn new(name: &'static str, max: usize) -> Arc<Pool> {
        Arc::new(Pool {
            name,
            max: max.max(1),
            active: AtomicUsize::new(0),
            refused: AtomicU64::new(0),
            logged: Mutex::new(None),
        })
    }

    /// Connections being served now.
    pub fn active(&self) -> usize {
        self.active.load(Ordering::Relaxed)
    }

    /// Connections refused because the pool was full, since the start.
    pub fn refused(&self) -> u64 {
        self.refused.load(Ordering::Relaxed)
    }

    fn try_take(&self) -> bool {
        self.active
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| {
                (n < self.max).then_some(n + 1)
            })
            .is_ok()
    }

    fn refuse(&self) {
        self.refused.fetch_add(1, Ordering::Relaxed);
        let mut last = self.logged.lock().unwrap_or_else(|p| p.into_inner());
        if last.is_none_or(|t| t.elapsed() >= Duration::from_secs(60)) {
            *last = Some(Instant::now());
            crate::log::line(&format!(
                "{}: {} connections, the most it serves at once: refusing new ones \
                 ({} refused so far)",
                self.name,
                self.max,
                self.refused()
            ));
        }
    }
}

/// A connection's place in each of its pools; given back when dropped.
pub struct Slot(Vec<Arc<Pool>>);

impl Slot {
    /// A place in every one of `pools`, or none (the first full one counts the refusal).
    pub fn take(pools: &[&Arc<Pool>]) -> Option<Slot> {
        let mut held = Vec::with_capacity(pools.len());
        for p in pools {
            if !p.try_take() {
                p.refuse();
                // `held` gives back what was taken.
                drop(Slot(held));
                return None;
            }
            held.push(Arc::clone(p));
        }
        Some(Slot(held))
    }
}

impl Drop for Slot {
    fn drop(&mut self) {
        for p in &self.0 {
            p.active.fetch_sub(1, Ordering::SeqCst);
        }
    }
}

/// Run `f` on a thread of its own named `name`, holding `slot` until it ends. A thread that
/// cannot be started (the system's limit) drops the closure, and the slot with it: the
/// connection is closed, and logged.
pub fn spawn(name: &str, slot: Slot, f: impl FnOnce() + Send + 'static) {
    let spawned = std::thread::Builder::new()
        .name(name.into())
        .stack_size(STACK)
        .spawn(move || {
            let _slot = slot;
            f()
        });
    if let Err(e) = spawned {
        crate::log::line(&format!("{name}: cannot start a connection thread: {e}"));
    }
}

/// Accept connections with `accept` for ever: each one that gets a slot in `pools` is
/// served by `serve` on a thread of its own; one that does not is passed to `refused` (to
/// say why, briefly) and closed. A failed accept is logged (once a minute) and retried
/// after a pause.
pub fn accept_loop<S: Send + 'static>(
    name: &'static str,
    pools: Vec<Arc<Pool>>,
    mut accept: impl FnMut() -> std::io::Result<S>,
    refused: impl Fn(S),
    serve: impl Fn(S) + Send + Sync + 'static,
) {
    let serve = Arc::new(serve);
    let pools: Vec<&Arc<Pool>> = pools.iter().collect();
    let mut logged: Option<Instant> = None;
    loop {
        let s = match accept() {
            Ok(s) => s,
            Err(e) => {
                if logged.is_none_or(|t| t.elapsed() >= Duration::from_secs(60)) {
                    logged = Some(Instant::now());
                    crate::log::line(&format!(
                        "{name}: accept failed: {} (trying again)",
                        crate::log::strerror(&e)
                    ));
                }
                std::thread::sleep(ACCEPT_PAUSE);
                continue;
            }
        };
        match Slot::take(&pools) {
            Some(slot) => {
                let serve = serve.clone();
                spawn(name, slot, move || serve(s));
            }
            None => refused(s),
        }
    }
}

/// A share of memory that concurrent replies take from (bytes): the daemon's read budget
/// (the daemon's `server::daemon::READ_BUDGET`). A reply waits until its share fits beside the others';
/// one larger than the whole runs alone (never refused: rrdcached would serve it), so what
/// replies hold at once is bounded by the larger of the two.
pub struct Share {
    cap: u64,
    used: Mutex<u64>,
    freed: std::sync::Condvar,
}

/// A reply's part of a [`Share`], given back when dropped.
pub struct Taken<'a> {
    share: &'a Share,
    n: u64,
}

impl Share {
    pub fn new(cap: u64) -> Share {
        Share {
            cap,
            used: Mutex::new(0),
            freed: std::sync::Condvar::new(),
        }
    }

    /// Take `n` bytes, waiting while they do not fit (alone, anything fits).
    pub fn take(&self, n: u64) -> Taken<'_> {
        let mut used = self.used.lock().unwrap_or_else(|p| p.into_inner());
        while *used > 0 && used.saturating_add(n) > self.cap {
            used = self.freed.wait(used).unwrap_or_else(|p| p.into_inner());
        }
        *used = used.saturating_add(n);
        Taken { share: self, n }
    }

    /// Take `n` bytes if they fit now (alone, anything fits); None without waiting.
    pub fn try_take(&self, n: u64) -> Option<Taken<'_>> {
        let mut used = self.used.lock().unwrap_or_else(|p| p.into_inner());
        if *used > 0 && used.saturating_add(n) > self.cap {
            return None;
        }
        *used = used.saturating_add(n);
        Some(Taken { share: self, n })
    }

    /// The bytes the share holds at most (but for one larger taken alone).
    pub fn cap(&self) -> u64 {
        self.cap
    }

    /// Bytes taken now.
    pub fn used(&self) -> u64 {
        *self.used.lock().unwrap_or_else(|p| p.into_inner())
    }
}

impl Drop for Taken<'_> {
    fn drop(&mut self) {
        let mut used = self.share.used.lock().unwrap_or_else(|p| p.into_inner());
        *used = used.saturating_sub(self.n);
        self.share.freed.notify_all();
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn replies_wait_for_their_share_and_a_large_one_runs_alone() {
        let s = Arc::new(Share::new(100));
        let a = s.take(60);
        assert_eq!(s.used(), 60);
        let (tx, rx) = std::sync::mpsc::channel();
        let s2 = s.clone();
        let t = std::thread::spawn(move || {
            let _b = s2.take(50);
            tx.send(s2.used()).unwrap();
        });
        // 60 + 50 > 100: it waits for the first.
        assert!(rx.recv_timeout(Duration::from_millis(200)).is_err());
        drop(a);
        assert_eq!(rx.recv_timeout(Duration::from_secs(10)).unwrap(), 50);
        t.join().unwrap();
        // Without waiting: it fits or it does not.
        let a = s.try_take(70).expect("alone");
        assert!(s.try_take(40).is_none());
        let b = s.try_take(30).expect("fits");
        drop((a, b));
        // Larger than the whole: alone, it runs.
        let big = s.take(1000);
        assert_eq!(s.used(), 1000);
        drop(big);
        assert_eq!(s.used(), 0);
    }

    use super::*;

    #[test]
    fn a_slot_counts_in_every_pool_and_a_full_one_refuses_without_keeping_the_others() {
        let all = Pool::new("all", 3);
        let tcp = Pool::new("tcp", 1);
        let a = Slot::take(&[&all, &tcp]).expect("room in both");
        assert_eq!((all.active(), tcp.active()), (1, 1));
        // tcp is full: nothing is kept in `all` either.
        assert!(Slot::take(&[&all, &tcp]).is_none());
        assert_eq!((all.active(), tcp.active(), tcp.refused()), (1, 1, 1));
        // Others that do not count in tcp still get in, up to all's bound.
        let b = Slot::take(&[&all]).expect("room");
        let c = Slot::take(&[&all]).expect("room");
        assert!(Slot::take(&[&all]).is_none());
        drop((a, b, c));
        assert_eq!((all.active(), tcp.active()), (0, 0));
        assert!(Slot::take(&[&all, &tcp]).is_some());
    }

    #[test]
    fn a_connection_thread_gives_its_slot_back_when_it_ends() {
        let p = Pool::new("p", 1);
        let (tx, rx) = std::sync::mpsc::channel();
        spawn("t", Slot::take(&[&p]).unwrap(), move || {
            rx.recv().unwrap();
        });
        assert_eq!(p.active(), 1);
        tx.send(()).unwrap();
        let t = Instant::now();
        while p.active() != 0 {
            assert!(t.elapsed() < Duration::from_secs(10));
            std::thread::yield_now();
        }
    }
}
