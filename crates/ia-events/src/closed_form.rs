//! The closed form of a decoupled linear flow, `x_i' = a_i x_i + b_i`, over
//! a stretch between events: the arithmetic the exact event-driven solver
//! ([`crate::exact`]) runs on, and that a component carried along with the
//! state ([`crate::ExtraState::advance_exact`]) or an adjoint replaying the
//! run uses too, so that all of them agree to the bit. Re-exported by
//! [`crate::exact`].

pub use crate::factor::phi;
use crate::pair_form::PairStretch;

/// One stretch between events of a decoupled linear flow,
/// `x_i' = a_i x_i + b_i`, as an [`ExtraState`](crate::ExtraState) carried along needs it
/// ([`ExtraState::advance_exact`](crate::ExtraState::advance_exact)): per component, the rate at its start
/// and the factors of the closed form over the stretch's length `s`:
///
/// ```text
/// x_i(t0 + s) = x_i + rate_i phi_i,   decay_i = e^{a_i s},
/// phi_i = (e^{a_i s} - 1) / a_i,      chi_i = int_0^s e^{a_i (s - u)} phi(a_i, u) du = (s e^{a_i s} - phi_i) / a_i
/// ```
///
/// (`s` and `s^2 / 2` where `a_i = 0`). A tangent `v` of the state with a
/// source linear in the state, `v' = a v + c + L x`, is carried by
/// `v(s) = decay v + (c + L x0) phi + L rate chi`.
#[derive(Clone, Copy, Debug)]
pub struct ExactSpan<'a> {
    /// The length of the stretch.
    pub s: f64,
    /// `a_i x_i + b_i` at its start.
    pub rate: &'a [f64],
    /// `e^{a_i s}`.
    pub decay: &'a [f64],
    /// `(e^{a_i s} - 1) / a_i`.
    pub phi: &'a [f64],
    /// `(s e^{a_i s} - phi_i) / a_i`.
    pub chi: &'a [f64],
    /// The linear pairs of the mode ([`ia_core::Flow::linear_blocks`]),
    /// carried by their own closed form ([`PairStretch`]); on their
    /// entries the factors above are those of no change (`rate`, `phi`
    /// and `chi` zero, `decay` one).
    pub pairs: &'a [PairStretch],
}

/// `(s e^{a s} - phi(a, s)) / a`, `s^2 / 2` where `a = 0`: the weight of a
/// source growing like `phi` in a tangent carried over `s` (a series where
/// `a s` is small, which the difference would cancel). [`ExactSpan::chi`]
/// per component.
///
/// ```
/// use ia_events::exact::chi;
/// assert_eq!(chi(0.0, 2.0), 2.0);
/// let (a, s) = (-3.0f64, 0.5f64);
/// assert!((chi(a, s) - (s * (a * s).exp() - (a * s).exp_m1() / a) / a).abs() < 1e-15);
/// ```
pub fn chi(a: f64, s: f64) -> f64 {
    let z = a * s;
    if z.abs() < 1e-2 {
        s * s
            * (0.5
                + z * (1.0 / 3.0
                    + z * (1.0 / 8.0 + z * (1.0 / 30.0 + z * (1.0 / 144.0 + z / 840.0)))))
    } else {
        (s * z.exp() - phi(a, s)) / a
    }
}

/// `e^{a s}` from `phi = phi(a, s)`, as `1 + a phi`: the factor by which a
/// stretch carries a tangent of the state ([`ExactSpan::decay`]), and its
/// transpose a cotangent; formed this way (not by `exp`) so that forward
/// and reverse passes multiply by the same number.
///
/// ```
/// use ia_events::exact::{decay, phi};
/// let (a, s) = (-2.0f64, 0.5f64);
/// assert!((decay(a, phi(a, s)) - (a * s).exp()).abs() < 1e-16);
/// ```
pub fn decay(a: f64, phi: f64) -> f64 {
    1.0 + a * phi
}

/// Carries `x` over a stretch of length `s` of `x_i' = a_i x_i + b_i`:
/// `x_i += (a_i x_i + b_i) phi(a_i, s)`, the arithmetic of the exact run,
/// so a state carried again (an adjoint replaying the run from a kept
/// state) is the run's to the last bit.
///
/// ```
/// let (a, b) = ([-2.0, 0.0], [2.0, 1.0]);
/// let mut x = [0.0, 1.0];
/// ia_events::exact::advance_state(&a, &b, 0.5, &mut x);
/// assert!((x[0] - (1.0 - (-1.0f64).exp())).abs() < 1e-16); // relaxes towards 1
/// assert_eq!(x[1], 1.5);
/// ```
pub fn advance_state(a: &[f64], b: &[f64], s: f64, x: &mut [f64]) {
    // The factor of the last rate met: a network's components share one.
    let mut last: Option<(f64, f64)> = None;
    for ((x, &ai), &bi) in x.iter_mut().zip(a).zip(b) {
        let factor = match last {
            Some((rate, factor)) if rate.to_bits() == ai.to_bits() => factor,
            _ => {
                let factor = phi(ai, s);
                last = Some((ai, factor));
                factor
            }
        };
        advance_component(x, ai, bi, factor);
    }
}

/// One component of `x' = a x + b` carried over a stretch whose
/// `phi(a, s)` is `phi`: the one formula the run and [`advance_state`]
/// share, so that their states agree to the bit.
#[inline(always)]
pub(crate) fn advance_component(x: &mut f64, a: f64, b: f64, phi: f64) {
    *x += (a * *x + b) * phi;
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Reference: `phi(a, s) = (e^{a s} - 1) / a` and its limit `s`.
    #[test]
    fn phi_carries_the_rate_exactly() {
        assert_eq!(phi(0.0, 0.25), 0.25);
        assert!((phi(-100.0, 0.01) - (1.0 - (-1.0f64).exp()) / 100.0).abs() < 1e-17);
        // Tiny a s: no cancellation.
        assert!((phi(1e-12, 1.0) - 1.0).abs() < 1e-12);
    }
}
