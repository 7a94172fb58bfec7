//! # ia-cli: the `impact-adjoint` command line
//!
//! Runs a scenario file of a ready model (from `ia-models`) and prints the
//! trajectory and its exact sensitivities (from `ia-adjoint`) as one JSON
//! document, so that scripts and other languages can drive the library
//! without writing Rust. The command names, the scenario format and the
//! output format below are a public contract.
//!
//! ## Commands
//!
//! ```text
//! impact-adjoint models [--json]
//! impact-adjoint simulate FILE [--compact]
//! impact-adjoint gradient FILE [--method forward|adjoint] [--jacobian] [--compact]
//! impact-adjoint periodic FILE [--compact]
//! impact-adjoint fit FILE [--compact]
//! impact-adjoint batch FILE [--jobs N]
//! ```
//!
//! The output is indented JSON; `--compact` prints the same document on one
//! line (for long runs, pipes and JSON Lines tools). A run longer than a
//! second shows a progress line on standard error when that is a terminal
//! (never on a pipe or a file); `--quiet` turns it off.
//!
//! * `models` lists the ready models with their states, parameters (with
//!   defaults and units), modes, transitions and default run length: a
//!   table for people by default, with `--json` a JSON array of the
//!   [`ia_models::ModelSpec`] records (`name`, `description`, `states`,
//!   `params`, `modes`, `initial_mode`, `t_end`, `transitions`; each state and
//!   parameter is `{"name", "default", "unit"}`). `models --equations FILE`
//!   instead prints how the model written as equations in `FILE` (its JSON,
//!   or a scenario whose `model` is one) was understood, each expression
//!   printed back ([`describe_equations`]).
//! * `simulate FILE` runs the scenario in `FILE` and prints the run.
//! * `gradient FILE` runs it with sensitivities and prints the run with the
//!   Jacobians. `--method forward` (the default) uses forward sensitivities
//!   ([`ia_adjoint::Method::Forward`]); `--method adjoint` uses the discrete
//!   adjoint ([`ia_adjoint::Method::Adjoint`]), one backward pass per output
//!   row. The adjoint transposes the solver's Runge-Kutta steps, so it runs
//!   the built-in steppers: `ode_solvers.rk4` runs as `rk4` with
//!   `dt = macro_step` (the same method on the same steps) and
//!   `ode_solvers.dopri5` and `ode_solvers.dop853` as `dopri5` and `dop853`
//!   with the same `rtol` and `atol` and `max_step = macro_step` (see
//!   [`adjoint_solver`]). With a `loss` in the scenario (see
//!   [Loss](#loss)), `--method adjoint` computes the loss gradient in one
//!   backward pass and prints the per-output Jacobians only with
//!   `--jacobian` (which costs one backward pass per output row).
//!
//! * `fit FILE` fits the scenario's free variables to its data (the
//!   scenario's `fit` key; see [`ia_scenario::fit`]) and prints the fitted values,
//!   their standard errors, the final loss and gradient norm, the
//!   iterations and why the optimiser stopped.
//! * `batch FILE` reads JSON Lines, one command and its scenario a line,
//!   runs them on `--jobs N` threads (default: one per core; at most 256) and prints
//!   JSON Lines in input order: each line's compact document, or an error
//!   object for a line that failed (see [`mod@batch`] for the format).
//!
//! `FILE` `-` reads the scenario from standard input. A scenario larger
//! than 16 MiB (say `/dev/zero`) is refused (kind `io`).
//!
//! ## Scenario format
//!
//! A JSON object:
//!
//! ```json
//! {"model": "ball2d-bowl",
//!  "params": {"g": 9.81, "e": 0.85, "c": 0.4},
//!  "initial_state": {"x": 0.3, "y": 1.0, "vx": 0.5, "vy": 0.0},
//!  "initial_mode": "flight",
//!  "t_end": 2.5,
//!  "observe": [0.5, 1.0],
//!  "solver": {"method": "dopri5", "rtol": 1e-12, "atol": 1e-12},
//!  "max_events": 10000}
//! ```
//!
//! | key | required | meaning |
//! |---|---|---|
//! | `model` | yes | a model name (see `impact-adjoint models`), or an object: a model written as equations (docs/equations.md); `params` and `initial_state` then override its defaults, `size` and `connections` do not apply, and a non-finite value names the expression behind it |
//! | `t_end` | yes | end time, `> 0`; the run starts at `t = 0` |
//! | `size` | no | the number of elements of a sized model (`lif-network`: neurons, `particle-chain`: balls; default 3); the state, parameter and transition names follow from it |
//! | `connections` | no | `lif-network` only: the synapses as `[from, to]` neuron pairs, replacing the default pattern; each gets a weight parameter `w<to>_<from>` |
//! | `params` | no | parameter values by name; missing ones take the model's defaults |
//! | `initial_state` | no | initial state entries by name; missing ones take the model's defaults |
//! | `initial_mode` | no | the mode the run starts in; default the model's initial mode |
//! | `observe` | no | times in `[0, t_end]`, non-decreasing, at which the state (and its Jacobian) is reported |
//! | `solver` | no | the solver, below; default `{"method": "dopri5"}` |
//! | `max_events` | no | an integer of at least 1 (a whole-valued number like `1000.0` counts); more events than this is reported as Zeno; default 10000 |
//! | `max_steps` | no | an integer of at least 1 (a whole-valued number counts); a run that needs more accepted steps ends in an error (kind `step_limit`) saying how far it got; default 10000000 (10^7, which bounds the adjoint's memory: it holds `(n + 4) x 8` bytes a step for `n` states) |
//! | `loss` | no | a scalar loss whose gradient `gradient` prints, below; `simulate` checks it and ignores it |
//! | `fit` | no | the free variables, bounds and data of `fit` (see [`ia_scenario::fit`]); the other commands check it and ignore it |
//! | `adjoint` | no | `{"checkpoints": K}`: the loss's backward pass under `--method adjoint` keeps the start states of about K to 2K steps and replays the others (the same gradient to the last bit, memory bounded; one more evaluation of every step's stages); default: every step's state kept |
//!
//! Solvers (`solver.method`, then that method's keys; every key but `method`
//! is optional):
//!
//! | method | keys | defaults |
//! |---|---|---|
//! | `dopri5` (default), `dop853` | `rtol`, `atol`, `max_step` | `rtol = atol = 1e-10`, step unbounded |
//! | `rk4` | `dt` (fixed step) | `dt = t_end / 1000` |
//! | `exact` | none | the exact event-driven solver (`ia_events::exact`): closed-form propagation between events, for `lif`, `lif-network` and `thermostat` (flows that are decoupled and linear, threshold guards); `simulate`, and `gradient` by either method |
//! | `ode_solvers.dopri5`, `ode_solvers.dop853` | `rtol`, `atol`, `macro_step` | `rtol = atol = 1e-10`, `macro_step = t_end / 100` |
//! | `ode_solvers.rk4` | `rtol`, `atol` (unused), `macro_step` (its fixed step) | `macro_step = t_end / 1000` |
//!
//! The `ode_solvers.*` methods run the `ode_solvers` crate's integrators
//! through the library's adapter: one adapter step runs the wrapped
//! integrator over `macro_step` of time (with its own adaptive steps for
//! dopri5 and dop853; as one classical step for rk4, hence its smaller
//! default). Tolerances lie in `[1e-15, 1)`; `dt`, `max_step` and
//! `macro_step` are greater than 0, and `dt` and `macro_step` at least
//! `t_end / 1e8` (a smaller fixed step would run for hours).
//!
//! Checks: an unknown key (in the scenario or in `solver`) is an error
//! naming the key and the valid keys; a key given twice in one object, at
//! any depth, is an error naming it (JSON parsers differ on which copy
//! wins); an unknown model, state, parameter,
//! mode or solver method names the offender and lists the valid names;
//! every number must be finite (JSON has no NaN or Infinity, and a number
//! that overflows to infinity, like `1e999`, is rejected); parameters must
//! be physically possible: see the per-model table in [`rules`] (for
//! example `g > 0`, masses, lengths and time constants `> 0`, restitution
//! `e` in `[0, 1]`, and in `(0, 1]` for a ball on a floor, where `e = 0`
//! would leave it resting on the floor; `Vr < Vth` for `lif`, `Tlo < Thi` for
//! `thermostat`).
//!
//! ## Loss
//!
//! `loss` is an array of terms, summed:
//!
//! ```json
//! "loss": [
//!   {"of": "final.x", "weight": 1.0},
//!   {"of": "event.3.time", "weight": 0.5},
//!   {"of": "observation.0.y", "target": 0.25, "weight": 2.0}
//! ]
//! ```
//!
//! * `of` (required) is `final.<state>` (the state entry at `t_end`),
//!   `observation.<index>.<state>` (the entry at observation `index` of
//!   `observe`) or `event.<index>.time` (the time of event `index`).
//!   Indices count from 0; a negative index counts from the end (`-1` is the
//!   last).
//! * `weight` (required) is a finite number `w`; `target` (optional) a finite
//!   number `y`. A term is `w * value`, or `w * (value - y)^2` with a target.
//!
//! An unknown state in `of` is an error (kind `unknown_name`) naming
//! `loss[k].of` and listing the valid state names; an `of` of another form,
//! or an unknown key in a term, is an error naming `loss[k]`. An event or
//! observation index the run does not reach is an error after the run (kind
//! `invalid_option`) naming `loss[k].of` and how many events or
//! observations the run has. The library type is
//! [`ia_adjoint::LossTerms`].
//!
//! A run that fails because a ball's bounces accumulate (each rebound `e`
//! times the one before, so the ball comes to rest) has the error of the
//! solver (`zeno`, `grazing`, `event_location` or `step_size_underflow`)
//! followed by that explanation, naming `e` and when the ball comes to rest.
//! So does a `slip-hopper` run whose mass leaves the ground below the
//! touchdown height `l0 cos(theta_td)` while falling (touchdown is then due
//! at once with the leg compressed, outside the model's scope), naming
//! where it lifted off.
//!
//! ## Output format
//!
//! `gradient` prints:
//!
//! ```json
//! {"model": "ball2d-bowl", "method": "forward", "t_end": 2.5, "final_mode": "flight",
//!  "final_state": {"x": 0.1, "y": 0.2, "vx": 0.3, "vy": 0.4},
//!  "wrt": ["initial.x", "initial.y", "initial.vx", "initial.vy", "param.g", "param.e", "param.c"],
//!  "jacobian": {"x": {"initial.x": 1.0, "...": 0.0, "param.c": 0.5}, "y": {"...": 0.0}},
//!  "events": [{"index": 0, "time": 0.4, "transition": "impact",
//!              "from_mode": "flight", "to_mode": "flight",
//!              "state_before": {"x": 0.1}, "state_after": {"x": 0.1},
//!              "time_gradient": {"initial.x": 0.1, "...": 0.0, "param.c": 0.2}}],
//!  "observations": [{"time": 0.5, "state": {"x": 0.1}, "jacobian": {"x": {"...": 0.0}}}],
//!  "stats": {"steps": 120, "rhs_evaluations": 800, "events": 4}}
//! ```
//!
//! * `final_state`, `state_before`, `state_after` and `state` map every state
//!   name to its value, in the model's state order.
//! * `wrt` names the columns: `initial.<state>` for each state, then
//!   `param.<name>` for each parameter, in the model's order.
//! * `jacobian[s][w]` is `d s(t_end) / d w`: rows in state order, columns in
//!   `wrt` order. An observation's `jacobian` is the same for the state at
//!   its time. An event's `time_gradient[w]` is `d t* / d w`.
//! * `method` is `forward` or `adjoint`; `stats` counts accepted steps,
//!   right-hand-side evaluations and events.
//! * With a `loss`, `loss` follows `jacobian`:
//!   `"loss": {"value": L, "gradient": {"initial.x": dL/dx0, "...": 0.0, "param.c": dL/dc}}`,
//!   keys in `wrt` order. Under `--method forward` it is the forward
//!   Jacobians contracted with the loss's partial derivatives; under
//!   `--method adjoint` it is one backward pass, and `jacobian`, every
//!   `time_gradient` and every observation `jacobian` are left out unless
//!   `--jacobian` is given. Without a `loss` the document is as above.
//!
//! `simulate` prints the same document without the derivative fields:
//! no `method`, `wrt`, `jacobian`, `time_gradient` or observation
//! `jacobian`.
//!
//! Numbers print with full `f64` precision (the shortest text that reads
//! back to the same number).
//!
//! ## Periodic orbits
//!
//! `periodic FILE` finds the periodic orbit through the section of a
//! transition by Newton shooting (the library is `ia_orbits`; the
//! mathematics is in `docs/method.md`). The scenario adds:
//!
//! * `section` (required): the transition whose firing defines the
//!   section; the orbit starts just after it fires, in the mode it leads to
//!   (an `initial_mode` other than that one is refused);
//! * `events_per_period` (optional, an integer of at least 1, default 1):
//!   firings of `section` in one period;
//! * `max_period` (optional): the run length allowed for one period;
//!   default `t_end` if given, else the model's default run length;
//! * `advancing` (optional, an array of state names): states that advance
//!   by one common displacement each period instead of returning, such as
//!   a runner's `x` and its foot's `xf`; their differences must return.
//!   The output then adds `"advance": {"<state>": d}`, and the shift's
//!   multiplier 1 is flagged `"advancing": true`.
//!
//! `initial_state` is the starting guess; `observe`, `loss` and `adjoint`
//! are refused. Without a `solver` the runs use `dopri5` at `1e-12` (the
//! multiplier derivatives difference the return map's Jacobian, so they need
//! the tighter tolerance). The output (example: `examples/periodic/`):
//!
//! ```text
//! {"model": "...", "section": "...", "fixed_point": {"<state>": v},
//!  "period": T, "newton_iterations": n, "residual": r,
//!  "multipliers": [{"re": a, "im": b}, {"re": 1, "im": 0, "trivial": true}],
//!  "monodromy": {"<state>": {"<state>": v}},
//!  "sensitivities": {"fixed_point": {"<state>": {"param.<p>": v}},
//!                    "period": {"param.<p>": v},
//!                    "multipliers": [{"param.<p>": {"re": a, "im": b}}]}}
//! ```
//!
//! Multipliers are the eigenvalues of the monodromy matrix (one period,
//! flows and saltations chained), sorted by modulus, largest first; the one
//! along the flow is `"trivial": true` and its derivatives are 0. When the
//! derivatives are not defined (a family of orbits, a multiple multiplier),
//! `sensitivities` is `{"unavailable": "<why>"}`. Newton failing is an error
//! of kind `no_convergence` (with its iterations, residual and what to
//! try); no firing of the section within `max_period`, `no_return`.
//!
//! ## Errors and exit status
//!
//! Success exits 0. Any failure prints one line on standard error,
//! `error: <kind>: <message>` (the kind is [`CliError::kind`]), and exits
//! with status 2: bad input (kinds `malformed_json` with line and column,
//! `invalid_scenario`, `unknown_name`, `invalid_option`, `io`), a failure of
//! the solver (`zeno`, `grazing`, `step_size_underflow`, `step_limit`,
//! `guard_violated_at_start`, `event_location`, `non_finite`), a request the
//! method cannot serve (`unsupported`), a periodic orbit not found
//! (`no_convergence`, `no_return`), a fit that fails (`optimizer`,
//! `not_identifiable`), and usage errors (kind `usage`: no
//! subcommand, an unknown subcommand or flag, a missing argument; clap's
//! message on one line, then `see impact-adjoint --help`). `--help` and
//! `--version` print to standard output and exit 0. Numbers in messages
//! print short (`1e308`, not 309 digits).
//!
//! ## Use as a library
//!
//! ```
//! let scenario = r#"{"model": "two-ball", "t_end": 1}"#;
//! let out = ia_cli::gradient(scenario, "example", ia_cli::GradientMethod::Forward).unwrap();
//! let doc: serde_json::Value = serde_json::from_str(&out).unwrap();
//! assert!((doc["final_state"]["x2"].as_f64().unwrap() - 1.2).abs() < 1e-9);
//! assert!((doc["jacobian"]["x2"]["initial.v1"].as_f64().unwrap() - 1.0).abs() < 1e-9);
//! ```

#![deny(missing_docs)]

pub mod batch;
pub mod report;

pub use batch::batch;
// The scenario and its runs live in `ia-scenario` (shared with the Python
// package); their old paths here stay.
pub use ia_scenario::{
    adjoint_solver, explain, orbit_options, rules, scenario, GradientMethod, ProgressHook,
    Scenario, ScenarioError as CliError,
};

use ia_scenario::periodic::PeriodicScenario;
use ia_scenario::read::parse_json;
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
/// [`adjoint_solver`] (the built-in equivalent of an `ode_solvers.*`
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
    .map_err(|e| CliError::InvalidScenario(format!("{source}: {e}")))?;
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
        let rules = rules::rules_for(&spec.name)
            .iter()
            .map(|(p, r, _)| format!("{p} {}", r.describe()))
            .collect::<Vec<_>>();
        let _ = writeln!(out, "{}", spec.name);
        let _ = writeln!(out, "  {}", spec.description);
        let _ = writeln!(out, "  states:       {}", quantities(&spec.states));
        let _ = writeln!(out, "  params:       {}", quantities(&spec.params));
        let relations = rules::relations_for(&spec.name)
            .iter()
            .map(|(low, high, _)| format!("{low} < {high}"));
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

/// `json` on one line: the whitespace between tokens removed, strings
/// untouched (what `--compact` prints; the keys keep their order).
///
/// ```
/// let pretty = "{\n  \"a b\": [\n    1,\n    2\n  ]\n}";
/// assert_eq!(ia_cli::compact_json(pretty), "{\"a b\":[1,2]}");
/// ```
pub fn compact_json(json: &str) -> String {
    let mut out = String::with_capacity(json.len());
    let (mut in_string, mut escaped) = (false, false);
    for c in json.chars() {
        if in_string {
            out.push(c);
            match (escaped, c) {
                (true, _) => escaped = false,
                (false, '\\') => escaped = true,
                (false, '"') => in_string = false,
                _ => {}
            }
        } else if c == '"' {
            in_string = true;
            out.push(c);
        } else if !c.is_whitespace() {
            out.push(c);
        }
    }
    out
}
