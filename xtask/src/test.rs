//! `cargo xtask test`: every test of the project, Rust then Python.
//!
//! 1. `cargo test --workspace` (the Rust crates; the Python extension
//!    `crates/ia-py` is outside the workspace);
//! 2. with `--python` only, `cargo build -p ia-cli --profile test`: the
//!    command line, whose messages the Python exceptions must repeat (the
//!    tests run it); step 1 has built that binary already for ia-cli's own
//!    integration tests (a second build without the dev-dependencies unifies
//!    other features and compiled the command line again: minutes of CI);
//! 3. a virtual environment `py-venv` under the target directory with
//!    maturin, numpy, jax, dask, optax and pytest from the package index (made
//!    once, the packages installed when missing; delete it to refresh);
//! 4. the wheel (`pyproject.toml`: the crate `crates/ia-py` and the Python
//!    half `python/impact_adjoint`) built by `maturin build --release` and
//!    installed into it;
//! 5. `pytest python/tests`.
//!
//! `--python` skips step 1. Each command is echoed before it runs; the
//! first failure stops the task with its exit status.

use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};

/// The packages the Python tests need, from the package index.
const PYTHON_PACKAGES: &[&str] = &[
    "maturin>=1.9,<2",
    "numpy",
    "jax",
    "dask[distributed]",
    "optax",
    "pytest",
];

/// Runs the task; `args` are the task's arguments.
pub fn run(root: &Path, target: &Path, args: &[String]) -> ExitCode {
    let mut python_only = false;
    for a in args {
        match a.as_str() {
            "--python" => python_only = true,
            other => {
                eprintln!("error: unknown argument '{other}' for test (valid: --python)");
                return ExitCode::from(2);
            }
        }
    }
    match steps(root, target, python_only) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::FAILURE
        }
    }
}

fn steps(root: &Path, target: &Path, python_only: bool) -> Result<(), String> {
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    if python_only {
        run_in(
            root,
            Command::new(&cargo).args(["build", "-p", "ia-cli", "--profile", "test"]),
        )?;
    } else {
        run_in(root, Command::new(&cargo).args(["test", "--workspace"]))?;
    }
    let cli = cli_binary(target);
    if !cli.is_file() {
        return Err(format!(
            "the command line's binary is not at {} after the build",
            cli.display()
        ));
    }

    let venv = target.join("py-venv");
    let bin = venv.join("bin");
    if !bin.join("python").is_file() {
        let python = std::env::var("PYTHON").unwrap_or_else(|_| "python3".into());
        run_in(root, Command::new(python).arg("-m").arg("venv").arg(&venv))?;
    }
    // Quick when every package is there already; picks up a new one.
    run_in(
        root,
        Command::new(bin.join("pip"))
            .args(["install", "--quiet", "--disable-pip-version-check"])
            .args(PYTHON_PACKAGES),
    )?;

    let wheels = target.join("wheels");
    let _ = std::fs::remove_dir_all(&wheels);
    run_in(
        root,
        Command::new(bin.join("maturin"))
            .args(["build", "--release", "--out"])
            .arg(&wheels)
            .env("CARGO_TARGET_DIR", target),
    )?;
    let wheel = std::fs::read_dir(&wheels)
        .map_err(|e| format!("no wheel in {}: {e}", wheels.display()))?
        .filter_map(|entry| entry.ok().map(|e| e.path()))
        .find(|p| p.extension().is_some_and(|x| x == "whl"))
        .ok_or_else(|| format!("maturin left no wheel in {}", wheels.display()))?;
    run_in(
        root,
        Command::new(bin.join("pip"))
            .args(["install", "--quiet", "--force-reinstall", "--no-deps"])
            .arg(&wheel),
    )?;
    run_in(
        root,
        Command::new(bin.join("python"))
            .args(["-m", "pytest", "python/tests", "--durations=10"])
            .env("IMPACT_ADJOINT_BIN", &cli)
            .env("CARGO_TARGET_DIR", target),
    )
}

/// The command line's binary as `cargo test --workspace` (for ia-cli's
/// integration tests) or `cargo build -p ia-cli --profile test` leaves it
/// (the test profile's output directory is `debug`, as the dev profile's).
fn cli_binary(target: &Path) -> PathBuf {
    target.join("debug").join("impact-adjoint")
}

/// Runs `command` in `dir`, echoing it; an error unless it exits 0.
fn run_in(dir: &Path, command: &mut Command) -> Result<(), String> {
    command.current_dir(dir);
    let shown = format!(
        "{} {}",
        command.get_program().to_string_lossy(),
        command
            .get_args()
            .map(|a| a.to_string_lossy())
            .collect::<Vec<_>>()
            .join(" ")
    );
    eprintln!("> {shown}");
    let status = command
        .status()
        .map_err(|e| format!("could not start `{shown}`: {e}"))?;
    if status.success() {
        Ok(())
    } else {
        Err(format!("`{shown}` failed ({status})"))
    }
}

#[cfg(test)]
mod tests {
    use std::collections::{BTreeMap, BTreeSet};
    use std::path::Path;
    use std::process::Command;

    /// `package version -> feature lists` of a `cargo tree` graph (a
    /// package built for the host and for the target may have two lists).
    fn features_of(args: &[&str]) -> BTreeMap<String, BTreeSet<String>> {
        let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
        let output = Command::new(cargo)
            .current_dir(Path::new(env!("CARGO_MANIFEST_DIR")).join(".."))
            .args(["tree", "--locked", "-e", "normal,build", "--prefix", "none"])
            .args(["--no-dedupe", "--format", "{p}|{f}"])
            .args(args)
            .output()
            .expect("cargo tree starts");
        assert!(
            output.status.success(),
            "cargo tree {args:?} failed: {}",
            String::from_utf8_lossy(&output.stderr)
        );
        let mut features: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
        for line in String::from_utf8_lossy(&output.stdout).lines() {
            let Some((package, list)) = line.split_once('|') else {
                continue;
            };
            // `name version (path)` or `name version (proc-macro)`: the
            // name and the version identify the package.
            let package = package.split(" (").next().unwrap_or(package).trim();
            features
                .entry(package.to_string())
                .or_default()
                .insert(list.trim_end_matches(" (*)").trim().to_string());
        }
        features
    }

    /// The `[profile.release.package.*]` sections of a manifest, each with
    /// its settings, comments and blank lines left out.
    fn release_overrides(manifest: &str) -> Vec<String> {
        let text = std::fs::read_to_string(
            Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("..")
                .join(manifest),
        )
        .unwrap_or_else(|e| panic!("cannot read {manifest}: {e}"));
        let mut sections = Vec::new();
        let mut inside = false;
        for line in text.lines().map(str::trim) {
            if line.starts_with('[') {
                inside = line.starts_with("[profile.release.package.");
                if inside {
                    sections.push(line.to_string());
                }
            } else if inside && !line.is_empty() && !line.starts_with('#') {
                if let Some(section) = sections.last_mut() {
                    section.push(' ');
                    section.push_str(line);
                }
            }
        }
        sections.sort();
        sections
    }

    /// `cargo xtask test` compiles xtask's graph in the release profile,
    /// then maturin compiles the Python extension's (crates/ia-py) in the
    /// same profile and target folder. A package is compiled once for both
    /// only if it has the same features in both graphs (its build's hash
    /// includes its features and its dependencies' hashes), so each manifest
    /// turns on the features the other graph needs (xtask/Cargo.toml,
    /// crates/ia-py/Cargo.toml). The reference is `cargo tree`'s features of
    /// every package the two graphs share.
    #[test]
    fn the_wheel_shares_xtasks_release_build() {
        let xtask = features_of(&["--package", "xtask"]);
        let wheel = features_of(&["--manifest-path", "crates/ia-py/Cargo.toml"]);
        // The workspace's overrides of packages the wheel also builds (the
        // figures' packages are in xtask's graph only).
        let in_wheel = |section: &String| {
            let name = section
                .trim_start_matches("[profile.release.package.")
                .split(']')
                .next()
                .unwrap_or_default();
            wheel.keys().any(|p| p.split(' ').next() == Some(name))
        };
        let workspace: Vec<String> = release_overrides("Cargo.toml")
            .into_iter()
            .filter(in_wheel)
            .collect();
        assert!(
            !workspace.is_empty(),
            "the workspace's Cargo.toml has no [profile.release.package.*] section of a package the wheel builds"
        );
        assert_eq!(
            workspace,
            release_overrides("crates/ia-py/Cargo.toml"),
            "crates/ia-py/Cargo.toml must repeat the workspace's [profile.release.package.*] \
             sections of the packages it builds (a package built with other settings is compiled \
             again for the wheel)"
        );
        let shared: Vec<&String> = xtask.keys().filter(|p| wheel.contains_key(*p)).collect();
        assert!(
            shared.len() >= 50,
            "only {} packages shared: is nalgebra still in both graphs?",
            shared.len()
        );
        let differing: Vec<String> = shared
            .iter()
            .filter(|p| xtask[**p] != wheel[**p])
            .map(|p| format!("{p}: xtask {:?}, ia-py {:?}", xtask[*p], wheel[*p]))
            .collect();
        assert!(
            differing.is_empty(),
            "packages with other features in xtask's graph than in the wheel's (the wheel \
             would compile them and everything above them again; turn the missing features \
             on in xtask/Cargo.toml or crates/ia-py/Cargo.toml):\n{}",
            differing.join("\n")
        );
    }

    /// A crate whose manifest says `autotests = false` builds its
    /// integration tests as one binary, `tests/main.rs`, and cargo compiles
    /// only the files it declares. The reference is each crate's `tests`
    /// folder: every `tests/*.rs` there must be a `mod` of its `main.rs`.
    #[test]
    fn every_integration_test_file_is_declared() {
        let crates = Path::new(env!("CARGO_MANIFEST_DIR")).join("../crates");
        let mut checked = 0;
        for entry in std::fs::read_dir(&crates).expect("the crates folder") {
            let folder = entry.expect("a folder entry").path();
            let manifest = std::fs::read_to_string(folder.join("Cargo.toml")).unwrap_or_default();
            if !manifest.contains("\nautotests = false") {
                continue;
            }
            let tests = folder.join("tests");
            let main = std::fs::read_to_string(tests.join("main.rs")).unwrap_or_else(|e| {
                panic!(
                    "{} says autotests = false but has no tests/main.rs: {e}",
                    folder.display()
                )
            });
            for file in std::fs::read_dir(&tests).expect("the tests folder") {
                let path = file.expect("a folder entry").path();
                let Some(stem) = path.file_stem().and_then(|s| s.to_str()) else {
                    continue;
                };
                if path.extension().is_some_and(|e| e == "rs") && stem != "main" {
                    assert!(
                        main.contains(&format!("\nmod {stem};")),
                        "{} is not declared in its tests/main.rs (`mod {stem};`): cargo would \
                         not compile it",
                        path.display()
                    );
                }
            }
            checked += 1;
        }
        assert!(
            checked >= 6,
            "only {checked} crates with one integration-test binary found"
        );
    }
}
