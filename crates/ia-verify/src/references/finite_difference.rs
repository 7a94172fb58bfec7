//! Finite-difference references for hybrid runs that have no closed form.
//!
//! [`fd_jacobian`] perturbs each initial-state entry and each parameter
//! `theta_j` in turn, re-runs [`ia_events::simulate`] and differentiates the
//! final state and the event times by central differences, extrapolated once
//! (Richardson):
//!
//! ```text
//! h_j   = max(|theta_j|, 1) * relative_step            (relative_step = 1e-3)
//! D(h)  = (F(theta + h e_j) - F(theta - h e_j)) / (2 h)
//! R     = (4 D(h/2) - D(h)) / 3                         (error O(h^4))
//! ```
//!
//! Each entry comes with an **error estimate**, the sum of
//!
//! * the truncation estimate `|D(h/2) - D(h)| / 3`, which is the estimated
//!   error of `D(h/2)` and so a conservative bound on that of `R`, and
//! * the solver-noise bound `3 eps_i / h_j`, with
//!   `eps_i = solver_noise * max(|F_i|, 1)`: each run is accurate only to
//!   about the solver tolerance, and `R` combines four runs with weights
//!   summing to `3 / h` in absolute value.
//!
//! The runs use adaptive Dormand-Prince at `rtol = atol = 1e-12` (the
//! truncation error of the differences, about `h^2 ~ 1e-6` before
//! extrapolation, lies far above the solver's), whatever solver the problem
//! names. A perturbation that changes the number of events, or the sequence
//! of transitions, makes the run non-differentiable across the perturbation:
//! that is reported as [`FdError::EventSequenceChanged`], naming the entry.
//!
//! The rule the verification uses to compare a Jacobian `J` with the
//! reference is `|J - R| <= FD_SAFETY * estimate` (see [`FdJacobian::agrees`]).
//!
//! ```
//! use ia_verify::finite_difference::{fd_jacobian, FdOptions};
//! let model = ia_models::by_name("ball2d-flat").unwrap();
//! let system = model.system();
//! let spec = model.spec();
//! let problem = ia_events::Problem::new(&system, spec.default_state(), spec.default_params(), 2.0);
//! let fd = fd_jacobian(&problem, &FdOptions::default()).unwrap();
//! // d vx(T) / d vx0 = mu^3 (three impacts).
//! let (value, estimate) = fd.final_entry("vx", "initial.vx").unwrap();
//! assert!((value - 0.7f64.powi(3)).abs() <= 3.0 * estimate + 1e-12);
//! ```

use ia_core::{HybridError, HybridSystem, Trajectory};
use ia_events::{simulate, Problem, SolverChoice};
use serde::{Deserialize, Serialize};

/// Comparisons with a finite-difference reference pass when the difference
/// is at most this many times the reference's error estimate.
pub const FD_SAFETY: f64 = 3.0;

/// Settings of [`fd_jacobian`].
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct FdOptions {
    /// The solver of the perturbed runs (Dormand-Prince at
    /// `rtol = atol = 1e-12` by default, replacing the problem's).
    pub solver: SolverChoice,
    /// `h_j = max(|theta_j|, 1) * relative_step`.
    pub relative_step: f64,
    /// Assumed accuracy of one run, relative to `max(|value|, 1)`: the noise
    /// floor of the error estimate.
    pub solver_noise: f64,
}

impl Default for FdOptions {
    fn default() -> Self {
        Self {
            solver: SolverChoice::dopri5(1e-12),
            relative_step: 1e-3,
            solver_noise: 1e-11,
        }
    }
}

/// Why a finite-difference reference could not be computed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum FdError {
    /// A run failed: the nominal one (`entry` is `None`) or a perturbed one.
    #[error("{}: {source}", failed_run(entry))]
    Simulation {
        /// The perturbed entry and the signed step, if any.
        entry: Option<(String, f64)>,
        /// The failure.
        #[source]
        source: HybridError,
    },
    /// A perturbed run has a different number or sequence of events than the
    /// nominal run: the outputs are not differentiable across the step.
    #[error(
        "perturbing {entry} by {step:e} changes the events ({} -> {}: [{}] -> [{}]); \
         the run is not differentiable across that step: use a smaller relative_step \
         or move the run away from the event boundary",
        nominal.len(),
        perturbed.len(),
        nominal.join(", "),
        perturbed.join(", ")
    )]
    EventSequenceChanged {
        /// The perturbed entry (`initial.<state>` or `param.<name>`).
        entry: String,
        /// The signed step.
        step: f64,
        /// Transitions of the nominal run, in order.
        nominal: Vec<String>,
        /// Transitions of the perturbed run, in order.
        perturbed: Vec<String>,
    },
}

/// Which run of [`FdError::Simulation`] failed, in words.
fn failed_run(entry: &Option<(String, f64)>) -> String {
    match entry {
        None => "the nominal run failed".to_string(),
        Some((name, step)) => format!("the run with {name} perturbed by {step:e} failed"),
    }
}

/// A finite-difference Jacobian with an error estimate per entry. Layout as
/// [`crate::references::closed_form::ClosedFormSolution`]: rows are final-state entries
/// (or events), columns follow [`FdJacobian::wrt`].
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct FdJacobian {
    /// State names (row labels of the final Jacobian).
    pub state_names: Vec<String>,
    /// Column labels: `initial.<state>` then `param.<name>`.
    pub wrt: Vec<String>,
    /// The step `h_j` of each column.
    pub steps: Vec<f64>,
    /// Final state of the nominal run.
    pub final_state: Vec<f64>,
    /// Event times of the nominal run.
    pub event_times: Vec<f64>,
    /// Transitions of the nominal run, in order.
    pub transitions: Vec<String>,
    /// `d x_i(T) / d theta_j`.
    pub final_jacobian: Vec<Vec<f64>>,
    /// Error estimate of each entry of `final_jacobian`.
    pub final_error: Vec<Vec<f64>>,
    /// `d t*_k / d theta_j`.
    pub event_time_jacobian: Vec<Vec<f64>>,
    /// Error estimate of each entry of `event_time_jacobian`.
    pub event_time_error: Vec<Vec<f64>>,
}

impl FdJacobian {
    /// `(d x_state(T) / d wrt, error estimate)` by names.
    pub fn final_entry(&self, state: &str, wrt: &str) -> Option<(f64, f64)> {
        let i = self.state_names.iter().position(|s| s == state)?;
        let j = self.wrt.iter().position(|w| w == wrt)?;
        Some((self.final_jacobian[i][j], self.final_error[i][j]))
    }

    /// Whether `value` agrees with the reference `(fd, estimate)`:
    /// `|value - fd| <= FD_SAFETY * estimate`.
    pub fn agrees(value: f64, fd: f64, estimate: f64) -> bool {
        (value - fd).abs() <= FD_SAFETY * estimate
    }
}

fn transitions(system: &HybridSystem, trajectory: &Trajectory) -> Vec<String> {
    trajectory
        .events
        .iter()
        .map(|e| system.transitions()[e.transition].name.clone())
        .collect()
}

/// The outputs of one run: final state, then event times.
struct Outputs {
    final_state: Vec<f64>,
    event_times: Vec<f64>,
}

/// Central-difference Jacobian of the final state and event times of
/// `problem` with respect to its initial state and parameters, Richardson
/// extrapolated, with an error estimate per entry (see the module docs).
/// The problem's solver is replaced by `options.solver`.
pub fn fd_jacobian(problem: &Problem<'_>, options: &FdOptions) -> Result<FdJacobian, FdError> {
    let base = problem.clone().with_solver(options.solver.clone());
    let nominal = simulate(&base).map_err(|source| FdError::Simulation {
        entry: None,
        source,
    })?;
    let nominal_transitions = transitions(problem.system, &nominal);
    let system = problem.system;
    let n = system.state_dim();
    let wrt = system.wrt_names().to_vec();
    let m = wrt.len();
    let theta: Vec<f64> = problem
        .initial_state
        .iter()
        .chain(&problem.params)
        .copied()
        .collect();
    let run = |j: usize, step: f64| -> Result<Outputs, FdError> {
        let mut p = base.clone();
        if j < n {
            p.initial_state[j] += step;
        } else {
            p.params[j - n] += step;
        }
        let tr = simulate(&p).map_err(|source| FdError::Simulation {
            entry: Some((wrt[j].clone(), step)),
            source,
        })?;
        let seq = transitions(problem.system, &tr);
        if seq != nominal_transitions {
            return Err(FdError::EventSequenceChanged {
                entry: wrt[j].clone(),
                step,
                nominal: nominal_transitions.clone(),
                perturbed: seq,
            });
        }
        Ok(Outputs {
            event_times: tr.event_times(),
            final_state: tr.final_state,
        })
    };
    let k = nominal.events.len();
    let mut final_jacobian = vec![vec![0.0; m]; n];
    let mut final_error = vec![vec![0.0; m]; n];
    let mut event_time_jacobian = vec![vec![0.0; m]; k];
    let mut event_time_error = vec![vec![0.0; m]; k];
    let mut steps = Vec::with_capacity(m);
    for j in 0..m {
        let h = theta[j].abs().max(1.0) * options.relative_step;
        steps.push(h);
        let plus = run(j, h)?;
        let minus = run(j, -h)?;
        let plus_half = run(j, 0.5 * h)?;
        let minus_half = run(j, -0.5 * h)?;
        let column = |get: &dyn Fn(&Outputs) -> &[f64],
                      nominal: &[f64],
                      jac: &mut Vec<Vec<f64>>,
                      err: &mut Vec<Vec<f64>>| {
            for i in 0..nominal.len() {
                let d1 = (get(&plus)[i] - get(&minus)[i]) / (2.0 * h);
                let d2 = (get(&plus_half)[i] - get(&minus_half)[i]) / h;
                let extrapolated = (4.0 * d2 - d1) / 3.0;
                let truncation = (d2 - d1).abs() / 3.0;
                let noise = 3.0 * options.solver_noise * nominal[i].abs().max(1.0) / h;
                jac[i][j] = extrapolated;
                err[i][j] = truncation + noise;
            }
        };
        column(
            &|o| &o.final_state,
            &nominal.final_state,
            &mut final_jacobian,
            &mut final_error,
        );
        let times = nominal.event_times();
        column(
            &|o| &o.event_times,
            &times,
            &mut event_time_jacobian,
            &mut event_time_error,
        );
    }
    Ok(FdJacobian {
        state_names: system.state_names().to_vec(),
        wrt,
        steps,
        event_times: nominal.event_times(),
        final_state: nominal.final_state,
        transitions: nominal_transitions,
        final_jacobian,
        final_error,
        event_time_jacobian,
        event_time_error,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Reference: the messages of the hand-written `Display` this derive
    /// replaced, copied from it.
    #[test]
    fn messages_are_unchanged() {
        let failure = || HybridError::DimensionMismatch {
            what: "state".into(),
            expected: 2,
            found: 1,
        };
        let nominal = FdError::Simulation {
            entry: None,
            source: failure(),
        };
        assert_eq!(
            nominal.to_string(),
            format!("the nominal run failed: {}", failure())
        );
        let perturbed = FdError::Simulation {
            entry: Some(("param.g".into(), 0.5)),
            source: failure(),
        };
        assert_eq!(
            perturbed.to_string(),
            format!(
                "the run with param.g perturbed by 5e-1 failed: {}",
                failure()
            )
        );
        assert!(std::error::Error::source(&perturbed).is_some());
        let changed = FdError::EventSequenceChanged {
            entry: "initial.h".into(),
            step: -0.25,
            nominal: vec!["impact".into()],
            perturbed: vec![],
        };
        assert_eq!(
            changed.to_string(),
            "perturbing initial.h by -2.5e-1 changes the events (1 -> 0: [impact] -> []); \
             the run is not differentiable across that step: use a smaller relative_step \
             or move the run away from the event boundary"
        );
        assert!(std::error::Error::source(&changed).is_none());
    }
}
