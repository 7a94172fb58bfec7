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
//!
//! The input streams: [`batch_to`] reads [`CHUNK_LINES`] lines, runs them,
//! writes (and flushes) their output lines, then reads the next, so an input
//! of any length runs in bounded memory and a reader downstream (a map step
//! of a distributed engine, `| head`) sees results as they come. A line that
//! is not UTF-8 is an error line of its own (`malformed_json`); a line longer
//! than [`MAX_LINE_BYTES`] ends the run with an `io` error (the output lines
//! before it are written).

use crate::commands::{fit, gradient_with, simulate};
use crate::report::compact_json;
use ia_core::HybridError;
use ia_scenario::{GradientMethod, ScenarioError as CliError};
use serde_json::{json, Map, Value};
use std::io::{BufRead, ErrorKind, Read, Write};

/// Lines read and run together: enough to keep every worker busy between
/// two writes, few enough that the input is never held whole.
pub const CHUNK_LINES: usize = 1024;

/// The longest input line read, in bytes: a scenario is a few hundred bytes,
/// and `/dev/zero` (no newline ever) must not be read forever.
pub const MAX_LINE_BYTES: u64 = 16 * 1024 * 1024;

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
    let mut out = Vec::with_capacity(text.len());
    batch_to(text.as_bytes(), source, jobs, &mut out)?;
    String::from_utf8(out).map_err(|e| CliError::Io(format!("the batch output is not UTF-8: {e}")))
}

/// `impact-adjoint batch`, streaming: reads JSON Lines from `input` (`source`
/// names it in error messages) [`CHUNK_LINES`] at a time, runs each chunk
/// on `jobs` threads (`0`: one per core) and writes its output lines to
/// `output` in input order, flushing after each chunk. A closed pipe
/// downstream ends the run quietly (the reader chose to stop).
///
/// ```
/// let input = "{\"command\": \"simulate\", \"scenario\": {\"model\": \"ball1d\", \"t_end\": 0.2}}\n";
/// let mut output = Vec::new();
/// ia_cli::batch::batch_to(input.as_bytes(), "example", 1, &mut output).unwrap();
/// let line: serde_json::Value = serde_json::from_slice(&output).unwrap();
/// assert_eq!(line["model"], "ball1d");
/// ```
pub fn batch_to(
    mut input: impl BufRead,
    source: &str,
    jobs: usize,
    output: &mut impl Write,
) -> Result<(), CliError> {
    if jobs > ia_adjoint::batch::MAX_THREADS {
        return Err(HybridError::invalid_num(
            "--jobs",
            jobs as f64,
            format!(
                "must be at most {} (0, the default, runs one worker per core)",
                ia_adjoint::batch::MAX_THREADS
            ),
        )
        .into());
    }
    let pool = ia_adjoint::Batch::with_threads(jobs)?;
    let mut read = 0;
    let mut buffer = Vec::new();
    let mut chunk: Vec<(usize, Result<String, CliError>)> = Vec::with_capacity(CHUNK_LINES);
    loop {
        chunk.clear();
        let mut ended = false;
        while chunk.len() < CHUNK_LINES {
            match next_line(&mut input, &mut buffer, read + 1, source)? {
                None => {
                    ended = true;
                    break;
                }
                Some(line) => {
                    read += 1;
                    if line.as_ref().map_or(true, |l| !l.trim().is_empty()) {
                        chunk.push((read, line));
                    }
                }
            }
        }
        let outputs = pool.map(&chunk, |(k, line)| {
            let source = format!("line {k} of {source}");
            match line {
                Ok(line) => run_line(line, &source).unwrap_or_else(|e| error_line(*k, &e)),
                Err(e) => error_line(*k, e),
            }
        });
        let written = outputs
            .iter()
            .try_for_each(|line| {
                output.write_all(line.as_bytes())?;
                output.write_all(b"\n")
            })
            .and_then(|()| output.flush());
        match written {
            Ok(()) => {}
            Err(e) if e.kind() == ErrorKind::BrokenPipe => return Ok(()),
            Err(e) => return Err(CliError::Io(format!("cannot write the output: {e}"))),
        }
        if ended {
            return Ok(());
        }
    }
}

/// Line `k` of the input without its line end, `None` at the end of the
/// input; a line that is not UTF-8 is that line's error.
fn next_line(
    input: &mut impl BufRead,
    buffer: &mut Vec<u8>,
    k: usize,
    source: &str,
) -> Result<Option<Result<String, CliError>>, CliError> {
    buffer.clear();
    let read = input
        .by_ref()
        .take(MAX_LINE_BYTES + 1)
        .read_until(b'\n', buffer)
        .map_err(|e| CliError::Io(format!("cannot read line {k} of {source}: {e}")))?;
    if read == 0 {
        return Ok(None);
    }
    if buffer.last() == Some(&b'\n') {
        buffer.pop();
        if buffer.last() == Some(&b'\r') {
            buffer.pop();
        }
    } else if read as u64 > MAX_LINE_BYTES {
        return Err(CliError::Io(format!(
            "line {k} of {source} is longer than {} MiB: a batch line is one command and its scenario, a small JSON object (is this the right file?)",
            MAX_LINE_BYTES / (1024 * 1024)
        )));
    }
    Ok(Some(std::str::from_utf8(buffer).map(str::to_string).map_err(|e| {
        CliError::MalformedJson(format!(
            "line {k} of {source} is not UTF-8 text (invalid byte at offset {}): a batch line is a JSON object",
            e.valid_up_to()
        ))
    })))
}

/// The output line of the failed input line `k`.
fn error_line(k: usize, error: &CliError) -> String {
    json!({"line": k, "error": {"kind": error.kind(), "message": error.to_string().replace('\n', " ")}})
        .to_string()
}

/// The compact document of one input line.
fn run_line(line: &str, source: &str) -> Result<String, CliError> {
    let value = ia_scenario::parse_json(line, source)?;
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
        "simulate" => simulate(&scenario, source)?,
        "fit" => fit(&scenario, source)?,
        _ => gradient_with(
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
