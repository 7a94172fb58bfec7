//! # ia-verify: checks of impact-adjoint, usable from your own tests
//!
//! The crate has two halves, and the second depends on the first only:
//!
//! * [`references`]: what results are compared with.
//!   * [`closed_form`]: exact (symbolic) references with dual-number
//!     Jacobians for the models whose flows have closed-form solutions, one
//!     file per model and a registry by name ([`closed_form::MODELS`]).
//!   * the reference cases of `crates/ia-verify/references/closed_form.json`
//!     ([`references::ReferenceCase`]) and the comparison rule
//!     ([`references::reference_error`]).
//!   * [`finite_difference`]: a central, Richardson-extrapolated
//!     finite-difference Jacobian of any run, with an error estimate per
//!     entry, for models with no closed form ([`finite_difference::fd_jacobian`]).
//!   * [`partials`]: one call that checks hand-written [`ia_core::Flow`],
//!     [`ia_core::Guard`] and [`ia_core::Reset`] partials against finite
//!     differences or dual numbers, and names the worst entry
//!     ([`partials::check_partials`], which lives in [`ia_core::check`], so
//!     that a user's tests need no verification suite), plus points drawn
//!     around a ready model ([`partials::sample_points`]).
//! * [`studies`]: the studies of `cargo xtask verify`, as functions
//!   returning table rows ([`report::Row`]).
//!   * [`checks`]: runs against the closed forms, the reference cases and
//!     finite differences; partials; forward against adjoint.
//!   * [`reference_copy`]: a copy of the reference file against the project's.
//!   * [`convergence`]: sensitivity error against solver tolerance and step.
//!   * [`baselines`] and [`three_ways`]: the naive ways of differentiating
//!     through impacts, against this workspace's.
//!   * [`suite`]: every study in order; [`report`]: rows, table and CSV.
//!
//! Each module is also reachable from the crate root (`ia_verify::closed_form`,
//! `ia_verify::checks`, ...).
//!
//! A user with a contact model of their own checks its partials in one line
//! of a test:
//!
//! ```
//! use ia_verify::partials::{check_partials, sample_points_around};
//! # let model = ia_models::by_name("ball1d").unwrap();
//! # let system = model.system();
//! // `system`: your HybridSystem; points around a typical state and parameters.
//! let points = sample_points_around(1, &[1.0, 0.0], &[9.81, 0.8, 0.0], 2.0, 5, 42);
//! if let Err(mismatch) = check_partials(&system, &points, 1e-6) {
//!     panic!("{mismatch}"); // names the entry: "flow 'flight' d f[v]/d param.g: ..."
//! }
//! ```

#![deny(missing_docs)]

pub mod references;
pub mod studies;

pub use references::{closed_form, finite_difference, partials};
pub use studies::{baselines, checks, convergence, reference_copy, report, suite, three_ways};
