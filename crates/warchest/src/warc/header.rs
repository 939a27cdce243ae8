//! The WARC header block: version line and named fields, with typed accessors.

use std::borrow::Cow;
use std::fmt;
use std::net::IpAddr;

use super::date::{DateError, WarcDate};
use super::field;
use crate::digest::{Digest, DigestError};
use crate::fields::Fields;

/// The version of a record, from its version line `WARC/major.minor`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Version {
    /// Major version.
    pub major: u16,
    /// Minor version.
    pub minor: u16,
}

impl Version {
    /// WARC 1.1 (ISO 28500:2017).
    pub const V1_1: Version = Version { major: 1, minor: 1 };
    /// WARC 1.0 (ISO 28500:2009, GB/T 33994-2017).
    pub const V1_0: Version = Version { major: 1, minor: 0 };
    /// Draft 0.18 (ClueWeb09 and ClueWeb12 use it).
    pub const V0_18: Version = Version {
        major: 0,
        minor: 18,
    };
    /// Draft 0.17.
    pub const V0_17: Version = Version {
        major: 0,
        minor: 17,
    };
    /// Draft 0.16 (the IETF draft).
    pub const V0_16: Version = Version {
        major: 0,
        minor: 16,
    };

    /// Parses a version line such as `WARC/1.1` (line end already removed).
    pub fn parse_line(line: &[u8]) -> Option<Version> {
        // What nearly every record says, without the general parse.
        match line {
            b"WARC/1.0" => return Some(Version::V1_0),
            b"WARC/1.1" => return Some(Version::V1_1),
            _ => {}
        }
        // The name is matched in any case: JWAT's valid samples hold `warc/1.0`.
        let rest = line
            .get(..5)
            .filter(|p| p.eq_ignore_ascii_case(b"WARC/"))
            .and_then(|_| line.get(5..))?;
        let rest = trim_ascii_end(rest);
        let dot = rest.iter().position(|&b| b == b'.')?;
        let num = |b: &[u8]| -> Option<u16> {
            if b.is_empty() || b.len() > 4 || !b.iter().all(u8::is_ascii_digit) {
                return None;
            }
            std::str::from_utf8(b).ok()?.parse().ok()
        };
        Some(Version {
            major: num(&rest[..dot])?,
            minor: num(&rest[dot + 1..])?,
        })
    }

    /// True for 1.1, 1.0 and the 0.16-0.18 drafts.
    pub fn is_known(self) -> bool {
        matches!(
            self,
            Version::V1_1 | Version::V1_0 | Version::V0_18 | Version::V0_17 | Version::V0_16
        )
    }
}

impl fmt::Display for Version {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "WARC/{}.{}", self.major, self.minor)
    }
}

fn trim_ascii_end(mut b: &[u8]) -> &[u8] {
    while let [rest @ .., last] = b {
        if last.is_ascii_whitespace() {
            b = rest;
        } else {
            break;
        }
    }
    b
}

/// The WARC-Type of a record (WARC 1.1 section 6).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
#[cfg_attr(feature = "serde", serde(rename_all = "lowercase"))]
#[non_exhaustive]
pub enum RecordType {
    /// Describes the records that follow it.
    Warcinfo,
    /// A complete scheme-specific response.
    Response,
    /// A resource, without protocol information.
    Resource,
    /// A complete scheme-specific request.
    Request,
    /// Metadata about another record.
    Metadata,
    /// A revisit of content already archived.
    Revisit,
    /// An alternative version of another record's content.
    Conversion,
    /// A continuation segment of a segmented record.
    Continuation,
    /// A type this version does not define (or WARC-Type missing); the raw
    /// value is in the header.
    Other,
}

impl RecordType {
    /// Parses a WARC-Type value (ASCII case ignored).
    pub fn parse(value: &[u8]) -> RecordType {
        const TYPES: [(&[u8], RecordType); 8] = [
            (b"response", RecordType::Response),
            (b"request", RecordType::Request),
            (b"warcinfo", RecordType::Warcinfo),
            (b"resource", RecordType::Resource),
            (b"metadata", RecordType::Metadata),
            (b"revisit", RecordType::Revisit),
            (b"conversion", RecordType::Conversion),
            (b"continuation", RecordType::Continuation),
        ];
        TYPES
            .iter()
            .find(|(name, _)| name.eq_ignore_ascii_case(value))
            .map_or(RecordType::Other, |(_, t)| *t)
    }

    /// The value as written in WARC-Type (`other` for [`RecordType::Other`]).
    pub fn as_str(self) -> &'static str {
        match self {
            RecordType::Warcinfo => "warcinfo",
            RecordType::Response => "response",
            RecordType::Resource => "resource",
            RecordType::Request => "request",
            RecordType::Metadata => "metadata",
            RecordType::Revisit => "revisit",
            RecordType::Conversion => "conversion",
            RecordType::Continuation => "continuation",
            RecordType::Other => "other",
        }
    }
}

impl fmt::Display for RecordType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Why a record's block was cut short (WARC-Truncated, section 5.13).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum TruncatedReason {
    /// Exceeds the configured maximum length.
    Length,
    /// Exceeds the configured maximum time.
    Time,
    /// The network connection was dropped.
    Disconnect,
    /// Some other or unknown reason.
    Unspecified,
    /// A value the spec does not name (allowed: "other values may be defined").
    Other(String),
}

impl TruncatedReason {
    /// Parses a WARC-Truncated value.
    pub fn parse(value: &str) -> TruncatedReason {
        match value.trim() {
            "length" => TruncatedReason::Length,
            "time" => TruncatedReason::Time,
            "disconnect" => TruncatedReason::Disconnect,
            "unspecified" => TruncatedReason::Unspecified,
            other => TruncatedReason::Other(other.to_string()),
        }
    }

    /// The value as written.
    pub fn as_str(&self) -> &str {
        match self {
            TruncatedReason::Length => "length",
            TruncatedReason::Time => "time",
            TruncatedReason::Disconnect => "disconnect",
            TruncatedReason::Unspecified => "unspecified",
            TruncatedReason::Other(s) => s,
        }
    }
}

/// A record's header block: the version line and the named fields, with the
/// raw bytes kept and the three fields every reader needs parsed up front.
#[derive(PartialEq, Eq)]
pub struct WarcHeader {
    pub(crate) fields: Fields,
    pub(crate) version: Version,
    pub(crate) record_type: RecordType,
    pub(crate) content_length: Option<u64>,
}

// `clone_from` reuses the kept header's buffers (see `Fields`' `Clone`).
impl Clone for WarcHeader {
    fn clone(&self) -> WarcHeader {
        WarcHeader {
            fields: self.fields.clone(),
            version: self.version,
            record_type: self.record_type,
            content_length: self.content_length,
        }
    }

    fn clone_from(&mut self, source: &WarcHeader) {
        self.fields.clone_from(&source.fields);
        self.version = source.version;
        self.record_type = source.record_type;
        self.content_length = source.content_length;
    }
}

impl fmt::Debug for WarcHeader {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("WarcHeader")
            .field("version", &self.version)
            .field("fields", &self.fields)
            .finish()
    }
}

/// Strips the `<...>` that WARC 1.0 writers put around URIs.
pub(crate) fn strip_brackets(v: &str) -> &str {
    let t = v.trim();
    t.strip_prefix('<')
        .and_then(|s| s.strip_suffix('>'))
        .unwrap_or(t)
}

impl WarcHeader {
    /// A header from parsed fields. Content-Length and WARC-Type are read
    /// from them.
    pub fn from_fields(version: Version, fields: Fields) -> WarcHeader {
        let mut h = WarcHeader {
            fields,
            version,
            record_type: RecordType::Other,
            content_length: None,
        };
        h.refresh();
        h
    }

    /// Re-reads the eagerly parsed fields after the fields changed.
    pub(crate) fn refresh(&mut self) {
        // One pass over the names, lengths compared before bytes.
        let [typ, len] = self.fields.get_many([field::TYPE, field::CONTENT_LENGTH]);
        self.record_type = typ.map_or(RecordType::Other, |f| RecordType::parse(&f.value()));
        self.content_length = len.and_then(|f| parse_u64(&f.value()));
    }

    /// The version from the version line.
    pub fn version(&self) -> Version {
        self.version
    }

    /// The named fields (raw bytes, order and repeats kept).
    pub fn fields(&self) -> &Fields {
        &self.fields
    }

    /// Mutable access to the fields; Content-Length and WARC-Type are
    /// re-read when the returned guard is dropped.
    pub fn fields_mut(&mut self) -> FieldsMut<'_> {
        FieldsMut { header: self }
    }

    /// The whole header block as stored, version line to blank line.
    pub fn as_bytes(&self) -> &[u8] {
        self.fields.as_bytes()
    }

    /// WARC-Type, parsed. Unknown and missing types are [`RecordType::Other`].
    pub fn record_type(&self) -> RecordType {
        self.record_type
    }

    /// The WARC-Type value as written.
    pub fn record_type_str(&self) -> Option<Cow<'_, str>> {
        self.fields.value(field::TYPE)
    }

    /// Content-Length, when present and a valid non-negative integer.
    pub fn content_length(&self) -> Option<u64> {
        self.content_length
    }

    /// The unfolded value of any field, text (for extension fields too).
    pub fn get(&self, name: &str) -> Option<Cow<'_, str>> {
        self.fields.value(name)
    }

    /// Every value of a field that may repeat.
    pub fn get_all<'s>(&'s self, name: &'s str) -> impl Iterator<Item = Cow<'s, str>> + 's {
        self.fields.get_all(name).map(|f| f.value_str())
    }

    /// WARC-Record-ID as written (normally `<urn:uuid:...>`).
    pub fn record_id(&self) -> Option<Cow<'_, str>> {
        self.fields.value(field::RECORD_ID)
    }

    /// WARC-Date, parsed.
    pub fn date(&self) -> Option<Result<WarcDate, DateError>> {
        self.fields.value(field::DATE).map(|v| WarcDate::parse(&v))
    }

    /// Content-Type of the block.
    pub fn content_type(&self) -> Option<Cow<'_, str>> {
        self.fields.value(field::CONTENT_TYPE)
    }

    /// True when the block is an HTTP message (`application/http`), which has
    /// a payload after its header.
    pub fn is_http(&self) -> bool {
        const HTTP: &[u8] = b"application/http";
        let Some(f) = self.fields.get(field::CONTENT_TYPE) else {
            return false;
        };
        // The usual value starts with a visible ASCII byte: then its text
        // (UTF-8 or ISO-8859-1) has no leading white space and starts with
        // 16 ASCII characters exactly when its bytes do; compare the bytes
        // without making the text.
        let v = f.value();
        if v.first().is_some_and(|b| b.is_ascii_graphic()) {
            return v.get(..16).is_some_and(|p| p.eq_ignore_ascii_case(HTTP));
        }
        self.content_type().is_some_and(|ct| {
            // Bytes, not a str slice: byte 16 may fall inside a character.
            let ct = ct.trim_start().as_bytes();
            ct.get(..16)
                .is_some_and(|p| p.eq_ignore_ascii_case(b"application/http"))
        })
    }

    /// WARC-Target-URI, with the `<...>` of WARC 1.0 writers removed.
    pub fn target_uri(&self) -> Option<Cow<'_, str>> {
        self.uri_field(field::TARGET_URI)
    }

    fn uri_field(&self, name: &str) -> Option<Cow<'_, str>> {
        match self.fields.value(name)? {
            Cow::Borrowed(s) => Some(Cow::Borrowed(strip_brackets(s))),
            Cow::Owned(s) => Some(Cow::Owned(strip_brackets(&s).to_string())),
        }
    }

    /// Every WARC-Concurrent-To value.
    pub fn concurrent_to(&self) -> impl Iterator<Item = Cow<'_, str>> + '_ {
        self.get_all(field::CONCURRENT_TO)
    }

    /// WARC-Block-Digest as written.
    pub fn block_digest(&self) -> Option<Cow<'_, str>> {
        self.fields.value(field::BLOCK_DIGEST)
    }

    /// WARC-Payload-Digest as written.
    pub fn payload_digest(&self) -> Option<Cow<'_, str>> {
        self.fields.value(field::PAYLOAD_DIGEST)
    }

    /// WARC-Block-Digest, parsed (an unknown algorithm parses, with
    /// [`Digest::algorithm`](crate::digest::Digest::algorithm) `None`).
    pub fn parsed_block_digest(&self) -> Option<Result<Digest, DigestError>> {
        self.block_digest().map(|v| Digest::parse(v.trim()))
    }

    /// WARC-Payload-Digest, parsed.
    pub fn parsed_payload_digest(&self) -> Option<Result<Digest, DigestError>> {
        self.payload_digest().map(|v| Digest::parse(v.trim()))
    }

    /// WARC-IP-Address, parsed (IPv4 or IPv6).
    pub fn ip_address(&self) -> Option<Result<IpAddr, std::net::AddrParseError>> {
        self.fields
            .value(field::IP_ADDRESS)
            .map(|v| v.trim().parse::<IpAddr>())
    }

    /// WARC-Refers-To.
    pub fn refers_to(&self) -> Option<Cow<'_, str>> {
        self.fields.value(field::REFERS_TO)
    }

    /// WARC-Refers-To-Target-URI (1.1), brackets removed.
    pub fn refers_to_target_uri(&self) -> Option<Cow<'_, str>> {
        self.uri_field(field::REFERS_TO_TARGET_URI)
    }

    /// WARC-Refers-To-Date (1.1), parsed.
    pub fn refers_to_date(&self) -> Option<Result<WarcDate, DateError>> {
        self.fields
            .value(field::REFERS_TO_DATE)
            .map(|v| WarcDate::parse(&v))
    }

    /// WARC-Truncated, parsed.
    pub fn truncated(&self) -> Option<TruncatedReason> {
        self.fields
            .value(field::TRUNCATED)
            .map(|v| TruncatedReason::parse(&v))
    }

    /// WARC-Warcinfo-ID.
    pub fn warcinfo_id(&self) -> Option<Cow<'_, str>> {
        self.fields.value(field::WARCINFO_ID)
    }

    /// WARC-Filename (warcinfo records).
    pub fn filename(&self) -> Option<Cow<'_, str>> {
        self.fields.value_decoded(field::FILENAME)
    }

    /// WARC-Profile (revisit records), brackets removed.
    pub fn profile(&self) -> Option<Cow<'_, str>> {
        self.uri_field(field::PROFILE)
    }

    /// WARC-Identified-Payload-Type.
    pub fn identified_payload_type(&self) -> Option<Cow<'_, str>> {
        self.fields.value(field::IDENTIFIED_PAYLOAD_TYPE)
    }

    /// WARC-Segment-Number, parsed.
    pub fn segment_number(&self) -> Option<Option<u64>> {
        self.fields
            .value(field::SEGMENT_NUMBER)
            .map(|v| parse_u64(v.as_bytes()))
    }

    /// WARC-Segment-Origin-ID.
    pub fn segment_origin_id(&self) -> Option<Cow<'_, str>> {
        self.fields.value(field::SEGMENT_ORIGIN_ID)
    }

    /// WARC-Segment-Total-Length, parsed.
    pub fn segment_total_length(&self) -> Option<Option<u64>> {
        self.fields
            .value(field::SEGMENT_TOTAL_LENGTH)
            .map(|v| parse_u64(v.as_bytes()))
    }

    /// WARC-Protocol values (an IIPC extension: `http/1.1`, `h2`, `tls/1.3`...).
    pub fn protocols(&self) -> impl Iterator<Item = Cow<'_, str>> + '_ {
        self.get_all(field::PROTOCOL)
    }
}

/// Which bytes of a record's block are its payload (WARC 1.1 section 5.9).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
#[cfg_attr(feature = "serde", serde(rename_all = "kebab-case"))]
pub enum PayloadKind {
    /// No payload of its own: warcinfo, metadata, revisit (whose payload
    /// digest is the original's), continuation (whose payload is the
    /// reassembled record's), and unknown types.
    None,
    /// The whole block: resource and conversion records.
    Block,
    /// The entity body after the HTTP head, transfer coding removed:
    /// `application/http` request and response records.
    HttpBody,
}

impl WarcHeader {
    /// Which bytes are this record's payload, for WARC-Payload-Digest.
    pub fn payload_kind(&self) -> PayloadKind {
        match self.record_type() {
            RecordType::Response | RecordType::Request if self.is_http() => PayloadKind::HttpBody,
            RecordType::Response
            | RecordType::Request
            | RecordType::Resource
            | RecordType::Conversion => PayloadKind::Block,
            _ => PayloadKind::None,
        }
    }
}

/// Mutable access to a [`WarcHeader`]'s fields; see [`WarcHeader::fields_mut`].
pub struct FieldsMut<'a> {
    header: &'a mut WarcHeader,
}

impl std::ops::Deref for FieldsMut<'_> {
    type Target = Fields;
    fn deref(&self) -> &Fields {
        &self.header.fields
    }
}

impl std::ops::DerefMut for FieldsMut<'_> {
    fn deref_mut(&mut self) -> &mut Fields {
        &mut self.header.fields
    }
}

impl Drop for FieldsMut<'_> {
    fn drop(&mut self) {
        self.header.refresh();
    }
}

/// Parses a non-negative decimal integer (surrounding white space allowed).
pub(crate) fn parse_u64(v: &[u8]) -> Option<u64> {
    let v = v.trim_ascii();
    if v.is_empty() || v.len() > 20 || !v.iter().all(u8::is_ascii_digit) {
        return None;
    }
    std::str::from_utf8(v).ok()?.parse().ok()
}

impl Fields {
    /// The unfolded value of `name` with RFC 2047 encoded-words decoded.
    pub fn value_decoded(&self, name: &str) -> Option<Cow<'_, str>> {
        self.get(name).map(|f| f.value_decoded())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn header(block: &[u8]) -> WarcHeader {
        let nl = block.iter().position(|&b| b == b'\n').unwrap();
        let version = Version::parse_line(&block[..nl]).unwrap();
        let f = Fields::parse(block.to_vec(), nl + 1, false, 100, &mut Vec::new()).unwrap();
        WarcHeader::from_fields(version, f)
    }

    #[test]
    fn versions() {
        assert_eq!(Version::parse_line(b"WARC/1.1"), Some(Version::V1_1));
        assert_eq!(Version::parse_line(b"WARC/0.18 \r"), Some(Version::V0_18));
        assert_eq!(
            Version::parse_line(b"WARC/2.0"),
            Some(Version { major: 2, minor: 0 })
        );
        assert!(!Version { major: 2, minor: 0 }.is_known());
        assert_eq!(Version::parse_line(b"WARC/x.0"), None);
        assert_eq!(Version::parse_line(b"ARC/1.0"), None);
        assert_eq!(Version::V1_0.to_string(), "WARC/1.0");
    }

    #[test]
    fn typed_accessors() {
        let h = header(
            b"WARC/1.1\r\nWARC-Type: Revisit\r\nWARC-Target-URI: <http://example.com/>\r\n\
WARC-Date: 2020-01-02T03:04:05.5Z\r\nContent-Length:  12 \r\nWARC-IP-Address: ::1\r\n\
WARC-Concurrent-To: <urn:uuid:a>\r\nWARC-Concurrent-To: <urn:uuid:b>\r\n\
WARC-Truncated: time\r\nWARC-Profile: http://netpreserve.org/warc/1.1/revisit/server-not-modified\r\n\
WARC-Refers-To-Date: 2019-01-01T00:00:00Z\r\nWARC-Segment-Number: x\r\n\r\n",
        );
        assert_eq!(h.record_type(), RecordType::Revisit);
        assert_eq!(h.record_type_str().unwrap(), "Revisit");
        assert_eq!(h.target_uri().unwrap(), "http://example.com/");
        assert_eq!(h.content_length(), Some(12));
        assert_eq!(h.date().unwrap().unwrap().nanos, 500_000_000);
        assert_eq!(h.ip_address().unwrap().unwrap().to_string(), "::1");
        assert_eq!(h.concurrent_to().count(), 2);
        assert_eq!(h.truncated(), Some(TruncatedReason::Time));
        assert!(h.profile().unwrap().ends_with("server-not-modified"));
        assert_eq!(h.refers_to_date().unwrap().unwrap().year, 2019);
        assert_eq!(h.segment_number(), Some(None));
        assert!(h.block_digest().is_none());
        let h = header(b"WARC/1.1\r\nWARC-Block-Digest: SHA-1:3I42H3S6NNFQ2MSVX7XZKYAYSCX5QBYJ\r\nWARC-Payload-Digest: x\r\n\r\n");
        let d = h.parsed_block_digest().unwrap().unwrap();
        assert_eq!(d.algorithm(), Some(crate::digest::Algorithm::Sha1));
        assert!(h.parsed_payload_digest().unwrap().is_err());
        assert!(!h.is_http());
    }

    #[test]
    fn content_length_must_be_a_number() {
        for bad in ["-1", "1e3", "", "99999999999999999999999"] {
            let block = format!("WARC/1.0\r\nContent-Length: {bad}\r\n\r\n");
            assert_eq!(header(block.as_bytes()).content_length(), None, "{bad}");
        }
    }

    #[test]
    fn fields_mut_refreshes() {
        let mut h = header(b"WARC/1.1\r\nWARC-Type: resource\r\nContent-Length: 1\r\n\r\n");
        h.fields_mut().set("Content-Length", "7").unwrap();
        assert_eq!(h.content_length(), Some(7));
        h.fields_mut().set("WARC-Type", "metadata").unwrap();
        assert_eq!(h.record_type(), RecordType::Metadata);
        assert_eq!(
            h.as_bytes(),
            b"WARC/1.1\r\nWARC-Type: metadata\r\nContent-Length: 7\r\n\r\n"
        );
    }
}
