//! [`Leniency`]: which deviations from the grammar the readers recover from.
//!
//! Each recovery a reader makes has its own knob here, named after the
//! [`WarningKind`] it reports and citing the clause it relaxes. A knob that
//! is on lets the reader recover and report a [`Warning`](crate::Warning);
//! a knob that is off turns that deviation into the error strict reading
//! gives. [`Leniency::lenient`] (the default) has every knob on,
//! [`Leniency::strict`] every knob off.
//!
//! Damaged compression (gzip members, zstd and LZ4 frames:
//! [`WarningKind::DamagedMember`], [`WarningKind::BadChecksum`],
//! [`WarningKind::TruncatedMember`]) is the codec's concern and has its own
//! switch, [`DecoderOptions::lenient`](crate::codec::DecoderOptions).

use crate::error::WarningKind;

/// One switch per recovery the WARC, ARC and Web InfoMall readers make.
///
/// Section numbers are those of WARC 1.1 (ISO 28500:2017); ARC and Web
/// InfoMall knobs cite their formats' own documents.
///
/// ```
/// use warchest::warc::{Leniency, ReaderOptions};
///
/// // Lenient about everything but a record that does not end in CRLF CRLF.
/// let mut leniency = Leniency::lenient();
/// leniency.bad_trailer = false;
/// let opts = ReaderOptions { leniency, ..ReaderOptions::default() };
/// # let _ = opts;
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
#[non_exhaustive]
pub struct Leniency {
    /// Header lines ending in LF without CR ([`WarningKind::BareLf`]).
    /// Relaxes WARC 1.1 section 4: every header line ends in CRLF.
    pub bare_lf: bool,
    /// Header lines without a colon, and continuation lines before any
    /// field, kept raw and ignored ([`WarningKind::LineWithoutColon`]).
    /// Relaxes WARC 1.1 section 4: `named-field = field-name ":" [ field-value ]`.
    pub line_without_colon: bool,
    /// White space between a field name and its colon
    /// ([`WarningKind::SpaceBeforeColon`]). Relaxes WARC 1.1 section 4: the
    /// colon follows the field name.
    pub space_before_colon: bool,
    /// Field names with characters outside the token grammar
    /// ([`WarningKind::BadFieldName`]). Relaxes WARC 1.1 section 4:
    /// `field-name = token`.
    pub bad_field_name: bool,
    /// WARC-Target-URI written inside `<...>` in a WARC 1.1 record, as WARC
    /// 1.0 writers did; the brackets are removed
    /// ([`WarningKind::BracketedUri`]). Relaxes WARC 1.1 section 4 (the
    /// NOTE on `uri`: no angle brackets) and section 5.14.
    pub bracketed_uri: bool,
    /// A record not followed by CRLF CRLF, extra line ends between records
    /// (ARC: extra or missing newlines; Web InfoMall: a missing or extra
    /// blank line after the content) ([`WarningKind::BadTrailer`]). Extra
    /// line ends at the very end of a WARC file are reported when on and
    /// accepted silently when off.
    /// Relaxes WARC 1.1 section 4: `warc-record = header CRLF block CRLF CRLF`.
    pub bad_trailer: bool,
    /// Bytes between records that are not a record, skipped up to the next
    /// record start ([`WarningKind::SkippedBytes`]); also a WARC header
    /// block longer than [`Limits::max_header_block`](crate::Limits): the
    /// record is given up and the reader streams on to the next record
    /// start (off: an error). Relaxes WARC 1.1 section 4: a WARC file is a
    /// concatenation of records.
    pub skipped_bytes: bool,
    /// Bytes after the last record that are not a record
    /// ([`WarningKind::TrailingGarbage`]). Relaxes WARC 1.1 section 4: a
    /// WARC file is a concatenation of records.
    pub trailing_garbage: bool,
    /// The input ending inside a record: inside its header block or before
    /// Content-Length bytes of block ([`WarningKind::TruncatedRecord`]).
    /// Relaxes WARC 1.1 sections 4 and 5.3: the block is Content-Length
    /// bytes long.
    pub truncated_record: bool,
    /// Content-Length missing or not a number; the block is skipped up to
    /// the next record (ARC: Archive-length, block taken as empty; Web
    /// InfoMall: `length`) ([`WarningKind::BadContentLength`]). Relaxes
    /// WARC 1.1 section 5.3 (mandatory, `1*DIGIT`).
    pub bad_content_length: bool,
    /// A Content-Length (ARC: Archive-length) larger than the record's
    /// gzip member when the next member starts a record: the block is cut
    /// where the member ends ([`WarningKind::BadContentLength`]). Relaxes
    /// WARC 1.1 section 5.3: Content-Length is the block's length.
    pub content_length_resync: bool,
    /// A version line naming a version other than 1.1, 1.0 or the 0.16 to
    /// 0.18 drafts, read as 1.1 ([`WarningKind::UnknownVersion`]). Relaxes
    /// WARC 1.1 section 4: `version = "WARC/1.1" CRLF`.
    pub unknown_version: bool,
    /// Compressed members after plain records, read on in them
    /// ([`WarningKind::NotRecordAtATime`]). When on, a record that starts
    /// inside a member or whose header block spans members is also
    /// reported (off, these are read without a word, as strict reading
    /// always did); a block spanning members is reported either way.
    /// Relaxes WARC 1.1 Annex D.2: one record per gzip member.
    pub not_record_at_a_time: bool,
    /// ARC archive-date or Web InfoMall `date` not in its format's form,
    /// read as docs/conversion.md says ([`WarningKind::BadDate`]). Relaxes
    /// the ARC URL-record line (14-digit Archive-date) and Web InfoMall
    /// spec section 2 (`date`).
    pub bad_date: bool,
    /// An ARC header line or Web InfoMall property that breaks its
    /// format's grammar, read as well as it could be
    /// ([`WarningKind::Grammar`]), including a Web InfoMall `version:`
    /// with no blank line within
    /// [`Limits::max_header_block`](crate::Limits), skipped as not a
    /// header (off: an error). Relaxes the ARC URL-record and version
    /// block grammar and Web InfoMall spec section 2.
    pub grammar: bool,
    /// CR LF line ends in a Web InfoMall header, whose lines end in LF
    /// alone ([`WarningKind::LineEnd`]). Relaxes Web InfoMall spec section 2.
    pub line_end: bool,
    /// Web InfoMall zlib content that does not decode, or decodes to
    /// another length than `unzip-length` ([`WarningKind::DamagedContent`]).
    /// Relaxes Web InfoMall spec section 2 (`unzip-length`).
    pub damaged_content: bool,
}

impl Leniency {
    /// Every recovery on: what real writers did is read, each deviation
    /// reported as a warning. The default.
    pub const fn lenient() -> Self {
        Self::all(true)
    }

    /// Every recovery off: the grammar as written, the first deviation is
    /// an error.
    pub const fn strict() -> Self {
        Self::all(false)
    }

    const fn all(on: bool) -> Self {
        Leniency {
            bare_lf: on,
            line_without_colon: on,
            space_before_colon: on,
            bad_field_name: on,
            bracketed_uri: on,
            bad_trailer: on,
            skipped_bytes: on,
            trailing_garbage: on,
            truncated_record: on,
            bad_content_length: on,
            content_length_resync: on,
            unknown_version: on,
            not_record_at_a_time: on,
            bad_date: on,
            grammar: on,
            line_end: on,
            damaged_content: on,
        }
    }

    /// True when every knob is off (the strict preset).
    pub fn is_strict(&self) -> bool {
        *self == Self::strict()
    }

    /// Whether a deviation reported as `kind` may be recovered from. For
    /// [`WarningKind::BadContentLength`] this is the missing or unreadable
    /// length ([`bad_content_length`](Leniency::bad_content_length)); kinds
    /// without a knob here (the codec's, [`WarningKind::NonUtf8`],
    /// [`WarningKind::Other`]) are always allowed.
    pub fn allows(&self, kind: WarningKind) -> bool {
        match kind {
            WarningKind::BareLf => self.bare_lf,
            WarningKind::BracketedUri => self.bracketed_uri,
            WarningKind::LineWithoutColon => self.line_without_colon,
            WarningKind::SpaceBeforeColon => self.space_before_colon,
            WarningKind::BadFieldName => self.bad_field_name,
            WarningKind::BadTrailer => self.bad_trailer,
            WarningKind::SkippedBytes => self.skipped_bytes,
            WarningKind::TrailingGarbage => self.trailing_garbage,
            WarningKind::TruncatedRecord => self.truncated_record,
            WarningKind::BadContentLength => self.bad_content_length,
            WarningKind::UnknownVersion => self.unknown_version,
            WarningKind::NotRecordAtATime => self.not_record_at_a_time,
            WarningKind::BadDate => self.bad_date,
            WarningKind::Grammar => self.grammar,
            WarningKind::LineEnd => self.line_end,
            WarningKind::DamagedContent => self.damaged_content,
            WarningKind::DamagedMember
            | WarningKind::BadChecksum
            | WarningKind::TruncatedMember
            | WarningKind::NonUtf8
            | WarningKind::Other => true,
        }
    }
}

impl Default for Leniency {
    fn default() -> Self {
        Self::lenient()
    }
}
