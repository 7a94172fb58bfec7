//! The bumpy-ground guard and reset's hand-written partials against
//! `ia_core::Autodiff` of a generic implementation, and the scaling case's
//! adjoint against its forward sensitivities.

use ia_adjoint::{gradient, jacobian, FinalComponent, Method};
use ia_benches::bumpy::{self, BumpyGround, BumpyImpact, FIRST_BUMP};
use ia_core::{
    Autodiff, Direction, Guard, GuardFn, GuardPartials, Reset, ResetFn, ResetPartials, Scalar,
};

fn ground<S: Scalar>(x: S, a: &[S]) -> (S, S) {
    let mut h = S::from(0.0);
    let mut dh = S::from(0.0);
    for (i, &ak) in a.iter().enumerate() {
        let k = (i + 1) as f64;
        let kx = x * k;
        h += ak * kx.sin() / (k * k);
        dh += ak * kx.cos() / k;
    }
    (h, dh)
}

struct GroundRef;
impl GuardFn for GroundRef {
    fn direction(&self) -> Direction {
        Direction::Falling
    }
    fn value<S: Scalar>(&self, _t: S, x: &[S], p: &[S]) -> S {
        x[1] - ground(x[0], &p[FIRST_BUMP..]).0
    }
}

struct ImpactRef;
impl ResetFn for ImpactRef {
    fn apply<S: Scalar>(&self, _t: S, x: &[S], p: &[S], after: &mut [S]) {
        let (_, s) = ground(x[0], &p[FIRST_BUMP..]);
        let (e, mu) = (p[1], p[2]);
        let c = (x[3] - s * x[2]) / (s * s + 1.0);
        after[0] = x[0];
        after[1] = x[1];
        after[2] = mu * x[2] + (mu + e) * c * s;
        after[3] = mu * x[3] - (mu + e) * c;
    }
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() <= 1e-12 * (1.0 + a.abs().max(b.abs()))
}

#[test]
fn hand_partials_equal_autodiff() {
    let n_bumps = 7;
    let p = bumpy::params(n_bumps);
    let np = p.len();
    for x in [[0.3, 0.02, 0.9, -4.4], [1.7, -0.1, -0.4, -2.2]] {
        let mut hand = GuardPartials::zeros(4, np);
        let mut auto = GuardPartials::zeros(4, np);
        BumpyGround.partials(0.0, &x, &p, &mut hand);
        Autodiff(GroundRef).partials(0.0, &x, &p, &mut auto);
        assert!(close(
            BumpyGround.value(0.0, &x, &p),
            Guard::value(&Autodiff(GroundRef), 0.0, &x, &p)
        ));
        assert!(hand.x.iter().zip(auto.x.iter()).all(|(a, b)| close(*a, *b)));
        assert!(hand.p.iter().zip(auto.p.iter()).all(|(a, b)| close(*a, *b)));

        let mut hand = ResetPartials::zeros(4, np);
        let mut auto = ResetPartials::zeros(4, np);
        BumpyImpact.partials(0.0, &x, &p, &mut hand);
        Autodiff(ImpactRef).partials(0.0, &x, &p, &mut auto);
        assert!(
            hand.x.iter().zip(auto.x.iter()).all(|(a, b)| close(*a, *b)),
            "{} vs {}",
            hand.x,
            auto.x
        );
        assert!(
            hand.p.iter().zip(auto.p.iter()).all(|(a, b)| close(*a, *b)),
            "{} vs {}",
            hand.p,
            auto.p
        );
        let (mut a, mut b) = ([0.0; 4], [0.0; 4]);
        BumpyImpact.apply(0.0, &x, &p, &mut a);
        Reset::apply(&Autodiff(ImpactRef), 0.0, &x, &p, &mut b);
        assert!(a.iter().zip(&b).all(|(u, v)| close(*u, *v)));
    }
}

#[test]
fn scaling_case_adjoint_matches_forward() {
    let system = bumpy::system(20);
    let problem = bumpy::problem(&system, 1e-10);
    let grad = gradient(&problem, &FinalComponent(0)).unwrap();
    let sens = jacobian(&problem, Method::ForwardOnStateSteps).unwrap();
    assert!(grad.trajectory.events.len() >= 2);
    for (j, a) in grad.concatenated().iter().enumerate() {
        let f = sens.final_jacobian[(0, j)];
        assert!((a - f).abs() <= 1e-9 * (1.0 + f.abs()), "{j}: {a} vs {f}");
    }
}
