//! buffer: keys and values from Python objects.
//!
//! Accepted: `bytes` (borrowed, no copy), `bytearray`, `memoryview` and any other object with the
//! buffer protocol (copied once: the stable ABI before Python 3.11 has no buffer API, so they go
//! through `memoryview(obj).tobytes()`). Refused: `str`, with a `TypeError` that names
//! `.encode()` (artdb stores bytes; guessing an encoding would make keys sort by accident), and
//! everything else (`int`, `None`, ...) with a `TypeError` naming the type.

use pyo3::exceptions::PyTypeError;
use pyo3::prelude::*;
use pyo3::types::{PyByteArray, PyBytes, PyMemoryView, PyString};
use std::borrow::Cow;
use std::path::PathBuf;

/// A file path from `str`, `bytes` or any `os.PathLike`, as Python's `open()` takes one:
/// through `os.fsdecode`, whose surrogate escapes the conversion to `PathBuf` undoes, so a
/// non-UTF-8 name reaches the file system byte for byte. (PyO3's own `PathBuf` conversion
/// takes `str` and `PathLike`s of `str` only.)
pub(crate) fn path_of(object: &Bound<'_, PyAny>) -> PyResult<PathBuf> {
    let decoded = object
        .py()
        .import("os")?
        .call_method1("fsdecode", (object,))?;
    decoded.extract()
}

/// The bytes of `object` (see the module docs); `what` names the argument in errors ("key").
pub(crate) fn bytes_of<'a>(object: &'a Bound<'_, PyAny>, what: &str) -> PyResult<Cow<'a, [u8]>> {
    if let Ok(bytes) = object.cast::<PyBytes>() {
        return Ok(Cow::Borrowed(bytes.as_bytes()));
    }
    if let Ok(array) = object.cast::<PyByteArray>() {
        return Ok(Cow::Owned(array.to_vec()));
    }
    if object.is_instance_of::<PyString>() {
        return Err(PyTypeError::new_err(format!(
            "a {what} must be bytes, bytearray or memoryview, not str; encode it first, \
             e.g. {what}.encode() (or pack typed keys with artdb.keys.pack)"
        )));
    }
    let view = match object.cast::<PyMemoryView>() {
        Ok(view) => view.clone().into_any(),
        Err(_) => match PyMemoryView::from(object) {
            Ok(view) => view.into_any(),
            Err(_) => {
                return Err(PyTypeError::new_err(format!(
                    "a {what} must be bytes, bytearray or memoryview (a bytes-like object), \
                     not {}",
                    type_name(object)
                )))
            }
        },
    };
    let copied = view.call_method0("tobytes")?;
    let copied = copied.cast::<PyBytes>()?;
    Ok(Cow::Owned(copied.as_bytes().to_vec()))
}

/// The name of `object`'s type, for messages.
pub(crate) fn type_name(object: &Bound<'_, PyAny>) -> String {
    object
        .get_type()
        .name()
        .map(|name| name.to_string())
        .unwrap_or_else(|_| "an unknown type".to_string())
}
