//! `phi(a, s) = (e^{a s} - 1) / a`, the factor by which a rate carries a
//! state over a stretch: shared by the closed forms of decoupled entries
//! ([`crate::closed_form`]) and of linear pairs ([`crate::pair_form`]).

/// `(e^{a s} - 1) / a`, `s` where `a = 0`: the factor by which the rate
/// `a x + b` carries `x` over a delay `s` ([`ExactSpan::phi`](crate::exact::ExactSpan::phi) per
/// component).
///
/// ```
/// use ia_events::exact::phi;
/// assert_eq!(phi(0.0, 0.25), 0.25);
/// assert!((phi(-2.0, 0.5) - (1.0 - (-1.0f64).exp()) / 2.0).abs() < 1e-16);
/// ```
pub fn phi(a: f64, s: f64) -> f64 {
    if a == 0.0 {
        s
    } else {
        (a * s).exp_m1() / a
    }
}
