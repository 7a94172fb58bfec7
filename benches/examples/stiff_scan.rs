//! Which ready models' runs count as stiff: for every model of
//! `ia-models`' catalogue, its default run (state, parameters, initial
//! mode and `t_end`) with DOPRI5 at 1e-6 and 1e-10 and at 1e-3, and DOP853
//! at 1e-8, the steps Hairer's test counted stiff in the plain run, the
//! forward pass and the adjoint's taped run, and whether that taped run
//! was redone on the forward pass's steps (`ia_adjoint::probe`: the
//! stiffness test, in which a step held inside the stability boundary
//! from beyond it counts as beyond, found the flow stiff).
//! None of these runs is stiff: every line should read `redone 0`.
//!
//! ```text
//! cargo run --release -p ia-benches --example stiff_scan
//! cargo run --release -p ia-benches --example stiff_scan -- slip-hopper
//! ```
//!
//! Argument: one model's name (default: every model).

use ia_adjoint::{jacobian, Method};
use ia_events::{Problem, SolverChoice};

fn main() {
    let only = std::env::args().nth(1);
    for model in ia_models::catalog() {
        if only.as_deref().is_some_and(|name| name != model.name()) {
            continue;
        }
        let spec = model.spec();
        let system = model.system();
        for (label, solver) in [
            ("dopri5 1e-6", SolverChoice::dopri5(1e-6)),
            ("dopri5 1e-10", SolverChoice::dopri5(1e-10)),
            (
                "dop853 1e-8",
                SolverChoice::Dop853 {
                    rtol: 1e-8,
                    atol: 1e-8,
                    max_step: None,
                },
            ),
            ("dopri5 1e-3", SolverChoice::dopri5(1e-3)),
        ] {
            let problem = Problem::new(
                &system,
                spec.default_state(),
                spec.default_params(),
                spec.t_end,
            )
            .with_mode(&spec.initial_mode)
            .expect("the model's initial mode")
            .with_solver(solver);
            let primal = ia_events::simulate(&problem);
            let forward = jacobian(&problem, Method::Forward);
            let adjoint = jacobian(&problem, Method::Adjoint);
            match (primal, forward, adjoint) {
                (Ok(p), Ok(f), Ok(a)) => println!(
                    "{:16} {label:12} stiff/steps: primal {}/{}, forward {}/{}, adjoint {}/{}, redone {}",
                    spec.name,
                    p.stats.stiff_steps,
                    p.stats.steps,
                    f.trajectory.stats.stiff_steps,
                    f.trajectory.stats.steps,
                    a.trajectory.stats.stiff_steps,
                    a.trajectory.stats.steps,
                    a.trajectory.stats.redone_steps
                ),
                (p, f, a) => println!(
                    "{:16} {label:12} failed: {:?} {:?} {:?}",
                    spec.name,
                    p.err().map(|e| e.to_string()),
                    f.err().map(|e| e.to_string()),
                    a.err().map(|e| e.to_string())
                ),
            }
        }
    }
}
