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
//! The flow's partials are written by hand (the adjoint of a run of 10^6
//! switches evaluates them about 10^8 times; dual numbers cost several times
//! more), the guards' by [`ia_core::Autodiff`].

use crate::rules::{ParamRule, Relation, Rule};
use crate::table::Table;
use ia_core::{
    Autodiff, Direction, Flow, FlowPartials, FromMode, GuardFn, Identity, Scalar, Tangent, ToMode,
};

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
    rules: &[ParamRule {
        param: "a",
        rule: Rule::Positive,
        what: "cooling rate",
    }],
    relations: &[Relation {
        lower: "Tlo",
        upper: "Thi",
        why: "the heater switches on below Tlo and off above Thi; with Tlo >= Thi each switch is due at once after the other and the run ends in a Zeno error",
    }],
};

/// The `thermostat` model; see the [module documentation](self).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Thermostat;

catalogued_model!(Thermostat, |_builder| TABLE
    .builder()
    .mode("off", Room { heating: false })
    .mode("on", Room { heating: true })
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

/// Parameter positions: `a`, `b`, `Tout`.
const A: usize = 0;
const B: usize = 1;
const TOUT: usize = 2;

impl Room {
    /// `df/db`: 1 when heating.
    fn heat(&self) -> f64 {
        if self.heating {
            1.0
        } else {
            0.0
        }
    }
}

/// `f = -a (T - Tout) + b [heating]`: `f_T = -a`, `f_a = -(T - Tout)`,
/// `f_b = [heating]`, `f_Tout = a`, `f_t = 0`.
impl Flow for Room {
    fn rate(&self, _t: f64, x: &[f64], p: &[f64], dxdt: &mut [f64]) {
        dxdt[0] = -p[A] * (x[0] - p[TOUT]) + self.heat() * p[B];
    }

    /// `a = -a`, `b = a Tout + b [heating]`.
    fn decoupled_linear(&self, p: &[f64], a: &mut [f64], b: &mut [f64]) -> bool {
        (a[0], b[0]) = (-p[A], p[A] * p[TOUT] + self.heat() * p[B]);
        true
    }

    fn partials(&self, _t: f64, x: &[f64], p: &[f64], out: &mut FlowPartials) {
        out.x[(0, 0)] = -p[A];
        out.p[(0, A)] = -(x[0] - p[TOUT]);
        out.p[(0, B)] = self.heat();
        out.p[(0, TOUT)] = p[A];
    }

    /// `S' = f_T S + [0 | f_p]` for the 1 x 6 sensitivity `(T0, a, b, Tout,
    /// Tlo, Thi)`.
    fn sensitivity_rate(&self, _t: f64, x: &[f64], p: &[f64], s: &[f64], ds: &mut [f64]) -> bool {
        let (Some(ds), Some(s)) = (ds.first_chunk_mut::<6>(), s.first_chunk::<6>()) else {
            return false;
        };
        let a = p[A];
        let source = [0.0, -(x[0] - p[TOUT]), self.heat(), a, 0.0, 0.0];
        for ((d, v), f_p) in ds.iter_mut().zip(s).zip(source) {
            *d = -a * v + f_p;
        }
        true
    }

    /// `f_T dT + f_p dp = -a dT - (T - Tout) da + heat db + a dTout`
    /// (`Tlo`, `Thi` do not move the flow; autonomous, so no `dt` term).
    fn jacobian_vector_product(
        &self,
        _t: f64,
        x: &[f64],
        p: &[f64],
        tangent: Tangent<'_>,
        out: &mut [f64],
    ) -> bool {
        let dp = tangent.param;
        out[0] = -p[A] * tangent.x[0] - (x[0] - p[TOUT]) * dp.entry(A)
            + self.heat() * dp.entry(B)
            + p[A] * dp.entry(TOUT);
        true
    }

    fn vector_jacobian_product(
        &self,
        _t: f64,
        x: &[f64],
        p: &[f64],
        v: &[f64],
        x_bar: &mut [f64],
        p_bar: &mut [f64],
    ) -> bool {
        x_bar[0] = -p[A] * v[0];
        p_bar[A] -= (x[0] - p[TOUT]) * v[0];
        p_bar[B] += self.heat() * v[0];
        p_bar[TOUT] += p[A] * v[0];
        true
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

    fn support(&self) -> Option<ia_core::Support<'_>> {
        Some(ia_core::Support {
            states: &[0],
            params: &[3],
        })
    }

    fn threshold(&self, p: &[f64]) -> Option<ia_core::Threshold> {
        Some(ia_core::Threshold {
            state: 0,
            level: p[3],
        })
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

    fn support(&self) -> Option<ia_core::Support<'_>> {
        Some(ia_core::Support {
            states: &[0],
            params: &[4],
        })
    }

    fn threshold(&self, p: &[f64]) -> Option<ia_core::Threshold> {
        Some(ia_core::Threshold {
            state: 0,
            level: p[4],
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ia_core::FlowFn;
    use ia_core::ParamDirection;

    /// The room's rate written once over any scalar: dual numbers give the
    /// reference partials.
    struct DualRoom(bool);
    impl FlowFn for DualRoom {
        fn rate<S: Scalar>(&self, _t: S, x: &[S], p: &[S], dxdt: &mut [S]) {
            let heat = if self.0 { p[1] } else { S::from(0.0) };
            dxdt[0] = -p[0] * (x[0] - p[2]) + heat;
        }
    }

    /// The hand-written partials and products against dual numbers
    /// (`Autodiff` of the same formula), at points off the defaults.
    #[test]
    fn hand_written_partials_and_products_equal_dual_numbers() {
        let p = [0.3, 4.0, 9.0, 19.0, 23.0];
        for heating in [false, true] {
            let (room, dual) = (Room { heating }, Autodiff(DualRoom(heating)));
            for x in [[21.5], [8.0]] {
                let (mut got, mut want) = (FlowPartials::zeros(1, 5), FlowPartials::zeros(1, 5));
                room.partials(0.0, &x, &p, &mut got);
                dual.partials(0.0, &x, &p, &mut want);
                assert_eq!(got, want, "heating {heating}, T = {}", x[0]);
                let (mut r, mut rd) = ([0.0], [0.0]);
                room.rate(0.0, &x, &p, &mut r);
                dual.rate(0.0, &x, &p, &mut rd);
                assert_eq!(r, rd);
                let v = [1.7];
                let (mut x_bar, mut p_bar) = ([0.0], [0.5; 5]);
                assert!(room.vector_jacobian_product(0.0, &x, &p, &v, &mut x_bar, &mut p_bar));
                assert_eq!(x_bar[0], want.x[(0, 0)] * v[0]);
                for (j, got) in p_bar.iter().enumerate() {
                    assert_eq!(*got, 0.5 + want.p[(0, j)] * v[0], "p_bar[{j}]");
                }
                // The variational rate of a 1 x 6 sensitivity.
                let sens = [0.3, -1.1, 0.7, 2.0, -0.4, 0.9];
                let mut ds = [0.0; 6];
                assert!(room.sensitivity_rate(0.0, &x, &p, &sens, &mut ds));
                for (j, d) in ds.iter().enumerate() {
                    let fp = if j == 0 { 0.0 } else { want.p[(0, j - 1)] };
                    assert_eq!(*d, want.x[(0, 0)] * sens[j] + fp, "ds[{j}]");
                }
                let units = (0..5).map(ParamDirection::Unit);
                for param in std::iter::once(ParamDirection::Zero).chain(units) {
                    let dx = [0.25];
                    let mut out = [0.0];
                    let tangent = Tangent {
                        t: 0.0,
                        x: &dx,
                        param,
                    };
                    assert!(room.jacobian_vector_product(0.0, &x, &p, tangent, &mut out));
                    let expected = want.x[(0, 0)] * dx[0] + param.apply(|j| want.p[(0, j)]);
                    assert_eq!(out[0], expected, "{param:?}");
                }
                // Along a whole parameter direction: the dense partials
                // applied (to rounding: other order of the sum), and the
                // dual numbers' product.
                let (dx, dp) = ([0.25], [0.5, -1.5, 2.0, 0.75, -0.3]);
                let mut out = [f64::NAN];
                let along = Tangent {
                    t: 0.0,
                    x: &dx,
                    param: ParamDirection::Along(&dp),
                };
                assert!(room.jacobian_vector_product(0.0, &x, &p, along, &mut out));
                let expected: f64 =
                    want.x[(0, 0)] * dx[0] + (0..5).map(|j| want.p[(0, j)] * dp[j]).sum::<f64>();
                assert!((out[0] - expected).abs() <= 1e-14 * expected.abs().max(1.0));
                let mut by_duals = [f64::NAN];
                assert!(dual.jacobian_vector_product(0.0, &x, &p, along, &mut by_duals));
                assert!((out[0] - by_duals[0]).abs() <= 1e-14 * by_duals[0].abs().max(1.0));
            }
        }
    }
}
