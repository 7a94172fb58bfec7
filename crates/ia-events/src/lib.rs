//! # ia-events: steppers and the engines of hybrid runs
//!
//! The pluggable solver layer ([`Stepper`]: fixed-step RK4, adaptive
//! Dormand-Prince 5(4) and 8(5,3) ([`RkStepper`]), the implicit ESDIRK
//! methods TR-BDF2, Kvaerno 3(2) and 5(4) for stiff flows ([`implicit_rk`],
//! [`ImplicitStepper`]), and an adapter for the `ode_solvers` crate, chosen
//! per run with a [`SolverChoice`] value) and the engines that run a hybrid
//! system through its events ([`simulate`], [`run`]): the Runge-Kutta
//! engine, which detects, locates and applies events on the steps, and the
//! exact event-driven solver ([`exact`]).
//!
//! The run vocabulary and the one statement of the event rules are in
//! [`vocabulary`]; the two engines run beside each other, each in its own
//! module, and keep their records through one recorder, so a run gives the
//! same records, observations and errors whichever ran it. An
//! [`ExtraState`] carries extra components (forward sensitivities) through
//! the same steps and events, and an [`Observer`] sees every step, event and
//! observation (the adjoint's tape): the two roles of the sensitivity layer
//! (ia-adjoint), each told the system and the parameters ([`RunContext`]).
//!
//! Repeated runs go through a [`Workspace`] ([`simulate_in`], [`run_in`]):
//! the stepper and the buffers are kept, and the records of a trajectory
//! given back ([`Workspace::recycle`]) hold the next run's.
//!
//! See [`Problem`] for a runnable example.

#![deny(missing_docs)]

mod closed_form;
mod dispatch;
mod engine;
pub mod explicit_rk;
mod factor;
pub mod geometry;
pub mod implicit_rk;
pub mod ode_solvers_adapter;
mod pair_convolution;
mod pair_form;
mod problem;
mod recorder;
mod reuse;
mod rough_crossing;
mod sized;
mod solver;
pub mod stepper;
pub mod stiffness;
pub mod tableau;
pub mod vocabulary;
pub mod workspace;
mod zeno;

pub use dispatch::{run, run_in, simulate, simulate_in};
pub use engine::exact;
pub use explicit_rk::{RkStepper, StepControl};
pub use geometry::{EventAt, EventGeometry, GeometryWorkspace};
pub use implicit_rk::{EsdirkTableau, ImplicitStepper};
pub use ode_solvers_adapter::{OdeSolversMethod, OdeSolversStepper};
pub use problem::{
    EventOptions, EventRecording, Problem, Progress, ProgressHook, StopAfter, DEFAULT_MAX_STEPS,
    MAX_TIME_TOLERANCE_FRACTION, PROGRESS_EVERY_STEPS,
};
// The sized float copies, for ia-adjoint's tape and backward pass.
#[doc(hidden)]
pub use sized::{copy_floats, extend_floats};
pub use solver::{SolverChoice, EXACT_HAS_NO_STEPS, MAX_FIXED_STEPS};
pub use stepper::{OdeRhs, StepCounters, StepFailure, Stepper};
pub use tableau::{ButcherTableau, DenseOutput, ErrorEstimate, ExtraStages, DOP853, DOPRI5, RK4};
pub use vocabulary::{
    EventJump, ExtraState, LazyJump, NoExtraState, NoObserver, Observer, RunContext,
};
pub use workspace::{SpareVecs, Workspace};
