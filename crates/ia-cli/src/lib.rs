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
//! | `size` | no | the number of elements of a sized model (`lif-network`: neurons, `particle-chain`: balls; default 3), or the list `[n_in, n_hidden, n_out]` of `cuba-lif`'s layers (default `[2, 3, 2]`); the state, parameter and transition names follow from it |
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
//! | `adjoint` | no | `{"checkpoints": K}`: the loss's backward pass under `--method adjoint` keeps the start states of about K to 2K steps and replays the others (the same gradient to the last bit, memory bounded; one more evaluation of every step's stages); default: every step's state kept. `{"derivative_probes": k}` (0 to 8): pseudo-random tangents the adjoint's taped run carries in its error norm so that its steps control the derivative's accuracy too (docs/method.md, section 6); default: one for dopri5, dop853, trbdf2, kvaerno3 and kvaerno5 on systems of at most 64 inputs, none otherwise; 0 turns them off |
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
//! be physically possible: see the per-model table in [`ia_models::rules`] (for
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
//!   `observe`), `event.<index>.time` (the time of event `index`) or
//!   `first.<transition>.time` (the time the named transition first fires).
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
//!   right-hand-side evaluations and events, and `stiff_steps` when the
//!   explicit method's stiffness test found the flow stiff (the steps it
//!   took with their size set by stability: an implicit method fits), and
//!   `redone_steps` when the adjoint's taped run found the flow stiff and
//!   was redone with one derivative probe per input (the accepted steps of
//!   the run discarded).
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
//! `invalid_scenario`, `invalid_equations` (a mistake in a model written as
//! equations), `unknown_name`, `invalid_option`, `io`), a failure of
//! the solver (`zeno`, `grazing`, `step_size_underflow`, `newton_failure`
//! (an implicit method's stage equations did not converge at any step
//! size), `step_limit`, `guard_violated_at_start`, `event_location`,
//! `non_finite`), a request the
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
pub mod commands;
pub mod report;

pub use batch::batch;
pub use commands::{
    describe_equations, fit, gradient, gradient_with, models_json, models_table, periodic,
    simulate, Commands,
};
pub use report::compact_json;
// The scenario and its runs live in `ia-scenario` (shared with the Python
// package); their old paths here stay.
pub use ia_scenario::{
    adjoint_solver, explain, orbit_options, scenario, GradientMethod, ProgressHook, Scenario,
    ScenarioError as CliError,
};
