//! What the daemon keeps about the files at series' paths: their (mtime, length) stamps,
//! so that a FORGET can tell a file someone changed from the placeholder ringlet wrote, and
//! librrd's texts for a file that cannot be loaded.

use super::Target;
use crate::daemon::Inner;

/// librrd's message for a file it cannot load, where rrdtool's text is known; else
/// ringlet's reader's.
pub(crate) fn load_error(abs: &str, bytes: &[u8], e: &rrd::RrdError) -> String {
    const STAT_HEAD: usize = 128;
    if bytes.is_empty() {
        format!("mmaping file '{abs}': Invalid argument")
    } else if bytes.len() < STAT_HEAD {
        "reached EOF while loading header rrd->stat_head".to_string()
    } else if !bytes.starts_with(b"RRD\0") {
        format!("'{abs}' is not an RRD file")
    } else {
        format!("{abs}: {e}")
    }
}

/// The (mtime, length) of `t`'s file now, if it is a file (not through a link).
pub(crate) fn disk_stamp(
    inner: &Inner,
    t: &Target,
) -> Option<(Option<std::time::SystemTime>, u64)> {
    let m = match inner.places.beneath.as_deref() {
        Some(b) => {
            let at = crate::beneath::At::of(Some(b), &t.disk, false).ok()?;
            at.open_read().ok()?.metadata().ok()?
        }
        // Without -B links are followed, as rrdcached does.
        None => std::fs::metadata(&t.disk).ok()?,
    };
    let m = Some(m).filter(|m| m.is_file())?;
    Some((m.modified().ok(), m.len()))
}

/// A placeholder was just put at `t`'s path: no stamp is kept (a FORGET finds a placeholder
/// unchanged by looking at it; a million series kept ~95 MB of stamps for nothing).
pub(crate) fn forget_disk(inner: &mut Inner, t: &Target) {
    inner.disk.remove(t.name.as_str());
}

/// Remember the file at `t`'s path (not a placeholder ringlet put there) as it is now.
pub(crate) fn remember_disk(inner: &mut Inner, t: &Target) {
    match disk_stamp(inner, t) {
        Some(s) => {
            // Keyed by the store's copy of the name where it has the series: one copy a name.
            let name = inner
                .store
                .shared_name(&t.name)
                .unwrap_or_else(|| t.name.as_str().into());
            inner.disk.insert(name, s)
        }
        None => inner.disk.remove(t.name.as_str()),
    };
}

/// Whether `t`'s path holds a real `.rrd` file that differs from the one ringlet last wrote
/// or read there (changed by someone else: `rrdtool tune`, a local create).
pub(crate) fn changed_on_disk(inner: &Inner, t: &Target) -> bool {
    let now = disk_stamp(inner, t);
    now.is_some()
        && inner.disk.get(t.name.as_str()) != now.as_ref()
        && crate::placeholder::inspect(inner.places.beneath.as_deref(), &t.disk)
            == crate::placeholder::Found::Rrd
}
