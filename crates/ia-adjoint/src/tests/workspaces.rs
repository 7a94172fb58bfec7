use crate::gradient::gradient_in;
use crate::jacobian::{jacobian, jacobian_in, jacobian_wrt, jacobian_wrt_in};
use crate::results::Method;
use crate::tape::AdjointOptions;
use crate::workspace::*;
use ia_events::{EventOptions, EventRecording, Problem, SolverChoice};
use rstest::rstest;
use std::cell::Cell;

/// The default run of every ready model, then the same with every
/// parameter 1 % larger (some parameters change only a reset, so the
/// first event's time and state repeat with new reset partials).
struct Run {
    name: String,
    system: ia_core::HybridSystem,
    x0: Vec<f64>,
    p: Vec<f64>,
    t_end: f64,
    mode: String,
}

fn second_only(n_p: usize) -> Vec<f64> {
    (0..n_p).map(|j| if j == 1 { 1.1 } else { 1.0 }).collect()
}

fn runs(method: Method) -> Vec<Run> {
    let mut runs = Vec::new();
    for model in ia_models::catalog() {
        let spec = model.spec();
        // The default, only the second parameter 10 % larger (for the
        // balls, the restitution: the first impact repeats at the same
        // time and state, with other reset partials), and every
        // parameter 1 % larger.
        let n_p = spec.params.len();
        for scales in [vec![1.0; n_p], second_only(n_p), vec![1.01; n_p]] {
            let params = spec
                .default_params()
                .iter()
                .zip(&scales)
                .map(|(p, s)| p * s)
                .collect();
            let t_end = if method == Method::Adjoint {
                spec.t_end.min(1.0)
            } else {
                spec.t_end
            };
            runs.push(Run {
                name: spec.name.clone(),
                system: model.system(),
                x0: spec.default_state(),
                p: params,
                t_end,
                mode: spec.initial_mode.clone(),
            });
        }
    }
    runs
}

/// Reference: the same call in a fresh workspace. One workspace runs
/// every ready model in turn, so it meets other state and parameter
/// dimensions, other solvers and recordings, and a failed run, and must
/// give the fresh numbers to the bit; so must the one-shot calls, in the
/// buffers this thread keeps between them.
#[rstest]
#[case::forward(Method::Forward)]
#[case::forward_on_state_steps(Method::ForwardOnStateSteps)]
#[case::adjoint(Method::Adjoint)]
fn a_kept_workspace_gives_the_numbers_of_a_fresh_one(#[case] method: Method) {
    let mut workspace = Workspace::new();
    for (k, run) in runs(method).iter().enumerate() {
        let t_end = run.t_end;
        let solver = if k % 3 == 2 {
            SolverChoice::Rk4 { dt: t_end / 4000.0 }
        } else {
            SolverChoice::dopri5(1e-10)
        };
        let record = if k % 4 == 3 {
            EventRecording::Last(2)
        } else {
            EventRecording::All
        };
        let problem = Problem::new(&run.system, run.x0.clone(), run.p.clone(), t_end)
            .with_mode(&run.mode)
            .unwrap()
            .with_solver(solver)
            .with_observations(vec![t_end / 3.0])
            .with_event_options(EventOptions {
                record,
                ..EventOptions::default()
            });
        let fresh = jacobian_in(&problem, method, &mut Workspace::new());
        let one_shot = jacobian(&problem, method);
        assert_eq!(one_shot.is_ok(), fresh.is_ok(), "{} run {k}", run.name);
        let kept = jacobian_in(&problem, method, &mut workspace);
        match (fresh, kept) {
            (Ok(fresh), Ok(kept)) => {
                assert_eq!(kept, fresh, "{} run {k}", run.name);
                assert_eq!(one_shot.unwrap(), fresh, "{} run {k}, one-shot", run.name);
                workspace.recycle(kept);
            }
            (Err(fresh), Err(kept)) => assert_eq!(kept.to_string(), fresh.to_string()),
            (fresh, kept) => panic!("run {k}: fresh {fresh:?}, kept {kept:?}"),
        }
        // Two chosen columns (the first and the last input) between runs
        // with all of them.
        let all = run.system.wrt_names();
        let chosen = [all[0].as_str(), all[all.len() - 1].as_str()];
        match (
            jacobian_wrt_in(&problem, method, &chosen, &mut Workspace::new()),
            jacobian_wrt_in(&problem, method, &chosen, &mut workspace),
        ) {
            (Ok(fresh), Ok(kept)) => {
                assert_eq!(kept, fresh, "{} run {k}, chosen columns", run.name);
                let one_shot = jacobian_wrt(&problem, method, &chosen).unwrap();
                assert_eq!(one_shot, fresh, "{} run {k}, chosen, one-shot", run.name);
                workspace.recycle(kept);
            }
            (Err(fresh), Err(kept)) => assert_eq!(kept.to_string(), fresh.to_string()),
            (fresh, kept) => panic!("run {k}: fresh {fresh:?}, kept {kept:?}"),
        }
        // A run that fails (a step limit) between two that do not.
        let failing = problem.clone().with_event_options(EventOptions {
            max_steps: 3,
            ..EventOptions::default()
        });
        assert!(jacobian_in(&failing, method, &mut workspace).is_err());
    }
}

/// Reference: a fresh workspace. A network whose first spike kicks a
/// second neuron over its threshold (a cascade): the adjoint's last
/// event is `spike1`, and the forward run after it in the same
/// workspace locates `spike0` first. The partials of `spike1`'s guard
/// (reading `V1`) must not survive into that event's (reading `V0`):
/// they did once, giving `d t0 / d V1(0)` = `d t0 / d V0(0)`.
#[rstest]
#[case::forward(Method::Forward)]
#[case::adjoint(Method::Adjoint)]
fn no_guard_partials_outlive_their_run(#[case] method: Method) {
    use ia_models::Model;
    let net = ia_models::LifNetwork::with_connections(3, vec![(0, 1), (0, 2)]).unwrap();
    let system = net.system();
    let mut p = net.spec().default_params();
    for (name, v) in [
        ("I0", 1.3),
        ("I1", 0.98),
        ("I2", 0.96),
        ("w1_0", 0.03),
        ("w2_0", 0.03),
    ] {
        p[system.param_index(name).unwrap()] = v;
    }
    let problem = Problem::new(&system, vec![0.2, 0.98, 0.96], p, 0.02)
        .with_solver(SolverChoice::dopri5(1e-12));
    let fresh = jacobian_in(&problem, method, &mut Workspace::new()).unwrap();
    assert_eq!(fresh.trajectory.events.len(), 2, "a spike and its cascade");
    assert_eq!(
        fresh.event_time_gradients[(0, 1)],
        0.0,
        "t0 does not see V1(0)"
    );
    let mut workspace = Workspace::new();
    for first in [Method::Adjoint, Method::Forward] {
        let earlier = jacobian_in(&problem, first, &mut workspace).unwrap();
        workspace.recycle(earlier);
        let kept = jacobian_in(&problem, method, &mut workspace).unwrap();
        assert_eq!(kept, fresh, "{method:?} after {first:?}");
        workspace.recycle(kept);
    }
}

/// What a thread keeps after a one-shot call: the buffers of a small
/// system, without a tape over 1 MiB; nothing for a system over the
/// bound; and a call made inside another (the kept buffers are in use)
/// runs in a fresh workspace. Reference for the numbers: a fresh
/// workspace.
#[test]
fn a_thread_keeps_bounded_buffers_between_one_shot_calls() {
    use crate::gradient::gradient;
    use crate::loss::FinalComponent;
    let kept_tape = || {
        let kept = KEPT.with(Cell::take);
        let bytes = kept.as_ref().map(Workspace::kept_tape_bytes);
        KEPT.with(|k| k.set(kept));
        bytes
    };
    let ball = ia_models::by_name("ball2d-flat").unwrap();
    let (system, spec) = (ball.system(), ball.spec());
    let problem = |t_end: f64, dt: f64| {
        Problem::new(&system, spec.default_state(), spec.default_params(), t_end)
            .with_solver(SolverChoice::Rk4 { dt })
    };
    // The one-shot gradient equals the one in a fresh workspace.
    let one_shot_is_fresh = |problem: &Problem<'_>| {
        let fresh = gradient_in(
            problem,
            &FinalComponent(0),
            &AdjointOptions::default(),
            &mut Workspace::new(),
        );
        assert_eq!(
            gradient(problem, &FinalComponent(0)).unwrap(),
            fresh.unwrap()
        );
    };
    // A short adjoint keeps its tape; one of 10^5 steps (over 1 MiB of
    // kept states) does not.
    one_shot_is_fresh(&problem(1.0, 1e-2));
    assert!(kept_tape().is_some_and(|b| b > 0 && b <= KEPT_RUN_BYTES));
    one_shot_is_fresh(&problem(1.0, 1e-5));
    assert_eq!(kept_tape(), Some(0));
    // Over the bound: the call runs in a workspace of its own and the
    // thread keeps nothing of it.
    use ia_models::Model;
    let network = ia_models::LifNetwork::new(100).unwrap();
    let (big, big_spec) = (network.system(), network.spec());
    assert!(big.state_dim() * (big.state_dim() + big.param_dim()) > KEPT_BLOCK);
    KEPT.with(|k| k.set(None));
    let big_run = Problem::new(
        &big,
        big_spec.default_state(),
        big_spec.default_params(),
        1e-3,
    );
    one_shot_is_fresh(&big_run);
    assert!(KEPT.with(Cell::take).is_none());
}

/// A workspace may be moved to another thread (kept per worker, or in
/// a solver object shared by threads behind a lock): checked when this
/// compiles.
#[test]
fn workspaces_move_between_threads() {
    fn send<T: Send>() {}
    send::<Workspace>();
    send::<ia_events::Workspace>();
}

/// Reference: [`jacobian`] in a fresh workspace. One impact, at the
/// same time and state in both runs (the restitution acts only after
/// it): whatever a workspace keeps of the last event must not be read
/// with the new parameters.
#[rstest]
#[case::forward(Method::Forward)]
#[case::adjoint(Method::Adjoint)]
fn the_last_event_of_a_run_is_forgotten(#[case] method: Method) {
    // Its reset has dense partials only: the kept ones are keyed by the
    // event.
    let system = ia_models::by_name("ball2d-flat").unwrap().system();
    let mut workspace = Workspace::new();
    for e in [0.8, 0.88] {
        let problem = Problem::new(&system, vec![0.0, 1.0, 1.0, 0.0], vec![9.81, e, 0.7], 0.6)
            .with_solver(SolverChoice::dopri5(1e-10));
        let kept = jacobian_in(&problem, method, &mut workspace).unwrap();
        assert_eq!(kept.trajectory.events.len(), 1);
        assert_eq!(kept, jacobian(&problem, method).unwrap(), "e = {e}");
        workspace.recycle(kept);
    }
}

/// Reference: [`crate::gradient_with`] in a fresh workspace. Every
/// ready model in turn in one workspace, with the full tape and with
/// checkpoints every other run, and a failed run between: the same
/// gradients to the bit.
#[test]
fn a_kept_workspace_gives_the_gradients_of_a_fresh_one() {
    use crate::gradient::{gradient_in, gradient_with};
    use crate::loss::LossSeeds;
    let loss = |tr: &ia_core::Trajectory, seeds: &mut LossSeeds| {
        seeds.final_state[0] = 1.0;
        let last = tr.events.len().checked_sub(1);
        if let Some(k) = last {
            seeds.event_times[k] = 0.5;
        }
        tr.final_state[0] + last.map_or(0.0, |k| 0.5 * tr.events[k].time)
    };
    let mut workspace = Workspace::new();
    for (k, run) in runs(Method::Adjoint).iter().enumerate() {
        let options = AdjointOptions {
            checkpoints: (k % 2 == 1).then_some(3),
        };
        let problem = Problem::new(&run.system, run.x0.clone(), run.p.clone(), run.t_end)
            .with_mode(&run.mode)
            .unwrap()
            .with_solver(SolverChoice::dopri5(1e-10))
            .with_observations(vec![run.t_end / 3.0]);
        let fresh = gradient_with(&problem, &loss, &options).unwrap();
        let kept = gradient_in(&problem, &loss, &options, &mut workspace).unwrap();
        assert_eq!(kept, fresh, "{} run {k}", run.name);
        workspace.recycle_gradient(kept);
        let failing = problem.with_event_options(EventOptions {
            max_steps: 3,
            ..EventOptions::default()
        });
        assert!(gradient_in(&failing, &loss, &options, &mut workspace).is_err());
    }
}
