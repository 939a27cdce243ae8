//! The checks of the `search_request` fuzz target, shared with the
//! replay of fuzz/regressions/search_request/ in warchest-search's tests
//! (crates/warchest-search/tests/it/fuzz_regressions.rs): any bytes as
//! what a user sends the search, a query string as serve's `/fulltext`
//! (and its JSON API) reads it and a query as `warchest search INDEX
//! QUERY` takes it, searched on a small index built once. No panic,
//! whatever tantivy's query language makes of it; a request refused is
//! refused as the request's error, not the index's; a request answered is
//! within its bounds (page size, depth), comes back the same from its own
//! query string (the links of the results page), and its page and JSON
//! carry the query back, escaped in the page.

use std::sync::OnceLock;

use warchest::archive::Reader;
use warchest_search::web::{query_of, request_from_query, results_html};
use warchest_search::{
    AddStats, IndexedFile, MAX_DEPTH, MAX_PER_PAGE, SearchIndex, SearchRequest, WriterOptions,
    escape_html,
};

/// The index searched: three pages, built once.
pub fn index() -> &'static SearchIndex {
    static INDEX: OnceLock<(tempfile::TempDir, SearchIndex)> = OnceLock::new();
    &INDEX
        .get_or_init(|| {
            let pages = [
                ("http://a.example/", "2014-01-26T20:06:24Z", "text/html",
                 "<title>Sea level</title><p>The sea-level rise, 2014 report.</p>"),
                ("http://b.example/x?y=1", "2020-05-01T00:00:00Z", "text/html; charset=iso-8859-1",
                 "<title>Caf\u{e9}</title><p>Le caf\u{e9} est servi tous les jours.</p>"),
                ("https://a.example/doc.txt", "2021-12-31T23:59:59Z", "text/plain",
                 "plain words and numbers 404 200"),
            ];
            let mut data = Vec::new();
            for (uri, date, ct, body) in pages {
                let http = format!("HTTP/1.1 200 OK\r\nContent-Type: {ct}\r\n\r\n{body}");
                data.extend_from_slice(
                    format!(
                        "WARC/1.0\r\nWARC-Type: response\r\nWARC-Date: {date}\r\n\
                         WARC-Target-URI: {uri}\r\nContent-Type: application/http; msgtype=response\r\n\
                         Content-Length: {}\r\n\r\n{http}\r\n\r\n",
                        http.len()
                    )
                    .as_bytes(),
                );
            }
            let dir = tempfile::tempdir().unwrap();
            let index = SearchIndex::create_or_open(dir.path()).unwrap();
            let writer = index.writer(&WriterOptions::default()).unwrap();
            let file = IndexedFile::identify("fuzz.warc", data.len() as u64, &data[..]).unwrap();
            let mut reader = Reader::new(&data[..]).unwrap();
            writer.add_archive(&mut reader, file, &mut AddStats::default()).unwrap();
            writer.commit().unwrap();
            let index = SearchIndex::open(dir.path()).unwrap();
            (dir, index)
        })
        .1
}

/// Searches `req` and checks what comes back.
pub fn search(req: &SearchRequest) {
    let Ok(checked) = req.checked() else { return };
    assert!(checked.page >= 1 && (1..=MAX_PER_PAGE).contains(&checked.per_page));
    assert!(checked.page * checked.per_page <= MAX_DEPTH);
    // The links of the results page give the same request back.
    assert_eq!(request_from_query(&query_of(&checked)), checked);
    let found = match index().search(req) {
        Ok(found) => found,
        // The index is sound: whatever a user sends, an error is the
        // request's (serve's 400), never the index's (a 500).
        Err(warchest_search::Error::Query(_)) => return,
        Err(e) => panic!("{:?}: not a request error: {e}", req.query),
    };
    assert_eq!(found.request, checked);
    assert!(found.hits.len() <= checked.per_page);
    assert!(found.hits.len() as u64 <= found.total);
    assert!(found.total <= 3);
    let html = results_html("/c/fulltext", "/c/", &found);
    let json = serde_json::to_string(&found).unwrap();
    let q = &checked.query;
    let value = format!("name=\"q\" value=\"{}\"", escape_html(q));
    assert!(
        html.contains(&value),
        "the query is not in the form, escaped"
    );
    let back: serde_json::Value = serde_json::from_str(&json).unwrap();
    assert_eq!(back["request"]["query"].as_str(), Some(q.as_str()));
}

/// One input, as both a query string and a query.
pub fn check(data: &[u8]) {
    // serve: the query string, as `/fulltext?...` gives it.
    let query_string = String::from_utf8_lossy(data);
    search(&request_from_query(&query_string));
    // The command line: the bytes as the query itself.
    search(&SearchRequest::new(query_string.into_owned()));
}
