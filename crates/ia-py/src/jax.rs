//! The two calls behind `impact_adjoint.jax.solver`, on batches (a leading
//! axis of `B` runs, `B = 1` outside `jax.vmap`):
//!
//! * [`JaxSolver::outputs`]: the final state, the first `K` event times
//!   (padded with `inf`) and their count, and the observed states;
//! * [`JaxSolver::cotangent_gradient`]: the vector-Jacobian product of those
//!   outputs with the cotangents `(g_x, g_t, g_y)`, which is the gradient of
//!   the scalar loss `L = g_x . x(T) + sum_k g_t[k] t_k + sum_i g_y[i] . x(t_i)`
//!   ([`Cotangents`]): one adjoint pass of the library per run.
//!
//! The runs of a batch are computed without the GIL, one after the other
//! until the library's batch calls (`ia_adjoint::batch`) are merged.

use crate::errors::{invalid, library, to_py};
use crate::model::{Model, RunOptions};
use crate::results::matrix;
use ia_adjoint::{Gradient, Loss, LossSeeds, Problem};
use ia_cli::{CliError, Scenario};
use ia_core::{short_num, HybridError, Trajectory};
use numpy::{PyArray1, PyArrayMethods, PyReadonlyArray2, PyReadonlyArray3, PyUntypedArrayMethods};
use pyo3::prelude::*;

/// A prepared run of a model (its scenario checked once) taking only the
/// initial state and the parameters.
#[pyclass(frozen, module = "impact_adjoint._core")]
pub struct JaxSolver {
    scenario: Scenario,
    max_events: usize,
}

/// The loss whose gradient is the vector-Jacobian product of the outputs
/// with the cotangents: the seeds are the cotangents themselves (the loss is
/// linear in the outputs). Event `k` at or past `K` is not an output and
/// gets no seed; neither does a padding entry.
struct Cotangents<'a> {
    /// The state names, for the error naming a non-finite cotangent.
    state_names: &'a [String],
    final_state: &'a [f64],
    event_times: &'a [f64],
    /// `n_obs x n`, row-major.
    observations: &'a [f64],
}

impl Loss for Cotangents<'_> {
    /// The cotangents that seed the pass (those of padding entries and of
    /// observations not reached are not read) must be finite.
    fn check_run(&self, trajectory: &Trajectory) -> Result<(), HybridError> {
        let n = trajectory.final_state.len();
        let names = self.state_names;
        let events = trajectory.events.len().min(self.event_times.len());
        let observed = trajectory.observations.len() * n;
        let time = trajectory.final_time;
        HybridError::check_finite(
            "cotangent of the final state",
            names,
            self.final_state,
            time,
        )?;
        HybridError::check_finite(
            "cotangent of event time",
            &[],
            &self.event_times[..events],
            time,
        )?;
        HybridError::check_finite(
            "cotangent of the observed states",
            &[],
            &self.observations[..observed.min(self.observations.len())],
            time,
        )
    }

    fn evaluate(&self, trajectory: &Trajectory, seeds: &mut LossSeeds) -> f64 {
        let dot = |a: &[f64], b: &[f64]| a.iter().zip(b).map(|(a, b)| a * b).sum::<f64>();
        seeds.final_state.copy_from_slice(self.final_state);
        let mut value = dot(self.final_state, &trajectory.final_state);
        let n = seeds.final_state.len();
        for ((seed, observed), weights) in seeds
            .observations
            .iter_mut()
            .zip(&trajectory.observations)
            .zip(self.observations.chunks_exact(n))
        {
            seed.copy_from_slice(weights);
            value += dot(weights, &observed.state);
        }
        for ((seed, event), &w) in seeds
            .event_times
            .iter_mut()
            .zip(&trajectory.events)
            .zip(self.event_times)
        {
            *seed = w;
            value += w * event.time;
        }
        value
    }
}

/// The outputs of one run.
struct Outputs {
    final_state: Vec<f64>,
    event_times: Vec<f64>,
    count: i64,
    observations: Vec<f64>,
}

impl JaxSolver {
    fn n(&self) -> usize {
        self.scenario.spec.states.len()
    }

    fn n_params(&self) -> usize {
        self.scenario.spec.params.len()
    }

    fn n_obs(&self) -> usize {
        self.scenario.observe.len()
    }

    /// Every observation time must have been reached (a terminal transition
    /// ends a run early).
    fn check_observed(&self, trajectory: &Trajectory) -> Result<(), CliError> {
        let reached = trajectory.observations.len();
        match self.scenario.observe.get(reached) {
            None => Ok(()),
            Some(&t) => Err(HybridError::invalid_num(
                format!("observe[{reached}]"),
                t,
                format!(
                    "the run ended at t = {} (a terminal transition), before this observation time; observe times up to the run's end",
                    short_num(trajectory.final_time)
                ),
            )
            .into()),
        }
    }

    /// The runs from the rows of `x0s` and `params` (`batch` of each).
    fn problems(
        &self,
        batch: usize,
        x0s: &[f64],
        params: &[f64],
    ) -> Result<Vec<Problem<'_>>, CliError> {
        let (n, n_params) = (self.n(), self.n_params());
        (0..batch)
            .map(|b| {
                self.scenario.problem_from(
                    x0s[b * n..(b + 1) * n].to_vec(),
                    params[b * n_params..(b + 1) * n_params].to_vec(),
                )
            })
            .collect()
    }

    /// The outputs of one run, or its error in the command line's words.
    fn outputs_of(
        &self,
        problem: &Problem<'_>,
        run: Result<Trajectory, HybridError>,
    ) -> Result<Outputs, CliError> {
        let trajectory = run.map_err(|e| ia_cli::explain(&self.scenario, &problem.params, e))?;
        self.check_observed(&trajectory)?;
        let mut event_times = vec![f64::INFINITY; self.max_events];
        for (slot, event) in event_times.iter_mut().zip(&trajectory.events) {
            *slot = event.time;
        }
        Ok(Outputs {
            count: i64::try_from(trajectory.stats.events).unwrap_or(i64::MAX),
            final_state: trajectory.final_state,
            event_times,
            observations: trajectory
                .observations
                .iter()
                .flat_map(|o| o.state.iter().copied())
                .collect(),
        })
    }

    /// `dL/dx0` then `dL/dp` of one run, or its error in the command line's
    /// words.
    fn gradient_of(
        &self,
        problem: &Problem<'_>,
        run: Result<Gradient, HybridError>,
    ) -> Result<Vec<f64>, CliError> {
        let grad = run.map_err(|e| ia_cli::explain(&self.scenario, &problem.params, e))?;
        self.check_observed(&grad.trajectory)?;
        Ok(grad.concatenated())
    }
}

/// The rows of a `B x width` array, checked.
fn rows<'a>(array: &'a PyReadonlyArray2<'_, f64>, width: usize, what: &str) -> PyResult<&'a [f64]> {
    let shape = array.shape();
    if shape[1] != width {
        return Err(library(HybridError::DimensionMismatch {
            what: what.into(),
            expected: width,
            found: shape[1],
        }));
    }
    array
        .as_slice()
        .map_err(|e| invalid(format!("'{what}': {e}")))
}

#[pymethods]
impl JaxSolver {
    /// A solver of `model` for the runs `model.simulate(x0, params, t_end,
    /// solver=solver, observe=observe)` with their first `max_events` event
    /// times. The solver is the one the adjoint runs (the built-in equivalent
    /// of an `ode_solvers.*` method), so that values and gradients come from
    /// the same steps.
    #[new]
    #[pyo3(signature = (model, t_end, *, observe=None, max_events, solver=None, mode=None))]
    fn new(
        model: &Model,
        t_end: &Bound<'_, PyAny>,
        observe: Option<&Bound<'_, PyAny>>,
        max_events: &Bound<'_, PyAny>,
        solver: Option<&Bound<'_, PyAny>>,
        mode: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Self> {
        let max_events = match max_events.extract::<i64>() {
            Ok(k) if k >= 0 => k as usize,
            _ => {
                return Err(library(HybridError::invalid(
                    "max_events",
                    crate::convert::describe(max_events),
                    "must be an integer of at least 0: how many event times the solver returns (padded with inf)",
                )))
            }
        };
        let mut scenario = model.scenario(&RunOptions {
            t_end: Some(t_end),
            solver,
            observe,
            mode,
            ..RunOptions::default()
        })?;
        scenario.solver = ia_cli::adjoint_solver(&scenario.solver).map_err(to_py)?;
        Ok(Self {
            scenario,
            max_events,
        })
    }

    /// `(n, n_params, K, n_obs)`: the sizes of the inputs and outputs.
    #[getter]
    fn sizes(&self) -> (usize, usize, usize, usize) {
        (self.n(), self.n_params(), self.max_events, self.n_obs())
    }

    /// The outputs of the runs from the rows of `x0` (`B x n`) and `params`
    /// (`B x n_params`): final states `B x n`, event times `B x K`, event
    /// counts `B`, observed states `B x n_obs x n`.
    #[allow(clippy::type_complexity)]
    fn outputs<'py>(
        &self,
        py: Python<'py>,
        x0: PyReadonlyArray2<'py, f64>,
        params: PyReadonlyArray2<'py, f64>,
    ) -> PyResult<(
        Bound<'py, PyAny>,
        Bound<'py, PyAny>,
        Bound<'py, PyAny>,
        Bound<'py, PyAny>,
    )> {
        let (n, n_params, k, n_obs) = self.sizes();
        let x0s = rows(&x0, n, "initial state")?;
        let ps = rows(&params, n_params, "parameters")?;
        let batch = x0.shape()[0];
        if params.shape()[0] != batch {
            return Err(library(HybridError::DimensionMismatch {
                what: "batch of parameters (one row per initial state)".into(),
                expected: batch,
                found: params.shape()[0],
            }));
        }
        let runs = py
            .detach(|| {
                let problems = self.problems(batch, x0s, ps)?;
                let runs = ia_adjoint::batch::simulate_batch(&problems);
                problems
                    .iter()
                    .zip(runs)
                    .map(|(problem, run)| self.outputs_of(problem, run))
                    .collect::<Result<Vec<_>, CliError>>()
            })
            .map_err(to_py)?;
        let finals = runs
            .iter()
            .flat_map(|r| r.final_state.iter().copied())
            .collect();
        let times = runs
            .iter()
            .flat_map(|r| r.event_times.iter().copied())
            .collect();
        let counts: Vec<i64> = runs.iter().map(|r| r.count).collect();
        let observed = runs
            .iter()
            .flat_map(|r| r.observations.iter().copied())
            .collect();
        Ok((
            matrix(py, batch, n, finals)?,
            matrix(py, batch, k, times)?,
            PyArray1::from_vec(py, counts).into_any(),
            PyArray1::from_vec(py, observed)
                .reshape([batch, n_obs, n])?
                .into_any(),
        ))
    }

    /// The vector-Jacobian products of the runs' outputs with the
    /// cotangents `g_final` (`B x n`), `g_times` (`B x K`) and `g_observed`
    /// (`B x n_obs x n`): the gradients with respect to `x0` (`B x n`) and
    /// `params` (`B x n_params`), one adjoint pass per run.
    #[allow(clippy::type_complexity)]
    fn cotangent_gradient<'py>(
        &self,
        py: Python<'py>,
        x0: PyReadonlyArray2<'py, f64>,
        params: PyReadonlyArray2<'py, f64>,
        g_final: PyReadonlyArray2<'py, f64>,
        g_times: PyReadonlyArray2<'py, f64>,
        g_observed: PyReadonlyArray3<'py, f64>,
    ) -> PyResult<(Bound<'py, PyAny>, Bound<'py, PyAny>)> {
        let (n, n_params, k, n_obs) = self.sizes();
        let batch = x0.shape()[0];
        let x0s = rows(&x0, n, "initial state")?;
        let ps = rows(&params, n_params, "parameters")?;
        let gf = rows(&g_final, n, "cotangent of the final state")?;
        let gt = rows(&g_times, k, "cotangent of the event times")?;
        let go_shape = g_observed.shape();
        if go_shape[1] != n_obs || go_shape[2] != n {
            return Err(invalid(format!(
                "the cotangent of the observed states must have shape (batch, {n_obs}, {n}), got {go_shape:?}"
            )));
        }
        let go = g_observed
            .as_slice()
            .map_err(|e| invalid(format!("cotangent of the observed states: {e}")))?;
        for (what, rows) in [
            ("parameters", params.shape()[0]),
            ("cotangents of the final state", g_final.shape()[0]),
            ("cotangents of the event times", g_times.shape()[0]),
            ("cotangents of the observed states", go_shape[0]),
        ] {
            if rows != batch {
                return Err(library(HybridError::DimensionMismatch {
                    what: format!("batch of {what} (one row per initial state)"),
                    expected: batch,
                    found: rows,
                }));
            }
        }
        let m = n + n_params;
        let grads = py
            .detach(|| {
                let problems = self.problems(batch, x0s, ps)?;
                let losses: Vec<Cotangents<'_>> = (0..batch)
                    .map(|b| Cotangents {
                        state_names: self.scenario.system.state_names(),
                        final_state: &gf[b * n..(b + 1) * n],
                        event_times: &gt[b * k..(b + 1) * k],
                        observations: &go[b * n_obs * n..(b + 1) * n_obs * n],
                    })
                    .collect();
                let runs = ia_adjoint::batch::gradient_batch_each(&problems, &losses);
                problems
                    .iter()
                    .zip(runs)
                    .map(|(problem, run)| self.gradient_of(problem, run))
                    .collect::<Result<Vec<_>, CliError>>()
            })
            .map_err(to_py)?;
        let (gx, gp): (Vec<f64>, Vec<f64>) = (
            grads.iter().flat_map(|g| g[..n].iter().copied()).collect(),
            grads.iter().flat_map(|g| g[n..m].iter().copied()).collect(),
        );
        Ok((matrix(py, batch, n, gx)?, matrix(py, batch, n_params, gp)?))
    }
}
