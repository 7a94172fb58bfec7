//! The `cuba-lif` spiking network against its high-precision reference.
//!
//! Reference: `crates/ia-verify/references/cuba_lif.json`, written by the
//! mpmath script beside it (closed form per stretch at 60 digits, central
//! differences of step 1e-20; see `ia_verify::references::cuba_lif`). The
//! library's spike times, final states and their derivatives with respect
//! to every weight, input time, `tau_mem`, `tau_syn` and `theta`, by
//! forward sensitivities and by the adjoint with the default solver and
//! with the exact solver, must agree with it under the rules of
//! `ia_verify::studies::spiking`, forward with adjoint, and the exact solver
//! with the default one.

use ia_verify::references::cuba_lif::cuba_lif_references;
use ia_verify::studies::spiking::cuba_lif_rows;

#[test]
fn spike_times_final_states_and_their_derivatives_match_the_reference() {
    let rows = cuba_lif_rows();
    let cases = cuba_lif_references().unwrap().cases.len();
    // per case and solver (dopri5, exact): three rows per method, and
    // forward against adjoint; and the exact solver against dopri5
    assert_eq!(rows.len(), cases * 15, "{rows:#?}");
    for row in &rows {
        eprintln!("{} {}: {:.1e}", row.case, row.quantity, row.error);
        assert!(!row.failed(), "{row:#?}");
    }
}

/// The exact solver keeping each neuron at its own last update time (a run
/// that records no event states, so nothing reads the whole state at an
/// event) against the same references: the same spike sequence, spike
/// times and final states within 1e-13 (relative, absolute below 1). The
/// eager exact run agreed with them to 4e-14; a neuron carried over one
/// long stretch instead of several short ones rounds differently, not
/// more.
#[test]
fn the_lazy_exact_run_matches_the_reference() {
    use ia_events::{exact, EventOptions, Problem};
    use ia_models::Model;
    let refs = cuba_lif_references().unwrap();
    for case in &refs.cases {
        let model = case.model().unwrap();
        let (system, spec) = (model.system(), model.spec());
        let problem = Problem::new(
            &system,
            spec.default_state(),
            case.param_values().unwrap(),
            case.t_end,
        )
        .with_event_options(EventOptions {
            event_states: false,
            ..EventOptions::default()
        });
        let run = exact::simulate(&problem).unwrap();
        assert!(run.event_states.is_empty(), "{}", case.name);
        let names = system.transition_names();
        assert_eq!(run.events.len(), case.events.len(), "{}", case.name);
        let close = |a: f64, b: f64| (a - b).abs() <= 1e-13 * b.abs().max(1.0);
        for (e, r) in run.events.iter().zip(&case.events) {
            assert_eq!(names[e.transition], r.transition, "{}", case.name);
            assert!(
                close(e.time, r.time),
                "{}: {} vs {}",
                case.name,
                e.time,
                r.time
            );
        }
        for (x, r) in run.final_state.iter().zip(&case.final_state) {
            assert!(close(*x, *r), "{}: {x} vs {r}", case.name);
        }
    }
}

/// The lazy exact run against the eager one (which keeps every neuron up
/// to date at every event, and matches the references above to 4e-14) on a
/// 5-40-3 network at the default parameters, whose hidden neurons fire
/// several times each: the same events, in the same order, at the same
/// times to 1e-12 (relative), the same final state to 1e-12 and the same
/// observations, and the same state in the trajectory of a run stopped by
/// `max_events`.
#[test]
fn the_lazy_exact_run_matches_the_eager_one_on_a_larger_network() {
    use ia_events::{exact, EventOptions, Problem};
    use ia_models::{CubaLif, Model};
    let model = CubaLif::new(5, 40, 3).unwrap();
    let (system, spec) = (model.system(), model.spec());
    let eager = Problem::new(
        &system,
        spec.default_state(),
        spec.default_params(),
        spec.t_end,
    )
    .with_observations(vec![7.5, 20.0, 33.0]);
    let lazy = eager.clone().with_event_options(EventOptions {
        event_states: false,
        ..EventOptions::default()
    });
    let (a, b) = (
        exact::simulate(&eager).unwrap(),
        exact::simulate(&lazy).unwrap(),
    );
    assert!(a.events.len() > 100, "{}", a.events.len());
    assert_eq!(a.events.len(), b.events.len());
    let close = |x: f64, y: f64| (x - y).abs() <= 1e-12 * y.abs().max(1.0);
    for (e, f) in a.events.iter().zip(&b.events) {
        assert_eq!((e.transition, e.cascade_of), (f.transition, f.cascade_of));
        assert!(close(f.time, e.time), "{} vs {}", f.time, e.time);
    }
    for (x, y) in b.final_state.iter().zip(&a.final_state) {
        assert!(close(*x, *y), "{x} vs {y}");
    }
    // A run stopped by max_events ends its error's trajectory at the state
    // after the last reset, every neuron brought up to that time.
    let capped = |problem: &Problem<'_>, event_states| {
        let problem = problem.clone().with_event_options(EventOptions {
            max_events: 60,
            event_states,
            ..EventOptions::default()
        });
        match exact::simulate(&problem) {
            Err(ia_core::HybridError::Zeno { trajectory, .. }) => trajectory,
            other => panic!("{other:?}"),
        }
    };
    let (c, d) = (capped(&eager, true), capped(&eager, false));
    assert_eq!(c.final_time, d.final_time);
    for (x, y) in d.final_state.iter().zip(&c.final_state) {
        assert!(close(*x, *y), "{x} vs {y}");
    }
    assert_eq!(a.observations.len(), 3);
    for (o, p) in b.observations.iter().zip(&a.observations) {
        assert_eq!(o.time, p.time);
        for (x, y) in o.state.iter().zip(&p.state) {
            assert!(close(*x, *y), "{x} vs {y}");
        }
    }
}

/// Four hidden neurons driven by one input (t = 1 ms), weights a hair
/// apart, each firing once: at 5.11574, 5.11624, 5.11648 and 5.11661 ms,
/// gaps of 0.50, 0.25 and 0.12 us (below `zeno_separation * span = 5e-4`
/// ms and shrinking geometrically). No transition fires twice, so nothing
/// accumulates; before the Zeno rule read gaps per transition, every engine
/// refused this run as Zeno (the case yinyang.py met about once in 10^4
/// samples). Reference: the same run with the gap test switched off
/// (`zeno_run` unreachable), whose events must be these to the bit, by
/// the exact solver (eager and lazy) and by DOPRI5 at `1e-12`.
#[test]
fn distinct_neurons_firing_close_together_are_not_zeno() {
    use ia_events::{simulate, EventOptions, Problem, SolverChoice};
    use ia_models::{CubaLif, Model};
    let model = CubaLif::new(1, 4, 1).unwrap();
    let (system, spec) = (model.system(), model.spec());
    let mut params = spec.default_params();
    let mut set = |name: &str, value: f64| params[spec.param_index(name).unwrap()] = value;
    set("t_in0", 1.0);
    let a = 5e-4;
    for (j, w) in [8.0 + 1.75 * a, 8.0 + 0.75 * a, 8.0 + 0.25 * a, 8.0]
        .into_iter()
        .enumerate()
    {
        set(&format!("w_h{j}_in0"), w);
        set(&format!("w_o0_h{j}"), 0.1);
    }
    let names = system.transition_names();
    for (solver, event_states) in [
        (SolverChoice::Exact, true),
        (SolverChoice::Exact, false),
        (SolverChoice::dopri5(1e-12), true),
    ] {
        let problem = Problem::new(&system, spec.default_state(), params.clone(), 50.0)
            .with_solver(solver.clone())
            .with_event_options(EventOptions {
                event_states,
                ..EventOptions::default()
            });
        let run = simulate(&problem).unwrap_or_else(|e| panic!("{solver:?}: {e}"));
        let fired: Vec<&str> = run
            .events
            .iter()
            .map(|e| names[e.transition].as_str())
            .collect();
        assert_eq!(
            fired,
            ["input0", "spike_h0", "spike_h1", "spike_h2", "spike_h3"],
            "{solver:?}"
        );
        let times = run.event_times();
        let gaps: Vec<f64> = times.windows(2).skip(1).map(|w| w[1] - w[0]).collect();
        assert!(
            gaps.windows(2).all(|g| g[1] < g[0]) && gaps[0] < 5e-4,
            "{gaps:?}"
        );
        let loosened = problem.clone().with_event_options(EventOptions {
            event_states,
            zeno_run: usize::MAX,
            ..EventOptions::default()
        });
        let reference = simulate(&loosened).unwrap();
        assert_eq!(run.events, reference.events, "{solver:?}");
        assert_eq!(run.final_state, reference.final_state, "{solver:?}");
    }
}
