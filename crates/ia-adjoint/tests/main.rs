//! Every integration test of `ia-adjoint` in one test binary (`cargo test -p ia-adjoint --test
//! integration`; one file's tests: add its module's name as a filter, e.g. `-- seeds::`).
//! One binary, not one per file: with optimised test builds every test binary compiled
//! and linked its own copy of the generic solver code it used, most of CI's test build.
//! The files stay where they were; `autotests = false` in Cargo.toml, so a new file is
//! declared below (xtask's test `every_integration_test_file_is_declared` fails on one
//! that is not).

mod custom_model;
mod exact_pairs;
mod lazy_adjoint;
mod loss_gradient_order;
#[path = "../../ia-events/tests/pair_net/mod.rs"]
mod pair_net;
mod seeds;
mod stop_after;
