//! The settings of the orbit solver: [`OrbitOptions`] and its checks.

use ia_core::{HybridError, HybridSystem};
use ia_events::{EventOptions, SolverChoice};

/// The default integration tolerance of the orbit runs (`rtol = atol`).
pub const DEFAULT_TOLERANCE: f64 = 1e-12;

/// Settings of [`periodic_orbit`](crate::solve::periodic_orbit).
#[derive(Clone, Debug, PartialEq)]
pub struct OrbitOptions {
    /// Firings of the section's transition in one period (at least 1).
    pub events_per_period: usize,
    /// The longest run allowed for one period.
    pub max_period: f64,
    /// Newton stops when `|P(x) - x| <= tolerance * max(1, |x|)`.
    pub tolerance: f64,
    /// The most Newton iterations.
    pub max_iterations: usize,
    /// The integrator (default: Dormand-Prince at [`DEFAULT_TOLERANCE`]).
    pub solver: SolverChoice,
    /// Event location and pathology options.
    pub events: EventOptions,
    /// A guard within this distance of zero at the start of a period sits
    /// on zero and takes the side its rate points to, as it does right
    /// after an event ([`Problem::with_start_band`](ia_events::Problem::with_start_band)).
    pub start_band: f64,
    /// States that advance each period instead of returning (a runner's
    /// position and its foot's): by one common displacement, which is free,
    /// while their differences return (see the [crate
    /// documentation](crate), "Advancing states"). Empty by default: every
    /// state returns.
    pub advancing: Vec<usize>,
}

impl OrbitOptions {
    /// One firing per period, runs of at most `max_period`, tolerance
    /// `1e-10`, at most 50 Newton iterations, start band `1e-6`.
    pub fn new(max_period: f64) -> Self {
        Self {
            events_per_period: 1,
            max_period,
            tolerance: 1e-10,
            max_iterations: 50,
            solver: SolverChoice::dopri5(DEFAULT_TOLERANCE),
            events: EventOptions::default(),
            start_band: 1e-6,
            advancing: Vec::new(),
        }
    }

    /// Sets [`OrbitOptions::advancing`], by state index.
    ///
    /// The slip-hopper's running gait: every state returns but the mass's
    /// `x` and the foot's `xf`, which move on by one step a period.
    ///
    /// ```
    /// use ia_orbits::{periodic_orbit, OrbitOptions};
    ///
    /// let model = ia_models::by_name("slip-hopper").unwrap();
    /// let (system, params) = (model.system(), model.spec().default_params());
    /// let touchdown = [0.48238, 0.92866, 4.0, -1.18305, 0.8533]; // x, y, vx, vy, xf
    /// let options = OrbitOptions::new(3.0).with_advancing(vec![0, 4]);
    /// let gait = periodic_orbit(&system, "touchdown", &touchdown, &params, &options).unwrap();
    /// assert!((gait.advance[0] - gait.advance[1]).abs() < 1e-9);
    /// assert!(gait.advance[0] > 1.5); // metres a step
    /// assert!(gait.multipliers.iter().any(|m| m.advancing));
    /// ```
    pub fn with_advancing(mut self, states: Vec<usize>) -> Self {
        self.advancing = states;
        self
    }

    /// Sets [`OrbitOptions::events_per_period`].
    pub fn with_events_per_period(mut self, k: usize) -> Self {
        self.events_per_period = k;
        self
    }

    pub(crate) fn validate(&self) -> Result<(), HybridError> {
        if self.events_per_period == 0 {
            return Err(HybridError::invalid(
                "events_per_period",
                0,
                "must be an integer of at least 1",
            ));
        }
        if !(self.max_period.is_finite() && self.max_period > 0.0) {
            return Err(HybridError::invalid_num(
                "max_period",
                self.max_period,
                "must be a finite number greater than 0 (the run length for one period)",
            ));
        }
        if !(self.tolerance.is_finite() && self.tolerance > 0.0) {
            return Err(HybridError::invalid_num(
                "tolerance",
                self.tolerance,
                "must be a finite number greater than 0",
            ));
        }
        if self.max_iterations == 0 {
            return Err(HybridError::invalid(
                "max_iterations",
                0,
                "must be at least 1",
            ));
        }
        Ok(())
    }

    /// Checks [`OrbitOptions::advancing`] against the system's states.
    pub(crate) fn validate_advancing(&self, system: &HybridSystem) -> Result<(), HybridError> {
        let n = system.state_dim();
        for (k, &i) in self.advancing.iter().enumerate() {
            if i >= n {
                return Err(HybridError::invalid(
                    "advancing",
                    i,
                    format!("must be a state index below {n}"),
                ));
            }
            if self.advancing[..k].contains(&i) {
                return Err(HybridError::invalid(
                    "advancing",
                    &system.state_names()[i],
                    "is listed twice",
                ));
            }
        }
        if self.advancing.len() == n {
            return Err(HybridError::invalid(
                "advancing",
                self.advancing.len(),
                "must leave at least one state that returns",
            ));
        }
        Ok(())
    }
}
