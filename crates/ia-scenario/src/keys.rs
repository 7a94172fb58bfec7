//! The keys of a scenario document.

/// The keys a scenario may have.
pub const SCENARIO_KEYS: [&str; 15] = [
    "model",
    "size",
    "connections",
    "params",
    "initial_state",
    "initial_mode",
    "t_end",
    "observe",
    "solver",
    "max_events",
    "max_steps",
    "loss",
    "adjoint",
    "record",
    "fit",
];

/// The keys `impact-adjoint periodic` adds to a scenario (it refuses
/// `observe`, `loss` and `adjoint`, which describe other commands' outputs).
pub const PERIODIC_KEYS: [&str; 4] = ["section", "events_per_period", "max_period", "advancing"];
