//! The primal of the default `lif-network` (every event recorded, as in the
//! `network` bench), for a profiler: where the time of an event goes at a
//! given size.
//!
//! ```text
//! cargo build --release -p ia-benches --example network_probe
//! valgrind --tool=callgrind target/release/examples/network_probe 1000 0.03
//! ```
//!
//! Arguments: the number of neurons (default 1000), the run's end time
//! (default the model's, 0.15 s), and `exact` for the exact event-driven
//! solver (`ia_events::exact`) in place of DOPRI5.

use ia_benches::network::Network;
use ia_events::simulate;

fn main() {
    let mut args = std::env::args().skip(1);
    let n: usize = args.next().map_or(1000, |a| a.parse().expect("a size"));
    let network = Network::new(n);
    let mut problem = network.problem();
    if let Some(t_end) = args.next() {
        problem.t_end = t_end.parse().expect("an end time");
    }
    let run = match args.next().as_deref() {
        Some("exact") => ia_events::exact::simulate(&problem),
        _ => simulate(&problem),
    }
    .expect("the default network runs");
    eprintln!(
        "{} events {} steps {} rhs {} root iterations",
        run.stats.events, run.stats.steps, run.stats.rhs_evaluations, run.stats.root_iterations
    );
}
