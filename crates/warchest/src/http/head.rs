//! The head of an HTTP message: start line and header fields.

use std::borrow::Cow;
use std::ops::Range;

use crate::fields::{Field, FieldError, FieldIssue, Fields, LineSeen, is_token_char};
use crate::{Limits, Warning, WarningKind};

use super::{Coding, HttpError, is_ws};

/// Whether a head is a request or a response.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
#[cfg_attr(feature = "serde", serde(rename_all = "lowercase"))]
pub enum MessageKind {
    /// Starts with a request line, `GET /path HTTP/1.1`.
    Request,
    /// Starts with a status line, `HTTP/1.1 200 OK`.
    Response,
}

/// What a lenient parse of an HTTP head accepted.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
#[cfg_attr(feature = "serde", serde(rename_all = "kebab-case"))]
#[non_exhaustive]
pub enum HttpNoteKind {
    /// Empty lines before the start line (RFC 9112 section 2.2 lets a
    /// recipient ignore them).
    LeadingBlankLines,
    /// A line ended in LF without CR.
    BareLf,
    /// A line ended in CR CR LF.
    ExtraCr,
    /// The version is not `HTTP/` digits (e.g. lower-case `http/1.1`).
    NonstandardVersion,
    /// A request line without an HTTP version (`GET /path`).
    MissingVersion,
    /// White space inside the request target.
    SpaceInTarget,
    /// The status code is missing, not three digits, or too large.
    BadStatusCode,
    /// The status code runs into the reason phrase (`200OK`).
    NoSpaceAfterStatus,
    /// No space and no reason phrase after the status code (`HTTP/1.1 200`).
    MissingReason,
    /// The start line or a header line is not UTF-8; it is kept as bytes.
    NonUtf8,
    /// A header line without a colon; kept raw, not listed as a field.
    LineWithoutColon,
    /// White space between a field name and its colon.
    SpaceBeforeColon,
    /// A field name with characters outside the token grammar.
    BadFieldName,
    /// A continuation line (obsolete line folding).
    ObsFold,
    /// Content-Length is not a number, or several differ.
    BadContentLength,
    /// The head did not end with an empty line (the block ended first).
    MissingTerminator,
}

impl HttpNoteKind {
    /// The note for what the field walk reported about a head's field
    /// line, if it is one an HTTP head notes (the walk's other findings are
    /// noted from the line ends, or are not about HTTP).
    fn of_field_issue(kind: WarningKind) -> Option<Self> {
        Some(match kind {
            WarningKind::LineWithoutColon => Self::LineWithoutColon,
            WarningKind::SpaceBeforeColon => Self::SpaceBeforeColon,
            WarningKind::BadFieldName => Self::BadFieldName,
            _ => return None,
        })
    }

    /// The kebab-case name used in reports.
    pub fn name(self) -> &'static str {
        match self {
            HttpNoteKind::LeadingBlankLines => "leading-blank-lines",
            HttpNoteKind::BareLf => "bare-lf",
            HttpNoteKind::ExtraCr => "extra-cr",
            HttpNoteKind::NonstandardVersion => "nonstandard-version",
            HttpNoteKind::MissingVersion => "missing-version",
            HttpNoteKind::SpaceInTarget => "space-in-target",
            HttpNoteKind::BadStatusCode => "bad-status-code",
            HttpNoteKind::NoSpaceAfterStatus => "no-space-after-status",
            HttpNoteKind::MissingReason => "missing-reason",
            HttpNoteKind::NonUtf8 => "non-utf8",
            HttpNoteKind::LineWithoutColon => "line-without-colon",
            HttpNoteKind::SpaceBeforeColon => "space-before-colon",
            HttpNoteKind::BadFieldName => "bad-field-name",
            HttpNoteKind::ObsFold => "obs-fold",
            HttpNoteKind::BadContentLength => "bad-content-length",
            HttpNoteKind::MissingTerminator => "missing-terminator",
        }
    }

    /// A plain sentence for reports.
    pub fn message(self) -> &'static str {
        match self {
            HttpNoteKind::LeadingBlankLines => "HTTP head starts with empty lines; skipped",
            HttpNoteKind::BareLf => "HTTP line ends in LF without CR",
            HttpNoteKind::ExtraCr => "HTTP line ends in CR CR LF",
            HttpNoteKind::NonstandardVersion => "HTTP version is not written HTTP/<digits>",
            HttpNoteKind::MissingVersion => "HTTP request line has no version",
            HttpNoteKind::SpaceInTarget => "HTTP request target contains white space",
            HttpNoteKind::BadStatusCode => "HTTP status code is missing or not three digits",
            HttpNoteKind::NoSpaceAfterStatus => "no space between HTTP status code and reason",
            HttpNoteKind::MissingReason => "HTTP status line has no space or reason after the code",
            HttpNoteKind::NonUtf8 => "HTTP line is not UTF-8; kept as bytes",
            HttpNoteKind::LineWithoutColon => "HTTP header line without a colon; ignored",
            HttpNoteKind::SpaceBeforeColon => "white space before the colon of an HTTP header",
            HttpNoteKind::BadFieldName => "HTTP header name is not a token",
            HttpNoteKind::ObsFold => "HTTP header continued on the next line (obsolete folding)",
            HttpNoteKind::BadContentLength => "HTTP Content-Length is not one number",
            HttpNoteKind::MissingTerminator => "HTTP head not ended by an empty line",
        }
    }

    /// The nearest library-wide [`WarningKind`].
    pub fn warning_kind(self) -> WarningKind {
        match self {
            HttpNoteKind::BareLf => WarningKind::BareLf,
            HttpNoteKind::NonUtf8 => WarningKind::NonUtf8,
            HttpNoteKind::LineWithoutColon => WarningKind::LineWithoutColon,
            HttpNoteKind::SpaceBeforeColon => WarningKind::SpaceBeforeColon,
            HttpNoteKind::BadFieldName => WarningKind::BadFieldName,
            HttpNoteKind::BadContentLength => WarningKind::BadContentLength,
            _ => WarningKind::Other,
        }
    }
}

/// One oddity in an HTTP head: what, and where in the head.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
pub struct HttpNote {
    /// What was found.
    pub kind: HttpNoteKind,
    /// Byte offset from the start of the head.
    pub offset: usize,
}

impl HttpNote {
    /// As a library [`Warning`], given the stored offset of the head's first
    /// byte (exact for uncompressed files; for compressed ones pass the
    /// member's offset, as [`Warning`] documents).
    pub fn to_warning(&self, head_offset: u64, exact: bool) -> Warning {
        let offset = if exact {
            head_offset.saturating_add(self.offset as u64)
        } else {
            head_offset
        };
        Warning::new(self.kind.warning_kind(), offset, self.kind.message())
    }
}

/// Where the head ends: the length of the head in `bytes`, terminating
/// empty line included, so the payload starts at the returned index.
/// `None` when the end is not in `bytes` yet.
///
/// An empty line is a line of nothing but CRs, so `\r\n\r\n`, `\n\n`, the
/// `\r\n\n` and `\n\r\n` of Web InfoMall data and the `\r\r\n` of some
/// broken writers all end a head. Empty lines before the start line are
/// skipped, not taken as the end.
pub fn find_head_end(bytes: &[u8]) -> Option<usize> {
    HeadFinder::new().find(bytes)
}

/// [`find_head_end`] for a buffer that grows: remembers how far it looked,
/// so calling it after each read costs only the new bytes.
#[derive(Debug, Clone, Default)]
pub struct HeadFinder {
    /// Where the start line begins, once known.
    start: Option<usize>,
    /// Where to resume looking.
    resume: usize,
}

impl HeadFinder {
    /// A finder that has seen nothing.
    pub fn new() -> Self {
        HeadFinder::default()
    }

    /// The head length in `bytes` (see [`find_head_end`]). `bytes` must be
    /// the same buffer each call, possibly longer (its start unchanged).
    pub fn find(&mut self, bytes: &[u8]) -> Option<usize> {
        self.find_spans(bytes).map(|(_, end)| end)
    }

    /// (start of the terminating empty line, end of head).
    fn find_spans(&mut self, bytes: &[u8]) -> Option<(usize, usize)> {
        let start = match self.start {
            Some(s) => s,
            None => {
                let s = bytes.iter().position(|&b| b != b'\r' && b != b'\n')?;
                self.start = Some(s);
                self.resume = s;
                s
            }
        };
        let mut i = self.resume.max(start);
        while let Some(p) = memchr::memchr(b'\n', bytes.get(i..)?) {
            let lf = i + p;
            let mut j = lf + 1;
            while j < bytes.len() && bytes[j] == b'\r' {
                j += 1;
            }
            if j == bytes.len() {
                // Only CRs (or nothing) after this LF so far: look again here.
                self.resume = lf;
                return None;
            }
            if bytes[j] == b'\n' {
                return Some((lf + 1, j + 1));
            }
            i = j;
        }
        self.resume = bytes.len();
        None
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum StartLine {
    Status {
        version: Range<usize>,
        status: Option<u16>,
        reason: Range<usize>,
    },
    Request {
        method: Range<usize>,
        target: Range<usize>,
        version: Option<Range<usize>>,
    },
}

/// A parsed HTTP head: start line and header fields, over the raw bytes.
///
/// Header fields are kept as a [`Fields`]: order, case, repeats,
/// continuation lines and non-UTF-8 bytes survive; lookups ignore case.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HttpHead {
    /// The whole head, leading blank lines to terminating empty line.
    fields: Fields,
    /// The start line, without its line end.
    line: Range<usize>,
    start: StartLine,
    notes: Vec<HttpNote>,
}

impl HttpHead {
    /// Parses the head at the start of `bytes` with the default [`Limits`].
    ///
    /// `Ok(None)`: the end of the head is not in `bytes` yet; read more (up
    /// to the limit) or, at the end of the block, use
    /// [`parse_unterminated`](HttpHead::parse_unterminated).
    /// `Ok(Some((head, len)))`: the payload starts at `bytes[len..]`.
    ///
    /// # Errors
    /// [`HttpError::NotHttp`] when the first line is neither a status nor a
    /// request line; [`HttpError::TooLarge`], [`HttpError::TooManyFields`]
    /// past the limits.
    pub fn parse(bytes: &[u8]) -> Result<Option<(HttpHead, usize)>, HttpError> {
        HttpHead::parse_with_limits(bytes, &Limits::default())
    }

    /// [`parse`](HttpHead::parse) with the given limits
    /// (`max_http_head`, `max_fields`).
    ///
    /// # Errors
    /// As [`parse`](HttpHead::parse).
    pub fn parse_with_limits(
        bytes: &[u8],
        limits: &Limits,
    ) -> Result<Option<(HttpHead, usize)>, HttpError> {
        HttpHead::parse_reusing(bytes, limits, &mut None)
    }

    /// [`parse_with_limits`](HttpHead::parse_with_limits), parsing into
    /// the head in `spare` (a head of an earlier parse, whose buffers are
    /// reused) when there is one: a caller that keeps the heads of many
    /// messages need not allocate one per message. The head is taken from
    /// `spare` only when it parsed; otherwise `spare` holds the head parsed
    /// into (the one given, or a new one), emptied: no start line, no
    /// fields, no notes, its buffers' capacity kept for the next parse.
    ///
    /// # Errors
    /// As [`parse`](HttpHead::parse).
    pub fn parse_reusing(
        bytes: &[u8],
        limits: &Limits,
        spare: &mut Option<HttpHead>,
    ) -> Result<Option<(HttpHead, usize)>, HttpError> {
        let head = spare.get_or_insert_with(HttpHead::empty);
        match head.parse_in(bytes, limits) {
            Some((Ok(()), end)) => Ok(spare.take().map(|h| (h, end))),
            Some((Err(e), _)) => Err(e),
            None if bytes.len() >= limits.max_http_head => Err(HttpError::TooLarge {
                limit: limits.max_http_head,
            }),
            None => Ok(None),
        }
    }

    /// The head at the start of `bytes` when its end lies in `bytes`, with
    /// its length, parsed where it lies (no copy of `bytes`, one walk that
    /// finds the end and parses the head): what
    /// [`HttpHead::parse_with_limits`] gives on `bytes[..len]`. `None`
    /// when the end is not in `bytes` (read more).
    ///
    /// # Errors
    /// In the result, as [`HttpHead::parse_with_limits`].
    pub fn parse_found(
        bytes: &[u8],
        limits: &Limits,
    ) -> Option<(Result<HttpHead, HttpError>, usize)> {
        let mut head = HttpHead::empty();
        let (parsed, end) = head.parse_in(bytes, limits)?;
        Some((parsed.map(|()| head), end))
    }

    /// Parses all of `bytes` as a head that has no terminating empty line:
    /// the block ended before one (a response with headers only, cut
    /// short). Adds a [`HttpNoteKind::MissingTerminator`] note.
    ///
    /// # Errors
    /// As [`parse`](HttpHead::parse).
    pub fn parse_unterminated(bytes: &[u8], limits: &Limits) -> Result<HttpHead, HttpError> {
        let mut head = HttpHead::empty();
        head.parse_unterminated_in(bytes, limits)?;
        Ok(head)
    }

    /// A head with no bytes, to parse into (handed out as it is only as a
    /// spare: its accessors give no start line and no fields).
    pub(crate) fn empty() -> HttpHead {
        HttpHead {
            fields: Fields::new(),
            line: 0..0,
            start: StartLine::Status {
                version: 0..0,
                status: None,
                reason: 0..0,
            },
            notes: Vec::new(),
        }
    }

    /// [`HttpHead::parse_found`] into `self`, reusing its buffers: the
    /// head's end is found by the walk that parses its fields (a blank
    /// line is a line of nothing but CRs, as [`find_head_end`] has it),
    /// the line notes are taken in the same pass, and only the head is
    /// copied. When the head does not parse (an error, or its end not in
    /// `bytes`) `self` is emptied, keeping its buffers' capacity: a head
    /// half parsed into, with the old bytes gone, is never left behind.
    pub(crate) fn parse_in(
        &mut self,
        bytes: &[u8],
        limits: &Limits,
    ) -> Option<(Result<(), HttpError>, usize)> {
        let parsed = self.walk_head(bytes, limits);
        if !matches!(parsed, Some((Ok(()), _))) {
            self.clear();
        }
        parsed
    }

    /// Empties `self`, keeping its buffers' capacity: what
    /// [`HttpHead::empty`] gives.
    fn clear(&mut self) {
        self.fields.clear();
        self.line = 0..0;
        self.start = HttpHead::empty().start;
        self.notes.clear();
    }

    /// The heap the head holds (its buffers' capacity, not the length of
    /// what is in them): for a caller that keeps heads to parse into and
    /// bounds what they hold.
    pub fn heap_bytes(&self) -> usize {
        self.fields.heap_bytes() + self.notes.capacity() * std::mem::size_of::<HttpNote>()
    }

    /// [`HttpHead::parse_in`], which empties `self` when this fails.
    fn walk_head(
        &mut self,
        bytes: &[u8],
        limits: &Limits,
    ) -> Option<(Result<(), HttpError>, usize)> {
        // The walk looks no further than the limit allows a head to end;
        // anything unusual is decided by the end search alone, as before
        // this walk existed (see `unsure`).
        let cap = bytes
            .len()
            .min(limits.max_http_head.saturating_add(4))
            .min(u32::MAX as usize);
        let window = &bytes[..cap];
        let cut = cap < bytes.len();
        let lead = leading_blank(window);
        let Some(first_lf) = memchr::memchr(b'\n', &window[lead..]).map(|i| lead + i) else {
            return if cut {
                unsure(bytes, limits, None)
            } else {
                None
            };
        };
        match self.parse_start(window, lead, first_lf) {
            Ok(mut seen) => {
                let mut issues = Vec::new();
                let walked = self.fields.walk_in(
                    window,
                    first_lf + 1,
                    limits.max_fields,
                    &mut issues,
                    &mut seen,
                );
                self.notes = seen.notes;
                match walked {
                    Ok((blank, Some(end))) if end <= limits.max_http_head => {
                        self.fields.keep(&window[..end]);
                        self.finish(first_lf + 1, blank, issues);
                        Some((Ok(()), end))
                    }
                    Ok((_, None)) if !cut => None,
                    Ok(_) => unsure(bytes, limits, None),
                    Err(e) => unsure(bytes, limits, Some(field_error(e, limits))),
                }
            }
            Err(e) => unsure(bytes, limits, Some(e)),
        }
    }

    /// [`HttpHead::parse_unterminated`] into `self`, reusing its buffers;
    /// on an error `self` is emptied, as by [`HttpHead::parse_in`].
    pub(crate) fn parse_unterminated_in(
        &mut self,
        bytes: &[u8],
        limits: &Limits,
    ) -> Result<(), HttpError> {
        let parsed = self.walk_unterminated(bytes, limits);
        if parsed.is_err() {
            self.clear();
        }
        parsed
    }

    /// [`HttpHead::parse_unterminated_in`], which empties `self` when this
    /// fails.
    fn walk_unterminated(&mut self, bytes: &[u8], limits: &Limits) -> Result<(), HttpError> {
        if bytes.len() > limits.max_http_head || u32::try_from(bytes.len()).is_err() {
            return Err(HttpError::TooLarge {
                limit: limits.max_http_head,
            });
        }
        let lead = leading_blank(bytes);
        let first_lf = memchr::memchr(b'\n', &bytes[lead..]).map(|i| lead + i);
        let fields_start = first_lf.map_or(bytes.len(), |l| l + 1);
        let mut seen = match first_lf {
            Some(lf) => self.parse_start(bytes, lead, lf)?,
            None => self.parse_start(bytes, lead, bytes.len())?,
        };
        let mut issues = Vec::new();
        let walked = self.fields.walk_in(
            bytes,
            fields_start,
            limits.max_fields,
            &mut issues,
            &mut seen,
        );
        let (blank, after) = match walked {
            Ok(w) => w,
            Err(e) => {
                self.notes = seen.notes;
                return Err(field_error(e, limits));
            }
        };
        // A blank line inside ends the fields but not the head: the lines
        // after it are looked at as head lines still.
        if let Some(mut pos) = after {
            while pos < bytes.len() {
                let lf = memchr::memchr(b'\n', &bytes[pos..]).map(|i| pos + i);
                let content_end = match lf {
                    Some(lf) => {
                        let mut ce = lf;
                        while ce > pos && bytes[ce - 1] == b'\r' {
                            ce -= 1;
                        }
                        ce
                    }
                    None => bytes.len(),
                };
                seen.line(bytes, pos, content_end, lf);
                pos = lf.map_or(bytes.len(), |lf| lf + 1);
            }
        }
        self.notes = seen.notes;
        self.fields.keep(bytes);
        self.finish(fields_start, blank, issues);
        self.notes.push(HttpNote {
            kind: HttpNoteKind::MissingTerminator,
            offset: bytes.len(),
        });
        Ok(())
    }

    /// Parses the start line `bytes[lead..lf]` (its CRs dropped) into
    /// `self`, noting what it accepted, and returns the line notes' state
    /// with the start line's end looked at.
    fn parse_start(
        &mut self,
        bytes: &[u8],
        lead: usize,
        lf: usize,
    ) -> Result<LineNotes, HttpError> {
        self.notes.clear();
        if lead > 0 {
            self.notes.push(HttpNote {
                kind: HttpNoteKind::LeadingBlankLines,
                offset: 0,
            });
        }
        let mut content_end = lf;
        while content_end > lead && bytes[content_end - 1] == b'\r' {
            content_end -= 1;
        }
        let line = lead..content_end;
        if line.is_empty() {
            return Err(HttpError::NotHttp);
        }
        self.start = parse_start_line(bytes, line.clone(), &mut self.notes)?;
        if !bytes[line.clone()].is_ascii() && std::str::from_utf8(&bytes[line.clone()]).is_err() {
            self.notes.push(HttpNote {
                kind: HttpNoteKind::NonUtf8,
                offset: lead,
            });
        }
        self.line = line;
        let mut seen = LineNotes {
            notes: std::mem::take(&mut self.notes),
            bare_lf: false,
            extra_cr: false,
            fold: false,
        };
        if lf < bytes.len() {
            seen.line_end(content_end, lf);
        }
        Ok(seen)
    }

    /// The notes after the walk: the line notes, then what the field walk
    /// accepted (before the blank line at `blank`), then Content-Length.
    fn finish(&mut self, fields_start: usize, blank: usize, issues: Vec<FieldIssue>) {
        for issue in issues {
            // Line ends were noted by the line notes, for the start line
            // too (`of_field_issue` has no note for them).
            if issue.offset >= blank {
                continue;
            }
            let Some(kind) = HttpNoteKind::of_field_issue(issue.kind) else {
                continue;
            };
            self.notes.push(HttpNote {
                kind,
                offset: issue.offset,
            });
        }
        if content_length(&self.fields).is_err() {
            self.notes.push(HttpNote {
                kind: HttpNoteKind::BadContentLength,
                offset: fields_start,
            });
        }
    }

    /// Request or response.
    pub fn kind(&self) -> MessageKind {
        match self.start {
            StartLine::Status { .. } => MessageKind::Response,
            StartLine::Request { .. } => MessageKind::Request,
        }
    }

    /// True for a request.
    pub fn is_request(&self) -> bool {
        self.kind() == MessageKind::Request
    }

    /// True for a response.
    pub fn is_response(&self) -> bool {
        self.kind() == MessageKind::Response
    }

    fn bytes(&self, r: &Range<usize>) -> &[u8] {
        &self.fields.as_bytes()[r.clone()]
    }

    /// The whole head as stored, terminating empty line included.
    pub fn raw(&self) -> &[u8] {
        self.fields.as_bytes()
    }

    /// The head's length in bytes: where the payload starts.
    pub fn len(&self) -> usize {
        self.fields.as_bytes().len()
    }

    /// Always false: a head has at least a start line. (For clippy's
    /// `len_without_is_empty`.)
    pub fn is_empty(&self) -> bool {
        false
    }

    /// The start line, without its line end.
    pub fn start_line(&self) -> &[u8] {
        self.bytes(&self.line)
    }

    /// The version as written (`HTTP/1.1`, `http/1.0`, `HTTP/2`); `None`
    /// for a request line without one.
    pub fn version(&self) -> Option<&[u8]> {
        match &self.start {
            StartLine::Status { version, .. } => Some(self.bytes(version)),
            StartLine::Request { version, .. } => version.as_ref().map(|v| self.bytes(v)),
        }
    }

    /// The version as (major, minor): `HTTP/1.1` is (1, 1), `HTTP/2` is
    /// (2, 0). `None` when missing or not `HTTP/` digits [`.` digits]
    /// (ASCII case ignored).
    pub fn version_number(&self) -> Option<(u8, u8)> {
        parse_version(self.version()?)
    }

    /// The status code of a response; `None` for requests and when
    /// missing or not a number (see [`HttpNoteKind::BadStatusCode`]).
    pub fn status(&self) -> Option<u16> {
        match self.start {
            StartLine::Status { status, .. } => status,
            StartLine::Request { .. } => None,
        }
    }

    /// The reason phrase of a response, as bytes (maybe not UTF-8); empty
    /// when missing and for requests.
    pub fn reason(&self) -> &[u8] {
        match &self.start {
            StartLine::Status { reason, .. } => self.bytes(reason),
            StartLine::Request { .. } => &[],
        }
    }

    /// The method of a request (`GET`); `None` for responses.
    pub fn method(&self) -> Option<&[u8]> {
        match &self.start {
            StartLine::Request { method, .. } => Some(self.bytes(method)),
            StartLine::Status { .. } => None,
        }
    }

    /// The request target (`/path?q`, or an absolute URI through a proxy);
    /// `None` for responses.
    pub fn request_target(&self) -> Option<&[u8]> {
        match &self.start {
            StartLine::Request { target, .. } => Some(self.bytes(target)),
            StartLine::Status { .. } => None,
        }
    }

    /// What the lenient parse accepted, in order of offset within a kind.
    pub fn notes(&self) -> &[HttpNote] {
        &self.notes
    }

    /// The header fields. The buffer behind them is the whole head, so
    /// [`Fields::start_line`] is the start line with its line end.
    pub fn fields(&self) -> &Fields {
        &self.fields
    }

    /// The header fields in order.
    pub fn headers(&self) -> impl ExactSizeIterator<Item = Field<'_>> + '_ {
        self.fields.iter()
    }

    /// The value of the first header `name` (ASCII case ignored), unfolded
    /// and trimmed; bytes, which may not be UTF-8.
    pub fn header(&self, name: &str) -> Option<Cow<'_, [u8]>> {
        self.fields.value_bytes(name)
    }

    /// The values of every header `name`, in order.
    pub fn header_all<'s>(&'s self, name: &'s str) -> impl Iterator<Item = Cow<'s, [u8]>> + 's {
        self.fields.get_all(name).map(|f| f.value())
    }

    /// The Content-Type value.
    pub fn content_type(&self) -> Option<Cow<'_, [u8]>> {
        self.header("content-type")
    }

    /// The media type from Content-Type, lower-case, without parameters.
    pub fn media_type(&self) -> Option<String> {
        super::media_type(&self.content_type()?)
    }

    /// The `charset` parameter of Content-Type, as written.
    pub fn charset(&self) -> Option<String> {
        super::content_type_charset(&self.content_type()?)
    }

    /// The encoding the `charset` parameter names, when `encoding_rs`
    /// knows the label (the `charset` feature).
    #[cfg(feature = "charset")]
    pub fn encoding(&self) -> Option<&'static encoding_rs::Encoding> {
        encoding_rs::Encoding::for_label(self.charset()?.as_bytes())
    }

    /// Content-Length as a number. Repeated fields or a comma list of the
    /// same number count as that number; anything else is `None` (and was
    /// noted as [`HttpNoteKind::BadContentLength`]).
    pub fn content_length(&self) -> Option<u64> {
        content_length(&self.fields).ok().flatten()
    }

    /// The transfer codings, in the order applied (`chunked` last when
    /// well-formed), lower-case, parameters dropped.
    pub fn transfer_encoding(&self) -> Vec<Coding> {
        coding_list(&self.fields, "transfer-encoding")
    }

    /// The content codings, in the order applied (decode in reverse: see
    /// [`decode_content`](super::decode_content)).
    pub fn content_encoding(&self) -> Vec<Coding> {
        coding_list(&self.fields, "content-encoding")
    }

    /// True when the transfer codings include `chunked`, in any position
    /// (readers such as warcio dechunk whenever it is named).
    pub fn is_chunked(&self) -> bool {
        self.fields
            .get_all("transfer-encoding")
            .any(|f| split_list(&f.value()).any(|t| Coding::parse(t) == Coding::Chunked))
    }
}

fn split_list(v: &[u8]) -> impl Iterator<Item = &[u8]> {
    v.split(|&b| b == b',')
        .map(super::trim)
        .filter(|t| !t.is_empty())
}

fn coding_list(fields: &Fields, name: &str) -> Vec<Coding> {
    let mut out = Vec::new();
    for f in fields.get_all(name) {
        out.extend(split_list(&f.value()).map(Coding::parse));
    }
    out
}

/// `Ok(None)` when absent, `Err(())` when present but not one number.
fn content_length(fields: &Fields) -> Result<Option<u64>, ()> {
    let mut found = None;
    for f in fields.get_all("content-length") {
        let v = f.value();
        let mut any = false;
        for part in v.split(|&b| b == b',').map(super::trim) {
            any = true;
            if part.is_empty() || part.len() > 19 || !part.iter().all(u8::is_ascii_digit) {
                return Err(());
            }
            let n = part.iter().fold(0u64, |n, &d| n * 10 + u64::from(d - b'0'));
            match found {
                Some(prev) if prev != n => return Err(()),
                _ => found = Some(n),
            }
        }
        if !any {
            return Err(());
        }
    }
    Ok(found)
}

fn parse_version(v: &[u8]) -> Option<(u8, u8)> {
    // Nearly every head says one of these two.
    match v {
        b"HTTP/1.1" => return Some((1, 1)),
        b"HTTP/1.0" => return Some((1, 0)),
        _ => {}
    }
    if v.len() < 6 || !v[..5].eq_ignore_ascii_case(b"HTTP/") {
        return None;
    }
    let rest = &v[5..];
    let (maj, min) = match memchr::memchr(b'.', rest) {
        Some(i) => (&rest[..i], Some(&rest[i + 1..])),
        None => (rest, None),
    };
    let num = |d: &[u8]| -> Option<u8> {
        if d.is_empty() || d.len() > 3 || !d.iter().all(u8::is_ascii_digit) {
            return None;
        }
        u8::try_from(d.iter().fold(0u32, |n, &c| n * 10 + u32::from(c - b'0'))).ok()
    };
    Some((num(maj)?, min.map_or(Some(0), num)?))
}

/// How many CRs and LFs (blank lines) come before the start line.
fn leading_blank(bytes: &[u8]) -> usize {
    bytes
        .iter()
        .take_while(|&&b| b == b'\r' || b == b'\n')
        .count()
}

/// The field walk's error as the head's.
fn field_error(e: FieldError, limits: &Limits) -> HttpError {
    match e {
        FieldError::TooMany(limit) => HttpError::TooManyFields { limit },
        _ => HttpError::TooLarge {
            limit: limits.max_http_head,
        },
    }
}

/// The outcome for a head the walk could not parse (`err`) or whose end
/// it did not find within the limit (`None`): where the end search puts
/// the end decides, as it did before the walk: not found, "read more";
/// past the limit, too large; else `err`.
fn unsure(
    bytes: &[u8],
    limits: &Limits,
    err: Option<HttpError>,
) -> Option<(Result<(), HttpError>, usize)> {
    let (_, end) = HeadFinder::new().find_spans(bytes)?;
    let too_large = HttpError::TooLarge {
        limit: limits.max_http_head,
    };
    if end > limits.max_http_head {
        return Some((Err(too_large), end));
    }
    // The walk and the search agree on where a head ends, so a head that
    // ends within the limit came with an error.
    Some((Err(err.unwrap_or(too_large)), end))
}

/// The notes about line ends, folding and UTF-8, taken line by line as
/// the field walk passes (or, after a blank line inside an unterminated
/// head, a loop over the rest). Style notes (line ends, folding) are given
/// once per head; UTF-8 once per line.
struct LineNotes {
    notes: Vec<HttpNote>,
    bare_lf: bool,
    extra_cr: bool,
    fold: bool,
}

impl LineNotes {
    /// The line end at `lf` of a line whose content ends at `content_end`.
    fn line_end(&mut self, content_end: usize, lf: usize) {
        let crs = lf - content_end;
        if crs == 0 && !self.bare_lf {
            self.bare_lf = true;
            self.notes.push(HttpNote {
                kind: HttpNoteKind::BareLf,
                offset: lf,
            });
        }
        if crs > 1 && !self.extra_cr {
            self.extra_cr = true;
            self.notes.push(HttpNote {
                kind: HttpNoteKind::ExtraCr,
                offset: content_end,
            });
        }
    }
}

impl LineSeen for LineNotes {
    fn line(&mut self, buf: &[u8], start: usize, content_end: usize, lf: Option<usize>) {
        let Some(lf) = lf else {
            // A last line without a line end (unterminated heads).
            if std::str::from_utf8(&buf[start..content_end]).is_err() {
                self.notes.push(HttpNote {
                    kind: HttpNoteKind::NonUtf8,
                    offset: start,
                });
            }
            return;
        };
        self.line_end(content_end, lf);
        if content_end == start {
            // A blank line: nothing to fold, all ASCII.
            return;
        }
        let line = &buf[start..lf];
        if is_ws(line[0]) && !self.fold {
            self.fold = true;
            self.notes.push(HttpNote {
                kind: HttpNoteKind::ObsFold,
                offset: start,
            });
        }
        // Nearly every line is ASCII: checked a word at a time, the UTF-8
        // decoder only for the others.
        if !line.is_ascii() && std::str::from_utf8(line).is_err() {
            self.notes.push(HttpNote {
                kind: HttpNoteKind::NonUtf8,
                offset: start,
            });
        }
    }
}

/// Splits off the next run of non-white-space at or after `i` in
/// `line[..end]`: (start, end) of the run.
fn next_word(line: &[u8], mut i: usize, end: usize) -> Option<(usize, usize)> {
    while i < end && is_ws(line[i]) {
        i += 1;
    }
    if i == end {
        return None;
    }
    let s = i;
    while i < end && !is_ws(line[i]) {
        i += 1;
    }
    Some((s, i))
}

fn parse_start_line(
    head: &[u8],
    line: Range<usize>,
    notes: &mut Vec<HttpNote>,
) -> Result<StartLine, HttpError> {
    let (s, e) = (line.start, line.end);
    let l = &head[s..e];
    let note = |notes: &mut Vec<HttpNote>, kind, offset| notes.push(HttpNote { kind, offset });
    if l.len() >= 5 && l[..5].eq_ignore_ascii_case(b"HTTP/") {
        // Status line: version SP code [SP reason].
        let v_end = s + l.iter().position(|&b| is_ws(b)).unwrap_or(l.len());
        let version = s..v_end;
        if &head[s..s + 5] != b"HTTP/" || parse_version(&head[version.clone()]).is_none() {
            note(notes, HttpNoteKind::NonstandardVersion, s);
        }
        let mut i = v_end;
        while i < e && is_ws(head[i]) {
            i += 1;
        }
        let code_start = i;
        while i < e && head[i].is_ascii_digit() {
            i += 1;
        }
        let digits = &head[code_start..i];
        let status = if digits.is_empty() || digits.len() > 5 {
            None
        } else {
            u16::try_from(
                digits
                    .iter()
                    .fold(0u32, |n, &d| n * 10 + u32::from(d - b'0')),
            )
            .ok()
        };
        if digits.len() != 3 || status.is_none() {
            note(notes, HttpNoteKind::BadStatusCode, code_start);
        }
        let reason = if i == e {
            if !digits.is_empty() {
                note(notes, HttpNoteKind::MissingReason, i);
            }
            e..e
        } else {
            if !is_ws(head[i]) {
                if !digits.is_empty() {
                    note(notes, HttpNoteKind::NoSpaceAfterStatus, i);
                }
            } else {
                // One SP belongs to the grammar; more are lenient, dropped.
                while i < e && is_ws(head[i]) {
                    i += 1;
                }
            }
            let mut r_end = e;
            while r_end > i && is_ws(head[r_end - 1]) {
                r_end -= 1;
            }
            i..r_end
        };
        return Ok(StartLine::Status {
            version,
            status,
            reason,
        });
    }

    // Request line: method SP target SP version, leniently.
    let (m_s, m_e) = next_word(head, s, e).ok_or(HttpError::NotHttp)?;
    let method = &head[m_s..m_e];
    if m_s != s || !method.iter().all(|&b| is_token_char(b)) {
        return Err(HttpError::NotHttp);
    }
    // The target starts after the white space that ends the method.
    let mut t_s = m_e;
    while t_s < e && is_ws(head[t_s]) {
        t_s += 1;
    }
    if t_s == e {
        return Err(HttpError::NotHttp);
    }
    // The version is the last word, if it looks like one; the target is
    // everything between (which may hold spaces, from broken clients).
    let mut last_s = e;
    while last_s > t_s && !is_ws(head[last_s - 1]) {
        last_s -= 1;
    }
    let last = &head[last_s..e];
    let has_version = last_s > t_s && last.len() >= 5 && last[..5].eq_ignore_ascii_case(b"HTTP/");
    let (target, version) = if has_version {
        let mut t_e = last_s;
        while t_e > t_s && is_ws(head[t_e - 1]) {
            t_e -= 1;
        }
        if last[..5] != *b"HTTP/" || parse_version(last).is_none() {
            note(notes, HttpNoteKind::NonstandardVersion, last_s);
        }
        (t_s..t_e, Some(last_s..e))
    } else {
        // Without a version, demand an upper-case method so that a line of
        // prose ("hello world") is not taken for a request.
        if !method
            .iter()
            .all(|&b| b.is_ascii_uppercase() || b == b'-' || b == b'_')
        {
            return Err(HttpError::NotHttp);
        }
        note(notes, HttpNoteKind::MissingVersion, e);
        let mut t_e = e;
        while t_e > t_s && is_ws(head[t_e - 1]) {
            t_e -= 1;
        }
        (t_s..t_e, None)
    };
    if memchr::memchr2(b' ', b'\t', &head[target.clone()]).is_some() {
        note(notes, HttpNoteKind::SpaceInTarget, target.start);
    }
    Ok(StartLine::Request {
        method: m_s..m_e,
        target,
        version,
    })
}

/// The parse as it was before the one walk (an end search, a line-notes
/// pass, a field walk over a copy): the oracle the walk is compared with.
#[cfg(test)]
mod before_the_walk {
    use super::*;

    pub(super) fn parse_found(
        bytes: &[u8],
        limits: &Limits,
    ) -> Option<(Result<HttpHead, HttpError>, usize)> {
        let (blank, end) = HeadFinder::new().find_spans(bytes)?;
        if end > limits.max_http_head {
            let limit = limits.max_http_head;
            return Some((Err(HttpError::TooLarge { limit }), end));
        }
        Some((parse_head(&bytes[..end], blank, limits), end))
    }

    pub(super) fn parse_unterminated(bytes: &[u8], limits: &Limits) -> Result<HttpHead, HttpError> {
        if bytes.len() > limits.max_http_head {
            return Err(HttpError::TooLarge {
                limit: limits.max_http_head,
            });
        }
        let mut head = parse_head(bytes, bytes.len(), limits)?;
        head.notes.push(HttpNote {
            kind: HttpNoteKind::MissingTerminator,
            offset: bytes.len(),
        });
        Ok(head)
    }

    /// Parses a head whose terminating empty line starts at `blank` (equal to
    /// `head.len()` when there is none).
    fn parse_head(head: &[u8], blank: usize, limits: &Limits) -> Result<HttpHead, HttpError> {
        let mut notes = Vec::new();
        let lead = head
            .iter()
            .take_while(|&&b| b == b'\r' || b == b'\n')
            .count();
        if lead > 0 {
            notes.push(HttpNote {
                kind: HttpNoteKind::LeadingBlankLines,
                offset: 0,
            });
        }
        let (line_end, fields_start) = match memchr::memchr(b'\n', &head[lead..]) {
            Some(i) => (lead + i, lead + i + 1),
            None => (head.len(), head.len()),
        };
        // The line without its CRs.
        let mut content_end = line_end;
        while content_end > lead && head[content_end - 1] == b'\r' {
            content_end -= 1;
        }
        let line = lead..content_end;
        if line.is_empty() {
            return Err(HttpError::NotHttp);
        }
        let start = parse_start_line(head, line.clone(), &mut notes)?;
        if !head[line.clone()].is_ascii() && std::str::from_utf8(&head[line.clone()]).is_err() {
            notes.push(HttpNote {
                kind: HttpNoteKind::NonUtf8,
                offset: lead,
            });
        }
        line_notes(head, lead, fields_start, blank, &mut notes);

        let mut issues: Vec<FieldIssue> = Vec::new();
        let fields = Fields::parse(
            head.to_vec(),
            fields_start,
            false,
            limits.max_fields,
            &mut issues,
        )
        .map_err(|e| match e {
            FieldError::TooMany(limit) => HttpError::TooManyFields { limit },
            _ => HttpError::TooLarge {
                limit: limits.max_http_head,
            },
        })?;
        for issue in issues {
            // Line ends were checked above, for the start line too; and an
            // empty line of several CRs ends the head though Fields sees a line.
            if issue.offset >= blank || issue.kind == WarningKind::BareLf {
                continue;
            }
            let Some(kind) = HttpNoteKind::of_field_issue(issue.kind) else {
                continue;
            };
            notes.push(HttpNote {
                kind,
                offset: issue.offset,
            });
        }
        if content_length(&fields).is_err() {
            notes.push(HttpNote {
                kind: HttpNoteKind::BadContentLength,
                offset: fields_start,
            });
        }
        Ok(HttpHead {
            fields,
            line,
            start,
            notes,
        })
    }

    /// Notes about line ends, folding and UTF-8 in the header lines
    /// `head[from..blank]`, plus the start line's end at `from`. Style notes
    /// (line ends, folding) are given once per head; UTF-8 once per line.
    fn line_notes(head: &[u8], lead: usize, from: usize, blank: usize, notes: &mut Vec<HttpNote>) {
        let mut bare_lf = false;
        let mut extra_cr = false;
        let mut fold = false;
        let mut pos = lead;
        // Check the whole head's line ends, terminating empty line included.
        while let Some(i) = memchr::memchr(b'\n', &head[pos..]) {
            let lf = pos + i;
            let crs = head[pos..lf]
                .iter()
                .rev()
                .take_while(|&&b| b == b'\r')
                .count();
            if crs == 0 && !bare_lf {
                bare_lf = true;
                notes.push(HttpNote {
                    kind: HttpNoteKind::BareLf,
                    offset: lf,
                });
            }
            if crs > 1 && !extra_cr {
                extra_cr = true;
                notes.push(HttpNote {
                    kind: HttpNoteKind::ExtraCr,
                    offset: lf - crs,
                });
            }
            if pos >= from && pos < blank {
                let line = &head[pos..lf];
                if line.first().is_some_and(|&b| is_ws(b)) && !fold {
                    fold = true;
                    notes.push(HttpNote {
                        kind: HttpNoteKind::ObsFold,
                        offset: pos,
                    });
                }
                // Nearly every line is ASCII: checked a word at a time, the
                // UTF-8 decoder only for the others.
                if !line.is_ascii() && std::str::from_utf8(line).is_err() {
                    notes.push(HttpNote {
                        kind: HttpNoteKind::NonUtf8,
                        offset: pos,
                    });
                }
            }
            pos = lf + 1;
        }
        // A last header line without a line end (unterminated heads).
        if pos >= from && pos < blank && std::str::from_utf8(&head[pos..blank]).is_err() {
            notes.push(HttpNote {
                kind: HttpNoteKind::NonUtf8,
                offset: pos,
            });
        }
    }
}

#[cfg(test)]
mod walk_tests {
    use super::*;
    use proptest::prelude::*;

    fn same(a: &Result<HttpHead, HttpError>, b: &Result<HttpHead, HttpError>) -> bool {
        match (a, b) {
            (Ok(a), Ok(b)) => a == b,
            (Err(a), Err(b)) => a.to_string() == b.to_string(),
            _ => false,
        }
    }

    /// Pieces heads are made of: good and odd lines, line ends of every
    /// kind, folding, non-UTF-8 and blank lines.
    const PIECES: &[&[u8]] = &[
        b"HTTP/1.1 200 OK",
        b"GET /a b HTTP/1.0",
        b"GET /",
        b"http/1.1 30",
        b"Content-Length: 5",
        b"content-length: 6, 6",
        b"Content-Length: x",
        b"Server: y",
        b"Bad Name : v",
        b"NoColon",
        b" folded",
        b"\tx",
        b"X: \xc4\xe3",
        b"\xff",
        b":",
        b"\r\n",
        b"\n",
        b"\r\r\n",
        b"\r",
        b"\r\n\r\n",
        b"\n\r\n",
        b"",
    ];

    /// Mostly a start line and lines, the rest anything.
    fn input() -> impl Strategy<Value = Vec<u8>> {
        let line = prop_oneof![Just(b"\r\n".to_vec()), Just(b"\n".to_vec())];
        let field = proptest::collection::vec(4..14usize, 0..4);
        let pieces = proptest::collection::vec(0..PIECES.len(), 0..24);
        (0..3usize, line, field, pieces).prop_map(|(start, eol, fields, ix)| {
            let mut out = Vec::new();
            if start < 2 {
                out.extend_from_slice(PIECES[start]);
                out.extend_from_slice(&eol);
                for f in fields {
                    out.extend_from_slice(PIECES[f]);
                    out.extend_from_slice(&eol);
                }
            }
            out.extend(ix.into_iter().flat_map(|i| PIECES[i].to_vec()));
            out
        })
    }

    fn limits() -> impl Strategy<Value = Limits> {
        (
            prop_oneof![Just(1usize << 20), 0usize..80],
            prop_oneof![Just(256usize), 0usize..6],
        )
            .prop_map(|(max_http_head, max_fields)| Limits {
                max_http_head,
                max_fields,
                ..Limits::default()
            })
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(4000))]

        /// Found and parsed in one walk: the same head, notes, length and
        /// errors as finding the end, then parsing a copy.
        #[test]
        fn one_walk_agrees_with_find_then_parse(bytes in input(), limits in limits()) {
            let new = HttpHead::parse_found(&bytes, &limits);
            let old = before_the_walk::parse_found(&bytes, &limits);
            match (&new, &old) {
                (None, None) => {}
                (Some((a, n)), Some((b, m))) => {
                    prop_assert_eq!(n, m);
                    prop_assert!(same(a, b), "{:?} vs {:?}", a, b);
                }
                _ => prop_assert!(false, "{:?} vs {:?}", new, old),
            }
            let new = HttpHead::parse_unterminated(&bytes, &limits);
            let old = before_the_walk::parse_unterminated(&bytes, &limits);
            prop_assert!(same(&new, &old), "{:?} vs {:?}", new, old);
        }

        /// A reused head gives what a fresh one does, whatever it held,
        /// and reading from a block in pieces of any size agrees.
        #[test]
        fn reused_head_and_pieces_agree(
            inputs in proptest::collection::vec(input(), 1..6),
            limits in limits(),
            cap in 1usize..64,
        ) {
            let mut heads = crate::http::HeadReader::new();
            for bytes in &inputs {
                let whole = crate::http::read_head(&mut &bytes[..], &limits).unwrap();
                let mut block = &bytes[..];
                let reused = heads.read(&mut block, &limits).unwrap().cloned();
                prop_assert_eq!(&reused, &whole);
                let mut r = std::io::BufReader::with_capacity(cap, &bytes[..]);
                let pieces = crate::http::read_head(&mut r, &limits).unwrap();
                prop_assert_eq!(&pieces, &whole);
                if let Some(h) = &whole {
                    // The block is left at the body.
                    prop_assert_eq!(&bytes[h.len()..], block);
                }
                // A head is the same whole or in pieces; bytes that are not
                // one are handed back (how many depends on the pieces) and
                // the block holds the rest.
                let or_bytes = crate::http::read_head_or_bytes(&mut &bytes[..], &limits).unwrap();
                let mut r = std::io::BufReader::with_capacity(cap, &bytes[..]);
                let or_pieces = crate::http::read_head_or_bytes(&mut r, &limits).unwrap();
                match (&or_bytes, or_pieces) {
                    (Ok(a), Ok(b)) => prop_assert_eq!(a, &b),
                    (Err(_), Err(back)) => {
                        let mut rest = Vec::new();
                        std::io::Read::read_to_end(&mut r, &mut rest).unwrap();
                        prop_assert_eq!([back, rest].concat(), bytes.clone());
                    }
                    (a, b) => prop_assert!(false, "{:?} vs {:?}", a, b),
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_failed_parse_leaves_the_spare_emptied_and_reusable() {
        let limits = Limits {
            max_fields: 3,
            max_http_head: 64,
            ..Limits::default()
        };
        let old = || {
            let old = b"http/1.0 404\nA: 1\nB: 2\nBad Name: 4\n\n";
            let (h, _) = HttpHead::parse(old).unwrap().unwrap();
            assert!(!h.notes().is_empty());
            h
        };
        let long = format!("HTTP/1.1 200 OK\r\nX: {}\r\n\r\n", "x".repeat(100));
        let cases: [(&[u8], Result<(), HttpError>); 4] = [
            (
                b"HTTP/1.1 200 OK\r\nA: 1\r\nB: 2\r\nC: 3\r\nD: 4\r\n\r\n",
                Err(HttpError::TooManyFields { limit: 3 }),
            ),
            (long.as_bytes(), Err(HttpError::TooLarge { limit: 64 })),
            (b"hello world\r\n\r\n", Err(HttpError::NotHttp)),
            // The end not in the bytes yet: read more.
            (b"HTTP/1.1 200 OK\r\nA: 1\r\n", Ok(())),
        ];
        let good = b"HTTP/1.1 301 Moved\r\nLocation: /b\r\n\r\nrest";
        let fresh = HttpHead::parse(good).unwrap().unwrap();
        for (bytes, want) in cases {
            let mut spare = Some(old());
            let got = HttpHead::parse_reusing(bytes, &limits, &mut spare);
            match want {
                Err(e) => assert_eq!(format!("{:?}", got.unwrap_err()), format!("{e:?}")),
                Ok(()) => assert!(got.unwrap().is_none()),
            }
            // Nothing of the old head, nor of the half-parsed one, is left,
            // and no accessor panics.
            let left = spare.take().expect("given back");
            assert_eq!(left, HttpHead::empty());
            assert!(left.start_line().is_empty() && left.raw().is_empty());
            assert!(left.notes().is_empty() && left.headers().count() == 0);
            assert!(left.header("A").is_none() && !left.is_chunked());
            assert!(left.status().is_none() && left.version().is_none_or(<[u8]>::is_empty));
            // The same head unterminated fails or parses the same way.
            let mut again = left.clone();
            if again.parse_unterminated_in(bytes, &limits).is_err() {
                assert_eq!(again, HttpHead::empty());
            }
            // Parsed into again: what a fresh parse gives.
            spare = Some(left);
            let reused = HttpHead::parse_reusing(good, &Limits::default(), &mut spare).unwrap();
            assert!(spare.is_none());
            assert_eq!(reused, Some(fresh.clone()));
        }
    }

    /// Parses `input`, checking that it is found whole and at every split.
    fn parse_ok(input: &[u8]) -> (HttpHead, usize) {
        let end = find_head_end(input);
        // Fed in two pieces at every byte, the finder agrees.
        for split in 0..=input.len() {
            let mut f = HeadFinder::new();
            let first = f.find(&input[..split]);
            let got = first.or_else(|| f.find(input));
            assert_eq!(
                got,
                end,
                "split at {split} of {:?}",
                String::from_utf8_lossy(input)
            );
            // A plain search of the prefix never claims an end beyond it.
            if let Some(e) = find_head_end(&input[..split]) {
                assert_eq!(Some(e), end, "prefix {split}");
            }
        }
        // And byte by byte.
        let mut f = HeadFinder::new();
        let mut got = None;
        for n in 0..=input.len() {
            if let Some(e) = f.find(&input[..n]) {
                got = Some(e);
                break;
            }
        }
        assert_eq!(got, end);
        HttpHead::parse(input).unwrap().expect("head end found")
    }

    fn kinds(h: &HttpHead) -> Vec<HttpNoteKind> {
        h.notes().iter().map(|n| n.kind).collect()
    }

    struct Case {
        input: &'static [u8],
        body: &'static [u8],
        kind: MessageKind,
        status: Option<u16>,
        reason: &'static [u8],
        method: Option<&'static [u8]>,
        target: Option<&'static [u8]>,
        version: Option<&'static [u8]>,
        headers: &'static [(&'static [u8], &'static [u8])],
        notes: &'static [HttpNoteKind],
    }

    const RESP: Case = Case {
        input: b"",
        body: b"",
        kind: MessageKind::Response,
        status: Some(200),
        reason: b"OK",
        method: None,
        target: None,
        version: Some(b"HTTP/1.1"),
        headers: &[],
        notes: &[],
    };

    const REQ: Case = Case {
        kind: MessageKind::Request,
        status: None,
        reason: b"",
        ..RESP
    };

    #[test]
    fn table() {
        use HttpNoteKind as N;
        let cases = [
            Case {
                input: b"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nX-A: 1\r\nx-a: 2\r\n\r\nBODY",
                body: b"BODY",
                headers: &[(b"Content-Type", b"text/html"), (b"X-A", b"1"), (b"x-a", b"2")],
                ..RESP
            },
            Case {
                input: b"HTTP/1.0 404 Not Found\n\nbody\n\nmore",
                body: b"body\n\nmore",
                status: Some(404),
                reason: b"Not Found",
                version: Some(b"HTTP/1.0"),
                notes: &[N::BareLf],
                ..RESP
            },
            // Web InfoMall: CRLF lines, bare-LF empty line.
            Case {
                input: b"HTTP/1.1 200 OK\r\nServer: x\r\n\nBODY",
                body: b"BODY",
                headers: &[(b"Server", b"x")],
                notes: &[N::BareLf],
                ..RESP
            },
            Case {
                input: b"HTTP/1.1 200 OK\nServer: x\n\r\nBODY",
                body: b"BODY",
                headers: &[(b"Server", b"x")],
                notes: &[N::BareLf],
                ..RESP
            },
            Case {
                input: b"HTTP/2 200\r\n\r\n",
                body: b"",
                version: Some(b"HTTP/2"),
                reason: b"",
                notes: &[N::MissingReason],
                ..RESP
            },
            Case {
                input: b"HTTP/2.0 204 \r\n\r\n",
                body: b"",
                version: Some(b"HTTP/2.0"),
                status: Some(204),
                reason: b"",
                ..RESP
            },
            Case {
                input: b"http/1.1 301 Moved\r\nLocation: /x\r\n\r\n",
                body: b"",
                version: Some(b"http/1.1"),
                status: Some(301),
                reason: b"Moved",
                headers: &[(b"Location", b"/x")],
                notes: &[N::NonstandardVersion],
                ..RESP
            },
            Case {
                input: b"HTTP/1.1 200OK\r\n\r\n",
                body: b"",
                notes: &[N::NoSpaceAfterStatus],
                ..RESP
            },
            Case {
                input: b"HTTP/1.1 0 \r\n\r\n",
                body: b"",
                status: Some(0),
                reason: b"",
                notes: &[N::BadStatusCode],
                ..RESP
            },
            Case {
                input: b"HTTP/1.1\r\n\r\n",
                body: b"",
                status: None,
                reason: b"",
                notes: &[N::BadStatusCode],
                ..RESP
            },
            Case {
                input: b"HTTP/1.1 200 \xc4\xe3\xba\xc3\r\n\r\n",
                body: b"",
                reason: b"\xc4\xe3\xba\xc3",
                notes: &[N::NonUtf8],
                ..RESP
            },
            Case {
                input: b"HTTP/1.1 999999 Big\r\n\r\n",
                body: b"",
                status: None,
                reason: b"Big",
                notes: &[N::BadStatusCode],
                ..RESP
            },
            // pywb missing-status-text.warc: CR CR LF lines.
            Case {
                input: b"HTTP/1.0 302 \r\r\nLocation: http://x/\r\r\nServer: BigIP\r\r\n\r\r\n",
                body: b"",
                version: Some(b"HTTP/1.0"),
                status: Some(302),
                reason: b"",
                headers: &[(b"Location", b"http://x/"), (b"Server", b"BigIP")],
                notes: &[N::ExtraCr],
                ..RESP
            },
            Case {
                input: b"\r\n\r\nHTTP/1.1 200 OK\r\n\r\n",
                body: b"",
                notes: &[N::LeadingBlankLines],
                ..RESP
            },
            Case {
                input: b"HTTP/1.1 200 OK\r\nBad Name: v\r\nNoColon\r\nSp : v2\r\n\tfolded\r\nX: \xff\xfe\r\n\r\n",
                body: b"",
                headers: &[(b"Bad Name", b"v"), (b"Sp", b"v2 folded"), (b"X", b"\xff\xfe")],
                notes: &[
                    N::ObsFold,
                    N::NonUtf8,
                    N::LineWithoutColon,
                    N::SpaceBeforeColon,
                    N::BadFieldName,
                ],
                ..RESP
            },
            Case {
                input: b"GET /path?q=1 HTTP/1.1\r\nHost: example.com\r\n\r\n",
                body: b"",
                method: Some(b"GET"),
                target: Some(b"/path?q=1"),
                headers: &[(b"Host", b"example.com")],
                ..REQ
            },
            Case {
                input: b"GET /\n\n",
                body: b"",
                method: Some(b"GET"),
                target: Some(b"/"),
                version: None,
                notes: &[N::BareLf, N::MissingVersion],
                ..REQ
            },
            Case {
                input: b"POST /a b HTTP/1.0\r\n\r\n",
                body: b"",
                method: Some(b"POST"),
                target: Some(b"/a b"),
                version: Some(b"HTTP/1.0"),
                notes: &[N::SpaceInTarget],
                ..REQ
            },
            Case {
                input: b"HTTP/1.1 200 OK\r\nContent-Length: 12x\r\n\r\n",
                body: b"",
                headers: &[(b"Content-Length", b"12x")],
                notes: &[N::BadContentLength],
                ..RESP
            },
        ];
        for c in &cases {
            let name = String::from_utf8_lossy(c.input);
            let (h, len) = parse_ok(c.input);
            assert_eq!(len, c.input.len() - c.body.len(), "{name}");
            assert_eq!(h.len(), len, "{name}");
            assert_eq!(h.raw(), &c.input[..len], "{name}");
            assert_eq!(h.kind(), c.kind, "{name}");
            assert_eq!(h.is_request(), c.kind == MessageKind::Request);
            assert_eq!(h.is_response(), c.kind == MessageKind::Response);
            assert_eq!(h.status(), c.status, "{name}");
            assert_eq!(h.reason(), c.reason, "{name}");
            assert_eq!(h.method(), c.method, "{name}");
            assert_eq!(h.request_target(), c.target, "{name}");
            assert_eq!(h.version(), c.version, "{name}");
            let got: Vec<(Vec<u8>, Vec<u8>)> = h
                .headers()
                .map(|f| (f.name().to_vec(), f.value().into_owned()))
                .collect();
            let want: Vec<(Vec<u8>, Vec<u8>)> = c
                .headers
                .iter()
                .map(|(n, v)| (n.to_vec(), v.to_vec()))
                .collect();
            assert_eq!(got, want, "{name}");
            let mut got = kinds(&h);
            let mut want = c.notes.to_vec();
            got.sort_by_key(|k| k.name());
            want.sort_by_key(|k| k.name());
            assert_eq!(got, want, "{name}");
        }
    }

    #[test]
    fn lookups_ignore_case_and_keep_repeats() {
        let input = b"HTTP/1.1 200 OK\r\nContent-Type: text/html; Charset=\"ISO-8859-1\"\r\n\
            Transfer-Encoding: gzip\r\ntransfer-encoding: Chunked\r\n\
            Content-Encoding: x-gzip, br\r\nContent-Length: 5, 5\r\nSet-Cookie: a=1\r\nset-cookie: b=2\r\n\r\n";
        let (h, _) = parse_ok(input);
        assert_eq!(
            h.header("CONTENT-TYPE").as_deref(),
            Some(&b"text/html; Charset=\"ISO-8859-1\""[..])
        );
        assert_eq!(h.media_type().as_deref(), Some("text/html"));
        assert_eq!(h.charset().as_deref(), Some("ISO-8859-1"));
        #[cfg(feature = "charset")]
        assert_eq!(h.encoding(), Some(encoding_rs::WINDOWS_1252));
        assert_eq!(h.transfer_encoding(), vec![Coding::Gzip, Coding::Chunked]);
        assert!(h.is_chunked());
        assert_eq!(h.content_encoding(), vec![Coding::Gzip, Coding::Brotli]);
        assert_eq!(h.content_length(), Some(5));
        let cookies: Vec<_> = h.header_all("Set-Cookie").map(|v| v.into_owned()).collect();
        assert_eq!(cookies, vec![b"a=1".to_vec(), b"b=2".to_vec()]);
        assert_eq!(h.header("missing"), None);
        assert_eq!(h.version_number(), Some((1, 1)));
        assert!(h.notes().is_empty(), "{:?}", h.notes());
    }

    #[test]
    fn content_length_variants() {
        for (v, want) in [
            (&b"0"[..], Some(0)),
            (b" 1234 ", Some(1234)),
            (b"5, 6", None),
            (b"-1", None),
            (b"", None),
            (b"99999999999999999999", None),
        ] {
            let mut input = b"HTTP/1.1 200 OK\r\nContent-Length: ".to_vec();
            input.extend_from_slice(v);
            input.extend_from_slice(b"\r\n\r\n");
            let (h, _) = parse_ok(&input);
            assert_eq!(h.content_length(), want, "{:?}", String::from_utf8_lossy(v));
            assert_eq!(
                kinds(&h).contains(&HttpNoteKind::BadContentLength),
                want.is_none(),
                "{:?}",
                String::from_utf8_lossy(v)
            );
        }
        let (h, _) = parse_ok(b"HTTP/1.1 200 OK\r\nContent-Length: 3\r\nContent-Length: 4\r\n\r\n");
        assert_eq!(h.content_length(), None);
        let (h, _) = parse_ok(b"HTTP/1.1 200 OK\r\n\r\n");
        assert_eq!(h.content_length(), None);
        assert!(h.notes().is_empty());
    }

    #[test]
    fn not_http_and_incomplete() {
        for input in [
            &b"<html>\n\n</html>"[..],
            b"hello world\r\n\r\n",
            b"\r\n\r\n\r\n<!doctype html>\r\n\r\n",
            b"G@T / HTTP/1.1\r\n\r\n",
            b"GET\r\n\r\n",
        ] {
            assert!(
                matches!(HttpHead::parse(input), Err(HttpError::NotHttp)),
                "{:?}",
                String::from_utf8_lossy(input)
            );
        }
        for input in [
            &b""[..],
            b"\r\n\r\n",
            b"HTTP/1.1 200 OK\r\n",
            b"HTTP/1.1 200 OK\r\nA: b\r\n\r",
            b"HTTP/1.1 200 OK\r\nA: b\r\n\r\r",
        ] {
            assert!(matches!(HttpHead::parse(input), Ok(None)), "{input:?}");
            assert_eq!(find_head_end(input), None);
        }
    }

    #[test]
    fn limits() {
        let limits = Limits {
            max_http_head: 20,
            max_fields: 2,
            ..Limits::default()
        };
        let long = b"HTTP/1.1 200 OK\r\nServer: something long\r\n\r\n";
        assert!(matches!(
            HttpHead::parse_with_limits(long, &limits),
            Err(HttpError::TooLarge { limit: 20 })
        ));
        // No end in 20 bytes: too large, not "need more".
        assert!(matches!(
            HttpHead::parse_with_limits(&long[..25], &limits),
            Err(HttpError::TooLarge { .. })
        ));
        assert!(matches!(
            HttpHead::parse_with_limits(&long[..19], &limits),
            Ok(None)
        ));
        let limits = Limits {
            max_fields: 2,
            ..Limits::default()
        };
        assert!(matches!(
            HttpHead::parse_with_limits(
                b"HTTP/1.1 200 OK\r\nA: 1\r\nB: 2\r\nC: 3\r\n\r\n",
                &limits
            ),
            Err(HttpError::TooManyFields { limit: 2 })
        ));
        // A long run of blank lines before anything is just "need more".
        let blanks = vec![b'\n'; 10_000];
        assert!(matches!(HttpHead::parse(&blanks), Ok(None)));
    }

    #[test]
    fn unterminated() {
        let h = HttpHead::parse_unterminated(
            b"HTTP/1.1 304 Not Modified\r\nETag: \"x\"",
            &Limits::default(),
        )
        .unwrap();
        assert_eq!(h.status(), Some(304));
        assert_eq!(h.header("etag").as_deref(), Some(&b"\"x\""[..]));
        assert_eq!(kinds(&h), vec![HttpNoteKind::MissingTerminator]);
        assert!(matches!(
            HttpHead::parse_unterminated(b"\r\n", &Limits::default()),
            Err(HttpError::NotHttp)
        ));
    }

    #[test]
    fn notes_become_warnings() {
        let (h, _) = parse_ok(b"HTTP/1.1 200 OK\r\nNoColon\r\n\r\n");
        let n = h.notes()[0];
        assert_eq!(n.kind, HttpNoteKind::LineWithoutColon);
        assert_eq!(n.offset, 17);
        let w = n.to_warning(1000, true);
        assert_eq!(w.kind, WarningKind::LineWithoutColon);
        assert_eq!(w.offset, 1017);
        assert_eq!(n.to_warning(1000, false).offset, 1000);
    }

    #[test]
    fn versions() {
        for (v, want) in [
            (&b"HTTP/1.1"[..], Some((1, 1))),
            (b"http/1.0", Some((1, 0))),
            (b"HTTP/2", Some((2, 0))),
            (b"HTTP/3.0", Some((3, 0))),
            (b"HTTP/", None),
            (b"HTTP/1.", None),
            (b"HTTP/x", None),
            (b"HTTP/1.1000", None),
            (b"HTTQ/1.1", None),
        ] {
            assert_eq!(parse_version(v), want, "{:?}", String::from_utf8_lossy(v));
        }
    }
}
