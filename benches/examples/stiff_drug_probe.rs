//! The stiff drug model of issue 28 (`crates/ia-verify/references/stiff/drug.json`)
//! by Kvaerno 5(4), for a profiler: the primal, the forward Jacobian or the
//! adjoint gradient of central(T), repeated.
//!
//! ```text
//! cargo build --release -p ia-benches --example stiff_drug_probe
//! valgrind --tool=callgrind target/release/examples/stiff_drug_probe forward 1e-8 20
//! ```
//!
//! Arguments: `primal`, `forward` or `adjoint` (default `forward`), the
//! tolerance (rtol = atol, default 1e-8) and the repetitions (default 20).
//! Prints the steps taken and the first entry of the result.

use ia_adjoint::{gradient, jacobian, FinalComponent, Method};
use ia_equations::EquationModel;
use ia_events::{simulate, Problem, SolverChoice};
use ia_models::Model;

const DRUG: &str = include_str!("../../crates/ia-verify/references/stiff/drug.json");

fn main() {
    let mut args = std::env::args().skip(1);
    let what = args.next().unwrap_or_else(|| "forward".into());
    let tol: f64 = args
        .next()
        .map_or(1e-8, |a| a.parse().expect("a tolerance"));
    let repeats: usize = args.next().map_or(20, |a| a.parse().expect("a count"));
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
    .with_solver(SolverChoice::Kvaerno5 {
        rtol: tol,
        atol: tol,
        max_step: None,
    });
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
