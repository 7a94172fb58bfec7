//! [`Sparsity`]: the entries of a flow's state Jacobian `f_x` that may be
//! non-zero, which a flow may declare ([`Flow::state_sparsity`]) so that
//! the implicit methods factorise `I - h gamma f_x` as a sparse matrix.
//!
//! [`Flow::state_sparsity`]: crate::Flow::state_sparsity

use crate::error::HybridError;

/// The pattern of an `n x n` matrix: the entries that may be non-zero,
/// column by column (compressed sparse columns, rows increasing within a
/// column). Entries outside it are zero everywhere; entries inside it may
/// be zero at some points.
///
/// ```
/// use ia_core::Sparsity;
/// // A tridiagonal 4 x 4 pattern, entries given as (row, column).
/// let entries = (0..4usize).flat_map(|i| {
///     [(i, i), (i.saturating_sub(1), i), ((i + 1).min(3), i)]
/// });
/// let s = Sparsity::from_entries(4, entries).unwrap();
/// assert_eq!(s.nnz(), 10); // repeated entries count once
/// assert_eq!(s.col_ptr(), [0, 2, 5, 8, 10]);
/// assert_eq!(s.position(2, 1), Some(4));
/// assert_eq!(s.position(3, 0), None);
/// ```
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Sparsity {
    n: usize,
    col_ptr: Vec<usize>,
    row_idx: Vec<usize>,
}

impl Sparsity {
    /// The pattern of the `(row, column)` entries of an `n x n` matrix, in
    /// any order, repeats counting once; an error naming the entry when
    /// one lies outside the matrix.
    pub fn from_entries(
        n: usize,
        entries: impl IntoIterator<Item = (usize, usize)>,
    ) -> Result<Self, HybridError> {
        let mut columns: Vec<Vec<usize>> = vec![Vec::new(); n];
        for (row, col) in entries {
            if row >= n || col >= n {
                return Err(HybridError::Unsupported(format!(
                    "the sparsity entry ({row}, {col}) lies outside the {n} x {n} state Jacobian (rows and columns 0..{n})"
                )));
            }
            columns[col].push(row);
        }
        let mut col_ptr = Vec::with_capacity(n + 1);
        let mut row_idx = Vec::new();
        col_ptr.push(0);
        for mut rows in columns {
            rows.sort_unstable();
            rows.dedup();
            row_idx.extend(rows);
            col_ptr.push(row_idx.len());
        }
        Ok(Self {
            n,
            col_ptr,
            row_idx,
        })
    }

    /// The order `n` of the matrix.
    pub fn dim(&self) -> usize {
        self.n
    }

    /// The number of entries in the pattern.
    pub fn nnz(&self) -> usize {
        self.row_idx.len()
    }

    /// Where each column's entries start in [`Sparsity::row_idx`] (`n + 1`
    /// offsets, the last [`Sparsity::nnz`]).
    pub fn col_ptr(&self) -> &[usize] {
        &self.col_ptr
    }

    /// The row of each entry, column by column, increasing within a column.
    pub fn row_idx(&self) -> &[usize] {
        &self.row_idx
    }

    /// The rows of column `col`'s entries.
    pub fn column(&self, col: usize) -> &[usize] {
        &self.row_idx[self.col_ptr[col]..self.col_ptr[col + 1]]
    }

    /// The index of entry `(row, col)` among the pattern's entries (the
    /// order of a values array), or `None` when it is not in the pattern.
    pub fn position(&self, row: usize, col: usize) -> Option<usize> {
        if col >= self.n {
            return None;
        }
        let start = self.col_ptr[col];
        self.column(col).binary_search(&row).ok().map(|k| start + k)
    }

    /// The pattern with the diagonal added (that of `I - c M` for a matrix
    /// `M` of this pattern).
    pub fn with_diagonal(&self) -> Self {
        let entries = (0..self.n).flat_map(|col| {
            self.column(col)
                .iter()
                .map(move |&row| (row, col))
                .chain(std::iter::once((col, col)))
        });
        // Every entry lies inside the matrix: no error is possible.
        Self::from_entries(self.n, entries).unwrap_or_default()
    }

    /// Gathers the pattern's entries of the dense column-major `n x n`
    /// matrix `dense` into `values` (one per entry, in pattern order).
    pub fn gather(&self, dense: &[f64], values: &mut [f64]) {
        for col in 0..self.n {
            let range = self.col_ptr[col]..self.col_ptr[col + 1];
            for (v, &row) in values[range.clone()].iter_mut().zip(&self.row_idx[range]) {
                *v = dense[col * self.n + row];
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_entry_outside_the_matrix_is_an_error_naming_it() {
        let err = Sparsity::from_entries(3, [(0, 0), (1, 3)]).unwrap_err();
        assert!(err.to_string().contains("(1, 3)"), "{err}");
    }

    #[test]
    fn the_diagonal_is_added_once() {
        // Reference: the pattern written out by hand.
        let s = Sparsity::from_entries(3, [(1, 0), (0, 0), (2, 2)]).unwrap();
        let d = s.with_diagonal();
        assert_eq!(d.col_ptr(), [0, 2, 3, 4]);
        assert_eq!(d.row_idx(), [0, 1, 1, 2]);
    }

    #[test]
    fn gather_reads_the_pattern_entries_of_a_dense_matrix() {
        let s = Sparsity::from_entries(2, [(1, 0), (0, 1)]).unwrap();
        let mut values = [0.0; 2];
        // Column-major [[1, 3], [2, 4]].
        s.gather(&[1.0, 2.0, 3.0, 4.0], &mut values);
        assert_eq!(values, [2.0, 3.0]);
    }
}
