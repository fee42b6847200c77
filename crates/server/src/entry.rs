//! The per-series ingest entries and their index: what UPDATE checks a value against and
//! where accepted values wait ([`crate::ingest`] checks and queues them, [`crate::daemon::commit`]
//! applies them to the store).
//!
//! Every series that has been updated has an [`Entry`]: a *shadow* of its RRD (the schema's
//! data sources, the last update time and the PDP state, no archives) advanced by every
//! accepted value, and the queue of accepted values as text ([`Queue`], in about half the
//! bytes of the text). Entries are created under the store lock when a series is first
//! updated and are never removed (a replaced series resets its entry in place), so the
//! [`Index`] only grows with the store and a looked-up entry stays valid.

use codec::bytes::{ByteReader, ByteWriter};
use hashbrown::HashTable;
use rrd::update::{ApplyError, Sample};
use rrd::{Rrd, Schema};
use std::fmt::Write as _;
use std::hash::BuildHasher;
use std::sync::{Arc, Mutex, MutexGuard, RwLock};

/// Queue line flag: the value was accepted.
pub const ACCEPTED: u8 = b'A';
/// Queue line flag: applying the value fails after changing some state (the client was told;
/// rrdtool keeps such partial updates, so it is applied and logged all the same).
pub const PARTIAL: u8 = b'P';

/// One series as ingest sees it.
pub struct Entry {
    /// Store name. The index and the connections' maps key the entry by this very copy
    /// (a name under the base directory sent whole is looked up without the base's prefix,
    /// [`Daemon::index_key`]): each name is held once, whatever the number of connections.
    /// rrdcached's absolute name for it is not kept ([`Daemon::abs_of`] makes it when
    /// needed): a million series would hold 100 MB of them.
    pub name: Arc<str>,
    state: Mutex<EntryState>,
}

/// What an entry holds; behind the entry's own mutex.
pub struct EntryState {
    /// The series' RRD without archives, as it will be once every queued value is applied.
    pub shadow: Shadow,
    /// Values accepted since the last commit that made them durable, a flag and the value's
    /// text each: the part after `applied` waits to be applied to the store; the lines
    /// flagged [`ACCEPTED`] are the ones PENDING lists. One copy of the text serves both.
    pub queue: Queue,
    /// Lines flagged [`ACCEPTED`] in `queue` (QUEUE's count).
    pub pending_n: u32,
    /// The prefix of `queue` (bytes, accepted values) already applied to the store: the next
    /// commit makes it durable.
    pub applied: u32,
    pub applied_n: u32,
    /// Listed in the daemon's list of entries with queued values.
    pub in_dirty: bool,
    /// Listed in the daemon's list of entries applied since the last commit.
    pub in_applied: bool,
    /// The series was removed (through the view): UPDATE says there is no such file until
    /// it is created again ([`EntryState::reset`]).
    pub gone: bool,
    /// The queue's byte from which on its values are not in the shadow's PDP state (only
    /// its last update time), or [`FRESH`]: values whose outcome is known without it
    /// ([`EntryState::admit_known`]). [`EntryState::catch_up`] applies them to the shadow,
    /// and applying the queue to the store brings the shadow up to date
    /// ([`EntryState::applied_to`]).
    behind: u32,
    /// The shadow's last update (seconds, microseconds) when it fell behind: where
    /// [`EntryState::catch_up`] starts from.
    behind_up: (i64, u32),
}

/// [`EntryState`]'s shadow holds every queued value.
const FRESH: u32 = u32::MAX;

impl Entry {
    /// The entry of series `name` (the store's own copy of it: [`engine::Store::shared_name`]).
    pub fn new(name: Arc<str>, rrd: &Rrd) -> Entry {
        Entry {
            name,
            state: Mutex::new(EntryState {
                shadow: shadow_of(rrd),
                queue: Queue::default(),
                pending_n: 0,
                applied: 0,
                applied_n: 0,
                in_dirty: false,
                in_applied: false,
                gone: false,
                behind: FRESH,
                behind_up: (0, 0),
            }),
        }
    }

    pub fn lock(&self) -> MutexGuard<'_, EntryState> {
        // Every update of the state is complete before anything can panic.
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }
}

impl EntryState {
    /// Whether values wait to be applied to the store.
    pub fn unapplied(&self) -> bool {
        self.queue.len() > self.applied as usize
    }

    /// The values PENDING lists: accepted since the last commit, in order.
    pub fn pending(&self) -> Vec<String> {
        let mut out = Vec::new();
        self.queue.each_from(0, &mut |flag, v| {
            if flag == ACCEPTED {
                out.push(v.to_string());
            }
        });
        out
    }

    /// Forget every queued and pending value and take `rrd` (the store's series, everything
    /// applied) as the new starting point: after CREATE, FORGET, or a re-read file.
    pub fn reset(&mut self, rrd: &Rrd) {
        self.set_shadow(rrd);
        self.queue = Queue::default();
        self.pending_n = 0;
        self.applied = 0;
        self.applied_n = 0;
        self.gone = false;
    }

    /// The shadow of `rrd`, the series as it stands with every queued value applied.
    pub fn set_shadow(&mut self, rrd: &Rrd) {
        self.shadow = shadow_of(rrd);
        self.behind = FRESH;
    }

    /// Queue `time:value` (`U` for None) of a series of one GAUGE or ABSOLUTE data source
    /// without applying it to the shadow, when its outcome is known: accepted. It is, when
    /// `time` is after the last update and the value is unknown or a plain decimal
    /// (`plain_decimal`): rrdtool reads such a number, and neither data source refuses a
    /// number (out of its range, or past the heartbeat, it becomes unknown). False, and
    /// nothing queued, otherwise. Carbon's points take this way: the shadow's PDP state,
    /// a cache line of its own, is not touched a point.
    pub fn admit_known(&mut self, time: i64, value: Option<&str>) -> bool {
        let sh = &self.shadow;
        let known = time > sh.last_up
            && time > 0
            && sh.schema.ds.len() == 1
            && matches!(
                sh.schema.ds[0].kind,
                rrd::DsType::Gauge | rrd::DsType::Absolute
            );
        let decimal = match value {
            Some(v) => match plain_decimal(v) {
                Some(d) => Some(d),
                None => return false,
            },
            None => None,
        };
        if !known {
            return false;
        }
        if self.behind == FRESH {
            self.behind = self.queue.len() as u32;
            self.behind_up = (self.shadow.last_up, self.shadow.last_up_usec as u32);
        }
        self.queue.push_known(ACCEPTED, time as u64, decimal);
        self.shadow.last_up = time;
        self.shadow.last_up_usec = 0;
        self.pending_n += 1;
        true
    }

    /// Apply to the shadow the values [`EntryState::admit_known`] queued without it, so
    /// that it holds every queued value (before a value whose outcome needs its state).
    pub fn catch_up(&mut self, scratch: &mut Sample) {
        if self.behind == FRESH {
            return;
        }
        let (shadow, queue) = (&mut self.shadow, &self.queue);
        (shadow.last_up, shadow.last_up_usec) = (self.behind_up.0, i64::from(self.behind_up.1));
        queue.each_from(self.behind as usize, &mut |_, v| {
            // Written by admit_known: a time and a value that read, and apply.
            if let Some(stamp) = rrd::update::reuse::stamp(v) {
                if rrd::update::reuse::read(&shadow.schema, v, stamp, scratch).is_ok() {
                    let _ = shadow.apply(scratch);
                }
            }
        });
        self.behind = FRESH;
    }

    /// Every queued value was applied to the store's series, now `rrd`: the shadow, if it
    /// was behind, takes its state.
    pub fn applied_to(&mut self, rrd: Option<&Rrd>) {
        if self.behind != FRESH {
            match rrd {
                Some(rrd) if rrd.pdp.len() == self.shadow.pdp.len() => {
                    self.shadow.last_up = rrd.last_up;
                    self.shadow.last_up_usec = rrd.last_up_usec;
                    self.shadow.pdp.clone_from_slice(&rrd.pdp);
                }
                Some(rrd) => self.shadow = shadow_of(rrd),
                None => {}
            }
            self.behind = FRESH;
        }
    }

    /// The first `cut` bytes of the queue, applied to the store, are durable: drop them.
    pub fn drain(&mut self, cut: u32) {
        self.queue.drain_to(cut as usize);
        if self.behind != FRESH {
            // Values applied to the store brought the shadow up to date (applied_to): what
            // it lacks was queued after them.
            debug_assert!(self.behind >= cut);
            self.behind = self.behind.saturating_sub(cut);
        }
    }

    /// The series was removed: its queued values are dropped and UPDATE refuses new ones.
    pub fn remove(&mut self) {
        self.behind = FRESH;
        self.queue = Queue::default();
        self.pending_n = 0;
        self.applied = 0;
        self.applied_n = 0;
        self.gone = true;
    }
}

/// A series as ingest checks it: `rrd` without its archives, what `Rrd::apply` needs to
/// decide an update's outcome. Not an `Rrd`: its empty lists of consolidation states and
/// archives would take 48 bytes in each of a million entries.
pub struct Shadow {
    /// The series' schema without archives, interned (one copy for every series of it).
    pub schema: Arc<Schema>,
    pub last_up: i64,
    pub last_up_usec: i64,
    pub pdp: Box<[rrd::state::PdpPrep]>,
}

impl Shadow {
    /// [`Rrd::apply`] on the shadow: the outcome the series itself will give.
    pub fn apply(&mut self, s: &Sample) -> Result<(), ApplyError> {
        // The schema is lent, not cloned: it is interned, so its count is a cache line that
        // every connection thread would write twice a value (a twelfth of carbon's CPU).
        let lent = LENT.with(Arc::clone);
        let mut rrd = Rrd {
            schema: std::mem::replace(&mut self.schema, lent),
            last_up: self.last_up,
            last_up_usec: self.last_up_usec,
            pdp: std::mem::take(&mut self.pdp).into_vec(),
            cdp: Vec::new(),
            rra: Vec::new(),
            hw: None,
        };
        let r = rrd.apply(s, &mut |_| {});
        self.schema = rrd.schema;
        self.last_up = rrd.last_up;
        self.last_up_usec = rrd.last_up_usec;
        self.pdp = rrd.pdp.into_boxed_slice();
        r
    }
}

thread_local! {
    /// What a [`Shadow`] holds while its schema is lent to the `Rrd` that applies a value.
    static LENT: Arc<Schema> = Arc::new(Schema {
        step: 1,
        ds: Vec::new(),
        rra: Vec::new(),
    });
}

/// The [`Shadow`] of `rrd`.
pub fn shadow_of(rrd: &Rrd) -> Shadow {
    Shadow {
        schema: rrd::schema::intern(&Arc::new(Schema {
            step: rrd.schema.step,
            ds: rrd.schema.ds.clone(),
            rra: Vec::new(),
        })),
        last_up: rrd.last_up,
        last_up_usec: rrd.last_up_usec,
        pdp: rrd.pdp.clone().into_boxed_slice(),
    }
}

const SHARDS: usize = 16;

/// Entries by store name: a sharded table that connection threads read without the store
/// lock. A slot holds the entry alone (8 bytes, not a name's 16 beside it): a probe compares
/// the entry's own name.
pub struct Index {
    shards: Vec<RwLock<HashTable<Arc<Entry>>>>,
    hasher: std::collections::hash_map::RandomState,
}

impl Default for Index {
    fn default() -> Index {
        Index {
            shards: (0..SHARDS).map(|_| RwLock::new(HashTable::new())).collect(),
            hasher: std::collections::hash_map::RandomState::new(),
        }
    }
}

impl Index {
    fn hash(&self, key: &str) -> u64 {
        self.hasher.hash_one(key)
    }

    fn shard(&self, hash: u64) -> &RwLock<HashTable<Arc<Entry>>> {
        &self.shards[(hash >> 59) as usize % SHARDS]
    }

    pub fn get(&self, key: &str) -> Option<Arc<Entry>> {
        let h = self.hash(key);
        let g = self.shard(h).read().unwrap_or_else(|p| p.into_inner());
        g.find(h, |e| &*e.name == key).cloned()
    }

    /// Every entry.
    pub fn entries(&self) -> Vec<Arc<Entry>> {
        let mut out = Vec::new();
        for s in &self.shards {
            let g = s.read().unwrap_or_else(|p| p.into_inner());
            out.extend(g.iter().cloned());
        }
        out
    }

    /// Add `e` under its store name.
    pub fn insert(&self, e: &Arc<Entry>) {
        let h = self.hash(&e.name);
        let mut g = self.shard(h).write().unwrap_or_else(|p| p.into_inner());
        if g.find(h, |x| x.name == e.name).is_none() {
            g.insert_unique(h, e.clone(), |x| self.hash(&x.name));
        }
    }
}

/// A series' queued values in about half the bytes of their text: the values of one
/// series mostly start with a whole-second timestamp a few seconds after the one before
/// (`1795595680:12.5`), so such a value is kept as its timestamp's offset from the queue's
/// first one (a varint, usually one or two bytes) and its fields, each a varint header:
/// bit 0, another field follows; bit 1, a plain decimal (`12.50`, `-3`, `1795`: up to 16
/// digits, no leading zero, no `+` or exponent) kept as its digits (bits 6 and up, zigzag)
/// and the number of digits after its point (bits 2-5); else the field's length (bits 2
/// and up) and its text. A line is a flag byte (bit 7 set: the compact form), then in the
/// compact form the offset and the fields, else the text with its length
/// ([`ByteWriter::str`]). Lines read back give exactly the text that was queued. A million
/// series each hold a `-w` window of values, so the bytes count: a value of Ganglia's or
/// collectd's takes 4-9 bytes this way, 9-16 as text.
#[derive(Default)]
pub struct Queue {
    w: ByteWriter,
    /// The timestamp compact offsets count from (set by the first line of an empty queue).
    base: u64,
    /// Bytes the queue held when a commit last emptied it: the next window's first value
    /// takes about that much room at once, not a few dozen bytes at a time (a tenth of
    /// carbon's CPU went to growing queues).
    last: u32,
}

const COMPACT: u8 = 0x80;
const MORE: u64 = 1;
const DECIMAL: u64 = 2;

/// The whole-second timestamp `v` starts with, written canonically (digits, no leading
/// zero), and the text after its colon.
fn plain_stamp(v: &str) -> Option<(u64, &str)> {
    let (ts, rest) = v.split_once(':')?;
    let b = ts.as_bytes();
    if b.is_empty() || b.len() > 19 || b[0] == b'0' || !b.iter().all(u8::is_ascii_digit) {
        return None;
    }
    Some((ts.parse().ok()?, rest))
}

/// A field written as a plain decimal: its digits as an integer and the count of digits
/// after the point, when [`write_decimal`] gives exactly `f` back from them.
fn plain_decimal(f: &str) -> Option<(i64, u32)> {
    let (neg, body) = match f.strip_prefix('-') {
        Some(b) => (true, b),
        None => (false, f),
    };
    let (int, frac) = match body.split_once('.') {
        Some((i, fr)) if !fr.is_empty() => (i, fr),
        Some(_) => return None,
        None => (body, ""),
    };
    let digits = int.len() + frac.len();
    let ok = |s: &str| s.bytes().all(|c| c.is_ascii_digit());
    if int.is_empty()
        || (int.len() > 1 && int.starts_with('0'))
        || digits > 16
        || frac.len() > 15
        || !ok(int)
        || !ok(frac)
    {
        return None;
    }
    let mut m: i64 = 0;
    for c in int.bytes().chain(frac.bytes()) {
        m = m * 10 + i64::from(c - b'0');
    }
    if neg && m == 0 {
        return None; // `-0` would come back as `0`
    }
    Some((if neg { -m } else { m }, frac.len() as u32))
}

/// The text of a plain decimal: `m`'s digits with a point before the last `scale`.
fn write_decimal(out: &mut String, m: i64, scale: u32) {
    if m < 0 {
        out.push('-');
    }
    // At least one digit before the point: zeros in front, written in place (a commit
    // reads back every queued value this way).
    let scale = scale as usize;
    let _ = write!(out, "{:0w$}", m.unsigned_abs(), w = scale + 1);
    if scale > 0 {
        out.insert(out.len() - scale, '.');
    }
}

impl Queue {
    /// Bytes held (positions in the queue are byte offsets).
    pub fn len(&self) -> usize {
        self.w.buf.len()
    }

    pub fn is_empty(&self) -> bool {
        self.w.buf.is_empty()
    }

    pub fn push(&mut self, flag: u8, v: &str) {
        match plain_stamp(v) {
            Some((t, rest)) => self.push_stamped(flag, t, rest, v),
            None => self.push_text(flag, v),
        }
    }

    /// [`Queue::push`] of the value `time:fields` given by its parts (no text to read back).
    pub fn push_parts(&mut self, flag: u8, time: i64, fields: &str) {
        match u64::try_from(time) {
            Ok(t) if t > 0 => self.push_stamped(flag, t, fields, ""),
            _ => self.push_text(flag, &format!("{time}:{fields}")),
        }
    }

    /// [`Queue::push_parts`] of one field, `U` (None) or the plain decimal `(m, scale)`
    /// ([`plain_decimal`]), at second `t` (more than 0).
    fn push_known(&mut self, flag: u8, t: u64, decimal: Option<(i64, u32)>) {
        let Some((m, scale)) = decimal else {
            return self.push_stamped(flag, t, "U", "");
        };
        if self.is_empty() {
            self.base = t;
        }
        if t < self.base {
            let mut text = format!("{t}:");
            write_decimal(&mut text, m, scale);
            return self.push_text(flag, &text);
        }
        self.reserve(24);
        self.w.u8(flag | COMPACT);
        self.w.varint(t - self.base);
        let zz = ((m << 1) ^ (m >> 63)) as u64;
        self.w.varint(zz << 6 | u64::from(scale) << 2 | DECIMAL);
    }

    /// The value whose canonical timestamp is `t` and whose text after it is `rest`; `v`,
    /// its whole text (empty: made from the parts when needed).
    fn push_stamped(&mut self, flag: u8, t: u64, rest: &str, v: &str) {
        if self.is_empty() {
            self.base = t;
        }
        if t < self.base {
            return match v {
                "" => self.push_text(flag, &format!("{t}:{rest}")),
                v => self.push_text(flag, v),
            };
        }
        // Grown by a quarter, not doubled: a million series each hold a window of values.
        self.reserve(rest.len() + 24);
        self.w.u8(flag | COMPACT);
        self.w.varint(t - self.base);
        let mut rest = rest;
        loop {
            let (f, more) = match memchr::memchr(b':', rest.as_bytes()) {
                Some(i) => (&rest[..i], MORE),
                None => (rest, 0),
            };
            match plain_decimal(f) {
                Some((m, scale)) => {
                    let zz = ((m << 1) ^ (m >> 63)) as u64;
                    self.w
                        .varint(zz << 6 | u64::from(scale) << 2 | DECIMAL | more);
                }
                None => {
                    self.w.varint((f.len() as u64) << 2 | more);
                    self.w.buf.extend_from_slice(f.as_bytes());
                }
            }
            if more == 0 {
                return;
            }
            rest = &rest[f.len() + 1..];
        }
    }

    fn push_text(&mut self, flag: u8, v: &str) {
        if self.is_empty() {
            self.base = 0;
        }
        self.reserve(v.len() + 12);
        self.w.u8(flag);
        self.w.str(v);
    }

    fn reserve(&mut self, need: usize) {
        let buf = &mut self.w.buf;
        if buf.capacity() - buf.len() < need {
            let last = self.last as usize;
            buf.reserve_exact(need.max(buf.len() / 4).max(32).max(last + last / 8));
            self.last = 0;
        }
    }

    /// Each line from byte `at` (a line's start) on, in order: its flag, its text and the
    /// byte where the next line starts.
    fn lines_from(&self, at: usize, f: &mut dyn FnMut(u8, &str, usize)) {
        let mut r = ByteReader::new(self.w.buf.get(at..).unwrap_or_default());
        let mut text = String::new();
        // Written by `push`: the reads below fail only past the end.
        while let Ok(flag) = r.u8() {
            if flag & COMPACT == 0 {
                // Pushed from &str, cut at line boundaries: always valid UTF-8.
                let Ok(body) = r.bytes() else { break };
                f(
                    flag,
                    std::str::from_utf8(body).unwrap_or_default(),
                    at + r.pos(),
                );
                continue;
            }
            let Ok(offset) = r.varint() else { break };
            text.clear();
            let _ = write!(text, "{}", self.base + offset);
            loop {
                let Ok(h) = r.varint() else { return };
                text.push(':');
                if h & DECIMAL != 0 {
                    let zz = h >> 6;
                    let m = (zz >> 1) as i64 ^ -((zz & 1) as i64);
                    write_decimal(&mut text, m, ((h >> 2) & 15) as u32);
                } else {
                    let Ok(b) = r.take((h >> 2) as usize) else {
                        return;
                    };
                    text.push_str(std::str::from_utf8(b).unwrap_or_default());
                }
                if h & MORE == 0 {
                    break;
                }
            }
            f(flag & !COMPACT, &text, at + r.pos());
        }
    }

    /// Each line from byte `at` (a line's start) on, in order: its flag and its text.
    pub fn each_from(&self, at: usize, f: &mut dyn FnMut(u8, &str)) {
        self.lines_from(at, &mut |flag, text, _| f(flag, text));
    }

    /// Drop the first `cut` bytes (whole lines); the room goes back once the queue is empty,
    /// or mostly, when what is left would use less than half of it.
    pub fn drain_to(&mut self, cut: usize) {
        if cut >= self.len() {
            self.last = u32::try_from(self.len()).unwrap_or(u32::MAX);
            self.w = ByteWriter::new();
        } else {
            self.w.buf.drain(..cut);
            if self.w.buf.len() * 2 < self.w.buf.capacity() {
                self.w
                    .buf
                    .shrink_to(self.w.buf.len() + self.w.buf.len() / 4);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A window of values costs about its bytes, not a doubled buffer, and a commit that
    /// leaves little queued gives the room back.
    #[test]
    fn a_queue_holds_little_more_than_its_values() {
        let mut q = Queue::default();
        for i in 0..30 {
            q.push(ACCEPTED, &format!("{}:{}.25", 1_795_595_680 + 10 * i, i));
        }
        let (len, cap) = (q.len(), q.w.buf.capacity());
        assert!(cap <= len + len / 4 + 32, "{cap} bytes for {len}");
        let mut lines = 0;
        q.each_from(0, &mut |_, _| lines += 1);
        assert_eq!(lines, 30);
        // Keep the last two lines.
        let mut ends = Vec::new();
        q.lines_from(0, &mut |_, _, end| ends.push(end));
        let cut = ends[27];
        let mut left = Vec::new();
        q.each_from(cut, &mut |_, t| left.push(t.to_string()));
        q.drain_to(cut);
        assert!(
            q.w.buf.capacity() <= q.len() * 2,
            "{} bytes kept",
            q.w.buf.capacity()
        );
        let mut after = Vec::new();
        q.each_from(0, &mut |_, t| after.push(t.to_string()));
        assert_eq!(after, left);
        assert_eq!(after[1], "1795595970:29.25");
        // A commit that empties it gives all the room back; the next window takes about
        // as much as the last one held at its first value, and no more.
        let mut held = 0;
        for round in 0..3 {
            for i in 0..30 {
                let t = 1_795_596_000 + 300 * round + 10 * i;
                q.push(ACCEPTED, &format!("{t}:{i}.25"));
                if i == 0 && round > 0 {
                    let cap = q.w.buf.capacity();
                    assert!(cap >= held && cap <= held + held / 4, "{cap} for {held}");
                }
            }
            let (len, cap) = (q.len(), q.w.buf.capacity());
            held = len;
            assert!(cap <= len + len / 4 + 32, "{cap} bytes for {len}");
            q.drain_to(q.len());
            assert_eq!(q.w.buf.capacity(), 0);
        }
    }

    #[test]
    fn a_queue_gives_back_exactly_the_text_queued() {
        let vals = [
            "1795595680:12.5",
            "1795595690:U:3",
            "N:1",
            "1795595700.25:7",
            "01795595710:7",
            "1795595720@1:2",
            "1795595730:é",
            "1795595600:earlier than the first",
            "18446744073709551615:big",
            "1795595740:",
            "1795595750:-0",
            "1795595760:-0.50:0:00:1.:.5:+1:1e5:0.000000000000001:0.0000000000000001",
            "1795595770:12345678901234567:1234567890123456:-9999999999999999:-0.0",
            "1795595780:3:4::5:007:-12.3400:0.0:٣",
        ];
        let mut q = Queue::default();
        let mut starts = Vec::new();
        for (i, v) in vals.iter().enumerate() {
            starts.push(q.len());
            q.push(if i % 3 == 0 { PARTIAL } else { ACCEPTED }, v);
        }
        let text: usize = vals.iter().map(|v| v.len() + 2).sum();
        assert!(q.len() < text, "{} bytes for {text} of text", q.len());
        let mut got = Vec::new();
        q.each_from(0, &mut |f, v| got.push((f, v.to_string())));
        let want: Vec<(u8, String)> = vals
            .iter()
            .enumerate()
            .map(|(i, v)| (if i % 3 == 0 { PARTIAL } else { ACCEPTED }, v.to_string()))
            .collect();
        assert_eq!(got, want);
        // Applied lines dropped at a line boundary: the rest reads the same.
        q.drain_to(starts[4]);
        let mut rest = Vec::new();
        q.each_from(0, &mut |f, v| rest.push((f, v.to_string())));
        assert_eq!(rest, want[4..]);
        q.drain_to(q.len());
        assert!(q.is_empty());
        q.push(ACCEPTED, "1795595750:1");
        let mut last = Vec::new();
        q.each_from(0, &mut |_, v| last.push(v.to_string()));
        assert_eq!(last, ["1795595750:1"]);
        // A value given by its parts is kept as its text would be, and reads back as it.
        let parts: Vec<(i64, &str)> = vals
            .iter()
            .filter_map(|v| v.split_once(':'))
            .filter_map(|(t, rest)| Some((t.parse().ok()?, rest)))
            .chain([(0, "1"), (-5, "2"), (1795595790, "U"), (1795595700, "3")])
            .collect();
        let (mut by_text, mut by_parts) = (Queue::default(), Queue::default());
        for &(t, rest) in &parts {
            by_text.push(ACCEPTED, &format!("{t}:{rest}"));
            by_parts.push_parts(ACCEPTED, t, rest);
        }
        assert_eq!(by_parts.w.buf, by_text.w.buf);
        // And a plain decimal or U given as its number, as its text would be.
        let (mut by_text, mut by_number) = (Queue::default(), Queue::default());
        for (i, text) in ["12.5", "U", "-3", "0.001", "1795", "U", "-0.50"]
            .iter()
            .enumerate()
        {
            let t = 1_795_595_680 + 10 * i as u64;
            by_text.push(ACCEPTED, &format!("{t}:{text}"));
            let decimal = plain_decimal(text);
            assert_eq!(decimal.is_none(), *text == "U");
            by_number.push_known(ACCEPTED, t, decimal);
        }
        by_number.push_known(ACCEPTED, 5, Some((-7, 1)));
        by_text.push(ACCEPTED, "5:-0.7");
        assert_eq!(by_number.w.buf, by_text.w.buf);
        let mut got = Vec::new();
        by_parts.each_from(0, &mut |_, v| got.push(v.to_string()));
        let want: Vec<String> = parts.iter().map(|(t, r)| format!("{t}:{r}")).collect();
        assert_eq!(got, want);
    }

    /// Plain decimals are kept as integers: a window of Ganglia's or collectd's values costs
    /// a few bytes a value, and each comes back as it was written.
    #[test]
    fn plain_decimals_take_a_few_bytes_and_come_back_the_same() {
        let mut q = Queue::default();
        let mut want = Vec::new();
        let mut x: u64 = 12345;
        for i in 0..300u64 {
            x = x
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            let v = match i % 4 {
                0 => format!("{}.{:02}", (x >> 40) % 100, (x >> 20) % 100),
                1 => format!("{}", (x >> 24) % 10_000_000),
                2 => format!("-{}.{:03}", (x >> 40) % 10, (x >> 8) % 1000),
                _ => format!("{}.{:06}", (x >> 33) % 1000, (x >> 3) % 1_000_000),
            };
            let line = format!("{}:{v}", 1_795_595_680 + 10 * i);
            q.push(ACCEPTED, &line);
            want.push(line);
        }
        let mut got = Vec::new();
        q.each_from(0, &mut |_, t| got.push(t.to_string()));
        assert_eq!(got, want);
        // As text: a flag, the offset (two bytes past 127 s), the length and the value.
        let text: usize = want.iter().map(|v| 4 + v.len() - 11).sum();
        assert!(
            q.len() * 10 < text * 7,
            "{} bytes where their text took {text}",
            q.len()
        );
        assert!(q.len() <= 300 * 15 / 2, "{} bytes for 300 values", q.len());
    }

    const T: i64 = 1_790_000_000;

    fn rrd(ds: &[&str]) -> Rrd {
        let mut args: Vec<String> = ["x.rrd", "--start", &T.to_string(), "--step", "10"]
            .iter()
            .map(|s| s.to_string())
            .collect();
        args.extend(ds.iter().map(|s| s.to_string()));
        args.push("RRA:AVERAGE:0.5:1:10".into());
        let req = rrd::create::parse_create_with(&args, T, &mut |_| None, &mut |_| false)
            .expect("create");
        Rrd::new(req.schema, req.start)
    }

    fn sample(schema: &Schema, v: &str) -> rrd::update::Sample {
        rrd::update::parse_update_arg(schema, v, None, (0, 0)).expect("parses")
    }

    #[test]
    fn the_shadow_gives_the_real_outcome_and_state() {
        let mut real = rrd(&[
            "DS:a:COUNTER:20:U:U",
            "DS:b:DDERIVE:20:U:U",
            "DS:c:COMPUTE:a,b,+",
        ]);
        let mut sh = shadow_of(&real);
        let mut outcomes = Vec::new();
        for (dt, v) in [
            (5, "10:1"),
            (12, "abc:1"),
            (30, "20:x"),
            (31, "21:2"),
            (200, "x:y"),
            (205, "-1:3"),
            (206, "30:4.5"),
            (207, "31:zz"),
            (208, "32:5"),
        ] {
            let v = format!("{}:{v}", T + dt);
            let s = sample(&real.schema, &v);
            let a = real.apply(&s, &mut |_| {});
            let b = sh.apply(&s);
            assert_eq!(a, b, "{v}");
            // Debug text: NaN state compares equal.
            assert_eq!(
                format!("{:?}", (real.last_up, real.last_up_usec, &real.pdp)),
                format!("{:?}", (sh.last_up, sh.last_up_usec, &sh.pdp)),
                "{v}"
            );
            outcomes.push(match a {
                Ok(()) => 'A',
                Err(ApplyError::Rejected(_)) => 'R',
                Err(ApplyError::Partial(_)) => 'P',
            });
        }
        // Every kind of outcome was met.
        let kinds: String = outcomes.iter().collect();
        assert!(
            kinds.contains('A') && kinds.contains('R') && kinds.contains('P'),
            "{kinds}"
        );
    }

    #[test]
    fn the_index_keys_an_entry_by_its_name_once() {
        let ix = Index::default();
        let e = Arc::new(Entry::new("x.rrd".into(), &rrd(&["DS:a:GAUGE:20:U:U"])));
        ix.insert(&e);
        ix.insert(&e);
        assert!(Arc::ptr_eq(&ix.get("x.rrd").unwrap(), &e));
        assert!(ix.get("/b/x.rrd").is_none());
        assert!(ix.get("y.rrd").is_none());
        assert_eq!(ix.entries().len(), 1);
    }
}
