//! Stiff flows through events (issue 28), two criterion groups:
//!
//! * `stiff_rod`: the heated rod of N cells (`ia_verify::references::stiff::heated_rod`:
//!   diffusion between neighbouring cells, a heater at cell 0 switched by a
//!   thermostat at the last cell) run by Kvaerno 5(4) at N = 250, 1,000 and
//!   4,000. The equation model declares its tridiagonal Jacobian, so the
//!   iteration matrix is factorised sparsely (faer) and the Jacobian is
//!   evaluated by three dual-number sweeps: the cost per step is linear in N
//!   (target: time at N = 4,000 at most 5 times that at N = 1,000).
//! * `stiff_vs_dopri5`: the stability-limited problems (the drug model with
//!   redosing, the relay with hysteresis, the same relay with its fast pole
//!   at -1e5, the slowly switching relay `relay_slow.json`, the heated rod
//!   of 100 cells)
//!   run by Kvaerno 5(4) and by DOPRI5 at the same tolerance, 1e-6 and
//!   1e-8 (target: the implicit method at least 20 times faster).
//! * `stiff_drug_derivatives`: the drug model by Kvaerno 5(4) at 1e-8: the
//!   primal run, the adjoint gradient of central(T), the forward Jacobian.
//!
//! ```text
//! cargo bench -p ia-benches --bench stiff
//! ```
//!
//! Before timing, the setup runs each case once and checks that it fires
//! the thermostat's (or the problem's) events and that both methods end at
//! the same state within their tolerance, so a benchmark never times a
//! wrong answer; it prints the steps each takes.

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion};
use ia_adjoint::{
    gradient, jacobian, record_in, AdjointOptions, FinalComponent, Method, Workspace,
};
use ia_core::HybridSystem;
use ia_equations::EquationModel;
use ia_events::{simulate, Problem, SolverChoice};
use ia_models::Model;
use ia_verify::references::stiff::heated_rod;
use std::hint::black_box;
use std::time::Duration;

const DRUG: &str = include_str!("../../crates/ia-verify/references/stiff/drug.json");
const RELAY: &str = include_str!("../../crates/ia-verify/references/stiff/relay.json");
const RELAY_SLOW: &str = include_str!("../../crates/ia-verify/references/stiff/relay_slow.json");

/// The tolerance (relative and absolute) of the rod's runs.
const TOL: f64 = 1e-6;

/// The tolerances of `stiff_vs_dopri5` (both methods at each).
const AGAINST_DOPRI5_TOLS: [f64; 2] = [1e-6, 1e-8];

/// The rod's lengths timed by `stiff_rod`.
const ROD_CELLS: [usize; 3] = [250, 1_000, 4_000];

/// The rod's length in `stiff_vs_dopri5`.
const ROD_AGAINST_DOPRI5: usize = 100;

fn kvaerno5(tol: f64) -> (&'static str, SolverChoice) {
    (
        "kvaerno5",
        SolverChoice::Kvaerno5 {
            rtol: tol,
            atol: tol,
            max_step: None,
        },
    )
}

fn dopri5(tol: f64) -> (&'static str, SolverChoice) {
    ("dopri5", SolverChoice::dopri5(tol))
}

/// A model's system with its run: initial state and mode, parameters,
/// end (read from the model once, outside the timed loop).
struct Case {
    name: String,
    system: HybridSystem,
    state: Vec<f64>,
    params: Vec<f64>,
    mode: String,
    t_end: f64,
}

impl Case {
    fn new(name: impl Into<String>, model: EquationModel) -> Self {
        let spec = model.spec();
        Self {
            name: name.into(),
            system: model.system(),
            state: spec.default_state(),
            params: spec.default_params(),
            mode: spec.initial_mode,
            t_end: spec.t_end,
        }
    }

    /// The case with parameter `name` set to `value`.
    fn with_param(mut self, name: &str, value: f64) -> Self {
        let k = self
            .system
            .param_names()
            .iter()
            .position(|p| p == name)
            .expect("a parameter of the model");
        self.params[k] = value;
        self.name = format!("{}_{name}={value:e}", self.name);
        self
    }

    fn rod(cells: usize) -> Self {
        let model = EquationModel::from_value(&heated_rod(cells)).expect("the heated rod");
        Self::new(format!("heated_rod_{cells}"), model)
    }

    fn problem(&self, solver: SolverChoice) -> Problem<'_> {
        Problem::new(
            &self.system,
            self.state.clone(),
            self.params.clone(),
            self.t_end,
        )
        .with_mode(&self.mode)
        .expect("the initial mode")
        .with_solver(solver)
    }

    /// Runs once: the steps taken and the final state, after checking that
    /// the run fired events.
    fn check(&self, (label, solver): (&str, SolverChoice)) -> (usize, Vec<f64>) {
        let run = simulate(&self.problem(solver)).expect("the run");
        assert!(!run.events.is_empty(), "{}: no event fired", self.name);
        println!(
            "{} {label}: {} steps, {} events",
            self.name,
            run.stats.steps,
            run.events.len()
        );
        (run.stats.steps, run.final_state)
    }
}

fn rod(c: &mut Criterion) {
    let mut group = c.benchmark_group("stiff_rod");
    group
        .sample_size(10)
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(10));
    for cells in ROD_CELLS {
        let case = Case::rod(cells);
        case.check(kvaerno5(TOL));
        group.bench_with_input(BenchmarkId::new("kvaerno5", cells), &case, |b, case| {
            b.iter(|| {
                let problem = case.problem(kvaerno5(TOL).1);
                simulate(black_box(&problem)).unwrap().final_state[0]
            })
        });
    }
    group.finish();
}

fn against_dopri5(c: &mut Criterion) {
    let cases = [
        Case::new(
            "drug",
            EquationModel::from_json_str(DRUG).expect("the drug model"),
        ),
        Case::new(
            "relay",
            EquationModel::from_json_str(RELAY).expect("the relay"),
        ),
        // The relay with its fast pole at -1e5 instead of -1e3: DOPRI5's
        // steps are then held by stability a hundred times shorter, the
        // implicit method's by the switches' transients hardly more.
        Case::new(
            "relay",
            EquationModel::from_json_str(RELAY).expect("the relay"),
        )
        .with_param("lam", 1e5),
        // The relay switching about every four slow time constants, its input
        // into the slow state (poles -1 and -1e3 kept): DOPRI5's steps are
        // held by stability over the long slow arcs, the implicit
        // method's set by the slow arc's accuracy and a short transient
        // after each switch.
        Case::new(
            "relay_slow",
            EquationModel::from_json_str(RELAY_SLOW).expect("the slow relay"),
        ),
        Case::rod(ROD_AGAINST_DOPRI5),
    ];
    let mut group = c.benchmark_group("stiff_vs_dopri5");
    group
        .sample_size(10)
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(5));
    for (case, tol) in cases
        .iter()
        .flat_map(|case| AGAINST_DOPRI5_TOLS.map(|tol| (case, tol)))
    {
        let (_, implicit) = case.check(kvaerno5(tol));
        let (_, explicit) = case.check(dopri5(tol));
        let scale = explicit.iter().fold(1.0f64, |m, v| m.max(v.abs()));
        for (a, b) in implicit.iter().zip(&explicit) {
            assert!(
                (a - b).abs() <= 1e3 * tol * scale,
                "{}: final states {a} and {b}",
                case.name
            );
        }
        for (label, solver) in [kvaerno5(tol), dopri5(tol)] {
            group.bench_with_input(
                BenchmarkId::new(format!("{label}@{tol:e}"), &case.name),
                case,
                |b, case| {
                    b.iter(|| {
                        let problem = case.problem(solver.clone());
                        simulate(black_box(&problem)).unwrap().final_state[0]
                    })
                },
            );
        }
    }
    group.finish();
}

/// The drug model's derivatives at the tolerance of issue 28's targets:
/// the primal run, the adjoint gradient of central(T) and the forward
/// Jacobian, by Kvaerno 5(4), and the adjoint's taped run alone (it carries
/// one derivative probe: the backward pass is the adjoint less it).
fn drug_derivatives(c: &mut Criterion) {
    let case = Case::new(
        "drug",
        EquationModel::from_json_str(DRUG).expect("the drug model"),
    );
    let (_, solver) = kvaerno5(DRUG_DERIVATIVES_TOL);
    case.check(kvaerno5(DRUG_DERIVATIVES_TOL));
    let central = FinalComponent(1);
    let mut group = c.benchmark_group("stiff_drug_derivatives");
    group
        .sample_size(20)
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(5));
    group.bench_function("kvaerno5@1e-8/primal", |b| {
        b.iter(|| {
            let problem = case.problem(solver.clone());
            simulate(black_box(&problem)).unwrap().final_state[0]
        })
    });
    group.bench_function("kvaerno5@1e-8/adjoint_gradient", |b| {
        b.iter(|| {
            let problem = case.problem(solver.clone());
            gradient(black_box(&problem), &central).unwrap().params[0]
        })
    });
    // The adjoint's taped run alone (with its derivative probe): the
    // backward pass is the adjoint's time less this.
    let mut workspace = Workspace::new();
    group.bench_function("kvaerno5@1e-8/taped_run", |b| {
        b.iter(|| {
            let problem = case.problem(solver.clone());
            let taped = record_in(
                black_box(&problem),
                &AdjointOptions::default(),
                &mut workspace,
            )
            .unwrap();
            let value = taped.trajectory().final_state[0];
            taped.release(&mut workspace);
            value
        })
    });
    group.bench_function("kvaerno5@1e-8/forward_jacobian", |b| {
        b.iter(|| {
            let problem = case.problem(solver.clone());
            jacobian(black_box(&problem), Method::Forward)
                .unwrap()
                .final_jacobian[0]
        })
    });
    group.finish();
}

/// The tolerance of `stiff_drug_derivatives` (issue 28's targets).
const DRUG_DERIVATIVES_TOL: f64 = 1e-8;

criterion_group!(benches, rod, against_dopri5, drug_derivatives);
criterion_main!(benches);
