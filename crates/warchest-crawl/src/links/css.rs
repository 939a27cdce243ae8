//! Links from CSS: `url(...)` and `@import`, in style sheets, `<style>`
//! elements and `style` attributes. Streamed a statement at a time: text
//! is scanned up to where warchest-html's `css_cut` allows (its last `;`,
//! `}` or newline not inside an `url( ... )` or `@import`, nor after one
//! not finished), as replay's rewriter cuts it, its URLs found in the same
//! pass (`css_cut_urls`), the rest carried to the next piece (at most
//! [`MAX_CARRY`], warchest-html's bound, which replay's rewriter holds
//! too).

use encoding_rs::{Encoding, UTF_8};
use url::Url;
use warchest_html::{CssUrl, CssUrlForm, css_unescape, css_urls};

use super::LinkSet;
use crate::uri::Hop;

/// The longest CSS statement held back while waiting for its end:
/// warchest-html's one bound, which replay's rewriter holds too.
pub use warchest_html::MAX_CARRY;

/// A streaming CSS link extractor.
#[derive(Debug)]
pub struct CssExtractor {
    base: Url,
    /// The page's charset, the one queries are encoded in.
    enc: Option<&'static Encoding>,
    /// The charset the text is read in: `enc`, but UTF-8 for text already
    /// decoded (see [`CssExtractor::decoded`]).
    text_enc: Option<&'static Encoding>,
    /// `css` for files, `style` for what a page holds: the contexts are
    /// then `css/url()`, `css/@import`, `style/url()`, `style/@import`.
    origin: &'static str,
    carry: Vec<u8>,
}

impl CssExtractor {
    /// An extractor for CSS at `base` (a page's base for inline CSS).
    pub fn new(base: &Url, enc: Option<&'static Encoding>, origin: &'static str) -> CssExtractor {
        CssExtractor {
            base: base.clone(),
            enc,
            text_enc: enc,
            origin: if origin == "style" { "style" } else { "css" },
            carry: Vec::new(),
        }
    }

    /// The extractor for text already read from the page's charset (a
    /// `style` attribute's value, references decoded): read as UTF-8, not
    /// decoded a second time as `enc` (which garbled every character past
    /// ASCII), while queries are still encoded in `enc`, as replay reads
    /// them.
    pub(crate) fn decoded(mut self) -> CssExtractor {
        self.text_enc = Some(UTF_8);
        self
    }

    /// The next piece of CSS.
    pub(crate) fn write(&mut self, chunk: &[u8], links: &mut LinkSet) {
        self.carry.extend_from_slice(chunk);
        // Cut where replay's rewriter cuts too (warchest-html's rule), so
        // that a URL spanning lines is found in pieces as when whole; the
        // URLs before the cut come from the same pass of the matcher.
        let held = self.carry.len() <= MAX_CARRY;
        let (cut, urls) = warchest_html::css_cut_urls(&self.carry, held);
        if cut > 0 {
            self.scan(&self.carry[..cut], urls, links);
            self.carry.drain(..cut);
        } else if self.carry.len() > MAX_CARRY {
            // No cut within the bound: scan what is held and go on (the
            // matcher run again over it, a rare case past the bound).
            self.scan(&self.carry, css_urls(&self.carry), links);
            self.carry.clear();
        }
    }

    /// The end of the CSS.
    pub(crate) fn finish(self, links: &mut LinkSet) {
        self.scan(&self.carry, css_urls(&self.carry), links);
    }

    /// Adds `urls`, the URLs [`css_urls`] finds in `text`, to `links`.
    fn scan(&self, text: &[u8], urls: impl IntoIterator<Item = CssUrl>, links: &mut LinkSet) {
        let (ctx_url, ctx_import) = if self.origin == "style" {
            ("style/url()", "style/@import")
        } else {
            ("css/url()", "css/@import")
        };
        let enc = self.enc.unwrap_or(UTF_8);
        // warchest-html's matcher: the URLs replay rewrites.
        for u in urls {
            let raw = &text[u.range];
            if raw.is_empty() || raw.starts_with(b"data:") {
                continue;
            }
            let ctx = match u.form {
                CssUrlForm::Url => ctx_url,
                CssUrlForm::ImportUrl | CssUrlForm::Import => ctx_import,
            };
            let s = warchest_html::page_text(raw, self.text_enc);
            links.add(&self.base, &css_unescape(&s), enc, Hop::Embed, ctx);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::{ExtractConfig, extract};
    use super::*;

    /// The links of a style sheet at `http://h.test/s/main.css`, with
    /// their contexts.
    fn found(css: &[u8]) -> Vec<(String, &'static str)> {
        let base = Url::parse("http://h.test/s/main.css").unwrap();
        let e = extract(&base, Some("text/css"), &ExtractConfig::default(), css);
        e.links
            .iter()
            .map(|l| (l.url.to_string(), l.context))
            .collect()
    }

    /// What the extractor gives `css` fed a byte at a time.
    fn byte_at_a_time(base: &Url, css: &[u8]) -> super::super::Extracted {
        in_pieces(base, css, 1)
    }

    /// What the extractor gives `css` fed in pieces of `size` bytes.
    fn in_pieces(base: &Url, css: &[u8], size: usize) -> super::super::Extracted {
        let mut x = super::super::Extractor::new(base, Some("text/css"), &ExtractConfig::default());
        for piece in css.chunks(size) {
            x.write(piece);
        }
        x.finish()
    }

    #[test]
    fn urls_and_imports_in_files() {
        let css = b"@import url(\"a.css\");\n@import 'b.css' screen;\n@IMPORT \"c.css\";\n\
body { background: url(bg.png) } .x{background-image:URL( \"/i/x.gif\" )}\n\
.f{src:url(data:font/woff;base64,AAAA)} .e{x:url()}\n.esc{background:url(a\\(1\\).png)}";
        let base = Url::parse("http://h.test/s/main.css").unwrap();
        let e = extract(&base, Some("text/css"), &ExtractConfig::default(), css);
        assert_eq!(
            found(css),
            [
                ("http://h.test/s/a.css".to_string(), "css/@import"),
                ("http://h.test/s/b.css".to_string(), "css/@import"),
                ("http://h.test/s/c.css".to_string(), "css/@import"),
                ("http://h.test/s/bg.png".to_string(), "css/url()"),
                ("http://h.test/i/x.gif".to_string(), "css/url()"),
                ("http://h.test/s/a(1).png".to_string(), "css/url()"),
            ]
        );
        assert!(e.links.iter().all(|l| l.hop == Hop::Embed));
        // Byte at a time: the same.
        assert_eq!(byte_at_a_time(&base, css), e);
    }

    /// Escaped quotes in strings and `@import` without a space: found as
    /// replay rewrites them (warchest-html's matcher).
    #[test]
    fn escaped_quotes_and_tight_imports() {
        let css = br#"@import"n.css"; a{b:url("x\"y.png")} c{d:url(s\ p.png)}"#;
        assert_eq!(
            found(css),
            [
                ("http://h.test/s/n.css".to_string(), "css/@import"),
                ("http://h.test/s/x%22y.png".to_string(), "css/url()"),
                ("http://h.test/s/s%20p.png".to_string(), "css/url()"),
            ]
        );
    }

    /// URLs spanning lines (white space inside `url( ... )` and after
    /// `@import`) and a `;` in a bare `url()`: found byte at a time as
    /// whole. Before, a piece cut after the line of `url(` (or its `;`)
    /// lost the URL.
    #[test]
    fn urls_across_lines_and_semicolons_in_pieces() {
        let css = b"a{background:url(\n  'x.png'\n)}\n@import\n  \"i.css\";\n\
b{background:url(y;z.png)} /* url( never closed */\nc{background:url(w.png)}";
        let base = Url::parse("http://h.test/s/main.css").unwrap();
        let e = extract(&base, Some("text/css"), &ExtractConfig::default(), css);
        assert_eq!(
            found(css),
            [
                ("http://h.test/s/x.png".to_string(), "css/url()"),
                ("http://h.test/s/i.css".to_string(), "css/@import"),
                ("http://h.test/s/y;z.png".to_string(), "css/url()"),
                ("http://h.test/s/w.png".to_string(), "css/url()"),
            ]
        );
        assert_eq!(byte_at_a_time(&base, css), e);
    }

    /// An `url(` never closed (in a comment) holds the rest back only up
    /// to the bound: past it the text is read up to its last cut outside
    /// every URL, what is held stays bounded, and a URL after it is found.
    #[test]
    fn an_unclosed_url_holds_back_only_up_to_the_bound() {
        let mut css = b"/* url( */\n".to_vec();
        while css.len() < 2 * MAX_CARRY {
            css.extend_from_slice(b"p{}\n");
        }
        css.extend_from_slice(b"b{c:url(z.png)}");
        let base = Url::parse("http://h.test/").unwrap();
        let mut links = LinkSet::new(10);
        let mut x = CssExtractor::new(&base, None, "css");
        let mut most = 0;
        for c in css.chunks(1000) {
            x.write(c, &mut links);
            most = most.max(x.carry.len());
        }
        assert!(most <= MAX_CARRY + 1000, "{most} bytes held");
        assert!(
            most > MAX_CARRY / 2,
            "the unclosed url( held nothing back: {most}"
        );
        x.finish(&mut links);
        let found: Vec<String> = links.out.links.iter().map(|l| l.url.to_string()).collect();
        assert_eq!(found, ["http://h.test/z.png"]);
    }

    /// One statement longer than the crawler's old bound (64 KiB) but
    /// within the one bound replay holds too, with a URL across the old
    /// mark: held whole in pieces, so found as replay rewrites it. Before,
    /// the crawler read the statement's first 64 KiB and a piece alone
    /// and lost the URL (it spans every such cut for these piece sizes).
    #[test]
    fn a_url_across_the_old_bound_in_one_statement() {
        let old = 64 << 10;
        let long = format!("/span-{}.png", "x".repeat(4200));
        let mut css = b"a{background:url(first.png),".to_vec();
        css.resize(old - 10, b' ');
        let span = css.len()..css.len() + long.len() + 5;
        css.extend_from_slice(format!("url({long})").as_bytes());
        css.resize(old + 5000, b' ');
        css.extend_from_slice(b"}\nb{c:url(last.png)}");
        assert!(span.start < old && old + 4096 < span.end);
        assert!(css.len() < MAX_CARRY);
        let base = Url::parse("http://h.test/s/main.css").unwrap();
        let whole = extract(&base, Some("text/css"), &ExtractConfig::default(), &css);
        assert_eq!(
            found(&css),
            [
                ("http://h.test/s/first.png".to_string(), "css/url()"),
                (format!("http://h.test{long}"), "css/url()"),
                ("http://h.test/s/last.png".to_string(), "css/url()"),
            ]
        );
        for size in [100, 1000, 4096] {
            assert_eq!(in_pieces(&base, &css, size), whole, "pieces of {size}");
        }
    }

    /// Text with no statement end: what is held stays within the bound
    /// (and a piece), and a URL after it is found.
    #[test]
    fn carry_is_bounded() {
        let mut css = vec![b'a'; MAX_CARRY * 3];
        css.extend_from_slice(b" url(z.png)");
        let base = Url::parse("http://h.test/").unwrap();
        let mut links = LinkSet::new(10);
        let mut x = CssExtractor::new(&base, None, "css");
        for c in css.chunks(1000) {
            x.write(c, &mut links);
            assert!(x.carry.len() <= MAX_CARRY + 1000);
        }
        x.finish(&mut links);
        assert_eq!(links.out.links.len(), 1);
    }
}
