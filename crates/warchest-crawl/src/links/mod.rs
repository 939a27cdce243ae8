//! Links from what a crawl fetches, streamed: HTML (lol_html), CSS files,
//! sitemaps (plain or gzipped), and optionally script text; plus the
//! `Location`, `Refresh` and `Link` headers ([`headers`]).
//!
//! Feed an [`Extractor`] the payload (transfer and content codings undone)
//! in pieces with [`Extractor::write`], then [`Extractor::finish`]. Memory
//! is bounded: links per page, carried text, and lol_html's own memory.
//!
//! URLs resolve as browsers resolve them (the url crate, WHATWG): against
//! the page's URL or its `<base href>`, with the page's charset used for
//! the query of a URL in a non-UTF-8 page, and the path and host encoded as
//! UTF-8 (percent-encoded, and IDNA for hosts). Fragments are dropped;
//! only http and https URLs are kept.

use std::collections::HashMap;

use encoding_rs::Encoding;
use serde::Deserialize;
use url::Url;

use crate::uri::Hop;

pub mod css;
pub mod headers;
pub mod html;
pub mod js;
pub mod sitemap;

/// Extraction settings: keys of the crawl's TOML file, and flags of the
/// same names.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "kebab-case", deny_unknown_fields, default)]
pub struct ExtractConfig {
    /// Follow the actions of `<form method=get>` (off, as Heritrix's
    /// `extractOnlyFormGets` with form extraction off by default).
    pub forms: bool,
    /// Look for URLs in script text and `.js` files, at low priority (off,
    /// as Heritrix's ExtractorJS is off in Browsertrix-like setups: it
    /// guesses, and many guesses are 404s).
    pub js: bool,
    /// The most links kept from one page or file; more are counted in
    /// [`Extracted::dropped`].
    pub max_links_per_page: usize,
    /// The most bytes of a response's payload (content coding undone)
    /// read for links, 64 MiB; past it extraction stops
    /// ([`StopReason::Size`], crawl.log's `linksStopped:size`), the links
    /// before kept. 0: no bound.
    pub max_extract_bytes: u64,
}

impl Default for ExtractConfig {
    fn default() -> ExtractConfig {
        ExtractConfig {
            forms: false,
            js: false,
            max_links_per_page: 10_000,
            max_extract_bytes: 64 << 20,
        }
    }
}

/// A URL found in a page, file or header.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Link {
    /// The URL, absolute, without fragment.
    pub url: Url,
    /// How it is reached from the page.
    pub hop: Hop,
    /// Where it was found, in Heritrix's style: `a/@href`, `img/@srcset`,
    /// `css/@import`, `css/url()`, `header/Location`, `sitemap/loc`,
    /// `sitemapindex/loc` (a nested sitemap), `script/text`...
    pub context: &'static str,
}

/// What an extractor found.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Extracted {
    /// The links, each URL once (its first occurrence), in document order,
    /// at most `max-links-per-page`.
    pub links: Vec<Link>,
    /// Links found past `max-links-per-page`, or URLs too long to keep.
    pub dropped: usize,
    /// `<meta name=robots content=nofollow>` (or `none`): the page's links
    /// are not to be followed (its embeds still are).
    pub nofollow: bool,
    /// `<meta name=robots content=noindex>` (or `none`).
    pub noindex: bool,
    /// The page's `<title>`, white space collapsed, at most 1 KiB.
    pub title: Option<String>,
    /// The `<base href>` the page's links were resolved against, when it
    /// has one.
    pub base: Option<Url>,
    /// URLs found again as embeds after their first occurrence (kept in
    /// [`Extracted::links`] as it was): a lightbox's
    /// `<a href=x.jpg><img src=x.jpg></a>` is an embed of its page too.
    pub also_embedded: Vec<Url>,
    /// Why extraction stopped before the payload's end, if it did: the
    /// links before are kept, the rest of the payload was not looked at.
    pub stopped: Option<Stopped>,
}

/// Why link extraction stopped before the end of a payload.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Stopped {
    /// The kind of stop, one word (crawl.log's `linksStopped:` annotation).
    pub why: StopReason,
    /// What happened, for a person.
    pub detail: String,
}

impl Stopped {
    /// A stop for `why`, described by `detail`.
    pub fn new(why: StopReason, detail: impl Into<String>) -> Stopped {
        Stopped {
            why,
            detail: detail.into(),
        }
    }
}

impl std::fmt::Display for Stopped {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.why.as_str(), self.detail)
    }
}

/// The kinds of [`Stopped`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StopReason {
    /// The HTML tokenizer's memory bound (a tag or text run of megabytes).
    Memory,
    /// The payload is larger than what extraction reads of it.
    Size,
    /// A sitemap with more URLs than the protocol allows.
    Urls,
    /// The payload did not decode (content coding, gzip).
    Decode,
    /// The recorded payload could not be read back.
    Read,
    /// Anything else the HTML tokenizer refused: not expected, as lol_html
    /// runs lenient (not strict: no parsing-ambiguity errors) and the
    /// extractor's handlers never fail.
    Parse,
}

impl StopReason {
    /// The word crawl.log writes.
    pub fn as_str(self) -> &'static str {
        match self {
            StopReason::Memory => "memory",
            StopReason::Size => "size",
            StopReason::Urls => "urls",
            StopReason::Decode => "decode",
            StopReason::Read => "read",
            StopReason::Parse => "parse",
        }
    }
}

/// The longest URL kept, in bytes (longer ones are counted as dropped).
pub const MAX_URL_LEN: usize = 8192;

/// What kind of content a payload is, for extraction.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ContentKind {
    /// HTML or XHTML.
    Html,
    /// A style sheet.
    Css,
    /// A script.
    Js,
    /// An XML sitemap or sitemap index (maybe gzipped).
    Sitemap,
    /// Nothing links are taken from.
    Other,
}

impl ContentKind {
    /// The kind of a payload of media type `content_type` (parameters
    /// allowed) at `url`. Without a type, a URL ending in `.xml` or
    /// `.xml.gz` is a sitemap; anything else is sniffed as HTML when it
    /// starts with `<`.
    pub fn of(url: &Url, content_type: Option<&str>) -> Option<ContentKind> {
        let path = url.path().to_ascii_lowercase();
        let xml_path = path.ends_with(".xml") || path.ends_with(".xml.gz");
        let Some(ct) = content_type else {
            return xml_path.then_some(ContentKind::Sitemap);
        };
        if warchest::http::is_html_type(Some(ct), false) {
            return Some(ContentKind::Html);
        }
        let mime = warchest::http::media_type_token(ct).to_ascii_lowercase();
        Some(match mime.as_str() {
            "text/css" => ContentKind::Css,
            "application/javascript"
            | "text/javascript"
            | "application/x-javascript"
            | "application/ecmascript"
            | "text/ecmascript" => ContentKind::Js,
            "application/xml" | "text/xml" => ContentKind::Sitemap,
            "application/gzip" | "application/x-gzip" | "application/octet-stream" if xml_path => {
                ContentKind::Sitemap
            }
            _ => ContentKind::Other,
        })
    }
}

/// The links found so far, deduplicated and bounded.
#[derive(Debug)]
pub(crate) struct LinkSet {
    max: usize,
    /// Each URL kept, with its index in `out.links`.
    seen: HashMap<String, usize>,
    pub(crate) out: Extracted,
}

impl LinkSet {
    pub(crate) fn new(max: usize) -> LinkSet {
        LinkSet {
            max,
            seen: HashMap::new(),
            out: Extracted::default(),
        }
    }

    /// Adds `url` unless seen or over the bound. A URL first found as an
    /// embed, a prerequisite or in script text and then as a link (`L`,
    /// `I`) takes the link's hop: a page may frame or preload what it also
    /// links to, and the link makes it a page (docs/crawl.md, "Pages and
    /// resources"); an embed stays in [`Extracted::also_embedded`].
    pub(crate) fn push(&mut self, url: Url, hop: Hop, context: &'static str) {
        if let Some(&i) = self.seen.get(url.as_str()) {
            let first = &mut self.out.links[i];
            let navigable = |h: Hop| matches!(h, Hop::Link | Hop::Inferred);
            let was = first.hop;
            if navigable(hop) && !navigable(was) && was != Hop::Redirect {
                (first.hop, first.context) = (hop, context);
            }
            // A link the page also embeds (a lightbox's image), or an
            // embed it also links to: a browser fetches it with the
            // page, so it is not a page to load there.
            let embedded = hop == Hop::Embed || (was == Hop::Embed && first.hop != Hop::Embed);
            if embedded && self.out.also_embedded.len() < self.max {
                self.out.also_embedded.push(url);
            }
            return;
        }
        if self.out.links.len() >= self.max || url.as_str().len() > MAX_URL_LEN {
            self.out.dropped += 1;
            return;
        }
        self.seen
            .insert(url.as_str().to_string(), self.out.links.len());
        self.out.links.push(Link { url, hop, context });
    }

    /// Resolves `raw` against `base` and adds it.
    pub(crate) fn add(
        &mut self,
        base: &Url,
        raw: &str,
        enc: &'static Encoding,
        hop: Hop,
        context: &'static str,
    ) {
        if raw.len() > MAX_URL_LEN {
            self.out.dropped += 1;
            return;
        }
        if let Some(u) = resolve(base, raw, enc) {
            self.push(u, hop, context);
        }
    }
}

/// `raw` (an attribute value, entities decoded) resolved against `base` as
/// a browser does, the query encoded in `enc` (warchest-html's
/// [`warchest_html::resolve_url`], the one replay rewrites by); `None` for
/// non-http(s) results, empty references and fragments of the page itself.
pub fn resolve(base: &Url, raw: &str, enc: &'static Encoding) -> Option<Url> {
    // HTML strips ASCII white space around URLs, and removes tabs and
    // newlines inside (the url crate does the latter).
    let raw = raw.trim_matches(|c: char| c.is_ascii_whitespace());
    if raw.is_empty() || raw.starts_with('#') {
        return None;
    }
    let mut u = warchest_html::resolve_url(Some(base), raw, enc)?;
    if !matches!(u.scheme(), "http" | "https") || u.host_str().is_none_or(str::is_empty) {
        return None;
    }
    u.set_fragment(None);
    Some(u)
}

/// The encoding a `charset` label names, if encoding_rs knows it. UTF-16
/// labels mean UTF-8 for URLs, as in browsers (warchest-html's, which
/// replay reads labels with too).
pub use warchest_html::encoding_for_label;

/// The encoding the `charset` parameter of a Content-Type value names,
/// for reading URLs (UTF-16 means UTF-8: [`encoding_for_label`]). The
/// parameter is found as [`warchest::http::content_type_charset`] finds
/// it, so the crawler reads a header as every other reader does.
pub fn charset_of_content_type(ct: &str) -> Option<&'static Encoding> {
    encoding_for_label(&warchest::http::content_type_charset(ct.as_bytes())?)
}

/// A streaming link extractor for one payload.
pub struct Extractor {
    inner: Inner,
    links: Option<LinkSet>,
    /// Payload bytes still to be read for links (`max-extract-bytes`).
    left: u64,
    /// The bound `left` started from, for the stop's detail.
    bound: u64,
    /// Bytes came past the bound: extraction stopped there.
    past: bool,
}

enum Inner {
    Html(Box<html::HtmlExtractor>),
    Css(css::CssExtractor),
    Js(js::JsExtractor),
    Sitemap(Box<sitemap::SitemapExtractor>),
    /// Not known yet: the first bytes decide (HTML if `<`).
    Sniff(Url, Option<&'static Encoding>, ExtractConfig, Vec<u8>),
    None,
}

impl std::fmt::Debug for Extractor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let kind = match &self.inner {
            Inner::Html(_) => "html",
            Inner::Css(_) => "css",
            Inner::Js(_) => "js",
            Inner::Sitemap(_) => "sitemap",
            Inner::Sniff(..) => "sniff",
            Inner::None => "none",
        };
        f.debug_struct("Extractor").field("kind", &kind).finish()
    }
}

impl Extractor {
    /// An extractor for the payload of `base` (the URL fetched, after
    /// redirects), of media type `content_type` (its `charset` is used).
    pub fn new(base: &Url, content_type: Option<&str>, opts: &ExtractConfig) -> Extractor {
        let enc = content_type.and_then(charset_of_content_type);
        let links = LinkSet::new(opts.max_links_per_page);
        let inner = match ContentKind::of(base, content_type) {
            Some(ContentKind::Html) => {
                Inner::Html(Box::new(html::HtmlExtractor::new(base, enc, opts)))
            }
            Some(ContentKind::Css) => Inner::Css(css::CssExtractor::new(base, enc, "css")),
            Some(ContentKind::Js) if opts.js => Inner::Js(js::JsExtractor::new(base)),
            Some(ContentKind::Sitemap) => {
                Inner::Sitemap(Box::new(sitemap::SitemapExtractor::new(base)))
            }
            Some(_) => Inner::None,
            None => Inner::Sniff(base.clone(), enc, opts.clone(), Vec::new()),
        };
        let bound = match opts.max_extract_bytes {
            0 => u64::MAX,
            m => m,
        };
        Extractor {
            inner,
            links: Some(links),
            left: bound,
            bound,
            past: false,
        }
    }

    /// True once bytes came past `max-extract-bytes`: whatever more is
    /// written is not looked at, so a caller may stop reading the payload.
    pub fn is_past_bound(&self) -> bool {
        self.past
    }

    /// The next piece of the payload. Past `max-extract-bytes` in all,
    /// nothing more is read ([`StopReason::Size`]).
    pub fn write(&mut self, chunk: &[u8]) {
        let n = usize::try_from(self.left).map_or(chunk.len(), |l| l.min(chunk.len()));
        if n < chunk.len() {
            self.past = true;
        }
        self.left -= n as u64;
        let chunk = &chunk[..n];
        if chunk.is_empty() {
            return;
        }
        let Some(links) = self.links.as_mut() else {
            return;
        };
        match &mut self.inner {
            Inner::Html(h) => h.write(chunk, links),
            Inner::Css(c) => c.write(chunk, links),
            Inner::Js(j) => j.write(chunk, links),
            Inner::Sitemap(s) => s.write(chunk, links),
            Inner::Sniff(base, enc, opts, head) => {
                // Only leading white space is ever held, so dropping it
                // once the kind is known loses nothing.
                head.extend_from_slice(&chunk[..chunk.len().min(1024)]);
                let first = head.iter().find(|b| !b.is_ascii_whitespace()).copied();
                if first.is_none() && head.len() < 1024 {
                    return;
                }
                let next = if first == Some(b'<') {
                    Inner::Html(Box::new(html::HtmlExtractor::new(base, *enc, opts)))
                } else {
                    Inner::None
                };
                self.inner = next;
                if let Inner::Html(h) = &mut self.inner {
                    h.write(chunk, links);
                }
            }
            Inner::None => {}
        }
    }

    /// The end of the payload: what was found.
    pub fn finish(mut self) -> Extracted {
        let mut links = self.links.take().unwrap_or_else(|| LinkSet::new(0));
        match self.inner {
            Inner::Html(h) => h.finish(&mut links),
            Inner::Css(c) => c.finish(&mut links),
            Inner::Js(j) => j.finish(&mut links),
            Inner::Sitemap(s) => s.finish(&mut links),
            Inner::Sniff(..) | Inner::None => {}
        }
        let mut out = links.out;
        if self.past && out.stopped.is_none() {
            out.stopped = Some(Stopped::new(
                StopReason::Size,
                format!(
                    "links read from the first {} bytes of the payload",
                    self.bound
                ),
            ));
        }
        out
    }
}

/// All links of a whole payload: [`Extractor`] in one call.
pub fn extract(
    base: &Url,
    content_type: Option<&str>,
    opts: &ExtractConfig,
    body: &[u8],
) -> Extracted {
    let mut x = Extractor::new(base, content_type, opts);
    x.write(body);
    x.finish()
}

#[cfg(test)]
mod tests {
    use super::*;
    use encoding_rs::UTF_8;
    use proptest::prelude::*;

    const PAGES: [(&str, &str); 4] = [
        (
            "text/html",
            "<html><head><base href=/b/><style>@import 'i.css'; a{background:url(x.png)}</style>\
<title>T &amp; t</title></head><body><a href=\"a?x=1&amp;y=2\">a</a><img srcset=\"s1.png 1x, s2.png 2x\">\
<div style=\"background:url('d.png')\"><meta http-equiv=refresh content=\"0;url=r.html\"></body>",
        ),
        (
            "text/css",
            "@import url(\"a.css\");\nb{background:url( b.png )}\n.c{x:url('c.png')}",
        ),
        (
            "application/xml",
            "<urlset><url><loc>http://h.test/1</loc></url><url><loc>/2</loc></url></urlset>",
        ),
        (
            "text/html; charset=windows-1252",
            "<a href=\"caf\u{e9}?q=\u{e9}\">x</a><a href=/z>z</a>",
        ),
    ];

    proptest! {
        #[test]
        fn pieces_give_the_links_of_the_whole(which in 0..PAGES.len(), cuts in proptest::collection::vec(0usize..400, 0..12)) {
            let (ct, page) = PAGES[which];
            let body: Vec<u8> = if ct.contains("1252") {
                encoding_rs::WINDOWS_1252.encode(page).0.into_owned()
            } else {
                page.as_bytes().to_vec()
            };
            let base = Url::parse("http://h.test/dir/p").unwrap();
            let opts = ExtractConfig::default();
            let whole = extract(&base, Some(ct), &opts, &body);
            prop_assert!(!whole.links.is_empty());
            let mut cuts: Vec<usize> = cuts.into_iter().map(|c| c.min(body.len())).collect();
            cuts.sort_unstable();
            let mut x = Extractor::new(&base, Some(ct), &opts);
            let mut at = 0;
            for c in cuts.into_iter().chain([body.len()]) {
                x.write(&body[at..c]);
                at = c;
            }
            prop_assert_eq!(x.finish(), whole);
        }
    }

    /// `max-extract-bytes` is the extractor's own bound, whoever feeds
    /// it (a fetch, an earlier copy, a browser's document): links before
    /// it are kept, none after, the stop is `size`; a payload of exactly
    /// the bound is read whole; pieces give what one write gives; 0 is no
    /// bound.
    #[test]
    fn max_extract_bytes_bounds_every_extraction() {
        let base = Url::parse("http://h.test/").unwrap();
        let page = b"<a href=/one>1</a><a href=/two>2</a>";
        let cut = page.iter().position(|&b| b == b'2').unwrap() as u64;
        let got = |max: u64, piece: usize| {
            let opts = ExtractConfig {
                max_extract_bytes: max,
                ..ExtractConfig::default()
            };
            let mut x = Extractor::new(&base, Some("text/html"), &opts);
            for p in page.chunks(piece) {
                x.write(p);
            }
            let past = x.is_past_bound();
            let e = x.finish();
            let urls: Vec<String> = e.links.iter().map(|l| l.url.path().to_string()).collect();
            (urls, e.stopped.map(|s| s.why), past)
        };
        for piece in [1, 7, page.len()] {
            assert_eq!(
                got(20, piece),
                (vec!["/one".into()], Some(StopReason::Size), true)
            );
            let whole = (vec!["/one".into(), "/two".into()], None, false);
            assert_eq!(got(page.len() as u64, piece), whole);
            assert_eq!(got(0, piece), whole);
        }
        assert!(cut > 20);
        let opts = ExtractConfig {
            max_extract_bytes: 20,
            ..ExtractConfig::default()
        };
        let e = extract(&base, Some("text/html"), &opts, page);
        assert_eq!(e.stopped.map(|s| s.why), Some(StopReason::Size));
    }

    #[test]
    fn kinds_by_type_and_path() {
        let u = |s: &str| Url::parse(s).unwrap();
        let k = ContentKind::of;
        assert_eq!(
            k(&u("http://h/"), Some("text/html; charset=x")),
            Some(ContentKind::Html)
        );
        assert_eq!(
            k(&u("http://h/s.xml.gz"), Some("application/x-gzip")),
            Some(ContentKind::Sitemap)
        );
        assert_eq!(
            k(&u("http://h/a.gz"), Some("application/x-gzip")),
            Some(ContentKind::Other)
        );
        assert_eq!(k(&u("http://h/s.xml"), None), Some(ContentKind::Sitemap));
        assert_eq!(k(&u("http://h/x"), None), None);
        // Untyped: sniffed, leading white space allowed.
        let e = extract(
            &u("http://h/x"),
            None,
            &ExtractConfig::default(),
            b"  \n<a href=/y>y</a>",
        );
        assert_eq!(e.links.len(), 1);
        let e = extract(
            &u("http://h/x"),
            None,
            &ExtractConfig::default(),
            b"GIF89a <a href=/y>",
        );
        assert!(e.links.is_empty());
    }

    #[test]
    fn resolution_drops_what_is_not_fetchable() {
        let base = Url::parse("http://h.test/a/b").unwrap();
        for raw in [
            "",
            "  ",
            "#top",
            "javascript:go()",
            "mailto:a@b",
            "data:text/plain,x",
            "http://",
        ] {
            assert_eq!(resolve(&base, raw, UTF_8), None, "{raw:?}");
        }
        assert_eq!(
            resolve(&base, " \tc d#f\n", UTF_8).unwrap().as_str(),
            "http://h.test/a/c%20d"
        );
        assert_eq!(
            charset_of_content_type("text/html; Charset=\"Shift_JIS\""),
            Some(encoding_rs::SHIFT_JIS)
        );
        assert_eq!(encoding_for_label("utf-16le"), Some(UTF_8));
    }

    /// The parameter is found by name, as every other reader of a
    /// Content-Type finds it: a `;` or `charset=` inside another
    /// parameter's quoted value is part of that value.
    #[test]
    fn charset_parameter_as_the_format_crate_reads_it() {
        assert_eq!(
            charset_of_content_type("text/html; note=\"a;charset=koi8-r\"; charset=gbk"),
            Some(encoding_rs::GBK)
        );
        assert_eq!(
            charset_of_content_type("text/html; note=\"a;charset=koi8-r\""),
            None
        );
        assert_eq!(
            charset_of_content_type("text/html; xcharset=koi8-r; charset=utf-16"),
            Some(UTF_8)
        );
    }
}
