//! Closed-form (symbolic) references for the ready models.
//!
//! Every model here has a flow whose solution is known in closed form between
//! events (uniform acceleration, free flight, exponential relaxation), so the
//! event times are roots of explicit equations (a quadratic, a linear
//! equation, a logarithm) and the whole multi-event trajectory is a
//! composition of elementary functions of the initial state and the
//! parameters. Each model is written once, generic over [`Scalar`](ia_core::Scalar):
//!
//! * evaluated with `f64` it gives the final state and the event times;
//! * evaluated with [`Dual64`](ia_core::num_dual::Dual64), one seeded direction per initial-state entry
//!   and per parameter, it gives the **exact derivatives of the closed form**
//!   (forward-mode automatic differentiation of the formula, not finite
//!   differences). These include the dependence of every event time on the
//!   inputs, which is what the saltation terms of the hybrid sensitivity
//!   theory account for.
//!
//! Values and derivatives are exact up to floating-point rounding; nothing is
//! integrated or iterated numerically.
//!
//! # Assumptions and limits
//!
//! * **No grazing.** Each event must be transversal: the guard crosses zero
//!   with a nonzero rate in its declared direction. The derivative of an event
//!   time is `-(dg/dtheta) / gdot`, unbounded as `gdot -> 0`, so an event whose
//!   transversality (the cosine between the flow and the guard normal,
//!   `|gdot| / (|g_x| |f|)`) is at or below [`GRAZING_THRESHOLD`] is reported as
//!   [`ClosedFormError::Grazing`], never returned.
//! * **Finitely many events.** At most `max_events` events
//!   ([`DEFAULT_MAX_EVENTS`] for the plain entry points) are applied before
//!   `t_end`; more is reported as [`ClosedFormError::TooManyEvents`]. An event
//!   time that does not advance in floating point (an accumulation point, as a
//!   bouncing ball with `e < 1` has) is reported as [`ClosedFormError::Zeno`].
//!   Neither case loops.
//! * **Events strictly before `t_end`.** An event at `t* < t_end` is applied;
//!   an event at `t* >= t_end` is not, so the final state is the left limit
//!   `x(t_end-)` when an event falls exactly on `t_end` (where the final state
//!   is not differentiable anyway).
//! * **Start off the guard.** An initial state on a guard that is moving (or
//!   resting) in the guard's firing direction is ambiguous and rejected with
//!   [`ClosedFormError::InitialOnGuard`]; on the guard but moving away is fine
//!   (a ball launched from the floor).
//!
//! # Why the last, partial segment needs nothing special
//!
//! Between two consecutive events the state is given by the flow's closed-form
//! solution `phi(s; x_k, p)` started at the post-event state `x_k` of the last
//! event `t_k` (or the initial state). That formula holds for every
//! `s` in `[0, s_next)`, where `s_next` is the time to the next root of the
//! guard; `t_end` is reached before the next event exactly when
//! `t_k + s_next >= t_end`, so the final state is `phi(t_end - t_k; x_k, p)`,
//! with `t_k` and `x_k` carrying their full dependence on the inputs. Its
//! derivative with respect to `theta` is
//! `phi_s (-dt_k/dtheta) + phi_x dx_k/dtheta + phi_p dp/dtheta`: the first term
//! is the event-time term a time-stepping program misses, and the dual numbers
//! pick it up because `t_k` is itself a dual number.
//!
//! # Layout of the module
//!
//! One file per closed form (`ball1d.rs`, `ball2d_flat.rs`, `ball2d_bowl.rs`,
//! `two_ball.rs`, `lif.rs`, `thermostat.rs`), each holding the model's
//! [`ClosedFormModel`] entry, its generic trace and its `f64` entry point;
//! the registry [`MODELS`] lists the entries, and [`closed_form`] evaluates
//! one by name. A new closed form is one file and one row of [`MODELS`]. The
//! `lif-network`, whose names depend on its size, has its own entry points
//! ([`lif_network`], [`network_cases`]).
//!
//! # Layout of the results
//!
//! [`ClosedFormSolution::jacobian`] has one row per final-state entry, in the
//! model's state order, and one column per entry of
//! [`ClosedFormSolution::wrt`]: `"initial.<state>"` for every state in order,
//! then `"param.<p>"` for every parameter in order (see [`MODELS`]).
//! [`ClosedFormSolution::event_time_jacobian`] has one row per event, same
//! columns.
//!
//! ```
//! use ia_verify::closed_form::closed_form;
//! // Two equal balls, the left one moving at 1 m/s towards the resting right one.
//! let sol = closed_form("two-ball", &[0.0, 0.52, 1.0, 0.0], &[0.1, 1.0, 1.0, 1.0], None, 1.0)
//!     .unwrap();
//! assert!((sol.event_times[0] - 0.32).abs() < 1e-15);
//! assert!((sol.final_state[1] - 1.2).abs() < 1e-15);
//! // d x2(T) / d x1(0) = 1 (the impact hands x1's offset to ball 2).
//! assert!((sol.jacobian_entry("x2", "initial.x1").unwrap() - 1.0).abs() < 1e-15);
//! ```

// Negated comparisons (`!(x > 0.0)`) are deliberate: they reject NaN too.
#![allow(clippy::neg_cmp_op_on_partial_ord)]

mod ball1d;
mod ball2d_bowl;
mod ball2d_flat;
mod common;
mod error;
mod lif;
mod limits;
mod model;
mod network;
mod planar_ball;
mod registry;
mod solution;
mod thermostat;
mod two_ball;

pub use ball1d::{ball1d, ball1d_trace, BALL1D};
pub use ball2d_bowl::{ball2d_bowl, ball2d_bowl_trace, BALL2D_BOWL};
pub use ball2d_flat::{ball2d_flat, ball2d_flat_trace, BALL2D_FLAT};
pub use error::ClosedFormError;
pub use lif::{lif, lif_trace, LIF};
pub use limits::{DEFAULT_MAX_EVENTS, GRAZING_THRESHOLD};
pub use model::ClosedFormModel;
pub use network::{lif_network, lif_network_trace, network_case, network_cases, NetworkCase};
pub use registry::{closed_form, closed_form_model, closed_form_with_max_events, MODELS};
pub use solution::{ClosedFormSolution, Trace};
pub use thermostat::{thermostat, thermostat_trace, ThermostatMode, THERMOSTAT};
pub use two_ball::{two_ball, two_ball_trace, TWO_BALL};
