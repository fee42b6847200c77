//! LIST: the series in the store and the `.rrd` files and directories on disk under the base
//! directory.

use crate::daemon::Daemon;
use proto::Response;
use std::path::Path;

/// LIST: the series in the store and the `.rrd` files and directories on disk under the base
/// directory (rrdcached lists only the disk), sorted (rrdcached: in readdir order).
pub fn list(d: &Daemon, recursive: bool, path: &str) -> Response {
    let Some(base) = &d.base else {
        return Response::err("No base directory defined");
    };
    let shown = format!("{base}{path}");
    if path.split('/').any(|c| c == "..") {
        return Response::err(format!("Cannot read: {shown}"));
    }
    let dir = path.trim_start_matches('/').trim_end_matches('/');
    if d.restrict_base && !dir.is_empty() && d.no_links(dir).is_err() {
        return Response::err(format!("Cannot read: {shown}"));
    }
    let inner = d.lock();
    let mut names = inner.names();
    drop(inner);
    names.retain(|n| !n.starts_with('/'));
    // On disk: beneath a view mounted over -b (which shows the store's names already).
    let disk = d.disk_base().unwrap_or(base.as_str());
    disk_rrds(Path::new(disk), "", &mut names);
    names.sort();
    names.dedup();
    if dir.ends_with(".rrd") {
        let mut out = Vec::new();
        if names.iter().any(|n| n == dir) {
            out.push(dir.rsplit('/').next().unwrap_or(dir).to_string());
        }
        return Response::lines("RRDs", &out);
    }
    let prefix = if dir.is_empty() {
        String::new()
    } else {
        format!("{dir}/")
    };
    let on_disk = Path::new(disk).join(dir).is_dir();
    if !on_disk && !names.iter().any(|n| n.starts_with(&prefix)) {
        return Response::err(format!("List {shown}: No such file or directory"));
    }
    let mut out: Vec<String> = Vec::new();
    for n in &names {
        let Some(rest) = n.strip_prefix(&prefix) else {
            continue;
        };
        if recursive {
            out.push(rest.to_string());
        } else {
            out.push(rest.split('/').next().unwrap_or(rest).to_string());
        }
    }
    if !recursive {
        // Empty directories on disk are listed too (rrdcached shows every sub-directory).
        if let Ok(rd) = std::fs::read_dir(Path::new(disk).join(dir)) {
            for e in rd.flatten() {
                if e.file_type().is_ok_and(|t| t.is_dir()) {
                    out.push(e.file_name().to_string_lossy().into_owned());
                }
            }
        }
    }
    out.sort();
    out.dedup();
    Response::lines("RRDs", &out)
}

/// Add the `.rrd` files under `dir` (names relative to the walk's root, prefixed by `rel`).
/// Symbolic links are not followed. Iterative: the tree's depth is the clients' to choose.
fn disk_rrds(dir: &Path, rel: &str, out: &mut Vec<String>) {
    let mut todo = vec![(dir.to_path_buf(), rel.to_string())];
    while let Some((dir, rel)) = todo.pop() {
        let Ok(rd) = std::fs::read_dir(&dir) else {
            continue;
        };
        for e in rd.flatten() {
            let name = e.file_name().to_string_lossy().into_owned();
            let Ok(ft) = e.file_type() else { continue };
            let full = format!("{rel}{name}");
            if ft.is_dir() {
                todo.push((e.path(), format!("{full}/")));
            } else if ft.is_file() && name.ends_with(".rrd") {
                out.push(full);
            }
        }
    }
}
