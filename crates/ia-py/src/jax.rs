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
//! Both compute in [`SolverCore`] (plain Rust, no GIL): these Python
//! methods serve the calls outside `jax.jit` and the tests, and the XLA FFI
//! handlers of `crate::ffi` serve jitted code. A batch of more than one run
//! goes to `ia_adjoint::batch` (one worker per core).

use crate::errors::{invalid, library, to_py};
use crate::model::{Model, RunOptions};
use crate::tapes::{self, KeptRun, TapeStore};
use crate::times::TimeOutputs;
use ia_adjoint::batch::Batch;
use ia_adjoint::{Loss, LossSeeds, Problem};
use ia_core::{short_num, HybridError, Trajectory};
use ia_scenario::{Scenario, ScenarioError};
use numpy::{
    PyArray1, PyArrayMethods, PyReadonlyArray1, PyReadonlyArray2, PyReadonlyArray3,
    PyUntypedArrayMethods,
};
use pyo3::prelude::*;
use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

#[cfg(test)]
mod probe;
mod tangents;
pub(crate) use tangents::{TangentsIn, TangentsOut};

/// A prepared run of a model (its scenario checked once) taking only the
/// initial state and the parameters.
///
/// Its core is also in a registry under [`JaxSolver::ffi_id`], where the
/// XLA FFI handlers (`crate::ffi`) find it: jitted code carries the id, not
/// a pointer, so that a call after the solver is gone is an error naming
/// the id, never a dangling read.
#[pyclass(frozen, module = "impact_adjoint._core")]
pub struct JaxSolver {
    core: Arc<SolverCore>,
    id: u64,
}

/// The cores of the living [`JaxSolver`]s by id (ids are never reused).
static REGISTRY: Mutex<BTreeMap<u64, Arc<SolverCore>>> = Mutex::new(BTreeMap::new());

/// The next id of a [`JaxSolver`]; starts at 1 so that 0 is never a solver.
static NEXT_ID: AtomicU64 = AtomicU64::new(1);

/// The core of the living solver `id`: a clone of its `Arc`, so that the
/// caller's run keeps it alive even if the Python object is dropped meanwhile.
pub(crate) fn registered(id: u64) -> Option<Arc<SolverCore>> {
    // A poisoned lock only means a panic elsewhere while holding it; the
    // map itself is never left half-updated by insert/remove.
    let map = REGISTRY.lock().unwrap_or_else(|e| e.into_inner());
    map.get(&id).cloned()
}

impl Drop for JaxSolver {
    fn drop(&mut self) {
        let mut map = REGISTRY.lock().unwrap_or_else(|e| e.into_inner());
        map.remove(&self.id);
    }
}

/// The loss whose gradient is the vector-Jacobian product of the outputs
/// with the cotangents: the seeds are the cotangents themselves (the loss is
/// linear in the outputs). Event `k` at or past `K` is not an output and
/// gets no seed; neither does a padding entry, nor a first firing time that
/// is `inf` (the transition did not fire).
struct Cotangents<'a> {
    /// The state names, for the error naming a non-finite cotangent.
    state_names: &'a [String],
    /// Which event each time output reads.
    times: &'a TimeOutputs,
    final_state: &'a [f64],
    /// One per time output ([`TimeOutputs`]).
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
        let observed = trajectory.observations.len() * n;
        let time = trajectory.final_time;
        HybridError::check_finite(
            "cotangent of the final state",
            names,
            self.final_state,
            time,
        )?;
        self.times.check_cotangents(self.event_times, trajectory)?;
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
        // `+=`: an event may be read by two outputs (the k-th event time
        // and a first firing time).
        for (slot, &w) in self.times.slots(trajectory).zip(self.event_times) {
            if let Some(e) = slot {
                seeds.event_times[e] += w;
                value += w * trajectory.events[e].time;
            }
        }
        value
    }
}

/// How the backward passes at one point of a batch find its taped run.
enum PointRun {
    /// The tape of a point of several items (a `jax.jacrev`: one cotangent
    /// an item), read by each.
    Shared(KeptRun),
    /// The tape of a point of one item, read once and its buffers given to
    /// the worker.
    Owned(Mutex<Option<KeptRun>>),
    /// A point of one item without a kept tape: its pass records and reads
    /// one.
    Fresh,
}

/// The sizes of a solver's inputs and outputs.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Sizes {
    /// State dimension.
    pub n: usize,
    /// Number of parameters.
    pub n_params: usize,
    /// Number of time outputs: the `K` event times, then the first firing
    /// times of the transitions named in `first` ([`TimeOutputs`]).
    pub k: usize,
    /// Number of observation times.
    pub n_obs: usize,
}

/// The outputs of a batch of `B` runs, row-major, where the caller wants
/// them (NumPy arrays for the Python method, XLA's result buffers for the
/// FFI handler): final states `B x n`, event times `B x K`, event counts
/// `B`, observed states `B x n_obs x n`.
pub(crate) struct OutputsOut<'a> {
    /// `B x n`.
    pub final_state: &'a mut [f64],
    /// `B x K`, padded with `inf`.
    pub event_times: &'a mut [f64],
    /// `B`: the number of events of each run (it may exceed `K`).
    pub counts: &'a mut [i64],
    /// `B x n_obs x n`.
    pub observed: &'a mut [f64],
    /// `B x n`, when wanted: `d x(T) / dT`, the flow at each final state
    /// (`ia_adjoint::final_state_rate`).
    pub final_rate: Option<&'a mut [f64]>,
}

/// The inputs of a batch's vector-Jacobian products, row-major: the runs
/// (`x0s` `B x n`, `params` `B x n_params`) and the cotangents of their
/// outputs (`B x n`, `B x K`, `B x n_obs x n`).
pub(crate) struct CotangentsIn<'a> {
    /// The initial states, `B x n`.
    pub x0s: &'a [f64],
    /// The parameters, `B x n_params`.
    pub params: &'a [f64],
    /// The cotangents of the final states, `B x n`.
    pub final_state: &'a [f64],
    /// The cotangents of the event times, `B x K`.
    pub event_times: &'a [f64],
    /// The cotangents of the observed states, `B x n_obs x n`.
    pub observed: &'a [f64],
    /// The final times, `B`, when given per run (otherwise the solver's).
    pub t_ends: Option<&'a [f64]>,
}

/// The inputs of a batch's runs, row-major, their lengths checked: the
/// initial states (`B x n`), the parameters (`B x n_params`) and the final
/// times (`B`) when given per run.
#[derive(Clone, Copy)]
pub(crate) struct Rows<'a> {
    x0s: &'a [f64],
    params: &'a [f64],
    t_ends: Option<&'a [f64]>,
    n: usize,
    n_params: usize,
}

impl<'a> Rows<'a> {
    /// The rows of `batch` runs, or a dimension mismatch naming what is short.
    pub(crate) fn new(
        sizes: Sizes,
        batch: usize,
        x0s: &'a [f64],
        params: &'a [f64],
        t_ends: Option<&'a [f64]>,
    ) -> Result<Self, ScenarioError> {
        let Sizes { n, n_params, .. } = sizes;
        check_len("initial states of the batch", x0s.len(), batch * n)?;
        check_len("parameters of the batch", params.len(), batch * n_params)?;
        if let Some(t_ends) = t_ends {
            check_len("final times of the batch", t_ends.len(), batch)?;
        }
        Ok(Rows {
            x0s,
            params,
            t_ends,
            n,
            n_params,
        })
    }

    fn x0(&self, b: usize) -> &'a [f64] {
        &self.x0s[b * self.n..(b + 1) * self.n]
    }

    fn params(&self, b: usize) -> &'a [f64] {
        &self.params[b * self.n_params..(b + 1) * self.n_params]
    }

    /// Run `b`'s own final time, if the batch gives them.
    fn t_end(&self, b: usize) -> Option<f64> {
        self.t_ends.map(|t| t[b])
    }
}

impl<'a> OutputsOut<'a> {
    /// The outputs of each run of the batch on their own (a batch of one
    /// each, in order), for the workers to write where they run: the
    /// lengths checked by the caller.
    fn split(&mut self, sizes: Sizes) -> Vec<OutputsOut<'_>> {
        let Sizes { n, k, n_obs, .. } = sizes;
        let batch = self.counts.len();
        let mut rates = self
            .final_rate
            .as_deref_mut()
            .map(|rates| rows_of(rates, n, batch));
        rows_of(self.final_state, n, batch)
            .zip(rows_of(self.event_times, k, batch))
            .zip(self.counts.chunks_mut(1))
            .zip(rows_of(self.observed, n_obs * n, batch))
            .map(
                |(((final_state, event_times), counts), observed)| OutputsOut {
                    final_state,
                    event_times,
                    counts,
                    observed,
                    final_rate: rates.as_mut().and_then(Iterator::next),
                },
            )
            .collect()
    }
}

/// The checked scenario and `K` behind a [`JaxSolver`]: what both ways in
/// (the Python methods and the XLA FFI handlers of `crate::ffi`) compute
/// with, so that each output is formed in one place. Plain Rust data, so
/// the FFI handlers run it on XLA's threads without the GIL.
pub(crate) struct SolverCore {
    scenario: Scenario,
    /// The time outputs: the first `K` event times and the first firing
    /// times of named transitions.
    times: TimeOutputs,
    /// The buffers of single runs, kept from one call to the next.
    workspace: Mutex<ia_adjoint::Workspace>,
    /// The taped runs of differentiated forward calls, for their backward
    /// passes.
    tapes: Mutex<TapeStore>,
    /// What the solver has run, for [`JaxSolver::statistics`].
    counts: Counts,
}

/// How many passes of each kind a solver has made.
#[derive(Default)]
struct Counts {
    /// Runs without a tape (plain calls).
    runs: AtomicU64,
    /// Taped runs (differentiated forward calls, and backward passes that
    /// found no kept tape).
    taped_runs: AtomicU64,
    /// Adjoint passes.
    backward_passes: AtomicU64,
    /// Backward passes that found no kept tape of a run a forward call
    /// made (used already, or evicted) and ran the model again.
    replays: AtomicU64,
    /// Forward-sensitivity passes (forward mode).
    tangent_passes: AtomicU64,
    /// The sensitivity columns those passes carried (the tangent columns
    /// at their points).
    tangent_columns: AtomicU64,
}

/// Adds `n` to a counter.
fn count(counter: &AtomicU64, n: usize) {
    counter.fetch_add(n as u64, Ordering::Relaxed);
}

/// The worker pool of batches (under `jax.vmap`), made once per process: a
/// pool per call would pay its threads' start at every call. A pool
/// inherited through `fork()` has lost its threads (work sent to it would
/// wait forever), so a child makes its own.
fn pool() -> Result<Arc<Batch>, ScenarioError> {
    static POOL: Mutex<Option<(u32, Arc<Batch>)>> = Mutex::new(None);
    let pid = std::process::id();
    let mut slot = POOL.lock().unwrap_or_else(|e| e.into_inner());
    match slot.take() {
        Some((owner, batch)) if owner == pid => {
            *slot = Some((owner, Arc::clone(&batch)));
            return Ok(batch);
        }
        // Dropping the parent's pool would signal threads that are not
        // there: leave it be.
        Some(inherited) => std::mem::forget(inherited),
        None => {}
    }
    let batch = Arc::new(Batch::with_threads(0).map_err(ScenarioError::Library)?);
    *slot = Some((pid, Arc::clone(&batch)));
    Ok(batch)
}

/// `expected` entries in `slice`, or a dimension mismatch naming `what`.
fn check_len(what: &str, slice_len: usize, expected: usize) -> Result<(), ScenarioError> {
    if slice_len == expected {
        Ok(())
    } else {
        Err(HybridError::DimensionMismatch {
            what: what.into(),
            expected,
            found: slice_len,
        }
        .into())
    }
}

impl SolverCore {
    /// The core of runs of `scenario` (its solver the adjoint's) with the
    /// time outputs `times`.
    pub(crate) fn new(scenario: Scenario, times: TimeOutputs) -> Self {
        SolverCore {
            workspace: Mutex::new(ia_adjoint::Workspace::new()),
            tapes: Mutex::new(TapeStore::default()),
            counts: Counts::default(),
            scenario,
            times,
        }
    }

    pub(crate) fn sizes(&self) -> Sizes {
        Sizes {
            n: self.scenario.spec.states.len(),
            n_params: self.scenario.spec.params.len(),
            k: self.times.len(),
            n_obs: self.scenario.observe.len(),
        }
    }

    /// Every observation time must have been reached (a terminal transition
    /// ends a run early).
    fn check_observed(&self, trajectory: &Trajectory) -> Result<(), ScenarioError> {
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

    /// The run of row `b` of `rows`, its inputs checked unless
    /// `checked_already` (bit for bit the inputs of a run made before).
    /// A batch's workers make each item's problem where they run it (every
    /// call: outputs, vector-Jacobian and Jacobian-vector products): made
    /// before, one after the other, the problems of a batch of
    /// `ball2d_flat_a` gradients cost a tenth of its time, every worker
    /// waiting. A call of one run makes its one problem in place, with no
    /// vector.
    pub(crate) fn problem_at(
        &self,
        rows: &Rows<'_>,
        b: usize,
        checked_already: bool,
    ) -> Result<Problem<'_>, ScenarioError> {
        if checked_already {
            self.prechecked_problem(rows.x0(b), rows.params(b), rows.t_end(b))
        } else {
            self.problem(rows.x0(b), rows.params(b), rows.t_end(b))
        }
    }

    /// The run from `x0` and `params` until `t_end` when given (checked as
    /// the scenario's `t_end` is), otherwise the solver's `t_end`.
    fn problem(
        &self,
        x0: &[f64],
        params: &[f64],
        t_end: Option<f64>,
    ) -> Result<Problem<'_>, ScenarioError> {
        let mut problem = self.scenario.problem_from(x0.to_vec(), params.to_vec())?;
        if let Some(t_end) = t_end {
            problem.t_end = t_end;
            if !problem.t_end.is_finite() {
                return Err(HybridError::invalid_num(
                    "t_end",
                    problem.t_end,
                    "must be a finite number after the start time 0",
                )
                .into());
            }
            problem.validate()?;
            self.scenario.model.check_run_named(
                self.scenario.system.param_names(),
                &problem.params,
                problem.t_end,
            )?;
        }
        Ok(problem)
    }

    /// [`SolverCore::problem`] for inputs that passed its checks already,
    /// bit for bit (`ia_scenario::Scenario::problem_prechecked`).
    fn prechecked_problem(
        &self,
        x0: &[f64],
        params: &[f64],
        t_end: Option<f64>,
    ) -> Result<Problem<'_>, ScenarioError> {
        let mut problem = self
            .scenario
            .problem_prechecked(x0.to_vec(), params.to_vec())?;
        if let Some(t_end) = t_end {
            problem.t_end = t_end;
        }
        Ok(problem)
    }

    /// The error of a run in the command line's words.
    fn explain(&self, problem: &Problem<'_>, error: HybridError) -> ScenarioError {
        ia_scenario::explain(&self.scenario, &problem.params, error)
    }

    /// The outputs of the runs from the rows of `x0s` (`B x n`) and
    /// `params` (`B x n_params`), written into `out`; the first failing run
    /// gives the error. One run is the single call on this thread; more go
    /// to `ia_adjoint::batch` (one worker per core), which equals the single
    /// call to the last bit. With `taped` the runs record their tapes, kept
    /// for the backward passes ([`SolverCore::cotangent_gradient`]).
    pub(crate) fn outputs(
        &self,
        x0s: &[f64],
        params: &[f64],
        t_ends: Option<&[f64]>,
        mut out: OutputsOut<'_>,
        taped: bool,
    ) -> Result<(), ScenarioError> {
        let Sizes { n, k, n_obs, .. } = self.sizes();
        let batch = out.counts.len();
        check_len(
            "final states of the batch",
            out.final_state.len(),
            batch * n,
        )?;
        check_len("event times of the batch", out.event_times.len(), batch * k)?;
        check_len(
            "observed states of the batch",
            out.observed.len(),
            batch * n_obs * n,
        )?;
        if let Some(rates) = &out.final_rate {
            check_len("final rates of the batch", rates.len(), batch * n)?;
        }
        let options = ia_adjoint::AdjointOptions::default();
        let counted = if taped {
            &self.counts.taped_runs
        } else {
            &self.counts.runs
        };
        if batch == 1 {
            // One run: on this thread, without the vectors of a batch.
            let rows = Rows::new(self.sizes(), batch, x0s, params, t_ends)?;
            let problem = &self.problem_at(&rows, 0, false)?;
            count(counted, 1);
            let mut workspace = self.kept_workspace();
            if taped {
                // Boxed where recorded: from here on a run moves as a pointer.
                let run = ia_adjoint::record_in(problem, &options, &mut workspace)
                    .map(Box::new)
                    .map_err(|e| self.explain(problem, e))?;
                self.write_outputs(0, problem, run.trajectory(), &mut out)?;
                self.tape_store().keep([(tapes::key(problem), run)]);
            } else {
                let trajectory = ia_events::simulate_in(problem, workspace.integrator())
                    .map_err(|e| self.explain(problem, e))?;
                let written = self.write_outputs(0, problem, &trajectory, &mut out);
                workspace.integrator().recycle(trajectory);
                written?;
            }
            return Ok(());
        }
        // Each run's problem is made, run and written by the worker that
        // takes it (`SolverCore::problem_at`); the first failing run, in
        // input order, gives the error.
        let rows = Rows::new(self.sizes(), batch, x0s, params, t_ends)?;
        count(counted, batch);
        let mut outs = out.split(self.sizes());
        let indices: Vec<usize> = (0..batch).collect();
        if taped {
            let record = |&b: &usize,
                          out: &mut OutputsOut<'_>,
                          workspace: &mut ia_adjoint::Workspace|
             -> Result<(tapes::Key, KeptRun), ScenarioError> {
                let problem = self.problem_at(&rows, b, false)?;
                let run = ia_adjoint::record_in(&problem, &options, workspace)
                    .map(Box::new)
                    .map_err(|e| self.explain(&problem, e))?;
                self.write_outputs(0, &problem, run.trajectory(), out)?;
                Ok((tapes::key(&problem), run))
            };
            let keep = pool()?
                .map_into(&indices, &mut outs, record)
                .into_iter()
                .collect::<Result<Vec<_>, _>>()?;
            self.tape_store().keep(keep);
            return Ok(());
        }
        let run = |&b: &usize, out: &mut OutputsOut<'_>, workspace: &mut ia_adjoint::Workspace| {
            let problem = self.problem_at(&rows, b, false)?;
            let trajectory = ia_events::simulate_in(&problem, workspace.integrator())
                .map_err(|e| self.explain(&problem, e))?;
            let written = self.write_outputs(0, &problem, &trajectory, out);
            workspace.integrator().recycle(trajectory);
            written
        };
        pool()?
            .map_into(&indices, &mut outs, run)
            .into_iter()
            .collect()
    }

    /// The outputs of run `b` of `out`'s runs, from its trajectory.
    fn write_outputs(
        &self,
        b: usize,
        problem: &Problem<'_>,
        trajectory: &Trajectory,
        out: &mut OutputsOut<'_>,
    ) -> Result<(), ScenarioError> {
        let Sizes { n, k, n_obs, .. } = self.sizes();
        self.check_observed(trajectory)?;
        out.final_state[b * n..(b + 1) * n].copy_from_slice(&trajectory.final_state);
        let times = &mut out.event_times[b * k..(b + 1) * k];
        for (time, slot) in times.iter_mut().zip(self.times.slots(trajectory)) {
            *time = slot.map_or(f64::INFINITY, |e| trajectory.events[e].time);
        }
        out.counts[b] = i64::try_from(trajectory.stats.events).unwrap_or(i64::MAX);
        for (row, o) in out.observed[b * n_obs * n..(b + 1) * n_obs * n]
            .chunks_exact_mut(n)
            .zip(&trajectory.observations)
        {
            row.copy_from_slice(&o.state);
        }
        if let Some(rates) = out.final_rate.as_deref_mut() {
            ia_adjoint::final_state_rate(problem, trajectory, &mut rates[b * n..(b + 1) * n]);
        }
        Ok(())
    }

    /// The kept taped runs (a poisoned lock only means an earlier call
    /// panicked: the store is left whole by each of its methods).
    fn tape_store(&self) -> std::sync::MutexGuard<'_, TapeStore> {
        self.tapes.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// `(runs, taped_runs, backward_passes, replays, tangent_passes,
    /// tangent_columns)`.
    fn counted(&self) -> [(&'static str, u64); 6] {
        let c = &self.counts;
        let read = |a: &AtomicU64| a.load(Ordering::Relaxed);
        [
            ("runs", read(&c.runs)),
            ("taped_runs", read(&c.taped_runs)),
            ("backward_passes", read(&c.backward_passes)),
            ("replays", read(&c.replays)),
            ("tangent_passes", read(&c.tangent_passes)),
            ("tangent_columns", read(&c.tangent_columns)),
        ]
    }

    /// The kept workspace (a poisoned lock only means an earlier call
    /// panicked: a run renews every buffer it takes all the same).
    fn kept_workspace(&self) -> std::sync::MutexGuard<'_, ia_adjoint::Workspace> {
        self.workspace.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The vector-Jacobian products of the runs' outputs with the
    /// cotangents in `input`: the gradients with respect to the initial
    /// states (`gx`, `B x n`) and the parameters (`gp`, `B x n_params`), one
    /// adjoint pass per run (one run on this thread, more on the pool, as
    /// in [`SolverCore::outputs`]).
    pub(crate) fn cotangent_gradient(
        &self,
        batch: usize,
        input: &CotangentsIn<'_>,
        gx: &mut [f64],
        gp: &mut [f64],
    ) -> Result<(), ScenarioError> {
        let Sizes {
            n,
            n_params,
            k,
            n_obs,
        } = self.sizes();
        check_len("gradients of the initial states", gx.len(), batch * n)?;
        check_len("gradients of the parameters", gp.len(), batch * n_params)?;
        check_len(
            "cotangents of the final state",
            input.final_state.len(),
            batch * n,
        )?;
        check_len(
            "cotangents of the event times",
            input.event_times.len(),
            batch * k,
        )?;
        check_len(
            "cotangents of the observed states",
            input.observed.len(),
            batch * n_obs * n,
        )?;
        let loss_of = |b: usize| Cotangents {
            state_names: self.scenario.system.state_names(),
            times: &self.times,
            final_state: &input.final_state[b * n..(b + 1) * n],
            event_times: &input.event_times[b * k..(b + 1) * k],
            observations: &input.observed[b * n_obs * n..(b + 1) * n_obs * n],
        };
        let options = ia_adjoint::AdjointOptions::default();
        if batch == 1 {
            // One item (a jitted jax.grad or jax.value_and_grad of one
            // point): its pass on this thread, without the batch's
            // bookkeeping of points below (the same passes, the same
            // numbers, the same statistics).
            let rows = Rows::new(self.sizes(), batch, input.x0s, input.params, input.t_ends)?;
            let (found, replay) = self.tape_store().take_inputs(
                rows.x0(0),
                rows.params(0),
                rows.t_end(0).unwrap_or(self.scenario.t_end),
            );
            let problem = match found {
                // The forward call that kept this tape ran from these very
                // inputs (the key is their bits), after their checks: they
                // are not checked again.
                Some(_) => self.problem_at(&rows, 0, true)?,
                None => {
                    let problem = self.problem_at(&rows, 0, false)?;
                    count(&self.counts.taped_runs, 1);
                    count(&self.counts.replays, usize::from(replay));
                    problem
                }
            };
            count(&self.counts.backward_passes, 1);
            let mut workspace = self.kept_workspace();
            let grad = match found {
                Some(run) => {
                    ia_adjoint::gradient_of_taped(&problem, *run, &loss_of(0), &mut workspace)
                }
                None => ia_adjoint::gradient_in(&problem, &loss_of(0), &options, &mut workspace),
            };
            return self.write_gradient(&problem, grad, gx, gp, &mut workspace);
        }
        let rows = Rows::new(self.sizes(), batch, input.x0s, input.params, input.t_ends)?;
        // The distinct points of the batch (a jax.jacrev: every cotangent
        // at one point), each with the tape its forward call kept; a point
        // without one is recorded again, once. Every pass at a point reads
        // its tape. The keys are the inputs' bits, in one buffer.
        let width = n + n_params + 1;
        let mut words = Vec::with_capacity(batch * width);
        for b in 0..batch {
            words.extend(tapes::key_words(
                rows.x0(b),
                rows.params(b),
                rows.t_end(b).unwrap_or(self.scenario.t_end),
            ));
        }
        let key_of = |b: usize| &words[b * width..(b + 1) * width];
        let mut points: Vec<usize> = Vec::new();
        let mut seen: HashMap<&[u64], usize, tapes::KeyBuild> =
            HashMap::with_capacity_and_hasher(batch, tapes::KeyBuild::default());
        let point_of: Vec<usize> = (0..batch)
            .map(|b| {
                *seen.entry(key_of(b)).or_insert_with(|| {
                    points.push(b);
                    points.len() - 1
                })
            })
            .collect();
        let point_keys: Vec<&[u64]> = points.iter().map(|&b| key_of(b)).collect();
        let found = self.take_tapes(&point_keys);
        count(&self.counts.backward_passes, batch);
        let missing: Vec<usize> = (0..points.len()).filter(|&q| found[q].is_none()).collect();
        let mut items_at = vec![0_usize; points.len()];
        for &q in &point_of {
            items_at[q] += 1;
        }
        // A point of several items without a tape is recorded first, once;
        // one of a single item is recorded by its own pass
        // (`ia_adjoint::gradient_in`: the same numbers to the last bit, its
        // tape left in the worker's buffers).
        let shared: Vec<usize> = missing
            .iter()
            .copied()
            .filter(|&q| items_at[q] > 1)
            .collect();
        let record = |&q: &usize, workspace: &mut ia_adjoint::Workspace| {
            let problem = self.problem_at(&rows, points[q], false)?;
            ia_adjoint::record_in(&problem, &options, workspace)
                .map_err(|e| self.explain(&problem, e))
        };
        let recorded = if shared.is_empty() {
            Vec::new()
        } else {
            pool()?.map_in(&shared, record)
        };
        let mut recorded = recorded.into_iter();
        let mut runs_at = Vec::with_capacity(points.len());
        for (q, f) in found.into_iter().enumerate() {
            runs_at.push(match f {
                Some(run) if items_at[q] > 1 => PointRun::Shared(run),
                Some(run) => PointRun::Owned(Mutex::new(Some(run))),
                None if items_at[q] > 1 => {
                    let run = recorded.next().expect("one recorded run per shared point");
                    PointRun::Shared(Box::new(run?))
                }
                None => PointRun::Fresh,
            });
        }
        // Each item's gradient is written where it goes by the worker that
        // computed it, and its vectors (the trajectory's, the gradient's)
        // go back to that worker's workspace for its next item.
        let write = |&b: &usize,
                     (gx, gp): &mut (&mut [f64], &mut [f64]),
                     workspace: &mut ia_adjoint::Workspace| {
            let run_at = &runs_at[point_of[b]];
            let problem = self.problem_at(&rows, b, !matches!(run_at, PointRun::Fresh))?;
            let loss = loss_of(b);
            let grad = match run_at {
                PointRun::Shared(run) => run.gradient(&problem, &loss, workspace),
                PointRun::Owned(cell) => {
                    match cell.lock().unwrap_or_else(|e| e.into_inner()).take() {
                        Some(run) => {
                            ia_adjoint::gradient_of_taped(&problem, *run, &loss, workspace)
                        }
                        // Never reached: a point of one item is read once.
                        None => ia_adjoint::gradient_in(&problem, &loss, &options, workspace),
                    }
                }
                PointRun::Fresh => ia_adjoint::gradient_in(&problem, &loss, &options, workspace),
            };
            self.write_gradient(&problem, grad, gx, gp, workspace)
        };
        let mut outs: Vec<(&mut [f64], &mut [f64])> = rows_of(gx, n, batch)
            .zip(rows_of(gp, n_params, batch))
            .collect();
        let indices: Vec<usize> = (0..batch).collect();
        let runs = pool()?.map_into(&indices, &mut outs, write);
        // The first failing item's error, in input order.
        runs.into_iter().collect()
    }

    /// The kept tapes of the runs of `keys` (each taken out of the store,
    /// `None` where there is none), counted: a taped run for each key
    /// without a tape (its backward pass records one), and a replay for
    /// each of those whose forward call ran (its tape used or evicted), not
    /// for one whose forward call XLA dropped (its run happens here, for
    /// the first time).
    fn take_tapes(&self, keys: &[&[u64]]) -> Vec<Option<KeptRun>> {
        let mut store = self.tape_store();
        let found: Vec<Option<KeptRun>> = keys.iter().map(|key| store.take(key)).collect();
        let replayed = keys
            .iter()
            .zip(&found)
            .filter(|(key, run)| run.is_none() && store.was_recorded(key))
            .count();
        drop(store);
        count(&self.counts.replays, replayed);
        count(
            &self.counts.taped_runs,
            found.iter().filter(|run| run.is_none()).count(),
        );
        found
    }

    /// Writes the gradient of one item (the pass's result `grad`, at
    /// `problem`) into its rows `gx` and `gp`, its vectors given back to
    /// `workspace`; the pass's error in the command line's words.
    fn write_gradient(
        &self,
        problem: &Problem<'_>,
        grad: Result<ia_adjoint::Gradient, HybridError>,
        gx: &mut [f64],
        gp: &mut [f64],
        workspace: &mut ia_adjoint::Workspace,
    ) -> Result<(), ScenarioError> {
        let grad = grad.map_err(|e| self.explain(problem, e))?;
        let checked = self.check_observed(&grad.trajectory);
        gx.copy_from_slice(&grad.initial_state);
        gp.copy_from_slice(&grad.params);
        workspace.recycle_gradient(grad);
        checked
    }
}

/// The first `rows` consecutive rows of `width` entries of `data`, which
/// holds at least `rows x width` (`width` may be 0: `rows` empty rows,
/// where `chunks_mut` would refuse).
fn rows_of(data: &mut [f64], width: usize, rows: usize) -> impl Iterator<Item = &mut [f64]> {
    let mut rest = data;
    (0..rows).map(move |_| {
        let (row, tail) = std::mem::take(&mut rest).split_at_mut(width);
        rest = tail;
        row
    })
}

/// The error of a `first` that is not a list of transition names.
fn first_refused(first: &Bound<'_, PyAny>) -> PyErr {
    library(HybridError::invalid(
        "first",
        crate::convert::describe(first),
        "must be a list of transition names, like [\"spike_o0\", \"spike_o1\"]: the first firing time of each is an output",
    ))
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
    /// the same steps. `first` names transitions whose first firing times
    /// follow the event times among the time outputs ([`TimeOutputs`]).
    #[new]
    #[pyo3(signature = (model, t_end, *, observe=None, max_events, first=None, solver=None, mode=None))]
    #[allow(clippy::too_many_arguments)]
    fn new(
        model: &Model,
        t_end: &Bound<'_, PyAny>,
        observe: Option<&Bound<'_, PyAny>>,
        max_events: &Bound<'_, PyAny>,
        first: Option<&Bound<'_, PyAny>>,
        solver: Option<&Bound<'_, PyAny>>,
        mode: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Self> {
        let max_events = match max_events.extract::<i64>() {
            Ok(k) if k >= 0 => k as usize,
            other => {
                let shown = match other {
                    Ok(k) => k.to_string(),
                    Err(_) => crate::convert::describe(max_events),
                };
                return Err(library(HybridError::invalid(
                    "max_events",
                    shown,
                    "must be an integer of at least 0: how many event times the solver returns (padded with inf)",
                )));
            }
        };
        let mut scenario = model.scenario(&RunOptions {
            t_end: Some(t_end),
            solver,
            observe,
            mode,
            ..RunOptions::default()
        })?;
        scenario.solver = ia_scenario::adjoint_solver(&scenario.solver);
        // The solver's outputs (final states, observations, event times)
        // read no event states: without them the exact solver runs lazily,
        // and its taped runs and gradients cost each event's fan-out.
        scenario.events.event_states = false;
        let first: Vec<String> = match first.filter(|v| !v.is_none()) {
            None => Vec::new(),
            Some(v) if v.is_instance_of::<pyo3::types::PyString>() => {
                return Err(first_refused(v));
            }
            Some(v) => v.extract().map_err(|_| first_refused(v))?,
        };
        let times = TimeOutputs::new(max_events, &first, &scenario.system).map_err(library)?;
        let core = Arc::new(SolverCore::new(scenario, times));
        let id = NEXT_ID.fetch_add(1, Ordering::Relaxed);
        REGISTRY
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(id, Arc::clone(&core));
        Ok(Self { core, id })
    }

    /// The id under which the XLA FFI handlers find this solver (their
    /// attribute `solver`); valid while this object lives.
    #[getter]
    fn ffi_id(&self) -> u64 {
        self.id
    }

    /// The position of `name` among the model's states (`kind` "state") or
    /// parameters (`kind` "parameter"): how a dict by name becomes the
    /// model's order. An unknown name is the library's `unknown_name`
    /// error, listing the valid ones.
    fn position(&self, kind: &str, name: &str) -> PyResult<usize> {
        let system = &self.core.scenario.system;
        let names = match kind {
            "state" => system.state_names(),
            "parameter" => system.param_names(),
            other => {
                return Err(invalid(format!(
                    "unknown kind of name '{other}' (valid: state, parameter)"
                )))
            }
        };
        ia_core::name_index(kind, names, name).map_err(library)
    }

    /// How many passes of each kind this solver has made: `runs` (plain
    /// runs), `taped_runs` (runs recording a tape: differentiated forward
    /// calls, and backward passes that found no kept tape), `backward_passes`
    /// (adjoint passes), `replays` (backward passes that ran the model
    /// again at inputs a forward call had run: its tape used already or
    /// evicted; not a backward pass whose forward call `jax.jit` dropped,
    /// which runs the model once), `tangent_passes` (forward-sensitivity passes) and
    /// `tangent_columns` (the sensitivity columns they carried).
    fn statistics<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, pyo3::types::PyDict>> {
        let dict = pyo3::types::PyDict::new(py);
        for (name, value) in self.core.counted() {
            dict.set_item(name, value)?;
        }
        Ok(dict)
    }

    /// `F`: how many of the time outputs (the last ones) are first firing
    /// times of named transitions.
    #[getter]
    fn first_count(&self) -> usize {
        self.core.times.first_count()
    }

    /// `(n, n_params, K, n_obs)`: the sizes of the inputs and outputs
    /// (`K` counts every time output: event times and first firing
    /// times).
    #[getter]
    fn sizes(&self) -> (usize, usize, usize, usize) {
        let Sizes {
            n,
            n_params,
            k,
            n_obs,
        } = self.core.sizes();
        (n, n_params, k, n_obs)
    }

    /// The outputs of the runs from the rows of `x0` (`B x n`) and `params`
    /// (`B x n_params`): final states `B x n`, event times `B x K`, event
    /// counts `B`, observed states `B x n_obs x n`; until the entries of
    /// `t_end` (`B`) when given, otherwise the solver's `t_end`.
    #[allow(clippy::type_complexity)]
    #[pyo3(signature = (x0, params, t_end=None))]
    fn outputs<'py>(
        &self,
        py: Python<'py>,
        x0: PyReadonlyArray2<'py, f64>,
        params: PyReadonlyArray2<'py, f64>,
        t_end: Option<PyReadonlyArray1<'py, f64>>,
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
        let mut finals = vec![0.0; batch * n];
        let mut times = vec![0.0; batch * k];
        let mut counts = vec![0_i64; batch];
        let mut observed = vec![0.0; batch * n_obs * n];
        let t_ends = match &t_end {
            Some(t) => Some(t.as_slice().map_err(|e| invalid(format!("'t_end': {e}")))?),
            None => None,
        };
        py.detach(|| {
            self.core.outputs(
                x0s,
                ps,
                t_ends,
                OutputsOut {
                    final_state: &mut finals,
                    event_times: &mut times,
                    counts: &mut counts,
                    observed: &mut observed,
                    final_rate: None,
                },
                false,
            )
        })
        .map_err(to_py)?;
        Ok((
            PyArray1::from_vec(py, finals)
                .reshape([batch, n])?
                .into_any(),
            PyArray1::from_vec(py, times)
                .reshape([batch, k])?
                .into_any(),
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
        let mut gx = vec![0.0; batch * n];
        let mut gp = vec![0.0; batch * n_params];
        let input = CotangentsIn {
            x0s,
            params: ps,
            final_state: gf,
            event_times: gt,
            observed: go,
            t_ends: None,
        };
        py.detach(|| {
            self.core
                .cotangent_gradient(batch, &input, &mut gx, &mut gp)
        })
        .map_err(to_py)?;
        Ok((
            PyArray1::from_vec(py, gx).reshape([batch, n])?.into_any(),
            PyArray1::from_vec(py, gp)
                .reshape([batch, n_params])?
                .into_any(),
        ))
    }
}
