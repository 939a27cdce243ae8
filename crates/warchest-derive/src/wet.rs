//! WET: one `conversion` record per HTML or plain-text response, holding
//! its text in Common Crawl's layout, headers in Common Crawl's order.

use sha1::{Digest as _, Sha1};
use warchest::digest::{Algorithm, Digest};
use warchest::fields::Fields;
use warchest::warc::{RecordType, Version, WarcHeader};
use warchest::write::NewRecord;

use crate::source::SourceRecord;
use crate::text::{self, Document};

/// The conversion record's header and block for `rec`, or `None` when it
/// gets none: only responses (not revisits) whose payload is HTML or plain
/// text and gives some text, as in Common Crawl's WET files.
///
/// # Errors
/// A source field that cannot be written (a line break in a value).
pub fn conversion(rec: &SourceRecord) -> warchest::Result<Option<(NewRecord, String, Document)>> {
    if rec.record_type != RecordType::Response || rec.http.as_ref().is_some_and(|h| h.is_request())
    {
        return Ok(None);
    }
    let content_type = rec.payload_content_type();
    if text::kind_of(&rec.payload, content_type.as_deref()).is_none() {
        return Ok(None);
    }
    let doc = text::extract(&rec.payload, content_type.as_deref());
    if doc.text.is_empty() {
        return Ok(None);
    }
    let body = doc.text.clone();
    let digest = Digest::new(Algorithm::Sha1, &Sha1::digest(body.as_bytes()))
        .as_str()
        .to_owned();
    // WARC/1.0 as Common Crawl writes; a capture date with a fraction of
    // a second (WARC 1.1) needs WARC/1.1 to be valid.
    let date = rec.field("WARC-Date");
    let version = if date.is_some_and(|d| d.contains('.')) {
        Version::V1_1
    } else {
        Version::V1_0
    };
    let mut fields = Fields::with_start_line(version.to_string().as_bytes());
    let put = |fields: &mut Fields, name: &str, value: &str| {
        fields.append(name, value).map_err(|e| {
            warchest::Error::from(std::io::Error::new(
                std::io::ErrorKind::InvalidData,
                format!("{name}: {e}"),
            ))
        })
    };
    put(&mut fields, "WARC-Type", "conversion")?;
    if let Some(uri) = rec.field("WARC-Target-URI") {
        put(&mut fields, "WARC-Target-URI", uri)?;
    }
    // The capture's date, as Common Crawl's WET has it.
    if let Some(date) = date {
        put(&mut fields, "WARC-Date", date)?;
    }
    put(
        &mut fields,
        "WARC-Record-ID",
        &warchest::write::new_record_id(),
    )?;
    if let Some(id) = rec.field("WARC-Record-ID") {
        put(&mut fields, "WARC-Refers-To", id)?;
    }
    put(&mut fields, "WARC-Block-Digest", &digest)?;
    if !doc.language.is_empty() {
        put(
            &mut fields,
            "WARC-Identified-Content-Language",
            &crate::lang::header_value(&doc.language),
        )?;
    }
    put(&mut fields, "Content-Type", "text/plain")?;
    Ok(Some((
        NewRecord::from_header(WarcHeader::from_fields(version, fields)),
        body,
        doc,
    )))
}
