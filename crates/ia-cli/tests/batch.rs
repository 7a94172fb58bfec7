//! Tests of `impact-adjoint batch` through the binary. The reference of
//! every output line is the single command run on its own (`simulate` or
//! `gradient ... --compact` on the same scenario): the batch line must be
//! the same text, and a failed line's kind the single command's kind.

use serde_json::Value;
use std::io::Write;
use std::process::{Command, Output, Stdio};

const BIN: &str = env!("CARGO_BIN_EXE_impact-adjoint");

fn run_stdin(args: &[&str], stdin: &str) -> Output {
    let mut child = Command::new(BIN)
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("cannot run {BIN}: {e}"));
    child
        .stdin
        .take()
        .expect("stdin is piped")
        .write_all(stdin.as_bytes())
        .expect("write stdin");
    child.wait_with_output().expect("wait")
}

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
const LOSS: &str = r#"{"model": "ball1d", "t_end": 1, "loss": [{"of": "event.0.time", "weight": 1.0}]}"#;
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
            line("gradient", r#", "method": "adjoint", "jacobian": true"#, LOSS),
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
            assert!(message.contains("ball3d") && message.contains("ball2d-flat"), "{message}");
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
        (r#"{"command": "simulate", "scenario": "#, "malformed_json", "line 2"),
        (r#"{"scenario": {"model": "ball1d", "t_end": 1}}"#, "invalid_scenario", "'command'"),
        (r#"{"command": "bounce", "scenario": {}}"#, "invalid_scenario", "simulate, gradient"),
        (r#"{"command": "simulate", "method": "adjoint", "scenario": {}}"#, "invalid_scenario", "gradient command only"),
        (r#"{"command": "gradient", "method": "backward", "scenario": {}}"#, "invalid_scenario", "\"forward\" or \"adjoint\""),
        (r#"{"command": "simulate", "scenario": {}, "speed": 2}"#, "invalid_scenario", "valid keys: command, scenario"),
        (r#"{"command": "simulate", "scenario": [1]}"#, "invalid_scenario", "scenario object"),
        (r#"{"command": "simulate", "scenario": {"model": "ball1d", "t_end": -1}}"#, "invalid_option", "t_end"),
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
    let lines: Vec<Value> = out.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
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
    assert!(err.starts_with("error: io: cannot read the JSON Lines file"), "{err}");
}
