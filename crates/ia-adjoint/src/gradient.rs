//! The gradient of a scalar loss by the reverse-mode adjoint: [`gradient`],
//! with options ([`gradient_with`]) and in a kept [`Workspace`]
//! ([`gradient_in`]).

use crate::adjoint::{adjoint_stepping, Backward};
#[cfg(any(test, feature = "testing"))]
use crate::jacobian::jacobian;
use crate::loss::{check_seeds, Loss};
use crate::results::Gradient;
#[cfg(any(test, feature = "testing"))]
use crate::results::Method;
use crate::tape::{AdjointOptions, Tape};
use crate::workspace::{self, Workspace};
use ia_core::{HybridError, Trajectory};
use ia_events::Problem;

/// The gradient of `loss` by the reverse-mode (discrete) adjoint: one taped
/// forward pass and one backward pass, whatever the number of parameters.
pub fn gradient(problem: &Problem<'_>, loss: &dyn Loss) -> Result<Gradient, HybridError> {
    gradient_with(problem, loss, &AdjointOptions::default())
}

/// [`gradient`] with options of the reverse pass: with
/// [`AdjointOptions::checkpoints`] the tape keeps the start states of about
/// `K` to `2 K` steps only, and the gradient is the same to the last bit.
/// Like [`jacobian`](crate::jacobian), it runs in buffers its thread keeps between one-shot
/// calls.
///
/// ```
/// use ia_adjoint::{gradient, gradient_with, AdjointOptions, FinalComponent};
/// use ia_events::{Problem, SolverChoice};
///
/// let model = ia_models::by_name("ball2d-flat").unwrap();
/// let system = model.system();
/// let problem = Problem::new(&system, vec![0.0, 1.0, 1.0, 0.0], vec![9.81, 0.8, 0.7], 2.0)
///     .with_solver(SolverChoice::Rk4 { dt: 1e-3 });
/// let full = gradient(&problem, &FinalComponent(0)).unwrap();
/// let bounded = AdjointOptions { checkpoints: Some(16) };
/// let lean = gradient_with(&problem, &FinalComponent(0), &bounded).unwrap();
/// assert_eq!(lean.concatenated(), full.concatenated());
/// // The kept states shrink from one per step to at most 32; the per-step
/// // entries (mode, start time, size) stay.
/// assert!(lean.tape_floats < full.tape_floats);
/// ```
pub fn gradient_with(
    problem: &Problem<'_>,
    loss: &dyn Loss,
    options: &AdjointOptions,
) -> Result<Gradient, HybridError> {
    workspace::in_thread_workspace(problem.system, |kept| {
        gradient_in(problem, loss, options, kept)
    })
}

/// [`gradient_with`] in `workspace`: the integrator's buffers, the tape and
/// the backward pass's buffers are reused, and the result is built in the
/// vectors of earlier results given back with
/// [`Workspace::recycle_gradient`]. The numbers are those of
/// [`gradient_with`].
///
/// ```
/// use ia_adjoint::{gradient, gradient_in, AdjointOptions, FinalComponent, Workspace};
/// use ia_events::{Problem, SolverChoice};
///
/// let model = ia_models::by_name("ball2d-flat").unwrap();
/// let system = model.system();
/// let mut workspace = Workspace::new();
/// for e in [0.7, 0.8, 0.9] {
///     let problem = Problem::new(&system, vec![0.0, 1.0, 1.0, 0.0], vec![9.81, e, 0.7], 2.0)
///         .with_solver(SolverChoice::dopri5(1e-10));
///     let options = AdjointOptions::default();
///     let grad = gradient_in(&problem, &FinalComponent(0), &options, &mut workspace).unwrap();
///     assert_eq!(grad, gradient(&problem, &FinalComponent(0)).unwrap());
///     workspace.recycle_gradient(grad);
/// }
/// ```
pub fn gradient_in(
    problem: &Problem<'_>,
    loss: &dyn Loss,
    options: &AdjointOptions,
    workspace: &mut Workspace,
) -> Result<Gradient, HybridError> {
    adjoint_stepping(problem)?;
    loss.check(problem.system.state_dim())?;
    let taped = record_in(problem, options, workspace)?;
    gradient_of_taped(problem, taped, loss, workspace)
}

/// A taped forward run, kept for a later backward pass
/// ([`gradient_of_taped`]): the run and its tape. Made by [`record_in`].
pub struct TapedRun {
    // Boxed: a kept run (a batch's, a JAX call's) and the workspace's spare
    // tapes move a pointer, not the tape's dozen vectors.
    tape: Box<Tape>,
    trajectory: Trajectory,
}

impl std::fmt::Debug for TapedRun {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TapedRun")
            .field("trajectory", &self.trajectory)
            .finish_non_exhaustive()
    }
}

impl TapedRun {
    /// The run.
    pub fn trajectory(&self) -> &Trajectory {
        &self.trajectory
    }

    /// The backward pass of `loss` over this run, a [`record_in`] of
    /// `problem`, keeping the tape for more: the gradient
    /// [`gradient_of_taped`] returns, to the last bit. Many losses of one
    /// run (the rows of a Jacobian, a batch of cotangents at one point)
    /// cost one taped run and one backward pass each.
    ///
    /// ```
    /// use ia_adjoint::{gradient, record_in, AdjointOptions, FinalComponent, Workspace};
    /// use ia_events::{Problem, SolverChoice};
    ///
    /// let model = ia_models::by_name("ball2d-flat").unwrap();
    /// let system = model.system();
    /// let problem = Problem::new(&system, vec![0.0, 1.0, 1.0, 0.0], vec![9.81, 0.8, 0.7], 2.0)
    ///     .with_solver(SolverChoice::dopri5(1e-10));
    /// let mut workspace = Workspace::new();
    /// let taped = record_in(&problem, &AdjointOptions::default(), &mut workspace).unwrap();
    /// for i in 0..4 {
    ///     let row = taped.gradient(&problem, &FinalComponent(i), &mut workspace).unwrap();
    ///     assert_eq!(row, gradient(&problem, &FinalComponent(i)).unwrap());
    /// }
    /// taped.release(&mut workspace);
    /// ```
    pub fn gradient(
        &self,
        problem: &Problem<'_>,
        loss: &dyn Loss,
        workspace: &mut Workspace,
    ) -> Result<Gradient, HybridError> {
        let (value, initial_state, params) =
            backward_pass(problem, &self.tape, &self.trajectory, loss, workspace)?;
        Ok(Gradient {
            value,
            wrt: problem.system.shared_wrt_names(),
            initial_state,
            params,
            tape_floats: self.tape.stored_floats(),
            trajectory: self.trajectory.clone(),
        })
    }

    /// Gives the tape's buffers back to `workspace` (for its next run).
    pub fn release(self, workspace: &mut Workspace) {
        workspace.keep_tape(self.tape);
    }
}

/// One backward pass of `loss` over `tape` and `trajectory`: the loss's
/// value and the gradients with respect to the initial state and the
/// parameters.
fn backward_pass(
    problem: &Problem<'_>,
    tape: &Tape,
    trajectory: &Trajectory,
    loss: &dyn Loss,
    workspace: &mut Workspace,
) -> Result<(f64, Vec<f64>, Vec<f64>), HybridError> {
    let sys = problem.system;
    let stepping = adjoint_stepping(problem)?;
    loss.check(sys.state_dim())?;
    loss.check_run(trajectory)?;
    let mut seeds = workspace.backward.seeds_for(trajectory);
    let value = loss.evaluate(trajectory, &mut seeds);
    check_seeds(&seeds, trajectory)?;
    let mut backward = Backward::new_in(sys, &problem.params, stepping, &mut workspace.backward);
    let pass = backward.gradient(tape, trajectory, &seeds);
    backward.release(&mut workspace.backward);
    workspace.backward.keep_seeds(seeds);
    let (initial_state, params) = pass?;
    Ok((value, initial_state, params))
}

/// The taped forward run of [`gradient_in`], alone: its backward pass, for
/// any loss, is [`gradient_of_taped`] (so that a caller can take the
/// run's outputs first and the gradient later, without running twice).
/// The tape is made in `workspace`'s kept buffers.
pub fn record_in(
    problem: &Problem<'_>,
    options: &AdjointOptions,
    workspace: &mut Workspace,
) -> Result<TapedRun, HybridError> {
    adjoint_stepping(problem)?;
    let mut tape = workspace.tape(options);
    let run = workspace.run_on_taped_steps(
        problem,
        &mut ia_events::NoExtraState,
        &mut *tape,
        |_, tape| tape.forget_run(),
    );
    match run {
        Ok(trajectory) => Ok(TapedRun { tape, trajectory }),
        Err(error) => {
            workspace.keep_tape(tape);
            Err(error)
        }
    }
}

/// The backward pass of `loss` over `taped`, a [`record_in`] of `problem`
/// (the same system, initial state and parameters): the gradient
/// [`gradient_in`] returns, to the last bit. The tape's buffers go back to
/// `workspace`.
pub fn gradient_of_taped(
    problem: &Problem<'_>,
    taped: TapedRun,
    loss: &dyn Loss,
    workspace: &mut Workspace,
) -> Result<Gradient, HybridError> {
    let TapedRun { tape, trajectory } = taped;
    let result =
        backward_pass(problem, &tape, &trajectory, loss, workspace).map(|(value, x0, p)| {
            Gradient {
                value,
                wrt: problem.system.shared_wrt_names(),
                initial_state: x0,
                params: p,
                tape_floats: tape.stored_floats(),
                trajectory,
            }
        });
    workspace.keep_tape(tape);
    result
}

/// The gradient of `loss` by forward sensitivities (the full Jacobian
/// contracted with the loss's seeds): the reference the adjoint is checked
/// against. Only with the `testing` feature (ia-verify's checks).
#[cfg(any(test, feature = "testing"))]
pub fn gradient_forward(
    problem: &Problem<'_>,
    loss: &dyn Loss,
    method: Method,
) -> Result<Gradient, HybridError> {
    loss.check(problem.system.state_dim())?;
    jacobian(problem, method)?.loss_gradient(loss)
}

/// Runs `problem` on the steps of the adjoint's taped run (with its
/// derivative probes, [`crate::probe`]), showing them to `observer`: what
/// a check of the steps the adjoint transposes reads. When the taped run
/// is redone (a stiff explicit run: [`crate::probe`]), `forget` makes
/// `observer` ready for the second run, which is the one returned. Only
/// with the `testing` feature (ia-verify's checks).
#[cfg(any(test, feature = "testing"))]
pub fn run_on_taped_steps<O: ia_events::Observer>(
    problem: &Problem<'_>,
    observer: &mut O,
    forget: impl FnOnce(&mut O),
) -> Result<Trajectory, HybridError> {
    Workspace::new().run_on_taped_steps(problem, &mut ia_events::NoExtraState, observer, |_, o| {
        forget(o)
    })
}
