//! `Sensitivities::loss_gradient` follows the `wrt` names whatever their
//! order (issue 27: it once counted the `initial.` names from the front, so
//! with `param.mu` before `initial.vy` its `initial_state` came back empty
//! and `params` held `dL/dvy0`).
//!
//! References: the same gradient with the names in model order, and central
//! finite differences of the run.

use ia_adjoint::{jacobian_wrt, FinalComponent, Method};
use ia_events::{simulate, Problem, SolverChoice};

/// A ball on flat ground with friction: `x(T)` depends on `vy0` only through
/// the impact (the saltation term) and on `mu` through the sliding.
fn problem(system: &ia_core::HybridSystem, vy: f64, mu: f64) -> Problem<'_> {
    Problem::new(system, vec![0.0, 1.0, 1.0, vy], vec![9.81, 0.8, mu], 2.0)
        .with_solver(SolverChoice::dopri5(1e-12))
}

#[test]
fn the_loss_gradient_follows_the_wrt_names_in_any_order() {
    let system = ia_models::by_name("ball2d-flat").unwrap().system();
    let run = problem(&system, 0.0, 0.7);
    let loss = FinalComponent(0);
    let method = Method::ForwardOnStateSteps;
    let swapped = jacobian_wrt(&run, method, &["param.mu", "initial.vy"])
        .unwrap()
        .loss_gradient(&loss)
        .unwrap();
    let ordered = jacobian_wrt(&run, method, &["initial.vy", "param.mu"])
        .unwrap()
        .loss_gradient(&loss)
        .unwrap();
    assert_eq!(swapped.initial_state.len(), 1, "{swapped:?}");
    assert_eq!(swapped.params.len(), 1, "{swapped:?}");
    assert_eq!(*swapped.wrt, ["initial.vy", "param.mu"]);
    assert_eq!(swapped.initial_state, ordered.initial_state);
    assert_eq!(swapped.params, ordered.params);
    assert_eq!(swapped.wrt, ordered.wrt);
    for name in ["initial.vy", "param.mu"] {
        assert_eq!(
            swapped.derivative(name).unwrap(),
            ordered.derivative(name).unwrap(),
            "{name}"
        );
    }
    // Central differences of x(T), step 1e-6: truncation ~1e-12, rounding
    // of the 1e-12 tolerance runs ~1e-6.
    let x_end = |vy: f64, mu: f64| simulate(&problem(&system, vy, mu)).unwrap().final_state[0];
    let h = 1e-6;
    let dvy = (x_end(h, 0.7) - x_end(-h, 0.7)) / (2.0 * h);
    let dmu = (x_end(0.0, 0.7 + h) - x_end(0.0, 0.7 - h)) / (2.0 * h);
    assert!(
        (swapped.initial_state[0] - dvy).abs() < 1e-5,
        "{} vs {dvy}",
        swapped.initial_state[0]
    );
    assert!(
        (swapped.params[0] - dmu).abs() < 1e-5,
        "{} vs {dmu}",
        swapped.params[0]
    );
}
