//! The documentation's examples are what the binary prints today.
//!
//! Reference: the binary itself. Every ```` ```console ```` block of the
//! documents below starts with the command, `$ impact-adjoint ARGS` or
//! `$ echo 'TEXT' | impact-adjoint ARGS` (run from the repository's root),
//! and the rest of the block is what it prints: standard output, then
//! standard error, exactly. A stale block is fixed by running its command
//! again and pasting what it prints.

use rstest::rstest;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

const BIN: &str = env!("CARGO_BIN_EXE_impact-adjoint");

/// The repository's root, where the documents' paths start.
fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// A command shown with its output: the document's line of the command,
/// the command (after `$ `) and the lines after it.
#[derive(Debug, PartialEq)]
struct Example {
    line: usize,
    command: String,
    shown: String,
}

/// Every ```` ```console ```` block of `text`.
fn examples(text: &str) -> Vec<Example> {
    let mut found = Vec::new();
    let mut lines = text.lines().enumerate();
    while let Some((_, line)) = lines.next() {
        if line.trim_end() != "```console" {
            continue;
        }
        let (k, first) = lines.next().expect("a console block has a command");
        let command = first
            .strip_prefix("$ ")
            .unwrap_or_else(|| panic!("line {}: a console block starts with `$ `", k + 1));
        let mut shown = String::new();
        for (_, line) in lines.by_ref() {
            if line.trim_end() == "```" {
                break;
            }
            shown.push_str(line);
            shown.push('\n');
        }
        found.push(Example {
            line: k + 1,
            command: command.to_string(),
            shown,
        });
    }
    found
}

/// Runs `command` (`impact-adjoint ARGS`, or `echo 'TEXT' | impact-adjoint
/// ARGS`; the arguments hold no spaces) from the repository's root: its
/// standard output, then its standard error.
fn printed(command: &str) -> String {
    let (input, rest) = match command.strip_prefix("echo '") {
        Some(rest) => {
            let end = rest
                .find("' | ")
                .unwrap_or_else(|| panic!("`{command}`: echo 'TEXT' | impact-adjoint ARGS"));
            (Some(format!("{}\n", &rest[..end])), &rest[end + 4..])
        }
        None => (None, command),
    };
    let args = rest
        .strip_prefix("impact-adjoint ")
        .unwrap_or_else(|| panic!("`{command}` does not run impact-adjoint"));
    let mut child = Command::new(BIN)
        .args(args.split_whitespace())
        .current_dir(root())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run the binary");
    let mut stdin = child.stdin.take().expect("stdin is piped");
    if let Some(input) = input {
        stdin.write_all(input.as_bytes()).expect("write stdin");
    }
    drop(stdin);
    let out = child.wait_with_output().expect("wait");
    String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr)
}

#[rstest]
#[case::scenario("docs/scenario.md")]
#[case::equations("docs/equations.md")]
fn shown_output_is_todays(#[case] document: &str) {
    let text = std::fs::read_to_string(root().join(document))
        .unwrap_or_else(|e| panic!("{document}: {e}"));
    let examples = examples(&text);
    assert!(
        !examples.is_empty(),
        "{document} shows no command with its output (a ```console block)"
    );
    for example in examples {
        let printed = printed(&example.command);
        assert!(
            printed == example.shown,
            "{document}:{}: `{}` shows\n{}\nbut prints today\n{printed}",
            example.line,
            example.command,
            example.shown
        );
    }
}

/// The reader of the blocks, on a document of two (reference: the text by
/// hand).
#[test]
fn console_blocks_are_read_with_their_lines() {
    let text = "intro\n```console\n$ impact-adjoint models --json\n[]\n```\n\
                ```text\n$ not this\n```\n```console\n$ echo '{}' | impact-adjoint simulate -\n\
                error: a\nb\n```\n";
    assert_eq!(
        examples(text),
        [
            Example {
                line: 3,
                command: "impact-adjoint models --json".into(),
                shown: "[]\n".into(),
            },
            Example {
                line: 10,
                command: "echo '{}' | impact-adjoint simulate -".into(),
                shown: "error: a\nb\n".into(),
            },
        ]
    );
}
