//! # ia-core: the vocabulary of impact-adjoint
//!
//! A hybrid system has modes; in each mode the state flows by `x' = f(t, x, p)`.
//! A transition fires when its guard `g(t, x, p)` crosses zero in its declared
//! direction; the state then jumps by its reset `x+ = r(t, x-, p)` and the
//! target mode takes over.
//!
//! This crate holds what a user implements and what the other crates pass around:
//!
//! * [`Flow`], [`Guard`] and [`Reset`]: values and partial derivatives, written
//!   by hand for speed, or obtained exactly from one generic implementation of
//!   the value through [`Autodiff`] (dual numbers) and [`FlowFn`], [`GuardFn`],
//!   [`ResetFn`].
//! * [`HybridSystem`]: modes and transitions, built with [`HybridSystem::builder`];
//!   states, parameters, modes and transitions found by name
//!   ([`HybridSystem::state_index`], [`HybridSystem::param_index`], ...,
//!   all through [`name_index`]), and the sensitivity inputs [`Wrt`] with
//!   their labels `initial.<state>` and `param.<name>`.
//! * [`HybridError`]: every failure the library reports, with the trajectory up to
//!   the failure where one exists.
//! * [`Trajectory`] and its parts: the serde records of a run.
//! * [`check`]: a check of hand-written partials against finite differences
//!   or dual numbers, for a user's tests.
//!
//! ```
//! use ia_core::{Autodiff, Direction, FlowFn, FromMode, GuardFn, HybridSystem, ResetFn, Scalar, ToMode};
//!
//! // A ball falling under gravity g, bouncing with restitution e.
//! struct Fall;
//! impl FlowFn for Fall {
//!     fn rate<S: Scalar>(&self, _t: S, x: &[S], p: &[S], dxdt: &mut [S]) {
//!         dxdt[0] = x[1];
//!         dxdt[1] = -p[0];
//!     }
//! }
//! struct Floor;
//! impl GuardFn for Floor {
//!     fn direction(&self) -> Direction { Direction::Falling }
//!     fn value<S: Scalar>(&self, _t: S, x: &[S], _p: &[S]) -> S { x[0] }
//! }
//! struct Bounce;
//! impl ResetFn for Bounce {
//!     fn apply<S: Scalar>(&self, _t: S, x: &[S], p: &[S], after: &mut [S]) {
//!         after[0] = x[0];
//!         after[1] = -p[1] * x[1];
//!     }
//! }
//!
//! let ball = HybridSystem::builder(&["h", "v"], &["g", "e"])
//!     .mode("flight", Autodiff(Fall))
//!     .transition("bounce", FromMode("flight"), ToMode("flight"), Autodiff(Floor), Autodiff(Bounce))
//!     .build()
//!     .unwrap();
//! assert_eq!(ball.state_dim(), 2);
//! assert_eq!(ball.mode_index("flight").unwrap(), 0);
//! ```

#![deny(missing_docs)]

mod autodiff;
mod blocks;
pub mod check;
mod error;
mod names;
mod record;
mod sparsity;
mod system;
mod traits;

pub use autodiff::{Autodiff, FlowFn, GuardFn, ResetFn, Scalar};
pub use blocks::{LinearBlocks, LinearPair};
pub use error::{short_num, HybridError};
pub use names::{name_index, Wrt};
pub use record::{EventRecord, FirstFiring, Observation, Segment, SolverStats, Trajectory};
pub use sparsity::Sparsity;
pub use system::{FromMode, HybridSystem, HybridSystemBuilder, Mode, SystemId, ToMode, Transition};
pub use traits::{
    Direction, Flow, FlowPartials, Guard, GuardPartials, Identity, ParamDirection, Partials, Reset,
    ResetPartials, Support, Tangent, Threshold,
};

/// Dual numbers used by [`Autodiff`]; re-exported so that users need no direct
/// dependency on `num-dual` to write generic models.
pub use num_dual;

/// The linear algebra of the `*Partials` matrices ([`FlowPartials`],
/// [`GuardPartials`], [`ResetPartials`]); re-exported so that users name
/// `nalgebra::DMatrix` at the version this crate uses without adding it by
/// hand.
///
/// ```
/// use ia_core::nalgebra::DMatrix;
/// let d = ia_core::FlowPartials::zeros(2, 1);
/// let x: &DMatrix<f64> = &d.x;
/// assert_eq!(x.shape(), (2, 2));
/// ```
pub use nalgebra;
