//! Building, extending and searching an index of a small archive made here.

use std::path::Path;

use warchest::archive::Reader;
use warchest::warc::ReaderOptions;
use warchest_search::{
    AddStats, Added, Error, IndexedFile, SearchIndex, SearchRequest, WriterOptions, add_archives,
};

/// A response record.
fn response(url: &str, date: &str, ctype: &str, body: &str) -> String {
    let http = format!("HTTP/1.1 200 OK\r\nContent-Type: {ctype}\r\n\r\n{body}");
    format!(
        "WARC/1.0\r\nWARC-Type: response\r\nWARC-Date: {date}\r\nWARC-Target-URI: {url}\r\n\
         Content-Type: application/http; msgtype=response\r\nContent-Length: {}\r\n\r\n{http}\r\n\r\n",
        http.len()
    )
}

/// An archive of five pages on two hosts over two years, a revisit and
/// a request.
pub fn archive() -> String {
    let mut s = String::new();
    s += &response(
        "http://example.com/",
        "2014-01-26T20:06:24Z",
        "text/html; charset=utf-8",
        "<html><head><title>Example Domain</title></head><body><p>The lighthouse keeper \
         of <b>Example</b> &amp; friends.</p><script>var lighthouse = 1;</script></body></html>",
    );
    s += &response(
        "http://example.com/about",
        "2014-03-01T00:00:00Z",
        "text/html",
        "<title>About</title><p>About the keeper &lt;script&gt; and his lamp.</p>",
    );
    s += &response(
        "https://www.iana.org/domains",
        "2015-06-02T10:00:00Z",
        "text/html",
        "<title>Domains</title><p>Der Leuchtturmwärter wohnt am Meer und zündet jeden Abend \
         die große Lampe an, damit die Schiffe den Hafen sicher finden: lighthouse.</p>",
    );
    s += &response(
        "https://www.iana.org/notes.txt",
        "2015-06-03T10:00:00Z",
        "text/plain",
        "Plain notes about the keeper.",
    );
    s += &response(
        "https://www.iana.org/logo.png",
        "2015-06-03T10:00:01Z",
        "image/png",
        "\u{1}PNGlighthouse",
    );
    s += "WARC/1.0\r\nWARC-Type: revisit\r\nWARC-Date: 2015-07-01T00:00:00Z\r\n\
          WARC-Target-URI: http://example.com/\r\n\
          WARC-Profile: http://netpreserve.org/warc/1.1/revisit/identical-payload-digest\r\n\
          Content-Length: 0\r\n\r\n\r\n\r\n";
    s += "WARC/1.0\r\nWARC-Type: request\r\nWARC-Date: 2015-07-01T00:00:00Z\r\n\
          WARC-Target-URI: http://example.com/\r\nContent-Length: 0\r\n\r\n\r\n\r\n";
    s
}

fn build(dir: &Path, name: &str, data: &str) -> (AddStats, Result<Added, Error>) {
    build_with(dir, name, data, ReaderOptions::lenient())
}

fn build_with(
    dir: &Path,
    name: &str,
    data: &str,
    opts: ReaderOptions,
) -> (AddStats, Result<Added, Error>) {
    let index = SearchIndex::create_or_open(dir).unwrap();
    let writer = index
        .writer(&WriterOptions {
            threads: 2,
            memory: 64 << 20,
        })
        .unwrap();
    let names = vec![name.to_string()];
    let data = data.to_string();
    let open = |n: &str| {
        let file = IndexedFile::identify(n, data.len() as u64, data.as_bytes()).unwrap();
        let cursor = std::io::Cursor::new(data.clone().into_bytes());
        Ok((Reader::with_options(cursor, opts.clone())?, file))
    };
    let o = add_archives(&writer, &names, open).remove(0);
    writer.commit().unwrap();
    (o.stats, o.result)
}

fn facet(v: &[warchest_search::FacetValue]) -> Vec<(String, u64)> {
    v.iter().map(|f| (f.value.clone(), f.count)).collect()
}

#[test]
fn finds_pages_with_facets_histogram_and_pages() {
    let dir = tempfile::tempdir().unwrap();
    let (stats, res) = build(dir.path(), "a.warc", &archive());
    assert_eq!(res.unwrap(), Added::Indexed);
    assert_eq!(stats.records, 7);
    assert_eq!(stats.documents, 5);
    assert_eq!(stats.with_text, 4);
    assert_eq!(stats.revisits, 1);
    assert_eq!(stats.other, 1);

    let index = SearchIndex::open(dir.path()).unwrap();
    let r = index.search(&SearchRequest::new("lighthouse")).unwrap();
    // The script's word and the image's bytes are not text.
    assert_eq!(r.total, 2);
    let urls: Vec<&str> = r.hits.iter().map(|h| h.url.as_str()).collect();
    assert!(urls.contains(&"http://example.com/"), "{urls:?}");
    assert!(urls.contains(&"https://www.iana.org/domains"), "{urls:?}");
    let h = r
        .hits
        .iter()
        .find(|h| h.url == "http://example.com/")
        .unwrap();
    assert_eq!(h.title, "Example Domain");
    assert_eq!(h.timestamp, "20140126200624");
    assert_eq!(h.surt, "com,example)/");
    assert_eq!(h.status, Some(200));
    assert_eq!(h.mime, "text/html");
    assert_eq!(h.file, "a.warc");
    assert_eq!(h.offset, 0);
    assert!(
        h.snippet.html.contains("<b>lighthouse</b>"),
        "{:?}",
        h.snippet
    );
    let (a, b) = h.snippet.highlights[0];
    assert_eq!(&h.snippet.text[a..b], "lighthouse");
    assert_eq!(
        facet(&r.facets.year),
        [("2014".into(), 1), ("2015".into(), 1)]
    );
    let mut hosts = facet(&r.facets.host);
    hosts.sort();
    assert_eq!(
        hosts,
        [("example.com".into(), 1), ("www.iana.org".into(), 1)]
    );

    // Words must all match; the offset of a later record is its own.
    let r = index.search(&SearchRequest::new("keeper lamp")).unwrap();
    assert_eq!(r.total, 1);
    assert_eq!(r.hits[0].url, "http://example.com/about");
    assert!(r.hits[0].offset > 0);
    // Escaped in the snippet's HTML: the page's `<script>` text.
    assert!(
        r.hits[0].snippet.html.contains("&lt;script&gt;"),
        "{:?}",
        r.hits[0].snippet
    );

    // Everything: facet counts over all documents, a month histogram.
    let mut all = SearchRequest::new("*");
    all.per_page = 2;
    let r = index.search(&all).unwrap();
    assert_eq!(r.total, 5);
    assert_eq!(r.pages, 3);
    assert_eq!(r.hits.len(), 2);
    assert_eq!(
        facet(&r.facets.year),
        [("2014".into(), 2), ("2015".into(), 3)]
    );
    let mut mime = facet(&r.facets.mime);
    mime.sort();
    assert_eq!(
        mime,
        [
            ("image/png".into(), 1),
            ("text/html".into(), 3),
            ("text/plain".into(), 1)
        ]
    );
    // The German page is German (warchest-derive's language
    // identification); each language counted once per document with text.
    let lang = facet(&r.facets.language);
    assert!(lang.contains(&("deu".into(), 1)), "{lang:?}");
    assert!(lang.iter().map(|l| l.1).sum::<u64>() <= 4, "{lang:?}");
    let mut de = SearchRequest::new("*");
    de.language = Some("deu".into());
    let de = index.search(&de).unwrap();
    assert_eq!(de.total, 1);
    assert_eq!(de.hits[0].url, "https://www.iana.org/domains");
    let hist: Vec<(String, u64)> = r
        .histogram
        .iter()
        .map(|b| (b.month.clone(), b.count))
        .collect();
    assert_eq!(
        hist,
        [
            ("2014-01".into(), 1),
            ("2014-03".into(), 1),
            ("2015-06".into(), 3)
        ]
    );
    // The last page has the one left; pages do not repeat hits.
    all.page = 3;
    let last = index.search(&all).unwrap();
    assert_eq!(last.hits.len(), 1);
    let mut seen: Vec<String> = Vec::new();
    for p in 1..=3 {
        all.page = p;
        seen.extend(index.search(&all).unwrap().hits.into_iter().map(|h| h.url));
    }
    seen.sort();
    seen.dedup();
    assert_eq!(seen.len(), 5);

    // Filters narrow the hits and the facets alike.
    let mut f = SearchRequest::new("keeper");
    f.host = Some("www.iana.org".into());
    let r = index.search(&f).unwrap();
    assert_eq!(r.total, 1);
    assert_eq!(r.hits[0].url, "https://www.iana.org/notes.txt");
    assert_eq!(facet(&r.facets.host), [("www.iana.org".into(), 1)]);
    let mut y = SearchRequest::new("*");
    y.year = Some(2014);
    assert_eq!(index.search(&y).unwrap().total, 2);
    // Field syntax, and the title boosted above the text.
    assert_eq!(
        index
            .search(&SearchRequest::new("mime:text/plain"))
            .unwrap()
            .total,
        1
    );
    assert_eq!(
        index
            .search(&SearchRequest::new("status:200"))
            .unwrap()
            .total,
        5
    );
    assert_eq!(
        index.search(&SearchRequest::new("url:iana")).unwrap().total,
        0
    );
    assert_eq!(
        index
            .search(&SearchRequest::new("url_words:iana"))
            .unwrap()
            .total,
        3
    );
}

#[test]
fn a_file_is_indexed_once_and_names_do_not_clash() {
    let dir = tempfile::tempdir().unwrap();
    let data = archive();
    let (_, res) = build(dir.path(), "a.warc", &data);
    assert_eq!(res.unwrap(), Added::Indexed);
    // Again: skipped, documents not doubled.
    let (stats, res) = build(dir.path(), "a.warc", &data);
    assert_eq!(res.unwrap(), Added::AlreadyIndexed);
    assert_eq!(stats.documents, 0);
    let index = SearchIndex::open(dir.path()).unwrap();
    assert_eq!(index.search(&SearchRequest::new("*")).unwrap().total, 5);
    assert_eq!(index.files().len(), 1);
    assert_eq!(index.files()[0].documents, 5);
    // Another file of the same name: refused.
    let other = response(
        "http://x.org/",
        "2020-01-01T00:00:00Z",
        "text/plain",
        "other",
    );
    let (_, res) = build(dir.path(), "a.warc", &other);
    assert!(matches!(res, Err(Error::Conflict(_))), "{res:?}");
    // Another name: added, and searchable with the first.
    let (_, res) = build(dir.path(), "b.warc", &other);
    assert_eq!(res.unwrap(), Added::Indexed);
    let index = SearchIndex::open(dir.path()).unwrap();
    assert_eq!(index.search(&SearchRequest::new("*")).unwrap().total, 6);
    assert_eq!(index.files().len(), 2);
}

#[test]
fn bounds_and_bad_input() {
    let dir = tempfile::tempdir().unwrap();
    let (_, res) = build(dir.path(), "a.warc", &archive());
    res.unwrap();
    let index = SearchIndex::open(dir.path()).unwrap();
    let long = SearchRequest::new("a".repeat(warchest_search::MAX_QUERY + 1));
    assert!(matches!(index.search(&long), Err(Error::Query(_))));
    let mut deep = SearchRequest::new("keeper");
    deep.page = 1_000_000;
    assert!(matches!(index.search(&deep), Err(Error::Query(_))));
    let mut big = SearchRequest::new("*");
    big.per_page = 1_000_000;
    let r = index.search(&big).unwrap();
    assert_eq!(r.request.per_page, warchest_search::MAX_PER_PAGE);
    assert!(matches!(
        index.search(&SearchRequest::new("title:(")),
        Err(Error::Query(_))
    ));
    // `FIELD:*` of a field that is not a fast one: the query's error (a
    // server's 400), not the index's (a 500); of a fast one, answered.
    for q in ["url:*", "title:*", "keeper text:*", "surt:*"] {
        match index.search(&SearchRequest::new(q)) {
            Err(Error::Query(m)) => assert!(m.contains("FIELD:* works for host"), "{m}"),
            other => panic!("{q}: {other:?}"),
        }
    }
    let with_host = index.search(&SearchRequest::new("host:*")).unwrap().total;
    assert!((1..=6).contains(&with_host), "{with_host}");
    // A directory of something else is no index.
    let other = tempfile::tempdir().unwrap();
    std::fs::write(other.path().join("x"), "x").unwrap();
    assert!(matches!(
        SearchIndex::create_or_open(other.path()),
        Err(Error::NotAnIndex(_))
    ));
    // A damaged archive: the error names the file, which is not recorded
    // as indexed, and its documents are taken out again (all of a file or
    // none: given again once mended, nothing is there twice).
    let mut cut = archive();
    cut.truncate(cut.find("https://www.iana.org/domains").unwrap() + 40);
    let d2 = tempfile::tempdir().unwrap();
    let (stats, res) = build_with(
        d2.path(),
        "cut.warc",
        &cut,
        ReaderOptions::strict().file("cut.warc"),
    );
    let err = res.unwrap_err().to_string();
    assert!(err.contains("cut.warc"), "{err}");
    assert_eq!((stats.documents, stats.dropped), (0, 2));
    let index = SearchIndex::open(d2.path()).unwrap();
    assert_eq!(index.search(&SearchRequest::new("*")).unwrap().total, 0);
    assert!(index.files().is_empty());
    drop(index);
    // Past a batch (documents already in the index when the error comes):
    // taken out all the same.
    let mut many = String::new();
    for i in 0..300 {
        many += &response(
            &format!("http://m.org/{i}"),
            "2016-01-01T00:00:00Z",
            "text/plain",
            "m",
        );
    }
    many += &cut;
    let d3 = tempfile::tempdir().unwrap();
    let strict = ReaderOptions::strict().file("many.warc");
    let (stats, res) = build_with(d3.path(), "many.warc", &many, strict);
    assert!(res.is_err());
    assert_eq!((stats.documents, stats.dropped), (0, 302));
    let index = SearchIndex::open(d3.path()).unwrap();
    assert_eq!(index.search(&SearchRequest::new("*")).unwrap().total, 0);
    drop(index);
    let (_, res) = build(d2.path(), "cut.warc", &archive());
    assert_eq!(res.unwrap(), Added::Indexed);
    let index = SearchIndex::open(d2.path()).unwrap();
    assert_eq!(index.search(&SearchRequest::new("*")).unwrap().total, 5);
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(64))]
    /// Any query string, as a server would take it from a request: an
    /// answer or a request error, never a panic, and never more hits than
    /// a page holds.
    #[test]
    fn any_request_is_answered(q in "[a-z\\\\:\"()\\[\\]{}*~^+\\- ]{0,40}", page in 0usize..2000, n in 0usize..500) {
        let index = shared_index();
        let mut req = warchest_search::web::request_from_query(&format!("q={}", q.replace('&', "")));
        req.page = page;
        req.per_page = n;
        match index.search(&req) {
            Ok(r) => proptest::prop_assert!(r.hits.len() <= warchest_search::MAX_PER_PAGE),
            Err(Error::Query(_)) => {}
            Err(e) => proptest::prop_assert!(false, "{e}"),
        }
    }
}

/// One index of [`archive`] for the property tests.
fn shared_index() -> &'static SearchIndex {
    static INDEX: std::sync::OnceLock<(tempfile::TempDir, SearchIndex)> =
        std::sync::OnceLock::new();
    &INDEX
        .get_or_init(|| {
            let dir = tempfile::tempdir().unwrap();
            build(dir.path(), "a.warc", &archive()).1.unwrap();
            let index = SearchIndex::open(dir.path()).unwrap();
            (dir, index)
        })
        .1
}

/// A search within a region of captures (what access rules let a viewer
/// see): hits, total, facets and histogram are of those alone, a SURT
/// prefix with characters a pattern would take for its own (`)`, `,`,
/// `.`, `?`) matched as written, and the ranking of what is left unchanged.
#[test]
fn a_search_within_a_region_counts_only_its_captures() {
    use warchest_index::region::Region;
    let dir = tempfile::tempdir().unwrap();
    let mut data = String::new();
    for (url, date) in [
        ("http://a.test/open", "2020-01-01T00:00:00Z"),
        ("http://a.test/private/x", "2020-01-01T00:00:00Z"),
        ("http://a.test/private/y?z=1", "2022-01-01T00:00:00Z"),
        ("http://b.test/", "2021-06-01T00:00:00Z"),
        ("http://b.test/", "2023-06-01T00:00:00Z"),
    ] {
        data += &response(url, date, "text/plain", &format!("walrus words of {url}"));
    }
    let (_, res) = build(dir.path(), "a.warc", &data);
    assert_eq!(res.unwrap(), Added::Indexed);
    let index = SearchIndex::open(dir.path()).unwrap();
    let req = SearchRequest {
        query: "walrus".into(),
        ..SearchRequest::default()
    };
    let all = index.search(&req).unwrap();
    assert_eq!(all.total, 5);
    let urls = |r: &warchest_search::SearchResults| {
        let mut u: Vec<String> = r
            .hits
            .iter()
            .map(|h| format!("{} {}", h.url, &h.timestamp[..4]))
            .collect();
        u.sort();
        u
    };
    let at = |ts: &str| warchest::http::date::timestamp_seconds(ts);
    for (region, want) in [
        (Region::All, 5),
        (Region::Nothing, 0),
        (Region::not(Region::KeyPrefix("test,a)/private".into())), 3),
        (Region::KeyPrefix("test,a)/private/y?".into()), 1),
        (Region::KeyIs("test,a)/private/x".into()), 1),
        (Region::KeyPrefix("test,a".into()), 3),
        (Region::KeyPrefix("test,a)/priv.te".into()), 0),
        (
            Region::Time {
                after: Some(at("20201231")),
                before: Some(at("20230101")),
            },
            2,
        ),
        (
            Region::or([
                Region::KeyIs("test,a)/open".into()),
                Region::and([
                    Region::KeyPrefix("test,b)/".into()),
                    Region::Time {
                        after: Some(at("2022")),
                        before: None,
                    },
                ]),
            ]),
            2,
        ),
    ] {
        let found = index.search_in(&req, &region).unwrap();
        assert_eq!(found.total, want, "{region:?}: {:?}", urls(&found));
        assert_eq!(found.hits.len(), want as usize, "{region:?}");
        let hosts: u64 = found.facets.host.iter().map(|f| f.count).sum();
        assert_eq!(hosts, want, "{region:?}: host facet");
        let months: u64 = found.histogram.iter().map(|b| b.count).sum();
        assert_eq!(months, want, "{region:?}: histogram");
        for h in &found.hits {
            let ts = &h.timestamp;
            assert!(
                region.contains(&h.surt, at(ts)),
                "{region:?}: {} {ts}",
                h.surt
            );
        }
    }
    let shown = index
        .search_in(
            &req,
            &Region::not(Region::KeyPrefix("test,a)/private".into())),
        )
        .unwrap();
    assert_eq!(
        urls(&shown),
        [
            "http://a.test/open 2020",
            "http://b.test/ 2021",
            "http://b.test/ 2023"
        ]
    );
    // The order of what is left is the order it had.
    let order = |r: &warchest_search::SearchResults| {
        r.hits
            .iter()
            .map(|h| (h.url.clone(), h.timestamp.clone()))
            .collect::<Vec<_>>()
    };
    let kept: Vec<_> = order(&all)
        .into_iter()
        .filter(|(u, _)| !u.contains("private"))
        .collect();
    assert_eq!(order(&shown), kept);
}
