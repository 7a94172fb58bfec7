//! Every integration test of `ia-verify` in one test binary (`cargo test -p ia-verify --test
//! integration`; one file's tests: add its module's name as a filter, e.g. `-- stiff::`).
//! One binary, not one per file: with optimised test builds every test binary compiled
//! and linked its own copy of the generic solver code it used, most of CI's test build.
//! The files stay where they were; `autotests = false` in Cargo.toml, so a new file is
//! declared below (xtask's test `every_integration_test_file_is_declared` fails on one
//! that is not).

mod cascades;
mod checkpoints;
mod chosen_columns;
mod closed_form;
mod cuba_lif;
mod disarmed;
mod exact_solver;
mod network_closed_form;
mod partials_check;
mod records;
mod seam;
mod sensitivities;
mod simulation;
mod stiff;
mod studies;
