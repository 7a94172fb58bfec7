//! The stiff drug model of issue 28 (`crates/ia-verify/references/stiff/drug.json`)
//! by Kvaerno 5(4), for a profiler: the primal, the forward Jacobian or the
//! adjoint gradient of central(T), repeated.
//!
//! ```text
//! cargo build --release -p ia-benches --example stiff_drug_probe
//! valgrind --tool=callgrind target/release/examples/stiff_drug_probe forward 1e-8 20
//! ```
//!
//! Arguments: `primal`, `forward`, `adjoint` or `error` (default `forward`),
//! the tolerance (rtol = atol, default 1e-8), the repetitions (default
//! 20) and the method (`kvaerno5`, the default, or `dopri5`). Prints the steps taken and the first entry of the result; `error`
//! prints the forward Jacobian's and the primal's steps and the Jacobian's
//! normwise relative error (`max |a - b| / max |b|`, as
//! `crates/ia-verify/tests/stiff.rs`) against the mpmath reference
//! `drug.reference.json`.

use ia_adjoint::{gradient, jacobian, FinalComponent, Method};
use ia_equations::EquationModel;
use ia_events::{simulate, Problem, SolverChoice};
use ia_models::Model;

const DRUG: &str = include_str!("../../crates/ia-verify/references/stiff/drug.json");
const REFERENCE: &str = include_str!("../../crates/ia-verify/references/stiff/drug.reference.json");

/// The forward Jacobian's normwise relative error against the reference,
/// with the forward pass's and the primal's accepted and rejected steps.
fn report_error(problem: &Problem<'_>, names: &[&str], tol: f64) {
    let reference: serde_json::Value = serde_json::from_str(REFERENCE).expect("the reference");
    let run = jacobian(problem, Method::Forward).expect("the Jacobian");
    let (mut diff, mut scale) = (0.0f64, 0.0f64);
    for (column, wrt) in run.wrt.iter().enumerate() {
        for (row, name) in names.iter().enumerate() {
            let b = reference["jacobian"][name][wrt.as_str()]
                .as_f64()
                .expect("a reference entry");
            diff = diff.max((run.final_jacobian[(row, column)] - b).abs());
            scale = scale.max(b.abs());
        }
    }
    let primal = simulate(problem).expect("the run");
    let stats = run.trajectory.stats;
    println!(
        "tol {tol:e}: forward {} steps ({} rejected), primal {} ({} rejected), error {:.3e} ({:.2} tol)",
        stats.steps,
        stats.rejected_steps,
        primal.stats.steps,
        primal.stats.rejected_steps,
        diff / scale,
        diff / scale / tol
    );
}

fn main() {
    let mut args = std::env::args().skip(1);
    let what = args.next().unwrap_or_else(|| "forward".into());
    let tol: f64 = args
        .next()
        .map_or(1e-8, |a| a.parse().expect("a tolerance"));
    let repeats: usize = args.next().map_or(20, |a| a.parse().expect("a count"));
    // The method: Kvaerno 5(4), or DOPRI5 (`dopri5`) for the stability-limited
    // comparison of issue 28 in instructions.
    let solver = match args.next().as_deref() {
        Some("dopri5") => SolverChoice::dopri5(tol),
        _ => SolverChoice::Kvaerno5 {
            rtol: tol,
            atol: tol,
            max_step: None,
        },
    };
    let model = EquationModel::from_json_str(DRUG).expect("the drug model");
    let spec = model.spec();
    let system = model.system();
    let problem = Problem::new(
        &system,
        spec.default_state(),
        spec.default_params(),
        spec.t_end,
    )
    .with_mode(&spec.initial_mode)
    .expect("the initial mode")
    .with_solver(solver);
    if what == "error" {
        let names: Vec<&str> = spec.states.iter().map(|s| s.name.as_str()).collect();
        report_error(&problem, &names, tol);
        return;
    }
    let mut value = 0.0;
    let mut steps = 0;
    for _ in 0..repeats {
        match what.as_str() {
            "primal" => {
                let run = simulate(&problem).expect("the run");
                steps = run.stats.steps;
                value = run.final_state[0];
            }
            "adjoint" => {
                let g = gradient(&problem, &FinalComponent(1)).expect("the gradient");
                value = g.params[0];
            }
            _ => {
                let j = jacobian(&problem, Method::Forward).expect("the Jacobian");
                steps = j.trajectory.stats.steps;
                value = j.final_jacobian[0];
            }
        }
    }
    eprintln!("{what} at {tol:e}: {steps} steps, first entry {value:e}");
}
