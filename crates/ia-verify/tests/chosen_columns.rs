//! Forward sensitivities with chosen columns (`ia_adjoint::jacobian_wrt`).
//!
//! References: the full forward Jacobian on the same steps
//! (`Method::ForwardOnStateSteps`: the chosen columns are the same linear
//! maps applied column by column, so they agree to rounding), and the
//! adjoint for the adjoint's selection. Every catalogue model is covered, so
//! both the Jacobian-vector fast paths (Autodiff, the network's hand-written
//! products) and the dense fallback (ball2d-flat's hand-written partials)
//! are exercised.

use ia_adjoint::{jacobian, jacobian_wrt, Method};
use ia_events::SolverChoice;
use ia_verify::references::default_problem;
use rstest::rstest;

/// Every third column, last first: a subset in an order of its own.
fn chosen(all: &[String]) -> Vec<&str> {
    all.iter().rev().step_by(3).map(String::as_str).collect()
}

#[rstest]
fn chosen_columns_equal_the_full_jacobian(
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
    #[values(Method::ForwardOnStateSteps, Method::Adjoint)] method: Method,
) {
    let model = ia_models::by_name(name).unwrap();
    let system = model.system();
    let problem = default_problem(model.as_ref(), &system, SolverChoice::dopri5(1e-10));
    let full = jacobian(&problem, method).unwrap();
    let wrt = chosen(system.wrt_names());
    let part = jacobian_wrt(&problem, method, &wrt).unwrap();
    assert_eq!(*part.wrt, *wrt);
    assert_eq!(
        part.event_time_gradients.nrows(),
        full.event_time_gradients.nrows()
    );
    for (c, name) in wrt.iter().enumerate() {
        let j = full.wrt.iter().position(|w| w == name).unwrap();
        for i in 0..system.state_dim() {
            let (a, b) = (part.final_jacobian[(i, c)], full.final_jacobian[(i, j)]);
            assert!(
                (a - b).abs() <= 1e-12 * (1.0 + b.abs()),
                "{name}: d x{i} / d {}: chosen {a} vs full {b}",
                wrt[c]
            );
        }
        for (k, (row, full_row)) in part
            .event_time_gradients
            .row_iter()
            .zip(full.event_time_gradients.row_iter())
            .enumerate()
        {
            let (a, b) = (row[c], full_row[j]);
            assert!(
                (a - b).abs() <= 1e-12 * (1.0 + b.abs()),
                "{name}: d t{k} / d {}: chosen {a} vs full {b}",
                wrt[c]
            );
        }
    }
}

#[test]
fn an_unknown_column_is_named_with_the_valid_ones() {
    let model = ia_models::by_name("ball1d").unwrap();
    let system = model.system();
    let problem = default_problem(model.as_ref(), &system, SolverChoice::dopri5(1e-10));
    let err = jacobian_wrt(&problem, Method::Forward, &["param.q"]).unwrap_err();
    assert_eq!(err.kind(), "unknown_name");
    assert!(err.to_string().contains("param.e"), "{err}");
}
