//! A two-mode model no ready model covers, the stick-slip block of
//! examples/scenarios/stick_slip_equations.json, against central finite
//! differences of whole runs (the reference), forward and adjoint.

use ia_adjoint::{jacobian, Method};
use ia_equations::EquationModel;
use ia_events::{Problem, SolverChoice};
use ia_models::Model;

fn model() -> EquationModel {
    let path = format!(
        "{}/../../examples/scenarios/stick_slip_equations.json",
        env!("CARGO_MANIFEST_DIR")
    );
    let scenario: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    EquationModel::from_value(&scenario["model"]).unwrap()
}

const T_END: f64 = 5.0;

fn solver() -> SolverChoice {
    SolverChoice::Dopri5 {
        rtol: 1e-12,
        atol: 1e-12,
        max_step: None,
    }
}

#[test]
fn stick_slip_derivatives_match_central_differences() {
    let model = model();
    let spec = model.spec();
    let system = model.system();
    let (x0, p0) = (spec.default_state(), spec.default_params());
    let run = |x: Vec<f64>, p: Vec<f64>| {
        Problem::new(&system, x, p, T_END)
            .with_mode("stick")
            .unwrap()
            .with_solver(solver())
    };
    let forward = jacobian(&run(x0.clone(), p0.clone()), Method::Forward).unwrap();
    let adjoint = jacobian(&run(x0.clone(), p0.clone()), Method::Adjoint).unwrap();
    // Stick, slip, stick, slip...: both transitions fire.
    let names: Vec<&str> = forward
        .trajectory
        .events
        .iter()
        .map(|e| system.transitions()[e.transition].name.as_str())
        .collect();
    assert!(names.len() >= 3, "{names:?}");
    assert!(names.contains(&"break_away") && names.contains(&"catch_up"));

    let final_state =
        |x: Vec<f64>, p: Vec<f64>| ia_events::simulate(&run(x, p)).unwrap().final_state;
    let n = x0.len();
    for (column, wrt) in forward.wrt.iter().enumerate() {
        let (mut plus, mut minus) = ((x0.clone(), p0.clone()), (x0.clone(), p0.clone()));
        let value = if column < n {
            x0[column]
        } else {
            p0[column - n]
        };
        let h = 1e-5 * value.abs().max(1.0);
        if column < n {
            plus.0[column] += h;
            minus.0[column] -= h;
        } else {
            plus.1[column - n] += h;
            minus.1[column - n] -= h;
        }
        let (a, b) = (final_state(plus.0, plus.1), final_state(minus.0, minus.1));
        for i in 0..n {
            let difference = (a[i] - b[i]) / (2.0 * h);
            // Truncation O(h^2) and rounding of 1e-12 tolerances over h: 1e-6.
            let tolerance = 1e-6 * difference.abs().max(1.0);
            for (method, s) in [("forward", &forward), ("adjoint", &adjoint)] {
                let d = s.final_jacobian[(i, column)];
                assert!(
                    (d - difference).abs() < tolerance,
                    "{method} d{}/d{wrt}: {d} vs central difference {difference}",
                    spec.states[i].name
                );
            }
        }
    }
}
