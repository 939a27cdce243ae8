//! Links from response headers: `Location` (a redirect, `R`), `Refresh`
//! (`R`), and `Link` (RFC 8288: embeds for `stylesheet`, `preload`,
//! `icon`... as `E`, other relations inferred, `I`).

use encoding_rs::UTF_8;
use url::Url;

use super::{Extracted, Link, LinkSet};
use crate::uri::Hop;

/// The most links taken from one response's headers.
pub const MAX_HEADER_LINKS: usize = 1000;

/// The links of a response's `headers` (name, raw value), resolved against
/// `base` (the URL fetched). Values are read as UTF-8 (windows-1252 when
/// not valid), as browsers read `Location`. Those past
/// [`MAX_HEADER_LINKS`] are left out: [`extract_headers`] counts them.
pub fn links_from_headers<I, N, V>(base: &Url, headers: I) -> Vec<Link>
where
    I: IntoIterator<Item = (N, V)>,
    N: AsRef<str>,
    V: AsRef<[u8]>,
{
    extract_headers(base, headers).links
}

/// [`links_from_headers`], with the links left out counted in
/// [`Extracted::dropped`] (past [`MAX_HEADER_LINKS`], or too long).
pub fn extract_headers<I, N, V>(base: &Url, headers: I) -> Extracted
where
    I: IntoIterator<Item = (N, V)>,
    N: AsRef<str>,
    V: AsRef<[u8]>,
{
    let mut links = LinkSet::new(MAX_HEADER_LINKS);
    for (name, value) in headers {
        let name = name.as_ref();
        let value = warchest_html::page_text(value.as_ref(), None);
        if name.eq_ignore_ascii_case("location") {
            links.add(base, &value, UTF_8, Hop::Redirect, "header/Location");
        } else if name.eq_ignore_ascii_case("refresh") {
            if let Some(r) = warchest_html::refresh_url(&value) {
                links.add(base, &value[r], UTF_8, Hop::Redirect, "header/Refresh");
            }
        } else if name.eq_ignore_ascii_case("link") {
            let (values, more) = link_header_values(&value);
            // Link values past the bound are not parsed, only counted.
            links.out.dropped += more;
            for (target, rel) in values {
                let embed = rel.split_ascii_whitespace().any(|r| {
                    matches!(
                        r.to_ascii_lowercase().as_str(),
                        "stylesheet" | "preload" | "prefetch" | "modulepreload" | "icon"
                    )
                });
                let hop = if embed { Hop::Embed } else { Hop::Inferred };
                links.add(base, target, UTF_8, hop, "header/Link");
            }
        }
    }
    links.out
}

/// The (target, rel) pairs of a `Link` header value
/// (`<a.css>; rel=stylesheet, <b>; rel="next"`), at most
/// [`MAX_HEADER_LINKS`].
pub fn parse_link_header(v: &str) -> Vec<(&str, String)> {
    link_header_values(v).0
}

/// [`parse_link_header`], and how many link values came past the bound.
fn link_header_values(v: &str) -> (Vec<(&str, String)>, usize) {
    let mut out = Vec::new();
    let mut rest = v;
    while let Some(open) = rest.find('<') {
        let after = &rest[open + 1..];
        let Some(close) = after.find('>') else { break };
        let target = &after[..close];
        let params_all = &after[close + 1..];
        // Parameters run to the next `<` that starts a link value (commas
        // in quoted strings are rare; a `<` never appears in params).
        let end = params_all.find('<').unwrap_or(params_all.len());
        let params = &params_all[..end];
        let rel = params
            .split(';')
            .filter_map(|p| p.split_once('='))
            .find(|(k, _)| k.trim().eq_ignore_ascii_case("rel"))
            .map(|(_, v)| {
                v.trim()
                    .trim_end_matches(',')
                    .trim()
                    .trim_matches('"')
                    .to_string()
            })
            .unwrap_or_default();
        out.push((target, rel));
        rest = &params_all[end..];
        if out.len() >= MAX_HEADER_LINKS {
            // The rest counted as the loop above would take them: a `<`,
            // then its `>`.
            let mut more = 0;
            while let Some(open) = rest.find('<') {
                let Some(close) = rest[open + 1..].find('>') else {
                    break;
                };
                more += 1;
                rest = &rest[open + 1 + close + 1..];
            }
            return (out, more);
        }
    }
    (out, 0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn location_refresh_and_link() {
        let base = Url::parse("http://h.test/a/b").unwrap();
        let h: Vec<(&str, &[u8])> = vec![
            ("Content-Type", b"text/html"),
            ("location", b"../moved?x=1#frag"),
            ("Refresh", b"5; url=/r"),
            ("Link", b"</s.css>; rel=stylesheet, <https://cdn.test/f.woff2>; rel=\"preload\"; as=font, </next>; rel=\"next\""),
        ];
        let got: Vec<(String, char, &str)> = links_from_headers(&base, h)
            .into_iter()
            .map(|l| (l.url.to_string(), l.hop.letter(), l.context))
            .collect();
        assert_eq!(
            got,
            [
                (
                    "http://h.test/moved?x=1".to_string(),
                    'R',
                    "header/Location"
                ),
                ("http://h.test/r".to_string(), 'R', "header/Refresh"),
                ("http://h.test/s.css".to_string(), 'E', "header/Link"),
                ("https://cdn.test/f.woff2".to_string(), 'E', "header/Link"),
                ("http://h.test/next".to_string(), 'I', "header/Link"),
            ]
        );
    }

    /// Link values past the bound are counted, in the one header or
    /// across several.
    #[test]
    fn link_values_past_the_bound_are_counted() {
        let base = Url::parse("http://h.test/").unwrap();
        let v: Vec<String> = (0..MAX_HEADER_LINKS + 7)
            .map(|i| format!("</p{i}>; rel=next"))
            .collect();
        let v = v.join(", ");
        let e = extract_headers(&base, [("Link", v.as_bytes())]);
        assert_eq!(e.links.len(), MAX_HEADER_LINKS);
        assert_eq!(e.dropped, 7);
        // Two headers of 600: the set's bound takes over.
        let half: Vec<String> = (0..600).map(|i| format!("</q{i}>")).collect();
        let half = half.join(",");
        let half2 = half.replace("/q", "/r");
        let e = extract_headers(
            &base,
            [("Link", half.as_bytes()), ("Link", half2.as_bytes())],
        );
        assert_eq!(e.links.len(), MAX_HEADER_LINKS);
        assert_eq!(e.dropped, 200);
    }

    #[test]
    fn non_utf8_location() {
        let base = Url::parse("http://h.test/").unwrap();
        let l = links_from_headers(&base, [("Location", &b"/caf\xe9"[..])]);
        assert_eq!(l[0].url.as_str(), "http://h.test/caf%C3%A9");
        assert!(links_from_headers(&base, [("Location", "mailto:x@y")]).is_empty());
    }
}
