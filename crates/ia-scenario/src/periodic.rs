//! The periodic-orbit scenario of `impact-adjoint periodic` and
//! `Model.periodic_orbit`: its keys, and the orbit solver's options.

use crate::error::ScenarioError;
use crate::keys::{PERIODIC_KEYS, SCENARIO_KEYS};
use crate::read::{check_keys, count, invalid, missing, number, parse_json, type_name};
use crate::scenario::Scenario;
use ia_core::{name_index, HybridError, HybridSystem};
use serde_json::Value;

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
    pub fn parse(text: &str, source: &str) -> Result<Self, ScenarioError> {
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
        let index = name_index("section transition", &names, &section)?;
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
pub fn advancing_states(value: &Value, system: &HybridSystem) -> Result<Vec<usize>, ScenarioError> {
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

/// The orbit solver's options for `scenario` (its `t_end` is the longest
/// run of one period): `events_per_period`, the `advancing` states, and
/// the scenario's solver if it gave one (`solver_given`; otherwise the
/// orbit solver's tighter default) and its event options. Shared by
/// [`PeriodicScenario::orbit`] and the Python package.
pub fn orbit_options(
    scenario: &Scenario,
    events_per_period: usize,
    advancing: Vec<usize>,
    solver_given: bool,
) -> ia_orbits::OrbitOptions {
    let mut options = ia_orbits::OrbitOptions::new(scenario.t_end)
        .with_events_per_period(events_per_period)
        .with_advancing(advancing);
    if solver_given {
        options.solver = scenario.solver.clone();
    }
    options.events = scenario.events.clone();
    options
}
