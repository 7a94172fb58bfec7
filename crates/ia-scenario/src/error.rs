//! The errors of a scenario and its runs: what the command line prints as
//! one line on standard error (`error: <kind>: <message>`) and the Python
//! package raises as the exception class of the kind.

use ia_core::HybridError;
use thiserror::Error;

/// A failure of a scenario: bad input, or a failure of the library.
#[derive(Debug, Error)]
pub enum ScenarioError {
    /// The scenario is not well-formed JSON (the message carries the line and
    /// column), or a number in it overflows `f64`.
    #[error("{0}")]
    MalformedJson(String),
    /// The scenario is well-formed JSON but not a valid scenario: an unknown
    /// or duplicated key, a value of the wrong type, a value outside its
    /// valid range.
    #[error("{0}")]
    InvalidScenario(String),
    /// A mistake in a model written as equations: `place` names where the
    /// equations came from (a scenario's `'model' (equations)`, a file,
    /// Python's `the equations`), `error` names the mode or transition, the
    /// key and the column.
    #[error("{place}: {error}")]
    Equations {
        /// Where the equations came from.
        place: String,
        /// The mistake.
        error: ia_equations::EquationError,
    },
    /// The scenario file could not be read (or is too large to be one).
    #[error("{0}")]
    Io(String),
    /// An error of the library (unknown name, invalid option, Zeno, grazing,
    /// step-size underflow, guard violated at start, unsupported request...).
    #[error("{0}")]
    Library(HybridError),
    /// An error of the periodic-orbit solver (`periodic`): no convergence,
    /// no return to the section, or a failed run.
    #[error("{0}")]
    Orbit(ia_orbits::OrbitError),
    /// An error of the library during a run, with what in the scenario most
    /// likely caused it and what to change.
    #[error("{error}; {hint}")]
    Explained {
        /// The library's error.
        error: HybridError,
        /// The likely cause, in the scenario's words.
        hint: String,
    },
    /// A failure of a fit (its kind: the run's, `optimizer` or
    /// `not_identifiable`).
    #[error("{0}")]
    Fit(ia_fit::FitError),
}

impl ScenarioError {
    /// A short, stable name of the error kind: `malformed_json`,
    /// `invalid_scenario`, `invalid_equations`, `io`, or the library's [`HybridError::kind`]
    /// (`unknown_name`, `invalid_option`, `zeno`, `grazing`,
    /// `step_size_underflow`, `step_limit`, `guard_violated_at_start`, `event_location`,
    /// `non_finite`, `unsupported`, ...), or the periodic-orbit solver's
    /// `no_convergence` and `no_return`.
    pub fn kind(&self) -> &'static str {
        match self {
            ScenarioError::MalformedJson(_) => "malformed_json",
            ScenarioError::InvalidScenario(_) => "invalid_scenario",
            ScenarioError::Equations { error, .. } => error.kind(),
            ScenarioError::Io(_) => "io",
            ScenarioError::Library(e) | ScenarioError::Explained { error: e, .. } => e.kind(),
            ScenarioError::Orbit(e) => e.kind(),
            ScenarioError::Fit(e) => e.kind(),
        }
    }
}

impl From<ia_orbits::OrbitError> for ScenarioError {
    fn from(e: ia_orbits::OrbitError) -> Self {
        match e {
            ia_orbits::OrbitError::Input(e) => ScenarioError::Library(e),
            other => ScenarioError::Orbit(other),
        }
    }
}

impl From<HybridError> for ScenarioError {
    fn from(e: HybridError) -> Self {
        ScenarioError::Library(e)
    }
}
