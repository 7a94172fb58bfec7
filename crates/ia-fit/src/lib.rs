//! # ia-fit: fitting parameters of a hybrid system to data
//!
//! [`FitProblem`] makes a run ([`Problem`]) plus data into a least-squares
//! problem for [argmin](https://argmin-rs.org): it implements argmin's
//! [`CostFunction`] and [`Gradient`], the gradient by the one-pass adjoint
//! ([`ia_adjoint::gradient`]), so any argmin solver that needs a cost and a
//! gradient can minimise it; [`FitProblem::fit`] runs L-BFGS.
//!
//! The free variables are chosen by name (`param.<name>`,
//! `initial.<state>`, as [`ia_adjoint::Sensitivities::wrt`]); the data are
//! scalar observations `y_i` of state `s_i` at time `t_i` ([`Datum`]), and
//! the loss is
//!
//! ```text
//! L(theta) = sum_i (x_{s_i}(t_i; theta) - y_i)^2
//! ```
//!
//! (the `observation.<k>.<s>` terms of [`LossTerms`] with targets, weight 1).
//!
//! ## Bounds
//!
//! argmin's L-BFGS has no bounds, so a bounded variable is optimised in an
//! unbounded coordinate `u` and mapped into its bounds (a transform, not a
//! projection: the solver never sees a bound):
//!
//! ```text
//! theta = a + (b - a) / (1 + exp(-u))      bounds [a, b]
//! theta = a + exp(u)                       bounds [a, +inf)
//! theta = b - exp(-u)                      bounds (-inf, b]
//! ```
//!
//! and `dL/du = dL/dtheta dtheta/du`, with `dtheta/du = (theta - a)(b - theta)/(b - a)`,
//! `theta - a` and `b - theta`. The bounds are therefore open: the start
//! must lie strictly inside, and a fit whose best value sits on a bound
//! approaches it without reaching it. [`CostFunction`] and [`Gradient`]
//! take `u` (equal to `theta` for an unbounded variable);
//! [`FitProblem::values`] maps `u` to `theta`.
//!
//! A run that fails at a point the solver tries (a ball whose bounces
//! accumulate before `t_end` once `e` is small enough, say) ends the fit
//! with that run's error: start near plausible values, bound the
//! variables, or end the run earlier.
//!
//! ## Standard errors
//!
//! With the residuals `r_i = x_{s_i}(t_i) - y_i` at the fit, their
//! Jacobian `J = dr/dtheta` (forward sensitivities,
//! [`ia_adjoint::jacobian_wrt`]), `m` data and `p` free variables, the
//! Gauss-Newton covariance is `sigma^2 (J^T J)^-1` with
//! `sigma^2 = SSR / (m - p)`; the standard errors are the square roots of
//! its diagonal ([`FitProblem::standard_errors`]).
//!
//! ```
//! use ia_fit::{Datum, FitProblem, FitOptions};
//! use ia_adjoint::prelude::*;
//!
//! // A ball dropped from 1 m: data of its height, made with g = 9.81.
//! let model = ia_models::by_name("ball1d").unwrap();
//! let system = model.system();
//! let truth = Problem::new(&system, vec![1.0, 0.0], vec![9.81, 0.8, 0.0], 1.0)
//!     .with_solver(SolverChoice::dopri5(1e-12));
//! let times = [0.1, 0.2, 0.3, 0.6, 0.8];
//! let run = ia_adjoint::ia_events::simulate(&truth.clone().with_observations(times.to_vec())).unwrap();
//! let data: Vec<Datum> = run.observations.iter()
//!     .map(|o| Datum::new(o.time, "h", o.state[0]))
//!     .collect();
//! // Fit g and e from g = 9, e = 0.5.
//! let mut start = truth.clone();
//! start.params = vec![9.0, 0.5, 0.0];
//! let fit = FitProblem::new(start, &["param.g", "param.e"], data)
//!     .unwrap()
//!     .with_bounds("param.e", Some(0.0), Some(1.0))
//!     .unwrap();
//! let result = fit.fit(&FitOptions::default()).unwrap();
//! assert!((result.values[0] - 9.81).abs() < 1e-6);
//! assert!((result.values[1] - 0.8).abs() < 1e-6);
//! ```
//!
//! [`Problem`]: ia_adjoint::Problem
//! [`CostFunction`]: argmin::core::CostFunction
//! [`Gradient`]: argmin::core::Gradient
//! [`LossTerms`]: ia_adjoint::LossTerms

#![deny(missing_docs)]

mod bounds;
mod error;
mod problem;
mod records;
pub mod synthetic;

pub use argmin;
pub use error::FitError;
pub use problem::FitProblem;
pub use records::{Datum, FitOptions, FitResult};
