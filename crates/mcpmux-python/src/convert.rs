//! Values across the border: JSON (`serde_json::Value`) to Python objects and back, bounded in
//! depth so a deep or self-referencing Python structure is an exception, not a stack overflow;
//! and the library's records (tools, server status, scopes) as Python dicts. Knows nothing of
//! hubs or calls.

use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyDict, PyFloat, PyInt, PyList, PyString, PyTuple};
use serde_json::{Map, Number, Value};

/// Deepest nesting accepted from Python (serde_json's own parse limit is 128).
const MAX_DEPTH: usize = 128;

/// A Python value (dict, list, tuple, str, int, float, bool, None) as JSON.
pub(crate) fn to_json(obj: &Bound<'_, PyAny>) -> PyResult<Value> {
    to_json_at(obj, 0)
}

fn to_json_at(obj: &Bound<'_, PyAny>, depth: usize) -> PyResult<Value> {
    if depth > MAX_DEPTH {
        return Err(PyValueError::new_err(format!(
            "value nested deeper than {MAX_DEPTH} levels (or containing itself) cannot be sent as JSON"
        )));
    }
    if obj.is_none() {
        return Ok(Value::Null);
    }
    if let Ok(b) = obj.cast::<PyBool>() {
        return Ok(Value::Bool(b.is_true()));
    }
    if obj.is_instance_of::<PyInt>() {
        if let Ok(i) = obj.extract::<i64>() {
            return Ok(Value::Number(i.into()));
        }
        if let Ok(u) = obj.extract::<u64>() {
            return Ok(Value::Number(u.into()));
        }
        return Err(PyValueError::new_err(
            "an integer beyond 64 bits cannot be sent as JSON",
        ));
    }
    if let Ok(f) = obj.cast::<PyFloat>() {
        return Number::from_f64(f.value())
            .map(Value::Number)
            .ok_or_else(|| PyValueError::new_err("NaN and infinity cannot be sent as JSON"));
    }
    if let Ok(s) = obj.cast::<PyString>() {
        return Ok(Value::String(s.to_str()?.to_owned()));
    }
    if let Ok(dict) = obj.cast::<PyDict>() {
        let mut map = Map::with_capacity(dict.len());
        for (key, value) in dict.iter() {
            let key = key.cast::<PyString>().map_err(|_| {
                PyTypeError::new_err(format!(
                    "JSON object keys must be strings, got {}",
                    type_name(&key)
                ))
            })?;
            map.insert(key.to_str()?.to_owned(), to_json_at(&value, depth + 1)?);
        }
        return Ok(Value::Object(map));
    }
    if let Ok(list) = obj.cast::<PyList>() {
        return list.iter().map(|v| to_json_at(&v, depth + 1)).collect();
    }
    if let Ok(tuple) = obj.cast::<PyTuple>() {
        return tuple.iter().map(|v| to_json_at(&v, depth + 1)).collect();
    }
    Err(PyTypeError::new_err(format!(
        "a {} cannot be sent as JSON (use dict, list, str, int, float, bool or None)",
        type_name(obj)
    )))
}

fn type_name(obj: &Bound<'_, PyAny>) -> String {
    obj.get_type()
        .name()
        .map(|n| n.to_string())
        .unwrap_or_else(|_| "value".to_owned())
}

/// JSON as the Python value `json.loads` would give.
pub(crate) fn to_py<'py>(py: Python<'py>, value: &Value) -> PyResult<Bound<'py, PyAny>> {
    Ok(match value {
        Value::Null => py.None().into_bound(py),
        Value::Bool(b) => PyBool::new(py, *b).to_owned().into_any(),
        Value::Number(n) => {
            if let Some(i) = n.as_i64() {
                i.into_pyobject(py)?.into_any()
            } else if let Some(u) = n.as_u64() {
                u.into_pyobject(py)?.into_any()
            } else {
                n.as_f64().unwrap_or(f64::NAN).into_pyobject(py)?.into_any()
            }
        }
        Value::String(s) => PyString::new(py, s).into_any(),
        Value::Array(items) => {
            let list = PyList::empty(py);
            for item in items {
                list.append(to_py(py, item)?)?;
            }
            list.into_any()
        }
        Value::Object(map) => {
            let dict = PyDict::new(py);
            for (key, item) in map {
                dict.set_item(key, to_py(py, item)?)?;
            }
            dict.into_any()
        }
    })
}

/// Anything serialisable (a tool record, a server's status) as a Python dict.
pub(crate) fn serialized<'py, T: serde::Serialize>(
    py: Python<'py>,
    value: &T,
) -> PyResult<Bound<'py, PyAny>> {
    let json = serde_json::to_value(value)
        .map_err(|e| PyValueError::new_err(format!("could not convert a record: {e}")))?;
    to_py(py, &json)
}

/// A scope given as `STAGE/AGENT` text (or none).
pub(crate) fn scope(text: Option<&str>) -> PyResult<Option<mcpmux::Scope>> {
    text.map(|t| {
        t.parse::<mcpmux::Scope>()
            .map_err(|e| PyValueError::new_err(e.to_string()))
    })
    .transpose()
}
