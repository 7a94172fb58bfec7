//! Bounds by a transform: a free variable ([`Free`]) bounded on one side
//! or both is optimised in an unbounded coordinate `u` (see the crate docs,
//! Bounds).

/// A free variable: its column among the run's inputs and its bounds.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Free {
    pub(crate) name: String,
    /// Index into `initial_state ++ params`.
    pub(crate) column: usize,
    pub(crate) lower: Option<f64>,
    pub(crate) upper: Option<f64>,
}

impl Free {
    /// `theta(u)` and `dtheta/du` (see the crate docs, Bounds).
    pub(crate) fn value(&self, u: f64) -> (f64, f64) {
        match (self.lower, self.upper) {
            (None, None) => (u, 1.0),
            (Some(a), Some(b)) => {
                let s = 1.0 / (1.0 + (-u).exp());
                (a + (b - a) * s, (b - a) * s * (1.0 - s))
            }
            (Some(a), None) => (a + u.exp(), u.exp()),
            (None, Some(b)) => (b - (-u).exp(), (-u).exp()),
        }
    }

    /// `u(theta)`, the inverse of [`Free::value`], for `theta` strictly
    /// inside the bounds.
    pub(crate) fn coordinate(&self, theta: f64) -> f64 {
        match (self.lower, self.upper) {
            (None, None) => theta,
            (Some(a), Some(b)) => {
                let s = (theta - a) / (b - a);
                (s / (1.0 - s)).ln()
            }
            (Some(a), None) => (theta - a).ln(),
            (None, Some(b)) => -(b - theta).ln(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::Free;

    proptest::proptest! {
        /// The bound transforms: `theta(u)` lies strictly inside the
        /// bounds, `u(theta(u)) = u`, and `dtheta/du` matches a central
        /// difference (the reference).
        #[test]
        fn bound_transforms_invert_and_differentiate(
            u in -8.0f64..8.0,
            a in -5.0f64..5.0,
            width in 0.1f64..10.0,
            sides in 0usize..4,
        ) {
            let (lower, upper) = match sides {
                0 => (None, None),
                1 => (Some(a), Some(a + width)),
                2 => (Some(a), None),
                _ => (None, Some(a)),
            };
            let free = Free { name: "x".into(), column: 0, lower, upper };
            let (theta, slope) = free.value(u);
            proptest::prop_assert!(lower.is_none_or(|a| theta > a) && upper.is_none_or(|b| theta < b));
            proptest::prop_assert!((free.coordinate(theta) - u).abs() < 1e-8 * u.abs().max(1.0));
            let h = 1e-6;
            let fd = (free.value(u + h).0 - free.value(u - h).0) / (2.0 * h);
            proptest::prop_assert!((slope - fd).abs() < 1e-6 * fd.abs().max(1.0), "{} vs {}", slope, fd);
        }
    }
}
