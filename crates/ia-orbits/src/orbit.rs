//! What [`periodic_orbit`](crate::solve::periodic_orbit) returns: the
//! orbit, its Floquet multipliers and their parameter derivatives.

use nalgebra::DMatrix;
use serde::{Deserialize, Serialize};

/// A Floquet multiplier: an eigenvalue of the monodromy matrix.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct Multiplier {
    /// Real part.
    pub re: f64,
    /// Imaginary part.
    pub im: f64,
    /// Whether this is the multiplier 1 along the flow.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub trivial: bool,
    /// Whether this is the multiplier 1 of the common shift of the
    /// [advancing](crate::options::OrbitOptions::advancing) states.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub advancing: bool,
}

impl Multiplier {
    /// `|lambda|`.
    pub fn modulus(&self) -> f64 {
        self.re.hypot(self.im)
    }
}

/// A complex derivative `d lambda / dp = re + i im`.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct ComplexDerivative {
    /// Real part.
    pub re: f64,
    /// Imaginary part.
    pub im: f64,
}

/// Derivatives of an orbit with respect to the parameters.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct OrbitSensitivities {
    /// `dx*/dp`, states by parameters.
    pub fixed_point: DMatrix<f64>,
    /// `dT*/dp`, one entry per parameter.
    pub period: Vec<f64>,
    /// `dlambda/dp`: for each multiplier (in the order of
    /// [`PeriodicOrbit::multipliers`]), one entry per parameter.
    pub multipliers: Vec<Vec<ComplexDerivative>>,
    /// The finite-difference step `h` of each parameter used for the
    /// derivative of the return map's Jacobian (see the [crate
    /// documentation](crate)).
    pub return_map_steps: Vec<f64>,
}

/// A periodic orbit through the section of one transition.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PeriodicOrbit {
    /// Names of the state entries.
    pub state_names: Vec<String>,
    /// Names of the parameters.
    pub param_names: Vec<String>,
    /// The section's transition.
    pub section: String,
    /// Firings of it in one period.
    pub events_per_period: usize,
    /// `x*`: the state just after the section's transition fires.
    pub fixed_point: Vec<f64>,
    /// `T*`: the time of one period.
    pub period: f64,
    /// Newton iterations taken.
    pub newton_iterations: usize,
    /// `|P(x*) - x*|` over the returning states and the differences of
    /// the advancing ones.
    pub residual: f64,
    /// The [advancing](crate::options::OrbitOptions::advancing) states, by name.
    pub advancing: Vec<String>,
    /// How far each advancing state moves in one period, `P(x*)_c - x*_c`
    /// (equal for all of them, to the tolerance).
    pub advance: Vec<f64>,
    /// `M = dx(T+)/dx0` at fixed time: flows and saltations chained.
    pub monodromy: DMatrix<f64>,
    /// `DP = M + f+ (dT/dx0)^T`: the Jacobian of the return map.
    pub return_map_jacobian: DMatrix<f64>,
    /// The eigenvalues of `M`, largest modulus first.
    pub multipliers: Vec<Multiplier>,
    /// Parameter derivatives, when defined.
    pub sensitivities: Option<OrbitSensitivities>,
    /// Why [`PeriodicOrbit::sensitivities`] is `None`, if it is.
    pub sensitivities_unavailable: Option<String>,
}
