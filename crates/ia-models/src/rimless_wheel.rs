//! `rimless-wheel`: the passive rimless wheel rolling down a slope.
//!
//! One mode, `stance`, and one transition, `step` (stance -> stance).
//!
//! A hub of mass on the point of spokes of length `l`, spaced `2 alpha` apart,
//! rolls down a slope of angle `gamma`. The state is the angle `theta` of the
//! stance spoke from the upward vertical (positive in the direction of
//! travel, downhill) and its rate `omega`. The stance phase is an inverted
//! pendulum:
//!
//! ```text
//! theta' = omega,   omega' = (g / l) sin(theta)
//! ```
//!
//! Guard: `gamma + alpha - theta`, firing when it falls through zero (the next
//! spoke strikes the slope).
//!
//! Reset (the new spoke becomes the stance spoke; angular momentum about the
//! impact point is conserved):
//!
//! ```text
//! theta+ = theta- - 2 alpha,   omega+ = cos(2 alpha) omega-
//! ```
//!
//! | state | unit | default | | parameter | unit | default |
//! |---|---|---|---|---|---|---|
//! | `theta` | rad   | -0.3127 | | `g`     | m/s^2 | 9.81         |
//! | `omega` | rad/s | 1.2     | | `l`     | m     | 1            |
//! |         |       |         | | `alpha` | rad   | pi/8 (0.3927) |
//! |         |       |         | | `gamma` | rad   | 0.08         |
//!
//! Default run: starts just after a step (`theta = gamma - alpha`) with
//! `omega = 1.2` rad/s, a little faster than the steady rolling speed after a
//! step, `cot(2 alpha) sqrt(4 (g/l) sin(alpha) sin(gamma))` (about 1.10
//! rad/s); `t_end = 3` s: three steps, near 0.84, 1.76 and 2.73 s.
//!
//! Partials by [`ia_core::Autodiff`].

use crate::rules::{ParamRule, Rule, GRAVITY};
use crate::table::Table;
use ia_core::{Autodiff, Direction, FlowFn, FromMode, GuardFn, ResetFn, Scalar, ToMode};

/// Default spoke half-angle, `pi / 8`.
const ALPHA: f64 = std::f64::consts::FRAC_PI_8;
/// Default slope.
const GAMMA: f64 = 0.08;

const TABLE: Table = Table {
    name: "rimless-wheel",
    description: "Rimless wheel on a slope gamma, spokes 2 alpha apart, stance spoke angle theta \
                  from the vertical: theta' = omega, omega' = (g/l) sin theta; step when \
                  gamma + alpha - theta falls through 0, then theta <- theta - 2 alpha, \
                  omega <- cos(2 alpha) omega.",
    states: &[("theta", GAMMA - ALPHA, "rad"), ("omega", 1.2, "rad/s")],
    params: &[
        ("g", 9.81, "m/s^2"),
        ("l", 1.0, "m"),
        ("alpha", ALPHA, "rad"),
        ("gamma", GAMMA, "rad"),
    ],
    modes: &["stance"],
    initial_mode: "stance",
    t_end: 3.0,
    transitions: &[("step", "stance", "stance", Direction::Falling)],
    rules: &[
        GRAVITY,
        ParamRule {
            param: "l",
            rule: Rule::Positive,
            what: "spoke length",
        },
        ParamRule {
            param: "alpha",
            rule: Rule::AcuteAngle,
            what: "half the angle between spokes",
        },
    ],
    relations: &[],
};

/// The `rimless-wheel` model; see the [module documentation](self).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RimlessWheel;

catalogued_model!(RimlessWheel, |builder| builder
    .mode("stance", Autodiff(Stance))
    .transition(
        "step",
        FromMode("stance"),
        ToMode("stance"),
        Autodiff(NextSpoke),
        Autodiff(Strike),
    ));

/// The stance phase, an inverted pendulum: `theta' = omega,
/// omega' = (g/l) sin(theta)`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Stance;

impl FlowFn for Stance {
    fn rate<S: Scalar>(&self, _t: S, x: &[S], p: &[S], dxdt: &mut [S]) {
        dxdt[0] = x[1];
        dxdt[1] = (p[0] / p[1]) * x[0].sin();
    }
}

/// The next spoke's contact: `gamma + alpha - theta`, falling.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct NextSpoke;

impl GuardFn for NextSpoke {
    fn direction(&self) -> Direction {
        Direction::Falling
    }

    fn value<S: Scalar>(&self, _t: S, x: &[S], p: &[S]) -> S {
        p[3] + p[2] - x[0]
    }
}

/// The spoke strike: `theta <- theta - 2 alpha`, `omega <- cos(2 alpha) omega`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Strike;

impl ResetFn for Strike {
    fn apply<S: Scalar>(&self, _t: S, x: &[S], p: &[S], x_after: &mut [S]) {
        let two_alpha = p[2] * 2.0;
        x_after[0] = x[0] - two_alpha;
        x_after[1] = two_alpha.cos() * x[1];
    }
}
