//! Access control through every way in: the CDX API, Memento, the
//! calendar, the URL search, replay, record pages and file downloads; a
//! user named by the header the server was told of; the embargo.

use std::path::{Path, PathBuf};

use warchest_replay::access::{AccessRules, Embargo, Verdict, When};
use warchest_serve::{ServeOptions, Server};

use super::{Running, exchange, get};

/// `(uri, WARC-Date)` of each record, in file order.
const RECORDS: [(&str, &str); 5] = [
    ("http://a.test/", "2024-01-01T00:00:00Z"),
    ("http://a.test/", "2024-06-01T00:00:00Z"),
    ("http://a.test/secret/x", "2024-06-01T00:00:00Z"),
    ("http://a.test/blocked", "2024-06-01T00:00:00Z"),
    ("http://b.test/", "2024-06-01T00:00:00Z"),
];

const RULES: &str = "test,a)/secret - {\"access\": \"exclude\"}\n\
                     test,a)/secret - {\"access\": \"allow\", \"user\": \"staff\"}\n\
                     test,a)/blocked - {\"access\": \"block\"}\n";

/// Writes the records; their offsets.
fn archive(path: &Path) -> Vec<u64> {
    let mut bytes = Vec::new();
    let mut offsets = Vec::new();
    for (i, (uri, date)) in RECORDS.iter().enumerate() {
        offsets.push(bytes.len() as u64);
        let body = format!("content of {uri} at {date}");
        bytes.extend(crate::common::text_response(i, uri, date, &body));
    }
    std::fs::write(path, bytes).unwrap();
    offsets
}

fn start(warc: &Path, db: PathBuf, access: AccessRules) -> Running {
    let mut opts = ServeOptions::new(vec![warc.to_path_buf()]);
    opts.listen = "127.0.0.1:0".into();
    opts.store = Some(db);
    opts.poll = None;
    opts.access = access;
    opts.access_user_header = Some("X-Pywb-ACL-User".into());
    Running::from_server(Server::bind(opts).expect("bind the server"))
}

/// `GET path` on `addr` as `user`.
fn get_as(addr: &str, path: &str, user: &str) -> String {
    exchange(
        addr,
        format!(
            "GET {path} HTTP/1.1\r\nHost: {addr}\r\nX-Pywb-ACL-User: {user}\r\nConnection: close\r\n\r\n"
        )
        .as_bytes(),
    )
}

fn status(answer: &str) -> u16 {
    answer
        .split(' ')
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(0)
}

#[test]
fn excluded_captures_are_nowhere_and_blocked_ones_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let warc = dir.path().join("a.warc");
    let offsets = archive(&warc);
    let rules = AccessRules::parse(RULES, "rules.aclj").unwrap();
    let s = start(&warc, dir.path().join("index.redb"), rules);
    let (ui, replay) = (s.addr.as_str(), s.replay.as_str());

    // The CDX API: the excluded capture is not listed, not even counted
    // as a skip; the blocked one is; staff (by the header) sees it all.
    let cdx = get(ui, "/archive/cdx?url=a.test/&matchType=prefix&output=json");
    assert_eq!(status(&cdx), 200, "{cdx}");
    assert!(!cdx.contains("secret"), "{cdx}");
    assert!(cdx.contains("http://a.test/blocked"), "{cdx}");
    assert_eq!(cdx.matches("\"urlkey\"").count(), 3, "{cdx}");
    // The blocked line says so; the others do not.
    assert_eq!(cdx.matches("\"access\": \"block\"").count(), 1, "{cdx}");
    let blocked_line = cdx.lines().find(|l| l.contains("access")).unwrap();
    assert!(blocked_line.contains("http://a.test/blocked"), "{cdx}");
    let text = get(
        ui,
        "/archive/cdx?url=a.test/blocked&output=text&fl=url,access",
    );
    assert!(text.contains("http://a.test/blocked block"), "{text}");
    let ia = get(ui, "/cdx/search/cdx?url=a.test/secret/x&showSkipCount=true");
    assert!(!ia.contains("secret/x"), "{ia}");
    let staff = get_as(
        ui,
        "/archive/cdx?url=a.test/&matchType=prefix&output=json",
        "staff",
    );
    assert_eq!(staff.matches("\"urlkey\"").count(), 4, "{staff}");
    let closest = get(
        ui,
        "/archive/cdx?url=a.test/secret/x&sort=closest&closest=2024",
    );
    assert!(!closest.contains("secret"), "{closest}");

    // Memento: no TimeMap, no TimeGate answer.
    let tm = get(ui, "/archive/timemap/link/http://a.test/secret/x");
    assert_eq!(status(&tm), 404, "{tm}");
    let tm = get(ui, "/archive/timemap/link/http://a.test/");
    assert_eq!(tm.matches("memento\"; datetime").count(), 2, "{tm}");
    let tg = get(ui, "/archive/http://a.test/secret/x");
    assert_eq!(status(&tg), 404, "{tg}");

    // The calendar and the URL search leave it out.
    let cal = get(ui, "/archive/*/http://a.test/secret/x");
    assert!(
        !cal.contains("/archive/20240601000000/http://a.test/secret/x"),
        "{cal}"
    );
    let cal = get_as(ui, "/archive/*/http://a.test/secret/x", "staff");
    assert!(
        cal.contains("/archive/20240601000000/http://a.test/secret/x"),
        "{cal}"
    );
    let found = get(ui, "/archive/search?url=a.test/&match=prefix");
    assert!(found.contains("http://a.test/blocked"), "{found}");
    assert!(!found.contains("secret"), "{found}");

    // Replay: 404 for the excluded, 451 for the blocked, on both origins;
    // the content for staff.
    let r = get(replay, "/archive/20240601000000mp_/http://a.test/secret/x");
    assert_eq!(status(&r), 404, "{r}");
    assert!(!r.contains("content of"), "{r}");
    let r = get_as(
        replay,
        "/archive/20240601000000mp_/http://a.test/secret/x",
        "staff",
    );
    assert_eq!(status(&r), 200, "{r}");
    assert!(r.contains("content of http://a.test/secret/x"), "{r}");
    let r = get(replay, "/archive/20240601000000mp_/http://a.test/blocked");
    assert_eq!(status(&r), 451, "{r}");
    assert!(!r.contains("content of"), "{r}");
    let r = get(ui, "/archive/20240601000000/http://a.test/blocked");
    assert_eq!(status(&r), 451, "{r}");
    let r = get(replay, "/archive/20240601000000mp_/http://b.test/");
    assert_eq!(status(&r), 200, "{r}");

    // Record pages by file and offset, and whole files.
    let rec = |i: usize, tail: &str| format!("/archive/record/a.warc/{}{tail}", offsets[i]);
    for (i, want) in [(2usize, 404u16), (3, 451), (4, 200)] {
        let page = get(ui, &rec(i, ""));
        assert_eq!(status(&page), want, "record {i}: {page}");
        let payload = get(replay, &rec(i, "/payload"));
        assert_eq!(status(&payload), want, "payload {i}: {payload}");
        let whole = get(replay, &rec(i, "/warc"));
        assert_eq!(status(&whole), want, "warc {i}: {whole}");
    }
    assert_eq!(status(&get_as(replay, &rec(2, "/payload"), "staff")), 200);
    let file = get(replay, "/archive/file/a.warc");
    assert_eq!(status(&file), 403, "{file}");
    // Nor linked from the collection's page.
    let home = get(ui, "/archive/");
    assert!(
        home.contains("a.warc") && !home.contains("/file/"),
        "{home}"
    );
    assert!(!file.contains("content of"), "{file}");
    // A header the server was not told of names no one.
    drop(s);
    let mut opts = ServeOptions::new(vec![warc.clone()]);
    opts.listen = "127.0.0.1:0".into();
    opts.store = Some(dir.path().join("index.redb"));
    opts.poll = None;
    opts.access = AccessRules::parse(RULES, "rules.aclj").unwrap();
    let s = Running::from_server(Server::bind(opts).unwrap());
    let r = get_as(
        &s.replay,
        "/archive/20240601000000mp_/http://a.test/secret/x",
        "staff",
    );
    assert_eq!(status(&r), 404, "{r}");
}

#[test]
fn the_embargo_and_the_default_access() {
    let dir = tempfile::tempdir().unwrap();
    let warc = dir.path().join("a.warc");
    archive(&warc);
    // Captures after March 2024 are blocked, unless a rule ignores it.
    let rules = AccessRules::parse(
        "test,b)/ - {\"access\": \"allow_ignore_embargo\"}\n",
        "rules.aclj",
    )
    .unwrap()
    .with_embargo(Some(Embargo {
        when: vec![When::After(When::at("20240301").unwrap())],
        verdict: Verdict::Block,
    }));
    let s = start(&warc, dir.path().join("index.redb"), rules);
    let tm = get(&s.addr, "/archive/timemap/link/http://a.test/");
    assert_eq!(tm.matches("memento\"; datetime").count(), 2, "{tm}");
    let r = get(&s.replay, "/archive/20240601000000mp_/http://a.test/");
    assert_eq!(status(&r), 451, "{r}");
    let r = get(&s.replay, "/archive/20240101000000mp_/http://a.test/");
    assert_eq!(status(&r), 200, "{r}");
    let r = get(&s.replay, "/archive/20240601000000mp_/http://b.test/");
    assert_eq!(status(&r), 200, "{r}");
    drop(s);

    // Nothing allowed unless a rule says: b.test only.
    let rules = AccessRules::parse("test,b)/ - {\"access\": \"allow\"}\n", "rules.aclj")
        .unwrap()
        .with_default(warchest_replay::access::Access::Exclude);
    let s = start(&warc, dir.path().join("index.redb"), rules);
    let cdx = get(&s.addr, "/archive/cdx?url=*.test&matchType=domain");
    assert_eq!(cdx.matches(" {\"url\": ").count(), 1, "{cdx}");
    assert!(cdx.contains("test,b)/"), "{cdx}");
    assert_eq!(status(&get(&s.addr, "/archive/http://a.test/")), 404);
}

/// Full-text search under the rules: what the viewer is shown whole, in
/// the hits, their count and the facets; staff (by the header) sees more;
/// blocked and excluded captures are not searched (a snippet is content).
#[test]
fn full_text_search_shows_only_what_the_rules_allow() {
    use warchest_search::{IndexedFile, SearchIndex, WriterOptions, add_archives};
    let dir = tempfile::tempdir().unwrap();
    let warc = dir.path().join("a.warc");
    archive(&warc);
    let search = dir.path().join("search");
    {
        let index = SearchIndex::create_or_open(&search).unwrap();
        let writer = index
            .writer(&WriterOptions {
                threads: 1,
                memory: 32 << 20,
            })
            .unwrap();
        let data = std::fs::read(&warc).unwrap();
        let open = |n: &str| {
            let file = IndexedFile::identify(n, data.len() as u64, data.as_slice()).unwrap();
            let cursor = std::io::Cursor::new(data.clone());
            let opts = warchest::warc::ReaderOptions::lenient();
            Ok((warchest::archive::Reader::with_options(cursor, opts)?, file))
        };
        let name = "a.warc".to_string();
        let o = add_archives(&writer, &[name], open).remove(0);
        o.result.unwrap();
        writer.commit().unwrap();
    }
    let mut opts = ServeOptions::new(vec![warc.clone()]);
    opts.listen = "127.0.0.1:0".into();
    opts.store = Some(dir.path().join("index.redb"));
    opts.poll = None;
    opts.search = Some(search);
    opts.access = AccessRules::parse(RULES, "rules.aclj").unwrap();
    opts.access_user_header = Some("X-Pywb-ACL-User".into());
    let s = Running::from_server(Server::bind(opts).unwrap());
    let q = "/archive/fulltext?q=content&output=json";
    let public = get(&s.addr, q);
    assert_eq!(status(&public), 200, "{public}");
    let body = &public[public.find("\r\n\r\n").unwrap()..];
    assert!(body.contains("\"total\":3"), "{public}");
    assert!(!body.contains("secret"), "{public}");
    assert!(!body.contains("blocked"), "{public}");
    assert!(body.contains("http://b.test/"), "{public}");
    let staff = get_as(&s.addr, q, "staff");
    assert!(staff.contains("\"total\":4"), "{staff}");
    assert!(staff.contains("http://a.test/secret/x"), "{staff}");
    // The HTML page says the same count.
    let page = get(&s.addr, "/archive/fulltext?q=content");
    assert!(!page.contains("secret"), "{page}");
}
