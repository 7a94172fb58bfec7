//! The failures of the periodic-orbit solver.

use ia_core::{short_num, HybridError};
use thiserror::Error;

/// An error of [`crate::periodic_orbit`].
#[derive(Debug, Error)]
pub enum OrbitError {
    /// Newton's method on the return map did not reach the tolerance.
    #[error("Newton's method on the return map of section '{section}' did not converge: after {iterations} iterations the residual |P(x) - x| is {residual:e}, above the tolerance {tolerance:e} (relative to max(1, |x|)); {reason}; try a starting guess closer to the orbit (the state just after '{section}' fires), a larger max_iterations, or a larger events_per_period if the orbit comes back only after several firings of '{section}'")]
    NoConvergence {
        /// The section's transition.
        section: String,
        /// Newton iterations taken.
        iterations: usize,
        /// `|P(x) - x|` at the last iterate.
        residual: f64,
        /// The tolerance asked for.
        tolerance: f64,
        /// Why the iteration stopped.
        reason: String,
    },
    /// The section's transition did not fire often enough within one run.
    #[error("no return to section '{section}': from the state {{{}}}, '{section}' fired {fired} of the {needed} times of one period before max_period = {}; give a longer max_period, or a starting state just after '{section}' fires on the orbit", state.iter().map(|(name, v)| format!("{name}: {}", short_num(*v))).collect::<Vec<_>>().join(", "), short_num(*max_period))]
    NoReturn {
        /// The section's transition.
        section: String,
        /// The state the period started from, by state name.
        state: Vec<(String, f64)>,
        /// Firings seen.
        fired: usize,
        /// Firings in one period (`events_per_period`).
        needed: usize,
        /// The run length allowed for one period.
        max_period: f64,
    },
    /// A run of one period failed (an invalid option, a grazing event, ...).
    #[error("{source} (while running one period from {during})")]
    Run {
        /// Which run: the starting guess, or the orbit.
        during: String,
        /// The integrator's or the sensitivity layer's error.
        #[source]
        source: HybridError,
    },
    /// An input is wrong before any run (unknown section, bad option).
    #[error(transparent)]
    Input(#[from] HybridError),
}

impl OrbitError {
    /// A short, stable name of the error kind: `no_convergence`,
    /// `no_return`, or the library's [`HybridError::kind`].
    ///
    /// ```
    /// use ia_orbits::OrbitError;
    /// let e = OrbitError::NoConvergence {
    ///     section: "step".into(), iterations: 50, residual: 1e-3, tolerance: 1e-10,
    ///     reason: "the iteration limit was reached".into(),
    /// };
    /// assert_eq!(e.kind(), "no_convergence");
    /// assert!(e.to_string().contains("after 50 iterations"));
    /// ```
    pub fn kind(&self) -> &'static str {
        match self {
            OrbitError::NoConvergence { .. } => "no_convergence",
            OrbitError::NoReturn { .. } => "no_return",
            OrbitError::Run { source, .. } | OrbitError::Input(source) => source.kind(),
        }
    }
}
