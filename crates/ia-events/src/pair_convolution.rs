//! The convolutions of a 2x2 pair's factors over a stretch, what the
//! transpose of its tangent needs ([`PairStretch::transpose_tangent`]),
//! in closed form.
//!
//! With the rates `l1, l2` (real) and `e_i(u) = e^{l_i u}`, the factors of
//! `e^{A u} = E0(u) I + E1(u) N` are `E0 = (e_1 + e_2) / 2` and
//! `E1 = e_1 * e_2` (`*` the convolution over `[0, u]`; equal rates
//! included), and `Phi(u) = P0 I + P1 N` is `P_a = E_a * 1`. A convolution
//! of `k` exponentials `e^{x_i u / s}` at `s` is `s^{k-1}` times the divided
//! difference of `exp` at the points `x_i = l_i s`, so every convolution of
//! factors is a sum of positive divided differences of `exp` at `l1 s`,
//! `l2 s` and `0` (with repeats): no cancellation between them.
//!
//! The divided differences come from the recurrence
//! `exp[z0..zn] = (exp[z1..zn] - exp[z0..z_{n-1}]) / (zn - z0)` where the
//! points spread over more than 1 (the two differences are positive and
//! lose at most a few bits), and otherwise from the Taylor series about the
//! points' centre `c`, `e^c sum_j h_j(z - c) / (j + n)!` (`h_j` the complete
//! homogeneous polynomials), so equal and nearly equal rates and a zero
//! rate take the same path.
//!
//! [`PairStretch::transpose_tangent`]: crate::pair_form::PairStretch::transpose_tangent

/// The number of Taylor terms (`|z - c| <= 1/2` where the series is taken:
/// the terms fall as `2^-j / j!`, below `1e-20` of the sum by the last).
const TERMS: usize = 18;

/// `1 / k!` for `k < TERMS + 5`.
const INV_FACTORIAL: [f64; TERMS + 5] = {
    let mut t = [1.0; TERMS + 5];
    let mut k = 1;
    while k < TERMS + 5 {
        t[k] = t[k - 1] / (k as f64);
        k += 1;
    }
    t
};

/// The convolutions of a pair's factors at a stretch's end `s`:
/// `c[a][b] = (E_a * E_b)(s)`, `d[a][b] = (E_a * E_b * 1)(s)` (symmetric),
/// and `p[a] = (E_a * 1)(s) = P_a(s)`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct PairConvolutions {
    /// `(E_a * E_b)(s)`.
    pub c: [[f64; 2]; 2],
    /// `(E_a * E_b * 1)(s)`.
    pub d: [[f64; 2]; 2],
    /// `P_a(s)`.
    pub p: [f64; 2],
}

impl PairConvolutions {
    /// The convolutions for the real rates `l1, l2` over a stretch of
    /// length `s >= 0`.
    pub(crate) fn of(l1: f64, l2: f64, s: f64) -> Self {
        let dd = DividedDifferences::of([l1 * s, l2 * s, 0.0]);
        // K(n1, n2, n0) = s^{n - 1} exp[...] with n points.
        let k =
            |n1: usize, n2: usize, n0: usize| dd.at[n1][n2][n0] * s.powi((n1 + n2 + n0) as i32 - 1);
        let c00 = 0.25 * (k(2, 0, 0) + 2.0 * k(1, 1, 0) + k(0, 2, 0));
        let c01 = 0.5 * (k(2, 1, 0) + k(1, 2, 0));
        let d00 = 0.25 * (k(2, 0, 1) + 2.0 * k(1, 1, 1) + k(0, 2, 1));
        let d01 = 0.5 * (k(2, 1, 1) + k(1, 2, 1));
        Self {
            c: [[c00, c01], [c01, k(2, 2, 0)]],
            d: [[d00, d01], [d01, k(2, 2, 1)]],
            p: [0.5 * (k(1, 0, 1) + k(0, 1, 1)), k(1, 1, 1)],
        }
    }
}

/// `exp[...]` at `x[0]` repeated `n1 <= 2` times, `x[1]` `n2 <= 2` times
/// and `x[2]` `n0 <= 1` times: `at[n1][n2][n0]` (zero for no point).
struct DividedDifferences {
    at: [[[f64; 2]; 3]; 3],
}

impl DividedDifferences {
    fn of(x: [f64; 3]) -> Self {
        let lo = x.iter().copied().fold(f64::INFINITY, f64::min);
        let hi = x.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        if hi - lo <= 1.0 {
            return Self::clustered(x, 0.5 * (lo + hi));
        }
        let mut at = [[[0.0; 2]; 3]; 3];
        // In order of the number of points, so the recurrence finds the
        // smaller sets filled.
        for total in 1..=5usize {
            for n1 in 0..=2usize {
                for n2 in 0..=2usize {
                    let Some(n0) = total.checked_sub(n1 + n2) else {
                        continue;
                    };
                    if n0 > 1 {
                        continue;
                    }
                    let counts = [n1, n2, n0];
                    let present = (0..3).filter(|&i| counts[i] > 0);
                    let lo = present.clone().min_by(|&i, &j| x[i].total_cmp(&x[j]));
                    let hi = present.max_by(|&i, &j| x[i].total_cmp(&x[j]));
                    let (lo, hi) = (lo.expect("a point"), hi.expect("a point"));
                    let spread = x[hi] - x[lo];
                    at[n1][n2][n0] = if spread > 1.0 {
                        let less = |i: usize| {
                            let mut c = counts;
                            c[i] -= 1;
                            at[c[0]][c[1]][c[2]]
                        };
                        (less(lo) - less(hi)) / spread
                    } else {
                        taylor(x, counts, 0.5 * (x[lo] + x[hi]))
                    };
                }
            }
        }
        Self { at }
    }

    /// Every divided difference from the Taylor series about `c`, all the
    /// points within `1/2` of it: each set's `h_j` from a smaller set's by
    /// one more point `t` (`h_j += t h_{j-1}`), `x[0]` added last.
    // The loop variables are the points' multiplicities, `at`'s indices.
    #[allow(clippy::needless_range_loop)]
    fn clustered(x: [f64; 3], c: f64) -> Self {
        let t = x.map(|x| x - c);
        let terms = terms_for(t.iter().fold(0.0, |m: f64, t| m.max(t.abs())));
        let add = |h: &mut [f64; TERMS], t: f64| {
            for j in 1..terms {
                h[j] += t * h[j - 1];
            }
        };
        let ec = c.exp();
        let mut at = [[[0.0; 2]; 3]; 3];
        for n0 in 0..=1usize {
            let mut head = [0.0; TERMS];
            head[0] = 1.0;
            if n0 == 1 {
                add(&mut head, t[2]);
            }
            for n2 in 0..=2 {
                if n2 > 0 {
                    add(&mut head, t[1]);
                }
                let mut h = head;
                for n1 in 0..=2 {
                    if n1 > 0 {
                        add(&mut h, t[0]);
                    }
                    let Some(n) = (n1 + n2 + n0).checked_sub(1) else {
                        continue;
                    };
                    let sum: f64 = h[..terms]
                        .iter()
                        .zip(&INV_FACTORIAL[n..])
                        .map(|(h, f)| h * f)
                        .sum();
                    at[n1][n2][n0] = ec * sum;
                }
            }
        }
        Self { at }
    }
}

/// The number of Taylor terms for points within `r <= 1/2` of the centre:
/// the `j`-th term is at most `r^j / j!` of the first, below `1e-17` at the
/// last.
fn terms_for(r: f64) -> usize {
    let (mut term, mut j) = (1.0, 0);
    while term > 1e-17 && j + 1 < TERMS {
        j += 1;
        term *= r / j as f64;
    }
    j + 1
}

/// `exp[...]` at the points `x[i]` repeated `counts[i]` times, all within
/// `1/2` of `c`: `e^c sum_j h_j(x - c) / (j + n)!`.
fn taylor(x: [f64; 3], counts: [usize; 3], c: f64) -> f64 {
    let r = (0..3)
        .filter(|&i| counts[i] > 0)
        .fold(0.0, |m: f64, i| m.max((x[i] - c).abs()));
    let terms = terms_for(r);
    let mut h = [0.0; TERMS];
    h[0] = 1.0;
    for (i, &count) in counts.iter().enumerate() {
        let t = x[i] - c;
        for _ in 0..count {
            for j in 1..terms {
                h[j] += t * h[j - 1];
            }
        }
    }
    let n = counts.iter().sum::<usize>() - 1;
    let sum: f64 = h.iter().zip(&INV_FACTORIAL[n..]).map(|(h, f)| h * f).sum();
    c.exp() * sum
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pair_form::{expm5, van_loan, PairRates, PairStretch};

    /// Van Loan's integral of `lambda z0^T` (`z0 = [y0, 1]`) by the 5x5
    /// exponential (Taylor series of order 18, scaling and squaring): the
    /// transpose's `g` and `gamma`, independently of the convolutions.
    fn van_loan_reference(
        pair: &PairStretch,
        s: f64,
        y0: [f64; 2],
        lambda: [f64; 2],
    ) -> ([[f64; 2]; 2], [f64; 2]) {
        let z0 = [y0[0], y0[1], 1.0];
        let exp = expm5(van_loan(
            &pair.a,
            &pair.b,
            s,
            lambda.map(|l| z0.map(|z| l * z)),
        ));
        (
            [[exp[0][2], exp[0][3]], [exp[1][2], exp[1][3]]],
            [exp[0][4], exp[1][4]],
        )
    }

    fn lif(tau_mem: f64, tau_syn: f64) -> [[f64; 2]; 2] {
        [[-1.0 / tau_mem, 1.0 / tau_mem], [0.0, -1.0 / tau_syn]]
    }

    /// Reference: [`PairStretch::carry_tangent`] (the 5x5 augmented
    /// exponential of the tangent, not Van Loan's of the transpose), along a
    /// tangent moving `A`, `b` and `y0`: `lambda . v(s)` both ways, for real
    /// rates (the closed form) and complex ones (Van Loan's fallback).
    #[test]
    fn the_transpose_is_the_transpose_of_carry_tangent() {
        for a in [lif(10.0, 2.5), lif(5.0, 5.0), [[-0.2, 1.0], [-1.0, -0.3]]] {
            let rates = PairRates::of(&a);
            let (s, y0, b) = (2.0, [0.4, -1.1], [0.1, 0.2]);
            let factors = rates.factors(s);
            let pair = PairStretch {
                entries: [0, 1],
                a,
                b,
                rates,
                factors,
            };
            let (v0, e, beta) = ([0.3, -1.0], [[0.01, -0.02], [0.03, 0.04]], [0.5, 0.1]);
            let mut v = v0;
            pair.carry_tangent(s, y0, e, beta, &mut v);
            let lambda = [1.5, -0.7];
            let c = pair.transpose_tangent(s, y0, lambda);
            let mut dot = c.lambda[0] * v0[0] + c.lambda[1] * v0[1];
            dot += c.gamma[0] * beta[0] + c.gamma[1] * beta[1];
            let ge = c.g.iter().flatten().zip(e.iter().flatten());
            dot += ge.map(|(g, e)| g * e).sum::<f64>();
            let want = lambda[0] * v[0] + lambda[1] * v[1];
            assert!(
                (dot - want).abs() <= 1e-14 * (1.0 + want.abs()),
                "a = {a:?}: {dot} vs {want}"
            );
        }
    }

    /// Reference: mpmath's quadrature of `mu_k y_l` at 40 digits (rounded to 17), where the
    /// rates are `+- 1/2` and the stretch long (`e^{12.5}`).
    #[test]
    fn the_closed_form_transpose_matches_a_quadrature_for_a_growing_rate() {
        let a = [[0.5, 1.0], [0.0, -0.5]];
        let rates = PairRates::of(&a);
        let s = 25.0;
        let (b, factors) = ([0.0; 2], rates.factors(s));
        let pair = PairStretch {
            entries: [0, 1],
            a,
            b,
            rates,
            factors,
        };
        let got = pair.transpose_tangent(s, [0.4, -1.1], [1.5, -0.7]).g;
        let want = [
            [-6_601_097.248_419_661, -442_756.522_753_293_9],
            [-6_187_857.827_408_716, -442_756.522_527_831_4],
        ];
        for (got, want) in got.iter().flatten().zip(want.iter().flatten()) {
            assert!((got - want).abs() <= 1e-14 * want.abs(), "{got} vs {want}");
        }
    }

    /// Reference: the 5x5 Van Loan exponential ([`van_loan_reference`]), over
    /// rates 4 apart, equal, nearly equal (`d s` from `1e-9` to `1e-2`, on
    /// either side of the series' boundary), a zero rate, both rates zero,
    /// opposite rates (`m = 0`), a positive rate, with and without a
    /// constant term, from short stretches to long ones.
    #[test]
    fn the_closed_form_transpose_matches_van_loan() {
        let mut matrices = vec![
            lif(10.0, 2.5),
            lif(2.5, 10.0),
            lif(5.0, 5.0),
            [[0.0, 1.0], [0.0, -0.5]],
            [[0.0, 1.0], [0.0, 0.0]],
            [[0.0, 0.0], [0.0, 0.0]],
            [[0.5, 1.0], [0.0, -0.5]],
            [[0.3, 0.1], [0.2, -0.1]],
            [[-0.7, 0.2], [0.4, -0.1]],
        ];
        for delta in [1e-9, 1e-6, 1e-4, 1e-2, 0.15, 0.25] {
            matrices.push(lif(5.0, 5.0 * (1.0 + delta)));
        }
        let (y0, lambda) = ([0.4, -1.1], [1.5, -0.7]);
        for a in matrices {
            for b in [[0.0, 0.0], [0.3, -0.2]] {
                for s in [0.0, 1e-3, 0.7, 3.0, 10.0, 25.0, 80.0] {
                    let rates = PairRates::of(&a);
                    // The reference squares growing exponentials, its error
                    // growing with them (the closed form is checked there
                    // against a 40-digit quadrature below).
                    if rates.rates().is_some_and(|(l1, _)| l1 * s > 5.0) {
                        continue;
                    }
                    let factors = rates.factors(s);
                    let pair = PairStretch {
                        entries: [0, 1],
                        a,
                        b,
                        rates,
                        factors,
                    };
                    let got = pair.transpose_tangent(s, y0, lambda);
                    let (g, gamma) = van_loan_reference(&pair, s, y0, lambda);
                    let want = [g[0][0], g[0][1], g[1][0], g[1][1], gamma[0], gamma[1]];
                    let have = [
                        got.g[0][0],
                        got.g[0][1],
                        got.g[1][0],
                        got.g[1][1],
                        got.gamma[0],
                        got.gamma[1],
                    ];
                    let scale = want.iter().fold(1e-300f64, |m, x| m.max(x.abs()));
                    for (h, w) in have.iter().zip(&want) {
                        assert!(
                            (h - w).abs() <= 1e-13 * scale,
                            "a = {a:?}, b = {b:?}, s = {s}: {have:?} vs {want:?}"
                        );
                    }
                }
            }
        }
    }

    /// Reference: divided differences of `exp` at distinct points by their
    /// definition (two and three points far apart), and at a repeated point
    /// `e^x / (k - 1)!`.
    #[test]
    fn divided_differences_match_their_definition() {
        let x = [-3.0, 2.5, 0.0];
        let dd = DividedDifferences::of(x);
        let e = x.map(f64::exp);
        let two = (e[1] - e[0]) / (x[1] - x[0]);
        assert!((dd.at[1][1][0] - two).abs() <= 1e-15 * two);
        let three = ((e[1] - e[2]) / x[1] - (e[2] - e[0]) / (-x[0])) / (x[1] - x[0]);
        assert!((dd.at[1][1][1] - three).abs() <= 1e-15 * three);
        let same = DividedDifferences::of([-0.3, -0.3, -0.3]);
        let want = (-0.3f64).exp() / 6.0; // four points
        let got = same.at[2][2][0];
        assert!((got - want).abs() <= 4e-16 * want, "{got} vs {want}");
    }
}
