//! How queued values reach the store and become durable: applying a series' queue,
//! commits, the committer thread (`-w` and `--queue-limit`), and the last commit at shutdown.
//!
//! A queue is applied under the store lock, in acceptance order, by `Store::update`; each
//! value's outcome is compared with the one its check at UPDATE time gave. A commit makes
//! everything applied durable in one record and takes it off the PENDING lists. A full
//! commit ([`Daemon::commit_all`]) first applies every queue, a chunk of series per hold of
//! the store lock, so that everything acknowledged before it began is in the commit.

use crate::daemon::{Daemon, Inner, DRAIN_CHUNK};
use crate::entry::{Entry, EntryState, ACCEPTED};
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Instant;

/// A stop without `-F` leaves a checkpoint past this many samples logged since the newest
/// one: about a second of replay at the next open (replay applies 8-12 million samples a
/// second; 26,000 gmetad series replayed 39.7 million in 3.7 s: docs/BENCHMARKS.md), so an
/// open after a clean stop stays within a second. The checkpoint costs a few hundred bytes
/// a series, once a stop.
const STOP_CHECKPOINT_SAMPLES: u64 = 8_000_000;
/// ... or past this much log (records of creates hold no samples, but they are read).
const STOP_CHECKPOINT_BYTES: u64 = 256 << 20;

/// The least time between two returns of freed memory to the kernel (each walks the heap:
/// a few milliseconds for 100 MB).
const TRIM_EVERY: std::time::Duration = std::time::Duration::from_secs(30);
/// How soon the committer tries again while commits fail but the store can go on (a full
/// disk: UPDATE refuses values until a commit succeeds).
const BLOCKED_RETRY: std::time::Duration = std::time::Duration::from_secs(5);

impl Daemon {
    /// Count `bytes` more of queued values; at the limit, wake the committer (as the store
    /// commits on its own when its pending data reaches its size limit), so that the queues'
    /// memory stays bounded whatever `-w` is.
    pub fn queued(&self, bytes: u64) {
        let before = self.queued.fetch_add(bytes, Ordering::Relaxed);
        if before < self.queue_limit && before + bytes >= self.queue_limit {
            *self.woken.lock().unwrap_or_else(|p| p.into_inner()) = true;
            self.wake.notify_one();
        }
    }

    /// The committer thread: commit everything every `-w` seconds, and whenever the queues
    /// reach their limit.
    pub fn committer(&self) -> ! {
        let mut due = Instant::now() + self.commit_interval;
        let mut since_trim = Instant::now();
        loop {
            let mut woken = self.woken.lock().unwrap_or_else(|p| p.into_inner());
            while !*woken {
                let now = Instant::now();
                if now >= due {
                    break;
                }
                woken = match self.wake.wait_timeout(woken, due - now) {
                    Ok((g, _)) => g,
                    Err(p) => p.into_inner().0,
                };
            }
            *woken = false;
            drop(woken);
            // Whatever is pending (samples, and creates without samples); a commit with
            // nothing pending writes nothing. A panic (a bug) must not end the thread
            // silently: the daemon stops accepting values it may not be able to commit.
            let done = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| self.commit_all()));
            if since_trim.elapsed() >= TRIM_EVERY {
                crate::sys::release_free_memory();
                since_trim = Instant::now();
            }
            match done {
                Ok(Ok(_)) => {}
                Ok(Err(e)) => crate::log::line(&format!("commit failed: {e}")),
                Err(_) => self.panicked("the committer"),
            }
            // While commits fail for want of space, try again soon: values are refused
            // until one succeeds.
            let wait = if self.blocked.load(Ordering::Relaxed) {
                self.commit_interval.min(BLOCKED_RETRY)
            } else {
                self.commit_interval
            };
            due = Instant::now() + wait;
        }
    }

    /// Whether the final commit has begun.
    pub fn closing(&self) -> bool {
        self.closing.load(Ordering::SeqCst)
    }

    /// The last commit, at shutdown: stop accepting values, wait for the UPDATEs under way
    /// (each holds its entry's lock while it queues), then apply and commit everything, so
    /// every value acknowledged is durable.
    pub fn final_commit(&self) -> Result<u64, String> {
        self.closing.store(true, Ordering::SeqCst);
        for e in self.index.entries() {
            drop(e.lock());
        }
        let n = self.commit_all()?;
        let mut inner = self.lock();
        // With -F (rrdcached's "flush everything at shutdown") the last act is a checkpoint
        // (the whole state as it is now), so the next start replays no log, as rrdcached's
        // next start reads no journal; also without it once replaying the log since the
        // last one would take the next start seconds, or a one-shot command (`ringlet
        // fetch`, Cacti's graphs while the daemon is down) more than a few milliseconds
        // (engine::READER_PIECES) where the checkpoint costs at most an eighth of the log it
        // spares. Otherwise the stop writes no more than the commit: a checkpoint is
        // hundreds of bytes a series.
        let since = inner.store.log_since_checkpoint();
        let long = inner.store.samples_since_checkpoint() > STOP_CHECKPOINT_SAMPLES
            || since > STOP_CHECKPOINT_BYTES
            || inner.store.checkpoint_spares_readers(8);
        if since > 0 && (self.checkpoint_at_stop || long) {
            let t0 = Instant::now();
            match inner.store.checkpoint() {
                Ok(bytes) => crate::log::line(&format!(
                    "wrote a checkpoint at shutdown ({bytes} bytes, in {:.2} s): the next open replays no log",
                    t0.elapsed().as_secs_f64()
                )),
                Err(e) => crate::log::line(&format!(
                    "could not write a checkpoint at shutdown ({e}): the next open replays {since} bytes of log"
                )),
            }
        }
        // Everything is committed: a CLI reading the store after the daemon has gone may
        // skip the search of the log's ring (a later write removes the mark first).
        if let Err(e) = inner.store.mark_clean() {
            crate::log::line(&format!("could not mark the clean shutdown: {e}"));
        }
        Ok(n)
    }

    /// Apply `name`'s queued values to the store (before a read or a FLUSH of it).
    pub fn apply_series(&self, inner: &mut Inner, name: &str) {
        if let Some(e) = self.index.get(name) {
            let mut st = e.lock();
            self.apply_queue(inner, &e, &mut st);
        }
    }

    /// Apply an entry's queued values to the store, in order. A value whose outcome differs
    /// from the one its check gave at ingest is counted and logged; the others go on.
    pub(crate) fn apply_queue(&self, inner: &mut Inner, e: &Arc<Entry>, st: &mut EntryState) {
        if !st.unapplied() {
            return;
        }
        // The entry stays locked, so nothing is queued meanwhile. The lines stay in the
        // queue, now applied, until the commit that makes them durable.
        let mut sample = std::mem::replace(&mut inner.scratch, rrd::update::reuse::scratch());
        let mut bad = 0u64;
        // The first mismatch is logged with the count (a failed store fails every value).
        let mut first: Option<String> = None;
        // One name lookup for the whole queue.
        let id = inner.store.series_id(&e.name);
        // Whether a value of this batch failed: the batch is one update call, as rrdcached's
        // flush of a file's queued values is one rrd_update call.
        let mut call_failed = false;
        st.queue.each_from(st.applied as usize, &mut |flag, v| {
            let read = match rrd::update::reuse::stamp(v) {
                Some(stamp) => rrd::update::reuse::read(&st.shadow.schema, v, stamp, &mut sample),
                None => Err(rrd::RrdError::new("no timestamp")),
            };
            if let Err(err) = read {
                bad += 1;
                first.get_or_insert_with(|| format!("{v} lost: {}", err.msg));
                return;
            }
            let done = match id {
                Some(id) => inner.store.update_id(id, &sample, &mut |_| {}),
                None => inner.store.update(&e.name, &sample, &mut |_| {}),
            };
            call_failed |= done.is_err();
            match done {
                Ok(()) if flag == ACCEPTED => {}
                Err(engine::Error::Rrd(_)) if flag != ACCEPTED => {}
                Ok(()) => {
                    bad += 1;
                    first.get_or_insert_with(|| format!("{v} applied, though refused"));
                }
                Err(err) => {
                    bad += 1;
                    self.note_store_error(&err);
                    first.get_or_insert_with(|| format!("{v} not applied: {err}"));
                }
            }
        });
        inner.scratch = sample;
        // The end of the call: a Holt-Winters RRD's seasonal smoother runs here if due.
        if let Some(id) = id.or_else(|| inner.store.series_id(&e.name)) {
            if let Err(err) = inner.store.end_update_call(id, !call_failed) {
                self.note_store_error(&err);
            }
        }
        st.applied_to(match id {
            Some(id) => inner.store.get_id(id),
            None => inner.store.get(&e.name),
        });
        st.applied = st.queue.len() as u32;
        st.applied_n = st.pending_n;
        if !st.in_applied {
            st.in_applied = true;
            inner.applied.push(e.clone());
        }
        if let Some(what) = first {
            crate::log::line(&format!(
                "{}: {bad} queued value(s) did not apply as checked; first: {what}",
                self.abs_of(&e.name)
            ));
            self.stats.apply_errors.fetch_add(bad, Ordering::Relaxed);
            // The shadow went its own way: start again from what the store has.
            if let Some(rrd) = inner.store.get(&e.name) {
                st.set_shadow(rrd);
            }
        }
    }

    /// Apply every queued value to the store, in one hold of the store lock (before a read
    /// that may touch any series: the CLI's commands run in the daemon). The entries go to the
    /// applied list; the next commit makes them durable.
    pub(crate) fn apply_all(&self, inner: &mut Inner) {
        let all: Vec<Arc<Entry>> =
            std::mem::take(&mut *self.dirty.lock().unwrap_or_else(|p| p.into_inner()));
        for e in &all {
            let mut st = e.lock();
            st.in_dirty = false;
            self.apply_queue(inner, e, &mut st);
        }
    }

    /// Forget `name`'s queued and pending values and restart its checks from the store's
    /// series (after CREATE, FORGET, or a re-read file).
    pub fn reset_series(&self, inner: &mut Inner, name: &str) {
        if let (Some(e), Some(rrd)) = (self.index.get(name), inner.store.get(name)) {
            e.lock().reset(rrd);
        }
    }

    /// After a panic (a bug) in `what`: values accepted from now on might never be committed,
    /// so UPDATE refuses them, with the reason, until the daemon is restarted (which replays
    /// the log: everything committed is kept). Logged.
    pub(crate) fn panicked(&self, what: &str) {
        let why = format!(
            "{what} panicked (a bug; see the log); no more updates are accepted: restart the daemon"
        );
        crate::log::line(&why);
        *self.failure.lock().unwrap_or_else(|p| p.into_inner()) = why;
        self.failed.store(true, Ordering::SeqCst);
    }

    /// Commit what has been applied to the store. Returns the number of samples made durable.
    pub fn commit(&self, inner: &mut Inner) -> Result<u64, String> {
        let st = match inner.store.commit() {
            Ok(st) => st,
            Err(e) => {
                for n in inner.store.take_notices() {
                    crate::log::line(&n);
                }
                if let Some(why) = inner.store.must_checkpoint().map(str::to_string) {
                    // A full disk (or the like): the store goes on once a checkpoint can be
                    // written; until then nothing new can be made durable, so UPDATE says so.
                    let msg = format!(
                        "the store cannot commit: {why} (the log ring is full and a checkpoint \
                         could not be written; values are accepted again once one is)"
                    );
                    *self.failure.lock().unwrap_or_else(|p| p.into_inner()) = msg.clone();
                    self.blocked.store(true, Ordering::Relaxed);
                    return Err(msg);
                }
                self.note_store_error(&e);
                // After the first failure, its reason (the engine only says there was one).
                let why = match (&e, self.failure()) {
                    (engine::Error::PreviousIo, Some(f)) => f,
                    _ => e.to_string(),
                };
                return Err(format!(
                    "the commit failed ({why}): nothing since the last commit is acknowledged"
                ));
            }
        };
        if self.blocked.swap(false, Ordering::Relaxed) {
            crate::log::line("commits go on: the values held since the failures are durable");
        }
        for n in inner.store.take_notices() {
            crate::log::line(&n);
        }
        if let Some(why) = inner.store.deferred_error() {
            // The commit stands, but the checkpoint after it failed: the store refuses writes
            // from now on, so stop accepting values now rather than at the next commit.
            if !self.failed.load(Ordering::Relaxed) {
                crate::log::line(&format!("checkpoint after a commit failed: {why}"));
            }
            self.note_store_error(&engine::Error::PreviousIo);
        }
        if st.samples > 0 {
            self.stats.commits.fetch_add(1, Ordering::Relaxed);
        }
        self.stats
            .updates_written
            .fetch_add(st.series as u64, Ordering::Relaxed);
        self.stats
            .data_sets_written
            .fetch_add(st.samples as u64, Ordering::Relaxed);
        self.stats
            .journal_bytes
            .fetch_add(st.bytes, Ordering::Relaxed);
        // What was applied is durable: no longer pending.
        for e in std::mem::take(&mut inner.applied) {
            let mut s = e.lock();
            let (cut, n) = (s.applied, s.applied_n);
            s.drain(cut);
            s.pending_n -= n;
            s.applied = 0;
            s.applied_n = 0;
            s.in_applied = false;
        }
        Ok(st.samples as u64)
    }

    /// Apply every queued value and commit: everything accepted before the call is durable
    /// when it returns. The store lock is let go between chunks of series so that reads are
    /// not held up by a long drain. A drain that has applied [`crate::daemon::COMMIT_PIECE`] bytes of
    /// (`$RINGLET_COMMIT_PIECE`)
    /// samples commits them before it goes on: their queued text is let go then, not at the
    /// end (a million series' window held about 250 MB of queues and 50 MB of encoded
    /// samples at once, the daemon's peak); a few more records of megabytes each cost
    /// nothing in bytes a sample.
    pub fn commit_all(&self) -> Result<u64, String> {
        if crate::log::fail_point("commit-panic") {
            panic!("fail point commit-panic");
        }
        self.queued.store(0, Ordering::Relaxed);
        let mut budget = self.dirty.lock().unwrap_or_else(|p| p.into_inner()).len();
        let mut done = 0;
        loop {
            let mut inner = self.lock();
            let chunk: Vec<Arc<Entry>> = {
                let mut dirty = self.dirty.lock().unwrap_or_else(|p| p.into_inner());
                let k = budget.min(DRAIN_CHUNK).min(dirty.len());
                dirty.drain(..k).collect()
            };
            budget -= chunk.len();
            for e in &chunk {
                let mut st = e.lock();
                st.in_dirty = false;
                self.apply_queue(&mut inner, e, &mut st);
            }
            if budget == 0 || chunk.is_empty() {
                return Ok(done + self.commit(&mut inner)?);
            }
            if inner.store.pending_bytes() >= self.commit_piece {
                done += self.commit(&mut inner)?;
            }
        }
    }

    /// Entries with values accepted since the last commit, with their count, by name.
    pub fn pending_series(&self, inner: &Inner) -> Vec<(Arc<Entry>, usize)> {
        let mut all: Vec<Arc<Entry>> = self.dirty.lock().unwrap_or_else(|p| p.into_inner()).clone();
        all.extend(inner.applied.iter().cloned());
        all.sort_by(|a, b| a.name.cmp(&b.name));
        all.dedup_by(|a, b| Arc::ptr_eq(a, b));
        all.into_iter()
            .filter_map(|e| {
                let n = e.lock().pending_n as usize;
                (n > 0).then_some((e, n))
            })
            .collect()
    }
}
