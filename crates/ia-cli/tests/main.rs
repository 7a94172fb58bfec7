//! Every integration test of `ia-cli` in one test binary (`cargo test -p ia-cli --test
//! integration`; one file's tests: add its module's name as a filter, e.g. `-- golden::`).
//! One binary, not one per file: with optimised test builds every test binary compiled
//! and linked its own copy of the generic solver code it used, most of CI's test build.
//! The files stay where they were; `autotests = false` in Cargo.toml, so a new file is
//! declared below (the last test here fails on a file that is not).

mod bad_input;
mod batch;
mod cli;
mod common;
mod docs;
mod equations;
mod golden;
mod loss;
mod mutations;
mod periodic;
mod properties;

/// The reference is the test folder itself: every `tests/*.rs` must be a module above,
/// or cargo (told `autotests = false`) would never compile it.
#[test]
fn every_test_file_is_a_module_of_this_binary() {
    let folder = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests");
    let declared = include_str!("main.rs");
    for entry in std::fs::read_dir(&folder).expect("the tests folder") {
        let path = entry.expect("a folder entry").path();
        let Some(stem) = path.file_stem().and_then(|s| s.to_str()) else {
            continue;
        };
        if path.extension().is_some_and(|e| e == "rs") && stem != "main" {
            assert!(
                declared.contains(&format!("\nmod {stem};")),
                "tests/{stem}.rs is not declared in tests/main.rs (`mod {stem};`): cargo would not compile it"
            );
        }
    }
}
