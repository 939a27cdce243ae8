//! Index formats and the writer that sorts and writes them.

use std::borrow::Cow;
use std::fmt;
#[cfg(feature = "parquet")]
use std::io;
use std::io::Write;

use super::Entry;
#[cfg(feature = "parquet")]
use super::parquet::{ParquetOptions, ParquetWriter};
use super::sort::ExternalSorter;
#[cfg(feature = "parquet")]
use warchest::error::Error;
use warchest::error::Result;

/// An index format.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Format {
    /// CDXJ as cdxj-indexer 1.5 writes it: `urlkey timestamp {json}`.
    Cdxj,
    /// Space-separated CDX with a legend line (` CDX N b a ...`).
    Cdx(Vec<CdxField>),
    /// One JSON object a line: `urlkey`, `timestamp` and the CDXJ fields.
    Json,
    /// Parquet with Common Crawl's cc-index columns, rows in url key order.
    #[cfg(feature = "parquet")]
    Parquet(ParquetOptions),
}

impl Format {
    /// CDX 11: ` CDX N b a m s k r M S V g`.
    pub fn cdx11() -> Format {
        Format::cdx_legend("N b a m s k r M S V g").unwrap_or(Format::Cdxj)
    }

    /// CDX 9: ` CDX N b a m s k r V g`.
    pub fn cdx9() -> Format {
        Format::cdx_legend("N b a m s k r V g").unwrap_or(Format::Cdxj)
    }

    /// CDX with a custom legend: field letters separated by spaces, with or
    /// without the leading ` CDX` (`"N b a m s k r M S V g"`).
    ///
    /// # Errors
    /// A letter this writer does not fill, or no letter at all.
    pub fn cdx_legend(legend: &str) -> std::result::Result<Format, LegendError> {
        let mut fields = Vec::new();
        for tok in legend.split_whitespace() {
            if tok == "CDX" && fields.is_empty() {
                continue;
            }
            let mut chars = tok.chars();
            let (Some(c), None) = (chars.next(), chars.next()) else {
                return Err(LegendError(tok.to_string()));
            };
            fields.push(CdxField::from_letter(c).ok_or_else(|| LegendError(tok.to_string()))?);
        }
        if fields.is_empty() {
            return Err(LegendError(legend.to_string()));
        }
        Ok(Format::Cdx(fields))
    }

    /// True for Parquet.
    pub fn is_binary(&self) -> bool {
        #[cfg(feature = "parquet")]
        if matches!(self, Format::Parquet(_)) {
            return true;
        }
        false
    }
}

/// A CDX legend letter warchest does not fill.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LegendError(pub String);

impl fmt::Display for LegendError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "unsupported CDX field {:?} (supported: N b a m s k r M S V g e u)",
            self.0
        )
    }
}

impl std::error::Error for LegendError {}

/// A CDX column (letters from the 2015 CDX specification).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum CdxField {
    /// `N`: massaged URL (SURT url key).
    UrlKey,
    /// `b`: date, 14 digits.
    Timestamp,
    /// `a`: original URL.
    Url,
    /// `m`: MIME type.
    Mime,
    /// `s`: response code.
    Status,
    /// `k`: new-style checksum (payload digest).
    Digest,
    /// `r`: redirect (`-`, as pywb and cdxj-indexer write it).
    Redirect,
    /// `M`: meta tags (`-`).
    Meta,
    /// `S`: compressed record size.
    Length,
    /// `V`: compressed file offset.
    Offset,
    /// `g`: file name.
    Filename,
    /// `e`: IP address.
    Ip,
    /// `u`: record id (wget's use of the letter).
    RecordId,
}

impl CdxField {
    /// The field for a legend letter.
    pub fn from_letter(c: char) -> Option<CdxField> {
        Some(match c {
            'N' => CdxField::UrlKey,
            'b' => CdxField::Timestamp,
            'a' => CdxField::Url,
            'm' => CdxField::Mime,
            's' => CdxField::Status,
            'k' => CdxField::Digest,
            'r' => CdxField::Redirect,
            'M' => CdxField::Meta,
            'S' => CdxField::Length,
            'V' => CdxField::Offset,
            'g' => CdxField::Filename,
            'e' => CdxField::Ip,
            'u' => CdxField::RecordId,
            _ => return None,
        })
    }

    /// The legend letter.
    pub fn letter(self) -> char {
        match self {
            CdxField::UrlKey => 'N',
            CdxField::Timestamp => 'b',
            CdxField::Url => 'a',
            CdxField::Mime => 'm',
            CdxField::Status => 's',
            CdxField::Digest => 'k',
            CdxField::Redirect => 'r',
            CdxField::Meta => 'M',
            CdxField::Length => 'S',
            CdxField::Offset => 'V',
            CdxField::Filename => 'g',
            CdxField::Ip => 'e',
            CdxField::RecordId => 'u',
        }
    }
}

/// Turns entries into the records of a format: text lines for CDXJ, CDX
/// and JSON, sort records for Parquet. Cheap to clone and `Send`, so
/// worker threads can encode and the writer only concatenates.
#[derive(Debug, Clone)]
pub struct Encoder {
    format: Format,
}

impl Encoder {
    /// An encoder for `format`.
    pub fn new(format: &Format) -> Self {
        Encoder {
            format: format.clone(),
        }
    }

    /// Appends the record of `e` to `out`, ending with `\n`.
    pub fn encode(&self, e: &Entry, out: &mut Vec<u8>) {
        match &self.format {
            Format::Cdxj => {
                out.extend_from_slice(e.urlkey.as_bytes());
                out.push(b' ');
                out.extend_from_slice(e.timestamp.as_bytes());
                out.push(b' ');
                cdxj_json(e, false, out);
            }
            Format::Json => cdxj_json(e, true, out),
            Format::Cdx(fields) => {
                for (i, f) in fields.iter().enumerate() {
                    if i > 0 {
                        out.push(b' ');
                    }
                    let v: Option<std::borrow::Cow<'_, str>> = match f {
                        CdxField::UrlKey => Some(e.urlkey.as_str().into()),
                        CdxField::Timestamp => Some(e.timestamp.as_str().into()),
                        CdxField::Url => e.url.as_deref().map(Into::into),
                        CdxField::Mime => e.mime.as_deref().map(Into::into),
                        CdxField::Status => e.status.as_deref().map(Into::into),
                        CdxField::Digest => e.digest.as_deref().map(Into::into),
                        CdxField::Redirect | CdxField::Meta => None,
                        CdxField::Length => e.length.map(|l| l.to_string().into()),
                        CdxField::Offset => Some(e.offset.to_string().into()),
                        CdxField::Filename => Some(e.filename.as_str().into()),
                        CdxField::Ip => e.ip.as_deref().map(Into::into),
                        CdxField::RecordId => e.record_id.as_deref().map(Into::into),
                    };
                    // An empty value would shift the columns.
                    match v.as_deref().filter(|s| !s.is_empty()) {
                        Some(s) => out.extend_from_slice(s.replace(' ', "%20").as_bytes()),
                        None => out.push(b'-'),
                    }
                }
            }
            #[cfg(feature = "parquet")]
            Format::Parquet(_) => {
                // Sorted by url key, then the whole entry; the JSON has no
                // NUL, so the last NUL ends the key.
                out.extend_from_slice(e.urlkey.as_bytes());
                out.push(0);
                if serde_json::to_writer(&mut *out, e).is_err() {
                    out.extend_from_slice(b"{}");
                }
            }
        }
        out.push(b'\n');
    }

    /// The legend line of CDX formats (with its `\n`).
    pub fn legend(&self) -> Option<String> {
        match &self.format {
            Format::Cdx(fields) => {
                let mut s = " CDX".to_string();
                for f in fields {
                    s.push(' ');
                    s.push(f.letter());
                }
                s.push('\n');
                Some(s)
            }
            _ => None,
        }
    }
}

/// The value of one of an entry's JSON fields (see [`entry_fields`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FieldValue<'a> {
    /// Text, written as a JSON string.
    Text(&'a str),
    /// A number, written (as cdxj-indexer writes it) as a JSON string of
    /// its decimal digits.
    Number(u64),
    /// JSON `null` (cdxj-indexer's `"requestBody": null`, a POST whose
    /// body gave no query).
    Null,
}

impl FieldValue<'_> {
    /// Appends the value as JSON, as python's `json.dumps` writes it
    /// (see [`py_json_str`]); every value but `null` is a string.
    pub fn write_json(&self, out: &mut Vec<u8>) {
        match *self {
            FieldValue::Text(v) => py_json_str(v, out),
            FieldValue::Number(v) => {
                // Digits: nothing to escape.
                out.push(b'"');
                push_u64(out, v);
                out.push(b'"');
            }
            FieldValue::Null => out.extend_from_slice(b"null"),
        }
    }

    /// The value as text: a number in decimal, `None` for `null`.
    pub fn text(&self) -> Option<Cow<'_, str>> {
        match *self {
            FieldValue::Text(v) => Some(Cow::Borrowed(v)),
            FieldValue::Number(v) => Some(Cow::Owned(v.to_string())),
            FieldValue::Null => None,
        }
    }
}

/// The fields of an entry's JSON object, in their order, the one list of
/// them: the JSON of a CDXJ line (after its `urlkey timestamp` key, so
/// without those two), and with `with_key` the object of [`Format::Json`]
/// and of a CDX server's answers (`urlkey` and `timestamp` first, as pywb
/// gives them). A field an entry does not have is left out, as
/// cdxj-indexer leaves it out; a field added here is written by every
/// format and answered by every server built on it.
pub fn entry_fields(
    e: &Entry,
    with_key: bool,
) -> impl Iterator<Item = (&'static str, FieldValue<'_>)> {
    field_slots(e, with_key).filter_map(|(name, v)| Some((name, v?)))
}

/// The names of every field [`entry_fields`] can give, in its order,
/// `urlkey` and `timestamp` first: what a CDX server may be asked about.
pub fn entry_field_names() -> impl Iterator<Item = &'static str> {
    static EMPTY: std::sync::LazyLock<Entry> = std::sync::LazyLock::new(Entry::default);
    field_slots(&EMPTY, true).map(|(name, _)| name)
}

/// Every field of the list, present or not.
fn field_slots(
    e: &Entry,
    with_key: bool,
) -> impl Iterator<Item = (&'static str, Option<FieldValue<'_>>)> {
    use FieldValue::{Null, Number, Text};
    let key = [
        ("urlkey", Some(Text(&e.urlkey))),
        ("timestamp", Some(Text(&e.timestamp))),
    ];
    let rest = [
        ("url", e.url.as_deref().map(Text)),
        ("mime", e.mime.as_deref().map(Text)),
        ("status", e.status.as_deref().map(Text)),
        ("digest", e.digest.as_deref().map(Text)),
        ("length", e.length.map(Number)),
        ("offset", Some(Number(e.offset))),
        ("filename", Some(Text(&e.filename))),
        (
            "requestBody",
            e.request_body
                .as_ref()
                .map(|b| b.as_deref().map_or(Null, Text)),
        ),
        ("method", e.method.as_deref().map(Text)),
    ];
    key.into_iter().filter(move |_| with_key).chain(rest)
}

/// The JSON object of a CDXJ line, as python's `json.dumps` writes it:
/// `", "` and `": "` separators, non-ASCII as `\uXXXX`, every value a
/// string but `null`; the fields are [`entry_fields`].
fn cdxj_json(e: &Entry, with_key: bool, out: &mut Vec<u8>) {
    out.push(b'{');
    for (i, (name, v)) in entry_fields(e, with_key).enumerate() {
        if i > 0 {
            out.extend_from_slice(b", ");
        }
        // Names are ASCII letters: nothing to escape.
        out.push(b'"');
        out.extend_from_slice(name.as_bytes());
        out.extend_from_slice(b"\": ");
        v.write_json(out);
    }
    out.push(b'}');
}

/// Appends `v` in decimal to `out`, without `format!`'s machinery (the
/// index and listing writers call it for every offset and length).
#[inline]
pub fn push_u64(out: &mut Vec<u8>, mut v: u64) {
    // Two digits a step from a table: half the divisions of one a step.
    static PAIRS: [[u8; 2]; 100] = {
        let mut t = [[0u8; 2]; 100];
        let mut i = 0;
        while i < 100 {
            t[i] = [b'0' + (i / 10) as u8, b'0' + (i % 10) as u8];
            i += 1;
        }
        t
    };
    let mut digits = [0u8; 20];
    let mut i = digits.len();
    while v >= 100 {
        let pair = PAIRS[(v % 100) as usize];
        v /= 100;
        i -= 2;
        digits[i..i + 2].copy_from_slice(&pair);
    }
    if v >= 10 {
        i -= 2;
        digits[i..i + 2].copy_from_slice(&PAIRS[v as usize]);
    } else {
        i -= 1;
        digits[i] = b'0' + v as u8;
    }
    out.extend_from_slice(&digits[i..]);
}

/// Appends `s` as a JSON string (quotes included) the way python's
/// `json.dumps` writes it with its default `ensure_ascii`: non-ASCII as
/// `\uXXXX` (surrogate pairs beyond the BMP), the short escapes for quote,
/// backslash and `\n\r\t\b\f`, other controls as `\u00XX`.
///
/// The one string encoder of the CDXJ and JSON index lines ([`Encoder`]);
/// other writers of those objects (the CDX server's `fl=` lines) use it so
/// that the same value is written the same way, as cdxj-indexer and pywb do.
pub fn py_json_str(s: &str, out: &mut Vec<u8>) {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    let u = |out: &mut Vec<u8>, c: u16| {
        out.extend_from_slice(b"\\u");
        for shift in [12, 8, 4, 0] {
            out.push(HEX[usize::from((c >> shift) & 15)]);
        }
    };
    out.push(b'"');
    // Runs of printable ASCII but quote and backslash are copied as they
    // are (most of any URL); the rest one character at a time.
    let plain = |b: u8| (b' '..=b'~').contains(&b) && b != b'"' && b != b'\\';
    let mut rest = s;
    loop {
        let n = rest.bytes().position(|b| !plain(b)).unwrap_or(rest.len());
        out.extend_from_slice(&rest.as_bytes()[..n]);
        rest = &rest[n..];
        let Some(c) = rest.chars().next() else {
            break;
        };
        rest = &rest[c.len_utf8()..];
        match c {
            '"' => out.extend_from_slice(b"\\\""),
            '\\' => out.extend_from_slice(b"\\\\"),
            '\n' => out.extend_from_slice(b"\\n"),
            '\r' => out.extend_from_slice(b"\\r"),
            '\t' => out.extend_from_slice(b"\\t"),
            '\u{8}' => out.extend_from_slice(b"\\b"),
            '\u{c}' => out.extend_from_slice(b"\\f"),
            ' '..='~' => out.push(c as u8),
            _ => {
                let mut units = [0u16; 2];
                for unit in c.encode_utf16(&mut units) {
                    u(out, *unit);
                }
            }
        }
    }
    out.push(b'"');
}

enum Sink<W: Write + Send> {
    Text(W),
    #[cfg(feature = "parquet")]
    Parquet(Box<ParquetWriter<W>>),
}

/// Writes an index: the legend line (CDX), then the records, sorted when
/// asked (Parquet always is) with an [`ExternalSorter`], so memory stays
/// bounded whatever the number of entries.
pub struct IndexOutput<W: Write + Send> {
    encoder: Encoder,
    sink: Sink<W>,
    sorter: Option<ExternalSorter>,
    line: Vec<u8>,
}

impl<W: Write + Send> IndexOutput<W> {
    /// An output of `format` to `out`; `sort` sorts the lines bytewise
    /// (`LC_ALL=C sort`), dropping repeated identical lines as cdxj-indexer
    /// does.
    ///
    /// # Errors
    /// Writing the legend line failed, or the Parquet schema was refused.
    pub fn new(out: W, format: &Format, sort: bool) -> Result<Self> {
        IndexOutput::with_sort_memory(out, format, sort, super::sort::DEFAULT_MEMORY)
    }

    /// As [`IndexOutput::new`], sorting in runs of about `memory` bytes.
    ///
    /// # Errors
    /// As [`IndexOutput::new`].
    pub fn with_sort_memory(
        mut out: W,
        format: &Format,
        sort: bool,
        memory: usize,
    ) -> Result<Self> {
        let encoder = Encoder::new(format);
        if let Some(legend) = encoder.legend() {
            out.write_all(legend.as_bytes())?;
        }
        let (sink, sort) = match format {
            #[cfg(feature = "parquet")]
            Format::Parquet(opts) => (
                Sink::Parquet(Box::new(ParquetWriter::new(out, opts).map_err(io_err)?)),
                true,
            ),
            _ => (Sink::Text(out), sort),
        };
        Ok(IndexOutput {
            encoder,
            sink,
            sorter: sort.then(|| ExternalSorter::new(memory)),
            line: Vec::new(),
        })
    }

    /// The encoder of this output, for threads that encode entries.
    pub fn encoder(&self) -> Encoder {
        self.encoder.clone()
    }

    /// Writes one entry.
    ///
    /// # Errors
    /// Writing or spilling a sort run failed.
    pub fn push(&mut self, e: &Entry) -> Result<()> {
        let mut line = std::mem::take(&mut self.line);
        line.clear();
        self.encoder.encode(e, &mut line);
        let r = self.push_encoded(&line);
        self.line = line;
        r
    }

    /// Writes records made by [`Encoder::encode`] (one or more whole lines).
    ///
    /// # Errors
    /// As [`IndexOutput::push`].
    pub fn push_encoded(&mut self, records: &[u8]) -> Result<()> {
        match &mut self.sorter {
            Some(sorter) => {
                for rec in records.split(|&b| b == b'\n').filter(|r| !r.is_empty()) {
                    sorter.push(rec)?;
                }
                Ok(())
            }
            None => match &mut self.sink {
                Sink::Text(w) => Ok(w.write_all(records)?),
                #[cfg(feature = "parquet")]
                Sink::Parquet(p) => {
                    for rec in records.split(|&b| b == b'\n').filter(|r| !r.is_empty()) {
                        p.push_record(rec).map_err(io_err)?;
                    }
                    Ok(())
                }
            },
        }
    }

    /// Sorts what is buffered, writes it, and returns the writer, flushed.
    ///
    /// # Errors
    /// Writing or reading back sort runs failed.
    pub fn finish(self) -> Result<W> {
        let IndexOutput { sink, sorter, .. } = self;
        match sink {
            Sink::Text(mut w) => {
                if let Some(sorter) = sorter {
                    sorter.finish(true, |rec| {
                        w.write_all(rec)?;
                        w.write_all(b"\n")
                    })?;
                }
                w.flush()?;
                Ok(w)
            }
            #[cfg(feature = "parquet")]
            Sink::Parquet(mut p) => {
                if let Some(sorter) = sorter {
                    sorter.finish(false, |rec| p.push_record(rec).map_err(io::Error::other))?;
                }
                p.finish().map_err(io_err)
            }
        }
    }
}

#[cfg(feature = "parquet")]
fn io_err(e: impl std::error::Error + Send + Sync + 'static) -> Error {
    Error::from(io::Error::other(e))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn python_json_strings() {
        let mut out = Vec::new();
        py_json_str("a\"b\\c\u{e9}\u{1f600}\u{7f}\t", &mut out);
        assert_eq!(out, br#""a\"b\\c\u00e9\ud83d\ude00\u007f\t""#);
    }

    #[test]
    fn legends() {
        let e = Encoder::new(&Format::cdx11());
        assert_eq!(e.legend().unwrap(), " CDX N b a m s k r M S V g\n");
        assert_eq!(
            Format::cdx_legend(" CDX N b a m s k r V g").unwrap(),
            Format::cdx9()
        );
        assert!(Format::cdx_legend("N x").is_err());
        assert!(Format::cdx_legend("").is_err());
    }

    #[test]
    fn cdx_line_uses_dashes_for_missing_values() {
        let e = Entry {
            urlkey: "com,example)/".into(),
            timestamp: "20240101000000".into(),
            url: Some("http://example.com/".into()),
            status: Some(String::new()),
            offset: 7,
            filename: "f.warc".into(),
            ..Entry::default()
        };
        let mut out = Vec::new();
        Encoder::new(&Format::cdx11()).encode(&e, &mut out);
        assert_eq!(
            String::from_utf8(out).unwrap(),
            "com,example)/ 20240101000000 http://example.com/ - - - - - - 7 f.warc\n"
        );
    }

    #[test]
    fn cdxj_field_order_and_post_fields() {
        let e = Entry {
            urlkey: "k".into(),
            timestamp: "t".into(),
            url: Some("u".into()),
            mime: Some("m".into()),
            digest: Some("d".into()),
            length: Some(3),
            offset: 4,
            filename: "f".into(),
            request_body: Some(None),
            method: Some("POST".into()),
            ..Entry::default()
        };
        let mut out = Vec::new();
        Encoder::new(&Format::Cdxj).encode(&e, &mut out);
        assert_eq!(
            String::from_utf8(out).unwrap(),
            "k t {\"url\": \"u\", \"mime\": \"m\", \"digest\": \"d\", \"length\": \"3\", \"offset\": \"4\", \"filename\": \"f\", \"requestBody\": null, \"method\": \"POST\"}\n"
        );
    }

    #[test]
    fn entry_fields_are_the_json_objects_fields() {
        let mut e = Entry {
            urlkey: "k".into(),
            timestamp: "t".into(),
            url: Some("u\u{e9}".into()),
            mime: Some("m".into()),
            status: Some("200".into()),
            digest: Some("d".into()),
            length: Some(3),
            offset: 4,
            filename: "f".into(),
            request_body: Some(None),
            method: Some("POST".into()),
            ..Entry::default()
        };
        let names = |e: &Entry, with_key| {
            entry_fields(e, with_key)
                .map(|(n, _)| n)
                .collect::<Vec<_>>()
        };
        assert_eq!(
            names(&e, true),
            [
                "urlkey",
                "timestamp",
                "url",
                "mime",
                "status",
                "digest",
                "length",
                "offset",
                "filename",
                "requestBody",
                "method"
            ]
        );
        assert_eq!(names(&e, false), names(&e, true)[2..]);
        // An entry with every field gives every name there is.
        assert_eq!(entry_field_names().collect::<Vec<_>>(), names(&e, true));
        // The fields, in order, written one by one.
        let object = |e: &Entry, with_key| {
            let mut out = vec![b'{'];
            for (i, (n, v)) in entry_fields(e, with_key).enumerate() {
                if i > 0 {
                    out.extend_from_slice(b", ");
                }
                py_json_str(n, &mut out);
                out.extend_from_slice(b": ");
                v.write_json(&mut out);
            }
            out.extend_from_slice(b"}\n");
            out
        };
        // Both JSON forms are the fields and nothing else: the JSON line's
        // object, and the CDXJ line's after its key; and they parse to the
        // fields' values.
        for entry in [e.clone(), {
            e.request_body = Some(Some("a=1".into()));
            e.length = None;
            e.status = None;
            e
        }] {
            let mut json = Vec::new();
            Encoder::new(&Format::Json).encode(&entry, &mut json);
            assert_eq!(json, object(&entry, true));
            let mut cdxj = Vec::new();
            Encoder::new(&Format::Cdxj).encode(&entry, &mut cdxj);
            assert_eq!(cdxj, [&b"k t "[..], &object(&entry, false)].concat());
            let parsed: serde_json::Map<String, serde_json::Value> =
                serde_json::from_slice(&json).unwrap();
            assert_eq!(parsed.len(), entry_fields(&entry, true).count());
            for (n, v) in entry_fields(&entry, true) {
                let v = v
                    .text()
                    .map_or(serde_json::Value::Null, |t| t.into_owned().into());
                assert_eq!(parsed[n], v, "{n}");
            }
        }
    }
}
