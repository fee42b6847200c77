//! Series names: what a name may be, and its one spelling.

/// Why a path cannot name an RRD in a store.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BadName {
    /// It has a `..` component.
    DotDot,
    /// Nothing is left after dropping empty and `.` components.
    Empty,
}

/// The store name of an RRD path: empty and `.` components dropped (`./a//b.rrd` is
/// `a/b.rrd`), a leading `/` kept, `..` refused. The CLI and the daemon both name series
/// this way, so one spelling is one series.
pub fn normalize_name(path: &str) -> Result<String, BadName> {
    let mut parts = Vec::new();
    for c in path.split('/') {
        match c {
            "" | "." => {}
            ".." => return Err(BadName::DotDot),
            c => parts.push(c),
        }
    }
    if parts.is_empty() {
        return Err(BadName::Empty);
    }
    let joined = parts.join("/");
    Ok(if path.starts_with('/') {
        format!("/{joined}")
    } else {
        joined
    })
}
