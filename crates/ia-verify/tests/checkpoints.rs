//! Checkpointed adjoint (issue 9): the tape keeps the start states of about
//! K to 2K steps and the backward pass replays the rest. Reference: the full
//! tape's gradient, which it must equal to the last bit (the replay forms
//! the same states with the same arithmetic), on every catalogue model, with
//! a loss that reads the final state, every observation and every event
//! time.

use ia_adjoint::{gradient, gradient_with, AdjointOptions, LossSeeds};
use ia_core::Trajectory;
use ia_events::SolverChoice;
use ia_verify::references::default_problem;
use rstest::rstest;

/// Every final entry, every observed entry and every event time, with
/// weights that differ so no two contributions can cancel by symmetry.
fn everything(trajectory: &Trajectory, seeds: &mut LossSeeds) -> f64 {
    let mut value = 0.0;
    for (i, (s, x)) in seeds
        .final_state
        .iter_mut()
        .zip(&trajectory.final_state)
        .enumerate()
    {
        *s = 1.0 + i as f64;
        value += *s * x;
    }
    for (obs, record) in seeds.observations.iter_mut().zip(&trajectory.observations) {
        for (s, x) in obs.iter_mut().zip(&record.state) {
            *s = 0.5;
            value += 0.5 * x;
        }
    }
    for (k, (s, e)) in seeds
        .event_times
        .iter_mut()
        .zip(&trajectory.events)
        .enumerate()
    {
        *s = 0.25 * (k + 1) as f64;
        value += *s * e.time;
    }
    value
}

#[rstest]
fn checkpointed_equals_the_full_tape(
    #[values(
        "ball1d",
        "ball2d-flat",
        "ball2d-bowl",
        "two-ball",
        "lif",
        "lif-network",
        "thermostat",
        "impact-pendulum",
        "rimless-wheel",
        "slip-hopper",
        "particle-chain"
    )]
    name: &str,
    #[values(SolverChoice::Rk4 { dt: 1e-3 }, SolverChoice::dopri5(1e-10))] solver: SolverChoice,
) {
    let model = ia_models::by_name(name).unwrap();
    let system = model.system();
    let spec = model.spec();
    let problem = default_problem(model.as_ref(), &system, solver)
        .with_observations(vec![spec.t_end / 3.0, spec.t_end / 2.0]);
    let full = gradient(&problem, &everything).unwrap();
    for k in [1, 2, 7, 64] {
        let options = AdjointOptions {
            checkpoints: Some(k),
        };
        let lean = gradient_with(&problem, &everything, &options).unwrap();
        assert_eq!(lean.value, full.value);
        assert_eq!(
            lean.concatenated(),
            full.concatenated(),
            "{name}, K = {k}: checkpointed vs full tape"
        );
        assert!(lean.tape_floats <= full.tape_floats);
    }
    // The bound: about 2K kept states of n floats, besides the per-step
    // entries.
    let steps = full.trajectory.stats.steps;
    if steps > 100 {
        let lean = gradient_with(
            &problem,
            &everything,
            &AdjointOptions {
                checkpoints: Some(8),
            },
        )
        .unwrap();
        assert!(
            lean.tape_floats < full.tape_floats,
            "{name}: {} vs {}",
            lean.tape_floats,
            full.tape_floats
        );
    }
}
