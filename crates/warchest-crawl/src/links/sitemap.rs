//! Sitemaps (sitemaps.org): `<urlset>` entries are pages (`I` hops,
//! context `sitemap/loc`); `<sitemapindex>` entries are further sitemaps
//! (context `sitemapindex/loc`). Gzipped files (`.xml.gz`) are inflated as
//! they stream. Bounded: [`MAX_SITEMAP_BYTES`] inflated bytes and the
//! protocol's 50,000 URLs a file.

use std::io::Write;

use encoding_rs::UTF_8;
use flate2::write::GzDecoder;
use url::Url;

use super::{Extracted, LinkSet, StopReason, Stopped};
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
    pub stopped: Option<Stopped>,
    /// `<loc>` values not taken: longer than the bound held, or URLs too
    /// long to keep.
    pub dropped: usize,
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
        dropped: e.dropped,
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
    stopped: Option<Stopped>,
}

/// The `<loc>` scanner over inflated XML.
struct Scanner {
    base: Url,
    index: Option<bool>,
    carry: Vec<u8>,
    read: u64,
    found: Vec<(String, bool)>,
    /// `<loc>` values past [`MAX_SITEMAP_URLS`].
    over: usize,
    /// `<loc>` values longer than [`MAX_LOC`], skipped.
    too_long: usize,
    /// More than [`MAX_SITEMAP_BYTES`] came.
    too_big: bool,
}

impl Write for Scanner {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        if self.read + buf.len() as u64 > MAX_SITEMAP_BYTES {
            self.too_big = true;
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
                self.over += 1;
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
            // A <loc> of more than 16 KiB: skipped, and counted.
            self.carry.clear();
            self.too_long += 1;
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
                over: 0,
                too_long: 0,
                too_big: false,
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
            let too_big = match (&self.inflater, &self.scanner) {
                (Some(g), _) => g.get_ref().too_big,
                (None, Some(s)) => s.too_big,
                (None, None) => false,
            };
            let why = if too_big {
                StopReason::Size
            } else {
                StopReason::Decode
            };
            self.stopped = Some(Stopped::new(why, e.to_string()));
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
        // A gzip stream that fails to finish (cut, or corrupt) keeps the
        // URLs inflated before the failure.
        let mut inflater = self.inflater.take();
        if let Some(g) = inflater.as_mut()
            && let Err(e) = g.try_finish()
        {
            self.stopped
                .get_or_insert_with(|| Stopped::new(StopReason::Decode, e.to_string()));
        }
        let scanner = match inflater.as_mut() {
            Some(g) => Some(g.get_mut()),
            None => self.scanner.as_mut(),
        };
        let Some(s) = scanner else {
            links.out.stopped = self.stopped;
            return;
        };
        if s.over > 0 {
            self.stopped.get_or_insert_with(|| {
                Stopped::new(
                    StopReason::Urls,
                    format!(
                        "more than {MAX_SITEMAP_URLS} URLs ({} more not taken)",
                        s.over
                    ),
                )
            });
        }
        links.out.dropped += s.too_long;
        let base = s.base.clone();
        for (raw, nested) in std::mem::take(&mut s.found) {
            let ctx = if nested {
                "sitemapindex/loc"
            } else {
                "sitemap/loc"
            };
            links.add(&base, &raw, UTF_8, Hop::Inferred, ctx);
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
        assert_eq!(r.stopped.map(|s| s.why), Some(StopReason::Decode));
        assert!(r.urls.is_empty());
    }

    /// A gzipped sitemap cut short (a response truncated by `max-size`)
    /// keeps the URLs inflated before the cut, and says it stopped.
    #[test]
    fn a_cut_gzip_keeps_what_came_before() {
        let mut s = String::from("<urlset>");
        for i in 0..2000 {
            s.push_str(&format!("<url><loc>http://h.test/{i}</loc></url>"));
        }
        let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
        gz.write_all(s.as_bytes()).unwrap();
        let gz = gz.finish().unwrap();
        let r = parse(&u("http://h.test/s.xml.gz"), &gz[..gz.len() - 20], true);
        assert_eq!(r.stopped.map(|s| s.why), Some(StopReason::Decode));
        assert!(r.urls.len() > 1000, "{}", r.urls.len());
    }

    /// A `<loc>` longer than the bound held is skipped and counted; the
    /// next one is read.
    #[test]
    fn an_overlong_loc_is_counted() {
        let long = format!("http://h.test/{}", "a".repeat(MAX_LOC + 10));
        let s = format!(
            "<urlset><url><loc>{long}</loc></url><url><loc>http://h.test/next</loc></url></urlset>"
        );
        // Whole, the long URL is seen and dropped for its length; in
        // pieces, the scanner lets go of it past MAX_LOC.
        let r = parse(&u("http://h.test/s.xml"), s.as_bytes(), false);
        assert_eq!(r.urls, [u("http://h.test/next")]);
        assert_eq!(r.dropped, 1);
        assert_eq!(r.stopped, None);
        let mut x = super::super::Extractor::new(
            &u("http://h.test/s.xml"),
            Some("text/xml"),
            &Default::default(),
        );
        for c in s.as_bytes().chunks(1024) {
            x.write(c);
        }
        let r = split(x.finish());
        assert_eq!(r.urls, [u("http://h.test/next")]);
        assert_eq!(r.dropped, 1);
    }

    /// A sitemap over [`MAX_SITEMAP_BYTES`] stops for its size, not as
    /// a decoding failure.
    #[test]
    fn over_its_size_stops_for_size() {
        let base = u("http://h.test/s.xml");
        let mut x = super::super::Extractor::new(&base, Some("text/xml"), &Default::default());
        x.write(b"<urlset><url><loc>http://h.test/1</loc></url>");
        let pad = vec![b' '; 1 << 20];
        for _ in 0..(MAX_SITEMAP_BYTES >> 20) {
            x.write(&pad);
        }
        let e = x.finish();
        assert_eq!(e.stopped.map(|s| s.why), Some(StopReason::Size));
        assert_eq!(e.links.len(), 1);
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
        let stop = r.stopped.unwrap();
        assert_eq!(stop.why, StopReason::Urls);
        assert!(stop.detail.contains("50000"), "{stop}");
        assert!(stop.detail.contains("5 more"), "{stop}");
    }
}
