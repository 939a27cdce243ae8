//! Rewriting archived HTML, CSS and JavaScript so that the URLs they name
//! lead back into the archive (`/{collection}/{timestamp}{modifier}/{url}`).
//!
//! The rewriters work on bytes (every charset a page is likely to use is
//! ASCII-compatible where URLs are), streamed: input comes in pieces, and
//! at most a bounded tail (an unfinished tag, the current line of a script
//! or stylesheet) is held back until more arrives. A tag or comment longer
//! than [`MAX_CARRY`] is passed through unchanged.
//!
//! HTML: URL attributes (`href`, `src`, `srcset`, `action`, `formaction`,
//! `poster`, `data`, `background`), `style` attributes and `<style>`
//! elements as CSS, inline scripts as JavaScript, `<base href>` (it also
//! becomes the base against which the page's URLs are resolved), and
//! `<meta http-equiv=refresh>`. `integrity` attributes are dropped (a
//! rewritten script no longer has the hash). The caller's head insert
//! (the client-side script) goes right after `<head>` (or before the first
//! tag that is not `<html>`), the banner right after `<body>` (or at the
//! end when the page has no body tag).
//!
//! CSS: `url(...)` and `@import "..."`. JavaScript: absolute `http(s)://`
//! URLs, slashes escaped or not, become absolute archive URLs; the client
//! script handles URLs that are only made at run time.

use std::io::{self, Read, Write};
use std::sync::LazyLock;

use regex::bytes::{Captures, Regex};

use super::url::{modifier, resolve, scheme};

/// Longest tag, comment or line held back while waiting for its end.
pub const MAX_CARRY: usize = 256 << 10;

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
        let abs = resolve(&self.base, r)?;
        if !(abs.starts_with("http://") || abs.starts_with("https://")) {
            return None;
        }
        Some(format!("{}{}{modifier}/{abs}", self.prefix, self.timestamp))
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Mode {
    Text,
    /// Inside `<script>`: JavaScript when `true`, other data otherwise.
    Script(bool),
    Style,
}

/// A streaming rewriter of one resource.
pub struct Rewriter {
    kind: Kind,
    ctx: UrlContext,
    head_insert: Option<Vec<u8>>,
    banner: Option<Vec<u8>>,
    mode: Mode,
    carry: Vec<u8>,
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
        Rewriter {
            kind,
            ctx,
            head_insert: head_insert.map(String::into_bytes),
            banner: banner.map(String::into_bytes),
            mode: Mode::Text,
            carry: Vec::new(),
        }
    }

    /// Rewrites `input`, appending what is ready to `out`.
    pub fn feed(&mut self, input: &[u8], out: &mut Vec<u8>) {
        self.carry.extend_from_slice(input);
        self.process(out, false);
    }

    /// Rewrites what is held back and adds what was not inserted yet.
    pub fn finish(&mut self, out: &mut Vec<u8>) {
        self.process(out, true);
        if self.kind == Kind::Html {
            if let Some(h) = self.head_insert.take() {
                out.extend_from_slice(&h);
            }
            if let Some(b) = self.banner.take() {
                out.extend_from_slice(&b);
            }
        }
    }

    fn process(&mut self, out: &mut Vec<u8>, eof: bool) {
        let buf = std::mem::take(&mut self.carry);
        let used = match self.kind {
            Kind::Html => self.process_html(&buf, out, eof),
            Kind::Css | Kind::Js => {
                let cut = if eof { buf.len() } else { line_cut(&buf, 0) };
                let kind = self.kind;
                self.rewrite_code(kind, &buf[..cut], out);
                cut
            }
        };
        self.carry = buf[used..].to_vec();
    }

    fn rewrite_code(&self, kind: Kind, text: &[u8], out: &mut Vec<u8>) {
        match kind {
            Kind::Css => rewrite_css(text, &self.ctx, out),
            Kind::Js => rewrite_js(text, &self.ctx, out),
            Kind::Html => out.extend_from_slice(text),
        }
    }

    /// Returns how much of `buf` was used.
    fn process_html(&mut self, buf: &[u8], out: &mut Vec<u8>, eof: bool) -> usize {
        let mut i = 0;
        while i < buf.len() {
            match self.mode {
                Mode::Text => {
                    let Some(p) = memchr::memchr(b'<', &buf[i..]) else {
                        out.extend_from_slice(&buf[i..]);
                        return buf.len();
                    };
                    out.extend_from_slice(&buf[i..i + p]);
                    i += p;
                    let rest = &buf[i..];
                    if rest.len() < 4 && !eof {
                        return i;
                    }
                    if rest.starts_with(b"<!--") {
                        match memchr::memmem::find(&rest[4..], b"-->") {
                            Some(e) => {
                                out.extend_from_slice(&rest[..e + 7]);
                                i += e + 7;
                            }
                            None if eof || rest.len() > MAX_CARRY => {
                                out.extend_from_slice(rest);
                                return buf.len();
                            }
                            None => return i,
                        }
                        continue;
                    }
                    let next = rest.get(1).copied().unwrap_or(b' ');
                    if !(next.is_ascii_alphabetic() || matches!(next, b'/' | b'!' | b'?')) {
                        out.push(b'<');
                        i += 1;
                        continue;
                    }
                    match tag_end(rest) {
                        Some(e) => {
                            self.handle_tag(&rest[..=e], out);
                            i += e + 1;
                        }
                        None if eof || rest.len() > MAX_CARRY => {
                            out.extend_from_slice(rest);
                            return buf.len();
                        }
                        None => return i,
                    }
                }
                Mode::Script(_) | Mode::Style => {
                    let js = self.mode == Mode::Script(true);
                    let style = self.mode == Mode::Style;
                    let end: &[u8] = if style { b"</style" } else { b"</script" };
                    let kind = if style {
                        Kind::Css
                    } else if js {
                        Kind::Js
                    } else {
                        Kind::Html
                    };
                    let rest = &buf[i..];
                    match find_ci(rest, end) {
                        Some(p) => {
                            self.rewrite_code(kind, &rest[..p], out);
                            i += p;
                            self.mode = Mode::Text;
                        }
                        None => {
                            let cut = if eof {
                                rest.len()
                            } else {
                                line_cut(rest, end.len())
                            };
                            self.rewrite_code(kind, &rest[..cut], out);
                            return i + cut;
                        }
                    }
                }
            }
        }
        i
    }

    fn inject_head(&mut self, out: &mut Vec<u8>) {
        if let Some(h) = self.head_insert.take() {
            out.extend_from_slice(&h);
        }
    }

    fn handle_tag(&mut self, tag: &[u8], out: &mut Vec<u8>) {
        if tag.starts_with(b"</") || tag.starts_with(b"<!") || tag.starts_with(b"<?") {
            if tag.starts_with(b"</") && self.head_insert.is_some() {
                let name = tag_name(&tag[2..]);
                if name != "html" {
                    self.inject_head(out);
                }
            }
            out.extend_from_slice(tag);
            return;
        }
        let name = tag_name(&tag[1..]);
        if name != "head" && name != "html" {
            self.inject_head(out);
        }
        let attrs = parse_attrs(tag, 1 + name.len());
        let rewritten = self.rewrite_tag(tag, &name, &attrs);
        out.extend_from_slice(rewritten.as_deref().unwrap_or(tag));
        let self_closing = tag.ends_with(b"/>");
        match name.as_str() {
            "head" => self.inject_head(out),
            "body" => {
                self.inject_head(out);
                if let Some(b) = self.banner.take() {
                    out.extend_from_slice(&b);
                }
            }
            "script" if !self_closing => {
                let js = attr_value(tag, &attrs, "type").is_none_or(|t| {
                    let t = t.trim().to_ascii_lowercase();
                    t.is_empty()
                        || t.contains("javascript")
                        || t.contains("ecmascript")
                        || t == "module"
                });
                self.mode = Mode::Script(js);
            }
            "style" if !self_closing => self.mode = Mode::Style,
            _ => {}
        }
    }

    /// The tag with its attributes rewritten, `None` when unchanged.
    fn rewrite_tag(&mut self, tag: &[u8], name: &str, attrs: &[Attr]) -> Option<Vec<u8>> {
        let mut edits: Vec<(usize, usize, Vec<u8>)> = Vec::new();
        let rel = attr_value(tag, attrs, "rel").map(|r| r.to_ascii_lowercase());
        let as_ = attr_value(tag, attrs, "as").map(|r| r.to_ascii_lowercase());
        for a in attrs {
            let an = &a.name;
            let Some((vs, ve)) = a.value else {
                continue;
            };
            let raw = String::from_utf8_lossy(&tag[vs..ve]).into_owned();
            let value = unescape_attr(&raw);
            let new: Option<String> = match an.as_str() {
                "integrity" => {
                    edits.push((a.start, a.end, Vec::new()));
                    continue;
                }
                "style" => {
                    let mut o = Vec::new();
                    rewrite_css(value.as_bytes(), &self.ctx, &mut o);
                    (o != value.as_bytes()).then(|| String::from_utf8_lossy(&o).into_owned())
                }
                "srcset" | "imagesrcset" => rewrite_srcset(&value, &self.ctx),
                "href" if name == "base" => {
                    if let Some(abs) = resolve(&self.ctx.base, &value)
                        && abs.starts_with("http")
                    {
                        let new = self.ctx.archive_url(&abs, "");
                        self.ctx.base = abs;
                        new
                    } else {
                        None
                    }
                }
                "content" if name == "meta" => {
                    let refresh = attr_value(tag, attrs, "http-equiv")
                        .is_some_and(|h| h.trim().eq_ignore_ascii_case("refresh"));
                    if refresh {
                        rewrite_refresh(&value, &self.ctx)
                    } else {
                        None
                    }
                }
                _ => match url_modifier(name, an, rel.as_deref(), as_.as_deref()) {
                    Some(m) => self.ctx.archive_url(&value, m),
                    None => None,
                },
            };
            if let Some(n) = new {
                let q = a.quote.unwrap_or(b'"');
                let mut v = Vec::new();
                if a.quote.is_none() {
                    v.push(b'"');
                }
                v.extend_from_slice(escape_attr(&n, q).as_bytes());
                if a.quote.is_none() {
                    v.push(b'"');
                }
                edits.push((vs, ve, v));
            }
        }
        if edits.is_empty() {
            return None;
        }
        edits.sort_by_key(|e| e.0);
        let mut out = Vec::with_capacity(tag.len() + 64);
        let mut at = 0;
        for (s, e, v) in edits {
            if s < at {
                continue;
            }
            out.extend_from_slice(&tag[at..s]);
            out.extend_from_slice(&v);
            at = e;
        }
        out.extend_from_slice(&tag[at..]);
        Some(out)
    }
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

#[derive(Debug)]
struct Attr {
    name: String,
    /// The whole attribute, for removal.
    start: usize,
    end: usize,
    /// The value's bytes, quotes excluded.
    value: Option<(usize, usize)>,
    quote: Option<u8>,
}

fn tag_name(b: &[u8]) -> String {
    let n = b
        .iter()
        .take_while(|c| !c.is_ascii_whitespace() && !matches!(c, b'>' | b'/'))
        .count();
    String::from_utf8_lossy(&b[..n]).to_ascii_lowercase()
}

/// Where the `>` ending the tag at the start of `b` is, quotes respected.
fn tag_end(b: &[u8]) -> Option<usize> {
    #[derive(PartialEq)]
    enum S {
        Normal,
        AfterEq,
        Unquoted,
        Quoted(u8),
    }
    let mut s = S::Normal;
    for (i, &c) in b.iter().enumerate().skip(1) {
        s = match s {
            S::Normal => match c {
                b'>' => return Some(i),
                b'=' => S::AfterEq,
                _ => S::Normal,
            },
            S::AfterEq => match c {
                b'>' => return Some(i),
                b'"' | b'\'' => S::Quoted(c),
                c if c.is_ascii_whitespace() => S::AfterEq,
                _ => S::Unquoted,
            },
            S::Unquoted => match c {
                b'>' => return Some(i),
                c if c.is_ascii_whitespace() => S::Normal,
                _ => S::Unquoted,
            },
            S::Quoted(q) if c == q => S::Normal,
            S::Quoted(q) => S::Quoted(q),
        };
    }
    None
}

fn parse_attrs(tag: &[u8], from: usize) -> Vec<Attr> {
    let mut v = Vec::new();
    let n = tag.len().saturating_sub(1); // the closing '>'
    let mut i = from;
    while i < n {
        while i < n && (tag[i].is_ascii_whitespace() || tag[i] == b'/') {
            i += 1;
        }
        if i >= n {
            break;
        }
        let start = i;
        while i < n && !tag[i].is_ascii_whitespace() && !matches!(tag[i], b'=' | b'>' | b'/') {
            i += 1;
        }
        if i == start {
            i += 1;
            continue;
        }
        let name = String::from_utf8_lossy(&tag[start..i]).to_ascii_lowercase();
        let mut j = i;
        while j < n && tag[j].is_ascii_whitespace() {
            j += 1;
        }
        if j < n && tag[j] == b'=' {
            j += 1;
            while j < n && tag[j].is_ascii_whitespace() {
                j += 1;
            }
            if j < n && (tag[j] == b'"' || tag[j] == b'\'') {
                let q = tag[j];
                let vs = j + 1;
                let ve = memchr::memchr(q, &tag[vs..n]).map_or(n, |p| vs + p);
                i = (ve + 1).min(n);
                v.push(Attr {
                    name,
                    start,
                    end: i,
                    value: Some((vs, ve)),
                    quote: Some(q),
                });
            } else {
                let vs = j;
                while j < n && !tag[j].is_ascii_whitespace() && tag[j] != b'>' {
                    j += 1;
                }
                i = j;
                v.push(Attr {
                    name,
                    start,
                    end: i,
                    value: Some((vs, j)),
                    quote: None,
                });
            }
        } else {
            v.push(Attr {
                name,
                start,
                end: i,
                value: None,
                quote: None,
            });
        }
    }
    v
}

fn attr_value(tag: &[u8], attrs: &[Attr], name: &str) -> Option<String> {
    let a = attrs.iter().find(|a| a.name == name)?;
    let (s, e) = a.value?;
    Some(unescape_attr(&String::from_utf8_lossy(&tag[s..e])))
}

/// The character references URLs in attributes commonly carry.
fn unescape_attr(s: &str) -> String {
    if !s.contains('&') {
        return s.to_string();
    }
    s.replace("&amp;", "&")
        .replace("&#38;", "&")
        .replace("&quot;", "\"")
        .replace("&#39;", "'")
        .replace("&#x2F;", "/")
        .replace("&#47;", "/")
}

fn escape_attr(s: &str, quote: u8) -> String {
    let s = s.replace('&', "&amp;");
    if quote == b'\'' {
        s.replace('\'', "&#39;")
    } else {
        s.replace('"', "&quot;")
    }
}

fn rewrite_srcset(value: &str, ctx: &UrlContext) -> Option<String> {
    let mut changed = false;
    let parts: Vec<String> = value
        .split(',')
        .map(|item| {
            let t = item.trim();
            let (url, desc) = t.split_once(char::is_whitespace).unwrap_or((t, ""));
            match ctx.archive_url(url, modifier::IMAGE) {
                Some(u) => {
                    changed = true;
                    if desc.is_empty() {
                        u
                    } else {
                        format!("{u} {}", desc.trim())
                    }
                }
                None => t.to_string(),
            }
        })
        .collect();
    changed.then(|| parts.join(", "))
}

fn rewrite_refresh(value: &str, ctx: &UrlContext) -> Option<String> {
    let lower = value.to_ascii_lowercase();
    let p = lower.find("url=")?;
    let url = value[p + 4..]
        .trim()
        .trim_matches(|c| c == '\'' || c == '"');
    let new = ctx.archive_url(url, "")?;
    Some(format!("{}{new}", &value[..p + 4]))
}

/// Where to cut `b` so that the tail held back starts a line (at most
/// [`MAX_CARRY`] held), keeping the last `keep` bytes back in any case.
fn line_cut(b: &[u8], keep: usize) -> usize {
    let limit = b.len().saturating_sub(keep);
    match memchr::memrchr(b'\n', &b[..limit]) {
        Some(p) => p + 1,
        None if b.len() > MAX_CARRY => limit,
        None => 0,
    }
}

fn find_ci(hay: &[u8], needle: &[u8]) -> Option<usize> {
    if hay.len() < needle.len() {
        return None;
    }
    (0..=hay.len() - needle.len()).find(|&i| hay[i..i + needle.len()].eq_ignore_ascii_case(needle))
}

static CSS_URL: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r#"(?i)(url\(\s*)(?:"([^"]*)"|'([^']*)'|([^)"'\s]*))(\s*\))"#).expect("valid regex")
});
static CSS_IMPORT: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r#"(?i)(@import\s+)(?:"([^"]*)"|'([^']*)')"#).expect("valid regex")
});
static JS_URL: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?i)\bhttps?:(?:\\?/){2}[a-z0-9][-a-z0-9.]*(?::[0-9]+)?").expect("valid regex")
});

fn group_url<'a>(c: &'a Captures<'_>, groups: &[usize]) -> Option<(usize, &'a [u8])> {
    groups
        .iter()
        .find_map(|&g| c.get(g).map(|m| (g, m.as_bytes())))
}

/// Rewrites `url(...)` and `@import` in CSS text.
pub fn rewrite_css(text: &[u8], ctx: &UrlContext, out: &mut Vec<u8>) {
    let step1 = CSS_URL.replace_all(text, |c: &Captures<'_>| {
        let whole = c.get(0).map_or(&[][..], |m| m.as_bytes()).to_vec();
        let Some((g, url)) = group_url(c, &[2, 3, 4]) else {
            return whole;
        };
        let url = String::from_utf8_lossy(url);
        let Some(new) = ctx.archive_url(&url, modifier::IMAGE) else {
            return whole;
        };
        let q = match g {
            2 => "\"",
            3 => "'",
            _ => "",
        };
        let mut v = c.get(1).map_or(&[][..], |m| m.as_bytes()).to_vec();
        v.extend_from_slice(format!("{q}{new}{q}").as_bytes());
        v.extend_from_slice(c.get(5).map_or(&[][..], |m| m.as_bytes()));
        v
    });
    let step2 = CSS_IMPORT.replace_all(&step1, |c: &Captures<'_>| {
        let whole = c.get(0).map_or(&[][..], |m| m.as_bytes()).to_vec();
        let Some((g, url)) = group_url(c, &[2, 3]) else {
            return whole;
        };
        let url = String::from_utf8_lossy(url);
        let Some(new) = ctx.archive_url(&url, modifier::STYLE) else {
            return whole;
        };
        let q = if g == 2 { "\"" } else { "'" };
        let mut v = c.get(1).map_or(&[][..], |m| m.as_bytes()).to_vec();
        v.extend_from_slice(format!("{q}{new}{q}").as_bytes());
        v
    });
    out.extend_from_slice(&step2);
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
        }
    }

    fn html(input: &str, piece: usize) -> String {
        let mut rw = Rewriter::new(
            Kind::Html,
            ctx(),
            Some("<script>X</script>".into()),
            Some("<div id=B></div>".into()),
        );
        let mut out = Vec::new();
        for ch in input.as_bytes().chunks(piece) {
            rw.feed(ch, &mut out);
        }
        rw.finish(&mut out);
        String::from_utf8(out).unwrap()
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
        assert!(want.contains("<head><script>X</script><link rel=stylesheet href=\"/c/2014cs_/http://ex.com/s.css\" >"), "{want}");
        assert!(
            want.contains("url('/c/2014im_/http://ex.com/dir/bg.png')"),
            "{want}"
        );
        assert!(want.contains("<body class=x><div id=B></div>"), "{want}");
        assert!(
            want.contains("href='/c/2014/http://other.com/a?b=1&amp;c=2'"),
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
    fn huge_tag_passes_through() {
        let mut page = String::from("<img alt=\"");
        page.push_str(&"a".repeat(MAX_CARRY + 10));
        let out = html(&page, 4096);
        assert!(out.contains(&page));
    }
}
