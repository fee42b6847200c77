//! GNU `getopt_long` as rrdtool's commands use it: options anywhere (arguments are permuted),
//! `--name value`, `--name=value`, `-x value`, `-xvalue`, `--` ending options, and rrdtool's
//! error texts for unknown options and missing values.

/// One option a command accepts.
pub struct Opt {
    pub long: &'static str,
    pub short: char,
    pub takes_value: bool,
}

/// Options in the order given, and the positional arguments.
#[derive(Debug, Default)]
pub struct Parsed {
    /// `(long name, value)`; the value is empty for flags.
    pub opts: Vec<(&'static str, String)>,
    pub positional: Vec<String>,
}

impl Parsed {
    pub fn has(&self, long: &str) -> bool {
        self.opts.iter().any(|(l, _)| *l == long)
    }
}

/// Parse `args` against `spec`. Errors are rrdtool's messages (without `ERROR: `).
pub fn parse(args: &[String], spec: &[Opt]) -> Result<Parsed, String> {
    let mut out = Parsed::default();
    let mut i = 0;
    while i < args.len() {
        let a = &args[i];
        i += 1;
        if a == "--" {
            out.positional.extend(args[i..].iter().cloned());
            break;
        }
        if let Some(body) = a.strip_prefix("--") {
            let (name, inline) = match body.split_once('=') {
                Some((n, v)) => (n, Some(v)),
                None => (body, None),
            };
            let Some(o) = spec.iter().find(|o| o.long == name) else {
                return Err(format!("invalid option -- '{name}'"));
            };
            let value = if o.takes_value {
                match inline {
                    Some(v) => v.to_string(),
                    None => {
                        let Some(v) = args.get(i) else {
                            return Err(format!("option requires argument -- '{name}'"));
                        };
                        i += 1;
                        v.clone()
                    }
                }
            } else {
                String::new()
            };
            out.opts.push((o.long, value));
        } else if a.len() > 1 && a.starts_with('-') {
            let chars: Vec<char> = a[1..].chars().collect();
            let mut k = 0;
            while k < chars.len() {
                let c = chars[k];
                k += 1;
                let Some(o) = spec.iter().find(|o| o.short == c) else {
                    return Err(format!("invalid option -- '{c}'"));
                };
                if !o.takes_value {
                    out.opts.push((o.long, String::new()));
                    continue;
                }
                let value = if k < chars.len() {
                    chars[k..].iter().collect()
                } else {
                    let Some(v) = args.get(i) else {
                        return Err(format!("option requires an argument -- '{c}'"));
                    };
                    i += 1;
                    v.clone()
                };
                out.opts.push((o.long, value));
                break;
            }
        } else {
            out.positional.push(a.clone());
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    const SPEC: &[Opt] = &[
        Opt {
            long: "start",
            short: 's',
            takes_value: true,
        },
        Opt {
            long: "align-start",
            short: 'a',
            takes_value: false,
        },
    ];

    fn v(s: &str) -> Vec<String> {
        s.split_whitespace().map(String::from).collect()
    }

    #[test]
    fn options_are_permuted_out_of_positionals() {
        let p = parse(&v("a.rrd -s 5 AVERAGE --start=6 -a -s7 -- -x"), SPEC).unwrap();
        assert_eq!(p.positional, v("a.rrd AVERAGE -x"));
        let vals: Vec<&str> = p.opts.iter().map(|(_, v)| v.as_str()).collect();
        assert_eq!(vals, ["5", "6", "", "7"]);
        assert!(p.has("align-start"));
    }

    #[test]
    fn errors_use_rrdtools_wording() {
        assert_eq!(
            parse(&v("--foo"), SPEC).unwrap_err(),
            "invalid option -- 'foo'"
        );
        assert_eq!(parse(&v("-x"), SPEC).unwrap_err(), "invalid option -- 'x'");
        assert_eq!(
            parse(&v("-s"), SPEC).unwrap_err(),
            "option requires an argument -- 's'"
        );
        assert_eq!(
            parse(&v("--start"), SPEC).unwrap_err(),
            "option requires argument -- 'start'"
        );
    }
}
