//! Stiffness detection for the Dormand-Prince methods: Hairer's test on
//! successive stages (Hairer and Wanner, Solving ODEs II, IV.2, and their
//! Fortran codes DOPRI5 and DOP853).
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
//! steps inside the bound lift it. Every accepted step taken while the flow
//! is declared stiff counts in [`StepCounters::stiff_steps`](crate::StepCounters::stiff_steps),
//! and a run that ends at `max_steps` or underflows names the implicit
//! methods then.

use crate::tableau::{ButcherTableau, DOP853, DOPRI5};
use crate::vocabulary::{EventJump, Observer, RunContext};
use crate::SolverChoice;
use ia_core::{FlowPartials, HybridError};

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

/// Watches a run's accepted steps for steps beyond the method's stability
/// boundary along the flow's stiffest rate, which Hairer's test (above)
/// can miss.
///
/// Hairer's quotient sees the stiff rate only when the stiff component
/// shows in the difference of the last two stages. At tight tolerances a
/// stability-held run keeps that component near rounding: it grows from
/// rounding over steps just beyond the boundary until the error estimate
/// rejects a step, and decays over the shorter steps that follow. The
/// quotient then measures the slow components, and the test declares
/// nothing, although the steps are set by stability and amplify what the
/// stiff component carries (issue 28's heated rod with DOPRI5 at
/// `rtol = 1e-10`: no step declared stiff, the stiffest rate `-404`, steps
/// up to `0.0131`, `h |lambda|` up to 5.3).
///
/// So the watch measures the rate itself. For each stretch of the run
/// between events it keeps the accepted step sizes and the state the
/// stretch ends at (past the transient that started it, where the steps
/// are longest), and at the run's end estimates the spectral radius
/// `rho(f_x)` there (power iteration on the flow's dense `f_x`,
/// [`Flow::partials`]); a step whose `h rho` exceeds the method's bound
/// (3.25 for DOPRI5, 6.1 for DOP853: those of Hairer's test) counts as
/// beyond. A stretch whose largest step times `|f_x|_inf` (a bound on
/// `rho`) is within the bound has no step beyond and is not iterated, so
/// a non-stiff run pays one evaluation of `f_x` a stretch, and a run of
/// fewer than fifteen steps (which cannot be found stiff) none.
///
/// [`StabilityWatch::found_stiff`] says whether at least as many steps as
/// Hairer's test needs in a row to declare a flow stiff (fifteen) were
/// beyond, anywhere in the run.
///
/// ```
/// use ia_events::stiffness::StabilityWatch;
/// use ia_events::{run, NoExtraState, Problem, SolverChoice};
/// use ia_core::{Autodiff, FlowFn, HybridSystem, Scalar};
///
/// /// `a' = -fast a`, `b' = fast a - slow b`.
/// struct Chain;
/// impl FlowFn for Chain {
///     fn rate<S: Scalar>(&self, _t: S, x: &[S], p: &[S], d: &mut [S]) {
///         d[0] = -(p[0] * x[0]);
///         d[1] = p[0] * x[0] - p[1] * x[1];
///     }
/// }
/// let system = HybridSystem::builder(&["a", "b"], &["fast", "slow"])
///     .mode("flow", Autodiff(Chain))
///     .build()
///     .unwrap();
/// let solver = SolverChoice::dopri5(1e-10);
/// for (fast, stiff) in [(1e3, true), (2.0, false)] {
///     let problem = Problem::new(&system, vec![1.0, 0.0], vec![fast, 0.1], 10.0)
///         .with_solver(solver.clone());
///     let mut watch = StabilityWatch::for_solver(&solver).unwrap();
///     run(&problem, &mut NoExtraState, &mut watch).unwrap();
///     assert_eq!(watch.found_stiff(), stiff);
/// }
/// ```
///
/// [`Flow::partials`]: ia_core::Flow::partials
#[derive(Clone, Debug)]
pub struct StabilityWatch {
    /// The `h |lambda|` bound of the method ([`stiffness_bound`]).
    bound: f64,
    /// The run's accepted step sizes.
    steps: Vec<f64>,
    /// The run's stretches between events, in order.
    stretches: Vec<Stretch>,
    /// Each stretch's end state, `n` floats each.
    states: Vec<f64>,
    /// `f_x` at one of them, and two vectors of the power iteration.
    partials: Option<FlowPartials>,
    iterate: Vec<f64>,
    product: Vec<f64>,
    /// Steps found beyond the bound at the run's end.
    beyond: usize,
}

/// A stretch of accepted steps between events: where its steps start in
/// [`StabilityWatch::steps`], its mode, and the time it ends at (its end
/// state in [`StabilityWatch::states`]).
#[derive(Clone, Copy, Debug)]
struct Stretch {
    first: usize,
    mode: usize,
    time: f64,
}

/// Power iterations of [`spectral_radius`]; the rate is measured over the
/// second half.
const POWER_ITERATIONS: usize = 48;

impl StabilityWatch {
    /// A watch for the steps of `solver`, when it is an explicit method
    /// with a stability bound (DOPRI5, DOP853); `None` otherwise.
    pub fn for_solver(solver: &SolverChoice) -> Option<Self> {
        let bound = solver.tableau().and_then(stiffness_bound)?;
        Some(Self {
            bound,
            steps: Vec::new(),
            stretches: Vec::new(),
            states: Vec::new(),
            partials: None,
            iterate: Vec::new(),
            product: Vec::new(),
            beyond: 0,
        })
    }

    /// Ready for a run of `solver` (its buffers kept); `false`, and the
    /// watch unchanged, when `solver` has no stability bound.
    pub fn restart(&mut self, solver: &SolverChoice) -> bool {
        let Some(bound) = solver.tableau().and_then(stiffness_bound) else {
            return false;
        };
        self.bound = bound;
        self.steps.clear();
        self.stretches.clear();
        self.states.clear();
        self.beyond = 0;
        true
    }

    /// The accepted steps of the finished run found beyond the stability
    /// boundary, counted stretch by stretch until they make the run stiff
    /// ([`StabilityWatch::found_stiff`]); zero for a run of fewer steps.
    pub fn steps_beyond(&self) -> usize {
        self.beyond
    }

    /// Whether at least fifteen accepted steps of the finished run were
    /// beyond the stability boundary (the count of steps in a row with
    /// which Hairer's test declares a flow stiff).
    pub fn found_stiff(&self) -> bool {
        self.beyond >= STIFF_AFTER
    }

    /// Whether the last stretch has no end state yet (no event since its
    /// first step), `n` the state's dimension.
    fn stretch_open(&self, n: usize) -> bool {
        self.stretches.len() * n > self.states.len()
    }

    /// Ends the open stretch, if any, at `(time, y)` (its end state, where
    /// its rate is measured: past the transient that started it).
    fn close_stretch(&mut self, run: RunContext<'_>, time: f64, y: &[f64]) {
        let n = run.system.state_dim();
        if !self.stretch_open(n) {
            return;
        }
        if let Some(stretch) = self.stretches.last_mut() {
            stretch.time = time;
        }
        self.states.extend_from_slice(&y[..n]);
    }

    /// Counts the run's steps beyond the bound, stretch by stretch, until
    /// they make the run stiff. A run of fewer steps than that cannot be,
    /// and costs nothing more.
    fn count_beyond(&mut self, run: RunContext<'_>) {
        self.beyond = 0;
        if self.steps.len() < STIFF_AFTER {
            return;
        }
        let n = run.system.state_dim();
        for (k, stretch) in self.stretches.iter().enumerate() {
            let end = self
                .stretches
                .get(k + 1)
                .map_or(self.steps.len(), |next| next.first);
            let partials = FlowPartials::of_flow_in(
                &mut self.partials,
                run.system.modes()[stretch.mode].flow.as_ref(),
                stretch.time,
                &self.states[k * n..(k + 1) * n],
                run.params,
            );
            let a = &partials.x;
            let norm = (0..n)
                .map(|i| (0..n).map(|j| a[(i, j)].abs()).sum::<f64>())
                .fold(0.0f64, f64::max);
            // No step of the stretch is beyond when its largest is within
            // the bound for |f_x|_inf >= rho(f_x).
            let steps = &self.steps[stretch.first..end];
            let largest = steps.iter().fold(0.0f64, |m, h| m.max(h.abs()));
            if largest * norm <= self.bound {
                continue;
            }
            let rho = spectral_radius(a, &mut self.iterate, &mut self.product);
            self.beyond += steps.iter().filter(|h| h.abs() * rho > self.bound).count();
            if self.beyond >= STIFF_AFTER {
                return;
            }
        }
    }
}

/// The spectral radius of the square matrix `a`, by power iteration: the
/// growth rate `(|a^(2m) v| / |a^m v|)^(1/m)` of a fixed start vector `v`
/// (quasi-random entries, so that no eigenvector is missed by symmetry),
/// `m` = [`POWER_ITERATIONS`] / 2; zero when the iterate vanishes (a
/// nilpotent `a`) or is not finite. The buffers are resized to `a`'s
/// dimension.
fn spectral_radius(a: &nalgebra::DMatrix<f64>, v: &mut Vec<f64>, w: &mut Vec<f64>) -> f64 {
    let n = a.nrows();
    v.clear();
    v.extend((0..n).map(|i| ((i as f64 + 1.0) * 0.754_877_666_246_692_7).fract() - 0.5));
    w.clear();
    w.resize(n, 0.0);
    let mut log_growth = 0.0;
    for k in 0..POWER_ITERATIONS {
        for (i, wi) in w.iter_mut().enumerate() {
            *wi = (0..n).map(|j| a[(i, j)] * v[j]).sum();
        }
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

impl Observer for StabilityWatch {
    fn step_taken(&mut self, run: RunContext<'_>, mode: usize, t0: f64, h: f64, _y0: &[f64]) {
        if !self.stretch_open(run.system.state_dim()) {
            self.stretches.push(Stretch {
                first: self.steps.len(),
                mode,
                time: t0,
            });
        }
        self.steps.push(h);
    }
    fn event(&mut self, run: RunContext<'_>, jump: &EventJump<'_>) -> Result<(), HybridError> {
        self.close_stretch(run, jump.time, jump.state_before);
        Ok(())
    }
    fn finished(&mut self, run: RunContext<'_>, time: f64, y: &[f64]) {
        self.close_stretch(run, time, y);
        self.count_beyond(run);
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
        let got = spectral_radius(&a, &mut Vec::new(), &mut Vec::new());
        println!("{got} against {want}");
        assert!((got - want).abs() <= 1e-5 * want, "{got} against {want}");
    }

    #[test]
    fn the_watch_counts_steps_beyond_by_stretch_and_only_runs_of_fifteen_or_more() {
        // Reference: the chain's rate 1e3 (f_x's spectral radius) against
        // DOPRI5's bound 3.25: steps of 4e-3 are beyond, steps of 3e-3 are
        // not; a run of fourteen steps is not measured.
        use crate::vocabulary::EventJump;
        let system = runs::chain();
        let params = [1e3, 0.1];
        let run = RunContext {
            system: &system,
            params: &params,
        };
        let state = [1.0, 0.0];
        let jump = EventJump {
            index: 0,
            transition: 0,
            time: 1.0,
            from_mode: 0,
            to_mode: 0,
            state_before: &state,
            state_after: &state,
            terminal: false,
            cascade_of: None,
            geometry: None,
        };
        let watch_steps = |stretches: &[&[f64]]| {
            let mut watch = StabilityWatch::for_solver(&SolverChoice::dopri5(1e-6)).unwrap();
            let mut t = 0.0;
            for (k, steps) in stretches.iter().enumerate() {
                if k > 0 {
                    watch.event(run, &jump).unwrap();
                }
                for &h in *steps {
                    watch.step_taken(run, 0, t, h, &state);
                    t += h;
                }
            }
            watch.finished(run, t, &state);
            (watch.steps_beyond(), watch.found_stiff())
        };
        assert_eq!(watch_steps(&[&[4e-3; 20]]), (20, true));
        assert_eq!(watch_steps(&[&[3e-3; 20]]), (0, false));
        assert_eq!(
            watch_steps(&[&[4e-3; 10], &[3e-3; 10], &[4e-3; 5]]),
            (15, true)
        );
        assert_eq!(
            watch_steps(&[&[4e-3; 10], &[3e-3; 10], &[4e-3; 4]]),
            (14, false)
        );
        assert_eq!(watch_steps(&[&[4e-3; 14]]), (0, false));
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
