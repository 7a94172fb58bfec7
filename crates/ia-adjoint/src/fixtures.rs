//! The test fixture of the crate's unit tests: a ball dropped from rest
//! (h0, v0 = 0) under gravity g, bouncing with restitution e. Closed forms,
//! derived by hand: the first impact at `t1 = sqrt(2 h0 / g)`, the second at
//! `t2 = t1 (1 + 2 e)`; between them `h(T) = e g t1 (T - t1) - g/2 (T - t1)^2`.
//! And a stiff flow with threshold doses ([`stiff_threshold`]), for the
//! implicit methods and the explicit ones' stiff taped runs.

use ia_core::{
    Autodiff, Direction, Flow, FlowFn, FromMode, GuardFn, HybridSystem, ResetFn, Scalar, ToMode,
};
use ia_events::{Problem, SolverChoice};

pub(crate) const G: f64 = 9.81;
pub(crate) const E: f64 = 0.8;
pub(crate) const H0: f64 = 1.0;
/// A time between the first and the second impact.
pub(crate) const T: f64 = 0.8;

/// The ball's flow: `h' = v`, `v' = -g`.
pub(crate) struct Fall;
impl FlowFn for Fall {
    fn rate<S: Scalar>(&self, _t: S, x: &[S], p: &[S], d: &mut [S]) {
        d[0] = x[1];
        d[1] = -p[0];
    }
}
struct Floor;
impl GuardFn for Floor {
    fn direction(&self) -> Direction {
        Direction::Falling
    }
    fn value<S: Scalar>(&self, _t: S, x: &[S], _p: &[S]) -> S {
        x[0]
    }
}
struct Bounce;
impl ResetFn for Bounce {
    fn apply<S: Scalar>(&self, _t: S, x: &[S], p: &[S], a: &mut [S]) {
        a[0] = x[0];
        a[1] = -p[1] * x[1];
    }
}

/// The ball: states `h, v`, parameters `g, e`.
pub(crate) fn ball() -> HybridSystem {
    ball_with(Autodiff(Fall))
}

/// [`ball`] with `flow` (an equal flow with other products).
pub(crate) fn ball_with(flow: impl Flow + 'static) -> HybridSystem {
    HybridSystem::builder(&["h", "v"], &["g", "e"])
        .mode("flight", flow)
        .transition(
            "bounce",
            FromMode("flight"),
            ToMode("flight"),
            Autodiff(Floor),
            Autodiff(Bounce),
        )
        .build()
        .unwrap()
}

/// The run of [`ball`] from `(H0, 0)` to `T`.
pub(crate) fn problem(system: &HybridSystem) -> Problem<'_> {
    Problem::new(system, vec![H0, 0.0], vec![G, E], T).with_solver(SolverChoice::dopri5(1e-12))
}

pub(crate) fn t1() -> f64 {
    (2.0 * H0 / G).sqrt()
}

/// `d h(T) / d (h0, v0, g, e)` from the closed form, derived by hand:
/// with `w = sqrt(v0^2 + 2 g h0)` the impact speed and
/// `t1 = (v0 + w) / g`, `h(T) = e w (T - t1) - g (T - t1)^2 / 2`, so
/// `dh = e (T - t1) dw + (g (T - t1) - e w) dt1 + w (T - t1) de
/// - (T - t1)^2 / 2 dg`, at v0 = 0 where `dw = (g dh0 + h0 dg) / w` and
/// `dt1 = dh0 / w + dv0 / g - t1 / (2 g) dg`.
pub(crate) fn dh_final() -> [f64; 4] {
    let t1 = t1();
    let (w, s) = (G * t1, T - t1);
    let dh_dw = E * s;
    let dh_dt1 = G * s - E * w;
    [
        dh_dw * G / w + dh_dt1 / w,
        dh_dt1 / G,
        dh_dw * H0 / w - dh_dt1 * t1 / (2.0 * G) - s * s / 2.0,
        w * s,
    ]
}

/// A stiff nonlinear flow: `x' = -k (x - y^2)` (fast, `k` about 1e3),
/// `y' = -a y + 0.1 x` (slow).
struct Stiff;
impl FlowFn for Stiff {
    fn rate<S: Scalar>(&self, _t: S, x: &[S], p: &[S], d: &mut [S]) {
        d[0] = -p[0] * (x[0] - x[1] * x[1]);
        d[1] = -p[1] * x[1] + x[0] * 0.1;
    }
}
/// `y` falls to the threshold `c`...
struct Threshold;
impl GuardFn for Threshold {
    fn direction(&self) -> Direction {
        Direction::Falling
    }
    fn value<S: Scalar>(&self, _t: S, x: &[S], p: &[S]) -> S {
        x[1] - p[2]
    }
}
/// ...and is topped up by `d (1 + x)`.
struct Dose;
impl ResetFn for Dose {
    fn apply<S: Scalar>(&self, _t: S, x: &[S], p: &[S], a: &mut [S]) {
        a[0] = x[0];
        a[1] = x[1] + p[3] * (x[0] + 1.0);
    }
}

/// The stiff flow [`Stiff`] with the threshold dose [`Threshold`], [`Dose`]:
/// states `x, y`, parameters `k, a, c, d`.
pub(crate) fn stiff_threshold() -> HybridSystem {
    HybridSystem::builder(&["x", "y"], &["k", "a", "c", "d"])
        .mode("on", Autodiff(Stiff))
        .transition(
            "dose",
            FromMode("on"),
            ToMode("on"),
            Autodiff(Threshold),
            Autodiff(Dose),
        )
        .build()
        .unwrap()
}
