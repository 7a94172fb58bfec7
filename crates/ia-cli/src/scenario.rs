//! Reading and checking a scenario file (its format is documented in the
//! [crate documentation](crate)).

use crate::error::CliError;
use crate::rules;
use ia_adjoint::{LossTerms, Term};
use ia_core::short_num;
use ia_core::{HybridError, HybridSystem};
use ia_equations::EquationModel;
use ia_events::{EventOptions, EventRecording, OdeSolversMethod, Problem, SolverChoice};
use ia_models::{Model, ModelSpec};
use serde::de::{DeserializeSeed, Error as _, MapAccess, SeqAccess, Visitor};
use serde_json::{Map, Value};

/// The keys a scenario may have.
pub const SCENARIO_KEYS: [&str; 15] = [
    "model",
    "size",
    "connections",
    "params",
    "initial_state",
    "initial_mode",
    "t_end",
    "observe",
    "solver",
    "max_events",
    "max_steps",
    "loss",
    "adjoint",
    "record",
    "fit",
];

/// The keys `impact-adjoint periodic` adds to a scenario (it refuses
/// `observe`, `loss` and `adjoint`, which describe other commands' outputs).
pub const PERIODIC_KEYS: [&str; 4] = ["section", "events_per_period", "max_period", "advancing"];

/// The solver method names a scenario may give, the default first.
pub const SOLVER_METHODS: [&str; 7] = [
    "dopri5",
    "dop853",
    "rk4",
    "exact",
    "ode_solvers.dopri5",
    "ode_solvers.dop853",
    "ode_solvers.rk4",
];

/// Default `rtol` and `atol` of the adaptive solvers.
pub const DEFAULT_TOLERANCE: f64 = 1e-10;

/// Default step of `rk4`, and of `ode_solvers.rk4`'s macro step, as a
/// fraction of `t_end`.
pub const DEFAULT_RK4_STEPS: f64 = 1000.0;

/// Default macro step of `ode_solvers.dopri5` and `ode_solvers.dop853`, as a
/// fraction of `t_end`.
pub const DEFAULT_MACRO_STEPS: f64 = 100.0;

/// A checked scenario of `impact-adjoint periodic`: the run settings, the
/// section's transition, the firings per period and the run length allowed
/// for one period. `initial_state` is the starting guess, a state just
/// after `section` fires; the run starts in the mode `section` leads to.
#[derive(Debug)]
pub struct PeriodicScenario {
    /// The model, parameters, starting guess and solver (`t_end` is
    /// `max_period`).
    pub scenario: Scenario,
    /// The transition whose firing defines the section.
    pub section: String,
    /// Firings of `section` in one period.
    pub events_per_period: usize,
    /// The longest run allowed for one period.
    pub max_period: f64,
    /// The states that advance each period (`advancing`, by name in the
    /// scenario), as indices.
    pub advancing: Vec<usize>,
    /// Whether the scenario gave a `solver` (if not, the orbit solver's
    /// tighter default applies).
    pub solver_given: bool,
}

impl PeriodicScenario {
    /// Parses and checks the periodic-orbit scenario in `text`; `source`
    /// names where it came from in messages.
    ///
    /// `max_period` defaults to `t_end` when that is given, else to the
    /// model's default run length.
    pub fn parse(text: &str, source: &str) -> Result<Self, CliError> {
        let value = parse_json(text, source)?;
        let obj = value.as_object().ok_or_else(|| {
            invalid(format!(
                "a scenario must be a JSON object, got {}",
                type_name(&value)
            ))
        })?;
        let valid: Vec<&str> = SCENARIO_KEYS
            .iter()
            .filter(|k| !["observe", "loss", "adjoint"].contains(k))
            .chain(&PERIODIC_KEYS)
            .copied()
            .collect();
        check_keys(obj, &valid, "a periodic-orbit scenario")?;
        let section = match obj.get("section") {
            None => return Err(missing("section", "a periodic-orbit scenario")),
            Some(Value::String(s)) => s.clone(),
            Some(other) => {
                return Err(invalid(format!(
                    "'section' must be a string (a transition name), got {}",
                    type_name(other)
                )))
            }
        };
        let events_per_period = obj
            .get("events_per_period")
            .map(|v| count(v, "events_per_period", "2"))
            .transpose()?
            .unwrap_or(1);
        let mut rest = obj.clone();
        for key in PERIODIC_KEYS {
            rest.remove(key);
        }
        let max_period = match (obj.get("max_period"), obj.get("t_end")) {
            (Some(v), _) => Some(number(v, "max_period")?),
            (None, Some(v)) => Some(number(v, "t_end")?),
            (None, None) => None,
        };
        if let Some(max_period) = max_period {
            if max_period <= 0.0 {
                return Err(HybridError::invalid_num(
                    "max_period",
                    max_period,
                    "must be greater than 0 (the run length allowed for one period)",
                )
                .into());
            }
            rest.insert("t_end".into(), Value::from(max_period));
        } else if let Some(Value::String(name)) = obj.get("model") {
            let t_end = ia_models::by_name(name).map_or(1.0, |m| m.spec().t_end);
            rest.insert("t_end".into(), Value::from(t_end));
        }
        let mut scenario = Scenario::from_value(&Value::Object(rest))?;
        let names = scenario.system.transition_names();
        let Some(index) = names.iter().position(|n| *n == section) else {
            return Err(HybridError::UnknownName {
                kind: "section transition".into(),
                name: section,
                valid: names,
            }
            .into());
        };
        let to = &scenario.system.modes()[scenario.system.transitions()[index].to].name;
        if obj.contains_key("initial_mode") && scenario.initial_mode != *to {
            return Err(invalid(format!(
                "'initial_mode' is '{}', but a periodic orbit starts just after '{section}' fires, in mode '{to}': leave initial_mode out or set it to '{to}'",
                scenario.initial_mode
            )));
        }
        scenario.initial_mode = to.clone();
        let advancing = match obj.get("advancing") {
            None => Vec::new(),
            Some(value) => advancing_states(value, &scenario.system)?,
        };
        Ok(Self {
            advancing,
            max_period: scenario.t_end,
            solver_given: obj.contains_key("solver"),
            scenario,
            section,
            events_per_period,
        })
    }
}

/// `advancing`: an array of distinct state names, as state indices (the
/// periodic-orbit key, also read by the Python package).
pub fn advancing_states(value: &Value, system: &HybridSystem) -> Result<Vec<usize>, CliError> {
    let names = system.state_names();
    let valid = || {
        format!(
            "an array of the states that advance each period (a position and what moves with it), from {}",
            names.join(", ")
        )
    };
    let Value::Array(items) = value else {
        return Err(invalid(format!(
            "'advancing' must be {}, got {}",
            valid(),
            type_name(value)
        )));
    };
    let mut states = Vec::with_capacity(items.len());
    for (k, item) in items.iter().enumerate() {
        let index = item
            .as_str()
            .and_then(|name| names.iter().position(|n| n == name));
        match index {
            Some(i) if !states.contains(&i) => states.push(i),
            Some(i) => {
                return Err(invalid(format!(
                    "'advancing[{k}]' names '{}' a second time; list each state once",
                    names[i]
                )))
            }
            None => {
                return Err(invalid(format!(
                    "'advancing[{k}]' is {item}, not a state; 'advancing' must be {}",
                    valid()
                )))
            }
        }
    }
    Ok(states)
}

/// A checked scenario: a catalogue model with every value filled in.
#[derive(Debug)]
pub struct Scenario {
    /// The model's description.
    pub spec: ModelSpec,
    /// The model's hybrid system.
    pub system: HybridSystem,
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
    /// The model, when the scenario writes it as equations (`model` an
    /// object): it names the expression behind a non-finite value.
    pub equations: Option<EquationModel>,
    /// The fit (`fit` key), checked against the model.
    pub fit: Option<crate::fit::FitSpec>,
}

impl Scenario {
    /// Parses and checks the scenario in `text`; `source` names where it
    /// came from in messages (a file name, or `standard input`).
    pub fn parse(text: &str, source: &str) -> Result<Self, CliError> {
        let value = parse_json(text, source)?;
        Self::from_value(&value)
    }

    /// Checks a scenario already parsed as JSON.
    pub fn from_value(value: &Value) -> Result<Self, CliError> {
        match chosen_model(value)? {
            ChosenModel::Catalogue(model) => Self::for_model(model.as_ref(), value),
            ChosenModel::Equations(model) => {
                let mut scenario = Self::for_model(model.as_ref(), value)?;
                scenario.equations = Some(*model);
                Ok(scenario)
            }
        }
    }

    /// Checks a scenario of `model` already parsed as JSON: the scenario's
    /// keys but `model`, `size` and `connections`, which choose the model
    /// and are ignored here (a program with a model of its own, like the
    /// Python package, gets the command line's checks and messages).
    pub fn for_model(model: &dyn Model, value: &Value) -> Result<Self, CliError> {
        let obj = value.as_object().ok_or_else(|| {
            invalid(format!(
                "a scenario must be a JSON object, got {}",
                type_name(value)
            ))
        })?;
        check_keys(obj, &SCENARIO_KEYS, "the scenario")?;
        let spec = model.spec();
        let system = model.system();

        let t_end = match obj.get("t_end") {
            None => return Err(missing("t_end", "the scenario")),
            Some(v) => number(v, "t_end")?,
        };
        if t_end <= 0.0 {
            return Err(HybridError::invalid_num(
                "t_end",
                t_end,
                "must be greater than 0 (runs start at t = 0)",
            )
            .into());
        }

        let mut params = spec.default_params();
        if let Some(v) = obj.get("params") {
            for (name, x) in object(v, "params")? {
                let i = spec.param_index(name)?;
                params[i] = number(x, &format!("params.{name}"))?;
            }
        }
        // The value rules belong to the catalogue's models; the parameters of
        // a model written as equations mean what its author says.
        if ia_models::model_names().contains(&model.name()) {
            rules::check_params(&spec.name, &spec.param_names(), &params)?;
        }

        let mut initial_state = spec.default_state();
        if let Some(v) = obj.get("initial_state") {
            for (name, x) in object(v, "initial_state")? {
                let i = spec.state_index(name)?;
                initial_state[i] = number(x, &format!("initial_state.{name}"))?;
            }
        }

        let initial_mode = match obj.get("initial_mode") {
            None => spec.initial_mode.clone(),
            Some(Value::String(s)) => {
                spec.mode_index(s)?;
                s.clone()
            }
            Some(other) => {
                return Err(invalid(format!(
                    "'initial_mode' must be a string (a mode name: {}), got {}",
                    spec.modes.join(", "),
                    type_name(other)
                )))
            }
        };

        let observe = match obj.get("observe") {
            None => Vec::new(),
            Some(Value::Array(items)) => items
                .iter()
                .enumerate()
                .map(|(k, x)| number(x, &format!("observe[{k}]")))
                .collect::<Result<Vec<_>, _>>()?,
            Some(other) => {
                return Err(invalid(format!(
                    "'observe' must be an array of times, got {}",
                    type_name(other)
                )))
            }
        };
        for (k, &t) in observe.iter().enumerate() {
            if !(0.0..=t_end).contains(&t) {
                return Err(HybridError::invalid_num(
                    format!("observe[{k}]"),
                    t,
                    format!(
                        "observation times must lie in [0, t_end] = [0, {}]",
                        short_num(t_end)
                    ),
                )
                .into());
            }
            if k > 0 && t < observe[k - 1] {
                return Err(HybridError::invalid_num(
                    format!("observe[{k}]"),
                    t,
                    "observation times must be non-decreasing",
                )
                .into());
            }
        }

        let solver = match obj.get("solver") {
            None => SolverChoice::dopri5(DEFAULT_TOLERANCE),
            Some(v) => parse_solver(v, t_end)?,
        };
        solver.validate()?;

        let mut events = EventOptions::default();
        if let Some(v) = obj.get("max_events") {
            events.max_events = count(v, "max_events", "1000")?;
        }
        if let Some(v) = obj.get("max_steps") {
            events.max_steps = count(v, "max_steps", "10000000")?;
        }
        if let Some(v) = obj.get("record") {
            let record = object(v, "record")?;
            check_keys(record, &["events"], "record")?;
            if let Some(v) = record.get("events") {
                events.record = match v {
                    Value::String(s) if s == "all" => EventRecording::All,
                    Value::String(s) if s == "none" => EventRecording::None,
                    Value::Number(_) => EventRecording::Last(count(v, "record.events", "100")?),
                    _ => return Err(HybridError::invalid(
                        "record.events",
                        v,
                        "must be \"all\", \"none\" or a count of the last events to keep, like 100",
                    )
                    .into()),
                };
            }
        }

        let loss = obj
            .get("loss")
            .map(|v| parse_loss(v, &system))
            .transpose()?;

        let mut adjoint = ia_adjoint::AdjointOptions::default();
        if let Some(v) = obj.get("adjoint") {
            let options = object(v, "adjoint")?;
            check_keys(options, &["checkpoints"], "adjoint")?;
            if let Some(k) = options.get("checkpoints") {
                adjoint.checkpoints = Some(count(k, "adjoint.checkpoints", "1000")?);
            }
        }

        let fit = obj
            .get("fit")
            .map(|v| crate::fit::FitSpec::from_value(v, &system, t_end))
            .transpose()?;

        Ok(Scenario {
            fit,
            loss,
            adjoint,
            spec,
            system,
            params,
            initial_state,
            initial_mode,
            t_end,
            observe,
            solver,
            events,
            equations: None,
        })
    }

    /// The run the scenario describes.
    pub fn problem(&self) -> Result<Problem<'_>, CliError> {
        self.problem_from(self.initial_state.clone(), self.params.clone())
    }

    /// The run the scenario describes, from `initial_state` with `params`
    /// (in the model's order) in place of the scenario's own: many runs of
    /// one checked scenario. They are checked as the scenario's values are:
    /// their lengths, that they are finite, and the model's parameter rules
    /// ([`rules::check_params`]).
    pub fn problem_from(
        &self,
        initial_state: Vec<f64>,
        params: Vec<f64>,
    ) -> Result<Problem<'_>, CliError> {
        let problem = Problem::new(&self.system, initial_state, params, self.t_end)
            .with_mode(&self.initial_mode)?
            .with_solver(self.solver.clone())
            .with_observations(self.observe.clone())
            .with_event_options(self.events.clone());
        let problem = match crate::progress_hook() {
            Some(hook) => problem.with_progress(hook),
            None => problem,
        };
        problem.validate()?;
        rules::check_params(&self.spec.name, self.system.param_names(), &problem.params)?;
        Ok(problem)
    }
}

/// The model a scenario names: its keys `model` (required), `size` and
/// `connections` (the scenario's other keys are checked for their names
/// only).
pub fn model_of(value: &Value) -> Result<Box<dyn Model>, CliError> {
    Ok(match chosen_model(value)? {
        ChosenModel::Catalogue(model) => model,
        ChosenModel::Equations(model) => model,
    })
}

/// The model a scenario names: a catalogue model, or one written as
/// equations (kept as such: it names the expression behind a non-finite
/// value).
enum ChosenModel {
    Catalogue(Box<dyn Model>),
    Equations(Box<EquationModel>),
}

fn chosen_model(value: &Value) -> Result<ChosenModel, CliError> {
    let obj = value.as_object().ok_or_else(|| {
        invalid(format!(
            "a scenario must be a JSON object, got {}",
            type_name(value)
        ))
    })?;
    check_keys(obj, &SCENARIO_KEYS, "the scenario")?;
    let size = obj.get("size").map(|v| count(v, "size", "3")).transpose()?;
    match obj.get("model") {
        None => Err(missing("model", "the scenario")),
        Some(Value::String(model_name)) => Ok(ChosenModel::Catalogue(catalogue_model(
            obj, model_name, size,
        )?)),
        Some(form @ Value::Object(_)) => {
            Ok(ChosenModel::Equations(Box::new(equation_model(obj, form)?)))
        }
        Some(other) => Err(invalid(format!(
            "'model' must be a string (a model name) or an object (a model written as \
             equations, see docs/equations.md), got {}",
            type_name(other)
        ))),
    }
}

/// A count of at least 1 for the key `key` (`example` in the message): an
/// integer, or a whole-valued float like `1000.0` or `1e4`.
fn count(v: &Value, key: &str, example: &str) -> Result<usize, CliError> {
    match (v.as_u64(), v.as_f64()) {
        (Some(n), _) if n >= 1 => Ok(usize::try_from(n).unwrap_or(usize::MAX)),
        (None, Some(x)) if x >= 1.0 && x.fract() == 0.0 => Ok(if x >= usize::MAX as f64 {
            usize::MAX
        } else {
            x as usize
        }),
        _ => Err(HybridError::invalid(
            key,
            v,
            format!("must be an integer of at least 1, like {example}"),
        )
        .into()),
    }
}

/// `connections`: an array of `[from, to]` neuron pairs.
fn connection_list(value: &Value) -> Result<Vec<(usize, usize)>, CliError> {
    let Value::Array(items) = value else {
        return Err(invalid(format!(
            "'connections' must be an array of [from, to] neuron pairs, like [[0, 1], [1, 2]], got {}",
            type_name(value)
        )));
    };
    items
        .iter()
        .enumerate()
        .map(|(k, item)| {
            let pair = item.as_array().filter(|a| a.len() == 2);
            let index = |v: &Value| v.as_u64().and_then(|n| usize::try_from(n).ok());
            match pair.map(|a| (index(&a[0]), index(&a[1]))) {
                Some((Some(from), Some(to))) => Ok((from, to)),
                _ => Err(HybridError::invalid(
                    format!("connections[{k}]"),
                    item,
                    "a synapse is a pair [from, to] of neuron numbers from 0",
                )
                .into()),
            }
        })
        .collect()
}

/// `loss`: an array of `{"of", "weight", "target"}` terms.
fn parse_loss(value: &Value, system: &HybridSystem) -> Result<LossTerms, CliError> {
    let Value::Array(items) = value else {
        return Err(invalid(format!(
            "'loss' must be an array of terms like {{\"of\": \"final.x\", \"weight\": 1.0}}, got {}",
            type_name(value)
        )));
    };
    if items.is_empty() {
        return Err(invalid(
            "'loss' has no terms: its value and gradient would be zero whatever the run; give at least one, like [{\"of\": \"final.x\", \"weight\": 1.0}], or leave 'loss' out".into(),
        ));
    }
    let mut terms = Vec::with_capacity(items.len());
    for (k, item) in items.iter().enumerate() {
        let context = format!("loss[{k}]");
        let obj = item.as_object().ok_or_else(|| {
            invalid(format!(
                "'{context}' must be an object {{\"of\": ..., \"weight\": ..., \"target\": ...}}, got {}",
                type_name(item)
            ))
        })?;
        check_keys(obj, &["of", "weight", "target"], &format!("'{context}'"))?;
        let of = match obj.get("of") {
            None => return Err(missing("of", &format!("'{context}'"))),
            Some(Value::String(s)) => s.clone(),
            Some(other) => {
                return Err(invalid(format!(
                    "'{context}.of' must be a string (final.<state>, observation.<index>.<state> or event.<index>.time), got {}",
                    type_name(other)
                )))
            }
        };
        let weight = match obj.get("weight") {
            None => return Err(missing("weight", &format!("'{context}'"))),
            Some(v) => number(v, &format!("{context}.weight"))?,
        };
        let target = obj
            .get("target")
            .map(|v| number(v, &format!("{context}.target")))
            .transpose()?;
        terms.push(Term { of, weight, target });
    }
    Ok(LossTerms::new(terms, system)?)
}

/// The solver object: `{"method": ..., ...}` with the keys of its method.
fn parse_solver(value: &Value, t_end: f64) -> Result<SolverChoice, CliError> {
    let obj = object(value, "solver")?;
    let method = match obj.get("method") {
        None => "dopri5",
        Some(Value::String(s)) => s.as_str(),
        Some(other) => {
            return Err(invalid(format!(
                "'solver.method' must be a string (one of {}), got {}",
                SOLVER_METHODS.join(", "),
                type_name(other)
            )))
        }
    };
    let context = format!("solver (method {method})");
    let get = |key: &str, default: f64| -> Result<f64, CliError> {
        match obj.get(key) {
            None => Ok(default),
            Some(v) => number(v, &format!("solver.{key}")),
        }
    };
    match method {
        "dopri5" | "dop853" => {
            check_keys(obj, &["method", "rtol", "atol", "max_step"], &context)?;
            let (rtol, atol) = (
                get("rtol", DEFAULT_TOLERANCE)?,
                get("atol", DEFAULT_TOLERANCE)?,
            );
            let max_step = match obj.get("max_step") {
                None => None,
                Some(v) => Some(number(v, "solver.max_step")?),
            };
            Ok(if method == "dopri5" {
                SolverChoice::Dopri5 {
                    rtol,
                    atol,
                    max_step,
                }
            } else {
                SolverChoice::Dop853 {
                    rtol,
                    atol,
                    max_step,
                }
            })
        }
        "exact" => {
            check_keys(obj, &["method"], &context)?;
            Ok(SolverChoice::Exact)
        }
        "rk4" => {
            check_keys(obj, &["method", "dt"], &context)?;
            Ok(SolverChoice::Rk4 {
                dt: get("dt", t_end / DEFAULT_RK4_STEPS)?,
            })
        }
        _ => {
            let Some(&(integrator, _)) = OdeSolversMethod::ALL.iter().find(|(_, n)| *n == method)
            else {
                return Err(HybridError::UnknownName {
                    kind: "solver method".into(),
                    name: method.into(),
                    valid: SOLVER_METHODS.iter().map(|s| s.to_string()).collect(),
                }
                .into());
            };
            check_keys(obj, &["method", "rtol", "atol", "macro_step"], &context)?;
            let steps = if integrator == OdeSolversMethod::Rk4 {
                DEFAULT_RK4_STEPS
            } else {
                DEFAULT_MACRO_STEPS
            };
            Ok(SolverChoice::OdeSolvers {
                integrator,
                rtol: get("rtol", DEFAULT_TOLERANCE)?,
                atol: get("atol", DEFAULT_TOLERANCE)?,
                macro_step: get("macro_step", t_end / steps)?,
            })
        }
    }
}

/// Marks the error of a duplicated key (a serde custom error carries only
/// text).
const DUPLICATE_KEY: &str = "duplicate key ";

/// Parses JSON text into a [`Value`], refusing a key that appears twice in
/// one object at any depth (serde_json would keep the last silently).
pub fn parse_json(text: &str, source: &str) -> Result<Value, CliError> {
    let mut de = serde_json::Deserializer::from_str(text);
    let value = Checked {
        path: String::new(),
    }
    .deserialize(&mut de)
    .and_then(|v| de.end().map(|()| v))
    .map_err(|e| malformed(&e, source))?;
    Ok(value)
}

/// A [`Value`] seed that refuses duplicated keys; `path` is where it sits
/// (`""` at the top, `params`, `solver`...).
struct Checked {
    path: String,
}

impl<'de> DeserializeSeed<'de> for Checked {
    type Value = Value;

    fn deserialize<D: serde::Deserializer<'de>>(self, d: D) -> Result<Value, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Checked {
    type Value = Value;

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("a JSON value")
    }

    fn visit_bool<E>(self, v: bool) -> Result<Value, E> {
        Ok(Value::Bool(v))
    }

    fn visit_i64<E>(self, v: i64) -> Result<Value, E> {
        Ok(Value::from(v))
    }

    fn visit_u64<E>(self, v: u64) -> Result<Value, E> {
        Ok(Value::from(v))
    }

    fn visit_f64<E>(self, v: f64) -> Result<Value, E> {
        Ok(Value::from(v))
    }

    fn visit_str<E>(self, v: &str) -> Result<Value, E> {
        Ok(Value::String(v.to_string()))
    }

    fn visit_string<E>(self, v: String) -> Result<Value, E> {
        Ok(Value::String(v))
    }

    fn visit_unit<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }

    fn visit_none<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Value, A::Error> {
        let mut items = Vec::new();
        while let Some(v) = seq.next_element_seed(Checked {
            path: format!("{}[{}]", self.path, items.len()),
        })? {
            items.push(v);
        }
        Ok(Value::Array(items))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Value, A::Error> {
        let mut obj = Map::new();
        while let Some(key) = map.next_key::<String>()? {
            let path = if self.path.is_empty() {
                key.clone()
            } else {
                format!("{}.{key}", self.path)
            };
            if obj.contains_key(&key) {
                let place = if self.path.is_empty() {
                    "the scenario".to_string()
                } else {
                    format!("'{}'", self.path)
                };
                return Err(A::Error::custom(format!(
                    "{DUPLICATE_KEY}'{path}': '{key}' appears twice in {place}; give each key once"
                )));
            }
            let value = map.next_value_seed(Checked { path })?;
            obj.insert(key, value);
        }
        Ok(Value::Object(obj))
    }
}

fn malformed(e: &serde_json::Error, source: &str) -> CliError {
    let text = e.to_string();
    if text.starts_with(DUPLICATE_KEY) {
        return CliError::InvalidScenario(format!("{text} in {source}"));
    }
    if text.starts_with("number out of range") {
        CliError::MalformedJson(format!(
            "{text} in {source}: a number overflows a 64-bit float to infinity; \
             every number must be finite (below about 1.8e308 in magnitude)"
        ))
    } else {
        CliError::MalformedJson(format!("malformed JSON in {source}: {text}"))
    }
}

/// The catalogue model `model_name` (with its `size` and `connections`).
fn catalogue_model(
    obj: &Map<String, Value>,
    model_name: &str,
    size: Option<usize>,
) -> Result<Box<dyn ia_models::Model>, CliError> {
    Ok(match obj.get("connections") {
        None => ia_models::sized(model_name, size)?,
        Some(v) if model_name == "lif-network" => {
            let size = size.unwrap_or_else(|| ia_models::LifNetwork::default().size());
            Box::new(ia_models::LifNetwork::with_connections(
                size,
                connection_list(v)?,
            )?)
        }
        Some(_) => {
            return Err(invalid(format!(
                "'connections' applies to the lif-network model only, not to '{model_name}'"
            )))
        }
    })
}

/// The model written as equations in the scenario's `model` object.
fn equation_model(obj: &Map<String, Value>, equations: &Value) -> Result<EquationModel, CliError> {
    if let Some(key) = ["size", "connections"]
        .iter()
        .find(|k| obj.contains_key(**k))
    {
        return Err(invalid(format!(
            "'{key}' applies to the sized catalogue models, not to a model written as equations"
        )));
    }
    EquationModel::from_value(equations).map_err(|e| invalid(format!("'model' (equations): {e}")))
}

fn invalid(message: String) -> CliError {
    CliError::InvalidScenario(message)
}

fn missing(key: &str, context: &str) -> CliError {
    invalid(format!("{context} has no '{key}': it is required"))
}

fn check_keys(obj: &Map<String, Value>, valid: &[&str], context: &str) -> Result<(), CliError> {
    match obj.keys().find(|k| !valid.contains(&k.as_str())) {
        None => Ok(()),
        Some(key) => Err(invalid(format!(
            "unknown key '{key}' in {context}; valid keys: {}",
            valid.join(", ")
        ))),
    }
}

fn object<'v>(value: &'v Value, key: &str) -> Result<&'v Map<String, Value>, CliError> {
    value.as_object().ok_or_else(|| {
        invalid(format!(
            "'{key}' must be an object of names and values, got {}",
            type_name(value)
        ))
    })
}

/// A finite number.
fn number(value: &Value, key: &str) -> Result<f64, CliError> {
    match value.as_f64() {
        Some(x) if x.is_finite() => Ok(x),
        Some(x) => Err(HybridError::invalid_num(key, x, "every number must be finite").into()),
        None => Err(invalid(format!(
            "'{key}' must be a number, got {}",
            type_name(value)
        ))),
    }
}

fn type_name(value: &Value) -> String {
    match value {
        Value::Null => "null".into(),
        Value::Bool(b) => format!("the boolean {b}"),
        Value::Number(n) => format!("the number {n}"),
        Value::String(s) => format!("the string {s:?}"),
        Value::Array(_) => "an array".into(),
        Value::Object(_) => "an object".into(),
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

    /// A scenario for a given model reads the same keys as one naming it.
    #[test]
    fn for_model_reads_the_other_keys() {
        let model = model_of(&serde_json::json!({"model": "particle-chain", "size": 4})).unwrap();
        let value = serde_json::json!({"t_end": 2.0, "observe": [1.0]});
        let scenario = Scenario::for_model(model.as_ref(), &value).unwrap();
        assert_eq!(scenario.spec.name, "particle-chain");
        assert_eq!(scenario.initial_state.len(), 8);
        assert_eq!(scenario.observe, [1.0]);
        let err = Scenario::for_model(model.as_ref(), &serde_json::json!({"t_end": 1, "tend": 1}))
            .unwrap_err();
        assert!(err.to_string().starts_with("unknown key 'tend'"), "{err}");
    }
}
