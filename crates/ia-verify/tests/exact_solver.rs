//! The exact event-driven solver (`ia_events::exact`) against two
//! independent references:
//!
//! * the `lif-network`'s closed form ([`ia_verify::closed_form::lif_network`]:
//!   spike times as logarithms, neuron by neuron, with the integrator's
//!   cascade rule): the same spikes, the times and final potentials to
//!   rounding (`1e-12`);
//! * the Runge-Kutta integrator (`ia_events::simulate`, DOPRI5 at
//!   `rtol = atol = 1e-12`): the same events (transition, cascade root) and
//!   times, states and observations within `1e-8`.

use ia_adjoint::{
    gradient, gradient_forward, gradient_with, jacobian, AdjointOptions, LossTerms, Method, Term,
};
use ia_events::{exact, simulate, EventOptions, EventRecording, Problem, SolverChoice};
use ia_models::{LifNetwork, Model};
use ia_verify::closed_form::{lif_network, network_case};
use rstest::rstest;

fn close(a: f64, b: f64, tol: f64) -> bool {
    (a - b).abs() <= tol * (1.0 + b.abs())
}

/// Same events (transitions, cascade roots, times within `tol`), final
/// state and observations as the stepped run.
fn assert_same_run(exact: &ia_core::Trajectory, stepped: &ia_core::Trajectory, tol: f64) {
    assert_eq!(exact.events.len(), stepped.events.len(), "event count");
    for (k, (a, b)) in exact.events.iter().zip(&stepped.events).enumerate() {
        assert_eq!(
            (a.index, a.transition, a.cascade_of, a.from_mode, a.to_mode),
            (b.index, b.transition, b.cascade_of, b.from_mode, b.to_mode),
            "event {k}"
        );
        assert!(
            close(a.time, b.time, tol),
            "event {k}: {} vs {}",
            a.time,
            b.time
        );
        assert!(
            close(a.guard_rate, b.guard_rate, 1e-6),
            "event {k} guard rate"
        );
        for (x, y) in exact.state_after(k).iter().zip(stepped.state_after(k)) {
            assert!(close(*x, *y, tol), "event {k}: state after {x} vs {y}");
        }
    }
    assert_eq!(exact.final_mode, stepped.final_mode);
    assert_eq!(exact.final_time, stepped.final_time);
    for (x, y) in exact.final_state.iter().zip(&stepped.final_state) {
        assert!(close(*x, *y, tol), "final state {x} vs {y}");
    }
    assert_eq!(exact.observations.len(), stepped.observations.len());
    for (a, b) in exact.observations.iter().zip(&stepped.observations) {
        assert_eq!((a.time, a.mode), (b.time, b.mode));
        for (x, y) in a.state.iter().zip(&b.state) {
            assert!(close(*x, *y, tol), "observation at {}: {x} vs {y}", a.time);
        }
    }
    assert_eq!(exact.stats.events, stepped.stats.events);
    assert_eq!(exact.stats.steps, 0, "the exact solver takes no steps");
}

/// A forward Jacobian through the exact solver (`exact`: no steps) within
/// `tol` of the stepped one, final state and event times.
fn assert_same_jacobians(
    exact: &ia_adjoint::Sensitivities,
    stepped: &ia_adjoint::Sensitivities,
    tol: f64,
    what: &str,
) {
    assert_eq!(
        exact.trajectory.stats.steps, 0,
        "{what}: run by the exact solver"
    );
    assert_eq!(
        exact.event_time_gradients.shape(),
        stepped.event_time_gradients.shape()
    );
    let finals = exact
        .final_jacobian
        .iter()
        .zip(stepped.final_jacobian.iter());
    let times = (exact.event_time_gradients.iter()).zip(stepped.event_time_gradients.iter());
    for (x, y) in finals.chain(times) {
        assert!(close(*x, *y, tol), "{what}: exact {x}, dopri5 {y}");
    }
}

/// Reference: the closed form, and the stepped run. The cases of
/// `network_cases`: a kick into a cascade, an excitatory network with
/// cascades, the default networks of 3, 10 and 12 neurons.
#[rstest]
#[case::kicked_into_a_cascade("kicked", 1)]
#[case::excitatory_cascades("excitatory", 3)]
#[case::default_three("default3", 0)]
#[case::default_all_to_all_ten("default10", 0)]
#[case::default_sparse_twelve("default12", 0)]
fn networks_match_their_closed_form(#[case] name: &str, #[case] min_cascades: usize) {
    let case = network_case(name).unwrap();
    let (net, x0, p, t_end) = (case.net, case.initial_state, case.params, case.t_end);
    let reference = lif_network(&net, &x0, &p, t_end, 10_000).unwrap();
    let system = net.system();
    let problem = Problem::new(&system, x0, p, t_end)
        .with_solver(SolverChoice::dopri5(1e-12))
        .with_observations(vec![t_end / 3.0, t_end / 2.0]);
    let run = exact::simulate(&problem).unwrap();
    assert_eq!(run.events.len(), reference.event_times.len(), "spike count");
    let cascades = run.events.iter().filter(|e| e.cascade_of.is_some()).count();
    assert!(cascades >= min_cascades, "{cascades} cascade spikes");
    for (k, (e, &t)) in run.events.iter().zip(&reference.event_times).enumerate() {
        assert!(close(e.time, t, 1e-12), "spike {k}: {} vs {t}", e.time);
    }
    for (x, y) in run.final_state.iter().zip(&reference.final_state) {
        assert!(close(*x, *y, 1e-12), "final potential {x} vs {y}");
    }
    assert_same_run(&run, &simulate(&problem).unwrap(), 1e-8);
}

/// Reference: the closed form's derivatives (dual numbers through the spike
/// sequence). Forward sensitivities and the adjoint through the exact
/// solver, every initial potential and parameter, all five networks: every
/// final potential's and spike time's derivative to `1e-10` (scaled by the
/// larger of the value and `1e-3`).
#[rstest]
fn sensitivities_match_the_closed_form(
    #[values("kicked", "excitatory", "default3", "default10", "default12")] name: &str,
    #[values(Method::Forward, Method::Adjoint)] method: Method,
) {
    let case = network_case(name).unwrap();
    let (net, x0, p, t_end) = (case.net, case.initial_state, case.params, case.t_end);
    let reference = lif_network(&net, &x0, &p, t_end, 10_000).unwrap();
    let system = net.system();
    let problem = Problem::new(&system, x0, p, t_end).with_solver(SolverChoice::Exact);
    let sens = jacobian(&problem, method).unwrap();
    assert_eq!(sens.trajectory.stats.steps, 0, "run by the exact solver");
    assert_eq!(*sens.wrt, reference.wrt[..]);
    let (mut worst, mut nonzero) = (0.0f64, 0);
    let mut check = |got: f64, want: f64, what: &dyn Fn() -> String| {
        let error = (got - want).abs() / want.abs().max(1e-3);
        worst = worst.max(error);
        nonzero += usize::from(want.abs() > 1e-6);
        assert!(error <= 1e-10, "{}: {got} vs closed form {want}", what());
    };
    for (i, row) in reference.jacobian.iter().enumerate() {
        for (j, &want) in row.iter().enumerate() {
            let what = || format!("d V{i}(T) / d {}", reference.wrt[j]);
            check(sens.final_jacobian[(i, j)], want, &what);
        }
    }
    assert_eq!(
        sens.event_time_gradients.nrows(),
        reference.event_time_jacobian.len()
    );
    for (k, row) in reference.event_time_jacobian.iter().enumerate() {
        for (j, &want) in row.iter().enumerate() {
            let what = || format!("d t{k} / d {}", reference.wrt[j]);
            check(sens.event_time_gradients[(k, j)], want, &what);
        }
    }
    assert!(nonzero > 10, "only {nonzero} nonzero derivatives");
    eprintln!(
        "{name} {method:?}: worst scaled error {worst:.1e} over {nonzero} nonzero derivatives"
    );
}

/// Reference: DOPRI5 at 1e-12 (the run; forward sensitivities on its
/// steps, an independent discretisation of the same derivatives). The
/// thermostat switching about 120 times (two modes, falling and rising
/// thresholds that depend on parameters, so `g_p` enters each switch), a
/// single neuron, and the default sparse network of 100 neurons: the same
/// events, states and observations within 1e-8; the forward Jacobian
/// within 1e-7 (every column; ten chosen ones of the network). Through the
/// exact solver, the other mode: the adjoint's Jacobian equals the forward
/// one within 1e-10, and the one-pass adjoint gradient of a loss reading a
/// final entry, the last event time and an observed entry equals the
/// forward Jacobian contracted with the same weights within 1e-10, and
/// with checkpointing (two kept states) equals the full tape to the bit.
#[rstest]
#[case::thermostat("thermostat", None, 200.0)]
#[case::one_neuron("lif", None, 0.5)]
#[case::network_of_100("lif-network", Some(100), 0.05)]
fn runs_and_sensitivities_match_the_stepped_ones(
    #[case] name: &str,
    #[case] size: Option<usize>,
    #[case] t_end: f64,
) {
    use ia_adjoint::jacobian_wrt;
    let model = ia_models::sized(name, size.map(ia_models::Size::Count)).unwrap();
    let (system, spec) = (model.system(), model.spec());
    let problem = |solver| {
        Problem::new(&system, spec.default_state(), spec.default_params(), t_end)
            .with_mode(&spec.initial_mode)
            .unwrap()
            .with_solver(solver)
            .with_observations(vec![t_end / 7.0, t_end / 2.0])
    };
    let (exact, stepped) = (
        problem(SolverChoice::Exact),
        problem(SolverChoice::dopri5(1e-12)),
    );
    let run = simulate(&exact).unwrap();
    assert!(run.events.len() >= 20, "{} events", run.events.len());
    assert_same_run(&run, &simulate(&stepped).unwrap(), 1e-8);
    let wrt = system.wrt_names();
    let chosen: Vec<&str> = if size.is_some() {
        wrt.iter()
            .step_by(wrt.len() / 10)
            .map(String::as_str)
            .collect()
    } else {
        wrt.iter().map(String::as_str).collect()
    };
    let a = jacobian_wrt(&exact, Method::Forward, &chosen).unwrap();
    let b = jacobian_wrt(&stepped, Method::Forward, &chosen).unwrap();
    assert_same_jacobians(&a, &b, 1e-7, name);
    let forward = jacobian(&exact, Method::Forward).unwrap();
    let adjoint = jacobian(&exact, Method::Adjoint).unwrap();
    assert_same_jacobians(&adjoint, &forward, 1e-10, name);
    let state = &system.state_names()[0];
    let loss = LossTerms::new(
        vec![
            term(&format!("final.{state}"), 1.0, None),
            term("event.-1.time", 0.5, None),
            term(&format!("observation.1.{state}"), 2.0, Some(0.25)),
        ],
        &system,
    )
    .unwrap();
    let one_pass = gradient(&exact, &loss).unwrap();
    assert_eq!(one_pass.trajectory.stats.steps, 0);
    let contracted = gradient_forward(&exact, &loss, Method::Forward).unwrap();
    assert!(close(one_pass.value, contracted.value, 1e-14));
    for (x, y) in one_pass
        .concatenated()
        .iter()
        .zip(contracted.concatenated())
    {
        assert!(close(*x, y, 1e-10), "{name}: adjoint {x}, forward {y}");
    }
    let options = AdjointOptions {
        checkpoints: Some(2),
    };
    let checkpointed = gradient_with(&exact, &loss, &options).unwrap();
    assert!(checkpointed.tape_floats < one_pass.tape_floats);
    assert_eq!(checkpointed.concatenated(), one_pass.concatenated());
}

fn term(of: &str, weight: f64, target: Option<f64>) -> Term {
    Term {
        of: of.into(),
        weight,
        target,
    }
}

/// Reference: the same run recording every event. Keeping the last two, or
/// none, changes the record only.
#[test]
fn recordings_keep_the_last_events_of_the_same_run() {
    let net = LifNetwork::new(12).unwrap();
    let (system, spec) = (net.system(), net.spec());
    let problem = |record| {
        Problem::new(
            &system,
            spec.default_state(),
            spec.default_params(),
            spec.t_end,
        )
        .with_event_options(EventOptions {
            record,
            ..EventOptions::default()
        })
    };
    let all = exact::simulate(&problem(EventRecording::All)).unwrap();
    for (record, kept) in [(EventRecording::Last(2), 2), (EventRecording::None, 0)] {
        let lean = exact::simulate(&problem(record)).unwrap();
        assert_eq!(lean.final_state, all.final_state);
        assert_eq!(lean.stats, all.stats);
        assert_eq!(lean.events[..], all.events[all.events.len() - kept..]);
        let n = all.initial_state.len();
        assert_eq!(
            lean.event_states[..],
            all.event_states[all.event_states.len() - 2 * n * kept..]
        );
    }
}

/// The limits of the stepped integrator hold here too: `max_events` ends
/// the run as Zeno, and a system the solver cannot step exactly is refused
/// with the part it lacks named.
#[test]
fn limits_and_refusals() {
    let net = LifNetwork::new(10).unwrap();
    let (system, spec) = (net.system(), net.spec());
    let limited = Problem::new(
        &system,
        spec.default_state(),
        spec.default_params(),
        spec.t_end,
    )
    .with_event_options(EventOptions {
        max_events: 5,
        ..EventOptions::default()
    });
    for err in [exact::simulate(&limited), simulate(&limited)].map(Result::unwrap_err) {
        assert_eq!(err.kind(), "zeno");
        assert!(
            err.to_string()
                .contains("more than max_events = 5 events; 6 events were applied"),
            "{err}"
        );
    }
    for name in ["ball2d-flat", "particle-chain", "slip-hopper"] {
        let model = ia_models::by_name(name).unwrap();
        let (system, spec) = (model.system(), model.spec());
        let problem = Problem::new(&system, spec.default_state(), spec.default_params(), 1.0);
        let err = exact::simulate(&problem).unwrap_err();
        assert_eq!(err.kind(), "unsupported", "{name}: {err}");
        assert!(err.to_string().contains("Runge-Kutta"), "{name}: {err}");
    }
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(48))]

    /// Reference: the closed form. Random networks of four neurons,
    /// all-to-all, with drives above threshold, weights from inhibitory to
    /// strongly excitatory (cascades) and random starting potentials: the
    /// same spike count, spike times and final potentials to rounding.
    /// A draw the closed form rejects (two neurons reaching threshold at
    /// the same instant: grazing) is set aside.
    #[test]
    fn random_networks_match_their_closed_form(
        drives in proptest::collection::vec(1.05f64..1.6, 4),
        weights in proptest::collection::vec(-0.1f64..0.3, 12),
        start in proptest::collection::vec(0.0f64..0.95, 4),
    ) {
        let net = LifNetwork::new(4).unwrap();
        let spec = net.spec();
        let mut p = spec.default_params();
        p[..4].copy_from_slice(&drives);
        p[7..].copy_from_slice(&weights);
        let t_end = 0.05;
        let Ok(reference) = lif_network(&net, &start, &p, t_end, 2_000) else {
            return Ok(());
        };
        let system = net.system();
        let problem = Problem::new(&system, start.clone(), p, t_end).with_event_options(EventOptions {
            max_events: 2_000,
            ..EventOptions::default()
        });
        let run = exact::simulate(&problem).unwrap();
        proptest::prop_assert_eq!(run.events.len(), reference.event_times.len());
        for (e, &t) in run.events.iter().zip(&reference.event_times) {
            proptest::prop_assert!(close(e.time, t, 1e-12), "{} vs {}", e.time, t);
        }
        for (x, y) in run.final_state.iter().zip(&reference.final_state) {
            proptest::prop_assert!(close(*x, *y, 1e-11), "{} vs {}", x, y);
        }
    }
}

/// A user's flow that declares its structure but no Jacobian-vector
/// product: `x' = -k x + u`, fired when `x` rises through `c` and reset to
/// `r x` (parameters `k, u, c, r`).
fn relaxing_system() -> ia_core::HybridSystem {
    use ia_core::{
        Direction, Flow, FlowPartials, FromMode, Guard, GuardPartials, HybridSystem, Reset,
        ResetPartials, Threshold, ToMode,
    };
    struct Relax;
    impl Flow for Relax {
        fn rate(&self, _t: f64, x: &[f64], p: &[f64], dxdt: &mut [f64]) {
            dxdt[0] = -p[0] * x[0] + p[1];
        }
        fn partials(&self, _t: f64, x: &[f64], p: &[f64], out: &mut FlowPartials) {
            out.x[(0, 0)] = -p[0];
            out.p[(0, 0)] = -x[0];
            out.p[(0, 1)] = 1.0;
        }
        fn decoupled_linear(&self, p: &[f64], a: &mut [f64], b: &mut [f64]) -> bool {
            (a[0], b[0]) = (-p[0], p[1]);
            true
        }
    }
    struct Level;
    impl Guard for Level {
        fn direction(&self) -> Direction {
            Direction::Rising
        }
        fn value(&self, _t: f64, x: &[f64], p: &[f64]) -> f64 {
            x[0] - p[2]
        }
        fn partials(&self, _t: f64, _x: &[f64], _p: &[f64], out: &mut GuardPartials) {
            out.x[0] = 1.0;
            out.p[2] = -1.0;
        }
        fn threshold(&self, p: &[f64]) -> Option<Threshold> {
            Some(Threshold {
                state: 0,
                level: p[2],
            })
        }
    }
    struct Scale;
    impl Reset for Scale {
        fn apply(&self, _t: f64, x: &[f64], p: &[f64], x_after: &mut [f64]) {
            x_after[0] = p[3] * x[0];
        }
        fn partials(&self, _t: f64, x: &[f64], p: &[f64], out: &mut ResetPartials) {
            out.x[(0, 0)] = p[3];
            out.p[(0, 3)] = x[0];
        }
    }
    HybridSystem::builder(&["x"], &["k", "u", "c", "r"])
        .mode("on", Relax)
        .transition("fire", FromMode("on"), ToMode("on"), Level, Scale)
        .build()
        .unwrap()
}

/// The system of [`relaxing_system`]: the forward pass takes each
/// parameter's source from the dense partials, and the adjoint each
/// parameter's cotangent. References: forward sensitivities on DOPRI5's
/// steps at 1e-12, within 1e-7; for the adjoint, the exact forward pass
/// within 1e-10.
#[test]
fn a_flow_without_products_is_carried_through_its_partials() {
    let system = relaxing_system();
    let problem = |solver| {
        Problem::new(&system, vec![0.1], vec![3.0, 2.0, 0.5, 0.2], 5.0).with_solver(solver)
    };
    let exact = jacobian(&problem(SolverChoice::Exact), Method::Forward).unwrap();
    let stepped = jacobian(&problem(SolverChoice::dopri5(1e-12)), Method::Forward).unwrap();
    assert!(exact.trajectory.events.len() >= 10);
    assert_eq!(
        exact.trajectory.events.len(),
        stepped.trajectory.events.len()
    );
    assert_same_jacobians(&exact, &stepped, 1e-7, "a flow without products");
    // The adjoint takes each parameter's cotangent from the dense partials
    // too; reference: the forward pass through the exact solver.
    let adjoint = jacobian(&problem(SolverChoice::Exact), Method::Adjoint).unwrap();
    assert_same_jacobians(&adjoint, &exact, 1e-10, "the adjoint without products");
}

/// Reference: the integrator, which reads [`Problem::start_band`] the same
/// way. A start on the threshold (`x = c`) is refused by both without a
/// band; within a band, a start whose rate points away from the crossing
/// (`-k c + u < 0`) runs in both to the same state, and one whose rate
/// points into it is refused by both.
#[test]
fn a_start_within_the_band_takes_the_side_of_its_rate() {
    let system = relaxing_system();
    let problem = |u: f64, band: f64, solver| {
        Problem::new(&system, vec![0.5], vec![3.0, u, 0.5, 0.2], 2.0)
            .with_start_band(band)
            .with_solver(solver)
    };
    for solver in [SolverChoice::Exact, SolverChoice::dopri5(1e-12)] {
        let err = simulate(&problem(1.0, 0.0, solver.clone())).unwrap_err();
        assert_eq!(err.kind(), "guard_violated_at_start", "{solver:?}: {err}");
        let err = simulate(&problem(2.0, 1e-9, solver.clone())).unwrap_err();
        assert_eq!(err.kind(), "guard_violated_at_start", "{solver:?}: {err}");
    }
    let exact = simulate(&problem(1.0, 1e-9, SolverChoice::Exact)).unwrap();
    let stepped = simulate(&problem(1.0, 1e-9, SolverChoice::dopri5(1e-12))).unwrap();
    assert!(exact.events.is_empty());
    assert_same_run(&exact, &stepped, 1e-8);
}

/// Reference: the run's own event count. The progress hook is told every
/// `PROGRESS_EVERY_STEPS` events of the exact solver (it takes no steps):
/// twice over the thermostat's 10,009 switches, with the time reached
/// growing and the counts those of the run.
#[test]
fn the_progress_hook_is_told_every_few_thousand_events() {
    use ia_events::{Progress, PROGRESS_EVERY_STEPS};
    use std::sync::Mutex;
    let system = ia_models::by_name("thermostat").unwrap().system();
    let told = Mutex::new(Vec::new());
    let hook = |p: &Progress| told.lock().unwrap().push((p.events, p.time, p.fraction()));
    let spec = ia_models::by_name("thermostat").unwrap().spec();
    let problem = Problem::new(
        &system,
        spec.default_state(),
        spec.default_params(),
        16400.0,
    )
    .with_mode(&spec.initial_mode)
    .unwrap()
    .with_solver(SolverChoice::Exact)
    .with_event_options(EventOptions {
        max_events: 100_000,
        record: EventRecording::None,
        ..EventOptions::default()
    })
    .with_progress(&hook);
    let run = simulate(&problem).unwrap();
    let told = told.into_inner().unwrap();
    assert_eq!(
        told.len(),
        run.stats.events / PROGRESS_EVERY_STEPS,
        "{told:?}"
    );
    for (k, &(events, time, fraction)) in told.iter().enumerate() {
        assert!(events >= (k + 1) * PROGRESS_EVERY_STEPS && events < run.stats.events);
        assert!(time > 0.0 && time < 16400.0 && (0.0..1.0).contains(&fraction));
    }
    assert!(told.windows(2).all(|w| w[0].1 < w[1].1), "{told:?}");
}

/// Two relaxing entries with their own rates, `x' = -k1 x + u1` and
/// `y' = -k2 y + u2`, written once over dual numbers: `x` reaching `c` is
/// reset to 0; `y` reaching `c` is reset to 0 and kicks `x` by `w`
/// (parameters `k1, k2, u1, u2, c, w`).
fn two_rates() -> ia_core::HybridSystem {
    use ia_core::{
        Autodiff, Direction, FlowFn, FromMode, GuardFn, HybridSystem, ResetFn, Scalar, Threshold,
        ToMode,
    };
    struct Relax;
    impl FlowFn for Relax {
        fn rate<S: Scalar>(&self, _t: S, x: &[S], p: &[S], d: &mut [S]) {
            d[0] = -p[0] * x[0] + p[2];
            d[1] = -p[1] * x[1] + p[3];
        }
        fn decoupled_linear(&self, p: &[f64], a: &mut [f64], b: &mut [f64]) -> bool {
            a.copy_from_slice(&[-p[0], -p[1]]);
            b.copy_from_slice(&[p[2], p[3]]);
            true
        }
    }
    struct Reaches(usize);
    impl GuardFn for Reaches {
        fn direction(&self) -> Direction {
            Direction::Rising
        }
        fn value<S: Scalar>(&self, _t: S, x: &[S], p: &[S]) -> S {
            x[self.0] - p[4]
        }
        fn threshold(&self, p: &[f64]) -> Option<Threshold> {
            Some(Threshold {
                state: self.0,
                level: p[4],
            })
        }
    }
    struct Fire(usize);
    impl ResetFn for Fire {
        fn apply<S: Scalar>(&self, _t: S, x: &[S], p: &[S], a: &mut [S]) {
            a.copy_from_slice(x);
            a[self.0] = S::from(0.0);
            if self.0 == 1 {
                a[0] = x[0] + p[5];
            }
        }
    }
    HybridSystem::builder(&["x", "y"], &["k1", "k2", "u1", "u2", "c", "w"])
        .mode("on", Autodiff(Relax))
        .transition(
            "x_fires",
            FromMode("on"),
            ToMode("on"),
            Autodiff(Reaches(0)),
            Autodiff(Fire(0)),
        )
        .transition(
            "y_fires",
            FromMode("on"),
            ToMode("on"),
            Autodiff(Reaches(1)),
            Autodiff(Fire(1)),
        )
        .build()
        .unwrap()
}

/// References: DOPRI5 at 1e-12 for the run (1e-8) and the forward
/// Jacobian (1e-7); the forward pass through the exact solver for its
/// adjoint (1e-10, every row: final state and event times); the full tape
/// for the checkpointed adjoint (to the bit). Two entries with different
/// rates (each stretch's factors formed per rate) and a reset that couples
/// them, all partials by dual numbers.
#[test]
fn entries_with_their_own_rates_and_a_coupling_reset() {
    let system = two_rates();
    let problem = |solver| {
        Problem::new(
            &system,
            vec![0.1, 0.3],
            vec![3.0, 5.0, 2.0, 3.0, 0.5, 0.1],
            4.0,
        )
        .with_solver(solver)
    };
    let (exact, stepped) = (
        problem(SolverChoice::Exact),
        problem(SolverChoice::dopri5(1e-12)),
    );
    let run = simulate(&exact).unwrap();
    let fired = |name: usize| run.events.iter().filter(|e| e.transition == name).count();
    assert!(
        fired(0) >= 5 && fired(1) >= 5,
        "{} and {}",
        fired(0),
        fired(1)
    );
    assert_same_run(&run, &simulate(&stepped).unwrap(), 1e-8);
    let forward = jacobian(&exact, Method::Forward).unwrap();
    assert_same_jacobians(
        &forward,
        &jacobian(&stepped, Method::Forward).unwrap(),
        1e-7,
        "two rates",
    );
    let adjoint = jacobian(&exact, Method::Adjoint).unwrap();
    assert_same_jacobians(&adjoint, &forward, 1e-10, "two rates, adjoint");
    let loss = LossTerms::new(
        vec![term("final.x", 1.0, None), term("event.-1.time", 2.0, None)],
        &system,
    )
    .unwrap();
    let full = gradient(&exact, &loss).unwrap();
    let options = AdjointOptions {
        checkpoints: Some(2),
    };
    let checkpointed = gradient_with(&exact, &loss, &options).unwrap();
    assert!(checkpointed.tape_floats < full.tape_floats);
    assert_eq!(checkpointed.concatenated(), full.concatenated());
}
