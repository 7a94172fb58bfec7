//! Sensitivities (ia-adjoint) against independent references:
//! * the closed-form Jacobians and event-time gradients of
//!   `crates/ia-verify/references/closed_form.json` (sympy/mpmath, outside this project);
//! * this project's own closed forms (`ia_verify::closed_form`, dual numbers
//!   on the symbolic solution) for cases the file does not cover;
//! * the other mode: forward against adjoint.

use ia_adjoint::{
    gradient, gradient_forward, jacobian, jacobian_without_saltation, FinalComponent, LossSeeds,
    Method,
};
use ia_core::Trajectory;
use ia_events::{Problem, SolverChoice};
use ia_verify::closed_form::closed_form;
use ia_verify::references::{default_problem, reference_case, reference_error, ReferenceRun};
use nalgebra::DMatrix;
use rstest::rstest;

const CASES: [&str; 5] = [
    "ball2d_flat_a",
    "ball2d_flat_b",
    "ball2d_bowl_a",
    "lif_a",
    "thermostat_a",
];

/// Relative error, absolute where the reference is below 1e-3 in size.
fn err(value: f64, reference: f64) -> f64 {
    reference_error(value, reference, 1e-3)
}

#[rstest]
fn jacobians_match_the_reference_file(
    #[values(
        "ball2d_flat_a",
        "ball2d_flat_b",
        "ball2d_bowl_a",
        "lif_a",
        "thermostat_a"
    )]
    name: &str,
    #[values(Method::Forward, Method::Adjoint)] method: Method,
    #[values(
        SolverChoice::dopri5(1e-12),
        SolverChoice::Dop853 { rtol: 1e-12, atol: 1e-12, max_step: None }
    )]
    solver: SolverChoice,
) {
    let run = ReferenceRun::load(name).unwrap();
    let (case, system) = (&run.case, &run.system);
    let problem = run.problem(solver.clone());
    let sens = jacobian(&problem, method).unwrap();
    let mut checked = 0;
    for (state, row) in &case.jacobian {
        let i = system.state_index(state).unwrap();
        for (wrt, &reference) in row {
            let j = sens.wrt.iter().position(|w| w == wrt).unwrap();
            let value = sens.final_jacobian[(i, j)];
            let e = err(value, reference);
            assert!(
                e < 1e-7,
                "{name} {method:?} {solver:?} d{state}/d{wrt}: {value} vs {reference} ({e:e})"
            );
            checked += 1;
        }
    }
    assert!(
        checked >= system.state_dim() * system.param_dim(),
        "{name}: {checked} entries"
    );
    // Entries the file leaves out (the trivial initial.x column of the flat
    // cases) against this project's closed form.
    let exact = closed_form(
        &case.model,
        &problem.initial_state,
        &problem.params,
        case.initial_mode.as_deref(),
        case.t_end,
    )
    .unwrap();
    for i in 0..system.state_dim() {
        for j in 0..sens.wrt.len() {
            let (v, r) = (sens.final_jacobian[(i, j)], exact.jacobian[i][j]);
            assert!(
                err(v, r) < 1e-7,
                "{name} {method:?} {solver:?} d{i}/d{}: {v} vs {r}",
                sens.wrt[j]
            );
        }
    }
    for (event, row) in &case.event_time_jacobian {
        let k: usize = event.parse().unwrap();
        for (wrt, &reference) in row {
            let j = sens.wrt.iter().position(|w| w == wrt).unwrap();
            let value = sens.event_time_gradients[(k, j)];
            assert!(
                err(value, reference) < 1e-7,
                "{name} {method:?} {solver:?} dt{k}/d{wrt}: {value} vs {reference}"
            );
        }
    }
}

/// Every event-time gradient, against this project's closed form (the
/// reference file gives them for lif only).
#[rstest]
fn event_time_gradients_match_closed_form(
    #[values(
        "ball2d_flat_a",
        "ball2d_flat_b",
        "ball2d_bowl_a",
        "lif_a",
        "thermostat_a"
    )]
    name: &str,
    #[values(Method::Forward, Method::Adjoint)] method: Method,
) {
    let run = ReferenceRun::load(name).unwrap();
    let case = &run.case;
    let problem = run.problem(SolverChoice::dopri5(1e-12));
    let sens = jacobian(&problem, method).unwrap();
    let exact = closed_form(
        &case.model,
        &problem.initial_state,
        &problem.params,
        case.initial_mode.as_deref(),
        case.t_end,
    )
    .unwrap();
    assert_eq!(exact.wrt[..], sens.wrt[..]);
    assert_eq!(
        exact.event_time_jacobian.len(),
        sens.event_time_gradients.nrows()
    );
    for (k, (row, exact_row)) in sens
        .event_time_gradients
        .row_iter()
        .zip(&exact.event_time_jacobian)
        .enumerate()
    {
        for (j, (v, r)) in row.iter().zip(exact_row).enumerate() {
            assert!(
                err(*v, *r) < 1e-7,
                "{name} event {k} d/d{}: {v} vs {r}",
                sens.wrt[j]
            );
        }
    }
}

fn worst_disagreement(a: &DMatrix<f64>, b: &DMatrix<f64>) -> f64 {
    a.iter()
        .zip(b.iter())
        .map(|(x, y)| (x - y).abs() / x.abs().max(y.abs()).max(1e-3))
        .fold(0.0, f64::max)
}

fn rows_disagreement(a: &DMatrix<f64>, b: &[Vec<f64>]) -> f64 {
    assert_eq!(a.nrows(), b.len());
    a.transpose()
        .iter()
        .zip(b.iter().flatten())
        .map(|(x, y)| (x - y).abs() / x.abs().max(y.abs()).max(1e-3))
        .fold(0.0, f64::max)
}

/// Forward (error control covering the sensitivities) against adjoint: two
/// discretisations of the same derivative, both converged at 1e-12.
#[rstest]
fn forward_and_adjoint_agree(
    #[values(
        "ball2d_flat_a",
        "ball2d_flat_b",
        "ball2d_bowl_a",
        "lif_a",
        "thermostat_a"
    )]
    name: &str,
) {
    let run = ReferenceRun::load(name).unwrap();
    let case = &run.case;
    let problem = run
        .problem(SolverChoice::dopri5(1e-12))
        .with_observations(vec![case.t_end * 0.3, case.t_end * 0.7]);
    let forward = jacobian(&problem, Method::Forward).unwrap();
    let adjoint = jacobian(&problem, Method::Adjoint).unwrap();
    assert!(worst_disagreement(&forward.final_jacobian, &adjoint.final_jacobian) < 1e-9);
    for (f, a) in forward
        .observation_jacobians
        .iter()
        .zip(&adjoint.observation_jacobians)
    {
        assert!(worst_disagreement(f, a) < 1e-9);
    }
    assert!(
        worst_disagreement(&forward.event_time_gradients, &adjoint.event_time_gradients) < 1e-9
    );
}

/// On the state's own steps, forward sensitivities and the discrete adjoint
/// are the same linear maps, applied in opposite orders: they agree to
/// rounding, at any tolerance and with either stepper. Rounding accumulates
/// over the steps and events, so the bound is 100 ulp of the matrix's
/// largest entry per step and event.
#[rstest]
fn adjoint_is_the_transpose_of_forward_on_the_same_steps(
    #[values("ball2d_bowl_a", "lif_a", "thermostat_a")] name: &str,
    #[values(
        SolverChoice::dopri5(1e-5),
        SolverChoice::Dop853 { rtol: 1e-5, atol: 1e-5, max_step: None },
        SolverChoice::Rk4 { dt: 1e-3 }
    )]
    solver: SolverChoice,
) {
    let run = ReferenceRun::load(name).unwrap();
    let case = &run.case;
    let problem = run
        .problem(solver)
        .with_observations(vec![case.t_end * 0.5]);
    let forward = jacobian(&problem, Method::ForwardOnStateSteps).unwrap();
    let adjoint = jacobian(&problem, Method::Adjoint).unwrap();
    let steps = forward.trajectory.stats.steps;
    assert_eq!(steps, adjoint.trajectory.stats.steps);
    let operations = steps + forward.trajectory.events.len();
    let bound = 100.0 * operations as f64 * f64::EPSILON;
    let pairs = [
        (&forward.final_jacobian, &adjoint.final_jacobian),
        (
            &forward.observation_jacobians[0],
            &adjoint.observation_jacobians[0],
        ),
    ];
    for (f, a) in pairs {
        let d = scaled_disagreement(f.iter(), a.iter());
        assert!(
            d < bound,
            "{name}: {d:e} over {operations} steps and events"
        );
    }
    let d = scaled_disagreement(
        forward.event_time_gradients.row_iter().flatten(),
        adjoint.event_time_gradients.row_iter().flatten(),
    );
    assert!(
        d < bound,
        "{name}: event times {d:e} over {operations} steps and events"
    );
}

/// A harmonic oscillator `x'' = -w^2 x` released from rest at `x = 1` that
/// hits a wall at `x = c`, moving towards it, and comes back with its speed
/// scaled by `e`: six impacts by `t = 12`.
const WALL_OSCILLATOR: &str = r#"{
 "name": "wall-oscillator",
 "states": {"x": 1.0, "v": 0.0},
 "params": {"w": 1.0, "e": 0.8, "c": 0.3},
 "modes": {"swing": {"flow": {"x": "v", "v": "-w * w * x"}}},
 "transitions": [{"name": "hit", "from": "swing", "to": "swing", "guard": "x - c", "direction": "falling", "reset": {"v": "-e * v"}}],
 "initial_mode": "swing"
}"#;

/// The guard's residual `|x - c|` at each event's state before the reset.
struct ImpactResiduals(Vec<f64>, f64);

impl ia_events::Observer for ImpactResiduals {
    fn event(
        &mut self,
        _: ia_events::RunContext<'_>,
        jump: &ia_events::EventJump<'_>,
    ) -> Result<(), ia_core::HybridError> {
        self.0.push((jump.state_before[0] - self.1).abs());
        Ok(())
    }
}

/// An explicit method's event refined on its redone step (its dense output
/// put the guard's residual beyond the step's error band: the engine's
/// `refine_on_steps`) is transposed exactly by the adjoint, and its
/// derivatives follow the true ones.
///
/// References: (1) forward sensitivities on the same steps
/// (`Method::ForwardOnStateSteps`), the adjoint's exact transpose, to 100
/// ulp per step and event as in
/// [`adjoint_is_the_transpose_of_forward_on_the_same_steps`] (measured
/// 2.0e-14 final Jacobian, 3.0e-14 event-time gradients, normwise; a step
/// of the tape that was not the redone step's last attempt would put the
/// two 1e-3 apart, the size of the refinement's move); (2) the true
/// derivatives, by fourth-order central differences (step 1e-3) of DOP853
/// runs at `rtol = atol = 1e-13` (within 5e-12 of the exact 1 of
/// `dt*/dv0`), against which the adjoint's error is at most the forward
/// pass's (error-controlled sensitivities at the same tolerance; measured
/// 5.0e-2 and 6.3e-2, largest over the entries, relative above 1: nine
/// steps of DOP853 at 1e-3 resolve the derivatives to a few percent).
/// DOP853 at 1e-3 takes 9 steps for six
/// impacts; its dense output put the fourth impact 4.1e-3 early (guard
/// residual 2.0e-3 against the band 1.3e-3), and the refinement moved it to
/// the zero of the guard at the step's end.
#[test]
fn an_explicit_event_refined_on_its_step_is_transposed_exactly() {
    use ia_models::Model;
    let model = ia_equations::EquationModel::from_json_str(WALL_OSCILLATOR).unwrap();
    let (spec, system) = (model.spec(), model.system());
    let (x0, p0) = (spec.default_state(), spec.default_params());
    let t_end = 12.0;
    let tol = 1e-3;
    let problem =
        Problem::new(&system, x0.clone(), p0.clone(), t_end).with_solver(SolverChoice::Dop853 {
            rtol: tol,
            atol: tol,
            max_step: None,
        });
    let c = p0[2];
    let mut residuals = ImpactResiduals(Vec::new(), c);
    ia_adjoint::run_on_taped_steps(&problem, &mut residuals, |r| r.0.clear()).unwrap();
    let refined = residuals.0.iter().filter(|r| **r < 1e-12).count();
    let band = tol * (1.0 + c);
    assert!(
        refined >= 1 && residuals.0.iter().all(|r| *r <= band),
        "an event refined, every residual within the band: {:?}",
        residuals.0
    );

    let forward = jacobian(&problem, Method::ForwardOnStateSteps).unwrap();
    let adjoint = jacobian(&problem, Method::Adjoint).unwrap();
    let steps = forward.trajectory.stats.steps;
    assert_eq!(steps, adjoint.trajectory.stats.steps);
    assert_eq!(forward.trajectory.events.len(), 6);
    let operations = steps + forward.trajectory.events.len();
    let bound = 100.0 * operations as f64 * f64::EPSILON;
    let final_gap =
        scaled_disagreement(forward.final_jacobian.iter(), adjoint.final_jacobian.iter());
    let times_gap = scaled_disagreement(
        forward.event_time_gradients.iter(),
        adjoint.event_time_gradients.iter(),
    );
    assert!(
        final_gap < bound && times_gap < bound,
        "{final_gap:e}, {times_gap:e} against {bound:e}"
    );

    // The true derivatives: final state and event times of tight runs.
    let outputs = |x0: &[f64], p: &[f64]| -> Vec<f64> {
        let tight = Problem::new(&system, x0.to_vec(), p.to_vec(), t_end).with_solver(
            SolverChoice::Dop853 {
                rtol: 1e-13,
                atol: 1e-13,
                max_step: None,
            },
        );
        let run = ia_events::simulate(&tight).unwrap();
        assert_eq!(run.events.len(), 6);
        let mut out = run.final_state.clone();
        out.extend(run.event_times());
        out
    };
    let inputs: Vec<f64> = x0.iter().chain(&p0).copied().collect();
    let d = 1e-3;
    let forward_run = jacobian(&problem, Method::Forward).unwrap();
    let mut worst = 0.0f64;
    let mut worst_forward = 0.0f64;
    for (column, _) in inputs.iter().enumerate() {
        let at = |shift: f64| {
            let mut moved = inputs.clone();
            moved[column] += shift * d;
            outputs(&moved[..2], &moved[2..])
        };
        let (m2, m1, p1, p2) = (at(-2.0), at(-1.0), at(1.0), at(2.0));
        for row in 0..m2.len() {
            let reference = (m2[row] - 8.0 * m1[row] + 8.0 * p1[row] - p2[row]) / (12.0 * d);
            let value = if row < 2 {
                adjoint.final_jacobian[(row, column)]
            } else {
                adjoint.event_time_gradients[(row - 2, column)]
            };
            worst = worst.max((value - reference).abs() / reference.abs().max(1.0));
            let fvalue = if row < 2 {
                forward_run.final_jacobian[(row, column)]
            } else {
                forward_run.event_time_gradients[(row - 2, column)]
            };
            worst_forward =
                worst_forward.max((fvalue - reference).abs() / reference.abs().max(1.0));
        }
    }
    println!(
        "same steps: {final_gap:e}, {times_gap:e}; against the true derivatives: adjoint {worst:e}, forward {worst_forward:e}"
    );
    assert!(worst <= worst_forward, "{worst:e} > {worst_forward:e}");
}

/// Largest difference relative to the largest entry.
fn scaled_disagreement<'a>(
    a: impl Iterator<Item = &'a f64> + Clone,
    b: impl Iterator<Item = &'a f64>,
) -> f64 {
    let scale = a.clone().fold(0.0f64, |m, v| m.max(v.abs())).max(1e-300);
    a.zip(b).map(|(x, y)| (x - y).abs()).fold(0.0, f64::max) / scale
}

/// A ball on flat ground with restitution close to one bounces a dozen times
/// in 6 s; the closed form (ia_verify::closed_form) gives every derivative.
#[rstest]
fn many_impacts_match_closed_form(#[values(Method::Forward, Method::Adjoint)] method: Method) {
    let system = ia_models::by_name("ball2d-flat").unwrap().system();
    let (x0, p) = (vec![0.0, 1.0, 0.5, 0.0], vec![9.81, 0.92, 0.97]);
    let problem =
        Problem::new(&system, x0.clone(), p.clone(), 6.0).with_solver(SolverChoice::dopri5(1e-12));
    let sens = jacobian(&problem, method).unwrap();
    let exact = closed_form("ball2d-flat", &x0, &p, None, 6.0).unwrap();
    assert!(
        sens.trajectory.events.len() >= 10,
        "{} impacts",
        sens.trajectory.events.len()
    );
    assert_eq!(sens.trajectory.events.len(), exact.event_times.len());
    for i in 0..4 {
        for j in 0..7 {
            let (v, r) = (sens.final_jacobian[(i, j)], exact.jacobian[i][j]);
            assert!(err(v, r) < 1e-7, "d{i}/d{j}: {v} vs {r}");
        }
    }
    assert!(rows_disagreement(&sens.event_time_gradients, &exact.event_time_jacobian) < 1e-7);
}

/// Forward against adjoint on seeded random draws of the initial state and
/// parameters of the bowl (a small linear congruential generator keeps the
/// table reproducible without a dependency).
#[test]
fn forward_and_adjoint_agree_on_random_draws() {
    let system = ia_models::by_name("ball2d-bowl").unwrap().system();
    let mut seed: u64 = 0x5eed;
    let mut uniform = |lo: f64, hi: f64| {
        seed = seed
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        lo + (hi - lo) * ((seed >> 11) as f64 / (1u64 << 53) as f64)
    };
    for draw in 0..12 {
        // Restitution and span keep clear of the chattering regime, where
        // impacts accumulate at the bottom of the bowl (Zeno).
        let x0 = vec![
            uniform(-0.3, 0.3),
            uniform(0.5, 1.5),
            uniform(-0.5, 0.5),
            uniform(-0.5, 0.5),
        ];
        let p = vec![uniform(8.0, 11.0), uniform(0.75, 0.95), uniform(0.2, 0.8)];
        let problem = Problem::new(&system, x0.clone(), p.clone(), 1.2)
            .with_solver(SolverChoice::dopri5(1e-11));
        let forward = jacobian(&problem, Method::Forward).unwrap();
        let adjoint = jacobian(&problem, Method::Adjoint).unwrap();
        let d = worst_disagreement(&forward.final_jacobian, &adjoint.final_jacobian);
        assert!(d < 1e-8, "draw {draw} x0={x0:?} p={p:?}: {d:e}");
        let exact = closed_form("ball2d-bowl", &x0, &p, None, 1.2).unwrap();
        for i in 0..4 {
            for j in 0..7 {
                let (v, r) = (adjoint.final_jacobian[(i, j)], exact.jacobian[i][j]);
                assert!(err(v, r) < 1e-6, "draw {draw} d{i}/d{j}: {v} vs {r}");
            }
        }
    }
}

/// A loss reading the final state, an observed state and an event time: the
/// adjoint's one backward pass against the forward Jacobians contracted
/// with the same seeds.
#[test]
fn scalar_loss_over_every_kind_of_output() {
    let run = ReferenceRun::load("ball2d_bowl_a").unwrap();
    let problem = run
        .problem(SolverChoice::dopri5(1e-12))
        .with_observations(vec![0.7]);
    let loss = |tr: &Trajectory, seeds: &mut LossSeeds| {
        let (x, y) = (tr.final_state[0], tr.final_state[1]);
        let obs_vx = tr.observations[0].state[2];
        let t2 = tr.events[1].time;
        seeds.final_state[0] = 2.0 * x;
        seeds.final_state[1] = 1.0;
        seeds.observations[0][2] = 3.0;
        seeds.event_times[1] = -0.5;
        x * x + y + 3.0 * obs_vx - 0.5 * t2
    };
    let reverse = gradient(&problem, &loss).unwrap();
    let forward = gradient_forward(&problem, &loss, Method::Forward).unwrap();
    assert!((reverse.value - forward.value).abs() < 1e-12);
    for (a, b) in reverse.concatenated().iter().zip(forward.concatenated()) {
        assert!((a - b).abs() < 1e-9 * b.abs().max(1.0), "{a} vs {b}");
    }
    assert!(reverse.tape_floats > 0);
}

/// Without the saltation term (the reset's Jacobian alone, as autodiff of a
/// time-stepper applies it), d x(T)/d vy0 on flat ground is exactly 0; the
/// library returns the closed form's +0.06697247706422019.
#[test]
fn the_saltation_term_matters() {
    let run = ReferenceRun::load("ball2d_flat_a").unwrap();
    let (case, system) = (&run.case, &run.system);
    let problem = run.problem(SolverChoice::dopri5(1e-12));
    let (x, vy0) = (
        system.state_index("x").unwrap(),
        system.state_index("vy").unwrap(),
    );
    let blind = jacobian_without_saltation(&problem).unwrap();
    assert_eq!(blind[(x, vy0)], 0.0);
    let sens = jacobian(&problem, Method::Forward).unwrap();
    let reference = case.jacobian["x"]["initial.vy"];
    assert!((sens.final_jacobian[(x, vy0)] - 0.0669724770642).abs() < 1e-12);
    assert!(err(sens.final_jacobian[(x, vy0)], reference) < 1e-9);
    let grad = gradient(&problem, &FinalComponent(x)).unwrap();
    assert!((grad.initial_state[vy0] - reference).abs() < 1e-10);
}

/// Parameters that enter only the guard and the reset (floor height and
/// restitution of ball1d): derivatives match the closed form.
#[rstest]
fn guard_and_reset_parameters(#[values(Method::Forward, Method::Adjoint)] method: Method) {
    let system = ia_models::by_name("ball1d").unwrap().system();
    let (x0, p) = (vec![1.3, 0.4], vec![9.81, 0.7, 0.25]);
    let problem =
        Problem::new(&system, x0.clone(), p.clone(), 2.0).with_solver(SolverChoice::dopri5(1e-12));
    let sens = jacobian(&problem, method).unwrap();
    let exact = closed_form("ball1d", &x0, &p, None, 2.0).unwrap();
    for i in 0..2 {
        for j in 0..5 {
            let (v, r) = (sens.final_jacobian[(i, j)], exact.jacobian[i][j]);
            assert!(err(v, r) < 1e-7, "d{i}/d{}: {v} vs {r}", sens.wrt[j]);
        }
    }
    let floor = sens.wrt.iter().position(|w| w == "param.floor").unwrap();
    assert!(sens
        .final_jacobian
        .column(floor)
        .iter()
        .any(|v| v.abs() > 1e-3));
}

/// A grazing event returns the grazing error, never a huge number.
#[test]
fn grazing_returns_the_error_not_a_number() {
    // two-ball with the second ball overtaken at equal speed: the gap closes
    // at rate v1 - v2 -> 0. Take v2 a hair below v1.
    let system = ia_models::by_name("two-ball").unwrap().system();
    let problem = Problem::new(
        &system,
        vec![0.0, 0.3, 1.0, 1.0 - 1e-9],
        vec![0.1, 1.0, 1.0, 1.0],
        2e8,
    )
    .with_solver(SolverChoice::dopri5(1e-10));
    for method in [Method::Forward, Method::Adjoint] {
        let err = jacobian(&problem, method).unwrap_err();
        assert_eq!(err.kind(), "grazing", "{err}");
    }
}

#[test]
fn adjoint_through_the_adapter_is_refused_with_a_reason() {
    let system = ia_models::by_name("lif").unwrap().system();
    let problem = Problem::new(&system, vec![0.2], vec![1.3, 0.01, 1.0, 0.0], 0.05).with_solver(
        SolverChoice::OdeSolvers {
            integrator: ia_events::OdeSolversMethod::Dopri5,
            rtol: 1e-10,
            atol: 1e-10,
            macro_step: 0.005,
        },
    );
    let err = gradient(&problem, &FinalComponent(0)).unwrap_err();
    assert_eq!(err.kind(), "unsupported");
    assert!(err.to_string().contains("dopri5"));
    // Forward sensitivities run through the adapter.
    let sens = jacobian(&problem, Method::Forward).unwrap();
    let case = reference_case("lif_a").unwrap();
    assert!(err_ok(
        sens.final_jacobian[(0, 0)],
        case.jacobian["V"]["initial.V"]
    ));
}

fn err_ok(v: f64, r: f64) -> bool {
    err(v, r) < 1e-7
}

#[test]
fn all_cases_are_listed() {
    let names: Vec<String> = ia_verify::references::load_references()
        .unwrap()
        .into_keys()
        .collect();
    for case in CASES {
        assert!(names.iter().any(|n| n == case));
    }
}

/// The bowl with low restitution chatters to rest at its bottom: the run
/// must end in an error (Zeno or grazing), never in numbers, and every event
/// before it must be a genuine falling crossing (a regression test: rounding
/// noise right after an impact was once taken for a second impact, which
/// reflected the ball into the ground).
#[test]
fn chattering_in_the_bowl_is_reported() {
    let system = ia_models::by_name("ball2d-bowl").unwrap().system();
    let x0 = vec![
        0.26144870115813473,
        1.3303943052238552,
        -0.07510708784694708,
        -0.09049705457696866,
    ];
    let p = vec![8.206690256730038, 0.5160169343419788, 0.6810183957179656];
    let problem = Problem::new(&system, x0, p, 1.5).with_solver(SolverChoice::dopri5(1e-11));
    for method in [Method::Forward, Method::Adjoint] {
        let err = jacobian(&problem, method).unwrap_err();
        assert!(["zeno", "grazing"].contains(&err.kind()), "{err}");
        let events = &err.trajectory().unwrap().events;
        assert!(events.len() > 8);
        assert!(events.iter().all(|e| e.guard_rate < 0.0));
        assert!(events.windows(2).all(|w| w[1].time > w[0].time));
    }
}

/// The models with no closed form: forward and adjoint Jacobians (final state
/// and event times) against Richardson-extrapolated central differences of
/// the simulation, within the differences' own error estimate.
#[rstest]
fn models_without_closed_form_match_finite_differences(
    #[values("impact-pendulum", "rimless-wheel", "slip-hopper", "particle-chain")] name: &str,
    #[values(Method::Forward, Method::Adjoint)] method: Method,
) {
    use ia_verify::finite_difference::{fd_jacobian, FdJacobian, FdOptions};
    let model = ia_models::by_name(name).unwrap();
    let system = model.system();
    let problem = default_problem(model.as_ref(), &system, SolverChoice::dopri5(1e-12));
    let sens = jacobian(&problem, method).unwrap();
    assert!(
        !sens.trajectory.events.is_empty(),
        "{name}: the default run has events"
    );
    let fd = fd_jacobian(&problem, &FdOptions::default()).unwrap();
    for i in 0..system.state_dim() {
        for j in 0..sens.wrt.len() {
            let (v, r, e) = (
                sens.final_jacobian[(i, j)],
                fd.final_jacobian[i][j],
                fd.final_error[i][j],
            );
            assert!(
                FdJacobian::agrees(v, r, e),
                "{name} {method:?} d{i}/d{}: {v} vs FD {r} +- {e}",
                sens.wrt[j]
            );
        }
    }
    for (k, (row, fd_row)) in sens
        .event_time_gradients
        .row_iter()
        .zip(&fd.event_time_jacobian)
        .enumerate()
    {
        for (j, (v, r)) in row.iter().zip(fd_row).enumerate() {
            let e = fd.event_time_error[k][j];
            assert!(
                FdJacobian::agrees(*v, *r, e),
                "{name} {method:?} dt{k}/d{}: {v} vs FD {r} +- {e}",
                sens.wrt[j]
            );
        }
    }
}

/// A system of at least 16 states keeps each event's time shift on the
/// tape by its nonzero entries (a spike changes a neuron and its
/// neighbours). Reference: the forward pass, every row of the Jacobian
/// (final state and event times), on an excitatory 20-neuron network
/// through DOPRI5.
#[test]
fn a_large_systems_tape_keeps_sparse_time_shifts() {
    use ia_models::{LifNetwork, Model};
    let net = LifNetwork::new(20).unwrap();
    let spec = net.spec();
    let mut params = spec.default_params();
    for (q, v) in spec.params.iter().zip(params.iter_mut()) {
        if q.name.starts_with('w') {
            *v = 0.02;
        }
    }
    let system = net.system();
    let problem = Problem::new(&system, spec.default_state(), params, 0.03)
        .with_solver(SolverChoice::dopri5(1e-12));
    let forward = jacobian(&problem, Method::Forward).unwrap();
    let adjoint = jacobian(&problem, Method::Adjoint).unwrap();
    assert!(forward.trajectory.events.len() >= 10);
    let close = |a: &DMatrix<f64>, b: &DMatrix<f64>| (a - b).amax() <= 1e-9 * b.amax().max(1.0);
    assert!(close(&adjoint.final_jacobian, &forward.final_jacobian));
    assert!(close(
        &adjoint.event_time_gradients,
        &forward.event_time_gradients
    ));
}
