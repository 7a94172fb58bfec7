//! What the tests of the `impact-adjoint` binary share: running it, reading
//! its output, and the documented form of its errors.

// Each test file uses a part of these.
#![allow(dead_code)]

use serde_json::Value;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

pub const BIN: &str = env!("CARGO_BIN_EXE_impact-adjoint");

pub fn scenarios_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/scenarios")
}

pub fn scenario(name: &str) -> String {
    scenarios_dir().join(name).to_string_lossy().into_owned()
}

pub fn run(args: &[&str]) -> Output {
    Command::new(BIN)
        .args(args)
        .output()
        .unwrap_or_else(|e| panic!("cannot run {BIN}: {e}"))
}

/// Runs with `stdin` fed to standard input.
pub fn run_stdin(args: &[&str], stdin: &str) -> Output {
    let mut child = Command::new(BIN)
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("cannot run {BIN}: {e}"));
    // A run refused before it reads its input may exit while this is
    // written: the broken pipe is no failure of the test.
    let _ = child
        .stdin
        .take()
        .expect("stdin is piped")
        .write_all(stdin.as_bytes());
    child.wait_with_output().expect("wait")
}

pub fn stdout_json(out: &Output) -> Value {
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(
        out.status.code(),
        Some(0),
        "status {:?}, stderr: {}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("stdout is not JSON ({e}): {text}"))
}

pub fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// Runs with the bytes `stdin` fed to standard input.
pub fn run_stdin_bytes(args: &[&str], stdin: &[u8]) -> Output {
    let mut child = Command::new(BIN)
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("cannot run {BIN}: {e}"));
    // A run refused before it reads its input may exit while this is
    // written: the broken pipe is no failure of the test.
    let _ = child.stdin.take().expect("stdin is piped").write_all(stdin);
    child.wait_with_output().expect("wait")
}

/// Whether `text` holds a run of 25 or more digits: no `f64` printed short needs
/// that many (17 significant digits after at most 7 zeros), so such a run is a number printed long
/// (like `1e308` as 309 digits).
pub fn has_long_number(text: &str) -> bool {
    let mut run = 0;
    text.chars().any(|c| {
        run = if c.is_ascii_digit() { run + 1 } else { 0 };
        run >= 25
    })
}

/// The documented error kinds (crate docs of `ia_cli`, "Errors and exit
/// status").
pub const ERROR_KINDS: [&str; 17] = [
    "malformed_json",
    "invalid_scenario",
    "invalid_equations",
    "unknown_name",
    "invalid_option",
    "io",
    "usage",
    "zeno",
    "grazing",
    "step_size_underflow",
    "newton_failure",
    "step_limit",
    "guard_violated_at_start",
    "event_location",
    "non_finite",
    "unsupported",
    "dimension_mismatch",
];

/// Rust items a CLI user cannot change, which no message may name.
pub const RUST_ITEMS: [&str; 8] = [
    "Method::",
    "SolverChoice",
    "zeno_separation",
    "attached",
    "HybridError",
    "EventOptions",
    "Problem",
    "FinalComponent",
];

/// The documented error form: one line, `error: <kind>: <message>`, with a
/// documented kind, no Rust item, and no long run of digits.
pub fn assert_error_line(err: &str) {
    assert_eq!(err.trim_end().lines().count(), 1, "not one line: {err}");
    let rest = err
        .strip_prefix("error: ")
        .unwrap_or_else(|| panic!("{err}"));
    let (kind, message) = rest.split_once(": ").unwrap_or_else(|| panic!("{err}"));
    assert!(
        ERROR_KINDS.contains(&kind),
        "undocumented kind '{kind}': {err}"
    );
    assert!(!message.trim().is_empty(), "{err}");
    for item in RUST_ITEMS {
        assert!(!message.contains(item), "names the Rust item {item}: {err}");
    }
    assert!(!has_long_number(err), "a number printed long: {err}");
}
