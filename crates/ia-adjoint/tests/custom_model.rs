//! The README's advice, that a custom model needs only `ia-core` and
//! `ia-adjoint`, checked by building and running `examples/custom-model`: a
//! crate outside the workspace with those two dependencies only. The
//! program compares its sensitivities, read by name, with closed forms and
//! forward with adjoint, and exits non-zero on a mismatch; the reference is
//! therefore the closed forms written in `examples/custom-model/src/main.rs`.
//!
//! The build is offline and `--locked` against the example's own
//! `Cargo.lock`, whose versions must be those of the workspace's lockfile
//! (checked first). It uses its own target folder, `custom-model/` inside
//! the workspace's target folder: the first run compiles the dependencies
//! once (about a minute on two cores), later runs only what changed.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

fn repository() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// `name -> versions` of the registry packages of a `Cargo.lock`.
fn locked_versions(lockfile: &Path) -> BTreeMap<String, Vec<String>> {
    let text = std::fs::read_to_string(lockfile)
        .unwrap_or_else(|e| panic!("cannot read {}: {e}", lockfile.display()));
    let mut versions: BTreeMap<String, Vec<String>> = BTreeMap::new();
    let mut name = None;
    for line in text.lines() {
        if let Some(n) = line.strip_prefix("name = ") {
            name = Some(n.trim_matches('"').to_string());
        } else if let Some(v) = line.strip_prefix("version = ") {
            if let Some(n) = name.take() {
                versions
                    .entry(n)
                    .or_default()
                    .push(v.trim_matches('"').to_string());
            }
        }
    }
    versions
}

#[test]
fn example_lockfile_uses_the_workspace_versions() {
    let workspace = locked_versions(&repository().join("Cargo.lock"));
    let example = locked_versions(&repository().join("examples/custom-model/Cargo.lock"));
    assert!(
        example.contains_key("nalgebra") && example.contains_key("ia-adjoint"),
        "the example's lockfile lacks its dependencies: {example:?}"
    );
    for (name, versions) in &example {
        if name == "custom-model" {
            continue;
        }
        for v in versions {
            assert!(
                workspace.get(name).is_some_and(|w| w.contains(v)),
                "examples/custom-model/Cargo.lock has {name} {v}, the workspace's Cargo.lock {:?}; \
                 copy Cargo.lock to examples/custom-model/ and run \
                 `cargo build --offline --manifest-path examples/custom-model/Cargo.toml` to prune it",
                workspace.get(name)
            );
        }
    }
}

/// The non-empty lines of `text`, trimmed.
fn code_lines(text: &str) -> Vec<&str> {
    text.lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect()
}

/// The reference is the README itself: its "A bouncing ball of your own"
/// block must be the code that `examples/custom-model/src/readme.rs` compiles
/// (the function wrapper aside), so that the README shows code that builds.
#[test]
fn readme_example_is_the_code_the_example_crate_compiles() {
    let readme = std::fs::read_to_string(repository().join("README.md")).unwrap();
    let heading = "## A bouncing ball of your own\n\n```rust\n";
    let start = readme.find(heading).expect("the README has the section") + heading.len();
    let block = &readme[start..start + readme[start..].find("```").unwrap()];
    let source =
        std::fs::read_to_string(repository().join("examples/custom-model/src/readme.rs")).unwrap();
    let begin = source.find("// README begin").unwrap() + "// README begin".len();
    let end = source.find("// README end").unwrap();
    let wrapper = [
        "/// Runs the README's program.",
        "#[rustfmt::skip]",
        "pub fn bouncing_ball() -> Result<(), HybridError> {",
        "Ok(())",
        "}",
    ];
    let compiled: Vec<&str> = code_lines(&source[begin..end])
        .into_iter()
        .filter(|l| !wrapper.contains(l))
        .collect();
    assert_eq!(
        code_lines(block),
        compiled,
        "README.md's \"A bouncing ball of your own\" and examples/custom-model/src/readme.rs differ"
    );
}

#[test]
fn custom_model_outside_the_workspace_builds_and_runs() {
    // This test's executable is `<target>/<profile>/deps/<name>`.
    let exe = std::env::current_exe().expect("the test executable has a path");
    let target = exe
        .ancestors()
        .nth(3)
        .expect("the test executable lies in <target>/<profile>/deps");
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_string());
    let started = std::time::Instant::now();
    let output = Command::new(cargo)
        .args(["run", "--offline", "--locked", "--quiet", "--manifest-path"])
        .arg(repository().join("examples/custom-model/Cargo.toml"))
        .env("CARGO_TARGET_DIR", target.join("custom-model"))
        .output()
        .expect("cargo starts");
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    eprintln!(
        "examples/custom-model built and ran in {:.1} s",
        started.elapsed().as_secs_f64()
    );
    assert!(
        output.status.success(),
        "examples/custom-model failed ({}):\n{stdout}\n{stderr}\n(if cargo asks to update the \
         lock file: copy Cargo.lock to examples/custom-model/ and run `cargo build --offline \
         --manifest-path examples/custom-model/Cargo.toml` to prune it)",
        output.status
    );
    assert!(
        stdout.contains("dh(T)/de = "),
        "the README's program did not run:\n{stdout}"
    );
    assert!(
        stdout.contains("custom model: all checks passed"),
        "the example did not reach its end:\n{stdout}"
    );
}
