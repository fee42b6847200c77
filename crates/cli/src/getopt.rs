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

/// Parse `args` against `spec`. Errors are rrdtool's messages (without `ERROR: `): the
/// first one found.
pub fn parse(args: &[String], spec: &[Opt]) -> Result<Parsed, String> {
    let (items, positional) = parse_each(args, spec);
    let mut out = Parsed {
        opts: Vec::with_capacity(items.len()),
        positional,
    };
    for item in items {
        match item {
            Item::Opt(l, v) => out.opts.push((l, v)),
            Item::Missing(_, e) | Item::Invalid(e) => return Err(e),
        }
    }
    Ok(out)
}

/// Parse `args` against `spec`, going on past errors as GNU getopt does (for a command that
/// applies each option as it comes, `tune`): every option and error in order, and the
/// positional arguments.
pub fn parse_each(args: &[String], spec: &[Opt]) -> (Vec<Item>, Vec<String>) {
    let mut items = Vec::new();
    let mut positional = Vec::new();
    let mut i = 0;
    while i < args.len() {
        let a = &args[i];
        i += 1;
        if a == "--" {
            positional.extend(args[i..].iter().cloned());
            break;
        }
        if let Some(body) = a.strip_prefix("--") {
            let (name, inline) = match body.split_once('=') {
                Some((n, v)) => (n, Some(v)),
                None => (body, None),
            };
            let Some(o) = spec.iter().find(|o| o.long == name) else {
                items.push(Item::Invalid(format!("invalid option -- '{name}'")));
                continue;
            };
            if !o.takes_value {
                items.push(Item::Opt(o.long, String::new()));
            } else if let Some(v) = inline {
                items.push(Item::Opt(o.long, v.to_string()));
            } else if let Some(v) = args.get(i) {
                i += 1;
                items.push(Item::Opt(o.long, v.clone()));
            } else {
                let e = format!("option requires argument -- '{name}'");
                items.push(Item::Missing(o.long, e));
            }
        } else if a.len() > 1 && a.starts_with('-') {
            let chars: Vec<char> = a[1..].chars().collect();
            let mut k = 0;
            while k < chars.len() {
                let c = chars[k];
                k += 1;
                let Some(o) = spec.iter().find(|o| o.short == c) else {
                    items.push(Item::Invalid(format!("invalid option -- '{c}'")));
                    continue;
                };
                if !o.takes_value {
                    items.push(Item::Opt(o.long, String::new()));
                    continue;
                }
                if k < chars.len() {
                    items.push(Item::Opt(o.long, chars[k..].iter().collect()));
                } else if let Some(v) = args.get(i) {
                    i += 1;
                    items.push(Item::Opt(o.long, v.clone()));
                } else {
                    let e = format!("option requires an argument -- '{c}'");
                    items.push(Item::Missing(o.long, e));
                }
                break;
            }
        } else {
            positional.push(a.clone());
        }
    }
    (items, positional)
}

/// One option as [`parse_each`] found it.
#[derive(Debug, PartialEq, Eq)]
pub enum Item {
    /// `(long name, value)`; the value is empty for flags.
    Opt(&'static str, String),
    /// An option whose value is missing: its long name and getopt's message.
    Missing(&'static str, String),
    /// An unknown option: getopt's message.
    Invalid(String),
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
