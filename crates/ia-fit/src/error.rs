//! What can go wrong in a fit ([`FitError`]).

use ia_adjoint::ia_core::HybridError;

/// What can go wrong in a fit.
#[derive(Debug, thiserror::Error)]
pub enum FitError {
    /// Bad input or a failed run.
    #[error(transparent)]
    Run(#[from] HybridError),
    /// The solver failed (its message).
    #[error("the optimiser failed: {0}")]
    Solver(String),
    /// The residuals' Jacobian `J^T J` is singular at the fit: the named
    /// variables cannot be told apart by these data.
    #[error("the data do not determine the free variables (J^T J is singular at the fit); remove one of {0} or add data that depend on it")]
    NotIdentifiable(String),
}

impl FitError {
    /// A short, stable name of the kind: the run's
    /// [`HybridError::kind`], `optimizer` or `not_identifiable`.
    pub fn kind(&self) -> &'static str {
        match self {
            FitError::Run(e) => e.kind(),
            FitError::Solver(_) => "optimizer",
            FitError::NotIdentifiable(_) => "not_identifiable",
        }
    }
}
