//! `ball2d_flat_a` written as equations (crates/ia-equations/tests/data/
//! ball2d-flat.json, partials by dual numbers through the compiled
//! expressions) against the ready model (hand-written partials and
//! sensitivity products), in one criterion group: primal, forward Jacobian,
//! adjoint gradient.
//!
//! ```text
//! cargo bench -p ia-benches --bench equations
//! ```
//!
//! Before timing, the setup checks that both give the same Jacobian and
//! gradient (1e-12 relative), so a benchmark never times a wrong answer.

use criterion::{criterion_group, criterion_main, Criterion};
use ia_adjoint::{gradient, jacobian, FinalComponent, Method};
use ia_benches::ball2d;
use ia_equations::EquationModel;
use ia_models::Model;
use std::hint::black_box;
use std::time::Duration;

const BALL2D_FLAT: &str = include_str!("../../crates/ia-equations/tests/data/ball2d-flat.json");

fn check(ready: &ia_core::HybridSystem, equations: &ia_core::HybridSystem) {
    let a = jacobian(&ball2d::problem(ready), Method::Forward).expect("ready Jacobian");
    let b = jacobian(&ball2d::problem(equations), Method::Forward).expect("equations Jacobian");
    for (x, y) in a.final_jacobian.iter().zip(b.final_jacobian.iter()) {
        assert!((x - y).abs() <= 1e-12 * x.abs().max(1.0), "{x} vs {y}");
    }
    let a = gradient(&ball2d::problem(ready), &FinalComponent(0)).expect("ready gradient");
    let b = gradient(&ball2d::problem(equations), &FinalComponent(0)).expect("equations gradient");
    for (x, y) in a.concatenated().iter().zip(b.concatenated()) {
        assert!((x - y).abs() <= 1e-12 * x.abs().max(1.0), "{x} vs {y}");
    }
}

fn bench(c: &mut Criterion) {
    let ready = ball2d::system();
    let equations = EquationModel::from_json_str(BALL2D_FLAT)
        .expect("the equation form of ball2d-flat")
        .system();
    check(&ready, &equations);
    let mut group = c.benchmark_group("equations");
    for (name, system) in [("ready", &ready), ("equations", &equations)] {
        group.bench_function(format!("{name}/primal"), |b| {
            b.iter(|| {
                let problem = ball2d::problem(black_box(system));
                ia_events::simulate(&problem).unwrap().final_state[0]
            })
        });
        group.bench_function(format!("{name}/forward_jacobian"), |b| {
            b.iter(|| {
                let problem = ball2d::problem(black_box(system));
                jacobian(&problem, Method::Forward).unwrap().final_jacobian[(0, 0)]
            })
        });
        group.bench_function(format!("{name}/adjoint_gradient"), |b| {
            b.iter(|| {
                let problem = ball2d::problem(black_box(system));
                gradient(&problem, &FinalComponent(0)).unwrap().params[0]
            })
        });
    }
    group.finish();
}

criterion_group! {
    name = benches;
    config = Criterion::default()
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(2))
        .sample_size(40);
    targets = bench
}
criterion_main!(benches);
