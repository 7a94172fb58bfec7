//! The sparse state Jacobian of a flow program: its pattern, read off the
//! instructions ([`Program::state_dependencies`]), and its entries by
//! column compression (Curtis, Powell and Reid): the columns are coloured
//! so that no two of one colour share a row, and one dual-number evaluation
//! seeded with every column of a colour gives all their entries. A
//! tridiagonal flow (a rod in cells) takes three evaluations, whatever its
//! length.

use crate::compile::Program;
use ia_core::Sparsity;

/// The pattern of a program's state Jacobian and its column colouring.
#[derive(Clone, Debug)]
pub(crate) struct SparseJacobian {
    pattern: Sparsity,
    /// The columns of each colour.
    colours: Vec<Vec<usize>>,
    /// For each colour, row by row, where the row's entry in the colour's
    /// columns lies among the pattern's entries ([`NO_ENTRY`]: none; the
    /// columns of a colour share no row, so there is at most one).
    entries: Vec<Vec<usize>>,
}

/// No entry of a colour's columns in a row.
const NO_ENTRY: usize = usize::MAX;

impl SparseJacobian {
    /// The structure of `program`'s state Jacobian (`n` states).
    pub(crate) fn of(program: &Program, n: usize) -> Option<Self> {
        let pattern = Sparsity::from_entries(n, program.state_dependencies()).ok()?;
        let colours = colour_columns(&pattern);
        let col_ptr = pattern.col_ptr();
        let entries = colours
            .iter()
            .map(|columns| {
                let mut at = vec![NO_ENTRY; n];
                for &c in columns {
                    for (k, &row) in (col_ptr[c]..).zip(pattern.column(c)) {
                        at[row] = k;
                    }
                }
                at
            })
            .collect();
        Some(Self {
            pattern,
            colours,
            entries,
        })
    }

    /// The pattern.
    pub(crate) fn pattern(&self) -> &Sparsity {
        &self.pattern
    }

    /// Writes the Jacobian's entries at `(t, x, p)` in the pattern's order
    /// into `values`: one dual-number evaluation per colour, seeded with
    /// the colour's columns, each output's slope stored at its entry
    /// (nothing allocated).
    pub(crate) fn values(
        &self,
        program: &Program,
        (t, x, p): (f64, &[f64], &[f64]),
        values: &mut [f64],
    ) {
        for (columns, at) in self.colours.iter().zip(&self.entries) {
            program.seeded_state_rate(t, x, p, columns, |row, slope| {
                if let Some(&k) = at.get(row).filter(|&&k| k != NO_ENTRY) {
                    values[k] = slope;
                }
            });
        }
    }
}

/// A greedy colouring of the pattern's columns, no two columns of a colour
/// sharing a row (column by column, the least colour its rows' other
/// columns leave free).
fn colour_columns(pattern: &Sparsity) -> Vec<Vec<usize>> {
    let n = pattern.dim();
    // The columns of each row.
    let mut rows: Vec<Vec<usize>> = vec![Vec::new(); n];
    for c in 0..n {
        for &r in pattern.column(c) {
            rows[r].push(c);
        }
    }
    let mut colour_of = vec![usize::MAX; n];
    // `taken[k] == c`: colour k is used by a neighbour of column c.
    let mut taken: Vec<usize> = Vec::new();
    let mut colours: Vec<Vec<usize>> = Vec::new();
    for c in 0..n {
        for &r in pattern.column(c) {
            for &other in &rows[r] {
                let k = colour_of[other];
                if k != usize::MAX {
                    taken[k] = c;
                }
            }
        }
        let k = (0..colours.len())
            .find(|&k| taken[k] != c)
            .unwrap_or_else(|| {
                colours.push(Vec::new());
                taken.push(usize::MAX);
                colours.len() - 1
            });
        colour_of[c] = k;
        colours[k].push(c);
    }
    colours
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::EquationModel;
    use ia_core::FlowPartials;
    use ia_models::Model;

    /// A nonlinear chain of `n` states, each reading its neighbours, with
    /// a `let` shared by all rates.
    fn chain(n: usize) -> EquationModel {
        let states: serde_json::Map<String, serde_json::Value> = (0..n)
            .map(|i| (format!("x{i}"), (0.1 * i as f64).into()))
            .collect();
        let rates: serde_json::Map<String, serde_json::Value> = (0..n)
            .map(|i| {
                let left = if i > 0 {
                    format!("sin(x{}) * x{i}", i - 1)
                } else {
                    "x0".into()
                };
                let right = if i + 1 < n {
                    format!("x{}^2", i + 1)
                } else {
                    "k".into()
                };
                (
                    format!("x{i}"),
                    format!("{left} - c * {right} + t * x{i}").into(),
                )
            })
            .collect();
        EquationModel::from_value(&serde_json::json!({
            "name": "chain", "states": states, "params": {"k": 0.5},
            "let": {"c": "k * k"},
            "modes": {"only": {"flow": rates}}, "transitions": [], "t_end": 1.0
        }))
        .unwrap()
    }

    #[test]
    fn the_declared_entries_are_the_dense_partials() {
        // Reference: the dense state partials by dual numbers (`Autodiff`),
        // which must vanish outside the declared pattern and equal the
        // sparse entries inside it.
        let n = 12;
        let system = chain(n).system();
        let flow = &system.modes()[0].flow;
        let pattern = flow.state_sparsity().expect("declared");
        assert_eq!(pattern.nnz(), 3 * n - 2);
        let x: Vec<f64> = (0..n).map(|i| 0.3 + 0.2 * i as f64).collect();
        let (t, p) = (0.7, [0.5]);
        let mut dense = FlowPartials::zeros(n, 1);
        flow.partials(t, &x, &p, &mut dense);
        let mut values = vec![0.0; pattern.nnz()];
        assert!(flow.sparse_state_partials(t, &x, &p, &mut values));
        for c in 0..n {
            for r in 0..n {
                let want = dense.x[(r, c)];
                match pattern.position(r, c) {
                    Some(k) => assert!((values[k] - want).abs() < 1e-14, "({r}, {c})"),
                    None => assert_eq!(want, 0.0, "({r}, {c}) outside the pattern"),
                }
            }
        }
    }

    #[test]
    fn a_tridiagonal_pattern_takes_three_colours() {
        // Reference: a tridiagonal matrix's columns c, c + 3, ... share no
        // row, and three neighbouring columns all share one.
        let n: usize = 50;
        let entries =
            (0..n).flat_map(|i| [(i, i), (i.saturating_sub(1), i), ((i + 1).min(n - 1), i)]);
        let pattern = Sparsity::from_entries(n, entries).unwrap();
        let colours = colour_columns(&pattern);
        assert_eq!(colours.len(), 3);
        for columns in &colours {
            let mut seen = vec![false; n];
            for &c in columns {
                for &r in pattern.column(c) {
                    assert!(!seen[r], "row {r} twice in one colour");
                    seen[r] = true;
                }
            }
        }
    }
}
