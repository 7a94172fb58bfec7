//! The run recipe both fronts share: a checked scenario -> its problem ->
//! a simulation, Jacobians, a loss gradient, a periodic orbit or a fit,
//! with a failure of the run explained in the scenario's words where the
//! likely cause is known ([`explain`]).

use crate::error::ScenarioError;
use crate::periodic::{orbit_options, PeriodicScenario};
use crate::read::invalid;
use crate::scenario::Scenario;
use crate::solver::adjoint_solver;
use ia_adjoint::{Gradient, LossTerms, Method, Sensitivities};
use ia_core::{HybridError, Trajectory};
use ia_fit::{FitProblem, FitResult};

/// The sensitivity method of `gradient`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum GradientMethod {
    /// Forward sensitivities, [`Method::Forward`].
    #[default]
    Forward,
    /// The discrete adjoint, [`Method::Adjoint`].
    Adjoint,
}

impl GradientMethod {
    /// The name printed in the output's `method` field.
    pub fn name(self) -> &'static str {
        match self {
            GradientMethod::Forward => "forward",
            GradientMethod::Adjoint => "adjoint",
        }
    }

    /// The library's method.
    pub fn method(self) -> Method {
        match self {
            GradientMethod::Forward => Method::Forward,
            GradientMethod::Adjoint => Method::Adjoint,
        }
    }
}

/// What [`Scenario::derivatives`] computed: the per-output Jacobians (if
/// asked for, or the forward method's) and the loss gradient (with a
/// `loss`).
#[derive(Debug)]
pub struct Derivatives {
    /// The Jacobians of the final state, observations and event times.
    pub sensitivities: Option<Sensitivities>,
    /// The gradient of the scenario's loss, if it has one.
    pub loss: Option<Gradient>,
}

impl Scenario {
    /// The solver a run by `method` uses: the scenario's, or under the
    /// adjoint its built-in equivalent ([`adjoint_solver`]).
    fn solver_for(&self, method: GradientMethod) -> ia_events::SolverChoice {
        match method {
            GradientMethod::Forward => self.solver.clone(),
            GradientMethod::Adjoint => adjoint_solver(&self.solver),
        }
    }

    /// Simulates the run from `initial_state` with `params` (in the
    /// model's order; checked as [`Scenario::problem_from`] does).
    pub fn simulate_from(
        &self,
        initial_state: Vec<f64>,
        params: Vec<f64>,
    ) -> Result<Trajectory, ScenarioError> {
        let problem = self.problem_from(initial_state, params)?;
        ia_events::simulate(&problem).map_err(|e| explain(self, &problem.params, e))
    }

    /// The Jacobians of the run from `initial_state` with `params` by
    /// `method` (under the adjoint, on [`adjoint_solver`]), with respect to
    /// the columns `wrt` (by name; all if `None`).
    pub fn jacobian_from(
        &self,
        initial_state: Vec<f64>,
        params: Vec<f64>,
        method: GradientMethod,
        wrt: Option<&[&str]>,
    ) -> Result<Sensitivities, ScenarioError> {
        let problem = self.problem_with(initial_state, params, self.solver_for(method))?;
        match wrt {
            None => ia_adjoint::jacobian(&problem, method.method()),
            Some(wrt) => ia_adjoint::jacobian_wrt(&problem, method.method(), wrt),
        }
        .map_err(|e| explain(self, &problem.params, e))
    }

    /// The gradient of `loss` for the run from `initial_state` with
    /// `params`: one backward pass under the adjoint (on
    /// [`adjoint_solver`], with the scenario's `adjoint` options), the
    /// forward Jacobians contracted with the loss otherwise.
    pub fn loss_gradient_from(
        &self,
        initial_state: Vec<f64>,
        params: Vec<f64>,
        loss: &LossTerms,
        method: GradientMethod,
    ) -> Result<Gradient, ScenarioError> {
        let problem = self.problem_with(initial_state, params, self.solver_for(method))?;
        let explain = |e| explain(self, &problem.params, e);
        match method {
            GradientMethod::Adjoint => {
                ia_adjoint::gradient_with(&problem, loss, &self.adjoint).map_err(explain)
            }
            GradientMethod::Forward => Ok(ia_adjoint::jacobian(&problem, Method::Forward)
                .map_err(explain)?
                .loss_gradient(loss)?),
        }
    }

    /// What `impact-adjoint gradient` computes for the scenario's own run
    /// by `method`: without a `loss`, the Jacobians; with one, its
    /// gradient, and the Jacobians too under the forward method (which
    /// computes them anyway) or if `jacobian` is true.
    pub fn derivatives(
        &self,
        method: GradientMethod,
        jacobian: bool,
    ) -> Result<Derivatives, ScenarioError> {
        let problem = self.problem_with(
            self.initial_state.clone(),
            self.params.clone(),
            self.solver_for(method),
        )?;
        let run_error = |e: HybridError| explain(self, &problem.params, e);
        let Some(loss) = &self.loss else {
            let sens = ia_adjoint::jacobian(&problem, method.method()).map_err(run_error)?;
            return Ok(Derivatives {
                sensitivities: Some(sens),
                loss: None,
            });
        };
        let (sens, grad) = match method {
            GradientMethod::Forward => {
                let sens = ia_adjoint::jacobian(&problem, method.method()).map_err(run_error)?;
                let grad = sens.loss_gradient(loss)?;
                (Some(sens), grad)
            }
            GradientMethod::Adjoint => {
                let grad =
                    ia_adjoint::gradient_with(&problem, loss, &self.adjoint).map_err(run_error)?;
                let sens = if jacobian {
                    Some(ia_adjoint::jacobian(&problem, method.method()).map_err(run_error)?)
                } else {
                    None
                };
                (sens, grad)
            }
        };
        Ok(Derivatives {
            sensitivities: sens,
            loss: Some(grad),
        })
    }

    /// Fits the scenario's free variables to its data (its `fit`; `source`
    /// names the scenario in the error of a scenario without one).
    pub fn fit_result(&self, source: &str) -> Result<FitResult, ScenarioError> {
        let spec = self.fit.as_ref().ok_or_else(|| {
            invalid(format!(
                "the scenario in {source} has no 'fit': the fit command needs {{\"free\": [...], \"data\": [...]}}"
            ))
        })?;
        let problem = self.problem()?;
        let free: Vec<&str> = spec.free.iter().map(String::as_str).collect();
        let mut fit = FitProblem::new(problem, &free, spec.data.clone())
            .map_err(|e| in_scenario_words(e, "fit.data"))?;
        for (name, low, high) in &spec.bounds {
            fit = fit
                .with_bounds(name, *low, *high)
                .map_err(|e| in_scenario_words(e, &format!("fit.bounds.{name}")))?;
        }
        fit.fit(&spec.options).map_err(ScenarioError::Fit)
    }
}

impl PeriodicScenario {
    /// The periodic orbit the scenario describes (`periodic`): Newton
    /// shooting from its starting guess ([`Scenario::periodic_orbit_from`]).
    pub fn orbit(&self) -> Result<ia_orbits::PeriodicOrbit, ScenarioError> {
        let scenario = &self.scenario;
        scenario.periodic_orbit_from(
            &self.section,
            &scenario.initial_state,
            &scenario.params,
            self.events_per_period,
            self.advancing.clone(),
            self.solver_given,
        )
    }
}

impl Scenario {
    /// The periodic orbit through the section of transition `section`, by
    /// Newton shooting from `initial_state` (a state just after `section`
    /// fires) with `params`, the scenario's `t_end` the longest run of one
    /// period, with the options of [`orbit_options`].
    pub fn periodic_orbit_from(
        &self,
        section: &str,
        initial_state: &[f64],
        params: &[f64],
        events_per_period: usize,
        advancing: Vec<usize>,
        solver_given: bool,
    ) -> Result<ia_orbits::PeriodicOrbit, ScenarioError> {
        let options = orbit_options(self, events_per_period, advancing, solver_given);
        Ok(ia_orbits::periodic_orbit(
            &self.system,
            section,
            initial_state,
            params,
            &options,
        )?)
    }
}

/// Adds to a failure of the run what in the scenario most likely caused it,
/// where the model knows it ([`ia_models::Model::hint`]): the expression of
/// a model written as equations behind a non-finite value, a ball on a
/// floor whose bounces accumulate until they are too small to resolve, a
/// slip-hopper that lifts off below its touchdown height while falling.
/// `params` are the run's parameters (the scenario's own, or those given to
/// [`Scenario::problem_from`]).
pub fn explain(scenario: &Scenario, params: &[f64], error: HybridError) -> ScenarioError {
    match scenario.model.hint(params, &error) {
        Some(hint) => ScenarioError::Explained { error, hint },
        None => error.into(),
    }
}

/// A library check of the fit's data or bounds, named by the scenario key
/// `key` (the library says `data`, `bounds of <name>`); the library's
/// other invalid options (the data's times) already name the scenario's
/// keys, since the command checks those first.
fn in_scenario_words(error: HybridError, key: &str) -> HybridError {
    match error {
        HybridError::InvalidOption { name, value, valid }
            if name == "data" || name.starts_with("bounds of ") =>
        {
            HybridError::InvalidOption {
                name: key.to_string(),
                value,
                valid,
            }
        }
        other => other,
    }
}
