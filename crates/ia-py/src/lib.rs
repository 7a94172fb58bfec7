//! # ia-py: the Python package `impact_adjoint`
//!
//! A thin layer: Python values in (read and checked by the scenario crate
//! the command line also uses, `ia_scenario`, so that messages are the
//! command line's), the scenario's runs (`ia_scenario::recipe`) with the
//! GIL released, NumPy arrays and Python exceptions out. Every number is computed by `ia-events` and
//! `ia-adjoint`. The Python half (result classes, exceptions, the JAX
//! front) is in `python/impact_adjoint/`.
//!
//! Built by maturin as the extension module `impact_adjoint._core` (one
//! abi3 wheel for CPython 3.9 and newer): `cargo xtask test` builds and
//! tests it. The crate stays out of the Cargo workspace, so that
//! `cargo test --workspace` needs no Python.

mod broadcast;
mod convert;
mod errors;
mod ffi;
mod jax;
mod model;
mod results;
mod tapes;
mod times;

use pyo3::prelude::*;

/// The extension module `impact_adjoint._core`.
#[pymodule]
fn _core(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<model::Model>()?;
    m.add_class::<jax::JaxSolver>()?;
    m.add_function(wrap_pyfunction!(model::models, m)?)?;
    m.add_function(wrap_pyfunction!(ffi::ffi_targets, m)?)?;
    m.add_function(wrap_pyfunction!(ffi::ffi_api_version, m)?)?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    Ok(())
}
