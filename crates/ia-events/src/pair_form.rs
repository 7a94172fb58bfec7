//! The closed form of a 2x2 linear pair, `y' = A y + b`, over a stretch
//! between events ([`ia_core::LinearPair`]), and the first crossing of a
//! level by one of its entries: what the exact solver ([`crate::exact`])
//! runs on for flows made of linear blocks. Re-exported by
//! [`crate::exact`].
//!
//! The formulas are in the documentation of [`PairRates`] (the map)
//! and [`first_crossing`] (the crossing).

use ia_core::Direction;

use crate::pair_convolution::PairConvolutions;

/// The factors of a pair's stretch of length `s`: `e^{A s} = E0 I + E1 N`
/// and `Phi(s) = P0 I + P1 N` (see [`PairRates`]).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct PairFactors {
    /// `E0`.
    pub e0: f64,
    /// `E1`.
    pub e1: f64,
    /// `P0`.
    pub p0: f64,
    /// `P1`.
    pub p1: f64,
}

/// The invariants of a pair's matrix: `m = tr(A) / 2`, `q = d^2` (the
/// rates are `m +- d`), its determinant, and `N = A - m I`.
///
/// # The closed form of a stretch
///
/// With `m = tr(A) / 2`, `N = A - m I` and `q = ((a00 - a11) / 2)^2 + a01 a10`
/// (so `N^2 = q I` and the rates, the eigenvalues of `A`, are `m +- sqrt(q)`,
/// real when `q >= 0`), every analytic function of `A` is `f0 I + f1 N`. The
/// stretch of length `s` is
///
/// ```text
/// y(s) = y0 + Phi(s) r0,   r0 = A y0 + b,   Phi(s) = int_0^s e^{A u} du = P0 I + P1 N,
/// y'(s) = e^{A s} r0,      e^{A s} = E0 I + E1 N,
/// ```
///
/// the form of the decoupled entries (`x + rate phi`). Where `|l1| s >= 1`
/// (`l1` the rate of larger magnitude, `l2` the other),
/// `E0 = e^{m s} cosh(d s)`, `E1 = e^{m s} sinh(d s) / d` (`d = sqrt(q)`; a
/// series in `q s^2` where `|d s| <= 1`, so equal rates, `tau_mem = tau_syn`,
/// and nearly equal ones take the same path without cancellation),
/// `P1 = (E1 - phi(l2, s)) / l1` and `P0 = (phi(l1, s) + phi(l2, s)) / 2`.
/// Where `|l1| s < 1` (where those would cancel), the Taylor series
/// `Phi = s sum_k (A s)^k / (k + 1)!` in the same basis, its first terms (as
/// many as `|l1| s` needs) summed with no test, and `e^{A s} = I + A Phi`
/// from it.
///
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct PairRates {
    /// `tr(A) / 2`.
    pub m: f64,
    /// `((a00 - a11) / 2)^2 + a01 a10`, the square of half the rates'
    /// difference (negative for complex rates).
    pub q: f64,
    /// `det(A)`, the product of the rates.
    pub det: f64,
    /// `A - m I`, row-major.
    pub n: [[f64; 2]; 2],
    /// `sqrt(max(q, 0))`, half the rates' difference where they are real.
    pub(crate) d: f64,
    /// The rates as [`PairRates::rates`] gives them (`(m, m)` for complex
    /// rates, as [`PairRates::factors`] reads them).
    pub(crate) l1: f64,
    pub(crate) l2: f64,
    /// `1 / d` (infinite where `d = 0`), and `1 / (m + d)`, `1 / (m - d)`
    /// (0 for a zero rate): the divisions of the rough crossing searches
    /// ([`crate::rough_crossing`]), formed once per matrix instead of once
    /// per search (they are latency on the path of every bound).
    pub(crate) inv_d: f64,
    pub(crate) inv_up: f64,
    pub(crate) inv_down: f64,
}

/// `1 / ((2k - 1) 2k)` at `k` (from 1): the ratio of `cosh`'s series terms
/// (formed once; [`PairRates::factors`] multiplies by them).
const COSH_STEP: [f64; 11] = {
    let mut t = [0.0; 11];
    let mut k = 1;
    while k <= 10 {
        t[k] = 1.0 / (((2 * k - 1) * (2 * k)) as f64);
        k += 1;
    }
    t
};

/// `1 / (2k (2k + 1))` at `k` (from 1): the ratio of `sinh(x) / x`'s
/// series terms.
const SINH_STEP: [f64; 11] = {
    let mut t = [0.0; 11];
    let mut k = 1;
    while k <= 10 {
        t[k] = 1.0 / (((2 * k) * (2 * k + 1)) as f64);
        k += 1;
    }
    t
};

/// The most terms of `Phi`'s series [`PairRates::factors`] sums.
const SERIES_TERMS: usize = 26;

/// `1 / k` at `k` (from 1 to 27): the ratios of the factorials of
/// `Phi`'s series ([`PairRates::factors`]).
const INV_K: [f64; SERIES_TERMS + 2] = {
    let mut t = [0.0; SERIES_TERMS + 2];
    let mut k = 1;
    while k < SERIES_TERMS + 2 {
        t[k] = 1.0 / (k as f64);
        k += 1;
    }
    t
};

/// How many terms `K` of `Phi`'s series `s sum_k (A s)^k / (k + 1)!`
/// [`PairRates::factors`] sums with no test where `z = |l1| s` (the rate
/// of larger magnitude) is at most the first entry: those after, at most
/// `z^k / (k + 1)!` of `P0 / s` and `2 k z^(k-1) / (k + 1)!` of `P1 / s^2`
/// (`|p_k| <= |l1|^k`, `|h_k| <= k |l1|^(k-1)` for `(A s)^k = s^k (p_k I +
/// h_k N)`), sum to less than `2^-60` of `P0` and of `P1` (which are at
/// least `0.6 s` and `0.2 s^2` where `z < 1`): the test of the terms after
/// the `K`-th stops at once as a rule. Each edge is that bound's largest
/// `z` for its `K`, rounded down to a 256th (checked by a test): every term
/// the table leaves to the test is below half an ulp of its sum, so a
/// sharper table moves no bit of the factors, and spares terms.
const SERIES_DEGREE: [(f64, usize); 13] = [
    (5.0 / 256.0, 8),
    (10.0 / 256.0, 9),
    (18.0 / 256.0, 10),
    (29.0 / 256.0, 11),
    (43.0 / 256.0, 12),
    (60.0 / 256.0, 13),
    (81.0 / 256.0, 14),
    (106.0 / 256.0, 15),
    (133.0 / 256.0, 16),
    (164.0 / 256.0, 17),
    (198.0 / 256.0, 18),
    (235.0 / 256.0, 19),
    (1.0, 20),
];

/// The cells of `z = |l1| s` in `[0, 1)` by 64ths that
/// [`PairRates::factors`] reads its count of terms from (one product and a
/// load instead of a search of [`SERIES_DEGREE`]): the count of the first
/// edge at or above the cell's upper end.
const DEGREE_CELLS: usize = 64;

/// [`SERIES_DEGREE`]'s count for each cell of [`DEGREE_CELLS`].
const DEGREE_BY_CELL: [usize; DEGREE_CELLS] = {
    let mut cells = [0; DEGREE_CELLS];
    let mut i = 0;
    while i < DEGREE_CELLS {
        let upper = (i + 1) as f64 / DEGREE_CELLS as f64;
        let mut row = 0;
        while SERIES_DEGREE[row].0 < upper {
            row += 1;
        }
        cells[i] = SERIES_DEGREE[row].1;
        i += 1;
    }
    cells
};

impl PairRates {
    /// The invariants of `a` (row-major).
    ///
    /// ```
    /// use ia_events::exact::PairRates;
    /// let rates = PairRates::of(&[[-0.05, 0.05], [0.0, -0.2]]);
    /// let (l1, l2) = rates.rates().unwrap();
    /// assert!((l1 + 0.2).abs() < 1e-17 && (l2 + 0.05).abs() < 1e-17);
    /// assert!(PairRates::of(&[[0.0, 1.0], [-1.0, 0.0]]).rates().is_none()); // complex
    /// ```
    pub fn of(a: &[[f64; 2]; 2]) -> Self {
        let m = 0.5 * (a[0][0] + a[1][1]);
        let h = 0.5 * (a[0][0] - a[1][1]);
        let q = h * h + a[0][1] * a[1][0];
        let det = a[0][0] * a[1][1] - a[0][1] * a[1][0];
        let d = q.max(0.0).sqrt();
        // The rate of larger magnitude first, the other from the
        // determinant (no cancellation).
        let (l1, l2) = if q.is_nan() || q < 0.0 {
            (m, m)
        } else {
            let l1 = if m >= 0.0 { m + d } else { m - d };
            (l1, if l1 == 0.0 { 0.0 } else { det / l1 })
        };
        let inv = |l: f64| if l == 0.0 { 0.0 } else { 1.0 / l };
        Self {
            m,
            q,
            det,
            n: [[h, a[0][1]], [a[1][0], -h]],
            d,
            l1,
            l2,
            inv_d: 1.0 / d,
            inv_up: inv(m + d),
            inv_down: inv(m - d),
        }
    }

    /// The rates (eigenvalues) when real: the one of larger magnitude
    /// first, the other from the determinant (no cancellation).
    pub fn rates(&self) -> Option<(f64, f64)> {
        if self.q.is_nan() || self.q < 0.0 {
            return None;
        }
        Some((self.l1, self.l2))
    }

    /// `A^{-1} r` for this pair's matrix `a` (its determinant nonzero).
    pub(crate) fn solve(&self, a: &[[f64; 2]; 2], r: &[f64; 2]) -> [f64; 2] {
        [
            (a[1][1] * r[0] - a[0][1] * r[1]) / self.det,
            (-a[1][0] * r[0] + a[0][0] * r[1]) / self.det,
        ]
    }

    /// The factors of a stretch of length `s >= 0` (real rates).
    ///
    /// ```
    /// use ia_events::exact::PairRates;
    /// // Equal rates, -1 and -1, with a coupling: e^{A s} = e^{-s} (I + s N).
    /// let f = PairRates::of(&[[-1.0, 1.0], [0.0, -1.0]]).factors(2.0);
    /// assert!((f.e0 - (-2.0f64).exp()).abs() < 1e-16);
    /// assert!((f.e1 - 2.0 * (-2.0f64).exp()).abs() < 1e-16);
    /// ```
    pub fn factors(&self, s: f64) -> PairFactors {
        let (l1, l2) = (self.l1, self.l2);
        let z = (l1 * s).abs();
        if z < 1.0 {
            return self.series_factors(s, z);
        }
        let (e0, e1) = self.exponential(s);
        let (phi1, phi2) = (crate::factor::phi(l1, s), crate::factor::phi(l2, s));
        let (p0, p1) = (0.5 * (phi1 + phi2), (e1 - phi2) / l1);
        PairFactors { e0, e1, p0, p1 }
    }

    /// `E0`, `E1` of `e^{A s}` (see [`PairRates`]).
    fn exponential(&self, s: f64) -> (f64, f64) {
        let (m, q) = (self.m, self.q.max(0.0));
        let w = q * s * s;
        if w <= 1.0 {
            // cosh(d s) and sinh(d s) / d as series in w = (d s)^2.
            let (mut c, mut sh, mut term_c, mut term_s) = (1.0, 1.0, 1.0, 1.0);
            for k in 1..=10 {
                term_c *= w * COSH_STEP[k];
                term_s *= w * SINH_STEP[k];
                c += term_c;
                sh += term_s;
                // The sums are at least 1 and the terms fall: once both are
                // below half an ulp of their sums, no later one moves them
                // (the sums are those of all ten terms, to the bit).
                if term_c <= 1e-18 * c && term_s <= 1e-18 * sh {
                    break;
                }
            }
            let em = (m * s).exp();
            (em * c, em * s * sh)
        } else {
            let d = self.d;
            let (up, down) = (((m + d) * s).exp(), ((m - d) * s).exp());
            (0.5 * (up + down), (up - down) / (2.0 * d))
        }
    }

    /// [`PairRates::factors`] where `z = |l1| s < 1`: the Taylor series
    /// `Phi = s sum_k (A s)^k / (k + 1)!` in the same basis (`(A s)^k =
    /// s^k (p_k I + h_k N)`), its first [`SERIES_DEGREE`] terms for `z`
    /// summed with no test, then term by term until a term of each sum is
    /// below `1e-18` of it (below half an ulp: where the terms were already
    /// that small, the untested ones moved no sum, so the sums are those of
    /// a loop testing every term, to the bit), and `e^{A s} = I + A Phi`
    /// (`E0 = 1 + m P0 + q P1` and `E1 = P0 + m P1`: within a few units of
    /// rounding, `|m| s < 1`).
    fn series_factors(&self, s: f64, z: f64) -> PairFactors {
        let (m, q) = (self.m, self.q.max(0.0));
        // `0 <= z < 1` here: the cell is below DEGREE_CELLS.
        let cell = ((z * DEGREE_CELLS as f64) as usize).min(DEGREE_CELLS - 1);
        let degree = DEGREE_BY_CELL[cell];
        let (mut pk, mut hk) = (1.0, 0.0);
        let (mut p0, mut p1, mut scale) = (0.0, 0.0, s);
        // The term k is s^(k+1) (p_k I + h_k N) / (k + 1)!.
        let mut term = |k: usize| {
            let (t0, t1) = (scale * pk, scale * hk);
            p0 += t0;
            p1 += t1;
            let next = (m * pk + q * hk, pk + m * hk);
            (pk, hk) = (next.0 * s, next.1 * s);
            scale *= INV_K[k + 2];
            (t0, t1, p0, p1)
        };
        for k in 0..degree {
            term(k);
        }
        for k in degree..SERIES_TERMS {
            let (t0, t1, p0, p1) = term(k);
            if t0.abs() <= 1e-18 * p0.abs() && t1.abs() <= 1e-18 * p1.abs() {
                break;
            }
        }
        PairFactors {
            e0: 1.0 + (m * p0 + q * p1),
            e1: p0 + m * p1,
            p0,
            p1,
        }
    }
}

/// Carries `y` over a stretch of `y' = a y + b` whose factors are `f`:
/// `y += P0 r0 + P1 N r0` (the arithmetic of the exact run, shared by
/// everything that replays it).
///
/// ```
/// use ia_events::exact::{advance_pair, PairRates};
/// let a = [[-1.0, 1.0], [0.0, -0.25]];
/// let rates = PairRates::of(&a);
/// let mut y = [0.0, 1.0];
/// advance_pair(&a, &[0.0, 0.0], &rates, &rates.factors(1.0), &mut y);
/// // I = e^{-s/4}; V = (e^{-s/4} - e^{-s}) / (1 - 1/4).
/// assert!((y[1] - (-0.25f64).exp()).abs() < 1e-15);
/// assert!((y[0] - ((-0.25f64).exp() - (-1.0f64).exp()) / 0.75).abs() < 1e-15);
/// ```
#[inline]
pub fn advance_pair(
    a: &[[f64; 2]; 2],
    b: &[f64; 2],
    rates: &PairRates,
    f: &PairFactors,
    y: &mut [f64; 2],
) {
    let r = rate(a, b, y);
    let nr = apply(&rates.n, &r);
    for i in 0..2 {
        y[i] += f.p0 * r[i] + f.p1 * nr[i];
    }
}

/// `a y + b`.
#[inline]
pub(crate) fn rate(a: &[[f64; 2]; 2], b: &[f64; 2], y: &[f64; 2]) -> [f64; 2] {
    [
        a[0][0] * y[0] + a[0][1] * y[1] + b[0],
        a[1][0] * y[0] + a[1][1] * y[1] + b[1],
    ]
}

/// `n v`.
#[inline]
pub(crate) fn apply(n: &[[f64; 2]; 2], v: &[f64; 2]) -> [f64; 2] {
    [
        n[0][0] * v[0] + n[0][1] * v[1],
        n[1][0] * v[0] + n[1][1] * v[1],
    ]
}

/// `atanh(z) / z`, 1 at 0 (a series where `z` is small).
pub(crate) fn atanhc(z: f64) -> f64 {
    if z.abs() < 1e-3 {
        atanhc_series(z * z)
    } else {
        z.atanh() / z
    }
}

/// The first four terms of `atanh(z) / z = sum z^{2j} / (2 j + 1)`, from
/// `z2 = z^2`: within rounding of it for `|z| < 1e-3` (the next term,
/// `z^8 / 9`, is below 1e-24), and below it for every `|z| < 1` (the terms
/// left out are all positive).
pub(crate) fn atanhc_series(z2: f64) -> f64 {
    1.0 + z2 * (1.0 / 3.0 + z2 * (1.0 / 5.0 + z2 / 7.0))
}

/// A pair's stretch from its state `y0`, as the crossing searches read
/// it ([`first_crossing`], [`crossing_near`] and the bounds of
/// [`crate::rough_crossing`]): formed once per prediction, so a bound
/// refined later does not form its rate again.
#[derive(Clone, Copy, Debug)]
pub(crate) struct PairStart<'a> {
    /// The pair's matrix and constant term.
    pub(crate) a: &'a [[f64; 2]; 2],
    pub(crate) b: &'a [f64; 2],
    /// The invariants of `a`.
    pub(crate) rates: &'a PairRates,
    /// The state at the stretch's start.
    pub(crate) y0: [f64; 2],
    /// Its rate `r0 = a y0 + b`, and `N r0`.
    pub(crate) r0: [f64; 2],
    pub(crate) nr0: [f64; 2],
}

impl<'a> PairStart<'a> {
    /// The stretch of the pair `y' = a y + b` (invariants `rates`) from
    /// `y0`.
    #[inline]
    pub(crate) fn new(
        a: &'a [[f64; 2]; 2],
        b: &'a [f64; 2],
        rates: &'a PairRates,
        y0: [f64; 2],
    ) -> Self {
        let r0 = rate(a, b, &y0);
        let nr0 = apply(&rates.n, &r0);
        Self {
            a,
            b,
            rates,
            y0,
            r0,
            nr0,
        }
    }
}

/// Entry `k` of a pair's stretch from `y0` (rate `r0`, `N r0` in `nr0`)
/// against a level: its value and rate at a delay.
struct Entry<'a> {
    rates: &'a PairRates,
    y0: f64,
    level: f64,
    u: f64,
    w: f64,
}

impl<'a> Entry<'a> {
    /// Entry `k` of the stretch `start`.
    fn of(start: &PairStart<'a>, k: usize, level: f64) -> Self {
        Entry {
            rates: start.rates,
            y0: start.y0[k],
            level,
            u: start.r0[k],
            w: start.nr0[k],
        }
    }

    /// `(g(s), g'(s))`, `g` with the arithmetic of [`advance_pair`].
    fn at(&self, s: f64) -> (f64, f64) {
        let (g, dg, _) = self.with_curvature(s);
        (g, dg)
    }

    /// `(g(s), e(s), g'(s))`: `g` as [`Entry::at`] gives it, and `e =
    /// (y0 - level) + S` (`S = P0 u + P1 w`, the increment [`advance_pair`]
    /// adds), the unrounded entry's distance from the level. The rounded
    /// entry `fl(y0 + S)` is a step function of `s`, flat at the level or
    /// its neighbour over several doubles of `s` where `|g'|` times a
    /// double's spacing is below the level's: `g` is 0 or one spacing of
    /// the level off there and tells nothing of where the step onto the
    /// level lies, while `e` (no rounding at the level's scale) moves with
    /// `s` at every double. The rounded entry reaches the level where `e`
    /// passes half the gap between the level and its neighbour on the side
    /// it comes from ([`edge_gap`]): Newton's point on `e` plus that half
    /// gap lands within the rounding of `S` of the step, where the step
    /// onto the level ([`step_onto_level`]) starts.
    fn at_edge(&self, s: f64) -> (f64, f64, f64) {
        let f = self.rates.factors(s);
        let increment = f.p0 * self.u + f.p1 * self.w;
        let g = (self.y0 + increment) - self.level;
        let e = (self.y0 - self.level) + increment;
        (g, e, f.e0 * self.u + f.e1 * self.w)
    }

    /// `(g(s), g'(s), g''(s))`: `g'' = [e^{A s} A r0]_k = E0 (m u + w) +
    /// E1 (m w + q u)` (`A = m I + N`, `N^2 = q I`).
    #[inline]
    fn with_curvature(&self, s: f64) -> (f64, f64, f64) {
        let f = self.rates.factors(s);
        let (m, q) = (self.rates.m, self.rates.q);
        (
            (self.y0 + (f.p0 * self.u + f.p1 * self.w)) - self.level,
            f.e0 * self.u + f.e1 * self.w,
            f.e0 * (m * self.u + self.w) + f.e1 * (m * self.w + q * self.u),
        )
    }
}

/// The first delay `s > 0` at which entry `k` (0 or 1) of the pair
/// `y' = a y + b` from `y0` crosses `level` in `direction`, if it does: a
/// crossing from strictly before the level, with the guard's rate pointing
/// in `direction` (see below). The rates must be
/// real ([`PairRates::rates`]).
///
///
/// An entry's guard `g(s) = y_k(s) - level` has `g'(s) = [e^{A s} r0]_k =
/// e^{m s} (u cosh(d s) + w sinh(d s) / d)` (`u = r0_k`, `w = (N r0)_k`),
/// which vanishes at most once for `s > 0`: where `tanh(d s) / d = -u / w`,
/// `s* = r atanh(r d) / (r d)` with `r = -u / w`. So `[0, s*]` and
/// `[s*, inf)` are each monotone: [`first_crossing`] brackets each root in
/// them (the second by doubling, after checking the limit of a decaying
/// pair), narrows it by Newton steps kept inside the bracket (from the root
/// of the cubic matching the guard and its rate at the bracket's ends)
/// until the next would move it by less than a unit of rounding, and
/// finishes on adjacent floating-point numbers: the delay returned is a
/// double at which the guard, as evaluated, has reached the level, and one
/// double before it has not (where the evaluated guard steps back and forth
/// over the level within a few doubles of the root, the step next to
/// Newton's point).
/// A crossing that rises and falls back before `s*` is found in the first
/// segment; one that only grazes the level (touches it without crossing)
/// does not fire.
///
/// ```
/// use ia_core::Direction;
/// use ia_events::exact::{first_crossing, PairRates};
/// // A neuron kicked by a current: V rises, peaks and decays back.
/// let a = [[-1.0 / 20.0, 1.0 / 20.0], [0.0, -1.0 / 5.0]];
/// let rates = PairRates::of(&a);
/// let s = first_crossing(&a, &[0.0, 0.0], &rates, &[0.0, 10.0], 0, 1.0, Direction::Rising);
/// assert!(s.is_some());
/// // Too weak a kick never reaches the threshold.
/// let s = first_crossing(&a, &[0.0, 0.0], &rates, &[0.0, 1.0], 0, 1.0, Direction::Rising);
/// assert_eq!(s, None);
/// ```
pub fn first_crossing(
    a: &[[f64; 2]; 2],
    b: &[f64; 2],
    rates: &PairRates,
    y0: &[f64; 2],
    k: usize,
    level: f64,
    direction: Direction,
) -> Option<f64> {
    first_crossing_from(&PairStart::new(a, b, rates, *y0), k, level, direction)
}

/// [`first_crossing`] of entry `k` of the stretch `start`.
pub(crate) fn first_crossing_from(
    start: &PairStart<'_>,
    k: usize,
    level: f64,
    direction: Direction,
) -> Option<f64> {
    let (rates, y0) = (start.rates, &start.y0);
    let entry = Entry::of(start, k, level);
    let (u, w) = (entry.u, entry.w);
    if u == 0.0 && w == 0.0 {
        return None;
    }
    // The one interior extremum, where tanh(d s) / d = -u / w.
    let extremum = (w != 0.0)
        .then(|| {
            let r = -u / w;
            let rd = r * rates.d;
            (r > 0.0 && rd < 1.0).then(|| r * atanhc(rd))
        })
        .flatten()
        .filter(|s| s.is_finite() && *s > 0.0);
    let mut lo = 0.0;
    let mut g_lo = y0[k] - level;
    // The sign of g' on the first segment: that of u (of w where u = 0).
    let mut rising = if u != 0.0 { u > 0.0 } else { w > 0.0 };
    // The guard's rate at the segment's start: `u` at 0, zero at the
    // extremum.
    let mut dg_lo = u;
    if let Some(s_star) = extremum {
        let (g_star, _) = entry.at(s_star);
        let ends = ((lo, g_lo, dg_lo), (s_star, g_star, 0.0));
        if let Some(s) = root_in(&entry, direction, rising, ends.0, ends.1) {
            return Some(s);
        }
        (lo, g_lo, dg_lo, rising) = (s_star, g_star, 0.0, !rising);
    }
    // The last segment, monotone to infinity: find a bracket.
    let toward = if rising { g_lo < 0.0 } else { g_lo > 0.0 };
    if !toward || !fires(direction, rising) {
        return None;
    }
    let (l1, l2) = rates.rates()?;
    if l1 < 0.0 && l2 < 0.0 {
        // Decaying: the limit is the equilibrium, y0 - A^{-1} r0.
        let inv_r = rates.solve(start.a, &start.r0);
        let limit = (y0[k] - inv_r[k]) - level;
        let beyond = if rising { limit > 0.0 } else { limit < 0.0 };
        if !beyond {
            return None;
        }
    }
    let slowest = l1.abs().min(l2.abs()).max(l1.abs() * 1e-3);
    let mut step = if slowest > 0.0 { 1.0 / slowest } else { 1.0 };
    if !step.is_finite() {
        step = 1.0;
    }
    let mut hi = lo + step;
    for _ in 0..2100 {
        let (g_hi, dg_hi) = entry.at(hi);
        let reached = if rising { g_hi >= 0.0 } else { g_hi <= 0.0 };
        if reached || !g_hi.is_finite() {
            return root_in(
                &entry,
                direction,
                rising,
                (lo, g_lo, dg_lo),
                (hi, g_hi, dg_hi),
            );
        }
        (lo, g_lo, dg_lo) = (hi, g_hi, dg_hi);
        step *= 2.0;
        hi = lo + step;
        if !hi.is_finite() {
            return None;
        }
    }
    None
}

/// [`first_crossing`]'s delay found from a close estimate of it: `lo <
/// estimate < hi` on one monotone segment of the entry's guard, `lo` a
/// lower bound of the crossing and `hi` beyond it (a rough root lowered and
/// raised by a small relative margin, [`crate::rough_crossing`]). One
/// Newton step from `estimate` with the exact arithmetic of
/// [`advance_pair`], aimed at the edge where the rounded entry reaches the
/// level rather than at the root of the rounded guard, which is flat over
/// several doubles there ([`Entry::at_edge`]: from the same evaluation,
/// about 4 evaluations a crossing instead of 6 on the Yin-Yang network),
/// a bracket by doubling steps of doubles from Newton's
/// point (bounded by the estimate where the two lie across the root) or
/// from the nearer of the two, then bisection of the doubles to adjacent
/// ones, the guard short of the level at the first and at or beyond it at
/// the second ([`step_onto_level`]): a delay as [`first_crossing`] defines
/// it. `None`
/// when the bracket leaves `(lo, hi)`, or the segment does not cross in
/// `direction`: then the caller searches from the start.
pub(crate) fn crossing_near(
    start: &PairStart<'_>,
    k: usize,
    level: f64,
    direction: Direction,
    (lo, estimate, hi): (f64, f64, f64),
) -> Option<f64> {
    if !(lo > 0.0 && estimate > lo && hi > estimate && hi.is_finite()) {
        return None;
    }
    let entry = Entry::of(start, k, level);
    let (g, fine, dg) = entry.at_edge(estimate);
    if dg == 0.0 || !dg.is_finite() || !g.is_finite() || !fine.is_finite() {
        return None;
    }
    // On a monotone segment the guard's rate keeps its sign.
    let rising = dg > 0.0;
    if !fires(direction, rising) {
        return None;
    }
    let sign = if rising { 1.0 } else { -1.0 };
    let h_at = |bits: u64| sign * entry.at(f64::from_bits(bits)).0;
    let e = (estimate.to_bits(), sign * g);
    // Newton's point on the edge at which the rounded entry reaches the
    // level ([`Entry::at_edge`]).
    let newton = estimate - (fine + sign * edge_gap(level, rising)) / dg;
    let n = if newton > lo && newton < hi && newton != estimate {
        let bits = newton.to_bits();
        (bits, h_at(bits))
    } else {
        e
    };
    // From Newton's point, bounded by the estimate where the two lie
    // across the root; otherwise from the nearer of the two, and nothing
    // is known of `lo` and `hi`.
    let (first, last) = if e.0 <= n.0 { (e, n) } else { (n, e) };
    let across = first.1 < 0.0 && last.1 >= 0.0;
    let bounds = Bounds {
        limits: (lo.to_bits(), hi.to_bits()),
        before: (across && e.0 < n.0).then_some(e.0),
        reached: (across && e.0 > n.0).then_some(e.0),
    };
    let from = if across {
        n
    } else if first.1 >= 0.0 {
        first
    } else {
        last
    };
    step_onto_level(h_at, from, bounds).map(f64::from_bits)
}

/// Where [`step_onto_level`] may walk: doubles (by their bits) known to lie
/// before the level and at or beyond it, where known, and the limits
/// beyond which it gives up where not.
struct Bounds {
    limits: (u64, u64),
    before: Option<u64>,
    reached: Option<u64>,
}

/// A step of the oriented guard `h` (by the bits of the delay, all
/// positive, so in order) onto the level near `from` (bits, `h` there): the
/// double at which `h >= 0` with `h < 0` at the one before. Near the root
/// the guard as evaluated steps back and forth over the level within a few
/// doubles: steps of one double from `from` towards the level, doubling,
/// bracket the nearest such step (bounded by a double of known side, or
/// `None` past a limit), and bisection of the bracket to adjacent doubles
/// finds one.
fn step_onto_level(h_at: impl Fn(u64) -> f64, from: (u64, f64), bounds: Bounds) -> Option<u64> {
    let (lo_bits, hi_bits) = bounds.limits;
    let (mut before, mut reached) = if from.1 >= 0.0 {
        let (mut at, mut step) = (from.0, 1u64);
        loop {
            if let Some(bound) = bounds.before.filter(|&b| at <= b + step) {
                break (bound, at);
            }
            if at <= lo_bits + step {
                return None;
            }
            let below = at - step;
            if h_at(below) < 0.0 {
                break (below, at);
            }
            (at, step) = (below, step * 2);
        }
    } else {
        let (mut at, mut step) = (from.0, 1u64);
        loop {
            if let Some(bound) = bounds.reached.filter(|&b| at + step >= b) {
                break (at, bound);
            }
            if at + step >= hi_bits {
                return None;
            }
            let above = at + step;
            if h_at(above) >= 0.0 {
                break (at, above);
            }
            (at, step) = (above, step * 2);
        }
    };
    // Bisection of the bits to adjacent doubles.
    while reached - before > 1 {
        let mid = before + (reached - before) / 2;
        let h = h_at(mid);
        if !h.is_finite() {
            return None;
        }
        if h >= 0.0 {
            reached = mid;
        } else {
            before = mid;
        }
    }
    Some(reached)
}

/// Whether a monotone segment (`rising` or not) crosses in `direction`.
fn fires(direction: Direction, rising: bool) -> bool {
    match direction {
        Direction::Rising => rising,
        Direction::Falling => !rising,
        Direction::Either => true,
    }
}

/// Half the gap between `level` and the double next to it on the side a
/// guard comes from (below where it rises to the level, above where it
/// falls): the rounded entry `fl(x)` reaches the level once the unrounded
/// `x` is within this of it ([`Entry::at_edge`]). 0 where the level is not
/// finite.
fn edge_gap(level: f64, rising: bool) -> f64 {
    if !level.is_finite() {
        return 0.0;
    }
    let bits = level.to_bits();
    // The neighbour toward minus infinity where rising, toward plus
    // infinity where falling (by the bits, magnitudes grow away from 0).
    let neighbour = if level == 0.0 {
        f64::from_bits(1)
    } else if (level > 0.0) != rising {
        f64::from_bits(bits + 1)
    } else {
        f64::from_bits(bits - 1)
    };
    let gap = 0.5 * (level - neighbour).abs();
    if gap.is_finite() {
        gap
    } else {
        0.0
    }
}

/// The root of the monotone segment `[lo, hi]` of `entry` (`rising` or
/// not), given the guard and its rate at both ends, when `g(lo)` is
/// strictly before zero and `g(hi)` at or beyond it and the segment
/// crosses in `direction`: Newton steps kept in the bracket, from the root
/// of the cubic matching the ends (`hermite_root`), until the next would
/// move the point by less than a unit of rounding; then a step of the
/// guard onto the level next to that point ([`step_onto_level`], the ends
/// of the bracket as evaluated bounding it), or bisection to adjacent
/// doubles where Newton fails.
fn root_in(
    entry: &Entry<'_>,
    direction: Direction,
    rising: bool,
    (mut lo, g_lo, dg_lo): (f64, f64, f64),
    (mut hi, g_hi, dg_hi): (f64, f64, f64),
) -> Option<f64> {
    // Orient so that g rises through zero: h = g or -g.
    let sign = if rising { 1.0 } else { -1.0 };
    let (before, reached) = (sign * g_lo < 0.0, sign * g_hi >= 0.0);
    if !fires(direction, rising) || !before || !reached {
        return None;
    }
    let mut s = hermite_root(
        (lo, sign * g_lo, sign * dg_lo),
        (hi, sign * g_hi, sign * dg_hi),
    );
    for _ in 0..100 {
        if !(s > lo && s < hi) {
            s = lo + 0.5 * (hi - lo);
            if !(s > lo && s < hi) {
                break;
            }
        }
        let (g, dg, ddg) = entry.with_curvature(s);
        if sign * g >= 0.0 {
            hi = s;
        } else {
            lo = s;
        }
        let newton = s - g / dg;
        if !(newton > lo && newton < hi) || dg == 0.0 || !newton.is_finite() {
            s = lo + 0.5 * (hi - lo);
            continue;
        }
        // Newton's error after a step `delta` near the root is about
        // `|g'' / (2 g')| delta^2`.
        let delta = (newton - s).abs();
        let settled = delta <= 4.0 * f64::EPSILON * newton.abs()
            || (delta <= 1e-6 * newton
                && (ddg / dg).abs() * delta * delta <= f64::EPSILON * newton);
        if settled {
            let h_at = |bits: u64| sign * entry.at(f64::from_bits(bits)).0;
            let bits = newton.to_bits();
            let (lo_bits, hi_bits) = (lo.to_bits(), hi.to_bits());
            let bounds = Bounds {
                limits: (lo_bits, hi_bits),
                before: Some(lo_bits),
                reached: Some(hi_bits),
            };
            if let Some(step) = step_onto_level(h_at, (bits, h_at(bits)), bounds) {
                return Some(f64::from_bits(step));
            }
            // A guard that is not finite inside the bracket: the crossing
            // is still there, found by bisection.
            break;
        }
        s = newton;
    }
    // Bisection to adjacent doubles: hi is the first at or beyond zero.
    loop {
        let mid = lo + 0.5 * (hi - lo);
        if !(mid > lo && mid < hi) {
            break;
        }
        if sign * entry.at(mid).0 >= 0.0 {
            hi = mid;
        } else {
            lo = mid;
        }
    }
    Some(hi)
}

/// The root in `(lo, hi)` of the cubic through `(lo, h_lo)` and
/// `(hi, h_hi)` with slopes `dh_lo`, `dh_hi` there (Hermite's), where
/// `h_lo < 0 <= h_hi`: the cubic's own rising crossing, by Newton steps
/// on it kept in its bracket (no exponential: a start for Newton on the
/// guard, within a few per cent of the root on a neuron's rise to its
/// peak, where the secant's point is not). Where the data are not finite,
/// some point inside the bracket.
pub(crate) fn hermite_root(
    (lo, h_lo, dh_lo): (f64, f64, f64),
    (hi, h_hi, dh_hi): (f64, f64, f64),
) -> f64 {
    let width = hi - lo;
    // p(t) = h_lo + c1 t + c2 t^2 + c3 t^3 on t in [0, 1].
    let (m0, m1) = (dh_lo * width, dh_hi * width);
    let c1 = m0;
    let c2 = 3.0 * (h_hi - h_lo) - 2.0 * m0 - m1;
    let c3 = 2.0 * (h_lo - h_hi) + m0 + m1;
    let (mut a, mut b) = (0.0, 1.0);
    let mut t = h_lo / (h_lo - h_hi);
    for _ in 0..8 {
        let p = h_lo + t * (c1 + t * (c2 + t * c3));
        if p >= 0.0 {
            b = t;
        } else {
            a = t;
        }
        let step = p / (c1 + t * (2.0 * c2 + 3.0 * t * c3));
        let next = t - step;
        t = if next >= a && next <= b {
            next
        } else {
            0.5 * (a + b)
        };
        // A start for Newton on the guard needs no more.
        if step.abs() <= 1e-12 {
            break;
        }
    }
    lo + width * t
}

/// One linear pair over a stretch, as a component carried along with the
/// state needs it ([`ExactSpan::pairs`](crate::exact::ExactSpan::pairs)):
/// the pair, its rates and the factors of the stretch.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct PairStretch {
    /// The pair's entries `[i, j]`.
    pub entries: [usize; 2],
    /// Its matrix, row-major.
    pub a: [[f64; 2]; 2],
    /// Its constant term.
    pub b: [f64; 2],
    /// The invariants of `a`.
    pub rates: PairRates,
    /// The factors of the stretch.
    pub factors: PairFactors,
}

impl PairStretch {
    /// Carries a tangent `v` of the pair's entries over the stretch of
    /// length `s` from the pair's state `y0`, when the parameter it is
    /// taken along moves the pair's rate by `e y + beta` (`e = dA/dp`,
    /// `beta = db/dp`; zero for an initial-state tangent):
    /// `v' = A v + e y + beta`. Where `e` is zero, in closed form
    /// (`v(s) = e^{A s} v0 + Phi(s) beta`); otherwise from the exponential of
    /// the augmented 5x5 matrix `[[A, e, beta], [0, A, b], [0, 0, 0]]` by
    /// scaling and squaring of its Taylor series.
    ///
    /// ```
    /// use ia_events::exact::{PairRates, PairStretch};
    /// // y' = -y (both entries, uncoupled); along the rate itself (e = -I):
    /// // v' = -v - y, v(0) = 0, so v(s) = -s e^{-s} y0.
    /// let a = [[-1.0, 0.0], [0.0, -1.0]];
    /// let rates = PairRates::of(&a);
    /// let pair = PairStretch { entries: [0, 1], a, b: [0.0; 2], rates, factors: rates.factors(2.0) };
    /// let mut v = [0.0, 0.0];
    /// pair.carry_tangent(2.0, [1.0, 3.0], [[-1.0, 0.0], [0.0, -1.0]], [0.0; 2], &mut v);
    /// assert!((v[0] + 2.0 * (-2.0f64).exp()).abs() < 1e-14);
    /// assert!((v[1] + 6.0 * (-2.0f64).exp()).abs() < 1e-14, "{}", v[1] + 6.0 * (-2.0f64).exp());
    /// ```
    pub fn carry_tangent(
        &self,
        s: f64,
        y0: [f64; 2],
        e: [[f64; 2]; 2],
        beta: [f64; 2],
        v: &mut [f64; 2],
    ) {
        let f = &self.factors;
        if e.iter().flatten().all(|&x| x == 0.0) {
            let (nv, nb) = (apply(&self.rates.n, v), apply(&self.rates.n, &beta));
            for i in 0..2 {
                v[i] = (f.e0 * v[i] + f.e1 * nv[i]) + (f.p0 * beta[i] + f.p1 * nb[i]);
            }
            return;
        }
        let mut m = [[0.0; 5]; 5];
        for i in 0..2 {
            for j in 0..2 {
                m[i][j] = self.a[i][j] * s;
                m[i][j + 2] = e[i][j] * s;
                m[i + 2][j + 2] = self.a[i][j] * s;
            }
            m[i][4] = beta[i] * s;
            m[i + 2][4] = self.b[i] * s;
        }
        let exp = expm5(m);
        let z = [v[0], v[1], y0[0], y0[1], 1.0];
        for (i, out) in v.iter_mut().enumerate() {
            *out = exp[i].iter().zip(&z).map(|(a, b)| a * b).sum();
        }
    }
}

pub(crate) type Mat5 = [[f64; 5]; 5];

fn mul5(a: &Mat5, b: &Mat5) -> Mat5 {
    let mut c = [[0.0; 5]; 5];
    for i in 0..5 {
        for k in 0..5 {
            let aik = a[i][k];
            if aik != 0.0 {
                for j in 0..5 {
                    c[i][j] += aik * b[k][j];
                }
            }
        }
    }
    c
}

/// `e^m` of a 5x5 matrix: its Taylor series (to order 18) of `m / 2^k`,
/// `|m| / 2^k <= 1/4`, squared `k` times.
pub(crate) fn expm5(mut m: Mat5) -> Mat5 {
    let norm = m
        .iter()
        .map(|row| row.iter().map(|x| x.abs()).sum::<f64>())
        .fold(0.0, f64::max);
    let mut squarings = 0;
    if norm > 0.25 {
        squarings = (norm / 0.25).log2().ceil() as i32;
        let scale = 0.5f64.powi(squarings);
        for x in m.iter_mut().flatten() {
            *x *= scale;
        }
    }
    let mut sum = [[0.0; 5]; 5];
    let mut term = [[0.0; 5]; 5];
    for i in 0..5 {
        sum[i][i] = 1.0;
        term[i][i] = 1.0;
    }
    for k in 1..=18 {
        term = mul5(&term, &m);
        let inv = 1.0 / k as f64;
        for (row, srow) in term.iter_mut().zip(sum.iter_mut()) {
            for (t, s) in row.iter_mut().zip(srow.iter_mut()) {
                *t *= inv;
                *s += *t;
            }
        }
    }
    for _ in 0..squarings {
        sum = mul5(&sum, &sum);
    }
    sum
}

/// The transpose of [`PairStretch::carry_tangent`], what an adjoint pass
/// needs of a pair's stretch: for a cotangent `lambda` of the pair's
/// entries at the stretch's end,
/// `lambda . v(s) = (e^{A^T s} lambda) . v0 + sum_kl g[k][l] e[k][l] + gamma . beta`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct PairCotangent {
    /// `e^{A^T s} lambda`, the cotangent at the stretch's start.
    pub lambda: [f64; 2],
    /// `g[k][l] = int_0^s mu_k(u) y_l(u) du`, `mu(u) = e^{A^T (s - u)} lambda`.
    pub g: [[f64; 2]; 2],
    /// `gamma = Phi(s)^T lambda = int_0^s mu(u) du`.
    pub gamma: [f64; 2],
}

impl PairStretch {
    /// The transpose of [`PairStretch::carry_tangent`] from the pair's state
    /// `y0` at the stretch's start, in closed form: with
    /// `mu(u) = E0(s - u) lambda + E1(s - u) N^T lambda` and
    /// `y(u) = E0(u) y0 + E1(u) N y0 + P0(u) b + P1(u) N b`, `g` is a sum of
    /// the convolutions `(E_a * E_b)(s)` and `(E_a * E_b * 1)(s)` times
    /// outer products of those vectors, and `gamma = P0 lambda + P1 N^T lambda`
    /// (the convolutions: `crate::pair_convolution`). For complex rates,
    /// which the exact solver refuses, the top-right block of the
    /// exponential of `[[A^T, lambda z0^T], [0, A3^T]] s` (Van Loan's
    /// integral), `A3 = [[A, b], [0, 0]]`, `z0 = [y0, 1]`.
    ///
    /// ```
    /// use ia_events::exact::{PairRates, PairStretch};
    /// // Checked against carry_tangent along a tangent moving A and b.
    /// let a = [[-0.05, 0.05], [0.0, -0.2]];
    /// let rates = PairRates::of(&a);
    /// let (s, y0) = (3.0, [0.4, 2.0]);
    /// let pair = PairStretch { entries: [0, 1], a, b: [0.0; 2], rates, factors: rates.factors(s) };
    /// let (v0, e, beta) = ([0.3, -1.0], [[0.01, -0.02], [0.0, 0.04]], [0.5, 0.1]);
    /// let mut v = v0;
    /// pair.carry_tangent(s, y0, e, beta, &mut v);
    /// let lambda = [1.5, -0.7];
    /// let c = pair.transpose_tangent(s, y0, lambda);
    /// let mut dot = c.lambda[0] * v0[0] + c.lambda[1] * v0[1];
    /// dot += c.gamma[0] * beta[0] + c.gamma[1] * beta[1];
    /// for k in 0..2 {
    ///     for l in 0..2 {
    ///         dot += c.g[k][l] * e[k][l];
    ///     }
    /// }
    /// assert!((dot - (lambda[0] * v[0] + lambda[1] * v[1])).abs() < 1e-13);
    /// ```
    pub fn transpose_tangent(&self, s: f64, y0: [f64; 2], lambda: [f64; 2]) -> PairCotangent {
        self.transpose_tangent_with(&self.transpose_basis(s), y0, lambda)
    }

    /// What [`PairStretch::transpose_tangent`] needs of the stretch of
    /// length `s` alone (not of the state or the cotangent): the
    /// convolutions of its factors. One basis serves every pair of the same
    /// matrix, constant and stretch length
    /// ([`PairStretch::transpose_tangent_with`]).
    pub fn transpose_basis(&self, s: f64) -> PairTransposeBasis {
        match self.rates.rates() {
            Some((l1, l2)) => PairTransposeBasis(Basis::Closed(PairConvolutions::of(l1, l2, s))),
            None => PairTransposeBasis(Basis::VanLoan(s)),
        }
    }

    /// [`PairStretch::transpose_tangent`] from the pair's
    /// [`PairStretch::transpose_basis`] for the same stretch: the same
    /// result, bit for bit.
    ///
    /// ```
    /// use ia_events::exact::{PairRates, PairStretch};
    /// let a = [[-0.05, 0.05], [0.0, -0.2]];
    /// let rates = PairRates::of(&a);
    /// let s = 3.0;
    /// let pair = PairStretch { entries: [0, 1], a, b: [0.1, 0.0], rates, factors: rates.factors(s) };
    /// let basis = pair.transpose_basis(s);
    /// let (y0, lambda) = ([0.4, 2.0], [1.5, -0.7]);
    /// let (one, many) = (pair.transpose_tangent(s, y0, lambda), pair.transpose_tangent_with(&basis, y0, lambda));
    /// assert_eq!(one, many);
    /// ```
    pub fn transpose_tangent_with(
        &self,
        basis: &PairTransposeBasis,
        y0: [f64; 2],
        lambda: [f64; 2],
    ) -> PairCotangent {
        let f = &self.factors;
        let n = &self.rates.n;
        let nt = [[n[0][0], n[1][0]], [n[0][1], n[1][1]]];
        let nl = apply(&nt, &lambda);
        let (start, g, gamma) = match &basis.0 {
            Basis::Closed(conv) => {
                // g = sum_a alpha_a w_a^T, alpha = [lambda, N^T lambda],
                // w_a = sum_b c[a][b] N^b y0 + d[a][b] N^b b.
                let (ny, nb) = (apply(n, &y0), apply(n, &self.b));
                let w = [0, 1].map(|a| {
                    let (c, d) = (conv.c[a], conv.d[a]);
                    [0, 1].map(|l| c[0] * y0[l] + c[1] * ny[l] + d[0] * self.b[l] + d[1] * nb[l])
                });
                let g = [0, 1].map(|k| [0, 1].map(|l| lambda[k] * w[0][l] + nl[k] * w[1][l]));
                let start = [0, 1].map(|k| f.e0 * lambda[k] + f.e1 * nl[k]);
                let gamma = [0, 1].map(|k| conv.p[0] * lambda[k] + conv.p[1] * nl[k]);
                (start, g, gamma)
            }
            &Basis::VanLoan(s) => {
                let z0 = [y0[0], y0[1], 1.0];
                let c = lambda.map(|l| z0.map(|z| l * z));
                let exp = expm5(van_loan(&self.a, &self.b, s, c));
                // The factors assume real rates: e^{A^T s} is the
                // exponential's top-left block.
                let start = [0, 1].map(|k| exp[k][0] * lambda[0] + exp[k][1] * lambda[1]);
                (
                    start,
                    [[exp[0][2], exp[0][3]], [exp[1][2], exp[1][3]]],
                    [exp[0][4], exp[1][4]],
                )
            }
        };
        PairCotangent {
            lambda: start,
            g,
            gamma,
        }
    }
}

/// `[[A^T, C], [0, A3^T]] s` (`A3 = [[A, b], [0, 0]]`), whose exponential's
/// top-right block is Van Loan's integral of `C`: the transpose of a pair's
/// tangent for complex rates ([`PairStretch::transpose_basis`]) and the
/// tests' reference for the closed form.
pub(crate) fn van_loan(a: &[[f64; 2]; 2], b: &[f64; 2], s: f64, c: [[f64; 3]; 2]) -> Mat5 {
    let mut m = [[0.0; 5]; 5];
    for i in 0..2 {
        for j in 0..2 {
            m[i][j] = a[j][i] * s;
            m[i + 2][j + 2] = a[j][i] * s;
        }
        for (j, c) in c[i].iter().enumerate() {
            m[i][j + 2] = c * s;
        }
        m[4][i + 2] = b[i] * s;
    }
    m
}

/// What the transpose of a pair's stretch needs of the stretch alone
/// ([`PairStretch::transpose_basis`]).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct PairTransposeBasis(Basis);

#[derive(Clone, Copy, Debug, PartialEq)]
enum Basis {
    /// Real rates: the convolutions of the factors.
    Closed(PairConvolutions),
    /// Complex rates (refused by the exact solver, so rare): the stretch's
    /// length, for Van Loan's integral of each cotangent and state.
    VanLoan(f64),
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Reference: the closed-form root of a cubic, which Hermite's cubic
    /// through its values and slopes at two points reproduces: `p(t) =
    /// (t - 0.3)(t^2 + 1)` on `[0, 1]`, so `p(0) = -0.3`, `p'(0) = 1`,
    /// `p(1) = 1.4`, `p'(1) = 3.4`, root `0.3`; stretched onto `[2, 4]`
    /// (slopes halved), root `2.6`. A flat start (`p'(0) = 0`, a segment
    /// from an extremum) and data that are not finite fall back inside.
    #[test]
    fn hermite_roots_reproduce_a_cubics_root() {
        let t = hermite_root((0.0, -0.3, 1.0), (1.0, 1.4, 3.4));
        assert!((t - 0.3).abs() < 1e-15, "{t}");
        let s = hermite_root((2.0, -0.3, 0.5), (4.0, 1.4, 1.7));
        assert!((s - 2.6).abs() < 1e-14, "{s}");
        // q(t) = t^2 (3 - 2t) - 0.5: q(0) = -0.5, q'(0) = 0, q(1) = 0.5,
        // q'(1) = 0, root 0.5 by symmetry.
        let flat = hermite_root((0.0, -0.5, 0.0), (1.0, 0.5, 0.0));
        assert!((flat - 0.5).abs() < 1e-15, "{flat}");
        let nan = hermite_root((1.0, -1.0, f64::NAN), (3.0, 1.0, 1.0));
        assert!(nan > 1.0 && nan < 3.0, "{nan}");
    }

    fn close(a: &PairFactors, b: &PairFactors, tol: f64) -> bool {
        let (x, y) = ([a.e0, a.e1, a.p0, a.p1], [b.e0, b.e1, b.p0, b.p1]);
        x.iter()
            .zip(&y)
            .all(|(x, y)| (x - y).abs() <= tol * (1.0 + y.abs()))
    }

    /// Reference: the factors are analytic in `A` and `s`, so the branches
    /// (series in `q s^2` or in `A s`, or the rates' exponentials) agree on
    /// either side of their boundaries (`|d s| = 1`, `|l1| s = 1`), and equal
    /// rates are the limit of nearly equal ones.
    #[test]
    fn the_branches_of_the_factors_meet_continuously() {
        let eps = 1e-12;
        // |l1| s = 1 with equal rates: the series in A s and the rates' form.
        let equal = PairRates::of(&[[-0.5, 0.5], [0.0, -0.5]]);
        assert!(close(
            &equal.factors(2.0 - eps),
            &equal.factors(2.0 + eps),
            1e-11
        ));
        // |d s| = 1: the series in q s^2 and the rates' exponentials.
        let apart = PairRates::of(&[[-0.05, 0.05], [0.0, -0.2]]);
        let s = 1.0 / 0.075;
        assert!(close(
            &apart.factors(s - eps),
            &apart.factors(s + eps),
            1e-11
        ));
        // Nearly equal rates tend to equal ones, without cancellation.
        let near = PairRates::of(&[[-0.5, 0.5], [0.0, -0.5 * (1.0 + 1e-12)]]);
        assert!(close(&near.factors(7.0), &equal.factors(7.0), 1e-11));
        // A zero rate (a singular matrix) takes the series.
        let singular = PairRates::of(&[[0.0, 1.0], [0.0, 0.0]]);
        let f = singular.factors(3.0);
        // e^{A s} = I + s N (N = A here), Phi = s I + s^2 / 2 N.
        assert_eq!((f.e0, f.e1), (1.0, 3.0));
        assert!((f.p0 - 3.0).abs() < 1e-15 && (f.p1 - 4.5).abs() < 1e-14);
    }

    /// Reference: the Taylor series of `Phi` and of `e^{A s}` summed term
    /// by term to 40 terms (`(A s)^k = s^k (p_k I + h_k N)`, `p_{k+1} = m
    /// p_k + q h_k`, `h_{k+1} = p_k + m h_k`). Just below the upper end of
    /// each cell of [`DEGREE_BY_CELL`] (where its count is the lowest for
    /// that `|l1| s`) and halfway through it, for decaying, equal, coupled
    /// and growing pairs, the factors agree to a few units of rounding.
    #[test]
    fn the_series_factors_match_the_long_series() {
        let matrices = [
            [[-0.05, 0.05], [0.0, -0.2]],
            [[-0.1, 0.1], [0.0, -0.1]],
            [[-0.3, 0.2], [0.05, -0.1]],
            [[0.2, 0.1], [0.0, -0.4]],
            [[0.3, 0.1], [0.02, 0.25]],
        ];
        let mut checked = 0;
        for a in matrices {
            let rates = PairRates::of(&a);
            let (m, q) = (rates.m, rates.q.max(0.0));
            for i in 0..DEGREE_CELLS {
                let cells = DEGREE_CELLS as f64;
                let (before, edge) = (i as f64 / cells, (i + 1) as f64 / cells);
                for z in [edge * (1.0 - 1e-9), 0.5 * (before + edge)] {
                    let s = z / rates.l1.abs();
                    let f = rates.factors(s);
                    let (mut pk, mut hk, mut sk, mut fact) = (1.0, 0.0, 1.0, 1.0);
                    let (mut e0, mut e1, mut p0, mut p1) = (0.0, 0.0, 0.0, 0.0);
                    for k in 0..40 {
                        // sk = s^k, fact = k!.
                        e0 += sk * pk / fact;
                        e1 += sk * hk / fact;
                        p0 += s * sk * pk / (fact * (k + 1) as f64);
                        p1 += s * sk * hk / (fact * (k + 1) as f64);
                        (pk, hk) = (m * pk + q * hk, pk + m * hk);
                        sk *= s;
                        fact *= (k + 1) as f64;
                    }
                    let near =
                        |x: f64, y: f64, ulps: f64| (x - y).abs() <= ulps * f64::EPSILON * y.abs();
                    assert!(near(f.p0, p0, 4.0), "{a:?} {s}: {} vs {p0}", f.p0);
                    assert!(near(f.p1, p1, 8.0), "{a:?} {s}: {} vs {p1}", f.p1);
                    assert!(near(f.e0, e0, 8.0), "{a:?} {s}: {} vs {e0}", f.e0);
                    assert!(near(f.e1, e1, 16.0), "{a:?} {s}: {} vs {e1}", f.e1);
                    checked += 1;
                }
            }
        }
        assert_eq!(checked, 5 * 2 * DEGREE_CELLS);
    }

    /// Reference: the bound [`SERIES_DEGREE`] states, summed directly (the
    /// tails `sum_{k > K} z^k / (k + 1)!` over `0.6` and `sum_{k > K} 2 k
    /// z^(k-1) / (k + 1)!` over `0.2`, at the edge, to 60 terms): below
    /// `2^-60` at each row's edge, and not for one term fewer at the edge
    /// (each row is as sharp as its 256ths allow, up to the last); and each
    /// cell of [`DEGREE_BY_CELL`] takes the count of a row whose edge is at
    /// or above the cell's upper end.
    #[test]
    fn the_series_degrees_meet_their_bound() {
        let tails = |z: f64, degree: usize| {
            let (mut t0, mut t1, mut fact) = (0.0, 0.0, 1.0);
            for k in 1..60 {
                // fact = (k + 1)!.
                fact *= (k + 1) as f64;
                if k > degree {
                    t0 += z.powi(k as i32) / fact / 0.6;
                    t1 += 2.0 * k as f64 * z.powi(k as i32 - 1) / fact / 0.2;
                }
            }
            t0.max(t1)
        };
        let limit = 2f64.powi(-60);
        for (i, &(edge, degree)) in SERIES_DEGREE.iter().enumerate() {
            assert!(tails(edge, degree) < limit, "{edge} {degree}");
            if i + 1 < SERIES_DEGREE.len() {
                assert!(tails(edge + 1.0 / 256.0, degree) >= limit, "{edge}");
            }
            assert!(tails(edge, degree - 1) >= limit, "{edge} {degree}");
        }
        for (i, &degree) in DEGREE_BY_CELL.iter().enumerate() {
            let upper = (i + 1) as f64 / DEGREE_CELLS as f64;
            let row = SERIES_DEGREE.iter().find(|r| r.1 == degree).unwrap();
            assert!(row.0 >= upper, "cell {i}");
        }
    }

    /// Reference: the same recurrence as [`PairRates::factors`]'s series,
    /// in the same order, summed over all [`SERIES_TERMS`] terms with no
    /// test: where the table stops early the terms it leaves out move no
    /// bit, so the factors equal those sums to the bit, over `z = |l1| s`
    /// across `(0, 1)` (2,000 points, cells' ends included) for decaying,
    /// equal, coupled and growing pairs.
    #[test]
    fn the_series_factors_are_those_of_every_term_to_the_bit() {
        let matrices = [
            [[-0.05, 0.05], [0.0, -0.2]],
            [[-1.0 / 20.0, 1.0 / 20.0], [0.0, -1.0 / 5.0]],
            [[-0.1, 0.1], [0.0, -0.1]],
            [[-0.3, 0.2], [0.05, -0.1]],
            [[0.2, 0.1], [0.0, -0.4]],
            [[0.3, 0.1], [0.02, 0.25]],
        ];
        for a in matrices {
            let rates = PairRates::of(&a);
            let (m, q) = (rates.m, rates.q.max(0.0));
            for j in 1..2000 {
                let z = if j % 2 == 0 {
                    f64::from(j) / 2000.0
                } else {
                    (f64::from(j / 32 + 1) / 64.0 * (1.0 - 1e-12)).min(0.999)
                };
                let s = z / rates.l1.abs();
                let f = rates.factors(s);
                let (mut pk, mut hk, mut scale) = (1.0, 0.0, s);
                let (mut p0, mut p1) = (0.0, 0.0);
                for k in 0..SERIES_TERMS {
                    p0 += scale * pk;
                    p1 += scale * hk;
                    let next = (m * pk + q * hk, pk + m * hk);
                    (pk, hk) = (next.0 * s, next.1 * s);
                    scale *= INV_K[k + 2];
                }
                let (e0, e1) = (1.0 + (m * p0 + q * p1), p0 + m * p1);
                assert_eq!((f.p0, f.p1, f.e0, f.e1), (p0, p1, e0, e1), "{a:?} {z}");
            }
        }
    }

    /// Reference: IEEE 754 spacing by hand. Below 1 the doubles are
    /// `2^-53` apart, above it `2^-52`; around -1 the other way round; at
    /// 0.37 (in [0.25, 0.5)) `2^-54` on both sides; at 0 and at a level that
    /// is not finite the half gap is 0.
    #[test]
    fn edge_gaps_are_half_the_spacing_on_the_approaching_side() {
        let p = |e: i32| 2f64.powi(e);
        assert_eq!(edge_gap(1.0, true), p(-54));
        assert_eq!(edge_gap(1.0, false), p(-53));
        assert_eq!(edge_gap(-1.0, true), p(-53));
        assert_eq!(edge_gap(-1.0, false), p(-54));
        assert_eq!(edge_gap(0.37, true), p(-55));
        assert_eq!(edge_gap(0.37, false), p(-55));
        assert_eq!(edge_gap(0.0, true), 0.0);
        assert_eq!(edge_gap(f64::INFINITY, true), 0.0);
        assert_eq!(edge_gap(f64::NAN, false), 0.0);
    }

    /// Reference: `atanh(z) / z` and its series agree where they meet.
    #[test]
    fn atanhc_is_continuous_at_its_series() {
        let z = 1e-3;
        let series = 1.0 + z * z * (1.0 / 3.0 + z * z * (1.0 / 5.0 + z * z / 7.0));
        assert!((atanhc(z) - (z.atanh() / z)).abs() < 1e-15);
        assert!((atanhc(z * (1.0 - 1e-9)) - series).abs() < 1e-15);
        assert_eq!(atanhc(0.0), 1.0);
    }
}
