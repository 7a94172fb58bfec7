//! The exact solver on `cuba-lif` 5-N-3 with Yin-Yang-like inputs
//! ([`ia_benches::yinyang_net`]) as the hidden layer grows: primal events
//! per second at N = 100, 300 and 1,000 hidden neurons (criterion's
//! throughput is the number of events; the primal run keeps no event
//! states, so each neuron is advanced only when an event touches it), and
//! the forward run and adjoint gradient of one sample at N = 100 and 1,000
//! (the ratio of the two is the growth of a sample's cost with N). Each
//! primal size is timed too with the event states kept
//! (`exact_primal_eager`: every neuron brought to every event's time).
//! `exact_primal_batch` times a batch of 32 samples (points spread over
//! the square) of the N = 1,000 network on one worker per core: the
//! machine's primal events per second, as a training batch runs;
//! `exact_primal_batch_one_worker` the same batch on one worker (the
//! curve over workers: how far a batch scales with the cores).
//!
//! ```text
//! cargo bench -p ia-benches --bench yinyang_scaling
//! ```
//!
//! Before timing, the setup prints each size's event counts (inputs, hidden
//! and output spikes) and checks the lazy primal run against the eager one
//! (the same events, times to 1e-12).

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use ia_adjoint::{gradient, Batch};
use ia_benches::yinyang_net::YinYangNet;
use ia_events::{exact, EventOptions};
use std::hint::black_box;
use std::time::Duration;

/// The point the inputs code (inside the unit square; its class does not
/// matter for the cost).
const POINT: (f64, f64) = (0.31, 0.64);

/// The samples of the batch timed by `exact_primal_batch`.
const BATCH: usize = 32;

fn bench(c: &mut Criterion) {
    let mut group = c.benchmark_group("yinyang_scaling");
    group
        .sample_size(10)
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(3));
    for hidden in [100, 300, 1000] {
        let net = YinYangNet::new(hidden, POINT);
        let problem = net.problem();
        let run = exact::simulate(&problem).expect("the exact run");
        // The same run keeping the event states: every neuron is brought
        // to every event's time (the cost the lazy run removes).
        let eager_problem = problem.clone().with_event_options(EventOptions {
            max_events: 10_000_000,
            ..EventOptions::default()
        });
        let eager = exact::simulate(&eager_problem).expect("the eager exact run");
        assert_eq!(run.events.len(), eager.events.len());
        for (a, b) in run.events.iter().zip(&eager.events) {
            assert_eq!(a.transition, b.transition);
            assert!((a.time - b.time).abs() <= 1e-12 * b.time.abs().max(1.0));
        }
        let outputs = run
            .events
            .iter()
            .filter(|e| net.output_spike[e.transition])
            .count();
        eprintln!(
            "N = {hidden}: {} events ({} hidden spikes, {outputs} output spikes)",
            run.events.len(),
            run.events.len() - 5 - outputs,
        );
        group.throughput(Throughput::Elements(run.events.len() as u64));
        group.bench_function(BenchmarkId::new("exact_primal", hidden), |b| {
            b.iter(|| black_box(exact::simulate(&problem).unwrap()))
        });
        group.bench_function(BenchmarkId::new("exact_primal_eager", hidden), |b| {
            b.iter(|| black_box(exact::simulate(&eager_problem).unwrap()))
        });
    }
    // The machine's primal events per second: a batch of samples (other
    // points, the same network) on one worker per core, each worker in its
    // own kept workspace, as a training batch runs (`jax.vmap`).
    let net = YinYangNet::new(1000, POINT);
    let points: Vec<(f64, f64)> = (0..BATCH)
        .map(|i| {
            let u = (i as f64 + 0.5) / BATCH as f64;
            (u, (0.37 + 0.61 * u) % 1.0)
        })
        .collect();
    let problems: Vec<_> = points.iter().map(|&p| net.problem_at(p)).collect();
    let batch = Batch::with_threads(0).expect("a pool");
    let events: usize = batch
        .simulate(&problems)
        .into_iter()
        .map(|run| run.expect("the exact run").events.len())
        .sum();
    eprintln!(
        "N = 1000, a batch of {BATCH} samples on {} workers: {events} events",
        batch.threads()
    );
    group.throughput(Throughput::Elements(events as u64));
    group.bench_function(
        BenchmarkId::new("exact_primal_batch", format!("1000x{BATCH}")),
        |b| b.iter(|| black_box(batch.simulate(&problems))),
    );
    let one_worker = Batch::with_threads(1).expect("a pool of one");
    group.bench_function(
        BenchmarkId::new("exact_primal_batch_one_worker", format!("1000x{BATCH}")),
        |b| b.iter(|| black_box(one_worker.simulate(&problems))),
    );
    for hidden in [100, 1000] {
        let net = YinYangNet::new(hidden, POINT);
        let problem = net.problem();
        let loss = |t: &ia_core::Trajectory, s: &mut ia_adjoint::LossSeeds| net.loss(t, s);
        gradient(&problem, &loss).expect("the gradient");
        group.throughput(Throughput::Elements(1));
        group.bench_function(BenchmarkId::new("forward_and_gradient", hidden), |b| {
            b.iter(|| black_box(gradient(&problem, &loss).unwrap()))
        });
    }
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
