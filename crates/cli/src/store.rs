//! Which store a CLI invocation uses, and how RRD file names become store names.
//!
//! The store is `--store DIR`, else `$RINGLET_STORE`, else for root [`SYSTEM_STORE`]
//! (`/var/lib/ringlet`: a system daemon's data does not belong in root's home directory), else
//! `$XDG_DATA_HOME/ringlet`, else `~/.local/share/ringlet`. An RRD's name is the path given on the command line, normalised:
//! `./` and empty components dropped (`a//b` is `a/b`), `..` refused, a leading `/` kept,
//! except that a path under the base directory (`-b`) of the daemon that serves the store
//! (recorded in `<store>/base`), also through a symbolic link to it, is relative to it, as
//! the daemon names it.
//! Messages always quote the name as the user typed it, like rrdtool.

use engine::{Error, Options, Store};
use std::path::{Path, PathBuf};

/// Root's store when neither `--store` nor `$RINGLET_STORE` names one.
pub const SYSTEM_STORE: &str = "/var/lib/ringlet";

/// The package's socket (ringlet.socket): the system daemon, for the users of its group.
pub const SYSTEM_SOCKET: &str = "/run/ringlet/ringlet.sock";

/// The store a command of a user other than root works on when none is named (no --store,
/// no $RINGLET_STORE) and the user has none of their own yet: the system's, whose daemon
/// (the package's) serves the users of its group. Else `dir`.
pub fn own_or_system(dir: PathBuf, named: bool) -> PathBuf {
    let env_named = std::env::var_os("RINGLET_STORE").is_some_and(|v| !v.is_empty());
    if named || env_named || is_root() || dir.exists() {
        return dir;
    }
    if Path::new(SYSTEM_SOCKET).exists() || Path::new(SYSTEM_STORE).exists() {
        return PathBuf::from(SYSTEM_STORE);
    }
    dir
}

/// Why a user other than root cannot reach the system daemon at `addr` (`e`): the user,
/// the socket's group, and what to do.
pub fn why_not_system(addr: &str, e: &str) -> String {
    use std::os::unix::fs::MetadataExt;
    let path = addr.strip_prefix("unix:").unwrap_or(addr);
    let user = host::sys::user_name(host::sys::euid());
    match std::fs::metadata(path) {
        Ok(m) if e.contains("ermission denied") => {
            let group = host::sys::group_name(m.gid());
            format!(
                "{addr}: {e} (user {user} may not use the system daemon's socket: it is for \
                 group {group}; adduser {user} {group}, then log in again)"
            )
        }
        _ => format!(
            "{addr}: {e} (the system daemon does not answer for user {user}: \
             systemctl status ringlet.socket ringlet)"
        ),
    }
}

/// The store directory from the command line or the environment.
pub fn store_dir(flag: Option<&str>) -> PathBuf {
    store_dir_for(flag, is_root())
}

fn is_root() -> bool {
    use std::os::unix::fs::MetadataExt;
    // /proc/self belongs to the process's effective user.
    std::fs::metadata("/proc/self").is_ok_and(|m| m.uid() == 0)
}

fn store_dir_for(flag: Option<&str>, root: bool) -> PathBuf {
    if let Some(d) = flag {
        return PathBuf::from(d);
    }
    let env = |k: &str| std::env::var_os(k).filter(|v| !v.is_empty());
    if let Some(d) = env("RINGLET_STORE") {
        return PathBuf::from(d);
    }
    if root {
        return PathBuf::from(SYSTEM_STORE);
    }
    if let Some(d) = env("XDG_DATA_HOME") {
        return Path::new(&d).join("ringlet");
    }
    let home = env("HOME").unwrap_or_else(|| ".".into());
    Path::new(&home).join(".local/share/ringlet")
}

/// The store name of the RRD file name `given` (`engine::normalize_name`), with the message
/// rrdtool-style commands print when it names none. A path under the base directory of the
/// daemon that serves the store ([`load_base`]) names its series as the daemon does, so
/// `ringlet fetch /var/lib/rrd/h/cpu.rrd` and `ringlet fetch h/cpu.rrd` are one series.
pub fn normalize(given: &str) -> Result<String, String> {
    let name = engine::normalize_name(given).map_err(|e| match e {
        engine::BadName::DotDot => {
            format!("opening '{given}': '..' is not allowed in ringlet RRD names")
        }
        engine::BadName::Empty => format!("opening '{given}': No such file or directory"),
    })?;
    let base = BASE.read().unwrap_or_else(|p| p.into_inner());
    let Some(b) = base.as_deref() else {
        return Ok(name);
    };
    let under = |n: &str| {
        n.strip_prefix(b)
            .and_then(|r| r.strip_prefix('/'))
            .filter(|r| !r.is_empty())
            .map(str::to_string)
    };
    if let Some(rel) = under(&name) {
        return Ok(rel);
    }
    // The base is recorded canonical; a path to it through a symbolic link (Debian's Cacti
    // names its RRDs /usr/share/cacti/site/rra/..., a link to /var/lib/cacti/rra) is the
    // same directory: its parent resolved.
    if name.starts_with('/') {
        let p = Path::new(&name);
        if let (Some(dir), Some(file)) = (p.parent(), p.file_name()) {
            if let Ok(real) = std::fs::canonicalize(dir) {
                if let Some(rel) = real.join(file).to_str().and_then(under) {
                    return Ok(rel);
                }
            }
        }
    }
    Ok(name)
}

/// The base directory (`-b`) of the daemon that serves the store, as it records it.
static BASE: std::sync::RwLock<Option<String>> = std::sync::RwLock::new(None);

/// `<store>/base`: the daemon's `-b` (canonical), kept while the daemon is stopped too.
pub fn base_file(dir: &Path) -> PathBuf {
    dir.join("base")
}

/// Names under `base` are relative to it from now on in this process ([`normalize`]).
pub fn set_base(base: Option<&str>) {
    *BASE.write().unwrap_or_else(|p| p.into_inner()) = base
        .map(|b| b.trim_end_matches('/').to_string())
        .filter(|b| !b.is_empty());
}

/// The base directory names are relative to in this process ([`set_base`]), if any.
pub fn base() -> Option<String> {
    BASE.read().unwrap_or_else(|p| p.into_inner()).clone()
}

/// Take the base directory the store's daemon recorded, if any.
pub fn load_base(dir: &Path) {
    let b = std::fs::read_to_string(base_file(dir)).ok();
    set_base(b.as_deref().and_then(|t| t.lines().next()));
}

/// How long a command on its own waits for another one's hold on the store: readers share
/// it, a writer holds it alone (a write command on its own holds it for milliseconds; a
/// whole open after a crash for seconds).
pub const LOCK_WAIT: std::time::Duration = std::time::Duration::from_secs(10);

/// Open the store for one invocation: commits happen only when the command closes it.
pub fn open(dir: &Path) -> Result<Store, String> {
    let opts = Options {
        commit_interval: None,
        log_bytes: engine::log_size_from_env()?,
        log_per_series: engine::log_per_series_from_env()?,
        spill_bytes: engine::spill_bytes_from_env()?,
        lock_wait: LOCK_WAIT,
        ..Options::default()
    };
    Store::open(dir, opts).map_err(|e| message(&e, ""))
}

/// Open the store to write series `names` alone (a write command on its own): their state
/// alone is loaded, and their changes committed as one record at the close; where the
/// engine finds that unsafe or costly (after a crash, the ring near its half, a checkpoint
/// owed to the readers) it opens the whole store (`engine::Options::partial`).
pub fn open_writing(dir: &Path, names: &[String]) -> Result<Store, String> {
    let opts = Options {
        commit_interval: None,
        log_bytes: engine::log_size_from_env()?,
        log_per_series: engine::log_per_series_from_env()?,
        spill_bytes: engine::spill_bytes_from_env()?,
        only: Some(names.to_vec()),
        partial: true,
        lock_wait: LOCK_WAIT,
        ..Options::default()
    };
    Store::open(dir, opts).map_err(|e| message(&e, ""))
}

/// Open the store to read series `name` alone (given by the user as `given`): only its state
/// is loaded, nothing is written (docs/ARCHITECTURE.md, "Reading one series").
pub fn open_reading(dir: &Path, name: &str, given: &str) -> Result<Store, String> {
    open_reading_all(dir, &[name.to_string()], given)
}

/// [`open_reading`] for several series (names already normalised); errors name `given`.
pub fn open_reading_all(dir: &Path, names: &[String], given: &str) -> Result<Store, String> {
    let opts = Options {
        commit_interval: None,
        log_bytes: engine::log_size_from_env()?,
        only: Some(names.to_vec()),
        lock_wait: LOCK_WAIT,
        ..Options::default()
    };
    Store::open(dir, opts).map_err(|e| message(&e, given))
}

/// rrdtool's text for an engine error about the RRD the user called `given`.
pub fn message(e: &Error, given: &str) -> String {
    match e {
        Error::Rrd(r) => r.msg.clone(),
        Error::NotFound(_) => format!("opening '{given}': No such file or directory"),
        Error::Exists(_) => format!("creating '{given}': File exists"),
        other => other.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_normalised() {
        assert_eq!(normalize("./a.rrd").unwrap(), "a.rrd");
        assert_eq!(normalize("db//x/./a.rrd").unwrap(), "db/x/a.rrd");
        assert_eq!(normalize("/srv/a.rrd").unwrap(), "/srv/a.rrd");
        assert!(normalize("../a.rrd").is_err());
        assert!(normalize("db/../a.rrd").is_err());
    }

    #[test]
    fn paths_under_the_daemons_base_are_its_names() {
        set_base(Some("/var/lib/rrd/"));
        assert_eq!(normalize("/var/lib/rrd/h/cpu.rrd").unwrap(), "h/cpu.rrd");
        assert_eq!(
            normalize("/var/lib/rrdx/a.rrd").unwrap(),
            "/var/lib/rrdx/a.rrd"
        );
        assert_eq!(normalize("h/cpu.rrd").unwrap(), "h/cpu.rrd");
        // Through a symbolic link to the base (the base is recorded canonical).
        let t = std::env::temp_dir().join(format!("ringlet-base-link-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&t);
        std::fs::create_dir_all(t.join("real/h")).unwrap();
        std::os::unix::fs::symlink(t.join("real"), t.join("link")).unwrap();
        let real = std::fs::canonicalize(t.join("real")).unwrap();
        set_base(real.to_str());
        let link = t.join("link");
        let link = link.to_str().unwrap();
        assert_eq!(normalize(&format!("{link}/a.rrd")).unwrap(), "a.rrd");
        assert_eq!(
            normalize(&format!("{link}/h/cpu.rrd")).unwrap(),
            "h/cpu.rrd"
        );
        assert_eq!(
            normalize(&format!("{link}/none/a.rrd")).unwrap(),
            format!("{link}/none/a.rrd")
        );
        std::fs::remove_dir_all(&t).unwrap();
        set_base(None);
        assert_eq!(
            normalize("/var/lib/rrd/h/cpu.rrd").unwrap(),
            "/var/lib/rrd/h/cpu.rrd"
        );
    }

    #[test]
    fn store_flag_wins() {
        assert_eq!(store_dir(Some("/tmp/s")), PathBuf::from("/tmp/s"));
        assert_eq!(store_dir_for(Some("/tmp/s"), true), PathBuf::from("/tmp/s"));
    }

    #[test]
    fn root_gets_the_system_store() {
        if std::env::var_os("RINGLET_STORE").is_none() {
            assert_eq!(store_dir_for(None, true), PathBuf::from(SYSTEM_STORE));
            assert_ne!(store_dir_for(None, false), PathBuf::from(SYSTEM_STORE));
        }
    }
}
