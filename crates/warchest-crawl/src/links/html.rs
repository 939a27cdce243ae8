//! Links from HTML, with lol_html.
//!
//! The page is tokenized as windows-1252 (every byte a character and
//! back, as replay does), so the bytes of an attribute are recovered and
//! read in the page's charset: the Content-Type's, else the first
//! `<meta charset>`, else UTF-8 when valid, else windows-1252.
//!
//! | element / attribute                         | hop | context          |
//! |---------------------------------------------|-----|------------------|
//! | `a`, `area` `href`                          | L   | `a/@href`        |
//! | `link` `href` (stylesheet, icon, preload, manifest...) | E | `link/@href` |
//! | `link` `href` (other rels: alternate, next...) | L | `link/@href`     |
//! | `img`, `script`, `iframe`, `frame`, `embed`, `video`, `audio`, `source`, `track`, `input` `src` | E | `img/@src`... |
//! | `img`, `source` `srcset`, `link` `imagesrcset` | E | `img/@srcset`  |
//! | `object` `data`, `video` `poster`, `background` | E | `object/@data`... |
//! | `meta http-equiv=refresh`                   | R   | `meta/@content`  |
//! | `form method=get` `action` (`forms` on)     | L   | `form/@action`   |
//! | `style` attributes, `<style>` text          | E   | `style/url()`... |
//! | `<script>` text (`js` on)                   | X   | `script/text`    |
//!
//! `<base href>` changes the base of what follows; `<meta name=robots>`
//! sets nofollow and noindex.

use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use encoding_rs::{Encoding, UTF_8};
use lol_html::html_content::TextChunk;
use lol_html::send::{Element, HtmlRewriter};
use lol_html::{OutputSink, bail_out, element, text};
use url::Url;
use warchest_html::{decode_text_references, lol_bytes};

use super::{ExtractConfig, LinkSet, StopReason, Stopped, css, js};
use crate::uri::Hop;

/// lol_html's memory bound for one page (a tag of megabytes stops
/// extraction; the links before it are kept).
pub const MAX_HTML_MEMORY: usize = 4 << 20;
/// The longest title kept, in bytes.
pub const MAX_TITLE: usize = 1024;
/// The most title text gathered before decoding (a title's white space
/// and references shrink it).
const MAX_TITLE_RAW: usize = 4 * MAX_TITLE;

/// The streaming HTML extractor.
pub struct HtmlExtractor {
    rewriter: Option<HtmlRewriter<'static, Discard>>,
    page: Arc<Mutex<Page>>,
}

struct Discard;

impl OutputSink for Discard {
    fn handle_chunk(&mut self, _: &[u8]) {}
}

/// What the handlers share: the page's state and what they found.
struct Page {
    url: Url,
    base: Url,
    /// The charset given by the Content-Type, or found in a meta tag.
    enc: Option<&'static Encoding>,
    enc_from_header: bool,
    opts: ExtractConfig,
    links: LinkSet,
    title: Option<String>,
    in_title: bool,
    code: Option<Code>,
}

enum Code {
    Style(css::CssExtractor),
    Script(js::JsExtractor),
}

fn lock(p: &Mutex<Page>) -> MutexGuard<'_, Page> {
    p.lock().unwrap_or_else(PoisonError::into_inner)
}

impl HtmlExtractor {
    /// An extractor for the page at `url`, `enc` its Content-Type charset.
    pub fn new(url: &Url, enc: Option<&'static Encoding>, opts: &ExtractConfig) -> HtmlExtractor {
        let page = Arc::new(Mutex::new(Page {
            url: url.clone(),
            base: url.clone(),
            enc,
            enc_from_header: enc.is_some(),
            opts: opts.clone(),
            links: LinkSet::new(0),
            title: None,
            in_title: false,
            code: None,
        }));
        let on_element = Arc::clone(&page);
        let on_text = Arc::clone(&page);
        let on_bail_out = Arc::clone(&page);
        let settings = warchest_html::settings(MAX_HTML_MEMORY)
            // The shared settings bail out gracefully (replay passes the
            // rest through): no error comes back, only this call.
            .append_bail_out_handler(bail_out!(move |e, _| {
                lock(&on_bail_out)
                    .links
                    .out
                    .stopped
                    .get_or_insert_with(|| stop_of(e));
            }))
            .append_element_content_handler(element!("*", move |el| {
                on_start_tag(&mut lock(&on_element), el);
                Ok(())
            }))
            .append_element_content_handler(text!("title, style, script", move |t| {
                on_text_chunk(&mut lock(&on_text), t);
                Ok(())
            }));
        HtmlExtractor {
            rewriter: Some(HtmlRewriter::new(settings, Discard)),
            page,
        }
    }

    /// The next piece of the page; `links` collects what it holds.
    pub(crate) fn write(&mut self, chunk: &[u8], links: &mut LinkSet) {
        self.swap_in(links);
        if let Some(rw) = self.rewriter.as_mut()
            && let Err(e) = rw.write(chunk)
        {
            self.rewriter = None;
            lock(&self.page).links.out.stopped = Some(stop_of(&e));
        }
        self.swap_out(links);
    }

    /// The end of the page.
    pub(crate) fn finish(mut self, links: &mut LinkSet) {
        self.swap_in(links);
        if let Some(rw) = self.rewriter.take()
            && let Err(e) = rw.end()
        {
            lock(&self.page).links.out.stopped = Some(stop_of(&e));
        }
        let mut page = lock(&self.page);
        if let Some(code) = page.code.take() {
            finish_code(&mut page, code);
        }
        let enc = page.enc;
        let title = page.title.take().map(|raw| {
            let bytes = lol_bytes(&raw);
            // A title is text (RCDATA), not an attribute value: `&copy2026`
            // is `©2026` there.
            let mut t = collapse(&decode_text_references(&warchest_html::page_text(
                &bytes, enc,
            )));
            let mut cut = t.len().min(MAX_TITLE);
            while !t.is_char_boundary(cut) {
                cut -= 1;
            }
            t.truncate(cut);
            t
        });
        page.links.out.title = title.filter(|t| !t.is_empty());
        drop(page);
        self.swap_out(links);
    }

    // The handlers own the page behind the mutex; the caller's LinkSet is
    // moved in for a write and back out after.
    fn swap_in(&mut self, links: &mut LinkSet) {
        std::mem::swap(&mut lock(&self.page).links, links);
    }

    fn swap_out(&mut self, links: &mut LinkSet) {
        std::mem::swap(&mut lock(&self.page).links, links);
    }
}

/// The stop a lol_html error means.
fn stop_of(e: &lol_html::errors::RewritingError) -> Stopped {
    let why = match e {
        lol_html::errors::RewritingError::MemoryLimitExceeded(_) => StopReason::Memory,
        _ => StopReason::Parse,
    };
    Stopped::new(why, e.to_string())
}

fn collapse(s: &str) -> String {
    let mut out = String::new();
    for w in s.split_whitespace() {
        if !out.is_empty() {
            out.push(' ');
        }
        out.push_str(w);
    }
    out
}

impl Page {
    /// An attribute's value read in the page's charset, entities decoded
    /// as in an attribute (all of HTML's names; `?a=1&copy=2` kept).
    fn attr(&self, el: &Element<'_, '_>, name: &str) -> Option<String> {
        Some(warchest_html::attr_value(
            &el.get_attribute(name)?,
            self.enc,
        ))
    }

    /// The encoding a URL's query is written in.
    fn url_enc(&self) -> &'static Encoding {
        self.enc.unwrap_or(UTF_8)
    }

    fn add(&mut self, raw: &str, hop: Hop, context: &'static str) {
        let enc = self.url_enc();
        let base = self.base.clone();
        self.links.add(&base, raw, enc, hop, context);
    }
}

/// The rel values of a `link` that make it an embed.
fn link_rel_is_embed(rel: &str) -> bool {
    rel.split_ascii_whitespace().any(|r| {
        matches!(
            r.to_ascii_lowercase().as_str(),
            "stylesheet"
                | "icon"
                | "shortcut"
                | "apple-touch-icon"
                | "apple-touch-icon-precomposed"
                | "mask-icon"
                | "preload"
                | "prefetch"
                | "modulepreload"
                | "manifest"
        )
    })
}

fn on_start_tag(page: &mut Page, el: &mut Element<'_, '_>) {
    let name = el.tag_name();
    match name.as_str() {
        "a" | "area" => {
            if let Some(h) = page.attr(el, "href") {
                page.add(
                    &h,
                    Hop::Link,
                    if name == "a" { "a/@href" } else { "area/@href" },
                );
            }
        }
        "base" => {
            if let Some(h) = page.attr(el, "href") {
                // Only the first <base href> counts (HTML's "frozen base
                // URL"), resolved against the document's URL.
                if page.links.out.base.is_none()
                    && let Some(b) = super::resolve(&page.url, &h, page.url_enc())
                {
                    page.base = b.clone();
                    page.links.out.base = Some(b);
                }
            }
        }
        "link" => {
            let rel = page.attr(el, "rel").unwrap_or_default();
            let embed = link_rel_is_embed(&rel);
            if let Some(h) = page.attr(el, "href") {
                page.add(&h, if embed { Hop::Embed } else { Hop::Link }, "link/@href");
            }
            if let Some(s) = page.attr(el, "imagesrcset") {
                page.add_srcset(&s, "link/@imagesrcset");
            }
        }
        "meta" => on_meta(page, el),
        "form" => {
            let get = page
                .attr(el, "method")
                .is_none_or(|m| m.trim().eq_ignore_ascii_case("get"));
            if page.opts.forms && get {
                let action = page.attr(el, "action").unwrap_or_default();
                if action.trim().is_empty() {
                    let here = page.url.as_str().to_string();
                    page.add(&here, Hop::Link, "form/@action");
                } else {
                    page.add(&action, Hop::Link, "form/@action");
                }
            }
        }
        "title" => page.in_title = page.title.is_none(),
        "style" => {
            let base = page.base.clone();
            page.code = Some(Code::Style(css::CssExtractor::new(
                &base, page.enc, "style",
            )));
        }
        "script" => {
            if let Some(s) = page.attr(el, "src") {
                page.add(&s, Hop::Embed, "script/@src");
            }
            if page.opts.js {
                let base = page.base.clone();
                page.code = Some(Code::Script(js::JsExtractor::new(&base)));
            }
        }
        _ => {
            let ctx = |attr: &str| -> &'static str {
                match (name.as_str(), attr) {
                    ("img", "src") => "img/@src",
                    ("img", "srcset") => "img/@srcset",
                    ("iframe", _) => "iframe/@src",
                    ("frame", _) => "frame/@src",
                    ("embed", _) => "embed/@src",
                    ("video", "src") => "video/@src",
                    ("video", "poster") => "video/@poster",
                    ("audio", _) => "audio/@src",
                    ("source", "src") => "source/@src",
                    ("source", "srcset") => "source/@srcset",
                    ("track", _) => "track/@src",
                    ("input", _) => "input/@src",
                    ("object", "data") => "object/@data",
                    ("image", _) => "image/@href",
                    ("use", _) => "use/@href",
                    (_, "background") => "@background",
                    _ => "@src",
                }
            };
            let srcs: &[&str] = match name.as_str() {
                "img" | "iframe" | "frame" | "embed" | "audio" | "source" | "track" => &["src"],
                "video" => &["src", "poster"],
                "input" => {
                    if page
                        .attr(el, "type")
                        .is_some_and(|t| t.trim().eq_ignore_ascii_case("image"))
                    {
                        &["src"]
                    } else {
                        &[]
                    }
                }
                "object" => &["data"],
                // SVG: images and sprite sheets.
                "image" | "use" => &["href", "xlink:href"],
                "body" | "table" | "td" | "th" => &["background"],
                _ => &[],
            };
            for a in srcs {
                if let Some(v) = page.attr(el, a) {
                    page.add(&v, Hop::Embed, ctx(a));
                }
            }
            if matches!(name.as_str(), "img" | "source")
                && let Some(s) = page.attr(el, "srcset")
            {
                let c = ctx("srcset");
                page.add_srcset(&s, c);
            }
        }
    }
    if let Some(style) = page.attr(el, "style") {
        let base = page.base.clone();
        // Its value is text already (decoded from the page's charset).
        let mut c = css::CssExtractor::new(&base, page.enc, "style").decoded();
        c.write(style.as_bytes(), &mut page.links);
        c.finish(&mut page.links);
    }
}

fn on_meta(page: &mut Page, el: &mut Element<'_, '_>) {
    let equiv = page.attr(el, "http-equiv").map(|s| s.to_ascii_lowercase());
    let name = page.attr(el, "name").map(|s| s.to_ascii_lowercase());
    let content = page.attr(el, "content");
    if !page.enc_from_header {
        let charset = page.attr(el, "charset");
        let e =
            warchest_html::meta_charset(charset.as_deref(), equiv.as_deref(), content.as_deref());
        if let Some(e) = e {
            // The first declaration wins, as in browsers.
            page.enc = Some(e);
            page.enc_from_header = true;
        }
    }
    if equiv.as_deref() == Some("refresh")
        && let Some(c) = content.as_deref()
        && let Some(r) = warchest_html::refresh_url(c)
    {
        page.add(&c[r], Hop::Redirect, "meta/@content");
    }
    if matches!(name.as_deref(), Some("robots" | "warchest"))
        && let Some(c) = content
    {
        for d in c.split(',').map(|d| d.trim().to_ascii_lowercase()) {
            match d.as_str() {
                "nofollow" => page.links.out.nofollow = true,
                "noindex" => page.links.out.noindex = true,
                "none" => {
                    page.links.out.nofollow = true;
                    page.links.out.noindex = true;
                }
                _ => {}
            }
        }
    }
}

/// The most URLs taken from one `srcset` value.
const MAX_SRCSET_URLS: usize = 1000;

impl Page {
    /// The URLs of a `srcset` value (warchest-html's reading, the one
    /// replay rewrites by), at most [`MAX_SRCSET_URLS`]; the others are
    /// counted in [`super::Extracted::dropped`].
    fn add_srcset(&mut self, value: &str, context: &'static str) {
        for (i, r) in warchest_html::srcset_urls(value).enumerate() {
            if i >= MAX_SRCSET_URLS {
                self.links.out.dropped += 1;
            } else {
                self.add(&value[r], Hop::Embed, context);
            }
        }
    }
}

fn on_text_chunk(page: &mut Page, t: &mut TextChunk<'_>) {
    let last = t.last_in_text_node();
    if page.in_title {
        // Raw bytes (windows-1252 characters) gathered, decoded at the
        // end: a character reference or a multi-byte character may be cut
        // between pieces.
        let title = page.title.get_or_insert_with(String::new);
        if title.len() < MAX_TITLE_RAW {
            let s = t.as_str();
            let mut cut = (MAX_TITLE_RAW - title.len()).min(s.len());
            while !s.is_char_boundary(cut) {
                cut -= 1;
            }
            title.push_str(&s[..cut]);
        }
        if last {
            page.in_title = false;
        }
        return;
    }
    let Some(mut code) = page.code.take() else {
        return;
    };
    let bytes = lol_bytes(t.as_str());
    match &mut code {
        Code::Style(c) => c.write(&bytes, &mut page.links),
        Code::Script(j) => j.write(&bytes, &mut page.links),
    }
    if last {
        finish_code(page, code);
    } else {
        page.code = Some(code);
    }
}

fn finish_code(page: &mut Page, code: Code) {
    match code {
        Code::Style(c) => c.finish(&mut page.links),
        Code::Script(j) => j.finish(&mut page.links),
    }
}

#[cfg(test)]
mod tests {
    use super::super::{ExtractConfig, Extracted, extract};
    use super::*;

    fn x(page: &str) -> Extracted {
        x_with(page, None, &ExtractConfig::default())
    }

    fn x_with(page: &str, ct: Option<&str>, opts: &ExtractConfig) -> Extracted {
        let base = Url::parse("http://h.test/dir/page.html").unwrap();
        let ct = ct.unwrap_or("text/html");
        let whole = extract(&base, Some(ct), opts, page.as_bytes());
        // The same page a byte at a time gives the same links.
        let mut e = super::super::Extractor::new(&base, Some(ct), opts);
        for b in page.as_bytes() {
            e.write(std::slice::from_ref(b));
        }
        assert_eq!(e.finish(), whole);
        whole
    }

    fn urls(e: &Extracted) -> Vec<(String, char, &'static str)> {
        e.links
            .iter()
            .map(|l| (l.url.to_string(), l.hop.letter(), l.context))
            .collect()
    }

    #[test]
    fn elements_and_hops() {
        let e = x(r##"<html><head><title> A  page </title>
<link rel=stylesheet href="s.css"><link rel=alternate href="/feed">
<script src="/j.js"></script></head><body background=bg.png>
<a href="a.html#frag">a</a><area href="/area">
<img src="i.png" srcset="i2.png 2x, /i3.png 3x">
<picture><source srcset="p1.webp 1x,p2.webp 2x"></picture>
<iframe src="//f.test/frame"></iframe><frame src=fr.html><embed src=e.swf>
<object data=o.bin></object><video src=v.mp4 poster=v.jpg><track src=t.vtt></video>
<audio src=a.mp3></audio><input type=image src=btn.png><input type=text src=no.png>
<svg><image href=svg.png /><use xlink:href="/sprite.svg#i"></use><use href="#local"></use></svg>
<a href="mailto:x@y">m</a><a href="javascript:void(0)">j</a><a href="#top">t</a>
<a href="a.html">dup</a>"##);
        assert_eq!(e.title.as_deref(), Some("A page"));
        let got = urls(&e);
        let want: Vec<(&str, char, &str)> = vec![
            ("http://h.test/dir/s.css", 'E', "link/@href"),
            ("http://h.test/feed", 'L', "link/@href"),
            ("http://h.test/j.js", 'E', "script/@src"),
            ("http://h.test/dir/bg.png", 'E', "@background"),
            ("http://h.test/dir/a.html", 'L', "a/@href"),
            ("http://h.test/area", 'L', "area/@href"),
            ("http://h.test/dir/i.png", 'E', "img/@src"),
            ("http://h.test/dir/i2.png", 'E', "img/@srcset"),
            ("http://h.test/i3.png", 'E', "img/@srcset"),
            ("http://h.test/dir/p1.webp", 'E', "source/@srcset"),
            ("http://h.test/dir/p2.webp", 'E', "source/@srcset"),
            ("http://f.test/frame", 'E', "iframe/@src"),
            ("http://h.test/dir/fr.html", 'E', "frame/@src"),
            ("http://h.test/dir/e.swf", 'E', "embed/@src"),
            ("http://h.test/dir/o.bin", 'E', "object/@data"),
            ("http://h.test/dir/v.mp4", 'E', "video/@src"),
            ("http://h.test/dir/v.jpg", 'E', "video/@poster"),
            ("http://h.test/dir/t.vtt", 'E', "track/@src"),
            ("http://h.test/dir/a.mp3", 'E', "audio/@src"),
            ("http://h.test/dir/btn.png", 'E', "input/@src"),
            ("http://h.test/dir/svg.png", 'E', "image/@href"),
            ("http://h.test/sprite.svg", 'E', "use/@href"),
        ];
        let want: Vec<(String, char, &str)> = want
            .into_iter()
            .map(|(u, h, c)| (u.to_string(), h, c))
            .collect();
        assert_eq!(got, want);
    }

    #[test]
    fn base_href_and_meta() {
        let e = x(r#"<a href="before">b</a><base href="http://other.test/x/">
<base href="/ignored/"><a href=after>a</a>
<meta http-equiv="refresh" content="0; URL='next.html'">
<meta name="ROBOTS" content="noindex, NoFollow">"#);
        assert_eq!(e.base.as_ref().unwrap().as_str(), "http://other.test/x/");
        let got = urls(&e);
        assert_eq!(got[0].0, "http://h.test/dir/before");
        assert_eq!(got[1].0, "http://other.test/x/after");
        assert_eq!(
            got[2],
            ("http://other.test/x/next.html".into(), 'R', "meta/@content")
        );
        assert!(e.nofollow && e.noindex);
        assert!(!x("<meta name=robots content=index>").nofollow);
    }

    #[test]
    fn a_link_the_page_also_embeds_is_named() {
        let e = x(r#"<a href="/big.jpg"><img src="/big.jpg"></a><a href="/a.html">a</a>"#);
        let got = urls(&e);
        assert_eq!(got[0], ("http://h.test/big.jpg".into(), 'L', "a/@href"));
        assert_eq!(got.len(), 2);
        let also: Vec<&str> = e.also_embedded.iter().map(|u| u.as_str()).collect();
        assert_eq!(also, ["http://h.test/big.jpg"]);
    }

    /// A frame, a preload or a script's URL the page also links to takes
    /// the link's hop (it is a page), where it first appeared; the frame
    /// and the preload stay named as embedded for the browser path.
    #[test]
    fn an_embed_the_page_also_links_to_is_a_link() {
        let opts = ExtractConfig {
            js: true,
            ..ExtractConfig::default()
        };
        let e = x_with(
            r#"<iframe src="/x"></iframe><link rel=preload href="/p" as=document>
<script>var u = "/s.html";</script><a href="/x">x</a><a href="/p">p</a><a href="/s.html">s</a>
<a href="/y">y</a><iframe src="/y"></iframe>"#,
            None,
            &opts,
        );
        let got = urls(&e);
        let hop = |u: &str| got.iter().find(|g| g.0 == u).map(|g| (g.1, g.2));
        assert_eq!(hop("http://h.test/x"), Some(('L', "a/@href")), "{got:?}");
        assert_eq!(hop("http://h.test/p"), Some(('L', "a/@href")), "{got:?}");
        assert_eq!(
            hop("http://h.test/s.html"),
            Some(('L', "a/@href")),
            "{got:?}"
        );
        assert_eq!(hop("http://h.test/y"), Some(('L', "a/@href")), "{got:?}");
        assert_eq!(got[0].0, "http://h.test/x", "{got:?}");
        let also: Vec<&str> = e.also_embedded.iter().map(|u| u.as_str()).collect();
        // (a preload is an embed: the browser fetches it with the page)
        assert_eq!(
            also,
            ["http://h.test/x", "http://h.test/p", "http://h.test/y"]
        );
    }

    #[test]
    fn forms_only_when_asked_and_only_get() {
        let page = r#"<form action="/search"><input name=q></form>
<form method=POST action="/post"></form>"#;
        assert!(x(page).links.is_empty());
        let opts = ExtractConfig {
            forms: true,
            ..ExtractConfig::default()
        };
        let e = x_with(page, None, &opts);
        assert_eq!(
            urls(&e),
            vec![("http://h.test/search".into(), 'L', "form/@action")]
        );
    }

    #[test]
    fn inline_css_and_style_elements() {
        let e = x(r#"<div style="background:url(&quot;bg1.png&quot;)"></div>
<style>@import "imp.css"; .a{background:url( 'bg2.png' )}</style>"#);
        let got: Vec<String> = e.links.iter().map(|l| l.url.to_string()).collect();
        assert_eq!(
            got,
            [
                "http://h.test/dir/bg1.png",
                "http://h.test/dir/imp.css",
                "http://h.test/dir/bg2.png"
            ]
        );
        assert!(e.links.iter().all(|l| l.hop == Hop::Embed));
        assert_eq!(e.links[1].context, "style/@import");
    }

    #[test]
    fn script_text_only_with_js() {
        let page = r#"<script>var u = "/api/data.json"; go('http://x.test/p.html');</script>"#;
        assert!(x(page).links.is_empty());
        let opts = ExtractConfig {
            js: true,
            ..ExtractConfig::default()
        };
        let got = urls(&x_with(page, None, &opts));
        assert_eq!(
            got,
            vec![
                ("http://h.test/api/data.json".into(), 'X', "script/text"),
                ("http://x.test/p.html".into(), 'X', "script/text"),
            ]
        );
    }

    #[test]
    fn non_utf8_pages_encode_queries_in_their_charset() {
        // "é" in windows-1252 is 0xE9; in a UTF-8 path it is %C3%A9.
        let page = b"<a href=\"caf\xe9.html?q=\xe9\">x</a>";
        let base = Url::parse("http://h.test/").unwrap();
        let e = extract(
            &base,
            Some("text/html; charset=windows-1252"),
            &ExtractConfig::default(),
            page,
        );
        assert_eq!(
            e.links[0].url.as_str(),
            "http://h.test/caf%C3%A9.html?q=%E9"
        );
        // Declared by meta, no header charset.
        let page = b"<meta charset=iso-8859-1><a href=\"?q=\xe9\">x</a>";
        let e = extract(&base, Some("text/html"), &ExtractConfig::default(), page);
        assert_eq!(e.links[0].url.as_str(), "http://h.test/?q=%E9");
        // UTF-8 pages, and percent-encoded URLs kept as written.
        let page = "<a href=\"/caf\u{e9}?q=\u{e9}\">x</a><a href=\"/a%20b?c=%2F\">y</a>";
        let e = extract(
            &base,
            Some("text/html"),
            &ExtractConfig::default(),
            page.as_bytes(),
        );
        assert_eq!(e.links[0].url.as_str(), "http://h.test/caf%C3%A9?q=%C3%A9");
        assert_eq!(e.links[1].url.as_str(), "http://h.test/a%20b?c=%2F");
    }

    /// A `style` attribute's URLs in a page not in UTF-8: its value is
    /// read once from the page's charset (before, its text was decoded a
    /// second time as the charset: `é` became `Ã©`), the path in UTF-8 and
    /// the query in the charset, the URLs replay's rewriter asks for.
    #[test]
    fn style_attributes_read_once_in_non_utf8_pages() {
        let style = |e_acute: &[u8]| -> Vec<u8> {
            let mut page = Vec::new();
            for url in [
                &b"caf@.png?q=@"[..],
                b"&quot;x@.png&quot;",
                b"y&eacute;.png?q=&eacute;",
            ] {
                page.extend_from_slice(b"<p style=\"background:url(");
                for &b in url {
                    match b {
                        b'@' => page.extend_from_slice(e_acute),
                        _ => page.push(b),
                    }
                }
                page.extend_from_slice(b")\"></p>");
            }
            page
        };
        let base = Url::parse("http://h.test/").unwrap();
        let found = |ct: &str, page: &[u8]| -> Vec<String> {
            let whole = extract(&base, Some(ct), &ExtractConfig::default(), page);
            let mut e = super::super::Extractor::new(&base, Some(ct), &ExtractConfig::default());
            for b in page {
                e.write(std::slice::from_ref(b));
            }
            assert_eq!(e.finish(), whole);
            whole.links.iter().map(|l| l.url.to_string()).collect()
        };
        assert_eq!(
            found("text/html; charset=windows-1252", &style(b"\xe9")),
            [
                "http://h.test/caf%C3%A9.png?q=%E9",
                "http://h.test/x%C3%A9.png",
                "http://h.test/y%C3%A9.png?q=%E9"
            ]
        );
        // Declared by meta, no header charset.
        let meta = [b"<meta charset=iso-8859-1>".as_slice(), &style(b"\xe9")].concat();
        assert_eq!(
            found("text/html", &meta)[0],
            "http://h.test/caf%C3%A9.png?q=%E9"
        );
        // UTF-8 pages.
        assert_eq!(
            found("text/html", &style("\u{e9}".as_bytes())),
            [
                "http://h.test/caf%C3%A9.png?q=%C3%A9",
                "http://h.test/x%C3%A9.png",
                "http://h.test/y%C3%A9.png?q=%C3%A9"
            ]
        );
    }

    #[test]
    fn broken_html_still_yields_links() {
        let e = x(
            "<html><body><p><a href=one.html>1<div><a href='two.html'<a href=three.html>\
<img src=\"unterminated.png",
        );
        let got: Vec<String> = e.links.iter().map(|l| l.url.to_string()).collect();
        assert!(
            got.contains(&"http://h.test/dir/one.html".to_string()),
            "{got:?}"
        );
        assert!(
            got.contains(&"http://h.test/dir/two.html".to_string()),
            "{got:?}"
        );
    }

    #[test]
    fn links_are_bounded() {
        let page: String = (0..50).map(|i| format!("<a href=/{i}>x</a>")).collect();
        let opts = ExtractConfig {
            max_links_per_page: 10,
            ..ExtractConfig::default()
        };
        let e = x_with(&page, None, &opts);
        assert_eq!(e.links.len(), 10);
        assert_eq!(e.dropped, 40);
    }

    /// A srcset's URLs past [`MAX_SRCSET_URLS`] are counted as dropped,
    /// not left out without a word.
    #[test]
    fn srcset_urls_past_the_bound_are_counted() {
        let set: Vec<String> = (0..MAX_SRCSET_URLS + 5)
            .map(|i| format!("/s{i}.png {}w", i + 1))
            .collect();
        let e = x(&format!("<img srcset=\"{}\">", set.join(", ")));
        assert_eq!(e.links.len(), MAX_SRCSET_URLS);
        assert_eq!(e.dropped, 5);
        assert_eq!(e.stopped, None);
    }

    /// A tag larger than lol_html's memory bound stops extraction: the
    /// links before it are kept and the stop says why.
    #[test]
    fn the_memory_bound_stops_with_a_reason() {
        let big = "x".repeat(MAX_HTML_MEMORY + (1 << 20));
        let page = format!("<a href=/before>b</a><div title=\"{big}\"><a href=/after>a</a>");
        // In the engine's pieces, not a byte at a time as `x` also does:
        // megabytes (and a tag within one write needs no buffer).
        let base = Url::parse("http://h.test/dir/page.html").unwrap();
        let mut x =
            super::super::Extractor::new(&base, Some("text/html"), &ExtractConfig::default());
        for c in page.as_bytes().chunks(64 << 10) {
            x.write(c);
        }
        let e = x.finish();
        let got: Vec<&str> = e.links.iter().map(|l| l.url.path()).collect();
        assert_eq!(got, ["/before"]);
        let stop = e.stopped.expect("a stop");
        assert_eq!(stop.why, crate::links::StopReason::Memory, "{stop}");
    }

    /// References replay decoded and the crawler did not: the URL found
    /// is the one a browser (and replay) reads, and a `javascript&colon;`
    /// link is no page.
    #[test]
    fn references_read_as_replay_reads_them() {
        let e = x(
            r#"<a href="&sol;&sol;o.test&#x2F;p&quest;a=1&amp;b=&#150;">o</a>
<a href="javascript&colon;go()">j</a><img src="i.png?a=1&amp=2">"#,
        );
        let got: Vec<String> = e.links.iter().map(|l| l.url.to_string()).collect();
        assert_eq!(
            got,
            [
                "http://o.test/p?a=1&b=%E2%80%93",
                "http://h.test/dir/i.png?a=1&amp=2"
            ]
        );
    }

    /// Any of HTML's named references, not only those of URL punctuation:
    /// the URL a browser follows; in an attribute a legacy name without
    /// its `;` before a name character or `=` stays as written, while the
    /// title (text) decodes it.
    #[test]
    fn all_named_references() {
        let e = x(r#"<title>&copy2026 &hellip;&rarr;</title>
<a href="/s?q=caf&eacute;&amp;r=&rarr;">a</a><a href="/t?a=1&copy=2&not">b</a>"#);
        assert_eq!(e.title.as_deref(), Some("\u{a9}2026 \u{2026}\u{2192}"));
        let got: Vec<String> = e.links.iter().map(|l| l.url.to_string()).collect();
        assert_eq!(
            got,
            [
                "http://h.test/s?q=caf%C3%A9&r=%E2%86%92",
                "http://h.test/t?a=1&copy=2%C2%AC"
            ]
        );
    }

    /// A URL with a comma in a srcset (which replay's old split on every
    /// comma cut in two): found whole.
    #[test]
    fn srcset_urls_with_commas() {
        let e = x(r#"<img srcset="a,b.jpg 1x, /c.jpg?w=1,2 2x,d.jpg">
<link rel=preload as=image imagesrcset="e,f.png 100w">"#);
        let got: Vec<String> = e.links.iter().map(|l| l.url.to_string()).collect();
        assert_eq!(
            got,
            [
                "http://h.test/dir/a,b.jpg",
                "http://h.test/c.jpg?w=1,2",
                "http://h.test/dir/d.jpg",
                "http://h.test/dir/e,f.png"
            ]
        );
    }

    /// A refresh without `url=` (which replay's old search for `url=`
    /// missed): found.
    #[test]
    fn refresh_without_url_equals() {
        for (content, want) in [
            ("5; http://x.test/", Some("http://x.test/")),
            ("3, other.html", Some("http://h.test/dir/other.html")),
            ("0 'q.html'", Some("http://h.test/dir/q.html")),
            (
                "0;URL = &quot;n.html&quot;",
                Some("http://h.test/dir/n.html"),
            ),
            ("10", None),
            ("; url=no.html", None),
        ] {
            let e = x(&format!("<meta http-equiv=refresh content=\"{content}\">"));
            let got = urls(&e);
            match want {
                Some(u) => assert_eq!(got, [(u.into(), 'R', "meta/@content")], "{content}"),
                None => assert!(got.is_empty(), "{content}: {got:?}"),
            }
        }
    }
}
