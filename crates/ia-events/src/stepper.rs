//! The pluggable solver layer: a [`Stepper`] advances an [`OdeRhs`] one
//! accepted step at a time and offers dense output over the last step.
//!
//! The explicit Runge-Kutta stepper, [`RkStepper`](crate::RkStepper), lives
//! in [`crate::explicit_rk`]; the ode_solvers adapter in
//! [`crate::ode_solvers_adapter`].

use crate::tableau::ButcherTableau;

/// A right-hand side `y' = F(t, y)` as a stepper sees it.
pub trait OdeRhs {
    /// Length of `y`.
    fn dim(&self) -> usize;
    /// How many leading components of `y` the error control covers
    /// (all of them unless a caller asks otherwise).
    fn controlled_dim(&self) -> usize {
        self.dim()
    }
    /// Whether the error norm keeps the closed components
    /// ([`OdeRhs::closed_dim`]) and each column of as many controlled ones
    /// after them apart: the largest of their RMS norms, so that
    /// controlling more components never loosens the state's own control
    /// nor any column's. False (one RMS norm over every controlled
    /// component) unless the right-hand side says otherwise. (The implicit
    /// steppers norm every column apart in any case, CVODES's sensitivity
    /// norm: [`crate::SolverChoice::columns_apart`].)
    fn controlled_apart(&self) -> bool {
        false
    }
    /// The factor on the norm of each column after the closed components
    /// when they are normed apart ([`OdeRhs::controlled_apart`]): the error
    /// estimate of such a column counts this many times over, so it is
    /// held to the tolerance divided by it. 1 unless the right-hand side
    /// says otherwise (derivative probes ask for a safety factor:
    /// [`crate::ExtraState::controlled_weight`]).
    fn controlled_weight(&self) -> f64 {
        1.0
    }
    /// Writes `F(t, y)` into `dydt`.
    fn eval(&mut self, t: f64, y: &[f64], dydt: &mut [f64]);
    /// How many leading components form a system of their own: their rates
    /// read only them (a state with its sensitivities carried after it: the
    /// state's). All of them unless the right-hand side says otherwise.
    fn closed_dim(&self) -> usize {
        self.dim()
    }
    /// Writes the rates of the leading [`OdeRhs::closed_dim`] components,
    /// given only those (`y` and `dydt` are that long). A stepper that
    /// interpolates no further, to place an event, evaluates no more.
    fn eval_closed(&mut self, t: f64, y: &[f64], dydt: &mut [f64]) {
        self.eval(t, y, dydt);
    }
    /// Writes the rates of the components after the leading
    /// [`OdeRhs::closed_dim`] ones at `(t, y)` into `after` (`y` whole,
    /// `after` of the length `dim - closed_dim`) and returns true; false,
    /// writing nothing, when the right-hand side cannot give them apart
    /// (the caller then uses [`OdeRhs::eval`]). The default cannot.
    fn eval_after_closed(&mut self, t: f64, y: &[f64], after: &mut [f64]) -> bool {
        let _ = (t, y, after);
        false
    }
    /// Writes the Jacobian of the rates of the leading
    /// [`OdeRhs::closed_dim`] components with respect to them at `(t, y)`
    /// (`y` that long), column-major into `jacobian` (`closed_dim^2`
    /// entries), and returns true; returns false, writing nothing, when the
    /// right-hand side has none (an implicit stepper then differences
    /// [`OdeRhs::eval_closed`]). The default has none.
    fn jacobian(&mut self, t: f64, y: &[f64], jacobian: &mut [f64]) -> bool {
        let _ = (t, y, jacobian);
        false
    }
    /// The entries of [`OdeRhs::jacobian`]'s matrix that may be non-zero,
    /// when the right-hand side declares them (the flow's
    /// [`ia_core::Flow::state_sparsity`]); an implicit stepper then may
    /// factorise sparsely ([`crate::implicit_rk::IterationMatrix`]) and
    /// reads the entries from [`OdeRhs::sparse_jacobian`]. The default
    /// declares none.
    fn sparsity(&mut self) -> Option<&ia_core::Sparsity> {
        None
    }
    /// Writes the Jacobian's entries in the order of
    /// [`OdeRhs::sparsity`]'s pattern into `values` and returns true;
    /// false, writing nothing, when there is no pattern. The default has
    /// none.
    fn sparse_jacobian(&mut self, t: f64, y: &[f64], values: &mut [f64]) -> bool {
        let _ = (t, y, values);
        false
    }
    /// Whether [`OdeRhs::jacobian`] is the same at every `(t, y)` until the
    /// stepper is started again (the flow's
    /// [`ia_core::Flow::state_jacobian_is_constant`]); an implicit stepper
    /// then evaluates and factorises it once per start and step size
    /// instead of at every stage. The default claims nothing.
    fn jacobian_is_constant(&mut self) -> bool {
        false
    }
}

/// Why a step could not be taken.
#[derive(Clone, Debug, PartialEq)]
pub enum StepFailure {
    /// The step size fell below the smallest representable advance.
    Underflow {
        /// Time reached.
        time: f64,
        /// Step size tried.
        step: f64,
        /// Smallest allowed.
        min_step: f64,
    },
    /// The right-hand side or the state became NaN or infinite.
    NonFinite {
        /// Time reached.
        time: f64,
    },
    /// The stage equations of an implicit method did not converge at any
    /// step size down to the smallest representable advance.
    NewtonFailure {
        /// Time reached (the start of the step that failed).
        time: f64,
        /// The last step size tried.
        step: f64,
    },
    /// A failure reported by a wrapped solver.
    Solver(String),
}

/// Work counters of a stepper.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct StepCounters {
    /// Right-hand side evaluations.
    pub rhs_evaluations: usize,
    /// Rejected step attempts.
    pub rejected_steps: usize,
    /// Accepted steps taken while the stiffness test of DOPRI5 or DOP853
    /// declared the flow stiff (their size set by stability, not accuracy;
    /// a step held inside the stability boundary from beyond it counts as
    /// beyond: see [`crate::stiffness`]); zero for methods without the
    /// test.
    pub stiff_steps: usize,
}

/// A one-step integrator with dense output over its last step.
///
/// The Runge-Kutta engine drives it: [`Stepper::start`] at the beginning of
/// every segment (after every reset), [`Stepper::step`] up to a time limit
/// (the next observation or the end), [`Stepper::interpolate`] to locate
/// events, and [`Stepper::truncate`] to end the last step on an event.
pub trait Stepper {
    /// Method name, as in the [`crate::SolverChoice`] that built it.
    fn name(&self) -> &str;
    /// Sets the state to `(t, y)`, discarding the previous step. The first
    /// step of a run follows the stepper's start-of-run rule (with error
    /// control: Hairer's starting step from `(t, y)` and its rates). After
    /// a reset the implicit steppers take that rule again, never above the
    /// proposal carried over from the earlier segment (a switch may excite
    /// a fast transient the carried proposal knows nothing of); the
    /// explicit ones keep the carried proposal (see
    /// [`crate::RkStepper`]).
    fn start(&mut self, rhs: &mut dyn OdeRhs, t: f64, y: &[f64]) -> Result<(), StepFailure>;
    /// Takes one accepted step that ends at or before `t_limit`; a step that
    /// would pass `t_limit` is shortened to end on it exactly.
    fn step(&mut self, rhs: &mut dyn OdeRhs, t_limit: f64) -> Result<(), StepFailure>;
    /// Replaces the last step by one from the same start that ends at `t_new`
    /// (inside the last step).
    fn truncate(&mut self, rhs: &mut dyn OdeRhs, t_new: f64) -> Result<(), StepFailure>;
    /// Time at the end of the last step.
    fn time(&self) -> f64;
    /// State at the end of the last step.
    fn state(&self) -> &[f64];
    /// Time at the start of the last step.
    fn previous_time(&self) -> f64;
    /// The size the last step was taken with. `time() - previous_time()`
    /// can differ from it by a rounding; the adjoint must transpose (and a
    /// replay redo) the step exactly as it was taken. The default is that
    /// difference, for steppers that do not keep it.
    fn step_size(&self) -> f64 {
        self.time() - self.previous_time()
    }
    /// State at the start of the last step.
    fn previous_state(&self) -> &[f64];
    /// Whether the dense output is of lower order than the step, so that an
    /// event located on it lies off the step's solution by more than the
    /// step's error: the engine then refines the event time on redone steps
    /// ([`Stepper::truncate`]) until the guard vanishes at a step's end. The
    /// default is `false` (the located time is kept).
    fn refine_events_on_steps(&self) -> bool {
        false
    }
    /// Writes the dense output at `t` (within the last step) of the leading
    /// `out.len()` components. Steppers without a continuous extension may
    /// re-integrate from the step's start with `rhs`.
    fn interpolate(&mut self, rhs: &mut dyn OdeRhs, t: f64, out: &mut [f64]);
    /// Writes the dense output at `t` of the components `entries` only into
    /// the same places of `out` (the others are left as they are). The
    /// default interpolates the leading `out.len()` components.
    fn interpolate_entries(
        &mut self,
        rhs: &mut dyn OdeRhs,
        t: f64,
        entries: &[usize],
        out: &mut [f64],
    ) {
        let _ = entries;
        self.interpolate(rhs, t, out);
    }
    /// Work done so far.
    fn counters(&self) -> StepCounters;
    /// Forgets the last run (its counters, the step size it would try
    /// next), keeping the buffers, so that the next [`Stepper::start`]
    /// begins a run exactly as a new stepper would; returns whether it did.
    /// The default does not (a [`crate::Workspace`] then builds a new
    /// stepper for each run).
    fn rewind(&mut self) -> bool {
        false
    }
    /// The Runge-Kutta tableau of each step, when every accepted step is one
    /// explicit Runge-Kutta step from its start (needed by the discrete adjoint).
    fn tableau(&self) -> Option<&'static ButcherTableau> {
        None
    }
    /// The rates `F` (all components) at the start and at the end of the
    /// last step, when the stepper keeps them; `None` otherwise (the caller
    /// then evaluates them itself).
    fn step_rates(&self) -> Option<(&[f64], &[f64])> {
        None
    }
    /// The stage states of the last accepted step when its stages are
    /// implicit and were solved to rounding, or explicit and kept
    /// ([`Stepper::set_stages_to_rounding`]): `(states, block)`, the states
    /// stage by stage, `block` floats each (at least the closed block of
    /// the right-hand side, [`OdeRhs::closed_dim`]; all of the explicit
    /// stepper's components), stage 0 the step's start. `None` otherwise
    /// (implicit stages solved only to the Newton tolerance, explicit ones
    /// not asked for): the discrete adjoint keeps these rather than
    /// forming the stages again.
    fn stage_states(&self) -> Option<(&[f64], usize)> {
        None
    }
    /// Asks an implicit stepper to solve every stage to rounding and offer
    /// its stage states ([`Stepper::stage_states`]) whether or not
    /// sensitivities are carried (`false`: only when they are), and an
    /// explicit Runge-Kutta stepper to keep its stage states and offer
    /// them (their values are the same either way). Set before each run.
    fn set_stages_to_rounding(&mut self, _on: bool) {}
}

/// The blocks the error norm takes apart among the first `controlled`
/// components: all of them as one block, or, `apart`
/// ([`OdeRhs::controlled_apart`]), the `closed` leading components
/// ([`OdeRhs::closed_dim`]: the state) and each block of `closed`
/// components after them (a forward-sensitivity column, a derivative
/// probe; the last block shorter if `controlled` is not a multiple).
pub(crate) fn controlled_blocks(
    closed: usize,
    controlled: usize,
    apart: bool,
) -> impl Iterator<Item = std::ops::Range<usize>> {
    let width = if apart && closed > 0 && closed < controlled {
        closed
    } else {
        controlled.max(1)
    };
    (0..controlled.div_ceil(width).max(1))
        .map(move |b| b * width..((b + 1) * width).min(controlled))
}

/// The step's error norm over the first `controlled` components, given
/// `norm(range)`, the scaled RMS norm over `range`: that norm over all of
/// them, or, `apart` ([`OdeRhs::controlled_apart`]), the largest of the
/// norms of the state and of each column after it ([`controlled_blocks`]),
/// each column's times `weight` ([`OdeRhs::controlled_weight`]), as CVODES
/// norms its sensitivities: every column's error then follows the
/// tolerance, rather than their root mean square. A non-finite block norm
/// is returned as it is.
#[inline(always)]
pub(crate) fn controlled_norm(
    mut norm: impl FnMut(std::ops::Range<usize>) -> f64,
    closed: usize,
    controlled: usize,
    (apart, weight): (bool, f64),
) -> f64 {
    if !apart || closed >= controlled {
        // One block (every step of a plain run): no loop.
        return norm(0..controlled);
    }
    let mut largest = 0.0f64;
    for block in controlled_blocks(closed, controlled, apart) {
        let column = block.start > 0;
        let value = norm(block);
        let value = if column { weight * value } else { value };
        if !value.is_finite() {
            return value;
        }
        largest = largest.max(value);
    }
    largest
}

/// The step a run or a segment starts with: Hairer's starting step (Solving
/// ODEs I, II.4, the rule of his DOPRI5), from the state `y` at `t` and its
/// rates `rate`, for a method of order `order`, within `span`. With `d0` and
/// `d1` the scaled RMS norms of `y` and `rate`, `h0 = 0.01 d0 / d1` (`1e-6`
/// when either is below `1e-5`); with `d2` that of the change of the rates
/// over an explicit Euler step of `h0`, divided by `h0` (one call of
/// `eval`), `h1 = (0.01 / max(d1, d2))^(1/order)`; the result is the smaller
/// of `100 h0` and `h1`. Norms over the first `controlled` components,
/// `sc_i = atol + rtol |y_i|`. `probe` and `probe_rate` are scratch of
/// `y`'s length. Every stepper with error control calls it at the start of
/// a run, and the implicit ones after every reset too ([`Stepper::start`]).
pub(crate) fn starting_step(
    mut eval: impl FnMut(f64, &[f64], &mut [f64]),
    (t, y, rate): (f64, &[f64], &[f64]),
    (order, rtol, atol): (u32, f64, f64),
    controlled: usize,
    span: f64,
    (probe, probe_rate): (&mut [f64], &mut [f64]),
) -> f64 {
    let controlled = controlled.clamp(1, y.len().max(1));
    let norm = |v: &[f64], y: &[f64]| {
        let s: f64 = v
            .iter()
            .zip(y)
            .take(controlled)
            .map(|(a, b)| (a / (atol + rtol * b.abs())).powi(2))
            .sum();
        (s / controlled as f64).sqrt()
    };
    let d0 = norm(y, y);
    let d1 = norm(rate, y);
    let mut h0 = if d0 < 1e-5 || d1 < 1e-5 {
        1e-6
    } else {
        0.01 * d0 / d1
    };
    h0 = h0.min(span.abs());
    for (p, (&y, &f)) in probe.iter_mut().zip(y.iter().zip(rate)) {
        *p = y + h0 * f;
    }
    eval(t + h0, probe, probe_rate);
    for (pf, &f) in probe_rate.iter_mut().zip(rate) {
        *pf -= f;
    }
    let d2 = norm(probe_rate, y) / h0;
    let h1 = if d1.max(d2) <= 1e-15 {
        (h0 * 1e-3).max(1e-6)
    } else {
        (0.01 / d1.max(d2)).powf(1.0 / order as f64)
    };
    (100.0 * h0).min(h1)
}

/// Right-hand sides shared by the steppers' tests.
#[cfg(test)]
pub(crate) mod test_flows {
    use super::OdeRhs;

    /// A ballistic flight, `y' = v, v' = -9.81` (the vertical motion of
    /// `ball2d_flat_a`; affine, its Jacobian exact and constant): a
    /// quadratic each Runge-Kutta method integrates exactly, so each step's
    /// error estimate is rounding (and Newton's tolerance, for the implicit
    /// ones).
    pub(crate) struct Flight;

    impl OdeRhs for Flight {
        fn dim(&self) -> usize {
            2
        }
        fn eval(&mut self, _t: f64, y: &[f64], dydt: &mut [f64]) {
            dydt[0] = y[1];
            dydt[1] = -9.81;
        }
        fn jacobian(&mut self, _t: f64, _y: &[f64], jacobian: &mut [f64]) -> bool {
            jacobian.copy_from_slice(&[0.0, 0.0, 1.0, 0.0]);
            true
        }
    }
}
