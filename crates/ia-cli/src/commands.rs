//! The commands that read a scenario and print a document: `simulate`,
//! `gradient`, `periodic`, `fit`, and the model listings (the formats are
//! documented in the [crate documentation](crate)).

use crate::report;
use ia_scenario::periodic::PeriodicScenario;
use ia_scenario::read::parse_json;
use ia_scenario::{GradientMethod, ProgressHook, Scenario, ScenarioError as CliError};
use serde_json::Value;

/// The commands that run a scenario, with the progress hook their runs
/// report to (none by default: the binary passes its progress line).
#[derive(Clone, Debug, Default)]
pub struct Commands {
    progress: Option<ProgressHook>,
}

impl Commands {
    /// The commands, their runs reporting to nobody.
    pub fn new() -> Self {
        Self::default()
    }

    /// The commands whose runs report their progress to `hook`.
    pub fn with_progress(mut self, hook: ProgressHook) -> Self {
        self.progress = Some(hook);
        self
    }

    /// The checked scenario in `text`, its runs reporting to the hook.
    fn scenario(&self, text: &str, source: &str) -> Result<Scenario, CliError> {
        let scenario = Scenario::parse(text, source)?;
        Ok(match &self.progress {
            Some(hook) => scenario.with_progress(hook.clone()),
            None => scenario,
        })
    }

    /// [`simulate`], reporting progress.
    pub fn simulate(&self, text: &str, source: &str) -> Result<String, CliError> {
        let scenario = self.scenario(text, source)?;
        let trajectory =
            scenario.simulate_from(scenario.initial_state.clone(), scenario.params.clone())?;
        Ok(report::pretty(&report::document(
            &scenario.spec.name,
            &scenario.system,
            scenario.t_end,
            &trajectory,
            None,
        )))
    }

    /// [`gradient_with`], reporting progress.
    pub fn gradient(
        &self,
        text: &str,
        source: &str,
        method: GradientMethod,
        jacobian: bool,
    ) -> Result<String, CliError> {
        let scenario = self.scenario(text, source)?;
        let run = scenario.derivatives(method, jacobian)?;
        let name = &scenario.spec.name;
        let document = match (&run.loss, &run.sensitivities) {
            (None, Some(sens)) => report::document(
                name,
                &scenario.system,
                scenario.t_end,
                &sens.trajectory,
                Some((method.name(), sens)),
            ),
            (Some(grad), sens) => report::loss_document(
                name,
                &scenario.system,
                scenario.t_end,
                method.name(),
                sens.as_ref(),
                grad,
            ),
            (None, None) => unreachable!("a run without a loss computes the Jacobians"),
        };
        Ok(report::pretty(&document))
    }

    /// [`periodic`] (the orbit solver reports no progress).
    pub fn periodic(&self, text: &str, source: &str) -> Result<String, CliError> {
        let periodic = PeriodicScenario::parse(text, source)?;
        let orbit = periodic.orbit()?;
        Ok(report::pretty(&report::periodic_document(
            &periodic.scenario.spec.name,
            &orbit,
        )))
    }

    /// [`fit`], reporting progress.
    pub fn fit(&self, text: &str, source: &str) -> Result<String, CliError> {
        let scenario = self.scenario(text, source)?;
        let result = scenario.fit_result(source)?;
        let data = scenario.fit.as_ref().map_or(0, |spec| spec.data.len());
        Ok(report::pretty(&report::fit_document(
            &scenario.spec.name,
            &result,
            data,
        )))
    }
}

/// `impact-adjoint simulate`: the JSON document for the scenario in `text`
/// (`source` names it in error messages).
pub fn simulate(text: &str, source: &str) -> Result<String, CliError> {
    Commands::new().simulate(text, source)
}

/// `impact-adjoint gradient`: the JSON document, with Jacobians, for the
/// scenario in `text` (`source` names it in error messages); the same as
/// [`gradient_with`] without `--jacobian`.
///
/// With [`GradientMethod::Adjoint`] the solver is first replaced by
/// [`ia_scenario::adjoint_solver`] (the built-in equivalent of an `ode_solvers.*`
/// solver).
pub fn gradient(text: &str, source: &str, method: GradientMethod) -> Result<String, CliError> {
    gradient_with(text, source, method, false)
}

/// `impact-adjoint gradient [--jacobian]`: as [`gradient`]; with a `loss`
/// in the scenario, the document gains `loss` (its value and gradient).
/// Under [`GradientMethod::Adjoint`] the loss gradient is one backward pass
/// ([`ia_adjoint::gradient`]) and the per-output derivatives are computed
/// (and printed) only if `jacobian` is true; under
/// [`GradientMethod::Forward`] it is the forward Jacobian contracted with
/// the loss's seeds ([`ia_adjoint::Sensitivities::loss_gradient`]).
///
/// ```
/// let scenario = r#"{"model": "ball1d", "t_end": 1,
///     "loss": [{"of": "event.-1.time", "weight": 1.0}]}"#;
/// let method = ia_cli::GradientMethod::Adjoint;
/// let out = ia_cli::gradient_with(scenario, "example", method, false).unwrap();
/// let doc: serde_json::Value = serde_json::from_str(&out).unwrap();
/// // The first impact from h0 = 1 at rest: t1 = sqrt(2 h0 / g), dt1/dh0 = 1 / (g t1).
/// let t1 = (2.0f64 / 9.81).sqrt();
/// assert!((doc["loss"]["value"].as_f64().unwrap() - t1).abs() < 1e-9);
/// let dt1_dh0 = doc["loss"]["gradient"]["initial.h"].as_f64().unwrap();
/// assert!((dt1_dh0 - 1.0 / (9.81 * t1)).abs() < 1e-8);
/// assert!(doc.get("jacobian").is_none());
/// ```
pub fn gradient_with(
    text: &str,
    source: &str,
    method: GradientMethod,
    jacobian: bool,
) -> Result<String, CliError> {
    Commands::new().gradient(text, source, method, jacobian)
}

/// `impact-adjoint periodic`: the periodic orbit through the section of
/// the scenario's `section` transition, from the starting guess
/// `initial_state`, as a JSON document (see [Periodic orbits](crate#periodic-orbits)).
///
/// ```
/// let scenario = r#"{"model": "rimless-wheel", "section": "step",
///     "initial_state": {"theta": -0.3127, "omega": 1.2}}"#;
/// let out = ia_cli::periodic(scenario, "example").unwrap();
/// let doc: serde_json::Value = serde_json::from_str(&out).unwrap();
/// // omega* = cot(2 alpha) sqrt(4 (g/l) sin(alpha) sin(gamma))
/// let (alpha, gamma) = (std::f64::consts::FRAC_PI_8, 0.08f64);
/// let speed = (4.0 * 9.81 * alpha.sin() * gamma.sin()).sqrt() / (2.0 * alpha).tan();
/// assert!((doc["fixed_point"]["omega"].as_f64().unwrap() - speed).abs() < 1e-9);
/// assert_eq!(doc["multipliers"][0]["trivial"], true);
/// ```
pub fn periodic(text: &str, source: &str) -> Result<String, CliError> {
    Commands::new().periodic(text, source)
}

/// `impact-adjoint fit`: the JSON document of the fit the scenario in
/// `text` describes (`source` names it in error messages).
///
/// ```
/// let scenario = r#"{"model": "ball1d", "t_end": 0.4, "params": {"g": 9},
///   "fit": {"free": ["param.g"], "data": [
///     {"time": 0.1, "state": {"h": 0.95095}}, {"time": 0.3, "state": {"h": 0.55855}}]}}"#;
/// let out = ia_cli::fit(scenario, "example").unwrap();
/// let doc: serde_json::Value = serde_json::from_str(&out).unwrap();
/// // h(t) = 1 - g t^2 / 2 before the impact: the data were made with g = 9.81.
/// assert!((doc["values"]["param.g"].as_f64().unwrap() - 9.81).abs() < 1e-6);
/// ```
pub fn fit(text: &str, source: &str) -> Result<String, CliError> {
    Commands::new().fit(text, source)
}

/// `impact-adjoint models --equations FILE`: how the model written as
/// equations in `text` was understood (states, parameters, `let`s, modes
/// with their flows, transitions with guard, direction and reset, each
/// expression printed back). `text` is the model's JSON, or a scenario whose
/// `model` is one; `source` names it in messages.
///
/// ```
/// let text = r#"{"states": ["x"], "params": {"k": 2}, "modes": {"decay": {"flow": {"x": "-k*x"}}}}"#;
/// let out = ia_cli::describe_equations(text, "decay.json").unwrap();
/// assert!(out.contains("x' = -k * x"), "{out}");
/// let err = ia_cli::describe_equations(r#"{"states": ["x"], "modes": {"m": {"flow": {"x": "-kk"}}}}"#, "bad.json");
/// assert_eq!(err.unwrap_err().to_string(),
///     "bad.json: mode \"m\", flow.x, column 2: unknown name \"kk\"; names are x, t");
/// ```
pub fn describe_equations(text: &str, source: &str) -> Result<String, CliError> {
    let value = parse_json(text, source)?;
    let model = match value.get("model") {
        Some(form @ Value::Object(_)) => ia_equations::EquationModel::from_value(form),
        _ => ia_equations::EquationModel::from_json_str(text),
    }
    .map_err(|error| CliError::Equations {
        place: source.to_string(),
        error,
    })?;
    Ok(model.describe())
}

/// `impact-adjoint models --json`: every model's [`ia_models::ModelSpec`], as
/// a JSON array.
pub fn models_json() -> String {
    let specs: Vec<ia_models::ModelSpec> = ia_models::catalog().iter().map(|m| m.spec()).collect();
    serde_json::to_string_pretty(&specs).unwrap_or_else(|e| format!("[\"error: {e}\"]"))
}

/// `impact-adjoint models`: every model, for people.
pub fn models_table() -> String {
    use std::fmt::Write;
    let quantities = |qs: &[ia_models::Quantity]| {
        qs.iter()
            .map(|q| {
                if q.unit == "1" {
                    format!("{} = {}", q.name, q.default)
                } else {
                    format!("{} = {} {}", q.name, q.default, q.unit)
                }
            })
            .collect::<Vec<_>>()
            .join(", ")
    };
    let mut out = String::new();
    for model in ia_models::catalog() {
        let spec = model.spec();
        let modes = spec
            .modes
            .iter()
            .map(|m| {
                if *m == spec.initial_mode {
                    format!("{m} (initial)")
                } else {
                    m.clone()
                }
            })
            .collect::<Vec<_>>()
            .join(", ");
        let transitions = spec
            .transitions
            .iter()
            .map(|t| {
                let dir = serde_json::to_value(t.direction)
                    .ok()
                    .and_then(|v| v.as_str().map(str::to_string))
                    .unwrap_or_default();
                format!("{} ({} -> {}, guard {dir})", t.name, t.from, t.to)
            })
            .collect::<Vec<_>>()
            .join(", ");
        let rules = model
            .param_rules()
            .iter()
            .map(|rule| format!("{} {}", rule.param, rule.rule.describe()))
            .collect::<Vec<_>>();
        let _ = writeln!(out, "{}", spec.name);
        let _ = writeln!(out, "  {}", spec.description);
        let _ = writeln!(out, "  states:       {}", quantities(&spec.states));
        let _ = writeln!(out, "  params:       {}", quantities(&spec.params));
        let relations = model
            .relations()
            .iter()
            .map(|relation| format!("{} < {}", relation.lower, relation.upper));
        let rules = rules
            .into_iter()
            .chain(relations)
            .collect::<Vec<_>>()
            .join("; ");
        if !rules.is_empty() {
            let _ = writeln!(out, "  valid params: {rules}");
        }
        let _ = writeln!(out, "  modes:        {modes}");
        let _ = writeln!(out, "  transitions:  {transitions}");
        let _ = writeln!(out, "  t_end:        {} (default run)", spec.t_end);
        out.push('\n');
    }
    out
}
