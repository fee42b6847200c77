//! The process's own counters, from `/proc/self`: bytes it caused to be written to disk
//! (`write_bytes` of `io`: counted when pages are dirtied, so a small append to a page counts
//! the page) and its resident memory. STATS reports them.

/// `write_bytes` of `/proc/self/io`; 0 where the kernel does not provide it.
pub fn disk_bytes_written() -> u64 {
    std::fs::read_to_string("/proc/self/io")
        .ok()
        .as_deref()
        .and_then(write_bytes)
        .unwrap_or(0)
}

/// The process's resident memory in bytes (`VmRSS` of `/proc/self/status`; 0 where there is
/// none).
pub fn resident_bytes() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .as_deref()
        .and_then(vm_rss)
        .unwrap_or(0)
}

fn vm_rss(status: &str) -> Option<u64> {
    let kb: u64 = status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))?
        .trim()
        .strip_suffix("kB")?
        .trim()
        .parse()
        .ok()?;
    kb.checked_mul(1024)
}

fn write_bytes(io: &str) -> Option<u64> {
    io.lines()
        .find_map(|l| l.strip_prefix("write_bytes:"))
        .and_then(|v| v.trim().parse().ok())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn write_bytes_is_read_from_proc_self_io_text() {
        let text = "rchar: 10\nwchar: 20\nsyscr: 1\nsyscw: 2\nread_bytes: 4096\nwrite_bytes: 8192\ncancelled_write_bytes: 0\n";
        assert_eq!(write_bytes(text), Some(8192));
        assert_eq!(write_bytes("rchar: 1\n"), None);
        let status = "Name:\tringlet\nVmHWM:\t  9000 kB\nVmRSS:\t    8192 kB\nThreads: 4\n";
        assert_eq!(vm_rss(status), Some(8192 * 1024));
        assert_eq!(vm_rss("Name: x\n"), None);
        assert!(resident_bytes() > 0, "this process has resident memory");
    }
}
