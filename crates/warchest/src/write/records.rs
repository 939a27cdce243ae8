//! New records for the writing situations of WARC 1.1 section 6 and the
//! use cases of ISO 28500 Annex D: the warcinfo record that opens a file,
//! metadata and conversion records that refer to the record they derive
//! from, resources for local files, and `application/warc-fields` blocks.

use crate::error::{Error, ErrorKind, Result};
use crate::warc::{RecordType, Version, WarcHeader, field};

use super::NewRecord;

/// The media type of a block of named fields (section 8.3).
pub const WARC_FIELDS: &str = "application/warc-fields";

/// `conformsTo` of warcinfo records written as WARC 1.1.
pub const CONFORMS_TO_1_1: &str =
    "http://iipc.github.io/warc-specifications/specifications/warc-format/warc-1.1/";
/// `conformsTo` of warcinfo records written as WARC 1.0.
pub const CONFORMS_TO_1_0: &str =
    "http://bibnum.bnf.fr/WARC/WARC_ISO_28500_version1_latestdraft.pdf";

/// An `application/warc-fields` block (section 8.3): `name: value` lines
/// ending in CRLF, in the order given.
///
/// # Errors
/// A name that is not a token, or a value with a line break.
pub fn warc_fields<'a>(fields: impl IntoIterator<Item = (&'a str, &'a str)>) -> Result<Vec<u8>> {
    let mut out = Vec::new();
    for (name, value) in fields {
        if name.is_empty() || !name.bytes().all(crate::fields::is_token_char) {
            return Err(Error::new(ErrorKind::Field {
                name: name.to_string(),
                message: "not a field name (token)".into(),
            }));
        }
        if value.bytes().any(|b| b == b'\r' || b == b'\n') {
            return Err(Error::new(ErrorKind::Field {
                name: name.to_string(),
                message: "value holds a line break".into(),
            }));
        }
        out.extend_from_slice(name.as_bytes());
        out.extend_from_slice(b": ");
        out.extend_from_slice(value.as_bytes());
        out.extend_from_slice(b"\r\n");
    }
    Ok(out)
}

/// A warcinfo record (section 6.2) and its `application/warc-fields` block.
///
/// `fields` are the caller's (operator, isPartOf, description, robots,
/// http-header-user-agent, ...); `software`, `format` and `conformsTo` are
/// added when missing. `filename` becomes WARC-Filename (section 5.15).
///
/// # Errors
/// As [`warc_fields`], or a file name with a line break.
pub fn warcinfo(
    version: Version,
    filename: Option<&str>,
    fields: &[(String, String)],
) -> Result<(NewRecord, Vec<u8>)> {
    let mut rec = NewRecord::with_version(RecordType::Warcinfo, version);
    if let Some(f) = filename {
        rec.set(field::FILENAME, f)?;
    }
    rec.set(field::CONTENT_TYPE, WARC_FIELDS)?;
    let has = |n: &str| fields.iter().any(|(k, _)| k.eq_ignore_ascii_case(n));
    let software = format!("warchest/{}", env!("CARGO_PKG_VERSION"));
    let format = if version >= Version::V1_1 {
        "WARC File Format 1.1"
    } else {
        "WARC File Format 1.0"
    };
    let conforms = if version >= Version::V1_1 {
        CONFORMS_TO_1_1
    } else {
        CONFORMS_TO_1_0
    };
    let mut all: Vec<(&str, &str)> = Vec::new();
    if !has("software") {
        all.push(("software", &software));
    }
    all.extend(fields.iter().map(|(k, v)| (k.as_str(), v.as_str())));
    if !has("format") {
        all.push(("format", format));
    }
    if !has("conformsTo") {
        all.push(("conformsTo", conforms));
    }
    let block = warc_fields(all)?;
    Ok((rec, block))
}

/// Copies the fields that tie a derived record to its source: WARC-Refers-To
/// (the source's record id) and WARC-Target-URI (the source's, when it has
/// one).
fn refer_to(rec: &mut NewRecord, source: &WarcHeader) -> Result<()> {
    let id = source.record_id().ok_or_else(|| {
        Error::new(ErrorKind::Usage(
            "the source record has no WARC-Record-ID to refer to".into(),
        ))
    })?;
    rec.set(field::REFERS_TO, id.trim())?;
    if let Some(uri) = source.target_uri() {
        rec.set(field::TARGET_URI, uri.as_ref())?;
    }
    Ok(())
}

/// A metadata record about `source` (section 6.6; Annex D use case four:
/// a format validator's report), with WARC-Refers-To naming it. The block's
/// Content-Type is the caller's (`application/warc-fields` for named
/// fields).
///
/// # Errors
/// The source has no record id, or a value with a line break.
pub fn metadata_about(source: &WarcHeader, content_type: &str) -> Result<NewRecord> {
    let mut rec = NewRecord::with_version(RecordType::Metadata, source.version());
    refer_to(&mut rec, source)?;
    rec.set(field::CONTENT_TYPE, content_type)?;
    Ok(rec)
}

/// A conversion record of `source`'s content (section 6.8; Annex D use
/// case five: a format migration): WARC-Refers-To names the source, the
/// target URI is the source's, the block is the converted content whose
/// media type is `content_type`.
///
/// # Errors
/// As [`metadata_about`].
pub fn conversion_of(source: &WarcHeader, content_type: &str) -> Result<NewRecord> {
    let mut rec = NewRecord::with_version(RecordType::Conversion, source.version());
    refer_to(&mut rec, source)?;
    rec.set(field::CONTENT_TYPE, content_type)?;
    Ok(rec)
}

/// A resource record (section 6.4) for `uri`, its content of `content_type`.
///
/// # Errors
/// A value with a line break.
pub fn resource(uri: &str, content_type: &str, version: Version) -> Result<NewRecord> {
    let mut rec = NewRecord::with_version(RecordType::Resource, version);
    rec.set(field::TARGET_URI, uri)?;
    rec.set(field::CONTENT_TYPE, content_type)?;
    Ok(rec)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn warcinfo_like_annex_c1() {
        let fields = vec![
            (
                "hostname".to_string(),
                "crawling017.archive.org".to_string(),
            ),
            ("isPartOf".to_string(), "testcrawl-20050708".to_string()),
            ("operator".to_string(), "IA_Admin".to_string()),
        ];
        let (rec, block) = warcinfo(Version::V1_0, Some("a.warc.gz"), &fields).unwrap();
        let h = rec.header();
        assert_eq!(h.record_type(), RecordType::Warcinfo);
        assert_eq!(h.filename().unwrap(), "a.warc.gz");
        assert_eq!(h.content_type().unwrap(), WARC_FIELDS);
        let text = String::from_utf8(block.clone()).unwrap();
        assert!(text.starts_with("software: warchest/"), "{text}");
        assert!(
            text.contains("\r\nisPartOf: testcrawl-20050708\r\n"),
            "{text}"
        );
        assert!(text.contains("format: WARC File Format 1.0\r\n"), "{text}");
        assert!(text.ends_with(&format!("conformsTo: {CONFORMS_TO_1_0}\r\n")));
        // The block parses back as warc-fields.
        let (f, issues) = crate::fields::Fields::parse_warc_fields(&block).unwrap();
        assert!(issues.is_empty());
        assert_eq!(f.value("operator").unwrap(), "IA_Admin");
        assert!(warc_fields([("bad name", "x")]).is_err());
        assert!(warc_fields([("a", "x\r\ny: z")]).is_err());
    }

    #[test]
    fn derived_records_refer_to_their_source() {
        let src = resource("http://example.com/a.pdf", "application/pdf", Version::V1_1)
            .unwrap()
            .into_header();
        let c = conversion_of(&src, "application/pdf; version=2").unwrap();
        assert_eq!(c.header().record_type(), RecordType::Conversion);
        assert_eq!(
            c.header().refers_to().unwrap(),
            src.record_id().unwrap().as_ref()
        );
        assert_eq!(c.header().target_uri().unwrap(), "http://example.com/a.pdf");
        let m = metadata_about(c.header(), WARC_FIELDS).unwrap();
        assert_eq!(m.header().refers_to().unwrap(), c.record_id());
    }
}
