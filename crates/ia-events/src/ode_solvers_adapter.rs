//! Adapter running the `ode_solvers` crate's integrators as a [`Stepper`].
//!
//! One adapter step covers up to `macro_step` of time: it runs the wrapped
//! integrator over that interval (Dopri5 and Dop853 with their own adaptive
//! steps, Rk4 as one classical step). Dense output re-runs the integrator
//! from the step's start to the requested time, which is exactly what
//! truncating the step to an event does, so the located event time and the
//! state before the reset agree. The wrapped integrators allocate per run
//! and control the error of every component; they are here for comparison
//! and for users who already trust them, not for speed. The discrete adjoint
//! needs the built-in steppers.

use crate::stepper::{OdeRhs, StepCounters, StepFailure, Stepper};
use ode_solvers::dop_shared::IntegrationError;
use ode_solvers::{DVector, Dop853, Dopri5, OutputType, Rk4, System};
use serde::{Deserialize, Serialize};
use std::cell::{Cell, RefCell};

/// Which `ode_solvers` integrator the adapter runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum OdeSolversMethod {
    /// `ode_solvers::Dopri5`, adaptive 5(4).
    Dopri5,
    /// `ode_solvers::Dop853`, adaptive 8(5,3).
    Dop853,
    /// `ode_solvers::Rk4`, one classical step per adapter step.
    Rk4,
}

impl OdeSolversMethod {
    /// Every method, with the name used on the command line.
    pub const ALL: [(OdeSolversMethod, &'static str); 3] = [
        (OdeSolversMethod::Dopri5, "ode_solvers.dopri5"),
        (OdeSolversMethod::Dop853, "ode_solvers.dop853"),
        (OdeSolversMethod::Rk4, "ode_solvers.rk4"),
    ];

    /// The command-line name.
    pub fn name(self) -> &'static str {
        Self::ALL
            .iter()
            .find(|(m, _)| *m == self)
            .map(|(_, n)| *n)
            .unwrap_or("ode_solvers")
    }
}

/// An `ode_solvers` integrator behind the [`Stepper`] trait.
pub struct OdeSolversStepper {
    method: OdeSolversMethod,
    rtol: f64,
    atol: f64,
    macro_step: f64,
    t_prev: f64,
    t: f64,
    y_prev: Vec<f64>,
    y: Vec<f64>,
    counters: StepCounters,
}

/// Presents an [`OdeRhs`] as an `ode_solvers::System`.
struct Wrapped<'r> {
    rhs: RefCell<&'r mut dyn OdeRhs>,
    evaluations: Cell<usize>,
}

impl System<f64, DVector<f64>> for &Wrapped<'_> {
    fn system(&self, t: f64, y: &DVector<f64>, dy: &mut DVector<f64>) {
        self.evaluations.set(self.evaluations.get() + 1);
        self.rhs
            .borrow_mut()
            .eval(t, y.as_slice(), dy.as_mut_slice());
    }
}

fn solver_failure(e: IntegrationError) -> StepFailure {
    match e {
        IntegrationError::StepSizeUnderflow { x } => StepFailure::Underflow {
            time: x,
            step: 0.0,
            min_step: f64::EPSILON * x.abs(),
        },
        other => StepFailure::Solver(format!("ode_solvers: {other}")),
    }
}

impl OdeSolversStepper {
    /// An adapter for `method` with tolerances (ignored by Rk4) and the
    /// length of one adapter step.
    pub fn new(method: OdeSolversMethod, rtol: f64, atol: f64, macro_step: f64) -> Self {
        Self {
            method,
            rtol,
            atol,
            macro_step,
            t_prev: 0.0,
            t: 0.0,
            y_prev: Vec::new(),
            y: Vec::new(),
            counters: StepCounters::default(),
        }
    }

    /// Runs the wrapped integrator from `(t0, y0)` over `h`.
    fn integrate(
        &mut self,
        rhs: &mut dyn OdeRhs,
        t0: f64,
        y0: &[f64],
        h: f64,
    ) -> Result<DVector<f64>, StepFailure> {
        if h == 0.0 {
            return Ok(DVector::from_column_slice(y0));
        }
        let start = DVector::from_column_slice(y0);
        let wrapped = Wrapped {
            rhs: RefCell::new(rhs),
            evaluations: Cell::new(0),
        };
        let (outputs, rejected) = match self.method {
            OdeSolversMethod::Rk4 => {
                let mut solver = Rk4::new(&wrapped, t0, start, t0 + h, h);
                solver.integrate().map_err(solver_failure)?;
                (solver.y_out().last().cloned(), 0)
            }
            OdeSolversMethod::Dopri5 => {
                let mut solver = Dopri5::new(&wrapped, t0, t0 + h, h, start, self.rtol, self.atol);
                // Sparse output: the last entry is the integrated end state,
                // not an interpolant.
                solver.set_output(OutputType::Sparse);
                let stats = solver.integrate().map_err(solver_failure)?;
                (solver.y_out().last().cloned(), stats.rejected_steps)
            }
            OdeSolversMethod::Dop853 => {
                let mut solver = Dop853::new(&wrapped, t0, t0 + h, h, start, self.rtol, self.atol);
                solver.set_output(OutputType::Sparse);
                let stats = solver.integrate().map_err(solver_failure)?;
                (solver.y_out().last().cloned(), stats.rejected_steps)
            }
        };
        self.counters.rhs_evaluations += wrapped.evaluations.get();
        self.counters.rejected_steps += rejected as usize;
        let y_end =
            outputs.ok_or_else(|| StepFailure::Solver("ode_solvers returned no output".into()))?;
        if y_end.iter().all(|v| v.is_finite()) {
            Ok(y_end)
        } else {
            Err(StepFailure::NonFinite { time: t0 + h })
        }
    }

    fn advance_from_previous(
        &mut self,
        rhs: &mut dyn OdeRhs,
        t_end: f64,
    ) -> Result<(), StepFailure> {
        let y_prev = std::mem::take(&mut self.y_prev);
        let result = self.integrate(rhs, self.t_prev, &y_prev, t_end - self.t_prev);
        self.y_prev = y_prev;
        self.y.copy_from_slice(result?.as_slice());
        self.t = t_end;
        Ok(())
    }
}

impl Stepper for OdeSolversStepper {
    fn name(&self) -> &str {
        self.method.name()
    }

    fn start(&mut self, _rhs: &mut dyn OdeRhs, t: f64, y: &[f64]) -> Result<(), StepFailure> {
        self.t = t;
        self.t_prev = t;
        self.y = y.to_vec();
        self.y_prev = y.to_vec();
        Ok(())
    }

    fn step(&mut self, rhs: &mut dyn OdeRhs, t_limit: f64) -> Result<(), StepFailure> {
        let remaining = t_limit - self.t;
        let t_end = if self.macro_step >= remaining {
            t_limit
        } else {
            self.t + self.macro_step
        };
        // A macro step below the resolution of the time would never advance.
        let min_step = 8.0 * f64::EPSILON * self.t.abs().max(t_limit.abs());
        if t_end - self.t < min_step && t_end < t_limit {
            return Err(StepFailure::Underflow {
                time: self.t,
                step: self.macro_step,
                min_step,
            });
        }
        self.t_prev = self.t;
        self.y_prev.copy_from_slice(&self.y);
        self.advance_from_previous(rhs, t_end)
    }

    fn truncate(&mut self, rhs: &mut dyn OdeRhs, t_new: f64) -> Result<(), StepFailure> {
        self.advance_from_previous(rhs, t_new)
    }

    fn time(&self) -> f64 {
        self.t
    }

    fn state(&self) -> &[f64] {
        &self.y
    }

    fn previous_time(&self) -> f64 {
        self.t_prev
    }

    fn previous_state(&self) -> &[f64] {
        &self.y_prev
    }

    fn interpolate(&mut self, rhs: &mut dyn OdeRhs, t: f64, out: &mut [f64]) {
        let m = out.len();
        if t <= self.t_prev {
            out.copy_from_slice(&self.y_prev[..m]);
        } else if t >= self.t {
            out.copy_from_slice(&self.y[..m]);
        } else {
            let y_prev = std::mem::take(&mut self.y_prev);
            match self.integrate(rhs, self.t_prev, &y_prev, t - self.t_prev) {
                Ok(y) => out.copy_from_slice(&y.as_slice()[..m]),
                // A failed re-run yields NaN, which the root finder reports.
                Err(_) => out.fill(f64::NAN),
            }
            self.y_prev = y_prev;
        }
    }

    fn counters(&self) -> StepCounters {
        self.counters
    }
}
