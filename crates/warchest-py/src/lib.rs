//! Python bindings of warchest (`warchest._warchest`): a thin layer over
//! the library. Format rules live in the library; this crate adapts
//! Python file objects, owns readers across calls and releases the
//! interpreter lock around every read and parse.

mod derive;
mod io;
mod iter;
// The crate's one `unsafe` module (the workspace lints deny it elsewhere).
#[allow(unsafe_code)]
mod pybytes;
#[cfg(feature = "remote")]
mod remote;
mod scan;
mod tools;
mod wacz;
mod writer;

use pyo3::prelude::*;

pyo3::create_exception!(
    _warchest,
    ArchiveError,
    pyo3::exceptions::PyValueError,
    "A web archive could not be read: damaged, truncated or not an archive."
);

/// Converts a library error to a Python exception: `OSError` for I/O,
/// `ArchiveError` (a `ValueError`) for everything the bytes did wrong.
/// The binding's one place that picks the class; [`io_to_py`] comes here.
pub(crate) fn to_py(e: warchest::Error) -> PyErr {
    if e.is_io_error() {
        pyo3::exceptions::PyOSError::new_err(e.to_string())
    } else {
        ArchiveError::new_err(e.to_string())
    }
}

/// Converts an `io::Error` to a Python exception. The library's readers
/// (a record's block, a payload decoder) report through `io::Read` with
/// their [`warchest::Error`] as the payload: that one goes through
/// [`to_py`], so a corrupt member or a truncated record is an
/// `ArchiveError` with the library's message (file, offset, record as
/// known), and an I/O failure an `OSError`. Any other `io::Error` is an
/// `OSError`.
pub(crate) fn io_to_py(e: std::io::Error) -> PyErr {
    if warchest::Error::carried_by(&e).is_some() {
        // From<io::Error> hands the payload back whole.
        to_py(warchest::Error::from(e))
    } else {
        pyo3::exceptions::PyOSError::new_err(e.to_string())
    }
}

/// `e`, met opening the local file `path`, as Python's own `open()` raises
/// it: the `OSError` subclass its errno selects (`IsADirectoryError`,
/// `FileNotFoundError`...), with the file's name, which `e` lacks.
pub(crate) fn path_io_to_py(e: std::io::Error, path: &std::path::Path) -> PyErr {
    let name = path.to_string_lossy().into_owned();
    match e.raw_os_error() {
        Some(n) => {
            let text = e.to_string();
            let strerror = text
                .strip_suffix(&format!(" (os error {n})"))
                .unwrap_or(&text)
                .to_string();
            pyo3::exceptions::PyOSError::new_err((n, strerror, name))
        }
        None => pyo3::exceptions::PyOSError::new_err(format!("{name}: {e}")),
    }
}

#[pymodule]
fn _warchest(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    m.add("ArchiveError", m.py().get_type::<ArchiveError>())?;
    m.add(
        "RecoveryWarning",
        m.py().get_type::<scan::RecoveryWarning>(),
    )?;
    m.add_class::<iter::ArchiveIterator>()?;
    m.add_class::<iter::Record>()?;
    m.add_class::<iter::StatusAndHeaders>()?;
    m.add_class::<iter::RecordStream>()?;
    m.add_class::<scan::ScanStream>()?;
    m.add_function(wrap_pyfunction!(scan::scan_stream, m)?)?;
    m.add_function(wrap_pyfunction!(scan::columns, m)?)?;
    m.add_function(wrap_pyfunction!(scan::split_ranges, m)?)?;
    m.add_function(wrap_pyfunction!(derive::derive_text_stream, m)?)?;
    m.add_function(wrap_pyfunction!(derive::text_columns, m)?)?;
    m.add_class::<writer::WARCWriter>()?;
    #[cfg(feature = "remote")]
    {
        m.add_class::<remote::FetchStream>()?;
        m.add_function(wrap_pyfunction!(remote::list_urls, m)?)?;
        m.add_function(wrap_pyfunction!(remote::fetch_records, m)?)?;
        m.add_function(wrap_pyfunction!(remote::fetch_scan_stream, m)?)?;
    }
    m.add("REMOTE", cfg!(feature = "remote"))?;
    tools::register(m)?;
    Ok(())
}
