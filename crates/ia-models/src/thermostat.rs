//! `thermostat`: a room heated by a bang-bang thermostat with hysteresis.
//!
//! Two modes, `off` and `on`; transitions `switch_on` (off -> on) and
//! `switch_off` (on -> off), both with the identity reset.
//!
//! Flows (Newton cooling towards the outside temperature `Tout`, plus heating
//! at rate `b` when on):
//!
//! ```text
//! off:  T' = -a (T - Tout)
//! on:   T' = -a (T - Tout) + b
//! ```
//!
//! Guards: `switch_on` fires when `T - Tlo` falls through zero (in `off`);
//! `switch_off` fires when `T - Thi` rises through zero (in `on`).
//!
//! Time is in hours.
//!
//! | state | unit | default | | parameter | unit | default |
//! |---|---|---|---|---|---|---|
//! | `T` | degC | 21 | | `a`    | 1/h    | 0.2 |
//! |     |      |    | | `b`    | degC/h | 5   |
//! |     |      |    | | `Tout` | degC   | 10  |
//! |     |      |    | | `Tlo`  | degC   | 19  |
//! |     |      |    | | `Thi`  | degC   | 23  |
//!
//! Default run: starts in `on`, `t_end = 20` h. Closed form: in `on`,
//! `T -> Tout + b/a = 35`, reaching `Thi` after `ln(14/12)/a` (0.77 h); then
//! cooling takes `ln((Thi - Tout)/(Tlo - Tout))/a` (1.84 h) and heating
//! `ln((Tout + b/a - Tlo)/(Tout + b/a - Thi))/a` (1.44 h): about a dozen
//! switches.
//!
//! Partials by [`ia_core::Autodiff`].

use crate::Table;
use ia_core::{Autodiff, Direction, FlowFn, FromMode, GuardFn, Identity, Scalar, ToMode};

const TABLE: Table = Table {
    name: "thermostat",
    description: "Room temperature under a thermostat with hysteresis (time in hours): off: \
                  T' = -a (T - Tout); on: T' = -a (T - Tout) + b; switch on when T - Tlo falls \
                  through 0, switch off when T - Thi rises through 0; the state does not jump.",
    states: &[("T", 21.0, "degC")],
    params: &[
        ("a", 0.2, "1/h"),
        ("b", 5.0, "degC/h"),
        ("Tout", 10.0, "degC"),
        ("Tlo", 19.0, "degC"),
        ("Thi", 23.0, "degC"),
    ],
    modes: &["off", "on"],
    initial_mode: "on",
    t_end: 20.0,
    transitions: &[
        ("switch_on", "off", "on", Direction::Falling),
        ("switch_off", "on", "off", Direction::Rising),
    ],
};

/// The `thermostat` model; see the [module documentation](self).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Thermostat;

catalogued_model!(Thermostat, |_builder| TABLE
    .builder()
    .mode("off", Autodiff(Room { heating: false }))
    .mode("on", Autodiff(Room { heating: true }))
    .transition(
        "switch_on",
        FromMode("off"),
        ToMode("on"),
        Autodiff(TooCold),
        Identity
    )
    .transition(
        "switch_off",
        FromMode("on"),
        ToMode("off"),
        Autodiff(TooHot),
        Identity
    ));

/// The room: `T' = -a (T - Tout)`, plus `b` when `heating`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Room {
    /// Whether the heater is on.
    pub heating: bool,
}

impl FlowFn for Room {
    fn rate<S: Scalar>(&self, _t: S, x: &[S], p: &[S], dxdt: &mut [S]) {
        let cooling = -p[0] * (x[0] - p[2]);
        dxdt[0] = if self.heating {
            cooling + p[1]
        } else {
            cooling
        };
    }
}

/// The lower threshold: `T - Tlo`, falling.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TooCold;

impl GuardFn for TooCold {
    fn direction(&self) -> Direction {
        Direction::Falling
    }

    fn value<S: Scalar>(&self, _t: S, x: &[S], p: &[S]) -> S {
        x[0] - p[3]
    }
}

/// The upper threshold: `T - Thi`, rising.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TooHot;

impl GuardFn for TooHot {
    fn direction(&self) -> Direction {
        Direction::Rising
    }

    fn value<S: Scalar>(&self, _t: S, x: &[S], p: &[S]) -> S {
        x[0] - p[4]
    }
}
