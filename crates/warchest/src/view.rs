//! What ARC and Web InfoMall records look like as WARC: the pieces both
//! mappings share (record ids, URIs, addresses, the header builder). The
//! mappings themselves live in [`crate::arc`] and [`crate::infomall`];
//! docs/conversion.md is the table.

use std::borrow::Cow;
use std::net::IpAddr;

use crate::fields::Fields;
use crate::uuid::Uuid;
use crate::warc::{ReaderOptions, Version, WarcHeader, field};

/// Content-Type of a block holding an HTTP response.
pub(crate) const HTTP_RESPONSE: &str = "application/http; msgtype=response";

/// The namespace of the name-based (v5) record ids of converted records.
fn namespace() -> Uuid {
    Uuid::new_v5(&Uuid::NAMESPACE_URL, b"urn:warchest:converted-record")
}

/// A deterministic `<urn:uuid:...>` for a record made from the source
/// record at `offset` (stored) and `in_member` (decompressed, within its
/// member) of the file named `file`, in the `role` it plays (`""` for the
/// capture itself, `"metadata"`, `"warcinfo"`). Converting the same file
/// twice gives the same ids; two records of one file never share one.
pub fn record_id(file: &str, offset: u64, in_member: u64, role: &str) -> String {
    let name = format!("{file}\n{offset}\n{in_member}\n{role}");
    format!("<urn:uuid:{}>", Uuid::new_v5(&namespace(), name.as_bytes()))
}

/// The position that goes into a record id beside its offset: its place
/// in its member, except in a plain file read from an offset (a byte range,
/// `extract --offset`), whose first member the decoder counts from there:
/// there it is the place in the file, as a whole-file read has it.
pub(crate) fn id_position(
    codec: crate::codec::Codec,
    offset: u64,
    in_member: u64,
    member_offset: u64,
    opts: &ReaderOptions,
) -> u64 {
    if codec == crate::codec::Codec::None && member_offset == opts.decoder.start_offset {
        offset
    } else {
        in_member
    }
}

/// The name that goes into record ids: the file's base name, so that the
/// same file gives the same ids wherever it lies.
pub(crate) fn file_label(opts: &ReaderOptions) -> String {
    opts.file
        .as_ref()
        .and_then(|p| p.file_name())
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default()
}

/// A URI fit for WARC-Target-URI: white space and control bytes inside it
/// are percent-encoded (warcio does the same for spaces), surrounding white
/// space dropped. True when the value had to change.
pub(crate) fn target_uri(raw: &[u8]) -> (Cow<'_, [u8]>, bool) {
    let t = raw.trim_ascii();
    let bad = |b: u8| b <= b' ' || b == 0x7f;
    if !t.iter().any(|&b| bad(b)) {
        return (Cow::Borrowed(t), t.len() != raw.len());
    }
    let mut v = Vec::with_capacity(t.len() + 16);
    for &b in t {
        if bad(b) {
            v.extend_from_slice(format!("%{b:02X}").as_bytes());
        } else {
            v.push(b);
        }
    }
    (Cow::Owned(v), true)
}

/// The address in `raw`, when it is one and says something: `0.0.0.0` and
/// `::` mean "unknown" in ARC files and are left out.
pub(crate) fn ip_address(raw: &[u8]) -> Option<IpAddr> {
    let s = std::str::from_utf8(raw.trim_ascii()).ok()?;
    let ip: IpAddr = s.parse().ok()?;
    (!ip.is_unspecified()).then_some(ip)
}

/// True when a block starting with `prefix` is an HTTP response.
pub(crate) fn is_http_response(prefix: &[u8]) -> bool {
    prefix.len() >= 5 && prefix[..5].eq_ignore_ascii_case(b"HTTP/")
}

/// Builds a WARC/1.1 header field by field.
pub(crate) struct ViewBuilder {
    fields: Fields,
}

impl ViewBuilder {
    pub(crate) fn new(record_type: &str, record_id: &str) -> Self {
        let mut b = ViewBuilder {
            fields: Fields::with_start_line(b"WARC/1.1"),
        };
        b.set(field::TYPE, record_type.as_bytes());
        b.set(field::RECORD_ID, record_id.as_bytes());
        b
    }

    /// Adds a field; a value with a line break (which no caller passes)
    /// has it replaced by a space rather than failing the record.
    pub(crate) fn set(&mut self, name: &str, value: &[u8]) {
        if self.fields.append(name, value).is_err() {
            let clean: Vec<u8> = value
                .iter()
                .map(|&b| if b == b'\r' || b == b'\n' { b' ' } else { b })
                .collect();
            let _ = self.fields.append(name, clean);
        }
    }

    pub(crate) fn finish(self) -> WarcHeader {
        WarcHeader::from_fields(Version::V1_1, self.fields)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_stable_and_distinct() {
        let a = record_id("x.arc", 10, 0, "");
        assert_eq!(a, record_id("x.arc", 10, 0, ""));
        assert_ne!(a, record_id("x.arc", 10, 0, "metadata"));
        assert_ne!(a, record_id("x.arc", 10, 5, ""));
        assert_ne!(a, record_id("y.arc", 10, 0, ""));
        assert!(a.starts_with("<urn:uuid:") && a.ends_with('>'));
        // Version 5 (name-based, SHA-1).
        assert_eq!(&a[24..25], "5", "{a}");
    }

    /// The ids of converted records never change: these were computed by
    /// the `uuid` crate (1.29) before warchest made its own UUIDs, and agree
    /// with Python's `uuid.uuid5`.
    #[test]
    fn ids_are_the_ones_made_before() {
        assert_eq!(
            namespace().to_string(),
            "9479c4b7-e9f7-5d00-9f34-c67c56837e8c"
        );
        assert_eq!(
            record_id("example.arc.gz", 1234, 0, ""),
            "<urn:uuid:65d6d06e-ba5c-59db-937a-77f5e08e0bb8>"
        );
        assert_eq!(
            record_id("IA-2006.arc", 0, 567, "metadata"),
            "<urn:uuid:73689996-6cc4-5eaa-969d-20768a803b2f>"
        );
    }

    #[test]
    fn uris_and_addresses() {
        assert_eq!(
            target_uri(b"http://a/b c").0.as_ref(),
            b"http://a/b%20c".as_slice()
        );
        assert!(!target_uri(b"http://a/").1);
        assert_eq!(ip_address(b"10.0.0.1"), "10.0.0.1".parse().ok());
        assert_eq!(ip_address(b"0.0.0.0"), None);
        assert_eq!(ip_address(b"unknown"), None);
        assert_eq!(ip_address(b"-"), None);
        assert!(is_http_response(b"HTTP/1.1 200"));
        assert!(!is_http_response(b"HTTP"));
    }
}
