//! The root finder of event location (rule 2 of the event rules,
//! [`crate::vocabulary`]): the zero of a guard on a step's dense output,
//! inside a bracket whose ends it has on opposite sides.
//!
//! The guard along a dense output is a smooth function of time, over a
//! step close to a low-degree polynomial (DOPRI5's output is a quartic in
//! the step's fraction; on a ball's flight, a parabola). Each iterate is
//! the root inside the bracket of the parabola through the last three
//! points (Muller's method, order 1.84, exact on a parabola), with Brent's
//! safeguard: a step not under half the one before last is replaced by a
//! bisection, so a guard the parabolas fit badly is still bracketed at
//! least as fast as by bisection every other iterate. Every iterate is kept
//! half the time tolerance from the bracket's ends, so that once the
//! estimate is that close to the root the next iterate lands past it and
//! closes the bracket (a root approached from one side alone never closes
//! it otherwise).
//!
//! It takes fewer guard evaluations than the Illinois variant of regula
//! falsi it replaces (the `roots` crate's, order 1.44) on every catalogue
//! scenario: `ball2d_flat_a` at `rtol = atol = 1e-10` locates its three
//! impacts in 6 evaluations against 35 (with the bracket search after an
//! impact, `Run::locate`), `thermostat_a` its 12 switches in 48 against 63;
//! `docs/performance.md` has the figures. Brent's method as the `roots`
//! crate writes it (no minimum step towards the far end) had taken 10.5
//! evaluations per thermostat switch against Illinois's 6.3: the bracket of
//! a root approached from one side did not close.

/// A time and the guard's value there.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(super) struct Sample {
    /// The time.
    pub(super) t: f64,
    /// The guard's value at `t`.
    pub(super) g: f64,
}

/// When the search stops: the bracket within `tolerance` (its secant point
/// is then the root), or a value within `noise` of zero (its time is), or
/// after `max_iterations` evaluations (a failure).
#[derive(Clone, Copy, Debug)]
pub(super) struct Stopping {
    /// The time tolerance.
    pub(super) tolerance: f64,
    /// Rounding noise of the guard's values in the bracket.
    pub(super) noise: f64,
    /// The most evaluations before giving up.
    pub(super) max_iterations: usize,
}

/// Why no root was found.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(super) enum RootFailure {
    /// No convergence within the iteration limit.
    NoConvergence,
    /// The bracket's ends are on the same side of zero.
    NoBracketing,
    /// The guard was not finite at this time inside the bracket.
    NonFinite(f64),
}

impl RootFailure {
    /// What went wrong, in the words of an event location error.
    pub(super) fn describe(self) -> &'static str {
        match self {
            RootFailure::NoConvergence => "no convergence",
            RootFailure::NoBracketing => "the guard does not change sign",
            RootFailure::NonFinite(_) => "the guard is not finite inside the bracket",
        }
    }
}

/// The zero of `f` between `lo` and `hi` (`lo.t < hi.t`, values of
/// opposite signs or one of them within the noise of zero), to the
/// stopping rule `stop`. `earlier`, a point outside the bracket where `f`
/// is known (the start of a step when the bracket starts later), lets the
/// first iterate be a parabola's root rather than a secant's.
pub(super) fn bracketed_root(
    mut f: impl FnMut(f64) -> f64,
    lo: Sample,
    hi: Sample,
    earlier: Option<Sample>,
    stop: &Stopping,
) -> Result<f64, RootFailure> {
    for end in [lo, hi] {
        if !end.g.is_finite() {
            return Err(RootFailure::NonFinite(end.t));
        }
    }
    if lo.g.abs() <= stop.noise {
        return Ok(lo.t);
    }
    if hi.g.abs() <= stop.noise {
        return Ok(hi.t);
    }
    if lo.g * hi.g > 0.0 {
        return Err(RootFailure::NoBracketing);
    }
    let (mut lo, mut hi) = (lo, hi);
    // The last three points, newest first, for the parabola.
    let mut last = [hi, lo, earlier.unwrap_or(lo)];
    let mut known = if earlier.is_some() { 3 } else { 2 };
    // The last step and the one before, for Brent's safeguard.
    let (mut step, mut step_before) = (f64::INFINITY, f64::INFINITY);
    let margin = 0.5 * stop.tolerance;
    for _ in 0..stop.max_iterations {
        let width = hi.t - lo.t;
        let secant = lo.t + lo.g / (lo.g - hi.g) * width;
        if width <= stop.tolerance {
            return Ok(secant);
        }
        let newest = last[0].t;
        let interpolated = if known == 3 {
            parabola_root(&last, lo.t, hi.t).unwrap_or(secant)
        } else {
            secant
        };
        let mut t = if (interpolated - newest).abs() < 0.5 * step_before {
            interpolated
        } else {
            lo.t + 0.5 * width
        };
        t = t.max(lo.t + margin).min(hi.t - margin);
        if !(t > lo.t && t < hi.t) {
            // The bracket is down to the rounding of its ends.
            return Ok(secant);
        }
        step_before = step;
        step = (t - newest).abs();
        let g = f(t);
        if !g.is_finite() {
            return Err(RootFailure::NonFinite(t));
        }
        if g.abs() <= stop.noise {
            return Ok(t);
        }
        let sample = Sample { t, g };
        if (g > 0.0) == (lo.g > 0.0) {
            lo = sample;
        } else {
            hi = sample;
        }
        last = [sample, last[0], last[1]];
        known = (known + 1).min(3);
    }
    Err(RootFailure::NoConvergence)
}

/// The root inside `[lo, hi]` of the parabola through the three `points`
/// (newest first), the one nearest the newest when both are; `None` when
/// it has none there (or the points do not define one).
fn parabola_root(points: &[Sample; 3], lo: f64, hi: f64) -> Option<f64> {
    let [p1, p2, p3] = *points;
    // Newton's form about the newest point: with `s = t - t1`,
    // `p = g1 + d12 s + d123 s (s - (t2 - t1))`.
    let d12 = (p2.g - p1.g) / (p2.t - p1.t);
    let d13 = (p3.g - p1.g) / (p3.t - p1.t);
    let d123 = (d13 - d12) / (p3.t - p2.t);
    let (a, b, c) = (d123, d12 - d123 * (p2.t - p1.t), p1.g);
    let disc = b * b - 4.0 * a * c;
    if !(disc >= 0.0 && a.is_finite() && b.is_finite()) {
        return None;
    }
    // The two roots without cancellation: `c / q` and `q / a`.
    let q = -0.5 * (b + disc.sqrt().copysign(b));
    let inside = |s: f64| {
        let t = p1.t + s;
        (s.is_finite() && t >= lo && t <= hi).then_some(s)
    };
    match (inside(c / q), inside(q / a)) {
        (Some(s), Some(r)) => Some(p1.t + if s.abs() <= r.abs() { s } else { r }),
        (Some(s), None) | (None, Some(s)) => Some(p1.t + s),
        (None, None) => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use roots::{find_root_regula_falsi, Convergency};

    /// The stopping rule of event location for a bracket `[a, b]` of `f`.
    fn stopping(f: &impl Fn(f64) -> f64, a: f64, b: f64) -> Stopping {
        Stopping {
            tolerance: 2e-13,
            noise: 4.0 * f64::EPSILON * f(a).abs().max(f(b).abs()),
            max_iterations: 200,
        }
    }

    /// The root of `f` in `[a, b]` and the evaluations it took (the ends
    /// given, as event location gives them).
    fn solve(f: impl Fn(f64) -> f64, a: f64, b: f64) -> (Result<f64, RootFailure>, usize) {
        let stop = stopping(&f, a, b);
        let mut count = 0;
        let lo = Sample { t: a, g: f(a) };
        let hi = Sample { t: b, g: f(b) };
        let root = bracketed_root(
            |t| {
                count += 1;
                f(t)
            },
            lo,
            hi,
            None,
            &stop,
        );
        (root, count)
    }

    /// The replaced Illinois iteration (the `roots` crate's) under the
    /// same stopping rule: its root and evaluations, the reference the
    /// counts are compared with.
    fn illinois(f: impl Fn(f64) -> f64, a: f64, b: f64) -> (f64, usize) {
        struct Rule(Stopping);
        impl Convergency<f64> for Rule {
            fn is_root_found(&mut self, y: f64) -> bool {
                y.abs() <= self.0.noise
            }
            fn is_converged(&mut self, a: f64, b: f64) -> bool {
                (a - b).abs() <= self.0.tolerance
            }
            fn is_iteration_limit_reached(&mut self, iter: usize) -> bool {
                iter >= self.0.max_iterations
            }
        }
        let mut rule = Rule(stopping(&f, a, b));
        let (fa, fb) = (f(a), f(b));
        let mut count = 0;
        let root = find_root_regula_falsi(
            a,
            b,
            |t: f64| {
                if t == a {
                    fa
                } else if t == b {
                    fb
                } else {
                    count += 1;
                    f(t)
                }
            },
            &mut rule,
        )
        .unwrap();
        (root, count)
    }

    /// Smooth roots: each found within the time tolerance of the closed
    /// form (the reference), in fewer evaluations than the Illinois
    /// iteration took (counted on the same functions by the replaced code;
    /// the flat quintic's root is a triple one, where both stop on the
    /// noise rule, `|g| <= 4 eps scale`, long before the tolerance).
    #[rstest::rstest]
    // A ball's fall from rest, y = 1 - g t^2 / 2, over the step of
    // `ball2d_flat_a` that holds its first impact.
    #[case::parabola(|t: f64| 1.0 - 0.5 * 9.81 * t * t, 0.321, 2.0, (2.0f64 / 9.81).sqrt())]
    #[case::decay(|t: f64| 10.0 * (-t).exp() - 5.0, 0.0, 2.0, 2f64.ln())]
    #[case::growth(|t: f64| t.exp() - 1.5, 0.0, 3.0, 1.5f64.ln())]
    #[case::sine(|t: f64| t.sin() - 0.3, 0.0, 1.5, 0.3f64.asin())]
    #[case::cubic(|t: f64| (t - 0.7) * (t * t + 1.0), 0.0, 2.0, 0.7)]
    #[case::leaky_charge(|t: f64| 1.2 * (1.0 - (-t / 0.02).exp()) - 1.0, 0.0, 0.1, -0.02 * (1.0f64 / 6.0).ln())]
    fn smooth_roots_take_fewer_evaluations(
        #[case] f: fn(f64) -> f64,
        #[case] a: f64,
        #[case] b: f64,
        #[case] exact: f64,
    ) {
        let (root, count) = solve(f, a, b);
        let root = root.unwrap();
        let (reference, illinois_count) = illinois(f, a, b);
        assert!((root - exact).abs() <= 2e-13, "{root} against {exact}");
        assert!((reference - exact).abs() <= 2e-13);
        assert!(count < illinois_count, "{count} against {illinois_count}");
    }

    /// A parabola is found exactly from three points: the first iterate
    /// lands on the root (the closed form, to rounding), and it stops there
    /// on the noise rule.
    #[test]
    fn a_parabola_through_an_earlier_point_takes_one_evaluation() {
        // A ball rebounding at t = 0 at speed 3: y = 3 t - 4.905 t^2.
        let f = |t: f64| 3.0 * t - 4.905 * t * t;
        let exact = 3.0 / 4.905;
        let (a, b) = (0.1, 1.0);
        let stop = stopping(&f, a, b);
        let mut count = 0;
        let root = bracketed_root(
            |t| {
                count += 1;
                f(t)
            },
            Sample { t: a, g: f(a) },
            Sample { t: b, g: f(b) },
            Some(Sample { t: 0.0, g: f(0.0) }),
            &stop,
        )
        .unwrap();
        assert!((root - exact).abs() <= 4.0 * f64::EPSILON, "{root}");
        assert_eq!(count, 1);
    }

    /// A guard the parabolas fit badly (a steep front) is still found, to
    /// the tolerance, by the safeguard's bisections; a flat one (a triple
    /// root) stops on the noise rule. Either takes at most two evaluations
    /// more than the Illinois iteration (counted by the replaced code: 14,
    /// 10 and 33 against 15, 12 and 32 here).
    #[rstest::rstest]
    #[case::steep(|t: f64| (1000.0 * (t - 0.123)).atan(), 0.123)]
    #[case::tanh(|t: f64| (40.0 * (t - 0.7)).tanh() + 0.01 * (t - 0.7), 0.7)]
    #[case::flat(|t: f64| (t - 0.3).powi(3), 0.3)]
    fn hard_roots_are_still_found(#[case] f: fn(f64) -> f64, #[case] exact: f64) {
        let (root, count) = solve(f, 0.0, 1.0);
        let root = root.unwrap();
        let noise = stopping(&f, 0.0, 1.0).noise;
        assert!(
            (root - exact).abs() <= 2e-13 || f(root).abs() <= noise,
            "{root}"
        );
        let (_, illinois_count) = illinois(f, 0.0, 1.0);
        assert!(
            count <= illinois_count + 2,
            "{count} against {illinois_count}"
        );
    }

    /// The error cases: the ends on one side; a guard that is not finite
    /// inside the bracket; an iteration limit reached.
    #[test]
    fn failures_are_reported() {
        let (root, _) = solve(|t| t + 1.0, 0.0, 1.0);
        assert_eq!(root, Err(RootFailure::NoBracketing));
        let nan_inside = |t: f64| {
            if t > 0.0 && t < 1.0 {
                f64::NAN
            } else {
                t - 0.5
            }
        };
        let (root, count) = solve(nan_inside, 0.0, 1.0);
        assert!(matches!(root, Err(RootFailure::NonFinite(t)) if t > 0.0 && t < 1.0));
        assert_eq!(count, 1);
        let f = |t: f64| t - 0.5;
        let stop = Stopping {
            max_iterations: 0,
            ..stopping(&f, 0.0, 1.0)
        };
        let root = bracketed_root(
            f,
            Sample { t: 0.0, g: -0.5 },
            Sample { t: 1.0, g: 0.5 },
            None,
            &stop,
        );
        assert_eq!(root, Err(RootFailure::NoConvergence));
    }

    /// An end within the noise of zero is the root, with no evaluation.
    #[test]
    fn an_end_on_zero_is_the_root() {
        let (root, count) = solve(|t| t - 1.0, 0.0, 1.0);
        assert_eq!(root, Ok(1.0));
        assert_eq!(count, 0);
    }
}
