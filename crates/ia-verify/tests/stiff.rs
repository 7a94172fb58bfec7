//! The stiff test problems of `references/stiff/` (equation models) against
//! references computed outside the library:
//!
//! * the drug model, the ball on a Kelvin-Voigt ground, the relay, the
//!   slowly switching relay and the heated rod (six cells) are piecewise linear: `references/stiff/references.py` computes their event
//!   times, final states, event-time gradients and final-state Jacobians at 50
//!   digits with mpmath (matrix exponentials, root finding, central
//!   differences of the high-precision solution) into `*.reference.json`;
//! * HIRES and ROBER are checked against the published `solut` values of the
//!   Test Set for IVP Solvers (`hires.reference.json`, `rober.reference.json`
//!   cite them).
//!
//! Every check runs over a list of solver choices ([`METHODS`]): one line adds
//! a method. The explicit methods run at `rtol = atol = 1e-10`; their steps
//! are held by stability on these problems (the reason for implicit
//! methods), yet every test here takes well under a second (ROBER to
//! `t = 1e11`, out of an explicit method's reach, runs with the implicit
//! methods only).

use ia_adjoint::{jacobian, Method, Sensitivities};
use ia_equations::EquationModel;
use ia_events::{simulate, EventOptions, Problem, SolverChoice};
use ia_models::Model;
use serde_json::Value;

/// A solver choice at tolerance `tol` (relative and absolute).
type MethodAt = fn(f64) -> SolverChoice;

fn dopri5(tol: f64) -> SolverChoice {
    SolverChoice::dopri5(tol)
}

fn dop853(tol: f64) -> SolverChoice {
    SolverChoice::Dop853 {
        rtol: tol,
        atol: tol,
        max_step: None,
    }
}

fn kvaerno5(tol: f64) -> SolverChoice {
    SolverChoice::Kvaerno5 {
        rtol: tol,
        atol: tol,
        max_step: None,
    }
}

/// The methods every problem runs with, at [`TOL`]. (TR-BDF2 and Kvaerno
/// 3(2), of orders 2 and 3, would take tens of thousands of steps at that
/// tolerance; they are checked at looser ones in ia-events, and their
/// adjoints here by
/// [`low_order_implicit_methods_adjoint_within_the_forward_passs_accuracy`].)
const METHODS: &[(&str, MethodAt)] = &[
    ("dopri5", dopri5),
    ("dop853", dop853),
    ("kvaerno5", kvaerno5),
];

/// The tolerance every method runs at.
const TOL: f64 = 1e-10;

/// Bounds on the normwise relative errors at [`TOL`]: see
/// [`check_piecewise_linear`].
const STATE_TOL: f64 = 1e-8;
const FORWARD_TOL: f64 = 1e-8;
const ADJOINT_TOL: f64 = FORWARD_TOL;

/// A problem's equation model and its reference, by file stem.
fn problem_files(name: &str) -> (EquationModel, Value) {
    let folder = format!("{}/references/stiff", env!("CARGO_MANIFEST_DIR"));
    let read = |file: String| {
        std::fs::read_to_string(format!("{folder}/{file}"))
            .unwrap_or_else(|e| panic!("{file}: {e}"))
    };
    let model = EquationModel::from_json_str(&read(format!("{name}.json"))).unwrap();
    let reference = serde_json::from_str(&read(format!("{name}.reference.json"))).unwrap();
    (model, reference)
}

/// The run a reference describes: the model's default state and parameters
/// from the reference's initial mode to its `t_end`, with `solver`.
fn reference_problem<'a>(
    system: &'a ia_core::HybridSystem,
    model: &EquationModel,
    reference: &Value,
    solver: SolverChoice,
) -> Problem<'a> {
    let spec = model.spec();
    Problem::new(
        system,
        spec.default_state(),
        spec.default_params(),
        reference["t_end"].as_f64().unwrap(),
    )
    .with_mode(reference["initial_mode"].as_str().unwrap())
    .unwrap()
    .with_solver(solver)
}

/// `max |a - b| / max |b|` over the entries.
fn normwise(a: &[f64], b: &[f64]) -> f64 {
    let scale = b.iter().fold(0.0f64, |m, v| m.max(v.abs()));
    let diff = a
        .iter()
        .zip(b)
        .fold(0.0f64, |m, (x, y)| m.max((x - y).abs()));
    diff / scale
}

/// How far a run's records lie from a piecewise-linear problem's reference,
/// normwise relative: final state, event times, final Jacobian, event-time
/// gradients.
#[derive(Debug)]
struct Errors {
    state: f64,
    times: f64,
    jacobian: f64,
    time_gradients: f64,
}

fn errors(run: &Sensitivities, model: &EquationModel, reference: &Value) -> Errors {
    let spec = model.spec();
    let names: Vec<&str> = spec.states.iter().map(|s| s.name.as_str()).collect();
    let system = model.system();
    let events = reference["events"].as_array().unwrap();
    let transitions: Vec<&str> = run
        .trajectory
        .events
        .iter()
        .map(|e| system.transitions()[e.transition].name.as_str())
        .collect();
    let expected: Vec<&str> = events
        .iter()
        .map(|e| e["transition"].as_str().unwrap())
        .collect();
    assert_eq!(transitions, expected, "the events fired");
    let state_ref: Vec<f64> = names
        .iter()
        .map(|n| reference["final_state"][n].as_f64().unwrap())
        .collect();
    let times: Vec<f64> = run.trajectory.event_times();
    let times_ref: Vec<f64> = events.iter().map(|e| e["time"].as_f64().unwrap()).collect();
    let (mut jac, mut jac_ref, mut grad, mut grad_ref) = (vec![], vec![], vec![], vec![]);
    for (column, wrt) in run.wrt.iter().enumerate() {
        for (row, name) in names.iter().enumerate() {
            jac.push(run.final_jacobian[(row, column)]);
            jac_ref.push(reference["jacobian"][name][wrt.as_str()].as_f64().unwrap());
        }
        for (k, event) in events.iter().enumerate() {
            grad.push(run.event_time_gradients[(k, column)]);
            grad_ref.push(event["time_gradient"][wrt.as_str()].as_f64().unwrap());
        }
    }
    Errors {
        state: normwise(&run.trajectory.final_state, &state_ref),
        times: if times.is_empty() {
            0.0
        } else {
            normwise(&times, &times_ref)
        },
        jacobian: normwise(&jac, &jac_ref),
        time_gradients: if grad.is_empty() {
            0.0
        } else {
            normwise(&grad, &grad_ref)
        },
    }
}

/// How far the adjoint's final Jacobian lies from the forward pass's on the
/// same steps ([`Method::ForwardOnStateSteps`]), normwise relative.
fn same_steps_gap(problem: &Problem<'_>, adjoint: &Sensitivities) -> f64 {
    let same_steps = jacobian(problem, Method::ForwardOnStateSteps).unwrap();
    normwise(
        adjoint.final_jacobian.as_slice(),
        same_steps.final_jacobian.as_slice(),
    )
}

/// How far the adjoint's final Jacobian and event-time gradients lie from
/// the forward pass's, normwise relative (the larger).
fn forward_gap(forward: &Sensitivities, adjoint: &Sensitivities) -> f64 {
    let gradients = if forward.event_time_gradients.is_empty() {
        0.0
    } else {
        normwise(
            adjoint.event_time_gradients.as_slice(),
            forward.event_time_gradients.as_slice(),
        )
    };
    normwise(
        adjoint.final_jacobian.as_slice(),
        forward.final_jacobian.as_slice(),
    )
    .max(gradients)
}

/// Whether the adjoint's taped run was redone on the forward pass's steps
/// (a stiff explicit run: `ia_adjoint::probe`) and its derivatives are the
/// forward pass's to `tol` (rounding, as the steps amplify it): the
/// forward pass transposed, whose error is the forward pass's to `tol`.
fn the_forward_pass_transposed(forward: &Sensitivities, adjoint: &Sensitivities, tol: f64) -> bool {
    adjoint.trajectory.stats.redone_steps > 0
        && adjoint.trajectory.stats.steps == forward.trajectory.stats.steps
        && forward_gap(forward, adjoint) <= tol
}

/// Forward and adjoint on the same steps are each other's transposes: they
/// agree to rounding (issue 28's target).
const SAME_STEPS_TOL: f64 = 1e-10;

/// Where no step amplifies rounding, forward and adjoint on the same steps
/// agree to this (measured: 4.6e-14 on the heated rod, DOPRI5 held stable).
const STABLE_SAME_STEPS_TOL: f64 = 1e-12;

/// Forward and adjoint on the same steps differ by at most this many
/// rounding errors (`f64::EPSILON`, normwise relative) amplified by the
/// steps ([`rod_rounding_amplification`]): they make different rounding
/// errors, which the steps amplify alike. Measured on the heated rod at
/// [`TOL`]: 0.0043 (DOPRI5), 0.097 (DOP853), 0.037 (DOPRI5 held stable).
const ROUNDING_AMPLIFIED: f64 = 4.0;

/// A run's derivative error: the larger of its final Jacobian's and its
/// event-time gradients' (normwise relative, against the reference).
fn derivative_error(e: &Errors) -> f64 {
    e.jacobian.max(e.time_gradients)
}

/// Runs `name` with every method, forward and adjoint, and checks each
/// against the reference: state and event times within `STATE_TOL`, the
/// forward pass's derivatives within `FORWARD_TOL` and the adjoint's within
/// `ADJOINT_TOL` (normwise relative), and the adjoint against the forward
/// pass on its steps within [`SAME_STEPS_TOL`], and the adjoint's
/// derivative error ([`derivative_error`]) at most the forward pass's, or
/// the forward pass's own to rounding where the taped run was redone on
/// its steps (issue 28, item 5).
///
/// The forward pass's error control sees its sensitivities; the adjoint's
/// taped run sees the state and the derivative probes (pseudo-random
/// tangents, `ia_adjoint::probe`, one for the explicit methods and two for
/// the implicit ones; issue 28, item 5). Without the probe the
/// adjoint's derivatives were 3.8e-7 from the reference (the relay's,
/// DOPRI5) and 1.7e-7 (the drug model's), and `ADJOINT_TOL` was 1e-6. With
/// it, measured at `1e-10`: relay 1.6e-11 (DOP853), drug 2.0e-10 (DOP853),
/// Kelvin-Voigt ball 4.4e-11 (DOPRI5), heated rod 1.3e-8 (DOPRI5: its steps
/// are held by stability, see
/// [`heated_rod_adjoint_against_forward_on_the_same_steps`]; the forward
/// pass 1.3e-9), and `ADJOINT_TOL` was twice `FORWARD_TOL`. Since the
/// explicit stepper holds its steps inside the stability boundary
/// ([`stiff_runs_are_held_inside_the_stability_boundary_and_redone`]),
/// the explicit methods' derivatives on the stiff problems are 1e-11 to
/// 1e-13 from the references (the rod's, DOPRI5: 5.8e-13 both ways), and
/// `ADJOINT_TOL` is `FORWARD_TOL`.
///
/// Kvaerno 5(4) on the Kelvin-Voigt ball was a known gap (forward event-time
/// gradients 1.63e-8, the adjoint's Jacobian 1.1e-7, not following the
/// tolerance) until the implicit stages carrying sensitivities were polished
/// to rounding (`ia_events::implicit_rk::ImplicitStepper`): a stage converged
/// to a thousandth of the tolerance only had sensitivities of a slightly
/// different stage, and an adjoint whose stages, solved again to rounding,
/// were not the forward pass's. Now 2.6e-10 (forward event-time gradients)
/// and 2.2e-10 (adjoint), measured.
fn check_piecewise_linear(name: &str) {
    check_piecewise_linear_with(name, METHODS);
}

/// [`check_piecewise_linear`] with the methods `methods`.
fn check_piecewise_linear_with(name: &str, methods: &[(&str, MethodAt)]) {
    let (model, reference) = problem_files(name);
    let system = model.system();
    let mut failures = Vec::new();
    for &(method, solver) in methods {
        let problem = reference_problem(&system, &model, &reference, solver(TOL));
        let (mut forward, mut adjoint) = (None, None);
        for sensitivity in [Method::Forward, Method::Adjoint] {
            let run = jacobian(&problem, sensitivity).unwrap();
            let e = errors(&run, &model, &reference);
            println!("{name} {method} {sensitivity:?}: {e:?}");
            let derivative_tol = match sensitivity {
                Method::Adjoint => ADJOINT_TOL,
                _ => FORWARD_TOL,
            };
            if e.state > STATE_TOL || e.times > STATE_TOL {
                failures.push(format!("{method} {sensitivity:?}: {e:?}"));
            }
            if e.jacobian > derivative_tol || e.time_gradients > derivative_tol {
                failures.push(format!("{method} {sensitivity:?}: {e:?}"));
            }
            match sensitivity {
                Method::Adjoint => adjoint = Some((run, e)),
                _ => forward = Some((run, e)),
            }
        }
        let (adjoint, adjoint_errors) = adjoint.unwrap();
        let (forward, forward_errors) = forward.unwrap();
        // Forward on the adjoint's steps: its exact transpose, so the two
        // agree to rounding (issue 28's target: 1e-10 relative).
        let transposed = same_steps_gap(&problem, &adjoint);
        println!("{name} {method}: adjoint against forward on its steps {transposed:e}");
        if transposed > SAME_STEPS_TOL {
            failures.push(format!(
                "{method}: adjoint against forward on the same steps {transposed:e}"
            ));
        }
        // Issue 28, item 5: the adjoint within the forward pass's accuracy:
        // at most its error, or, where the taped run was redone on the
        // forward pass's steps (a stiff explicit run: `ia_adjoint::probe`),
        // the forward pass's own derivative transposed, equal to it to the
        // rounding the steps amplify (its error then differs from the
        // forward pass's by no more than that).
        let (f, a) = (
            derivative_error(&forward_errors),
            derivative_error(&adjoint_errors),
        );
        println!(
            "{name} {method}: redone after {} steps, against the forward pass {:e}",
            adjoint.trajectory.stats.redone_steps,
            forward_gap(&forward, &adjoint)
        );
        let within = a <= f || the_forward_pass_transposed(&forward, &adjoint, SAME_STEPS_TOL);
        if !within {
            failures.push(format!(
                "{method}: adjoint {a:e} above the forward pass's {f:e}"
            ));
        }
    }
    assert!(failures.is_empty(), "{name}: {failures:#?}");
}

#[test]
fn drug_model_against_its_matrix_exponential_reference() {
    // The drug model is linear: its flow declares its Jacobian constant,
    // so the implicit methods reuse one Jacobian a segment and one
    // factorisation a step size for the sensitivities; the reference
    // checks below then test that reuse.
    let (model, _) = problem_files("drug");
    let system = model.system();
    assert!(system
        .modes()
        .iter()
        .all(|mode| mode.flow.state_jacobian_is_constant()));
    check_piecewise_linear("drug");
}

#[test]
fn ball_on_a_kelvin_voigt_ground_against_its_matrix_exponential_reference() {
    check_piecewise_linear("ball_kelvin_voigt");
}

#[test]
fn relay_with_hysteresis_against_its_matrix_exponential_reference() {
    check_piecewise_linear("relay");
}

#[test]
fn slowly_switching_relay_against_its_matrix_exponential_reference() {
    // Reference: references/stiff/relay_slow.reference.json, computed by
    // references.py (mpmath at 50 digits: matrix exponentials, root
    // finding, central differences). The stability-limited relay of issue
    // 28: the poles -1 and -1e3 of relay.json, the input into the slow
    // state and the relay reading the fast sensor, switching about every
    // four slow time constants. Its thresholds near the steady outputs
    // make the crossings shallow (the reading's rate 0.02 there): an error
    // in the state moves an event 50 times as much, and DOP853's forward
    // pass at TOL is 1.7e-8 from the reference (measured; its adjoint
    // 1.0e-8), above FORWARD_TOL, so this problem runs with DOPRI5 and
    // Kvaerno 5(4) (measured forward / adjoint: 4.2e-10 / 1.1e-8 and
    // 4.1e-9 / 3.1e-9).
    check_piecewise_linear_with("relay_slow", &[("dopri5", dopri5), ("kvaerno5", kvaerno5)]);
}

/// The slowly switching relay at issue 28's tolerance (`rtol = atol =
/// 1e-8`) with every implicit method and DOPRI5: the adjoint within
/// [`SAME_STEPS_TOL`] of the forward pass on its steps, and forward pass
/// and adjoint within `1e-5` of the reference (normwise relative) for the
/// methods of order three and more. TR-BDF2 (order two) is not: 3.9e-5
/// (forward) and 4.0e-5 (adjoint), measured, over 6,500 steps whose
/// errors the shallow crossings amplify (see
/// [`slowly_switching_relay_against_its_matrix_exponential_reference`]);
/// its adjoint is checked against its forward pass at 1e-7 in
/// [`low_order_implicit_methods_adjoint_within_the_forward_passs_accuracy`].
#[test]
fn slowly_switching_relay_at_the_issues_tolerance() {
    // Reference: references/stiff/relay_slow.reference.json (mpmath, see
    // references.py); the forward pass on the adjoint's steps is its exact
    // transpose. Measured (normwise, forward / adjoint, largest of state,
    // times, Jacobian and time gradients; adjoint against forward on its
    // steps): Kvaerno 3(2) 1.1e-7 / 6.5e-8, 8.9e-15; Kvaerno 5(4) 3.6e-7 /
    // 1.5e-7, 4.8e-15 (the implicit probes held to half the tolerance,
    // `ia_adjoint::PROBE_SAFETY`); DOPRI5 1.4e-7 / 1.1e-6, 3.2e-14;
    // TR-BDF2 (same steps only) 5.7e-15.
    const ISSUE_TOL: f64 = 1e-8;
    const ISSUE_BOUND: f64 = 1e-5;
    let (model, reference) = problem_files("relay_slow");
    let system = model.system();
    // (name, method, checked against the reference)
    let methods: &[(&str, MethodAt, bool)] = &[
        ("trbdf2", trbdf2, false),
        ("kvaerno3", kvaerno3, true),
        ("kvaerno5", kvaerno5, true),
        ("dopri5", dopri5, true),
    ];
    let mut failures = Vec::new();
    for &(method, solver, against_reference) in methods {
        let problem = reference_problem(&system, &model, &reference, solver(ISSUE_TOL));
        let forward = jacobian(&problem, Method::Forward).unwrap();
        let adjoint = jacobian(&problem, Method::Adjoint).unwrap();
        let (f, a) = (
            errors(&forward, &model, &reference),
            errors(&adjoint, &model, &reference),
        );
        let transposed = same_steps_gap(&problem, &adjoint);
        println!(
            "relay_slow {method} at {ISSUE_TOL:e}: forward {f:?} ({} steps), adjoint {a:?} ({} steps), same steps {transposed:e}",
            forward.trajectory.stats.steps, adjoint.trajectory.stats.steps
        );
        for (sensitivity, e) in [("forward", &f), ("adjoint", &a)] {
            let worst = e.state.max(e.times).max(e.jacobian).max(e.time_gradients);
            if against_reference && worst > ISSUE_BOUND {
                failures.push(format!("{method} {sensitivity}: {e:?}"));
            }
        }
        if transposed > SAME_STEPS_TOL {
            failures.push(format!(
                "{method}: adjoint against forward on the same steps {transposed:e}"
            ));
        }
    }
    assert!(failures.is_empty(), "{failures:#?}");
}

#[test]
fn heated_rod_against_its_matrix_exponential_reference() {
    check_piecewise_linear("heated_rod");
}

/// The methods that can run ROBER to `t = 1e11` (an explicit method's
/// steps are held near `1e-4` by stability there: 1e15 steps).
const IMPLICIT_METHODS: &[(&str, MethodAt)] = &[("kvaerno5", kvaerno5)];

/// Runs a problem without events with `solver` and returns how far its final
/// state lies from the published one, normwise relative.
fn published_error(name: &str, solver: SolverChoice) -> f64 {
    let (model, reference) = problem_files(name);
    let spec = model.spec();
    let system = model.system();
    let problem = Problem::new(
        &system,
        spec.default_state(),
        spec.default_params(),
        reference["t_end"].as_f64().unwrap(),
    )
    .with_solver(solver);
    let run = simulate(&problem).unwrap();
    let expected: Vec<f64> = spec
        .states
        .iter()
        .map(|s| reference["final_state"][&s.name].as_f64().unwrap())
        .collect();
    let error = normwise(&run.final_state, &expected);
    println!("{name}: error {error:e}, {:?}", run.stats);
    error
}

#[test]
fn hires_against_the_test_set() {
    for &(method, solver) in METHODS {
        let error = published_error("hires", solver(TOL));
        assert!(error < 1e-7, "hires {method}: {error:e}");
    }
}

#[test]
fn rober_against_the_test_set() {
    for &(method, solver) in IMPLICIT_METHODS {
        let error = published_error("rober", solver(TOL));
        assert!(error < 1e-7, "rober {method}: {error:e}");
    }
}

#[test]
fn dopri5_finds_rober_stiff_and_names_the_implicit_methods() {
    // Reference: ROBER's Jacobian has an eigenvalue near -1e4 once y3 has
    // grown, so DOPRI5's steps are held near 3.3e-4 by stability: its step
    // limit is reached long before t = 1e11, and its stiffness test says so.
    let (model, reference) = problem_files("rober");
    let spec = model.spec();
    let system = model.system();
    let problem = Problem::new(
        &system,
        spec.default_state(),
        spec.default_params(),
        reference["t_end"].as_f64().unwrap(),
    )
    .with_solver(dopri5(1e-6))
    .with_event_options(EventOptions {
        max_steps: 5_000,
        ..EventOptions::default()
    });
    let error = simulate(&problem).unwrap_err();
    assert_eq!(error.kind(), "step_limit");
    let stats = error.trajectory().unwrap().stats;
    assert!(2 * stats.stiff_steps > stats.steps, "{stats:?}");
    let message = error.to_string();
    for name in ["trbdf2", "kvaerno3", "kvaerno5"] {
        assert!(message.contains(name), "{message}");
    }
}

#[test]
fn dopri5_finds_a_finer_heated_rod_stiff() {
    // Reference: the rod's diffusion eigenvalues reach -4 kappa N^2
    // (-4800 at 20 cells), far beyond the rates its thermostat cycle runs
    // at (beta = 1): DOPRI5's steps are held by stability, and its
    // stiffness test says so on most of them. The heater switches off and
    // on in turn.
    let model = EquationModel::from_value(&ia_verify::references::stiff::heated_rod(20)).unwrap();
    let spec = model.spec();
    let system = model.system();
    let problem = Problem::new(&system, spec.default_state(), spec.default_params(), 5.5)
        .with_solver(dopri5(1e-8));
    let run = simulate(&problem).unwrap();
    assert!(
        2 * run.stats.stiff_steps > run.stats.steps,
        "{:?}",
        run.stats
    );
    let names: Vec<&str> = run
        .events
        .iter()
        .map(|e| system.transitions()[e.transition].name.as_str())
        .collect();
    assert!(names.len() >= 2, "{names:?}");
    for (k, name) in names.iter().enumerate() {
        assert_eq!(*name, ["heater_off", "heater_on"][k % 2], "{names:?}");
    }
}

/// One entry of a run as [`StepsAndSaltations`] records it.
enum Taken {
    /// An accepted step: start time and size.
    Step(f64, f64),
    /// An event's saltation matrix `Xi = r_x + w g_x^T / gdot` (`r_x = I`:
    /// the heated rod's resets leave the state as it is), n x n.
    Saltation(nalgebra::DMatrix<f64>),
}

/// Records a run's accepted steps and the saltation matrix of each of its
/// events, in order.
struct StepsAndSaltations(Vec<Taken>);

impl ia_events::Observer for StepsAndSaltations {
    fn step_taken(&mut self, _: ia_events::RunContext<'_>, _: usize, t0: f64, h: f64, _: &[f64]) {
        self.0.push(Taken::Step(t0, h));
    }

    fn event(
        &mut self,
        _: ia_events::RunContext<'_>,
        jump: &ia_events::EventJump<'_>,
    ) -> Result<(), ia_core::HybridError> {
        assert_eq!(jump.state_before, jump.state_after, "an identity reset");
        let geometry = jump.geometry.expect("the event's geometry");
        let n = jump.state_before.len();
        let xi = nalgebra::DMatrix::identity(n, n)
            + &geometry.time_shift * geometry.guard.x.transpose() / geometry.guard_rate;
        self.0.push(Taken::Saltation(xi));
        Ok(())
    }

    fn wants_event_geometry(&self) -> bool {
        true
    }
}

/// How far rounding can take a tangent carried by the heated rod's steps
/// under `problem`, in units of `f64::EPSILON`: the largest, over the
/// eigenvalues `lambda_j` of the rod's Jacobian, of `sum_k T_k(lambda_j)
/// c_j(k)`, where `T_k` sums the magnitudes of the terms step `k` adds up
/// (its rounding) and `c_j(k)` is how far a unit error in eigencomponent
/// `j` at the end of step `k` reaches at the end: the largest entry of
/// column `j` of `|M_K| ... |M_{k+1}|`, the later steps' and events' maps
/// in the eigenbasis, in absolute value. The rod's flow is `x' = A x + b`,
/// with the same symmetric `A` in both modes (asserted), so each step
/// multiplies a tangent by `R(h A)`, diagonal in the eigenbasis (`R` the
/// method's stability function); an event by its saltation `V^T Xi V`,
/// which is not: its rank-one term `w g_x^T / gdot` moves an error in one
/// eigencomponent into the others (through the event time: a stiff
/// component grown by steps beyond the stability boundary before an event
/// reaches the slow components, which carry it to the end after the stiff
/// one has decayed). Without events, `c_j(k)` is `prod_{l > k} |R(h_l
/// lambda_j)|`, the growth alone (the bound before events were counted:
/// it put DOP853's amplification on the rod at 2.6e3 where, counting
/// them, it is 1.2e6).
fn rod_rounding_amplification(problem: &Problem<'_>) -> f64 {
    let system = problem.system;
    let n = system.state_dim();
    let a_of = |mode: usize| state_jacobian(problem, mode);
    let a = a_of(0);
    assert_eq!(a, a.transpose(), "a symmetric Jacobian");
    assert!((0..system.modes().len()).all(|mode| a_of(mode) == a));
    let mut taken = StepsAndSaltations(Vec::new());
    ia_adjoint::run_on_taped_steps(problem, &mut taken, |taken| taken.0.clear()).unwrap();
    let eigen = a.symmetric_eigen();
    let (lambdas, v) = (eigen.eigenvalues, eigen.eigenvectors);
    let tableau = problem.solver.tableau().unwrap();
    let (mut k, mut stages) = (vec![0.0; tableau.solution_stages()], vec![0.0]);
    // Walking back from the end: `growth` is `|M_K| ... |M_{k+1}|` in the
    // eigenbasis, `sums[j]` adds step k's rounding in eigencomponent j (its
    // terms' magnitudes) amplified by how far it reaches.
    let mut growth = nalgebra::DMatrix::<f64>::identity(n, n);
    let mut sums = vec![0.0f64; n];
    for entry in taken.0.iter().rev() {
        match *entry {
            Taken::Step(t0, h) => {
                for (j, &lambda) in lambdas.iter().enumerate() {
                    let rate = &mut |_: f64, y: &[f64], out: &mut [f64]| out[0] = lambda * y[0];
                    tableau.stages(rate, t0, h, &[1.0], 0, &mut k, &mut stages);
                    let mut r = [0.0];
                    tableau.solution(h, &[1.0], &k, &mut r);
                    let terms: f64 = 1.0
                        + (0..k.len())
                            .map(|i| {
                                let weight = tableau.b[i].abs()
                                    + tableau
                                        .a
                                        .iter()
                                        .filter_map(|row| row.get(i))
                                        .map(|a| a.abs())
                                        .sum::<f64>();
                                h * weight * k[i].abs()
                            })
                            .sum::<f64>();
                    let mut column = growth.column_mut(j);
                    sums[j] += terms * column.max();
                    column *= r[0].abs();
                }
            }
            Taken::Saltation(ref xi) => {
                growth = &growth * (v.transpose() * xi * &v).abs();
            }
        }
    }
    sums.into_iter().fold(1.0, f64::max)
}

#[test]
fn heated_rod_adjoint_against_forward_on_the_same_steps() {
    // Reference: the forward pass on the adjoint's steps, its exact
    // transpose: the two form the same product of step matrices, in
    // opposite orders, so they agree to rounding, as the steps amplify it
    // ([`rod_rounding_amplification`]).
    //
    // The rod is stiff (its Jacobian's eigenvalues reach -404 with six
    // cells, beta = 1). Before the explicit stepper held its steps inside
    // the stability boundary (`ia_events::stiffness`), they were found
    // there by trial: the step controller let the stiffest component grow
    // (|R(h lambda)| > 1 on 116 of DOPRI5's 266 steps over t in [0, 2] at
    // 1e-8) until its error estimate shrank the step (the rejected steps),
    // so a rounding error made in that component grew up to 1.9e7-fold on
    // the way to the end, in the forward pass's sensitivities as in the
    // adjoint's cotangents. The two make different rounding errors (one
    // sums f_x S, the other f_x^T lambda), so they differ by that much:
    // 1.6e-9 normwise on the six-cell rod with DOPRI5 at 1e-10 (the same
    // 994 steps, final states equal to the bit), 3.3e-11 with DOP853.
    // Neither side is wrong: over t in [0, 2] at 1e-8 the initial-state
    // block formed a third way (by hand, column by column, on the same
    // steps) lies 4e-9 from each (entries 0.0226), as far as they lie from
    // each other. With two cells no step amplifies (3e-15); held below its
    // stability boundary (`max_step` 1e-3: no step amplifies, none is
    // rejected) DOPRI5's two sides agree to 3e-14 through every event: the
    // transpose is exact, and is held to STABLE_SAME_STEPS_TOL there.
    //
    // The events mix what the steps amplify (rod_rounding_amplification):
    // with DOP853's events refined on their redone steps (the heater_on at
    // t = 2.862 moved by 6.8e-8), the steps after it grow the stiff
    // components' rounding 4.0e5-fold by t = 4.4 (4.0e3 from the steps
    // the unrefined event left: another sequence of stability-held steps),
    // and the heater_off at t = 4.413 carries it through its time into the
    // slow component, which keeps it to the end while the stiff ones
    // decay: just before that event the two sides' gap in the
    // -404-component of the final Jacobian was 2.2e-10 (entries 2.6e-3
    // there), the gap of the event's time gradient 2.7e-10 is that of T5's
    // row divided by gdot, and the gap at the end 2.6e-11 (measured).
    // The transpose itself is exact with refinement: held stable, and on
    // the wall oscillator
    // (`sensitivities::an_explicit_event_refined_on_its_step_is_transposed_exactly`).
    let (model, reference) = problem_files("heated_rod");
    let spec = model.spec();
    let system = model.system();
    let mut failures = Vec::new();
    let bounded = |tol: f64| SolverChoice::Dopri5 {
        rtol: tol,
        atol: tol,
        max_step: Some(1e-3),
    };
    // Whether the steps amplify rounding (held stable, none does: the two
    // sides are held to STABLE_SAME_STEPS_TOL alone).
    let cases: &[(&str, MethodAt, bool)] = &[
        (METHODS[0].0, METHODS[0].1, true),
        (METHODS[1].0, METHODS[1].1, true),
        ("dopri5 held stable", bounded, false),
    ];
    for &(method, solver, amplifies) in cases {
        let problem = Problem::new(
            &system,
            spec.default_state(),
            spec.default_params(),
            reference["t_end"].as_f64().unwrap(),
        )
        .with_mode("heating")
        .unwrap()
        .with_solver(solver(TOL));
        let adjoint = jacobian(&problem, Method::Adjoint).unwrap();
        let gap = same_steps_gap(&problem, &adjoint);
        let amplification = rod_rounding_amplification(&problem);
        let bound = if amplifies {
            (ROUNDING_AMPLIFIED * f64::EPSILON * amplification).max(STABLE_SAME_STEPS_TOL)
        } else {
            STABLE_SAME_STEPS_TOL
        };
        let roundings = gap / (f64::EPSILON * amplification);
        println!(
            "heated_rod {method}: gap {gap:e}, amplification {amplification:e}, bound {bound:e}, {roundings:e} roundings amplified"
        );
        if gap > bound {
            failures.push(format!("{method}: {gap:e} > {bound:e}"));
        }
        // Issue 28's target (1e-10) as well. DOPRI5 at TOL was 1.26e-10
        // while its steps were found at the boundary by trial (they
        // amplified rounding 4.0e7-fold); held inside it, measured 6.6e-15
        // (amplification 1.4e3), DOP853 2.1e-14, `max_step` 1e-3 4.6e-14.
        if gap > SAME_STEPS_TOL {
            failures.push(format!(
                "{method}: {gap:e} above issue 28's {SAME_STEPS_TOL:e}"
            ));
        }
    }
    assert!(failures.is_empty(), "{failures:?}");
}

#[test]
fn dopri5s_adjoint_on_the_drug_model_is_within_the_forward_passs_accuracy_with_or_without_a_probe()
{
    // Reference: the mpmath matrix-exponential reference of the drug model
    // (references/stiff/drug.reference.json). Issue 28, item 5: at rtol
    // 1e-8, DOPRI5's adjoint transposed steps chosen for the state alone
    // and was 7.5e-5 from the reference (normwise; 9.6e-9 for the forward
    // pass), 4.1e-9 with one derivative probe: the steps, found at the
    // stability boundary by trial, grew the stiff component's error in
    // the derivatives. Since the explicit stepper holds its steps inside
    // the boundary once the stiff rate has shown (`ia_events::stiffness`),
    // every variant is at the forward pass's accuracy, and far below the
    // tolerance: measured forward 1.0e-12, one probe 4.4e-12, the
    // automatic choice (redone on the forward pass's steps, the drug model
    // being stiff for DOPRI5) 3.5e-12, no probe 2.3e-13.
    let (model, reference) = problem_files("drug");
    let system = model.system();
    let problem = |probes| {
        reference_problem(&system, &model, &reference, dopri5(1e-8)).with_derivative_probes(probes)
    };
    let error = |problem: &Problem<'_>, method| {
        errors(&jacobian(problem, method).unwrap(), &model, &reference).jacobian
    };
    let forward = error(&problem(None), Method::Forward);
    let probed = error(&problem(Some(1)), Method::Adjoint);
    let redone = error(&problem(None), Method::Adjoint);
    let unprobed = error(&problem(Some(0)), Method::Adjoint);
    println!(
        "forward {forward:e}, adjoint {probed:e}, redone {redone:e}, without the probe {unprobed:e}"
    );
    for (what, error) in [
        ("forward", forward),
        ("one probe", probed),
        ("redone", redone),
        ("no probe", unprobed),
    ] {
        assert!(error < 1e-10, "{what}: {error:e}");
    }
}

fn trbdf2(tol: f64) -> SolverChoice {
    SolverChoice::Trbdf2 {
        rtol: tol,
        atol: tol,
        max_step: None,
    }
}

fn kvaerno3(tol: f64) -> SolverChoice {
    SolverChoice::Kvaerno3 {
        rtol: tol,
        atol: tol,
        max_step: None,
    }
}

/// Records a run's accepted steps by mode: `(mode, size)`.
struct StepsByMode(Vec<(usize, f64)>);

impl ia_events::Observer for StepsByMode {
    fn step_taken(&mut self, _: ia_events::RunContext<'_>, mode: usize, _: f64, h: f64, _: &[f64]) {
        self.0.push((mode, h));
    }
}

/// `f_x` of mode `mode`'s flow at `problem`'s initial state.
fn state_jacobian(problem: &Problem<'_>, mode: usize) -> nalgebra::DMatrix<f64> {
    let flow = problem.system.modes()[mode].flow.as_ref();
    let x0 = &problem.initial_state;
    ia_core::FlowPartials::of_flow_in(&mut None, flow, 0.0, x0, &problem.params)
        .x
        .clone()
}

/// The largest modulus of an eigenvalue of `f_x` over the modes of
/// `problem`'s system (each flow linear: `f_x` the same at every state).
fn stiffest_rate(problem: &Problem<'_>) -> f64 {
    (0..problem.system.modes().len())
        .map(|mode| {
            state_jacobian(problem, mode)
                .complex_eigenvalues()
                .iter()
                .fold(0.0f64, |m, z| m.max(z.norm()))
        })
        .fold(0.0, f64::max)
}

#[test]
fn stiff_runs_are_held_inside_the_stability_boundary_and_redone() {
    // Reference: the flows' stiffest rates by nalgebra's eigenvalues of
    // f_x (1e3 for the slowly switching relay's fast pole, 404 for the
    // six-cell rod's Laplacian with its losses), against DOPRI5's bound
    // 3.25 (Hairer's; its stability boundary on the real axis is 3.31).
    // Before the hold (`ia_events::stiffness`), at TOL these runs took
    // steps up to 1.3x and 1.6x that boundary, Hairer's test declared none
    // of the taped run's steps stiff (the stiff component stayed near
    // rounding until a step was rejected, so the last stages' quotient
    // measured the slow rates), 10 to 15 % of the steps were rejected, and
    // the steps amplified rounding 4e7-fold on the rod. Now a rejected step
    // measures the rate, and the steps after it are held at 0.9 x 3.25 /
    // rate: at most a few steps of a stretch before its first rejection
    // are beyond, the held steps count as stiff, and the adjoint's taped
    // run, stiff, is redone on the forward pass's steps (issue 28,
    // item 5). The references' check of the derivatives is
    // `check_piecewise_linear`.
    use ia_events::NoExtraState;
    const BOUND: f64 = 3.25;
    for name in ["relay_slow", "heated_rod"] {
        let (model, reference) = problem_files(name);
        let system = model.system();
        let problem = reference_problem(&system, &model, &reference, dopri5(TOL));
        let rate = stiffest_rate(&problem);
        let mut steps = StepsByMode(Vec::new());
        let primal = ia_events::run(&problem, &mut NoExtraState, &mut steps).unwrap();
        let stats = &primal.stats;
        let beyond = steps.0.iter().filter(|&&(_, h)| h * rate > BOUND).count();
        let held = steps
            .0
            .iter()
            .filter(|&&(_, h)| (h * rate - 0.9 * BOUND).abs() <= 1e-3 * BOUND)
            .count();
        println!("{name}: rate {rate:e}, {stats:?}, {beyond} beyond, {held} held");
        // The run's first trial of the boundary (before its first rejected
        // step; measured: none on the relay, whose events come before its
        // steps grow that far, 9 on the rod), fewer than Hairer's test
        // needs in a row to declare a flow stiff.
        assert!(beyond < 15, "{name}: {beyond} beyond");
        assert!(2 * held > stats.steps, "{name}: {held} held");
        assert!(2 * stats.stiff_steps > stats.steps, "{name}: {stats:?}");
        assert!(50 * stats.rejected_steps < stats.steps, "{name}: {stats:?}");
        let adjoint = jacobian(&problem, Method::Adjoint)
            .unwrap()
            .trajectory
            .stats;
        let forward = jacobian(&problem, Method::Forward)
            .unwrap()
            .trajectory
            .stats;
        assert!(adjoint.redone_steps > 0, "{name}: {adjoint:?}");
        assert_eq!(adjoint.steps, forward.steps, "{name}");
    }
}

#[rstest::rstest]
fn a_stiff_contacts_stability_limit_does_not_hold_the_flight_after_it(
    #[values(dopri5, dop853)] solver: MethodAt,
) {
    // Reference: the flight is a parabola, which the methods integrate
    // exactly, so its steps are set by the error estimate's rounding noise
    // and grow by the growth cap (tenfold) a step: a few per flight. The
    // contact's f_x has eigenvalues of modulus sqrt(k) = 1e3, so once one
    // of its steps is rejected the contact's steps are held at
    // 0.9 x 3.25 / 1e3 = 2.9e-3 (DOPRI5). Carried into the flight, that
    // limit would hold it there: DOPRI5 took 435 steps at 1e-8 instead of
    // 78 until a limit the restart's proposal does not reach was dropped
    // at the restart (`ia_events::stiffness`).
    use ia_events::NoExtraState;
    let (model, reference) = problem_files("ball_kelvin_voigt");
    let system = model.system();
    let problem = reference_problem(&system, &model, &reference, solver(1e-8));
    let mut steps = StepsByMode(Vec::new());
    let run = ia_events::run(&problem, &mut NoExtraState, &mut steps).unwrap();
    let flight = system.mode_index("flight").unwrap();
    let flights = 1 + run.events.iter().filter(|e| e.to_mode == flight).count();
    let flight_steps = steps.0.iter().filter(|(mode, _)| *mode == flight).count();
    println!(
        "{:?}: {flight_steps} flight steps in {flights} flights",
        run.stats
    );
    assert!(
        flight_steps <= 12 * flights,
        "{flight_steps} steps in {flights} flights"
    );
}

#[test]
fn low_order_implicit_methods_adjoint_within_the_forward_passs_accuracy() {
    // Reference: the mpmath matrix-exponential references of
    // references/stiff/ (references.py). Issue 28, item 5: every method's
    // adjoint within the forward pass's accuracy (normwise, the larger of
    // the final Jacobian's and the event-time gradients' errors), here for
    // the cases `check_piecewise_linear` does not run: TR-BDF2 and Kvaerno
    // 3(2) at 1e-7 on every problem (their orders, 2 and 3, would take
    // tens of thousands of steps at TOL), and DOP853 on the slowly
    // switching relay at TOL (its forward pass is above FORWARD_TOL there).
    // The implicit methods' taped runs carry two probes
    // (`ia_adjoint::IMPLICIT_PROBES`), each held to half the tolerance
    // (`ia_adjoint::PROBE_SAFETY`). Measured (forward / adjoint): drug
    // TR-BDF2 1.7e-5 / 6.7e-6, Kvaerno 3(2) 1.3e-7 / 3.2e-8; Kelvin-Voigt
    // ball 2.8e-6 / 2.0e-6 and 5.1e-8 / 3.2e-8; relay 3.7e-5 / 1.7e-5 and
    // 1.7e-7 / 5.5e-8; slowly switching relay 1.8e-4 / 1.2e-4 and 1.1e-6 /
    // 6.4e-7 (without the safety factor 1.9e-4 and 1.3e-6, above the
    // forward pass); DOP853 there 1.7e-8 / 1.0e-8 with one random probe,
    // now redone as stiff on the forward pass's steps: 1.6633e-8 /
    // 1.6638e-8, the forward pass transposed (to 3.5e-11).
    let cases: &[(&str, &str, MethodAt, f64)] = &[
        ("drug", "trbdf2", trbdf2, 1e-7),
        ("drug", "kvaerno3", kvaerno3, 1e-7),
        ("ball_kelvin_voigt", "trbdf2", trbdf2, 1e-7),
        ("ball_kelvin_voigt", "kvaerno3", kvaerno3, 1e-7),
        ("relay", "trbdf2", trbdf2, 1e-7),
        ("relay", "kvaerno3", kvaerno3, 1e-7),
        ("relay_slow", "trbdf2", trbdf2, 1e-7),
        ("relay_slow", "kvaerno3", kvaerno3, 1e-7),
        ("relay_slow", "dop853", dop853, TOL),
    ];
    let mut failures = Vec::new();
    for &(name, method, solver, tol) in cases {
        let (model, reference) = problem_files(name);
        let system = model.system();
        let problem = reference_problem(&system, &model, &reference, solver(tol));
        let runs = [Method::Forward, Method::Adjoint].map(|m| jacobian(&problem, m).unwrap());
        let [forward, adjoint] = runs
            .each_ref()
            .map(|run| derivative_error(&errors(run, &model, &reference)));
        let steps = runs.each_ref().map(|run| run.trajectory.stats.steps);
        println!(
            "{name} {method} at {tol:e}: forward {forward:e} ({} steps), adjoint {adjoint:e} ({} steps, redone after {})",
            steps[0], steps[1], runs[1].trajectory.stats.redone_steps
        );
        if adjoint > forward && !the_forward_pass_transposed(&runs[0], &runs[1], SAME_STEPS_TOL) {
            failures.push(format!(
                "{name} {method}: adjoint {adjoint:e} > forward {forward:e}"
            ));
        }
    }
    assert!(failures.is_empty(), "{failures:#?}");
}

#[test]
fn sparse_heated_rod_adjoint_against_forward_on_the_same_steps() {
    // Reference: the forward pass on the adjoint's steps, its exact
    // transpose (as in `check_piecewise_linear`), with both factorising
    // sparsely: the rod of 40 cells declares its tridiagonal Jacobian (the
    // equation model reads it off its instructions), which is past the
    // size and density where the implicit methods switch to faer's sparse
    // LU (`sparse_pays`). Kvaerno 5(4) holds no step by stability, so no
    // rounding is amplified: the two agree to `SAME_STEPS_TOL` (measured
    // 7.7e-14 over the whole Jacobian). To stay cheap the test compares
    // one adjoint gradient (the last cell's final temperature) with the
    // forward pass's parameter columns and two initial-state columns.
    use ia_adjoint::{gradient, jacobian_wrt, FinalComponent};
    let cells = 40;
    let model =
        EquationModel::from_value(&ia_verify::references::stiff::heated_rod(cells)).unwrap();
    let spec = model.spec();
    let system = model.system();
    for mode in system.modes() {
        let pattern = mode.flow.state_sparsity().expect("a declared sparsity");
        assert_eq!(pattern.nnz(), 3 * cells - 2);
        assert!(ia_events::implicit_rk::sparse_pays(pattern));
    }
    let problem = Problem::new(&system, spec.default_state(), spec.default_params(), 5.5)
        .with_mode("heating")
        .unwrap()
        .with_solver(kvaerno5(1e-8));
    let last = cells - 1;
    let adjoint = gradient(&problem, &FinalComponent(last)).unwrap();
    assert!(adjoint.trajectory.events.len() >= 2);
    let mut wrt: Vec<String> = spec
        .params
        .iter()
        .map(|p| format!("param.{}", p.name))
        .collect();
    wrt.extend(["initial.T0".to_string(), format!("initial.T{last}")]);
    let wrt: Vec<&str> = wrt.iter().map(String::as_str).collect();
    let forward = jacobian_wrt(&problem, Method::ForwardOnStateSteps, &wrt).unwrap();
    let row: Vec<f64> = (0..wrt.len())
        .map(|c| forward.final_jacobian[(last, c)])
        .collect();
    let mut transposed = adjoint.params.clone();
    transposed.extend([adjoint.initial_state[0], adjoint.initial_state[last]]);
    let gap = normwise(&transposed, &row);
    println!("heated_rod({cells}) kvaerno5 sparse: adjoint against forward on its steps {gap:e}");
    assert!(gap <= SAME_STEPS_TOL, "{gap:e}");
}

/// Van der Pol's oscillator in Hairer's scaling, `x' = y`,
/// `y' = mu ((1 - x^2) y - x + u)`, stiff for large `mu`, under a relay:
/// the forcing `u = +a` in mode `push` until `x` falls below `lo` on its
/// slow branch, then `u = -a` in mode `pull` until `x` rises above `-lo`.
fn van_der_pol_relay() -> EquationModel {
    let flow = |u: &str| serde_json::json!({"flow": {"x": "y", "y": format!("mu * ((1 - x^2) * y - x {u} a)")}});
    EquationModel::from_value(&serde_json::json!({
        "name": "van-der-pol-relay",
        "description": "Van der Pol's oscillator (Hairer's scaling, mu = 1000) under a relay forcing of +-a switched on x's slow branches.",
        "states": {"x": 2.0, "y": -0.6},
        "params": {"mu": 1e3, "a": 0.3, "lo": 1.4},
        "modes": {"push": flow("+"), "pull": flow("-")},
        "transitions": [
            {"name": "to_pull", "from": "push", "to": "pull", "guard": "x - lo",
             "direction": "falling", "reset": {}},
            {"name": "to_push", "from": "pull", "to": "push", "guard": "x + lo",
             "direction": "rising", "reset": {}}
        ],
        "initial_mode": "push",
        "t_end": 1.8
    }))
    .unwrap()
}

#[test]
fn van_der_pol_under_a_relay_against_finite_differences() {
    // Reference: central differences (Richardson-extrapolated, with their
    // error estimates: `ia_verify::finite_difference`) of runs at 1e-12
    // with Kvaerno 5(4), the same events firing in every perturbed run;
    // and, for the adjoint, the forward pass on its steps (its exact
    // transpose, to `SAME_STEPS_TOL`). The flow is nonlinear and stiff
    // (mu = 1e3: the fast eigenvalue near -mu (x^2 - 1), -3000 at x = 2);
    // the run crosses the fast jump from x near 1 to x near -2 between its
    // two events, which fire on the slow branches (t = 0.804 and 1.760 by
    // SciPy's Radau at 1e-9, a check made once while writing this test; it
    // ends 0.04 after the second, before the next jump).
    use ia_verify::finite_difference::{fd_jacobian, FdOptions};
    let model = van_der_pol_relay();
    let spec = model.spec();
    let system = model.system();
    let problem = Problem::new(
        &system,
        spec.default_state(),
        spec.default_params(),
        spec.t_end,
    )
    .with_mode("push")
    .unwrap()
    .with_solver(kvaerno5(1e-10));
    let forward = jacobian(&problem, Method::Forward).unwrap();
    let adjoint = jacobian(&problem, Method::Adjoint).unwrap();
    let names: Vec<&str> = forward
        .trajectory
        .events
        .iter()
        .map(|e| system.transitions()[e.transition].name.as_str())
        .collect();
    println!(
        "van der pol: events {names:?}, {:?}",
        forward.trajectory.stats
    );
    assert!(names.len() >= 2, "{names:?}");
    let fd = fd_jacobian(
        &problem,
        &FdOptions {
            solver: kvaerno5(1e-12),
            ..FdOptions::default()
        },
    )
    .unwrap();
    let fd_flat: Vec<f64> = (0..forward.wrt.len())
        .flat_map(|c| (0..2).map(move |r| (r, c)))
        .map(|(r, c)| fd.final_jacobian[r][c])
        .collect();
    let estimate = fd
        .final_error
        .iter()
        .flatten()
        .fold(0.0f64, |m, &e| m.max(e));
    let scale = fd_flat.iter().fold(0.0f64, |m, v| m.max(v.abs()));
    // Measured: forward 4.9e-7, adjoint 9.5e-7 (the differences' own
    // error estimate, Richardson's, is looser: 2.8e-4 of the largest entry).
    for (name, run) in [("forward", &forward), ("adjoint", &adjoint)] {
        let error = normwise(run.final_jacobian.as_slice(), &fd_flat);
        println!(
            "van der pol {name}: {error:e} from the differences (estimate {:e})",
            estimate / scale
        );
        assert!(error < 1e-5, "{name}: {error:e}");
    }
    let gap = same_steps_gap(&problem, &adjoint);
    println!("van der pol: adjoint against forward on its steps {gap:e}");
    assert!(gap <= SAME_STEPS_TOL, "{gap:e}");
}
