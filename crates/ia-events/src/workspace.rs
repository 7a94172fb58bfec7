//! What a run needs besides its problem, kept between runs.
//!
//! A [`Workspace`] holds the stepper, the engines' buffers and the vectors
//! of trajectories handed back with [`Workspace::recycle`]. A solve
//! repeated in one workspace (a fit, an ensemble on one thread, a benchmark)
//! then allocates only what the previous results did not give back, with
//! either engine:
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

pub use crate::reuse::{keep_larger, refill, SpareVecs};

use crate::engine::exact::PlanCache;
use crate::engine::runge_kutta::RkBuffers;
use crate::geometry::GeometryWorkspace;
use crate::recorder::RecordBuffers;
use crate::solver::SolverChoice;
use crate::stepper::Stepper;
use ia_core::{HybridError, Trajectory};

/// The stepper, buffers and spent records of runs, kept between them (see
/// the [module documentation](self)). One workspace serves one run at a
/// time; give each thread its own.
#[derive(Default)]
pub struct Workspace {
    stepper: Option<(SolverChoice, Box<dyn Stepper + Send>)>,
    /// The Runge-Kutta engine's buffers.
    rk: RkBuffers,
    /// The event geometry's buffers, for either engine.
    geometry: Option<GeometryWorkspace>,
    /// The record lists and spare vectors, for either engine.
    records: RecordBuffers,
    /// The exact solver's layered sweep's plan, kept for the next run of
    /// the same system (checked against it first: see the module
    /// `sweep` of the exact solver).
    plans: PlanCache,
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
        self.records.recycle(trajectory);
    }

    /// A stepper for `choice`, ready for a new run (the kept one rewound
    /// when it is of that choice and can be rewound, a new one otherwise),
    /// and the Runge-Kutta engine's buffers.
    #[allow(clippy::type_complexity)]
    pub(crate) fn stepper_and_buffers(
        &mut self,
        choice: &SolverChoice,
    ) -> Result<
        (
            &mut dyn Stepper,
            (
                &mut RkBuffers,
                &mut RecordBuffers,
                &mut Option<GeometryWorkspace>,
            ),
        ),
        HybridError,
    > {
        let reusable = match &mut self.stepper {
            Some((kept, stepper)) => kept == choice && stepper.rewind(),
            None => false,
        };
        if !reusable {
            self.stepper = Some((choice.clone(), choice.stepper()?));
        }
        let (_, stepper) = self.stepper.as_mut().expect("set above");
        let buffers = (&mut self.rk, &mut self.records, &mut self.geometry);
        Ok((stepper.as_mut(), buffers))
    }

    /// The exact solver's buffers: the records' and the event geometry's,
    /// and its kept sweep plan.
    #[allow(clippy::type_complexity)]
    pub(crate) fn exact_buffers(
        &mut self,
    ) -> (
        (&mut RecordBuffers, &mut Option<GeometryWorkspace>),
        &mut PlanCache,
    ) {
        ((&mut self.records, &mut self.geometry), &mut self.plans)
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

    /// Reference: [`simulate`] in a fresh workspace, to the bit. One
    /// workspace runs a current-based network (the layered sweep, its
    /// structure kept from run to run) with other input times and another
    /// threshold (the kept structure's levels formed again), another
    /// synaptic time constant (other blocks: formed anew), a threshold the
    /// exact solver refuses (the same error as a fresh run's), the first
    /// parameters again, and another network and model between.
    #[test]
    fn a_kept_exact_structure_gives_the_trajectories_of_a_fresh_one() {
        use ia_models::Model;
        let net = ia_models::CubaLif::new(2, 6, 2).unwrap();
        let (system, spec) = (net.system(), net.spec());
        let index = |name: &str| spec.param_index(name).unwrap();
        let defaults = spec.default_params();
        let mut params = Vec::new();
        for (name, value) in [
            ("t_in0", 3.0),
            ("t_in1", 1.5),
            ("theta", 0.6),
            ("tau_syn", 7.0),
        ] {
            let mut p = params.last().cloned().unwrap_or_else(|| defaults.clone());
            p[index(name)] = value;
            params.push(p);
        }
        params.insert(0, defaults.clone());
        params.push(defaults.clone());
        let lazy = crate::EventOptions {
            event_states: false,
            ..crate::EventOptions::default()
        };
        let problem = |params: Vec<f64>| {
            Problem::new(&system, spec.default_state(), params, spec.t_end)
                .with_solver(SolverChoice::Exact)
                .with_event_options(lazy.clone())
        };
        let mut workspace = Workspace::new();
        let mut spikes = 0;
        for p in &params {
            let problem = problem(p.clone());
            assert!(crate::exact::sweeps(&problem));
            let kept = simulate_in(&problem, &mut workspace).unwrap();
            spikes += kept.events.len();
            assert_eq!(kept, simulate(&problem).unwrap());
            workspace.recycle(kept);
        }
        // Inputs, and hidden and output spikes, at every parameter set.
        assert!(spikes > 6 * 2 * 2, "{spikes} events");
        let mut refused = defaults.clone();
        refused[index("theta")] = f64::NAN;
        let refused = problem(refused);
        let kept = simulate_in(&refused, &mut workspace).unwrap_err();
        assert_eq!(
            kept.to_string(),
            simulate(&refused).unwrap_err().to_string()
        );
        let wider = ia_models::CubaLif::new(2, 7, 2).unwrap();
        let (wide_system, wide_spec) = (wider.system(), wider.spec());
        let wide = Problem::new(
            &wide_system,
            wide_spec.default_state(),
            wide_spec.default_params(),
            wide_spec.t_end,
        )
        .with_solver(SolverChoice::Exact)
        .with_event_options(lazy.clone());
        let kept = simulate_in(&wide, &mut workspace).unwrap();
        assert_eq!(kept, simulate(&wide).unwrap());
        workspace.recycle(kept);
        for p in &params {
            let problem = problem(p.clone());
            let kept = simulate_in(&problem, &mut workspace).unwrap();
            assert_eq!(kept, simulate(&problem).unwrap());
            workspace.recycle(kept);
        }
    }

    /// Reference: [`simulate`] in a fresh workspace. The exact solver runs
    /// in the workspace it is given: a second run builds its records in the
    /// vectors of the first, given back with [`Workspace::recycle`] (it
    /// used to ignore the workspace and allocate them anew), and gives the
    /// fresh run's trajectory to the bit.
    #[test]
    fn the_exact_solver_runs_in_the_workspace_it_is_given() {
        let model = ia_models::by_name("thermostat").unwrap();
        let (system, spec) = (model.system(), model.spec());
        let problem = Problem::new(
            &system,
            spec.default_state(),
            spec.default_params(),
            spec.t_end,
        )
        .with_mode(&spec.initial_mode)
        .unwrap()
        .with_solver(SolverChoice::Exact)
        .with_observations(vec![1.0, 5.0]);
        let mut workspace = Workspace::new();
        let first = simulate_in(&problem, &mut workspace).unwrap();
        assert!(!first.events.is_empty());
        let (events, observations) = (first.events.as_ptr(), first.observations.as_ptr());
        workspace.recycle(first);
        let second = simulate_in(&problem, &mut workspace).unwrap();
        assert_eq!(second.events.as_ptr(), events, "the events' vector reused");
        assert_eq!(second.observations.as_ptr(), observations);
        assert_eq!(second, simulate(&problem).unwrap());
    }
}
