//! Sitemaps (sitemaps.org): `<urlset>` entries are pages (`I` hops,
//! context `sitemap/loc`); `<sitemapindex>` entries are further sitemaps
//! (context `sitemapindex/loc`). Gzipped files (`.xml.gz`) are inflated as
//! they stream. Bounded: [`MAX_SITEMAP_BYTES`] inflated bytes and the
//! protocol's 50,000 URLs a file.

use std::io::Write;

use encoding_rs::UTF_8;
use flate2::write::GzDecoder;
use url::Url;

use super::{Extracted, LinkSet};
use crate::uri::Hop;

/// The most bytes of one sitemap read, inflated (the protocol allows 50
/// MB).
pub const MAX_SITEMAP_BYTES: u64 = 64 << 20;
/// The most URLs taken from one sitemap (the protocol's limit).
pub const MAX_SITEMAP_URLS: usize = 50_000;
/// The longest `<loc>` element held while waiting for its end.
const MAX_LOC: usize = 16 << 10;

/// What a sitemap holds.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SitemapLinks {
    /// Pages (from a `<urlset>`).
    pub urls: Vec<Url>,
    /// Further sitemaps (from a `<sitemapindex>`).
    pub sitemaps: Vec<Url>,
    /// Why reading stopped early, if it did.
    pub stopped: Option<String>,
}

/// The links of a whole sitemap at `base`, `gzipped` or not.
pub fn parse(base: &Url, bytes: &[u8], gzipped: bool) -> SitemapLinks {
    let mut s = SitemapExtractor::new(base);
    s.gzip = Some(gzipped);
    let mut links = LinkSet::new(MAX_SITEMAP_URLS);
    s.write(bytes, &mut links);
    s.finish(&mut links);
    split(links.out)
}

/// Sitemap links split into pages and sitemaps.
pub fn split(e: Extracted) -> SitemapLinks {
    let mut out = SitemapLinks {
        stopped: e.stopped,
        ..SitemapLinks::default()
    };
    for l in e.links {
        if l.context == "sitemapindex/loc" {
            out.sitemaps.push(l.url);
        } else {
            out.urls.push(l.url);
        }
    }
    out
}

/// The streaming sitemap extractor.
pub struct SitemapExtractor {
    /// `None` until the first bytes say (gzip's magic number).
    gzip: Option<bool>,
    /// The first byte, held until the second says whether it is gzip.
    head: Vec<u8>,
    inflater: Option<GzDecoder<Scanner>>,
    scanner: Option<Scanner>,
    stopped: Option<String>,
}

/// The `<loc>` scanner over inflated XML.
struct Scanner {
    base: Url,
    index: Option<bool>,
    carry: Vec<u8>,
    read: u64,
    found: Vec<(String, bool)>,
    full: bool,
}

impl Write for Scanner {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        if self.read + buf.len() as u64 > MAX_SITEMAP_BYTES {
            return Err(std::io::Error::other(format!(
                "sitemap larger than {MAX_SITEMAP_BYTES} bytes"
            )));
        }
        self.read += buf.len() as u64;
        self.carry.extend_from_slice(buf);
        self.scan();
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    memfind(hay, needle)
}

fn memfind(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len())
        .position(|w| w.eq_ignore_ascii_case(needle))
}

impl Scanner {
    fn scan(&mut self) {
        if self.index.is_none() {
            if find(&self.carry, b"<sitemapindex").is_some() {
                self.index = Some(true);
            } else if find(&self.carry, b"<urlset").is_some() {
                self.index = Some(false);
            }
        }
        let mut at = 0;
        while let Some(open) = find(&self.carry[at..], b"<loc>").map(|i| at + i) {
            let from = open + 5;
            let Some(close) = find(&self.carry[from..], b"</loc>").map(|i| from + i) else {
                at = open;
                break;
            };
            if self.found.len() < MAX_SITEMAP_URLS {
                let raw = &self.carry[from..close];
                let text = String::from_utf8_lossy(raw);
                let text = text.trim();
                let text = text
                    .strip_prefix("<![CDATA[")
                    .and_then(|t| t.strip_suffix("]]>"))
                    .map_or_else(|| xml_references(text), str::to_string);
                self.found.push((text, self.index == Some(true)));
            } else {
                self.full = true;
            }
            at = close + 6;
        }
        // Keep from the unfinished `<loc>` on, else a tail that may hold
        // the start of one.
        let keep_from = if find(&self.carry[at..], b"<loc>").is_some() {
            at
        } else {
            self.carry.len().saturating_sub(16).max(at)
        };
        self.carry.drain(..keep_from);
        if self.carry.len() > MAX_LOC {
            // A <loc> of more than 16 KiB: skip it.
            self.carry.clear();
        }
    }
}

impl SitemapExtractor {
    /// An extractor for the sitemap at `base`.
    pub fn new(base: &Url) -> SitemapExtractor {
        SitemapExtractor {
            gzip: None,
            head: Vec::new(),
            inflater: None,
            scanner: Some(Scanner {
                base: base.clone(),
                index: None,
                carry: Vec::new(),
                read: 0,
                found: Vec::new(),
                full: false,
            }),
            stopped: None,
        }
    }

    /// The next piece of the sitemap.
    pub(crate) fn write(&mut self, chunk: &[u8], links: &mut LinkSet) {
        let _ = links;
        if self.stopped.is_some() || chunk.is_empty() {
            return;
        }
        let held;
        let mut chunk = chunk;
        if self.gzip.is_none() {
            self.head.extend_from_slice(&chunk[..chunk.len().min(2)]);
            if self.head.len() < 2 {
                return;
            }
            self.gzip = Some(self.head.starts_with(&[0x1f, 0x8b]));
            // The held byte, if the head took one from an earlier chunk.
            let before = self.head.len() - chunk.len().min(2);
            held = [&self.head[..before], chunk].concat();
            chunk = &held;
        }
        if self.gzip == Some(true)
            && self.inflater.is_none()
            && let Some(s) = self.scanner.take()
        {
            self.inflater = Some(GzDecoder::new(s));
        }
        let r = match (&mut self.inflater, &mut self.scanner) {
            (Some(g), _) => g.write_all(chunk),
            (None, Some(s)) => s.write_all(chunk),
            (None, None) => Ok(()),
        };
        if let Err(e) = r {
            self.stopped = Some(e.to_string());
        }
    }

    /// The end of the sitemap.
    pub(crate) fn finish(mut self, links: &mut LinkSet) {
        if self.gzip.is_none() && !self.head.is_empty() {
            // A one-byte sitemap: not gzip.
            self.gzip = Some(false);
            let head = std::mem::take(&mut self.head);
            self.write(&head, links);
        }
        let scanner = match self.inflater.take() {
            Some(g) => match g.finish() {
                Ok(s) => Some(s),
                Err(e) => {
                    self.stopped.get_or_insert(e.to_string());
                    None
                }
            },
            None => self.scanner.take(),
        };
        let Some(s) = scanner else {
            links.out.stopped = self.stopped;
            return;
        };
        if s.full {
            self.stopped
                .get_or_insert(format!("more than {MAX_SITEMAP_URLS} URLs"));
        }
        for (raw, nested) in s.found {
            let ctx = if nested {
                "sitemapindex/loc"
            } else {
                "sitemap/loc"
            };
            links.add(&s.base, &raw, UTF_8, Hop::Inferred, ctx);
        }
        links.out.stopped = self.stopped;
    }
}

/// `text` with XML's character references decoded: the five predefined
/// names and numeric references (a code point XML does not allow, or
/// none, stays as written). Not HTML's rules (`decode_references` in
/// warchest-html): a sitemap is XML, where `&#150;` is U+0096, not
/// windows-1252's dash, and `&amp` without its `;` is no reference.
fn xml_references(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(amp) = rest.find('&') {
        out.push_str(&rest[..amp]);
        let after = &rest[amp + 1..];
        let decoded = xml_reference(after);
        match decoded {
            Some((c, used)) => {
                out.push(c);
                rest = &after[used..];
            }
            None => {
                out.push('&');
                rest = after;
            }
        }
    }
    out.push_str(rest);
    out
}

/// The reference at the start of `after` (the text after a `&`): its
/// character and the bytes it takes, `;` included.
fn xml_reference(after: &str) -> Option<(char, usize)> {
    // The longest is `#x10FFFF`: 8 bytes before the `;`.
    let semi = after.bytes().take(10).position(|b| b == b';')?;
    let name = &after[..semi];
    let c = match name {
        "amp" => '&',
        "lt" => '<',
        "gt" => '>',
        "quot" => '"',
        "apos" => '\'',
        _ => {
            let num = name.strip_prefix('#')?;
            let (digits, radix) = match num.strip_prefix(['x', 'X']) {
                Some(h) => (h, 16),
                None => (num, 10),
            };
            if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_hexdigit()) {
                return None;
            }
            let n = u32::from_str_radix(digits, radix).ok()?;
            char::from_u32(n).filter(|&c| c != '\0')?
        }
    };
    Some((c, semi + 1))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// XML's references, not HTML's: the five names and numeric ones as
    /// code points; anything else as written.
    #[test]
    fn xml_references_are_xml_s() {
        assert_eq!(
            xml_references("a?x=1&amp;y=2&lt;&gt;&quot;&apos;"),
            "a?x=1&y=2<>\"'"
        );
        assert_eq!(xml_references("&#150;&#x41;&#X42;"), "\u{96}AB");
        for kept in [
            "&amp",
            "&nbsp;",
            "&#0;",
            "&#xD800;",
            "&#;",
            "&",
            "a&b",
            "&#99999999999;",
            "&#+65;",
            "&#x+41;",
            "&#1a;",
            "&#x;",
        ] {
            assert_eq!(xml_references(kept), kept);
        }
        assert_eq!(xml_references("é&amp;é"), "é&é");
        assert_eq!(xml_references("&amp;ééééé"), "&ééééé");
    }

    const INDEX: &str = r#"<?xml version="1.0" encoding="UTF-8"?>
<sitemapindex xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">
  <sitemap><loc>http://h.test/sitemap-1.xml</loc></sitemap>
  <sitemap><loc> http://h.test/sitemap-2.xml.gz </loc><lastmod>2024-01-01</lastmod></sitemap>
</sitemapindex>"#;

    const SET: &str = r#"<?xml version="1.0"?><urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">
<url><loc>http://h.test/a?x=1&amp;y=2</loc></url><url><loc><![CDATA[http://h.test/b]]></loc></url>
<url><loc>/relative</loc></url></urlset>"#;

    fn u(s: &str) -> Url {
        Url::parse(s).unwrap()
    }

    #[test]
    fn index_and_urlset() {
        let base = u("http://h.test/sitemap.xml");
        let i = parse(&base, INDEX.as_bytes(), false);
        assert!(i.urls.is_empty());
        assert_eq!(
            i.sitemaps,
            [
                u("http://h.test/sitemap-1.xml"),
                u("http://h.test/sitemap-2.xml.gz")
            ]
        );
        let s = parse(&base, SET.as_bytes(), false);
        assert_eq!(
            s.urls,
            [
                u("http://h.test/a?x=1&y=2"),
                u("http://h.test/b"),
                u("http://h.test/relative")
            ]
        );
        assert_eq!(s.stopped, None);
    }

    #[test]
    fn gzipped_and_streamed() {
        let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
        gz.write_all(SET.as_bytes()).unwrap();
        let gz = gz.finish().unwrap();
        let base = u("http://h.test/s.xml.gz");
        let whole = parse(&base, &gz, true);
        assert_eq!(whole.urls.len(), 3);
        let mut x =
            super::super::Extractor::new(&base, Some("application/x-gzip"), &Default::default());
        for b in &gz {
            x.write(std::slice::from_ref(b));
        }
        assert_eq!(split(x.finish()), whole);
        // Plain XML a byte at a time.
        let mut x = super::super::Extractor::new(
            &u("http://h.test/s.xml"),
            Some("text/xml"),
            &Default::default(),
        );
        for b in INDEX.as_bytes() {
            x.write(std::slice::from_ref(b));
        }
        assert_eq!(split(x.finish()).sitemaps.len(), 2);
    }

    #[test]
    fn bad_gzip_is_reported() {
        let base = u("http://h.test/s.xml.gz");
        let r = parse(&base, &[0x1f, 0x8b, 8, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9], true);
        assert!(r.stopped.is_some());
        assert!(r.urls.is_empty());
    }

    #[test]
    fn bounded_in_urls() {
        let mut s = String::from("<urlset>");
        for i in 0..MAX_SITEMAP_URLS + 5 {
            s.push_str(&format!("<url><loc>http://h.test/{i}</loc></url>"));
        }
        s.push_str("</urlset>");
        let r = parse(&u("http://h.test/s.xml"), s.as_bytes(), false);
        assert_eq!(r.urls.len(), MAX_SITEMAP_URLS);
        assert!(r.stopped.unwrap().contains("50000"));
    }
}
