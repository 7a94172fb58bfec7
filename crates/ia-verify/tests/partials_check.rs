//! The partials check: a model with one sign flipped in a hand-written
//! partial is caught, and the entry is named; every catalogue model passes.

use ia_core::{
    Autodiff, Direction, Flow, FlowFn, FlowPartials, FromMode, Guard, GuardFn, GuardPartials,
    HybridSystem, Reset, ResetFn, ResetPartials, Scalar, ToMode,
};
use ia_verify::partials::{
    check_partials, check_partials_against, sample_points, sample_points_around, PartialsPoint,
};
use rstest::rstest;

/// Which hand-written entry carries a wrong sign.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Flip {
    None,
    FlowGravity,
    FlowPosition,
    GuardHeight,
    ResetRestitution,
    ResetFriction,
}

impl Flip {
    fn sign(self, this: Flip) -> f64 {
        if self == this {
            -1.0
        } else {
            1.0
        }
    }
}

/// A planar ball on flat ground with hand-written partials (the user's
/// model): states (x, y, vx, vy), parameters (g, e, mu).
struct Flight(Flip);
impl Flow for Flight {
    fn rate(&self, _t: f64, x: &[f64], p: &[f64], d: &mut [f64]) {
        d[0] = x[2];
        d[1] = x[3];
        d[2] = 0.0;
        d[3] = -p[0];
    }
    fn partials(&self, _t: f64, _x: &[f64], _p: &[f64], out: &mut FlowPartials) {
        out.x[(0, 2)] = 1.0;
        out.x[(1, 3)] = self.0.sign(Flip::FlowPosition);
        out.p[(3, 0)] = -self.0.sign(Flip::FlowGravity);
    }
}

struct Ground(Flip);
impl Guard for Ground {
    fn direction(&self) -> Direction {
        Direction::Falling
    }
    fn value(&self, _t: f64, x: &[f64], _p: &[f64]) -> f64 {
        x[1]
    }
    fn partials(&self, _t: f64, _x: &[f64], _p: &[f64], out: &mut GuardPartials) {
        out.x[1] = self.0.sign(Flip::GuardHeight);
    }
}

struct Impact(Flip);
impl Reset for Impact {
    fn apply(&self, _t: f64, x: &[f64], p: &[f64], a: &mut [f64]) {
        a[0] = x[0];
        a[1] = x[1];
        a[2] = p[2] * x[2];
        a[3] = -p[1] * x[3];
    }
    fn partials(&self, _t: f64, x: &[f64], p: &[f64], out: &mut ResetPartials) {
        out.x[(0, 0)] = 1.0;
        out.x[(1, 1)] = 1.0;
        out.x[(2, 2)] = p[2];
        out.x[(3, 3)] = -p[1] * self.0.sign(Flip::ResetRestitution);
        out.p[(2, 2)] = x[2] * self.0.sign(Flip::ResetFriction);
        out.p[(3, 1)] = -x[3];
    }
}

/// The same model written once, generic: exact partials by dual numbers.
struct FlightFn;
impl FlowFn for FlightFn {
    fn rate<S: Scalar>(&self, _t: S, x: &[S], p: &[S], d: &mut [S]) {
        d[0] = x[2];
        d[1] = x[3];
        d[2] = S::from(0.0);
        d[3] = -p[0];
    }
}
struct GroundFn;
impl GuardFn for GroundFn {
    fn direction(&self) -> Direction {
        Direction::Falling
    }
    fn value<S: Scalar>(&self, _t: S, x: &[S], _p: &[S]) -> S {
        x[1]
    }
}
struct ImpactFn;
impl ResetFn for ImpactFn {
    fn apply<S: Scalar>(&self, _t: S, x: &[S], p: &[S], a: &mut [S]) {
        a[0] = x[0];
        a[1] = x[1];
        a[2] = p[2] * x[2];
        a[3] = -p[1] * x[3];
    }
}

const STATES: [&str; 4] = ["x", "y", "vx", "vy"];
const PARAMS: [&str; 3] = ["g", "e", "mu"];

fn hand_written(flip: Flip) -> HybridSystem {
    HybridSystem::builder(&STATES, &PARAMS)
        .mode("flight", Flight(flip))
        .transition(
            "impact",
            FromMode("flight"),
            ToMode("flight"),
            Ground(flip),
            Impact(flip),
        )
        .build()
        .unwrap()
}

fn generic() -> HybridSystem {
    HybridSystem::builder(&STATES, &PARAMS)
        .mode("flight", Autodiff(FlightFn))
        .transition(
            "impact",
            FromMode("flight"),
            ToMode("flight"),
            Autodiff(GroundFn),
            Autodiff(ImpactFn),
        )
        .build()
        .unwrap()
}

fn points() -> Vec<PartialsPoint> {
    sample_points_around(1, &[0.0, 1.0, 1.0, -2.0], &[9.81, 0.8, 0.7], 2.0, 3, 11)
}

#[rstest]
#[case(Flip::FlowGravity, "flow 'flight' d f[vy]/d param.g", 1.0, -1.0)]
#[case(Flip::FlowPosition, "flow 'flight' d f[y]/d x[vy]", -1.0, 1.0)]
#[case(Flip::GuardHeight, "guard 'impact' d g/d x[y]", -1.0, 1.0)]
#[case(
    Flip::ResetRestitution,
    "reset 'impact' d r[vy]/d x[vy]",
    f64::NAN,
    f64::NAN
)]
#[case(
    Flip::ResetFriction,
    "reset 'impact' d r[vx]/d param.mu",
    f64::NAN,
    f64::NAN
)]
fn one_flipped_sign_is_caught_and_named(
    #[case] flip: Flip,
    #[case] entry: &str,
    #[case] hand: f64,
    #[case] reference: f64,
) {
    let system = hand_written(flip);
    let points = points();
    // Against finite differences...
    let mismatch = check_partials(&system, &points, 1e-6).unwrap_err();
    assert_eq!(mismatch.worst.name(), entry, "{mismatch}");
    let text = mismatch.to_string();
    assert!(text.starts_with(entry), "{text}");
    assert!(
        text.contains("hand") && text.contains("vs reference"),
        "{text}"
    );
    assert!(
        mismatch.failures.iter().all(|f| f.name() == entry),
        "{text}"
    );
    assert_eq!(mismatch.failures.len(), points.len(), "{text}");
    // ...and against the dual-number reference.
    let mismatch = check_partials_against(&system, &generic(), &points, 1e-12).unwrap_err();
    assert_eq!(mismatch.worst.name(), entry, "{mismatch}");
    assert_eq!(mismatch.worst.estimate, 0.0);
    if !hand.is_nan() {
        assert_eq!(
            (mismatch.worst.hand, mismatch.worst.reference),
            (hand, reference)
        );
        assert!(
            mismatch.to_string().starts_with(&format!(
                "{entry}: hand {hand:?} vs reference {reference:?}"
            )),
            "{mismatch}"
        );
    }
}

#[test]
fn correct_hand_written_partials_pass() {
    let system = hand_written(Flip::None);
    let points = points();
    let report = check_partials(&system, &points, 1e-6).unwrap();
    // 3 points x (flow 4x(4+3+1) + guard 1x8 + reset 4x8).
    assert_eq!(report.entries_checked, 3 * (32 + 8 + 32));
    assert_eq!(report.points, 3);
    let worst = report.worst.unwrap();
    assert!(worst.difference < 1e-9, "{worst}");
    let exact = check_partials_against(&system, &generic(), &points, 1e-14).unwrap();
    assert_eq!(exact.worst.unwrap().difference, 0.0);
}

#[rstest]
fn every_catalogue_model_passes(
    #[values(
        "ball1d",
        "ball2d-flat",
        "ball2d-bowl",
        "two-ball",
        "lif",
        "thermostat",
        "impact-pendulum",
        "rimless-wheel",
        "slip-hopper"
    )]
    name: &str,
) {
    let model = ia_models::by_name(name).unwrap();
    let points = sample_points(model.as_ref(), 4, 2024);
    assert_eq!(points.len(), 4 * model.spec().modes.len());
    let report =
        check_partials(&model.system(), &points, 1e-6).unwrap_or_else(|m| panic!("{name}: {m}"));
    assert!(report.entries_checked > 0);
}

#[test]
fn sample_points_are_reproducible_and_seeded() {
    let model = ia_models::by_name("slip-hopper").unwrap();
    let a = sample_points(model.as_ref(), 3, 5);
    let b = sample_points(model.as_ref(), 3, 5);
    let c = sample_points(model.as_ref(), 3, 6);
    assert_eq!(a, b);
    assert_ne!(a, c);
    assert_eq!(a.iter().filter(|p| p.mode == 1).count(), 3);
    let spec = model.spec();
    for p in &a {
        assert!(p.t >= 0.0 && p.t <= spec.t_end);
        for (v, d) in p.x.iter().zip(spec.default_state()) {
            assert!((v - d).abs() <= 0.2 * d.abs().max(0.5) + 1e-15);
        }
    }
}
