//! URLs in replay: resolving references against a page's URL (RFC 3986
//! section 5.2, enough of it for web pages), archive URLs
//! (`/{collection}/{timestamp}{modifier}/{url}`) and their timestamps
//! (padded by `warchest::http::date::pad_timestamp`).

use encoding_rs::{Encoding, UTF_8};

/// The scheme of `s` when it starts with one (`http:`, `data:`), lower-case.
pub fn scheme(s: &str) -> Option<String> {
    let end = s.find(':')?;
    let sch = &s[..end];
    let mut bytes = sch.bytes();
    let first = bytes.next()?;
    if !first.is_ascii_alphabetic()
        || !bytes.all(|b| b.is_ascii_alphanumeric() || b == b'+' || b == b'-' || b == b'.')
    {
        return None;
    }
    Some(sch.to_ascii_lowercase())
}

/// Resolves `reference` against the absolute URL `base` (RFC 3986 section
/// 5.2, as browsers do it: the `url` crate). A reference with a scheme of
/// its own (`https:`, `data:`, `javascript:`) is returned as written.
/// `None` when the base is not absolute. The query is UTF-8: see
/// [`resolve_in`] for a page in another charset.
pub fn resolve(base: &str, reference: &str) -> Option<String> {
    resolve_in(base, reference, UTF_8)
}

/// [`resolve`] for a reference in a page in `enc`: as a browser (and the
/// crawler, through the same `warchest_html::resolve_url`) resolves it,
/// the query encoded in `enc`, so that the URL is the one archived. In a
/// UTF-8 page an absolute reference is returned as written, as by
/// [`resolve`]; in another, an `http(s):` one is parsed too, for its
/// query.
pub fn resolve_in(base: &str, reference: &str, enc: &'static Encoding) -> Option<String> {
    let r = reference.trim_matches(|c: char| c.is_ascii_whitespace());
    if let Some(s) = scheme(r)
        && (enc == UTF_8 || (s != "http" && s != "https"))
    {
        return Some(r.to_string());
    }
    let base = url::Url::parse(base).ok();
    if base.is_none() && scheme(r).is_none() {
        return None;
    }
    warchest_html::resolve_url(base.as_ref(), r, enc).map(String::from)
}

/// The encoding the `charset` of a Content-Type value names, for a page's
/// URLs (UTF-16 read as UTF-8, as browsers and the crawler read it); the
/// parameter found as `warchest::http::content_type_charset` finds it.
pub fn content_type_encoding(content_type: &[u8]) -> Option<&'static Encoding> {
    warchest_html::encoding_for_label(&warchest::http::content_type_charset(content_type)?)
}

/// Modifiers of archive URLs, as pywb names them.
pub mod modifier {
    /// The archived bytes, unchanged.
    pub const IDENTITY: &str = "id_";
    /// An image (served as archived, no banner).
    pub const IMAGE: &str = "im_";
    /// A script: rewritten as JavaScript.
    pub const SCRIPT: &str = "js_";
    /// A stylesheet: rewritten as CSS.
    pub const STYLE: &str = "cs_";
    /// A frame: rewritten, no banner.
    pub const FRAME: &str = "if_";
    /// Embedded object or media: no banner.
    pub const OBJECT: &str = "oe_";
    /// Page content without the banner.
    pub const PAGE: &str = "mp_";
    /// A service worker's script: JavaScript, the client script first.
    pub const SERVICE_WORKER: &str = "sw_";
}

/// The modifiers recognised after a timestamp.
const MODIFIERS: [&str; 9] = [
    "id_", "im_", "js_", "cs_", "if_", "fr_", "oe_", "mp_", "sw_",
];

/// A parsed `{timestamp}{modifier}` path segment.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TimeSpec {
    /// The digits given (1 to 14 of them).
    pub timestamp: String,
    /// The modifier (`""` for none).
    pub modifier: String,
}

impl TimeSpec {
    /// Parses `20140126200624`, `2014im_`, `20140126200624id_`; `None` for
    /// anything else.
    pub fn parse(seg: &str) -> Option<TimeSpec> {
        let digits = seg.bytes().take_while(u8::is_ascii_digit).count();
        if digits == 0 || digits > 14 {
            return None;
        }
        let modifier = &seg[digits..];
        if !modifier.is_empty() && !MODIFIERS.contains(&modifier) {
            return None;
        }
        Some(TimeSpec {
            timestamp: seg[..digits].to_string(),
            modifier: modifier.to_string(),
        })
    }
}

/// The URL part of a replay path, made absolute the way browsers and
/// proxies may have mangled it: `http:/x` (slashes merged) becomes
/// `http://x`, and a URL without a scheme gets `http://`. A scheme and
/// host percent-encoded, as clients quote a URL into a path
/// (`http%3A//host/` from cdx_toolkit, `http%3A%2F%2Fhost%2F`), are
/// decoded first, as pywb and the Wayback Machine take them; the rest of
/// the URL is left as it is.
pub fn normalize_target(url: &str) -> String {
    let decoded = decode_scheme_and_host(url);
    let url = decoded.as_ref();
    for sch in ["http:", "https:"] {
        if let Some(rest) = url.strip_prefix(sch)
            && !rest.starts_with("//")
        {
            return format!("{sch}//{}", rest.trim_start_matches('/'));
        }
    }
    if scheme(url).is_some() && url.contains("://") {
        url.to_string()
    } else if let Some(rest) = url.strip_prefix("//") {
        format!("http://{rest}")
    } else {
        format!("http://{url}")
    }
}

/// `url` with its part before the path (the scheme and host: up to the
/// first `/` or `?` that neither follows `:` or `/` nor comes before
/// `/`) percent-decoded, where that part has a `%` and decodes to UTF-8.
fn decode_scheme_and_host(url: &str) -> std::borrow::Cow<'_, str> {
    let b = url.as_bytes();
    let end = (0..b.len())
        .find(|&i| {
            matches!(b[i], b'/' | b'?')
                && !(i > 0 && matches!(b[i - 1], b':' | b'/'))
                && b.get(i + 1) != Some(&b'/')
        })
        .unwrap_or(b.len());
    let head = &url[..end];
    if !head.contains('%') {
        return url.into();
    }
    match percent_encoding::percent_decode_str(head).decode_utf8() {
        Ok(h) => format!("{h}{}", &url[end..]).into(),
        Err(_) => url.into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn resolves_references() {
        let b = "http://a.example/b/c/d;p?q";
        for (r, want) in [
            ("g", "http://a.example/b/c/g"),
            ("./g", "http://a.example/b/c/g"),
            ("g/", "http://a.example/b/c/g/"),
            ("/g", "http://a.example/g"),
            // The url crate writes the empty path of an http URL as "/".
            ("//g", "http://g/"),
            ("?y", "http://a.example/b/c/d;p?y"),
            ("g?y", "http://a.example/b/c/g?y"),
            ("#s", "http://a.example/b/c/d;p?q#s"),
            ("../g", "http://a.example/b/g"),
            ("../..", "http://a.example/"),
            ("../../../g", "http://a.example/g"),
            ("https://x.example/y", "https://x.example/y"),
            (" img.png ", "http://a.example/b/c/img.png"),
        ] {
            assert_eq!(resolve(b, r).as_deref(), Some(want), "{r}");
        }
        assert_eq!(
            resolve("http://example.com", "a.css").as_deref(),
            Some("http://example.com/a.css")
        );
        assert_eq!(resolve("not a url", "a"), None);
    }

    #[test]
    fn time_specs() {
        assert_eq!(
            TimeSpec::parse("20140126200624im_"),
            Some(TimeSpec {
                timestamp: "20140126200624".into(),
                modifier: "im_".into()
            })
        );
        assert_eq!(TimeSpec::parse("2014").unwrap().modifier, "");
        assert!(TimeSpec::parse("2014xx_").is_none());
        assert!(TimeSpec::parse("http:").is_none());
        assert!(TimeSpec::parse("123456789012345").is_none());
    }

    #[test]
    fn targets() {
        assert_eq!(normalize_target("http:/x.com/a"), "http://x.com/a");
        assert_eq!(normalize_target("x.com/a"), "http://x.com/a");
        assert_eq!(normalize_target("https://x.com/"), "https://x.com/");
        // Quoted by a client: the scheme and host decoded, as pywb does;
        // the path and query kept as they came.
        for (quoted, want) in [
            ("http%3A//x.com/a%20b?q=%2F", "http://x.com/a%20b?q=%2F"),
            ("https%3a%2F%2Fx.com%2Fa", "https://x.com/a"),
            ("http%3A%2F%2Fx.com", "http://x.com"),
            ("x.com%3A8080/a", "http://x.com:8080/a"),
            ("http%3A//x.com?q=1", "http://x.com?q=1"),
            // Not UTF-8 once decoded: as it was.
            ("http%3A//x%FF.com/", "http://http%3A//x%FF.com/"),
        ] {
            assert_eq!(normalize_target(quoted), want, "{quoted}");
        }
    }
}
