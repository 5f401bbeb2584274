//! JSON values between Python and the core: policy options in, option schemas out.

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyDict, PyFloat, PyInt, PyList, PyString};
use serde_json::{Map, Number, Value};

fn from_py(v: &Bound<'_, PyAny>, key: &str) -> PyResult<Value> {
    if v.is_none() {
        Ok(Value::Null)
    } else if v.is_instance_of::<PyBool>() {
        Ok(Value::Bool(v.extract()?))
    } else if v.is_instance_of::<PyInt>() {
        match v.extract::<i64>() {
            Ok(i) => Ok(Value::from(i)),
            Err(_) => Ok(Value::from(v.extract::<u64>().map_err(|_| PyValueError::new_err(format!("option {key}: {v} is out of range")))?)),
        }
    } else if v.is_instance_of::<PyFloat>() {
        let f: f64 = v.extract()?;
        Number::from_f64(f).map(Value::Number).ok_or_else(|| PyValueError::new_err(format!("option {key}: {f} is not a finite number")))
    } else if v.is_instance_of::<PyString>() {
        Ok(Value::String(v.extract()?))
    } else {
        Err(PyValueError::new_err(format!("option {key}: expected a bool, number or string, got {}", v.get_type().name()?)))
    }
}

/// `{"leaf_order": "paper", ...}` to a JSON object.
pub fn dict_to_options(d: &Bound<'_, PyDict>) -> PyResult<Map<String, Value>> {
    let mut out = Map::new();
    for (k, v) in d.iter() {
        let key: String = k.extract().map_err(|_| PyValueError::new_err("option names must be strings"))?;
        let value = from_py(&v, &key)?;
        out.insert(key, value);
    }
    Ok(out)
}

pub fn to_py<'py>(py: Python<'py>, v: &Value) -> PyResult<Bound<'py, PyAny>> {
    Ok(match v {
        Value::Null => py.None().into_bound(py),
        Value::Bool(b) => PyBool::new(py, *b).to_owned().into_any(),
        Value::Number(n) => match (n.as_i64(), n.as_u64()) {
            (Some(i), _) => i.into_pyobject(py)?.into_any(),
            (None, Some(u)) => u.into_pyobject(py)?.into_any(),
            _ => n.as_f64().unwrap_or(f64::NAN).into_pyobject(py)?.into_any(),
        },
        Value::String(s) => PyString::new(py, s).into_any(),
        Value::Array(a) => {
            let l = PyList::empty(py);
            for x in a {
                l.append(to_py(py, x)?)?;
            }
            l.into_any()
        }
        Value::Object(o) => {
            let d = PyDict::new(py);
            for (k, x) in o {
                d.set_item(k, to_py(py, x)?)?;
            }
            d.into_any()
        }
    })
}
