//! Python file objects as Rust readers and writers, and what a Python
//! argument naming an input (a path or a binary file) opens to.

use std::io::{self, Read, Write};
use std::path::PathBuf;

use pyo3::intern;
use pyo3::prelude::*;
use pyo3::types::{PyByteArray, PyBytes};

/// Largest read asked of a Python file at once.
const MAX_READ: usize = 1 << 20;

fn py_io_error(e: PyErr) -> io::Error {
    io::Error::other(e.to_string())
}

/// A binary Python file object (anything with `read(n)`), read from Rust.
/// Each read takes the interpreter lock for the call only, so the parser
/// around it runs with the lock released.
pub(crate) struct PyReader {
    obj: Py<PyAny>,
}

impl PyReader {
    pub(crate) fn new(obj: Py<PyAny>) -> Self {
        PyReader { obj }
    }
}

impl Read for PyReader {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if buf.is_empty() {
            return Ok(0);
        }
        Python::attach(|py| {
            let want = buf.len().min(MAX_READ);
            let got = self
                .obj
                .bind(py)
                .call_method1(intern!(py, "read"), (want,))
                .map_err(py_io_error)?;
            if got.is_none() {
                // A non-blocking stream with nothing yet: no such streams
                // are supported, so this is the end.
                return Ok(0);
            }
            let copy = |b: &[u8], buf: &mut [u8]| {
                // A file that hands back more than asked breaks its
                // contract; refuse rather than lose bytes.
                if b.len() > buf.len() {
                    return Err(io::Error::other("file.read(n) returned more than n bytes"));
                }
                buf[..b.len()].copy_from_slice(b);
                Ok(b.len())
            };
            if let Ok(b) = got.cast::<PyBytes>() {
                copy(b.as_bytes(), buf)
            } else if let Ok(b) = got.cast::<PyByteArray>() {
                copy(&b.to_vec(), buf)
            } else {
                Err(io::Error::new(
                    io::ErrorKind::InvalidInput,
                    "the file must be opened in binary mode (read() returned text)",
                ))
            }
        })
    }
}

/// A binary Python file object written from Rust.
pub(crate) struct PyWriter {
    obj: Py<PyAny>,
}

impl PyWriter {
    pub(crate) fn new(obj: Py<PyAny>) -> Self {
        PyWriter { obj }
    }
}

impl Write for PyWriter {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        Python::attach(|py| {
            let n = self
                .obj
                .bind(py)
                .call_method1(intern!(py, "write"), (PyBytes::new(py, buf),))
                .map_err(py_io_error)?;
            // Raw files may write less than given and say so.
            Ok(n.extract::<usize>().unwrap_or(buf.len()).min(buf.len()))
        })
    }

    fn flush(&mut self) -> io::Result<()> {
        Python::attach(|py| {
            let f = self.obj.bind(py);
            if f.hasattr(intern!(py, "flush")).unwrap_or(false) {
                f.call_method0(intern!(py, "flush")).map_err(py_io_error)?;
            }
            Ok(())
        })
    }
}

/// Whether `name` is a URL (`s3://`, `gs://`, `az://`, `http(s)://`...)
/// rather than a local path.
pub(crate) fn is_url(name: &str) -> bool {
    #[cfg(feature = "remote")]
    {
        warchest_remote::is_remote(name)
    }
    #[cfg(not(feature = "remote"))]
    {
        // Recognised, so that the error says why rather than "no such file".
        name.split_once("://").is_some_and(|(s, _)| {
            !s.is_empty() && s != "file" && s.bytes().all(|c| c.is_ascii_alphanumeric())
        })
    }
}

/// The error for a URL in a build without the `remote` feature.
#[cfg(not(feature = "remote"))]
pub(crate) fn no_remote(url: &str) -> PyErr {
    pyo3::exceptions::PyOSError::new_err(format!(
        "{url}: this build of warchest reads local files only (built without the `remote` feature)"
    ))
}

/// What a Python argument naming an input is.
pub(crate) enum Input {
    /// A path (`str` or `os.PathLike`).
    Path(PathBuf),
    /// A URL of an object in a store or on an HTTP(S) server.
    Url(String),
    /// A binary file object and its position when handed over (the stored
    /// offset of its first byte, as warcio counts offsets).
    File(Py<PyAny>, u64),
}

impl Input {
    pub(crate) fn from_py(obj: &Bound<'_, PyAny>) -> PyResult<Input> {
        if let Ok(s) = obj.extract::<String>()
            && is_url(&s)
        {
            return Ok(Input::Url(s));
        }
        if let Ok(p) = obj.extract::<PathBuf>() {
            return Ok(Input::Path(p));
        }
        let py = obj.py();
        if !obj.hasattr(intern!(py, "read"))? {
            return Err(pyo3::exceptions::PyTypeError::new_err(
                "expected a path or a binary file object with read()",
            ));
        }
        // Offsets count from the start of the file when it can tell where
        // it is (warcio does the same); a pipe starts at 0.
        let start = obj
            .call_method0(intern!(py, "tell"))
            .ok()
            .and_then(|t| t.extract::<u64>().ok())
            .unwrap_or(0);
        Ok(Input::File(obj.clone().unbind(), start))
    }
}

/// A file to read: a local path or a URL.
#[derive(Clone, Debug)]
pub(crate) enum Target {
    /// A local file.
    Path(PathBuf),
    /// An object in a store or on an HTTP(S) server.
    Url(String),
}

impl Target {
    pub(crate) fn from_py(obj: &Bound<'_, PyAny>) -> PyResult<Target> {
        if let Ok(s) = obj.extract::<String>()
            && is_url(&s)
        {
            return Ok(Target::Url(s));
        }
        Ok(Target::Path(obj.extract::<PathBuf>()?))
    }
}

/// A list of files from one path or URL or a sequence of them.
///
/// # Errors
/// An item is neither a path nor a URL, or the sequence is empty: no
/// input is not an empty archive (a glob that matched nothing, a list
/// filtered to none), and every command line tool asks for one at least,
/// so a `ValueError` says so rather than an empty result.
pub(crate) fn targets_from_py(obj: &Bound<'_, PyAny>) -> PyResult<Vec<Target>> {
    if obj.extract::<PathBuf>().is_ok() {
        return Ok(vec![Target::from_py(obj)?]);
    }
    let mut out = Vec::new();
    for item in obj.try_iter()? {
        out.push(Target::from_py(&item?)?);
    }
    if out.is_empty() {
        return Err(pyo3::exceptions::PyValueError::new_err(
            "no file given: the sequence of paths is empty",
        ));
    }
    Ok(out)
}
