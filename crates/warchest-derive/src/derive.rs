//! The derivatives of one archive, on every core: records are read in
//! bounded batches ([`crate::source`]), derived in parallel (rayon), and
//! written in the input's order.

use std::io::{Read, Write};

use rayon::prelude::*;
use warchest::archive::Reader;
use warchest::codec::Decoder;
use warchest::recoveries::{PayloadFallbackAt, Recoveries};
use warchest::warc::{RecordType, Version, WarcHeader};
use warchest::write::{Body, NewRecord, Writer};

use crate::source::{Purpose, SourceRecord, read_batch_for};
use crate::table::{Columns, Row};

/// What a derivation did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Summary {
    /// Records read.
    pub records_in: u64,
    /// Records (or rows) written.
    pub records_out: u64,
    /// Payloads not decoded as their HTTP head says, which derived from
    /// what the lenient reader gave instead (bytes as stored, a body cut
    /// short, what decoded before an error; see
    /// [`PayloadFallback`](warchest::http::PayloadFallback)): each
    /// counted, per kind and file, the first 1000 kept with their offsets.
    pub payload_fallbacks: Recoveries<PayloadFallbackAt>,
    /// Texts extracted from a body longer than
    /// [`MAX_BODY`](crate::text::MAX_BODY), from its first `MAX_BODY`
    /// bytes (Common Crawl's WET cuts so too).
    pub texts_cut: u64,
    /// Texts whose body had bytes its charset does not decode, each
    /// replaced with U+FFFD.
    pub texts_replaced: u64,
}

impl Summary {
    /// Counts what extracting a text gave up: its body cut, bytes
    /// replaced.
    pub fn note_text(&mut self, cut: bool, replaced: bool) {
        self.texts_cut += u64::from(cut);
        self.texts_replaced += u64::from(replaced);
    }

    /// One sentence of the texts cut and with bytes replaced; `None` when
    /// there were none.
    pub fn texts_summary(&self) -> Option<String> {
        let mut parts = Vec::new();
        if self.texts_cut > 0 {
            parts.push(format!(
                "{} from the first {} MiB of a longer body",
                self.texts_cut,
                crate::text::MAX_BODY >> 20
            ));
        }
        if self.texts_replaced > 0 {
            parts.push(format!(
                "{} with bytes their charset does not decode (replaced with U+FFFD)",
                self.texts_replaced
            ));
        }
        (!parts.is_empty()).then(|| format!("texts: {}", parts.join(", ")))
    }

    /// Counts `rec`'s payload fallbacks, if any (it is in `file`).
    fn note_payload(&mut self, rec: &SourceRecord, file: &str) {
        if let Some(p) = rec.payload_fallback() {
            self.payload_fallbacks.add(file, p);
        }
    }

    /// Adds `other`'s counts to these, and its kept fallbacks while there
    /// is room.
    pub fn add(&mut self, other: Summary) {
        self.records_in += other.records_in;
        self.records_out += other.records_out;
        self.payload_fallbacks.append(other.payload_fallbacks);
        self.texts_cut += other.texts_cut;
        self.texts_replaced += other.texts_replaced;
    }
}

/// The software named in the derivatives' warcinfo records.
pub fn software() -> String {
    format!("warchest-derive/{}", env!("CARGO_PKG_VERSION"))
}

fn now_rfc1123() -> String {
    use time::format_description::well_known::Rfc2822;
    time::OffsetDateTime::now_utc()
        .format(&Rfc2822)
        .unwrap_or_default()
}

fn field_err(name: &str, e: impl std::fmt::Display) -> warchest::Error {
    warchest::Error::from(std::io::Error::new(
        std::io::ErrorKind::InvalidData,
        format!("{name}: {e}"),
    ))
}

/// The warcinfo record opening a WAT or WET file named `out_name`; for a
/// WET, the source's `robots`, `isPartOf`, `operator`, `description` and
/// `publisher` are copied from its warcinfo (`source_info`).
fn warcinfo<W: Write>(
    writer: &mut Writer<W>,
    out_name: &str,
    wet: bool,
    source_info: Option<&SourceRecord>,
) -> warchest::Result<()> {
    let mut block = format!(
        "Software-Info: {}\r\nExtracted-Date: {}\r\n",
        software(),
        now_rfc1123()
    );
    if wet && let Some(info) = source_info {
        let text = String::from_utf8_lossy(&info.payload);
        for line in text.lines() {
            if let Some((n, _)) = line.split_once(':')
                && ["robots", "isPartOf", "operator", "description", "publisher"]
                    .iter()
                    .any(|k| n.trim().eq_ignore_ascii_case(k))
            {
                block.push_str(line.trim_end());
                block.push_str("\r\n");
            }
        }
    }
    block.push_str(&format!(
        "hostname: {}\r\n",
        warchest::write::rotate::hostname()
    ));
    block.push_str("format: WARC File Format 1.0\r\n");
    block.push_str(
        "conformsTo: http://bibnum.bnf.fr/WARC/WARC_ISO_28500_version1_latestdraft.pdf\r\n",
    );
    let mut rec = NewRecord::with_version(RecordType::Warcinfo, Version::V1_0);
    rec.set("WARC-Filename", out_name)?
        .set("Content-Type", "application/warc-fields")?;
    writer.write(&mut rec, Body::Bytes(block.as_bytes()))?;
    Ok(())
}

/// The WAT's metadata record for `rec`.
fn wat_record(rec: &SourceRecord, filename: &str) -> warchest::Result<(NewRecord, Vec<u8>)> {
    let body = crate::wat::envelope(rec, filename).to_text().into_bytes();
    let mut fields = warchest::fields::Fields::with_start_line(b"WARC/1.0");
    let mut put =
        |name: &str, value: &str| fields.append(name, value).map_err(|e| field_err(name, e));
    put("WARC-Type", "metadata")?;
    // Common Crawl writes a warcinfo's file name as the target URI; a file
    // name is no URI (validators reject it), so that record has none here
    // (docs/derive.md).
    if let Some(uri) = rec.field("WARC-Target-URI") {
        put("WARC-Target-URI", uri)?;
    }
    // The time of extraction, as Common Crawl's WAT has it.
    put(
        "WARC-Date",
        &warchest::warc::WarcDate::now(warchest::warc::DatePrecision::Second).to_string(),
    )?;
    put("WARC-Record-ID", &warchest::write::new_record_id())?;
    if let Some(id) = rec.field("WARC-Record-ID") {
        put("WARC-Refers-To", id)?;
    }
    put("Content-Type", "application/json")?;
    Ok((
        NewRecord::from_header(WarcHeader::from_fields(Version::V1_0, fields)),
        body,
    ))
}

/// A derived record: its header and block.
/// A derived record, its body, and for a WET conversion whether its text
/// was cut and had bytes replaced.
type Derived = (NewRecord, Vec<u8>, (bool, bool));

/// Which WARC derivative.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WarcKind {
    /// Metadata records with the JSON envelope.
    Wat,
    /// Conversion records with the text.
    Wet,
}

/// Writes the WAT or WET of the archive `reader` reads (named `filename`
/// in the envelope's `Container`) to `writer`, after a warcinfo naming
/// the output `out_name` when `first` is true.
///
/// # Errors
/// Reading the archive or writing failed; records derived before are
/// written.
pub fn write_warc<R: Read, W: Write>(
    kind: WarcKind,
    reader: &mut Reader<Decoder<R>>,
    filename: &str,
    out_name: &str,
    first: bool,
    writer: &mut Writer<W>,
) -> warchest::Result<Summary> {
    let mut summary = Summary::default();
    let mut started = !first;
    // The WAT reports every record's digests; a WET needs only texts.
    let purpose = match kind {
        WarcKind::Wat => Purpose::Full,
        WarcKind::Wet => Purpose::Text,
    };
    loop {
        let (batch, err) = read_batch_for(reader, purpose);
        if !started {
            started = true;
            let info = batch
                .first()
                .filter(|r| r.record_type == RecordType::Warcinfo);
            warcinfo(writer, out_name, kind == WarcKind::Wet, info)?;
        }
        if batch.is_empty() && err.is_none() {
            break;
        }
        summary.records_in += batch.len() as u64;
        for rec in &batch {
            summary.note_payload(rec, filename);
        }
        let derived: Vec<warchest::Result<Option<Derived>>> = batch
            .par_iter()
            .map(|rec| match kind {
                WarcKind::Wat => match rec.record_type {
                    RecordType::Request
                    | RecordType::Response
                    | RecordType::Resource
                    | RecordType::Metadata
                    | RecordType::Warcinfo
                    | RecordType::Revisit => {
                        wat_record(rec, filename).map(|(r, b)| Some((r, b, (false, false))))
                    }
                    _ => Ok(None),
                },
                WarcKind::Wet => crate::wet::conversion(rec).map(|o| {
                    o.map(|(r, body, doc)| {
                        (r, body.into_bytes(), (doc.truncated, doc.charset_errors))
                    })
                }),
            })
            .collect();
        for d in derived {
            if let Some((mut rec, body, (cut, replaced))) = d? {
                writer.write(&mut rec, Body::Bytes(&body))?;
                summary.records_out += 1;
                summary.note_text(cut, replaced);
            }
        }
        if let Some(e) = err {
            return Err(e);
        }
    }
    Ok(summary)
}

/// The text rows of the archive `reader` reads, named `filename`: one per
/// response, resource or conversion record with HTML or plain text, given
/// to `sink` batch by batch in the input's order.
///
/// # Errors
/// Reading the archive failed, or `sink` did; rows before are given.
pub fn text_rows<R: Read, E: From<warchest::Error>>(
    reader: &mut Reader<Decoder<R>>,
    filename: &str,
    sink: impl FnMut(Vec<Row>) -> Result<(), E>,
) -> Result<Summary, E> {
    text_rows_with(reader, filename, Columns::ALL, sink)
}

/// [`text_rows`], computing only what `columns` needs (the rest of each
/// row is empty).
///
/// # Errors
/// Reading the archive failed, or `sink` did; rows before are given.
pub fn text_rows_with<R: Read, E: From<warchest::Error>>(
    reader: &mut Reader<Decoder<R>>,
    filename: &str,
    columns: Columns,
    mut sink: impl FnMut(Vec<Row>) -> Result<(), E>,
) -> Result<Summary, E> {
    let mut summary = Summary::default();
    loop {
        let (batch, err) = read_batch_for(reader, Purpose::Text);
        if batch.is_empty() && err.is_none() {
            break;
        }
        summary.records_in += batch.len() as u64;
        for rec in &batch {
            summary.note_payload(rec, filename);
        }
        let noted: Vec<(Row, bool, bool)> = batch
            .par_iter()
            .filter_map(|rec| Row::of_columns_noted(rec, filename, columns))
            .collect();
        let rows: Vec<Row> = noted
            .into_iter()
            .map(|(row, cut, replaced)| {
                summary.note_text(cut, replaced);
                row
            })
            .collect();
        summary.records_out += rows.len() as u64;
        if !rows.is_empty() {
            sink(rows)?;
        }
        if let Some(e) = err {
            return Err(e.into());
        }
    }
    Ok(summary)
}

/// A row as a JSON line (keys in column order). Written straight into
/// one string: the page's texts are not copied into a [`crate::json::Json`] first.
pub fn row_json(row: &Row) -> String {
    row_json_of(row, Columns::ALL)
}

/// A row as a JSON line of the columns asked for, in the table's order.
pub fn row_json_of(row: &Row, columns: Columns) -> String {
    use crate::json::string;
    let mut out = String::with_capacity(row.text.len() + row.main_text.len() + 512);
    for k in columns.names() {
        out.push(if out.is_empty() { '{' } else { ',' });
        string(&mut out, k);
        out.push(':');
        match k {
            "warc_offset" => out.push_str(&row.warc_offset.to_string()),
            "language_score" => out.push_str(&format!("{:.3}", row.language_score)),
            _ => string(
                &mut out,
                match k {
                    "url" => &row.url,
                    "date" => &row.date,
                    "record_id" => &row.record_id,
                    "warc_filename" => &row.warc_filename,
                    "content_type" => row.content_type.as_deref().unwrap_or_default(),
                    "language" => row.language.as_deref().unwrap_or_default(),
                    "languages" => &row.languages,
                    "title" => row.title.as_deref().unwrap_or_default(),
                    "text" => &row.text,
                    _ => &row.main_text,
                },
            ),
        }
    }
    out.push('}');
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn row_json_keys_in_column_order() {
        let row = Row {
            url: "http://a.example/\"x\"".into(),
            date: "2024-01-02T03:04:05Z".into(),
            record_id: "<urn:uuid:1>".into(),
            warc_filename: "a.warc.gz".into(),
            warc_offset: 1234,
            content_type: Some("text/html".into()),
            language: None,
            language_score: 0.5,
            languages: "eng,fra".into(),
            title: Some("T\u{1}".into()),
            text: "T\nline\ttwo é".into(),
            main_text: String::new(),
        };
        let line = row_json(&row);
        let v: serde_json::Value = serde_json::from_str(&line).unwrap();
        let at = |k: &str| line.find(&format!("\"{k}\":")).unwrap();
        // The JSON keys are the table's columns, in order.
        let schema = crate::table::schema();
        let keys: Vec<&str> = schema.fields().iter().map(|f| f.name().as_str()).collect();
        assert!(keys.windows(2).all(|w| at(w[0]) < at(w[1])), "{line}");
        assert_eq!(v.as_object().unwrap().len(), keys.len());
        assert!(line.starts_with(r#"{"url":"http://a.example/\"x\"","date":"#));
        assert!(line.contains(r#""warc_offset":1234,"#));
        assert!(line.contains(r#""language":"","language_score":0.500,"#));
        assert_eq!(v["title"], "T\u{1}");
        assert_eq!(v["text"], "T\nline\ttwo é");
        // A projection: only its keys, in the table's order.
        let cols = Columns::parse("text, url,warc_offset").unwrap();
        assert_eq!(
            row_json_of(&row, cols),
            r#"{"url":"http://a.example/\"x\"","warc_offset":1234,"text":"T\nline\ttwo é"}"#
        );
        assert_eq!(crate::table::schema_of(cols).fields().len(), 3);
        let batch = crate::table::to_batch_of(std::slice::from_ref(&row), cols).unwrap();
        assert_eq!((batch.num_columns(), batch.num_rows()), (3, 1));
        assert!(
            Columns::parse("url,body")
                .unwrap_err()
                .contains("main_text")
        );
        assert!(Columns::parse(" , ").is_err());
        assert_eq!(
            Columns::parse(&crate::table::COLUMNS.join(",")),
            Ok(Columns::ALL)
        );
    }
}
