//! # ia-equations: hybrid models written as data
//!
//! A model is declared as data (JSON, or the same structure from Rust or
//! Python): states, parameters with default values, optional `let`
//! intermediates, modes with their flows, and transitions with a guard
//! expression, a crossing direction and a reset listing only the states it
//! changes. It is parsed and checked once ([`EquationModel::from_json_str`],
//! [`EquationModel::from_value`]) into a flat register program per flow,
//! guard and reset, evaluated over any [`ia_core::Scalar`]: with `f64` for
//! values and with dual numbers ([`ia_core::Autodiff`]) for every partial
//! derivative, so the user writes none.
//!
//! The grammar of expressions is in [`expr`]; the JSON form in
//! [`EquationsForm`]; docs/equations.md has both with a worked example.
//!
//! Entry points for front ends (the CLI, Python bindings):
//! [`EquationModel::from_json_str`] (document order kept) and
//! [`EquationModel::from_value`] (a `serde_json::Value`, in its keys' order:
//! the document's, with serde_json's `preserve_order`, which the workspace
//! turns on), both
//! `Result<EquationModel, EquationError>`; the error's `Display` is one line
//! naming the mode or transition, the key and the column.
//! [`EquationModel`] implements [`ia_models::Model`] (`spec`, `system`), and
//! [`EquationModel::describe`] prints how the model was understood.
//!
//! ```
//! use ia_equations::EquationModel;
//! use ia_models::Model;
//!
//! let json = r#"{
//!   "states": {"y": 1.0, "vy": 0.0},
//!   "params": {"g": 9.81, "e": 0.8},
//!   "modes": {"flight": {"flow": {"y": "vy", "vy": "-g"}}},
//!   "transitions": [{"name": "bounce", "from": "flight", "to": "flight",
//!                    "guard": "y", "direction": "falling",
//!                    "reset": {"vy": "-e * vy"}}]
//! }"#;
//! let ball = EquationModel::from_json_str(json).unwrap();
//! let system = ball.system();
//! let (x, p) = ([1.0, -2.0], [9.81, 0.8]);
//! let mut after = [0.0; 2];
//! system.transitions()[0].reset.apply(0.0, &x, &p, &mut after);
//! assert_eq!(after, [1.0, 1.6]);
//! print!("{}", ball.describe());
//! ```

#![deny(missing_docs)]

mod compile;
mod error;
pub mod expr;
mod form;
mod model;
mod shape;
mod sparse;

pub use compile::{Program, STACK_REGISTERS};
pub use error::EquationError;
pub use form::{EquationsForm, ModeForm, Ordered, States, TransitionForm};
pub use model::{EquationFlow, EquationGuard, EquationModel, EquationReset};
