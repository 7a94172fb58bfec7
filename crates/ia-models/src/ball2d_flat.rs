//! `ball2d-flat`: a ball bouncing on flat ground, with friction at impact.
//!
//! One mode, `flight`, and one transition, `impact` (flight -> flight).
//!
//! Flow (no horizontal gravity):
//!
//! ```text
//! x' = vx,   y' = vy,   vx' = 0,   vy' = -g
//! ```
//!
//! Guard: `g(x) = y`, firing when it falls through zero (the ball reaches the
//! ground from above).
//!
//! Reset: positions unchanged, `vx+ = mu vx-` (tangential loss by friction),
//! `vy+ = -e vy-` (normal restitution).
//!
//! | state | unit | default | | parameter | unit | default |
//! |---|---|---|---|---|---|---|
//! | `x`  | m   | 0 | | `g`  | m/s^2 | 9.81 |
//! | `y`  | m   | 1 | | `e`  | 1     | 0.8  |
//! | `vx` | m/s | 1 | | `mu` | 1     | 0.7  |
//! | `vy` | m/s | 0 | | | | |
//!
//! Default run: `t_end = 2` s (three impacts, at about 0.45, 1.17 and 1.75 s;
//! impacts accumulate at about 4.06 s).
//!
//! The flow, guard and reset have hand-written, allocation-free partial
//! derivatives (a benchmark times them); the tests check them against
//! [`ia_core::Autodiff`] of a generic implementation.

use crate::rules::{ParamRule, Rule, FLOOR_RESTITUTION, GRAVITY};
use crate::table::Table;
use ia_core::{
    Direction, Flow, FlowPartials, FromMode, Guard, GuardPartials, Reset, ResetPartials, ToMode,
};

const TABLE: Table = Table {
    name: "ball2d-flat",
    description: "Ball in a vertical plane bouncing on flat ground y = 0: x' = vx, y' = vy, \
                  vx' = 0, vy' = -g; impact when y falls through 0, then vx <- mu vx, vy <- -e vy.",
    states: &[
        ("x", 0.0, "m"),
        ("y", 1.0, "m"),
        ("vx", 1.0, "m/s"),
        ("vy", 0.0, "m/s"),
    ],
    params: &[("g", 9.81, "m/s^2"), ("e", 0.8, "1"), ("mu", 0.7, "1")],
    modes: &["flight"],
    initial_mode: "flight",
    t_end: 2.0,
    transitions: &[("impact", "flight", "flight", Direction::Falling)],
    rules: &[
        GRAVITY,
        FLOOR_RESTITUTION,
        ParamRule {
            param: "mu",
            rule: Rule::UnitInterval,
            what: "fraction of tangential velocity kept at impact",
        },
    ],
    relations: &[],
};

/// The `ball2d-flat` model; see the [module documentation](self).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Ball2dFlat;

catalogued_model!(Ball2dFlat, |_builder| TABLE
    .builder()
    .mode("flight", Flight)
    .transition(
        "impact",
        FromMode("flight"),
        ToMode("flight"),
        Ground,
        Impact
    ));

/// Ballistic flight: `x' = vx, y' = vy, vx' = 0, vy' = -g`, with
/// hand-written partials.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Flight;

impl Flow for Flight {
    #[inline]
    fn rate(&self, _t: f64, x: &[f64], p: &[f64], dxdt: &mut [f64]) {
        dxdt[0] = x[2];
        dxdt[1] = x[3];
        dxdt[2] = 0.0;
        dxdt[3] = -p[0];
    }

    #[inline]
    fn partials(&self, _t: f64, _x: &[f64], _p: &[f64], out: &mut FlowPartials) {
        out.x[(0, 2)] = 1.0;
        out.x[(1, 3)] = 1.0;
        out.p[(3, 0)] = -1.0;
    }

    /// `f_x S + [0 | f_p]` without forming the partials: the rows of `x`, `y`
    /// copy those of `vx`, `vy`, and `g` enters `vy'` only.
    #[inline]
    fn sensitivity_rate(&self, _t: f64, _x: &[f64], _p: &[f64], s: &[f64], ds: &mut [f64]) -> bool {
        for (column, rate) in s.chunks_exact(4).zip(ds.chunks_exact_mut(4)) {
            rate[0] = column[2];
            rate[1] = column[3];
            rate[2] = 0.0;
            rate[3] = 0.0;
        }
        // Column of parameter g (after the four initial-state columns).
        ds[4 * 4 + 3] -= 1.0;
        true
    }

    /// `f_x^T v` and `f_p^T v` without forming the partials.
    #[inline]
    fn vector_jacobian_product(
        &self,
        _t: f64,
        _x: &[f64],
        _p: &[f64],
        v: &[f64],
        x_bar: &mut [f64],
        p_bar: &mut [f64],
    ) -> bool {
        x_bar[0] = 0.0;
        x_bar[1] = 0.0;
        x_bar[2] = v[0];
        x_bar[3] = v[1];
        p_bar[0] -= v[3];
        true
    }
}

/// The ground: `g = y`, falling; hand-written partials.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Ground;

impl Guard for Ground {
    fn direction(&self) -> Direction {
        Direction::Falling
    }

    #[inline]
    fn value(&self, _t: f64, x: &[f64], _p: &[f64]) -> f64 {
        x[1]
    }

    #[inline]
    fn partials(&self, _t: f64, _x: &[f64], _p: &[f64], out: &mut GuardPartials) {
        out.x[1] = 1.0;
    }
}

/// The impact: `vx <- mu vx`, `vy <- -e vy`, positions unchanged;
/// hand-written partials.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Impact;

impl Reset for Impact {
    #[inline]
    fn apply(&self, _t: f64, x: &[f64], p: &[f64], x_after: &mut [f64]) {
        x_after[0] = x[0];
        x_after[1] = x[1];
        x_after[2] = p[2] * x[2];
        x_after[3] = -p[1] * x[3];
    }

    #[inline]
    fn partials(&self, _t: f64, x: &[f64], p: &[f64], out: &mut ResetPartials) {
        out.x[(0, 0)] = 1.0;
        out.x[(1, 1)] = 1.0;
        out.x[(2, 2)] = p[2];
        out.x[(3, 3)] = -p[1];
        out.p[(2, 2)] = x[2];
        out.p[(3, 1)] = -x[3];
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ia_core::{Autodiff, FlowFn, GuardFn, ResetFn, Scalar};
    use rstest::rstest;

    /// The fast paths equal the products formed from the partials.
    #[test]
    fn fast_sensitivity_products_match_partials() {
        let (x, p) = ([0.3, 0.7, -1.1, 2.3], [9.81, 0.8, 0.7]);
        let mut d = FlowPartials::zeros(4, 3);
        Flight.partials(0.0, &x, &p, &mut d);
        let s = nalgebra::DMatrix::from_fn(4, 7, |i, j| (i * 7 + j) as f64 * 0.37 - 3.0);
        let mut expected = &d.x * &s;
        for j in 0..3 {
            for i in 0..4 {
                expected[(i, 4 + j)] += d.p[(i, j)];
            }
        }
        let mut rate = vec![0.0; 28];
        assert!(Flight.sensitivity_rate(0.0, &x, &p, s.as_slice(), &mut rate));
        assert_eq!(rate, expected.as_slice());

        let v = [0.5, -1.5, 2.0, 3.0];
        let (mut x_bar, mut p_bar) = ([0.0; 4], [1.0; 3]);
        assert!(Flight.vector_jacobian_product(0.0, &x, &p, &v, &mut x_bar, &mut p_bar));
        let v = nalgebra::DVector::from_column_slice(&v);
        assert_eq!(x_bar.as_slice(), (d.x.transpose() * &v).as_slice());
        let p_expected = d.p.transpose() * &v;
        for j in 0..3 {
            assert_eq!(p_bar[j], 1.0 + p_expected[j]);
        }
    }

    /// Generic references for the hand-written pieces.
    struct FlightRef;
    impl FlowFn for FlightRef {
        fn rate<S: Scalar>(&self, _t: S, x: &[S], p: &[S], dxdt: &mut [S]) {
            dxdt[0] = x[2];
            dxdt[1] = x[3];
            dxdt[2] = S::from(0.0);
            dxdt[3] = -p[0];
        }
    }
    struct GroundRef;
    impl GuardFn for GroundRef {
        fn direction(&self) -> Direction {
            Direction::Falling
        }
        fn value<S: Scalar>(&self, _t: S, x: &[S], _p: &[S]) -> S {
            x[1]
        }
    }
    struct ImpactRef;
    impl ResetFn for ImpactRef {
        fn apply<S: Scalar>(&self, _t: S, x: &[S], p: &[S], after: &mut [S]) {
            after[0] = x[0];
            after[1] = x[1];
            after[2] = p[2] * x[2];
            after[3] = -p[1] * x[3];
        }
    }

    #[rstest]
    #[case(0.0, [0.0, 1.0, 1.0, 0.0], [9.81, 0.8, 0.7])]
    #[case(0.7, [0.3, 0.0, 0.9, -4.4], [9.81, 0.8, 0.7])]
    #[case(-1.3, [-2.0, 3.5, -0.4, 2.2], [1.6, 0.35, 0.95])]
    fn hand_partials_equal_autodiff(#[case] t: f64, #[case] x: [f64; 4], #[case] p: [f64; 3]) {
        let mut hand = FlowPartials::zeros(4, 3);
        let mut auto = FlowPartials::zeros(4, 3);
        Flight.partials(t, &x, &p, &mut hand);
        Autodiff(FlightRef).partials(t, &x, &p, &mut auto);
        assert_eq!(hand, auto);
        let (mut a, mut b) = ([0.0; 4], [0.0; 4]);
        Flight.rate(t, &x, &p, &mut a);
        Flow::rate(&Autodiff(FlightRef), t, &x, &p, &mut b);
        assert_eq!(a, b);

        let mut hand = GuardPartials::zeros(4, 3);
        let mut auto = GuardPartials::zeros(4, 3);
        Ground.partials(t, &x, &p, &mut hand);
        Autodiff(GroundRef).partials(t, &x, &p, &mut auto);
        assert_eq!(hand, auto);
        assert_eq!(
            Ground.value(t, &x, &p),
            Guard::value(&Autodiff(GroundRef), t, &x, &p)
        );
        assert_eq!(Ground.direction(), Guard::direction(&Autodiff(GroundRef)));

        let mut hand = ResetPartials::zeros(4, 3);
        let mut auto = ResetPartials::zeros(4, 3);
        Impact.partials(t, &x, &p, &mut hand);
        Autodiff(ImpactRef).partials(t, &x, &p, &mut auto);
        assert_eq!(hand, auto);
        Impact.apply(t, &x, &p, &mut a);
        Reset::apply(&Autodiff(ImpactRef), t, &x, &p, &mut b);
        assert_eq!(a, b);
    }

    #[test]
    fn impact_scales_velocities() {
        let mut after = [0.0; 4];
        Impact.apply(0.0, &[0.5, 0.0, 2.0, -3.0], &[9.81, 0.8, 0.7], &mut after);
        assert_eq!(after, [0.5, 0.0, 0.7 * 2.0, 0.8 * 3.0]);
    }
}
