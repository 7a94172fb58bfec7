//! The library's errors as Python exceptions: one class per kind the
//! command line prints (`impact_adjoint.ZenoError` for kind `zeno`, ...),
//! all subclasses of `impact_adjoint.Error`, each carrying the command
//! line's message. The classes live in `impact_adjoint/_errors.py`, so that
//! Python code can subclass and document them.

use ia_core::HybridError;
use ia_scenario::ScenarioError;
use pyo3::exceptions::PyRuntimeError;
use pyo3::prelude::*;

/// The Python exception for `error`: the class of its kind (looked up by
/// `impact_adjoint._errors.error_class`) with the command line's message.
pub fn to_py(error: ScenarioError) -> PyErr {
    let kind = error.kind();
    let message = error.to_string();
    Python::attach(|py| {
        let raised = py
            .import("impact_adjoint._errors")
            .and_then(|module| module.getattr("error_class"))
            .and_then(|class_for| class_for.call1((kind,)))
            .and_then(|class| class.call1((message.clone(),)));
        match raised {
            Ok(exception) => PyErr::from_value(exception),
            // The package's Python half is missing (a bare `_core` import):
            // still a Python exception with the kind and the message.
            Err(_) => PyRuntimeError::new_err(format!("{kind}: {message}")),
        }
    })
}

/// [`to_py`] for an error of the library.
pub fn library(error: HybridError) -> PyErr {
    to_py(ScenarioError::Library(error))
}

/// An error of kind `invalid_scenario` (a value of the wrong type or
/// shape), with `message`.
pub fn invalid(message: String) -> PyErr {
    to_py(ScenarioError::InvalidScenario(message))
}
