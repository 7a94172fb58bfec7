//! The thermostat's primal over 10^4 switches (rtol = atol = 1e-10, no
//! event recorded), for a profiler: where the time of a step and of an
//! event goes. The argument `dop853` runs that method instead of dopri5.
//!
//! ```text
//! cargo build --release -p ia-benches --example thermostat_probe
//! valgrind --tool=callgrind target/release/examples/thermostat_probe
//! ```
//!
//! 214M instructions with dopri5 (10,009 switches, 85,079 steps: about
//! 2.5k a step) and 118M with dop853 (15,016 steps) on 2026-12-04; see
//! the dated log in the history of docs/performance.md (`git log -p`).

use ia_benches::thermostat;
use ia_events::{simulate, EventRecording};

fn main() {
    let name = std::env::args().nth(1).unwrap_or_else(|| "dopri5".into());
    let solver = thermostat::method(&name)
        .unwrap_or_else(|| panic!("unknown method {name}: dopri5 or dop853"));
    let system = thermostat::system();
    let problem = thermostat::problem(&system, 16400.0, EventRecording::None, solver);
    let run = simulate(&problem).unwrap();
    eprintln!(
        "{} events {} steps {} rhs {} root",
        run.stats.events, run.stats.steps, run.stats.rhs_evaluations, run.stats.root_iterations
    );
}
