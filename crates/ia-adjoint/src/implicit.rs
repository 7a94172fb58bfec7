//! The implicit (ESDIRK) steps in the backward pass.
//!
//! A step of [`EsdirkTableau`] from `y_0` is the map defined by its stage
//! equations solved exactly,
//!
//! ```text
//! K_1 = f(y_0),   Y_i = W_i + h gamma K_i,   W_i = y_0 + h sum_{j<i} a_ij K_j,
//! K_i = f(Y_i),   y_1 = Y_s,
//! ```
//!
//! whose derivative follows from the implicit function theorem:
//! `(I - h gamma J_i) dK_i = J_i dW_i + f_p(Y_i) dp` (`J_i = f_x(Y_i)`).
//! The backward pass transposes it stage by stage in reverse, with one
//! transposed solve `u = (I - h gamma J_i)^{-T} K_bar_i` per implicit stage
//! (`W_bar_i = J_i^T u`, `p_bar += f_p(Y_i)^T u`), the step size held fixed.
//!
//! **The stage states are kept on the tape**: the taped run solves every
//! stage to rounding (simplified Newton polished past its convergence test,
//! [`ia_events::Observer::wants_step_stages`]) and the tape keeps each
//! kept step's stage states beside its start state (`s n` floats a kept
//! step instead of `n`; the automatic checkpointing counts floats, so it
//! keeps fewer steps of a long run). The backward pass transposes the step
//! at exactly the stages the run took, without solving them again: forward
//! sensitivities on the same steps, which solve their stages to rounding
//! too, differentiate the same stages to the bit.
//!
//! A step whose stages are not on the tape (a checkpointed segment's steps
//! after its kept one) has them solved again from its start state by full
//! Newton to rounding ([`ia_events::implicit_rk::solve_stages_exactly`]): a
//! replay from a checkpoint carries the states with these stages, which
//! agree with the taped run's to rounding (not to the bit, as for the
//! explicit methods), so the checkpointed gradient agrees with the full
//! tape's to about rounding times the steps' amplification.
//!
//! Each implicit stage's transposed solve forms the flow's Jacobian at the
//! stage; when that formed the flow's dense partials, the stage's
//! `J_i^T u` and `f_p^T u` are read from them, not formed again. A flow
//! that declares its state Jacobian constant
//! ([`Flow::state_jacobian_is_constant`]) has it formed once per mode met
//! in a row and `(I - h gamma J)^T` factorised once per step size (all the
//! stages of a step share `h gamma`): the same matrix at every stage.

use ia_core::{Flow, FlowPartials, HybridError, Sparsity};
use ia_events::implicit_rk::{solve_stages_exactly, IterationMatrix, StageWorkspace};
use ia_events::{EsdirkTableau, OdeRhs};

/// A mode's flow with the parameters, as a right-hand side with the flow's
/// Jacobian.
struct FlowRhs<'a> {
    flow: &'a dyn Flow,
    params: &'a [f64],
    partials: &'a mut Option<FlowPartials>,
    n: usize,
    /// Set when the flow's dense partials were formed into `partials`.
    formed: &'a mut bool,
}

impl OdeRhs for FlowRhs<'_> {
    fn dim(&self) -> usize {
        self.n
    }

    fn eval(&mut self, t: f64, y: &[f64], dydt: &mut [f64]) {
        self.flow.rate(t, y, self.params, dydt);
    }

    fn jacobian(&mut self, t: f64, y: &[f64], jacobian: &mut [f64]) -> bool {
        let partials = FlowPartials::of_flow_in(self.partials, self.flow, t, y, self.params);
        jacobian.copy_from_slice(partials.x.as_slice());
        *self.formed = true;
        true
    }

    fn sparsity(&mut self) -> Option<&Sparsity> {
        self.flow.state_sparsity()
    }

    fn sparse_jacobian(&mut self, t: f64, y: &[f64], values: &mut [f64]) -> bool {
        let Some(pattern) = self.flow.state_sparsity() else {
            return false;
        };
        if !self.flow.sparse_state_partials(t, y, self.params, values) {
            let partials = FlowPartials::of_flow_in(self.partials, self.flow, t, y, self.params);
            pattern.gather(partials.x.as_slice(), values);
            *self.formed = true;
        }
        true
    }
}

/// The buffers of the implicit steps of a backward pass.
#[derive(Default)]
pub(crate) struct ImplicitBuffers {
    stages: StageWorkspace,
    matrix: IterationMatrix,
    partials: Option<FlowPartials>,
    /// A stage solve or a transposed solve failed since the last
    /// [`ImplicitBuffers::check`].
    failed: bool,
    /// `matrix` holds the constant Jacobian of this mode of the current
    /// backward pass ([`Flow::state_jacobian_is_constant`]), factorised at
    /// `constant_hg` (0: not factorised).
    constant_mode: Option<usize>,
    constant_hg: f64,
}

impl ImplicitBuffers {
    /// Solves the stages of the step `(t0, h)` from `y0` of `tab` with
    /// `flow`: the stage states into `states`, the rates into `rates`.
    pub(crate) fn solve_stages(
        &mut self,
        tab: &EsdirkTableau,
        (flow, params): (&dyn Flow, &[f64]),
        (t0, h, y0): (f64, f64, &[f64]),
        states: &mut [f64],
        rates: &mut [f64],
    ) {
        let mut formed = false;
        let mut rhs = FlowRhs {
            flow,
            params,
            partials: &mut self.partials,
            n: y0.len(),
            formed: &mut formed,
        };
        if !solve_stages_exactly(tab, &mut rhs, t0, h, y0, states, rates, &mut self.stages) {
            self.failed = true;
        }
    }

    /// Starts a backward pass: no Jacobian kept from another.
    pub(crate) fn begin(&mut self) {
        self.constant_mode = None;
        self.constant_hg = 0.0;
    }

    /// Overwrites `v` with `(I - hg f_x(t, x, p))^{-T} v` for the flow of
    /// mode `mode`. Returns the flow's dense partials at `(t, x, p)` when
    /// forming the Jacobian formed them (a dense iteration matrix, or a
    /// sparse one of a flow without sparse partials of its own): the step's
    /// transpose then reads `f_x^T v` and `f_p^T v` from them rather than
    /// forming them again. A constant Jacobian (see the module's
    /// documentation) kept from an earlier stage is used as it is (and
    /// refactorised when `hg` changed): nothing formed, `None` returned.
    pub(crate) fn transposed_solve(
        &mut self,
        (flow, mode): (&dyn Flow, usize),
        at: (f64, &[f64], &[f64]),
        hg: f64,
        v: &mut [f64],
    ) -> Option<&FlowPartials> {
        let constant = flow.state_jacobian_is_constant();
        if constant && self.constant_mode == Some(mode) {
            if self.constant_hg != hg {
                self.constant_hg = 0.0;
                if !self.matrix.factor(hg) {
                    self.failed = true;
                    return None;
                }
                self.constant_hg = hg;
            }
            self.matrix.solve_transpose(v);
            return None;
        }
        self.constant_mode = None;
        self.constant_hg = 0.0;
        let (t, x, params) = at;
        let mut formed = false;
        let mut rhs = FlowRhs {
            flow,
            params,
            partials: &mut self.partials,
            n: v.len(),
            formed: &mut formed,
        };
        self.matrix.configure(&mut rhs, v.len());
        if !self.matrix.evaluate(&mut rhs, t, x) || !self.matrix.factor(hg) {
            self.failed = true;
            return None;
        }
        if constant {
            self.constant_mode = Some(mode);
            self.constant_hg = hg;
        }
        self.matrix.solve_transpose(v);
        if formed {
            self.partials.as_ref()
        } else {
            None
        }
    }

    /// The error for a failed stage solve since the last check, if any:
    /// the stages of the step starting at `time` in `mode` could not be
    /// solved again.
    pub(crate) fn check(&mut self, time: f64, mode: &str, h: f64) -> Result<(), HybridError> {
        if std::mem::take(&mut self.failed) {
            return Err(HybridError::Unsupported(format!(
                "the adjoint could not solve again the implicit stages of the step of size {h:e} at t = {time} in mode '{mode}' (Newton on the stage equations did not converge, or I - h gamma J is singular); use forward sensitivities (Method::Forward) or a tighter tolerance"
            )));
        }
        Ok(())
    }
}
