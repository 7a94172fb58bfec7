//! Ensembles (issue 11): 1,000 ball2d-flat scenarios with varied
//! restitution, friction and initial height (`t_end = 2`, dopri5 at
//! `rtol = atol = 1e-10`), each the one-pass adjoint gradient of
//! `x(T) + y(T)`, run by [`ia_adjoint::Batch`] on one worker and on two.
//! The ratio of the two is the parallel speed-up (target: at least 1.8 on a
//! 2-core machine).
//!
//! ```text
//! cargo bench -p ia-benches --bench ensembles
//! ```
//!
//! Before timing, the setup checks that the batch on two workers gives
//! every gradient equal, to the last bit, to the single call.

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use ia_adjoint::{gradient, Batch, LossTerms, Term};
use ia_core::HybridSystem;
use ia_events::{Problem, SolverChoice};
use std::hint::black_box;
use std::time::Duration;

const SCENARIOS: usize = 1000;

/// Scenario `i`: `e` in [0.8, 0.95), `mu` in [0.3, 0.9), `y0` in [1.0, 1.5).
fn problems(system: &HybridSystem) -> Vec<Problem<'_>> {
    let spec = ia_models::by_name("ball2d-flat").unwrap().spec();
    (0..SCENARIOS)
        .map(|i| {
            let s = i as f64 / SCENARIOS as f64;
            let mut params = spec.default_params();
            params[1] = 0.8 + 0.15 * s;
            params[2] = 0.3 + 0.6 * ((7 * i) % SCENARIOS) as f64 / SCENARIOS as f64;
            let mut x0 = spec.default_state();
            x0[1] = 1.0 + 0.5 * ((13 * i) % SCENARIOS) as f64 / SCENARIOS as f64;
            Problem::new(system, x0, params, spec.t_end).with_solver(SolverChoice::dopri5(1e-10))
        })
        .collect()
}

fn loss(system: &HybridSystem) -> LossTerms {
    let term = |of: &str| Term {
        of: of.into(),
        weight: 1.0,
        target: None,
    };
    LossTerms::new(vec![term("final.x"), term("final.y")], system).unwrap()
}

fn ensembles(c: &mut Criterion) {
    let system = ia_models::by_name("ball2d-flat").unwrap().system();
    let problems = problems(&system);
    let loss = loss(&system);
    let two = Batch::with_threads(2).unwrap();
    for (p, g) in problems.iter().zip(two.gradient(&problems, &loss)) {
        let single = gradient(p, &loss).unwrap();
        assert_eq!(g.unwrap().concatenated(), single.concatenated());
    }
    let mut group = c.benchmark_group("ensembles");
    group.throughput(Throughput::Elements(SCENARIOS as u64));
    group.sample_size(10);
    group.measurement_time(Duration::from_secs(20));
    for jobs in [1, 2] {
        let batch = Batch::with_threads(jobs).unwrap();
        group.bench_with_input(BenchmarkId::new("gradient_adjoint", jobs), &jobs, |b, _| {
            b.iter(|| black_box(batch.gradient(black_box(&problems), &loss)))
        });
    }
    group.finish();
}

criterion_group!(benches, ensembles);
criterion_main!(benches);
