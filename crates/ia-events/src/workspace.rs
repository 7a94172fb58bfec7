//! What a run needs besides its problem, kept between runs.
//!
//! A [`Workspace`] holds the stepper, the integrator's buffers and the
//! vectors of trajectories handed back with [`Workspace::recycle`]. A solve
//! repeated in one workspace (a fit, an ensemble on one thread, a benchmark)
//! then allocates only what the previous results did not give back:
//!
//! ```
//! use ia_events::{run_in, NoExtraState, NoObserver, Problem, SolverChoice, Workspace};
//!
//! let model = ia_models::by_name("ball1d").unwrap();
//! let system = model.system();
//! let mut workspace = Workspace::new();
//! let mut heights = Vec::new();
//! for e in [0.5, 0.6, 0.7] {
//!     let problem = Problem::new(&system, vec![1.0, 0.0], vec![9.81, e, 0.0], 1.0)
//!         .with_solver(SolverChoice::dopri5(1e-10));
//!     let run = run_in(&problem, &mut workspace, &mut NoExtraState, &mut NoObserver).unwrap();
//!     heights.push(run.final_state[0]);
//!     workspace.recycle(run);
//! }
//! // The same numbers as runs in fresh workspaces.
//! let fresh = Problem::new(&system, vec![1.0, 0.0], vec![9.81, 0.7, 0.0], 1.0)
//!     .with_solver(SolverChoice::dopri5(1e-10));
//! assert_eq!(heights[2], ia_events::simulate(&fresh).unwrap().final_state[0]);
//! ```

use crate::geometry::GeometryWorkspace;
use crate::integrator::{GuardTable, StateBuffers};
use crate::problem::SolverChoice;
use crate::stepper::Stepper;
use ia_core::{EventRecord, GuardPartials, HybridError, Observation, Segment, Trajectory};

/// Spent `Vec<f64>` buffers, kept to be filled again: a record copied
/// through [`SpareVecs::copy_of`] allocates only when none is left (or the
/// one left is too short).
#[derive(Debug, Default)]
pub struct SpareVecs(Vec<Vec<f64>>);

impl SpareVecs {
    /// A vector holding a copy of `x`, built in a spare buffer when there is
    /// one.
    ///
    /// ```
    /// # use ia_events::SpareVecs;
    /// let mut spare = SpareVecs::default();
    /// spare.give(vec![7.0; 4]);
    /// assert_eq!(spare.copy_of(&[1.0, 2.0]), [1.0, 2.0]);
    /// ```
    pub fn copy_of(&mut self, x: &[f64]) -> Vec<f64> {
        match self.0.pop() {
            Some(mut v) => {
                v.clear();
                v.extend_from_slice(x);
                v
            }
            None => x.to_vec(),
        }
    }

    /// A vector of `len` zeros, built in a spare buffer when there is one.
    pub fn zeros(&mut self, len: usize) -> Vec<f64> {
        let mut v = self.0.pop().unwrap_or_default();
        v.clear();
        v.resize(len, 0.0);
        v
    }

    /// Keeps `v` to be filled again (an empty one holds nothing worth
    /// keeping).
    pub fn give(&mut self, v: Vec<f64>) {
        if v.capacity() > 0 {
            self.0.push(v);
        }
    }
}

/// The integrator's per-run buffers (see [`crate::integrator`]'s `Run`),
/// taken by a run and given back when it ends.
#[derive(Debug, Default)]
pub(crate) struct Buffers {
    pub(crate) guards: GuardTable,
    pub(crate) states: StateBuffers,
    pub(crate) guard_partials: Option<GuardPartials>,
    pub(crate) geometry: Option<GeometryWorkspace>,
    /// The record lists of recycled trajectories, emptied.
    pub(crate) segments: Vec<Segment>,
    pub(crate) events: Vec<EventRecord>,
    pub(crate) event_states: Vec<f64>,
    pub(crate) observations: Vec<Observation>,
    pub(crate) spare: SpareVecs,
}

/// `v` emptied and refilled with `len` copies of `value` (no allocation when
/// its capacity suffices): how a kept buffer is made ready for a new run.
///
/// ```
/// # use ia_events::workspace::refill;
/// let v = refill(vec![1.0, 2.0, 3.0], 2, 0.0);
/// assert_eq!(v, [0.0, 0.0]);
/// ```
pub fn refill<T: Clone>(mut v: Vec<T>, len: usize, value: T) -> Vec<T> {
    v.clear();
    v.resize(len, value);
    v
}

/// `v` emptied, with room for `capacity` entries (no allocation when its
/// capacity suffices).
pub(crate) fn with_capacity<T>(mut v: Vec<T>, capacity: usize) -> Vec<T> {
    v.clear();
    v.reserve(capacity);
    v
}

impl Buffers {
    /// Takes back the vectors of `trajectory`: its records' into the spare
    /// vectors, its emptied lists when larger than the kept ones.
    pub(crate) fn recycle(&mut self, trajectory: Trajectory) {
        let Trajectory {
            initial_state,
            final_state,
            segments,
            mut events,
            event_states,
            mut observations,
            ..
        } = trajectory;
        self.spare.give(initial_state);
        self.spare.give(final_state);
        events.clear();
        for observation in observations.drain(..) {
            self.spare.give(observation.state);
        }
        keep_larger(&mut self.segments, segments);
        keep_larger(&mut self.events, events);
        keep_larger(&mut self.event_states, event_states);
        keep_larger(&mut self.observations, observations);
    }

    /// The guard partials for `n` states and `n_params` parameters, the
    /// kept ones when they have that shape.
    pub(crate) fn take_guard_partials(&mut self, n: usize, n_params: usize) -> GuardPartials {
        match self.guard_partials.take() {
            Some(g) if g.x.len() == n && g.p.len() == n_params => g,
            _ => GuardPartials::zeros(n, n_params),
        }
    }

    /// The event-geometry buffers for `n` states and `n_params` parameters,
    /// the kept ones (with nothing remembered of an earlier run) when they
    /// have that shape.
    pub(crate) fn take_geometry(&mut self, n: usize, n_params: usize) -> GeometryWorkspace {
        match self.geometry.take() {
            Some(mut g) if g.dims() == (n, n_params) => {
                g.forget();
                g
            }
            _ => GeometryWorkspace::new(n, n_params),
        }
    }
}

/// The stepper, buffers and spent records of runs, kept between them (see
/// the [module documentation](self)). One workspace serves one run at a
/// time; give each thread its own.
#[derive(Default)]
pub struct Workspace {
    stepper: Option<(SolverChoice, Box<dyn Stepper + Send>)>,
    pub(crate) buffers: Buffers,
}

impl std::fmt::Debug for Workspace {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Workspace")
            .field("solver", &self.stepper.as_ref().map(|(choice, _)| choice))
            .finish_non_exhaustive()
    }
}

impl Workspace {
    /// An empty workspace: the first run in it allocates its buffers.
    pub fn new() -> Self {
        Self::default()
    }

    /// Takes back the vectors of `trajectory` (a finished run's, from this
    /// workspace or not) for the next runs' records.
    pub fn recycle(&mut self, trajectory: Trajectory) {
        self.buffers.recycle(trajectory);
    }

    /// A stepper for `choice`, ready for a new run: the kept one rewound
    /// when it is of that choice and can be rewound, a new one otherwise.
    pub(crate) fn stepper_and_buffers(
        &mut self,
        choice: &SolverChoice,
    ) -> Result<(&mut dyn Stepper, &mut Buffers), HybridError> {
        let reusable = match &mut self.stepper {
            Some((kept, stepper)) => kept == choice && stepper.rewind(),
            None => false,
        };
        if !reusable {
            self.stepper = Some((choice.clone(), choice.stepper()?));
        }
        let (_, stepper) = self.stepper.as_mut().expect("set above");
        Ok((stepper.as_mut(), &mut self.buffers))
    }
}

/// Keeps the emptied `offered` in `slot` when it holds more than the one
/// there: how a workspace takes back the list of a result.
///
/// ```
/// # use ia_events::workspace::keep_larger;
/// let mut slot: Vec<u8> = Vec::with_capacity(2);
/// keep_larger(&mut slot, Vec::with_capacity(8));
/// assert!(slot.is_empty() && slot.capacity() >= 8);
/// ```
pub fn keep_larger<T>(slot: &mut Vec<T>, mut offered: Vec<T>) {
    offered.clear();
    if offered.capacity() > slot.capacity() {
        *slot = offered;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{simulate, simulate_in, OdeSolversMethod, Problem};

    /// Reference: [`simulate`], a fresh workspace per run. One workspace
    /// runs every ready model in turn under three solvers (the built-in
    /// steppers are rewound, the ode_solvers adapter is built anew), with
    /// a failed run between, and gives the fresh trajectories to the bit.
    #[test]
    fn a_kept_workspace_gives_the_trajectories_of_a_fresh_one() {
        let mut workspace = Workspace::new();
        for (k, model) in ia_models::catalog().iter().enumerate() {
            let spec = model.spec();
            let system = model.system();
            let solvers = [
                SolverChoice::dopri5(1e-10),
                SolverChoice::Rk4 {
                    dt: spec.t_end / 5000.0,
                },
                SolverChoice::OdeSolvers {
                    integrator: OdeSolversMethod::Dopri5,
                    rtol: 1e-9,
                    atol: 1e-9,
                    macro_step: spec.t_end / 100.0,
                },
            ];
            let solver = solvers[k % 3].clone();
            let problem = Problem::new(
                &system,
                spec.default_state(),
                spec.default_params(),
                spec.t_end,
            )
            .with_mode(&spec.initial_mode)
            .unwrap()
            .with_solver(solver)
            .with_observations(vec![spec.t_end / 2.0]);
            let kept = simulate_in(&problem, &mut workspace).unwrap();
            assert_eq!(kept, simulate(&problem).unwrap(), "{}", spec.name);
            workspace.recycle(kept);
            let failing = problem.with_event_options(crate::EventOptions {
                max_steps: 2,
                ..crate::EventOptions::default()
            });
            assert!(simulate_in(&failing, &mut workspace).is_err());
        }
    }
}
