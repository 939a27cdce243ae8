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
//! Recoveries: what the lenient reader recovered from, and the payloads
//! not decoded as their HTTP head says (given as stored, or cut short:
//! [`http::payload_reader_lenient_noted`]), are tallied per scanner in its
//! [`ScanNotes`], which the caller takes as it goes
//! ([`Scanner::take_notes`]); a scan is never silent about them.
//!
//! Errors: with [`ScanOptions::skip_errors`] a file that cannot be opened
//! or read on gives one row whose `error` column says why (its offset is
//! where reading stopped: a record that failed after its header is that
//! row itself, its other columns as far as they were read), and the scan
//! goes on with the next file; a reader error ends the file because
//! readers are fused after an error. A whole file in which no record is
//! found is such an error ([`warchest::archive::no_records_message`]).

use std::fs::File;
use std::io::{self, BufRead, Read, Seek, SeekFrom};
use std::ops::Range;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use arrow_array::builder::{
    BooleanBuilder, Int16Builder, Int64Builder, StringBuilder, TimestampMicrosecondBuilder,
};
use arrow_array::{ArrayRef, ListArray, RecordBatch, StructArray};
use arrow_buffer::{NullBuffer, OffsetBuffer, ScalarBuffer};
use arrow_schema::{
    ArrowError, DataType, Field, Fields as ArrowFields, Schema, SchemaRef, TimeUnit,
};

use crate::UnparsedHead;
use warchest::Warning;
use warchest::archive::Reader;
use warchest::codec::{Decoder, DecoderOptions, Source};
use warchest::error::{Error, ErrorKind, Result};
use warchest::fields::Fields;
use warchest::http::{self, HttpHead, PayloadFallback, PayloadFallbacks};
use warchest::recoveries::{PayloadFallbackAt, Recoveries};
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
    /// bytes (default 16 MiB), far below Arrow's 2 GiB per column: only a
    /// single record larger than this makes a batch go over it.
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
            batch_bytes: 16 << 20,
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

/// What a scan recovered from: the lenient reader's recoveries, and the
/// payloads not decoded as their HTTP head says. Each counted, the first
/// 1000 of each kept whole with their file.
#[derive(Debug, Clone, Default)]
pub struct ScanNotes {
    /// The reader's recoveries ([`warchest::Warning`]).
    pub recoveries: Recoveries<Warning>,
    /// Payloads given otherwise than decoded as their head says (but for
    /// rows with an error, which says why: a read error, a record cut
    /// short).
    pub payload_fallbacks: Recoveries<PayloadFallbackAt>,
    /// Rows whose HTTP head did not parse (a block that should start with
    /// one and does not): their HTTP columns are null, as the index's
    /// status and MIME are ([`UnparsedHead`]); rows with an error, which
    /// says why, are not counted.
    pub unparsed_heads: Recoveries<UnparsedHead>,
    /// Errors skipped under [`ScanOptions::skip_errors`]: each gave its
    /// file's error row (the row that says it when the columns have
    /// `error`), and reading went on with the next file. Counted whatever
    /// the columns, so that a caller whose columns leave `error` out can
    /// tell them otherwise.
    pub failures: Recoveries<SkippedError>,
}

/// An error a scan skipped under [`ScanOptions::skip_errors`]: where
/// reading stopped (the error row's offset) and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SkippedError {
    /// The error row's `warc_record_offset`: where reading stopped, as
    /// stored (0 when the file could not be opened).
    pub offset: u64,
    /// The error, as the row's `error` column gives it (it names the file
    /// and, when known, the offset).
    pub message: String,
    /// The error without the file's name (the offset, when known, and
    /// why): what a sentence already naming the file says of it.
    pub detail: String,
}

impl SkippedError {
    fn of(e: &Error) -> Self {
        let message = e.to_string();
        let detail = e
            .file()
            .and_then(|f| message.strip_prefix(&format!("{}: ", f.display())))
            .unwrap_or(&message)
            .to_string();
        SkippedError {
            offset: e.position().map_or(0, |p| p.offset),
            message,
            detail,
        }
    }

    /// One sentence of the count and the first error, saying what became
    /// of them (`consequence`): "1 error skipped (skip_errors):
    /// CONSEQUENCE; the first: offset 87 (record 2): WHY" (the error's
    /// file not named again: the caller's sentence names it), "...; the
    /// first in FILE: offset 87..." when the errors are of several files;
    /// `None` when there are none.
    pub fn summary_as(tally: &Recoveries<SkippedError>, consequence: &str) -> Option<String> {
        let n = tally.total();
        if n == 0 {
            return None;
        }
        let what = if n == 1 { "error" } else { "errors" };
        let mut told = format!("{n} {what} skipped (skip_errors): {consequence}");
        match tally.kept().next() {
            Some((f, e)) if tally.by_file().len() > 1 => {
                told.push_str(&format!("; the first in {f}: {}", e.detail))
            }
            Some((_, e)) => told.push_str(&format!("; the first: {}", e.detail)),
            None => {
                if let Some(f) = tally.by_file().first() {
                    told.push_str(&format!(
                        "; the first in {} at offset {}",
                        f.file, f.first_offset
                    ));
                }
            }
        }
        Some(told)
    }
}

impl warchest::recoveries::Recovery for SkippedError {
    /// One kind only: an error skipped.
    type Kind = ();

    fn offset(&self) -> u64 {
        self.offset
    }

    fn kinds(&self) -> impl Iterator<Item = ()> {
        std::iter::once(())
    }
}

impl ScanNotes {
    /// Whether there is nothing to tell.
    pub fn is_empty(&self) -> bool {
        self.recoveries.is_empty()
            && self.payload_fallbacks.is_empty()
            && self.unparsed_heads.is_empty()
            && self.failures.is_empty()
    }

    /// Adds `other`'s to these.
    pub fn append(&mut self, other: ScanNotes) {
        self.recoveries.append(other.recoveries);
        self.payload_fallbacks.append(other.payload_fallbacks);
        self.unparsed_heads.append(other.unparsed_heads);
        self.failures.append(other.failures);
    }

    /// Takes everything out.
    pub fn take(&mut self) -> ScanNotes {
        std::mem::take(self)
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
    /// The rows read after the last batch was handed out: the record
    /// that would have taken that batch over `batch_bytes` starts this one.
    carry: Option<BatchBuilder>,
    /// A batch cut before the record that starts `carry`.
    ready: Option<RecordBatch>,
    /// A batch reached `batch_bytes`: the next ones reserve their payload
    /// buffer whole at once (a scanner of one small record, as `fetch`
    /// makes, does not).
    full: bool,
    /// What was recovered from, as far as taken from the reader.
    notes: ScanNotes,
    /// Records read (of any type, kept or not).
    seen: u64,
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
            carry: None,
            ready: None,
            full: false,
            notes: ScanNotes::default(),
            seen: 0,
        }
    }

    /// What the scan recovered from since the last call: the reader's
    /// recoveries up to now, and the payloads read so far that were not
    /// decoded as their HTTP head says.
    pub fn take_notes(&mut self) -> ScanNotes {
        self.collect_warnings();
        self.notes.take()
    }

    fn collect_warnings(&mut self) {
        if let Some(r) = self.reader.as_mut() {
            for w in r.take_warnings() {
                // Met reading the header of the record the next range
                // starts with: that range's (as errors there are).
                if w.offset < self.stop {
                    self.notes.recoveries.add(&self.filename, w);
                }
            }
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
        if let Some(r) = self.ready.take() {
            return Ok(Some(r));
        }
        let mut b = match self.carry.take() {
            Some(b) => b,
            None if self.done => return Ok(None),
            None => BatchBuilder::new(
                &self.opts.columns,
                self.opts.batch_rows.min(1024),
                self.opts.batch_bytes,
                self.full,
            ),
        };
        if let Some(e) = self.pending.take() {
            self.done = true;
            if !self.opts.skip_errors {
                return Err(e);
            }
            skipped(&mut b, &mut self.notes, &self.filename, &e, false);
            return b.finish(&self.schema).map(Some);
        }
        while !self.done && b.rows < self.opts.batch_rows.max(1) && b.bytes < self.opts.batch_bytes
        {
            let Some(reader) = self.reader.as_mut() else {
                self.done = true;
                break;
            };
            let mut row = RowCtx {
                b: &mut b,
                ready: &mut self.ready,
                opts: &self.opts,
                schema: &self.schema,
                needs_http: self.needs_http,
                filename: &self.filename,
                stop: self.stop,
                notes: &mut self.notes,
                in_row: false,
                seen: 0,
            };
            let r = row.read(reader);
            let (in_row, seen) = (row.in_row, row.seen);
            self.seen += seen;
            match r {
                Ok(true) => {}
                // A whole file in which no record was found is not an
                // empty archive but one not read: its error (as every
                // command and call of the toolkit says it).
                Ok(false) if self.seen == 0 && self.stop == u64::MAX => {
                    self.done = true;
                    let e = Error::new(ErrorKind::Syntax(warchest::archive::no_records_message(
                        &self.filename,
                    )));
                    if !self.opts.skip_errors {
                        return Err(e);
                    }
                    skipped(&mut b, &mut self.notes, &self.filename, &e, false);
                }
                Ok(false) => self.done = true,
                Err(e) => {
                    self.done = true;
                    if !self.opts.skip_errors {
                        return Err(e);
                    }
                    skipped(&mut b, &mut self.notes, &self.filename, &e, in_row);
                }
            }
            if self.ready.is_some() {
                break;
            }
        }
        // Taken as the reader goes, so its own list stays short.
        self.collect_warnings();
        if let Some(r) = self.ready.take() {
            self.full = true;
            self.carry = Some(b);
            return Ok(Some(r));
        }
        self.full |= b.bytes >= self.opts.batch_bytes;
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
    /// The notes of the files finished.
    notes: ScanNotes,
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
            notes: ScanNotes::default(),
        }
    }

    /// What the scan recovered from since the last call, in every file
    /// read so far ([`Scanner::take_notes`]).
    pub fn take_notes(&mut self) -> ScanNotes {
        if let Some(s) = self.current.as_mut() {
            self.notes.append(s.take_notes());
        }
        self.notes.take()
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
                self.notes.append(s.take_notes());
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

/// Most bytes of rows a chunk of a [`ChunkedScanner`] holds before it
/// stops (the main thread reads on from there), if its planned size is
/// more (only a chunk size forced larger is): with at most twice the
/// threads (16 at most) chunks in flight, memory stays bounded whatever
/// the payloads decode to.
const CHUNK_ROW_BYTES: usize = 8 << 20;

/// Smallest chunk of a [`ChunkedScanner`] (its chunks are about a batch).
const MIN_SCAN_CHUNK: u64 = 1 << 20;
/// At most this many chunks, whatever `batch_bytes` says (the plan's own
/// bound).
const MAX_SCAN_CHUNKS: u64 = 1 << 20;

/// Batches sent ahead of the consumer by a [`ChunkedScanner`].
const AHEAD: usize = 1;

/// An uncompressed local WARC file read into record batches on several
/// threads, through [`warchest::chunks`]: the file is cut into chunks,
/// each chunk's batches built by a worker, and the batches handed out in
/// file order. The rows are those of a [`Scanner`] over the whole file
/// (same offsets, same error rows), by the chunks' verified crossings: a
/// chunk whose start is not where the read before it ended, or in which
/// anything odd happened (damage, a WARC file inside a payload, an error),
/// is read sequentially instead. Batches keep the `batch_rows` and
/// `batch_bytes` bounds but also end where a chunk does.
///
/// A worker reads its whole chunk: its rows are bounded by the chunk's
/// size (a chunk's rows are at most its stored bytes, plus the record
/// that crosses its end, unless payloads decode larger than stored), not
/// by `batch_bytes`, so the merging thread reads nothing itself on a
/// clean file. Chunks are of about `batch_bytes` (1 MiB at least, and
/// no more than the plan's 4-8 MiB), unless `chunk` forces a size.
/// Memory: each chunk in flight (at most twice the threads, 16 at most)
/// holds about its size (8 MiB at most whatever the size forced) of
/// rows, and the chunks are merged on a thread of the scanner's own,
/// which sends one batch ahead; dropping the scanner stops it.
pub struct ChunkedScanner {
    rx: std::sync::mpsc::Receiver<Result<RecordBatch>>,
    stop: Arc<std::sync::atomic::AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
    schema: SchemaRef,
    trace: Arc<std::sync::Mutex<Option<warchest::chunks::Trace>>>,
    /// Every batch was taken.
    finished: bool,
    /// The file, for the error of a reading thread that died.
    file: PathBuf,
    /// What the reading thread noted so far.
    notes: Arc<std::sync::Mutex<ScanNotes>>,
}

impl ChunkedScanner {
    /// A scanner over the file at `path` read on `threads`, when it is an
    /// uncompressed WARC file worth reading so ([`warchest::chunks::plan`]);
    /// `None` otherwise (compressed, ARC, too small, one thread, cannot be
    /// opened), for [`Scanner::open`]. `chunk` forces the chunk size
    /// (tests: tiny chunks on small files).
    pub fn open(
        path: impl AsRef<Path>,
        opts: ScanOptions,
        threads: usize,
        chunk: Option<u64>,
    ) -> Option<Self> {
        let path = path.as_ref().to_path_buf();
        let mut plan = warchest::chunks::plan(&path, threads, chunk)?;
        if chunk.is_none() {
            // A chunk's rows are about its bytes: chunks of about a batch
            // keep each chunk in flight near `batch_bytes` (memory), as
            // when a chunk stopped at a batch, but read by its worker.
            let floor = plan.len.div_ceil(MAX_SCAN_CHUNKS);
            let batch = u64::try_from(opts.batch_bytes).unwrap_or(u64::MAX);
            plan.chunk = plan.chunk.min(batch.max(MIN_SCAN_CHUNK)).max(floor);
        }
        let file = path.clone();
        let (tx, rx) = std::sync::mpsc::sync_channel(AHEAD);
        let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let schema = schema(&opts.columns);
        let trace = Arc::new(std::sync::Mutex::new(None));
        let notes = Arc::new(std::sync::Mutex::new(ScanNotes::default()));
        let worker = {
            let stop = Arc::clone(&stop);
            let schema = schema.clone();
            let trace = Arc::clone(&trace);
            let notes = Arc::clone(&notes);
            move || {
                let t = scan_chunks(&path, opts, schema, plan, tx, stop, &notes);
                *trace.lock().unwrap_or_else(|e| e.into_inner()) = Some(t);
            }
        };
        let thread = std::thread::Builder::new()
            .name("warchest-scan".into())
            .spawn(worker)
            .ok()?;
        Some(ChunkedScanner {
            rx,
            stop,
            thread: Some(thread),
            schema,
            trace,
            finished: false,
            file,
            notes,
        })
    }

    /// What the scan recovered from since the last call: at least what the
    /// batches handed out so far met (the reading thread runs ahead, so
    /// perhaps more); once every batch was taken, all of it.
    pub fn take_notes(&mut self) -> ScanNotes {
        lock(&self.notes).take()
    }

    /// What the chunked read did, once every batch was taken (`None`
    /// before): chunks used, passed over and read sequentially.
    pub fn trace(&mut self) -> Option<warchest::chunks::Trace> {
        if !self.finished {
            return None;
        }
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
        *self.trace.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The schema of the batches.
    pub fn schema(&self) -> SchemaRef {
        self.schema.clone()
    }

    /// The next batch; `None` at the end of the file.
    ///
    /// # Errors
    /// As [`Scanner::next_batch`].
    pub fn next_batch(&mut self) -> Result<Option<RecordBatch>> {
        match self.rx.recv() {
            Ok(b) => b.map(Some),
            Err(_) => {
                self.finished = true;
                // The channel closes at the end, or when the reading
                // thread died: that is an error, never a short table.
                if let Some(t) = self.thread.take()
                    && t.join().is_err()
                {
                    return Err(
                        Error::from(io::Error::other("the scan's reading thread failed"))
                            .in_file(&self.file),
                    );
                }
                Ok(None)
            }
        }
    }
}

impl Iterator for ChunkedScanner {
    type Item = Result<RecordBatch>;

    fn next(&mut self) -> Option<Self::Item> {
        self.next_batch().transpose()
    }
}

impl Drop for ChunkedScanner {
    fn drop(&mut self) {
        self.stop.store(true, std::sync::atomic::Ordering::Relaxed);
        // Unblocks a send waiting for room; the thread then stops at its
        // next record.
        while self.rx.try_recv().is_ok() {}
        let (_, rx) = std::sync::mpsc::sync_channel(0);
        drop(std::mem::replace(&mut self.rx, rx));
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// The rows of one run of records, in batches as a [`Scanner`] cuts them.
/// Each batch's payload buffer is reserved whole at once (as a
/// [`Scanner`] does once a batch has filled): a chunk holds more than a
/// batch's bytes on the files chunks are used for, and an untouched
/// reservation takes no memory.
#[derive(Default)]
struct Batches {
    b: Option<BatchBuilder>,
    ready: Option<RecordBatch>,
    /// Batches complete, in order.
    done: Vec<RecordBatch>,
    /// Their bytes as `batch_bytes` counts them (WARC headers, HTTP
    /// header fields, payloads), so that they compare with a chunk's
    /// stored bytes: a running count, since `held` is asked on each
    /// record.
    done_bytes: usize,
    /// Payloads of these rows not decoded as their head says, and rows
    /// whose head did not parse (no reader recoveries: the chunk's reader
    /// hands those over itself).
    notes: ScanNotes,
}

impl Batches {
    /// The builder of the batch being filled.
    fn builder(&mut self, opts: &ScanOptions) -> &mut BatchBuilder {
        self.b.get_or_insert_with(|| new_chunk_builder(opts))
    }

    /// The row of `rec` (of any type: the others are passed over), as
    /// [`Scanner::next_batch`] adds it; its end.
    fn push<S: Source + Send>(
        &mut self,
        t: &ScanChunks<'_>,
        rec: warchest::archive::Record<'_, S>,
    ) -> std::result::Result<warc::RecordEnd, warchest::chunks::BoxError> {
        if !t.opts.wants(rec.header()) {
            return Ok(rec.finish()?);
        }
        let opts = t.opts;
        let Batches {
            b, ready, notes, ..
        } = self;
        let b = b.get_or_insert_with(|| new_chunk_builder(opts));
        // A batch cut before this row holds the rows before it.
        let before = b.bytes;
        let mut ctx = RowCtx {
            b,
            ready,
            opts,
            schema: t.schema,
            needs_http: t.needs_http,
            filename: t.filename,
            stop: u64::MAX,
            notes,
            in_row: false,
            seen: 0,
        };
        let r = ctx.row(rec).map_err(|e| -> warchest::chunks::BoxError {
            if ctx.in_row {
                Box::new(InRow(e))
            } else {
                Box::new(e)
            }
        });
        if let Some(x) = self.ready.take() {
            self.finished(x, before);
        }
        if let Some(b) = self.b.as_mut()
            && (b.rows >= opts.batch_rows.max(1) || b.bytes >= opts.batch_bytes)
        {
            let bytes = b.bytes;
            let x = b.finish(t.schema)?;
            self.finished(x, bytes);
            self.b = None;
        }
        r
    }

    /// Ends the batch being filled, if it has rows.
    fn close(&mut self, schema: &SchemaRef) -> Result<()> {
        if let Some(mut b) = self.b.take()
            && b.rows > 0
        {
            let bytes = b.bytes;
            self.finished(b.finish(schema)?, bytes);
        }
        Ok(())
    }

    /// Adds a complete batch, of `bytes` bytes.
    fn finished(&mut self, x: RecordBatch, bytes: usize) {
        self.done_bytes += bytes;
        self.done.push(x);
    }

    /// Takes the complete batches.
    fn take_done(&mut self) -> std::vec::Drain<'_, RecordBatch> {
        self.done_bytes = 0;
        self.done.drain(..)
    }

    /// Bytes of rows held.
    fn held(&self) -> usize {
        self.done_bytes + self.b.as_ref().map_or(0, |b| b.bytes)
    }
}

/// The builder of a [`Batches`] batch: its payload buffer reserved whole.
fn new_chunk_builder(opts: &ScanOptions) -> BatchBuilder {
    BatchBuilder::new(
        &opts.columns,
        opts.batch_rows.min(1024),
        opts.batch_bytes,
        true,
    )
}

std::thread_local! {
    /// Set on the thread that merges a [`ChunkedScanner`]'s chunks (the
    /// scanner's own, [`scan_chunks`]): its records are those read
    /// sequentially. A flag read per record, where asking the thread's
    /// id clones a handle.
    static MERGING: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// A [`ChunkedScanner`]'s per-record work: a worker's rows go to its
/// chunk's [`Batches`], handed on in file order by [`Tally::add`]; the
/// main thread's own (records read sequentially) to `main`, sent as they
/// fill.
///
/// [`Tally::add`]: warchest::chunks::Tally::add
struct ScanChunks<'a> {
    opts: &'a ScanOptions,
    schema: &'a SchemaRef,
    needs_http: bool,
    filename: &'a str,
    /// Most bytes of rows a chunk holds: its planned size (at most
    /// [`CHUNK_ROW_BYTES`]).
    chunk_rows: usize,
    /// The rows the merging thread (the chunks' "main thread", see
    /// [`MERGING`]) reads itself.
    main_rows: std::sync::Mutex<Batches>,
    tx: std::sync::mpsc::SyncSender<Result<RecordBatch>>,
    stop: &'a std::sync::atomic::AtomicBool,
    /// The scanner's notes, which rows' payload fallbacks join in file
    /// order (and the reader's recoveries as reported: [`Noting`]).
    notes: &'a std::sync::Mutex<ScanNotes>,
}

/// The consumer went away: the read stops.
#[derive(Debug)]
struct Stopped;

impl std::fmt::Display for Stopped {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("the scan was dropped")
    }
}

impl std::error::Error for Stopped {}

/// A record's failure that its row (`error` set) says already: the scan
/// skipping it adds no row of its own.
#[derive(Debug)]
struct InRow(Error);

impl std::fmt::Display for InRow {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.0.fmt(f)
    }
}

impl std::error::Error for InRow {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        Some(&self.0)
    }
}

impl ScanChunks<'_> {
    fn main_rows(&self) -> std::sync::MutexGuard<'_, Batches> {
        self.main_rows.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Moves the notes of `rows` (payload fallbacks, heads that did not
    /// parse) into the scanner's notes.
    fn note(&self, rows: &mut Batches) {
        if !rows.notes.is_empty() {
            lock(self.notes).append(rows.notes.take());
        }
    }

    /// Sends the complete batches of `rows`.
    fn send(&self, rows: &mut Batches) {
        for b in rows.take_done() {
            if self.tx.send(Ok(b)).is_err() {
                self.stop.store(true, std::sync::atomic::Ordering::Relaxed);
            }
        }
    }
}

impl warchest::chunks::Tally for ScanChunks<'_> {
    type Sum = Batches;

    fn record<S: Source + Send>(
        &self,
        rec: warchest::archive::Record<'_, S>,
        _: &mut Vec<u8>,
        sum: &mut Batches,
    ) -> std::result::Result<warc::RecordEnd, warchest::chunks::BoxError> {
        if self.stop.load(std::sync::atomic::Ordering::Relaxed) {
            return Err(Box::new(Stopped));
        }
        if !MERGING.get() {
            return sum.push(self, rec);
        }
        let mut rows = self.main_rows();
        let r = rows.push(self, rec);
        self.note(&mut rows);
        self.send(&mut rows);
        r
    }

    fn add(&self, _: &mut Batches, mut part: Batches) {
        let mut rows = self.main_rows();
        let closed = rows
            .close(self.schema)
            .and_then(|()| part.close(self.schema));
        // Noted before the batches go: a consumer that took them finds
        // their notes taken too.
        self.note(&mut rows);
        self.note(&mut part);
        if let Err(e) = closed {
            let _ = self.tx.send(Err(e));
            self.stop.store(true, std::sync::atomic::Ordering::Relaxed);
            return;
        }
        self.send(&mut rows);
        self.send(&mut part);
    }

    fn full(&self, sum: &Batches) -> bool {
        sum.held() >= self.chunk_rows
    }
}

/// The chunked read's recoveries, into a [`ChunkedScanner`]'s notes.
struct Noting<'a>(&'a std::sync::Mutex<ScanNotes>);

impl warchest::chunks::Report for Noting<'_> {
    fn warnings(&self, file: &str, warnings: &[Warning]) {
        if !warnings.is_empty() {
            lock(self.0).recoveries.add_all(file, warnings);
        }
    }
}

/// `m` locked, whether or not a thread panicked holding it (the notes
/// stay counts either way).
fn lock<T>(m: &std::sync::Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// The thread of a [`ChunkedScanner`]: reads the file as `plan` says,
/// sending its batches to `tx`; then its error, as [`Scanner`] reports
/// it (a row with `skip_errors`).
fn scan_chunks(
    path: &Path,
    opts: ScanOptions,
    schema: SchemaRef,
    plan: warchest::chunks::Plan,
    tx: std::sync::mpsc::SyncSender<Result<RecordBatch>>,
    stop: Arc<std::sync::atomic::AtomicBool>,
    notes: &std::sync::Mutex<ScanNotes>,
) -> warchest::chunks::Trace {
    let filename = path.to_string_lossy().into_owned();
    let reader = match opts.reader.file.is_some() {
        true => opts.reader.clone(),
        false => opts.reader.clone().file(path),
    };
    let t = ScanChunks {
        opts: &opts,
        schema: &schema,
        needs_http: opts.columns.iter().any(|c| c.needs_http()),
        filename: &filename,
        chunk_rows: usize::try_from(plan.chunk)
            .unwrap_or(usize::MAX)
            .clamp(1, CHUNK_ROW_BYTES),
        main_rows: std::sync::Mutex::new(Batches::default()),
        tx,
        stop: &stop,
        notes,
    };
    let input = warchest::chunks::Input::Path(path);
    MERGING.set(true);
    let (r, trace) = warchest::chunks::read_tally(
        &Noting(notes),
        &filename,
        input,
        &t,
        &reader,
        plan,
        &mut io::sink(),
        &mut Batches::default(),
    );
    MERGING.set(false);
    let mut rows = std::mem::take(&mut *t.main_rows());
    // (the error, whether the record's row says it)
    let e = match r {
        // No record in the whole file: its error, as the scanner of one
        // thread gives it.
        Ok(0) => Some((
            Error::new(ErrorKind::Syntax(warchest::archive::no_records_message(
                &filename,
            ))),
            false,
        )),
        Ok(_) => None,
        Err(e) if e.is::<Stopped>() => return trace,
        Err(e) => Some(match e.downcast::<InRow>() {
            Ok(e) => (e.0, true),
            Err(e) => match e.downcast::<Error>() {
                Ok(e) => (*e, false),
                Err(e) => (
                    Error::from(io::Error::other(e.to_string())).in_file(path),
                    false,
                ),
            },
        }),
    };
    let last = match e {
        None => rows.close(&schema),
        Some((e, in_row)) if opts.skip_errors => {
            skipped(rows.builder(&opts), &mut lock(notes), &filename, &e, in_row);
            rows.close(&schema)
        }
        Some((e, _)) => Err(e),
    };
    t.note(&mut rows);
    t.send(&mut rows);
    if let Err(e) = last {
        let _ = t.tx.send(Err(e));
    }
    trace
}

/// An error skipped under [`ScanOptions::skip_errors`]: its row (unless
/// the failed record's own row, `in_row`, says it already) and its note.
fn skipped(b: &mut BatchBuilder, notes: &mut ScanNotes, filename: &str, e: &Error, in_row: bool) {
    if !in_row {
        b.error_row(filename, e);
    }
    notes.failures.add(filename, SkippedError::of(e));
}

/// What one row is read with.
struct RowCtx<'a> {
    b: &'a mut BatchBuilder,
    /// Where the batch goes when this row would take it over the bound.
    ready: &'a mut Option<RecordBatch>,
    opts: &'a ScanOptions,
    schema: &'a SchemaRef,
    needs_http: bool,
    filename: &'a str,
    stop: u64,
    /// Where a payload not decoded as its head says, and a head that did
    /// not parse, are counted.
    notes: &'a mut ScanNotes,
    /// The error [`RowCtx::row`] gave is in the record's row (`error`
    /// set): the scan skipping it adds no row of its own for it.
    in_row: bool,
    /// Records [`RowCtx::read`] read, of any type.
    seen: u64,
}

impl RowCtx<'_> {
    /// Reads the next record of the kept types into the batch; `Ok(false)`
    /// at the end. A failure inside a record after its header still gives
    /// its row, with `error` set, and then the error. When the row would
    /// take a batch that has rows over `batch_bytes`, that batch is cut
    /// before it (into `ready`) and the row starts the next.
    fn read<S: Source + Send>(&mut self, reader: &mut Reader<S>) -> Result<bool> {
        let opts = self.opts;
        loop {
            let next = match reader.next_record() {
                Ok(n) => n,
                // What goes wrong at or after the stop is the next range's.
                Err(e) if e.position().is_some_and(|p| p.offset >= self.stop) => {
                    return Ok(false);
                }
                Err(e) => return Err(e),
            };
            let Some(rec) = next else {
                return Ok(false);
            };
            if rec.location().offset >= self.stop {
                return Ok(false);
            }
            self.seen += 1;
            if !opts.wants(rec.header()) {
                continue;
            }
            self.row(rec)?;
            return Ok(true);
        }
    }

    /// The row of `rec`, a record of a kept type; its end. A failure
    /// inside the record after its header still gives its row, with
    /// `error` set, and then the error.
    fn row<S: Source + Send>(
        &mut self,
        mut rec: warchest::archive::Record<'_, S>,
    ) -> Result<warc::RecordEnd> {
        let opts = self.opts;
        let loc = rec.location();
        let mut failure: Option<Error> = None;
        let mut http = HttpRead::default();
        let header_bytes = rec.header().as_bytes().len();
        if self.needs_http {
            let candidate = may_have_http_head(rec.header());
            // What the payload will likely add: the block's length.
            let hint = rec.header().content_length().unwrap_or(0);
            let limits = opts.reader.limits;
            let mut block = rec.block();
            let mut cut = Cut {
                ready: &mut *self.ready,
                schema: self.schema,
                batch_bytes: opts.batch_bytes,
                header_bytes,
                hint,
            };
            let (got, err) =
                self.b
                    .read_http(&mut block, candidate, &limits, opts.max_payload, &mut cut);
            http = got;
            failure = err;
        }
        let fallbacks = http.fallbacks;
        let row_bytes = header_bytes + self.b.pending_bytes(&http);
        if self.b.rows > 0 && self.b.bytes + row_bytes > opts.batch_bytes {
            // Read past the estimate (a payload decoded larger than its
            // block): its bytes move to the next batch.
            *self.ready = Some(self.b.cut(self.schema)?);
        }
        self.b.header_values(rec.header());
        if self.needs_http {
            self.b.head_values(http.head.as_ref());
            self.b.payload_values(http.payload);
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
        self.b.end_values(
            self.filename,
            loc.offset,
            end.and_then(|e| e.stored_len),
            failure.as_ref().map(|e| e.to_string()).as_deref(),
        );
        // A row with an error says why itself (a body cut short is one).
        if failure.is_none() && http.unparsed {
            self.notes
                .unparsed_heads
                .add(self.filename, UnparsedHead { offset: loc.offset });
        }
        if failure.is_none() && !fallbacks.is_empty() {
            self.notes.payload_fallbacks.add(
                self.filename,
                PayloadFallbackAt {
                    offset: loc.offset,
                    fallbacks,
                },
            );
        }
        match (failure, end) {
            (Some(e), _) => {
                self.in_row = true;
                Err(e)
            }
            (None, Some(end)) => Ok(end),
            // Unreachable: `end` is `None` only with a failure.
            (None, None) => Err(Error::new(ErrorKind::Usage(
                "a record without an end".into(),
            ))),
        }
    }
}

/// Where a batch goes when a row's payload is expected to take it over
/// `batch_bytes`: cut before that payload is read, so that the payload
/// is read into the next batch's buffer rather than moved there.
struct Cut<'a> {
    ready: &'a mut Option<RecordBatch>,
    schema: &'a SchemaRef,
    batch_bytes: usize,
    header_bytes: usize,
    /// The record's block length.
    hint: u64,
}

/// What was read of a record's block before its row is appended.
#[derive(Default)]
struct HttpRead {
    head: Option<HttpHead>,
    /// `Ok(Some(cut))` when the payload was read (its bytes wait at the
    /// end of the payload column; `cut`: it was longer than `max_payload`),
    /// `Ok(None)` when it was not, `Err` when reading it failed.
    payload: Option<io::Result<bool>>,
    /// What the payload's decoding fell back on.
    fallbacks: PayloadFallbacks,
    /// The block should have started with an HTTP head, is not empty, and
    /// its head did not parse ([`UnparsedHead`]).
    unparsed: bool,
}

/// Where a row's payload is read from.
enum PayloadSrc<'a> {
    /// As stored (no coding to undo): `prefix` (bytes read while looking
    /// for an HTTP head), then the rest of the block, whose buffer (for a
    /// plain file, its memory map) is copied from directly.
    Stored(&'a [u8], &'a mut dyn BufRead),
    /// Through a reader that undoes codings.
    Decoded(&'a mut dyn Read),
}

/// Reads at most `max` bytes of `src` onto the end of `out`, with no
/// buffer of its own between the source and `out`; whether more followed.
fn read_capped(src: PayloadSrc<'_>, out: &mut Vec<u8>, max: u64) -> io::Result<bool> {
    let start = out.len();
    let cap = usize::try_from(max).unwrap_or(usize::MAX);
    match src {
        PayloadSrc::Stored(prefix, r) => {
            // Copied from the block's buffer: `read_to_end` would zero each
            // part of `out` before reading into it (`dyn Read` cannot read
            // into memory not yet written on stable Rust), a second pass
            // over every payload byte.
            out.extend_from_slice(&prefix[..prefix.len().min(cap)]);
            if prefix.len() > cap {
                return Ok(true);
            }
            loop {
                let buf = match r.fill_buf() {
                    Ok(b) => b,
                    Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                    Err(e) => return Err(e),
                };
                if buf.is_empty() {
                    return Ok(false);
                }
                let room = cap - (out.len() - start);
                if room == 0 {
                    return Ok(true);
                }
                let n = buf.len().min(room);
                out.extend_from_slice(&buf[..n]);
                r.consume(n);
            }
        }
        PayloadSrc::Decoded(mut r) => {
            (&mut r).take(max.saturating_add(1)).read_to_end(out)?;
            let truncated = out.len() - start > cap;
            out.truncate(start.saturating_add(cap).min(out.len()));
            Ok(truncated)
        }
    }
}

/// Counts the bytes of `src` up to `max`; whether more followed. For a
/// `payload_truncated` column without `payload`: nothing is kept.
fn count_capped(src: PayloadSrc<'_>, max: u64) -> io::Result<bool> {
    let limit = max.saturating_add(1);
    let n = match src {
        PayloadSrc::Stored(prefix, r) => {
            io::copy(&mut prefix.chain(r).take(limit), &mut io::sink())
        }
        PayloadSrc::Decoded(r) => io::copy(&mut r.take(limit), &mut io::sink()),
    }?;
    Ok(n > max)
}

/// The `payload` column, built in place: each payload is read straight
/// onto the end of the values buffer (no copy of it per record), which is
/// reserved once per batch and becomes the Arrow buffer without a copy.
/// The bytes after the last offset are the payload of a row not yet
/// appended ([`PayloadBuilder::pending`]).
struct PayloadBuilder {
    values: Vec<u8>,
    offsets: Vec<i32>,
    valid: BooleanBuilder,
    /// What a batch's values buffer reserves once it is known to fill.
    reserve: usize,
}

impl PayloadBuilder {
    fn new(capacity: usize, now: usize, reserve: usize) -> Self {
        let mut offsets = Vec::with_capacity(capacity + 1);
        offsets.push(0);
        PayloadBuilder {
            values: Vec::with_capacity(now),
            offsets,
            valid: BooleanBuilder::with_capacity(capacity),
            reserve,
        }
    }

    fn committed(&self) -> usize {
        self.offsets
            .last()
            .and_then(|&o| usize::try_from(o).ok())
            .unwrap_or(0)
    }

    /// The bytes read since the last value.
    fn pending(&self) -> usize {
        self.values.len() - self.committed()
    }

    /// Closes the value read since the last one; its length. A batch's
    /// payloads cannot pass 2 GiB (i32 offsets): `batch_bytes` ends a batch
    /// long before unless `max_payload` is set above it, and then the value
    /// is null rather than a panic.
    fn close(&mut self) -> usize {
        let n = self.pending();
        match i32::try_from(self.values.len()) {
            Ok(end) => {
                self.offsets.push(end);
                self.valid.append_value(true);
                n
            }
            Err(_) => {
                self.append_null();
                0
            }
        }
    }

    /// A null value; whatever was read of it is dropped.
    fn append_null(&mut self) {
        let last = self.committed();
        self.values.truncate(last);
        self.offsets.push(i32::try_from(last).unwrap_or(i32::MAX));
        self.valid.append_value(false);
    }

    /// The column of the closed values; the pending bytes start the next.
    /// With `more` (the batch was cut at the bound) the next batch's buffer
    /// is reserved whole.
    fn finish(&mut self, more: bool) -> std::result::Result<ArrayRef, ArrowError> {
        let committed = self.committed();
        let pending = self.values.len() - committed;
        let mut next = match (more, pending) {
            (false, 0) => Vec::new(),
            _ => Vec::with_capacity(self.reserve.max(pending)),
        };
        next.extend_from_slice(&self.values[committed..]);
        let mut values = std::mem::replace(&mut self.values, next);
        values.truncate(committed);
        if pending > 0 || values.capacity() / 2 > values.len() {
            // The moved bytes' pages go back rather than stay with a batch
            // that no longer holds them; so does a reservation the batch
            // did not half fill (cut by rows or at its chunk's end), which
            // Arrow would otherwise count as the batch's memory.
            values.shrink_to_fit();
        }
        // Monotonic by construction, as OffsetBuffer::new requires.
        let offsets = OffsetBuffer::new(ScalarBuffer::from(std::mem::replace(
            &mut self.offsets,
            vec![0],
        )));
        let valid = self.valid.finish();
        let nulls = NullBuffer::new(valid.values().clone());
        let a = arrow_array::BinaryArray::try_new(
            offsets,
            arrow_buffer::Buffer::from_vec(values),
            (nulls.null_count() > 0).then_some(nulls),
        )?;
        Ok(Arc::new(a))
    }
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
    Bin(PayloadBuilder),
    Bool(BooleanBuilder),
    Pairs(Box<PairsBuilder>),
}

struct BatchBuilder {
    cols: Vec<(Column, Col)>,
    rows: usize,
    bytes: usize,
}

impl BatchBuilder {
    /// Builders for `capacity` rows. When `full` (the scanner's batches
    /// reach `batch_bytes`), the payload column reserves `batch_bytes` (up
    /// to 256 MiB) at once, so that it is not reallocated as it grows: a
    /// batch is cut before a payload its block's length says would take it
    /// over the bound, so its payloads fit unless one decodes larger than
    /// its block. Every full batch's buffer is then the same size, and the
    /// allocator hands the next batch the place of one pyarrow has freed;
    /// with twice `batch_bytes` reserved and the unfilled half given back,
    /// no freed place fitted the next reservation, the heap grew and was
    /// trimmed in turns, and the payload copy wrote fresh pages (a page
    /// fault and a zeroed page each 4 KiB; docs/performance-history.md, "Python
    /// rows, 29 November, morning"). Otherwise it grows as needed.
    fn new(columns: &[Column], capacity: usize, batch_bytes: usize, full: bool) -> Self {
        let payload_bytes = batch_bytes.min(256 << 20);
        let now = if full { payload_bytes } else { 0 };
        let cols = columns
            .iter()
            .map(|&c| {
                let b = match c.field().data_type() {
                    DataType::Int64 => Col::I64(Int64Builder::with_capacity(capacity)),
                    DataType::Int16 => Col::I16(Int16Builder::with_capacity(capacity)),
                    DataType::Timestamp(..) => Col::Time(
                        TimestampMicrosecondBuilder::with_capacity(capacity).with_timezone("UTC"),
                    ),
                    DataType::Binary => Col::Bin(PayloadBuilder::new(capacity, now, payload_bytes)),
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

    /// Reads the HTTP head of a record's block when `candidate` (a type
    /// that may have one) and it parses, then its payload (transfer and
    /// content codings undone) straight onto the end of the payload column,
    /// not yet part of a row: [`BatchBuilder::payload_values`] makes it one.
    /// The payload is read only when a payload column is chosen.
    fn read_http<R: BufRead + Send>(
        &mut self,
        block: &mut R,
        candidate: bool,
        limits: &warchest::Limits,
        max: u64,
        cut: &mut Cut<'_>,
    ) -> (HttpRead, Option<Error>) {
        let (head, prefix) = if candidate {
            match http::read_head_or_bytes(block, limits) {
                Ok(Ok(h)) => (Some(h), Vec::new()),
                Ok(Err(bytes)) => (None, bytes),
                Err(e) => return (HttpRead::default(), Some(e.into())),
            }
        } else {
            (None, Vec::new())
        };
        let unparsed = candidate && head.is_none() && !prefix.is_empty();
        let expect = usize::try_from(cut.hint.min(max)).unwrap_or(usize::MAX);
        let fields = HttpRead {
            head,
            ..HttpRead::default()
        };
        let expect_row = cut.header_bytes + self.pending_bytes(&fields) + expect;
        let head = fields.head;
        if self.rows > 0 && self.reads_payload() && self.bytes + expect_row > cut.batch_bytes {
            match self.cut(cut.schema) {
                Ok(b) => *cut.ready = Some(b),
                Err(e) => {
                    return (
                        HttpRead {
                            head,
                            unparsed,
                            ..HttpRead::default()
                        },
                        Some(e),
                    );
                }
            }
        }
        let mut fallbacks = PayloadFallbacks::default();
        let payload = match &head {
            // Neither payload column: no decoder is built.
            _ if !self.reads_payload_at_all() => None,
            // Codings to undo.
            Some(h) if !h.transfer_encoding().is_empty() || !h.content_encoding().is_empty() => {
                let (mut r, notes) = http::payload_reader_lenient_noted(&mut *block, h);
                let p = self.read_payload(PayloadSrc::Decoded(&mut r), max, expect);
                fallbacks = notes.get();
                p
            }
            // No coding to undo (`payload_reader_lenient` would give the
            // body as stored): straight from the block's buffer.
            _ => self.read_payload(PayloadSrc::Stored(&prefix, block), max, expect),
        };
        let err = match &payload {
            Some(Err(e)) => {
                // The row's error says so.
                fallbacks.remove(PayloadFallback::ReadError);
                Some(Error::from(io::Error::new(e.kind(), e.to_string())))
            }
            _ => None,
        };
        (
            HttpRead {
                head,
                payload,
                fallbacks,
                unparsed,
            },
            err,
        )
    }

    /// Whether the payload is read at all: for a `payload` column, or for a
    /// `payload_truncated` column alone (counted, not kept).
    fn reads_payload_at_all(&self) -> bool {
        self.cols
            .iter()
            .any(|(c, _)| matches!(c, Column::Payload | Column::PayloadTruncated))
    }

    /// Whether a payload column is chosen.
    fn reads_payload(&self) -> bool {
        self.cols.iter().any(|(c, _)| *c == Column::Payload)
    }

    /// Reads `r` onto the end of the payload column (or only counts it for
    /// a lone `payload_truncated`); `None` without either column. Room for
    /// `expect` bytes is made first (up to 256 MiB, and only if it can be).
    fn read_payload(
        &mut self,
        r: PayloadSrc<'_>,
        max: u64,
        expect: usize,
    ) -> Option<io::Result<bool>> {
        let mut flag = false;
        for (c, b) in &mut self.cols {
            match (c, b) {
                (Column::Payload, Col::Bin(p)) => {
                    let _ = p.values.try_reserve(expect.min(256 << 20));
                    return Some(read_capped(r, &mut p.values, max));
                }
                (Column::PayloadTruncated, _) => flag = true,
                _ => {}
            }
        }
        flag.then(|| count_capped(r, max))
    }

    /// The bytes a row read by [`BatchBuilder::read_http`] adds to the
    /// batch, beyond its WARC header: its payload and HTTP header fields
    /// (when chosen).
    fn pending_bytes(&self, http: &HttpRead) -> usize {
        let mut n = 0;
        for (c, b) in &self.cols {
            match (c, b) {
                (Column::Payload, Col::Bin(p)) => n += p.pending(),
                (Column::HttpHeaders, _) => {
                    n += http.head.as_ref().map_or(0, |h| {
                        h.fields()
                            .iter()
                            .map(|f| f.name_str().len() + f.value_str().len())
                            .sum()
                    })
                }
                _ => {}
            }
        }
        n
    }

    /// The HTTP head columns of a row (nulls without a head).
    fn head_values(&mut self, head: Option<&HttpHead>) {
        for (c, b) in &mut self.cols {
            match (c, b) {
                (Column::HttpStatus, Col::I16(i)) => i.append_option(
                    head.and_then(|h| h.status())
                        .and_then(|s| i16::try_from(s).ok()),
                ),
                (Column::HttpMethod, Col::Str(s)) => s.append_option(
                    head.and_then(|h| h.method())
                        .map(String::from_utf8_lossy)
                        .as_deref(),
                ),
                (Column::HttpContentType, Col::Str(s)) => s.append_option(
                    head.and_then(|h| h.content_type())
                        .as_deref()
                        .map(String::from_utf8_lossy)
                        .as_deref(),
                ),
                (Column::HttpHeaders, Col::Pairs(p)) => {
                    self.bytes += p.append(head.map(|h| h.fields()))
                }
                _ => {}
            }
        }
    }

    /// The payload columns of a row, from what [`BatchBuilder::read_http`]
    /// read: the bytes waiting at the end of the payload column become the
    /// row's value (null when none was read or reading failed).
    fn payload_values(&mut self, payload: Option<io::Result<bool>>) {
        let cut = match &payload {
            Some(Ok(t)) => Some(*t),
            _ => None,
        };
        for (c, b) in &mut self.cols {
            match (c, b) {
                (Column::Payload, Col::Bin(p)) => match cut {
                    Some(_) => self.bytes += p.close(),
                    None => p.append_null(),
                },
                (Column::PayloadTruncated, Col::Bool(t)) => t.append_option(cut),
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

    /// The batch of the rows appended; the builder starts again, empty.
    fn finish(&mut self, schema: &SchemaRef) -> Result<RecordBatch> {
        self.finish_as(schema, false)
    }

    /// The batch of the rows appended, cut at `batch_bytes`: the builder
    /// goes on with the next batch, which will fill too (its payload
    /// buffer reserved whole), starting with the payload read but not
    /// appended, if any.
    fn cut(&mut self, schema: &SchemaRef) -> Result<RecordBatch> {
        self.finish_as(schema, true)
    }

    fn finish_as(&mut self, schema: &SchemaRef, more: bool) -> Result<RecordBatch> {
        let arrow = |e: ArrowError| Error::new(ErrorKind::Usage(format!("building a batch: {e}")));
        let mut arrays: Vec<ArrayRef> = Vec::with_capacity(self.cols.len());
        for (_, b) in &mut self.cols {
            let a: ArrayRef = match b {
                Col::Str(s) => Arc::new(s.finish()),
                Col::I64(i) => Arc::new(i.finish()),
                Col::I16(i) => Arc::new(i.finish()),
                Col::Time(t) => Arc::new(t.finish()),
                Col::Bin(x) => x.finish(more).map_err(arrow)?,
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

    /// A batch that did not fill its reserved buffer hands the rest back:
    /// a batch cut by rows keeps no `batch_bytes` reservation.
    #[test]
    fn a_batch_keeps_no_reservation_it_did_not_fill() {
        let mut b = PayloadBuilder::new(4, 1 << 20, 1 << 20);
        b.values.extend_from_slice(b"abc");
        b.close();
        let a = b.finish(false).unwrap();
        assert_eq!(a.len(), 1);
        assert!(
            a.get_array_memory_size() < 64 << 10,
            "{}",
            a.get_array_memory_size()
        );
    }
    use super::*;
    use arrow_array::Array;
    use arrow_array::cast::AsArray;
    use arrow_array::types::{Int16Type, Int64Type};

    #[test]
    fn a_stored_payload_is_read_and_cut_as_through_a_reader() {
        // Bytes from a block's buffer (a small one: several fills) give
        // what `read_to_end` through a reader gives, at every cap, with
        // the prefix read while looking for an HTTP head shorter or
        // longer than the cap.
        let body: Vec<u8> = (0..5000u32).map(|i| (i % 251) as u8).collect();
        for prefix_len in [0, 10, 300] {
            let (prefix, rest) = body.split_at(prefix_len);
            for max in [
                0u64,
                1,
                9,
                10,
                11,
                299,
                300,
                301,
                4999,
                5000,
                5001,
                u64::MAX,
            ] {
                let mut want = vec![7u8];
                let mut r = prefix.chain(rest);
                let want_cut = read_capped(PayloadSrc::Decoded(&mut r), &mut want, max).unwrap();
                let mut got = vec![7u8];
                let mut block = io::BufReader::with_capacity(64, rest);
                let got_cut =
                    read_capped(PayloadSrc::Stored(prefix, &mut block), &mut got, max).unwrap();
                assert_eq!((got_cut, &got), (want_cut, &want), "{prefix_len} {max}");
                assert_eq!(want_cut, (body.len() as u64) > max, "{prefix_len} {max}");
                let mut block = io::BufReader::with_capacity(64, rest);
                let counted = count_capped(PayloadSrc::Stored(prefix, &mut block), max).unwrap();
                assert_eq!(counted, want_cut, "{prefix_len} {max}");
            }
        }
    }

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

    /// Resources of `sizes` bytes each, as one WARC.
    fn resources(sizes: &[usize]) -> Vec<u8> {
        let mut out = Vec::new();
        for (i, &n) in sizes.iter().enumerate() {
            out.extend_from_slice(
                format!(
                    "WARC/1.1\r\nWARC-Type: resource\r\nWARC-Target-URI: http://a.example/{i}\r\nContent-Length: {n}\r\n\r\n"
                )
                .as_bytes(),
            );
            out.extend(std::iter::repeat_n(b'a' + (i % 26) as u8, n));
            out.extend_from_slice(b"\r\n\r\n");
        }
        out
    }

    #[test]
    fn batches_are_bounded_by_bytes_and_keep_every_row() {
        let sizes = [300, 300, 300, 2000, 10, 10, 700, 200, 100, 5];
        let data = resources(&sizes);
        let opts = ScanOptions::default()
            .columns_by_name(["warc_target_uri", "payload", "payload_truncated"])
            .unwrap();
        let opts = ScanOptions {
            batch_bytes: 1000,
            ..opts
        };
        let r = Reader::new(&data[..]).unwrap();
        let batches = Scanner::new(r, "mem.warc", opts)
            .collect::<Result<Vec<_>>>()
            .unwrap();
        let mut got = Vec::new();
        for b in &batches {
            let p = b.column(1).as_binary::<i32>();
            let bytes: usize = p.iter().map(|v| v.unwrap().len()).sum();
            // Headers count too; only a lone record may pass the bound.
            assert!(
                b.num_rows() == 1 || bytes + 80 * b.num_rows() <= 1000,
                "{} rows, {bytes} payload bytes",
                b.num_rows()
            );
            for (i, v) in p.iter().enumerate() {
                let v = v.unwrap();
                let uri = b.column(0).as_string::<i32>().value(i);
                got.push((uri.to_owned(), v.len()));
                assert!(v.iter().all(|&c| c == v[0]));
            }
        }
        let want: Vec<_> = sizes
            .iter()
            .enumerate()
            .map(|(i, &n)| (format!("http://a.example/{i}"), n))
            .collect();
        assert_eq!(got, want);
        // The 2000-byte record alone; the others packed, not one a batch.
        assert!(batches.iter().any(|b| b.num_rows() == 1 && b.column(1).as_binary::<i32>().value(0).len() == 2000));
        assert!(batches.len() < sizes.len());
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
