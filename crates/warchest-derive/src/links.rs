//! Links that Common Crawl's WAT finds outside attributes: CSS `url()`
//! and `@import` in a `<style>` element, and the two JavaScript forms of
//! an `onclick` handler (`location = '...'`, `window.open('...')`).
//!
//! Written by hand rather than with regexes: each is one forward scan
//! with bounded lengths, and the rules are those of ia-web-commons'
//! `ExtractingParseObserver` (docs/derive.md lists where we differ).

/// CSS is read for links up to this many bytes (Common Crawl: the first
/// 100,000 characters).
pub const MAX_CSS: usize = 100_000;

/// A `url()` value longer than this is not a link (Common Crawl's
/// pattern allows 1 to 8,000 characters).
const MAX_CSS_URL: usize = 8_000;

/// Java's `\s`: space, tab, LF, VT, FF, CR.
fn is_space(b: u8) -> bool {
    matches!(b, b' ' | b'\t' | b'\n' | 0x0b | 0x0c | b'\r')
}

fn skip_space(b: &[u8], mut i: usize) -> usize {
    while i < b.len() && is_space(b[i]) {
        i += 1;
    }
    i
}

/// Strips runs of quotes (each optionally escaped by a backslash) from
/// both ends, as Common Crawl trims a CSS URL.
fn trim_quotes(mut s: &str) -> &str {
    const QUOTES: [&str; 4] = ["\\\"", "\\'", "\"", "'"];
    while let Some(t) = QUOTES.iter().find_map(|q| s.strip_prefix(q)) {
        s = t;
    }
    while let Some(t) = QUOTES.iter().find_map(|q| s.strip_suffix(q)) {
        s = t;
    }
    s
}

/// The URLs of a style sheet's text, in Common Crawl's order: every
/// `url(...)` first, then every `@import "..."` written without `url`.
/// Matches starting past [`MAX_CSS`] bytes are not read; at most `limit`
/// URLs are given.
pub fn css_urls(css: &str, limit: usize) -> Vec<&str> {
    let mut out = Vec::new();
    scan_css(css, b"url", url_at, limit, &mut out);
    scan_css(css, b"@import", import_at, limit, &mut out);
    out
}

/// Every match of `scan` at an occurrence of `needle` that starts within
/// [`MAX_CSS`] bytes, matches not overlapping.
fn scan_css<'a>(
    css: &'a str,
    needle: &[u8],
    scan: fn(&'a str, usize) -> Option<(&'a str, usize)>,
    limit: usize,
    out: &mut Vec<&'a str>,
) {
    let b = css.as_bytes();
    let finder = memchr::memmem::Finder::new(needle);
    let mut from = 0;
    while from < b.len().min(MAX_CSS) && out.len() < limit {
        let Some(n) = finder.find(&b[from..]) else {
            break;
        };
        let at = from + n;
        if at >= MAX_CSS {
            break;
        }
        match scan(css, at) {
            Some((url, end)) => {
                let url = trim_quotes(url);
                if !url.is_empty() {
                    out.push(url);
                }
                from = end;
            }
            None => from = at + 1,
        }
    }
}

/// `url\s*\(\s*([^)\s]{1,8000})\s*\)` at `at`: the group and the end.
fn url_at(css: &str, at: usize) -> Option<(&str, usize)> {
    let b = css.as_bytes();
    let mut i = skip_space(b, at + 3);
    if b.get(i) != Some(&b'(') {
        return None;
    }
    i = skip_space(b, i + 1);
    let start = i;
    while i < b.len() && b[i] != b')' && !is_space(b[i]) && i - start <= MAX_CSS_URL {
        i += 1;
    }
    let end = i;
    // Counted in bytes; the value's end is an ASCII byte, so `end` is a
    // character boundary.
    if end == start || end - start > MAX_CSS_URL {
        return None;
    }
    i = skip_space(b, i);
    (b.get(i) == Some(&b')')).then(|| (&css[start..end], i + 1))
}

/// `@import\s+(...)\s*;` at `at`, where the group is a quoted string, a
/// parenthesised (quoted) string or a bare name `[a-z0-9_.:/\\-]+`. The
/// parentheses are dropped (Common Crawl keeps them, an URL no one can
/// fetch).
fn import_at(css: &str, at: usize) -> Option<(&str, usize)> {
    let b = css.as_bytes();
    let mut i = at + 7;
    if !b.get(i).is_some_and(|&c| is_space(c)) {
        return None;
    }
    i = skip_space(b, i);
    let quoted = |i: usize, q: u8| -> Option<usize> {
        // `q[^q]+q`: the index after the closing quote.
        let n = memchr::memchr(q, b.get(i + 1..)?)?;
        (n > 0).then_some(i + 1 + n + 1)
    };
    let (start, end, next) = match *b.get(i)? {
        q @ (b'\'' | b'"') => {
            let e = quoted(i, q)?;
            (i, e, e)
        }
        b'(' => {
            // `\('...'\)`, `\("..."\)`, else `\([^)]+\)`.
            let inner = match b.get(i + 1) {
                Some(&q @ (b'\'' | b'"')) => quoted(i + 1, q).filter(|&e| b.get(e) == Some(&b')')),
                _ => None,
            };
            match inner {
                Some(e) => (i + 1, e, e + 1),
                None => {
                    let n = memchr::memchr(b')', &b[i + 1..])?;
                    if n == 0 {
                        return None;
                    }
                    (i + 1, i + 1 + n, i + 1 + n + 1)
                }
            }
        }
        _ => {
            let mut e = i;
            while e < b.len()
                && matches!(b[e], b'a'..=b'z' | b'0'..=b'9' | b'_' | b'.' | b':' | b'/' | b'\\' | b'-')
            {
                e += 1;
            }
            if e == i {
                return None;
            }
            (i, e, e)
        }
    };
    let j = skip_space(b, next);
    (b.get(j) == Some(&b';')).then(|| (&css[start..end], j + 1))
}

fn strip_prefix_ci<'a>(s: &'a str, prefix: &str) -> Option<&'a str> {
    let head = s.get(..prefix.len())?;
    head.eq_ignore_ascii_case(prefix)
        .then(|| &s[prefix.len()..])
}

/// The URLs of an `onclick` handler (its value, entities decoded) in the
/// two forms Common Crawl reads, case-insensitive:
/// `[javascript:][window.|top.|document.|self.|parent.]location[.href] = 'URL'`
/// (the whole value) and `[javascript:](window|parent).open('URL'` or
/// `"URL"` followed by `,` or `)`. The URL is 3 to 256 characters without
/// quotes.
pub fn onclick_urls(value: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let v = strip_prefix_ci(value, "javascript:").unwrap_or(value);
    // `location = '...'`, anchored at both ends.
    let loc = ["window.", "top.", "document.", "self.", "parent."]
        .iter()
        .find_map(|p| strip_prefix_ci(v, p).and_then(|r| strip_prefix_ci(r, "location")))
        .or_else(|| strip_prefix_ci(v, "location"));
    if let Some(r) = loc {
        let r = strip_prefix_ci(r, ".href").unwrap_or(r);
        let r = r.trim_start_matches(|c: char| c.is_ascii() && is_space(c as u8));
        if let Some(r) = r.strip_prefix('=') {
            let r = r.trim_start_matches(|c: char| c.is_ascii() && is_space(c as u8));
            // Java's `$` also matches before a final line terminator.
            let r = r
                .strip_suffix("\r\n")
                .or_else(|| r.strip_suffix('\n'))
                .or_else(|| r.strip_suffix('\r'))
                .unwrap_or(r);
            if let Some(url) = r.strip_prefix('\'').and_then(|r| r.strip_suffix('\''))
                && quoted_url(url)
            {
                out.push(url);
            }
        }
    }
    // `window.open('...'`.
    let open = ["window.open(", "parent.open("]
        .iter()
        .find_map(|p| strip_prefix_ci(v, p));
    if let Some(r) = open
        && let Some(q @ ('\'' | '"')) = r.chars().next()
    {
        let r = &r[1..];
        if let Some(n) = r.find(['\'', '"'])
            && r[n..].starts_with(q)
            && matches!(r.as_bytes().get(n + 1), Some(b',' | b')'))
            && quoted_url(&r[..n])
        {
            out.push(&r[..n]);
        }
    }
    out
}

/// 3 to 256 characters (UTF-16 units in Java; characters here), none a
/// quote.
fn quoted_url(url: &str) -> bool {
    let n = url.chars().count();
    (3..=256).contains(&n) && !url.contains(['\'', '"'])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn css_url_forms() {
        let css = r#"body { background: url(a.png) }
            .b { background: url( "b c.png" ) } /* a space inside: not a link */
            .c { background: url( 'c.png' ) ; }
            .d { background:url(\"d.png\") }
            .e { background: url() }
            @import url("e.css");
            @import "f.css";
            @import 'g.css' ;
            @import ("h.css");
            @import (i.css);
            @import j.css;
            @import "k.css" screen;
            .l { background: URL(l.png) }"#;
        assert_eq!(
            css_urls(css, 100),
            [
                "a.png", "c.png", "d.png", "e.css", "f.css", "g.css", "h.css", "i.css", "j.css"
            ]
        );
    }

    #[test]
    fn css_is_read_for_its_first_100000_bytes() {
        let mut css = "x".repeat(MAX_CSS - 10);
        css.push_str("url(a.png) url(b.png)");
        assert_eq!(css_urls(&css, 100), ["a.png"]);
        assert_eq!(css_urls("url(a) url(b) url(c)", 2), ["a", "b"]);
        let long = format!("url({})", "y".repeat(MAX_CSS_URL + 1));
        assert!(css_urls(&long, 100).is_empty());
        let longest = format!("url({})", "y".repeat(MAX_CSS_URL));
        assert_eq!(css_urls(&longest, 100).len(), 1);
    }

    #[test]
    fn onclick_forms() {
        assert_eq!(onclick_urls("location='/next.html'"), ["/next.html"]);
        assert_eq!(
            onclick_urls("javascript:window.location.href = '/a b'"),
            ["/a b"]
        );
        assert_eq!(onclick_urls("Document.Location='/x/y'\n"), ["/x/y"]);
        assert_eq!(
            onclick_urls("window.open('/pop.html','w','width=100')"),
            ["/pop.html"]
        );
        assert_eq!(onclick_urls(r#"parent.open("/p.html")"#), ["/p.html"]);
        // Not the forms read: a trailing statement, a double quote for
        // location, too short, mixed quotes, another object.
        assert!(onclick_urls("location='/next.html'; return false").is_empty());
        assert!(onclick_urls(r#"location="/next.html""#).is_empty());
        assert!(onclick_urls("location='/a'").is_empty());
        assert!(onclick_urls(r#"window.open('/pop.html")"#).is_empty());
        assert!(onclick_urls("foo.open('/pop.html')").is_empty());
        assert!(onclick_urls("window.open('/pop.html'+x)").is_empty());
    }
}
