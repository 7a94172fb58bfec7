//! `impact-pendulum`: a pendulum swinging against a rigid wall.
//!
//! One mode, `swing`, and one transition, `impact` (swing -> swing).
//!
//! The angle `theta` is measured from the downward vertical; the wall stands
//! at `theta = theta_wall` and the pendulum lives on the side
//! `theta < theta_wall`. Flow:
//!
//! ```text
//! theta' = omega,   omega' = -(g / l) sin(theta)
//! ```
//!
//! Guard: `theta_wall - theta`, firing when it falls through zero (the bob
//! reaches the wall).
//!
//! Reset: `theta` unchanged, `omega+ = -e omega-`.
//!
//! With `theta_wall > 0` the rest position `theta = 0` lies clear of the wall:
//! impacts go on forever, with the swing amplitude decaying towards
//! `theta_wall` and the time between impacts tending to a full period, so
//! events never accumulate.
//!
//! | state | unit | default | | parameter | unit | default |
//! |---|---|---|---|---|---|---|
//! | `theta` | rad   | -0.5 | | `g`          | m/s^2 | 9.81 |
//! | `omega` | rad/s | 0    | | `l`          | m     | 1    |
//! |         |       |      | | `e`          | 1     | 0.8  |
//! |         |       |      | | `theta_wall` | rad   | 0.1  |
//!
//! Default run: released at rest from `theta = -0.5` rad, `t_end = 5` s: four
//! impacts, near 0.57, 1.75, 2.96 and 4.21 s.
//!
//! Partials by [`ia_core::Autodiff`].

use crate::rules::{ParamRule, Rule, GRAVITY, RESTITUTION};
use crate::table::Table;
use ia_core::{Autodiff, Direction, FlowFn, FromMode, GuardFn, ResetFn, Scalar, ToMode};

const TABLE: Table = Table {
    name: "impact-pendulum",
    description: "Pendulum against a wall at theta_wall (theta from the downward vertical): \
                  theta' = omega, omega' = -(g/l) sin theta; impact when theta_wall - theta \
                  falls through 0, then omega <- -e omega.",
    states: &[("theta", -0.5, "rad"), ("omega", 0.0, "rad/s")],
    params: &[
        ("g", 9.81, "m/s^2"),
        ("l", 1.0, "m"),
        ("e", 0.8, "1"),
        ("theta_wall", 0.1, "rad"),
    ],
    modes: &["swing"],
    initial_mode: "swing",
    t_end: 5.0,
    transitions: &[("impact", "swing", "swing", Direction::Falling)],
    rules: &[
        GRAVITY,
        ParamRule {
            param: "l",
            rule: Rule::Positive,
            what: "pendulum length",
        },
        RESTITUTION,
    ],
    relations: &[],
};

/// The `impact-pendulum` model; see the [module documentation](self).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ImpactPendulum;

catalogued_model!(ImpactPendulum, |builder| builder
    .mode("swing", Autodiff(Swing))
    .transition(
        "impact",
        FromMode("swing"),
        ToMode("swing"),
        Autodiff(Wall),
        Autodiff(Rebound),
    ));

/// The pendulum: `theta' = omega, omega' = -(g/l) sin(theta)`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Swing;

impl FlowFn for Swing {
    fn rate<S: Scalar>(&self, _t: S, x: &[S], p: &[S], dxdt: &mut [S]) {
        dxdt[0] = x[1];
        dxdt[1] = -(p[0] / p[1]) * x[0].sin();
    }
}

/// The wall: `theta_wall - theta`, falling.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Wall;

impl GuardFn for Wall {
    fn direction(&self) -> Direction {
        Direction::Falling
    }

    fn value<S: Scalar>(&self, _t: S, x: &[S], p: &[S]) -> S {
        p[3] - x[0]
    }
}

/// The rebound: `omega <- -e omega`, `theta` unchanged.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Rebound;

impl ResetFn for Rebound {
    fn apply<S: Scalar>(&self, _t: S, x: &[S], p: &[S], x_after: &mut [S]) {
        x_after[0] = x[0];
        x_after[1] = -p[2] * x[1];
    }
}
