//! Every number the command line prints stays the same to the bit across
//! refactorings: each example scenario (`examples/scenarios/`,
//! `examples/periodic/`) is run through every command that applies to it,
//! and the standard output, standard error and exit status are compared
//! byte for byte with the transcript kept under `tests/golden/`.
//!
//! The reference is the binary as it was when the transcript was written
//! (`IA_BLESS=1 cargo test -p ia-cli --test integration -- golden::` rewrites them; a
//! deliberate change of output is committed with its new transcripts, and
//! the diff shows what changed).

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::Command;

const BIN: &str = env!("CARGO_BIN_EXE_impact-adjoint");

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// The commands run on one scenario file: every scenario is simulated and
/// differentiated both ways; one with a `section` finds its orbit, one with
/// `fit` is fitted, one whose model is written as equations is printed back.
fn commands_for(text: &str) -> Vec<Vec<&'static str>> {
    let doc: serde_json::Value = serde_json::from_str(text).expect("example scenarios are JSON");
    let mut commands = vec![
        vec!["simulate"],
        vec!["gradient", "--method", "forward"],
        vec!["gradient", "--method", "adjoint"],
    ];
    if doc.get("loss").is_some() {
        commands.push(vec!["gradient", "--method", "adjoint", "--jacobian"]);
    }
    if doc.get("section").is_some() {
        commands.push(vec!["periodic"]);
    }
    if doc.get("fit").is_some() {
        commands.push(vec!["fit"]);
    }
    if doc.get("model").is_some_and(|m| m.is_object()) {
        commands.push(vec!["models", "--equations"]);
    }
    commands
}

fn transcript(args: &[&str], file: &Path) -> String {
    let out = Command::new(BIN)
        .args(args)
        .arg(file)
        .output()
        .unwrap_or_else(|e| panic!("cannot run {BIN}: {e}"));
    let mut text = String::new();
    writeln!(text, "$ impact-adjoint {} FILE", args.join(" ")).unwrap();
    writeln!(text, "status: {:?}", out.status.code()).unwrap();
    writeln!(text, "--- stdout").unwrap();
    text.push_str(&String::from_utf8_lossy(&out.stdout));
    writeln!(text, "--- stderr").unwrap();
    text.push_str(&String::from_utf8_lossy(&out.stderr));
    text
}

fn scenario_files() -> Vec<PathBuf> {
    let mut files = Vec::new();
    for dir in ["examples/scenarios", "examples/periodic"] {
        for entry in std::fs::read_dir(root().join(dir)).expect("example folder") {
            let path = entry.expect("directory entry").path();
            if path.extension().is_some_and(|e| e == "json") {
                files.push(path);
            }
        }
    }
    files.sort();
    files
}

#[test]
fn every_example_scenario_prints_what_it_printed_before() {
    let bless = std::env::var_os("IA_BLESS").is_some();
    let golden_dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/golden");
    let mut differing = Vec::new();
    let mut compared = 0;
    for file in scenario_files() {
        let text = std::fs::read_to_string(&file).expect("readable scenario");
        let folder = file
            .parent()
            .unwrap()
            .file_name()
            .unwrap()
            .to_string_lossy();
        let stem = file.file_stem().unwrap().to_string_lossy();
        let mut all = String::new();
        for args in commands_for(&text) {
            all.push_str(&transcript(&args, &file));
        }
        let golden = golden_dir.join(format!("{folder}__{stem}.txt"));
        if bless {
            std::fs::create_dir_all(&golden_dir).unwrap();
            std::fs::write(&golden, &all).unwrap();
            continue;
        }
        let expected = std::fs::read_to_string(&golden).unwrap_or_else(|_| {
            panic!(
                "no transcript {}: write it with IA_BLESS=1",
                golden.display()
            )
        });
        compared += 1;
        if expected != all {
            differing.push(format!("{folder}/{stem}.json"));
        }
    }
    assert!(
        differing.is_empty(),
        "the output changed for {differing:?} (diff against tests/golden/; \
         IA_BLESS=1 rewrites the transcripts when a change is deliberate)"
    );
    assert!(
        bless || compared >= 20,
        "only {compared} scenarios compared"
    );
}

/// The models' table and JSON descriptions are output too.
#[test]
fn the_model_listing_prints_what_it_printed_before() {
    let golden = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/golden/models.txt");
    let mut all = String::new();
    for args in [&["models"][..], &["models", "--json"][..]] {
        let out = Command::new(BIN).args(args).output().unwrap();
        writeln!(all, "$ impact-adjoint {}", args.join(" ")).unwrap();
        writeln!(all, "status: {:?}", out.status.code()).unwrap();
        all.push_str(&String::from_utf8_lossy(&out.stdout));
        all.push_str(&String::from_utf8_lossy(&out.stderr));
    }
    if std::env::var_os("IA_BLESS").is_some() {
        std::fs::create_dir_all(golden.parent().unwrap()).unwrap();
        std::fs::write(&golden, &all).unwrap();
        return;
    }
    let expected = std::fs::read_to_string(&golden).expect("tests/golden/models.txt");
    assert!(expected == all, "`models` output changed");
}
