use ia_adjoint::{gradient_in, AdjointOptions, Batch, LossTerms, Term, Workspace};
use ia_events::{Problem, SolverChoice};
use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Instant;
struct C;
static N: AtomicUsize = AtomicUsize::new(0);
unsafe impl GlobalAlloc for C {
    unsafe fn alloc(&self, l: Layout) -> *mut u8 {
        N.fetch_add(1, Ordering::Relaxed);
        unsafe { System.alloc(l) }
    }
    unsafe fn dealloc(&self, p: *mut u8, l: Layout) {
        unsafe { System.dealloc(p, l) }
    }
}
#[global_allocator]
static G: C = C;
fn main() {
    let system = ia_models::by_name("ball2d-flat").unwrap().system();
    let spec = ia_models::by_name("ball2d-flat").unwrap().spec();
    let problems: Vec<Problem> = (0..1000)
        .map(|i| {
            let s = i as f64 / 1000.0;
            let mut params = spec.default_params();
            params[1] = 0.8 + 0.15 * s;
            params[2] = 0.3 + 0.6 * ((7 * i) % 1000) as f64 / 1000.0;
            let mut x0 = spec.default_state();
            x0[1] = 1.0 + 0.5 * ((13 * i) % 1000) as f64 / 1000.0;
            Problem::new(&system, x0, params, spec.t_end).with_solver(SolverChoice::dopri5(1e-10))
        })
        .collect();
    let term = |of: &str| Term {
        of: of.into(),
        weight: 1.0,
        target: None,
    };
    let loss = LossTerms::new(vec![term("final.x"), term("final.y")], &system).unwrap();
    let mut w = Workspace::new();
    let o = AdjointOptions::default();
    for _ in 0..3 {
        let _ = gradient_in(&problems[0], &loss, &o, &mut w);
    }
    let before = N.load(Ordering::Relaxed);
    let g = gradient_in(&problems[0], &loss, &o, &mut w).unwrap();
    println!(
        "allocs per gradient_in {}",
        N.load(Ordering::Relaxed) - before
    );
    println!(
        "events {} segments {}",
        g.trajectory.events.len(),
        g.trajectory.segments.len()
    );
    println!(
        "size_of Result<Gradient> {}",
        std::mem::size_of::<Result<ia_adjoint::Gradient, ia_core::HybridError>>()
    );
    let b1 = Batch::with_threads(1).unwrap();
    let b2 = Batch::with_threads(2).unwrap();
    let time = |b: &Batch, kept: bool| {
        let t = Instant::now();
        for _ in 0..50 {
            if kept {
                let r = b.map(&problems, |p| {
                    ia_adjoint::gradient(p, &loss)
                        .map(|g| g.params[0])
                        .unwrap_or(0.0)
                });
                drop(r);
            } else {
                let r = b.gradient(&problems, &loss);
                drop(r);
            }
        }
        t.elapsed().as_secs_f64() / 50.0 * 1e3
    };
    let mut sums = [0.0; 4];
    for _ in 0..8 {
        sums[0] += time(&b1, false);
        sums[1] += time(&b2, false);
        sums[2] += time(&b1, true);
        sums[3] += time(&b2, true);
    }
    println!(
        "map_in: 1 job {:.3} ms, 2 jobs {:.3} ms, ratio {:.3}",
        sums[0] / 8.0,
        sums[1] / 8.0,
        sums[0] / sums[1]
    );
    println!(
        "in-worker drop:   1 job {:.3} ms, 2 jobs {:.3} ms, ratio {:.3}",
        sums[2] / 8.0,
        sums[3] / 8.0,
        sums[2] / sums[3]
    );
}
