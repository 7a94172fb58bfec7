//! A cheap lower bound of a linear pair's first crossing
//! ([`crate::pair_form::first_crossing`]), for the lazy exact solver: the
//! entry's closed form `y0 + P0(s) u + P1(s) w` evaluated with two
//! exponentials (not the series the exact arithmetic uses near equal
//! rates), its root found to about 1e-10 (relative) by safeguarded Newton
//! steps, then lowered by [`MARGIN`]. The lazy solver queues the bound and
//! finds the crossing exactly only when the bound comes first: a target
//! whose course another event changes before it crosses is never polished
//! to the last bit.
//!
//! Wherever the two-exponential form may be inaccurate (half the rates'
//! difference `d` with `d s` below [`MIN_SPREAD`], equal or complex rates)
//! or the crossing ill-conditioned (an extremum or a limit within
//! [`LEVEL_MARGIN`] of the level, a rate at the root below
//! [`MIN_RATE`] of the level's scale per delay), it answers
//! [`Rough::Unsure`], and the caller finds the crossing exactly at once.

use crate::factor::phi;
use crate::pair_form::{apply, atanhc, rate, PairRates};
use ia_core::Direction;

/// The relative amount by which a rough root is lowered into a bound:
/// far above its error (about 1e-10 from the iteration, 1e-13 from the
/// arithmetic where `d s >= MIN_SPREAD`).
pub(crate) const MARGIN: f64 = 1e-7;
/// `d s` below which the two-exponential form would cancel.
const MIN_SPREAD: f64 = 1e-3;
/// Relative distance (to `1 + |level| + |y0|`) within which an extremum
/// or a limit counts as touching the level.
const LEVEL_MARGIN: f64 = 1e-8;
/// `|g'| s` at the root, relative to `1 + |level| + |y0|`, below which a
/// crossing counts as grazing.
const MIN_RATE: f64 = 1e-6;

/// What [`rough_crossing`] knows of a first crossing.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) enum Rough {
    /// There is none (by a margin).
    Never,
    /// It is at this delay or after.
    NotBefore(f64),
    /// Find it exactly.
    Unsure,
}

/// Entry `k` of the pair from `y0` in the two-exponential form.
struct Fast {
    y0: f64,
    level: f64,
    u: f64,
    w: f64,
    l1: f64,
    l2: f64,
    d: f64,
}

impl Fast {
    /// `(g(s), g'(s))`.
    fn at(&self, s: f64) -> (f64, f64) {
        let (e1, e2) = ((self.l1 * s).exp(), (self.l2 * s).exp());
        let (p1, p2) = (phi(self.l1, s), phi(self.l2, s));
        let (e0, e_1) = (0.5 * (e1 + e2), (e1 - e2) / (2.0 * self.d));
        let (p0, p_1) = (0.5 * (p1 + p2), (p1 - p2) / (2.0 * self.d));
        (
            self.y0 + (p0 * self.u + p_1 * self.w) - self.level,
            e0 * self.u + e_1 * self.w,
        )
    }
}

/// A lower bound of [`first_crossing`](crate::pair_form::first_crossing)'s
/// delay with the same arguments, or that there is none, or
/// [`Rough::Unsure`] (see the [module documentation](self)).
pub(crate) fn rough_crossing(
    a: &[[f64; 2]; 2],
    b: &[f64; 2],
    rates: &PairRates,
    y0: &[f64; 2],
    k: usize,
    level: f64,
    direction: Direction,
) -> Rough {
    if rates.q.is_nan() || rates.q <= 0.0 {
        return Rough::Unsure;
    }
    let d = rates.q.sqrt();
    let r0 = rate(a, b, y0);
    let nr0 = apply(&rates.n, &r0);
    let fast = Fast {
        y0: y0[k],
        level,
        u: r0[k],
        w: nr0[k],
        l1: rates.m + d,
        l2: rates.m - d,
        d,
    };
    let (u, w) = (fast.u, fast.w);
    let scale = 1.0 + level.abs() + y0[k].abs();
    let g0 = y0[k] - level;
    if (u == 0.0 && w == 0.0) || g0 == 0.0 || !scale.is_finite() {
        return Rough::Unsure;
    }
    let mut rising = if u != 0.0 { u > 0.0 } else { w > 0.0 };
    let extremum = (w != 0.0)
        .then(|| {
            let r = -u / w;
            let rd = r * d;
            (r > 0.0 && rd < 1.0).then(|| r * atanhc(rd))
        })
        .flatten()
        .filter(|s| s.is_finite() && *s > 0.0);
    let (mut lo, mut g_lo) = (0.0, g0);
    if let Some(s_star) = extremum {
        let (g_star, _) = fast.at(s_star);
        if !g_star.is_finite() || g_star.abs() <= LEVEL_MARGIN * scale {
            return Rough::Unsure;
        }
        let sign = if rising { 1.0 } else { -1.0 };
        if sign * g_lo < 0.0 && sign * g_star > 0.0 {
            if !fires(direction, rising) {
                // The exact search looks on past a crossing it does not
                // fire on: leave such cases to it.
                return Rough::Unsure;
            }
            return root(&fast, rising, (lo, g_lo), (s_star, g_star), scale);
        }
        (lo, g_lo, rising) = (s_star, g_star, !rising);
    }
    let toward = if rising { g_lo < 0.0 } else { g_lo > 0.0 };
    if !toward || !fires(direction, rising) {
        return Rough::Never;
    }
    let (l1, l2) = (fast.l1, fast.l2);
    if l1 < 0.0 && l2 < 0.0 {
        // Decaying to the equilibrium y0 - A^{-1} r0.
        let inv_r = [
            (a[1][1] * r0[0] - a[0][1] * r0[1]) / rates.det,
            (-a[1][0] * r0[0] + a[0][0] * r0[1]) / rates.det,
        ];
        let limit = (y0[k] - inv_r[k]) - level;
        if !limit.is_finite() || limit.abs() <= LEVEL_MARGIN * scale {
            return Rough::Unsure;
        }
        if (limit > 0.0) != rising {
            return Rough::Never;
        }
    }
    let slowest = l1.abs().min(l2.abs()).max(l1.abs().max(l2.abs()) * 1e-3);
    let mut step = if slowest > 0.0 { 1.0 / slowest } else { 1.0 };
    if !step.is_finite() {
        return Rough::Unsure;
    }
    for _ in 0..64 {
        let hi = lo + step;
        let (g_hi, _) = fast.at(hi);
        if !g_hi.is_finite() {
            return Rough::Unsure;
        }
        if (rising && g_hi >= 0.0) || (!rising && g_hi <= 0.0) {
            return root(&fast, rising, (lo, g_lo), (hi, g_hi), scale);
        }
        (lo, g_lo) = (hi, g_hi);
        step *= 2.0;
    }
    Rough::Unsure
}

/// Whether a monotone segment (`rising` or not) crosses in `direction`.
fn fires(direction: Direction, rising: bool) -> bool {
    match direction {
        Direction::Rising => rising,
        Direction::Falling => !rising,
        Direction::Either => true,
    }
}

/// The bound below the root of a monotone segment `[lo, hi]` whose ends
/// bracket it.
fn root(
    fast: &Fast,
    rising: bool,
    (mut lo, _): (f64, f64),
    (mut hi, _): (f64, f64),
    scale: f64,
) -> Rough {
    let sign = if rising { 1.0 } else { -1.0 };
    let mut s = lo + 0.5 * (hi - lo);
    for _ in 0..60 {
        let (g, dg) = fast.at(s);
        if !g.is_finite() || !dg.is_finite() {
            return Rough::Unsure;
        }
        if sign * g >= 0.0 {
            hi = s;
        } else {
            lo = s;
        }
        let newton = s - g / dg;
        let next = if newton > lo && newton < hi && dg != 0.0 {
            newton
        } else {
            lo + 0.5 * (hi - lo)
        };
        if (next - s).abs() <= 1e-10 * next.abs() || hi - lo <= 1e-10 * hi {
            if dg.abs() * next <= MIN_RATE * scale || fast.d * next < MIN_SPREAD {
                return Rough::Unsure;
            }
            let bound = next * (1.0 - MARGIN);
            return if bound > 0.0 {
                Rough::NotBefore(bound)
            } else {
                Rough::Unsure
            };
        }
        s = next;
    }
    Rough::Unsure
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pair_form::first_crossing;

    /// Reference: the exact first crossing ([`first_crossing`], itself
    /// checked against mpmath): over a grid of current-based neurons
    /// (`tau_mem = 20`, `tau_syn` from 2 to 19.99, starting potentials and
    /// currents on both sides of the threshold), every bound lies below the
    /// exact crossing and within 1e-6 of it, and `Never` only where there
    /// is none.
    #[test]
    fn rough_crossings_bound_the_exact_ones() {
        let mut bounds = 0;
        for tau_syn in [2.0, 5.0, 12.0, 19.0, 19.99] {
            let a = [[-1.0 / 20.0, 1.0 / 20.0], [0.0, -1.0 / tau_syn]];
            let rates = PairRates::of(&a);
            for v in [-0.5, 0.0, 0.3, 0.9, 0.999] {
                for i in [-3.0, 0.0, 0.5, 1.0, 1.2, 2.0, 5.0, 40.0] {
                    for direction in [Direction::Rising, Direction::Either, Direction::Falling] {
                        let y = [v, i];
                        let exact = first_crossing(&a, &[0.0; 2], &rates, &y, 0, 1.0, direction);
                        match rough_crossing(&a, &[0.0; 2], &rates, &y, 0, 1.0, direction) {
                            Rough::Never => assert_eq!(exact, None, "{tau_syn} {v} {i}"),
                            Rough::NotBefore(s) => {
                                let e = exact.expect("a crossing");
                                assert!(s <= e && s >= e * (1.0 - 1e-6), "{s} vs {e}");
                                bounds += 1;
                            }
                            Rough::Unsure => {}
                        }
                    }
                }
            }
        }
        assert!(bounds > 20, "{bounds}");
    }

    /// Reference: equal rates (`tau_mem = tau_syn`) and a current that
    /// takes the potential exactly to the level at its peak are left to the
    /// exact search.
    #[test]
    fn equal_rates_are_left_to_the_exact_search() {
        let a = [[-0.1, 0.1], [0.0, -0.1]];
        let rates = PairRates::of(&a);
        let rough = rough_crossing(
            &a,
            &[0.0; 2],
            &rates,
            &[0.0, 5.0],
            0,
            1.0,
            Direction::Rising,
        );
        assert_eq!(rough, Rough::Unsure);
    }
}
