//! What a view shows ([`Kind`]): every series as a `.rrd` file, or emoncms's feed files; which
//! names are its own, and what a write to one may be.

/// What a view shows.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// Every series as a `.rrd` file (`--view`).
    Rrd,
    /// emoncms's PHPFina feeds (`--phpfina`).
    PhpFina,
    /// emoncms's PHPTimeSeries feeds (`--phptimeseries`).
    PhpTimeSeries,
}

pub(super) use codec::emoncms::META_LEN;
use codec::emoncms::RECORD;

impl Kind {
    /// The prefix of the blob names of this view's files.
    pub fn prefix(self) -> &'static str {
        match self {
            Kind::Rrd => "",
            Kind::PhpFina => crate::feeds::PHPFINA,
            Kind::PhpTimeSeries => crate::feeds::PHPTIMESERIES,
        }
    }

    /// What the option and the log call the view.
    pub fn what(self) -> &'static str {
        match self {
            Kind::Rrd => "view",
            Kind::PhpFina => "PHPFina view",
            Kind::PhpTimeSeries => "PHPTimeSeries view",
        }
    }

    /// Whether `path` names a feed file (or a file that claims to be one: its kind's
    /// extension, in the view's directory itself). Any other name is a plain file beneath.
    pub fn own(self, path: &str) -> bool {
        if path.contains('/') {
            return false;
        }
        match self {
            Kind::Rrd => false,
            Kind::PhpFina => path.ends_with(".dat") || path.ends_with(".meta"),
            Kind::PhpTimeSeries => path.ends_with(".MYD"),
        }
    }

    /// Whether `path` (one of [`Kind::own`]'s) is a feed's file: `<id>.dat`, `<id>.meta`,
    /// `feed_<id>.MYD`, the id a number of emoncms's (decimal digits, below 2^32).
    pub fn valid(self, path: &str) -> bool {
        let id = match self {
            Kind::Rrd => return false,
            Kind::PhpFina => path
                .strip_suffix(".dat")
                .or_else(|| path.strip_suffix(".meta")),
            Kind::PhpTimeSeries => path
                .strip_prefix("feed_")
                .and_then(|p| p.strip_suffix(".MYD")),
        };
        id.is_some_and(|id| {
            !id.is_empty()
                && id.len() <= 10
                && id.bytes().all(|b| b.is_ascii_digit())
                && id.parse::<u64>().is_ok_and(|n| n < 1 << 32)
        })
    }

    /// Why a file of `path` may not be `len` bytes long, if it may not.
    pub(super) fn bad_len(self, path: &str, len: u64) -> Option<String> {
        match self {
            Kind::PhpFina if path.ends_with(".meta") && len > META_LEN => Some(format!(
                "a PHPFina meta file is {META_LEN} bytes, not {len}"
            )),
            Kind::PhpFina if path.ends_with(".dat") && !len.is_multiple_of(4) => Some(format!(
                "{len} bytes is not a whole number of float32 points (4 bytes each)"
            )),
            Kind::PhpTimeSeries if !len.is_multiple_of(RECORD) => Some(format!(
                "{len} bytes is not a whole number of {RECORD}-byte records"
            )),
            _ => None,
        }
    }

    /// Why `data` may not be written at `off` of `path`, if it may not (`meta`: the meta
    /// file's bytes now, for a `.meta`).
    pub(super) fn bad_write(
        self,
        path: &str,
        off: u64,
        data: &[u8],
        meta: &[u8],
    ) -> Option<String> {
        let n = data.len() as u64;
        // A `.MYD` write is taken at any offset: the kernel splits a write at its page
        // boundaries, and 9-byte records straddle them (emoncms's PHPTimeSeries::sync
        // appends many records with one fwrite, `cp` copies a file in pages), so each piece
        // reaching the view need not be whole records; a reader takes whole records and
        // leaves a partial last one. PHPFina's points (4 bytes) never straddle a page.
        if self == Kind::PhpFina
            && path.ends_with(".dat")
            && (!off.is_multiple_of(4) || !n.is_multiple_of(4))
        {
            return Some(format!(
                "a write of {n} bytes at {off} is not whole float32 points (4 bytes each)"
            ));
        }
        if self == Kind::PhpFina && path.ends_with(".meta") {
            let end = off.saturating_add(n);
            if end > META_LEN {
                return Some(format!(
                    "a write of {n} bytes at {off} runs past the meta file's {META_LEN} bytes"
                ));
            }
            // The interval (bytes 8 to 12) as the write leaves it, once it writes there.
            if off < 12 && end > 8 {
                let mut m = [0u8; 16];
                m[..meta.len().min(16)].copy_from_slice(&meta[..meta.len().min(16)]);
                m[off as usize..end as usize].copy_from_slice(data);
                if end >= 12 && codec::emoncms::meta(&m).is_some_and(|(interval, _)| interval == 0)
                {
                    return Some("a meta file with interval 0".into());
                }
            }
        }
        None
    }
}
