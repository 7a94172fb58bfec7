//! The records a fit takes and gives: a datum ([`Datum`]), the solver's
//! options ([`FitOptions`]) and the outcome ([`FitResult`]).

use serde::{Deserialize, Serialize};

/// One scalar datum: the value of state entry `state` at `time`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Datum {
    /// When, in `(t0, t_end]`.
    pub time: f64,
    /// The state entry's name.
    pub state: String,
    /// The measured value.
    pub value: f64,
}

impl Datum {
    /// The datum `state(time) = value`.
    pub fn new(time: f64, state: impl Into<String>, value: f64) -> Self {
        Self {
            time,
            state: state.into(),
            value,
        }
    }
}

/// Options of [`FitProblem::fit`] (L-BFGS with a More-Thuente line search).
///
/// [`FitProblem::fit`]: crate::FitProblem::fit
#[derive(Clone, Debug, PartialEq)]
pub struct FitOptions {
    /// The most iterations.
    pub max_iters: u64,
    /// Stop when the gradient norm (in the coordinates `u`) falls below
    /// this.
    pub tolerance_grad: f64,
    /// Stop when the relative change of the loss falls below this.
    pub tolerance_cost: f64,
    /// L-BFGS memory (the number of past steps kept).
    pub memory: usize,
}

impl Default for FitOptions {
    fn default() -> Self {
        Self {
            max_iters: 200,
            tolerance_grad: 1e-12,
            tolerance_cost: 1e-16,
            memory: 7,
        }
    }
}

/// The outcome of a fit.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct FitResult {
    /// The free variables' names, in order.
    pub names: Vec<String>,
    /// Their fitted values.
    pub values: Vec<f64>,
    /// Their Gauss-Newton standard errors ([`FitProblem::standard_errors`]).
    ///
    /// [`FitProblem::standard_errors`]: crate::FitProblem::standard_errors
    pub standard_errors: Vec<f64>,
    /// The loss at the fitted values (the sum of squared residuals).
    pub loss: f64,
    /// `|dL/dtheta|` at the fitted values (Euclidean norm, in the
    /// variables themselves, not the coordinates `u`).
    pub gradient_norm: f64,
    /// The solver's iterations.
    pub iterations: u64,
    /// Why the solver stopped, in argmin's words.
    pub termination: String,
}
