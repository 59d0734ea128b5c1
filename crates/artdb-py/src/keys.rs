//! keys: `artdb.keys.pack(*values)` and `artdb.keys.unpack(key)` over artdb-key's self-describing
//! tuple encoding (`artdb_key::encode_tuple`), so that byte order of packed keys is tuple order.
//!
//! Python type -> encoded value: `None` -> Null, `bool` -> Bool, `int` -> I64 (one width for every
//! int, so ints of any size order correctly against each other; outside the signed 64-bit range
//! is an `OverflowError`), `float` -> F64 (`total_cmp` order: -0.0 before 0.0, NaN at the ends),
//! `str` -> Str (UTF-8, which orders as code points), `bytes`/`bytearray`/`memoryview` -> Bytes.
//! Across types the order is the encoding's tag order: None < bool < int < float < bytes < str
//! (Python cannot compare most of these, so `sorted` never meets it; note that a position mixing
//! `int` and `float` sorts every int before every float). `unpack` returns a tuple; integers of
//! every width and both float widths come back as `int` and `float`.

use crate::buffer::{bytes_of, type_name};
use crate::errors;
use artdb_key::{decode_tuple, encode_tuple_into, Value};
use pyo3::exceptions::{PyOverflowError, PyTypeError};
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyBytes, PyFloat, PyInt, PyString, PyTuple};

/// The key value of one Python object.
fn value_of(object: &Bound<'_, PyAny>) -> PyResult<Value> {
    if object.is_none() {
        return Ok(Value::Null);
    }
    if let Ok(flag) = object.cast::<PyBool>() {
        return Ok(Value::Bool(flag.is_true()));
    }
    if object.is_instance_of::<PyInt>() {
        return object.extract::<i64>().map(Value::I64).map_err(|_| {
            PyOverflowError::new_err(
                "artdb.keys packs int as a signed 64-bit integer; this one is outside \
                 -2**63 .. 2**63-1 (pack it as bytes or str instead)",
            )
        });
    }
    if let Ok(float) = object.cast::<PyFloat>() {
        return Ok(Value::F64(float.value()));
    }
    if object.is_instance_of::<PyString>() {
        return Ok(Value::Str(object.extract::<String>()?));
    }
    match bytes_of(object, "key part") {
        Ok(bytes) => Ok(Value::Bytes(bytes.into_owned())),
        Err(_) => Err(PyTypeError::new_err(format!(
            "artdb.keys.pack takes None, bool, int, float, str and bytes-like values, not {}",
            type_name(object)
        ))),
    }
}

/// Packs `values` into one key whose byte order is the order of the tuples.
#[pyfunction]
#[pyo3(signature = (*values))]
pub fn pack<'py>(py: Python<'py>, values: &Bound<'py, PyTuple>) -> PyResult<Bound<'py, PyBytes>> {
    let mut parsed = Vec::with_capacity(values.len());
    for value in values.iter() {
        parsed.push(value_of(&value)?);
    }
    let mut out = Vec::new();
    encode_tuple_into(&parsed, &mut out);
    Ok(PyBytes::new(py, &out))
}

/// The tuple of values packed in `key`; `KeyDecodeError` if it is not a packed key.
#[pyfunction]
pub fn unpack<'py>(py: Python<'py>, key: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyTuple>> {
    let bytes = bytes_of(key, "key")?;
    let values = decode_tuple(&bytes).map_err(|error| errors::from_key(py, error))?;
    let mut objects: Vec<Py<PyAny>> = Vec::with_capacity(values.len());
    for value in values {
        let object = match value {
            Value::Null => py.None(),
            Value::Bool(flag) => PyBool::new(py, flag).to_owned().into_any().unbind(),
            Value::U8(n) => n.into_pyobject(py)?.into_any().unbind(),
            Value::U16(n) => n.into_pyobject(py)?.into_any().unbind(),
            Value::U32(n) => n.into_pyobject(py)?.into_any().unbind(),
            Value::U64(n) => n.into_pyobject(py)?.into_any().unbind(),
            Value::U128(n) => n.into_pyobject(py)?.into_any().unbind(),
            Value::I8(n) => n.into_pyobject(py)?.into_any().unbind(),
            Value::I16(n) => n.into_pyobject(py)?.into_any().unbind(),
            Value::I32(n) => n.into_pyobject(py)?.into_any().unbind(),
            Value::I64(n) => n.into_pyobject(py)?.into_any().unbind(),
            Value::I128(n) => n.into_pyobject(py)?.into_any().unbind(),
            Value::F32(n) => PyFloat::new(py, f64::from(n)).into_any().unbind(),
            Value::F64(n) => PyFloat::new(py, n).into_any().unbind(),
            Value::Bytes(bytes) => PyBytes::new(py, &bytes).into_any().unbind(),
            Value::Str(text) => PyString::new(py, &text).into_any().unbind(),
        };
        objects.push(object);
    }
    PyTuple::new(py, objects)
}
