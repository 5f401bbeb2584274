//! Python bindings of the core's `policies` functionality (registered into toposched._core).

use pyo3::prelude::*;

/// Add this file's classes and functions to the module.
pub fn register(_m: &Bound<'_, PyModule>) -> PyResult<()> {
    Ok(())
}
