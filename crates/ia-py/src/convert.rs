//! Python values in and out: an option becomes the JSON value of the
//! scenario key it stands for, read by that key's reader in `ia_scenario`
//! (the same checks, the same messages), vectors become `Vec<f64>` in the
//! model's order, and JSON records become Python dictionaries and lists.

use crate::errors::{invalid, library};
use ia_core::HybridError;
use numpy::{PyReadonlyArray1, PyUntypedArrayMethods};
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyDict, PyFloat, PyInt, PyList, PyString, PyTuple};
use serde_json::{Map, Number, Value};

/// How a Python value reads in a message: its type, and the value when short.
pub fn describe(value: &Bound<'_, PyAny>) -> String {
    let type_name = value
        .get_type()
        .name()
        .map(|n| n.to_string())
        .unwrap_or_else(|_| "object".into());
    match value.repr() {
        Ok(repr) if repr.to_string().len() <= 40 => format!("{type_name} {repr}"),
        _ => type_name,
    }
}

/// A finite float as a JSON number; a NaN or infinity is the command line's
/// `invalid_option` error for `path` (JSON has no such numbers, so there the
/// parser refuses them).
fn finite(x: f64, path: &str) -> PyResult<Value> {
    match Number::from_f64(x) {
        Some(n) if x.is_finite() => Ok(Value::Number(n)),
        _ => Err(library(HybridError::invalid_num(
            path,
            x,
            "every number must be finite",
        ))),
    }
}

/// `value` as JSON, for the scenario key `path` (named in messages):
/// `None`, booleans, integers, floats (finite), strings, sequences, NumPy
/// arrays and scalars, and dictionaries with string keys.
pub fn to_json(value: &Bound<'_, PyAny>, path: &str) -> PyResult<Value> {
    if value.is_none() {
        return Ok(Value::Null);
    }
    if value.is_instance_of::<PyBool>() {
        return Ok(Value::Bool(value.extract()?));
    }
    if value.is_instance_of::<PyInt>() {
        return match value.extract::<i64>() {
            Ok(i) => Ok(Value::from(i)),
            Err(_) => match value.extract::<u64>() {
                Ok(u) => Ok(Value::from(u)),
                Err(_) => finite(value.extract::<f64>()?, path),
            },
        };
    }
    if value.is_instance_of::<PyFloat>() {
        return finite(value.extract()?, path);
    }
    if let Ok(s) = value.cast::<PyString>() {
        return Ok(Value::String(s.extract::<String>()?));
    }
    if let Ok(dict) = value.cast::<PyDict>() {
        let mut obj = Map::new();
        for (k, v) in dict.iter() {
            let Ok(key) = k.cast::<PyString>() else {
                return Err(invalid(format!(
                    "'{path}' must have string keys (names), got the key {}",
                    describe(&k)
                )));
            };
            let key: String = key.extract()?;
            let inner = if path.is_empty() {
                key.clone()
            } else {
                format!("{path}.{key}")
            };
            obj.insert(key, to_json(&v, &inner)?);
        }
        return Ok(Value::Object(obj));
    }
    if value.is_instance_of::<PyList>() || value.is_instance_of::<PyTuple>() {
        return value
            .try_iter()?
            .enumerate()
            .map(|(k, item)| to_json(&item?, &format!("{path}[{k}]")))
            .collect::<PyResult<Vec<_>>>()
            .map(Value::Array);
    }
    // NumPy (and JAX) arrays and scalars: through their Python values.
    if value.hasattr("tolist")? {
        let plain = value.call_method0("tolist")?;
        if !plain.hasattr("tolist")? {
            return to_json(&plain, path);
        }
    }
    Err(invalid(format!(
        "'{path}' must be a number, string, list or dict, got {}",
        describe(value)
    )))
}

/// A vector of floats from a sequence or array (`what` names it in
/// messages): one-dimensional, of any length (the run checks the length,
/// and that every entry is finite, in its own words).
pub fn floats(value: &Bound<'_, PyAny>, what: &str) -> PyResult<Vec<f64>> {
    let py = value.py();
    let numpy = py.import("numpy")?;
    let array = numpy
        .getattr("asarray")?
        .call1((value,))
        .map_err(|_| not_numbers(value, what))?;
    let kind: String = array.getattr("dtype")?.getattr("kind")?.extract()?;
    if !matches!(kind.as_str(), "f" | "i" | "u" | "b") {
        return Err(not_numbers(value, what));
    }
    let array = numpy
        .getattr("ascontiguousarray")?
        .call1((array, numpy.getattr("float64")?))?;
    let ndim: usize = array.getattr("ndim")?.extract()?;
    if ndim != 1 {
        return Err(invalid(format!(
            "'{what}' must be one-dimensional (one entry per name), got an array of shape {}",
            array.getattr("shape")?.repr()?
        )));
    }
    let array: PyReadonlyArray1<'_, f64> = array.extract()?;
    debug_assert_eq!(array.ndim(), 1);
    Ok(array
        .as_slice()
        .map_err(|e| invalid(format!("'{what}': {e}")))?
        .to_vec())
}

fn not_numbers(value: &Bound<'_, PyAny>, what: &str) -> PyErr {
    invalid(format!(
        "'{what}' must be a sequence or array of numbers, or a dict of numbers by name, got {}",
        describe(value)
    ))
}

/// The values of `names` (a model's states or parameters), from `value`:
/// `None` gives `defaults`; a dict sets entries by name over the defaults (an
/// unknown name is the library's `unknown_name` error, `kind` naming what
/// the names are); a sequence or array gives every entry in order.
pub fn by_name(
    value: Option<&Bound<'_, PyAny>>,
    what: &str,
    kind: &str,
    names: &[String],
    defaults: &[f64],
) -> PyResult<Vec<f64>> {
    let Some(value) = value.filter(|v| !v.is_none()) else {
        return Ok(defaults.to_vec());
    };
    let Ok(dict) = value.cast::<PyDict>() else {
        return floats(value, what);
    };
    let mut out = defaults.to_vec();
    for (k, v) in dict.iter() {
        let name: String = k.extract().map_err(|_| {
            invalid(format!(
                "'{what}' must have names as keys, got the key {}",
                describe(&k)
            ))
        })?;
        let i = ia_core::name_index(kind, names, &name).map_err(library)?;
        out[i] = v.extract::<f64>().map_err(|_| {
            invalid(format!(
                "'{what}.{name}' must be a number, got {}",
                describe(&v)
            ))
        })?;
    }
    Ok(out)
}

/// `value` (JSON) as a Python object: dicts, lists, floats, ints, strings.
pub fn from_json<'py>(py: Python<'py>, value: &Value) -> PyResult<Bound<'py, PyAny>> {
    Ok(match value {
        Value::Null => py.None().into_bound(py),
        Value::Bool(b) => PyBool::new(py, *b).to_owned().into_any(),
        Value::Number(n) => match n.as_i64() {
            Some(i) if !n.is_f64() => i.into_pyobject(py)?.into_any(),
            _ => n.as_f64().unwrap_or(f64::NAN).into_pyobject(py)?.into_any(),
        },
        Value::String(s) => PyString::new(py, s).into_any(),
        Value::Array(items) => {
            let list = PyList::empty(py);
            for item in items {
                list.append(from_json(py, item)?)?;
            }
            list.into_any()
        }
        Value::Object(obj) => {
            let dict = PyDict::new(py);
            for (k, v) in obj {
                dict.set_item(k, from_json(py, v)?)?;
            }
            dict.into_any()
        }
    })
}
