//! References: the closed forms of the ball of `crate::fixtures` (dropped
//! from `H0` at rest, one impact at `t1 = sqrt(2 H0 / G)` before `T`),
//! derived by hand there, and the definition of the terms.
use crate::fixtures::{ball, dh_final, problem, E, G, H0, T};
use crate::gradient::gradient;
use crate::jacobian::jacobian;
use crate::loss::*;
use crate::results::Method;
use ia_events::{Problem, SolverChoice};

fn terms(list: Vec<Term>) -> LossTerms {
    LossTerms::new(list, &ball()).unwrap()
}

#[test]
fn a_final_term_is_weight_times_the_entry() {
    let system = ball();
    let run = problem(&system);
    let grad = gradient(&run, &terms(vec![Term::new("final.h", 3.0)])).unwrap();
    // h(T) = e w (T - t1) - g (T - t1)^2 / 2 with w = g t1.
    let t1 = crate::fixtures::t1();
    let h = E * G * t1 * (T - t1) - G * (T - t1).powi(2) / 2.0;
    assert!((grad.value - 3.0 * h).abs() < 1e-9, "{}", grad.value);
    for (got, want) in grad.concatenated().iter().zip(dh_final()) {
        assert!((got - 3.0 * want).abs() < 1e-8, "{got} vs {}", 3.0 * want);
    }
}

#[test]
fn an_event_time_term_reads_negative_indices() {
    let system = ball();
    let run = problem(&system);
    let first = gradient(&run, &terms(vec![Term::new("event.0.time", 1.0)])).unwrap();
    let last = gradient(&run, &terms(vec![Term::new("event.-1.time", 1.0)])).unwrap();
    // One impact: event -1 is event 0; dt1/dh0 = 1 / (g t1).
    let t1 = crate::fixtures::t1();
    assert!((first.value - t1).abs() < 1e-9);
    assert_eq!(first.concatenated(), last.concatenated());
    assert!((first.derivative("initial.h").unwrap() - 1.0 / (G * t1)).abs() < 1e-9);
}

#[test]
fn an_observation_term_with_a_target_is_a_squared_error() {
    let system = ball();
    let run = problem(&system).with_observations(vec![0.1, 0.2]);
    let target = 0.5;
    let loss = terms(vec![Term::new("observation.-2.h", 2.0).with_target(target)]);
    let grad = gradient(&run, &loss).unwrap();
    // Before the impact h(t) = H0 - g t^2 / 2, dh/dh0 = 1.
    let h = H0 - G * 0.1f64.powi(2) / 2.0;
    assert!((grad.value - 2.0 * (h - target).powi(2)).abs() < 1e-9);
    let want = 2.0 * 2.0 * (h - target);
    assert!((grad.derivative("initial.h").unwrap() - want).abs() < 1e-9);
    assert!((grad.derivative("param.g").unwrap() + want * 0.005).abs() < 1e-9);
}

#[test]
fn terms_sum_and_match_the_contracted_forward_jacobian() {
    let system = ball();
    let run = problem(&system).with_observations(vec![0.3]);
    let loss = terms(vec![
        Term::new("final.v", 0.7),
        Term::new("event.0.time", -1.5),
        Term::new("observation.0.v", 2.0).with_target(-1.0),
    ]);
    let adjoint = gradient(&run, &loss).unwrap();
    // Reference: forward sensitivities on the same steps, contracted.
    let forward = jacobian(&run, Method::ForwardOnStateSteps)
        .unwrap()
        .loss_gradient(&loss)
        .unwrap();
    assert!((adjoint.value - forward.value).abs() < 1e-12);
    for (a, f) in adjoint.concatenated().iter().zip(forward.concatenated()) {
        assert!((a - f).abs() < 1e-10 * f.abs().max(1.0), "{a} vs {f}");
    }
}

#[test]
fn an_index_the_run_does_not_reach_is_an_error() {
    let system = ball();
    let run = problem(&system);
    for of in ["event.1.time", "event.-2.time", "observation.0.h"] {
        let loss = terms(vec![Term::new("final.h", 1.0), Term::new(of, 1.0)]);
        let err = gradient(&run, &loss).unwrap_err();
        assert_eq!(err.kind(), "invalid_option", "{err}");
        let text = err.to_string();
        assert!(text.contains("loss[1].of"), "{text}");
        assert!(text.contains(of), "{text}");
        assert!(
            text.contains("the run has 1 events") || text.contains("the run has 0 observations"),
            "{text}"
        );
        let err = jacobian(&run, Method::Forward)
            .unwrap()
            .loss_gradient(&loss)
            .unwrap_err();
        assert_eq!(err.kind(), "invalid_option", "{err}");
    }
}

#[test]
fn bad_terms_are_refused_when_the_loss_is_made() {
    let system = ball();
    let err = LossTerms::new(vec![Term::new("final.x", 1.0)], &system).unwrap_err();
    assert_eq!(err.kind(), "unknown_name");
    assert!(err.to_string().contains("h, v"), "{err}");
    for of in [
        "final",
        "event.0.state",
        "event.a.time",
        "observation.1",
        "h",
    ] {
        let err = LossTerms::new(vec![Term::new(of, 1.0)], &system).unwrap_err();
        assert_eq!(err.kind(), "invalid_option", "{of}: {err}");
        assert!(err.to_string().contains("loss[0].of"), "{err}");
    }
    let err = LossTerms::new(vec![Term::new("final.h", f64::NAN)], &system).unwrap_err();
    assert!(err.to_string().contains("loss[0].weight"), "{err}");
}

#[test]
fn terms_round_trip_through_serde() {
    let json =
        r#"[{"of":"final.h","weight":1.0},{"of":"event.-1.time","weight":0.5,"target":0.25}]"#;
    let list: Vec<Term> = serde_json::from_str(json).unwrap();
    assert_eq!(list[1], Term::new("event.-1.time", 0.5).with_target(0.25));
    let loss = LossTerms::new(list, &ball()).unwrap();
    assert_eq!(serde_json::to_string(&loss).unwrap(), json);
}

#[test]
fn a_first_firing_term_reads_the_transitions_first_event() {
    let system = ball();
    let run = problem(&system);
    let first = gradient(&run, &terms(vec![Term::new("first.bounce.time", 1.0)])).unwrap();
    let indexed = gradient(&run, &terms(vec![Term::new("event.0.time", 1.0)])).unwrap();
    // The closed form t1 = sqrt(2 H0 / G), dt1/dh0 = 1 / (g t1); the first
    // bounce is event 0, so both terms read the same number.
    let t1 = crate::fixtures::t1();
    assert!((first.value - t1).abs() < 1e-9, "{}", first.value);
    assert!((first.derivative("initial.h").unwrap() - 1.0 / (G * t1)).abs() < 1e-9);
    assert_eq!(first.concatenated(), indexed.concatenated());
}

#[test]
fn a_first_firing_term_of_a_later_transition_skips_the_earlier_events() {
    // Over three bounces the first bounce is still event 0: the term reads
    // t1 (closed form), not the last event as `event.-1.time` does.
    let system = ball();
    let run = Problem::new(&system, vec![H0, 0.0], vec![G, E], 3.0)
        .with_solver(SolverChoice::dopri5(1e-12));
    let first = gradient(&run, &terms(vec![Term::new("first.bounce.time", 1.0)])).unwrap();
    let last = gradient(&run, &terms(vec![Term::new("event.-1.time", 1.0)])).unwrap();
    let t1 = crate::fixtures::t1();
    assert!((first.value - t1).abs() < 1e-9, "{}", first.value);
    assert!(
        last.value > first.value + 0.5,
        "{} {}",
        last.value,
        first.value
    );
}

#[test]
fn a_transition_that_does_not_fire_has_no_first_time() {
    let system = ball();
    let short = Problem::new(&system, vec![H0, 0.0], vec![G, E], 0.1)
        .with_solver(SolverChoice::dopri5(1e-12));
    let loss = terms(vec![Term::new("first.bounce.time", 1.0)]);
    let err = gradient(&short, &loss).unwrap_err();
    assert_eq!(err.kind(), "invalid_option", "{err}");
    let text = err.to_string();
    assert!(
        text.contains("loss[0].of") && text.contains("does not fire"),
        "{text}"
    );

    let err = LossTerms::new(vec![Term::new("first.roll.time", 1.0)], &system).unwrap_err();
    assert_eq!(err.kind(), "unknown_name");
    assert!(err.to_string().contains("bounce"), "{err}");
}

#[test]
fn a_first_firing_the_record_dropped_is_an_error() {
    // Three bounces, only the last one kept: the first bounce is not in
    // the record, so its time cannot be read.
    let system = ball();
    let run = Problem::new(&system, vec![H0, 0.0], vec![G, E], 3.0)
        .with_solver(SolverChoice::dopri5(1e-12))
        .with_event_options(ia_events::EventOptions {
            record: ia_events::EventRecording::Last(1),
            ..Default::default()
        });
    let loss = terms(vec![Term::new("first.bounce.time", 1.0)]);
    let err = gradient(&run, &loss).unwrap_err();
    assert_eq!(err.kind(), "invalid_option", "{err}");
    assert!(err.to_string().contains("\"events\": \"all\""), "{err}");
}
