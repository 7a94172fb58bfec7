//! One forward run and gradient of the Yin-Yang network, or one primal run
//! of the exact solver, for an instruction count (repeatable under load,
//! unlike a timing).
//!
//! ```text
//! cargo build --release -p ia-benches --example yinyang_count
//! valgrind --tool=callgrind target/release/examples/yinyang_count 200
//! valgrind --tool=callgrind target/release/examples/yinyang_count 1000 primal
//! valgrind --tool=callgrind target/release/examples/yinyang_count 1000 primal queue
//! valgrind --tool=callgrind --toggle-collect='yinyang_count::second_run' \
//!     target/release/examples/yinyang_count 1000 primal again
//! valgrind --tool=callgrind --toggle-collect='ia_events::engine::exact::run_in' \
//!     target/release/examples/yinyang_count 1000 primal batch
//! ```
//!
//! Arguments: the number of hidden neurons (default 120), then `primal`
//! for the exact solver's run alone (no tape: lazy, as the
//! `yinyang_scaling` bench's `exact_primal`, which the layered sweep runs)
//! instead of the gradient, then `queue` for the general run instead of
//! the sweep (`exact::simulate_without_sweep`); it prints the number of
//! events and fingerprints of their times and of the final state, to the
//! bit. `again` instead of `queue` runs the primal twice in one
//! [`Workspace`](ia_events::Workspace), the second time with the inputs of
//! another point (other `t_in<i>`, the same system and weights), as a
//! training loop does from sample to sample: `second_run` is that second
//! run alone (it reuses what the first kept), and it prints the second
//! run's fingerprints after checking them against a fresh run's. `batch`
//! instead runs the 32 samples of the `yinyang_scaling` bench's
//! `exact_primal_batch` twice through one [`Batch`](ia_adjoint::Batch) of
//! one worker (the second call reuses the worker's kept workspace, as
//! the bench's timed calls do); `run_in` counts the 64 runs, and it prints
//! the batch's event count and the first sample's fingerprints.

use ia_benches::yinyang_net::YinYangNet;

fn main() {
    let mut args = std::env::args().skip(1);
    let hidden: usize = args
        .next()
        .map_or(120, |a| a.parse().expect("a number of hidden neurons"));
    let net = YinYangNet::new(hidden, (0.31, 0.64));
    if args.next().as_deref() == Some("primal") {
        let run = match args.next().as_deref() {
            Some("queue") => ia_events::exact::simulate_without_sweep(&net.problem()),
            Some("batch") => {
                let problems: Vec<_> = (0..32)
                    .map(|i| {
                        let u = (i as f64 + 0.5) / 32.0;
                        net.problem_at((u, (0.37 + 0.61 * u) % 1.0))
                    })
                    .collect();
                let batch = ia_adjoint::Batch::with_threads(1).expect("a pool");
                batch.simulate(&problems);
                let runs = second_batch(&batch, &problems);
                let events: usize = runs.iter().map(|r| r.as_ref().unwrap().events.len()).sum();
                eprintln!("batch of 32: {events} events");
                runs.into_iter().next().unwrap()
            }
            Some("again") => {
                let mut workspace = ia_events::Workspace::new();
                let first = ia_events::simulate_in(&net.problem(), &mut workspace);
                workspace.recycle(first.expect("the first exact run"));
                let other = YinYangNet::new(hidden, (0.72, 0.18));
                let mut problem = net.problem();
                problem.params.clone_from(&other.params);
                let run = second_run(&problem, &mut workspace).expect("the second exact run");
                let fresh = ia_events::exact::simulate(&problem).expect("a fresh exact run");
                assert_eq!(run, fresh, "the kept workspace's run is a fresh one's");
                Ok(run)
            }
            _ => ia_events::exact::simulate(&net.problem()),
        };
        let run = run.expect("the exact run");
        // A fingerprint of every event's transition and time to the bit
        // (FNV-1a), and of the final state, to show a change moved none.
        let fnv = |h: u64, v: u64| (h ^ v).wrapping_mul(0x0100_0000_01b3);
        let events = run.events.iter().fold(0xcbf2_9ce4_8422_2325, |h, e| {
            fnv(fnv(h, e.transition as u64), e.time.to_bits())
        });
        let state = run
            .final_state
            .iter()
            .fold(0xcbf2_9ce4_8422_2325, |h, x| fnv(h, x.to_bits()));
        eprintln!(
            "{} events, fingerprints {events:016x} (events) {state:016x} (final state)",
            run.events.len()
        );
        return;
    }
    let loss = |t: &ia_core::Trajectory, s: &mut ia_adjoint::LossSeeds| net.loss(t, s);
    let gradient =
        ia_adjoint::gradient(&net.problem(), &loss).expect("the Yin-Yang network's gradient");
    let norm = gradient
        .params
        .iter()
        .chain(&gradient.initial_state)
        .map(|g| g * g)
        .sum::<f64>()
        .sqrt();
    eprintln!("loss {}, |gradient| {norm:e}", gradient.value);
}

/// The second run of [`main`]'s `again`, in the workspace of the first
/// (counted alone with callgrind's `--toggle-collect`).
#[inline(never)]
fn second_run(
    problem: &ia_events::Problem<'_>,
    workspace: &mut ia_events::Workspace,
) -> Result<ia_core::Trajectory, ia_core::HybridError> {
    ia_events::simulate_in(problem, workspace)
}

/// The second call of [`main`]'s `batch`.
#[inline(never)]
fn second_batch(
    batch: &ia_adjoint::Batch,
    problems: &[ia_events::Problem<'_>],
) -> Vec<Result<ia_core::Trajectory, ia_core::HybridError>> {
    batch.simulate(problems)
}
