//! The adjoint gradient of `x(T)` of `ball2d_flat_a` over `k` parameter
//! sets ([`ball2d::varied_params`], as `benches/jax/bench_jax.py` varies
//! them), each in one kept workspace, for an instruction count (repeatable
//! under load, unlike a timing).
//!
//! ```text
//! cargo build --release -p ia-benches --example gradient_count
//! valgrind --tool=callgrind target/release/examples/gradient_count 3000
//! valgrind --tool=callgrind target/release/examples/gradient_count 1000
//! ```
//!
//! The instructions of one gradient are the difference of the two totals
//! divided by 2,000. Arguments: the number of gradients `k` (default
//! 1,000), then `primal` to run the primal instead (the same runs, no
//! tape).

use ia_adjoint::{gradient_in, AdjointOptions, FinalComponent, Workspace};
use ia_benches::ball2d;
use ia_events::{Problem, SolverChoice};

fn main() {
    let mut args = std::env::args().skip(1);
    let count: usize = args
        .next()
        .map_or(1000, |a| a.parse().expect("a number of gradients"));
    let primal = args.next().is_some_and(|a| a == "primal");
    let system = ball2d::system();
    let loss = FinalComponent(0);
    let options = AdjointOptions::default();
    let mut workspace = Workspace::new();
    let mut runs = ia_events::Workspace::default();
    let mut sum = 0.0;
    for p in ball2d::varied_params(count) {
        let problem = Problem::new(
            &system,
            ball2d::INITIAL_STATE.to_vec(),
            p.to_vec(),
            ball2d::T_END,
        )
        .with_solver(SolverChoice::dopri5(ball2d::TOL));
        if primal {
            let run = ia_events::simulate_in(&problem, &mut runs).expect("the run");
            sum += run.final_state[0];
            runs.recycle(run);
        } else {
            let grad =
                gradient_in(&problem, &loss, &options, &mut workspace).expect("the gradient");
            sum += grad.params.iter().sum::<f64>();
            workspace.recycle_gradient(grad);
        }
    }
    eprintln!("sum {sum:e}");
}
