//! Buffers of sensitivity runs, kept between calls.
//!
//! [`jacobian_in`](crate::jacobian_in) runs in a [`Workspace`]: the
//! integrator's stepper and buffers ([`ia_events::Workspace`]), the carried
//! sensitivities' buffers, and the vectors and matrices of results given
//! back with [`Workspace::recycle`]. A Jacobian repeated in one workspace
//! (a fit, a Newton iteration, an ensemble on one thread) allocates only
//! what earlier results did not give back; the numbers are those of
//! [`jacobian`](crate::jacobian).
//!
//! ```
//! use ia_adjoint::prelude::*;
//! use ia_adjoint::{jacobian_in, Workspace};
//!
//! let model = ia_models::by_name("ball1d").unwrap();
//! let system = model.system();
//! let mut workspace = Workspace::new();
//! for e in [0.5, 0.6, 0.7] {
//!     let problem = Problem::new(&system, vec![1.0, 0.0], vec![9.81, e, 0.0], 1.0)
//!         .with_solver(SolverChoice::dopri5(1e-10));
//!     let sens = jacobian_in(&problem, Method::Forward, &mut workspace).unwrap();
//!     assert_eq!(sens, jacobian(&problem, Method::Forward).unwrap());
//!     workspace.recycle(sens);
//! }
//! ```

use crate::adjoint::BackwardBuffers;
use crate::forward::ForwardSensitivity;
use crate::probe::{probe_weight, probes_for, redone_with_unit_probes, Probed, Probes};
use crate::results::{Gradient, Sensitivities};
use crate::tape::AdjointOptions;
use crate::tape::Tape;
use ia_core::{HybridError, HybridSystem, Trajectory};
use ia_events::workspace::keep_larger;
use ia_events::SpareVecs;
use ia_events::{ExtraState, Observer, Problem};
use nalgebra::DMatrix;
use std::cell::Cell;

/// Buffers of sensitivity runs, kept between calls (see the [module
/// documentation](self)). One workspace serves one call at a time; give
/// each thread its own.
#[derive(Default)]
pub struct Workspace {
    pub(crate) run: ia_events::Workspace,
    forward: Option<ForwardSensitivity>,
    /// Storage of `n x m` matrices.
    pub(crate) matrices: SpareVecs,
    observation_jacobians: Vec<DMatrix<f64>>,
    /// Spare tapes, the latest kept last: one per taped run whose tape
    /// came back (a batch records many runs before their backward passes
    /// give the tapes back), at most [`SPARE_TAPE_BYTES`] in all. Boxed as
    /// a [`TapedRun`](crate::TapedRun) holds its tape: taking one and giving
    /// it back moves a pointer, not the tape's vectors.
    #[allow(clippy::vec_box)]
    tapes: Vec<Box<Tape>>,
    /// The heap bytes of `tapes`.
    tape_bytes: usize,
    pub(crate) backward: BackwardBuffers,
    probes: Option<Probes>,
    /// The forward sensitivities a taped run redone as stiff carries as
    /// its probes ([`redone_with_unit_probes`]).
    unit_probes: Option<ForwardSensitivity>,
}

impl std::fmt::Debug for Workspace {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Workspace")
            .field("run", &self.run)
            .finish_non_exhaustive()
    }
}

impl Workspace {
    /// An empty workspace: the first call in it allocates its buffers.
    pub fn new() -> Self {
        Self::default()
    }

    /// The integrator's workspace within, for runs without sensitivities
    /// ([`ia_events::simulate_in`]).
    pub fn integrator(&mut self) -> &mut ia_events::Workspace {
        &mut self.run
    }

    /// Takes back the vectors and matrices of `sens` (from this workspace
    /// or not) for the next calls' results.
    pub fn recycle(&mut self, sens: Sensitivities) {
        let Sensitivities {
            trajectory,
            final_jacobian,
            mut observation_jacobians,
            event_time_gradients,
            ..
        } = sens;
        self.run.recycle(trajectory);
        // Taken back in the reverse order of a run's needs (a stack): the
        // observations' matrices, the final one, then the event-time
        // gradients, so each finds the buffer it had.
        self.matrices.give(event_time_gradients.data.into());
        self.matrices.give(final_jacobian.data.into());
        for jac in observation_jacobians.drain(..).rev() {
            self.matrices.give(jac.data.into());
        }
        keep_larger(&mut self.observation_jacobians, observation_jacobians);
    }

    /// Takes back the vectors of `gradient` (from this workspace or not) for
    /// the next calls' results.
    pub fn recycle_gradient(&mut self, gradient: Gradient) {
        let Gradient {
            trajectory,
            initial_state,
            params,
            ..
        } = gradient;
        self.run.recycle(trajectory);
        self.backward.give_result(initial_state);
        self.backward.give_result(params);
    }

    /// An empty tape set to `options`, in kept buffers (those of the tape
    /// kept last) when there are any.
    pub(crate) fn tape(&mut self, options: &AdjointOptions) -> Box<Tape> {
        match self.tapes.pop() {
            Some(mut kept) => {
                self.tape_bytes -= kept.heap_bytes();
                kept.renew(options);
                kept
            }
            None => Box::new(Tape::new(options)),
        }
    }

    /// Keeps `tape`'s buffers for the next calls: always when no tape is
    /// kept, otherwise while the kept tapes hold at most
    /// [`SPARE_TAPE_BYTES`] (a batch's runs recorded before their backward
    /// passes each take one).
    pub(crate) fn keep_tape(&mut self, tape: Box<Tape>) {
        let bytes = tape.heap_bytes();
        if self.tapes.is_empty() || self.tape_bytes + bytes <= SPARE_TAPE_BYTES {
            self.tape_bytes += bytes;
            self.tapes.push(tape);
        }
    }

    /// The heap bytes of the kept tapes.
    #[cfg(test)]
    pub(crate) fn kept_tape_bytes(&self) -> usize {
        self.tape_bytes
    }

    /// The carried forward sensitivities for `system`, in kept buffers.
    pub(crate) fn forward(
        &mut self,
        system: &HybridSystem,
        error_controlled: bool,
        apply_saltation: bool,
    ) -> ForwardSensitivity {
        match self.forward.take() {
            Some(kept) => kept.renew(system, error_controlled, apply_saltation),
            None => ForwardSensitivity::new(system, error_controlled, apply_saltation),
        }
    }

    /// Keeps `carried`'s buffers for the next call.
    pub(crate) fn keep_forward(&mut self, carried: ForwardSensitivity) {
        self.forward = Some(carried);
    }

    /// `problem` run with `extra` and `observer`, and with the derivative
    /// probes of its taped run ([`crate::probe`]) before `extra` when it
    /// has any: the steps the adjoint transposes. When the automatic choice
    /// redoes the run with a probe per input
    /// ([`redone_with_unit_probes`]), `forget` makes `extra` and `observer`
    /// ready for the second run, and the trajectory is the second run's,
    /// the first's accepted steps in its
    /// [`redone_steps`](ia_core::SolverStats::redone_steps).
    pub(crate) fn run_on_taped_steps<E: ExtraState, O: Observer>(
        &mut self,
        problem: &Problem<'_>,
        extra: &mut E,
        observer: &mut O,
        forget: impl FnOnce(&mut E, &mut O),
    ) -> Result<Trajectory, HybridError> {
        let count = probes_for(problem);
        if count == 0 {
            return ia_events::run_in(problem, &mut self.run, extra, observer);
        }
        // Renewed where it is kept: a run's probes are not moved in and out.
        match self.probes.as_mut() {
            Some(kept) => kept.renew(problem.system, count),
            None => self.probes = Some(Probes::new(problem.system, count)),
        }
        let probes = self.probes.as_mut().expect("the probes were made above");
        probes.weigh(probe_weight(problem));
        let first = run_probed(problem, &mut self.run, probes, extra, observer)?;
        if !redone_with_unit_probes(problem, &first.stats) {
            return Ok(first);
        }
        let redone_steps = first.stats.steps;
        self.run.recycle(first);
        forget(extra, observer);
        // A probe per input along the unit directions: the forward pass's
        // sensitivities, error controlled, its arithmetic and its steps.
        let mut unit = match self.unit_probes.take() {
            Some(kept) => kept.renew(problem.system, true, true),
            None => ForwardSensitivity::new(problem.system, true, true),
        };
        let second = run_probed(problem, &mut self.run, &mut unit, extra, observer);
        self.unit_probes = Some(unit);
        let mut second = second?;
        second.stats.redone_steps = redone_steps;
        Ok(second)
    }

    /// Drops the tape's and the backward replay's buffers when either
    /// holds more than [`KEPT_RUN_BYTES`] (they grow with a run's steps):
    /// what a workspace kept between calls (a thread's one-shot calls, a
    /// [`Batch`](crate::Batch)'s workers) keeps at most of a long run.
    pub(crate) fn trim_run_buffers(&mut self) {
        // The oldest kept first: the latest are taken first.
        let mut drop = 0;
        while self.tape_bytes > KEPT_RUN_BYTES {
            self.tape_bytes -= self.tapes[drop].heap_bytes();
            drop += 1;
        }
        self.tapes.drain(..drop);
        if self.backward.replay_bytes() > KEPT_RUN_BYTES {
            self.backward = BackwardBuffers::default();
        }
    }

    /// The emptied list of observation Jacobians of the last results given
    /// back.
    pub(crate) fn observation_list(&mut self) -> Vec<DMatrix<f64>> {
        std::mem::take(&mut self.observation_jacobians)
    }
}

/// `problem` run with `probes` (controlled) before `extra`.
fn run_probed<P: ExtraState, E: ExtraState, O: Observer>(
    problem: &Problem<'_>,
    run: &mut ia_events::Workspace,
    probes: &mut P,
    extra: &mut E,
    observer: &mut O,
) -> Result<Trajectory, HybridError> {
    let mut probed = Probed {
        probes,
        inner: extra,
    };
    ia_events::run_in(problem, run, &mut probed, observer)
}

/// The largest dense sensitivity block, `n (n + n_p)` numbers, whose
/// buffers a thread keeps between one-shot calls: 2^14 (`n` = 100 with 64
/// parameters), about 1.7 MB of stepper, sensitivity and saltation buffers
/// at most through DOP853's twelve stages.
pub(crate) const KEPT_BLOCK: usize = 1 << 14;

/// The most a thread keeps of a one-shot call's tape and replay buffer
/// (they grow with the run's steps), and a [`Batch`](crate::Batch)'s
/// worker of its tapes and replay buffer between calls: 1 MiB each.
pub(crate) const KEPT_RUN_BYTES: usize = 1 << 20;

/// The most bytes of spare tapes a workspace keeps during a call
/// (a batch's backward passes give back the tapes of runs recorded
/// earlier, each the next run's buffers): 16 MiB, trimmed to
/// [`KEPT_RUN_BYTES`] between a batch's calls.
pub(crate) const SPARE_TAPE_BYTES: usize = 16 << 20;

thread_local! {
    /// The buffers of this thread's one-shot calls ([`crate::jacobian`],
    /// [`crate::gradient`]), taken for a call and put back after it: a
    /// call made within another (from a user's callback) or after one that
    /// panicked finds none and starts a fresh workspace.
    pub(crate) static KEPT: Cell<Option<Workspace>> = const { Cell::new(None) };
}

/// Runs `f` in this thread's kept workspace, then keeps the workspace for
/// the next one-shot call unless it holds more than a small system's
/// buffers (see [`KEPT_BLOCK`], [`KEPT_RUN_BYTES`]). The numbers are those
/// of a fresh workspace; what it saves are the allocations of the
/// stepper's, the integrator's and the sensitivities' buffers.
pub(crate) fn in_thread_workspace<T>(
    system: &HybridSystem,
    f: impl FnOnce(&mut Workspace) -> T,
) -> T {
    let n = system.state_dim();
    if n * (n + system.param_dim()) > KEPT_BLOCK {
        return f(&mut Workspace::new());
    }
    let mut workspace = KEPT.try_with(Cell::take).ok().flatten().unwrap_or_default();
    let out = f(&mut workspace);
    workspace.trim_run_buffers();
    // A thread being torn down keeps nothing.
    let _ = KEPT.try_with(|kept| kept.set(Some(workspace)));
    out
}
