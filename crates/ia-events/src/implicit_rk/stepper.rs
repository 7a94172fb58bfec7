//! [`ImplicitStepper`]: an ESDIRK method ([`EsdirkTableau`]) with error
//! control, simplified Newton on each stage with a reused factorisation of
//! `I - h gamma J`, exact stage solves of the sensitivities carried after
//! the state, and cubic Hermite dense output.

use super::linear::IterationMatrix;
use super::tableau::EsdirkTableau;
use crate::explicit_rk::{min_step, step_factor, GrowthCap};
use crate::stepper::{controlled_norm, starting_step, OdeRhs, StepCounters, StepFailure, Stepper};

/// Stage convergence: Newton stops when its estimated remaining error,
/// `theta / (1 - theta) ||dY||`, is below this fraction of the tolerance
/// (`||.||` the RMS norm scaled by `atol + rtol |Y|`; `theta` the
/// contraction of the last two increments, so at least two iterations: a
/// small first increment alone may come from a poor matrix, not from
/// convergence).
pub const NEWTON_KAPPA: f64 = 1e-3;
/// The most Newton iterations of one stage before the stage counts as not
/// converging.
pub const NEWTON_MAX_ITERATIONS: usize = 10;
/// The most further Newton iterations polishing a converged stage to
/// rounding when sensitivities are carried (see [`ImplicitStepper`]).
const NEWTON_POLISH_ITERATIONS: usize = 6;
/// A Newton increment within this many roundings (`f64::EPSILON`) of the
/// iterate, in the tolerance-scaled norm, counts as converged whatever its
/// contraction: rounding noise, not an iteration that diverges.
const NEWTON_ROUNDING: f64 = 16.0 * f64::EPSILON;
/// A contraction rate above this counts as divergence.
const THETA_DIVERGING: f64 = 0.9;
/// A contraction rate above this marks the Jacobian for a refresh at the
/// next step.
const THETA_SLOW: f64 = 0.3;
/// The iteration matrix is refactorised with the same Jacobian when
/// `h gamma` has changed by more than this fraction since it was
/// factorised.
const REFACTOR_CHANGE: f64 = 0.2;
/// Step-size factor after a stage failed to converge.
const NEWTON_SHRINK: f64 = 0.25;
const MAX_FACTOR: f64 = 5.0;

/// Why one step attempt failed.
enum Attempt {
    Done,
    /// A stage did not converge (`true`: a value became non-finite).
    NewtonFailed(bool),
}

/// A stiffly accurate ESDIRK stepper (TR-BDF2, Kvaerno 3(2) and 5(4)).
///
/// Each implicit stage `Y_i = W_i + h gamma f(Y_i)` is solved by simplified
/// Newton with the iteration matrix `I - h gamma J` factorised once (dense
/// LU, or sparse LU for a large flow that declares a sparse Jacobian:
/// [`IterationMatrix`]) and reused across stages and steps: refactorised when `h gamma`
/// changes by more than a fifth, the Jacobian `J` re-evaluated at a step's
/// start after a segment starts, after convergence slowed
/// (contraction above 0.3) or when a stage failed to converge (the step is
/// then retried, with a quarter of the step if the Jacobian was fresh); a
/// Jacobian declared constant ([`OdeRhs::jacobian_is_constant`]) is
/// evaluated once a segment and the matrix factorised at every new `h
/// gamma` (Newton's own iteration: one increment solves an affine flow's
/// stage). A stage is converged when `theta/(1-theta) ||dY|| <= 1e-3` (at least two
/// iterations, `theta` the contraction of the last two increments) in the
/// tolerance-scaled norm ([`NEWTON_KAPPA`]): a thousandth of the tolerance.
///
/// A declared-constant Jacobian that the right-hand side evaluates itself
/// ([`OdeRhs::jacobian`], not differences) makes the flow affine in the
/// state, `f(t, y) = J y + b(t)`, and the matrix is factorised at the
/// step's own `h gamma`: the stage equation is then linear with that exact
/// matrix, and one Newton increment from the predictor solves it (to the
/// rounding of one LU solve; the residual after it is zero in exact
/// arithmetic). Once one stage of a segment has shown it (its second
/// increment within rounding: the declaration is the implementer's and is
/// checked so), such stages take that one increment: a second iteration
/// only re-derives the rounding (measured on the drug model of
/// issue 28: the same steps, errors against the reference equal to three
/// digits, 0.70x the primal's instructions).
///
/// The error norm is the RMS norm scaled by `atol + rtol max(|y_0|, |y_1|)`
/// over the closed block; controlled components after it (forward
/// sensitivities, derivative probes: [`OdeRhs::controlled_dim`]) are
/// normed column by column, each block of the closed block's length apart,
/// and the step's norm is the largest of them and the state's (CVODES's
/// sensitivity norm; [`OdeRhs::controlled_apart`] whatever the right-hand
/// side says: [`ImplicitStepper::COLUMNS_APART`]): every column's error then follows the tolerance, however
/// many columns are carried, rather than their root mean square (one
/// column in ten could be `sqrt(10)` times the tolerance). The adjoint's
/// taped run, steered by derivative probes, carries two of them with
/// these methods, so that its steps follow the largest column's error as
/// the forward pass's do (`ia_adjoint`'s probe module).
///
/// When the right-hand side carries components after its closed block
/// ([`OdeRhs::closed_dim`]; forward sensitivities), they must be blocks of
/// the closed block's length whose rates are `J(y) z + g(y)` (variational
/// equations). Their stages are then solved exactly (to rounding), not
/// iterated: at each converged state stage the Jacobian is evaluated
/// ([`OdeRhs::jacobian`]), `I - h gamma J(Y_i)` factorised and
/// `(I - h gamma J(Y_i)) K_i = G(Y_i, W_i)` solved once per block, which is
/// the derivative of the stage by the implicit function theorem (a
/// right-hand side that declares its Jacobian constant,
/// [`OdeRhs::jacobian_is_constant`], has it evaluated once per start, and
/// the Newton matrix `I - h gamma J`, factorised then at every new step
/// size, serves the sensitivities as well). For that
/// derivative to be the one of the stage actually taken, the state stages
/// are then polished past the convergence test, to rounding (the increments
/// stop shrinking or are within rounding; at most six more iterations of
/// the same factorised matrix). A run whose observer keeps the stages
/// ([`crate::Observer::wants_step_stages`]: the adjoint's tape) polishes
/// them so too, sensitivities carried or not, and offers them
/// ([`Stepper::stage_states`]): the adjoint transposes the steps at these
/// stages, so forward and adjoint on the same steps are transposes of each
/// other to rounding on nonlinear flows too.
///
/// Dense output is cubic Hermite through both ends of the step and their
/// rates (third order); events are then placed on it and the step redone to
/// end on them ([`Stepper::truncate`]).
#[derive(Clone, Debug)]
pub struct ImplicitStepper {
    tableau: &'static EsdirkTableau,
    rtol: f64,
    atol: f64,
    max_step: f64,
    dim: usize,
    closed: usize,
    t_prev: f64,
    t: f64,
    h_next: f64,
    /// Set by [`Stepper::start`]: the next step begins a run or a segment
    /// and takes the start-of-run rule ([`starting_step`]).
    segment_start: bool,
    h_taken: f64,
    /// The cap of the step-size factor after the next accepted step:
    /// [`FIRST_MAX_FACTOR`](crate::explicit_rk::FIRST_MAX_FACTOR) after the
    /// starting rule, then [`MAX_FACTOR`]
    /// (CVODE's `ETAMX1`, see the explicit stepper's). Here the starting
    /// rule is taken after every reset too, so each segment gets it. On the
    /// stiff problems of issue 28 (`probe_accuracy`, `1e-6` to `1e-10`) it
    /// took fewer steps on the Kelvin-Voigt ball with each method, most at
    /// loose tolerances (Kvaerno 5: 37 to 31 at `1e-6`, 166 to 163 at
    /// `1e-10`), a few fewer on the others with TR-BDF2, the same on the
    /// rest, with the errors against the references unchanged to their
    /// noise.
    growth_cap: GrowthCap,
    y_prev: Vec<f64>,
    y: Vec<f64>,
    y_new: Vec<f64>,
    /// Stage rates of the last step, `dim` each; the last block is the rate
    /// at the step's end (stiffly accurate: `Y_s = y_1`).
    k: Vec<f64>,
    w: Vec<f64>,
    z: Vec<f64>,
    f: Vec<f64>,
    dz: Vec<f64>,
    err: Vec<f64>,
    /// The state stages `Y_i` of the last attempt, `closed` floats each
    /// (stage 0 the step's start).
    stages: Vec<f64>,
    /// The last attempt's stages were polished to rounding (sensitivities
    /// carried, or `stages_to_rounding`).
    stages_polished: bool,
    /// Polish every stage to rounding, sensitivities carried or not
    /// ([`Stepper::set_stages_to_rounding`]).
    stages_to_rounding: bool,
    /// The Newton iteration's Jacobian and the LU of its iteration matrix.
    matrix: IterationMatrix,
    /// The Jacobian at the stage being solved and its iteration matrix, for
    /// the sensitivities carried after the state.
    sens: IterationMatrix,
    /// The right-hand side declared its Jacobian constant until the next
    /// start ([`OdeRhs::jacobian_is_constant`]): `matrix` then holds the
    /// segment's one Jacobian, factorised at every new `h gamma`, and
    /// serves the sensitivities too (`sens` unused).
    constant_jacobian: bool,
    /// The Jacobian in `matrix` is the right-hand side's own
    /// ([`OdeRhs::jacobian`] or its sparse form), not forward differences.
    jacobian_exact: bool,
    /// A stage of the current segment, solved with the declared-constant
    /// exact Jacobian, was met by a second Newton increment within
    /// rounding: the declaration holds, and stages take one increment.
    affine_seen: bool,
    /// `h gamma` of the factorised matrix (0: none).
    lu_hg: f64,
    /// A Jacobian of the current segment is in `jacobian`.
    jacobian_valid: bool,
    /// The Jacobian was evaluated during the current step attempt sequence.
    jacobian_fresh: bool,
    /// Convergence slowed: re-evaluate the Jacobian at the next step.
    jacobian_stale: bool,
    counters: StepCounters,
    stats: NewtonStats,
}

/// Work counters of the Newton iterations of an [`ImplicitStepper`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct NewtonStats {
    /// Jacobian evaluations.
    pub jacobians: usize,
    /// LU factorisations of the iteration matrix.
    pub factorisations: usize,
    /// Newton iterations.
    pub iterations: usize,
    /// Step attempts abandoned because a stage did not converge.
    pub failures: usize,
}

impl ImplicitStepper {
    /// Whether the error norm keeps the state and each column carried after
    /// it apart (the largest of their RMS norms)
    /// whatever the right-hand side says ([`OdeRhs::controlled_apart`]):
    /// true, CVODES's sensitivity norm (see [`ImplicitStepper`]). The one
    /// place this rule is stated: [`crate::SolverChoice::columns_apart`]
    /// answers it for a solver choice (the adjoint's derivative probes
    /// follow it).
    pub const COLUMNS_APART: bool = true;

    /// The method `tableau` with tolerances `rtol`, `atol` and the largest
    /// step `max_step`. The method is checked ([`EsdirkTableau::validate`]).
    pub fn new(
        tableau: &'static EsdirkTableau,
        rtol: f64,
        atol: f64,
        max_step: f64,
    ) -> Result<Self, ia_core::HybridError> {
        tableau
            .validate()
            .map_err(ia_core::HybridError::Unsupported)?;
        Ok(Self {
            tableau,
            rtol,
            atol,
            max_step,
            dim: 0,
            closed: 0,
            t_prev: 0.0,
            t: 0.0,
            h_next: 0.0,
            segment_start: true,
            h_taken: 0.0,
            growth_cap: GrowthCap::new(MAX_FACTOR),
            y_prev: Vec::new(),
            y: Vec::new(),
            y_new: Vec::new(),
            k: Vec::new(),
            w: Vec::new(),
            z: Vec::new(),
            f: Vec::new(),
            dz: Vec::new(),
            err: Vec::new(),
            stages: Vec::new(),
            stages_polished: false,
            stages_to_rounding: false,
            matrix: IterationMatrix::default(),
            sens: IterationMatrix::default(),
            constant_jacobian: false,
            jacobian_exact: false,
            affine_seen: false,
            lu_hg: 0.0,
            jacobian_valid: false,
            jacobian_fresh: false,
            jacobian_stale: false,
            counters: StepCounters::default(),
            stats: NewtonStats::default(),
        })
    }

    /// The method.
    pub fn method(&self) -> &'static EsdirkTableau {
        self.tableau
    }

    /// The Newton work done so far.
    pub fn newton_stats(&self) -> NewtonStats {
        self.stats
    }

    /// Evaluates the closed block's Jacobian at `(t, y)` into
    /// `self.matrix`, the Newton iteration's.
    fn evaluate_jacobian(&mut self, rhs: &mut dyn OdeRhs, t: f64, y: &[f64]) {
        self.jacobian_valid = true;
        self.jacobian_fresh = true;
        self.jacobian_stale = false;
        self.affine_seen = false;
        self.lu_hg = 0.0;
        let mut matrix = std::mem::take(&mut self.matrix);
        self.closed_jacobian(rhs, t, y, &mut matrix);
        self.matrix = matrix;
    }

    /// Evaluates the closed block's Jacobian at `(t, y)` into `matrix`: the
    /// right-hand side's own, or forward differences where it has none.
    fn closed_jacobian(
        &mut self,
        rhs: &mut dyn OdeRhs,
        t: f64,
        y: &[f64],
        matrix: &mut IterationMatrix,
    ) {
        let c = self.closed;
        self.stats.jacobians += 1;
        self.jacobian_exact = matrix.evaluate(rhs, t, y);
        if self.jacobian_exact {
            return;
        }
        let out = matrix.dense_jacobian_mut();
        // Forward differences of the closed block's rates (base rate in
        // `err`, the probe in `dz`, its rate in `f`: free at this point).
        rhs.eval_closed(t, &y[..c], &mut self.err[..c]);
        self.dz[..c].copy_from_slice(&y[..c]);
        for (j, &yj) in y[..c].iter().enumerate() {
            let delta = f64::EPSILON.sqrt() * yj.abs().max(self.atol / self.rtol).max(1e-8);
            self.dz[j] = yj + delta;
            rhs.eval_closed(t, &self.dz[..c], &mut self.f[..c]);
            let column = &mut out[j * c..(j + 1) * c];
            for (jr, (&f, &base)) in column.iter_mut().zip(self.f.iter().zip(&self.err)) {
                *jr = (f - base) / delta;
            }
            self.dz[j] = yj;
        }
        self.counters.rhs_evaluations += c + 1;
    }

    /// Factorises `I - hg J`; false when it is singular.
    fn factorise(&mut self, hg: f64) -> bool {
        self.stats.factorisations += 1;
        let ok = self.matrix.factor(hg);
        self.lu_hg = if ok { hg } else { 0.0 };
        ok
    }

    /// The tolerance-scaled RMS norm of `v` against the state `y`.
    fn scaled_norm(&self, v: &[f64], y: &[f64]) -> f64 {
        let sum: f64 = v
            .iter()
            .zip(y)
            .map(|(&v, &y)| {
                let r = v / (self.atol + self.rtol * y.abs());
                r * r
            })
            .sum();
        (sum / v.len().max(1) as f64).sqrt()
    }

    /// One attempt of a step of size `h` from `(t, y)` into `y_new`, the
    /// rates into `k` (block 0 must hold `F(t, y)`).
    fn attempt(&mut self, rhs: &mut dyn OdeRhs, h: f64) -> Attempt {
        // Small closed systems by their own copies of the stage arithmetic,
        // the sizes known to the compiler (its loops unrolled, no calls to
        // copy a few floats): the same operations in the same order, so the
        // same numbers.
        crate::sized!(implicit, (n, c) = (self.dim, self.closed) => {
            self.attempt_sized(rhs, h, n, c)
        })
    }

    /// [`ImplicitStepper::attempt`] for `dim = n` and `closed = c`.
    #[inline(always)]
    fn attempt_sized(&mut self, rhs: &mut dyn OdeRhs, h: f64, n: usize, c: usize) -> Attempt {
        let tab = self.tableau;
        let hg = h * tab.gamma;
        // A Jacobian declared constant is evaluated once a segment (a
        // stale one is the same matrix) and `I - h gamma J` factorised at
        // every new `h gamma`: the simplified Newton iteration is then
        // Newton's, exact in one iteration on an affine flow, and the
        // sensitivity stages and the error estimate use the same
        // factorisation.
        let constant = self.constant_jacobian;
        if !self.jacobian_valid || (self.jacobian_stale && !constant) {
            let (t, y) = (self.t, std::mem::take(&mut self.y));
            self.evaluate_jacobian(rhs, t, &y);
            self.y = y;
        }
        let refactor = self.lu_hg == 0.0
            || if constant {
                hg != self.lu_hg
            } else {
                (hg / self.lu_hg - 1.0).abs() > REFACTOR_CHANGE
            };
        if refactor && !self.factorise(hg) {
            return Attempt::NewtonFailed(false);
        }
        let s = tab.stages();
        self.stages[..c].copy_from_slice(&self.y[..c]);
        self.stages_polished = c < n || self.stages_to_rounding;
        for i in 1..s {
            let ti = self.t + tab.c[i] * h;
            // W_i = y + h sum_{j<i} a_ij K_j over every component.
            let w = &mut self.w[..n];
            w.copy_from_slice(&self.y[..n]);
            for (&a, kj) in tab.a[i].iter().zip(self.k.chunks_exact(n)) {
                if a != 0.0 {
                    for (w, &kj) in w.iter_mut().zip(kj) {
                        *w += h * a * kj;
                    }
                }
            }
            if let Some(failed) = self.newton(rhs, (i, ti, hg), n, c) {
                return Attempt::NewtonFailed(failed);
            }
            self.stages[i * c..(i + 1) * c].copy_from_slice(&self.z[..c]);
            // K_i = (Y_i - W_i) / (h gamma) of the state.
            let ki = &mut self.k[i * n..i * n + c];
            for ((k, &z), &w) in ki.iter_mut().zip(&self.z[..c]).zip(&self.w[..c]) {
                *k = (z - w) / hg;
            }
            if n > c {
                // The sensitivities: (I - h gamma J(Y_i)) K = G(Y_i, W_i),
                // exactly, with the Jacobian at the converged stage, in a
                // factorisation of their own: the state's Newton iterates
                // are those of a run without them, to the bit (the same
                // steps, as the adjoint transposes).
                // A Jacobian declared constant is the Newton matrix's,
                // factorised at this step's `h gamma` (see above): the
                // same matrix as at each stage, nothing formed again.
                if !constant {
                    let (z, mut sens) =
                        (std::mem::take(&mut self.z), std::mem::take(&mut self.sens));
                    self.closed_jacobian(rhs, ti, &z, &mut sens);
                    self.z = z;
                    self.sens = sens;
                    self.stats.factorisations += 1;
                    if !self.sens.factor(hg) {
                        return Attempt::NewtonFailed(false);
                    }
                }
                self.z[c..].copy_from_slice(&self.w[c..]);
                // The rates after the state (the state's are known).
                if !rhs.eval_after_closed(ti, &self.z, &mut self.f[c..]) {
                    rhs.eval(ti, &self.z, &mut self.f);
                }
                self.counters.rhs_evaluations += 1;
                let matrix = if constant {
                    &mut self.matrix
                } else {
                    &mut self.sens
                };
                matrix.solve_blocks(&mut self.f[c..]);
                self.k[i * n + c..(i + 1) * n].copy_from_slice(&self.f[c..]);
            }
        }
        // Stiffly accurate: y_1 = Y_s.
        let last = (s - 1) * n;
        for r in 0..n {
            self.y_new[r] = self.w[r] + hg * self.k[last + r];
        }
        self.y_new[..c].copy_from_slice(&self.z[..c]);
        Attempt::Done
    }

    /// Simplified Newton on stage `i` at time `ti` with `h gamma = hg` (its
    /// `W_i` in `self.w`; the factorised matrix may be of a nearby `hg`),
    /// the state block into `self.z`, for `dim = n` and `closed = c`;
    /// `None` when converged, else whether a non-finite value stopped it.
    #[inline(always)]
    fn newton(
        &mut self,
        rhs: &mut dyn OdeRhs,
        (i, ti, hg): (usize, f64, f64),
        n: usize,
        c: usize,
    ) -> Option<bool> {
        // Predictor: the previous stage's rate.
        let previous_rate = &self.k[(i - 1) * n..(i - 1) * n + c];
        for ((z, &w), &k) in self.z[..c].iter_mut().zip(&self.w[..c]).zip(previous_rate) {
            *z = w + hg * k;
        }
        // Carrying sensitivities (components after the closed block) or
        // asked to ([`Stepper::set_stages_to_rounding`]: the adjoint keeps
        // the stages), a stage converged to a thousandth of the tolerance is polished
        // further, to rounding: the sensitivities are those of the exactly
        // solved stages (implicit function theorem), and the adjoint's
        // stages, solved to rounding from the same start, are then the
        // same stages, so forward and adjoint are transposes to rounding
        // on nonlinear flows too.
        let polish = c < n || self.stages_to_rounding;
        // An affine flow with its exact Jacobian, factorised at this `h
        // gamma`: the stage equation is linear with that matrix, and the
        // first increment solves it (see [`ImplicitStepper`]). The
        // declaration is the implementer's; it is trusted only once a stage
        // of the segment has shown it (its second increment within
        // rounding), so that a flow declaring a constant Jacobian it does
        // not have has its stages iterated and checked, not taken unchecked.
        let affine = self.constant_jacobian && self.jacobian_exact && self.lu_hg == hg;
        let linear = affine && self.affine_seen;
        let mut converged = false;
        let mut previous = f64::INFINITY;
        for iteration in 0..NEWTON_MAX_ITERATIONS + NEWTON_POLISH_ITERATIONS {
            if iteration >= NEWTON_MAX_ITERATIONS && !converged {
                break;
            }
            self.stats.iterations += 1;
            rhs.eval_closed(ti, &self.z[..c], &mut self.f[..c]);
            self.counters.rhs_evaluations += 1;
            let (z, dz) = (&mut self.z[..c], &mut self.dz[..c]);
            for (((dz, &w), &f), &z) in dz.iter_mut().zip(&self.w[..c]).zip(&self.f[..c]).zip(&*z) {
                *dz = w + hg * f - z;
            }
            self.matrix.solve_sized(c, dz);
            for (z, &dz) in z.iter_mut().zip(&*dz) {
                *z += dz;
            }
            if linear {
                return (!self.z[..c].iter().all(|v| v.is_finite())).then_some(true);
            }
            let norm = self.scaled_norm(&self.dz[..c], &self.z[..c]);
            if !norm.is_finite() {
                return Some(true);
            }
            if norm == 0.0 {
                self.affine_seen |= affine && iteration == 1;
                return None;
            }
            // An increment within rounding of the iterate: the stage is as
            // converged as f64 can make it, and the contraction of two such
            // increments is rounding noise, not divergence (a stage whose
            // predictor is already exact, near a steady state).
            if iteration > 0
                && norm <= NEWTON_ROUNDING * self.scaled_norm(&self.z[..c], &self.z[..c])
            {
                self.affine_seen |= affine && iteration == 1;
                return None;
            }
            if iteration > 0 {
                let theta = norm / previous;
                if converged {
                    // Polishing: the stage stays converged; stop once the
                    // increments no longer shrink (rounding noise).
                    if theta >= THETA_DIVERGING {
                        return None;
                    }
                } else {
                    if theta > THETA_SLOW {
                        self.jacobian_stale = true;
                    }
                    if theta >= THETA_DIVERGING {
                        return Some(false);
                    }
                    if theta / (1.0 - theta) * norm <= NEWTON_KAPPA {
                        if !polish {
                            return None;
                        }
                        converged = true;
                    }
                }
            }
            previous = norm;
        }
        if converged {
            None
        } else {
            Some(false)
        }
    }

    /// The scaled norm of the filtered error estimate
    /// `(I - h gamma J)^{-1} h sum_j e_j K_j` over the `controlled` leading
    /// components, `sc_i = atol + rtol max(|y_0,i|, |y_1,i|)`: the largest
    /// of the RMS norms of the closed block and of each controlled column
    /// after it ([`controlled_norm`]) when `apart`, one RMS norm over them
    /// otherwise (see [`ImplicitStepper::COLUMNS_APART`]).
    fn error_norm(&mut self, h: f64, controlled: usize, apart: (bool, f64)) -> f64 {
        // Small systems sized for the compiler, as [`ImplicitStepper::attempt`].
        crate::sized!(implicit, n = self.dim => self.error_norm_sized(h, controlled, apart, n))
    }

    /// [`ImplicitStepper::error_norm`] for `dim = n`.
    #[inline(always)]
    fn error_norm_sized(&mut self, h: f64, controlled: usize, apart: (bool, f64), n: usize) -> f64 {
        self.err[..n].iter_mut().for_each(|e| *e = 0.0);
        for (j, &e) in self.tableau.error.iter().enumerate() {
            if e != 0.0 {
                for (acc, &kj) in self.err[..n].iter_mut().zip(&self.k[j * n..(j + 1) * n]) {
                    *acc += h * e * kj;
                }
            }
        }
        self.matrix.solve_blocks(&mut self.err[..n]);
        let norm = |range: std::ops::Range<usize>| {
            let count = range.len().max(1) as f64;
            let sum: f64 = range
                .map(|r| {
                    let sc = self.atol + self.rtol * self.y[r].abs().max(self.y_new[r].abs());
                    (self.err[r] / sc).powi(2)
                })
                .sum();
            (sum / count).sqrt()
        };
        controlled_norm(norm, self.closed.min(controlled), controlled, apart)
    }

    /// The start-of-run rule ([`starting_step`]) over the closed block
    /// (the state), from it and its rates at the start.
    fn initial_step(&mut self, rhs: &mut dyn OdeRhs, span: f64) -> f64 {
        let c = self.closed.max(1).min(self.dim);
        self.counters.rhs_evaluations += 1;
        starting_step(
            |t, y, dydt| rhs.eval_closed(t, y, dydt),
            (self.t, &self.y[..c], &self.k[..c]),
            (self.tableau.order, self.rtol, self.atol),
            c,
            span,
            (&mut self.z[..c], &mut self.f[..c]),
        )
    }

    fn accept(&mut self, h: f64) {
        self.h_taken = h;
        std::mem::swap(&mut self.y_prev, &mut self.y);
        std::mem::swap(&mut self.y, &mut self.y_new);
        self.t_prev = self.t;
        self.t += h;
    }

    /// One attempt at `h`, retried once with a fresh Jacobian when a stage
    /// did not converge with an old one; `Some(non_finite)` when it still
    /// failed.
    fn attempt_with_refresh(&mut self, rhs: &mut dyn OdeRhs, h: f64) -> Option<bool> {
        self.jacobian_fresh = false;
        loop {
            match self.attempt(rhs, h) {
                Attempt::Done => return None,
                Attempt::NewtonFailed(non_finite) => {
                    self.stats.failures += 1;
                    // A constant Jacobian evaluated again is the same: no
                    // retry with it.
                    if self.jacobian_fresh || non_finite || self.constant_jacobian {
                        self.jacobian_stale = true;
                        return Some(non_finite);
                    }
                    self.jacobian_stale = true;
                }
            }
        }
    }
}

impl Stepper for ImplicitStepper {
    fn name(&self) -> &str {
        self.tableau.name
    }

    fn start(&mut self, rhs: &mut dyn OdeRhs, t: f64, y: &[f64]) -> Result<(), StepFailure> {
        let n = y.len();
        let mut closed = rhs.closed_dim().clamp(1, n.max(1));
        if n % closed != 0 {
            closed = n;
        }
        if n != self.dim || closed != self.closed {
            self.dim = n;
            self.closed = closed;
            let s = self.tableau.stages();
            for (buffer, len) in [
                (&mut self.y_prev, n),
                (&mut self.y, n),
                (&mut self.y_new, n),
                (&mut self.k, s * n),
                (&mut self.w, n),
                (&mut self.z, n),
                (&mut self.f, n),
                (&mut self.dz, n),
                (&mut self.err, n),
                (&mut self.stages, s * closed),
            ] {
                buffer.clear();
                buffer.resize(len, 0.0);
            }
        }
        self.y.copy_from_slice(y);
        self.y_prev.copy_from_slice(y);
        self.t = t;
        self.t_prev = t;
        self.segment_start = true;
        // A new segment (a reset may have changed the mode): a new Jacobian,
        // of the mode's layout (dense or its declared sparsity).
        self.matrix.configure(rhs, closed);
        self.sens.configure(rhs, closed);
        self.constant_jacobian = rhs.jacobian_is_constant();
        self.jacobian_valid = false;
        self.lu_hg = 0.0;
        let (first, _) = self.k.split_at_mut(n);
        rhs.eval(t, y, first);
        self.counters.rhs_evaluations += 1;
        if !first.iter().all(|v| v.is_finite()) {
            return Err(StepFailure::NonFinite { time: t });
        }
        let s = self.tableau.stages();
        self.k.copy_within(0..n, (s - 1) * n);
        Ok(())
    }

    fn step(&mut self, rhs: &mut dyn OdeRhs, t_limit: f64) -> Result<(), StepFailure> {
        let (n, s) = (self.dim, self.tableau.stages());
        if self.t != self.t_prev {
            // First same as last: the end rate starts the next step.
            self.k.copy_within((s - 1) * n..s * n, 0);
        }
        let remaining = t_limit - self.t;
        let min_step = min_step(self.t, t_limit);
        if self.h_next <= 0.0 || self.segment_start {
            // A run, or a segment after a reset: the start-of-run rule, never
            // above the proposal carried over, and no shorter than a step
            // that can be taken at all.
            let start = self.initial_step(rhs, remaining);
            let start = if self.h_next > 0.0 {
                self.h_next.min(start)
            } else {
                start
            };
            self.h_next = start.max(16.0 * min_step);
            self.segment_start = false;
            self.growth_cap.after_guess();
        }
        let controlled = rhs.controlled_dim().min(n);
        let apart = (
            Self::COLUMNS_APART || rhs.controlled_apart(),
            rhs.controlled_weight(),
        );
        let order = self.tableau.error_order();
        let mut rejected_last = false;
        loop {
            let proposal = self.h_next.min(self.max_step);
            let landing = proposal >= remaining;
            let h = if landing { remaining } else { proposal };
            if h < min_step && !landing {
                return Err(StepFailure::Underflow {
                    time: self.t,
                    step: h,
                    min_step,
                });
            }
            if let Some(non_finite) = self.attempt_with_refresh(rhs, h) {
                self.counters.rejected_steps += 1;
                rejected_last = true;
                self.h_next = h * NEWTON_SHRINK;
                if self.h_next < min_step {
                    if non_finite {
                        return Err(StepFailure::NonFinite { time: self.t });
                    }
                    return Err(StepFailure::NewtonFailure {
                        time: self.t,
                        step: h,
                    });
                }
                continue;
            }
            let err = self.error_norm(h, controlled, apart);
            let finite = err.is_finite() && self.y_new.iter().all(|v| v.is_finite());
            if finite && err <= 1.0 {
                let cap = self.growth_cap.take();
                let mut factor = if err == 0.0 {
                    cap
                } else {
                    step_factor(err, order, cap)
                };
                if rejected_last {
                    factor = factor.min(1.0);
                }
                if !landing {
                    self.h_next = h * factor;
                } else {
                    self.h_next = self.h_next.max(h * factor);
                }
                self.accept(h);
                if landing {
                    self.t = t_limit;
                }
                return Ok(());
            }
            self.counters.rejected_steps += 1;
            rejected_last = true;
            self.h_next = if finite {
                h * step_factor(err, order, 1.0)
            } else {
                h * NEWTON_SHRINK
            };
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

    fn truncate(&mut self, rhs: &mut dyn OdeRhs, t_new: f64) -> Result<(), StepFailure> {
        std::mem::swap(&mut self.y_prev, &mut self.y);
        self.t = self.t_prev;
        let h = t_new - self.t;
        if let Some(non_finite) = self.attempt_with_refresh(rhs, h) {
            // Left at the step's start, as before it was taken.
            self.t_prev = self.t;
            self.y_prev.copy_from_slice(&self.y);
            return Err(if non_finite {
                StepFailure::NonFinite { time: self.t }
            } else {
                StepFailure::NewtonFailure {
                    time: self.t,
                    step: h,
                }
            });
        }
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

    fn previous_time(&self) -> f64 {
        self.t_prev
    }

    fn step_size(&self) -> f64 {
        self.h_taken
    }

    fn previous_state(&self) -> &[f64] {
        &self.y_prev
    }

    /// The cubic Hermite dense output is of third order, below the step's.
    fn refine_events_on_steps(&self) -> bool {
        true
    }

    fn interpolate(&mut self, _rhs: &mut dyn OdeRhs, t: f64, out: &mut [f64]) {
        let (n, s) = (self.dim, self.tableau.stages());
        let h = self.t - self.t_prev;
        if h == 0.0 {
            let m = out.len();
            out.copy_from_slice(&self.y[..m]);
            return;
        }
        let theta = (t - self.t_prev) / h;
        let theta1 = 1.0 - theta;
        // Cubic Hermite through both ends and their rates.
        let h00 = (1.0 + 2.0 * theta) * theta1 * theta1;
        let h10 = theta * theta1 * theta1 * h;
        let h01 = theta * theta * (3.0 - 2.0 * theta);
        let h11 = -theta * theta * theta1 * h;
        let end = (s - 1) * n;
        for (i, o) in out.iter_mut().enumerate() {
            *o = h00 * self.y_prev[i] + h10 * self.k[i] + h01 * self.y[i] + h11 * self.k[end + i];
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
        self.jacobian_valid = false;
        self.lu_hg = 0.0;
        self.counters = StepCounters::default();
        self.stats = NewtonStats::default();
        true
    }

    fn step_rates(&self) -> Option<(&[f64], &[f64])> {
        let (n, s) = (self.dim, self.tableau.stages());
        (self.t != self.t_prev).then(|| (&self.k[..n], &self.k[(s - 1) * n..s * n]))
    }

    /// The stages of the last step when they were polished to rounding
    /// (sensitivities carried after the state, see [`ImplicitStepper`], or
    /// asked for).
    fn stage_states(&self) -> Option<(&[f64], usize)> {
        (self.stages_polished && self.t != self.t_prev).then_some((&self.stages[..], self.closed))
    }

    fn set_stages_to_rounding(&mut self, on: bool) {
        self.stages_to_rounding = on;
    }
}

#[cfg(test)]
#[path = "stepper_tests.rs"]
mod tests;
