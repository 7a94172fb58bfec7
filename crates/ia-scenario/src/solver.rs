//! The scenario's `solver`: its reader, the methods' defaults, and the
//! solver the adjoint runs in place of an `ode_solvers.*` one.

use crate::error::ScenarioError;
use crate::read::{check_keys, invalid, number, object, type_name};
use ia_core::HybridError;
use ia_events::{OdeSolversMethod, SolverChoice};
use serde_json::{Map, Value};

/// The solver method names a scenario may give, the default first.
pub const SOLVER_METHODS: [&str; 10] = [
    "dopri5",
    "dop853",
    "rk4",
    "trbdf2",
    "kvaerno3",
    "kvaerno5",
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

/// The solver object: `{"method": ..., ...}` with the keys of its method
/// (the others take their defaults, some in proportion to `t_end`).
pub fn read_solver(value: &Value, t_end: f64) -> Result<SolverChoice, ScenarioError> {
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
    solver_of(method, obj, t_end)
}

/// The solver `method` (one of [`SOLVER_METHODS`]) with its default
/// settings for a run to `t_end`: what a scenario's `{"method": method}`
/// gives.
pub fn default_solver(method: &str, t_end: f64) -> Result<SolverChoice, ScenarioError> {
    solver_of(method, &Map::new(), t_end)
}

/// The solver `method` with the keys of `obj`, defaults for the others.
fn solver_of(
    method: &str,
    obj: &Map<String, Value>,
    t_end: f64,
) -> Result<SolverChoice, ScenarioError> {
    let context = format!("solver (method {method})");
    let get = |key: &str, default: f64| -> Result<f64, ScenarioError> {
        match obj.get(key) {
            None => Ok(default),
            Some(v) => number(v, &format!("solver.{key}")),
        }
    };
    match method {
        "dopri5" | "dop853" | "trbdf2" | "kvaerno3" | "kvaerno5" => {
            check_keys(obj, &["method", "rtol", "atol", "max_step"], &context)?;
            let (rtol, atol) = (
                get("rtol", DEFAULT_TOLERANCE)?,
                get("atol", DEFAULT_TOLERANCE)?,
            );
            let max_step = match obj.get("max_step") {
                None => None,
                Some(v) => Some(number(v, "solver.max_step")?),
            };
            Ok(match method {
                "dopri5" => SolverChoice::Dopri5 {
                    rtol,
                    atol,
                    max_step,
                },
                "dop853" => SolverChoice::Dop853 {
                    rtol,
                    atol,
                    max_step,
                },
                "trbdf2" => SolverChoice::Trbdf2 {
                    rtol,
                    atol,
                    max_step,
                },
                "kvaerno3" => SolverChoice::Kvaerno3 {
                    rtol,
                    atol,
                    max_step,
                },
                _ => SolverChoice::Kvaerno5 {
                    rtol,
                    atol,
                    max_step,
                },
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

/// The solver `gradient --method adjoint` runs for the scenario's `solver`.
///
/// The adjoint transposes the Runge-Kutta steps of the forward pass, which
/// the `ode_solvers` adapter hides, so the `ode_solvers.*` methods run as
/// their built-in equivalents: `ode_solvers.rk4` as `rk4` with
/// `dt = macro_step` (the same classical method on the same steps) and
/// `ode_solvers.dopri5` and `ode_solvers.dop853` as `dopri5` and `dop853`
/// with the same `rtol` and `atol` and `max_step = macro_step` (the same
/// Dormand-Prince pairs, their steps no longer than the adapter's). The
/// built-in methods are returned unchanged.
pub fn adjoint_solver(solver: &SolverChoice) -> SolverChoice {
    match *solver {
        SolverChoice::OdeSolvers {
            integrator: OdeSolversMethod::Rk4,
            macro_step,
            ..
        } => SolverChoice::Rk4 { dt: macro_step },
        SolverChoice::OdeSolvers {
            integrator: OdeSolversMethod::Dopri5,
            rtol,
            atol,
            macro_step,
        } => SolverChoice::Dopri5 {
            rtol,
            atol,
            max_step: Some(macro_step),
        },
        SolverChoice::OdeSolvers {
            integrator: OdeSolversMethod::Dop853,
            rtol,
            atol,
            macro_step,
        } => SolverChoice::Dop853 {
            rtol,
            atol,
            max_step: Some(macro_step),
        },
        ref built_in => built_in.clone(),
    }
}
