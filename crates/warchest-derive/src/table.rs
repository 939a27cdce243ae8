//! Text rows: one per page with text, as Arrow record batches and Parquet.
//!
//! Columns: `url`, `date`, `record_id`, `warc_filename`, `warc_offset`,
//! `content_type`, `language` (ISO 639-3, the best), `language_score`,
//! `languages` (all, `eng,fra` as in WET), `title`, `text`, `main_text`.

use std::io::Write;
use std::sync::Arc;

use arrow_array::builder::{Float32Builder, StringBuilder, UInt64Builder};
use arrow_array::{ArrayRef, RecordBatch};
use arrow_schema::{DataType, Field, Schema, SchemaRef};
use warchest::warc::RecordType;

use crate::source::SourceRecord;

/// One page's text and where it came from.
#[derive(Debug, Clone, PartialEq)]
pub struct Row {
    /// `WARC-Target-URI`.
    pub url: String,
    /// `WARC-Date`.
    pub date: String,
    /// `WARC-Record-ID`.
    pub record_id: String,
    /// The archive's name as given.
    pub warc_filename: String,
    /// The record's stored offset.
    pub warc_offset: u64,
    /// The payload's Content-Type.
    pub content_type: Option<String>,
    /// The best language (ISO 639-3).
    pub language: Option<String>,
    /// Its score (0 when none).
    pub language_score: f32,
    /// All languages found, comma-separated.
    pub languages: String,
    /// The title.
    pub title: Option<String>,
    /// The whole text.
    pub text: String,
    /// The main content.
    pub main_text: String,
}

impl Row {
    /// The row of `rec`: responses, resources and conversions whose
    /// payload is HTML or plain text; `None` for other records.
    pub fn of(rec: &SourceRecord, filename: &str) -> Option<Row> {
        if !matches!(
            rec.record_type,
            RecordType::Response | RecordType::Resource | RecordType::Conversion
        ) || rec.http.as_ref().is_some_and(|h| h.is_request())
        {
            return None;
        }
        let content_type = rec.payload_content_type();
        crate::text::kind_of(&rec.payload, content_type.as_deref())?;
        let doc = crate::text::extract(&rec.payload, content_type.as_deref());
        let field = |n: &str| rec.field(n).unwrap_or_default().to_string();
        Some(Row {
            url: field("WARC-Target-URI"),
            date: field("WARC-Date"),
            record_id: field("WARC-Record-ID"),
            warc_filename: filename.to_string(),
            warc_offset: rec.offset,
            content_type,
            language: doc.language.first().map(|l| l.code.to_string()),
            language_score: doc.language.first().map_or(0.0, |l| l.score),
            languages: crate::lang::header_value(&doc.language),
            title: doc.title,
            text: doc.text,
            main_text: doc.main_text,
        })
    }
}

/// The schema of the text table.
pub fn schema() -> SchemaRef {
    let s = |n: &str, null: bool| Field::new(n, DataType::Utf8, null);
    Arc::new(Schema::new(vec![
        s("url", false),
        s("date", false),
        s("record_id", false),
        s("warc_filename", false),
        Field::new("warc_offset", DataType::UInt64, false),
        s("content_type", true),
        s("language", true),
        Field::new("language_score", DataType::Float32, false),
        s("languages", false),
        s("title", true),
        s("text", false),
        s("main_text", false),
    ]))
}

/// Rows as one Arrow record batch.
///
/// # Errors
/// Arrow refused the columns (it cannot for these builders).
pub fn to_batch(rows: &[Row]) -> Result<RecordBatch, arrow_schema::ArrowError> {
    let mut cols: Vec<StringBuilder> = (0..10).map(|_| StringBuilder::new()).collect();
    let mut offsets = UInt64Builder::new();
    let mut scores = Float32Builder::new();
    for r in rows {
        cols[0].append_value(&r.url);
        cols[1].append_value(&r.date);
        cols[2].append_value(&r.record_id);
        cols[3].append_value(&r.warc_filename);
        offsets.append_value(r.warc_offset);
        cols[4].append_option(r.content_type.as_deref());
        cols[5].append_option(r.language.as_deref());
        scores.append_value(r.language_score);
        cols[6].append_value(&r.languages);
        cols[7].append_option(r.title.as_deref());
        cols[8].append_value(&r.text);
        cols[9].append_value(&r.main_text);
    }
    let mut c = cols
        .into_iter()
        .map(|mut b| Arc::new(b.finish()) as ArrayRef);
    let mut next = || c.next().expect("ten string columns");
    let columns: Vec<ArrayRef> = vec![
        next(),
        next(),
        next(),
        next(),
        Arc::new(offsets.finish()),
        next(),
        next(),
        Arc::new(scores.finish()),
        next(),
        next(),
        next(),
        next(),
    ];
    RecordBatch::try_new(schema(), columns)
}

/// A Parquet file of text rows (zstd), written batch by batch.
pub struct ParquetWriter<W: Write + Send> {
    inner: parquet::arrow::ArrowWriter<W>,
}

impl<W: Write + Send> ParquetWriter<W> {
    /// Starts a file.
    ///
    /// # Errors
    /// Writing the header failed.
    pub fn new(out: W) -> Result<Self, parquet::errors::ParquetError> {
        let props = parquet::file::properties::WriterProperties::builder()
            .set_compression(parquet::basic::Compression::ZSTD(Default::default()))
            // Row groups of about 10,000 pages keep memory bounded.
            .set_max_row_group_row_count(Some(10_000))
            .build();
        Ok(ParquetWriter {
            inner: parquet::arrow::ArrowWriter::try_new(out, schema(), Some(props))?,
        })
    }

    /// Writes rows.
    ///
    /// # Errors
    /// Encoding or writing failed.
    pub fn write(&mut self, rows: &[Row]) -> Result<(), parquet::errors::ParquetError> {
        let batch = to_batch(rows)?;
        self.inner.write(&batch)?;
        // Flush row groups past 64 MiB buffered: bounded memory.
        if self.inner.in_progress_size() > 64 << 20 {
            self.inner.flush()?;
        }
        Ok(())
    }

    /// Writes the footer and gives the output back.
    ///
    /// # Errors
    /// Writing failed.
    pub fn finish(self) -> Result<W, parquet::errors::ParquetError> {
        self.inner.into_inner()
    }
}
