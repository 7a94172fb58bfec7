//! A stiff problem of issue 28 (`crates/ia-verify/references/stiff/`: the
//! drug model `drug.json` by default) by Kvaerno 5(4), for a profiler: the
//! primal, the forward Jacobian or the adjoint gradient of the second state
//! at the end (the drug model's central(T)), repeated.
//!
//! ```text
//! cargo build --release -p ia-benches --example stiff_drug_probe
//! valgrind --tool=callgrind target/release/examples/stiff_drug_probe forward 1e-8 20
//! valgrind --tool=callgrind target/release/examples/stiff_drug_probe primal 1e-8 11 dopri5 relay_slow
//! ```
//!
//! Arguments: `primal`, `forward`, `adjoint`, `error` or `steps` (default
//! `forward`), the tolerance (rtol = atol, default 1e-8), the repetitions
//! (default 20), the method (a scenario's `solver.method`: `kvaerno5`, the
//! default, `kvaerno3`, `trbdf2`, `dopri5`, `dop853`, ...) and the problem
//! (a stem of [`ia_benches::stiff::PROBLEMS`]: `drug`, the default,
//! `relay`, `relay_slow`, ..., the files of that
//! stem). Prints the steps taken and the first entry of the result; `error`
//! prints the forward Jacobian's and the primal's steps and the Jacobian's
//! normwise relative error (`max |a - b| / max |b|`, as
//! `crates/ia-verify/tests/stiff.rs`) against the problem's mpmath
//! reference (`<stem>.reference.json`); `steps` lists the primal's
//! accepted steps (start time and size) and its work counters.

use ia_adjoint::{gradient, jacobian, FinalComponent, Method};
use ia_equations::EquationModel;
use ia_events::{run, simulate, NoExtraState, Observer, Problem, RunContext};
use ia_models::Model;

/// Prints every accepted step: mode, start time and size.
struct StepLister;

impl Observer for StepLister {
    fn step_taken(&mut self, _run: RunContext<'_>, mode: usize, t0: f64, h: f64, _y0: &[f64]) {
        println!("{mode} {t0:.10e} {h:.4e}");
    }
}

/// The forward Jacobian's normwise relative error against the reference,
/// with the forward pass's and the primal's accepted and rejected steps.
fn report_error(problem: &Problem<'_>, names: &[&str], tol: f64, reference: &str) {
    let reference: serde_json::Value = serde_json::from_str(reference).expect("the reference");
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
    let method = args.next().unwrap_or_else(|| "kvaerno5".into());
    let stem = args.next().unwrap_or_else(|| "drug".into());
    let (model, reference) = ia_benches::stiff::problem(&stem).unwrap_or_else(|e| panic!("{e}"));
    let model = EquationModel::from_json_str(model).expect("the model");
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
    .with_solver(
        ia_benches::stiff::solver(&method, tol, spec.t_end).unwrap_or_else(|e| panic!("{e}")),
    );
    if what == "error" {
        let names: Vec<&str> = spec.states.iter().map(|s| s.name.as_str()).collect();
        report_error(&problem, &names, tol, reference);
        return;
    }
    if what == "steps" {
        let run = run(&problem, &mut NoExtraState, &mut StepLister).expect("the run");
        println!("{stem} at {tol:e}: {:?}", run.stats);
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
