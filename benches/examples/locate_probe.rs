//! The event location work of scenario runs: for each scenario file given,
//! its steps, rejected steps, events, guard evaluations on the dense output
//! (`stats.root_iterations`, which the command line does not print) and
//! every event time (decimal and bits), for a comparison of location rules.
//! An argument `tol=1e-10` sets `rtol = atol` of the scenarios after it
//! (keeping their method).
//!
//! ```text
//! cargo build --release -p ia-benches --example locate_probe
//! target/release/examples/locate_probe tol=1e-10 examples/scenarios/ball2d_flat_a.json
//! ```

use ia_scenario::Scenario;

fn main() {
    let mut tol: Option<f64> = None;
    for arg in std::env::args().skip(1) {
        if let Some(t) = arg.strip_prefix("tol=") {
            tol = Some(t.parse().expect("a tolerance"));
            continue;
        }
        let text = std::fs::read_to_string(&arg).expect("a readable scenario");
        let mut value: serde_json::Value = serde_json::from_str(&text).expect("JSON");
        if let Some(t) = tol {
            if let Some(solver) = value.get_mut("solver").and_then(|s| s.as_object_mut()) {
                solver.insert("rtol".into(), t.into());
                solver.insert("atol".into(), t.into());
            }
        }
        let scenario = match Scenario::from_value(&value) {
            Ok(s) => s,
            Err(e) => {
                println!("{arg}: not read: {e}");
                continue;
            }
        };
        let problem = scenario.problem().expect("a problem");
        match ia_events::simulate(&problem) {
            Ok(run) => {
                let s = &run.stats;
                println!(
                    "{arg}: steps {} rejected {} events {} root_iterations {} rhs {}",
                    s.steps, s.rejected_steps, s.events, s.root_iterations, s.rhs_evaluations
                );
                for e in run.events.iter().take(12) {
                    println!(
                        "  event {} at {:.17e} ({:016x})",
                        e.index,
                        e.time,
                        e.time.to_bits()
                    );
                }
                if run.events.len() > 12 {
                    let last = run.events.last().expect("an event");
                    println!("  ... event {} at {:.17e}", last.index, last.time);
                }
            }
            Err(e) => println!("{arg}: failed: {e}"),
        }
    }
}
