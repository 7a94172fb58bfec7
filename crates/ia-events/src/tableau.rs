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
    /// DOP853's seventh-order continuous extension (Hairer, Norsett,
    /// Wanner, `contd8`): three more stages, evaluated only for a step that
    /// is interpolated, and four rows of weights.
    Dop853(&'static ExtraStages),
}

impl DenseOutput {
    /// The rows of weights `d_m` on the rate blocks that the polynomial
    /// extensions add to their cubic part (one row for DOPRI5, four for
    /// DOP853; none for Hermite).
    pub fn weight_rows(&self) -> &[&'static [f64]] {
        match self {
            DenseOutput::Hermite => &[],
            DenseOutput::DormandPrince(weights) => std::slice::from_ref(weights),
            DenseOutput::Dop853(extra) => extra.d,
        }
    }
}

/// The extra stages and weights of a continuous extension of the DOP853
/// kind. The blocks are numbered as the rates are stored: the `s` solution
/// stages, the end rate `f(t + h, y_1)` (block `s`), then the extra stages.
///
/// Extra stage `i` is `f(t + c_i h, y_0 + h sum_j a_ij K_j)` over the blocks
/// before it; with `r_m = h sum_j d_mj K_j` (`m = 0..4`, over every block),
/// `dy = y_1 - y_0` and `b = h f_0 - dy`, the state at `theta` of the step
/// (`theta_1 = 1 - theta`) is
///
/// ```text
/// y_0 + theta (dy + theta_1 (b + theta (dy - h f_1 - b + theta_1 (
///     r_0 + theta (r_1 + theta_1 (r_2 + theta r_3))))))
/// ```
#[derive(Debug, PartialEq)]
pub struct ExtraStages {
    /// Rows of `a` of the extra stages; row `i` has `s + 1 + i` entries.
    pub a: &'static [&'static [f64]],
    /// Times of the extra stages, as fractions of the step.
    pub c: &'static [f64],
    /// The four rows of weights `d`, one entry per block.
    pub d: &'static [&'static [f64]; 4],
}

/// How a method estimates its local error, from weights on the stage rates
/// (and, where a row is one longer than the stages, the end rate).
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum ErrorEstimate {
    /// One embedded estimate `err_i = h sum_j e_j K_j`; the norm is the RMS of
    /// `err_i / sc_i`, `sc_i = atol + rtol max(|y_0,i|, |y_1,i|)`.
    Embedded(&'static [f64]),
    /// DOP853's pair of estimates of orders five and three, `E_5` and `E_3`
    /// (sums of squares of `sum_j e_j K_j / sc_i`), combined as
    /// `|h| E_5 / sqrt(n (E_5 + 0.01 E_3))`: an estimate that scales as
    /// `h^8` (Hairer, Norsett, Wanner, "Solving ODEs I", II.10).
    Corrected {
        /// Weights of the fifth-order estimate.
        fifth: &'static [f64],
        /// Weights of the third-order estimate.
        third: &'static [f64],
    },
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
    /// The error estimate; `None` for a method without one, which runs with
    /// fixed steps only.
    pub error: Option<ErrorEstimate>,
    /// The continuous extension.
    pub dense: DenseOutput,
}

impl ButcherTableau {
    /// Checks the method's shape and consistency: `a` strictly lower
    /// triangular with one row per stage, `c` and `b` one entry per stage,
    /// each row of `a` summing to its `c`, `b` summing to one, error weights
    /// one per stage (plus one for the end rate), dense-output weights one
    /// per rate block ([`ButcherTableau::rate_blocks`]), and the extra
    /// dense-output stages' rows of the right length, summing to their
    /// times. The message says what is wrong.
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
        let error_rows: &[&[f64]] = match &self.error {
            None => &[],
            Some(ErrorEstimate::Embedded(e)) => &[e],
            Some(ErrorEstimate::Corrected { fifth, third }) => &[fifth, third],
        };
        for e in error_rows {
            if e.len() != s && e.len() != s + 1 {
                return fail(format!(
                    "{} error weights; the method needs {} (or {} with the end rate)",
                    e.len(),
                    s,
                    s + 1
                ));
            }
        }
        let blocks = self.rate_blocks();
        if let Some(row) = self.dense.weight_rows().iter().find(|r| r.len() != blocks) {
            return fail(format!(
                "{} dense-output weights; the method needs {blocks}",
                row.len()
            ));
        }
        if let DenseOutput::Dop853(extra) = self.dense {
            if extra.c.len() != extra.a.len() {
                return fail("the extra dense-output stages need one time each".into());
            }
            for (i, (row, c)) in extra.a.iter().zip(extra.c).enumerate() {
                if row.len() != s + 1 + i {
                    return fail(format!(
                        "row {i} of the extra dense-output stages has {} entries; it needs {}",
                        row.len(),
                        s + 1 + i
                    ));
                }
                if (row.iter().sum::<f64>() - c).abs() > 1e-12 {
                    return fail(format!(
                        "row {i} of the extra dense-output stages does not sum to its time {c}"
                    ));
                }
            }
        }
        Ok(())
    }

    /// The solution of one step: `y0 + h sum_i b_i K_i` into `y1`, from the
    /// stage rates in `k` (stage `i` at `k[i n..]`). The stepper and the
    /// adjoint's replay of a step (checkpointing) both form it here, so the
    /// replayed state is the stepped one to the last bit.
    #[inline(always)]
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
    #[inline(always)]
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

    /// Number of rate blocks a stepper keeps per step: the solution stages,
    /// the end rate, and the extra stages of the continuous extension.
    pub fn rate_blocks(&self) -> usize {
        let extra = match self.dense {
            DenseOutput::Dop853(extra) => extra.a.len(),
            DenseOutput::Hermite | DenseOutput::DormandPrince(_) => 0,
        };
        self.solution_stages() + 1 + extra
    }
}

/// `out = start + h sum_j w_j K_j` over the stages
/// `K_j = k[j stride..j stride + out.len()]` with a nonzero weight (`start`
/// zero when `None`), accumulated stage by stage in order: the rounding
/// every caller relies on (stepper, replay and adjoint form the same bits).
/// Up to [`SUMMED_IN_REGISTERS`] components the partial sums stay in
/// registers ([`weighted_sum_fixed`]: a one-state system's forward
/// sensitivities, seven components, spent most of a step storing and
/// loading them); a larger system is summed a stage at a time over
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
    match m {
        1 => return weighted_sum_fixed::<1>(h, start, weights, k, stride, out),
        2 => return weighted_sum_fixed::<2>(h, start, weights, k, stride, out),
        3 => return weighted_sum_fixed::<3>(h, start, weights, k, stride, out),
        4 => return weighted_sum_fixed::<4>(h, start, weights, k, stride, out),
        5 => return weighted_sum_fixed::<5>(h, start, weights, k, stride, out),
        6 => return weighted_sum_fixed::<6>(h, start, weights, k, stride, out),
        7 => return weighted_sum_fixed::<7>(h, start, weights, k, stride, out),
        SUMMED_IN_REGISTERS => {
            return weighted_sum_fixed::<SUMMED_IN_REGISTERS>(h, start, weights, k, stride, out)
        }
        _ => {}
    }
    match start {
        Some(y0) => out.copy_from_slice(&y0[..m]),
        None => out.fill(0.0),
    }
    add_stages(h, weights, k, stride, out);
}

/// `sum += h w_j K_j` for each stage with a nonzero weight, in order (the
/// stages of `k` at `stride`, `sum.len()` components each).
#[inline(always)]
fn add_stages(h: f64, weights: &[f64], k: &[f64], stride: usize, sum: &mut [f64]) {
    let m = sum.len();
    for (j, &w) in weights.iter().enumerate() {
        if w != 0.0 {
            let hw = h * w;
            for (s, &kv) in sum.iter_mut().zip(&k[j * stride..j * stride + m]) {
                *s += hw * kv;
            }
        }
    }
}

/// The most components [`weighted_sum`] keeps in registers.
const SUMMED_IN_REGISTERS: usize = 8;

/// [`weighted_sum`] of exactly `M` components, the partial sums in
/// registers: the same additions in the same order as a pass per stage,
/// without storing and loading each partial sum at every stage.
#[inline(always)]
fn weighted_sum_fixed<const M: usize>(
    h: f64,
    start: Option<&[f64]>,
    weights: &[f64],
    k: &[f64],
    stride: usize,
    out: &mut [f64],
) {
    let mut sum = [0.0; M];
    if let Some(y0) = start {
        sum.copy_from_slice(&y0[..M]);
    }
    add_stages(h, weights, k, stride, &mut sum);
    out.copy_from_slice(&sum);
}

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
    error: Some(ErrorEstimate::Embedded(&DOPRI5_ERROR)),
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

/// Dormand and Prince's 8(5,3) pair with its seventh-order continuous
/// extension, as in Hairer's `DOP853` (Hairer, Norsett, Wanner, "Solving ODEs I",
/// II.10; the coefficients of the `ode_solvers` crate's copy of it). Twelve
/// stages a step, three more for a step that is interpolated: for long
/// smooth runs at tight tolerances, where its steps are several times longer
/// than DOPRI5's.
// The published digits, kept as printed.
#[allow(clippy::excessive_precision)]
pub static DOP853: ButcherTableau = ButcherTableau {
    name: "dop853",
    a: &[
        &[],
        &[5.26001519587677318785587544488E-2],
        &[
            1.97250569845378994544595329183E-2,
            5.91751709536136983633785987549E-2,
        ],
        &[
            2.95875854768068491816892993775E-2,
            0.0,
            8.87627564304205475450678981324E-2,
        ],
        &[
            2.41365134159266685502369798665E-1,
            0.0,
            -8.84549479328286085344864962717E-1,
            9.24834003261792003115737966543E-1,
        ],
        &[
            3.7037037037037037037037037037E-2,
            0.0,
            0.0,
            1.70828608729473871279604482173E-1,
            1.25467687566822425016691814123E-1,
        ],
        &[
            3.7109375E-2,
            0.0,
            0.0,
            1.70252211019544039314978060272E-1,
            6.02165389804559606850219397283E-2,
            -1.7578125E-2,
        ],
        &[
            3.70920001185047927108779319836E-2,
            0.0,
            0.0,
            1.70383925712239993810214054705E-1,
            1.07262030446373284651809199168E-1,
            -1.53194377486244017527936158236E-2,
            8.27378916381402288758473766002E-3,
        ],
        &[
            6.24110958716075717114429577812E-1,
            0.0,
            0.0,
            -3.36089262944694129406857109825E0,
            -8.68219346841726006818189891453E-1,
            2.75920996994467083049415600797E1,
            2.01540675504778934086186788979E1,
            -4.34898841810699588477366255144E1,
        ],
        &[
            4.77662536438264365890433908527E-1,
            0.0,
            0.0,
            -2.48811461997166764192642586468E0,
            -5.90290826836842996371446475743E-1,
            2.12300514481811942347288949897E1,
            1.52792336328824235832596922938E1,
            -3.32882109689848629194453265587E1,
            -2.03312017085086261358222928593E-2,
        ],
        &[
            -9.3714243008598732571704021658E-1,
            0.0,
            0.0,
            5.18637242884406370830023853209E0,
            1.09143734899672957818500254654E0,
            -8.14978701074692612513997267357E0,
            -1.85200656599969598641566180701E1,
            2.27394870993505042818970056734E1,
            2.49360555267965238987089396762E0,
            -3.0467644718982195003823669022E0,
        ],
        &[
            2.27331014751653820792359768449E0,
            0.0,
            0.0,
            -1.05344954667372501984066689879E1,
            -2.00087205822486249909675718444E0,
            -1.79589318631187989172765950534E1,
            2.79488845294199600508499808837E1,
            -2.85899827713502369474065508674E0,
            -8.87285693353062954433549289258E0,
            1.23605671757943030647266201528E1,
            6.43392746015763530355970484046E-1,
        ],
    ],
    b: &DOP853_B,
    c: &[
        0.0,
        0.526001519587677318785587544488E-01,
        0.789002279381515978178381316732E-01,
        0.118350341907227396726757197510E+00,
        0.281649658092772603273242802490E+00,
        0.333333333333333333333333333333E+00,
        0.25E+00,
        0.307692307692307692307692307692E+00,
        0.651282051282051282051282051282E+00,
        0.6E+00,
        0.857142857142857142857142857142E+00,
        1.0,
    ],
    order: 8,
    error: Some(ErrorEstimate::Corrected {
        fifth: &DOP853_ERROR_FIFTH,
        third: &DOP853_ERROR_THIRD,
    }),
    dense: DenseOutput::Dop853(&DOP853_DENSE),
};

// The published digits, kept as printed.
#[allow(clippy::excessive_precision)]
const DOP853_B: [f64; 12] = [
    5.42937341165687622380535766363E-2,
    0.0,
    0.0,
    0.0,
    0.0,
    4.45031289275240888144113950566E0,
    1.89151789931450038304281599044E0,
    -5.8012039600105847814672114227E0,
    3.1116436695781989440891606237E-1,
    -1.52160949662516078556178806805E-1,
    2.01365400804030348374776537501E-1,
    4.47106157277725905176885569043E-2,
];

/// `er` of `DOP853`: the fifth-order estimate.
// The published digits, kept as printed.
#[allow(clippy::excessive_precision)]
const DOP853_ERROR_FIFTH: [f64; 12] = [
    0.1312004499419488073250102996E-01,
    0.0,
    0.0,
    0.0,
    0.0,
    -0.1225156446376204440720569753E+01,
    -0.4957589496572501915214079952E+00,
    0.1664377182454986536961530415E+01,
    -0.3503288487499736816886487290E+00,
    0.3341791187130174790297318841E+00,
    0.8192320648511571246570742613E-01,
    -0.2235530786388629525884427845E-01,
];

/// `b - bhh` of `DOP853` (`bhh` on stages 1, 9 and 12): the third-order
/// estimate.
// The published digits, kept as printed.
#[allow(clippy::excessive_precision)]
const DOP853_ERROR_THIRD: [f64; 12] = [
    DOP853_B[0] - 0.244094488188976377952755905512E+00,
    DOP853_B[1],
    DOP853_B[2],
    DOP853_B[3],
    DOP853_B[4],
    DOP853_B[5],
    DOP853_B[6],
    DOP853_B[7],
    DOP853_B[8] - 0.733846688281611857341361741547E+00,
    DOP853_B[9],
    DOP853_B[10],
    DOP853_B[11] - 0.220588235294117647058823529412E-01,
];

// The published digits, kept as printed.
#[allow(clippy::excessive_precision)]
static DOP853_DENSE: ExtraStages = ExtraStages {
    a: &[
        &[
            5.61675022830479523392909219681E-2,
            0.0,
            0.0,
            0.0,
            0.0,
            0.0,
            2.53500210216624811088794765333E-1,
            -2.46239037470802489917441475441E-1,
            -1.24191423263816360469010140626E-1,
            1.5329179827876569731206322685E-1,
            8.20105229563468988491666602057E-3,
            7.56789766054569976138603589584E-3,
            -8.298E-3,
        ],
        &[
            3.18346481635021405060768473261E-2,
            0.0,
            0.0,
            0.0,
            0.0,
            2.83009096723667755288322961402E-2,
            5.35419883074385676223797384372E-2,
            -5.49237485713909884646569340306E-2,
            0.0,
            0.0,
            -1.08347328697249322858509316994E-4,
            3.82571090835658412954920192323E-4,
            -3.40465008687404560802977114492E-4,
            1.41312443674632500278074618366E-1,
        ],
        &[
            -4.28896301583791923408573538692E-1,
            0.0,
            0.0,
            0.0,
            0.0,
            -4.69762141536116384314449447206E0,
            7.68342119606259904184240953878E0,
            4.06898981839711007970213554331E0,
            3.56727187455281109270669543021E-1,
            0.0,
            0.0,
            0.0,
            -1.39902416515901462129418009734E-3,
            2.9475147891527723389556272149E0,
            -9.15095847217987001081870187138E0,
        ],
    ],
    c: &[0.1E+00, 0.2E+00, 0.777777777777777777777777777778E+00],
    d: &[
        &[
            -0.84289382761090128651353491142E+01,
            0.0,
            0.0,
            0.0,
            0.0,
            0.56671495351937776962531783590E+00,
            -0.30689499459498916912797304727E+01,
            0.23846676565120698287728149680E+01,
            0.21170345824450282767155149946E+01,
            -0.87139158377797299206789907490E+00,
            0.22404374302607882758541771650E+01,
            0.63157877876946881815570249290E+00,
            -0.88990336451333310820698117400E-01,
            0.18148505520854727256656404962E+02,
            -0.91946323924783554000451984436E+01,
            -0.44360363875948939664310572000E+01,
        ],
        &[
            0.10427508642579134603413151009E+02,
            0.0,
            0.0,
            0.0,
            0.0,
            0.24228349177525818288430175319E+03,
            0.16520045171727028198505394887E+03,
            -0.37454675472269020279518312152E+03,
            -0.22113666853125306036270938578E+02,
            0.77334326684722638389603898808E+01,
            -0.30674084731089398182061213626E+02,
            -0.93321305264302278729567221706E+01,
            0.15697238121770843886131091075E+02,
            -0.31139403219565177677282850411E+02,
            -0.93529243588444783865713862664E+01,
            0.35816841486394083752465898540E+02,
        ],
        &[
            0.19985053242002433820987653617E+02,
            0.0,
            0.0,
            0.0,
            0.0,
            -0.38703730874935176555105901742E+03,
            -0.18917813819516756882830838328E+03,
            0.52780815920542364900561016686E+03,
            -0.11573902539959630126141871134E+02,
            0.68812326946963000169666922661E+01,
            -0.10006050966910838403183860980E+01,
            0.77771377980534432092869265740E+00,
            -0.27782057523535084065932004339E+01,
            -0.60196695231264120758267380846E+02,
            0.84320405506677161018159903784E+02,
            0.11992291136182789328035130030E+02,
        ],
        &[
            -0.25693933462703749003312586129E+02,
            0.0,
            0.0,
            0.0,
            0.0,
            -0.15418974869023643374053993627E+03,
            -0.23152937917604549567536039109E+03,
            0.35763911791061412378285349910E+03,
            0.93405324183624310003907691704E+02,
            -0.37458323136451633156875139351E+02,
            0.10409964950896230045147246184E+03,
            0.29840293426660503123344363579E+02,
            -0.43533456590011143754432175058E+02,
            0.96324553959188282948394950600E+02,
            -0.39177261675615439165231486172E+02,
            -0.14972683625798562581422125276E+03,
        ],
    ],
};

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use rstest::rstest;

    proptest! {
        /// Both forms of `weighted_sum` (the sums in registers up to eight
        /// components, a pass per stage above) give, to the last bit, the
        /// reference: `start` plus `(h w_j) K_j` added stage by stage in
        /// order, zero weights skipped (the sign of a zero result aside).
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
    #[case(&DOP853)]
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
            error: Some(ErrorEstimate::Embedded(&[1.0])),
            dense: DenseOutput::Hermite,
        };
        let err = SHORT_ERROR.validate().unwrap_err();
        assert!(
            err.contains("1 error weights; the method needs 4 (or 5 with the end rate)"),
            "{err}"
        );
        assert!(RK4.validate().is_ok() && DOPRI5.validate().is_ok() && DOP853.validate().is_ok());
    }

    #[rstest]
    #[case(&DOPRI5_ERROR)]
    #[case(&DOP853_ERROR_FIFTH)]
    #[case(&DOP853_ERROR_THIRD)]
    fn error_weights_sum_to_zero(#[case] weights: &[f64]) {
        // An estimate is a difference of two solutions of the same
        // consistent step (weights summing to one each).
        assert!(weights.iter().sum::<f64>().abs() < 1e-14);
    }
}
