//! The `cuba-lif` study: the library's spike times, final states and their
//! derivatives with respect to every parameter (weights, input times,
//! `tau_mem`, `tau_syn`, `theta`), by forward sensitivities and by the
//! adjoint with the default solver at `rtol = atol = 1e-12`, against the
//! high-precision references of [`crate::references::cuba_lif`], and
//! forward against adjoint.
//!
//! Rules: event times and final states within [`STATE_TOLERANCE`]
//! (absolute); derivatives by the Jacobian rule of the other closed-form
//! checks (`1e-7` relative, `1e-9` absolute below `1e-3`); forward against
//! adjoint within [`AGREEMENT_TOLERANCE`] (the adjoint against forward
//! sensitivities on the state's steps, [`Method::ForwardOnStateSteps`]:
//! the same discretisation, so they agree to rounding).
//!
//! Each case runs with the exact event-driven solver too
//! (`"method": "exact"`, [`SolverChoice::Exact`]: closed-form stretches of
//! the neurons' linear pairs, input guards fired at their time
//! thresholds): forward and adjoint against the same references under the
//! same rules, forward against adjoint within [`EXACT_AGREEMENT`] (both
//! are exact to rounding), and its spike times, final states and their
//! derivatives against the default solver's (DOPRI5 at `1e-12`), event
//! times and final states within [`STATE_TOLERANCE`], derivatives by the
//! Jacobian rule.

use crate::references::cuba_lif::{cuba_lif_references, CubaLifCase};
use crate::studies::checks::{
    tight_solver, worst_row, Compared, AGREEMENT_TOLERANCE, STATE_TOLERANCE,
};
use crate::studies::report::Row;
use ia_adjoint::{jacobian, Method, Sensitivities};
use ia_events::{Problem, SolverChoice};
use ia_models::Model;

const STUDY: &str = "cuba-lif";

/// The exact solver's forward against its adjoint: largest error
/// (relative, absolute below [`crate::studies::checks::FLOOR`]).
pub const EXACT_AGREEMENT: f64 = 1e-10;

/// The rows of every reference case; a case that cannot run is one failed
/// row naming why.
pub fn cuba_lif_rows() -> Vec<Row> {
    let refs = match cuba_lif_references() {
        Ok(r) => r,
        Err(e) => return vec![Row::failure(STUDY, "-", "cuba_lif.json", e)],
    };
    refs.cases.iter().flat_map(case_rows).collect()
}

fn case_rows(case: &CubaLifCase) -> Vec<Row> {
    let name = case.name.as_str();
    let (model, params) = match case.model().and_then(|m| Ok((m, case.param_values()?))) {
        Ok(v) => v,
        Err(e) => return vec![Row::failure(STUDY, name, "model", e)],
    };
    let system = model.system();
    let spec = model.spec();
    let problem =
        Problem::new(&system, spec.default_state(), params, case.t_end).with_solver(tight_solver());
    let mut rows = Vec::new();
    let mut runs = Vec::new();
    for (method, label) in [(Method::Forward, "forward"), (Method::Adjoint, "adjoint")] {
        match jacobian(&problem, method) {
            Ok(sens) => {
                rows.extend(against_reference(case, &sens, &system, label));
                runs.push(sens);
            }
            Err(e) => rows.push(Row::failure(STUDY, name, format!("{label} Jacobian"), e)),
        }
    }
    let on_steps = jacobian(&problem, Method::ForwardOnStateSteps);
    if let (Ok(forward), [_, adjoint]) = (&on_steps, &runs[..]) {
        rows.push(agreement(
            name,
            "adjoint vs forward on its steps: d x(T)/d p and d t*/d p",
            forward,
            adjoint,
            |k, f, a| Compared::mixed(format!("entry {k}"), f, a, AGREEMENT_TOLERANCE),
        ));
    }
    let exact = problem.clone().with_solver(SolverChoice::Exact);
    let mut exact_runs = Vec::new();
    for (method, label) in [
        (Method::Forward, "forward (exact)"),
        (Method::Adjoint, "adjoint (exact)"),
    ] {
        match jacobian(&exact, method) {
            Ok(sens) => {
                rows.extend(against_reference(case, &sens, &system, label));
                exact_runs.push(sens);
            }
            Err(e) => rows.push(Row::failure(STUDY, name, format!("{label} Jacobian"), e)),
        }
    }
    if let [forward, adjoint] = &exact_runs[..] {
        rows.push(agreement(
            name,
            "exact: adjoint vs forward: d x(T)/d p and d t*/d p",
            forward,
            adjoint,
            |k, f, a| Compared::mixed(format!("entry {k}"), f, a, EXACT_AGREEMENT),
        ));
    }
    if let ([forward, _], [exact_forward, _]) = (&runs[..], &exact_runs[..]) {
        rows.push(against_dopri5(name, exact_forward, forward));
    }
    rows
}

/// One row comparing two runs' final Jacobians and event-time gradients
/// entry by entry under `rule`, or a failed row when their event counts
/// differ.
fn agreement(
    name: &str,
    quantity: &str,
    a: &Sensitivities,
    b: &Sensitivities,
    rule: impl Fn(usize, f64, f64) -> Compared,
) -> Row {
    match derivative_items(a, b, rule) {
        Some(items) => worst_row(STUDY, name, quantity, &items),
        None => Row::failure(STUDY, name, quantity, "different event counts"),
    }
}

/// The entries of two runs' final Jacobians and event-time gradients under
/// `rule`, or `None` when their event counts differ.
fn derivative_items(
    a: &Sensitivities,
    b: &Sensitivities,
    rule: impl Fn(usize, f64, f64) -> Compared,
) -> Option<Vec<Compared>> {
    if a.event_time_gradients.shape() != b.event_time_gradients.shape() {
        return None;
    }
    let pairs = a.final_jacobian.iter().zip(b.final_jacobian.iter()).chain(
        a.event_time_gradients
            .iter()
            .zip(b.event_time_gradients.iter()),
    );
    Some(
        pairs
            .enumerate()
            .map(|(k, (x, y))| rule(k, *x, *y))
            .collect(),
    )
}

/// The exact solver's forward run against DOPRI5's: event times and final
/// states within [`STATE_TOLERANCE`], derivatives by the Jacobian rule.
fn against_dopri5(name: &str, exact: &Sensitivities, dopri5: &Sensitivities) -> Row {
    let quantity = "exact vs dopri5 (1e-12): t*, x(T) and their derivatives";
    let (e, d) = (&exact.trajectory, &dopri5.trajectory);
    let same = e.events.len() == d.events.len()
        && e.events
            .iter()
            .zip(&d.events)
            .all(|(a, b)| a.transition == b.transition);
    let derivatives = derivative_items(exact, dopri5, |k, x, y| {
        Compared::jacobian(format!("derivative entry {k}"), x, y)
    });
    let (true, Some(mut items)) = (same, derivatives) else {
        return Row::failure(STUDY, name, quantity, "different event sequences");
    };
    for (k, (a, b)) in e.events.iter().zip(&d.events).enumerate() {
        items.push(Compared::mixed(
            format!("t{k}"),
            a.time,
            b.time,
            STATE_TOLERANCE,
        ));
    }
    for (i, (a, b)) in e.final_state.iter().zip(&d.final_state).enumerate() {
        items.push(Compared::mixed(format!("x{i}(T)"), *a, *b, STATE_TOLERANCE));
    }
    worst_row(STUDY, name, quantity, &items)
}
/// The rows of one run against the case's reference.
fn against_reference(
    case: &CubaLifCase,
    sens: &Sensitivities,
    system: &ia_core::HybridSystem,
    label: &str,
) -> Vec<Row> {
    let name = case.name.as_str();
    let events = &sens.trajectory.events;
    let names = system.transition_names();
    let sequence: Vec<&str> = events
        .iter()
        .map(|e| names[e.transition].as_str())
        .collect();
    let expected: Vec<&str> = case.events.iter().map(|e| e.transition.as_str()).collect();
    if sequence != expected {
        return vec![Row::failure(
            STUDY,
            name,
            format!("{label}: event sequence"),
            format!("{sequence:?} vs reference {expected:?}"),
        )];
    }
    let column = |w: &str| sens.wrt.iter().position(|x| *x == format!("param.{w}"));
    let mut values = Vec::new();
    for (k, (e, r)) in events.iter().zip(&case.events).enumerate() {
        values.push(Compared::mixed(
            format!("t{k} ({})", r.transition),
            e.time,
            r.time,
            STATE_TOLERANCE,
        ));
    }
    for (i, state) in case.states.iter().enumerate() {
        values.push(Compared::mixed(
            format!("{state}(T)"),
            sens.trajectory.final_state[i],
            case.final_state[i],
            STATE_TOLERANCE,
        ));
    }
    let (mut finals, mut times) = (Vec::new(), Vec::new());
    for (j, w) in case.wrt.iter().enumerate() {
        let Some(c) = column(w) else {
            return vec![Row::failure(
                STUDY,
                name,
                format!("{label}: d/d {w}"),
                "not among the Jacobian's columns",
            )];
        };
        for (i, state) in case.states.iter().enumerate() {
            finals.push(Compared::jacobian(
                format!("d {state}(T)/d {w}"),
                sens.final_jacobian[(i, c)],
                case.final_jacobian[i][j],
            ));
        }
        for (k, r) in case.event_time_jacobian.iter().enumerate() {
            times.push(Compared::jacobian(
                format!("d t{k}/d {w}"),
                sens.event_time_gradients[(k, c)],
                r[j],
            ));
        }
    }
    vec![
        worst_row(STUDY, name, &format!("{label}: t* and x(T)"), &values),
        worst_row(STUDY, name, &format!("{label}: d x(T)/d p"), &finals),
        worst_row(STUDY, name, &format!("{label}: d t*/d p"), &times),
    ]
}
