//! The adjoint of a lazy taped run of the exact solver (each block kept at
//! its own time; the tape holds each event's touched blocks and the
//! backward pass transposes each block's stretches one at a time) against
//! three references: the eager adjoint (the same run keeping its event
//! states, so every block is brought to every event and every stretch is
//! transposed over the whole state), forward sensitivities (carried
//! through the same closed forms, checked against DOPRI5 in
//! `exact_pairs.rs`), and central finite differences of sixth order.

use crate::pair_net;

use ia_adjoint::{gradient, jacobian, LossSeeds, Method};
use ia_core::{HybridSystem, Trajectory};
use ia_events::{EventOptions, Problem, SolverChoice};
use ia_models::Model;
use rstest::rstest;

/// The options of a lazy run (no event states kept) or an eager one.
fn events(lazy: bool) -> EventOptions {
    EventOptions {
        event_states: !lazy,
        max_events: 10_000,
        ..EventOptions::default()
    }
}

/// A loss reading every part a gradient seeds: the final state (weighted
/// per entry), every event time and every observation.
fn loss(trajectory: &Trajectory, seeds: &mut LossSeeds) -> f64 {
    let mut value = 0.0;
    for (i, (s, x)) in seeds
        .final_state
        .iter_mut()
        .zip(&trajectory.final_state)
        .enumerate()
    {
        *s = 1.0 + 0.1 * i as f64;
        value += *s * x;
    }
    for (k, (s, e)) in seeds
        .event_times
        .iter_mut()
        .zip(&trajectory.events)
        .enumerate()
    {
        *s = 0.5 + 0.01 * k as f64;
        value += *s * e.time;
    }
    for (seed, observation) in seeds.observations.iter_mut().zip(&trajectory.observations) {
        for (i, (s, x)) in seed.iter_mut().zip(&observation.state).enumerate() {
            *s = 0.3 - 0.02 * i as f64;
            value += *s * x;
        }
    }
    value
}

/// `cuba-lif` `[2, 5, 2]` at time constants `(tau_mem, tau_syn)`, weights
/// scaled by `scale` (strong enough that neurons fire, some several
/// times), inputs at 1 and 3.5 ms, over 40 ms.
fn cuba(tau_mem: f64, tau_syn: f64, scale: f64) -> (HybridSystem, Vec<f64>, Vec<f64>) {
    let model = ia_models::CubaLif::new(2, 5, 2).unwrap();
    let (system, spec) = (model.system(), model.spec());
    let mut p = spec.default_params();
    let names = &spec.params;
    for (j, param) in names.iter().enumerate() {
        let name = param.name.as_str();
        let k = j as f64;
        p[j] = match name {
            "tau_mem" => tau_mem,
            "tau_syn" => tau_syn,
            "theta" => 1.0,
            "t_in0" => 1.0,
            "t_in1" => 3.5,
            _ if name.starts_with("w_h") => scale * (0.9 + 0.5 * (k * 0.7).sin()),
            _ if name.starts_with("w_o") => scale * (0.8 + 0.6 * (k * 1.3).cos()),
            _ => p[j],
        };
    }
    (system, spec.default_state(), p)
}

fn close(a: &[f64], b: &[f64], tol: f64, what: &str) {
    assert_eq!(a.len(), b.len(), "{what}");
    let scale = b.iter().fold(0.0f64, |m, v| m.max(v.abs())).max(1.0);
    for (k, (x, y)) in a.iter().zip(b).enumerate() {
        assert!(
            (x - y).abs() <= tol * scale,
            "{what} [{k}]: {x} vs {y} (scale {scale})"
        );
    }
}

/// Reference: the eager adjoint (every stretch transposed over the whole
/// state, the present pass) and forward sensitivities, on the same events;
/// the lazy tape is smaller.
#[rstest]
#[case::ratio_four(20.0, 5.0, 4.0, vec![])]
#[case::equal(10.0, 10.0, 3.0, vec![])]
#[case::nearly_equal(10.0, 10.0 * (1.0 + 1e-9), 3.0, vec![])]
#[case::observed(20.0, 5.0, 4.0, vec![2.0, 9.5, 21.0])]
#[case::strong(8.0, 2.0, 6.0, vec![12.0])]
fn the_lazy_adjoint_agrees_with_the_eager_one_and_the_forward_pass(
    #[case] tau_mem: f64,
    #[case] tau_syn: f64,
    #[case] scale: f64,
    #[case] observations: Vec<f64>,
) {
    let (system, x0, p) = cuba(tau_mem, tau_syn, scale);
    let problem = |lazy: bool| {
        Problem::new(&system, x0.clone(), p.clone(), 40.0)
            .with_solver(SolverChoice::Exact)
            .with_event_options(events(lazy))
            .with_observations(observations.clone())
    };
    let lazy = gradient(&problem(true), &loss).unwrap_or_else(|e| panic!("{e}"));
    let eager = gradient(&problem(false), &loss).unwrap_or_else(|e| panic!("{e}"));
    let spikes = lazy.trajectory.events.len();
    assert!(spikes > 2 + 5, "{spikes} events: the neurons fire");
    assert_eq!(spikes, eager.trajectory.events.len());
    assert!(
        lazy.tape_floats < eager.tape_floats,
        "{} vs {}",
        lazy.tape_floats,
        eager.tape_floats
    );
    close(
        &lazy.concatenated(),
        &eager.concatenated(),
        1e-10,
        "lazy vs eager adjoint",
    );
    // Forward sensitivities, whose rows the loss's seeds combine.
    let forward = jacobian(&problem(false), Method::Forward).unwrap_or_else(|e| panic!("{e}"));
    let by_forward = forward
        .loss_gradient(&loss)
        .unwrap_or_else(|e| panic!("{e}"));
    close(
        &lazy.concatenated(),
        &by_forward.concatenated(),
        1e-10,
        "lazy adjoint vs forward",
    );
}

/// Reference: the eager adjoint, on the test network with a clock entry
/// (a decoupled `x' = 1` beside the pairs, on which the inputs' guards
/// sit) and resets that declare what they read and write but have neither
/// product (formed from their dense partials), and guards that declare no
/// support.
#[rstest]
#[case::ratio_four(pair_net::NET, 20.0, 5.0, 4.0)]
#[case::equal(pair_net::NET, 10.0, 10.0, 1.0)]
#[case::wider(pair_net::Net { inputs: 3, hidden: 30, outputs: 3 }, 20.0, 5.0, 4.0)]
fn the_lazy_adjoint_of_the_declared_test_network_agrees_with_the_eager_one(
    #[case] net: pair_net::Net,
    #[case] tau_mem: f64,
    #[case] tau_syn: f64,
    #[case] scale: f64,
) {
    let system = pair_net::system_with(net, true);
    let n = system.state_dim();
    let problem = |lazy: bool| {
        Problem::new(
            &system,
            vec![0.0; n],
            pair_net::params(net, tau_mem, tau_syn, scale),
            30.0,
        )
        .with_solver(SolverChoice::Exact)
        .with_event_options(events(lazy))
        .with_observations(vec![7.0])
    };
    let lazy = gradient(&problem(true), &loss).unwrap_or_else(|e| panic!("{e}"));
    let eager = gradient(&problem(false), &loss).unwrap_or_else(|e| panic!("{e}"));
    assert!(lazy.trajectory.events.len() > net.inputs + 5);
    assert!(lazy.tape_floats < eager.tape_floats);
    close(
        &lazy.concatenated(),
        &eager.concatenated(),
        1e-10,
        "lazy vs eager adjoint",
    );
}

/// Reference: central differences of sixth order (step 1e-3 relative) of
/// the loss, rerun lazily, in each time constant, the threshold, an input
/// time and two weights.
#[test]
fn the_lazy_adjoint_matches_finite_differences() {
    let (system, x0, p) = cuba(20.0, 5.0, 4.0);
    let spec = ia_models::CubaLif::new(2, 5, 2).unwrap().spec();
    let run = |p: &[f64]| {
        let problem = Problem::new(&system, x0.clone(), p.to_vec(), 40.0)
            .with_solver(SolverChoice::Exact)
            .with_event_options(events(true));
        let trajectory = ia_events::simulate(&problem).unwrap();
        let mut seeds = LossSeeds::zeros(&trajectory);
        (loss(&trajectory, &mut seeds), trajectory.events.len())
    };
    let problem = Problem::new(&system, x0.clone(), p.clone(), 40.0)
        .with_solver(SolverChoice::Exact)
        .with_event_options(events(true));
    let g = gradient(&problem, &loss).unwrap_or_else(|e| panic!("{e}"));
    let events = g.trajectory.events.len();
    for name in [
        "tau_mem", "tau_syn", "theta", "t_in1", "w_h2_in0", "w_o1_h3",
    ] {
        let j = spec.params.iter().position(|s| s.name == name).unwrap();
        let h = 1e-3 * p[j].abs().max(1.0);
        let at = |k: f64| {
            let mut q = p.clone();
            q[j] += k * h;
            let (value, count) = run(&q);
            assert_eq!(count, events, "{name}: the same events at {k} h");
            value
        };
        let fd = (45.0 * (at(1.0) - at(-1.0)) - 9.0 * (at(2.0) - at(-2.0)) + (at(3.0) - at(-3.0)))
            / (60.0 * h);
        let got = g.derivative(&format!("param.{name}")).unwrap();
        assert!(
            (got - fd).abs() <= 1e-7 * fd.abs().max(1.0),
            "{name}: adjoint {got} vs differences {fd}"
        );
    }
}

/// Reference: forward sensitivities. The adjoint's Jacobian runs one
/// backward pass per output, each from its output's place on the lazy tape
/// (an event time's pass starts at that event, an observation's there),
/// with the cotangents of the blocks not yet met left at the end.
#[rstest]
#[case::ratio_four(20.0, 5.0, 4.0)]
#[case::equal(10.0, 10.0, 3.0)]
fn the_lazy_adjoint_jacobian_matches_forward_sensitivities(
    #[case] tau_mem: f64,
    #[case] tau_syn: f64,
    #[case] scale: f64,
) {
    let (system, x0, p) = cuba(tau_mem, tau_syn, scale);
    let problem = |lazy: bool| {
        Problem::new(&system, x0.clone(), p.clone(), 40.0)
            .with_solver(SolverChoice::Exact)
            .with_event_options(events(lazy))
            .with_observations(vec![3.0, 17.5])
    };
    let adjoint = jacobian(&problem(true), Method::Adjoint).unwrap_or_else(|e| panic!("{e}"));
    let forward = jacobian(&problem(false), Method::Forward).unwrap_or_else(|e| panic!("{e}"));
    // Several spikes of one neuron among the events.
    let mut counts = vec![0; system.transitions().len()];
    for e in &adjoint.trajectory.events {
        counts[e.transition] += 1;
    }
    assert!(counts.iter().any(|&c| c > 1), "{counts:?}");
    close(
        adjoint.final_jacobian.as_slice(),
        forward.final_jacobian.as_slice(),
        1e-10,
        "final",
    );
    close(
        adjoint.event_time_gradients.as_slice(),
        forward.event_time_gradients.as_slice(),
        1e-10,
        "event times",
    );
    for (k, (a, f)) in adjoint
        .observation_jacobians
        .iter()
        .zip(&forward.observation_jacobians)
        .enumerate()
    {
        close(
            a.as_slice(),
            f.as_slice(),
            1e-10,
            &format!("observation {k}"),
        );
    }
}

/// Reference: the eager adjoint and forward sensitivities. A run ended by
/// `stop_after` (the second output spike of a neuron, say) ends at that
/// moving event time, its final state just after the reset: the lazy pass
/// brings every block back from there.
#[test]
fn a_lazy_run_ended_by_stop_after_agrees_with_the_eager_one() {
    let (system, x0, p) = cuba(8.0, 2.0, 6.0);
    let probe = Problem::new(&system, x0.clone(), p.clone(), 40.0)
        .with_solver(SolverChoice::Exact)
        .with_event_options(events(true));
    let run = ia_events::simulate(&probe).unwrap();
    // The transition that fires most, stopped at its second firing.
    let mut counts = vec![0; system.transitions().len()];
    for e in &run.events {
        counts[e.transition] += 1;
    }
    let busiest = (0..counts.len()).max_by_key(|&k| counts[k]).unwrap();
    assert!(counts[busiest] >= 2, "{counts:?}");
    let name = system.transitions()[busiest].name.clone();
    let problem = |lazy: bool| {
        Problem::new(&system, x0.clone(), p.clone(), 40.0)
            .with_solver(SolverChoice::Exact)
            .with_event_options(events(lazy))
            .with_stop_after(&name, 2)
            .unwrap()
    };
    let lazy = gradient(&problem(true), &loss).unwrap_or_else(|e| panic!("{e}"));
    let eager = gradient(&problem(false), &loss).unwrap_or_else(|e| panic!("{e}"));
    assert!(lazy.trajectory.final_time < 40.0);
    assert!(lazy.tape_floats < eager.tape_floats);
    close(
        &lazy.concatenated(),
        &eager.concatenated(),
        1e-10,
        "lazy vs eager adjoint",
    );
    let forward = jacobian(&problem(false), Method::Forward).unwrap_or_else(|e| panic!("{e}"));
    let by_forward = forward
        .loss_gradient(&loss)
        .unwrap_or_else(|e| panic!("{e}"));
    close(
        &lazy.concatenated(),
        &by_forward.concatenated(),
        1e-10,
        "lazy adjoint vs forward",
    );
}
