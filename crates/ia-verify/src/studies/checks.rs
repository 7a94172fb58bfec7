//! The reference checks of `cargo xtask verify`, as library functions that
//! return [`Row`]s: simulations and Jacobians against the closed-form
//! references, finite-difference references for the models without a closed
//! form, hand-written partials, and forward-versus-adjoint agreement.
//!
//! # Rules
//!
//! | comparison | error | passes when |
//! |---|---|---|
//! | final state, event times vs closed form ([`STATE_TOLERANCE`]) | relative, absolute where `\|ref\| < 1e-3` | error `<= 1e-9` |
//! | Jacobians vs closed form ([`JACOBIAN_RELATIVE`], [`JACOBIAN_ABSOLUTE`]) | relative where `\|ref\| >= 1e-3`, absolute below | relative `<= 1e-7`, absolute `<= 1e-9` |
//! | adjoint vs forward on the same steps ([`AGREEMENT_TOLERANCE`]) | relative, absolute where `\|ref\| < 1e-3` | error `<= 1e-9` |
//! | adjoint vs error-controlled forward | as for Jacobians vs closed form | relative `<= 1e-7`, absolute `<= 1e-9` |
//! | vs finite differences ([`crate::references::finite_difference::FD_SAFETY`]) | `\|J - R\|` | `<= 3 x` the entry's FD error estimate |
//! | partials ([`PARTIALS_TOLERANCE`]) | `\|hand - FD\|` | `<= 1e-6 max(\|FD\|, 1) + 10 x` FD estimate |
//!
//! Every run uses adaptive Dormand-Prince at `rtol = atol = 1e-12`
//! ([`tight_solver`]). A group of entries (a whole Jacobian) becomes one row
//! that names its worst entry (largest error relative to what it is
//! allowed) and fails when any entry fails.

use crate::references::closed_form::{
    closed_form_model, lif_network, network_cases, ClosedFormSolution, DEFAULT_MAX_EVENTS, MODELS,
};
use crate::references::finite_difference::{fd_jacobian, FdJacobian, FdOptions, FD_SAFETY};
use crate::references::partials::{check_partials, sample_points};
use crate::references::{load_references, reference_error, ReferenceCase};
use crate::studies::report::Row;
use ia_adjoint::{jacobian, Method, Sensitivities};
use ia_core::HybridSystem;
use ia_events::{simulate, Problem, SolverChoice};
use ia_models::Model;

/// Final states and event times against a closed form: largest error.
pub const STATE_TOLERANCE: f64 = 1e-9;
/// Jacobian entries with `|reference| >= 1e-3`: largest relative error.
pub const JACOBIAN_RELATIVE: f64 = 1e-7;
/// Jacobian entries with `|reference| < 1e-3`: largest absolute error.
pub const JACOBIAN_ABSOLUTE: f64 = 1e-9;
/// Below this `|reference|` errors are absolute.
pub const FLOOR: f64 = 1e-3;
/// Forward against adjoint: largest error (relative, absolute below [`FLOOR`]).
pub const AGREEMENT_TOLERANCE: f64 = 1e-9;
/// Tolerance of the partials check (relative to `max(|reference|, 1)`).
pub const PARTIALS_TOLERANCE: f64 = 1e-6;
/// Points per mode of the partials check.
pub const PARTIALS_POINTS_PER_MODE: usize = 4;
/// Seed of the partials check's points.
pub const PARTIALS_SEED: u64 = 2024;

/// Models without a closed form, checked against finite differences.
pub const FD_MODELS: &[&str] = &["impact-pendulum", "rimless-wheel", "slip-hopper"];

/// The solver of every check: Dormand-Prince at `rtol = atol = 1e-12`.
pub fn tight_solver() -> SolverChoice {
    SolverChoice::dopri5(1e-12)
}

/// The eighth-order method at the same tolerance, whose sensitivities the
/// reference cases check too (case names suffixed ` (dop853)`).
pub fn tight_high_order_solver() -> SolverChoice {
    SolverChoice::Dop853 {
        rtol: 1e-12,
        atol: 1e-12,
        max_step: None,
    }
}

/// The fifth-order implicit method at the same tolerance, whose
/// sensitivities the reference cases check too (case names suffixed
/// ` (kvaerno5)`). (TR-BDF2 and Kvaerno 3(2):
/// [`tight_low_order_implicit_solvers`].)
pub fn tight_implicit_solver() -> SolverChoice {
    SolverChoice::Kvaerno5 {
        rtol: 1e-12,
        atol: 1e-12,
        max_step: None,
    }
}

/// TR-BDF2 and Kvaerno 3(2), the second- and third-order implicit methods,
/// at the same tolerance, whose sensitivities the reference cases check too
/// (case names suffixed ` (trbdf2)`, ` (kvaerno3)`): their low orders take
/// thousands of steps at this tolerance, a few milliseconds in a release
/// build.
pub fn tight_low_order_implicit_solvers() -> [(&'static str, SolverChoice); 2] {
    [
        (
            "trbdf2",
            SolverChoice::Trbdf2 {
                rtol: 1e-12,
                atol: 1e-12,
                max_step: None,
            },
        ),
        (
            "kvaerno3",
            SolverChoice::Kvaerno3 {
                rtol: 1e-12,
                atol: 1e-12,
                max_step: None,
            },
        ),
    ]
}

/// One compared entry of a group.
#[derive(Clone, Debug, PartialEq)]
pub struct Compared {
    /// The entry, by name (`d y/d param.e`).
    pub name: String,
    /// Its value.
    pub value: f64,
    /// Its reference.
    pub reference: f64,
    /// Its error under the group's rule.
    pub error: f64,
    /// The largest error allowed.
    pub allowed: f64,
}

impl Compared {
    /// Under the Jacobian rule.
    pub fn jacobian(name: String, value: f64, reference: f64) -> Self {
        let allowed = if reference.abs() >= FLOOR {
            JACOBIAN_RELATIVE
        } else {
            JACOBIAN_ABSOLUTE
        };
        Self {
            name,
            value,
            reference,
            error: reference_error(value, reference, FLOOR),
            allowed,
        }
    }

    /// Relative error (absolute below [`FLOOR`]) against a fixed tolerance.
    pub fn mixed(name: String, value: f64, reference: f64, tolerance: f64) -> Self {
        Self {
            name,
            value,
            reference,
            error: reference_error(value, reference, FLOOR),
            allowed: tolerance,
        }
    }

    /// Against a finite-difference reference with its error estimate.
    pub fn fd(name: String, value: f64, reference: f64, estimate: f64) -> Self {
        Self {
            name,
            value,
            reference,
            error: (value - reference).abs(),
            allowed: FD_SAFETY * estimate,
        }
    }

    fn ratio(&self) -> f64 {
        if self.error.is_nan() {
            f64::INFINITY
        } else if self.allowed > 0.0 {
            self.error / self.allowed
        } else if self.error == 0.0 {
            0.0
        } else {
            f64::INFINITY
        }
    }

    /// Whether the entry passes.
    pub fn passes(&self) -> bool {
        self.ratio() <= 1.0
    }
}

/// One row for a group of entries: the worst entry (largest error relative
/// to what it is allowed) is named; the row fails when any entry fails.
pub fn worst_row(study: &str, case: &str, group: &str, items: &[Compared]) -> Row {
    let Some(worst) = items.iter().max_by(|a, b| a.ratio().total_cmp(&b.ratio())) else {
        return Row::failure(study, case, group, "nothing to compare");
    };
    let failing = items.iter().filter(|c| !c.passes()).count();
    let mut quantity = format!(
        "{group} ({} entries), worst {} (allowed {:.0e})",
        items.len(),
        worst.name,
        worst.allowed
    );
    if failing > 0 {
        quantity.push_str(&format!(", {failing} failing"));
    }
    Row::check(
        study,
        case,
        quantity,
        worst.value,
        worst.reference,
        worst.error,
        failing == 0,
    )
}

/// Entries of a sensitivity result against a reference given by names:
/// every `(state, wrt)` the reference knows.
fn compare_final(
    sens: &Sensitivities,
    state_names: &[String],
    reference: &dyn Fn(&str, &str) -> Option<f64>,
    rule: &dyn Fn(String, f64, f64) -> Compared,
) -> Vec<Compared> {
    let mut out = Vec::new();
    for (i, s) in state_names.iter().enumerate() {
        for (j, w) in sens.wrt.iter().enumerate() {
            if let Some(r) = reference(s, w) {
                out.push(rule(format!("d {s}/d {w}"), sens.final_jacobian[(i, j)], r));
            }
        }
    }
    out
}

/// Event-time gradients against a reference given by event index and name.
fn compare_event_times(
    sens: &Sensitivities,
    reference: &dyn Fn(usize, &str) -> Option<f64>,
    rule: &dyn Fn(String, f64, f64) -> Compared,
) -> Vec<Compared> {
    let mut out = Vec::new();
    for (k, grad) in sens.event_time_gradients.row_iter().enumerate() {
        for (j, w) in sens.wrt.iter().enumerate() {
            if let Some(r) = reference(k, w) {
                out.push(rule(format!("d t*[{k}]/d {w}"), grad[j], r));
            }
        }
    }
    out
}

fn method_name(method: Method) -> &'static str {
    match method {
        Method::Forward => "forward",
        Method::ForwardOnStateSteps => "forward_on_state_steps",
        Method::Adjoint => "adjoint",
    }
}

/// Values in `from_names` order, reordered to `to_names` order.
fn reorder(values: &[f64], from_names: &[String], to_names: &[String]) -> Vec<f64> {
    to_names
        .iter()
        .map(|n| {
            let i = from_names
                .iter()
                .position(|f| f == n)
                .unwrap_or_else(|| panic!("name '{n}' missing from {from_names:?}"));
            values[i]
        })
        .collect()
}

/// The closed form of a run of a catalogue model (states and parameters in
/// the model's order).
pub fn closed_form_of(
    model: &dyn Model,
    initial_state: &[f64],
    params: &[f64],
    initial_mode: Option<&str>,
    t_end: f64,
) -> Result<ClosedFormSolution, String> {
    let spec = model.spec();
    let cf = closed_form_model(model.name()).map_err(|e| e.to_string())?;
    let cf_states: Vec<String> = cf.states.iter().map(|s| s.to_string()).collect();
    let cf_params: Vec<String> = cf.params.iter().map(|s| s.to_string()).collect();
    let x0 = reorder(initial_state, &spec.state_names(), &cf_states);
    let p = reorder(params, &spec.param_names(), &cf_params);
    let mode = if cf.modes.is_empty() {
        None
    } else {
        Some(initial_mode.unwrap_or(&spec.initial_mode))
    };
    cf.solve(&x0, &p, mode, t_end, DEFAULT_MAX_EVENTS)
        .map_err(|e| e.to_string())
}

fn cf_final(sol: &ClosedFormSolution) -> impl Fn(&str, &str) -> Option<f64> + '_ {
    move |s, w| sol.jacobian_entry(s, w)
}

fn cf_events(sol: &ClosedFormSolution) -> impl Fn(usize, &str) -> Option<f64> + '_ {
    move |k, w| sol.event_time_derivative(k, w)
}

/// Simulation (final state, event count and times) of `problem` against a
/// closed form given by names and event times.
fn simulation_rows(
    study: &str,
    case: &str,
    problem: &Problem<'_>,
    final_state: &dyn Fn(&str) -> Option<f64>,
    event_times: &[f64],
) -> Vec<Row> {
    let run = match simulate(problem) {
        Ok(run) => run,
        Err(e) => return vec![Row::failure(study, case, "simulation", e)],
    };
    let mut rows = vec![Row::check(
        study,
        case,
        "simulation: event count",
        run.events.len() as f64,
        event_times.len() as f64,
        (run.events.len() as f64 - event_times.len() as f64).abs(),
        run.events.len() == event_times.len(),
    )];
    let states: Vec<Compared> = problem
        .system
        .state_names()
        .iter()
        .zip(&run.final_state)
        .filter_map(|(s, &v)| {
            final_state(s).map(|r| Compared::mixed(format!("{s}(T)"), v, r, STATE_TOLERANCE))
        })
        .collect();
    rows.push(worst_row(study, case, "simulation: final state", &states));
    if !event_times.is_empty() && run.events.len() == event_times.len() {
        let times: Vec<Compared> = run
            .event_times()
            .iter()
            .zip(event_times)
            .enumerate()
            .map(|(k, (&v, &r))| Compared::mixed(format!("t*[{k}]"), v, r, STATE_TOLERANCE))
            .collect();
        rows.push(worst_row(study, case, "simulation: event times", &times));
    }
    rows
}

/// A final-state Jacobian given by `(state, wrt)` names.
type FinalReference<'a> = &'a dyn Fn(&str, &str) -> Option<f64>;
/// Event-time gradients given by event index and `wrt` name.
type EventReference<'a> = &'a dyn Fn(usize, &str) -> Option<f64>;
/// A labelled reference: label, final-state Jacobian, event-time gradients.
type NamedReference<'a> = (&'a str, FinalReference<'a>, EventReference<'a>);

/// Forward and adjoint Jacobians of `problem` against a closed form
/// (and, where given, a second reference by names).
fn sensitivity_rows(
    study: &str,
    case: &str,
    problem: &Problem<'_>,
    references: &[NamedReference<'_>],
) -> Vec<Row> {
    let mut rows = Vec::new();
    let states = problem.system.state_names().to_vec();
    for method in [Method::Forward, Method::Adjoint] {
        let m = method_name(method);
        let sens = match jacobian(problem, method) {
            Ok(s) => s,
            Err(e) => {
                rows.push(Row::failure(study, case, format!("{m} Jacobian"), e));
                continue;
            }
        };
        for (label, final_ref, event_ref) in references {
            let items = compare_final(&sens, &states, final_ref, &Compared::jacobian);
            rows.push(worst_row(
                study,
                case,
                &format!("d x(T)/d theta, {m} vs {label}"),
                &items,
            ));
            let items = compare_event_times(&sens, event_ref, &Compared::jacobian);
            if !items.is_empty() {
                rows.push(worst_row(
                    study,
                    case,
                    &format!("d t*/d theta, {m} vs {label}"),
                    &items,
                ));
            }
        }
    }
    rows
}

/// Every check of one reference case of `crates/ia-verify/references/closed_form.json`:
/// simulation, forward and adjoint Jacobians against the file and against
/// the [`crate::references::closed_form`] module, and the module against the file.
pub fn reference_case_rows(name: &str, case: &ReferenceCase) -> Vec<Row> {
    let study = "reference";
    let model = match ia_models::by_name(&case.model) {
        Ok(m) => m,
        Err(e) => return vec![Row::failure(study, name, "model", e)],
    };
    let system = model.system();
    let problem = match case.problem(model.as_ref(), &system) {
        Ok(p) => p.with_solver(tight_solver()),
        Err(e) => return vec![Row::failure(study, name, "problem", e)],
    };
    let json_final = |s: &str, w: &str| case.jacobian.get(s).and_then(|r| r.get(w)).copied();
    let json_events = |k: usize, w: &str| {
        case.event_time_jacobian
            .get(&k.to_string())
            .and_then(|r| r.get(w))
            .copied()
    };
    let json_state = |s: &str| case.final_state.get(s).copied();
    let mut rows = simulation_rows(study, name, &problem, &json_state, &case.event_times);

    let cf = closed_form_of(
        model.as_ref(),
        &problem.initial_state,
        &problem.params,
        case.initial_mode.as_deref(),
        case.t_end,
    );
    match &cf {
        Ok(sol) => {
            let cf_f = cf_final(sol);
            let cf_e = cf_events(sol);
            rows.extend(sensitivity_rows(
                study,
                name,
                &problem,
                &[
                    ("closed_form.json", &json_final, &json_events),
                    ("closed_form module", &cf_f, &cf_e),
                ],
            ));
            // The module itself against the file.
            let mut items = Vec::new();
            for (s, row) in &case.jacobian {
                for (w, &r) in row {
                    match sol.jacobian_entry(s, w) {
                        Some(v) => items.push(Compared::jacobian(format!("d {s}/d {w}"), v, r)),
                        None => items.push(Compared::jacobian(
                            format!("d {s}/d {w} (missing)"),
                            f64::NAN,
                            r,
                        )),
                    }
                }
            }
            for (s, &r) in &case.final_state {
                let v = sol.state_index(s).map_or(f64::NAN, |i| sol.final_state[i]);
                items.push(Compared::mixed(format!("{s}(T)"), v, r, STATE_TOLERANCE));
            }
            rows.push(worst_row(
                study,
                name,
                "closed_form module vs closed_form.json",
                &items,
            ));
        }
        Err(e) => {
            rows.push(Row::failure(study, name, "closed_form module", e));
            rows.extend(sensitivity_rows(
                study,
                name,
                &problem,
                &[("closed_form.json", &json_final, &json_events)],
            ));
        }
    }
    let solvers = [
        ("dop853", tight_high_order_solver()),
        ("kvaerno5", tight_implicit_solver()),
    ];
    for (suffix, solver) in solvers
        .into_iter()
        .chain(tight_low_order_implicit_solvers())
    {
        let other = problem.clone().with_solver(solver);
        rows.extend(sensitivity_rows(
            study,
            &format!("{name} ({suffix})"),
            &other,
            &[("closed_form.json", &json_final, &json_events)],
        ));
    }
    rows
}

/// Every reference case of `crates/ia-verify/references/closed_form.json`
/// ([`reference_case_rows`] for each).
pub fn reference_rows() -> Vec<Row> {
    match load_references() {
        Ok(cases) => cases
            .iter()
            .flat_map(|(name, case)| reference_case_rows(name, case))
            .collect(),
        Err(e) => vec![Row::failure("reference", "closed_form.json", "load", e)],
    }
}

/// A run of a closed-form model against the [`crate::references::closed_form`] module:
/// simulation and forward and adjoint Jacobians (final state and event times).
pub fn closed_form_model_rows(
    case: &str,
    model: &dyn Model,
    initial_state: &[f64],
    params: &[f64],
    t_end: f64,
) -> Vec<Row> {
    let study = "closed_form";
    let system = model.system();
    let problem = Problem::new(&system, initial_state.to_vec(), params.to_vec(), t_end)
        .with_solver(tight_solver());
    let sol = match closed_form_of(model, initial_state, params, None, t_end) {
        Ok(s) => s,
        Err(e) => return vec![Row::failure(study, case, "closed form", e)],
    };
    let state = |s: &str| sol.state_index(s).map(|i| sol.final_state[i]);
    let mut rows = simulation_rows(study, case, &problem, &state, &sol.event_times);
    let (f, e) = (cf_final(&sol), cf_events(&sol));
    rows.extend(sensitivity_rows(
        study,
        case,
        &problem,
        &[("closed_form module", &f, &e)],
    ));
    rows
}

/// The two-ball case with known values: `r = 0.1`, `x1 = 0`, `x2 = 0.52`,
/// `v1 = 1`, `v2 = 0`, `m1 = m2 = 1`, `e = 1`, `t_end = 1` gives
/// `x2(T) = 1.2` and `d x2(T)/d (x1, x2, v1, v2) = (1, 0, 1, 0)`; checked for
/// the closed form, the simulation and both sensitivity methods.
pub fn two_ball_known_values_rows() -> Vec<Row> {
    let study = "closed_form";
    let case = "two_ball_known";
    let model = ia_models::TwoBall;
    let x0 = [0.0, 0.52, 1.0, 0.0];
    let p = [0.1, 1.0, 1.0, 1.0];
    let t_end = 1.0;
    let expected_x2 = 1.2;
    let expected = [
        ("initial.x1", 1.0),
        ("initial.x2", 0.0),
        ("initial.v1", 1.0),
        ("initial.v2", 0.0),
    ];
    let mut rows = Vec::new();
    match closed_form_of(&model, &x0, &p, None, t_end) {
        Ok(sol) => {
            let mut items = vec![Compared::mixed(
                "x2(T)".into(),
                sol.final_state[1],
                expected_x2,
                STATE_TOLERANCE,
            )];
            for (w, r) in expected {
                let v = sol.jacobian_entry("x2", w).unwrap_or(f64::NAN);
                items.push(Compared::jacobian(format!("d x2/d {w}"), v, r));
            }
            rows.push(worst_row(
                study,
                case,
                "closed_form module vs known values",
                &items,
            ));
        }
        Err(e) => rows.push(Row::failure(study, case, "closed form", e)),
    }
    let system = model.system();
    let problem = Problem::new(&system, x0.to_vec(), p.to_vec(), t_end).with_solver(tight_solver());
    for method in [Method::Forward, Method::Adjoint] {
        let m = method_name(method);
        match jacobian(&problem, method) {
            Ok(sens) => {
                let mut items = vec![Compared::mixed(
                    "x2(T)".into(),
                    sens.trajectory.final_state[1],
                    expected_x2,
                    STATE_TOLERANCE,
                )];
                for (w, r) in expected {
                    let j = sens.wrt.iter().position(|c| c == w).expect("two-ball wrt");
                    items.push(Compared::jacobian(
                        format!("d x2/d {w}"),
                        sens.final_jacobian[(1, j)],
                        r,
                    ));
                }
                rows.push(worst_row(
                    study,
                    case,
                    &format!("{m} vs known values"),
                    &items,
                ));
            }
            Err(e) => rows.push(Row::failure(study, case, format!("{m} Jacobian"), e)),
        }
    }
    rows
}

/// Every case of [`crate::references::closed_form::network_cases`]: the simulation and
/// the forward and adjoint Jacobians (final potentials and spike times), by
/// DOPRI5 and by the exact event-driven solver, against the network's
/// closed form.
pub fn lif_network_rows() -> Vec<Row> {
    let study = "closed_form";
    let mut rows = Vec::new();
    for case in network_cases() {
        let name = format!("lif-network_{}", case.name);
        let (x0, p) = (&case.initial_state, &case.params);
        let sol = match lif_network(&case.net, x0, p, case.t_end, DEFAULT_MAX_EVENTS) {
            Ok(sol) => sol,
            Err(e) => {
                rows.push(Row::failure(study, &name, "closed form", e));
                continue;
            }
        };
        let system = case.net.system();
        let problem =
            Problem::new(&system, x0.clone(), p.clone(), case.t_end).with_solver(tight_solver());
        let state = |s: &str| sol.state_index(s).map(|i| sol.final_state[i]);
        rows.extend(simulation_rows(
            study,
            &name,
            &problem,
            &state,
            &sol.event_times,
        ));
        // The exact event-driven solver's run of the same network.
        let exact = problem.clone().with_solver(SolverChoice::Exact);
        rows.extend(simulation_rows(
            study,
            &format!("{name}_exact_solver"),
            &exact,
            &state,
            &sol.event_times,
        ));
        let (f, e) = (cf_final(&sol), cf_events(&sol));
        for (case, problem) in [
            (name.clone(), &problem),
            (format!("{name}_exact_solver"), &exact),
        ] {
            rows.extend(sensitivity_rows(
                study,
                &case,
                problem,
                &[("closed_form module", &f, &e)],
            ));
        }
    }
    rows
}

/// The closed-form models of the registry ([`MODELS`]) without a case in
/// `closed_form.json`, at their defaults (today `ball1d` and `two-ball`), the
/// two-ball's known values and the `lif-network` cases.
pub fn closed_form_rows() -> Vec<Row> {
    let study = "closed_form";
    let covered: Vec<String> = match load_references() {
        Ok(cases) => cases.into_values().map(|c| c.model).collect(),
        Err(e) => return vec![Row::failure(study, "closed_form.json", "load", e)],
    };
    let mut rows = Vec::new();
    for cf in MODELS
        .iter()
        .filter(|m| !covered.iter().any(|c| c == m.name))
    {
        let model = match ia_models::by_name(cf.name) {
            Ok(m) => m,
            Err(e) => {
                rows.push(Row::failure(study, cf.name, "model", e));
                continue;
            }
        };
        let spec = model.spec();
        rows.extend(closed_form_model_rows(
            &format!("{}_defaults", model.name()),
            model.as_ref(),
            &spec.default_state(),
            &spec.default_params(),
            spec.t_end,
        ));
    }
    rows.extend(two_ball_known_values_rows());
    rows.extend(lif_network_rows());
    rows
}

/// Forward and adjoint Jacobians (final state and event times) of `problem`
/// against a finite-difference reference.
pub fn fd_comparison_rows(
    study: &str,
    case: &str,
    problem: &Problem<'_>,
    fd: &FdJacobian,
) -> Vec<Row> {
    let mut rows = Vec::new();
    let fd_final = |s: &str, w: &str| fd.final_entry(s, w);
    for method in [Method::Forward, Method::Adjoint] {
        let m = method_name(method);
        let sens = match jacobian(problem, method) {
            Ok(s) => s,
            Err(e) => {
                rows.push(Row::failure(study, case, format!("{m} Jacobian"), e));
                continue;
            }
        };
        let mut items = Vec::new();
        for (i, s) in fd.state_names.iter().enumerate() {
            for (j, w) in fd.wrt.iter().enumerate() {
                let (r, est) = fd_final(s, w).expect("FD layout");
                items.push(Compared::fd(
                    format!("d {s}/d {w}"),
                    sens.final_jacobian[(i, j)],
                    r,
                    est,
                ));
            }
        }
        rows.push(worst_row(
            study,
            case,
            &format!("d x(T)/d theta, {m} vs FD"),
            &items,
        ));
        if sens.event_time_gradients.nrows() != fd.event_times.len() {
            rows.push(Row::failure(
                study,
                case,
                format!("d t*/d theta, {m} vs FD"),
                format!(
                    "{} events in the sensitivity run, {} in the FD run",
                    sens.event_time_gradients.nrows(),
                    fd.event_times.len()
                ),
            ));
            continue;
        }
        let mut items = Vec::new();
        for (k, grad) in sens.event_time_gradients.row_iter().enumerate() {
            for (j, w) in fd.wrt.iter().enumerate() {
                items.push(Compared::fd(
                    format!("d t*[{k}]/d {w}"),
                    grad[j],
                    fd.event_time_jacobian[k][j],
                    fd.event_time_error[k][j],
                ));
            }
        }
        if !items.is_empty() {
            rows.push(worst_row(
                study,
                case,
                &format!("d t*/d theta, {m} vs FD"),
                &items,
            ));
        }
    }
    rows
}

/// The finite-difference study: the models without a closed form
/// ([`FD_MODELS`], default runs), forward and adjoint against FD; and the FD
/// reference itself against the closed form on `ball2d_flat_a` (so the
/// reference is validated where the truth is known).
pub fn fd_rows() -> Vec<Row> {
    let study = "fd";
    let mut rows = Vec::new();
    for &name in FD_MODELS {
        let model = ia_models::by_name(name).expect("FD model in the catalogue");
        let system = model.system();
        let problem = crate::references::default_problem(model.as_ref(), &system, tight_solver());
        match fd_jacobian(&problem, &FdOptions::default()) {
            Ok(fd) => rows.extend(fd_comparison_rows(study, name, &problem, &fd)),
            Err(e) => rows.push(Row::failure(study, name, "FD reference", e)),
        }
    }
    rows.extend(fd_validation_rows("ball2d_flat_a"));
    rows
}

/// The FD reference of a reference case against the closed form module:
/// every entry within `FD_SAFETY x` its estimate.
pub fn fd_validation_rows(case_name: &str) -> Vec<Row> {
    let study = "fd";
    let case = match crate::references::reference_case(case_name) {
        Ok(c) => c,
        Err(e) => return vec![Row::failure(study, case_name, "reference case", e)],
    };
    let model = ia_models::by_name(&case.model).expect("reference model in the catalogue");
    let system = model.system();
    let problem = match case.problem(model.as_ref(), &system) {
        Ok(p) => p,
        Err(e) => return vec![Row::failure(study, case_name, "problem", e)],
    };
    let fd = match fd_jacobian(&problem, &FdOptions::default()) {
        Ok(fd) => fd,
        Err(e) => return vec![Row::failure(study, case_name, "FD reference", e)],
    };
    let sol = match closed_form_of(
        model.as_ref(),
        &problem.initial_state,
        &problem.params,
        case.initial_mode.as_deref(),
        case.t_end,
    ) {
        Ok(s) => s,
        Err(e) => return vec![Row::failure(study, case_name, "closed form", e)],
    };
    let mut items = Vec::new();
    for (i, s) in fd.state_names.iter().enumerate() {
        for (j, w) in fd.wrt.iter().enumerate() {
            let r = sol.jacobian_entry(s, w).unwrap_or(f64::NAN);
            // Here the FD value is the one checked, the closed form the reference.
            let mut c = Compared::fd(
                format!("d {s}/d {w}"),
                fd.final_jacobian[i][j],
                r,
                fd.final_error[i][j],
            );
            if r.is_nan() {
                c.error = f64::NAN;
            }
            items.push(c);
        }
    }
    vec![worst_row(
        study,
        case_name,
        "d x(T)/d theta, FD vs closed form",
        &items,
    )]
}

/// The partials check of one system (FD reference at sampled points).
pub fn partials_row(case: &str, system: &HybridSystem, model: &dyn Model) -> Row {
    let study = "partials";
    let points = sample_points(model, PARTIALS_POINTS_PER_MODE, PARTIALS_SEED);
    match check_partials(system, &points, PARTIALS_TOLERANCE) {
        Ok(report) => match report.worst {
            Some(w) => Row::check(
                study,
                case,
                format!(
                    "{} partials at {} points vs central FD, worst {} (allowed {:.1e})",
                    report.entries_checked,
                    report.points,
                    w.name(),
                    w.allowed
                ),
                w.hand,
                w.reference,
                w.difference,
                true,
            ),
            None => Row::failure(study, case, "partials", "no entries to check"),
        },
        Err(m) => Row::check(
            study,
            case,
            format!(
                "{} of {} partials disagree with central FD, worst {}",
                m.failures.len(),
                m.entries_checked,
                m.worst.name()
            ),
            m.worst.hand,
            m.worst.reference,
            m.worst.difference,
            false,
        ),
    }
}

/// The partials check of every catalogue model.
pub fn partials_rows() -> Vec<Row> {
    ia_models::catalog()
        .iter()
        .map(|model| partials_row(model.name(), &model.system(), model.as_ref()))
        .collect()
}

/// Forward against adjoint on the default run of `model`, final Jacobian
/// and event-time gradients: the adjoint against forward sensitivities on
/// the state's steps ([`Method::ForwardOnStateSteps`], the same
/// discretisation: agreement to rounding, [`AGREEMENT_TOLERANCE`]) and
/// against error-controlled forward sensitivities ([`Method::Forward`],
/// other steps: agreement to the solver's accuracy, under the Jacobian rule
/// [`JACOBIAN_RELATIVE`] / [`JACOBIAN_ABSOLUTE`]).
pub fn agreement_rows_for(model: &dyn Model) -> Vec<Row> {
    let study = "agreement";
    let case = model.name();
    let system = model.system();
    let problem = crate::references::default_problem(model, &system, tight_solver());
    let run = |method| jacobian(&problem, method);
    let adjoint = match run(Method::Adjoint) {
        Ok(s) => s,
        Err(e) => return vec![Row::failure(study, case, "adjoint Jacobian", e)],
    };
    let mut rows = Vec::new();
    for method in [Method::ForwardOnStateSteps, Method::Forward] {
        let m = method_name(method);
        let forward = match run(method) {
            Ok(s) => s,
            Err(e) => {
                rows.push(Row::failure(study, case, format!("{m} Jacobian"), e));
                continue;
            }
        };
        let fwd_final = |s: &str, w: &str| {
            let i = system.state_names().iter().position(|x| x == s)?;
            let j = forward.wrt.iter().position(|x| x == w)?;
            Some(forward.final_jacobian[(i, j)])
        };
        // The same discretisation agrees to rounding; error-controlled forward
        // sensitivities take other steps, so both are only within the
        // solver's accuracy of the truth: the Jacobian rule applies.
        let rule = |name, v, r| match method {
            Method::ForwardOnStateSteps => Compared::mixed(name, v, r, AGREEMENT_TOLERANCE),
            _ => Compared::jacobian(name, v, r),
        };
        let mut items = compare_final(&adjoint, system.state_names(), &fwd_final, &rule);
        if forward.event_time_gradients.nrows() == adjoint.event_time_gradients.nrows() {
            let fwd_events = |k: usize, w: &str| {
                let j = forward.wrt.iter().position(|x| x == w)?;
                forward.event_time_gradients.get((k, j)).copied()
            };
            items.extend(compare_event_times(&adjoint, &fwd_events, &rule));
        } else {
            items.push(Compared::mixed(
                "event count".into(),
                adjoint.event_time_gradients.nrows() as f64,
                forward.event_time_gradients.nrows() as f64,
                0.0,
            ));
        }
        rows.push(worst_row(
            study,
            case,
            &format!("adjoint vs {m}: d x(T)/d theta and d t*/d theta"),
            &items,
        ));
    }
    rows
}

/// [`agreement_rows_for`] every catalogue model.
pub fn agreement_rows() -> Vec<Row> {
    ia_models::catalog()
        .iter()
        .flat_map(|m| agreement_rows_for(m.as_ref()))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Reference: the registry of closed forms ([`MODELS`]) and the ready
    /// models of `ia_models`: the finite-difference study covers ready
    /// models that have no closed form.
    #[test]
    fn fd_models_are_ready_models_without_a_closed_form() {
        for &name in FD_MODELS {
            assert!(ia_models::by_name(name).is_ok(), "{name}");
            assert!(closed_form_model(name).is_err(), "{name}");
        }
    }
}
