//! The solver of a run as a value ([`SolverChoice`]): its checks and the
//! stepper it builds.

use crate::explicit_rk::{RkStepper, StepControl};
use crate::implicit_rk::{EsdirkTableau, ImplicitStepper, KVAERNO3, KVAERNO5, TRBDF2};
use crate::ode_solvers_adapter::{OdeSolversMethod, OdeSolversStepper};
use crate::stepper::Stepper;
use crate::tableau::{ButcherTableau, DOP853, DOPRI5, RK4};
use ia_core::{short_num, HybridError};
use serde::{Deserialize, Serialize};

/// The solver, chosen per run as a value.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "method", rename_all = "snake_case", deny_unknown_fields)]
pub enum SolverChoice {
    /// Classical RK4 with fixed step `dt`.
    Rk4 {
        /// Step size.
        dt: f64,
    },
    /// Adaptive Dormand-Prince 5(4) with dense output.
    Dopri5 {
        /// Relative tolerance.
        rtol: f64,
        /// Absolute tolerance.
        atol: f64,
        /// Largest step (unbounded when absent).
        #[serde(default)]
        max_step: Option<f64>,
    },
    /// Adaptive Dormand-Prince 8(5,3) with its seventh-order dense output:
    /// for tight tolerances and long smooth stretches between events, where
    /// its steps are several times longer than DOPRI5's.
    Dop853 {
        /// Relative tolerance.
        rtol: f64,
        /// Absolute tolerance.
        atol: f64,
        /// Largest step (unbounded when absent).
        #[serde(default)]
        max_step: Option<f64>,
    },
    /// TR-BDF2, an implicit (ESDIRK) second-order method with a third-order
    /// error estimate, for stiff flows at loose tolerances
    /// ([`crate::implicit_rk::TRBDF2`]).
    Trbdf2 {
        /// Relative tolerance.
        rtol: f64,
        /// Absolute tolerance.
        atol: f64,
        /// Largest step (unbounded when absent).
        #[serde(default)]
        max_step: Option<f64>,
    },
    /// Kvaerno's implicit (ESDIRK) 3(2) method, for stiff flows at moderate
    /// tolerances ([`crate::implicit_rk::KVAERNO3`]).
    Kvaerno3 {
        /// Relative tolerance.
        rtol: f64,
        /// Absolute tolerance.
        atol: f64,
        /// Largest step (unbounded when absent).
        #[serde(default)]
        max_step: Option<f64>,
    },
    /// Kvaerno's implicit (ESDIRK) 5(4) method, for stiff flows at tight
    /// tolerances ([`crate::implicit_rk::KVAERNO5`]).
    Kvaerno5 {
        /// Relative tolerance.
        rtol: f64,
        /// Absolute tolerance.
        atol: f64,
        /// Largest step (unbounded when absent).
        #[serde(default)]
        max_step: Option<f64>,
    },
    /// The exact event-driven solver ([`crate::exact`]): closed-form
    /// propagation between events, for flows that declare themselves
    /// decoupled and linear and threshold guards. It computes the run and
    /// forward sensitivities; the adjoint takes a Runge-Kutta method.
    Exact,
    /// An integrator of the `ode_solvers` crate, run through the adapter.
    OdeSolvers {
        /// Which integrator.
        integrator: OdeSolversMethod,
        /// Relative tolerance (adaptive integrators).
        rtol: f64,
        /// Absolute tolerance (adaptive integrators).
        atol: f64,
        /// Length of one adapter step (each runs the wrapped integrator
        /// over that interval, with its own internal steps).
        macro_step: f64,
    },
}

impl Default for SolverChoice {
    fn default() -> Self {
        SolverChoice::Dopri5 {
            rtol: 1e-10,
            atol: 1e-10,
            max_step: None,
        }
    }
}

/// Why the exact solver has no stepper: it carries the state over each
/// stretch between events in closed form ([`crate::exact`]), which
/// [`crate::run`] and [`crate::simulate`] dispatch to.
pub const EXACT_HAS_NO_STEPS: &str = "the exact solver (method exact) takes no steps: it carries the state between events in closed form, so it has no stepper; run it through ia_events::simulate or ia_events::run (which dispatch to ia_events::exact), or choose rk4, dopri5, dop853, trbdf2, kvaerno3 or kvaerno5 for a stepper";

impl SolverChoice {
    /// Adaptive Dormand-Prince 5(4) with `rtol = atol = tol`.
    pub fn dopri5(tol: f64) -> Self {
        SolverChoice::Dopri5 {
            rtol: tol,
            atol: tol,
            max_step: None,
        }
    }

    /// Checks the tolerances and step sizes.
    pub fn validate(&self) -> Result<(), HybridError> {
        let positive = |name: &str, v: f64| {
            if v.is_finite() && v > 0.0 {
                Ok(())
            } else {
                Err(HybridError::invalid_num(
                    name,
                    v,
                    "must be a finite number greater than 0",
                ))
            }
        };
        let tolerance = |name: &str, v: f64| {
            if (1e-15..1.0).contains(&v) {
                Ok(())
            } else {
                Err(HybridError::invalid_num(
                    name,
                    v,
                    "a tolerance must lie in [1e-15, 1)",
                ))
            }
        };
        match *self {
            SolverChoice::Rk4 { dt } => positive("dt", dt),
            SolverChoice::Dopri5 {
                rtol,
                atol,
                max_step,
            }
            | SolverChoice::Dop853 {
                rtol,
                atol,
                max_step,
            }
            | SolverChoice::Trbdf2 {
                rtol,
                atol,
                max_step,
            }
            | SolverChoice::Kvaerno3 {
                rtol,
                atol,
                max_step,
            }
            | SolverChoice::Kvaerno5 {
                rtol,
                atol,
                max_step,
            } => {
                tolerance("rtol", rtol)?;
                tolerance("atol", atol)?;
                if let Some(m) = max_step {
                    positive("max_step", m)?;
                }
                Ok(())
            }
            SolverChoice::OdeSolvers {
                rtol,
                atol,
                macro_step,
                ..
            } => {
                tolerance("rtol", rtol)?;
                tolerance("atol", atol)?;
                positive("macro_step", macro_step)
            }
            SolverChoice::Exact => Ok(()),
        }
    }

    /// Checks the fixed step (`dt` of [`SolverChoice::Rk4`], `macro_step` of
    /// [`SolverChoice::OdeSolvers`]) against the run's `span`: more than
    /// [`MAX_FIXED_STEPS`] steps is refused (a step of `1e-16` would never
    /// finish).
    pub fn validate_for_span(&self, span: f64) -> Result<(), HybridError> {
        let (name, step) = match *self {
            SolverChoice::Rk4 { dt } => ("dt", dt),
            SolverChoice::OdeSolvers { macro_step, .. } => ("macro_step", macro_step),
            SolverChoice::Dopri5 { .. }
            | SolverChoice::Dop853 { .. }
            | SolverChoice::Trbdf2 { .. }
            | SolverChoice::Kvaerno3 { .. }
            | SolverChoice::Kvaerno5 { .. }
            | SolverChoice::Exact => return Ok(()),
        };
        if span / step > MAX_FIXED_STEPS {
            return Err(HybridError::invalid_num(
                name,
                step,
                format!(
                    "the run of length {} would take more than {} steps of {name}; use {name} of at least {}",
                    short_num(span),
                    short_num(MAX_FIXED_STEPS),
                    short_num(span / MAX_FIXED_STEPS)
                ),
            ));
        }
        Ok(())
    }

    /// The Runge-Kutta tableau every accepted step of this solver applies,
    /// when there is one (the built-in steppers; not the ode_solvers adapter,
    /// whose steps are hidden inside the wrapped crate).
    pub fn tableau(&self) -> Option<&'static ButcherTableau> {
        match self {
            SolverChoice::Rk4 { .. } => Some(&RK4),
            SolverChoice::Dopri5 { .. } => Some(&DOPRI5),
            SolverChoice::Dop853 { .. } => Some(&DOP853),
            SolverChoice::OdeSolvers { .. }
            | SolverChoice::Exact
            | SolverChoice::Trbdf2 { .. }
            | SolverChoice::Kvaerno3 { .. }
            | SolverChoice::Kvaerno5 { .. } => None,
        }
    }

    /// The tolerances `(rtol, atol)` of the built-in explicit methods with
    /// error control (DOPRI5, DOP853): what their steps are accurate to,
    /// against which the engine judges an event located on their dense
    /// output (`Run::refine_on_steps`).
    pub(crate) fn explicit_tolerances(&self) -> Option<(f64, f64)> {
        match self {
            SolverChoice::Dopri5 { rtol, atol, .. } | SolverChoice::Dop853 { rtol, atol, .. } => {
                Some((*rtol, *atol))
            }
            _ => None,
        }
    }

    /// The implicit (ESDIRK) method every accepted step of this solver
    /// applies, for the implicit solvers.
    pub fn implicit_method(&self) -> Option<&'static EsdirkTableau> {
        match self {
            SolverChoice::Trbdf2 { .. } => Some(&TRBDF2),
            SolverChoice::Kvaerno3 { .. } => Some(&KVAERNO3),
            SolverChoice::Kvaerno5 { .. } => Some(&KVAERNO5),
            _ => None,
        }
    }

    /// Whether this solver's stepper keeps the state and each column
    /// carried after it (forward sensitivities, derivative probes) apart in
    /// its error norm whatever the right-hand side says
    /// ([`crate::OdeRhs::controlled_apart`]): the implicit methods'
    /// ([`ImplicitStepper::COLUMNS_APART`]); the others norm them apart
    /// only when the right-hand side asks.
    pub fn columns_apart(&self) -> bool {
        self.implicit_method().is_some() && ImplicitStepper::COLUMNS_APART
    }

    /// Builds the stepper.
    pub fn stepper(&self) -> Result<Box<dyn Stepper + Send>, HybridError> {
        self.validate()?;
        Ok(match *self {
            SolverChoice::Rk4 { dt } => Box::new(RkStepper::new(&RK4, StepControl::Fixed { dt })?),
            SolverChoice::Dopri5 {
                rtol,
                atol,
                max_step,
            }
            | SolverChoice::Dop853 {
                rtol,
                atol,
                max_step,
            } => Box::new(RkStepper::new(
                self.tableau().expect("a built-in adaptive method"),
                StepControl::Adaptive {
                    rtol,
                    atol,
                    max_step: max_step.unwrap_or(f64::INFINITY),
                    initial_step: None,
                },
            )?),
            SolverChoice::Trbdf2 {
                rtol,
                atol,
                max_step,
            }
            | SolverChoice::Kvaerno3 {
                rtol,
                atol,
                max_step,
            }
            | SolverChoice::Kvaerno5 {
                rtol,
                atol,
                max_step,
            } => Box::new(ImplicitStepper::new(
                self.implicit_method().expect("a built-in implicit method"),
                rtol,
                atol,
                max_step.unwrap_or(f64::INFINITY),
            )?),
            SolverChoice::OdeSolvers {
                integrator,
                rtol,
                atol,
                macro_step,
            } => Box::new(OdeSolversStepper::new(integrator, rtol, atol, macro_step)),
            SolverChoice::Exact => return Err(HybridError::Unsupported(EXACT_HAS_NO_STEPS.into())),
        })
    }
}

/// The most adapter steps ([`SolverChoice::OdeSolvers`]'s `macro_step`) or
/// fixed steps ([`SolverChoice::Rk4`]'s `dt`) a run may take: a smaller
/// step over the span is refused up front rather than left running for
/// hours.
pub const MAX_FIXED_STEPS: f64 = 1e8;
