//! `scan`: record batches built in Rust, handed to Python through the
//! Arrow C stream interface (a PyCapsule named `arrow_array_stream`), so
//! pyarrow, polars or DuckDB take them without a copy or a Python object
//! per record.

use std::collections::VecDeque;
use std::ffi::CStr;
use std::fs::File;
use std::ops::Range;
use std::sync::Mutex;

use arrow_array::ffi_stream::FFI_ArrowArrayStream;
use arrow_array::{RecordBatch, RecordBatchReader};
use arrow_schema::{ArrowError, SchemaRef};
use pyo3::exceptions::{PyRuntimeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::PyCapsule;
use warchest::codec::Decoder;
use warchest::warc::ReaderOptions;
use warchest_index::table::{ChunkedScanner, Column, ScanOptions, Scanner};

use crate::io::{Target, targets_from_py};

const STREAM_NAME: &CStr = c"arrow_array_stream";

/// `scan`'s `batch_bytes` by default: 4 MiB, a quarter of the library's.
/// A batch's payload buffer is then small enough that the allocator
/// reuses a freed batch's pages for the next one, where a 16 MiB batch got
/// fresh pages from the kernel (a page fault and a zeroed page for every
/// 4 KiB of payload: half the page faults of a scan); and a reader holding
/// one batch while the next is built, with chunks in flight on two
/// threads, stays well under 128 MiB (docs/python.md, "Speed").
const DEFAULT_BATCH_BYTES: usize = 4 << 20;

/// The names of every column `scan` can give, in table order.
#[pyfunction]
pub(crate) fn columns() -> Vec<&'static str> {
    Column::ALL.iter().map(|c| c.name()).collect()
}

/// The byte ranges to read the file (or object) at `path` in, as
/// `(start, end)` pairs: ranges of `split_size` bytes for an uncompressed
/// file larger than that, the whole file otherwise (compressed files,
/// sniffed from their first bytes, are never split; `split_size` 0 never
/// splits).
#[pyfunction]
pub(crate) fn split_ranges(
    py: Python<'_>,
    path: &Bound<'_, PyAny>,
    split_size: u64,
) -> PyResult<Vec<(u64, u64)>> {
    let plan = match Target::from_py(path)? {
        Target::Path(path) => py
            .detach(|| warchest::split::plan_file(&path, split_size))
            .map_err(crate::to_py)?,
        #[cfg(feature = "remote")]
        Target::Url(url) => py
            .detach(|| crate::remote::split_ranges(&url, split_size))
            .map_err(crate::to_py)?,
        #[cfg(not(feature = "remote"))]
        Target::Url(url) => return Err(crate::io::no_remote(&url)),
    };
    Ok(plan.into_iter().map(|r| (r.start, r.end)).collect())
}

/// Scan options from `scan`'s arguments.
pub(crate) fn scan_options(
    columns: Option<Vec<String>>,
    record_types: Option<Vec<String>>,
    batch_rows: usize,
    include_payload: bool,
    max_payload: u64,
    skip_errors: bool,
    strict: bool,
) -> warchest::Result<ScanOptions> {
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
        opts = opts.columns_by_name(&cols)?;
    } else if include_payload {
        opts.columns
            .extend([Column::Payload, Column::PayloadTruncated]);
    }
    Ok(opts)
}

/// The record batches of the files at `paths` (paths or URLs), as an
/// object with `__arrow_c_stream__` (read once). `warchest.scan` wraps it
/// in a `pyarrow.RecordBatchReader`. With `byte_range = (start, end)`,
/// `paths` is one file and only the records of that range are read. A
/// batch ends at `batch_rows` rows or once its payloads and headers reach
/// `batch_bytes` bytes, whichever comes first. An uncompressed local WARC
/// file (whole, not a `byte_range`) is read on `threads` threads (`None`
/// or 0: every core; 1: one) in chunks, its batches built per chunk and
/// handed out in file order, the rows those of one thread
/// ([`ChunkedScanner`]).
#[pyfunction]
#[pyo3(signature = (paths, columns = None, record_types = None, batch_rows = 8192,
    include_payload = false, max_payload = 32 << 20, skip_errors = false, strict = false,
    byte_range = None, batch_bytes = DEFAULT_BATCH_BYTES, threads = None))]
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
    batch_bytes: usize,
    threads: Option<usize>,
) -> PyResult<ScanStream> {
    let targets = targets_from_py(paths)?;
    let parts: Vec<(Target, Option<Range<u64>>)> = match byte_range {
        None => targets.into_iter().map(|t| (t, None)).collect(),
        Some((start, end)) => {
            let [target] = <[_; 1]>::try_from(targets).map_err(|p| {
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
            vec![(target, Some(start..end))]
        }
    };
    local_only(&parts)?;
    let opts = scan_options(
        columns,
        record_types,
        batch_rows,
        include_payload,
        max_payload,
        skip_errors,
        strict,
    )
    .map_err(|e| PyValueError::new_err(e.to_string()))?;
    let opts = ScanOptions {
        batch_bytes: batch_bytes.max(1),
        ..opts
    };
    Ok(ScanStream::new(Box::new(PartsScanner {
        schema: warchest_index::table::schema(&opts.columns),
        parts: parts.into(),
        current: None,
        opts,
        threads: match threads {
            Some(n) if n > 0 => n,
            _ => std::thread::available_parallelism().map_or(1, |n| n.get()),
        },
    })))
}

/// Refuses URLs in a build without the `remote` feature.
#[cfg(not(feature = "remote"))]
fn local_only(parts: &[(Target, Option<Range<u64>>)]) -> PyResult<()> {
    for (t, _) in parts {
        if let Target::Url(u) = t {
            return Err(crate::io::no_remote(u));
        }
    }
    Ok(())
}

/// Every part can be read in a build with the `remote` feature.
#[cfg(feature = "remote")]
fn local_only(_: &[(Target, Option<Range<u64>>)]) -> PyResult<()> {
    Ok(())
}

/// The scanner of one part.
enum PartScanner {
    Local(Scanner<Decoder<File>>),
    /// An uncompressed local file read in chunks on several threads.
    Chunked(ChunkedScanner),
    #[cfg(feature = "remote")]
    Remote(Scanner<Decoder<warchest_remote::RemoteFile>>),
}

impl PartScanner {
    fn next_batch(&mut self) -> warchest::Result<Option<RecordBatch>> {
        match self {
            PartScanner::Local(s) => s.next_batch(),
            PartScanner::Chunked(s) => s.next_batch(),
            #[cfg(feature = "remote")]
            PartScanner::Remote(s) => s.next_batch(),
        }
    }
}

/// Reads files and objects one after another into record batches of one
/// schema (`FilesScanner`, for URLs too).
struct PartsScanner {
    parts: VecDeque<(Target, Option<Range<u64>>)>,
    current: Option<PartScanner>,
    opts: ScanOptions,
    schema: SchemaRef,
    /// Threads for an uncompressed local file.
    threads: usize,
}

impl PartsScanner {
    fn next_batch(&mut self) -> warchest::Result<Option<RecordBatch>> {
        loop {
            if let Some(s) = self.current.as_mut() {
                if let Some(b) = s.next_batch()? {
                    return Ok(Some(b));
                }
                self.current = None;
            }
            let Some((target, range)) = self.parts.pop_front() else {
                return Ok(None);
            };
            let opts = self.opts.clone();
            self.current = match target {
                Target::Path(p) => Some(match range {
                    Some(r) => PartScanner::Local(Scanner::open_range(&p, r, opts)),
                    None => {
                        match ChunkedScanner::open(
                            &p,
                            opts.clone(),
                            self.threads,
                            warchest::chunks::knob(),
                        ) {
                            Some(s) => PartScanner::Chunked(s),
                            None => PartScanner::Local(Scanner::open(&p, opts)),
                        }
                    }
                }),
                #[cfg(feature = "remote")]
                Target::Url(u) => crate::remote::scanner(&u, range, opts).map(PartScanner::Remote),
                // Refused when the scan was made.
                #[cfg(not(feature = "remote"))]
                Target::Url(_) => None,
            };
        }
    }
}

impl Iterator for PartsScanner {
    type Item = Result<RecordBatch, ArrowError>;

    fn next(&mut self) -> Option<Self::Item> {
        self.next_batch()
            .map_err(|e| ArrowError::ExternalError(Box::new(e)))
            .transpose()
    }
}

impl RecordBatchReader for PartsScanner {
    fn schema(&self) -> SchemaRef {
        self.schema.clone()
    }
}

type BatchStream = Box<dyn RecordBatchReader + Send>;

/// Record batches waiting to be taken through `__arrow_c_stream__`.
#[pyclass(module = "warchest._warchest", frozen)]
pub(crate) struct ScanStream {
    scanner: Mutex<Option<BatchStream>>,
}

impl ScanStream {
    pub(crate) fn new(stream: BatchStream) -> Self {
        ScanStream {
            scanner: Mutex::new(Some(stream)),
        }
    }
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
        let reader = self
            .scanner
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .take()
            .ok_or_else(|| PyRuntimeError::new_err("the scan's stream was already taken"))?;
        let stream = FFI_ArrowArrayStream::new(reader);
        PyCapsule::new_with_value(py, stream, STREAM_NAME)
    }
}
