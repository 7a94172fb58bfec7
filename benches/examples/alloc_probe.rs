//! A thousand forward Jacobians of `ball2d_flat_a` in one kept workspace,
//! for a heap profiler: where the allocations of a call come from.
//!
//! ```text
//! cargo build --release -p ia-benches --example alloc_probe
//! valgrind --tool=dhat --dhat-out-file=dhat.json target/release/examples/alloc_probe
//! ```
//!
//! Sites with about a thousand blocks in `dhat.json` are per-call
//! allocations; today there are none (the 120-odd blocks are the set-up and
//! the first two calls, which fill the workspace).

use ia_adjoint::{jacobian_in, Method, Workspace};
use ia_benches::ball2d;

fn main() {
    let system = ball2d::system();
    let problem = ball2d::problem(&system);
    let mut workspace = Workspace::new();
    for _ in 0..1000 {
        let sens = jacobian_in(&problem, Method::Forward, &mut workspace).unwrap();
        workspace.recycle(std::hint::black_box(sens));
    }
}
