//! [`ClosedFormModel`]: one entry of the registry, a model's names and the
//! function that evaluates its closed form.

use super::error::ClosedFormError;
use super::solution::{wrt_labels, ClosedFormSolution};

/// How a registry entry evaluates its closed form: `(initial_state, params,
/// initial_mode, t_end, max_events)` in the entry's orders.
pub(super) type ClosedFormFn =
    fn(&[f64], &[f64], Option<&str>, f64, usize) -> Result<ClosedFormSolution, ClosedFormError>;

/// A model with a closed form: the names of its states, parameters and
/// modes, in the order the closed form takes and returns them, and the
/// function that evaluates it. The registry [`MODELS`](super::MODELS) lists
/// one per model; two entries are equal when their names are.
#[derive(Clone, Copy, Debug)]
pub struct ClosedFormModel {
    /// Model name, as the dispatcher [`closed_form`](super::closed_form)
    /// takes it (and as `ia_models::by_name` knows it).
    pub name: &'static str,
    /// State names, in order.
    pub states: &'static [&'static str],
    /// Parameter names, in order.
    pub params: &'static [&'static str],
    /// Mode names (empty for single-mode models).
    pub modes: &'static [&'static str],
    pub(super) evaluate: ClosedFormFn,
}

impl PartialEq for ClosedFormModel {
    fn eq(&self, other: &Self) -> bool {
        self.name == other.name
    }
}

impl Eq for ClosedFormModel {}

impl ClosedFormModel {
    /// Column labels of the Jacobians: `"initial.<state>"` for every state,
    /// then `"param.<p>"` for every parameter.
    pub fn wrt(&self) -> Vec<String> {
        wrt_labels(self.states, self.params)
    }

    /// The closed form at `initial_state` and `params` (in this entry's
    /// orders) over `[0, t_end]`, with at most `max_events` events.
    /// `initial_mode` is required for a model with modes and ignored by the
    /// single-mode ones.
    pub fn solve(
        &self,
        initial_state: &[f64],
        params: &[f64],
        initial_mode: Option<&str>,
        t_end: f64,
        max_events: usize,
    ) -> Result<ClosedFormSolution, ClosedFormError> {
        (self.evaluate)(initial_state, params, initial_mode, t_end, max_events)
    }
}
