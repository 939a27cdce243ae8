//! `scan`: record batches built in Rust, handed to Python through the
//! Arrow C stream interface (a PyCapsule named `arrow_array_stream`), so
//! pyarrow, polars or DuckDB take them without a copy or a Python object
//! per record.

use std::collections::VecDeque;
use std::ffi::CStr;
use std::fs::File;
use std::ops::Range;
use std::sync::{Arc, Mutex};

use arrow_array::ffi_stream::FFI_ArrowArrayStream;
use arrow_array::{RecordBatch, RecordBatchReader};
use arrow_schema::{ArrowError, SchemaRef};
use pyo3::exceptions::{PyRuntimeError, PyValueError};
use pyo3::intern;
use pyo3::prelude::*;
use pyo3::types::{PyCapsule, PyDict, PyList};
use warchest::Warning;
use warchest::codec::Decoder;
use warchest::recoveries::{PayloadFallbackAt, Recoveries};
use warchest::warc::ReaderOptions;
use warchest_index::UnparsedHead;
use warchest_index::table::{
    ChunkedScanner, Column, ScanNotes, ScanOptions, Scanner, SkippedError,
};

use crate::io::{Target, targets_from_py};
use crate::wacz::ArchiveFile;

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
/// sniffed from their first bytes, are never split, nor is a WACZ, read
/// as its archive files; `split_size` 0 never splits).
#[pyfunction]
pub(crate) fn split_ranges(
    py: Python<'_>,
    path: &Bound<'_, PyAny>,
    split_size: u64,
) -> PyResult<Vec<(u64, u64)>> {
    let target = Target::from_py(path)?;
    let plan = match target {
        // One archive file of a WACZ (`FILE.wacz#archive/NAME`): read
        // whole, as a WACZ is.
        t if crate::wacz::is_member(&t) => {
            let files = py
                .detach(|| crate::wacz::archive_files_of(&t))
                .map_err(crate::to_py)?;
            files.iter().map(|f| 0..f.stored_size()).collect()
        }
        // A WACZ is read whole, as its archive files, as a compressed file is.
        Target::Path(path) if crate::wacz::is_wacz(&path) => {
            let size = std::fs::metadata(&path)
                .map_err(|e| crate::to_py(warchest::Error::from(e).in_file(&path)))?
                .len();
            std::iter::once(0..size).collect()
        }
        #[cfg(feature = "remote")]
        Target::Url(url) if crate::wacz::is_wacz(std::path::Path::new(&url)) => {
            let size = py
                .detach(|| warchest_remote::size(&url))
                .map_err(crate::io_to_py)?;
            std::iter::once(0..size).collect()
        }
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
    let notes = notes_for(&opts);
    Ok(ScanStream::new(
        Box::new(PartsScanner {
            schema: warchest_index::table::schema(&opts.columns),
            parts: parts.into_iter().map(|(t, r)| Part::Target(t, r)).collect(),
            current: None,
            opts,
            threads: match threads {
                Some(n) if n > 0 => n,
                _ => std::thread::available_parallelism().map_or(1, |n| n.get()),
            },
            notes: Arc::clone(&notes),
        }),
        notes,
    ))
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

/// A part of a scan: a file or object given (all of it or a byte range),
/// or an archive file of a WACZ given.
enum Part {
    Target(Target, Option<Range<u64>>),
    Archive(ArchiveFile),
}

/// The scanner of one part.
enum PartScanner {
    /// Boxed, as `Remote`: a scanner is several hundred bytes.
    Local(Box<Scanner<Decoder<File>>>),
    /// An archive file of a WACZ, read where it lies in the ZIP.
    Wacz(Box<Scanner<crate::wacz::ArchiveSource>>),
    /// An uncompressed local file read in chunks on several threads.
    Chunked(ChunkedScanner),
    #[cfg(feature = "remote")]
    Remote(Box<Scanner<Decoder<warchest_remote::RemoteFile>>>),
}

impl PartScanner {
    fn next_batch(&mut self) -> warchest::Result<Option<RecordBatch>> {
        match self {
            PartScanner::Local(s) => s.next_batch(),
            PartScanner::Wacz(s) => s.next_batch(),
            PartScanner::Chunked(s) => s.next_batch(),
            #[cfg(feature = "remote")]
            PartScanner::Remote(s) => s.next_batch(),
        }
    }

    fn take_notes(&mut self) -> ScanNotes {
        match self {
            PartScanner::Local(s) => s.take_notes(),
            PartScanner::Wacz(s) => s.take_notes(),
            PartScanner::Chunked(s) => s.take_notes(),
            #[cfg(feature = "remote")]
            PartScanner::Remote(s) => s.take_notes(),
        }
    }
}

/// Reads files and objects one after another into record batches of one
/// schema (`FilesScanner`, for URLs too).
struct PartsScanner {
    parts: VecDeque<Part>,
    current: Option<PartScanner>,
    opts: ScanOptions,
    schema: SchemaRef,
    /// Threads for an uncompressed local file.
    threads: usize,
    /// What the scan noted, shared with its [`ScanStream`].
    notes: SharedNotes,
}

impl PartsScanner {
    /// The next batch. A part's notes are taken after each of its batches,
    /// and it is told of ([`StreamNotes::finish_part`]) when it ends, by
    /// its end or by an error.
    fn next_batch(&mut self) -> warchest::Result<Option<RecordBatch>> {
        loop {
            if let Some(s) = self.current.as_mut() {
                let got = s.next_batch();
                let mut notes = lock(&self.notes);
                notes.current.append(s.take_notes());
                if let Ok(Some(b)) = got {
                    return Ok(Some(b));
                }
                notes.finish_part();
                drop(notes);
                self.current = None;
                got?;
            }
            let Some(part) = self.parts.pop_front() else {
                return Ok(None);
            };
            let opts = self.opts.clone();
            let (target, range) = match part {
                Part::Target(t, r) => (t, r),
                Part::Archive(f) => {
                    self.current = Some(match f.open(opts.reader.clone()) {
                        Ok(r) => PartScanner::Wacz(Box::new(Scanner::new(r, f.name, opts))),
                        Err(e) => PartScanner::Local(Box::new(Scanner::failed(f.name, e, opts))),
                    });
                    continue;
                }
            };
            // A WACZ, local or by URL: its archive files, each a part (as
            // `warchest ls x.wacz` reads it). Not split: only a range
            // starting at 0 reads it, as a compressed file.
            if crate::wacz::is_wacz_target(&target) {
                if range.is_some_and(|r| r.start != 0 || r.end == 0) {
                    continue;
                }
                match crate::wacz::archive_files_of(&target) {
                    Ok(files) => {
                        for f in files.into_iter().rev() {
                            self.parts.push_front(Part::Archive(f));
                        }
                    }
                    Err(e) => {
                        let name = match target {
                            Target::Path(p) => p.to_string_lossy().into_owned(),
                            Target::Url(u) => u,
                        };
                        let failed = Scanner::failed(name, e, opts);
                        self.current = Some(PartScanner::Local(Box::new(failed)));
                    }
                }
                continue;
            }
            self.current = match target {
                Target::Path(p) => Some(match range {
                    Some(r) => PartScanner::Local(Box::new(Scanner::open_range(&p, r, opts))),
                    None => {
                        match ChunkedScanner::open(
                            &p,
                            opts.clone(),
                            self.threads,
                            warchest::chunks::knob(),
                        ) {
                            Some(s) => PartScanner::Chunked(s),
                            None => PartScanner::Local(Box::new(Scanner::open(&p, opts))),
                        }
                    }
                }),
                #[cfg(feature = "remote")]
                Target::Url(u) => crate::remote::scanner(&u, range, opts)
                    .map(|s| PartScanner::Remote(Box::new(s))),
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
        self.next_batch().map_err(external).transpose()
    }
}

/// A library error as Arrow's.
pub(crate) fn external(e: warchest::Error) -> ArrowError {
    ArrowError::ExternalError(Box::new(e))
}

/// What a scan stream noted: the parts finished, the part being read (its
/// notes taken after each batch), and the sentences to tell of the parts
/// finished, until Python takes them (`ScanStream::take_told`).
///
/// The stream itself never calls into Python: a consumer may read it on a
/// thread of its own while another holds the interpreter (DuckDB's worker
/// threads), where taking the interpreter lock would deadlock. The
/// `warchest` package's wrappers give the warnings as they pass the
/// batches on.
#[derive(Default)]
pub(crate) struct StreamNotes {
    finished: ScanNotes,
    pub(crate) current: ScanNotes,
    told: Vec<String>,
    /// The rows have an `error` column: an error skipped
    /// (`skip_errors`) is said by its row. Without one, it is told.
    error_column: bool,
}

/// [`StreamNotes`] shared by a stream and the object it was taken from.
pub(crate) type SharedNotes = Arc<Mutex<StreamNotes>>;

/// The notes of a scan with `opts`.
pub(crate) fn notes_for(opts: &ScanOptions) -> SharedNotes {
    Arc::new(Mutex::new(StreamNotes {
        error_column: opts.columns.contains(&Column::Error),
        ..StreamNotes::default()
    }))
}

/// What is said of the errors a scan skipped (`skip_errors`) when its
/// columns leave out `error`: without the column, an error row is a row of
/// nulls, and the error would go unsaid.
const SKIPPED_UNSEEN: &str = "the columns leave out `error`, so no row says it";

pub(crate) fn lock(n: &SharedNotes) -> std::sync::MutexGuard<'_, StreamNotes> {
    n.lock().unwrap_or_else(|p| p.into_inner())
}

impl StreamNotes {
    /// Ends the current part: its notes join the finished ones, and the
    /// sentence a warning says of them, if any, waits to be told.
    pub(crate) fn finish_part(&mut self) {
        let part = self.current.take();
        self.told
            .extend(describe(&part.recoveries, &part.payload_fallbacks));
        // Rows whose HTTP columns are null for a head that did not parse.
        let heads = &part.unparsed_heads;
        self.told.extend(
            UnparsedHead::summary_as(heads, "their HTTP columns are null").map(|l| {
                match heads.by_file() {
                    [f] if !f.file.is_empty() => format!("{}: {l}", f.file),
                    _ => l,
                }
            }),
        );
        // Errors skipped, when no row can say them.
        let failures = &part.failures;
        if !self.error_column {
            self.told
                .extend(SkippedError::summary_as(failures, SKIPPED_UNSEEN).map(|l| {
                    match failures.by_file() {
                        [f] if !f.file.is_empty() => format!("{}: {l}", f.file),
                        many if many.len() > 1 => format!("{} files: {l}", many.len()),
                        _ => l,
                    }
                }));
        }
        self.finished.append(part);
    }

    /// A sentence to tell with the current part's (`derive_text`'s texts
    /// cut and with bytes replaced, which a scan has not).
    pub(crate) fn tell(&mut self, told: String) {
        self.told.push(told);
    }

    /// Everything noted so far.
    fn all(&self) -> ScanNotes {
        let mut all = self.finished.clone();
        all.append(self.current.clone());
        all
    }
}

/// One sentence of what was noted: where (the file, unless unnamed, or
/// how many), the recoveries by kind and the first offset, the payloads
/// not decoded by kind; `None` when nothing was.
pub(crate) fn describe(
    r: &Recoveries<Warning>,
    payloads: &Recoveries<PayloadFallbackAt>,
) -> Option<String> {
    let parts: Vec<String> = r.summary().into_iter().chain(payloads.summary()).collect();
    if parts.is_empty() {
        return None;
    }
    let mut files: Vec<&str> = Vec::new();
    let named = r.by_file().iter().chain(payloads.by_file());
    for f in named.map(|f| f.file.as_str()) {
        if !files.contains(&f) {
            files.push(f);
        }
    }
    let told = parts.join("; ");
    Some(match files.as_slice() {
        [""] => told,
        [one] => format!("{one}: {told}"),
        many => format!("{} files: {told}", many.len()),
    })
}

pyo3::create_exception!(
    _warchest,
    RecoveryWarning,
    pyo3::exceptions::PyUserWarning,
    "A lenient read recovered from damage or deviations, or gave payloads \
     as stored where their HTTP head names codings it could not undo, or \
     a scan skipped an error (skip_errors) that no row of its columns says."
);

/// Warns `told` as a [`RecoveryWarning`] (attributed to the caller's line).
pub(crate) fn warn_now(py: Python<'_>, told: &str) -> PyResult<()> {
    // A file name could hold a NUL, which a C string cannot.
    let msg = std::ffi::CString::new(told.replace('\0', " ")).unwrap_or_default();
    PyErr::warn(py, &py.get_type::<RecoveryWarning>(), &msg, 1)
}

impl RecordBatchReader for PartsScanner {
    fn schema(&self) -> SchemaRef {
        self.schema.clone()
    }
}

type BatchStream = Box<dyn RecordBatchReader + Send>;

/// Record batches waiting to be taken through `__arrow_c_stream__`, and
/// what reading them noted.
#[pyclass(module = "warchest._warchest", frozen)]
pub(crate) struct ScanStream {
    scanner: Mutex<Option<BatchStream>>,
    notes: SharedNotes,
}

impl ScanStream {
    /// A stream of `stream`'s batches, which notes into `notes`.
    pub(crate) fn new(stream: BatchStream, notes: SharedNotes) -> Self {
        ScanStream {
            scanner: Mutex::new(Some(stream)),
            notes,
        }
    }

    /// Everything noted so far, without the GIL (a reading thread may hold
    /// the lock).
    fn noted(&self, py: Python<'_>) -> ScanNotes {
        py.detach(|| lock(&self.notes).all())
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

    /// The sentences to warn of the files read to their end since the last
    /// call (one per file that noted anything), for the `warchest`
    /// package's wrappers to give as `RecoveryWarning`s.
    fn take_told(&self, py: Python<'_>) -> Vec<String> {
        py.detach(|| std::mem::take(&mut lock(&self.notes).told))
    }

    /// The lenient reader's recoveries met so far, in the order met: dicts
    /// as `ArchiveIterator.warnings` gives them, with the `file` too. The
    /// first 1000 are kept; `warning_counts` counts them all.
    #[getter]
    fn warnings<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyList>> {
        let n = self.noted(py);
        let list = PyList::empty(py);
        for (file, w) in n.recoveries.kept() {
            let d = crate::iter::warning_dict(py, w)?;
            d.set_item(intern!(py, "file"), file)?;
            list.append(d)?;
        }
        Ok(list)
    }

    /// Every recovery met so far, counted by kind name.
    #[getter]
    fn warning_counts<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let n = self.noted(py);
        let d = PyDict::new(py);
        for (kind, c) in n.recoveries.by_kind() {
            d.set_item(kind.name(), c)?;
        }
        Ok(d)
    }

    /// The payloads read so far that were not decoded as their HTTP head
    /// says (given as stored, or cut short): dicts of `file`, `offset` (the
    /// record's) and `fallbacks` (names, as `RecordStream.fallbacks`). The
    /// first 1000 are kept; `payload_fallback_counts` counts them all.
    #[getter]
    fn payload_fallbacks<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyList>> {
        let n = self.noted(py);
        let list = PyList::empty(py);
        for (file, p) in n.payload_fallbacks.kept() {
            let d = PyDict::new(py);
            d.set_item(intern!(py, "file"), file)?;
            d.set_item(intern!(py, "offset"), p.offset)?;
            let names: Vec<&str> = p.fallbacks.iter().map(|f| f.name()).collect();
            d.set_item(intern!(py, "fallbacks"), names)?;
            list.append(d)?;
        }
        Ok(list)
    }

    /// The rows read so far whose HTTP head did not parse (their HTTP
    /// columns are null): dicts of `file` and `offset` (the record's). The
    /// first 1000 are kept; `unparsed_head_count` counts them all.
    #[getter]
    fn unparsed_heads<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyList>> {
        let n = self.noted(py);
        let list = PyList::empty(py);
        for (file, u) in n.unparsed_heads.kept() {
            let d = PyDict::new(py);
            d.set_item(intern!(py, "file"), file)?;
            d.set_item(intern!(py, "offset"), u.offset)?;
            list.append(d)?;
        }
        Ok(list)
    }

    /// The errors skipped so far under `skip_errors` (each gave its file's
    /// row with `error` set, and the scan went on): dicts of `file`,
    /// `offset` (where reading stopped: the error row's) and `message`
    /// (the error column's text). The first 1000 are kept;
    /// `skipped_error_count` counts them all. A scan whose columns leave
    /// out `error` tells them in a `RecoveryWarning` too.
    #[getter]
    fn skipped_errors<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyList>> {
        let n = self.noted(py);
        let list = PyList::empty(py);
        for (file, e) in n.failures.kept() {
            let d = PyDict::new(py);
            d.set_item(intern!(py, "file"), file)?;
            d.set_item(intern!(py, "offset"), e.offset)?;
            d.set_item(intern!(py, "message"), &e.message)?;
            list.append(d)?;
        }
        Ok(list)
    }

    /// How many errors were skipped so far under `skip_errors`.
    #[getter]
    fn skipped_error_count(&self, py: Python<'_>) -> u64 {
        self.noted(py).failures.total()
    }

    /// How many rows read so far had an HTTP head that did not parse.
    #[getter]
    fn unparsed_head_count(&self, py: Python<'_>) -> u64 {
        self.noted(py).unparsed_heads.total()
    }

    /// Those payloads counted by fallback name (a payload may count under
    /// two).
    #[getter]
    fn payload_fallback_counts<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let n = self.noted(py);
        let d = PyDict::new(py);
        for (f, c) in n.payload_fallbacks.by_kind() {
            d.set_item(f.name(), c)?;
        }
        Ok(d)
    }
}
