//! Index selection: which records of an index (CDXJ, CDX or a cc-index
//! Parquet table) a set of filters picks, and where each one is (file,
//! offset, stored length). `warchest fetch` and Python's `warchest.fetch`
//! select this way before fetching the records by byte range.
//!
//! ```
//! use warchest_index::select::{Selection, parse_cdxj};
//! let e = parse_cdxj(
//!     "com,example)/ 20240102030405 {\"url\": \"http://example.com/\", \
//!      \"mime\": \"text/html\", \"status\": \"200\", \"length\": \"10\", \
//!      \"offset\": \"0\", \"filename\": \"a.warc.gz\"}",
//! )
//! .unwrap();
//! let sel = Selection { host: Some("example.com".into()), status: Some(200), ..Selection::default() };
//! assert!(sel.matches(&e));
//! assert_eq!((e.filename.as_str(), e.offset, e.length), ("a.warc.gz", 0, 10));
//! ```

/// One index line or row: where a record is and what selects it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct IndexEntry {
    /// The SURT key (`url_surtkey`).
    pub surt: String,
    /// The 14-digit capture time (`fetch_time`).
    pub timestamp: String,
    /// The captured URL.
    pub url: String,
    /// The MIME type as the index gives it.
    pub mime: String,
    /// The HTTP status, when the index has one.
    pub status: Option<u16>,
    /// The archive file, as the index names it (often relative).
    pub filename: String,
    /// The record's offset in the stored file.
    pub offset: u64,
    /// The record's stored length.
    pub length: u64,
}

/// Parses one CDXJ line (`SURT TIMESTAMP {json}`): the index crate's
/// [`CdxjLine`](crate::reader::CdxjLine), with a length required. `None` when
/// the line does not name a file, offset and length.
pub fn parse_cdxj(line: &str) -> Option<IndexEntry> {
    let l = crate::reader::CdxjLine::parse(line.as_bytes())?;
    let text = |k: &str| l.text(k).map(|s| s.trim().to_string()).unwrap_or_default();
    Some(IndexEntry {
        mime: text("mime"),
        status: text("status").parse().ok(),
        length: l.length?,
        surt: l.urlkey,
        timestamp: l.timestamp,
        url: l.url,
        filename: l.filename,
        offset: l.offset,
    })
}

/// The standard CDX fields (`N b a m s k r M S V g`), for a CDX file
/// without its ` CDX ` header line.
pub const CDX11: &[&str] = &["N", "b", "a", "m", "s", "k", "r", "M", "S", "V", "g"];

/// Parses one CDX line with `fields` (the letters of its header). `None`
/// when the line does not name a file, offset and length.
pub fn parse_cdx(line: &str, fields: &[String]) -> Option<IndexEntry> {
    let vals: Vec<&str> = line.split(' ').collect();
    let get = |letter: &str| {
        fields
            .iter()
            .position(|f| f == letter)
            .and_then(|i| vals.get(i).copied())
            .filter(|v| *v != "-")
    };
    Some(IndexEntry {
        surt: get("N").unwrap_or("").to_string(),
        timestamp: get("b").unwrap_or("").to_string(),
        url: get("a").unwrap_or("").to_string(),
        mime: get("m").unwrap_or("").to_string(),
        status: get("s").and_then(|s| s.parse().ok()),
        filename: get("g")?.to_string(),
        offset: get("V").or_else(|| get("v"))?.parse().ok()?,
        length: get("S")?.parse().ok()?,
    })
}

/// The filters of a selection; `None` (the default) passes everything.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Selection {
    /// Records whose URL starts with this.
    pub url_prefix: Option<String>,
    /// Records whose SURT key starts with this.
    pub surt_prefix: Option<String>,
    /// Records of this host or its subdomains (any letter case).
    pub host: Option<String>,
    /// Records of this MIME type (any letter case).
    pub mime: Option<String>,
    /// Records with this HTTP status.
    pub status: Option<u16>,
    /// Records captured at or after this time (a 14-digit timestamp or a
    /// prefix of one).
    pub from: Option<String>,
    /// Records captured at or before this time (a prefix covers the whole
    /// period it names).
    pub to: Option<String>,
    /// At most this many records.
    pub limit: Option<u64>,
}

impl Selection {
    /// Whether `e` passes every filter (the limit aside).
    pub fn matches(&self, e: &IndexEntry) -> bool {
        if let Some(p) = &self.url_prefix
            && !e.url.starts_with(p.as_str())
        {
            return false;
        }
        if let Some(p) = &self.surt_prefix
            && !e.surt.starts_with(p.as_str())
        {
            return false;
        }
        if let Some(h) = &self.host {
            let host = url_host(&e.url);
            let h = h.to_ascii_lowercase();
            if !(host == h || host.ends_with(&format!(".{h}"))) {
                return false;
            }
        }
        if let Some(m) = &self.mime
            && !e.mime.eq_ignore_ascii_case(m)
        {
            return false;
        }
        if let Some(s) = self.status
            && e.status != Some(s)
        {
            return false;
        }
        // Timestamps compare as digits; a prefix bound covers its period.
        if let Some(f) = &self.from
            && e.timestamp.as_str() < f.as_str()
        {
            return false;
        }
        if let Some(t) = &self.to {
            let upper = format!("{t}{}", "9".repeat(14usize.saturating_sub(t.len())));
            if e.timestamp.as_str() > upper.as_str() {
                return false;
            }
        }
        true
    }

    /// What the selection is (`host=example.com status=200`, or `all
    /// records`), for a warcinfo record and messages.
    pub fn describe(&self) -> String {
        let mut v = Vec::new();
        let mut add = |k: &str, val: Option<String>| {
            if let Some(x) = val {
                v.push(format!("{k}={x}"));
            }
        };
        add("url-prefix", self.url_prefix.clone());
        add("surt-prefix", self.surt_prefix.clone());
        add("host", self.host.clone());
        add("mime", self.mime.clone());
        add("status", self.status.map(|s| s.to_string()));
        add("from", self.from.clone());
        add("to", self.to.clone());
        add("limit", self.limit.map(|s| s.to_string()));
        if v.is_empty() {
            "all records".into()
        } else {
            v.join(" ")
        }
    }
}

/// The lowercased host of `url` ("" when it has none).
pub fn url_host(url: &str) -> String {
    let rest = url.split_once("://").map_or(url, |(_, r)| r);
    let hostport = rest.split(['/', '?', '#']).next().unwrap_or("");
    let host = hostport.rsplit_once('@').map_or(hostport, |(_, h)| h);
    host.split(':').next().unwrap_or("").to_ascii_lowercase()
}

#[cfg(feature = "parquet")]
pub use cc_index::{RangeChunks, select_parquet, select_parquet_counted};

/// What a caller says of the `skipped` rows of the Parquet index
/// `index` that `select_parquet_counted` passed over: "cc.parquet: 2
/// rows without a usable offset or length (null or negative) not
/// understood"; `None` when there are none. `warchest fetch` prints it
/// (and exits 1), the Python `select_index` warns it: one sentence.
pub fn skipped_rows_message(index: &str, skipped: u64) -> Option<String> {
    let rows = match skipped {
        0 => return None,
        1 => "row",
        _ => "rows",
    };
    Some(format!(
        "{index}: {skipped} {rows} without a usable offset or length (null or negative) \
         not understood"
    ))
}

/// The cc-index Parquet table (Common Crawl's columnar index).
#[cfg(feature = "parquet")]
mod cc_index {
    use std::io::Read;

    use arrow_array::Array;
    use parquet::arrow::ProjectionMask;
    use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
    use parquet::errors::ParquetError;
    use parquet::file::reader::{ChunkReader, Length};

    use super::{IndexEntry, Selection};

    /// A Parquet file read through byte ranges: `open(start, len)` opens
    /// `len` bytes from `start` (a range request for an object, a seek for
    /// a file), so only the footer and the column chunks asked for are
    /// read.
    pub struct RangeChunks<F> {
        size: u64,
        open: F,
    }

    impl<F> RangeChunks<F> {
        /// A file of `size` bytes whose ranges `open` reads.
        pub fn new(size: u64, open: F) -> Self {
            RangeChunks { size, open }
        }
    }

    impl<F> Length for RangeChunks<F> {
        fn len(&self) -> u64 {
            self.size
        }
    }

    impl<F, R> ChunkReader for RangeChunks<F>
    where
        F: Fn(u64, u64) -> std::io::Result<R> + Send + Sync,
        R: Read + Send,
    {
        type T = R;

        fn get_read(&self, start: u64) -> parquet::errors::Result<R> {
            (self.open)(start, self.size.saturating_sub(start))
                .map_err(|e| ParquetError::External(Box::new(e)))
        }

        fn get_bytes(&self, start: u64, length: usize) -> parquet::errors::Result<bytes::Bytes> {
            let mut r = self.get_read(start)?;
            let mut v = Vec::with_capacity(length.min(64 << 20));
            (&mut r)
                .take(length as u64)
                .read_to_end(&mut v)
                .map_err(|e| ParquetError::External(Box::new(e)))?;
            Ok(bytes::Bytes::from(v))
        }
    }

    /// The columns read: cc-index's names.
    const WANTED: [&str; 8] = [
        "url",
        "url_surtkey",
        "warc_filename",
        "warc_record_offset",
        "warc_record_length",
        "content_mime_type",
        "fetch_status",
        "fetch_time",
    ];

    /// The rows of a cc-index Parquet table (columns url, url_surtkey,
    /// warc_filename, warc_record_offset, warc_record_length,
    /// content_mime_type, fetch_status, fetch_time; only those are read)
    /// that `sel` selects, in the table's order, at most `sel.limit` (a
    /// limit of 0 selects nothing). A row without an offset or length (null
    /// or negative) is passed over: [`select_parquet_counted`] counts them.
    /// `src` is a [`std::fs::File`] or a [`RangeChunks`].
    ///
    /// # Errors
    /// The file is not Parquet or a column chunk cannot be read.
    pub fn select_parquet<T: ChunkReader + 'static>(
        src: T,
        sel: &Selection,
    ) -> Result<Vec<IndexEntry>, ParquetError> {
        select_parquet_counted(src, sel).map(|(rows, _)| rows)
    }

    /// [`select_parquet`], with the number of rows read that were passed
    /// over for want of a usable offset or length (null or negative): rows
    /// not understood, which a caller must not treat as read.
    ///
    /// # Errors
    /// The file is not Parquet or a column chunk cannot be read.
    pub fn select_parquet_counted<T: ChunkReader + 'static>(
        src: T,
        sel: &Selection,
    ) -> Result<(Vec<IndexEntry>, u64), ParquetError> {
        let limit = sel.limit.unwrap_or(u64::MAX);
        let mut skipped = 0u64;
        if limit == 0 {
            return Ok((Vec::new(), skipped));
        }
        let b = ParquetRecordBatchReaderBuilder::try_new(src)?;
        let schema = b.parquet_schema();
        let idx: Vec<usize> = (0..schema.num_columns())
            .filter(|&i| WANTED.contains(&schema.column(i).name()))
            .collect();
        let mask = ProjectionMask::leaves(schema, idx);
        let reader = b.with_projection(mask).with_batch_size(8192).build()?;
        let mut out = Vec::new();
        for batch in reader {
            let batch = batch?;
            let col = |name: &str| batch.column_by_name(name);
            let text = |name: &str, i: usize| -> String {
                let Some(c) = col(name) else {
                    return String::new();
                };
                if c.is_null(i) {
                    return String::new();
                }
                let a = c.as_any();
                if let Some(a) = a.downcast_ref::<arrow_array::StringArray>() {
                    a.value(i).to_string()
                } else if let Some(a) = a.downcast_ref::<arrow_array::LargeStringArray>() {
                    a.value(i).to_string()
                } else if let Some(a) = a.downcast_ref::<arrow_array::StringViewArray>() {
                    a.value(i).to_string()
                } else {
                    String::new()
                }
            };
            let number = |name: &str, i: usize| -> Option<i64> {
                let c = col(name)?;
                if c.is_null(i) {
                    return None;
                }
                let a = c.as_any();
                a.downcast_ref::<arrow_array::Int64Array>()
                    .map(|a| a.value(i))
                    .or_else(|| {
                        a.downcast_ref::<arrow_array::Int32Array>()
                            .map(|a| i64::from(a.value(i)))
                    })
                    .or_else(|| {
                        a.downcast_ref::<arrow_array::Int16Array>()
                            .map(|a| i64::from(a.value(i)))
                    })
                    .or_else(|| {
                        a.downcast_ref::<arrow_array::UInt64Array>()
                            .and_then(|a| i64::try_from(a.value(i)).ok())
                    })
                    .or_else(|| {
                        a.downcast_ref::<arrow_array::UInt32Array>()
                            .map(|a| i64::from(a.value(i)))
                    })
            };
            let timestamp = |i: usize| -> String {
                let Some(c) = col("fetch_time") else {
                    return String::new();
                };
                if c.is_null(i) {
                    return String::new();
                }
                let a = c.as_any();
                let secs = a
                    .downcast_ref::<arrow_array::TimestampMillisecondArray>()
                    .map(|a| a.value(i).div_euclid(1000))
                    .or_else(|| {
                        a.downcast_ref::<arrow_array::TimestampMicrosecondArray>()
                            .map(|a| a.value(i).div_euclid(1_000_000))
                    })
                    .or_else(|| {
                        a.downcast_ref::<arrow_array::TimestampNanosecondArray>()
                            .map(|a| a.value(i).div_euclid(1_000_000_000))
                    })
                    .or_else(|| {
                        a.downcast_ref::<arrow_array::TimestampSecondArray>()
                            .map(|a| a.value(i))
                    });
                secs.map(timestamp14).unwrap_or_default()
            };
            for i in 0..batch.num_rows() {
                let (Some(offset), Some(length)) = (
                    number("warc_record_offset", i).and_then(|n| u64::try_from(n).ok()),
                    number("warc_record_length", i).and_then(|n| u64::try_from(n).ok()),
                ) else {
                    skipped += 1;
                    continue;
                };
                let e = IndexEntry {
                    surt: text("url_surtkey", i),
                    timestamp: timestamp(i),
                    url: text("url", i),
                    mime: text("content_mime_type", i),
                    status: number("fetch_status", i).and_then(|s| u16::try_from(s).ok()),
                    filename: text("warc_filename", i),
                    offset,
                    length,
                };
                if sel.matches(&e) {
                    out.push(e);
                    if out.len() as u64 >= limit {
                        return Ok((out, skipped));
                    }
                }
            }
        }
        Ok((out, skipped))
    }

    /// Seconds since the epoch as a 14-digit UTC timestamp (the format
    /// crate's date arithmetic); "" outside what a WARC-Date can say.
    fn timestamp14(secs: i64) -> String {
        use warchest::warc::{DatePrecision, WarcDate};
        WarcDate::from_unix_nanos(i128::from(secs) * 1_000_000_000, DatePrecision::Second)
            .map(|d| d.timestamp14())
            .unwrap_or_default()
    }

    #[cfg(test)]
    mod tests {
        use super::timestamp14;

        #[test]
        fn timestamps() {
            assert_eq!(timestamp14(0), "19700101000000");
            assert_eq!(timestamp14(1_709_251_199), "20240229235959");
            assert_eq!(timestamp14(951_782_400), "20000229000000");
            assert_eq!(timestamp14(-1), "19691231235959");
            assert_eq!(timestamp14(i64::MAX / 2), "");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn skipped_rows_are_told_in_one_sentence() {
        assert_eq!(skipped_rows_message("cc.parquet", 0), None);
        assert_eq!(
            skipped_rows_message("cc.parquet", 1).as_deref(),
            Some(
                "cc.parquet: 1 row without a usable offset or length (null or negative) not understood"
            )
        );
        assert!(
            skipped_rows_message("i.parquet", 2)
                .unwrap()
                .starts_with("i.parquet: 2 rows without")
        );
    }

    #[test]
    fn parses_cdxj_and_cdx() {
        let e = parse_cdxj(
            "com,example)/ 20240102030405 {\"url\": \"http://example.com/\", \"status\": \"404\", \"length\": \"7\", \"offset\": \"3\", \"filename\": \"a.warc\"}",
        )
        .unwrap();
        assert_eq!(e.status, Some(404));
        assert_eq!((e.offset, e.length), (3, 7));
        // No length: not a line fetch can use.
        assert!(parse_cdxj("a)/ 2024 {\"offset\": \"3\", \"filename\": \"a.warc\"}").is_none());
        let fields: Vec<String> = CDX11.iter().map(|s| s.to_string()).collect();
        let e = parse_cdx(
            "com,example)/ 20240102030405 http://example.com/ text/html 200 X - - 10 20 a.warc.gz",
            &fields,
        )
        .unwrap();
        assert_eq!(e.mime, "text/html");
        assert_eq!(
            (e.filename.as_str(), e.offset, e.length),
            ("a.warc.gz", 20, 10)
        );
    }

    #[test]
    fn filters_and_description() {
        let e = IndexEntry {
            surt: "com,example)/a".into(),
            timestamp: "20240315000000".into(),
            url: "https://User@www.Example.com:8080/a".into(),
            mime: "text/html".into(),
            status: Some(200),
            ..IndexEntry::default()
        };
        assert_eq!(url_host(&e.url), "www.example.com");
        let all = Selection::default();
        assert!(all.matches(&e));
        assert_eq!(all.describe(), "all records");
        let s = |f: fn(&mut Selection)| {
            let mut s = Selection::default();
            f(&mut s);
            s
        };
        assert!(s(|s| s.host = Some("EXAMPLE.com".into())).matches(&e));
        assert!(!s(|s| s.host = Some("ample.com".into())).matches(&e));
        assert!(s(|s| s.to = Some("202403".into())).matches(&e));
        assert!(!s(|s| s.to = Some("202402".into())).matches(&e));
        assert!(!s(|s| s.from = Some("2025".into())).matches(&e));
        assert!(!s(|s| s.status = Some(404)).matches(&e));
        assert!(s(|s| s.mime = Some("TEXT/HTML".into())).matches(&e));
        assert!(!s(|s| s.surt_prefix = Some("org,".into())).matches(&e));
        assert_eq!(
            s(|s| {
                s.host = Some("a".into());
                s.limit = Some(3);
            })
            .describe(),
            "host=a limit=3"
        );
    }
}
