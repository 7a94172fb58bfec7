//! The thermostat's primal over 10^4 switches, for a profiler.
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
    .with_solver(SolverChoice::dopri5(1e-10))
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
