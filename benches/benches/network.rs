//! The spiking network `lif-network` at N = 10, 100 and 1000 neurons (about
//! ten spikes per neuron, `rtol = atol = 1e-10`): the primal solve (by
//! DOPRI5, and by the exact event-driven solver `ia_events::exact`), the
//! forward Jacobian with respect to ten chosen columns (by both)
//! ([`ia_benches::network::CHOSEN`]: five initial potentials, four drives
//! and `tau`), and the adjoint gradient (by both), with respect to every
//! parameter, of a loss reading all final potentials and the last ten spike
//! times. Criterion's throughput is
//! the number of events, so its report reads as events per second.
//!
//! ```text
//! cargo bench -p ia-benches --bench network
//! ```
//!
//! Before timing, the setup checks the adjoint gradient against forward
//! sensitivities contracted with the same seeds (N = 10, by both solvers),
//! so the benchmark never times a wrong answer.

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use ia_adjoint::{gradient, jacobian_wrt, Method};
use ia_benches::network::{loss, Network};
use ia_events::simulate;
use std::hint::black_box;
use std::time::Duration;

const SIZES: [usize; 3] = [10, 100, 1000];

/// The adjoint gradient of `problem` against the forward Jacobian
/// contracted with the same seeds.
fn check(problem: &ia_events::Problem<'_>) {
    let adjoint = gradient(problem, &loss).expect("adjoint gradient");
    let forward = ia_adjoint::jacobian(problem, ia_adjoint::Method::ForwardOnStateSteps)
        .expect("forward Jacobian");
    let mut seeds = ia_adjoint::LossSeeds::zeros(&forward.trajectory);
    loss(&forward.trajectory, &mut seeds);
    for (j, a) in adjoint.concatenated().iter().enumerate() {
        let mut f = 0.0;
        for (i, s) in seeds.final_state.iter().enumerate() {
            f += s * forward.final_jacobian[(i, j)];
        }
        for (k, s) in seeds.event_times.iter().enumerate() {
            f += s * forward.event_time_gradients[(k, j)];
        }
        assert!(
            (a - f).abs() <= 1e-9 * (1.0 + f.abs()),
            "column {j}: adjoint {a} vs forward {f}"
        );
    }
}

fn bench(c: &mut Criterion) {
    let net = Network::new(10);
    let mut problem = net.problem();
    check(&problem);
    problem.solver = ia_events::SolverChoice::Exact;
    check(&problem);
    let mut group = c.benchmark_group("network");
    group
        .sample_size(10)
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(3));
    for n in SIZES {
        let net = Network::new(n);
        let problem = net.problem();
        let run = simulate(&problem).expect("the network runs");
        eprintln!(
            "N = {n}: {} events, {} steps, {} root iterations, {} parameters",
            run.events.len(),
            run.stats.steps,
            run.stats.root_iterations,
            net.system.param_dim()
        );
        group.throughput(Throughput::Elements(run.events.len() as u64));
        group.bench_with_input(BenchmarkId::new("primal", n), &problem, |b, p| {
            b.iter(|| black_box(simulate(p).unwrap()))
        });
        // The same run by the exact event-driven solver: the same spikes
        // (checked here to 1e-8 in time), no steps.
        let exact = ia_events::exact::simulate(&problem).expect("the exact solver runs");
        assert_eq!(exact.events.len(), run.events.len());
        for (a, b) in exact.events.iter().zip(&run.events) {
            assert_eq!(a.transition, b.transition);
            assert!((a.time - b.time).abs() <= 1e-8, "{} vs {}", a.time, b.time);
        }
        group.bench_with_input(BenchmarkId::new("primal_exact", n), &problem, |b, p| {
            b.iter(|| black_box(ia_events::exact::simulate(p).unwrap()))
        });
        // Recording every event keeps 2 N states an event (16 KB at
        // N = 1000): the same run keeping the last ten shows the solver's
        // own cost.
        let mut last_ten = problem.clone();
        last_ten.events.record = ia_events::EventRecording::Last(10);
        group.bench_with_input(
            BenchmarkId::new("primal_exact_last_10_recorded", n),
            &last_ten,
            |b, p| b.iter(|| black_box(ia_events::exact::simulate(p).unwrap())),
        );
        let chosen = net.chosen_columns();
        let chosen: Vec<&str> = chosen.iter().map(String::as_str).collect();
        group.bench_with_input(
            BenchmarkId::new("forward_10_columns", n),
            &problem,
            |b, p| b.iter(|| black_box(jacobian_wrt(p, Method::Forward, &chosen).unwrap())),
        );
        // Forward sensitivities through the exact solver (the same ten
        // columns; equal to DOPRI5's to 1e-7 in ia-verify's exact_solver
        // tests, to the closed form to rounding).
        let mut exact_problem = problem.clone();
        exact_problem.solver = ia_events::SolverChoice::Exact;
        group.bench_with_input(
            BenchmarkId::new("forward_10_columns_exact", n),
            &exact_problem,
            |b, p| b.iter(|| black_box(jacobian_wrt(p, Method::Forward, &chosen).unwrap())),
        );
        group.bench_with_input(BenchmarkId::new("adjoint_gradient", n), &problem, |b, p| {
            b.iter(|| black_box(gradient(p, &loss).unwrap()))
        });
        // The same gradient through the exact solver (checked against its
        // forward pass at N = 10 above, against the closed form in
        // ia-verify).
        group.bench_with_input(
            BenchmarkId::new("adjoint_gradient_exact", n),
            &exact_problem,
            |b, p| b.iter(|| black_box(gradient(p, &loss).unwrap())),
        );
    }
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
