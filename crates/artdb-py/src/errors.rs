//! errors: the engine's, bitable's and key encoding's errors as Python exceptions.
//!
//! The exception classes are defined in Python (`python/artdb/errors.py`), because `IoError`
//! subclasses both `artdb.Error` and `OSError` (and `NotSupportedError` also
//! `NotImplementedError`), which a class made from Rust with one base cannot. They are looked up
//! once per process and cached. The class is chosen from the error's variant, never from its
//! text; the message is a sentence a user can act on, in Python terms (`messages.rs`).
//! Invariant: every error crossing into Python is an `artdb.Error` subclass (or a builtin
//! `TypeError`/`KeyError`/`ValueError` for misuse of the Python protocols), never a panic.

use crate::messages;
use pyo3::exceptions::PyRuntimeError;
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyDict, PyType};

/// The exception classes of `artdb.errors`, by name, cached on first use.
static CLASSES: PyOnceLock<Py<PyDict>> = PyOnceLock::new();

/// The class `artdb.errors.<name>`.
pub(crate) fn class<'py>(py: Python<'py>, name: &str) -> PyResult<Bound<'py, PyType>> {
    let classes = CLASSES.get_or_try_init(py, || -> PyResult<Py<PyDict>> {
        let module = py.import("artdb.errors")?;
        let dict = module.dict();
        Ok(dict.unbind())
    })?;
    let found = classes.bind(py).get_item(name)?;
    match found {
        Some(class) => Ok(class.cast_into::<PyType>()?),
        None => Err(PyRuntimeError::new_err(format!(
            "artdb.errors has no class {name}; the package is incomplete (reinstall it)"
        ))),
    }
}

/// An exception of class `artdb.errors.<name>` with `message`.
pub(crate) fn new_error(py: Python<'_>, name: &str, message: String) -> PyErr {
    match class(py, name) {
        Ok(class) => PyErr::from_type(class, message),
        Err(error) => error,
    }
}

/// Raised when a closed database (or anything of it) is used.
pub(crate) fn closed(py: Python<'_>) -> PyErr {
    new_error(
        py,
        "ClosedError",
        "the database is closed; open it again with artdb.open(path)".to_string(),
    )
}

/// Raised when a finished transaction is used.
pub(crate) fn finished(py: Python<'_>, what: &str) -> PyErr {
    new_error(
        py,
        "TransactionClosedError",
        format!("this {what} has already ended (committed, aborted or left its `with` block); start a new one"),
    )
}

/// An `IoError` (also an `OSError`) carrying the operating system's errno when there is one.
fn io_error(py: Python<'_>, errno: Option<i32>, message: String) -> PyErr {
    match class(py, "IoError") {
        Ok(class) => match errno {
            Some(errno) => PyErr::from_type(class, (errno, message)),
            None => PyErr::from_type(class, message),
        },
        Err(error) => error,
    }
}

/// The Python exception for an engine error.
pub(crate) fn from_engine(py: Python<'_>, error: artdb::Error) -> PyErr {
    use artdb::Error as E;
    let message = messages::engine(py, &error);
    let name = match &error {
        E::Io { source, .. } => return io_error(py, source.raw_os_error(), message),
        // An open that failed (not found, a directory, permission): an OSError with its errno.
        E::Open { source, .. } => return io_error(py, source.raw_os_error(), message),
        E::Corruption { .. } => "CorruptionError",
        // Not damage: a wrong path (or an empty file), so not a `CorruptionError`, whose
        // remedy is a backup.
        E::NotADatabase { .. } => "NotADatabaseError",
        E::ReadOnly => "ReadOnlyError",
        E::Locked { .. } => "LockedError",
        E::AlreadyExists { .. } => "AlreadyExistsError",
        E::KeyTooLarge { .. } => "KeyTooLargeError",
        E::ValueTooLarge { .. } => "ValueTooLargeError",
        E::TableNotFound { .. } => "TableNotFoundError",
        E::TableExists { .. } => "TableExistsError",
        E::InvalidTableName { .. } => "InvalidTableNameError",
        E::Unsorted { .. } => "UnsortedError",
        E::Duplicate { .. } => "DuplicateKeyError",
        E::TableNotEmpty { .. } => "TableNotEmptyError",
        E::Poisoned { .. } => "PoisonedError",
        // A struct variant once the engine's MVCC transactions land: match both.
        #[allow(clippy::unneeded_struct_pattern)]
        E::Conflict { .. } => "ConflictError",
        E::FileTooLarge { .. } => "FileTooLargeError",
        _ => "Error",
    };
    new_error(py, name, message)
}

/// The Python exception for a bitable error.
pub(crate) fn from_bitable(py: Python<'_>, error: artdb_bitable::Error) -> PyErr {
    from_bitable_with(py, error, |message| message)
}

/// The Python exception for a bitable error, its message passed through `frame` (which adds
/// what the caller knows, such as the path).
pub(crate) fn from_bitable_with(
    py: Python<'_>,
    error: artdb_bitable::Error,
    frame: impl FnOnce(String) -> String,
) -> PyErr {
    use artdb_bitable::Error as E;
    let message = frame(messages::bitable(&error));
    let name = match &error {
        E::Io { source, .. } => return io_error(py, source.raw_os_error(), message),
        E::KeyOutOfOrder { .. } => "UnsortedError",
        E::DuplicateKey { .. } | E::MergeDuplicateKey { .. } => "DuplicateKeyError",
        E::KeyTooLarge { .. } => "KeyTooLargeError",
        // A file of another format (a database, text): the same refusal as artdb.open's.
        E::NotABitable => "NotADatabaseError",
        E::Corruption { .. } | E::UnsupportedVersion { .. } | E::Truncated { .. } => {
            "CorruptionError"
        }
        E::InvalidOption { .. } | E::BuilderFailed | E::TooManyLevels { .. } => "Error",
    };
    new_error(py, name, message)
}

/// The Python exception for bytes that are not a packed key.
pub(crate) fn from_key(py: Python<'_>, error: artdb_key::Error) -> PyErr {
    new_error(py, "KeyDecodeError", messages::key_decode(&error))
}

/// Extension: `.map_err(py_err(py))` for engine results.
pub(crate) trait EngineResult<T> {
    /// Converts the engine's error into the Python exception.
    fn py(self, py: Python<'_>) -> PyResult<T>;
}

impl<T> EngineResult<T> for Result<T, artdb::Error> {
    fn py(self, py: Python<'_>) -> PyResult<T> {
        self.map_err(|error| from_engine(py, error))
    }
}

impl<T> EngineResult<T> for Result<T, artdb_bitable::Error> {
    fn py(self, py: Python<'_>) -> PyResult<T> {
        self.map_err(|error| from_bitable(py, error))
    }
}
