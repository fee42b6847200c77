//! A daemon's address as rrdcached's `-l`, librrd's `--daemon` and `$RRDCACHED_ADDRESS` take
//! it: `unix:/path`, `/path`, `host`, `host:port`, `[v6]:port`.

use std::path::PathBuf;

/// Where a listener binds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Addr {
    Unix(PathBuf),
    /// Host (without brackets for IPv6) and port.
    Tcp(String, u16),
}

impl std::fmt::Display for Addr {
    /// As `RRDCACHED_ADDRESS` and `--daemon` take it.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Addr::Unix(p) => write!(f, "unix:{}", p.display()),
            Addr::Tcp(h, port) if h.contains(':') => write!(f, "[{h}]:{port}"),
            Addr::Tcp(h, port) if h.is_empty() => write!(f, "localhost:{port}"),
            Addr::Tcp(h, port) => write!(f, "{h}:{port}"),
        }
    }
}

/// rrdcached's TCP port.
pub const DEFAULT_PORT: u16 = 42217;
/// An address as `-l` and librrd take it: `unix:/path`, `/path`, `host`, `host:port`, `[v6]:port`.
pub fn parse_addr(s: &str) -> Result<Addr, String> {
    if let Some(p) = s.strip_prefix("unix:") {
        return Ok(Addr::Unix(PathBuf::from(p)));
    }
    if s.starts_with('/') {
        return Ok(Addr::Unix(PathBuf::from(s)));
    }
    let port = |p: &str| {
        p.parse::<u16>()
            .map_err(|_| format!("invalid port in address '{s}'"))
    };
    if let Some(rest) = s.strip_prefix('[') {
        let (host, after) = rest
            .split_once(']')
            .ok_or(format!("invalid address '{s}'"))?;
        let p = match after.strip_prefix(':') {
            Some(p) => port(p)?,
            None if after.is_empty() => DEFAULT_PORT,
            None => return Err(format!("invalid address '{s}'")),
        };
        return Ok(Addr::Tcp(host.to_string(), p));
    }
    match s.rsplit_once(':') {
        Some((h, p)) if !h.contains(':') => Ok(Addr::Tcp(h.to_string(), port(p)?)),
        Some(_) => Ok(Addr::Tcp(s.to_string(), DEFAULT_PORT)),
        None => Ok(Addr::Tcp(s.to_string(), DEFAULT_PORT)),
    }
}
