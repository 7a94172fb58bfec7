//! The planar ball in the bowl `y = c x^2` (`ball2d-bowl`); the flight and
//! impacts are those of [`super::planar_ball`].

use super::common::differentiate;
use super::error::ClosedFormError;
use super::limits::DEFAULT_MAX_EVENTS;
use super::model::ClosedFormModel;
use super::planar_ball::{planar_ball, Surface};
use super::solution::{ClosedFormSolution, Trace};
use ia_core::Scalar;

/// The registry's entry for `ball2d-bowl`.
pub const BALL2D_BOWL: ClosedFormModel = ClosedFormModel {
    name: "ball2d-bowl",
    states: &["x", "y", "vx", "vy"],
    params: &["g", "e", "c"],
    modes: &[],
    evaluate: solve,
};

fn solve(
    x0: &[f64],
    p: &[f64],
    _initial_mode: Option<&str>,
    t_end: f64,
    max_events: usize,
) -> Result<ClosedFormSolution, ClosedFormError> {
    differentiate(
        &BALL2D_BOWL,
        x0,
        p,
        |x, p| ball2d_bowl_trace(x, p, t_end, max_events),
        |x, p| ball2d_bowl_trace(x, p, t_end, max_events),
    )
}

/// Planar ball bouncing in the bowl `y = c x^2`: states `(x, y, vx, vy)`,
/// parameters `(g, e, c)`.
///
/// # Derivation
///
/// Flow as on flat ground; guard `G = y - c x^2`, falling; with the normal
/// `n = (-2 c x, 1) / sqrt(1 + 4 c^2 x^2)` the reset is
/// `v <- v - (1 + e) (v.n) n` (position unchanged).
///
/// * **Impact times.** Along a flight from `(x_k, y_k, vx_k, vy_k)` the guard is
///   the quadratic `G(s) = a s^2 + b s + G_k` with
///   `a = -(g/2 + c vx_k^2)`, `b = vy_k - 2 c x_k vx_k` (the guard rate at
///   `s = 0`), `G_k = y_k - c x_k^2`. From the initial state the impact is its
///   smallest positive root by the stable formula
///   `q = -(b + sign(b) sqrt(b^2 - 4 a G_k)) / 2`, roots `q/a`, `G_k/q`.
///   After an impact the ball is on the surface, `G_k = 0` identically, so
///   `G(s) = s (a s + b)`: the root `s = 0` is the impact just applied and the
///   next is the linear solution `s = -b / a` (no return if `a >= 0`, possible
///   only for `c < 0`).
/// * **Post-impact state.** With `m = 2 c x^-` (the slope at the impact point)
///   and `w = vy^- - m vx^-` (the guard rate, `< 0`):
///   `vx^+ = vx^- + (1 + e) w m / (1 + m^2)`,
///   `vy^+ = vy^- - (1 + e) w / (1 + m^2)`, which is
///   `v - (1 + e)(v.n) n` with the square root cancelled; the guard rate
///   becomes `-e w`. The position is set to `(x^-, c (x^-)^2)`, on the surface
///   identically in the inputs.
/// * **End:** the flight formulas at `tau = T - t_k`.
///
/// Requires `g > 0`, `e >= 0`, `y_0 >= c x_0^2`. With `e = 0` the ball would
/// slide along the surface after its first impact: reported as
/// [`ClosedFormError::Grazing`]. Accumulating impacts are caught by the event
/// cap or as [`ClosedFormError::Zeno`].
pub fn ball2d_bowl_trace<S: Scalar>(
    x0: &[S],
    p: &[S],
    t_end: f64,
    max_events: usize,
) -> Result<Trace<S>, ClosedFormError> {
    planar_ball(&BALL2D_BOWL, Surface::Bowl, x0, p, t_end, max_events)
}

/// [`ball2d_bowl_trace`] with exact Jacobians; `initial_state = [x, y, vx, vy]`,
/// `params = [g, e, c]`.
pub fn ball2d_bowl(
    initial_state: &[f64],
    params: &[f64],
    t_end: f64,
) -> Result<ClosedFormSolution, ClosedFormError> {
    BALL2D_BOWL.solve(initial_state, params, None, t_end, DEFAULT_MAX_EVENTS)
}
