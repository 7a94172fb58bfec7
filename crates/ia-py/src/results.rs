//! The library's records as the package's result objects (classes of
//! `impact_adjoint/_results.py`) holding NumPy arrays.

use crate::convert::from_json;
use ia_adjoint::nalgebra::DMatrix;
use ia_adjoint::{Gradient, Sensitivities};
use ia_core::{HybridSystem, Trajectory};
use numpy::{PyArray1, PyArrayMethods};
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::PyDict;

/// A `rows x cols` float array from its entries in row-major order.
pub fn matrix<'py>(
    py: Python<'py>,
    rows: usize,
    cols: usize,
    flat: Vec<f64>,
) -> PyResult<Bound<'py, PyAny>> {
    Ok(PyArray1::from_vec(py, flat)
        .reshape([rows, cols])?
        .into_any())
}

/// A list of equal-length rows as a `rows.len() x cols` array.
fn stacked<'py>(py: Python<'py>, rows: &[&[f64]], cols: usize) -> PyResult<Bound<'py, PyAny>> {
    matrix(py, rows.len(), cols, rows.concat())
}

/// An nalgebra matrix as a NumPy array of the same shape.
fn dense<'py>(py: Python<'py>, m: &DMatrix<f64>) -> PyResult<Bound<'py, PyAny>> {
    let flat = (0..m.nrows())
        .flat_map(|i| (0..m.ncols()).map(move |j| m[(i, j)]))
        .collect();
    matrix(py, m.nrows(), m.ncols(), flat)
}

/// The fields of a run, as keyword arguments of the result classes.
fn run_fields<'py>(
    py: Python<'py>,
    model: &str,
    system: &HybridSystem,
    t_end: f64,
    trajectory: &Trajectory,
) -> PyResult<Bound<'py, PyDict>> {
    let n = system.state_dim();
    let mode_name = |m: usize| system.modes()[m].name.as_str();
    let events = &trajectory.events;
    let observations = &trajectory.observations;
    let fields = PyDict::new(py);
    fields.set_item("model", model)?;
    fields.set_item("state_names", system.state_names())?;
    fields.set_item("t_end", t_end)?;
    fields.set_item("final_time", trajectory.final_time)?;
    fields.set_item("final_mode", mode_name(trajectory.final_mode))?;
    fields.set_item(
        "final_state",
        PyArray1::from_slice(py, &trajectory.final_state),
    )?;
    fields.set_item(
        "event_times",
        PyArray1::from_vec(py, events.iter().map(|e| e.time).collect()),
    )?;
    fields.set_item(
        "event_transitions",
        events
            .iter()
            .map(|e| system.transitions()[e.transition].name.as_str())
            .collect::<Vec<_>>(),
    )?;
    fields.set_item(
        "event_modes",
        events
            .iter()
            .map(|e| (mode_name(e.from_mode), mode_name(e.to_mode)))
            .collect::<Vec<_>>(),
    )?;
    let before: Vec<&[f64]> = (0..events.len())
        .map(|k| trajectory.state_before(k))
        .collect();
    let after: Vec<&[f64]> = (0..events.len())
        .map(|k| trajectory.state_after(k))
        .collect();
    fields.set_item("event_states_before", stacked(py, &before, n)?)?;
    fields.set_item("event_states_after", stacked(py, &after, n)?)?;
    fields.set_item(
        "observation_times",
        PyArray1::from_vec(py, observations.iter().map(|o| o.time).collect()),
    )?;
    let observed: Vec<&[f64]> = observations.iter().map(|o| &o.state[..]).collect();
    fields.set_item("observations", stacked(py, &observed, n)?)?;
    let stats = serde_json::to_value(trajectory.stats).unwrap_or_default();
    fields.set_item("stats", from_json(py, &stats)?)?;
    Ok(fields)
}

/// A `Simulation` result.
pub fn simulation<'py>(
    py: Python<'py>,
    model: &str,
    system: &HybridSystem,
    t_end: f64,
    trajectory: &Trajectory,
) -> PyResult<Bound<'py, PyAny>> {
    let fields = run_fields(py, model, system, t_end, trajectory)?;
    build(py, "Simulation", fields)
}

/// A `Jacobian` result.
pub fn jacobian<'py>(
    py: Python<'py>,
    model: &str,
    system: &HybridSystem,
    t_end: f64,
    method: &str,
    sens: &Sensitivities,
) -> PyResult<Bound<'py, PyAny>> {
    let fields = run_fields(py, model, system, t_end, &sens.trajectory)?;
    fields.set_item("method", method)?;
    fields.set_item("wrt", &sens.wrt[..])?;
    fields.set_item("final_jacobian", dense(py, &sens.final_jacobian)?)?;
    let (n, m) = sens.final_jacobian.shape();
    let observed: Vec<f64> = sens
        .observation_jacobians
        .iter()
        .flat_map(|jac| (0..n).flat_map(move |i| (0..m).map(move |j| jac[(i, j)])))
        .collect();
    let k = sens.observation_jacobians.len();
    fields.set_item(
        "observation_jacobians",
        PyArray1::from_vec(py, observed).reshape([k, n, m])?,
    )?;
    fields.set_item(
        "event_time_gradients",
        dense(py, &sens.event_time_gradients)?,
    )?;
    build(py, "Jacobian", fields)
}

/// A `Gradient` result.
pub fn gradient<'py>(
    py: Python<'py>,
    model: &str,
    system: &HybridSystem,
    t_end: f64,
    method: &str,
    grad: &Gradient,
) -> PyResult<Bound<'py, PyAny>> {
    let fields = run_fields(py, model, system, t_end, &grad.trajectory)?;
    fields.set_item("method", method)?;
    fields.set_item("value", grad.value)?;
    fields.set_item("wrt", &grad.wrt[..])?;
    fields.set_item("gradient", PyArray1::from_vec(py, grad.concatenated()))?;
    build(py, "Gradient", fields)
}

/// A periodic orbit as `impact_adjoint.PeriodicOrbit`: the multipliers
/// and their derivatives as complex arrays, the derivatives `None` (with
/// the reason) when they are not defined.
pub fn periodic_orbit<'py>(
    py: Python<'py>,
    model: &str,
    orbit: &ia_orbits::PeriodicOrbit,
) -> PyResult<Bound<'py, PyAny>> {
    let complex = |pairs: Vec<(f64, f64)>| -> PyResult<Bound<'py, PyAny>> {
        let numpy = py.import("numpy")?;
        let (re, im): (Vec<f64>, Vec<f64>) = pairs.into_iter().unzip();
        let re = PyArray1::from_vec(py, re);
        let im = PyArray1::from_vec(py, im);
        numpy.getattr("add")?.call1((
            re,
            numpy
                .getattr("multiply")?
                .call1((im, numpy.getattr("complex128")?.call1((0.0, 1.0))?))?,
        ))
    };
    let fields = PyDict::new(py);
    fields.set_item("model", model)?;
    fields.set_item("section", &orbit.section)?;
    fields.set_item("state_names", &orbit.state_names)?;
    fields.set_item("param_names", &orbit.param_names)?;
    fields.set_item("fixed_point", PyArray1::from_slice(py, &orbit.fixed_point))?;
    fields.set_item("period", orbit.period)?;
    fields.set_item("newton_iterations", orbit.newton_iterations)?;
    fields.set_item("residual", orbit.residual)?;
    fields.set_item("monodromy", dense(py, &orbit.monodromy)?)?;
    fields.set_item(
        "multipliers",
        complex(orbit.multipliers.iter().map(|m| (m.re, m.im)).collect())?,
    )?;
    fields.set_item("trivial", orbit.multipliers.iter().position(|m| m.trivial))?;
    fields.set_item(
        "advancing_multiplier",
        orbit.multipliers.iter().position(|m| m.advancing),
    )?;
    fields.set_item("advancing", &orbit.advancing)?;
    fields.set_item("advance", PyArray1::from_slice(py, &orbit.advance))?;
    match &orbit.sensitivities {
        Some(sens) => {
            fields.set_item("d_fixed_point", dense(py, &sens.fixed_point)?)?;
            fields.set_item("d_period", PyArray1::from_slice(py, &sens.period))?;
            let rows = sens.multipliers.len();
            let cols = orbit.param_names.len();
            let flat = sens
                .multipliers
                .iter()
                .flat_map(|row| row.iter().map(|d| (d.re, d.im)))
                .collect();
            let d = complex(flat)?;
            fields.set_item("d_multipliers", d.call_method1("reshape", ((rows, cols),))?)?;
        }
        None => {
            for key in ["d_fixed_point", "d_period", "d_multipliers"] {
                fields.set_item(key, py.None())?;
            }
        }
    }
    fields.set_item(
        "sensitivities_unavailable",
        orbit.sensitivities_unavailable.as_deref(),
    )?;
    build(py, "PeriodicOrbit", fields)
}

/// The result class `name` of `impact_adjoint/_results.py` with `fields`
/// (every field), by its `_build` (looked up once).
fn build<'py>(
    py: Python<'py>,
    name: &str,
    fields: Bound<'py, PyDict>,
) -> PyResult<Bound<'py, PyAny>> {
    static BUILD: PyOnceLock<Py<PyAny>> = PyOnceLock::new();
    BUILD
        .import(py, "impact_adjoint._results", "_build")?
        .call1((name, fields))
}
