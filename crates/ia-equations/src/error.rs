//! The error of a model written as equations.

use thiserror::Error;

/// A mistake in a model written as equations: one line naming where it is
/// (the mode or transition, the key, and for an expression the column) and
/// what would be valid.
#[derive(Clone, Debug, PartialEq, Eq, Error)]
pub enum EquationError {
    /// The text is not JSON of the model's form (the message carries the
    /// line and column of the document).
    #[error("{0}")]
    Json(String),
    /// An expression does not parse or names something that does not exist.
    #[error("{place}, column {column}: {message}")]
    Expression {
        /// Where the expression is: `transition "bounce", reset.vy`.
        place: String,
        /// 1-based column, in characters, inside the expression.
        column: usize,
        /// What is wrong.
        message: String,
    },
    /// The model's structure is wrong: a flow missing a state, an unknown
    /// mode, a name used twice, a value of the wrong type...
    #[error("{place}: {message}")]
    Structure {
        /// Where: `mode "flight", flow`, `transition "bounce", to`.
        place: String,
        /// What is wrong.
        message: String,
    },
}

impl EquationError {
    pub(crate) fn structure(place: impl Into<String>, message: impl Into<String>) -> Self {
        EquationError::Structure {
            place: place.into(),
            message: message.into(),
        }
    }

    /// A short, stable name of the error's kind for front ends that report
    /// errors by kind (as `ia_core::HybridError::kind` does for a run):
    /// `invalid_equations`, whichever variant, so that a mistake in a model
    /// is told apart from one in the scenario or the call that uses it.
    pub fn kind(&self) -> &'static str {
        "invalid_equations"
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Reference: the kind is the interface the fronts print
    /// (`error: invalid_equations: ...`); every variant has it.
    #[test]
    fn every_variant_has_the_equations_kind() {
        let errors = [
            EquationError::Json("EOF".into()),
            EquationError::Expression {
                place: "mode \"m\", flow.x".into(),
                column: 1,
                message: "empty expression".into(),
            },
            EquationError::structure("states", "a model needs at least one state"),
        ];
        for e in errors {
            assert_eq!(e.kind(), "invalid_equations", "{e}");
        }
    }
}
