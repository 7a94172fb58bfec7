//! The errors of the command line: what `main` prints as one line on
//! standard error (`error: <kind>: <message>`) before exiting with status 2.

use ia_core::HybridError;
use std::fmt;

/// A failure of the command line: bad input, or a failure of the library.
#[derive(Debug)]
pub enum CliError {
    /// The scenario is not well-formed JSON (the message carries the line and
    /// column), or a number in it overflows `f64`.
    MalformedJson(String),
    /// The scenario is well-formed JSON but not a valid scenario: an unknown
    /// key, a value of the wrong type, a value outside its valid range.
    InvalidScenario(String),
    /// The scenario file could not be read.
    Io(String),
    /// An error of the library (unknown name, invalid option, Zeno, grazing,
    /// step-size underflow, guard violated at start, unsupported request...).
    Library(HybridError),
}

impl CliError {
    /// A short, stable name of the error kind: `malformed_json`,
    /// `invalid_scenario`, `io`, or the library's
    /// [`HybridError::kind`] (`unknown_name`, `invalid_option`, `zeno`,
    /// `grazing`, `step_size_underflow`, `guard_violated_at_start`,
    /// `unsupported`, ...).
    pub fn kind(&self) -> &'static str {
        match self {
            CliError::MalformedJson(_) => "malformed_json",
            CliError::InvalidScenario(_) => "invalid_scenario",
            CliError::Io(_) => "io",
            CliError::Library(e) => e.kind(),
        }
    }
}

impl fmt::Display for CliError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CliError::MalformedJson(m) | CliError::InvalidScenario(m) | CliError::Io(m) => {
                f.write_str(m)
            }
            CliError::Library(e) => write!(f, "{e}"),
        }
    }
}

impl std::error::Error for CliError {}

impl From<HybridError> for CliError {
    fn from(e: HybridError) -> Self {
        CliError::Library(e)
    }
}
