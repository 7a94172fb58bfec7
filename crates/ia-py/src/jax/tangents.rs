//! Forward mode of `impact_adjoint.jax`: the Jacobian-vector products of a
//! batch's outputs ([`SolverCore::tangents`], behind the tangent-linear
//! custom call of `crate::ffi`), one forward-sensitivity pass per distinct
//! point carrying every tangent column at that point.

use super::{check_len, count, pool, Rows, Sizes, SolverCore};
use ia_adjoint::nalgebra::DMatrix;
use ia_adjoint::Sensitivities;
use ia_scenario::ScenarioError;
use std::collections::HashMap;

/// The inputs of Jacobian-vector products, row-major: rows of initial
/// states (`n` each) and parameters (`n_params` each), rows of `m` tangent
/// columns of each (`m x n`, `m x n_params`), and the items: which rows
/// each output row is made of. Items of the same initial-state and
/// parameter rows share one run (`jax.jacfwd`: every tangent column of
/// one point in one forward pass).
pub(crate) struct TangentsIn<'a> {
    /// The number of tangent columns of a tangent row.
    pub columns: usize,
    /// The initial states, `rows x n`.
    pub x0s: &'a [f64],
    /// The parameters, `rows x n_params`.
    pub params: &'a [f64],
    /// The tangents of the initial states, `rows x m x n`.
    pub x0_tangents: &'a [f64],
    /// The tangents of the parameters, `rows x m x n_params`.
    pub param_tangents: &'a [f64],
    /// The final times, one per row of `x0s`, when given per run
    /// (otherwise the solver's).
    pub t_ends: Option<&'a [f64]>,
    /// Per output row: the rows of `x0s`, `params`, `x0_tangents` and
    /// `param_tangents` it takes.
    pub items: &'a [[usize; 4]],
}

/// The tangents of the outputs, one row per item, row-major: final states
/// `items x m x n`, event times `items x m x K` (zero past the run's
/// events) and observed states `items x m x n_obs x n`.
pub(crate) struct TangentsOut<'a> {
    /// `items x m x n`.
    pub final_state: &'a mut [f64],
    /// `items x m x K`.
    pub event_times: &'a mut [f64],
    /// `items x m x n_obs x n`.
    pub observed: &'a mut [f64],
}

impl SolverCore {
    /// The Jacobian-vector products of the runs' outputs with the tangent
    /// columns of each item: one forward-sensitivity pass per distinct
    /// point carrying every column of every item at that point as a seed
    /// direction (`ia_adjoint::jacobian_along_in`, on the taped run's
    /// steps), so its cost grows with the columns; one run on this thread,
    /// more on the pool, as in [`SolverCore::outputs`].
    pub(crate) fn tangents(
        &self,
        input: &TangentsIn<'_>,
        out: TangentsOut<'_>,
    ) -> Result<(), ScenarioError> {
        let Sizes {
            n,
            n_params,
            k,
            n_obs,
        } = self.sizes();
        let m = input.columns;
        let items = input.items.len();
        check_len(
            "tangents of the final states",
            out.final_state.len(),
            items * m * n,
        )?;
        check_len(
            "tangents of the event times",
            out.event_times.len(),
            items * m * k,
        )?;
        check_len(
            "tangents of the observed states",
            out.observed.len(),
            items * m * n_obs * n,
        )?;
        let within = |what: &str, row: usize, len: usize, stride: usize| {
            check_len(what, len.max((row + 1) * stride), len)
        };
        // The distinct points, in order of first appearance (found by
        // their rows of `x0s` and `params`: linear in the items), and the
        // tangent rows of each point's items, item by item.
        let mut points: Vec<[usize; 2]> = Vec::new();
        let mut index_of: HashMap<[usize; 2], usize> = HashMap::new();
        let mut point_of = Vec::with_capacity(items);
        let mut columns_of: Vec<Vec<[usize; 2]>> = Vec::new();
        for &[x, p, tx, tp] in input.items {
            within("initial states", x, input.x0s.len(), n)?;
            within("parameters", p, input.params.len(), n_params)?;
            within(
                "tangents of the initial states",
                tx,
                input.x0_tangents.len(),
                m * n,
            )?;
            within(
                "tangents of the parameters",
                tp,
                input.param_tangents.len(),
                m * n_params,
            )?;
            let index = *index_of.entry([x, p]).or_insert_with(|| {
                points.push([x, p]);
                columns_of.push(Vec::new());
                points.len() - 1
            });
            columns_of[index].push([tx, tp]);
            point_of.push(index);
        }
        let x0s: Vec<f64> = points
            .iter()
            .flat_map(|&[x, _]| input.x0s[x * n..(x + 1) * n].iter().copied())
            .collect();
        let params: Vec<f64> = points
            .iter()
            .flat_map(|&[_, p]| {
                input.params[p * n_params..(p + 1) * n_params]
                    .iter()
                    .copied()
            })
            .collect();
        let t_ends: Option<Vec<f64>> = input.t_ends.map(|t| {
            points
                .iter()
                .map(|&[x, _]| t.get(x).copied().unwrap_or(f64::NAN))
                .collect()
        });
        let rows = Rows::new(self.sizes(), points.len(), &x0s, &params, t_ends.as_deref())?;
        // The seeds of each point: the columns of its items, item by item.
        let seeds: Vec<(usize, DMatrix<f64>, DMatrix<f64>)> = columns_of
            .iter()
            .enumerate()
            .map(|(point, mine)| {
                let dx0 = DMatrix::from_fn(n, mine.len() * m, |i, col| {
                    input.x0_tangents[(mine[col / m][0] * m + col % m) * n + i]
                });
                let dp = DMatrix::from_fn(n_params, mine.len() * m, |j, col| {
                    input.param_tangents[(mine[col / m][1] * m + col % m) * n_params + j]
                });
                (point, dx0, dp)
            })
            .collect();
        count(&self.counts.tangent_passes, points.len());
        count(&self.counts.tangent_columns, items * m);
        // On the taped run's steps (the adjoint's): the tangents are linear in the seeds
        // and agree to rounding with the adjoint (their transpose). Each
        // point's problem is made where its pass runs (`SolverCore::problem_at`).
        let method = ia_adjoint::Method::ForwardOnStateSteps;
        let pass = |(point, dx0, dp): &(usize, DMatrix<f64>, DMatrix<f64>),
                    workspace: &mut ia_adjoint::Workspace|
         -> Result<Sensitivities, ScenarioError> {
            let problem = self.problem_at(&rows, *point, false)?;
            let sens = ia_adjoint::jacobian_along_in(&problem, method, dx0, dp, workspace)
                .map_err(|e| self.explain(&problem, e))?;
            self.check_observed(&sens.trajectory)?;
            Ok(sens)
        };
        let mut kept = (points.len() == 1).then(|| self.kept_workspace());
        let runs = match kept.as_deref_mut() {
            Some(workspace) => vec![pass(&seeds[0], workspace)],
            None => pool()?.map_in(&seeds, pass),
        };
        // The first failing point, in input order, gives the error.
        let sens: Vec<Sensitivities> = runs.into_iter().collect::<Result<_, _>>()?;
        // Item i's column c is column (rank of i among its point's items) m + c.
        let mut taken = vec![0_usize; sens.len()];
        for (item, &point) in point_of.iter().enumerate() {
            let sens = &sens[point];
            let first = taken[point] * m;
            taken[point] += 1;
            let rows = sens.event_time_gradients.nrows();
            for c in 0..m {
                let (row, col) = (item * m + c, first + c);
                out.final_state[row * n..(row + 1) * n]
                    .copy_from_slice(sens.final_jacobian.column(col).as_slice());
                for (slot, event) in out.event_times[row * k..(row + 1) * k]
                    .iter_mut()
                    .zip(self.times.slots(&sens.trajectory))
                {
                    *slot = match event {
                        Some(e) if e < rows => sens.event_time_gradients[(e, col)],
                        _ => 0.0,
                    };
                }
                let observed = &mut out.observed[row * n_obs * n..(row + 1) * n_obs * n];
                for (rows, jacobian) in observed
                    .chunks_exact_mut(n)
                    .zip(&sens.observation_jacobians)
                {
                    rows.copy_from_slice(jacobian.column(col).as_slice());
                }
            }
        }
        if let Some(workspace) = kept.as_deref_mut() {
            for s in sens {
                workspace.recycle(s);
            }
        }
        Ok(())
    }
}
