//! `impact_adjoint.Model`: a model and its runs. Every option a run takes
//! is read by the reader of the scenario key it stands for and set on an
//! `ia_scenario::Scenario` by its typed setter (the command line's checks
//! and messages); the initial state and the parameters are checked by the
//! run, and the runs are the scenario's recipe (`ia_scenario::recipe`).

use crate::convert::{by_name, from_json, to_json};
use crate::errors::{invalid, library, to_py};
use crate::results;
use ia_adjoint::LossTerms;
use ia_core::HybridError;
use ia_scenario::read::{count, number, parse_json, type_name};
use ia_scenario::{GradientMethod, Scenario, ScenarioError};
use numpy::PyArray1;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList, PyString};
use serde_json::Value;
use std::sync::Arc;

/// A hybrid model: its state, parameter, mode and transition names, and its
/// runs (`simulate`, `jacobian`, `gradient`) and periodic orbits
/// (`periodic_orbit`).
#[pyclass(frozen, module = "impact_adjoint")]
pub struct Model {
    /// The scenario of the model's defaults (its run length, the default
    /// solver): each run's scenario is a clone with the run's options set,
    /// sharing the model's description and hybrid system, built once here.
    defaults: Scenario,
}

/// The options of a run, by the scenario key each stands for.
#[derive(Default)]
pub(crate) struct RunOptions<'a, 'py> {
    pub t_end: Option<&'a Bound<'py, PyAny>>,
    pub solver: Option<&'a Bound<'py, PyAny>>,
    pub observe: Option<&'a Bound<'py, PyAny>>,
    pub mode: Option<&'a Bound<'py, PyAny>>,
    pub max_events: Option<&'a Bound<'py, PyAny>>,
    pub max_steps: Option<&'a Bound<'py, PyAny>>,
    pub loss: Option<&'a Bound<'py, PyAny>>,
    pub checkpoints: Option<&'a Bound<'py, PyAny>>,
    pub derivative_probes: Option<&'a Bound<'py, PyAny>>,
}

impl Model {
    pub(crate) fn new(model: Box<dyn ia_models::Model>) -> PyResult<Self> {
        let model: Arc<dyn ia_models::Model> = Arc::from(model);
        let defaults = Scenario::of_defaults(model).map_err(to_py)?;
        Ok(Self { defaults })
    }

    fn model_spec(&self) -> &ia_models::ModelSpec {
        &self.defaults.spec
    }

    /// The checked scenario of a run with `options`: each read as its
    /// scenario key and set in the order of the scenario's keys.
    pub(crate) fn scenario(&self, options: &RunOptions<'_, '_>) -> PyResult<Scenario> {
        let mut scenario = self.defaults.clone();
        if let Some(v) = options.t_end.filter(|v| !v.is_none()) {
            let t_end = number(&to_json(v, "t_end")?, "t_end").map_err(to_py)?;
            scenario.set_t_end(t_end).map_err(to_py)?;
        }
        let t_end = scenario.t_end;
        if let Some(v) = options.mode.filter(|v| !v.is_none()) {
            let value = to_json(v, "initial_mode")?;
            let mode = ia_scenario::scenario::read_mode(&value, &self.model_spec().modes)
                .map_err(to_py)?;
            scenario.set_initial_mode(mode).map_err(to_py)?;
        }
        if let Some(v) = options.observe.filter(|v| !v.is_none()) {
            let times =
                ia_scenario::scenario::read_times(&to_json(v, "observe")?).map_err(to_py)?;
            scenario.set_observe(times).map_err(to_py)?;
        }
        if let Some(v) = options.solver.filter(|v| !v.is_none()) {
            let solver = match to_json(v, "solver")? {
                Value::String(method) => ia_scenario::solver::default_solver(&method, t_end),
                other => ia_scenario::solver::read_solver(&other, t_end),
            }
            .map_err(to_py)?;
            scenario.set_solver(solver).map_err(to_py)?;
        }
        let counts = [
            ("max_events", options.max_events, "1000"),
            ("max_steps", options.max_steps, "10000000"),
        ];
        for (key, value, example) in counts {
            if let Some(v) = value.filter(|v| !v.is_none()) {
                let n = count(&to_json(v, key)?, key, example).map_err(to_py)?;
                match key {
                    "max_events" => scenario.set_max_events(n),
                    _ => scenario.set_max_steps(n),
                }
                .map_err(to_py)?;
            }
        }
        if let Some(v) = options.loss.filter(|v| !v.is_none()) {
            let terms = ia_scenario::loss::read_loss(&to_json(v, "loss")?).map_err(to_py)?;
            scenario.set_loss(terms).map_err(to_py)?;
        }
        if let Some(k) = options.checkpoints.filter(|v| !v.is_none()) {
            let key = "adjoint.checkpoints";
            let k = count(&to_json(k, key)?, key, "1000").map_err(to_py)?;
            scenario.set_checkpoints(k).map_err(to_py)?;
        }
        if let Some(k) = options.derivative_probes.filter(|v| !v.is_none()) {
            let value = to_json(k, "adjoint.derivative_probes")?;
            let k = ia_scenario::scenario::read_derivative_probes(&value).map_err(to_py)?;
            scenario.set_derivative_probes(k).map_err(to_py)?;
        }
        Ok(scenario)
    }

    /// The initial state and parameters, in the model's order.
    pub(crate) fn inputs(
        &self,
        x0: Option<&Bound<'_, PyAny>>,
        params: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<(Vec<f64>, Vec<f64>)> {
        let defaults = &self.defaults;
        let system = &defaults.system;
        let x0 = by_name(
            x0,
            "x0",
            "state",
            system.state_names(),
            &defaults.initial_state,
        )?;
        let params = by_name(
            params,
            "params",
            "parameter",
            system.param_names(),
            &defaults.params,
        )?;
        Ok((x0, params))
    }
}

/// `method` as the command line's `--method`.
fn gradient_method(method: &str) -> PyResult<GradientMethod> {
    match method {
        "forward" => Ok(GradientMethod::Forward),
        "adjoint" => Ok(GradientMethod::Adjoint),
        other => Err(library(HybridError::invalid(
            "method",
            format!("'{other}'"),
            "must be 'forward' or 'adjoint'",
        ))),
    }
}

#[pymethods]
impl Model {
    /// The ready model `name` (see `models()`), with `size` elements for a
    /// sized model (`lif-network`: neurons, `particle-chain`: balls,
    /// `cuba-lif`: a list `[n_in, n_hidden, n_out]`) and,
    /// for `lif-network`, its synapses as `connections`, `[from, to]` pairs.
    #[staticmethod]
    #[pyo3(signature = (name, size=None, *, connections=None))]
    fn ready(
        name: &Bound<'_, PyAny>,
        size: Option<&Bound<'_, PyAny>>,
        connections: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Self> {
        let name = match to_json(name, "model")? {
            Value::String(name) => name,
            other => {
                return Err(invalid(format!(
                    "'model' must be a string (a model name, see models()), got {}",
                    type_name(&other)
                )))
            }
        };
        let size = match size.filter(|v| !v.is_none()) {
            None => None,
            Some(v) => Some(ia_scenario::model::size_of(&to_json(v, "size")?).map_err(to_py)?),
        };
        let connections = match connections.filter(|v| !v.is_none()) {
            None => None,
            Some(v) => Some(
                ia_scenario::model::connection_list(&to_json(v, "connections")?).map_err(to_py)?,
            ),
        };
        let model = ia_scenario::catalogue_model(&name, size, connections).map_err(to_py)?;
        Self::new(model)
    }

    /// A model written as equations: a dict, or its JSON text, with
    /// `states` and `params` (names with default values), optional `let`
    /// `modes` (each with its `flow`: a rate expression per state) and
    /// `transitions` (`name`, `from`, `to`, `guard` expression, `direction`
    /// `"rising"`, `"falling"` or `"either"`, and a `reset` of the states it
    /// changes); optional `name`, `description`, `initial_mode`, `t_end`.
    /// Every partial derivative follows from the expressions (dual numbers).
    #[staticmethod]
    fn from_equations(equations: &Bound<'_, PyAny>) -> PyResult<Self> {
        // As the command line's `model` key: the same checks and messages,
        // the equations named as such (this call has no scenario).
        let form = if let Ok(text) = equations.cast::<PyString>() {
            parse_json(&text.extract::<String>()?, "the equations").map_err(to_py)?
        } else if equations.is_instance_of::<PyDict>() {
            to_json(equations, "model")?
        } else {
            return Err(invalid(format!(
                "'equations' must be a dict or the JSON text of a model written as equations, got {}",
                crate::convert::describe(equations)
            )));
        };
        let model = ia_scenario::model::equations_model(&form, "the equations").map_err(to_py)?;
        Self::new(Box::new(model))
    }

    /// The model's name.
    #[getter]
    fn name(&self) -> String {
        self.model_spec().name.clone()
    }

    /// The model's equations, in words.
    #[getter]
    fn description(&self) -> String {
        self.model_spec().description.clone()
    }

    /// State names, in order (the entries of `x0` and of every state array).
    #[getter]
    fn state_names(&self) -> Vec<String> {
        self.model_spec().state_names()
    }

    /// Parameter names, in order (the entries of `params`).
    #[getter]
    fn param_names(&self) -> Vec<String> {
        self.model_spec().param_names()
    }

    /// Mode names, in order.
    #[getter]
    fn mode_names(&self) -> Vec<String> {
        self.model_spec().modes.clone()
    }

    /// The mode a run starts in unless `mode` is given.
    #[getter]
    fn initial_mode(&self) -> String {
        self.model_spec().initial_mode.clone()
    }

    /// Transition names, in order.
    #[getter]
    fn transition_names(&self) -> Vec<String> {
        self.model_spec().transition_names()
    }

    /// The names of the derivative columns: `initial.<state>`, then
    /// `param.<name>`.
    #[getter]
    fn wrt_names(&self) -> Vec<String> {
        self.defaults.system.wrt_names().to_vec()
    }

    /// The default initial state.
    #[getter]
    fn default_state<'py>(&self, py: Python<'py>) -> Bound<'py, PyArray1<f64>> {
        PyArray1::from_vec(py, self.model_spec().default_state())
    }

    /// The default parameters.
    #[getter]
    fn default_params<'py>(&self, py: Python<'py>) -> Bound<'py, PyArray1<f64>> {
        PyArray1::from_vec(py, self.model_spec().default_params())
    }

    /// The default run length.
    #[getter]
    fn t_end(&self) -> f64 {
        self.model_spec().t_end
    }

    /// The model's description as `impact-adjoint models --json` prints it:
    /// states and parameters with defaults and units, modes, transitions.
    fn spec<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let value = serde_json::to_value(self.model_spec())
            .map_err(|e| invalid(format!("model description: {e}")))?;
        from_json(py, &value)
    }

    fn __repr__(&self) -> String {
        match self.defaults.model.name() {
            "equations" => format!(
                "<impact_adjoint.Model {:?} (equations)>",
                self.model_spec().name
            ),
            name => format!("Model.ready({name:?})"),
        }
    }

    /// Runs the model from `x0` with `params` (sequences or arrays in the
    /// model's order, or dicts by name over the defaults; `None` for the
    /// defaults) until `t_end` (default: the model's run length).
    ///
    /// `solver` is a method name (`"dopri5"`, `"rk4"`, ...; `"exact"`, the
    /// exact event-driven solver, for `lif`, `lif-network` and `thermostat`)
    /// or a dict as the command line's `solver` key
    /// (`{"method": "rk4", "dt": 1e-3}`); `observe` the times at which the
    /// state is reported; `mode` the mode to start in. Returns a
    /// `Simulation`.
    #[pyo3(signature = (x0=None, params=None, t_end=None, *, solver=None, observe=None, mode=None, max_events=None, max_steps=None))]
    #[allow(clippy::too_many_arguments)]
    fn simulate<'py>(
        &self,
        py: Python<'py>,
        x0: Option<&Bound<'py, PyAny>>,
        params: Option<&Bound<'py, PyAny>>,
        t_end: Option<&Bound<'py, PyAny>>,
        solver: Option<&Bound<'py, PyAny>>,
        observe: Option<&Bound<'py, PyAny>>,
        mode: Option<&Bound<'py, PyAny>>,
        max_events: Option<&Bound<'py, PyAny>>,
        max_steps: Option<&Bound<'py, PyAny>>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let scenario = self.scenario(&RunOptions {
            t_end,
            solver,
            observe,
            mode,
            max_events,
            max_steps,
            ..RunOptions::default()
        })?;
        let (x0, params) = self.inputs(x0, params)?;
        let trajectory = py
            .detach(|| scenario.simulate_from(x0, params))
            .map_err(to_py)?;
        results::simulation(
            py,
            &self.model_spec().name,
            &scenario.system,
            scenario.t_end,
            &trajectory,
        )
    }

    /// The Jacobians of the run `simulate` makes with the same arguments:
    /// of the final state, of the observed states and of every event time,
    /// with respect to the initial state and the parameters (the columns
    /// `wrt`, by name: `initial.<state>`, `param.<name>`; default all), by
    /// forward sensitivities (`method="forward"`) or the discrete adjoint
    /// (`"adjoint"`, one backward pass per row; `derivative_probes=0` turns
    /// off the probes that let its taped run control the derivative's
    /// accuracy, `derivative_probes=k` carries k of them). Returns a
    /// `Jacobian`.
    #[pyo3(signature = (x0=None, params=None, t_end=None, *, method="forward", wrt=None, solver=None, observe=None, mode=None, max_events=None, max_steps=None, derivative_probes=None))]
    #[allow(clippy::too_many_arguments)]
    fn jacobian<'py>(
        &self,
        py: Python<'py>,
        x0: Option<&Bound<'py, PyAny>>,
        params: Option<&Bound<'py, PyAny>>,
        t_end: Option<&Bound<'py, PyAny>>,
        method: &str,
        wrt: Option<&Bound<'py, PyAny>>,
        solver: Option<&Bound<'py, PyAny>>,
        observe: Option<&Bound<'py, PyAny>>,
        mode: Option<&Bound<'py, PyAny>>,
        max_events: Option<&Bound<'py, PyAny>>,
        max_steps: Option<&Bound<'py, PyAny>>,
        derivative_probes: Option<&Bound<'py, PyAny>>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let method = gradient_method(method)?;
        let scenario = self.scenario(&RunOptions {
            t_end,
            solver,
            observe,
            mode,
            max_events,
            max_steps,
            derivative_probes,
            ..RunOptions::default()
        })?;
        let wrt: Option<Vec<String>> = match wrt.filter(|v| !v.is_none()) {
            None => None,
            Some(v) => Some(names(v, "wrt")?),
        };
        let (x0, params) = self.inputs(x0, params)?;
        let sens = py
            .detach(|| {
                let wrt: Option<Vec<&str>> =
                    wrt.as_ref().map(|w| w.iter().map(String::as_str).collect());
                scenario.jacobian_from(x0, params, method, wrt.as_deref())
            })
            .map_err(to_py)?;
        results::jacobian(
            py,
            &self.model_spec().name,
            &scenario.system,
            scenario.t_end,
            method.name(),
            &sens,
        )
    }

    /// The gradient of the scalar loss `loss` (a list of terms as the
    /// command line's `loss` key: `{"of": "final.x", "weight": 1.0}`, with
    /// `of` one of `final.<state>`, `observation.<i>.<state>`,
    /// `event.<i>.time` and an optional `target`) with respect to the initial
    /// state and the parameters, for the run `simulate` makes with the same
    /// arguments: one backward pass (`method="adjoint"`, the default; with
    /// `checkpoints=K` the pass keeps about K to 2K step states, and
    /// `derivative_probes=0` turns off the probes that let its taped run
    /// control the gradient's accuracy), or the forward Jacobians
    /// contracted with the loss (`"forward"`). Returns a `Gradient`.
    #[pyo3(signature = (x0=None, params=None, t_end=None, *, loss, method="adjoint", solver=None, observe=None, mode=None, max_events=None, max_steps=None, checkpoints=None, derivative_probes=None))]
    #[allow(clippy::too_many_arguments)]
    fn gradient<'py>(
        &self,
        py: Python<'py>,
        x0: Option<&Bound<'py, PyAny>>,
        params: Option<&Bound<'py, PyAny>>,
        t_end: Option<&Bound<'py, PyAny>>,
        loss: &Bound<'py, PyAny>,
        method: &str,
        solver: Option<&Bound<'py, PyAny>>,
        observe: Option<&Bound<'py, PyAny>>,
        mode: Option<&Bound<'py, PyAny>>,
        max_events: Option<&Bound<'py, PyAny>>,
        max_steps: Option<&Bound<'py, PyAny>>,
        checkpoints: Option<&Bound<'py, PyAny>>,
        derivative_probes: Option<&Bound<'py, PyAny>>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let method = gradient_method(method)?;
        let scenario = self.scenario(&RunOptions {
            t_end,
            solver,
            observe,
            mode,
            max_events,
            max_steps,
            loss: Some(loss),
            checkpoints,
            derivative_probes,
        })?;
        let loss: LossTerms = scenario.loss.clone().ok_or_else(|| {
            invalid("'loss' must be a list of terms like {\"of\": \"final.x\", \"weight\": 1.0}, got None".into())
        })?;
        let (x0, params) = self.inputs(x0, params)?;
        let grad = py
            .detach(|| scenario.loss_gradient_from(x0, params, &loss, method))
            .map_err(to_py)?;
        results::gradient(
            py,
            &self.model_spec().name,
            &scenario.system,
            scenario.t_end,
            method.name(),
            &grad,
        )
    }

    /// The periodic orbit through the section of transition `section` (the
    /// state just after it fires), by Newton shooting from `x0` (a state
    /// just after `section` fires; default the model's initial state) with
    /// `params`, as the command line's `periodic`: `events_per_period`
    /// firings of `section` a period, runs of at most `max_period` (default
    /// the model's run length), `advancing` the names of states that move
    /// on by one common step each period (a runner's `x` and its foot's
    /// `xf`). Without a `solver` the runs use `dopri5` at `1e-12`. Returns a
    /// `PeriodicOrbit`; Newton failing raises `NoConvergenceError`, no
    /// return within `max_period` `NoReturnError`.
    #[pyo3(signature = (section, x0=None, params=None, *, events_per_period=1, max_period=None, advancing=None, solver=None))]
    #[allow(clippy::too_many_arguments)]
    fn periodic_orbit<'py>(
        &self,
        py: Python<'py>,
        section: &str,
        x0: Option<&Bound<'py, PyAny>>,
        params: Option<&Bound<'py, PyAny>>,
        events_per_period: i64,
        max_period: Option<&Bound<'py, PyAny>>,
        advancing: Option<&Bound<'py, PyAny>>,
        solver: Option<&Bound<'py, PyAny>>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let scenario = self.scenario(&RunOptions {
            t_end: max_period,
            solver,
            ..RunOptions::default()
        })?;
        let (x0, params) = self.inputs(x0, params)?;
        // The parameters' own rules, as for any run of the model.
        scenario
            .problem_from(x0.clone(), params.clone())
            .map_err(to_py)?;
        let events_per_period = usize::try_from(events_per_period).map_err(|_| {
            to_py(ScenarioError::Library(HybridError::invalid(
                "events_per_period",
                events_per_period,
                "must be an integer of at least 1",
            )))
        })?;
        let advancing = match advancing.filter(|v| !v.is_none()) {
            None => Vec::new(),
            Some(v) => ia_scenario::advancing_states(&to_json(v, "advancing")?, &scenario.system)
                .map_err(to_py)?,
        };
        let solver_given = solver.is_some_and(|v| !v.is_none());
        let orbit = py
            .detach(|| {
                scenario.periodic_orbit_from(
                    section,
                    &x0,
                    &params,
                    events_per_period,
                    advancing,
                    solver_given,
                )
            })
            .map_err(to_py)?;
        results::periodic_orbit(py, &self.model_spec().name, &orbit)
    }
}

/// A list of names (`wrt`).
fn names(value: &Bound<'_, PyAny>, what: &str) -> PyResult<Vec<String>> {
    let list = match to_json(value, what)? {
        Value::String(s) => return Ok(vec![s]),
        Value::Array(items) => items,
        _ => {
            return Err(invalid(format!(
                "'{what}' must be a list of names like [\"initial.x\", \"param.g\"], got {}",
                crate::convert::describe(value)
            )))
        }
    };
    list.into_iter()
        .enumerate()
        .map(|(k, v)| match v {
            Value::String(s) => Ok(s),
            other => Err(invalid(format!(
                "'{what}[{k}]' must be a name like \"param.g\", got {other}"
            ))),
        })
        .collect()
}

/// The names of the ready models.
#[pyfunction]
pub fn models(py: Python<'_>) -> PyResult<Bound<'_, PyList>> {
    PyList::new(py, ia_models::model_names())
}
