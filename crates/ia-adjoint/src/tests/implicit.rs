//! The implicit methods' derivatives: against the closed form of the ball,
//! and forward against adjoint on the same steps through several events of
//! a stiff nonlinear flow with threshold resets.

use crate::fixtures::{ball, dh_final, problem, stiff_threshold};
use crate::jacobian::jacobian;
use crate::results::Method;
use ia_core::{
    Autodiff, Direction, FlowFn, FromMode, GuardFn, HybridSystem, ResetFn, Scalar, ToMode,
};
use ia_events::{Problem, SolverChoice};
use rstest::rstest;

fn implicit(method: &str, tol: f64) -> SolverChoice {
    let (rtol, atol, max_step) = (tol, tol, None);
    match method {
        "trbdf2" => SolverChoice::Trbdf2 {
            rtol,
            atol,
            max_step,
        },
        "kvaerno3" => SolverChoice::Kvaerno3 {
            rtol,
            atol,
            max_step,
        },
        _ => SolverChoice::Kvaerno5 {
            rtol,
            atol,
            max_step,
        },
    }
}

#[rstest]
fn every_method_matches_the_closed_form_of_the_ball(
    #[values("trbdf2", "kvaerno3", "kvaerno5")] name: &str,
    #[values(Method::Forward, Method::ForwardOnStateSteps, Method::Adjoint)] method: Method,
) {
    // Reference: the closed form of the bouncing ball (fixtures::dh_final).
    // Its flow is linear in time, so each method's steps are exact up to
    // the stage solves, and the derivatives match to the event location's
    // accuracy.
    let system = ball();
    let run = problem(&system).with_solver(implicit(name, 1e-10));
    let sens = jacobian(&run, method).unwrap();
    for (j, want) in dh_final().iter().enumerate() {
        let got = sens.final_jacobian[(0, j)];
        assert!(
            (got - want).abs() < 1e-7,
            "{name} {method:?} dh(T)/d{}: {got} vs closed form {want}",
            sens.wrt[j]
        );
    }
}

#[rstest]
fn forward_and_adjoint_agree_on_the_same_steps_through_several_events(
    #[values("trbdf2", "kvaerno3", "kvaerno5")] name: &str,
) {
    // Reference: forward sensitivities carried through the same steps
    // (ForwardOnStateSteps); both differentiate the same stage equations,
    // solved exactly, so they agree to rounding.
    let system = stiff_threshold();
    let run = Problem::new(&system, vec![0.5, 1.0], vec![1e3, 1.0, 0.5, 0.6], 3.0)
        .with_solver(implicit(name, 1e-8));
    let forward = jacobian(&run, Method::ForwardOnStateSteps).unwrap();
    let adjoint = jacobian(&run, Method::Adjoint).unwrap();
    assert!(
        forward.trajectory.events.len() >= 3,
        "{} events",
        forward.trajectory.events.len()
    );
    let scale = forward.final_jacobian.amax();
    for (f, a) in forward
        .final_jacobian
        .iter()
        .zip(adjoint.final_jacobian.iter())
    {
        assert!(
            (f - a).abs() <= 1e-10 * scale,
            "{name}: forward {f} vs adjoint {a}"
        );
    }
}

#[rstest]
fn the_derivatives_match_finite_differences_of_tight_runs(
    #[values("trbdf2", "kvaerno5")] name: &str,
) {
    // Reference: central differences of the final state in each parameter,
    // from runs at a tight tolerance (DOP853 at 1e-12, independent of the
    // method under test); the derivative agrees to the method's accuracy.
    let system = stiff_threshold();
    let params = vec![1e3, 1.0, 0.5, 0.6];
    let final_state = |p: &[f64]| {
        let run = Problem::new(&system, vec![0.5, 1.0], p.to_vec(), 3.0).with_solver(
            SolverChoice::Dop853 {
                rtol: 1e-12,
                atol: 1e-12,
                max_step: None,
            },
        );
        ia_events::simulate(&run).unwrap().final_state
    };
    let run = Problem::new(&system, vec![0.5, 1.0], params.clone(), 3.0)
        .with_solver(implicit(name, 1e-9));
    let sens = jacobian(&run, Method::Adjoint).unwrap();
    for j in 1..4 {
        let step = 1e-5 * params[j].abs();
        let (mut up, mut down) = (params.clone(), params.clone());
        up[j] += step;
        down[j] -= step;
        let (fu, fd) = (final_state(&up), final_state(&down));
        for i in 0..2 {
            let fd_derivative = (fu[i] - fd[i]) / (2.0 * step);
            let got = sens.final_jacobian[(i, 2 + j)];
            assert!(
                (got - fd_derivative).abs() < 1e-4 * fd_derivative.abs().max(1.0),
                "{name} d x{i} / d p{j}: {got} vs {fd_derivative}"
            );
        }
    }
}

#[rstest]
fn checkpointed_gradients_agree_with_the_full_tape(#[values("trbdf2", "kvaerno5")] name: &str) {
    // Reference: the gradient from the full tape, which keeps every step's
    // stages. With three checkpoints the backward pass carries the states
    // between kept ones with the stages solved again by full Newton, which
    // agree with the taped run's (polished by simplified Newton) to
    // rounding: the same gradient to 1e-10 of its largest entry.
    use crate::gradient::gradient_with;
    use crate::loss::FinalComponent;
    use crate::tape::AdjointOptions;
    let system = stiff_threshold();
    let run = Problem::new(&system, vec![0.5, 1.0], vec![1e3, 1.0, 0.5, 0.6], 3.0)
        .with_solver(implicit(name, 1e-8));
    let full = gradient_with(&run, &FinalComponent(1), &AdjointOptions::default()).unwrap();
    let lean = gradient_with(
        &run,
        &FinalComponent(1),
        &AdjointOptions {
            checkpoints: Some(3),
        },
    )
    .unwrap();
    let (lean, full_values) = (lean.concatenated(), full.concatenated());
    let scale = full_values.iter().fold(0.0f64, |m, v| m.max(v.abs()));
    for (a, b) in lean.iter().zip(&full_values) {
        assert!((a - b).abs() <= 1e-10 * scale, "{name}: {a} vs {b}");
    }
    assert!(
        gradient_with(
            &run,
            &FinalComponent(1),
            &AdjointOptions {
                checkpoints: Some(3)
            }
        )
        .unwrap()
        .tape_floats
            < full.tape_floats
    );
}

/// `x' = 1e31 + x^2`: no implicit stage has a solution at any
/// representable step from `x = 0` (see the stepper's unit test).
struct NoStageSolution;
impl FlowFn for NoStageSolution {
    fn rate<S: Scalar>(&self, _t: S, x: &[S], _p: &[S], d: &mut [S]) {
        d[0] = x[0] * x[0] + 1e31;
        d[1] = x[1] * 0.0;
    }
}

#[test]
fn a_newton_failure_names_the_time_and_the_mode() {
    let system = HybridSystem::builder(&["x", "y"], &["k", "a", "c", "d"])
        .mode("blowup", Autodiff(NoStageSolution))
        .build()
        .unwrap();
    let run = Problem::new(&system, vec![0.0, 1.0], vec![1.0; 4], 1.0)
        .with_solver(implicit("kvaerno3", 1e-8));
    let err = ia_events::simulate(&run).unwrap_err();
    assert_eq!(err.kind(), "newton_failure", "{err}");
    let message = err.to_string();
    assert!(
        message.contains("t = 0") && message.contains("mode 'blowup'"),
        "{message}"
    );
}

#[test]
fn the_backward_buffers_follow_a_system_of_other_dimensions() {
    // Reference: each system's adjoint in a thread that has not run the
    // other (the thread's workspace keeps the backward buffers between
    // calls: the ball has two parameters, the stiff flow four).
    let (ball, stiff) = (ball(), stiff_threshold());
    let ball_run = problem(&ball).with_solver(implicit("kvaerno5", 1e-10));
    let stiff_run = Problem::new(&stiff, vec![0.5, 1.0], vec![1e3, 1.0, 0.5, 0.6], 1.0)
        .with_solver(implicit("kvaerno5", 1e-8));
    let alone = std::thread::scope(|s| {
        s.spawn(|| {
            jacobian(&stiff_run, Method::Adjoint)
                .unwrap()
                .final_jacobian
        })
        .join()
        .unwrap()
    });
    jacobian(&ball_run, Method::Adjoint).unwrap();
    let after = jacobian(&stiff_run, Method::Adjoint)
        .unwrap()
        .final_jacobian;
    assert_eq!(after, alone);
}

#[rstest]
fn the_tape_keeps_each_steps_stages_solved_to_rounding(
    #[values("trbdf2", "kvaerno3", "kvaerno5")] name: &str,
) {
    // Reference: each kept step's stages solved again from its kept start
    // by full Newton to rounding (`solve_stages_exactly`, the Jacobian
    // re-evaluated at every iterate), independent of the simplified Newton
    // the taped run polished them with: the backward pass transposes the
    // kept ones, so they must be those stages to rounding.
    use crate::implicit::ImplicitBuffers;
    use crate::tape::{Tape, TapeEntry};
    let system = stiff_threshold();
    let params = vec![1e3, 1.0, 0.5, 0.6];
    let run = Problem::new(&system, vec![0.5, 1.0], params.clone(), 3.0)
        .with_solver(implicit(name, 1e-8));
    let mut tape = Tape::default();
    let trajectory =
        crate::gradient::run_on_taped_steps(&run, &mut tape, Tape::forget_run).unwrap();
    assert!(trajectory.events.len() >= 3);
    let tab = run.solver.implicit_method().unwrap();
    let (n, s) = (2, tab.stages());
    assert_eq!(tape.width, s * n, "{name}: the records carry the stages");
    let flow = &*system.modes()[0].flow;
    let mut buffers = ImplicitBuffers::default();
    let (mut states, mut rates) = (vec![0.0; s * n], vec![0.0; s * n]);
    let (mut step, mut worst) = (0, 0.0f64);
    for entry in &tape.entries {
        let TapeEntry::Step { t0, h } = entry.unpack() else {
            continue;
        };
        let kept = tape.kept_stages(step, n).expect("every step kept");
        buffers.solve_stages(
            tab,
            (flow, &params),
            (t0, h, &kept[..n]),
            &mut states,
            &mut rates,
        );
        buffers.check(t0, "on", h).unwrap();
        for (a, b) in kept.iter().zip(&states) {
            worst = worst.max((a - b).abs() / b.abs().max(1.0));
        }
        step += 1;
    }
    assert!(step > 20, "{name}: {step} steps");
    assert!(worst <= 1e-13, "{name}: kept stages off by {worst:e}");
}

#[test]
fn without_derivative_probes_the_tape_still_keeps_the_stages() {
    // Without probes no sensitivities are carried in the taped run, yet it
    // solves its stages to rounding and keeps them; forward sensitivities
    // on the same steps (reference; they solve their stages to rounding
    // too, so the runs take the same steps) agree with the adjoint to 1e-10.
    use crate::tape::Tape;
    let system = stiff_threshold();
    let run = Problem::new(&system, vec![0.5, 1.0], vec![1e3, 1.0, 0.5, 0.6], 3.0)
        .with_solver(implicit("kvaerno5", 1e-8))
        .with_derivative_probes(Some(0));
    let mut tape = Tape::default();
    crate::gradient::run_on_taped_steps(&run, &mut tape, Tape::forget_run).unwrap();
    assert_eq!(tape.width, 2 * ia_events::implicit_rk::KVAERNO5.stages());
    assert!(tape.kept_stages(0, 2).is_some());
    let forward = jacobian(&run, Method::ForwardOnStateSteps).unwrap();
    let adjoint = jacobian(&run, Method::Adjoint).unwrap();
    let scale = forward.final_jacobian.amax();
    for (f, a) in forward
        .final_jacobian
        .iter()
        .zip(adjoint.final_jacobian.iter())
    {
        assert!((f - a).abs() <= 1e-10 * scale, "forward {f} vs adjoint {a}");
    }
}

/// A relay's plant in mode `on` (`input = true`: `x' = a (z - x)`,
/// `z' = lam (u - z)`) or `off` (`z' = -lam z / 2`): linear, a different
/// matrix in each mode.
struct Plant {
    input: bool,
}
impl FlowFn for Plant {
    fn rate<S: Scalar>(&self, _t: S, x: &[S], p: &[S], d: &mut [S]) {
        d[0] = p[0] * (x[1] - x[0]);
        d[1] = if self.input {
            p[1] * (p[2] - x[1])
        } else {
            -p[1] * x[1] * 0.5
        };
    }
}
/// [`Plant`] declaring its state Jacobian constant
/// ([`ia_core::Flow::state_jacobian_is_constant`]).
struct DeclaredPlant(Autodiff<Plant>);
impl ia_core::Flow for DeclaredPlant {
    fn rate(&self, t: f64, x: &[f64], p: &[f64], dxdt: &mut [f64]) {
        self.0.rate(t, x, p, dxdt);
    }
    fn partials(&self, t: f64, x: &[f64], p: &[f64], out: &mut ia_core::FlowPartials) {
        self.0.partials(t, x, p, out);
    }
    fn state_jacobian_is_constant(&self) -> bool {
        true
    }
}
/// `x` crosses the threshold `p[k]` (rising for `k = 3`, falling for 4).
struct Crosses(usize);
impl GuardFn for Crosses {
    fn direction(&self) -> Direction {
        if self.0 == 3 {
            Direction::Rising
        } else {
            Direction::Falling
        }
    }
    fn value<S: Scalar>(&self, _t: S, x: &[S], p: &[S]) -> S {
        x[0] - p[self.0]
    }
}
/// No jump.
struct Keep;
impl ResetFn for Keep {
    fn apply<S: Scalar>(&self, _t: S, x: &[S], _p: &[S], a: &mut [S]) {
        a.copy_from_slice(x);
    }
}

#[rstest]
fn declared_constant_jacobians_keep_forward_and_adjoint_together_across_modes(
    #[values("trbdf2", "kvaerno3", "kvaerno5")] name: &str,
) {
    // Reference: forward sensitivities carried through the same steps
    // (ForwardOnStateSteps), which form the Jacobian their own way (the
    // stepper's Newton matrix at each step's `h gamma`), against the
    // adjoint, whose backward pass keeps each mode's constant Jacobian and
    // refactorises it per step size: a Jacobian kept across a switch to
    // the other mode's matrix would break the agreement.
    let system = HybridSystem::builder(&["x", "z"], &["a", "lam", "u", "hi", "lo"])
        .mode("on", DeclaredPlant(Autodiff(Plant { input: true })))
        .mode("off", DeclaredPlant(Autodiff(Plant { input: false })))
        .transition(
            "switch_off",
            FromMode("on"),
            ToMode("off"),
            Autodiff(Crosses(3)),
            Autodiff(Keep),
        )
        .transition(
            "switch_on",
            FromMode("off"),
            ToMode("on"),
            Autodiff(Crosses(4)),
            Autodiff(Keep),
        )
        .build()
        .unwrap();
    assert!(system.modes()[0].flow.state_jacobian_is_constant());
    let run = Problem::new(&system, vec![0.0, 0.0], vec![1.0, 1e3, 1.0, 0.6, 0.4], 4.8)
        .with_mode("on")
        .unwrap()
        .with_solver(implicit(name, 1e-8));
    let forward = jacobian(&run, Method::ForwardOnStateSteps).unwrap();
    let adjoint = jacobian(&run, Method::Adjoint).unwrap();
    assert!(
        forward.trajectory.events.len() >= 6,
        "{} events",
        forward.trajectory.events.len()
    );
    let scale = forward.final_jacobian.amax();
    for (f, a) in forward
        .final_jacobian
        .iter()
        .zip(adjoint.final_jacobian.iter())
    {
        assert!(
            (f - a).abs() <= 1e-10 * scale,
            "{name}: forward {f} vs adjoint {a}"
        );
    }
}
