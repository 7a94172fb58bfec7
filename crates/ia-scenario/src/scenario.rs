//! The scenario: a model with every value of a run filled in and checked.
//! Its typed setters hold the checks; the JSON reader
//! ([`Scenario::for_model`]) reads each key and hands it to them, so a
//! program that builds a scenario from its own values (the Python package)
//! gets the same checks and the same messages.

use crate::error::ScenarioError;
use crate::fit::FitSpec;
use crate::keys::SCENARIO_KEYS;
use crate::loss::read_loss;
use crate::model::{chosen_model, ChosenModel};
use crate::read::{
    at_least_one, check_keys, count, finite, invalid, missing, number, object, parse_json,
    type_name,
};
use crate::solver::{read_solver, DEFAULT_TOLERANCE};
use ia_adjoint::{LossTerms, Term};
use ia_core::{short_num, HybridError, HybridSystem};
use ia_events::{EventOptions, EventRecording, Problem, Progress, SolverChoice};
use ia_models::{Model, ModelSpec};
use serde_json::Value;
use std::sync::Arc;

/// A progress hook a scenario's runs report to (see
/// [`Scenario::with_progress`]).
#[derive(Clone)]
pub struct ProgressHook(pub Arc<dyn Fn(&Progress) + Send + Sync>);

impl std::fmt::Debug for ProgressHook {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ProgressHook")
    }
}

/// A checked scenario: a model with every value filled in.
///
/// A clone shares the model's description and hybrid system (built once,
/// by [`Scenario::new`] or [`Scenario::for_model`]): a front end that runs
/// one model many times keeps a scenario of its defaults and sets each
/// run's options on a clone of it.
#[derive(Clone, Debug)]
pub struct Scenario {
    /// The model's description.
    pub spec: Arc<ModelSpec>,
    /// The model's hybrid system.
    pub system: Arc<HybridSystem>,
    /// Parameter values, in the model's order.
    pub params: Vec<f64>,
    /// Initial state, in the model's order.
    pub initial_state: Vec<f64>,
    /// Initial mode name.
    pub initial_mode: String,
    /// End time (the run starts at `t = 0`).
    pub t_end: f64,
    /// Observation times.
    pub observe: Vec<f64>,
    /// The solver.
    pub solver: SolverChoice,
    /// Event options (`max_events` and `max_steps` from the scenario, the
    /// rest defaults).
    pub events: EventOptions,
    /// The declared loss (`loss`), its names checked against the model.
    pub loss: Option<LossTerms>,
    /// Options of the adjoint's reverse pass (`adjoint` key).
    pub adjoint: ia_adjoint::AdjointOptions,
    /// The derivative probes of the adjoint's taped run
    /// (`adjoint.derivative_probes`; [`Problem::derivative_probes`]):
    /// `None` lets the adjoint choose, `Some(0)` turns them off.
    pub derivative_probes: Option<usize>,
    /// The model: a ready one, or one written as equations. Its parameter
    /// rules ([`Model::check_params`]) are checked as values are set, and
    /// its [`Model::hint`] explains a failed run.
    pub model: Arc<dyn Model>,
    /// The fit (`fit` key), checked against the model.
    pub fit: Option<FitSpec>,
    /// Told how far each run has got, if set.
    pub progress: Option<ProgressHook>,
}

/// `t_end` if it is finite and positive, else the key's error.
fn checked_t_end(t_end: f64) -> Result<f64, ScenarioError> {
    let t_end = finite(t_end, "t_end")?;
    if t_end <= 0.0 {
        return Err(HybridError::invalid_num(
            "t_end",
            t_end,
            "must be greater than 0 (runs start at t = 0)",
        )
        .into());
    }
    Ok(t_end)
}

/// The most derivative probes a scenario asks for
/// (`adjoint.derivative_probes`): each costs about one forward sensitivity
/// column per step.
pub const MAX_DERIVATIVE_PROBES: usize = 8;

impl Scenario {
    /// Parses and checks the scenario in `text`; `source` names where it
    /// came from in messages (a file name, or `standard input`).
    pub fn parse(text: &str, source: &str) -> Result<Self, ScenarioError> {
        let value = parse_json(text, source)?;
        Self::from_value(&value)
    }

    /// Checks a scenario already parsed as JSON.
    pub fn from_value(value: &Value) -> Result<Self, ScenarioError> {
        let model: Arc<dyn Model> = match chosen_model(value)? {
            ChosenModel::Catalogue(model) => Arc::from(model),
            ChosenModel::Equations(model) => Arc::new(*model),
        };
        Self::for_model(model, value)
    }

    /// A scenario of `model` running from `t = 0` to `t_end` (finite, `> 0`),
    /// every other value the model's default or the defaults of a scenario
    /// without the key: the typed start of what [`Scenario::for_model`]
    /// reads; the `set_*` methods then set the other values with the
    /// reader's checks.
    pub fn new(model: Arc<dyn Model>, t_end: f64) -> Result<Self, ScenarioError> {
        let spec = model.spec();
        Self::built(model, spec, t_end)
    }

    /// [`Scenario::new`] with the model's own run length
    /// ([`ModelSpec::t_end`]): the defaults a front end's runs start from.
    pub fn of_defaults(model: Arc<dyn Model>) -> Result<Self, ScenarioError> {
        let spec = model.spec();
        let t_end = spec.t_end;
        Self::built(model, spec, t_end)
    }

    /// [`Scenario::new`] with `model`'s description already built.
    fn built(model: Arc<dyn Model>, spec: ModelSpec, t_end: f64) -> Result<Self, ScenarioError> {
        let t_end = checked_t_end(t_end)?;
        Ok(Self {
            system: Arc::new(model.system()),
            params: spec.default_params(),
            initial_state: spec.default_state(),
            initial_mode: spec.initial_mode.clone(),
            t_end,
            observe: Vec::new(),
            solver: SolverChoice::dopri5(DEFAULT_TOLERANCE),
            events: EventOptions::default(),
            loss: None,
            adjoint: ia_adjoint::AdjointOptions::default(),
            derivative_probes: None,
            fit: None,
            progress: None,
            spec: Arc::new(spec),
            model,
        })
    }

    /// Sets the end time (finite, `> 0`; the key `t_end`), as
    /// [`Scenario::new`] takes it: the parameters are checked against the
    /// model's rules for a run of that length ([`Model::check_run`]) when
    /// they are set and when a run's problem is made.
    pub fn set_t_end(&mut self, t_end: f64) -> Result<(), ScenarioError> {
        self.t_end = checked_t_end(t_end)?;
        Ok(())
    }

    /// Sets parameters by name (the others keep their values), each finite,
    /// then checks the model's parameter rules for the run
    /// ([`Model::check_run`]: input times inside `(0, t_end)`; a
    /// model written as equations has none: its parameters mean what its
    /// author says).
    pub fn set_params<'n>(
        &mut self,
        values: impl IntoIterator<Item = (&'n str, f64)>,
    ) -> Result<(), ScenarioError> {
        for (name, x) in values {
            let i = self.spec.param_index(name)?;
            self.params[i] = finite(x, &format!("params.{name}"))?;
        }
        self.model.check_run(&self.params, self.t_end)?;
        Ok(())
    }

    /// Sets initial state entries by name (the others keep their values),
    /// each finite.
    pub fn set_initial_state<'n>(
        &mut self,
        values: impl IntoIterator<Item = (&'n str, f64)>,
    ) -> Result<(), ScenarioError> {
        for (name, x) in values {
            let i = self.spec.state_index(name)?;
            self.initial_state[i] = finite(x, &format!("initial_state.{name}"))?;
        }
        Ok(())
    }

    /// Sets the mode the run starts in (a mode of the model).
    pub fn set_initial_mode(&mut self, mode: &str) -> Result<(), ScenarioError> {
        self.spec.mode_index(mode)?;
        self.initial_mode = mode.to_string();
        Ok(())
    }

    /// Sets the observation times: finite, in `[0, t_end]`, non-decreasing.
    pub fn set_observe(&mut self, times: Vec<f64>) -> Result<(), ScenarioError> {
        for (k, &t) in times.iter().enumerate() {
            finite(t, &format!("observe[{k}]"))?;
        }
        for (k, &t) in times.iter().enumerate() {
            if !(0.0..=self.t_end).contains(&t) {
                return Err(HybridError::invalid_num(
                    format!("observe[{k}]"),
                    t,
                    format!(
                        "observation times must lie in [0, t_end] = [0, {}]",
                        short_num(self.t_end)
                    ),
                )
                .into());
            }
            if k > 0 && t < times[k - 1] {
                return Err(HybridError::invalid_num(
                    format!("observe[{k}]"),
                    t,
                    "observation times must be non-decreasing",
                )
                .into());
            }
        }
        self.observe = times;
        Ok(())
    }

    /// Sets the solver, checked by [`SolverChoice::validate`].
    pub fn set_solver(&mut self, solver: SolverChoice) -> Result<(), ScenarioError> {
        solver.validate()?;
        self.solver = solver;
        Ok(())
    }

    /// Sets `max_events`, a count of at least 1.
    pub fn set_max_events(&mut self, max_events: usize) -> Result<(), ScenarioError> {
        self.events.max_events = at_least_one(max_events, "max_events", "1000")?;
        Ok(())
    }

    /// Sets `max_steps`, a count of at least 1.
    pub fn set_max_steps(&mut self, max_steps: usize) -> Result<(), ScenarioError> {
        self.events.max_steps = at_least_one(max_steps, "max_steps", "10000000")?;
        Ok(())
    }

    /// Sets which events the run keeps (`record.events`; a number of last
    /// events at least 1).
    pub fn set_record(&mut self, record: EventRecording) -> Result<(), ScenarioError> {
        if let EventRecording::Last(n) = record {
            at_least_one(n, "record.events", "100")?;
        }
        self.events.record = record;
        Ok(())
    }

    /// Sets the loss: at least one term, weights and targets finite, every
    /// name checked against the model ([`LossTerms::new`]).
    pub fn set_loss(&mut self, terms: Vec<Term>) -> Result<(), ScenarioError> {
        if terms.is_empty() {
            return Err(invalid(
                "'loss' has no terms: its value and gradient would be zero whatever the run; give at least one, like [{\"of\": \"final.x\", \"weight\": 1.0}], or leave 'loss' out".into(),
            ));
        }
        for (k, term) in terms.iter().enumerate() {
            finite(term.weight, &format!("loss[{k}].weight"))?;
            if let Some(y) = term.target {
                finite(y, &format!("loss[{k}].target"))?;
            }
        }
        self.loss = Some(LossTerms::new(terms, &self.system)?);
        Ok(())
    }

    /// Sets the checkpoints of the adjoint's reverse pass
    /// (`adjoint.checkpoints`, at least 1).
    pub fn set_checkpoints(&mut self, checkpoints: usize) -> Result<(), ScenarioError> {
        self.adjoint.checkpoints = Some(at_least_one(checkpoints, "adjoint.checkpoints", "1000")?);
        Ok(())
    }

    /// Sets the number of derivative probes of the adjoint's taped run
    /// (`adjoint.derivative_probes`, 0 to [`MAX_DERIVATIVE_PROBES`]; 0
    /// turns them off).
    pub fn set_derivative_probes(&mut self, probes: usize) -> Result<(), ScenarioError> {
        if probes > MAX_DERIVATIVE_PROBES {
            return Err(HybridError::invalid_num(
                "adjoint.derivative_probes",
                probes as f64,
                format!("must be an integer from 0 (no probes) to {MAX_DERIVATIVE_PROBES}, like 1"),
            )
            .into());
        }
        self.derivative_probes = Some(probes);
        Ok(())
    }

    /// The scenario whose runs report their progress to `hook` (a command
    /// line's progress line); without one, runs report to nobody.
    pub fn with_progress(mut self, hook: ProgressHook) -> Self {
        self.progress = Some(hook);
        self
    }

    /// Checks a scenario of `model` already parsed as JSON: the scenario's
    /// keys but `model`, `size` and `connections`, which choose the model
    /// and are ignored here. Each key is read by the readers of
    /// [`crate::read`] and set by the typed setters above, in the order of
    /// the keys' table.
    pub fn for_model(model: Arc<dyn Model>, value: &Value) -> Result<Self, ScenarioError> {
        let obj = value.as_object().ok_or_else(|| {
            invalid(format!(
                "a scenario must be a JSON object, got {}",
                type_name(value)
            ))
        })?;
        check_keys(obj, &SCENARIO_KEYS, "the scenario")?;
        let t_end = match obj.get("t_end") {
            None => return Err(missing("t_end", "the scenario")),
            Some(v) => number(v, "t_end")?,
        };
        let mut scenario = Self::new(model, t_end)?;
        let spec = &scenario.spec;

        let mut params = Vec::new();
        if let Some(v) = obj.get("params") {
            for (name, x) in object(v, "params")? {
                spec.param_index(name)?;
                params.push((name.as_str(), number(x, &format!("params.{name}"))?));
            }
        }
        scenario.set_params(params)?;

        if let Some(v) = obj.get("initial_state") {
            let mut entries = Vec::new();
            for (name, x) in object(v, "initial_state")? {
                scenario.spec.state_index(name)?;
                entries.push((name.as_str(), number(x, &format!("initial_state.{name}"))?));
            }
            scenario.set_initial_state(entries)?;
        }

        if let Some(v) = obj.get("initial_mode") {
            let mode = read_mode(v, &scenario.spec.modes)?;
            scenario.set_initial_mode(mode)?;
        }

        match obj.get("observe") {
            None => {}
            Some(v) => scenario.set_observe(read_times(v)?)?,
        }

        match obj.get("solver") {
            None => scenario.set_solver(SolverChoice::dopri5(DEFAULT_TOLERANCE))?,
            Some(v) => scenario.set_solver(read_solver(v, t_end)?)?,
        }

        if let Some(v) = obj.get("max_events") {
            scenario.set_max_events(count(v, "max_events", "1000")?)?;
        }
        if let Some(v) = obj.get("max_steps") {
            scenario.set_max_steps(count(v, "max_steps", "10000000")?)?;
        }
        if let Some(v) = obj.get("record") {
            let record = object(v, "record")?;
            check_keys(record, &["events"], "record")?;
            if let Some(v) = record.get("events") {
                scenario.set_record(match v {
                    Value::String(s) if s == "all" => EventRecording::All,
                    Value::String(s) if s == "none" => EventRecording::None,
                    Value::Number(_) => EventRecording::Last(count(v, "record.events", "100")?),
                    _ => return Err(HybridError::invalid(
                        "record.events",
                        v,
                        "must be \"all\", \"none\" or a count of the last events to keep, like 100",
                    )
                    .into()),
                })?;
            }
        }

        if let Some(v) = obj.get("loss") {
            scenario.set_loss(read_loss(v)?)?;
        }

        if let Some(v) = obj.get("adjoint") {
            let options = object(v, "adjoint")?;
            check_keys(options, &["checkpoints", "derivative_probes"], "adjoint")?;
            if let Some(k) = options.get("checkpoints") {
                scenario.set_checkpoints(count(k, "adjoint.checkpoints", "1000")?)?;
            }
            if let Some(k) = options.get("derivative_probes") {
                scenario.set_derivative_probes(read_derivative_probes(k)?)?;
            }
        }

        if let Some(v) = obj.get("fit") {
            scenario.fit = Some(FitSpec::from_value(v, &scenario.system, t_end)?);
        }
        Ok(scenario)
    }

    /// The run the scenario describes.
    pub fn problem(&self) -> Result<Problem<'_>, ScenarioError> {
        self.problem_from(self.initial_state.clone(), self.params.clone())
    }

    /// The run the scenario describes, from `initial_state` with `params`
    /// (in the model's order) in place of the scenario's own: many runs of
    /// one checked scenario. They are checked as the scenario's values are:
    /// their lengths, that they are finite, and the model's parameter rules
    /// ([`Model::check_run`]).
    pub fn problem_from(
        &self,
        initial_state: Vec<f64>,
        params: Vec<f64>,
    ) -> Result<Problem<'_>, ScenarioError> {
        self.problem_with(initial_state, params, self.solver.clone())
    }

    /// [`Scenario::problem_from`] with `solver` in place of the scenario's.
    pub fn problem_with(
        &self,
        initial_state: Vec<f64>,
        params: Vec<f64>,
        solver: SolverChoice,
    ) -> Result<Problem<'_>, ScenarioError> {
        let problem = self.problem_built(initial_state, params, solver)?;
        problem.validate()?;
        self.model
            .check_run_named(self.system.param_names(), &problem.params, self.t_end)?;
        Ok(problem)
    }

    /// [`Scenario::problem_from`] without its checks of the inputs: for
    /// inputs that passed them already, bit for bit (a backward pass at the
    /// inputs of the forward run it reads, whose checks would give the same
    /// answer again). Inputs never checked go through `problem_from`.
    /// For the fronts (the JAX backward call), not a user's entry point:
    /// hidden from the documentation.
    #[doc(hidden)]
    pub fn problem_prechecked(
        &self,
        initial_state: Vec<f64>,
        params: Vec<f64>,
    ) -> Result<Problem<'_>, ScenarioError> {
        self.problem_built(initial_state, params, self.solver.clone())
    }

    /// The run from `initial_state` and `params` with `solver`, its inputs
    /// not checked.
    fn problem_built(
        &self,
        initial_state: Vec<f64>,
        params: Vec<f64>,
        solver: SolverChoice,
    ) -> Result<Problem<'_>, ScenarioError> {
        let problem = Problem::new(&self.system, initial_state, params, self.t_end)
            .with_mode(&self.initial_mode)?
            .with_solver(solver)
            .with_observations(self.observe.clone())
            .with_event_options(self.events.clone())
            .with_derivative_probes(self.derivative_probes);
        Ok(match &self.progress {
            Some(hook) => problem.with_progress(hook.0.as_ref()),
            None => problem,
        })
    }
}

/// `adjoint.derivative_probes`: a count from 0 (checked against
/// [`MAX_DERIVATIVE_PROBES`] by [`Scenario::set_derivative_probes`]).
pub fn read_derivative_probes(value: &Value) -> Result<usize, ScenarioError> {
    value
        .as_u64()
        .map(|k| usize::try_from(k).unwrap_or(usize::MAX))
        .ok_or_else(|| {
            HybridError::invalid(
                "adjoint.derivative_probes",
                value,
                format!("must be an integer from 0 (no probes) to {MAX_DERIVATIVE_PROBES}, like 1"),
            )
            .into()
        })
}

/// `initial_mode`: a string (checked against `modes` by
/// [`Scenario::set_initial_mode`]; `modes` are named in the message of a
/// value of another type).
pub fn read_mode<'v>(value: &'v Value, modes: &[String]) -> Result<&'v str, ScenarioError> {
    match value {
        Value::String(s) => Ok(s),
        other => Err(invalid(format!(
            "'initial_mode' must be a string (a mode name: {}), got {}",
            modes.join(", "),
            type_name(other)
        ))),
    }
}

/// `observe`: an array of times (each a finite number).
pub fn read_times(value: &Value) -> Result<Vec<f64>, ScenarioError> {
    match value {
        Value::Array(items) => items
            .iter()
            .enumerate()
            .map(|(k, x)| number(x, &format!("observe[{k}]")))
            .collect(),
        other => Err(invalid(format!(
            "'observe' must be an array of times, got {}",
            type_name(other)
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ball() -> Scenario {
        let value = serde_json::json!({"model": "ball2d-flat", "t_end": 1.0});
        Scenario::from_value(&value).unwrap()
    }

    /// Runs from other inputs are checked as the scenario's own values are:
    /// the run's checks (length, finite), then the model's rules.
    #[test]
    fn problem_from_checks_its_inputs() {
        let scenario = ball();
        let x0 = scenario.initial_state.clone();
        let ok = scenario.problem_from(x0.clone(), vec![9.81, 0.5, 0.7]);
        assert_eq!(ok.unwrap().params, [9.81, 0.5, 0.7]);
        let kind = |params: Vec<f64>| scenario.problem_from(x0.clone(), params).unwrap_err();
        let short = kind(vec![9.81, 0.5]);
        assert_eq!(short.kind(), "dimension_mismatch", "{short}");
        let nan = kind(vec![9.81, f64::NAN, 0.7]);
        assert_eq!(nan.kind(), "non_finite", "{nan}");
        let rule = kind(vec![9.81, 1.5, 0.7]);
        assert_eq!(
            rule.to_string(),
            "invalid parameter 'e' = 1.5: must lie in (0, 1] for model 'ball2d-flat' (coefficient of restitution)"
        );
    }

    /// The prechecked problem is the checked one without the checks: the
    /// same fields (reference: `problem_from` on the same inputs), and bad
    /// inputs go through unchecked (its callers pass only checked ones).
    #[test]
    fn problem_prechecked_is_problem_from_without_the_checks() {
        let scenario = ball();
        let x0 = scenario.initial_state.clone();
        let p = vec![9.81, 0.5, 0.7];
        let checked = scenario.problem_from(x0.clone(), p.clone()).unwrap();
        let built = scenario.problem_prechecked(x0.clone(), p).unwrap();
        assert_eq!(built.initial_state, checked.initial_state);
        assert_eq!(built.params, checked.params);
        assert_eq!(built.t_end.to_bits(), checked.t_end.to_bits());
        assert_eq!(built.initial_mode, checked.initial_mode);
        assert_eq!(built.observation_times, checked.observation_times);
        assert_eq!(
            format!(
                "{:?}",
                (&built.solver, &built.events, built.derivative_probes)
            ),
            format!(
                "{:?}",
                (&checked.solver, &checked.events, checked.derivative_probes)
            )
        );
        let rule = scenario.problem_prechecked(x0, vec![9.81, 1.5, 0.7]);
        assert_eq!(rule.unwrap().params, [9.81, 1.5, 0.7]);
    }

    /// A scenario for a given model reads the same keys as one naming it.
    #[test]
    fn for_model_reads_the_other_keys() {
        let model: Arc<dyn Model> = Arc::from(
            crate::model::model_of(&serde_json::json!({"model": "particle-chain", "size": 4}))
                .unwrap(),
        );
        let value = serde_json::json!({"t_end": 2.0, "observe": [1.0]});
        let scenario = Scenario::for_model(model.clone(), &value).unwrap();
        assert_eq!(scenario.spec.name, "particle-chain");
        assert_eq!(scenario.initial_state.len(), 8);
        assert_eq!(scenario.observe, [1.0]);
        let err =
            Scenario::for_model(model, &serde_json::json!({"t_end": 1, "tend": 1})).unwrap_err();
        assert!(err.to_string().starts_with("unknown key 'tend'"), "{err}");
    }

    /// The typed setters build the scenario the JSON reader reads.
    /// Reference: `Scenario::from_value` of the same values as JSON.
    #[test]
    fn typed_setters_build_what_the_reader_reads() {
        let value = serde_json::json!({"model": "ball1d", "t_end": 2.0,
            "params": {"e": 0.5}, "initial_state": {"h": 2.0}, "observe": [0.5, 1.0],
            "solver": {"method": "rk4", "dt": 0.001}, "max_events": 1e4, "max_steps": 500,
            "loss": [{"of": "final.h", "weight": 2.0}], "adjoint": {"checkpoints": 10}});
        let read = Scenario::from_value(&value).unwrap();
        let model: Arc<dyn Model> = Arc::from(ia_models::by_name("ball1d").unwrap());
        let mut typed = Scenario::new(model, 2.0).unwrap();
        typed.set_params([("e", 0.5)]).unwrap();
        typed.set_initial_state([("h", 2.0)]).unwrap();
        typed.set_observe(vec![0.5, 1.0]).unwrap();
        typed.set_solver(SolverChoice::Rk4 { dt: 0.001 }).unwrap();
        typed.set_max_events(10_000).unwrap();
        typed.set_max_steps(500).unwrap();
        let term = Term {
            of: "final.h".into(),
            weight: 2.0,
            target: None,
        };
        typed.set_loss(vec![term]).unwrap();
        typed.set_checkpoints(10).unwrap();
        assert_eq!(format!("{typed:?}"), format!("{read:?}"));
        // The typed setters give the reader's errors, kinds and messages.
        let kind = |e: ScenarioError| (e.kind(), e.to_string());
        let nan = typed.set_params([("g", f64::NAN)]).unwrap_err();
        assert_eq!(
            kind(nan),
            (
                "invalid_option",
                "invalid params.g = NaN: every number must be finite".into()
            )
        );
        let zero = typed.set_max_events(0).unwrap_err();
        let json_zero = Scenario::from_value(
            &serde_json::json!({"model": "ball1d", "t_end": 1, "max_events": 0}),
        );
        assert_eq!(kind(zero), kind(json_zero.unwrap_err()));
        let late = typed.set_observe(vec![3.0]).unwrap_err();
        let json_late = Scenario::from_value(
            &serde_json::json!({"model": "ball1d", "t_end": 2, "observe": [3.0]}),
        );
        assert_eq!(kind(late), kind(json_late.unwrap_err()));
    }
}
