//! The references: what the library's results are compared with. Nothing
//! here runs a study or makes a table row; the studies
//! ([`crate::studies`]) use these.
//!
//! * [`closed_form`]: exact (symbolic) references with dual-number Jacobians
//!   for the models whose flows have closed-form solutions, one file per
//!   model and a registry ([`closed_form::MODELS`]) by name.
//! * the reference cases of `crates/ia-verify/references/closed_form.json`
//!   computed outside this project ([`ReferenceCase`], [`load_references`],
//!   [`reference_case`], [`ReferenceRun`]) and the comparison rule
//!   ([`reference_error`]).
//! * [`finite_difference`]: a central, Richardson-extrapolated
//!   finite-difference Jacobian of any run, with an error estimate per entry,
//!   for models with no closed form.
//! * [`cuba_lif`]: the high-precision (mpmath) references of the `cuba-lif`
//!   spiking network, `crates/ia-verify/references/cuba_lif.json`.
//! * [`partials`]: hand-written partials against finite differences or dual
//!   numbers.
//! * [`stiff`]: the stiff test problems of `references/stiff/` (the heated
//!   rod written for any number of cells).

mod cases;
pub mod closed_form;
pub mod cuba_lif;
pub mod finite_difference;
pub mod partials;
pub mod stiff;

pub use cases::{
    default_problem, load_references, parse_cases, reference_case, reference_error,
    shared_copy_path, ReferenceCase, ReferenceRun, REFERENCE_JSON,
};
