//! Parquet indexes with the columns of Common Crawl's cc-index table (the
//! flat schema, in its order; `crawl` and `subset` are Hive partition
//! directories there, not columns, and are left out here too).
//!
//! Filled from a WARC: every URL column, `fetch_time`, `fetch_status`,
//! `fetch_redirect` (HTTP Location of 3xx responses), `content_digest`,
//! `content_mime_type`, `content_mime_detected`
//! (WARC-Identified-Payload-Type), `content_charset` (HTTP Content-Type
//! charset), `content_truncated`, `warc_filename`, `warc_record_offset`,
//! `warc_record_length`. Always null: `content_languages` (needs language
//! detection) and `warc_segment` (a Common Crawl path convention).

use std::io::Write;
use std::sync::Arc;

use arrow_array::builder::{
    Int16Builder, Int32Builder, Int64Builder, StringBuilder, TimestampMillisecondBuilder,
};
use arrow_array::{ArrayRef, RecordBatch};
use arrow_schema::{DataType, Field, Schema, SchemaRef, TimeUnit};
use parquet::arrow::ArrowWriter;
use parquet::basic::{Compression, ZstdLevel};
use parquet::errors::ParquetError;
use parquet::file::metadata::SortingColumn;
use parquet::file::properties::WriterProperties;

use super::Entry;
use super::surt::Url;

/// How Parquet indexes are written.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParquetOptions {
    /// `warc_record_offset` and `warc_record_length` as 32-bit integers, as
    /// in Common Crawl's table (which only works for files under 2 GiB);
    /// default 64-bit.
    pub int32_offsets: bool,
    /// Rows per row group (default 1,000,000).
    pub row_group_rows: usize,
    /// zstd level (default 3).
    pub zstd_level: i32,
}

impl Default for ParquetOptions {
    fn default() -> Self {
        ParquetOptions {
            int32_offsets: false,
            row_group_rows: 1_000_000,
            zstd_level: 3,
        }
    }
}

const STRING_COLUMNS_1: [&str; 14] = [
    "url_surtkey",
    "url",
    "url_host_name",
    "url_host_tld",
    "url_host_2nd_last_part",
    "url_host_3rd_last_part",
    "url_host_4th_last_part",
    "url_host_5th_last_part",
    "url_host_registry_suffix",
    "url_host_registered_domain",
    "url_host_private_suffix",
    "url_host_private_domain",
    "url_host_name_reversed",
    "url_protocol",
];

/// The Arrow schema of Parquet indexes.
pub fn parquet_schema(opts: &ParquetOptions) -> SchemaRef {
    let s = |name: &str, nullable: bool| Field::new(name, DataType::Utf8, nullable);
    let int = if opts.int32_offsets {
        DataType::Int32
    } else {
        DataType::Int64
    };
    let mut fields: Vec<Field> = STRING_COLUMNS_1
        .iter()
        .map(|n| s(n, *n != "url_surtkey"))
        .collect();
    fields.extend([
        Field::new("url_port", DataType::Int32, true),
        s("url_path", true),
        s("url_query", true),
        Field::new(
            "fetch_time",
            DataType::Timestamp(TimeUnit::Millisecond, Some("UTC".into())),
            true,
        ),
        Field::new("fetch_status", DataType::Int16, true),
        s("fetch_redirect", true),
        s("content_digest", true),
        s("content_mime_type", true),
        s("content_mime_detected", true),
        s("content_charset", true),
        s("content_languages", true),
        s("content_truncated", true),
        s("warc_filename", false),
        Field::new("warc_record_offset", int.clone(), false),
        Field::new("warc_record_length", int, true),
        s("warc_segment", true),
    ]);
    Arc::new(Schema::new(fields))
}

const BATCH_ROWS: usize = 8192;

/// Largest row group buffered before it is written.
const ROW_GROUP_BYTES: usize = 128 << 20;

/// Writes index entries, already in url key order, as Parquet.
pub(crate) struct ParquetWriter<W: Write + Send> {
    writer: ArrowWriter<W>,
    schema: SchemaRef,
    opts: ParquetOptions,
    rows: Vec<Entry>,
}

impl<W: Write + Send> ParquetWriter<W> {
    pub(crate) fn new(out: W, opts: &ParquetOptions) -> Result<Self, ParquetError> {
        let schema = parquet_schema(opts);
        let props = WriterProperties::builder()
            .set_compression(Compression::ZSTD(ZstdLevel::try_new(opts.zstd_level)?))
            .set_max_row_group_row_count(Some(opts.row_group_rows.max(1)))
            // Row groups of about Spark's size, so memory stays bounded.
            .set_max_row_group_bytes(Some(ROW_GROUP_BYTES))
            .set_sorting_columns(Some(vec![SortingColumn {
                column_idx: 0,
                descending: false,
                nulls_first: false,
            }]))
            .build();
        Ok(ParquetWriter {
            writer: ArrowWriter::try_new(out, schema.clone(), Some(props))?,
            schema,
            opts: opts.clone(),
            rows: Vec::with_capacity(BATCH_ROWS),
        })
    }

    /// Takes a record made by the Parquet [`Encoder`](super::Encoder).
    pub(crate) fn push_record(&mut self, rec: &[u8]) -> Result<(), ParquetError> {
        let json = match rec.iter().rposition(|&b| b == 0) {
            Some(i) => &rec[i + 1..],
            None => rec,
        };
        let e: Entry = serde_json::from_slice(json)
            .map_err(|e| ParquetError::General(format!("bad index record: {e}")))?;
        self.rows.push(e);
        if self.rows.len() >= BATCH_ROWS {
            self.flush_rows()?;
        }
        Ok(())
    }

    fn flush_rows(&mut self) -> Result<(), ParquetError> {
        if self.rows.is_empty() {
            return Ok(());
        }
        let batch = batch(&self.schema, &self.opts, &self.rows)?;
        self.writer.write(&batch)?;
        self.rows.clear();
        Ok(())
    }

    pub(crate) fn finish(mut self) -> Result<W, ParquetError> {
        self.flush_rows()?;
        let mut w = self.writer.into_inner()?;
        w.flush()?;
        Ok(w)
    }
}

/// The URL columns of one entry.
#[derive(Default)]
struct UrlParts {
    host: Option<String>,
    parts: [Option<String>; 5],
    registry_suffix: Option<String>,
    registered_domain: Option<String>,
    private_suffix: Option<String>,
    private_domain: Option<String>,
    reversed: Option<String>,
    protocol: Option<String>,
    port: Option<i32>,
    path: Option<String>,
    query: Option<String>,
}

fn is_ip(host: &str) -> bool {
    host.contains(':') || host.parse::<std::net::Ipv4Addr>().is_ok()
}

/// The ICANN public suffix of `host`: the longest match of the list, or,
/// when that is a private-section rule, the ICANN suffix below it.
fn icann_suffix(host: &str) -> Option<&str> {
    let mut h = host;
    loop {
        let s = psl::suffix(h.as_bytes())?;
        let suffix = h.get(h.len().checked_sub(s.as_bytes().len())?..)?;
        if s.typ() != Some(psl::Type::Private) {
            return Some(suffix);
        }
        h = suffix.split_once('.')?.1;
    }
}

/// `suffix` plus the label before it, when `host` has one.
fn registrable(host: &str, suffix: &str) -> Option<String> {
    let prefix = host.strip_suffix(suffix)?.strip_suffix('.')?;
    let label = prefix.rsplit('.').next().filter(|l| !l.is_empty())?;
    Some(format!("{label}.{suffix}"))
}

fn url_parts(url: Option<&str>) -> UrlParts {
    let Some(url) = url else {
        return UrlParts::default();
    };
    let Ok(u) = Url::parse(url.as_bytes()) else {
        return UrlParts::default();
    };
    let text = |b: &[u8]| String::from_utf8_lossy(b).into_owned();
    let mut p = UrlParts {
        protocol: Some(text(&u.scheme).to_ascii_lowercase()),
        port: u.port.map(i32::from),
        path: Some(u.path.as_deref().map(text).unwrap_or_default()),
        query: u.query.as_deref().map(text),
        ..UrlParts::default()
    };
    let Some(host) = u.host.as_deref().filter(|h| !h.is_empty()) else {
        return p;
    };
    let host = text(host);
    let host = host.trim_end_matches('.').to_string();
    if !is_ip(&host) {
        let labels: Vec<&str> = host.rsplit('.').collect();
        for (i, slot) in p.parts.iter_mut().enumerate() {
            *slot = labels.get(i).map(|l| l.to_string());
        }
        p.reversed = Some(labels.join("."));
        let private = psl::suffix(host.as_bytes())
            .and_then(|s| host.get(host.len().checked_sub(s.as_bytes().len())?..));
        if let Some(suffix) = private {
            p.private_suffix = Some(suffix.to_string());
            p.private_domain = registrable(&host, suffix);
        }
        if let Some(s) = icann_suffix(&host) {
            p.registry_suffix = Some(s.to_string());
            p.registered_domain = registrable(&host, s);
        }
    }
    p.host = Some(host);
    p
}

fn batch(
    schema: &SchemaRef,
    opts: &ParquetOptions,
    rows: &[Entry],
) -> Result<RecordBatch, ParquetError> {
    let n = rows.len();
    let mut strings: Vec<StringBuilder> = (0..STRING_COLUMNS_1.len())
        .map(|_| StringBuilder::with_capacity(n, n * 16))
        .collect();
    let mut port = Int32Builder::with_capacity(n);
    let mut path = StringBuilder::new();
    let mut query = StringBuilder::new();
    let mut time = TimestampMillisecondBuilder::with_capacity(n).with_timezone("UTC");
    let mut status = Int16Builder::with_capacity(n);
    let mut tail: Vec<StringBuilder> = (0..7).map(|_| StringBuilder::new()).collect();
    let mut filename = StringBuilder::new();
    let mut off64 = Int64Builder::with_capacity(n);
    let mut len64 = Int64Builder::with_capacity(n);
    let mut off32 = Int32Builder::with_capacity(n);
    let mut len32 = Int32Builder::with_capacity(n);
    let mut segment = StringBuilder::new();

    for e in rows {
        let u = url_parts(e.url.as_deref());
        let [p1, p2, p3, p4, p5] = &u.parts;
        let cols: [Option<&str>; 14] = [
            Some(&e.urlkey),
            e.url.as_deref(),
            u.host.as_deref(),
            p1.as_deref(),
            p2.as_deref(),
            p3.as_deref(),
            p4.as_deref(),
            p5.as_deref(),
            u.registry_suffix.as_deref(),
            u.registered_domain.as_deref(),
            u.private_suffix.as_deref(),
            u.private_domain.as_deref(),
            u.reversed.as_deref(),
            u.protocol.as_deref(),
        ];
        for (b, v) in strings.iter_mut().zip(cols) {
            b.append_option(v);
        }
        port.append_option(u.port);
        path.append_option(u.path.as_deref());
        query.append_option(u.query.as_deref());
        time.append_option(e.fetch_millis);
        status.append_option(e.status.as_deref().and_then(|s| s.parse::<i16>().ok()));
        let tails: [Option<&str>; 7] = [
            e.redirect.as_deref(),
            e.digest.as_deref(),
            e.mime.as_deref(),
            e.mime_detected.as_deref(),
            e.charset.as_deref(),
            None,
            e.truncated.as_deref(),
        ];
        for (b, v) in tail.iter_mut().zip(tails) {
            b.append_option(v);
        }
        filename.append_value(&e.filename);
        if opts.int32_offsets {
            let o = i32::try_from(e.offset).map_err(|_| {
                ParquetError::General(format!("offset {} does not fit a 32-bit column", e.offset))
            })?;
            off32.append_value(o);
            len32.append_option(e.length.and_then(|l| i32::try_from(l).ok()));
        } else {
            off64.append_value(i64::try_from(e.offset).unwrap_or(i64::MAX));
            len64.append_option(e.length.and_then(|l| i64::try_from(l).ok()));
        }
        segment.append_null();
    }
    let mut cols: Vec<ArrayRef> = strings
        .iter_mut()
        .map(|b| Arc::new(b.finish()) as ArrayRef)
        .collect();
    cols.push(Arc::new(port.finish()));
    cols.push(Arc::new(path.finish()));
    cols.push(Arc::new(query.finish()));
    cols.push(Arc::new(time.finish()));
    cols.push(Arc::new(status.finish()));
    cols.extend(tail.iter_mut().map(|b| Arc::new(b.finish()) as ArrayRef));
    cols.push(Arc::new(filename.finish()));
    if opts.int32_offsets {
        cols.push(Arc::new(off32.finish()));
        cols.push(Arc::new(len32.finish()));
    } else {
        cols.push(Arc::new(off64.finish()));
        cols.push(Arc::new(len64.finish()));
    }
    cols.push(Arc::new(segment.finish()));
    Ok(RecordBatch::try_new(schema.clone(), cols)?)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn host_parts_and_suffixes() {
        let p = url_parts(Some("http://www.foo.blogspot.com:8080/a?b=1"));
        assert_eq!(p.host.as_deref(), Some("www.foo.blogspot.com"));
        assert_eq!(p.parts[0].as_deref(), Some("com"));
        assert_eq!(p.parts[1].as_deref(), Some("blogspot"));
        assert_eq!(p.parts[4], None);
        assert_eq!(p.registry_suffix.as_deref(), Some("com"));
        assert_eq!(p.registered_domain.as_deref(), Some("blogspot.com"));
        assert_eq!(p.private_suffix.as_deref(), Some("blogspot.com"));
        assert_eq!(p.private_domain.as_deref(), Some("foo.blogspot.com"));
        assert_eq!(p.reversed.as_deref(), Some("com.blogspot.foo.www"));
        assert_eq!(p.port, Some(8080));
        assert_eq!(p.path.as_deref(), Some("/a"));
        assert_eq!(p.query.as_deref(), Some("b=1"));
        assert_eq!(p.protocol.as_deref(), Some("http"));

        let p = url_parts(Some("https://example.co.uk/"));
        assert_eq!(p.registry_suffix.as_deref(), Some("co.uk"));
        assert_eq!(p.registered_domain.as_deref(), Some("example.co.uk"));

        let ip = url_parts(Some("http://127.0.0.1/"));
        assert_eq!(ip.host.as_deref(), Some("127.0.0.1"));
        assert_eq!(ip.reversed, None);
        assert_eq!(ip.parts[0], None);

        let dns = url_parts(Some("dns:example.com"));
        assert_eq!(dns.host, None);
        assert_eq!(dns.protocol.as_deref(), Some("dns"));
    }
}
