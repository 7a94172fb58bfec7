//! Butcher tableaus of the explicit Runge-Kutta methods, kept in one place so
//! that the stepper and the discrete adjoint (ia-adjoint) use the same numbers.

/// An explicit Runge-Kutta method: stages `K_i = f(t + c_i h, y + h sum_j a_ij K_j)`,
/// solution `y + h sum_i b_i K_i` over the first `solution_stages` stages.
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
}

impl ButcherTableau {
    /// Number of stages that enter the solution.
    pub fn solution_stages(&self) -> usize {
        self.b.len()
    }
}

/// The classical fourth-order Runge-Kutta method.
pub static RK4: ButcherTableau = ButcherTableau {
    name: "rk4",
    a: &[&[], &[0.5], &[0.0, 0.5], &[0.0, 0.0, 1.0]],
    b: &[1.0 / 6.0, 1.0 / 3.0, 1.0 / 3.0, 1.0 / 6.0],
    c: &[0.0, 0.5, 0.5, 1.0],
    order: 4,
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
};

/// Dormand-Prince error weights `b - b_hat` over the seven stages.
pub(crate) const DOPRI5_ERROR: [f64; 7] = [
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
pub(crate) const DOPRI5_DENSE: [f64; 7] = [
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
    use rstest::rstest;

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
    fn dopri5_error_weights_sum_to_zero() {
        assert!(DOPRI5_ERROR.iter().sum::<f64>().abs() < 1e-15);
    }
}
