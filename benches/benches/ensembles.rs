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
//!
//! The ratio depends on the host as much as on the code: on a shared
//! virtual machine one core is now and then slower for tens of seconds,
//! and the two job counts are timed 20 s apart. `ensembles_probe`
//! (benches/examples) times them in alternating rounds instead.

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use ia_adjoint::{gradient, Batch};
use ia_benches::ensembles::{loss, problems, system, SCENARIOS};
use std::hint::black_box;
use std::time::Duration;

fn ensembles(c: &mut Criterion) {
    let system = system();
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
