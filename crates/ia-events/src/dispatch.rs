//! The entry points of a run and the dispatch to the engine the problem's
//! [`SolverChoice`] names ([`crate::engine`]): one arm per engine.

use crate::engine::{exact, runge_kutta};
use crate::problem::Problem;
use crate::solver::SolverChoice;
use crate::vocabulary::{ExtraState, NoExtraState, NoObserver, Observer};
use crate::workspace::Workspace;
use ia_core::{HybridError, Trajectory};

/// Simulates `problem`: the state through every event, at every observation
/// time and at the end. With [`SolverChoice::Exact`] the run is the exact
/// event-driven solver's ([`exact::simulate`]).
pub fn simulate(problem: &Problem<'_>) -> Result<Trajectory, HybridError> {
    simulate_in(problem, &mut Workspace::new())
}

/// Runs `problem` carrying `extra` along with the state and showing the run
/// to `observer`.
pub fn run<E: ExtraState, O: Observer>(
    problem: &Problem<'_>,
    extra: &mut E,
    observer: &mut O,
) -> Result<Trajectory, HybridError> {
    run_in(problem, &mut Workspace::new(), extra, observer)
}

/// [`simulate`] in `workspace`: its stepper and buffers are reused, and the
/// records are built in the vectors of trajectories given back with
/// [`Workspace::recycle`]. The numbers are those of [`simulate`].
pub fn simulate_in(
    problem: &Problem<'_>,
    workspace: &mut Workspace,
) -> Result<Trajectory, HybridError> {
    run_in(problem, workspace, &mut NoExtraState, &mut NoObserver)
}

/// [`run`] in `workspace` (see [`simulate_in`]), by the engine the
/// problem's [`SolverChoice`] names: the exact event-driven solver
/// ([`exact::run`]) for [`SolverChoice::Exact`], the Runge-Kutta engine
/// otherwise.
pub fn run_in<E: ExtraState, O: Observer>(
    problem: &Problem<'_>,
    workspace: &mut Workspace,
    extra: &mut E,
    observer: &mut O,
) -> Result<Trajectory, HybridError> {
    match problem.solver {
        SolverChoice::Exact => {
            let (buffers, plans) = workspace.exact_buffers();
            exact::run_in(problem, buffers, Some(plans), extra, observer)
        }
        _ => {
            problem.validate()?;
            let (stepper, buffers) = workspace.stepper_and_buffers(&problem.solver)?;
            runge_kutta::run(problem, stepper, buffers, extra, observer)
        }
    }
}
