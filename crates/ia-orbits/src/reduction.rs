//! The coordinates Newton works in when some states advance.

use crate::return_map::Return;
use nalgebra::{DMatrix, DVector};

/// The coordinates Newton works in when some states advance
/// ([`OrbitOptions::advancing`](crate::options::OrbitOptions::advancing),
/// `C = {c_1, ..., c_m}`): the residual `Q (P(x) - x)` keeps every
/// returning state and the differences `c_k - c_1`, and the unknowns
/// `x = x_0 + B z` are the returning states and `c_2 .. c_m` (`c_1` stays
/// where the guess put it). Both are `I` when no state advances.
pub(crate) struct Reduction {
    /// `Q`, `(n - 1) x n` (or `n x n`).
    pub(crate) residual: DMatrix<f64>,
    /// `B`, `n x (n - 1)` (or `n x n`).
    pub(crate) unknowns: DMatrix<f64>,
}

impl Reduction {
    pub(crate) fn new(n: usize, advancing: &[usize]) -> Self {
        let Some((&first, rest)) = advancing.split_first() else {
            return Self {
                residual: DMatrix::identity(n, n),
                unknowns: DMatrix::identity(n, n),
            };
        };
        let kept: Vec<usize> = (0..n).filter(|i| !advancing.contains(i)).collect();
        let m = n - 1;
        let mut residual = DMatrix::zeros(m, n);
        let mut unknowns = DMatrix::zeros(n, m);
        for (r, &i) in kept.iter().enumerate() {
            residual[(r, i)] = 1.0;
            unknowns[(i, r)] = 1.0;
        }
        for (k, &c) in rest.iter().enumerate() {
            let r = kept.len() + k;
            residual[(r, c)] = 1.0;
            residual[(r, first)] = -1.0;
            unknowns[(c, r)] = 1.0;
        }
        Self { residual, unknowns }
    }

    /// `Q (P(x) - x)`.
    pub(crate) fn of(&self, ret: &Return, x: &DVector<f64>) -> DVector<f64> {
        &self.residual * (&ret.state - x)
    }

    /// `Q A B` for an `n x n` matrix `A`.
    pub(crate) fn reduce(&self, a: &DMatrix<f64>) -> DMatrix<f64> {
        &self.residual * a * &self.unknowns
    }
}
