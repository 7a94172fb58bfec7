//! `ball2d-bowl`: a ball bouncing inside a parabolic bowl.
//!
//! One mode, `flight`, and one transition, `impact` (flight -> flight).
//!
//! The ground is the parabola `y = c x^2`. Flow (no horizontal gravity):
//!
//! ```text
//! x' = vx,   y' = vy,   vx' = 0,   vy' = -g
//! ```
//!
//! Guard: `y - c x^2`, firing when it falls through zero.
//!
//! Reset: positions unchanged; with the unit upward ground normal
//! `n = (-2 c x, 1) / sqrt(1 + 4 c^2 x^2)`, the velocity `v = (vx, vy)` becomes
//!
//! ```text
//! v+ = v - (1 + e) (v . n) n
//! ```
//!
//! so its tangential component is kept and its normal component is multiplied
//! by `-e`.
//!
//! | state | unit | default | | parameter | unit | default |
//! |---|---|---|---|---|---|---|
//! | `x`  | m   | 0.1 | | `g` | m/s^2 | 9.81 |
//! | `y`  | m   | 0.8 | | `e` | 1     | 0.8  |
//! | `vx` | m/s | 0.3 | | `c` | 1/m   | 0.5  |
//! | `vy` | m/s | 0.2 | | | | |
//!
//! Default run: `t_end = 2` s: four impacts, near 0.42, 0.98, 1.45 and 1.83 s.
//!
//! Partials by [`ia_core::Autodiff`].

use crate::rules::{FLOOR_RESTITUTION, GRAVITY};
use crate::table::Table;
use ia_core::{Autodiff, Direction, FlowFn, FromMode, GuardFn, ResetFn, Scalar, ToMode};

const TABLE: Table = Table {
    name: "ball2d-bowl",
    description: "Ball in a vertical plane bouncing in the parabolic bowl y = c x^2: x' = vx, \
                  y' = vy, vx' = 0, vy' = -g; impact when y - c x^2 falls through 0, then \
                  v <- v - (1 + e)(v.n) n with n = (-2 c x, 1)/sqrt(1 + 4 c^2 x^2).",
    states: &[
        ("x", 0.1, "m"),
        ("y", 0.8, "m"),
        ("vx", 0.3, "m/s"),
        ("vy", 0.2, "m/s"),
    ],
    params: &[("g", 9.81, "m/s^2"), ("e", 0.8, "1"), ("c", 0.5, "1/m")],
    modes: &["flight"],
    initial_mode: "flight",
    t_end: 2.0,
    transitions: &[("impact", "flight", "flight", Direction::Falling)],
    rules: &[GRAVITY, FLOOR_RESTITUTION],
    relations: &[],
};

/// The `ball2d-bowl` model; see the [module documentation](self).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Ball2dBowl;

catalogued_model!(Ball2dBowl, |builder| builder
    .mode("flight", Autodiff(Flight))
    .transition(
        "impact",
        FromMode("flight"),
        ToMode("flight"),
        Autodiff(Bowl),
        Autodiff(Impact),
    ));

/// Ballistic flight: `x' = vx, y' = vy, vx' = 0, vy' = -g`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Flight;

impl FlowFn for Flight {
    fn rate<S: Scalar>(&self, _t: S, x: &[S], p: &[S], dxdt: &mut [S]) {
        dxdt[0] = x[2];
        dxdt[1] = x[3];
        dxdt[2] = S::from(0.0);
        dxdt[3] = -p[0];
    }
}

/// The bowl surface: `y - c x^2`, falling.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Bowl;

impl GuardFn for Bowl {
    fn direction(&self) -> Direction {
        Direction::Falling
    }

    fn value<S: Scalar>(&self, _t: S, x: &[S], p: &[S]) -> S {
        x[1] - p[2] * x[0] * x[0]
    }
}

/// The impact on the bowl: `v <- v - (1 + e) (v . n) n`, positions unchanged.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Impact;

impl ResetFn for Impact {
    fn apply<S: Scalar>(&self, _t: S, x: &[S], p: &[S], x_after: &mut [S]) {
        let (e, c) = (p[1], p[2]);
        let slope = x[0] * c * 2.0;
        let norm = (slope * slope + 1.0).sqrt();
        let (nx, ny) = (-slope / norm, norm.recip());
        let k = (x[2] * nx + x[3] * ny) * (e + 1.0);
        x_after[0] = x[0];
        x_after[1] = x[1];
        x_after[2] = x[2] - k * nx;
        x_after[3] = x[3] - k * ny;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rstest::rstest;

    #[rstest]
    #[case([0.1, 0.005, 0.3, -3.0], 0.8, 0.5)]
    #[case([-0.7, 0.245, 1.2, -2.0], 0.6, 0.5)]
    #[case([1.5, 4.5, -0.4, -5.0], 0.9, 2.0)]
    #[case([0.0, 0.0, 0.5, -1.0], 1.0, 0.3)]
    fn impact_keeps_tangential_and_reflects_normal(
        #[case] x: [f64; 4],
        #[case] e: f64,
        #[case] c: f64,
    ) {
        let p = [9.81, e, c];
        let mut after = [0.0; 4];
        Impact.apply(0.0, &x, &p, &mut after);
        let norm = (1.0 + 4.0 * c * c * x[0] * x[0]).sqrt();
        let n = [-2.0 * c * x[0] / norm, 1.0 / norm];
        let tangent = [n[1], -n[0]];
        let dot = |a: [f64; 2], b: [f64; 2]| a[0] * b[0] + a[1] * b[1];
        let (before, later) = ([x[2], x[3]], [after[2], after[3]]);
        assert!((dot(later, tangent) - dot(before, tangent)).abs() < 1e-12);
        assert!((dot(later, n) + e * dot(before, n)).abs() < 1e-12);
        assert_eq!(&after[..2], &x[..2]);
    }
}
