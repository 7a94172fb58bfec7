//! Every integration test of `ia-equations` in one test binary (`cargo test -p ia-equations --test
//! integration`; one file's tests: add its module's name as a filter, e.g. `-- errors::`).
//! One binary, not one per file: with optimised test builds every test binary compiled
//! and linked its own copy of the generic solver code it used, most of CI's test build.
//! The files stay where they were; `autotests = false` in Cargo.toml, so a new file is
//! declared below (xtask's test `every_integration_test_file_is_declared` fails on one
//! that is not).

mod errors;
mod ready_models;
mod stick_slip;
mod sweep;
