//! The batched gradient path of `jax.vmap(jax.grad)` (issue 30), in Rust:
//! the adjoint gradient of `x(T)` of `ball2d_flat_a` over 1,000 parameter
//! sets (each within 2 % of the case's, [`ball2d::varied_params`]), per
//! item, against the floor, the one-shot gradient in one kept workspace:
//!
//! * `kept_workspace`: `gradient_in` of each item in turn, one workspace,
//!   each result given back (`Workspace::recycle_gradient`);
//! * `batch/1` and `batch/2`: `Batch::gradient` on one and two workers
//!   (results returned, as the library's batch API gives them);
//! * `map_into/1` and `map_into/2`: `Batch::map_into`, each worker writing
//!   its items' gradients into the caller's rows and giving the vectors
//!   back to its kept workspace, as the JAX handler does.
//!
//! ```text
//! cargo bench -p ia-benches --bench batch_gradient
//! ```
//!
//! Throughput is in items: criterion's `elem/s`, and the time of an
//! iteration divided by 1,000 is the time per item. Before timing, every
//! batch's gradients are checked equal, bit for bit, to the one-shot
//! gradients.

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use ia_adjoint::{gradient, gradient_in, AdjointOptions, Batch, FinalComponent, Workspace};
use ia_benches::ball2d;
use ia_events::{Problem, SolverChoice};
use std::hint::black_box;
use std::time::Duration;

/// The batch size of `bench_jax.py`'s row (b).
const ITEMS: usize = 1000;

fn bench(c: &mut Criterion) {
    let system = ball2d::system();
    let problems: Vec<Problem<'_>> = ball2d::varied_params(ITEMS)
        .into_iter()
        .map(|p| {
            Problem::new(
                &system,
                ball2d::INITIAL_STATE.to_vec(),
                p.to_vec(),
                ball2d::T_END,
            )
            .with_solver(SolverChoice::dopri5(ball2d::TOL))
        })
        .collect();
    let loss = FinalComponent(0);
    let options = AdjointOptions::default();
    let width = problems[0].initial_state.len() + problems[0].params.len();
    let single: Vec<Vec<f64>> = problems
        .iter()
        .map(|p| gradient(p, &loss).unwrap().concatenated())
        .collect();
    let into = |batch: &Batch, rows: &mut [Vec<f64>]| {
        batch.map_into(&problems, rows, |p, row, w| {
            let grad = gradient_in(p, &loss, &options, w).unwrap();
            row.copy_from_slice(&grad.concatenated());
            w.recycle_gradient(grad);
        })
    };
    for jobs in [1, 2] {
        let batch = Batch::with_threads(jobs).unwrap();
        for (g, s) in batch.gradient(&problems, &loss).into_iter().zip(&single) {
            assert_eq!(&g.unwrap().concatenated(), s);
        }
        let mut rows = vec![vec![0.0; width]; ITEMS];
        into(&batch, &mut rows);
        assert_eq!(rows, single);
    }

    let mut group = c.benchmark_group("batch_gradient");
    group.throughput(Throughput::Elements(ITEMS as u64));
    group.sample_size(10);
    group.warm_up_time(Duration::from_secs(1));
    group.measurement_time(Duration::from_secs(5));
    let mut workspace = Workspace::new();
    group.bench_function("kept_workspace", |b| {
        b.iter(|| {
            for p in &problems {
                let grad = gradient_in(p, &loss, &options, &mut workspace).unwrap();
                black_box(grad.params[0]);
                workspace.recycle_gradient(grad);
            }
        })
    });
    for jobs in [1, 2] {
        let batch = Batch::with_threads(jobs).unwrap();
        group.bench_with_input(BenchmarkId::new("batch", jobs), &jobs, |b, _| {
            b.iter(|| black_box(batch.gradient(black_box(&problems), &loss)))
        });
        let mut rows = vec![vec![0.0; width]; ITEMS];
        group.bench_with_input(BenchmarkId::new("map_into", jobs), &jobs, |b, _| {
            b.iter(|| black_box(into(&batch, &mut rows)))
        });
    }
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
