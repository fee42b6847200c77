//! UPDATE without the store lock: the per-series ingest entries, their index, and the check
//! and enqueueing of values on the connection thread.
//!
//! rrdcached answers an UPDATE after checking the timestamp and queueing the string; the file
//! is written later. ringlet does the same, but checks each value completely first: every
//! series has an [`Entry`] holding a *shadow* of its RRD (the schema's data sources, the last
//! update time and the PDP state, no archives) advanced by every accepted value. Running
//! `Rrd::apply` on the shadow gives exactly the outcome the real RRD will give when the queued
//! value is applied (the archives never make an update fail), so a value is refused, or
//! accepted, at once with rrdtool's message. Accepted values wait in the entry's queue as text
//! until [`crate::daemon::commit`] applies them to the store: at a commit, or before anything reads
//! the series. Values of one series are queued and applied in acceptance order.
//!
//! The entries and their index are [`crate::entry`]'s.

use crate::daemon::Daemon;
use crate::entry::{Entry, EntryState, ACCEPTED, PARTIAL};
use hashbrown::HashTable;
use proto::Response;
use rrd::update::reuse as sample;
use rrd::update::{ApplyError, Sample};
use std::borrow::Cow;
use std::hash::{BuildHasher, BuildHasherDefault};
use std::sync::Arc;

/// UPDATE's reply once the daemon has begun its final commit.
pub const CLOSING: &str = "Shutting down: no more updates are accepted.";

/// The entry of the file a client named, creating it on the series' first update (importing
/// the `.rrd` file on first sight). Errors are UPDATE's replies.
pub fn entry_for(d: &Daemon, file: &str) -> Result<Arc<Entry>, Response> {
    // Later updates naming the file by its store name, or by its absolute name, skip the
    // resolution.
    if let Some(e) = d.index.get(d.index_key(file)) {
        return Ok(e);
    }
    let t = d.resolve(file).map_err(Response::err)?;
    d.entry(&t)
}

/// Entries a connection has updated, by the file name it sent: looked up without any lock
/// or shared counter. Valid for ever, since entries are never removed.
pub struct Local {
    /// By the entries' store names, hashed by [`rrd::fx::Fx`]: a client that chose names to
    /// collide would only slow itself down, and only with names of existing series.
    map: HashTable<Arc<Entry>>,
    /// Bytes queued and not yet counted by [`Daemon::queued`] (the connection counts once
    /// per read).
    pub queued: u64,
    /// Where values are read into, reused for every series (a buffer per series would be one
    /// more cold cache line per UPDATE).
    scratch: Sample,
}

impl Default for Local {
    fn default() -> Local {
        Local {
            map: HashTable::new(),
            queued: 0,
            scratch: sample::scratch(),
        }
    }
}

/// Names a [`Local`] keeps before it starts again. A client that updates every series in turn
/// over one connection (gmetad: 26,000 RRDs every 10 s) must find them all here: with a cap
/// below its series count every lookup missed, went to the shared index and re-inserted
/// (40% of the daemon's CPU at that load). At most 2 names per series are kept; this cap,
/// about 20 MB per connection, only bounds a connection to a store larger than that.
const LOCAL_MAX: usize = 1 << 18;

impl Local {
    /// The entry of `file` (from this connection's map, else the shared index, kept here).
    /// [`Local::update`] does the same lookup without taking a reference to the entry: it is
    /// rrdcached's UPDATE path.
    pub fn entry(&mut self, d: &Daemon, file: &str) -> Result<Arc<Entry>, Response> {
        let key = d.index_key(file);
        if let Some(e) = self.map.find(fx_hash(key), |e| &*e.name == key) {
            return Ok(e.clone());
        }
        let e = entry_for(d, file)?;
        self.remember(key, &e);
        Ok(e)
    }

    /// Keep `e`, found for `key`, in this connection's table (only under its own name: an
    /// absolute name is looked up again).
    fn remember(&mut self, key: &str, e: &Arc<Entry>) {
        if key == &*e.name {
            if self.map.len() >= LOCAL_MAX {
                self.map.clear();
            }
            self.map
                .insert_unique(fx_hash(key), e.clone(), |x| fx_hash(&x.name));
        }
    }

    /// [`update_slot`] of entry `e`, with this connection's scratch and count.
    pub fn update_slot(
        &mut self,
        d: &Daemon,
        e: &Arc<Entry>,
        t: i64,
        value: Option<&str>,
    ) -> Result<Slot, Response> {
        update_slot(d, e, t, value, &mut self.queued, &mut self.scratch)
    }

    /// UPDATE `file` with `values` (see [`update`]).
    pub fn update<'a>(
        &mut self,
        d: &Daemon,
        file: &str,
        values: impl Iterator<Item = Cow<'a, str>>,
    ) -> Result<usize, Response> {
        let key = d.index_key(file);
        if let Some(e) = self.map.find(fx_hash(key), |e| &*e.name == key) {
            return update(d, e, values, &mut self.queued, &mut self.scratch);
        }
        let e = entry_for(d, file)?;
        self.remember(key, &e);
        update(d, &e, values, &mut self.queued, &mut self.scratch)
    }
}

fn fx_hash(name: &str) -> u64 {
    BuildHasherDefault::<rrd::fx::Fx>::default().hash_one(name)
}

/// Check and queue one UPDATE's values, in order, stopping at the first refused one. Returns
/// the number of values accepted, or the reply for the refused value (the values before it
/// stay accepted, as before).
/// `queued` grows by the bytes of memory the accepted values take; the caller passes it on
/// to [`Daemon::queued`]. `scratch` is where each value is read into.
pub fn update<'a>(
    d: &Daemon,
    e: &Arc<Entry>,
    values: impl Iterator<Item = Cow<'a, str>>,
    queued: &mut u64,
    scratch: &mut Sample,
) -> Result<usize, Response> {
    let n = under_lock(d, e, queued, |st| accept(d, e, st, values, scratch))?;
    match n {
        0 => Err(Response::err("No values updated.")),
        n => Ok(n),
    }
}

/// What [`update_slot`] did with a point.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Slot {
    /// Queued (after an unknown value for the slots skipped since the last update, if any).
    Queued,
    /// Its slot ends at or before the series' last update: nothing queued.
    Late,
}

/// A point of a series with one data source kept in slots of its step, as Graphite's are
/// (carbon's listeners): the value `value` (its text, a number `rrd::num::strtod` reads;
/// None: unknown) of the slot holding second `t`, queued as the update `end:value` at the
/// slot's end, after `start:U` when slots were skipped since the last update (so the skipped
/// slots are unknown, not this point's value). The outcome is exactly [`update`]'s of those
/// texts, without writing or reading them: one lock of the entry, no text to parse
/// (formatting the texts and reading them back, under two locks, took about a third of
/// carbon's CPU).
pub fn update_slot(
    d: &Daemon,
    e: &Arc<Entry>,
    t: i64,
    value: Option<&str>,
    queued: &mut u64,
    scratch: &mut Sample,
) -> Result<Slot, Response> {
    under_lock(d, e, queued, |st| {
        let sh = &st.shadow;
        let n_ds = sh.schema.ds.len();
        if n_ds != 1 {
            return Err(Response::err(format!(
                "{} has {n_ds} data sources; a Graphite metric has one",
                e.name
            )));
        }
        let (step, last) = (sh.schema.step as i64, sh.last_up);
        let end = t - t.rem_euclid(step) + step;
        if end <= last {
            return Ok(Slot::Late);
        }
        if end - step > last {
            admit_one(d, e, st, end - step, None, scratch)?;
        }
        admit_one(d, e, st, end, value, scratch)?;
        Ok(Slot::Queued)
    })
}

/// Run `f` on `e`'s state under its lock, once the daemon is known to take updates and the
/// series to exist; then list the entry as holding unapplied values if it now does, and
/// count the bytes its queue grew by in `queued`.
fn under_lock<T>(
    d: &Daemon,
    e: &Arc<Entry>,
    queued: &mut u64,
    f: impl FnOnce(&mut EntryState) -> Result<T, Response>,
) -> Result<T, Response> {
    let mut st = e.lock();
    // Checked under the entry's lock: once shutdown has set the flag and taken every entry's
    // lock once, nothing more can be queued behind the final commit's back.
    if d.closing() {
        return Err(Response::err(CLOSING));
    }
    if st.gone {
        return Err(Response::err(format!(
            "No such file: {}",
            d.abs_of(&e.name)
        )));
    }
    let (was_applied, len) = (!st.unapplied(), st.queue.len());
    let outcome = f(&mut st);
    if was_applied && st.unapplied() && !st.in_dirty {
        st.in_dirty = true;
        d.dirty(e);
    }
    *queued += (st.queue.len() - len) as u64;
    outcome
}

fn accept<'a>(
    d: &Daemon,
    e: &Entry,
    st: &mut EntryState,
    values: impl Iterator<Item = Cow<'a, str>>,
    scratch: &mut Sample,
) -> Result<usize, Response> {
    let mut n = 0;
    for v in values {
        let v: &str = &v;
        // Carbon's points may have left the shadow behind: this value's outcome needs it.
        st.catch_up(scratch);
        // rrdcached's own check: a number, then ':', later than the last update.
        let Some(stamp) = sample::stamp(v) else {
            return Err(Response::err(format!("Cannot find timestamp in '{v}'!")));
        };
        let sh = &st.shadow;
        let last = sh.last_up as f64 + sh.last_up_usec as f64 / 1e6;
        if stamp <= last {
            return Err(Response::err(format!(
                "illegal attempt to update using time {stamp:.6} when last update time is {last:.6} (minimum one second step)"
            )));
        }
        // ringlet checks the values now (rrdcached only when it writes, dropping the file's
        // later values on a bad one): an error here refuses this value and the rest.
        sample::read(&st.shadow.schema, v, stamp, scratch)
            .map_err(|err| refusal(d, e, &err.msg))?;
        admit(d, e, st, scratch, v.len(), |q, flag| q.push(flag, v))?;
        n += 1;
    }
    Ok(n)
}

/// [`admit`] of the update `time:value` (`U` for None) of a series with one data source,
/// from its parts.
fn admit_one(
    d: &Daemon,
    e: &Entry,
    st: &mut EntryState,
    time: i64,
    value: Option<&str>,
    scratch: &mut Sample,
) -> Result<(), Response> {
    let text = value.unwrap_or("U");
    if let Some(refused) = refused_before(d, e, st, 21 + text.len()) {
        return Err(refused);
    }
    if st.admit_known(time, value) {
        return Ok(());
    }
    st.catch_up(scratch);
    scratch.time = time;
    scratch.usec = 0;
    scratch.values.truncate(1);
    match scratch.values.first_mut() {
        Some(v) => v.clear(),
        None => scratch.values.push(String::new()),
    }
    scratch.values[0].push_str(text);
    admit(d, e, st, scratch, 21 + text.len(), |q, flag| {
        q.push_parts(flag, time, text)
    })
}

/// Why no value of `len` bytes (at most) can be queued now, if it cannot: the store
/// failed, or the series' queue is full.
fn refused_before(d: &Daemon, e: &Entry, st: &EntryState, len: usize) -> Option<Response> {
    if let Some(msg) = d.failure() {
        return Some(refusal(d, e, &msg));
    }
    // Positions in a queue are u32 (an entry of a million is 128 bytes, not 144): a
    // series with 4 GiB queued takes no more until a commit.
    if st.queue.len() + len + 32 > u32::MAX as usize {
        return Some(refusal(
            d,
            e,
            "too many values queued for this series; try again after a FLUSH",
        ));
    }
    None
}

fn refusal(d: &Daemon, e: &Entry, msg: &str) -> Response {
    Response::err(format!("{}: {msg}", d.abs_of(&e.name)))
}

/// Apply the value read into `scratch` (`len` bytes of text, at most) to the shadow and,
/// unless that refuses it, queue it with `push`.
fn admit(
    d: &Daemon,
    e: &Entry,
    st: &mut EntryState,
    scratch: &Sample,
    len: usize,
    push: impl FnOnce(&mut crate::entry::Queue, u8),
) -> Result<(), Response> {
    if let Some(refused) = refused_before(d, e, st, len) {
        return Err(refused);
    }
    match st.shadow.apply(scratch) {
        Ok(()) => {}
        Err(ApplyError::Rejected(err)) => return Err(refusal(d, e, &err.msg)),
        Err(ApplyError::Partial(err)) => {
            // Applied up to the failure, as rrdtool leaves it: queued to be applied and
            // logged the same way, but not pending (it was refused).
            push(&mut st.queue, PARTIAL);
            return Err(refusal(d, e, &err.msg));
        }
    }
    push(&mut st.queue, ACCEPTED);
    st.pending_n += 1;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use rrd::Rrd;

    fn gauge(kind: &str) -> Rrd {
        let args = [
            "x.rrd",
            "--step",
            "10",
            &format!("DS:v:{kind}:35:U:U"),
            "RRA:AVERAGE:0.5:1:50",
            "RRA:MAX:0.5:3:20",
        ]
        .map(String::from);
        let schema = rrd::create::parse_create(&args, 1_700_000_000)
            .unwrap()
            .schema;
        Rrd::new(schema, 1_700_000_000)
    }

    /// States compared with their NaNs equal.
    fn same<T: std::fmt::Debug>(x: &T) -> String {
        format!("{x:?}")
    }

    fn apply(r: &mut Rrd, text: &str) -> bool {
        let s = rrd::update::parse_update_arg(&r.schema, text, None, (0, 0)).unwrap();
        r.apply(&s, &mut |_| {}).is_ok()
    }

    /// Carbon's points queued without touching the shadow, UPDATEs that need it, the queue
    /// applied and committed in between, in random order: the store ends as rrdtool's
    /// updates of the same values leave the file, and the shadow, whenever a value needs
    /// it, is the series as it stands.
    #[test]
    fn points_queued_without_the_shadow_end_as_every_value_applied_in_turn() {
        let (d, _c) = crate::daemon::series::tests::daemon(Some("ingest"), false);
        let mut seed = 11u64;
        let mut next = |n: u64| {
            seed = seed
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            (seed >> 33) % n
        };
        for (k, kind) in ["GAUGE", "ABSOLUTE", "COUNTER"].iter().enumerate() {
            let name = format!("s{k}.rrd");
            d.lock().store.create(&name, gauge(kind), false).unwrap();
            let e = entry_for(&d, &name).unwrap();
            let mut want = gauge(kind);
            let (mut queued, mut scratch) = (0u64, rrd::update::reuse::scratch());
            let mut t = 1_700_000_000i64;
            let mut refused = 0;
            for _ in 0..600 {
                t += next(25) as i64;
                let value = match next(6) {
                    0 => None,
                    1 => Some("1e3".to_string()),
                    2 => Some(format!("-{}.{}", next(100), next(10))),
                    _ => Some(format!("{}", next(1000))),
                };
                match next(10) {
                    0..=5 => {
                        let r = update_slot(&d, &e, t, value.as_deref(), &mut queued, &mut scratch);
                        let step = want.schema.step as i64;
                        let end = t - t.rem_euclid(step) + step;
                        if end <= want.last_up {
                            assert_eq!(r, Ok(Slot::Late));
                            continue;
                        }
                        if end - step > want.last_up {
                            assert!(apply(&mut want, &format!("{}:U", end - step)));
                        }
                        // A COUNTER refuses a value that is not an integer, within its
                        // heartbeat.
                        let text = format!("{end}:{}", value.as_deref().unwrap_or("U"));
                        let ok = apply(&mut want, &text);
                        assert_eq!(r.is_ok(), ok, "{text}: {r:?}");
                        refused += usize::from(!ok);
                    }
                    6 | 7 => {
                        let text = format!("{t}:{}", value.as_deref().unwrap_or("U"));
                        let ok = apply(&mut want, &text);
                        let vals = std::iter::once(Cow::Borrowed(text.as_str()));
                        let r = update(&d, &e, vals, &mut queued, &mut scratch);
                        assert_eq!(r.is_ok(), ok, "{text}: {r:?}");
                        // This value needed the shadow: it is the series as it stands.
                        let st = e.lock();
                        assert_eq!(st.shadow.last_up, want.last_up);
                        assert_eq!(same(&st.shadow.pdp), same(&want.pdp), "{text}");
                    }
                    8 => {
                        let mut inner = d.lock();
                        d.apply_series(&mut inner, &name);
                    }
                    _ => {
                        let mut inner = d.lock();
                        d.apply_all(&mut inner);
                        d.commit(&mut inner).unwrap();
                    }
                }
            }
            let mut inner = d.lock();
            d.apply_all(&mut inner);
            d.commit(&mut inner).unwrap();
            let got = inner.store.get(&name).unwrap();
            assert_eq!(got.last_up, want.last_up, "{kind}");
            assert_eq!(same(&got.pdp), same(&want.pdp), "{kind}");
            assert_eq!(same(&got.cdp), same(&want.cdp), "{kind}");
            assert!(
                same(&got.rra) == same(&want.rra),
                "{kind}: the archives differ"
            );
            let st = e.lock();
            assert_eq!(same(&st.shadow.pdp), same(&want.pdp), "{kind}");
            assert_eq!(refused > 0, *kind == "COUNTER", "{kind}: {refused} refused");
            assert_eq!(st.queue.len(), 0);
        }
    }
}
