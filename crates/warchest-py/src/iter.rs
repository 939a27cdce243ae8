//! `ArchiveIterator`: warcio's iteration API over the library's reader.
//!
//! The iterator owns the reader (behind a mutex, so that the interpreter
//! lock can be released while it parses). A record hands out streams that
//! read the reader's current block; moving to the next record skips what
//! is left, as warcio does, and a stream of an earlier record then raises
//! instead of reading another record's bytes.

use std::borrow::Cow;
use std::cell::RefCell;
use std::fs::File;
use std::io::{BufRead, BufReader, Read};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock, TryLockError};

use pyo3::exceptions::{PyStopIteration, PyValueError};
use pyo3::intern;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict, PyList, PyString, PyTuple};
use warchest::archive::{Format, FormatRecord, Reader};
use warchest::codec::{Decoder, DecoderOptions, Source};
use warchest::http::{self, HttpHead};
use warchest::recoveries::Recoveries;
use warchest::warc::{ReaderOptions, RecordEnd, RecordType, WarcHeader};
use warchest::{Error, Limits, Warning};
use warchest_index::table::may_have_http_head;

use crate::io::{Input, PyReader, Target};
use crate::pybytes::{self, Filling};
use crate::{io_to_py, to_py};

/// What the iterator needs of a reader, whatever it reads from.
pub(crate) trait RecordSource: Send {
    /// The next record's header, parsed HTTP head (when asked and present)
    /// and the bytes looked at for a head that was not there.
    fn next(&mut self, parse_http: bool, limits: &Limits) -> warchest::Result<Option<Next>>;
    /// Reads the current record's block.
    fn read_block(&mut self, buf: &mut [u8]) -> std::io::Result<usize>;
    /// Hands `take` the block bytes the reader holds (decoding more when
    /// it holds none) and consumes what it took: 0 at the block's end.
    fn block_chunk(&mut self, take: &mut dyn FnMut(&[u8]) -> usize) -> std::io::Result<usize>;
    /// Finishes the current record.
    fn finish(&mut self) -> warchest::Result<Option<RecordEnd>>;
    /// The caller reads payloads whole ([`Source::prefer_reads`]).
    fn prefer_reads(&mut self) -> warchest::Result<()> {
        Ok(())
    }
    /// Moves the lenient recoveries reported since the last call into
    /// `out` (the reader's and its decoder's, as `take_warnings` gives
    /// them).
    fn drain_warnings(&mut self, out: &mut Vec<Warning>);
}

pub(crate) struct Next {
    header: WarcHeader,
    offset: u64,
    format: Format,
    http: Option<HttpHead>,
    prefix: Vec<u8>,
    /// Block bytes left after the head (WARC records: the reader counts
    /// them down from Content-Length); `None` when the format does not say.
    remaining: Option<u64>,
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
            // A head in the block's first buffer (nearly all) is parsed
            // where it lies, only the head copied.
            match http::read_head_or_bytes(&mut rec.block(), limits).map_err(Error::from)? {
                Ok(h) => (Some(h), Vec::new()),
                Err(bytes) => (None, bytes),
            }
        } else {
            (None, Vec::new())
        };
        let remaining = match rec.as_format() {
            FormatRecord::Warc(r) => Some(r.remaining()),
            _ => None,
        };
        Ok(Some(Next {
            header,
            offset,
            format,
            http,
            prefix,
            remaining,
        }))
    }

    fn read_block(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        match self.current_block() {
            Some(mut b) => b.read(buf),
            None => Ok(0),
        }
    }

    fn block_chunk(&mut self, take: &mut dyn FnMut(&[u8]) -> usize) -> std::io::Result<usize> {
        let Some(mut b) = self.current_block() else {
            return Ok(0);
        };
        let chunk = b.fill_buf()?;
        if chunk.is_empty() {
            return Ok(0);
        }
        let n = take(chunk).min(chunk.len());
        b.consume(n);
        Ok(n)
    }

    fn finish(&mut self) -> warchest::Result<Option<RecordEnd>> {
        self.finish_record()
    }

    fn prefer_reads(&mut self) -> warchest::Result<()> {
        Reader::prefer_reads(self).map(|_| ())
    }

    fn drain_warnings(&mut self, out: &mut Vec<Warning>) {
        out.append(&mut self.take_warnings());
    }
}

/// The lenient recoveries of an iterator: every one counted by kind, the
/// first [`DEFAULT_KEPT`](warchest::recoveries::DEFAULT_KEPT) kept whole,
/// so a badly damaged file costs counts, not memory.
#[derive(Default)]
struct Recovered {
    tally: Recoveries,
    /// Scratch for draining the reader, reused.
    drained: Vec<Warning>,
}

impl Recovered {
    /// Takes what `src` reported since the last call.
    fn collect(&mut self, src: &mut dyn RecordSource) {
        src.drain_warnings(&mut self.drained);
        for w in self.drained.drain(..) {
            // One file: the iterator's.
            self.tally.add("", w);
        }
    }
}

/// A recovery as Python sees it: `kind`, `offset`, `record`, `record_id`,
/// `message`.
pub(crate) fn warning_dict<'py>(py: Python<'py>, w: &Warning) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    d.set_item(intern!(py, "kind"), w.kind.name())?;
    d.set_item(intern!(py, "offset"), w.offset)?;
    d.set_item(intern!(py, "record"), w.record)?;
    d.set_item(intern!(py, "record_id"), w.record_id.as_deref())?;
    d.set_item(intern!(py, "message"), w.message.as_str())?;
    Ok(d)
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
    /// The reader was told payloads are read whole
    /// ([`RecordSource::prefer_reads`]): once is enough.
    prefers_reads: bool,
    /// What the lenient reader recovered from so far. Taken from the
    /// reader on each record and when asked, so that its own list stays
    /// short and recoveries met by a stream are seen before the next one.
    recoveries: Recovered,
    /// The end was reached and its RecoveryWarning given, if any.
    told: bool,
}

fn stale() -> std::io::Error {
    std::io::Error::other(
        "this record is no longer current: read its streams before moving to the next record",
    )
}

impl Core {
    /// Takes the reader's new warnings into [`Core::recoveries`].
    fn collect_warnings(&mut self) {
        self.recoveries.collect(self.src.as_mut());
    }

    /// Block bytes of record `generation` handed to `take` where they lie
    /// (the bytes looked at for a head first): 0 at the end.
    fn chunk(
        &mut self,
        generation: u64,
        take: &mut dyn FnMut(&[u8]) -> usize,
    ) -> std::io::Result<usize> {
        if generation != self.generation {
            return Err(stale());
        }
        if self.prefix_pos < self.prefix.len() {
            let rest = &self.prefix[self.prefix_pos..];
            let n = take(rest).min(rest.len());
            self.prefix_pos += n;
            return Ok(n);
        }
        if self.end.is_some() {
            return Ok(0);
        }
        self.src.block_chunk(take)
    }

    fn read(&mut self, generation: u64, buf: &mut [u8]) -> std::io::Result<usize> {
        if generation != self.generation {
            return Err(stale());
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
    /// Set while the caller holds the interpreter lock: the reader is then
    /// only taken when free (its holder may be waiting for the interpreter
    /// lock), and `WouldBlock` says to try again with it released.
    holding: bool,
}

impl BlockHandle {
    fn new(core: Shared, generation: u64) -> Self {
        BlockHandle {
            core,
            generation,
            holding: false,
        }
    }
}

impl BlockHandle {
    /// The reader, locked; while the interpreter lock is held only when
    /// free (`WouldBlock` otherwise).
    fn core(&self) -> std::io::Result<MutexGuard<'_, Core>> {
        if !self.holding {
            return Ok(lock(&self.core));
        }
        match self.core.try_lock() {
            Ok(c) => Ok(c),
            Err(TryLockError::Poisoned(p)) => Ok(p.into_inner()),
            Err(TryLockError::WouldBlock) => Err(std::io::ErrorKind::WouldBlock.into()),
        }
    }

    /// [`Core::chunk`] of this record.
    fn chunk(&mut self, take: &mut dyn FnMut(&[u8]) -> usize) -> std::io::Result<usize> {
        self.core()?.chunk(self.generation, take)
    }

    /// Tells the reader that payloads are read whole
    /// ([`RecordSource::prefer_reads`]), once for the reader.
    fn prefer_reads(&mut self) -> std::io::Result<()> {
        let mut core = self.core()?;
        if !core.prefers_reads {
            core.src.prefer_reads().map_err(std::io::Error::from)?;
            core.prefers_reads = true;
        }
        Ok(())
    }
}

impl Read for BlockHandle {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        self.core()?.read(self.generation, buf)
    }
}

/// Iterates over the records of a WARC, ARC or Web InfoMall file, or of
/// the archive files inside a WACZ, local or by URL (one after the other,
/// each record's offset in its own file), like warcio's `ArchiveIterator`.
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
                prefers_reads: false,
                recoveries: Recovered::default(),
                told: false,
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

    /// `take` of the recoveries, the reader's new ones collected first,
    /// without the GIL (the reader's lock may be held by a reading thread).
    fn recovered<T: Send>(&self, py: Python<'_>, take: impl FnOnce(&Recoveries) -> T + Send) -> T {
        py.detach(|| {
            let mut c = lock(&self.core);
            c.collect_warnings();
            take(&c.recoveries.tally)
        })
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
            // A WACZ: the archive files inside, one after the other.
            // (Or one archive file of one, `FILE.wacz#archive/NAME`.)
            Input::Path(p) if crate::wacz::is_wacz_target(&Target::Path(p.clone())) => {
                let files = py
                    .detach(|| crate::wacz::archive_files_of(&Target::Path(p)))
                    .map_err(to_py)?;
                Box::new(crate::wacz::WaczSource::new(files, opts))
            }
            Input::Path(p) => {
                let r = py
                    .detach(|| Reader::<Decoder<File>>::open_with(&p, opts))
                    .map_err(to_py)?;
                Box::new(r)
            }
            // A WACZ by URL: its archive files, read by range where they lie.
            #[cfg(feature = "remote")]
            Input::Url(url) if crate::wacz::is_wacz_target(&Target::Url(url.clone())) => {
                let files = py
                    .detach(|| crate::wacz::archive_files_of(&Target::Url(url)))
                    .map_err(to_py)?;
                Box::new(crate::wacz::WaczSource::new(files, opts))
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
                let got = c.src.next(parse_http, &limits);
                // Before the error, if any: what was recovered from on the
                // way there counts too.
                c.collect_warnings();
                let Some(mut n) = got? else {
                    return Ok(None);
                };
                if let Some(t) = &types {
                    let rt = n.header.record_type_str().unwrap_or_default();
                    if !t.iter().any(|t| t.eq_ignore_ascii_case(&rt)) {
                        continue;
                    }
                }
                let left = n.remaining.map(|r| r.saturating_add(n.prefix.len() as u64));
                c.prefix = std::mem::take(&mut n.prefix);
                c.offset = Some(n.offset);
                let generation = c.generation;
                return Ok::<_, Error>(Some((n, left, generation)));
            }
        });
        match got.map_err(to_py)? {
            None => {
                // At the end, once: a RecoveryWarning of what was
                // recovered from (an error under an "error" filter).
                let told = py.detach(|| {
                    let mut c = lock(&self.core);
                    let first = !std::mem::replace(&mut c.told, true);
                    let t = &c.recoveries.tally;
                    first
                        .then(|| crate::scan::describe(t, &Recoveries::keeping(0)))
                        .flatten()
                });
                if let Some(told) = told {
                    crate::scan::warn_now(py, &told)?;
                }
                Err(PyStopIteration::new_err(()))
            }
            Some((n, left, generation)) => Ok(Record {
                header: Arc::new(n.header),
                http: n.http.map(Arc::new),
                offset: n.offset,
                format: n.format,
                generation,
                left,
                core: self.core.clone(),
                rec_headers: OnceLock::new(),
                http_headers: OnceLock::new(),
                content: OnceLock::new(),
                raw: OnceLock::new(),
            }),
        }
    }

    /// The stored offset of the last record returned.
    fn get_record_offset(&self, py: Python<'_>) -> PyResult<u64> {
        // Waited for with the interpreter lock released: another thread in
        // `__next__` may hold the reader and need that lock.
        py.detach(|| lock(&self.core).offset)
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
                let end = c.src.finish();
                c.collect_warnings();
                c.end = end.map_err(to_py)?;
            }
            Ok(c.end.and_then(|e| e.stored_len))
        })
    }

    /// The lenient recoveries met so far (reading records and their
    /// streams), in the order the reader reported them: each a dict with
    /// `kind` (the name `warchest -w` prints, e.g. `"bare-lf"`,
    /// `"damaged-member"`), `offset` (the stored offset where it was seen:
    /// a compressed member's start for damage to the member), `record` (the
    /// record's number from 0, or `None` when the recovery belongs to no
    /// record, as damage to a member), `record_id` (its WARC-Record-ID, when
    /// known) and `message`. Only the first 1000 are kept; `warning_counts`
    /// counts them all. With `strict=True` a deviation is an error
    /// instead.
    #[getter]
    fn warnings<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyList>> {
        let kept: Vec<Warning> = self.recovered(py, |r| r.kept().map(|(_, w)| w.clone()).collect());
        let list = PyList::empty(py);
        for w in &kept {
            list.append(warning_dict(py, w)?)?;
        }
        Ok(list)
    }

    /// Every lenient recovery met so far, counted by kind: a dict of kind
    /// name (as in `warnings`) to count, kinds in the order first met.
    /// Counts all of them, beyond the 1000 `warnings` keeps.
    #[getter]
    fn warning_counts<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let counts = self.recovered(py, |r| r.by_kind().to_vec());
        let d = PyDict::new(py);
        for (kind, n) in counts {
            d.set_item(kind.name(), n)?;
        }
        Ok(d)
    }

    /// Stops iterating; the file stays open until the iterator is dropped
    /// (a file object passed in is the caller's to close).
    fn close(&self, py: Python<'_>) {
        py.detach(|| {
            let mut c = lock(&self.core);
            c.closed = true;
            c.generation += 1;
        });
    }

    fn __enter__(slf: PyRef<'_, Self>) -> PyRef<'_, Self> {
        slf
    }

    #[pyo3(signature = (*_args))]
    fn __exit__(&self, py: Python<'_>, _args: &Bound<'_, PyTuple>) -> bool {
        self.close(py);
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
    /// Bytes of the block after the HTTP head, when the reader knows them
    /// (WARC): a read to the end then fills a `bytes` of that size.
    left: Option<u64>,
    core: Shared,
    /// The header objects, made on first use and then kept.
    rec_headers: OnceLock<Py<StatusAndHeaders>>,
    http_headers: OnceLock<Option<Py<StatusAndHeaders>>>,
    /// The streams handed out: the same object on every call (they buffer,
    /// so two would each hold bytes the other misses).
    content: OnceLock<Py<RecordStream>>,
    raw: OnceLock<Py<RecordStream>>,
}

/// A string Python keeps one copy of, for the WARC-Type values the
/// standard names (written in lower case, as nearly every writer does).
fn interned_type(py: Python<'_>, t: RecordType) -> Option<&Bound<'_, PyString>> {
    Some(match t {
        RecordType::Response => intern!(py, "response"),
        RecordType::Request => intern!(py, "request"),
        RecordType::Warcinfo => intern!(py, "warcinfo"),
        RecordType::Metadata => intern!(py, "metadata"),
        RecordType::Revisit => intern!(py, "revisit"),
        RecordType::Resource => intern!(py, "resource"),
        RecordType::Conversion => intern!(py, "conversion"),
        RecordType::Continuation => intern!(py, "continuation"),
        _ => return None,
    })
}

#[pymethods]
impl Record {
    /// WARC-Type as written (`response`, `request`, `warcinfo`...).
    #[getter]
    fn rec_type<'py>(&self, py: Python<'py>) -> Bound<'py, PyString> {
        let written = self.header.record_type_str().unwrap_or_default();
        let t = self.header.record_type();
        match interned_type(py, t) {
            Some(s) if written == t.as_str() => s.clone(),
            _ => PyString::new(py, &written),
        }
    }

    /// The WARC header fields (the same object on every call).
    #[getter]
    fn rec_headers(&self, py: Python<'_>) -> PyResult<Py<StatusAndHeaders>> {
        if let Some(h) = self.rec_headers.get() {
            return Ok(h.clone_ref(py));
        }
        let h = Py::new(
            py,
            StatusAndHeaders {
                inner: Headers::Warc(self.header.clone()),
            },
        )?;
        Ok(self.rec_headers.get_or_init(|| h).clone_ref(py))
    }

    /// The HTTP head, for requests, responses and revisits that have one
    /// (when the iterator parses HTTP); otherwise `None`. The same object
    /// on every call.
    #[getter]
    fn http_headers(&self, py: Python<'_>) -> PyResult<Option<Py<StatusAndHeaders>>> {
        if let Some(h) = self.http_headers.get() {
            return Ok(h.as_ref().map(|h| h.clone_ref(py)));
        }
        let h = match &self.http {
            Some(h) => Some(Py::new(
                py,
                StatusAndHeaders {
                    inner: Headers::Http(h.clone()),
                },
            )?),
            None => None,
        };
        Ok(self
            .http_headers
            .get_or_init(|| h)
            .as_ref()
            .map(|h| h.clone_ref(py)))
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
                Src::Block(BlockHandle::new(self.core.clone(), self.generation)),
                self.header.content_length(),
                self.left,
            ),
        )?;
        Ok(self.raw.get_or_init(|| s).clone_ref(py))
    }

    /// The payload: for HTTP records the body with chunking and content
    /// coding (gzip, deflate, br, zstd) removed, as warcio's
    /// `content_stream()`; otherwise the block. A coding warchest cannot
    /// decode, or a body that does not decode, is given as stored (the
    /// stream's `fallbacks` say so). Every call returns the same stream.
    fn content_stream(&self, py: Python<'_>) -> PyResult<Py<RecordStream>> {
        if let Some(s) = self.content.get() {
            return Ok(s.clone_ref(py));
        }
        let block = BlockHandle::new(self.core.clone(), self.generation);
        let hint = self.header.content_length();
        let stream = match &self.http {
            // No coding to undo: the block itself, without a second buffer.
            Some(head)
                if !head.transfer_encoding().is_empty() || !head.content_encoding().is_empty() =>
            {
                let body = BufReader::with_capacity(64 << 10, block);
                let (payload, notes) = http::payload_reader_lenient_noted(body, head);
                let mut s = RecordStream::new(Src::Decoded(payload), hint, None);
                s.notes = Some(notes);
                s
            }
            _ => RecordStream::new(Src::Block(block), hint, self.left),
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
    /// writers (Wget) put around it, as warcio gives it. Borrowed from the
    /// header unless it had to be unfolded or re-encoded.
    fn value<'a>(&self, f: &warchest::fields::Field<'a>) -> Cow<'a, str> {
        let v = f.value_str();
        if matches!(self.inner, Headers::Warc(_)) && f.is("WARC-Target-URI") {
            let t = v.trim();
            if t.len() >= 2 && t.starts_with('<') && t.ends_with('>') {
                let lead = v.len() - v.trim_start().len();
                let inner = lead + 1..lead + t.len() - 1;
                return match v {
                    Cow::Borrowed(b) => Cow::Borrowed(&b[inner]),
                    Cow::Owned(o) => Cow::Owned(o[inner].to_owned()),
                };
            }
        }
        v
    }

    /// [`StatusAndHeaders::value`], with encoded words decoded when
    /// `decode`.
    fn value_as<'a>(&self, f: &warchest::fields::Field<'a>, decode: bool) -> Cow<'a, str> {
        let v = self.value(f);
        if decode {
            Cow::Owned(warchest::fields::decode_encoded_words(&v).into_owned())
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
    fn get_header<'py>(
        &self,
        py: Python<'py>,
        name: &str,
        default_value: Option<Bound<'py, PyString>>,
        decode: bool,
    ) -> Option<Bound<'py, PyString>> {
        // The value goes straight from the header's bytes into the Python
        // string: no dict of the fields, no intermediate Rust string.
        match self.inner.fields().get(name) {
            Some(f) => Some(PyString::new(py, &self.value_as(&f, decode))),
            None => default_value,
        }
    }

    /// Every value of the field `name`, in order (`decode` as for
    /// `get_header`).
    #[pyo3(signature = (name, decode = false))]
    fn get_all(&self, name: &str, decode: bool) -> Vec<String> {
        self.inner
            .fields()
            .get_all(name)
            .map(|f| self.value_as(&f, decode).into_owned())
            .collect()
    }

    /// The fields as `(name, value)` pairs, in order, repeats kept.
    #[getter]
    fn headers<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyList>> {
        let fields = self.inner.fields();
        let items = fields.iter().map(|f| (f.name_str(), self.value(&f)));
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
/// iteration by lines. Reads release the interpreter lock. Damage met
/// while reading (a corrupt member, a record cut short) raises
/// `ArchiveError`, a failure of the source `OSError`.
#[pyclass(module = "warchest._warchest", frozen)]
pub(crate) struct RecordStream {
    inner: Mutex<StreamState>,
    /// What the lenient payload decoder fell back on (a decoded
    /// `content_stream()` only); shared with the decoder, so read without
    /// the stream's lock.
    notes: Option<http::PayloadNotes>,
}

/// What a stream reads: the block itself, or a decoder over it.
enum Src {
    Block(BlockHandle),
    Decoded(Box<dyn Read + Send>),
}

impl Read for Src {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        match self {
            Src::Block(b) => b.read(buf),
            Src::Decoded(r) => r.read(buf),
        }
    }
}

/// A reader that counts down the bytes it was said to hold.
struct Counted {
    inner: Src,
    /// Bytes left, when known exactly.
    left: Option<u64>,
}

impl Read for Counted {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.inner.read(buf)?;
        if let Some(l) = &mut self.left {
            *l = l.saturating_sub(n as u64);
        }
        Ok(n)
    }
}

struct StreamState {
    reader: Counted,
    /// Bytes to reserve for a read to the end (the block's length, capped).
    hint: usize,
    buf: Vec<u8>,
    pos: usize,
    eof: bool,
}

/// Most bytes reserved ahead of a read to the end, or allocated at once
/// for a payload of known length.
const MAX_HINT: u64 = 64 << 20;

// Buffer of readline (and most a read1 asks of the source at once).
const CHUNK: usize = 16 << 10;

/// Longest read of known length done holding the interpreter lock: the
/// bytes are then nearly always in the decoder's buffer already, and
/// copying them takes about as long as releasing the lock and taking it
/// back (see docs/performance-history.md, issue 20).
const HOLD_MAX: usize = 64 << 10;

/// Largest scratch buffer a thread keeps between reads of unknown length.
const SCRATCH_MAX: usize = 4 << 20;

thread_local! {
    /// Where a payload of unknown length (chunked, compressed) is gathered
    /// before it is copied into its `bytes`: one buffer per thread, reused
    /// from record to record instead of one allocation each.
    static SCRATCH: RefCell<Vec<u8>> = const { RefCell::new(Vec::new()) };
}

fn read_retrying(r: &mut impl Read, buf: &mut [u8]) -> std::io::Result<usize> {
    loop {
        match r.read(buf) {
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            r => return r,
        }
    }
}

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
        let n = read_retrying(&mut self.reader, &mut self.buf);
        let n = n.inspect_err(|_| self.buf.clear())?;
        self.buf.truncate(n);
        if n == 0 {
            self.eof = true;
        }
        Ok(n > 0)
    }

    /// How many bytes a read of `limit` (to the end without one) gives,
    /// when that is known (what is buffered plus what the source has left)
    /// and small enough to allocate at once.
    fn exact_len(&self, limit: Option<usize>) -> Option<usize> {
        let buffered = (self.buf.len() - self.pos) as u64;
        let have = if self.eof {
            buffered
        } else {
            buffered.saturating_add(self.reader.left?)
        };
        let n = limit.map_or(have, |l| have.min(l as u64));
        if n > MAX_HINT {
            return None;
        }
        usize::try_from(n).ok()
    }

    /// Fills `out`, buffered bytes first, then straight from where the
    /// reader holds the block; short only at the end. Resumable after an
    /// error (`WouldBlock`): `out` counts what is done.
    fn fill_raw(&mut self, out: &mut Filling<'_>) -> std::io::Result<()> {
        let n = out.push(&self.buf[self.pos..]);
        self.pos += n;
        // A payload read whole from the library's large-read size on tells
        // the reader so ([`BlockHandle::prefer_reads`]): a plain file's map
        // is then let go, as a library read that large lets it go.
        if out.room() >= warchest::framing::DIRECT_READ
            && let Src::Block(b) = &mut self.reader.inner
        {
            b.prefer_reads()?;
        }
        while out.room() > 0 && !self.eof {
            let m = match &mut self.reader.inner {
                Src::Block(b) => b.chunk(&mut |c| out.push(c))?,
                Src::Decoded(r) => {
                    let mut tmp = [0u8; 8 << 10];
                    let want = out.room().min(tmp.len());
                    let m = read_retrying(r, &mut tmp[..want])?;
                    out.push(&tmp[..m])
                }
            };
            if m == 0 {
                self.eof = true;
            }
            if let Some(l) = &mut self.reader.left {
                *l = l.saturating_sub(m as u64);
            }
        }
        Ok(())
    }

    /// [`StreamState::fill_raw`], then (for a read to the end) whether the
    /// source has more than it said.
    fn fill_to(&mut self, out: &mut Filling<'_>, to_end: bool) -> std::io::Result<bool> {
        self.fill_raw(out)?;
        Ok(to_end && out.room() == 0 && self.has_more()?)
    }

    /// Marks whether the interpreter lock is held (see [`BlockHandle`]).
    fn set_holding(&mut self, holding: bool) {
        if let Src::Block(b) = &mut self.reader.inner {
            b.holding = holding;
        }
    }

    /// After a read of the length the source was said to hold: whether
    /// it has more all the same (a bytes read is kept in the buffer).
    fn has_more(&mut self) -> std::io::Result<bool> {
        if self.pos < self.buf.len() {
            return Ok(true);
        }
        if self.eof {
            return Ok(false);
        }
        let mut probe = [0u8; 64];
        let n = read_retrying(&mut self.reader, &mut probe)?;
        if n == 0 {
            self.eof = true;
            return Ok(false);
        }
        self.buf.clear();
        self.buf.extend_from_slice(&probe[..n]);
        self.pos = 0;
        Ok(true)
    }

    /// Up to `limit` bytes (to the end without one) appended to `out`;
    /// with `one`, what the buffer holds or one refill gives, as `read1`
    /// does. What `readline` buffered comes first; the rest is read
    /// straight into `out`.
    fn read_into(
        &mut self,
        limit: Option<usize>,
        one: bool,
        out: &mut Vec<u8>,
    ) -> std::io::Result<()> {
        let base = out.len();
        let avail = &self.buf[self.pos..];
        let first = limit.map_or(avail.len(), |l| avail.len().min(l));
        out.extend_from_slice(&avail[..first]);
        self.pos += first;
        if self.eof || (one && first > 0) {
            return Ok(());
        }
        match limit {
            None => {
                out.reserve(self.hint.saturating_sub(first));
                self.reader.read_to_end(out)?;
                self.eof = true;
            }
            Some(l) if first < l => {
                let want = l - first;
                if one {
                    let start = out.len();
                    out.resize(start + want.min(CHUNK), 0);
                    let n = read_retrying(&mut self.reader, &mut out[start..])?;
                    out.truncate(start + n);
                    self.eof = n == 0;
                } else {
                    let got = (&mut self.reader).take(want as u64).read_to_end(out)?;
                    self.eof = got < want;
                }
            }
            Some(_) => {}
        }
        debug_assert!(limit.is_none_or(|l| out.len() - base <= l));
        Ok(())
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
    /// A stream over `reader`; `hint` is the record's Content-Length, `left`
    /// the exact number of bytes `reader` holds when known.
    fn new(reader: Src, hint: Option<u64>, left: Option<u64>) -> Self {
        // Reserving what the record announces saves growing the result
        // step by step; capped, as a length may lie.
        let hint = hint.map_or(0, |h| usize::try_from(h.min(MAX_HINT)).unwrap_or(0));
        RecordStream {
            inner: Mutex::new(StreamState {
                reader: Counted {
                    inner: reader,
                    left,
                },
                hint,
                buf: Vec::new(),
                pos: 0,
                eof: false,
            }),
            notes: None,
        }
    }

    fn lock(&self) -> MutexGuard<'_, StreamState> {
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn with_state<T: Send>(
        &self,
        py: Python<'_>,
        f: impl FnOnce(&mut StreamState) -> std::io::Result<T> + Send,
    ) -> PyResult<T> {
        py.detach(|| f(&mut self.lock())).map_err(io_to_py)
    }

    /// `read` and `read1`. When the length is known, the `bytes` object is
    /// made that long and filled in place: the payload is copied once, from
    /// the decoder's buffer into the object Python gets. Otherwise it is
    /// gathered in the thread's scratch buffer and copied from there.
    fn read_bytes<'py>(
        &self,
        py: Python<'py>,
        limit: Option<usize>,
        one: bool,
    ) -> PyResult<Bound<'py, PyBytes>> {
        // A stream busy in another thread: the general path (which waits
        // for it with the interpreter lock released).
        let exact = match self.inner.try_lock() {
            Ok(s) if !one => s.exact_len(limit),
            _ => None,
        };
        if let Some(n) = exact {
            let to_end = limit.is_none();
            let (b, more) = pybytes::new_filled(py, n, |out| {
                // A short read of bytes the decoder already holds is a
                // copy shorter than releasing and taking back the
                // interpreter lock: done holding it, when nothing waits.
                if n <= HOLD_MAX
                    && let Ok(mut s) = self.inner.try_lock()
                {
                    s.set_holding(true);
                    let r = s.fill_to(out, to_end);
                    s.set_holding(false);
                    match r {
                        Ok(more) => return Ok(more),
                        Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {}
                        Err(e) => return Err(io_to_py(e)),
                    }
                }
                py.detach(|| self.lock().fill_to(out, to_end))
                    .map_err(io_to_py)
            })?;
            if !more {
                return Ok(b);
            }
            // Against what the reader said, longer: rare, so copied once
            // more.
            let mut v = b.as_bytes().to_vec();
            self.with_state(py, |s| s.read_into(None, false, &mut v).map(|_| v))
                .map(|v| PyBytes::new(py, &v))
        } else {
            let mut v = SCRATCH.with(|c| std::mem::take(&mut *c.borrow_mut()));
            v.clear();
            let v = self.with_state(py, move |s| s.read_into(limit, one, &mut v).map(|_| v))?;
            let b = PyBytes::new(py, &v);
            if v.capacity() <= SCRATCH_MAX {
                SCRATCH.with(|c| *c.borrow_mut() = v);
            }
            Ok(b)
        }
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
        self.read_bytes(py, size_arg(size), false)
    }

    /// At most `size` bytes from one read of the source.
    #[pyo3(signature = (size = -1))]
    fn read1<'py>(&self, py: Python<'py>, size: Option<i64>) -> PyResult<Bound<'py, PyBytes>> {
        self.read_bytes(py, size_arg(size), true)
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

    /// What the lenient payload decoding fell back on so far, as names
    /// (`"not-chunked"`, `"content-coding-undecoded"`, `"cut-short"`...,
    /// in the order `warchest derive` lists them): the bytes then differ
    /// from a payload decoded as its HTTP head says (they are what warcio
    /// gives). Empty for a payload decoded as its head says and for a
    /// stream without codings to undo (`raw_stream`, a record without
    /// HTTP codings). Complete once the stream has been read to its end.
    #[getter]
    fn fallbacks(&self) -> Vec<&'static str> {
        self.notes
            .as_ref()
            .map(|n| n.get().iter().map(|f| f.name()).collect())
            .unwrap_or_default()
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
