//! Links from response headers: `Location` (a redirect, `R`), `Refresh`
//! (`R`), and `Link` (RFC 8288: embeds for `stylesheet`, `preload`,
//! `icon`... as `E`, other relations inferred, `I`).

use encoding_rs::UTF_8;
use url::Url;

use super::{Link, LinkSet};
use crate::uri::Hop;

/// The most links taken from one response's headers.
pub const MAX_HEADER_LINKS: usize = 1000;

/// The links of a response's `headers` (name, raw value), resolved against
/// `base` (the URL fetched). Values are read as UTF-8 (windows-1252 when
/// not valid), as browsers read `Location`.
pub fn links_from_headers<I, N, V>(base: &Url, headers: I) -> Vec<Link>
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
            for (target, rel) in parse_link_header(&value) {
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
    links.out.links
}

/// The (target, rel) pairs of a `Link` header value
/// (`<a.css>; rel=stylesheet, <b>; rel="next"`).
pub fn parse_link_header(v: &str) -> Vec<(&str, String)> {
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
            break;
        }
    }
    out
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

    #[test]
    fn non_utf8_location() {
        let base = Url::parse("http://h.test/").unwrap();
        let l = links_from_headers(&base, [("Location", &b"/caf\xe9"[..])]);
        assert_eq!(l[0].url.as_str(), "http://h.test/caf%C3%A9");
        assert!(links_from_headers(&base, [("Location", "mailto:x@y")]).is_empty());
    }
}
