//! # ia-adjoint: sensitivities through events
//!
//! Exact derivatives of a hybrid trajectory with respect to the initial state
//! and every parameter (parameters of the flow, the guards and the resets):
//!
//! * [`jacobian`]: Jacobians of the final state and of the states at
//!   observation times, and the gradient of every event time, by forward
//!   sensitivities ([`Method::Forward`]) or by one adjoint pass per output
//!   ([`Method::Adjoint`]);
//! * [`gradient`]: the gradient of one scalar loss that reads the final
//!   state, observed states and event times, by the reverse-mode adjoint;
//! * [`saltation`]: the saltation matrices that carry sensitivities across
//!   events.
//!
//! Each has a form that runs in a kept [`Workspace`] ([`jacobian_in`],
//! [`jacobian_wrt_in`], [`gradient_in`]): called again and again (a fit, a
//! Newton iteration, an ensemble), it reuses the stepper, the tape and every
//! buffer, and builds its result in the vectors of results given back, with
//! the same numbers as the one-shot call.
//!
//! The mathematics is in `docs/method.md` and the module docs of
//! [`saltation`], [`mod@forward`] and [`adjoint`].
//!
//! ## Layout
//!
//! This file is the crate's face: documentation and re-exports. Each item
//! lives in one module, and no two modules import each other:
//!
//! * the results, [`Sensitivities`], [`Gradient`] and [`Method`];
//! * [`loss`]: the [`Loss`] trait, its [`LossSeeds`], [`FinalComponent`]
//!   and the [`LossTerms`] of named [`Term`]s;
//! * the Jacobian entry points ([`jacobian`], [`jacobian_wrt`] and their
//!   `_in` forms), by forward sensitivities ([`mod@forward`]) or one reverse
//!   pass per output row ([`adjoint`]);
//! * the gradient entry points ([`gradient`], [`gradient_with`],
//!   [`gradient_in`]), by one reverse pass over the forward pass's tape;
//! * [`saltation`], [`workspace`] and [`batch`] (many problems on a pool).
//!
//! A user needs this crate only: [`prelude`] brings the builder, the traits
//! of `ia-core`, [`Problem`] and [`SolverChoice`] of `ia-events`, and the
//! functions and results of this crate; [`nalgebra`] is re-exported for the
//! matrices of the results and of the `*Partials`. Results are read by name
//! with [`Sensitivities::final_derivative`],
//! [`Sensitivities::event_time_derivative`] and [`Gradient::derivative`].
//!
//! ```
//! use ia_adjoint::prelude::*;
//!
//! struct Fall;
//! impl FlowFn for Fall {
//!     fn rate<S: Scalar>(&self, _t: S, x: &[S], p: &[S], d: &mut [S]) {
//!         d[0] = x[1];
//!         d[1] = -p[0];
//!     }
//! }
//! struct Floor;
//! impl GuardFn for Floor {
//!     fn direction(&self) -> Direction { Direction::Falling }
//!     fn value<S: Scalar>(&self, _t: S, x: &[S], _p: &[S]) -> S { x[0] }
//! }
//! struct Bounce;
//! impl ResetFn for Bounce {
//!     fn apply<S: Scalar>(&self, _t: S, x: &[S], p: &[S], a: &mut [S]) {
//!         a[0] = x[0];
//!         a[1] = -p[1] * x[1];
//!     }
//! }
//! let ball = HybridSystem::builder(&["h", "v"], &["g", "e"])
//!     .mode("flight", Autodiff(Fall))
//!     .transition("bounce", FromMode("flight"), ToMode("flight"), Autodiff(Floor), Autodiff(Bounce))
//!     .build()
//!     .unwrap();
//! let problem = Problem::new(&ball, vec![1.0, 0.0], vec![9.81, 0.8], 1.0)
//!     .with_solver(SolverChoice::dopri5(1e-12));
//!
//! // The first impact time t1 = sqrt(2 h0 / g): dt1/dh0 = 1 / (g t1).
//! let sens = jacobian(&problem, Method::Forward).unwrap();
//! let t1 = (2.0f64 / 9.81).sqrt();
//! let dt1_dh0 = sens.event_time_derivative(0, "initial.h").unwrap();
//! assert!((dt1_dh0 - 1.0 / (9.81 * t1)).abs() < 1e-9);
//!
//! // The same derivative by the adjoint, of the loss L = t1.
//! let first_impact = |tr: &Trajectory, seeds: &mut LossSeeds| {
//!     seeds.event_times[0] = 1.0;
//!     tr.events[0].time
//! };
//! let grad = gradient(&problem, &first_impact).unwrap();
//! assert!((grad.derivative("initial.h").unwrap() - 1.0 / (9.81 * t1)).abs() < 1e-9);
//! ```

#![deny(missing_docs)]

pub mod adjoint;
pub mod batch;
pub mod forward;
mod gradient;
mod implicit;
mod jacobian;
pub mod loss;
pub mod probe;
mod results;
pub mod saltation;
mod tape;
pub mod workspace;

#[cfg(test)]
mod fixtures;
#[cfg(test)]
mod tests;

pub use batch::{gradient_batch, gradient_batch_each, jacobian_batch, simulate_batch, Batch};
pub use gradient::{gradient, gradient_in, gradient_of_taped, gradient_with, record_in, TapedRun};
#[cfg(any(test, feature = "testing"))]
pub use gradient::{gradient_forward, run_on_taped_steps};
#[cfg(any(test, feature = "testing"))]
pub use jacobian::jacobian_without_saltation;
pub use jacobian::{
    final_state_rate, jacobian, jacobian_along, jacobian_along_in, jacobian_in, jacobian_wrt,
    jacobian_wrt_in,
};
pub use loss::{FinalComponent, Loss, LossSeeds, LossTerms, Term, TERM_FORMS};
pub use probe::{AUTOMATIC_PROBE_INPUTS, IMPLICIT_PROBES, PROBE_SAFETY, UNIT_PROBE_INPUTS};
pub use results::{Gradient, Method, Sensitivities};
pub use saltation::{event_saltations, Saltation, SaltationWorkspace};
pub use tape::{AdjointOptions, AUTOMATIC_CHECKPOINT_FLOATS};
pub use workspace::Workspace;

/// The crate of the system vocabulary, re-exported: a user depending on
/// `ia-adjoint` alone reaches every item of `ia-core` as `ia_adjoint::ia_core`.
pub use ia_core;
/// The crate of the integrator, re-exported (see [`ia_adjoint::ia_core`](ia_core)).
pub use ia_events;
pub use ia_events::{EventOptions, Problem, SolverChoice};
/// The linear algebra of [`Sensitivities`] and of the `*Partials` of
/// `ia-core`, at the version this crate uses.
pub use nalgebra;

/// Everything a custom model and its sensitivities need, in one import.
///
/// ```
/// use ia_adjoint::prelude::*;
///
/// struct Decay;
/// impl FlowFn for Decay {
///     fn rate<S: Scalar>(&self, _t: S, x: &[S], p: &[S], d: &mut [S]) {
///         d[0] = -p[0] * x[0];
///     }
/// }
/// struct Threshold;
/// impl GuardFn for Threshold {
///     fn direction(&self) -> Direction { Direction::Falling }
///     fn value<S: Scalar>(&self, _t: S, x: &[S], _p: &[S]) -> S { x[0] - 0.5 }
/// }
/// let system = HybridSystem::builder(&["x"], &["k"])
///     .mode("decay", Autodiff(Decay))
///     .terminal_transition("half", FromMode("decay"), ToMode("decay"), Autodiff(Threshold), Identity)
///     .build()
///     .unwrap();
/// let problem = Problem::new(&system, vec![1.0], vec![2.0], 10.0)
///     .with_solver(SolverChoice::dopri5(1e-12));
/// let sens = jacobian(&problem, Method::Forward).unwrap();
/// // x = exp(-k t) reaches 1/2 at t* = ln 2 / k: dt*/dk = -ln 2 / k^2.
/// let dt_dk = sens.event_time_derivative(0, "param.k").unwrap();
/// assert!((dt_dk + 2f64.ln() / 4.0).abs() < 1e-9);
/// ```
pub mod prelude {
    pub use crate::{
        gradient, jacobian, FinalComponent, Gradient, Loss, LossSeeds, LossTerms, Method,
        Sensitivities, Term,
    };
    pub use ia_core::{
        Autodiff, Direction, Flow, FlowFn, FlowPartials, FromMode, Guard, GuardFn, GuardPartials,
        HybridError, HybridSystem, HybridSystemBuilder, Identity, Reset, ResetFn, ResetPartials,
        Scalar, ToMode, Trajectory,
    };
    pub use ia_events::{EventOptions, Problem, SolverChoice};
}
