//! `ringlet-serve ARGS` is `ringlet serve ARGS`: the daemon without the CLI around it. The
//! server's integration tests start it (Cargo gives a package's tests the path of its own
//! binaries only). The default store is `$RINGLET_STORE`, else `./ringlet-store`.

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.first().map(String::as_str) == Some(cli::drawer::WORKER_ARG) {
        // The drawing process the daemon starts from its own binary (cli::drawer).
        std::process::exit(cli::drawer::worker_main());
    }
    let store = std::env::var_os("RINGLET_STORE")
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|| std::path::PathBuf::from("ringlet-store"));
    std::process::exit(server::run(&args, store));
}
