//! The `ringlet` binary: rrdtool-compatible CLI over a ringlet store (and, later, the daemon).

fn main() {
    eprintln!("ringlet: CLI in progress");
    std::process::exit(1);
}
