//! Placeholders for the series a command on the store alone (no daemon) wrote: `create`,
//! `restore`, `import` of a name that is a file path, as Cacti without a daemon runs
//! `ringlet -` as its rrdtool on `/var/lib/cacti/rra/x.rrd`.
//!
//! Clients check that the file exists before they create it (Cacti's `file_exists`,
//! collectd's `CreateFiles`, gmetad, Munin): without a file at the path they create the
//! series again at every poll, and each create empties it. So a series named by an absolute
//! path, or by a path under the base directory the store's daemon recorded, gets the
//! daemon's placeholder there (`server::placeholder`), written after the commit that holds
//! the series (a crash between leaves a series without a placeholder, created again with
//! nothing lost, never a placeholder without its series) and synced before anything later is
//! committed (a power cut never takes it from a series holding data): all of a commit's
//! placeholders written, then each file system they are on synced once. A real `.rrd` file at
//! the path is the user's: moved aside into `<store>/imported/`, as the daemon does.

use server::placeholder::{self, Found, Places};
use std::path::{Path, PathBuf};

/// Where series `name`'s placeholder goes: (the path as clients give it, the file): an
/// absolute name is its own path; a relative one is under the recorded base directory, if
/// any; other store names (carbon's, the CLI's own `a.rrd`) are not files.
fn path_of(name: &str, base: Option<&str>) -> Option<String> {
    if name.starts_with('/') {
        return Some(name.to_string());
    }
    base.map(|b| format!("{b}/{name}"))
}

/// Give each series in `names` (written to the store in `dir` and committed) its placeholder.
/// The error names every path that could not have one.
pub(crate) fn write(dir: &Path, names: &[String]) -> Result<(), String> {
    if names.is_empty() {
        return Ok(());
    }
    let store = std::path::absolute(dir).unwrap_or_else(|_| PathBuf::from(dir));
    let places = Places::new(&store, crate::placeholder_address(dir));
    let base = cli::store::base();
    let mut failed = Vec::new();
    for name in names {
        let Some(abs) = path_of(name, base.as_deref()) else {
            continue;
        };
        let path = Path::new(&abs);
        let done = match placeholder::inspect(None, path) {
            Found::Placeholder | Found::Other => Ok(()),
            Found::Missing | Found::Empty => placeholder::write(&places, path, &abs, name),
            Found::Rrd => placeholder::move_aside(&places, path, &abs, name)
                .and_then(|_| placeholder::write(&places, path, &abs, name)),
        };
        if let Err(e) = done {
            failed.push(format!("{abs}: {}", server::log::strerror(&e)));
        }
    }
    if let Err(e) = places.written.sync() {
        failed.push(format!(
            "syncing their file systems: {}",
            server::log::strerror(&e)
        ));
    }
    if failed.is_empty() {
        Ok(())
    } else {
        Err(format!(
            "the series are stored, but their placeholder files could not be written ({}): a client that checks the file first will create them again",
            failed.join(", ")
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_file_paths_get_placeholders() {
        assert_eq!(
            path_of("/var/lib/cacti/rra/a.rrd", None).unwrap(),
            "/var/lib/cacti/rra/a.rrd"
        );
        assert_eq!(path_of("/x/a.rrd", Some("/b")).unwrap(), "/x/a.rrd");
        assert_eq!(path_of("h/a.rrd", Some("/b")).unwrap(), "/b/h/a.rrd");
        assert_eq!(path_of("a.rrd", None), None);
    }
}
