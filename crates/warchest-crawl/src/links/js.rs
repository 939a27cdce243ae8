//! URLs in script text, as Heritrix's ExtractorJS finds them: quoted
//! strings that are absolute http(s) URLs, or relative paths that start
//! with `/` or `./` and end in a known file extension. Guesses: they go
//! out as speculative hops (`X`), which the frontier queues at low
//! priority, and only when `js` is on.

use std::sync::LazyLock;

use encoding_rs::UTF_8;
use regex::bytes::Regex;
use url::Url;

use super::LinkSet;
use crate::uri::Hop;

/// The longest line of script held back while waiting for its end:
/// warchest-html's one bound, which replay's rewriter holds too.
pub use warchest_html::MAX_CARRY;

static JS_URL_RE: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(
        r#"(?-u)["'](https?:(?:\\?/){2}(?:\\/|[^"'\s<>\\])+|\.?/[A-Za-z0-9_\-][^"'\s<>\\]*\.(?:html?|php|aspx?|jsp|css|js|json|xml|png|jpe?g|gif|svg|webp|ico|woff2?|mp4|mp3|pdf)(?:\?[^"'\s<>\\]*)?)["']"#,
    )
    .expect("static regex")
});

/// A streaming script URL extractor.
#[derive(Debug)]
pub struct JsExtractor {
    base: Url,
    carry: Vec<u8>,
}

impl JsExtractor {
    /// An extractor for script at `base` (a page's base for inline script).
    pub fn new(base: &Url) -> JsExtractor {
        JsExtractor {
            base: base.clone(),
            carry: Vec::new(),
        }
    }

    /// The next piece of script.
    pub(crate) fn write(&mut self, chunk: &[u8], links: &mut LinkSet) {
        self.carry.extend_from_slice(chunk);
        let cut = self.carry.iter().rposition(|&b| b == b'\n').map(|i| i + 1);
        let cut = match cut {
            Some(c) => c,
            None if self.carry.len() > MAX_CARRY => self.carry.len(),
            None => return,
        };
        let text = std::mem::take(&mut self.carry);
        self.scan(&text[..cut], links);
        self.carry.extend_from_slice(&text[cut..]);
    }

    /// The end of the script.
    pub(crate) fn finish(mut self, links: &mut LinkSet) {
        let text = std::mem::take(&mut self.carry);
        self.scan(&text, links);
    }

    fn scan(&self, text: &[u8], links: &mut LinkSet) {
        for c in JS_URL_RE.captures_iter(text) {
            let Some(m) = c.get(1) else { continue };
            let s = String::from_utf8_lossy(m.as_bytes()).replace("\\/", "/");
            links.add(&self.base, &s, UTF_8, Hop::Speculative, "script/text");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::{ExtractConfig, extract};
    use super::*;

    #[test]
    fn script_files_when_js_is_on() {
        let js = br#"var a = "https:\/\/cdn.test\/lib.js"; load('/data/x.json?v=2');
var not = "just words"; var rel = "img/a.png"; var b = './p/page.html';"#;
        let base = Url::parse("http://h.test/js/app.js").unwrap();
        let off = extract(
            &base,
            Some("application/javascript"),
            &ExtractConfig::default(),
            js,
        );
        assert!(off.links.is_empty());
        let opts = ExtractConfig {
            js: true,
            ..ExtractConfig::default()
        };
        let e = extract(&base, Some("application/javascript"), &opts, js);
        let got: Vec<String> = e.links.iter().map(|l| l.url.to_string()).collect();
        assert_eq!(
            got,
            [
                "https://cdn.test/lib.js",
                "http://h.test/data/x.json?v=2",
                "http://h.test/js/p/page.html"
            ]
        );
        assert!(e.links.iter().all(|l| l.hop == Hop::Speculative));
    }
}
