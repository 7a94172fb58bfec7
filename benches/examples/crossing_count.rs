//! The exact solver's first crossing of a threshold
//! (`ia_events::exact::first_crossing`) over a grid of current-based
//! neurons (`tau_mem = 20`, `tau_syn = 5`, threshold 1: potentials from
//! -0.5 to 0.87, currents from 2 to 10), for an instruction count
//! (repeatable under load, unlike a timing). It is the search the eager
//! exact run (forward sensitivities, observations) makes for every guard it
//! predicts.
//!
//! ```text
//! cargo build --release -p ia-benches --example crossing_count
//! valgrind --tool=callgrind target/release/examples/crossing_count
//! callgrind_annotate --inclusive=yes callgrind.out.<pid> | grep first_crossing
//! ```
//!
//! It prints the number of crossings found and the sum of their delays.

use ia_core::Direction;
use ia_events::exact::{first_crossing, PairRates};

fn main() {
    let a = [[-1.0 / 20.0, 1.0 / 20.0], [0.0, -1.0 / 5.0]];
    let rates = PairRates::of(&a);
    let (mut found, mut sum) = (0, 0.0);
    for i in 0..2000 {
        let potential = -0.5 + (i % 40) as f64 * 0.035;
        let current = 2.0 + (i / 40) as f64 * 0.17;
        let y0 = [potential, current];
        if let Some(s) = first_crossing(&a, &[0.0; 2], &rates, &y0, 0, 1.0, Direction::Rising) {
            found += 1;
            sum += s;
        }
    }
    println!("{found} crossings, delays summing to {sum:.17e}");
}
