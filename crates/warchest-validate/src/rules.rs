//! The rule table: every check `validate` makes, in one place.
//!
//! Each rule has a stable id (`warc.field.missing-mandatory`), a severity,
//! the clause of the specification it comes from and what it applies to.
//! Severities follow the wording of the source: "shall" is an
//! [`Severity::Error`], "should" a [`Severity::Warning`], and what is only
//! worth knowing an [`Severity::Info`]. `docs/validation.md` is this table.
//!
//! Clause numbers: "1.1" is ISO 28500:2017, "1.0" ISO 28500:2009 (its final
//! draft); where the two number a section differently both are given.

use serde::Serialize;

/// How serious a finding is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Severity {
    /// Worth knowing; not a conformance problem.
    Info,
    /// A "should" of the specification is not followed.
    Warning,
    /// A "shall" of the specification is broken, or the bytes are damaged.
    Error,
}

impl Severity {
    /// The lower-case name used in reports.
    pub fn name(self) -> &'static str {
        match self {
            Severity::Info => "info",
            Severity::Warning => "warning",
            Severity::Error => "error",
        }
    }
}

impl std::fmt::Display for Severity {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.pad(self.name())
    }
}

/// What a rule applies to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "kebab-case")]
#[non_exhaustive]
pub enum AppliesTo {
    /// WARC records of every version (1.0 rules for 1.0 and the drafts,
    /// 1.1 rules for 1.1 and unknown versions).
    Warc,
    /// WARC 1.0 records (and the 0.16-0.18 drafts) only.
    Warc10,
    /// WARC 1.1 records only.
    Warc11,
    /// The WARC records of all the files validated together.
    WarcFiles,
    /// Any compressed file (gzip, zstd, LZ4).
    Compressed,
    /// gzip members.
    Gzip,
    /// zstd frames (`.warc.zst`).
    Zstd,
    /// LZ4 frames.
    Lz4,
    /// Any file, whatever its format.
    AnyFile,
    /// ARC files (v1 and v2).
    Arc,
    /// Web InfoMall (Tianwang) files.
    InfoMall,
}

impl AppliesTo {
    /// A short label for tables.
    pub fn label(self) -> &'static str {
        match self {
            AppliesTo::Warc => "WARC 1.0, 1.1",
            AppliesTo::Warc10 => "WARC 1.0",
            AppliesTo::Warc11 => "WARC 1.1",
            AppliesTo::WarcFiles => "WARC files together",
            AppliesTo::Compressed => "gzip, zstd, LZ4",
            AppliesTo::Gzip => "gzip",
            AppliesTo::Zstd => "zstd",
            AppliesTo::Lz4 => "LZ4",
            AppliesTo::AnyFile => "any file",
            AppliesTo::Arc => "ARC",
            AppliesTo::InfoMall => "InfoMall",
        }
    }
}

/// One rule of the table.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Rule {
    /// Stable identifier, `format.subject.problem`.
    pub id: &'static str,
    /// Severity of its findings.
    pub severity: Severity,
    /// The clause of the specification it comes from.
    pub clause: &'static str,
    /// What it applies to.
    pub applies_to: AppliesTo,
    /// What it requires, in a sentence.
    pub summary: &'static str,
}

macro_rules! rules {
    ($( $(#[$doc:meta])* $name:ident = ($id:literal, $sev:ident, $applies:ident, $clause:literal, $summary:literal); )*) => {
        $(
            $(#[$doc])*
            pub const $name: Rule = Rule {
                id: $id,
                severity: Severity::$sev,
                clause: $clause,
                applies_to: AppliesTo::$applies,
                summary: $summary,
            };
        )*
        /// Every rule, in the order of the documentation.
        pub const ALL: &[Rule] = &[$($name),*];
    };
}

rules! {
    // ---- WARC: version line and header block ----
    /// The version line names a version other than 1.0 and 1.1.
    VERSION_UNKNOWN = ("warc.version.unknown", Warning, Warc, "1.1 §4, 1.0 §4",
        "The version line is WARC/1.0 or WARC/1.1.");
    /// A draft version (0.16 to 0.18): validated with the 1.0 rules.
    VERSION_DRAFT = ("warc.version.draft", Info, Warc10, "1.0 §4",
        "Draft versions 0.16-0.18 are validated with the 1.0 rules.");
    /// `--spec` asked for one version and the record declares another.
    VERSION_NOT_REQUESTED = ("warc.version.not-requested", Error, Warc, "1.1 §4, 1.0 §4",
        "With --spec, every record's version line is the version asked for.");
    /// A header line ends in LF without CR.
    HEADER_LINE_END = ("warc.header.line-end", Error, Warc, "1.1 §4, 1.0 §4",
        "Header lines end in CRLF.");
    /// A header line is not `name ":" value`.
    HEADER_SYNTAX = ("warc.header.syntax", Error, Warc, "1.1 §4, 1.0 §4",
        "Every header line is a named field: a token, a colon, a value.");
    /// A header is not UTF-8.
    HEADER_UTF8 = ("warc.header.utf8", Error, Warc, "1.1 §4, 1.0 §4",
        "The header is UTF-8 text.");
    /// A field value holds a control character.
    HEADER_CONTROL_CHAR = ("warc.header.control-char", Error, Warc, "1.1 §4, 1.0 §4",
        "Field values hold no control characters other than tab (TEXT).");
    /// An RFC 2047 encoded word in a field value cannot be decoded.
    HEADER_ENCODED_WORD = ("warc.header.encoded-word", Warning, Warc, "1.1 §4, 1.0 §4",
        "Encoded words (RFC 2047) in field values are well formed, in a known charset.");

    // ---- WARC: record framing ----
    /// The block is not followed by CRLF CRLF.
    RECORD_TRAILER = ("warc.record.trailer", Error, Warc, "1.1 §4, 1.0 §4",
        "Each block is followed by exactly CRLF CRLF, and records follow each other directly.");
    /// The input ends inside the record.
    RECORD_TRUNCATED = ("warc.record.truncated", Error, Warc, "1.1 §4 and §5.3, 1.0 §4 and §5.3",
        "The record is complete: a header block and Content-Length bytes of block.");
    /// Content-Length disagrees with the bytes the record really has.
    CONTENT_LENGTH_MISMATCH = ("warc.content-length.mismatch", Error, Warc, "1.1 §5.3, 1.0 §5.3",
        "Content-Length is the number of bytes in the block.");

    // ---- WARC: fields of one record ----
    /// WARC-Record-ID, Content-Length, WARC-Date or WARC-Type is missing.
    FIELD_MISSING_MANDATORY = ("warc.field.missing-mandatory", Error, Warc, "1.1 §5.2-5.5, 1.0 §5.2-5.5",
        "Every record has WARC-Record-ID, Content-Length, WARC-Date and WARC-Type, with a value.");
    /// A defined field has an empty value.
    FIELD_EMPTY = ("warc.field.empty", Error, Warc, "1.1 §5, 1.0 §5",
        "Defined fields have a value; no field grammar allows an empty one.");
    /// A defined field other than WARC-Concurrent-To appears more than once.
    FIELD_REPEATED = ("warc.field.repeated", Error, Warc, "1.1 §5.1, 1.0 §5.1",
        "Named fields are not repeated, except WARC-Concurrent-To.");
    /// A field the record's type shall not carry.
    FIELD_NOT_ALLOWED = ("warc.field.not-allowed", Error, Warc,
        "1.1 §4, §5.7, §5.9-5.14, §5.17, §5.19, §5.21-5.22; 1.0 §4, §5.7, §5.9-5.12, §5.15, §5.17, §5.19-5.20",
        "Fields appear only on the record types that may carry them (e.g. WARC-Filename only on warcinfo, WARC-Concurrent-To not on warcinfo, conversion or continuation).");
    /// A field the specification does not define for the record's type.
    FIELD_UNEXPECTED = ("warc.field.unexpected", Warning, Warc, "1.1 §5.16, §5.18; 1.0 §5.14, §5.16",
        "WARC-Warcinfo-ID is not used on warcinfo records; WARC-Profile only on revisit records.");
    /// A field the record's type shall carry is missing.
    FIELD_MISSING_FOR_TYPE = ("warc.field.missing-for-type", Error, Warc,
        "1.1 §5.14, §5.18, §5.20-5.21, §6.9; 1.0 §5.12, §5.16, §5.18-5.19, §6.9",
        "Records carry the fields their type requires (WARC-Target-URI, WARC-Profile on revisit, WARC-Segment-Origin-ID and WARC-Segment-Number on continuation).");
    /// A non-empty block without Content-Type.
    CONTENT_TYPE_MISSING = ("warc.content-type.missing", Warning, Warc, "1.1 §5.6, 1.0 §5.6",
        "Records with a non-empty block, except continuation records, should have a Content-Type.");
    /// A warcinfo record whose Content-Type is not application/warc-fields.
    CONTENT_TYPE_WARCINFO = ("warc.content-type.warcinfo", Warning, Warc, "1.1 §6.2, 1.0 §6.2",
        "warcinfo records should use Content-Type application/warc-fields.");
    /// An http(s) request or response record that is not application/http.
    CONTENT_TYPE_HTTP = ("warc.content-type.http", Warning, Warc, "1.1 §6.3.2, §6.5.2; 1.0 §6.3.2, §6.5.2",
        "request and response records of http(s) URIs should have Content-Type application/http with the matching msgtype.");
    /// An http(s) request or response record without WARC-IP-Address.
    IP_ADDRESS_RECOMMENDED = ("warc.ip-address.recommended", Warning, Warc, "1.1 §6.3.2, §6.5.2; 1.0 §6.3.2, §6.5.2",
        "request and response records of http(s) URIs should carry WARC-IP-Address.");
    /// An application/http block that does not start with an HTTP message.
    HTTP_NOT_HTTP = ("warc.http.not-http", Warning, Warc, "1.1 §6.3.2, §6.5.2; 1.0 §6.3.2, §6.5.2",
        "An application/http block holds an HTTP message: a status line or a request line first.");
    /// An HTTP message whose Content-Length disagrees with its body.
    HTTP_CONTENT_LENGTH = ("warc.http.content-length", Warning, Warc, "1.1 §6.3.2, §6.5.2 (RFC 7230 §3.3.2)",
        "The HTTP message in a block is complete: its Content-Length is the length of the body that follows its head.");
    /// A warc-fields block that is not warc-fields.
    WARC_FIELDS_SYNTAX = ("warc.warc-fields.syntax", Warning, Warc, "1.1 §4 and §8, 1.0 §4 and §8.3",
        "A block declared application/warc-fields is named fields ending in CRLF.");

    // ---- WARC: value grammars ----
    /// A record id field is not `"<" uri ">"`.
    RECORD_ID_SYNTAX = ("warc.record-id.syntax", Error, Warc, "1.1 §5.2, §5.7, §5.11, §5.16, §5.21; 1.0 §4, §5.2, §5.7, §5.11, §5.14, §5.19",
        "WARC-Record-ID, WARC-Concurrent-To, WARC-Refers-To, WARC-Warcinfo-ID and WARC-Segment-Origin-ID are an absolute URI inside <...>, without white space.");
    /// A URI field is not an RFC 3986 URI.
    URI_SYNTAX = ("warc.uri.syntax", Error, Warc, "1.1 §4, §5.14; 1.0 §4, §5.12",
        "WARC-Target-URI, WARC-Profile and WARC-Refers-To-Target-URI are absolute URIs, properly escaped, without white space (RFC 3986).");
    /// A 1.1 URI field written inside `<...>`.
    URI_BRACKETS = ("warc.uri.brackets", Error, Warc11, "1.1 §4 (NOTE on uri)",
        "In WARC 1.1, WARC-Target-URI, WARC-Profile and WARC-Refers-To-Target-URI are written without <...>.");
    /// A 1.0 URI field written inside `<...>` as the 1.0 grammar says.
    URI_BRACKETS_1_0 = ("warc.uri.brackets-1.0", Info, Warc10, "1.0 §4",
        "The 1.0 grammar puts URIs inside <...>; its own examples and most readers do not.");
    /// A date that is not a W3C-DTF UTC timestamp.
    DATE_SYNTAX = ("warc.date.syntax", Error, Warc, "1.1 §5.4, §5.13; 1.0 §5.4",
        "WARC-Date and WARC-Refers-To-Date are UTC timestamps in the W3C profile of ISO 8601 (W3CDTF), ending in Z.");
    /// A 1.0 date that is not exactly YYYY-MM-DDThh:mm:ssZ.
    DATE_PRECISION = ("warc.date.precision", Error, Warc10, "1.0 §5.4",
        "In WARC 1.0, WARC-Date is exactly YYYY-MM-DDThh:mm:ssZ: no fraction of a second, no reduced precision.");
    /// A 1.1 date with less than second precision.
    DATE_REDUCED_PRECISION = ("warc.date.reduced-precision", Info, Warc11, "1.1 §5.4",
        "WARC-Date should be given with as much precision as is known; reduced precision (YYYY, YYYY-MM ...) loses it.");
    /// A date with lower-case 't' or 'z'.
    DATE_LOWERCASE = ("warc.date.lowercase", Warning, Warc, "1.1 §5.4, 1.0 §5.4 (W3CDTF)",
        "W3CDTF writes the separator T and the designator Z in upper case.");
    /// A non-negative integer field that is not 1*DIGIT.
    INTEGER_SYNTAX = ("warc.integer.syntax", Error, Warc, "1.1 §5.3, §5.20, §5.22; 1.0 §5.3, §5.18, §5.20",
        "Content-Length, WARC-Segment-Number and WARC-Segment-Total-Length are decimal digits.");
    /// WARC-IP-Address is not an IPv4 or IPv6 address.
    IP_SYNTAX = ("warc.ip.syntax", Error, Warc, "1.1 §5.10, 1.0 §5.10",
        "WARC-IP-Address is an IPv4 dotted quad or an IPv6 address.");
    /// A media type that does not follow the grammar.
    MEDIA_TYPE_SYNTAX = ("warc.media-type.syntax", Error, Warc, "1.1 §5.6, §5.19; 1.0 §5.6, §5.17",
        "Content-Type and WARC-Identified-Payload-Type are type/subtype followed by ;parameter=value pairs (white space around ';' accepted, erratum #38).");
    /// WARC-Type is not a token.
    TYPE_SYNTAX = ("warc.type.syntax", Error, Warc, "1.1 §5.5, 1.0 §5.5",
        "WARC-Type is a token.");
    /// WARC-Type names no type the specification defines.
    TYPE_UNKNOWN = ("warc.type.unknown", Warning, Warc, "1.1 §5.5, §6.1; 1.0 §5.5, §6.1",
        "WARC-Type is one of the eight defined types; readers skip others.");
    /// WARC-Truncated is not a token.
    TRUNCATED_SYNTAX = ("warc.truncated.syntax", Error, Warc, "1.1 §5.15, 1.0 §5.13",
        "WARC-Truncated is a reason token.");
    /// WARC-Truncated names a reason the specification does not define.
    TRUNCATED_UNKNOWN = ("warc.truncated.unknown", Info, Warc, "1.1 §5.15, 1.0 §5.13",
        "WARC-Truncated is length, time, disconnect or unspecified; other reasons are extensions.");
    /// WARC-Profile names no profile the specification defines.
    PROFILE_UNKNOWN = ("warc.profile.unknown", Warning, Warc, "1.1 §5.18, §6.7; 1.0 §5.16, §6.7",
        "WARC-Profile is a defined revisit profile; readers do not interpret records of other profiles.");
    /// The revisit profile URI of the other version.
    PROFILE_VERSION = ("warc.profile.version", Warning, Warc, "1.1 §6.7.2-6.7.3, 1.0 §6.7.2-6.7.3",
        "A revisit profile URI names the record's own version (.../warc/1.1/revisit/... in 1.1 records).");
    /// A digest field that is not `algorithm ":" value`.
    DIGEST_SYNTAX = ("warc.digest.syntax", Error, Warc, "1.1 §5.8-5.9, 1.0 §5.8-5.9",
        "WARC-Block-Digest and WARC-Payload-Digest are algorithm:value, the value an encoding of a digest of the algorithm's length.");
    /// A digest of an algorithm warchest does not know.
    DIGEST_UNKNOWN_ALGORITHM = ("warc.digest.unknown-algorithm", Warning, Warc, "1.1 §5.8-5.9, 1.0 §5.8-5.9",
        "Digests use an algorithm a validator can verify (md5, sha1, sha2, sha3 families).");
    /// A digest value with '=' padding or '/'.
    DIGEST_TOKEN = ("warc.digest.token", Info, Warc, "1.1 §5.8 (community recommendation #48)",
        "digest-value is a token, which excludes the '=' of base32 padding and the '/' of base64; readers accept them.");
    /// WARC-Block-Digest does not match the block.
    DIGEST_BLOCK_MISMATCH = ("warc.digest.block-mismatch", Error, Warc, "1.1 §5.8, 1.0 §5.8",
        "WARC-Block-Digest is the digest of the whole block.");
    /// WARC-Payload-Digest does not match the payload.
    DIGEST_PAYLOAD_MISMATCH = ("warc.digest.payload-mismatch", Error, Warc, "1.1 §5.9 and §6.3.2, 1.0 §5.9 and §6.3.2",
        "WARC-Payload-Digest is the digest of the payload: the entity body with transfer coding removed for HTTP, the block for resource and conversion records.");
    /// WARC-Payload-Digest matches the still chunked bytes.
    DIGEST_PAYLOAD_CHUNKED = ("warc.digest.payload-chunked", Warning, Warc, "1.1 §5.9 and §6.3.2, 1.0 §5.9 and §6.3.2",
        "The payload digest covers the entity body with transfer coding removed, not the chunked bytes (a common writer convention).");

    // ---- WARC: revisit and segments ----
    /// An identical-payload-digest revisit without WARC-Payload-Digest.
    REVISIT_PAYLOAD_DIGEST = ("warc.revisit.payload-digest", Error, Warc, "1.1 §6.7.2, 1.0 §6.7.2",
        "A revisit record of the identical-payload-digest profile carries WARC-Payload-Digest.");
    /// An identical-payload-digest revisit with a block but no `WARC-Truncated: length`.
    REVISIT_TRUNCATED = ("warc.revisit.truncated", Error, Warc, "1.1 §6.7.2, 1.0 §6.7.2",
        "A revisit record of the identical-payload-digest profile that keeps a block says WARC-Truncated: length.");
    /// A revisit record without the fields the specification recommends.
    REVISIT_RECOMMENDED_FIELD = ("warc.revisit.recommended-field", Warning, Warc, "1.1 §6.7.2-6.7.3, 1.0 §6.7.2-6.7.3",
        "A revisit record should name the record it revisits: WARC-Refers-To, and in 1.1 WARC-Refers-To-Target-URI and WARC-Refers-To-Date.");
    /// A segment number that cannot be right for the record's type.
    SEGMENT_NUMBER = ("warc.segment.number", Error, Warc, "1.1 §5.20 and §7, 1.0 §5.18 and §7",
        "The first segment (not continuation) has WARC-Segment-Number 1; continuation records have 2 or more.");
    /// A continuation record with optional fields.
    SEGMENT_OPTIONAL_FIELD = ("warc.segment.optional-field", Warning, Warc, "1.1 §7, 1.0 §7",
        "Segments other than the first should not carry other optional fields (Content-Type, WARC-Identified-Payload-Type ...).");

    // ---- WARC: across records and files ----
    /// Two records with the same WARC-Record-ID.
    RECORD_ID_DUPLICATE = ("warc.record-id.duplicate", Error, WarcFiles, "1.1 §5.2, 1.0 §5.2",
        "WARC-Record-ID is globally unique.");
    /// A reference to a record that is not in the files validated.
    REFERENCE_MISSING = ("warc.reference.missing", Warning, WarcFiles, "1.1 §5.7, §5.11, §5.16, §5.21; 1.0 §5.7, §5.11, §5.14, §5.19",
        "WARC-Concurrent-To, WARC-Refers-To, WARC-Warcinfo-ID and WARC-Segment-Origin-ID name records that exist (among the files validated together).");
    /// A reference to a record of the wrong type.
    REFERENCE_WRONG_TYPE = ("warc.reference.wrong-type", Warning, WarcFiles, "1.1 §5.16, §7; 1.0 §5.14, §7",
        "WARC-Warcinfo-ID names a warcinfo record; WARC-Segment-Origin-ID names the first segment, not a continuation.");
    /// A revisit whose Refers-To-Target-URI or Refers-To-Date differs from the record it refers to.
    REVISIT_REFERS_TO_MISMATCH = ("warc.revisit.refers-to-mismatch", Warning, WarcFiles, "1.1 §6.7.2-6.7.3",
        "WARC-Refers-To-Target-URI and WARC-Refers-To-Date equal the WARC-Target-URI and WARC-Date of the record WARC-Refers-To names.");
    /// Records of one capture event with different WARC-Dates.
    CONCURRENT_DATE = ("warc.concurrent.date", Error, WarcFiles, "1.1 §5.4, 1.0 §5.4",
        "Records of one capture event (WARC-Concurrent-To) use the same WARC-Date.");
    /// A segmented record that is not complete in the files validated.
    SEGMENT_CHAIN = ("warc.segment.chain", Warning, WarcFiles, "1.1 §7, 1.0 §7",
        "A segmented record is complete: its first segment and continuation records numbered 2..n without gaps, the last with WARC-Segment-Total-Length.");
    /// Two segments of one record with the same number.
    SEGMENT_DUPLICATE_NUMBER = ("warc.segment.duplicate-number", Error, WarcFiles, "1.1 §5.20 and §7, 1.0 §5.18 and §7",
        "Each segment of a record has its own number.");
    /// WARC-Segment-Total-Length that is wrong or misplaced.
    SEGMENT_TOTAL_LENGTH = ("warc.segment.total-length", Error, WarcFiles, "1.1 §5.22 and §7, 1.0 §5.20 and §7",
        "WARC-Segment-Total-Length is on the last segment only and equals the sum of the segments' Content-Lengths.");
    /// Segments of one record with different WARC-Target-URIs.
    SEGMENT_TARGET_URI = ("warc.segment.target-uri", Error, WarcFiles, "1.1 §7, 1.0 §7",
        "All segments of a record have the same WARC-Target-URI.");
    /// A WARC file that does not start with a warcinfo record.
    WARCINFO_FIRST = ("warc.warcinfo.first", Warning, Warc, "1.1 §5.5 and §6.2, 1.0 §5.5 and §6.2",
        "Starting every WARC file with a warcinfo record is recommended.");
    /// A file with no record.
    FILE_EMPTY = ("warc.file.empty", Error, Warc, "1.1 §4, 1.0 §4",
        "A WARC file holds one or more records.");

    // ---- Any file ----
    /// Bytes between records or members that belong to none.
    FILE_GARBAGE = ("file.garbage", Error, AnyFile, "WARC 1.1 §4; RFC 1952 §2.2; ARC; InfoMall §2 rule 1",
        "Records (and compressed members) follow each other with nothing in between.");
    /// Bytes after the last record or member.
    FILE_TRAILING_GARBAGE = ("file.trailing-garbage", Error, AnyFile, "WARC 1.1 §4; RFC 1952 §2.2; ARC; InfoMall §2 rule 1",
        "Nothing follows the last record.");
    /// The rest of the file could not be read.
    FILE_UNREADABLE = ("file.unreadable", Error, AnyFile, "-",
        "The whole file can be read (a header beyond the reader's limits, or a grammar the reader cannot follow, stops it).");
    /// The file is in no format warchest knows.
    FILE_UNKNOWN_FORMAT = ("file.unknown-format", Error, AnyFile, "-",
        "The file is WARC, ARC or Web InfoMall, plain or compressed.");

    // ---- Compression ----
    /// A compressed member that does not decompress.
    MEMBER_DAMAGED = ("container.member.damaged", Error, Compressed, "RFC 1952 §2-3; RFC 8878 §3; LZ4 frame format",
        "Every gzip member, zstd frame and LZ4 frame decompresses.");
    /// A checksum of a compressed member that does not match.
    MEMBER_CHECKSUM = ("container.member.checksum", Error, Compressed, "RFC 1952 §2.3.1; RFC 8878 §3.1.1; LZ4 frame format",
        "The gzip CRC32, ISIZE and header CRC16, and the LZ4 checksums, match the data.");
    /// A compressed member cut off by the end of the file.
    MEMBER_TRUNCATED = ("container.member.truncated", Error, Compressed, "RFC 1952 §2.2; RFC 8878 §3; LZ4 frame format",
        "Every compressed member is complete.");
    /// Records that do not start a gzip member.
    GZIP_RECORD_AT_A_TIME = ("gzip.record-at-a-time", Warning, Gzip, "1.1 Annex D.2, 1.0 Annex A.2",
        "Each record should be compressed as its own gzip member.");
    /// A gzip XFL value RFC 1952 does not define.
    GZIP_HEADER_XFL = ("gzip.header.xfl", Warning, Gzip, "RFC 1952 §2.3.1",
        "XFL is 0, 2 (best compression) or 4 (fastest).");
    /// A gzip OS value RFC 1952 does not define.
    GZIP_HEADER_OS = ("gzip.header.os", Warning, Gzip, "RFC 1952 §2.3.1",
        "OS is 0-13 or 255 (unknown).");
    /// A gzip FEXTRA field that is not a list of subfields.
    GZIP_HEADER_EXTRA = ("gzip.header.extra", Warning, Gzip, "RFC 1952 §2.3.1.1",
        "FEXTRA is a sequence of subfields (SI1 SI2 LEN data) filling XLEN exactly (decompressors skip it, tools that read subfields cannot).");
    /// A gzip FNAME or FCOMMENT that is not ISO 8859-1 text.
    GZIP_HEADER_LATIN1 = ("gzip.header.latin1", Warning, Gzip, "RFC 1952 §2.3.1",
        "FNAME and FCOMMENT are ISO 8859-1 text (no control characters; LF allowed in FCOMMENT).");
    /// A zstd file that begins with an extension (skippable) frame.
    ZSTD_FILE_START = ("zstd.file.start", Error, Zstd, "WARC-zstd §File format",
        "A .warc.zst file begins with a zstd frame or the dictionary frame.");
    /// A dictionary frame anywhere but first, or more than one.
    ZSTD_DICTIONARY_POSITION = ("zstd.dictionary.position", Error, Zstd, "WARC-zstd §File format",
        "The dictionary frame (skippable frame 0x184D2A5D), if any, is the first frame and the only one.");
    /// A dictionary frame that holds no dictionary.
    ZSTD_DICTIONARY_FORMAT = ("zstd.dictionary.format", Error, Zstd, "WARC-zstd §Dictionary frame format",
        "The dictionary frame holds a zstd dictionary (magic 0xEC30A437), raw or as one zstd frame.");
    /// A zstd frame without Frame_Content_Size.
    ZSTD_FRAME_CONTENT_SIZE = ("zstd.frame.content-size", Error, Zstd, "WARC-zstd §Zstandard frames",
        "Every zstd frame records Frame_Content_Size.");
    /// A zstd frame without Content_Checksum.
    ZSTD_FRAME_CHECKSUM = ("zstd.frame.checksum", Error, Zstd, "WARC-zstd §Zstandard frames",
        "Every zstd frame carries Content_Checksum.");
    /// A zstd frame whose Dictionary_ID does not match the file's dictionary.
    ZSTD_FRAME_DICTIONARY_ID = ("zstd.frame.dictionary-id", Error, Zstd, "WARC-zstd §Zstandard frames and §Dictionaries",
        "With a dictionary, every frame names its Dictionary_ID; without one, no frame names one.");
    /// A zstd frame holding data of more than one record.
    ZSTD_FRAME_MULTIPLE_RECORDS = ("zstd.frame.multiple-records", Error, Zstd, "WARC-zstd §File format",
        "A zstd frame holds data of one record only, and a record is in one frame.");
    /// LZ4 compression.
    LZ4_NONSTANDARD = ("lz4.nonstandard", Info, Lz4, "-",
        "No WARC specification defines LZ4 compression; other readers may not open the file.");
    /// An LZ4 frame holding data of more than one record.
    LZ4_FRAME_MULTIPLE_RECORDS = ("lz4.frame.multiple-records", Warning, Lz4, "-",
        "An LZ4 frame holds data of one record only, and a record is in one frame, as zstd's rule asks of its frames: otherwise no index can point at the record.");

    // ---- ARC ----
    /// An ARC file that does not begin with its version block.
    ARC_VERSION_BLOCK_MISSING = ("arc.version-block.missing", Error, Arc, "ARC format (1996), version block",
        "An ARC file begins with a filedesc:// version block.");
    /// A version block whose second or third line is wrong.
    ARC_VERSION_BLOCK_SYNTAX = ("arc.version-block.syntax", Error, Arc, "ARC format (1996), version block",
        "The version block's second line is `version reserved origin-code` (version 1 or 2) and its third line the field names of that version.");
    /// A version block whose length does not cover its lines.
    ARC_VERSION_BLOCK_LENGTH = ("arc.version-block.length", Error, Arc, "ARC format (1996), version block",
        "The version block's length counts the bytes after its first line.");
    /// A header line with the wrong number of fields.
    ARC_HEADER_FIELDS = ("arc.header.fields", Error, Arc, "ARC format (1996), URL record definition",
        "Each header line has the fields the version block defines (5 in v1, 10 in v2), separated by single spaces.");
    /// An ARC URL that is not an absolute URI.
    ARC_HEADER_URL = ("arc.header.url", Error, Arc, "ARC format (1996), URL record definition",
        "The URL field is an absolute URI without white space.");
    /// An ARC IP-address field that is not an IPv4 address.
    ARC_HEADER_IP = ("arc.header.ip", Error, Arc, "ARC format (1996), URL record definition",
        "The IP-address field is a dotted quad.");
    /// An ARC date that is not 14 digits.
    ARC_HEADER_DATE = ("arc.header.date", Error, Arc, "ARC format (1996), URL record definition",
        "The Archive-date field is YYYYMMDDhhmmss, a valid date.");
    /// An ARC content type that is not a media type.
    ARC_HEADER_CONTENT_TYPE = ("arc.header.content-type", Warning, Arc, "ARC format (1996), URL record definition",
        "The Content-type field is type/subtype (or no-type).");
    /// An ARC length that is not a non-negative integer.
    ARC_HEADER_LENGTH = ("arc.header.length", Error, Arc, "ARC format (1996), URL record definition",
        "The Archive-length field is a non-negative decimal integer.");
    /// An ARC v2 result code that is not three digits.
    ARC_HEADER_RESULT_CODE = ("arc.header.result-code", Error, Arc, "ARC format v2 (1996), URL record definition",
        "The Result-code field is a number from 100 to 999 (or - when there is none).");
    /// An ARC v2 offset that is not where the record is.
    ARC_HEADER_OFFSET = ("arc.header.offset", Error, Arc, "ARC format v2 (1996), URL record definition",
        "The Offset field is a non-negative integer: the record's offset in the file.");
    /// An ARC record not followed by one LF.
    ARC_RECORD_TRAILER = ("arc.record.trailer", Error, Arc, "ARC format (1996)",
        "Each record's content is followed by one LF.");
    /// An ARC record cut off by the end of the file.
    ARC_RECORD_TRUNCATED = ("arc.record.truncated", Error, Arc, "ARC format (1996)",
        "Each record holds Archive-length bytes after its header line.");

    // ---- Web InfoMall ----
    /// A record that is not head, blank line, data, blank line.
    INFOMALL_RECORD_SYNTAX = ("infomall.record.syntax", Error, InfoMall, "InfoMall §2 rules 2, 3, 8",
        "A record is a head of non-empty property lines, a blank line (one LF), the data, and a blank line (one LF).");
    /// A property line that is not `name:value` LF.
    INFOMALL_PROPERTY_SYNTAX = ("infomall.property.syntax", Error, InfoMall, "InfoMall §2 rule 4",
        "Each property is name, ':', value and one LF (no CR).");
    /// The first property is not `version`.
    INFOMALL_VERSION_FIRST = ("infomall.version.first", Error, InfoMall, "InfoMall §2 rule 5",
        "The first property of a head is version.");
    /// A version other than 1.0.
    INFOMALL_VERSION_UNKNOWN = ("infomall.version.unknown", Warning, InfoMall, "InfoMall §3",
        "The version is 1.0, the one the specification describes.");
    /// The last property is not `length`.
    INFOMALL_LENGTH_LAST = ("infomall.length.last", Error, InfoMall, "InfoMall §2 rule 6",
        "The last property of a head is length.");
    /// `length` that is not the length of the data.
    INFOMALL_LENGTH_MISMATCH = ("infomall.length.mismatch", Error, InfoMall, "InfoMall §2 rule 6",
        "length is a decimal integer, the number of data bytes between the two blank lines.");
    /// A property name with upper-case letters.
    INFOMALL_NAME_LOWERCASE = ("infomall.name.lowercase", Error, InfoMall, "InfoMall §2 rule 7",
        "Property names are lower case.");
    /// A required property is missing.
    INFOMALL_PROPERTY_MISSING = ("infomall.property.missing", Error, InfoMall, "InfoMall §3",
        "Every record has url and date.");
    /// `date` that is not an RFC 822 date.
    INFOMALL_DATE_SYNTAX = ("infomall.date.syntax", Error, InfoMall, "InfoMall §3",
        "date is in the RFC 822 format (e.g. Tue, 15 Apr 2003 08:13:06 GMT).");
    /// `ip` missing, or not an address or `unknown`.
    INFOMALL_IP = ("infomall.ip", Warning, InfoMall, "InfoMall §3",
        "ip should be given: an IP address, or unknown.");
    /// `unzip-length` present on plain data, missing on compressed data, or wrong.
    INFOMALL_UNZIP_LENGTH = ("infomall.unzip-length", Error, InfoMall, "InfoMall §3",
        "unzip-length is present exactly when the data is compressed, and is its uncompressed length.");
    /// A repeated property.
    INFOMALL_PROPERTY_REPEATED = ("infomall.property.repeated", Error, InfoMall, "InfoMall §3",
        "Each property appears once in a head.");

    // ---- Extensions (--forbid-extensions) ----
    /// A field the specification does not define.
    EXTENSION_FIELD = ("extension.field", Error, Warc, "1.1 §4 and §5.1, 1.0 §4 and §5.1 (--forbid-extensions)",
        "With --forbid-extensions: only the named fields of the record's version appear.");
    /// A record type, truncation reason or profile the specification does not define.
    EXTENSION_VALUE = ("extension.value", Error, Warc, "1.1 §5.5, §5.15, §5.18; 1.0 §5.5, §5.13, §5.16 (--forbid-extensions)",
        "With --forbid-extensions: WARC-Type, WARC-Truncated and WARC-Profile take only the values the specification defines.");
    /// An unknown InfoMall property.
    EXTENSION_PROPERTY = ("extension.property", Error, InfoMall, "InfoMall §3 (--forbid-extensions)",
        "With --forbid-extensions: only the properties of version 1.0 appear.");
}

/// The rule with `id`, if there is one.
pub fn by_id(id: &str) -> Option<&'static Rule> {
    ALL.iter().find(|r| r.id == id)
}

/// The rule table as a Markdown table (what `docs/validation.md` holds).
pub fn markdown_table() -> String {
    let mut s = String::from("| rule | severity | applies to | clause | requirement |\n");
    s.push_str("|---|---|---|---|---|\n");
    for r in ALL {
        s.push_str(&format!(
            "| `{}` | {} | {} | {} | {} |\n",
            r.id,
            r.severity,
            r.applies_to.label(),
            r.clause.replace('|', "\\|"),
            r.summary.replace('|', "\\|")
        ));
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_unique_and_well_formed() {
        let mut seen = std::collections::HashSet::new();
        for r in ALL {
            assert!(seen.insert(r.id), "duplicate rule id {}", r.id);
            assert!(
                r.id.bytes()
                    .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b"-.".contains(&b)),
                "{}",
                r.id
            );
            assert!(r.id.contains('.'), "{}", r.id);
            assert!(!r.summary.is_empty() && !r.clause.is_empty());
        }
        assert_eq!(by_id("warc.field.repeated"), Some(&FIELD_REPEATED));
        assert_eq!(by_id("no.such.rule"), None);
    }
}
