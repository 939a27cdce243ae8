//! Rewriting archived HTML, CSS and JavaScript so that the URLs they name
//! lead back into the archive (`/{collection}/{timestamp}{modifier}/{url}`).
//!
//! Streamed: input comes in pieces and output leaves as it is made, with
//! bounded memory.
//!
//! HTML is tokenized by lol_html, as windows-1252: every byte is a
//! character of it and back, so pages in any ASCII-compatible charset pass
//! through byte for byte outside what is rewritten. URLs are read as the
//! crawler reads them (warchest-html): in the page's charset (the
//! Content-Type's, [`UrlContext::encoding`], else the first `<meta>`
//! declaring one, for the URLs after it; without one, UTF-8 when valid,
//! else windows-1252), their queries encoded in it as browsers send
//! them, so that the URL rewritten to is the one archived. Rewritten: URL attributes
//! (`href`, `src`, `srcset`, `action`, `formaction`, `poster`, `data`,
//! `background`), `style` attributes and `<style>` elements as CSS, inline
//! scripts and event handler attributes (`onclick`...) as JavaScript,
//! `<base href>` (it also becomes the base against which the page's URLs
//! are resolved), and `<meta http-equiv=refresh>`. `integrity` attributes
//! are dropped (a rewritten script no longer has the hash). A tag with an
//! attribute rewritten is written again by lol_html (`name="value"`,
//! single spaces): the same HTML. The caller's head insert (the
//! client-side script) goes right after `<head>` (or before the first tag
//! that is not `<html>`), the banner right after `<body>` (or at the end
//! when the page has no body tag). A page lol_html cannot rewrite within
//! [`MAX_HTML_MEMORY`] (a tag of megabytes) is passed through unchanged
//! from there on, logged and counted ([`html_bail_outs`]).
//!
//! CSS: `url(...)` and `@import "..."`. JavaScript: absolute `http(s)://`
//! URLs, slashes escaped or not, become absolute archive URLs; the client
//! script handles URLs that are only made at run time. Scripts are
//! rewritten a line at a time (no URL they match spans lines), CSS up to
//! where warchest-html's `css_cut` allows (never inside `url( ... )`,
//! which may span lines), the rest held back up to [`MAX_CARRY`], in
//! stylesheets, scripts and the `<style>` and `<script>` elements of pages
//! alike.

use std::io::{self, Read, Write};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, LazyLock, Mutex, MutexGuard, PoisonError};

use lol_html::html_content::{ContentType, TextChunk};
use lol_html::send::{Element, HtmlRewriter};
use lol_html::{OutputSink, element, text};
use regex::bytes::{Captures, Regex};
use warchest_html::{
    CssUrlForm, attr_value, css_cut, css_escape, css_unescape, css_urls, decode_references,
    lol_bytes, lol_str, meta_charset, page_text, refresh_url, srcset_urls,
};

use encoding_rs::{Encoding, UTF_8};

use super::archive_url::{modifier, resolve_in, scheme};

/// The longest line of CSS or JavaScript held back while waiting for its
/// end: warchest-html's one bound, which the crawler's extractor holds too.
pub use warchest_html::MAX_CARRY;

/// What a resource is rewritten as.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// An HTML document.
    Html,
    /// A stylesheet.
    Css,
    /// A script.
    Js,
}

impl Kind {
    /// The kind a media type is rewritten as, if any.
    pub fn of_media_type(mime: &str) -> Option<Kind> {
        let m = mime.trim().to_ascii_lowercase();
        match m.as_str() {
            "text/html" | "application/xhtml+xml" => Some(Kind::Html),
            "text/css" => Some(Kind::Css),
            "application/javascript"
            | "text/javascript"
            | "application/x-javascript"
            | "application/ecmascript"
            | "text/ecmascript" => Some(Kind::Js),
            _ => None,
        }
    }
}

/// Where rewritten URLs point.
#[derive(Debug, Clone)]
pub struct UrlContext {
    /// The path prefix of the collection: `/{collection}/`.
    pub prefix: String,
    /// The same, absolute: `http://host:port/{collection}/` (used in
    /// scripts, where a URL may be parsed without a base).
    pub abs_prefix: String,
    /// The timestamp of the page: embedded resources are looked up nearest
    /// to it.
    pub timestamp: String,
    /// The URL of the archived document: relative references resolve
    /// against it (or its `<base href>`).
    pub base: String,
    /// The charset of the resource's URLs: the archived Content-Type's
    /// (`archive_url::content_type_encoding`), `None` when it names none
    /// (then a page's first `<meta>` declaring one sets it for the URLs
    /// after). Queries are encoded in it, as the crawler and browsers
    /// encode them; `None` reads as UTF-8.
    pub encoding: Option<&'static Encoding>,
}

impl UrlContext {
    /// The archive URL of `reference` (relative to the base) with
    /// `modifier`; `None` when it is not to be rewritten (fragments,
    /// `data:`, `javascript:`, already in the archive...).
    pub fn archive_url(&self, reference: &str, modifier: &str) -> Option<String> {
        let r = reference.trim_matches(|c: char| c.is_ascii_whitespace());
        if r.is_empty()
            || r.starts_with('#')
            || r.starts_with(&self.prefix)
            || r.starts_with(&self.abs_prefix)
        {
            return None;
        }
        if let Some(s) = scheme(r)
            && s != "http"
            && s != "https"
        {
            return None;
        }
        let abs = resolve_in(&self.base, r, self.encoding.unwrap_or(UTF_8))?;
        if !(abs.starts_with("http://") || abs.starts_with("https://")) {
            return None;
        }
        Some(format!("{}{}{modifier}/{abs}", self.prefix, self.timestamp))
    }
}

/// The most memory lol_html may use for one page (its buffer for a tag
/// that spans pieces, its stack of open elements). A page that needs more
/// (a tag of megabytes) is passed through unchanged from there on, with a
/// warning: never a response cut short.
pub const MAX_HTML_MEMORY: usize = 2 << 20;

/// Longest `<base href>` followed: every relative URL after it grows by
/// its length, so a longer one (no real page has one) would let a page
/// multiply its size.
pub const MAX_BASE: usize = 4 << 10;

/// Input gathered before it is given to the HTML parser. lol_html parses
/// an unfinished tag again from its start each time more comes, so tiny
/// pieces would make a long tag cost its length squared.
pub const HTML_GATHER: usize = 16 << 10;

/// Pages whose rewriting gave up part-way (see [`MAX_HTML_MEMORY`]) since
/// the process started.
static HTML_BAIL_OUTS: AtomicU64 = AtomicU64::new(0);

/// How many HTML pages were passed through unchanged from some point on
/// because rewriting them needed more than [`MAX_HTML_MEMORY`] (or failed
/// otherwise), since the process started. Each is also logged.
pub fn html_bail_outs() -> u64 {
    HTML_BAIL_OUTS.load(Ordering::Relaxed)
}

/// What the HTML handlers share: they run inside lol_html's `write`, the
/// rest of [`Rewriter`] between calls (a `Mutex` only so that the
/// rewriter stays `Send`; it is never contended).
struct Page {
    ctx: UrlContext,
    /// The caller's inserts, as lol_html strings (see [`lol_str`]).
    head_insert: Option<String>,
    banner: Option<String>,
    /// What the content of the current `<script>` or `<style>` is
    /// rewritten as (`None`: a script of another type, left alone).
    code: Option<Kind>,
    /// Its text not rewritten yet: the unfinished line.
    code_carry: Vec<u8>,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Where lol_html writes: a buffer [`Rewriter::feed`] empties.
struct Sink(Arc<Mutex<Vec<u8>>>);

impl OutputSink for Sink {
    fn handle_chunk(&mut self, chunk: &[u8]) {
        lock(&self.0).extend_from_slice(chunk);
    }
}

type Html = HtmlRewriter<'static, Sink>;

/// A streaming rewriter of one resource.
pub struct Rewriter {
    kind: Kind,
    page: Arc<Mutex<Page>>,
    /// CSS and JavaScript: the unfinished line. HTML: input gathered for
    /// the parser ([`HTML_GATHER`]).
    carry: Vec<u8>,
    html: Option<Html>,
    html_out: Arc<Mutex<Vec<u8>>>,
    gather: usize,
    bailed_out: Option<String>,
}

impl Rewriter {
    /// A rewriter of a resource of `kind`. For HTML, `head_insert` goes at
    /// the start of the head and `banner` at the start of the body.
    pub fn new(
        kind: Kind,
        ctx: UrlContext,
        head_insert: Option<String>,
        banner: Option<String>,
    ) -> Rewriter {
        let page = Arc::new(Mutex::new(Page {
            ctx,
            head_insert: head_insert.map(|s| lol_str(s.as_bytes())),
            banner: banner.map(|s| lol_str(s.as_bytes())),
            code: None,
            code_carry: Vec::new(),
        }));
        let html_out = Arc::new(Mutex::new(Vec::new()));
        let html = (kind == Kind::Html).then(|| html_rewriter(&page, &html_out));
        Rewriter {
            kind,
            page,
            carry: Vec::new(),
            html,
            html_out,
            gather: HTML_GATHER,
            bailed_out: None,
        }
    }

    /// Gives HTML input to the parser as it comes, not in pieces of
    /// [`HTML_GATHER`] (tests of piece boundaries, fuzzing).
    pub fn without_gathering(mut self) -> Rewriter {
        self.gather = 0;
        self
    }

    /// Why rewriting this page stopped part-way (the rest passed through
    /// unchanged), if it did.
    pub fn bailed_out(&self) -> Option<&str> {
        self.bailed_out.as_deref()
    }

    /// Rewrites `input`, appending what is ready to `out`.
    pub fn feed(&mut self, input: &[u8], out: &mut Vec<u8>) {
        match self.kind {
            Kind::Html => {
                if self.html.is_none() {
                    out.extend_from_slice(input);
                    return;
                }
                self.carry.extend_from_slice(input);
                if self.carry.len() >= self.gather {
                    let buf = std::mem::take(&mut self.carry);
                    self.write_html(&buf, out);
                    self.carry = buf;
                    self.carry.clear();
                }
            }
            Kind::Css | Kind::Js => {
                self.carry.extend_from_slice(input);
                let cut = code_cut(self.kind, &self.carry);
                let page = lock(&self.page);
                rewrite_code(self.kind, &self.carry[..cut], &page.ctx, out);
                drop(page);
                self.carry.drain(..cut);
            }
        }
    }

    /// Rewrites what is held back and adds what was not inserted yet.
    pub fn finish(&mut self, out: &mut Vec<u8>) {
        let rest = std::mem::take(&mut self.carry);
        match self.kind {
            Kind::Html => {
                if self.html.is_some() {
                    self.write_html(&rest, out);
                } else {
                    out.extend_from_slice(&rest);
                }
                if let Some(h) = self.html.take()
                    && let Err(e) = h.end()
                {
                    self.bail_out(&e.to_string());
                }
                out.append(&mut lock(&self.html_out));
                let mut page = lock(&self.page);
                // A script or stylesheet the page never closed.
                let code = std::mem::take(&mut page.code_carry);
                match page.code {
                    Some(k) => rewrite_code(k, &code, &page.ctx, out),
                    None => out.extend_from_slice(&code),
                }
                for insert in [page.head_insert.take(), page.banner.take()]
                    .into_iter()
                    .flatten()
                {
                    out.extend_from_slice(&lol_bytes(&insert));
                }
            }
            Kind::Css | Kind::Js => {
                let page = lock(&self.page);
                rewrite_code(self.kind, &rest, &page.ctx, out);
            }
        }
    }

    fn write_html(&mut self, input: &[u8], out: &mut Vec<u8>) {
        let r = match self.html.as_mut() {
            Some(h) => h.write(input),
            None => {
                out.extend_from_slice(input);
                return;
            }
        };
        if let Err(e) = r {
            // lol_html has passed what it held and `input` to the sink
            // unchanged (graceful bail-out); the rest follows unchanged.
            self.html = None;
            self.bail_out(&e.to_string());
        }
        out.append(&mut lock(&self.html_out));
    }

    fn bail_out(&mut self, why: &str) {
        HTML_BAIL_OUTS.fetch_add(1, Ordering::Relaxed);
        let page = lock(&self.page);
        tracing::warn!(
            url = %page.ctx.base,
            "HTML rewriting stopped ({why}); the rest of the page is served unchanged"
        );
        self.bailed_out = Some(why.to_string());
    }
}

/// The lol_html rewriter of a page, its handlers sharing `page`.
fn html_rewriter(page: &Arc<Mutex<Page>>, out: &Arc<Mutex<Vec<u8>>>) -> Html {
    let on_element = Arc::clone(page);
    let on_text = Arc::clone(page);
    // Bytes of any ASCII-compatible charset pass through as they are;
    // markup a token stream cannot be sure of is rewritten as the
    // tokenizer reads it, not refused (warchest-html).
    let settings = warchest_html::settings(MAX_HTML_MEMORY)
        .append_element_content_handler(element!("*", move |el| {
            on_start_tag(&mut lock(&on_element), el);
            Ok(())
        }))
        .append_element_content_handler(text!("script, style", move |t| {
            on_code_text(&mut lock(&on_text), t);
            Ok(())
        }));
    HtmlRewriter::new(settings, Sink(Arc::clone(out)))
}

fn on_start_tag(page: &mut Page, el: &mut Element<'_, '_>) {
    let name = el.tag_name();
    if name != "head"
        && name != "html"
        && let Some(h) = page.head_insert.take()
    {
        el.before(&h, ContentType::Html);
    }
    rewrite_attributes(page, el, &name);
    match name.as_str() {
        "head" => {
            if let Some(h) = page.head_insert.take() {
                el.prepend(&h, ContentType::Html);
            }
        }
        "body" => {
            if let Some(b) = page.banner.take() {
                el.prepend(&b, ContentType::Html);
            }
        }
        "script" => {
            let js = el.get_attribute("type").is_none_or(|t| {
                let t = t.trim().to_ascii_lowercase();
                t.is_empty()
                    || t.contains("javascript")
                    || t.contains("ecmascript")
                    || t == "module"
            });
            page.code = js.then_some(Kind::Js);
        }
        "style" => page.code = Some(Kind::Css),
        _ => {}
    }
}

/// The text of a `<script>` or `<style>`, in the pieces lol_html gives:
/// rewritten up to where [`code_cut`] allows, the rest held back up to
/// [`MAX_CARRY`].
fn on_code_text(page: &mut Page, t: &mut TextChunk<'_>) {
    let Some(kind) = page.code else {
        return;
    };
    page.code_carry.extend_from_slice(&lol_bytes(t.as_str()));
    let cut = if t.last_in_text_node() {
        page.code_carry.len()
    } else {
        code_cut(kind, &page.code_carry)
    };
    let mut o = Vec::new();
    rewrite_code(kind, &page.code_carry[..cut], &page.ctx, &mut o);
    page.code_carry.drain(..cut);
    if t.last_in_text_node() {
        page.code = None;
    }
    if o.is_empty() {
        t.remove();
    } else {
        t.replace(&lol_str(&o), ContentType::Html);
    }
}

fn rewrite_code(kind: Kind, text: &[u8], ctx: &UrlContext, out: &mut Vec<u8>) {
    match kind {
        Kind::Css => rewrite_css(text, ctx, out),
        Kind::Js => rewrite_js(text, ctx, out),
        Kind::Html => out.extend_from_slice(text),
    }
}

/// Rewrites the URL attributes, `style`, inline event handlers and what
/// `<base>` and `<meta http-equiv=refresh>` say; drops `integrity`.
fn rewrite_attributes(page: &mut Page, el: &mut Element<'_, '_>, tag: &str) {
    let attrs: Vec<(String, String)> = el
        .attributes()
        .iter()
        .map(|a| (a.name(), a.value()))
        .collect();
    if attrs.is_empty() {
        return;
    }
    let get = |n: &str| {
        attrs
            .iter()
            .find(|(k, _)| k == n)
            .map(|(_, v)| attr_value(v, page.ctx.encoding).to_ascii_lowercase())
    };
    let rel = get("rel");
    let as_ = get("as");
    let refresh = tag == "meta"
        && get("http-equiv").is_some_and(|h| h.trim().eq_ignore_ascii_case("refresh"));
    if tag == "meta" && page.ctx.encoding.is_none() {
        // The first `<meta>` declaring a known charset sets the one the
        // URLs after it are read in (a Content-Type's wins), as in the
        // crawler and browsers.
        let (charset, equiv) = (get("charset"), get("http-equiv"));
        let content = get("content");
        page.ctx.encoding = meta_charset(charset.as_deref(), equiv.as_deref(), content.as_deref());
    }
    let enc = page.ctx.encoding;
    let mut edits: Vec<(String, Option<Vec<u8>>)> = Vec::new();
    for (name, raw) in &attrs {
        let ctx = &page.ctx;
        let new: Option<Vec<u8>> = match name.as_str() {
            "integrity" => {
                edits.push((name.clone(), None));
                continue;
            }
            // Code: rewritten as written, entities and all (the URLs
            // the rules look for hold none but `&amp;`, handled there).
            "style" => {
                let code = quotes_unescaped(&lol_bytes(raw));
                let mut o = Vec::new();
                rewrite_css_in(&code, ctx, true, &mut o);
                (o != code).then_some(o)
            }
            n if n.starts_with("on") => {
                let code = lol_bytes(raw);
                let mut o = Vec::new();
                rewrite_js(&code, ctx, &mut o);
                (o != code).then_some(o)
            }
            "srcset" | "imagesrcset" => rewrite_srcset(&attr_value(raw, enc), ctx).map(escaped),
            "href" if tag == "base" => {
                let value = attr_value(raw, enc);
                match resolve_in(&ctx.base, &value, enc.unwrap_or(UTF_8)) {
                    Some(abs) if abs.starts_with("http") && abs.len() <= MAX_BASE => {
                        let new = ctx.archive_url(&abs, "");
                        page.ctx.base = abs;
                        new.map(escaped)
                    }
                    _ => None,
                }
            }
            "content" if refresh => rewrite_refresh(&attr_value(raw, enc), ctx).map(escaped),
            _ => url_modifier(tag, name, rel.as_deref(), as_.as_deref())
                .and_then(|m| ctx.archive_url(&attr_value(raw, enc), m))
                .map(escaped),
        };
        if let Some(n) = new {
            edits.push((name.clone(), Some(n)));
        }
    }
    for (name, value) in edits {
        match value {
            None => el.remove_attribute(&name),
            // The name came from the tag: it is a valid one.
            Some(v) => {
                let _ = el.set_attribute(&name, &lol_str(&v));
            }
        }
    }
}

/// A value for `set_attribute`, which escapes `"` (as `&quot;`) but not
/// `&`.
fn escaped(s: String) -> Vec<u8> {
    s.replace('&', "&amp;").into_bytes()
}

/// `&quot;` and `&#39;` (and their spellings) as the quotes they are, so
/// that CSS sees its quoted strings; `set_attribute` escapes `"` again,
/// and `'` needs no escape in the double quotes it writes.
fn quotes_unescaped(b: &[u8]) -> Vec<u8> {
    if memchr::memchr(b'&', b).is_none() {
        return b.to_vec();
    }
    const QUOTES: [(&[u8], u8); 7] = [
        (b"&quot;", b'"'),
        (b"&#34;", b'"'),
        (b"&#x22;", b'"'),
        (b"&apos;", b'\''),
        (b"&#39;", b'\''),
        (b"&#x27;", b'\''),
        (b"&#039;", b'\''),
    ];
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    'outer: while i < b.len() {
        if b[i] == b'&' {
            for (pat, q) in QUOTES {
                if b[i..].len() >= pat.len() && b[i..i + pat.len()].eq_ignore_ascii_case(pat) {
                    out.push(q);
                    i += pat.len();
                    continue 'outer;
                }
            }
        }
        out.push(b[i]);
        i += 1;
    }
    out
}

/// Which modifier a URL attribute gets, `None` when it holds no URL.
fn url_modifier(
    tag: &str,
    attr: &str,
    rel: Option<&str>,
    as_: Option<&str>,
) -> Option<&'static str> {
    Some(match (tag, attr) {
        ("a" | "area", "href") | ("form", "action") | (_, "formaction") => "",
        ("link", "href") => {
            let rel = rel.unwrap_or("");
            if rel.contains("stylesheet") || as_ == Some("style") {
                modifier::STYLE
            } else if rel.contains("icon") || as_ == Some("image") {
                modifier::IMAGE
            } else if as_ == Some("script") || rel.contains("modulepreload") {
                modifier::SCRIPT
            } else {
                modifier::OBJECT
            }
        }
        ("img" | "input", "src") | ("source" | "picture", "src") => modifier::IMAGE,
        ("script", "src") => modifier::SCRIPT,
        ("iframe" | "frame", "src") => modifier::FRAME,
        (_, "src") => modifier::OBJECT,
        (_, "poster" | "background") => modifier::IMAGE,
        ("object", "data") => modifier::OBJECT,
        _ => return None,
    })
}

/// A `srcset` value with each candidate's URL rewritten in place (the
/// URLs found as the crawler finds them, warchest-html's reading): the
/// descriptors, commas and white space kept as written.
fn rewrite_srcset(value: &str, ctx: &UrlContext) -> Option<String> {
    let mut out = String::new();
    let mut done = 0;
    for r in srcset_urls(value) {
        if let Some(u) = ctx.archive_url(&value[r.clone()], modifier::IMAGE) {
            out.push_str(&value[done..r.start]);
            out.push_str(&u);
            done = r.end;
        }
    }
    (done > 0).then(|| {
        out.push_str(&value[done..]);
        out
    })
}

/// A refresh value with its URL rewritten in place (found as the crawler
/// finds it, warchest-html's reading: `url=` or not, quoted or not), the
/// rest as written.
fn rewrite_refresh(value: &str, ctx: &UrlContext) -> Option<String> {
    let r = refresh_url(value)?;
    let new = ctx.archive_url(&value[r.clone()], "")?;
    Some(format!("{}{new}{}", &value[..r.start], &value[r.end..]))
}

/// Where to cut `b` so that the tail held back starts a line (at most
/// [`MAX_CARRY`] held).
fn line_cut(b: &[u8]) -> usize {
    match memchr::memrchr(b'\n', b) {
        Some(p) => p + 1,
        None if b.len() > MAX_CARRY => b.len(),
        None => 0,
    }
}

/// Where to cut code held back so that what is rewritten now reads every
/// URL as the whole text would: a script at a line's start ([`line_cut`];
/// a URL in a script never spans lines), CSS where warchest-html's
/// [`css_cut`] allows (never inside `url( ... )` or after an unfinished
/// one, which may span lines), as the crawler cuts it; past
/// [`MAX_CARRY`] held, an unfinished one no longer holds the rest, and
/// where `css_cut` finds no place, as [`line_cut`]. So a stylesheet fed in pieces is
/// rewritten as when whole.
fn code_cut(kind: Kind, b: &[u8]) -> usize {
    match kind {
        Kind::Css => {
            let held = b.len() <= MAX_CARRY;
            match css_cut(b, held) {
                0 if !held => line_cut(b),
                cut => cut,
            }
        }
        _ => line_cut(b),
    }
}

static JS_URL: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?i)\bhttps?:(?:\\?/){2}[a-z0-9][-a-z0-9.]*(?::[0-9]+)?").expect("valid regex")
});

/// Rewrites `url(...)` and `@import` in CSS text.
pub fn rewrite_css(text: &[u8], ctx: &UrlContext, out: &mut Vec<u8>) {
    rewrite_css_in(text, ctx, false, out);
}

/// The URL a CSS rule names, its escapes resolved: in an attribute
/// (`in_attr`), its character references decoded first (the HTML parser's
/// work before CSS sees it). Read in the charset `enc`, as the crawler
/// reads it.
fn css_url(url: &[u8], in_attr: bool, enc: Option<&'static Encoding>) -> String {
    let url = page_text(url, enc);
    let url = if in_attr {
        decode_references(&url).into_owned()
    } else {
        url.into_owned()
    };
    css_unescape(&url).into_owned()
}

/// [`rewrite_css`], in an attribute's value when `in_attr`: URLs are
/// read with their character references decoded and written with `&`
/// escaped. Each URL (found as the crawler finds it, warchest-html's
/// matcher) is replaced in place, escaped for where it is written; the
/// rest is copied as it is.
fn rewrite_css_in(text: &[u8], ctx: &UrlContext, in_attr: bool, out: &mut Vec<u8>) {
    let mut done = 0;
    for u in css_urls(text) {
        // `@import url(...)` keeps the image modifier it always had.
        let m = match u.form {
            CssUrlForm::Import => modifier::STYLE,
            CssUrlForm::Url | CssUrlForm::ImportUrl => modifier::IMAGE,
        };
        let Some(new) = ctx.archive_url(&css_url(&text[u.range.clone()], in_attr, ctx.encoding), m)
        else {
            continue;
        };
        let new = css_escape(&new, u.quote);
        out.extend_from_slice(&text[done..u.range.start]);
        if in_attr {
            out.extend_from_slice(new.replace('&', "&amp;").as_bytes());
        } else {
            out.extend_from_slice(new.as_bytes());
        }
        done = u.range.end;
    }
    out.extend_from_slice(&text[done..]);
}

/// Hosts whose URLs in scripts are names, not addresses (XML namespaces).
const JS_KEEP_HOSTS: [&str; 1] = ["www.w3.org"];

/// Rewrites absolute `http(s)://` URLs in JavaScript text into absolute
/// archive URLs (slashes escaped as the original's are).
pub fn rewrite_js(text: &[u8], ctx: &UrlContext, out: &mut Vec<u8>) {
    let r = JS_URL.replace_all(text, |c: &Captures<'_>| {
        let m = c.get(0).map_or(&[][..], |m| m.as_bytes());
        let s = String::from_utf8_lossy(m);
        let escaped = s.contains("\\/");
        let plain = s.replace("\\/", "/");
        let host = plain.split("//").nth(1).unwrap_or("");
        if JS_KEEP_HOSTS.iter().any(|h| host.eq_ignore_ascii_case(h))
            || ctx.abs_prefix.starts_with(&plain)
        {
            return m.to_vec();
        }
        let prefix = format!("{}{}{}/", ctx.abs_prefix, ctx.timestamp, modifier::PAGE);
        let prefix = if escaped {
            prefix.replace('/', "\\/")
        } else {
            prefix
        };
        let mut v = prefix.into_bytes();
        v.extend_from_slice(m);
        v
    });
    // The page's `location` read through the client script's object.
    out.extend_from_slice(&crate::js_location::rewrite_location(&r));
}

/// Rewrites everything `r` gives into `w` with `rw`, in pieces of 64 KiB.
///
/// # Errors
/// Reading or writing failed.
pub fn copy_rewritten(rw: &mut Rewriter, r: &mut dyn Read, w: &mut dyn Write) -> io::Result<u64> {
    let mut buf = vec![0u8; 64 << 10];
    let mut out = Vec::with_capacity(80 << 10);
    let mut n = 0u64;
    loop {
        let k = match r.read(&mut buf) {
            Ok(0) => break,
            Ok(k) => k,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        out.clear();
        rw.feed(&buf[..k], &mut out);
        w.write_all(&out)?;
        n += out.len() as u64;
    }
    out.clear();
    rw.finish(&mut out);
    w.write_all(&out)?;
    Ok(n + out.len() as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ctx() -> UrlContext {
        UrlContext {
            prefix: "/c/".into(),
            abs_prefix: "http://h:1/c/".into(),
            timestamp: "2014".into(),
            base: "http://ex.com/dir/page.html".into(),
            encoding: None,
        }
    }

    fn html_bytes(input: &[u8], piece: usize) -> Vec<u8> {
        let mut rw = Rewriter::new(
            Kind::Html,
            ctx(),
            Some("<script>X</script>".into()),
            Some("<div id=B></div>".into()),
        )
        .without_gathering();
        let mut out = Vec::new();
        for ch in input.chunks(piece) {
            rw.feed(ch, &mut out);
        }
        rw.finish(&mut out);
        assert_eq!(rw.bailed_out(), None);
        out
    }

    fn html(input: &str, piece: usize) -> String {
        String::from_utf8(html_bytes(input.as_bytes(), piece)).unwrap()
    }

    /// CSS whose URLs span lines (white space inside `url( ... )` and
    /// after `@import`), an `url(` in a comment never closed, and the
    /// fuzzer's `url(>\n)`: fed in pieces of every size, in a stylesheet
    /// and in a `<style>` element, rewritten as when whole; before, a
    /// piece ending after the line of `url(` left that URL unrewritten.
    #[test]
    fn css_urls_across_lines_are_rewritten_in_any_pieces() {
        let css = "a{background:url(\n  'x.png'\n)}\n@import\n  \"i.css\";\n\
/* url( is not closed here */\nb{background:URL(\ny.png )}\nurl(>\n)\n";
        let rewrite = |css: &str, piece: usize| {
            let mut rw = Rewriter::new(Kind::Css, ctx(), None, None);
            let mut out = Vec::new();
            for ch in css.as_bytes().chunks(piece) {
                rw.feed(ch, &mut out);
            }
            rw.finish(&mut out);
            String::from_utf8(out).unwrap()
        };
        // The fuzzer's second: an `url(` inside an `@import` string.
        let import = "T@import \"/curl(ng);\"";
        for (css, urls) in [
            (
                css,
                &[
                    "2014im_/http://ex.com/dir/x.png",
                    "2014cs_/http://ex.com/dir/i.css",
                    "2014im_/http://ex.com/dir/y.png",
                    "2014im_/http://ex.com/dir/%3E",
                ][..],
            ),
            (import, &["2014cs_/http://ex.com/curl(ng);"][..]),
        ] {
            let whole = rewrite(css, css.len());
            for u in urls {
                assert!(whole.contains(u), "{u} in {whole}");
            }
            for piece in 1..=css.len() {
                assert_eq!(rewrite(css, piece), whole, "pieces of {piece}");
            }
        }
        let page = format!("<style>{css}</style>");
        let want = html(&page, page.len());
        assert!(want.contains("2014im_/http://ex.com/dir/x.png"), "{want}");
        for piece in 1..=page.len() {
            assert_eq!(html(&page, piece), want, "page in pieces of {piece}");
        }
    }

    /// An `url(` never closed (in a comment) holds a stylesheet back only
    /// up to [`MAX_CARRY`]: past it what is held goes out up to its last
    /// cut outside every URL, so what is held stays bounded, and the
    /// output is the whole's.
    #[test]
    fn an_unclosed_url_holds_back_only_up_to_the_bound() {
        let mut css = b"/* url( */\n".to_vec();
        while css.len() < 2 * MAX_CARRY {
            css.extend_from_slice(b"p{}\n");
        }
        css.extend_from_slice(b"b{c:url(z.png)}");
        let run = |piece: usize| {
            let mut rw = Rewriter::new(Kind::Css, ctx(), None, None);
            let (mut out, mut most) = (Vec::new(), 0);
            for ch in css.chunks(piece) {
                rw.feed(ch, &mut out);
                most = most.max(rw.carry.len());
            }
            rw.finish(&mut out);
            (out, most)
        };
        let (whole, _) = run(css.len());
        let (pieces, most) = run(1000);
        assert!(most <= MAX_CARRY + 1000, "{most} bytes held");
        assert!(
            most > MAX_CARRY / 2,
            "the unclosed url( held nothing back: {most}"
        );
        assert!(pieces == whole);
        assert!(
            String::from_utf8_lossy(&whole).contains("url(/c/2014im_/http://ex.com/dir/z.png)")
        );
    }

    #[test]
    fn rewrites_html_in_any_pieces() {
        let page = "<!doctype html><html><head><link rel=stylesheet href=\"/s.css\" integrity=\"sha-x\">\
<style>body{background:url('bg.png')}</style></head><body class=x>\
<a href='http://other.com/a?b=1&amp;c=2'>x</a> 1 < 2 <img src=i.png srcset=\"a.png 1x, /b.png 2x\">\
<script>var u = \"https:\\/\\/api.ex.com\\/v1\"; if (a<b) {}</script>\
<iframe src=\"//f.com/\"></iframe><a href=\"#top\">t</a><a href=\"javascript:void(0)\">j</a>\
<meta http-equiv=\"refresh\" content=\"0; url=/next\"><!-- <img src=\"no.png\"> --></body></html>";
        let want = html(page, page.len());
        for piece in [1, 3, 7, 64] {
            assert_eq!(html(page, piece), want, "piece {piece}");
        }
        assert!(want.contains("<head><script>X</script><link rel=stylesheet href=\"/c/2014cs_/http://ex.com/s.css\">"), "{want}");
        assert!(
            want.contains("url('/c/2014im_/http://ex.com/dir/bg.png')"),
            "{want}"
        );
        assert!(want.contains("<body class=x><div id=B></div>"), "{want}");
        assert!(
            want.contains("href=\"/c/2014/http://other.com/a?b=1&amp;c=2\""),
            "{want}"
        );
        assert!(want.contains(" 1 < 2 "), "{want}");
        assert!(
            want.contains("src=\"/c/2014im_/http://ex.com/dir/i.png\""),
            "{want}"
        );
        assert!(want.contains("srcset=\"/c/2014im_/http://ex.com/dir/a.png 1x, /c/2014im_/http://ex.com/b.png 2x\""), "{want}");
        assert!(
            want.contains("\"http:\\/\\/h:1\\/c\\/2014mp_\\/https:\\/\\/api.ex.com\\/v1\""),
            "{want}"
        );
        assert!(want.contains("src=\"/c/2014if_/http://f.com/\""), "{want}");
        assert!(want.contains("href=\"#top\"") && want.contains("javascript:void(0)"));
        assert!(
            want.contains("content=\"0; url=/c/2014/http://ex.com/next\""),
            "{want}"
        );
        assert!(want.contains("<!-- <img src=\"no.png\"> -->"), "{want}");
        assert!(!want.contains("integrity"));
    }

    /// A URL with a comma in a srcset: rewritten whole (the old split on
    /// every comma cut it in two), the rest of the value byte for byte.
    #[test]
    fn srcset_urls_with_commas() {
        let out = html(
            "<img srcset=\"a,b.jpg 1x,  /c.jpg?w=1,2\t2x ,d.jpg,#f 3x\">\
<link rel=preload as=image imagesrcset=\"e,f.png 100w\">",
            3,
        );
        assert!(
            out.contains(
                "srcset=\"/c/2014im_/http://ex.com/dir/a,b.jpg 1x,  \
/c/2014im_/http://ex.com/c.jpg?w=1,2\t2x ,/c/2014im_/http://ex.com/dir/d.jpg,#f 3x\""
            ),
            "{out}"
        );
        assert!(
            out.contains("imagesrcset=\"/c/2014im_/http://ex.com/dir/e,f.png 100w\""),
            "{out}"
        );
        // Nothing to rewrite: the tag as written.
        assert!(
            html("<img srcset=\"#a 1x, data:x 2x\">", 2)
                .contains("<img srcset=\"#a 1x, data:x 2x\">")
        );
    }

    /// A refresh without `url=` (the old search for `url=` left it
    /// alone: a leak to the live web), and one with quotes: the URL
    /// rewritten in place, the rest as written.
    #[test]
    fn refresh_without_url_equals() {
        for (content, want) in [
            ("5; http://x.test/", "5; /c/2014/http://x.test/"),
            ("3, other.html", "3, /c/2014/http://ex.com/dir/other.html"),
            (
                "0;URL = &#39;q.html&#39; ",
                "0;URL = '/c/2014/http://ex.com/dir/q.html' ",
            ),
            ("10", "10"),
            ("; url=no.html", "; url=no.html"),
        ] {
            let out = html(
                &format!("<meta http-equiv=refresh content=\"{content}\">"),
                4,
            );
            assert!(
                out.contains(&format!("content=\"{want}\"")),
                "{content}: {out}"
            );
        }
    }

    #[test]
    fn base_href_changes_resolution() {
        let out = html(
            "<head><base href=\"http://b.com/x/\"></head><img src=\"y.png\">",
            5,
        );
        assert!(
            out.contains("<base href=\"/c/2014/http://b.com/x/\">"),
            "{out}"
        );
        assert!(out.contains("/c/2014im_/http://b.com/x/y.png"), "{out}");
    }

    #[test]
    fn no_head_or_body_still_gets_inserts() {
        let out = html("<p>hi", 2);
        assert!(out.starts_with("<script>X</script><p>hi"), "{out}");
        assert!(out.ends_with("<div id=B></div>"), "{out}");
    }

    #[test]
    fn css_and_js() {
        let mut o = Vec::new();
        rewrite_css(
            b"@import 'a.css'; p { background: url( img/x.gif ) } q{background:url(data:x)}",
            &ctx(),
            &mut o,
        );
        let s = String::from_utf8(o).unwrap();
        assert!(
            s.contains("@import '/c/2014cs_/http://ex.com/dir/a.css'"),
            "{s}"
        );
        assert!(
            s.contains("url( /c/2014im_/http://ex.com/dir/img/x.gif )"),
            "{s}"
        );
        assert!(s.contains("url(data:x)"));
        let mut o = Vec::new();
        rewrite_js(
            b"f('http://x.com/a'); ns='http://www.w3.org/2000/svg'",
            &ctx(),
            &mut o,
        );
        let s = String::from_utf8(o).unwrap();
        assert_eq!(
            s,
            "f('http://h:1/c/2014mp_/http://x.com/a'); ns='http://www.w3.org/2000/svg'"
        );
    }

    /// CSS escapes (replay's old pattern cut `url(a\)b.png)` at the
    /// escaped parenthesis and rewrote `a\`): the URL read as the crawler
    /// reads it, written back escaped, the rest byte for byte.
    #[test]
    fn css_escapes_and_imports_without_space() {
        let mut o = Vec::new();
        rewrite_css(
            br#"a{b:url(a\)b.png)} c{d:url( "x\"y.png" )} @import"n.css";"#,
            &ctx(),
            &mut o,
        );
        assert_eq!(
            String::from_utf8(o).unwrap(),
            r#"a{b:url(/c/2014im_/http://ex.com/dir/a\)b.png)} c{d:url( "/c/2014im_/http://ex.com/dir/x%22y.png" )} @import"/c/2014cs_/http://ex.com/dir/n.css";"#
        );
        let out = html("<p style=\"background:url(s\\ p.png?a=1&amp;b=2)\">", 3);
        assert!(
            out.contains(
                "style=\"background:url(/c/2014im_/http://ex.com/dir/s%20p.png?a=1&amp;b=2)\""
            ),
            "{out}"
        );
    }

    proptest::proptest! {
        // Any bytes, in any pieces: no panic, the same output whatever the
        // pieces, and text without markup or URLs passes unchanged.
        #[test]
        fn any_input_any_pieces(
            data in proptest::collection::vec(proptest::sample::select(
                b"<>/=\"' \nabcsrhef:()url@import-!".to_vec()), 0..400),
            piece in 1usize..50,
        ) {
            let text = String::from_utf8_lossy(&data).into_owned();
            let whole = html(&text, text.len().max(1));
            proptest::prop_assert_eq!(html(&text, piece), whole);
            for kind in [Kind::Css, Kind::Js] {
                let mut rw = Rewriter::new(kind, ctx(), None, None);
                let mut out = Vec::new();
                for ch in data.chunks(piece) {
                    rw.feed(ch, &mut out);
                }
                rw.finish(&mut out);
            }
        }

        #[test]
        fn plain_text_is_unchanged(t in "[a-z ,.\n]{0,200}") {
            let mut rw = Rewriter::new(Kind::Html, ctx(), None, None);
            let mut out = Vec::new();
            rw.feed(t.as_bytes(), &mut out);
            rw.finish(&mut out);
            proptest::prop_assert_eq!(out, t.as_bytes());
        }
    }

    #[test]
    fn huge_tag_passes_the_rest_through_counted() {
        let before = html_bail_outs();
        let mut page = String::from("<p><img src=a.png><img alt=\"");
        page.push_str(&"a".repeat(MAX_HTML_MEMORY + 10));
        page.push_str("\"><a href=\"/x\">x</a>");
        let mut rw = Rewriter::new(Kind::Html, ctx(), Some("<script>X</script>".into()), None);
        let mut out = Vec::new();
        for ch in page.as_bytes().chunks(64 << 10) {
            rw.feed(ch, &mut out);
        }
        rw.finish(&mut out);
        assert!(rw.bailed_out().is_some());
        assert!(html_bail_outs() > before);
        let out = String::from_utf8(out).unwrap();
        // Rewritten up to the huge tag, unchanged from there on, the
        // insert still there, nothing lost.
        assert!(
            out.starts_with("<script>X</script><p><img src=\"/c/2014im_/"),
            "{}",
            &out[..200]
        );
        let tail = &page[page.find("<img alt").unwrap()..];
        assert!(out.ends_with(tail), "{}", &out[out.len() - 100..]);
    }

    #[test]
    fn rewriter_is_send() {
        fn send<T: Send>() {}
        send::<Rewriter>();
    }

    #[test]
    fn event_handlers_and_style_attributes() {
        let page = "<body onload=\"go('http://x.com/a?b=1&amp;c=2')\" \
onclick='location=\"https://y.com/\"' data-x=\"http://z.com/\">\
<div style=\"background:url(&quot;i.png?a=1&amp;b=2&quot;); color:&#x72;ed\">";
        let out = html(page, 3);
        assert_eq!(out, html(page, page.len()));
        assert!(
            out.contains("onload=\"go('http://h:1/c/2014mp_/http://x.com/a?b=1&amp;c=2')\""),
            "{out}"
        );
        assert!(
            // The handler is JavaScript: `location` goes through the
            // client script's accessor, as in scripts (js_location.rs).
            out.contains(
                "onclick=\"__warchest_location=&quot;http://h:1/c/2014mp_/https://y.com/&quot;\""
            ),
            "{out}"
        );
        assert!(out.contains("data-x=\"http://z.com/\""), "{out}");
        assert!(
            out.contains("style=\"background:url(&quot;/c/2014im_/http://ex.com/dir/i.png?a=1&amp;b=2&quot;); color:&#x72;ed\""),
            "{out}"
        );
    }

    #[test]
    fn character_references_in_urls() {
        let out = html(
            "<a href=\"/p?a=1&#38;b=2&amp;c=3&copy=4\">1</a><a href=\"http&#x3a;&#47;&#47;q.com/\">2</a>",
            4,
        );
        assert!(
            out.contains("href=\"/c/2014/http://ex.com/p?a=1&amp;b=2&amp;c=3&amp;copy=4\""),
            "{out}"
        );
        assert!(out.contains("href=\"/c/2014/http://q.com/\""), "{out}");
        assert_eq!(
            decode_references("&lt&ltx&#0;&#x110000;&amp"),
            "<&ltx\u{fffd}\u{fffd}&"
        );
        assert_eq!(decode_references("&#99999999999;&#;&x"), "\u{fffd}&#;&x");
    }

    /// References the crawler did not decode (`&sol;`, `&colon;`) are
    /// read as the browser reads them, as the crawler now reads them too.
    #[test]
    fn references_read_as_the_crawler_reads_them() {
        let out = html(
            "<a href=\"&sol;&sol;o.test&#x2F;p\">o</a><a href=\"javascript&colon;go()\">j</a>",
            3,
        );
        assert!(out.contains("href=\"/c/2014/http://o.test/p\""), "{out}");
        assert!(out.contains("href=\"javascript&colon;go()\""), "{out}");
    }

    /// Any of HTML's named references in a URL, not only those of URL
    /// punctuation, read as the crawler reads them (the attribute rule:
    /// `&copy=` before `=` is no reference); values holding references
    /// but no URL are written back as they were, byte for byte.
    #[test]
    fn all_named_references_in_urls() {
        let page = "<a href=\"/s?q=caf&eacute;&amp;r=&rarr;\" title=\"&copy;&hellip;&copy2\" \
data-x=\"&amp=&rarr\">a</a><a href=\"/t?a=1&copy=2&not\">b</a>";
        let out = html(page, 5);
        assert!(
            out.contains(
                "<a href=\"/c/2014/http://ex.com/s?q=caf%C3%A9&amp;r=%E2%86%92\" \
title=\"&copy;&hellip;&copy2\" data-x=\"&amp=&rarr\">"
            ),
            "{out}"
        );
        assert!(
            out.contains("href=\"/c/2014/http://ex.com/t?a=1&amp;copy=2%C2%AC\""),
            "{out}"
        );
    }

    #[test]
    fn bytes_of_any_charset_pass_through() {
        // Every byte value in text, in a comment, in attributes left alone
        // and in a script, in a Latin-1 page: unchanged.
        let all: Vec<u8> = (0u8..=255).filter(|b| !b"<>&\"'".contains(b)).collect();
        let mut page = b"<p title=\"".to_vec();
        page.extend_from_slice(&all);
        page.extend_from_slice(b"\">");
        page.extend_from_slice(&all);
        page.extend_from_slice(b"<!--");
        page.extend_from_slice(&all);
        page.extend_from_slice(b"--><script>var s='");
        page.extend_from_slice(&all);
        page.extend_from_slice(b"';</script>");
        let out = html_bytes(&page, 7);
        let want = [b"<script>X</script>".as_slice(), &page, b"<div id=B></div>"].concat();
        assert_eq!(out, want);
        // A URL in Latin-1 in a page naming no charset: read as the
        // crawler reads it (not UTF-8, so windows-1252), its path sent as
        // UTF-8; the rest of the tag untouched.
        let out = html_bytes(b"<a title=\"caf\xe9\" href=\"/caf\xe9\">", 2);
        let want =
            b"<script>X</script><a title=\"caf\xe9\" href=\"/c/2014/http://ex.com/caf%C3%A9\">";
        assert!(out.starts_with(want), "{}", String::from_utf8_lossy(&out));
        // UTF-8 kept as UTF-8 in the inserts and in the rewritten URL.
        let out = html("<a href=\"http://ex.com/café\">é</a>", 1);
        assert!(
            out.contains("href=\"/c/2014/http://ex.com/café\">é</a>"),
            "{out}"
        );
    }

    /// `page` rewritten with the Content-Type charset `encoding`.
    fn html_in(page: &[u8], encoding: Option<&'static Encoding>) -> String {
        let mut rw = Rewriter::new(Kind::Html, UrlContext { encoding, ..ctx() }, None, None)
            .without_gathering();
        let mut out = Vec::new();
        for ch in page.chunks(3) {
            rw.feed(ch, &mut out);
        }
        rw.finish(&mut out);
        String::from_utf8_lossy(&out).into_owned()
    }

    /// A URL's query is encoded in the page's charset, as the crawler
    /// (and browsers) encode it: on a windows-1252 page `&eacute;` is
    /// `%E9`, the capture made, not UTF-8's `%C3%A9`; the path stays
    /// UTF-8.
    #[test]
    fn queries_in_the_page_charset() {
        let page = b"<a href=\"/s?q=caf&eacute;&amp;x=&#233;\">a</a>";
        let w1252 = Some(encoding_rs::WINDOWS_1252);
        let out = html_in(page, w1252);
        assert!(
            out.contains("href=\"/c/2014/http://ex.com/s?q=caf%E9&amp;x=%E9\""),
            "{out}"
        );
        for utf8 in [None, Some(UTF_8)] {
            let out = html_in(page, utf8);
            assert!(
                out.contains("href=\"/c/2014/http://ex.com/s?q=caf%C3%A9&amp;x=%C3%A9\""),
                "{out}"
            );
        }
        // Raw bytes in the page's charset: the path in UTF-8, the query
        // in the charset; an absolute URL's query too, and in CSS.
        let out = html_in(
            b"<a href=\"caf\xe9?q=\xe9\">a</a><img src=\"http://o.test/i?q=&eacute;\">\
<p style=\"background:url(b?q=\xe9)\">",
            w1252,
        );
        assert!(
            out.contains("href=\"/c/2014/http://ex.com/dir/caf%C3%A9?q=%E9\""),
            "{out}"
        );
        assert!(
            out.contains("src=\"/c/2014im_/http://o.test/i?q=%E9\""),
            "{out}"
        );
        assert!(
            out.contains("url(/c/2014im_/http://ex.com/dir/b?q=%E9)"),
            "{out}"
        );
    }

    /// Without a Content-Type charset, the first `<meta>` declaring one
    /// sets it for the URLs after it; a header's charset is not overridden
    /// by one.
    #[test]
    fn meta_charset_switches_the_urls_after_it() {
        let link = "<a href=\"/s?q=caf&eacute;\">a</a>";
        for meta in [
            "<meta charset=windows-1252>",
            "<meta http-equiv=Content-Type content=\"text/html; charset=iso-8859-1\">",
        ] {
            let page = format!("{link}{meta}<meta charset=utf-8>{link}");
            let out = html_in(page.as_bytes(), None);
            let before = out.find("q=caf%C3%A9").unwrap_or(usize::MAX);
            let after = out.find("q=caf%E9").unwrap_or(0);
            assert!(before < after, "{out}");
        }
        let out = html_in(
            format!("<meta charset=windows-1252>{link}").as_bytes(),
            Some(UTF_8),
        );
        assert!(out.contains("q=caf%C3%A9"), "{out}");
    }

    #[test]
    fn scripts_in_pieces_and_scripts_left_alone() {
        let mut page = String::from("<script>\n");
        for i in 0..200 {
            page.push_str(&format!("f('http://x{i}.com/p');"));
        }
        page.push_str(
            "\n</script><script type=\"text/template\">http://t.com/</script>\
<style>a{background:url(/b.png)}</style><script>var u='http://end.com/'",
        );
        let whole = html(&page, page.len());
        assert!(whole.contains("f('http://h:1/c/2014mp_/http://x199.com/p');"));
        assert!(whole.contains("f('http://h:1/c/2014mp_/http://x0.com/p');"));
        assert!(whole.contains(">http://t.com/</script>"), "{whole}");
        assert!(
            whole.contains("url(/c/2014im_/http://ex.com/b.png)"),
            "{whole}"
        );
        // Never closed: rewritten all the same.
        assert!(
            whole.contains("var u='http://h:1/c/2014mp_/http://end.com/'"),
            "{whole}"
        );
        for piece in [1, 5, 33, 1000] {
            assert_eq!(html(&page, piece), whole, "piece {piece}");
        }
    }

    #[test]
    fn gathering_gives_the_same_output() {
        let page = "<html><head><title>t</title></head><body><a href=x>x</a><script>\nvar a='http://a.com/';\n</script></body></html>".repeat(500);
        let mut rw = Rewriter::new(Kind::Html, ctx(), Some("<i>".into()), Some("<b>".into()));
        let mut out = Vec::new();
        for ch in page.as_bytes().chunks(100) {
            rw.feed(ch, &mut out);
        }
        rw.finish(&mut out);
        assert_eq!(String::from_utf8(out).unwrap(), {
            let mut rw = Rewriter::new(Kind::Html, ctx(), Some("<i>".into()), Some("<b>".into()))
                .without_gathering();
            let mut out = Vec::new();
            for ch in page.as_bytes().chunks(7) {
                rw.feed(ch, &mut out);
            }
            rw.finish(&mut out);
            String::from_utf8(out).unwrap()
        });
    }
}
