//! A declared loss: a sum of weighted terms, each reading one number of a
//! run (a final state entry, an observed state entry or an event time).
//!
//! A term is written as text in the form the command line's `loss` key uses:
//!
//! * `final.<state>`: the state entry at the end of the run;
//! * `observation.<index>.<state>`: the state entry at observation `index`;
//! * `event.<index>.time`: the time of event `index`;
//! * `first.<transition>.time`: the time transition `<transition>` first
//!   fires (a spiking neuron's first spike, a ball's first impact on one
//!   wall).
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

use ia_core::{name_index, FirstFiring, HybridError, HybridSystem, Trajectory};
use serde::{Deserialize, Serialize};

/// The forms a [`Term`]'s `of` takes, as messages list them.
pub const TERM_FORMS: &str = "final.<state>, observation.<index>.<state>, event.<index>.time (index from 0, negative from the end) or first.<transition>.time";

/// A scalar loss of a run: returns its value and writes its partial
/// derivatives with respect to what it reads into `seeds` (which arrive
/// zeroed and shaped for the trajectory).
pub trait Loss {
    /// Checks the loss against the system's state dimension before the run
    /// (for example an index it reads); the default accepts every loss.
    /// Seeds of the wrong shape are refused after [`Loss::evaluate`] in any
    /// case.
    fn check(&self, _state_dim: usize) -> Result<(), HybridError> {
        Ok(())
    }

    /// Checks the loss against the run, after it and before
    /// [`Loss::evaluate`] (for example that an event it reads happened); the
    /// default accepts every run.
    fn check_run(&self, _trajectory: &Trajectory) -> Result<(), HybridError> {
        Ok(())
    }

    /// Value of the loss; partials into `seeds`.
    fn evaluate(&self, trajectory: &Trajectory, seeds: &mut LossSeeds) -> f64;
}

impl<F: Fn(&Trajectory, &mut LossSeeds) -> f64> Loss for F {
    fn evaluate(&self, trajectory: &Trajectory, seeds: &mut LossSeeds) -> f64 {
        self(trajectory, seeds)
    }
}

/// The loss `x_i(T)`: one component of the final state.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FinalComponent(pub usize);

impl Loss for FinalComponent {
    fn check(&self, state_dim: usize) -> Result<(), HybridError> {
        if self.0 < state_dim {
            Ok(())
        } else {
            Err(HybridError::invalid(
                "FinalComponent index",
                self.0,
                format!("must name a state entry: below the state dimension {state_dim}"),
            ))
        }
    }

    /// `x_i(T)`; NaN (and no seed) for an index out of range, which
    /// [`Loss::check`] refuses before any run.
    fn evaluate(&self, trajectory: &Trajectory, seeds: &mut LossSeeds) -> f64 {
        if let Some(seed) = seeds.final_state.get_mut(self.0) {
            *seed = 1.0;
        }
        trajectory
            .final_state
            .get(self.0)
            .copied()
            .unwrap_or(f64::NAN)
    }
}

/// Cotangents of a scalar loss with respect to what it reads: the final
/// state, the states at observation times and the event times.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct LossSeeds {
    /// `dL/dx(T)`, n entries.
    pub final_state: Vec<f64>,
    /// `dL/dx(t_obs)`, one vector of n per observation.
    pub observations: Vec<Vec<f64>>,
    /// `dL/dt*`, one per event.
    pub event_times: Vec<f64>,
}

impl LossSeeds {
    /// Zero seeds shaped for `trajectory`.
    pub fn zeros(trajectory: &Trajectory) -> Self {
        let n = trajectory.final_state.len();
        Self {
            final_state: vec![0.0; n],
            observations: vec![vec![0.0; n]; trajectory.observations.len()],
            event_times: vec![0.0; trajectory.events.len()],
        }
    }

    /// [`LossSeeds::zeros`] in the vectors of `self` (an earlier pass's):
    /// the same zero seeds, without allocating the room `self` has.
    pub(crate) fn zeroed_for(mut self, trajectory: &Trajectory) -> Self {
        let n = trajectory.final_state.len();
        let zero = |v: &mut Vec<f64>, len: usize| {
            v.clear();
            v.resize(len, 0.0);
        };
        zero(&mut self.final_state, n);
        zero(&mut self.event_times, trajectory.events.len());
        let observed = trajectory.observations.len();
        self.observations.truncate(observed);
        for v in &mut self.observations {
            zero(v, n);
        }
        self.observations.resize_with(observed, || vec![0.0; n]);
        self
    }
}

pub(crate) fn check_seeds(seeds: &LossSeeds, trajectory: &Trajectory) -> Result<(), HybridError> {
    let n = trajectory.final_state.len();
    let shapes = [
        ("loss seeds for the final state", n, seeds.final_state.len()),
        (
            "loss seeds for the observations",
            trajectory.observations.len(),
            seeds.observations.len(),
        ),
        (
            "loss seeds for the event times",
            trajectory.events.len(),
            seeds.event_times.len(),
        ),
    ];
    let observed = seeds
        .observations
        .iter()
        .map(|o| ("loss seeds for an observed state", n, o.len()));
    for (what, expected, found) in shapes.into_iter().chain(observed) {
        if expected != found {
            return Err(HybridError::DimensionMismatch {
                what: what.into(),
                expected,
                found,
            });
        }
    }
    let all = seeds
        .final_state
        .iter()
        .chain(seeds.observations.iter().flatten())
        .chain(&seeds.event_times);
    if all.clone().any(|v| !v.is_finite()) {
        return Err(HybridError::NonFinite {
            what: "loss seed".into(),
            time: trajectory.final_time,
            trajectory: None,
        });
    }
    Ok(())
}

/// One term of a [`LossTerms`], as written (`{"of": ..., "weight": ...,
/// "target": ...}`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Term {
    /// What the term reads: `final.<state>`, `observation.<index>.<state>`,
    /// `event.<index>.time` or `first.<transition>.time`.
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
    FirstFiring { transition: usize },
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
        let transitions: Vec<String> = system
            .transitions()
            .iter()
            .map(|t| t.name.to_string())
            .collect();
        let transition = |k: usize, name: &str| {
            name_index(&format!("loss[{k}].of transition"), &transitions, name)
        };
        let mut reads = Vec::with_capacity(terms.len());
        for (k, term) in terms.iter().enumerate() {
            let form = || {
                HybridError::invalid(
                    format!("loss[{k}].of"),
                    format!("'{}'", term.of),
                    format!("must be {TERM_FORMS}"),
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
                ["first", name, "time"] => Read::FirstFiring {
                    transition: transition(k, name)?,
                },
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
                Read::FirstFiring { transition } => {
                    let why = match trajectory.first_firing(transition) {
                        FirstFiring::At(_) => continue,
                        FirstFiring::Never => {
                            "the transition does not fire in the run, so it has no first time; read it from a run in which it fires (a longer t_end, other parameters)".to_string()
                        }
                        FirstFiring::NotRecorded => format!(
                            "the transition does not fire among the last {} events recorded, and the run's earlier events were not kept; record them (\"record\": {{\"events\": \"all\"}})",
                            trajectory.events.len()
                        ),
                    };
                    return Err(HybridError::invalid(
                        format!("loss[{k}].of"),
                        format!("'{}'", term.of),
                        why,
                    ));
                }
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
                Read::FirstFiring { transition } => match trajectory.first_firing(transition) {
                    FirstFiring::At(i) => (
                        Some(trajectory.events[i].time),
                        seeds.event_times.get_mut(i),
                    ),
                    FirstFiring::Never | FirstFiring::NotRecorded => (None, None),
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
    use super::*;

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
}
