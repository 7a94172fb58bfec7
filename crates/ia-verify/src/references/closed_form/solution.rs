//! What a closed form returns: the trace of one evaluation in any
//! [`Scalar`](ia_core::Scalar), and the solution with its exact Jacobians.

use super::error::ClosedFormError;
use ia_core::num_dual::Dual64;
use serde::{Deserialize, Serialize};

/// A closed-form trajectory summary in any [`Scalar`](ia_core::Scalar): with [`Dual64`] every
/// entry carries its derivative along the seeded direction.
#[derive(Clone, Debug, PartialEq)]
pub struct Trace<S> {
    /// State at `t_end`, in the model's state order.
    pub final_state: Vec<S>,
    /// Times of the events applied before `t_end`, increasing.
    pub event_times: Vec<S>,
    /// Mode at `t_end` (`None` for single-mode models).
    pub final_mode: Option<&'static str>,
}

/// Final state, event times and their exact Jacobians, from a closed form.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ClosedFormSolution {
    /// Model name.
    pub model: String,
    /// State names, the row order of [`Self::jacobian`].
    pub state_names: Vec<String>,
    /// Parameter names.
    pub param_names: Vec<String>,
    /// State at `t_end`.
    pub final_state: Vec<f64>,
    /// Mode at `t_end` (`None` for single-mode models).
    pub final_mode: Option<String>,
    /// Times of the events before `t_end`, increasing.
    pub event_times: Vec<f64>,
    /// `d final_state[i] / d wrt[j]`: rows are final-state entries, columns
    /// follow [`Self::wrt`].
    pub jacobian: Vec<Vec<f64>>,
    /// `d event_times[k] / d wrt[j]`: one row per event, columns follow
    /// [`Self::wrt`].
    pub event_time_jacobian: Vec<Vec<f64>>,
    /// Column labels: `"initial.<state>"` then `"param.<p>"`.
    pub wrt: Vec<String>,
}

impl ClosedFormSolution {
    /// Index of a state by name.
    pub fn state_index(&self, state: &str) -> Option<usize> {
        self.state_names.iter().position(|s| s == state)
    }

    /// Index of a Jacobian column by label (`"initial.x"`, `"param.g"`).
    pub fn wrt_index(&self, wrt: &str) -> Option<usize> {
        self.wrt.iter().position(|w| w == wrt)
    }

    /// `d final_state[state] / d wrt`, by names.
    pub fn jacobian_entry(&self, state: &str, wrt: &str) -> Option<f64> {
        Some(self.jacobian[self.state_index(state)?][self.wrt_index(wrt)?])
    }

    /// `d event_times[event] / d wrt`, by column label.
    pub fn event_time_derivative(&self, event: usize, wrt: &str) -> Option<f64> {
        Some(
            *self
                .event_time_jacobian
                .get(event)?
                .get(self.wrt_index(wrt)?)?,
        )
    }
}

/// Column labels of the Jacobians: `"initial.<state>"` for every state, then
/// `"param.<p>"` for every parameter.
pub(super) fn wrt_labels<S: AsRef<str>>(states: &[S], params: &[S]) -> Vec<String> {
    ia_core::Wrt::labels(states, params)
}

/// Evaluates a trace with `f64` and once per input direction with [`Dual64`],
/// and assembles the Jacobians; the names label the rows and columns.
pub(super) fn differentiate_named(
    model: &str,
    state_names: Vec<String>,
    param_names: Vec<String>,
    x0: &[f64],
    p: &[f64],
    trace: impl Fn(&[f64], &[f64]) -> Result<Trace<f64>, ClosedFormError>,
    trace_dual: impl Fn(&[Dual64], &[Dual64]) -> Result<Trace<Dual64>, ClosedFormError>,
) -> Result<ClosedFormSolution, ClosedFormError> {
    let primal = trace(x0, p)?;
    let n = x0.len();
    let cols = n + p.len();
    let mut jacobian = vec![vec![0.0; cols]; primal.final_state.len()];
    let mut event_time_jacobian = vec![vec![0.0; cols]; primal.event_times.len()];
    for j in 0..cols {
        let seed = |i: usize, v: f64| Dual64::new(v, if i == j { 1.0 } else { 0.0 });
        let xd: Vec<Dual64> = x0.iter().enumerate().map(|(i, &v)| seed(i, v)).collect();
        let pd: Vec<Dual64> = p.iter().enumerate().map(|(i, &v)| seed(n + i, v)).collect();
        let dual = trace_dual(&xd, &pd)?;
        // Branches are taken on real parts, so every direction follows the
        // primal's event sequence.
        debug_assert_eq!(dual.event_times.len(), primal.event_times.len());
        for (row, v) in jacobian.iter_mut().zip(&dual.final_state) {
            row[j] = v.eps;
        }
        for (row, v) in event_time_jacobian.iter_mut().zip(&dual.event_times) {
            row[j] = v.eps;
        }
    }
    let wrt = wrt_labels(&state_names, &param_names);
    Ok(ClosedFormSolution {
        model: model.to_string(),
        state_names,
        param_names,
        final_state: primal.final_state,
        final_mode: primal.final_mode.map(str::to_string),
        event_times: primal.event_times,
        jacobian,
        event_time_jacobian,
        wrt,
    })
}
