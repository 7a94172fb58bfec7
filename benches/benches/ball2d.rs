//! `ball2d_flat_a` at `rtol = atol = 1e-10`: the primal solve, the full
//! forward Jacobian (also in a kept workspace) and the adjoint gradient of
//! `x(T)`, and (with the
//! `peers` feature) the same three through diffsol, in one criterion group.
//!
//! ```text
//! cargo bench -p ia-benches --bench ball2d                   # ours
//! cargo bench -p ia-benches --features peers --bench ball2d  # ours and diffsol
//! ```
//!
//! Before timing, the setup checks every gradient against the closed form
//! (and diffsol's against ours), so a benchmark never times a wrong answer.

use criterion::{criterion_group, criterion_main, Criterion};
use ia_adjoint::{gradient, jacobian, FinalComponent, Method};
use ia_benches::ball2d;
use std::hint::black_box;
use std::time::Duration;

fn check_ours() {
    let system = ball2d::system();
    let problem = ball2d::problem(&system);
    let grad = gradient(&problem, &FinalComponent(0)).expect("adjoint gradient");
    let sens = jacobian(&problem, Method::Forward).expect("forward Jacobian");
    assert_eq!(grad.trajectory.events.len(), 3, "three impacts");
    assert!((grad.value - ball2d::CLOSED_FORM_X_T).abs() < 1e-8);
    for (j, reference) in ball2d::CLOSED_FORM_GRAD_X_T.iter().enumerate() {
        let adjoint = grad.concatenated()[j];
        let forward = sens.final_jacobian[(0, j)];
        assert!(
            (adjoint - reference).abs() < 1e-7,
            "adjoint {j}: {adjoint} vs {reference}"
        );
        assert!(
            (forward - reference).abs() < 1e-7,
            "forward {j}: {forward} vs {reference}"
        );
    }
    let stats = &grad.trajectory.stats;
    eprintln!(
        "ours: {} steps, {} rejected, {} rhs evaluations, {} root iterations, {} events; forward pass: {} steps",
        stats.steps,
        stats.rejected_steps,
        stats.rhs_evaluations,
        stats.root_iterations,
        stats.events,
        sens.trajectory.stats.steps,
    );
}

#[cfg(feature = "peers")]
fn check_diffsol() {
    use ia_benches::peer_diffsol;
    let system = ball2d::system();
    let problem = ball2d::problem(&system);
    let ours = gradient(&problem, &FinalComponent(0))
        .expect("adjoint gradient")
        .concatenated();
    let x_t = peer_diffsol::primal()[0];
    assert!(
        (x_t - ball2d::CLOSED_FORM_X_T).abs() < 1e-8,
        "diffsol x(T) = {x_t}"
    );
    let forward = peer_diffsol::to_our_order(&peer_diffsol::forward_jacobian()[0]);
    let adjoint = peer_diffsol::to_our_order(&peer_diffsol::adjoint_gradient());
    for j in 0..7 {
        let reference = ball2d::CLOSED_FORM_GRAD_X_T[j];
        eprintln!(
            "d x(T) / d theta_{j}: closed form {reference:.15}, ours {:.15}, diffsol forward {:.15}, diffsol adjoint {:.15}",
            ours[j], forward[j], adjoint[j]
        );
        assert!((forward[j] - ours[j]).abs() < 1e-6, "diffsol forward {j}");
        assert!((adjoint[j] - ours[j]).abs() < 1e-6, "diffsol adjoint {j}");
    }
}

fn bench(c: &mut Criterion) {
    check_ours();
    #[cfg(feature = "peers")]
    check_diffsol();

    let system = ball2d::system();
    let mut group = c.benchmark_group("ball2d_flat_a");
    group.bench_function("ours/primal", |b| {
        b.iter(|| {
            let problem = ball2d::problem(black_box(&system));
            ia_events::simulate(&problem).unwrap().final_state[0]
        })
    });
    group.bench_function("ours/forward_jacobian", |b| {
        b.iter(|| {
            let problem = ball2d::problem(black_box(&system));
            jacobian(&problem, Method::Forward).unwrap().final_jacobian[(0, 0)]
        })
    });
    // The same Jacobian in a kept workspace, each result given back: no
    // allocation per call (benches/tests/allocations.rs).
    let mut workspace = ia_adjoint::Workspace::new();
    group.bench_function("ours/forward_jacobian_in_workspace", |b| {
        b.iter(|| {
            let problem = ball2d::problem(black_box(&system));
            let sens = ia_adjoint::jacobian_in(&problem, Method::Forward, &mut workspace).unwrap();
            let d = sens.final_jacobian[(0, 0)];
            workspace.recycle(sens);
            d
        })
    });
    group.bench_function("ours/forward_jacobian_on_state_steps", |b| {
        b.iter(|| {
            let problem = ball2d::problem(black_box(&system));
            jacobian(&problem, Method::ForwardOnStateSteps)
                .unwrap()
                .final_jacobian[(0, 0)]
        })
    });
    group.bench_function("ours/adjoint_gradient", |b| {
        b.iter(|| {
            let problem = ball2d::problem(black_box(&system));
            gradient(&problem, &FinalComponent(0)).unwrap().params[0]
        })
    });
    #[cfg(feature = "peers")]
    {
        use ia_benches::peer_diffsol;
        group.bench_function("diffsol/primal", |b| b.iter(peer_diffsol::primal));
        group.bench_function("diffsol/forward_jacobian", |b| {
            b.iter(peer_diffsol::forward_jacobian)
        });
        group.bench_function("diffsol/adjoint_gradient", |b| {
            b.iter(peer_diffsol::adjoint_gradient)
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
