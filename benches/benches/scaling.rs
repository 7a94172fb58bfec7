//! Parameter scaling: a ball on bumpy ground `y = sum_k a_k sin(k x) / k^2`
//! with `N` bump amplitudes (`N + 3` parameters, state dimension 4), at
//! `rtol = atol = 1e-10`. Times the primal solve, the full forward Jacobian
//! and the adjoint gradient of `x(T)` for each `N`.
//!
//! ```text
//! cargo bench -p ia-benches --bench scaling
//! ```

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion};
use ia_adjoint::{gradient, jacobian, FinalComponent, Method};
use ia_benches::bumpy;
use std::hint::black_box;
use std::time::Duration;

const SIZES: [usize; 3] = [10, 100, 400];
const TOL: f64 = 1e-10;

/// Checks that the adjoint and the forward Jacobian agree, and reports the
/// run's size.
fn check(n_bumps: usize) {
    let system = bumpy::system(n_bumps);
    let problem = bumpy::problem(&system, TOL);
    let grad = gradient(&problem, &FinalComponent(0)).expect("adjoint gradient");
    let sens = jacobian(&problem, Method::ForwardOnStateSteps).expect("forward Jacobian");
    let forward = jacobian(&problem, Method::Forward).expect("forward Jacobian");
    let adjoint = grad.concatenated();
    for (j, a) in adjoint.iter().enumerate() {
        let f = sens.final_jacobian[(0, j)];
        assert!(
            (a - f).abs() <= 1e-9 * (1.0 + f.abs()),
            "N = {n_bumps}, column {j}: adjoint {a} vs forward on the same steps {f}"
        );
        let g = forward.final_jacobian[(0, j)];
        assert!(
            (a - g).abs() <= 1e-6 * (1.0 + g.abs()),
            "N = {n_bumps}, column {j}: adjoint {a} vs error-controlled forward {g}"
        );
    }
    eprintln!(
        "N = {n_bumps}: {} events, {} steps (primal/adjoint), {} steps (error-controlled forward), dx(T)/da_1 = {:.6}",
        grad.trajectory.events.len(),
        grad.trajectory.stats.steps,
        forward.trajectory.stats.steps,
        adjoint[4 + bumpy::FIRST_BUMP],
    );
}

fn bench(c: &mut Criterion) {
    let mut group = c.benchmark_group("bumpy_scaling");
    for n_bumps in SIZES {
        check(n_bumps);
        let system = bumpy::system(n_bumps);
        group.bench_with_input(BenchmarkId::new("primal", n_bumps), &system, |b, sys| {
            b.iter(|| {
                let problem = bumpy::problem(black_box(sys), TOL);
                ia_events::simulate(&problem).unwrap().final_state[0]
            })
        });
        group.bench_with_input(
            BenchmarkId::new("forward_jacobian", n_bumps),
            &system,
            |b, sys| {
                b.iter(|| {
                    let problem = bumpy::problem(black_box(sys), TOL);
                    jacobian(&problem, Method::Forward).unwrap().final_jacobian[(0, 0)]
                })
            },
        );
        group.bench_with_input(
            BenchmarkId::new("adjoint_gradient", n_bumps),
            &system,
            |b, sys| {
                b.iter(|| {
                    let problem = bumpy::problem(black_box(sys), TOL);
                    gradient(&problem, &FinalComponent(0)).unwrap().params[0]
                })
            },
        );
    }
    group.finish();
}

criterion_group! {
    name = benches;
    config = Criterion::default()
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(2))
        .sample_size(20);
    targets = bench
}
criterion_main!(benches);
