fn rss() -> String {
    let s = std::fs::read_to_string("/proc/self/status").unwrap();
    s.lines()
        .filter(|l| l.starts_with("VmRSS") || l.starts_with("RssAnon") || l.starts_with("RssFile"))
        .map(|l| l.split_whitespace().take(2).collect::<Vec<_>>().join(" "))
        .collect::<Vec<_>>()
        .join(", ")
}
fn main() {
    let dir = std::env::args().nth(1).unwrap();
    eprintln!("start: {}", rss());
    let st = engine::Store::open(std::path::Path::new(&dir), engine::Options::default()).unwrap();
    eprintln!(
        "open: {}; archive heap {} B",
        rss(),
        st.archive_heap_bytes()
    );
    drop(st);
    eprintln!("closed: {}", rss());
}
