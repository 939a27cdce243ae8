//! Charset decoding: which encoding a page is in, and its text as UTF-8.
//!
//! The order is the one browsers follow (the WHATWG encoding sniffing
//! algorithm, in short), which is also what Common Crawl's extractor and
//! Resiliparse approximate:
//!
//! 1. a byte order mark;
//! 2. the `charset` parameter of the HTTP `Content-Type`;
//! 3. a `<meta charset>` or `<meta http-equiv="Content-Type">` in the first
//!    8 KiB (Common Crawl's window; browsers read 1 KiB, pages put the tag
//!    later often enough);
//! 4. valid UTF-8 is UTF-8;
//! 5. detection by chardetng (Firefox's detector for legacy pages).
//!
//! Labels are resolved by encoding_rs as the WHATWG Encoding Standard does,
//! so `iso-8859-1` and `ascii` are decoded as windows-1252 (Common Crawl maps
//! ISO-8859-1 to cp1252 too), and a meta tag naming UTF-16 means UTF-8.
//! Malformed sequences become U+FFFD; decoding never fails.

use std::borrow::Cow;

use encoding_rs::{Encoding, UTF_8};

use crate::html::{Token, Tokenizer};

/// How far into a page a meta charset is looked for.
pub const META_WINDOW: usize = 8 * 1024;

/// Where the encoding of a page was found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Source {
    /// A byte order mark at the start of the body.
    Bom,
    /// The `charset` parameter of the HTTP `Content-Type`.
    Header,
    /// A `<meta>` tag in the first [`META_WINDOW`] bytes.
    Meta,
    /// The body is valid UTF-8 (pure ASCII included).
    Utf8,
    /// Guessed by chardetng.
    Detected,
}

impl Source {
    /// A short name: `bom`, `header`, `meta`, `utf-8`, `detected`.
    pub fn name(self) -> &'static str {
        match self {
            Source::Bom => "bom",
            Source::Header => "header",
            Source::Meta => "meta",
            Source::Utf8 => "utf-8",
            Source::Detected => "detected",
        }
    }
}

/// A body decoded to text.
#[derive(Debug, Clone)]
pub struct Decoded<'a> {
    /// The text (borrowed from the body when it was UTF-8 already).
    pub text: Cow<'a, str>,
    /// The encoding used.
    pub encoding: &'static Encoding,
    /// Where the encoding came from.
    pub source: Source,
    /// Whether malformed byte sequences were replaced with U+FFFD.
    pub had_errors: bool,
}

/// The `charset` parameter of a `Content-Type` value, as an encoding
/// (unknown labels give `None`). The parameter is found as
/// [`warchest::http::content_type_charset`] finds it (by name, quoted
/// strings read whole), so every reader of a header agrees on it.
pub fn from_content_type(content_type: &str) -> Option<&'static Encoding> {
    let label = warchest::http::content_type_charset(content_type.as_bytes())?;
    Encoding::for_label(label.as_bytes())
}

/// The charset a `<meta http-equiv=content-type>` tag's `content` names,
/// found as the WHATWG "extract a character encoding from a meta element"
/// algorithm does: after the first `charset`, anywhere, then `=` and a
/// value quoted with either quote or bare. That is what browsers read in
/// a page, which is looser than a header's parameter syntax.
fn from_meta_content(content: &str) -> Option<&'static Encoding> {
    let lower = content.to_ascii_lowercase();
    let at = lower.find("charset")?;
    let rest = lower[at + 7..].trim_start();
    let rest = rest.strip_prefix('=')?.trim_start();
    let rest = rest.trim_start_matches(['"', '\'']);
    let end = rest
        .find(|c: char| c == ';' || c == '"' || c == '\'' || c.is_ascii_whitespace() || c == ',')
        .unwrap_or(rest.len());
    Encoding::for_label(&rest.as_bytes()[..end])
}

/// The encoding a `<meta>` tag declares in the first [`META_WINDOW`] bytes
/// of `body`, if any: `<meta charset=X>` or `<meta http-equiv=content-type
/// content="...; charset=X">`. A declared UTF-16 means UTF-8 (the page
/// could not hold the ASCII tag otherwise), as the WHATWG prescan says.
pub fn from_meta(body: &[u8]) -> Option<&'static Encoding> {
    let window = &body[..body.len().min(META_WINDOW)];
    // The tag is ASCII; anything else in the window may be replaced. A
    // window of UTF-8 (perhaps cut inside a character at its end) is
    // borrowed as it is: validating is cheaper than replacing.
    let text = match std::str::from_utf8(window) {
        Ok(t) => Cow::Borrowed(t),
        Err(e) if e.error_len().is_none() => {
            Cow::Borrowed(std::str::from_utf8(&window[..e.valid_up_to()]).unwrap_or_default())
        }
        Err(_) => String::from_utf8_lossy(window),
    };
    for token in Tokenizer::new(&text) {
        let Token::Start(tag) = token else { continue };
        if tag.name() != "meta" {
            continue;
        }
        let found = if let Some(label) = tag.attr("charset") {
            Encoding::for_label(label.trim().as_bytes())
        } else if tag
            .attr("http-equiv")
            .is_some_and(|v| v.trim().eq_ignore_ascii_case("content-type"))
        {
            tag.attr("content").and_then(|c| from_meta_content(&c))
        } else {
            None
        };
        if let Some(enc) = found {
            return Some(
                if enc == encoding_rs::UTF_16LE
                    || enc == encoding_rs::UTF_16BE
                    || enc == encoding_rs::X_USER_DEFINED
                {
                    if enc == encoding_rs::X_USER_DEFINED {
                        encoding_rs::WINDOWS_1252
                    } else {
                        UTF_8
                    }
                } else {
                    enc
                },
            );
        }
    }
    None
}

/// Chooses the encoding of `body` (see the module docs for the order).
/// `content_type` is the HTTP `Content-Type` value; `html` says whether to
/// look for a meta tag.
pub fn sniff(body: &[u8], content_type: Option<&str>, html: bool) -> (&'static Encoding, Source) {
    let (enc, source, _) = sniff_text(body, content_type, html);
    (enc, source)
}

/// [`sniff`], and the body as text when it was found valid UTF-8 on the
/// way (so that [`decode`] does not check it twice).
fn sniff_text<'a>(
    body: &'a [u8],
    content_type: Option<&str>,
    html: bool,
) -> (&'static Encoding, Source, Option<&'a str>) {
    if let Some((enc, _)) = Encoding::for_bom(body) {
        return (enc, Source::Bom, None);
    }
    if let Some(enc) = content_type.and_then(from_content_type) {
        return (enc, Source::Header, None);
    }
    if html && let Some(enc) = from_meta(body) {
        return (enc, Source::Meta, None);
    }
    if let Ok(text) = std::str::from_utf8(body) {
        return (UTF_8, Source::Utf8, Some(text));
    }
    let mut detector = chardetng::EncodingDetector::new(chardetng::Iso2022JpDetection::Deny);
    // The detector learns enough from the first 64 KiB; more costs time.
    detector.feed(&body[..body.len().min(64 * 1024)], body.len() <= 64 * 1024);
    // No TLD hint: chardetng asserts on a malformed one, and a URL's
    // host is not always a clean label.
    (
        detector.guess(None, chardetng::Utf8Detection::Allow),
        Source::Detected,
        None,
    )
}

/// Decodes `body` to text with the encoding [`sniff`] chooses.
pub fn decode<'a>(body: &'a [u8], content_type: Option<&str>, html: bool) -> Decoded<'a> {
    let (encoding, source, valid) = sniff_text(body, content_type, html);
    if let Some(text) = valid.or_else(|| {
        (encoding == UTF_8 && source != Source::Bom)
            .then(|| std::str::from_utf8(body).ok())
            .flatten()
    }) {
        return Decoded {
            text: Cow::Borrowed(text),
            encoding,
            source,
            had_errors: false,
        };
    }
    // `decode` removes a BOM (and lets a BOM override the encoding, which
    // is what `sniff` chose already).
    let (text, encoding, had_errors) = encoding.decode(body);
    Decoded {
        text,
        encoding,
        source,
        had_errors,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn header_charset_wins_over_meta() {
        let body = b"<meta charset=utf-8><p>caf\xe9";
        let d = decode(body, Some("text/html; charset=ISO-8859-1"), true);
        assert_eq!(d.encoding, encoding_rs::WINDOWS_1252);
        assert_eq!(d.source, Source::Header);
        assert!(d.text.ends_with("café"));
    }

    #[test]
    fn meta_in_a_window_cut_inside_a_character_or_with_bad_bytes() {
        let mut body = b"<meta charset=koi8-r>".to_vec();
        body.resize(META_WINDOW - 1, b'x');
        body.extend_from_slice("é".as_bytes());
        assert_eq!(from_meta(&body), Some(encoding_rs::KOI8_R));
        assert_eq!(
            from_meta(b"\xe9 <meta charset=koi8-r>"),
            Some(encoding_rs::KOI8_R)
        );
        assert_eq!(from_meta(b"<p>\xe9</p>"), None);
    }

    #[test]
    fn meta_charset_forms() {
        assert_eq!(
            from_meta(b"<html><head><META CHARSET='koi8-r'>"),
            Some(encoding_rs::KOI8_R)
        );
        assert_eq!(
            from_meta(
                b"<meta http-equiv=\"Content-Type\" content=\"text/html; charset=Shift_JIS\">"
            ),
            Some(encoding_rs::SHIFT_JIS)
        );
        assert_eq!(from_meta(b"<meta charset=utf-16>"), Some(UTF_8));
        assert_eq!(
            from_meta(b"<meta name=description content='charset=koi8-r'>"),
            None
        );
        assert_eq!(from_meta(b"<!-- <meta charset=koi8-r> -->"), None);
    }

    #[test]
    fn content_type_parameter() {
        assert_eq!(
            from_content_type("text/html;charset=\"windows-1251\""),
            Some(encoding_rs::WINDOWS_1251)
        );
        assert_eq!(
            from_content_type("text/html; charset = gb2312 ; x=y"),
            Some(encoding_rs::GBK)
        );
        assert_eq!(from_content_type("text/html"), None);
        assert_eq!(from_content_type("text/html; charset=no-such"), None);
    }

    /// The header's parameter is found by name, as every other reader of
    /// a Content-Type finds it: not inside another parameter's name or
    /// quoted value.
    #[test]
    fn content_type_parameter_by_name() {
        assert_eq!(
            from_content_type("text/html; xcharset=koi8-r; charset=utf-8"),
            Some(UTF_8)
        );
        assert_eq!(
            from_content_type("text/html; note=\"charset=koi8-r\"; charset=gbk"),
            Some(encoding_rs::GBK)
        );
        assert_eq!(from_content_type("text/html; xcharset=koi8-r"), None);
        let d = decode(
            b"caf\xe9",
            Some("text/plain; xcharset=koi8-r; charset=iso-8859-1"),
            false,
        );
        assert_eq!((d.source, &*d.text), (Source::Header, "café"));
    }

    #[test]
    fn bom_then_utf8_then_detection() {
        let d = decode(b"\xef\xbb\xbfhi", None, true);
        assert_eq!((d.source, &*d.text), (Source::Bom, "hi"));
        let d = decode("héllo".as_bytes(), None, true);
        assert_eq!((d.source, &*d.text), (Source::Utf8, "héllo"));
        assert!(matches!(d.text, Cow::Borrowed(_)));
        // KOI8-R Russian without any declaration.
        let (koi, _, _) = encoding_rs::KOI8_R.encode("Съешь же ещё этих мягких французских булок, да выпей чаю. Широкая электрификация южных губерний");
        let d = decode(&koi, None, true);
        assert_eq!(d.source, Source::Detected);
        assert!(d.text.contains("французских"), "{}", d.text);
    }
}
