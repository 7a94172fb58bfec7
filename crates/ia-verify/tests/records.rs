//! Lean records (issue 9): a run that records no events, or only the last K,
//! must give the same final state, statistics and derivatives as one that
//! records every event. Reference: the run recording every event, which the
//! other recordings must equal to the last bit (the recording changes what
//! is kept, never what is computed), under both sensitivity methods.

use ia_adjoint::{gradient, jacobian, jacobian_wrt, LossTerms, Method, Sensitivities, Term};
use ia_core::{HybridSystem, Trajectory};
use ia_events::{simulate, EventOptions, EventRecording, Problem, SolverChoice};
use ia_models::{LifNetwork, Model};
use ia_verify::references::default_problem;
use rstest::rstest;

fn recording(problem: Problem<'_>, record: EventRecording) -> Problem<'_> {
    let events = EventOptions {
        record,
        ..problem.events.clone()
    };
    problem.with_event_options(events)
}

/// What every recording must share with the full record.
fn assert_same_run(lean: &Trajectory, full: &Trajectory, what: &str) {
    assert_eq!(lean.final_state, full.final_state, "{what}: final state");
    assert_eq!(lean.final_time, full.final_time, "{what}: final time");
    assert_eq!(lean.final_mode, full.final_mode, "{what}: final mode");
    assert_eq!(lean.stats, full.stats, "{what}: statistics");
    assert_eq!(lean.observations, full.observations, "{what}: observations");
}

/// The recorded events (and their time gradients) are the last ones of the
/// full record, with their run-wide indices.
fn assert_last_events(lean: &Sensitivities, full: &Sensitivities, kept: usize, what: &str) {
    let total = full.trajectory.events.len();
    let from = total - kept.min(total);
    assert_eq!(
        lean.trajectory.events,
        full.trajectory.events[from..],
        "{what}"
    );
    assert_eq!(
        lean.event_time_gradients,
        full.event_time_gradients
            .rows(from, full.event_time_gradients.nrows() - from),
        "{what}: event-time gradients"
    );
    let segments = &full.trajectory.segments;
    assert_eq!(
        lean.trajectory.segments,
        segments[segments.len() - kept.min(segments.len())..],
        "{what}: segments"
    );
}

/// Every catalogue model's default run.
#[rstest]
fn recording_changes_what_is_kept_not_what_is_computed(
    #[values(Method::Forward, Method::Adjoint)] method: Method,
) {
    for model in ia_models::catalog() {
        recorded_or_not(model.as_ref(), method);
    }
}

fn recorded_or_not(model: &dyn Model, method: Method) {
    let name = model.name();
    let system = model.system();
    let spec = model.spec();
    let base = default_problem(model, &system, SolverChoice::dopri5(1e-10))
        .with_observations(vec![spec.t_end / 3.0]);
    let full = jacobian(&recording(base.clone(), EventRecording::All), method).unwrap();
    assert!(
        !full.trajectory.events.is_empty(),
        "{name}: the default run has events"
    );
    for record in [
        EventRecording::None,
        EventRecording::Last(1),
        EventRecording::Last(2),
    ] {
        let what = format!("{name}, {method:?}, {record:?}");
        let lean = jacobian(&recording(base.clone(), record), method).unwrap();
        assert_same_run(&lean.trajectory, &full.trajectory, &what);
        assert_eq!(
            lean.final_jacobian, full.final_jacobian,
            "{what}: final Jacobian"
        );
        assert_eq!(
            lean.observation_jacobians, full.observation_jacobians,
            "{what}: observation Jacobians"
        );
        let kept = match record {
            EventRecording::None => 0,
            EventRecording::Last(k) => k,
            EventRecording::All => unreachable!(),
        };
        assert_last_events(&lean, &full, kept, &what);
    }
}

/// A loss reading the final state and the last event's time: one backward
/// pass, the same gradient whatever the record keeps, as long as it keeps
/// the event the loss reads.
#[rstest]
fn a_loss_on_the_last_event_needs_only_that_event(
    #[values("ball1d", "thermostat", "lif", "impact-pendulum")] name: &str,
) {
    let model = ia_models::by_name(name).unwrap();
    let system = model.system();
    let state = system.state_names()[0].clone();
    let loss = LossTerms::new(
        vec![
            Term {
                of: format!("final.{state}"),
                weight: 1.0,
                target: None,
            },
            Term {
                of: "event.-1.time".into(),
                weight: 0.5,
                target: Some(0.25),
            },
        ],
        &system,
    )
    .unwrap();
    let base = default_problem(model.as_ref(), &system, SolverChoice::dopri5(1e-10));
    let full = gradient(&recording(base.clone(), EventRecording::All), &loss).unwrap();
    assert!(
        full.trajectory.events.len() >= 2,
        "{name}: the default run has two events or more"
    );
    let lean = gradient(&recording(base.clone(), EventRecording::Last(1)), &loss).unwrap();
    assert_eq!(lean.value, full.value, "{name}");
    assert_eq!(lean.concatenated(), full.concatenated(), "{name}");
    // The first event is not kept: reading it is a clear error, not a
    // silent zero.
    let first = LossTerms::new(
        vec![Term {
            of: "event.0.time".into(),
            weight: 1.0,
            target: None,
        }],
        &system,
    )
    .unwrap();
    let error = gradient(&recording(base, EventRecording::Last(1)), &first)
        .unwrap_err()
        .to_string();
    assert!(error.contains("is not recorded"), "{name}: {error}");
}

/// The time of a cascade's events is that of the event that started it; the
/// forward layer keeps it apart from the recorded gradients, so a run that
/// records none still maps the cascade right.
#[rstest]
fn a_cascade_recorded_or_not(#[values(Method::Forward, Method::Adjoint)] method: Method) {
    let net = LifNetwork::with_connections(3, vec![(0, 1), (0, 2)]).unwrap();
    let spec = net.spec();
    let mut p = spec.default_params();
    for (name, v) in [
        ("I0", 1.3),
        ("I1", 0.98),
        ("I2", 0.96),
        ("w1_0", 0.03),
        ("w2_0", 0.03),
    ] {
        p[spec.param_index(name).unwrap()] = v;
    }
    let system: HybridSystem = net.system();
    let base = Problem::new(&system, vec![0.2, 0.98, 0.96], p, 0.02)
        .with_solver(SolverChoice::dopri5(1e-12));
    let full = jacobian_wrt(
        &recording(base.clone(), EventRecording::All),
        method,
        &["initial.V0", "param.I0", "param.w1_0"],
    )
    .unwrap();
    assert_eq!(
        full.trajectory.events[1].cascade_of,
        Some(0),
        "the run has a cascade"
    );
    let lean = jacobian_wrt(
        &recording(base, EventRecording::None),
        method,
        &["initial.V0", "param.I0", "param.w1_0"],
    )
    .unwrap();
    assert_same_run(&lean.trajectory, &full.trajectory, "cascade");
    assert_eq!(lean.final_jacobian, full.final_jacobian);
    assert!(lean.trajectory.events.is_empty() && lean.event_time_gradients.nrows() == 0);
}

#[test]
fn a_long_run_recording_the_last_events_keeps_their_indices() {
    let model = ia_models::by_name("thermostat").unwrap();
    let system = model.system();
    let problem = default_problem(model.as_ref(), &system, SolverChoice::dopri5(1e-10));
    let problem = Problem {
        t_end: 20.0 * problem.t_end,
        ..problem
    };
    let full = simulate(&recording(problem.clone(), EventRecording::All)).unwrap();
    let last = simulate(&recording(problem, EventRecording::Last(3))).unwrap();
    assert!(full.events.len() > 100, "{}", full.events.len());
    assert_same_run(&last, &full, "thermostat, last 3");
    assert_eq!(last.events, full.events[full.events.len() - 3..]);
    assert_eq!(last.events[2].index, full.stats.events - 1);
}
