//! Forward sensitivities through the exact solver on a flow of 2x2 linear
//! pairs (the test network of current-based neurons shared with ia-events'
//! tests). Reference: forward sensitivities on DOPRI5's steps at 1e-12
//! (the variational equations integrated along the same flow).

use crate::pair_net;

use ia_adjoint::{jacobian, Method};
use ia_events::{EventOptions, Problem, SolverChoice};
use pair_net::{params, system, NET};
use rstest::rstest;

/// Every entry of `d(final state)/d(initial state, parameters)` and of the
/// event times' gradients, exact against DOPRI5, for a ratio of time
/// constants of 4, equal ones and nearly equal ones (the time constants'
/// columns move the pairs' matrices; the weights and input times only their
/// states).
#[rstest]
#[case::ratio_four(20.0, 5.0, 4.0)]
#[case::equal(10.0, 10.0, 1.0)]
#[case::nearly_equal(10.0, 10.0 * (1.0 + 1e-9), 1.0)]
fn forward_sensitivities_through_pairs_match_dopri5(
    #[case] tau_mem: f64,
    #[case] tau_syn: f64,
    #[case] scale: f64,
) {
    let system = system(NET);
    let n = system.state_dim();
    let problem = |solver| {
        Problem::new(
            &system,
            vec![0.0; n],
            params(NET, tau_mem, tau_syn, scale),
            30.0,
        )
        .with_solver(solver)
        .with_event_options(EventOptions {
            max_events: 1000,
            ..EventOptions::default()
        })
    };
    let exact =
        jacobian(&problem(SolverChoice::Exact), Method::Forward).unwrap_or_else(|e| panic!("{e}"));
    let stepped = jacobian(&problem(SolverChoice::dopri5(1e-12)), Method::Forward)
        .unwrap_or_else(|e| panic!("{e}"));
    assert!(exact.trajectory.events.len() > NET.inputs + 5);
    assert_eq!(
        exact.trajectory.events.len(),
        stepped.trajectory.events.len()
    );
    let (a, b) = (&exact.final_jacobian, &stepped.final_jacobian);
    assert_eq!(a.shape(), b.shape());
    for (k, (x, y)) in a.iter().zip(b.iter()).enumerate() {
        assert!(
            (x - y).abs() <= 1e-6 * (1.0 + y.abs()),
            "final [{k}]: {x} vs {y}"
        );
    }
    let (a, b) = (&exact.event_time_gradients, &stepped.event_time_gradients);
    for (k, (x, y)) in a.iter().zip(b.iter()).enumerate() {
        assert!(
            (x - y).abs() <= 1e-6 * (1.0 + y.abs()),
            "event time [{k}]: {x} vs {y}"
        );
    }
}

/// The adjoint through the exact solver's pairs (each stretch transposed,
/// `PairStretch::transpose_tangent`) against its forward sensitivities
/// (reference: the forward pass checked against DOPRI5 above), to 1e-10,
/// for unequal and equal time constants.
#[rstest]
#[case::ratio_four(20.0, 5.0, 4.0)]
#[case::equal(10.0, 10.0, 1.0)]
fn the_adjoint_through_pairs_matches_the_forward_pass(
    #[case] tau_mem: f64,
    #[case] tau_syn: f64,
    #[case] scale: f64,
) {
    let system = system(NET);
    let n = system.state_dim();
    let problem = Problem::new(
        &system,
        vec![0.0; n],
        params(NET, tau_mem, tau_syn, scale),
        30.0,
    )
    .with_solver(SolverChoice::Exact);
    let forward = jacobian(&problem, Method::Forward).unwrap_or_else(|e| panic!("{e}"));
    let adjoint = jacobian(&problem, Method::Adjoint).unwrap_or_else(|e| panic!("{e}"));
    let (a, b) = (&adjoint.final_jacobian, &forward.final_jacobian);
    assert_eq!(a.shape(), b.shape());
    for (k, (x, y)) in a.iter().zip(b.iter()).enumerate() {
        assert!(
            (x - y).abs() <= 1e-10 * (1.0 + y.abs()),
            "final [{k}]: {x} vs {y}"
        );
    }
    let (a, b) = (&adjoint.event_time_gradients, &forward.event_time_gradients);
    assert_eq!(a.shape(), b.shape());
    for (k, (x, y)) in a.iter().zip(b.iter()).enumerate() {
        assert!(
            (x - y).abs() <= 1e-10 * (1.0 + y.abs()),
            "event time [{k}]: {x} vs {y}"
        );
    }
}

/// Sum of the final state and of every event time.
fn loss(trajectory: &ia_core::Trajectory, seeds: &mut ia_adjoint::LossSeeds) -> f64 {
    seeds.final_state.fill(1.0);
    seeds.event_times.fill(1.0);
    let times: f64 = trajectory.events.iter().map(|e| e.time).sum();
    trajectory.final_state.iter().sum::<f64>() + times
}

/// Reference: the full tape. With two checkpoints the reverse pass carries
/// the other stretches' start states again from the kept ones, pairs with
/// the run's own arithmetic, so the gradient is the same to the bit.
#[test]
fn the_checkpointed_adjoint_through_pairs_equals_the_full_tape() {
    let system = system(NET);
    let n = system.state_dim();
    let problem = Problem::new(&system, vec![0.0; n], params(NET, 20.0, 5.0, 4.0), 30.0)
        .with_solver(SolverChoice::Exact);
    let full = ia_adjoint::gradient(&problem, &loss).unwrap_or_else(|e| panic!("{e}"));
    let options = ia_adjoint::AdjointOptions {
        checkpoints: Some(2),
    };
    let checkpointed =
        ia_adjoint::gradient_with(&problem, &loss, &options).unwrap_or_else(|e| panic!("{e}"));
    assert!(checkpointed.tape_floats < full.tape_floats);
    assert_eq!(checkpointed.concatenated(), full.concatenated());
}
