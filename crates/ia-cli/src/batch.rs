//! `impact-adjoint batch`: many scenarios, one a line, run in parallel.
//!
//! The input is [JSON Lines](https://jsonlines.org): one JSON object a
//! line, each a command and its scenario:
//!
//! ```json
//! {"command": "simulate", "scenario": {"model": "ball1d", "t_end": 1}}
//! {"command": "gradient", "method": "adjoint", "scenario": {"model": "ball1d", "t_end": 1}}
//! ```
//!
//! | key | required | meaning |
//! |---|---|---|
//! | `command` | yes | `simulate`, `gradient` or `fit` |
//! | `scenario` | yes | the scenario object, as in a scenario file |
//! | `method` | no | `gradient` only: `forward` (default) or `adjoint`, as `--method` |
//! | `jacobian` | no | `gradient` only: `true` is `--jacobian` |
//!
//! The output is JSON Lines in input order: for each input line, the
//! document the single command prints, on one line (as with `--compact`),
//! or, if that line failed, `{"line": k, "error": {"kind": "...",
//! "message": "..."}}` with `k` the line's number in the input (from 1) and
//! the kind and message the single command would print. A failed line does
//! not stop the others, and the exit status is 0 whenever the input could
//! be read. Blank lines (only spaces) are skipped and give no output line,
//! so a trailing newline or an empty separator line is harmless; the `line`
//! of an error still counts them.
//!
//! The lines run on `jobs` worker threads ([`ia_adjoint::Batch`]); each is
//! the single command, so its output is the same to the last digit.

use crate::{compact_json, CliError, GradientMethod};
use serde_json::{json, Map, Value};

/// The keys of a batch line.
const LINE_KEYS: [&str; 4] = ["command", "scenario", "method", "jacobian"];

/// The commands a batch line may name.
const COMMANDS: [&str; 3] = ["simulate", "gradient", "fit"];

/// `impact-adjoint batch`: the JSON Lines output for the JSON Lines `text`
/// (`source` names it in error messages), run on `jobs` threads (`0`: one
/// per core). Every output line ends with a newline.
///
/// ```
/// let input = r#"{"command": "simulate", "scenario": {"model": "ball1d", "t_end": 0.2}}
/// {"command": "gradient", "scenario": {"model": "nothing", "t_end": 1}}
/// "#;
/// let out = ia_cli::batch(input, "example", 2).unwrap();
/// let lines: Vec<serde_json::Value> =
///     out.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
/// assert_eq!(lines[0]["model"], "ball1d");
/// assert_eq!(lines[1]["line"], 2);
/// assert_eq!(lines[1]["error"]["kind"], "unknown_name");
/// ```
pub fn batch(text: &str, source: &str, jobs: usize) -> Result<String, CliError> {
    let pool = ia_adjoint::Batch::with_threads(jobs)?;
    let lines: Vec<(usize, &str)> = text
        .lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty())
        .map(|(i, l)| (i + 1, l))
        .collect();
    let outputs = pool.map(&lines, |&(k, line)| {
        run_line(line, &format!("line {k} of {source}")).unwrap_or_else(|e| error_line(k, &e))
    });
    let mut out = String::with_capacity(outputs.iter().map(|o| o.len() + 1).sum());
    for line in outputs {
        out.push_str(&line);
        out.push('\n');
    }
    Ok(out)
}

/// The output line of the failed input line `k`.
fn error_line(k: usize, error: &CliError) -> String {
    json!({"line": k, "error": {"kind": error.kind(), "message": error.to_string().replace('\n', " ")}})
        .to_string()
}

/// The compact document of one input line.
fn run_line(line: &str, source: &str) -> Result<String, CliError> {
    let value = crate::scenario::parse_json(line, source)?;
    let obj = value.as_object().ok_or_else(|| {
        CliError::InvalidScenario(format!(
            "{source} must be a JSON object with 'command' and 'scenario'"
        ))
    })?;
    if let Some(key) = obj.keys().find(|k| !LINE_KEYS.contains(&k.as_str())) {
        return Err(CliError::InvalidScenario(format!(
            "unknown key '{key}' in {source}; valid keys: {}",
            LINE_KEYS.join(", ")
        )));
    }
    let command = match obj.get("command") {
        Some(Value::String(c)) if COMMANDS.contains(&c.as_str()) => c.as_str(),
        Some(other) => {
            return Err(CliError::InvalidScenario(format!(
                "'command' in {source} must be one of {}, got {other}",
                COMMANDS.join(", ")
            )))
        }
        None => {
            return Err(CliError::InvalidScenario(format!(
                "{source} has no 'command': it is required (one of {})",
                COMMANDS.join(", ")
            )))
        }
    };
    if command != "gradient" {
        if let Some(key) = ["method", "jacobian"]
            .iter()
            .find(|k| obj.contains_key(**k))
        {
            return Err(CliError::InvalidScenario(format!(
                "'{key}' in {source} applies to the gradient command only, not to {command}"
            )));
        }
    }
    let scenario = scenario_text(obj, source)?;
    let document = match command {
        "simulate" => crate::simulate(&scenario, source)?,
        "fit" => crate::fit(&scenario, source)?,
        _ => crate::gradient_with(
            &scenario,
            source,
            method(obj, source)?,
            jacobian(obj, source)?,
        )?,
    };
    Ok(compact_json(&document))
}

fn scenario_text(obj: &Map<String, Value>, source: &str) -> Result<String, CliError> {
    match obj.get("scenario") {
        Some(scenario @ Value::Object(_)) => Ok(scenario.to_string()),
        Some(other) => Err(CliError::InvalidScenario(format!(
            "'scenario' in {source} must be a scenario object, got {other}"
        ))),
        None => Err(CliError::InvalidScenario(format!(
            "{source} has no 'scenario': it is required"
        ))),
    }
}

fn method(obj: &Map<String, Value>, source: &str) -> Result<GradientMethod, CliError> {
    match obj.get("method").map(|m| (m, m.as_str())) {
        None | Some((_, Some("forward"))) => Ok(GradientMethod::Forward),
        Some((_, Some("adjoint"))) => Ok(GradientMethod::Adjoint),
        Some((other, _)) => Err(CliError::InvalidScenario(format!(
            "'method' in {source} must be \"forward\" or \"adjoint\", got {other}"
        ))),
    }
}

fn jacobian(obj: &Map<String, Value>, source: &str) -> Result<bool, CliError> {
    match obj.get("jacobian") {
        None => Ok(false),
        Some(Value::Bool(b)) => Ok(*b),
        Some(other) => Err(CliError::InvalidScenario(format!(
            "'jacobian' in {source} must be true or false, got {other}"
        ))),
    }
}
