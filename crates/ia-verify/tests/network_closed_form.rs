//! Spiking networks against their closed form.
//!
//! Reference: [`ia_verify::closed_form::lif_network`], the exact spike
//! sequence of the `lif-network` (every neuron relaxes exponentially between
//! spikes, so each spike time is a logarithm) differentiated by dual
//! numbers: exact derivatives of every final potential and every spike time
//! with respect to every initial potential, drive, `tau`, `Vth`, `Vr` and
//! synaptic weight. Nothing of the integrator is in it. The library runs at
//! `rtol = atol = 1e-12` and must agree to `1e-7` relative (`1e-9` absolute
//! below `1e-3`), the tolerance of the other closed-form checks
//! (docs/method.md, section 8).

use ia_adjoint::{jacobian, Method};
use ia_events::{simulate, Problem, SolverChoice};
use ia_models::{LifNetwork, Model};
use ia_verify::closed_form::{lif_network, network_case, ClosedFormError};
use rstest::rstest;

fn agrees(value: f64, reference: f64) -> bool {
    let tol = if reference.abs() < 1e-3 {
        1e-9
    } else {
        1e-7 * reference.abs()
    };
    (value - reference).abs() <= tol
}

/// The cases of `ia_verify::closed_form::network_cases`, with the least
/// number of spikes and of cascade spikes each must show (so that a case
/// cannot pass by having nothing to compare).
#[rstest]
#[case::kicked_into_a_cascade("kicked", 2, 1)]
#[case::excitatory_cascades("excitatory", 20, 3)]
#[case::default_three("default3", 20, 0)]
#[case::default_all_to_all_ten("default10", 80, 0)]
#[case::default_sparse_twelve("default12", 90, 0)]
fn the_network_matches_its_closed_form(
    #[case] name: &str,
    #[case] min_events: usize,
    #[case] min_cascades: usize,
    #[values(Method::Forward, Method::Adjoint)] method: Method,
) {
    let case = network_case(name).unwrap();
    let (net, x0, p, t_end) = (case.net, case.initial_state, case.params, case.t_end);
    let exact = lif_network(&net, &x0, &p, t_end, 10_000).unwrap();
    let system = net.system();
    let problem = Problem::new(&system, x0, p, t_end).with_solver(SolverChoice::dopri5(1e-12));
    let sens = jacobian(&problem, method).unwrap();
    let events = &sens.trajectory.events;
    assert_eq!(events.len(), exact.event_times.len(), "spike count");
    assert!(events.len() >= min_events, "{} spikes", events.len());
    let cascades = events.iter().filter(|e| e.cascade_of.is_some()).count();
    assert!(cascades >= min_cascades, "{cascades} cascade spikes");
    assert_eq!(*sens.wrt, exact.wrt[..]);
    for (k, (e, &t)) in events.iter().zip(&exact.event_times).enumerate() {
        assert!((e.time - t).abs() < 1e-9, "spike {k}: {} vs {t}", e.time);
    }
    let mut worst: f64 = 0.0;
    let mut nonzero = 0;
    let mut compare = |got: f64, want: f64| {
        worst = worst.max((got - want).abs() / want.abs().max(1e-3));
        nonzero += usize::from(want.abs() > 1e-6);
        agrees(got, want)
    };
    for (i, row) in exact.jacobian.iter().enumerate() {
        assert!(agrees(sens.trajectory.final_state[i], exact.final_state[i]));
        for (j, &want) in row.iter().enumerate() {
            let got = sens.final_jacobian[(i, j)];
            assert!(
                compare(got, want),
                "{method:?} d V{i}(T) / d {}: {got} vs exact {want}",
                exact.wrt[j]
            );
        }
    }
    for (k, row) in exact.event_time_jacobian.iter().enumerate() {
        for (j, &want) in row.iter().enumerate() {
            let got = sens.event_time_gradients[(k, j)];
            assert!(
                compare(got, want),
                "{method:?} d t{k} / d {}: {got} vs exact {want}",
                exact.wrt[j]
            );
        }
    }
    assert!(nonzero > 10, "only {nonzero} nonzero derivatives");
    eprintln!("{method:?}: worst scaled error {worst:.1e} over {nonzero} nonzero derivatives");
}

#[test]
fn the_closed_form_follows_the_integrators_cascade_rule() {
    // Reference: by hand. Neuron 0 reaches threshold at
    // tau ln((1.3 - 0.2) / 0.3); neuron 1, kicked from 0.98 to 1.01, fires at
    // the same instant; neuron 2, kicked to 0.99, does not, and relaxes
    // back towards its drive.
    let case = network_case("kicked").unwrap();
    let (net, x0, p, t_end) = (case.net, case.initial_state, case.params, case.t_end);
    let exact = lif_network(&net, &x0, &p, t_end, 100).unwrap();
    let first = 0.01 * (1.1f64 / 0.3).ln();
    assert_eq!(exact.event_times.len(), 2);
    assert!((exact.event_times[0] - first).abs() < 1e-15);
    assert_eq!(exact.event_times[0], exact.event_times[1]);
    let v2 = 0.96 + 0.03 * (-(t_end - first) / 0.01f64).exp();
    assert!((exact.final_state[2] - v2).abs() < 1e-15);
    // and the library fires the same two spikes
    let system = net.system();
    let run = simulate(&Problem::new(&system, x0, p, t_end)).unwrap();
    assert_eq!(run.events.len(), 2);
}

#[test]
fn an_endless_cascade_is_an_error_of_the_closed_form_too() {
    // Two neurons kicking each other by more than Vth - Vr.
    let net = LifNetwork::with_connections(2, vec![(0, 1), (1, 0)]).unwrap();
    let spec = net.spec();
    let mut p = spec.default_params();
    p[spec.param_index("w1_0").unwrap()] = 1.5;
    p[spec.param_index("w0_1").unwrap()] = 1.5;
    let err = lif_network(&net, &[0.5, 0.5], &p, 0.05, 1000).unwrap_err();
    assert!(
        matches!(
            err,
            ClosedFormError::TooManyEvents {
                max_events: 1000,
                ..
            }
        ),
        "{err}"
    );
}

#[test]
fn bad_inputs_are_named() {
    let case = network_case("default3").unwrap();
    let (net, x0, p) = (case.net, case.initial_state, case.params);
    let short = lif_network(&net, &x0[..2], &p, 0.1, 100).unwrap_err();
    assert!(short.to_string().contains("initial state"), "{short}");
    let mut at_threshold = x0.clone();
    at_threshold[1] = 1.0;
    let err = lif_network(&net, &at_threshold, &p, 0.1, 100).unwrap_err();
    assert!(
        matches!(err, ClosedFormError::InitialOnGuard { .. }),
        "{err}"
    );
    let mut no_tau = p.clone();
    no_tau[3] = 0.0;
    let err = lif_network(&net, &x0, &no_tau, 0.1, 100).unwrap_err();
    assert!(err.to_string().contains("tau"), "{err}");
}
