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

/// The text table's columns, in order.
pub const COLUMNS: [&str; 12] = [
    "url",
    "date",
    "record_id",
    "warc_filename",
    "warc_offset",
    "content_type",
    "language",
    "language_score",
    "languages",
    "title",
    "text",
    "main_text",
];

/// The columns of the text table a caller asks for, as a Parquet reader
/// projects them: only those are computed and written (`text` alone skips
/// the main content and the languages, the costliest parts).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Columns(u16);

impl Columns {
    /// Every column.
    pub const ALL: Columns = Columns((1 << COLUMNS.len()) - 1);

    /// Columns named in a comma-separated list (`url,text`), kept in the
    /// table's order whatever the list's.
    ///
    /// # Errors
    /// An unknown name, or no name: the message lists the columns.
    pub fn parse(list: &str) -> Result<Columns, String> {
        let mut bits = 0u16;
        for name in list.split(',').map(str::trim).filter(|n| !n.is_empty()) {
            match COLUMNS.iter().position(|c| *c == name) {
                Some(i) => bits |= 1 << i,
                None => {
                    return Err(format!(
                        "unknown column {name:?} (columns: {})",
                        COLUMNS.join(",")
                    ));
                }
            }
        }
        if bits == 0 {
            return Err(format!("no column named (columns: {})", COLUMNS.join(",")));
        }
        Ok(Columns(bits))
    }

    /// Whether the column `name` is asked for.
    pub fn contains(self, name: &str) -> bool {
        COLUMNS
            .iter()
            .position(|c| *c == name)
            .is_some_and(|i| self.0 & (1 << i) != 0)
    }

    /// The names asked for, in the table's order.
    pub fn names(self) -> impl Iterator<Item = &'static str> {
        COLUMNS
            .iter()
            .enumerate()
            .filter(move |(i, _)| self.0 & (1 << i) != 0)
            .map(|(_, c)| *c)
    }

    /// What of each page must be computed for these columns.
    pub fn parts(self) -> crate::text::Parts {
        crate::text::Parts {
            text: self.contains("text"),
            main_text: self.contains("main_text"),
            language: ["language", "language_score", "languages"]
                .iter()
                .any(|c| self.contains(c)),
        }
    }
}

impl Default for Columns {
    fn default() -> Self {
        Columns::ALL
    }
}

impl Row {
    /// The row of `rec`: responses, resources and conversions whose
    /// payload is HTML or plain text; `None` for other records.
    pub fn of(rec: &SourceRecord, filename: &str) -> Option<Row> {
        Row::of_columns(rec, filename, Columns::ALL)
    }

    /// [`Row::of`], computing only what `columns` needs (the rest of the
    /// row is empty).
    pub fn of_columns(rec: &SourceRecord, filename: &str, columns: Columns) -> Option<Row> {
        Row::of_columns_noted(rec, filename, columns).map(|(row, _, _)| row)
    }

    /// [`Row::of_columns`], with whether its text came from a body cut at
    /// [`MAX_BODY`](crate::text::MAX_BODY) and whether bytes its charset
    /// does not decode were replaced.
    pub fn of_columns_noted(
        rec: &SourceRecord,
        filename: &str,
        columns: Columns,
    ) -> Option<(Row, bool, bool)> {
        if !matches!(
            rec.record_type,
            RecordType::Response | RecordType::Resource | RecordType::Conversion
        ) || rec.http.as_ref().is_some_and(|h| h.is_request())
        {
            return None;
        }
        let content_type = rec.payload_content_type();
        crate::text::kind_of(&rec.payload, content_type.as_deref())?;
        let doc =
            crate::text::extract_parts(&rec.payload, content_type.as_deref(), columns.parts());
        let field = |n: &str| rec.field(n).unwrap_or_default().to_string();
        let row = Row {
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
        };
        Some((row, doc.truncated, doc.charset_errors))
    }
}

/// The schema of the text table.
pub fn schema() -> SchemaRef {
    schema_of(Columns::ALL)
}

/// The schema of the columns asked for.
pub fn schema_of(columns: Columns) -> SchemaRef {
    Arc::new(Schema::new(
        columns
            .names()
            .map(|n| match n {
                "warc_offset" => Field::new(n, DataType::UInt64, false),
                "language_score" => Field::new(n, DataType::Float32, false),
                "content_type" | "language" | "title" => Field::new(n, DataType::Utf8, true),
                _ => Field::new(n, DataType::Utf8, false),
            })
            .collect::<Vec<_>>(),
    ))
}

/// Rows as one Arrow record batch.
///
/// # Errors
/// Arrow refused the columns (it cannot for these builders).
pub fn to_batch(rows: &[Row]) -> Result<RecordBatch, arrow_schema::ArrowError> {
    to_batch_of(rows, Columns::ALL)
}

/// Rows as one Arrow record batch of the columns asked for.
///
/// # Errors
/// Arrow refused the columns (it cannot for these builders).
pub fn to_batch_of(
    rows: &[Row],
    columns: Columns,
) -> Result<RecordBatch, arrow_schema::ArrowError> {
    let strings = |get: &dyn Fn(&Row) -> Option<&str>| -> ArrayRef {
        let mut b = StringBuilder::new();
        for r in rows {
            b.append_option(get(r));
        }
        Arc::new(b.finish())
    };
    let arrays: Vec<ArrayRef> = columns
        .names()
        .map(|n| match n {
            "warc_offset" => {
                let mut b = UInt64Builder::with_capacity(rows.len());
                rows.iter().for_each(|r| b.append_value(r.warc_offset));
                Arc::new(b.finish()) as ArrayRef
            }
            "language_score" => {
                let mut b = Float32Builder::with_capacity(rows.len());
                rows.iter().for_each(|r| b.append_value(r.language_score));
                Arc::new(b.finish())
            }
            "url" => strings(&|r| Some(&r.url)),
            "date" => strings(&|r| Some(&r.date)),
            "record_id" => strings(&|r| Some(&r.record_id)),
            "warc_filename" => strings(&|r| Some(&r.warc_filename)),
            "content_type" => strings(&|r| r.content_type.as_deref()),
            "language" => strings(&|r| r.language.as_deref()),
            "languages" => strings(&|r| Some(&r.languages)),
            "title" => strings(&|r| r.title.as_deref()),
            "text" => strings(&|r| Some(&r.text)),
            _ => strings(&|r| Some(&r.main_text)),
        })
        .collect();
    RecordBatch::try_new(schema_of(columns), arrays)
}

/// A Parquet file of text rows (zstd), written batch by batch.
pub struct ParquetWriter<W: Write + Send> {
    inner: parquet::arrow::ArrowWriter<W>,
    columns: Columns,
}

impl<W: Write + Send> ParquetWriter<W> {
    /// Starts a file.
    ///
    /// # Errors
    /// Writing the header failed.
    pub fn new(out: W) -> Result<Self, parquet::errors::ParquetError> {
        Self::with_columns(out, Columns::ALL)
    }

    /// Starts a file of the columns asked for.
    ///
    /// # Errors
    /// Writing the header failed.
    pub fn with_columns(out: W, columns: Columns) -> Result<Self, parquet::errors::ParquetError> {
        let props = parquet::file::properties::WriterProperties::builder()
            .set_compression(parquet::basic::Compression::ZSTD(Default::default()))
            // Row groups of about 10,000 pages keep memory bounded.
            .set_max_row_group_row_count(Some(10_000))
            .build();
        Ok(ParquetWriter {
            inner: parquet::arrow::ArrowWriter::try_new(out, schema_of(columns), Some(props))?,
            columns,
        })
    }

    /// Writes rows.
    ///
    /// # Errors
    /// Encoding or writing failed.
    pub fn write(&mut self, rows: &[Row]) -> Result<(), parquet::errors::ParquetError> {
        let batch = to_batch_of(rows, self.columns)?;
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
