//! A dense LU factorisation with partial pivoting, kept in reusable buffers
//! (factorising allocates nothing once sized) and solving with the matrix
//! or its transpose: the iteration matrix `I - h gamma J` of the implicit
//! stages, and its transpose in the adjoint.

/// `P A = L U` of a square matrix, stored column-major in place.
///
/// ```
/// use ia_events::implicit_rk::DenseLu;
/// let mut lu = DenseLu::default();
/// // I - 0.5 J with J = [[-2, 1], [0, -4]] (column-major).
/// lu.set_iteration_matrix(2, &[-2.0, 0.0, 1.0, -4.0], 0.5);
/// assert!(lu.factor());
/// let mut x = [1.0, 3.0];
/// lu.solve(&mut x);
/// // [[2, -0.5], [0, 3]] x = [1, 3]
/// assert!((x[1] - 1.0).abs() < 1e-15 && (x[0] - 0.75).abs() < 1e-15);
/// ```
#[derive(Clone, Debug, Default)]
pub struct DenseLu {
    n: usize,
    lu: Vec<f64>,
    pivots: Vec<usize>,
}

impl DenseLu {
    /// Order of the matrix.
    pub fn dim(&self) -> usize {
        self.n
    }

    /// Sets the matrix to `I - hg J`, `J` column-major `n x n` (not yet
    /// factorised: call [`DenseLu::factor`]).
    pub fn set_iteration_matrix(&mut self, n: usize, jacobian: &[f64], hg: f64) {
        self.n = n;
        self.lu.resize(n * n, 0.0);
        self.pivots.resize(n, 0);
        set_iteration_matrix(n, &mut self.lu, jacobian, hg);
    }

    /// [`DenseLu::set_iteration_matrix`] and [`DenseLu::factor`] in one
    /// call, small orders dispatched once: the same numbers.
    pub fn factor_iteration_matrix(&mut self, n: usize, jacobian: &[f64], hg: f64) -> bool {
        self.n = n;
        self.lu.resize(n * n, 0.0);
        self.pivots.resize(n, 0);
        let (a, pivots) = (&mut self.lu[..], &mut self.pivots[..]);
        #[inline(always)]
        fn set_and_factor(
            n: usize,
            a: &mut [f64],
            pivots: &mut [usize],
            jacobian: &[f64],
            hg: f64,
        ) -> bool {
            set_iteration_matrix(n, a, jacobian, hg);
            factor_lu(n, a, pivots)
        }
        crate::sized!(implicit, n = n => set_and_factor(n, a, pivots, jacobian, hg))
    }

    /// Factorises the matrix set last; false when it is singular (or not
    /// finite), and the solves must not be used.
    pub fn factor(&mut self) -> bool {
        let (a, pivots) = (&mut self.lu[..], &mut self.pivots[..]);
        // Small orders by their own copies of the loops, unrolled by the
        // compiler (the same operations in the same order: the same
        // numbers), as the solves below.
        crate::sized!(implicit, n = self.n => factor_lu(n, a, pivots))
    }

    /// Overwrites `b` with `A^{-1} b`.
    pub fn solve(&self, b: &mut [f64]) {
        self.solve_sized(self.n, b);
    }

    /// [`DenseLu::solve`], the order `n` (the matrix's) given by a caller
    /// that knows it, so that the compiler can choose the order's solve
    /// where the caller is inlined.
    #[inline(always)]
    pub(crate) fn solve_sized(&self, n: usize, b: &mut [f64]) {
        debug_assert_eq!(n, self.n);
        let (a, pivots) = (&self.lu[..], &self.pivots[..]);
        // Small orders by their own unrolled copies of the loops (the
        // same operations in the same order: the same numbers), order 3
        // by the copy written out in registers.
        crate::sized!(lu_solve, n = n => if n == 3 {
            solve_lu3(a, pivots, b)
        } else {
            solve_lu(n, a, pivots, b)
        })
    }

    /// Overwrites each `n`-long block of `v` (its length a multiple of
    /// `n`) with `A^{-1}` times it: [`DenseLu::solve`] block by block, the
    /// order dispatched once.
    #[inline]
    pub fn solve_blocks(&self, v: &mut [f64]) {
        let (a, pivots, n) = (&self.lu[..], &self.pivots[..], self.n);
        match n {
            3 => v.chunks_exact_mut(3).for_each(|b| solve_lu3(a, pivots, b)),
            _ => v.chunks_exact_mut(n).for_each(|b| self.solve(b)),
        }
    }

    /// Overwrites `b` with `A^{-T} b`.
    #[inline]
    pub fn solve_transpose(&self, b: &mut [f64]) {
        let (a, pivots) = (&self.lu[..], &self.pivots[..]);
        crate::sized!(lu_solve, n = self.n => solve_lu_transpose(n, a, pivots, b))
    }
}

/// `a <- I - hg J` of order `n`, `J` column-major.
#[inline(always)]
fn set_iteration_matrix(n: usize, a: &mut [f64], jacobian: &[f64], hg: f64) {
    let a = &mut a[..n * n];
    for (m, &j) in a.iter_mut().zip(&jacobian[..n * n]) {
        *m = -hg * j;
    }
    for i in 0..n {
        a[i * n + i] += 1.0;
    }
}

/// `P A = L U` of the order-`n` matrix `a` (column-major) in place, the
/// row exchanges into `pivots`; false when a pivot is zero or not finite.
#[inline(always)]
fn factor_lu(n: usize, a: &mut [f64], pivots: &mut [usize]) -> bool {
    let (a, pivots) = (&mut a[..n * n], &mut pivots[..n]);
    for k in 0..n {
        let (mut p, mut best) = (k, a[k * n + k].abs());
        for r in k + 1..n {
            let v = a[k * n + r].abs();
            if v > best {
                (p, best) = (r, v);
            }
        }
        if !(best > 0.0 && best.is_finite()) {
            return false;
        }
        pivots[k] = p;
        if p != k {
            for c in 0..n {
                a.swap(c * n + k, c * n + p);
            }
        }
        let pivot = a[k * n + k];
        for r in k + 1..n {
            a[k * n + r] /= pivot;
        }
        for c in k + 1..n {
            let akc = a[c * n + k];
            if akc != 0.0 {
                for r in k + 1..n {
                    a[c * n + r] -= a[k * n + r] * akc;
                }
            }
        }
    }
    true
}

/// `b <- A^{-1} b` from `P A = L U` of order `n` (`a` column-major, `L`
/// unit lower below the diagonal, `U` on and above it).
#[inline(always)]
fn solve_lu(n: usize, a: &[f64], pivots: &[usize], b: &mut [f64]) {
    let (a, pivots, b) = (&a[..n * n], &pivots[..n], &mut b[..n]);
    for (k, &p) in pivots.iter().enumerate() {
        b.swap(k, p);
    }
    for (c, column) in a.chunks_exact(n).enumerate() {
        let bc = b[c];
        if bc != 0.0 {
            for (br, &l) in b[c + 1..].iter_mut().zip(&column[c + 1..]) {
                *br -= l * bc;
            }
        }
    }
    for (c, column) in a.chunks_exact(n).enumerate().rev() {
        b[c] /= column[c];
        let bc = b[c];
        if bc != 0.0 {
            for (br, &u) in b[..c].iter_mut().zip(&column[..c]) {
                *br -= u * bc;
            }
        }
    }
}

/// [`solve_lu`] of order 3 written out, in registers: the same operations
/// in the same order (a skipped zero update subtracts nothing), so the same
/// numbers.
#[inline(always)]
fn solve_lu3(a: &[f64], pivots: &[usize], b: &mut [f64]) {
    let (a, b) = (&a[..9], &mut b[..3]);
    for (k, &p) in pivots[..3].iter().enumerate() {
        b.swap(k, p);
    }
    let (mut x0, mut x1, mut x2) = (b[0], b[1], b[2]);
    x1 -= a[1] * x0;
    x2 -= a[2] * x0;
    x2 -= a[5] * x1;
    x2 /= a[8];
    x0 -= a[6] * x2;
    x1 -= a[7] * x2;
    x1 /= a[4];
    x0 -= a[3] * x1;
    x0 /= a[0];
    b[0] = x0;
    b[1] = x1;
    b[2] = x2;
}

/// `b <- A^{-T} b` from the factorisation of [`solve_lu`]: `U^T z = b`
/// (lower triangular), then `L^T w = z`, then `x = P^T w`.
#[inline(always)]
fn solve_lu_transpose(n: usize, a: &[f64], pivots: &[usize], b: &mut [f64]) {
    let (a, pivots, b) = (&a[..n * n], &pivots[..n], &mut b[..n]);
    for (r, column) in a.chunks_exact(n).enumerate() {
        let dot: f64 = column[..r].iter().zip(&b[..r]).map(|(&u, &z)| u * z).sum();
        b[r] = (b[r] - dot) / column[r];
    }
    for (r, column) in a.chunks_exact(n).enumerate().rev() {
        let dot: f64 = column[r + 1..]
            .iter()
            .zip(&b[r + 1..])
            .map(|(&l, &w)| l * w)
            .sum();
        b[r] -= dot;
    }
    for (k, &p) in pivots.iter().enumerate().rev() {
        b.swap(k, p);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn solves_with_the_matrix_and_its_transpose() {
        // Reference: the products of the matrix (and its transpose) with
        // the solutions give back the right-hand sides.
        let j = [0.3, -7.0, 2.0, 1.5, 0.2, -0.4, 4.0, 1.0, -3.0];
        let hg = 0.7;
        let mut lu = DenseLu::default();
        lu.set_iteration_matrix(3, &j, hg);
        assert!(lu.factor());
        let m = |r: usize, c: usize| f64::from(u8::from(r == c)) - hg * j[c * 3 + r];
        let b = [1.0, -2.0, 0.5];
        let (mut x, mut y) = (b, b);
        lu.solve(&mut x);
        lu.solve_transpose(&mut y);
        for (r, &br) in b.iter().enumerate() {
            let ax: f64 = (0..3).map(|c| m(r, c) * x[c]).sum();
            let aty: f64 = (0..3).map(|c| m(c, r) * y[c]).sum();
            assert!((ax - br).abs() < 1e-14 && (aty - br).abs() < 1e-14);
        }
    }

    #[test]
    fn the_written_out_order_3_solve_is_the_loops_to_the_bit() {
        // Reference: the general loops of `solve_lu` at order 3, on a
        // pivoting matrix and right-hand sides with zero entries (the
        // updates the loops skip).
        let j = [0.3, -7.0, 2.0, 1.5, 0.2, -0.4, 4.0, 1.0, -3.0];
        let mut lu = DenseLu::default();
        lu.set_iteration_matrix(3, &j, 0.7);
        assert!(lu.factor());
        for b in [[1.0, -2.0, 0.5], [0.0, 3.0, 0.0], [1e-300, 0.0, -7.25]] {
            let (mut x, mut y) = (b, b);
            solve_lu3(&lu.lu, &lu.pivots, &mut x);
            solve_lu(3, &lu.lu, &lu.pivots, &mut y);
            assert_eq!(x.map(f64::to_bits), y.map(f64::to_bits), "{b:?}");
        }
    }

    #[test]
    fn a_singular_matrix_is_reported() {
        let mut lu = DenseLu::default();
        lu.set_iteration_matrix(2, &[1.0, 1.0, 1.0, 1.0], 0.5);
        assert!(!lu.factor());
    }
}
