//! The crawl rules over any bytes: the link extractors (HTML, CSS, script,
//! sitemaps plain and gzipped) give the same links fed whole and in
//! pieces (the first byte picks the piece size and the kind), within their
//! bounds; robots.txt parsing and matching, the headers' links and the
//! scope's decision never panic.
#![no_main]
use libfuzzer_sys::fuzz_target;
use url::Url;
use warchest_crawl::links::{ExtractConfig, Extracted, Extractor, headers};
use warchest_crawl::robots::Robots;
use warchest_crawl::scope::{Scope, ScopeConfig};
use warchest_crawl::uri::{CrawlUri, Hop};

const TYPES: [Option<&str>; 6] = [
    Some("text/html"),
    Some("text/html; charset=shift_jis"),
    Some("text/css"),
    Some("application/javascript"),
    Some("application/xml"),
    None,
];

fn run(base: &Url, ct: Option<&str>, opts: &ExtractConfig, data: &[u8], piece: usize) -> Extracted {
    let mut x = Extractor::new(base, ct, opts);
    for ch in data.chunks(piece) {
        x.write(ch);
    }
    x.finish()
}

fuzz_target!(|data: &[u8]| {
    let Some((&first, body)) = data.split_first() else {
        return;
    };
    let piece = usize::from(first % 32) + 1;
    let ct = TYPES[usize::from(first / 32) % TYPES.len()];
    let opts = ExtractConfig {
        js: true,
        forms: true,
        max_links_per_page: 100,
        // Small enough that long inputs meet it.
        max_extract_bytes: 16 << 10,
    };
    let base = Url::parse("http://ex.test/dir/page.xml.gz").unwrap();
    let whole = run(&base, ct, &opts, body, body.len().max(1));
    // Where lol_html stopped on its memory bound, the point it stops at
    // depends on the pieces: compare only complete runs.
    if whole.stopped.is_none() {
        let pieces = run(&base, ct, &opts, body, piece);
        if pieces.stopped.is_none() {
            assert_eq!(whole, pieces, "{ct:?} in pieces of {piece}");
        }
    }
    assert!(whole.links.len() <= 100);

    let robots = Robots::parse(body, "warchest");
    let _ = robots.crawl_delay();
    let text = String::from_utf8_lossy(body);
    for line in text.lines().take(16) {
        if let Ok(u) = base.join(line) {
            let _ = robots.allowed(&u);
            let scope = Scope::new(&ScopeConfig::default(), std::slice::from_ref(&base)).unwrap();
            let uri = CrawlUri::seed(base.clone(), 0).child(u, Hop::Link);
            let _ = scope.decide(&uri);
        }
        if let Some((k, v)) = line.split_once(':') {
            let _ = headers::links_from_headers(&base, [(k, v.as_bytes())]);
        }
    }
});
