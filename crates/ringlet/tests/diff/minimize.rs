//! Shrinking a failing case to a short reproducer: drop the steps after the first difference,
//! then greedily drop chunks of earlier steps (halving the chunk size, as in delta debugging)
//! while that last step still differs between rrdtool and ringlet; then single value arguments
//! of multi-value update calls.

use super::case::{Case, Kind, Stdin, Step};
use super::compare::differences;
use super::exec::{run_case, Output, Tool};
use std::path::Path;

/// At most this many trial runs per case (each runs both tools over the remaining steps).
const MAX_TRIALS: usize = 64;

/// Does the last step of `steps` still differ? Returns both tools' outputs when it does.
fn still_differs(
    seed: u64,
    steps: &[Step],
    ringlet: &Tool,
    dir: &Path,
) -> Option<(Vec<Output>, Vec<Output>)> {
    let case = Case {
        seed,
        steps: steps.to_vec(),
        features: Default::default(),
    };
    let rrd = run_case(&Tool::Rrdtool, &case, &dir.join("r"), None);
    let ours = run_case(ringlet, &case, &dir.join("g"), Some(&rrd));
    let last = steps.len() - 1;
    if differences(steps[last].kind, &rrd[last], &ours[last]).is_empty() {
        None
    } else {
        Some((rrd, ours))
    }
}

/// Positions of the `time:value...` arguments of an update step.
fn value_args(step: &Step) -> Vec<usize> {
    if !matches!(step.kind, Kind::Update | Kind::Updatev) {
        return Vec::new();
    }
    (2..step.args.len())
        .filter(|&i| step.args[i].starts_with(|c: char| c.is_ascii_digit()))
        .filter(|&i| !matches!(step.args[i - 1].as_str(), "-t" | "--template"))
        .collect()
}

/// Remove the steps at `drop` (sorted), remapping stdin references; None if a kept step
/// reads the output of a dropped one.
fn without(steps: &[Step], drop: &[usize]) -> Option<Vec<Step>> {
    let mut map = vec![usize::MAX; steps.len()];
    let mut out = Vec::new();
    for (i, s) in steps.iter().enumerate() {
        if drop.binary_search(&i).is_err() {
            map[i] = out.len();
            out.push(s.clone());
        }
    }
    for s in &mut out {
        if let Stdin::RrdtoolStdoutOf(j) = s.stdin {
            if map[j] == usize::MAX {
                return None;
            }
            s.stdin = Stdin::RrdtoolStdoutOf(map[j]);
        }
    }
    Some(out)
}

/// A shorter case whose last step differs like step `at` of `case`, with both tools' outputs;
/// None if even the unshrunk prefix no longer differs (a flaky difference).
pub fn minimize(
    case: &Case,
    at: usize,
    ringlet: &Tool,
    dir: &Path,
) -> Option<(Case, Vec<Output>, Vec<Output>)> {
    let mut steps: Vec<Step> = case.steps[..=at].to_vec();
    let (mut rrd, mut ours) = still_differs(case.seed, &steps, ringlet, dir)?;
    let mut trials = 1;
    // Candidates: everything but `create` (step 0) and the differing last step.
    let mut chunk = (steps.len().saturating_sub(2)).div_ceil(2).max(1);
    loop {
        let mut start = 1;
        while start + 1 < steps.len() && trials < MAX_TRIALS {
            let end = (start + chunk).min(steps.len() - 1);
            let drop: Vec<usize> = (start..end).collect();
            match without(&steps, &drop) {
                Some(fewer) => {
                    trials += 1;
                    if let Some((r, o)) = still_differs(case.seed, &fewer, ringlet, dir) {
                        steps = fewer;
                        rrd = r;
                        ours = o;
                        continue; // same start, now pointing at the next chunk
                    }
                    start = end;
                }
                None => start = end,
            }
        }
        if chunk == 1 || trials >= MAX_TRIALS {
            break;
        }
        chunk = chunk.div_ceil(2);
    }
    // Then single value arguments of multi-value update calls (the differing step too).
    let mut i = 1;
    while i < steps.len() && trials < MAX_TRIALS {
        let values = value_args(&steps[i]);
        let mut dropped = false;
        if values.len() > 1 {
            for &v in values.iter().rev() {
                if trials >= MAX_TRIALS {
                    break;
                }
                let mut fewer = steps.clone();
                fewer[i].args.remove(v);
                trials += 1;
                if let Some((r, o)) = still_differs(case.seed, &fewer, ringlet, dir) {
                    steps = fewer;
                    rrd = r;
                    ours = o;
                    dropped = true;
                    break;
                }
            }
        }
        if !dropped {
            i += 1;
        }
    }
    let _ = std::fs::remove_dir_all(dir);
    let small = Case {
        seed: case.seed,
        steps,
        features: case.features.clone(),
    };
    Some((small, rrd, ours))
}
