//! URLs (`s3://`, `gs://`, `az://`, `http(s)://`) read and written through
//! warchest-remote, and `fetch`: records selected by (filename, offset,
//! length) rows, fetched by range with a bounded number in flight.

use std::fs::File;
use std::io::{self, Cursor, Read, Seek, SeekFrom};
use std::ops::Range;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::sync::mpsc::{Receiver, SyncSender};

use arrow_array::{RecordBatch, RecordBatchReader};
use arrow_schema::{ArrowError, SchemaRef};
use bytes::Bytes;
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::PyBytes;
use warchest::Position;
use warchest::archive::Reader;
use warchest::codec::Decoder;
use warchest::split;
use warchest::warc::ReaderOptions;
use warchest::{Error, Result};
use warchest_index::table::{ScanOptions, Scanner};
use warchest_remote::{Location, RangeRequest, RemoteFile};

use crate::io::is_url;
use crate::io_to_py;
use crate::iter::ArchiveIterator;
use crate::scan::ScanStream;

/// A reader over the object at `url`, from its start (format sniffed).
pub(crate) fn open_reader(url: &str, opts: ReaderOptions) -> Result<Reader<Decoder<RemoteFile>>> {
    let f = warchest_remote::open(url)?;
    reader_over(f, url, opts)
}

/// A reader over `f` from its current position, which must be 0.
fn reader_over(
    f: RemoteFile,
    url: &str,
    mut opts: ReaderOptions,
) -> Result<Reader<Decoder<RemoteFile>>> {
    if opts.file.is_none() {
        opts.file = Some(PathBuf::from(url));
    }
    // Decoding threads read a local file of their own: none here.
    opts.decoder.threads = 1;
    // Seekable: payloads the reader skips are sought past, not fetched.
    let src = Decoder::new_seekable(f, opts.decoder.clone())?;
    Reader::from_source(src, opts)
}

/// As `warchest_index`'s range scanners, over an object: a reader at the
/// first record of `range` and the offset where its records stop; `None`
/// when no record starts in it. A compressed object is not split.
fn open_range_reader(
    url: &str,
    range: Range<u64>,
    opts: &ReaderOptions,
) -> Result<Option<(Reader<Decoder<RemoteFile>>, u64)>> {
    let mut f = warchest_remote::open(url)?;
    let mut head = [0u8; 8];
    let n = warchest::io::read_up_to(&mut f, &mut head)?;
    if split::is_compressed(&head[..n]) {
        if range.start != 0 || range.end == 0 {
            return Ok(None);
        }
        f.seek(SeekFrom::Start(0))?;
        return reader_over(f, url, opts.clone()).map(|r| Some((r, u64::MAX)));
    }
    let format = split::sniff_format(&mut f)?;
    let Some(b) = split::bounds(&mut f, format, range, opts)? else {
        return Ok(None);
    };
    f.seek(SeekFrom::Start(b.start))?;
    if b.start == 0 {
        return reader_over(f, url, opts.clone()).map(|r| Some((r, b.end)));
    }
    let mut opts = opts.clone();
    opts.file.get_or_insert_with(|| PathBuf::from(url));
    opts.decoder.threads = 1;
    opts.decoder.start_offset = b.start;
    let src = Decoder::new_seekable(f, opts.decoder.clone())?;
    Ok(Some((Reader::from_source_as(src, opts, format), b.end)))
}

/// A scanner over the object at `url`, or over the records of `range` of
/// it; `None` when no record starts in the range. Errors surface as the
/// scanner's first batch (as for local files).
pub(crate) fn scanner(
    url: &str,
    range: Option<Range<u64>>,
    opts: ScanOptions,
) -> Option<Scanner<Decoder<RemoteFile>>> {
    let opened = match range {
        None => open_reader(url, opts.reader.clone()).map(|r| Some((r, u64::MAX))),
        Some(r) => open_range_reader(url, r, &opts.reader),
    };
    match opened {
        Ok(Some((r, stop))) => Some(Scanner::new(r, url, opts).stop_at(stop)),
        Ok(None) => None,
        Err(e) => Some(Scanner::failed(url, e, opts)),
    }
}

/// The byte ranges to read the object at `url` in (as `split_ranges` does
/// for a file): `split_size` ranges for an uncompressed object larger than
/// that, the whole object otherwise.
///
/// A HEAD for the size, and only for an object that may be split, a GET of
/// its first 8 bytes (its magic number): not an opening, whose first range
/// (a block) would be fetched for nothing on the driver.
pub(crate) fn split_ranges(url: &str, split_size: u64) -> Result<Vec<Range<u64>>> {
    let len = warchest_remote::size(url)?;
    if split_size == 0 || len <= split_size {
        return Ok(split::plan(len, 0));
    }
    let head = warchest_remote::get_range(url, 0, len.min(8))?;
    if split::is_compressed(&head) {
        return Ok(split::plan(len, 0));
    }
    Ok(split::plan(len, split_size))
}

/// The objects at `url` (a prefix ending in `/`, a `*` glob in the last
/// component, or one object) as `(url, size)` pairs, sorted by URL.
#[pyfunction]
pub(crate) fn list_urls(py: Python<'_>, url: &str) -> PyResult<Vec<(String, u64)>> {
    py.detach(|| warchest_remote::list(url)).map_err(io_to_py)
}

/// One row of a fetch: where its bytes come from.
enum RowSource {
    Remote,
    Local(PathBuf),
    Bad(String),
}

struct Row {
    name: String,
    offset: u64,
    len: u64,
    source: RowSource,
}

/// What fetching one row gave.
type Fetched = std::result::Result<Bytes, Error>;

/// Fetches rows in order: remote ranges on a thread of their own, at most
/// `concurrency` in flight (and as many waiting to be taken), local ranges
/// read when their turn comes.
struct Fetcher {
    rows: Vec<Row>,
    next: usize,
    rx: Option<Receiver<io::Result<Bytes>>>,
    thread: Option<std::thread::JoinHandle<io::Result<()>>>,
}

impl Fetcher {
    fn new(
        rows: Vec<(String, u64, u64)>,
        concurrency: usize,
        max_length: u64,
        max_gap: u64,
    ) -> Fetcher {
        let mut requests = Vec::new();
        let rows: Vec<Row> = rows
            .into_iter()
            .map(|(name, offset, len)| {
                let source = if len == 0 {
                    RowSource::Bad("the length is 0".into())
                } else if len > max_length {
                    RowSource::Bad(format!(
                        "the length {len} is more than max_length ({max_length} bytes)"
                    ))
                } else if offset.checked_add(len).is_none() {
                    RowSource::Bad("offset + length overflows".into())
                } else if is_url(&name) {
                    match Location::parse(&name) {
                        Ok(location) => {
                            requests.push(RangeRequest {
                                location,
                                offset,
                                len,
                            });
                            RowSource::Remote
                        }
                        Err(e) => RowSource::Bad(e.to_string()),
                    }
                } else {
                    RowSource::Local(PathBuf::from(&name))
                };
                Row {
                    name,
                    offset,
                    len,
                    source,
                }
            })
            .collect();
        let (rx, thread) = if requests.is_empty() {
            (None, None)
        } else {
            let conc = concurrency.max(1);
            let (tx, rx): (SyncSender<io::Result<Bytes>>, _) = std::sync::mpsc::sync_channel(conc);
            let thread = std::thread::Builder::new()
                .name("warchest-fetch".into())
                .spawn(move || {
                    let plan = warchest_remote::FetchPlan {
                        concurrency: conc,
                        max_gap,
                        ..Default::default()
                    };
                    let opts = warchest_remote::Options::from_env();
                    warchest_remote::fetch_ranges_with(requests, &plan, &opts, |_, r| {
                        // The taker is gone (the iterator was dropped): stop.
                        tx.send(r)
                            .map_err(|_| io::Error::other("the fetch was abandoned"))
                    })
                    .map(|_| ())
                });
            match thread {
                Ok(t) => (Some(rx), Some(t)),
                Err(e) => {
                    let msg = format!("cannot start the fetch thread: {e}");
                    let rows = rows
                        .into_iter()
                        .map(|r| match r.source {
                            RowSource::Remote => Row {
                                source: RowSource::Bad(msg.clone()),
                                ..r
                            },
                            _ => r,
                        })
                        .collect();
                    return Fetcher {
                        rows,
                        next: 0,
                        rx: None,
                        thread: None,
                    };
                }
            }
        };
        Fetcher {
            rows,
            next: 0,
            rx,
            thread,
        }
    }

    /// The next row's index and bytes (or why there are none).
    fn next(&mut self) -> Option<(usize, Fetched)> {
        let i = self.next;
        let row = self.rows.get(i)?;
        self.next += 1;
        let at = |e: Error| e.at(Position::at(row.offset));
        let got = match &row.source {
            RowSource::Bad(msg) => Err(at(Error::from(io::Error::new(
                io::ErrorKind::InvalidInput,
                msg.clone(),
            ))
            .in_file(&row.name))),
            RowSource::Local(p) => {
                read_local(p, row.offset, row.len).map_err(|e| at(Error::from(e).in_file(p)))
            }
            RowSource::Remote => match self.rx.as_ref().map(|rx| rx.recv()) {
                Some(Ok(r)) => r.map_err(|e| at(Error::from(e))),
                _ => {
                    // The thread ended early: its error says why.
                    let why = match self.thread.take().map(|t| t.join()) {
                        Some(Ok(Err(e))) => e.to_string(),
                        Some(Err(_)) => "the fetch thread panicked".into(),
                        _ => "the fetch stopped".into(),
                    };
                    self.rx = None;
                    Err(at(Error::from(io::Error::other(why)).in_file(&row.name)))
                }
            },
        };
        Some((i, got))
    }

    fn row(&self, i: usize) -> &Row {
        &self.rows[i]
    }
}

/// The `len` bytes at `offset` of a local file; fewer is an error.
fn read_local(path: &Path, offset: u64, len: u64) -> io::Result<Bytes> {
    let mut f = File::open(path)?;
    let size = f.metadata()?.len();
    if offset.saturating_add(len) > size {
        return Err(io::Error::new(
            io::ErrorKind::UnexpectedEof,
            format!(
                "the range {offset}..{} is past the end of the file ({size} bytes)",
                offset + len
            ),
        ));
    }
    f.seek(SeekFrom::Start(offset))?;
    let mut buf = vec![0; usize::try_from(len).map_err(io::Error::other)?];
    f.read_exact(&mut buf)?;
    Ok(Bytes::from(buf))
}

/// A reader over fetched bytes whose first byte is at `offset` of `name`.
fn reader_over_bytes(
    data: Bytes,
    name: &str,
    offset: u64,
    mut opts: ReaderOptions,
) -> Result<Reader<Decoder<Cursor<Bytes>>>> {
    opts.file = Some(PathBuf::from(name));
    opts.decoder.start_offset = offset;
    opts.decoder.threads = 1;
    Reader::with_options(Cursor::new(data), opts)
}

/// Records of fetched rows, row by row, each as an `ArchiveIterator` over
/// the row's bytes (offsets as in the whole file), or the bytes themselves.
#[pyclass(module = "warchest._warchest")]
pub(crate) struct FetchStream {
    fetcher: Mutex<Fetcher>,
    record_types: Option<Vec<String>>,
    parse_http: bool,
    strict: bool,
    raw: bool,
}

#[pymethods]
impl FetchStream {
    fn __iter__(slf: PyRef<'_, Self>) -> PyRef<'_, Self> {
        slf
    }

    /// `(index, iterator, None)` for a row fetched (`(index, bytes, None)`
    /// with `raw`), `(index, None, error)` for one that could not be (the
    /// error names the file or URL and the offset).
    #[allow(clippy::type_complexity)]
    fn __next__(
        &self,
        py: Python<'_>,
    ) -> PyResult<Option<(usize, Option<Py<PyAny>>, Option<String>)>> {
        let raw = self.raw;
        let got = py.detach(|| {
            let mut f = self.fetcher.lock().unwrap_or_else(|p| p.into_inner());
            let (i, r) = f.next()?;
            let row = f.row(i);
            let opts = if self.strict {
                ReaderOptions::strict()
            } else {
                ReaderOptions::lenient()
            };
            Some((
                i,
                r.and_then(|data| {
                    if raw {
                        Ok(Err(data))
                    } else {
                        reader_over_bytes(data, &row.name, row.offset, opts).map(Ok)
                    }
                }),
            ))
        });
        Ok(match got {
            None => None,
            Some((i, Ok(Ok(reader)))) => {
                let it = ArchiveIterator::over(
                    Box::new(reader),
                    self.record_types.clone(),
                    self.parse_http,
                    self.strict,
                );
                Some((i, Some(Py::new(py, it)?.into_any()), None))
            }
            Some((i, Ok(Err(data)))) => {
                Some((i, Some(PyBytes::new(py, &data).into_any().unbind()), None))
            }
            Some((i, Err(e))) => Some((i, None, Some(e.to_string()))),
        })
    }
}

/// The rows' records (or bytes, with `raw`), row by row, as `FetchStream`
/// items.
#[pyfunction]
#[pyo3(signature = (rows, concurrency = 16, max_length = 1 << 30, record_types = None,
    parse_http = true, strict = false, raw = false, max_gap = warchest_remote::DEFAULT_MAX_GAP))]
#[allow(clippy::too_many_arguments)]
pub(crate) fn fetch_records(
    rows: Vec<(String, u64, u64)>,
    concurrency: usize,
    max_length: u64,
    record_types: Option<Vec<String>>,
    parse_http: bool,
    strict: bool,
    raw: bool,
    max_gap: u64,
) -> FetchStream {
    FetchStream {
        fetcher: Mutex::new(Fetcher::new(rows, concurrency, max_length, max_gap)),
        record_types,
        parse_http,
        strict,
        raw,
    }
}

/// The rows' records as Arrow batches of `scan`'s columns, `batch_rows` at
/// most each; a row that cannot be fetched or read is a row with `error`
/// set (or the stream's error, without `skip_errors`).
pub(crate) struct FetchBatches {
    fetcher: Fetcher,
    opts: ScanOptions,
    schema: SchemaRef,
    /// What reading the records noted; told in one warning at the end.
    notes: crate::scan::SharedNotes,
}

impl FetchBatches {
    /// The next batch. What reading the records noted is told of once,
    /// at the end (or at an error), for all of them.
    fn next_batch(&mut self) -> std::result::Result<Option<RecordBatch>, ArrowError> {
        let got = self.next_rows();
        if !matches!(got, Ok(Some(_))) {
            crate::scan::lock(&self.notes).finish_part();
        }
        got.map_err(crate::scan::external)
    }

    fn next_rows(&mut self) -> Result<Option<RecordBatch>> {
        let mut batches = Vec::new();
        let mut rows = 0;
        let mut bytes = 0;
        while rows < self.opts.batch_rows.max(1) && bytes < self.opts.batch_bytes {
            let Some((i, got)) = self.fetcher.next() else {
                break;
            };
            let row = self.fetcher.row(i);
            let opts = self.opts.clone();
            let scanner = match got.and_then(|data| {
                reader_over_bytes(data, &row.name, row.offset, opts.reader.clone())
            }) {
                Ok(r) => Scanner::new(r, row.name.as_str(), opts),
                Err(e) => Scanner::failed(row.name.as_str(), e, opts),
            };
            let mut scanner = scanner;
            let read = (|| {
                while let Some(b) = scanner.next_batch()? {
                    rows += b.num_rows();
                    bytes += b.get_array_memory_size();
                    batches.push(b);
                }
                Ok::<_, Error>(())
            })();
            // Before an error goes: what the record met counts too.
            crate::scan::lock(&self.notes)
                .current
                .append(scanner.take_notes());
            read?;
        }
        if batches.is_empty() {
            return Ok(None);
        }
        arrow_select::concat::concat_batches(&self.schema, &batches)
            .map(Some)
            .map_err(|e| Error::from(io::Error::other(e.to_string())))
    }
}

impl Iterator for FetchBatches {
    type Item = std::result::Result<RecordBatch, ArrowError>;

    fn next(&mut self) -> Option<Self::Item> {
        self.next_batch().transpose()
    }
}

impl RecordBatchReader for FetchBatches {
    fn schema(&self) -> SchemaRef {
        self.schema.clone()
    }
}

/// The rows' records as a stream of Arrow batches (`scan`'s columns and
/// options).
#[pyfunction]
#[pyo3(signature = (rows, concurrency = 16, max_length = 1 << 30, columns = None,
    record_types = None, batch_rows = 8192, include_payload = false, max_payload = 32 << 20,
    skip_errors = true, strict = false, max_gap = warchest_remote::DEFAULT_MAX_GAP))]
#[allow(clippy::too_many_arguments)]
pub(crate) fn fetch_scan_stream(
    rows: Vec<(String, u64, u64)>,
    concurrency: usize,
    max_length: u64,
    columns: Option<Vec<String>>,
    record_types: Option<Vec<String>>,
    batch_rows: usize,
    include_payload: bool,
    max_payload: u64,
    skip_errors: bool,
    strict: bool,
    max_gap: u64,
) -> PyResult<ScanStream> {
    let opts = crate::scan::scan_options(
        columns,
        record_types,
        batch_rows,
        include_payload,
        max_payload,
        skip_errors,
        strict,
    )
    .map_err(|e| PyValueError::new_err(e.to_string()))?;
    let schema = warchest_index::table::schema(&opts.columns);
    let notes = crate::scan::notes_for(&opts);
    Ok(ScanStream::new(
        Box::new(FetchBatches {
            fetcher: Fetcher::new(rows, concurrency, max_length, max_gap),
            opts,
            schema,
            notes: notes.clone(),
        }),
        notes,
    ))
}
