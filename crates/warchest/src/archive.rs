//! Any web archive, its format sniffed from the first decompressed bytes.
//!
//! Commands that work on every format (ls, extract, index, stats, check)
//! read through [`Reader`]: every record, whatever its format, is seen as a
//! WARC header (for ARC and Web InfoMall records, the header their
//! conversion to WARC would carry: the mapping lives in their modules) plus
//! a streamed block. Format-specific readers stay available for what only
//! one format has.

use std::fs::File;
use std::io::{self, BufRead, Read};
use std::path::Path;

use crate::codec::{Decoder, Source};
use crate::error::{Error, Result, Warning};
use crate::fields::Fields;
use crate::http::HttpHead;
use crate::limits::Limits;
use crate::warc::{self, ReaderOptions, RecordEnd, RecordLocation, WarcHeader};
use crate::{arc, infomall};

/// The formats warchest reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
#[cfg_attr(feature = "serde", serde(rename_all = "lowercase"))]
#[non_exhaustive]
pub enum Format {
    /// WARC, any version.
    Warc,
    /// ARC v1 or v2 (Internet Archive).
    Arc,
    /// Web InfoMall (Tianwang) page storage.
    InfoMall,
}

impl Format {
    /// Sniffs the format from the first decompressed bytes of a file
    /// (leading white space skipped). `None` when no format is recognised.
    /// An ARC file without its filedesc record is recognised by a first
    /// line that is a URL-record line.
    pub fn sniff(bytes: &[u8]) -> Option<Format> {
        let start = bytes.iter().position(|b| !b.is_ascii_whitespace())?;
        let b = &bytes[start..];
        let starts = |p: &[u8]| b.len() >= p.len() && b[..p.len()].eq_ignore_ascii_case(p);
        if starts(b"WARC/") {
            Some(Format::Warc)
        } else if starts(b"filedesc://") {
            Some(Format::Arc)
        } else if starts(b"version:") {
            Some(Format::InfoMall)
        } else {
            let line_end = b.iter().position(|&c| c == b'\n')?;
            // As sure as when searching through damage: a numeric date and
            // length, not just five words.
            arc::ArcHeader::parse_with(&b[..=line_end], None, arc::Trust::Searching)
                .map(|_| Format::Arc)
        }
    }

    /// The lower-case name.
    pub fn name(self) -> &'static str {
        match self {
            Format::Warc => "warc",
            Format::Arc => "arc",
            Format::InfoMall => "infomall",
        }
    }
}

// Boxed: the readers differ in size by hundreds of bytes.
enum Inner<S> {
    Warc(Box<warc::Reader<S>>),
    Arc(Box<arc::Reader<S>>),
    InfoMall(Box<infomall::Reader<S>>),
}

/// Reads records of any format.
pub struct Reader<S> {
    inner: Inner<S>,
    format: Format,
}

impl<R: Read> Reader<Decoder<R>> {
    /// A lenient reader over `reader`, compression and format sniffed.
    ///
    /// # Errors
    /// Reading the first bytes failed.
    pub fn new(reader: R) -> Result<Self> {
        Reader::with_options(reader, ReaderOptions::default())
    }

    /// A reader over `reader` with `opts`.
    ///
    /// # Errors
    /// Reading the first bytes failed.
    pub fn with_options(reader: R, opts: ReaderOptions) -> Result<Self> {
        let src = Decoder::new(reader, opts.decoder.clone());
        Reader::from_source(src, opts)
    }
}

impl Reader<Decoder<File>> {
    /// Opens the file at `path` for lenient reading.
    ///
    /// # Errors
    /// The file cannot be opened or read.
    pub fn open(path: impl AsRef<Path>) -> Result<Self> {
        Reader::open_with(path, ReaderOptions::default())
    }

    /// Opens the file at `path` with `opts` (its file name filled in).
    ///
    /// # Errors
    /// The file cannot be opened or read.
    pub fn open_with(path: impl AsRef<Path>, opts: ReaderOptions) -> Result<Self> {
        let (f, opts) = warc::open_file(path.as_ref(), opts)?;
        // Seekable: skipped payloads of plain files are sought past.
        let src = Decoder::new_file(f, opts.decoder.clone())
            .map_err(|e| Error::from(e).in_file(path.as_ref()))?;
        Reader::from_source(src, opts)
    }
}

impl<S: Source> Reader<S> {
    /// A reader over a source; the format is sniffed from its first bytes
    /// (WARC when nothing is recognised: the WARC reader then reports what
    /// it skips).
    ///
    /// # Errors
    /// Reading the first bytes failed.
    pub fn from_source(mut src: S, opts: ReaderOptions) -> Result<Self> {
        let file = opts.file.clone();
        let locate = |e: Error| match &file {
            Some(f) => e.in_file(f),
            None => e,
        };
        let format = Format::sniff(src.fill_buf().map_err(locate)?).unwrap_or(Format::Warc);
        let inner = match format {
            Format::Arc => Inner::Arc(Box::new(arc::Reader::from_source(src, opts))),
            Format::InfoMall => Inner::InfoMall(Box::new(infomall::Reader::from_source(src, opts))),
            Format::Warc => Inner::Warc(Box::new(warc::Reader::from_source(src, opts))),
        };
        Ok(Reader { inner, format })
    }

    /// A reader over a source whose format is known (no sniffing): used
    /// where reading starts at an arbitrary offset, as recovery does.
    pub fn from_source_as(src: S, opts: ReaderOptions, format: Format) -> Self {
        let inner = match format {
            Format::Arc => Inner::Arc(Box::new(arc::Reader::from_source(src, opts))),
            Format::InfoMall => Inner::InfoMall(Box::new(infomall::Reader::from_source(src, opts))),
            Format::Warc => Inner::Warc(Box::new(warc::Reader::from_source(src, opts))),
        };
        Reader { inner, format }
    }

    /// The format of the file.
    pub fn format(&self) -> Format {
        self.format
    }

    /// The next record; what the caller leaves unread of the previous one is
    /// skipped. `Ok(None)` at the end.
    ///
    /// # Errors
    /// As [`warc::Reader::next_record`] and its peers.
    pub fn next_record(&mut self) -> Result<Option<Record<'_, S>>> {
        match &mut self.inner {
            Inner::Warc(r) => Ok(r.next_record()?.map(|r| Record::new(FormatRecord::Warc(r)))),
            Inner::Arc(r) => Ok(r.next_record()?.map(|r| Record::new(FormatRecord::Arc(r)))),
            Inner::InfoMall(r) => Ok(r
                .next_record()?
                .map(|r| Record::new(FormatRecord::InfoMall(r)))),
        }
    }

    /// The records one after another as a standard [`Iterator`]: each
    /// item owns its header, location, format and how the record ended;
    /// blocks are skipped (seeked over where the input allows). A record's
    /// block borrows the reader, so reading blocks goes through
    /// [`next_record`](Reader::next_record). The iteration stops after
    /// the first error, which it yields.
    ///
    /// ```
    /// use warchest::archive::Reader;
    /// let data = b"WARC/1.1\r\nWARC-Type: resource\r\nContent-Length: 2\r\n\r\nhi\r\n\r\n";
    /// let mut reader = Reader::new(&data[..])?;
    /// let lengths: Vec<u64> = reader
    ///     .records()
    ///     .map(|r| r.map(|r| r.end.block_len))
    ///     .collect::<Result<_, _>>()?;
    /// assert_eq!(lengths, [2]);
    /// # Ok::<(), warchest::Error>(())
    /// ```
    pub fn records(&mut self) -> Records<'_, S> {
        Records {
            reader: self,
            done: false,
        }
    }

    /// The warnings collected so far.
    pub fn take_warnings(&mut self) -> Vec<Warning> {
        match &mut self.inner {
            Inner::Warc(r) => r.take_warnings(),
            Inner::Arc(r) => r.take_warnings(),
            Inner::InfoMall(r) => r.take_warnings(),
        }
    }

    /// The block of the record last returned by
    /// [`next_record`](Reader::next_record), from where reading stopped,
    /// when that record was dropped unfinished: lets a type that owns the
    /// reader (a Python iterator) stream a block without holding the
    /// borrowed [`Record`]. `None` when there is no such record.
    pub fn current_block(&mut self) -> Option<Block<'_, S>> {
        match &mut self.inner {
            Inner::Warc(r) => r.current_block().map(Block::Warc),
            Inner::Arc(r) => r.current_block().map(Block::Arc),
            Inner::InfoMall(r) => r.current_block().map(Block::InfoMall),
        }
    }

    /// Finishes the record last returned by
    /// [`next_record`](Reader::next_record) when it was dropped unfinished
    /// (skipping what is left of it) and says how it ended; `Ok(None)` when
    /// there is no such record.
    ///
    /// # Errors
    /// As [`Record::finish`].
    pub fn finish_record(&mut self) -> Result<Option<RecordEnd>> {
        match &mut self.inner {
            Inner::Warc(r) => r.finish_record(),
            Inner::Arc(r) => r.finish_record(),
            Inner::InfoMall(r) => r.finish_record(),
        }
    }

    /// Tells the source that payloads are read whole from here on
    /// ([`Source::prefer_reads`]: a plain file's memory map is let go for
    /// `read` calls); `true` when that changed how it reads. What is read
    /// does not change, the current record's block included.
    ///
    /// # Errors
    /// As [`Source::prefer_reads`].
    pub fn prefer_reads(&mut self) -> Result<bool> {
        match &mut self.inner {
            Inner::Warc(r) => r.prefer_reads(),
            Inner::Arc(r) => r.prefer_reads(),
            Inner::InfoMall(r) => r.prefer_reads(),
        }
    }

    /// The WARC reader, when the file is WARC.
    pub fn as_warc(&mut self) -> Option<&mut warc::Reader<S>> {
        match &mut self.inner {
            Inner::Warc(r) => Some(r.as_mut()),
            _ => None,
        }
    }

    /// The ARC reader, when the file is ARC.
    pub fn as_arc(&mut self) -> Option<&mut arc::Reader<S>> {
        match &mut self.inner {
            Inner::Arc(r) => Some(r.as_mut()),
            _ => None,
        }
    }

    /// The Web InfoMall reader, when the file is Web InfoMall.
    pub fn as_infomall(&mut self) -> Option<&mut infomall::Reader<S>> {
        match &mut self.inner {
            Inner::InfoMall(r) => Some(r.as_mut()),
            _ => None,
        }
    }
}

/// The iterator of [`Reader::records`].
pub struct Records<'a, S> {
    reader: &'a mut Reader<S>,
    done: bool,
}

/// A record's header, location, format and end, its block skipped
/// ([`Reader::records`]).
#[derive(Debug, Clone)]
pub struct RecordInfo {
    /// The header as WARC fields ([`Record::header`]).
    pub header: WarcHeader,
    /// Where the record is.
    pub location: RecordLocation,
    /// The record's format.
    pub format: Format,
    /// How the record ended: stored length, block length, truncation.
    pub end: RecordEnd,
}

impl<S: Source> Iterator for Records<'_, S> {
    type Item = Result<RecordInfo>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.done {
            return None;
        }
        let step = (|| {
            let Some(rec) = self.reader.next_record()? else {
                return Ok(None);
            };
            let header = rec.header().clone();
            let location = rec.location();
            let format = rec.format();
            let end = rec.finish()?;
            Ok(Some(RecordInfo {
                header,
                location,
                format,
                end,
            }))
        })();
        match step {
            Ok(Some(info)) => Some(Ok(info)),
            Ok(None) => {
                self.done = true;
                None
            }
            Err(e) => {
                self.done = true;
                Some(Err(e))
            }
        }
    }
}

/// A record of any format, as its format's reader gives it.
#[non_exhaustive]
pub enum FormatRecord<'r, S> {
    /// A WARC record.
    Warc(warc::Record<'r, S>),
    /// An ARC record.
    Arc(arc::Record<'r, S>),
    /// A Web InfoMall record.
    InfoMall(infomall::Record<'r, S>),
}

/// A record of any format: its header as WARC fields, where it is, and its
/// block streamed; for records that hold an HTTP message, the parsed head
/// ([`Record::http`]) and the payload ([`Record::payload`]).
///
/// ```
/// use std::io::Read;
/// use warchest::archive::Reader;
/// let data = b"WARC/1.1\r\nWARC-Type: response\r\nWARC-Target-URI: http://a.example/\r\n\
/// Content-Type: application/http; msgtype=response\r\nContent-Length: 79\r\n\r\n\
/// HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nContent-Type: text/plain\r\n\r\n\
/// 2\r\nhi\r\n0\r\n\r\n\r\n\r\n";
/// let mut reader = Reader::new(&data[..])?;
/// let mut record = reader.next_record()?.unwrap();
/// assert_eq!(record.http()?.map(|h| h.status()), Some(Some(200)));
/// let mut payload = Vec::new();
/// record.payload(true)?.read_to_end(&mut payload)?;
/// assert_eq!(payload, b"hi");
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct Record<'r, S> {
    inner: FormatRecord<'r, S>,
    /// `None` until the head is looked for; then what was found.
    http: Option<Option<HttpHead>>,
    /// The bytes looked at for a head that was not there, given back
    /// before the rest of the block, and how many were read again.
    unread: Vec<u8>,
    unread_at: usize,
}

impl<'r, S: Source> Record<'r, S> {
    fn new(inner: FormatRecord<'r, S>) -> Self {
        Record {
            inner,
            http: None,
            unread: Vec::new(),
            unread_at: 0,
        }
    }

    /// The record as its format's reader gives it.
    pub fn as_format(&self) -> &FormatRecord<'r, S> {
        &self.inner
    }

    /// The record as its format's reader gives it, mutably.
    pub fn as_format_mut(&mut self) -> &mut FormatRecord<'r, S> {
        &mut self.inner
    }

    /// The HTTP head at the start of the block, when the record may hold an
    /// HTTP message ([`may_have_http_head`]: requests, responses and
    /// revisits of HTTP(S) targets, ARC and Web InfoMall HTTP documents)
    /// and its block starts with one; read once, at the first call, with
    /// [`Limits::default`]. Call it before reading the block: the head is
    /// read off the block's start. When there is none (not HTTP, cut short,
    /// or longer than the limit), the block stays whole: [`Record::block`]
    /// gives the bytes it looked at first. [`Record::payload`] starts after
    /// them, as payload digests do: after a blank line that ended a head
    /// that did not parse.
    ///
    /// # Errors
    /// As reading the block; a head over the limits.
    pub fn http(&mut self) -> Result<Option<&HttpHead>> {
        self.http_with(&Limits::default())
    }

    /// [`Record::http`] with `limits` for the head.
    ///
    /// # Errors
    /// As [`Record::http`].
    pub fn http_with(&mut self, limits: &Limits) -> Result<Option<&HttpHead>> {
        if self.http.is_none() {
            let head = if may_have_http_head(self.header()) {
                // A block that does not start with a head stays whole: the
                // bytes looked at are read again ([`Record::block`]).
                match crate::http::read_head_keeping(&mut self.block(), limits)? {
                    Ok(head) => Some(head),
                    Err(bytes) => {
                        self.unread = bytes;
                        self.unread_at = 0;
                        None
                    }
                }
            } else {
                None
            };
            self.http = Some(head);
        }
        Ok(self.http.as_ref().and_then(Option::as_ref))
    }

    /// The payload, streamed: for a record holding an HTTP message, the
    /// body after its head with the transfer coding removed, and with the
    /// content coding removed too when `decode`; for any other record, the
    /// block. Reads the HTTP head first if [`Record::http`] has not.
    ///
    /// # Errors
    /// As reading the block; a transfer or content coding warchest cannot
    /// remove.
    pub fn payload(&mut self, decode: bool) -> Result<Payload<'_>>
    where
        S: 'r,
    {
        let (block, head) = self.payload_parts()?;
        match head {
            Some(head) => Ok(crate::http::payload_reader(block, head, decode)?),
            None => Ok(Box::new(block)),
        }
    }

    /// The payload as a lenient reader gives it (warcio's
    /// `content_stream()`): codings it cannot undo give the bytes as
    /// stored, a content coding that breaks midway what decoded before,
    /// and the notes say which ([`payload_reader_lenient_noted`]). For a
    /// record without an HTTP head, the block as [`Record::payload`] gives
    /// it, with nothing noted.
    ///
    /// [`payload_reader_lenient_noted`]: crate::http::payload_reader_lenient_noted
    ///
    /// # Errors
    /// As reading the head ([`Record::http`]).
    pub fn payload_lenient(&mut self) -> Result<(LenientPayload<'_>, crate::http::PayloadNotes)>
    where
        S: Send + 'r,
    {
        let (block, head) = self.payload_parts()?;
        Ok(match head {
            Some(head) => crate::http::payload_reader_lenient_noted(block, head),
            None => (Box::new(block), crate::http::PayloadNotes::default()),
        })
    }

    /// The block from where the payload starts, and the HTTP head, read
    /// first if [`Record::http`] has not.
    fn payload_parts(&mut self) -> Result<(Block<'_, S>, Option<&HttpHead>)> {
        self.http()?;
        let Record {
            inner,
            http,
            unread,
            unread_at,
        } = self;
        // The bytes looked at for a head that did not parse are not the
        // payload: it starts after them, where payload digests start it
        // (a head ended by a blank line that did not parse, as warcio's
        // lenient reading takes one), and where it always did here.
        *unread_at = unread.len();
        Ok((
            block_with(inner, unread, unread_at),
            http.as_ref().and_then(Option::as_ref),
        ))
    }
}

/// A record's payload stream ([`Record::payload`]).
pub type Payload<'a> = Box<dyn Read + 'a>;

/// A record's payload stream as a lenient reader gives it
/// ([`Record::payload_lenient`]).
pub type LenientPayload<'a> = Box<dyn Read + Send + 'a>;

/// What every reader of the toolkit says of an input in which no record
/// of any format is found (an empty file included): such an input is not
/// an empty archive but one not read (the command line exits 2 for it,
/// the Python calls raise, a scan gives it as the file's error).
pub fn no_records_message(name: &str) -> String {
    format!("no WARC, ARC or Web InfoMall record found in {name}")
}

/// True when a record's block may start with an HTTP head: requests,
/// responses and revisits with a block, whose content type is
/// `application/http` or whose target is an `http:`/`https:` URI (the rule
/// warcio applies, so that both see the same heads).
pub fn may_have_http_head(header: &WarcHeader) -> bool {
    let t = header.record_type_str();
    let typed = t.as_deref().is_some_and(|t| {
        ["response", "request", "revisit"]
            .iter()
            .any(|k| t.eq_ignore_ascii_case(k))
    });
    if !typed || header.content_length() == Some(0) {
        return false;
    }
    header.is_http() || header.target_uri().is_some_and(|u| is_http_uri(&u))
}

/// True when `uri` (a WARC-Target-URI without its brackets) is an `http:`
/// or `https:` URI, in any case: with a request, response or revisit type,
/// such a record is read for an HTTP head ([`may_have_http_head`]).
pub fn is_http_uri(uri: &str) -> bool {
    let u = uri.as_bytes();
    let starts = |p: &[u8]| u.len() >= p.len() && u[..p.len()].eq_ignore_ascii_case(p);
    starts(b"http:") || starts(b"https:")
}

/// The block of `inner`, after the bytes of `unread` from `at` on (a head
/// looked for and not found).
fn block_with<'a, S: Source>(
    inner: &'a mut FormatRecord<'_, S>,
    unread: &'a [u8],
    at: &'a mut usize,
) -> Block<'a, S> {
    if *at < unread.len() {
        return Block::Unread(Unread {
            bytes: unread,
            at,
            rest: Box::new(block_of(inner)),
        });
    }
    block_of(inner)
}

fn block_of<'a, S: Source>(inner: &'a mut FormatRecord<'_, S>) -> Block<'a, S> {
    match inner {
        FormatRecord::Warc(r) => Block::Warc(r.block()),
        FormatRecord::Arc(r) => Block::Arc(r.block()),
        FormatRecord::InfoMall(r) => Block::InfoMall(r.block()),
    }
}

impl<S: Source> Record<'_, S> {
    /// The record's header as WARC fields (for ARC and InfoMall, the header
    /// its WARC conversion carries).
    pub fn header(&self) -> &WarcHeader {
        match &self.inner {
            FormatRecord::Warc(r) => r.header(),
            FormatRecord::Arc(r) => r.header(),
            FormatRecord::InfoMall(r) => r.header(),
        }
    }

    /// The record's header as stored: the WARC header block, the ARC
    /// URL-record line, the Web InfoMall properties.
    pub fn raw_header(&self) -> &[u8] {
        match &self.inner {
            FormatRecord::Warc(r) => r.header().as_bytes(),
            FormatRecord::Arc(r) => r.raw_header(),
            FormatRecord::InfoMall(r) => r.raw_header(),
        }
    }

    /// What the source record holds that its WARC header does not (ARC v2
    /// fields, Web InfoMall `origin` and unknown properties...): conversion
    /// to WARC writes them into a metadata record. Empty for WARC records.
    pub fn leftovers(&self) -> Fields {
        match &self.inner {
            FormatRecord::Warc(_) => Fields::new(),
            FormatRecord::Arc(r) => r.leftovers().clone(),
            FormatRecord::InfoMall(r) => r.infomall_header().leftovers(),
        }
    }

    /// Where the record is.
    pub fn location(&self) -> RecordLocation {
        match &self.inner {
            FormatRecord::Warc(r) => r.location(),
            FormatRecord::Arc(r) => r.location(),
            FormatRecord::InfoMall(r) => r.location(),
        }
    }

    /// The source the record is read from: for a [`Decoder`], the member
    /// the reader is in (a validator reads the gzip header of the member a
    /// record starts). Reading from it would desynchronise the reader.
    pub fn source(&self) -> &S {
        match &self.inner {
            FormatRecord::Warc(r) => r.reader().get_ref(),
            FormatRecord::Arc(r) => r.reader().get_ref(),
            FormatRecord::InfoMall(r) => r.reader().get_ref(),
        }
    }

    /// The format of the record.
    pub fn format(&self) -> Format {
        match &self.inner {
            FormatRecord::Warc(_) => Format::Warc,
            FormatRecord::Arc(_) => Format::Arc,
            FormatRecord::InfoMall(_) => Format::InfoMall,
        }
    }

    /// The block, streamed.
    pub fn block(&mut self) -> Block<'_, S> {
        block_with(&mut self.inner, &self.unread, &mut self.unread_at)
    }

    /// Reads the rest of the block into memory.
    ///
    /// # Errors
    /// As reading the block.
    pub fn read_block(&mut self) -> Result<Vec<u8>> {
        let mut v = Vec::new();
        self.block().read_to_end(&mut v).map_err(Error::from)?;
        Ok(v)
    }

    /// Skips what is left and says how the record ended.
    ///
    /// # Errors
    /// As reading the block.
    pub fn finish(self) -> Result<RecordEnd> {
        match self.inner {
            FormatRecord::Warc(r) => r.finish(),
            FormatRecord::Arc(r) => r.finish(),
            FormatRecord::InfoMall(r) => r.finish(),
        }
    }
}

/// The block of a record of any format.
#[non_exhaustive]
pub enum Block<'a, S> {
    /// A WARC block.
    Warc(warc::BlockReader<'a, S>),
    /// An ARC document.
    Arc(arc::BlockReader<'a, S>),
    /// A Web InfoMall record's content, decompressed.
    InfoMall(infomall::BlockReader<'a, S>),
    /// The bytes [`Record::http`] looked at for a head that was not
    /// there, then the rest of the block.
    Unread(Unread<'a, S>),
}

/// The start of a block read again ([`Block::Unread`]).
pub struct Unread<'a, S> {
    bytes: &'a [u8],
    /// How many of `bytes` were read: kept by the record, so that the next
    /// [`Record::block`] goes on from there.
    at: &'a mut usize,
    rest: Box<Block<'a, S>>,
}

impl<S: Source> Read for Block<'_, S> {
    fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
        match self {
            Block::Warc(b) => b.read(out),
            Block::Arc(b) => b.read(out),
            Block::InfoMall(b) => b.read(out),
            Block::Unread(u) => {
                let n = {
                    let buf = u.fill_buf_inner()?;
                    let n = buf.len().min(out.len());
                    out[..n].copy_from_slice(&buf[..n]);
                    n
                };
                u.consume_inner(n);
                Ok(n)
            }
        }
    }
}

impl<S: Source> BufRead for Block<'_, S> {
    fn fill_buf(&mut self) -> io::Result<&[u8]> {
        match self {
            Block::Warc(b) => b.fill_buf(),
            Block::Arc(b) => b.fill_buf(),
            Block::InfoMall(b) => b.fill_buf(),
            Block::Unread(u) => u.fill_buf_inner(),
        }
    }

    fn consume(&mut self, n: usize) {
        match self {
            Block::Warc(b) => b.consume(n),
            Block::Arc(b) => b.consume(n),
            Block::InfoMall(b) => b.consume(n),
            Block::Unread(u) => u.consume_inner(n),
        }
    }
}

impl<S: Source> Unread<'_, S> {
    fn fill_buf_inner(&mut self) -> io::Result<&[u8]> {
        match self.bytes.get(*self.at..) {
            Some(left) if !left.is_empty() => Ok(left),
            _ => self.rest.fill_buf(),
        }
    }

    fn consume_inner(&mut self, n: usize) {
        let left = self.bytes.len().saturating_sub(*self.at);
        if left > 0 {
            *self.at += n.min(left);
        } else {
            self.rest.consume(n);
        }
    }
}

/// The first place in `buf[from..scan]` where a record of `format` may
/// start (an index into `buf`): `WARC/<digit>` in any letter case (as the
/// reader takes a version line), `version:`, or a line that parses as an
/// ARC URL-record line (at a line start, or a URL inside a damaged line).
/// Bytes of `buf` past `scan` are look-ahead for a candidate near the end,
/// and `buf[..from]` look-behind for the line-start test. Used by recovery
/// and by byte-range splits (`split`), so that both search alike.
pub fn record_candidate(format: Format, buf: &[u8], from: usize, scan: usize) -> Option<usize> {
    // An ARC header line is looked for within this many bytes.
    const LINE_MAX: usize = 16 << 10;
    let scan = scan.min(buf.len());
    if from >= scan {
        return None;
    }
    match format {
        Format::Warc => memchr::memchr2_iter(b'W', b'w', &buf[from..scan])
            .map(|p| p + from)
            .find(|&p| {
                buf.get(p..p + 5)
                    .is_some_and(|w| w.eq_ignore_ascii_case(b"WARC/"))
                    && buf.get(p + 5).is_some_and(u8::is_ascii_digit)
            }),
        Format::InfoMall => {
            memchr::memmem::find(&buf[from..(scan + 7).min(buf.len())], b"version:")
                .map(|p| p + from)
                .filter(|&p| p < scan)
        }
        Format::Arc => (from..scan).find(|&p| {
            let rest = &buf[p..];
            if !rest[0].is_ascii_alphabetic() {
                return false;
            }
            let line_start = p == 0 || buf[p - 1] == b'\n';
            let url = [&b"http:"[..], b"https:", b"dns:", b"ftp:", b"filedesc:"]
                .iter()
                .any(|s| rest.starts_with(s));
            if !line_start && !url {
                return false;
            }
            let Some(nl) = memchr::memchr(b'\n', &rest[..rest.len().min(LINE_MAX)]) else {
                return false;
            };
            arc::ArcHeader::parse_with(&rest[..=nl], None, arc::Trust::Searching).is_some()
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sniffs_formats() {
        assert_eq!(Format::sniff(b"WARC/1.0\r\n"), Some(Format::Warc));
        assert_eq!(Format::sniff(b"\r\nwarc/1.0\r\n"), Some(Format::Warc));
        assert_eq!(
            Format::sniff(b"filedesc://x.arc 0.0.0.0 2005 text/plain 70\n"),
            Some(Format::Arc)
        );
        assert_eq!(
            Format::sniff(b"version: 1.0\nurl: http://a/\n"),
            Some(Format::InfoMall)
        );
        assert_eq!(
            Format::sniff(b"http://a/ 1.2.3.4 20140216050221 text/html 10\nHTTP/1.0"),
            Some(Format::Arc)
        );
        assert_eq!(Format::sniff(b"<html>"), None);
        assert_eq!(Format::sniff(b""), None);
    }

    /// A response record whose block does not start with an HTTP head.
    fn response(block: &[u8]) -> Vec<u8> {
        let mut v = format!(
            "WARC/1.1\r\nWARC-Type: response\r\nWARC-Target-URI: http://a.example/\r\n\
             Content-Type: application/http; msgtype=response\r\nContent-Length: {}\r\n\r\n",
            block.len()
        )
        .into_bytes();
        v.extend_from_slice(block);
        v.extend_from_slice(b"\r\n\r\n");
        v
    }

    /// Looking for a head that is not there leaves the block whole: before,
    /// the bytes looked at (up to a blank line, or the head's limit) were
    /// gone from `block()`, so from derive's block digests and replay's
    /// bodies. The payload still starts after them, where payload digests
    /// start it.
    #[test]
    fn a_block_without_a_head_stays_whole() {
        let not_http = b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR\r\n\r\nthe body";
        let long = [&b"GET"[..], &[b'a'; 300]].concat();
        let small = Limits {
            max_http_head: 64,
            ..Limits::default()
        };
        let cut = b"HTTP/1.1 200 OK\r\nno end of head";
        for (block, limits, payload) in [
            (&not_http[..], Limits::default(), &b"the body"[..]),
            (&long[..], small, &long[68..]),
            (&cut[..], Limits::default(), &b""[..]),
        ] {
            let data = response(block);
            let mut r = Reader::new(&data[..]).unwrap();
            let mut rec = r.next_record().unwrap().unwrap();
            let head = rec.http_with(&limits).unwrap().map(|h| h.raw().to_vec());
            assert_eq!(head, None, "{}", String::from_utf8_lossy(block));
            assert_eq!(rec.read_block().unwrap(), block);
            // Read in two steps.
            let mut r = Reader::new(&data[..]).unwrap();
            let mut rec = r.next_record().unwrap().unwrap();
            assert!(rec.http_with(&limits).unwrap().is_none());
            let mut first = [0u8; 5];
            rec.block().read_exact(&mut first).unwrap();
            let mut rest = Vec::new();
            rec.block().read_to_end(&mut rest).unwrap();
            assert_eq!([&first[..], &rest].concat(), block);
            assert!(rec.finish().is_ok());
            // The payload.
            let mut r = Reader::new(&data[..]).unwrap();
            let mut rec = r.next_record().unwrap().unwrap();
            assert!(rec.http_with(&limits).unwrap().is_none());
            let mut got = Vec::new();
            rec.payload(true).unwrap().read_to_end(&mut got).unwrap();
            assert_eq!(got, payload, "{}", String::from_utf8_lossy(block));
        }
        // A head: the block after it, as before.
        let data = response(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nhi");
        let mut r = Reader::new(&data[..]).unwrap();
        let mut rec = r.next_record().unwrap().unwrap();
        assert_eq!(rec.http().unwrap().and_then(|h| h.status()), Some(200));
        assert_eq!(rec.read_block().unwrap(), b"hi");
    }

    /// The lenient payload: codings it cannot undo give the bytes as
    /// stored, noted; no head gives the payload `payload()` gives.
    #[test]
    fn a_lenient_payload_notes_what_it_fell_back_on() {
        let data = response(b"HTTP/1.1 200 OK\r\nContent-Encoding: gzip\r\n\r\nnot gzip");
        let mut r = Reader::new(&data[..]).unwrap();
        let mut rec = r.next_record().unwrap().unwrap();
        let (mut p, notes) = rec.payload_lenient().unwrap();
        let mut got = Vec::new();
        p.read_to_end(&mut got).unwrap();
        drop(p);
        assert_eq!(got, b"not gzip");
        assert!(
            notes
                .get()
                .contains(crate::http::PayloadFallback::ContentUndecoded)
        );
        let data = response(b"\x89PNG\r\n\r\nimage");
        let mut r = Reader::new(&data[..]).unwrap();
        let mut rec = r.next_record().unwrap().unwrap();
        let (mut p, notes) = rec.payload_lenient().unwrap();
        let mut got = Vec::new();
        p.read_to_end(&mut got).unwrap();
        assert_eq!(got, b"image");
        assert!(notes.get().is_empty());
    }

    #[test]
    fn streams_the_current_block_without_the_record() {
        let data = b"WARC/1.1\r\nWARC-Type: resource\r\nContent-Length: 5\r\n\r\nhello\r\n\r\n\
WARC/1.1\r\nWARC-Type: metadata\r\nContent-Length: 2\r\n\r\nhi\r\n\r\n";
        let mut r = Reader::new(&data[..]).unwrap();
        assert!(r.current_block().is_none());
        assert!(r.next_record().unwrap().is_some());
        let mut two = [0u8; 2];
        r.current_block().unwrap().read_exact(&mut two).unwrap();
        assert_eq!(&two, b"he");
        let end = r.finish_record().unwrap().unwrap();
        assert_eq!(end.block_len, 5);
        assert_eq!(end.stored_len, Some(61));
        assert!(r.current_block().is_none());
        assert!(r.finish_record().unwrap().is_none());
        let mut rec = r.next_record().unwrap().unwrap();
        assert_eq!(rec.location().offset, 61);
        assert_eq!(rec.read_block().unwrap(), b"hi");
    }

    #[test]
    fn reads_warc_through_the_generic_reader() {
        let data = b"WARC/1.1\r\nWARC-Type: resource\r\nContent-Length: 2\r\n\r\nhi\r\n\r\n";
        let mut r = Reader::new(&data[..]).unwrap();
        assert_eq!(r.format(), Format::Warc);
        let mut rec = r.next_record().unwrap().unwrap();
        assert_eq!(rec.read_block().unwrap(), b"hi");
        assert_eq!(rec.finish().unwrap().stored_len, Some(data.len() as u64));
        assert!(r.next_record().unwrap().is_none());
    }
}
