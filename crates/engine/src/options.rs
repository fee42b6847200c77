//! How a store is opened and commits ([`Options`]), and the sizes the environment may set
//! (`RINGLET_LOG_SIZE`, `RINGLET_LOG_PER_SERIES`, `RINGLET_SPILL`).

use std::sync::Arc;
use std::time::Duration;

/// How a store commits.
#[derive(Debug, Clone)]
pub struct Options {
    /// Commit at least this often while updates are pending (the loss window). None: only on
    /// explicit commit, size limit and close.
    pub commit_interval: Option<Duration>,
    /// Commit when this many bytes of encoded updates are pending.
    pub max_pending_bytes: usize,
    /// Size of the log ring when a store is created (rounded up to 4 KiB pages; an existing
    /// store keeps the size it was created with, or a larger one it grew to).
    pub log_bytes: u64,
    /// Ring bytes a series is given: once the series outnumber `ring / log_per_series`, the
    /// next commit replaces the ring with one of 1.5 times `series x log_per_series`
    /// ([`Store::log_capacity`]). A checkpoint writes every series' state and comes every
    /// half ring of log, so this keeps its share of the bytes written per sample the same at
    /// any number of series. 0: the ring keeps its size.
    pub log_per_series: u64,
    /// Bytes of log records an open replays at a time (at least one record): memory at
    /// open holds one batch, not the whole log since the checkpoint.
    pub replay_batch: usize,
    /// Open a store whose log is damaged before its end by cutting it at the damage (the
    /// committed records after it are dropped and counted in the recovery report's cut);
    /// without it such a store does not open (`Error::Corrupt`). `ringlet repair`.
    pub repair: bool,
    /// Open read-only with these series alone (a command that reads them): only their
    /// state is loaded and replayed, nothing is written, and every write is refused
    /// (`Error::ReadOnly`). `None`: the whole store, read-write.
    pub only: Option<Vec<String>>,
    /// With `only`: open those series to write them alone (a write command on its own:
    /// `ringlet update`, `create`, `tune`), their state loaded and replayed as a reader's,
    /// their changes committed as one record, the mark of a clean close set with it. Only
    /// where that is safe and cheap: the store was closed cleanly where its log ends, no
    /// damage, room in the ring for the record without a checkpoint, and no checkpoint owed
    /// to the readers at this close ([`crate::Store::close`]); else the whole store is
    /// opened, as without `only`. Writes to other series are refused (`Error::ReadOnly`).
    pub partial: bool,
    /// How long an open waits for another process's hold on the store to end before it
    /// fails (`Error::Locked`). Readers of a few series (`only` without `partial`) share the
    /// store with each other; anything else holds it alone. Zero: fail at once (the daemon:
    /// a second daemon on the store is a mistake to report, not to wait for).
    pub lock_wait: Duration,
    /// Called before each checkpoint becomes the newest (its header written): whatever the
    /// caller wrote beside the store before then is made durable with it. The daemon syncs
    /// the base directory's file system, so the placeholders of the series a checkpoint
    /// holds are on disk, and an open checks before serving only those of series created
    /// after it ([`Store::created_since_checkpoint`]). A failure is a notice, not an error.
    pub before_checkpoint: Option<Hook>,
    /// Write each series' samples as a Samples entry of its own, as stores did before the
    /// commit-wide sample block (docs/FORMAT.md): for tests that a store holding such records
    /// opens. Not for use otherwise (it spends about 5 more bytes a series a commit).
    #[doc(hidden)]
    pub sample_entries: bool,
    /// Write the commit's sample block as this version (1: no rows, Rice-coded lens; 2: rows
    /// against the stream's predictor), as stores did before the current one (0): for tests
    /// that a store holding such records opens.
    #[doc(hidden)]
    pub block_version: u8,
    /// Write as stores did before the mark of codec restarts (checkpoints without
    /// [`codec::checkpoint::CK_FLAG_RESEED_MARKED`], no Reseed entry after a full
    /// checkpoint): for tests that such stores open, or are refused where their replay from
    /// an older checkpoint cannot be trusted.
    #[doc(hidden)]
    pub unmarked_reseeds: bool,
    /// Packed bytes of sealed archive chunks the heap may hold before they are stored
    /// without waiting for a checkpoint (a spill: [`segments::Segments::spill`]). Checkpoints
    /// come every half ring of log, hours apart on a large store, and the rows sealed
    /// between them would stay in memory; a spill writes them where the next checkpoint
    /// would have and lets them go. 0: never. [`SPILL_AUTO`] (the default): an eighth of the
    /// store's log ring, 16 to 64 MiB ([`spill_budget`]).
    pub spill_bytes: u64,
}

/// A caller's action at a point of the store's work ([`Options::before_checkpoint`]).
#[derive(Clone)]
pub struct Hook(pub Arc<dyn Fn() -> std::io::Result<()> + Send + Sync>);

impl std::fmt::Debug for Hook {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Hook")
    }
}

impl Default for Options {
    fn default() -> Self {
        Options {
            commit_interval: Some(Duration::from_secs(300)),
            max_pending_bytes: 64 << 20,
            log_bytes: 64 << 20,
            log_per_series: DEFAULT_LOG_PER_SERIES,
            replay_batch: 64 << 20,
            repair: false,
            only: None,
            partial: false,
            lock_wait: Duration::ZERO,
            before_checkpoint: None,
            sample_entries: false,
            block_version: 0,
            unmarked_reseeds: false,
            spill_bytes: DEFAULT_SPILL_BYTES,
        }
    }
}

/// [`Options::spill_bytes`] unless told otherwise: [`SPILL_AUTO`].
pub const DEFAULT_SPILL_BYTES: u64 = SPILL_AUTO;

/// [`Options::spill_bytes`]: the budget follows the log ring ([`spill_budget`]).
pub const SPILL_AUTO: u64 = u64::MAX;

/// The bytes of sealed rows a store with a log ring of `ring` bytes holds before it spills
/// them, for [`Options::spill_bytes`] `opt`: `opt` itself, or for [`SPILL_AUTO`] an eighth of
/// the ring, at least 16 MiB (the default 64 MiB ring's: about 40 minutes of 26,000 gmetad
/// series' rows) and at most 64 MiB. A larger ring is chosen to write less: its checkpoints
/// come rarer, and rows sealed between them that expire before one (a day-long archive's,
/// under a ring that holds a week of log) are never written if they wait in memory, where a
/// spill would store each (a 512 MiB ring, 3,000 series of the default workload, 2 days:
/// 1.44 bytes a sample with no spill, 3.75 with a spill every 16 MiB).
pub fn spill_budget(opt: u64, ring: u64) -> u64 {
    if opt == SPILL_AUTO {
        (ring / 8).clamp(16 << 20, 64 << 20)
    } else {
        opt
    }
}

/// Parse a size such as `65536`, `512k`, `64M` or `1G` (powers of 1024), as given for the log
/// ring. At least 64 KiB.
pub fn parse_size(s: &str) -> Result<u64, String> {
    let bytes = parse_any_size(s)?;
    if bytes < 64 << 10 {
        return Err(format!("size '{s}' is below the minimum of 64k"));
    }
    Ok(bytes)
}

/// A size such as `2048`, `2k`, `64M` or `1G` (powers of 1024), any value.
pub fn parse_any_size(s: &str) -> Result<u64, String> {
    let t = s.trim();
    let (num, mult) = match t.char_indices().last() {
        Some((i, 'k' | 'K')) => (&t[..i], 1u64 << 10),
        Some((i, 'm' | 'M')) => (&t[..i], 1 << 20),
        Some((i, 'g' | 'G')) => (&t[..i], 1 << 30),
        _ => (t, 1),
    };
    let n: u64 = num
        .parse()
        .map_err(|_| format!("invalid size '{s}' (use e.g. 65536, 512k, 64M, 1G)"))?;
    n.checked_mul(mult)
        .ok_or_else(|| format!("size '{s}' is too large"))
}

/// [`Options::log_per_series`] unless told otherwise: with about 2 bytes of record a sample
/// and a checkpoint of about 200 bytes a series every half ring, checkpoints add at most
/// `200 x 2 / 1024`, 0.4 bytes a sample, and at a million series the ring is 2-3 GiB.
pub const DEFAULT_LOG_PER_SERIES: u64 = 2 << 10;

/// The ring bytes a series is given, as the binaries read it: `$RINGLET_LOG_PER_SERIES`
/// (e.g. `2k`, or `0` for a ring that keeps its size) when set, else the default.
pub fn log_per_series_from_env() -> Result<u64, String> {
    match std::env::var("RINGLET_LOG_PER_SERIES") {
        Ok(v) if !v.is_empty() => {
            parse_any_size(&v).map_err(|e| format!("RINGLET_LOG_PER_SERIES: {e}"))
        }
        _ => Ok(DEFAULT_LOG_PER_SERIES),
    }
}

/// The bytes of sealed chunks a store holds before it spills them, as the binaries read it:
/// `$RINGLET_SPILL` (e.g. `16M`, or `0`: only checkpoints store them) when set, else
/// [`DEFAULT_SPILL_BYTES`] (an eighth of the ring, 16 to 64 MiB).
pub fn spill_bytes_from_env() -> Result<u64, String> {
    match std::env::var("RINGLET_SPILL") {
        Ok(v) if !v.is_empty() => parse_any_size(&v).map_err(|e| format!("RINGLET_SPILL: {e}")),
        _ => Ok(DEFAULT_SPILL_BYTES),
    }
}

/// The log ring size for a store created now, as the binaries read it: `$RINGLET_LOG_SIZE`
/// (e.g. `64M`) when set, else the default. An existing store keeps the size it has.
pub fn log_size_from_env() -> Result<u64, String> {
    match std::env::var("RINGLET_LOG_SIZE") {
        Ok(v) if !v.is_empty() => parse_size(&v).map_err(|e| format!("RINGLET_LOG_SIZE: {e}")),
        _ => Ok(Options::default().log_bytes),
    }
}

#[cfg(test)]
mod size_tests {
    use super::*;

    #[test]
    fn the_default_spill_budget_is_an_eighth_of_the_ring_within_16_to_64_mib() {
        assert_eq!(spill_budget(SPILL_AUTO, 64 << 20), 16 << 20);
        assert_eq!(spill_budget(SPILL_AUTO, 8 << 20), 16 << 20);
        assert_eq!(spill_budget(SPILL_AUTO, 256 << 20), 32 << 20);
        assert_eq!(spill_budget(SPILL_AUTO, 4 << 30), 64 << 20);
        assert_eq!(spill_budget(0, 4 << 30), 0, "never");
        assert_eq!(spill_budget(1 << 20, 4 << 30), 1 << 20, "as told");
        assert_eq!(Options::default().spill_bytes, SPILL_AUTO);
    }

    #[test]
    fn sizes_take_binary_suffixes() {
        assert_eq!(parse_size("64M"), Ok(64 << 20));
        assert_eq!(parse_size("512k"), Ok(512 << 10));
        assert_eq!(parse_size("1G"), Ok(1 << 30));
        assert_eq!(parse_size("65536"), Ok(65536));
        assert!(parse_size("1k").unwrap_err().contains("minimum"));
        assert!(parse_size("lots").unwrap_err().contains("invalid size"));
    }
}
