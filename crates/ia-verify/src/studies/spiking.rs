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

use crate::references::cuba_lif::{cuba_lif_references, CubaLifCase};
use crate::studies::checks::{
    tight_solver, worst_row, Compared, AGREEMENT_TOLERANCE, STATE_TOLERANCE,
};
use crate::studies::report::Row;
use ia_adjoint::{jacobian, Method, Sensitivities};
use ia_events::Problem;
use ia_models::Model;

const STUDY: &str = "cuba-lif";

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
        let same = forward.event_time_gradients.shape() == adjoint.event_time_gradients.shape();
        let mut items: Vec<Compared> = Vec::new();
        if same {
            for (k, (f, a)) in forward
                .final_jacobian
                .iter()
                .zip(adjoint.final_jacobian.iter())
                .chain(
                    forward
                        .event_time_gradients
                        .iter()
                        .zip(adjoint.event_time_gradients.iter()),
                )
                .enumerate()
            {
                items.push(Compared::mixed(
                    format!("entry {k}"),
                    *f,
                    *a,
                    AGREEMENT_TOLERANCE,
                ));
            }
        }
        rows.push(if same {
            worst_row(
                STUDY,
                name,
                "adjoint vs forward on its steps: d x(T)/d p and d t*/d p",
                &items,
            )
        } else {
            Row::failure(STUDY, name, "forward vs adjoint", "different event counts")
        });
    }
    rows
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
