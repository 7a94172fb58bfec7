//! One period of the return map from a state: where it returns and the
//! first derivatives of the return.

use nalgebra::{DMatrix, DVector};

/// One period from `x0`: the return state and its first derivatives.
pub(crate) struct Return {
    pub(crate) state: DVector<f64>,
    pub(crate) period: f64,
    /// `M`, n x n.
    pub(crate) monodromy: DMatrix<f64>,
    /// `N = dx(T+)/dp` at fixed time, n x n_p.
    pub(crate) param_jacobian: DMatrix<f64>,
    /// `dT/dx0`.
    pub(crate) period_x: DVector<f64>,
    /// `dT/dp`.
    pub(crate) period_p: DVector<f64>,
    /// `f+` at the return.
    pub(crate) flow_after: DVector<f64>,
}

impl Return {
    /// `DP = M + f+ (dT/dx0)^T`.
    pub(crate) fn return_jacobian(&self) -> DMatrix<f64> {
        &self.monodromy + &self.flow_after * self.period_x.transpose()
    }

    /// `dP/dp = N + f+ (dT/dp)^T`.
    pub(crate) fn return_param_jacobian(&self) -> DMatrix<f64> {
        &self.param_jacobian + &self.flow_after * self.period_p.transpose()
    }
}
