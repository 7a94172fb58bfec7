//! A declared loss: a sum of weighted terms, each reading one number of a
//! run (a final state entry, an observed state entry or an event time).
//!
//! A term is written as text in the form the command line's `loss` key uses:
//!
//! * `final.<state>`: the state entry at the end of the run;
//! * `observation.<index>.<state>`: the state entry at observation `index`;
//! * `event.<index>.time`: the time of event `index`.
//!
//! Indices count from 0; a negative index counts from the end (`-1` is the
//! last). A term contributes `weight * value`, or `weight * (value - target)^2`
//! when it has a `target`. State names are checked against the system when
//! the loss is made ([`LossTerms::new`]); indices are checked against the run
//! ([`Loss::check_run`]), since only the run knows how many events it has.
//!
//! ```
//! use ia_adjoint::prelude::*;
//! use ia_adjoint::{LossTerms, Term};
//!
//! let model = ia_models::by_name("ball1d").unwrap();
//! let system = model.system();
//! let problem = Problem::new(&system, vec![1.0, 0.0], vec![9.81, 0.8, 0.0], 1.0)
//!     .with_solver(SolverChoice::dopri5(1e-12));
//! // L = t1, the time of the first impact: dt1/dh0 = 1 / (g t1).
//! let loss = LossTerms::new(vec![Term::new("event.0.time", 1.0)], &system).unwrap();
//! let grad = gradient(&problem, &loss).unwrap();
//! let t1 = (2.0f64 / 9.81).sqrt();
//! assert!((grad.value - t1).abs() < 1e-9);
//! assert!((grad.derivative("initial.h").unwrap() - 1.0 / (9.81 * t1)).abs() < 1e-9);
//! // An unknown state is refused when the loss is made.
//! let err = LossTerms::new(vec![Term::new("final.z", 1.0)], &system).unwrap_err();
//! assert_eq!(err.kind(), "unknown_name");
//! ```

use crate::{Loss, LossSeeds};
use ia_core::{name_index, HybridError, HybridSystem, Trajectory};
use serde::{Deserialize, Serialize};

/// One term of a [`LossTerms`], as written (`{"of": ..., "weight": ...,
/// "target": ...}`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Term {
    /// What the term reads: `final.<state>`, `observation.<index>.<state>`
    /// or `event.<index>.time`.
    pub of: String,
    /// The weight `w`.
    pub weight: f64,
    /// With a target `y`, the term is `w (value - y)^2`; without, `w value`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target: Option<f64>,
}

impl Term {
    /// The term `weight * value` of `of`.
    pub fn new(of: impl Into<String>, weight: f64) -> Self {
        Self {
            of: of.into(),
            weight,
            target: None,
        }
    }

    /// The same term as `weight * (value - target)^2`.
    pub fn with_target(mut self, target: f64) -> Self {
        self.target = Some(target);
        self
    }
}

/// What a term reads, resolved against the system.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Read {
    Final { state: usize },
    Observation { index: i64, state: usize },
    EventTime { index: i64 },
}

/// A loss that sums [`Term`]s: implements [`Loss`], so [`crate::gradient`]
/// returns its gradient in one backward pass. Serializes as the list of its
/// terms; made from a list with [`LossTerms::new`], which checks the names.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(transparent)]
pub struct LossTerms {
    terms: Vec<Term>,
    #[serde(skip)]
    reads: Vec<Read>,
    #[serde(skip)]
    state_dim: usize,
}

/// `index` (negative from the end) into a list of `len`, if it is in range.
fn resolve(index: i64, len: usize) -> Option<usize> {
    let len = i64::try_from(len).ok()?;
    let i = if index < 0 { len + index } else { index };
    (0..len).contains(&i).then_some(i as usize)
}

/// Where event `index` of the whole run (negative from its end) sits among
/// the events `trajectory` records (the last ones of the run when not all
/// are kept, [`ia_events::EventRecording`]).
fn resolve_event(index: i64, trajectory: &Trajectory) -> Option<usize> {
    resolve(index, trajectory.stats.events)?.checked_sub(trajectory.first_recorded_event())
}

impl LossTerms {
    /// Checks every term against `system`: the form of `of`, the state names
    /// (an unknown one is an error listing the valid names) and that weights
    /// and targets are finite. Messages name a term as `loss[k].of`.
    pub fn new(terms: Vec<Term>, system: &HybridSystem) -> Result<Self, HybridError> {
        let states = system.state_names();
        let state = |k: usize, name: &str| name_index(&format!("loss[{k}].of state"), states, name);
        let mut reads = Vec::with_capacity(terms.len());
        for (k, term) in terms.iter().enumerate() {
            let form = || {
                HybridError::invalid(
                    format!("loss[{k}].of"),
                    format!("'{}'", term.of),
                    "must be final.<state>, observation.<index>.<state> or event.<index>.time (index from 0, negative from the end)",
                )
            };
            let parts: Vec<&str> = term.of.split('.').collect();
            let index = |text: &str| text.parse::<i64>().map_err(|_| form());
            let read = match parts.as_slice() {
                ["final", s] => Read::Final {
                    state: state(k, s)?,
                },
                ["observation", i, s] => Read::Observation {
                    index: index(i)?,
                    state: state(k, s)?,
                },
                ["event", i, "time"] => Read::EventTime { index: index(i)? },
                _ => return Err(form()),
            };
            if !term.weight.is_finite() {
                return Err(HybridError::invalid_num(
                    format!("loss[{k}].weight"),
                    term.weight,
                    "must be a finite number",
                ));
            }
            if let Some(t) = term.target.filter(|t| !t.is_finite()) {
                return Err(HybridError::invalid_num(
                    format!("loss[{k}].target"),
                    t,
                    "must be a finite number",
                ));
            }
            reads.push(read);
        }
        Ok(Self {
            terms,
            reads,
            state_dim: system.state_dim(),
        })
    }

    /// The terms, as given.
    pub fn terms(&self) -> &[Term] {
        &self.terms
    }
}

impl Loss for LossTerms {
    fn check(&self, state_dim: usize) -> Result<(), HybridError> {
        if state_dim == self.state_dim {
            Ok(())
        } else {
            Err(HybridError::DimensionMismatch {
                what: "state dimension of the system the loss was made for".into(),
                expected: self.state_dim,
                found: state_dim,
            })
        }
    }

    fn check_run(&self, trajectory: &Trajectory) -> Result<(), HybridError> {
        for (k, (term, read)) in self.terms.iter().zip(&self.reads).enumerate() {
            let (index, len, what, fix) = match *read {
                Read::Final { .. } => continue,
                Read::EventTime { index }
                    if resolve(index, trajectory.stats.events).is_some()
                        && resolve_event(index, trajectory).is_none() =>
                {
                    return Err(HybridError::invalid(
                        format!("loss[{k}].of"),
                        format!("'{}'", term.of),
                        format!(
                            "event {index} of the run's {} is not recorded (only the last {} are); record it (\"record\": {{\"events\": \"all\"}}, or a larger count) or read a later event",
                            trajectory.stats.events,
                            trajectory.events.len()
                        ),
                    ));
                }
                Read::Observation { index, .. } => (
                    index,
                    trajectory.observations.len(),
                    "observations",
                    "read an existing one or add times to 'observe'",
                ),
                Read::EventTime { index } => (
                    index,
                    trajectory.stats.events,
                    "events",
                    "read an existing one or change the run (a longer t_end gives more events)",
                ),
            };
            if resolve(index, len).is_none() {
                let range = match len {
                    0 => String::new(),
                    1 => " (index 0 or -1)".to_string(),
                    n => format!(" (indices 0 to {} or -{n} to -1)", n - 1),
                };
                return Err(HybridError::invalid(
                    format!("loss[{k}].of"),
                    format!("'{}'", term.of),
                    format!(
                        "the run has {len} {what}{range}, so index {index} does not exist; {fix}"
                    ),
                ));
            }
        }
        Ok(())
    }

    /// The sum of the terms; a term whose index the run does not reach
    /// (refused by [`Loss::check_run`] first) contributes NaN.
    fn evaluate(&self, trajectory: &Trajectory, seeds: &mut LossSeeds) -> f64 {
        let mut total = 0.0;
        for (term, read) in self.terms.iter().zip(&self.reads) {
            let (value, seed) = match *read {
                Read::Final { state } => (
                    trajectory.final_state.get(state).copied(),
                    seeds.final_state.get_mut(state),
                ),
                Read::Observation { index, state } => {
                    match resolve(index, trajectory.observations.len()) {
                        Some(i) => (
                            trajectory.observations[i].state.get(state).copied(),
                            seeds.observations.get_mut(i).and_then(|o| o.get_mut(state)),
                        ),
                        None => (None, None),
                    }
                }
                Read::EventTime { index } => match resolve_event(index, trajectory) {
                    Some(i) => (
                        Some(trajectory.events[i].time),
                        seeds.event_times.get_mut(i),
                    ),
                    None => (None, None),
                },
            };
            let Some(value) = value else {
                return f64::NAN;
            };
            let (term_value, derivative) = match term.target {
                None => (term.weight * value, term.weight),
                Some(y) => (
                    term.weight * (value - y) * (value - y),
                    2.0 * term.weight * (value - y),
                ),
            };
            total += term_value;
            if let Some(seed) = seed {
                *seed += derivative;
            }
        }
        total
    }
}

#[cfg(test)]
mod tests {
    //! References: the closed forms of the ball of `crate::tests` (dropped
    //! from `H0` at rest, one impact at `t1 = sqrt(2 H0 / G)` before `T`),
    //! derived by hand there, and the definition of the terms.
    use super::*;
    use crate::tests::{ball, dh_final, problem, E, G, H0, T};
    use crate::{gradient, jacobian, Method};

    #[test]
    fn negative_indices_count_from_the_end() {
        // Reference: the definition (-1 the last, -len the first).
        assert_eq!(resolve(-1, 3), Some(2));
        assert_eq!(resolve(-3, 3), Some(0));
        assert_eq!(resolve(-4, 3), None);
        assert_eq!(resolve(2, 3), Some(2));
        assert_eq!(resolve(3, 3), None);
        assert_eq!(resolve(0, 0), None);
    }

    fn terms(list: Vec<Term>) -> LossTerms {
        LossTerms::new(list, &ball()).unwrap()
    }

    #[test]
    fn a_final_term_is_weight_times_the_entry() {
        let system = ball();
        let run = problem(&system);
        let grad = gradient(&run, &terms(vec![Term::new("final.h", 3.0)])).unwrap();
        // h(T) = e w (T - t1) - g (T - t1)^2 / 2 with w = g t1.
        let t1 = crate::tests::t1();
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
        let t1 = crate::tests::t1();
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
                text.contains("the run has 1 events")
                    || text.contains("the run has 0 observations"),
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
}
