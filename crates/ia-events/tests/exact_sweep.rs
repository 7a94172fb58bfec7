//! The exact solver's layered sweep (`exact::sweeps`: a lazy run of a
//! feed-forward network run one layer of blocks after another) against the
//! general lazy run of the same problem.
//!
//! Reference: `exact::simulate_without_sweep`, the general lazy run (one
//! event after another from a queue of predicted crossings), itself checked
//! against the eager run in `exact_lazy.rs` and against mpmath in
//! `exact_pairs.rs`. The sweep brings each block over the same stretches
//! with the same factors and kicks and predicts it with the same
//! arithmetic, so the two must agree to the bit: the same records (every
//! event's transition, time and guard rate, the segments, the counts) and
//! the same final state.

use crate::pair_net::{self, Above, DeclaredKick, Kick, Net, Neurons};
use ia_core::{Direction, FromMode, Guard, GuardPartials, HybridError, HybridSystem, ToMode};
use ia_events::{exact, simulate_in, EventOptions, Problem, SolverChoice, Workspace};
use ia_models::{CubaLif, Model};
use proptest::prelude::*;
use rstest::rstest;

/// Event options of a lazy run (no event states).
fn lazy(max_events: usize) -> EventOptions {
    EventOptions {
        event_states: false,
        max_events,
        ..EventOptions::default()
    }
}

/// Calls `check` with the lazy run (no event states, at most `max_events`
/// events) of a `cuba-lif` network of `size` at its default parameters.
fn cuba_lif_problem(size: [usize; 3], max_events: usize, check: impl FnOnce(&Problem<'_>)) {
    let net = CubaLif::new(size[0], size[1], size[2]).unwrap();
    let (system, spec) = (net.system(), net.spec());
    let problem = Problem::new(
        &system,
        spec.default_state(),
        spec.default_params(),
        spec.t_end,
    )
    .with_event_options(lazy(max_events));
    check(&problem);
}

/// The sweep's run of `problem` equals the general run's to the bit;
/// returns the number of events.
fn same_to_the_bit(problem: &Problem<'_>) -> usize {
    let swept = exact::simulate(problem).unwrap();
    let queued = exact::simulate_without_sweep(problem).unwrap();
    assert_eq!(swept, queued);
    let bits = |t: &ia_core::Trajectory| -> Vec<u64> {
        let times = t.events.iter().map(|e| e.time.to_bits());
        let rates = t.events.iter().map(|e| e.guard_rate.to_bits());
        let state = t.final_state.iter().map(|x| x.to_bits());
        times.chain(rates).chain(state).collect()
    };
    assert_eq!(bits(&swept), bits(&queued));
    swept.events.len()
}

/// Whether some transition fired more than once.
fn some_fire_again(problem: &Problem<'_>) -> bool {
    let run = exact::simulate(problem).unwrap();
    let mut seen = vec![0; problem.system.transitions().len()];
    for e in &run.events {
        seen[e.transition] += 1;
    }
    seen.iter().any(|&c| c > 1)
}

#[rstest]
#[case::small([2, 3, 2])]
#[case::layer([5, 40, 3])]
#[case::wide([3, 300, 2])]
fn cuba_lif_sweeps_to_the_general_runs_bits(#[case] size: [usize; 3]) {
    cuba_lif_problem(size, 100_000, |problem| {
        assert!(exact::sweeps(problem));
        let events = same_to_the_bit(problem);
        assert!(events > size[0] + size[1], "{events}");
        assert!(some_fire_again(problem));
    });
}

/// Inputs that leave some hidden neurons as they were (a zero weight: the
/// kick adds nothing): a neuron whose prediction the sweep held off up to
/// such an input is predicted from its state before it, after it (the
/// even neurons here, driven by input 3 alone, at 2.3 ms, with weights
/// from 3 to 19.8: the strongest cross before input 1, at 4.4 ms, others
/// first between input 1 and input 2, at 7.9 ms, or after it, the weakest
/// never), and the run is the general run's to the bit.
#[test]
fn inputs_that_leave_a_neuron_as_it_was_sweep_to_the_general_runs_bits() {
    let net = CubaLif::new(4, 30, 2).unwrap();
    let system = net.system();
    let mut p = net.spec().default_params();
    for j in (0..30).step_by(2) {
        for i in 0..3 {
            p[net.hidden_weight_index(j, i)] = 0.0;
        }
        p[net.hidden_weight_index(j, 3)] = 3.0 + 0.6 * j as f64;
    }
    let problem = Problem::new(&system, net.spec().default_state(), p, 40.0)
        .with_event_options(lazy(100_000));
    assert!(exact::sweeps(&problem));
    let events = same_to_the_bit(&problem);
    assert!(events > 4 + 15, "{events}");
}

/// One workspace runs `cuba-lif` systems one after another, as a training
/// loop does: the same system at other parameters (input times, weights,
/// a threshold, time constants, equal ones too: its kept sweep plan is
/// used with levels and rates formed again), systems of other sizes with
/// as many entries or as many transitions (the kept plan is not theirs),
/// the first again, and the first built again (another system declaring
/// the same: the kept plan is its too). Reference: each run to the bit
/// equals a fresh `exact::simulate`, which finds its plan anew.
#[test]
fn a_workspace_sweeps_runs_of_one_system_at_other_parameters_as_fresh_runs() {
    let nets = [[2, 4, 2], [3, 3, 3], [2, 5, 1]].map(|[i, h, o]| CubaLif::new(i, h, o).unwrap());
    let mut systems: Vec<HybridSystem> = nets.iter().map(CubaLif::system).collect();
    systems.push(nets[0].system());
    let mut workspace = Workspace::new();
    let mut runs = 0;
    let steps = [0, 0, 0, 1, 2, 0, 0, 2, 0, 3, 3, 0];
    for (step, which) in steps.into_iter().enumerate() {
        let (net, system) = (&nets[which % 3], &systems[which]);
        let mut p = net.spec().default_params();
        let [n_in, n_h, _] = net.size();
        let shift = step as f64;
        for i in 0..n_in {
            p[net.input_time_index(i)] = 1.0 + (0.37 * (i as f64 + shift)).rem_euclid(8.0);
        }
        for j in 0..n_h {
            p[net.hidden_weight_index(j, 0)] = 2.0 + 0.9 * ((j as f64 + shift) % 5.0);
        }
        (p[0], p[1], p[2]) = match step {
            1 => (12.0, 12.0, 1.0),
            2 => (20.0, 5.0, 0.7),
            _ => (20.0, 5.0, 1.0),
        };
        let problem = Problem::new(system, net.spec().default_state(), p, 40.0)
            .with_solver(SolverChoice::Exact)
            .with_event_options(lazy(100_000));
        assert!(exact::sweeps(&problem));
        let kept = simulate_in(&problem, &mut workspace).unwrap();
        let fresh = exact::simulate(&problem).unwrap();
        let bits = |t: &ia_core::Trajectory| -> Vec<u64> {
            let times = t.events.iter().map(|e| e.time.to_bits());
            times
                .chain(t.final_state.iter().map(|x| x.to_bits()))
                .collect()
        };
        assert_eq!(kept, fresh, "step {step}");
        assert_eq!(bits(&kept), bits(&fresh), "step {step}");
        runs += usize::from(kept.events.len() > n_in);
        workspace.recycle(kept);
    }
    assert_eq!(runs, steps.len());
}

/// A random `cuba-lif` network: sizes, time constants (equal ones too: a
/// pair with a double rate), input times drawn from few values (equal
/// times), weights of both signs strong enough that neurons fire several
/// times.
fn random_network() -> impl Strategy<Value = (CubaLif, Vec<f64>)> {
    (1usize..4, 1usize..9, 1usize..4)
        .prop_flat_map(|(n_in, n_h, n_o)| {
            let net = CubaLif::new(n_in, n_h, n_o).unwrap();
            let taus = prop_oneof![
                (2.0f64..30.0, 1.0f64..10.0),
                (2.0f64..30.0).prop_map(|t| (t, t)),
            ];
            let times = proptest::collection::vec(0usize..4, n_in);
            let weights = proptest::collection::vec(-2.0f64..9.0, n_in * n_h + n_h * n_o);
            (Just(net), taus, 0.5f64..1.5, times, weights)
        })
        .prop_map(|(net, (tau_mem, tau_syn), theta, times, weights)| {
            let mut p = net.spec().default_params();
            (p[0], p[1], p[2]) = (tau_mem, tau_syn, theta);
            let [n_in, n_h, _] = net.size();
            for (i, &slot) in times.iter().enumerate() {
                p[net.input_time_index(i)] = [1.5, 4.0, 4.0, 9.25][slot];
            }
            let first = net.hidden_weight_index(0, 0);
            p[first..first + weights.len()].copy_from_slice(&weights);
            debug_assert_eq!(first + n_in * n_h, net.output_weight_index(0, 0));
            (net, p)
        })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]

    #[test]
    fn random_feed_forward_networks_sweep_to_the_general_runs_bits(
        (net, p) in random_network()
    ) {
        let system = net.system();
        let problem = Problem::new(&system, net.spec().default_state(), p, 40.0)
            .with_event_options(lazy(100_000));
        prop_assert!(exact::sweeps(&problem));
        same_to_the_bit(&problem);
    }
}

/// Over the random networks, some neurons fire several times and some
/// inputs come at equal times (the cases the test above must cover).
#[test]
fn the_random_networks_fire_again_and_share_input_times() {
    use proptest::strategy::ValueTree;
    let mut runner = proptest::test_runner::TestRunner::deterministic();
    let (mut again, mut equal) = (0, 0);
    for _ in 0..100 {
        let (net, p) = random_network().new_tree(&mut runner).unwrap().current();
        let [n_in, ..] = net.size();
        let times: Vec<f64> = (0..n_in).map(|i| p[net.input_time_index(i)]).collect();
        equal += usize::from((1..n_in).any(|i| times[..i].contains(&times[i])));
        let system = net.system();
        let problem = Problem::new(&system, net.spec().default_state(), p, 40.0)
            .with_event_options(lazy(100_000));
        again += usize::from(some_fire_again(&problem));
    }
    assert!(again > 30 && equal > 20, "{again} {equal}");
}

/// `max_events` reached inside a sweep: the same error as the general
/// run's, with the same partial trajectory.
#[test]
fn max_events_in_a_sweep_gives_the_general_runs_error() {
    cuba_lif_problem([5, 40, 3], 25, |problem| {
        assert!(exact::sweeps(problem));
        let swept = exact::simulate(problem).unwrap_err();
        let queued = exact::simulate_without_sweep(problem).unwrap_err();
        assert!(
            matches!(&swept, HybridError::Zeno { reason, .. } if reason.contains("max_events = 25")),
            "{swept}"
        );
        assert_eq!(format!("{swept:?}"), format!("{queued:?}"));
        assert_eq!(swept.trajectory(), queued.trajectory());
    });
}

/// `t - p[time]` rising: an input spike at a parameter's time.
struct At {
    time: usize,
}

impl Guard for At {
    fn direction(&self) -> Direction {
        Direction::Rising
    }
    fn value(&self, t: f64, _x: &[f64], p: &[f64]) -> f64 {
        t - p[self.time]
    }
    fn partials(&self, _t: f64, _x: &[f64], _p: &[f64], out: &mut GuardPartials) {
        out.t = 1.0;
        out.p[self.time] = -1.0;
    }
    fn time_threshold(&self, p: &[f64]) -> Option<f64> {
        Some(p[self.time])
    }
}

/// The network of `pair_net` (with its clock entry, which nothing reads
/// here) with inputs on time, and, when `feedback`, output spikes that
/// kick the hidden currents back (a cycle of kicks) by the one parameter
/// after `pair_net`'s.
fn network(net: Net, feedback: bool) -> HybridSystem {
    let states: Vec<String> = std::iter::once("clock".to_string())
        .chain((0..net.neurons()).flat_map(|m| [format!("V{m}"), format!("I{m}")]))
        .collect();
    let params: Vec<String> = (0..=net.params()).map(|i| format!("p{i}")).collect();
    let states: Vec<&str> = states.iter().map(String::as_str).collect();
    let params: Vec<&str> = params.iter().map(String::as_str).collect();
    let mut builder = HybridSystem::builder(&states, &params).mode("run", Neurons(net));
    let edge = (FromMode("run"), ToMode("run"));
    for i in 0..net.inputs {
        let adds = (0..net.hidden)
            .map(|j| (net.v(j) + 1, net.w_h(j, i)))
            .collect();
        let kick = DeclaredKick::new(Kick { reset: None, adds });
        builder = builder.transition(&format!("in{i}"), edge.0, edge.1, At { time: 3 + i }, kick);
    }
    for m in 0..net.neurons() {
        let v = net.v(m);
        let adds = if m < net.hidden {
            (0..net.outputs)
                .map(|k| (net.v(net.hidden + k) + 1, net.w_o(k, m)))
                .collect()
        } else if feedback {
            (0..net.hidden)
                .map(|j| (net.v(j) + 1, net.params()))
                .collect()
        } else {
            Vec::new()
        };
        let kick = DeclaredKick::new(Kick {
            reset: Some(v),
            adds,
        });
        let guard = Above { state: v, level: 2 };
        builder = builder.transition(&format!("spike{m}"), edge.0, edge.1, guard, kick);
    }
    builder.build().unwrap()
}

/// A network whose outputs kick its hidden layer back is not swept (the
/// general run runs it), and the same network without the feedback is,
/// with its clock entry (in no pair, untouched) brought to the end; both
/// give the general run's results to the bit.
#[test]
fn a_cycle_of_kicks_falls_back_to_the_general_run() {
    let net = Net {
        inputs: 3,
        hidden: 6,
        outputs: 2,
    };
    let mut p = pair_net::params(net, 20.0, 5.0, 4.0);
    // Inhibitory feedback.
    p.push(-3.0);
    for feedback in [true, false] {
        let system = network(net, feedback);
        let n = system.state_dim();
        let problem =
            Problem::new(&system, vec![0.0; n], p.clone(), 40.0).with_event_options(lazy(100_000));
        assert_eq!(exact::sweeps(&problem), !feedback);
        let events = same_to_the_bit(&problem);
        assert!(events > 10, "{events}");
        let run = exact::simulate(&problem).unwrap();
        assert_eq!(run.final_state[0], 40.0);
    }
}

/// What the sweep does not take: event states kept (an eager run) and
/// observations.
#[test]
fn eager_runs_and_observations_are_not_swept() {
    cuba_lif_problem([2, 3, 2], 1000, |lazy_problem| {
        assert!(exact::sweeps(lazy_problem));
        let eager = lazy_problem
            .clone()
            .with_event_options(EventOptions::default());
        assert!(!exact::sweeps(&eager));
        assert!(!exact::sweeps(
            &lazy_problem.clone().with_observations(vec![10.0])
        ));
    });
}
