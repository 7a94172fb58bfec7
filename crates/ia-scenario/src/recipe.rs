//! The run recipe both fronts share: a checked scenario -> its problem ->
//! a simulation, Jacobians, a loss gradient, a periodic orbit or a fit,
//! with a failure of the run explained in the scenario's words where the
//! likely cause is known ([`explain`]).

use crate::error::ScenarioError;
use crate::periodic::{orbit_options, PeriodicScenario};
use crate::read::invalid;
use crate::rules;
use crate::scenario::Scenario;
use crate::solver::adjoint_solver;
use ia_adjoint::{Gradient, LossTerms, Method, Sensitivities};
use ia_core::{short_num, HybridError, Trajectory};
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
/// where that is known: a ball on a floor whose bounces accumulate (each
/// rebound `e` times the last) fails with `zeno`, `grazing`,
/// `event_location` or `step_size_underflow` once the rebounds are too small
/// to resolve; the hint names `e` and when the ball comes to rest. A
/// slip-hopper that lifts off below its touchdown height while falling
/// (outside the model's scope) fails the same ways; the hint says where
/// and why.
/// `params` are the run's parameters (the scenario's own, or those given to
/// [`Scenario::problem_from`]).
pub fn explain(scenario: &Scenario, params: &[f64], error: HybridError) -> ScenarioError {
    if let Some(culprit) = scenario
        .equations
        .as_ref()
        .and_then(|m| m.explain_non_finite(&error, params))
    {
        return ScenarioError::Explained {
            error,
            hint: format!("in the model's equations, {culprit}"),
        };
    }
    let accumulating = matches!(
        error.kind(),
        "zeno" | "grazing" | "event_location" | "step_size_underflow"
    );
    if let Some(hint) = accumulating
        .then(|| low_liftoff(scenario, params, &error))
        .flatten()
    {
        return ScenarioError::Explained { error, hint };
    }
    let floor = rules::rules_for(&scenario.spec.name)
        .iter()
        .any(|&(p, r, _)| p == "e" && r == rules::Rule::PositiveUnit);
    let e = scenario
        .spec
        .param_index("e")
        .ok()
        .and_then(|i| params.get(i).copied());
    let events = error.trajectory().map_or(&[][..], |t| &t.events[..]);
    let (Some(e), Some(last), true, true) = (e, events.last(), accumulating, floor) else {
        return error.into();
    };
    if e >= 1.0 {
        return error.into();
    }
    let rest = match events.len() {
        n if n >= 2 => last.time + (last.time - events[n - 2].time) * e / (1.0 - e),
        _ => last.time,
    };
    let hint = format!(
        "the bounces accumulate: with restitution e = {} each rebound is e times the one before, so the ball comes to rest near t = {} ({} so far), a resting contact this bouncing model cannot represent; end the run before then (a shorter t_end) or raise e",
        short_num(e),
        short_num(rest),
        match events.len() {
            1 => "1 impact".to_string(),
            n => format!("{n} impacts"),
        }
    );
    ScenarioError::Explained { error, hint }
}

/// The slip-hopper's scope limit, when a failed run met it: a liftoff below
/// the touchdown height `l0 cos(theta_td)` with the mass falling, after
/// which touchdown is due at once with the leg compressed (see
/// `ia_models::slip_hopper`; rising, the touchdown guard is disarmed
/// instead).
fn low_liftoff(scenario: &Scenario, params: &[f64], error: &HybridError) -> Option<String> {
    let spec = &scenario.spec;
    if spec.name != "slip-hopper" {
        return None;
    }
    let param = |name: &str| spec.param_index(name).ok().and_then(|i| params.get(i));
    let (&l0, &theta_td) = (param("l0")?, param("theta_td")?);
    let names = scenario.system.transition_names();
    let (y, vy) = (spec.state_index("y").ok()?, spec.state_index("vy").ok()?);
    let trajectory = error.trajectory()?;
    let liftoff = trajectory.events.windows(2).position(|pair| {
        let (lift, touch) = (&pair[0], &pair[1]);
        names[lift.transition] == "liftoff"
            && names[touch.transition] == "touchdown"
            && touch.time == lift.time
    })?;
    let height = l0 * theta_td.cos();
    let state = trajectory.state_before(liftoff);
    let (at, falling) = (state[y], state[vy]);
    let through_ground = if at < 0.0 {
        " (below the ground: the leg did not hold the mass up)"
    } else {
        ""
    };
    Some(format!(
        "the leg lifted off at t = {} with the mass at y = {}{through_ground}, below the touchdown height l0 cos(theta_td) = {}, and falling (vy = {}), so touchdown was due at once with the leg compressed: a mass that leaves the ground below the touchdown height while falling is outside this model's scope; a smaller theta_td or a stiffer leg (k) keeps liftoff above the touchdown height",
        short_num(trajectory.events[liftoff].time),
        short_num(at),
        short_num(height),
        short_num(falling)
    ))
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
