//! The options of ringlet's own commands (`import`, `export`, `stats`, `repair`), read by
//! `lexopt`: short and long forms, `--daemon=ADDR` and `--daemon ADDR`, bundled short flags
//! (`-fq`), `--` before names that start with a dash. rrdtool's commands keep their own
//! getopt (`cli::getopt`, whose texts are rrdtool's), and `serve` reads rrdcached's options
//! (`server::config`, by lexopt too, whose texts are rrdcached's).

use lexopt::prelude::*;

/// Which options a command takes.
#[derive(Default, Clone, Copy)]
pub struct Takes {
    /// `-f/--force`, `-r/--resume`, `-q/--quiet`.
    pub write_flags: bool,
    /// `-d/--daemon ADDR`.
    pub daemon: bool,
    /// `--prefix PATH`.
    pub prefix: bool,
    /// `--move`.
    pub moves: bool,
}

/// What a command's arguments said.
#[derive(Default, Debug)]
pub struct Opts {
    pub help: bool,
    pub force: bool,
    pub resume: bool,
    pub quiet: bool,
    pub daemon: Option<String>,
    pub prefix: Option<String>,
    pub moves: bool,
    /// The arguments that are not options, in order.
    pub pos: Vec<String>,
}

/// Read `args` (the arguments after the command's name) for the options `takes` allows.
/// Err: what was wrong, for `ERROR: ...` after the command's usage.
pub fn parse(args: &[String], takes: Takes) -> Result<Opts, String> {
    let mut o = Opts::default();
    let mut p = lexopt::Parser::from_args(args.iter().cloned());
    while let Some(arg) = p.next().map_err(|e| e.to_string())? {
        match arg {
            Short('h') | Long("help") => o.help = true,
            Short('f') | Long("force") if takes.write_flags => o.force = true,
            Short('r') | Long("resume") if takes.write_flags => o.resume = true,
            Short('q') | Long("quiet") if takes.write_flags => o.quiet = true,
            Short('d') | Long("daemon") if takes.daemon => o.daemon = Some(text(&mut p)?),
            Long("prefix") if takes.prefix => o.prefix = Some(text(&mut p)?),
            Long("move") if takes.moves => o.moves = true,
            Value(v) => o.pos.push(v.string().map_err(|e| e.to_string())?),
            other => return Err(other.unexpected().to_string()),
        }
    }
    if o.force && o.resume {
        return Err("--force and --resume: choose one".into());
    }
    Ok(o)
}

/// [`parse`] for a command whose usage text is `usage`: `--help` prints it and gives exit
/// status 0, a wrong option prints it and the error and gives 1 (`Err`: the status).
pub fn parse_or_usage(args: &[String], takes: Takes, usage: &str) -> Result<Opts, i32> {
    match parse(args, takes) {
        Ok(o) if o.help => {
            print!("{usage}");
            Err(0)
        }
        Ok(o) => Ok(o),
        Err(e) => {
            eprint!("{usage}");
            eprintln!("ERROR: {e}");
            Err(1)
        }
    }
}

/// An option's value, as text.
fn text(p: &mut lexopt::Parser) -> Result<String, String> {
    p.value()
        .map_err(|e| e.to_string())?
        .string()
        .map_err(|e| e.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(a: &[&str]) -> Vec<String> {
        a.iter().map(|s| s.to_string()).collect()
    }

    const ALL: Takes = Takes {
        write_flags: true,
        daemon: true,
        prefix: true,
        moves: true,
    };

    #[test]
    fn short_long_bundled_and_attached_forms_read_alike() {
        let o = parse(&args(&["-fq", "--daemon=unix:/s", "out", "a*"]), ALL).unwrap();
        assert!(o.force && o.quiet && !o.resume && !o.help);
        assert_eq!(o.daemon.as_deref(), Some("unix:/s"));
        assert_eq!(o.pos, ["out", "a*"]);
        let o = parse(
            &args(&["-d", "127.0.0.1:42217", "--prefix", "x.", "--", "-n"]),
            ALL,
        )
        .unwrap();
        assert_eq!(o.daemon.as_deref(), Some("127.0.0.1:42217"));
        assert_eq!(o.prefix.as_deref(), Some("x."));
        assert_eq!(o.pos, ["-n"]);
    }

    #[test]
    fn what_a_command_does_not_take_is_refused_with_its_name() {
        let e = parse(&args(&["--prefix", "x"]), Takes::default()).unwrap_err();
        assert!(e.contains("--prefix"), "{e}");
        let e = parse(&args(&["-z"]), ALL).unwrap_err();
        assert!(e.contains("-z"), "{e}");
        let e = parse(&args(&["--daemon"]), ALL).unwrap_err();
        assert!(e.contains("--daemon"), "{e}");
        assert!(parse(&args(&["-f", "-r"]), ALL)
            .unwrap_err()
            .contains("choose one"));
        assert!(parse(&args(&["--help"]), Takes::default()).unwrap().help);
    }
}
