//! Errors, warnings and positions shared by every layer.
//!
//! An [`Error`] is fatal for the operation that returned it; a [`Warning`] is a
//! recovery the lenient reader made and went on. Both carry the byte offset in
//! the file *as stored* (the compressed offset for gzip, zstd and LZ4 files) so
//! a user can go and look, and, where known, the file name and record.

use std::fmt;
use std::io;
use std::path::{Path, PathBuf};

/// Where something is in a file.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
pub struct Position {
    /// Byte offset in the file as stored: for compressed files the start of
    /// the gzip member, zstd or LZ4 frame that holds the byte in question.
    pub offset: u64,
    /// Zero-based number of the record, when the problem belongs to one.
    pub record: Option<u64>,
}

impl Position {
    /// A position at `offset`, in no particular record.
    pub fn at(offset: u64) -> Self {
        Position {
            offset,
            record: None,
        }
    }

    /// The same position, in record number `record`.
    pub fn in_record(self, record: u64) -> Self {
        Position {
            record: Some(record),
            ..self
        }
    }
}

impl fmt::Display for Position {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "offset {}", self.offset)?;
        if let Some(r) = self.record {
            write!(f, " (record {r})")?;
        }
        Ok(())
    }
}

/// What went wrong, without where.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ErrorKind {
    /// The underlying reader or writer failed.
    #[error("I/O error: {0}")]
    Io(#[from] io::Error),
    /// A compressed member or frame is corrupt or truncated.
    #[error("{0}")]
    Codec(#[from] crate::codec::CodecError),
    /// The bytes do not follow the grammar of the format.
    #[error("{0}")]
    Syntax(String),
    /// A header block, line or other bounded structure passed its limit.
    #[error("{what} longer than the limit of {limit} bytes")]
    TooLarge {
        /// What was too large.
        what: &'static str,
        /// The limit that was passed (see [`crate::Limits`]).
        limit: u64,
    },
    /// The input ended inside a record.
    #[error("input ends inside a record: {0}")]
    Truncated(String),
    /// A field value does not parse as its type requires.
    #[error("field {name}: {message}")]
    Field {
        /// The field name.
        name: String,
        /// What is wrong with the value.
        message: String,
    },
    /// A caller asked for something the state of the reader or writer does not allow.
    #[error("{0}")]
    Usage(String),
    /// Something needs a Cargo feature of warchest that was not compiled in
    /// (a zstd or LZ4 file without the `zstd` or `lz4` feature, say).
    #[error("{what} support not compiled in (feature {feature})")]
    NotCompiledIn {
        /// What is missing (`zstd`, `LZ4`, payload type identification...).
        what: &'static str,
        /// The Cargo feature that adds it.
        feature: &'static str,
    },
}

#[derive(Debug)]
struct Inner {
    kind: ErrorKind,
    position: Option<Position>,
    file: Option<PathBuf>,
    record_id: Option<String>,
}

/// The library's error: a kind, and where it happened.
///
/// Displayed as `FILE: offset N (record K, <urn:...>): message`, with the
/// parts that are known.
pub struct Error(Box<Inner>);

impl Error {
    /// A new error of `kind` with no position yet.
    pub fn new(kind: ErrorKind) -> Self {
        Error(Box::new(Inner {
            kind,
            position: None,
            file: None,
            record_id: None,
        }))
    }

    /// A syntax error at `position`.
    pub fn syntax(msg: impl Into<String>, position: Position) -> Self {
        Error::new(ErrorKind::Syntax(msg.into())).at(position)
    }

    /// The error of ours an `io::Error` carries, when it carries one: an
    /// archive's own failure handed through an `io::Read` (a codec error, or
    /// an I/O failure with its file and offset), as told from a peer's or
    /// a caller's I/O error, which may be of the same kind.
    pub fn carried_by(e: &io::Error) -> Option<&Error> {
        e.get_ref().and_then(|inner| inner.downcast_ref::<Error>())
    }

    /// What went wrong.
    pub fn kind(&self) -> &ErrorKind {
        &self.0.kind
    }

    /// Where it went wrong, when known.
    pub fn position(&self) -> Option<Position> {
        self.0.position
    }

    /// The file, when known.
    pub fn file(&self) -> Option<&Path> {
        self.0.file.as_deref()
    }

    /// The WARC-Record-ID of the record, when known.
    pub fn record_id(&self) -> Option<&str> {
        self.0.record_id.as_deref()
    }

    /// True when the cause is an I/O error of the underlying stream.
    pub fn is_io_error(&self) -> bool {
        matches!(self.0.kind, ErrorKind::Io(_))
    }

    /// Sets the position, unless one is set already (the innermost wins).
    pub fn at(mut self, position: Position) -> Self {
        if self.0.position.is_none() {
            self.0.position = Some(position);
        }
        self
    }

    /// Sets the record number on the position, unless one is set already.
    pub fn in_record(mut self, record: u64) -> Self {
        if let Some(p) = &mut self.0.position
            && p.record.is_none()
        {
            p.record = Some(record);
        }
        self
    }

    /// Sets the file name, unless one is set already.
    pub fn in_file(mut self, file: impl AsRef<Path>) -> Self {
        if self.0.file.is_none() {
            self.0.file = Some(file.as_ref().to_path_buf());
        }
        self
    }

    /// Sets the record id, unless one is set already.
    pub fn with_record_id(mut self, id: impl Into<String>) -> Self {
        if self.0.record_id.is_none() {
            self.0.record_id = Some(id.into());
        }
        self
    }
}

impl fmt::Debug for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut prefix = false;
        if let Some(file) = &self.0.file {
            write!(f, "{}", file.display())?;
            prefix = true;
        }
        if let Some(p) = &self.0.position {
            if prefix {
                f.write_str(": ")?;
            }
            write!(f, "offset {}", p.offset)?;
            match (p.record, &self.0.record_id) {
                (Some(r), Some(id)) => write!(f, " (record {r}, {id})")?,
                (Some(r), None) => write!(f, " (record {r})")?,
                (None, Some(id)) => write!(f, " ({id})")?,
                (None, None) => {}
            }
            prefix = true;
        }
        if prefix {
            f.write_str(": ")?;
        }
        write!(f, "{}", self.0.kind)
    }
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match &self.0.kind {
            ErrorKind::Io(e) => Some(e),
            ErrorKind::Codec(e) => Some(e),
            _ => None,
        }
    }
}

impl From<ErrorKind> for Error {
    fn from(kind: ErrorKind) -> Self {
        Error::new(kind)
    }
}

impl From<io::Error> for Error {
    fn from(e: io::Error) -> Self {
        // An io::Error that wraps one of ours (a body reader reporting a codec
        // failure) is unwrapped so the position survives.
        if Error::carried_by(&e).is_some() {
            let inner = e.into_inner().expect("checked above");
            return *inner.downcast::<Error>().expect("checked above");
        }
        Error::new(ErrorKind::Io(e))
    }
}

impl From<crate::codec::CodecError> for Error {
    fn from(e: crate::codec::CodecError) -> Self {
        let offset = e.offset;
        Error::new(ErrorKind::Codec(e)).at(Position::at(offset))
    }
}

/// The kind an I/O failure keeps when it leaves as an `io::Error`, so that
/// callers can still tell a full disk, a broken pipe or a timeout from bad
/// bytes. `Interrupted` and `WouldBlock` say "call again", which a reader
/// that has given up (the record readers stop after an error) cannot
/// honour: `read_to_end` and `io::copy` would retry and see a silent end.
fn io_kind(kind: io::ErrorKind) -> io::ErrorKind {
    match kind {
        io::ErrorKind::Interrupted | io::ErrorKind::WouldBlock => io::ErrorKind::Other,
        k => k,
    }
}

impl From<Error> for io::Error {
    /// An I/O cause keeps its kind (see `io_kind`); anything else (bad
    /// bytes, a codec failure, a limit) is `InvalidData`. The whole
    /// [`Error`] is the payload, so the message names the file and offset,
    /// and `From<io::Error>` gives it back as it was.
    fn from(e: Error) -> Self {
        let located = e.0.position.is_some() || e.0.file.is_some() || e.0.record_id.is_some();
        match e.0.kind {
            // Nothing to lose: the I/O error as it came.
            ErrorKind::Io(io) if !located => io,
            ErrorKind::Io(ref io) => io::Error::new(io_kind(io.kind()), e),
            _ => io::Error::new(io::ErrorKind::InvalidData, e),
        }
    }
}

/// Result with the library's [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// What a lenient reader recovered from. Each names the rule it relaxed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
#[cfg_attr(feature = "serde", serde(rename_all = "kebab-case"))]
// Exhaustive on purpose: warchest-validate maps every kind to a rule with a
// match the compiler keeps complete.
pub enum WarningKind {
    /// A line ended in LF without CR (WARC 1.1 section 4 requires CRLF).
    BareLf,
    /// WARC-Target-URI (or another URI field) inside `<...>`, as WARC 1.0 writers did.
    BracketedUri,
    /// A header line had no colon; it was kept raw and ignored.
    LineWithoutColon,
    /// White space between a field name and its colon.
    SpaceBeforeColon,
    /// A field name with characters outside the token grammar.
    BadFieldName,
    /// The record did not end in CRLF CRLF (section 4); the reader went on.
    BadTrailer,
    /// Bytes between records that are not a record were skipped.
    SkippedBytes,
    /// Bytes after the last record.
    TrailingGarbage,
    /// The input ended before Content-Length bytes of block.
    TruncatedRecord,
    /// Content-Length was missing or not a number.
    BadContentLength,
    /// The version line is not one of the known WARC versions.
    UnknownVersion,
    /// A gzip member or zstd/LZ4 frame was damaged; the reader resynchronised.
    DamagedMember,
    /// A gzip member's CRC32 or ISIZE does not match its data.
    BadChecksum,
    /// A compressed member ended before its end marker.
    TruncatedMember,
    /// A gzip member holds more than one record, or a record spans members.
    NotRecordAtATime,
    /// A header value is not valid UTF-8; it was kept as bytes.
    NonUtf8,
    /// A capture date (ARC archive-date, Web InfoMall `date`) not in its
    /// format's form; read as documented in docs/conversion.md.
    BadDate,
    /// An ARC header line or Web InfoMall property breaks its format's
    /// grammar (Web InfoMall spec section 2, ARC URL-record); read as well
    /// as it could be.
    Grammar,
    /// Line ends other than the format's own (CR LF in a Web InfoMall
    /// header, whose lines end in LF alone).
    LineEnd,
    /// Compressed record content (Web InfoMall zlib) does not decode, or
    /// decodes to another length than declared.
    DamagedContent,
    /// Anything else; the message says what.
    Other,
}

impl WarningKind {
    /// The kebab-case name used in reports and JSON.
    pub fn name(self) -> &'static str {
        match self {
            WarningKind::BareLf => "bare-lf",
            WarningKind::BracketedUri => "bracketed-uri",
            WarningKind::LineWithoutColon => "line-without-colon",
            WarningKind::SpaceBeforeColon => "space-before-colon",
            WarningKind::BadFieldName => "bad-field-name",
            WarningKind::BadTrailer => "bad-trailer",
            WarningKind::SkippedBytes => "skipped-bytes",
            WarningKind::TrailingGarbage => "trailing-garbage",
            WarningKind::TruncatedRecord => "truncated-record",
            WarningKind::BadContentLength => "bad-content-length",
            WarningKind::UnknownVersion => "unknown-version",
            WarningKind::DamagedMember => "damaged-member",
            WarningKind::BadChecksum => "bad-checksum",
            WarningKind::TruncatedMember => "truncated-member",
            WarningKind::NotRecordAtATime => "not-record-at-a-time",
            WarningKind::NonUtf8 => "non-utf8",
            WarningKind::BadDate => "bad-date",
            WarningKind::Grammar => "grammar",
            WarningKind::LineEnd => "line-end",
            WarningKind::DamagedContent => "damaged-content",
            WarningKind::Other => "other",
        }
    }
}

/// A recovery made by a lenient reader: what, where, and in which record.
#[derive(Debug, Clone, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
pub struct Warning {
    /// Which rule was relaxed.
    pub kind: WarningKind,
    /// Byte offset in the file as stored where the problem was seen.
    pub offset: u64,
    /// The record number, when the warning belongs to a record.
    pub record: Option<u64>,
    /// The WARC-Record-ID, when known.
    pub record_id: Option<String>,
    /// A plain sentence saying what was found and what was done.
    pub message: String,
}

impl Warning {
    /// A warning of `kind` at `offset`.
    pub fn new(kind: WarningKind, offset: u64, message: impl Into<String>) -> Self {
        Warning {
            kind,
            offset,
            record: None,
            record_id: None,
            message: message.into(),
        }
    }
}

impl fmt::Display for Warning {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "offset {}", self.offset)?;
        match (self.record, &self.record_id) {
            (Some(r), Some(id)) => write!(f, " (record {r}, {id})")?,
            (Some(r), None) => write!(f, " (record {r})")?,
            (None, Some(id)) => write!(f, " ({id})")?,
            (None, None) => {}
        }
        write!(f, ": {}: {}", self.kind.name(), self.message)
    }
}

/// What a format reader found, and where: the warnings it collects and how
/// its errors are placed in the file. The WARC, ARC and Web InfoMall readers
/// each hold one, so the rules of reporting live here once.
#[derive(Debug, Default)]
pub(crate) struct Diagnostics {
    file: Option<PathBuf>,
    leniency: crate::leniency::Leniency,
    warnings: Vec<Warning>,
}

impl Diagnostics {
    /// Diagnostics for `file`, with the recoveries `leniency` allows.
    pub(crate) fn new(file: Option<PathBuf>, leniency: crate::leniency::Leniency) -> Self {
        Diagnostics {
            file,
            leniency,
            warnings: Vec::new(),
        }
    }

    /// Records a recovery.
    pub(crate) fn warn(
        &mut self,
        kind: WarningKind,
        offset: u64,
        record: Option<u64>,
        record_id: Option<String>,
        message: String,
    ) {
        let mut w = Warning::new(kind, offset, message);
        w.record = record;
        w.record_id = record.and(record_id);
        self.warnings.push(w);
    }

    /// Records a warning made elsewhere.
    pub(crate) fn push(&mut self, w: Warning) {
        self.warnings.push(w);
    }

    /// An error at `offset`, in `record`, in the file.
    pub(crate) fn error(
        &self,
        kind: ErrorKind,
        offset: u64,
        record: Option<u64>,
        record_id: Option<String>,
    ) -> Error {
        let mut pos = Position::at(offset);
        pos.record = record;
        let mut e = self.locate(Error::new(kind).at(pos));
        if let Some(id) = record.and(record_id) {
            e = e.with_record_id(id);
        }
        e
    }

    /// The knobs in force.
    pub(crate) fn leniency(&self) -> &crate::leniency::Leniency {
        &self.leniency
    }

    /// A deviation from the grammar: a warning when the knob for `kind` is
    /// on ([`Leniency::allows`](crate::leniency::Leniency::allows)), else an
    /// error.
    pub(crate) fn deviation(
        &mut self,
        kind: WarningKind,
        offset: u64,
        record: Option<u64>,
        record_id: Option<String>,
        message: String,
    ) -> Result<()> {
        if !self.leniency.allows(kind) {
            return Err(self.error(ErrorKind::Syntax(message), offset, record, None));
        }
        self.warn(kind, offset, record, record_id, message);
        Ok(())
    }

    /// Names the file in `e`, unless it names one already.
    pub(crate) fn locate(&self, e: Error) -> Error {
        match &self.file {
            Some(f) => e.in_file(f),
            None => e,
        }
    }

    /// Every warning so far, after those of the codec (`codec` appends its own).
    pub(crate) fn take(&mut self, codec: impl FnOnce(&mut Vec<Warning>)) -> Vec<Warning> {
        codec(&mut self.warnings);
        std::mem::take(&mut self.warnings)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An I/O failure of `kind` at offset 1234 of record 5 of `a.warc.gz`.
    fn located_io(kind: io::ErrorKind) -> Error {
        Error::new(ErrorKind::Io(io::Error::new(kind, "the cause")))
            .at(Position::at(1234).in_record(5))
            .in_file("a.warc.gz")
            .with_record_id("<urn:uuid:1>")
    }

    #[test]
    fn a_located_io_error_keeps_its_kind_and_comes_back_whole() {
        for kind in [
            io::ErrorKind::StorageFull,
            io::ErrorKind::BrokenPipe,
            io::ErrorKind::NotFound,
            io::ErrorKind::TimedOut,
            io::ErrorKind::ConnectionReset,
            io::ErrorKind::UnexpectedEof,
        ] {
            let io = io::Error::from(located_io(kind));
            assert_eq!(io.kind(), kind);
            let msg = io.to_string();
            assert_eq!(
                msg,
                "a.warc.gz: offset 1234 (record 5, <urn:uuid:1>): I/O error: the cause"
            );
            // The cause is still found walking the chain.
            let cause = std::error::Error::source(&io)
                .and_then(|s| s.downcast_ref::<io::Error>())
                .expect("the I/O cause");
            assert_eq!(cause.kind(), kind);

            let back = Error::from(io);
            assert_eq!(back.position(), Some(Position::at(1234).in_record(5)));
            assert_eq!(back.file(), Some(Path::new("a.warc.gz")));
            assert_eq!(back.record_id(), Some("<urn:uuid:1>"));
            assert!(matches!(back.kind(), ErrorKind::Io(e) if e.kind() == kind));
            assert_eq!(back.to_string(), msg);
        }
    }

    #[test]
    fn a_file_name_alone_is_kept_too() {
        let e = Error::from(io::Error::from(io::ErrorKind::PermissionDenied)).in_file("b.warc");
        let io = io::Error::from(e);
        assert_eq!(io.kind(), io::ErrorKind::PermissionDenied);
        assert!(io.to_string().starts_with("b.warc: "), "{io}");
        assert_eq!(Error::from(io).file(), Some(Path::new("b.warc")));
    }

    #[test]
    fn a_record_id_alone_is_not_dropped() {
        let e = Error::from(io::Error::from(io::ErrorKind::StorageFull)).with_record_id("<urn:x>");
        let io = io::Error::from(e);
        assert_eq!(io.kind(), io::ErrorKind::StorageFull);
        assert_eq!(Error::from(io).record_id(), Some("<urn:x>"));
    }

    #[test]
    fn an_unlocated_io_error_is_handed_back_as_it_came() {
        let e = Error::from(io::Error::new(io::ErrorKind::BrokenPipe, "gone"));
        let io = io::Error::from(e);
        assert_eq!(io.kind(), io::ErrorKind::BrokenPipe);
        assert_eq!(io.to_string(), "gone");
        // Not wrapped: the payload is the original message, not our Error.
        assert!(Error::carried_by(&io).is_none());
    }

    #[test]
    fn a_located_call_again_is_not_handed_out_as_one() {
        for kind in [io::ErrorKind::Interrupted, io::ErrorKind::WouldBlock] {
            let io = io::Error::from(located_io(kind));
            assert_eq!(io.kind(), io::ErrorKind::Other, "{kind:?}");
            let back = Error::from(io);
            assert!(matches!(back.kind(), ErrorKind::Io(e) if e.kind() == kind));
            assert_eq!(back.position().map(|p| p.offset), Some(1234));
        }
    }

    #[test]
    fn format_and_codec_errors_stay_invalid_data() {
        let codec = Error::from(crate::codec::CodecError {
            codec: "gzip",
            offset: 77,
            message: "bad deflate block".into(),
        })
        .in_file("c.warc.gz");
        let errors = [
            codec,
            Error::syntax("no version line", Position::at(3)).in_file("c.warc"),
            Error::new(ErrorKind::Truncated("block".into())).at(Position::at(9)),
            Error::new(ErrorKind::TooLarge {
                what: "header",
                limit: 10,
            }),
        ];
        for e in errors {
            let msg = e.to_string();
            let pos = e.position();
            let io = io::Error::from(e);
            assert_eq!(io.kind(), io::ErrorKind::InvalidData, "{msg}");
            assert_eq!(io.to_string(), msg);
            let back = Error::from(io);
            assert!(!back.is_io_error(), "{msg}");
            assert_eq!(back.position(), pos);
        }
    }
}
