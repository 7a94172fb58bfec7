//! A run ended right after a given firing (`Problem::with_stop_after`, the
//! period of a periodic orbit): the adjoint agrees with forward
//! sensitivities on the same steps (the other mode as the reference), and
//! the final state is the state just after that firing's reset.

use ia_adjoint::{jacobian, Method};
use ia_events::{Problem, SolverChoice};

#[test]
fn a_run_stopped_after_the_second_step_has_matching_forward_and_adjoint_jacobians() {
    let system = ia_models::by_name("rimless-wheel").unwrap().system();
    let problem = Problem::new(
        &system,
        vec![-0.3127, 1.2],
        vec![9.81, 1.0, std::f64::consts::FRAC_PI_8, 0.08],
        5.0,
    )
    .with_solver(SolverChoice::dopri5(1e-12))
    .with_stop_after("step", 2)
    .unwrap();
    let forward = jacobian(&problem, Method::ForwardOnStateSteps).unwrap();
    let adjoint = jacobian(&problem, Method::Adjoint).unwrap();
    let trajectory = &forward.trajectory;
    assert_eq!(trajectory.events.len(), 2);
    let last = &trajectory.events[1];
    assert_eq!(trajectory.final_time, last.time);
    assert_eq!(trajectory.final_state, trajectory.state_after(1));
    let scale = forward.final_jacobian.amax();
    assert!((&forward.final_jacobian - &adjoint.final_jacobian).amax() < 1e-9 * scale);
    for (f, a) in forward
        .event_time_gradients
        .row_iter()
        .zip(adjoint.event_time_gradients.row_iter())
    {
        for (x, y) in f.iter().zip(a) {
            assert!((x - y).abs() < 1e-9 * x.abs().max(1.0));
        }
    }
}
