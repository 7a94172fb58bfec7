//! The ESDIRK methods as objects: coefficients, error weights and orders,
//! kept in one place so that the stepper and the discrete adjoint
//! (ia-adjoint) use the same numbers. The coefficients are written with
//! the digits their sources publish.
#![allow(clippy::excessive_precision)]

/// A stiffly accurate ESDIRK method (explicit first stage, then stages with
/// the one diagonal coefficient `gamma`):
///
/// ```text
/// Y_1 = y_0,   Y_i = y_0 + h sum_{j<i} a_ij K_j + h gamma K_i,   K_i = f(t_0 + c_i h, Y_i),
/// y_1 = Y_s
/// ```
///
/// (stiffly accurate: the weights `b` are the last row of `a` with `gamma`,
/// so the solution is the last stage). The embedded solution is
/// `y_1 - h sum_j e_j K_j`, so `h sum_j e_j K_j` estimates the local error.
///
/// ```
/// use ia_events::implicit_rk::{KVAERNO5, TRBDF2};
/// assert!(KVAERNO5.validate().is_ok());
/// assert_eq!(TRBDF2.stages(), 3);
/// ```
#[derive(Debug)]
pub struct EsdirkTableau {
    /// Method name, as in the [`crate::SolverChoice`] that runs it.
    pub name: &'static str,
    /// The diagonal coefficient of the implicit stages.
    pub gamma: f64,
    /// The coefficients below the diagonal: row `i` has `i` entries (row 0,
    /// the explicit first stage, none).
    pub a: &'static [&'static [f64]],
    /// Stage times as fractions of the step (`c_1 = 0`, `c_s = 1`).
    pub c: &'static [f64],
    /// Error weights `e = b - b_hat`, one per stage.
    pub error: &'static [f64],
    /// Classical order of the solution.
    pub order: u32,
    /// Classical order of the embedded solution.
    pub embedded_order: u32,
}

impl EsdirkTableau {
    /// Number of stages `s`, the explicit first one included.
    pub fn stages(&self) -> usize {
        self.c.len()
    }

    /// The power of `h` the error estimate scales with:
    /// `min(order, embedded_order) + 1`.
    pub fn error_order(&self) -> u32 {
        self.order.min(self.embedded_order) + 1
    }

    /// Entry `(i, j)` of the full coefficient matrix, the diagonal
    /// included (`a_11 = 0`: the first stage is explicit).
    pub fn coefficient(&self, i: usize, j: usize) -> f64 {
        if j < i {
            self.a[i][j]
        } else if j == i && i > 0 {
            self.gamma
        } else {
            0.0
        }
    }

    /// Checks the shape and consistency: one row of `a`, one `c` and one
    /// error weight per stage, row `i` of `a` of length `i`, each row of the
    /// full matrix summing to its `c`, `c_1 = 0` and `c_s = 1`, error
    /// weights summing to zero. The message says what is wrong.
    pub fn validate(&self) -> Result<(), String> {
        let s = self.c.len();
        let name = self.name;
        let fail = |why: String| Err(format!("ESDIRK method '{name}': {why}"));
        if s < 2 || self.a.len() != s || self.error.len() != s {
            return fail(format!(
                "a, c and the error weights must have one entry per stage, at least two ({} rows of a, {} of c, {} error weights)",
                self.a.len(),
                s,
                self.error.len()
            ));
        }
        if self.gamma.is_nan() || self.gamma <= 0.0 {
            return fail(format!("gamma must be positive, got {}", self.gamma));
        }
        for (i, (row, &c)) in self.a.iter().zip(self.c).enumerate() {
            if row.len() != i {
                return fail(format!("row {i} of a has {} entries, not {i}", row.len()));
            }
            let sum: f64 = (0..s).map(|j| self.coefficient(i, j)).sum();
            if (sum - c).abs() > 1e-12 {
                return fail(format!("row {i} of a does not sum to c[{i}] = {c}"));
            }
        }
        if self.c[0] != 0.0 || self.c[s - 1] != 1.0 {
            return fail("c must start at 0 and end at 1 (stiffly accurate)".into());
        }
        if self.error.iter().sum::<f64>().abs() > 1e-12 {
            return fail("the error weights must sum to zero".into());
        }
        Ok(())
    }
}

const SQRT2: f64 = std::f64::consts::SQRT_2;
const TRBDF2_GAMMA: f64 = 1.0 - SQRT2 / 2.0;
const TRBDF2_W: f64 = SQRT2 / 4.0;

/// TR-BDF2 (Bank et al. 1985, in the ESDIRK form of Hosea and Shampine,
/// "Analysis and implementation of TR-BDF2", 1996): a trapezoidal stage to
/// `c = 2 - sqrt 2`, then BDF2; second order, L-stable, with an embedded
/// third-order estimate. Coefficients as in Diffrax (`_trbdf2_tableau`)
/// and Hosea and Shampine's paper.
pub static TRBDF2: EsdirkTableau = EsdirkTableau {
    name: "trbdf2",
    gamma: TRBDF2_GAMMA,
    a: &[&[], &[TRBDF2_GAMMA], &[TRBDF2_W, TRBDF2_W]],
    c: &[0.0, 2.0 - SQRT2, 1.0],
    error: &[
        TRBDF2_W - (1.0 - TRBDF2_W) / 3.0,
        TRBDF2_W - (3.0 * TRBDF2_W + 1.0) / 3.0,
        TRBDF2_GAMMA - TRBDF2_GAMMA / 3.0,
    ],
    order: 2,
    embedded_order: 3,
};

/// `gamma` of Kvaerno 3(2): the root of `6 g^3 - 18 g^2 + 9 g - 1` near
/// 0.4359 (the L-stable SDIRK3 value, Hairer and Wanner IV.6).
const K3_G: f64 = 0.435_866_521_508_458_999_416_019_451_193_556_843;
const K3_A31: f64 = (-4.0 * K3_G * K3_G + 6.0 * K3_G - 1.0) / (4.0 * K3_G);
const K3_A32: f64 = (-2.0 * K3_G + 1.0) / (4.0 * K3_G);
const K3_A41: f64 = (6.0 * K3_G - 1.0) / (12.0 * K3_G);
const K3_A42: f64 = -1.0 / ((24.0 * K3_G - 12.0) * K3_G);
const K3_A43: f64 = (-6.0 * K3_G * K3_G + 6.0 * K3_G - 1.0) / (6.0 * K3_G - 3.0);

/// Kvaerno's 3(2) ESDIRK (A. Kvaerno, "Singly diagonally implicit
/// Runge-Kutta methods with an explicit first stage", BIT 44, 2004): four
/// stages, third order, L-stable, stiffly accurate, with an embedded
/// second-order solution (its third stage). Coefficients as in Diffrax
/// (`kvaerno3.py`), in closed form in `gamma`.
pub static KVAERNO3: EsdirkTableau = EsdirkTableau {
    name: "kvaerno3",
    gamma: K3_G,
    a: &[&[], &[K3_G], &[K3_A31, K3_A32], &[K3_A41, K3_A42, K3_A43]],
    c: &[0.0, 2.0 * K3_G, 1.0, 1.0],
    error: &[K3_A41 - K3_A31, K3_A42 - K3_A32, K3_A43 - K3_G, K3_G],
    order: 3,
    embedded_order: 2,
};

const K5_G: f64 = 0.26;
const K5_A61: f64 = 0.138_556_402_312_682_24;
const K5_A63: f64 = -0.042_453_372_017_520_43;
const K5_A64: f64 = 0.024_466_578_980_031_41;
const K5_A65: f64 = 0.619_430_390_724_806_76;
const K5_A71: f64 = 0.136_597_511_776_402_91;
const K5_A73: f64 = -0.054_969_087_965_383_76;
const K5_A74: f64 = -0.041_186_267_283_210_46;
const K5_A75: f64 = 0.629_933_048_990_164_03;
const K5_A76: f64 = 0.069_624_794_482_027_28;

/// Kvaerno's 5(4) ESDIRK (Kvaerno 2004): seven stages, fifth order,
/// L-stable, stiffly accurate, with an embedded fourth-order solution (its
/// sixth stage). Coefficients as in Diffrax (`kvaerno5.py`) and
/// OrdinaryDiffEq.jl (`Kvaerno5Tableau`), which agree to every digit.
pub static KVAERNO5: EsdirkTableau = EsdirkTableau {
    name: "kvaerno5",
    gamma: K5_G,
    a: &[
        &[],
        &[K5_G],
        &[0.13, 0.840_333_209_967_908_09],
        &[
            0.223_719_614_783_205_05,
            0.476_755_323_197_996_99,
            -0.064_708_953_631_126_15,
        ],
        &[
            0.166_485_643_232_483_21,
            0.104_500_188_415_917_20,
            0.036_314_822_720_987_15,
            -0.130_907_044_510_739_98,
        ],
        &[K5_A61, 0.0, K5_A63, K5_A64, K5_A65],
        &[K5_A71, 0.0, K5_A73, K5_A74, K5_A75, K5_A76],
    ],
    c: &[
        0.0,
        0.52,
        1.230_333_209_967_908,
        0.895_765_984_350_075_9,
        0.436_393_609_858_647_56,
        1.0,
        1.0,
    ],
    error: &[
        K5_A71 - K5_A61,
        0.0,
        K5_A73 - K5_A63,
        K5_A74 - K5_A64,
        K5_A75 - K5_A65,
        K5_A76 - K5_G,
        K5_G,
    ],
    order: 5,
    embedded_order: 4,
};

/// Every built-in ESDIRK method.
pub static ESDIRK_METHODS: [&EsdirkTableau; 3] = [&TRBDF2, &KVAERNO3, &KVAERNO5];

#[cfg(test)]
mod tests {
    use super::*;
    use rstest::rstest;

    /// The Butcher order conditions up to order five, as
    /// `(order, value for weights w, exact value)` (Hairer, Norsett,
    /// Wanner, "Solving ODEs I", II.2, Table 2.2: one per rooted tree).
    fn order_conditions(t: &EsdirkTableau, w: &[f64]) -> Vec<(u32, f64, f64)> {
        let s = t.stages();
        let a = |i: usize, j: usize| t.coefficient(i, j);
        let c = t.c;
        let mat = |v: &[f64]| -> Vec<f64> {
            (0..s)
                .map(|i| (0..s).map(|j| a(i, j) * v[j]).sum())
                .collect()
        };
        let pow = |k: i32| -> Vec<f64> { c.iter().map(|x| x.powi(k)).collect() };
        let mul =
            |u: &[f64], v: &[f64]| -> Vec<f64> { u.iter().zip(v).map(|(x, y)| x * y).collect() };
        let dot = |v: &[f64]| -> f64 { w.iter().zip(v).map(|(x, y)| x * y).sum() };
        let ones = vec![1.0; s];
        let ac = mat(c);
        let ac2 = mat(&pow(2));
        let aac = mat(&ac);
        vec![
            (1, dot(&ones), 1.0),
            (2, dot(c), 0.5),
            (3, dot(&pow(2)), 1.0 / 3.0),
            (3, dot(&ac), 1.0 / 6.0),
            (4, dot(&pow(3)), 0.25),
            (4, dot(&mul(c, &ac)), 1.0 / 8.0),
            (4, dot(&ac2), 1.0 / 12.0),
            (4, dot(&aac), 1.0 / 24.0),
            (5, dot(&pow(4)), 0.2),
            (5, dot(&mul(&pow(2), &ac)), 0.1),
            (5, dot(&mul(c, &ac2)), 1.0 / 15.0),
            (5, dot(&mul(c, &aac)), 1.0 / 30.0),
            (5, dot(&mul(&ac, &ac)), 1.0 / 20.0),
            (5, dot(&mat(&pow(3))), 1.0 / 20.0),
            (5, dot(&mat(&mul(c, &ac))), 1.0 / 40.0),
            (5, dot(&mat(&ac2)), 1.0 / 60.0),
            (5, dot(&mat(&aac)), 1.0 / 120.0),
        ]
    }

    fn weights(t: &EsdirkTableau) -> (Vec<f64>, Vec<f64>) {
        let s = t.stages();
        let b: Vec<f64> = (0..s).map(|j| t.coefficient(s - 1, j)).collect();
        let b_hat = b.iter().zip(t.error).map(|(b, e)| b - e).collect();
        (b, b_hat)
    }

    #[rstest]
    #[case::trbdf2(&TRBDF2)]
    #[case::kvaerno3(&KVAERNO3)]
    #[case::kvaerno5(&KVAERNO5)]
    fn each_method_has_its_orders(#[case] t: &EsdirkTableau) {
        // Reference: the order conditions of the rooted trees (Hairer,
        // Norsett, Wanner): the solution meets every condition up to its
        // order and misses one of the next; the embedded solution likewise.
        t.validate().unwrap();
        let (b, b_hat) = weights(t);
        for (w, order, what) in [
            (&b, t.order, "solution"),
            (&b_hat, t.embedded_order, "embedded"),
        ] {
            let conditions = order_conditions(t, w);
            for &(o, got, want) in conditions.iter().filter(|c| c.0 <= order) {
                assert!(
                    (got - want).abs() < 1e-13,
                    "{} {what}: order {o}: {got} vs {want}",
                    t.name
                );
            }
            if order < 5 {
                let missed = conditions
                    .iter()
                    .filter(|c| c.0 == order + 1)
                    .any(|&(_, got, want)| (got - want).abs() > 1e-6);
                assert!(missed, "{} {what} is of order above {order}", t.name);
            }
        }
    }

    #[test]
    fn a_malformed_method_is_refused_with_the_reason() {
        static BAD: EsdirkTableau = EsdirkTableau {
            name: "bad",
            gamma: 0.5,
            a: &[&[], &[0.5]],
            c: &[0.0, 0.9],
            error: &[0.0, 0.0],
            order: 1,
            embedded_order: 1,
        };
        let err = BAD.validate().unwrap_err();
        assert!(err.contains("row 1 of a does not sum"), "{err}");
    }
}
