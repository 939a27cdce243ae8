//! ARC files (Internet Archive, Burner & Kahle 1996): version 1 (five
//! fields a URL-record line) and version 2 (ten), plain or gzip per record.
//!
//! A file opens with a `filedesc://` record whose content is the version
//! block (`1 0 <origin>` or `2 0 <origin>`, the field names, and for
//! Heritrix's version 1.1 an XML document); each record after it is one
//! URL-record line, `length` bytes of network document (usually an HTTP
//! response with its headers) and a newline.
//!
//! [`Reader`] reads records from any [`Source`](crate::codec::Source) and
//! presents each as the WARC header its conversion carries (see
//! docs/conversion.md) plus the document, streamed. [`ArcHeader`] is one
//! URL-record line with its fields.
//!
//! ```
//! use warchest::arc::Reader;
//! let data = b"filedesc://x.arc 0.0.0.0 20140216050221 text/plain 55\n1 0 Example\nURL IP-address Archive-date Content-type Archive-length\n\nhttp://example.com/ 93.184.216.119 20140216050221 text/html 19\nHTTP/1.0 200 OK\r\n\r\n\n";
//! let mut r = Reader::new(&data[..]);
//! let first = r.next_record()?.expect("filedesc");
//! assert_eq!(first.header().record_type_str().as_deref(), Some("metadata"));
//! drop(first);
//! let rec = r.next_record()?.expect("a capture");
//! assert_eq!(rec.header().target_uri().as_deref(), Some("http://example.com/"));
//! assert_eq!(rec.header().get("WARC-Date").as_deref(), Some("2014-02-16T05:02:21Z"));
//! # Ok::<(), warchest::Error>(())
//! ```

use std::borrow::Cow;
use std::ops::Range;

use crate::fields::Fields;
use crate::warc::{DatePrecision, WarcDate};

mod reader;

pub use reader::{BlockReader, Reader, Record};

/// The ARC format version a URL-record line follows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
pub enum ArcVersion {
    /// Five fields: URL, IP-address, Archive-date, Content-type,
    /// Archive-length.
    V1,
    /// Ten fields: URL, IP-address, Archive-date, Content-type,
    /// Result-code, Checksum, Location, Offset, Filename, Archive-length.
    V2,
}

/// Content-Type of the metadata record holding a `filedesc://` record.
pub const FILEDESC_CONTENT_TYPE: &str = "application/arc";

/// One URL-record line, its fields found from the right (so URLs with
/// spaces survive), raw bytes kept.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ArcHeader {
    raw: Vec<u8>,
    /// The line without its line end.
    line_len: usize,
    fields: Vec<Range<usize>>,
    version: ArcVersion,
}

/// Field positions in a v2 line (v1 has the first four and the last).
const URL: usize = 0;
const IP: usize = 1;
const DATE: usize = 2;
const CONTENT_TYPE: usize = 3;

fn is_scheme_start(url: &[u8]) -> bool {
    let Some(colon) = url.iter().position(|&b| b == b':') else {
        return false;
    };
    colon > 0
        && url[0].is_ascii_alphabetic()
        && url[..colon]
            .iter()
            .all(|&b| b.is_ascii_alphanumeric() || matches!(b, b'+' | b'-' | b'.'))
}

fn all_digits(v: &[u8]) -> bool {
    !v.is_empty() && v.iter().all(u8::is_ascii_digit)
}

/// How sure a parse must be.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Trust {
    /// Where a record is expected: any line with enough fields and a URL.
    Expected,
    /// While searching through damage: the date and length must be numbers
    /// too, so that text is not taken for a record.
    Searching,
}

impl ArcHeader {
    /// Parses a URL-record line (its line end may be included). `prefer` is
    /// the file's version when known. `None` when the line has too few
    /// fields or its first does not look like a URL (`scheme:...`).
    pub fn parse(line: &[u8], prefer: Option<ArcVersion>) -> Option<ArcHeader> {
        ArcHeader::parse_with(line, prefer, Trust::Expected)
    }

    /// [`ArcHeader::parse`] with the given [`Trust`]: recovery searches
    /// damaged bytes with [`Trust::Searching`].
    pub fn parse_with(line: &[u8], prefer: Option<ArcVersion>, trust: Trust) -> Option<ArcHeader> {
        let mut end = line.len();
        while end > 0 && matches!(line[end - 1], b'\n' | b'\r') {
            end -= 1;
        }
        let body = &line[..end];
        let try_v = |v: ArcVersion| ArcHeader::split(body, v, trust);
        let h = match prefer {
            Some(ArcVersion::V2) => try_v(ArcVersion::V2).or_else(|| try_v(ArcVersion::V1)),
            Some(ArcVersion::V1) => try_v(ArcVersion::V1),
            None => {
                let v1 = try_v(ArcVersion::V1);
                // A v1 parse whose URL holds spaces may be a v2 line.
                match v1 {
                    Some(h) if h.url().contains(&b' ') => {
                        let v2 = ArcHeader::split(body, ArcVersion::V2, Trust::Searching)
                            .filter(|h2| !h2.url().contains(&b' '));
                        Some(v2.unwrap_or(h))
                    }
                    other => other,
                }
            }
        }?;
        Some(ArcHeader {
            raw: line.to_vec(),
            line_len: end,
            ..h
        })
    }

    fn split(body: &[u8], version: ArcVersion, trust: Trust) -> Option<ArcHeader> {
        let n = match version {
            ArcVersion::V1 => 5,
            ArcVersion::V2 => 10,
        };
        // Fields from the right; what is left is the URL.
        let mut ends = Vec::with_capacity(n);
        let mut stop = body.len();
        for _ in 0..n - 1 {
            let sp = body[..stop].iter().rposition(|&b| b == b' ')?;
            ends.push(sp + 1..stop);
            stop = sp;
        }
        ends.push(0..stop);
        ends.reverse();
        let get = |i: usize| &body[ends[i].clone()];
        if !is_scheme_start(get(URL)) {
            return None;
        }
        let last = n - 1;
        if version == ArcVersion::V2 {
            let rc = get(4);
            let off = get(7);
            if !(rc == b"-" || (rc.len() == 3 && all_digits(rc)))
                || !(off == b"-" || all_digits(off))
            {
                return None;
            }
        }
        if trust == Trust::Searching {
            let d = get(DATE);
            if !(8..=28).contains(&d.len()) || !all_digits(d) || !all_digits(get(last)) {
                return None;
            }
        }
        // Normalised to ten slots: v1 has no v2 fields.
        let fields = match version {
            ArcVersion::V2 => ends,
            ArcVersion::V1 => {
                let mut v = ends[..4].to_vec();
                v.extend(std::iter::repeat_n(0..0, 5));
                v.push(ends[4].clone());
                v
            }
        };
        Some(ArcHeader {
            raw: body.to_vec(),
            line_len: body.len(),
            fields,
            version,
        })
    }

    fn field(&self, i: usize) -> &[u8] {
        self.fields
            .get(i)
            .and_then(|r| self.raw.get(r.clone()))
            .unwrap_or_default()
    }

    /// A field as written, `None` when it is `-` or empty (the conventions
    /// for "unknown").
    fn known(&self, i: usize) -> Option<&[u8]> {
        let v = self.field(i);
        (!v.is_empty() && v != b"-").then_some(v)
    }

    fn v2(&self, i: usize) -> Option<&[u8]> {
        (self.version == ArcVersion::V2)
            .then(|| self.known(i))
            .flatten()
    }

    /// The line as stored, line end included.
    pub fn raw(&self) -> &[u8] {
        &self.raw
    }

    /// The line without its line end.
    pub fn line(&self) -> &[u8] {
        &self.raw[..self.line_len]
    }

    /// v1 or v2, by the number of fields.
    pub fn version(&self) -> ArcVersion {
        self.version
    }

    /// The URL as written (spaces kept).
    pub fn url(&self) -> &[u8] {
        self.field(URL)
    }

    /// True for the `filedesc://` record that opens a file.
    pub fn is_filedesc(&self) -> bool {
        self.url().len() >= 11 && self.url()[..11].eq_ignore_ascii_case(b"filedesc://")
    }

    /// IP-address as written.
    pub fn ip(&self) -> &[u8] {
        self.field(IP)
    }

    /// Archive-date as written (`YYYYMMDDhhmmss` by the specification).
    pub fn date(&self) -> &[u8] {
        self.field(DATE)
    }

    /// Content-type as written (`no-type` when unknown).
    pub fn content_type(&self) -> &[u8] {
        self.field(CONTENT_TYPE)
    }

    /// Result-code (v2).
    pub fn result_code(&self) -> Option<&[u8]> {
        self.v2(4)
    }

    /// Checksum (v2).
    pub fn checksum(&self) -> Option<&[u8]> {
        self.v2(5)
    }

    /// Location, the redirect target (v2).
    pub fn location(&self) -> Option<&[u8]> {
        self.v2(6)
    }

    /// Offset of the record in its original file (v2).
    pub fn offset(&self) -> Option<&[u8]> {
        self.v2(7)
    }

    /// Filename of the original file (v2).
    pub fn filename(&self) -> Option<&[u8]> {
        self.v2(8)
    }

    /// Archive-length as written.
    pub fn length_field(&self) -> &[u8] {
        self.field(9)
    }

    /// Archive-length, when a number.
    pub fn length(&self) -> Option<u64> {
        let v = self.length_field();
        if !all_digits(v) || v.len() > 20 {
            return None;
        }
        std::str::from_utf8(v).ok()?.parse().ok()
    }

    /// The fields by their specification names (`URL`, `IP-address`,
    /// `Archive-date`, `Content-type`, v2's `Result-code`, `Checksum`,
    /// `Location`, `Offset`, `Filename`, and `Archive-length`), the view
    /// indexers share with WARC and Web InfoMall headers.
    pub fn to_fields(&self) -> Fields {
        let mut f = Fields::new();
        let names: &[(&str, usize)] = match self.version {
            ArcVersion::V1 => &[
                ("URL", 0),
                ("IP-address", 1),
                ("Archive-date", 2),
                ("Content-type", 3),
                ("Archive-length", 9),
            ],
            ArcVersion::V2 => &[
                ("URL", 0),
                ("IP-address", 1),
                ("Archive-date", 2),
                ("Content-type", 3),
                ("Result-code", 4),
                ("Checksum", 5),
                ("Location", 6),
                ("Offset", 7),
                ("Filename", 8),
                ("Archive-length", 9),
            ],
        };
        for (n, i) in names {
            let _ = f.append(n, self.field(*i));
        }
        f
    }

    /// The capture date: `None` when Archive-date is not digits or names
    /// no real time. Fewer than 14 digits are completed with zeros (the
    /// start of the period, as jwarc does), more are cut to 14; the second
    /// value says whether either happened.
    pub fn capture_date(&self) -> Option<(WarcDate, bool)> {
        let d = self.date();
        if d.len() < 8 || !all_digits(d) {
            return None;
        }
        let s = std::str::from_utf8(&d[..d.len().min(14)]).ok()?;
        let mut date = WarcDate::from_timestamp14(s)?;
        date.precision = DatePrecision::Second;
        Some((date, d.len() != 14))
    }

    /// The Content-Type a record with this line gets when its document is
    /// not HTTP: the ARC content-type when it is a media type, `text/dns`
    /// for `dns:` URLs, else `application/octet-stream`.
    pub fn resource_content_type(&self) -> Cow<'_, str> {
        if self.url().len() >= 4 && self.url()[..4].eq_ignore_ascii_case(b"dns:") {
            return Cow::Borrowed("text/dns");
        }
        let ct = self.content_type();
        let media = ct.contains(&b'/')
            && ct.iter().all(|&b| b.is_ascii_graphic() || b == b' ')
            && ct[0].is_ascii_alphabetic();
        if media {
            String::from_utf8_lossy(ct)
        } else {
            Cow::Borrowed("application/octet-stream")
        }
    }
}

/// The WARC header of an ARC record, and the fields its conversion puts
/// into a concurrent metadata record.
pub(crate) fn warc_view(
    h: &ArcHeader,
    record_id: &str,
    http: bool,
    fallback_date: Option<WarcDate>,
    block_len: u64,
) -> (crate::warc::WarcHeader, Fields) {
    use crate::warc::field;
    let filedesc = h.is_filedesc();
    let typ = if filedesc {
        "metadata"
    } else if http {
        "response"
    } else {
        "resource"
    };
    let mut b = crate::view::ViewBuilder::new(typ, record_id);
    let date = h.capture_date();
    let d = date
        .map(|(d, _)| d)
        .or(fallback_date)
        .unwrap_or(WarcDate::EPOCH);
    b.set(field::DATE, d.to_string().as_bytes());
    let (uri, uri_changed) = crate::view::target_uri(h.url());
    b.set(field::TARGET_URI, &uri);
    let ip = crate::view::ip_address(h.ip());
    if let Some(ip) = ip {
        b.set(field::IP_ADDRESS, ip.to_string().as_bytes());
    }
    let ct: Cow<'_, str> = if filedesc {
        Cow::Borrowed(FILEDESC_CONTENT_TYPE)
    } else if http {
        Cow::Borrowed(crate::view::HTTP_RESPONSE)
    } else {
        h.resource_content_type()
    };
    b.set(field::CONTENT_TYPE, ct.as_bytes());
    b.set(field::CONTENT_LENGTH, block_len.to_string().as_bytes());
    let mut left = Fields::new();
    if filedesc {
        // The whole filedesc record is the block: nothing is lost.
        return (b.finish(), left);
    }
    for (name, v) in [
        ("arc-result-code", h.result_code()),
        ("arc-checksum", h.checksum()),
        ("arc-location", h.location()),
        ("arc-offset", h.offset()),
        ("arc-filename", h.filename()),
    ] {
        if let Some(v) = v {
            let _ = left.append(name, v);
        }
    }
    let ip_raw = h.ip();
    let ip_conventional = ip.is_some() || matches!(ip_raw, b"" | b"-" | b"0" | b"0.0.0.0");
    let ct_changed = !http && ct.as_bytes() != h.content_type();
    let altered = !matches!(date, Some((_, false)))
        || uri_changed
        || !ip_conventional
        || h.length().is_none()
        || ct_changed;
    if altered {
        let line: Vec<u8> = h
            .line()
            .iter()
            .map(|&b| if b == b'\r' { b' ' } else { b })
            .collect();
        let _ = left.append("arc-header", line);
    }
    (b.finish(), left)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn v1_v2_and_spaces() {
        let h = ArcHeader::parse(b"http://a/ 1.2.3.4 20140216050221 text/html 10\n", None).unwrap();
        assert_eq!(h.version(), ArcVersion::V1);
        assert_eq!(h.url(), b"http://a/");
        assert_eq!(h.length(), Some(10));
        assert_eq!(
            h.capture_date().unwrap().0.to_string(),
            "2014-02-16T05:02:21Z"
        );
        let h = ArcHeader::parse(
            b"http://a/b c d 1.2.3.4 20140216050221 text/html 10\r\n",
            None,
        )
        .unwrap();
        assert_eq!(h.url(), b"http://a/b c d");
        assert_eq!(
            h.line(),
            b"http://a/b c d 1.2.3.4 20140216050221 text/html 10"
        );
        let v2 = b"http://a/ 1.2.3.4 20140216050221 text/html 200 abc http://b/ 1234 x.arc 10\n";
        let h = ArcHeader::parse(v2, None).unwrap();
        assert_eq!(h.version(), ArcVersion::V2);
        assert_eq!(h.result_code(), Some(b"200".as_slice()));
        assert_eq!(h.location(), Some(b"http://b/".as_slice()));
        assert_eq!(h.filename(), Some(b"x.arc".as_slice()));
        assert_eq!(h.to_fields().len(), 10);
        let h = ArcHeader::parse(v2, Some(ArcVersion::V2)).unwrap();
        assert_eq!(h.offset(), Some(b"1234".as_slice()));
        // Empty content-type (double space) and dashes.
        let h = ArcHeader::parse(b"http://a/ - 20140216050221  10\n", None).unwrap();
        assert_eq!(h.content_type(), b"");
        assert_eq!(h.resource_content_type(), "application/octet-stream");
        assert!(ArcHeader::parse(b"not a record line\n", None).is_none());
        assert!(ArcHeader::parse(b"<html> 1 2 3 4\n", None).is_none());
    }

    #[test]
    fn dates() {
        let d = |s: &str| {
            let line = format!("http://a/ 1.2.3.4 {s} text/html 1");
            ArcHeader::parse(line.as_bytes(), None)
                .unwrap()
                .capture_date()
                .map(|(d, changed)| (d.to_string(), changed))
        };
        assert_eq!(
            d("200101211835"),
            Some(("2001-01-21T18:35:00Z".into(), true))
        );
        assert_eq!(
            d("201404010000000000"),
            Some(("2014-04-01T00:00:00Z".into(), true))
        );
        assert_eq!(d("20010121"), Some(("2001-01-21T00:00:00Z".into(), true)));
        assert_eq!(d("-"), None);
        assert_eq!(d("2001"), None);
        assert_eq!(d("20011321000000"), None);
    }

    #[test]
    fn searching_is_stricter() {
        let line = b"http://a/ 1.2.3.4 notadate text/html 1";
        assert!(ArcHeader::parse_with(line, None, Trust::Expected).is_some());
        assert!(ArcHeader::parse_with(line, None, Trust::Searching).is_none());
        assert_eq!(
            ArcHeader::parse(b"dns:a.b 1.2.3.4 20140216050221 text/dns 5", None)
                .unwrap()
                .resource_content_type(),
            "text/dns"
        );
    }
}
