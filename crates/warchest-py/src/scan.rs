//! `scan`: record batches built in Rust, handed to Python through the
//! Arrow C stream interface (a PyCapsule named `arrow_array_stream`), so
//! pyarrow, polars or DuckDB take them without a copy or a Python object
//! per record.

use std::ffi::CStr;
use std::sync::Mutex;

use arrow_array::RecordBatchReader;
use arrow_array::ffi_stream::FFI_ArrowArrayStream;
use pyo3::exceptions::{PyRuntimeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::PyCapsule;
use warchest::warc::ReaderOptions;
use warchest_index::table::{Column, FilesScanner, Part, ScanOptions};

use crate::io::paths_from_py;

const STREAM_NAME: &CStr = c"arrow_array_stream";

/// The names of every column `scan` can give, in table order.
#[pyfunction]
pub(crate) fn columns() -> Vec<&'static str> {
    Column::ALL.iter().map(|c| c.name()).collect()
}

/// The byte ranges to read the file at `path` in, as `(start, end)`
/// pairs: ranges of `split_size` bytes for an uncompressed file larger
/// than that, the whole file otherwise (compressed files, sniffed from
/// their first bytes, are never split; `split_size` 0 never splits).
#[pyfunction]
pub(crate) fn split_ranges(
    py: Python<'_>,
    path: std::path::PathBuf,
    split_size: u64,
) -> PyResult<Vec<(u64, u64)>> {
    let plan = py
        .detach(|| warchest::split::plan_file(&path, split_size))
        .map_err(crate::to_py)?;
    Ok(plan.into_iter().map(|r| (r.start, r.end)).collect())
}

/// The record batches of the files at `paths`, as an object with
/// `__arrow_c_stream__` (read once). `warchest.scan` wraps it in a
/// `pyarrow.RecordBatchReader`. With `byte_range = (start, end)`, `paths`
/// is one file and only the records of that range are read.
#[pyfunction]
#[pyo3(signature = (paths, columns = None, record_types = None, batch_rows = 8192,
    include_payload = false, max_payload = 32 << 20, skip_errors = false, strict = false,
    byte_range = None))]
#[allow(clippy::too_many_arguments)]
pub(crate) fn scan_stream(
    paths: &Bound<'_, PyAny>,
    columns: Option<Vec<String>>,
    record_types: Option<Vec<String>>,
    batch_rows: usize,
    include_payload: bool,
    max_payload: u64,
    skip_errors: bool,
    strict: bool,
    byte_range: Option<(u64, u64)>,
) -> PyResult<ScanStream> {
    let paths = paths_from_py(paths)?;
    let parts: Vec<Part> = match byte_range {
        None => paths.into_iter().map(Part::from).collect(),
        Some((start, end)) => {
            let [path] = <[_; 1]>::try_from(paths).map_err(|p| {
                PyValueError::new_err(format!(
                    "byte_range needs exactly one path, not {}",
                    p.len()
                ))
            })?;
            if start > end {
                return Err(PyValueError::new_err(format!(
                    "byte_range ({start}, {end}) ends before it starts"
                )));
            }
            vec![Part {
                path,
                range: Some(start..end),
            }]
        }
    };
    let mut opts = ScanOptions {
        record_types,
        batch_rows: batch_rows.max(1),
        max_payload,
        skip_errors,
        reader: if strict {
            ReaderOptions::strict()
        } else {
            ReaderOptions::lenient()
        },
        ..ScanOptions::default()
    };
    if let Some(cols) = columns {
        opts = opts
            .columns_by_name(&cols)
            .map_err(|e| PyValueError::new_err(e.to_string()))?;
    } else if include_payload {
        opts.columns
            .extend([Column::Payload, Column::PayloadTruncated]);
    }
    Ok(ScanStream {
        scanner: Mutex::new(Some(FilesScanner::from_parts(parts, opts))),
    })
}

/// Record batches waiting to be taken through `__arrow_c_stream__`.
#[pyclass(module = "warchest._warchest", frozen)]
pub(crate) struct ScanStream {
    scanner: Mutex<Option<FilesScanner>>,
}

#[pymethods]
impl ScanStream {
    /// Exports the batches as an Arrow C stream (the PyCapsule protocol).
    /// The stream can be taken once. `requested_schema` is ignored: the
    /// schema is the one the columns give.
    #[pyo3(signature = (requested_schema = None))]
    fn __arrow_c_stream__<'py>(
        &self,
        py: Python<'py>,
        requested_schema: Option<Bound<'py, PyAny>>,
    ) -> PyResult<Bound<'py, PyCapsule>> {
        let _ = requested_schema;
        let scanner = self
            .scanner
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .take()
            .ok_or_else(|| PyRuntimeError::new_err("the scan's stream was already taken"))?;
        let reader: Box<dyn RecordBatchReader + Send> = Box::new(scanner);
        let stream = FFI_ArrowArrayStream::new(reader);
        PyCapsule::new_with_value(py, stream, STREAM_NAME)
    }
}
