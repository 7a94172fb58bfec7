//! Eigenvalues of the monodromy matrix with their right and left
//! eigenvectors, and the first-order change of a simple eigenvalue.
//!
//! For a simple eigenvalue `lambda` of `M` with right eigenvector `v`
//! (`M v = lambda v`) and left eigenvector `w` (`w^H M = lambda w^H`),
//! differentiating `M v = lambda v` and multiplying by `w^H` on the left
//! gives
//!
//! ```text
//! dlambda = w^H dM v / (w^H v).
//! ```
//!
//! Both vectors span the null spaces of `M - lambda I` and of its adjoint:
//! the right and left singular vectors of its smallest singular value.

use nalgebra::{Complex, DMatrix, DVector};

/// An eigenvalue with its right and left eigenvectors (unit length).
#[derive(Clone, Debug)]
pub(crate) struct EigenTriple {
    pub value: Complex<f64>,
    pub right: DVector<Complex<f64>>,
    pub left: DVector<Complex<f64>>,
}

impl EigenTriple {
    /// `w^H v`: zero (to rounding) when the eigenvalue is not simple, where
    /// its derivative is not defined.
    pub fn condition(&self) -> Complex<f64> {
        self.left.dotc(&self.right)
    }

    /// `w^H dM v / (w^H v)`: the change of the eigenvalue along `dM`.
    pub fn derivative(&self, d_matrix: &DMatrix<f64>) -> Complex<f64> {
        let dm = d_matrix.map(|v| Complex::new(v, 0.0));
        self.left.dotc(&(dm * &self.right)) / self.condition()
    }
}

/// The eigenvalues of `m`, sorted by modulus, largest first (a complex pair
/// with the positive imaginary part first), each with its eigenvectors.
pub(crate) fn eigen_triples(m: &DMatrix<f64>) -> Vec<EigenTriple> {
    let n = m.nrows();
    let mut values: Vec<Complex<f64>> = m.complex_eigenvalues().iter().copied().collect();
    values.sort_by(|a, b| b.norm().total_cmp(&a.norm()).then(b.im.total_cmp(&a.im)));
    let mc = m.map(|v| Complex::new(v, 0.0));
    values
        .into_iter()
        .map(|value| {
            let shifted = &mc - DMatrix::from_diagonal_element(n, n, value);
            // Sorted singular values, largest first: the last pair spans the
            // null spaces.
            let svd = shifted.svd(true, true);
            let u = svd.u.expect("asked for U");
            let v_t = svd.v_t.expect("asked for V^H");
            EigenTriple {
                value,
                right: v_t.row(n - 1).adjoint(),
                left: u.column(n - 1).into_owned(),
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Reference: a 2x2 rotation-scaling block with eigenvalues `a +- i b`
    /// and a triangular matrix whose eigenvalue derivatives are its diagonal
    /// derivatives (closed forms).
    #[test]
    fn finds_complex_pairs_and_their_derivatives() {
        let m = DMatrix::from_row_slice(3, 3, &[0.5, -0.3, 0.0, 0.3, 0.5, 0.0, 0.0, 0.0, 0.9]);
        let triples = eigen_triples(&m);
        assert!((triples[0].value - Complex::new(0.9, 0.0)).norm() < 1e-14);
        assert!((triples[1].value - Complex::new(0.5, 0.3)).norm() < 1e-14);
        assert!((triples[2].value - Complex::new(0.5, -0.3)).norm() < 1e-14);
        // d(a + i b) along dM = [[1, 0], [0, 1]] in the block: da = 1.
        let mut dm = DMatrix::zeros(3, 3);
        dm[(0, 0)] = 1.0;
        dm[(1, 1)] = 1.0;
        assert!((triples[1].derivative(&dm) - Complex::new(1.0, 0.0)).norm() < 1e-12);
        // along dM = [[0, -1], [1, 0]]: db = 1.
        let mut dm = DMatrix::zeros(3, 3);
        dm[(0, 1)] = -1.0;
        dm[(1, 0)] = 1.0;
        assert!((triples[1].derivative(&dm) - Complex::new(0.0, 1.0)).norm() < 1e-12);
        assert!((triples[2].derivative(&dm) - Complex::new(0.0, -1.0)).norm() < 1e-12);
    }

    #[test]
    fn a_non_normal_matrix_needs_the_left_eigenvector() {
        // Upper triangular: eigenvalues are the diagonal, and the derivative
        // of eigenvalue 2 along dM = e_1 e_1^T (a change of the (0, 0)
        // entry) is 1, along the (1, 1) entry 0, whatever the coupling.
        let m = DMatrix::from_row_slice(2, 2, &[2.0, 5.0, 0.0, 1.0]);
        let triples = eigen_triples(&m);
        let mut d00 = DMatrix::zeros(2, 2);
        d00[(0, 0)] = 1.0;
        let mut d11 = DMatrix::zeros(2, 2);
        d11[(1, 1)] = 1.0;
        assert!((triples[0].derivative(&d00) - Complex::new(1.0, 0.0)).norm() < 1e-12);
        assert!(triples[0].derivative(&d11).norm() < 1e-12);
        assert!((triples[1].derivative(&d11) - Complex::new(1.0, 0.0)).norm() < 1e-12);
    }
}
