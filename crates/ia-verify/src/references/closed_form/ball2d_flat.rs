//! The planar ball on flat ground (`ball2d-flat`); the flight and impacts
//! are those of [`super::planar_ball`].

use super::common::differentiate;
use super::error::ClosedFormError;
use super::limits::DEFAULT_MAX_EVENTS;
use super::model::ClosedFormModel;
use super::planar_ball::{planar_ball, Surface};
use super::solution::{ClosedFormSolution, Trace};
use ia_core::Scalar;

/// The registry's entry for `ball2d-flat`.
pub const BALL2D_FLAT: ClosedFormModel = ClosedFormModel {
    name: "ball2d-flat",
    states: &["x", "y", "vx", "vy"],
    params: &["g", "e", "mu"],
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
        &BALL2D_FLAT,
        x0,
        p,
        |x, p| ball2d_flat_trace(x, p, t_end, max_events),
        |x, p| ball2d_flat_trace(x, p, t_end, max_events),
    )
}

/// Planar ball bouncing on flat ground `y = 0`: states `(x, y, vx, vy)`,
/// parameters `(g, e, mu)`.
///
/// # Derivation
///
/// Flow `x' = vx`, `y' = vy`, `vx' = 0`, `vy' = -g`; guard `y`, falling;
/// reset `vx <- mu vx`, `vy <- -e vy`.
///
/// * **Flight** from `(t_k, x_k, y_k, vx_k, vy_k)`: `x = x_k + vx_k s`,
///   `y = y_k + vy_k s - g s^2/2`, `vy = vy_k - g s`.
/// * **Impact times** are the roots of `-g/2 s^2 + vy_k s + y_k = 0`: the
///   smallest positive root (stable quadratic formula) from the initial state;
///   after an impact `y_k = 0` identically, the root `s = 0` is factored out and
///   the next impact is at `s = 2 vy_k / g`.
/// * **Post-impact state:** `x_{k+1} = x_k + vx_k s`, `y_{k+1} = 0`,
///   `vx_{k+1} = mu vx_k`, `vy_{k+1} = -e (vy_k - g s)`. The horizontal
///   position depends on the impact times through `vx` changing at them,
///   which is why `dx(T)/dvy_0 != 0` although `x` never sees `vy`.
/// * **End:** the flight formulas at `tau = T - t_k` (see the module docs).
///
/// Requires `g > 0`, `e >= 0`, `y_0 >= 0`. As for [`ball1d_trace`](super::ball1d_trace), with
/// `e < 1` the impacts accumulate at `t_1 + 2 vy_1 / (g (1 - e))`, reported as
/// [`ClosedFormError::Zeno`] when that is before `t_end`.
pub fn ball2d_flat_trace<S: Scalar>(
    x0: &[S],
    p: &[S],
    t_end: f64,
    max_events: usize,
) -> Result<Trace<S>, ClosedFormError> {
    planar_ball(&BALL2D_FLAT, Surface::Flat, x0, p, t_end, max_events)
}

/// [`ball2d_flat_trace`] with exact Jacobians; `initial_state = [x, y, vx, vy]`,
/// `params = [g, e, mu]`.
pub fn ball2d_flat(
    initial_state: &[f64],
    params: &[f64],
    t_end: f64,
) -> Result<ClosedFormSolution, ClosedFormError> {
    BALL2D_FLAT.solve(initial_state, params, None, t_end, DEFAULT_MAX_EVENTS)
}
