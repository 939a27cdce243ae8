//! `ArchiveIterator`: warcio's iteration API over the library's reader.
//!
//! The iterator owns the reader (behind a mutex, so that the interpreter
//! lock can be released while it parses). A record hands out streams that
//! read the reader's current block; moving to the next record skips what
//! is left, as warcio does, and a stream of an earlier record then raises
//! instead of reading another record's bytes.

use std::fs::File;
use std::io::{BufReader, Read};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock};

use pyo3::exceptions::{PyStopIteration, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyList, PyTuple};
use warchest::archive::{Format, Reader};
use warchest::codec::{Decoder, DecoderOptions, Source};
use warchest::http::{self, HttpHead};
use warchest::warc::{ReaderOptions, RecordEnd, WarcHeader};
use warchest::{Error, Limits};
use warchest_index::table::may_have_http_head;

use crate::io::{Input, PyReader};
use crate::to_py;

/// What the iterator needs of a reader, whatever it reads from.
pub(crate) trait RecordSource: Send {
    /// The next record's header, parsed HTTP head (when asked and present)
    /// and the bytes looked at for a head that was not there.
    fn next(&mut self, parse_http: bool, limits: &Limits) -> warchest::Result<Option<Next>>;
    /// Reads the current record's block.
    fn read_block(&mut self, buf: &mut [u8]) -> std::io::Result<usize>;
    /// Finishes the current record.
    fn finish(&mut self) -> warchest::Result<Option<RecordEnd>>;
}

pub(crate) struct Next {
    header: WarcHeader,
    offset: u64,
    format: Format,
    http: Option<HttpHead>,
    prefix: Vec<u8>,
}

impl<S: Source + Send> RecordSource for Reader<S> {
    fn next(&mut self, parse_http: bool, limits: &Limits) -> warchest::Result<Option<Next>> {
        let Some(mut rec) = self.next_record()? else {
            return Ok(None);
        };
        let header = rec.header().clone();
        let offset = rec.location().offset;
        let format = rec.format();
        let (http, prefix) = if parse_http && may_have_http_head(&header) {
            match http::read_head_or_bytes(&mut rec.block(), limits).map_err(Error::from)? {
                Ok(h) => (Some(h), Vec::new()),
                Err(bytes) => (None, bytes),
            }
        } else {
            (None, Vec::new())
        };
        Ok(Some(Next {
            header,
            offset,
            format,
            http,
            prefix,
        }))
    }

    fn read_block(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        match self.current_block() {
            Some(mut b) => b.read(buf),
            None => Ok(0),
        }
    }

    fn finish(&mut self) -> warchest::Result<Option<RecordEnd>> {
        self.finish_record()
    }
}

/// The reader and the state of its current record.
struct Core {
    src: Box<dyn RecordSource>,
    /// Counts records handed out; a stream reads only while it matches.
    generation: u64,
    /// Bytes read while looking for an HTTP head that was not there.
    prefix: Vec<u8>,
    prefix_pos: usize,
    /// The current record's offset and, once finished, its end.
    offset: Option<u64>,
    end: Option<RecordEnd>,
    closed: bool,
}

impl Core {
    fn read(&mut self, generation: u64, buf: &mut [u8]) -> std::io::Result<usize> {
        if generation != self.generation {
            return Err(std::io::Error::other(
                "this record is no longer current: read its streams before moving to the next record",
            ));
        }
        if self.prefix_pos < self.prefix.len() {
            let rest = &self.prefix[self.prefix_pos..];
            let n = rest.len().min(buf.len());
            buf[..n].copy_from_slice(&rest[..n]);
            self.prefix_pos += n;
            return Ok(n);
        }
        if self.end.is_some() {
            return Ok(0);
        }
        self.src.read_block(buf)
    }
}

type Shared = Arc<Mutex<Core>>;

fn lock(core: &Shared) -> MutexGuard<'_, Core> {
    // A panic while the lock was held cannot leave the reader half-updated
    // in a way reading cares about (every step is one library call).
    core.lock().unwrap_or_else(|p| p.into_inner())
}

/// The current block of one record, as an owned reader.
struct BlockHandle {
    core: Shared,
    generation: u64,
}

impl Read for BlockHandle {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        lock(&self.core).read(self.generation, buf)
    }
}

/// Iterates over the records of a WARC, ARC or Web InfoMall file, like
/// warcio's `ArchiveIterator`.
///
/// `source` is a path, a URL (`s3://`, `gs://`, `az://`, `http(s)://`, read
/// by range requests) or a binary file object (seekable or not; gzip, zstd,
/// LZ4 or plain, sniffed from the bytes). `record_types` keeps only records
/// of those WARC-Type values; `parse_http` parses the HTTP head of requests,
/// responses and revisits (`http_headers`), so that `content_stream()` is
/// the payload. `strict` makes the first deviation from the format an
/// error instead of a recovery. `threads` is how many threads decode the
/// members of a compressed file given by path ahead of the iterator (0,
/// the default: one per core; 1: none); records come in file order
/// whatever it is.
#[pyclass(module = "warchest._warchest")]
pub(crate) struct ArchiveIterator {
    core: Shared,
    parse_http: bool,
    record_types: Option<Arc<Vec<String>>>,
    limits: Limits,
}

impl ArchiveIterator {
    fn with_source(
        src: Box<dyn RecordSource>,
        record_types: Option<Vec<String>>,
        parse_http: bool,
        limits: Limits,
    ) -> Self {
        ArchiveIterator {
            core: Arc::new(Mutex::new(Core {
                src,
                generation: 0,
                prefix: Vec::new(),
                prefix_pos: 0,
                offset: None,
                end: None,
                closed: false,
            })),
            parse_http,
            record_types: record_types
                .map(|v| Arc::new(v.into_iter().map(|t| t.to_ascii_lowercase()).collect())),
            limits,
        }
    }

    /// An iterator over a reader made elsewhere (the bytes of a fetched
    /// range), with the options `new` takes.
    #[cfg(feature = "remote")]
    pub(crate) fn over(
        src: Box<dyn RecordSource>,
        record_types: Option<Vec<String>>,
        parse_http: bool,
        strict: bool,
    ) -> Self {
        let limits = if strict {
            ReaderOptions::strict()
        } else {
            ReaderOptions::lenient()
        }
        .limits;
        ArchiveIterator::with_source(src, record_types, parse_http, limits)
    }
}

#[pymethods]
impl ArchiveIterator {
    #[new]
    #[pyo3(signature = (source, record_types = None, parse_http = true, strict = false, threads = 0))]
    fn new(
        py: Python<'_>,
        source: &Bound<'_, PyAny>,
        record_types: Option<Vec<String>>,
        parse_http: bool,
        strict: bool,
        threads: usize,
    ) -> PyResult<Self> {
        let mut opts = if strict {
            ReaderOptions::strict()
        } else {
            ReaderOptions::lenient()
        };
        let limits = opts.limits;
        opts.decoder.threads = match threads {
            0 => std::thread::available_parallelism().map_or(1, |n| n.get()),
            n => n,
        };
        let src: Box<dyn RecordSource> = match Input::from_py(source)? {
            Input::Path(p) => {
                let r = py
                    .detach(|| Reader::<Decoder<File>>::open_with(&p, opts))
                    .map_err(to_py)?;
                Box::new(r)
            }
            #[cfg(feature = "remote")]
            Input::Url(url) => {
                let r = py
                    .detach(|| crate::remote::open_reader(&url, opts))
                    .map_err(to_py)?;
                Box::new(r)
            }
            #[cfg(not(feature = "remote"))]
            Input::Url(url) => return Err(crate::io::no_remote(&url)),
            Input::File(obj, start) => {
                let mut opts = opts;
                opts.decoder = DecoderOptions {
                    start_offset: start,
                    // The threads read a file of their own: paths only.
                    threads: 1,
                    // Python reads are costly: large ones.
                    buffer_size: 1 << 20,
                    ..opts.decoder
                };
                let reader = PyReader::new(obj);
                let r = py
                    .detach(|| Reader::with_options(reader, opts))
                    .map_err(to_py)?;
                Box::new(r)
            }
        };
        Ok(ArchiveIterator::with_source(
            src,
            record_types,
            parse_http,
            limits,
        ))
    }

    fn __iter__(slf: PyRef<'_, Self>) -> PyRef<'_, Self> {
        slf
    }

    fn __next__(&self, py: Python<'_>) -> PyResult<Record> {
        let core = self.core.clone();
        let types = self.record_types.clone();
        let (parse_http, limits) = (self.parse_http, self.limits);
        let got = py.detach(move || {
            let mut c = lock(&core);
            if c.closed {
                return Ok(None);
            }
            loop {
                // Moving on: the previous record's streams go stale.
                c.generation += 1;
                c.prefix.clear();
                c.prefix_pos = 0;
                c.offset = None;
                c.end = None;
                let Some(n) = c.src.next(parse_http, &limits)? else {
                    return Ok(None);
                };
                if let Some(t) = &types {
                    let rt = n
                        .header
                        .record_type_str()
                        .unwrap_or_default()
                        .to_ascii_lowercase();
                    if !t.contains(&rt) {
                        continue;
                    }
                }
                c.prefix = n.prefix;
                c.offset = Some(n.offset);
                return Ok::<_, Error>(Some((n.header, n.http, n.offset, n.format, c.generation)));
            }
        });
        match got.map_err(to_py)? {
            None => Err(PyStopIteration::new_err(())),
            Some((header, http, offset, format, generation)) => Ok(Record {
                header: Arc::new(header),
                http: http.map(Arc::new),
                offset,
                format,
                generation,
                core: self.core.clone(),
                content: OnceLock::new(),
                raw: OnceLock::new(),
            }),
        }
    }

    /// The stored offset of the last record returned.
    fn get_record_offset(&self) -> PyResult<u64> {
        lock(&self.core)
            .offset
            .ok_or_else(|| PyValueError::new_err("no current record"))
    }

    /// The stored length of the last record returned. Skips what is left of
    /// it (as warcio does): its streams are at their end afterwards. `None`
    /// when the record shares its gzip member with the next one.
    fn get_record_length(&self, py: Python<'_>) -> PyResult<Option<u64>> {
        let core = self.core.clone();
        py.detach(move || {
            let mut c = lock(&core);
            if c.offset.is_none() {
                return Err(PyValueError::new_err("no current record"));
            }
            if c.end.is_none() {
                let end = c.src.finish().map_err(to_py)?;
                c.end = end;
            }
            Ok(c.end.and_then(|e| e.stored_len))
        })
    }

    /// Stops iterating; the file stays open until the iterator is dropped
    /// (a file object passed in is the caller's to close).
    fn close(&self) {
        let mut c = lock(&self.core);
        c.closed = true;
        c.generation += 1;
    }

    fn __enter__(slf: PyRef<'_, Self>) -> PyRef<'_, Self> {
        slf
    }

    #[pyo3(signature = (*_args))]
    fn __exit__(&self, _args: &Bound<'_, PyTuple>) -> bool {
        self.close();
        false
    }
}

/// One record: its WARC header, HTTP head, offset and streams.
#[pyclass(module = "warchest._warchest", frozen)]
pub(crate) struct Record {
    header: Arc<WarcHeader>,
    http: Option<Arc<HttpHead>>,
    offset: u64,
    format: Format,
    generation: u64,
    core: Shared,
    /// The streams handed out: the same object on every call (they buffer,
    /// so two would each hold bytes the other misses).
    content: OnceLock<Py<RecordStream>>,
    raw: OnceLock<Py<RecordStream>>,
}

#[pymethods]
impl Record {
    /// WARC-Type as written (`response`, `request`, `warcinfo`...).
    #[getter]
    fn rec_type(&self) -> String {
        self.header
            .record_type_str()
            .unwrap_or_default()
            .into_owned()
    }

    /// The WARC header fields.
    #[getter]
    fn rec_headers(&self) -> StatusAndHeaders {
        StatusAndHeaders {
            inner: Headers::Warc(self.header.clone()),
        }
    }

    /// The HTTP head, for requests, responses and revisits that have one
    /// (when the iterator parses HTTP); otherwise `None`.
    #[getter]
    fn http_headers(&self) -> Option<StatusAndHeaders> {
        self.http.as_ref().map(|h| StatusAndHeaders {
            inner: Headers::Http(h.clone()),
        })
    }

    /// The record's Content-Type.
    #[getter]
    fn content_type(&self) -> Option<String> {
        self.header.content_type().map(|c| c.into_owned())
    }

    /// The record's Content-Length (the block's length).
    #[getter]
    fn length(&self) -> Option<u64> {
        self.header.content_length()
    }

    /// `warc`, `arc` or `infomall`: the format of the file.
    #[getter]
    fn format(&self) -> &'static str {
        self.format.name()
    }

    /// The stored offset of the record (its gzip member's start).
    #[getter]
    fn offset(&self) -> u64 {
        self.offset
    }

    /// The block after the HTTP head (the whole block when there is
    /// none), as stored: transfer and content codings kept.
    #[getter]
    fn raw_stream(&self, py: Python<'_>) -> PyResult<Py<RecordStream>> {
        if let Some(s) = self.raw.get() {
            return Ok(s.clone_ref(py));
        }
        let s = Py::new(
            py,
            RecordStream::new(
                Box::new(BlockHandle {
                    core: self.core.clone(),
                    generation: self.generation,
                }),
                self.header.content_length(),
            ),
        )?;
        Ok(self.raw.get_or_init(|| s).clone_ref(py))
    }

    /// The payload: for HTTP records the body with chunking and content
    /// coding (gzip, deflate, br, zstd) removed, as warcio's
    /// `content_stream()`; otherwise the block. A coding warchest cannot
    /// decode, or a body that does not decode, is given as stored. Every
    /// call returns the same stream.
    fn content_stream(&self, py: Python<'_>) -> PyResult<Py<RecordStream>> {
        if let Some(s) = self.content.get() {
            return Ok(s.clone_ref(py));
        }
        let block = BlockHandle {
            core: self.core.clone(),
            generation: self.generation,
        };
        let hint = self.header.content_length();
        let stream = match &self.http {
            // No coding to undo: the block itself, without a second buffer.
            Some(head)
                if !head.transfer_encoding().is_empty() || !head.content_encoding().is_empty() =>
            {
                let body = BufReader::with_capacity(64 << 10, block);
                RecordStream::new(http::payload_reader_lenient(body, head), hint)
            }
            _ => RecordStream::new(Box::new(block), hint),
        };
        let s = Py::new(py, stream)?;
        Ok(self.content.get_or_init(|| s).clone_ref(py))
    }

    fn __repr__(&self) -> String {
        format!(
            "<Record {} {} at {}>",
            self.header.record_type_str().unwrap_or_default(),
            self.header.target_uri().unwrap_or_default(),
            self.offset
        )
    }
}

enum Headers {
    Warc(Arc<WarcHeader>),
    Http(Arc<HttpHead>),
}

impl Headers {
    fn fields(&self) -> &warchest::fields::Fields {
        match self {
            Headers::Warc(h) => h.fields(),
            Headers::Http(h) => h.fields(),
        }
    }
}

/// Header fields in order, like warcio's `StatusAndHeaders`: the WARC
/// header of a record or its HTTP head. Names match case-insensitively.
#[pyclass(module = "warchest._warchest", frozen)]
pub(crate) struct StatusAndHeaders {
    inner: Headers,
}

fn text(b: &[u8]) -> String {
    match std::str::from_utf8(b) {
        Ok(s) => s.to_owned(),
        Err(_) => b.iter().map(|&c| char::from(c)).collect(),
    }
}

impl StatusAndHeaders {
    /// A field's value as text; WARC-Target-URI without the `<...>` WARC 1.0
    /// writers (Wget) put around it, as warcio gives it.
    fn value(&self, f: &warchest::fields::Field<'_>) -> String {
        let v = f.value_str();
        if matches!(self.inner, Headers::Warc(_)) && f.is("WARC-Target-URI") {
            let t = v.trim();
            if let Some(inner) = t.strip_prefix('<').and_then(|s| s.strip_suffix('>')) {
                return inner.to_owned();
            }
        }
        v.into_owned()
    }

    /// [`StatusAndHeaders::value`], with encoded words decoded when
    /// `decode`.
    fn value_as(&self, f: &warchest::fields::Field<'_>, decode: bool) -> String {
        let v = self.value(f);
        if decode {
            warchest::fields::decode_encoded_words(&v).into_owned()
        } else {
            v
        }
    }
}

#[pymethods]
impl StatusAndHeaders {
    /// The first value of the field `name`, or `default_value`. With
    /// `decode=True`, RFC 2047 encoded words in it (`=?UTF-8?B?...?=`,
    /// WARC 1.1 section 4) are decoded; by default the value is as
    /// written, as warcio gives it.
    #[pyo3(signature = (name, default_value = None, decode = false))]
    fn get_header(
        &self,
        name: &str,
        default_value: Option<String>,
        decode: bool,
    ) -> Option<String> {
        self.inner
            .fields()
            .get(name)
            .map(|f| self.value_as(&f, decode))
            .or(default_value)
    }

    /// Every value of the field `name`, in order (`decode` as for
    /// `get_header`).
    #[pyo3(signature = (name, decode = false))]
    fn get_all(&self, name: &str, decode: bool) -> Vec<String> {
        self.inner
            .fields()
            .get_all(name)
            .map(|f| self.value_as(&f, decode))
            .collect()
    }

    /// The fields as `(name, value)` pairs, in order, repeats kept.
    #[getter]
    fn headers<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyList>> {
        let items: Vec<(String, String)> = self
            .inner
            .fields()
            .iter()
            .map(|f| (f.name_str().into_owned(), self.value(&f)))
            .collect();
        PyList::new(py, items)
    }

    /// `WARC/1.1` for WARC headers; the HTTP version (`HTTP/1.1`) of a
    /// response, the method of a request (as warcio has it).
    #[getter]
    fn protocol(&self) -> String {
        match &self.inner {
            Headers::Warc(h) => h.version().to_string(),
            Headers::Http(h) => match h.method() {
                Some(m) => text(m),
                None => h.version().map(text).unwrap_or_default(),
            },
        }
    }

    /// The status line after the protocol: `200 OK` for a response, the
    /// request target and version for a request; the version line for a
    /// WARC header.
    #[getter]
    fn statusline(&self) -> String {
        match &self.inner {
            Headers::Warc(h) => h.version().to_string(),
            Headers::Http(h) => {
                let line = text(h.start_line());
                match line.split_once(' ') {
                    Some((_, rest)) => rest.trim().to_owned(),
                    None => line,
                }
            }
        }
    }

    /// The HTTP status code as text (`"200"`), as warcio gives it: the
    /// first word of the status line, so for a request its target; `None`
    /// for WARC headers.
    fn get_statuscode(&self) -> Option<String> {
        match &self.inner {
            Headers::Http(h) => match h.status() {
                Some(s) => Some(s.to_string()),
                None => self.statusline().split(' ').next().map(str::to_owned),
            },
            Headers::Warc(_) => None,
        }
    }

    /// The header block as text, as stored.
    fn to_str(&self) -> String {
        match &self.inner {
            Headers::Warc(h) => text(h.as_bytes()),
            Headers::Http(h) => text(h.raw()),
        }
    }

    fn __contains__(&self, name: &str) -> bool {
        self.inner.fields().get(name).is_some()
    }

    fn __len__(&self) -> usize {
        self.inner.fields().len()
    }

    fn __iter__<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        self.headers(py)?.try_iter().map(|i| i.into_any())
    }

    fn __repr__(&self) -> String {
        format!("StatusAndHeaders({:?})", self.to_str())
    }
}

/// A stream over a record's block or payload: `read`, `readline`,
/// iteration by lines. Reads release the interpreter lock.
#[pyclass(module = "warchest._warchest", frozen)]
pub(crate) struct RecordStream {
    inner: Mutex<StreamState>,
}

struct StreamState {
    reader: Box<dyn Read + Send>,
    /// Bytes to reserve for a read to the end (the block's length, capped).
    hint: usize,
    buf: Vec<u8>,
    pos: usize,
    eof: bool,
}

/// Most bytes reserved ahead of a read to the end.
const MAX_HINT: u64 = 64 << 20;

// Buffer of readline (and most a read1 asks of the source at once).
const CHUNK: usize = 16 << 10;

impl StreamState {
    /// Refills the buffer when it is used up; false at the end.
    fn fill(&mut self) -> std::io::Result<bool> {
        if self.pos < self.buf.len() {
            return Ok(true);
        }
        if self.eof {
            return Ok(false);
        }
        self.buf.resize(CHUNK, 0);
        self.pos = 0;
        let n = loop {
            match self.reader.read(&mut self.buf) {
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                r => break r,
            }
        };
        let n = n.inspect_err(|_| self.buf.clear())?;
        self.buf.truncate(n);
        if n == 0 {
            self.eof = true;
        }
        Ok(n > 0)
    }

    /// Up to `limit` bytes (to the end without one); with `one`, what the
    /// buffer holds or one refill gives, as `read1` does. What `readline`
    /// buffered comes first; the rest is read straight into the result.
    fn read(&mut self, limit: Option<usize>, one: bool) -> std::io::Result<Vec<u8>> {
        let avail = &self.buf[self.pos..];
        let first = limit.map_or(avail.len(), |l| avail.len().min(l));
        let mut out = avail[..first].to_vec();
        self.pos += first;
        if self.eof || (one && !out.is_empty()) {
            return Ok(out);
        }
        match limit {
            None => {
                out.reserve(self.hint.saturating_sub(out.len()));
                self.reader.read_to_end(&mut out)?;
                self.eof = true;
            }
            Some(l) if out.len() < l => {
                let want = l - out.len();
                if one {
                    let start = out.len();
                    out.resize(start + want.min(CHUNK), 0);
                    let n = self.reader.read(&mut out[start..])?;
                    out.truncate(start + n);
                    self.eof = n == 0;
                } else {
                    let got = (&mut self.reader).take(want as u64).read_to_end(&mut out)?;
                    self.eof = got < want;
                }
            }
            Some(_) => {}
        }
        Ok(out)
    }

    fn readline(&mut self, limit: Option<usize>) -> std::io::Result<Vec<u8>> {
        let mut out = Vec::new();
        while limit.is_none_or(|l| out.len() < l) && self.fill()? {
            let avail = &self.buf[self.pos..];
            let room = limit.map_or(avail.len(), |l| avail.len().min(l - out.len()));
            let (take, done) = match avail[..room].iter().position(|&b| b == b'\n') {
                Some(i) => (i + 1, true),
                None => (room, false),
            };
            out.extend_from_slice(&avail[..take]);
            self.pos += take;
            if done {
                break;
            }
        }
        Ok(out)
    }
}

impl RecordStream {
    fn new(reader: Box<dyn Read + Send>, hint: Option<u64>) -> Self {
        // Reserving what the record announces saves growing the result
        // step by step; capped, as a length may lie.
        let hint = hint.map_or(0, |h| usize::try_from(h.min(MAX_HINT)).unwrap_or(0));
        RecordStream {
            inner: Mutex::new(StreamState {
                reader,
                hint,
                buf: Vec::new(),
                pos: 0,
                eof: false,
            }),
        }
    }

    fn with_state<T: Send>(
        &self,
        py: Python<'_>,
        f: impl FnOnce(&mut StreamState) -> std::io::Result<T> + Send,
    ) -> PyResult<T> {
        py.detach(|| {
            let mut s = self.inner.lock().unwrap_or_else(|p| p.into_inner());
            f(&mut s)
        })
        .map_err(|e| pyo3::exceptions::PyOSError::new_err(e.to_string()))
    }
}

fn size_arg(size: Option<i64>) -> Option<usize> {
    size.and_then(|s| usize::try_from(s).ok())
}

#[pymethods]
impl RecordStream {
    /// Up to `size` bytes (all that is left when `size` is -1 or `None`).
    #[pyo3(signature = (size = -1))]
    fn read<'py>(&self, py: Python<'py>, size: Option<i64>) -> PyResult<Bound<'py, PyBytes>> {
        let limit = size_arg(size);
        let v = self.with_state(py, move |s| s.read(limit, false))?;
        Ok(PyBytes::new(py, &v))
    }

    /// At most `size` bytes from one read of the source.
    #[pyo3(signature = (size = -1))]
    fn read1<'py>(&self, py: Python<'py>, size: Option<i64>) -> PyResult<Bound<'py, PyBytes>> {
        let limit = size_arg(size);
        let v = self.with_state(py, move |s| s.read(limit, true))?;
        Ok(PyBytes::new(py, &v))
    }

    /// The next line, its `\n` included (up to `size` bytes).
    #[pyo3(signature = (size = -1))]
    fn readline<'py>(&self, py: Python<'py>, size: Option<i64>) -> PyResult<Bound<'py, PyBytes>> {
        let limit = size_arg(size);
        let v = self.with_state(py, move |s| s.readline(limit))?;
        Ok(PyBytes::new(py, &v))
    }

    fn readable(&self) -> bool {
        true
    }

    fn seekable(&self) -> bool {
        false
    }

    fn writable(&self) -> bool {
        false
    }

    fn close(&self) {}

    #[getter]
    fn closed(&self) -> bool {
        false
    }

    fn __iter__(slf: PyRef<'_, Self>) -> PyRef<'_, Self> {
        slf
    }

    fn __next__<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyBytes>> {
        let line = self.readline(py, None)?;
        if line.as_bytes().is_empty() {
            return Err(PyStopIteration::new_err(()));
        }
        Ok(line)
    }
}
