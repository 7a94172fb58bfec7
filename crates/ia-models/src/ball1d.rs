//! `ball1d`: a ball bouncing vertically on a floor.
//!
//! One mode, `flight`, and one transition, `impact` (flight -> flight).
//!
//! Flow:
//!
//! ```text
//! h' = v,   v' = -g
//! ```
//!
//! Guard: `h - floor`, firing when it falls through zero.
//!
//! Reset: `h` unchanged, `v+ = -e v-`.
//!
//! | state | unit | default | | parameter | unit | default |
//! |---|---|---|---|---|---|---|
//! | `h` | m   | 1 | | `g`     | m/s^2 | 9.81 |
//! | `v` | m/s | 0 | | `e`     | 1     | 0.8  |
//! |     |     |   | | `floor` | m     | 0    |
//!
//! Default run: `t_end = 2` s. Closed form: first impact at
//! `t1 = sqrt(2 (h0 - floor) / g)` (about 0.452 s), impact speed `u = g t1`,
//! and the k-th flight after it lasts `2 e^k u / g`; impacts near 0.45, 1.17
//! and 1.75 s, accumulating (Zeno) at `t1 + 2 e u / (g (1 - e))`, about
//! 4.06 s.
//!
//! Partials by [`ia_core::Autodiff`].

use crate::rules::{FLOOR_RESTITUTION, GRAVITY};
use crate::table::Table;
use ia_core::{Autodiff, Direction, FlowFn, FromMode, GuardFn, ResetFn, Scalar, ToMode};

const TABLE: Table = Table {
    name: "ball1d",
    description: "Ball bouncing vertically: h' = v, v' = -g; impact when h - floor falls \
                  through 0, then v <- -e v.",
    states: &[("h", 1.0, "m"), ("v", 0.0, "m/s")],
    params: &[("g", 9.81, "m/s^2"), ("e", 0.8, "1"), ("floor", 0.0, "m")],
    modes: &["flight"],
    initial_mode: "flight",
    t_end: 2.0,
    transitions: &[("impact", "flight", "flight", Direction::Falling)],
    rules: &[GRAVITY, FLOOR_RESTITUTION],
    relations: &[],
};

/// The `ball1d` model; see the [module documentation](self).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Ball1d;

catalogued_model!(Ball1d, |builder| builder
    .mode("flight", Autodiff(Fall))
    .transition(
        "impact",
        FromMode("flight"),
        ToMode("flight"),
        Autodiff(Floor),
        Autodiff(Bounce),
    ));

/// Free fall: `h' = v, v' = -g`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Fall;

impl FlowFn for Fall {
    fn rate<S: Scalar>(&self, _t: S, x: &[S], p: &[S], dxdt: &mut [S]) {
        dxdt[0] = x[1];
        dxdt[1] = -p[0];
    }
}

/// The floor: `h - floor`, falling.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Floor;

impl GuardFn for Floor {
    fn direction(&self) -> Direction {
        Direction::Falling
    }

    fn value<S: Scalar>(&self, _t: S, x: &[S], p: &[S]) -> S {
        x[0] - p[2]
    }
}

/// The bounce: `v <- -e v`, `h` unchanged.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Bounce;

impl ResetFn for Bounce {
    fn apply<S: Scalar>(&self, _t: S, x: &[S], p: &[S], x_after: &mut [S]) {
        x_after[0] = x[0];
        x_after[1] = -p[1] * x[1];
    }
}
