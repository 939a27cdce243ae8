//! Records as Arrow record batches: the table the Python `scan` function
//! and the Spark data source hand out, built column by column in Rust with
//! no per-record Python object.
//!
//! One row per record (of the selected types). Column names follow Common
//! Crawl's cc-index table where the two overlap (`warc_filename`,
//! `warc_record_offset`, `warc_record_length`); the other WARC columns are
//! the field names in snake case. Every column is nullable except
//! `warc_filename`. Text is UTF-8, or ISO-8859-1 read as text when a value
//! is not UTF-8 (no byte is lost). See docs/python.md for the schema.
//!
//! Memory is bounded: a batch holds at most `batch_rows` rows and about
//! `batch_bytes` bytes of payload and headers; a payload is cut at
//! `max_payload` bytes (`payload_truncated` says so). Only what the chosen
//! columns need is read: without HTTP or payload columns no block is read.
//!
//! Byte ranges ([`Part`], [`Scanner::open_range`]): a range of an
//! uncompressed file gives the records between the record boundaries at or
//! after its ends, with offsets in the whole file (see [`warchest::split`]).
//!
//! Errors: with [`ScanOptions::skip_errors`] a file that cannot be opened
//! or read on gives one row whose `error` column says why (its offset is
//! where reading stopped), and the scan goes on with the next file; a
//! reader error ends the file because readers are fused after an error.

use std::fs::File;
use std::io::{self, BufRead, Read, Seek, SeekFrom};
use std::ops::Range;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use arrow_array::builder::{
    BinaryBuilder, BooleanBuilder, Int16Builder, Int64Builder, StringBuilder,
    TimestampMicrosecondBuilder,
};
use arrow_array::{ArrayRef, ListArray, RecordBatch, StructArray};
use arrow_buffer::{NullBuffer, OffsetBuffer, ScalarBuffer};
use arrow_schema::{
    ArrowError, DataType, Field, Fields as ArrowFields, Schema, SchemaRef, TimeUnit,
};

use warchest::archive::Reader;
use warchest::codec::{Decoder, DecoderOptions, Source};
use warchest::error::{Error, ErrorKind, Result};
use warchest::fields::Fields;
use warchest::http::{self, HttpHead};
use warchest::split;
use warchest::warc::{self, ReaderOptions, WarcHeader};

/// A column of the record table.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Column {
    /// The file name as given to the scanner (string, never null).
    WarcFilename,
    /// Stored offset of the record: the start of its gzip member (int64).
    WarcRecordOffset,
    /// Stored length of the record (int64; null when it shares its gzip
    /// member with the next record).
    WarcRecordLength,
    /// WARC-Type as written.
    WarcType,
    /// WARC-Record-ID as written.
    WarcRecordId,
    /// WARC-Date (timestamp, microseconds, UTC; null when invalid).
    WarcDate,
    /// WARC-Target-URI (`<...>` removed).
    WarcTargetUri,
    /// Content-Type of the record.
    WarcContentType,
    /// Content-Length of the record (int64).
    WarcContentLength,
    /// WARC-IP-Address.
    WarcIpAddress,
    /// WARC-Payload-Digest as written.
    WarcPayloadDigest,
    /// WARC-Block-Digest as written.
    WarcBlockDigest,
    /// WARC-Identified-Payload-Type.
    WarcIdentifiedPayloadType,
    /// WARC-Truncated.
    WarcTruncated,
    /// Every WARC header field in order, repeats kept
    /// (list of struct `name`, `value`).
    WarcHeaders,
    /// HTTP status code of responses (int16).
    HttpStatus,
    /// HTTP method of requests.
    HttpMethod,
    /// HTTP Content-Type.
    HttpContentType,
    /// Every HTTP header field in order (list of struct `name`, `value`).
    HttpHeaders,
    /// The payload (binary): for HTTP records the body with transfer and
    /// content codings removed (as warcio's `content_stream()`), otherwise
    /// the block. Not in the default columns.
    Payload,
    /// True when the payload was cut at `max_payload` bytes (bool). Not in
    /// the default columns.
    PayloadTruncated,
    /// Why the row is incomplete or the file stopped; null for good rows.
    Error,
}

impl Column {
    /// Every column, in table order.
    pub const ALL: [Column; 22] = [
        Column::WarcFilename,
        Column::WarcRecordOffset,
        Column::WarcRecordLength,
        Column::WarcType,
        Column::WarcRecordId,
        Column::WarcDate,
        Column::WarcTargetUri,
        Column::WarcContentType,
        Column::WarcContentLength,
        Column::WarcIpAddress,
        Column::WarcPayloadDigest,
        Column::WarcBlockDigest,
        Column::WarcIdentifiedPayloadType,
        Column::WarcTruncated,
        Column::WarcHeaders,
        Column::HttpStatus,
        Column::HttpMethod,
        Column::HttpContentType,
        Column::HttpHeaders,
        Column::Payload,
        Column::PayloadTruncated,
        Column::Error,
    ];

    /// The default columns: all but the payload ones.
    pub fn defaults() -> Vec<Column> {
        Column::ALL
            .into_iter()
            .filter(|c| !matches!(c, Column::Payload | Column::PayloadTruncated))
            .collect()
    }

    /// The column's name.
    pub fn name(self) -> &'static str {
        match self {
            Column::WarcFilename => "warc_filename",
            Column::WarcRecordOffset => "warc_record_offset",
            Column::WarcRecordLength => "warc_record_length",
            Column::WarcType => "warc_type",
            Column::WarcRecordId => "warc_record_id",
            Column::WarcDate => "warc_date",
            Column::WarcTargetUri => "warc_target_uri",
            Column::WarcContentType => "warc_content_type",
            Column::WarcContentLength => "warc_content_length",
            Column::WarcIpAddress => "warc_ip_address",
            Column::WarcPayloadDigest => "warc_payload_digest",
            Column::WarcBlockDigest => "warc_block_digest",
            Column::WarcIdentifiedPayloadType => "warc_identified_payload_type",
            Column::WarcTruncated => "warc_truncated",
            Column::WarcHeaders => "warc_headers",
            Column::HttpStatus => "http_status",
            Column::HttpMethod => "http_method",
            Column::HttpContentType => "http_content_type",
            Column::HttpHeaders => "http_headers",
            Column::Payload => "payload",
            Column::PayloadTruncated => "payload_truncated",
            Column::Error => "error",
        }
    }

    /// The column named `name` (exactly as [`name`](Column::name) gives it).
    pub fn from_name(name: &str) -> Option<Column> {
        Column::ALL.into_iter().find(|c| c.name() == name)
    }

    /// The column's Arrow field.
    pub fn field(self) -> Field {
        let dt = match self {
            Column::WarcRecordOffset | Column::WarcRecordLength | Column::WarcContentLength => {
                DataType::Int64
            }
            Column::WarcDate => DataType::Timestamp(TimeUnit::Microsecond, Some("UTC".into())),
            Column::WarcHeaders | Column::HttpHeaders => {
                DataType::List(Arc::new(Field::new("item", pair_type(), true)))
            }
            Column::HttpStatus => DataType::Int16,
            Column::Payload => DataType::Binary,
            Column::PayloadTruncated => DataType::Boolean,
            _ => DataType::Utf8,
        };
        Field::new(self.name(), dt, self != Column::WarcFilename)
    }

    fn needs_http(self) -> bool {
        matches!(
            self,
            Column::HttpStatus
                | Column::HttpMethod
                | Column::HttpContentType
                | Column::HttpHeaders
                | Column::Payload
                | Column::PayloadTruncated
        )
    }
}

fn pair_fields() -> ArrowFields {
    ArrowFields::from(vec![
        Field::new("name", DataType::Utf8, false),
        Field::new("value", DataType::Utf8, false),
    ])
}

fn pair_type() -> DataType {
    DataType::Struct(pair_fields())
}

/// The Arrow schema of a table with `columns`.
pub fn schema(columns: &[Column]) -> SchemaRef {
    Arc::new(Schema::new(
        columns.iter().map(|c| c.field()).collect::<Vec<_>>(),
    ))
}

pub use warchest::archive::may_have_http_head;

/// How a [`Scanner`] reads and what it builds.
#[derive(Debug, Clone)]
pub struct ScanOptions {
    /// The columns, in this order (default: [`Column::defaults`]).
    pub columns: Vec<Column>,
    /// Record types to keep, compared case-insensitively with WARC-Type;
    /// `None` keeps every record.
    pub record_types: Option<Vec<String>>,
    /// Most rows in a batch (default 8192).
    pub batch_rows: usize,
    /// A batch is handed out once its payloads and headers pass this many
    /// bytes (default 64 MiB), far below Arrow's 2 GiB per column.
    pub batch_bytes: usize,
    /// Most payload bytes kept per record (default 32 MiB).
    pub max_payload: u64,
    /// Report a broken file as a row with `error` set and go on (default
    /// false: the scan stops with the error).
    pub skip_errors: bool,
    /// Reader options (strictness, limits).
    pub reader: ReaderOptions,
}

impl Default for ScanOptions {
    fn default() -> Self {
        ScanOptions {
            columns: Column::defaults(),
            record_types: None,
            batch_rows: 8192,
            batch_bytes: 64 << 20,
            max_payload: 32 << 20,
            skip_errors: false,
            reader: ReaderOptions::default(),
        }
    }
}

impl ScanOptions {
    /// Sets the columns from their names.
    ///
    /// # Errors
    /// [`ErrorKind::Usage`] naming an unknown column.
    pub fn columns_by_name<I, T>(mut self, names: I) -> Result<Self>
    where
        I: IntoIterator<Item = T>,
        T: AsRef<str>,
    {
        let mut cols = Vec::new();
        for n in names {
            let n = n.as_ref();
            let c = Column::from_name(n).ok_or_else(|| {
                Error::new(ErrorKind::Usage(format!(
                    "unknown column {n:?}; the columns are {}",
                    Column::ALL.map(Column::name).join(", ")
                )))
            })?;
            cols.push(c);
        }
        self.columns = cols;
        Ok(self)
    }

    fn wants(&self, header: &WarcHeader) -> bool {
        let Some(types) = &self.record_types else {
            return true;
        };
        let t = header.record_type_str();
        let t = t.as_deref().unwrap_or("");
        types.iter().any(|k| k.eq_ignore_ascii_case(t))
    }
}

/// Reads one file into record batches.
pub struct Scanner<S> {
    reader: Option<Reader<S>>,
    /// An error to report as the file's first row (opening failed).
    pending: Option<Error>,
    filename: String,
    opts: ScanOptions,
    schema: SchemaRef,
    needs_http: bool,
    done: bool,
    /// Records at or after this offset belong to the next range.
    stop: u64,
}

impl Scanner<Decoder<File>> {
    /// A scanner over the file at `path`. Opening errors surface on the
    /// first batch (as a row with `skip_errors`).
    pub fn open(path: impl AsRef<Path>, opts: ScanOptions) -> Self {
        let path = path.as_ref();
        let name = path.to_string_lossy().into_owned();
        match Reader::open_with(path, opts.reader.clone()) {
            Ok(r) => Scanner::new(r, name, opts),
            Err(e) => {
                let mut s = Scanner::<Decoder<File>>::empty(name, opts);
                s.pending = Some(e);
                s
            }
        }
    }

    /// A scanner over the records of `range` of the file at `path`: those
    /// from the first record boundary at or after `range.start` up to the
    /// first at or after `range.end` (see [`warchest::split`]), with offsets
    /// in the whole file. A compressed file is not split: the range that
    /// starts at 0 gives all of it, any other range nothing. Errors surface
    /// as with [`Scanner::open`].
    pub fn open_range(path: impl AsRef<Path>, range: Range<u64>, opts: ScanOptions) -> Self {
        let path = path.as_ref();
        let name = path.to_string_lossy().into_owned();
        match open_range_reader(path, range, &opts.reader) {
            Ok(Some((r, stop))) => {
                let mut s = Scanner::new(r, name, opts);
                s.stop = stop;
                s
            }
            Ok(None) => Scanner::<Decoder<File>>::empty(name, opts),
            Err(e) => {
                let mut s = Scanner::<Decoder<File>>::empty(name, opts);
                s.pending = Some(e);
                s
            }
        }
    }
}

/// A reader positioned at the first record of `range`, and the offset
/// where the range's records stop; `None` when it has none.
fn open_range_reader(
    path: &Path,
    range: Range<u64>,
    opts: &ReaderOptions,
) -> Result<Option<(Reader<Decoder<File>>, u64)>> {
    let (mut f, opts) = warc::open_file(path, opts.clone())?;
    let located = |e: Error| e.in_file(path);
    let mut head = [0u8; 8];
    let n = warchest::io::read_up_to(&mut f, &mut head).map_err(|e| located(e.into()))?;
    if split::is_compressed(&head[..n]) {
        if range.start != 0 || range.end == 0 {
            return Ok(None);
        }
        return Reader::open_with(path, opts).map(|r| Some((r, u64::MAX)));
    }
    let format = split::sniff_format(&mut f).map_err(located)?;
    let Some(b) = split::bounds(&mut f, format, range, &opts).map_err(located)? else {
        return Ok(None);
    };
    if b.start == 0 {
        // As a whole-file read begins, leading damage included.
        return Reader::open_with(path, opts).map(|r| Some((r, b.end)));
    }
    f.seek(SeekFrom::Start(b.start))
        .map_err(|e| located(e.into()))?;
    let dopts = DecoderOptions {
        start_offset: b.start,
        ..opts.decoder.clone()
    };
    let src = Decoder::new_seekable(f, dopts.clone()).map_err(|e| located(e.into()))?;
    let opts = ReaderOptions {
        decoder: dopts,
        ..opts
    };
    Ok(Some((Reader::from_source_as(src, opts, format), b.end)))
}

impl<S: Source + Send> Scanner<S> {
    /// A scanner over an open reader; `filename` fills `warc_filename`.
    pub fn new(reader: Reader<S>, filename: impl Into<String>, opts: ScanOptions) -> Self {
        let mut s = Scanner::empty(filename.into(), opts);
        s.reader = Some(reader);
        s
    }

    /// A scanner whose file could not be opened: `error` is its first
    /// batch (a row with `error` set under `skip_errors`), as with
    /// [`Scanner::open`]. For sources opened elsewhere (remote objects).
    pub fn failed(filename: impl Into<String>, error: Error, opts: ScanOptions) -> Self {
        let mut s = Scanner::empty(filename.into(), opts);
        s.pending = Some(error);
        s
    }

    /// Stops before the first record at or after `offset`, as the range
    /// scanners of [`Scanner::open_range`] do (the records from there on
    /// belong to the next range of a split file).
    #[must_use]
    pub fn stop_at(mut self, offset: u64) -> Self {
        self.stop = offset;
        self
    }

    fn empty(filename: String, opts: ScanOptions) -> Self {
        Scanner {
            reader: None,
            pending: None,
            filename,
            schema: schema(&opts.columns),
            needs_http: opts.columns.iter().any(|c| c.needs_http()),
            opts,
            done: false,
            stop: u64::MAX,
        }
    }

    /// The schema of the batches.
    pub fn schema(&self) -> SchemaRef {
        self.schema.clone()
    }

    /// The next batch; `None` at the end of the file.
    ///
    /// # Errors
    /// Without `skip_errors`, the first error reading the file.
    pub fn next_batch(&mut self) -> Result<Option<RecordBatch>> {
        if self.done {
            return Ok(None);
        }
        let mut b = BatchBuilder::new(&self.opts.columns, self.opts.batch_rows.min(1024));
        if let Some(e) = self.pending.take() {
            self.done = true;
            if !self.opts.skip_errors {
                return Err(e);
            }
            b.error_row(&self.filename, &e);
            return b.finish(&self.schema).map(Some);
        }
        while b.rows < self.opts.batch_rows.max(1) && b.bytes < self.opts.batch_bytes {
            let Some(reader) = self.reader.as_mut() else {
                self.done = true;
                break;
            };
            let row = read_row(
                reader,
                &mut b,
                &self.opts,
                self.needs_http,
                &self.filename,
                self.stop,
            );
            match row {
                Ok(true) => {}
                Ok(false) => {
                    self.done = true;
                    break;
                }
                Err(e) => {
                    self.done = true;
                    if !self.opts.skip_errors {
                        return Err(e);
                    }
                    b.error_row(&self.filename, &e);
                    break;
                }
            }
        }
        if b.rows == 0 {
            return Ok(None);
        }
        b.finish(&self.schema).map(Some)
    }
}

impl<S: Source + Send> Iterator for Scanner<S> {
    type Item = Result<RecordBatch>;

    fn next(&mut self) -> Option<Self::Item> {
        self.next_batch().transpose()
    }
}

/// A file to scan: all of it, or a byte range of it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Part {
    /// The file.
    pub path: PathBuf,
    /// The byte range ([`Scanner::open_range`]); `None` for the whole file.
    pub range: Option<Range<u64>>,
}

impl From<PathBuf> for Part {
    fn from(path: PathBuf) -> Self {
        Part { path, range: None }
    }
}

/// Reads files one after another into record batches of one schema.
pub struct FilesScanner {
    paths: std::collections::VecDeque<Part>,
    current: Option<Scanner<Decoder<File>>>,
    opts: ScanOptions,
    schema: SchemaRef,
}

impl FilesScanner {
    /// A scanner over `paths`, read in order.
    pub fn new(paths: impl IntoIterator<Item = std::path::PathBuf>, opts: ScanOptions) -> Self {
        FilesScanner::from_parts(paths.into_iter().map(Part::from), opts)
    }

    /// A scanner over `parts` (whole files or byte ranges), read in order.
    pub fn from_parts(parts: impl IntoIterator<Item = Part>, opts: ScanOptions) -> Self {
        FilesScanner {
            paths: parts.into_iter().collect(),
            current: None,
            schema: schema(&opts.columns),
            opts,
        }
    }

    /// The schema of the batches.
    pub fn schema(&self) -> SchemaRef {
        self.schema.clone()
    }

    /// The next batch; `None` after the last file.
    ///
    /// # Errors
    /// As [`Scanner::next_batch`].
    pub fn next_batch(&mut self) -> Result<Option<RecordBatch>> {
        loop {
            if let Some(s) = self.current.as_mut() {
                if let Some(b) = s.next_batch()? {
                    return Ok(Some(b));
                }
                self.current = None;
            }
            let Some(p) = self.paths.pop_front() else {
                return Ok(None);
            };
            let opts = self.opts.clone();
            self.current = Some(match p.range {
                Some(r) => Scanner::open_range(&p.path, r, opts),
                None => Scanner::open(&p.path, opts),
            });
        }
    }
}

impl Iterator for FilesScanner {
    type Item = std::result::Result<RecordBatch, ArrowError>;

    fn next(&mut self) -> Option<Self::Item> {
        self.next_batch()
            .map_err(|e| ArrowError::ExternalError(Box::new(e)))
            .transpose()
    }
}

impl arrow_array::RecordBatchReader for FilesScanner {
    fn schema(&self) -> SchemaRef {
        self.schema.clone()
    }
}

/// Reads the next record of the kept types into `b`; `Ok(false)` at the
/// end. A failure inside a record after its header still gives its row,
/// with `error` set, and then the error.
fn read_row<S: Source + Send>(
    reader: &mut Reader<S>,
    b: &mut BatchBuilder,
    opts: &ScanOptions,
    needs_http: bool,
    filename: &str,
    stop: u64,
) -> Result<bool> {
    loop {
        let next = match reader.next_record() {
            Ok(n) => n,
            // What goes wrong at or after the stop is the next range's.
            Err(e) if e.position().is_some_and(|p| p.offset >= stop) => return Ok(false),
            Err(e) => return Err(e),
        };
        let Some(mut rec) = next else {
            return Ok(false);
        };
        if rec.location().offset >= stop {
            return Ok(false);
        }
        if !opts.wants(rec.header()) {
            continue;
        }
        let loc = rec.location();
        b.header_values(rec.header());
        let mut failure: Option<Error> = None;
        if needs_http {
            let candidate = may_have_http_head(rec.header());
            let limits = opts.reader.limits;
            let mut block = rec.block();
            let got = http_values(&mut block, candidate, &limits, opts.max_payload);
            match got {
                Ok(v) => b.http_values(v),
                Err(e) => {
                    b.http_values(HttpValues::default());
                    failure = Some(Error::from(e));
                }
            }
        }
        let end = match failure {
            Some(_) => None,
            None => match rec.finish() {
                Ok(e) => Some(e),
                Err(e) => {
                    failure = Some(e);
                    None
                }
            },
        };
        b.end_values(
            filename,
            loc.offset,
            end.and_then(|e| e.stored_len),
            failure.as_ref().map(|e| e.to_string()).as_deref(),
        );
        return match failure {
            Some(e) => Err(e),
            None => Ok(true),
        };
    }
}

#[derive(Default)]
struct HttpValues {
    head: Option<HttpHead>,
    payload: Option<Vec<u8>>,
    truncated: bool,
}

/// Reads `n` bytes at most from `r`, and whether more followed.
fn read_capped(r: &mut impl Read, prefix: Vec<u8>, max: u64) -> io::Result<(Vec<u8>, bool)> {
    let mut out = prefix;
    let room = max.saturating_sub(out.len() as u64);
    r.by_ref()
        .take(room.saturating_add(1))
        .read_to_end(&mut out)?;
    let cap = usize::try_from(max).unwrap_or(usize::MAX);
    let truncated = out.len() > cap;
    out.truncate(cap);
    Ok((out, truncated))
}

fn http_values<R: BufRead + Send>(
    block: &mut R,
    candidate: bool,
    limits: &warchest::Limits,
    max_payload: u64,
) -> io::Result<HttpValues> {
    let (head, prefix) = if candidate {
        match http::read_head_or_bytes(block, limits)? {
            Ok(h) => (Some(h), Vec::new()),
            Err(bytes) => (None, bytes),
        }
    } else {
        (None, Vec::new())
    };
    let (payload, truncated) = match &head {
        Some(h) => {
            let mut r = http::payload_reader_lenient(&mut *block, h);
            read_capped(&mut r, Vec::new(), max_payload)?
        }
        None => read_capped(block, prefix, max_payload)?,
    };
    Ok(HttpValues {
        head,
        payload: Some(payload),
        truncated,
    })
}

/// Builds the list-of-pairs column of header fields.
struct PairsBuilder {
    offsets: Vec<i32>,
    names: StringBuilder,
    values: StringBuilder,
    nulls: BooleanBuilder,
}

impl PairsBuilder {
    fn new() -> Self {
        PairsBuilder {
            offsets: vec![0],
            names: StringBuilder::new(),
            values: StringBuilder::new(),
            nulls: BooleanBuilder::new(),
        }
    }

    fn append(&mut self, fields: Option<&Fields>) -> usize {
        let mut bytes = 0;
        if let Some(f) = fields {
            for field in f.iter() {
                let (n, v) = (field.name_str(), field.value_str());
                bytes += n.len() + v.len();
                self.names.append_value(n);
                self.values.append_value(v);
            }
        }
        let last = self.offsets.last().copied().unwrap_or(0);
        let added = fields.map_or(0, |f| f.len());
        self.offsets
            .push(last.saturating_add(i32::try_from(added).unwrap_or(i32::MAX)));
        self.nulls.append_value(fields.is_some());
        bytes
    }

    fn finish(&mut self) -> std::result::Result<ArrayRef, ArrowError> {
        let pairs = StructArray::try_new(
            pair_fields(),
            vec![
                Arc::new(self.names.finish()) as ArrayRef,
                Arc::new(self.values.finish()) as ArrayRef,
            ],
            None,
        )?;
        // Monotonic by construction, as OffsetBuffer::new requires.
        let offsets = OffsetBuffer::new(ScalarBuffer::from(std::mem::replace(
            &mut self.offsets,
            vec![0],
        )));
        let valid = self.nulls.finish();
        let nulls = NullBuffer::new(valid.values().clone());
        let list = ListArray::try_new(
            Arc::new(Field::new("item", pair_type(), true)),
            offsets,
            Arc::new(pairs),
            (nulls.null_count() > 0).then_some(nulls),
        )?;
        Ok(Arc::new(list))
    }
}

enum Col {
    Str(StringBuilder),
    I64(Int64Builder),
    I16(Int16Builder),
    Time(TimestampMicrosecondBuilder),
    Bin(BinaryBuilder),
    Bool(BooleanBuilder),
    Pairs(Box<PairsBuilder>),
}

struct BatchBuilder {
    cols: Vec<(Column, Col)>,
    rows: usize,
    bytes: usize,
}

impl BatchBuilder {
    fn new(columns: &[Column], capacity: usize) -> Self {
        let cols = columns
            .iter()
            .map(|&c| {
                let b = match c.field().data_type() {
                    DataType::Int64 => Col::I64(Int64Builder::with_capacity(capacity)),
                    DataType::Int16 => Col::I16(Int16Builder::with_capacity(capacity)),
                    DataType::Timestamp(..) => Col::Time(
                        TimestampMicrosecondBuilder::with_capacity(capacity).with_timezone("UTC"),
                    ),
                    DataType::Binary => Col::Bin(BinaryBuilder::new()),
                    DataType::Boolean => Col::Bool(BooleanBuilder::with_capacity(capacity)),
                    DataType::List(_) => Col::Pairs(Box::new(PairsBuilder::new())),
                    _ => Col::Str(StringBuilder::with_capacity(capacity, capacity * 16)),
                };
                (c, b)
            })
            .collect();
        BatchBuilder {
            cols,
            rows: 0,
            bytes: 0,
        }
    }

    /// The WARC header columns of a row.
    fn header_values(&mut self, h: &WarcHeader) {
        self.bytes += h.as_bytes().len();
        for (c, b) in &mut self.cols {
            match (c, b) {
                (Column::WarcDate, Col::Time(t)) => t.append_option(
                    h.date()
                        .and_then(|d| d.ok())
                        .and_then(|d| d.to_datetime())
                        .and_then(|d| i64::try_from(d.unix_timestamp_nanos() / 1000).ok()),
                ),
                (Column::WarcContentLength, Col::I64(i)) => {
                    i.append_option(h.content_length().and_then(|l| i64::try_from(l).ok()))
                }
                (Column::WarcHeaders, Col::Pairs(p)) => {
                    p.append(Some(h.fields()));
                }
                (c, Col::Str(s)) => {
                    let v = match c {
                        Column::WarcType => h.record_type_str(),
                        Column::WarcRecordId => h.record_id(),
                        Column::WarcTargetUri => h.target_uri(),
                        Column::WarcContentType => h.content_type(),
                        Column::WarcIpAddress => h.get("WARC-IP-Address"),
                        Column::WarcPayloadDigest => h.payload_digest(),
                        Column::WarcBlockDigest => h.block_digest(),
                        Column::WarcIdentifiedPayloadType => h.identified_payload_type(),
                        Column::WarcTruncated => h.get("WARC-Truncated"),
                        _ => continue,
                    };
                    s.append_option(v);
                }
                _ => {}
            }
        }
    }

    /// The HTTP and payload columns of a row.
    fn http_values(&mut self, v: HttpValues) {
        let head = v.head.as_ref();
        for (c, b) in &mut self.cols {
            match (c, b) {
                (Column::HttpStatus, Col::I16(i)) => i.append_option(
                    head.and_then(|h| h.status())
                        .and_then(|s| i16::try_from(s).ok()),
                ),
                (Column::HttpMethod, Col::Str(s)) => s.append_option(
                    head.and_then(|h| h.method())
                        .map(|m| String::from_utf8_lossy(m).into_owned()),
                ),
                (Column::HttpContentType, Col::Str(s)) => s.append_option(
                    head.and_then(|h| h.content_type())
                        .map(|m| String::from_utf8_lossy(&m).into_owned()),
                ),
                (Column::HttpHeaders, Col::Pairs(p)) => {
                    self.bytes += p.append(head.map(|h| h.fields()))
                }
                (Column::Payload, Col::Bin(bin)) => {
                    self.bytes += v.payload.as_ref().map_or(0, |p| p.len());
                    bin.append_option(v.payload.as_deref());
                }
                (Column::PayloadTruncated, Col::Bool(t)) => {
                    t.append_option(v.payload.as_ref().map(|_| v.truncated))
                }
                _ => {}
            }
        }
    }

    /// The location and error columns, which close a row.
    fn end_values(
        &mut self,
        filename: &str,
        offset: u64,
        length: Option<u64>,
        error: Option<&str>,
    ) {
        for (c, b) in &mut self.cols {
            match (c, b) {
                (Column::WarcFilename, Col::Str(s)) => s.append_value(filename),
                (Column::WarcRecordOffset, Col::I64(i)) => {
                    i.append_option(i64::try_from(offset).ok())
                }
                (Column::WarcRecordLength, Col::I64(i)) => {
                    i.append_option(length.and_then(|l| i64::try_from(l).ok()))
                }
                (Column::Error, Col::Str(s)) => s.append_option(error),
                _ => {}
            }
        }
        self.rows += 1;
    }

    /// A row for an error outside any record: nulls but for the file, the
    /// offset where reading stopped and the message.
    fn error_row(&mut self, filename: &str, e: &Error) {
        for (c, b) in &mut self.cols {
            if matches!(
                c,
                Column::WarcFilename
                    | Column::WarcRecordOffset
                    | Column::WarcRecordLength
                    | Column::Error
            ) {
                continue;
            }
            match b {
                Col::Str(s) => s.append_null(),
                Col::I64(i) => i.append_null(),
                Col::I16(i) => i.append_null(),
                Col::Time(t) => t.append_null(),
                Col::Bin(x) => x.append_null(),
                Col::Bool(x) => x.append_null(),
                Col::Pairs(p) => {
                    p.append(None);
                }
            }
        }
        let offset = e.position().map_or(0, |p| p.offset);
        self.end_values(filename, offset, None, Some(&e.to_string()));
    }

    fn finish(&mut self, schema: &SchemaRef) -> Result<RecordBatch> {
        let arrow = |e: ArrowError| Error::new(ErrorKind::Usage(format!("building a batch: {e}")));
        let mut arrays: Vec<ArrayRef> = Vec::with_capacity(self.cols.len());
        for (_, b) in &mut self.cols {
            let a: ArrayRef = match b {
                Col::Str(s) => Arc::new(s.finish()),
                Col::I64(i) => Arc::new(i.finish()),
                Col::I16(i) => Arc::new(i.finish()),
                Col::Time(t) => Arc::new(t.finish()),
                Col::Bin(x) => Arc::new(x.finish()),
                Col::Bool(x) => Arc::new(x.finish()),
                Col::Pairs(p) => p.finish().map_err(arrow)?,
            };
            arrays.push(a);
        }
        let rows = self.rows;
        self.rows = 0;
        self.bytes = 0;
        RecordBatch::try_new_with_options(
            schema.clone(),
            arrays,
            &arrow_array::RecordBatchOptions::new().with_row_count(Some(rows)),
        )
        .map_err(arrow)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow_array::Array;
    use arrow_array::cast::AsArray;
    use arrow_array::types::{Int16Type, Int64Type};

    fn warc() -> Vec<u8> {
        let http = "HTTP/1.1 404 Not Found\r\nContent-Type: text/plain\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n";
        let mut out = Vec::new();
        out.extend_from_slice(
            b"WARC/1.1\r\nWARC-Type: warcinfo\r\nWARC-Date: 2026-01-02T03:04:05Z\r\nContent-Length: 0\r\n\r\n\r\n\r\n",
        );
        out.extend_from_slice(
            format!(
                "WARC/1.1\r\nWARC-Type: response\r\nWARC-Target-URI: <http://a.example/>\r\nContent-Type: application/http; msgtype=response\r\nContent-Length: {}\r\n\r\n{http}\r\n\r\n",
                http.len()
            )
            .as_bytes(),
        );
        out
    }

    fn scan(opts: ScanOptions) -> Vec<RecordBatch> {
        let data = warc();
        let r = Reader::new(&data[..]).unwrap();
        Scanner::new(r, "mem.warc", opts)
            .collect::<Result<Vec<_>>>()
            .unwrap()
    }

    #[test]
    fn one_row_per_record_with_http_and_payload() {
        let mut opts = ScanOptions::default();
        opts.columns
            .extend([Column::Payload, Column::PayloadTruncated]);
        let b = scan(opts);
        assert_eq!(b.len(), 1);
        let b = &b[0];
        assert_eq!(b.num_rows(), 2);
        assert_eq!(b.schema().fields().len(), Column::ALL.len());
        let col = |c: Column| b.column_by_name(c.name()).unwrap().clone();
        let types = col(Column::WarcType);
        assert_eq!(types.as_string::<i32>().value(1), "response");
        let uri = col(Column::WarcTargetUri);
        assert_eq!(uri.as_string::<i32>().value(1), "http://a.example/");
        assert!(uri.is_null(0));
        let status = col(Column::HttpStatus);
        assert_eq!(status.as_primitive::<Int16Type>().value(1), 404);
        assert!(status.is_null(0));
        let payload = col(Column::Payload);
        assert_eq!(payload.as_binary::<i32>().value(1), b"abc");
        let offsets = col(Column::WarcRecordOffset);
        assert_eq!(offsets.as_primitive::<Int64Type>().value(0), 0);
        let lengths = col(Column::WarcRecordLength);
        assert_eq!(
            lengths.as_primitive::<Int64Type>().value(0) as u64,
            offsets.as_primitive::<Int64Type>().value(1) as u64
        );
        let headers = col(Column::HttpHeaders);
        let list = headers.as_list::<i32>();
        assert!(list.is_null(0));
        assert_eq!(list.value(1).len(), 2);
        assert_eq!(col(Column::Error).null_count(), 2);
    }

    #[test]
    fn columns_types_batches_and_cut_payloads() {
        let opts = ScanOptions::default()
            .columns_by_name(["warc_type", "payload", "payload_truncated"])
            .unwrap();
        let opts = ScanOptions {
            record_types: Some(vec!["RESPONSE".into()]),
            max_payload: 2,
            ..opts
        };
        let b = scan(opts);
        assert_eq!(b[0].num_rows(), 1);
        assert_eq!(b[0].column(1).as_binary::<i32>().value(0), b"ab");
        assert!(b[0].column(2).as_boolean().value(0));

        let one = scan(ScanOptions {
            batch_rows: 1,
            ..ScanOptions::default()
        });
        assert_eq!(one.iter().map(|b| b.num_rows()).collect::<Vec<_>>(), [1, 1]);
        assert!(ScanOptions::default().columns_by_name(["nope"]).is_err());
    }

    #[test]
    fn unopenable_files_are_an_error_or_a_row() {
        let path = "/nonexistent/warchest/missing.warc.gz";
        let mut s = Scanner::open(path, ScanOptions::default());
        assert!(s.next_batch().is_err());
        let mut s = Scanner::open(
            path,
            ScanOptions {
                skip_errors: true,
                ..ScanOptions::default()
            },
        );
        let b = s.next_batch().unwrap().unwrap();
        assert_eq!(b.num_rows(), 1);
        let err = b.column_by_name("error").unwrap();
        assert!(!err.is_null(0));
        assert!(s.next_batch().unwrap().is_none());
    }
}
