//! The explicit Runge-Kutta stepper: [`RkStepper`] implements fixed-step
//! RK4 (cubic Hermite dense output), adaptive Dormand-Prince 5(4) (its
//! fourth-order continuous extension) and DOP853 (its seventh-order one),
//! or a method built by hand from a [`ButcherTableau`].

use crate::sized::copy_floats;
use crate::stepper::{controlled_norm, starting_step, OdeRhs, StepCounters, StepFailure, Stepper};
use crate::stiffness::{h_lambda, stiffness_bound, StabilityHold, StiffnessTest};
use crate::tableau::{
    weighted_sum, ButcherTableau, DenseOutput, ErrorEstimate, ExtraStages, DOP853, DOPRI5, RK4,
};
use ia_core::HybridError;

/// How an [`RkStepper`] chooses its steps.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum StepControl {
    /// Fixed step `dt` (the last step before a limit or an event is shorter).
    Fixed {
        /// Step size.
        dt: f64,
    },
    /// Embedded error estimate: accept when the scaled error norm is at most one.
    Adaptive {
        /// Relative tolerance.
        rtol: f64,
        /// Absolute tolerance.
        atol: f64,
        /// Largest step.
        max_step: f64,
        /// First step; chosen by Hairer's rule when `None`.
        initial_step: Option<f64>,
    },
}

/// Explicit Runge-Kutta stepper: RK4 with fixed steps, or Dormand-Prince 5(4)
/// or 8(5,3) with error control (or a method built by hand). All buffers are allocated once by [`Stepper::start`]
/// on the first segment; steps allocate nothing.
///
/// A run's first step follows Hairer's starting-step rule; a segment after a
/// reset keeps the step-size proposal carried over, unlike the implicit
/// steppers, which take the rule again after a reset. Taking the rule again
/// (never above the carried proposal) was tried: on the thermostat over
/// 10^4 switches, where a reset does not change the flow's time scale, it
/// took 18 % more DOPRI5 steps and twice as many DOP853 steps (the rule is
/// cautious by design); on the stability-limited relay, where DOPRI5's
/// step is held at its stability bound anyway, it changed nothing.
///
/// The step after a run's first may grow by up to a factor 10^4
/// (CVODE's `ETAMX1`), the later ones by 10. A segment after a
/// reset keeps the usual cap: its first step is the carried proposal, a
/// controller's answer, not a guess. Granting the larger cap there too was
/// measured: the same steps on `ball2d_flat_a` and the thermostat (10^4
/// switches), the stiff problems of issue 28 the same but the Kelvin-Voigt
/// ball, 1 % to 10 % fewer DOPRI5 steps there (182 to 179 at `1e-10`) and
/// one DOP853 step fewer at `1e-6`; a small gain left for a change of the
/// reset rule of its own.
#[derive(Clone, Debug)]
pub struct RkStepper {
    tableau: &'static ButcherTableau,
    control: StepControl,
    dim: usize,
    t_prev: f64,
    t: f64,
    h_next: f64,
    /// The size of the last accepted step.
    h_taken: f64,
    /// The cap of the step-size factor after the next accepted step:
    /// [`FIRST_MAX_FACTOR`] until a run's first step is accepted, then
    /// [`MAX_FACTOR`].
    growth_cap: GrowthCap,
    y_prev: Vec<f64>,
    y: Vec<f64>,
    /// Stages of the last step, `dim` each; the last block holds `F(t, y)` at
    /// the step's end (first stage of the next step, and dense output).
    k: Vec<f64>,
    /// A stage state, the error estimate and other scratch (the first
    /// `dim` floats); with [`RkStepper::keep_stages`], then the last
    /// attempt's `s` stage states (`dim` each, stage 0 its start), which
    /// [`Stepper::stage_states`] offers for the step accepted.
    stage: Vec<f64>,
    /// Whether the stage states of each step are kept
    /// ([`Stepper::set_stages_to_rounding`]: the adjoint's tape keeps them
    /// so that its backward pass reads them rather than forming them again).
    keep_stages: bool,
    y_new: Vec<f64>,
    /// Coefficients of the continuous extension of the last step,
    /// [`DENSE_WIDTH`] per component, for the leading `dense_ready`
    /// components (0 after every step: prepared on the first interpolation).
    dense: Vec<f64>,
    dense_ready: usize,
    /// For how many leading components the extra stages of a continuous
    /// extension that has them ([`DenseOutput::Dop853`]) are evaluated for
    /// the last step (0: none yet).
    extra_stages_ready: usize,
    counters: StepCounters,
    /// The `h lambda` bound of the method's stiffness test
    /// ([`crate::stiffness`]), when it has one.
    stiffness_bound: Option<f64>,
    /// `h lambda` of the last attempted step (methods with a bound).
    h_lambda: f64,
    stiffness: StiffnessTest,
    /// The steps held inside the stability boundary on a stiff flow
    /// (methods with a bound, adaptive control).
    hold: StabilityHold,
}

/// Coefficients of the continuous extension per component (DOP853's eight;
/// the others use the first four or five).
const DENSE_WIDTH: usize = 8;

const SAFETY: f64 = 0.9;
const MIN_FACTOR: f64 = 0.2;
const MAX_FACTOR: f64 = 10.0;
/// The growth cap of the step after a run's first accepted step (then
/// [`MAX_FACTOR`]), as CVODE's `ETAMX1 = 10^4` (ARKODE's `etamx1`, the
/// same default): the first step's size is a guess (Hairer's starting rule
/// or the caller's [`StepControl::Adaptive::initial_step`]), not a
/// controller's answer to a measured error, and the rule is cautious by
/// design, so the first error estimate is the first measurement of the
/// step the solution allows. Under the usual cap the steps ramp up by 10
/// a step towards it: on `ball2d_flat_a` at `1e-10` the first DOPRI5 step
/// had an error norm of `1.5e-11`, room for a step about 130 times longer,
/// reached in two more steps. The controller's formula is unchanged
/// ([`step_factor`]); only its cap is lifted, once, and a rejection still
/// caps the next accepted step's growth at 1. Every stepper with error
/// control takes it through [`GrowthCap`].
pub(crate) const FIRST_MAX_FACTOR: f64 = 1e4;

/// The cap of the step-size factor after the next accepted step: a
/// stepper's usual cap, lifted to [`FIRST_MAX_FACTOR`] for the step after
/// one whose size the starting rule guessed.
#[derive(Clone, Copy, Debug)]
pub(crate) struct GrowthCap {
    usual: f64,
    next: f64,
}

impl GrowthCap {
    /// The usual cap `usual`, not lifted.
    pub(crate) fn new(usual: f64) -> Self {
        Self { usual, next: usual }
    }

    /// The next step's size is a guess: lifts the cap after it.
    pub(crate) fn after_guess(&mut self) {
        self.next = FIRST_MAX_FACTOR;
    }

    /// The cap after the step just accepted; the usual one from then on.
    pub(crate) fn take(&mut self) -> f64 {
        std::mem::replace(&mut self.next, self.usual)
    }
}

/// The least step from `t` towards `t_limit` an [`RkStepper`] takes (short
/// of landing on the limit): rounding of the times,
/// `8 eps max(|t|, |t_limit|)`, and at least `8 eps` of the least normal
/// number.
pub(crate) fn min_step(t: f64, t_limit: f64) -> f64 {
    8.0 * f64::EPSILON * t.abs().max(t_limit.abs()).max(f64::MIN_POSITIVE)
}

/// The step-size factor `SAFETY err^(-1/q)` for the error norm `err`
/// (finite and positive) of a method of order `q`, clamped to
/// `[MIN_FACTOR, max]`: the error estimate of an embedded pair of orders
/// `q (q - 1)` scales as `h^q`. (Newton's method for the root from a
/// guess read off the exponent bits ran as many instructions as `powf`.)
///
/// An error norm at most half of `(SAFETY / max)^q` gives a factor above
/// `max` by `2^(1/q)` (15 % for DOPRI5's `q = 5`), far beyond the rounding
/// of `powf`: the clamped `max` is returned without the root, the same
/// number to the bit. Such errors are common where the solution is nearly
/// a polynomial the method integrates exactly (a ballistic flight), where
/// the error norm is rounding noise of the tolerance.
pub(crate) fn step_factor(err: f64, q: u32, max: f64) -> f64 {
    let q_int = i32::try_from(q).unwrap_or(i32::MAX);
    if max > SAFETY && err <= 0.5 * (SAFETY / max).powi(q_int) {
        return max;
    }
    (SAFETY * err.powf(-1.0 / f64::from(q))).clamp(MIN_FACTOR, max)
}

impl RkStepper {
    /// Classical RK4 with fixed step `dt`.
    pub fn rk4(dt: f64) -> Self {
        Self::new(&RK4, StepControl::Fixed { dt }).expect("RK4 is a valid fixed-step method")
    }

    /// Dormand-Prince 5(4) with tolerances `rtol`, `atol`.
    pub fn dopri5(rtol: f64, atol: f64) -> Self {
        Self::new(
            &DOPRI5,
            StepControl::Adaptive {
                rtol,
                atol,
                max_step: f64::INFINITY,
                initial_step: None,
            },
        )
        .expect("DOPRI5 has an error estimate")
    }

    /// Dormand-Prince 8(5,3) ([`DOP853`]) with tolerances `rtol`, `atol`.
    ///
    /// At tight tolerances on a smooth solution its steps are several times
    /// longer than DOPRI5's; here `y' = -y` to `t = 10` at `1e-10`:
    ///
    /// ```
    /// use ia_events::{OdeRhs, RkStepper, Stepper};
    /// struct Decay;
    /// impl OdeRhs for Decay {
    ///     fn dim(&self) -> usize { 1 }
    ///     fn eval(&mut self, _t: f64, y: &[f64], dydt: &mut [f64]) { dydt[0] = -y[0]; }
    /// }
    /// let steps = |mut stepper: RkStepper| {
    ///     stepper.start(&mut Decay, 0.0, &[1.0]).unwrap();
    ///     let mut steps = 0;
    ///     while stepper.time() < 10.0 {
    ///         stepper.step(&mut Decay, 10.0).unwrap();
    ///         steps += 1;
    ///     }
    ///     assert!((stepper.state()[0] - (-10f64).exp()).abs() < 1e-10);
    ///     steps
    /// };
    /// let (high, low) = (steps(RkStepper::dop853(1e-10, 1e-10)), steps(RkStepper::dopri5(1e-10, 1e-10)));
    /// assert!(3 * high < low, "{high} steps against {low}");
    /// ```
    pub fn dop853(rtol: f64, atol: f64) -> Self {
        Self::new(
            &DOP853,
            StepControl::Adaptive {
                rtol,
                atol,
                max_step: f64::INFINITY,
                initial_step: None,
            },
        )
        .expect("DOP853 has an error estimate")
    }

    /// A stepper of the given method and control. The method is checked
    /// ([`ButcherTableau::validate`]), and adaptive control needs its error
    /// weights: a method that cannot run as asked is refused here, with the
    /// reason, never run wrong.
    pub fn new(
        tableau: &'static ButcherTableau,
        control: StepControl,
    ) -> Result<Self, HybridError> {
        tableau.validate().map_err(HybridError::Unsupported)?;
        if matches!(control, StepControl::Adaptive { .. }) && tableau.error.is_none() {
            return Err(HybridError::Unsupported(format!(
                "Runge-Kutta method '{}' has no error estimate, so it runs with fixed steps only",
                tableau.name
            )));
        }
        Ok(Self {
            tableau,
            control,
            dim: 0,
            t_prev: 0.0,
            t: 0.0,
            h_next: 0.0,
            h_taken: 0.0,
            growth_cap: GrowthCap::new(MAX_FACTOR),
            y_prev: Vec::new(),
            y: Vec::new(),
            k: Vec::new(),
            stage: Vec::new(),
            keep_stages: false,
            y_new: Vec::new(),
            dense: Vec::new(),
            dense_ready: 0,
            extra_stages_ready: 0,
            counters: StepCounters::default(),
            stiffness_bound: stiffness_bound(tableau),
            h_lambda: 0.0,
            stiffness: StiffnessTest::default(),
            hold: StabilityHold::default(),
        })
    }

    fn stages(&self) -> usize {
        self.tableau.solution_stages()
    }

    /// One Runge-Kutta step of size `h` from `(t, y)` into `y_new`, with the
    /// end rate in the last stage block. `k[0]` must hold `F(t, y)`.
    fn attempt(&mut self, rhs: &mut dyn OdeRhs, h: f64) {
        // Small systems by their own copies of the stage arithmetic, the
        // size known to the compiler (the `explicit` sizes of `sized!`): the
        // same operations in the same order, so the same numbers.
        crate::sized!(explicit, n = self.dim => self.attempt_sized(rhs, h, n))
    }

    /// [`RkStepper::attempt`] for `dim = n` (inlined into each of its
    /// callers, so that a constant `n` sizes its loops).
    #[inline(always)]
    fn attempt_sized(&mut self, rhs: &mut dyn OdeRhs, h: f64, n: usize) {
        let s = self.stages();
        let y = &self.y[..n];
        // With the stages kept, stage `i`'s state at `n + i n` (stage 0 the
        // start); otherwise each in the first `n` floats.
        let stage_states = if self.keep_stages {
            let kept = &mut self.stage[n..(s + 1) * n];
            kept[..n].copy_from_slice(y);
            kept
        } else {
            &mut self.stage[..n]
        };
        self.tableau.stages(
            &mut |t, y, out| rhs.eval(t, y, out),
            self.t,
            h,
            y,
            1,
            &mut self.k[..s * n],
            stage_states,
        );
        let y_new = &mut self.y_new[..n];
        self.tableau.solution(h, y, &self.k[..s * n], y_new);
        let end = &mut self.k[s * n..(s + 1) * n];
        rhs.eval(self.t + h, y_new, end);
        self.counters.rhs_evaluations += s;
        if self.stiffness_bound.is_some() {
            // The last stage's state is still in the stage buffer; the
            // state's components only (not sensitivities carried after it).
            let m = rhs.closed_dim().min(n);
            let last = &self.k[(s - 1) * n..(s - 1) * n + m];
            let end = &self.k[s * n..s * n + m];
            let at = if self.keep_stages { s * n } else { 0 };
            let last_state = &self.stage[at..at + m];
            self.h_lambda = h_lambda(h, end, last, &self.y_new[..m], last_state);
        }
    }

    /// Scaled RMS norm of the embedded error estimate over the controlled
    /// components (methods with error weights; [`RkStepper::new`] refuses
    /// adaptive control of the others).
    ///
    /// With the components kept apart ([`OdeRhs::controlled_apart`]), the
    /// largest of the norms over the closed components and over each
    /// column after them, the columns' times the weight
    /// ([`OdeRhs::controlled_weight`], [`controlled_norm`],
    /// [`controlled_blocks`](crate::stepper::controlled_blocks)).
    fn error_norm(
        &mut self,
        h: f64,
        tolerances: (f64, f64),
        (closed, controlled): (usize, usize),
        apart: (bool, f64),
    ) -> f64 {
        // Every component controlled, in a small system (a state alone, or
        // with one derivative probe after it): sized for the compiler, as
        // [`RkStepper::attempt`].
        crate::sized!(
            explicit,
            (c, m) = (closed, controlled),
            if controlled == self.dim => self.error_norm_sized(h, tolerances, (c, m), apart)
        )
    }

    /// [`RkStepper::error_norm`] (inlined into each of its callers, so
    /// that a constant `controlled` sizes its loops).
    #[inline(always)]
    fn error_norm_sized(
        &mut self,
        h: f64,
        (rtol, atol): (f64, f64),
        (closed, controlled): (usize, usize),
        (apart, weight): (bool, f64),
    ) -> f64 {
        match self.tableau.error {
            Some(ErrorEstimate::Embedded(weights)) => {
                self.estimate(weights, 0..controlled);
                controlled_norm(
                    |range| {
                        let count = range.len().max(1) as f64;
                        (self.scaled_square_sum(h, rtol, atol, range) / count).sqrt()
                    },
                    closed,
                    controlled,
                    (apart, weight),
                )
            }
            Some(ErrorEstimate::Corrected { fifth, third }) => controlled_norm(
                // DOP853's norm of each block: its fifth-order estimate
                // corrected by the third-order one.
                |range| {
                    self.estimate(fifth, range.clone());
                    let fifth_sum = self.scaled_square_sum(1.0, rtol, atol, range.clone());
                    self.estimate(third, range.clone());
                    let third_sum = self.scaled_square_sum(1.0, rtol, atol, range.clone());
                    let count = range.len().max(1) as f64;
                    let denominator = fifth_sum + 0.01 * third_sum;
                    let denominator = if denominator > 0.0 { denominator } else { 1.0 };
                    h.abs() * fifth_sum / (count * denominator).sqrt()
                },
                closed,
                controlled,
                (apart, weight),
            ),
            None => 0.0,
        }
    }

    /// The estimate `sum_j e_j K_j` of the components `range` into the
    /// same places of the stage buffer, free between steps.
    #[inline(always)]
    fn estimate(&mut self, weights: &[f64], range: std::ops::Range<usize>) {
        let k = &self.k[range.start..];
        let estimate = &mut self.stage[range];
        weighted_sum(1.0, None, weights, k, self.dim, estimate);
    }

    /// `sum_i (h e_i / sc_i)^2` over the components `range` of the
    /// [`RkStepper::estimate`] `e`, `sc_i = atol + rtol max(|y_0,i|, |y_1,i|)`.
    #[inline(always)]
    fn scaled_square_sum(
        &self,
        h: f64,
        rtol: f64,
        atol: f64,
        range: std::ops::Range<usize>,
    ) -> f64 {
        self.stage[range.clone()]
            .iter()
            .zip(self.y[range.clone()].iter().zip(&self.y_new[range]))
            .map(|(&e, (&y, &y_new))| {
                let r = h * e / (atol + rtol * y.abs().max(y_new.abs()));
                r * r
            })
            .sum()
    }

    /// The start-of-run rule ([`starting_step`]) over the controlled
    /// components, from the state and its rates at the start.
    fn initial_step(&mut self, rhs: &mut dyn OdeRhs, rtol: f64, atol: f64, span: f64) -> f64 {
        let n = self.dim;
        let controlled = rhs.controlled_dim().max(1).min(n);
        self.counters.rhs_evaluations += 1;
        starting_step(
            |t, y, dydt| rhs.eval(t, y, dydt),
            (self.t, &self.y, &self.k[..n]),
            (self.tableau.order, rtol, atol),
            controlled,
            span,
            (&mut self.stage, &mut self.y_new),
        )
    }

    /// The continuous extension of the last step at `t`, for the leading
    /// `out.len()` components: Dormand-Prince's fourth-order one for
    /// DOPRI5, the seventh-order one for DOP853 (whose three extra stages
    /// are evaluated through `rhs` on the first call after a step), cubic
    /// Hermite for RK4.
    pub fn dense_output(&mut self, rhs: &mut dyn OdeRhs, t: f64, out: &mut [f64]) {
        let m = out.len();
        let h = self.t - self.t_prev;
        if h == 0.0 {
            out.copy_from_slice(&self.y[..m]);
            return;
        }
        self.prepare_extra_stages(rhs, m);
        if self.dense_ready < m {
            self.prepare_dense(m);
        }
        let theta = (t - self.t_prev) / h;
        for (i, o) in out.iter_mut().enumerate() {
            *o = self.dense_at(&self.dense[DENSE_WIDTH * i..DENSE_WIDTH * (i + 1)], theta);
        }
    }

    /// Evaluates the extra stages of the last step's continuous extension
    /// for at least the leading `m` components, when the method has them and
    /// they are not evaluated that far yet: for the closed leading block
    /// alone ([`OdeRhs::closed_dim`]) when it holds the `m`, so that placing
    /// an event on the state never evaluates the sensitivities carried after
    /// it.
    #[inline]
    fn prepare_extra_stages(&mut self, rhs: &mut dyn OdeRhs, m: usize) {
        let DenseOutput::Dop853(extra) = self.tableau.dense else {
            return;
        };
        if self.extra_stages_ready >= m || self.t == self.t_prev {
            return;
        }
        self.evaluate_extra_stages(rhs, extra, m);
    }

    /// [`RkStepper::prepare_extra_stages`] once it is known to be wanted
    /// (kept out of line: the interpolation that checks for it runs many
    /// times a step).
    #[inline(never)]
    fn evaluate_extra_stages(&mut self, rhs: &mut dyn OdeRhs, extra: &ExtraStages, m: usize) {
        let n = self.dim;
        let closed = rhs.closed_dim().min(n);
        let width = if m <= closed { closed } else { n };
        let first = self.stages() + 1;
        let h = self.h_taken;
        for (i, (row, &c)) in extra.a.iter().zip(extra.c).enumerate() {
            let (done, rest) = self.k.split_at_mut((first + i) * n);
            let stage = &mut self.stage[..width];
            weighted_sum(h, Some(&self.y_prev), row, done, n, stage);
            let t = self.t_prev + c * h;
            if width == n {
                rhs.eval(t, stage, &mut rest[..n]);
            } else {
                rhs.eval_closed(t, stage, &mut rest[..width]);
            }
        }
        self.counters.rhs_evaluations += extra.a.len();
        self.extra_stages_ready = width;
    }

    /// The continuous extension with coefficients `r` at the fraction
    /// `theta` of the last step.
    #[inline]
    fn dense_at(&self, r: &[f64], theta: f64) -> f64 {
        let theta1 = 1.0 - theta;
        match self.tableau.dense {
            // DOPRI5's extension is DOP853's with r[5..8] zero, left out:
            // the event location evaluates this polynomial in a chain of
            // dependent steps (each trial time from the last value), where
            // its wall time is the latency of the nested products, and the
            // zero terms were three of its eight levels. Without them, the
            // same value to the bit: `r[4] + theta (0 + theta1 (0 + theta
            // 0))` is `r[4]` for any finite `theta` (bar the sign of a zero
            // `r[4]`, which no nonzero sum keeps).
            DenseOutput::DormandPrince(_) => {
                r[0] + theta * (r[1] + theta1 * (r[2] + theta * (r[3] + theta1 * r[4])))
            }
            DenseOutput::Dop853(_) => {
                let tail = r[4] + theta * (r[5] + theta1 * (r[6] + theta * r[7]));
                r[0] + theta * (r[1] + theta1 * (r[2] + theta * (r[3] + theta1 * tail)))
            }
            DenseOutput::Hermite => {
                // Cubic Hermite through both ends and their derivatives.
                let h00 = (1.0 + 2.0 * theta) * theta1 * theta1;
                let h10 = theta * theta1 * theta1;
                let h01 = theta * theta * (3.0 - 2.0 * theta);
                let h11 = -theta * theta * theta1;
                h00 * r[0] + h10 * r[1] + h01 * r[2] + h11 * r[3]
            }
        }
    }

    /// The continuous extension's coefficients of the leading `m` components:
    /// Dormand-Prince's (Hairer, Norsett, Wanner, dense output of DOPRI5), or
    /// the Hermite data `y0, h f0, y1, h f1` for RK4.
    fn prepare_dense(&mut self, m: usize) {
        for i in 0..m {
            let r = self.dense_coefficients(i);
            self.dense[DENSE_WIDTH * i..DENSE_WIDTH * (i + 1)].copy_from_slice(&r);
        }
        self.dense_ready = m;
    }

    /// The continuous extension's coefficients of component `i` of the last
    /// step.
    #[inline]
    fn dense_coefficients(&self, i: usize) -> [f64; DENSE_WIDTH] {
        let n = self.dim;
        let h = self.t - self.t_prev;
        let s = self.stages();
        let y0 = self.y_prev[i];
        let f0 = self.k[i];
        let f1 = self.k[s * n + i];
        if let DenseOutput::Hermite = self.tableau.dense {
            return [y0, h * f0, self.y[i], h * f1, 0.0, 0.0, 0.0, 0.0];
        }
        // The cubic part both Dormand-Prince extensions share, then one
        // coefficient per row of weights on the rate blocks.
        let diff = self.y[i] - y0;
        let bspl = h * f0 - diff;
        let mut r = [y0, diff, bspl, diff - h * f1 - bspl, 0.0, 0.0, 0.0, 0.0];
        for (slot, weights) in r[4..].iter_mut().zip(self.tableau.dense.weight_rows()) {
            let mut sum = 0.0;
            for (j, &d) in weights.iter().enumerate() {
                if d != 0.0 {
                    sum += d * self.k[j * n + i];
                }
            }
            *slot = h * sum;
        }
        r
    }

    fn min_step(&self, t_limit: f64) -> f64 {
        min_step(self.t, t_limit)
    }

    fn accept(&mut self, h: f64) {
        self.h_taken = h;
        self.dense_ready = 0;
        self.extra_stages_ready = 0;
        // The start becomes the previous state and the new state the
        // current one; the buffers rotate, nothing is copied.
        std::mem::swap(&mut self.y_prev, &mut self.y);
        std::mem::swap(&mut self.y, &mut self.y_new);
        self.t_prev = self.t;
        self.t += h;
    }

    /// Measures the stability limit of the steps at the current state
    /// ([`StabilityHold::measure`]), for a method with a stability bound.
    fn measure_stability(&mut self, rhs: &mut dyn OdeRhs) {
        if let Some(bound) = self.stiffness_bound {
            let n = self.dim;
            self.counters.rhs_evaluations += self.hold.measure(rhs, self.t, &self.y[..n], bound);
        }
    }

    /// Moves the end rate of the last step into the first stage slot, so that
    /// the next step starts from it (first-same-as-last).
    fn carry_end_rate(&mut self) {
        let n = self.dim;
        let s = self.stages();
        let (first, rest) = self.k.split_at_mut(n);
        copy_floats(first, &rest[(s - 1) * n..s * n]);
    }
}

impl Stepper for RkStepper {
    fn name(&self) -> &str {
        self.tableau.name
    }

    fn start(&mut self, rhs: &mut dyn OdeRhs, t: f64, y: &[f64]) -> Result<(), StepFailure> {
        let n = y.len();
        if n != self.dim {
            // Resized in place: a rewound stepper keeps its buffers for runs
            // of another dimension (with and without sensitivities).
            self.dim = n;
            let k = self.tableau.rate_blocks() * n;
            for (buffer, len) in [
                (&mut self.y_prev, n),
                (&mut self.y, n),
                (&mut self.k, k),
                (&mut self.stage, n),
                (&mut self.y_new, n),
                (&mut self.dense, DENSE_WIDTH * n),
            ] {
                buffer.clear();
                buffer.resize(len, 0.0);
            }
        }
        let stage_len = if self.keep_stages {
            (self.stages() + 1) * n
        } else {
            n
        };
        self.stage.resize(stage_len, 0.0);
        copy_floats(&mut self.y, y);
        copy_floats(&mut self.y_prev, y);
        self.t = t;
        self.t_prev = t;
        self.dense_ready = 0;
        self.extra_stages_ready = 0;
        let (first, _) = self.k.split_at_mut(n);
        rhs.eval(t, y, first);
        self.counters.rhs_evaluations += 1;
        if !first.iter().all(|v| v.is_finite()) {
            return Err(StepFailure::NonFinite { time: t });
        }
        // The end-rate block doubles as the derivative at the start for a
        // zero-length "last step", so dense output is defined right away.
        let s = self.stages();
        let (first, rest) = self.k.split_at_mut(n);
        copy_floats(&mut rest[(s - 1) * n..s * n], first);
        if self.hold.restarted(self.h_next) {
            self.measure_stability(rhs);
        }
        Ok(())
    }

    fn step(&mut self, rhs: &mut dyn OdeRhs, t_limit: f64) -> Result<(), StepFailure> {
        if self.t != self.t_prev {
            self.carry_end_rate();
        }
        let remaining = t_limit - self.t;
        let min_step = self.min_step(t_limit);
        match self.control {
            StepControl::Fixed { dt } => {
                let h = dt.min(remaining);
                if h < min_step && h < remaining {
                    return Err(StepFailure::Underflow {
                        time: self.t,
                        step: h,
                        min_step,
                    });
                }
                self.attempt(rhs, h);
                if !self.y_new.iter().all(|v| v.is_finite()) {
                    return Err(StepFailure::NonFinite { time: self.t + h });
                }
                let landing = h >= remaining;
                self.accept(h);
                if landing {
                    self.t = t_limit;
                }
                Ok(())
            }
            StepControl::Adaptive {
                rtol,
                atol,
                max_step,
                initial_step,
            } => {
                if self.h_next <= 0.0 {
                    // A run: the start-of-run rule. A segment after a reset
                    // keeps the proposal carried over (see `RkStepper`).
                    self.h_next = match initial_step {
                        Some(h) => h,
                        None => self.initial_step(rhs, rtol, atol, remaining),
                    };
                    self.growth_cap.after_guess();
                }
                let controlled = rhs.controlled_dim().min(self.dim);
                let closed = rhs.closed_dim().min(controlled);
                let apart = (rhs.controlled_apart(), rhs.controlled_weight());
                let mut rejected_last = false;
                loop {
                    let (proposal, held_from_beyond) = self.hold.hold(self.h_next.min(max_step));
                    let landing = proposal >= remaining;
                    let h = if landing { remaining } else { proposal };
                    if h < min_step && !landing {
                        return Err(StepFailure::Underflow {
                            time: self.t,
                            step: h,
                            min_step,
                        });
                    }
                    self.attempt(rhs, h);
                    let err = self.error_norm(h, (rtol, atol), (closed, controlled), apart);
                    let finite = err.is_finite() && self.y_new.iter().all(|v| v.is_finite());
                    if finite && err <= 1.0 {
                        let cap = self.growth_cap.take();
                        let mut factor = if err == 0.0 {
                            cap
                        } else {
                            step_factor(err, self.tableau.order, cap)
                        };
                        if rejected_last {
                            factor = factor.min(1.0);
                        }
                        if let Some(bound) = self.stiffness_bound {
                            // A step held from beyond the boundary is one
                            // beyond, whatever the stages' quotient says.
                            let h_lambda = if held_from_beyond {
                                f64::INFINITY
                            } else {
                                self.h_lambda
                            };
                            if self.stiffness.accepted(h_lambda, bound) {
                                self.counters.stiff_steps += 1;
                            }
                        }
                        // A step shortened to land on the limit says little
                        // about the step size the solution allows.
                        if !landing {
                            self.h_next = h * factor;
                        } else {
                            self.h_next = self.h_next.max(h * factor);
                        }
                        self.accept(h);
                        if landing {
                            self.t = t_limit;
                        }
                        if self.stiffness_bound.is_some() && self.hold.accepted() {
                            self.measure_stability(rhs);
                        }
                        return Ok(());
                    }
                    self.counters.rejected_steps += 1;
                    rejected_last = true;
                    self.h_next = if finite {
                        h * step_factor(err, self.tableau.order, 1.0)
                    } else {
                        h * MIN_FACTOR
                    };
                    if finite
                        && self.stiffness_bound.is_some()
                        && self.hold.measure_after_rejection(h)
                    {
                        self.measure_stability(rhs);
                    }
                    if self.h_next < min_step {
                        if !finite {
                            return Err(StepFailure::NonFinite { time: self.t });
                        }
                        return Err(StepFailure::Underflow {
                            time: self.t,
                            step: self.h_next,
                            min_step,
                        });
                    }
                }
            }
        }
    }

    fn truncate(&mut self, rhs: &mut dyn OdeRhs, t_new: f64) -> Result<(), StepFailure> {
        std::mem::swap(&mut self.y_prev, &mut self.y);
        self.t = self.t_prev;
        let h = t_new - self.t;
        self.attempt(rhs, h);
        if !self.y_new.iter().all(|v| v.is_finite()) {
            return Err(StepFailure::NonFinite { time: t_new });
        }
        self.accept(h);
        self.t = t_new;
        Ok(())
    }

    fn time(&self) -> f64 {
        self.t
    }

    fn state(&self) -> &[f64] {
        &self.y
    }

    fn step_size(&self) -> f64 {
        self.h_taken
    }

    fn previous_time(&self) -> f64 {
        self.t_prev
    }

    fn previous_state(&self) -> &[f64] {
        &self.y_prev
    }

    fn interpolate(&mut self, rhs: &mut dyn OdeRhs, t: f64, out: &mut [f64]) {
        self.dense_output(rhs, t, out);
    }

    fn interpolate_entries(
        &mut self,
        rhs: &mut dyn OdeRhs,
        t: f64,
        entries: &[usize],
        out: &mut [f64],
    ) {
        let h = self.t - self.t_prev;
        if h == 0.0 {
            for &i in entries {
                out[i] = self.y[i];
            }
            return;
        }
        // A few entries: their coefficients formed on the spot, not the
        // whole state's; but where they fill at least half of the leading
        // entries up to the last of them (a one-state system), those are
        // formed once for the step, as the whole state's are, since the
        // location asks for them again and again.
        let reach = entries.iter().max().map_or(0, |&i| i + 1);
        self.prepare_extra_stages(rhs, reach);
        if self.dense_ready < reach && 2 * entries.len() >= reach {
            self.prepare_dense(reach);
        }
        let theta = (t - self.t_prev) / h;
        for &i in entries {
            out[i] = if i < self.dense_ready {
                self.dense_at(&self.dense[DENSE_WIDTH * i..DENSE_WIDTH * (i + 1)], theta)
            } else {
                self.dense_at(&self.dense_coefficients(i), theta)
            };
        }
    }
    fn counters(&self) -> StepCounters {
        self.counters
    }
    fn rewind(&mut self) -> bool {
        self.t_prev = 0.0;
        self.t = 0.0;
        self.h_next = 0.0;
        self.h_taken = 0.0;
        self.dense_ready = 0;
        self.extra_stages_ready = 0;
        self.counters = StepCounters::default();
        self.stiffness = StiffnessTest::default();
        self.hold.forget();
        true
    }

    fn step_rates(&self) -> Option<(&[f64], &[f64])> {
        // After a step, the first stage block holds the rate at its start
        // and the end-rate block the rate at its end (first-same-as-last).
        let (n, s) = (self.dim, self.stages());
        (self.t != self.t_prev).then(|| (&self.k[..n], &self.k[s * n..(s + 1) * n]))
    }

    fn tableau(&self) -> Option<&'static ButcherTableau> {
        Some(self.tableau)
    }

    /// The stage states of the last accepted step, `dim` floats each
    /// (stage 0 its start), when they are kept
    /// ([`Stepper::set_stages_to_rounding`]).
    fn stage_states(&self) -> Option<(&[f64], usize)> {
        let (n, s) = (self.dim, self.stages());
        (self.keep_stages && self.t != self.t_prev).then(|| (&self.stage[n..(s + 1) * n], n))
    }

    /// Keeps the stage states of every step (explicit stages are formed
    /// once whatever the accuracy asked; this only keeps them) for
    /// [`Stepper::stage_states`]. Set before [`Stepper::start`].
    fn set_stages_to_rounding(&mut self, on: bool) {
        self.keep_stages = on;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rstest::rstest;

    /// y' = y, y(0) = 1: exact solution e^t.
    struct Growth;
    impl OdeRhs for Growth {
        fn dim(&self) -> usize {
            1
        }
        fn eval(&mut self, _t: f64, y: &[f64], dydt: &mut [f64]) {
            dydt[0] = y[0];
        }
    }

    fn integrate(stepper: &mut dyn Stepper, t_end: f64) -> f64 {
        stepper.start(&mut Growth, 0.0, &[1.0]).unwrap();
        while stepper.time() < t_end {
            stepper.step(&mut Growth, t_end).unwrap();
        }
        stepper.state()[0]
    }

    use crate::stepper::test_flows::Flight;

    /// The first three step sizes of a run of `stepper` on [`Flight`] from
    /// `(1, 0)` towards `t = 1e6`, and the state after them.
    fn first_three_steps(stepper: &mut RkStepper) -> ([f64; 3], [f64; 2]) {
        stepper.start(&mut Flight, 0.0, &[1.0, 0.0]).unwrap();
        let mut h = [0.0; 3];
        for h in &mut h {
            stepper.step(&mut Flight, 1e6).unwrap();
            *h = stepper.step_size();
        }
        (h, [stepper.state()[0], stepper.state()[1]])
    }

    /// The step after a run's first grows past the usual cap when the first
    /// step's error allows it (the starting rule is cautious), up to
    /// [`FIRST_MAX_FACTOR`]; the next one by [`MAX_FACTOR`] at most; and a
    /// rewound stepper takes the same steps again (the reference: its own
    /// first run, to the bit). The state after the steps is the closed
    /// form `(1 - 9.81 t^2 / 2, -9.81 t)`. DOPRI5 only: DOP853's first
    /// error estimate here (its fifth-order estimate corrected by the
    /// third-order one) allows a factor of 5.8, within the usual cap.
    #[test]
    fn the_step_after_the_first_grows_past_the_usual_cap() {
        let mut stepper = RkStepper::dopri5(1e-10, 1e-10);
        let (h, y) = first_three_steps(&mut stepper);
        assert!(h[1] > MAX_FACTOR * h[0], "steps {h:?}");
        assert!(h[1] <= FIRST_MAX_FACTOR * h[0], "steps {h:?}");
        assert!(h[2] <= MAX_FACTOR * h[1], "steps {h:?}");
        let t = stepper.time();
        let want = [1.0 - 0.5 * 9.81 * t * t, -9.81 * t];
        for (got, want) in y.iter().zip(want) {
            assert!(
                (got - want).abs() <= 1e-10 * (1.0 + want.abs()),
                "{y:?} at {t}"
            );
        }
        assert!(stepper.rewind());
        let (again, _) = first_three_steps(&mut stepper);
        assert_eq!(again.map(f64::to_bits), h.map(f64::to_bits));
    }

    #[rstest]
    fn the_step_factor_is_the_clamped_root_to_the_bit(
        #[values(1, 2, 3, 4, 5, 8)] q: u32,
        #[values(MAX_FACTOR, 1.0)] max: f64,
    ) {
        // Reference: the factor as it was computed before the clamped
        // case skipped the root, over error norms from 1e-300 to 1e4
        // (geometric, 1 % apart) and around the clamping bound.
        let previous = |err: f64| (SAFETY * err.powf(-1.0 / f64::from(q))).clamp(MIN_FACTOR, max);
        let bound = (SAFETY / max).powi(q as i32);
        let mut errs: Vec<f64> = (0..)
            .map(|i| 1e-300 * 1.01f64.powi(i))
            .take_while(|&e| e < 1e4)
            .collect();
        for scale in [0.4, 0.5, 0.5000001, 0.9, 1.0, 1.1] {
            errs.push(scale * bound);
        }
        for err in errs {
            assert_eq!(
                step_factor(err, q, max).to_bits(),
                previous(err).to_bits(),
                "err {err:e}"
            );
        }
    }

    #[test]
    fn rk4_converges_at_fourth_order() {
        let errors: Vec<f64> = [0.1, 0.05, 0.025]
            .iter()
            .map(|&dt| (integrate(&mut RkStepper::rk4(dt), 1.0) - 1f64.exp()).abs())
            .collect();
        for pair in errors.windows(2) {
            let order = (pair[0] / pair[1]).log2();
            assert!((3.8..4.2).contains(&order), "order {order}");
        }
    }

    #[rstest]
    fn adaptive_methods_meet_their_tolerance(
        #[values(1e-6, 1e-10)] tol: f64,
        #[values(RkStepper::dopri5, RkStepper::dop853)] method: fn(f64, f64) -> RkStepper,
    ) {
        // Reference: e^1.
        let err = (integrate(&mut method(tol, tol), 1.0) - 1f64.exp()).abs();
        assert!(err < 20.0 * tol * 1f64.exp(), "error {err}");
    }

    /// y'' = -y from (1, 0) over ten periods: (cos t, -sin t).
    struct Oscillator;
    impl OdeRhs for Oscillator {
        fn dim(&self) -> usize {
            2
        }
        fn eval(&mut self, _t: f64, y: &[f64], dydt: &mut [f64]) {
            dydt[0] = y[1];
            dydt[1] = -y[0];
        }
    }

    #[test]
    fn dop853_takes_fewer_longer_steps_at_tight_tolerances() {
        // Reference: cos and sin at t = 20 pi. DOP853's purpose: at
        // 1e-11 it needs fewer rate evaluations than DOPRI5 for the same
        // accuracy, and its work grows as tol^(-1/8), not tol^(-1/5).
        let t_end = 20.0 * std::f64::consts::PI;
        let run = |mut stepper: RkStepper, tol: f64| {
            stepper.start(&mut Oscillator, 0.0, &[1.0, 0.0]).unwrap();
            while stepper.time() < t_end {
                stepper.step(&mut Oscillator, t_end).unwrap();
            }
            let y = stepper.state();
            let err = (y[0] - t_end.cos()).abs().max((y[1] + t_end.sin()).abs());
            assert!(err < 100.0 * tol * t_end, "tolerance {tol}: error {err}");
            stepper.counters().rhs_evaluations as f64
        };
        let (dop853, dopri5) = (
            run(RkStepper::dop853(1e-11, 1e-11), 1e-11),
            run(RkStepper::dopri5(1e-11, 1e-11), 1e-11),
        );
        assert!(dop853 < 0.6 * dopri5, "{dop853} vs {dopri5} evaluations");
        let growth = dop853 / run(RkStepper::dop853(1e-7, 1e-7), 1e-7);
        // 10^(4/8) = 3.2 for an eighth-order method; 10^(4/5) = 6.3 for a
        // fifth-order one.
        assert!((2.2..4.5).contains(&growth), "work ratio {growth}");
    }

    #[rstest]
    #[case(RkStepper::rk4(0.01), 1e-9)]
    #[case(RkStepper::dopri5(1e-12, 1e-12), 1e-11)]
    #[case(RkStepper::dop853(1e-12, 1e-12), 1e-11)]
    fn dense_output_follows_the_solution(#[case] mut stepper: RkStepper, #[case] tol: f64) {
        stepper.start(&mut Growth, 0.0, &[1.0]).unwrap();
        stepper.step(&mut Growth, 1.0).unwrap();
        let (a, b) = (stepper.previous_time(), stepper.time());
        let mut out = [0.0];
        for frac in [0.1, 0.37, 0.5, 0.9] {
            let t = a + frac * (b - a);
            stepper.dense_output(&mut Growth, t, &mut out);
            assert!((out[0] - t.exp()).abs() < tol * t.exp(), "t={t}");
        }
    }

    /// `x' = -x` with its sensitivity to `x0` carried after it,
    /// `s' = -s`; says its leading component is closed when `closed` is set,
    /// and counts which evaluation the stepper asked for.
    struct DecayWithSensitivity {
        closed: bool,
        full_evals: usize,
        closed_evals: usize,
    }
    impl DecayWithSensitivity {
        fn new(closed: bool) -> Self {
            Self {
                closed,
                full_evals: 0,
                closed_evals: 0,
            }
        }
    }
    impl OdeRhs for DecayWithSensitivity {
        fn dim(&self) -> usize {
            2
        }
        fn closed_dim(&self) -> usize {
            if self.closed {
                1
            } else {
                2
            }
        }
        fn eval(&mut self, _t: f64, y: &[f64], dydt: &mut [f64]) {
            self.full_evals += 1;
            dydt[0] = -y[0];
            dydt[1] = -y[1];
        }
        fn eval_closed(&mut self, _t: f64, y: &[f64], dydt: &mut [f64]) {
            assert_eq!((y.len(), dydt.len()), (1, 1), "only the closed block");
            self.closed_evals += 1;
            dydt[0] = -y[0];
        }
    }

    #[test]
    fn interpolating_the_closed_block_evaluates_only_it() {
        // Reference: the same step through a right-hand side without a
        // closed block, whose extra stages cover both components; the
        // state's dense output must be the same to the bit, and the
        // sensitivity's too once it is asked for.
        let run = |rhs: &mut DecayWithSensitivity| {
            let mut stepper = RkStepper::dop853(1e-10, 1e-10);
            stepper.start(rhs, 0.0, &[1.0, 1.0]).unwrap();
            stepper.step(rhs, 1.0).unwrap();
            let t = stepper.previous_time() + 0.37 * stepper.step_size();
            let evals_before = rhs.full_evals;
            let mut state = [0.0];
            stepper.interpolate(rhs, t, &mut state);
            let state_evals = rhs.full_evals - evals_before;
            let mut both = [0.0; 2];
            stepper.interpolate(rhs, t, &mut both);
            (state[0], both, state_evals)
        };
        let mut closed = DecayWithSensitivity::new(true);
        let mut whole = DecayWithSensitivity::new(false);
        let (state, both, full_evals_for_state) = run(&mut closed);
        let (state_ref, both_ref, _) = run(&mut whole);
        assert_eq!(state.to_bits(), state_ref.to_bits());
        assert_eq!(both.map(f64::to_bits), both_ref.map(f64::to_bits));
        assert_eq!(both[0].to_bits(), state.to_bits());
        assert_eq!(full_evals_for_state, 0);
        assert_eq!(closed.closed_evals, 3, "DOP853's three extra stages");
        assert_eq!(whole.closed_evals, 0);
    }

    #[rstest]
    #[case::dopri5(&DOPRI5, 5.0, 0.1)]
    #[case::dop853(&DOP853, 8.0, 0.4)]
    fn dense_output_error_shrinks_at_its_order(
        #[case] method: &'static ButcherTableau,
        #[case] local_order: f64,
        #[case] dt: f64,
    ) {
        // Reference: e^t inside one fixed step of y' = y from 1. The
        // continuous extension of order q errs by O(h^(q+1)) inside a step
        // (DOPRI5's is of order 4, DOP853's of order 7): halving the step
        // divides the error by about 2^(q+1).
        let error = |dt: f64| {
            let mut stepper = RkStepper::new(method, StepControl::Fixed { dt }).unwrap();
            stepper.start(&mut Growth, 0.0, &[1.0]).unwrap();
            stepper.step(&mut Growth, 1.0).unwrap();
            let t = 0.37 * dt;
            let mut out = [0.0];
            stepper.dense_output(&mut Growth, t, &mut out);
            (out[0] - t.exp()).abs()
        };
        let order = (error(dt) / error(dt / 2.0)).log2();
        assert!(
            (local_order - 0.4..local_order + 0.4).contains(&order),
            "{}: order {order}",
            method.name
        );
    }

    /// DOPRI5's continuous extension evaluated without DOP853's zero terms
    /// is that full form (the code before, the reference) to the bit: over
    /// coefficients of both signs and many scales, zero among them, and
    /// fractions inside the step and beyond both of its ends.
    #[test]
    fn dopri5_dense_output_is_the_full_form_to_the_bit() {
        let stepper = RkStepper::dopri5(1e-6, 1e-6);
        let mut state = 7_u64;
        let mut uniform = || {
            state = state
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            (state >> 11) as f64 / (1_u64 << 53) as f64
        };
        for case in 0..20_000 {
            let mut r = [0.0; DENSE_WIDTH];
            for (i, c) in r[..5].iter_mut().enumerate() {
                let scale = 10f64.powi((uniform() * 24.0) as i32 - 12);
                *c = if (case + i) % 17 == 0 {
                    0.0
                } else {
                    (2.0 * uniform() - 1.0) * scale
                };
            }
            let theta = 2.0 * uniform() - 0.5;
            let theta1 = 1.0 - theta;
            let tail = r[4] + theta * (r[5] + theta1 * (r[6] + theta * r[7]));
            let full = r[0] + theta * (r[1] + theta1 * (r[2] + theta * (r[3] + theta1 * tail)));
            assert_eq!(
                stepper.dense_at(&r, theta).to_bits(),
                full.to_bits(),
                "r = {r:?}, theta = {theta}"
            );
        }
    }

    #[test]
    fn truncate_replaces_the_last_step() {
        let mut s = RkStepper::dopri5(1e-12, 1e-12);
        s.start(&mut Growth, 0.0, &[1.0]).unwrap();
        s.step(&mut Growth, 1.0).unwrap();
        let mid = 0.5 * s.time();
        s.truncate(&mut Growth, mid).unwrap();
        assert_eq!(s.time(), mid);
        assert!((s.state()[0] - mid.exp()).abs() < 1e-12);
    }

    /// The explicit midpoint method, second order, built by hand as a user
    /// would: no error estimate, Hermite dense output.
    static MIDPOINT: ButcherTableau = ButcherTableau {
        name: "midpoint",
        a: &[&[], &[0.5]],
        b: &[0.0, 1.0],
        c: &[0.0, 0.5],
        order: 2,
        error: None,
        dense: DenseOutput::Hermite,
    };

    #[test]
    fn a_hand_built_method_runs_at_its_order_with_fixed_steps() {
        // Reference: e^1, and the method's second order (error ratio 4 when
        // the step halves).
        let run = |dt: f64| {
            let mut stepper = RkStepper::new(&MIDPOINT, StepControl::Fixed { dt }).unwrap();
            (integrate(&mut stepper, 1.0) - 1f64.exp()).abs()
        };
        let order = (run(0.01) / run(0.005)).log2();
        assert!((1.9..2.1).contains(&order), "order {order}");
    }

    /// Bogacki-Shampine 3(2), built by hand with its error weights
    /// `b - b_hat` over the three stages and the end rate.
    static BOGACKI_SHAMPINE: ButcherTableau = ButcherTableau {
        name: "bs3",
        a: &[&[], &[0.5], &[0.0, 0.75]],
        b: &[2.0 / 9.0, 1.0 / 3.0, 4.0 / 9.0],
        c: &[0.0, 0.5, 0.75],
        order: 3,
        error: Some(ErrorEstimate::Embedded(&[
            2.0 / 9.0 - 7.0 / 24.0,
            1.0 / 3.0 - 1.0 / 4.0,
            4.0 / 9.0 - 1.0 / 3.0,
            -1.0 / 8.0,
        ])),
        dense: DenseOutput::Hermite,
    };

    #[test]
    fn a_hand_built_adaptive_method_meets_its_tolerance_at_its_order() {
        // Reference: e^1, and the third order: a thousandth of the
        // tolerance takes about 1000^(1/3) = 10 times the work. (Both hold
        // with the controller's exponent of a fifth-order pair too, which
        // every adaptive method had before; the exponent is now -1/order,
        // the same number for DOPRI5, and this checks it breaks nothing.)
        let run = |tol: f64| {
            let control = StepControl::Adaptive {
                rtol: tol,
                atol: tol,
                max_step: f64::INFINITY,
                initial_step: None,
            };
            let mut stepper = RkStepper::new(&BOGACKI_SHAMPINE, control).unwrap();
            let error = (integrate(&mut stepper, 1.0) - 1f64.exp()).abs();
            assert!(
                error < 20.0 * tol * 1f64.exp(),
                "tolerance {tol}: error {error}"
            );
            stepper.counters().rhs_evaluations
        };
        let ratio = run(1e-10) as f64 / run(1e-7) as f64;
        assert!((7.0..14.0).contains(&ratio), "work ratio {ratio}");
    }

    #[test]
    fn adaptive_control_of_a_method_without_error_weights_is_refused() {
        let control = StepControl::Adaptive {
            rtol: 1e-8,
            atol: 1e-8,
            max_step: f64::INFINITY,
            initial_step: None,
        };
        let err = RkStepper::new(&MIDPOINT, control).unwrap_err();
        assert!(err.to_string().contains("no error estimate"), "{err}");
    }
}
