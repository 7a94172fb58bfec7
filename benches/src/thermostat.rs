//! The thermostat's long runs (issue 9): the model's default state,
//! parameters and starting mode, switching about once per 1.64 time units
//! (`t_end = 1640` gives about 1,000 switches), at `rtol = atol = 1e-10`
//! with either Dormand-Prince pair, or by the exact event-driven solver.

use ia_core::HybridSystem;
use ia_events::{EventOptions, EventRecording, Problem, SolverChoice};

/// The tolerance of every long run.
pub const TOL: f64 = 1e-10;

/// The methods the long runs compare, by their command-line names: DOPRI5
/// (the default) and DOP853, both at [`TOL`], and the exact event-driven
/// solver (`ia_events::exact`: closed-form stretches, no tolerance).
pub fn methods() -> [(&'static str, SolverChoice); 3] {
    [
        ("dopri5", SolverChoice::dopri5(TOL)),
        (
            "dop853",
            SolverChoice::Dop853 {
                rtol: TOL,
                atol: TOL,
                max_step: None,
            },
        ),
        ("exact", SolverChoice::Exact),
    ]
}

/// The method of [`methods`] named `name`, if there is one.
pub fn method(name: &str) -> Option<SolverChoice> {
    methods()
        .into_iter()
        .find(|(n, _)| *n == name)
        .map(|(_, solver)| solver)
}

/// The `thermostat` model's system.
pub fn system() -> HybridSystem {
    ia_models::by_name("thermostat")
        .expect("the thermostat is a ready model")
        .system()
}

/// The default thermostat run to `t_end` by `solver`, keeping the events
/// `record` says, with room for ten million events.
pub fn problem(
    system: &HybridSystem,
    t_end: f64,
    record: EventRecording,
    solver: SolverChoice,
) -> Problem<'_> {
    let spec = ia_models::by_name("thermostat")
        .expect("the thermostat is a ready model")
        .spec();
    Problem::new(system, spec.default_state(), spec.default_params(), t_end)
        .with_mode(&spec.initial_mode)
        .expect("the default mode exists")
        .with_solver(solver)
        .with_event_options(EventOptions {
            max_events: 10_000_000,
            record,
            ..Default::default()
        })
}
