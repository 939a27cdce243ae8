//! A page's URLs as a browser reads them: in the page's charset, with
//! the query of a resolved URL encoded in it. The crawler finds, and
//! replay rewrites, by these same rules, so that what replay links to is
//! what was archived.

use std::borrow::Cow;

use encoding_rs::{Encoding, UTF_8, WINDOWS_1252};
use url::Url;

/// The encoding a `charset` label names, if encoding_rs knows it. UTF-16
/// labels mean UTF-8 for URLs, as in browsers (a page that parsed as
/// ASCII-compatible markup cannot be UTF-16).
pub fn encoding_for_label(label: &str) -> Option<&'static Encoding> {
    Encoding::for_label(label.trim().trim_matches(['"', '\'']).as_bytes())
        .map(Encoding::output_encoding)
}

/// The encoding a `<meta>` declares, from its attribute values
/// (references decoded): its `charset`, else, for `http-equiv` of
/// `content-type`, the `charset=` of its `content`. `None` when it
/// declares none or names no known encoding (browsers then go on looking).
pub fn meta_charset(
    charset: Option<&str>,
    http_equiv: Option<&str>,
    content: Option<&str>,
) -> Option<&'static Encoding> {
    let label = match charset {
        Some(c) => c,
        None if http_equiv.is_some_and(|e| e.eq_ignore_ascii_case("content-type")) => {
            content?.split(';').find_map(|p| {
                let (k, v) = p.split_once('=')?;
                k.trim().eq_ignore_ascii_case("charset").then(|| v.trim())
            })?
        }
        None => return None,
    };
    encoding_for_label(label)
}

/// An attribute's value as lol_html gives it (its bytes as written, one
/// windows-1252 character a byte: [`crate::lol_str`]) read as a browser
/// reads it: in the page's charset `enc` ([`page_text`]), then its
/// character references decoded as in an attribute
/// ([`crate::decode_references`]). The crawler finds URLs in it and
/// replay rewrites them, so both read a value alike.
pub fn attr_value(raw: &str, enc: Option<&'static Encoding>) -> String {
    let bytes = crate::lol_bytes(raw);
    let text = page_text(&bytes, enc);
    // Most values hold no reference: the text made above is the value.
    match crate::decode_references(&text) {
        Cow::Owned(decoded) => decoded,
        Cow::Borrowed(_) => text.into_owned(),
    }
}

/// Text of a page's `bytes` in `enc`, the page's charset when known;
/// without one, UTF-8 when valid, else windows-1252 (as browsers read an
/// unlabelled page).
pub fn page_text<'a>(bytes: &'a [u8], enc: Option<&'static Encoding>) -> Cow<'a, str> {
    match enc {
        Some(e) => e.decode_without_bom_handling(bytes).0,
        None => match std::str::from_utf8(bytes) {
            Ok(s) => Cow::Borrowed(s),
            Err(_) => WINDOWS_1252.decode_without_bom_handling(bytes).0,
        },
    }
}

/// `reference` (an attribute's text, references decoded) resolved
/// against `base` as a browser resolves it in a page in `enc`: ASCII
/// white space around it dropped, path and host as UTF-8 (the url crate,
/// WHATWG), the query encoded in `enc` (characters it cannot encode as
/// `&#N;`). The fragment is kept. `None` when it does
/// not parse (or is relative with no base).
pub fn resolve_url(base: Option<&Url>, reference: &str, enc: &'static Encoding) -> Option<Url> {
    let r = reference.trim_matches(|c: char| c.is_ascii_whitespace());
    let encode: &dyn Fn(&str) -> Cow<'_, [u8]> = &|s| enc.encode(s).0;
    let opts = Url::options().base_url(base);
    // The url crate encodes a query as UTF-8 unless told otherwise.
    let opts = if enc == UTF_8 {
        opts
    } else {
        opts.encoding_override(Some(encode))
    };
    opts.parse(r).ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use encoding_rs::{GBK, SHIFT_JIS};

    #[test]
    fn queries_in_the_page_encoding_paths_in_utf8() {
        let base = Url::parse("http://h.test/d/p").unwrap();
        let r = |s, e| resolve_url(Some(&base), s, e).map(String::from);
        assert_eq!(
            r(" caf\u{e9}?q=\u{e9}#f\u{e9} ", WINDOWS_1252).as_deref(),
            Some("http://h.test/d/caf%C3%A9?q=%E9#f%C3%A9")
        );
        assert_eq!(
            r("caf\u{e9}?q=\u{e9}", UTF_8).as_deref(),
            Some("http://h.test/d/caf%C3%A9?q=%C3%A9")
        );
        // Percent-encoded as written; what the charset lacks as `&#N;`
        // (the url crate's encoding of it: browsers percent-encode the `&`
        // and `;` too).
        assert_eq!(
            r("/?a=%E9&b=\u{2192}", WINDOWS_1252).as_deref(),
            Some("http://h.test/?a=%E9&b=&%238594;")
        );
        assert_eq!(
            resolve_url(None, "http://x.test/?q=\u{e9}", WINDOWS_1252).map(String::from),
            Some("http://x.test/?q=%E9".into())
        );
        assert_eq!(resolve_url(None, "rel", UTF_8), None);
    }

    #[test]
    fn labels_and_meta() {
        assert_eq!(encoding_for_label(" 'Shift_JIS' "), Some(SHIFT_JIS));
        assert_eq!(encoding_for_label("utf-16le"), Some(UTF_8));
        assert_eq!(encoding_for_label("nonsense"), None);
        assert_eq!(meta_charset(Some("gbk"), None, None), Some(GBK));
        assert_eq!(
            meta_charset(
                None,
                Some("Content-Type"),
                Some("text/html; Charset = windows-1252")
            ),
            Some(WINDOWS_1252)
        );
        assert_eq!(
            meta_charset(None, Some("refresh"), Some("charset=gbk")),
            None
        );
        // A charset attribute naming nothing known is not made up for by
        // `content`.
        assert_eq!(
            meta_charset(Some("x"), Some("content-type"), Some("charset=gbk")),
            None
        );
        assert_eq!(page_text(b"caf\xe9", None), "caf\u{e9}");
        assert_eq!(page_text("caf\u{e9}".as_bytes(), None), "caf\u{e9}");
        assert_eq!(page_text(b"caf\xe9", Some(UTF_8)), "caf\u{fffd}");
    }
}
