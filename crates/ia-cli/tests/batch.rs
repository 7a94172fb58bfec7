//! Tests of `impact-adjoint batch` through the binary. The reference of
//! every output line is the single command run on its own (`simulate` or
//! `gradient ... --compact` on the same scenario): the batch line must be
//! the same text, and a failed line's kind the single command's kind.

use crate::common;

use common::{run_stdin, run_stdin_bytes};

use rstest::rstest;
use serde_json::Value;
use std::process::Output;

fn stdout(out: &Output) -> String {
    assert_eq!(
        out.status.code(),
        Some(0),
        "stderr: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout.clone()).expect("UTF-8 output")
}

/// The single command's kind from its `error: <kind>: <message>` line.
fn single_error_kind(out: &Output) -> String {
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    err.trim()
        .strip_prefix("error: ")
        .and_then(|e| e.split(':').next())
        .unwrap_or_else(|| panic!("not an error line: {err}"))
        .to_string()
}

const BALL: &str = r#"{"model": "ball2d-flat", "t_end": 1.5, "params": {"e": 0.7}}"#;
const LOSS: &str =
    r#"{"model": "ball1d", "t_end": 1, "loss": [{"of": "event.0.time", "weight": 1.0}]}"#;
const BAD_MODEL: &str = r#"{"model": "ball3d", "t_end": 1}"#;

/// The input lines: (the batch line, the single command's arguments and
/// scenario).
fn cases() -> Vec<(String, Vec<&'static str>, &'static str)> {
    let line = |command: &str, extra: &str, scenario: &str| {
        format!(r#"{{"command": "{command}"{extra}, "scenario": {scenario}}}"#)
    };
    vec![
        (line("simulate", "", BALL), vec!["simulate"], BALL),
        (line("gradient", "", BALL), vec!["gradient"], BALL),
        (
            line("gradient", r#", "method": "adjoint""#, LOSS),
            vec!["gradient", "--method", "adjoint"],
            LOSS,
        ),
        (
            line(
                "gradient",
                r#", "method": "adjoint", "jacobian": true"#,
                LOSS,
            ),
            vec!["gradient", "--method", "adjoint", "--jacobian"],
            LOSS,
        ),
        (line("simulate", "", BAD_MODEL), vec!["simulate"], BAD_MODEL),
    ]
}

#[test]
fn each_line_is_the_single_commands_compact_output_in_input_order() {
    let cases = cases();
    // A blank line between the first two lines: skipped, but counted.
    let mut input = String::new();
    for (k, (line, _, _)) in cases.iter().enumerate() {
        input.push_str(line);
        input.push('\n');
        if k == 0 {
            input.push_str("   \n");
        }
    }
    let out = stdout(&run_stdin(&["batch", "-", "--jobs", "2"], &input));
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines.len(), cases.len(), "{out}");
    for (k, ((_, args, scenario), got)) in cases.iter().zip(&lines).enumerate() {
        let mut single_args = args.clone();
        single_args.extend(["-", "--compact"]);
        let single = run_stdin(&single_args, scenario);
        if single.status.code() == Some(0) {
            assert_eq!(*got, stdout(&single).trim_end(), "line {}", k + 1);
        } else {
            let doc: Value = serde_json::from_str(got).unwrap();
            // Line numbers count the blank line: case k sits on line k + 2
            // after the first.
            assert_eq!(doc["line"], k + 2, "{got}");
            assert_eq!(doc["error"]["kind"], single_error_kind(&single), "{got}");
            let message = doc["error"]["message"].as_str().unwrap();
            assert!(
                message.contains("ball3d") && message.contains("ball2d-flat"),
                "{message}"
            );
        }
    }
}

#[test]
fn one_worker_and_two_give_the_same_output() {
    let input: String = (0..6)
        .map(|i| {
            format!(
                "{{\"command\": \"gradient\", \"scenario\": {{\"model\": \"ball1d\", \"t_end\": 1, \"params\": {{\"e\": {}}}}}}}\n",
                0.5 + 0.05 * f64::from(i)
            )
        })
        .collect();
    let one = stdout(&run_stdin(&["batch", "-", "--jobs", "1"], &input));
    let two = stdout(&run_stdin(&["batch", "-", "--jobs", "2"], &input));
    assert_eq!(one.lines().count(), 6);
    assert_eq!(one, two);
}

#[test]
fn bad_lines_are_errors_of_their_own_and_the_others_run() {
    let ok = r#"{"command": "simulate", "scenario": {"model": "ball1d", "t_end": 0.3}}"#;
    let bad = [
        (
            r#"{"command": "simulate", "scenario": "#,
            "malformed_json",
            "line 2",
        ),
        (
            r#"{"scenario": {"model": "ball1d", "t_end": 1}}"#,
            "invalid_scenario",
            "'command'",
        ),
        (
            r#"{"command": "bounce", "scenario": {}}"#,
            "invalid_scenario",
            "simulate, gradient",
        ),
        (
            r#"{"command": "simulate", "method": "adjoint", "scenario": {}}"#,
            "invalid_scenario",
            "gradient command only",
        ),
        (
            r#"{"command": "gradient", "method": "backward", "scenario": {}}"#,
            "invalid_scenario",
            "\"forward\" or \"adjoint\"",
        ),
        (
            r#"{"command": "simulate", "scenario": {}, "speed": 2}"#,
            "invalid_scenario",
            "valid keys: command, scenario",
        ),
        (
            r#"{"command": "simulate", "scenario": [1]}"#,
            "invalid_scenario",
            "scenario object",
        ),
        (
            r#"{"command": "simulate", "scenario": {"model": "ball1d", "t_end": -1}}"#,
            "invalid_option",
            "t_end",
        ),
        (r#"[1, 2]"#, "invalid_scenario", "JSON object"),
    ];
    let mut input = String::new();
    for (line, _, _) in &bad {
        input.push_str(ok);
        input.push('\n');
        input.push_str(line);
        input.push('\n');
    }
    let out = stdout(&run_stdin(&["batch", "-"], &input));
    let lines: Vec<Value> = out
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), 2 * bad.len());
    for (k, (_, kind, needle)) in bad.iter().enumerate() {
        assert_eq!(lines[2 * k]["model"], "ball1d");
        let err = &lines[2 * k + 1];
        assert_eq!(err["line"], 2 * k + 2, "{err}");
        assert_eq!(err["error"]["kind"], *kind, "{err}");
        let message = err["error"]["message"].as_str().unwrap();
        assert!(message.contains(needle), "{needle:?} not in {message}");
    }
}

#[test]
fn an_unreadable_file_is_an_io_error() {
    let out = run_stdin(&["batch", "no/such/file.jsonl"], "");
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.starts_with("error: io: cannot read the JSON Lines file"),
        "{err}"
    );
}

/// `fit` through the binary: data of `h(t) = 1 - g t^2 / 2` (before the
/// impact at `sqrt(2 / g)`, closed form) made with g = 9.81, and of the
/// bounce, made by `simulate` with e = 0.8; the fit from g = 9, e = 0.6
/// recovers both to 1e-6.
#[test]
fn fit_recovers_the_values_the_data_were_made_with() {
    let times = [0.1, 0.2, 0.3, 0.5, 0.7, 0.9];
    let observe: Vec<String> = times.iter().map(|t| t.to_string()).collect();
    let truth = format!(
        r#"{{"model": "ball1d", "t_end": 1, "params": {{"g": 9.81, "e": 0.8}}, "observe": [{}], "solver": {{"method": "dopri5", "rtol": 1e-12, "atol": 1e-12}}}}"#,
        observe.join(", ")
    );
    let run: Value = serde_json::from_str(&stdout(&run_stdin(&["simulate", "-"], &truth))).unwrap();
    let data: Vec<String> = run["observations"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| {
            format!(
                r#"{{"time": {}, "state": {{"h": {}}}}}"#,
                o["time"], o["state"]["h"]
            )
        })
        .collect();
    let scenario = format!(
        r#"{{"model": "ball1d", "t_end": 1, "params": {{"g": 9, "e": 0.6}}, "solver": {{"method": "dopri5", "rtol": 1e-12, "atol": 1e-12}},
            "fit": {{"free": ["param.g", "param.e"], "bounds": {{"param.e": [0, 1]}}, "data": [{}]}}}}"#,
        data.join(", ")
    );
    let out = stdout(&run_stdin(&["fit", "-"], &scenario));
    let doc: Value = serde_json::from_str(&out).unwrap();
    assert!(
        (doc["values"]["param.g"].as_f64().unwrap() - 9.81).abs() < 1e-6,
        "{out}"
    );
    assert!(
        (doc["values"]["param.e"].as_f64().unwrap() - 0.8).abs() < 1e-6,
        "{out}"
    );
    assert_eq!(doc["data"], 6);
    for key in ["loss", "gradient_norm"] {
        assert!(doc[key].as_f64().unwrap() < 1e-6, "{out}");
    }
    assert!(doc["standard_errors"]["param.g"].is_number(), "{out}");
    assert!(
        doc["termination"].is_string() && doc["iterations"].is_number(),
        "{out}"
    );
    // In a batch, the same document on one line.
    let line = format!(
        r#"{{"command": "fit", "scenario": {}}}"#,
        scenario.replace('\n', " ")
    );
    let batch = stdout(&run_stdin(&["batch", "-"], &line));
    let compact = stdout(&run_stdin(&["fit", "-", "--compact"], &scenario));
    assert_eq!(batch, compact);
}

const FIT_DATA: &str = r#"[{"time": 0.1, "state": {"h": 0.95}}, {"time": 0.2, "state": {"h": 0.8}}, {"time": 0.3, "state": {"h": 0.56}}]"#;

/// A bad `fit` key gives its kind and a message naming what is wrong.
#[rstest]
#[case::unknown_free(
    r#"{"free": ["param.k"], "data": DATA}"#,
    "unknown_name",
    "param.g, param.e"
)]
#[case::bounds_of_a_fixed_name(
    r#"{"free": ["param.e"], "bounds": {"param.g": [0, 20]}, "data": DATA}"#,
    "unknown_name",
    "fit.bounds"
)]
#[case::bounds_not_a_pair(
    r#"{"free": ["param.e"], "bounds": {"param.e": [0]}, "data": DATA}"#,
    "invalid_scenario",
    "[low, high]"
)]
#[case::time_after_t_end(
    r#"{"free": ["param.g"], "data": [{"time": 1.5, "state": {"h": 0.9}}]}"#,
    "invalid_option",
    "fit.data[0].time"
)]
#[case::time_zero(
    r#"{"free": ["param.g"], "data": [{"time": 0, "state": {"h": 0.9}}]}"#,
    "invalid_option",
    "(0, t_end]"
)]
#[case::unknown_state(
    r#"{"free": ["param.g"], "data": [{"time": 0.5, "state": {"y": 0.9}}]}"#,
    "unknown_name",
    "valid"
)]
#[case::too_few_data(
    r#"{"free": ["param.g", "param.e"], "data": [{"time": 0.5, "state": {"h": 0.9}}]}"#,
    "invalid_option",
    "invalid fit.data = 1 values: a fit of 2 free variables needs more data values"
)]
#[case::start_outside_bounds(
    r#"{"free": ["param.e"], "bounds": {"param.e": [0.9, 1]}, "data": DATA}"#,
    "invalid_option",
    "invalid fit.bounds.param.e = [0.9, 1]: must contain the starting value 0.8"
)]
#[case::inverted_bounds(
    r#"{"free": ["param.g"], "bounds": {"param.g": [5, 1]}, "data": DATA}"#,
    "invalid_option",
    "invalid fit.bounds.param.g = [5, 1]: the lower bound must be below the upper bound"
)]
#[case::no_free(r#"{"free": [], "data": []}"#, "invalid_scenario", "fit.free")]
#[case::unknown_key(
    r#"{"free": ["param.g"], "speed": 1}"#,
    "invalid_scenario",
    "valid keys: free, bounds, data, max_iterations"
)]
#[case::zero_iterations(
    r#"{"free": ["param.g"], "data": DATA, "max_iterations": 0}"#,
    "invalid_option",
    "invalid fit.max_iterations = 0: must be an integer of at least 1, like 200"
)]
#[case::negative_tolerance(
    r#"{"free": ["param.g"], "data": DATA, "gradient_tolerance": -1}"#,
    "invalid_option",
    "invalid fit.gradient_tolerance = -1: must be at least 0"
)]
#[case::fractional_memory(
    r#"{"free": ["param.g"], "data": DATA, "memory": 2.5}"#,
    "invalid_option",
    "invalid fit.memory = 2.5: must be an integer of at least 1, like 7"
)]
fn bad_fit_keys_are_clear_errors(#[case] fit: &str, #[case] kind: &str, #[case] needle: &str) {
    let scenario = format!(
        r#"{{"model": "ball1d", "t_end": 1, "fit": {}}}"#,
        fit.replace("DATA", FIT_DATA)
    );
    let out = run_stdin(&["fit", "-"], &scenario);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{scenario}: {err}");
    assert!(
        err.starts_with(&format!("error: {kind}: ")),
        "{scenario}: {err}"
    );
    assert!(err.contains(needle), "{needle:?} not in {err}");
}

/// `max_iterations` stops L-BFGS there (argmin's reason says so), where
/// the default runs on to convergence on the same data.
#[test]
fn fit_stops_at_max_iterations() {
    let scenario = |extra: &str| {
        format!(
            r#"{{"model": "ball1d", "t_end": 1, "params": {{"g": 9}}, "fit": {{"free": ["param.g"], "data": {FIT_DATA}{extra}}}}}"#
        )
    };
    let capped: Value = serde_json::from_str(&stdout(&run_stdin(
        &["fit", "-"],
        &scenario(r#", "max_iterations": 1"#),
    )))
    .unwrap();
    assert_eq!(capped["iterations"], 1, "{capped}");
    let reason = capped["termination"].as_str().unwrap().to_lowercase();
    assert!(reason.contains("iterations"), "{reason}");
    let free: Value =
        serde_json::from_str(&stdout(&run_stdin(&["fit", "-"], &scenario("")))).unwrap();
    assert!(free["iterations"].as_u64().unwrap() > 1, "{free}");
}

#[test]
fn fit_without_a_fit_key_says_what_it_needs() {
    let out = run_stdin(&["fit", "-"], r#"{"model": "ball1d", "t_end": 1}"#);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.starts_with("error: invalid_scenario: ") && err.contains("no 'fit'"),
        "{err}"
    );
}

/// More lines than one chunk (the input streams chunk by chunk): the
/// reference of each output line is the single command of the library
/// (`ia_cli::simulate`, compacted), and the errors past the first chunk
/// carry their own line numbers.
#[test]
fn a_batch_longer_than_one_chunk_keeps_order_and_line_numbers() {
    let total = ia_cli::batch::CHUNK_LINES + 100;
    let scenario = |k: usize| {
        format!(
            r#"{{"model": "ball1d", "t_end": 0.05, "initial_state": {{"h": {}}}}}"#,
            1.0 + k as f64 / 1000.0
        )
    };
    let failing = |k: usize| k % 7 == 0;
    let input: String = (1..=total)
        .map(|k| {
            if failing(k) {
                "{\"command\": \"nothing\"}\n".to_string()
            } else {
                format!(
                    "{{\"command\": \"simulate\", \"scenario\": {}}}\n",
                    scenario(k)
                )
            }
        })
        .collect();
    let out = stdout(&run_stdin(&["batch", "-", "--jobs", "2"], &input));
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines.len(), total);
    for (i, line) in lines.iter().enumerate() {
        let k = i + 1;
        if failing(k) {
            let v: Value = serde_json::from_str(line).unwrap();
            assert_eq!(v["line"], k, "{line}");
            assert_eq!(v["error"]["kind"], "invalid_scenario", "{line}");
        } else {
            let single = ia_cli::simulate(&scenario(k), "scenario").unwrap();
            assert_eq!(*line, ia_cli::compact_json(&single), "line {k}");
        }
    }
}

/// A line that is not UTF-8 is an error of its own; the lines around it run.
#[test]
fn a_line_that_is_not_utf8_is_its_own_error() {
    let good: &[u8] =
        b"{\"command\": \"simulate\", \"scenario\": {\"model\": \"ball1d\", \"t_end\": 0.1}}\n";
    let input = [good, b"{\"command\": \xff}\r\n", good].concat();
    let out = stdout(&run_stdin_bytes(&["batch", "-"], &input));
    let lines: Vec<Value> = out
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), 3);
    assert_eq!(lines[0]["model"], "ball1d");
    assert_eq!(lines[1]["line"], 2);
    assert_eq!(lines[1]["error"]["kind"], "malformed_json");
    let message = lines[1]["error"]["message"].as_str().unwrap();
    assert!(
        message.contains("line 2 of standard input is not UTF-8"),
        "{message}"
    );
    assert_eq!(lines[2], lines[0]);
}

/// A line with no end (`/dev/zero`) is not read forever: past the limit
/// the run ends with an `io` error, after the lines before it are written.
#[test]
fn a_line_past_the_limit_ends_the_run_with_an_io_error() {
    let mut input =
        b"{\"command\": \"simulate\", \"scenario\": {\"model\": \"ball1d\", \"t_end\": 0.1}}\n"
            .to_vec();
    input.resize(
        input.len() + ia_cli::batch::MAX_LINE_BYTES as usize + 1,
        b' ',
    );
    let out = run_stdin_bytes(&["batch", "-"], &input);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.starts_with("error: io: line 2 of standard input is longer than 16 MiB"),
        "{err}"
    );
}

/// Tens of thousands of workers exhausted memory while the threads started
/// (a panic in a starting thread, then a hang). Reference: the limit
/// `ia_adjoint::batch::MAX_THREADS`.
#[test]
fn too_many_jobs_is_a_clear_error() {
    let line = r#"{"command": "simulate", "scenario": {"model": "ball1d", "t_end": 0.2}}"#;
    let out = run_stdin(&["batch", "-", "--jobs", "99999"], line);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("--jobs = 99999") && err.contains("at most 256"),
        "{err}"
    );
    let out = run_stdin(&["batch", "-", "--jobs", "256"], line);
    assert!(out.status.success(), "{out:?}");
}
