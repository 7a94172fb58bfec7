//! `slip-hopper`: the spring-loaded inverted pendulum (SLIP) running model.
//!
//! A point mass `m` on a massless spring leg of rest length `l0` and stiffness
//! `k`, under gravity `g`. Two modes, `flight` and `stance`; transitions
//! `touchdown` (flight -> stance) and `liftoff` (stance -> flight).
//!
//! The state is the same in both modes: the mass position `(x, y)` (`y` is
//! the height above flat ground), its velocity `(vx, vy)`, and the foot
//! position `xf` on the ground. The foot is placed at touchdown and is
//! carried along unused in flight (`xf' = 0` in both modes).
//!
//! Flight (ballistic, no horizontal gravity):
//!
//! ```text
//! x' = vx,   y' = vy,   vx' = 0,   vy' = -g,   xf' = 0
//! ```
//!
//! Touchdown, in flight: the leg is held at the angle `theta_td` from the
//! vertical, ahead of the mass; guard `y - l0 cos(theta_td)`, firing when it
//! falls through zero. Reset: `xf <- x + l0 sin(theta_td)`, the rest
//! unchanged (so the leg has exactly its rest length at touchdown).
//!
//! Stance: with the leg length `l = sqrt((x - xf)^2 + y^2)`, the spring pushes
//! the mass away from the foot with force `k (l0 - l)` along the leg:
//!
//! ```text
//! x' = vx,   y' = vy,
//! vx' = (k / m) (l0 - l) (x - xf) / l,
//! vy' = (k / m) (l0 - l) y / l - g,
//! xf' = 0
//! ```
//!
//! Liftoff, in stance: guard `l - l0`, firing when it rises through zero (the
//! leg is back at rest length); identity reset.
//!
//! Right after touchdown the liftoff guard is zero (up to the event
//! tolerance) with negative rate, as the leg starts compressing; the
//! integrator arms it from its rate, exactly as for a ball leaving the floor.
//! Right after liftoff the touchdown guard is `l0 (cos(theta_lo) -
//! cos(theta_td))`, where `theta_lo` is the leg angle at liftoff. It is
//! positive when the leg lifts off more upright than it touched down (a
//! decelerating step) and zero for a symmetric stance (then its rate `vy > 0`
//! arms it). When the leg lifts off *flatter* than `theta_td` the mass leaves
//! the ground below the touchdown height: the guard starts beyond zero. If
//! the mass is rising (`vy > 0`) the guard is disarmed (docs/method.md,
//! section 3, rule 4): the mass rises through the touchdown height, and
//! touchdown fires when it falls through it again, so accelerating steps
//! and tilted hops are in scope and their return maps are smooth. A mass
//! that leaves the ground below the touchdown height while *falling* would
//! touch down at once with the leg compressed, which is not physical: that
//! corner (a leg too soft or too flat to hold the mass up) is outside this
//! model's scope, and the command line explains it when a run fails there.
//! The default run lifts off above the touchdown height every time (by 15
//! to 26 mm).
//!
//! | state | unit | default | | parameter | unit | default |
//! |---|---|---|---|---|---|---|
//! | `x`  | m   | 0 | | `m`        | kg    | 80    |
//! | `y`  | m   | 1 | | `k`        | N/m   | 20000 |
//! | `vx` | m/s | 4 | | `l0`       | m     | 1     |
//! | `vy` | m/s | 0 | | `g`        | m/s^2 | 9.81  |
//! | `xf` | m   | 0 | | `theta_td` | rad   | 0.38  |
//!
//! Default run: starts in `flight` at an apex 1 m high, running at 4 m/s;
//! `t_end = 1.5` s: touchdowns near 0.121, 0.592 and 1.132 s, liftoffs near
//! 0.305, 0.781 and 1.325 s (the gait slowly decelerates: 4.0, 3.91, 3.78,
//! 3.56 m/s).
//!
//! Partials by [`ia_core::Autodiff`].

use crate::rules::{ParamRule, Rule, GRAVITY};
use crate::table::Table;
use ia_core::{
    short_num, Autodiff, Direction, FlowFn, FromMode, GuardFn, Identity, ResetFn, Scalar, ToMode,
};

const TABLE: Table = Table {
    name: "slip-hopper",
    description: "Spring-loaded inverted pendulum: point mass m on a massless leg (rest length \
                  l0, stiffness k). Flight: x' = vx, y' = vy, vx' = 0, vy' = -g, xf' = 0; \
                  touchdown when y - l0 cos(theta_td) falls through 0, placing the foot at \
                  xf = x + l0 sin(theta_td). Stance: leg length l = sqrt((x - xf)^2 + y^2), \
                  acceleration (k/m)(l0 - l)(x - xf, y)/l - (0, g); liftoff when l - l0 rises \
                  through 0.",
    states: &[
        ("x", 0.0, "m"),
        ("y", 1.0, "m"),
        ("vx", 4.0, "m/s"),
        ("vy", 0.0, "m/s"),
        ("xf", 0.0, "m"),
    ],
    params: &[
        ("m", 80.0, "kg"),
        ("k", 20000.0, "N/m"),
        ("l0", 1.0, "m"),
        ("g", 9.81, "m/s^2"),
        ("theta_td", 0.38, "rad"),
    ],
    modes: &["flight", "stance"],
    initial_mode: "flight",
    t_end: 1.5,
    transitions: &[
        ("touchdown", "flight", "stance", Direction::Falling),
        ("liftoff", "stance", "flight", Direction::Rising),
    ],
    rules: &[
        ParamRule {
            param: "m",
            rule: Rule::Positive,
            what: "mass",
        },
        ParamRule {
            param: "k",
            rule: Rule::Positive,
            what: "leg stiffness",
        },
        ParamRule {
            param: "l0",
            rule: Rule::Positive,
            what: "leg rest length",
        },
        GRAVITY,
    ],
    relations: &[],
};

/// Parameter indices.
const M: usize = 0;
const K: usize = 1;
const L0: usize = 2;
const G: usize = 3;
const THETA_TD: usize = 4;

/// The `slip-hopper` model; see the [module documentation](self).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SlipHopper;

catalogued_model!(SlipHopper, |_builder| TABLE
    .builder()
    .mode("flight", Autodiff(Flight))
    .mode("stance", Autodiff(Stance))
    .transition(
        "touchdown",
        FromMode("flight"),
        ToMode("stance"),
        Autodiff(Touchdown),
        Autodiff(PlaceFoot),
    )
    .transition(
        "liftoff",
        FromMode("stance"),
        ToMode("flight"),
        Autodiff(Liftoff),
        Identity
    ),
    hint: low_liftoff);

/// The model's scope limit, when a failed run met it: a liftoff below the
/// touchdown height `l0 cos(theta_td)` with the mass falling, after which
/// touchdown is due at once with the leg compressed (rising, the touchdown
/// guard is disarmed instead; see the module documentation).
fn low_liftoff(params: &[f64], error: &ia_core::HybridError) -> Option<String> {
    const TOUCHDOWN: usize = 0;
    const LIFTOFF: usize = 1;
    const Y: usize = 1;
    const VY: usize = 3;
    if !crate::rules::events_accumulated(error) {
        return None;
    }
    let (&l0, &theta_td) = (params.get(L0)?, params.get(THETA_TD)?);
    let trajectory = error.trajectory()?;
    let liftoff = trajectory.events.windows(2).position(|pair| {
        let (lift, touch) = (&pair[0], &pair[1]);
        lift.transition == LIFTOFF && touch.transition == TOUCHDOWN && touch.time == lift.time
    })?;
    let height = l0 * theta_td.cos();
    let state = trajectory.state_before(liftoff);
    let (at, falling) = (state[Y], state[VY]);
    let through_ground = if at < 0.0 {
        " (below the ground: the leg did not hold the mass up)"
    } else {
        ""
    };
    Some(format!(
        "the leg lifted off at t = {} with the mass at y = {}{through_ground}, below the touchdown height l0 cos(theta_td) = {}, and falling (vy = {}), so touchdown was due at once with the leg compressed: a mass that leaves the ground below the touchdown height while falling is outside this model's scope; a smaller theta_td or a stiffer leg (k) keeps liftoff above the touchdown height",
        short_num(trajectory.events[liftoff].time),
        short_num(at),
        short_num(height),
        short_num(falling)
    ))
}

/// Leg length `sqrt((x - xf)^2 + y^2)`.
fn leg_length<S: Scalar>(x: &[S]) -> S {
    let dx = x[0] - x[4];
    (dx * dx + x[1] * x[1]).sqrt()
}

/// Ballistic flight: `x' = vx, y' = vy, vx' = 0, vy' = -g, xf' = 0`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Flight;

impl FlowFn for Flight {
    fn rate<S: Scalar>(&self, _t: S, x: &[S], p: &[S], dxdt: &mut [S]) {
        dxdt[0] = x[2];
        dxdt[1] = x[3];
        dxdt[2] = S::from(0.0);
        dxdt[3] = -p[G];
        dxdt[4] = S::from(0.0);
    }
}

/// Stance: the spring force `k (l0 - l)` along the leg, plus gravity.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Stance;

impl FlowFn for Stance {
    fn rate<S: Scalar>(&self, _t: S, x: &[S], p: &[S], dxdt: &mut [S]) {
        let l = leg_length(x);
        // Acceleration per unit of leg vector (x - xf, y).
        let push = p[K] / p[M] * (p[L0] - l) / l;
        dxdt[0] = x[2];
        dxdt[1] = x[3];
        dxdt[2] = push * (x[0] - x[4]);
        dxdt[3] = push * x[1] - p[G];
        dxdt[4] = S::from(0.0);
    }
}

/// Touchdown: `y - l0 cos(theta_td)`, falling.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Touchdown;

impl GuardFn for Touchdown {
    fn direction(&self) -> Direction {
        Direction::Falling
    }

    fn value<S: Scalar>(&self, _t: S, x: &[S], p: &[S]) -> S {
        x[1] - p[L0] * p[THETA_TD].cos()
    }
}

/// Foot placement at touchdown: `xf <- x + l0 sin(theta_td)`, the rest
/// unchanged.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PlaceFoot;

impl ResetFn for PlaceFoot {
    fn apply<S: Scalar>(&self, _t: S, x: &[S], p: &[S], x_after: &mut [S]) {
        x_after[..4].copy_from_slice(&x[..4]);
        x_after[4] = x[0] + p[L0] * p[THETA_TD].sin();
    }
}

/// Liftoff: `l - l0`, rising.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Liftoff;

impl GuardFn for Liftoff {
    fn direction(&self) -> Direction {
        Direction::Rising
    }

    fn value<S: Scalar>(&self, _t: S, x: &[S], p: &[S]) -> S {
        leg_length(x) - p[L0]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn leg_has_rest_length_at_touchdown() {
        let p = TABLE.spec().default_params();
        let y = p[L0] * p[THETA_TD].cos();
        let before = [0.3, y, 5.0, -1.0, -7.0];
        let mut after = [0.0; 5];
        PlaceFoot.apply(0.0, &before, &p, &mut after);
        assert_eq!(&after[..4], &before[..4]);
        assert!(after[4] > before[0], "the foot lands ahead of the mass");
        assert!(Liftoff.value(0.0, &after, &p).abs() < 1e-15);
    }

    #[test]
    fn spring_pushes_along_the_leg() {
        let p = TABLE.spec().default_params();
        // Compressed leg, foot ahead of the mass.
        let x = [0.0, 0.8, 4.0, -1.0, 0.3];
        let mut dxdt = [0.0; 5];
        Stance.rate(0.0, &x, &p, &mut dxdt);
        let l = (0.09f64 + 0.64).sqrt();
        let force = p[K] * (p[L0] - l);
        assert!((dxdt[2] - force / p[M] * (-0.3) / l).abs() < 1e-12);
        assert!((dxdt[3] - (force / p[M] * 0.8 / l - p[G])).abs() < 1e-12);
        assert!(dxdt[2] < 0.0 && dxdt[3] > 0.0);
    }
}
