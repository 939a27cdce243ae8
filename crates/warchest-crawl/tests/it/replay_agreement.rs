//! The crawler and replay read a page's URLs alike: for each link of a
//! page, the URL the crawler's extractor finds (and archives) is the one
//! replay's rewriter links to, in UTF-8 and windows-1252 pages, with the
//! charset from the Content-Type, from a `<meta>`, or from neither.

use url::Url;
use warchest_crawl::links::{ExtractConfig, extract};
use warchest_replay::archive_url::content_type_encoding;
use warchest_replay::rewrite::{Kind, Rewriter, UrlContext};

const BASE: &str = "http://h.test/dir/page.html";

/// The links of `body` as the crawler finds them.
fn crawled(ct: &str, body: &[u8]) -> Vec<String> {
    let base = Url::parse(BASE).unwrap();
    extract(&base, Some(ct), &ExtractConfig::default(), body)
        .links
        .into_iter()
        .map(|l| l.url.to_string())
        .collect()
}

/// `body` as replay rewrites it, served as `ct`.
fn rewritten(ct: &str, body: &[u8]) -> String {
    let ctx = UrlContext {
        prefix: "/c/".into(),
        abs_prefix: "http://replay.test/c/".into(),
        timestamp: "2014".into(),
        base: BASE.into(),
        encoding: content_type_encoding(ct.as_bytes()),
    };
    let mut rw = Rewriter::new(Kind::Html, ctx, None, None);
    let mut out = Vec::new();
    rw.feed(body, &mut out);
    rw.finish(&mut out);
    String::from_utf8_lossy(&out).into_owned()
}

/// The targets of the `href`s replay rewrites `body` to, each read as a
/// browser sends it (parsed, which changes nothing in an encoded URL)
/// without its fragment, as the crawler keeps URLs.
fn replayed(ct: &str, body: &[u8]) -> Vec<String> {
    rewritten(ct, body)
        .split("href=\"")
        .skip(1)
        .map(|v| {
            let v = &v[..v.find('"').unwrap()];
            let target = v
                .strip_prefix("/c/2014/")
                .unwrap_or(v)
                .replace("&amp;", "&");
            let mut u = Url::parse(&target).unwrap();
            u.set_fragment(None);
            u.to_string()
        })
        .collect()
}

/// A page of one element a URL: `open`, the URL with each `@` replaced by
/// `c` (a character past ASCII in the page's charset), then `close`.
fn page_of(open: &[u8], urls: &[&[u8]], close: &[u8], c: &[u8]) -> Vec<u8> {
    let mut page = Vec::new();
    for url in urls {
        page.extend_from_slice(open);
        for &b in *url {
            match b {
                b'@' => page.extend_from_slice(c),
                _ => page.push(b),
            }
        }
        page.extend_from_slice(close);
    }
    page
}

/// Links whose URLs depend on the page's charset: references to
/// characters past ASCII, raw bytes, relative and absolute, percent
/// escapes kept.
fn links(e_acute: &[u8]) -> Vec<u8> {
    let urls: [&[u8]; 5] = [
        b"/s?q=caf&eacute;&amp;x=&#233;",
        b"caf@.html?q=@",
        b"http://o.test/p?q=&eacute;#f@",
        b"../up?a=%E9&b=&rarr;",
        b"/t?a=1&copy=2&not",
    ];
    page_of(b"<a href=\"", &urls, b"\">x</a>\n", e_acute)
}

/// For each page, served as its Content-Type says: the crawler finds `n`
/// URLs, and they are the ones replay's rewriter asks for (`replayed`).
fn agree(pages: &[(&str, &Vec<u8>)], n: usize, replayed: fn(&str, &[u8]) -> Vec<String>) {
    for &(ct, body) in pages {
        let found = crawled(ct, body);
        assert_eq!(found.len(), n, "{ct}: {found:?}");
        assert_eq!(
            replayed(ct, body),
            found,
            "{ct}: {}",
            String::from_utf8_lossy(body)
        );
    }
}

#[test]
fn replay_links_to_what_the_crawler_found() {
    let latin = links(b"\xe9");
    let utf8 = links("\u{e9}".as_bytes());
    let meta = [b"<meta charset=windows-1252>".as_slice(), &latin].concat();
    let equiv = [
        b"<meta http-equiv=content-type content='text/html; charset=iso-8859-1'>".as_slice(),
        &latin,
    ]
    .concat();
    let pages = [
        ("text/html; charset=windows-1252", &latin),
        ("text/html; charset=utf-8", &utf8),
        ("text/html", &utf8),
        // A header's charset wins over a page's `<meta>`.
        ("text/html; charset=utf-8", &meta),
        ("text/html", &meta),
        ("text/html", &equiv),
        // No charset at all, bytes not UTF-8: windows-1252 for the text,
        // UTF-8 for the query (the crawler's rule).
        ("text/html", &latin),
    ];
    agree(&pages, 5, replayed);
    // And the URLs are the ones a browser sends, the query in the page's
    // charset.
    let found = crawled("text/html; charset=windows-1252", &latin);
    assert_eq!(found[0], "http://h.test/s?q=caf%E9&x=%E9");
    assert_eq!(found[1], "http://h.test/dir/caf%C3%A9.html?q=%E9");
    let found = crawled("text/html", &utf8);
    assert_eq!(found[0], "http://h.test/s?q=caf%C3%A9&x=%C3%A9");
}

/// The targets of the `url(...)`s replay rewrites `body`'s `style`
/// attributes to, as [`replayed`] reads `href`s.
fn replayed_styles(ct: &str, body: &[u8]) -> Vec<String> {
    rewritten(ct, body)
        .split("url(")
        .skip(1)
        .map(|v| {
            let v = v[..v.find(')').unwrap()]
                .replace("&quot;", "")
                .replace("&amp;", "&");
            Url::parse(v.strip_prefix("/c/2014im_/").unwrap_or(&v))
                .unwrap()
                .to_string()
        })
        .collect()
}

/// `style` attributes (read once from the page's charset; the crawler
/// read their text a second time as the charset) with raw bytes past
/// ASCII and references, in windows-1252, Shift_JIS and UTF-8 pages.
#[test]
fn replay_links_to_what_the_crawler_found_in_style_attributes() {
    let urls: [&[u8]; 3] = [
        b"caf@.png?q=@",
        b"&quot;x@.png&quot;",
        b"y&eacute;.png?q=&eacute;&amp;r=@",
    ];
    let styles = |c: &[u8]| page_of(b"<p style=\"background:url(", &urls, b")\"></p>\n", c);
    let latin = styles(b"\xe9");
    // "テ" in Shift_JIS.
    let sjis = styles(b"\x83\x65");
    let utf8 = styles("\u{e9}".as_bytes());
    let pages = [
        ("text/html; charset=windows-1252", &latin),
        ("text/html; charset=shift_jis", &sjis),
        ("text/html; charset=utf-8", &utf8),
        ("text/html", &utf8),
        ("text/html", &latin),
    ];
    agree(&pages, 3, replayed_styles);
    let found = crawled("text/html; charset=windows-1252", &latin);
    assert_eq!(found[0], "http://h.test/dir/caf%C3%A9.png?q=%E9");
    assert_eq!(found[1], "http://h.test/dir/x%C3%A9.png");
    let found = crawled("text/html; charset=shift_jis", &sjis);
    assert_eq!(found[0], "http://h.test/dir/caf%E3%83%86.png?q=%83e");
}
