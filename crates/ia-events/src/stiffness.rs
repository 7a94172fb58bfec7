//! Stiffness in the Dormand-Prince methods: Hairer's test on successive
//! stages (Hairer and Wanner, Solving ODEs II, IV.2, and their Fortran
//! codes DOPRI5 and DOP853), and steps held inside the stability boundary
//! once the flow's stiffest rate has shown.
//!
//! The last solution stage of DOPRI5 and of DOP853 is evaluated at the
//! step's end (`c = 1`), as is the end rate, at the new solution. Their
//! difference estimates the dominant eigenvalue of the Jacobian there:
//!
//! ```text
//! h lambda ~ h |f(t + h, y1) - f(t + h, g_s)| / |y1 - g_s|
//! ```
//!
//! with `g_s` the last stage's state and `y1` the new solution. An accepted
//! step whose `h lambda` lies beyond the method's stability boundary along
//! the negative real axis (about 3.3 for DOPRI5, 6.1 for DOP853, the bounds
//! Hairer's codes use) is a step whose size stability set, not accuracy.
//! Fifteen such steps in a row declare the flow stiff; six consecutive
//! steps inside the bound lift it.
//!
//! The test sees the stiff rate only when the stiff component shows in the
//! difference of the last two stages. At tight tolerances a run keeps that
//! component near rounding (it grows over steps a little beyond the
//! boundary until a step is rejected), the quotient measures the slow
//! components, and the test declares nothing: on issue 28's heated rod with
//! DOPRI5 at `rtol = 1e-10`, no step, although the steps reached 1.6x the
//! boundary for the stiffest rate `-404`. So the stepper also measures the
//! rate itself, from `f_x`, once a step is rejected, and holds the steps
//! after it inside the boundary: at `0.9 bound / rho(f_x)`, the spectral
//! radius `rho` by power iteration at the rejected step's start. The limit
//! is measured again after 50 accepted steps when it has cut one of them
//! (unless the flow's `f_x` is constant), at a rejected step longer than
//! half of it, and after an event when it would cut the carried step
//! proposal; after an event it would not cut, it is dropped (the next
//! mode's flow may be another). A run whose steps are never rejected is
//! not measured and takes the steps it took before.
//!
//! A step the hold cut from beyond the boundary counts in the test as a
//! step beyond, and every accepted step taken while the test declares the
//! flow stiff counts in [`StepCounters::stiff_steps`](crate::StepCounters::stiff_steps):
//! a run that ends at `max_steps` or underflows names the implicit methods
//! then.

use crate::stepper::OdeRhs;
use crate::tableau::{ButcherTableau, DOP853, DOPRI5};

/// Consecutive accepted steps beyond the bound that declare the flow stiff.
const STIFF_AFTER: usize = 15;
/// Consecutive accepted steps inside the bound that lift the declaration.
const NON_STIFF_AFTER: usize = 6;

/// The `h lambda` bound of Hairer's test for `tableau`, when it has one
/// (DOPRI5: 3.25, DOP853: 6.1, the values of Hairer's codes): methods whose
/// last solution stage sits at the step's end.
pub(crate) fn stiffness_bound(tableau: &ButcherTableau) -> Option<f64> {
    if std::ptr::eq(tableau, &DOPRI5) {
        Some(3.25)
    } else if std::ptr::eq(tableau, &DOP853) {
        Some(6.1)
    } else {
        None
    }
}

/// `h |f_end - f_stage| / |y1 - stage|` over the given components, or zero
/// when the two states coincide.
pub(crate) fn h_lambda(h: f64, f_end: &[f64], f_stage: &[f64], y1: &[f64], stage: &[f64]) -> f64 {
    let num: f64 = f_end
        .iter()
        .zip(f_stage)
        .map(|(a, b)| (a - b) * (a - b))
        .sum();
    let den: f64 = y1.iter().zip(stage).map(|(a, b)| (a - b) * (a - b)).sum();
    if den > 0.0 {
        h.abs() * (num / den).sqrt()
    } else {
        0.0
    }
}

/// The running state of Hairer's test over a run's accepted steps.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub(crate) struct StiffnessTest {
    /// Consecutive steps beyond the bound (Hairer's `IASTI`).
    beyond: usize,
    /// Consecutive steps inside the bound (Hairer's `NONSTI`).
    inside: usize,
}

impl StiffnessTest {
    /// Records an accepted step's `h lambda` against `bound`; returns
    /// whether the flow is declared stiff at this step.
    pub(crate) fn accepted(&mut self, h_lambda: f64, bound: f64) -> bool {
        if h_lambda > bound {
            self.inside = 0;
            self.beyond += 1;
        } else {
            self.inside += 1;
            if self.inside == NON_STIFF_AFTER {
                self.beyond = 0;
            }
        }
        self.beyond >= STIFF_AFTER
    }
}

/// Power iterations of [`spectral_radius_of`]; the rate is measured over the
/// second half.
const POWER_ITERATIONS: usize = 48;

/// The spectral radius of the `n x n` matrix whose product `w = A v` is
/// `product`, by power iteration: the growth rate
/// `(|A^(2m) v| / |A^m v|)^(1/m)` of a fixed start vector `v` (quasi-random
/// entries, so that no eigenvector is missed by symmetry),
/// `m` = [`POWER_ITERATIONS`] / 2; zero when the iterate vanishes (a
/// nilpotent `A`) or is not finite. The buffers are resized to `n`; the
/// iterates `v` passed to `product` have unit norm after the first.
fn spectral_radius_of(
    n: usize,
    v: &mut Vec<f64>,
    w: &mut Vec<f64>,
    mut product: impl FnMut(&[f64], &mut [f64]),
) -> f64 {
    v.clear();
    v.extend((0..n).map(|i| ((i as f64 + 1.0) * 0.754_877_666_246_692_7).fract() - 0.5));
    w.clear();
    w.resize(n, 0.0);
    let mut log_growth = 0.0;
    for k in 0..POWER_ITERATIONS {
        product(v, w);
        let norm = w.iter().map(|x| x * x).sum::<f64>().sqrt();
        if !(norm > 0.0 && norm.is_finite()) {
            return 0.0;
        }
        if k >= POWER_ITERATIONS / 2 {
            log_growth += norm.ln();
        }
        for (vi, wi) in v.iter_mut().zip(w.iter()) {
            *vi = wi / norm;
        }
    }
    (log_growth / (POWER_ITERATIONS - POWER_ITERATIONS / 2) as f64).exp()
}

/// The fraction of the stability bound within which [`StabilityHold`]
/// keeps `h rho`: the power iteration's estimate of `rho` may fall short
/// of it by a few per cent where the stiffest rates cluster (a diffusion's).
const HOLD_MARGIN: f64 = 0.9;
/// Accepted steps after which a limit that held steps is measured again
/// (the flow's rates move with its state).
const HOLD_REFRESH: usize = 50;
/// The largest state dimension whose `f_x` is formed whole for the power
/// iteration ([`OdeRhs::jacobian`]: `n` Jacobian-vector products, then 48
/// products of `n^2` each); beyond, each of the 48 products `f_x v` is a
/// difference of rates, one evaluation each.
const HOLD_DENSE: usize = 16;

/// Holds an explicit method's steps inside its stability boundary along
/// the flow's stiffest rate, once a step has been rejected.
///
/// On a stiff flow an explicit method's error control finds the stability
/// boundary by trial: steps grow past `bound / rho(f_x)`, the stiff
/// component grows from rounding over them until the error estimate
/// rejects a step, and the shorter steps after let it decay. The steps then
/// amplify rounding, and the sensitivities carried or transposed over
/// them, by up to the tolerance over rounding, a factor 4e7 on issue 28's
/// heated rod with DOPRI5 at `rtol = 1e-10` (the gap between the forward
/// and the adjoint derivative on the same steps, 1.26e-10, was that
/// factor times rounding), and rejections are 6 to 16 % of the steps.
///
/// So at a rejected step, the hold estimates `rho = rho(f_x)` at the
/// step's start ([`spectral_radius_of`]: `f_x` whole for small states,
/// products by differences of rates beyond [`HOLD_DENSE`]) and caps the
/// steps that follow at `0.9 bound / rho` ([`HOLD_MARGIN`]; `bound` the
/// method's, 3.25 for DOPRI5, 6.1 for DOP853); not at a rejection before
/// any step of a stretch was accepted (after an event the first attempt
/// tries the proposal carried over it: the thermostat, not stiff, rejected
/// it at most of its 10^4 switches, and measuring there cost 18 % more
/// instructions). The limit is measured again: after [`HOLD_REFRESH`] accepted steps when it has cut a step
/// among them (the flow's rates move with its state; not for a flow whose
/// `f_x` is constant); at a rejected step longer than half the limit (the
/// stiffest rate may have grown); and when the stepper starts again after
/// an event with a proposal the limit would cut (the new mode's flow may
/// differ). A limit that would not cut that proposal is dropped then (a
/// stiff contact's must not hold the flight after it). A flow whose steps
/// are never rejected costs nothing, and a stiff run held through its
/// events pays the trial of the boundary once.
///
/// Measured (`probe_accuracy` of `ia-benches`, DOPRI5 on issue 28's stiff
/// problems at `rtol` 1e-6 to 1e-10, docs/method.md): 4 to 13 % more
/// accepted steps, rejections from 6 to 16 % of the steps to about 1 %,
/// the forward pass's derivatives from up to 1.1e-5 to at most 1.9e-11 of
/// the mpmath references.
#[derive(Clone, Debug)]
pub(crate) struct StabilityHold {
    /// The largest step allowed (infinite: none).
    limit: f64,
    /// Whether the limit has cut a step since it was measured.
    binding: bool,
    /// Accepted steps since the limit was measured.
    age: usize,
    /// Whether a step has been accepted since the stepper last started.
    settled: bool,
    /// Whether the flow's `f_x` is the same at every state
    /// ([`OdeRhs::jacobian_is_constant`]): its limit needs no refresh.
    constant: bool,
    jacobian: Vec<f64>,
    iterate: Vec<f64>,
    product: Vec<f64>,
    shifted: Vec<f64>,
    rate: Vec<f64>,
}

impl Default for StabilityHold {
    fn default() -> Self {
        Self {
            limit: f64::INFINITY,
            binding: false,
            age: 0,
            settled: false,
            constant: false,
            jacobian: Vec::new(),
            iterate: Vec::new(),
            product: Vec::new(),
            shifted: Vec::new(),
            rate: Vec::new(),
        }
    }
}

impl StabilityHold {
    /// The step `proposal` held within the limit, and whether the limit
    /// cut it from beyond the stability boundary (`bound / rho`, not only
    /// beyond the margin: a step there counts as Hairer's test counts a
    /// step beyond, [`StiffnessTest::accepted`]).
    pub(crate) fn hold(&mut self, proposal: f64) -> (f64, bool) {
        if proposal > self.limit {
            self.binding = true;
            (self.limit, proposal * HOLD_MARGIN > self.limit)
        } else {
            (proposal, false)
        }
    }

    /// Whether a rejected step of size `h` calls for a measurement: when
    /// a step has been accepted since the start (the first attempts after
    /// an event try a proposal carried over it, whose rejection says
    /// nothing of stability), and there is no limit or the step was longer
    /// than half of it (the stiffest rate may have grown).
    pub(crate) fn measure_after_rejection(&self, h: f64) -> bool {
        self.settled && (self.limit == f64::INFINITY || h > 0.5 * self.limit)
    }

    /// Counts an accepted step; whether the limit is due to be measured
    /// again (it has cut a step in the last [`HOLD_REFRESH`], and the
    /// flow's `f_x` moves with the state).
    pub(crate) fn accepted(&mut self) -> bool {
        self.settled = true;
        self.age += 1;
        if self.age < HOLD_REFRESH || self.constant {
            return false;
        }
        self.age = 0;
        std::mem::take(&mut self.binding)
    }

    /// The stepper starts again (after an event) with the step `proposal`,
    /// perhaps in another mode's flow: whether the limit is to be measured
    /// at the new start (it would cut the proposal); a limit that would not
    /// is dropped (it may be another flow's).
    pub(crate) fn restarted(&mut self, proposal: f64) -> bool {
        self.settled = false;
        if proposal > self.limit {
            return true;
        }
        self.forget();
        false
    }

    /// No limit.
    pub(crate) fn forget(&mut self) {
        self.settled = false;
        self.limit = f64::INFINITY;
        self.binding = false;
        self.age = 0;
    }

    /// Measures `rho(f_x)` at `(t, y)` (the leading
    /// [`OdeRhs::closed_dim`] components of `y`) and sets the limit to
    /// `HOLD_MARGIN bound / rho` (none when `rho` is zero or not finite);
    /// returns the evaluations of `rhs` it took.
    pub(crate) fn measure(&mut self, rhs: &mut dyn OdeRhs, t: f64, y: &[f64], bound: f64) -> usize {
        let n = rhs.closed_dim().min(y.len());
        let y = &y[..n];
        let mut evaluations = 0;
        self.constant = rhs.jacobian_is_constant();
        let Self {
            jacobian,
            iterate,
            product,
            shifted,
            rate,
            ..
        } = self;
        jacobian.resize(if n <= HOLD_DENSE { n * n } else { 0 }, 0.0);
        let rho = if n <= HOLD_DENSE && rhs.jacobian(t, y, jacobian) {
            spectral_radius_of(n, iterate, product, |v, w| {
                w.fill(0.0);
                for (column, &vj) in jacobian.chunks_exact(n).zip(v) {
                    for (wi, a) in w.iter_mut().zip(column) {
                        *wi += a * vj;
                    }
                }
            })
        } else {
            rate.resize(n, 0.0);
            shifted.resize(n, 0.0);
            rhs.eval_closed(t, y, rate);
            evaluations += 1;
            let y_norm = y.iter().map(|v| v * v).sum::<f64>().sqrt();
            spectral_radius_of(n, iterate, product, |v, w| {
                // A forward difference along `v`, its length scaled to the
                // state's: `f_x v` to about the square root of rounding.
                let v_norm = v.iter().map(|v| v * v).sum::<f64>().sqrt();
                let delta = f64::EPSILON.sqrt() * y_norm.max(1.0) / v_norm;
                for ((s, &yi), &vi) in shifted.iter_mut().zip(y).zip(v) {
                    *s = yi + delta * vi;
                }
                rhs.eval_closed(t, shifted, w);
                evaluations += 1;
                for (wi, &fi) in w.iter_mut().zip(rate.iter()) {
                    *wi = (*wi - fi) / delta;
                }
            })
        };
        self.limit = if rho > 0.0 && rho.is_finite() {
            HOLD_MARGIN * bound / rho
        } else {
            f64::INFINITY
        };
        self.binding = false;
        self.age = 0;
        evaluations
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stepper::{OdeRhs, Stepper};
    use crate::RkStepper;
    use rstest::rstest;

    /// A two-compartment chain `x0' = -a x0`, `x1' = a x0 - b x1` with a fast
    /// rate `a` and a slow one `b`: stiff once the fast transient has
    /// decayed and the step would grow past `3.3 / a`.
    struct Chain {
        fast: f64,
        slow: f64,
    }
    impl OdeRhs for Chain {
        fn dim(&self) -> usize {
            2
        }
        fn eval(&mut self, _t: f64, y: &[f64], dydt: &mut [f64]) {
            dydt[0] = -self.fast * y[0];
            dydt[1] = self.fast * y[0] - self.slow * y[1];
        }
    }

    fn stiff_steps(mut stepper: RkStepper, rhs: &mut Chain, t_end: f64) -> (usize, usize) {
        stepper.start(rhs, 0.0, &[1.0, 0.0]).unwrap();
        let mut steps = 0;
        while stepper.time() < t_end {
            stepper.step(rhs, t_end).unwrap();
            steps += 1;
        }
        (stepper.counters().stiff_steps, steps)
    }

    #[rstest]
    fn a_stiff_flow_is_flagged_on_most_of_its_steps(
        #[values(RkStepper::dopri5, RkStepper::dop853)] method: fn(f64, f64) -> RkStepper,
    ) {
        // Reference: the eigenvalues -1e3 and -0.1 of the chain. Over
        // t in [0, 10] the fast mode is gone after ~0.03, and every later
        // step is held at the stability boundary by the eigenvalue -1e3.
        let mut rhs = Chain {
            fast: 1e3,
            slow: 0.1,
        };
        let (stiff, steps) = stiff_steps(method(1e-6, 1e-9), &mut rhs, 10.0);
        assert!(steps > 1000, "{steps} steps");
        assert!(2 * stiff > steps, "{stiff} stiff of {steps} steps");
    }

    #[rstest]
    fn a_non_stiff_flow_is_not_flagged(
        #[values(RkStepper::dopri5, RkStepper::dop853)] method: fn(f64, f64) -> RkStepper,
    ) {
        // Reference: eigenvalues -2 and -1, rates of the size the solution
        // changes at: accuracy sets every step.
        let mut rhs = Chain {
            fast: 2.0,
            slow: 1.0,
        };
        let (stiff, steps) = stiff_steps(method(1e-6, 1e-9), &mut rhs, 10.0);
        assert!(steps > 10, "{steps} steps");
        assert_eq!(stiff, 0);
    }

    #[test]
    fn methods_without_a_bound_report_nothing() {
        // RK4 has no end stage at c = 1 to difference: no test, no count.
        let mut rhs = Chain {
            fast: 1e3,
            slow: 0.1,
        };
        let (stiff, _) = stiff_steps(RkStepper::rk4(1e-3), &mut rhs, 1.0);
        assert_eq!(stiff, 0);
    }

    /// [`Chain`] with its Jacobian, so that the hold forms `f_x` whole
    /// rather than differencing the rates.
    struct WithJacobian(Chain);
    impl OdeRhs for WithJacobian {
        fn dim(&self) -> usize {
            2
        }
        fn eval(&mut self, t: f64, y: &[f64], dydt: &mut [f64]) {
            self.0.eval(t, y, dydt);
        }
        fn jacobian(&mut self, _t: f64, _y: &[f64], jacobian: &mut [f64]) -> bool {
            let Chain { fast, slow } = self.0;
            jacobian.copy_from_slice(&[-fast, fast, 0.0, -slow]);
            true
        }
    }

    /// The accepted step sizes of a run of `stepper` over `[0, t_end]`,
    /// started again at `restart_at` (as after an event), and its
    /// rejected steps before and after the restart.
    fn held_steps(
        mut stepper: RkStepper,
        rhs: &mut dyn OdeRhs,
        restart_at: f64,
        t_end: f64,
    ) -> (Vec<f64>, usize, usize) {
        let mut steps = Vec::new();
        stepper.start(rhs, 0.0, &[1.0, 0.0]).unwrap();
        while stepper.time() < restart_at {
            stepper.step(rhs, restart_at).unwrap();
            steps.push(stepper.step_size());
        }
        let before = stepper.counters().rejected_steps;
        let y = stepper.state().to_vec();
        stepper.start(rhs, restart_at, &y).unwrap();
        while stepper.time() < t_end {
            stepper.step(rhs, t_end).unwrap();
            steps.push(stepper.step_size());
        }
        (steps, before, stepper.counters().rejected_steps - before)
    }

    #[rstest]
    fn a_stiff_flows_steps_are_held_inside_the_stability_boundary(
        #[values(RkStepper::dopri5, RkStepper::dop853)] method: fn(f64, f64) -> RkStepper,
        #[values(false, true)] jacobian: bool,
    ) {
        // Reference: the chain's eigenvalues -1e3 and -0.1, so rho(f_x) =
        // 1e3 and the held steps are 0.9 bound / 1e3 (bound 3.25 for
        // DOPRI5, 6.1 for DOP853): the power iteration converges as
        // (0.1 / 1e3)^24, so the limit is exact to rounding with f_x
        // whole and to about the square root of rounding by differences.
        // Left free, the steps found the boundary by trial: about one in
        // six rejected (DOPRI5 at 1e-6 on issue 28's slowly switching
        // relay, 982 of 6152), and steps up to 1.3x the boundary.
        let chain = Chain {
            fast: 1e3,
            slow: 0.1,
        };
        let stepper = method(1e-6, 1e-9);
        let bound = stiffness_bound(stepper.tableau().unwrap()).unwrap();
        let limit = HOLD_MARGIN * bound / 1e3;
        let (steps, rejected_before, rejected_after) = if jacobian {
            held_steps(stepper, &mut WithJacobian(chain), 5.0, 10.0)
        } else {
            let mut chain = chain;
            held_steps(stepper, &mut chain, 5.0, 10.0)
        };
        let largest = steps[..steps.len() - 1]
            .iter()
            .skip(steps.len() / 10)
            .fold(0.0f64, |m, &h| m.max(h));
        println!("{} steps, rejected {rejected_before} + {rejected_after}, largest {largest:e}, limit {limit:e}", steps.len());
        assert!(steps.len() > 1000, "{} steps", steps.len());
        assert!(
            (largest - limit).abs() <= 1e-6 * limit,
            "{largest:e} against {limit:e}"
        );
        let beyond = steps.iter().filter(|&&h| h * 1e3 > bound).count();
        assert!(beyond <= 5, "{beyond} steps beyond the boundary");
        assert!(rejected_before <= 10, "{rejected_before} rejected");
        // The limit is measured again at the restart: no step to reject.
        assert_eq!(rejected_after, 0);
    }

    mod runs {
        use crate::{simulate, EventOptions, Problem, SolverChoice};
        use ia_core::{Autodiff, FlowFn, HybridError, HybridSystem, Scalar};

        /// The chain of the tests above as a one-mode hybrid system,
        /// rates `p = (fast, slow)`.
        struct ChainFlow;
        impl FlowFn for ChainFlow {
            fn rate<S: Scalar>(&self, _t: S, x: &[S], p: &[S], d: &mut [S]) {
                d[0] = -(p[0] * x[0]);
                d[1] = p[0] * x[0] - p[1] * x[1];
            }
        }

        pub(super) fn chain() -> HybridSystem {
            HybridSystem::builder(&["a", "b"], &["fast", "slow"])
                .mode("flow", Autodiff(ChainFlow))
                .build()
                .unwrap()
        }

        fn run(fast: f64, max_steps: usize) -> Result<ia_core::Trajectory, HybridError> {
            let system = chain();
            let problem = Problem::new(&system, vec![1.0, 0.0], vec![fast, 0.1], 10.0)
                .with_solver(SolverChoice::dopri5(1e-8))
                .with_event_options(EventOptions {
                    max_steps,
                    ..EventOptions::default()
                });
            simulate(&problem)
        }

        #[test]
        fn a_stiff_run_counts_its_stiff_steps_and_its_step_limit_names_the_implicit_methods() {
            // Reference: the eigenvalues -1e3 and -0.1 (stiff) against -2
            // and -0.1 (not): DOPRI5 needs ~3000 steps for the first, ~100
            // for the second.
            let done = run(1e3, 10_000_000).unwrap();
            assert!(
                2 * done.stats.stiff_steps > done.stats.steps,
                "{:?}",
                done.stats
            );
            let error = run(1e3, 500).unwrap_err();
            let message = error.to_string();
            assert_eq!(error.kind(), "step_limit");
            for name in ["trbdf2", "kvaerno3", "kvaerno5", "stiff"] {
                assert!(message.contains(name), "{message}");
            }
            let mild = run(2.0, 10_000_000).unwrap();
            assert_eq!(mild.stats.stiff_steps, 0);
            let message = run(2.0, 5).unwrap_err().to_string();
            assert!(!message.contains("kvaerno"), "{message}");
        }
    }

    #[rstest]
    #[case::laplacian_of_six_cells(
        nalgebra::DMatrix::from_fn(6, 6, |i, j| match i.abs_diff(j) { 0 => -2.0, 1 => 1.0, _ => 0.0 }),
        2.0 + 2.0 * (std::f64::consts::PI / 7.0).cos()
    )]
    #[case::oscillator(nalgebra::dmatrix![0.0, 1.0; -900.0, 0.0], 30.0)]
    #[case::fast_and_slow_chain(nalgebra::dmatrix![-1e3, 0.0; 1e3, -0.1], 1e3)]
    #[case::nilpotent(nalgebra::dmatrix![0.0, 1.0; 0.0, 0.0], 0.0)]
    fn the_spectral_radius_by_power_iteration(
        #[case] a: nalgebra::DMatrix<f64>,
        #[case] want: f64,
    ) {
        // Reference: the eigenvalues in closed form (the Laplacian's
        // -2 + 2 cos(k pi / 7), the oscillator's +-30i, the chain's
        // diagonal, the nilpotent's zeros). The power iteration's error
        // falls as (|lambda_2| / |lambda_1|)^24: at most 0.854^24 = 0.023
        // for the Laplacian by that bound, measured 4.8e-6; rounding for
        // the others.
        let n = a.nrows();
        let got = spectral_radius_of(n, &mut Vec::new(), &mut Vec::new(), |v, w| {
            for (i, wi) in w.iter_mut().enumerate() {
                *wi = (0..n).map(|j| a[(i, j)] * v[j]).sum();
            }
        });
        println!("{got} against {want}");
        assert!((got - want).abs() <= 1e-5 * want, "{got} against {want}");
    }

    #[test]
    fn fifteen_steps_beyond_declare_and_six_inside_lift() {
        // Reference: Hairer's counters IASTI and NONSTI in DOPRI5.
        let mut test = StiffnessTest::default();
        let flags: Vec<bool> = (0..15).map(|_| test.accepted(4.0, 3.25)).collect();
        assert_eq!(flags.iter().filter(|&&f| f).count(), 1);
        assert!(flags[14]);
        let inside: Vec<bool> = (0..6).map(|_| test.accepted(1.0, 3.25)).collect();
        assert_eq!(inside, [true, true, true, true, true, false]);
        assert!(!test.accepted(4.0, 3.25));
    }

    #[test]
    fn h_lambda_of_a_linear_flow_is_its_eigenvalue() {
        // Reference: f = -50 y, so |f(a) - f(b)| / |a - b| = 50 exactly.
        let (a, b) = ([1.0, 2.0], [0.5, 1.0]);
        let (fa, fb) = (a.map(|v| -50.0 * v), b.map(|v| -50.0 * v));
        assert_eq!(h_lambda(0.1, &fa, &fb, &a, &b), 5.0);
        assert_eq!(h_lambda(0.1, &fa, &fa, &a, &a), 0.0);
    }
}
