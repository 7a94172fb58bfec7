//! The thermostat's primal over 10^4 switches (rtol = atol = 1e-10, no
//! event recorded), for a profiler: where the time of a step and of an
//! event goes. The argument `dop853` runs that method instead of dopri5.
//!
//! ```text
//! cargo build --release -p ia-benches --example thermostat_probe
//! valgrind --tool=callgrind target/release/examples/thermostat_probe
//! ```
//!
//! 235M instructions on 2026-12-04 (10,009 switches, 85,079 steps: about
//! 2.8k a step); see docs/performance.md.

use ia_events::{simulate, EventOptions, EventRecording, Problem, SolverChoice};
fn main() {
    let model = ia_models::by_name("thermostat").unwrap();
    let spec = model.spec();
    let system = model.system();
    let problem = Problem::new(
        &system,
        spec.default_state(),
        spec.default_params(),
        16400.0,
    )
    .with_solver(match std::env::args().nth(1).as_deref() {
        None | Some("dopri5") => SolverChoice::dopri5(1e-10),
        Some("dop853") => SolverChoice::Dop853 {
            rtol: 1e-10,
            atol: 1e-10,
            max_step: None,
        },
        Some(other) => panic!("unknown method {other}: dopri5 or dop853"),
    })
    .with_event_options(EventOptions {
        record: EventRecording::None,
        max_events: 2_000_000,
        ..EventOptions::default()
    });
    let run = simulate(&problem).unwrap();
    eprintln!(
        "{} events {} steps {} rhs {} root",
        run.stats.events, run.stats.steps, run.stats.rhs_evaluations, run.stats.root_iterations
    );
}
