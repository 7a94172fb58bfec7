//! Cascades: events fired at once because a reset at the same instant pushed
//! another guard past zero (a kick over threshold in a spiking network).
//!
//! References: the event sequence is checked against what the equations
//! allow by hand (a neuron below threshold after its kick cannot fire); the
//! derivatives against Richardson-extrapolated central differences of the
//! simulation (`ia_verify::finite_difference`, within their own error
//! estimate) and against the other sensitivity mode.

use ia_adjoint::{jacobian, Method};
use ia_core::HybridSystem;
use ia_events::{simulate, Problem, SolverChoice};
use ia_models::{LifNetwork, Model};
use ia_verify::finite_difference::{fd_jacobian, FdJacobian, FdOptions};
use rstest::rstest;

/// Neuron 0 (drive 1.3) fires at about 13 ms and kicks neurons 1 and 2 by
/// 0.03: neuron 1, resting at 0.98, lands at 1.01, strictly past threshold,
/// and fires at once; neuron 2, resting at 0.96, lands at 0.99 and must not.
fn kicked_network() -> (LifNetwork, Vec<f64>, Vec<f64>) {
    let net = LifNetwork::with_connections(3, vec![(0, 1), (0, 2)]).unwrap();
    let spec = net.spec();
    let mut p = spec.default_params();
    let set = |p: &mut Vec<f64>, name: &str, v: f64| p[spec.param_index(name).unwrap()] = v;
    set(&mut p, "I0", 1.3);
    set(&mut p, "I1", 0.98);
    set(&mut p, "I2", 0.96);
    set(&mut p, "w1_0", 0.03);
    set(&mut p, "w2_0", 0.03);
    (net, vec![0.2, 0.98, 0.96], p)
}

fn problem<'a>(system: &'a HybridSystem, x0: &[f64], p: &[f64], t_end: f64) -> Problem<'a> {
    Problem::new(system, x0.to_vec(), p.to_vec(), t_end).with_solver(SolverChoice::dopri5(1e-12))
}

#[test]
fn a_kick_past_threshold_fires_at_once_and_a_kick_short_of_it_does_not() {
    let (net, x0, p) = kicked_network();
    let system = net.system();
    let run = simulate(&problem(&system, &x0, &p, 0.02)).unwrap();
    let fired: Vec<&str> = run
        .events
        .iter()
        .map(|e| system.transitions()[e.transition].name.as_str())
        .collect();
    assert_eq!(fired, ["spike0", "spike1"], "{:?}", run.events);
    let (first, second) = (&run.events[0], &run.events[1]);
    assert_eq!(first.time, second.time, "the cascade shares its instant");
    assert_eq!(first.cascade_of, None);
    assert_eq!(second.cascade_of, Some(0));
    // Hand check of the kick: V1 and V2 rest at their drives, so the kicks
    // land exactly at 0.98 + 0.03 and 0.96 + 0.03.
    assert!((run.state_before(1)[1] - 1.01).abs() < 1e-12);
    assert!((run.state_before(1)[2] - 0.99).abs() < 1e-12);
    // Neuron 2 then relaxes back to its drive, never reaching threshold.
    let v2 = run.final_state[2];
    assert!(v2 < 0.99 && v2 > 0.96, "V2(T) = {v2}");
}

#[test]
fn an_excitatory_network_of_one_hundred_runs_to_its_end() {
    // The network of the issue: N = 100, every weight 0.01. The old band
    // rule (twice the overshoot of the kicked guard) fired neurons below
    // threshold and ran into an endless cascade reported as Zeno.
    let net = LifNetwork::new(100).unwrap();
    let spec = net.spec();
    let mut p = spec.default_params();
    for (q, v) in spec.params.iter().zip(p.iter_mut()) {
        if q.name.starts_with('w') {
            *v = 0.01;
        }
    }
    let system = net.system();
    let t_end = spec.t_end;
    let run = simulate(&problem(&system, &spec.default_state(), &p, t_end)).unwrap();
    assert_eq!(run.final_time, t_end);
    // Every event fired either because its own guard crossed, or in a
    // cascade whose neuron stood at or past threshold when it fired.
    for (k, e) in run.events.iter().enumerate() {
        let i = e.transition;
        let v = run.state_before(k)[i];
        assert!(v >= 1.0 - 1e-9, "{i} fired at V = {v}");
    }
    // About ten spikes per neuron.
    assert!(run.events.len() > 500, "{} events", run.events.len());
}

#[rstest]
fn cascade_sensitivities_match_finite_differences(
    #[values(Method::Forward, Method::Adjoint)] method: Method,
) {
    let (net, x0, p) = kicked_network();
    let system = net.system();
    let run = problem(&system, &x0, &p, 0.02);
    let sens = jacobian(&run, method).unwrap();
    assert_eq!(sens.trajectory.events[1].cascade_of, Some(0));
    let fd = fd_jacobian(&run, &FdOptions::default()).unwrap();
    let mut checked = 0;
    for i in 0..system.state_dim() {
        for j in 0..sens.wrt.len() {
            let (v, r, e) = (
                sens.final_jacobian[(i, j)],
                fd.final_jacobian[i][j],
                fd.final_error[i][j],
            );
            assert!(
                FdJacobian::agrees(v, r, e),
                "{method:?} dV{i}/d{}: {v} vs FD {r} +- {e}",
                sens.wrt[j]
            );
            checked += usize::from(r.abs() > 1e-6);
        }
    }
    assert!(checked > 10, "only {checked} nonzero entries");
    for (k, row) in sens.event_time_gradients.row_iter().enumerate() {
        for (j, v) in row.iter().enumerate() {
            let (r, e) = (fd.event_time_jacobian[k][j], fd.event_time_error[k][j]);
            assert!(
                FdJacobian::agrees(*v, r, e),
                "{method:?} dt{k}/d{}: {v} vs FD {r} +- {e}",
                sens.wrt[j]
            );
        }
    }
    // The cascade's second event moves with the first.
    assert_eq!(
        sens.event_time_gradients.row(0),
        sens.event_time_gradients.row(1),
        "one instant, one time gradient"
    );
}

/// The default (inhibitory) network over its first 48 ms: the largest
/// finite-difference step of `tau` (0.001, a tenth of it) moves every spike
/// time by up to a tenth, and no spike lies that close to 48 ms, so the
/// perturbed runs have the same events.
#[rstest]
fn the_default_network_matches_finite_differences(
    #[values(Method::Forward, Method::Adjoint)] method: Method,
) {
    let net = LifNetwork::new(3).unwrap();
    let spec = net.spec();
    let system = net.system();
    let run = problem(
        &system,
        &spec.default_state(),
        &spec.default_params(),
        0.048,
    );
    let sens = jacobian(&run, method).unwrap();
    assert!(sens.trajectory.events.len() >= 6);
    let fd = fd_jacobian(&run, &FdOptions::default()).unwrap();
    for i in 0..system.state_dim() {
        for j in 0..sens.wrt.len() {
            let (v, r, e) = (
                sens.final_jacobian[(i, j)],
                fd.final_jacobian[i][j],
                fd.final_error[i][j],
            );
            assert!(
                FdJacobian::agrees(v, r, e),
                "{method:?} dV{i}/d{}: {v} vs FD {r} +- {e}",
                sens.wrt[j]
            );
        }
    }
}

#[test]
fn forward_and_adjoint_agree_through_a_cascade() {
    let (net, x0, p) = kicked_network();
    let system = net.system();
    let run = problem(&system, &x0, &p, 0.02);
    let fwd = jacobian(&run, Method::ForwardOnStateSteps).unwrap();
    let adj = jacobian(&run, Method::Adjoint).unwrap();
    let scale = fwd.final_jacobian.amax().max(1.0);
    let worst = (&fwd.final_jacobian - &adj.final_jacobian).amax() / scale;
    assert!(
        worst < 1e-12,
        "forward vs adjoint on the same steps: {worst:e}"
    );
}

#[test]
fn an_endless_cascade_is_reported_not_run_forever() {
    // Two neurons kicking each other by more than Vth - Vr: each spike
    // lifts the other straight back over threshold, at the same instant,
    // without end.
    let net = LifNetwork::with_connections(2, vec![(0, 1), (1, 0)]).unwrap();
    let spec = net.spec();
    let mut p = spec.default_params();
    p[spec.param_index("w1_0").unwrap()] = 1.5;
    p[spec.param_index("w0_1").unwrap()] = 1.5;
    let system = net.system();
    let err = simulate(&problem(&system, &[0.5, 0.5], &p, 0.05)).unwrap_err();
    assert_eq!(err.kind(), "zeno", "{err}");
    assert!(err.to_string().contains("cascade"), "{err}");
}
