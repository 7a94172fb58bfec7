//! The studies of `cargo xtask verify`: each compares the library's results
//! with the references ([`crate::references`]) and returns table rows
//! ([`report::Row`]). The references never depend on the studies.
//!
//! * [`checks`]: simulations and Jacobians against the closed forms, the
//!   reference cases and finite differences; partials; forward against
//!   adjoint.
//! * [`reference_copy`]: a copy of the reference file beside the repository
//!   against the project's.
//! * [`convergence`]: sensitivity error against solver tolerance and step.
//! * [`baselines`] and [`three_ways`]: the naive ways of differentiating
//!   through impacts, against this workspace's.
//! * [`spiking`]: the `cuba-lif` spiking network against its
//!   high-precision reference.
//! * [`suite`]: every study in order, as one call; [`report`]: the rows,
//!   their table and CSV.

pub mod baselines;
pub mod checks;
pub mod convergence;
pub mod reference_copy;
pub mod report;
pub mod spiking;
pub mod suite;
pub mod three_ways;
