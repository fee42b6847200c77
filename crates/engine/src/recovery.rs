//! Opening a store: initialise a fresh directory, load the newest checkpoint, replay the log
//! records after it in sequence order, cut a torn or corrupt tail, and report what happened.
//!
//! Replay applies each logged sample with `Rrd::apply`, exactly as the writer did, so the
//! state after recovery is the state after the last durable commit, bit for bit. A record
//! whose checksum passes but whose contents cannot be decoded is not a torn tail but a bug or
//! media damage: opening fails with `Error::Corrupt` rather than serving partial state.

use crate::ckptfile;
use crate::replay::{replay, Record};
use crate::ring::{End, LogRing, Scan};
use crate::segments::Segments;
use crate::series::Registry;
use crate::vfs::Vfs;
use crate::Error;
use codec::checkpoint::{encode_checkpoint, CheckpointHeader, CK_FLAG_RESEED_MARKED};
use std::path::Path;
use std::sync::Arc;

/// Where and why the log was cut at recovery.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Cut {
    /// Log position (logical byte offset over all laps) of the first record not replayed.
    pub lsn: u64,
    /// Its byte offset in the log file.
    pub file_offset: u64,
    pub reason: String,
}

/// What `Store::open` found and did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RecoveryReport {
    /// The directory held no store; one was created.
    pub created: bool,
    /// Generation and log position of the checkpoint loaded.
    pub checkpoint_generation: u64,
    pub checkpoint_lsn: u64,
    /// Where replay had to reach for that checkpoint to be whole: past `checkpoint_lsn` for
    /// a lagged checkpoint (see [`crate::snapshot`]), equal to it for a full one.
    pub checkpoint_complete_lsn: u64,
    /// Checkpoint files that failed verification (the other one was used).
    pub invalid_checkpoints: Vec<String>,
    /// The first series id the checkpoint had not given out: series with this id or a
    /// later one were created in the log replayed after it ([`crate::Store::created_since_checkpoint`]).
    pub checkpoint_next_id: u64,
    pub records_replayed: u64,
    pub samples_replayed: u64,
    /// Pieces (a series' samples in one record) replayed.
    pub pieces_replayed: u64,
    /// Replayed samples that `Rrd::apply` refused (should be 0: apply is deterministic).
    pub samples_refused: u64,
    /// Log position after the last record replayed: the next commit goes here.
    pub end_lsn: u64,
    /// Set when the tail was torn or corrupt (not when the log simply ended).
    pub cut: Option<Cut>,
    /// The log file was shorter than its ring and was zero-filled back to size.
    pub log_was_truncated: bool,
    /// The rest of the ring was searched for committed records past the end (not when the
    /// mark of a clean close matched where replay ended).
    pub searched_past_end: bool,
}

/// The store's state after recovery.
pub struct Recovered {
    pub log: LogRing,
    pub reg: Registry,
    pub end_lsn: u64,
    pub next_seq: u64,
    pub ckpt_lsn: u64,
    pub ckpt_gen: u64,
    pub segs: Segments,
    pub report: RecoveryReport,
    /// A repair dropped records: a full checkpoint must be written before anything else, so
    /// that the log continues from it with sequence numbers past the dropped ones.
    pub needs_checkpoint: bool,
    /// A newer checkpoint than the one loaded was found damaged: a checkpoint written now
    /// replaces it (the slot the next generation takes), so the store has two good ones
    /// again. Worth trying, not needed: a failure (a full disk) leaves a notice.
    pub wants_checkpoint: bool,
    /// The mark of a clean close in the log's superblock page, as the open found it.
    pub mark: Option<crate::clean::Mark>,
}

fn corrupt(file: &Path, offset: u64, what: impl Into<String>) -> Error {
    Error::Corrupt {
        file: file.to_path_buf(),
        offset,
        what: what.into(),
    }
}

/// Make `dir` a store if no checkpoint exists: a zero-filled log and an empty checkpoint.
fn init_if_fresh(vfs: &dyn Vfs, dir: &Path, ring_cap: u64) -> Result<bool, Error> {
    if ckptfile::any_exists(vfs, dir)? {
        return Ok(false);
    }
    let log_path = crate::files::log(dir);
    let reuse = if vfs.exists(&log_path)? {
        match LogRing::open(vfs, dir)? {
            Ok(ring) => match ring.scan(0, 0, 0)? {
                Scan::End(End::Clean) => true,
                _ => {
                    return Err(corrupt(
                        &log_path,
                        ring.offset(0),
                        "log holds records but no checkpoint file exists",
                    ))
                }
            },
            Err(_) => false, // a log whose creation never completed
        }
    } else {
        false
    };
    if !reuse {
        LogRing::create(vfs, dir, ring_cap)?;
    }
    let bytes = encode_checkpoint(1, 0, 0, 1, std::iter::empty());
    ckptfile::write(vfs, dir, 1, &bytes)?;
    // The store directory may be new too: make its entry in the parent durable.
    let parent = match dir.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    };
    vfs.sync_dir(parent)?;
    Ok(true)
}

/// The whole open procedure after the lock is held. `repair`: where committed records follow
/// damage in the log, cut there anyway (dropping them, and saying so in the report) instead
/// of refusing to open.
///
/// `only`: open for reading these series alone (a CLI command that reads one series):
/// nothing is written (no store is created, no file removed or restored), only their images
/// are decoded, their stored chunks found by key, and their log entries replayed.
pub fn recover(
    vfs_arc: &Arc<dyn Vfs>,
    dir: &Path,
    ring_cap: u64,
    replay_batch: usize,
    repair: bool,
    only: Option<&[String]>,
    spill_bytes: u64,
) -> Result<Recovered, Error> {
    let vfs: &dyn Vfs = vfs_arc.as_ref();
    if let Some(names) = only {
        if !ckptfile::any_exists(vfs, dir)? {
            let first = names.first().cloned().unwrap_or_default();
            return Err(Error::NotFound(first));
        }
    }
    let mut report = RecoveryReport {
        created: init_if_fresh(vfs, dir, ring_cap)?,
        ..RecoveryReport::default()
    };
    let log_path = crate::files::log(dir);
    if only.is_none() {
        // A larger ring built by a run that crashed before putting it in place.
        LogRing::remove_unfinished(vfs, dir)?;
    }
    if !vfs.exists(&log_path)? {
        return Err(corrupt(&log_path, 0, "log file missing"));
    }
    let mut log = LogRing::open(vfs, dir)?.map_err(|why| corrupt(&log_path, 0, why))?;
    let (loaded, invalid) = ckptfile::load_newest_of(vfs, dir, only)?;
    report.invalid_checkpoints = invalid.iter().map(|i| i.note.clone()).collect();
    let Some(ck) = loaded else {
        let p = crate::files::checkpoint(dir, 1);
        return Err(corrupt(&p, 0, "no valid checkpoint file"));
    };
    let mut lost = LostNewer::weigh(&invalid, &ck.header);
    let complete_lsn = ck.state.complete_lsn;
    report.checkpoint_next_id = ck.state.next_id;
    let lazy = (only.is_some() && ck.state.tables).then_some(vfs_arc);
    let mut segs = Segments::open(vfs, dir, &ck.state.segments, only.is_some(), lazy)
        .map_err(|why| corrupt(&ck.path, 0, why))?;
    segs.older = ck.older_segments.iter().copied().collect();
    let mut reg = Registry::new(ck.state.next_id);
    reg.src = Some(segs.source());
    for s in ck.state.series {
        reg.insert(s.id, s.name, s.rrd);
    }
    for b in ck.state.blobs {
        reg.next_id = reg.next_id.max(b.id.saturating_add(1));
        reg.blobs.insert_image(b);
    }
    if let Some(names) = only {
        reg.only = Some(names.to_vec());
    }
    segs.place(&mut reg, ck.state.tables)
        .map_err(|why| corrupt(&ck.path, 0, why))?;
    // Segments of a checkpoint that never became the newest (a crash while writing it).
    if only.is_none() {
        segs.remove_unused(vfs, dir)?;
    }
    reg.next_id = reg.next_id.max(ck.state.next_id);
    let (ckpt_lsn, ckpt_gen) = (ck.header.log_lsn, ck.header.generation);
    report.checkpoint_generation = ckpt_gen;
    report.checkpoint_lsn = ckpt_lsn;
    report.checkpoint_complete_lsn = complete_lsn;
    report.log_was_truncated = log.is_short()?;

    // What replay seals beyond the spill budget goes to segment files as it goes (a writer's
    // open only), so that replaying a long log holds no more of it than the running store
    // did. Such files are named by no checkpoint: should this open be refused below, the
    // next one removes them.
    let spill_bytes = crate::spill_budget(spill_bytes, log.cap);
    let table = segs.table.clone();
    let sealed = move || table.sealed.load(std::sync::atomic::Ordering::Relaxed);
    let mut spill = |reg: &mut Registry| {
        let sealed = segs.table.sealed.load(std::sync::atomic::Ordering::Relaxed);
        if only.is_some() || spill_bytes == 0 || sealed <= spill_bytes {
            return;
        }
        // A failure (a full disk) leaves the chunks on the heap; the store's own spills
        // report it.
        if let Ok((settled, _)) = segs.spill(reg, spill_bytes / 4, vfs, dir) {
            crate::segments::settle(reg, settled);
            reg.share_tables(None);
        }
        segs.table.release_all();
    };
    if lost.unsure.is_some() {
        // Replay must not pass the lost checkpoint's restart unknowingly: a first pass over
        // the records finds it (or finds that none follow), before anything is replayed.
        let (mut lsn, mut seq, mut any) = (ckpt_lsn, ck.header.log_seq, false);
        while lsn - ckpt_lsn < log.cap {
            let Scan::Record { header, framed, .. } = log.scan(lsn, seq, ckpt_lsn)? else {
                break;
            };
            lost.restarts_at(lsn, header.seq);
            any = true;
            lsn += framed;
            seq += 1;
        }
        if let Some(why) = lost.doubt(any) {
            return Err(corrupt(&ck.path, 0, why));
        }
    }
    let (mut lsn, mut seq) = (ckpt_lsn, ck.header.log_seq);
    let mut records = Vec::new();
    let mut batch_bytes = 0;
    let mut replayed = Replayed::default();
    // Why the scan stopped where it did, when that was not a plain end.
    let mut stop: Option<String> = None;
    loop {
        if lsn - ckpt_lsn >= log.cap {
            break;
        }
        match log.scan(lsn, seq, ckpt_lsn)? {
            Scan::Record {
                header,
                payload,
                framed,
            } => {
                batch_bytes += payload.len();
                records.push(Record {
                    file_offset: log.offset(lsn),
                    seq: header.seq,
                    reseed: lost.restarts_at(lsn, header.seq),
                    payload,
                });
                lsn += framed;
                seq += 1;
                // Replayed a batch at a time: a full ring (gigabytes at a million series) is
                // never in memory at once. Nothing is written before the checks below, so an
                // open they refuse has only changed memory it drops.
                if batch_bytes >= replay_batch {
                    replayed.add(
                        replay(&mut reg, &records, &log_path, &sealed, &mut spill)?,
                        records.len(),
                    );
                    records.clear();
                    batch_bytes = 0;
                }
            }
            Scan::End(End::Clean) => break,
            Scan::End(End::Torn { reason, .. }) => {
                // A record for this position that fails its checksum: the tail a crash tore,
                // unless committed records follow (below).
                report.cut = Some(cut_at(&log, lsn, reason.clone()));
                stop = Some(reason);
                break;
            }
            Scan::End(End::Garbage { reason }) => {
                stop = Some(reason);
                break;
            }
        }
    }
    if lsn < complete_lsn {
        // A lagged checkpoint left out rows that the records up to complete_lsn rewrite; they
        // were durable when it was written, so this is damage, not a torn tail.
        let why = stop.as_deref().unwrap_or("the log ends");
        return Err(corrupt(
            &log_path,
            log.offset(lsn),
            format!(
                "{why} at log position {lsn}, before position {complete_lsn} that checkpoint \
                 generation {ckpt_gen} needs"
            ),
        ));
    }
    // Fail closed: the log ends here only if no committed record lies beyond. One that does
    // means the damage is not a torn tail but rot (or a checkpoint whose log was overwritten
    // since: the newer checkpoint was lost), and stopping here would roll back commits.
    let window_end = ckpt_lsn + log.cap;
    // A replay that ended exactly where a clean close left the log, from the checkpoint it
    // left, knows nothing follows (crate::clean): a reader, and a writer too (its first
    // record clears the mark).
    let mark = crate::clean::read_in_log(&log)?;
    let clean_end = stop.is_none()
        && crate::clean::read_all(vfs, dir, mark)?
            .iter()
            .any(|m| m.generation == ckpt_gen && m.end_lsn == lsn && m.next_seq == seq);
    report.searched_past_end = !clean_end;
    let after = if clean_end {
        Vec::new()
    } else {
        log.records_after(vfs, lsn, window_end, seq, usize::MAX)?
    };
    let mut skip_to_seq = seq;
    if let Some(&(at, first_seq)) = after.first() {
        let why = stop
            .clone()
            .unwrap_or_else(|| "the log seems to end".into());
        let last_seq = after.iter().map(|r| r.1).max().unwrap_or(first_seq);
        if !repair {
            return Err(corrupt(
                &log_path,
                log.offset(lsn),
                format!(
                    "{why} at log position {lsn}, but {} committed record(s) follow it (the first, sequence number {first_seq}, at position {at}): opening here would lose them. `ringlet repair` cuts the log at the damage and reports what is lost",
                    after.len()
                ),
            ));
        }
        report.cut = Some(cut_at(
            &log,
            lsn,
            format!(
                "{why}; repair dropped {} committed record(s) after it (sequence numbers {first_seq} to {last_seq})",
                after.len()
            ),
        ));
        // The next commit's sequence number passes the dropped ones, so no later scan can
        // take them for live records; the damaged page is cleared so that it is not reported
        // again (the only bytes recovery ever clears, and only when asked to repair).
        skip_to_seq = last_seq + 1;
        log.zero(lsn, log.page)?;
    } else if let (None, Some(why)) = (&report.cut, &stop) {
        // Garbage with nothing after it: the end of the log, with bytes of an older lap or
        // of a torn write after it. Reported only when it looks like a damaged record header.
        let mut h = [0u8; codec::frame::REC_HEADER_LEN];
        if log.read(lsn, &mut h)? == h.len() && h.starts_with(&codec::frame::REC_MAGIC) {
            let earlier = matches!(
                codec::frame::scan_header(&h),
                codec::frame::HeaderScan::Header(hd) if hd.lsn < lsn || hd.seq < seq
            );
            if !earlier {
                report.cut = Some(cut_at(&log, lsn, why.clone()));
            }
        }
    }
    replayed.add(
        replay(&mut reg, &records, &log_path, &sealed, &mut spill)?,
        records.len(),
    );
    reg.blobs.reindex();
    report.records_replayed = replayed.records;
    report.samples_replayed = replayed.counts.applied;
    report.pieces_replayed = replayed.counts.pieces;
    report.samples_refused = replayed.counts.refused;
    drop(records);
    if report.log_was_truncated && only.is_none() {
        log.restore_len()?;
    }
    // Nothing is zeroed: bytes after the end are never taken for records (their sequence
    // numbers are behind, or their checksums fail), and are overwritten as the log goes on.
    report.end_lsn = lsn;
    Ok(Recovered {
        mark,
        log,
        reg,
        end_lsn: lsn,
        next_seq: seq.max(skip_to_seq),
        ckpt_lsn,
        ckpt_gen,
        segs,
        report,
        needs_checkpoint: skip_to_seq > seq,
        wants_checkpoint: lost.any,
    })
}

/// Checkpoint files newer than the one loaded that failed verification ("lost"), and where
/// their writers restarted every codec from the RRDs (a writer does so after each
/// checkpoint), which replay from the older checkpoint must do at the same record. Since
/// [`CK_FLAG_RESEED_MARKED`] that record says so itself (a Reseed entry). Before it, the
/// place is known only from the lost checkpoint's header (its log position, and the sequence
/// number of the record there); where that is unreadable, replay past it could decode
/// samples with the wrong codecs and serve values never written, so the open is refused.
struct LostNewer {
    /// A lost checkpoint may be newer: the opener writes a checkpoint at once, replacing it
    /// (it is the other file's slot), so the next open has two good ones again.
    any: bool,
    /// (log position, sequence number) of the record each lost checkpoint of an unmarking
    /// writer restarted the codecs before, and whether replay met it there.
    restarts: Vec<(u64, u64, bool)>,
    /// Restarts that must be met before replay can be trusted (a damaged header's fields,
    /// or nothing readable): the file's note.
    unsure: Option<String>,
}

impl LostNewer {
    fn weigh(invalid: &[ckptfile::Invalid], loaded: &CheckpointHeader) -> LostNewer {
        let mut lost = LostNewer {
            any: false,
            restarts: Vec::new(),
            unsure: None,
        };
        let marked = loaded.flags & CK_FLAG_RESEED_MARKED != 0;
        for bad in invalid {
            match (&bad.header, bad.header_valid) {
                // The overwrite of a checkpoint that never completed (its header is written
                // last, over zeros), or, with a verified header, the earlier generation.
                _ if bad.unfinished => {}
                (Some(h), true) if h.generation < loaded.generation => {}
                (Some(h), true) => {
                    // Only the payload is damaged. A writer that marks its restarts did, if
                    // it completed this checkpoint at all.
                    lost.any = true;
                    if !marked && h.flags & CK_FLAG_RESEED_MARKED == 0 {
                        lost.restarts.push((h.log_lsn, h.log_seq, false));
                    }
                }
                (seen, _) => {
                    // A damaged header: its fields as they stand, one of which may be wrong.
                    // Older in all three is the other file's earlier generation.
                    let older = seen.is_some_and(|h| {
                        h.generation < loaded.generation
                            && h.log_lsn <= loaded.log_lsn
                            && h.log_seq <= loaded.log_seq
                    });
                    if older {
                        continue;
                    }
                    lost.any = true;
                    if marked {
                        continue;
                    }
                    // Trusted only where replay finds a record with both.
                    if let Some(h) = seen {
                        lost.restarts.push((h.log_lsn, h.log_seq, false));
                    }
                    lost.unsure = Some(bad.note.clone());
                }
            }
        }
        lost
    }

    /// Whether the record at `lsn` with sequence number `seq` is one a lost checkpoint's
    /// writer restarted the codecs before.
    fn restarts_at(&mut self, lsn: u64, seq: u64) -> bool {
        let mut hit = false;
        for r in &mut self.restarts {
            if r.0 == lsn && r.1 == seq {
                r.2 = true;
                hit = true;
            }
        }
        if hit && self.restarts.iter().all(|r| r.2) {
            self.unsure = None;
        }
        hit
    }

    /// Why replay cannot be trusted, if it cannot: records follow the loaded checkpoint
    /// (`any`), and a lost newer one's restart was not found among them.
    fn doubt(&self, any: bool) -> Option<String> {
        let note = self.unsure.as_ref().filter(|_| any)?;
        Some(format!(
            "the newer checkpoint is damaged ({note}) and the older one was written before \
             ringlet marked in the log where each checkpoint restarts the sample codecs: \
             replaying the log from the older checkpoint could serve values never written, \
             so the store is not opened (restore it from a backup, or `ringlet export` it \
             with an older checkpoint file moved aside)"
        ))
    }
}

/// What replay has done so far, batch after batch.
#[derive(Default)]
struct Replayed {
    records: u64,
    counts: crate::replay::Counts,
}

impl Replayed {
    fn add(&mut self, c: crate::replay::Counts, records: usize) {
        self.records += records as u64;
        self.counts.applied += c.applied;
        self.counts.refused += c.refused;
        self.counts.pieces += c.pieces;
    }
}

fn cut_at(log: &LogRing, lsn: u64, reason: String) -> Cut {
    Cut {
        lsn,
        file_offset: log.offset(lsn),
        reason,
    }
}
