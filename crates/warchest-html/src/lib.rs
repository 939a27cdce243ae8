//! lol_html set up for the bytes of archived pages, the one way the
//! crawler's link extractor (`warchest-crawl`) and replay's rewriter
//! (`warchest-replay`) both run it:
//!
//! - every byte is one windows-1252 character, so the bytes of any
//!   ASCII-compatible charset pass through unchanged (the caller decodes
//!   what it reads in the page's own charset; [`lol_str`] and
//!   [`lol_bytes`] go between the two);
//! - no charset switch on `<meta charset>` (that would break the mapping);
//! - the lenient tokenizer (markup it cannot be sure of is read as a
//!   browser's tokenizer reads it, not refused);
//! - a memory bound for one page (a tag of megabytes, a deep stack of open
//!   elements), past which lol_html gives up gracefully, as it does when a
//!   handler fails, so that the caller can keep what it had.
//!
//! It is also the one home of the readings of attribute values both
//! must agree on, so that what the crawler finds (and archives) is what
//! replay rewrites: character references ([`decode_references`]), the
//! URLs of a `srcset` ([`srcset_urls`]), the URL of a refresh
//! ([`refresh_url`]), the URLs of CSS ([`css_urls`]); and how a page's
//! charset is found and its URLs resolved in it (`page_text`,
//! `meta_charset`, `resolve_url`: queries in the page's encoding, as
//! browsers send them). Its character
//! references are the workspace's one decoder, with the HTML standard's
//! whole table of names, in text too ([`decode_text_references`]: text
//! extraction in `warchest-derive` reads them with it).
//!
//! A crate of its own, below both users, because the crawler must not
//! depend on replay nor replay on the crawler (docs/architecture.md).
//! Without its default feature `rewrite` the crate is the character
//! references, `srcset` and refresh readings alone, with no dependency.
#![forbid(unsafe_code)]

#[cfg(feature = "rewrite")]
mod css;
mod entities;
#[cfg(feature = "rewrite")]
mod page_url;
mod refresh;
mod refs;
mod srcset;

#[cfg(feature = "rewrite")]
pub use css::{
    CssUrl, CssUrlForm, MAX_CARRY, css_cut, css_cut_urls, css_escape, css_unescape, css_urls,
};
#[cfg(feature = "rewrite")]
pub use page_url::{attr_value, encoding_for_label, meta_charset, page_text, resolve_url};
pub use refresh::refresh_url;
pub use refs::{decode_references, decode_text_references};
pub use srcset::{SrcsetUrls, srcset_urls};

#[cfg(feature = "rewrite")]
use encoding_rs::WINDOWS_1252;
#[cfg(feature = "rewrite")]
use lol_html::send::Settings;
#[cfg(feature = "rewrite")]
use lol_html::{AsciiCompatibleEncoding, MemorySettings};

/// lol_html settings for a page's bytes, with at most `max_memory` bytes
/// of parser memory; the caller appends its content handlers.
#[cfg(feature = "rewrite")]
pub fn settings<'h, 's>(max_memory: usize) -> Settings<'h, 's> {
    Settings::new_send()
        .with_encoding(
            AsciiCompatibleEncoding::new(WINDOWS_1252)
                .unwrap_or_else(AsciiCompatibleEncoding::utf_8),
        )
        .with_adjust_charset_on_meta_tag(false)
        .with_strict(false)
        .with_memory_settings(
            MemorySettings::new()
                .with_max_allowed_memory_usage(max_memory)
                .with_graceful_bail_out_on_memory_limit_exceeded(true),
        )
        .with_graceful_bail_out_on_content_handler_error(true)
}

/// A lol_html string (windows-1252: one character a byte) of `bytes`.
#[cfg(feature = "rewrite")]
pub fn lol_str(bytes: &[u8]) -> String {
    WINDOWS_1252
        .decode_without_bom_handling(bytes)
        .0
        .into_owned()
}

/// The bytes of a lol_html string: the inverse of [`lol_str`].
#[cfg(feature = "rewrite")]
pub fn lol_bytes(s: &str) -> Vec<u8> {
    WINDOWS_1252.encode(s).0.into_owned()
}

#[cfg(all(test, feature = "rewrite"))]
mod tests {
    use super::*;
    use lol_html::send::HtmlRewriter;
    use lol_html::{element, text};
    use std::sync::{Arc, Mutex};

    /// Every byte value survives the round trip, and a page in any
    /// ASCII-compatible charset (here UTF-8 with a `<meta>` naming
    /// another) passes through the rewriter byte for byte.
    #[test]
    fn bytes_pass_through() {
        let all: Vec<u8> = (0..=255).collect();
        assert_eq!(lol_bytes(&lol_str(&all)), all);
        let page = "<meta charset=koi8-r><p title='é'>日本 \u{1F600}</p>".as_bytes();
        let mut out = Vec::new();
        let mut rw = HtmlRewriter::new(settings(1 << 20), |c: &[u8]| out.extend_from_slice(c));
        for piece in page.chunks(3) {
            rw.write(piece).unwrap();
        }
        rw.end().unwrap();
        assert_eq!(out, page);
    }

    /// Past the memory bound the rewriter gives up without an error, the
    /// handlers having seen what came before.
    #[test]
    fn memory_bound_bails_out() {
        let seen = Arc::new(Mutex::new(Vec::new()));
        let s = Arc::clone(&seen);
        let settings = settings(64 << 10)
            .append_element_content_handler(element!("a", move |el| {
                if let (Ok(mut v), Some(h)) = (s.lock(), el.get_attribute("href")) {
                    v.push(h);
                }
                Ok(())
            }))
            .append_element_content_handler(text!("title", |_| Ok(())));
        let mut rw = HtmlRewriter::new(settings, |_: &[u8]| {});
        rw.write(b"<a href=/x>x</a><div title='").unwrap();
        let huge = vec![b'y'; 1 << 20];
        for piece in huge.chunks(16 << 10) {
            if rw.write(piece).is_err() {
                break;
            }
        }
        let _ = rw.end();
        assert_eq!(*seen.lock().unwrap(), ["/x"]);
    }

    /// Every string of up to four characters from the ones the value
    /// parsers treat specially: no panic, every range inside the text on
    /// char boundaries, and a CSS URL written back with [`css_escape`]
    /// read again as itself.
    #[test]
    fn value_parsers_take_any_text() {
        const ALPHABET: [&str; 16] = [
            "&", "#", "x", "1", ";", ",", " ", "(", ")", "'", "\\", "\n", "u", "=", "é", "\"",
        ];
        let mut strings = vec![String::new()];
        let mut last = vec![String::new()];
        for _ in 0..4 {
            last = last
                .iter()
                .flat_map(|s| ALPHABET.iter().map(move |c| format!("{s}{c}")))
                .collect();
            strings.extend(last.iter().cloned());
        }
        for s in &strings {
            let _ = decode_references(s);
            let _ = css_unescape(s);
            let mut prev = 0;
            for r in srcset_urls(s) {
                assert!(r.start >= prev && r.start < r.end, "{s:?}");
                prev = r.end;
                let _ = &s[r];
            }
            if let Some(r) = refresh_url(s) {
                let _ = &s[r];
            }
            for u in css_urls(s.as_bytes()) {
                let _ = s.get(u.range.clone()).expect("a char boundary");
            }
            for quote in [None, Some(b'"'), Some(b'\'')] {
                let text = match quote {
                    None => format!("url({})", css_escape(s, None)),
                    Some(q) => {
                        let q = char::from(q);
                        format!("url({q}{}{q})", css_escape(s, quote))
                    }
                };
                let found: Vec<_> = css_urls(text.as_bytes()).collect();
                assert_eq!(found.len(), 1, "{text:?}");
                assert_eq!(css_unescape(&text[found[0].range.clone()]), *s, "{text:?}");
            }
        }
    }
}
