//! The explicit Runge-Kutta methods as objects: tableau, error weights,
//! dense-output coefficients and the stage evaluation, kept in one place so
//! that the stepper and the discrete adjoint (ia-adjoint) use the same
//! numbers and the same arithmetic.

/// How a method interpolates inside a step.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum DenseOutput {
    /// Cubic Hermite through both ends and their rates (third order).
    Hermite,
    /// Dormand-Prince's continuous extension (Hairer, Norsett, Wanner):
    /// weights on the stage rates and the end rate, one per stage plus one.
    DormandPrince(&'static [f64]),
}

/// An explicit Runge-Kutta method: stages `K_i = f(t + c_i h, y + h sum_j a_ij K_j)`,
/// solution `y + h sum_i b_i K_i` over the first `solution_stages` stages.
///
/// A method built by hand is checked by [`ButcherTableau::validate`] when a
/// stepper is made of it ([`crate::RkStepper::new`]); every method that
/// passes is one the discrete adjoint transposes exactly.
///
/// ```
/// use ia_events::tableau::{ButcherTableau, DenseOutput, RK4};
/// assert!(RK4.validate().is_ok());
/// static MIDPOINT: ButcherTableau = ButcherTableau {
///     name: "midpoint", a: &[&[], &[0.5]], b: &[0.0, 1.0], c: &[0.0, 0.5], order: 2,
///     error: None, dense: DenseOutput::Hermite,
/// };
/// assert!(MIDPOINT.validate().is_ok());
/// ```
#[derive(Debug)]
pub struct ButcherTableau {
    /// Method name.
    pub name: &'static str,
    /// Strictly lower-triangular coefficients, row `i` has `i` entries.
    pub a: &'static [&'static [f64]],
    /// Solution weights, one per solution stage.
    pub b: &'static [f64],
    /// Stage times as fractions of the step.
    pub c: &'static [f64],
    /// Classical order of the solution.
    pub order: u32,
    /// Weights of the embedded error estimate `h sum_i e_i K_i` over the
    /// stage rates and the end rate (one per stage plus one); `None` for a
    /// method without one, which runs with fixed steps only.
    pub error: Option<&'static [f64]>,
    /// The continuous extension.
    pub dense: DenseOutput,
}

impl ButcherTableau {
    /// Checks the method's shape and consistency: `a` strictly lower
    /// triangular with one row per stage, `c` and `b` one entry per stage,
    /// each row of `a` summing to its `c`, `b` summing to one, error weights
    /// and dense-output weights one per stage plus one. The message says
    /// what is wrong.
    pub fn validate(&self) -> Result<(), String> {
        let s = self.b.len();
        let name = self.name;
        let fail = |why: String| Err(format!("Runge-Kutta method '{name}': {why}"));
        if s == 0 || self.a.len() != s || self.c.len() != s {
            return fail(format!(
                "a, b and c must have one entry per stage ({} rows of a, {} of b, {} of c)",
                self.a.len(),
                s,
                self.c.len()
            ));
        }
        for (i, (row, c)) in self.a.iter().zip(self.c).enumerate() {
            if row.len() != i {
                return fail(format!(
                    "row {i} of a has {} entries; an explicit method's row i has i",
                    row.len()
                ));
            }
            if (row.iter().sum::<f64>() - c).abs() > 1e-12 {
                return fail(format!("row {i} of a does not sum to c[{i}] = {c}"));
            }
        }
        if (self.b.iter().sum::<f64>() - 1.0).abs() > 1e-12 {
            return fail("the weights b do not sum to 1".into());
        }
        if let Some(e) = self.error {
            if e.len() != s + 1 {
                return fail(format!(
                    "{} error weights; the method needs {}",
                    e.len(),
                    s + 1
                ));
            }
        }
        if let DenseOutput::DormandPrince(d) = self.dense {
            if d.len() != s + 1 {
                return fail(format!(
                    "{} dense-output weights; the method needs {}",
                    d.len(),
                    s + 1
                ));
            }
        }
        Ok(())
    }

    /// The solution of one step: `y0 + h sum_i b_i K_i` into `y1`, from the
    /// stage rates in `k` (stage `i` at `k[i n..]`). The stepper and the
    /// adjoint's replay of a step (checkpointing) both form it here, so the
    /// replayed state is the stepped one to the last bit.
    pub fn solution(&self, h: f64, y0: &[f64], k: &[f64], y1: &mut [f64]) {
        weighted_sum(h, Some(y0), self.b, k, y0.len(), y1);
    }

    /// The stage rates of one step of size `h` from `(t0, y0)`, stages
    /// `from..s` (the earlier ones already in `k`, stage `i` at
    /// `k[i n..(i + 1) n]`): `K_i = f(t0 + c_i h, Y_i)`,
    /// `Y_i = y0 + h sum_{j<i} a_ij K_j`. `stage_states` receives each `Y_i`
    /// at `stage_states[i n..]` when it has room for all `s`, or reuses its
    /// first `n` entries otherwise. Both the stepper and the adjoint's
    /// recomputation of a step call this, so they form the same numbers.
    /// `rate(t, y, out)` writes the right-hand side `f(t, y)` into `out`.
    #[allow(clippy::too_many_arguments)]
    pub fn stages<R: FnMut(f64, &[f64], &mut [f64]) + ?Sized>(
        &self,
        rate: &mut R,
        t0: f64,
        h: f64,
        y0: &[f64],
        from: usize,
        k: &mut [f64],
        stage_states: &mut [f64],
    ) {
        let n = y0.len();
        let keep = stage_states.len() >= self.solution_stages() * n;
        for i in from..self.solution_stages() {
            let offset = if keep { i * n } else { 0 };
            let yi = &mut stage_states[offset..offset + n];
            let (done, rest) = k.split_at_mut(i * n);
            weighted_sum(h, Some(y0), self.a[i], done, n, yi);
            rate(t0 + self.c[i] * h, yi, &mut rest[..n]);
        }
    }

    /// Number of stages that enter the solution.
    pub fn solution_stages(&self) -> usize {
        self.b.len()
    }
}

/// `out = start + h sum_j w_j K_j` over the stages
/// `K_j = k[j stride..j stride + out.len()]` with a nonzero weight (`start`
/// zero when `None`), accumulated stage by stage in order: the rounding
/// every caller relies on (stepper, replay and adjoint form the same bits).
/// A small system is summed component by component (a pass per stage costs
/// more than its arithmetic there); a larger one a stage at a time over
/// contiguous slices.
#[inline(always)]
pub(crate) fn weighted_sum(
    h: f64,
    start: Option<&[f64]>,
    weights: &[f64],
    k: &[f64],
    stride: usize,
    out: &mut [f64],
) {
    let m = out.len();
    if m < COMPONENTWISE_BELOW {
        for (e, o) in out.iter_mut().enumerate() {
            let mut acc = start.map_or(0.0, |y0| y0[e]);
            for (j, &w) in weights.iter().enumerate() {
                if w != 0.0 {
                    acc += h * w * k[j * stride + e];
                }
            }
            *o = acc;
        }
        return;
    }
    match start {
        Some(y0) => out.copy_from_slice(&y0[..m]),
        None => out.fill(0.0),
    }
    for (j, &w) in weights.iter().enumerate() {
        if w != 0.0 {
            let hw = h * w;
            for (o, &kv) in out.iter_mut().zip(&k[j * stride..j * stride + m]) {
                *o += hw * kv;
            }
        }
    }
}

/// Below this many components [`weighted_sum`] loops over the terms of each
/// component (a pass over the components per stage costs more than its
/// arithmetic there).
const COMPONENTWISE_BELOW: usize = 4;

/// The classical fourth-order Runge-Kutta method.
pub static RK4: ButcherTableau = ButcherTableau {
    name: "rk4",
    a: &[&[], &[0.5], &[0.0, 0.5], &[0.0, 0.0, 1.0]],
    b: &[1.0 / 6.0, 1.0 / 3.0, 1.0 / 3.0, 1.0 / 6.0],
    c: &[0.0, 0.5, 0.5, 1.0],
    order: 4,
    error: None,
    dense: DenseOutput::Hermite,
};

/// Dormand-Prince 5(4): the six solution stages. The seventh stage of the
/// embedded pair, `f(t + h, y_new)`, is evaluated by the stepper for the error
/// estimate and the dense output and reused as the next step's first stage.
pub static DOPRI5: ButcherTableau = ButcherTableau {
    name: "dopri5",
    a: &[
        &[],
        &[1.0 / 5.0],
        &[3.0 / 40.0, 9.0 / 40.0],
        &[44.0 / 45.0, -56.0 / 15.0, 32.0 / 9.0],
        &[
            19372.0 / 6561.0,
            -25360.0 / 2187.0,
            64448.0 / 6561.0,
            -212.0 / 729.0,
        ],
        &[
            9017.0 / 3168.0,
            -355.0 / 33.0,
            46732.0 / 5247.0,
            49.0 / 176.0,
            -5103.0 / 18656.0,
        ],
    ],
    b: &[
        35.0 / 384.0,
        0.0,
        500.0 / 1113.0,
        125.0 / 192.0,
        -2187.0 / 6784.0,
        11.0 / 84.0,
    ],
    c: &[0.0, 1.0 / 5.0, 3.0 / 10.0, 4.0 / 5.0, 8.0 / 9.0, 1.0],
    order: 5,
    error: Some(&DOPRI5_ERROR),
    dense: DenseOutput::DormandPrince(&DOPRI5_DENSE),
};

/// Dormand-Prince error weights `b - b_hat` over the seven stages.
const DOPRI5_ERROR: [f64; 7] = [
    71.0 / 57600.0,
    0.0,
    -71.0 / 16695.0,
    71.0 / 1920.0,
    -17253.0 / 339200.0,
    22.0 / 525.0,
    -1.0 / 40.0,
];

/// Coefficients of the Dormand-Prince continuous extension (Hairer, Norsett,
/// Wanner, "Solving ODEs I", dense output of DOPRI5), over the seven stages.
const DOPRI5_DENSE: [f64; 7] = [
    -12715105075.0 / 11282082432.0,
    0.0,
    87487479700.0 / 32700410799.0,
    -10690763975.0 / 1880347072.0,
    701980252875.0 / 199316789632.0,
    -1453857185.0 / 822651844.0,
    69997945.0 / 29380423.0,
];

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use rstest::rstest;

    proptest! {
        /// Both summation orders of `weighted_sum` (component by component
        /// for small systems, stage by stage for larger ones) give, to the
        /// last bit, the reference: `start` plus `(h w_j) K_j` added stage by
        /// stage in order, zero weights skipped (the sign of a zero result
        /// aside).
        #[test]
        fn weighted_sum_is_the_stagewise_sum(
            m in 1usize..12,
            extra in 0usize..3,
            weights in proptest::collection::vec(
                prop_oneof![Just(0.0), -3.0..3.0f64], 0..8),
            values in proptest::collection::vec(-1e3..1e3f64, 8 * 14 + 14),
            h in 1e-6..1.0f64,
            with_start in any::<bool>(),
        ) {
            let stride = m + extra;
            let start = &values[..m];
            let k = &values[m..m + weights.len() * stride];
            let mut expected: Vec<f64> = if with_start { start.to_vec() } else { vec![0.0; m] };
            for (j, &w) in weights.iter().enumerate() {
                if w != 0.0 {
                    for (e, x) in expected.iter_mut().enumerate() {
                        *x += h * w * k[j * stride + e];
                    }
                }
            }
            let mut out = vec![f64::NAN; m];
            weighted_sum(h, with_start.then_some(start), &weights, k, stride, &mut out);
            for (o, x) in out.iter().zip(&expected) {
                prop_assert_eq!(o.to_bits() & !(1 << 63), x.to_bits() & !(1 << 63));
            }
        }
    }

    /// Row sums of `a` equal `c`, and `b` sums to one: the consistency
    /// conditions every Runge-Kutta method satisfies.
    #[rstest]
    #[case(&RK4)]
    #[case(&DOPRI5)]
    fn tableau_is_consistent(#[case] tableau: &ButcherTableau) {
        for (row, c) in tableau.a.iter().zip(tableau.c) {
            assert!((row.iter().sum::<f64>() - c).abs() < 1e-14);
        }
        assert!((tableau.b.iter().sum::<f64>() - 1.0).abs() < 1e-14);
        assert_eq!(tableau.a.len(), tableau.solution_stages());
    }

    #[test]
    fn a_malformed_method_is_refused_with_the_reason() {
        static IMPLICIT: ButcherTableau = ButcherTableau {
            name: "implicit-ish",
            a: &[&[0.5], &[0.5]],
            b: &[0.5, 0.5],
            c: &[0.5, 0.5],
            order: 2,
            error: None,
            dense: DenseOutput::Hermite,
        };
        let err = IMPLICIT.validate().unwrap_err();
        assert!(err.contains("row 0 of a has 1 entries"), "{err}");
        static SHORT_ERROR: ButcherTableau = ButcherTableau {
            name: "rk4-short-error",
            a: &[&[], &[0.5], &[0.0, 0.5], &[0.0, 0.0, 1.0]],
            b: &[1.0 / 6.0, 1.0 / 3.0, 1.0 / 3.0, 1.0 / 6.0],
            c: &[0.0, 0.5, 0.5, 1.0],
            order: 4,
            error: Some(&[1.0]),
            dense: DenseOutput::Hermite,
        };
        let err = SHORT_ERROR.validate().unwrap_err();
        assert!(err.contains("1 error weights; the method needs 5"), "{err}");
        assert!(RK4.validate().is_ok() && DOPRI5.validate().is_ok());
    }

    #[test]
    fn dopri5_error_weights_sum_to_zero() {
        assert!(DOPRI5_ERROR.iter().sum::<f64>().abs() < 1e-15);
    }
}
