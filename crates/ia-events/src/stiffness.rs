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

        fn chain() -> HybridSystem {
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
