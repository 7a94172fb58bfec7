//! The seam between the integrator and the sensitivities (issue 8):
//!
//! * every solver choice either transposes exactly (the adjoint equals
//!   forward sensitivities on the same steps to 1e-12 relative; reference:
//!   the other mode) or is refused with a reason;
//! * the adjoint's rank-one form of an event's jump (the reset's
//!   vector-Jacobian product plus `g_x (w . lambda - dL/dt*) / gdot`) equals
//!   the dense saltation formula `Xi^T lambda - dL/dt* g_x / gdot` on random
//!   systems (proptest; reference: the dense `Xi = r_x + w g_x^T / gdot`
//!   formed from the reset's full partials);
//! * an event's geometry is formed once, when it fires: forward
//!   sensitivities and the adjoint (forward pass and backward pass) add no
//!   evaluation of the guard's partials to those of a plain simulation
//!   (reference: the count of the plain simulation), and the geometry the
//!   integrator hands to its consumers is the one formed afresh from the
//!   recorded event (reference: `GeometryWorkspace::compute`).

use ia_adjoint::saltation::{EventAt, SaltationWorkspace};
use ia_adjoint::{jacobian, Method};
use ia_core::{
    Autodiff, Direction, FlowFn, FromMode, GuardFn, HybridSystem, ResetFn, Scalar, ToMode,
};
use ia_events::{OdeSolversMethod, SolverChoice};
use ia_verify::references::ReferenceRun;
use proptest::prelude::*;
use rstest::rstest;

#[rstest]
#[case::rk4(SolverChoice::Rk4 { dt: 1e-3 })]
#[case::dopri5(SolverChoice::dopri5(1e-10))]
#[case::dop853(SolverChoice::Dop853 { rtol: 1e-10, atol: 1e-10, max_step: None })]
#[case::ode_solvers_rk4(SolverChoice::OdeSolvers {
    integrator: OdeSolversMethod::Rk4, rtol: 1e-10, atol: 1e-10, macro_step: 1e-3 })]
#[case::ode_solvers_dopri5(SolverChoice::OdeSolvers {
    integrator: OdeSolversMethod::Dopri5, rtol: 1e-10, atol: 1e-10, macro_step: 0.1 })]
#[case::ode_solvers_dop853(SolverChoice::OdeSolvers {
    integrator: OdeSolversMethod::Dop853, rtol: 1e-10, atol: 1e-10, macro_step: 0.1 })]
fn every_solver_transposes_exactly_or_is_refused(#[case] solver: SolverChoice) {
    let run = ReferenceRun::load("ball2d_flat_a").unwrap();
    let problem = run.problem(solver.clone());
    match jacobian(&problem, Method::Adjoint) {
        Ok(adjoint) => {
            let forward = jacobian(&problem, Method::ForwardOnStateSteps).unwrap();
            let scale = forward.final_jacobian.amax().max(1.0);
            let worst = (&forward.final_jacobian - &adjoint.final_jacobian).amax() / scale;
            assert!(worst <= 1e-12, "{solver:?}: forward vs adjoint {worst:e}");
            for (f, a) in forward
                .event_time_gradients
                .row_iter()
                .zip(adjoint.event_time_gradients.row_iter())
            {
                for (x, y) in f.iter().zip(a) {
                    assert!((x - y).abs() <= 1e-12 * x.abs().max(1.0), "{solver:?}");
                }
            }
        }
        Err(err) => {
            assert_eq!(err.kind(), "unsupported", "{solver:?}: {err}");
            assert!(
                matches!(solver, SolverChoice::OdeSolvers { .. }),
                "a built-in method is refused: {err}"
            );
            assert!(
                err.to_string().contains("dopri5"),
                "the message says what to use: {err}"
            );
        }
    }
}

/// `f = A x + B p`, linear, with random coefficients.
struct Linear {
    a: Vec<Vec<f64>>,
    b: Vec<Vec<f64>>,
}
impl FlowFn for Linear {
    fn rate<S: Scalar>(&self, _t: S, x: &[S], p: &[S], d: &mut [S]) {
        for (i, di) in d.iter_mut().enumerate() {
            let mut v = S::from(0.0);
            for (j, &xj) in x.iter().enumerate() {
                v += xj * self.a[i][j];
            }
            for (k, &pk) in p.iter().enumerate() {
                v += pk * self.b[i][k];
            }
            *di = v;
        }
    }
}
/// `g = u . x + v . p + t`, either direction.
struct Plane {
    u: Vec<f64>,
    v: Vec<f64>,
}
impl GuardFn for Plane {
    fn direction(&self) -> Direction {
        Direction::Either
    }
    fn value<S: Scalar>(&self, t: S, x: &[S], p: &[S]) -> S {
        let mut g = t;
        for (xj, u) in x.iter().zip(&self.u) {
            g += *xj * *u;
        }
        for (pk, v) in p.iter().zip(&self.v) {
            g += *pk * *v;
        }
        g
    }
}
/// `r_i = sum_j m_ij x_j + p_0 x_i^2 / 2 + t d_i`: nonlinear in x and p,
/// with a time dependence.
struct Twist {
    m: Vec<Vec<f64>>,
    d: Vec<f64>,
}
impl ResetFn for Twist {
    fn apply<S: Scalar>(&self, t: S, x: &[S], p: &[S], a: &mut [S]) {
        for (i, ai) in a.iter_mut().enumerate() {
            let mut v = p[0] * x[i] * x[i] * 0.5 + t * self.d[i];
            for (j, &xj) in x.iter().enumerate() {
                v += xj * self.m[i][j];
            }
            *ai = v;
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn rank_one_jump_equals_the_dense_saltation(
        (n, np) in (2usize..6, 1usize..4),
        seed in prop::collection::vec(-1.0..1.0f64, 200),
        time_seed in -2.0..2.0f64,
        cascade in any::<bool>(),
    ) {
        let mut it = seed.into_iter().cycle();
        let mut take = |len: usize| (0..len).map(|_| it.next().unwrap()).collect::<Vec<f64>>();
        let a: Vec<Vec<f64>> = (0..n).map(|_| take(n)).collect();
        let b: Vec<Vec<f64>> = (0..n).map(|_| take(np)).collect();
        let m: Vec<Vec<f64>> = (0..n).map(|_| take(n)).collect();
        let (u, v, d) = (take(n), take(np), take(n));
        let x_minus = take(n);
        let p = take(np);
        let lambda = take(n);
        let names: Vec<String> = (0..n).map(|i| format!("x{i}")).collect();
        let params: Vec<String> = (0..np).map(|k| format!("p{k}")).collect();
        let names: Vec<&str> = names.iter().map(String::as_str).collect();
        let params: Vec<&str> = params.iter().map(String::as_str).collect();
        let system = HybridSystem::builder(&names, &params)
            .mode("q", Autodiff(Linear { a, b }))
            .transition("jump", FromMode("q"), ToMode("q"), Autodiff(Plane { u, v }), Autodiff(Twist { m, d }))
            .build()
            .unwrap();
        let t = 0.3;
        let mut x_plus = vec![0.0; n];
        system.transitions()[0].reset.apply(t, &x_minus, &p, &mut x_plus);
        let event = EventAt {
            transition: 0,
            time: t,
            state_before: &x_minus,
            state_after: &x_plus,
            cascade_of: cascade.then_some(0),
        };
        let mut ws = SaltationWorkspace::new(n, np);
        let dense = ws.compute_for(&system, &p, event).clone();
        prop_assume!(dense.guard_rate.abs() > 1e-3);
        // The rank-one form, from the products.
        let geometry = ws.geometry(&system, &p, event).clone();
        let (mut x_bar, mut p_bar) = (vec![0.0; n], vec![0.0; np]);
        ws.reset_transpose(&system, &p, event, &lambda, &mut x_bar, &mut p_bar);
        let w_lambda: f64 = geometry.time_shift.iter().zip(&lambda).map(|(w, l)| w * l).sum();
        if !cascade {
            let c = (w_lambda - time_seed) / geometry.guard_rate;
            for (xb, gx) in x_bar.iter_mut().zip(geometry.guard.x.iter()) {
                *xb += c * gx;
            }
            for (pb, gp) in p_bar.iter_mut().zip(geometry.guard.p.iter()) {
                *pb += c * gp;
            }
        }
        // The dense formula (for a cascade event: Xi = r_x, xi_p = r_p, no
        // time term of its own).
        let lam = nalgebra::DVector::from_column_slice(&lambda);
        let mut want_x = dense.xi.transpose() * &lam;
        let mut want_p = dense.xi_p.transpose() * &lam;
        if !cascade {
            want_x -= &dense.guard_x * (time_seed / dense.guard_rate);
            want_p -= &dense.guard_p * (time_seed / dense.guard_rate);
        }
        let scale = 1.0 + want_x.amax().max(want_p.amax());
        for (got, want) in x_bar.iter().zip(want_x.iter()).chain(p_bar.iter().zip(want_p.iter())) {
            prop_assert!((got - want).abs() <= 1e-12 * scale, "{got} vs {want}");
        }
    }
}

/// The ball's floor with a count of its partials' evaluations.
struct CountedFloor {
    partials: std::sync::Arc<std::sync::atomic::AtomicUsize>,
}

impl ia_core::Guard for CountedFloor {
    fn direction(&self) -> Direction {
        Direction::Falling
    }
    fn value(&self, _t: f64, x: &[f64], _p: &[f64]) -> f64 {
        x[0]
    }
    fn partials(&self, _t: f64, _x: &[f64], _p: &[f64], out: &mut ia_core::GuardPartials) {
        self.partials
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        out.x[0] = 1.0;
    }
}

struct Fall;
impl FlowFn for Fall {
    fn rate<S: Scalar>(&self, _t: S, x: &[S], p: &[S], d: &mut [S]) {
        d[0] = x[1];
        d[1] = -p[0];
    }
}

struct Bounce;
impl ResetFn for Bounce {
    fn apply<S: Scalar>(&self, _t: S, x: &[S], p: &[S], a: &mut [S]) {
        a[0] = x[0];
        a[1] = -p[1] * x[1];
    }
}

/// Records the geometry each event's consumers are handed.
#[derive(Default)]
struct Handed(Vec<ia_events::EventGeometry>);

impl ia_events::Observer for Handed {
    fn wants_event_geometry(&self) -> bool {
        true
    }
    fn event(
        &mut self,
        _run: ia_events::RunContext<'_>,
        jump: &ia_events::EventJump<'_>,
    ) -> Result<(), ia_core::HybridError> {
        self.0.push(jump.geometry.expect("asked for").clone());
        Ok(())
    }
}

#[test]
fn an_events_geometry_is_formed_once_when_it_fires() {
    use std::sync::atomic::{AtomicUsize, Ordering};
    let counter = std::sync::Arc::new(AtomicUsize::new(0));
    let system = HybridSystem::builder(&["h", "v"], &["g", "e"])
        .mode("air", Autodiff(Fall))
        .transition(
            "bounce",
            FromMode("air"),
            ToMode("air"),
            CountedFloor {
                partials: counter.clone(),
            },
            Autodiff(Bounce),
        )
        .build()
        .unwrap();
    let params = vec![9.81, 0.8];
    let problem = ia_events::Problem::new(&system, vec![1.0, 0.0], params.clone(), 2.0);
    let count = |run: &dyn Fn()| {
        let before = counter.load(Ordering::Relaxed);
        run();
        counter.load(Ordering::Relaxed) - before
    };
    let plain = count(&|| {
        ia_events::simulate(&problem).unwrap();
    });
    let trajectory = ia_events::simulate(&problem).unwrap();
    assert!(trajectory.events.len() >= 3, "a few impacts");
    assert!(plain > 0);
    for method in [
        Method::Forward,
        Method::ForwardOnStateSteps,
        Method::Adjoint,
    ] {
        let with_sensitivities = count(&|| {
            jacobian(&problem, method).unwrap();
        });
        assert_eq!(
            with_sensitivities, plain,
            "{method:?}: the sensitivities formed the guard's partials again"
        );
    }
    let mut handed = Handed::default();
    let run = ia_events::run(&problem, &mut ia_events::NoExtraState, &mut handed).unwrap();
    assert_eq!(handed.0.len(), run.events.len());
    let mut fresh = ia_events::GeometryWorkspace::new(2, 2);
    for (k, given) in handed.0.iter().enumerate() {
        let formed = fresh.compute(&system, &params, ia_events::EventAt::recorded(&run, k));
        assert_eq!(given.flow_before, formed.flow_before);
        assert_eq!(given.flow_after, formed.flow_after);
        assert_eq!(given.guard_rate, formed.guard_rate);
        assert_eq!(given.time_shift, formed.time_shift);
        assert_eq!(given.guard.x, formed.guard.x);
    }
}
