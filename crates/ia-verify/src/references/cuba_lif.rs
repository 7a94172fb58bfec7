//! The high-precision references of the `cuba-lif` model:
//! `crates/ia-verify/references/cuba_lif.json`, written by the mpmath script
//! beside it (`cuba_lif.py`): small networks solved in closed form per
//! stretch at 60 digits (the crossings bracketed at the one extremum of
//! `V(s)` and found by a bracketing root finder), with the derivatives of
//! every event time and final state entry with respect to every parameter
//! by central differences of step 1e-20. Nothing of the library is in it.

use ia_core::HybridError;
use ia_models::{CubaLif, Model, Size};
use serde::{Deserialize, Serialize};

/// The reference file, compiled in.
pub const CUBA_LIF_JSON: &str = include_str!("../../references/cuba_lif.json");

/// One event of a reference run.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct CubaLifEvent {
    /// The transition's name (`input0`, `spike_h1`, ...).
    pub transition: String,
    /// Its time (ms).
    pub time: f64,
}

/// One reference case: a network, its parameters and run, and the results.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct CubaLifCase {
    /// The case's name.
    pub name: String,
    /// What it shows.
    pub about: String,
    /// `[n_in, n_hidden, n_out]`.
    pub size: Vec<usize>,
    /// End of the run (from `t = 0`, every state 0).
    pub t_end: f64,
    /// Every parameter by name.
    pub params: std::collections::BTreeMap<String, f64>,
    /// The state names, in the model's order.
    pub states: Vec<String>,
    /// The parameter names, in the model's order (the Jacobians' columns).
    pub wrt: Vec<String>,
    /// Every event, in order.
    pub events: Vec<CubaLifEvent>,
    /// The state at `t_end`.
    pub final_state: Vec<f64>,
    /// `d x(T) / d p`: one row per state, one column per parameter.
    pub final_jacobian: Vec<Vec<f64>>,
    /// `d t_k / d p`: one row per event, one column per parameter.
    pub event_time_jacobian: Vec<Vec<f64>>,
}

/// The reference file.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct CubaLifReferences {
    /// Where the numbers come from.
    pub about: String,
    /// The cases.
    pub cases: Vec<CubaLifCase>,
}

impl CubaLifCase {
    /// The case's model.
    pub fn model(&self) -> Result<CubaLif, HybridError> {
        CubaLif::from_size(&Size::Counts(self.size.clone()))
    }

    /// The case's parameters, in the model's order; a name the model does
    /// not have, or one it lacks, is an error naming it.
    pub fn param_values(&self) -> Result<Vec<f64>, HybridError> {
        let spec = self.model()?.spec();
        spec.param_names()
            .iter()
            .map(|name| {
                self.params.get(name).copied().ok_or_else(|| {
                    HybridError::invalid("parameter", name, "missing from the reference case")
                })
            })
            .collect()
    }
}

/// The references of [`CUBA_LIF_JSON`].
pub fn cuba_lif_references() -> Result<CubaLifReferences, serde_json::Error> {
    serde_json::from_str(CUBA_LIF_JSON)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Reference: the issue's demands on the cases (a hidden neuron firing
    /// twice; a potential rising and falling below threshold, so never
    /// firing; `tau_mem = tau_syn` in a case of its own).
    #[test]
    fn the_cases_show_what_the_issue_asks() {
        let refs = cuba_lif_references().unwrap();
        let a = &refs.cases[0];
        let fired = |name: &str| a.events.iter().filter(|e| e.transition == name).count();
        assert!(fired("spike_h0") >= 2);
        assert_eq!(fired("spike_h2"), 0);
        let v_h2 = a.states.iter().position(|s| s == "V_h2").unwrap();
        assert!(a.final_state[v_h2] > 0.1, "V_h2 rose");
        let equal = &refs.cases[1];
        assert_eq!(equal.params["tau_mem"], equal.params["tau_syn"]);
        for case in &refs.cases {
            assert_eq!(case.param_values().unwrap().len(), case.wrt.len());
            assert_eq!(case.model().unwrap().spec().state_names(), case.states);
        }
    }
}
