//! # ia-scenario: the scenario document both fronts share
//!
//! A *scenario* says which run of which model to make: the model (a ready
//! one of `ia-models` by name, or one written as equations), its
//! parameters, initial state and mode, the run length, observation times,
//! the solver, event limits, a loss, a fit. The `impact-adjoint` command
//! line reads it from a JSON file (the format is documented in the `ia-cli`
//! crate); the Python package builds it from its arguments with the typed
//! setters of [`Scenario`]. Both then run it through one recipe
//! ([`mod@recipe`]): scenario -> [`ia_events::Problem`] -> simulation,
//! Jacobians, loss gradient, periodic orbit or fit, a failure explained in
//! the scenario's words ([`explain`]).
//!
//! * [`read`]: the JSON field readers, one rule for each kind of value;
//! * [`keys`]: the keys of a scenario;
//! * [`mod@model`]: the model a scenario names;
//! * [`solver`], [`loss`], [`fit`]: the `solver`, `loss` and `fit` keys;
//! * [`scenario`]: the checked scenario, its typed setters and JSON reader;
//! * [`periodic`]: the periodic-orbit scenario and the orbit options;
//! * [`recipe`]: the runs;
//! * [`error`]: [`ScenarioError`], whose kinds the command line prints and
//!   the Python package raises as exception classes.
//!
//! ```
//! use ia_scenario::{GradientMethod, Scenario};
//! let scenario = Scenario::parse(r#"{"model": "two-ball", "t_end": 1}"#, "example").unwrap();
//! let run = scenario.derivatives(GradientMethod::Forward, false).unwrap();
//! let sens = run.sensitivities.unwrap();
//! let x2 = scenario.spec.state_index("x2").unwrap();
//! assert!((sens.trajectory.final_state[x2] - 1.2).abs() < 1e-9);
//! ```

#![deny(missing_docs)]

pub mod error;
pub mod fit;
pub mod keys;
pub mod loss;
pub mod model;
pub mod periodic;
pub mod read;
pub mod recipe;
pub mod scenario;
pub mod solver;

pub use error::ScenarioError;
pub use fit::FitSpec;
pub use model::{catalogue_model, model_of};
pub use periodic::{advancing_states, orbit_options, PeriodicScenario};
pub use read::parse_json;
pub use recipe::{explain, Derivatives, GradientMethod};
pub use scenario::{ProgressHook, Scenario, MAX_DERIVATIVE_PROBES};
pub use solver::adjoint_solver;
