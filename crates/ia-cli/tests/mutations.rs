//! A bounded mutation test of the scenario parser (issue 10): every file of
//! `examples/scenarios/` is mutated a fixed number of times with
//! deterministic edits (characters deleted, duplicated or swapped; numbers
//! replaced by extremes and NaN-like text; keys removed or duplicated;
//! values of the wrong type), and each mutant is parsed and run in-process
//! by `simulate`, forward and adjoint `gradient`, with at most 1000 events.
//!
//! Reference: the `ia_cli` crate documentation promises that any input
//! either runs or fails with one documented error (`error: <kind>: ...`),
//! never a panic; the mutants that are still valid scenarios must run.

use ia_cli::{adjoint_solver, CliError, Scenario};
use serde_json::Value;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::Path;

/// Mutants per example file.
const MUTANTS: usize = 48;

/// The most events a mutant may run through.
const EVENT_CAP: usize = 1000;

/// Text that replaces a number.
const REPLACEMENTS: [&str; 16] = [
    "1e308", "-1e308", "-0.0", "0", "5e-324", "1e-16", "1e999", "NaN", "\"NaN\"", "Infinity",
    "null", "true", "[]", "{}", "\"1\"", "1000.0",
];

/// A small deterministic generator (SplitMix64), so every run mutates the
/// same way.
struct Draws(u64);

impl Draws {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }
}

/// Byte ranges of the JSON numbers in `text`.
fn numbers(text: &str) -> Vec<(usize, usize)> {
    let bytes = text.as_bytes();
    let mut spans = Vec::new();
    let mut i = 0;
    while i < bytes.len() {
        let starts = bytes[i] == b'-' || bytes[i].is_ascii_digit();
        let after_value_start = i > 0 && matches!(bytes[i - 1], b':' | b' ' | b'[' | b',');
        if starts && after_value_start {
            let start = i;
            while i < bytes.len()
                && matches!(bytes[i], b'0'..=b'9' | b'-' | b'+' | b'.' | b'e' | b'E')
            {
                i += 1;
            }
            spans.push((start, i));
        } else {
            i += 1;
        }
    }
    spans
}

/// Every `(object path, key)` in `value`, depth first.
fn keys(value: &Value, path: &mut Vec<String>, out: &mut Vec<Vec<String>>) {
    if let Value::Object(map) = value {
        for (k, v) in map {
            path.push(k.clone());
            out.push(path.clone());
            keys(v, path, out);
            path.pop();
        }
    }
}

fn object_at<'v>(value: &'v mut Value, path: &[String]) -> Option<&'v mut Value> {
    path.iter().try_fold(value, |v, k| v.get_mut(k))
}

/// One mutant of `text`.
fn mutate(text: &str, draws: &mut Draws) -> String {
    let chars: Vec<char> = text.chars().collect();
    let at = draws.below(chars.len());
    match draws.below(8) {
        0 => chars
            .iter()
            .enumerate()
            .filter(|&(i, _)| i != at)
            .map(|(_, c)| c)
            .collect(),
        1 => {
            let mut c = chars.clone();
            c.insert(at, chars[at]);
            c.into_iter().collect()
        }
        2 => {
            let mut c = chars.clone();
            if at + 1 < c.len() {
                c.swap(at, at + 1);
            }
            c.into_iter().collect()
        }
        3 | 4 => {
            let spans = numbers(text);
            if spans.is_empty() {
                return text.to_string();
            }
            let (a, b) = spans[draws.below(spans.len())];
            let with = REPLACEMENTS[draws.below(REPLACEMENTS.len())];
            format!("{}{with}{}", &text[..a], &text[b..])
        }
        5 | 6 => {
            let Ok(mut value) = serde_json::from_str::<Value>(text) else {
                return text.to_string();
            };
            let mut all = Vec::new();
            keys(&value, &mut Vec::new(), &mut all);
            if all.is_empty() {
                return text.to_string();
            }
            let path = all[draws.below(all.len())].clone();
            let (key, parent) = path.split_last().expect("a key path is not empty");
            if let Some(Value::Object(map)) = object_at(&mut value, parent) {
                if draws.below(2) == 0 {
                    map.remove(key);
                } else {
                    let wrong = [
                        Value::String("x".into()),
                        Value::Array(vec![]),
                        Value::Null,
                        Value::Bool(true),
                        serde_json::json!({"a": 1}),
                        serde_json::json!(-1),
                    ];
                    map.insert(key.clone(), wrong[draws.below(wrong.len())].clone());
                }
            }
            value.to_string()
        }
        _ => {
            // A duplicated key, at the top or inside the first nested object.
            let positions: Vec<usize> = text.match_indices('{').map(|(i, _)| i).collect();
            let p = positions[draws.below(positions.len())];
            format!("{}{{\"model\": \"lif\", {}", &text[..p], &text[p + 1..])
        }
    }
}

/// Parses and runs `text` by every command, with at most [`EVENT_CAP`]
/// events; returns the errors.
fn run(text: &str) -> Vec<CliError> {
    let mut errors = Vec::new();
    let mut scenario = match Scenario::parse(text, "mutant") {
        Ok(s) => s,
        Err(e) => return vec![e],
    };
    scenario.events.max_events = scenario.events.max_events.min(EVENT_CAP);
    let solver = scenario.solver.clone();
    for method in [
        None,
        Some(ia_adjoint::Method::Forward),
        Some(ia_adjoint::Method::Adjoint),
    ] {
        scenario.solver = if method == Some(ia_adjoint::Method::Adjoint) {
            adjoint_solver(&solver)
        } else {
            solver.clone()
        };
        let result = scenario.problem().and_then(|problem| {
            match method {
                None => ia_events::simulate(&problem).map(|_| ()),
                Some(m) => ia_adjoint::jacobian(&problem, m).map(|_| ()),
            }
            .map_err(CliError::from)
        });
        if let Err(e) = result {
            errors.push(e);
        }
    }
    errors
}

#[test]
fn mutated_scenarios_run_or_fail_cleanly() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/scenarios");
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .expect("examples/scenarios exists")
        .map(|e| e.expect("dir entry").path())
        .filter(|p| p.extension().is_some_and(|x| x == "json"))
        .collect();
    files.sort();
    assert!(files.len() >= 13, "found {} scenarios", files.len());
    let (mut mutants, mut refused) = (0, 0);
    for (k, file) in files.iter().enumerate() {
        let text = std::fs::read_to_string(file).expect("read scenario");
        // The unmutated file runs (except the adjoint of dop853, which says
        // what to use instead).
        for e in run(&text) {
            assert_eq!(e.kind(), "unsupported", "{}: {e}", file.display());
        }
        let mut draws = Draws(k as u64 + 1);
        for _ in 0..MUTANTS {
            let mutant = mutate(&text, &mut draws);
            let errors = catch_unwind(AssertUnwindSafe(|| run(&mutant))).unwrap_or_else(|_| {
                panic!("panicked on the mutant of {}:\n{mutant}", file.display())
            });
            mutants += 1;
            refused += usize::from(!errors.is_empty());
            for e in errors {
                let message = e.to_string();
                assert!(
                    !message.trim().is_empty() && !e.kind().is_empty(),
                    "{mutant}"
                );
                assert!(
                    !has_long_number(&message),
                    "a number printed long: {message}"
                );
            }
        }
    }
    // The mutations bite: many mutants are refused, and many still run.
    assert!(refused > mutants / 4, "{refused} of {mutants} refused");
    assert!(refused < mutants, "every mutant was refused");
}

/// Whether `text` holds a run of 25 or more digits: no `f64` printed short needs
/// that many (17 significant digits after at most 7 zeros), so such a run is a number printed long
/// (like `1e308` as 309 digits).
fn has_long_number(text: &str) -> bool {
    let mut run = 0;
    text.chars().any(|c| {
        run = if c.is_ascii_digit() { run + 1 } else { 0 };
        run >= 25
    })
}
