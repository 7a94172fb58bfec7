//! The linear algebra of the implicit stages: the state Jacobian `J`, dense
//! or in the sparsity pattern the right-hand side declares
//! ([`OdeRhs::sparsity`]), and the LU factorisation of the iteration matrix
//! `I - h gamma J`, solving with it and its transpose
//! ([`IterationMatrix`]).
//!
//! **Dense or sparse.** A right-hand side that declares its pattern is
//! factorised sparsely (faer's sparse LU: a fill-reducing column order and
//! symbolic factorisation computed once per pattern and reused by every
//! numeric factorisation) when the state has at least [`SPARSE_MIN_DIM`]
//! entries and `I - h gamma J` has at most [`SPARSE_MAX_DENSITY`] of its
//! entries in the pattern; otherwise dense ([`DenseLu`]). A sparse
//! factorisation, solve and Jacobian evaluation then cost in proportion to
//! the entries and their fill, not to the square of the state's dimension.

use super::lu::DenseLu;
use crate::stepper::OdeRhs;
use faer::dyn_stack::{MemBuffer, MemStack, StackReq};
use faer::sparse::linalg::lu::{factorize_symbolic_lu, LuRef, NumericLu, SymbolicLu};
use faer::sparse::{SparseColMatRef, SymbolicSparseColMat};
use faer::{Conj, MatMut, Par};
use ia_core::Sparsity;

/// The least state dimension factorised sparsely.
pub const SPARSE_MIN_DIM: usize = 32;
/// The largest fraction of `I - h gamma J`'s entries in its pattern for
/// which it is factorised sparsely.
pub const SPARSE_MAX_DENSITY: f64 = 0.1;

/// Whether a state Jacobian of pattern `pattern` is factorised sparsely:
/// the rule of the module's documentation.
///
/// ```
/// use ia_core::Sparsity;
/// use ia_events::implicit_rk::sparse_pays;
/// let tridiagonal = |n: usize| {
///     let entries = (0..n).flat_map(|i| [(i, i), (i.saturating_sub(1), i), ((i + 1).min(n - 1), i)]);
///     Sparsity::from_entries(n, entries).unwrap()
/// };
/// assert!(!sparse_pays(&tridiagonal(6)));
/// assert!(sparse_pays(&tridiagonal(250)));
/// ```
pub fn sparse_pays(pattern: &Sparsity) -> bool {
    let n = pattern.dim();
    let entries = pattern.nnz() + n; // at most, with the diagonal
    n >= SPARSE_MIN_DIM && entries as f64 <= SPARSE_MAX_DENSITY * (n * n) as f64
}

/// A sparse LU of `I - hg J` for `J` of one declared pattern.
struct SparseLu {
    /// The pattern `J` was declared with.
    declared: Sparsity,
    /// The pattern of `I - hg J` (the declared one with the diagonal).
    pattern: SymbolicSparseColMat<usize>,
    /// Where each declared entry lies among the matrix's entries.
    from_declared: Vec<usize>,
    /// Where each diagonal entry lies among the matrix's entries.
    diagonal: Vec<usize>,
    values: Vec<f64>,
    symbolic: SymbolicLu<usize>,
    numeric: NumericLu<usize, f64>,
    scratch: MemBuffer,
    scratch_req: StackReq,
    factorised: bool,
}

impl SparseLu {
    /// The symbolic factorisation for `declared`; `None` when faer cannot
    /// form it (out of memory).
    fn new(declared: &Sparsity) -> Option<Self> {
        let n = declared.dim();
        let full = declared.with_diagonal();
        let position = |row, col| full.position(row, col).unwrap_or(0);
        let from_declared: Vec<usize> = (0..n)
            .flat_map(|col| declared.column(col).iter().map(move |&row| (row, col)))
            .map(|(row, col)| position(row, col))
            .collect();
        let diagonal: Vec<usize> = (0..n).map(|i| position(i, i)).collect();
        let pattern = SymbolicSparseColMat::new_checked(
            n,
            n,
            full.col_ptr().to_vec(),
            None,
            full.row_idx().to_vec(),
        );
        let symbolic = factorize_symbolic_lu(pattern.as_ref(), Default::default()).ok()?;
        let scratch_req = StackReq::any_of(&[
            symbolic.factorize_numeric_lu_scratch::<f64>(Par::Seq, Default::default()),
            symbolic.solve_in_place_scratch::<f64>(1, Par::Seq),
            symbolic.solve_transpose_in_place_scratch::<f64>(1, Par::Seq),
        ]);
        let scratch = MemBuffer::try_new(scratch_req).ok()?;
        Some(Self {
            declared: declared.clone(),
            values: vec![0.0; full.nnz()],
            pattern,
            from_declared,
            diagonal,
            symbolic,
            numeric: NumericLu::new(),
            scratch,
            scratch_req,
            factorised: false,
        })
    }

    /// Sets the matrix to `I - hg J` (`jacobian` in the declared pattern's
    /// order) and factorises it; false when a value is not finite or the
    /// matrix is singular.
    fn factor(&mut self, jacobian: &[f64], hg: f64) -> bool {
        self.factorised = false;
        self.values.iter_mut().for_each(|v| *v = 0.0);
        for (&k, &j) in self.from_declared.iter().zip(jacobian) {
            self.values[k] = -hg * j;
        }
        for &k in &self.diagonal {
            self.values[k] += 1.0;
        }
        if !self.values.iter().all(|v| v.is_finite()) {
            return false;
        }
        let matrix = SparseColMatRef::new(self.pattern.as_ref(), &self.values);
        let stack = MemStack::new(&mut self.scratch);
        self.factorised = self
            .symbolic
            .factorize_numeric_lu(
                &mut self.numeric,
                matrix,
                Par::Seq,
                stack,
                Default::default(),
            )
            .is_ok();
        self.factorised
    }

    fn solve(&mut self, b: &mut [f64], transpose: bool) {
        let n = b.len();
        let lu = LuRef::new_unchecked(&self.symbolic, &self.numeric);
        let rhs = MatMut::from_column_major_slice_mut(b, n, 1);
        let stack = MemStack::new(&mut self.scratch);
        if transpose {
            lu.solve_transpose_in_place_with_conj(Conj::No, rhs, Par::Seq, stack);
        } else {
            lu.solve_in_place_with_conj(Conj::No, rhs, Par::Seq, stack);
        }
    }
}

impl Clone for SparseLu {
    fn clone(&self) -> Self {
        Self {
            declared: self.declared.clone(),
            pattern: self.pattern.clone(),
            from_declared: self.from_declared.clone(),
            diagonal: self.diagonal.clone(),
            values: self.values.clone(),
            symbolic: self.symbolic.clone(),
            numeric: self.numeric.clone(),
            scratch: MemBuffer::new(self.scratch_req),
            scratch_req: self.scratch_req,
            factorised: self.factorised,
        }
    }
}

impl std::fmt::Debug for SparseLu {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SparseLu")
            .field("dim", &self.declared.dim())
            .field("nnz", &self.values.len())
            .field("factorised", &self.factorised)
            .finish()
    }
}

/// The state Jacobian of a right-hand side, dense or in its declared
/// sparsity pattern, and the LU of `I - hg J` (see the module's
/// documentation for the choice).
///
/// ```
/// use ia_events::implicit_rk::IterationMatrix;
/// use ia_events::OdeRhs;
/// /// `y' = J y` with `J = [[-2, 1], [0, -4]]`.
/// struct Linear;
/// impl OdeRhs for Linear {
///     fn dim(&self) -> usize { 2 }
///     fn eval(&mut self, _t: f64, y: &[f64], dydt: &mut [f64]) {
///         dydt[0] = -2.0 * y[0] + y[1];
///         dydt[1] = -4.0 * y[1];
///     }
///     fn jacobian(&mut self, _t: f64, _y: &[f64], j: &mut [f64]) -> bool {
///         j.copy_from_slice(&[-2.0, 0.0, 1.0, -4.0]);
///         true
///     }
/// }
/// let mut m = IterationMatrix::default();
/// m.configure(&mut Linear, 2);
/// assert!(!m.is_sparse());
/// assert!(m.evaluate(&mut Linear, 0.0, &[1.0, 1.0]));
/// assert!(m.factor(0.5));
/// let mut x = [1.0, 3.0];
/// m.solve(&mut x);
/// // [[2, -0.5], [0, 3]] x = [1, 3]
/// assert!((x[1] - 1.0).abs() < 1e-15 && (x[0] - 0.75).abs() < 1e-15);
/// ```
#[derive(Clone, Debug, Default)]
pub struct IterationMatrix {
    n: usize,
    /// `J`: dense column-major (`n^2`), or the declared pattern's entries.
    jacobian: Vec<f64>,
    /// The sparse factorisation, when the layout is sparse (kept, with its
    /// symbolic factorisation, while the pattern stays the same).
    sparse: Option<SparseLu>,
    /// Whether the layout is sparse.
    use_sparse: bool,
    dense: DenseLu,
}

impl IterationMatrix {
    /// Chooses the layout for the closed block (`n` components) of `rhs`:
    /// sparse when it declares a pattern for which [`sparse_pays`], else
    /// dense. A pattern equal to the last one keeps its symbolic
    /// factorisation.
    pub fn configure(&mut self, rhs: &mut dyn OdeRhs, n: usize) {
        self.n = n;
        self.use_sparse = false;
        if let Some(pattern) = rhs.sparsity().filter(|p| p.dim() == n && sparse_pays(p)) {
            if !self.sparse.as_ref().is_some_and(|s| s.declared == *pattern) {
                self.sparse = SparseLu::new(pattern);
            }
            if let Some(sparse) = &self.sparse {
                self.use_sparse = true;
                self.jacobian.resize(sparse.declared.nnz(), 0.0);
                return;
            }
        }
        self.jacobian.resize(n * n, 0.0);
    }

    /// Whether the layout is sparse.
    pub fn is_sparse(&self) -> bool {
        self.use_sparse
    }

    /// Evaluates `J` at `(t, y)` from the right-hand side
    /// ([`OdeRhs::sparse_jacobian`] or [`OdeRhs::jacobian`]); false when it
    /// has none (the layout is then dense: write it into
    /// [`IterationMatrix::dense_jacobian_mut`]).
    pub fn evaluate(&mut self, rhs: &mut dyn OdeRhs, t: f64, y: &[f64]) -> bool {
        if self.use_sparse && rhs.sparse_jacobian(t, &y[..self.n], &mut self.jacobian) {
            return true;
        }
        if self.use_sparse {
            // The declared pattern came without its entries: dense from here.
            self.use_sparse = false;
            self.jacobian.resize(self.n * self.n, 0.0);
        }
        rhs.jacobian(t, &y[..self.n], &mut self.jacobian)
    }

    /// The dense Jacobian's entries, column-major, to be written by the
    /// caller when [`IterationMatrix::evaluate`] found none.
    pub fn dense_jacobian_mut(&mut self) -> &mut [f64] {
        &mut self.jacobian
    }

    /// Factorises `I - hg J` with the `J` evaluated last; false when it is
    /// singular (or not finite), and the solves must not be used.
    pub fn factor(&mut self, hg: f64) -> bool {
        match (&mut self.sparse, self.use_sparse) {
            (Some(sparse), true) => sparse.factor(&self.jacobian, hg),
            _ => self
                .dense
                .factor_iteration_matrix(self.n, &self.jacobian, hg),
        }
    }

    /// Overwrites `b` (`n` long) with `(I - hg J)^{-1} b`.
    #[inline]
    pub fn solve(&mut self, b: &mut [f64]) {
        self.solve_sized(self.n, b);
    }

    /// [`IterationMatrix::solve`] for a caller that knows the order `n`
    /// (the closed block's), the dense solve chosen by it where the caller
    /// is inlined.
    #[inline(always)]
    pub(crate) fn solve_sized(&mut self, n: usize, b: &mut [f64]) {
        match (&mut self.sparse, self.use_sparse) {
            (Some(sparse), true) => sparse.solve(b, false),
            _ => self.dense.solve_sized(n, b),
        }
    }

    /// Overwrites each `n`-long block of `v` (the state's, then each
    /// sensitivity column's) with `(I - hg J)^{-1}` times it.
    #[inline]
    pub fn solve_blocks(&mut self, v: &mut [f64]) {
        match (&mut self.sparse, self.use_sparse) {
            (Some(sparse), true) => v
                .chunks_exact_mut(self.n)
                .for_each(|b| sparse.solve(b, false)),
            _ => self.dense.solve_blocks(v),
        }
    }

    /// Overwrites `b` (`n` long) with `(I - hg J)^{-T} b`.
    #[inline]
    pub fn solve_transpose(&mut self, b: &mut [f64]) {
        match (&mut self.sparse, self.use_sparse) {
            (Some(sparse), true) => sparse.solve(b, true),
            _ => self.dense.solve_transpose(b),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `y' = A y` for a fixed `n x n` tridiagonal `A` with distinct
    /// entries, declaring its pattern (or not).
    struct Tridiagonal {
        n: usize,
        pattern: Option<Sparsity>,
    }

    impl Tridiagonal {
        fn new(n: usize, declare: bool) -> Self {
            let entries =
                (0..n).flat_map(|i| [(i, i), (i.saturating_sub(1), i), ((i + 1).min(n - 1), i)]);
            let pattern = declare.then(|| Sparsity::from_entries(n, entries).unwrap());
            Self { n, pattern }
        }
        fn entry(row: usize, col: usize) -> f64 {
            match (row as isize - col as isize, row % 3) {
                (0, k) => -3.0 - k as f64,
                (d, _) if d.abs() == 1 => 1.0 + 0.1 * (row + 2 * col) as f64 / 7.0,
                _ => 0.0,
            }
        }
    }

    impl OdeRhs for Tridiagonal {
        fn dim(&self) -> usize {
            self.n
        }
        fn eval(&mut self, _t: f64, _y: &[f64], _dydt: &mut [f64]) {}
        fn jacobian(&mut self, _t: f64, _y: &[f64], j: &mut [f64]) -> bool {
            for c in 0..self.n {
                for r in 0..self.n {
                    j[c * self.n + r] = Self::entry(r, c);
                }
            }
            true
        }
        fn sparsity(&mut self) -> Option<&Sparsity> {
            self.pattern.as_ref()
        }
        fn sparse_jacobian(&mut self, _t: f64, _y: &[f64], values: &mut [f64]) -> bool {
            let Some(p) = &self.pattern else { return false };
            for c in 0..self.n {
                for (v, &r) in values[p.col_ptr()[c]..p.col_ptr()[c + 1]]
                    .iter_mut()
                    .zip(p.column(c))
                {
                    *v = Self::entry(r, c);
                }
            }
            true
        }
    }

    #[test]
    fn sparse_solves_agree_with_dense_ones_both_ways() {
        // Reference: the dense LU of the same matrix (itself checked
        // against matrix products in lu.rs).
        let n = 64;
        let (mut sparse, mut dense) = (IterationMatrix::default(), IterationMatrix::default());
        let (mut declared, mut plain) = (Tridiagonal::new(n, true), Tridiagonal::new(n, false));
        sparse.configure(&mut declared, n);
        dense.configure(&mut plain, n);
        assert!(sparse.is_sparse() && !dense.is_sparse());
        let y = vec![0.0; n];
        for (m, rhs) in [
            (&mut sparse, &mut declared as &mut dyn OdeRhs),
            (&mut dense, &mut plain),
        ] {
            assert!(m.evaluate(rhs, 0.0, &y));
            assert!(m.factor(0.37));
        }
        let b: Vec<f64> = (0..n).map(|i| (i as f64 * 0.7).sin()).collect();
        for transpose in [false, true] {
            let (mut xs, mut xd) = (b.clone(), b.clone());
            if transpose {
                sparse.solve_transpose(&mut xs);
                dense.solve_transpose(&mut xd);
            } else {
                sparse.solve(&mut xs);
                dense.solve(&mut xd);
            }
            let gap = xs
                .iter()
                .zip(&xd)
                .map(|(a, b)| (a - b).abs())
                .fold(0.0, f64::max);
            assert!(gap < 1e-14, "transpose {transpose}: {gap:e}");
        }
    }

    #[test]
    fn a_small_or_undeclared_pattern_stays_dense() {
        let mut m = IterationMatrix::default();
        m.configure(&mut Tridiagonal::new(8, true), 8);
        assert!(!m.is_sparse());
        m.configure(&mut Tridiagonal::new(64, false), 64);
        assert!(!m.is_sparse());
    }

    #[test]
    fn a_singular_sparse_matrix_is_reported() {
        let n = 40;
        let mut m = IterationMatrix::default();
        m.configure(&mut Tridiagonal::new(n, true), n);
        assert!(m.is_sparse());
        // J = 0 on the pattern: I - hg J = I is regular; with hg = inf the
        // values are not finite.
        m.dense_jacobian_mut().iter_mut().for_each(|v| *v = 1.0);
        assert!(!m.factor(f64::INFINITY));
    }
}
