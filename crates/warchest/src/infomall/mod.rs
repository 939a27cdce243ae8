//! Web InfoMall (Tianwang) page storage, as the Peking University network
//! lab specified it (V1.0, April 2003) and as its crawlers wrote it.
//!
//! A file is a run of records, each a header of `name:value` properties
//! (`version` first, `length` last, one per LF-ended line), a blank line,
//! `length` bytes of content (the full HTTP response, zlib-compressed when
//! `unzip-length` is present) and a blank line.
//!
//! - [`Reader`] reads records from any [`Source`](crate::codec::Source),
//!   presents each as the WARC header its conversion carries plus the
//!   content, decompressed and streamed.
//! - [`Writer`] writes records, compressed or not, properties in the
//!   specification's order.
//! - [`Header`] is one record's properties, raw bytes kept.
//!
//! ```
//! use std::io::Read;
//! use warchest::infomall::{Reader, Writer, Properties};
//! let mut file = Vec::new();
//! let mut w = Writer::new(&mut file);
//! let props = Properties::new("http://example.com/", "Tue, 28 Feb 2006 05:42:09 GMT");
//! w.write(&props, &mut &b"HTTP/1.1 200 OK\r\n\r\nhi"[..], true)?;
//! let mut r = Reader::new(&file[..]);
//! let mut rec = r.next_record()?.expect("one record");
//! assert_eq!(rec.header().target_uri().as_deref(), Some("http://example.com/"));
//! let mut content = Vec::new();
//! rec.block().read_to_end(&mut content)?;
//! assert_eq!(content, b"HTTP/1.1 200 OK\r\n\r\nhi");
//! # Ok::<(), warchest::Error>(())
//! ```

use std::borrow::Cow;

use crate::fields::{Field, Fields};
use crate::warc::{WarcDate, WarcHeader, field};

mod date;
mod reader;
mod writer;

pub use date::{format_date, parse_date};
pub use reader::{BlockReader, Reader, Record};
pub use writer::{Properties, Writer};

/// The property names of version 1.0.
pub mod property {
    /// The record format version (first property).
    pub const VERSION: &str = "version";
    /// The URL fetched (after redirects).
    pub const URL: &str = "url";
    /// The URL first asked for, when a redirect was followed.
    pub const ORIGIN: &str = "origin";
    /// The capture time, RFC 822.
    pub const DATE: &str = "date";
    /// The name `date` had before February 2004.
    pub const TIME: &str = "time";
    /// The server's address (or host name, or `unknown`).
    pub const IP: &str = "ip";
    /// The content's length before compression; present only when the
    /// content is compressed.
    pub const UNZIP_LENGTH: &str = "unzip-length";
    /// The content's length as stored (last property).
    pub const LENGTH: &str = "length";

    /// Every property version 1.0 names.
    pub const KNOWN: &[&str] = &[VERSION, URL, ORIGIN, DATE, TIME, IP, UNZIP_LENGTH, LENGTH];
}

/// One record's header: its properties, raw bytes kept (the blank line
/// that ends it included).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Header {
    pub(crate) fields: Fields,
}

fn parse_len(v: &[u8]) -> Option<u64> {
    let v = v.trim_ascii();
    if v.is_empty() || v.len() > 20 || !v.iter().all(u8::is_ascii_digit) {
        return None;
    }
    std::str::from_utf8(v).ok()?.parse().ok()
}

impl Header {
    /// Parses a header block (properties up to the blank line). Lenient:
    /// see [`Reader`] for what is reported.
    pub fn parse(block: &[u8]) -> Header {
        let mut issues = Vec::new();
        let fields =
            Fields::parse(block.to_vec(), 0, false, usize::MAX, &mut issues).unwrap_or_default();
        Header { fields }
    }

    /// The properties.
    pub fn fields(&self) -> &Fields {
        &self.fields
    }

    /// The header as stored, first property to blank line.
    pub fn as_bytes(&self) -> &[u8] {
        self.fields.as_bytes()
    }

    /// The value of a property as stored (leading white space after the
    /// colon and the line end removed), first of that name.
    pub fn get(&self, name: &str) -> Option<Cow<'_, [u8]>> {
        self.fields.value_bytes(name)
    }

    /// `version`.
    pub fn version(&self) -> Option<Cow<'_, [u8]>> {
        self.get(property::VERSION)
    }

    /// `url`.
    pub fn url(&self) -> Option<Cow<'_, [u8]>> {
        self.get(property::URL)
    }

    /// `origin`.
    pub fn origin(&self) -> Option<Cow<'_, [u8]>> {
        self.get(property::ORIGIN)
    }

    /// The capture time as written: `date`, or its old name `time`.
    pub fn date_value(&self) -> Option<Cow<'_, [u8]>> {
        self.get(property::DATE)
            .or_else(|| self.get(property::TIME))
    }

    /// The capture time, parsed (RFC 822 / 1123 and the variants real
    /// writers used; see [`parse_date`]).
    pub fn date(&self) -> Option<WarcDate> {
        let v = self.date_value()?;
        parse_date(std::str::from_utf8(&v).ok()?)
    }

    /// `ip`, as written (an address, a host name or `unknown`).
    pub fn ip(&self) -> Option<Cow<'_, [u8]>> {
        self.get(property::IP)
    }

    /// `unzip-length`: `None` when absent, `Some(None)` when not a number.
    pub fn unzip_length(&self) -> Option<Option<u64>> {
        self.get(property::UNZIP_LENGTH).map(|v| parse_len(&v))
    }

    /// `length`, when present and a number.
    pub fn length(&self) -> Option<u64> {
        self.get(property::LENGTH).and_then(|v| parse_len(&v))
    }

    /// Properties version 1.0 does not name, in order.
    pub fn unknown(&self) -> impl Iterator<Item = Field<'_>> + '_ {
        self.fields
            .iter()
            .filter(|f| !property::KNOWN.iter().any(|k| f.is(k)))
    }

    /// The WARC header of this record as conversion writes it (record id
    /// from `label`, `offset`, `in_member`); `http` says whether the content
    /// is an HTTP response, `content_length` is the decompressed length.
    pub(crate) fn warc_view(&self, record_id: &str, http: bool, content_length: u64) -> WarcHeader {
        let typ = if http { "response" } else { "resource" };
        let mut b = crate::view::ViewBuilder::new(typ, record_id);
        b.set(field::DATE, self.warc_date().to_string().as_bytes());
        if let Some(u) = self.url() {
            b.set(field::TARGET_URI, &crate::view::target_uri(&u).0);
        }
        if let Some(ip) = self.ip().and_then(|v| crate::view::ip_address(&v)) {
            b.set(field::IP_ADDRESS, ip.to_string().as_bytes());
        }
        let ct = if http {
            crate::view::HTTP_RESPONSE
        } else {
            "application/octet-stream"
        };
        b.set(field::CONTENT_TYPE, ct.as_bytes());
        b.set(field::CONTENT_LENGTH, content_length.to_string().as_bytes());
        b.finish()
    }

    /// WARC-Date: the capture time, or the Unix epoch when it is missing or
    /// does not parse (the raw value then goes into the metadata record).
    pub fn warc_date(&self) -> WarcDate {
        self.date().unwrap_or(WarcDate::EPOCH)
    }

    /// The properties WARC has no field for, or whose WARC field would not
    /// give them back byte for byte: `origin`, unknown properties, and
    /// `version`, `url`, `date`/`time` and `ip` when their WARC form
    /// differs from what is written. Conversion puts them into a `metadata`
    /// record (`application/warc-fields`), named as here; conversion back
    /// to Web InfoMall takes them from there.
    pub fn leftovers(&self) -> Fields {
        let mut out = Fields::new();
        let mut keep = |f: Field<'_>| {
            let _ = out.append(&f.name_str().to_ascii_lowercase(), f.value());
        };
        for f in self.fields.iter() {
            let v = f.value();
            let kept = if f.is(property::VERSION) {
                v.as_ref() != b"1.0"
            } else if f.is(property::URL) {
                crate::view::target_uri(&v).1
            } else if f.is(property::DATE) || f.is(property::TIME) {
                // The date comes back from WARC-Date as RFC 1123 GMT.
                f.is(property::TIME)
                    || std::str::from_utf8(&v)
                        .ok()
                        .and_then(parse_date)
                        .is_none_or(|d| format_date(&d).as_bytes() != v.as_ref())
            } else if f.is(property::IP) {
                crate::view::ip_address(&v).is_none_or(|ip| ip.to_string().as_bytes() != v.as_ref())
            } else {
                !f.is(property::UNZIP_LENGTH) && !f.is(property::LENGTH)
            };
            if kept {
                keep(f);
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn header_accessors_and_leftovers() {
        let h = Header::parse(
            b"version: 1.0\nurl: http://a/b\norigin: http://a/\ndate: Tue, 28 Feb 2006 05:42:09 GMT\nip: host.example\nx-crawler: tse\nlength: 10\n\n",
        );
        assert_eq!(h.url().as_deref(), Some(b"http://a/b".as_slice()));
        assert_eq!(h.length(), Some(10));
        assert_eq!(h.unzip_length(), None);
        assert_eq!(h.date().unwrap().to_string(), "2006-02-28T05:42:09Z");
        let names: Vec<String> = h
            .leftovers()
            .iter()
            .map(|f| f.name_str().into_owned())
            .collect();
        assert_eq!(names, ["origin", "ip", "x-crawler"]);
        let h = Header::parse(b"version:1.0\nurl:http://a/\ntime:Tue, 28 Feb 2006 05:42:09 GMT\nip:1.2.3.4\nunzip-length:x\nlength:1\n\n");
        assert_eq!(h.unzip_length(), Some(None));
        assert_eq!(h.ip().as_deref(), Some(b"1.2.3.4".as_slice()));
        let names: Vec<String> = h
            .leftovers()
            .iter()
            .map(|f| f.name_str().into_owned())
            .collect();
        assert_eq!(names, ["time"]);
    }
}
