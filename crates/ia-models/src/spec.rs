//! The description of a ready model ([`ModelSpec`]): names, units and
//! defaults of its states and parameters, its modes and transitions.

use ia_core::{Direction, HybridError};
use serde::{Deserialize, Serialize};

/// A named scalar with its default value and unit: a state entry or a
/// parameter.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Quantity {
    /// Name, as used by [`HybridSystem::state_names`](ia_core::HybridSystem::state_names) or
    /// [`HybridSystem::param_names`](ia_core::HybridSystem::param_names).
    pub name: String,
    /// Default value (the default initial state for a state entry).
    pub default: f64,
    /// Unit, in plain text (`"m/s"`, `"1"` for dimensionless).
    pub unit: String,
}

/// A transition as described in a [`ModelSpec`].
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TransitionSpec {
    /// Transition name.
    pub name: String,
    /// Source mode name.
    pub from: String,
    /// Target mode name.
    pub to: String,
    /// Direction in which the guard crosses zero to fire.
    pub direction: Direction,
}

/// The description of a ready model: everything a scenario file or a script
/// needs to drive it without reading Rust.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ModelSpec {
    /// Catalogue name (for example `"ball2d-flat"`).
    pub name: String,
    /// One-paragraph description: the equations in words.
    pub description: String,
    /// State entries, in the system's order, with default initial values.
    pub states: Vec<Quantity>,
    /// Parameters, in the system's order, with default values.
    pub params: Vec<Quantity>,
    /// Mode names, in the system's order.
    pub modes: Vec<String>,
    /// The mode a default run starts in.
    pub initial_mode: String,
    /// Default run length (end time of a run started at `t = 0`).
    pub t_end: f64,
    /// Transitions, in the system's order.
    pub transitions: Vec<TransitionSpec>,
}

impl ModelSpec {
    /// The default initial state, in state order.
    pub fn default_state(&self) -> Vec<f64> {
        self.states.iter().map(|q| q.default).collect()
    }

    /// The default parameter values, in parameter order.
    pub fn default_params(&self) -> Vec<f64> {
        self.params.iter().map(|q| q.default).collect()
    }

    /// State names, in order.
    pub fn state_names(&self) -> Vec<String> {
        self.states.iter().map(|q| q.name.clone()).collect()
    }

    /// Parameter names, in order.
    pub fn param_names(&self) -> Vec<String> {
        self.params.iter().map(|q| q.name.clone()).collect()
    }

    /// Transition names, in order.
    pub fn transition_names(&self) -> Vec<String> {
        self.transitions.iter().map(|t| t.name.clone()).collect()
    }

    /// Index of the state entry named `name`, or
    /// [`HybridError::UnknownName`] listing the valid names.
    pub fn state_index(&self, name: &str) -> Result<usize, HybridError> {
        ia_core::name_index("state", &self.state_names(), name)
    }

    /// Index of the parameter named `name`, or
    /// [`HybridError::UnknownName`] listing the valid names.
    pub fn param_index(&self, name: &str) -> Result<usize, HybridError> {
        ia_core::name_index("parameter", &self.param_names(), name)
    }

    /// Index of the mode named `name`, or [`HybridError::UnknownName`]
    /// listing the valid names.
    pub fn mode_index(&self, name: &str) -> Result<usize, HybridError> {
        ia_core::name_index("mode", &self.modes, name)
    }

    /// Index of the initial mode.
    pub fn initial_mode_index(&self) -> usize {
        self.modes
            .iter()
            .position(|m| *m == self.initial_mode)
            .expect("a catalogue spec names one of its modes as initial mode")
    }
}
