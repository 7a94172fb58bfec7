//! # ia-events: steppers and the hybrid integrator
//!
//! The pluggable solver layer ([`Stepper`]: fixed-step RK4, adaptive
//! Dormand-Prince 5(4), and an adapter for the `ode_solvers` crate, chosen
//! per run with a [`SolverChoice`] value) and the hybrid integrator that
//! detects, locates and applies events ([`simulate`], [`run`]).
//!
//! The integrator's event rules are documented in [`integrator`]; the
//! [`Augmentation`] hook lets the sensitivity layer (ia-adjoint) carry extra
//! quantities through the same steps and events.
//!
//! See [`Problem`] for a runnable example.

#![deny(missing_docs)]

pub mod integrator;
pub mod ode_solvers_adapter;
mod problem;
pub mod stepper;
pub mod tableau;

pub use integrator::{run, simulate, Augmentation, EventJump, NoAugmentation};
pub use ode_solvers_adapter::{OdeSolversMethod, OdeSolversStepper};
pub use problem::{
    EventOptions, Problem, Progress, ProgressHook, SolverChoice, StopAfter, DEFAULT_MAX_STEPS,
    MAX_FIXED_STEPS, MAX_TIME_TOLERANCE_FRACTION, PROGRESS_EVERY_STEPS,
};
pub use stepper::{OdeRhs, RkStepper, StepControl, StepCounters, StepFailure, Stepper};
pub use tableau::{ButcherTableau, DenseOutput, DOPRI5, RK4};
