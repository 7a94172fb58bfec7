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
    Direction, Flow, FlowPartials, FromMode, Guard, GuardPartials, Reset, ResetPartials, Support,
    Tangent, ToMode,
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

    /// `f_x dx + f_p dp = (dvx, dvy, 0, -dg)` along a tangent, without
    /// forming the partials: the rows of `x`, `y` copy those of `vx`, `vy`,
    /// only `g` moves the flow, and `dt` plays no part (the flow is
    /// autonomous).
    #[inline]
    fn jacobian_vector_product(
        &self,
        _t: f64,
        _x: &[f64],
        _p: &[f64],
        tangent: Tangent<'_>,
        out: &mut [f64],
    ) -> bool {
        let dx = tangent.x;
        out[0] = dx[2];
        out[1] = dx[3];
        out[2] = 0.0;
        out[3] = -tangent.param.entry(0);
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

    /// The guard reads `y` alone: locating an impact interpolates that
    /// entry only.
    fn support(&self) -> Option<Support<'_>> {
        Some(Support {
            states: &[1],
            params: &[],
        })
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

    /// `r_x dx + r_p dp = (dx, dy, mu dvx + vx dmu, -e dvy - vy de)` along a
    /// tangent (`r_t = 0`), without forming the partials.
    #[inline]
    fn jacobian_vector_product(
        &self,
        _t: f64,
        x: &[f64],
        p: &[f64],
        tangent: Tangent<'_>,
        out: &mut [f64],
    ) -> bool {
        let (dx, dp) = (tangent.x, tangent.param);
        out[0] = dx[0];
        out[1] = dx[1];
        out[2] = p[2] * dx[2] + x[2] * dp.entry(2);
        out[3] = -p[1] * dx[3] - x[3] * dp.entry(1);
        true
    }

    /// `r_x^T v` and `r_p^T v` without forming the partials.
    #[inline]
    fn vector_jacobian_product(
        &self,
        _t: f64,
        x: &[f64],
        p: &[f64],
        v: &[f64],
        x_bar: &mut [f64],
        p_bar: &mut [f64],
    ) -> bool {
        x_bar[0] = v[0];
        x_bar[1] = v[1];
        x_bar[2] = p[2] * v[2];
        x_bar[3] = -p[1] * v[3];
        p_bar[1] -= x[3] * v[3];
        p_bar[2] += x[2] * v[2];
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ia_core::ParamDirection;
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

    /// The flow's and the reset's Jacobian-vector products (no, a unit and
    /// a general parameter direction) and the
    /// reset's vector-Jacobian product equal the products formed from the
    /// dense partials (themselves checked against autodiff below, and
    /// against finite differences in ia-verify), to the bit: each entry is
    /// one product or one sum of two. Closed form: the flow's product is
    /// `(dvx, dvy, 0, -dg)`.
    #[rstest]
    #[case([0.3, 0.7, -1.1, 2.3], [9.81, 0.8, 0.7])]
    #[case([-2.0, 0.0, 0.4, -4.4], [1.6, 0.35, 0.95])]
    fn fast_products_match_partials(#[case] x: [f64; 4], #[case] p: [f64; 3]) {
        use nalgebra::DVector;
        let dx = [0.5, -1.5, 2.0, 3.25];
        let dp = [-0.75, 1.25, 0.6];
        let mut f = FlowPartials::zeros(4, 3);
        Flight.partials(0.4, &x, &p, &mut f);
        let mut r = ResetPartials::zeros(4, 3);
        Impact.partials(0.4, &x, &p, &mut r);
        let dxv = DVector::from_column_slice(&dx);
        let mut out = [f64::NAN; 4];
        let unit = |j: usize| DVector::from_fn(3, |i, _| if i == j { 1.0 } else { 0.0 });
        let directions = [
            (ParamDirection::Zero, DVector::zeros(3)),
            (ParamDirection::Unit(0), unit(0)),
            (ParamDirection::Unit(1), unit(1)),
            (ParamDirection::Unit(2), unit(2)),
            (ParamDirection::Along(&dp), DVector::from_column_slice(&dp)),
        ];
        for (param, dpv) in directions {
            let tangent = Tangent {
                t: 0.7,
                x: &dx,
                param,
            };
            assert!(Flight.jacobian_vector_product(0.4, &x, &p, tangent, &mut out));
            let want = &f.x * &dxv + &f.p * &dpv + &f.t * 0.7;
            assert_eq!(out.as_slice(), want.as_slice(), "flow, {param:?}");
            assert_eq!(out, [dx[2], dx[3], 0.0, -dpv[0]]);
            assert!(Impact.jacobian_vector_product(0.4, &x, &p, tangent, &mut out));
            let want = &r.x * &dxv + &r.p * &dpv + &r.t * 0.7;
            assert_eq!(out.as_slice(), want.as_slice(), "reset, {param:?}");
        }
        let v = [0.5, -1.5, 2.0, 3.0];
        let (mut x_bar, mut p_bar) = ([f64::NAN; 4], [1.0, -2.0, 0.5]);
        assert!(Impact.vector_jacobian_product(0.4, &x, &p, &v, &mut x_bar, &mut p_bar));
        let v = DVector::from_column_slice(&v);
        assert_eq!(x_bar.as_slice(), (r.x.transpose() * &v).as_slice());
        let want = DVector::from_column_slice(&[1.0, -2.0, 0.5]) + r.p.transpose() * &v;
        assert_eq!(p_bar.as_slice(), want.as_slice());
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
