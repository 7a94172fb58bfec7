use super::*;
use crate::implicit_rk::{KVAERNO3, KVAERNO5, TRBDF2};
use crate::RkStepper;
use rstest::rstest;

/// `y' = A y`, `A = [[-1000, 999], [0, -1]]`: eigenvalues -1000 and -1.
/// From `(1 + c, 1)` the solution is `(e^-t + c e^-1000t, e^-t)` (the
/// matrix exponential of `A t` applied to the start).
struct StiffLinear {
    exact_jacobian: bool,
}
impl OdeRhs for StiffLinear {
    fn dim(&self) -> usize {
        2
    }
    fn eval(&mut self, _t: f64, y: &[f64], dydt: &mut [f64]) {
        dydt[0] = -1000.0 * y[0] + 999.0 * y[1];
        dydt[1] = -y[1];
    }
    fn jacobian(&mut self, _t: f64, _y: &[f64], jacobian: &mut [f64]) -> bool {
        if self.exact_jacobian {
            jacobian.copy_from_slice(&[-1000.0, 0.0, 999.0, -1.0]);
        }
        self.exact_jacobian
    }
}

fn exact(t: f64, c: f64) -> [f64; 2] {
    [(-t).exp() + c * (-1000.0 * t).exp(), (-t).exp()]
}

/// `n` steps of size `1 / n` to `t = 1` from `(1, 1)`, each one attempt
/// (no error control): the global error of the method.
fn fixed_step_error(tableau: &'static EsdirkTableau, n: usize) -> f64 {
    let mut stepper = ImplicitStepper::new(tableau, 1e-12, 1e-12, f64::INFINITY).unwrap();
    let mut rhs = StiffLinear {
        exact_jacobian: true,
    };
    stepper.start(&mut rhs, 0.0, &[1.0, 1.0]).unwrap();
    let h = 1.0 / n as f64;
    for _ in 0..n {
        if stepper.t != stepper.t_prev {
            let (dim, s) = (stepper.dim, tableau.stages());
            stepper.k.copy_within((s - 1) * dim..s * dim, 0);
        }
        assert!(matches!(stepper.attempt(&mut rhs, h), Attempt::Done));
        stepper.accept(h);
    }
    let want = exact(1.0, 0.0);
    (stepper.y[0] - want[0])
        .abs()
        .max((stepper.y[1] - want[1]).abs())
}

#[rstest]
#[case::trbdf2(&TRBDF2, 8)]
#[case::kvaerno3(&KVAERNO3, 8)]
#[case::kvaerno5(&KVAERNO5, 4)]
fn each_method_converges_at_its_order_on_a_stiff_linear_flow(
    #[case] tableau: &'static EsdirkTableau,
    #[case] n: usize,
) {
    // Reference: the matrix exponential (closed form above). Steps of
    // 1/8 are 125 times the stiff time scale, where an explicit method
    // would blow up; the error still falls as h^p.
    let order = (fixed_step_error(tableau, n) / fixed_step_error(tableau, 2 * n)).log2();
    let p = f64::from(tableau.order);
    assert!(
        (p - 0.3..p + 0.6).contains(&order),
        "{}: order {order}",
        tableau.name
    );
}

fn run(stepper: &mut dyn Stepper, rhs: &mut dyn OdeRhs, t_end: f64) -> usize {
    stepper.start(rhs, 0.0, &[2.0, 1.0]).unwrap();
    let mut steps = 0;
    while stepper.time() < t_end {
        stepper.step(rhs, t_end).unwrap();
        steps += 1;
    }
    steps
}

#[rstest]
fn adaptive_steps_meet_the_tolerance_in_far_fewer_steps_than_dopri5(
    #[values(&TRBDF2, &KVAERNO3, &KVAERNO5)] tableau: &'static EsdirkTableau,
    #[values(true, false)] exact_jacobian: bool,
) {
    // Reference: the closed form above, with the stiff transient
    // (c = 1); DOPRI5 is held to steps of about 3.3 / 1000 by stability.
    let tol = 1e-6;
    let mut rhs = StiffLinear { exact_jacobian };
    let mut stepper = ImplicitStepper::new(tableau, tol, tol, f64::INFINITY).unwrap();
    let steps = run(&mut stepper, &mut rhs, 10.0);
    let want = exact(10.0, 1.0);
    for (got, want) in stepper.state().iter().zip(want) {
        assert!((got - want).abs() < 20.0 * tol, "{got} vs {want}");
    }
    let explicit = run(&mut RkStepper::dopri5(tol, tol), &mut rhs, 10.0);
    assert!(
        10 * steps < explicit,
        "{}: {steps} steps against {explicit}",
        tableau.name
    );
    let stats = stepper.newton_stats();
    assert!(stats.factorisations < steps, "{stats:?} over {steps} steps");
}

#[test]
fn truncate_redoes_the_step_and_the_dense_output_follows_it() {
    // Reference: the closed form; the step redone to end inside the last
    // one ends on the solution there, and the Hermite extension in between
    // follows the solution to third order of the step.
    let mut rhs = StiffLinear {
        exact_jacobian: true,
    };
    let mut stepper = ImplicitStepper::new(&KVAERNO5, 1e-10, 1e-10, f64::INFINITY).unwrap();
    stepper.start(&mut rhs, 0.0, &[1.0, 1.0]).unwrap();
    stepper.step(&mut rhs, 1.0).unwrap();
    stepper.step(&mut rhs, 1.0).unwrap();
    let (a, b) = (stepper.previous_time(), stepper.time());
    let mut out = [0.0; 2];
    stepper.interpolate(&mut rhs, 0.5 * (a + b), &mut out);
    let h = b - a;
    assert!(
        (out[1] - exact(0.5 * (a + b), 0.0)[1]).abs() < h.powi(4),
        "{out:?}"
    );
    let mid = a + 0.3 * h;
    stepper.truncate(&mut rhs, mid).unwrap();
    assert_eq!((stepper.previous_time(), stepper.time()), (a, mid));
    assert!((stepper.state()[1] - exact(mid, 0.0)[1]).abs() < 1e-9);
}

/// `y' = 1e31 + y^2` from `y = 0`: the first implicit stage,
/// `Y - h gamma Y^2 = h gamma 1e31`, has no real solution unless
/// `4 (h gamma)^2 1e31 <= 1`, a step below the least representable one
/// at `t = 0` (`8 eps`).
struct NoSolution;
impl OdeRhs for NoSolution {
    fn dim(&self) -> usize {
        1
    }
    fn eval(&mut self, _t: f64, y: &[f64], dydt: &mut [f64]) {
        dydt[0] = 1e31 + y[0] * y[0];
    }
    fn jacobian(&mut self, _t: f64, y: &[f64], jacobian: &mut [f64]) -> bool {
        jacobian[0] = 2.0 * y[0];
        true
    }
}

#[test]
fn a_newton_failure_no_step_cures_is_an_error_not_a_hang() {
    let mut stepper = ImplicitStepper::new(&KVAERNO3, 1e-8, 1e-8, f64::INFINITY).unwrap();
    stepper.start(&mut NoSolution, 0.0, &[0.0]).unwrap();
    let err = stepper.step(&mut NoSolution, 1.0).unwrap_err();
    assert!(
        matches!(err, StepFailure::NewtonFailure { time, .. } if time == 0.0),
        "{err:?}"
    );
}

/// A diffusion chain `y_i' = k (y_{i-1} - 2 y_i + y_{i+1}) - y_i` (ends
/// insulated) of `n` entries, with its tridiagonal Jacobian, declaring
/// its pattern or not.
struct Chain {
    n: usize,
    pattern: Option<ia_core::Sparsity>,
}

impl Chain {
    const K: f64 = 400.0;
    fn new(n: usize, declare: bool) -> Self {
        let entries =
            (0..n).flat_map(|i| [(i, i), (i.saturating_sub(1), i), ((i + 1).min(n - 1), i)]);
        let pattern = declare.then(|| ia_core::Sparsity::from_entries(n, entries).unwrap());
        Self { n, pattern }
    }
    fn entry(&self, row: usize, col: usize) -> f64 {
        let neighbours = usize::from(row > 0) + usize::from(row + 1 < self.n);
        if row == col {
            -Self::K * neighbours as f64 - 1.0
        } else if row.abs_diff(col) == 1 {
            Self::K
        } else {
            0.0
        }
    }
}

impl OdeRhs for Chain {
    fn dim(&self) -> usize {
        self.n
    }
    fn eval(&mut self, _t: f64, y: &[f64], dydt: &mut [f64]) {
        for (i, rate) in dydt.iter_mut().enumerate().take(self.n) {
            let lo = i.saturating_sub(1);
            let hi = (i + 1).min(self.n - 1);
            *rate = (lo..=hi).map(|j| self.entry(i, j) * y[j]).sum();
        }
    }
    fn jacobian(&mut self, _t: f64, _y: &[f64], jacobian: &mut [f64]) -> bool {
        for c in 0..self.n {
            for r in 0..self.n {
                jacobian[c * self.n + r] = self.entry(r, c);
            }
        }
        true
    }
    fn sparsity(&mut self) -> Option<&ia_core::Sparsity> {
        self.pattern.as_ref()
    }
    fn sparse_jacobian(&mut self, _t: f64, _y: &[f64], values: &mut [f64]) -> bool {
        let Some(pattern) = self.pattern.clone() else {
            return false;
        };
        for c in 0..self.n {
            for (k, &r) in pattern.column(c).iter().enumerate() {
                values[pattern.col_ptr()[c] + k] = self.entry(r, c);
            }
        }
        true
    }
}

#[test]
fn a_declared_sparsity_gives_the_dense_run_to_rounding() {
    // Reference: the same run factorising densely (the chain not declaring
    // its pattern): the same steps, the same states to rounding.
    let n = 48;
    let y0: Vec<f64> = (0..n).map(|i| (i as f64 / 7.0).sin()).collect();
    let mut ends = Vec::new();
    for declare in [true, false] {
        let mut stepper = ImplicitStepper::new(&KVAERNO5, 1e-8, 1e-8, f64::INFINITY).unwrap();
        let mut rhs = Chain::new(n, declare);
        stepper.start(&mut rhs, 0.0, &y0).unwrap();
        assert_eq!(stepper.matrix.is_sparse(), declare);
        while stepper.time() < 1.0 {
            stepper.step(&mut rhs, 1.0).unwrap();
        }
        ends.push((stepper.counters(), stepper.state().to_vec()));
    }
    assert_eq!(ends[0].0, ends[1].0);
    let gap = ends[0]
        .1
        .iter()
        .zip(&ends[1].1)
        .map(|(a, b)| (a - b).abs())
        .fold(0.0, f64::max);
    assert!(gap < 1e-13, "{gap:e}");
}

/// [`StiffLinear`] with its sensitivities to the initial state carried
/// after it (`Z' = A Z`, two blocks of two), declaring its Jacobian
/// constant or not.
struct Variational {
    constant: bool,
}
impl Variational {
    fn rate(y: &[f64], dydt: &mut [f64]) {
        dydt[0] = -1000.0 * y[0] + 999.0 * y[1];
        dydt[1] = -y[1];
    }
}
impl OdeRhs for Variational {
    fn dim(&self) -> usize {
        6
    }
    fn closed_dim(&self) -> usize {
        2
    }
    fn eval(&mut self, _t: f64, y: &[f64], dydt: &mut [f64]) {
        for (block, rate) in y.chunks_exact(2).zip(dydt.chunks_exact_mut(2)) {
            Self::rate(block, rate);
        }
    }
    fn eval_closed(&mut self, _t: f64, y: &[f64], dydt: &mut [f64]) {
        Self::rate(y, dydt);
    }
    fn jacobian(&mut self, _t: f64, _y: &[f64], jacobian: &mut [f64]) -> bool {
        jacobian.copy_from_slice(&[-1000.0, 0.0, 999.0, -1.0]);
        true
    }
    fn jacobian_is_constant(&mut self) -> bool {
        self.constant
    }
}

/// The implicit stages of `steps` accepted Kvaerno 5(4) steps.
fn stages_of(steps: usize) -> usize {
    (KVAERNO5.stages() - 1) * steps
}

#[test]
fn a_declared_constant_jacobian_gives_the_run_without_it() {
    // Reference: the same run evaluating and factorising the Jacobian at
    // every stage (no declaration), and the closed form: for a linear flow
    // the matrices are the same, so the same steps and states close to
    // each other, with one Jacobian a start and one factorisation a step
    // size, shared by the Newton iteration and the sensitivities, instead
    // of one of each a stage.
    let mut ends = Vec::new();
    for constant in [true, false] {
        let mut stepper = ImplicitStepper::new(&KVAERNO5, 1e-8, 1e-8, f64::INFINITY).unwrap();
        let mut rhs = Variational { constant };
        stepper
            .start(&mut rhs, 0.0, &[2.0, 1.0, 1.0, 0.0, 0.0, 1.0])
            .unwrap();
        let mut steps = 0;
        while stepper.time() < 2.0 {
            stepper.step(&mut rhs, 2.0).unwrap();
            steps += 1;
        }
        ends.push((
            stepper.counters(),
            stepper.state().to_vec(),
            stepper.newton_stats(),
            steps,
        ));
    }
    let (with, without) = (&ends[0], &ends[1]);
    // The same steps; fewer flow evaluations with the declaration (its
    // Newton matrix is factorised at each step's `h gamma`, so the affine
    // stage is solved by one increment; the bound below allows two).
    assert_eq!(with.3, without.3);
    assert_eq!(with.0.rejected_steps, without.0.rejected_steps);
    assert!(
        with.0.rhs_evaluations < without.0.rhs_evaluations,
        "{:?} vs {:?}",
        with.0,
        without.0
    );
    // One increment a stage once the segment's first stage has shown the
    // declaration (its check iteration: one more), rejected steps included.
    let attempts = with.3 + with.0.rejected_steps;
    assert!(with.2.iterations <= stages_of(attempts) + 1, "{:?}", with.2);
    let gap = with
        .1
        .iter()
        .zip(&without.1)
        .map(|(a, b)| (a - b).abs())
        .fold(0.0, f64::max);
    // Not the same run to rounding: the filtered error estimate
    // `(I - h gamma J)^{-1} err` uses the Newton matrix, factorised at the
    // step's own `h gamma` with the declaration and within a fifth of it
    // without, so the step sizes differ by a little; both runs follow the
    // closed form, y(2) = ((a - b) e^-2000 + b e^-2, b e^-2) from (a, b) =
    // (2, 1), to their tolerance, and each other to a hundredth of it.
    assert!(gap < 1e-10, "{gap:e}");
    let e = (-2.0f64).exp();
    for end in [&with.1, &without.1] {
        for (got, want) in end[..2].iter().zip([e, e]) {
            assert!((got - want).abs() < 2e-8, "{:?}", &end[..2]);
        }
    }
    // Without: a Jacobian and a factorisation per implicit stage (six a
    // step) besides the Newton matrix's; with: one Jacobian in all and at
    // most one factorisation a step.
    let stages = stages_of(with.3);
    assert!(without.2.jacobians >= stages, "{:?}", without.2);
    assert!(
        with.2.jacobians < without.2.jacobians - stages + 2,
        "{:?}",
        with.2
    );
    assert!(
        with.2.factorisations <= without.2.factorisations - stages + with.3,
        "{:?} vs {:?}",
        with.2,
        without.2
    );
    // The sensitivities against the matrix exponential: from (a, b),
    // y = ((a - b) e^-1000t + b e^-t, b e^-t), so dy/da = (e^-1000t, 0)
    // and dy/db = (e^-t - e^-1000t, e^-t) (to the run's tolerance).
    let e = (-2.0f64).exp();
    let want = [0.0, 0.0, e, e];
    for (got, want) in with.1[2..].iter().zip(want) {
        assert!((got - want).abs() < 1e-6, "{:?}", &with.1[2..]);
    }
}

use crate::explicit_rk::FIRST_MAX_FACTOR;
use crate::stepper::test_flows::Flight;

/// The step after a segment's first (Hairer's starting rule, taken at a
/// run's start and again at every segment's) grows past the usual cap when
/// its error allows, up to [`FIRST_MAX_FACTOR`], the next by [`MAX_FACTOR`]
/// at most; a new segment from the state reached takes the larger cap
/// again.
#[rstest]
#[case::trbdf2(&TRBDF2)]
#[case::kvaerno3(&KVAERNO3)]
#[case::kvaerno5(&KVAERNO5)]
fn the_step_after_a_segments_first_grows_past_the_usual_cap(
    #[case] tableau: &'static EsdirkTableau,
) {
    let mut stepper = ImplicitStepper::new(tableau, 1e-8, 1e-8, f64::INFINITY).unwrap();
    let mut y = [1.0, 0.0];
    let mut t = 0.0;
    for segment in 0..2 {
        stepper.start(&mut Flight, t, &y).unwrap();
        let mut h = [0.0; 3];
        for h in &mut h {
            stepper.step(&mut Flight, 1e6).unwrap();
            *h = stepper.step_size();
        }
        assert!(h[1] > MAX_FACTOR * h[0], "segment {segment}: steps {h:?}");
        assert!(
            h[1] <= FIRST_MAX_FACTOR * h[0],
            "segment {segment}: steps {h:?}"
        );
        assert!(h[2] <= MAX_FACTOR * h[1], "segment {segment}: steps {h:?}");
        t = stepper.time();
        y = [stepper.state()[0], stepper.state()[1]];
    }
}
