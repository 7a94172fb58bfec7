//! Unit tests of the entry points ([`jacobian`](crate::jacobian),
//! [`gradient`](crate::gradient) and their results) on the ball of
//! [`fixtures`](crate::fixtures), and of what they are made of where a test
//! reaches through several modules: the losses and the workspace.

mod implicit;
mod losses;
mod workspaces;

use crate::fixtures::{ball, dh_final, problem, t1, G};
use crate::gradient::{gradient, gradient_forward};
use crate::jacobian::{jacobian, jacobian_without_saltation, jacobian_wrt};
use crate::loss::{FinalComponent, LossSeeds};
use crate::results::Method;
use crate::saltation::SaltationWorkspace;
use ia_core::Trajectory;
use ia_core::{
    Autodiff, Direction, FlowFn, FromMode, GuardFn, HybridSystem, ResetFn, Scalar, ToMode,
};
use ia_events::Problem;
use ia_events::SolverChoice;
use rstest::rstest;

#[test]
fn forward_and_adjoint_jacobians_match_the_closed_form() {
    let system = ball();
    let expected = dh_final();
    for method in [
        Method::Forward,
        Method::ForwardOnStateSteps,
        Method::Adjoint,
    ] {
        let sens = jacobian(&problem(&system), method).unwrap();
        for (j, want) in expected.iter().enumerate() {
            let got = sens.final_jacobian[(0, j)];
            assert!(
                (got - want).abs() < 1e-8,
                "{method:?} dh(T)/d{}: {got} vs closed form {want}",
                sens.wrt[j]
            );
        }
    }
}

/// With fewer chosen columns than states, the rows are still the
/// states (they once came from the `initial.` columns, which a chosen
/// subset need not have). Reference: the full Jacobian of the same
/// method (the adjoint selects its columns; forward sensitivities on the
/// state's steps take the same steps).
#[rstest]
#[case(Method::Adjoint)]
#[case(Method::ForwardOnStateSteps)]
fn chosen_columns_keep_the_state_rows(#[case] method: Method) {
    let system = ball();
    let full = jacobian(&problem(&system), method).unwrap();
    let chosen = jacobian_wrt(&problem(&system), method, &["param.e"]).unwrap();
    assert_eq!(chosen.state_names(), ["h", "v"]);
    for state in ["h", "v"] {
        let got = chosen.final_derivative(state, "param.e").unwrap();
        let want = full.final_derivative(state, "param.e").unwrap();
        assert!(
            (got - want).abs() <= 1e-12 * want.abs().max(1.0),
            "{state}: {got} vs {want}"
        );
    }
    let err = chosen.final_derivative("x", "param.e").unwrap_err();
    assert_eq!(
        err.to_string(),
        "unknown state 'x'; valid state names: h, v"
    );
}

#[test]
fn lookups_by_name_read_the_matrix_entries() {
    let system = ball();
    let sens = jacobian(&problem(&system), Method::Forward).unwrap();
    assert_eq!(sens.state_names(), ["h", "v"]);
    // wrt order: initial.h, initial.v, param.g, param.e.
    assert_eq!(
        sens.final_derivative("v", "param.e").unwrap(),
        sens.final_jacobian[(1, 3)]
    );
    assert_eq!(
        sens.final_derivative("h", "initial.v").unwrap(),
        sens.final_jacobian[(0, 1)]
    );
    // dt1/dg = -t1 / (2 g), from t1 = sqrt(2 h0 / g).
    let dt1_dg = sens.event_time_derivative(0, "param.g").unwrap();
    assert!((dt1_dg + t1() / (2.0 * G)).abs() < 1e-10, "{dt1_dg}");
}

#[test]
fn observation_lookup_reads_the_observation_jacobian() {
    let system = ball();
    let run = problem(&system).with_observations(vec![0.2, 0.6]);
    let sens = jacobian(&run, Method::Forward).unwrap();
    // Before the impact, h(0.2) = h0 - g 0.2^2 / 2: dh/dg = -0.02.
    let d = sens.observation_derivative(0, "h", "param.g").unwrap();
    assert!((d + 0.02).abs() < 1e-12, "{d}");
    assert_eq!(
        sens.observation_derivative(1, "v", "initial.h").unwrap(),
        sens.observation_jacobians[1][(1, 0)]
    );
    let err = sens.observation_derivative(2, "h", "param.g").unwrap_err();
    assert!(err.to_string().contains("2 observations"), "{err}");
}

#[test]
fn unknown_names_and_indices_list_what_is_valid() {
    let system = ball();
    let sens = jacobian(&problem(&system), Method::Forward).unwrap();
    let err = sens.final_derivative("h", "e").unwrap_err();
    assert_eq!(err.kind(), "unknown_name");
    assert_eq!(
        err.to_string(),
        "unknown sensitivity input 'e'; valid sensitivity input names: \
         initial.h, initial.v, param.g, param.e"
    );
    let err = sens.final_derivative("x", "param.e").unwrap_err();
    assert_eq!(
        err.to_string(),
        "unknown state 'x'; valid state names: h, v"
    );
    let err = sens.event_time_derivative(5, "param.e").unwrap_err();
    let text = err.to_string();
    assert!(
        text.contains("the run has 1 events") && text.contains("[0 at t = 0.45"),
        "{text}"
    );
}

#[test]
fn gradient_by_name_matches_the_closed_form() {
    let system = ball();
    let grad = gradient(&problem(&system), &FinalComponent(0)).unwrap();
    assert_eq!(*grad.wrt, *system.wrt_names());
    let expected = dh_final();
    for (name, want) in system.wrt_names().iter().zip(expected) {
        let got = grad.derivative(name).unwrap();
        assert!((got - want).abs() < 1e-8, "dh(T)/d{name}: {got} vs {want}");
    }
    let err = grad.derivative("param.k").unwrap_err();
    assert!(err.to_string().contains("param.g, param.e"), "{err}");
}

#[test]
fn gradient_forward_agrees_with_the_adjoint() {
    let system = ball();
    let run = problem(&system);
    let adjoint = gradient(&run, &FinalComponent(1)).unwrap();
    let forward = gradient_forward(&run, &FinalComponent(1), Method::ForwardOnStateSteps).unwrap();
    assert_eq!(forward.wrt, adjoint.wrt);
    for (a, f) in adjoint.concatenated().iter().zip(forward.concatenated()) {
        // Same steps: rounding only.
        assert!((a - f).abs() < 1e-10 * f.abs().max(1.0), "{a} vs {f}");
    }
}

#[test]
fn without_saltation_the_initial_height_derivative_is_wrong() {
    let system = ball();
    let blind = jacobian_without_saltation(&problem(&system)).unwrap();
    let exact = dh_final();
    // The event-time term is what is lost: off by far more than the
    // tolerance for h0, while de has no event-time term (e does not
    // move t1) and stays exact.
    assert!((blind[(0, 0)] - exact[0]).abs() > 0.1, "{}", blind[(0, 0)]);
    assert!((blind[(0, 3)] - exact[3]).abs() < 1e-8, "{}", blind[(0, 3)]);
}

#[test]
fn a_loss_seed_of_the_wrong_shape_is_an_error() {
    let system = ball();
    let bad = |tr: &Trajectory, seeds: &mut LossSeeds| {
        seeds.event_times.push(1.0);
        tr.final_time
    };
    let err = gradient(&problem(&system), &bad).unwrap_err();
    assert_eq!(err.kind(), "dimension_mismatch");
}

/// An inverted pendulum `theta' = omega, omega' = (g/l) sin theta` with
/// a wall it never reaches: with `l = 1e-16` the state grows like
/// `exp(t sqrt(g/l))` but the fixed steps keep it finite for a while,
/// while its derivatives overflow (issue 10's rimless wheel).
struct Inverted;
impl FlowFn for Inverted {
    fn rate<S: Scalar>(&self, _t: S, x: &[S], p: &[S], d: &mut [S]) {
        d[0] = x[1];
        d[1] = (p[0] / p[1]) * x[0].sin();
    }
}
struct FarWall;
impl GuardFn for FarWall {
    fn direction(&self) -> Direction {
        Direction::Falling
    }
    fn value<S: Scalar>(&self, _t: S, x: &[S], _p: &[S]) -> S {
        -x[0] + 1e300
    }
}
struct Keep;
impl ResetFn for Keep {
    fn apply<S: Scalar>(&self, _t: S, x: &[S], _p: &[S], a: &mut [S]) {
        a.copy_from_slice(x);
    }
}

/// Issue 10: `gradient(&problem, &FinalComponent(5))` on a 2-state
/// system panicked indexing the seeds; it is a clear error naming the
/// state dimension, by both gradient functions.
#[test]
fn final_component_out_of_range_is_an_error() {
    let sys = ball();
    let problem = Problem::new(&sys, vec![1.0, 0.0], vec![9.81, 0.8], 0.4);
    let err = gradient(&problem, &FinalComponent(5)).unwrap_err();
    assert_eq!(err.kind(), "invalid_option");
    assert!(err.to_string().contains("state dimension 2"), "{err}");
    let err = gradient_forward(&problem, &FinalComponent(2), Method::Forward).unwrap_err();
    assert_eq!(err.kind(), "invalid_option");
    // In range, it works (reference: h(T) = h0 - g T^2 / 2 before the
    // first impact, so dh(T)/dh0 = 1).
    let g = gradient(&problem, &FinalComponent(0)).unwrap();
    assert!((g.initial_state[0] - 1.0).abs() < 1e-9, "{g:?}");
}

/// Issue 10: no seed of the wrong size panics: seeds resized by a loss,
/// at any level, are a dimension error.
#[test]
fn seeds_of_the_wrong_size_are_an_error() {
    let sys = ball();
    let problem =
        Problem::new(&sys, vec![1.0, 0.0], vec![9.81, 0.8], 0.5).with_observations(vec![0.1]);
    type Resize = fn(&mut LossSeeds);
    let resizes: [Resize; 4] = [
        |s| s.final_state.push(1.0),
        |s| s.final_state.clear(),
        |s| s.observations[0].push(1.0),
        |s| s.event_times.push(1.0),
    ];
    for resize in resizes {
        let loss = move |tr: &Trajectory, seeds: &mut LossSeeds| {
            resize(seeds);
            tr.final_time
        };
        let err = gradient(&problem, &loss).unwrap_err();
        assert_eq!(err.kind(), "dimension_mismatch", "{err}");
        let err = gradient_forward(&problem, &loss, Method::Forward).unwrap_err();
        assert_eq!(err.kind(), "dimension_mismatch", "{err}");
    }
}

/// Issue 10: the adjoint returned NaN derivatives where forward
/// sensitivities report `non_finite`; both now report `non_finite`.
#[test]
fn overflowing_derivatives_are_non_finite_for_every_method() {
    let sys = HybridSystem::builder(&["theta", "omega"], &["g", "l"])
        .mode("stance", Autodiff(Inverted))
        .transition(
            "wall",
            FromMode("stance"),
            ToMode("stance"),
            Autodiff(FarWall),
            Autodiff(Keep),
        )
        .build()
        .unwrap();
    let problem = Problem::new(&sys, vec![-0.3, 1.2], vec![9.81, 1e-16], 3.0)
        .with_solver(SolverChoice::Rk4 { dt: 0.001 });
    // The state itself stays finite (the reference: the run succeeds).
    let run = ia_events::simulate(&problem).unwrap();
    assert!(run.final_state.iter().all(|v| v.is_finite()));
    for method in [
        Method::Forward,
        Method::ForwardOnStateSteps,
        Method::Adjoint,
    ] {
        let err = jacobian(&problem, method).unwrap_err();
        assert_eq!(err.kind(), "non_finite", "{method:?}: {err}");
    }
    let err = gradient(&problem, &FinalComponent(0)).unwrap_err();
    assert_eq!(err.kind(), "non_finite", "{err}");
}

/// Saltations are kept only when asked for; then one per event, the
/// same as the workspace forms (reference: `compute_for` on the event).
#[test]
fn saltations_are_kept_on_request() {
    let system = ball();
    let run = problem(&system);
    let sens = jacobian(&run, Method::Forward).unwrap();
    assert!(sens.saltations.is_empty());
    let sens = sens.with_saltations(&run);
    assert_eq!(sens.saltations.len(), sens.trajectory.events.len());
    let mut ws = SaltationWorkspace::new(2, 2);
    let event = ia_events::EventAt::recorded(&sens.trajectory, 0);
    assert_eq!(
        &sens.saltations[0],
        ws.compute_for(&system, &run.params, event)
    );
}
