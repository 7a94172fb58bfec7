//! Long runs (issue 9): the thermostat switching 10^3, 10^4 and 10^5 times
//! (`t_end` = 1640, 16400, 164000; `rtol = atol = 1e-10`; DOPRI5, the
//! default, DOP853, the method for such runs, and the exact event-driven
//! solver, `ia_events::exact`), recording no
//! events ([`EventRecording::None`]), so the record's memory does not grow
//! with the run. Three figures per length: the primal solve, the forward
//! gradient of every final entry and parameter, and the one-pass adjoint of
//! a loss reading the final state and the last ten switching times (its
//! events recorded: the last ten). Criterion's throughput is the number of
//! events, so its report reads as events per second, and the three lengths
//! show the cost growing linearly with the run.
//!
//! ```text
//! cargo bench -p ia-benches --bench long_runs
//! ```
//!
//! Before timing, the setup checks the adjoint gradient of the loss against
//! forward sensitivities contracted with the same weights (10^3 switches,
//! on the same steps, by each method), so the benchmark never times a
//! wrong answer.

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use ia_adjoint::{gradient, jacobian, LossTerms, Method, Term};
use ia_benches::thermostat::{self, methods, problem};
use ia_core::HybridSystem;
use ia_events::{simulate, EventRecording, SolverChoice};
use std::hint::black_box;
use std::time::Duration;

/// About 10^3, 10^4 and 10^5 switches.
const LENGTHS: [f64; 3] = [1640.0, 16400.0, 164000.0];

/// `T(t_end)` plus the last ten switching times.
fn loss(system: &HybridSystem) -> LossTerms {
    let mut terms = vec![Term {
        of: "final.T".into(),
        weight: 1.0,
        target: None,
    }];
    terms.extend((1..=10).map(|k| Term {
        of: format!("event.-{k}.time"),
        weight: 1.0 / k as f64,
        target: None,
    }));
    LossTerms::new(terms, system).unwrap()
}

fn check(system: &HybridSystem, solver: SolverChoice) {
    let run = problem(system, LENGTHS[0], EventRecording::Last(10), solver);
    let loss = loss(system);
    let adjoint = gradient(&run, &loss).expect("adjoint gradient");
    let forward = jacobian(&run, Method::ForwardOnStateSteps)
        .expect("forward Jacobian")
        .loss_gradient(&loss)
        .expect("contracted");
    for (a, f) in adjoint.concatenated().iter().zip(forward.concatenated()) {
        assert!(
            (a - f).abs() <= 1e-9 * (1.0 + f.abs()),
            "adjoint {a} vs forward {f}"
        );
    }
}

fn bench(c: &mut Criterion) {
    let system = thermostat::system();
    let loss = loss(&system);
    let mut group = c.benchmark_group("long_runs");
    group
        .sample_size(10)
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(4));
    for (name, solver) in methods() {
        check(&system, solver.clone());
        for t_end in LENGTHS {
            let primal = problem(&system, t_end, EventRecording::None, solver.clone());
            let run = simulate(&primal).expect("the thermostat runs");
            let events = run.stats.events;
            eprintln!(
                "{name}, t_end = {t_end}: {events} events, {} steps",
                run.stats.steps
            );
            group.throughput(Throughput::Elements(events as u64));
            let id = |figure: &str| BenchmarkId::new(format!("{figure}/{name}"), events);
            group.bench_with_input(id("primal"), &primal, |b, p| {
                b.iter(|| black_box(simulate(p).unwrap()))
            });
            group.bench_with_input(id("forward"), &primal, |b, p| {
                b.iter(|| black_box(jacobian(p, Method::Forward).unwrap()))
            });
            let last_ten = problem(&system, t_end, EventRecording::Last(10), solver.clone());
            group.bench_with_input(id("adjoint_loss"), &last_ten, |b, p| {
                b.iter(|| black_box(gradient(p, &loss).unwrap()))
            });
        }
    }
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
