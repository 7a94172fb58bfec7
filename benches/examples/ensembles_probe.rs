//! The `ensembles` case timed in alternating rounds: one worker, then two,
//! `ROUNDS` times over, each round the mean of `REPEATS` batches of 1,000
//! gradients. Host drift then falls on both job counts alike; the best
//! round of each is the least disturbed, the median the typical one.
//!
//! ```text
//! cargo run --release -p ia-benches --example ensembles_probe
//! ```
//!
//! Prints, per job count, the best and the median round, and the two
//! ratios of one job over two.

use ia_adjoint::Batch;
use ia_benches::ensembles::{loss, problems, system};
use std::hint::black_box;
use std::time::Instant;

const ROUNDS: usize = 40;
const REPEATS: u32 = 20;

fn main() {
    let system = system();
    let problems = problems(&system);
    let loss = loss(&system);
    let batches = [1, 2].map(|jobs| Batch::with_threads(jobs).expect("a pool"));
    let mut rounds = [Vec::new(), Vec::new()];
    for _ in 0..ROUNDS {
        for (batch, times) in batches.iter().zip(&mut rounds) {
            let start = Instant::now();
            for _ in 0..REPEATS {
                black_box(batch.gradient(black_box(&problems), &loss));
            }
            times.push(start.elapsed().as_secs_f64() / f64::from(REPEATS));
        }
    }
    let [best, median] = [0, ROUNDS / 2].map(|k| {
        rounds.clone().map(|mut times| {
            times.sort_by(f64::total_cmp);
            times[k]
        })
    });
    for (what, [one, two]) in [("best", best), ("median", median)] {
        println!(
            "{what:>6} round: 1 job {:.3} ms, 2 jobs {:.3} ms, speed-up {:.2}",
            one * 1e3,
            two * 1e3,
            one / two
        );
    }
}
