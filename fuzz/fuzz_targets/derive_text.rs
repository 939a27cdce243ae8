//! Any bytes as a page: charset sniffing and decoding (with and without a
//! declared charset), HTML to text, the WAT's HTML metadata and language
//! identification, none of which may panic; the text has no blank line and
//! no line with a trailing space, whatever the input.
#![no_main]
use libfuzzer_sys::fuzz_target;
use warchest_derive::{charset, html2text, text, wat};

fuzz_target!(|data: &[u8]| {
    for ct in [
        None,
        Some("text/html"),
        Some("text/html; charset=shift_jis"),
        Some("text/plain"),
    ] {
        let doc = text::extract(data, ct);
        for t in [&doc.text, &doc.main_text] {
            assert!(!t.contains("\n\n"), "blank line");
            assert!(!t.lines().any(|l| l.ends_with(' ')), "trailing space");
        }
    }
    let page = charset::decode(data, None, true);
    let _ = html2text::html_to_text(&page.text);
    let _ = wat::html_metadata(&page.text).to_text();
});
