//! The exact solver on a flow of 2x2 linear pairs: a test-only network of
//! current-based neurons (`tau_mem V' = -V + I`, `tau_syn I' = -I` per
//! neuron; input spikes add weights to the hidden currents, a hidden spike
//! resets its `V` and adds weights to the output currents), built from
//! ia-core types. Reference: the same system run by DOPRI5 at a tight
//! tolerance (its flow is the same `Flow::rate`).

use crate::pair_net;

use ia_core::{Flow, FlowPartials, FromMode, HybridSystem, LinearBlocks, LinearPair, ToMode};
use ia_events::{exact, simulate, EventOptions, Problem, SolverChoice};
use pair_net::{params, system, Above, Kick, NET};
use rstest::rstest;

/// Every event (transition and time) and the final state of the exact run
/// against DOPRI5 at 1e-12, for a ratio of time constants of 4 (the
/// paper's), equal ones and nearly equal ones.
#[rstest]
#[case::ratio_four(20.0, 5.0, 4.0)]
#[case::equal(10.0, 10.0, 1.0)]
#[case::nearly_equal(10.0, 10.0 * (1.0 + 1e-9), 1.0)]
#[case::fast_membrane(2.0, 8.0, 0.4)]
fn the_exact_run_of_a_network_of_pairs_matches_dopri5(
    #[case] tau_mem: f64,
    #[case] tau_syn: f64,
    #[case] scale: f64,
) {
    let system = system(NET);
    let n = system.state_dim();
    let problem = Problem::new(
        &system,
        vec![0.0; n],
        params(NET, tau_mem, tau_syn, scale),
        60.0,
    )
    .with_solver(SolverChoice::dopri5(1e-12))
    .with_event_options(EventOptions {
        max_events: 1000,
        ..EventOptions::default()
    });
    let run = exact::simulate(&problem).unwrap_or_else(|e| panic!("{e}"));
    let stepped = simulate(&problem).unwrap_or_else(|e| panic!("{e}"));
    let spikes = run
        .events
        .iter()
        .filter(|e| e.transition >= NET.inputs)
        .count();
    assert!((5..200).contains(&spikes), "{spikes} spikes");
    let outputs = run
        .events
        .iter()
        .filter(|e| e.transition >= NET.inputs + NET.hidden);
    assert!(outputs.count() >= 3);
    assert_eq!(run.events.len(), stepped.events.len());
    for (a, b) in run.events.iter().zip(&stepped.events) {
        assert_eq!(a.transition, b.transition, "at {} vs {}", a.time, b.time);
        assert!((a.time - b.time).abs() < 1e-8, "{} vs {}", a.time, b.time);
    }
    for (x, y) in run.final_state.iter().zip(&stepped.final_state) {
        assert!((x - y).abs() < 1e-8 * (1.0 + y.abs()), "{x} vs {y}");
    }
    assert_eq!(run.stats.steps, 0);
}

/// Reference: by hand. A pair with complex rates (an oscillator,
/// `x' = y`, `y' = -x`) is refused naming the mode, the entries and what
/// is valid; so is a component carried along with the state that does not
/// say it carries pairs (`ExtraState::carries_pairs`).
#[test]
fn unsupported_pairs_are_refused_clearly() {
    struct Spring;
    impl Flow for Spring {
        fn rate(&self, _t: f64, x: &[f64], _p: &[f64], dxdt: &mut [f64]) {
            (dxdt[0], dxdt[1]) = (x[1], -x[0]);
        }
        fn partials(&self, _t: f64, _x: &[f64], _p: &[f64], out: &mut FlowPartials) {
            out.x[(0, 1)] = 1.0;
            out.x[(1, 0)] = -1.0;
        }
        fn linear_blocks(&self, _p: &[f64], blocks: &mut LinearBlocks) -> bool {
            let a = [[0.0, 1.0], [-1.0, 0.0]];
            blocks.pairs.push(LinearPair::new([0, 1], a, [0.0, 0.0]));
            true
        }
    }
    let spring = HybridSystem::builder(&["x", "y"], &["c"])
        .mode("swing", Spring)
        .transition(
            "top",
            FromMode("swing"),
            ToMode("swing"),
            Above { state: 0, level: 0 },
            Kick {
                reset: None,
                adds: Vec::new(),
            },
        )
        .build()
        .unwrap();
    let err = exact::check(&spring, &[2.0]).unwrap_err().to_string();
    for word in ["real rates", "'x'", "'y'", "'swing'", "complex", "dopri5"] {
        assert!(err.contains(word), "{word}: {err}");
    }
    // Derivatives: an extra state carried along is refused before the run.
    let net = system(NET);
    let n = net.state_dim();
    let problem = Problem::new(&net, vec![0.0; n], params(NET, 20.0, 5.0, 4.0), 10.0);
    assert!(exact::simulate(&problem).is_ok());
    let err = exact::run(&problem, &mut Carried, &mut ia_events::NoObserver).unwrap_err();
    assert!(err.to_string().contains("linear pairs"), "{err}");
}

/// One carried component that does not carry pairs.
struct Carried;

impl ia_events::ExtraState for Carried {
    fn dim(&self) -> usize {
        1
    }
    fn initial(&mut self, _run: ia_events::RunContext<'_>, out: &mut [f64]) {
        out[0] = 0.0;
    }
    fn rate(
        &mut self,
        _run: ia_events::RunContext<'_>,
        _mode: usize,
        _t: f64,
        _x: &[f64],
        _extra: &[f64],
        rate: &mut [f64],
    ) {
        rate[0] = 0.0;
    }
    fn jump(
        &mut self,
        _run: ia_events::RunContext<'_>,
        _jump: &ia_events::EventJump<'_>,
        before: &[f64],
        after: &mut [f64],
    ) -> Result<(), ia_core::HybridError> {
        after.copy_from_slice(before);
        Ok(())
    }
}
