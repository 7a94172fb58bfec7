//! The closed-form reference cases computed outside this project, and the
//! comparison rule the checks use.
//!
//! The cases live in the repository, `crates/ia-verify/references/closed_form.json`
//! (its provenance is in `references/README.md` beside it), and are compiled
//! into this crate: nothing outside the repository is read. A copy of the
//! file at `shared/references/closed_form.json` beside the repository, when
//! present, is only compared against it
//! ([`shared_copy_rows`](crate::studies::reference_copy::shared_copy_rows)).
//!
//! This module holds data and its loaders only: the studies that compare
//! against it live in [`crate::studies`].

use ia_core::HybridError;
use ia_events::Problem;
use ia_models::Model;
use serde::Deserialize;
use std::collections::BTreeMap;
use std::path::PathBuf;

/// One reference case: a model run and its closed-form results.
#[derive(Clone, Debug, Deserialize)]
pub struct ReferenceCase {
    /// Model name (as in `ia_models::by_name`).
    pub model: String,
    /// Initial mode, where the model has several.
    #[serde(default)]
    pub initial_mode: Option<String>,
    /// Initial state by name.
    pub initial_state: BTreeMap<String, f64>,
    /// Parameters by name.
    pub params: BTreeMap<String, f64>,
    /// End time.
    pub t_end: f64,
    /// Final state by name.
    pub final_state: BTreeMap<String, f64>,
    /// Event times in order.
    pub event_times: Vec<f64>,
    /// `jacobian[state][wrt]`, wrt being `initial.<state>` or `param.<name>`.
    pub jacobian: BTreeMap<String, BTreeMap<String, f64>>,
    /// `event_time_jacobian[event index][wrt]`, where given.
    #[serde(default)]
    pub event_time_jacobian: BTreeMap<String, BTreeMap<String, f64>>,
}

#[derive(Deserialize)]
struct ReferenceFile {
    cases: BTreeMap<String, ReferenceCase>,
}

/// The text of the project's reference file,
/// `crates/ia-verify/references/closed_form.json`.
///
/// ```
/// let cases: serde_json::Value = serde_json::from_str(ia_verify::references::REFERENCE_JSON).unwrap();
/// assert!(cases["cases"]["ball2d_flat_a"]["jacobian"]["x"]["initial.vy"].as_f64().unwrap() > 0.0);
/// ```
pub const REFERENCE_JSON: &str = include_str!("../../references/closed_form.json");

/// Where a copy of the reference file may lie outside the repository:
/// `shared/references/closed_form.json` beside it. Only compared against
/// [`REFERENCE_JSON`], never used in its place.
pub fn shared_copy_path() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../../shared/references/closed_form.json")
}

/// Parses the text of a reference file (`origin` names it in the error).
pub fn parse_cases(text: &str, origin: &str) -> Result<BTreeMap<String, ReferenceCase>, String> {
    let file: ReferenceFile =
        serde_json::from_str(text).map_err(|e| format!("cannot parse {origin}: {e}"))?;
    Ok(file.cases)
}

/// Loads every reference case by name from the project's reference file.
pub fn load_references() -> Result<BTreeMap<String, ReferenceCase>, String> {
    parse_cases(REFERENCE_JSON, "references/closed_form.json")
}

/// Loads the reference case `name`.
pub fn reference_case(name: &str) -> Result<ReferenceCase, String> {
    let mut cases = load_references()?;
    let valid: Vec<String> = cases.keys().cloned().collect();
    cases
        .remove(name)
        .ok_or_else(|| format!("no reference case '{name}'; valid: {}", valid.join(", ")))
}

fn ordered(
    values: &BTreeMap<String, f64>,
    names: &[String],
    kind: &str,
) -> Result<Vec<f64>, HybridError> {
    for key in values.keys() {
        ia_core::name_index(kind, names, key)?;
    }
    names
        .iter()
        .map(|n| {
            values
                .get(n)
                .copied()
                .ok_or_else(|| HybridError::DimensionMismatch {
                    what: format!("{kind} entries (missing '{n}')"),
                    expected: names.len(),
                    found: values.len(),
                })
        })
        .collect()
}

impl ReferenceCase {
    /// Every number of the case, named by its place (`final_state.x`,
    /// `jacobian.x.initial.vy`, ...), in a fixed order.
    pub fn numbers(&self) -> Vec<(String, f64)> {
        let mut out = vec![("t_end".to_string(), self.t_end)];
        let named = |prefix: &str, m: &BTreeMap<String, f64>, out: &mut Vec<(String, f64)>| {
            out.extend(m.iter().map(|(k, v)| (format!("{prefix}.{k}"), *v)));
        };
        named("initial_state", &self.initial_state, &mut out);
        named("params", &self.params, &mut out);
        named("final_state", &self.final_state, &mut out);
        out.extend(
            self.event_times
                .iter()
                .enumerate()
                .map(|(k, v)| (format!("event_times.{k}"), *v)),
        );
        for (row, m) in &self.jacobian {
            named(&format!("jacobian.{row}"), m, &mut out);
        }
        for (row, m) in &self.event_time_jacobian {
            named(&format!("event_time_jacobian.{row}"), m, &mut out);
        }
        out
    }

    /// The initial state in the model's order.
    pub fn initial_state_vector(&self, model: &dyn Model) -> Result<Vec<f64>, HybridError> {
        ordered(&self.initial_state, &model.spec().state_names(), "state")
    }

    /// The parameters in the model's order.
    pub fn params_vector(&self, model: &dyn Model) -> Result<Vec<f64>, HybridError> {
        ordered(&self.params, &model.spec().param_names(), "parameter")
    }

    /// The final state in the model's order.
    pub fn final_state_vector(&self, model: &dyn Model) -> Result<Vec<f64>, HybridError> {
        ordered(&self.final_state, &model.spec().state_names(), "state")
    }

    /// The run of this case on `system` (built from `model`), with the
    /// default solver; set the solver on the result.
    pub fn problem<'a>(
        &self,
        model: &dyn Model,
        system: &'a ia_core::HybridSystem,
    ) -> Result<Problem<'a>, HybridError> {
        let mode = self
            .initial_mode
            .clone()
            .unwrap_or_else(|| model.spec().initial_mode);
        Problem::new(
            system,
            self.initial_state_vector(model)?,
            self.params_vector(model)?,
            self.t_end,
        )
        .with_mode(&mode)
    }
}

/// The comparison rule of the checks: relative error `|v - r| / |r|` where
/// `|r| >= floor`, absolute error `|v - r|` below it.
pub fn reference_error(value: f64, reference: f64, floor: f64) -> f64 {
    let diff = (value - reference).abs();
    if reference.abs() >= floor {
        diff / reference.abs()
    } else {
        diff
    }
}

/// A reference case with its model and built system, ready to run.
pub struct ReferenceRun {
    /// The case.
    pub case: ReferenceCase,
    /// Its model.
    pub model: Box<dyn Model>,
    /// The model's system.
    pub system: ia_core::HybridSystem,
}

impl ReferenceRun {
    /// Loads case `name` and builds its model.
    pub fn load(name: &str) -> Result<Self, String> {
        let case = reference_case(name)?;
        let model = ia_models::by_name(&case.model).map_err(|e| e.to_string())?;
        let system = model.system();
        Ok(Self {
            case,
            model,
            system,
        })
    }

    /// The case's run with `solver`.
    pub fn problem(&self, solver: ia_events::SolverChoice) -> Problem<'_> {
        self.case
            .problem(self.model.as_ref(), &self.system)
            .expect("reference cases name valid states, parameters and modes")
            .with_solver(solver)
    }
}

/// The default run of a catalogue model (its spec's initial state,
/// parameters, mode and span) on `system`, with `solver`.
pub fn default_problem<'a>(
    model: &dyn Model,
    system: &'a ia_core::HybridSystem,
    solver: ia_events::SolverChoice,
) -> Problem<'a> {
    let spec = model.spec();
    Problem::new(
        system,
        spec.default_state(),
        spec.default_params(),
        spec.t_end,
    )
    .with_mode(&spec.initial_mode)
    .expect("catalogue initial modes exist")
    .with_solver(solver)
}
